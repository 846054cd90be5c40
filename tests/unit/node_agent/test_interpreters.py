"""Images' interpreter paths and the image map's `executables` (what a container command runs)."""

from __future__ import annotations

import sys
from pathlib import Path

from kubetrain.embedded.node.images import ImageMap


def argv(command: list[str], images: ImageMap | None = None, image: str = "python:3.11") -> list[str]:
    return (images or ImageMap()).lookup(image).argv({"command": command}, image)


def test_interpreter_names_and_missing_image_paths_run_the_local_python(tmp_path: Path) -> None:
    for program in ("python", "python3", "python3.11", "/usr/local/bin/python3", "/opt/conda/bin/python"):
        missing = str(tmp_path / "image-root" / program.lstrip("/"))
        name = program if "/" not in program else missing  # an image path this machine lacks
        assert argv([name, "train.py"]) == [sys.executable, "train.py"], name


def test_an_interpreter_path_that_exists_here_is_run_as_it_is(tmp_path: Path) -> None:
    here = tmp_path / "bin" / "python3"
    here.parent.mkdir()
    here.write_text("#!/bin/sh\n")
    assert argv([str(here), "-V"]) == [str(here), "-V"]
    assert argv(["/usr/local/bin/pythonista"])[0] == "/usr/local/bin/pythonista"  # not an interpreter


def test_a_mapped_python_takes_existing_interpreter_paths_too(tmp_path: Path) -> None:
    here = tmp_path / "python3"
    here.write_text("#!/bin/sh\n")
    images = ImageMap.parse({"images": [{"image": "pytorch/*", "python": "/venvs/torch/bin/python"}]})
    assert argv([str(here), "x.py"], images, "pytorch/pytorch:2")[0] == "/venvs/torch/bin/python"
    assert argv([str(here), "x.py"], images, "busybox")[0] == str(here)  # other images: unmapped


def test_executables_map_any_program_by_its_path() -> None:
    images = ImageMap.parse(
        {
            "images": [
                {
                    "image": "*",
                    "executables": {"/opt/app/bin/launch": "/home/me/launch.sh", "/usr/bin/python3": "/py"},
                }
            ]
        }
    )
    assert argv(["/opt/app/bin/launch", "--fast"], images) == ["/home/me/launch.sh", "--fast"]
    assert argv(["/usr/bin/python3"], images) == ["/py"]


def test_an_mpich_image_runs_mpichs_mpirun_and_others_the_default() -> None:
    """Debian installs MPICH's mpirun as mpirun.mpich beside OpenMPI's; an MPICH image's `mpirun`
    must be MPICH's (its hostfile format and Hydra), an OpenMPI image's the machine's default."""
    images = ImageMap()
    mpich = images.lookup("mpioperator/mpich:latest")
    assert mpich.argv({"command": ["mpirun", "-n", "4", "python", "x.py"]}, "mpioperator/mpich:latest") == [
        "mpirun.mpich",
        "-n",
        "4",
        "python",  # found on the pod's PATH, which the local interpreter's directory leads
        "x.py",
    ]
    assert mpich.local_program("mpiexec") == "mpiexec.mpich"
    assert images.lookup("mpioperator/openmpi:latest").local_program("mpirun") == "mpirun"
