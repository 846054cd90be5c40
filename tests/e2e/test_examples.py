"""Every local example trains for real under `kubetrain run` (the CLI as a subprocess, like a user).

Each test asserts what the example is about, read from the replica-prefixed logs (and, for the
backoff examples, from the API through `kubetrain run --keep`'s kubeconfig), not just the exit
code. A framework that is not installed skips its test with the reason, except under CI=true,
where it is an error (`.ci/run` installs requirements-e2e.txt). Examples run one at a time (the
module is sequential); ~2.5 minutes in all on 2 cores.

Optional, not in CI: the real-MXNet variant of mxnet-ps needs its own interpreter with
`mxnet==1.9.1 "numpy<1.24" scikit-learn`; set KUBETRAIN_E2E_MXNET_PYTHON to it (see
examples/local/README.md).
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.e2e_helpers import (
    ACCURACY_FLOOR,
    Run,
    copy_example,
    floats,
    interpreter_image_map,
    require_modules,
    require_programs,
    run_job,
    run_kept,
    trained_on_digits,
)


def succeeded(run: Run, kind: str, name: str) -> None:
    assert run.returncode == 0, run.describe()
    assert f"{kind}/{name} Succeeded" in run.stderr, run.describe()


def test_pytorch_ddp_digits(tmp_path: Path) -> None:
    require_modules("torch", "sklearn")
    run = run_job(copy_example("pytorch-ddp-digits", tmp_path) / "job.yaml")
    succeeded(run, "pytorchjob", "pytorch-ddp-digits")
    for replica in ("master-0", "worker-0", "worker-1"):
        run.one(r"identical_on_all_ranks=True", replica)
    checksums = {run.one(r"weight checksum (\S+)", r)[1] for r in ("master-0", "worker-0", "worker-1")}
    assert len(checksums) == 1, checksums
    final = run.one(
        r"final loss (?P<last>[\d.]+) \(first epoch (?P<first>[\d.]+)\), "
        r"test accuracy (?P<acc>[\d.]+), world size 3",
        "master-0",
    )
    last, first, acc = floats(final, "last", "first", "acc")
    assert last < first / 2, run.describe()
    assert acc > ACCURACY_FLOOR, run.describe()


def test_tensorflow_mwms(tmp_path: Path) -> None:
    require_modules("tensorflow", "sklearn")
    run = run_job(copy_example("tensorflow-mwms", tmp_path) / "job.yaml")
    succeeded(run, "tfjob", "tensorflow-mwms")
    for replica in ("worker-0", "worker-1"):
        final = run.one(
            r"identical_on_all_workers=True final loss (?P<last>[\d.]+) "
            r"\(first epoch (?P<first>[\d.]+)\) test accuracy (?P<acc>[\d.]+)",
            replica,
        )
        last, first, acc = floats(final, "last", "first", "acc")
        assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def test_tensorflow_ps_worker_chief(tmp_path: Path) -> None:
    require_modules("tensorflow", "sklearn")
    run = run_job(copy_example("tensorflow-ps-worker-chief", tmp_path) / "job.yaml")
    succeeded(run, "tfjob", "tensorflow-ps")
    for replica in ("chief-0", "worker-0", "worker-1", "ps-0", "evaluator-0"):  # every TF_CONFIG role
        run.one(r"TF_CONFIG roles \['chief', 'evaluator', 'ps', 'worker'\]", replica)
    run.one(r"connected to 2 workers and 1 ps", "chief-0")
    run.one(r"variables placed on /job:ps/", "chief-0")
    final = run.one(r"final loss (?P<last>[\d.]+) \(first (?P<first>[\d.]+)\)", "chief-0")
    last, first = floats(final, "last", "first")
    assert last < first / 2, run.describe()
    evaluated = run.one(r"restored \S+, test accuracy (?P<acc>[\d.]+)", "evaluator-0")
    assert float(evaluated["acc"]) > 0.8, run.describe()


def test_xgboost_iris(tmp_path: Path) -> None:
    require_modules("xgboost", "sklearn")
    run = run_job(copy_example("xgboost-iris", tmp_path) / "job.yaml")
    succeeded(run, "xgboostjob", "xgboost-iris")
    models = set()
    for replica, rank in (("master-0", 0), ("worker-0", 1)):
        run.one(rf"rank {rank}: joined the collective as {rank}/2 via xgboost-iris-master-0:", replica)
        done = run.one(
            r"mlogloss (?P<first>[\d.]+) -> (?P<last>[\d.]+), model (?P<model>\w+) "
            r"identical_to_rank0=True",
            replica,
        )
        first, last = floats(done, "first", "last")
        assert last < first / 2, run.describe()
        models.add(done["model"])
    assert len(models) == 1, models
    acc = run.one(r"test accuracy (?P<acc>[\d.]+)", "master-0")
    assert float(acc["acc"]) > ACCURACY_FLOOR, run.describe()


def test_jax_multiprocess(tmp_path: Path) -> None:
    require_modules("jax", "jaxlib")
    run = run_job(copy_example("jax-multiprocess", tmp_path) / "job.yaml")
    succeeded(run, "jaxjob", "jax-multiprocess")
    for replica, index in (("worker-0", 0), ("worker-1", 1)):
        run.one(rf"process {index}: psum over processes = 3\.0", replica)
        final = run.one(
            r"identical=True, final loss (?P<last>[\d.]+) \(first (?P<first>[\d.]+)\), "
            r"train accuracy (?P<acc>[\d.]+)",
            replica,
        )
        last, first, acc = floats(final, "last", "first", "acc")
        assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def test_paddle_collective(tmp_path: Path) -> None:
    require_modules("paddle", "sklearn")
    run = run_job(copy_example("paddle-collective", tmp_path) / "job.yaml")
    succeeded(run, "paddlejob", "paddle-collective")
    for replica, rank in (("worker-0", 0), ("worker-1", 1)):  # launch's rank follows the replica index
        run.one(rf"trainer {rank}: all_reduce\(rank \+ 1\) = 3\.0", replica)
        final = run.one(
            r"identical=True, final loss (?P<last>[\d.]+) \(first (?P<first>[\d.]+)\), "
            r"test accuracy (?P<acc>[\d.]+)",
            replica,
        )
        last, first, acc = floats(final, "last", "first", "acc")
        assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def _check_mxnet_ps(run: Run, name: str) -> None:
    succeeded(run, "mxjob", name)
    for replica in ("worker-0", "worker-1"):
        final = run.one(
            r"final loss (?P<last>[\d.]+) \(first (?P<first>[\d.]+)\), "
            r"test accuracy (?P<acc>[\d.]+)",
            replica,
        )
        last, first, acc = floats(final, "last", "first", "acc")
        assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def test_mxnet_ps(tmp_path: Path) -> None:
    require_modules("numpy", "sklearn")
    run = run_job(copy_example("mxnet-ps", tmp_path) / "job.yaml")
    _check_mxnet_ps(run, "mxnet-ps")
    run.one(r"all workers done \(all ok: True\), servers stopped", "scheduler-0")
    run.one(r"stopped by the scheduler", "server-0")


def test_mxnet_ps_real_mxnet(tmp_path: Path) -> None:
    """job-mxnet.yaml with real MXNet, its image mapped to the MXNet interpreter by the node's image map.

    MXNet needs numpy<1.24, so it has its own virtualenv (requirements-mxnet.txt; .ci/run builds it
    and sets KUBETRAIN_E2E_MXNET_PYTHON)."""
    env = interpreter_image_map(
        "KUBETRAIN_E2E_MXNET_PYTHON",
        "set it to a Python with requirements-mxnet.txt installed",
        "docker.io/kubeflow/mxnet*",
        tmp_path,
    )
    run = run_job(copy_example("mxnet-ps", tmp_path) / "job-mxnet.yaml", env=env)
    _check_mxnet_ps(run, "mxnet-ps-real")
    for replica in ("worker-0", "worker-1"):
        run.one(r"KVStore dist_sync", replica)


def test_restart_onfailure(tmp_path: Path) -> None:
    run = run_job(copy_example("restart-onfailure", tmp_path) / "job.yaml")
    succeeded(run, "pytorchjob", "restart-onfailure")
    starts = run.find(r"pod restart-onfailure-worker-1 uid (?P<uid>\S+) starting", "worker-1")
    assert len(starts) == 2, run.describe()  # two attempts ...
    assert starts[0]["uid"] == starts[1]["uid"], run.describe()  # ... in the same pod
    run.one(r"first attempt in this pod: failing with exit code 1", "worker-1")
    run.one(r"restarted in the same pod \(same uid\) after a failure: succeeding", "worker-1")
    assert len(run.find(r"starting", "worker-0")) == 1, run.describe()


def test_exitcode_retryable(tmp_path: Path) -> None:
    run = run_job(copy_example("exitcode-retryable", tmp_path) / "job.yaml")
    succeeded(run, "pytorchjob", "exitcode-retryable")
    starts = run.find(r"pod exitcode-retryable-worker-1 uid (?P<uid>\S+) starting", "worker-1")
    assert len(starts) == 2, run.describe()
    assert starts[0]["uid"] != starts[1]["uid"], run.describe()  # the pod was recreated
    run.one(r"first attempt: exiting 137 \(retryable\)", "worker-1")
    run.one(rf"recreated pod \(uid {starts[0]['uid']} -> {starts[1]['uid']}, new pod: True\)", "worker-1")


def _backoff_exceeded(tmp_path: Path, yaml_name: str, name: str) -> tuple[Run, list[dict], dict]:
    """Run with --keep, then read the job and its pods through the kubeconfig the CLI wrote."""
    from kubetrain import Client

    job_file = copy_example("backoff-exceeded", tmp_path) / yaml_name
    kubeconfig = tmp_path / "kubeconfig"
    with run_kept(job_file, kubeconfig) as kept, Client(kubeconfig) as client:
        job = client.get("pytorchjob", name)
        pods = client.pods("pytorchjob", name)
        if yaml_name == "job-clean-all.yaml":  # deletion follows the Failed condition: wait for it
            deadline = time.monotonic() + 30
            while pods and time.monotonic() < deadline:
                time.sleep(0.5)
                pods = client.pods("pytorchjob", name)
    run = kept.result()
    assert run.returncode == 1, run.describe()
    assert f"pytorchjob/{name} Failed:" in run.stderr and "backoff limit" in run.stderr, run.describe()
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed" and c["status"] == "True"]
    assert failed and "backoff limit" in failed[0]["message"], job["status"]
    assert len(run.find(r"failing \(exit 1\), as on every attempt", "worker-1")) >= 2, run.describe()
    return run, pods, job


def test_backoff_exceeded_keeps_pods(tmp_path: Path) -> None:
    run, pods, _ = _backoff_exceeded(tmp_path, "job.yaml", "backoff-exceeded")
    names = sorted(p["metadata"]["name"] for p in pods)
    assert names == ["backoff-exceeded-worker-0", "backoff-exceeded-worker-1"], run.describe()
    worker1 = next(p for p in pods if p["metadata"]["name"].endswith("worker-1"))
    status = worker1["status"]["containerStatuses"][0]
    assert status["restartCount"] >= 2, status
    last = status.get("lastState", {}).get("terminated") or status.get("state", {}).get("terminated") or {}
    assert last.get("exitCode") == 1, status


def test_backoff_exceeded_clean_all(tmp_path: Path) -> None:
    run, pods, _ = _backoff_exceeded(tmp_path, "job-clean-all.yaml", "backoff-exceeded-clean-all")
    assert pods == [], f"cleanPodPolicy All left {[p['metadata']['name'] for p in pods]}\n{run.describe()}"


def test_trainjob_torch(tmp_path: Path) -> None:
    """A TrainJob (Trainer v2) on upstream's torch-distributed runtime, which the file holds too:
    torchrun on 2 nodes from the torch plugin's PET_* env."""
    require_modules("torch", "sklearn")
    run = run_job(copy_example("trainjob-torch", tmp_path) / "trainjob.yaml")
    succeeded(run, "trainjob", "trainjob-torch")
    for replica in ("node-0-0", "node-0-1"):
        run.one(r"joined via trainjob-torch-node-0-0\.trainjob-torch:29500", replica)
        run.one(r"identical_on_all_ranks=True", replica)
    final = run.one(
        r"final loss (?P<last>[\d.]+) \(first epoch (?P<first>[\d.]+)\), "
        r"test accuracy (?P<acc>[\d.]+), world size 2",
        "node-0-0",
    )
    last, first, acc = floats(final, "last", "first", "acc")
    assert last < first / 2, run.describe()
    assert acc > ACCURACY_FLOOR, run.describe()


