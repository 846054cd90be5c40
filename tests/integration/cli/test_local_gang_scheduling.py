"""The local plane gang schedules as a cluster with Volcano or scheduler-plugins does (issue #15).

A job whose pods name `scheduler-plugins-scheduler` or `volcano` (or a TrainJob whose runtime has
a `podGroupPolicy`) gets that scheduler's PodGroup from the plane's operator, and the plane's
binder holds the gang until `minMember` pods can be placed together, saying why in that
scheduler's words on the pods (and on a Volcano PodGroup).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_plane import PlaneThread, pytorchjob

import kubetrain
from kubetrain.kube.client import KubeAPI, core_path, group_path
from kubetrain.kube.quantity import parse_quantity

JsonDict = dict[str, Any]
PLUGINS = ("scheduling.x-k8s.io", "v1alpha1")
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
SIBLINGS = re.compile(
    r"pre-filter pod gang-short-\S+ cannot find enough sibling pods, "
    r"current pods number: [12], minMember of group: 3"
)
NOT_ENOUGH_TASKS = re.compile(r"Not enough valid tasks for gang-scheduling, valid: [12], min: 3")


@pytest.fixture
def client(kubeconfig: str) -> kubetrain.Client:
    with kubetrain.Client(kubeconfig) as c:
        yield c


def gang_job(name: str, scheduler: str, min_available: int) -> JsonDict:
    """Master + 1 Worker (2 pods) naming `scheduler`, gang of at least `min_available`."""
    body = pytorchjob(name, "print('master ran')", worker="print('worker ran')")
    for spec in body["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["schedulerName"] = scheduler
    body["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    return body


def read(plane: PlaneThread, path: str) -> JsonDict:
    async def get() -> JsonDict:
        api = KubeAPI.for_url(plane.plane.server.plain_url, token=plane.plane.token)
        try:
            found: JsonDict = await api.get(path)
            return found
        finally:
            await api.close()

    return asyncio.run(get())


def until(what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def scheduling_messages(pods: list[JsonDict]) -> set[str]:
    return {
        c.get("message", "")
        for pod in pods
        for c in (pod.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    }


def told_why(client: kubetrain.Client, job: str, ending: str) -> list[JsonDict]:
    """The job's 2 pods once each's PodScheduled=False message ends with `ending`, else []."""
    pods = client.pods("pytorchjob", job)
    told = [p for p in pods if any(m.endswith(ending) for m in scheduling_messages([p]))]
    return pods if len(pods) == 2 and len(told) == 2 else []


def settled(messages: set[str], ending: str) -> set[str]:
    """`messages` once one of them ends with `ending` (the gang's final count), else empty."""
    return messages if any(m.endswith(ending) for m in messages) else set()


def failed_scheduling(plane: PlaneThread, pod_names: set[str]) -> set[str]:
    events = read(plane, core_path("events", "default"))["items"]
    return {
        e["message"]
        for e in events
        if e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"] in pod_names
    }


def test_a_scheduler_plugins_gang_short_of_min_member_waits_and_says_why(
    plane: PlaneThread, client: kubetrain.Client
) -> None:
    client.create(gang_job("gang-short", "scheduler-plugins-scheduler", min_available=3))
    group = until(
        "the PodGroup",
        lambda: read(plane, group_path(*PLUGINS, "podgroups", "default"))["items"],
    )
    assert [g["metadata"]["name"] for g in group] == ["gang-short"]
    assert group[0]["spec"]["minMember"] == 3
    short = "cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
    # A pass that ran before the second pod existed said "number: 1"; the settled word is "2".
    pods = until("both pods told why", lambda: told_why(client, "gang-short", short))
    messages = scheduling_messages(pods)
    assert all(m.startswith("pre-filter pod gang-short-") and m.endswith(short) for m in messages), messages
    names = {p["metadata"]["name"] for p in pods}
    events = until("the pods' events", lambda: settled(failed_scheduling(plane, names), short))
    assert all(SIBLINGS.fullmatch(m) for m in events), events
    assert all(not p["spec"].get("nodeName") and not p["status"].get("containerStatuses") for p in pods)
    assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in pods} == {"gang-short"}
    client.delete("pytorchjob", "gang-short")


def test_a_volcano_gang_short_of_min_member_waits_with_volcanos_condition(
    plane: PlaneThread, client: kubetrain.Client
) -> None:
    client.create(gang_job("vc-short", "volcano", min_available=3))
    path = group_path(*VOLCANO, "podgroups", "default", "vc-short")
    message = "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"

    # Volcano rewrites the condition each session: one that ran before the second pod existed
    # said "valid: 1"; wait for the settled count.
    def counted_both() -> JsonDict | None:
        group = read(plane, path)
        conditions = group.get("status", {}).get("conditions") or []
        return group if any(c.get("message") == message for c in conditions) else None

    group = until("the Unschedulable condition with both pods counted", counted_both)
    [condition] = group["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "Unschedulable",
        "True",
        "NotEnoughTasks",
        message,
    )
    assert condition["transitionID"], "Volcano stamps the scheduling session's UID"
    assert group["status"]["phase"] == "Inqueue"
    pods = client.pods("pytorchjob", "vc-short")
    names = {p["metadata"]["name"] for p in pods}
    events = until("the pods' events", lambda: settled(failed_scheduling(plane, names), message))
    assert all(NOT_ENOUGH_TASKS.fullmatch(m) for m in events), events
    assert all(not p["spec"].get("nodeName") for p in pods)
    client.delete("pytorchjob", "vc-short")


