"""Trainer v2's three kinds are one package plus registry lines: their CRDs are upstream v2.3.0's
(shipped, and committed byte for byte in manifests/crds), they are validated and granted; the
operator reconciles TrainJobs (their JobSets) and only reads the runtimes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kubetrain.cli.operator import sidecar_factory
from kubetrain.cli.operator_webhook import WebhookOptions, WebhookSidecar
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import Observed, Plan
from kubetrain.kinds import crds, registry
from kubetrain.kinds.trainjob import REGISTRATIONS
from kubetrain.runtime.resources import default_registry
from kubetrain.runtime.transport import KubeClient

MANIFESTS = Path(__file__).resolve().parents[4] / "manifests"
TRAINER = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")


def test_the_crds_are_upstreams_and_committed_unchanged() -> None:
    by_kind = {crd["spec"]["names"]["kind"]: crd for crd in registry.crd_manifests(TRAINER)}
    assert {k: c["spec"]["scope"] for k, c in by_kind.items()} == {
        "TrainJob": "Namespaced",
        "TrainingRuntime": "Namespaced",
        "ClusterTrainingRuntime": "Cluster",
    }
    for crd in by_kind.values():
        assert crd["spec"]["group"] == "trainer.kubeflow.org"
        assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1"]
        assert crd["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"] == "v0.18.0"
    jobs = by_kind["TrainJob"]["spec"]["versions"][0]
    rules = [r["message"] for r in jobs["schema"]["openAPIV3Schema"].get("x-kubernetes-validations", [])]
    assert "metadata.name must match RFC 1035 DNS label format" in rules  # upstream's CEL, kept
    tree = crds.generate_tree()
    for reg in REGISTRATIONS:
        assert reg.shipped_crd is not None
        committed = (MANIFESTS / "crds" / reg.shipped_crd.file).read_text(encoding="utf-8")
        assert committed == tree[reg.shipped_crd.file] == reg.shipped_crd.text()


def test_trainjobs_are_reconciled_and_the_runtimes_only_read() -> None:
    trainjob, *runtimes = REGISTRATIONS
    assert trainjob.reconciled and trainjob.kind in registry.SERVED_KINDS
    assert [(c.key, c.label_selector) for c in trainjob.children] == [
        ("jobset.x-k8s.io/v1alpha2/JobSet", None),
        ("v1/ConfigMap", None),  # the MPI plugin's hostfile
        ("v1/Secret", "training.kubeflow.org/operator-name"),  # its SSH keys, labelled so
        ("scheduling.x-k8s.io/v1alpha1/PodGroup", None),  # the coscheduling plugin's
        ("scheduling.volcano.sh/v1beta1/PodGroup", None),  # the volcano plugin's
    ]
    assert [c.kind for c in trainjob.observe.context] == ["TrainingRuntime", "ClusterTrainingRuntime"]
    for reg in REGISTRATIONS:
        assert reg.webhook and reg.admit is not None and not reg.counters
        assert reg.kind in registry.REGISTERED_KINDS
    for reg in runtimes:
        assert not reg.reconciled and reg.kind not in registry.SERVED_KINDS
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "r"},
    }
    assert registry.plan(runtime, Observed(), datetime(2026, 1, 1, tzinfo=UTC), ControllerConfig()) == Plan()


def test_the_resource_table_knows_their_scopes() -> None:
    table = default_registry()
    assert not table.lookup("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime").namespaced
    assert table.lookup("trainer.kubeflow.org/v1alpha1", "trainjobs").namespaced


def test_parse_refuses_other_kinds() -> None:
    parse = REGISTRATIONS[0].parse
    job, info, errors = parse(
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "a"}}
    )
    assert job is not None and job.name == "a" and info is REGISTRATIONS[0].info and not errors
    _, info, errors = parse({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"})
    assert (
        info is None and str(errors) == 'kind: Unsupported value: "PyTorchJob": supported values: "TrainJob"'
    )


async def test_the_operators_webhook_serves_the_runtimes_whatever_enable_scheme_says(tmp_path: Path) -> None:
    """The webhook configuration lists their webhooks with failurePolicy Fail: the operator's
    webhook must answer the runtimes' even when `--enable-scheme` (reconciled kinds only) names
    others, and it caches the runtimes a TrainJob's rules look up when it serves TrainJobs."""
    options = WebhookOptions(cert_dir=tmp_path, generate_certificates=False, watch_namespace="team-a")
    factory = sidecar_factory(options)
    assert factory is not None
    client = KubeClient.for_url("http://127.0.0.1:9", "token", qps=0)  # never contacted here
    try:
        (alone,) = factory(client, {"TFJob": registry.SERVED_KINDS["TFJob"]})
        assert isinstance(alone, WebhookSidecar)
        assert {info.kind for info in alone.server.routes.values()} == {"TFJob", *TRAINER[1:]}
        served = {k: registry.SERVED_KINDS[k] for k in ("TFJob", "TrainJob")}
        (sidecar,) = factory(client, served)
        assert isinstance(sidecar, WebhookSidecar)
        assert {info.kind for info in sidecar.server.routes.values()} == {"TFJob", *TRAINER}
        assert sidecar.server.lookup == sidecar.cache.lookup
        namespaces = {plural: i.reflector.namespace for (_, plural), i in sidecar.cache.informers.items()}
        assert namespaces == {"trainingruntimes": "team-a"}  # a Role grants no cluster-scoped kind
    finally:
        await client.close()


def test_the_crds_of_a_trainjob_include_the_runtimes_it_reads() -> None:
    """`kubetrain operator --install-crds` installs what its kinds need: a TrainJob CRD without the
    runtime CRDs would leave every TrainJob with a runtime nobody can create."""
    names = [crd["spec"]["names"]["kind"] for crd in registry.crd_manifests(["TrainJob"])]
    assert sorted(names) == ["ClusterTrainingRuntime", "TrainJob", "TrainingRuntime"]
    assert [crd["spec"]["names"]["kind"] for crd in registry.crd_manifests(["TFJob"])] == ["TFJob"]
