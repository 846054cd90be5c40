"""The dashboard in a real browser (headless Chromium through Playwright), on a real training job.

`kubetrain up` runs as a user starts it; examples/local/pytorch-ddp-digits (a PyTorchJob: Master +
2 Workers, DDP over gloo, printing `local_loss=... global_loss=...` each epoch) is submitted with
`kubetrain create`. The jobs page shows it appear, go Running, then Succeeded; its page streams a
replica's log while it runs and draws the loss curves as the lines come, falling. Then the job is
deleted, the plane stopped and started again on the same data directory: the history pages still
show it, with its logs and curves. Each page's screenshot is written as an artifact.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dashboard_plane import DashboardPlane, record_changes, screenshot, seen

JOB = "pytorch-ddp-digits"
KEY = f"default/PyTorchJob/{JOB}"
LONG = 240_000
"""ms: a PyTorch DDP job on a busy 2-core machine (three interpreters importing torch)."""


@pytest.fixture(scope="module")
def submit(plane: DashboardPlane, torch_example: Path) -> Callable[[], None]:
    """Create the example job, once for the module (each test may be run alone)."""
    done: list[bool] = []

    def create() -> None:
        if not done:
            plane.kubetrain("create", "-f", str(torch_example))
            done.append(True)

    return create


def first_seen(values: list[str]) -> list[str]:
    return [v for i, v in enumerate(values) if v not in values[:i]]


def curve(page: Any, metric: str, series: str) -> list[float]:
    line = page.locator(f'figure.chart[data-metric="{metric}"] polyline[data-series="{series}"]')
    return [float(v) for v in (line.get_attribute("data-values") or "").split(",") if v]


def test_a_training_job_appears_runs_streams_its_log_and_draws_a_falling_loss_curve(
    plane: DashboardPlane, context: Any, submit: Callable[[], None], screenshots: Path
) -> None:
    from playwright.sync_api import expect

    jobs = context.new_page()
    record_changes(jobs)
    jobs.goto(plane.url)
    expect(jobs.locator("#connection")).to_have_text("live")
    expect(jobs.locator("#jobs-empty")).to_contain_text("No jobs yet")

    job = context.new_page()
    record_changes(job)
    submit()
    row = jobs.locator(f'tr.job-row[data-key="{KEY}"]')
    expect(row).to_be_visible(timeout=60_000)
    link = row.locator("a.job-link")
    assert link.get_attribute("href") == f"/jobs/default/PyTorchJob/{JOB}"
    job.goto(plane.url.rstrip("/") + link.get_attribute("href"))

    expect(job.locator("#job-head .badge")).to_have_text("Running", timeout=LONG)
    pods = job.locator("#pods-table tbody tr")
    expect(pods).to_have_count(3, timeout=60_000)
    log = job.locator("#log")
    expect(log).to_contain_text("rank 0/3: joined via", timeout=LONG)  # master-0's tab, the first
    assert job.locator("#log-tabs .tab[aria-selected=true]").text_content() == "master-0"
    expect(log).to_contain_text("final loss", timeout=LONG)
    expect(job.locator("#job-head .badge")).to_have_text("Succeeded", timeout=LONG)
    expect(row.locator(".badge")).to_have_text("Succeeded", timeout=60_000)

    # The jobs page showed it Running, then Succeeded.
    row_states = first_seen([e["states"][0] for e in seen(jobs) if e["states"]])
    assert row_states.index("Running") < row_states.index("Succeeded"), row_states
    # The log streamed: its first lines were on the page while the job ran, before the last ones.
    history = seen(job)
    streaming = next(e for e in history if "joined via" in e["log"])
    assert streaming["states"] == ["Running"] and "final loss" not in streaming["log"], streaming
    # The curve was drawn while the job ran, and it falls.
    drawn = next(e for e in history if e["points"])
    assert drawn["states"] == ["Running"], drawn
    for replica in ("master-0", "worker-0", "worker-1"):
        values = curve(job, "global_loss", replica)
        assert len(values) == 8 and values[-1] < values[0], (replica, values)
    assert len(curve(job, "local_loss", "worker-1")) == 8
    # CPU and memory of the local pods were shown while they ran.
    assert any(m.endswith("iB") for e in history for m in e["memory"]), "no memory figure was shown"

    # The pods: node, address, exit codes; the whole conditions timeline; the events.
    for i in range(3):
        cells = pods.nth(i).locator("td")
        assert cells.nth(3).text_content() == "kubetrain-local"
        assert (cells.nth(4).text_content() or "").startswith("127.")
        assert "pytorch: exit 0" in (cells.nth(6).text_content() or "")
    conditions = job.locator("#conditions-table tbody tr")
    for condition in ("Created", "Running", "Succeeded"):
        expect(conditions.filter(has_text=condition).first).to_be_visible()
    expect(job.locator('#timeline .segment[data-type="Running"]')).to_be_visible()
    expect(job.locator("#events-table")).to_contain_text("SuccessfulCreatePod")
    job.locator('#log-tabs .tab[data-tab="worker-1"]').click()
    expect(log).to_contain_text("rank 2: epoch 8/8")

    # The jobs page's filters, kept in its URL.
    jobs.select_option("#filter-state", "Failed")
    expect(row).to_have_count(0)
    assert "state=Failed" in jobs.url
    jobs.select_option("#filter-state", "Succeeded")
    jobs.select_option("#filter-kind", "PyTorchJob")
    jobs.select_option("#filter-namespace", "default")
    expect(row).to_be_visible()
    jobs.fill("#filter-name", "no-such")
    expect(row).to_have_count(0)
    jobs.fill("#filter-name", "digits")
    expect(row).to_be_visible()

    screenshot(jobs, screenshots, "jobs")
    job.locator('#log-tabs .tab[data-tab="master-0"]').click()
    screenshot(job, screenshots, "job")


def _history_logs(plane: DashboardPlane) -> bool:
    """Whether the history holds the log of each replica's main container (fetched when it ended)."""
    with urllib.request.urlopen(plane.url + "api/history", timeout=10) as response:
        found = [j for j in json.load(response)["jobs"] if j["name"] == JOB]
    if not found:
        return False
    with urllib.request.urlopen(plane.url + f"api/history/{found[0]['uid']}", timeout=10) as response:
        logs = json.load(response)["logs"]
    return {log["replica"] for log in logs if log["container"] == "pytorch"} == {
        "master-0",
        "worker-0",
        "worker-1",
    }


