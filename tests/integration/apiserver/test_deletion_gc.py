"""Deletion: finalizers, pod grace, DeleteOptions, garbage collection, namespace lifecycle."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.kubelet_sim import KubeletSim

from .helpers import PODS, Http, configmap, eventually, pod

CM = "/api/v1/namespaces/default/configmaps"


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


async def test_delete_returns_status_success_for_most_kinds(http: Http) -> None:
    _, cm, _ = await http.post(CM, configmap("d"))
    status, body, _ = await http.delete(f"{CM}/d")
    assert status == 200
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "d", "kind": "configmaps", "uid": cm["metadata"]["uid"]},
    }
    status, body, _ = await http.delete(f"{CM}/d")
    assert status == 404 and body["message"] == 'configmaps "d" not found'


async def test_delete_returns_the_pod(core: client.CoreV1Api) -> None:
    await core.create_namespaced_pod("default", pod("p"))
    out = await core.delete_namespaced_pod("p", "default")
    assert out.metadata.name == "p"


async def test_finalizers_keep_object_until_removed(http: Http) -> None:
    await http.post(CM, configmap("f", finalizers=["example.com/hold"]))
    status, body, _ = await http.delete(f"{CM}/f")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 0
    _, body, _ = await http.get(f"{CM}/f")
    assert body["metadata"]["finalizers"] == ["example.com/hold"]
    status, body, _ = await http.patch(
        f"{CM}/f", {"metadata": {"finalizers": ["example.com/hold", "x.io/new"]}}
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.finalizers"
    assert "no new finalizers can be added if the object is being deleted" in body["message"]
    status, body, _ = await http.patch(f"{CM}/f", {"metadata": {"finalizers": None}})
    assert status == 200
    assert await _gone(http, f"{CM}/f")


async def test_finalizer_removal_emits_single_deleted_event(http: Http) -> None:
    await http.post(CM, configmap("fe", finalizers=["example.com/hold"]))
    await http.delete(f"{CM}/fe")
    w = await http.watch(CM, {"resourceVersion": "0"})
    try:
        (added,) = await w.take(1)
        assert added["object"]["metadata"]["deletionTimestamp"]
        await http.patch(f"{CM}/fe", {"metadata": {"finalizers": []}})
        (ev,) = await w.take(1)
        assert ev["type"] == "DELETED" and "finalizers" not in ev["object"]["metadata"]
    finally:
        await w.close()


async def test_preconditions(http: Http) -> None:
    _, cm, _ = await http.post(CM, configmap("pc"))
    status, body, _ = await http.delete(f"{CM}/pc", {"preconditions": {"uid": "nope"}})
    assert status == 409
    assert body["message"] == (
        f'Operation cannot be fulfilled on configmaps "pc": Precondition failed: UID in '
        f"precondition: nope, UID in object meta: {cm['metadata']['uid']}"
    )
    status, body, _ = await http.delete(f"{CM}/pc", {"preconditions": {"resourceVersion": "1"}})
    assert status == 409 and "Precondition failed: ResourceVersion in precondition: 1" in body["message"]
    status, _, _ = await http.delete(f"{CM}/pc", {"preconditions": {"uid": cm["metadata"]["uid"]}})
    assert status == 200


async def test_unbound_pod_is_removed_immediately(http: Http) -> None:
    await http.post(PODS, pod("u"))
    await http.delete(f"{PODS}/u")
    assert await _gone(http, f"{PODS}/u")


async def test_bound_pod_waits_for_node_agent(server: EmbeddedAPIServer, http: Http) -> None:
    async with KubeletSim(server.url, "node-a") as kubelet:
        await kubelet.register_node()
        await http.post(PODS, pod("g"))
        await kubelet.bind("default", "g")
        await kubelet.running("default", "g")
        status, body, _ = await http.delete(f"{PODS}/g", params={"gracePeriodSeconds": "20"})
        assert status == 200
        assert body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 20
        assert await _exists(http, f"{PODS}/g")
        await kubelet.confirm_deletion("default", "g")
        assert await _gone(http, f"{PODS}/g")


async def test_bound_pod_without_registered_node_is_removed(http: Http) -> None:
    await http.post(PODS, pod("nb"))
    await http.post(
        f"{PODS}/nb/binding", {"metadata": {"name": "nb"}, "target": {"kind": "Node", "name": "ghost"}}
    )
    await http.delete(f"{PODS}/nb")
    assert await _gone(http, f"{PODS}/nb")


async def test_pod_deletion_policy_immediate() -> None:
    srv = EmbeddedAPIServer(pod_deletion="immediate")
    await srv.start()
    try:
        async with KubeletSim(srv.url, "n") as kubelet:
            await kubelet.register_node()
            status, _ = await kubelet._call("POST", PODS, pod("i"))
            assert status == 201
            await kubelet.bind("default", "i")
            status, _ = await kubelet._call("DELETE", f"{PODS}/i")
            status, _ = await kubelet._call("GET", f"{PODS}/i")
            assert status == 404
    finally:
        await srv.stop()


async def test_background_propagation_collects_dependents(http: Http) -> None:
    _, owner, _ = await http.post(CM, configmap("owner"))
    for i in range(3):
        await http.post(PODS, pod(f"dep{i}", ownerReferences=owned_by(owner)))
    await http.delete(f"{CM}/owner", {"propagationPolicy": "Background"})
    assert await _gone(http, f"{CM}/owner")

    async def all_gone() -> bool:
        _, body, _ = await http.get(PODS)
        return not body["items"]

    await eventually(all_gone)


async def test_foreground_propagation_deletes_blocking_dependents_first(http: Http) -> None:
    _, owner, _ = await http.post(CM, configmap("fg"))
    await http.post(
        CM, configmap("blocker", ownerReferences=owned_by(owner, block=True), finalizers=["example.com/slow"])
    )
    status, body, _ = await http.delete(f"{CM}/fg", {"propagationPolicy": "Foreground"})
    assert status == 200 and "foregroundDeletion" in body["metadata"]["finalizers"]
    assert body["metadata"]["deletionTimestamp"]

    async def blocker_deleting() -> bool:
        _, b, _ = await http.get(f"{CM}/blocker")
        return bool(b["metadata"].get("deletionTimestamp"))

    await eventually(blocker_deleting)
    assert await _exists(http, f"{CM}/fg")  # owner waits for the blocking dependent
    await http.patch(f"{CM}/blocker", {"metadata": {"finalizers": None}})

    async def owner_gone() -> bool:
        return await _gone(http, f"{CM}/fg")

    await eventually(owner_gone)


async def test_foreground_does_not_wait_for_non_blocking_dependents(http: Http) -> None:
    _, owner, _ = await http.post(CM, configmap("fg2"))
    await http.post(CM, configmap("nb", ownerReferences=owned_by(owner), finalizers=["example.com/slow"]))
    await http.delete(f"{CM}/fg2", {"propagationPolicy": "Foreground"})

    async def owner_gone() -> bool:
        return await _gone(http, f"{CM}/fg2")

    await eventually(owner_gone)
    _, dep, _ = await http.get(f"{CM}/nb")
    assert dep["metadata"]["deletionTimestamp"]


async def test_orphan_propagation_strips_owner_references(core: client.CoreV1Api, http: Http) -> None:
    _, owner, _ = await http.post(CM, configmap("orph"))
    other = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "keep",
        "uid": (await http.post(CM, configmap("keep")))[1]["metadata"]["uid"],
    }
    await http.post(PODS, pod("child", ownerReferences=[*owned_by(owner), other]))
    await core.delete_namespaced_config_map("orph", "default", propagation_policy="Orphan")

    async def owner_gone() -> bool:
        return await _gone(http, f"{CM}/orph")

    await eventually(owner_gone)
    _, child, _ = await http.get(f"{PODS}/child")
    assert [r["name"] for r in child["metadata"]["ownerReferences"]] == ["keep"]


async def test_orphan_via_finalizer_is_visible_while_pending(http: Http) -> None:
    _, owner, _ = await http.post(CM, configmap("o"))
    await http.post(PODS, pod("c", ownerReferences=owned_by(owner)))
    status, body, _ = await http.delete(f"{CM}/o", params={"propagationPolicy": "Orphan"})
    assert status == 200 and body["metadata"]["finalizers"] == ["orphan"]

    async def orphaned() -> bool:
        _, c, _ = await http.get(f"{PODS}/c")
        return "ownerReferences" not in c["metadata"] and await _gone(http, f"{CM}/o")

    await eventually(orphaned)


async def test_jobs_orphan_by_default(http: Http) -> None:
    _, job, _ = await http.post(
        "/apis/batch/v1/namespaces/default/jobs", {"metadata": {"name": "j"}, "spec": {}}
    )
    await http.post(PODS, pod("jp", ownerReferences=owned_by(job)))
    await http.delete("/apis/batch/v1/namespaces/default/jobs/j")

    async def job_gone() -> bool:
        return await _gone(http, "/apis/batch/v1/namespaces/default/jobs/j")

    await eventually(job_gone)
    assert await _exists(http, f"{PODS}/jp")


async def test_dangling_owner_reference_is_collected(http: Http) -> None:
    ref = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "ghost",
            "uid": "00000000-0000-4000-8000-000000000000",
        }
    ]
    await http.post(PODS, pod("dangling", ownerReferences=ref))

    async def gone() -> bool:
        return await _gone(http, f"{PODS}/dangling")

    await eventually(gone)


async def test_cascade_through_two_levels(http: Http) -> None:
    _, top, _ = await http.post(CM, configmap("top"))
    _, mid, _ = await http.post(CM, configmap("mid", ownerReferences=owned_by(top)))
    await http.post(PODS, pod("leaf", ownerReferences=owned_by(mid)))
    await http.delete(f"{CM}/top")

    async def gone() -> bool:
        return await _gone(http, f"{PODS}/leaf") and await _gone(http, f"{CM}/mid")

    await eventually(gone)


async def test_delete_collection_with_label_selector(http: Http) -> None:
    for name, role in (("a", "x"), ("b", "x"), ("c", "y")):
        await http.post(CM, configmap(name, labels={"role": role}))
    status, body, _ = await http.delete(CM, params={"labelSelector": "role=x"})
    assert status == 200 and body["kind"] == "ConfigMapList"
    assert sorted(o["metadata"]["name"] for o in body["items"]) == ["a", "b"]
    _, body, _ = await http.get(CM)
    assert [o["metadata"]["name"] for o in body["items"]] == ["c"]


async def test_delete_collection_via_client(core: client.CoreV1Api, http: Http) -> None:
    for i in range(3):
        await http.post(PODS, pod(f"dc{i}", labels={"job": "j"}))
    await core.delete_collection_namespaced_pod("default", label_selector="job=j")
    assert not (await core.list_namespaced_pod("default")).items


async def test_namespace_deletion_removes_contents(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "tmp"}})
    await http.post("/api/v1/namespaces/tmp/configmaps", configmap("a"))
    await http.post("/api/v1/namespaces/tmp/pods", pod("p"))
    await http.post("/api/v1/namespaces/tmp/configmaps", configmap("held", finalizers=["example.com/x"]))
    status, body, _ = await http.delete("/api/v1/namespaces/tmp")
    assert status == 200 and body["status"]["phase"] == "Terminating"
    status, body, _ = await http.post("/api/v1/namespaces/tmp/configmaps", configmap("new"))
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        'configmaps "new" is forbidden: unable to create new content in namespace tmp '
        "because it is being terminated"
    )

    async def only_held_left() -> bool:
        _, cms, _ = await http.get("/api/v1/namespaces/tmp/configmaps")
        _, pods, _ = await http.get("/api/v1/namespaces/tmp/pods")
        return [o["metadata"]["name"] for o in cms["items"]] == ["held"] and not pods["items"]

    await eventually(only_held_left)
    _, ns, _ = await http.get("/api/v1/namespaces/tmp")
    assert ns["status"]["phase"] == "Terminating"
    await http.patch("/api/v1/namespaces/tmp/configmaps/held", {"metadata": {"finalizers": None}})

    async def ns_gone() -> bool:
        return await _gone(http, "/api/v1/namespaces/tmp")

    await eventually(ns_gone)
