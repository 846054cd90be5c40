"""`python -m kubetrain.kinds.manifests --write|--check MANIFESTS`: per-kind RBAC and webhooks.

These are the per-kind parts of the manifests tree outside `crds/` (which `kubetrain.kinds.crds`
writes): each registered kind is granted to the operator in its ClusterRole and single-namespace Role
(`kubetrain.kinds.rbac`) and, with `webhook=True`, gets its entry in the validating webhook
configuration and the single-namespace overlay's patch of it (`kubetrain.kinds.webhooks`). Only
those parts of the files are generated; the rest stays hand-written. `--check` is the drift test
`scripts/test` runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kubetrain.api.crds import drift as stale
from kubetrain.kinds import rbac, webhooks
from kubetrain.kinds.generated import command

COMMAND = "python -m kubetrain.kinds.manifests"


def generate(manifests: Path) -> dict[str, str]:
    """Path (relative to `manifests`) -> its text with the registry's kinds."""
    return {**rbac.generate(manifests), **webhooks.generate(manifests)}


def drift(manifests: Path) -> list[str]:
    """The paths whose committed per-kind parts are not the registry's."""
    return stale(manifests, generate(manifests))


def main(argv: list[str] | None = None) -> int:
    return command(COMMAND, __doc__.splitlines()[0], "the per-kind parts", generate, argv)


if __name__ == "__main__":
    sys.exit(main())
