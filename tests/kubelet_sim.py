"""Play the kubelet over HTTP, for tests that need exact control of pod state.

Writes go through pods/status (and pods/binding, Node objects, and the final delete) exactly as
a real kubelet and scheduler would, so the operator under test cannot tell the difference.
"""

from __future__ import annotations

import ssl
import time
from typing import Any

from kubetrain.kube.client import KubeAPI

_STATUS_RETRIES = 5


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class KubeletError(RuntimeError):
    """The API server refused a kubelet write."""


class KubeletSim:
    """A fake node: registers a Node, binds pods to it, and reports their container states."""

    def __init__(
        self,
        base_url: str,
        node_name: str = "kubetrain-node",
        *,
        token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.api = KubeAPI.for_url(base_url, token=token, ssl_context=ssl_context)
        self.node_name = node_name
        self._ip_counter = 1

    async def __aenter__(self) -> KubeletSim:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.api.close()

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """Status and decoded answer of one request, whatever the status."""
        data = None if body is None else self.api.dumps(body)
        resp = await self.api.send(method, path, query=params, body=data, content_type=content_type)
        return resp.status, self.api.loads(resp.body) if resp.body else None

    async def _ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, out = await self._call(method, path, body, **kw)
        if status >= 300:
            raise KubeletError(
                f"{method} {path}: {status} {out.get('message') if isinstance(out, dict) else out}"
            )
        return out

    # --- node and scheduling -------------------------------------------------------------

    async def register_node(self, ready: bool = True, labels: dict[str, str] | None = None) -> dict[str, Any]:
        """Create this node's Node object with a Ready condition (what a kubelet does at start)."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": {"kubernetes.io/hostname": self.node_name, **(labels or {})},
            },
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": _now(),
                        "lastTransitionTime": _now(),
                    }
                ],
                "addresses": [
                    {"type": "InternalIP", "address": "127.0.0.1"},
                    {"type": "Hostname", "address": self.node_name},
                ],
            },
        }
        status, out = await self._call("POST", "/api/v1/nodes", node)
        if status == 409:
            return await self._ok("GET", f"/api/v1/nodes/{self.node_name}")
        if status >= 300:
            raise KubeletError(f"register node: {status} {out}")
        return out

    async def bind(self, namespace: str, name: str, node: str | None = None) -> None:
        """POST pods/{name}/binding, as the scheduler does."""
        await self._ok(
            "POST",
            f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node or self.node_name},
            },
        )

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return await self._ok("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")

    async def confirm_deletion(self, namespace: str, name: str) -> None:
        """The kubelet's final delete (gracePeriodSeconds=0) once containers are gone."""
        status, out = await self._call(
            "DELETE",
            f"/api/v1/namespaces/{namespace}/pods/{name}",
            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
        )
        if status not in (200, 404):
            raise KubeletError(f"confirm deletion: {status} {out}")

    # --- status --------------------------------------------------------------------------

    async def update_status(self, namespace: str, name: str, mutate: Any) -> dict[str, Any]:
        """GET, ``mutate(pod)`` in place, PUT pods/status; retried on 409 like client-go."""
        for _ in range(_STATUS_RETRIES):
            pod = await self.get_pod(namespace, name)
            mutate(pod)
            status, out = await self._call("PUT", f"/api/v1/namespaces/{namespace}/pods/{name}/status", pod)
            if status == 409:
                continue
            if status >= 300:
                raise KubeletError(f"update status of {namespace}/{name}: {status} {out}")
            return out
        raise KubeletError(f"update status of {namespace}/{name}: conflict after {_STATUS_RETRIES} attempts")

    @staticmethod
    def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
        return [c for c in (pod.get("spec") or {}).get("containers") or () if isinstance(c, dict)]

    @staticmethod
    def container_status(
        pod: dict[str, Any],
        container: str,
        state: str,
        *,
        exit_code: int = 0,
        reason: str | None = None,
        message: str | None = None,
        restart_count: int = 0,
        ready: bool | None = None,
    ) -> dict[str, Any]:
        """A v1.ContainerStatus in state ``running``, ``terminated`` or ``waiting``."""
        image = next(
            (c.get("image", "") for c in KubeletSim._containers(pod) if c.get("name") == container), ""
        )
        cid = f"kubetrain://{pod['metadata'].get('uid', '')}/{container}"
        detail: dict[str, Any]
        if state == "running":
            detail = {"startedAt": _now()}
        elif state == "terminated":
            detail = {
                "exitCode": exit_code,
                "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                "startedAt": _now(),
                "finishedAt": _now(),
                "containerID": cid,
            }
            if message:
                detail["message"] = message
        elif state == "waiting":
            detail = {"reason": reason or "ContainerCreating"}
            if message:
                detail["message"] = message
        else:
            raise ValueError(f"unknown container state {state!r}")
        is_ready = (state == "running") if ready is None else ready
        out = {
            "name": container,
            "state": {state: detail},
            "lastState": {},
            "ready": is_ready,
            "restartCount": restart_count,
            "image": image,
            "imageID": "",
            "started": state == "running",
        }
        if state != "waiting":
            out["containerID"] = cid
        return out

    def _next_ip(self) -> str:
        self._ip_counter += 1
        return f"10.244.0.{self._ip_counter % 250 + 2}"

    @staticmethod
    def _conditions(ready: bool) -> list[dict[str, Any]]:
        ts = _now()
        flag = "True" if ready else "False"
        return [
            {"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": ts}
            for t, s in (
                ("Initialized", "True"),
                ("Ready", flag),
                ("ContainersReady", flag),
                ("PodScheduled", "True"),
            )
        ]

    async def set_phase(
        self,
        namespace: str,
        name: str,
        phase: str,
        *,
        container_state: str | None = None,
        exit_code: int = 0,
        reason: str | None = None,
        message: str | None = None,
        restart_count: int = 0,
        ready: bool | None = None,
        pod_ip: str | None = None,
        containers: dict[str, dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Set the pod phase and every container's status; ``containers`` overrides per container.

        Defaults follow the phase: Pending → waiting ContainerCreating, Running → running and ready,
        Succeeded → terminated 0 Completed, Failed → terminated ``exit_code`` Error.
        """
        state = container_state or {"Pending": "waiting", "Running": "running"}.get(phase, "terminated")
        code = exit_code if phase != "Succeeded" else 0
        if phase == "Failed" and exit_code == 0:
            code = 1
        ip = pod_ip

        def mutate(pod: dict[str, Any]) -> None:
            status = pod.setdefault("status", {})
            statuses = []
            for c in self._containers(pod):
                opts: dict[str, Any] = {
                    "exit_code": code,
                    "reason": reason,
                    "message": message,
                    "restart_count": restart_count,
                    "ready": ready,
                }
                opts.update((containers or {}).get(c["name"], {}))
                cstate = opts.pop("state", state)
                statuses.append(self.container_status(pod, c["name"], cstate, **opts))
            all_ready = bool(statuses) and all(s["ready"] for s in statuses)
            status.update(
                phase=phase,
                containerStatuses=statuses,
                conditions=self._conditions(all_ready),
                hostIP="127.0.0.1",
                startTime=status.get("startTime") or _now(),
            )
            if phase != "Pending":
                status["podIP"] = ip or status.get("podIP") or self._next_ip()
                status["podIPs"] = [{"ip": status["podIP"]}]
            if phase == "Failed" and reason and state != "terminated":
                status["reason"] = reason

        return await self.update_status(namespace, name, mutate)

    async def pending(
        self, namespace: str, name: str, reason: str = "ContainerCreating", message: str | None = None
    ) -> dict[str, Any]:
        return await self.set_phase(namespace, name, "Pending", reason=reason, message=message)

    async def running(
        self,
        namespace: str,
        name: str,
        *,
        ready: bool = True,
        restart_count: int = 0,
        pod_ip: str | None = None,
    ) -> dict[str, Any]:
        return await self.set_phase(
            namespace, name, "Running", ready=ready, restart_count=restart_count, pod_ip=pod_ip
        )

    async def succeeded(self, namespace: str, name: str, restart_count: int = 0) -> dict[str, Any]:
        return await self.set_phase(namespace, name, "Succeeded", restart_count=restart_count, ready=False)

    async def failed(
        self,
        namespace: str,
        name: str,
        exit_code: int = 1,
        reason: str = "Error",
        message: str | None = None,
        restart_count: int = 0,
    ) -> dict[str, Any]:
        return await self.set_phase(
            namespace,
            name,
            "Failed",
            exit_code=exit_code,
            reason=reason,
            message=message,
            restart_count=restart_count,
            ready=False,
        )

    async def restarted(
        self, namespace: str, name: str, exit_code: int, restart_count: int, reason: str = "Error"
    ) -> dict[str, Any]:
        """A container that crashed and was restarted: running again, lastState terminated."""

        def mutate(pod: dict[str, Any]) -> None:
            statuses = []
            for c in self._containers(pod):
                st = self.container_status(pod, c["name"], "running", restart_count=restart_count)
                st["lastState"] = {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": reason,
                        "startedAt": _now(),
                        "finishedAt": _now(),
                    }
                }
                statuses.append(st)
            pod.setdefault("status", {}).update(
                phase="Running", containerStatuses=statuses, conditions=self._conditions(True)
            )

        return await self.update_status(namespace, name, mutate)
