"""The kubelet's variables of the `kubernetes` Service, which in-cluster clients read."""

from __future__ import annotations

from kubetrain.embedded.node.envresolve import kubernetes_service_env


def test_the_api_servers_address_as_the_kubelet_spells_it() -> None:
    assert kubernetes_service_env("127.0.0.1:40123") == {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "40123",
        "KUBERNETES_SERVICE_PORT_HTTPS": "40123",
        "KUBERNETES_PORT": "tcp://127.0.0.1:40123",
        "KUBERNETES_PORT_40123_TCP": "tcp://127.0.0.1:40123",
        "KUBERNETES_PORT_40123_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_40123_TCP_PORT": "40123",
        "KUBERNETES_PORT_40123_TCP_ADDR": "127.0.0.1",
    }
    assert kubernetes_service_env("[::1]:6443")["KUBERNETES_SERVICE_HOST"] == "::1"
    assert kubernetes_service_env(None) == {}
