"""Each pod runs in a working directory of its own that shows the job's files (`kubetrain run`).

Two workers write the same relative path, `log/workerlog.0` (what `paddle.distributed.launch`
does in every pod), and each must read back its own file, while both read `input.txt` from the
job directory. They meet through a hostPath volume, which still shares by path, as on a cluster.
Before pods had their own directories, both wrote into the job directory and one read the other's
log. The CLI runs as a subprocess, like a user, with its data directory in the test's tmp dir.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.e2e.e2e_helpers import run_job

WORKER = """\
import os, pathlib, sys, time
me = os.environ["REPLICA_INDEX"]
peer = str(1 - int(me))
data = pathlib.Path("input.txt").read_text().strip()
log = pathlib.Path("log")
log.mkdir(exist_ok=True)
(log / "workerlog.0").write_text(f"worker {me} read {data}\\n")
shared = pathlib.Path(sys.argv[1])  # the mount path, /shared: the node rewrites it in args
(shared / f"ready-{me}").write_text(me)
deadline = time.time() + 60
while not (shared / f"ready-{peer}").exists():
    if time.time() > deadline:
        sys.exit("the peer never wrote into the shared volume")
    time.sleep(0.1)
own = (log / "workerlog.0").read_text()
print(f"worker {me} log: {own.strip()!r}", flush=True)
print(f"worker {me} shared: {sorted(p.name for p in shared.iterdir())}", flush=True)
sys.exit(0 if own == f"worker {me} read {data}\\n" else 1)
"""


def job(shared: Path) -> dict:
    container = {
        "name": "pytorch",
        "image": "docker.io/library/python:3.11-slim",
        "command": ["python", "worker.py", "/shared"],
        "env": [
            {
                "name": "REPLICA_INDEX",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.labels['training.kubeflow.org/replica-index']"}
                },
            }
        ],
        "volumeMounts": [{"name": "shared", "mountPath": "/shared"}],
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "own-dirs"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 2,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "containers": [container],
                            "volumes": [
                                {
                                    "name": "shared",
                                    "hostPath": {"path": str(shared), "type": "DirectoryOrCreate"},
                                }
                            ],
                        }
                    },
                }
            }
        },
    }


def test_pods_write_the_same_path_into_their_own_directories(tmp_path: Path) -> None:
    job_dir, shared = tmp_path / "job", tmp_path / "shared"
    job_dir.mkdir()
    (job_dir / "input.txt").write_text("hello\n")
    (job_dir / "worker.py").write_text(WORKER)
    (job_dir / "job.yaml").write_text(yaml.safe_dump(job(shared)))

    run = run_job(job_dir / "job.yaml", env={"XDG_DATA_HOME": str(tmp_path / "xdg")})

    assert run.returncode == 0, run.describe()
    for me in ("0", "1"):  # its own log, with what it read from the job directory
        assert run.one(r"worker \d log: (.*)", f"worker-{me}")[1] == repr(f"worker {me} read hello")
        # the hostPath volume is one directory for both pods
        assert json.loads(run.one(r"worker \d shared: (.*)", f"worker-{me}")[1].replace("'", '"')) == [
            "ready-0",
            "ready-1",
        ]
    assert sorted(p.name for p in job_dir.iterdir()) == ["input.txt", "job.yaml", "worker.py"]
    kept = dict(re.findall(r"^(own-dirs-worker-\d) wrote its files in (\S+)$", run.stderr, re.M))
    assert sorted(kept) == ["own-dirs-worker-0", "own-dirs-worker-1"], run.describe()
    for me in ("0", "1"):
        directory = Path(kept[f"own-dirs-worker-{me}"])
        assert directory.is_relative_to(tmp_path / "xdg" / "kubetrain" / "pods" / "default")
        assert (directory / "log" / "workerlog.0").read_text() == f"worker {me} read hello\n"
        assert (directory / "input.txt").resolve() == (job_dir / "input.txt").resolve()
