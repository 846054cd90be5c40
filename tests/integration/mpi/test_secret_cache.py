"""The operator caches only its own Secrets (issue #17 item 7): least privilege in memory.

MPIJob v2beta1's SSH Secret carries the operator-name label and the Secret informer selects on
it, so the operator no longer holds every Secret of the cluster. A namesake without the label is
invisible to that cache: one of the job's own (an older operator's) is labelled and kept, keys
unchanged; anyone else's is left alone and the job backs off (mpi-operator's ErrResourceExists).
"""

from __future__ import annotations

import base64

from .harness import NS, V2, MPICluster, v2_job

OPERATOR_NAME = "training.kubeflow.org/operator-name"


def secret(name: str, **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": labels},
        "data": {"password": base64.b64encode(b"hunter2").decode()},
    }


async def test_only_the_jobs_secrets_are_cached() -> None:
    async with MPICluster.start() as c:
        await c.create(secret("db-password", app="db"))
        await c.create(v2_job("cached"))
        await c.wait_for(lambda: c.get_or_none("v1", "Secret", "cached-ssh"), what="SSH Secret")
        store = c.manager.child_informers["v1/Secret"].store
        await c.wait_for(lambda: len(store) > 0, what="the Secret cache")
        assert sorted(store.keys()) == [f"{NS}/cached-ssh"]
        labels = (await c.get("v1", "Secret", "cached-ssh"))["metadata"]["labels"]
        assert labels == {"app": "cached", OPERATOR_NAME: "mpi-operator"}


async def test_the_jobs_unlabelled_secret_is_labelled_not_regenerated() -> None:
    async with MPICluster.start() as c:
        await c.create(v2_job("old"))
        first = await c.wait_for(lambda: c.get_or_none("v1", "Secret", "old-ssh"), what="SSH Secret")
        # As an operator before the label wrote it: the cache loses it, the planner creates it.
        await c.patch("v1", "Secret", "old-ssh", {"metadata": {"labels": {OPERATOR_NAME: None}}})
        await c.patch(V2, "MPIJob", "old", {"metadata": {"annotations": {"poke": "1"}}})

        async def relabelled() -> dict | None:
            current = await c.get("v1", "Secret", "old-ssh")
            return current if OPERATOR_NAME in current["metadata"].get("labels", {}) else None

        current = await c.wait_for(relabelled, what="the Secret labelled again")
        assert current["data"] == first["data"]
        assert current["metadata"]["uid"] == first["metadata"]["uid"]


async def test_a_strangers_namesake_secret_is_left_alone() -> None:
    async with MPICluster.start() as c:
        mine = await c.create(secret("taken-ssh"))
        await c.create(v2_job("taken"))
        await c.wait_event("taken", "MPIJobCreated")
        await c.settle(1.0)
        current = await c.get("v1", "Secret", "taken-ssh")
        assert current["data"] == mine["data"]
        assert current["metadata"].get("labels") in (None, {})
        assert "ownerReferences" not in current["metadata"]
