"""What describes a job kind to the generic machinery: `KindInfo` and its `KindRules`.

The api layer parses, defaults, validates and renders the CRD of any kind from its `KindInfo`
(docs/upstream-behaviour.md#api-surface), received as a parameter; it defines no kind itself. The
six `kubeflow.org/v1` replica-spec kinds describe themselves in their framework packages
(`kubetrain/frameworks/<name>/wire.py`), the kinds with planners of their own (MPIJob, ChainerJob,
Caffe2Job) in their packages of `kubetrain.kinds` (`kubetrain/kinds/<name>/wire.py`), and
`kubetrain.kinds.registry` lists them all. The labels, conditions and policies every kind shares are here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api import types
from kubetrain.api.fielderrors import ErrorList, ValidationResult

GROUP = "kubeflow.org"
V1 = "v1"
V1ALPHA1 = "v1alpha1"
"""The version of the archived kinds (ChainerJob, Caffe2Job)."""
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


KindCheck = Callable[[types.TrainingJob, "KindInfo", ValidationResult], None]
"""A kind's own webhook rule over the whole job (errors and warnings into the result)."""
ReplicaCheck = Callable[[str, types.ReplicaSpec | None, str, ErrorList], None]
"""A kind's own webhook rule for one replica type: (key, spec, its field path, errors)."""


@dataclass(frozen=True)
class KindRules:
    """What a kind's upstream webhook and controller do beyond the rules every kind shares: its
    quirks as flags, its own fields' rules and defaults as hooks (docs/upstream-behaviour.md#validation,
    #defaults). The default is a kind that has every shared check and nothing of its own."""

    replica_types_checked: bool = True
    """Whether the webhook rejects replica-type keys not in `KindInfo.replica_types` (exact
    casing); TFJob's and MXJob's do not."""
    checks_managed_by: bool = True
    managed_by_immutable: bool = True
    quote_container_name: bool = False
    """The missing-container message quotes the name (`with name "paddle"`)."""
    before_replicas: KindCheck | None = None
    after_replica: ReplicaCheck | None = None
    after_replicas: KindCheck | None = None
    spec_checks: Callable[[Any, ErrorList], None] | None = None
    """kubetrain's additions for the kind's own spec fields (enums, ranges), after the shared ones."""
    spec_defaults: Callable[[Any], None] | None = None
    """Defaults of the kind's own spec fields, set on the (already copied) spec in place."""
    scaled_replicas: Callable[[Any, str], int | None] | None = None
    """The most replicas a replica type may scale to beyond `replicas` (an elastic policy's max),
    or None: the longest pod name is checked against it."""


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
    rules: KindRules = field(default_factory=KindRules)
    """Its webhook's quirks and its own fields' rules and defaults."""
    webhook_name: str = ""
    """Its validating webhook's name when it is not training-operator's
    (`validator.<singular>.training-operator.kubeflow.org`), e.g. Trainer v2's
    `validator.trainjob.trainer.kubeflow.org`."""

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


def reason(kind: str, suffix: str) -> str:
    """A kind-prefixed reason such as `PyTorchJobRunning` (spec conventions)."""
    return f"{kind}{suffix}"
