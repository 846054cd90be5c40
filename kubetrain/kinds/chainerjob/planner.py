"""The ChainerJob planner (kubeflow/chainer-operator, archived; docs/upstream-behaviour.md#chainerjob).

A ChainerJob is a master batch/v1 Job plus, when distributed, one StatefulSet per worker set.
The master's init container writes the MPI hostfile once every worker pod runs, and `mpirun`
reaches the workers through `kubexeb.sh` (sic), a `kubectl exec` wrapper; hence the launcher
ServiceAccount, Role and RoleBinding, and the `<job>-assets` ConfigMap with the scripts.
The job's status is a copy of the master Job's status. Worker sets scale to 0 once the master
Job completed or failed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.api.codec import decode, json_clone
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, KindInfo
from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.context import Reconcile
from kubetrain.controller.job import JobKind, run_job
from kubetrain.controller.names import JsonDict
from kubetrain.controller.owned import (
    BATCH_JOB,
    OwnedObjects,
    as_dict,
    data_differ,
    job_finished,
    rules_differ,
)
from kubetrain.controller.plan import Observed, Plan
from kubetrain.kinds.chainerjob.defaults import default_chainer
from kubetrain.kinds.chainerjob.types import ChainerJob, ChainerJobStatus, MPIConfig
from kubetrain.kinds.chainerjob.validation import validate_chainer
from kubetrain.kinds.chainerjob.wire import parse

LABEL_JOB = "chainerjob.kubeflow.org/name"
LABEL_ROLE = "chainerjob.kubeflow.org/role"
LABEL_WORKERSET = "chainerjob.kubeflow.org/workersetname"
MOUNT_BASE = "/kubeflow/chainer-operator"
ASSETS_DIR = f"{MOUNT_BASE}/assets"
KUBECTL_DIR = f"{MOUNT_BASE}/kube"
GENERATED_DIR = f"{MOUNT_BASE}/generated"
KUBECTL_DOWNLOAD = "download_kubectl.sh"
KUBEXEB = "kubexeb.sh"
GEN_HOSTFILE = "gen_hostfile.sh"
SETS_AND_SLOTS = "statefulsets_and_slots"
VOLUME_BASE = "chainer-operator-volume"

KUBEXEB_SH = """#! /bin/sh
pod=$1
shift
if [ "$pod" = $(hostname) ]; then
\t$@
else
\t${KUBECTL_DIR:-/kubeflow/chainer-operator/kube}/kubectl exec -i $pod -c chainer -- $@
fi"""
KUBECTL_DOWNLOAD_SH = """#! /bin/sh
set -ex

TARGET=${1:-/kubeflow/chainer-operator/kube}
MAX_TRY=${2:-10}
SLEEP_SECS=${3:-5}
TRIED=0
COMMAND_STATUS=1

until [ $COMMAND_STATUS -eq 0 ] || [ $TRIED -eq $MAX_TRY ]; do
\tcurl -LO https://storage.googleapis.com/kubernetes-release/release/$(curl -s \
https://storage.googleapis.com/kubernetes-release/release/stable.txt)/bin/linux/amd64/kubectl \
&& chmod +x kubectl && mv kubectl $TARGET/kubectl
\tCOMMAND_STATUS=$?
\tsleep $SLEEP_SECS
\tTRIED=$(expr $TRIED + 1)
done"""
GEN_HOSTFILE_SH = """#! /bin/sh
set -xev

KUBECTL_DIR=${KUBECTL_DIR:-/kubeflow/chainer-operator/kube}
ASSETS_DIR=${ASSETS_DIR:-/kubeflow/chainer-operator/assets}
KUBECTL=${KUBECTL_DIR}/kubectl

TARGET=${1}
MASTER_POD_NAME=${2}
MASTER_SLOTS=${3:-slots=1}
STATEFUL_SETS_AND_SLOTS_FILE=${4:-${ASSETS_DIR}/statefulsets_and_slots}
MAX_TRY=${5:-100}
SLEEP_SECS=${6:-5}

trap "rm -f ${TARGET}_new" EXIT TERM INT KILL

cluster_size=1
for ss in $(cat ${STATEFUL_SETS_AND_SLOTS_FILE} | cut -d' ' -f 1); do
\treplicas=$($KUBECTL get statefulsets ${ss} -o=jsonpath='{.status.replicas}')
\tcluster_size=$(expr $cluster_size + $replicas)
done

