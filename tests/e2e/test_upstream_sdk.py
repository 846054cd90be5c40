"""The upstream Python SDK, unchanged, against `kubetrain up` (issue 4, "the upstream SDK works unchanged").

`kubetrain up` runs as a subprocess, as a user starts it, on a free port; the tests reach it only
through the kubeconfig it writes, with `kubeflow.training.TrainingClient` from kubeflow-training 1.9.x
and the official sync `kubernetes` client it depends on. They follow upstream's SDK e2e
(sdk/python/test/e2e/test_e2e_pytorchjob.py, docs/upstream-behaviour.md#python-sdk):

* a PyTorchJob built from the SDK's models (Master + Worker, a gloo all_reduce): create_job,
  wait_for_job_conditions, get_job_conditions (upstream's verify_job_e2e), get_job_pod_names,
  get_job_pods(is_master=True), get_job_logs (plain, follow=True, and verbose, i.e. with Events),
  list_jobs, delete_job; and a failing job, on which wait_for_job_conditions raises at once;
* create_job(train_func=..., num_workers=2): the SDK wraps the function's source in `bash -c`,
  writes it to a temp file and runs it with `torchrun`. That works locally: `bash` is this
  machine's, and the node puts the interpreter's bin directory (where torch installs `torchrun`)
  first on PATH. `num_procs_per_worker=1` pins `nprocPerNode`: left unset the operator injects
  PET_NPROC_PER_NODE=auto (as upstream does), and torchrun then starts one process per CPU in
  every pod, which makes the test's cost depend on the machine.
  NOT covered: `packages_to_install`. The generated script runs `python -m pip install --index-url
  <pip_index_url>` in every pod, and on the local node `python` is the interpreter kubetrain runs
  in (unless an image map gives the image its own virtualenv): the test would need a package
  index and would install packages into the environment that runs the tests.
  `train()` (LLM fine-tuning) is not covered either: it needs a PVC, the storage-initializer and
  trainer images, and model downloads;
* create_job(base_image="docker.io/hello-world") (upstream's test_sdk_e2e_create_from_image): the
  image is not run locally and has no command, so the test gives it one with an image map
  ($KUBETRAIN_IMAGE_MAP), the way users map an image to a local entrypoint;
* update_job (a merge PATCH of the whole object, as upstream's gang e2e uses it): resuming a
  suspended job and lowering its minAvailable;
* managedBy (upstream's test_sdk_e2e_managed_by): a job managed by `kueue.x-k8s.io/multikueue` is
  stored and left alone (no status, no pods); one with `kueue.x-k8s.io/other-controller` is
  rejected at create time by the plane's in-process admission (the operator's validating webhook,
  called by the embedded API server), with upstream's webhook name, code and field error;
* Ctrl-C: SIGINT while a job runs makes `kubetrain up` exit 0, leave no process behind and remove
  its kubeconfig.

Every process the plane starts carries a marker in its environment, so a leak is found by
scanning /proc, as the `kubetrain run` interrupt tests do.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # the parent package is missing
        return True


if (_missing("kubeflow.training") or _missing("torch")) and os.environ.get("CI") != "true":
    pytest.skip("needs kubeflow-training (the upstream SDK) and torch", allow_module_level=True)

from kubeflow.training import TrainingClient, models  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from tests.e2e.sdk_plane import (  # noqa: E402
    MARKER_ENV,
    NAMESPACE,
    KubetrainUp,
    assert_clean,
    processes_with,
    running_plane,
)

SDK_PYTORCH_IMAGE = "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime"  # not run locally
HELLO_WORLD = "docker.io/hello-world"

ALLREDUCE = """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(total)
print(f"allreduce rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} "
      f"via {os.environ['MASTER_ADDR']}: sum={total.item():g}", flush=True)
