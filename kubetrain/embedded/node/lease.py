"""The node's heartbeat Lease in ``kube-node-lease``, renewed as the kubelet renews it.

The node-lifecycle controller treats a node as alive while ``spec.renewTime`` is younger than its
grace period (40 s in 1.36), whatever the Node's status says, so this renewal is what keeps the
node Ready between status updates. Like the kubelet, the Lease is owned by the Node (an
ownerReference without ``controller``), so deleting the Node lets the garbage collector remove
it; a Node re-created under the same name gets its new uid written on the next renewal.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from kubetrain.kube.client import KubeAPI, core_path, group_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.timefmt import format_microtime

JsonDict = dict[str, Any]

LEASE_NAMESPACE = "kube-node-lease"


class NodeLease:
    """``await lease.renew(node_uid)`` creates the Lease or moves its renewTime forward."""

    def __init__(self, api: KubeAPI, node_name: str, duration_seconds: int) -> None:
        self.api = api
        self.node_name = node_name
        self.duration_seconds = duration_seconds
        self.path = group_path("coordination.k8s.io", "v1", "leases", LEASE_NAMESPACE, node_name)

    def _owner(self, node_uid: str) -> list[JsonDict]:
        return [{"apiVersion": "v1", "kind": "Node", "name": self.node_name, "uid": node_uid}]

    def _spec(self, now: float) -> JsonDict:
        return {
            "holderIdentity": self.node_name,
            "leaseDurationSeconds": self.duration_seconds,
            "renewTime": format_microtime(now),
        }

    async def renew(self, node_uid: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        patch: JsonDict = {"spec": self._spec(now)}
        if node_uid:
            patch["metadata"] = {"ownerReferences": self._owner(node_uid)}
        try:
            await self.api.merge_patch(self.path, patch)
            return
        except ApiError as err:
            if err.status != 404:
                raise
        with contextlib.suppress(ApiError):  # a real cluster has it; a bare API server may not
            await self.api.create(
                core_path("namespaces"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}},
            )
        meta: JsonDict = {"name": self.node_name, "namespace": LEASE_NAMESPACE}
        if node_uid:
            meta["ownerReferences"] = self._owner(node_uid)
        await self.api.create(
            group_path("coordination.k8s.io", "v1", "leases", LEASE_NAMESPACE),
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": meta,
                "spec": self._spec(now),
            },
        )
