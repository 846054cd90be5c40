"""`kubetrain operator`: the operator process for a real cluster, with upstream's flags.

Upstream's flags (docs/upstream-behaviour.md#operator-flags) keep their names and meanings, so an
upstream Deployment's `args` work unchanged (`--leader-elect=false` style booleans included). Some
defaults differ on purpose and say so in `--help`: `--controller-threads` (4, not 1),
`--kube-api-qps/--kube-api-burst` (500/1000, not 20/30; see `RuntimeConfig` for why), and every
listener binds loopback (`--metrics-bind-address 127.0.0.1:8080`, `--health-probe-bind-address
127.0.0.1:8081`, `--webhook-host 127.0.0.1`; upstream binds every interface) so that an operator
started on a workstation serves nothing to the network; the Deployment passes the in-cluster
addresses.
Ours add the connection (`--kubeconfig`, `--context`; in-cluster config otherwise),
`--install-crds`, the webhook certificate source and listen host, the lease timings (short
leases make failover tests fast) and the log format.

Flag errors exit 2 with one line naming the flag; start-up problems on the cluster (missing CRDs,
unreachable API server) exit 1 with what to do; SIGTERM/SIGINT shut down gracefully and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, positive_float, positive_int, run_async
from kubetrain.cli.operator_history import add_history_options, recording
from kubetrain.cli.operator_webhook import WebhookOptions, WebhookSidecar
from kubetrain.cli.signals import Interrupts
from kubetrain.client.errors import ConfigError, KubetrainError
from kubetrain.kinds.registry import SERVED_KINDS, unreconciled_webhook_kinds
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.config import RuntimeConfig, UnsupportedScheme, resolve_kinds
from kubetrain.runtime.health import DEFAULT_METRICS_ADDRESS, DEFAULT_PROBE_ADDRESS, LOOPBACK, BindAddress
from kubetrain.runtime.leaderelection import DEFAULT_LEASE_NAME
from kubetrain.runtime.operator import (
    ClientFactory,
    LeaderElectionOptions,
    Operator,
    OperatorError,
    OperatorOptions,
    SidecarFactory,
)
from kubetrain.runtime.transport import KubeClient
from kubetrain.webhook.provisioner import DEFAULT_NAMESPACE, DEFAULT_SECRET_NAME, DEFAULT_SERVICE_NAME
from kubetrain.webhook.server import DEFAULT_CERT_DIR, DEFAULT_PORT

DEFAULT_PYTORCH_TEMPLATE_FILE = "/etc/config/initContainer.yaml"
SERVICE_ACCOUNT_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
_DEFAULTS = RuntimeConfig()


def go_bool(text: str) -> bool:
    """Go's strconv.ParseBool, which upstream's `--flag=value` booleans accept."""
    value = text.strip().lower()
    if value in ("1", "t", "true"):
        return True
    if value in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}: use true or false")


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: expected a number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: use 1-65535, or 0 for a free port")
    return value


def bind_address(text: str) -> str:
    try:
        BindAddress.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid address {text!r}: use host:port or :port, 0 disables"
        ) from None
    return text


def scheme(text: str) -> str:
    try:
        resolve_kinds([text], SERVED_KINDS)
    except UnsupportedScheme as exc:
        known = ", ".join(k.lower() for k in SERVED_KINDS)
        raise argparse.ArgumentTypeError(f"{exc} (supported: {known})") from None
    return text


def register(sub: SubParsers) -> None:
    p = sub.add_parser(
        "operator",
        help=HELP["operator"],
        description="Watch kubeflow.org jobs on a cluster and run them: the process the Deployment in "
        "manifests/ starts. Uses --kubeconfig/$KUBECONFIG/~/.kube/config, else the in-cluster "
        "service account.",
    )
    conn = p.add_argument_group("cluster")
    conn.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster config)",
    )
    conn.add_argument("--context", help="kubeconfig context (default: the current one)")
    conn.add_argument(
        "--namespace",
        default=os.environ.get("KUBEFLOW_NAMESPACE", ""),
        help="watch only this namespace (default: $KUBEFLOW_NAMESPACE, else all namespaces)",
    )
    conn.add_argument(
        "--install-crds",
        nargs="?",
        const=True,
        default=False,
        type=go_bool,
        metavar="BOOL",
        help="create or update the job CRDs at start (needs the right to write CRDs); "
        "--install-crds alone means true",
    )

    ctl = p.add_argument_group("controllers (upstream flags)")
    ctl.add_argument(
        "--enable-scheme",
        action="append",
        default=[],
        type=scheme,
        metavar="KIND",
        help="reconcile this kind (repeatable, case-insensitive, e.g. pytorchjob); default: all "
        "kinds whose CRD is installed",
    )
    ctl.add_argument(
        "--gang-scheduler-name",
        default="",
        metavar="NAME",
        help="'volcano' or a scheduler-plugins scheduler name; runs without gang scheduling "
        "(one error line) if its PodGroup CRD is missing",
    )
    ctl.add_argument(
        "--controller-threads",
        type=positive_int,
        default=_DEFAULTS.workers,
        metavar="N",
        help=f"workers per kind (default: {_DEFAULTS.workers}; upstream's is 1)",
    )
    ctl.add_argument(
        "--kube-api-qps",
        type=positive_float,
        default=_DEFAULTS.kube_api_qps,
        metavar="QPS",
        help=f"client rate limit (default: {_DEFAULTS.kube_api_qps:g}; upstream's is 20)",
    )
    ctl.add_argument(
        "--kube-api-burst",
        type=positive_int,
        default=_DEFAULTS.kube_api_burst,
        metavar="N",
        help=f"client burst (default: {_DEFAULTS.kube_api_burst}; upstream's is 30)",
    )
    ctl.add_argument(
        "--pytorch-init-container-image",
        default=_DEFAULTS.pytorch_init_container_image,
        metavar="IMAGE",
        help="image of the PyTorch workers' wait-for-master init container",
    )
    ctl.add_argument(
        "--pytorch-init-container-template-file",
        default=DEFAULT_PYTORCH_TEMPLATE_FILE,
        metavar="PATH",
        help="its template (Go template syntax; default "
        f"{DEFAULT_PYTORCH_TEMPLATE_FILE}, built-in when that file does not exist)",
    )
    ctl.add_argument(
        "--pytorch-init-container-max-tries",
        type=positive_int,
        default=_DEFAULTS.pytorch_init_container_max_tries,
        metavar="N",
        help="how often the init container looks the master up",
    )
    ctl.add_argument(
        "--mpi-kubectl-delivery-image",
        default="ghcr.io/kubeflow/training-v1/kubectl-delivery:latest",
        metavar="IMAGE",
        help="MPIJob v1 launcher's kubectl-delivery init container image",
    )

    srv = p.add_argument_group("serving (upstream flags)")
    srv.add_argument(
        "--metrics-bind-address",
        type=bind_address,
        default=DEFAULT_METRICS_ADDRESS,
        metavar="ADDR",
        help=f"Prometheus /metrics (default {DEFAULT_METRICS_ADDRESS}, loopback only; :8080 is every "
        "interface, as upstream's default; 0 disables)",
    )
    srv.add_argument(
        "--health-probe-bind-address",
        type=bind_address,
        default=DEFAULT_PROBE_ADDRESS,
        metavar="ADDR",
        help=f"/healthz and /readyz (default {DEFAULT_PROBE_ADDRESS}, loopback only; :8081 is every "
        "interface; 0 disables)",
    )
    srv.add_argument(
        "--webhook-server-port",
        type=port_number,
        default=DEFAULT_PORT,
        metavar="PORT",
        help=f"the webhook's port (default {DEFAULT_PORT}, upstream's)",
    )
    srv.add_argument(
        "--webhook-host",
        default=LOOPBACK,
        metavar="HOST",
        help=f"the webhook's listen address (default {LOOPBACK}; an empty value is every "
        "interface, as controller-runtime's webhook Host; in a cluster the Service needs that)",
    )
    srv.add_argument(
        "--webhook-service-name",
        default=DEFAULT_SERVICE_NAME,
        metavar="NAME",
        help="the webhook Service (certificate DNS name <svc>.<ns>.svc)",
    )
    srv.add_argument(
        "--webhook-secret-name",
        default=DEFAULT_SECRET_NAME,
        metavar="NAME",
        help="the Secret holding the CA and serving certificate",
    )
    srv.add_argument(
        "--webhook-cert-dir",
        type=Path,
        default=DEFAULT_CERT_DIR,
        metavar="DIR",
        help=f"where tls.crt/tls.key live (default {DEFAULT_CERT_DIR})",
    )
    srv.add_argument(
        "--no-webhook-cert-generation",
        action="store_true",
        help="do not generate certificates nor inject caBundle: serve what is mounted in "
        "--webhook-cert-dir (cert-manager)",
    )
    srv.add_argument(
        "--no-webhook",
        action="store_true",
        help="do not serve the admission webhook (e.g. an operator run outside the cluster, "
        "which the API server cannot call)",
    )

    le = p.add_argument_group("leader election (upstream flags, plus the timings)")
    le.add_argument(
        "--leader-elect",
        nargs="?",
        const=True,
        default=False,
        type=go_bool,
        metavar="BOOL",
        help="only the holder of the Lease reconciles; --leader-elect alone means true",
    )
    le.add_argument("--leader-election-id", default=DEFAULT_LEASE_NAME, metavar="NAME", help="the Lease name")
    le.add_argument(
        "--leader-election-namespace",
        default="",
        metavar="NS",
        help="the Lease namespace (default: $MY_POD_NAMESPACE, the pod's namespace, --namespace, "
        "else 'default')",
    )
    le.add_argument(
        "--leader-election-lease-duration",
        type=positive_float,
        default=15.0,
        metavar="SECONDS",
        help="how long a standby waits after the last renewal (default 15s)",
    )
    le.add_argument(
        "--leader-election-renew-deadline",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="how long the leader retries renewing before it gives up (default 10s)",
    )
    le.add_argument(
        "--leader-election-retry-period",
        type=positive_float,
        default=2.0,
        metavar="SECONDS",
        help="time between attempts (default 2s)",
    )

    lg = p.add_argument_group("process")
    lg.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="the least severe level logged (default info)",
    )
    lg.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one object per line (ts, level, logger, msg), for log collectors",
    )
    lg.add_argument(
        "--drain-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM, how long in-flight reconciles may finish (default 10s)",
    )
    add_history_options(p)
    p.set_defaults(handler=_operator)


# -- flags -> options -----------------------------------------------------------------------------


def pod_namespace() -> str:
    """The namespace this process runs in: MY_POD_NAMESPACE, else the service account's."""
    env = os.environ.get("MY_POD_NAMESPACE", "")
    if env:
        return env
    try:
        return SERVICE_ACCOUNT_NAMESPACE_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def read_template(path: str) -> str | None:
    """The init container template; the default path may be absent (built-in template)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        if path == DEFAULT_PYTORCH_TEMPLATE_FILE:
            return None
        raise ConfigError(f"--pytorch-init-container-template-file {path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"--pytorch-init-container-template-file {path}: {exc.strerror or exc}") from None


def operator_options(args: argparse.Namespace) -> OperatorOptions:
    """Everything but the webhook; raises ConfigError for inconsistent values."""
    runtime = RuntimeConfig.from_env(
        namespace=args.namespace or None,
        enabled_schemes=tuple(args.enable_scheme),
        workers=args.controller_threads,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        gang_scheduler_name=args.gang_scheduler_name,
        pytorch_init_container_image=args.pytorch_init_container_image,
        pytorch_init_container_max_tries=args.pytorch_init_container_max_tries,
        pytorch_init_container_template=read_template(args.pytorch_init_container_template_file),
        install_crds=bool(args.install_crds),
        extra={"mpi_kubectl_delivery_image": args.mpi_kubectl_delivery_image},
    )
    leader = LeaderElectionOptions(
        enabled=bool(args.leader_elect),
        name=args.leader_election_id,
        namespace=args.leader_election_namespace or pod_namespace() or args.namespace or "default",
        lease_duration=args.leader_election_lease_duration,
        renew_deadline=args.leader_election_renew_deadline,
        retry_period=args.leader_election_retry_period,
    )
    if leader.enabled:
        try:
            leader.config()
        except ValueError as exc:
            raise ConfigError(f"leader election: {exc}") from None
    return OperatorOptions(
        runtime=runtime,
        metrics_address=args.metrics_bind_address,
        probe_address=args.health_probe_bind_address,
        leader=leader,
        drain_timeout=args.drain_timeout,
    )


def webhook_options(args: argparse.Namespace) -> WebhookOptions | None:
    if args.no_webhook:
        return None
    return WebhookOptions(
        port=args.webhook_server_port,
        host=args.webhook_host or None,
        cert_dir=args.webhook_cert_dir,
        namespace=pod_namespace() or DEFAULT_NAMESPACE,
        service_name=args.webhook_service_name,
        secret_name=args.webhook_secret_name,
        generate_certificates=not args.no_webhook_cert_generation,
        cluster_domain=os.environ.get("CUSTOM_CLUSTER_DOMAIN") or "cluster.local",
        watch_namespace=args.namespace or None,
    )


def client_factory(kubeconfig: str | None, context: str | None) -> ClientFactory:
    """A kubeconfig when one is named or found, else the in-cluster service account."""
    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
    default = Path("~/.kube/config").expanduser()
    if path is None and default.is_file():
        path = str(default)

    async def connect(qps: float, burst: int) -> KubeClient:
        if path is not None and not Path(path).expanduser().is_file():
            raise ConfigError(f"kubeconfig {path}: no such file")
        try:
            if path is None and context is None:
                if not os.environ.get("KUBERNETES_SERVICE_HOST"):
                    raise ConfigError(
                        "no kubeconfig found (--kubeconfig, $KUBECONFIG, ~/.kube/config) "
                        "and not running in a cluster"
                    )
                return KubeClient.in_cluster(qps=qps, burst=burst)
            return await KubeClient.from_kubeconfig(path, context, qps=qps, burst=burst)
        except KubetrainError:
            raise
        except Exception as exc:
            raise ConfigError(
                f"cannot load the cluster configuration from {path or 'the default'}: {exc}"
            ) from None

    return connect


def sidecar_factory(options: WebhookOptions | None) -> SidecarFactory | None:
    if options is None:
        return None
    return lambda client, kinds: [
        WebhookSidecar(client, [*kinds.values(), *unreconciled_webhook_kinds()], options)
    ]


# -- logging --------------------------------------------------------------------------------------


_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """zap-like JSON lines; `extra={...}` fields (e.g. the job key) become top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update({k: v for k, v in vars(record).items() if k not in _RECORD_FIELDS})
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    logging.getLogger("kubetrain").setLevel(logging.NOTSET)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


# -- the command ----------------------------------------------------------------------------------


def _operator(args: argparse.Namespace) -> int:
    configure_logging(args.log_level, args.log_format)
    options = operator_options(args)
    operator = Operator(
        options,
        client_factory(args.kubeconfig, args.context),
        sidecars=sidecar_factory(webhook_options(args)),
    )
    return run_async(_serve(operator, args))


async def _serve(operator: Operator, args: argparse.Namespace) -> int:
    async with Interrupts() as interrupts, recording(args, client_factory(args.kubeconfig, args.context)):
        hurry = asyncio.ensure_future(_exit_on_second_signal(interrupts))
        try:
            return await operator.run(interrupts.first)
        except OperatorError as exc:
            raise KubetrainError(str(exc)) from None
        except ApiError as exc:
            raise KubetrainError(f"the API server refused or could not be reached: {exc}") from None
        finally:
            hurry.cancel()


async def _exit_on_second_signal(interrupts: Interrupts) -> None:
    """A second SIGINT/SIGTERM during the graceful shutdown exits at once."""
    await interrupts.second.wait()
    logging.getLogger(__name__).warning("second signal: exiting without finishing the shutdown")
    os._exit(interrupts.exit_code)
