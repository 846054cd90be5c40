"""Jobs and the headless Service built from a JobSet: upstream's names, labels and defaults."""

from __future__ import annotations

import hashlib

from kubetrain.embedded.jobset.construct import construct_job, headless_service
from kubetrain.embedded.jobset.defaults import defaulted
from kubetrain.embedded.jobset.naming import pod_hostname
from tests.jobset_builders import jobset

JOBSET_KEYS = {
    "jobset.sigs.k8s.io/jobset-name": "js",
    "jobset.sigs.k8s.io/jobset-uid": "js-uid",
    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
    "jobset.sigs.k8s.io/restart-attempt": "0",
    "jobset.sigs.k8s.io/replicatedjob-replicas": "2",
    "jobset.sigs.k8s.io/global-replicas": "3",
    "jobset.sigs.k8s.io/job-index": "1",
    "jobset.sigs.k8s.io/job-key": hashlib.sha1(b"default/js-workers-1").hexdigest(),
    "jobset.sigs.k8s.io/job-global-index": "2",
    "jobset.sigs.k8s.io/group-name": "default",
    "jobset.sigs.k8s.io/group-replicas": "3",
    "jobset.sigs.k8s.io/job-group-index": "2",
}


def _two_rjobs() -> dict:
    js = jobset().replicated_job("leader", 1).replicated_job("workers", 2, parallelism=2, labels={"app": "x"})
    return defaulted(js.build())


def test_job_name_labels_annotations_and_owner() -> None:
    js = _two_rjobs()
    job = construct_job(js, js["spec"]["replicatedJobs"][1], 1)
    meta = job["metadata"]
    assert meta["name"] == "js-workers-1" and meta["namespace"] == "default"
    assert meta["labels"] == JOBSET_KEYS and meta["annotations"] == JOBSET_KEYS
    pod_meta = job["spec"]["template"]["metadata"]
    assert pod_meta["labels"] == {"app": "x", **JOBSET_KEYS} and pod_meta["annotations"] == JOBSET_KEYS
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "js",
            "uid": "js-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_webhook_defaults_reach_the_job() -> None:
    js = _two_rjobs()
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["suspend"] is False
    assert spec["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert spec["template"]["spec"]["subdomain"] == "js"
    assert js["spec"]["successPolicy"] == {"operator": "All"}
    assert js["spec"]["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert js["spec"]["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}


def test_defaults_keep_what_the_user_set() -> None:
    raw = jobset().replicated_job("w", 1, restart_policy="Never").network(subdomain="net").build()
    raw["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] = "NonIndexed"
    raw["spec"]["failurePolicy"] = {"maxRestarts": 2, "rules": [{"action": "FailJobSet"}, {"name": "mine"}]}
    js = defaulted(raw)
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    assert job["spec"]["completionMode"] == "NonIndexed"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["template"]["spec"]["subdomain"] == "net"
    assert [r["name"] for r in js["spec"]["failurePolicy"]["rules"]] == ["failurePolicyRule0", "mine"]
    assert "network" in raw["spec"] and "enableDNSHostnames" not in raw["spec"]["network"]  # a copy


def test_dns_hostnames_disabled_sets_no_subdomain() -> None:
    js = defaulted(jobset().replicated_job("w").network(enable_dns=False).build())
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    assert "subdomain" not in job["spec"]["template"]["spec"]


def test_suspended_jobset_creates_suspended_jobs_and_restart_label_follows_status() -> None:
    js = defaulted(jobset().replicated_job("w").suspend().status(restarts=3).build())
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    assert job["spec"]["suspend"] is True
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "3"


def test_coordinator_label() -> None:
    raw = jobset().replicated_job("leader").replicated_job("workers", 2).build()
    raw["spec"]["coordinator"] = {"replicatedJob": "leader", "jobIndex": 0, "podIndex": 0}
    js = defaulted(raw)
    job = construct_job(js, js["spec"]["replicatedJobs"][1], 0)
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/coordinator"] == "js-leader-0-0.js"


def test_headless_service() -> None:
    js = defaulted(jobset().replicated_job("w").network(subdomain="net").build())
    svc = headless_service(js)
    assert svc["metadata"]["name"] == "net"
    assert svc["spec"] == {
        "clusterIP": "None",
        "selector": {"jobset.sigs.k8s.io/jobset-name": "js"},
        "publishNotReadyAddresses": True,
    }
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "JobSet"


def test_pod_hostname() -> None:
    assert pod_hostname("js", "workers", 1, 0) == "js-workers-1-0"
