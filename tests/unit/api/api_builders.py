"""Small builders for raw job dicts, so test tables read like the YAML a user writes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kubetrain.api.jobs import load_documents
from kubetrain.api.kinds import KindInfo
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
EXAMPLE_DIRS = ("tensorflow", "pytorch", "xgboost", "paddle", "jax", "mxnet")
INVALID_DIR = EXAMPLES / "invalid"
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"


def container(name: str, image: str | None = IMAGE, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, **extra}
    if image is not None:
        out["image"] = image
    return out


def replica(
    info: KindInfo,
    replicas: int | None = 1,
    *,
    containers: list[Any] | None = None,
    restart: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if replicas is not None:
        out["replicas"] = replicas
    if restart is not None:
        out["restartPolicy"] = restart
    out["template"] = {
        "spec": {"containers": containers if containers is not None else [container(info.default_container)]}
    }
    return out


def job(kind: str, specs: dict[str, Any] | None, name: str = "test", **spec: Any) -> dict[str, Any]:
    """A raw job of `kind`; `specs` None leaves the replica-spec map out."""
    info = KINDS[kind]
    body = dict(spec)
    if specs is not None:
        body[info.replica_specs_field] = specs
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name}, "spec": body}


def valid_job(kind: str, name: str = "test") -> dict[str, Any]:
    """The smallest job of `kind` that the webhook accepts."""
    info = KINDS[kind]
    if kind in ("PyTorchJob", "XGBoostJob"):
        return job(kind, {"Master": replica(info), "Worker": replica(info, 2)}, name)
    return job(kind, {"Worker": replica(info, 2)}, name)


def example_files() -> list[Path]:
    return sorted(p for d in EXAMPLE_DIRS for p in (EXAMPLES / d).glob("*.yaml"))


def example_documents() -> list[tuple[str, Any]]:
    out = []
    for path in example_files():
        for doc in load_documents(path.read_text(encoding="utf-8")):
            out.append((path.relative_to(EXAMPLES).as_posix(), doc))
    return out


def invalid_examples() -> list[tuple[str, str, Any]]:
    """(file, expected message, document) for every `examples/invalid/*.yaml`."""
    out = []
    for path in sorted(INVALID_DIR.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        first = text.splitlines()[0]
        assert first.startswith("# expect: "), f"{path.name}: first line must be '# expect: <message>'"
        (doc,) = load_documents(text)
        out.append((path.name, first.removeprefix("# expect: "), doc))
    return out


def deep(value: Any) -> Any:
    return copy.deepcopy(value)
