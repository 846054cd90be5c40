"""Invalid jobs that bypassed validation (no webhook; the CRD schema allows them) fail with the
validation message while the operator keeps serving every other job, before and after them."""

from __future__ import annotations

import random

import pytest

from tests.builders import JobBuilder, job
from tests.integration.operator.harness import Cluster, PodAudit, conditions
from tests.integration.reliability.lifecycles import lifecycles, run_and_check

SEED = 422

INVALID: list[tuple[JobBuilder, str]] = [
    (
        job("PyTorchJob", "bad-masters").replicas("Master", 2),
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden",
    ),
    (job("TFJob", "bad-container").replicas("Worker", 1, container="main"), "spec.tfReplicaSpecs"),
    (job("JAXJob", "bad-image").replicas("Worker", 2, image=None), "spec.jaxReplicaSpecs"),
    (job("XGBoostJob", "bad-empty"), "spec.xgbReplicaSpecs"),
    (job("MXJob", "bad-schedulers").replicas("Scheduler", 2).replicas("Worker", 1), "spec.mxReplicaSpecs"),
]


@pytest.mark.slow
async def test_invalid_jobs_fail_while_others_are_served() -> None:
    rng = random.Random(SEED)
    before, after = lifecycles(6, rng, prefix="pre"), lifecycles(6, rng, prefix="post")
    async with Cluster.start() as cluster:
        audit = PodAudit()
        await audit.follow(cluster)
        accepted: list[tuple[JobBuilder, str]] = []
        for builder, prefix in INVALID:
            await cluster.create(builder)  # the server takes it: only the schema guards it
            accepted.append((builder, prefix))
        await run_and_check(cluster, before, audit)
        for builder, prefix in accepted:
            failed = await cluster.wait_last_condition(builder.kind, builder.name, "Failed")
            ctype, status, reason, message = conditions(failed)[-1]
            assert (ctype, status, reason) == ("Failed", "True", f"{builder.kind}FailedValidation")
            assert prefix in message, message
            await cluster.wait_events(builder.name, [("Warning", f"{builder.kind}FailedValidation", message)])
            assert await cluster.pod_names(builder.name) == set()
        # Still serving after them.
        await run_and_check(cluster, after, audit)
