"""`kubetrain.Client` against a local plane: every verb, and the errors users see."""

from __future__ import annotations

import pytest
from cli_plane import pytorchjob

import kubetrain
from kubetrain.cli.main import main
from kubetrain.client import AlreadyExists, JobStuck, NotFound, Unreachable, ValidationError, WaitTimeout

QUICK = "print('hello from', __import__('os').environ['RANK'])"


@pytest.fixture
def client(kubeconfig: str) -> kubetrain.Client:
    with kubetrain.Client(kubeconfig) as c:
        yield c


def test_create_get_list_wait_logs_describe_events_delete(client: kubetrain.Client) -> None:
    created = client.create(pytorchjob("lifecycle", QUICK, QUICK, workers=1))
    assert created["metadata"]["name"] == "lifecycle" and created["metadata"]["namespace"] == "default"
    assert client.get("PyTorchJobs", "lifecycle")["metadata"]["uid"] == created["metadata"]["uid"]
    assert "lifecycle" in [j["metadata"]["name"] for j in client.list()]
    assert [j["kind"] for j in client.list("pytorchjob") if j["metadata"]["name"] == "lifecycle"] == [
        "PyTorchJob"
    ]

    done = client.wait("pytorchjob", "lifecycle", timeout=60)
    assert any(c["type"] == "Succeeded" and c["status"] == "True" for c in done["status"]["conditions"])

    pods = client.pods("pytorchjob", "lifecycle")
    assert [p["metadata"]["name"] for p in pods] == ["lifecycle-master-0", "lifecycle-worker-0"]
    assert list(client.logs("lifecycle-master-0")) == ["hello from 0"]
    [stamped] = client.logs("lifecycle-master-0", tail=1, timestamps=True)
    assert stamped.endswith(" hello from 0")

    reasons = {e["reason"] for e in client.events("pytorchjob", "lifecycle")}
    assert "SuccessfulCreatePod" in reasons

    text = client.describe("pytorchjob", "lifecycle")
    assert (
        "State:         Succeeded" in text and "lifecycle-master-0" in text and "SuccessfulCreatePod" in text
    )

    client.delete("pytorchjob", "lifecycle")
    client.wait_deleted("pytorchjob", "lifecycle", timeout=30)
    with pytest.raises(NotFound):
        client.get("pytorchjob", "lifecycle")
    assert client.pods("pytorchjob", "lifecycle") == []


def test_not_found_message(client: kubetrain.Client) -> None:
    with pytest.raises(NotFound) as exc:
        client.get("pytorchjob", "nope")
    assert str(exc.value) == 'pytorchjob "nope" not found in namespace "default"'
    with pytest.raises(NotFound, match='pod "nope-master-0" not found'):
        list(client.logs("nope-master-0"))


def test_invalid_job_is_refused_before_the_server(client: kubetrain.Client) -> None:
    job = pytorchjob("bad", QUICK)
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 3
    with pytest.raises(ValidationError) as exc:
        client.create(job)
    assert exc.value.errors[0].field == "spec.pytorchReplicaSpecs[Master].replicas"
    with pytest.raises(NotFound):
        client.get("pytorchjob", "bad")


def test_create_twice_says_how_to_fix(client: kubetrain.Client) -> None:
    job = pytorchjob("twice", "import time; time.sleep(30)")
    client.create(job)
    try:
        with pytest.raises(
            AlreadyExists, match=r'pytorchjob "twice" already exists .*kubetrain delete pytorchjob twice'
        ):
            client.create(job)
        with pytest.raises(WaitTimeout, match=r"did not reach Succeeded or Failed within 0\.2s"):
            client.wait("pytorchjob", "twice", timeout=0.2)
    finally:
        client.delete("pytorchjob", "twice")


def test_wait_fails_at_once_on_a_job_that_cannot_make_progress(
    client: kubetrain.Client, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job = pytorchjob("never-fits", QUICK)
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "512"}
    }
    client.create(job)
    try:
        with pytest.raises(
            JobStuck,
            match=r'pytorchjob "never-fits" cannot make progress: master-0 can never be scheduled '
            r"\(it requests 512 cpu; the node has",
        ):
            client.wait("pytorchjob", "never-fits", timeout=60)
        with pytest.raises(WaitTimeout):  # asked not to judge: only the timeout ends it
            client.wait("pytorchjob", "never-fits", timeout=1, fail_when_stuck=False)
        assert main(["wait", "pytorchjob", "never-fits", "--timeout", "60", "--kubeconfig", kubeconfig]) == 1
        assert "cannot make progress: master-0 can never be scheduled" in capsys.readouterr().err
    finally:
        client.delete("pytorchjob", "never-fits")


def test_unreachable_server() -> None:
    with (
        kubetrain.Client(url="http://127.0.0.1:9") as c,
        pytest.raises(Unreachable, match="cannot reach the API server"),
    ):
        c.list()
