"""The MPI-family examples train for real under `kubetrain run` (the CLI as a subprocess).

MPIJob v2beta1 (ssh through the node's exec endpoint), v1 (kubexec.sh / kubectl exec) and v1alpha2
(the same on a worker StatefulSet and a launcher batch Job), PyTorch
launched by mpirun, a ChainerJob (plain mpi4py; and real ChainerMN in its own environment from
scripts/chainer-env, KUBETRAIN_E2E_CHAINER_PYTHON) and a Caffe2Job; and a malformed mpirun command
that must fail the job with the launcher's exit code in the Failed condition's message. Outcomes are read from
the replica-prefixed logs. A missing mpirun or mpi4py skips (with the reason), except under
CI=true where it is an error. Sequential; about a minute on 2 cores.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.e2e_helpers import (
    ACCURACY_FLOOR,
    IN_CI,
    Run,
    copy_example,
    floats,
    interpreter_image_map,
    require_modules,
    run_job,
    run_kept,
    trained_on_digits,
)

RANK = re.compile(
    r"rank (?P<rank>\d)/(?P<size>\d) on host (?P<host>\S+) ip (?P<ip>\S+): "
    r"allreduce\(rank \+ 1\) = (?P<sum>\d+), array allreduce = (?P<arr>[\d.]+)"
)


LAUNCHER_LINE = re.compile(r"^launcher(?:/[a-z0-9-]+)?\s*\| ?(.*)$")
"""`launcher | ...` or `launcher/<container> | ...` (e2e_helpers' Run.lines skips the latter)."""


@pytest.fixture(autouse=True)
def openmpi() -> None:
    if shutil.which("mpirun") is None:
        reason = "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
        if IN_CI:
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason)
    require_modules("mpi4py", "numpy")


def launcher_lines(run: Run, pattern: str) -> list[re.Match[str]]:
    """Lines of the launcher (`launcher` or `launcher/<container>`: v2beta1 names its container)."""
    rx = re.compile(pattern)
    texts = [m[1] for m in (LAUNCHER_LINE.match(line) for line in run.stdout.splitlines()) if m]
    return [m for m in (rx.search(t) for t in texts) if m]


def launcher_one(run: Run, pattern: str) -> re.Match[str]:
    """The last launcher line matching; else a match anywhere in the output, because mpirun forwards
    each rank's output as it comes and two ranks' lines may share one log line."""
    found = launcher_lines(run, pattern) or list(re.finditer(pattern, run.stdout))
    assert found, f"no launcher line matches {pattern!r}\n{run.describe()}"
    return found[-1]


def succeeded(run: Run, kind: str, name: str) -> None:
    assert run.returncode == 0, run.describe()
    assert f"{kind}/{name} Succeeded" in run.stderr, run.describe()


def check_allreduce(run: Run, job: str, hosts: tuple[str, str] = ("worker-0", "worker-1")) -> None:
    """4 ranks, 2 on each of the two `hosts` pods (its hostname and pod IP), every one with the
    right sums."""
    # mpirun forwards each rank's output as it comes: lines of two ranks may share one log line
    ranks = list(RANK.finditer(run.stdout))
    assert sorted(m["rank"] for m in ranks) == ["0", "1", "2", "3"], run.describe()
    assert all(m["size"] == "4" and m["sum"] == "10" and m["arr"] == "10.0" for m in ranks), run.describe()
    pods = sorted(f"{job}-{host}" for host in hosts)
    assert sorted(m["host"] for m in ranks) == sorted(pods * 2), run.describe()
    ips = {m["ip"] for m in ranks}
    assert len(ips) == 2 and all(ip.startswith("127.") for ip in ips), run.describe()
    launcher_one(
        run,
        rf"rank 0: 4 ranks, placement \{{'{pods[0]}': 2, '{pods[1]}': 2\}}, "
        r"expected 10, got 10: OK",
    )


def test_mpi_v2beta1_allreduce(tmp_path: Path) -> None:
    run = run_job(copy_example("mpi-v2beta1-allreduce", tmp_path) / "job.yaml")
    succeeded(run, "mpijob", "mpi-v2beta1-allreduce")
    check_allreduce(run, "mpi-v2beta1-allreduce")
    # v2beta1: workers run sshd (locally the idle stand-in)
    assert re.search(r"^worker-0(/\S+)?\s*\| kubetrain: sshd is not run", run.stdout, re.M), run.describe()


def test_mpi_launcher_as_worker(tmp_path: Path) -> None:
    """runLauncherAsWorker: the launcher is the hostfile's first host, so 2 of the 4 ranks run in
    the launcher pod and 2 on the one worker; WaitForWorkersReady creates the launcher only once
    the worker is Ready (its mechanics: tests/integration/mpi/test_v2beta1.py)."""
    run = run_job(copy_example("mpi-v2beta1-allreduce", tmp_path) / "job-launcher-as-worker.yaml")
    succeeded(run, "mpijob", "mpi-launcher-as-worker")
    check_allreduce(run, "mpi-launcher-as-worker", hosts=("launcher", "worker-0"))


