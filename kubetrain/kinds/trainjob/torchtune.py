"""The torch plugin's torchtune half (upstream v2.3.0 `plugins/torch/torchtune.go`): a TrainJob
whose trainer command is `tune run` (the SDK's BuiltinTrainer) gets torchtune's arguments appended
to its command instead of torchrun's master address:

    --rdzv_endpoint=<trainjob>-node-0-0.<trainjob>:29500   with more than one node, more than one
                                                           process per node, or ("auto") GPUs > 1
    <recipe> --config <model><suffix>                      the recipe and config the node, process
                                                           and GPU counts and the LoRA/QLoRA args
                                                           choose (`recipe_and_config`)
    the runtime's `output_dir=`, `tokenizer.path=`, ...    what the runtime's trainer `node`
                                                           command sets of the immutable configs

The model comes from the runtime's name, `torchtune-<model>-<size>` (`torchtune-llama3.2-1b` is
`llama3_2/1B`). `validate` is the webhook's half: supported models, one node but for the 70B
model, QLoRA and LoRA combinations, and no immutable config in the trainer's args.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.fielderrors import FieldError, invalid
from kubetrain.kinds.trainjob.apply import as_dict, as_list
from kubetrain.kinds.trainjob.constants import (
    ANCESTOR_TRAINER,
    CONTAINER_TRAINER_PORT,
    LABEL_TRAINJOB_ANCESTOR,
    NODE,
)

JsonDict = dict[str, Any]
ProcPerNode = int | str

ARG_RDZV_ENDPOINT = "--rdzv_endpoint"
ARG_CONFIG = "--config"
FULL_SINGLE_DEVICE = ("full_finetune_single_device", "_full_single_device")
FULL_DISTRIBUTED = "full_finetune_distributed"
FULL_MULTI_DEVICES_SUFFIX = "_full"
FULL_MULTI_NODES_SUFFIX = "_full_multinode"
LORA_SINGLE_DEVICE = ("lora_finetune_single_device", "_lora_single_device")
QLORA_SINGLE_DEVICE = ("lora_finetune_single_device", "_qlora_single_device")
LORA_DISTRIBUTED = ("lora_finetune_distributed", "_lora")
QLORA_DISTRIBUTED = ("lora_finetune_distributed", "_qlora")
LORA_ATTN_MODULES = "model.lora_attn_modules"
QUANTIZE_BASE = "model.quantize_base"
USE_DORA = "model.use_dora"
IMMUTABLE_CONFIGS = frozenset(
    {"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}
)
"""What the runtime sets and a TrainJob's args must not."""
LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B = (
    "llama3_2/1B",
    "llama3_2/3B",
    "llama3_3/70B",
    "qwen2_5/1.5B",
)
SUPPORTED_MODELS = frozenset({LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B})


def model_of(runtime_name: str) -> str:
    """upstream `getModelFromRuntimeRef`: `torchtune-llama3.2-1b` -> `llama3_2/1B` ("" unless the
    name has exactly three dash-separated fields)."""
    fields = runtime_name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def _lora(args: list[Any]) -> bool:
    return any(LORA_ATTN_MODULES in str(arg) for arg in args)


def _enabled(args: list[Any], item: str) -> bool:
    """A `key=value` arg whose key has `item` and whose value is Python's True (any case)."""
    for arg in args:
        name, found, value = str(arg).partition("=")
        if found and item in name and value.strip().lower() == "true":
            return True
    return False


def _qlora(args: list[Any]) -> bool:
    return not _enabled(args, USE_DORA) and _enabled(args, QUANTIZE_BASE)


def recipe_and_config(nodes: int, procs: ProcPerNode, gpus: int, trainjob: JsonDict) -> tuple[str, str]:
    """upstream `getRecipeAndConfig`."""
    spec = as_dict(trainjob.get("spec"))
    args = as_list(as_dict(spec.get("trainer")).get("args"))
    recipe, suffix = FULL_DISTRIBUTED, FULL_MULTI_DEVICES_SUFFIX
    if nodes == 1 and (procs == 1 or gpus == 1):
        recipe, suffix = (
            QLORA_SINGLE_DEVICE if _qlora(args) else LORA_SINGLE_DEVICE if _lora(args) else FULL_SINGLE_DEVICE
        )
    elif nodes == 1 and _qlora(args):
        recipe, suffix = QLORA_DISTRIBUTED
    elif nodes == 1 and _lora(args):
        recipe, suffix = LORA_DISTRIBUTED
    elif nodes > 1:
        suffix = FULL_MULTI_NODES_SUFFIX
    name = str(as_dict(spec.get("runtimeRef")).get("name") or "")
    return recipe, f"{model_of(name)}{suffix}"