def test_a_volcano_gang_that_fits_runs_to_success(plane: PlaneThread, client: kubetrain.Client) -> None:
    client.create(gang_job("vc-fits", "volcano", min_available=2))
    job = client.wait("pytorchjob", "vc-fits", timeout=90)
    assert any(c["type"] == "Succeeded" and c["status"] == "True" for c in job["status"]["conditions"])
    pods = client.pods("pytorchjob", "vc-fits")
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {"vc-fits"}
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    client.delete("pytorchjob", "vc-fits")


@pytest.fixture(scope="module")
def declared_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaneThread]:
    """A plane started as `kubetrain up --gang-scheduler-name scheduler-plugins-scheduler`."""
    thread = PlaneThread(
        tmp_path_factory.mktemp("declared-gang"), gang_scheduler_name="scheduler-plugins-scheduler"
    )
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


def test_a_declared_gang_scheduler_gangs_jobs_whose_pods_name_none(
    declared_plane: PlaneThread, tmp_path: Path
) -> None:
    body = gang_job("declared-short", "", min_available=3)
    for spec in body["spec"]["pytorchReplicaSpecs"].values():
        del spec["template"]["spec"]["schedulerName"]
    kubeconfig = declared_plane.plane.write_kubeconfig(tmp_path / "kubeconfig.yaml")
    with kubetrain.Client(str(kubeconfig)) as client:
        client.create(body)
        short = "current pods number: 2, minMember of group: 3"
        pods = until("both pods told why", lambda: told_why(client, "declared-short", short))
        assert {p["spec"]["schedulerName"] for p in pods} == {"scheduler-plugins-scheduler"}
        client.delete("pytorchjob", "declared-short")


def gang_runtime(name: str, policy: JsonDict) -> JsonDict:
    """A namespaced TrainingRuntime of one trainer job whose `node` pods print and exit, gang
    scheduled by `policy` (the runtime's podGroupPolicy, as Trainer v2 has it)."""
    node = {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "node",
                                "image": "python:3.11",
                                "command": ["python", "-c", "print('node ran')"],
                            }
                        ]
                    }
                }
            },
        },
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "podGroupPolicy": policy,
            "template": {"spec": {"replicatedJobs": [node]}},
        },
    }


def gang_trainjob(name: str, runtime: str, nodes: int, cpu: str | None = None) -> JsonDict:
    trainer: JsonDict = {"numNodes": nodes}
    if cpu is not None:
        trainer["resourcesPerNode"] = {"requests": {"cpu": cpu}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": runtime},
            "trainer": trainer,
        },
    }


def node_millicpu(plane: PlaneThread) -> int:
    (node,) = read(plane, core_path("nodes"))["items"]
    cpu = str(node["status"]["allocatable"]["cpu"])
    return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000


def test_a_trainjobs_coscheduling_gang_that_cannot_all_fit_holds_every_pod_and_says_why(
    plane: PlaneThread, client: kubetrain.Client
) -> None:
    """3 nodes of 40% of the machine each: 2 would fit, so without the gang 2 would start and hold
    their CPUs while the third waits; with the runtime's coscheduling policy none is bound, each
    saying so, under the PodGroup upstream's plugin builds (minMember 3, minResources 3 x 40%)."""
    share = node_millicpu(plane) * 2 // 5
    client.create(gang_runtime("gang-cosched", {"coscheduling": {"scheduleTimeoutSeconds": 30}}))
    client.create(gang_trainjob("tj-gang", "gang-cosched", nodes=3, cpu=f"{share}m"))
    group = until("the PodGroup", lambda: read(plane, group_path(*PLUGINS, "podgroups", "default"))["items"])
    assert [(g["metadata"]["name"], g["metadata"]["ownerReferences"][0]["kind"]) for g in group] == [
        ("tj-gang", "TrainJob")
    ]
    spec = group[0]["spec"]
    assert (spec["minMember"], spec["scheduleTimeoutSeconds"]) == (3, 30)
    assert parse_quantity(spec["minResources"]["cpu"]) == parse_quantity(f"{3 * share}m")
    ending = "(gang of 3: 2 of the 3 needed pods fit)"

    def all_told() -> list[JsonDict]:
        pods = client.pods("trainjob", "tj-gang")
        messages = [scheduling_messages([p]) for p in pods]
        return pods if len(pods) == 3 and all(any(m.endswith(ending) for m in ms) for ms in messages) else []

    pods = until("every pod told why", all_told)
    assert all(not p["spec"].get("nodeName") for p in pods)
    assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in pods} == {"tj-gang"}
    client.delete("trainjob", "tj-gang")
    client.delete("trainingruntime", "gang-cosched")


def test_a_trainjobs_volcano_gang_that_fits_runs_to_complete(
    plane: PlaneThread, client: kubetrain.Client
) -> None:
    runtime = gang_runtime("gang-volcano", {"volcano": {}})
    runtime["spec"]["template"]["metadata"] = {
        "annotations": {"scheduling.volcano.sh/queue-name": "research"}
    }
    pod_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]
    pod_spec["schedulerName"] = "volcano"
    client.create(runtime)
    client.create(gang_trainjob("tj-volcano", "gang-volcano", nodes=2))
    job = client.wait("trainjob", "tj-volcano", timeout=90)
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in job["status"]["conditions"])
    group = read(plane, group_path(*VOLCANO, "podgroups", "default", "tj-volcano"))
    assert (group["spec"]["minMember"], group["spec"]["queue"], group["status"]["phase"]) == (
        2,
        "research",
        "Running",
    )
    pods = client.pods("trainjob", "tj-volcano")
    assert len(pods) == 2
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {"tj-volcano"}
    client.delete("trainjob", "tj-volcano")
    client.delete("trainingruntime", "gang-volcano")
