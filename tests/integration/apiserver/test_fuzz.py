"""Fuzz: poisoned jobs of every kind never get a 5xx from the embedded server (issue #17).

The real server over HTTP, with the kubeflow CRDs installed and the operator's validating webhooks
in-process (as `kubetrain up` serves them). Each case creates a poisoned job (tests/poison_jobs.py:
one node replaced by arbitrary JSON nested up to 5,000 deep, odd strings and numbers, wrongly typed
metadata; the body sometimes damaged: invalid UTF-8, lone surrogate escapes, nesting beyond Go's
10,000 levels, truncation, YAML), then reads, patches and deletes what was stored. Every answer
must be below 500, a created job comes back in the version it was written in, and afterwards every
kind still lists and every stored job still reads.

Cases per kind: ``KUBETRAIN_SERVER_FUZZ_CASES`` (default 100, 2,000 under ``CI=true``), within
``KUBETRAIN_SERVER_FUZZ_BUDGET`` seconds (900). The counts (cases per kind, status codes seen) are
printed for the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import Counter
from collections.abc import Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain.cli.plane import kubeflow_admission
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.kinds.registry import crd_manifests
from kubetrain.kube import jsonsafe
from tests.poison_jobs import (
    ALL_KINDS,
    BODY_DAMAGE,
    KindVersion,
    Recipe,
    by_kind,
    damaged_body,
    example_jobs,
    recipes,
)

from .helpers import CRDS, NS, Http, eventually

IN_CI = os.environ.get("CI") == "true"
CASES_PER_KIND = int(os.environ.get("KUBETRAIN_SERVER_FUZZ_CASES", "2000" if IN_CI else "100"))
BUDGET_SECONDS = float(os.environ.get("KUBETRAIN_SERVER_FUZZ_BUDGET", "900"))
"""The time box: cases past it are not run, and the test fails saying how far it got."""
BASES = example_jobs()
GROUPS = by_kind(BASES)
SERVER_DEPTHS = (0, 0, 0, 150, 600, 1500)
"""Past every limit of orjson and of Python's recursion; 5,000 levels (the unit fuzz's deepest)
would only multiply the cost of each case, and bodies beyond Go's 10,000 are a damage of their own."""
KEEP_ONE_IN = 20
"""Every 20th accepted job stays stored, so the final lists and reads carry poison too."""


def _plural(kind: str) -> str:
    return kind.lower() + "s"


def _path(kind: str, api_version: str, namespace: str, name: str = "") -> str:
    base = f"/apis/{api_version}/namespaces/{namespace}/{_plural(kind)}"
    return f"{base}/{name}" if name else base


class Fuzzer:
    """Runs the cases of one kind on the test's event loop and counts every answer."""

    def __init__(self, http: Http, ns: NS, loop: asyncio.AbstractEventLoop) -> None:
        self.http = http
        self.ns = ns
        self.loop = loop
        self.codes: dict[KindVersion, Counter[int]] = {k: Counter() for k in ALL_KINDS}
        self.cases: Counter[KindVersion] = Counter()
        self.kept: list[tuple[KindVersion, str]] = []
        self.serial = 0
        self.deadline = time.monotonic() + BUDGET_SECONDS

    def run(self, coro: Coroutine[Any, Any, None]) -> None:
        """Called by hypothesis in a worker thread: the case runs on the server's loop."""
        asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def prepare(self, recipe: Recipe) -> tuple[str, bytes]:
        """The recipe's job, named uniquely in the test's namespace, and its body."""
        self.serial += 1
        name = f"fz{self.serial}"
        body = recipe.encode(_renamed(BASES, recipe.base, name, self.ns.name))
        if recipe.path == ("metadata", "name") and not recipe.depth and isinstance(recipe.value, str):
            name = recipe.value  # the recipe names the job itself (stored when the name is valid)
        return name, body

    async def request(
        self, key: KindVersion, method: str, path: str, raw: bytes | None = None, content_type: str = ""
    ) -> tuple[int, Any]:
        """The fixture's session (its credentials), reading bodies of any depth."""
        headers = {"Content-Type": content_type} if content_type else {}
        async with self.http.session.request(
            method, self.http.base + path, data=raw, headers=headers
        ) as resp:
            status, text = resp.status, await resp.read()
        self.codes[key][status] += 1
        body: Any = text
        if status >= 300:  # a Status: small, and its message says what went wrong
            with contextlib.suppress(ValueError):
                body = jsonsafe.loads(text)
        assert status < 500, (method, path, status, body)
        return status, body

    async def case(self, key: KindVersion, job: tuple[str, bytes], damage: str, patch: Any) -> None:
        kind, api_version = key
        self.cases[key] += 1
        name, body = job
        raw, content_type = damaged_body(body, damage)
        collection = _path(kind, api_version, self.ns.name)
        status, created = await self.request(key, "POST", collection, raw=raw, content_type=content_type)
        if status != 201:
            return
        assert _api_version(created) == api_version
        path = _path(kind, api_version, self.ns.name, name)
        status, got = await self.request(key, "GET", path)
        assert status == 200 and _api_version(got) == api_version
        await self.request(
            key,
            "PATCH",
            path,
            raw=jsonsafe.dumps({"spec": {"zz": patch}}),
            content_type="application/merge-patch+json",
        )
        await self.request(
            key, "PATCH", path, raw=jsonsafe.dumps(patch), content_type="application/json-patch+json"
        )
        if self.serial % KEEP_ONE_IN:
            await self.request(key, "DELETE", path)
        else:
            self.kept.append((key, name))

    async def check_readable(self) -> None:
        for kind, api_version in ALL_KINDS:
            key = (kind, api_version)
            status, listed = await self.request(key, "GET", _path(kind, api_version, self.ns.name))
            assert status == 200 and _api_version(listed) == api_version
        for (kind, api_version), name in self.kept:
            status, _ = await self.request(
                (kind, api_version), "GET", _path(kind, api_version, self.ns.name, name)
            )
            assert status == 200

    def report(self, seconds: float) -> str:
        lines = [f"server fuzz: {sum(self.cases.values())} cases in {seconds:.0f} s"]
        for key in ALL_KINDS:
            codes = ", ".join(f"{code}: {n}" for code, n in sorted(self.codes[key].items()))
            lines.append(f"  {key[0]} {key[1]}: {self.cases[key]} cases; answers {codes}")
        return "\n".join(lines)


