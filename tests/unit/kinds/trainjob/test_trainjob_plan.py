"""The TrainJob planner, step by step on a fake cluster: the JobSet compared with the one upstream
v2.3.0's controller builds for its shipped `torch-distributed` runtime, and the TrainJob status
read back from the JobSet (upstream `trainjob_controller.go`, `plugins/torch`, `plugins/jobset`)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, DeleteObject, Observed, PatchObject, Plan
from kubetrain.kinds import registry
from kubetrain.kinds.trainjob.info import new_info
from kubetrain.kinds.trainjob.torch import num_proc_per_node
from tests.trainer_runtimes import shipped_runtime

JsonDict = dict[str, Any]
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
STAMP = "2026-12-02T12:00:00Z"
TRAINER = "trainer.kubeflow.org/v1alpha1"
CTR_KEY = f"{TRAINER}/ClusterTrainingRuntime"
TR_KEY = f"{TRAINER}/TrainingRuntime"
JOBSET_KEY = "jobset.x-k8s.io/v1alpha2/JobSet"
OWNER = {
    "apiVersion": TRAINER,
    "kind": "TrainJob",
    "name": "tj",
    "uid": "uid-tj",
    "controller": True,
    "blockOwnerDeletion": True,
}
RANK = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}


def torch_distributed() -> JsonDict:
    return shipped_runtime("torch_distributed")


def trainjob_on(runtime: str, name: str = "tj", **spec: Any) -> JsonDict:
    """A TrainJob named `name` in namespace `ns` whose runtimeRef names the ClusterTrainingRuntime
    `runtime`."""
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "ns", "uid": "uid-tj", "creationTimestamp": STAMP},
        "spec": {"runtimeRef": {"name": runtime}, **spec},
    }


def trainjob(**spec: Any) -> JsonDict:
    return trainjob_on("torch-distributed", **spec)


def plan(
    job: JsonDict, *jobsets: JsonDict, runtimes: tuple[JsonDict, ...] | None = None, now: datetime = NOW
) -> Plan:
    others = {
        CTR_KEY: list((torch_distributed(),) if runtimes is None else runtimes),
        JOBSET_KEY: list(jobsets),
    }
    return registry.plan(job, Observed(others=others), now, ControllerConfig())


def created_jobset(p: Plan) -> JsonDict:
    (action,) = p.actions
    assert isinstance(action, CreateObject)
    return action.obj


def node_container(jobset: JsonDict) -> JsonDict:
    rjob = jobset["spec"]["replicatedJobs"][0]
    return rjob["template"]["spec"]["template"]["spec"]["containers"][0]


def torch_env(nodes: int, procs: str = "1") -> list[JsonDict]:
    """torchrun's env on a TrainJob `tj` of `nodes` (v2.3.0: "auto" without a GPU per node is the
    CPUs per node, at least 1, so a runtime and trainer that set no resources get "1")."""
    return [
        {"name": "PET_NNODES", "value": str(nodes)},
        {"name": "PET_NPROC_PER_NODE", "value": procs},
        {"name": "PET_NODE_RANK", "valueFrom": RANK},
        {"name": "PET_MASTER_ADDR", "value": "tj-node-0-0.tj"},
        {"name": "PET_MASTER_PORT", "value": "29500"},
    ]


def with_status(job: JsonDict, status: JsonDict) -> JsonDict:
    out = copy.deepcopy(job)
    out["status"] = status
    return out


def stored(jobset: JsonDict, **status: Any) -> JsonDict:
    """The JobSet as the API server returns it: uid and the status the JobSet controller wrote."""
    out = copy.deepcopy(jobset)
    out["metadata"]["uid"] = "uid-js"
    out["metadata"]["generation"] = 1
    out["status"] = status
    return out


def one_node_jobset(image: str, command: list[str], env: list[JsonDict]) -> JsonDict:
    """The JobSet upstream builds for a TrainJob `tj` of 2 nodes on a shipped one-job runtime:
    one `node` replicated job of 2 indexed pods whose container has the plugin's env and port."""
    container = {
        "name": "node",
        "image": image,
        "command": command,
        "env": env,
        "ports": [{"containerPort": 29500}],
    }
    job_spec = {"parallelism": 2, "completions": 2, "template": {"spec": {"containers": [container]}}}
    node = {
        "name": "node",
        "replicas": 1,
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": job_spec,
        },
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "tj", "namespace": "ns", "ownerReferences": [OWNER]},
        "spec": {"replicatedJobs": [node]},
    }