def test_mpi_mpich_allreduce(tmp_path: Path) -> None:
    """mpiImplementation MPICH: MPICH's hostfile and HYDRA_HOST_FILE, Hydra's mpirun (an image
    named *mpich* runs Debian's mpirun.mpich) starting one proxy per worker over the node's ssh;
    every rank shares its host with exactly one other (MPI_COMM_TYPE_SHARED), so the 4 ranks ran
    on the 2 workers, 2 each."""
    if shutil.which("mpirun.mpich") is None:
        reason = "mpirun.mpich not found (apt-get install mpich)"
        if IN_CI:
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason)
    run = run_job(copy_example("mpi-mpich-allreduce", tmp_path) / "job.yaml")
    succeeded(run, "mpijob", "mpi-mpich-allreduce")
    ranks = re.findall(
        r"rank (\d)/4 \(MPICH Version: [\d.]+\), 2 ranks on its host: "
        r"allreduce\(rank \+ 1\) = 10, array allreduce = 10\.0",
        run.stdout,
    )
    assert sorted(ranks) == ["0", "1", "2", "3"], run.describe()
    launcher_one(run, r"rank 0: 4 ranks over MPICH on 2 hosts, expected 10, got 10: OK")


def test_mpi_v1_allreduce(tmp_path: Path) -> None:
    run = run_job(copy_example("mpi-v1-allreduce", tmp_path) / "job.yaml")
    succeeded(run, "mpijob", "mpi-v1-allreduce")
    check_allreduce(run, "mpi-v1-allreduce")
    # v1: kubectl delivered by the init container, orted started through kubexec.sh's kubectl exec
    assert re.search(r"^launcher/kubectl-delivery\s*\| kubectl delivered to", run.stdout, re.M), (
        run.describe()
    )
    # kubexec.sh traces `kubectl exec <worker> -- /bin/sh -c orted ...` (set -x); the two workers'
    # traces run concurrently and their characters may interleave, so look for the pieces
    trace = "\n".join(m[0] for m in launcher_lines(run, r".*kubectl.*"))
    assert "/opt/kube/kubectl" in trace and "orted" in trace, run.describe()
    assert all(f"mpi-v1-allreduce-worker-{i}" in trace for i in (0, 1)), run.describe()


