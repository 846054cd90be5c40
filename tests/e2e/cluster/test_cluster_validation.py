"""Invalid jobs on a real cluster: refused at create by the webhook, or failed by the operator.

Where the job is stopped depends on what the cluster has, and the test insists on the strongest
guarantee available:
* the operator's ValidatingWebhookConfiguration is installed (`kubetrain install`, operator in the
  cluster), or the cluster is a kubetrain embedded plane (in-process admission): the create must
  be refused with upstream's webhook message;
* otherwise (an operator run as a local process, which the API server cannot call): the create
  succeeds and the operator must fail the job with `<Kind>FailedValidation` without creating pods.
"""

from __future__ import annotations

import pytest

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.integration.operator_process.jobs import job, pods_of, wait_condition

assert tier.KUBECONFIG  # importing tier skips this module without a cluster

DENIED = 'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request: '


async def test_an_invalid_job_is_refused_or_failed(kube: KubeClient, cluster_env: ClusterEnv) -> None:
    bad = job("PyTorchJob", "invalid", cluster_env.namespace)
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    must_refuse = cluster_env.webhook_installed or cluster_env.embedded

    try:
        created = await kube.create(bad)
    except ApiError as err:
        assert err.status == 403, err
        assert DENIED in str(err) and "must have at least one container with name pytorch" in str(err)
        return
    if must_refuse:
        pytest.fail("the webhook is installed but the invalid job was admitted")
    failed = await wait_condition(kube, created, "Failed", cluster_env.timeout)
    reason = next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")["reason"]
    assert reason == "PyTorchJobFailedValidation"
    assert await pods_of(kube, cluster_env.namespace, "invalid") == []
