"""JobSet's API identity, label and annotation keys, condition types, reasons and messages.

Copied exactly from kubernetes-sigs/jobset v0.10.1: the keys and condition types from
``api/jobset/v1alpha2/jobset_types.go``, the reasons and messages from ``pkg/constants/constants.go``.
Clients (Kueue, Trainer, kubectl users) match on these strings, so they must not drift.
"""

from __future__ import annotations

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "JobSet"
PLURAL = "jobsets"

# api/jobset/v1alpha2/jobset_types.go
JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID_KEY = "jobset.sigs.k8s.io/jobset-uid"
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS_KEY = "jobset.sigs.k8s.io/global-replicas"
REPLICATED_JOB_NAME_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_KEY = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX_KEY = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
EXCLUSIVE_KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY_KEY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB_KEY = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE_TAINT_KEY = "alpha.jobset.sigs.k8s.io/no-schedule"
JOBSET_CONTROLLER_NAME = "jobset.sigs.k8s.io/jobset-controller"
COORDINATOR_KEY = "jobset.sigs.k8s.io/coordinator"
GROUP_NAME_KEY = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS_KEY = "jobset.sigs.k8s.io/group-replicas"
JOB_GROUP_INDEX_KEY = "jobset.sigs.k8s.io/job-group-index"

# pkg/constants/constants.go
RESTARTS_KEY = "jobset.sigs.k8s.io/restart-attempt"

# JobSetConditionType
COMPLETED = "Completed"
FAILED = "Failed"
SUSPENDED = "Suspended"
STARTUP_POLICY_IN_PROGRESS = "StartupPolicyInProgress"
STARTUP_POLICY_COMPLETED = "StartupPolicyCompleted"

# Operators, startup orders, failure policy actions, restart strategies, dependency statuses.
OPERATOR_ALL = "All"
OPERATOR_ANY = "Any"
ANY_ORDER = "AnyOrder"
IN_ORDER = "InOrder"
FAIL_JOBSET = "FailJobSet"
RESTART_JOBSET = "RestartJobSet"
RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS = "RestartJobSetAndIgnoreMaxRestarts"
RECREATE = "Recreate"
BLOCKING_RECREATE = "BlockingRecreate"
DEPENDENCY_READY = "Ready"
DEPENDENCY_COMPLETE = "Complete"

REACHED_MAX_RESTARTS_REASON = "ReachedMaxRestarts"
REACHED_MAX_RESTARTS_MESSAGE = "jobset failed due to reaching max number of restarts"
FAILED_JOBS_REASON = "FailedJobs"
FAILED_JOBS_MESSAGE = "jobset failed due to one or more job failures"
ALL_JOBS_COMPLETED_REASON = "AllJobsCompleted"
ALL_JOBS_COMPLETED_MESSAGE = "jobset completed successfully"
JOB_CREATION_FAILED_REASON = "JobCreationFailed"
HEADLESS_SERVICE_CREATION_FAILED_REASON = "HeadlessServiceCreationFailed"
IN_ORDER_STARTUP_POLICY_IN_PROGRESS_REASON = "InOrderStartupPolicyInProgress"
IN_ORDER_STARTUP_POLICY_IN_PROGRESS_MESSAGE = "in order startup policy is in progress"
IN_ORDER_STARTUP_POLICY_COMPLETED_REASON = "InOrderStartupPolicyCompleted"
IN_ORDER_STARTUP_POLICY_COMPLETED_MESSAGE = "in order startup policy has completed"
JOBSET_RESTART_REASON = "Restarting"
JOBSET_SUSPENDED_REASON = "SuspendedJobs"
JOBSET_SUSPENDED_MESSAGE = "jobset is suspended"
JOBSET_RESUMED_REASON = "ResumeJobs"
JOBSET_RESUMED_MESSAGE = "jobset is resumed"
FAIL_JOBSET_ACTION_REASON = "FailJobSetFailurePolicyAction"
FAIL_JOBSET_ACTION_MESSAGE = "applying FailJobSet failure policy action"
RESTART_JOBSET_ACTION_REASON = "RestartJobSetFailurePolicyAction"
RESTART_JOBSET_ACTION_MESSAGE = "applying RestartJobSet failure policy action"
RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_REASON = "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_MESSAGE = (
    "applying RestartJobSetAndIgnoreMaxRestarts failure policy action"
)

EVENT_COMPONENT = "jobset"
"""The recorder name of upstream's ``main.go`` (``mgr.GetEventRecorderFor("jobset")``)."""
