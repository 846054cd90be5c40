"""torchtune through the TrainJob planner and webhook (upstream v2.3.0 `plugins/torch/torchtune.go`):
a `tune run` trainer gets torchtune's recipe, config, rendezvous and the runtime's immutable paths
appended to its command, compared with upstream's own cases (`trainingruntime_test.go` "TorchTune
values", `torch_test.go` validation)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import Observed
from kubetrain.kinds import registry
from kubetrain.kinds.trainjob.validation import runtime_rules
from tests.unit.kinds.trainjob.test_trainjob_plan import (
    CTR_KEY,
    NOW,
    RANK,
    created_jobset,
    node_container,
    torch_distributed,
    trainjob_on,
)

JsonDict = dict[str, Any]
RUNTIME_COMMAND = [
    "tune",
    "run",
    "--rdzv_endpoint=localhost:29500",
    "full_finetune_distributed",
    "--config",
    "llama3_2/1B_full",
    "dataset=torchtune.datasets.instruct_dataset",
    "output_dir=/workspace/output",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]
OVERRIDES = RUNTIME_COMMAND[-3:]
LORA_ARGS = ["model.apply_lora_to_mlp=True", "model.lora_attn_modules=[q_proj,k_proj,v_proj,output_proj]"]


def torchtune_runtime(name: str) -> JsonDict:
    """A torch runtime named like upstream's torchtune ones, its node command theirs."""
    runtime = torch_distributed()
    runtime["metadata"]["name"] = name
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["command"] = list(RUNTIME_COMMAND)
    return runtime


def tune_job(runtime: str, nodes: int, resources: JsonDict | None = None, **trainer: Any) -> JsonDict:
    spec = {"numNodes": nodes, "command": ["tune", "run"], **trainer}
    if resources is not None:
        spec["resourcesPerNode"] = {"limits": resources}
    return trainjob_on(runtime, "test-job", trainer=spec)


def node_of(job: JsonDict, runtime: str) -> JsonDict:
    observed = Observed(others={CTR_KEY: [torchtune_runtime(runtime)]})
    return node_container(created_jobset(registry.plan(job, observed, NOW, ControllerConfig())))


def pet_counts(nodes: int, procs: str) -> list[JsonDict]:
    return [
        {"name": "PET_NNODES", "value": str(nodes)},
        {"name": "PET_NPROC_PER_NODE", "value": procs},
        {"name": "PET_NODE_RANK", "valueFrom": RANK},
    ]


RDZV = "--rdzv_endpoint=test-job-node-0-0.test-job:29500"


@pytest.mark.parametrize(
    ("runtime", "job", "tail", "procs"),
    [
        pytest.param(
            "torchtune-llama3.2-1b",
            tune_job("torchtune-llama3.2-1b", 1, {"cpu": "1", "example.com/gpu": "2"}, args=LORA_ARGS),
            [RDZV, "lora_finetune_distributed", "--config", "llama3_2/1B_lora"],
            "auto",
            id="lora-on-two-gpus",
        ),
        pytest.param(
            "torchtune-llama3.3-70b",
            tune_job("torchtune-llama3.3-70b", 2, {"example.com/gpu": "8"}),
            [RDZV, "full_finetune_distributed", "--config", "llama3_3/70B_full_multinode"],
            "auto",
            id="multi-node-full",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            tune_job("torchtune-llama3.2-1b", 1, {"example.com/gpu": "1"}),
            ["full_finetune_single_device", "--config", "llama3_2/1B_full_single_device"],
            "auto",
            id="single-gpu-no-rendezvous",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            tune_job("torchtune-llama3.2-1b", 1, {"example.com/gpu": "1"}, args=["model.quantize_base=True"]),
            ["lora_finetune_single_device", "--config", "llama3_2/1B_qlora_single_device"],
            "auto",
            id="qlora-single-device",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            tune_job("torchtune-llama3.2-1b", 1, {"cpu": "4"}),
            [RDZV, "full_finetune_distributed", "--config", "llama3_2/1B_full"],
            "4",
            id="cpu-processes-rendezvous",
        ),
    ],
)
def test_a_tune_run_trainer_gets_upstreams_torchtune_arguments(
    runtime: str, job: JsonDict, tail: list[str], procs: str
) -> None:
    container = node_of(job, runtime)
    assert container["command"] == ["tune", "run", *tail, *OVERRIDES]
    assert container.get("args") == job["spec"]["trainer"].get("args")
    assert container["env"] == pet_counts(job["spec"]["trainer"]["numNodes"], procs)  # no master address
    assert container["ports"] == [{"containerPort": 29500}]


@pytest.mark.parametrize(
    ("runtime", "job", "want"),
    [
        pytest.param(
            "torchtune-llama3.1-70b",
            tune_job("torchtune-llama3.1-70b", 1),
            [
                'spec.runtimeRef.name: Invalid value: "torchtune-llama3.1-70b": must have a supported '
                "pretrained model, invalid model configured: llama3_1/70B"
            ],
            id="unsupported-model",
        ),
        pytest.param(
            "torchtune-llama3.2-3b",
            tune_job("torchtune-llama3.2-3b", 2),
            ["spec.trainer.numNodes: Invalid value: 2: must be 1 for llama3_2/3B model"],
            id="multi-node-only-for-70b",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            tune_job(
                "torchtune-qwen2.5-1.5b", 1, {"example.com/gpu": "1"}, args=["model.quantize_base=True"]
            ),
            [
                'spec.runtimeRef.name: Invalid value: "torchtune-qwen2.5-1.5b": QLoRA is not supported for '
                "qwen2_5/1.5B model"
            ],
            id="qlora-not-for-qwen",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            tune_job("torchtune-llama3.2-1b", 1, {"example.com/gpu": "2"}, args=["model.quantize_base=True"]),
            [
                'spec.trainer.numProcPerNode: Invalid value: "auto": must be auto or 1 for llama3_2/1B model '
                "when using QLoRA",
                'spec.trainer.resourcesPerNode: Invalid value: {"limits":{"example.com/gpu":"2"}}: '
                "must have gpu resource with value 1 for llama3_2/1B model when using QLoRA",
            ],
            id="multi-device-qlora-for-small-llama",
        ),
        pytest.param(
            "torchtune-llama3.3-70b",
            tune_job("torchtune-llama3.3-70b", 2, args=LORA_ARGS),
            [
                "spec.trainer.numNodes: Invalid value: 2: "
                "LoRA fine-tuning is not supported for multi-node training in TorchTune"
            ],
            id="no-multi-node-lora",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            tune_job("torchtune-llama3.2-1b", 1, args=["epochs=1", "output_dir=/tmp/mine"]),
            [
                'spec.trainer.args[1]: Invalid value: "output_dir=/tmp/mine": must not set immutable config '
                '"output_dir" in trainer args; it is managed by the runtime'
            ],
            id="immutable-config",
        ),
    ],
)
def test_the_webhook_refuses_what_upstream_refuses_for_torchtune(
    runtime: str, job: JsonDict, want: list[str]
) -> None:
    assert [str(e) for e in runtime_rules(job, torchtune_runtime(runtime))] == want
