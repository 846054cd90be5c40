"""Probe and metrics endpoints: `/healthz`, `/readyz` and `/metrics`, on upstream's addresses.

Upstream serves metrics on `--metrics-bind-address` (:8080) and probes on
`--health-probe-bind-address` (:8081), two listeners; we keep both so existing Deployments,
ServiceMonitors and NetworkPolicies work unchanged ("0" disables one, as in controller-runtime).
Our defaults bind loopback only (127.0.0.1:8080/:8081): an operator started on a workstation
must not serve the network; the Deployment passes ``:8080``/``:8081`` (every interface).
When both addresses are equal, one listener serves all three paths.

The probe output is controller-runtime's `healthz` handler byte for byte: `ok` on success; on
failure HTTP 500 with one `[+]name ok` / `[-]name failed: reason withheld` line per check, sorted,
then `<endpoint> check failed` (details are withheld because the endpoint is unauthenticated);
`?verbose` lists the checks on success too, `?exclude=name` skips one, and `/readyz/<name>`
runs a single check. Checks may be sync or async and return bool or raise; a check that raises
counts as failed and its error is logged, not served.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

Check = Callable[[], bool | Awaitable[bool]]

LOOPBACK = "127.0.0.1"
DEFAULT_METRICS_ADDRESS = f"{LOOPBACK}:8080"
DEFAULT_PROBE_ADDRESS = f"{LOOPBACK}:8081"
CHECK_TIMEOUT = 5.0
"""A check that hangs must fail the probe, not hang the kubelet's request."""


@dataclass(frozen=True)
class BindAddress:
    """A Go-style `host:port` (":8080" = all interfaces); `disabled` for "0"."""

    host: str | None
    port: int
    disabled: bool = False

    @classmethod
    def parse(cls, text: str) -> BindAddress:
        text = text.strip()
        if text in ("0", ""):
            return cls(None, 0, disabled=True)
        host, sep, port = text.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bind address {text!r} is not host:port")
        host = host.strip("[]")
        return cls(host or None, int(port))


def ping() -> bool:
    """controller-runtime's `healthz.Ping`: the process answers HTTP."""
    return True


class CheckSet:
    """Named checks served as one aggregated endpoint (`/healthz` or `/readyz`)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.checks: dict[str, Check] = {}

    def add(self, name: str, check: Check) -> None:
        if "/" in name or not name:
            raise ValueError(f"invalid check name {name!r}")
        if name in self.checks:
            raise ValueError(f"{self.endpoint} check {name!r} is already registered")
        self.checks[name] = check

    async def run_one(self, name: str) -> bool:
        check = self.checks[name]
        try:
            result = check()
            if inspect.isawaitable(result):
                async with asyncio.timeout(CHECK_TIMEOUT):
                    result = await result
        except Exception as exc:
            log.info("%s check %s failed: %r", self.endpoint, name, exc)
            return False
        if not result:
            log.debug("%s check %s is not passing", self.endpoint, name)
        return bool(result)

    async def aggregated(self, request: web.Request) -> web.Response:
        excluded = set(request.query.getall("exclude", []))
        verbose = "verbose" in request.query
        lines: list[str] = []
        failed = False
        names = sorted(self.checks) or ["ping"]
        for name in names:
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok")
            elif name not in self.checks or await self.run_one(name):
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                lines.append(f"[-]{name} failed: reason withheld")
        if not failed and not verbose:
            return _text("ok", 200)
        if excluded:
            quoted = ", ".join(f'"{n}"' for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        lines.append(f"{self.endpoint} check {'failed' if failed else 'passed'}")
        return _text("\n".join(lines) + "\n", 500 if failed else 200)

    async def single(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.checks:
            return _text("404 page not found\n", 404)
        if await self.run_one(name):
            return _text("ok", 200)
        return _text(f"internal server error: {name} check failed\n", 500)


def _text(body: str, status: int) -> web.Response:
    response = web.Response(text=body, status=status, content_type="text/plain", charset="utf-8")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


class HealthServer:
    """The probe listener and the metrics listener of the operator process."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        probe_address: str = DEFAULT_PROBE_ADDRESS,
        metrics_address: str = DEFAULT_METRICS_ADDRESS,
    ) -> None:
        self.registry = registry
        self.probe_address = BindAddress.parse(probe_address)
        self.metrics_address = BindAddress.parse(metrics_address)
        self.healthz = CheckSet("healthz")
        self.readyz = CheckSet("readyz")
        self.healthz.add("ping", ping)
        self._runners: list[web.AppRunner] = []
        self.probe_port = 0
        self.metrics_port = 0

    def add_healthz_check(self, name: str, check: Check) -> None:
        """A liveness check: failing it gets the container restarted (keep these cheap and rare)."""
        self.healthz.add(name, check)

    def add_readyz_check(self, name: str, check: Check) -> None:
        """A readiness check, e.g. informers synced or webhook serving."""
        self.readyz.add(name, check)

    async def metrics(self, request: web.Request) -> web.Response:
        body = await asyncio.to_thread(generate_latest, self.registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    def _add_probe_routes(self, app: web.Application) -> None:
        for checks in (self.healthz, self.readyz):
            app.router.add_get(f"/{checks.endpoint}", checks.aggregated)
            app.router.add_get(f"/{checks.endpoint}/{{name}}", checks.single)

    async def start(self) -> None:
        """Open the listeners; ports chosen by the OS (port 0) are in `probe_port`/`metrics_port`."""
        # Port 0 asks the OS for a free port: two such addresses are two listeners, not one.
        shared = (
            not self.probe_address.disabled
            and self.probe_address.port != 0
            and self.probe_address == self.metrics_address
        )
        if not self.probe_address.disabled:
            app = web.Application()
            self._add_probe_routes(app)
            if shared:
                app.router.add_get("/metrics", self.metrics)
            self.probe_port = await self._listen(app, self.probe_address)
            if shared:
                self.metrics_port = self.probe_port
        if not self.metrics_address.disabled and not shared:
            app = web.Application()
            app.router.add_get("/metrics", self.metrics)
            self.metrics_port = await self._listen(app, self.metrics_address)

    async def _listen(self, app: web.Application, address: BindAddress) -> int:
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, address.host, address.port)
        await site.start()
        self._runners.append(runner)
        sockets = getattr(site._server, "sockets", None) or ()
        port = int(sockets[0].getsockname()[1]) if sockets else address.port
        paths = sorted({r.canonical for r in app.router.resources()})
        log.info("serving %s on %s:%d", ", ".join(paths), address.host or "*", port)
        return port

    async def stop(self) -> None:
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners = []
        self.probe_port = self.metrics_port = 0

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
