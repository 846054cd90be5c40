"""The MPI plugin through the TrainJob planner: the SSH Secret, the hostfile ConfigMap and the
JobSet compared with the objects upstream v2.3.0's controller builds for its shipped
`deepspeed-distributed` runtime (launcher as a node) and for the launcher + trainer-node runtime of
its own test `trainingruntime_test.go` ("succeeded to build JobSet with OpenMPI values from the
TrainJob"); upstream `plugins/mpi/mpi.go`, then `plugins/jobset`."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed, PatchObject, Plan
from kubetrain.kinds.trainjob.planner import MPI_CHILDREN
from kubetrain.kinds.trainjob.planner import plan as trainjob_plan
from kubetrain.kube.labels import matches
from tests.unit.kinds.trainjob.test_trainjob_plan import (
    CTR_KEY,
    NOW,
    OWNER,
    shipped_runtime,
    stored,
    trainjob_on,
)

JsonDict = dict[str, Any]
IMAGE = "ghcr.io/kubeflow/trainer/deepspeed-runtime"
KEYS = (
    b"-----BEGIN EC PRIVATE KEY-----\nfixed\n-----END EC PRIVATE KEY-----\n",
    b"ecdsa-sha2-nistp521 AAAA\n",
)


def deepspeed_distributed() -> JsonDict:
    return shipped_runtime("deepspeed_distributed")


def trainjob(name: str = "tj", **spec: Any) -> JsonDict:
    return trainjob_on("deepspeed-distributed", name, **spec)


def plan_of(job: JsonDict, *children: JsonDict, runtime: JsonDict | None = None, keys: bool = True) -> Plan:
    """The plan on a cluster holding `runtime` (deepspeed-distributed) and `children`, with the
    fixed key pair unless `keys` is False (then the real generator)."""
    others: dict[str, list[JsonDict]] = {CTR_KEY: [runtime or deepspeed_distributed()]}
    for child in children:
        others.setdefault(f"{child['apiVersion']}/{child['kind']}", []).append(child)
    keygen = (lambda: KEYS) if keys else None
    return trainjob_plan(job, Observed(others=others), NOW, ControllerConfig(), keygen=keygen)


def created(p: Plan) -> dict[str, JsonDict]:
    """The plan's creates by kind (each kind once)."""
    out: dict[str, JsonDict] = {}
    for action in p.actions:
        assert isinstance(action, CreateObject), p.actions
        assert action.obj["kind"] not in out
        out[action.obj["kind"]] = action.obj
    return out


def existing(obj: JsonDict) -> JsonDict:
    """A child as the API server returns it (with a uid; a Secret or ConfigMap has no status)."""
    out = copy.deepcopy(obj)
    out["metadata"]["uid"] = f"uid-{obj['kind'].lower()}"
    return out


def ssh_volume(name: str = "tj") -> JsonDict:
    return {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": f"{name}-mpi-ssh-auth",
            "defaultMode": 0o400,
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
        },
    }


def hostfile_volume(name: str = "tj") -> JsonDict:
    items = [{"key": "hostfile", "path": "hostfile", "mode": 0o444}]
    return {"name": "mpi-hostfile", "configMap": {"name": f"{name}-mpi-hostfile", "items": items}}


def openmpi_env(slots: int) -> list[JsonDict]:
    return [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    ]


def pod_spec(jobset: JsonDict, rjob: str) -> JsonDict:
    (found,) = [r for r in jobset["spec"]["replicatedJobs"] if r["name"] == rjob]
    return dict(found["template"]["spec"]["template"]["spec"])


def hostfile_config_map(hostfile: str, name: str = "tj") -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-mpi-hostfile", "namespace": "ns", "ownerReferences": [OWNER]},
        "data": {"hostfile": hostfile},
    }


def ssh_secret() -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "tj-mpi-ssh-auth",
            "namespace": "ns",
            # kubetrain's addition, for its Secret cache (docs/differences.md#own-secrets)
            "labels": {"training.kubeflow.org/operator-name": "trainjob-controller"},
            "ownerReferences": [OWNER],
        },
        "type": "kubernetes.io/ssh-auth",
        "immutable": True,
        "data": {
            "ssh-privatekey": base64.b64encode(KEYS[0]).decode(),
            "ssh-publickey": base64.b64encode(KEYS[1]).decode(),
        },
    }