tried=0
until [ "$(wc -l < ${TARGET}_new)" -eq $cluster_size ]; do
\trm -f ${TARGET}_new

\techo "${MASTER_POD_NAME} ${MASTER_SLOTS}" > ${TARGET}_new

\tcat ${STATEFUL_SETS_AND_SLOTS_FILE} | while read ss_s; do
\t\tss=$(echo "${ss_s}" | cut -d' ' -f 1)
\t\tslots=$(echo "${ss_s}" | cut -d' ' -f 2)
\t\treplicas=$($KUBECTL get statefulsets "${ss}" -o=jsonpath='{.status.replicas}')

\t\tfor i in $(seq 0 ${replicas} | sed -e '$,$d'); do
\t\t\tphase=$($KUBECTL get pod "${ss}-${i}" -o=jsonpath='{.status.phase}')
\t\t\tif [ "$phase" = "Running" ]; then
\t\t\t\techo "${ss}-${i} ${slots}" >> ${TARGET}_new
\t\t\tfi
\t\tdone
\tdone

\ttried=$(expr $tried + 1)
\tif [ $tried -ge $MAX_TRY ]; then
\t\tbreak
\tfi
\tsleep $SLEEP_SECS
done

if [ -e ${TARGET}_new ]; then
\tmv ${TARGET}_new ${TARGET}
fi\t
"""
"""chainer-operator's scripts, byte for byte (the backslash-newlines in the download command are
Python line continuations: the value holds the command on one line, as upstream's)."""

CHILD_TYPES = (
    ChildType("v1", "ServiceAccount", "serviceaccounts", None),
    ChildType("rbac.authorization.k8s.io/v1", "Role", "roles", None),
    ChildType("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", None),
    ChildType("v1", "ConfigMap", "configmaps", None),
    ChildType("batch/v1", "Job", "jobs", None),
    ChildType("apps/v1", "StatefulSet", "statefulsets", None),
)


class ChainerKind(JobKind[ChainerJob, ChainerJobStatus]):
    """chainer-operator's ChainerJob on `run_job`: no managedBy, an invalid job only warns, and
    the status is the master Job's."""

    one_step_per_pass = True

    def initial_status(self) -> ChainerJobStatus:
        return ChainerJobStatus()

    def prepare(
        self, job: ChainerJob, info: KindInfo, errors: ErrorList, now: datetime
    ) -> tuple[ChainerJob, str]:
        errors.extend(validate_chainer(job))
        if errors:
            return job, f"Found validation errors: {errors}"
        return default_chainer(job), ""

    def exists_message(self, name: str, kind: str) -> str:
        return f'Resource "{name}" already exists and is not managed by ChainerJob'

    def reconcile(self, ctx: Reconcile[ChainerJob, ChainerJobStatus]) -> None:
        chj, sync = ctx.job, ctx.owned
        distributed = bool(chj.spec and chj.spec.worker_sets)
        sync.ensure(_object(sync, "v1", "ServiceAccount", f"{chj.name}-launcher", chj))
        sync.ensure(_role(sync, chj), rules_differ)
        sync.ensure(_role_binding(sync, chj), _binding_differ)
        if distributed:
            sync.ensure(_assets(sync, chj), data_differ)
        master = sync.get(BATCH_JOB, f"{chj.name}-master")
        if master is None:
            sync.ensure(_master_job(sync, chj, distributed))
        elif not sync.controlled(master):
            return
        if distributed and not sync.blocked:
            done = master is not None and job_finished(master)
            for name in sorted(chj.spec.worker_sets or {} if chj.spec else {}):
                sync.ensure(_worker_set(sync, chj, name, done), _replicas_differ)
        if master is not None:
            copied, _ = decode(ChainerJobStatus, as_dict(master.get("status")), "status")
            ctx.status = copied or ChainerJobStatus()


KIND = ChainerKind()


