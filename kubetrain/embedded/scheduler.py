"""The binder of the embedded plane: assigns pending pods to nodes through pods/binding.

It is a small default-scheduler, not a placeholder: pods whose ``schedulerName`` is unset or
``default-scheduler`` (or one of the other `scheduler_names` it is told to answer for: the local
plane stands in for ``volcano`` and ``scheduler-plugins-scheduler`` too) are bound (others are
left to their scheduler), in priority then creation
order, to a Ready node whose free capacity fits the pod's requests. Requests are what the real
NodeResourcesFit filter uses: the sum over containers (or the largest init container, if larger)
plus overhead; a container without a CPU request asks for 0, so a 2-core laptop runs a
3-replica job that sets no requests, while a pod that asks for more than is free stays Pending
with ``PodScheduled=False``, reason ``Unschedulable``, and the real message (``0/1 nodes are
available: 1 Insufficient cpu.``), and is bound as soon as capacity frees up.

Gangs are all-or-nothing: pods labelled ``scheduling.x-k8s.io/pod-group=<name>`` (the
scheduler-plugins coscheduling label) or annotated ``scheduling.k8s.io/group-name=<name>``
(Volcano) are bound only when ``minMember`` of the group (from its PodGroup object when one
exists, else every pod of the group that exists) can be placed together, counting members that
are already bound. That keeps a job's replicas from holding CPUs while waiting for peers that
cannot start. A gang that waits says why in its scheduler's words: coscheduling's ``pre-filter
pod ... cannot find enough sibling pods`` on each pod; for a Volcano group, its PodGroup's
``Unschedulable`` condition (reason ``NotEnoughTasks``, ``Not enough valid tasks for
gang-scheduling, valid: N, min: M``) and the same message on the pods. When answering for
``volcano`` it also moves Volcano PodGroups through their phases as Volcano's enqueue and
allocate actions do (``Pending`` -> ``Inqueue``, then ``Running`` once ``minMember`` are bound;
no queue quotas), since an operator creates a Volcano job's pods only once its group is Inqueue.

A pod that asks for more of a resource than any node has in all (not just free) can never be
placed; the message stays kube-scheduler's, followed by the plane's `never_fits` hint when it
has one (the local plane names its ``--node-cpu``/``--node-memory``/``--gpus`` flags).

Binds are remembered ("assumed") until the watch shows them, so a burst of pods never
over-commits a node between a bind and its watch event.

Like kube-scheduler's unschedulable queue, a pod that did not fit is tried again only after
something that may make room: a pod on a node finished or went away, a node or PodGroup changed,
or the periodic resync. Other events (the scheduler's own status writes, a pod starting) cost no
pass, so a 10,000-replica job on a 110-pod node is not re-placed on each of its pods' updates; a
pass waits twice its own duration before the next one, so the binder takes at most a third of
the event loop it shares with the API server and the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubetrain.kube.client import KubeAPI, core_path, group_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import core_event, object_reference
from kubetrain.kube.informer import Informer
from kubetrain.kube.podresources import pod_requests, quantities
from kubetrain.kube.timefmt import format_time

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

DEFAULT_SCHEDULER = "default-scheduler"
INVALID_SCHEDULER = "<not a scheduler name>"
"""What a non-string schedulerName counts as: no binder answers for it, none crashes on it."""
VOLCANO_SCHEDULER = "volcano"
GANG_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_PODGROUP_API = ("scheduling.volcano.sh", "v1beta1")
PODGROUP_APIS = (("scheduling.x-k8s.io", "v1alpha1"), VOLCANO_PODGROUP_API)
VOLCANO_NOT_ENOUGH_TASKS = "NotEnoughTasks"
RESOURCES = ("cpu", "memory")


def gang_of(pod: JsonDict) -> str | None:
    meta = pod.get("metadata") or {}
    return (meta.get("labels") or {}).get(GANG_LABEL) or (meta.get("annotations") or {}).get(
        VOLCANO_ANNOTATION
    )


def _is_active(pod: JsonDict) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _scheduler_of(pod: JsonDict) -> str:
    """The pod's scheduler; a `schedulerName` that is not a string (a poisoned pod) names none."""
    spec = pod.get("spec")
    name = spec.get("schedulerName") if isinstance(spec, dict) else None
    if not name:
        return DEFAULT_SCHEDULER
    return name if isinstance(name, str) else INVALID_SCHEDULER


