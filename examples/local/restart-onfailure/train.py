"""Fail once, then succeed: restartPolicy OnFailure restarts the container inside the same pod.

The first attempt of the chosen replica exits 1; the kubelet (or kubetrain's node agent) restarts
the container in the same pod, so the pod's uid is unchanged and restartCount becomes 1. The
program tells attempts apart with a marker file named after the pod's uid (fieldRef
metadata.uid) in KUBETRAIN_EXAMPLE_STATE_DIR (job.yaml: an emptyDir at /state, which survives
container restarts; default: .example-state in the working directory). The succeeding attempt
removes its marker, so nothing is left behind and the next run of the job fails once again.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-replica", default="worker-1", help="<type>-<index> that fails once")
    parser.add_argument("--work-seconds", type=float, default=1.0)
    args = parser.parse_args()
    me = f"{os.environ['REPLICA_TYPE']}-{os.environ['REPLICA_INDEX']}"
    uid = os.environ["POD_UID"]
    state = Path(os.environ.get("KUBETRAIN_EXAMPLE_STATE_DIR", ".example-state"))
    marker = state / f"{os.environ['POD_NAME']}.{uid}.attempt"
    print(f"{me}: pod {os.environ['POD_NAME']} uid {uid} starting", flush=True)
    time.sleep(args.work_seconds)
    if me == args.fail_replica and not marker.exists():
        state.mkdir(parents=True, exist_ok=True)
        marker.write_text("failed once\n")
        print(f"{me}: first attempt in this pod: failing with exit code 1", flush=True)
        return 1
    if marker.exists():
        marker.unlink()
        print(f"{me}: restarted in the same pod (same uid) after a failure: succeeding", flush=True)
    print(f"{me}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