def deepspeed_jobset(trainer_env: list[JsonDict], command: list[str], nodes: int, slots: int) -> JsonDict:
    """The JobSet upstream builds for TrainJob `tj` on deepspeed-distributed: the runtime's two
    jobs, `node` (sshd, `nodes - 1` pods) and the trainer `launcher` (mpirun, one pod), with the
    SSH volume on both, the hostfile and OpenMPI's env on the launcher, the trainer's env on both."""
    runtime = deepspeed_distributed()
    spec = copy.deepcopy(runtime["spec"]["template"]["spec"])
    node, launcher = spec["replicatedJobs"]
    node_job, launcher_job = node["template"]["spec"], launcher["template"]["spec"]
    node_job |= {"parallelism": nodes - 1, "completions": nodes - 1}
    launcher_job |= {"parallelism": 1, "completions": 1}
    launcher["replicas"] = 1
    node_pod, launcher_pod = node_job["template"]["spec"], launcher_job["template"]["spec"]
    node_pod["volumes"] = [ssh_volume()]
    launcher_pod["volumes"] = [ssh_volume(), hostfile_volume()]
    ssh_mount = {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    node_pod["containers"][0] |= {
        "volumeMounts": [ssh_mount],
        **({"env": trainer_env} if trainer_env else {}),
    }
    launcher_pod["containers"][0] |= {
        **({"command": command} if command else {}),
        "volumeMounts": [ssh_mount, {"name": "mpi-hostfile", "mountPath": "/etc/mpi"}],
        "env": [*openmpi_env(slots), *trainer_env],
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "tj", "namespace": "ns", "ownerReferences": [OWNER]},
        "spec": spec,
    }


def test_deepspeed_distributed_with_two_nodes_gets_upstreams_secret_hostfile_and_jobset() -> None:
    """runLauncherAsNode: one `node` pod plus the launcher, both hosts of the hostfile, in the
    runtime's job order (node first); the trainer's command runs on the launcher only, its env
    reaches both; slots 1 (the runtime's numProcPerNode, no GPUs)."""
    env = [{"name": "EPOCHS", "value": "3"}]
    command = ["mpirun", "python", "train.py"]
    p = plan_of(trainjob(trainer={"numNodes": 2, "command": command, "env": env}))
    assert [type(a) for a in p.actions] == [CreateObject] * 3 and not p.events and not p.retry
    objs = created(p)
    assert objs["Secret"] == ssh_secret()
    assert objs["ConfigMap"] == hostfile_config_map("tj-node-0-0.tj slots=1\ntj-launcher-0-0.tj slots=1\n")
    assert objs["JobSet"] == deepspeed_jobset(env, command, nodes=2, slots=1)


def test_trainer_num_nodes_and_num_proc_per_node_make_the_hostfile() -> None:
    """4 nodes (3 `node` pods and the launcher) of 2 slots each."""
    p = plan_of(trainjob(trainer={"numNodes": 4, "numProcPerNode": 2, "command": ["mpirun"]}))
    objs = created(p)
    hosts = [f"tj-node-0-{i}.tj" for i in range(3)] + ["tj-launcher-0-0.tj"]
    assert objs["ConfigMap"]["data"]["hostfile"] == "".join(f"{h} slots=2\n" for h in hosts)
    assert objs["JobSet"] == deepspeed_jobset([], ["mpirun"], nodes=4, slots=2)


@pytest.mark.parametrize(("nodes", "pods"), [(1, 1), (2, 1), (3, 2)])
def test_the_launcher_takes_one_node_but_the_node_job_keeps_one_pod(nodes: int, pods: int) -> None:
    """upstream `max(numNodes - 1, 1)`: numNodes 1 still runs one `node` pod beside the launcher."""
    jobset = created(plan_of(trainjob(trainer={"numNodes": nodes})))["JobSet"]
    node = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (node["parallelism"], node["completions"]) == (pods, pods)


def launcher_and_trainer_nodes(**mpi: Any) -> JsonDict:
    """A runtime shaped like upstream's test one: a `launcher` job (no ancestor label; its `node`
    container runs mpirun) before the trainer `node` job."""
    container = {"name": "node", "image": "test:runtime", "command": ["runtime"], "args": ["runtime"]}
    launcher = {"name": "node", "command": ["mpirun"], "args": ["echo.sh"]}
    policy = {"numProcPerNode": 1, "mpiImplementation": "OpenMPI", "sshAuthMountPath": "/root/.ssh"}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "test-runtime"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "mpi": {**policy, "runLauncherAsNode": False, **mpi}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "launcher",
                            "replicas": 1,
                            "template": {"spec": {"template": {"spec": {"containers": [launcher]}}}},
                        },
                        {
                            "name": "node",
                            "replicas": 1,
                            "template": {
                                "metadata": {
                                    "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                                },
                                "spec": {"template": {"spec": {"containers": [container]}}},
                            },
                        },
                    ]
                }
            },
        },
    }