def test_the_jobset_of_torch_distributed_with_two_nodes_is_upstreams() -> None:
    job = trainjob(trainer={"numNodes": 2, "command": ["torchrun", "train.py"]})
    jobset = created_jobset(plan(job))
    assert jobset == one_node_jobset(
        "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime", ["torchrun", "train.py"], torch_env(2)
    )


def test_the_trainjobs_workdir_reaches_every_pod_template_that_names_none() -> None:
    job = trainjob(trainer={"numNodes": 2})
    job["metadata"]["annotations"] = {"kubetrain.io/workdir": "/jobs/tj"}
    runtime = torch_distributed()
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs.append(copy.deepcopy(rjobs[0]) | {"name": "other"})
    other_pod = rjobs[1]["template"]["spec"]["template"]
    other_pod.setdefault("metadata", {})["annotations"] = {"kubetrain.io/workdir": "/mine"}
    jobset = created_jobset(plan(job, runtimes=(runtime,)))
    pods = [r["template"]["spec"]["template"]["metadata"] for r in jobset["spec"]["replicatedJobs"]]
    assert [p["annotations"]["kubetrain.io/workdir"] for p in pods] == ["/jobs/tj", "/mine"]
    assert "annotations" not in created_jobset(plan(trainjob(trainer={"numNodes": 2})))["spec"][
        "replicatedJobs"
    ][0]["template"]["spec"]["template"].get("metadata", {})


def test_without_trainer_num_nodes_the_runtimes_ml_policy_decides() -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"]["numNodes"] = 3
    jobset = created_jobset(plan(trainjob(trainer={}), runtimes=(runtime,)))
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 3
    assert node_container(jobset)["env"][0] == {"name": "PET_NNODES", "value": "3"}


def test_without_a_trainer_no_torch_env_and_no_port() -> None:
    container = node_container(created_jobset(plan(trainjob())))
    assert "env" not in container and "ports" not in container


def test_the_trainers_fields_are_merged_into_the_node_container() -> None:
    runtime = torch_distributed()
    rt_container = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]
    rt_container["containers"][0]["env"] = [
        {"name": "FROM_RUNTIME", "value": "r"},
        {"name": "B", "value": "r"},
    ]
    trainer = {
        "image": "example.com/me/train:1",
        "command": ["python", "-m", "torch.distributed.run", "train.py"],
        "args": ["--epochs", "2"],
        "env": [{"name": "B", "value": "job"}, {"name": "C", "value": "job"}],
        "resourcesPerNode": {"limits": {"cpu": "3", "memory": "1Gi"}},
    }
    container = node_container(created_jobset(plan(trainjob(trainer=trainer), runtimes=(runtime,))))
    assert container["image"] == "example.com/me/train:1"
    assert container["command"] == trainer["command"] and container["args"] == ["--epochs", "2"]
    assert container["resources"] == {"limits": {"cpu": "3", "memory": "1Gi"}}
    assert container["env"] == [
        {"name": "FROM_RUNTIME", "value": "r"},
        {"name": "B", "value": "job"},
        {"name": "C", "value": "job"},
        *torch_env(1, "3"),  # "auto" without a GPU: the CPU limit
    ]


GPU = {"limits": {"nvidia.com/gpu": "1"}}


