"""The objects an MPIJob v1alpha2 owns, as the original mpi-operator (v0.2) builds them.

Upstream's: docs/upstream-behaviour.md#mpijob-v1alpha2.

ConfigMap `<job>-config` (`hostfile` with every worker, `kubexec.sh`), ServiceAccount, Role and
RoleBinding `<job>-launcher` (pods get/list/watch; `pods/exec` create on exactly the workers), the
worker StatefulSet `<job>-worker` (Parallel, its pods `<job>-worker-<i>` only sleep unless they
have a command) and the launcher batch Job `<job>-launcher`, whose `kubectl-delivery` init
container copies kubectl and waits for the workers the hostfile names.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.codec import json_clone
from kubetrain.api.kinds import LABEL_JOB_NAME, LABEL_JOB_ROLE, LABEL_REPLICA_TYPE
from kubetrain.controller.names import JsonDict
from kubetrain.controller.owned import LABEL_APP, OwnedObjects, as_dict
from kubetrain.controller.pods import pod_restart_policy
from kubetrain.kinds.mpijob import hostfile
from kubetrain.kinds.mpijob.types import LAUNCHER, WORKER, MPIJobV1Alpha2Spec
from kubetrain.kinds.mpijob.v1_objects import (
    CONFIG_MOUNT_PATH,
    CONFIG_SUFFIX,
    CONFIG_VOLUME,
    HOSTFILE,
    INIT_RESOURCES,
    KUBECTL_DELIVERY,
    KUBECTL_VOLUME,
    KUBEXEC,
    LAUNCHER_SUFFIX,
)

WORKER_SUFFIX = "-worker"
KUBECTL_DELIVERY_IMAGE = "mpioperator/kubectl-delivery:latest"
"""`--kubectl-delivery-image` of mpi-operator v0.2's v1alpha2 deployment."""
LABEL_GROUP_NAME = "group_name"
LABEL_MPI_JOB_NAME = "mpi_job_name"
LABEL_MPI_ROLE_TYPE = "mpi_role_type"


def role_labels(job: str, role: str) -> dict[str, str]:
    """Upstream's labels of the worker StatefulSet (its selector) and the launcher Job."""
    return {LABEL_GROUP_NAME: "kubeflow.org", LABEL_MPI_JOB_NAME: job, LABEL_MPI_ROLE_TYPE: role}


def _pod_labels(job: str, role: str) -> dict[str, str]:
    """Upstream's labels plus (not upstream) the job-name and replica-type labels every other
    kubetrain pod carries, which is how `kubetrain run/logs` and the client find a job's pods."""
    labels = {**role_labels(job, role), LABEL_JOB_NAME: job, LABEL_REPLICA_TYPE: role}
    if role == "launcher":
        labels[LABEL_JOB_ROLE] = "launcher"
    return labels


def worker_count(spec: MPIJobV1Alpha2Spec) -> int:
    worker = (spec.replica_specs or {}).get(WORKER)
    return max(worker.replicas or 0, 0) if worker is not None else 0


def worker_names(job: str, count: int) -> list[str]:
    return [f"{job}{WORKER_SUFFIX}-{i}" for i in range(count)]


def _meta(sync: OwnedObjects, name: str, job: str) -> JsonDict:
    return sync.new_meta(name, {LABEL_APP: job})


def config_map(sync: OwnedObjects, job: str, spec: MPIJobV1Alpha2Spec, workers: int) -> JsonDict:
    slots = spec.slots_per_worker if spec.slots_per_worker is not None else 1
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(sync, job + CONFIG_SUFFIX, job),
        "data": {
            HOSTFILE: hostfile.v1_hostfile(job, workers, slots, gpu_launcher=False),
            KUBEXEC: hostfile.v1_kubexec(spec.main_container),
        },
    }


def service_account(sync: OwnedObjects, job: str) -> JsonDict:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(sync, job + LAUNCHER_SUFFIX, job)}


def role(sync: OwnedObjects, job: str, workers: int) -> JsonDict:
    exec_rule: JsonDict = {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"]}
    if workers:
        exec_rule["resourceNames"] = worker_names(job, workers)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(sync, job + LAUNCHER_SUFFIX, job),
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}, exec_rule],
    }


def role_binding(sync: OwnedObjects, job: str) -> JsonDict:
    name = job + LAUNCHER_SUFFIX
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(sync, name, job),
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": sync.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }


def _template(spec: MPIJobV1Alpha2Spec, rtype: str) -> JsonDict:
    """A deep copy of the replica's pod template, with metadata and spec as dicts."""
    replica = (spec.replica_specs or {}).get(rtype)
    template = json_clone(as_dict(replica.template if replica is not None else None))
    template["metadata"] = as_dict(template.get("metadata"))
    template["spec"] = as_dict(template.get("spec"))
    return template


def _main(pod_spec: JsonDict) -> JsonDict | None:
    containers = pod_spec.get("containers")
    first = containers[0] if isinstance(containers, list) and containers else None
    return first if isinstance(first, dict) else None


