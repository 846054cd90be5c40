"""`kubetrain validate FILE...` and `kubetrain crds`: offline checks and manifests, no server needed.

The six generic kinds are checked with the upstream webhook's rules. MPIJob (v1 and v2beta1),
ChainerJob and Caffe2Job have no webhook upstream, so they are checked with the rules their
controllers apply (their registrations' `problems`, `kubetrain/kinds/<kind>/validation.py`): what
would make the operator refuse the job (a Warning `ValidationError` event, or a v1 MPIJob failed
with `MPIJobFailedValidation`) is reported here before the job is ever applied.
"""

from __future__ import annotations

import argparse
from typing import Any

from kubetrain.api.validation import validate_raw_with_warnings
from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, err, out
from kubetrain.cli.output import format_table
from kubetrain.client.errors import EXIT_INVALID, KubetrainError, ValidationError
from kubetrain.client.source import load_jobs, read_documents
from kubetrain.kinds.crds import generate_all
from kubetrain.kinds.registry import (
    REGISTRY,
    REPLICA_SPEC_KINDS,
    has_offline_rules,
    offline_problems,
    unknown_kind_errors,
)


def register(sub: SubParsers) -> None:
    validate = sub.add_parser(
        "validate",
        help=HELP["validate"],
        description="Check each job in FILE (YAML/JSON, several documents allowed) as the upstream "
        "webhook and controllers would, without a cluster: exit 0 when every job is valid, 2 with "
        "the field errors (field path, what is wrong, the allowed values) otherwise.",
    )
    validate.add_argument("files", metavar="FILE", nargs="+", help="job files (YAML or JSON)")
    validate.set_defaults(handler=_validate)

    crds = sub.add_parser(
        "crds",
        help=HELP["crds"],
        description="List the CustomResourceDefinitions of the kinds kubetrain serves (group, "
        "versions, scope); --print writes them as YAML, the same as manifests/crds, for kubectl apply.",
    )
    crds.add_argument(
        "--print",
        dest="print_yaml",
        action="store_true",
        help="print every CRD manifest (`kubetrain crds --print | kubectl apply -f -`)",
    )
    crds.set_defaults(handler=_crds)


def _validate(args: argparse.Namespace) -> int:
    code = 0
    for path in args.files:
        try:
            docs, label = read_documents(path)
            if any(has_offline_rules(d) for d in docs):
                code = max(code, _validate_documents(docs, label))
                continue
            jobs = load_jobs(path)
        except KubetrainError as exc:
            err.print(str(exc), style="red", markup=False)
            code = max(code, exc.exit_code)
            continue
        for job in jobs:
            for warning in job.warnings:
                err.print(f"{job.source}: Warning: {warning}", style="yellow", markup=False)
            out.print(f'{job.source}: {job.kind} "{job.name}" is valid', markup=False)
    return EXIT_INVALID if code else 0


def _validate_documents(docs: list[Any], label: str) -> int:
    """A file holding at least one kind without a webhook: every document checked on its own."""
    code = 0
    for index, doc in enumerate(docs):
        where = label if len(docs) == 1 else f"{label} (document {index + 1})"
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        name = str((meta if isinstance(meta, dict) else {}).get("name", ""))
        kind = str(doc.get("kind", "")) if isinstance(doc, dict) else ""
        if has_offline_rules(doc):
            problems = offline_problems(doc)
            if problems:
                lines = "\n".join(f"  - {p}" for p in problems)
                message = f'{where}: {kind}.kubeflow.org "{name}" is invalid:\n{lines}'
                err.print(message, style="red", markup=False)
                code = EXIT_INVALID
                continue
        else:
            _, info, result = validate_raw_with_warnings(doc, kinds=REPLICA_SPEC_KINDS)
            unknown = unknown_kind_errors(doc)
            if unknown:
                result.errors = unknown
            if result.errors:
                error = ValidationError(result.errors, info.kind if info else "", name, where)
                err.print(str(error), style="red", markup=False)
                code = EXIT_INVALID
                continue
            for warning in result.warnings:
                err.print(f"{where}: Warning: {warning}", style="yellow", markup=False)
        out.print(f'{where}: {kind} "{name}" is valid', markup=False)
    return code


def _crds(args: argparse.Namespace) -> int:
    if args.print_yaml:
        out.print("".join(text for _, text in sorted(generate_all().items())).rstrip("\n"), markup=False)
        return 0
    rows = []
    for crd in (reg.crd() for reg in REGISTRY):
        spec = crd["spec"]
        versions = ",".join(v["name"] for v in spec["versions"])
        rows.append([crd["metadata"]["name"], spec["names"]["kind"], versions])
    out.print(format_table(["NAME", "KIND", "VERSIONS"], rows), markup=False)
    return 0