def plan(job: JsonDict, observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
    return run_job(KIND, job, parse(job), observed, now, config)


def _object(sync: OwnedObjects, api_version: str, kind: str, name: str, chj: ChainerJob) -> JsonDict:
    return {"apiVersion": api_version, "kind": kind, "metadata": sync.new_meta(name, {LABEL_JOB: chj.name})}


def _set_name(chj: ChainerJob, name: str) -> str:
    return f"{chj.name}-workerset-{name}"


def _role(sync: OwnedObjects, chj: ChainerJob) -> JsonDict:
    obj = _object(sync, "rbac.authorization.k8s.io/v1", "Role", f"{chj.name}-launcher-role", chj)
    sets, pods = [], []
    for name, wset in (chj.spec.worker_sets or {} if chj.spec else {}).items():
        ss = _set_name(chj, name)
        sets.append(ss)
        pods += [f"{ss}-{i}" for i in range((wset.replicas or 0) if wset else 0)]
    if chj.spec and chj.spec.worker_sets:
        obj["rules"] = [
            {"apiGroups": ["apps"], "verbs": ["get"], "resources": ["statefulsets"], "resourceNames": sets},
            {"apiGroups": [""], "verbs": ["get", "list"], "resources": ["pods"], "resourceNames": pods},
            {"apiGroups": [""], "verbs": ["create"], "resources": ["pods/exec"], "resourceNames": pods},
        ]
    else:
        obj["rules"] = []
    return obj


def _role_binding(sync: OwnedObjects, chj: ChainerJob) -> JsonDict:
    obj = _object(
        sync, "rbac.authorization.k8s.io/v1", "RoleBinding", f"{chj.name}-launcher-rolebinding", chj
    )
    obj["subjects"] = [{"kind": "ServiceAccount", "name": f"{chj.name}-launcher", "namespace": chj.namespace}]
    obj["roleRef"] = {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": f"{chj.name}-launcher-role",
    }
    return obj


def _binding_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    if current.get("subjects") == desired["subjects"] and current.get("roleRef") == desired["roleRef"]:
        return None
    return {"subjects": desired["subjects"]}


def _slots(config: MPIConfig | None) -> int:
    return config.slots if config is not None and config.slots is not None else 1


def _assets(sync: OwnedObjects, chj: ChainerJob) -> JsonDict:
    sets = chj.spec.worker_sets or {} if chj.spec else {}
    lines = ""
    for name in sorted(sets):
        wset = sets[name]
        lines += f"{_set_name(chj, name)} slots={_slots(wset.mpi_config if wset is not None else None)}\n"
    obj = _object(sync, "v1", "ConfigMap", f"{chj.name}-assets", chj)
    obj["data"] = {
        KUBECTL_DOWNLOAD: KUBECTL_DOWNLOAD_SH,
        KUBEXEB: KUBEXEB_SH,
        GEN_HOSTFILE: GEN_HOSTFILE_SH,
        SETS_AND_SLOTS: lines,
    }
    return obj


def _volumes(chj: ChainerJob) -> list[JsonDict]:
    items = [
        {"key": k, "path": k, "mode": 0o555}
        for k in (KUBECTL_DOWNLOAD, KUBEXEB, GEN_HOSTFILE, SETS_AND_SLOTS)
    ]
    return [
        {"name": f"{VOLUME_BASE}-generated", "emptyDir": {}},
        {"name": f"{VOLUME_BASE}-kubectl", "emptyDir": {}},
        {"name": f"{VOLUME_BASE}-assets", "configMap": {"name": f"{chj.name}-assets", "items": items}},
    ]


def _mounts() -> list[JsonDict]:
    return [
        {"name": f"{VOLUME_BASE}-generated", "mountPath": GENERATED_DIR},
        {"name": f"{VOLUME_BASE}-kubectl", "mountPath": KUBECTL_DIR},
        {"name": f"{VOLUME_BASE}-assets", "mountPath": ASSETS_DIR},
    ]


ENV = [
    {"name": "KUBECTL_DIR", "value": KUBECTL_DIR},
    {"name": "OMPI_MCA_plm_rsh_agent", "value": f"{ASSETS_DIR}/{KUBEXEB}"},
    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "t"},
    {"name": "OMPI_MCA_orte_default_hostfile", "value": f"{GENERATED_DIR}/hostfile"},
    {"name": "OMPI_MCA_btl_tcp_if_exclude", "value": "lo,docker0"},
]


