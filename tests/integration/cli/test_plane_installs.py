"""What the local plane installs besides the CRDs: Trainer's public ConfigMap.

The Kubeflow SDK's `TrainerClient()` reads `kubeflow-system/kubeflow-trainer-public`
(`kubeflow_trainer_version`) at start and logs a warning with a 404 when it is missing, as it was
on every start against `kubetrain up`. The plane creates it, and a plane restarted from its state
file brings it up to date (a plane of an older kubetrain left another version there).
"""

from __future__ import annotations

from pathlib import Path

from cli_plane import PlaneThread

from kubetrain.kinds.trainjob.constants import TRAINER_VERSION
from kubetrain.runtime.transport import KubeClient


async def _public_configmap(plane: PlaneThread) -> dict[str, str]:
    async with KubeClient.for_url(plane.plane.server.plain_url, plane.plane.token, qps=0) as kube:
        cm = await kube.get("v1", "ConfigMap", "kubeflow-system", "kubeflow-trainer-public")
    return dict(cm["data"])


async def _set_version(plane: PlaneThread, version: str) -> None:
    async with KubeClient.for_url(plane.plane.server.plain_url, plane.plane.token, qps=0) as kube:
        patch = {"data": {"kubeflow_trainer_version": version}}
        await kube.merge_patch("v1", "ConfigMap", "kubeflow-system", "kubeflow-trainer-public", patch)


async def test_the_plane_serves_trainers_public_configmap_and_keeps_it_current(tmp_path: Path) -> None:
    state = tmp_path / "plane.db"
    first = PlaneThread(tmp_path, state_file=state)
    first.start()
    try:
        assert await _public_configmap(first) == {"kubeflow_trainer_version": TRAINER_VERSION}
        assert TRAINER_VERSION == "v2.3.0"
        await _set_version(first, "v2.0.0")
    finally:
        first.stop()

    again = PlaneThread(tmp_path, state_file=state)
    again.start()
    try:
        assert await _public_configmap(again) == {"kubeflow_trainer_version": TRAINER_VERSION}
    finally:
        again.stop()
