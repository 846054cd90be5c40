"""What a state file costs the embedded server's event loop per write (no HTTP, one process).

Creates N pods, then updates each one's status, through the server's REST storage (what every
request and controller writes through), in memory and with a SQLite state file as `kubetrain up`
keeps. Prints, per write: the time on the loop (the writer thread's GIL share included), the
process CPU (loop + writer thread), and how long after the last write everything was committed.
The median of the rounds; prints figures only.

    python benchmarks/store_persist_bench.py [--pods 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kubetrain.embedded.apiserver import EmbeddedAPIServer

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"labels": {"training.kubeflow.org/job-name": "bench"}},
    "spec": {
        "containers": [
            {
                "name": "pytorch",
                "image": "pytorch/pytorch:2.3",
                "command": ["python", "-u", "train.py"],
                "env": [{"name": "WORLD_SIZE", "value": "5000"}, {"name": "RANK", "value": "0"}],
                "ports": [{"containerPort": 23456, "name": "pytorchjob-port"}],
            }
        ],
        "restartPolicy": "OnFailure",
    },
}


async def one_round(n: int, state: Path | None) -> tuple[float, float, float]:
    server = EmbeddedAPIServer(state_file=state)
    rt = server.catalog.storage_type("pods")
    assert rt is not None
    cpu0, t0 = time.process_time(), time.perf_counter()
    for i in range(n):
        body = copy.deepcopy(POD)
        body["metadata"]["name"] = f"pod-{i}"
        server.rest.create(rt, "default", body)
    for i in range(n):
        old = server.store.get("pods", "default", f"pod-{i}")
        assert old is not None
        new = copy.deepcopy(old)
        new["status"] = {"phase": "Running", "podIP": f"127.1.{i // 250}.{i % 250}"}
        server.rest.write(rt, old, new)
    loop_s = time.perf_counter() - t0
    await server.stop()  # commits what is pending
    drain_s = time.perf_counter() - t0 - loop_s
    cpu_s = time.process_time() - cpu0
    return loop_s / (2 * n) * 1e6, cpu_s / (2 * n) * 1e6, drain_s * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float, float]]] = {"in memory": [], "state file": []}
    for _ in range(args.rounds):  # interleaved, so that a busy machine weighs on both alike
        for label, rounds in results.items():
            with tempfile.TemporaryDirectory() as tmp:
                state = Path(tmp) / "plane.db" if label == "state file" else None
                rounds.append(await one_round(args.pods, state))
    for label, rounds in results.items():
        loop_us, cpu_us, drain_ms = (statistics.median(r[k] for r in rounds) for k in range(3))
        print(
            f"{label:>10}: {args.pods} creates + {args.pods} status updates: {loop_us:.1f} us/write on "
            f"the loop, {cpu_us:.1f} us/write CPU, all committed {drain_ms:.0f} ms after the last write "
            f"(median of {args.rounds})"
        )


if __name__ == "__main__":
    asyncio.run(main())
