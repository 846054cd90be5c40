"""The upstream SDK (`kubeflow-training` TrainingClient) against the cluster and our operator.

Collected only when the SDK is importable (see conftest). The SDK is synchronous (the official
`kubernetes` client), so these tests are plain functions.

The SDK's `list_jobs` deserializes every job of the namespace into its models, which refuse a job
without `spec.runPolicy` (the SDK always writes one): the tier's job builder always sets it.
"""

from __future__ import annotations

from kubeflow.training import TrainingClient, models
from kubernetes.client import V1Container, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec

from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.integration.operator_process.jobs import IMAGE

assert tier.KUBECONFIG  # importing tier skips this module without a cluster


def _pytorchjob(name: str, namespace: str) -> models.KubeflowOrgV1PyTorchJob:
    command = ["python", "-c", "print('hello from the sdk')"]
    container = V1Container(name="pytorch", image=IMAGE, command=command)
    master = models.KubeflowOrgV1ReplicaSpec(
        replicas=1,
        restart_policy="OnFailure",
        template=V1PodTemplateSpec(spec=V1PodSpec(containers=[container])),
    )
    return models.KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1",
        kind="PyTorchJob",
        metadata=V1ObjectMeta(name=name, namespace=namespace),
        spec=models.KubeflowOrgV1PyTorchJobSpec(
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            pytorch_replica_specs={"Master": master},
        ),
    )


def test_training_client_job_lifecycle(cluster_env: ClusterEnv) -> None:
    ns, name = cluster_env.namespace, "sdk-pytorch"
    client = TrainingClient(
        config_file=str(cluster_env.kubeconfig),
        context=cluster_env.context,
        namespace=ns,
        job_kind="PyTorchJob",
    )

    client.create_job(_pytorchjob(name, ns))
    client.wait_for_job_conditions(name, ns, timeout=int(cluster_env.timeout), polling_interval=1)

    assert client.is_job_created(name, ns)
    assert client.is_job_succeeded(name, ns)
    assert not client.is_job_failed(name, ns)
    assert [c.type for c in client.get_job_conditions(name, ns)][-1] == "Succeeded"
    assert client.get_job_pod_names(name, ns) == [f"{name}-master-0"]
    assert name in [j.metadata.name for j in client.list_jobs(ns)]
    assert client.get_job(name, ns).metadata.name == name
    if cluster_env.node_name is None:
        # pods/log comes from the kubelet (or `kubetrain up`'s in-process node); a `kubetrain node`
        # joined by this tier serves no kubelet API, so its pods' logs are not readable this way.
        logs, _ = client.get_job_logs(name, ns)
        assert "hello from the sdk" in "".join(logs.values())
    client.delete_job(name, ns)
