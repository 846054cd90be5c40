"""The pod group plugins through the TrainJob planner (upstream v2.3.0 `plugins/coscheduling` and
`plugins/volcano`): the PodGroup built beside the JobSet, the label or annotation on its pods, and
when the PodGroup is (not) rewritten."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed, PatchObject, Plan
from kubetrain.kinds import registry
from tests.unit.kinds.trainjob.test_trainjob_plan import (
    CTR_KEY,
    JOBSET_KEY,
    NOW,
    OWNER,
    stored,
    torch_distributed,
    trainjob,
)

JsonDict = dict[str, Any]
COSCHEDULING = "scheduling.x-k8s.io/v1alpha1"
VOLCANO = "scheduling.volcano.sh/v1beta1"
COSCHEDULING_KEY = f"{COSCHEDULING}/PodGroup"
VOLCANO_KEY = f"{VOLCANO}/PodGroup"
REQUESTS = {"requests": {"cpu": "500m", "memory": "1Gi"}}


def runtime_with(policy: JsonDict) -> JsonDict:
    runtime = torch_distributed()
    runtime["spec"]["podGroupPolicy"] = policy
    return runtime


def plan(job: JsonDict, runtime: JsonDict, **others: list[JsonDict]) -> Plan:
    observed = {CTR_KEY: [runtime], COSCHEDULING_KEY: [], VOLCANO_KEY: [], JOBSET_KEY: []}
    for key, objs in others.items():
        observed[{"coscheduling": COSCHEDULING_KEY, "volcano": VOLCANO_KEY, "jobset": JOBSET_KEY}[key]] = objs
    return registry.plan(job, Observed(others=observed), NOW, ControllerConfig())


def created(p: Plan, kind: str) -> list[JsonDict]:
    return [a.obj for a in p.actions if isinstance(a, CreateObject) and a.obj["kind"] == kind]


def pod_templates(jobset: JsonDict) -> list[JsonDict]:
    return [r["template"]["spec"]["template"] for r in jobset["spec"]["replicatedJobs"]]


def test_coscheduling_builds_upstreams_pod_group_and_labels_every_pod() -> None:
    runtime = runtime_with({"coscheduling": {"scheduleTimeoutSeconds": 100}})
    p = plan(trainjob(trainer={"numNodes": 3, "resourcesPerNode": REQUESTS}), runtime)
    (group,) = created(p, "PodGroup")
    assert group == {
        "apiVersion": COSCHEDULING,
        "kind": "PodGroup",
        "metadata": {"name": "tj", "namespace": "ns", "ownerReferences": [OWNER]},
        "spec": {
            "minMember": 3,
            "minResources": {"cpu": "1500m", "memory": "3Gi"},
            "scheduleTimeoutSeconds": 100,
        },
    }
    (jobset,) = created(p, "JobSet")
    for template in pod_templates(jobset):
        assert template["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "tj"}
    assert [a.obj["kind"] for a in p.actions] == ["PodGroup", "JobSet"]


def test_coscheduling_without_a_timeout_gets_the_crds_default_and_no_requests_give_empty_resources() -> None:
    (group,) = created(
        plan(trainjob(trainer={"numNodes": 2}), runtime_with({"coscheduling": {}})), "PodGroup"
    )
    assert group["spec"] == {"minMember": 2, "minResources": {}, "scheduleTimeoutSeconds": 60}


def test_every_pod_set_counts_at_least_one_pod_and_its_own_requests() -> None:
    """Initializers are one pod each; a launcher template's requests count once, the nodes' per
    node; a sidecar init container adds to its pod, a plain one is only a floor."""
    runtime = runtime_with({"coscheduling": {"scheduleTimeoutSeconds": 5}})
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    node = rjobs[0]
    initializer = copy.deepcopy(node)
    initializer["name"] = "dataset-initializer"
    initializer["template"]["metadata"]["labels"] = {
        "trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"
    }
    pod = initializer["template"]["spec"]["template"]["spec"]
    pod["containers"] = [
        {"name": "dataset-initializer", "image": "i", "resources": {"requests": {"cpu": "1"}}}
    ]
    pod["initContainers"] = [
        {
            "name": "sidecar",
            "image": "i",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "250m"}},
        },
        {"name": "big", "image": "i", "resources": {"requests": {"cpu": "3", "memory": "64Mi"}}},
    ]
    initializer["template"]["spec"].pop("parallelism", None)
    rjobs.insert(0, initializer)
    p = plan(trainjob(trainer={"numNodes": 2, "resourcesPerNode": REQUESTS}), runtime)
    (group,) = created(p, "PodGroup")
    # initializer: max(1 + 250m sidecar, 3 + 250m) = 3250m, 64Mi; nodes: 2 x (500m, 1Gi)
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "4250m", "memory": "2112Mi"}


def test_volcano_builds_its_pod_group_with_queue_priority_and_topology() -> None:
    runtime = runtime_with({"volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}})
    runtime["spec"]["template"]["metadata"] = {
        "annotations": {"scheduling.volcano.sh/queue-name": "q-runtime"}
    }
    node_pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]
    node_pod["priorityClassName"] = "high"
    patch = {
        "manager": "me",
        "trainingRuntimeSpec": {
            "template": {"metadata": {"annotations": {"scheduling.volcano.sh/queue-name": "q-job"}}}
        },
    }
    p = plan(trainjob(trainer={"numNodes": 2}, runtimePatches=[patch]), runtime)
    (group,) = created(p, "PodGroup")
    assert group["apiVersion"] == VOLCANO
    assert group["spec"] == {
        "minMember": 2,
        "minResources": {},
        "queue": "q-job",
        "priorityClassName": "high",
        "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
    }
    (jobset,) = created(p, "JobSet")
    for template in pod_templates(jobset):
        assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tj"
        assert "scheduling.x-k8s.io/pod-group" not in template["metadata"].get("labels", {})


def test_volcano_without_queue_or_priority_leaves_them_to_volcano() -> None:
    (group,) = created(plan(trainjob(), runtime_with({"volcano": {}})), "PodGroup")
    assert set(group["spec"]) == {"minMember", "minResources"}


def test_a_policy_with_both_runs_both_plugins_as_upstream() -> None:
    p = plan(trainjob(), runtime_with({"coscheduling": {}, "volcano": {}}))
    assert sorted(g["apiVersion"] for g in created(p, "PodGroup")) == [VOLCANO, COSCHEDULING]


def test_a_pod_group_kind_the_server_does_not_serve_builds_nothing_and_says_why() -> None:
    runtime = runtime_with({"coscheduling": {}})
    observed = Observed(others={CTR_KEY: [runtime], JOBSET_KEY: []})
    p = registry.plan(trainjob(), observed, NOW, ControllerConfig())
    assert p.actions == []
    assert p.retry
    (event,) = p.events
    assert (event.type, event.reason) == ("Warning", "TrainJobResourcesCreationFailed")
    assert event.message.startswith(
        "TrainJob resources reconciliation failed: "
        'no matches for kind "PodGroup" in version "scheduling.x-k8s.io/v1alpha1"'
    )


def stored_group(p: Plan) -> JsonDict:
    (group,) = created(p, "PodGroup")
    return stored(group, phase="Running")


def test_a_running_gang_is_never_resized_but_a_suspended_one_is() -> None:
    runtime = runtime_with({"coscheduling": {"scheduleTimeoutSeconds": 30}})
    job = trainjob(trainer={"numNodes": 2})
    group = stored_group(plan(job, runtime))
    grown = trainjob(trainer={"numNodes": 4, "resourcesPerNode": {"requests": {"cpu": "1"}}})
    jobset = stored(created(plan(grown, runtime), "JobSet")[0])
    running = plan(grown, runtime, coscheduling=[group], jobset=[jobset])
    assert not [a for a in running.actions if isinstance(a, PatchObject) and a.ref.kind == "PodGroup"]
    grown["spec"]["suspend"] = True
    suspended = plan(grown, runtime, coscheduling=[group], jobset=[jobset])
    (patch,) = [a for a in suspended.actions if isinstance(a, PatchObject) and a.ref.kind == "PodGroup"]
    assert patch.patch == {"spec": {"minMember": 4, "minResources": {"cpu": "4"}}}


def test_a_suspended_volcano_group_drops_what_the_runtime_no_longer_sets_but_keeps_volcanos_queue() -> None:
    runtime = runtime_with({"volcano": {}})
    group = stored_group(plan(trainjob(), runtime))
    group["spec"].update(queue="default", priorityClassName="old", minResources={"cpu": "2"})
    job = trainjob(suspend=True)
    (patch,) = [a for a in plan(job, runtime, volcano=[group]).actions if isinstance(a, PatchObject)]
    assert patch.patch == {"spec": {"minResources": {"cpu": None}, "priorityClassName": None}}


def test_a_same_named_pod_group_it_does_not_control_blocks_the_jobset() -> None:
    runtime = runtime_with({"coscheduling": {}})
    theirs = stored_group(plan(trainjob(), runtime))
    theirs["metadata"]["ownerReferences"] = []
    p = plan(trainjob(), runtime, coscheduling=[theirs])
    assert p.actions == []
    assert p.retry
    assert p.events[0].reason == "ErrResourceExists"
    assert p.events[0].message == 'PodGroup "tj" already exists and is not controlled by TrainJob "tj"'


def test_the_webhook_refuses_an_empty_volcano_queue_as_upstream() -> None:
    from kubetrain.kinds.trainjob.validation import runtime_rules

    runtime = runtime_with({"volcano": {}})
    assert runtime_rules(trainjob(), runtime) == []
    runtime["spec"]["template"]["metadata"] = {"annotations": {"scheduling.volcano.sh/queue-name": ""}}
    assert [str(e) for e in runtime_rules(trainjob(), runtime)] == [
        'spec.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "": '
        "Volcano queue name must not be empty"
    ]
