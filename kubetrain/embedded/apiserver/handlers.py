"""HTTP layer: URL parsing, verb dispatch, query parameters and response framing.

One catch-all aiohttp route: resources are dynamic (CRDs), so paths are parsed here the way the
apiserver's RequestInfoResolver does, then dispatched to the REST storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubetrain.kube.labels import LabelSelector, SelectorError

from . import admission, discovery, errors, rbac
from .access import CURRENT_USER
from .decoding import check_delete_options, check_size, decode_json, decode_yaml, unrecognized
from .errors import APIError
from .faults import FaultInjector
from .jsonutil import dumps
from .listopts import dry_run, list_version, parse_resource_version, too_large
from .logs import LogOptions, LogProvider, LogUnavailable
from .resources import BUILTINS, ResourceType
from .rest import APPLY_PATCH, DeleteOptions, ObjectStorage
from .selection import FieldSelector
from .serviceaccounts import TokenError, TokenIssuer
from .store import TooOld
from .tables import to_table, wants_table
from .watch import Watcher, WatchHub

log = logging.getLogger(__name__)

JSON = "application/json"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Go's unicode.IsControl (category Cc)."""
DEFAULT_WATCH_TIMEOUT = 1800


@dataclass
class ResourceRequest:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    watch: bool


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type=JSON, headers=headers)


def _error(err: APIError) -> web.Response:
    return _json(err.status(), err.code, err.headers or None)


_BUILTIN_GROUPS = frozenset(rt.group for rt in BUILTINS)


def _plain_not_found(path: str, err: APIError) -> bool:
    """Whether kube-apiserver's delegation chain ends in the mux's plain-text 404 for this path:
    outside /api and the built-in groups' handlers (unknown groups, custom resources' groups)."""
    if err.code != 404 or err.details != {}:
        return False
    segs = [s for s in path.split("/") if s]
    if not segs or segs[0] == "api":
        return False
    return segs[0] != "apis" or (len(segs) >= 2 and segs[1] not in _BUILTIN_GROUPS)


def _not_found_page() -> web.Response:
    return web.Response(status=404, text="404 page not found\n", content_type="text/plain")


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "t", "yes")


