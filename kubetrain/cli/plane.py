"""The single-machine plane in one process: API server, CRDs, operator, binder, controllers, node.

`kubetrain run` and `kubetrain up` both compose it on the current event loop. Start order makes
each piece find what it needs: the server first, then the CRDs and the operator (its caches
sync against an empty server), then the binder, the batch/v1 Job controller (MPIJob v2beta1
launchers are Jobs), the JobSet controller (Trainer v2's TrainJobs are JobSets), the
StatefulSet controller (ChainerJob worker sets) and the node, which turns bound pods into local
processes. Stop order is the reverse, node first, so that no pod process outlives the plane.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from pathlib import Path
from typing import Any

from kubetrain.api import validation
from kubetrain.api.kinds import KindInfo
from kubetrain.cli.nodesize import NodeSize, never_fits_hint
from kubetrain.client.aio import AsyncClient
from kubetrain.client.errors import KubetrainError
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.apiserver.admission import AdmissionRequest, AdmissionResult
from kubetrain.embedded.apiserver.persistence import PersistenceError
from kubetrain.embedded.jobcontroller import JobController
from kubetrain.embedded.jobset import JobSetController, jobset_admission, jobset_crd
from kubetrain.embedded.node import KubeAPI, NetworkUnavailable, NodeAgent, NodeConfig
from kubetrain.embedded.node.network import NetworkMode
from kubetrain.embedded.podgroups import podgroup_crds
from kubetrain.embedded.scheduler import Binder
from kubetrain.embedded.statefulset import StatefulSetController
from kubetrain.history.recorder import HistoryRecorder
from kubetrain.history.store import HistoryStore
from kubetrain.kinds.registration import Lookup
from kubetrain.kinds.registry import crd_manifests, installed_objects, reconciled_versions
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.config import RuntimeConfig
from kubetrain.runtime.manager import Manager
from kubetrain.runtime.transport import KubeClient
from kubetrain.webhook import review
from kubetrain.webhook.handler import admit, routes

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]


LOCAL_PYTORCH_INIT_TEMPLATE = """
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  resources:
    limits: {cpu: 100m, memory: 20Mi}
    requests: {cpu: 50m, memory: 10Mi}
  command:
  - python
  - -c
  - |
    import socket, sys, time
    for attempt in range({{.MaxTries}} * 10):
        try:
            socket.getaddrinfo("{{.MasterAddr}}", None)
            sys.exit(0)
        except OSError:
            if attempt == 0:
                print("waiting for master {{.MasterAddr}}", flush=True)
            time.sleep(0.2)
    sys.exit(1)
"""
"""PyTorch workers' wait-for-master init container, for the local node.

