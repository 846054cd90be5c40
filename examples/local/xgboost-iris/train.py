"""Distributed XGBoost (the collective: rabit tracker + allreduce) on iris, as an XGBoostJob or as a
TrainJob on Kubeflow Trainer v2's XGBoost runtime (the program of examples/local/trainjob-xgboost).

Demonstrates the XGBoostJob env contract (docs/upstream-behaviour.md#xgboostjob): every pod gets
MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (a TrainJob's: DMLC_TRACKER_URI, DMLC_TRACKER_PORT,
DMLC_NUM_WORKER, DMLC_TASK_ID). Rank 0 (the Master pod, or the pod of index 0) starts xgboost's
RabitTracker listening on the tracker port; every rank joins it with `collective.CommunicatorContext`,
loads its own shard of iris and calls `xgb.train`: the histograms are all-reduced, so every rank
builds the same trees. Each rank checks that its model equals rank 0's (a broadcast of the model's
checksum); rank 0 prints the accuracy on a held-out set.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from xgboost import collective
from xgboost.tracker import RabitTracker


def topology() -> tuple[str, int, int, int]:
    """(tracker host, tracker port, world size, rank) from either env contract: an XGBoostJob sets
    MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; a TrainJob's XGBoost plugin DMLC_TRACKER_URI,
    DMLC_TRACKER_PORT, DMLC_NUM_WORKER and DMLC_TASK_ID (the pod's Job completion index)."""
    env = os.environ
    if "DMLC_TRACKER_URI" in env:
        names = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_NUM_WORKER", "DMLC_TASK_ID")
    else:
        names = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
    host, port, world, rank = (env[name] for name in names)
    return host, int(port), int(world), int(rank)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    addr, port, world, rank = topology()

    tracker = None
    if rank == 0:  # the master pod hosts the tracker on its service port
        tracker = RabitTracker(n_workers=world, host_ip="0.0.0.0", port=port, sortby="task")
        tracker.start()
        print(f"rank 0: RabitTracker listening on 0.0.0.0:{port} for {world} workers", flush=True)

    x, y = load_iris(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
    with collective.CommunicatorContext(
        dmlc_communicator="rabit",
        dmlc_tracker_uri=addr,
        dmlc_tracker_port=port,
        dmlc_task_id=f"{rank:04d}",
        dmlc_retry=20,
        dmlc_timeout=120,
    ):
        me, n = collective.get_rank(), collective.get_world_size()
        print(f"rank {rank}: joined the collective as {me}/{n} via {addr}:{port}", flush=True)
        shard = slice(me, None, n)
        dtrain = xgb.DMatrix(x_train[shard], label=y_train[shard])
        params = {
            "objective": "multi:softprob",
            "num_class": 3,
            "max_depth": 3,
            "eta": 0.3,
            "tree_method": "hist",
            "nthread": 1,
        }
        evals_result: dict[str, dict[str, list[float]]] = {}
        booster = xgb.train(
            params,
            dtrain,
            num_boost_round=args.rounds,
            evals=[(dtrain, "train")],
            evals_result=evals_result,
            verbose_eval=5,
        )  # prints on rank 0 only
        loss = evals_result["train"]["mlogloss"]
        digest = hashlib.sha256(booster.save_raw("json")).hexdigest()[:16]
        same = collective.broadcast(digest, 0) == digest
        print(
            f"rank {rank}: shard of {dtrain.num_row()} rows, mlogloss {loss[0]:.4f} -> {loss[-1]:.4f}, "
            f"model {digest} identical_to_rank0={same}",
            flush=True,
        )
        ok = same and loss[-1] < loss[0]
    if tracker is not None:
        tracker.wait_for(timeout=60)
    if rank == 0:  # outside the collective: building a DMatrix inside it is a collective call
        pred = booster.predict(xgb.DMatrix(x_test)).argmax(axis=1)
        print(f"rank 0: test accuracy {float(np.mean(pred == y_test)):.3f} on {len(y_test)} rows", flush=True)
    if not ok:
        print(f"rank {rank}: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
