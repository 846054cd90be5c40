"""mpi4py all-reduce across the ranks mpirun started on the MPIJob's workers.

Every rank prints its rank, host and pod IP and the reduced value; rank 0 checks it (the sum of
rank + 1 over all ranks) and exits non-zero if it is wrong. Also reduces a numpy array (the
buffer path, the one frameworks use) and gathers the hosts so rank 0 can report the placement.
"""

import os
import socket
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
host = socket.gethostname()
ip = os.environ.get("KUBETRAIN_POD_IP") or socket.gethostbyname(host)

total = comm.allreduce(rank + 1, op=MPI.SUM)
vec = np.full(1000, rank + 1, dtype=np.float64)
out = np.empty_like(vec)
comm.Allreduce(vec, out, op=MPI.SUM)
print(
    f"rank {rank}/{size} on host {host} ip {ip}: allreduce(rank + 1) = {total}, "
    f"array allreduce = {out[0]:.1f}",
    flush=True,
)

hosts = comm.gather(host, root=0)
expected = size * (size + 1) // 2
if rank == 0:
    ok = total == expected and bool(np.all(out == expected))
    placement = {h: hosts.count(h) for h in sorted(set(hosts))}
    print(
        f"rank 0: {size} ranks, placement {placement}, expected {expected}, "
        f"got {total}: {'OK' if ok else 'WRONG'}",
        flush=True,
    )
    comm.Barrier()
    sys.exit(0 if ok else 1)
comm.Barrier()
