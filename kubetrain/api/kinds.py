"""The registry of job kinds: the wire facts of docs/upstream-behaviour.md#api-surface in one table.

Everything that differs between kinds only by a name or a number lives here, so the layers above
never spell a kind's strings themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api import types

GROUP = "kubeflow.org"
V1 = "v1"
API_VERSION = f"{GROUP}/{V1}"

# Labels and values shared by every kind (docs/upstream-behaviour.md#labels).
LABEL_OPERATOR_NAME = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX = "training.kubeflow.org/replica-index"
LABEL_JOB_ROLE = "training.kubeflow.org/job-role"
JOB_ROLE_MASTER = "master"

# runPolicy.managedBy values (docs/upstream-behaviour.md#common-types).
KUBEFLOW_JOBS_CONTROLLER = "kubeflow.org/training-operator"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"

# Condition types (docs/upstream-behaviour.md#common-types).
COND_CREATED = "Created"
COND_RUNNING = "Running"
COND_RESTARTING = "Restarting"
COND_SUCCEEDED = "Succeeded"
COND_SUSPENDED = "Suspended"
COND_FAILED = "Failed"

RESTART_ALWAYS = "Always"
RESTART_ON_FAILURE = "OnFailure"
RESTART_NEVER = "Never"
RESTART_EXIT_CODE = "ExitCode"
RESTART_POLICIES = (RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_EXIT_CODE)

CLEAN_POD_ALL = "All"
CLEAN_POD_RUNNING = "Running"
CLEAN_POD_NONE = "None"
CLEAN_POD_POLICIES = (CLEAN_POD_ALL, CLEAN_POD_RUNNING, CLEAN_POD_NONE)


PrinterColumn = tuple[str, str, str]
"""(jsonPath, name, type) of one `kubectl get` column of a CRD."""
UPSTREAM_PRINTER_COLUMNS: tuple[PrinterColumn, ...] = (
    (".status.conditions[-1:].type", "State", "string"),
    (".metadata.creationTimestamp", "Age", "date"),
)
"""training-operator's two columns: State is the type of the LAST condition."""


@dataclass(frozen=True)
class KindInfo:
    kind: str
    plural: str
    singular: str
    replica_specs_field: str
    replica_types: tuple[str, ...]
    """Canonical casing, in upstream's declaration order (used for key normalisation)."""
    default_container: str
    default_port_name: str
    default_port: int
    default_restart_policy: str
    framework: str
    """Value of the `framework` metric label."""
    controller_name: str
    spec_type: type
    scale_subresource: bool = False
    group: str = GROUP
    version: str = V1
    status_type: type = types.JobStatus
    """The status dataclass (historical kinds have their own)."""
    scale_replica_type: str = "Worker"
    """The replica type whose `replicas` the scale subresource (HPA) drives
    (docs/upstream-behaviour.md#scale-subresource)."""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    namespaced: bool = True
    """The CRD's scope (False: Cluster, as Trainer v2's ClusterTrainingRuntime)."""
    event_source: str = ""
    """The events' `source.component` when it is not `controller_name` (mpi-operator's recorder is
    `mpi-job-controller`, its operator-name label `mpi-operator`)."""
    printer_columns: tuple[PrinterColumn, ...] = UPSTREAM_PRINTER_COLUMNS
    """The CRD's additionalPrinterColumns, in order."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    def canonical_replica_type(self, key: str) -> str | None:
        """The canonical casing of a replica-type key (case-insensitive match), or None."""
        lowered = key.lower()
        for rtype in self.replica_types:
            if rtype.lower() == lowered:
                return rtype
        return None


TFJOB = KindInfo(
    kind="TFJob",
    plural="tfjobs",
    singular="tfjob",
    replica_specs_field="tfReplicaSpecs",
    replica_types=("PS", "Worker", "Chief", "Master", "Evaluator"),
    default_container="tensorflow",
    default_port_name="tfjob-port",
    default_port=2222,
    default_restart_policy=RESTART_NEVER,
    framework="tensorflow",
    controller_name="tfjob-controller",
    spec_type=types.TFJobSpec,
)
PYTORCHJOB = KindInfo(
    kind="PyTorchJob",
    plural="pytorchjobs",
    singular="pytorchjob",
    replica_specs_field="pytorchReplicaSpecs",
    replica_types=("Master", "Worker"),
    default_container="pytorch",
    default_port_name="pytorchjob-port",
    default_port=23456,
    default_restart_policy=RESTART_ON_FAILURE,
    framework="pytorch",
    controller_name="pytorchjob-controller",
    spec_type=types.PyTorchJobSpec,
    scale_subresource=True,
)
XGBOOSTJOB = KindInfo(
    kind="XGBoostJob",
    plural="xgboostjobs",
    singular="xgboostjob",
    replica_specs_field="xgbReplicaSpecs",
    replica_types=("Master", "Worker"),
    default_container="xgboost",
    default_port_name="xgboostjob-port",
    default_port=9999,
    default_restart_policy=RESTART_NEVER,
    framework="xgboost",
    controller_name="xgboostjob-controller",
    spec_type=types.XGBoostJobSpec,
)
PADDLEJOB = KindInfo(
    kind="PaddleJob",
    plural="paddlejobs",
    singular="paddlejob",
    replica_specs_field="paddleReplicaSpecs",
    replica_types=("Master", "Worker"),
    default_container="paddle",
    default_port_name="master",
    default_port=36543,
    default_restart_policy=RESTART_ON_FAILURE,
    framework="paddle",
    controller_name="paddlejob-controller",
    spec_type=types.PaddleJobSpec,
    scale_subresource=True,
)
JAXJOB = KindInfo(
    kind="JAXJob",
    plural="jaxjobs",
    singular="jaxjob",
    replica_specs_field="jaxReplicaSpecs",
    replica_types=("Worker",),
    default_container="jax",
    default_port_name="jaxjob-port",
    default_port=6666,
    default_restart_policy=RESTART_NEVER,
    framework="jax",
    controller_name="jaxjob-controller",
    spec_type=types.JAXJobSpec,
    scale_subresource=True,
)
MXJOB = KindInfo(
    kind="MXJob",
    plural="mxjobs",
    singular="mxjob",
    replica_specs_field="mxReplicaSpecs",
    replica_types=("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"),
    default_container="mxnet",
    default_port_name="mxjob-port",
    default_port=9091,
    default_restart_policy=RESTART_NEVER,
    framework="mxnet",
    controller_name="mxjob-controller",
    spec_type=types.MXJobSpec,
)

KINDS: dict[str, KindInfo] = {k.kind: k for k in (TFJOB, PYTORCHJOB, XGBOOSTJOB, PADDLEJOB, JAXJOB, MXJOB)}
"""Every kind served by the generic v1 path; MPIJob, ChainerJob and Caffe2Job register their own."""


def kind_info(kind: str) -> KindInfo | None:
    return KINDS.get(kind)


def reason(kind: str, suffix: str) -> str:
    """A kind-prefixed reason such as `PyTorchJobRunning` (spec conventions)."""
    return f"{kind}{suffix}"
