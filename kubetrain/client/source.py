"""Turn what a user hands to `create` (a dict, a path, YAML text, a parsed job) into raw job dicts.

Reading and parsing happen before anything talks to a server, so a typo in a file is reported
as such (`InvalidInput`, exit code 2) and never as an API error.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubetrain.api.jobs import job_to_dict, load_documents
from kubetrain.api.types import TrainingJob
from kubetrain.api.validation import validate_raw_with_warnings
from kubetrain.client.errors import InvalidInput, ValidationError
from kubetrain.kinds.registry import (
    REPLICA_SPEC_KINDS,
    has_offline_rules,
    is_companion,
    offline_problems,
    offline_verdict,
    unknown_kind_errors,
)
from kubetrain.kube.annotations import WORKDIR as WORKDIR_ANNOTATION

JsonDict = dict[str, Any]
JobSource = JsonDict | TrainingJob | str | os.PathLike[str]
STDIN = "-"
"""The file name that means standard input, as for kubectl's `-f -`."""


@dataclass(frozen=True)
class LoadedJob:
    """One raw job document, where it came from, and the admission warnings it raised."""

    raw: JsonDict
    source: str
    warnings: tuple[str, ...] = ()
    companions: tuple[JsonDict, ...] = ()
    """Objects of kinds no controller runs that the file holds besides the job (a TrainJob's
    runtime): `kubetrain run` applies them first (`load_run`)."""

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.raw.get("metadata") or {}).get("name", ""))


JOB_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def job_files(values: list[str]) -> list[str]:
    """`-f` values as kubectl reads them: a file, `-` (stdin), or a directory's YAML/JSON files
    (sorted, not recursive); a directory without any is an error naming it."""
    files: list[str] = []
    for value in values:
        path = Path(value)
        if value != STDIN and path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in JOB_FILE_SUFFIXES)
            if not found:
                raise InvalidInput(f"{path}: the directory holds no .yaml, .yml or .json file")
            files += [str(p) for p in found]
        else:
            files.append(value)
    return files


def _looks_like_yaml(text: str) -> bool:
    return "\n" in text or text.lstrip().startswith(("{", "apiVersion", "kind"))