def test_a_deleted_job_still_shows_with_its_logs_and_curves_after_the_plane_restarted(
    plane: DashboardPlane, context: Any, submit: Callable[[], None], screenshots: Path
) -> None:
    from playwright.sync_api import expect

    submit()
    plane.kubetrain("wait", "pytorchjob", JOB, "--for", "Succeeded", "--timeout", "300", timeout=320)
    deadline = time.monotonic() + 60
    while not _history_logs(plane):
        assert time.monotonic() < deadline, "the history never got every replica's log"
        time.sleep(0.5)
    plane.kubetrain("delete", "pytorchjob", JOB, "--wait", "--timeout", "120", timeout=150)
    plane.stop()
    plane.start()

    page = context.new_page()
    page.goto(plane.url)
    expect(page.locator("#jobs-empty")).to_contain_text("No jobs yet")  # the plane no longer has it
    page.goto(plane.url + f"jobs/default/PyTorchJob/{JOB}")
    gone = page.locator("#gone")
    expect(gone).to_contain_text("No such job is running")
    expect(page.locator("#history-link")).to_be_visible()

    page.goto(plane.url + "history")
    row = page.locator("tr.history-row", has_text=JOB)
    expect(row).to_have_count(1)
    expect(row.locator(".badge")).to_have_text("Succeeded")
    assert (row.locator("td.deleted").text_content() or "").startswith(tuple("0123456789"))  # a time
    screenshot(page, screenshots, "history")

    row.locator("a.history-link").click()
    expect(page.locator("#job-head h1")).to_contain_text(JOB)
    expect(page.locator("#job-head .badge")).to_have_text("Succeeded")
    expect(page.locator(".notice.recorded")).to_contain_text("deleted")
    expect(page.locator("#log")).to_contain_text("final loss")
    expect(page.locator('figure.chart[data-metric="global_loss"]')).to_be_visible()
    for replica in ("master-0", "worker-0", "worker-1"):
        values = curve(page, "global_loss", replica)
        assert len(values) == 8 and values[-1] < values[0], (replica, values)
    expect(page.locator("#pods-table tbody tr")).to_have_count(3)
    for condition in ("Created", "Running", "Succeeded"):
        expect(page.locator("#conditions-table tbody tr").filter(has_text=condition).first).to_be_visible()
    screenshot(page, screenshots, "history-job")
    page.locator('#log-tabs .tab[data-tab="worker-1"]').click()
    expect(page.locator("#log")).to_contain_text("rank 2: epoch 8/8")


HOSTILE = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>'


def test_what_a_job_prints_is_shown_as_text_and_never_run(plane: DashboardPlane, context: Any) -> None:
    from playwright.sync_api import expect

    script = f"print({HOSTILE!r}); print('step=1 loss=1.0'); print('step=2 loss=0.5')"
    container = {"name": "pytorch", "image": "python:3.11", "command": ["python", "-u", "-c", script]}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "hostile"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container]}},
                }
            }
        },
    }
    path = plane.workdir / "hostile.json"
    path.write_text(json.dumps(job))
    plane.kubetrain("create", "-f", str(path))
    try:
        page = context.new_page()
        page.goto(plane.url + "jobs/default/PyTorchJob/hostile")
        expect(page.locator("#log")).to_contain_text(HOSTILE, timeout=LONG)
        expect(page.locator('figure.chart[data-metric="loss"]')).to_be_visible()
        assert curve(page, "loss", "master-0") == [1.0, 0.5]
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#log img, #log script").count() == 0
    finally:
        plane.kubetrain("delete", "pytorchjob", "hostile", "--wait", "--timeout", "60", timeout=90)
