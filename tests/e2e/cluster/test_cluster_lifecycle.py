"""Every kind's lifecycle on a real cluster: success, failure, restart, suspend/resume,
cleanPodPolicy, TTL and activeDeadlineSeconds (docs/upstream-behaviour.md#lifecycle), one single-pod
job per case."""

from __future__ import annotations

import pytest

from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.integration.operator_process.jobs import (
    conditions,
    get_or_none,
    job,
    pods_of,
    wait_condition,
    wait_for,
)

assert tier.KUBECONFIG  # importing tier skips this module without a cluster

KIND_NAMES = sorted(KINDS)
FAIL_ONCE = (
    "import os, sys\n"
    "marker = '/scratch/failed-once'\n"
    "if not os.path.exists(marker):\n"
    "    open(marker, 'w').close()\n"
    "    sys.exit(1)\n"
    "print('second attempt succeeds')\n"
)


def _name(kind: str, case: str) -> str:
    return f"{kind.lower()}-{case}"


@pytest.mark.parametrize("kind", KIND_NAMES)
async def test_success(kind: str, kube: KubeClient, cluster_env: ClusterEnv) -> None:
    created = await kube.create(job(kind, _name(kind, "ok"), cluster_env.namespace, "print('ok')"))

    done = await wait_condition(kube, created, "Succeeded", cluster_env.timeout)

    assert conditions(done).get("Failed") != "True"
    pods = await pods_of(kube, cluster_env.namespace, created["metadata"]["name"])
    assert len(pods) == 1


@pytest.mark.parametrize("kind", KIND_NAMES)
async def test_failure(kind: str, kube: KubeClient, cluster_env: ClusterEnv) -> None:
    created = await kube.create(
        job(kind, _name(kind, "fail"), cluster_env.namespace, "import sys; sys.exit(3)")
    )

    done = await wait_condition(kube, created, "Failed", cluster_env.timeout)

    assert conditions(done).get("Succeeded") != "True"


@pytest.mark.parametrize("kind", KIND_NAMES)
async def test_restart_on_failure(kind: str, kube: KubeClient, cluster_env: ClusterEnv) -> None:
    created = await kube.create(
        job(
            kind,
            _name(kind, "restart"),
            cluster_env.namespace,
            FAIL_ONCE,
            restart_policy="OnFailure",
            volumes=True,
        )
    )

    await wait_condition(kube, created, "Succeeded", cluster_env.timeout)

    pods = await pods_of(kube, cluster_env.namespace, created["metadata"]["name"])
    restarts = [s.get("restartCount", 0) for p in pods for s in p["status"].get("containerStatuses") or ()]
    assert restarts and max(restarts) >= 1


@pytest.mark.parametrize("kind", KIND_NAMES)
async def test_suspend_and_resume(kind: str, kube: KubeClient, cluster_env: ClusterEnv) -> None:
    name, ns = _name(kind, "suspend"), cluster_env.namespace
    created = await kube.create(job(kind, name, ns, "print('resumed')", run_policy={"suspend": True}))

    await wait_condition(kube, created, "Suspended", cluster_env.timeout)
    assert await pods_of(kube, ns, name) == []
    await kube.merge_patch(created["apiVersion"], kind, ns, name, {"spec": {"runPolicy": {"suspend": False}}})

    done = await wait_condition(kube, created, "Succeeded", cluster_env.timeout)
    assert conditions(done).get("Suspended") == "False"


@pytest.mark.parametrize("kind", KIND_NAMES)
async def test_clean_pod_policy_all(kind: str, kube: KubeClient, cluster_env: ClusterEnv) -> None:
    name, ns = _name(kind, "clean"), cluster_env.namespace
    created = await kube.create(job(kind, name, ns, "print('ok')", run_policy={"cleanPodPolicy": "All"}))

    await wait_condition(kube, created, "Succeeded", cluster_env.timeout)

    async def cleaned() -> bool:
        return not [p for p in await pods_of(kube, ns, name) if not p["metadata"].get("deletionTimestamp")]

    await wait_for(cleaned, cluster_env.timeout, f"{kind} {name} pods cleaned up")


@pytest.mark.parametrize("kind", KIND_NAMES)
async def test_ttl_after_finished(kind: str, kube: KubeClient, cluster_env: ClusterEnv) -> None:
    name, ns = _name(kind, "ttl"), cluster_env.namespace
    created = await kube.create(job(kind, name, ns, "print('ok')", run_policy={"ttlSecondsAfterFinished": 2}))
    seen: set[str] = set()

    async def deleted() -> bool:
        current = await get_or_none(kube, created["apiVersion"], kind, ns, name)
        seen.update(t for t, status in conditions(current).items() if status == "True")
        return current is None

    await wait_for(deleted, cluster_env.timeout, f"{kind} {name} deleted by its TTL")
    assert "Succeeded" in seen


@pytest.mark.parametrize("kind", KIND_NAMES)
async def test_active_deadline(kind: str, kube: KubeClient, cluster_env: ClusterEnv) -> None:
    name, ns = _name(kind, "deadline"), cluster_env.namespace
    created = await kube.create(
        job(kind, name, ns, "import time; time.sleep(600)", run_policy={"activeDeadlineSeconds": 3})
    )

    done = await wait_condition(kube, created, "Failed", cluster_env.timeout)

    failed = next(c for c in done["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == f"{kind}Failed"  # upstream's reason; the message names the deadline
    assert failed["message"].endswith("has failed because it was active longer than specified deadline")
