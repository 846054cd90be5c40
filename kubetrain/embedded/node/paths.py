"""Mount-path translation: how a pod's absolute paths reach its volumes without root.

A process cannot mount anything at ``/etc/mpi`` without privileges, and two pods mounting
different ConfigMaps at the same path must not see each other's files. So each volume lives in
the pod's sandbox directory and every *mount path that appears in the container's command, args,
env values and workingDir* is rewritten to the sandbox path: ``/etc/mpi/hostfile`` in
``OMPI_MCA_orte_default_hostfile`` becomes ``<sandbox>/volumes/mpi-job-config/hostfile``, and
``python /scripts/train.py`` runs the ConfigMap-mounted script. A path matches only as a whole
path prefix (``/etc/mpi`` matches ``/etc/mpi/x`` and ``--f=/etc/mpi``, not ``/etc/mpix`` or
``/mnt/etc/mpi``), and the longest mount wins, so nested mounts work.

What is not rewritten (documented limit): paths inside file contents, and paths a program
builds at run time. For those, the container gets ``KUBETRAIN_PATH_MAP`` (JSON: mount path ->
local path) and ``KUBETRAIN_SANDBOX``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PATH_CHAR = r"[A-Za-z0-9._~+@-]"


class PathMap:
    """Rewrites occurrences of container paths into local paths."""

    def __init__(self, mounts: Iterable[tuple[str, str]]) -> None:
        cleaned = {self._norm(src): dst for src, dst in mounts if self._norm(src) != "/"}
        self.mounts = dict(sorted(cleaned.items(), key=lambda kv: -len(kv[0])))
        if self.mounts:
            alternatives = "|".join(re.escape(p) for p in self.mounts)
            self._pattern: re.Pattern[str] | None = re.compile(
                rf"(?<!{_PATH_CHAR})(?<!/)({alternatives})(?=/|$|[^A-Za-z0-9._~+@-])"
            )
        else:
            self._pattern = None

    @staticmethod
    def _norm(path: str) -> str:
        return "/" + path.strip("/") if path.strip("/") else "/"

    def translate(self, text: str) -> str:
        if self._pattern is None or "/" not in text:
            return text
        return self._pattern.sub(lambda m: self.mounts[m.group(1)], text)

    def lookup(self, path: str) -> str | None:
        """The local path for a container path under a mount, else None."""
        norm = self._norm(path)
        for src, dst in self.mounts.items():
            if norm == src or norm.startswith(src + "/"):
                return dst + norm[len(src) :]
        return None
