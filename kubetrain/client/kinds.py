"""Kind-name resolution: what users type (`tfjob`, `TFJobs`, `pytorchjobs.kubeflow.org`) -> KindInfo.

kubectl accepts the kind, the plural, the singular and short names in any case, optionally
qualified by the group; users expect the same of us, so we accept exactly those forms.

Every kind the operator serves is known (`kubetrain.kinds.registry`), each as the version it is
listed in: for a kind served in several versions from one CRD (MPIJob: v1 and v2beta1), the
storage version, which kubectl prefers too; a job is listed and read the same way whichever
version it was written in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubetrain.api.kinds import LABEL_JOB_NAME, KindInfo
from kubetrain.client.errors import UnknownKind
from kubetrain.kinds.registry import REGISTERED_KINDS, SERVED_KINDS, registration_for

ALL_KINDS: Mapping[str, KindInfo] = SERVED_KINDS
"""The job kinds: what `kubetrain get` with no kind lists."""

KNOWN_KINDS: Mapping[str, KindInfo] = REGISTERED_KINDS
"""Every kind kubetrain serves, jobs and what jobs read (Trainer runtimes): what a name resolves
to, so `create/apply/delete -f` of a file holding a TrainJob and its runtime, and `kubetrain get
clustertrainingruntimes`, work."""


def _names(info: KindInfo) -> Iterable[str]:
    yield info.kind
    yield info.plural
    yield info.singular
    yield from info.short_names


def resolve_kind(name: str, kinds: Mapping[str, KindInfo] | None = None) -> KindInfo:
    """The KindInfo for a user-typed kind name; raises `UnknownKind` listing the valid names."""
    registry = KNOWN_KINDS if kinds is None else kinds
    text = name.strip().lower()
    for info in registry.values():
        qualified = f".{info.group}"
        candidate = text[: -len(qualified)] if text.endswith(qualified) else text
        if candidate in {n.lower() for n in _names(info)}:
            return info
    raise UnknownKind(name, [info.singular for info in registry.values()])


def pod_selector(kind: str | None, name: str) -> str:
    """The label selector of a job's pods (`training.kubeflow.org/job-name=<name>` unless its
    registration names another label)."""
    reg = registration_for(kind)
    return f"{reg.pod_job_label if reg is not None else LABEL_JOB_NAME}={name}"


def all_kinds(kinds: Mapping[str, KindInfo] | None = None) -> list[KindInfo]:
    """Every job kind, in registry order (what `list(kind=None)` and `kubetrain get` cover)."""
    return list((ALL_KINDS if kinds is None else kinds).values())
