"""A small synchronous parameter server with MXNet's roles, driven only by the MXJob env.

The MXJob operator gives every pod DMLC_ROLE (scheduler | server | worker), DMLC_PS_ROOT_URI and
DMLC_PS_ROOT_PORT (the scheduler's address), DMLC_NUM_SERVER, DMLC_NUM_WORKER, DMLC_WORKER_ID on
workers and MX_CONFIG (docs/upstream-behaviour.md#mxjob). As in MXNet's ps-lite:

* the scheduler listens on DMLC_PS_ROOT_PORT; servers and workers register with it; once all
  DMLC_NUM_SERVER + DMLC_NUM_WORKER nodes are in, it sends everyone the server list, and when
  every worker has finished it tells the servers to stop and exits (the job's success);
* each server listens on a port of its own, advertised as DMLC_NODE_HOST, and holds a slice of
  the weights (softmax regression on digits, split by rows across servers); per step it waits
  for the gradients of all workers, averages them and applies SGD (dist_sync);
* each worker pushes the gradient of its own shard's minibatch to every server and pulls the
  updated weights, then reports its accuracy.

Messages are pickled Python objects over TCP (multiprocessing.connection), one connection per
peer pair, all peers trusted (the authkey is the job's name).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

import numpy as np
from sklearn.datasets import load_digits

FEATURES, CLASSES = 65, 10  # 64 pixels + a bias column


def env(name: str) -> str:
    return os.environ[name]


def authkey() -> bytes:
    return json.dumps(sorted(json.loads(env("MX_CONFIG"))["cluster"])).encode()


def connect(host: str, port: int, timeout: float = 120) -> Connection:
    """Connect, retrying while the peer's process is still starting (pods start in any order)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return Client((host, port), authkey=authkey())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def register(role: str, info: dict[str, Any]) -> tuple[Connection, dict[str, Any]]:
    conn = connect(env("DMLC_PS_ROOT_URI"), int(env("DMLC_PS_ROOT_PORT")))
    conn.send({"role": role, **info})
    return conn, conn.recv()


def scheduler() -> int:
    servers, workers = int(env("DMLC_NUM_SERVER")), int(env("DMLC_NUM_WORKER"))
    listener = Listener(("0.0.0.0", int(env("DMLC_PS_ROOT_PORT"))), authkey=authkey())
    print(
        f"scheduler: listening on :{env('DMLC_PS_ROOT_PORT')}, expecting {servers} servers and "
        f"{workers} workers",
        flush=True,
    )
    nodes: list[tuple[Connection, dict[str, Any]]] = []
    while len(nodes) < servers + workers:
        conn = listener.accept()
        msg = conn.recv()
        nodes.append((conn, msg))
        print(
            f"scheduler: registered {msg['role']} {msg.get('id', '')} {msg.get('addr', '')}".rstrip(),
            flush=True,
        )
    server_addrs = sorted(m["addr"] for _, m in nodes if m["role"] == "server")
    for conn, _ in nodes:
        conn.send({"servers": server_addrs})
    ok = True
    for conn, msg in nodes:  # wait until every worker has finished
        if msg["role"] == "worker":
            report = conn.recv()
            ok = ok and report["ok"]
            print(f"scheduler: worker {msg['id']} finished: {report}", flush=True)
    for conn, msg in nodes:
        if msg["role"] == "server":
            conn.send("stop")
    print(f"scheduler: all workers done (all ok: {ok}), servers stopped", flush=True)
    return 0 if ok else 1


