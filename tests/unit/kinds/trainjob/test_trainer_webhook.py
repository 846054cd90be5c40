"""Trainer v2.3's validating webhooks through our handler: upstream's rules and messages
(`pkg/webhooks/` and the runtime plugins' `Validate`), table-driven.

The runtimes are upstream's shipped ones (`runtimes/`, copies of `manifests/base/runtimes/`),
some changed per case; a TrainJob's runtime is read through the lookup the local plane gives
the webhook (a dict here)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubetrain.kinds.trainjob.constants import RUNTIME_DEPRECATION_POLICY_URL
from kubetrain.kinds.trainjob.wire import CLUSTER_TRAINING_RUNTIME_INFO, TRAINING_RUNTIME_INFO, TRAINJOB_INFO
from kubetrain.webhook.handler import admit, routes
from kubetrain.webhook.review import AdmissionRequest
from tests.trainer_runtimes import shipped_runtime

JsonDict = dict[str, Any]


def go_json(value: object) -> str:
    """A bad value as Go's json.Marshal prints it in a field error: compact, keys sorted."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


SHIPPED = [
    "torch_distributed",
    "deepspeed_distributed",
    "jax_distributed",
    "xgboost_distributed",
    "mlx_distributed",
]
API_VERSION = "trainer.kubeflow.org/v1alpha1"


def shipped(name: str) -> JsonDict:
    return shipped_runtime(name)


def namespaced(runtime: JsonDict, namespace: str = "default") -> JsonDict:
    out = copy.deepcopy(runtime)
    out["kind"] = "TrainingRuntime"
    out["metadata"]["namespace"] = namespace
    return out


def trainjob(runtime: str = "torch-distributed", ref: JsonDict | None = None, **spec: Any) -> JsonDict:
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": runtime, **(ref or {})}, **spec},
    }


def without_launcher(runtime: JsonDict) -> JsonDict:
    out = copy.deepcopy(runtime)
    jobs = out["spec"]["template"]["spec"]["replicatedJobs"]
    out["spec"]["template"]["spec"]["replicatedJobs"] = [j for j in jobs if j["name"] != "launcher"]
    return out


def trainer_job(runtime: JsonDict, **changes: Any) -> JsonDict:
    """`runtime` with its trainer-step replicated job (the first) changed."""
    out = copy.deepcopy(runtime)
    out["spec"]["template"]["spec"]["replicatedJobs"][0].update(changes)
    return out


def deprecated(runtime: JsonDict) -> JsonDict:
    out = copy.deepcopy(runtime)
    out["metadata"]["labels"]["trainer.kubeflow.org/support"] = "deprecated"
    return out


def store(*objects: JsonDict) -> dict[tuple[str, str, str], JsonDict]:
    plural = {"TrainingRuntime": "trainingruntimes", "ClusterTrainingRuntime": "clustertrainingruntimes"}
    return {
        (plural[o["kind"]], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects
    }


TORCH = shipped("torch_distributed")
DEEPSPEED = shipped("deepspeed_distributed")
XGBOOST = shipped("xgboost_distributed")
CLUSTER = store(*(shipped(name) for name in SHIPPED))
ENV = [
    {"name": "PET_NNODES", "value": "2"},
    {"name": "PET_MASTER_ADDR", "value": "x"},
    {"name": "A", "value": "b"},
]
PATCH_NODE_ENV = [
    {
        "manager": "example.com/tuner",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {"containers": [{"name": "node", "env": [{"name": "A"}]}]}
                                    }
                                }
                            },
                        }
                    ]
                }
            }
        },
    }
]
PATCH_UNKNOWN_JOB = [
    {
        "manager": "example.com/tuner",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "worker"}]}}},
    }
]
DEPRECATION = (
    '"torch-distributed" is deprecated and will be removed in a future release of Kubeflow Trainer. '
    f"See runtime deprecation policy: {RUNTIME_DEPRECATION_POLICY_URL}"
)
CTR_DENIED = "spec.template.spec.replicatedJobs[0]"


