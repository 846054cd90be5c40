"""Which commands lose the node's inherited PYTHONUNBUFFERED (see kubetrain/embedded/node/mpiout.py)."""

from __future__ import annotations

import pytest

from kubetrain.embedded.node.mpiout import drop_inherited_unbuffered, launches_mpi


@pytest.mark.parametrize(
    "argv",
    [
        ["mpirun", "-np", "4", "python", "train.py"],
        ["/usr/bin/mpiexec", "-n", "2", "python", "x.py"],
        ["mpirun.openmpi", "python", "x.py"],
        ["/bin/sh", "-c", 'PATH=/usr/bin:$PATH ; export PATH ; /usr/bin/orted -mca ess "env"'],
        ["/bin/sh", "-c", "orted --hnp-topo-sig 'unbalanced"],
    ],
)
def test_openmpi_launchers_and_daemons_are_recognised(argv: list[str]) -> None:
    assert launches_mpi(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "train.py"],
        ["/bin/sh"],
        ["sh", "-c", "echo mpirunner; ./ported"],
        ["torchrun", "x.py"],
        ["mpirun.mpich", "-np", "2", "python", "x.py"],  # Hydra: ranks on pipes, not a pty
        ["/bin/sh", "-c", "/usr/bin/hydra_pmi_proxy --control-port launcher:3000"],
    ],
)
def test_other_commands_are_not(argv: list[str]) -> None:
    assert not launches_mpi(argv)


def test_only_the_nodes_own_value_is_dropped() -> None:
    inherited = {"PYTHONUNBUFFERED": "1", "PATH": "/bin"}
    drop_inherited_unbuffered(inherited, ["mpirun", "python", "x.py"], pod_set=set())
    assert inherited == {"PATH": "/bin"}
    set_by_pod = {"PYTHONUNBUFFERED": "1"}
    drop_inherited_unbuffered(set_by_pod, ["mpirun", "python", "x.py"], pod_set={"PYTHONUNBUFFERED"})
    assert set_by_pod == {"PYTHONUNBUFFERED": "1"}
    not_mpi = {"PYTHONUNBUFFERED": "1"}
    drop_inherited_unbuffered(not_mpi, ["python", "x.py"], pod_set=set())
    assert not_mpi == {"PYTHONUNBUFFERED": "1"}
