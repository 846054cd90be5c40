"""`kubetrain up` as a user starts it, with its dashboard, for the browser tests; and the browser.

The plane is a subprocess on a data directory of the test's own; the dashboard's URL is read from
what `up` prints. Every process it starts carries a marker in its environment, so one that
outlives it is found (`tests.procscan`). The browser is the machine's Chromium driven by
Playwright's Python package (never `playwright install`): under CI=true a missing one is an error.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from tests.procscan import processes_with

REPO = Path(__file__).resolve().parents[3]
MARKER_ENV = "KUBETRAIN_DASHBOARD_E2E_MARKER"
INSTALL_HINT = (
    "install them with `apt-get install -y chromium` (scripts/install-system-deps --tests) and "
    "`pip install -r requirements-e2e.txt` (playwright; no `playwright install`)"
)
DASHBOARD_LINE = re.compile(r"^dashboard: (http://127\.0\.0\.1:\d+/)", re.MULTILINE)


def chromium() -> str | None:
    """The machine's Chromium: $KUBETRAIN_CHROMIUM, else the first on PATH."""
    explicit = os.environ.get("KUBETRAIN_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return f"the Python package playwright is not installed: {INSTALL_HINT}"
    if chromium() is None:
        return f"no Chromium on this machine (chromium on PATH or $KUBETRAIN_CHROMIUM): {INSTALL_HINT}"
    return None


class DashboardPlane:
    """`kubetrain up --dashboard-port 0` on `data_dir`; `start()`, `kubetrain(...)`, `stop()`."""

    def __init__(self, workdir: Path, data_dir: Path) -> None:
        self.workdir = workdir
        self.data_dir = data_dir
        self.kubeconfig = workdir / "kubeconfig.yaml"
        self.marker = uuid.uuid4().hex
        self.log_path = workdir / f"kubetrain-up-{self.marker[:8]}.log"
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        env = {**os.environ, MARKER_ENV: self.marker, "KUBECONFIG": str(self.kubeconfig)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        return env

    def start(self, timeout: float = 90.0) -> str:
        argv = [
            *(sys.executable, "-m", "kubetrain.cli.main", "up", "--port", "0"),
            *("--kubeconfig", str(self.kubeconfig), "--workdir", str(self.workdir)),
            *("--data-dir", str(self.data_dir), "--dashboard-port", "0"),
        ]
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=self.env()
            )
        deadline = time.monotonic() + timeout
        while True:
            found = DASHBOARD_LINE.search(self.output())
            if found and self.kubeconfig.is_file():
                self.url = found.group(1)
                return self.url
            if self._proc.poll() is not None:
                raise AssertionError(f"kubetrain up exited with {self._proc.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(
                    f"kubetrain up printed no dashboard URL in {timeout:.0f}s:\n{self.output()}"
                )
            time.sleep(0.1)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kubetrain(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "kubetrain.cli.main", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
            env=self.env(),
        )
        assert done.returncode == 0, f"kubetrain {' '.join(args)}: {done.stdout}{done.stderr}"
        return done

    def stop(self, timeout: float = 60.0) -> None:
        """Ctrl-C, as a user stops it: it must exit 0, without a traceback or a process left."""
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        leftovers = processes_with(f"{MARKER_ENV}={self.marker}")
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        output = self.output()
        assert proc.returncode == 0, f"kubetrain up exited with {proc.returncode}:\n{output}"
        assert "Traceback" not in output, output
        assert leftovers == [], f"processes outlived kubetrain up: {leftovers}"


def launch(playwright: Any) -> Any:
    """Headless Chromium, the machine's."""
    return playwright.chromium.launch(executable_path=chromium(), headless=True)


def record_changes(page: Any) -> None:
    """Before any script of the page runs: note, at every change of the page, the job states its
    badges show and the log pane's text, so a test can tell what the page showed while a job ran
    (Running, then Succeeded; log lines before the last) without racing it."""
    page.add_init_script(
        """
        window.__seen = [];
        const note = () => {
          const badges = [...document.querySelectorAll("#job-head .badge, tr.job-row .badge")];
          const log = document.querySelector("#log");
          const chart = document.querySelector('figure.chart[data-metric="global_loss"] polyline');
          const entry = {
            states: badges.map((b) => b.dataset.state),
            log: log ? log.textContent : "",
            points: chart ? chart.dataset.values.split(",").length : 0,
            memory: [...document.querySelectorAll("#pods-table td.memory")].map((td) => td.textContent),
          };
          const previous = window.__seen[window.__seen.length - 1];
          if (!previous || JSON.stringify(previous) !== JSON.stringify(entry)) window.__seen.push(entry);
        };
        new MutationObserver(note).observe(document, { subtree: true, childList: true, characterData: true,
          attributes: true });
        """
    )


def seen(page: Any) -> list[dict[str, Any]]:
    return list(page.evaluate("window.__seen"))


def screenshot(page: Any, directory: Path, name: str) -> Path:
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
