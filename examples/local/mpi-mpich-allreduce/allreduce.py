"""An all-reduce over MPICH, the `mpiImplementation: MPICH` of mpi-operator's MPIJob v2beta1.

mpi4py's wheels link MPICH as `libmpi.so.12` and Debian names it `libmpich.so.12`, so this program
calls the MPI C API of Debian's MPICH directly through ctypes (MPICH's handles are integer
constants of its mpi.h). MPICH's `mpirun` (Hydra) started one proxy per host of the hostfile over
`ssh`, and the proxies started the ranks. Each rank prints its rank, how many ranks share its host
(MPI_COMM_TYPE_SHARED: the ranks of one proxy) and the reduced values; rank 0 checks them (the sum
of rank + 1 over the ranks, an int and a double array; every host holding `--per-host` ranks) and
exits non-zero when one is wrong. (No host names: Hydra forwards the launcher's environment to every
rank, and locally a pod's identity lives in its environment, so a rank would report the launcher's.)
"""

import argparse
import ctypes
import ctypes.util
import sys

MPI_COMM_WORLD = ctypes.c_int(0x44000000)
MPI_INFO_NULL = ctypes.c_int(0x1C000000)
MPI_INT = ctypes.c_int(0x4C000405)
MPI_DOUBLE = ctypes.c_int(0x4C00080B)
MPI_MAX, MPI_MIN, MPI_SUM = ctypes.c_int(0x58000001), ctypes.c_int(0x58000002), ctypes.c_int(0x58000003)
MPI_COMM_TYPE_SHARED = 1

parser = argparse.ArgumentParser()
parser.add_argument("--per-host", type=int, default=2, help="ranks expected on each host (the slots)")
args = parser.parse_args()

library = ctypes.util.find_library("mpich")
if library is None:
    sys.exit("MPICH is not installed here (Debian: apt-get install mpich)")
mpi = ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)


def check(code: int, call: str) -> None:
    if code != 0:
        sys.exit(f"{call} failed with MPI error {code}")


def allreduce_int(value: int, op: ctypes.c_int) -> int:
    mine, out = ctypes.c_int(value), ctypes.c_int()
    check(
        mpi.MPI_Allreduce(ctypes.byref(mine), ctypes.byref(out), 1, MPI_INT, op, MPI_COMM_WORLD),
        "MPI_Allreduce",
    )
    return out.value


check(mpi.MPI_Init(None, None), "MPI_Init")
rank, size = ctypes.c_int(), ctypes.c_int()
check(mpi.MPI_Comm_rank(MPI_COMM_WORLD, ctypes.byref(rank)), "MPI_Comm_rank")
check(mpi.MPI_Comm_size(MPI_COMM_WORLD, ctypes.byref(size)), "MPI_Comm_size")
version = ctypes.create_string_buffer(8192)
length = ctypes.c_int()
check(mpi.MPI_Get_library_version(version, ctypes.byref(length)), "MPI_Get_library_version")
library_version = " ".join(version.value.decode().splitlines()[0].split())

host_comm, host_size = ctypes.c_int(), ctypes.c_int()
split = mpi.MPI_Comm_split_type(
    MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, ctypes.byref(host_comm)
)
check(split, "MPI_Comm_split_type")
check(mpi.MPI_Comm_size(host_comm, ctypes.byref(host_size)), "MPI_Comm_size")

total = allreduce_int(rank.value + 1, MPI_SUM)
Doubles = ctypes.c_double * 1000
vec, out = Doubles(*([rank.value + 1.0] * 1000)), Doubles()
check(mpi.MPI_Allreduce(vec, out, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce")
fewest, most = allreduce_int(host_size.value, MPI_MIN), allreduce_int(host_size.value, MPI_MAX)
print(
    f"rank {rank.value}/{size.value} ({library_version}), {host_size.value} ranks on its host: "
    f"allreduce(rank + 1) = {total}, array allreduce = {out[0]:.1f}",
    flush=True,
)
check(mpi.MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier")
expected = size.value * (size.value + 1) // 2
ok = total == expected and all(v == expected for v in out) and fewest == most == args.per_host
if rank.value == 0:
    hosts = size.value // args.per_host
    verdict = "OK" if ok else "WRONG"
    print(
        f"rank 0: {size.value} ranks over MPICH on {hosts} hosts, expected {expected}, got {total}: {verdict}"
    )
check(mpi.MPI_Finalize(), "MPI_Finalize")
sys.exit(0 if ok else 1)
