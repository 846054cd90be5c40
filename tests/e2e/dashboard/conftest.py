"""Fixtures of the browser tests: Chromium, a screenshot folder, and a `kubetrain up` with its dashboard.

Screenshots go to $KUBETRAIN_DASHBOARD_SCREENSHOTS if set, else to pytest's temporary directory
(printed), never into the repository. Under CI=true a missing browser, Playwright or PyTorch is
an error; elsewhere the tests skip, saying how to install them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_plane import DashboardPlane, launch, missing_browser


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI=true and the dashboard's browser tests cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = missing_browser()
    if reason is not None:
        _unavailable(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def torch_example() -> Path:
    """examples/local/pytorch-ddp-digits: it prints `local_loss=... global_loss=...` each epoch."""
    missing = [m for m in ("torch", "sklearn") if importlib.util.find_spec(m) is None]
    if missing:
        _unavailable(f"the PyTorch example needs {', '.join(missing)}: pip install -r requirements-e2e.txt")
    return Path(__file__).resolve().parents[3] / "examples" / "local" / "pytorch-ddp-digits" / "job.yaml"


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    explicit = os.environ.get("KUBETRAIN_DASHBOARD_SCREENSHOTS")
    directory = Path(explicit) if explicit else tmp_path_factory.mktemp("dashboard-screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    print(f"dashboard screenshots: {directory}")
    return directory


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[DashboardPlane]:
    workdir = tmp_path_factory.mktemp("dashboard-plane")
    up = DashboardPlane(workdir, workdir / "data")
    up.start()
    try:
        yield up
    finally:
        up.stop()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A browser context whose pages must raise no script error (each new page is watched)."""
    opened = browser.new_context(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    opened.on("page", lambda page: page.on("pageerror", lambda error: errors.append(str(error))))
    try:
        yield opened
    finally:
        opened.close()
    assert errors == [], f"the page's scripts failed: {errors}"
