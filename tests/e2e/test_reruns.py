"""Running an example again right away works: each plane gets fresh pod addresses.

XGBoost's tracker binds a fixed port on the master's pod address without SO_REUSEADDR; when
every plane gave the master the same address, the second or third run in a row failed with
``Failed to bind socket ... Address already in use`` (the last run's connections were still in
TIME_WAIT). Planes now rotate through the 127.N/16 ranges and the shim sets SO_REUSEADDR where it
rebinds (see `kubetrain.embedded.node.network.PodCIDRLease`).
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.e2e_helpers import copy_example, require_modules, run_job

RUNS = 3


def test_xgboost_iris_three_times_back_to_back(tmp_path: Path) -> None:
    require_modules("xgboost", "sklearn")
    job = copy_example("xgboost-iris", tmp_path) / "job.yaml"
    for attempt in range(1, RUNS + 1):
        run = run_job(job)
        assert run.returncode == 0, f"run {attempt} of {RUNS}:\n{run.describe()}"
        assert "xgboostjob/xgboost-iris Succeeded" in run.stderr, run.describe()
        assert "Address already in use" not in run.stdout, run.describe()
