"""JAX multi-controller training on CPU, configured by the JAXJob env contract or by Kubeflow
Trainer v2's JAX plugin (the program of examples/local/trainjob-jax too).

Every pod gets COORDINATOR_ADDRESS, COORDINATOR_PORT, NUM_PROCESSES and PROCESS_ID
(docs/upstream-behaviour.md#jaxjob), or, in a TrainJob, JAX_COORDINATOR_ADDRESS (host:port),
JAX_NUM_PROCESSES and JAX_PROCESS_ID;
`jax.distributed.initialize` turns them into one runtime whose global device list spans all
processes (process 0 hosts the coordination service). Then:

1. a cross-process psum (pmap over all devices of all processes) that must equal the known sum;
2. data-parallel softmax regression on digits: the batch is a global array sharded over the
   processes' devices (each process supplies only its own rows), the jitted step computes the
   global gradient with XLA collectives (gloo on CPU), and the loss must fall;
3. a check that all processes end with identical parameters (process_allgather).
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from sklearn.datasets import load_digits


def topology() -> tuple[str, int, int]:
    """(coordinator host:port, process count, this process's id) from either env contract: a
    TrainJob's JAX plugin sets JAX_COORDINATOR_ADDRESS (host:port), JAX_NUM_PROCESSES and
    JAX_PROCESS_ID; a JAXJob sets COORDINATOR_ADDRESS, COORDINATOR_PORT, NUM_PROCESSES, PROCESS_ID."""
    env = os.environ
    if "JAX_COORDINATOR_ADDRESS" in env:
        return env["JAX_COORDINATOR_ADDRESS"], int(env["JAX_NUM_PROCESSES"]), int(env["JAX_PROCESS_ID"])
    address = f"{env['COORDINATOR_ADDRESS']}:{env['COORDINATOR_PORT']}"
    return address, int(env["NUM_PROCESSES"]), int(env["PROCESS_ID"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    coordinator, num_processes, process_id = topology()
    jax.distributed.initialize(
        coordinator_address=coordinator, num_processes=num_processes, process_id=process_id
    )
    pid, nproc = jax.process_index(), jax.process_count()
    print(
        f"process {pid}/{nproc}: coordinator {coordinator}, local devices {jax.local_device_count()}, "
        f"global devices {jax.device_count()}",
        flush=True,
    )

    # 1. psum across processes: every local device contributes (process_id + 1).
    local = jnp.full((jax.local_device_count(),), pid + 1.0)
    total = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")(local)
    expected = sum((p + 1.0) * jax.local_device_count() for p in range(nproc))
    print(f"process {pid}: psum over processes = {float(total[0])} (expected {expected})", flush=True)
    ok = float(total[0]) == expected

    # 2. Data-parallel softmax regression on a batch sharded over all processes.
    digits = load_digits()
    x_all = (digits.data / 16.0).astype(np.float32)
    y_all = digits.target.astype(np.int32)
    rows = (len(x_all) // (8 * nproc)) * 8 * nproc  # divisible by the device count
    mine = slice(pid * rows // nproc, (pid + 1) * rows // nproc)  # this process' rows only
    mesh = Mesh(np.array(jax.devices()), ("data",))
    data = NamedSharding(mesh, PartitionSpec("data"))
    x = jax.make_array_from_process_local_data(data, x_all[mine], (rows, 64))
    y = jax.make_array_from_process_local_data(data, y_all[mine], (rows,))
    replicated = NamedSharding(mesh, PartitionSpec())
    params = jax.device_put({"w": jnp.zeros((64, 10)), "b": jnp.zeros((10,))}, replicated)

    def loss_fn(p: dict[str, jax.Array], xb: jax.Array, yb: jax.Array) -> jax.Array:
        logits = xb @ p["w"] + p["b"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], axis=1))

    @jax.jit
    def step(p: dict[str, jax.Array], xb: jax.Array, yb: jax.Array) -> tuple[dict[str, jax.Array], jax.Array]:
        loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb)  # the mean over the GLOBAL batch
        return jax.tree.map(lambda a, g: a - 1.0 * g, p, grads), loss

    first = last = 0.0
    for i in range(args.steps):
        params, loss = step(params, x, y)
        last = float(loss)  # a replicated scalar: readable on every process
        first = first or last
        if i % 10 == 0 or i == args.steps - 1:
            print(f"process {pid}: step {i + 1}/{args.steps} global loss {last:.4f}", flush=True)
    ok = ok and last < first

    # 3. Identical parameters everywhere.
    local_w = np.asarray(params["w"].addressable_data(0))
    gathered = multihost_utils.process_allgather(np.abs(local_w).sum(dtype=np.float64)[None])
    identical = bool(np.all(gathered == gathered[0]))
    accuracy = float(
        np.mean(np.argmax(x_all @ local_w + np.asarray(params["b"].addressable_data(0)), axis=1) == y_all)
    )
    print(
        f"process {pid}: weight checksums {gathered.ravel().tolist()} identical={identical}, "
        f"final loss {last:.4f} (first {first:.4f}), train accuracy {accuracy:.3f}",
        flush=True,
    )
    ok = ok and identical
    jax.distributed.shutdown()
    if not ok:
        print(f"process {pid}: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
