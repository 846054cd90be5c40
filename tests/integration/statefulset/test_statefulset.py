"""apps/v1 StatefulSets as Kubernetes runs them, on the embedded plane and on a real control plane.

Written against Kubernetes' behaviour (kube-controller-manager's StatefulSet controller is the
reference): every assertion holds on both planes unchanged. Pods that must not run are kept
unschedulable (a nodeSelector no node has) and the test plays their kubelet, writing Running /
Ready / Failed into their status, so ordering is observed exactly; pods that run do so on
`kubetrain node` (both planes), where their names resolve through the headless Service.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from kubetrain.kube.errors import ApiError
from kubetrain.kube.timefmt import format_time
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.jobs import wait_for

JsonDict = dict[str, Any]
TIMEOUT = 60.0
NOWHERE = {"kubetrain.test/no-such-node": "true"}
"""A nodeSelector no node matches: the pod stays Pending and unbound, and the test is its kubelet."""
QUIET = 2.0
"""How long a test watches for something that must not happen (a pod created too early)."""
SLEEPER = ["python", "-c", "import time; time.sleep(3600)"]
CNT_REVISION = "cnt-688b4b657"
"""The revision kube-controller-manager 1.36 names the `cnt` set below: FNV-32 of its defaulted
template's JSON. The embedded plane must name it the same (change the set, and this changes)."""


def statefulset(
    name: str,
    replicas: int,
    *,
    policy: str = "OrderedReady",
    command: list[str] | None = None,
    node_selector: dict[str, str] | None = None,
) -> JsonDict:
    spec: JsonDict = {
        "containers": [{"name": "main", "image": "python:3.11-slim", "command": command or SLEEPER}],
        "terminationGracePeriodSeconds": 1,
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": name,
            "replicas": replicas,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def headless_service(name: str) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"clusterIP": "None", "selector": {"app": name}, "ports": [{"name": "p", "port": 2222}]},
    }


async def pods_of(kube: KubeClient, ns: str, name: str) -> dict[str, JsonDict]:
    pods, _ = await kube.list("v1", "Pod", ns, label_selector=f"app={name}")
    return {p["metadata"]["name"]: p for p in pods}


async def wait_pods(kube: KubeClient, ns: str, name: str, wanted: set[str]) -> dict[str, JsonDict]:
    async def check() -> list[dict[str, JsonDict]] | None:
        pods = await pods_of(kube, ns, name)
        return [pods] if set(pods) == wanted else None  # truthy even when no pod is wanted

    return (await wait_for(check, TIMEOUT, f"pods {sorted(wanted)}"))[0]


async def stays_absent(kube: KubeClient, ns: str, pod: str) -> None:
    """The pod is not created for QUIET seconds."""
    for _ in range(int(QUIET / 0.2)):
        try:
            await kube.get("v1", "Pod", ns, pod)
        except ApiError as err:
            if err.not_found:
                await asyncio.sleep(0.2)
                continue
            raise
        raise AssertionError(f"{pod} was created too early")


async def play_kubelet(kube: KubeClient, ns: str, pod: str, phase: str, ready: bool) -> None:
    """Write the status a kubelet would: the phase and the Ready condition. First wait for the
    scheduler's verdict (PodScheduled=False), so that its write and ours do not cross."""

    async def unschedulable() -> JsonDict | None:
        seen = await kube.get("v1", "Pod", ns, pod)
        conditions = (seen.get("status") or {}).get("conditions") or []
        return seen if any(c.get("type") == "PodScheduled" for c in conditions) else None

    seen = await wait_for(unschedulable, TIMEOUT, f"{pod} found unschedulable")
    others = [c for c in seen["status"]["conditions"] if c.get("type") != "Ready"]
    ready_condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    patch = {"status": {"phase": phase, "conditions": [*others, ready_condition]}}
    await kube.patch_status("v1", "Pod", ns, pod, patch)


async def wait_status(kube: KubeClient, ns: str, name: str, **wanted: Any) -> JsonDict:
    last: JsonDict = {}

    async def check() -> JsonDict | None:
        sts = await kube.get("apps/v1", "StatefulSet", ns, name)
        status = last["status"] = sts.get("status") or {}
        return sts if all(status.get(k) == v for k, v in wanted.items()) else None

    try:
        return await wait_for(check, TIMEOUT, f"status {wanted}")
    except TimeoutError as err:
        pods = {n: p.get("status") for n, p in (await pods_of(kube, ns, name)).items()}
        raise TimeoutError(f"{err}; status {last.get('status')}; pods {pods}") from None


