"""Job lifecycles for the reliability suite: what each job does, how the kubelet drives it, and
what must hold at the end (final conditions, pods, and how many times each pod was created).

A scenario's pod-creation budget is exact: every pod is created once, except the one a scenario
fails with a retryable exit code, which is deleted by the operator and legitimately created a
second time. Any other count is a duplicate (or a lost create).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from tests.builders import JobBuilder, pod_name
from tests.integration.operator.harness import (
    KIND_CASES,
    Cluster,
    PodAudit,
    conditions,
    default_job,
    drive_safely,
    is_finished,
    wait_for,
)

SCENARIOS = ("succeed", "restart", "fail", "clean-all")
LIFECYCLE_TIMEOUT = 40.0


@dataclass(frozen=True)
class Lifecycle:
    kind: str
    name: str
    scenario: str

    @property
    def victim(self) -> str:
        """The pod the restart and fail scenarios fail."""
        return pod_name(self.name, "Worker", 0)

    def builder(self) -> JobBuilder:
        policy = {"restart": "ExitCode", "fail": "Never"}.get(self.scenario)
        builder = default_job(self.kind, self.name, replicas=2, restart_policy=policy)
        if self.scenario == "clean-all":
            builder.clean_pod_policy("All")
        return builder

    def pods(self) -> set[str]:
        return {
            pod_name(self.name, rt, i)
            for rt in KIND_CASES[self.kind].replica_types
            for i in range(2 if rt == "Worker" else 1)
        }

    def creations(self) -> dict[str, int]:
        """How many times each pod must have been created, exactly."""
        return {p: 2 if self.scenario == "restart" and p == self.victim else 1 for p in self.pods()}

    async def drive(self, cluster: Cluster) -> None:
        """Play the kubelet through this lifecycle; on a timeout, say where the job stood."""
        try:
            await self._drive(cluster)
        except AssertionError as err:
            raise AssertionError(f"{self}: {err}\n{await self.describe(cluster)}") from None

    async def describe(self, cluster: Cluster) -> str:
        job = await cluster.get_job(self.kind, self.name)
        pods = {
            n: (
                p.get("status", {}).get("phase"),
                p["metadata"]["uid"][:8],
                bool(p["metadata"].get("deletionTimestamp")),
            )
            for n, p in sorted((await cluster.pods(self.name)).items())
        }
        events = await cluster.events(self.name)
        return f"  status: {(job or {}).get('status')}\n  pods: {pods}\n  events: {events}"

    async def _drive(self, cluster: Cluster) -> None:
        kubelet = cluster.kubelet
        await cluster.wait_children(self.name, self.pods(), timeout=LIFECYCLE_TIMEOUT)
        await asyncio.gather(*(drive_safely(kubelet.running(p)) for p in sorted(self.pods())))
        if self.scenario == "restart":
            old = await cluster.pod_uid(self.victim)
            await kubelet.failed(self.victim, exit_code=137)
            await cluster.wait_pod_replaced(self.victim, old, timeout=LIFECYCLE_TIMEOUT)
            await drive_safely(kubelet.running(self.victim))
        if self.scenario == "fail":
            await kubelet.failed(self.victim, exit_code=1)
        else:
            await asyncio.gather(*(drive_safely(kubelet.succeeded(p)) for p in sorted(self.pods())))
        await cluster.wait_job(self.kind, self.name, is_finished, timeout=LIFECYCLE_TIMEOUT)

    async def check(self, cluster: Cluster, audit: PodAudit) -> list[str]:
        """Everything wrong with this job's end state (empty when right)."""
        problems: list[str] = []
        job = await cluster.get_job(self.kind, self.name)
        if job is None:
            return [f"{self.name}: job lost"]
        conds = conditions(job)
        types = [c[0] for c in conds]
        if len(types) != len(set(types)):
            problems.append(f"{self.name}: repeated condition types {types}")
        if not conds or conds[0] != (
            "Created",
            "True",
            f"{self.kind}Created",
            f"{self.kind} {self.name} is created.",
        ):
            problems.append(f"{self.name}: first condition {conds[:1]}")
        last = conds[-1] if conds else None
        if self.scenario == "fail":
            if last is None or last[0:3] != ("Failed", "True", f"{self.kind}Failed"):
                problems.append(f"{self.name}: want Failed, got {conds}")
        else:
            want = ("Succeeded", "True", f"{self.kind}Succeeded", KIND_CASES[self.kind].succeeded(self.name))
            if last != want or ("Failed", "True") in [c[0:2] for c in conds]:
                problems.append(f"{self.name}: want {want}, got {conds}")
            statuses = (job.get("status") or {}).get("replicaStatuses") or {}
            if any(rs.get("active", 0) for rs in statuses.values()):
                problems.append(f"{self.name}: active replicas after success {statuses}")
        created = audit.of_job(self.name)
        if created != self.creations():
            problems.append(f"{self.name}: pod creations {created}, want {self.creations()}")
        live = await cluster.pod_names(self.name)
        want_live = set() if self.scenario == "clean-all" else self.pods()
        if live != want_live:
            problems.append(f"{self.name}: live pods {sorted(live)}, want {sorted(want_live)}")
        return problems


def lifecycles(
    count: int, rng: random.Random, prefix: str = "job", scenarios: tuple[str, ...] = SCENARIOS
) -> list[Lifecycle]:
    """`count` jobs over every kind and the given scenarios, in a seeded order."""
    kinds = sorted(KIND_CASES)
    out = [
        Lifecycle(
            kinds[i % len(kinds)], f"{prefix}-{i:02d}", scenarios[(i // len(kinds) + i) % len(scenarios)]
        )
        for i in range(count)
    ]
    rng.shuffle(out)
    return out


async def run_and_check(
    cluster: Cluster, jobs: list[Lifecycle], audit: PodAudit, settle: float = 0.5
) -> None:
    """Create every job, drive them all concurrently, let the operator settle, check each."""
    for lc in jobs:
        await cluster.create(lc.builder())
    await asyncio.gather(*(lc.drive(cluster) for lc in jobs))
    await settle_and_check(cluster, jobs, audit, settle)


async def settle_and_check(
    cluster: Cluster, jobs: list[Lifecycle], audit: PodAudit, settle: float = 0.5
) -> None:
    # Finished jobs still clean up (cleanPodPolicy); give the operator a moment, then demand quiet.
    async def clean() -> bool:
        for lc in jobs:
            if lc.scenario == "clean-all" and await cluster.pod_names(lc.name):
                return False
        return True

    await wait_for(clean, LIFECYCLE_TIMEOUT, message="cleanPodPolicy All left pods behind")
    await asyncio.sleep(settle)
    problems = [p for lc in jobs for p in await lc.check(cluster, audit)]
    assert problems == [], "\n".join(problems)
