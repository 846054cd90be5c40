"""kubectl-like tables, ages, documents and the describe view."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import yaml
from cli_builders import cond, pod, pytorchjob

from kubetrain.cli.output import as_document, format_table, job_rows, names
from kubetrain.client.describe import age, pod_status, render_describe
from kubetrain.frameworks.pytorch import PYTORCHJOB

NOW = datetime(2024, 1, 1, 0, 5, 0, tzinfo=UTC)


def test_table_columns_align_and_last_column_is_not_padded() -> None:
    text = format_table(["NAME", "STATE", "AGE"], [["a", "Running", "5m"], ["longer-name", "", "1s"]])
    assert text.splitlines() == [
        "NAME          STATE     AGE",
        "a             Running   5m",
        "longer-name             1s",
    ]


def test_age_like_kubectl() -> None:
    assert age("2024-01-01T00:04:15Z", NOW) == "45s"
    assert age("2024-01-01T00:02:00Z", NOW) == "3m"
    assert age("2024-01-01T00:01:48Z", NOW) == "3m12s"
    assert age("2023-12-31T22:00:00Z", NOW) == "125m"
    assert age("2023-12-31T18:55:00Z", NOW) == "5h10m"
    assert age("2023-12-30T18:05:00Z", NOW) == "30h"
    assert age("2023-12-28T20:05:00Z", NOW) == "3d4h"
    assert age("2023-12-01T00:05:00Z", NOW) == "31d"
    assert age(None, NOW) == "<unknown>"
    assert age("garbage", NOW) == "<unknown>"


def test_state_is_the_last_condition_type() -> None:
    job = pytorchjob(conditions=[cond("Created"), cond("Running", "False"), cond("Succeeded")])
    _, rows = job_rows([job], show_kind=False, wide=False, now=NOW)
    assert rows == [["tiny", "Succeeded", "5m"]]


def test_rows_with_kind_and_wide_columns() -> None:
    job = pytorchjob(
        conditions=[cond("Failed", message="worker-1 exited 3")],
        replica_statuses={"Master": {"active": 1}, "Worker": {"failed": 1, "succeeded": 1}},
    )
    headers, rows = job_rows([job], show_kind=True, wide=True, now=NOW)
    assert headers[:3] == ["NAME", "STATE", "AGE"]
    assert rows[0][0] == "pytorchjob.kubeflow.org/tiny"
    assert rows[0][3] == "Master:1/0/0 of 1,Worker:0/1/1 of 2"
    assert rows[0][4] == "worker-1 exited 3"


def test_pending_job_has_empty_state() -> None:
    _, rows = job_rows([pytorchjob()], show_kind=False, wide=False, now=NOW)
    assert rows[0][1] == ""


def test_documents_single_and_list() -> None:
    job = pytorchjob()
    assert json.loads(as_document([job], True, "json"))["metadata"]["name"] == "tiny"
    listed = yaml.safe_load(as_document([job, job], False, "yaml"))
    assert listed["kind"] == "List" and len(listed["items"]) == 2
    assert names([job]) == "pytorchjob.kubeflow.org/tiny"


def test_pod_status_column() -> None:
    p = pod(
        "tiny-master-0",
        "master",
        0,
        statuses=[{"name": "pytorch", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
    )
    assert pod_status(p) == "CrashLoopBackOff"
    p = pod("tiny-master-0", "master", 0, statuses=[{"name": "pytorch", "state": {"running": {}}}])
    assert pod_status(p) == "Running"
    p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert pod_status(p) == "Terminating"


def test_describe_shows_replicas_conditions_pods_events() -> None:
    job = pytorchjob(
        conditions=[cond("Created", reason="PyTorchJobCreated", message="created")],
        replica_statuses={"Worker": {"active": 2}},
    )
    pods = [
        pod(
            "tiny-worker-0",
            "worker",
            0,
            statuses=[{"name": "pytorch", "restartCount": 2, "state": {"running": {}}}],
        )
    ]
    events = [
        {
            "type": "Normal",
            "reason": "SuccessfulCreatePod",
            "message": "Created pod: tiny-worker-0",
            "lastTimestamp": "2024-01-01T00:04:00Z",
            "count": 3,
        }
    ]
    text = render_describe(PYTORCHJOB, job, pods, events, NOW)
    assert "Name:          tiny" in text
    assert "State:         Created" in text
    assert "Worker       desired 2  active 2  succeeded 0  failed 0" in text
    assert "Created     True   PyTorchJobCreated: created" in text
    assert "tiny-worker-0" in text and "restarts 2" in text
    assert "SuccessfulCreatePod" in text and "(x3)" in text


def test_describe_without_pods_or_events_says_none() -> None:
    text = render_describe(PYTORCHJOB, pytorchjob(), [], [], NOW)
    assert text.count("<none>") >= 3