@pytest.mark.parametrize(
    ("runtime_resources", "trainer", "want"),
    [
        pytest.param(None, {}, 1, id="no-resources-one-process"),
        pytest.param(None, {"numProcPerNode": 4}, 4, id="the-trainjobs-number"),
        pytest.param(
            None,
            {"numProcPerNode": 4, "resourcesPerNode": {"limits": {"cpu": "8"}}},
            4,
            id="a-number-is-kept",
        ),
        pytest.param(None, {"resourcesPerNode": {"limits": {"cpu": "2500m"}}}, 3, id="value-rounds-up"),
        pytest.param(
            None,
            {"resourcesPerNode": {"requests": {"cpu": "2"}, "limits": {"cpu": "6"}}},
            2,
            id="requests-first",
        ),
        pytest.param(
            None,
            {"resourcesPerNode": {"requests": {"cpu": "0"}, "limits": {"cpu": "6"}}},
            6,
            id="zero-requests",
        ),
        pytest.param(
            None, {"resourcesPerNode": {"requests": {"memory": "1Gi"}}}, 1, id="no-cpu-at-least-one"
        ),
        pytest.param(None, {"resourcesPerNode": GPU}, "auto", id="a-gpu-leaves-auto-to-torchrun"),
        pytest.param(
            None,
            {"resourcesPerNode": {"limits": {"NVIDIA.COM/GPU": "2", "cpu": "4"}}},
            "auto",
            id="any-gpu-name",
        ),
        pytest.param({"limits": {"cpu": "5"}}, {}, 5, id="the-runtimes-resources"),
        pytest.param(GPU, {}, "auto", id="the-runtimes-gpu"),
        pytest.param(
            GPU,
            {"resourcesPerNode": {"limits": {"cpu": "2"}}},
            2,
            id="the-trainjobs-resources-replace-the-runtimes",
        ),
        pytest.param({"limits": {"cpu": "5"}}, None, 5, id="without-a-trainer"),
    ],
)
def test_num_proc_per_node_as_upstream_v2_3_resolves_it(
    runtime_resources: JsonDict | None, trainer: JsonDict | None, want: Any
) -> None:
    runtime = torch_distributed()
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    if runtime_resources is not None:
        node["containers"][0]["resources"] = runtime_resources
    info = new_info(trainjob(**({} if trainer is None else {"trainer": trainer})), runtime)
    assert num_proc_per_node(info, trainer) == want


def test_a_namespaced_runtime_is_found_in_the_jobs_namespace_only() -> None:
    runtime = torch_distributed()
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"]["namespace"] = "other"
    job = trainjob(trainer={"numNodes": 2})
    job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    others: dict[str, list[JsonDict]] = {TR_KEY: [runtime]}
    p = registry.plan(job, Observed(others=others), NOW, ControllerConfig())
    assert not p.actions and p.retry
    (event,) = p.events
    assert (event.type, event.reason) == ("Warning", "TrainJobResourcesCreationFailed")
    assert event.message == (
        "TrainJob resources reconciliation failed: TrainingRuntime specified in TrainJob is not found: "
        'trainingruntimes.trainer.kubeflow.org "torch-distributed" not found'
    )
    runtime["metadata"]["namespace"] = "ns"
    p = registry.plan(job, Observed(others=others), NOW, ControllerConfig())
    assert created_jobset(p)["metadata"]["name"] == "tj" and not p.retry


def test_a_missing_cluster_runtime_is_retried_with_upstreams_event() -> None:
    p = plan(trainjob(), runtimes=())
    assert not p.actions and p.retry and p.status is None
    assert p.events[0].message.endswith(
        "ClusterTrainingRuntime specified in TrainJob is not found: "
        'clustertrainingruntimes.trainer.kubeflow.org "torch-distributed" not found'
    )


def test_an_unsupported_runtime_kind_fails_the_job() -> None:
    job = trainjob()
    job["spec"]["runtimeRef"] = {"name": "x", "apiGroup": "example.com", "kind": "Runtime"}
    p = plan(job)
    assert not p.actions
    assert p.status == {
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "TrainingRuntimeNotSupported",
                "message": "unsupported runtime: Runtime.example.com",
                "lastTransitionTime": STAMP,
            }
        ]
    }


