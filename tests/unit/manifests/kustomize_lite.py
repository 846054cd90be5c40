"""Just enough kustomize to render manifests/ in-process, and a schema check for what it renders.

The tree uses a small subset of kustomize: `resources` (files and directories), `components`
(a `kind: Component` directory with `resources` and `patches`, applied after the resources),
`namespace`, `labels` (metadata only), `images`, and `patches` by path (strategic merge,
`$patch: delete`).
This renderer implements exactly that subset, so the manifest tests need no binary; a separate
test compares its output with `kubectl kustomize` wherever kubectl exists (always in CI), which
keeps the two honest. A kustomization using anything else is refused loudly, never half-rendered.

`schema_errors` checks an object against the kubernetes_asyncio model of its kind: unknown fields,
wrong types and missing required fields, recursively (the models are generated from the
Kubernetes OpenAPI spec, so this is the API server's structural schema, offline).
"""

from __future__ import annotations

import copy
import inspect
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s

Obj = dict[str, Any]

SUPPORTED_KEYS = {"apiVersion", "kind", "resources", "components", "namespace", "labels", "images", "patches"}
COMPONENT_KEYS = {"apiVersion", "kind", "resources", "patches"}
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "PriorityClass",
}
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "webhooks": "name",
}
"""Strategic-merge list keys (patchMergeKey in the Kubernetes OpenAPI) for the lists we patch."""


class UnsupportedKustomization(ValueError):
    pass


def identity(obj: Obj) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))


