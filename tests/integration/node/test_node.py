"""The Node object and its heartbeat: capacity, Ready, and a Lease in kube-node-lease."""

from __future__ import annotations

import os

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.embedded.node.kubeapi import group_path

from .conftest import wait_for


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
