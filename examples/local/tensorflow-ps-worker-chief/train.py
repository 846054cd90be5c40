"""Parameter-server training (tf.distribute.ParameterServerStrategy) with every TF_CONFIG role.

One program, four roles, chosen by TF_CONFIG's task.type exactly as the TFJob operator sets it:

* ps, worker: start a `tf.distribute.Server` on their own TF_CONFIG address and serve until the
  pod is deleted. TensorFlow servers never return; in a TFJob with a Chief the job succeeds when
  the chief does and cleanPodPolicy Running/All deletes them. As a fallback (cleanPodPolicy None)
  they also exit 0 once the chief has been unreachable for --chief-grace seconds after being seen.
* chief: the coordinator. Builds ParameterServerStrategy from the cluster, places a softmax
  regression on the PS, schedules training steps on the workers with a ClusterCoordinator, and
  writes a checkpoint to --model-dir.
* evaluator: checks its role, waits for the chief's checkpoint of this run, restores it and
  prints the test accuracy (TensorFlow's "sidecar evaluation").

The operator lists the evaluator in TF_CONFIG's cluster (kubeflow/trainer#1633; TensorFlow wants
it absent), so every role drops it before building its cluster spec. --model-dir must be a volume
shared by the chief and the evaluator (job.yaml mounts a hostPath at /model in both): each pod's
working directory is its own, locally as on a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits


def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = load_digits()
    x, y = (data.data / 16.0).astype("float32"), data.target.astype("int64")
    perm = np.random.default_rng(0).permutation(len(x))
    return x[perm[297:]], y[perm[297:]], x[perm[:297]], y[perm[:297]]


class Model(tf.Module):
    def __init__(self) -> None:
        self.w = tf.Variable(tf.zeros([64, 10]), name="w")
        self.b = tf.Variable(tf.zeros([10]), name="b")

    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        return tf.matmul(x, self.w) + self.b


def reachable(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def serve(cluster: tf.train.ClusterSpec, role: str, index: int, chief: str, grace: float) -> int:
    server = tf.distribute.Server(cluster, job_name=role, task_index=index, protocol="grpc", start=True)
    print(f"{role} {index}: tf.distribute.Server up at {server.target}, serving the chief", flush=True)
    seen, last_seen = False, time.monotonic()
    while True:  # server.join() never returns; watch the chief instead
        time.sleep(1)
        if reachable(chief):
            seen, last_seen = True, time.monotonic()
        elif seen and time.monotonic() - last_seen > grace:
            print(f"{role} {index}: chief gone for {grace:.0f}s, exiting", flush=True)
            return 0


def coordinate(cluster: tf.train.ClusterSpec, model_dir: Path, steps: int, with_evaluator: bool) -> int:
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        cluster, task_type="chief", task_id=0, rpc_layer="grpc"
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    print(
        f"chief: connected to {cluster.num_tasks('worker')} workers and {cluster.num_tasks('ps')} ps",
        flush=True,
    )
    x, y, x_test, y_test = digits()

    with strategy.scope():
        model = Model()
        optimizer = tf.keras.optimizers.SGD(0.5)
        step_counter = tf.Variable(0, dtype=tf.int64, trainable=False)
    print(f"chief: variables placed on {model.w.device or 'ps'}", flush=True)

    def dataset_fn() -> tf.data.Dataset:
        return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).repeat().batch(32)

    per_worker = coordinator.create_per_worker_dataset(dataset_fn)
    iterator = iter(per_worker)

    @tf.function
    def train_step(it: tf.distribute.DistributedIterator) -> tf.Tensor:
        def step(features: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, model(features)))
            grads = tape.gradient(loss, [model.w, model.b])
            optimizer.apply_gradients(zip(grads, [model.w, model.b], strict=True))
            step_counter.assign_add(1)
            return loss

        return strategy.run(step, args=next(it))

    first = None
    for start in range(0, steps, 50):
        losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(50)]
        coordinator.join()
        loss = float(np.mean([r.fetch() for r in losses]))
        first = first if first is not None else loss
        print(
            f"chief: steps {start + 50}/{steps} (executed on workers: {int(step_counter.numpy())}) "
            f"loss={loss:.4f}",
            flush=True,
        )

    accuracy = float(np.mean(np.argmax(model(x_test).numpy(), axis=1) == y_test))
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "EVALUATED").unlink(missing_ok=True)
    path = tf.train.Checkpoint(w=model.w, b=model.b).write(str(model_dir / "final"))
    (model_dir / "DONE").write_text(path)
    print(
        f"chief: final loss {loss:.4f} (first {first:.4f}), test accuracy {accuracy:.3f}, checkpoint {path}",
        flush=True,
    )
    if with_evaluator:  # the job ends with the chief: give the evaluator time to report first
        evaluated, deadline = model_dir / "EVALUATED", time.time() + 60
        while not evaluated.exists() and time.time() < deadline:
            time.sleep(0.5)
        print(f"chief: evaluator reported: {evaluated.exists() and evaluated.read_text()}", flush=True)
    return 0 if loss < first else 1


def evaluate(model_dir: Path, started: float, timeout: float) -> int:
    print(f"evaluator: waiting for the chief's checkpoint in {model_dir}", flush=True)
    done = model_dir / "DONE"
    deadline = time.time() + timeout
    while not (done.exists() and done.stat().st_mtime >= started):  # this run's, not a stale one
        if time.time() > deadline:
            print("evaluator: no checkpoint in time", flush=True)
            return 1
        time.sleep(1)
    model = Model()
    tf.train.Checkpoint(w=model.w, b=model.b).read(done.read_text()).assert_consumed()
    _, _, x_test, y_test = digits()
    accuracy = float(np.mean(np.argmax(model(x_test).numpy(), axis=1) == y_test))
    print(f"evaluator: restored {done.read_text()}, test accuracy {accuracy:.3f}", flush=True)
    (model_dir / "EVALUATED").write_text(f"test accuracy {accuracy:.3f}")
    return 0 if accuracy > 0.8 else 1


def main() -> int:
    started = time.time() - 5
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--model-dir", type=Path, default=Path(".model"))
    parser.add_argument("--chief-grace", type=float, default=10)
    parser.add_argument("--eval-timeout", type=float, default=300)
    args = parser.parse_args()

    tf_config = json.loads(os.environ["TF_CONFIG"])
    role, index = tf_config["task"]["type"], int(tf_config["task"]["index"])
    jobs = {k: v for k, v in tf_config["cluster"].items() if k != "evaluator"}
    print(f"{role} {index}: TF_CONFIG roles {sorted(tf_config['cluster'])}", flush=True)
    assert {"chief", "worker", "ps"} <= set(jobs), "this example needs chief, worker and ps replicas"
    cluster = tf.train.ClusterSpec(jobs)
    model_dir = args.model_dir
    if role in ("ps", "worker"):
        return serve(cluster, role, index, jobs["chief"][0], args.chief_grace)
    if role == "chief":
        return coordinate(cluster, model_dir, args.steps, "evaluator" in tf_config["cluster"])
    if role == "evaluator":
        return evaluate(model_dir, started, args.eval_timeout)
    print(f"unexpected role {role}", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
