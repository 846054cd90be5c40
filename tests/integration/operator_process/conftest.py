"""Fixtures of the operator-process tier: an embedded API server in its own thread, and processes.

The server runs on its own event loop (`ServerThread`) because the operators under test are
separate processes that must keep talking to it while a test blocks, e.g. in `Proc.stop()`. The
server has the local plane's admission plugin, so it rejects invalid jobs as a cluster with the
operator's webhook does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from kubetrain.cli.plane import kubeflow_admission
from kubetrain.embedded.apiserver import ServerThread
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.operator import crd_manifests
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.procs import OperatorProc, Proc, start_node


@pytest.fixture
def apiserver() -> Iterator[ServerThread]:
    server = ServerThread(admission=[kubeflow_admission])
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(apiserver: ServerThread, tmp_path: Path) -> Path:
    return apiserver.server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
async def kube(apiserver: ServerThread) -> AsyncIterator[KubeClient]:
    client = KubeClient.for_url(apiserver.url, apiserver.token, apiserver.ca_file, qps=0)
    yield client
    await client.close()


@pytest.fixture
async def crds(kube: KubeClient) -> None:
    """The job CRDs, installed the way `--install-crds` does."""
    await install_crds(kube, crd_manifests(KINDS))


class Processes:
    """Starts operator and node subprocesses; stops whatever is left at teardown."""

    def __init__(self, kubeconfig: Path, tmp_path: Path) -> None:
        self.kubeconfig = kubeconfig
        self.tmp_path = tmp_path
        self.started: list[Proc] = []

    def operator(self, *extra: str, name: str = "operator") -> OperatorProc:
        proc = OperatorProc(self.kubeconfig, self.tmp_path / f"{name}-{len(self.started)}.log", *extra)
        self.started.append(proc)
        return proc

    def node(self, name: str = "kubetrain-e2e", bind: bool = True) -> Proc:
        workdir = self.tmp_path / f"work-{name}"
        workdir.mkdir(exist_ok=True)
        proc = start_node(self.kubeconfig, self.tmp_path / f"node-{name}.log", workdir, name, bind)
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            proc.stop()


@pytest.fixture
def procs(
    apiserver: ServerThread, kubeconfig: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Processes]:
    """Depends on `apiserver`, so the processes stop before the server they talk to."""
    processes = Processes(kubeconfig, tmp_path)
    yield processes
    processes.stop_all()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for proc in processes.started:
            print(f"--- {proc.log_path.name} ---\n{proc.log()[-4000:]}")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keep each phase's report on the item, so `procs` can print the logs of a failed test."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)
