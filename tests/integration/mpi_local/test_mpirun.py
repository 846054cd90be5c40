"""mpirun in a launcher pod reaches two worker pods through the node agent, with real OpenMPI.

Hand-written objects, no operator: what mpi-operator v2beta1 creates (headless Service, hostfile
ConfigMap, workers running ``/usr/sbin/sshd -De``, a launcher batch/v1 Job whose mpirun uses
``ssh``) and what the v1 training operator creates (a launcher Pod whose ``kubectl-delivery``
init container delivers kubectl, ``kubexec.sh`` as the rsh agent, workers running ``sleep``).
"""

from __future__ import annotations

import json
import re
from ipaddress import ip_address, ip_network
from typing import Any

import pytest

from kubetrain.embedded.node import KubeAPI, NodeAgent

from .conftest import PY, create, job_condition, job_pods, pod_finished, read_log, require_openmpi

JsonDict = dict[str, Any]

pytestmark = pytest.mark.usefixtures("openmpi")

ALLREDUCE = """\
import os, socket
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1, op=MPI.SUM)
print(f"rank={comm.rank} size={comm.size} host={socket.gethostname()} "
      f"ip={os.environ.get('KUBETRAIN_POD_IP')} sum={total}", flush=True)
"""

KUBEXEC = """\
#!/bin/sh
set -x
POD_NAME=$1
shift
/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"
"""


@pytest.fixture
def openmpi() -> None:
    require_openmpi()


def configmap(name: str, data: dict[str, str]) -> JsonDict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def worker(job: str, index: int, command: list[str], **spec: Any) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job}-worker-{index}", "labels": {"job": job, "role": "worker"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "worker", "image": "mpioperator/openmpi", "command": command}],
            **spec,
        },
    }


RANK_LINE = re.compile(r"rank=(\d) size=(\d) host=(\S+) ip=(\S+) sum=(\d+)")


def check_allreduce(log: str, workers: list[str], pod_cidr: str) -> None:
    """4 ranks, 2 on each worker pod (their hostnames and pod IPs), all with the right sum."""
    ranks = RANK_LINE.findall(log)  # mpirun's forwarded output may split lines: do not rely on them
    assert sorted(r[0] for r in ranks) == ["0", "1", "2", "3"], log
    assert all(r[1] == "4" and r[4] == "10" for r in ranks), log
    assert sorted(r[2] for r in ranks) == sorted(workers * 2), log
    ips = {r[3] for r in ranks}
    assert len(ips) == 2 and all(ip_address(ip) in ip_network(pod_cidr) for ip in ips), log


