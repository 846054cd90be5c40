"""The MPI ML policy plugin (upstream v2.3.0 `plugins/mpi/mpi.go`): with a runtime whose mlPolicy
has `mpi`, the SSH key Secret and hostfile ConfigMap a launcher's mpirun needs, and the volumes,
mounts and OpenMPI env that wire them into the `launcher` and `node` replicated jobs.

`enforce` (`EnforceMLPolicy`), on the pod sets named `node` and `launcher`:

    node count       `trainer.numNodes`, less one for the launcher with `runLauncherAsNode` (min 1)
    slots            `trainer.numProcPerNode`, else the runtime's `numProcPerNode`; when that is 1,
                     the GPUs per node if more than 1
    volumes          `mpi-ssh-auth` (Secret `<trainjob>-mpi-ssh-auth`: id_rsa 0640, id_rsa.pub and
                     authorized_keys 0644, default 0400) on both; `mpi-hostfile` (ConfigMap
                     `<trainjob>-mpi-hostfile`, hostfile 0444) on the launcher
    `node` container mounts `mpi-ssh-auth` at `sshAuthMountPath`; the launcher's also mounts
                     `mpi-hostfile` at /etc/mpi and gets OMPI_MCA_orte_default_hostfile,
                     OMPI_MCA_orte_keep_fqdn_hostnames, OMPI_MCA_orte_set_default_slots and
                     OMPI_MCA_plm_rsh_args

`ssh_auth_secret` and `hostfile_config_map` are its `Build`: an immutable kubernetes.io/ssh-auth
Secret with an ECDSA P-521 key pair (made once; never rewritten), and a ConfigMap whose `hostfile`
lists `<endpoint> slots=<n>` for every pod of `node` (and `launcher` with `runLauncherAsNode`), in
the runtime's job order. OpenMPI is the only implementation upstream v2.3.0 has (its CRD allows
`OpenMPI` or ""); anything else fails the runtime's objects with upstream's error.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from typing import Any

from kubetrain.api.kinds import LABEL_OPERATOR_NAME
from kubetrain.kinds.mpijob.ssh import KeyPair
from kubetrain.kinds.trainjob.apply import as_dict, upsert, upsert_all
from kubetrain.kinds.trainjob.constants import (
    LAUNCHER,
    MPI_DEFAULT_SSH_AUTH_MOUNT_PATH,
    MPI_HOSTFILE_CONFIG_MAP_SUFFIX,
    MPI_HOSTFILE_DIR,
    MPI_HOSTFILE_MODE,
    MPI_HOSTFILE_NAME,
    MPI_HOSTFILE_VOLUME_NAME,
    MPI_IMPLEMENTATION_OPENMPI,
    MPI_SSH_AUTH_DEFAULT_MODE,
    MPI_SSH_AUTH_SECRET_SUFFIX,
    MPI_SSH_AUTH_VOLUME_NAME,
    MPI_SSH_AUTHORIZED_KEYS,
    MPI_SSH_PRIVATE_KEY,
    MPI_SSH_PRIVATE_KEY_FILE,
    MPI_SSH_PRIVATE_KEY_FILE_MODE,
    MPI_SSH_PUBLIC_KEY,
    MPI_SSH_PUBLIC_KEY_FILE,
    MPI_SSH_PUBLIC_KEY_FILE_MODE,
    NODE,
    OPENMPI_ENV_DEFAULT_SLOTS,
    OPENMPI_ENV_DEFAULT_VALUE_RSH_ARGS,
    OPENMPI_ENV_HOSTFILE_LOCATION,
    OPENMPI_ENV_KEEP_FQDN_HOSTNAMES,
    OPENMPI_ENV_KEY_RSH_ARGS,
    SECRET_TYPE_SSH_AUTH,
)
from kubetrain.kinds.trainjob.info import Info, gpus_per_node, runtime_resources_per_node

JsonDict = dict[str, Any]

SECRET_OPERATOR_NAME = "trainjob-controller"
"""The `training.kubeflow.org/operator-name` label kubetrain adds to the SSH Secret (upstream's has
no label): the operator's Secret cache selects on it, as for MPIJob's, instead of holding every
Secret of the cluster (docs/differences.md#own-secrets)."""


@dataclass(frozen=True)
class MPIPolicy:
    """The runtime's `mlPolicy.mpi` with the CRD's defaults, and the slots `enforce` resolved
    (upstream writes them back into the runtime info's policy)."""

    num_proc_per_node: int
    implementation: str
    ssh_auth_mount_path: str
    run_launcher_as_node: bool


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def policy_of(info: Info) -> MPIPolicy | None:
    """The runtime's MPI policy, defaulted as the CRD defaults it; None without one."""
    raw = as_dict(info.ml_policy).get("mpi")
    if not isinstance(raw, dict):
        return None
    implementation = raw.get("mpiImplementation", MPI_IMPLEMENTATION_OPENMPI)
    mount = raw.get("sshAuthMountPath")
    procs = _int(raw.get("numProcPerNode"))
    return MPIPolicy(
        num_proc_per_node=procs if procs is not None else 1,
        implementation=str(implementation) if implementation is not None else MPI_IMPLEMENTATION_OPENMPI,
        ssh_auth_mount_path=str(mount) if mount else MPI_DEFAULT_SSH_AUTH_MOUNT_PATH,
        run_launcher_as_node=raw.get("runLauncherAsNode") is True,
    )


def ssh_secret_name(trainjob_name: str) -> str:
    return f"{trainjob_name}{MPI_SSH_AUTH_SECRET_SUFFIX}"


def hostfile_name(trainjob_name: str) -> str:
    return f"{trainjob_name}{MPI_HOSTFILE_CONFIG_MAP_SUFFIX}"


def _slots(policy: MPIPolicy, info: Info, trainer: JsonDict | None) -> int:
    """`trainer.numProcPerNode`, else the runtime's; a runtime's 1 becomes the GPUs per node (> 1)."""
    if trainer is not None and _int(trainer.get("numProcPerNode")) is not None:
        return int(trainer["numProcPerNode"])
    if policy.num_proc_per_node != 1:
        return policy.num_proc_per_node
    resources = runtime_resources_per_node(info)
    if trainer is not None and isinstance(trainer.get("resourcesPerNode"), dict):
        resources = trainer["resourcesPerNode"]
    gpus = gpus_per_node(resources)
    return gpus if gpus > 1 else policy.num_proc_per_node


def _ssh_volume(trainjob_name: str) -> JsonDict:
    items = [
        {"key": MPI_SSH_PRIVATE_KEY, "path": MPI_SSH_PRIVATE_KEY_FILE, "mode": MPI_SSH_PRIVATE_KEY_FILE_MODE},
        {"key": MPI_SSH_PUBLIC_KEY, "path": MPI_SSH_PUBLIC_KEY_FILE, "mode": MPI_SSH_PUBLIC_KEY_FILE_MODE},
        {"key": MPI_SSH_PUBLIC_KEY, "path": MPI_SSH_AUTHORIZED_KEYS, "mode": MPI_SSH_PUBLIC_KEY_FILE_MODE},
    ]
    return {
        "name": MPI_SSH_AUTH_VOLUME_NAME,
        "secret": {
            "secretName": ssh_secret_name(trainjob_name),
            "items": items,
            "defaultMode": MPI_SSH_AUTH_DEFAULT_MODE,
        },
    }


def _hostfile_volume(trainjob_name: str) -> JsonDict:
    item = {"key": MPI_HOSTFILE_NAME, "path": MPI_HOSTFILE_NAME, "mode": MPI_HOSTFILE_MODE}
    return {
        "name": MPI_HOSTFILE_VOLUME_NAME,
        "configMap": {"name": hostfile_name(trainjob_name), "items": [item]},
    }


def _openmpi_env(slots: int) -> list[JsonDict]:
    return [
        {"name": OPENMPI_ENV_HOSTFILE_LOCATION, "value": f"{MPI_HOSTFILE_DIR}/{MPI_HOSTFILE_NAME}"},
        {"name": OPENMPI_ENV_KEEP_FQDN_HOSTNAMES, "value": "true"},
        {"name": OPENMPI_ENV_DEFAULT_SLOTS, "value": str(slots)},
        {"name": OPENMPI_ENV_KEY_RSH_ARGS, "value": OPENMPI_ENV_DEFAULT_VALUE_RSH_ARGS},
    ]


def unsupported(policy: MPIPolicy) -> str:
    """upstream's error for an implementation other than OpenMPI (its `%v` prints the pointer)."""
    return f'MPI implementation for "{policy.implementation}" doesn\'t supported'


def enforce(info: Info, trainjob: JsonDict) -> tuple[MPIPolicy | None, str]:
    """Edit `info` as the MPI plugin does: (the resolved policy, else None; upstream's error, or "")."""
    policy = policy_of(info)
    if policy is None:
        return None, ""
    spec = as_dict(trainjob.get("spec"))
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else None
    nodes = _int(trainer.get("numNodes")) if trainer is not None else None
    node_set = info.pod_set_by_name(NODE)
    if nodes is not None and node_set is not None:
        node_set.count = max(nodes - 1, 1) if policy.run_launcher_as_node else nodes
    slots = _slots(policy, info, trainer)
    policy = replace(policy, num_proc_per_node=slots)
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    for ps in info.pod_sets:
        if ps.name not in (NODE, LAUNCHER):
            continue
        upsert(ps.volumes, _ssh_volume(name), "name")
        if ps.name == LAUNCHER:
            upsert(ps.volumes, _hostfile_volume(name), "name")
        for container in ps.containers:
            if container.get("name") != NODE:
                continue
            mount = {"name": MPI_SSH_AUTH_VOLUME_NAME, "mountPath": policy.ssh_auth_mount_path}
            upsert_all(container, "volumeMounts", [mount], "mountPath")
            if ps.name != LAUNCHER:
                continue
            mount = {"name": MPI_HOSTFILE_VOLUME_NAME, "mountPath": MPI_HOSTFILE_DIR}
            upsert_all(container, "volumeMounts", [mount], "mountPath")
            if policy.implementation != MPI_IMPLEMENTATION_OPENMPI:
                return policy, unsupported(policy)
            upsert_all(container, "env", _openmpi_env(slots), "name")
    return policy, ""


def hostfile(info: Info, policy: MPIPolicy, endpoints: list[list[str]]) -> str:
    """`buildHostFileConfigMap`'s text: `<endpoint> slots=<n>` per pod of each host pod set."""
    lines: list[str] = []
    for ps, hosts in zip(info.pod_sets, endpoints, strict=False):
        is_host = ps.name == NODE or (policy.run_launcher_as_node and ps.name == LAUNCHER)
        if is_host and policy.implementation == MPI_IMPLEMENTATION_OPENMPI:
            lines.extend(f"{host} slots={policy.num_proc_per_node}\n" for host in hosts)
    return "".join(lines)


def _meta(trainjob: JsonDict, name: str, owner: JsonDict) -> JsonDict:
    namespace = as_dict(trainjob.get("metadata")).get("namespace") or "default"
    return {"name": name, "namespace": namespace, "ownerReferences": [dict(owner)]}


def hostfile_config_map(trainjob: JsonDict, text: str, owner: JsonDict) -> JsonDict:
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(trainjob, hostfile_name(name), owner),
        "data": {MPI_HOSTFILE_NAME: text},
    }


def ssh_auth_secret(trainjob: JsonDict, keys: KeyPair, owner: JsonDict) -> JsonDict:
    """`buildSSHAuthSecret`: the key pair as upstream encodes it ("EC PRIVATE KEY" PEM, the
    authorized_keys line), immutable."""
    private, public = keys
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    metadata = _meta(trainjob, ssh_secret_name(name), owner)
    metadata["labels"] = {LABEL_OPERATOR_NAME: SECRET_OPERATOR_NAME}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": SECRET_TYPE_SSH_AUTH,
        "immutable": True,
        "data": {
            MPI_SSH_PRIVATE_KEY: base64.b64encode(private).decode("ascii"),
            MPI_SSH_PUBLIC_KEY: base64.b64encode(public).decode("ascii"),
        },
    }
