"""The loopback Host and Origin checks the embedded API server and the dashboard share."""

from __future__ import annotations

import pytest

from kubetrain.kube.loopback import LoopbackNames, hostname, split_authority


@pytest.mark.parametrize(
    ("authority", "parts"),
    [
        ("127.0.0.1:8470", ("127.0.0.1", "8470")),
        ("LOCALHOST", ("localhost", "")),
        ("[::1]:80", ("::1", "80")),
        ("[::1]", ("::1", "")),
        ("[::1", None),
        ("[::1]x", None),
        ("localhost:http", None),
    ],
)
def test_an_authority_splits_into_host_and_port(authority: str, parts: tuple[str, str] | None) -> None:
    assert split_authority(authority) == parts
    assert hostname(authority) == (parts[0] if parts else "")


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:8470", "localhost:1", "[::1]:8470", "[0:0:0:0:0:0:0:1]", None]
)
def test_loopback_hosts_are_allowed(host: str | None) -> None:
    assert LoopbackNames().host_allowed(host)


@pytest.mark.parametrize("host", ["evil.example:8470", "127.0.0.1.evil.example", "10.0.0.1", "", "[::1"])
def test_other_hosts_are_refused(host: str) -> None:
    assert not LoopbackNames().host_allowed(host)


def test_a_listen_address_of_its_own_counts_as_loopback() -> None:
    assert LoopbackNames(["127.0.0.2"]).host_allowed("127.0.0.2:9")
    assert not LoopbackNames().host_allowed("127.0.0.2:9")


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),
        ("http://127.0.0.1:8470", True),
        ("https://localhost", True),
        ("http://[::1]:3000", True),
        ("https://evil.example", False),
        ("null", False),
        ("file://", False),
        ("http://localhost.evil.example", False),
    ],
)
def test_origins(origin: str | None, allowed: bool) -> None:
    assert LoopbackNames().origin_allowed(origin) is allowed