def _append(obj: JsonDict, key: str, items: list[JsonDict]) -> None:
    current = obj.get(key)
    obj[key] = [*(current if isinstance(current, list) else []), *items]


def _config_volume(job: str, items: list[tuple[str, int]]) -> JsonDict:
    return {
        "name": CONFIG_VOLUME,
        "configMap": {
            "name": job + CONFIG_SUFFIX,
            "items": [{"key": k, "path": k, "mode": m} for k, m in items],
        },
    }


def worker_stateful_set(sync: OwnedObjects, job: str, spec: MPIJobV1Alpha2Spec, replicas: int) -> JsonDict:
    """`newWorker`: the worker template with upstream's labels, restartPolicy Always, `sleep 365d`
    when it has no command, and `kubexec.sh` mounted (Open MPI checks the rsh agent on every rank)."""
    template = _template(spec, WORKER)
    tmeta, pod_spec = template["metadata"], template["spec"]
    tmeta["labels"] = {**as_dict(tmeta.get("labels")), **_pod_labels(job, "worker")}
    pod_spec["restartPolicy"] = "Always"
    main = _main(pod_spec)
    if main is not None:
        if not main.get("command"):
            main["command"] = ["sleep"]
            main["args"] = ["365d"]
        _append(main, "volumeMounts", [{"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH}])
    _append(pod_spec, "volumes", [_config_volume(job, [(KUBEXEC, 0o555)])])
    labels = role_labels(job, "worker")
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": sync.new_meta(job + WORKER_SUFFIX, labels),
        "spec": {
            "podManagementPolicy": "Parallel",
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "serviceName": job + WORKER_SUFFIX,
            "template": template,
        },
    }


def replicas_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    """Only `replicas` follows (the job's worker count, 0 once the job is cleaned up). Upstream
    Updates the whole StatefulSet then; the rest of its spec is the same template."""
    want = desired["spec"]["replicas"]
    return None if as_dict(current.get("spec")).get("replicas") == want else {"spec": {"replicas": want}}


def launcher_job(sync: OwnedObjects, job: str, spec: MPIJobV1Alpha2Spec) -> tuple[JsonDict, bool]:
    """`newLauncher`: the launcher batch Job, and whether its template set a restartPolicy (upstream
    warns that the replica spec's overrides it)."""
    template = _template(spec, LAUNCHER)
    tmeta, pod_spec = template["metadata"], template["spec"]
    tmeta["labels"] = {**as_dict(tmeta.get("labels")), **_pod_labels(job, "launcher")}
    pod_spec["serviceAccountName"] = job + LAUNCHER_SUFFIX
    mounts = [
        {"name": KUBECTL_VOLUME, "mountPath": hostfile.KUBECTL_DIR},
        {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH},
    ]
    delivery: JsonDict = {
        "name": KUBECTL_DELIVERY,
        "image": KUBECTL_DELIVERY_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "TARGET_DIR", "value": hostfile.KUBECTL_DIR},
            {"name": "NAMESPACE", "value": sync.namespace},
        ],
        "volumeMounts": [dict(m) for m in mounts],
        "resources": {"limits": dict(INIT_RESOURCES), "requests": dict(INIT_RESOURCES)},
    }
    _append(pod_spec, "initContainers", [delivery])
    main = _main(pod_spec)
    if main is not None:
        _append(
            main,
            "env",
            [
                {"name": "OMPI_MCA_plm_rsh_agent", "value": f"{CONFIG_MOUNT_PATH}/{KUBEXEC}"},
                {"name": "OMPI_MCA_orte_default_hostfile", "value": f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"},
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
            ],
        )
        _append(main, "volumeMounts", mounts)
    warned = bool(pod_spec.get("restartPolicy"))
    launcher = (spec.replica_specs or {}).get(LAUNCHER)
    pod_spec["restartPolicy"] = pod_restart_policy(launcher.restart_policy if launcher else None)
    _append(
        pod_spec,
        "volumes",
        [
            {"name": KUBECTL_VOLUME, "emptyDir": {}},
            _config_volume(job, [(KUBEXEC, 0o555), (HOSTFILE, 0o444)]),
        ],
    )
    job_spec: dict[str, Any] = {}
    backoff, deadline = _limits(spec)
    if backoff is not None:
        job_spec["backoffLimit"] = backoff
    if deadline is not None:
        job_spec["activeDeadlineSeconds"] = deadline
    job_spec["template"] = template
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": sync.new_meta(job + LAUNCHER_SUFFIX, role_labels(job, "launcher")),
        "spec": job_spec,
    }
    return obj, warned


def _limits(spec: MPIJobV1Alpha2Spec) -> tuple[int | None, int | None]:
    """backoffLimit and activeDeadlineSeconds: runPolicy's override the top-level fields."""
    backoff, deadline = spec.backoff_limit, spec.active_deadline_seconds
    if spec.run_policy is not None:
        if spec.run_policy.backoff_limit is not None:
            backoff = spec.run_policy.backoff_limit
        if spec.run_policy.active_deadline_seconds is not None:
            deadline = spec.run_policy.active_deadline_seconds
    return backoff, deadline