Upstream's template runs `nslookup` in alpine; the local node runs commands on this machine,
where `nslookup` is often missing and would loop until MaxTries. This one does the same check
with the Python the node runs (`python` maps to it) through the resolver the node configures,
polling every 0.2 s (the same total budget as upstream's 2 s x MaxTries) so local jobs start fast.
"""


_VALIDATED: dict[tuple[str, str], KindInfo] = {(i.api_version, i.kind): i for i in routes().values()}


class KubeflowAdmission:
    """The operator's validating webhooks, called in-process by the embedded API server.

    On a cluster the API server calls `kubetrain.webhook` over TLS for kubeflow.org kinds; the
    local plane has no webhook client, so it calls the same `admit` directly: an invalid job is
    refused at create/update with upstream's webhook name and field errors, exactly as
    `kubectl apply` shows it on a cluster. Subresources (status, scale) are not validated, as the
    webhook configuration's rules list the main resources only. `lookup` reads other objects for
    rules that need them (a TrainJob's runtime), as upstream's webhooks read the manager's cache.
    """

    name = "kubeflow_admission"

    def __init__(self, lookup: Lookup | None = None) -> None:
        self.lookup = lookup

    def __call__(self, request: AdmissionRequest) -> AdmissionResult | None:
        info = _VALIDATED.get((request.api_version, request.kind))
        if info is None or request.subresource:
            return None
        verdict = admit(
            info,
            review.AdmissionRequest(
                uid="",
                operation=request.operation,
                object=request.object,
                old_object=request.old_object,
                kind={"group": request.group, "version": request.version, "kind": request.kind},
                namespace=request.namespace,
                name=request.name,
                dry_run=request.dry_run,
            ),
            self.lookup,
        )
        if verdict.allowed:
            return AdmissionResult.allow(verdict.warnings)
        status = verdict.status
        return AdmissionResult(
            False,
            str(status.get("message") or ""),
            int(status.get("code") or 403),
            str(status.get("reason") or ""),
            validation.webhook_name(info),
            verdict.warnings,
        )


kubeflow_admission = KubeflowAdmission()
"""The webhooks without lookups (rules that read other objects check what the object holds)."""


def store_lookup(server: EmbeddedAPIServer) -> Lookup:
    """Objects read from the embedded server's store, as a webhook reads its client's cache."""

    def lookup(api_version: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        rt = server.catalog.lookup(group, version, plural)
        if rt is None:
            return None
        return server.store.get(rt.key, namespace if rt.namespaced else "", name)

    return lookup


GANG_SCHEDULERS = ("volcano", "scheduler-plugins-scheduler")
"""Gang schedulers the local binder stands in for: Volcano's, and scheduler-plugins' (the name
its coscheduling deployment and upstream's gang tests use)."""


class PlaneError(KubetrainError):
    """The local plane cannot start on this machine (missing system library, port in use...)."""


class LocalPlane:
    """`await plane.start()` ... `await plane.stop()`; `plane.url` is the API server's address.

    `working_dir` is where pod processes run when their container sets no `workingDir` (for
    `kubetrain run`, the job file's directory, so `python train.py` finds the script).
    `state_file` keeps every object in that SQLite file across restarts (None: in memory).
    `node_size` is what the node declares (`--node-cpu`, `--gpus`...; default: the machine).
    `gang_scheduler_name` is `--gang-scheduler-name`: every job gets a PodGroup of that scheduler,
    as from `kubetrain operator --gang-scheduler-name`; without it a job whose pods name one of
    `GANG_SCHEDULERS` gets that scheduler's. The binder answers for all of them.
    `history` records every job the plane sees into that store (None: no history).
    `pods_dir` keeps each pod's own working directory (a view of its job directory, see
    `kubetrain.embedded.node.workdir`); None: under the node's temporary root, gone at stop.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        working_dir: Path | None = None,
        node_name: str = "kubetrain-local",
        operator_workers: int = 4,
        network: NetworkMode = "isolated",
        state_file: Path | None = None,
        node_size: NodeSize | None = None,
        gang_scheduler_name: str = "",
        history: HistoryStore | None = None,
        pods_dir: Path | None = None,
    ) -> None:
        self.history = history
        self.pods_dir = pods_dir
        self.port = port
        self.gang_scheduler_name = gang_scheduler_name
        self.node_size = node_size or NodeSize()
        self.network: NetworkMode = network
        self.working_dir = working_dir or Path.cwd()
        self.node_name = node_name
        self.operator_workers = operator_workers
        try:
            self.admission = KubeflowAdmission(lambda *key: store_lookup(self.server)(*key))
            self.server = EmbeddedAPIServer(
                admission=[self.admission, jobset_admission], state_file=state_file, plain_http=True
            )
        except PersistenceError as exc:
            raise PlaneError(str(exc)) from None
        self.manager: Manager | None = None
        self.agent: NodeAgent | None = None
        self.binder: Binder | None = None
        self.jobs: JobController | None = None
        self.jobsets: JobSetController | None = None
        self.statefulsets: StatefulSetController | None = None
        self.recorder: HistoryRecorder | None = None
        self._kube: KubeClient | None = None
        self._node_api: KubeAPI | None = None
        self._started = False

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def token(self) -> str:
        """The API server's bearer token: every piece of the plane authenticates with it, over
        the server's `plain_url` (users: over TLS, `url`, with the kubeconfig)."""
        return self.server.token

    async def start(self) -> None:
        try:
            try:
                await self.server.start(port=self.port)
            except OSError as exc:
                raise PlaneError(
                    f"cannot listen on 127.0.0.1:{self.port}: {exc.strerror or exc} "
                    "(pick another --port, or 0 for a free one)"
                ) from None
            self._kube = KubeClient.for_url(self.server.plain_url, self.token, qps=0)
            config = RuntimeConfig(
                install_crds=True,
                gang_scheduler_name=self.gang_scheduler_name,
                gang_schedulers_named_by_pods=GANG_SCHEDULERS,
                workers=self.operator_workers,
                cache_sync_timeout=30.0,
                pytorch_init_container_template=LOCAL_PYTORCH_INIT_TEMPLATE,
            )
            self.manager = Manager(
                self._kube, config, crd_manifests=[*crd_manifests(), *podgroup_crds(), jobset_crd()]
            )
            await self.manager.start()
            await self._install_objects()
            self._node_api = KubeAPI.for_url(self.server.plain_url, token=self.token)
            self.binder = Binder(
                self._node_api,
                never_fits=never_fits_hint,
                scheduler_names=tuple(filter(None, (*GANG_SCHEDULERS, self.gang_scheduler_name))),
            )
            self.jobs = JobController(self._node_api)
            self.jobsets = JobSetController(self._node_api)
            self.statefulsets = StatefulSetController(self._node_api)
            try:
                self.agent = NodeAgent(
                    self._node_api,
                    self.node_size.apply(
                        NodeConfig(
                            node_name=self.node_name,
                            working_dir=self.working_dir,
                            network=self.network,
                            pods_dir=self.pods_dir,
                            api_service=self.server.url.removeprefix("https://"),
                        )
                    ),
                )
            except NetworkUnavailable as exc:
                raise PlaneError(
                    f"cannot start the local node: {exc} (`--network host` runs every pod on "
                    "127.0.0.1 instead: single-replica jobs work, replica names do not resolve)"
                ) from None
            await self.agent.start()
            self.server.log_provider = self.agent.log_provider
            await self.binder.start()
            await self.jobs.start()
            await self.jobsets.start()
            await self.statefulsets.start()
            if self.history is not None:
                self.recorder = HistoryRecorder(self._node_api, self.history, reconciled_versions())
                await self.recorder.start()
            self._started = True
        except BaseException:
            await self.stop()
            raise

    async def _install_objects(self) -> None:
        """What upstream's installs ship besides the CRDs (Trainer's public ConfigMap, which the
        Kubeflow SDK reads): created, or brought up to date in a plane restarted from its state."""
        assert self._kube is not None
        for obj in installed_objects():
            try:
                await self._kube.create(obj)
            except ApiError as err:
                if not err.already_exists:
                    raise
                meta = obj["metadata"]
                patch = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
                if patch:
                    await self._kube.merge_patch(
                        obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"], patch
                    )

    def client(self, namespace: str = "default") -> AsyncClient:
        return AsyncClient.for_url(self.server.plain_url, namespace, self.token)

    async def ensure_namespace(self, namespace: str) -> None:
        assert self._kube is not None
        try:
            await self._kube.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        except ApiError as err:
            if not err.already_exists and not err.conflict:
                raise

    def write_kubeconfig(self, path: str | os.PathLike[str], namespace: str = "default") -> Path:
        return self.server.write_kubeconfig(path, namespace=namespace)

    def pod_pids(self) -> list[int]:
        return self.agent.pids() if self.agent is not None else []

    async def stop(self) -> None:
        """Stop the node first (it kills and reaps every pod process), then the rest."""
        if self.agent is not None:
            await _quietly(self.agent.stop(), "node agent")
            for pid in self.agent.pids():  # only left if the agent could not stop in time
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
        if self.binder is not None:
            await _quietly(self.binder.stop(), "binder")
        if self.jobsets is not None:
            await _quietly(self.jobsets.stop(), "JobSet controller")
        if self.jobs is not None:
            await _quietly(self.jobs.stop(), "Job controller")
        if self.statefulsets is not None:
            await _quietly(self.statefulsets.stop(), "StatefulSet controller")
        if self.manager is not None:
            await _quietly(self.manager.stop(drain_timeout=2.0), "operator")
        if self.recorder is not None:  # after the node: it records the pods' last states and logs
            await _quietly(self.recorder.stop(), "job history")
            self.recorder = None
        if self._node_api is not None:
            await _quietly(self._node_api.close(), "node client")
        if self._kube is not None:
            await _quietly(self._kube.close(), "operator client")
        await _quietly(self.server.stop(), "API server")  # also commits its pending state
        self.agent = self.binder = self.manager = self.jobs = self.jobsets = self.statefulsets = None
        self._kube = self._node_api = None


STOP_TIMEOUT_SECONDS = 15.0
"""How long one piece may take to stop before the plane gives up on it and goes on: a stuck
watch or request must never keep `kubetrain run` from exiting."""


async def _quietly(coro: Any, what: str, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    try:
        await asyncio.wait_for(coro, timeout)
    except TimeoutError:
        log.warning("stopping the %s took longer than %gs; going on without it", what, timeout)
    except Exception:
        log.warning("stopping the %s failed", what, exc_info=True)
