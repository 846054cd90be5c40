"""Pod conditions as kubelet's ``status`` package generates them (pure: no server needed)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.embedded.node.status import ContainerStatus, PodState, Terminated, pod_status

JsonDict = dict[str, Any]


def _pod(**spec: Any) -> JsonDict:
    return {
        "metadata": {"name": "p", "generation": 3},
        "spec": {"containers": [{"name": "main"}], **spec},
        "status": {"qosClass": "Burstable", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }


def _running(name: str) -> ContainerStatus:
    st = ContainerStatus(name, "img")
    st.set_running(1.0, "kubetrain://1")
    return st


def _done(name: str, code: int) -> ContainerStatus:
    st = ContainerStatus(name, "img")
    st.set_terminated(Terminated(code, "Completed" if code == 0 else "Error", 1.0, 2.0))
    return st


def _summary(status: JsonDict) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in status["conditions"]}


CASES = [
    (
        "init container still running",
        PodState(sandbox_ready=True),
        [ContainerStatus("init", "img", "PodInitializing")],
        [ContainerStatus("main", "img", "PodInitializing")],
        {},
        {
            "PodReadyToStartContainers": ("True", "", ""),
            "Initialized": ("False", "ContainersNotInitialized", "containers with incomplete status: [init]"),
            "Ready": ("False", "ContainersNotReady", "containers with unready status: [main]"),
            "ContainersReady": ("False", "ContainersNotReady", "containers with unready status: [main]"),
        },
    ),
    (
        "running",
        PodState(sandbox_ready=True, initialized=True),
        [],
        [_running("main")],
        {},
        {
            "PodReadyToStartContainers": ("True", "", ""),
            "Initialized": ("True", "", ""),
            "Ready": ("True", "", ""),
            "ContainersReady": ("True", "", ""),
        },
    ),
    (
        "succeeded",
        PodState(sandbox_ready=True, initialized=True),
        [],
        [_done("main", 0)],
        {"restartPolicy": "Never"},
        {
            "PodReadyToStartContainers": ("False", "", ""),
            "Initialized": ("True", "PodCompleted", ""),
            "Ready": ("False", "PodCompleted", ""),
            "ContainersReady": ("False", "PodCompleted", ""),
        },
    ),
    (
        "failed",
        PodState(sandbox_ready=True, initialized=True),
        [],
        [_done("main", 2)],
        {"restartPolicy": "Never"},
        {
            "PodReadyToStartContainers": ("False", "", ""),
            "Initialized": ("True", "", ""),
            "Ready": ("False", "PodFailed", ""),
            "ContainersReady": ("False", "PodFailed", ""),
        },
    ),
    (
        "readiness gate not there yet",
        PodState(sandbox_ready=True, initialized=True),
        [],
        [_running("main")],
        {"readinessGates": [{"conditionType": "example.com/lb"}]},
        {
            "PodReadyToStartContainers": ("True", "", ""),
            "Initialized": ("True", "", ""),
            "Ready": (
                "False",
                "ReadinessGatesNotReady",
                'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
            ),
            "ContainersReady": ("True", "", ""),
        },
    ),
]


@pytest.mark.parametrize(
    ("case", "state", "inits", "containers", "spec", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_conditions(
    case: str,
    state: PodState,
    inits: list[ContainerStatus],
    containers: list[ContainerStatus],
    spec: JsonDict,
    expected: dict[str, tuple[str, str, str]],
) -> None:
    pod = _pod(**spec)
    status = pod_status(
        state, spec.get("restartPolicy", "Always"), inits, containers, False, now=10.0, pod=pod
    )

    summary = _summary(status)
    assert {k: v for k, v in summary.items() if k != "PodScheduled"} == expected
    assert [c["type"] for c in status["conditions"]][:4] == list(expected)
    assert status["conditions"][-1] == {
        "type": "PodScheduled",
        "status": "True",
    }  # the scheduler's, as it was
    assert status["observedGeneration"] == 3
    assert all(c["observedGeneration"] == 3 for c in status["conditions"][:4])
    assert status["qosClass"] == "Burstable"  # the API server's, never recomputed