def test_upstreams_openmpi_values_from_the_trainjob() -> None:
    """upstream trainingruntime_test.go: numNodes 2 and numProcPerNode 8 from the TrainJob; the
    launcher is no host (runLauncherAsNode false), both trainer nodes are, 8 slots each."""
    runtime = launcher_and_trainer_nodes()
    job = trainjob_on("test-runtime", trainer={"numNodes": 2, "numProcPerNode": 8})
    objs = created(plan_of(job, runtime=runtime))
    assert objs["ConfigMap"] == hostfile_config_map("tj-node-0-0.tj slots=8\ntj-node-0-1.tj slots=8\n")
    jobset = objs["JobSet"]
    launcher, node = jobset["spec"]["replicatedJobs"]
    assert (launcher["template"]["spec"]["parallelism"], node["template"]["spec"]["parallelism"]) == (1, 2)
    assert pod_spec(jobset, "launcher") == {
        "containers": [
            {
                "name": "node",
                "command": ["mpirun"],
                "args": ["echo.sh"],
                "volumeMounts": [
                    {"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"},
                    {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
                ],
                "env": openmpi_env(8),
            }
        ],
        "volumes": [ssh_volume(), hostfile_volume()],
    }
    assert pod_spec(jobset, "node") == {
        "containers": [
            {
                "name": "node",
                "image": "test:runtime",
                "command": ["runtime"],
                "args": ["runtime"],
                "volumeMounts": [{"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"}],
            }
        ],
        "volumes": [ssh_volume()],
    }


@pytest.mark.parametrize(
    ("runtime_procs", "trainer", "slots"),
    [
        (1, {}, 1),
        (1, {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}}, 4),  # a runtime's 1: the GPUs
        (1, {"resourcesPerNode": {"requests": {"nvidia.com/gpu": "1"}}}, 1),  # one GPU: stays 1
        (3, {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}}, 3),  # the runtime's own count
        (3, {"numProcPerNode": 5, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}}, 5),
    ],
)
def test_slots_per_node_as_upstream_resolves_them(runtime_procs: int, trainer: JsonDict, slots: int) -> None:
    runtime = launcher_and_trainer_nodes(numProcPerNode=runtime_procs)
    job = trainjob_on("test-runtime", trainer={"numNodes": 1, **trainer})
    objs = created(plan_of(job, runtime=runtime))
    assert objs["ConfigMap"]["data"]["hostfile"] == f"tj-node-0-0.tj slots={slots}\n"
    env = pod_spec(objs["JobSet"], "launcher")["containers"][0]["env"]
    assert env == openmpi_env(slots)


def test_the_runtimes_gpus_count_when_the_trainjob_names_no_resources() -> None:
    runtime = launcher_and_trainer_nodes()
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "2"}
    }
    objs = created(plan_of(trainjob_on("test-runtime", trainer={}), runtime=runtime))
    assert objs["ConfigMap"]["data"]["hostfile"] == "tj-node-0-0.tj slots=2\n"


def test_the_hostfile_uses_the_jobsets_subdomain_and_replicas() -> None:
    """The pods' DNS names are `<trainjob>-<job>-<replica>-<pod>.<subdomain>`: a runtime's
    `network.subdomain` and a `node` job of 2 replicas (the trainer job's replicas are forced to 1
    in the JobSet, not in the runtime's endpoints)."""
    runtime = launcher_and_trainer_nodes()
    spec = runtime["spec"]["template"]["spec"]
    spec["network"] = {"subdomain": "mpi"}
    spec["replicatedJobs"][1]["replicas"] = 2
    objs = created(plan_of(trainjob_on("test-runtime", trainer={"numNodes": 1}), runtime=runtime))
    assert objs["ConfigMap"]["data"]["hostfile"] == "tj-node-0-0.mpi slots=1\ntj-node-1-0.mpi slots=1\n"
    assert objs["JobSet"]["spec"]["replicatedJobs"][1]["replicas"] == 1


