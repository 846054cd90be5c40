"""The node's `nslookup` shim answers from the resolver a pod sees, as upstream's init container needs."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kubetrain.embedded.node import shims


def _nslookup(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    bin_dir = shims.install(tmp_path / "bin", tmp_path / "exec.sock")
    return subprocess.run([str(bin_dir / "nslookup"), *args], capture_output=True, text=True, timeout=10)


def test_a_resolvable_name_prints_its_address_and_succeeds(tmp_path: Path) -> None:
    result = _nslookup(tmp_path, "localhost")
    assert result.returncode == 0, result.stderr
    assert "Name:\tlocalhost" in result.stdout and "Address: 127.0.0.1" in result.stdout


def test_options_are_skipped_and_an_unknown_name_fails_like_nslookup(tmp_path: Path) -> None:
    result = _nslookup(tmp_path, "-type=a", "no-such-host.invalid")
    assert result.returncode == 1
    assert "server can't find no-such-host.invalid: NXDOMAIN" in result.stderr
