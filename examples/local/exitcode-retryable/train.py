"""Exit with a retryable code once, then succeed in the recreated pod (restartPolicy ExitCode).

Under ExitCode the pod's own restartPolicy is Never; when the container exits with a code of 128
or more (a signal: 137 SIGKILL/OOM, 143 SIGTERM, 130 SIGINT) the operator deletes the pod and
creates it again, with the same name and a NEW uid; a code of 1-127 fails the replica for good.

The recreated pod must know it is a second attempt, and nothing in a pod's env identifies the job
run (the job's uid is not available through fieldRef). So the marker is keyed by namespace and
pod name, in KUBETRAIN_EXAMPLE_STATE_DIR (job.yaml: a hostPath at /state, a volume that outlives
the pod; default: .example-state in the working directory), and the succeeding attempt removes it: every run
starts clean. A marker older than --stale-seconds (a run interrupted in between) is ignored.
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
    parser.add_argument("--exit-code", type=int, default=137)
    parser.add_argument("--work-seconds", type=float, default=1.0)
    parser.add_argument("--stale-seconds", type=float, default=600)
    args = parser.parse_args()
    me = f"{os.environ['REPLICA_TYPE']}-{os.environ['REPLICA_INDEX']}"
    pod, uid = os.environ["POD_NAME"], os.environ["POD_UID"]
    state = Path(os.environ.get("KUBETRAIN_EXAMPLE_STATE_DIR", ".example-state"))
    marker = state / f"{os.environ['POD_NAMESPACE']}.{pod}.exitcode"
    if marker.exists() and time.time() - marker.stat().st_mtime > args.stale_seconds:
        marker.unlink()  # left by an interrupted run
    print(f"{me}: pod {pod} uid {uid} starting", flush=True)
    time.sleep(args.work_seconds)
    if me == args.fail_replica and not marker.exists():
        state.mkdir(parents=True, exist_ok=True)
        marker.write_text(uid)
        print(f"{me}: first attempt: exiting {args.exit_code} (retryable)", flush=True)
        return args.exit_code
    if marker.exists():
        first_uid = marker.read_text()
        marker.unlink()
        print(
            f"{me}: recreated pod (uid {first_uid} -> {uid}, new pod: {first_uid != uid}): succeeding",
            flush=True,
        )
        if first_uid == uid:
            return 1  # restarted in place: not what ExitCode promises
    print(f"{me}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