async def test_pods_have_ordinal_identity_and_resolve_by_name(kube: KubeClient, ns: str) -> None:
    """Names `<set>-<i>`, the identity labels, hostname/subdomain, the controller ownerReference, and
    `<set>-<i>.<service>` resolving, from a pod of the set, to each pod's IP."""
    probe = (
        "import socket, time\n"
        "names = ['peer-0.peer', 'peer-1.peer', 'peer-0.peer.NS.svc.cluster.local']\n"
        "while True:\n"
        "    try:\n"
        "        print(' '.join(f'{n}={socket.gethostbyname(n)}' for n in names), flush=True)\n"
        "        break\n"
        "    except OSError:\n"
        "        time.sleep(0.2)\n"
        "time.sleep(3600)\n"
    ).replace("NS", ns)
    await kube.create(headless_service("peer"), namespace=ns)
    await kube.create(statefulset("peer", 2, command=["python", "-c", probe]), namespace=ns)
    sts = await wait_status(kube, ns, "peer", readyReplicas=2)
    pods = await wait_pods(kube, ns, "peer", {"peer-0", "peer-1"})
    for index in (0, 1):
        pod = pods[f"peer-{index}"]
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["generateName"] == "peer-"
        assert meta["labels"]["statefulset.kubernetes.io/pod-name"] == f"peer-{index}"
        assert meta["labels"]["apps.kubernetes.io/pod-index"] == str(index)
        assert meta["labels"]["controller-revision-hash"] == sts["status"]["updateRevision"]
        assert meta["labels"]["app"] == "peer"
        assert spec["hostname"] == f"peer-{index}"
        assert spec["subdomain"] == "peer"
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "peer",
                "uid": sts["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    ips = {f"peer-{i}": pods[f"peer-{i}"]["status"]["podIP"] for i in (0, 1)}

    async def resolved() -> str | None:
        resp = await kube.api.send("GET", kube.resource("v1", "Pod").path(ns, "peer-1", "log"))
        log = resp.body.decode(errors="replace") if resp.status == 200 else ""
        return log if "peer-0.peer=" in log else None

    line = str(await wait_for(resolved, TIMEOUT, "peer-1 resolving its peers"))
    found = dict(re.findall(r"(\S+)=(\S+)", line))
    assert found["peer-0.peer"] == ips["peer-0"]
    assert found["peer-1.peer"] == ips["peer-1"]
    assert found[f"peer-0.peer.{ns}.svc.cluster.local"] == ips["peer-0"]


async def test_ordered_ready_creates_the_next_pod_only_after_the_previous_is_ready(
    kube: KubeClient, ns: str
) -> None:
    await kube.create(statefulset("ord", 3, node_selector=NOWHERE), namespace=ns)
    await wait_pods(kube, ns, "ord", {"ord-0"})
    await stays_absent(kube, ns, "ord-1")
    await play_kubelet(kube, ns, "ord-0", "Running", ready=False)
    await stays_absent(kube, ns, "ord-1")  # Running is not enough: Ready too
    await play_kubelet(kube, ns, "ord-0", "Running", ready=True)
    await wait_pods(kube, ns, "ord", {"ord-0", "ord-1"})
    await stays_absent(kube, ns, "ord-2")
    await play_kubelet(kube, ns, "ord-1", "Running", ready=True)
    await wait_pods(kube, ns, "ord", {"ord-0", "ord-1", "ord-2"})
    await play_kubelet(kube, ns, "ord-2", "Running", ready=True)
    sts = await wait_status(kube, ns, "ord", readyReplicas=3)
    status = sts["status"]
    assert status["replicas"] == 3
    assert status["availableReplicas"] == 3
    assert status["currentReplicas"] == 3
    assert status["updatedReplicas"] == 3
    assert status["currentRevision"] == status["updateRevision"]
    assert status["updateRevision"].startswith("ord-")
    assert status["observedGeneration"] == sts["metadata"]["generation"]
    assert status["collisionCount"] == 0


async def test_status_counts_created_pods_before_they_are_ready(kube: KubeClient, ns: str) -> None:
    await kube.create(statefulset("cnt", 2, policy="Parallel", node_selector=NOWHERE), namespace=ns)
    await wait_pods(kube, ns, "cnt", {"cnt-0", "cnt-1"})
    sts = await wait_status(kube, ns, "cnt", replicas=2)
    status = sts["status"]
    assert status.get("readyReplicas", 0) == 0  # omitted when zero, as Go's omitempty writes it
    assert status["availableReplicas"] == 0
    assert status["updatedReplicas"] == 2
    assert status["currentRevision"] == status["updateRevision"] == sts["status"]["updateRevision"]
    revisions, _ = await kube.list("apps/v1", "ControllerRevision", ns)
    assert [r["metadata"]["name"] for r in revisions] == [status["updateRevision"]]
    assert status["updateRevision"] == CNT_REVISION
    revision = revisions[0]
    assert revision["revision"] == 1
    assert revision["metadata"]["labels"]["app"] == "cnt"
    assert (
        status["updateRevision"] == f"cnt-{revision['metadata']['labels']['controller.kubernetes.io/hash']}"
    )
    assert revision["data"]["spec"]["template"]["$patch"] == "replace"
    assert revision["data"]["spec"]["template"]["metadata"] == {"labels": {"app": "cnt"}}
    assert revision["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert revision["metadata"]["ownerReferences"][0]["controller"] is True


async def test_min_ready_seconds_makes_each_pod_available_in_turn(kube: KubeClient, ns: str) -> None:
    """With nothing else happening, each Ready pod becomes available minReadySeconds after it became
    Ready: the controller looks again for each one (the embedded one used to drop every later look
    at a set once its first had fired, so the second pod stayed unavailable)."""
    body = statefulset("avl", 2, policy="Parallel", node_selector=NOWHERE)
    body["spec"]["minReadySeconds"] = 2
    await kube.create(body, namespace=ns)
    await wait_pods(kube, ns, "avl", {"avl-0", "avl-1"})
    for pod in ("avl-0", "avl-1"):
        await play_kubelet(kube, ns, pod, "Running", ready=False)
        await asyncio.sleep(1.0)
        seen = await kube.get("v1", "Pod", ns, pod)
        others = [c for c in seen["status"]["conditions"] if c.get("type") != "Ready"]
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": format_time(time.time())}
        await kube.patch_status("v1", "Pod", ns, pod, {"status": {"conditions": [*others, ready]}})
    sts = await wait_status(kube, ns, "avl", readyReplicas=2, availableReplicas=2)
    assert sts["status"]["replicas"] == 2


async def test_parallel_creates_every_pod_at_once(kube: KubeClient, ns: str) -> None:
    await kube.create(statefulset("par", 3, policy="Parallel", node_selector=NOWHERE), namespace=ns)
    await wait_pods(kube, ns, "par", {"par-0", "par-1", "par-2"})


async def test_ordered_scale_down_deletes_the_highest_ordinal_first(kube: KubeClient, ns: str) -> None:
    await kube.create(statefulset("ord", 3, node_selector=NOWHERE), namespace=ns)
    for index in range(3):
        await wait_pods(kube, ns, "ord", {f"ord-{i}" for i in range(index + 1)})
        await play_kubelet(kube, ns, f"ord-{index}", "Running", ready=True)
    await wait_status(kube, ns, "ord", readyReplicas=3)
    _, rv = await kube.list("v1", "Pod", ns, label_selector="app=ord")
    deleted: list[str] = []

    async def follow() -> None:
        async for event in kube.watch("v1", "Pod", ns, resource_version=rv, label_selector="app=ord"):
            if event["type"] == "DELETED":
                deleted.append(event["object"]["metadata"]["name"])

    watcher = asyncio.create_task(follow())
    try:
        await kube.merge_patch("apps/v1", "StatefulSet", ns, "ord", {"spec": {"replicas": 1}})
        await wait_pods(kube, ns, "ord", {"ord-0"})
        await wait_for(lambda: _true(len(deleted) == 2), TIMEOUT, "two deletions watched")
    finally:
        watcher.cancel()
    assert deleted == ["ord-2", "ord-1"]
    sts = await wait_status(kube, ns, "ord", replicas=1, readyReplicas=1)
    assert sts["status"]["observedGeneration"] == sts["metadata"]["generation"] == 2

    await kube.merge_patch("apps/v1", "StatefulSet", ns, "ord", {"spec": {"replicas": 2}})
    await wait_pods(kube, ns, "ord", {"ord-0", "ord-1"})


async def _true(value: bool) -> bool:
    return value


async def test_a_failed_pod_is_deleted_and_recreated(kube: KubeClient, ns: str) -> None:
    await kube.create(statefulset("fail", 1, node_selector=NOWHERE), namespace=ns)
    first = (await wait_pods(kube, ns, "fail", {"fail-0"}))["fail-0"]
    await play_kubelet(kube, ns, "fail-0", "Failed", ready=False)

    async def replaced() -> JsonDict | None:
        pod = (await pods_of(kube, ns, "fail")).get("fail-0")
        return pod if pod and pod["metadata"]["uid"] != first["metadata"]["uid"] else None

    second = await wait_for(replaced, TIMEOUT, "fail-0 recreated")
    assert second["status"].get("phase") == "Pending"
    assert second["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0"


async def test_deleting_the_set_deletes_its_pods_and_revisions(kube: KubeClient, ns: str) -> None:
    await kube.create(statefulset("gone", 2, policy="Parallel", node_selector=NOWHERE), namespace=ns)
    await wait_pods(kube, ns, "gone", {"gone-0", "gone-1"})
    await wait_status(kube, ns, "gone", replicas=2)
    await kube.delete("apps/v1", "StatefulSet", ns, "gone")
    await wait_pods(kube, ns, "gone", set())

    async def no_revisions() -> bool:
        revisions, _ = await kube.list("apps/v1", "ControllerRevision", ns)
        return not revisions

    await wait_for(no_revisions, TIMEOUT, "the set's ControllerRevisions deleted")


async def test_events_name_each_pod_created_and_deleted(kube: KubeClient, ns: str) -> None:
    await kube.create(statefulset("ev", 2, policy="Parallel", node_selector=NOWHERE), namespace=ns)
    await wait_pods(kube, ns, "ev", {"ev-0", "ev-1"})
    await kube.merge_patch("apps/v1", "StatefulSet", ns, "ev", {"spec": {"replicas": 0}})
    await wait_pods(kube, ns, "ev", set())
    wanted = {
        ("SuccessfulCreate", "Create Pod ev-0 in StatefulSet ev successful"),
        ("SuccessfulCreate", "Create Pod ev-1 in StatefulSet ev successful"),
        ("SuccessfulDelete", "Delete Pod ev-1 in StatefulSet ev successful"),
        ("SuccessfulDelete", "Delete Pod ev-0 in StatefulSet ev successful"),
    }

    async def events() -> bool:
        seen, _ = await kube.list("v1", "Event", ns)
        ours = {(e["reason"], e["message"]) for e in seen if e["involvedObject"]["kind"] == "StatefulSet"}
        return wanted <= ours

    await wait_for(events, TIMEOUT, "SuccessfulCreate and SuccessfulDelete events")
    sts = await wait_status(kube, ns, "ev", replicas=0, observedGeneration=2)
    status = sts["status"]  # Go's omitempty drops the zero counts, not replicas/availableReplicas
    assert set(status) == {
        "observedGeneration",
        "replicas",
        "availableReplicas",
        "currentRevision",
        "updateRevision",
        "collisionCount",
    }


@pytest.mark.parametrize("field", ["podManagementPolicy"])
async def test_defaults_are_kubernetes(kube: KubeClient, ns: str, field: str) -> None:
    body = statefulset("dflt", 0)
    del body["spec"][field]
    sts = await kube.create(body, namespace=ns)
    spec = sts["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}


async def test_the_scale_subresource_scales_the_set(kube: KubeClient, ns: str) -> None:
    """`kubectl scale statefulset` patches spec.replicas through /scale; the controller follows."""
    await kube.create(statefulset("scl", 1, policy="Parallel", node_selector=NOWHERE), namespace=ns)
    await wait_pods(kube, ns, "scl", {"scl-0"})
    scale = await kube.request("GET", kube.resource("apps/v1", "StatefulSet").path(ns, "scl", "scale"))
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 1
    patch = {"spec": {"replicas": 3}}
    await kube.merge_patch("apps/v1", "StatefulSet", ns, "scl", patch, subresource="scale")
    await wait_pods(kube, ns, "scl", {"scl-0", "scl-1", "scl-2"})
    sts = await wait_status(kube, ns, "scl", replicas=3)
    assert sts["status"]["observedGeneration"] == sts["metadata"]["generation"] == 2
