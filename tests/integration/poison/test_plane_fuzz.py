"""Fuzz through the operator: poisoned jobs of every kind never wedge the local plane (issue #17).

The whole local plane in-process (`LocalPlane`: API server with the kubeflow webhooks, operator,
binder, Job controller, node). Poisoned jobs of every kind (tests/poison_jobs.py, on runnable
copies of the local examples) are created through the operator's own client; every answer must be
below 500, and every job the server accepted must be looked at by the operator (a status or an
event on it): a kind whose controller is blind or stuck leaves its jobs untouched. Their pods
name a scheduler nobody serves, so no poisoned command ever runs. Afterwards a valid job of every
kind still runs to Succeeded on the node.

Cases per kind: ``KUBETRAIN_PLANE_FUZZ_CASES`` (default 20, 50 under ``CI=true``: the 2,000 per kind
run against the server itself, tests/integration/apiserver/test_fuzz.py). The counts are printed.
"""

from __future__ import annotations

import asyncio
import copy
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from kubetrain.cli.plane import LocalPlane
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator.harness import wait_for
from tests.poison_jobs import ALL_KINDS, EXAMPLES, KindVersion, Recipe, by_kind, example_jobs, recipes

CASES_PER_KIND = int(
    os.environ.get("KUBETRAIN_PLANE_FUZZ_CASES", "50" if os.environ.get("CI") == "true" else "20")
)
FUZZ_NS = "fuzz"
AFTER_NS = "after"
UNSERVED_SCHEDULER = "kubetrain-fuzz-unscheduled"
JsonDict = dict[str, Any]
FINISHED = {"Succeeded", "Complete"}
"""The condition of a job that ran to success (ChainerJob's status is a batch Job's)."""


def _pod_specs(doc: Any) -> list[JsonDict]:
    """Every pod spec of a job (a dict with `containers`), found without recursion."""
    found: list[JsonDict] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("containers"), list):
                found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def runnable(doc: JsonDict, name: str, namespace: str, scheduler: str | None = None) -> JsonDict:
    """A copy of a local example whose every container exits 0 at once."""
    out = copy.deepcopy(doc)
    out["metadata"] = {"name": name, "namespace": namespace}
    for spec in _pod_specs(out):
        for container in spec["containers"]:
            container["command"] = ["python", "-c", "pass"]
            container.pop("args", None)
        if scheduler:
            spec["schedulerName"] = scheduler
    if out["kind"] == "MPIJob":  # the launcher decides; its workers wait for it, as sshd would
        worker = out["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
        for container in worker["containers"]:
            container["command"] = ["python", "-c", "import time; time.sleep(600)"]
    return out


LOCAL = {key: docs[0] for key, docs in by_kind(example_jobs(EXAMPLES / "local")).items()}
BASES = [runnable(LOCAL[key], "base", FUZZ_NS, UNSERVED_SCHEDULER) for key in ALL_KINDS if key in LOCAL]


class PlaneFuzzer:
    def __init__(self, client: KubeClient, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.loop = loop
        self.codes: dict[KindVersion, Counter[int]] = {k: Counter() for k in ALL_KINDS}
        self.accepted: list[tuple[KindVersion, str]] = []
        self.serial = 0

    def case(self, key: KindVersion, recipe: Recipe) -> None:
        """Called by hypothesis in a worker thread; the create runs on the plane's loop."""
        self.serial += 1
        name = f"fz{self.serial}"
        bases = [{**b, "metadata": {**b["metadata"], "name": name}} for b in BASES]
        doc = recipe.apply(bases)
        asyncio.run_coroutine_threadsafe(self.create(key, name, doc), self.loop).result()

    async def create(self, key: KindVersion, name: str, doc: JsonDict) -> None:
        kind, api_version = key
        path = self.client.resource(api_version, kind).path(FUZZ_NS)
        try:
            created = await self.client.request("POST", path, body=doc)
        except ApiError as err:
            self.codes[key][err.status] += 1
            assert 400 <= err.status < 500, err
            return
        self.codes[key][201] += 1
        assert created["apiVersion"] == api_version
        self.accepted.append((key, name))

    async def untouched(self) -> list[tuple[KindVersion, str]]:
        """Accepted jobs with neither a status nor an event: not (yet) reconciled."""
        events, _ = await self.client.list("v1", "Event", FUZZ_NS)
        noticed = {(e.get("involvedObject") or {}).get("name") for e in events}
        left = []
        for (kind, api_version), name in self.accepted:
            if name in noticed:
                continue
            job = await self.client.get(api_version, kind, FUZZ_NS, name)
            if not job.get("status"):
                left.append(((kind, api_version), name))
        return left

    def report(self, seconds: float) -> str:
        lines = [f"plane fuzz: {self.serial} cases in {seconds:.0f} s, {len(self.accepted)} jobs accepted"]
        for key in ALL_KINDS:
            codes = ", ".join(f"{code}: {n}" for code, n in sorted(self.codes[key].items()))
            lines.append(f"  {key[0]} {key[1]}: {sum(self.codes[key].values())} cases; answers {codes}")
        return "\n".join(lines)


def _fuzz_kind(fuzzer: PlaneFuzzer, key: KindVersion) -> None:
    group = {key: [i for i, d in enumerate(BASES) if (d["kind"], d["apiVersion"]) == key]}

    @settings(
        max_examples=CASES_PER_KIND, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(recipes(BASES, group))
    def one(recipe: Recipe) -> None:
        fuzzer.case(key, recipe)

    one()


def _fuzz(fuzzer: PlaneFuzzer) -> None:
    for key in ALL_KINDS:
        _fuzz_kind(fuzzer, key)


async def _succeeded(client: KubeClient, key: KindVersion, name: str) -> bool:
    job = await client.get(key[1], key[0], AFTER_NS, name)
    conditions = (job.get("status") or {}).get("conditions") or ()
    done = {c.get("type") for c in conditions if c.get("status") == "True"}
    assert "Failed" not in done, (key, job.get("status"))
    return bool(done & FINISHED)


async def test_poisoned_jobs_never_wedge_the_operator_and_every_kind_still_succeeds(tmp_path: Path) -> None:
    assert set(LOCAL) >= set(ALL_KINDS), sorted(LOCAL)
    plane = LocalPlane(working_dir=tmp_path)
    await plane.start()
    client = KubeClient.for_url(plane.url, plane.server.token, plane.server.ca_file, qps=0)
    try:
        for ns in (FUZZ_NS, AFTER_NS):
            await plane.ensure_namespace(ns)
        fuzzer = PlaneFuzzer(client, asyncio.get_running_loop())
        started = time.monotonic()
        await asyncio.to_thread(_fuzz, fuzzer)
        left: list[tuple[KindVersion, str]] = []

        async def none_left() -> bool:
            left[:] = await fuzzer.untouched()
            return not left

        await wait_for(none_left, timeout=120, message=lambda: f"jobs the operator never touched: {left}")
        for key in ALL_KINDS:
            await client.request(
                "POST",
                client.resource(key[1], key[0]).path(AFTER_NS),
                body=runnable(LOCAL[key], f"ok-{key[0].lower()}-{key[1].rsplit('/', 1)[1]}", AFTER_NS),
            )
        for key in ALL_KINDS:
            name = f"ok-{key[0].lower()}-{key[1].rsplit('/', 1)[1]}"
            await wait_for(
                lambda k=key, n=name: _succeeded(client, k, n), timeout=180, message=f"{name} Succeeded"
            )
        print(fuzzer.report(time.monotonic() - started))
    finally:
        await client.close()
        await plane.stop()
