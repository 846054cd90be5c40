"""core/v1 Events as Kubernetes components write them (client-go's recorder, kubelet, scheduler).

The operator's recorder, the node agent, the binder and the embedded Job controller all report
events, and `kubectl describe` and `kubectl get events` read them the same way whoever wrote
them: one builder keeps the fields (source, reportingComponent, counts, timestamps) alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.kube.timefmt import format_time

JsonDict = dict[str, Any]


def object_reference(api_version: str, kind: str, metadata: Mapping[str, Any]) -> JsonDict:
    """The ``involvedObject`` of an object with this metadata."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "namespace": metadata.get("namespace"),
        "name": metadata.get("name"),
        "uid": metadata.get("uid"),
    }


def core_event(
    involved: JsonDict,
    type: str,
    reason: str,
    message: str,
    component: str,
    when: datetime | float,
    *,
    host: str | None = None,
    name: str | None = None,
) -> JsonDict:
    """A first occurrence (count 1) of an event about `involved`, by `component` on `host`.

    Without `name` the server names it (``generateName: <object>.``); `host` is the source host
    (when not empty) and the reportingInstance (when given).
    """
    stamp = format_time(when)
    metadata: JsonDict = {"namespace": involved.get("namespace") or "default"}
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = f"{involved.get('name') or ''}."
    source = {"component": component, **({"host": host} if host else {})}
    event: JsonDict = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": metadata,
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": type,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": source,
        "reportingComponent": component,
    }
    if host is not None:
        event["reportingInstance"] = host
    return event
