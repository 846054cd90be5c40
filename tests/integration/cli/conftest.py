"""Fixtures: a whole local plane (API server, operator, binder, node) on a background thread.

The plane runs on its own event loop so tests can drive it through the synchronous
`kubetrain.Client` and the CLI's `main([...])`, which run their own loops, exactly as users do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cli_plane import PlaneThread


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaneThread]:
    thread = PlaneThread(tmp_path_factory.mktemp("plane-workdir"))
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


@pytest.fixture(scope="module")
def kubeconfig(plane: PlaneThread, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("kubeconfig") / "kubeconfig.yaml"
    return str(plane.plane.write_kubeconfig(path))
