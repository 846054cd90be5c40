"""Build the node's LD_PRELOAD shims from their C sources, once per version, per user.

The sources (``netshim.c``, ``podview.c``) ship as package data beside these modules and are
read through importlib.resources, so an installed wheel works as well as a checkout.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path


class ShimUnavailable(RuntimeError):
    """A shim cannot be built here (no C compiler, or the build failed); its caller says what pods lose."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kubetrain"


def compile_preload(stem: str, library: str, cache_dir: Path | None = None) -> Path:
    """The path of the LD_PRELOAD library built from ``<stem>.c``, compiling it on first use.

    Cached per source digest (a changed source is rebuilt) and built in a temporary directory then
    renamed, so agents starting in parallel never load a half-written file.
    """
    source = resources.files(__package__).joinpath(f"{stem}.c").read_text()
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    target_dir = (cache_dir or default_cache_dir()) / f"{stem}-{digest}"
    target = target_dir / library
    if target.exists():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        raise ShimUnavailable(
            f"kubetrain's local pod network needs a C compiler once, to build its {stem} LD_PRELOAD "
            "library (install gcc, e.g. `apt-get install gcc`), or start the node with network mode 'host'"
        )
    target_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target_dir) as tmp:
        src = Path(tmp) / f"{stem}.c"
        src.write_text(source)
        out = Path(tmp) / library
        proc = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-o", str(out), str(src), "-ldl"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise ShimUnavailable(f"building {stem} with {compiler} failed: {proc.stderr.strip()}")
        os.replace(out, target)
    return target