def test_no_trainer_still_gets_the_mpi_wiring() -> None:
    """Unlike torch's, the MPI plugin needs no `trainer`: the runtime's own launcher command runs."""
    objs = created(plan_of(trainjob()))
    assert objs["JobSet"] == deepspeed_jobset([], [], nodes=2, slots=1)
    assert objs["ConfigMap"]["data"]["hostfile"] == "tj-node-0-0.tj slots=1\ntj-launcher-0-0.tj slots=1\n"


def test_the_key_pair_is_a_real_ecdsa_p521_pair_as_upstream_makes_it() -> None:
    secret = created(plan_of(trainjob(trainer={"numNodes": 2}), keys=False))["Secret"]
    private_pem = base64.b64decode(secret["data"]["ssh-privatekey"])
    public_line = base64.b64decode(secret["data"]["ssh-publickey"])
    assert private_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(private_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp521r1"
    mine = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    assert public_line == mine + b"\n" and public_line.startswith(b"ecdsa-sha2-nistp521 ")


def test_once_everything_exists_the_plan_is_empty_and_the_secret_is_never_remade() -> None:
    job = trainjob(trainer={"numNodes": 2, "command": ["mpirun"]})
    objs = created(plan_of(job))
    children = (existing(objs["Secret"]), existing(objs["ConfigMap"]), stored(objs["JobSet"]))
    again = plan_of(job, *children, keys=False)
    assert not again.actions and not again.events, again


def test_a_stale_hostfile_is_brought_in_line() -> None:
    """Upstream re-applies the ConfigMap on every pass: after the TrainJob's numNodes changed (while
    suspended), the hostfile follows the new pod set, and only its data is patched."""
    job = trainjob(trainer={"numNodes": 2}, suspend=True)
    objs = created(plan_of(job))
    job["spec"]["trainer"]["numNodes"] = 3
    p = plan_of(job, existing(objs["Secret"]), existing(objs["ConfigMap"]), stored(objs["JobSet"]))
    patches = [a for a in p.actions if isinstance(a, PatchObject)]
    assert [(a.ref.kind, a.patch) for a in patches] == [
        (
            "ConfigMap",
            {
                "data": {
                    "hostfile": "tj-node-0-0.tj slots=1\ntj-node-0-1.tj slots=1\ntj-launcher-0-0.tj slots=1\n"
                }
            },
        )
    ]


@pytest.mark.parametrize(("kind", "name"), [("Secret", "tj-mpi-ssh-auth"), ("ConfigMap", "tj-mpi-hostfile")])
def test_a_same_named_child_it_does_not_control_is_refused_and_no_jobset_is_made(
    kind: str, name: str
) -> None:
    """kubetrain refuses a namesake, as it does a JobSet's (docs/differences.md#trainjob-mpi)."""
    foreign = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "ns", "uid": "x"}}
    p = plan_of(trainjob(trainer={"numNodes": 2}), foreign)
    assert p.retry and "JobSet" not in [a.obj["kind"] for a in p.actions if isinstance(a, CreateObject)]
    (event,) = p.events
    assert (event.reason, event.message) == (
        "ErrResourceExists",
        f'{kind} "{name}" already exists and is not controlled by TrainJob "tj"',
    )


def test_an_implementation_other_than_openmpi_fails_the_objects_with_upstreams_error() -> None:
    """The CRD allows "" besides OpenMPI; upstream's plugin returns an error for it, so nothing is
    built and the TrainJob is retried with a Warning."""
    runtime = deepspeed_distributed()
    runtime["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = ""
    p = plan_of(trainjob(trainer={"numNodes": 2}), runtime=runtime)
    assert not p.actions and p.retry
    (event,) = p.events
    assert (event.type, event.reason) == ("Warning", "TrainJobResourcesCreationFailed")
    assert (
        event.message
        == 'TrainJob resources reconciliation failed: MPI implementation for "" doesn\'t supported'
    )


def test_the_mpi_policy_gets_no_not_implemented_warning() -> None:
    p = plan_of(trainjob(trainer={"numNodes": 2}))
    assert not [e for e in p.events if e.reason == "MLPolicyNotImplemented"]


def test_the_secret_is_seen_by_the_label_its_cache_selects() -> None:
    """The Secret child type's selector is the label the Secret carries (or the cache would miss it
    and the planner would create it forever)."""
    (secret_type,) = [c for c in MPI_CHILDREN if c.kind == "Secret"]
    assert secret_type.label_selector is not None
    assert matches(secret_type.label_selector, ssh_secret()["metadata"]["labels"])
    assert not matches(secret_type.label_selector, {})