def _decorate(chj: ChainerJob, pod_spec: JsonDict, master_slots: int | None) -> None:
    """The MPI backend's volumes, mounts, env and init containers on a pod template."""
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), *_volumes(chj)]
    inits = [
        {**c, "volumeMounts": [*(c.get("volumeMounts") or []), *_mounts()]}
        for c in pod_spec.get("initContainers") or []
    ]
    inits.append(
        {
            "name": "chainer-operator-kubectl-downloader",
            "image": "tutum/curl",
            "command": [f"{ASSETS_DIR}/{KUBECTL_DOWNLOAD}"],
            "args": [KUBECTL_DIR],
            "volumeMounts": _mounts(),
        }
    )
    if master_slots is not None:
        inits.append(
            {
                "name": "chainer-operator-hostfile-generator",
                "image": "alpine",
                "volumeMounts": _mounts(),
                "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "command": [f"{ASSETS_DIR}/{GEN_HOSTFILE}"],
                "args": [
                    f"{GENERATED_DIR}/hostfile",
                    "$(POD_NAME)",
                    f"slots={master_slots}",
                    f"{ASSETS_DIR}/{SETS_AND_SLOTS}",
                ],
            }
        )
    pod_spec["initContainers"] = inits
    pod_spec["containers"] = [
        {
            **c,
            "env": [*(c.get("env") or []), *ENV],
            "volumeMounts": [*(c.get("volumeMounts") or []), *_mounts()],
        }
        for c in pod_spec.get("containers") or []
        if isinstance(c, dict)
    ]


def _template(chj: ChainerJob, template: Any, labels: dict[str, str]) -> JsonDict:
    out = json_clone(as_dict(template))
    tmeta = as_dict(out.get("metadata"))
    tmeta["labels"] = {**as_dict(tmeta.get("labels")), **labels}
    out["metadata"] = tmeta
    spec = as_dict(out.get("spec"))
    spec["serviceAccountName"] = f"{chj.name}-launcher"
    out["spec"] = spec
    return out


def _master_job(sync: OwnedObjects, chj: ChainerJob, distributed: bool) -> JsonDict:
    master = chj.spec.master if chj.spec and chj.spec.master else None
    managed = {LABEL_JOB: chj.name, LABEL_ROLE: "master"}
    template = _template(chj, master.template if master else None, managed)
    # Not upstream: the master pod also carries the v1 kinds' job-name and replica labels, which is
    # how `kubetrain logs/run` and the client find a job's pods (the Job's own labels are upstream's).
    template["metadata"]["labels"].update(
        {LABEL_JOB_NAME: chj.name, LABEL_REPLICA_TYPE: "master", LABEL_REPLICA_INDEX: "0"}
    )
    if distributed:
        _decorate(chj, template["spec"], _slots(master.mpi_config if master else None))
    labels = {**as_dict(chj.metadata.get("labels")), **managed}
    spec: JsonDict = {"completions": 1, "parallelism": 1}
    if master is not None and master.backoff_limit is not None:
        spec["backoffLimit"] = master.backoff_limit
    if master is not None and master.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = master.active_deadline_seconds
    spec["template"] = template
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": sync.new_meta(f"{chj.name}-master", labels),
        "spec": spec,
    }


def _worker_set(sync: OwnedObjects, chj: ChainerJob, name: str, done: bool) -> JsonDict:
    wset = (chj.spec.worker_sets or {}).get(name) if chj.spec else None
    managed = {LABEL_JOB: chj.name, LABEL_ROLE: "workerset", LABEL_WORKERSET: name}
    template = _template(chj, wset.template if wset else None, managed)
    _decorate(chj, template["spec"], None)
    ss = _set_name(chj, name)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": sync.new_meta(ss, {**as_dict(chj.metadata.get("labels")), **managed}),
        "spec": {
            "podManagementPolicy": "Parallel",
            "replicas": 0 if done else (wset.replicas if wset and wset.replicas is not None else 1),
            "selector": {"matchLabels": dict(template["metadata"]["labels"])},
            "serviceName": ss,
            "template": template,
        },
    }


def _replicas_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    """Only `replicas` is kept in line (scaled to 0 when the master is done); upstream replaces
    the whole spec, which the API server refuses for a StatefulSet's selector anyway."""
    want = desired["spec"]["replicas"]
    return None if as_dict(current.get("spec")).get("replicas") == want else {"spec": {"replicas": want}}
