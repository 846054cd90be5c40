"""The job history outlives the job, and the plane that ran it.

A real local plane on a data directory of the test's own runs a PyTorchJob whose master fails
once (exit 3) and then succeeds (OnFailure); the job is deleted and the plane stopped. A new plane
on the same directory no longer has the job, yet `kubetrain history`, `history show` and
`logs --from-history` show it: its outcome, conditions, the pod's restart and exit code, its
events, both attempts' logs, and the loss series parsed from them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_plane import pytorchjob

from kubetrain.cli.datadir import STATE_FILE
from kubetrain.cli.main import main
from kubetrain.cli.plane import LocalPlane
from kubetrain.client.errors import NotFound
from kubetrain.history.store import HISTORY_FILE, HistoryStore
from tests.polling import wait_for

FAILS_ONCE = (
    "import os, sys\n"
    "first = not os.path.exists('attempted')\n"
    "open('attempted', 'w').close()\n"
    "print('attempt', 'first' if first else 'second', flush=True)\n"
    "print('epoch=1 loss=' + ('0.9' if first else '0.4'), flush=True)\n"
    "sys.exit(3 if first else 0)\n"
)


def plane_on(data_dir: Path, workdir: Path) -> LocalPlane:
    return LocalPlane(
        working_dir=workdir,
        state_file=data_dir / STATE_FILE,
        history=HistoryStore(data_dir / HISTORY_FILE),
    )


async def test_a_deleted_job_stays_in_the_history_of_the_next_plane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, workdir = tmp_path / "data", tmp_path / "work"
    workdir.mkdir()
    plane = plane_on(data_dir, workdir)
    await plane.start()
    try:
        client = plane.client()
        await client.create(pytorchjob("gone", FAILS_ONCE, restart_policy="OnFailure"))
        await client.wait("pytorchjob", "gone", timeout=120)
        history = HistoryStore(data_dir / HISTORY_FILE, read_only=True)

        def both_logs() -> bool:
            found = history.find("gone")
            return bool(found) and len(history.logs(found[-1].uid)) == 2

        await wait_for(both_logs, timeout=60, what="both attempts' logs in the history")
        history.close()
        await client.delete("pytorchjob", "gone")
        await client.wait_deleted("pytorchjob", "gone", timeout=60)
        await client.close()
    finally:
        await plane.stop()

    plane = plane_on(data_dir, workdir)
    await plane.start()
    try:
        client = plane.client()
        with pytest.raises(NotFound):
            await client.get("pytorchjob", "gone")
        await client.close()
        capsys.readouterr()

        assert main(["history", "--data-dir", str(data_dir)]) == 0
        header, row = capsys.readouterr().out.splitlines()
        assert header.split() == ["KIND", "NAME", "NAMESPACE", "OUTCOME", "STARTED", "DURATION"]
        assert row.split()[:4] == ["PyTorchJob", "gone", "default", "Succeeded"]

        assert main(["history", "show", "gone", "--kind", "pytorchjobs", "--data-dir", str(data_dir)]) == 0
        shown = capsys.readouterr().out
        assert "PyTorchJobSucceeded" in shown and "Deleted:" in shown
        pod_line = next(line for line in shown.splitlines() if line.strip().startswith("gone-master-0"))
        assert pod_line.split()[1:5] == ["Succeeded", "pytorch", "1", "0"]  # restarted once, then exit 0
        assert "SuccessfulCreatePod" in shown
        loss = next(line for line in shown.splitlines() if line.split()[2:3] == ["loss"])
        assert loss.split()[:7] == ["gone-master-0", "pytorch", "loss", "2", "0.4", "0.4", "0.9"]

        assert main(["logs", "pytorchjob", "gone", "--from-history", "--data-dir", str(data_dir)]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "master-0#0 | attempt first",
            "master-0#0 | epoch=1 loss=0.9",
            "master-0#1 | attempt second",
            "master-0#1 | epoch=1 loss=0.4",
        ]
    finally:
        await plane.stop()