def test_a_running_jobset_completes_the_trainjob_and_the_next_plan_is_empty() -> None:
    job = trainjob(trainer={"numNodes": 2})
    first = plan(job)
    assert first.status is None  # nothing to say before the JobSet exists
    jobset = stored(created_jobset(first), replicatedJobsStatus=[{"name": "node", "active": 2, "ready": 2}])
    running = plan(job, jobset)
    assert not running.actions
    assert running.status == {
        "jobsStatus": [{"name": "node", "ready": 2, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}]
    }
    job = with_status(job, running.status)
    assert plan(job, jobset).is_empty
    completed = {
        "type": "Completed",
        "status": "True",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-12-02T12:05:00Z",
        "reason": "AllJobsCompleted",
        "message": "jobset completed successfully",
    }
    done = stored(
        jobset,
        conditions=[completed],
        terminalState="Completed",
        replicatedJobsStatus=[{"name": "node", "succeeded": 2}],
    )
    finished = plan(job, done)
    assert not finished.actions
    assert finished.status == {
        "jobsStatus": [
            {"name": "node", "ready": 0, "succeeded": 2, "failed": 0, "active": 0, "suspended": 0}
        ],
        "conditions": [{**completed, "type": "Complete"}],
    }
    assert plan(with_status(job, finished.status), done).is_empty


def test_a_failed_jobset_fails_the_trainjob_with_its_reason() -> None:
    job = trainjob(trainer={"numNodes": 2})
    jobset = created_jobset(plan(job))
    failed = {
        "type": "Failed",
        "status": "True",
        "lastTransitionTime": "2026-12-02T12:05:00Z",
        "reason": "FailedJobs",
        "message": "jobset failed due to reaching max restarts",
    }
    p = plan(job, stored(jobset, conditions=[failed]))
    assert p.status is not None and p.status["conditions"] == [failed]
    # the Failed condition is cleared and copied again on every pass: no change, no write
    assert plan(with_status(job, p.status), stored(jobset, conditions=[failed])).is_empty


def test_suspend_is_propagated_and_resume_unsuspends_the_jobset() -> None:
    job = trainjob(trainer={"numNodes": 2}, suspend=True)
    first = plan(job)
    jobset = created_jobset(first)
    assert jobset["spec"]["suspend"] is True
    suspended = {
        "type": "Suspended",
        "status": "True",
        "reason": "Suspended",
        "message": "TrainJob is suspended",
        "lastTransitionTime": STAMP,
    }
    assert first.status == {"conditions": [suspended]}
    job = with_status(job, first.status)
    assert plan(job, stored(jobset)).is_empty
    later = NOW + timedelta(minutes=1)
    job["spec"]["suspend"] = False
    resumed = plan(job, stored(jobset), now=later)
    (action,) = resumed.actions
    assert isinstance(action, PatchObject) and action.patch == {"spec": {"suspend": False}}
    assert resumed.status == {
        "conditions": [
            {
                "type": "Suspended",
                "status": "False",
                "reason": "Resumed",
                "message": "TrainJob is resumed",
                "lastTransitionTime": "2026-12-02T12:01:00Z",
            }
        ]
    }


def test_a_trainjob_managed_elsewhere_is_left_alone() -> None:
    assert plan(trainjob(managedBy="kueue.x-k8s.io/multikueue")).is_empty
    own = plan(trainjob(managedBy="trainer.kubeflow.org/trainjob-controller"))
    assert created_jobset(own)["metadata"]["name"] == "tj"


def test_a_same_named_jobset_it_does_not_control_is_refused() -> None:
    foreign = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "tj", "namespace": "ns"},
    }
    p = plan(trainjob(), foreign)
    assert not p.actions and p.retry
    assert p.events[0].reason == "ErrResourceExists"