@dataclass(frozen=True)
class Case:
    id: str
    obj: JsonDict
    message: str = ""
    """The denial's message ("" = allowed)."""
    runtimes: dict[tuple[str, str, str], JsonDict] = field(default_factory=lambda: CLUSTER)
    old: JsonDict | None = None
    warnings: tuple[str, ...] = ()


CASES = [
    Case("valid trainjob on a cluster runtime", trainjob(trainer={"numNodes": 2, "numProcPerNode": 4})),
    Case(
        "valid trainjob on a namespaced runtime",
        trainjob(ref={"kind": "TrainingRuntime"}),
        runtimes=store(namespaced(TORCH)),
    ),
    Case(
        "an unknown runtime kind",
        trainjob(ref={"kind": "Runtime"}),
        "unsupported runtime: Runtime.trainer.kubeflow.org",
    ),
    Case(
        "a runtime of another api group",
        trainjob(ref={"apiGroup": "example.com"}),
        "unsupported runtime: ClusterTrainingRuntime.example.com",
    ),
    Case("an empty api group", trainjob(ref={"apiGroup": ""}), "unsupported runtime: ClusterTrainingRuntime"),
    Case(
        "a cluster runtime that does not exist",
        trainjob("nope"),
        'spec.RuntimeRef: Invalid value: {"name":"nope"}: '
        'clustertrainingruntimes.trainer.kubeflow.org "nope" not found: '
        "specified clusterTrainingRuntime must be created before the TrainJob is created",
    ),
    Case(
        "a namespaced runtime of another namespace",
        trainjob(ref={"kind": "TrainingRuntime"}),
        'spec.runtimeRef: Invalid value: {"kind":"TrainingRuntime","name":"torch-distributed"}: '
        'trainingruntimes.trainer.kubeflow.org "torch-distributed" not found: specified trainingRuntime must '
        "be created before the TrainJob is created",
        runtimes=store(namespaced(TORCH, "team-a")),
    ),
    Case(
        "torchrun's reserved envs",
        trainjob(trainer={"env": ENV}),
        f"spec.trainer.env: Invalid value: {go_json(ENV)}: must not have reserved envs, "
        "invalid envs configured: [PET_MASTER_ADDR PET_NNODES]",
    ),
    Case(
        "mpi: runLauncherAsNode with 2 nodes and no launcher job",
        trainjob("deepspeed-distributed", trainer={"numNodes": 2}),
        "spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime with enabled "
        "runLauncherAsNode does not have either launcher and node",
        runtimes=store(without_launcher(DEEPSPEED)),
    ),
    Case(
        "mpi: 2 nodes with launcher and node jobs", trainjob("deepspeed-distributed", trainer={"numNodes": 2})
    ),
    Case(
        "mpi's reserved envs",
        trainjob(
            "deepspeed-distributed", trainer={"env": [{"name": "OMPI_MCA_plm_rsh_args", "value": "-p 22"}]}
        ),
        'spec.trainer.env: Invalid value: [{"name":"OMPI_MCA_plm_rsh_args","value":"-p 22"}]: '
        "must not have reserved envs, invalid envs configured: [OMPI_MCA_plm_rsh_args]",
    ),
    Case(
        "xgboost's reserved envs",
        trainjob("xgboost-distributed", trainer={"env": [{"name": "A"}, {"name": "DMLC_TASK_ID"}]}),
        "spec.trainer.env[1]: Forbidden: DMLC_TASK_ID is reserved for the XGBoost runtime",
    ),
    Case(
        "a dataset without a dataset-initializer job",
        trainjob(initializer={"dataset": {"storageUri": "hf://x"}}),
        'spec.runtimeRef: Invalid value: {"name":"torch-distributed"}: must have dataset-initializer job '
        "when trainJob is configured with input datasetConfig",
    ),
    Case(
        "a runtime patch of a job the runtime lacks",
        trainjob(runtimePatches=PATCH_UNKNOWN_JOB),
        f"spec.runtimePatches: Invalid value: {go_json(PATCH_UNKNOWN_JOB)}: "
        "must not have replicated job that doesn't exist in the runtime job template",
    ),
    Case(
        "a runtime patch setting the node's envs",
        trainjob(runtimePatches=PATCH_NODE_ENV),
        f"spec.runtimePatches: Invalid value: {go_json(PATCH_NODE_ENV)}: "
        "must not have envs for the dataset-initializer, model-initializer, node containers",
    ),
    Case(
        "a runtime patch manager that is not a domain-prefixed path",
        trainjob(runtimePatches=[{"manager": "tuner"}]),
        'spec.runtimePatches.manager: Invalid value: "tuner": '
        'must be a domain-prefixed path (such as "acme.io/foo")',
    ),
    Case(
        "a deprecated cluster runtime is referenced with a warning",
        trainjob(),
        runtimes=store(deprecated(TORCH)),
        warnings=(f"Referenced ClusterTrainingRuntime {DEPRECATION}",),
    ),
    Case(
        "a runtime whose trainer step runs twice",
        namespaced(trainer_job(TORCH, replicas=2)),
        f"{CTR_DENIED}.replicas: Invalid value: 2: always must be 1",
    ),
    Case(
        "a trainer step without the node container",
        namespaced(
            trainer_job(
                TORCH,
                template={
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
                },
            )
        ),
        f"{CTR_DENIED}.template.spec.template.spec.containers: "
        'Invalid value: [{"image":"x","name":"main"}]: '
        "must contain the required container for the ancestor: trainer",
    ),
    Case(
        "a TrainingRuntime update is not validated (upstream's ValidateUpdate)",
        namespaced(trainer_job(TORCH, replicas=2)),
        old=namespaced(TORCH),
    ),
    Case(
        "a ClusterTrainingRuntime update is",
        trainer_job(TORCH, replicas=3),
        f"{CTR_DENIED}.replicas: Invalid value: 3: always must be 1",
        old=TORCH,
    ),
    Case(
        "a deprecated ClusterTrainingRuntime is created with a warning",
        deprecated(TORCH),
        warnings=(f"ClusterTrainingRuntime {DEPRECATION}",),
    ),
    *(Case(f"upstream's {name}", shipped(name)) for name in SHIPPED),
]


