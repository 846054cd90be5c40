"""An installed kubetrain (a wheel, not this checkout) carries the files it reads at run time.

The node compiles its LD_PRELOAD shims from ``.c`` files shipped as package data, and the embedded
API server loads its discovery data the same way; a package-data rule that misses one breaks only
installed copies, which the rest of the suite (run from the checkout) never sees.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Build a wheel from a copy of the sources (the build writes beside them) and list it."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    src = tmp_path / "src"
    shutil.copytree(
        REPO / "kubetrain", src / "kubetrain", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    out = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            str(src),
            "-w",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = out.glob("kubetrain-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _data_files_in_checkout() -> set[str]:
    """Every file under kubetrain/ that is read at run time rather than imported."""
    root = REPO / "kubetrain"
    return {
        str(path.relative_to(REPO))
        for path in root.rglob("*")
        if path.is_file()
        and path.suffix not in {".py", ".pyc", ".so", ".md"}
        and "__pycache__" not in path.parts
    }


def test_the_wheel_ships_the_shim_sources_and_every_data_file(wheel_names: set[str]) -> None:
    assert {"kubetrain/embedded/node/netshim.c", "kubetrain/embedded/node/podview.c"} <= wheel_names
    assert _data_files_in_checkout() - wheel_names == set()


def test_the_test_doubles_stay_out_of_the_wheel(wheel_names: set[str]) -> None:
    assert not [n for n in wheel_names if "kubelet_sim" in n]
