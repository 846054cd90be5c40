"""`kubetrain operator` flags: upstream's names and defaults, ours, and clear errors for bad values."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pytest

from kubetrain.cli import operator as cli_operator
from kubetrain.cli.main import build_parser, main
from kubetrain.client.errors import ConfigError
from kubetrain.runtime.health import BindAddress
from kubetrain.runtime.leaderelection import DEFAULT_LEASE_NAME


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["operator", *argv])


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KUBEFLOW_NAMESPACE", "MY_POD_NAMESPACE", "CUSTOM_CLUSTER_DOMAIN", "POD_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cli_operator, "SERVICE_ACCOUNT_NAMESPACE_FILE", Path("/nonexistent/namespace"))


def test_defaults_are_upstreams_where_they_matter() -> None:
    args = parse()
    options = cli_operator.operator_options(args)
    webhook = cli_operator.webhook_options(args)

    # Upstream's ports, on loopback only (upstream: every interface); the Deployment says ":8080".
    assert options.metrics_address == "127.0.0.1:8080"
    assert options.probe_address == "127.0.0.1:8081"
    assert webhook is not None and webhook.host == "127.0.0.1"
    assert options.leader.enabled is False
    assert options.leader.name == DEFAULT_LEASE_NAME == "1ca428e5.training-operator.kubeflow.org"
    assert options.runtime.namespace is None
    assert options.runtime.enabled_schemes == ()
    assert options.runtime.gang_scheduler_name == ""
    assert options.runtime.pytorch_init_container_image == "alpine:3.10"
    assert options.runtime.pytorch_init_container_max_tries == 100
    delivery = options.runtime.extra["mpi_kubectl_delivery_image"]
    assert delivery == "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
    assert options.runtime.install_crds is False
    assert webhook is not None
    assert (webhook.port, webhook.service_name, webhook.secret_name, webhook.namespace) == (
        9443,
        "training-operator",
        "training-operator-webhook-cert",
        "kubeflow",
    )
    assert str(webhook.cert_dir) == "/tmp/k8s-webhook-server/serving-certs"


def test_our_throughput_defaults_differ_from_upstream_on_purpose() -> None:
    options = cli_operator.operator_options(parse())

    assert options.runtime.workers == 4
    assert (options.runtime.kube_api_qps, options.runtime.kube_api_burst) == (500.0, 1000)


def test_upstream_flags_set_the_runtime_config() -> None:
    args = parse(
        "--enable-scheme",
        "PyTorchJob",
        "--enable-scheme",
        "tfjob",
        "--namespace",
        "ml",
        "--gang-scheduler-name",
        "volcano",
        "--controller-threads",
        "2",
        "--kube-api-qps",
        "20",
        "--kube-api-burst",
        "30",
        "--pytorch-init-container-image",
        "busybox",
        "--pytorch-init-container-max-tries",
        "5",
        "--mpi-kubectl-delivery-image",
        "kd:1",
    )
    runtime = cli_operator.operator_options(args).runtime

    assert runtime.enabled_schemes == ("PyTorchJob", "tfjob")
    assert runtime.namespace == "ml"
    assert runtime.gang_scheduler_name == "volcano"
    assert (runtime.workers, runtime.kube_api_qps, runtime.kube_api_burst) == (2, 20.0, 30)
    assert runtime.pytorch_init_container_image == "busybox"
    assert runtime.pytorch_init_container_max_tries == 5
    assert runtime.extra["mpi_kubectl_delivery_image"] == "kd:1"


def test_namespace_defaults_to_kubeflow_namespace_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEFLOW_NAMESPACE", "team-a")

    assert cli_operator.operator_options(parse()).runtime.namespace == "team-a"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), False),
        (("--leader-elect",), True),
        (("--leader-elect=true",), True),
        (("--leader-elect=false",), False),
        (("--leader-elect=1",), True),
    ],
)
def test_go_style_booleans(argv: tuple[str, ...], expected: bool) -> None:
    assert cli_operator.operator_options(parse(*argv)).leader.enabled is expected


def test_leader_election_namespace_and_timings(monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse(
        "--leader-elect",
        "--namespace",
        "ml",
        "--leader-election-lease-duration",
        "4s",
        "--leader-election-renew-deadline",
        "3",
        "--leader-election-retry-period",
        "0.5",
    )
    leader = cli_operator.operator_options(args).leader
    assert (leader.namespace, leader.lease_duration, leader.renew_deadline, leader.retry_period) == (
        "ml",
        4.0,
        3.0,
        0.5,
    )
    monkeypatch.setenv("MY_POD_NAMESPACE", "kubeflow")
    assert cli_operator.operator_options(args).leader.namespace == "kubeflow"
    explicit = parse("--leader-election-namespace", "locks")
    assert cli_operator.operator_options(explicit).leader.namespace == "locks"
    monkeypatch.delenv("MY_POD_NAMESPACE")
    assert cli_operator.operator_options(parse()).leader.namespace == "default"


def test_inconsistent_lease_timings_are_a_config_error() -> None:
    args = parse(
        "--leader-elect", "--leader-election-lease-duration", "5", "--leader-election-renew-deadline", "6"
    )

    with pytest.raises(ConfigError, match="lease_duration must be greater than renew_deadline"):
        cli_operator.operator_options(args)


def test_webhook_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MY_POD_NAMESPACE", "ops")
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "corp.local")
    args = parse(
        "--webhook-server-port",
        "0",
        "--webhook-cert-dir",
        str(tmp_path),
        "--webhook-service-name",
        "svc",
        "--webhook-secret-name",
        "sec",
        "--no-webhook-cert-generation",
    )
    webhook = cli_operator.webhook_options(args)

    assert webhook is not None
    assert (webhook.port, webhook.cert_dir) == (0, tmp_path)
    assert (webhook.service_name, webhook.secret_name) == ("svc", "sec")
    assert (webhook.namespace, webhook.cluster_domain, webhook.generate_certificates) == (
        "ops",
        "corp.local",
        False,
    )
    assert cli_operator.webhook_options(parse("--no-webhook")) is None


def test_listeners_serve_every_interface_only_when_told() -> None:
    args = parse("--metrics-bind-address=:9090", "--health-probe-bind-address=:9091", "--webhook-host=")
    options = cli_operator.operator_options(args)
    webhook = cli_operator.webhook_options(args)

    assert BindAddress.parse(options.metrics_address) == BindAddress(None, 9090)
    assert BindAddress.parse(options.probe_address) == BindAddress(None, 9091)
    assert webhook is not None and webhook.host is None
    assert cli_operator.webhook_options(parse("--webhook-host=10.0.0.5")).host == "10.0.0.5"  # type: ignore[union-attr]


def test_init_container_template_file(tmp_path: Path) -> None:
    template = tmp_path / "init.yaml"
    template.write_text("- name: init\n")
    read = cli_operator.operator_options(parse("--pytorch-init-container-template-file", str(template)))
    assert read.runtime.pytorch_init_container_template == "- name: init\n"
    assert cli_operator.operator_options(parse()).runtime.pytorch_init_container_template is None
    with pytest.raises(ConfigError, match="no such file"):
        cli_operator.operator_options(parse("--pytorch-init-container-template-file", str(tmp_path / "x")))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--enable-scheme", "foojob"), "scheme foojob is not supported yet"),
        (("--metrics-bind-address", "8080"), "invalid address '8080'"),
        (("--webhook-server-port", "70000"), "invalid port '70000'"),
        (("--controller-threads", "0"), "must be 1 or more"),
        (("--kube-api-qps", "-1"), "must be greater than 0"),
        (("--leader-elect=maybe",), "invalid boolean 'maybe'"),
        (("--log-level", "loud"), "invalid choice: 'loud'"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["operator", *argv]) == 2
    assert message in capsys.readouterr().err


def test_json_logs_carry_extra_fields() -> None:
    record = logging.LogRecord(
        "kubetrain.runtime.manager", logging.INFO, __file__, 1, "reconciled %s", ("x",), None
    )
    record.job = "PyTorchJob/default/x"

    line = json.loads(cli_operator.JsonFormatter().format(record))

    assert line["level"] == "info" and line["logger"] == "kubetrain.runtime.manager"
    assert line["msg"] == "reconciled x" and line["job"] == "PyTorchJob/default/x"
