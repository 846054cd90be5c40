"""The `--write DIR | --check DIR` command every generator of committed files shares.

`kubetrain.kinds.crds` and `kubetrain.kinds.manifests` each compute, for a directory, the text its
files must have; writing them and reporting the stale ones (CI's drift test) is the same for both.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from kubetrain.api.crds import drift

Files = Callable[[Path], dict[str, str]]
"""A directory -> path (relative to it) -> the text that file must have."""


def command(prog: str, description: str, what: str, files: Files, argv: list[str] | None = None) -> int:
    """Run `prog --write DIR` (write `files(DIR)`) or `prog --check DIR` (exit 1 if any is stale)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR", type=Path, help=f"write {what} into DIR")
    mode.add_argument("--check", metavar="DIR", type=Path, help=f"exit 1 if {what} in DIR are stale")
    args = parser.parse_args(argv)
    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(files(args.write).items()):
            (args.write / name).write_text(text, encoding="utf-8")
            print(f"wrote {args.write / name}")
        return 0
    stale = drift(args.check, files(args.check))
    for name in stale:
        print(f"stale: {args.check / name} (run: {prog} --write {args.check})")
    return 1 if stale else 0
