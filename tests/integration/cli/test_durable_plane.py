"""`kubetrain up` keeps its state: killed by SIGKILL (or stopped) and started again, it has every job.

A real `kubetrain up` subprocess on a data directory of the test's own runs a job to Succeeded and
two long ones (restartPolicy Never and OnFailure), then is SIGKILLed. The next `kubetrain up` on the
same directory comes back with the jobs (same uids), their status and events and their pods;
resourceVersions continue above the old ones and a watch from an old one is 410 Expired; the
killed plane's node sandbox is gone; the Never pod is Failed (its container ContainerStatusUnknown,
exit code 137) and so is its job, the OnFailure pod runs again with restartCount 1. A clean stop
and start restarts it once more, `--reset` starts empty, and a second `kubetrain up` on a
directory in use is refused naming the pid that holds it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from kubetrain.cli.datadir import STATE_FILE
from kubetrain.embedded.apiserver.persistence import Journal
from kubetrain.history.store import HISTORY_FILE
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.polling import wait_for

REPO = Path(__file__).resolve().parents[3]
JsonDict = dict[str, Any]
MARKER_ENV = "KUBETRAIN_TEST_MARKER"
LONG = "import os, time; print('up', flush=True); time.sleep(600)"


def tfjob(name: str, script: str, restart_policy: str, marker: str) -> JsonDict:
    container = {
        "name": "tensorflow",
        "image": "python:3.11",
        "command": ["python", "-u", "-c", script],
        "env": [{"name": MARKER_ENV, "value": marker}],
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "restartPolicy": restart_policy,
                    "template": {"spec": {"containers": [container]}},
                }
            }
        },
    }


def _environ(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read().split(b"\0")
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw if b"=" in item)
    return {k: v for k, _, v in pairs}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pod_processes(marker: str) -> dict[int, dict[str, str]]:
    """pid -> environment of the live processes carrying the test's marker."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            env = _environ(int(entry))
            if env.get(MARKER_ENV) == marker and _alive(int(entry)):
                found[int(entry)] = env
    return found


PLANE_TIMEOUT = 90.0
"""How long a restarted plane may take to come back and account for its pods."""