dist.destroy_process_group()
"""
"""Each rank adds rank+1, so with 2 ranks every rank prints sum=3."""


def allreduce_under_torchrun() -> None:
    # The SDK puts this source in an unquoted bash here-document: no dollar signs, backslashes
    # or backticks in it.
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    total = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(total)
    print(f"train_func rank {dist.get_rank()} of {dist.get_world_size()}: sum={total.item():g}", flush=True)
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubetrainUp]:
    workdir = tmp_path_factory.mktemp("kubetrain-up")
    image_map = workdir / "images.yaml"
    image_map.write_text(
        yaml.safe_dump(
            {
                "images": [
                    {"image": HELLO_WORLD, "command": ["python", "-c", "print('Hello from Docker!')"]},
                ]
            }
        )
    )
    with running_plane(workdir, image_map=image_map) as plane:
        yield plane


@pytest.fixture(scope="module")
def sdk(up: KubetrainUp) -> TrainingClient:
    return up.client()


# --- helpers in the SDK's own terms ---------------------------------------------------------------


def pytorch_container(marker: str, command: list[str]) -> Any:
    return models.V1Container(
        name="pytorch",
        image=SDK_PYTORCH_IMAGE,
        command=command,
        env=[models.V1EnvVar(name=MARKER_ENV, value=marker)],
    )


def pytorchjob(name: str, replicas: dict[str, Any], managed_by: str | None = None) -> Any:
    """A KubeflowOrgV1PyTorchJob from the SDK's models; `replicas` maps a replica type to a container."""
    specs = {
        rtype: models.KubeflowOrgV1ReplicaSpec(
            replicas=1,
            restart_policy="Never",  # a broken job fails fast instead of restarting until the timeout
            template=models.V1PodTemplateSpec(spec=models.V1PodSpec(containers=[container])),
        )
        for rtype, container in replicas.items()
    }
    return models.KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1",
        kind="PyTorchJob",
        metadata=models.V1ObjectMeta(name=name),
        spec=models.KubeflowOrgV1PyTorchJobSpec(
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="None", managed_by=managed_by),
            pytorch_replica_specs=specs,
        ),
    )


def wait_succeeded(sdk: TrainingClient, up: KubetrainUp, name: str) -> None:
    try:
        sdk.wait_for_job_conditions(
            name,
            job_kind="PyTorchJob",
            expected_conditions={"Succeeded"},
            polling_interval=1,
            wait_timeout=120,
        )
    except (RuntimeError, TimeoutError) as exc:
        pytest.fail(
            f"{exc}\nconditions: {_conditions(sdk, name)}\npod logs: {_all_logs(sdk, name)}\n"
            f"kubetrain up:\n{up.output()[-4000:]}"
        )


def _conditions(sdk: TrainingClient, name: str) -> list[tuple[str, str]]:
    return [(c.type, c.status) for c in sdk.get_job_conditions(name, job_kind="PyTorchJob")]


def _all_logs(sdk: TrainingClient, name: str) -> dict[str, str]:
    logs, _ = sdk.get_job_logs(name, job_kind="PyTorchJob", is_master=False)
    return dict(logs)


def verify_job_e2e(sdk: TrainingClient, name: str) -> None:
    """Upstream's verify_job_e2e (sdk/python/test/e2e/utils.py), after the wait."""
    conditions = sdk.get_job_conditions(name, job_kind="PyTorchJob")
    assert len(conditions) >= 2, conditions
    assert sdk.is_job_created(name, job_kind="PyTorchJob")
    assert sdk.is_job_succeeded(name, job_kind="PyTorchJob")
    assert not sdk.is_job_running(name, job_kind="PyTorchJob")
    assert not sdk.is_job_restarting(name, job_kind="PyTorchJob")
    assert not sdk.is_job_failed(name, job_kind="PyTorchJob")


def delete_and_wait_gone(sdk: TrainingClient, name: str, timeout: float = 30.0) -> None:
    """delete_job, then the job leaves list_jobs and its pods are garbage-collected."""
    sdk.delete_job(name, job_kind="PyTorchJob")
    deadline = time.monotonic() + timeout
    while _job_names(sdk) & {name} or sdk.get_job_pod_names(name):
        assert time.monotonic() < deadline, f"{name} or its pods still exist {timeout:.0f}s after delete_job"
        time.sleep(0.2)


def _job_names(sdk: TrainingClient) -> set[str]:
    return {job.metadata.name for job in sdk.list_jobs(job_kind="PyTorchJob")}


# --- the tests --------------------------------------------------------------------------------------


