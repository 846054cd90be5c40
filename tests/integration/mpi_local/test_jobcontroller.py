"""The embedded batch/v1 Job controller: pods from the template, completion, back-off, suspend."""

from __future__ import annotations

from typing import Any

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.kube.client import group_path

from .conftest import PY, create, get_job, job_condition, job_pods, wait_for

JsonDict = dict[str, Any]


def job(name: str, code: str, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "python:3.11", "command": [PY, "-c", code]}],
                },
            },
            **spec,
        },
    }


async def test_pods_from_template_and_complete(api: KubeAPI, plane: NodeAgent) -> None:
    created = await create(api, job("ok", "print('done')"))
    uid = created["metadata"]["uid"]
    done = await job_condition(api, "ok", "Complete")
    status = done["status"]
    assert status["succeeded"] == 1 and status["active"] == 0
    assert status["startTime"] and status["completionTime"]
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [  # as Kubernetes 1.31+
        ("SuccessCriteriaMet", "CompletionsReached"),
        ("Complete", "CompletionsReached"),
    ]
    (pod,) = await job_pods(api, "ok")
    labels = pod["metadata"]["labels"]
    assert labels["app"] == "ok" and labels["job-name"] == "ok"
    assert labels["batch.kubernetes.io/controller-uid"] == uid == labels["controller-uid"]
    (ref,) = pod["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("Job", "ok", uid, True)
    assert pod["metadata"]["name"].startswith("ok-")


async def test_failures_back_off_then_fail(api: KubeAPI, plane: NodeAgent) -> None:
    await create(api, job("bad", "raise SystemExit(4)", backoffLimit=1))
    failed = await job_condition(api, "bad", "Failed")
    cond = next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")
    assert (cond["reason"], cond["message"]) == (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )
    assert [c["type"] for c in failed["status"]["conditions"]] == ["FailureTarget", "Failed"]
    assert failed["status"]["failed"] == 2 and failed["status"]["active"] == 0
    pods = await job_pods(api, "bad")
    assert len(pods) == 2
    assert all(p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 4 for p in pods)


async def test_on_failure_restarts_count_against_the_limit(api: KubeAPI, plane: NodeAgent) -> None:
    body = job("restarts", "raise SystemExit(2)", backoffLimit=2)
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    await create(api, body)
    failed = await job_condition(api, "restarts", "Failed")
    assert next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")["reason"] == (
        "BackoffLimitExceeded"
    )


async def test_suspend_and_resume(api: KubeAPI, plane: NodeAgent) -> None:
    await create(api, job("later", "print('ran')", suspend=True))
    suspended = await job_condition(api, "later", "Suspended")
    assert suspended["status"].get("active", 0) == 0
    assert await job_pods(api, "later") == []
    await api.merge_patch(group_path("batch", "v1", "jobs", "default", "later"), {"spec": {"suspend": False}})
    done = await job_condition(api, "later", "Complete")
    cond = next(c for c in done["status"]["conditions"] if c["type"] == "Suspended")
    assert (cond["status"], cond["reason"]) == ("False", "JobResumed")


async def test_active_deadline_and_ttl(api: KubeAPI, plane: NodeAgent) -> None:
    await create(
        api, job("slow", "import time; time.sleep(60)", activeDeadlineSeconds=1, ttlSecondsAfterFinished=1)
    )
    failed = await job_condition(api, "slow", "Failed", timeout=20)
    assert (
        next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")["reason"]
        == "DeadlineExceeded"
    )

    async def gone() -> bool:
        return await get_job(api, "slow") is None

    await wait_for(gone, 20, "the finished Job to be deleted by its TTL")
