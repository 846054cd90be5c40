"""`kubetrain operator --history PATH`: the recorder over a kubeconfig's cluster, beside the operator.

The cluster here is a local plane recording nothing itself; `recording` (what `operator --history`
wraps the operator's run in) connects through a kubeconfig as on a real cluster, and a job run
while it records is in the file, with its log, once the block exits.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli_plane import pytorchjob

from kubetrain.cli.operator import client_factory
from kubetrain.cli.operator_history import recording
from kubetrain.cli.plane import LocalPlane
from kubetrain.history.store import HistoryStore
from tests.polling import wait_for


def operator_args(history: Path | None) -> argparse.Namespace:
    return argparse.Namespace(
        history=str(history) if history else None,
        history_max_jobs=10,
        history_max_age=1.0,
        kube_api_qps=50.0,
        kube_api_burst=100,
    )


async def test_operator_history_records_the_clusters_jobs(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=tmp_path)
    await plane.start()
    try:
        kubeconfig = str(plane.write_kubeconfig(tmp_path / "kubeconfig.yaml"))
        path = tmp_path / "volume" / "history.db"
        client = plane.client()
        async with recording(operator_args(path), client_factory(kubeconfig, None)):
            await client.create(pytorchjob("on-cluster", "print('epoch=1 loss=0.3', flush=True)"))
            await client.wait("pytorchjob", "on-cluster", timeout=120)
            reader = HistoryStore(path, read_only=True)

            def logged() -> bool:
                found = reader.find("on-cluster")
                return bool(found) and bool(reader.logs(found[-1].uid))

            await wait_for(logged, timeout=60, what="the job's log in the operator's history")
            reader.close()
        await client.close()
    finally:
        await plane.stop()
    history = HistoryStore(path, read_only=True)
    (job,) = history.find("on-cluster", kind="PyTorchJob")
    assert job.outcome == "Succeeded"
    assert [s.name for s in history.metrics(job.uid)] == ["epoch", "loss"]


async def test_without_history_the_operator_records_nothing(tmp_path: Path) -> None:
    async with recording(operator_args(None), client_factory(str(tmp_path / "none.yaml"), None)):
        pass  # no connection made: the kubeconfig named does not even exist
    assert list(tmp_path.iterdir()) == []
