"""Trainer v2.3's three CRDs, served by the embedded API server with the webhook's rules: upstream's
shipped runtimes apply unchanged, and TrainJobs are admitted or refused with upstream's messages
(the runtime a TrainJob names is read from the server's store, as upstream reads its cache)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubetrain.cli.operator_webhook import AdmissionCache
from kubetrain.cli.plane import KubeflowAdmission, store_lookup
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI
from kubetrain.kinds.registry import admission_reads, crd_manifests
from kubetrain.kinds.trainjob.wire import TRAINJOB_INFO
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.transport import KubeClient
from kubetrain.webhook.handler import admit
from kubetrain.webhook.review import AdmissionRequest
from tests.polling import wait_for
from tests.trainer_runtimes import shipped_runtime

JsonDict = dict[str, Any]
GROUP = "/apis/trainer.kubeflow.org/v1alpha1"
CLUSTER_RUNTIMES = f"{GROUP}/clustertrainingruntimes"
RUNTIMES_DEFAULT = f"{GROUP}/namespaces/default/trainingruntimes"
TRAINJOBS = f"{GROUP}/namespaces/default/trainjobs"
TRAINER_KINDS = ["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"]
API_VERSION = "trainer.kubeflow.org/v1alpha1"


def runtime(name: str) -> JsonDict:
    return shipped_runtime(name)


def trainjob(name: str, runtime_name: str, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime_name}, **spec},
    }


@pytest.fixture
async def api() -> AsyncIterator[KubeAPI]:
    server = EmbeddedAPIServer()
    server.rest.admission.add(KubeflowAdmission(store_lookup(server)))
    await server.start(port=0)
    client = KubeAPI.for_url(server.url, token=server.token, ssl_context=server.client_ssl_context())
    try:
        for crd in crd_manifests(TRAINER_KINDS):
            await client.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)

        async def served() -> bool:
            try:
                for path in (CLUSTER_RUNTIMES, RUNTIMES_DEFAULT, TRAINJOBS):
                    await client.list(path)
            except ApiError:
                return False
            return True

        await wait_for(served, 10, "the Trainer CRDs to be served")
        yield client
    finally:
        await client.close()
        await server.stop()


def _subset(want: Any, got: Any) -> bool:
    """Whether every field of `want` is in `got` (the server may add its schema's defaults)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _subset(v, got[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(map(_subset, want, got))
    return bool(want == got)


@pytest.mark.parametrize(
    "name",
    [
        "torch_distributed",
        "deepspeed_distributed",
        "jax_distributed",
        "xgboost_distributed",
        "mlx_distributed",
    ],
)
async def test_upstreams_shipped_runtimes_apply_unchanged(api: KubeAPI, name: str) -> None:
    shipped = runtime(name)
    created = await api.create(CLUSTER_RUNTIMES, copy.deepcopy(shipped))
    assert created["metadata"]["name"] == shipped["metadata"]["name"]
    assert _subset(shipped["spec"], created["spec"]), created["spec"]  # nothing pruned
    stored = await api.get(f"{CLUSTER_RUNTIMES}/{shipped['metadata']['name']}")
    assert "namespace" not in stored["metadata"]  # cluster-scoped


async def test_a_trainjob_is_checked_against_the_runtime_it_names(api: KubeAPI) -> None:
    await api.create(CLUSTER_RUNTIMES, runtime("torch_distributed"))
    ok = await api.create(TRAINJOBS, trainjob("ok", "torch-distributed", trainer={"numNodes": 2}))
    assert ok["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }  # the CRD's defaults

    with pytest.raises(ApiError) as missing:
        await api.create(TRAINJOBS, trainjob("missing", "nope"))
    assert missing.value.status == 403
    assert missing.value.message == (
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
        'spec.RuntimeRef: Invalid value: {"apiGroup":"trainer.kubeflow.org",'
        '"kind":"ClusterTrainingRuntime","name":"nope"}: clustertrainingruntimes.trainer.kubeflow.org '
        '"nope" not found: specified clusterTrainingRuntime must be created before the TrainJob is created'
    )

    env = [{"name": "PET_NNODES", "value": "3"}]
    with pytest.raises(ApiError) as reserved:
        await api.create(TRAINJOBS, trainjob("reserved", "torch-distributed", trainer={"env": env}))
    assert reserved.value.message.endswith(
        'spec.trainer.env: Invalid value: [{"name":"PET_NNODES","value":"3"}]: '
        "must not have reserved envs, invalid envs configured: [PET_NNODES]"
    )


async def test_the_schema_refuses_a_trainjob_without_a_runtime_name(api: KubeAPI) -> None:
    job = trainjob("noname", "x")
    del job["spec"]["runtimeRef"]["name"]
    with pytest.raises(ApiError) as err:
        await api.create(TRAINJOBS, job)
    assert err.value.status == 422
    assert "spec.runtimeRef.name: Required value" in err.value.message


async def test_a_runtime_whose_trainer_job_runs_twice_is_refused(api: KubeAPI) -> None:
    bad = runtime("torch_distributed")
    bad["kind"] = "TrainingRuntime"
    bad["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2
    with pytest.raises(ApiError) as err:
        await api.create(RUNTIMES_DEFAULT, bad)
    assert err.value.message == (
        'admission webhook "validator.trainingruntime.trainer.kubeflow.org" denied the request: '
        "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1"
    )


async def test_the_operators_webhook_reads_runtimes_from_its_cache(tmp_path: Path) -> None:
    """On a cluster the webhook runs in the operator: its `AdmissionCache` lists and watches the
    runtimes, so a TrainJob is checked against the one it names there too."""
    server = EmbeddedAPIServer(plain_http=True)
    await server.start(port=0)
    client = KubeClient.for_url(server.plain_url, server.token, qps=0)
    cache = AdmissionCache(client, admission_reads([TRAINJOB_INFO]))
    try:
        await install_crds(client, crd_manifests(TRAINER_KINDS))
        await client.create(runtime("torch_distributed"))
        cache.start()
        assert await cache.wait_for_sync(10)
        namespaced_runtime = runtime("jax_distributed")
        namespaced_runtime.update(kind="TrainingRuntime")
        namespaced_runtime["metadata"]["namespace"] = "default"
        await client.create(namespaced_runtime)

        async def cached() -> bool:
            return cache.lookup(API_VERSION, "trainingruntimes", "default", "jax-distributed") is not None

        await wait_for(cached, 10, "the watch to bring the TrainingRuntime")
        ok = admit(TRAINJOB_INFO, review_of(trainjob("ok", "torch-distributed")), cache.lookup)
        assert ok.allowed, ok.status
        ref = {"kind": "TrainingRuntime", "name": "jax-distributed"}
        local = trainjob("local", "jax-distributed")
        local["spec"]["runtimeRef"] = ref
        assert admit(TRAINJOB_INFO, review_of(local), cache.lookup).allowed
        refused = admit(TRAINJOB_INFO, review_of(trainjob("missing", "nope")), cache.lookup)
        assert 'clustertrainingruntimes.trainer.kubeflow.org "nope" not found' in refused.status["message"]
    finally:
        await cache.stop()
        await client.close()
        await server.stop()


def review_of(obj: JsonDict) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u",
        operation="CREATE",
        object={**obj, "metadata": {**obj["metadata"], "namespace": "default"}},
        old_object=None,
        kind={"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": obj["kind"]},
        namespace="default",
        name=obj["metadata"]["name"],
    )
