"""The defaults upstream's mutating webhook gives a JobSet, applied by the controller on read.

Upstream sets them at admission (``pkg/webhooks/jobset_webhook.go``, ``Default``); the embedded
plane has no mutating webhooks, so the controller reconciles the defaulted copy instead. The
Jobs it creates are therefore the same as on a cluster (Indexed, ``OnFailure`` pods, a subdomain);
only the stored JobSet does not show the defaults. The CRD's own schema defaults (``replicas: 1``,
``groupName: default``, ``restartStrategy: Recreate``) are applied by the API server as usual and
repeated here, so a server that prunes no defaults yields the same Jobs.
"""

from __future__ import annotations

import copy
from typing import Any

from . import constants as c

JsonDict = dict[str, Any]

DEFAULT_RULE_NAME_FMT = "failurePolicyRule{}"


def defaulted(jobset: JsonDict) -> JsonDict:
    """A deep copy of `jobset` with the webhook's and the CRD schema's defaults filled in."""
    js = copy.deepcopy(jobset)
    spec = js.setdefault("spec", {})
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = {"operator": c.OPERATOR_ALL}
    if spec.get("startupPolicy") is None:
        spec["startupPolicy"] = {"startupPolicyOrder": c.ANY_ORDER}
    for rjob in spec.get("replicatedJobs") or []:
        rjob.setdefault("groupName", "default")
        if rjob.get("replicas") is None:
            rjob["replicas"] = 1
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        if not job_spec.get("completionMode"):
            job_spec["completionMode"] = "Indexed"
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        if not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = "OnFailure"
    network = spec.get("network")
    if network is None:
        network = spec["network"] = {}
    if network.get("enableDNSHostnames") is None:
        network["enableDNSHostnames"] = True
    if network.get("publishNotReadyAddresses") is None:
        network["publishNotReadyAddresses"] = True
    policy = spec.get("failurePolicy")
    if policy is not None:
        policy.setdefault("restartStrategy", c.RECREATE)
        for i, rule in enumerate(policy.get("rules") or []):
            if not rule.get("name"):
                rule["name"] = DEFAULT_RULE_NAME_FMT.format(i)
    return js