def server() -> int:
    workers = int(env("DMLC_NUM_WORKER"))
    listener = Listener(("0.0.0.0", 0), authkey=authkey())
    host = os.environ.get("DMLC_NODE_HOST") or socket.gethostbyname(socket.gethostname())
    addr = f"{host}:{listener.address[1]}"
    sched, reply = register("server", {"addr": addr})
    index = reply["servers"].index(addr)
    rows = np.array_split(np.arange(FEATURES), len(reply["servers"]))[index]
    weights = np.zeros((len(rows), CLASSES))
    print(f"server {index}: holding weight rows {rows[0]}..{rows[-1]} at {addr}", flush=True)
    lock = threading.Condition()
    state = {"step": 0, "grads": [], "lr": 0.5}

    def handle(conn: Connection) -> None:
        nonlocal weights
        with conn:
            while True:
                try:
                    op, step, payload = conn.recv()
                except EOFError:
                    return
                with lock:
                    if op == "push":  # dist_sync: apply once all workers pushed this step
                        state["grads"].append(payload)
                        if len(state["grads"]) == workers:
                            weights = weights - state["lr"] * np.mean(state["grads"], axis=0)
                            state["grads"], state["step"] = [], state["step"] + 1
                            lock.notify_all()
                    elif op == "pull":
                        lock.wait_for(lambda s=step: state["step"] >= s)
                        conn.send(weights)

    def accept() -> None:
        while True:
            threading.Thread(target=handle, args=(listener.accept(),), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sched.recv()  # "stop" from the scheduler
    print(f"server {index}: stopped by the scheduler after {state['step']} steps", flush=True)
    return 0


def worker(epochs: int, batch: int) -> int:
    wid, workers = int(env("DMLC_WORKER_ID")), int(env("DMLC_NUM_WORKER"))
    sched, reply = register("worker", {"id": wid})
    peers = [connect(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in reply["servers"]]
    slices = np.array_split(np.arange(FEATURES), len(peers))
    print(f"worker {wid}: {len(peers)} servers {reply['servers']}", flush=True)

    digits = load_digits()
    x_all = np.hstack([digits.data / 16.0, np.ones((len(digits.data), 1))])
    y_all = digits.target
    perm = np.random.default_rng(0).permutation(len(x_all))
    test, train = perm[:297], perm[297:]
    per_worker = len(train) // workers
    shard = train[wid * per_worker : (wid + 1) * per_worker]

    def pull(step: int) -> np.ndarray:
        for p in peers:
            p.send(("pull", step, None))
        return np.vstack([p.recv() for p in peers])

    step, w = 0, pull(0)
    losses = []
    for epoch in range(epochs):
        order = np.random.default_rng(epoch * 100 + wid).permutation(shard)
        total = 0.0
        steps = per_worker // batch  # the same on every worker: dist_sync needs equal step counts
        for s in range(steps):
            idx = order[s * batch : (s + 1) * batch]
            logits = x_all[idx] @ w
            prob = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob /= prob.sum(axis=1, keepdims=True)
            total -= float(np.mean(np.log(prob[np.arange(len(idx)), y_all[idx]] + 1e-12)))
            prob[np.arange(len(idx)), y_all[idx]] -= 1.0
            grad = x_all[idx].T @ prob / len(idx)
            for p, rows in zip(peers, slices, strict=True):
                p.send(("push", step, grad[rows]))
            step += 1
            w = pull(step)
        losses.append(total / steps)
        print(
            f"worker {wid}: epoch {epoch + 1}/{epochs} loss={losses[-1]:.4f} (pushed {step} gradients)",
            flush=True,
        )
    accuracy = float(np.mean(np.argmax(x_all[test] @ w, axis=1) == y_all[test]))
    ok = losses[-1] < losses[0]
    print(
        f"worker {wid}: final loss {losses[-1]:.4f} (first {losses[0]:.4f}), test accuracy {accuracy:.3f}",
        flush=True,
    )
    for p in peers:
        p.close()
    sched.send({"loss": round(losses[-1], 4), "accuracy": round(accuracy, 3), "ok": ok})
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=50)
    args = parser.parse_args()
    role = env("DMLC_ROLE")
    task = json.loads(env("MX_CONFIG"))["task"]
    assert task["type"] == role, f"DMLC_ROLE {role} != MX_CONFIG task {task}"
    print(
        f"{role} {task['index']}: DMLC_PS_ROOT_URI={env('DMLC_PS_ROOT_URI')} "
        f"DMLC_PS_ROOT_PORT={env('DMLC_PS_ROOT_PORT')}",
        flush=True,
    )
    if role == "scheduler":
        return scheduler()
    if role == "server":
        return server()
    if role == "worker":
        return worker(args.epochs, args.batch_size)
    print(f"unknown DMLC_ROLE {role}", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
