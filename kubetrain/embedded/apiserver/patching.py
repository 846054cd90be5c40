"""The four patch formats kube-apiserver accepts, applied to plain dicts.

* JSON merge patch (RFC 7386).
* JSON patch (RFC 6902), including ``test``.
* Strategic merge patch for built-in kinds: lists merged by the merge keys Go struct tags declare
  (containers/env/volumes by name, ports by containerPort, volumeMounts by mountPath,
  ownerReferences by uid, conditions by type), ``$patch: delete|replace``, ``$retainKeys``,
  ``$deleteFromPrimitiveList``; ``$setElementOrder`` is accepted and ignored.
* Server-side apply, simplified: the applied configuration is merged into the live object with
  the same list semantics (keyed lists for built-ins, atomic lists for custom resources); fields
  a manager stops applying are not removed and conflicts are never reported. managedFields
  records one ``Apply`` entry per manager with the field set it applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .decoding import type_name
from .jsonutil import Step, clone, dumps, equal, iterate


class PatchError(ValueError):
    """A patch that cannot be applied to the object (422 for JSON patch, 400 otherwise)."""


# --- RFC 7386 -------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    return iterate(_merge_patch(target, patch))


def _merge_patch(target: Any, patch: Any) -> Step:
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = yield _merge_patch(result.get(key), value)
    return result


# --- RFC 6902 -------------------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise PatchError(f"json: cannot unmarshal {type_name(path)} into Go value of type string")
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f'JSON pointer must be empty or start with a "/": {path!r}')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str, op: str) -> Any:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return cur


def _get(doc: Any, path: str, op: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent = _parent(doc, parts, path, op)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')


def _remove(doc: Any, path: str, op: str) -> Any:
    parts = _pointer(path)
    parent = _parent(doc, parts, path, op)
    last = parts[-1] if parts else ""
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')


def _add(doc: Any, path: str, value: Any, op: str, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _parent(doc, parts, path, op)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"replace operation does not apply: doc is missing key: {path}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    else:
        raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise TypeError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = clone(target)
    for raw in ops:
        if not isinstance(raw, dict) or "op" not in raw:
            raise TypeError('Unexpected kind: operation without "op"')
        op, path = raw["op"], raw.get("path", "")
        if op == "add":
            doc = _add(doc, path, clone(raw.get("value")), op)
        elif op == "remove":
            _remove(doc, path, op)
        elif op == "replace":
            doc = _add(doc, path, clone(raw.get("value")), op, replace=True)
        elif op == "move":
            value = _remove(doc, raw.get("from", ""), op)
            doc = _add(doc, path, value, op)
        elif op == "copy":
            doc = _add(doc, path, clone(_get(doc, raw.get("from", ""), op)), op)
        elif op == "test":
            if not equal(_get(doc, path, op), raw.get("value")):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise TypeError(f"Unexpected kind: {op}")
    return doc


# --- strategic merge ------------------------------------------------------------------------

_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "podIPs": "ip",
    "hostIPs": "ip",
    "conditions": "type",
    "resourceClaims": "name",
    "ports": "containerPort",
}
_PRIMITIVE_MERGE = {"finalizers"}


def merge_key(kind: str, path: tuple[str, ...]) -> str | None:
    """The patchMergeKey of the list at ``path`` in a built-in ``kind``, or None if atomic."""
    name = path[-1]
    if name == "ports" and kind == "Service" and path == ("spec", "ports"):
        return "port"
    if name == "addresses" and kind == "Node":
        return "type"
    return _MERGE_KEYS.get(name)


def strategic_merge(original: Any, patch: Any, kind: str, keyed_lists: bool = True) -> Any:
    """Apply a strategic merge patch; ``keyed_lists=False`` treats every list as atomic."""
    return iterate(_strategic_merge(original, patch, kind, keyed_lists, ()))


def _strategic_merge(original: Any, patch: Any, kind: str, keyed_lists: bool, path: tuple[str, ...]) -> Step:
    if not isinstance(patch, dict):
        return clone(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            fld = key.split("/", 1)[1]
            if isinstance(result.get(fld), list) and isinstance(value, list):
                result[fld] = [x for x in result[fld] if not _member(x, value)]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = yield _strategic_merge(result.get(key), value, kind, keyed_lists, (*path, key))
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = yield _merge_list(result.get(key), value, kind, keyed_lists, (*path, key))
        else:
            result[key] = value
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain or k in patch}
    return result


def _member(value: Any, items: list[Any]) -> bool:
    """``value in items`` at any depth."""
    return any(equal(value, item) for item in items)


def _index(items: list[Any], value: Any) -> int:
    """``items.index(value)`` at any depth; ``len(items)`` when absent."""
    return next((i for i, item in enumerate(items) if equal(value, item)), len(items))


def _merge_list(original: Any, patch: list[Any], kind: str, keyed: bool, path: tuple[str, ...]) -> Step:
    if not keyed:
        return [clone(v) for v in patch]
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [clone(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    orig = list(original) if isinstance(original, list) else []
    if path[-1] in _PRIMITIVE_MERGE:
        merged = orig + [v for v in patch if not _member(v, orig)]
        return _element_order(merged, patch, orig, lambda v: v)
    mkey = merge_key(kind, path)
    if mkey is None:
        return [clone(v) for v in patch]
    result = list(orig)
    for item in patch:
        if not isinstance(item, dict) or mkey not in item:
            result.append(clone(item))
            continue
        idx = next(
            (i for i, o in enumerate(result) if isinstance(o, dict) and equal(o.get(mkey), item[mkey])),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                result = result[:idx] + result[idx + 1 :]
            continue
        if idx is None:
            result.append((yield _strategic_merge({}, item, kind, keyed, path)))
        else:
            result = list(result)
            result[idx] = yield _strategic_merge(result[idx], item, kind, keyed, path)
    key = mkey

    def ident(v: Any) -> Any:
        return v.get(key) if isinstance(v, dict) else v

    return _element_order(result, patch, orig, ident)


def _element_order(
    merged: list[Any], patch: list[Any], server: list[Any], ident: Callable[[Any], Any]
) -> list[Any]:
    """``normalizeElementOrder``: patch items in patch order, server-only items in server order,
    interleaved where the server order ranks both (otherwise the patch item comes first)."""
    patch_ids = [ident(v) for v in patch]
    server_ids = [ident(v) for v in server]
    in_patch = [v for v in merged if _member(ident(v), patch_ids)]
    in_patch.sort(key=lambda v: _index(patch_ids, ident(v)))
    server_only = [v for v in merged if not _member(ident(v), patch_ids)]
    server_only.sort(key=lambda v: _index(server_ids, ident(v)))
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(in_patch):
        if j >= len(in_patch):
            out.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            out.append(in_patch[j])
            j += 1
        else:
            li, ri = _index(server_ids, ident(server_only[i])), _index(server_ids, ident(in_patch[j]))
            if li < len(server_ids) and ri < len(server_ids) and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(in_patch[j])
                j += 1
    return out


# --- server-side apply ----------------------------------------------------------------------


def field_set(config: Any, kind: str, keyed: bool) -> dict[str, Any]:
    """The FieldsV1 set a configuration owns: ``f:`` for fields, ``k:`` for keyed list items."""
    result: dict[str, Any] = iterate(_field_set(config, kind, keyed, ()))
    return result


def _field_set(config: Any, kind: str, keyed: bool, path: tuple[str, ...]) -> Step:
    out: dict[str, Any] = {}
    if not isinstance(config, dict):
        return out
    for key, value in config.items():
        if not path and key in ("apiVersion", "kind"):
            continue
        if path == () and key == "metadata" and isinstance(value, dict):
            sub = {
                k: v
                for k, v in value.items()
                if k in ("labels", "annotations", "finalizers", "ownerReferences")
            }
            if sub:
                out["f:metadata"] = yield _field_set(sub, kind, keyed, ("metadata",))
            continue
        if isinstance(value, dict):
            out[f"f:{key}"] = yield _field_set(value, kind, keyed, (*path, key))
        elif isinstance(value, list) and keyed and merge_key(kind, (*path, key)):
            mkey = merge_key(kind, (*path, key))
            items: dict[str, Any] = {}
            for item in value:
                if isinstance(item, dict) and mkey in item:
                    ident = dumps({mkey: item[mkey]}).decode()
                    entry = yield _field_set(item, kind, keyed, (*path, key))
                    entry["."] = {}
                    items[f"k:{ident}"] = entry
            out[f"f:{key}"] = items
        else:
            out[f"f:{key}"] = {}
    return out