def test_pytorchjob_from_sdk_models_trains_and_is_inspectable(up: KubetrainUp, sdk: TrainingClient) -> None:
    name = "sdk-gloo"
    command = ["python", "-c", ALLREDUCE]
    job = pytorchjob(
        name,
        {"Master": pytorch_container(up.marker, command), "Worker": pytorch_container(up.marker, command)},
    )

    sdk.create_job(job=job)
    wait_succeeded(sdk, up, name)
    verify_job_e2e(sdk, name)

    assert sorted(sdk.get_job_pod_names(name)) == [f"{name}-master-0", f"{name}-worker-0"]
    masters = sdk.get_job_pods(name, is_master=True)
    assert [pod.metadata.name for pod in masters] == [f"{name}-master-0"]
    assert masters[0].metadata.labels["training.kubeflow.org/job-role"] == "master"
    assert masters[0].status.phase == "Succeeded"

    logs, events = sdk.get_job_logs(name, job_kind="PyTorchJob")  # the master's only
    assert list(logs) == [f"{name}-master-0"]
    assert f"allreduce rank 0 of 2 via {name}-master-0: sum=3" in logs[f"{name}-master-0"].splitlines()
    assert events == {}
    worker_logs, _ = sdk.get_job_logs(
        name, job_kind="PyTorchJob", is_master=False, replica_type="worker", replica_index=0
    )
    assert f"allreduce rank 1 of 2 via {name}-master-0: sum=3" in worker_logs[f"{name}-worker-0"].splitlines()

    followed, _ = sdk.get_job_logs(name, job_kind="PyTorchJob", follow=True)  # watch-streamed pods/log
    assert f"allreduce rank 0 of 2 via {name}-master-0: sum=3" in followed[f"{name}-master-0"]

    _, events = sdk.get_job_logs(name, job_kind="PyTorchJob", verbose=True)  # + core/v1 Events
    job_events = "\n".join(events.get(f"pytorchjob/{name}", []))
    assert f"Created pod: {name}-master-0" in job_events and f"Created pod: {name}-worker-0" in job_events

    assert name in _job_names(sdk)
    delete_and_wait_gone(sdk, name)


def test_create_job_from_train_func_runs_it_with_torchrun(up: KubetrainUp, sdk: TrainingClient) -> None:
    name = "sdk-train-func"
    sdk.create_job(
        name=name,
        train_func=allreduce_under_torchrun,
        num_workers=2,
        num_procs_per_worker=1,
        base_image=SDK_PYTORCH_IMAGE,
        job_kind="PyTorchJob",
        env_vars={MARKER_ENV: up.marker},
    )

    stored = sdk.get_job(name, job_kind="PyTorchJob")
    master = stored.spec.pytorch_replica_specs["Master"].template.spec.containers[0]
    assert master.command == ["bash", "-c"] and "torchrun " in master.args[0]  # what the SDK generated
    assert stored.spec.nproc_per_node == "1"
    assert stored.spec.pytorch_replica_specs["Worker"].replicas == 1

    wait_succeeded(sdk, up, name)
    verify_job_e2e(sdk, name)
    assert sorted(sdk.get_job_pod_names(name)) == [f"{name}-master-0", f"{name}-worker-0"]
    logs = _all_logs(sdk, name)
    assert "train_func rank 0 of 2: sum=3" in logs[f"{name}-master-0"].splitlines()
    assert "train_func rank 1 of 2: sum=3" in logs[f"{name}-worker-0"].splitlines()
    delete_and_wait_gone(sdk, name)


def test_create_job_from_image_runs_the_mapped_entrypoint(up: KubetrainUp, sdk: TrainingClient) -> None:
    name = "sdk-hello-world"
    sdk.create_job(
        name=name,
        base_image=HELLO_WORLD,
        num_workers=1,
        job_kind="PyTorchJob",
        env_vars={MARKER_ENV: up.marker},
    )
    wait_succeeded(sdk, up, name)
    verify_job_e2e(sdk, name)
    logs, _ = sdk.get_job_logs(name, job_kind="PyTorchJob")
    assert logs == {f"{name}-master-0": "Hello from Docker!\n"}
    delete_and_wait_gone(sdk, name)


def test_update_job_patches_the_stored_job(up: KubetrainUp, sdk: TrainingClient) -> None:
    """update_job is a merge PATCH of the whole object (upstream's gang e2e lowers minAvailable
    with it); here it also resumes a suspended job, which then runs to the end."""
    name = "sdk-update"
    job = pytorchjob(name, {"Master": pytorch_container(up.marker, ["python", "-c", "print('resumed')"])})
    job.spec.run_policy.suspend = True
    job.spec.run_policy.scheduling_policy = models.KubeflowOrgV1SchedulingPolicy(min_available=10)
    sdk.create_job(job=job)
    deadline = time.monotonic() + 30  # the SDK cannot wait for Suspended: it knows five condition types
    while ("Suspended", "True") not in _conditions(sdk, name):
        assert time.monotonic() < deadline, f"{name} not Suspended: {_conditions(sdk, name)}"
        time.sleep(0.2)
    assert sdk.get_job_pod_names(name) == []

    stored = sdk.get_job(name, job_kind="PyTorchJob")
    stored.spec.run_policy.suspend = False
    stored.spec.run_policy.scheduling_policy.min_available = 1
    sdk.update_job(stored, name, job_kind="PyTorchJob")
    assert sdk.get_job(name, job_kind="PyTorchJob").spec.run_policy.scheduling_policy.min_available == 1

    wait_succeeded(sdk, up, name)
    logs, _ = sdk.get_job_logs(name, job_kind="PyTorchJob")
    assert logs == {f"{name}-master-0": "resumed\n"}
    delete_and_wait_gone(sdk, name)


