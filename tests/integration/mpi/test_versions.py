"""Both MPIJob versions from one CRD: upstream's documented examples each run on the mechanics of
the version they were written in, and each reads back through the other version unchanged.
"""

from __future__ import annotations

from typing import Any

from kubetrain.runtime import ApiError

from .harness import V1, V2, MPICluster, example

JsonDict = dict[str, Any]
ANNOTATION = "kubeflow.org/mpi-api-version"
V2_DEFAULTS = ("sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation", "runLauncherAsWorker")


def _without_version(obj: JsonDict) -> JsonDict:
    return {k: v for k, v in obj.items() if k != "apiVersion"}


async def test_upstream_examples_run_each_on_its_own_mechanics() -> None:
    async with MPICluster.start() as c:
        v1 = example("mpi/mpijob-v1-tensorflow-benchmarks.yaml")
        v2 = example("mpi/mpijob-v2beta1-pi.yaml")
        await c.create(v1)
        await c.create(v2)

        async def both_launched() -> bool:
            pods = await c.names("v1", "Pod")
            jobs = await c.names("batch/v1", "Job")
            return "tensorflow-benchmarks-launcher" in pods and jobs == ["pi-launcher"]

        await c.wait_for(both_launched, what="a launcher pod (v1) and a launcher Job (v2beta1)")
        # v1: ConfigMap with kubexec.sh, launcher RBAC, launcher pod; no Service, no Secret.
        assert "kubexec.sh" in (await c.get("v1", "ConfigMap", "tensorflow-benchmarks-config"))["data"]
        assert await c.names("v1", "ServiceAccount") == ["tensorflow-benchmarks-launcher"]
        assert await c.names("rbac.authorization.k8s.io/v1", "Role") == ["tensorflow-benchmarks-launcher"]
        # v2beta1: headless Service, SSH Secret, sshd workers, launcher Job; no RBAC, no kubexec.sh.
        assert await c.names("v1", "Service") == ["pi"]
        assert await c.names("v1", "Secret") == ["pi-ssh"]
        assert "kubexec.sh" not in (await c.get("v1", "ConfigMap", "pi-config"))["data"]
        worker = await c.get("v1", "Pod", "pi-worker-0")
        assert worker["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd"]
        mounts = {m["mountPath"] for m in worker["spec"]["containers"][0]["volumeMounts"]}
        assert "/home/mpiuser/.ssh" in mounts

        v1_job = await c.get(V1, "MPIJob", "tensorflow-benchmarks")
        v2_job = await c.get(V2, "MPIJob", "pi")
        assert v1_job["metadata"]["annotations"][ANNOTATION] == "v1"
        assert v2_job["metadata"]["annotations"][ANNOTATION] == "v2beta1"
        # The API server defaulted the v2beta1 job (as mpi-operator's CRD does), not the v1 one.
        assert all(key in v2_job["spec"] for key in V2_DEFAULTS)
        assert not any(key in v1_job["spec"] for key in V2_DEFAULTS)


async def test_each_version_reads_back_as_the_other_and_round_trips() -> None:
    async with MPICluster.start() as c:
        await c.create(example("mpi/mpijob-v1-tensorflow-benchmarks.yaml"))
        await c.create(example("mpi/mpijob-v2beta1-pi.yaml"))
        for name, written, other in (("tensorflow-benchmarks", V1, V2), ("pi", V2, V1)):

            async def annotated(name: str = name, written: str = written) -> JsonDict | None:
                job = await c.get(written, "MPIJob", name)
                return job if ANNOTATION in (job["metadata"].get("annotations") or {}) else None

            as_written = await c.wait_for(annotated, what=f"{name} annotated")
            as_other = await c.get(other, "MPIJob", name)
            assert as_other["apiVersion"] == other
            assert _without_version(as_other)["spec"] == as_written["spec"]
            # Write it back through the other version (what `kubectl apply` of a converted file,
            # or Kueue speaking v2beta1, does) and read it as written: nothing lost or added.
            # The operator writes the status meanwhile, so a stale read gets 409: re-read, as a
            # client must.
            for attempt in range(10):
                as_other["metadata"]["labels"] = {"touched": "yes"}
                try:
                    await c.client.replace(as_other)
                    break
                except ApiError as err:
                    if not err.conflict or attempt == 9:
                        raise
                as_other = await c.get(other, "MPIJob", name)
            again = await c.get(written, "MPIJob", name)
            assert again["apiVersion"] == written
            assert again["metadata"]["labels"] == {"touched": "yes"}
            assert (
                again["metadata"]["annotations"][ANNOTATION]
                == as_written["metadata"]["annotations"][ANNOTATION]
            )
            for key in ("mpiReplicaSpecs", "slotsPerWorker", "runPolicy"):
                assert again["spec"][key] == as_written["spec"][key], (name, key)


async def test_a_v1_job_written_through_v2beta1_keeps_v1_mechanics() -> None:
    """Kueue suspends through v2beta1, which adds that version's defaults to a v1 job's spec; the
    annotation frozen on the first reconcile keeps it on the v1 mechanics."""
    async with MPICluster.start() as c:
        await c.create(example("mpi/mpijob-v1-tensorflow-benchmarks.yaml"))
        name = "tensorflow-benchmarks"

        async def launched() -> bool:
            return f"{name}-launcher" in await c.names("v1", "Pod")

        await c.wait_for(launched, what="v1 launcher pod")
        await c.patch(V2, "MPIJob", name, {"spec": {"runPolicy": {"suspend": True}}})

        async def released() -> bool:
            return await c.names("v1", "Pod") == []

        await c.wait_for(released, what="pods deleted by the v1 suspend")
        job = await c.wait_job(
            V1,
            "MPIJob",
            name,
            lambda j: any(
                x["type"] == "Suspended" and x["status"] == "True" for x in j["status"]["conditions"]
            ),
            "Suspended",
        )
        assert all(key in job["spec"] for key in V2_DEFAULTS)  # the v2beta1 write defaulted them
        assert job["metadata"]["annotations"][ANNOTATION] == "v1"
        await c.settle()
        assert await c.names("v1", "Service") == []
        assert await c.names("v1", "Secret") == []
        assert await c.names("batch/v1", "Job") == []
