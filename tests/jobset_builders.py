"""The JobSet builder the JobSet tests share (unit and integration), in jobset's ``wrappers.go`` style:

    jobset("js").replicated_job("leader", 1).replicated_job("workers", 2, parallelism=2).build()

A raw JobSet as a user writes it (not defaulted). `child_job` gives a Job as the controller
creates it, with a status, for the pure tests that play the Job controller.
"""

from __future__ import annotations

import copy
import sys
from typing import Any, Self

from kubetrain.embedded.jobset.construct import construct_job
from kubetrain.embedded.jobset.defaults import defaulted

JsonDict = dict[str, Any]
PY = sys.executable


class JobSetBuilder:
    def __init__(self, name: str, namespace: str = "default", uid: str | None = None) -> None:
        metadata: JsonDict = {"name": name, "namespace": namespace}
        if uid is not None:
            metadata["uid"] = uid
        self.obj: JsonDict = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": metadata,
            "spec": {"replicatedJobs": []},
        }

    @property
    def spec(self) -> JsonDict:
        spec: JsonDict = self.obj["spec"]
        return spec

    def replicated_job(
        self,
        name: str,
        replicas: int = 1,
        *,
        parallelism: int = 1,
        completions: int | None = None,
        command: list[str] | None = None,
        restart_policy: str | None = None,
        backoff_limit: int | None = None,
        env: list[JsonDict] | None = None,
        labels: dict[str, str] | None = None,
    ) -> Self:
        container: JsonDict = {
            "name": "main",
            "image": "python:3.11",
            "command": command or [PY, "-c", "pass"],
        }
        if env:
            container["env"] = env
        pod_spec: JsonDict = {"containers": [container]}
        if restart_policy:
            pod_spec["restartPolicy"] = restart_policy
        job_spec: JsonDict = {
            "parallelism": parallelism,
            "completions": parallelism if completions is None else completions,
            "template": {"spec": pod_spec},
        }
        if labels:
            job_spec["template"]["metadata"] = {"labels": dict(labels)}
        if backoff_limit is not None:
            job_spec["backoffLimit"] = backoff_limit
        self.spec["replicatedJobs"].append(
            {"name": name, "replicas": replicas, "template": {"spec": job_spec}}
        )
        return self

    def depends_on(self, name: str, status: str) -> Self:
        self.spec["replicatedJobs"][-1].setdefault("dependsOn", []).append({"name": name, "status": status})
        return self

    def success_policy(self, operator: str, targets: list[str] | None = None) -> Self:
        self.spec["successPolicy"] = {
            "operator": operator,
            **({"targetReplicatedJobs": targets} if targets else {}),
        }
        return self

    def failure_policy(
        self, max_restarts: int, rules: list[JsonDict] | None = None, strategy: str = ""
    ) -> Self:
        policy: JsonDict = {"maxRestarts": max_restarts}
        if rules:
            policy["rules"] = rules
        if strategy:
            policy["restartStrategy"] = strategy
        self.spec["failurePolicy"] = policy
        return self

    def startup_policy(self, order: str) -> Self:
        self.spec["startupPolicy"] = {"startupPolicyOrder": order}
        return self

    def suspend(self, value: bool = True) -> Self:
        self.spec["suspend"] = value
        return self

    def ttl(self, seconds: int) -> Self:
        self.spec["ttlSecondsAfterFinished"] = seconds
        return self

    def network(self, *, enable_dns: bool | None = None, subdomain: str | None = None) -> Self:
        network = self.spec.setdefault("network", {})
        if enable_dns is not None:
            network["enableDNSHostnames"] = enable_dns
        if subdomain is not None:
            network["subdomain"] = subdomain
        return self

    def managed_by(self, name: str) -> Self:
        self.spec["managedBy"] = name
        return self

    def status(self, **fields: Any) -> Self:
        self.obj.setdefault("status", {}).update(fields)
        return self

    def build(self) -> JsonDict:
        return copy.deepcopy(self.obj)


def jobset(name: str = "js", namespace: str = "default", uid: str | None = "js-uid") -> JobSetBuilder:
    return JobSetBuilder(name, namespace, uid)


def child_job(
    js: JsonDict,
    rjob_name: str,
    index: int,
    *,
    finished: str = "",
    ready: int | None = None,
    active: int | None = None,
    at: str = "2026-01-01T00:00:00Z",
    reason: str = "BackoffLimitExceeded",
    message: str = "Job has reached the specified backoff limit",
) -> JsonDict:
    """The Job the controller creates for that replica of `js`, with a Job controller's status:
    ``finished`` is "", "Complete" or "Failed"; `ready`/`active` default to all pods when running."""
    full = defaulted(js)
    rjob = next(r for r in full["spec"]["replicatedJobs"] if r["name"] == rjob_name)
    job = construct_job(full, rjob, index)
    job["metadata"]["uid"] = f"{job['metadata']['name']}-uid"
    pods = int(job["spec"].get("parallelism") or 1)
    status: JsonDict = {}
    if finished:
        cond: JsonDict = {"type": finished, "status": "True", "lastTransitionTime": at}
        if finished == "Failed":
            cond.update(reason=reason, message=message)
        status["conditions"] = [cond]
        if finished == "Complete":
            status["succeeded"] = pods
    else:
        status["ready"] = pods if ready is None else ready
        status["active"] = pods if active is None else active
    job["status"] = status
    return job