def _is_volcano_member(pod: JsonDict) -> bool:
    return bool(((pod.get("metadata") or {}).get("annotations") or {}).get(VOLCANO_ANNOTATION))


def volcano_not_enough_tasks(valid: int, min_member: int) -> str:
    """Volcano's gang plugin's JobValid message for a group with fewer pods than minMember
    (docs/upstream-behaviour.md#volcano-gang-messages)."""
    return f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {min_member}"


def _holds_capacity(kind: str, pod: JsonDict) -> bool:
    """Whether the pod counts against its node's capacity (bound and not finished)."""
    return kind != "DELETED" and bool((pod.get("spec") or {}).get("nodeName")) and _is_active(pod)


WRITES_IN_FLIGHT = 32
"""Binds and Unschedulable reports of one pass sent at once (kube-scheduler binds concurrently)."""


@dataclass
class NodeView:
    """A node's free capacity during one scheduling pass."""

    name: str
    labels: dict[str, str]
    free: dict[str, Fraction]
    free_pods: int
    allocatable: dict[str, Fraction] = field(default_factory=dict)

    def misfit(self, pod: JsonDict, req: dict[str, Fraction]) -> list[str]:
        """Why `pod` does not fit here (empty when it fits), in the scheduler's words."""
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        if any(self.labels.get(k) != v for k, v in selector.items()):
            return ["node(s) didn't match Pod's node affinity/selector"]
        reasons = []
        if self.free_pods < 1:
            reasons.append("Too many pods")
        for key in RESOURCES:
            if req.get(key, Fraction(0)) > self.free.get(key, Fraction(0)):
                reasons.append(f"Insufficient {key}")
        for key, value in req.items():
            if key not in RESOURCES and value > 0 and value > self.free.get(key, Fraction(0)):
                reasons.append(f"Insufficient {key}")
        return reasons

    def take(self, req: dict[str, Fraction]) -> None:
        for key, value in req.items():
            self.free[key] = self.free.get(key, Fraction(0)) - value
        self.free_pods -= 1


def unschedulable_message(node_count: int, reasons: Counter[str]) -> str:
    """``0/N nodes are available: 1 Insufficient cpu, 1 Too many pods.``"""
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
    return (
        f"0/{node_count} nodes are available: {parts}." if parts else f"0/{node_count} nodes are available."
    )


@dataclass
class _Pass:
    nodes: list[NodeView]
    bind: list[tuple[JsonDict, str]] = field(default_factory=list)
    reject: list[tuple[JsonDict, str]] = field(default_factory=list)
    waiting_groups: list[tuple[JsonDict, str]] = field(default_factory=list)
    """Volcano PodGroups that wait, with why (their Unschedulable condition's message)."""
    running_groups: list[JsonDict] = field(default_factory=list)
    """Volcano PodGroups whose gang is bound in this pass."""


