"""Kubeflow Trainer v2's API (`trainer.kubeflow.org/v1alpha1`), one package: TrainJob,
TrainingRuntime and ClusterTrainingRuntime (cluster-scoped), each a registration.

Their CRDs are upstream v2.3.0's, shipped unchanged (`crd.py`), served by the local plane and
installed by `kubetrain install`; the webhook validates them with upstream's rules and messages
(`validation.py`). A TrainJob is planned (`planner.py`): its runtime read from the context the
runtime layer lists (`ObserveHints.context`), `info.py` and the ML policy plugins (`torch.py`,
`jax.py`, `xgboost.py`, `mpi.py`) make the JobSet it owns (`jobset.py`), whose status becomes the
TrainJob's, and the MPI plugin's SSH Secret and hostfile ConfigMap; the pod group plugins
(`podgroup.py`) its coscheduling or Volcano PodGroup. The runtimes have no planner:
a TrainJob's planner reads them, nothing reconciles them.
"""

from __future__ import annotations

from kubetrain.kinds.registration import KindRegistration, ObserveHints
from kubetrain.kinds.trainjob.crd import CLUSTER_TRAINING_RUNTIMES_CRD, TRAINING_RUNTIMES_CRD, TRAINJOBS_CRD
from kubetrain.kinds.trainjob.planner import (
    CLUSTER_TRAINING_RUNTIME_CONTEXT,
    JOBSET_CHILD,
    JOBSET_NAME_LABEL,
    MPI_CHILDREN,
    POD_GROUP_CHILDREN,
    TRAINING_RUNTIME_CONTEXT,
    plan,
)
from kubetrain.kinds.trainjob.public import public_objects
from kubetrain.kinds.trainjob.validation import (
    admit_cluster_training_runtime,
    admit_training_runtime,
    admit_trainjob,
)
from kubetrain.kinds.trainjob.wire import (
    CLUSTER_TRAINING_RUNTIME_INFO,
    TRAINING_RUNTIME_INFO,
    TRAINJOB_INFO,
    parser,
)

TRAINJOB_REGISTRATION = KindRegistration(
    versions=(TRAINJOB_INFO,),
    planner=plan,
    parse=parser(TRAINJOB_INFO),
    children=(JOBSET_CHILD, *MPI_CHILDREN, *POD_GROUP_CHILDREN),
    observe=ObserveHints(
        namesakes=True,
        replica_specs_map=False,
        context=(TRAINING_RUNTIME_CONTEXT, CLUSTER_TRAINING_RUNTIME_CONTEXT),
    ),
    webhook=True,
    admit=admit_trainjob,
    shipped_crd=TRAINJOBS_CRD,
    admission_reads=(TRAINING_RUNTIME_INFO, CLUSTER_TRAINING_RUNTIME_INFO),
    pod_job_label=JOBSET_NAME_LABEL,
    installs=public_objects(),
)
TRAINING_RUNTIME_REGISTRATION = KindRegistration(
    versions=(TRAINING_RUNTIME_INFO,),
    planner=None,  # read by the TrainJob planner, never reconciled
    parse=parser(TRAINING_RUNTIME_INFO),
    webhook=True,
    admit=admit_training_runtime,
    shipped_crd=TRAINING_RUNTIMES_CRD,
)
CLUSTER_TRAINING_RUNTIME_REGISTRATION = KindRegistration(
    versions=(CLUSTER_TRAINING_RUNTIME_INFO,),
    planner=None,  # read by the TrainJob planner, never reconciled
    parse=parser(CLUSTER_TRAINING_RUNTIME_INFO),
    webhook=True,
    admit=admit_cluster_training_runtime,
    shipped_crd=CLUSTER_TRAINING_RUNTIMES_CRD,
)

REGISTRATIONS = (TRAINJOB_REGISTRATION, TRAINING_RUNTIME_REGISTRATION, CLUSTER_TRAINING_RUNTIME_REGISTRATION)

__all__ = ["REGISTRATIONS"]
