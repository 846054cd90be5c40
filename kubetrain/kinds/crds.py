"""`python -m kubetrain.kinds.crds --write|--check DIR`: the CRD files of every registered kind.

The files are generated from the registrations (`kubetrain.api.crds` renders one kind's CRD), so
a new kind's CRD appears by registering the kind; `--check` is the drift test CI runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kubetrain.api.crds import drift, generate
from kubetrain.kinds.registry import all_versions

COMMAND = "python -m kubetrain.kinds.crds"


def generate_all() -> dict[str, str]:
    """File name -> YAML text of every registered kind's CRD: what `manifests/crds` holds."""
    return generate(all_versions())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR", type=Path, help="write the CRD files into DIR")
    mode.add_argument("--check", metavar="DIR", type=Path, help="exit 1 if the files in DIR are stale")
    args = parser.parse_args(argv)
    files = generate_all()
    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(files.items()):
            (args.write / name).write_text(text, encoding="utf-8")
            print(f"wrote {args.write / name}")
        return 0
    stale = drift(args.check, files)
    for name in stale:
        print(f"stale: {args.check / name} (run: {COMMAND} --write {args.check})")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
