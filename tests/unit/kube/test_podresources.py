"""`template_requests`: apimachinery's `resourcehelpers.PodRequests` on an undefaulted pod template
(what a TrainJob's PodGroup asks for), spelling kept as Kubernetes formats sums."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.kube.podresources import template_requests


def container(name: str, restart: str | None = None, **requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": requests}}
    if restart:
        out["restartPolicy"] = restart
    return out


def requests(spec: Any) -> dict[str, str]:
    return {key: str(value) for key, value in template_requests(spec).items()}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {"containers": [container("a", cpu="500m"), container("b", cpu="1")]}, {"cpu": "1500m"}, id="sum"
        ),
        pytest.param(
            {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]},
            {},
            id="limits-are-not-requests",
        ),
        pytest.param(
            {"containers": [container("a", cpu="1")], "initContainers": [container("i", cpu="3")]},
            {"cpu": "3"},
            id="an-init-container-is-a-floor",
        ),
        pytest.param(
            {
                "containers": [container("a", cpu="1")],
                "initContainers": [container("s", "Always", cpu="1"), container("i", cpu="1500m")],
            },
            {"cpu": "2500m"},
            id="a-sidecar-adds-and-runs-beside-later-init-containers",
        ),
        pytest.param(
            {"containers": [container("a", cpu="1", memory="1Gi")], "resources": {"requests": {"cpu": "4"}}},
            {"cpu": "4", "memory": "1Gi"},
            id="pod-level-requests-replace-the-sum",
        ),
        pytest.param(
            {"containers": [container("a", memory="1Gi")], "overhead": {"memory": "512Mi"}},
            {"memory": "1536Mi"},
            id="overhead-is-added",
        ),
        pytest.param({"containers": [container("a", cpu="lots")]}, {}, id="an-invalid-quantity-is-skipped"),
        pytest.param("not a spec", {}, id="malformed"),
    ],
)
def test_template_requests_as_kubernetes_sums_them(spec: Any, want: dict[str, str]) -> None:
    assert requests(spec) == want
