"""The durable restart count behind backoffLimit (a kubetrain fix of kubeflow/trainer#2045, #2342).

Upstream bounds restarts by summing the container `restartCount` of Running pods. That misses
every restart done by recreating the pod (ExitCode, evictions, OnFailure pods that reached
phase Failed): a recreated pod starts again at restartCount 0, so such jobs restart forever.

We keep what recreation erases in the job's status, under a key upstream clients ignore:

    status:
      kubetrain:
        restarts: 3               # restarts folded in from pods the operator deleted to restart
        restartingPods: [<uid>]   # pods deleted for a restart whose deletion is not yet observed

When the operator deletes a pod to restart it, `restarts` grows by one (the recreation) plus the
in-place restarts that pod had accumulated, and the pod's uid is remembered until the pod is gone
so a lagging cache cannot count it twice (its live restartCount is not summed meanwhile either).
The total a job has consumed is `restarts` plus the live restartCount of its other pods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubetrain.api.types import JobStatus, KubetrainStatus
from kubetrain.controller.names import JsonDict, meta
from kubetrain.controller.pods import restart_count


@dataclass
class RestartLedger:
    restarts: int = 0
    restarting_pods: list[str] = field(default_factory=list)
    _restarting: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    """`restarting_pods` as a set: every pod of a plan is looked up, and a job whose 10,000 pods
    all restart would otherwise scan a 10,000-long list per pod."""

    def __post_init__(self) -> None:
        self._restarting = set(self.restarting_pods)

    @classmethod
    def read(cls, status: JobStatus) -> RestartLedger:
        stored = status.kubetrain
        if stored is None:
            return cls()
        return cls(restarts=stored.restarts or 0, restarting_pods=list(stored.restarting_pods or ()))

    def write(self, status: JobStatus) -> None:
        """Store the ledger in `status` (the key disappears while there is nothing to remember)."""
        stored = status.kubetrain or KubetrainStatus()
        stored = dataclasses.replace(
            stored, restarts=self.restarts or None, restarting_pods=list(self.restarting_pods) or None
        )
        empty = stored.restarts is None and stored.restarting_pods is None and not stored.extra
        status.kubetrain = None if empty else stored

    def is_restarting(self, pod: JsonDict) -> bool:
        return bool(self._restarting) and meta(pod).get("uid") in self._restarting

    def record_restart(self, pod: JsonDict) -> None:
        uid = meta(pod).get("uid")
        if isinstance(uid, str) and uid in self._restarting:
            return
        self.restarts += 1 + restart_count(pod)
        if isinstance(uid, str) and uid:
            self.restarting_pods.append(uid)
            self._restarting.add(uid)

    def live_restarts(self, pods: Iterable[JsonDict]) -> int:
        """In-place restarts of the pods not already folded into `restarts`."""
        return sum(restart_count(pod) for pod in pods if not self.is_restarting(pod))

    def forget_gone(self, pods: Iterable[JsonDict]) -> None:
        """Drop the uids of pods that no longer exist (their deletion landed)."""
        if not self.restarting_pods:
            return
        present = {meta(pod).get("uid") for pod in pods}
        self.restarting_pods = [uid for uid in self.restarting_pods if uid in present]
        self._restarting = set(self.restarting_pods)