def test_mpi_v1alpha2_statefulset(tmp_path: Path) -> None:
    """The original mpi-operator's procedure: workers of a StatefulSet, a launcher batch Job whose
    kubectl-delivery waits for them, mpirun through kubexec.sh; once Succeeded (cleanPodPolicy
    Running) the worker StatefulSet is scaled to 0 and its pods go, read back through the API."""
    from kubernetes import client, config

    copy_example("mpi-v1-allreduce", tmp_path)  # allreduce.py is a symlink to its program
    job = copy_example("mpi-v1alpha2-statefulset", tmp_path) / "job.yaml"
    kubeconfig = tmp_path / "kubeconfig"
    with run_kept(job, kubeconfig) as kept:
        api = config.new_client_from_config(str(kubeconfig))
        apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
        mpijob = client.CustomObjectsApi(api).get_namespaced_custom_object(
            "kubeflow.org", "v1alpha2", "default", "mpijobs", "mpi-v1alpha2"
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            sts = apps.read_namespaced_stateful_set("mpi-v1alpha2-worker", "default")
            workers = core.list_namespaced_pod("default", label_selector="mpi_role_type=worker").items
            if sts.spec.replicas == 0 and sts.status.replicas == 0 and not workers:
                break
            time.sleep(0.5)
        config_map = core.read_namespaced_config_map("mpi-v1alpha2-config", "default")
        launcher = client.BatchV1Api(api).read_namespaced_job("mpi-v1alpha2-launcher", "default")
    run = kept.result()
    succeeded(run, "mpijob", "mpi-v1alpha2")
    check_allreduce(run, "mpi-v1alpha2")
    assert sts.spec.replicas == 0 and sts.status.replicas == 0 and workers == [], run.describe()
    assert sts.spec.pod_management_policy == "Parallel" and sts.spec.service_name == "mpi-v1alpha2-worker"
    assert config_map.data["hostfile"] == "mpi-v1alpha2-worker-0 slots=2\nmpi-v1alpha2-worker-1 slots=2\n"
    assert launcher.status.succeeded == 1 and launcher.spec.template.spec.service_account_name == (
        "mpi-v1alpha2-launcher"
    )
    types = [(c["type"], c["status"]) for c in mpijob["status"]["conditions"]]
    assert types == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")], mpijob["status"]
    assert mpijob["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}, mpijob["status"]
    # the launcher's init container waited for the hostfile's workers before mpirun started
    waited = launcher_lines(run, r"mpi-v1alpha2-worker-\d is running")
    delivered = run.stdout.index("kubectl delivered to")
    assert len(waited) == 2 and delivered < run.stdout.index("rank 0: 4 ranks"), run.describe()


def test_mpi_pytorch(tmp_path: Path) -> None:
    require_modules("torch", "sklearn")
    run = run_job(copy_example("mpi-pytorch", tmp_path) / "job.yaml")
    succeeded(run, "mpijob", "mpi-pytorch")
    # mpirun forwards each rank's output as it comes: two ranks' lines may share one log line
    joined = re.findall(r"rank (\d)/4 on \S+: gloo joined via mpi-pytorch-worker-0:\d+", run.stdout)
    assert sorted(joined) == ["0", "1", "2", "3"], run.describe()
    final = launcher_one(
        run,
        r"final loss (?P<last>[\d.]+) \(first epoch (?P<first>[\d.]+)\), test accuracy "
        r"(?P<acc>[\d.]+), 4 ranks, weights identical on all ranks: True",
    )
    last, first, acc = floats(final, "last", "first", "acc")
    assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def test_chainer_mpi(tmp_path: Path) -> None:
    require_modules("sklearn")
    run = run_job(copy_example("chainer-mpi", tmp_path) / "job.yaml")
    succeeded(run, "chainerjob", "chainer-mpi")
    assert len(run.find(r"rank \d/2 on chainer-mpi-master-", "master-0")) == 2, run.describe()
    trained_on_digits(run, 2, "master-0")


def chainer_image_map(tmp_path: Path) -> dict[str, str]:
    """The run's env mapping ChainerMN's image to KUBETRAIN_E2E_CHAINER_PYTHON (Chainer's own
    virtualenv: numpy<2; .ci/run builds it with scripts/chainer-env)."""
    return interpreter_image_map(
        "KUBETRAIN_E2E_CHAINER_PYTHON",
        "set it to the python scripts/chainer-env prints",
        "everpeace/chainermn*",
        tmp_path,
    )


def test_chainermn_real(tmp_path: Path) -> None:
    """job-chainermn.yaml with real Chainer 7.8.1 + ChainerMN, its image mapped to the Chainer
    interpreter by the node's image map (mpiexec finds it as `python` on PATH).

    Chainer needs numpy<2, so it has its own virtualenv (requirements-chainer.txt; .ci/run builds
    it with scripts/chainer-env and sets KUBETRAIN_E2E_CHAINER_PYTHON)."""
    env = chainer_image_map(tmp_path)
    job = copy_example("chainer-mpi", tmp_path) / "job-chainermn.yaml"
    run = run_job(job, env=env)
    succeeded(run, "chainerjob", "chainermn")
    # both ranks in the master pod, on real Chainer with ChainerMN's naive communicator
    started = run.find(r"rank (\d)/2 on chainermn-master-\S+: chainer 7\.8\.1, NaiveCommunicator", "master-0")
    assert sorted(m[1] for m in started) == ["0", "1"], run.describe()
    # scatter_dataset gave each rank half of the 1500 training samples
    shards = run.find(r"rank (\d)/2: (\d+) training, (\d+) test samples", "master-0")
    assert sorted((m[1], m[2]) for m in shards) == [("0", "750"), ("1", "750")], run.describe()
    # each rank's own loss fell (first epoch -> last)
    losses = run.find(r"rank (?P<rank>\d)/2: loss (?P<first>[\d.]+) -> (?P<last>[\d.]+)", "master-0")
    assert sorted(m["rank"] for m in losses) == ["0", "1"], run.describe()
    for m in losses:
        first, last = floats(m, "first", "last")
        assert last < first / 2, run.describe()
    trained_on_digits(run, 2, "master-0")


def test_chainer_workersets_real(tmp_path: Path) -> None:
    """chainer-workersets/job.yaml: chainer-operator's distributed form (a master Job and a
    StatefulSet of 2 workers) with real Chainer 7.8.1 + ChainerMN, one rank per pod. The
    operator's own init containers run: `tutum/curl` downloads kubectl (the node's curl serves
    it), the hostfile generator asks the API server with the launcher's service-account token
    (RBAC: its Role's resourceNames), and mpiexec reaches the workers with `kubectl exec`, its
    TCP BTL on the pods' `eth0` despite the operator's `btl_tcp_if_exclude=lo,docker0`."""
    env = chainer_image_map(tmp_path)
    job = copy_example("chainer-workersets", tmp_path) / "job.yaml"
    run = run_job(job, env=env)
    succeeded(run, "chainerjob", "chainer-workersets")
    # kubectl came from the node's curl; the generator found both workers Running through the API
    # (init containers' lines are prefixed `master-0/<container> |`)
    kubectl = r"\+ curl -LO https://storage\.googleapis\.com/kubernetes-release/release/v[\d.]+/bin/linux/amd64/kubectl"
    assert re.search(r"kubectl-downloader +\| " + kubectl, run.stdout), run.describe()
    found = set(
        re.findall(
            r"hostfile-generator +\| \+ echo (chainer-workersets-workerset-ws0-\d) slots=1", run.stdout
        )
    )
    assert found == {"chainer-workersets-workerset-ws0-0", "chainer-workersets-workerset-ws0-1"}, (
        run.describe()
    )
    # one rank in each pod: the master's and both workers'
    started = run.find(
        r"rank (\d)/3 on (chainer-workersets-\S+): chainer 7\.8\.1, NaiveCommunicator", "master-0"
    )
    hosts = {m[2] for m in started}
    assert sorted(m[1] for m in started) == ["0", "1", "2"], run.describe()
    assert len(hosts) == 3 and sum(h.startswith("chainer-workersets-master-") for h in hosts) == 1, hosts
    assert {"chainer-workersets-workerset-ws0-0", "chainer-workersets-workerset-ws0-1"} <= hosts
    shards = run.find(r"rank (\d)/3: (\d+) training, (\d+) test samples", "master-0")
    assert sorted((m[1], m[2]) for m in shards) == [("0", "500"), ("1", "500"), ("2", "500")], run.describe()
    losses = run.find(r"rank (?P<rank>\d)/3: loss (?P<first>[\d.]+) -> (?P<last>[\d.]+)", "master-0")
    assert sorted(m["rank"] for m in losses) == ["0", "1", "2"], run.describe()
    for m in losses:
        first, last = floats(m, "first", "last")
        assert last < first / 2, run.describe()
    trained_on_digits(run, 3, "master-0")
    # the master done, the operator scaled the worker StatefulSet to 0: no worker pod left
    assert re.search(r"chainerjob/chainer-workersets: Complete\s+ws0 none left of 2", run.stderr), (
        run.describe()
    )


def test_caffe2_workers(tmp_path: Path) -> None:
    require_modules("sklearn")
    run = run_job(copy_example("caffe2-workers", tmp_path) / "job.yaml")
    succeeded(run, "caffe2job", "caffe2-workers")
    digests = set()
    for shard in (0, 1):
        replica = f"worker-{shard}"
        run.one(
            rf"shard {shard}/2 run \d+: CAFFE2_CONFIG task \{{'type': 'worker', 'index': {shard}\}}, "
            r"2 workers",
            replica,
        )
        done = run.one(
            r"loss (?P<first>[\d.]+) -> (?P<last>[\d.]+), test accuracy (?P<acc>[\d.]+), "
            r"weights (?P<digest>\w+) identical on all 2 shards: True",
            replica,
        )
        first, last, acc = floats(done, "first", "last", "acc")
        assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()
        digests.add(done["digest"])
    assert len(digests) == 1, digests


@pytest.mark.parametrize("example", ["mpi-v2beta1-allreduce", "mpi-v1-allreduce"])
def test_malformed_mpirun_fails_the_job_with_the_launchers_exit_code(tmp_path: Path, example: str) -> None:
    """`mpirun --no-such-option`: the launcher exits non-zero, the job is Failed, and the Failed
    condition's message says with which exit code."""
    run, message = _malformed(tmp_path, example)
    assert not launcher_lines(run, r"rank \d/4"), run.describe()  # nothing ran
    assert re.search(r"exited with code [1-9]\d*", message), message


def _malformed(tmp_path: Path, example: str) -> tuple[Run, str]:
    job_file = copy_example(example, tmp_path) / "job.yaml"
    job = yaml.safe_load(job_file.read_text())
    job["metadata"]["name"] = name = f"bad-{example}"
    container = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    container["command"] = ["mpirun", "--no-such-option", "-np", "4", "python", "allreduce.py"]
    container.pop("args", None)
    job["spec"]["runPolicy"]["backoffLimit"] = 0  # one launcher attempt (the default retries 6 times)
    # Never: with OnFailure the kubelet restarts mpirun in place and, at the backoff limit, the Job
    # controller deletes the pod (as Kubernetes does), leaving no failed pod to read the code from.
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    job_file.write_text(yaml.safe_dump(job))
    run = run_job(job_file, "--timeout", "90")
    assert run.returncode == 1, run.describe()
    failed = re.search(rf"mpijob/{name} Failed: (?P<message>.*)", run.stderr)
    assert failed, run.describe()
    launcher_one(run, r'unknown option "--no-such-option"')
    return run, failed["message"]
