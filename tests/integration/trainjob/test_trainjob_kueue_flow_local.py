"""Kueue's suspend, patch, resume flow for a TrainJob on the local plane of `kubetrain up`: the
runtime patch added while suspended reaches the JobSet, and the embedded JobSet controller's Jobs
start their pods with it (`kueue_flow.py`; the same flow runs on a real control plane with
upstream's JobSet controller in `test_trainjob_upstream_jobset.py`)."""

from __future__ import annotations

from pathlib import Path

from kubetrain.cli.plane import LocalPlane

from .kueue_flow import run_kueue_flow


async def test_a_runtime_patch_added_while_suspended_places_the_pods(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=tmp_path)
    await plane.start()
    try:
        await run_kueue_flow(plane.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)
    finally:
        await plane.stop()
