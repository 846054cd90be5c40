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
    ours_absent: bool = False
    """Accepted only where kubetrain's view lacks the path (upstream leaves what kubetrain removes)."""
    values: tuple[object, object] | None = None
    """Accepted only for exactly these values (upstream's, kubetrain's)."""
    scenarios: tuple[str, ...] = ()
    """Accepted only in these scenarios (all when empty)."""
    upstream_events_at_least: int = 0
    """Accepted only when upstream recorded at least this many events for the job."""


CLEAN_POD_POLICY_ON_LIMIT = (
    "#clean-pod-policy-on-failure: cleanPodPolicy is honoured when a job fails by backoffLimit or deadline",
    (
        "kubeflow/trainer#3419; v1.9.2 pkg/controller.v1/common/job.go ReconcileJobs calls "
        "DeletePodsAndServices before it sets the Failed condition, so the policy's `IsFinished` "
        "check is false and every pod and Service goes, whatever cleanPodPolicy says"
    ),
)
SERVICE_CLEANUP = (
    "#service-cleanup: cleanPodPolicy All and suspend delete every owned service",
    (
        "no issue found; v1.9.2 pkg/controller.v1/common/job.go deletes each Service by the name of "
        "a pod it deletes: a pass whose cache does not yet hold the Failed condition (and no longer "
        "the deleted Service) recreates the Service in ReconcileServices, and the finished pass's "
        "CleanUpResources finds no pod of that name, so the Service stays until the job is deleted "
        "(timing: not every run)"
    ),
)
MPI_V1_EXIST_EVENTS = (
    "#mpijob-v1-reason: MPIJob v1 without the noisy `... is exist` events",
    (
        "no issue filed; v1.9.2 pkg/controller.v1/mpi/mpijob_controller.go getOrCreateServiceAccount, "
        "getOrCreateLauncherRole and getLauncherRoleBinding record a Normal event in every pass that "
        "finds the object (`ServiceAccount is exist`, ...)"
    ),
)

