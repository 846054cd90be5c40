"""Kubeflow Trainer v2.3's names the webhook's rules use (upstream `pkg/constants/constants.go`)."""

from __future__ import annotations

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
TRAINER_VERSION = "v2.3.0"
"""The upstream release whose CRDs `data/` holds and whose webhook rules `validation` follows."""

TRAINJOB = "TrainJob"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"

LABEL_TRAINJOB_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
LABEL_SUPPORT = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED = "deprecated"
RUNTIME_DEPRECATION_POLICY_URL = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)

DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
ANCESTOR_TRAINER = "trainer"
NODE = "node"
LAUNCHER = "launcher"
VOLUME_NAME_INITIALIZER = "initializer"
"""The initializers' shared volume (upstream `plugins/jobset/constants`)."""

TORCHRUN_RESERVED_ENVS = frozenset(
    {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
)
# The MPI plugin's (upstream v2.3.0 `pkg/constants`).
MPI_SSH_AUTH_SECRET_SUFFIX = "-mpi-ssh-auth"
MPI_SSH_AUTH_VOLUME_NAME = "mpi-ssh-auth"
MPI_SSH_PRIVATE_KEY = "ssh-privatekey"
"""`corev1.SSHAuthPrivateKey`: the private key's key in a kubernetes.io/ssh-auth Secret."""
MPI_SSH_PUBLIC_KEY = "ssh-publickey"
MPI_SSH_PRIVATE_KEY_FILE = "id_rsa"
MPI_SSH_PUBLIC_KEY_FILE = MPI_SSH_PRIVATE_KEY_FILE + ".pub"
MPI_SSH_AUTHORIZED_KEYS = "authorized_keys"
MPI_SSH_AUTH_DEFAULT_MODE = 0o400
MPI_SSH_PRIVATE_KEY_FILE_MODE = 0o640
MPI_SSH_PUBLIC_KEY_FILE_MODE = 0o644
MPI_HOSTFILE_DIR = "/etc/mpi"
MPI_HOSTFILE_NAME = "hostfile"
MPI_HOSTFILE_CONFIG_MAP_SUFFIX = "-mpi-hostfile"
MPI_HOSTFILE_VOLUME_NAME = "mpi-hostfile"
MPI_HOSTFILE_MODE = 0o444
SECRET_TYPE_SSH_AUTH = "kubernetes.io/ssh-auth"
MPI_IMPLEMENTATION_OPENMPI = "OpenMPI"
MPI_DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
"""The CRD's default of `mlPolicy.mpi.sshAuthMountPath` (as `numProcPerNode` 1, `OpenMPI`)."""
OPENMPI_ENV_HOSTFILE_LOCATION = "OMPI_MCA_orte_default_hostfile"
OPENMPI_ENV_KEY_RSH_ARGS = "OMPI_MCA_plm_rsh_args"
OPENMPI_ENV_DEFAULT_VALUE_RSH_ARGS = "-o ConnectionAttempts=10"
OPENMPI_ENV_KEEP_FQDN_HOSTNAMES = "OMPI_MCA_orte_keep_fqdn_hostnames"
OPENMPI_ENV_DEFAULT_SLOTS = "OMPI_MCA_orte_set_default_slots"
MPI_RESERVED_ENVS = frozenset(
    {
        OPENMPI_ENV_HOSTFILE_LOCATION,
        OPENMPI_ENV_KEY_RSH_ARGS,
        OPENMPI_ENV_KEEP_FQDN_HOSTNAMES,
        OPENMPI_ENV_DEFAULT_SLOTS,
    }
)
XGBOOST_ENV_TRACKER_URI = "DMLC_TRACKER_URI"
XGBOOST_ENV_TRACKER_PORT = "DMLC_TRACKER_PORT"
XGBOOST_ENV_TASK_ID = "DMLC_TASK_ID"
XGBOOST_ENV_NUM_WORKER = "DMLC_NUM_WORKER"
XGBOOST_RESERVED_ENVS = frozenset(
    {XGBOOST_ENV_TRACKER_URI, XGBOOST_ENV_TRACKER_PORT, XGBOOST_ENV_TASK_ID, XGBOOST_ENV_NUM_WORKER}
)

# The TrainJob controller's (upstream `pkg/constants`, `pkg/apis/trainer/v1alpha1`).
CONTROLLER_NAME = "trainer.kubeflow.org/trainjob-controller"
"""The `spec.managedBy` of a TrainJob this controller reconciles (the CRD's default)."""
COND_SUSPENDED = "Suspended"
COND_COMPLETE = "Complete"
COND_FAILED = "Failed"
REASON_SUSPENDED = "Suspended"
REASON_RESUMED = "Resumed"
REASON_RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
MESSAGE_SUSPENDED = "TrainJob is suspended"
MESSAGE_RESUMED = "TrainJob is resumed"
EVENT_RESOURCES_CREATION_FAILED = "TrainJobResourcesCreationFailed"

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET_KIND = "JobSet"
JOBSET_COMPLETED = "Completed"
JOBSET_FAILED = "Failed"

CONTAINER_TRAINER_PORT = 29500
"""The node container's port (upstream v2.3.0 `constants.ContainerTrainerPort`, 29500): torchrun's
rendezvous, JAX's coordinator, XGBoost's tracker."""
JOB_COMPLETION_INDEX_FIELD_PATH = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
TORCH_ENV_NUM_NODES = "PET_NNODES"
TORCH_ENV_NUM_PROC_PER_NODE = "PET_NPROC_PER_NODE"
TORCH_ENV_NODE_RANK = "PET_NODE_RANK"
TORCH_ENV_MASTER_ADDR = "PET_MASTER_ADDR"
TORCH_ENV_MASTER_PORT = "PET_MASTER_PORT"
TORCH_TUNE_ENTRYPOINT = ("tune", "run")
JAX_ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
JAX_ENV_PROCESS_ID = "JAX_PROCESS_ID"
JAX_ENV_COORDINATOR_ADDRESS = "JAX_COORDINATOR_ADDRESS"
INITIALIZER_ENV_STORAGE_URI = "STORAGE_URI"
DEFAULT_JOB_REPLICAS = 1
