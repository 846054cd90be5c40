"""securityContext on the local node (issue #17 item 7): what it cannot honour is said, not ignored.

Fields the node cannot apply produce one Warning event ``SecurityContextNotEnforced`` naming each
field and what happens instead; ``runAsNonRoot`` is enforced as the kubelet's verifyRunAsNonRoot
does: the container waits in CreateContainerConfigError when the node would run it as root.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.embedded.node.errors import ContainerConfigError
from kubetrain.embedded.node.security import Identity, unenforced, verify_run_as_non_root
from kubetrain.kube.client import core_path

from .conftest import container, create, get_pod, pod, wait_for, wait_phase

JsonDict = dict[str, Any]
ROOT = Identity(0, 0, frozenset({0}))
USER = Identity(1000, 1000, frozenset({1000, 27}))


def with_sc(pod_sc: JsonDict | None = None, **container_sc: Any) -> JsonDict:
    spec: JsonDict = {"containers": [{"name": "main", "securityContext": container_sc}]}
    if pod_sc is not None:
        spec["securityContext"] = pod_sc
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": spec}


async def events(api: KubeAPI, name: str, reason: str) -> list[JsonDict]:
    items = (await api.get(core_path("events", "default")))["items"]
    return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


# -- what is reported ------------------------------------------------------------------------------


def test_fields_the_node_already_honours_are_not_reported() -> None:
    assert unenforced(with_sc({"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 27}), USER) == []
    assert unenforced(with_sc(capabilities={"drop": ["ALL"]}, allowPrivilegeEscalation=True), USER) == []
    assert unenforced(with_sc(privileged=True, capabilities={"add": ["NET_ADMIN"]}), ROOT) == []
    assert unenforced(with_sc(seccompProfile={"type": "Unconfined"}, runAsNonRoot=True), USER) == []


def test_each_unhonoured_field_is_named_with_what_happens_instead() -> None:
    found = unenforced(
        with_sc(
            {"runAsUser": 1000, "fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
            readOnlyRootFilesystem=True,
            capabilities={"drop": ["ALL"]},
            privileged=False,
        ),
        ROOT,
    )
    assert found == [
        "spec.securityContext.fsGroup=2000: volumes are not given to that group, nor is the process",
        "spec.containers[0].securityContext.privileged=false: runs with every privilege of root",
        'spec.containers[0].securityContext.capabilities={"drop":["ALL"]}: nothing is dropped: '
        "the process has every capability of root",
        "spec.containers[0].securityContext.readOnlyRootFilesystem=true: the filesystem stays writable "
        "wherever uid 0 (root), the user running kubetrain may write",
        "spec.securityContext.runAsUser=1000: runs as uid 0 (root), the user running kubetrain",
        'spec.securityContext.seccompProfile={"type":"RuntimeDefault"}: no seccomp filter is applied',
    ]


def test_a_container_value_overrides_the_pods() -> None:
    body = with_sc({"runAsUser": 5}, runAsUser=1000)  # honoured for main, not for init
    body["spec"]["initContainers"] = [{"name": "init"}]
    [found] = unenforced(body, USER)
    assert found.startswith("spec.securityContext.runAsUser=5: runs as uid 1000 (")


# -- runAsNonRoot ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "me", "message"),
    [
        (with_sc(runAsNonRoot=True), ROOT, "container has runAsNonRoot and image will run as root"),
        (with_sc({"runAsNonRoot": True}, runAsUser=1000), ROOT, "image will run as root"),
        (with_sc(runAsNonRoot=True, runAsUser=0), USER, "container's runAsUser breaks non-root policy"),
    ],
)
def test_run_as_non_root_refuses_root_as_the_kubelet_does(body: JsonDict, me: Identity, message: str) -> None:
    with pytest.raises(ContainerConfigError) as err:
        verify_run_as_non_root(body, body["spec"]["containers"][0], me)
    assert message in str(err.value)
    assert str(err.value).endswith('(pod: "p_ns(u1)", container: main)')


def test_run_as_non_root_passes_for_a_non_root_node() -> None:
    body = with_sc({"runAsNonRoot": True})
    verify_run_as_non_root(body, body["spec"]["containers"][0], USER)
    body = with_sc({"runAsNonRoot": True}, runAsNonRoot=False)
    verify_run_as_non_root(body, body["spec"]["containers"][0], ROOT)


# -- on the node -----------------------------------------------------------------------------------


async def test_a_pod_asking_what_the_node_cannot_do_runs_with_a_warning(
    api: KubeAPI, agent: NodeAgent
) -> None:
    me = Identity.current()
    spec = container(
        "main", "print('ran')", securityContext={"runAsUser": me.uid + 4242, "readOnlyRootFilesystem": True}
    )
    await create(api, pod("sc-warn", spec, restartPolicy="Never"))
    await wait_phase(api, "sc-warn", "Succeeded")
    [event] = await wait_for(lambda: events(api, "sc-warn", "SecurityContextNotEnforced"), what="the warning")
    assert event["type"] == "Warning"
    assert (
        f"spec.containers[0].securityContext.runAsUser={me.uid + 4242}: runs as uid {me.uid}"
        in event["message"]
    )
    assert "spec.containers[0].securityContext.readOnlyRootFilesystem=true" in event["message"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the node refuses runAsNonRoot only when it runs as root")
async def test_run_as_non_root_on_a_root_node_is_a_create_container_config_error(
    api: KubeAPI, agent: NodeAgent
) -> None:
    await create(
        api,
        pod(
            "sc-nonroot",
            container("main", "print('must not run')", securityContext={"runAsNonRoot": True}),
            restartPolicy="Never",
        ),
    )

    async def waiting() -> JsonDict | None:
        p = await get_pod(api, "sc-nonroot")
        statuses = ((p or {}).get("status") or {}).get("containerStatuses") or [{}]
        state = (statuses[0].get("state") or {}).get("waiting") or {}
        return p if state.get("reason") == "CreateContainerConfigError" else None

    p = await wait_for(waiting, what="CreateContainerConfigError")
    uid = p["metadata"]["uid"]
    message = (
        "container has runAsNonRoot and image will run as root "
        f'(pod: "sc-nonroot_default({uid})", container: main)'
    )
    assert p["status"]["containerStatuses"][0]["state"]["waiting"]["message"] == message
    assert p["status"]["phase"] == "Pending"
    [event] = await wait_for(lambda: events(api, "sc-nonroot", "Failed"), what="the Failed event")
    assert (event["type"], event["message"]) == ("Warning", f"Error: {message}")
    await asyncio.sleep(1.0)  # five more retries of the start: still one event
    assert len(await events(api, "sc-nonroot", "Failed")) == 1
