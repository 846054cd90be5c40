"""Server-side printing (meta.k8s.io Table) so ``kubectl get`` shows familiar columns."""

from __future__ import annotations

import calendar
import re
import time
from typing import Any

from aiohttp import web

from .resources import ResourceType


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept


def human_duration(seconds: float) -> str:
    """kubectl's duration.HumanDuration."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 730:
        return f"{d}d"
    return f"{d // 365}y{d % 365}d"


def _age(obj: dict[str, Any]) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    created = calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))
    return human_duration(time.time() - created)


_STEP = re.compile(r"([^.\[\]]*)((?:\[[^\]]*\])*)")


def _index(values: list[Any], selector: str) -> list[Any]:
    """Apply one `[i]` or `[a:b]` selector (the JSONPath subset CRD printer columns use)."""
    out: list[Any] = []
    for value in values:
        if not isinstance(value, list):
            continue
        if ":" in selector:
            start, _, stop = selector.partition(":")
            out.extend(value[int(start) if start else None : int(stop) if stop else None])
        elif selector.lstrip("-").isdigit() and -len(value) <= int(selector) < len(value):
            out.append(value[int(selector)])
    return out


def _jsonpath(obj: Any, path: str) -> Any:
    """Evaluate `.a.b[0].c` or `.a[-1:].b` as kubectl prints: one match gives the value, several a list."""
    values = [obj]
    for part in path.lstrip(".").split("."):
        match = _STEP.fullmatch(part)
        if match is None:
            return None
        name, selectors = match.groups()
        if name:
            values = [v.get(name) for v in values if isinstance(v, dict) and v.get(name) is not None]
        for selector in re.findall(r"\[([^\]]*)\]", selectors):
            values = _index(values, selector)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _pod_cells(pod: dict[str, Any]) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in statuses:
        state = c.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            reason = state["terminated"].get("reason") or f"ExitCode:{state['terminated'].get('exitCode')}"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return [f"{ready}/{len(spec.get('containers') or [])}", reason, restarts]


def _columns(rt: ResourceType) -> list[dict[str, Any]]:
    cols = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": "Name must be unique within a namespace.",
            "priority": 0,
        }
    ]
    if rt.kind == "Pod" and rt.group == "":
        cols += [
            {"name": n, "type": t, "format": "", "description": n, "priority": 0}
            for n, t in (("Ready", "string"), ("Status", "string"), ("Restarts", "integer"))
        ]
    elif rt.custom is not None:
        cols += [
            {
                "name": c.get("name", ""),
                "type": c.get("type", "string"),
                "format": c.get("format", ""),
                "description": c.get("description", ""),
                "priority": c.get("priority", 0),
            }
            for c in rt.custom.printer_columns
            if c.get("jsonPath") != ".metadata.creationTimestamp"
        ]
    cols.append(
        {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp", "priority": 0}
    )
    return cols


def _cells(rt: ResourceType, obj: dict[str, Any]) -> list[Any]:
    cells: list[Any] = [obj["metadata"]["name"]]
    if rt.kind == "Pod" and rt.group == "":
        cells += _pod_cells(obj)
    elif rt.custom is not None:
        cells += [
            _jsonpath(obj, c.get("jsonPath", ""))
            for c in rt.custom.printer_columns
            if c.get("jsonPath") != ".metadata.creationTimestamp"
        ]
    cells.append(_age(obj))
    return cells


def to_table(rt: ResourceType, objs: list[dict[str, Any]], rv: int, request: web.Request) -> dict[str, Any]:
    include = request.query.get("includeObject", "Metadata")
    rows = []
    for obj in objs:
        row: dict[str, Any] = {"cells": _cells(rt, obj)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv)},
        "columnDefinitions": _columns(rt),
        "rows": rows,
    }