def _int(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(f'invalid value "{raw}" for parameter {name}') from None


def _body(raw: bytes, content_type: str, kind: str) -> Any:
    """The decoded body of a create or update of ``kind``: what kube-apiserver's decoder refuses
    (over 3 MiB, not JSON/YAML, nested beyond 10,000) is a 4xx before anything else runs."""
    check_size(raw)
    if not raw.strip():
        raise errors.bad_request("the body of the request was empty")
    if "yaml" in content_type:
        return decode_yaml(raw, kind)
    try:
        return decode_json(raw)
    except ValueError as exc:
        raise unrecognized(kind, f"couldn't get version/kind; json parse error: {exc}", raw) from None


class APIHandler:
    """Serves every request; state lives in the REST storage, the watch hub and the fault injector."""

    def __init__(
        self,
        rest: ObjectStorage,
        hub: WatchHub,
        faults: FaultInjector,
        log_provider: Callable[[], LogProvider | None],
        address: Callable[[], str],
        tokens: TokenIssuer | None = None,
    ) -> None:
        self.tokens = tokens
        self.rest = rest
        self.catalog = rest.catalog
        self.hub = hub
        self.faults = faults
        self._log_provider = log_provider
        self._address = address

    async def handle(self, request: web.Request) -> web.StreamResponse:
        token = admission.collect_warnings()
        try:
            response = await self._dispatch(request)
        except APIError as exc:
            response = _not_found_page() if _plain_not_found(request.path, exc) else _error(exc)
        except (ConnectionError, asyncio.CancelledError):
            raise  # the client went away mid-response (BrokenPipe, reset): nothing to answer or log
        except Exception as exc:
            log.exception("request %s %s failed", request.method, request.path)
            response = _error(errors.internal(str(exc)))
        finally:
            warnings = admission.take_warnings(token)
        if warnings and not response.prepared:
            for text in warnings:
                if not _CONTROL.search(text):  # NewWarningHeader refuses them; kube drops the warning
                    response.headers.add("Warning", admission.warning_header(text))
        return response

    # --- routing -------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        segs = [s for s in request.path.split("/") if s]
        if request.method not in ("GET", "HEAD") and (len(segs) < 2 or segs[0] not in ("api", "apis")):
            raise errors.method_not_supported("", "", request.method.lower())
        special = self._special(segs)
        if special is not None:
            return special
        req = self._parse(segs)
        if req is None:
            raise errors.path_not_found()
        return await self._resource(request, req)

    def _special(self, segs: list[str]) -> web.StreamResponse | None:
        if not segs:
            return _json({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]})
        head = segs[0]
        if len(segs) == 1 and head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        if segs == ["version"]:
            return _json(discovery.VERSION_INFO)
        if segs == ["api"]:
            return _json(discovery.api_versions(self._address()))
        if segs == ["api", "v1"]:
            return _json(discovery.resource_list(self.catalog, "", "v1"))
        if segs == ["apis"]:
            return _json(discovery.api_group_list(self.catalog))
        if head == "apis" and len(segs) == 2:
            group = discovery.api_group(self.catalog, segs[1])
            if group is None:
                raise errors.path_not_found()
            return _json(group)
        if head == "apis" and len(segs) == 3:
            res = discovery.resource_list(self.catalog, segs[1], segs[2])
            if res is None:
                raise errors.path_not_found()
            return _json(res)
        if head not in ("api", "apis"):
            raise errors.path_not_found()
        return None

    def _parse(self, segs: list[str]) -> ResourceRequest | None:
        if segs[0] == "api" and len(segs) > 2 and segs[1] == "v1":
            group, version, rest = "", "v1", segs[2:]
        elif segs[0] == "apis" and len(segs) > 3:
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            return None
        watch = False
        if rest[0] == "watch":
            watch, rest = True, rest[1:]
        namespace = None
        if (
            rest
            and rest[0] == "namespaces"
            and len(rest) >= 3
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            return None
        rt = self.catalog.lookup(group, version, rest[0])
        if rt is None or (namespace is not None and not rt.namespaced):
            return None
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rt.subresources:
            return None
        return ResourceRequest(rt, namespace, name, sub, watch)

    @staticmethod
    def _verb(request: web.Request, req: ResourceRequest) -> str:
        method = request.method
        if method in ("GET", "HEAD"):
            if req.name is None:
                return "watch" if req.watch or _flag(request.query.get("watch")) else "list"
            return "watch" if req.watch else "get"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "deletecollection" if req.name is None else "delete"
        return method.lower()

    async def _resource(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        verb = self._verb(request, req)
        rt = req.rt
        fault = self.faults.check(verb, rt, req.subresource, req.namespace, req.name or "")
        if fault is not None:
            raise fault
        self._authorize(request, verb, req)
        handler = self._route(verb, req) if req.subresource or verb in rt.verbs else None
        if handler is None:
            action = f"{verb} {req.subresource}" if req.subresource else verb
            raise errors.method_not_supported(rt.group, rt.plural, action)
        return await handler(request, req)

    def _authorize(self, request: web.Request, verb: str, req: ResourceRequest) -> None:
        """RBAC for service accounts (see `rbac`); the server's own token may do everything."""
        user = CURRENT_USER.get()
        if user is None or user.service_account is None:
            return
        args = (verb, req.rt.group, req.rt.plural, req.subresource, req.namespace or "", req.name or "")
        if not rbac.allowed(self.rest.store, user, *args):
            raise rbac.forbidden(user, *args)

    def _route(
        self, verb: str, req: ResourceRequest
    ) -> Callable[[web.Request, ResourceRequest], Awaitable[web.StreamResponse]] | None:
        sub, rt = req.subresource, req.rt
        namespaced_ok = req.namespace is not None or not rt.namespaced
        if sub == "log":
            return self._logs if verb == "get" else None
        if sub == "binding" or (rt.plural == "bindings" and rt.group == ""):
            return self._binding if verb == "create" else None
        if sub == "token":
            return self._token if verb == "create" and self.tokens is not None else None
        if sub == "scale":
            return {"get": self._get_scale, "update": self._put_scale, "patch": self._patch_scale}.get(verb)
        if sub in ("status", None):
            if sub == "status" and verb not in ("get", "update", "patch"):
                return None
            if verb == "create" and (req.name is not None or not namespaced_ok):
                return None
            table: dict[str, Callable[[web.Request, ResourceRequest], Awaitable[web.StreamResponse]]] = {
                "get": self._get,
                "list": self._list,
                "watch": self._watch,
                "create": self._create,
                "update": self._update,
                "patch": self._patch,
                "delete": self._delete,
                "deletecollection": self._delete_collection,
            }
            if verb in ("update", "patch", "delete") and req.name is None:
                return None
            if sub is None and verb not in req.rt.verbs:
                return None
            return table.get(verb)
        return None

    def _ns(self, req: ResourceRequest) -> str:
        return req.namespace or "" if req.rt.namespaced else ""

    # --- reads ---------------------------------------------------------------------------

    async def _get(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        obj = self.rest.get(req.rt, self._ns(req), req.name or "")
        if wants_table(request):
            return _json(to_table(req.rt, [obj], self.rest.store.resource_version, request))
        return _json(obj)

    def _selectors(
        self, request: web.Request, rt: ResourceType, ns: str | None = None, name: str | None = None
    ) -> tuple[LabelSelector, FieldSelector]:
        ls_text = request.query.get("labelSelector", "")
        fs_text = request.query.get("fieldSelector", "")
        try:
            labels = LabelSelector.parse(ls_text)
            fields = FieldSelector.parse(fs_text)
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from None
        bad = fields.unsupported(rt.selectable_fields, bool(rt.field_selectors) and rt.custom is None)
        if bad:
            raise errors.bad_request(bad)
        if name is not None:
            fields = FieldSelector([*fields.terms, ("metadata.name", True, name)])
        return labels, fields

    async def _list(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        rt = req.rt
        labels, fields = self._selectors(request, rt)
        version = list_version(
            request.query.get("resourceVersion", ""), request.query.get("resourceVersionMatch", "")
        )
        if version.rv is not None and version.rv > self.rest.store.resource_version:
            await self._wait_for_rv(version.rv)
        result = self.rest.list_objects(
            rt,
            req.namespace if rt.namespaced else None,
            labels,
            fields,
            limit=_int(request.query, "limit") or 0,
            continue_token=request.query.get("continue", ""),
            exact_rv=version.rv if version.exact else None,
        )
        if wants_table(request):
            return _json(to_table(rt, result.items, result.resource_version, request))
        meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
            meta["remainingItemCount"] = result.remaining
        items = result.items
        if rt.custom is None:
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return _json(
            {"kind": rt.list_kind_name, "apiVersion": rt.api_version, "metadata": meta, "items": items}
        )

    # --- watch ---------------------------------------------------------------------------

    async def _watch(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        rt, q = req.rt, request.query
        labels, fields = self._selectors(request, rt, name=req.name)
        ns = req.namespace if rt.namespaced else None
        timeout = _int(q, "timeoutSeconds") or DEFAULT_WATCH_TIMEOUT
        transform = None
        if rt.custom is not None and rt.custom.conversion != "None":

            def transform(o: dict[str, Any]) -> dict[str, Any]:
                return self.rest.convert(rt, o)

        watcher = Watcher(
            rt, ns, labels, fields, _flag(q.get("allowWatchBookmarks")), self.hub.max_queue, transform
        )
        rv_text = q.get("resourceVersion", "")
        initial: list[bytes] = []
        send_initial = q.get("sendInitialEvents")
        replay = None
        if rv_text not in ("", "0") and not _flag(send_initial):
            since = parse_resource_version(rv_text, watch=True)
            if since > self.rest.store.resource_version:
                watcher.min_rv = since  # like the watch cache: nothing until the store gets there
                replay = []
            else:
                try:
                    replay = self.rest.store.events_since(since, rt.key)
                except TooOld as exc:
                    watcher.fail(errors.expired(str(exc)))
                    replay = []
        else:
            objs = self.rest.list_objects(rt, ns, labels, fields).items
            initial = [dumps({"type": "ADDED", "object": o}) + b"\n" for o in objs]
        if replay:
            for ev in replay:
                watcher.offer(ev)
        if _flag(send_initial) and watcher.bookmarks:
            watcher.bookmark(self.rest.store.resource_version, initial_end=True)
        if not watcher.closed:
            self.hub.register(rt.key, watcher)
        try:
            return await self._stream(request, watcher, initial, timeout)
        finally:
            self.hub.unregister(rt.key, watcher)

    async def _wait_for_rv(self, rv: int, timeout: float = 3.0) -> None:
        """A list at a future resourceVersion waits for it, then fails like the watch cache does."""
        deadline = time.monotonic() + timeout
        while self.rest.store.resource_version < rv:
            if time.monotonic() > deadline:
                raise too_large(rv, self.rest.store.resource_version)
            await asyncio.sleep(0.02)

    async def _stream(
        self, request: web.Request, watcher: Watcher, initial: list[bytes], timeout: int
    ) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            for i in range(0, len(initial), 500):
                await resp.write(b"".join(initial[i : i + 500]))
            # One deadline for the whole stream: a wait_for per wakeup costs a task per event.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._pump(resp, watcher)
            await resp.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    @staticmethod
    async def _pump(resp: web.StreamResponse, watcher: Watcher) -> None:
        """Write the watcher's lines as they come, in batches, until it is closed."""
        while True:
            if watcher.pending:
                lines = list(watcher.pending)
                watcher.pending.clear()
                await resp.write(b"".join(lines))
                continue
            if watcher.closed:
                if watcher.error is not None:
                    await resp.write(dumps({"type": "ERROR", "object": watcher.error.status()}) + b"\n")
                return
            watcher.wakeup.clear()
            await watcher.wakeup.wait()

    # --- writes --------------------------------------------------------------------------

    async def _create(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        body = _body(await request.read(), request.content_type, req.rt.kind)
        dry = dry_run(request.query.getall("dryRun", []), "CreateOptions")
        obj = self.rest.create(req.rt, self._ns(req), body, dry_run=dry)
        return _json(obj, 201)

    async def _update(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        body = _body(await request.read(), request.content_type, req.rt.kind)
        dry = dry_run(request.query.getall("dryRun", []), "UpdateOptions")
        obj = self.rest.update(req.rt, self._ns(req), req.name or "", body, req.subresource, dry_run=dry)
        return _json(self.rest.convert(req.rt, obj))

    async def _patch(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        raw = await request.read()
        check_size(raw)
        q = request.query
        obj, created = self.rest.patch(
            req.rt,
            self._ns(req),
            req.name or "",
            request.content_type,
            raw,
            req.subresource,
            q.get("fieldManager"),
            _flag(q.get("force")),
            dry_run(q.getall("dryRun", []), "PatchOptions"),
        )
        return _json(self.rest.convert(req.rt, obj), 201 if created else 200)

    def _delete_options(self, request: web.Request, raw: bytes) -> DeleteOptions:
        body: dict[str, Any] = {}
        if raw.strip():
            parsed = _body(raw, request.content_type, "DeleteOptions")
            if not isinstance(parsed, dict):
                raise errors.bad_request("DeleteOptions must be an object")
            check_delete_options(parsed)
            body = parsed
        q = request.query
        grace = _int(q, "gracePeriodSeconds")
        if grace is None and body.get("gracePeriodSeconds") is not None:
            grace = int(body["gracePeriodSeconds"])
        policy = q.get("propagationPolicy") or body.get("propagationPolicy")
        orphan = body.get("orphanDependents")
        if q.get("orphanDependents") is not None:
            orphan = _flag(q.get("orphanDependents"))
        dry = dry_run([*q.getall("dryRun", []), *(body.get("dryRun") or ())], "DeleteOptions")
        return DeleteOptions(grace, policy, orphan, body.get("preconditions"), dry)

    async def _delete(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        opts = self._delete_options(request, await request.read())
        obj, removed = self.rest.delete(req.rt, self._ns(req), req.name or "", opts)
        if removed and not req.rt.return_deleted_object:
            rt = req.rt
            details: dict[str, Any] = {"name": req.name}
            if rt.group:
                details["group"] = rt.group
            details["kind"] = rt.plural
            details["uid"] = obj["metadata"].get("uid")
            return _json(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        return _json(obj)

    async def _delete_collection(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        rt = req.rt
        opts = self._delete_options(request, await request.read())
        labels, fields = self._selectors(request, rt)
        items = self.rest.delete_collection(
            rt, req.namespace if rt.namespaced else None, labels, fields, opts
        )
        if rt.custom is None:
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return _json(
            {
                "kind": rt.list_kind_name,
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(self.rest.store.resource_version)},
                "items": items,
            }
        )

    # --- subresources --------------------------------------------------------------------

    async def _get_scale(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        return _json(self.rest.get_scale(req.rt, self._ns(req), req.name or ""))

    async def _put_scale(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        body = _body(await request.read(), request.content_type, "Scale")
        return _json(self.rest.update_scale(req.rt, self._ns(req), req.name or "", body))

    async def _patch_scale(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        raw = await request.read()
        if request.content_type == APPLY_PATCH:
            raise errors.unsupported_media_type("apply patches are not supported on the scale subresource")
        return _json(self.rest.patch_scale(req.rt, self._ns(req), req.name or "", request.content_type, raw))

    async def _binding(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        body = _body(await request.read(), request.content_type, "Binding")
        pods = self.catalog.lookup("", "v1", "pods")
        assert pods is not None
        name = (
            req.name
            if req.subresource
            else ((body.get("metadata") or {}).get("name", "") if isinstance(body, dict) else "")
        )
        self.rest.bind(pods, self._ns(req), name or "", body)
        return _json(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
        )

    async def _token(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        """TokenRequest (``serviceaccounts/<name>/token``), as the kubelet asks for pod tokens."""
        assert self.tokens is not None
        body = _body(await request.read(), request.content_type, "TokenRequest")
        ns, name = self._ns(req), req.name or ""
        account = self.rest.store.get(req.rt.key, ns, name)
        if account is None:
            raise errors.not_found("", "serviceaccounts", name)
        try:
            answer = self.tokens.request(ns, account, body if isinstance(body, dict) else {})
        except TokenError as exc:
            if exc.bad_request:
                raise errors.bad_request(str(exc)) from None
            raise errors.APIError(
                422, "Invalid", f'TokenRequest.authentication.k8s.io "{name}" is invalid: {exc}'
            ) from None
        return _json(answer, 201)

    async def _logs(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        ns, name, q = self._ns(req), req.name or "", request.query
        pod = self.rest.get(req.rt, ns, name)
        spec = pod.get("spec") or {}
        names = [c.get("name") for c in spec.get("containers") or ()]
        init_names = [c.get("name") for c in spec.get("initContainers") or ()]
        container = q.get("container")
        if not container:
            if len(names) == 1:
                container = names[0]
            else:
                msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
                if init_names:
                    msg += f" or one of the init containers: [{' '.join(init_names)}]"
                raise errors.bad_request(msg)
        elif container not in names and container not in init_names:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        opts = LogOptions(
            follow=_flag(q.get("follow")),
            tail_lines=_int(q, "tailLines"),
            timestamps=_flag(q.get("timestamps")),
            previous=_flag(q.get("previous")),
            since_seconds=_int(q, "sinceSeconds"),
            limit_bytes=_int(q, "limitBytes"),
        )
        provider = self._log_provider()
        if provider is None:
            return web.Response(body=b"", content_type="text/plain")
        chunks = provider.logs(ns, pod, str(container), opts)
        try:
            first = await chunks.__anext__()
        except StopAsyncIteration:
            return web.Response(body=b"", content_type="text/plain")
        except LogUnavailable as exc:
            raise errors.bad_request(str(exc)) from None
        # Streamed, followed or not, as kube-apiserver relays the kubelet's answer: a full read of
        # a large log holds one chunk at a time, never the whole file.
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        try:
            await resp.prepare(request)
            await resp.write(first)
            async for chunk in chunks:
                await resp.write(chunk)
            await resp.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass
        return resp