_API_VERSION = re.compile(rb'^\{"kind":"[A-Za-z0-9]+","apiVersion":"([^"]+)"')


def _api_version(body: bytes) -> str:
    """The apiVersion a response starts with (the server writes kind and apiVersion first), read
    without decoding bodies thousands of levels deep: cases stay cheap enough for 2,000 per kind."""
    found = _API_VERSION.match(body)
    assert found, body[:200]
    return found.group(1).decode()


def _renamed(bases: list[dict[str, Any]], index: int, name: str, namespace: str) -> list[dict[str, Any]]:
    """`bases` with the one at `index` renamed into the test's namespace (shallow copies)."""
    out = list(bases)
    doc = dict(bases[index])
    meta = {k: v for k, v in (doc.get("metadata") or {}).items() if k not in ("uid", "resourceVersion")}
    doc["metadata"] = {**meta, "name": name, "namespace": namespace}
    out[index] = doc
    return out


async def _install_kubeflow(http: Http, server: EmbeddedAPIServer) -> None:
    server.rest.admission.add(kubeflow_admission)
    for crd in crd_manifests():
        status, body, _ = await http.post(CRDS, crd)
        assert status == 201, body

    async def served() -> bool:
        for kind, api_version in ALL_KINDS:
            status, _, _ = await http.get(f"/apis/{api_version}/{_plural(kind)}")
            if status != 200:
                return False
        return True

    await eventually(served, timeout=30)


def _fuzz_kind(fuzzer: Fuzzer, key: KindVersion) -> None:
    indices = [i for i, d in enumerate(BASES) if (d["kind"], d["apiVersion"]) == key]

    @settings(
        max_examples=CASES_PER_KIND,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        recipes(BASES, {key: indices}, SERVER_DEPTHS),
        st.sampled_from(BODY_DAMAGE),
        st.sampled_from([None, 1, [1], {}]),
    )
    def one(recipe: Recipe, damage: str, patch: Any) -> None:
        if time.monotonic() < fuzzer.deadline:
            fuzzer.run(fuzzer.case(key, fuzzer.prepare(recipe), damage, patch))

    one()


@pytest.mark.embedded_only("fuzzes the embedded server, with the kubeflow webhooks in-process")
async def test_poisoned_jobs_of_every_kind_never_get_5xx(
    http: Http, server: EmbeddedAPIServer, ns: NS
) -> None:
    await _install_kubeflow(http, server)
    assert set(GROUPS) >= set(ALL_KINDS), sorted(GROUPS)
    fuzzer = Fuzzer(http, ns, asyncio.get_running_loop())
    started = time.monotonic()

    def fuzz_all() -> None:
        for key in ALL_KINDS:
            _fuzz_kind(fuzzer, key)

    await asyncio.to_thread(fuzz_all)
    await fuzzer.check_readable()
    print(fuzzer.report(time.monotonic() - started))
    short = {k: n for k, n in fuzzer.cases.items() if n < CASES_PER_KIND}
    assert not short, f"the {BUDGET_SECONDS:.0f} s budget ran out: {short}"
