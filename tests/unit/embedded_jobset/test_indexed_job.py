"""The embedded Job controller's Indexed completion mode helpers (kube-controller-manager's
``indexed_job_utils.go``), which JobSet's Jobs rely on for pod names and hostnames."""

from __future__ import annotations

from kubetrain.embedded.jobcontroller import format_indexes, pod_generate_name_with_index, succeeded_indexes


def test_generate_name_with_index() -> None:
    assert pod_generate_name_with_index("js-workers-1", 0) == "js-workers-1-0-"
    long = "j" * 70
    prefix = pod_generate_name_with_index(long, 12)
    assert len(prefix) == 58 and prefix.endswith("j-12-")


def test_completed_indexes_interval_form() -> None:
    assert format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert format_indexes(set()) == ""


def test_succeeded_indexes_count_each_index_once() -> None:
    def pod(index: str, phase: str) -> dict:
        key = "batch.kubernetes.io/job-completion-index"
        return {"metadata": {"annotations": {key: index}}, "status": {"phase": phase}}

    pods = [
        pod("0", "Succeeded"),
        pod("0", "Succeeded"),
        pod("1", "Failed"),
        pod("2", "Succeeded"),
        pod("9", "Succeeded"),
    ]
    assert succeeded_indexes(pods, 3) == {0, 2}