def test_wait_for_job_conditions_raises_once_the_job_fails(up: KubetrainUp, sdk: TrainingClient) -> None:
    name = "sdk-failing"
    crash = ["python", "-c", "import sys; print('giving up', flush=True); sys.exit(3)"]
    sdk.create_job(job=pytorchjob(name, {"Master": pytorch_container(up.marker, crash)}))
    with pytest.raises(RuntimeError, match=f"PyTorchJob {NAMESPACE}/{name} is Failed"):
        sdk.wait_for_job_conditions(name, job_kind="PyTorchJob", polling_interval=1, wait_timeout=60)
    assert sdk.is_job_failed(name, job_kind="PyTorchJob")
    assert not sdk.is_job_running(name, job_kind="PyTorchJob")
    logs, _ = sdk.get_job_logs(name, job_kind="PyTorchJob")
    assert logs == {f"{name}-master-0": "giving up\n"}
    delete_and_wait_gone(sdk, name)


def test_managed_by_multikueue_is_stored_and_left_to_kueue(up: KubetrainUp, sdk: TrainingClient) -> None:
    delegated, ours = "sdk-managed-multikueue", "sdk-managed-training-operator"
    command = ["python", "-c", "print('done')"]
    sdk.create_job(
        job=pytorchjob(
            delegated,
            {"Master": pytorch_container(up.marker, command)},
            managed_by="kueue.x-k8s.io/multikueue",
        )
    )
    # A job of ours, created after it: once the operator has run this one to the end, it has seen
    # the delegated job too, so "no status" below is a decision, not a race.
    sdk.create_job(
        job=pytorchjob(
            ours,
            {"Master": pytorch_container(up.marker, command)},
            managed_by="kubeflow.org/training-operator",
        )
    )
    wait_succeeded(sdk, up, ours)
    verify_job_e2e(sdk, ours)

    assert sdk.get_job_conditions(delegated, job_kind="PyTorchJob") == []
    assert sdk.get_job(delegated, job_kind="PyTorchJob").status is None
    assert sdk.get_job_pod_names(delegated) == []
    assert {delegated, ours} <= _job_names(sdk)
    for name in (delegated, ours):
        delete_and_wait_gone(sdk, name)


def test_managed_by_another_controller_is_rejected_at_create(up: KubetrainUp, sdk: TrainingClient) -> None:
    name = "sdk-managed-other"
    job = pytorchjob(
        name,
        {"Master": pytorch_container(up.marker, ["python", "-c", "print('done')"])},
        managed_by="kueue.x-k8s.io/other-controller",
    )
    try:
        with pytest.raises(RuntimeError, match=f"Failed to create PyTorchJob: {NAMESPACE}/{name}") as raised:
            sdk.create_job(job=job)
    finally:
        if name in _job_names(sdk):
            delete_and_wait_gone(sdk, name)
    api_error = raised.value.__cause__ or raised.value.__context__
    assert isinstance(api_error, ApiException), repr(raised.value)
    assert (api_error.status, api_error.reason) == (403, "Forbidden")
    assert json.loads(api_error.body)["message"] == (
        'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request: '
        'spec.runPolicy.managedBy: Unsupported value: "kueue.x-k8s.io/other-controller": '
        'supported values: "kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'
    )


def test_ctrl_c_stops_running_pods_and_leaves_nothing(tmp_path: Path) -> None:
    plane = KubetrainUp(tmp_path)
    plane.start()
    try:
        sdk = plane.client()
        sleeper = ["python", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
        sdk.create_job(job=pytorchjob("sdk-sleeper", {"Master": pytorch_container(plane.marker, sleeper)}))
        sdk.wait_for_job_conditions(
            "sdk-sleeper",
            job_kind="PyTorchJob",
            expected_conditions={"Running"},
            polling_interval=1,
            wait_timeout=60,
        )
        assert len(processes_with(plane.marker)) >= 2, "the plane and its pod process should be running"
    finally:
        shutdown = plane.stop()
    assert_clean(shutdown)
    assert not plane.kubeconfig.exists(), "kubetrain up left its kubeconfig behind"
