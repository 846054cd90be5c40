"""Parse a replica-spec training job from its raw dict (YAML/JSON) and write it back unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import yaml

from kubetrain.api.codec import decode, encode
from kubetrain.api.fielderrors import ErrorList, invalid, not_supported, required
from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import Envelope, JobStatus, TrainingJob

E = TypeVar("E", bound=Envelope)


def parse_job(
    raw: Any, kinds: Mapping[str, KindInfo]
) -> tuple[TrainingJob | None, KindInfo | None, ErrorList]:
    """Decode a raw job of one of `kinds` (kind name -> its description); never raises on bad input.

    Returns the job (None when the input is not an object), its kind (None when not one of
    `kinds`) and the structural field errors (wrong types, unknown kind, bad apiVersion).
    """
    errors = ErrorList()
    if not isinstance(raw, dict):
        errors.append(invalid("<root>", type(raw).__name__, "a job must be a YAML/JSON object"))
        return None, None, errors
    kind_name = raw.get("kind")
    info = kinds.get(kind_name) if isinstance(kind_name, str) else None
    if info is None:
        if kind_name is None:
            errors.append(required("kind", f"must be one of {', '.join(kinds)}"))
        else:
            errors.append(not_supported("kind", kind_name, list(kinds)))
        return None, None, errors
    api_version = raw.get("apiVersion")
    if api_version != info.api_version:
        errors.append(not_supported("apiVersion", api_version, [info.api_version]))
    return decode_job(raw, TrainingJob, info.spec_type, JobStatus, errors), info, errors


def decode_job(
    raw: dict[str, Any], envelope_cls: type[E], spec_type: type, status_type: type, errors: ErrorList
) -> E:
    """Decode a job object into `envelope_cls` (whose `spec` and `status` are `spec_type` and
    `status_type`), its field errors appended to `errors`; a metadata that is no object reads as {}."""
    envelope = {k: v for k, v in raw.items() if k not in ("spec", "status")}
    job, env_errors = decode(envelope_cls, envelope)
    errors.extend(env_errors)
    assert job is not None  # envelope is a dict
    if not isinstance(raw.get("metadata", {}), dict):
        job.metadata = {}
    # Every envelope has `spec` and `status`, typed by its kind.
    if raw.get("spec") is not None:
        spec, spec_errors = decode(spec_type, raw["spec"], "spec")
        setattr(job, "spec", spec)  # noqa: B010
        errors.extend(spec_errors)
    if raw.get("status") is not None:
        status, status_errors = decode(status_type, raw["status"], "status")
        setattr(job, "status", status)  # noqa: B010
        errors.extend(status_errors)
    return job


def job_to_dict(job: TrainingJob) -> dict[str, Any]:
    """The wire form of a job; `parse_job(job_to_dict(j))` gives back an equal job."""
    return encode(job)


def load_documents(text: str) -> list[Any]:
    """All YAML documents of a file (JSON is YAML), skipping empty ones; raises yaml.YAMLError."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
