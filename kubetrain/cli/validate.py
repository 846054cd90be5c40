"""`kubetrain validate FILE...` and `kubetrain crds`: offline checks and manifests, no server needed."""

from __future__ import annotations

import argparse

from kubetrain.api.crds import generate
from kubetrain.cli.common import SubParsers, err, out
from kubetrain.cli.output import format_table
from kubetrain.cli.plane import crd_manifests
from kubetrain.client.errors import EXIT_INVALID, KubetrainError
from kubetrain.client.source import load_jobs


def register(sub: SubParsers) -> None:
    validate = sub.add_parser(
        "validate",
        help="check job files offline with the upstream webhook's rules (exit 0 valid, 2 invalid)")
    validate.add_argument("files", metavar="FILE", nargs="+")
    validate.set_defaults(handler=_validate)

    crds = sub.add_parser("crds", help="list the CRDs kubetrain serves; --print their YAML for kubectl apply")
    crds.add_argument("--print", dest="print_yaml", action="store_true",
                      help="print every CRD manifest (`kubetrain crds --print | kubectl apply -f -`)")
    crds.set_defaults(handler=_crds)


def _validate(args: argparse.Namespace) -> int:
    code = 0
    for path in args.files:
        try:
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


def _crds(args: argparse.Namespace) -> int:
    if args.print_yaml:
        out.print("".join(text for _, text in sorted(generate().items())).rstrip("\n"), markup=False)
        return 0
    rows = []
    for crd in crd_manifests():
        spec = crd["spec"]
        versions = ",".join(v["name"] for v in spec["versions"])
        rows.append([crd["metadata"]["name"], spec["names"]["kind"], versions])
    out.print(format_table(["NAME", "KIND", "VERSIONS"], rows), markup=False)
    return 0
