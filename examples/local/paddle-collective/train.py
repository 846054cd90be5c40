"""PaddlePaddle collective data-parallel training on CPU (gloo), started by paddle.distributed.launch.

The PaddleJob operator injects PADDLE_MASTER (worker-0's address), PADDLE_NNODES and
PADDLE_JOB_ID; `python -m paddle.distributed.launch train.py` reads them, rendezvouses through
worker-0 and starts this program with the trainer env (PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM,
PADDLE_TRAINER_ENDPOINTS, ...). The program checks an all_reduce across trainers, then trains a
small classifier on its shard of digits under paddle.DataParallel (gradients all-reduced), and
checks that the loss falls and that all trainers end with identical weights.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import paddle
import paddle.distributed as dist
from sklearn.datasets import load_digits


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    paddle.set_device("cpu")
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    print(
        f"trainer {rank}/{world}: endpoint {os.environ.get('PADDLE_CURRENT_ENDPOINT')} "
        f"(job {os.environ.get('PADDLE_JOB_ID')}, master {os.environ.get('PADDLE_MASTER')})",
        flush=True,
    )

    probe = paddle.to_tensor([float(rank + 1)])
    dist.all_reduce(probe)
    expected = world * (world + 1) / 2
    print(f"trainer {rank}: all_reduce(rank + 1) = {probe.item()} (expected {expected})", flush=True)
    ok = probe.item() == expected

    digits = load_digits()
    x_all = (digits.data / 16.0).astype("float32")
    y_all = digits.target.astype("int64")
    perm = np.random.default_rng(0).permutation(len(x_all))
    train = perm[297:]
    per_rank = len(train) // world
    shard = train[rank * per_rank : (rank + 1) * per_rank]

    paddle.seed(0)
    model = paddle.DataParallel(
        paddle.nn.Sequential(paddle.nn.Linear(64, 64), paddle.nn.ReLU(), paddle.nn.Linear(64, 10))
    )
    opt = paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9, parameters=model.parameters())
    loss_fn = paddle.nn.CrossEntropyLoss()
    losses = []
    for epoch in range(args.epochs):
        order = np.random.default_rng(epoch).permutation(shard)
        total, steps = 0.0, per_rank // args.batch_size
        for s in range(steps):
            idx = order[s * args.batch_size : (s + 1) * args.batch_size]
            loss = loss_fn(model(paddle.to_tensor(x_all[idx])), paddle.to_tensor(y_all[idx]))
            loss.backward()
            opt.step()
            opt.clear_grad()
            total += loss.item()
        mean = paddle.to_tensor([total / steps])
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
        print(f"trainer {rank}: epoch {epoch + 1}/{args.epochs} global_loss={losses[-1]:.4f}", flush=True)

    checksum = paddle.to_tensor(
        [float(sum(np.abs(p.numpy()).sum(dtype=np.float64) for p in model.parameters()))]
    )
    gathered: list[paddle.Tensor] = []
    dist.all_gather(gathered, checksum)
    sums = [t.item() for t in gathered]
    identical = all(s == sums[0] for s in sums)
    pred = model(paddle.to_tensor(x_all[perm[:297]])).numpy().argmax(axis=1)
    accuracy = float(np.mean(pred == y_all[perm[:297]]))
    print(
        f"trainer {rank}: weight checksums {sums} identical={identical}, final loss {losses[-1]:.4f} "
        f"(first {losses[0]:.4f}), test accuracy {accuracy:.3f}",
        flush=True,
    )
    ok = ok and identical and losses[-1] < losses[0]
    if not ok:
        print(f"trainer {rank}: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
