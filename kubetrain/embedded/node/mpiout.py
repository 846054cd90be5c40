"""Whole lines from MPI ranks: the node's own ``PYTHONUNBUFFERED`` is not handed to OpenMPI.

mpirun forwards what it reads from each rank as it comes and interleaves the ranks' chunks in its
own output (the launcher's log). A Python rank under ``PYTHONUNBUFFERED=1`` writes a ``print``'s
text and its newline in two writes, so ranks printing at the same moment merged their lines
(``...= 10.0rank 3/4 ...`` then an empty line). OpenMPI gives its ranks a pty, on which Python
line-buffers: without the variable each line is one write, and still shown at once.

So a process that runs OpenMPI's launcher or daemon (``mpirun``/``mpiexec`` in a container,
``orted`` exec'd by mpirun's ssh or kubectl agent) does not get the ``PYTHONUNBUFFERED`` the node
inherited from its own environment (`NodeConfig.inherit_env`). A value the pod sets itself (its
env, or the image map's) is kept, and then the output is what a cluster shows. What no node can
change: mpirun also splits lines at its read boundaries when a rank writes faster than it reads
(many lines at once), on a cluster as here.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Container, Iterable, MutableMapping

VARIABLE = "PYTHONUNBUFFERED"
MPI_PROGRAMS = frozenset(
    {"mpirun", "mpiexec", "mpirun.openmpi", "mpiexec.openmpi", "orterun", "orted", "prterun", "prted"}
)
"""OpenMPI's: MPICH's Hydra (``mpirun.mpich``, ``hydra_pmi_proxy``) gives its ranks pipes, on which
Python without the variable would hold its output back until it exits."""


def _words(args: Iterable[str]) -> Iterable[str]:
    for arg in args:
        try:
            yield from shlex.split(arg)
        except ValueError:  # an unbalanced quote: plain words are enough to recognise a program
            yield from arg.split()


def launches_mpi(argv: Iterable[str]) -> bool:
    """Whether a command runs an OpenMPI launcher or daemon (also inside ``sh -c "... orted ..."``)."""
    return any(os.path.basename(word) in MPI_PROGRAMS for word in _words(argv))


def drop_inherited_unbuffered(
    env: MutableMapping[str, str], argv: Iterable[str], pod_set: Container[str]
) -> None:
    """Remove ``PYTHONUNBUFFERED`` from the env of an MPI command when only the node set it."""
    if VARIABLE in env and VARIABLE not in pod_set and launches_mpi(argv):
        del env[VARIABLE]