def request(obj: JsonDict, old: JsonDict | None) -> AdmissionRequest:
    group, version = obj["apiVersion"].split("/")
    return AdmissionRequest(
        uid="u",
        operation="UPDATE" if old is not None else "CREATE",
        object=obj,
        old_object=old,
        kind={"group": group, "version": version, "kind": obj["kind"]},
        namespace=obj["metadata"].get("namespace", ""),
        name=obj["metadata"]["name"],
    )


INFOS = {i.kind: i for i in (TRAINJOB_INFO, TRAINING_RUNTIME_INFO, CLUSTER_TRAINING_RUNTIME_INFO)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_admission(case: Case) -> None:
    def lookup(api_version: str, plural: str, namespace: str, name: str) -> JsonDict | None:
        assert api_version == API_VERSION
        return case.runtimes.get((plural, namespace, name))

    response = admit(INFOS[case.obj["kind"]], request(case.obj, case.old), lookup)
    assert (response.allowed, response.status.get("message", "")) == (not case.message, case.message)
    if case.message:
        assert (response.status["code"], response.status["reason"]) == (403, "Forbidden")
    assert response.warnings == case.warnings


def test_without_a_lookup_only_what_the_trainjob_holds_is_checked() -> None:
    """Without a lookup the runtime's existence and its plugins are not checked."""
    assert admit(TRAINJOB_INFO, request(trainjob("nope"), None)).allowed
    refused = admit(TRAINJOB_INFO, request(trainjob(ref={"kind": "Runtime"}), None))
    assert refused.status["message"] == "unsupported runtime: Runtime.trainer.kubeflow.org"


def test_served_on_upstreams_paths_with_upstreams_webhook_names() -> None:
    served = {
        path: info.webhook_name for path, info in routes().items() if info.group == "trainer.kubeflow.org"
    }
    assert served == {
        "/validate-trainer-kubeflow-org-v1alpha1-trainjob": "validator.trainjob.trainer.kubeflow.org",
        "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime": (
            "validator.trainingruntime.trainer.kubeflow.org"
        ),
        "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime": (
            "validator.clustertrainingruntime.trainer.kubeflow.org"
        ),
    }
