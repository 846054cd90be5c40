"""Deletion: finalizers, pod grace, DeleteOptions, garbage collection, namespace lifecycle."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from tests.kubelet_sim import KubeletSim

from .helpers import NS, Http, Unique, configmap, eventually, names, pod, wait_for_service_account


async def _exists(http: Http, path: str) -> bool:
    status, _, _ = await http.get(path)
    return status == 200


async def _gone(http: Http, path: str) -> bool:
    return not await _exists(http, path)


def owned_by(owner: dict[str, Any], block: bool = False) -> list[dict[str, Any]]:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return [ref]


async def test_delete_returns_status_success_for_most_kinds(http: Http, ns: NS) -> None:
    _, cm, _ = await http.post(ns.configmaps, configmap("d"))
    status, body, _ = await http.delete(f"{ns.configmaps}/d")
    assert status == 200
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "d", "kind": "configmaps", "uid": cm["metadata"]["uid"]},
    }
    status, body, _ = await http.delete(f"{ns.configmaps}/d")
    assert status == 404 and body["message"] == 'configmaps "d" not found'


async def test_delete_returns_the_pod(core: client.CoreV1Api, ns: NS) -> None:
    await core.create_namespaced_pod(ns.name, pod("p"))
    out = await core.delete_namespaced_pod("p", ns.name)
    assert out.metadata.name == "p"


async def test_finalizers_keep_object_until_removed(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("f", finalizers=["example.com/hold"]))
    status, body, _ = await http.delete(f"{ns.configmaps}/f")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 0
    _, body, _ = await http.get(f"{ns.configmaps}/f")
    assert body["metadata"]["finalizers"] == ["example.com/hold"]
    status, body, _ = await http.patch(
        f"{ns.configmaps}/f", {"metadata": {"finalizers": ["example.com/hold", "x.io/new"]}}
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.finalizers"
    assert "no new finalizers can be added if the object is being deleted" in body["message"]
    status, body, _ = await http.patch(f"{ns.configmaps}/f", {"metadata": {"finalizers": None}})
    assert status == 200
    assert await _gone(http, f"{ns.configmaps}/f")


async def test_finalizer_removal_emits_single_deleted_event(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("fe", finalizers=["example.com/hold"]))
    await http.delete(f"{ns.configmaps}/fe")
    w = await http.watch(ns.configmaps, {"resourceVersion": "0"})
    try:
        (added,) = await w.take(1)
        assert added["object"]["metadata"]["deletionTimestamp"]
        await http.patch(f"{ns.configmaps}/fe", {"metadata": {"finalizers": []}})
        (ev,) = await w.take(1)
        assert ev["type"] == "DELETED"  # carrying the last stored state, finalizer included
        assert ev["object"]["metadata"]["finalizers"] == ["example.com/hold"]
    finally:
        await w.close()


async def test_preconditions(http: Http, ns: NS) -> None:
    _, cm, _ = await http.post(ns.configmaps, configmap("pc"))
    uid, rv = cm["metadata"]["uid"], cm["metadata"]["resourceVersion"]
    status, body, _ = await http.delete(f"{ns.configmaps}/pc", {"preconditions": {"uid": "nope"}})
    assert status == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "pc": the UID in the precondition (nope) does not '
        f"match the UID in record ({uid}). The object might have been deleted and then recreated"
    )
    assert body["details"] == {"name": "pc", "kind": "ConfigMap"}
    status, body, _ = await http.delete(f"{ns.configmaps}/pc", {"preconditions": {"resourceVersion": "1"}})
    assert status == 409
    assert body["message"] == (
        'Operation cannot be fulfilled on ConfigMap "pc": the ResourceVersion in the precondition (1) '
        f"does not match the ResourceVersion in record ({rv}). The object might have been modified"
    )
    status, _, _ = await http.delete(f"{ns.configmaps}/pc", {"preconditions": {"uid": uid}})
    assert status == 200


async def test_unbound_pod_is_removed_immediately(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("u"))
    await http.delete(f"{ns.pods}/u")
    assert await _gone(http, f"{ns.pods}/u")


async def _bind(http: Http, ns: NS, name: str, node: str) -> None:
    binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": node}}
    status, body, _ = await http.post(f"{ns.pods}/{name}/binding", binding)
    assert status == 201, body


async def test_bound_pod_waits_for_its_kubelet(http: Http, ns: NS, unique: Unique) -> None:
    node = unique("node-a", cleanup="/api/v1/nodes")
    await http.post("/api/v1/nodes", {"metadata": {"name": node}})
    await http.post(ns.pods, pod("g"))
    await _bind(http, ns, "g", node)
    status, body, _ = await http.delete(f"{ns.pods}/g", params={"gracePeriodSeconds": "20"})
    assert status == 200
    assert body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 20
    assert await _exists(http, f"{ns.pods}/g")
    status, body, _ = await http.delete(f"{ns.pods}/g", params={"gracePeriodSeconds": "0"})  # the kubelet
    assert status == 200
    assert await _gone(http, f"{ns.pods}/g")


@pytest.mark.deliberate_difference(
    "a pod bound to a node that has no Node object is removed at once (no kubelet will ever confirm)"
)
async def test_bound_pod_without_registered_node_waits_for_grace(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("nb"))
    await _bind(http, ns, "nb", "ghost")
    await http.delete(f"{ns.pods}/nb")
    _, body, _ = await http.get(f"{ns.pods}/nb")
    assert body["metadata"]["deletionGracePeriodSeconds"] == 30
    await http.delete(f"{ns.pods}/nb", params={"gracePeriodSeconds": "0"})


@pytest.mark.embedded_only("the embedded server's pod_deletion option")
async def test_pod_deletion_policy_immediate() -> None:
    srv = EmbeddedAPIServer(pod_deletion="immediate")
    await srv.start()
    pods = "/api/v1/namespaces/default/pods"
    try:
        async with KubeletSim(srv.url, "n", token=srv.token, ssl_context=srv.client_ssl_context()) as kubelet:
            await kubelet.register_node()
            status, _ = await kubelet._call("POST", pods, pod("i"))
            assert status == 201
            await kubelet.bind("default", "i")
            status, _ = await kubelet._call("DELETE", f"{pods}/i")
            status, _ = await kubelet._call("GET", f"{pods}/i")
            assert status == 404
    finally:
        await srv.stop()


async def test_background_propagation_collects_dependents(http: Http, ns: NS) -> None:
    _, owner, _ = await http.post(ns.configmaps, configmap("owner"))
    for i in range(3):
        await http.post(ns.pods, pod(f"dep{i}", ownerReferences=owned_by(owner)))
    await http.delete(f"{ns.configmaps}/owner", {"propagationPolicy": "Background"})
    assert await _gone(http, f"{ns.configmaps}/owner")

    async def all_gone() -> bool:
        _, body, _ = await http.get(ns.pods)
        return not names(body["items"])

    await eventually(all_gone)


async def test_foreground_propagation_deletes_blocking_dependents_first(http: Http, ns: NS) -> None:
    _, owner, _ = await http.post(ns.configmaps, configmap("fg"))
    await http.post(
        ns.configmaps,
        configmap("blocker", ownerReferences=owned_by(owner, block=True), finalizers=["example.com/slow"]),
    )
    status, body, _ = await http.delete(f"{ns.configmaps}/fg", {"propagationPolicy": "Foreground"})
    assert status == 200 and "foregroundDeletion" in body["metadata"]["finalizers"]
    assert body["metadata"]["deletionTimestamp"]

    async def blocker_deleting() -> bool:
        _, b, _ = await http.get(f"{ns.configmaps}/blocker")
        return bool(b["metadata"].get("deletionTimestamp"))

    await eventually(blocker_deleting)
    assert await _exists(http, f"{ns.configmaps}/fg")  # owner waits for the blocking dependent
    await http.patch(f"{ns.configmaps}/blocker", {"metadata": {"finalizers": None}})

    async def owner_gone() -> bool:
        return await _gone(http, f"{ns.configmaps}/fg")

    await eventually(owner_gone)


async def test_foreground_does_not_wait_for_non_blocking_dependents(http: Http, ns: NS) -> None:
    _, owner, _ = await http.post(ns.configmaps, configmap("fg2"))
    await http.post(
        ns.configmaps, configmap("nb", ownerReferences=owned_by(owner), finalizers=["example.com/slow"])
    )
    await http.delete(f"{ns.configmaps}/fg2", {"propagationPolicy": "Foreground"})

    async def owner_gone() -> bool:
        return await _gone(http, f"{ns.configmaps}/fg2")

    await eventually(owner_gone)
    _, dep, _ = await http.get(f"{ns.configmaps}/nb")
    assert dep["metadata"]["deletionTimestamp"]


async def test_orphan_propagation_strips_owner_references(core: client.CoreV1Api, http: Http, ns: NS) -> None:
    _, owner, _ = await http.post(ns.configmaps, configmap("orph"))
    other = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "keep",
        "uid": (await http.post(ns.configmaps, configmap("keep")))[1]["metadata"]["uid"],
    }
    await http.post(ns.pods, pod("child", ownerReferences=[*owned_by(owner), other]))
    await core.delete_namespaced_config_map("orph", ns.name, propagation_policy="Orphan")

    async def owner_gone() -> bool:
        return await _gone(http, f"{ns.configmaps}/orph")

    await eventually(owner_gone)
    _, child, _ = await http.get(f"{ns.pods}/child")
    assert [r["name"] for r in child["metadata"]["ownerReferences"]] == ["keep"]


async def test_orphan_via_finalizer_is_visible_while_pending(http: Http, ns: NS) -> None:
    _, owner, _ = await http.post(ns.configmaps, configmap("o"))
    await http.post(ns.pods, pod("c", ownerReferences=owned_by(owner)))
    status, body, _ = await http.delete(f"{ns.configmaps}/o", params={"propagationPolicy": "Orphan"})
    assert status == 200 and body["metadata"]["finalizers"] == ["orphan"]

    async def orphaned() -> bool:
        _, c, _ = await http.get(f"{ns.pods}/c")
        return "ownerReferences" not in c["metadata"] and await _gone(http, f"{ns.configmaps}/o")

    await eventually(orphaned)


JOB = {
    "metadata": {"name": "j"},
    "spec": {
        "suspend": True,  # no pods from a real Job controller
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}},
    },
}


async def test_jobs_orphan_by_default(http: Http, ns: NS) -> None:
    _, job, _ = await http.post(f"/apis/batch/v1/namespaces/{ns}/jobs", JOB)
    await http.post(ns.pods, pod("jp", ownerReferences=owned_by(job)))
    await http.delete(f"/apis/batch/v1/namespaces/{ns}/jobs/j")

    async def job_gone() -> bool:
        return await _gone(http, f"/apis/batch/v1/namespaces/{ns}/jobs/j")

    await eventually(job_gone)
    assert await _exists(http, f"{ns.pods}/jp")


async def test_dangling_owner_reference_is_collected(http: Http, ns: NS) -> None:
    ref = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "ghost",
            "uid": "00000000-0000-4000-8000-000000000000",
        }
    ]
    await http.post(ns.pods, pod("dangling", ownerReferences=ref))

    async def gone() -> bool:
        return await _gone(http, f"{ns.pods}/dangling")

    await eventually(gone)


async def test_cascade_through_two_levels(http: Http, ns: NS) -> None:
    _, top, _ = await http.post(ns.configmaps, configmap("top"))
    _, mid, _ = await http.post(ns.configmaps, configmap("mid", ownerReferences=owned_by(top)))
    await http.post(ns.pods, pod("leaf", ownerReferences=owned_by(mid)))
    await http.delete(f"{ns.configmaps}/top")

    async def gone() -> bool:
        return await _gone(http, f"{ns.pods}/leaf") and await _gone(http, f"{ns.configmaps}/mid")

    await eventually(gone)


async def test_delete_collection_with_label_selector(http: Http, ns: NS) -> None:
    for name, role in (("a", "x"), ("b", "x"), ("c", "y")):
        await http.post(ns.configmaps, configmap(name, labels={"role": role}))
    status, body, _ = await http.delete(ns.configmaps, params={"labelSelector": "role=x"})
    assert status == 200 and body["kind"] == "ConfigMapList"
    assert sorted(o["metadata"]["name"] for o in body["items"]) == ["a", "b"]
    _, body, _ = await http.get(ns.configmaps)
    assert names(body["items"]) == ["c"]


async def test_delete_collection_via_client(core: client.CoreV1Api, http: Http, ns: NS) -> None:
    for i in range(3):
        await http.post(ns.pods, pod(f"dc{i}", labels={"job": "j"}))
    await core.delete_collection_namespaced_pod(ns.name, label_selector="job=j")
    assert not (await core.list_namespaced_pod(ns.name)).items


async def test_namespace_deletion_removes_contents(http: Http, unique: Unique) -> None:
    tmp = unique("tmp", cleanup="/api/v1/namespaces")
    base = f"/api/v1/namespaces/{tmp}"
    await http.post("/api/v1/namespaces", {"metadata": {"name": tmp}})
    await wait_for_service_account(http, tmp)
    await http.post(f"{base}/configmaps", configmap("a"))
    await http.post(f"{base}/pods", pod("p"))
    await http.post(f"{base}/configmaps", configmap("held", finalizers=["example.com/x"]))
    status, body, _ = await http.delete(base)
    assert status == 200 and body["status"]["phase"] == "Terminating"
    status, body, _ = await http.post(f"{base}/configmaps", configmap("new"))
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        f'configmaps "new" is forbidden: unable to create new content in namespace {tmp} '
        "because it is being terminated"
    )

    async def only_held_left() -> bool:
        _, cms, _ = await http.get(f"{base}/configmaps")
        _, pods, _ = await http.get(f"{base}/pods")
        return [o["metadata"]["name"] for o in cms["items"]] == ["held"] and not pods["items"]

    await eventually(only_held_left, timeout=30)
    _, got, _ = await http.get(base)
    assert got["status"]["phase"] == "Terminating"
    await http.patch(f"{base}/configmaps/held", {"metadata": {"finalizers": None}})

    async def ns_gone() -> bool:
        return await _gone(http, base)

    await eventually(ns_gone, timeout=30)
