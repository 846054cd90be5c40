"""Warning events that surface why an active pod is unhealthy (docs/upstream-behaviour.md#abnormal-pods).

Users read `kubectl describe <job>`, not every pod: upstream copies a failing container's
terminated/waiting reason, or the latest false pod condition, onto the job as a Warning.
"""

from __future__ import annotations

from typing import Any

from kubetrain.controller.context import JobReconcile
from kubetrain.controller.names import JsonDict, is_terminating, name_of
from kubetrain.controller.pods import phase


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _container_events(ctx: JobReconcile, pod: str, status: Any) -> None:
    if not isinstance(status, dict):
        return
    state = _dict(status.get("state"))
    name = status.get("name", "")
    terminated = state.get("terminated")
    if isinstance(terminated, dict) and terminated.get("exitCode", 0) != 0:
        ctx.event(
            "Warning",
            str(terminated.get("reason") or ""),
            f"Error pod {pod} container {name} exitCode: {terminated.get('exitCode')} "
            f"terminated message: {terminated.get('message') or ''}",
        )
    waiting = state.get("waiting")
    if isinstance(waiting, dict) and waiting.get("message"):
        ctx.event(
            "Warning",
            str(waiting.get("reason") or ""),
            f"Error pod {pod} container {name} waiting message: {waiting['message']}",
        )


def record_abnormal_pods(ctx: JobReconcile) -> None:
    """Events for every active pod (not Succeeded/Failed, not terminating) that looks unhealthy."""
    for pod in ctx.pods:
        if phase(pod) in ("Succeeded", "Failed") or is_terminating(pod):
            continue
        _pod_events(ctx, pod)


def _pod_events(ctx: JobReconcile, pod: JsonDict) -> None:
    status = _dict(pod.get("status"))
    name = name_of(pod)
    for key in ("containerStatuses", "initContainerStatuses"):
        statuses = status.get(key)
        if isinstance(statuses, list) and statuses:
            for item in statuses:
                _container_events(ctx, name, item)
            return
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    if not conditions:
        return
    latest = max(conditions, key=lambda c: str(c.get("lastTransitionTime") or ""))
    if latest.get("status") == "True":
        return
    ctx.event(
        "Warning",
        str(latest.get("reason") or ""),
        f"Error pod {name} condition message: {latest.get('message') or ''}",
    )