async def launch_v2beta1_style(api: KubeAPI, job: str, script: str) -> str:
    """What mpi-operator v2beta1 creates, for 2 workers x 2 slots running `script` with
    `mpirun -np 4`; the launcher pod's log once its Job completed."""
    await create(
        api,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": job},
            "spec": {"clusterIP": "None", "selector": {"job": job}},
        },
    )
    hosts = "".join(f"{job}-worker-{i}.{job}.default.svc slots=2\n" for i in range(2))
    await create(api, configmap(f"{job}-config", {"hostfile": hosts}))
    await create(api, configmap(f"{job}-app", {"app.py": script}))
    for i in range(2):
        await create(
            api, worker(job, i, ["/usr/sbin/sshd", "-De"], hostname=f"{job}-worker-{i}", subdomain=job)
        )
    launcher = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{job}-launcher"},
        "spec": {
            "backoffLimit": 0,
            "podReplacementPolicy": "Failed",
            "template": {
                "metadata": {"labels": {"job": job, "role": "launcher"}},
                "spec": {
                    "hostname": f"{job}-launcher",
                    "subdomain": job,
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "launcher",
                            "image": "mpioperator/openmpi",
                            "command": ["mpirun", "-np", "4", "python", "/app/app.py"],
                            "env": [
                                {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
                                {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
                                {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
                                {"name": "OMPI_MCA_orte_set_default_slots", "value": "2"},
                            ],
                            "volumeMounts": [
                                {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                                {"name": "app", "mountPath": "/app"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "mpi-job-config", "configMap": {"name": f"{job}-config"}},
                        {"name": "app", "configMap": {"name": f"{job}-app"}},
                    ],
                },
            },
        },
    }
    await create(api, launcher)
    workers = tuple(f"{job}-worker-{i}" for i in range(2))
    done = await job_condition(api, f"{job}-launcher", "Complete", timeout=90, also=workers)
    assert done["status"]["succeeded"] == 1
    (pod,) = await job_pods(api, f"{job}-launcher")
    return await read_log(api, pod["metadata"]["name"])


async def test_ssh_path_v2beta1_style(api: KubeAPI, plane: NodeAgent) -> None:
    log = await launch_v2beta1_style(api, "pi", ALLREDUCE)
    check_allreduce(log, ["pi-worker-0", "pi-worker-1"], plane.network.pod_cidr)


CHATTY = """\
import time
from mpi4py import MPI
for i in range(20):
    MPI.COMM_WORLD.Barrier()  # the ranks print at the same moments, as training loops' logs do
    print(f"rank {MPI.COMM_WORLD.rank} line {i} " + "x" * 60, flush=True)
    time.sleep(0.02)
"""


async def test_ranks_lines_stay_whole_with_the_nodes_pythonunbuffered(
    api: KubeAPI, plane: NodeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mpirun forwards each write of a rank as it comes; a Python rank under PYTHONUNBUFFERED=1
    writes a print's text and its newline apart, so two ranks' lines merged in the launcher's
    log. The node's own PYTHONUNBUFFERED (a pod that sets it keeps it) is not passed to MPI."""
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # in the node's environment, inherited by pods
    log = await launch_v2beta1_style(api, "chatty", CHATTY)
    lines = [line for line in log.splitlines() if line.strip()]
    whole = re.compile(r"rank [0-3] line \d+ x{60}")
    broken = [line for line in lines if not whole.fullmatch(line)]
    assert not broken, "\n".join(broken[:10])
    assert len(lines) == 80


async def test_kubexec_path_v1_style(api: KubeAPI, plane: NodeAgent) -> None:
    job = "pv"
    hosts = "".join(f"{job}-worker-{i} slots=2\n" for i in range(2))
    await create(api, configmap(f"{job}-config", {"hostfile": hosts, "kubexec.sh": KUBEXEC}))
    await create(api, configmap(f"{job}-app", {"allreduce.py": ALLREDUCE}))
    config_volume = {
        "name": "mpi-job-config",
        "configMap": {
            "name": f"{job}-config",
            "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}],
        },
    }
    for i in range(2):
        pod = worker(job, i, ["sleep", "365d"], volumes=[config_volume])
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}]
        await create(api, pod)
    launcher = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job}-launcher", "labels": {"job": job, "role": "launcher"}},
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [
                {
                    "name": "kubectl-delivery",
                    "image": "kubeflow/kubectl-delivery:latest",
                    "env": [
                        {"name": "TARGET_DIR", "value": "/opt/kube"},
                        {"name": "NAMESPACE", "value": "default"},
                    ],
                    "volumeMounts": [
                        {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
                        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                    ],
                }
            ],
            "containers": [
                {
                    "name": "launcher",
                    "image": "mpioperator/openmpi",
                    "command": ["mpirun", "-np", "4", "python", "/app/allreduce.py"],
                    "env": [
                        {"name": "OMPI_MCA_plm_rsh_agent", "value": "/etc/mpi/kubexec.sh"},
                        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
                    ],
                    "volumeMounts": [
                        {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
                        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                        {"name": "app", "mountPath": "/app"},
                    ],
                }
            ],
            "volumes": [
                {"name": "mpi-job-kubectl", "emptyDir": {}},
                {
                    "name": "mpi-job-config",
                    "configMap": {
                        "name": f"{job}-config",
                        "items": [
                            {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
                            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                        ],
                    },
                },
                {"name": "app", "configMap": {"name": f"{job}-app"}},
            ],
        },
    }
    await create(api, launcher)

    pod = await pod_finished(api, f"{job}-launcher", 90, also=(f"{job}-worker-0", f"{job}-worker-1"))
    log = await read_log(api, f"{job}-launcher")
    assert pod["status"]["phase"] == "Succeeded", log
    check_allreduce(log, [f"{job}-worker-0", f"{job}-worker-1"], plane.network.pod_cidr)
    delivery = await read_log(api, f"{job}-launcher", container="kubectl-delivery")
    assert "kubectl delivered to" in delivery and f"{job}-worker-1 is running" in delivery, delivery


async def test_malformed_mpirun_fails_the_launcher_with_its_exit_code(api: KubeAPI, plane: NodeAgent) -> None:
    launcher = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "bad-launcher"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "launcher",
                            "image": "mpioperator/openmpi",
                            "command": ["mpirun", "--no-such-option", "-np", "2", PY, "-c", "pass"],
                        }
                    ],
                }
            },
        },
    }
    await create(api, launcher)
    failed = await job_condition(api, "bad-launcher", "Failed")
    cond = next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")
    assert cond["reason"] == "BackoffLimitExceeded"
    assert cond["message"] == "Job has reached the specified backoff limit"
    (pod,) = await job_pods(api, "bad-launcher")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert pod["status"]["phase"] == "Failed"
    assert terminated["exitCode"] != 0, json.dumps(pod["status"])
