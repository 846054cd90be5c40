"""A container that cannot even be exec'd fails its job under the job's restart policy (issue #17).

An env var over the kernel's limit (E2BIG) once left the pod in ContainerCreating forever, so the
job never ended; now the start fails with the OS error in the pod status and the operator applies
the replica's restartPolicy and the job's backoffLimit as for any failed container (the pod's
Failed event is checked in tests/integration/node).
"""

from __future__ import annotations

import pytest
from cli_plane import pytorchjob

import kubetrain
from kubetrain.client.errors import JobStuck

HUGE = {"HUGE": "x" * 200_000}


@pytest.fixture
def client(kubeconfig: str) -> kubetrain.Client:
    with kubetrain.Client(kubeconfig) as c:
        yield c


def failed(job: dict) -> dict:
    [cond] = [c for c in job["status"]["conditions"] if c["type"] == "Failed" and c["status"] == "True"]
    return cond


def test_never_fails_the_job_with_the_start_error(client: kubetrain.Client) -> None:
    client.create(pytorchjob("e2big-never", "print('never runs')", env=HUGE))
    job = client.wait("pytorchjob", "e2big-never", timeout=60)
    assert failed(job)
    [pod] = client.pods("pytorchjob", "e2big-never")
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (128, "StartError")
    assert "argument list too long" in term["message"]
    client.delete("pytorchjob", "e2big-never")


def test_on_failure_restarts_until_the_backoff_limit(client: kubetrain.Client) -> None:
    body = pytorchjob("e2big-retry", "print('never runs')", restart_policy="OnFailure", env=HUGE)
    # 3, not 1: the job fails once restarts reach the limit, and at 1 that is the very moment the
    # first restart meets the error again, so `wait` could see Failed before it sees stuck.
    body["spec"]["runPolicy"] = {"backoffLimit": 3}
    client.create(body)
    with pytest.raises(JobStuck, match="argument list too long"):  # the restart met it again
        client.wait("pytorchjob", "e2big-retry", timeout=90)
    job = client.wait("pytorchjob", "e2big-retry", timeout=90, fail_when_stuck=False)
    assert "backoff limit" in failed(job)["message"]
    [pod] = client.pods("pytorchjob", "e2big-retry")
    status = pod["status"]["containerStatuses"][0]
    assert status["restartCount"] >= 1
    assert status["lastState"]["terminated"]["reason"] == "StartError"
    client.delete("pytorchjob", "e2big-retry")
