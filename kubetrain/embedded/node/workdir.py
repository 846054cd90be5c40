"""Each pod's own working directory: a view of its job directory, where what it writes stays its own.

On a cluster every pod has a filesystem of its own, so two PaddleJob workers both writing
``log/workerlog.0`` never meet. Locally the pods of a job used to run in the job file's
directory itself, and each pod's log showed both trainers. Now a pod whose container sets no
``workingDir`` (it runs in the job directory: ``kubetrain.io/workdir``, the image map's
``workingDir``, else the node's ``--workdir``) runs in ``<pods dir>/<namespace>/<pod>-<uid8>``,
which holds a symlink to each top-level entry of the job directory, made when the pod's first
container starts. ``python train.py`` finds its script and ``data/`` its files; what the pod
creates there (``log/``, ``model.pt``, a checkpoint directory) is a real file of the pod's own.

The pod's containers (init containers too) share the directory, and it outlives container
restarts, like an emptyDir mounted at the working directory: it is the pod's, not the image's.

Limits of a symlink view (no overlay filesystem without root): writing *into* an existing file
or an existing subdirectory of the job directory writes the job's file (shared), and a program
that resolves its own path (``Path(__file__).resolve().parent``) finds the job directory. Files
pods must share are declared as on a cluster: a ``hostPath``, a ``persistentVolumeClaim`` (one
directory per claim on this node) or, within a pod, an ``emptyDir``.

Kept: a pod's directory stays after the pod is deleted and after the node stops, so outputs (a
saved model, logs a program writes) never vanish with the pod; one in which the pod created
nothing (only the view's links left) is removed then. `kubetrain run` names the kept ones.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger(__name__)


def pod_directory(base: Path, namespace: str, name: str, uid: str) -> Path:
    """Where the working directory of pod `namespace/name` (uid `uid`) lives under `base`."""
    return base / namespace / f"{name}-{uid[:8]}"


class PodWorkdir:
    """The working directories of one pod: a view per job directory its containers run in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._views: dict[str, Path] = {}
        """Job directory -> the pod's view of it (the first one at `path`, any other beside it)."""

    def view(self, source: str) -> str:
        """The pod's directory showing `source`'s entries, made (or completed) on first use."""
        target = self._views.get(source)
        if target is None:
            target = self.path
            if self._views:  # a second container running elsewhere (another image's directory)
                digest = hashlib.sha256(source.encode()).hexdigest()[:6]
                target = self.path.with_name(f"{self.path.name}-{digest}")
            self._link_entries(Path(source), target)
            self._views[source] = target
        return str(target)

    @staticmethod
    def _link_entries(source: Path, target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        with os.scandir(source) as entries:
            for entry in entries:
                link = target / entry.name
                if not os.path.lexists(link):  # a restarted pod keeps what it made
                    os.symlink(entry.path, link)

    def prune(self) -> None:
        """Remove each view in which the pod created nothing: only links into its job directory."""
        for source, target in self._views.items():
            try:
                with os.scandir(target) as entries:
                    empty = all(_is_view_link(entry, source) for entry in entries)
            except OSError:
                continue
            if empty:
                shutil.rmtree(target, ignore_errors=True)
            else:
                log.info("pod working directory kept: %s", target)


def _is_view_link(entry: os.DirEntry[str], source: str) -> bool:
    return entry.is_symlink() and os.readlink(entry.path) == os.path.join(source, entry.name)


def kept_directories(base: Path, namespace: str, pods: dict[str, str]) -> dict[str, list[Path]]:
    """For pods `{uid: name}`, the working directories they left under `base` (kept because they
    hold what the pod wrote), by pod name."""
    out: dict[str, list[Path]] = {}
    for uid, name in pods.items():
        main = pod_directory(base, namespace, name, uid)
        found = sorted(p for p in main.parent.glob(f"{main.name}*") if p.is_dir())
        if found:
            out.setdefault(name, []).extend(found)
    return out
