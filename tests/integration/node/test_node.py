"""The Node object and its heartbeat: capacity, Ready, and a Lease in kube-node-lease."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.kube.client import core_path, group_path

from .conftest import container, create, make_agent, pod, wait_for, wait_phase

JsonDict = dict[str, Any]


async def test_node_registers_capacity_and_heartbeats(api: KubeAPI, agent: NodeAgent) -> None:
    node = await api.get("/api/v1/nodes/kubetrain-local")
    assert node["status"]["capacity"]["cpu"] == str(os.cpu_count())
    assert node["status"]["capacity"]["pods"] == "110"
    assert node["status"]["capacity"]["memory"].endswith("Ki")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    lease_path = group_path("coordination.k8s.io", "v1", "leases", "kube-node-lease", "kubetrain-local")
    lease = await wait_for(lambda: api.get_or_none(lease_path), what="node lease")
    assert lease["spec"]["holderIdentity"] == "kubetrain-local"
    first = lease["spec"]["renewTime"]

    async def renewed() -> bool:
        again = await api.get(lease_path)
        return bool(again["spec"]["renewTime"] != first)

    await wait_for(renewed, what="lease renewal")


async def test_node_status_is_kubelet_shaped(api: KubeAPI, server: EmbeddedAPIServer, tmp_path: Path) -> None:
    node_agent = await make_agent(server, api, tmp_path, status_report_interval=0.2, heartbeat_interval=0.2)
    try:
        first = await api.get("/api/v1/nodes/kubetrain-local")

        async def heartbeat_moved() -> JsonDict | None:
            again = await api.get("/api/v1/nodes/kubetrain-local")
            beats = {c["lastHeartbeatTime"] for c in again["status"]["conditions"]}
            return again if beats != {c["lastHeartbeatTime"] for c in first["status"]["conditions"]} else None

        later: JsonDict = await wait_for(heartbeat_moved, timeout=5, what="a status heartbeat")
    finally:
        await node_agent.stop()
    conditions = later["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    assert conditions[3]["message"] == "kubelet is posting ready status"
    # only the heartbeat moves: a transition time changes when the status does
    assert [c["lastTransitionTime"] for c in conditions] == [
        c["lastTransitionTime"] for c in first["status"]["conditions"]
    ]
    status = later["status"]
    assert status["allocatable"]["pods"] == "110" and "ephemeral-storage" in status["allocatable"]
    assert {a["type"] for a in status["addresses"]} == {"InternalIP", "Hostname"}
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.36.")
    assert "declaredFeatures" not in status  # no kubelet API served: nothing to proxy WebSockets to
    lease = await api.get(
        group_path("coordination.k8s.io", "v1", "leases", "kube-node-lease", "kubetrain-local")
    )
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "kubetrain-local", "uid": later["metadata"]["uid"]}
    ]


async def test_pod_status_keeps_conditions_it_does_not_own(api: KubeAPI, agent: NodeAgent) -> None:
    created = await create(
        api, pod("keep", container("main", "import time; time.sleep(1)"), restartPolicy="Never")
    )
    await wait_phase(api, "keep", "Running")
    gate = {"type": "example.com/gate", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    current = await api.get(core_path("pods", "default", "keep"))
    conditions = [*current["status"]["conditions"], gate]
    await api.merge_patch(
        core_path("pods", "default", "keep", "status"), {"status": {"conditions": conditions}}
    )

    done = await wait_phase(api, "keep", "Succeeded")

    types = [c["type"] for c in done["status"]["conditions"]]
    assert types[:4] == ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"]
    assert gate in done["status"]["conditions"] and "PodScheduled" in types
    assert done["status"]["qosClass"] == created["status"]["qosClass"] == "BestEffort"
