"""The kind registry: one registration per kind, and every table the other layers use derived
from it, so that a kind is served everywhere by being registered."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from kubetrain.api.crds import crd_for
from kubetrain.client.kinds import all_kinds, resolve_kind
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.owned import ERR_RESOURCE_EXISTS
from kubetrain.controller.plan import MetricIncrement
from kubetrain.kinds import registry
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime.metrics import Metrics
from kubetrain.runtime.resources import default_registry
from kubetrain.webhook.handler import routes, webhook_path

RUNTIME = Path(__file__).resolve().parents[3] / "kubetrain" / "runtime"


def test_one_registration_per_kind_in_served_order() -> None:
    jobs = [*KINDS, "MPIJob", "ChainerJob", "Caffe2Job"]
    trainer = ["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"]
    assert [reg.kind for reg in registry.REGISTRY] == [*jobs, *trainer]
    assert list(registry.REGISTERED_KINDS) == [*jobs, *trainer]
    assert list(registry.SERVED_KINDS) == [*jobs, "TrainJob"]  # the runtimes are read, not reconciled
    assert [i.kind for i in all_kinds()] == list(registry.SERVED_KINDS)


def test_mpijob_is_listed_as_its_storage_version_and_owns_children_of_every_version() -> None:
    mpi = registry.BY_KIND["MPIJob"]
    assert [v.api_version for v in mpi.versions] == [
        "kubeflow.org/v1",
        "kubeflow.org/v2beta1",
        "kubeflow.org/v1alpha2",
    ]
    assert registry.SERVED_KINDS["MPIJob"].api_version == "kubeflow.org/v1"
    assert mpi.owner_api_versions() == {"kubeflow.org/v1", "kubeflow.org/v2beta1", "kubeflow.org/v1alpha2"}
    v2 = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "spec": {"mpiImplementation": "Intel"}}
    assert mpi.controller_name_for(v2) == "mpi-job-controller"  # mpi-operator's event recorder component
    assert mpi.event_api_version(v2) == "kubeflow.org/v2beta1"
    assert resolve_kind("mpijobs.kubeflow.org").api_version == "kubeflow.org/v1"


def test_the_resource_table_knows_every_served_version() -> None:
    table = default_registry()
    for info in registry.all_versions():
        rt = table.lookup(info.api_version, info.kind)
        assert (rt.plural, rt.namespaced) == (info.plural, info.kind != "ClusterTrainingRuntime")
        assert table.lookup(info.api_version, info.plural) is rt


def test_webhook_routes_are_the_kinds_registered_with_a_webhook() -> None:
    expected = {webhook_path(reg.info) for reg in registry.REGISTRY if reg.webhook}
    assert set(routes()) == expected
    trainer = {"TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"}
    assert {info.kind for info in routes().values()} == set(KINDS) | trainer


def test_children_come_from_the_registrations() -> None:
    config = ControllerConfig()
    base = {c.key for c in registry.watched_children(config)}
    chainer = {c.key for c in registry.watched_children(config, ["ChainerJob"])}
    assert chainer - base == {c.key for c in registry.BY_KIND["ChainerJob"].children}
    assert "apps/v1/StatefulSet" in chainer


def test_crd_manifests_cover_every_version_of_the_named_kinds() -> None:
    crds = {crd["metadata"]["name"]: crd for crd in registry.crd_manifests(["MPIJob", "TFJob"])}
    assert set(crds) == {"mpijobs.kubeflow.org", "tfjobs.kubeflow.org"}
    assert [v["name"] for v in crds["mpijobs.kubeflow.org"]["spec"]["versions"]] == [
        "v1",
        "v2beta1",
        "v1alpha2",
    ]


def test_offline_rules_only_for_kinds_without_a_webhook() -> None:
    for reg in registry.REGISTRY:
        assert (reg.problems is None) is reg.webhook, reg.kind
    bad = {"apiVersion": "kubeflow.org/v1alpha1", "kind": "Caffe2Job", "metadata": {"name": "c"}, "spec": {}}
    assert registry.has_offline_rules(bad)
    assert registry.offline_problems(bad)
    assert not registry.has_offline_rules({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"})


def test_the_runtime_names_no_kind_no_event_reason_and_no_upstream_counter() -> None:
    names = {reg.kind for reg in registry.REGISTRY} | {reg.plural for reg in registry.REGISTRY}
    prefixes = "|".join(sorted(family.prefix for family in registry.counter_families()))
    words = re.compile(r"\b(" + "|".join(sorted(names | {ERR_RESOURCE_EXISTS})) + r")\b|" + prefixes)
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(RUNTIME.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if words.search(line)
    ]
    assert found == []


def test_a_cluster_scoped_kind_gets_a_cluster_crd() -> None:
    info = replace(registry.SERVED_KINDS["TFJob"], namespaced=False)
    assert crd_for([info])["spec"]["scope"] == "Cluster"
    assert crd_for([registry.SERVED_KINDS["TFJob"]])["spec"]["scope"] == "Namespaced"


def test_printer_columns_come_from_the_kind() -> None:
    info = replace(registry.SERVED_KINDS["TFJob"], printer_columns=((".spec.x", "X", "string"),))
    columns = crd_for([info])["spec"]["versions"][0]["additionalPrinterColumns"]
    assert columns == [{"jsonPath": ".spec.x", "name": "X", "type": "string"}]


def test_upstream_counters_come_from_the_registrations() -> None:
    """The scrape keeps upstream's counter names (dashboards), whichever kinds are served."""
    families = registry.counter_families()
    assert [f.prefix for f in families] == ["training_operator_jobs_", "mpi_operator_jobs_"]
    metrics = Metrics()
    assert list(metrics.job_counters) == [name for f in families for name in f.names()]
    assert "mpi_operator_jobs_created_total" in registry.BY_KIND["MPIJob"].counters[1].names()
    assert metrics.increment(MetricIncrement("mpi_operator_jobs_created_total", {"framework": "x"}))
    assert metrics.increment(MetricIncrement("training_operator_jobs_failed", {"framework": "mpi"}))
    assert not metrics.increment(MetricIncrement("nobody_jobs_created_total", {}))
    sample = metrics.registry.get_sample_value
    assert sample("mpi_operator_jobs_created_total") == 1
    assert sample("training_operator_jobs_failed_total", {"job_namespace": "", "framework": "mpi"}) == 1
