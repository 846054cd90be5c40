"""The dashboard against a real local plane: its live streams follow a job from creation to its
deletion, its logs and loss curve grow as the replicas print, and nothing secret reaches a page.

The plane runs in this process (as under `kubetrain up`), on a data directory of the test's own,
with the history recorder on; the dashboard is the one `up` starts (`start_for_plane`), read over
HTTP as the browser reads it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubetrain.cli.dashboard import start_for_plane, stop_for_plane
from kubetrain.cli.datadir import STATE_FILE
from kubetrain.cli.plane import LocalPlane
from kubetrain.dashboard.server import Dashboard
from kubetrain.history.store import HISTORY_FILE, HistoryStore
from tests.sse import events

SECRET_VALUE = "do-not-show-me-7f3a"
LITERAL_ENV = "literal-env-value-91c2"

TRAIN = (
    "import os, time\n"
    "for epoch in range(1, 7):\n"
    "    print(f'epoch={epoch} loss={1.0 / epoch:.4f} rank={os.environ[\"RANK\"]}', flush=True)\n"
    "    time.sleep(0.4)\n"
    "x = bytearray(32 * 1024 * 1024)\n"
    "time.sleep(2.5)\n"
    "print('done', flush=True)\n"
)


def job(name: str) -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "image": "python:3.11",
        "command": ["python", "-u", "-c", TRAIN],
        "env": [
            {"name": "LITERAL", "value": LITERAL_ENV},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
        ],
    }
    spec = {"restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "pytorchReplicaSpecs": {"Master": {"replicas": 1, **spec}, "Worker": {"replicas": 1, **spec}}
        },
    }


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[tuple[LocalPlane, Dashboard]]:
    data = tmp_path / "data"
    local = LocalPlane(
        working_dir=tmp_path, state_file=data / STATE_FILE, history=HistoryStore(data / HISTORY_FILE)
    )
    await local.start()
    dashboard = None
    try:
        dashboard = await start_for_plane(local, data / HISTORY_FILE, 0)
        yield local, dashboard
    finally:
        await stop_for_plane(dashboard)
        await local.stop()


class Reader:
    """Everything one stream said, kept while the test goes on."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url
        self.seen: list[tuple[str, Any]] = []
        self.raw: list[str] = []
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async with self.session.get(self.url) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/event-stream")
            async for name, data in events(response):
                self.seen.append((name, data))
                self.raw.append(json.dumps(data))

    async def until(self, check: Any, what: str, timeout: float = 90.0) -> Any:
        for _ in range(int(timeout * 10)):
            if self.task.done():
                self.task.result()
            found = check(self.seen)
            if found:
                return found
            await asyncio.sleep(0.1)
        raise AssertionError(f"{self.url}: no {what} after {timeout:g}s; saw {[n for n, _ in self.seen]}")

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def last(seen: list[tuple[str, Any]], event: str) -> Any:
    return next((data for name, data in reversed(seen) if name == event), None)


def every(seen: list[tuple[str, Any]], event: str) -> list[Any]:
    return [data for name, data in seen if name == event]