def test_past_its_active_deadline_the_trainjob_fails_and_its_jobset_is_deleted() -> None:
    job = trainjob(trainer={"numNodes": 2}, activeDeadlineSeconds=600)
    jobset = stored(created_jobset(plan(job)))
    before = plan(job, jobset, now=NOW + timedelta(seconds=200))
    assert before.requeue_after == 400 and not before.actions
    after = plan(job, jobset, now=NOW + timedelta(seconds=601))
    (action,) = after.actions
    assert isinstance(action, DeleteObject) and action.ref.name == "tj" and action.ref.kind == "JobSet"
    assert after.status == {
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "DeadlineExceeded",
                "message": "TrainJob exceeded its active deadline",
                "lastTransitionTime": "2026-12-02T12:10:01Z",
            }
        ]
    }


def test_runtime_patches_label_the_jobset_and_merge_into_the_template() -> None:
    patch = {
        "manager": "kueue.x-k8s.io/manager",
        "trainingRuntimeSpec": {
            "template": {
                "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}, "annotations": {"a": "b"}},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "nodeSelector": {"pool": "gpu"},
                                            "containers": [
                                                {"name": "node", "env": [{"name": "X", "value": "1"}]}
                                            ],
                                        }
                                    }
                                }
                            },
                        }
                    ]
                },
            }
        },
    }
    jobset = created_jobset(plan(trainjob(trainer={"numNodes": 2}, runtimePatches=[patch])))
    assert jobset["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "q"}
    assert jobset["metadata"]["annotations"] == {"a": "b"}
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "gpu"}
    assert pod["containers"][0]["image"].startswith("pytorch/pytorch:")
    assert pod["containers"][0]["env"] == [{"name": "X", "value": "1"}, *torch_env(2)]


def test_an_ml_policy_kubetrain_lacks_is_said_once_when_the_jobset_is_created() -> None:
    """A flux policy (upstream's `plugins/flux`, not in kubetrain): the JobSet is built with a
    Warning naming the policy; the next pass (the JobSet exists) says nothing more, and torch's own
    policy never warns (nor mpi's: `test_trainjob_plan_mpi`)."""
    runtime = torch_distributed()
    runtime["metadata"]["name"] = "flux-runtime"
    runtime["spec"]["mlPolicy"] = {"numNodes": 1, "flux": {"numProcPerNode": 1}}
    job = trainjob_on("flux-runtime", trainer={"numNodes": 2})
    first = plan(job, runtimes=(runtime,))
    jobset = created_jobset(first)
    warnings = [(e.type, e.reason) for e in first.events if e.reason == "MLPolicyNotImplemented"]
    assert warnings == [("Warning", "MLPolicyNotImplemented")], first.events
    message = next(e.message for e in first.events if e.reason == "MLPolicyNotImplemented")
    assert '"flux" ML policy' in message and "(implemented: torch, jax, xgboost, mpi)" in message
    again = plan(job, stored(jobset), runtimes=(runtime,))
    assert not [e for e in again.events if e.reason == "MLPolicyNotImplemented"], again.events
    torch_plan = plan(trainjob(trainer={"numNodes": 2}))
    assert not [e for e in torch_plan.events if e.reason == "MLPolicyNotImplemented"], torch_plan.events


@pytest.mark.parametrize(
    "ml_policy",
    [
        pytest.param(None, id="no-ml-policy"),
        pytest.param({"numNodes": 1}, id="num-nodes-only"),
        pytest.param({"numNodes": 1, "flux": {}}, id="flux"),
    ],
)
def test_on_a_plain_runtime_the_trainjobs_num_nodes_count_as_upstreams_plainml_plugin_has_it(
    ml_policy: JsonDict | None,
) -> None:
    runtime = torch_distributed()
    if ml_policy is None:
        del runtime["spec"]["mlPolicy"]
    else:
        runtime["spec"]["mlPolicy"] = ml_policy
    jobset = created_jobset(plan(trainjob(trainer={"numNodes": 3}), runtimes=(runtime,)))
    job_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (job_spec["parallelism"], job_spec["completions"]) == (3, 3)
    assert "env" not in job_spec["template"]["spec"]["containers"][0]  # no torchrun env either


