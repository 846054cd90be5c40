"""Prometheus metrics of the operator, in a registry owned by the manager.

Upstream's counters keep their names and labels (docs/upstream-behaviour.md#metrics) so existing
dashboards work; which counters those are is the kinds' business (each registration names the
`CounterFamily`s its planner increments), so this module spells no operator's or kind's name. Ours
add the queue depth and the latencies that say whether the operator is fast.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kubetrain.controller.plan import MetricIncrement
from kubetrain.kinds.registration import CounterFamily
from kubetrain.kinds.registry import counter_families

log = logging.getLogger(__name__)

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_CREATE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 45, 90, 180, 600)


class Metrics:
    def __init__(
        self, registry: CollectorRegistry | None = None, families: Iterable[CounterFamily] | None = None
    ) -> None:
        """`families`: the upstream counters to expose (default: every registered kind's)."""
        self.registry = registry or CollectorRegistry()
        self.job_counters: dict[str, Counter] = {}
        """Every upstream counter by its full name (`..._total`)."""
        self._labels: dict[str, tuple[str, ...]] = {}
        for family in counter_families() if families is None else families:
            for what, name in zip(family.counters, family.names(), strict=True):
                if name in self.job_counters:
                    continue
                self.job_counters[name] = Counter(
                    name, family.help.format(what=what), list(family.labels), registry=self.registry
                )
                self._labels[name] = family.labels
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
        counter = self.job_counters.get(name)
        if counter is None:
            log.warning("unknown metric %s from planner", metric.name)
            return False
        labels = self._labels[name]
        if labels:
            counter.labels(**{label: metric.labels.get(label, "") for label in labels}).inc()
        else:
            counter.inc()
        return True

    def track_queue(self, kind: str, depth: Callable[[], float]) -> None:
        """Evaluate the queue depth at scrape time instead of updating it on every add."""
        self.workqueue_depth.labels(kind=kind).set_function(depth)