def read_documents(source: JobSource) -> tuple[list[Any], str]:
    """The parsed documents and a label for messages (the file name, or `<yaml>`/`<dict>`)."""
    if isinstance(source, TrainingJob):
        return [job_to_dict(source)], "<job>"
    if isinstance(source, dict):
        return [source], "<dict>"
    if isinstance(source, str) and _looks_like_yaml(source):
        text, label = source, "<yaml>"
    elif source == STDIN:
        text, label = sys.stdin.read(), "<stdin>"
    else:
        path = Path(source)
        if path.is_dir():
            hint = f"; did you mean {path / 'job.yaml'}?" if (path / "job.yaml").is_file() else ""
            raise InvalidInput(f"{path}: is a directory (give the path of a job YAML/JSON file{hint})")
        if not path.is_file():
            raise InvalidInput(f"{path}: no such file (give the path of a job YAML/JSON file)")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{path}: cannot read the file: {exc}") from None
        label = str(path)
    try:
        docs = load_documents(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{label}: not valid YAML: {_yaml_problem(exc)}") from None
    if not docs:
        raise InvalidInput(f"{label}: the file holds no document (expected a job such as a PyTorchJob)")
    return docs, label


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(problem)


def load_jobs(source: JobSource) -> list[LoadedJob]:
    """Every job of the source, each validated like the upstream webhook would.

    Raises `ValidationError` with the field errors of the first invalid document; all documents
    are checked before any is returned so that nothing is submitted from a half-valid file.
    """
    docs, label = read_documents(source)
    directory = _directory_of(source)
    out: list[LoadedJob] = []
    for index, doc in enumerate(docs):
        where = label if len(docs) == 1 else f"{label} (document {index + 1})"
        if directory is not None and isinstance(doc, dict):
            stamp_workdir(doc, directory)
        if has_offline_rules(doc):
            out.append(_load_extra(doc, where))
            continue
        verdict = offline_verdict(doc)
        if verdict is not None:
            kind = str(doc.get("kind", ""))
            if verdict.errors:
                raise ValidationError(verdict.errors, kind, _name_of(doc), where)
            if verdict.message:
                raise InvalidInput(f'{where}: {kind} "{_name_of(doc)}" is invalid: {verdict.message}')
            out.append(LoadedJob(doc, where, verdict.warnings))
            continue
        unknown = unknown_kind_errors(doc)
        if unknown:
            raise ValidationError(unknown, "", _name_of(doc), where)
        _, info, result = validate_raw_with_warnings(doc, kinds=REPLICA_SPEC_KINDS)
        if result.errors:
            raise ValidationError(result.errors, info.kind if info else "", _name_of(doc), where)
        out.append(LoadedJob(doc, where, tuple(result.warnings)))
    return out


def _directory_of(source: JobSource) -> str | None:
    """The directory of a job file; None for YAML text, dicts, parsed jobs and stdin."""
    if isinstance(source, (dict, TrainingJob)) or source == STDIN:
        return None
    if isinstance(source, str) and _looks_like_yaml(source):
        return None
    return str(Path(source).resolve().parent)


def stamp_workdir(job: JsonDict, directory: str) -> None:
    """Name `directory` as the job's working directory, on the job and every pod template, unless
    the job (or that template) already names one."""
    meta = job.setdefault("metadata", {})
    annotations = meta.setdefault("annotations", {}) if isinstance(meta, dict) else {}
    if not isinstance(annotations, dict):
        return
    directory = str(annotations.setdefault(WORKDIR_ANNOTATION, directory))
    for template in pod_templates(job.get("spec")):
        tmeta = template.setdefault("metadata", {})
        if isinstance(tmeta, dict) and isinstance(tmeta.setdefault("annotations", {}), dict):
            tmeta["annotations"].setdefault(WORKDIR_ANNOTATION, directory)


def pod_templates(node: Any) -> list[JsonDict]:
    """Every pod template under a job's spec, whatever the kind nests them in (replica specs,
    MPIJob v2's launcher and worker, ChainerJob's worker sets): each `template` with containers."""
    found: list[JsonDict] = []
    if isinstance(node, dict):
        template = node.get("template")
        spec = template.get("spec") if isinstance(template, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
            found.append(template)  # type: ignore[arg-type]
        for key, value in node.items():
            if key != "template":
                found += pod_templates(value)
    elif isinstance(node, list):
        for item in node:
            found += pod_templates(item)
    return found


def _load_extra(doc: JsonDict, where: str) -> LoadedJob:
    """A kind without a webhook upstream: the rules its controller applies."""
    problems = offline_problems(doc)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise InvalidInput(f'{where}: {doc.get("kind")}.kubeflow.org "{_name_of(doc)}" is invalid:\n{lines}')
    return LoadedJob(doc, where)


def _name_of(doc: Any) -> str:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def load_run(source: JobSource) -> LoadedJob:
    """The single job of a source with the objects it reads that the source holds too (a
    TrainJob with its runtime), as `kubetrain run` takes them: the job, `companions` the rest."""
    loaded = load_jobs(source)
    jobs = [job for job in loaded if not is_companion(job.raw)]
    if len(jobs) != 1:
        label = loaded[0].source.split(" (")[0]
        raise InvalidInput(f"{label}: holds {len(jobs)} jobs; give one job per file")
    companions = tuple(job.raw for job in loaded if is_companion(job.raw))
    warnings = tuple(w for job in loaded for w in job.warnings)
    return LoadedJob(jobs[0].raw, jobs[0].source, warnings, companions)


def load_one(source: JobSource) -> LoadedJob:
    """The single job of a source; a file with several jobs is refused with a clear message."""
    jobs = load_jobs(source)
    if len(jobs) != 1:
        raise InvalidInput(f"{jobs[0].source.split(' (')[0]}: holds {len(jobs)} jobs; give one job per file")
    return jobs[0]
