"""How the manager copes with installs that lack part of what the MPI family needs."""

from __future__ import annotations

from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from kubetrain.api import crds
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime import ApiError, KubeClient, Manager, RuntimeConfig
from kubetrain.runtime.crds import install_crds

from .harness import V2, MPICluster, v2_job

RBAC_KEYS = {
    "v1/ServiceAccount",
    "rbac.authorization.k8s.io/v1/Role",
    "rbac.authorization.k8s.io/v1/RoleBinding",
}


async def test_kinds_without_a_served_crd_are_skipped() -> None:
    """Only the generic CRDs installed (an upstream training-operator install): the default
    kinds include MPIJob, ChainerJob and Caffe2Job, which are left out instead of blocking."""
    server = EmbeddedAPIServer()
    await server.start(port=0)
    client = KubeClient.for_url(server.url, server.token, server.ca_file, qps=0)
    try:
        await install_crds(client, [yaml.safe_load(t) for t in crds.generate(KINDS.values()).values()])
        manager = Manager(
            client, RuntimeConfig(workers=1, cache_sync_timeout=5.0), registry=CollectorRegistry()
        )
        await manager.start()
        try:
            assert manager.ready
            assert set(manager.kinds) == {"TFJob", "PyTorchJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob"}
            # ... and so are the children only they own.
            assert set(manager.child_informers) == {
                "v1/Pod",
                "v1/Service",
                "autoscaling/v2/HorizontalPodAutoscaler",
            }
        finally:
            await manager.stop(drain_timeout=1.0)
    finally:
        await client.close()
        await server.stop()


async def test_child_kinds_the_operator_may_not_list_are_not_watched(monkeypatch: Any) -> None:
    """Without components/launcher-rbac the operator may not list ServiceAccounts, Roles and
    RoleBindings: it starts without watching them, and v2beta1 MPIJobs (SSH) are unaffected."""
    real_pages = KubeClient.list_pages

    async def forbidden_rbac(self: KubeClient, api_version: str, plural: str, *args: Any, **kw: Any) -> Any:
        if plural in ("serviceaccounts", "roles", "rolebindings"):
            raise ApiError(403, "Forbidden", f"{plural} is forbidden")
        async for page in real_pages(self, api_version, plural, *args, **kw):
            yield page

    monkeypatch.setattr(KubeClient, "list_pages", forbidden_rbac)
    async with MPICluster.start() as c:
        assert not RBAC_KEYS & set(c.manager.child_informers)
        await c.create(v2_job("ssh"))
        await c.wait_for(lambda: c.get_or_none("batch/v1", "Job", "ssh-launcher"), what="launcher Job")
        job = await c.get(V2, "MPIJob", "ssh")
        assert job["status"]["conditions"][0]["reason"] == "MPIJobCreated"
