"""Job builders and the background-thread plane shared by the CLI integration tests.

A module with a unique name (not `conftest`): several test directories have a conftest.py, and
`from conftest import ...` would pick whichever was imported first.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import yaml

from kubetrain.cli.plane import LocalPlane


class PlaneThread:
    def __init__(self, workdir: Path, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.plane = LocalPlane(working_dir=workdir, **options)
        self._thread = threading.Thread(target=self.loop.run_forever, name="test-plane", daemon=True)

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.plane.start(), self.loop).result(60)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.plane.stop(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def container(script: str, name: str = "pytorch", env: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "python:3.11", "command": ["python", "-u", "-c", script]}
    if env:
        out["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return out


def pytorchjob(
    name: str,
    master: str,
    worker: str | None = None,
    workers: int = 1,
    restart_policy: str = "Never",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    specs: dict[str, Any] = {
        "Master": {
            "replicas": 1,
            "restartPolicy": restart_policy,
            "template": {"spec": {"containers": [container(master, env=env)]}},
        }
    }
    if worker is not None:
        specs["Worker"] = {
            "replicas": workers,
            "restartPolicy": restart_policy,
            "template": {"spec": {"containers": [container(worker, env=env)]}},
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": specs},
    }


def jaxjob(name: str, script: str, workers: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "JAXJob",
        "metadata": {"name": name},
        "spec": {
            "jaxReplicaSpecs": {
                "Worker": {
                    "replicas": workers,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container(script, name="jax")]}},
                }
            }
        },
    }


def write_job(directory: Path, job: dict[str, Any]) -> Path:
    path = directory / f"{job['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path
