"""PyTorchJob: torchrun env on every container, the worker init container, the elastic HPA.

Upstream's: docs/upstream-behaviour.md#pytorchjob, #pytorchjob-elastic.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, ClassVar

import yaml

from kubetrain.api.codec import json_clone
from kubetrain.api.kinds import API_VERSION, KindInfo
from kubetrain.api.types import TrainingJob
from kubetrain.frameworks._env import (
    JsonDict,
    append_env_all,
    canonical,
    default_port,
    env,
    go_atoi,
    replica_name,
    replicas_of,
    total_replicas,
)
from kubetrain.frameworks._status import Counts, PyTorchLikeStatus
from kubetrain.frameworks.base import FrameworkSettings, TopologyError
from kubetrain.frameworks.pytorch.wire import PYTORCHJOB, ElasticPolicy, PyTorchJobSpec

DEFAULT_INIT_CONTAINER_TEMPLATE = """
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  resources:
    limits:
      cpu: 100m
      memory: 20Mi
    requests:
      cpu: 50m
      memory: 10Mi
  command: ['sh', '-c', """ + (
    "'err=1;for i in $(seq {{.MaxTries}}); do if nslookup {{.MasterAddr}}; then err=0 && break; fi;"
    "echo waiting for master; sleep 2; done; exit $err']"
)
"""Upstream's built-in template (training-operator v1.9 `pkg/controller.v1/pytorch/initcontainer.go`);
`--pytorch-init-container-template-file` replaces it with the same three placeholders."""

_PLACEHOLDER = re.compile(r"\{\{-?\s*\.(\w+)\s*-?\}\}")
HPA_API_VERSION = "autoscaling/v2"
HPA_KIND = "HorizontalPodAutoscaler"


def _spec(job: TrainingJob) -> PyTorchJobSpec:
    return job.spec if isinstance(job.spec, PyTorchJobSpec) else PyTorchJobSpec()


@lru_cache(maxsize=64)
def _rendered_init_containers(
    template: str, image: str, max_tries: int, master_addr: str
) -> tuple[JsonDict, ...]:
    """Render and parse the init-container template once per distinct input (YAML parsing is slow)."""
    values = {"InitContainerImage": image, "MaxTries": str(max_tries), "MasterAddr": master_addr}

    def substitute(match: re.Match[str]) -> str:
        if match.group(1) not in values:
            raise TopologyError(f"init container template: can't evaluate field {match.group(1)}")
        return values[match.group(1)]

    try:
        parsed = yaml.safe_load(_PLACEHOLDER.sub(substitute, template))
    except yaml.YAMLError as exc:
        raise TopologyError(f"init container template: {exc}") from exc
    if parsed is None:
        return ()
    if not isinstance(parsed, list) or not all(isinstance(c, dict) for c in parsed):
        raise TopologyError("init container template must be a YAML list of containers")
    return tuple(parsed)


def init_containers(job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
    """The containers that wait until `<job>-master-0` resolves (fresh copies for one pod)."""
    rendered = _rendered_init_containers(
        settings.pytorch_init_container_template or DEFAULT_INIT_CONTAINER_TEMPLATE,
        settings.pytorch_init_container_image,
        settings.pytorch_init_container_max_tries,
        replica_name(job.name, "master", 0),
    )
    return json_clone(list(rendered))


def _elastic_env(job: TrainingJob, policy: ElasticPolicy) -> list[JsonDict]:
    """PET_* rendezvous settings for torchrun's elastic launch, in upstream's order."""
    host = policy.rdzv_host if policy.rdzv_host is not None else f"{job.name}-worker-0"
    port = policy.rdzv_port
    if port is None:
        port = default_port(PYTORCHJOB, job.replica_specs.get("Worker"))
        if port is None:
            raise TopologyError("port not found")
    if policy.min_replicas is None and policy.max_replicas is None:
        worker = job.replica_specs.get("Worker")
        if worker is None:
            raise TopologyError("cannot find the worker spec")
        nnodes = str(replicas_of(worker))
    else:
        low = policy.min_replicas if policy.min_replicas is not None else policy.max_replicas
        high = policy.max_replicas if policy.max_replicas is not None else policy.min_replicas
        nnodes = f"{low}:{high}"
    out = [
        env("PET_RDZV_ENDPOINT", f"{host}:{port}"),
        env("PET_RDZV_BACKEND", policy.rdzv_backend if policy.rdzv_backend is not None else "c10d"),
        env("PET_NNODES", nnodes),
    ]
    if policy.max_restarts is not None:
        out.append(env("PET_MAX_RESTARTS", str(policy.max_restarts)))
    if policy.n_proc_per_node is not None:
        out.append(env("PET_NPROC_PER_NODE", str(policy.n_proc_per_node)))
    if policy.rdzv_id is not None:
        out.append(env("PET_RDZV_ID", policy.rdzv_id))
    if policy.rdzv_conf is not None:
        # Upstream panics on an empty (non-nil) list; an empty value is the harmless equivalent.
        conf = ",".join(f"{c.key or ''}={c.value or ''}" for c in policy.rdzv_conf)
        out.append(env("PET_RDZV_CONF", conf))
    if policy.standalone:
        out.append(env("PET_STANDALONE", ""))
    return out


def pytorch_env(job: TrainingJob, rtype: str, index: int) -> list[JsonDict]:
    """The env every container of pod (rtype, index) gets, in upstream's order
    (docs/upstream-behaviour.md#pytorchjob)."""
    spec = _spec(job)
    total = total_replicas(job)
    out = [env("PYTHONUNBUFFERED", "1")]
    master = job.replica_specs.get("Master")
    if master is not None:
        port = default_port(PYTORCHJOB, master)
        if port is None:
            raise TopologyError("port not found")
        addr = replica_name(job.name, "master", 0)
        rank = index + 1 if rtype == "Worker" else index
        nproc = go_atoi(spec.nproc_per_node)
        world = total * (nproc if nproc is not None else 1)
        out += [
            env("MASTER_PORT", str(port)),
            env("PET_MASTER_PORT", str(port)),
            env("MASTER_ADDR", addr),
            env("PET_MASTER_ADDR", addr),
            env("WORLD_SIZE", str(world)),
            env("RANK", str(rank)),
            env("PET_NODE_RANK", str(rank)),
        ]
    if spec.nproc_per_node is not None:
        out.append(env("PET_NPROC_PER_NODE", spec.nproc_per_node))
    if spec.elastic_policy is not None:
        out += _elastic_env(job, spec.elastic_policy)
    else:
        out.append(env("PET_NNODES", str(total)))
    return out


def desired_hpa(job: TrainingJob) -> JsonDict | None:
    """The autoscaling/v2 HPA that scales Worker through the scale subresource
    (docs/upstream-behaviour.md#pytorchjob-elastic)."""
    policy = _spec(job).elastic_policy
    if policy is None or policy.metrics is None:
        return None
    hpa_spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": PYTORCHJOB.kind, "name": job.name, "apiVersion": API_VERSION},
    }
    if policy.min_replicas is not None:
        hpa_spec["minReplicas"] = policy.min_replicas
    hpa_spec["maxReplicas"] = policy.max_replicas if policy.max_replicas is not None else policy.min_replicas
    hpa_spec["metrics"] = json_clone(policy.metrics)
    owner = {
        "apiVersion": API_VERSION,
        "kind": PYTORCHJOB.kind,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": HPA_API_VERSION,
        "kind": HPA_KIND,
        "metadata": {"name": job.name, "namespace": job.namespace, "ownerReferences": [owner]},
        "spec": hpa_spec,
    }


class PyTorch(PyTorchLikeStatus):
    """PyTorchJob plugin."""

    info: ClassVar[KindInfo] = PYTORCHJOB
    sets_replica_selector: ClassVar[bool] = True

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        if job.replica_specs.get("Master") is not None:
            return canonical(PYTORCHJOB, rtype) == "Master"
        return canonical(PYTORCHJOB, rtype) == "Worker" and index == 0

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        """torchrun env on every container; workers also wait for the master's DNS name."""
        rt = canonical(PYTORCHJOB, rtype)
        append_env_all(pod, pytorch_env(job, rt, index))
        if rt == "Worker" and job.replica_specs.get("Master") is not None:
            pod_spec = pod.setdefault("spec", {})
            current = pod_spec.get("initContainers")
            if not isinstance(current, list):
                current = pod_spec["initContainers"] = []
            current.extend(init_containers(job, settings))

    def worker_done_early(self, job: TrainingJob, worker: Counts) -> bool:
        """Elastic jobs succeed as soon as one worker succeeded (torchrun's group finished)."""
        return _spec(job).elastic_policy is not None and worker.succeeded > 0

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        """The HPA while elasticPolicy.metrics is set and the job is not suspended (else none,
        and the reconciler deletes an existing one)."""
        if job.run_policy.suspend:
            return []
        hpa = desired_hpa(job)
        return [hpa] if hpa is not None else []


PYTORCH = PyTorch()
