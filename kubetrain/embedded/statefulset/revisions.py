"""ControllerRevisions of a StatefulSet: what Kubernetes stores so pods know their template.

As kube-controller-manager does it (pkg/controller/statefulset ``getPatch``/``newRevision`` and
pkg/controller/history): a revision's ``data`` is ``{"spec": {"template": <template>,
"$patch": "replace"}}``; its name is ``<set>-<hash>`` where the hash is FNV-32 of that JSON
(keys sorted, as Go's encoding/json writes a map) and of the collision count, encoded with the
API server's safe alphabet; it carries the template's labels plus ``controller.kubernetes.io/hash``
(the bare hash) and the set's annotations; a pod's ``controller-revision-hash`` label is the
revision's name. With the API server's pod template defaults, the same StatefulSet gets the same
revision name as on Kubernetes 1.36 (checked against kube-controller-manager in the tests); a
template using a default the embedded server does not fill in hashes differently.
"""

from __future__ import annotations

import json
from typing import Any

from kubetrain.embedded.statefulset.identity import HASH_LABEL, controller_ref

JsonDict = dict[str, Any]

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193


def fnv32(data: bytes) -> int:
    """FNV-1 32-bit (Go's hash/fnv New32, which HashControllerRevision uses)."""
    value = _FNV32_OFFSET
    for byte in data:
        value = (value * _FNV32_PRIME) & 0xFFFFFFFF
        value ^= byte
    return value


def safe_encode(text: str) -> str:
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def go_json(obj: Any) -> bytes:
    """JSON as Go's json.Marshal writes a map: sorted keys, no spaces, <>& escaped."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


def revision_data(set_: JsonDict) -> JsonDict:
    template = dict((set_.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def template_of(revision: JsonDict) -> JsonDict:
    """The pod template a revision restores (ApplyRevision of its replace patch)."""
    template = dict(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def revision_hash(data: JsonDict, collision_count: int) -> str:
    raw = go_json(data) + str(collision_count).encode()
    return safe_encode(str(fnv32(raw)))


def new_revision(set_: JsonDict, number: int, collision_count: int) -> JsonDict:
    meta = set_.get("metadata") or {}
    data = revision_data(set_)
    hashed = revision_hash(data, collision_count)
    labels = dict(
        (((set_.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
    )
    labels[HASH_LABEL] = hashed
    out_meta: JsonDict = {
        "name": f"{str(meta.get('name'))[:223]}-{hashed}",
        "namespace": meta.get("namespace") or "default",
        "labels": labels,
        "ownerReferences": [controller_ref(set_)],
    }
    if meta.get("annotations"):
        out_meta["annotations"] = dict(meta["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": out_meta,
        "data": data,
        "revision": number,
    }


def sort_key(revision: JsonDict) -> tuple[int, str, str]:
    """history.SortControllerRevisions: by revision number, then creation time, then name."""
    meta = revision.get("metadata") or {}
    return int(revision.get("revision") or 0), str(meta.get("creationTimestamp") or ""), str(meta.get("name"))


def equal(a: JsonDict, b: JsonDict) -> bool:
    """history.EqualRevision: the same data (the hash labels are not numbers, so not compared)."""
    return go_json(a.get("data")) == go_json(b.get("data"))


def next_number(revisions: list[JsonDict]) -> int:
    return int(revisions[-1].get("revision") or 0) + 1 if revisions else 1
