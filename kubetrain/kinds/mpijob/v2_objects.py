"""The objects an MPIJob v2beta1 owns, built exactly as mpi-operator builds them.

Upstream's: docs/upstream-behaviour.md#mpijob-v2beta1-objects.

Service `<job>` (headless), ConfigMap `<job>-config`, Secret `<job>-ssh`, worker pods
`<job>-worker-<i>` and the launcher batch/v1 Job `<job>-launcher`. Templates are deep-copied
before being changed: the job (from the runtime's cache) is never mutated.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from kubetrain.api.codec import json_clone
from kubetrain.api.kinds import LABEL_JOB_NAME, LABEL_JOB_ROLE, LABEL_OPERATOR_NAME, LABEL_REPLICA_INDEX
from kubetrain.api.types import ReplicaSpec
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.gang import PLUGINS_POD_GROUP_LABEL, VOLCANO_GROUP_ANNOTATION, VOLCANO_SCHEDULER
from kubetrain.controller.names import JsonDict
from kubetrain.controller.owned import LABEL_APP, OwnedObjects
from kubetrain.controller.pods import pod_restart_policy
from kubetrain.kinds.mpijob import hostfile
from kubetrain.kinds.mpijob.ssh import KeyPair
from kubetrain.kinds.mpijob.types import INTEL, LAUNCHER, MPICH, OPENMPI, ROOT_SSH_PATH, WORKER, MPIJobV2Spec
from kubetrain.kinds.mpijob.wire import MPI_OPERATOR_NAME

CONFIG_SUFFIX = "-config"
SSH_SUFFIX = "-ssh"
LAUNCHER_SUFFIX = "-launcher"
CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT_PATH = "/etc/mpi"
HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"
SSH_VOLUME = "ssh-auth"
SSH_PRIVATE_KEY = "ssh-privatekey"
SSH_PUBLIC_KEY = "ssh-publickey"
SSH_AUTH_TYPE = "kubernetes.io/ssh-auth"
ROLE_ENV = "K_MPI_JOB_ROLE"
SSHD_COMMAND = ["/usr/sbin/sshd", "-De"]
CONNECTION_ATTEMPTS = "-o ConnectionAttempts=10"
RESTART_POLICY_OVERRIDDEN = "Restart policy in pod template overridden by restart policy in replica spec"
SET_RESTART_POLICY = "SetPodTemplateRestartPolicy"
DEFAULT_CLUSTER_DOMAIN = "cluster.local"
NVIDIA_DISABLE_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
"""Emptied on a launcher that runs no ranks, so it cannot grab GPUs by accident."""


@dataclass(frozen=True)
class V2Job:
    """The facts of one defaulted v2beta1 job that every builder reads."""

    name: str
    namespace: str
    spec: MPIJobV2Spec
    config: ControllerConfig

    @property
    def slots(self) -> int:
        return self.spec.slots_per_worker if self.spec.slots_per_worker is not None else 1

    @property
    def launcher_as_worker(self) -> bool:
        return bool(self.spec.run_launcher_as_worker)

    @property
    def implementation(self) -> str:
        return self.spec.mpi_implementation or OPENMPI

    @property
    def mount_path(self) -> str:
        return self.spec.ssh_auth_mount_path or ROOT_SSH_PATH

    def replica(self, rtype: str) -> ReplicaSpec | None:
        return (self.spec.replica_specs or {}).get(rtype)

    @property
    def workers(self) -> int:
        worker = self.replica(WORKER)
        return max(worker.replicas or 0, 0) if worker is not None else 0

    def worker_name(self, index: int) -> str:
        return f"{self.name}-worker-{index}"

    @property
    def launcher_name(self) -> str:
        return self.name + LAUNCHER_SUFFIX


def default_labels(job: str, role: str) -> dict[str, str]:
    labels = {LABEL_OPERATOR_NAME: MPI_OPERATOR_NAME, LABEL_JOB_NAME: job}
    if role:
        labels[LABEL_JOB_ROLE] = role
    return labels


def service(sync: OwnedObjects, job: V2Job) -> JsonDict:
    """The headless Service that gives every pod the DNS name `<pod>.<job>.<ns>.svc`."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": sync.new_meta(job.name, {LABEL_APP: job.name}),
        "spec": {
            "clusterIP": "None",
            "selector": default_labels(job.name, ""),
            "publishNotReadyAddresses": job.launcher_as_worker,
        },
    }


def service_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    """Only the selector and publishNotReadyAddresses are reconciled (as upstream)."""
    have, want = current.get("spec") or {}, desired["spec"]
    patch = {
        key: want[key]
        for key in ("selector", "publishNotReadyAddresses")
        if bool(have.get(key)) != bool(want[key]) or (key == "selector" and have.get(key) != want[key])
    }
    return {"spec": patch} if patch else None


