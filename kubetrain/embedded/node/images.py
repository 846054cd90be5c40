"""Image -> local environment: the container image is NOT run by the local node.

A pod's containers run as processes of this machine, in a local Python environment. By default
that is the environment kubetrain itself runs in: ``python``/``python3``/``python3.X`` as the
first word of a command means ``sys.executable``, and so does an image's absolute interpreter path
(``/usr/local/bin/python3`` in python:* images, ``/opt/conda/bin/python``, ``/usr/bin/python3``)
unless that file exists here; its ``bin`` directory leads ``PATH``. An image map lets users
give each image its own interpreter or virtualenv, env, working directory and entrypoint (the
local node cannot read an image's ENTRYPOINT, so a pod without ``command`` needs one from here).

The map is a YAML or JSON file, named by `NodeConfig.image_map` or ``$KUBETRAIN_IMAGE_MAP``::

    images:
      - image: "pytorch/pytorch*"         # shell-style pattern, first match wins
        python: ~/venvs/torch/bin/python  # replaces a leading `python`/`python3`
        path: [~/venvs/torch/bin]         # put before PATH
        env: {OMP_NUM_THREADS: "1"}
        workingDir: ~/src/project         # when the container sets none
        command: [python, -m, trainer]    # when the container sets none (the image's ENTRYPOINT)
        executables:                      # any program the command names, by its exact path
          /opt/app/bin/launch: ~/src/project/launch.sh
      - image: "*tensorflow*"
        python: /opt/tf/bin/python

The short form ``{"<pattern>": "<python executable>"}`` is accepted too. An entry that names
``python`` takes every interpreter name and path of the image's commands, existing here or not.

Built in, after the user's entries (see `exec` and `shims`): ``*kubectl-delivery*`` (MPIJob v1's
init container) runs ``kubetrain-kubectl-delivery /etc/mpi/hostfile``; an image named ``*mpich*``
(mpi-operator's ``mpioperator/mpich``) runs MPICH's ``mpirun``/``mpiexec`` (Debian's
``mpirun.mpich``, found on PATH) where this machine's default may be OpenMPI's; and a container whose
command is ``sshd`` (v2beta1 workers: ``/usr/sbin/sshd -De``) runs the idle ``kubetrain-sshd``
instead, because ssh between local pods goes through the node agent, not through an sshd.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import StartError

PYTHON_NAMES = frozenset({"python", "python3"})
PYTHON_BASENAME = re.compile(r"python(3(\.\d+)?)?")
"""An interpreter's file name as images have it: python, python3, python3.11."""
SSHD_STAND_IN = "kubetrain-sshd"  # on every pod's PATH, see `shims`


def _expand_user(path: str) -> str:
    return os.path.expandvars(os.path.expanduser(path))


@dataclass(frozen=True)
class LocalEnvironment:
    """How to run a container of a given image on this machine."""

    python: str = sys.executable
    path: tuple[str, ...] = (os.path.dirname(sys.executable),)
    env: Mapping[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    command: tuple[str, ...] = ()
    executables: Mapping[str, str] = field(default_factory=dict)
    """Exact program (first word of a command) -> the local one to run instead."""
    python_mapped: bool = False
    """The image map named `python`: it replaces interpreter paths even when they exist here."""

    def local_program(self, program: str) -> str:
        """What runs for the command's first word `program` on this machine."""
        if program in self.executables:
            return self.executables[program]
        if program in PYTHON_NAMES or ("/" not in program and PYTHON_BASENAME.fullmatch(program) is not None):
            return self.python
        if (
            os.path.isabs(program)
            and PYTHON_BASENAME.fullmatch(os.path.basename(program))
            and (self.python_mapped or not os.path.exists(program))
        ):
            return self.python  # the image's interpreter: /usr/local/bin/python3, /opt/conda/bin/python
        return program

    def argv(self, container: Mapping[str, Any], image: str) -> list[str]:
        """The process argv: command (or the mapped entrypoint) + args, `python` made local."""
        command = list(container.get("command") or self.command)
        args = list(container.get("args") or [])
        if not command:
            raise StartError(
                f'image "{image}" has no entrypoint the local node can run: the container image is not run '
                "locally, so set `command` in the pod spec or an entry `command` in the kubetrain image map"
            )
        argv = [str(a) for a in command + args]
        if os.path.basename(argv[0]) == "sshd":
            argv = [SSHD_STAND_IN]
        argv[0] = self.local_program(argv[0])
        return argv


def _entry(raw: Mapping[str, Any]) -> tuple[str, LocalEnvironment]:
    pattern = str(raw.get("image") or "*")
    python = _expand_user(str(raw["python"])) if raw.get("python") else sys.executable
    path = tuple(_expand_user(str(p)) for p in raw.get("path") or [os.path.dirname(python)])
    env = {str(k): str(v) for k, v in (raw.get("env") or {}).items()}
    wd = _expand_user(str(raw["workingDir"])) if raw.get("workingDir") else None
    executables = raw.get("executables") or {}
    if not isinstance(executables, Mapping):
        raise ValueError(f"image map entry {pattern!r}: `executables` must map program paths to local ones")
    return pattern, LocalEnvironment(
        python=python,
        path=path,
        env=env,
        working_dir=wd,
        command=tuple(str(c) for c in raw.get("command") or ()),
        executables={str(k): _expand_user(str(v)) for k, v in executables.items()},
        python_mapped=bool(raw.get("python")),
    )


class ImageMap:
    """Ordered (pattern, environment) pairs; an image no pattern matches gets `default`."""

    def __init__(
        self,
        entries: list[tuple[str, LocalEnvironment]] | None = None,
        default: LocalEnvironment | None = None,
    ) -> None:
        self.entries = entries or []
        self.default = default or LocalEnvironment()

    @classmethod
    def parse(cls, data: Any) -> ImageMap:
        if data is None:
            return cls()
        if isinstance(data, Mapping) and "images" in data:
            data = data["images"]
        if isinstance(data, Mapping):
            data = [{"image": k, "python": v} for k, v in data.items()]
        if not isinstance(data, list) or not all(isinstance(e, Mapping) for e in data):
            raise ValueError("image map: expected a list of entries under `images`, or {pattern: python}")
        return cls([_entry(e) for e in data])

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> ImageMap:
        """From `path`, else ``$KUBETRAIN_IMAGE_MAP``, else the default (the current environment)."""
        where = path or os.environ.get("KUBETRAIN_IMAGE_MAP")
        if not where:
            return cls()
        text = Path(_expand_user(os.fspath(where))).read_text()
        data = json.loads(text) if str(where).endswith(".json") else yaml.safe_load(text)
        return cls.parse(data)

    def lookup(self, image: str) -> LocalEnvironment:
        for pattern, env in [*self.entries, *BUILTIN_ENTRIES]:
            if fnmatch.fnmatchcase(image, pattern):
                return env
        return self.default


MPICH_PROGRAMS = {"mpirun": "mpirun.mpich", "mpiexec": "mpiexec.mpich"}
"""An MPICH image's `mpirun` is MPICH's; on Debian, beside OpenMPI's, it is named `mpirun.mpich`."""

BUILTIN_ENTRIES: list[tuple[str, LocalEnvironment]] = [
    ("*kubectl-delivery*", LocalEnvironment(command=("kubetrain-kubectl-delivery", "/etc/mpi/hostfile"))),
    ("*mpich*", LocalEnvironment(executables=MPICH_PROGRAMS)),
]
