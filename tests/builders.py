"""The job builder every test tier shares: a raw job dict as a user writes it (not defaulted).

    job("PyTorchJob", "a").replicas("Master", 1).replicas("Worker", 2).clean_pod_policy("All").build()

The planner's unit tests hand the dict to `plan()` (with a fixed uid, as if the API server had
stored it); the integration tiers post it to an API server, which assigns the uid. One builder
for both, so that a scenario reads the same in every tier.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from kubetrain.api.kinds import API_VERSION
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS

JsonDict = dict[str, Any]


class JobBuilder:
    """A job of `kind`: replica specs, runPolicy fields, other spec fields, metadata, status."""

    def __init__(
        self, kind: str, name: str = "test-job", namespace: str = "default", uid: str | None = None
    ) -> None:
        self.info = KINDS[kind]
        metadata: JsonDict = {"name": name, "namespace": namespace}
        if uid is not None:
            metadata["uid"] = uid
        self.obj: JsonDict = {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": metadata,
            "spec": {self.info.replica_specs_field: {}},
        }

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid", ""))

    def replicas(
        self,
        rtype: str,
        count: int | None = 1,
        *,
        restart_policy: str | None = None,
        container: str | None = None,
        image: str | None = "busybox:1",
        ports: list[JsonDict] | None = None,
        resources: JsonDict | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        pod_spec: JsonDict | None = None,
    ) -> Self:
        """One replica type with a single container (the kind's default one unless named);
        `count=None` and `image=None` leave those fields out, as a careless user would."""
        main: JsonDict = {"name": container or self.info.default_container}
        if image is not None:
            main["image"] = image
        if ports is not None:
            main["ports"] = ports
        if resources is not None:
            main["resources"] = resources
        template: JsonDict = {"spec": {"containers": [main], **(pod_spec or {})}}
        if labels or annotations:
            template["metadata"] = {}
            if labels:
                template["metadata"]["labels"] = dict(labels)
            if annotations:
                template["metadata"]["annotations"] = dict(annotations)
        spec: JsonDict = {"template": template}
        if count is not None:
            spec["replicas"] = count
        if restart_policy is not None:
            spec["restartPolicy"] = restart_policy
        self.obj["spec"][self.info.replica_specs_field][rtype] = spec
        return self

    # -- runPolicy ------------------------------------------------------------------------------

    def run_policy(self, **fields: Any) -> Self:
        self.obj["spec"].setdefault("runPolicy", {}).update(fields)
        return self

    def clean_pod_policy(self, policy: str) -> Self:
        return self.run_policy(cleanPodPolicy=policy)

    def backoff_limit(self, limit: int) -> Self:
        return self.run_policy(backoffLimit=limit)

    def active_deadline(self, seconds: int) -> Self:
        return self.run_policy(activeDeadlineSeconds=seconds)

    def ttl(self, seconds: int) -> Self:
        return self.run_policy(ttlSecondsAfterFinished=seconds)

    def suspend(self, value: bool = True) -> Self:
        return self.run_policy(suspend=value)

    def managed_by(self, value: str) -> Self:
        return self.run_policy(managedBy=value)

    def scheduling(self, **fields: Any) -> Self:
        return self.run_policy(schedulingPolicy=fields)

    # -- the rest -------------------------------------------------------------------------------

    def spec(self, **fields: Any) -> Self:
        self.obj["spec"].update(fields)
        return self

    def annotations(self, **values: str) -> Self:
        self.obj["metadata"]["annotations"] = dict(values)
        return self

    def status(self, status: JsonDict) -> Self:
        self.obj["status"] = copy.deepcopy(status)
        return self

    def build(self) -> JsonDict:
        return copy.deepcopy(self.obj)


def job(kind: str, name: str = "test-job", namespace: str = "default", uid: str | None = None) -> JobBuilder:
    return JobBuilder(kind, name, namespace, uid)


def pod_name(job_name: str, rtype: str, index: int) -> str:
    """`<job>-<rt>-<i>`: the name the operator gives a replica's pod and Service."""
    return f"{job_name}-{rtype.lower()}-{index}"
