"""Poisoned jobs of every kind, for the fuzz tests of the operator, the API server and the plane.

A recipe takes a real job (the examples cover every kind, MPIJob v1 and v2beta1, ChainerJob and
Caffe2Job) and replaces one node with an arbitrary JSON value (nesting far beyond Python's recursion
limit, lone surrogates, 70-bit integers, wrongly typed metadata) or adds a sibling key. A body
recipe then damages the encoded bytes the way a broken client could: invalid UTF-8, lone surrogate
escapes, nesting beyond Go's 10,000 levels, truncation. Deep values are built by the test, not
drawn: hypothesis prints drawn values recursively.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from kubetrain.kube import jsonsafe

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
KindVersion = tuple[str, str]
"""(kind, apiVersion): MPIJob is fuzzed in both of its versions."""


def _load(path: Path) -> list[dict[str, Any]]:
    return [
        doc
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith("kubeflow.org/")
    ]


def example_jobs(directory: Path = EXAMPLES) -> list[dict[str, Any]]:
    """Every valid example job under `directory` (not examples/invalid)."""
    return [
        doc
        for path in sorted(directory.rglob("*.yaml"))
        if "invalid" not in path.parts
        for doc in _load(path)
    ]


def by_kind(docs: list[dict[str, Any]]) -> dict[KindVersion, list[dict[str, Any]]]:
    out: dict[KindVersion, list[dict[str, Any]]] = {}
    for doc in docs:
        out.setdefault((doc["kind"], doc["apiVersion"]), []).append(doc)
    return out


ALL_KINDS: tuple[KindVersion, ...] = (
    ("TFJob", "kubeflow.org/v1"),
    ("PyTorchJob", "kubeflow.org/v1"),
    ("XGBoostJob", "kubeflow.org/v1"),
    ("PaddleJob", "kubeflow.org/v1"),
    ("JAXJob", "kubeflow.org/v1"),
    ("MXJob", "kubeflow.org/v1"),
    ("MPIJob", "kubeflow.org/v1"),
    ("MPIJob", "kubeflow.org/v2beta1"),
    ("ChainerJob", "kubeflow.org/v1alpha1"),
    ("Caffe2Job", "kubeflow.org/v1alpha1"),
)


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 3 else {"k": value}
    return value


odd_strings = st.sampled_from(["\ud800", "a\udfffb", "\x00", "Worker", "", "x" * 300, "é", "\U0001f600"])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | odd_strings
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=6) | odd_strings, children, max_size=3)
    ),
    max_leaves=8,
)
DEPTHS = (0, 0, 150, 600, 1500, 5000)
"""How deep a value is buried: past orjson's encoder (254) and decoder (1,024) and Python's recursion
limit (~1,000), and far past them."""


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every node's path in `value` (iterative: the examples are shallow, but cheap either way)."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, prefix)]
    while stack:
        node, where = stack.pop()
        out.append(where)
        if isinstance(node, dict):
            stack.extend((child, (*where, key)) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, (*where, i)) for i, child in enumerate(node))
    return sorted(out, key=repr)


@dataclass(frozen=True)
class Recipe:
    """Which job, which node, what value, how deep to bury it."""

    base: int
    path: tuple[Any, ...]
    value: Any
    depth: int

    def apply(self, bases: list[dict[str, Any]], leaf: Any = None) -> dict[str, Any]:
        """The poisoned job; `leaf` (if given) stands in for the value, unburied."""
        doc = copy.deepcopy(bases[self.base])
        node: Any = doc
        for key in self.path[:-1]:
            node = node[key]
        last = self.path[-1]
        if isinstance(node, dict) or (isinstance(node, list) and isinstance(last, int) and last < len(node)):
            if leaf is not None:
                node[last] = leaf
            else:
                node[last] = nested(self.depth, self.value) if self.depth else self.value
        return doc

    def encode(self, bases: list[dict[str, Any]]) -> bytes:
        """`jsonsafe.dumps(self.apply(bases))`, with the deep value spliced in as text: building
        and encoding 5,000 levels in Python would cost the test more than the server."""
        raw = jsonsafe.dumps(self.apply(bases, _MARKER))
        value = jsonsafe.dumps(self.value)
        opens = "".join("[" if i % 3 else '{"k":' for i in reversed(range(self.depth)))
        closes = "".join("]" if i % 3 else "}" for i in range(self.depth))
        return raw.replace(b'"%s"' % _MARKER.encode(), opens.encode() + value + closes.encode(), 1)


_MARKER = "kubetrain-fuzz-value-7f3a"


def recipes(
    bases: list[dict[str, Any]],
    kinds: dict[KindVersion, list[int]] | None = None,
    depths: tuple[int, ...] = DEPTHS,
) -> Any:
    """A strategy of `Recipe`s over `bases`, every kind (and MPIJob version) equally often."""
    groups = kinds or {
        k: [i for i, d in enumerate(bases) if (d["kind"], d["apiVersion"]) == k] for k in ALL_KINDS
    }
    groups = {k: v for k, v in groups.items() if v}
    node_paths = [[p for p in paths(doc) if p] for doc in bases]

    @st.composite
    def recipe(draw: st.DrawFn) -> Recipe:
        group = draw(st.sampled_from(sorted(groups)))
        index = draw(st.sampled_from(groups[group]))
        path = draw(st.sampled_from(node_paths[index]))
        if draw(st.booleans()):  # a sibling key instead of a replaced node
            path = (*path[:-1], draw(odd_strings | st.sampled_from(["Worker", "command", "zz"])))
        return Recipe(index, path, draw(json_values), draw(st.sampled_from(depths)))

    return recipe()


BODY_DAMAGE = ("none", "none", "none", "lone-surrogate", "invalid-utf8", "too-deep", "truncated", "yaml")
"""How the encoded body is damaged (mostly not: the value poisons it already)."""


def damaged_body(raw: bytes, damage: str) -> tuple[bytes, str]:
    """The bytes and the Content-Type of a job as a broken client would send them."""
    content_type = "application/json"
    if damage == "lone-surrogate":
        raw = raw.replace(b'":"', b'":"\\ud800', 1)
    elif damage == "invalid-utf8":
        raw = raw.replace(b'":"', b'":"\xff\xe2\x82', 1)
    elif damage == "too-deep":
        raw = raw.replace(b'"spec":', b'"spec":' + b"[" * 10_001, 1) + b"]" * 10_001
    elif damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "yaml":
        content_type = "application/yaml"
    return raw, content_type