class Up:
    """`kubetrain up --data-dir DIR` as a user starts it."""

    def __init__(self, tmp: Path, data_dir: Path, marker: str) -> None:
        self.tmp, self.data_dir, self.marker = tmp, data_dir, marker
        self.kubeconfig = tmp / "kubeconfig.yaml"
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def argv(self, kubeconfig: Path, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "kubetrain.cli.main",
            "up",
            "--data-dir",
            str(self.data_dir),
            "--kubeconfig",
            str(kubeconfig),
            "--workdir",
            str(self.tmp),
            *extra,
        ]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(REPO)}

    async def start(self, *extra: str) -> KubeClient:
        self.runs += 1
        self.log = self.tmp / f"up-{self.runs}.log"
        before = self.kubeconfig.read_text() if self.kubeconfig.exists() else ""
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                self.argv(self.kubeconfig, *extra),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=self.env,
            )

        async def serving() -> KubeClient | None:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"kubetrain up exited with {self.proc.returncode}:\n{self.output()}")
            if not self.kubeconfig.exists() or self.kubeconfig.read_text() in ("", before):
                return None
            kube = await KubeClient.from_kubeconfig(str(self.kubeconfig))
            try:
                await kube.request("GET", "/apis/kubeflow.org/v1")
            except ApiError:
                await kube.close()
                return None
            return kube

        result: KubeClient = await wait_for(
            serving, PLANE_TIMEOUT, "kubetrain up serving the kubeflow.org API"
        )
        return result

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def interrupt(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(60)


async def _job(kube: KubeClient, name: str) -> JsonDict:
    return await kube.get("kubeflow.org/v1", "TFJob", "default", name)


def _condition(job: JsonDict, kind: str) -> bool:
    return any(
        c["type"] == kind and c["status"] == "True" for c in (job.get("status") or {}).get("conditions") or ()
    )


async def _pod(kube: KubeClient, job: str) -> JsonDict:
    return await kube.get("v1", "Pod", "default", f"{job}-worker-0")


def _main(pod: JsonDict) -> JsonDict:
    statuses: list[JsonDict] = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return statuses[0]


async def _events_of(kube: KubeClient, name: str) -> list[tuple[str, str]]:
    items, _ = await kube.list("v1", "Event", "default")
    return sorted((e["reason"], e["metadata"]["uid"]) for e in items if e["involvedObject"]["name"] == name)


async def _restarted(kube: KubeClient, count: int) -> JsonDict | None:
    pod = await _pod(kube, "onfailure")
    main = _main(pod)
    return pod if main.get("restartCount") == count and "running" in (main.get("state") or {}) else None


async def test_a_sigkilled_plane_comes_back_with_its_jobs_and_accounts_for_its_pods(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    up = Up(tmp_path, tmp_path / "data", marker)
    kube = await up.start()
    try:
        for name, script, policy in (
            ("done", "print('trained', flush=True)", "Never"),
            ("never", LONG, "Never"),
            ("onfailure", LONG, "OnFailure"),
        ):
            await kube.create(tfjob(name, script, policy, marker))

        async def succeeded() -> bool:
            return _condition(await _job(kube, "done"), "Succeeded")

        await wait_for(succeeded, PLANE_TIMEOUT, "job done Succeeded")
        running = await wait_for(
            lambda: _two(marker), PLANE_TIMEOUT, "the never and onfailure pods' processes"
        )
        sandboxes = {Path(env["KUBETRAIN_SANDBOX"]) for env in running.values()}
        node_roots = {s.parent.parent for s in sandboxes}
        before = {n: await _job(kube, n) for n in ("done", "never", "onfailure")}
        done_pod = await _pod(kube, "done")
        done_events = await _events_of(kube, "done")
        assert done_events, "the operator recorded no event for job done"
        _, old_rv = await kube.list("v1", "Pod", "default")

        second = subprocess.run(
            up.argv(tmp_path / "second.yaml"),
            capture_output=True,
            text=True,
            cwd=REPO,
            env=up.env,
            timeout=60,
        )
        assert second.returncode != 0
        assert f"pid {up.proc.pid}" in second.stderr and str(up.data_dir) in second.stderr  # type: ignore[union-attr]
    finally:
        await kube.close()

    up.kill()
    assert await wait_for(lambda: _none_alive(running), PLANE_TIMEOUT, "the killed plane's pods to die")
    assert all(root.is_dir() for root in node_roots)  # a SIGKILLed plane cannot clean up

    kube = await up.start()
    try:
        assert not any(root.exists() for root in node_roots), "the stale sandbox was not removed"
        for name, old in before.items():
            job = await _job(kube, name)
            assert job["metadata"]["uid"] == old["metadata"]["uid"]
        done = await _job(kube, "done")
        assert done["status"] == before["done"]["status"]
        pod = await _pod(kube, "done")
        assert pod["metadata"]["uid"] == done_pod["metadata"]["uid"]
        assert pod["status"]["phase"] == "Succeeded"
        assert set(done_events) <= set(await _events_of(kube, "done"))

        _, new_rv = await kube.list("v1", "Pod", "default")
        assert int(new_rv) > int(old_rv)
        events = kube.watch("v1", "Pod", "default", resource_version=old_rv, timeout_seconds=5)
        first = await anext(events)
        await events.aclose()
        assert first["type"] == "ERROR" and (first["object"]["code"], first["object"]["reason"]) == (
            410,
            "Expired",
        )

        async def never_failed() -> JsonDict | None:
            pod = await _pod(kube, "never")
            return pod if pod["status"].get("phase") == "Failed" else None

        failed = await wait_for(never_failed, PLANE_TIMEOUT, "the Never pod Failed")
        term = _main(failed)["state"]["terminated"]
        assert (term["reason"], term["exitCode"]) == ("ContainerStatusUnknown", 137)

        async def never_job_failed() -> bool:
            return _condition(await _job(kube, "never"), "Failed")

        await wait_for(never_job_failed, PLANE_TIMEOUT, "job never Failed by its restart policy")

        restarted = await wait_for(lambda: _restarted(kube, 1), PLANE_TIMEOUT, "the OnFailure pod restarted")
        assert _main(restarted)["lastState"]["terminated"]["reason"] == "ContainerStatusUnknown"
        await wait_for(lambda: _count(marker, 1), PLANE_TIMEOUT, "the OnFailure pod's new process")
    finally:
        await kube.close()

    assert up.interrupt() == 0, up.output()
    assert pod_processes(marker) == {}
    kube = await up.start()
    try:
        await wait_for(
            lambda: _restarted(kube, 2), PLANE_TIMEOUT, "the OnFailure pod restarted after a clean stop"
        )
    finally:
        await kube.close()
        assert up.interrupt() == 0, up.output()
        for pid in pod_processes(marker):
            os.kill(pid, signal.SIGKILL)

    kube = await up.start("--reset")
    try:
        jobs, _ = await kube.list("kubeflow.org/v1", "TFJob")
        assert jobs == []
    finally:
        await kube.close()
        assert up.interrupt() == 0, up.output()


async def _two(marker: str) -> dict[int, dict[str, str]] | None:
    found = pod_processes(marker)
    return found if len(found) == 2 else None


async def _count(marker: str, n: int) -> bool:
    return len(pod_processes(marker)) == n


async def _none_alive(pids: dict[int, Any]) -> bool:
    return not any(_alive(pid) for pid in pids)


def test_kubetrain_run_stays_in_memory_unless_given_a_data_dir(tmp_path: Path) -> None:
    job = tfjob("once", "print('trained', flush=True)", "Never", uuid.uuid4().hex)
    path = tmp_path / "once.yaml"
    path.write_text(yaml.safe_dump(job))
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp_path / "xdg")}

    def run(*extra: str) -> None:
        argv = [sys.executable, "-m", "kubetrain.cli.main", "run", "--no-status", *extra, str(path)]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
        assert done.returncode == 0, done.stderr

    run()
    default_dir = tmp_path / "xdg" / "kubetrain"
    assert not (default_dir / STATE_FILE).exists(), "kubetrain run wrote state without --data-dir"
    assert (default_dir / HISTORY_FILE).is_file(), "the job history outlives run, in the default data dir"

    run("--data-dir", str(tmp_path / "kept"))
    journal = Journal(tmp_path / "kept" / STATE_FILE)
    snapshot = journal.load()
    journal.close()
    kept = [obj for key, obj in snapshot.objects if key == "tfjobs.kubeflow.org"]
    assert [j["metadata"]["name"] for j in kept] == ["once"]
    assert _condition(kept[0], "Succeeded")
