"""Server-side printing (meta.k8s.io Table) so ``kubectl get`` shows familiar columns."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .printers import AGE, BUILTIN_COLUMNS, Column, since
from .resources import ResourceType


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept


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


NAME = Column(
    "Name",
    lambda o: o["metadata"]["name"],
    description="Name must be unique within a namespace.",
    format="name",
)


def _path_cell(path: str, date: bool) -> Callable[[dict[str, Any]], Any]:
    """A printer column's cell; `date` columns show the age (ConvertToHumanReadableDateType)."""
    if date:
        return lambda obj: since(_jsonpath(obj, path)) if isinstance(_jsonpath(obj, path), str) else None
    return lambda obj: _jsonpath(obj, path)


def _custom_columns(rt: ResourceType) -> list[Column]:
    """apiextensions' table convertor: the CRD's columns, or an Age date column when it has none."""
    assert rt.custom is not None
    specs = rt.custom.printer_columns or (
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )
    cols = []
    for spec in specs:
        path = str(spec.get("jsonPath", ""))
        cols.append(
            Column(
                str(spec.get("name", "")),
                _path_cell(path, spec.get("type") == "date"),
                int(spec.get("priority", 0)),
                str(
                    spec.get("description")
                    or f"Custom resource definition column (in JSONPath format): {path}"
                ),
                str(spec.get("type", "string")),
                str(spec.get("format", "")),
            )
        )
    return cols


def columns(rt: ResourceType) -> list[Column]:
    """The kind's columns, Name first (events put it last, as a wide column)."""
    if rt.custom is not None:
        return [NAME, *_custom_columns(rt)]
    cols = BUILTIN_COLUMNS.get((rt.group, rt.kind))
    if cols is None:
        return [NAME, *AGE]
    if any(c.name == "Name" for c in cols):
        return list(cols)
    return [NAME, *cols]


def to_table(rt: ResourceType, objs: list[dict[str, Any]], rv: int, request: web.Request) -> dict[str, Any]:
    include = request.query.get("includeObject", "Metadata")
    cols = columns(rt)
    rows = []
    for obj in objs:
        row: dict[str, Any] = {"cells": [c.cell(obj) for c in cols]}
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
        "columnDefinitions": [c.definition() for c in cols],
        "rows": rows,
    }