def config_map(sync: OwnedObjects, job: V2Job, running_workers: list[str]) -> JsonDict:
    domain = job.config.cluster_domain
    data = {
        HOSTFILE: hostfile.v2_hostfile(
            job.name,
            job.namespace,
            job.workers,
            job.slots,
            job.implementation,
            job.launcher_as_worker,
            domain,
        ),
        DISCOVER_HOSTS: hostfile.v2_discover_hosts(
            job.name, job.namespace, running_workers, job.launcher_as_worker
        ),
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": sync.new_meta(job.name + CONFIG_SUFFIX, {LABEL_APP: job.name}),
        "data": data,
    }


def ssh_secret(sync: OwnedObjects, job: V2Job, keys: KeyPair) -> JsonDict:
    private, public = keys
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        # mpi-operator's `app` label, plus the operator-name label the operator's Secret cache
        # selects on: it watches only its own Secrets, not every Secret of the cluster.
        "metadata": sync.new_meta(
            job.name + SSH_SUFFIX, {LABEL_APP: job.name, LABEL_OPERATOR_NAME: MPI_OPERATOR_NAME}
        ),
        "type": SSH_AUTH_TYPE,
        "data": {
            SSH_PRIVATE_KEY: base64.b64encode(private).decode("ascii"),
            SSH_PUBLIC_KEY: base64.b64encode(public).decode("ascii"),
        },
    }


def _dict(value: Any) -> JsonDict:
    return value if isinstance(value, dict) else {}


def _template(spec: ReplicaSpec | None) -> tuple[dict[str, Any], dict[str, Any], JsonDict]:
    """(labels, annotations, pod spec) of a deep copy of the replica's template."""
    template = json_clone(_dict(spec.template if spec is not None else None))
    tmeta = _dict(template.get("metadata"))
    labels = dict(_dict(tmeta.get("labels")))
    annotations = dict(_dict(tmeta.get("annotations")))
    pod_spec = _dict(template.get("spec"))
    return labels, annotations, pod_spec


def _main_container(pod_spec: JsonDict) -> JsonDict:
    containers = pod_spec.get("containers")
    if isinstance(containers, list) and containers and isinstance(containers[0], dict):
        return containers[0]
    return {}


def _append(container: JsonDict, key: str, items: list[JsonDict]) -> None:
    current = container.get(key)
    container[key] = [*(current if isinstance(current, list) else []), *items]


def _setup_ssh(pod_spec: JsonDict, job: V2Job) -> None:
    secret: JsonDict = {"secretName": job.name + SSH_SUFFIX}
    if job.mount_path == ROOT_SSH_PATH:
        secret["defaultMode"] = 0o600
    secret["items"] = [
        {"key": SSH_PRIVATE_KEY, "path": "id_rsa"},
        {"key": SSH_PUBLIC_KEY, "path": "id_rsa.pub"},
        {"key": SSH_PUBLIC_KEY, "path": "authorized_keys"},
    ]
    _append(pod_spec, "volumes", [{"name": SSH_VOLUME, "secret": secret}])
    _append(_main_container(pod_spec), "volumeMounts", [{"name": SSH_VOLUME, "mountPath": job.mount_path}])


def _hostname(pod_spec: JsonDict, job: V2Job, hostname: str) -> None:
    pod_spec["hostname"] = hostname
    pod_spec["subdomain"] = job.name
    if pod_spec.get("hostNetwork"):
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def _gang(pod_spec: JsonDict, labels: dict[str, Any], annotations: dict[str, Any], job: V2Job) -> None:
    """mpi-operator forces the gang scheduler (it does not keep a template's own, unlike v1)."""
    config = job.config
    if not config.gang_scheduling:
        return
    if config.uses_volcano:
        pod_spec["schedulerName"] = VOLCANO_SCHEDULER
        annotations[VOLCANO_GROUP_ANNOTATION] = job.name
    else:
        pod_spec["schedulerName"] = config.gang_scheduler_name
        labels[PLUGINS_POD_GROUP_LABEL] = job.name


