"""The dashboard's commands as a user runs them: `kubetrain run --dashboard` prints its job's page
(and needs no display), `kubetrain dashboard --kubeconfig` serves any cluster until Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from kubetrain.cli.plane import LocalPlane

REPO = Path(__file__).resolve().parents[3]
URL_LINE = re.compile(r"dashboard: (http://127\.0\.0\.1:(\d+)/\S*)")


def env() -> dict[str, str]:
    headless = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return {**headless, "PYTHONPATH": str(REPO)}


def kubetrain(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kubetrain.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env(),
        **kwargs,
    )


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def poll(url: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return get(url)
        except urllib.error.HTTPError as err:
            if err.code != 404 or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def read_url(stream: Any) -> tuple[str, list[str]]:
    """Read lines until the dashboard's; returns its URL and the lines read."""
    lines = []
    for line in stream:
        lines.append(line)
        found = URL_LINE.search(line)
        if found:
            return found.group(1), lines
    raise AssertionError(f"no dashboard line in: {lines}")


def test_run_with_dashboard_prints_the_jobs_page_and_serves_it_while_the_job_runs(tmp_path: Path) -> None:
    script = (
        "import time\n"
        "for i in range(3):\n"
        "    print(f'step={i} loss={1 / (i + 1)}', flush=True)\n"
        "    time.sleep(1)\n"
    )
    container = {"name": "pytorch", "image": "python:3.11", "command": ["python", "-u", "-c", script]}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "watched"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container]}},
                }
            }
        },
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    run = kubetrain(
        "run",
        "--dashboard",
        "--dashboard-port",
        "0",
        "--no-status",
        "--data-dir",
        str(tmp_path / "data"),
        str(path),
    )
    try:
        assert run.stderr is not None
        url, _ = read_url(run.stderr)
        assert url.endswith("/jobs/default/PyTorchJob/watched")
        base = url.split("/jobs/")[0]
        detail = poll(f"{base}/api/jobs/default/PyTorchJob/watched")
        assert detail["job"]["name"] == "watched"
        out, rest = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, rest
    assert "master-0 | step=2 loss=0.3333333333333333" in out.splitlines()


async def test_dashboard_command_serves_the_cluster_of_a_kubeconfig_until_interrupted(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=tmp_path)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig.yaml")
        client = plane.client()
        job = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": "elsewhere"},
            "spec": {
                "tfReplicaSpecs": {
                    "Worker": {
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "tensorflow", "image": "x", "command": ["sleep", "60"]}
                                ]
                            }
                        },
                    }
                }
            },
        }
        await client.create(job)
        await client.close()
        dash = kubetrain(
            "dashboard",
            "--kubeconfig",
            str(kubeconfig),
            "--port",
            "0",
            "--no-history",
            stdin=subprocess.DEVNULL,
        )
        try:
            assert dash.stdout is not None
            url, _ = await asyncio.to_thread(read_url, dash.stdout)
            info = await asyncio.to_thread(get, url + "api/info")
            assert (info["live"], info["history"]) == (True, False)
            listed = await asyncio.to_thread(get, url + "api/jobs")
            assert [(j["kind"], j["name"]) for j in listed["jobs"]] == [("TFJob", "elsewhere")]
            dash.send_signal(signal.SIGINT)
            _, errors = await asyncio.to_thread(dash.communicate, timeout=30)
        finally:
            if dash.poll() is None:
                dash.kill()
                dash.wait()
        assert dash.returncode == 0, errors
        assert "Traceback" not in errors
    finally:
        await plane.stop()
