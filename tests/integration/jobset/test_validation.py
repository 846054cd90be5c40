"""Upstream's JobSet validating webhook: invalid JobSets are refused with its messages, on both planes
(the expected texts are what upstream's webhook answers on a real control plane)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.embedded.jobset.controller import jobsets_path
from kubetrain.embedded.node import KubeAPI
from kubetrain.kube.errors import ApiError
from tests.jobset_builders import jobset

from .conftest import create_jobset

JsonDict = dict[str, Any]
DENIED = 'admission webhook "vjobset.kb.io" denied the request: '
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123 = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LONG_JOB = "a" * 50 + "-workers-long-name-11"


def _cases() -> list[tuple[str, JsonDict, str]]:
    coord = jobset("coord", uid=None).replicated_job("a", 2).build()
    coord["spec"]["coordinator"] = {"replicatedJob": "a", "jobIndex": 1, "podIndex": 3}
    group = jobset("group", uid=None).replicated_job("a").build()
    group["spec"]["replicatedJobs"][0]["groupName"] = "Bad_Group"
    rules = [
        {
            "name": "1bad",
            "action": "FailJobSet",
            "targetReplicatedJobs": ["nope"],
            "onJobFailureReasons": ["Weird"],
        },
        {"name": "dup", "action": "FailJobSet"},
        {"name": "dup", "action": "FailJobSet"},
    ]
    return [
        (
            "depends-on-first",
            jobset("dep-first", uid=None).replicated_job("a").depends_on("x", "Ready").build(),
            "DependsOn can't be set for the first ReplicatedJob\n"
            "replicatedJob: a cannot depend on replicatedJob: x",
        ),
        (
            "names-too-long",
            jobset("a" * 50, uid=None).replicated_job("workers-long-name", 12).build(),
            f'spec.replicatedJobs[0].name: Invalid value: "{LONG_JOB}": JobSet name is too long, job names '
            "generated for this JobSet will exceed 63 characters\n"
            f'spec.replicatedJobs[0].name: Invalid value: "{LONG_JOB}": JobSet name is too long, pod names '
            "generated for this JobSet will exceed 63 characters",
        ),
        (
            "success-target",
            jobset("success", uid=None).replicated_job("a").success_policy("All", ["zz"]).build(),
            "invalid replicatedJob name 'zz' does not appear in .spec.ReplicatedJobs",
        ),
        (
            "failure-rules",
            jobset("rules", uid=None).replicated_job("a").failure_policy(1, rules).build(),
            "invalid failure policy rule name '1bad', a failure policy rule name must start with an "
            "alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and "
            "must end with an alphanumeric character or '_'\n"
            "invalid replicatedJob name 'nope' in failure policy does not appear in .spec.ReplicatedJobs\n"
            "invalid job failure reason 'Weird' in failure policy is not a recognized job failure reason\n"
            "rule names are not unique, rules with indices [1 2] all have the same name 'dup'",
        ),
        ("coordinator", coord, "coordinator pod index 3 is invalid for replicatedJob a job index 1"),
        (
            "subdomain",
            jobset("subd", uid=None).replicated_job("a").network(subdomain="Bad_Sub").build(),
            f'spec.network.subdomain: Invalid value: "Bad_Sub": {DNS1123}\n'
            f'spec.network.subdomain: Invalid value: "Bad_Sub": {DNS1035}',
        ),
        ("group-name", group, f'spec.replicatedJobs[0].groupName: Invalid value: "Bad_Group": {DNS1035}'),
        (
            "managed-by",
            jobset("managed", uid=None).replicated_job("a").managed_by("nope").build(),
            'spec.managedBy: Invalid value: "nope": must be a domain-prefixed path (such as "acme.io/foo")',
        ),
    ]


CASES = _cases()


@pytest.mark.parametrize(("body", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_invalid_jobset_is_refused_with_upstreams_message(
    api: KubeAPI, body: JsonDict, message: str
) -> None:
    with pytest.raises(ApiError) as denied:
        await create_jobset(api, body)
    assert denied.value.status == 403
    assert denied.value.message == DENIED + message


async def test_updates_keep_replicated_jobs_and_managed_by(api: KubeAPI) -> None:
    await create_jobset(api, jobset("frozen", uid=None).replicated_job("a").suspend().build())
    js = await api.get(jobsets_path("default", "frozen"))
    rjob = js["spec"]["replicatedJobs"][0]
    with pytest.raises(ApiError) as denied:
        await api.merge_patch(jobsets_path("default", "frozen"), {"spec": {"managedBy": "example.com/x"}})
    assert (
        denied.value.message == DENIED + 'spec.managedBy: Invalid value: "example.com/x": field is immutable'
    )
    with pytest.raises(ApiError) as denied:
        await api.merge_patch(
            jobsets_path("default", "frozen"), {"spec": {"replicatedJobs": [{**rjob, "replicas": 3}]}}
        )
    text = denied.value.message
    assert text.startswith(DENIED + "spec.replicatedJobs: Invalid value: [{") and text.endswith(
        "}]: field is immutable"
    )
    assert '"replicas":3' in text
    # A suspended JobSet's pod template labels may change (Kueue does).
    template = {**rjob["template"]["spec"]["template"], "metadata": {"labels": {"kueue": "yes"}}}
    changed = {
        **rjob,
        "template": {**rjob["template"], "spec": {**rjob["template"]["spec"], "template": template}},
    }
    await api.merge_patch(jobsets_path("default", "frozen"), {"spec": {"replicatedJobs": [changed]}})
