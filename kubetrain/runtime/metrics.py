"""Prometheus metrics of the operator, in a registry owned by the manager.

Upstream's counters keep their names and labels (docs/upstream-behaviour.md#metrics) so existing
dashboards work; ours add the queue depth and the latencies that say whether the operator is fast.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kubetrain.controller.plan import MetricIncrement

log = logging.getLogger(__name__)

UPSTREAM_COUNTERS = ("created", "deleted", "successful", "failed", "restarted")
MPI_OPERATOR_COUNTERS = ("created", "successful", "failed")
"""The label-less counters of the other upstream operator, which its planner emits
(docs/upstream-behaviour.md#mpi-operator-process)."""

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_CREATE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 45, 90, 180, 600)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.job_counters: dict[str, Counter] = {
            f"training_operator_jobs_{what}_total": Counter(
                f"training_operator_jobs_{what}_total",
                f"Counts number of jobs {what}",
                ["job_namespace", "framework"],
                registry=self.registry,
            )
            for what in UPSTREAM_COUNTERS
        }
        self.mpi_counters: dict[str, Counter] = {
            f"mpi_operator_jobs_{what}_total": Counter(
                f"mpi_operator_jobs_{what}_total",
                f"Counts number of MPI jobs {what}",
                registry=self.registry,
            )
            for what in MPI_OPERATOR_COUNTERS
        }
        self.workqueue_depth = Gauge(
            "kubetrain_workqueue_depth", "Job keys waiting for a worker", ["kind"], registry=self.registry
        )
        self.reconcile_duration = Histogram(
            "kubetrain_reconcile_duration_seconds",
            "Time of one reconcile: plan plus applying its writes",
            ["kind"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.create_to_pods = Histogram(
            "kubetrain_create_to_pods_seconds",
            "From job creationTimestamp until all of its replica pods were created",
            ["kind"],
            buckets=_CREATE_BUCKETS,
            registry=self.registry,
        )
        self.reconcile_errors = Counter(
            "kubetrain_reconcile_errors_total",
            "Reconciles that failed and were requeued",
            ["kind"],
            registry=self.registry,
        )
        self.api_writes = Counter(
            "kubetrain_api_writes_total",
            "Child writes issued by the manager",
            ["verb", "result"],
            registry=self.registry,
        )
        self.events_dropped = Gauge(
            "kubetrain_events_dropped",
            "Events dropped because the recorder queue was full",
            registry=self.registry,
        )

    def increment(self, metric: MetricIncrement) -> bool:
        """Apply a planner's MetricIncrement; unknown names are logged, never raised."""
        name = metric.name if metric.name.endswith("_total") else metric.name + "_total"
        plain = self.mpi_counters.get(name)
        if plain is not None:
            plain.inc()
            return True
        counter = self.job_counters.get(name)
        if counter is None:
            log.warning("unknown metric %s from planner", metric.name)
            return False
        labels = {
            "job_namespace": metric.labels.get("job_namespace", ""),
            "framework": metric.labels.get("framework", ""),
        }
        counter.labels(**labels).inc()
        return True

    def track_queue(self, kind: str, depth: Callable[[], float]) -> None:
        """Evaluate the queue depth at scrape time instead of updating it on every add."""
        self.workqueue_depth.labels(kind=kind).set_function(depth)