def runtime_overrides(info_spec: JsonDict) -> list[str]:
    """upstream `extractOverridesFromRuntime`: the immutable configs the runtime's trainer `node`
    container command sets (`output_dir=/workspace/output`, ...), in order."""
    out: list[str] = []
    for rjob in as_list(info_spec.get("replicatedJobs")):
        template = as_dict(as_dict(rjob).get("template"))
        if (
            as_dict(as_dict(template.get("metadata")).get("labels")).get(LABEL_TRAINJOB_ANCESTOR)
            != ANCESTOR_TRAINER
        ):
            continue
        pod = as_dict(as_dict(as_dict(template.get("spec")).get("template")).get("spec"))
        for container in as_list(pod.get("containers")):
            if as_dict(container).get("name") == NODE:
                out.extend(
                    str(item)
                    for item in as_list(as_dict(container).get("command"))
                    if str(item).split("=")[0] in IMMUTABLE_CONFIGS
                )
    return out


def command(info_spec: JsonDict, trainjob: JsonDict, nodes: int, procs: ProcPerNode, gpus: int) -> list[str]:
    """The trainer's `tune run` command with upstream's arguments appended."""
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    trainer = as_dict(as_dict(trainjob.get("spec")).get("trainer"))
    out = [str(item) for item in as_list(trainer.get("command"))]
    if nodes > 1 or (isinstance(procs, int) and procs > 1) or (isinstance(procs, str) and gpus > 1):
        out.append(f"{ARG_RDZV_ENDPOINT}={name}-{NODE}-0-0.{name}:{CONTAINER_TRAINER_PORT}")
    recipe, config = recipe_and_config(nodes, procs, gpus, trainjob)
    return [*out, recipe, ARG_CONFIG, config, *runtime_overrides(info_spec)]


def validate(trainjob: JsonDict, gpus: int) -> list[FieldError]:
    """upstream `validateTorchTune` (the webhook, for a `tune run` trainer; `gpus` per node). The
    recipe is chosen from the trainer's own numProcPerNode here ("auto" unresolved), as upstream's
    webhook does."""
    spec = as_dict(trainjob.get("spec"))
    trainer = as_dict(spec.get("trainer"))
    name = str(as_dict(spec.get("runtimeRef")).get("name") or "")
    model = model_of(name)
    errs: list[FieldError] = []
    if model not in SUPPORTED_MODELS:
        detail = f"must have a supported pretrained model, invalid model configured: {model}"
        errs.append(invalid("spec.runtimeRef.name", name, detail))
    raw_nodes = trainer.get("numNodes")
    nodes = raw_nodes if isinstance(raw_nodes, int) and not isinstance(raw_nodes, bool) else 1
    if nodes > 1 and model != LLAMA3_3_70B:
        errs.append(invalid("spec.trainer.numNodes", nodes, f"must be 1 for {model} model"))
    raw_procs = trainer.get("numProcPerNode")
    given: ProcPerNode = (
        raw_procs if isinstance(raw_procs, int) and not isinstance(raw_procs, bool) else "auto"
    )
    _, config = recipe_and_config(nodes, given, gpus, trainjob)
    if QLORA_DISTRIBUTED[1] in config:
        if model == QWEN2_5_1_5B:
            errs.append(invalid("spec.runtimeRef.name", name, f"QLoRA is not supported for {model} model"))
        if QLORA_SINGLE_DEVICE[1] not in config and model in (LLAMA3_2_1B, LLAMA3_2_3B):
            errs.append(
                invalid(
                    "spec.trainer.numProcPerNode",
                    given,
                    f"must be auto or 1 for {model} model when using QLoRA",
                )
            )
            errs.append(
                invalid(
                    "spec.trainer.resourcesPerNode",
                    trainer.get("resourcesPerNode"),
                    f"must have gpu resource with value 1 for {model} model when using QLoRA",
                )
            )
    args = as_list(trainer.get("args"))
    if nodes > 1 and (_lora(args) or _qlora(args)):
        errs.append(
            invalid(
                "spec.trainer.numNodes",
                nodes,
                "LoRA fine-tuning is not supported for multi-node training in TorchTune",
            )
        )
    for index, arg in enumerate(args):
        key = str(arg).split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            detail = f'must not set immutable config "{key}" in trainer args; it is managed by the runtime'
            errs.append(invalid(f"spec.trainer.args[{index}]", arg, detail))
    return errs
