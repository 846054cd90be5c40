"""The one table of deliberate differences from upstream's training-operator v1.9.2 that the
differential tier accepts: each is an entry of docs/differences.md, fixing an upstream bug named
here. Anything else that differs fails the tier."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Deliberate:
    paths: str
    """A regular expression over `compare.view` paths that the difference may touch."""
    difference: str
    """Its entry in docs/differences.md (the anchor, then the entry's title)."""
    upstream: str
    """The upstream bug it fixes: its issue, or where in upstream's code it is when none is filed."""
    upstream_absent: bool = False
    """Accepted only where upstream's view lacks the path (kubetrain sets what upstream drops)."""
    values: tuple[object, object] | None = None
    """Accepted only for exactly these values (upstream's, kubetrain's)."""


DELIBERATE: tuple[Deliberate, ...] = (
    Deliberate(
        paths=r"job\.status\.replicaStatuses\.\w+\.selector",
        difference="#pytorch-selector: each PyTorchJob replica type keeps its selector when the job ends",
        upstream=(
            "no issue filed; v1.9.2 pkg/controller.v1/pytorch/pytorchjob_controller.go "
            "UpdateJobStatus: each pass starts every replica status anew and sets `selector` inside "
            "`for rtype := range replicas` (Go's random map order), then returns from the loop when "
            "the Master succeeds, so types after it in that order end without one"
        ),
        upstream_absent=True,
    ),
    Deliberate(
        paths=r"Secret\.[^.]+-ssh\.metadata\.labels\.training\.kubeflow\.org/operator-name",
        difference="#own-secrets: The operator caches only its own Secrets",
        upstream=(
            "no issue found; mpi-operator v0.8.0 watches every Secret of the cluster, so its SSH "
            "Secret needs no label; ours selects its Secret informer on this one"
        ),
        upstream_absent=True,
    ),
    Deliberate(
        paths=r"Job\.[^.]+-launcher\.spec\.podReplacementPolicy",
        difference="#launcher-replacement: the launcher Job replaces a failed pod once it has terminated",
        upstream="kubernetes/kubernetes#115844 (mpi-operator v0.8.0 leaves the default TerminatingOrFailed)",
        values=("TerminatingOrFailed", "Failed"),
    ),
)


def explained(path: str, upstream_value: object, ours: object, missing: object) -> Deliberate | None:
    """The table's entry for a difference at `path`, if one accepts it."""
    return next((d for d in DELIBERATE if _accepts(d, path, upstream_value, ours, missing)), None)


def _accepts(entry: Deliberate, path: str, upstream_value: object, ours: object, missing: object) -> bool:
    if not re.fullmatch(entry.paths, path):
        return False
    if entry.upstream_absent and upstream_value != missing:
        return False
    return entry.values is None or entry.values == (upstream_value, ours)