def test_env_injection_gives_torchruns_env_to_the_targeted_init_and_sidecar_containers() -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["preflight", "sidecar"]}]}
    }
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["initContainers"] = [
        {"name": "preflight", "image": "busybox", "env": [{"name": "KEEP", "value": "1"}]}
    ]
    pod["containers"].append({"name": "sidecar", "image": "busybox"})
    # torchtune: the main container gets no master address, the injected containers still do
    job = trainjob(trainer={"numNodes": 2, "command": ["tune", "run"]})
    spec = created_jobset(plan(job, runtimes=(runtime,)))["spec"]["replicatedJobs"][0]["template"]["spec"]
    pod = spec["template"]["spec"]
    assert pod["initContainers"][0]["env"] == [{"name": "KEEP", "value": "1"}, *torch_env(2)]
    assert pod["containers"][1]["env"] == torch_env(2)
    assert pod["containers"][0]["env"] == torch_env(2)[:3]
    assert pod["containers"][0]["ports"] == [{"containerPort": 29500}]


def test_an_env_injection_target_the_runtime_lacks_builds_nothing_with_upstreams_error() -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["gone"]}]}
    }
    p = plan(trainjob(trainer={"numNodes": 2}), runtimes=(runtime,))
    assert p.actions == [] and p.retry
    assert p.events[0].message == (
        "TrainJob resources reconciliation failed: "
        'envInjection target podSet "node" container "gone" not found in runtime template'
    )


KUEUE_PATCH = {
    "manager": "kueue.x-k8s.io/manager",
    "trainingRuntimeSpec": {
        "template": {
            "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "spec": {
                                "template": {
                                    "spec": {
                                        "nodeSelector": {"pool": "a100"},
                                        "tolerations": [{"key": "gpu", "operator": "Exists"}],
                                    }
                                }
                            }
                        },
                    }
                ]
            },
        }
    },
}


def test_a_runtime_patch_added_while_suspended_reaches_the_jobsets_pod_templates() -> None:
    """Kueue's flow: the TrainJob is created suspended, Kueue adds a runtime patch with its node
    selector and tolerations, then resumes it; upstream re-applies the JobSet while suspended, so
    the pods Kueue admitted start where it placed them."""
    job = trainjob(trainer={"numNodes": 2}, suspend=True)
    jobset = stored(created_jobset(plan(job)))
    pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["restartPolicy"] = "OnFailure"  # what a webhook defaulted is no difference
    assert plan(job, jobset).actions == []
    job["spec"]["runtimePatches"] = [KUEUE_PATCH]
    job["spec"]["suspend"] = False
    (action,) = plan(job, jobset).actions
    assert isinstance(action, PatchObject) and action.ref.kind == "JobSet"
    assert action.patch["spec"]["suspend"] is False
    assert action.patch["metadata"] == {"labels": {"kueue.x-k8s.io/queue-name": "q"}}
    (rjob,) = action.patch["spec"]["replicatedJobs"]
    assert rjob["replicas"] == 1 and rjob["template"]["spec"]["parallelism"] == 2
    patched = rjob["template"]["spec"]["template"]["spec"]
    assert patched["nodeSelector"] == {"pool": "a100"}
    assert patched["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert patched["containers"][0]["env"] == torch_env(2)


def test_a_running_jobset_is_not_rewritten_by_a_later_runtime_patch() -> None:
    job = trainjob(trainer={"numNodes": 2})
    jobset = stored(created_jobset(plan(job)))
    job["spec"]["runtimePatches"] = [KUEUE_PATCH]
    assert plan(job, jobset).actions == []
