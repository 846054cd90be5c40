"""Keras training under tf.distribute.MultiWorkerMirroredStrategy, configured only by TF_CONFIG.

Demonstrates the TFJob env contract for a workers-only job: every worker gets
TF_CONFIG={"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}, ...}; the strategy
reads it, starts this worker's gRPC server on its own address and all-reduces gradients across
workers (ring collectives over gRPC, CPU). Each worker feeds its own shard of digits; the global
batch is split across workers. The program checks that the loss falls and that both workers end
with the same weights (a cross-worker all-reduce of a checksum), and exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    args = parser.parse_args()

    tf_config = json.loads(os.environ["TF_CONFIG"])
    task = tf_config["task"]
    print(f"worker {task['index']}: TF_CONFIG cluster={tf_config['cluster']} task={task}", flush=True)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    workers = strategy.num_replicas_in_sync
    index = task["index"]

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(x))
    test, train = perm[:297], perm[297:]
    per_worker = len(train) // workers
    shard = train[index * per_worker : (index + 1) * per_worker]  # equal shards: equal step counts

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    local_batch = args.batch_size // workers
    dataset = (
        tf.data.Dataset.from_tensor_slices((x[shard], y[shard]))
        .shuffle(len(shard), seed=index)
        .batch(local_batch, drop_remainder=True)
        .repeat()
        .with_options(options)
    )
    steps = per_worker // local_batch

    with strategy.scope():
        tf.keras.utils.set_random_seed(0)
        model = tf.keras.Sequential(
            [
                tf.keras.Input(shape=(64,)),
                tf.keras.layers.Dense(64, activation="relu"),
                tf.keras.layers.Dense(10),
            ]
        )
        optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    @tf.function
    def train_step(iterator: tf.distribute.DistributedIterator) -> tf.Tensor:
        def step(features: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                per_example = loss_fn(labels, model(features, training=True))
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=args.batch_size)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))  # all-reduced
            return loss

        per_replica = strategy.run(step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    losses = []
    for epoch in range(args.epochs):
        total = sum(float(train_step(iterator)) for _ in range(steps))
        losses.append(total / steps)
        print(f"worker {index}: epoch {epoch + 1}/{args.epochs} global_loss={losses[-1]:.4f}", flush=True)

    @tf.function
    def checksums() -> tuple[tf.Tensor, tf.Tensor]:
        def local() -> tf.Tensor:
            return tf.add_n([tf.reduce_sum(tf.cast(v, tf.float64)) for v in model.trainable_variables])

        per_replica = strategy.run(local)
        return per_replica, strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    mine, total = checksums()  # the reduce is a cross-worker all-reduce
    checksum = float(strategy.experimental_local_results(mine)[0])
    total = float(total)
    identical = abs(total - workers * checksum) <= 1e-9 * max(1.0, abs(total))
    logits = model(x[test], training=False)
    accuracy = float(np.mean(np.argmax(np.asarray(logits), axis=1) == y[test]))
    print(
        f"worker {index}: weight checksum {checksum:.8f} identical_on_all_workers={identical} "
        f"final loss {losses[-1]:.4f} (first epoch {losses[0]:.4f}) test accuracy {accuracy:.3f}",
        flush=True,
    )
    ok = identical and losses[-1] < losses[0]
    if not ok:
        print(f"worker {index}: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
