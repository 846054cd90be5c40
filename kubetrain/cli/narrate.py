"""`kubetrain run` says why: what keeps a job's pods from running, each restart, and quiet hangs.

It watches the job's pods and prints each new finding of `client.diagnosis` once, on stderr, as
it happens (the node's and the scheduler's own messages). A finding no retry can help (a request
larger than the whole node, a start error that repeats) sets `fatal`, and `kubetrain run` stops
the job instead of waiting for ever. When neither the logs nor the job moved for `quiet_after`
seconds, it says which replicas run and why the others do not: what a stuck rendezvous looks like.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubetrain.client.diagnosis import Finding, is_running, pod_findings, waiting_for
from kubetrain.client.errors import KubetrainError
from kubetrain.client.jobstate import replica_label

if TYPE_CHECKING:
    from kubetrain.client.aio import AsyncClient

JsonDict = dict[str, Any]
Say = Callable[[str, bool], None]
"""`say(line, alarming)`: print one line for the user (red when alarming)."""
QUIET_AFTER = 60.0
NODES_TTL = 5.0


class PodNarrator:
    def __init__(
        self,
        client: AsyncClient,
        job_name: str,
        say: Say,
        quiet_after: float = QUIET_AFTER,
        job_pods: int | None = None,
        kind: str | None = None,
    ) -> None:
        self.client = client
        self.kind = kind
        self.job_pods = job_pods
        """How many pods the job will have (its replicas): a gang asking more never fills."""
        self.job_name = job_name
        self.say = say
        self.quiet_after = quiet_after
        self.fatal = asyncio.Event()
        self.fatal_message = ""
        self.pods: dict[str, JsonDict] = {}
        """The job's pods now, by uid."""
        self.seen: dict[str, str] = {}
        """Every pod of the job seen so far, deleted ones too: uid -> name."""
        self._said: set[tuple[str, ...]] = set()
        self._nodes: list[JsonDict] = []
        self._nodes_read = -NODES_TTL
        self._last_activity = time.monotonic()
        self._quiet_reported = False

    def activity(self) -> None:
        """A log line or a status change: the job is not quiet."""
        self._last_activity = time.monotonic()
        self._quiet_reported = False

    async def run(self) -> None:
        """Watch the pods until cancelled (a finished job's pods stay, so it never ends itself)."""
        async for etype, pod in self.client.watch_pods(self.job_name, kind=self.kind):
            uid = str((pod.get("metadata") or {}).get("uid", ""))
            self.seen[uid] = str((pod.get("metadata") or {}).get("name", ""))
            if etype == "DELETED":
                self.pods.pop(uid, None)
                continue
            self.pods[uid] = pod
            nodes = await self._nodes_for(pod)
            for finding in pod_findings(pod, self.job_name, nodes, self.job_pods):
                self._tell(finding)

    async def watch_quiet(self) -> None:
        """Every few seconds: after `quiet_after` without output or progress, say so once."""
        if self.quiet_after <= 0:
            return
        while True:
            await asyncio.sleep(min(5.0, self.quiet_after / 2))
            quiet = time.monotonic() - self._last_activity
            if quiet >= self.quiet_after and not self._quiet_reported:
                self._quiet_reported = True
                self.say(self.quiet_report(quiet), False)

    def quiet_report(self, quiet: float) -> str:
        running, waiting = [], []
        for pod in sorted(self.pods.values(), key=lambda p: replica_label(p, self.job_name)):
            replica = replica_label(pod, self.job_name)
            if is_running(pod):
                running.append(replica)
            elif (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                waiting.append(f"{replica} ({waiting_for(pod)})")
        text = f"no output and no progress for {quiet:.0f}s: running: {', '.join(running) or 'none'}"
        if waiting:
            text += f"; not running: {', '.join(waiting)}"
        elif running:
            text += " (all started: a rendezvous waiting for a peer, or a quiet program)"
        return text

    def _tell(self, finding: Finding) -> None:
        """Say a finding the first time; a fatal one (maybe said before, when it was not yet
        known to repeat) also stops the run."""
        if finding.key not in self._said:
            self._said.add(finding.key)
            self.activity()  # news is progress: the quiet timer starts over
            self.say(finding.message, finding.fatal or finding.key[0] == "cannot-start")
        if finding.fatal and not self.fatal.is_set():
            self.fatal_message = finding.message
            self.fatal.set()

    async def _nodes_for(self, pod: JsonDict) -> list[JsonDict]:
        """The nodes, read only for an unschedulable pod (and at most every few seconds)."""
        conditions = (pod.get("status") or {}).get("conditions") or ()
        if not any(c.get("reason") == "Unschedulable" for c in conditions):
            return self._nodes
        if time.monotonic() - self._nodes_read >= NODES_TTL:
            self._nodes_read = time.monotonic()
            try:
                self._nodes = await self.client.nodes()
            except KubetrainError:  # no right to list nodes: "never fits" cannot be told
                self._nodes = []
        return self._nodes
