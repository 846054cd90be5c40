"""Validating admission for the embedded API server: plugins called on every CREATE and UPDATE.

A real cluster rejects an invalid job at `kubectl apply` time because the operator's validating
webhook is registered with the API server. The embedded server has no webhook client; instead an
embedder passes plain callables (`EmbeddedAPIServer(admission=[plugin])`), and this module calls
them where kube-apiserver calls validating admission:

* after decoding, CRD defaulting and pruning, the built-in validation and name generation (the
  plugin sees the object that would be stored, with uid and name), and before storage, so a
  denied create never consumes the name and a denied update never bumps resourceVersion;
* on the main resource and on subresources (`subresource` says which: a webhook whose rules list
  only `tfjobs` ignores `tfjobs/status`, and a plugin decides the same way);
* on dry-run requests too (the plugins are side-effect free, as `sideEffects: None` webhooks are);
* not on the server's own controllers' writes (garbage collection, finalizer removal): those are
  housekeeping of objects that were admitted already, and blocking them would wedge deletion.

The server stays generic: it knows nothing about the kinds a plugin checks.

A denial is answered the way kube-apiserver's webhook dispatcher answers one (`ToStatusErr` of
k8s.io/apiserver/pkg/admission/plugin/webhook/errors, Kubernetes 1.15-1.34): the webhook's
status code (at least 400; controller-runtime's `Denied` sends 403), its reason (`Forbidden`),
and the message `admission webhook "<name>" denied the request: <message>`, which is what
`kubectl apply` prints after `Error from server (Forbidden): error when creating ...`. The newest
kube-apiserver sources additionally prefix `<resource>.<group> "<name>" is forbidden: ` and fill
`details`; clients that match on the `admission webhook ... denied the request` text work with
both. A plugin that raises is a failing webhook with `failurePolicy: Fail`: 500 InternalError.

Warnings returned by plugins become `Warning: 299 - "<text>"` response headers, which kubectl
prints as `Warning: <text>` (and client-go passes to its warning handler).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import APIError
from .resources import ResourceType

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

CREATE = "CREATE"
UPDATE = "UPDATE"


@dataclass(frozen=True)
class AdmissionRequest:
    """What a validating webhook's AdmissionReview request carries, as plain Python values.

    `object` and `old_object` are the server's own dicts: plugins must treat them as read-only
    (a validating webhook only ever sees a serialized copy, so it cannot change them either).
    """

    operation: str
    group: str
    version: str
    kind: str
    resource: str
    subresource: str
    namespace: str
    name: str
    object: JsonDict
    old_object: JsonDict | None
    dry_run: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True)
class AdmissionResult:
    """A plugin's verdict. `webhook` names the denier in the message (e.g. upstream's
    `validator.pytorchjob.training-operator.kubeflow.org`); empty uses the plugin's name."""

    allowed: bool
    message: str = ""
    code: int = 403
    reason: str = "Forbidden"
    webhook: str = ""
    warnings: tuple[str, ...] = ()

    @classmethod
    def allow(cls, warnings: Iterable[str] = ()) -> AdmissionResult:
        return cls(True, warnings=tuple(warnings))

    @classmethod
    def deny(cls, webhook: str, message: str, warnings: Iterable[str] = ()) -> AdmissionResult:
        return cls(False, message, webhook=webhook, warnings=tuple(warnings))


AdmissionPlugin = Callable[[AdmissionRequest], AdmissionResult | None]
"""Returns None (or an allowing result) to let the request through."""

_warnings: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "kubetrain_admission_warnings", default=None
)


def collect_warnings() -> contextvars.Token[list[str] | None]:
    """Start collecting plugin warnings for the request handled in the current task."""
    return _warnings.set([])


def take_warnings(token: contextvars.Token[list[str] | None]) -> list[str]:
    """The warnings collected since `collect_warnings()`, which is undone."""
    collected = _warnings.get() or []
    _warnings.reset(token)
    return collected


def add_warning(text: str) -> None:
    """Add a warning to the current request's response (no-op outside a request)."""
    sink = _warnings.get()
    if sink is not None:
        sink.append(text)


def warning_header(text: str) -> str:
    """RFC 7234 warning with code 299 and agent "-", as kube-apiserver writes it."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


def plugin_name(plugin: AdmissionPlugin) -> str:
    return str(getattr(plugin, "name", "") or getattr(plugin, "__name__", "") or type(plugin).__name__)


def denial(webhook: str, result: AdmissionResult) -> APIError:
    """The client-facing Status of a denied request (kube-apiserver's `ToStatusErr`)."""
    denied_by = f'admission webhook "{webhook}" denied the request'
    if result.message:
        message = f"{denied_by}: {result.message}"
    elif result.reason:
        message = f"{denied_by}: {result.reason}"
    else:
        message = f"{denied_by} without explanation"
    code = result.code if result.code >= 400 else 400
    return APIError(code, result.reason, message)


class AdmissionChain:
    """The configured plugins, called in order; the first denial wins (as with webhooks)."""

    def __init__(self, plugins: Iterable[AdmissionPlugin] = ()) -> None:
        self.plugins: list[AdmissionPlugin] = list(plugins)

    def __bool__(self) -> bool:
        return bool(self.plugins)

    def add(self, plugin: AdmissionPlugin) -> None:
        self.plugins.append(plugin)

    def admit(
        self,
        rt: ResourceType,
        operation: str,
        obj: JsonDict,
        old: JsonDict | None,
        subresource: str | None,
        dry_run: bool,
    ) -> None:
        """Raise the API error of the first denial; record the warnings of every plugin."""
        if not self.plugins:
            return
        meta = obj.get("metadata") or {}
        request = AdmissionRequest(
            operation=operation,
            group=rt.group,
            version=rt.version,
            kind=rt.kind,
            resource=rt.plural,
            subresource=subresource or "",
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            object=obj,
            old_object=old,
            dry_run=dry_run,
        )
        sink = _warnings.get()
        for plugin in self.plugins:
            name = plugin_name(plugin)
            try:
                result = plugin(request)
            except Exception as exc:
                log.exception("admission plugin %s failed on %s %s", name, operation, rt.plural)
                raise APIError(
                    500,
                    "InternalError",
                    f'Internal error occurred: failed calling webhook "{name}": {exc}',
                    {"causes": [{"message": f'failed calling webhook "{name}": {exc}'}]},
                ) from None
            if result is None:
                continue
            if sink is not None:
                sink.extend(result.warnings)
            if not result.allowed:
                raise denial(result.webhook or name, result)