def test_trainjob_jax(tmp_path: Path) -> None:
    """A TrainJob (Trainer v2) on upstream's jax-distributed runtime, which the file holds too:
    jax.distributed on 2 nodes from the JAX plugin's JAX_* env."""
    require_modules("jax", "jaxlib", "sklearn")
    run = run_job(copy_example("trainjob-jax", tmp_path) / "trainjob.yaml")
    succeeded(run, "trainjob", "trainjob-jax")
    for replica, index in (("node-0-0", 0), ("node-0-1", 1)):
        run.one(rf"process {index}/2: coordinator trainjob-jax-node-0-0\.trainjob-jax:29500", replica)
        run.one(rf"process {index}: psum over processes = 3\.0", replica)
        final = run.one(
            r"identical=True, final loss (?P<last>[\d.]+) \(first (?P<first>[\d.]+)\), "
            r"train accuracy (?P<acc>[\d.]+)",
            replica,
        )
        last, first, acc = floats(final, "last", "first", "acc")
        assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def test_trainjob_mpi(tmp_path: Path) -> None:
    """A TrainJob (Trainer v2) on upstream's deepspeed-distributed runtime (the mpi policy, launcher
    as a node), which the file holds too: the launcher's mpirun reads the mpi plugin's hostfile and
    starts 4 ranks over ssh, 2 in the `node` pod and 2 in the launcher; their MPI Allreduce trains."""
    require_programs("mpirun")
    require_modules("mpi4py", "numpy", "sklearn")
    run = run_job(copy_example("trainjob-mpi", tmp_path) / "trainjob.yaml")
    succeeded(run, "trainjob", "trainjob-mpi")
    ranks = run.find(r"rank (?P<rank>\d)/4 on (?P<host>\S+): \d+ training samples", "launcher-0-0")
    assert sorted(m["rank"] for m in ranks) == ["0", "1", "2", "3"], run.describe()
    hosts = sorted(m["host"] for m in ranks)
    assert hosts == ["trainjob-mpi-launcher-0-0"] * 2 + ["trainjob-mpi-node-0-0"] * 2, run.describe()
    trained_on_digits(run, 4, "launcher-0-0")


def test_trainjob_xgboost(tmp_path: Path) -> None:
    """A TrainJob (Trainer v2) on upstream's xgboost-distributed runtime, which the file holds too:
    the rabit collective on 2 nodes from the XGBoost plugin's DMLC_* env."""
    require_modules("xgboost", "sklearn")
    run = run_job(copy_example("trainjob-xgboost", tmp_path) / "trainjob.yaml")
    succeeded(run, "trainjob", "trainjob-xgboost")
    for replica, index in (("node-0-0", 0), ("node-0-1", 1)):
        run.one(
            rf"rank {index}: joined the collective as {index}/2 via "
            r"trainjob-xgboost-node-0-0\.trainjob-xgboost:29500",
            replica,
        )
        run.one(r"identical_to_rank0=True", replica)
    acc = run.one(r"rank 0: test accuracy (?P<acc>[\d.]+)", "node-0-0")
    assert floats(acc, "acc")[0] > ACCURACY_FLOOR, run.describe()
