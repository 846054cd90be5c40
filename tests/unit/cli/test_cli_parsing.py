"""Argument parsing of every command, and the exit code of bad arguments."""

from __future__ import annotations

import argparse

import pytest

from kubetrain.cli.common import non_negative_int, positive_float
from kubetrain.cli.main import build_parser, main
from kubetrain.cli.manage import _condition_names


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_run_arguments() -> None:
    args = parse("run", "job.yaml", "-n", "team", "--timeout", "5m", "--keep")
    assert (args.command, args.file, args.namespace, args.timeout, args.keep) == (
        "run",
        "job.yaml",
        "team",
        300.0,
        True,
    )


def test_network_mode() -> None:
    assert parse("run", "job.yaml").network == "isolated"
    assert parse("up", "--network", "host").network == "host"
    assert main(["run", "job.yaml", "--network", "bridge"]) == 2


def test_run_defaults() -> None:
    args = parse("run", "job.yaml")
    assert (args.namespace, args.timeout, args.keep) == ("default", None, False)


def test_up_arguments() -> None:
    args = parse("up", "--port", "6443", "--kubeconfig", "/tmp/k.yaml")
    assert (args.port, args.kubeconfig) == (6443, "/tmp/k.yaml")


def test_get_all_optional() -> None:
    args = parse("get")
    assert (args.kind, args.name, args.output) == (None, None, None)
    args = parse("get", "tfjobs", "mnist", "-o", "yaml", "--context", "c", "-n", "ns", "--kubeconfig", "k")
    assert (args.kind, args.name, args.output, args.context, args.namespace, args.kubeconfig) == (
        "tfjobs",
        "mnist",
        "yaml",
        "c",
        "ns",
        "k",
    )


def test_logs_job_and_pod_forms() -> None:
    args = parse("logs", "pytorchjob", "x", "--replica", "worker-1", "-f", "--tail", "10", "--timestamps")
    assert (args.first, args.name, args.replica, args.follow, args.tail, args.timestamps) == (
        "pytorchjob",
        "x",
        "worker-1",
        True,
        10,
        True,
    )
    args = parse("logs", "x-master-0")
    assert (args.first, args.name) == ("x-master-0", None)


def test_wait_and_delete() -> None:
    args = parse("wait", "jaxjob", "j", "--for", "Succeeded", "--timeout", "30")
    assert (args.for_, args.timeout) == (["Succeeded"], 30.0)
    args = parse("delete", "jaxjob", "j", "--cascade", "background", "--wait")
    assert (args.cascade, args.wait) == ("background", True)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nope"],
        ["get", "-o", "xml"],
        ["run"],
        ["run", "f", "--timeout", "soon"],
        ["run", "f", "--timeout", "-1"],
        ["logs", "tfjob", "x", "--tail", "-3"],
        ["delete", "tfjob"],
    ],
)
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_durations() -> None:
    assert positive_float("90") == 90.0
    assert positive_float("90s") == 90.0
    assert positive_float("1.5m") == 90.0
    assert positive_float("1h") == 3600.0
    with pytest.raises(argparse.ArgumentTypeError, match="must be greater than 0"):
        positive_float("0")
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration"):
        positive_float("abc")
    assert non_negative_int("0") == 0
    with pytest.raises(argparse.ArgumentTypeError):
        non_negative_int("x")


def test_condition_names_accept_kubectl_spelling() -> None:
    assert _condition_names(None) == ("Succeeded", "Failed")
    assert _condition_names(["condition=succeeded", "running"]) == ("Succeeded", "Running")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "kubetrain" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--container-log-max-files", "1"), "container log max files must be > 1, got 1"),
        (("--container-log-max-size", "ten"), "--container-log-max-size 'ten' is not a size"),
    ],
)
def test_node_log_rotation_settings_are_checked(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["node", *argv]) == 2
    assert message in capsys.readouterr().err


def test_node_max_pods_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["node", "--max-pods", "0"]) == 2
    assert "invalid --max-pods 0: use 1 or more" in capsys.readouterr().err
