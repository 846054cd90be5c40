"""ChainerJob and Caffe2Job plans (docs/upstream-behaviour.md#chainerjob, #caffe2job): their
expansion, env, labels and status rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from kubetrain.api.codec import encode
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed, PatchObject, Plan
from kubetrain.kinds.registry import plan, registration_for, watched_children

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
UID = "hist-uid"


def chainer(workers: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "cj", "namespace": "default", "uid": UID, "labels": {"team": "a"}},
        "spec": {
            "master": {
                "backoffLimit": 3,
                "template": {"spec": {"containers": [{"image": "chainer:1"}]}},
            },
            "workerSets": {
                "ws0": {
                    "replicas": workers,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "chainer",
                                    "image": "chainer:1",
                                    "resources": {"limits": {"nvidia.com/gpu": 2}},
                                }
                            ]
                        }
                    },
                }
            },
        },
    }


def caffe2(replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "Caffe2Job",
        "metadata": {
            "name": "c2",
            "namespace": "ns",
            "uid": UID,
            "creationTimestamp": "2026-01-02T03:04:05Z",
        },
        "spec": {
            "backendSpecs": {"redisHost": "redis", "redisPort": 6379},
            "replicaSpecs": {
                "replicas": replicas,
                "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
            },
        },
    }


def created(result: Plan) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (a.obj["kind"], a.obj["metadata"]["name"]): a.obj
        for a in result.actions
        if isinstance(a, CreateObject)
    }


def owned(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    out = dict(obj)
    out["metadata"] = {**obj["metadata"], "uid": f"{kind}-uid"}
    return out


def test_chainer_expansion() -> None:
    result = plan(chainer(), Observed(), T0, ControllerConfig())
    objs = created(result)
    assert sorted(objs) == [
        ("ConfigMap", "cj-assets"),
        ("Job", "cj-master"),
        ("Role", "cj-launcher-role"),
        ("RoleBinding", "cj-launcher-rolebinding"),
        ("ServiceAccount", "cj-launcher"),
        ("StatefulSet", "cj-workerset-ws0"),
    ]
    owner = objs[("Job", "cj-master")]["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["kind"], owner["uid"]) == ("kubeflow.org/v1alpha1", "ChainerJob", UID)
    assert objs[("ConfigMap", "cj-assets")]["data"]["statefulsets_and_slots"] == "cj-workerset-ws0 slots=2\n"
    assert set(objs[("ConfigMap", "cj-assets")]["data"]) == {
        "download_kubectl.sh",
        "kubexeb.sh",
        "gen_hostfile.sh",
        "statefulsets_and_slots",
    }
    role = objs[("Role", "cj-launcher-role")]
    assert role["rules"][2] == {
        "apiGroups": [""],
        "verbs": ["create"],
        "resources": ["pods/exec"],
        "resourceNames": ["cj-workerset-ws0-0", "cj-workerset-ws0-1"],
    }
    master = objs[("Job", "cj-master")]
    assert master["metadata"]["labels"] == {
        "team": "a",
        "chainerjob.kubeflow.org/name": "cj",
        "chainerjob.kubeflow.org/role": "master",
    }
    assert (master["spec"]["completions"], master["spec"]["parallelism"], master["spec"]["backoffLimit"]) == (
        1,
        1,
        3,
    )
    pod = master["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "cj-launcher" and pod["restartPolicy"] == "Never"
    assert pod["containers"][0]["name"] == "chainer"  # defaulted
    assert [c["name"] for c in pod["initContainers"]] == [
        "chainer-operator-kubectl-downloader",
        "chainer-operator-hostfile-generator",
    ]
    assert pod["initContainers"][1]["args"][2] == "slots=1"
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env == {
        "KUBECTL_DIR": "/kubeflow/chainer-operator/kube",
        "OMPI_MCA_plm_rsh_agent": "/kubeflow/chainer-operator/assets/kubexeb.sh",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "t",
        "OMPI_MCA_orte_default_hostfile": "/kubeflow/chainer-operator/generated/hostfile",
        "OMPI_MCA_btl_tcp_if_exclude": "lo,docker0",
    }
    ss = objs[("StatefulSet", "cj-workerset-ws0")]
    assert ss["spec"]["podManagementPolicy"] == "Parallel" and ss["spec"]["replicas"] == 2
    assert ss["spec"]["serviceName"] == "cj-workerset-ws0"
    assert ss["spec"]["selector"]["matchLabels"] == {
        "chainerjob.kubeflow.org/name": "cj",
        "chainerjob.kubeflow.org/role": "workerset",
        "chainerjob.kubeflow.org/workersetname": "ws0",
    }


def test_chainer_status_copies_the_master_and_workers_scale_down() -> None:
    first = created(plan(chainer(), Observed(), T0, ControllerConfig()))
    children: dict[str, list[dict[str, Any]]] = {}
    for (kind, _), obj in first.items():
        children.setdefault(f"{obj['apiVersion']}/{kind}", []).append(owned(obj, kind))
    master = children["batch/v1/Job"][0]
    master["status"] = {
        "conditions": [{"type": "Complete", "status": "True"}],
        "succeeded": 1,
        "startTime": "2026-01-02T03:04:05Z",
    }
    result = plan(chainer(), Observed(others=children), T0, ControllerConfig())
    assert result.status == {
        "conditions": [{"type": "Complete", "status": "True"}],
        "succeeded": 1,
        "startTime": "2026-01-02T03:04:05Z",
    }
    (scale,) = [a for a in result.actions if isinstance(a, PatchObject)]
    assert (scale.ref.kind, scale.patch) == ("StatefulSet", {"spec": {"replicas": 0}})


def test_chainer_non_distributed_has_only_the_master() -> None:
    job = chainer()
    del job["spec"]["workerSets"]
    objs = created(plan(job, Observed(), T0, ControllerConfig()))
    assert ("StatefulSet", "cj-workerset-ws0") not in objs and ("ConfigMap", "cj-assets") not in objs
    assert "initContainers" not in objs[("Job", "cj-master")]["spec"]["template"]["spec"]


def test_caffe2_pods_env_and_status() -> None:
    result = plan(caffe2(), Observed(), T0, ControllerConfig())
    pods = created(result)
    assert sorted(pods) == [("Pod", "c2-worker-0"), ("Pod", "c2-worker-1")]
    pod = pods[("Pod", "c2-worker-1")]
    assert pod["metadata"]["labels"] == {
        "group_name": "kubeflow.org",
        "caffe2_job_key": "ns-c2",
        "runtime_id": "1767323045",
        "caffe2_replica_type": "worker",
        "caffe2_replica_index": "1",
        "training.kubeflow.org/operator-name": "caffe2-operator",
        "training.kubeflow.org/job-name": "c2",
    }
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["SHARD_ID"] == "1" and env["NUM_SHARDS"] == "2" and env["REDIS_PORT"] == "6379"
    assert json.loads(env["CAFFE2_CONFIG"]) == {
        "cluster": {"worker": ["ns-c2-worker-0:2222", "ns-c2-worker-1:2222"]},
        "task": {"type": "worker", "index": 1},
    }
    assert pod["spec"]["restartPolicy"] == "Never"
    assert result.status is not None and result.status["conditions"][0]["reason"] == "Caffe2JobCreated"
    observed = [dict(p, status={"phase": "Running"}) for p in pods.values()]
    job = caffe2()
    job["status"] = result.status
    running = plan(job, Observed(pods=observed), T0, ControllerConfig())
    assert running.actions == []
    assert running.status is not None and running.status["replicaStatuses"] == {"active": 2}
    assert running.status["conditions"][-1]["reason"] == "Caffe2JobRunning"
    job["status"] = running.status
    done = [dict(p, status={"phase": "Succeeded"}) for p in pods.values()]
    finished = plan(job, Observed(pods=done), T0, ControllerConfig())
    assert finished.status is not None and finished.status["conditions"][-1]["reason"] == "Caffe2JobSucceeded"
    assert finished.status["completionTime"] == "2026-01-02T03:04:05Z"


def test_historical_kinds_round_trip_and_validate() -> None:
    for raw in (chainer(), caffe2()):
        reg = registration_for(raw["kind"])
        assert reg is not None
        job, info, errors = reg.parse(raw)
        assert job is not None and info is not None and not errors and encode(job) == raw
    bad = caffe2()
    del bad["spec"]["replicaSpecs"]
    (event,) = plan(bad, Observed(), T0, ControllerConfig()).events
    assert event.message == "Found validation errors: spec.replicaSpecs: Required value"


def test_watched_children_for_extra_kinds() -> None:
    base = watched_children(ControllerConfig())
    assert [c.kind for c in base] == ["HorizontalPodAutoscaler"]
    extra = {c.key for c in watched_children(ControllerConfig(), ["MPIJob", "ChainerJob"])}
    assert {
        "v1/ConfigMap",
        "v1/Secret",
        "batch/v1/Job",
        "apps/v1/StatefulSet",
        "rbac.authorization.k8s.io/v1/Role",
    } <= extra