def load_yaml(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def render(directory: Path) -> list[Obj]:
    """The objects `kustomize build directory` would print (order not significant)."""
    kfile = directory / "kustomization.yaml"
    if not kfile.is_file():
        raise UnsupportedKustomization(f"{directory} has no kustomization.yaml")
    (spec,) = load_yaml(kfile)
    unknown = set(spec) - SUPPORTED_KEYS
    if unknown:
        raise UnsupportedKustomization(f"{kfile}: unsupported fields {sorted(unknown)}")
    objects: list[Obj] = []
    if spec.get("kind") == "Component":
        raise UnsupportedKustomization(f"{kfile}: a Component is only rendered through `components`")
    for entry in spec.get("resources") or ():
        target = (directory / entry).resolve()
        objects.extend(render(target) if target.is_dir() else load_yaml(target))
    for entry in spec.get("components") or ():
        objects = apply_component((directory / entry).resolve(), objects)
    for patch in spec.get("patches") or ():
        if set(patch) != {"path"}:
            raise UnsupportedKustomization(f"{kfile}: only patches by path are supported")
        objects = apply_patch(objects, load_yaml(directory / patch["path"]))
    for group in spec.get("labels") or ():
        if group.get("includeSelectors") or group.get("includeTemplates"):
            raise UnsupportedKustomization(f"{kfile}: labels into selectors/templates are not supported")
        for obj in objects:
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(group["pairs"])
    for image in spec.get("images") or ():
        set_image(objects, image)
    if spec.get("namespace"):
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj.setdefault("metadata", {})["namespace"] = spec["namespace"]
    ids = [identity(o) for o in objects]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise UnsupportedKustomization(f"{directory}: duplicate objects {sorted(duplicates)}")
    return objects


def apply_component(directory: Path, objects: list[Obj]) -> list[Obj]:
    """A kustomize Component: its resources join the parent's objects, then its patches apply."""
    kfile = directory / "kustomization.yaml"
    (spec,) = load_yaml(kfile)
    if spec.get("kind") != "Component":
        raise UnsupportedKustomization(f"{kfile}: listed under components but is not a Component")
    unknown = set(spec) - COMPONENT_KEYS
    if unknown:
        raise UnsupportedKustomization(f"{kfile}: unsupported fields {sorted(unknown)}")
    out = list(objects)
    for entry in spec.get("resources") or ():
        target = (directory / entry).resolve()
        out.extend(render(target) if target.is_dir() else load_yaml(target))
    for patch in spec.get("patches") or ():
        if set(patch) != {"path"}:
            raise UnsupportedKustomization(f"{kfile}: only patches by path are supported")
        out = apply_patch(out, load_yaml(directory / patch["path"]))
    return out


def apply_patch(objects: list[Obj], patches: list[Obj]) -> list[Obj]:
    out = objects
    for patch in patches:
        key = (patch["apiVersion"], patch["kind"], patch["metadata"]["name"])
        matches = [o for o in out if (o["apiVersion"], o["kind"], o["metadata"]["name"]) == key]
        if len(matches) != 1:
            raise UnsupportedKustomization(f"patch target {key} matched {len(matches)} objects")
        if patch.get("$patch") == "delete":
            out = [o for o in out if o is not matches[0]]
        else:
            strategic_merge(matches[0], patch)
    return out


def strategic_merge(base: Obj, patch: Obj) -> None:
    for key, value in patch.items():
        if key == "$patch":
            continue
        current = base.get(key)
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(current, dict):
            strategic_merge(current, value)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(current, list):
            merge_key = MERGE_KEYS[key]
            for item in value:
                found = next((c for c in current if c.get(merge_key) == item.get(merge_key)), None)
                if found is None:
                    current.append(copy.deepcopy(item))
                else:
                    strategic_merge(found, item)
        else:
            base[key] = copy.deepcopy(value)


def set_image(objects: list[Obj], image: Obj) -> None:
    for obj in objects:
        pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in (pod.get("containers") or []) + (pod.get("initContainers") or []):
            name = image_name(container["image"])
            if name != image["name"]:
                continue
            new = image.get("newName", name)
            if "newTag" in image:
                new += f":{image['newTag']}"
            container["image"] = new


def image_name(ref: str) -> str:
    """`registry:5000/repo/name:tag@sha256:...` -> `registry:5000/repo/name`."""
    ref = ref.split("@", 1)[0]
    head, _, last = ref.rpartition("/")
    last = last.split(":", 1)[0]
    return f"{head}/{last}" if head else last


# -- schema ------------------------------------------------------------------------------------


def model_for(obj: Obj) -> type | None:
    version = obj.get("apiVersion", "").rpartition("/")[2]
    return getattr(k8s, f"{version.capitalize()}{obj.get('kind', '')}", None) if version else None


@cache
def required_fields(model: type) -> frozenset[str]:
    """Attributes whose setter refuses None (the OpenAPI `required` list of the model)."""
    out = set()
    for attr in model.openapi_types:  # type: ignore[attr-defined]
        prop = getattr(model, attr, None)
        setter = prop.fset if isinstance(prop, property) else None
        if setter is not None and "must not be `None`" in inspect.getsource(setter):
            out.add(model.attribute_map[attr])  # type: ignore[attr-defined]
    return frozenset(out)


def schema_errors(obj: Obj) -> list[str]:
    model = model_for(obj)
    if model is None:
        return [f"no schema known for {obj.get('apiVersion')}/{obj.get('kind')}"]
    errors: list[str] = []
    _check(obj, model.__name__, obj.get("kind", "?"), errors)
    return errors


def _check(value: Any, type_name: str, path: str, errors: list[str]) -> None:
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            _check(item, type_name[5:-1], f"{path}[{i}]", errors)
    elif type_name.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {type(value).__name__}")
            return
        inner = type_name[5:-1].split(", ", 1)[1]
        for key, item in value.items():
            _check(item, inner, f"{path}.{key}", errors)
    elif type_name in ("str", "datetime", "date"):
        if not isinstance(value, str):
            errors.append(f"{path}: expected a string, got {value!r}")
    elif type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"{path}: expected an integer, got {value!r}")
    elif type_name == "float":
        if not isinstance(value, int | float) or isinstance(value, bool):
            errors.append(f"{path}: expected a number, got {value!r}")
    elif type_name == "bool":
        if not isinstance(value, bool):
            errors.append(f"{path}: expected a boolean, got {value!r}")
    elif type_name == "object":
        return
    else:
        model = getattr(k8s, type_name)
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object ({type_name}), got {type(value).__name__}")
            return
        by_json = {j: a for a, j in model.attribute_map.items()}
        for key, item in value.items():
            if key not in by_json:
                errors.append(f"{path}: unknown field {key!r} for {type_name}")
            elif item is not None:
                _check(item, model.openapi_types[by_json[key]], f"{path}.{key}", errors)
        errors.extend(
            f"{path}: missing required field {f!r}" for f in sorted(required_fields(model) - set(value))
        )
