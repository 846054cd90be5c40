"""The hosts files of a 10,000-replica job: work per Service event must not grow with the pods.

A big job has one Service per replica and, on one node, ~110 running pods. Matching every Service
against every pod on each Service event made creating and deleting 1,000 Services cost ~10^8 label
comparisons and froze the event loop the whole plane shares (issue 17). The work is counted by
the label lookups the network makes on the pods' labels, not timed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from kubetrain.embedded.node.network import PodEndpoint, PodNetwork, ServiceEntry

JOB = "training.kubeflow.org/job-name"
INDEX = "training.kubeflow.org/replica-index"


class CountingLabels(Mapping[str, str]):
    """A pod's labels that count every read the network makes of them."""

    reads = 0

    def __init__(self, labels: dict[str, str]) -> None:
        self._labels = labels

    def __getitem__(self, key: str) -> str:
        CountingLabels.reads += 1
        return self._labels[key]

    def __iter__(self) -> Iterator[str]:
        CountingLabels.reads += 1
        return iter(self._labels)

    def __len__(self) -> int:
        return len(self._labels)

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        CountingLabels.reads += 1
        return self._labels.get(key, default)

    def items(self) -> object:  # type: ignore[override]
        CountingLabels.reads += 1
        return self._labels.items()


def selector(index: int) -> dict[str, str]:
    return {JOB: "big", INDEX: str(index)}


def label_reads(tmp_path: Path, pods: int, services: int) -> int:
    """Label reads for `pods` running pods, then `services` Services created and deleted."""
    net = PodNetwork(tmp_path / f"net-{pods}-{services}", "isolated", "127.99.0.0/16")
    CountingLabels.reads = 0
    for i in range(pods):
        labels = CountingLabels({**selector(i), "training.kubeflow.org/replica-type": "worker"})
        net.set_pod(
            PodEndpoint("default", f"big-worker-{i}", f"127.99.0.{i + 2}", f"big-worker-{i}", "", labels)
        )
    for i in range(services):
        net.set_service(ServiceEntry("default", f"big-worker-{i}", selector(i)))
    for i in range(services):
        net.remove_service("default", f"big-worker-{i}")
    return CountingLabels.reads


def test_service_events_cost_no_scan_of_the_running_pods(tmp_path: Path) -> None:
    pods, services = 110, 1000
    reads = label_reads(tmp_path, pods, services)
    assert reads <= 10 * pods, f"{reads} label reads for {services} Services over {pods} pods"
    # and the cost does not grow with the Services: ten times as many, the same reads
    assert label_reads(tmp_path, pods, 10 * services) == reads


def test_names_still_follow_services_and_pods(tmp_path: Path) -> None:
    net = PodNetwork(tmp_path / "net", "isolated", "127.98.0.0/16")
    net.set_service(ServiceEntry("default", "big-worker-1", selector(1)))  # before its pod runs
    net.set_pod(PodEndpoint("default", "big-worker-1", "127.98.0.2", "big-worker-1", "", selector(1)))
    net.set_service(ServiceEntry("default", "big-worker-2", selector(2)))  # its pod never runs
    hosts = net.hosts_path("default")
    line = next(x for x in hosts.read_text().splitlines() if x.startswith("127.98.0.2 "))
    assert line.split()[1:] == [
        "big-worker-1",
        "big-worker-1.default.svc.cluster.local",
        "big-worker-1.default.svc",
        "big-worker-1.default",
    ]
    assert "big-worker-2" not in hosts.read_text()
    net.remove_service("default", "big-worker-1")
    assert "big-worker-1.default.svc" not in hosts.read_text()
    net.remove_pod("default", "big-worker-1")
    assert "127.98.0.2" not in hosts.read_text()
