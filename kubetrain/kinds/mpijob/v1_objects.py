"""The objects an MPIJob v1 owns (docs/upstream-behaviour.md#mpijob-v1), as training-operator builds them.

ConfigMap `<job>-config` (hostfile, kubexec.sh, discover_hosts.sh), ServiceAccount, Role and
RoleBinding `<job>-launcher` (the launcher may `kubectl exec` into exactly its workers), worker
pods `<job>-worker-<i>` that only sleep, and the launcher pod `<job>-launcher` whose init
container delivers kubectl.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.codec import json_clone
from kubetrain.api.kinds import JOB_ROLE_MASTER, LABEL_JOB_ROLE, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from kubetrain.controller import gang
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.names import JsonDict, job_labels
from kubetrain.controller.owned import LABEL_APP, as_dict
from kubetrain.controller.pods import pod_restart_policy
from kubetrain.kinds.mpijob import hostfile
from kubetrain.kinds.mpijob.types import LAUNCHER, WORKER

CONFIG_SUFFIX = "-config"
LAUNCHER_SUFFIX = "-launcher"
CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT_PATH = "/etc/mpi"
KUBEXEC = "kubexec.sh"
HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"
KUBECTL_VOLUME = "mpi-job-kubectl"
KUBECTL_DELIVERY = "kubectl-delivery"
DEFAULT_KUBECTL_DELIVERY_IMAGE = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
"""`--mpi-kubectl-delivery-image` default of training-operator."""
INIT_RESOURCES = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
GPU_SUFFIX = ".com/gpu"


def _dict(value: Any) -> JsonDict:
    return value if isinstance(value, dict) else {}


def _template(ctx: JobReconcile, rtype: str) -> tuple[dict[str, Any], dict[str, Any], JsonDict]:
    spec = ctx.job.replica_specs.get(rtype)
    template = json_clone(_dict(spec.template if spec is not None else None))
    tmeta = _dict(template.get("metadata"))
    return (
        dict(_dict(tmeta.get("labels"))),
        dict(_dict(tmeta.get("annotations"))),
        _dict(template.get("spec")),
    )


def _containers(pod_spec: JsonDict) -> list[JsonDict]:
    items = pod_spec.get("containers")
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def is_gpu_launcher(ctx: JobReconcile) -> bool:
    """A launcher asking for any GPU-like resource runs ranks itself (it is in the hostfile)."""
    _, _, pod_spec = _template(ctx, LAUNCHER)
    for container in _containers(pod_spec):
        for key in as_dict(as_dict(container.get("resources")).get("limits")):
            if str(key).endswith(GPU_SUFFIX) or "gpu" in str(key):
                return True
    return False


def worker_count(ctx: JobReconcile) -> int:
    spec = ctx.job.replica_specs.get(WORKER)
    return max(spec.replicas or 0, 0) if spec is not None else 0


def launcher_name(ctx: JobReconcile) -> str:
    return ctx.name + LAUNCHER_SUFFIX


def _meta(ctx: JobReconcile, name: str) -> JsonDict:
    return {
        "name": name,
        "namespace": ctx.namespace,
        "labels": {LABEL_APP: ctx.name},
        "ownerReferences": [ctx.owner()],
    }


def config_map(
    ctx: JobReconcile, slots: int, main_container: str | None, running: list[str], gpu: bool
) -> JsonDict:
    workers = worker_count(ctx)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(ctx, ctx.name + CONFIG_SUFFIX),
        "data": {
            HOSTFILE: hostfile.v1_hostfile(ctx.name, workers, slots, gpu),
            KUBEXEC: hostfile.v1_kubexec(main_container),
            DISCOVER_HOSTS: hostfile.v1_discover_hosts(ctx.name, running, slots, gpu),
        },
    }


def service_account_name(ctx: JobReconcile) -> str:
    """The launcher template's serviceAccountName when set (then the user provides it)."""
    _, _, pod_spec = _template(ctx, LAUNCHER)
    return str(pod_spec.get("serviceAccountName") or launcher_name(ctx))


def service_account(ctx: JobReconcile) -> JsonDict:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(ctx, launcher_name(ctx))}


def role(ctx: JobReconcile) -> JsonDict:
    workers = [f"{ctx.name}-worker-{i}" for i in range(worker_count(ctx))]
    exec_rule: JsonDict = {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"]}
    if workers:
        exec_rule["resourceNames"] = workers
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(ctx, launcher_name(ctx)),
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}, exec_rule],
    }


def role_binding(ctx: JobReconcile) -> JsonDict:
    name = launcher_name(ctx)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(ctx, name),
        "subjects": [
            {"kind": "ServiceAccount", "name": service_account_name(ctx), "namespace": ctx.namespace}
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }


def _config_volume(items: list[tuple[str, int]], name: str) -> JsonDict:
    return {
        "name": CONFIG_VOLUME,
        "configMap": {"name": name, "items": [{"key": k, "path": k, "mode": m} for k, m in items]},
    }


def _append(obj: JsonDict, key: str, items: list[JsonDict]) -> None:
    current = obj.get(key)
    obj[key] = [*(current if isinstance(current, list) else []), *items]


def _pod(
    ctx: JobReconcile, name: str, labels: dict[str, Any], annotations: dict[str, Any], spec: JsonDict
) -> JsonDict:
    metadata: JsonDict = {"name": name, "namespace": ctx.namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = [ctx.owner()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def worker_pod(ctx: JobReconcile, index: int) -> JsonDict:
    labels, annotations, pod_spec = _template(ctx, WORKER)
    labels.update(job_labels(ctx.info, ctx.job))
    labels[LABEL_REPLICA_TYPE] = "worker"
    labels[LABEL_REPLICA_INDEX] = str(index)
    spec = ctx.job.replica_specs.get(WORKER)
    pod_spec["restartPolicy"] = pod_restart_policy(spec.restart_policy if spec else None)
    containers = _containers(pod_spec)
    if containers:
        main = containers[0]
        if not main.get("command"):
            main["command"] = ["sleep"]
            main["args"] = ["365d"]
        # Open MPI checks for the rsh agent's path on every rank, workers included.
        _append(main, "volumeMounts", [{"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH}])
    _append(pod_spec, "volumes", [_config_volume([(KUBEXEC, 0o555)], ctx.name + CONFIG_SUFFIX)])
    gang.decorate_pod_template(ctx, pod_spec, labels, annotations, WORKER)
    return _pod(ctx, f"{ctx.name}-worker-{index}", labels, annotations, pod_spec)


def _has_env(container: JsonDict, name: str) -> bool:
    return any(isinstance(e, dict) and e.get("name") == name for e in container.get("env") or ())


def launcher_pod(ctx: JobReconcile, delivery_image: str, gpu: bool) -> tuple[JsonDict, bool]:
    """The launcher pod, and whether its template set a restartPolicy (a warning is recorded)."""
    labels, annotations, pod_spec = _template(ctx, LAUNCHER)
    labels.update(job_labels(ctx.info, ctx.job))
    labels[LABEL_REPLICA_TYPE] = "launcher"
    labels[LABEL_JOB_ROLE] = JOB_ROLE_MASTER
    gang.decorate_pod_template(ctx, pod_spec, labels, annotations, LAUNCHER)
    pod_spec["serviceAccountName"] = service_account_name(ctx)
    mounts = [
        {"name": KUBECTL_VOLUME, "mountPath": hostfile.KUBECTL_DIR},
        {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH},
    ]
    _append(
        pod_spec,
        "initContainers",
        [
            {
                "name": KUBECTL_DELIVERY,
                "image": delivery_image,
                "imagePullPolicy": "IfNotPresent",
                "env": [
                    {"name": "TARGET_DIR", "value": hostfile.KUBECTL_DIR},
                    {"name": "NAMESPACE", "value": ctx.namespace},
                ],
                "volumeMounts": [dict(m) for m in mounts],
                "resources": {"limits": dict(INIT_RESOURCES), "requests": dict(INIT_RESOURCES)},
            }
        ],
    )
    containers = _containers(pod_spec)
    if containers:
        main = containers[0]
        env = [
            {"name": "OMPI_MCA_plm_rsh_agent", "value": f"{CONFIG_MOUNT_PATH}/{KUBEXEC}"},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"},
        ]
        if not gpu:
            env += [
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
            ]
        for name, value in (
            ("I_MPI_HYDRA_BOOTSTRAP", "rsh"),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC", f"{CONFIG_MOUNT_PATH}/{KUBEXEC}"),
        ):
            if not _has_env(main, name):
                env.append({"name": name, "value": value})
        _append(main, "env", env)
        _append(main, "volumeMounts", mounts)
    spec = ctx.job.replica_specs.get(LAUNCHER)
    warned = bool(pod_spec.get("restartPolicy"))
    pod_spec["restartPolicy"] = pod_restart_policy(spec.restart_policy if spec else None)
    _append(
        pod_spec,
        "volumes",
        [
            {"name": KUBECTL_VOLUME, "emptyDir": {}},
            _config_volume(
                [(KUBEXEC, 0o555), (HOSTFILE, 0o444), (DISCOVER_HOSTS, 0o555)], ctx.name + CONFIG_SUFFIX
            ),
        ],
    )
    return _pod(ctx, launcher_name(ctx), labels, annotations, pod_spec), warned