class Binder:
    """``await binder.start()``; it then binds pods as they appear and capacity frees up."""

    def __init__(
        self,
        api: KubeAPI,
        *,
        resync_interval: float = 5.0,
        never_fits: Callable[[list[str]], str] | None = None,
        scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,),
    ) -> None:
        self.api = api
        self.scheduler_names = frozenset((DEFAULT_SCHEDULER, *scheduler_names))
        """The `schedulerName`s whose pods this binder places (an empty one is default-scheduler)."""
        self.resync_interval = resync_interval
        self.never_fits = never_fits
        """Text added to the message of a pod that asks more than any node has (gets those resources)."""
        self._wake = asyncio.Event()
        self._assumed: dict[str, str] = {}  # pod uid -> node, until the watch shows the binding
        self._reported: dict[str, str] = {}  # pod uid -> last Unschedulable message written
        self._group_reported: dict[str, str] = {}  # Volcano PodGroup uid -> last condition message
        self._requests: dict[str, dict[str, Fraction]] = {}  # pod uid -> pod_requests (immutable)
        self._holding: set[str] = set()  # uids of pods that hold node capacity
        self._fresh: set[str] = set()  # uids of pending pods no pass has tried yet
        self._room = True  # capacity may have freed since the last pass: retry every pending pod
        self._pods = Informer(api, core_path("pods"), self._pod_changed)
        self._nodes = Informer(api, core_path("nodes"), self._cluster_changed)
        self._groups = [
            Informer(api, group_path(g, v, "podgroups"), self._cluster_changed, optional=True)
            for g, v in PODGROUP_APIS
        ]
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        for inf in (self._pods, self._nodes, *self._groups):
            inf.start()
        await asyncio.gather(self._pods.synced.wait(), self._nodes.synced.wait())
        self._task = asyncio.create_task(self._loop(), name="embedded binder")
        self._wake.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for inf in (self._pods, self._nodes, *self._groups):
            await inf.stop()

    def _pod_changed(self, kind: str, obj: JsonDict) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid", "")
        if kind == "DELETED" or (obj.get("spec") or {}).get("nodeName"):
            self._assumed.pop(uid, None)
            self._fresh.discard(uid)
        if kind == "DELETED":
            self._reported.pop(uid, None)
            self._requests.pop(uid, None)
        if _holds_capacity(kind, obj):
            self._holding.add(uid)
        elif uid in self._holding:
            self._holding.discard(uid)
            self._room = True
            self._wake.set()
        elif kind == "ADDED" and not (obj.get("spec") or {}).get("nodeName") and self._mine(obj):
            self._fresh.add(uid)
            self._wake.set()

    def _mine(self, pod: JsonDict) -> bool:
        return _scheduler_of(pod) in self.scheduler_names

    def _cluster_changed(self, kind: str, obj: JsonDict) -> None:
        self._room = True
        self._wake.set()

    def _requests_of(self, pod: JsonDict) -> dict[str, Fraction]:
        uid = pod["metadata"].get("uid", "")
        req = self._requests.get(uid)
        if req is None:
            req = self._requests[uid] = pod_requests(pod)
        return req

    async def _loop(self) -> None:
        pause = 0.01
        while True:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancel that arrives
            # as the event is set (pods deleted while the plane stops), and stop() then hung forever.
            try:
                async with asyncio.timeout(self.resync_interval):
                    await self._wake.wait()
            except TimeoutError:
                self._room = True
            self._wake.clear()
            await asyncio.sleep(pause)  # let a burst of creates land, then place them together
            started = time.monotonic()
            try:
                await self.schedule_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduling pass failed")
            pause = max(0.01, 2 * (time.monotonic() - started))

    # -- one pass ------------------------------------------------------------------------------

    def _node_views(self, pods: list[JsonDict]) -> list[NodeView]:
        views: dict[str, NodeView] = {}
        for node in self._nodes.items.values():
            spec, status = node.get("spec") or {}, node.get("status") or {}
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
            )
            if not ready or spec.get("unschedulable"):
                continue
            alloc = quantities(status.get("allocatable") or status.get("capacity"))
            name = (node.get("metadata") or {}).get("name", "")
            free_pods = int(alloc.pop("pods", 110))
            views[name] = NodeView(
                name, dict((node.get("metadata") or {}).get("labels") or {}), alloc, free_pods, dict(alloc)
            )
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName") or self._assumed.get(
                pod["metadata"].get("uid", "")
            )
            if node_name in views and _is_active(pod):
                views[node_name].take(self._requests_of(pod))
        return sorted(views.values(), key=lambda v: v.name)

    def _min_member(self, namespace: str, group: str, members: int) -> int:
        for inf in self._groups:
            obj = inf.items.get(f"{namespace}/{group}")
            if obj is not None:
                return int((obj.get("spec") or {}).get("minMember") or 1)
        return members

    def _volcano_group(self, namespace: str, group: str) -> JsonDict | None:
        return self._groups[PODGROUP_APIS.index(VOLCANO_PODGROUP_API)].items.get(f"{namespace}/{group}")

    async def _enqueue_volcano_groups(self) -> None:
        """Move Volcano PodGroups from Pending to Inqueue (Volcano's enqueue action, no quotas)."""
        if VOLCANO_SCHEDULER not in self.scheduler_names:
            return
        for group in list(self._groups[PODGROUP_APIS.index(VOLCANO_PODGROUP_API)].items.values()):
            phase = (group.get("status") or {}).get("phase") or "Pending"
            if phase == "Pending" and not (group.get("metadata") or {}).get("deletionTimestamp"):
                await self._patch_group_status(group, {"phase": "Inqueue"})

    async def _patch_group_status(self, group: JsonDict, status: JsonDict) -> None:
        meta = group.get("metadata") or {}
        namespace, name = meta.get("namespace"), meta.get("name")
        path = group_path(*VOLCANO_PODGROUP_API, "podgroups", namespace, name, "status")
        try:
            await self.api.merge_patch(path, {"status": status})
        except ApiError as err:
            log.debug("updating PodGroup %s/%s failed: %s", meta.get("namespace"), meta.get("name"), err)

    async def schedule_once(self) -> None:
        """Place the pending pods worth a try (all of them after room was made, else new ones)."""
        retry_all, fresh = self._room, self._fresh
        self._room, self._fresh = False, set()
        if retry_all:
            await self._enqueue_volcano_groups()
        pods = list(self._pods.items.values())
        pending = [
            p
            for p in pods
            if not (p.get("spec") or {}).get("nodeName")
            and p["metadata"].get("uid") not in self._assumed
            and not p["metadata"].get("deletionTimestamp")
            and _is_active(p)
            and self._mine(p)
        ]
        if not retry_all:  # a gang is tried whole when one of its members is new
            new_gangs = {
                (p["metadata"].get("namespace", ""), g)
                for p in pending
                if p["metadata"].get("uid") in fresh and (g := gang_of(p))
            }
            pending = [
                p
                for p in pending
                if p["metadata"].get("uid") in fresh
                or (new_gangs and (p["metadata"].get("namespace", ""), gang_of(p)) in new_gangs)
            ]
        if not pending:
            return
        nodes = self._node_views(pods)
        pending.sort(
            key=lambda p: (
                -int((p.get("spec") or {}).get("priority") or 0),
                p["metadata"].get("creationTimestamp", ""),
            )
        )
        plan = _Pass(nodes)
        gangs: dict[tuple[str, str], list[JsonDict]] = {}
        for pod in pending:
            group = gang_of(pod)
            if group:
                gangs.setdefault((pod["metadata"].get("namespace", ""), group), []).append(pod)
            else:
                self._place(plan, [pod], need=1)
        for (namespace, group), members in gangs.items():
            siblings = [
                p
                for p in pods
                if p["metadata"].get("namespace") == namespace and gang_of(p) == group and _is_active(p)
            ]
            placed = sum(1 for p in siblings if p not in members)
            min_member = self._min_member(namespace, group, len(siblings))
            volcano = self._volcano_group(namespace, group) if _is_volcano_member(members[0]) else None
            if placed + len(members) < min_member:
                if volcano is not None:
                    msg = volcano_not_enough_tasks(placed + len(members), min_member)
                    plan.waiting_groups.append((volcano, msg))
                else:
                    msg = (
                        f"pre-filter pod {members[0]['metadata']['name']} cannot find enough sibling pods, "
                        f"current pods number: {placed + len(members)}, minMember of group: {min_member}"
                    )
                plan.reject.extend((p, msg) for p in members)
                continue
            bound_before = len(plan.bind)
            self._place(plan, members, need=max(min_member - placed, 0))
            if volcano is not None and len(plan.bind) > bound_before:
                plan.running_groups.append(volcano)
        await self._apply(plan)

    def _place(self, plan: _Pass, members: list[JsonDict], need: int) -> None:
        """Bind `members` if at least `need` of them fit together; else reject them all."""
        trial = [NodeView(n.name, n.labels, dict(n.free), n.free_pods, n.allocatable) for n in plan.nodes]
        chosen: list[tuple[JsonDict, str]] = []
        reasons: Counter[str] = Counter()
        for pod in members:
            req = self._requests_of(pod)
            why: Counter[str] = Counter()
            for view in trial:
                misfit = view.misfit(pod, req)
                if not misfit:
                    view.take(req)
                    chosen.append((pod, view.name))
                    break
                why.update(misfit)
            else:
                reasons = reasons or why
        if len(chosen) >= need and chosen:
            plan.nodes[:] = trial
            plan.bind.extend(chosen)
            unplaced = [p for p in members if all(p is not c for c, _ in chosen)]
        else:
            unplaced = members
        if unplaced:
            msg = unschedulable_message(len(plan.nodes), reasons or Counter())
            if len(members) > 1 and len(chosen) < need:
                msg += f" (gang of {len(members)}: {len(chosen)} of the {need} needed pods fit)"
            plan.reject.extend((p, msg + self._never_fits_hint(plan.nodes, p)) for p in unplaced)

    def _never_fits_hint(self, nodes: list[NodeView], pod: JsonDict) -> str:
        """The plane's hint for a pod that asks more than any node has in all, else nothing."""
        if self.never_fits is None or not nodes:
            return ""
        req = self._requests_of(pod)
        never = [
            key
            for key, value in sorted(req.items())
            if value > 0 and all(value > n.allocatable.get(key, Fraction(0)) for n in nodes)
        ]
        return f" {self.never_fits(never)}" if never else ""

    async def _apply(self, plan: _Pass) -> None:
        slots = asyncio.Semaphore(WRITES_IN_FLIGHT)

        async def bounded(write: Any) -> None:
            async with slots:
                await write

        await asyncio.gather(
            *(bounded(self._bind(pod, node)) for pod, node in plan.bind),
            *(bounded(self._report_unschedulable(pod, message)) for pod, message in plan.reject),
            *(bounded(self._report_group_waits(group, message)) for group, message in plan.waiting_groups),
            *(bounded(self._report_group_runs(group)) for group in plan.running_groups),
        )

    async def _report_group_waits(self, group: JsonDict, message: str) -> None:
        """Volcano's `Unschedulable` condition on the group (once per message)."""
        uid = (group.get("metadata") or {}).get("uid", "")
        if self._group_reported.get(uid) == message:
            return
        condition = {
            "type": "Unschedulable",
            "status": "True",
            "transitionID": str(uuid.uuid4()),  # Volcano: the scheduling session's UID
            "reason": VOLCANO_NOT_ENOUGH_TASKS,
            "message": message,
            "lastTransitionTime": format_time(time.time()),
        }
        others = [
            c for c in (group.get("status") or {}).get("conditions") or [] if c.get("type") != "Unschedulable"
        ]
        await self._patch_group_status(group, {"conditions": [*others, condition]})
        self._group_reported[uid] = message

    async def _report_group_runs(self, group: JsonDict) -> None:
        """The group is past waiting: phase Running, its Unschedulable condition gone (as Volcano)."""
        status, uid = group.get("status") or {}, group["metadata"].get("uid", "")
        if status.get("phase") == "Running" and uid not in self._group_reported:
            return
        self._group_reported.pop(uid, None)
        others = [c for c in status.get("conditions") or [] if c.get("type") != "Unschedulable"]
        await self._patch_group_status(group, {"phase": "Running", "conditions": others})

    async def _bind(self, pod: JsonDict, node: str) -> None:
        meta = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self._assumed[meta.get("uid", "")] = node  # before the watch can show it: no double booking
        try:
            await self.api.create(core_path("pods", meta.get("namespace"), meta["name"], "binding"), body)
        except ApiError as err:
            log.debug("binding %s/%s failed: %s", meta.get("namespace"), meta["name"], err)
            self._assumed.pop(meta.get("uid", ""), None)
            self._room = True  # what it held in this pass is free again
            return
        self._reported.pop(meta.get("uid", ""), None)
        await self._event(
            pod,
            "Normal",
            "Scheduled",
            f"Successfully assigned {meta.get('namespace')}/{meta['name']} to {node}",
        )

    async def _report_unschedulable(self, pod: JsonDict, message: str) -> None:
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        if self._reported.get(uid) == message:
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": format_time(time.time()),
        }
        others = [
            c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"
        ]
        try:
            await self.api.merge_patch(
                core_path("pods", meta.get("namespace"), meta["name"], "status"),
                {"status": {"conditions": [*others, condition]}},  # kube-scheduler writes no phase
            )
        except ApiError as err:
            log.debug("reporting %s/%s unschedulable failed: %s", meta.get("namespace"), meta["name"], err)
            return
        self._reported[uid] = message
        await self._event(pod, "Warning", "FailedScheduling", message)

    async def _event(self, pod: JsonDict, kind: str, reason: str, message: str) -> None:
        meta = pod["metadata"]
        involved = object_reference("v1", "Pod", meta)
        body = core_event(involved, kind, reason, message, _scheduler_of(pod), time.time())
        with contextlib.suppress(Exception):
            await self.api.create(core_path("events", meta.get("namespace")), body)