def worker_pod(sync: OwnedObjects, job: V2Job, index: int) -> JsonDict:
    spec = job.replica(WORKER)
    labels, annotations, pod_spec = _template(spec)
    labels.update(default_labels(job.name, "worker"))
    labels[LABEL_REPLICA_INDEX] = str(index + 1 if job.launcher_as_worker else index)
    name = job.worker_name(index)
    _hostname(pod_spec, job, name)
    domain = job.config.cluster_domain or DEFAULT_CLUSTER_DOMAIN
    dns_config = _dict(pod_spec.get("dnsConfig"))
    searches = dns_config.get("searches")
    dns_config["searches"] = [
        *(searches if isinstance(searches, list) else []),
        f"{job.name}.{job.namespace}.svc.{domain}",
    ]
    pod_spec["dnsConfig"] = dns_config
    pod_spec["restartPolicy"] = pod_restart_policy(spec.restart_policy if spec else None)
    container = _main_container(pod_spec)
    if not container.get("command") and not container.get("args"):
        container["command"] = list(SSHD_COMMAND)
    _append(container, "env", [{"name": ROLE_ENV, "value": "worker"}])
    _setup_ssh(pod_spec, job)
    _gang(pod_spec, labels, annotations, job)
    metadata: JsonDict = {"name": name, "namespace": job.namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = [dict(sync.owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def _implementation_env(job: V2Job) -> list[JsonDict]:
    hostfile_path = f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"
    slots = str(job.slots)
    if job.implementation == INTEL:
        return [
            {"name": "I_MPI_HYDRA_HOST_FILE", "value": hostfile_path},
            {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "value": CONNECTION_ATTEMPTS},
            {"name": "I_MPI_PERHOST", "value": slots},
        ]
    if job.implementation == MPICH:
        return [
            {"name": "HYDRA_HOST_FILE", "value": hostfile_path},
            {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": CONNECTION_ATTEMPTS},
        ]
    return [
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_default_hostfile", "value": hostfile_path},
        {"name": "OMPI_MCA_plm_rsh_args", "value": CONNECTION_ATTEMPTS},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": slots},
    ]


def launcher_template(job: V2Job) -> tuple[JsonDict, bool]:
    """The launcher's pod template, and whether the user's template set a restartPolicy (warned)."""
    spec = job.replica(LAUNCHER)
    labels, annotations, pod_spec = _template(spec)
    labels.update(default_labels(job.name, "launcher"))
    if job.launcher_as_worker:
        labels[LABEL_REPLICA_INDEX] = "0"
    _hostname(pod_spec, job, job.launcher_name)
    container = _main_container(pod_spec)
    env = [{"name": ROLE_ENV, "value": "launcher"}, *_implementation_env(job)]
    if not job.launcher_as_worker:
        env += [{"name": name, "value": ""} for name in NVIDIA_DISABLE_ENV]
    _append(container, "env", env)
    _setup_ssh(pod_spec, job)
    _gang(pod_spec, labels, annotations, job)
    warned = bool(pod_spec.get("restartPolicy"))
    pod_spec["restartPolicy"] = pod_restart_policy(spec.restart_policy if spec else None)
    _append(
        pod_spec,
        "volumes",
        [
            {
                "name": CONFIG_VOLUME,
                "configMap": {
                    "name": job.name + CONFIG_SUFFIX,
                    "items": [
                        {"key": HOSTFILE, "path": HOSTFILE, "mode": 0o444},
                        {"key": DISCOVER_HOSTS, "path": DISCOVER_HOSTS, "mode": 0o555},
                    ],
                },
            }
        ],
    )
    _append(container, "volumeMounts", [{"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH}])
    tmeta: JsonDict = {"labels": labels}
    if annotations:
        tmeta["annotations"] = annotations
    return {"metadata": tmeta, "spec": pod_spec}, warned


def launcher_job(sync: OwnedObjects, job: V2Job, suspended: bool) -> tuple[JsonDict, bool]:
    """The batch/v1 Job running the launcher; TTL, deadline and backoff are delegated to it."""
    policy = job.spec.run_policy
    template, warned = launcher_template(job)
    # As mpi-operator's newLauncherPodTemplate (the Job controller gives the pod its own controller
    # reference; this one only keeps the Job's wire form upstream's).
    template["metadata"]["ownerReferences"] = [dict(sync.owner)]
    spec: JsonDict = {}
    if policy is not None:
        for key, value in (
            ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished),
            ("activeDeadlineSeconds", policy.active_deadline_seconds),
            ("backoffLimit", policy.backoff_limit),
        ):
            if value is not None:
                spec[key] = value
    spec["template"] = template
    if suspended:
        spec["suspend"] = True
    spec["podReplacementPolicy"] = "Failed"
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": sync.new_meta(job.launcher_name, {LABEL_APP: job.name}),
        "spec": spec,
    }
    return obj, warned


def scheduling_directives_patch(launcher: JsonDict, desired_template: JsonDict) -> JsonDict:
    """What Kueue may have changed while the job was suspended: labels and annotations merged,
    nodeSelector, tolerations and schedulingGates replaced (mpi-operator's
    `syncLauncherSchedulingDirectives`)."""
    want_meta = _dict(desired_template.get("metadata"))
    want_spec = _dict(desired_template.get("spec"))
    current = _dict(_dict(launcher.get("spec")).get("template"))
    have_meta = _dict(current.get("metadata"))
    have_spec = _dict(current.get("spec"))
    patch_meta: JsonDict = {}
    for key in ("labels", "annotations"):
        want = _dict(want_meta.get(key))
        have = _dict(have_meta.get(key))
        changed = {k: v for k, v in want.items() if have.get(k) != v}
        if changed:
            patch_meta[key] = changed
    patch_spec = {
        key: want_spec.get(key)
        for key in ("nodeSelector", "tolerations", "schedulingGates")
        if have_spec.get(key) != want_spec.get(key)
    }
    template: JsonDict = {}
    if patch_meta:
        template["metadata"] = patch_meta
    if patch_spec:
        template["spec"] = patch_spec
    return template