async def test_a_job_from_creation_to_deletion(plane: tuple[LocalPlane, Dashboard]) -> None:
    local, dashboard = plane
    client = local.client()
    await client.kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default"},
            "data": {"token": base64.b64encode(SECRET_VALUE.encode()).decode()},
        }
    )
    url = dashboard.url.rstrip("/")
    async with aiohttp.ClientSession() as session:
        jobs = Reader(session, f"{url}/api/jobs/stream")
        await jobs.until(lambda seen: last(seen, "snapshot") is not None, "snapshot")
        assert last(jobs.seen, "snapshot")["jobs"] == []

        await client.create(job("live"))
        page = Reader(session, f"{url}/api/jobs/default/PyTorchJob/live/stream")

        def states(seen: list[tuple[str, Any]]) -> list[str]:
            return [
                j["state"] for batch in every(seen, "jobs") for j in batch["upsert"] if j["name"] == "live"
            ]

        await jobs.until(lambda seen: "Running" in states(seen), "Running on the jobs stream")

        def pods_placed(seen: list[tuple[str, Any]]) -> Any:
            pods = last(seen, "pods") or []
            return len(pods) == 2 and all(p["node"] and p["address"] for p in pods) and pods

        pods = await page.until(pods_placed, "both pods with a node and an address")
        assert {p["replica"] for p in pods} == {"master-0", "worker-0"}

        def chunk_is(chunks: list[dict[str, Any]], replica: str) -> list[str]:
            return [line for c in chunks if c["replica"] == replica for line in c["lines"]]

        def streamed(seen: list[tuple[str, Any]]) -> bool:
            lines = [line for chunks in every(seen, "logs") for line in chunk_is(chunks, "master-0")]
            return "epoch=1 loss=1.0000 rank=0" in lines

        await page.until(streamed, "master-0's first line")
        job_now = last(page.seen, "job")
        assert job_now["state"] == "Running"  # the log streamed while the job ran

        def used(seen: list[tuple[str, Any]]) -> bool:
            return any(u.get("memory", 0) > 0 for sample in every(seen, "usage") for u in sample.values())

        await page.until(used, "a CPU and memory sample of a running pod")

        def loss_points(seen: list[tuple[str, Any]]) -> list[float]:
            points = [
                p
                for chunks in every(seen, "series")
                for s in chunks
                if s["name"] == "loss" and s["replica"] == "worker-0"
                for p in s["points"]
            ]
            return [value for _, _, value in sorted(points)]

        values = await page.until(
            lambda seen: len(loss_points(seen)) == 6 and loss_points(seen), "6 loss points"
        )
        assert values[-1] < values[0] and values == sorted(values, reverse=True)

        await jobs.until(lambda seen: "Succeeded" in states(seen), "Succeeded on the jobs stream")
        assert states(jobs.seen).index("Running") < states(jobs.seen).index("Succeeded")
        await page.until(lambda seen: (last(seen, "job") or {}).get("state") == "Succeeded", "Succeeded")
        conditions = [(c["type"], c["status"]) for c in last(page.seen, "job")["conditions"]]
        assert ("Running", "True") in conditions and ("Succeeded", "True") in conditions  # the whole timeline

        async with session.get(f"{url}/api/jobs/default/PyTorchJob/live") as response:
            detail = await response.json()
        assert {p["replica"]: p["containers"][-1]["exitCode"] for p in detail["pods"]} == {
            "master-0": 0,
            "worker-0": 0,
        }
        assert any(e["reason"] == "SuccessfulCreatePod" for e in detail["events"])

        await client.delete("pytorchjob", "live")
        await client.wait_deleted("pytorchjob", "live", 60)
        gone = await page.until(lambda seen: last(seen, "gone"), "gone")
        assert gone["history"] == job_now["uid"]
        await jobs.until(
            lambda seen: any("default/PyTorchJob/live" in b["remove"] for b in every(seen, "jobs")), "removal"
        )

        async with session.get(f"{url}/api/history/{gone['history']}") as response:
            record = await response.json()
        recorded = [line for log in record["logs"] if log["replica"] == "master-0" for line in log["lines"]]
        assert "epoch=6 loss=0.1667 rank=0" in recorded and record["job"]["deleted"]

        # Nothing the page was sent holds the API's token, a Secret's value or the spec's env.
        bodies = [*jobs.raw, *page.raw, json.dumps(detail), json.dumps(record)]
        for path in ("/", "/api/info", "/api/jobs", "/api/history", "/static/app.js", "/api/v1/secrets"):
            async with session.get(url + path) as response:
                bodies.append(await response.text())
        await jobs.close()
        await page.close()
    await client.close()
    for body in bodies:
        for secret in (
            local.token,
            SECRET_VALUE,
            base64.b64encode(SECRET_VALUE.encode()).decode(),
            LITERAL_ENV,
        ):
            assert secret not in body