SPAM_FILTER_BURST = 25
"""client-go's EventSourceObjectSpamFilter burst (record.NewEventCorrelator defaults: 25 events per
source and involved object, then one every 5 minutes)."""

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
    Deliberate(
        paths=r"(Pod|Service)(\..*)?",
        difference=CLEAN_POD_POLICY_ON_LIMIT[0],
        upstream=CLEAN_POD_POLICY_ON_LIMIT[1],
        upstream_absent=True,
        scenarios=("backoff-limit-clean-none",),
    ),
    Deliberate(
        paths=r"Pod|Service",
        difference=CLEAN_POD_POLICY_ON_LIMIT[0],
        upstream=CLEAN_POD_POLICY_ON_LIMIT[1],
        values=({}, "<absent>"),
        scenarios=("backoff-limit-clean-none",),
    ),
    Deliberate(
        paths=r"job\.events\.Normal\.SuccessfulDelete(Pod|Service)\..*",
        difference=CLEAN_POD_POLICY_ON_LIMIT[0],
        upstream=CLEAN_POD_POLICY_ON_LIMIT[1],
        values=("pytorchjob-controller", "<absent>"),
        scenarios=("backoff-limit-clean-none",),
    ),
    Deliberate(
        paths=r"job\.events\.Warning\.PyTorchJobRestarting\..*",
        difference=CLEAN_POD_POLICY_ON_LIMIT[0],
        upstream=(
            f"{CLEAN_POD_POLICY_ON_LIMIT[1]}; the pods it deletes turn Failed as the kubelet stops "
            "them, and a pass whose cache does not yet hold the job's Failed condition counts them "
            "as failed OnFailure replicas and records both Restarting Warnings (timing: not every run)"
        ),
        values=("pytorchjob-controller", "<absent>"),
        scenarios=("backoff-limit-clean-none", "backoff-limit-clean-all"),
    ),
    Deliberate(
        paths=r"Service\..*",
        difference=SERVICE_CLEANUP[0],
        upstream=SERVICE_CLEANUP[1],
        ours_absent=True,
        scenarios=("backoff-limit-clean-all",),
    ),
    Deliberate(
        paths=r"Service",
        difference=SERVICE_CLEANUP[0],
        upstream=SERVICE_CLEANUP[1],
        values=("<absent>", {}),
        scenarios=("backoff-limit-clean-all",),
    ),
    Deliberate(
        paths=r"job\.events\.Normal\.(ServiceAccount|LauncherRole|RoleBinding) is exist\..*",
        difference=MPI_V1_EXIST_EVENTS[0],
        upstream=MPI_V1_EXIST_EVENTS[1],
        values=("mpijob-controller", "<absent>"),
        scenarios=("mpi-v1-allreduce",),
    ),
    Deliberate(
        paths=r"job\.events\..*",
        difference="#transitions-counted: events count transitions, not reconciles",
        upstream=(
            "no issue found; v1.9.2 records some events in every pass (ExitedWithCode for each ended "
            "container, MPIJob v1's three `... is exist`), which exhaust client-go's EventCorrelator "
            "spam filter for the job (a burst of 25 per object and source, then one per 5 minutes): "
            "its later events (`<Kind>Succeeded`, `Deleted pod: ...`) are logged but never reach the "
            "API server. Accepted only for an event upstream lacks once it recorded 25"
        ),
        upstream_absent=True,
        upstream_events_at_least=SPAM_FILTER_BURST,
    ),
    Deliberate(
        paths=r'job\.events\.Warning\.MPIJobFailed\.launcher pod created failed: pods "[^"]+" already exists',
        difference="#mpijob-v1-reason: MPIJob v1 creates its launcher once",
        upstream=(
            "no issue found; v1.9.2 pkg/controller.v1/mpi/mpijob_controller.go ReconcilePods creates "
            "the launcher whenever its cache lacks it (no expectations), so a pass on a stale cache "
            "creates it again and records the AlreadyExists error as a Warning (timing: not every run)"
        ),
        values=("mpijob-controller", "<absent>"),
        scenarios=("mpi-v1-allreduce",),
    ),
    Deliberate(
        paths=r"job\.events\.Warning\.PyTorchJobRestarting\..*",
        difference="#restarting-event: no Restarting Warning for a job a permanent ExitCode failure failed",
        upstream=(
            "kubeflow/trainer#2044 (fixed the job's state in v1.8, not the event): v1.9.2's status rule "
            "still records `<Kind> ... is restarting because N <type> replica(s) failed.` for the job "
            "its pod pass has just failed (setCondition then drops the Restarting condition)"
        ),
        values=("pytorchjob-controller", "<absent>"),
        scenarios=("exitcode-permanent-clean-running",),
    ),
)


def explained(
    path: str,
    upstream_value: object,
    ours: object,
    missing: object,
    scenario: str = "",
    upstream_events: int = 0,
) -> Deliberate | None:
    """The table's entry for a difference at `path` in `scenario` (whose upstream run recorded
    `upstream_events` events for the job), if one accepts it."""
    return next(
        (
            d
            for d in DELIBERATE
            if _accepts(d, path, upstream_value, ours, missing, scenario, upstream_events)
        ),
        None,
    )


def _accepts(
    entry: Deliberate,
    path: str,
    upstream_value: object,
    ours: object,
    missing: object,
    scenario: str,
    upstream_events: int,
) -> bool:
    if entry.scenarios and scenario not in entry.scenarios:
        return False
    if upstream_events < entry.upstream_events_at_least:
        return False
    if not re.fullmatch(entry.paths, path):
        return False
    if entry.upstream_absent and upstream_value != missing:
        return False
    if entry.ours_absent and ours != missing:
        return False
    return entry.values is None or entry.values == (upstream_value, ours)
