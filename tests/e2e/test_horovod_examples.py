"""Real Horovod under `kubetrain run` (the CLI as a subprocess): examples/local/horovod-pytorch.

Horovod 0.28.1 is built from its sdist against torch 2.13.0 and Debian's OpenMPI in its own
virtualenv (requirements-horovod.txt, scripts/horovod-env: .ci/run builds it and sets
KUBETRAIN_E2E_HOROVOD_PYTHON); the node's image map points the MPIJob's image,
horovod/horovod:0.28.1, at that interpreter, and mpirun finds it as `python` on PATH in every pod.
The same train.py runs as an MPIJob v2beta1 (job.yaml: ssh through the node's exec endpoint) and v1
(horovod-v1/job.yaml: kubexec.sh / kubectl exec), 4 ranks on 2 workers. Without the variable the tests skip
(with the reason), under CI=true that is an error; likewise a missing mpirun.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.e2e.e2e_helpers import (
    ACCURACY_FLOOR,
    IN_CI,
    Run,
    copy_example,
    floats,
    interpreter_image_map,
    run_job,
)

RANK = re.compile(
    r"rank (?P<rank>\d)/4 on (?P<host>\S+): horovod 0\.28\.1, torch 2\.13\.0\S*, MPI enabled: True, "
    r"local rank (?P<local>\d)/(?P<local_size>\d)"
)
LOSS = re.compile(
    r"rank (?P<rank>\d)/4: (?P<n>\d+) training samples, loss (?P<first>[\d.]+) -> (?P<last>[\d.]+)"
)
FINAL = (
    r"rank 0: final loss (?P<last>[\d.]+) \(first (?P<first>[\d.]+)\), test accuracy (?P<acc>[\d.]+), "
    r"4 ranks, identical weights: True"
)


@pytest.fixture
def horovod_env(tmp_path: Path) -> dict[str, str]:
    if shutil.which("mpirun") is None:
        reason = "mpirun not found (scripts/install-system-deps --tests)"
        if IN_CI:
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason)
    return interpreter_image_map(
        "KUBETRAIN_E2E_HOROVOD_PYTHON",
        "set it to the python scripts/horovod-env prints",
        "horovod/horovod*",
        tmp_path,
    )


def succeeded(run: Run, name: str) -> None:
    assert run.returncode == 0, run.describe()
    assert f"mpijob/{name} Succeeded" in run.stderr, run.describe()


def found(run: Run, pattern: str) -> re.Match[str]:
    """The last match anywhere in the output: mpirun forwards each rank's output as it comes, so
    two ranks' lines may share one log line (and the launcher's are `launcher/<container> | ...`)."""
    matches = list(re.finditer(pattern, run.stdout))
    assert matches, f"no output matches {pattern!r}\n{run.describe()}"
    return matches[-1]


def trained_with_horovod(run: Run, job: str) -> None:
    """4 ranks on real Horovod over MPI, 2 on each worker pod; every rank's own loss fell;
    broadcast_parameters made 4 different initial weight sets one; rank 0's final line: the
    averaged loss fell, accuracy above the floor, identical weights on all ranks."""
    # mpirun forwards each rank's output as it comes: two ranks' lines may share one log line
    ranks = list(RANK.finditer(run.stdout))
    assert sorted(m["rank"] for m in ranks) == ["0", "1", "2", "3"], run.describe()
    workers = [f"{job}-worker-{i}" for i in (0, 1)]
    assert sorted(m["host"] for m in ranks) == sorted(workers * 2), run.describe()
    assert sorted((m["host"], m["local"], m["local_size"]) for m in ranks) == [
        (w, str(local), "2") for w in workers for local in (0, 1)
    ], run.describe()
    losses = list(LOSS.finditer(run.stdout))
    assert sorted(m["rank"] for m in losses) == ["0", "1", "2", "3"], run.describe()
    assert sum(int(m["n"]) for m in losses) == 1500, run.describe()  # the shards cover the training set
    for m in losses:
        first, last = floats(m, "first", "last")
        assert last < first / 2, run.describe()
    found(run, r"rank 0: broadcast_parameters: 4 distinct initial weight sets -> 1")
    last, first, acc = floats(found(run, FINAL), "last", "first", "acc")
    assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def test_horovod_pytorch_v2beta1(tmp_path: Path, horovod_env: dict[str, str]) -> None:
    run = run_job(copy_example("horovod-pytorch", tmp_path) / "job.yaml", env=horovod_env)
    succeeded(run, "horovod-pytorch")
    trained_with_horovod(run, "horovod-pytorch")


def test_horovod_pytorch_v1(tmp_path: Path, horovod_env: dict[str, str]) -> None:
    run = run_job(copy_example("horovod-v1", tmp_path) / "job.yaml", env=horovod_env)  # train.py: a symlink
    succeeded(run, "horovod-v1")
    trained_with_horovod(run, "horovod-v1")
