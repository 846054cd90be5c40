"""A replica that always fails, so the job exceeds its backoffLimit.

The chosen replica exits 1 after a moment, every time; under restartPolicy OnFailure its
container is restarted in place and its restartCount grows. The operator sums the restartCounts
of the running pods and fails the job once the sum reaches runPolicy.backoffLimit ("Job ... has
failed because it has reached the specified backoff limit"). The other replica is healthy and
still running then, so cleanPodPolicy decides what is left: None keeps both pods (job.yaml),
All deletes them (job-clean-all.yaml).
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-replica", default="worker-1", help="<type>-<index> that always fails")
    parser.add_argument(
        "--healthy-seconds",
        type=float,
        default=120,
        help="how long the healthy replicas run before succeeding",
    )
    args = parser.parse_args()
    me = f"{os.environ['REPLICA_TYPE']}-{os.environ['REPLICA_INDEX']}"
    if me == args.fail_replica:
        print(f"{me}: failing (exit 1), as on every attempt", flush=True)
        time.sleep(0.5)
        return 1
    print(f"{me}: healthy, working for {args.healthy_seconds:.0f}s", flush=True)
    deadline = time.monotonic() + args.healthy_seconds
    while time.monotonic() < deadline:
        time.sleep(1)
    print(f"{me}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
