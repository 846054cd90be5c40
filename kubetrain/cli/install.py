"""`kubetrain install`: render the kustomize tree in manifests/ and apply it, print it, or remove it.

Rendering uses `kubectl kustomize` (or a standalone `kustomize build`), the renderer users and CI
already trust; the result is post-processed for `--namespace` and `--image` the way kustomize's
`namespace:` and `images:` would, so no overlay has to be edited for the common cases.

Applying is server-side apply (`fieldManager=kubetrain-install`, forced), object by object in
dependency order: namespaces and CRDs first (waiting until the CRDs are Established), then the
rest. Server-side apply is what makes re-running it an upgrade: fields that other managers own
are left alone, in particular the certificate data the operator writes into the webhook Secret
(which the manifest ships empty) and the caBundle it injects into the webhook configuration.

Objects an earlier install applied that this one no longer renders are then deleted (pruned):
switching `--overlay cluster-wide` to `single-namespace` must take the cluster-wide ClusterRole and
its binding away, or the operator would keep its access to every namespace's pods and Secrets.
Only objects labelled `app.kubernetes.io/part-of=kubetrain` whose managedFields name our field
manager are candidates, in the install's namespace or cluster-scoped; CRDs and Namespaces never.

`--runtimes` also applies upstream Kubeflow Trainer's default ClusterTrainingRuntimes
(manifests/runtimes/: torch-, deepspeed-, mlx-, jax- and xgboost-distributed, upstream's files
unchanged), once the operator's validating webhook, which admits runtimes and fails closed, serves:
until then the API server refuses them, so install waits (`--runtimes-timeout`). `--only-runtimes`
applies just those, to a plane whose operator already runs (`kubetrain up`, or a cluster after the
operator's rollout).

`--uninstall` deletes the same objects in reverse order and, like `kubectl delete`, waits until
they are gone (the namespace controller empties the namespace, the CRDs' finalizer deletes their
jobs); `--keep-crds` keeps the CRDs, and with them every job (deleting a CRD deletes all of its
objects). A namespace is only ever deleted if install created it: installing into an existing
namespace (`--namespace team-a`) leaves that Namespace object alone, so uninstalling cannot wipe
the team's other objects with it. With `--keep-crds` a namespace that holds jobs is kept too.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

import kubetrain
from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, err, out, run_async
from kubetrain.client.errors import ConfigError, KubetrainError
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.crds import CRD_API, is_established
from kubetrain.runtime.transport import KubeClient

JsonDict = dict[str, Any]

OVERLAYS = ("cluster-wide", "single-namespace")
FIELD_MANAGER = "kubetrain-install"
APPLY_PATCH = "application/apply-patch+yaml"
OPERATOR_DEPLOYMENT = "training-operator"
DEFAULT_NAMESPACE = "kubeflow"
FIRST = ("Namespace", "CustomResourceDefinition")
CRD_WAIT = 60.0
PART_OF = "app.kubernetes.io/part-of=kubetrain"
PRUNABLE = (
    ("v1", "ServiceAccount"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
)
"""The kinds the tree renders in some overlay, but for Namespaces and CRDs (which hold jobs)."""
DELETE_WAIT = 120.0
RUNTIMES_WAIT = 120.0
WEBHOOK_UNREACHABLE = "failed calling webhook"
"""kube-apiserver's answer while a fail-closed webhook has no server behind it."""


def register(sub: SubParsers) -> None:
    p = sub.add_parser(
        "install",
        help=HELP["install"],
        description="Render manifests/overlays/<overlay> with kustomize and server-side apply it; "
        "re-running it upgrades in place. --print writes the YAML instead.",
    )
    p.add_argument("--print", dest="print_only", action="store_true", help="print the YAML, apply nothing")
    p.add_argument(
        "--overlay",
        choices=OVERLAYS,
        default="cluster-wide",
        help="cluster-wide (default): one operator for all namespaces; single-namespace: "
        "namespaced RBAC, jobs of the operator's namespace only",
    )
    p.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        help=f"the operator's namespace (default: {DEFAULT_NAMESPACE}); with single-namespace, "
        "also the namespace it serves",
    )
    p.add_argument("--image", metavar="REF", help="operator image (default: the tree's kubetrain:<version>)")
    p.add_argument(
        "--manifests",
        metavar="DIR",
        type=Path,
        default=None,
        help="the manifests directory (default: the one next to the kubetrain package)",
    )
    p.add_argument(
        "--runtimes",
        action="store_true",
        help="also apply upstream Kubeflow Trainer's default ClusterTrainingRuntimes (torch-, deepspeed-, "
        "mlx-, jax-, xgboost-distributed) once the operator's webhook serves",
    )
    p.add_argument(
        "--only-runtimes",
        action="store_true",
        help="apply (with --uninstall: delete) only those runtimes, e.g. on `kubetrain up`'s plane",
    )
    p.add_argument(
        "--runtimes-timeout",
        type=float,
        default=RUNTIMES_WAIT,
        metavar="S",
        help=f"how long to wait for the operator's webhook before the runtimes (default: {RUNTIMES_WAIT:g})",
    )
    p.add_argument("--uninstall", action="store_true", help="delete what install creates")
    p.add_argument("--keep-crds", action="store_true", help="with --uninstall: keep the CRDs and every job")
    p.add_argument(
        "--no-wait",
        dest="wait",
        action="store_false",
        help="with --uninstall: return once the deletions are accepted, not when the objects are gone",
    )
    p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    p.set_defaults(handler=_install)


# -- rendering ------------------------------------------------------------------------------------


def manifests_dir(explicit: Path | None) -> Path:
    root = explicit or Path(kubetrain.__file__).resolve().parent.parent / "manifests"
    if not (root / "overlays").is_dir():
        raise ConfigError(
            f"no kustomize tree at {root} (expected overlays/ in it): pass --manifests DIR, "
            "the manifests/ directory of the kubetrain source tree"
        )
    return root


def kustomize(directory: Path) -> str:
    """`kubectl kustomize DIR`, else `kustomize build DIR`; the YAML stream."""
    if shutil.which("kubectl"):
        command = ["kubectl", "kustomize", str(directory)]
    elif shutil.which("kustomize"):
        command = ["kustomize", "build", str(directory)]
    else:
        raise ConfigError("rendering the manifests needs kubectl (or kustomize) on PATH")
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise KubetrainError(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return result.stdout


def render_runtimes(manifests: Path) -> list[JsonDict]:
    """Upstream's default ClusterTrainingRuntimes (cluster-scoped: no namespace to move)."""
    return [o for o in yaml.safe_load_all(kustomize(manifests / "runtimes")) if isinstance(o, dict)]


def render(directory: Path, namespace: str, image: str | None) -> list[JsonDict]:
    objects = [o for o in yaml.safe_load_all(kustomize(directory)) if isinstance(o, dict)]
    return retarget(objects, DEFAULT_NAMESPACE, namespace, image)


def retarget(objects: list[JsonDict], old: str, new: str, image: str | None) -> list[JsonDict]:
    """Move the install from namespace `old` to `new` and set the operator image.

    What kustomize's `namespace:` transformer does (object namespaces, the Namespace object,
    RBAC subjects, webhook service references), plus the two places the tree names the namespace
    as a value: the single-namespace overlay's `--namespace=` argument and the webhooks'
    namespaceSelector.
    """
    for obj in objects:
        meta = obj.setdefault("metadata", {})
        kind = obj.get("kind")
        if new != old:
            if kind == "Namespace" and meta.get("name") == old:
                meta["name"] = new
            if meta.get("namespace") == old:
                meta["namespace"] = new
            for subject in obj.get("subjects") or ():
                if subject.get("namespace") == old:
                    subject["namespace"] = new
            for hook in obj.get("webhooks") or ():
                service = (hook.get("clientConfig") or {}).get("service") or {}
                if service.get("namespace") == old:
                    service["namespace"] = new
                labels = (hook.get("namespaceSelector") or {}).get("matchLabels") or {}
                if labels.get("kubernetes.io/metadata.name") == old:
                    labels["kubernetes.io/metadata.name"] = new
        if kind == "Deployment" and meta.get("name") == OPERATOR_DEPLOYMENT:
            for container in obj["spec"]["template"]["spec"].get("containers") or ():
                container["args"] = [
                    f"--namespace={new}" if a == f"--namespace={old}" else a
                    for a in container.get("args") or ()
                ]
                if image:
                    container["image"] = image
    return objects


def ordered(objects: Iterable[JsonDict]) -> list[JsonDict]:
    """Namespaces, then CRDs, then everything else in the rendered order."""
    objs = list(objects)
    return sorted(objs, key=lambda o: FIRST.index(o["kind"]) if o.get("kind") in FIRST else len(FIRST))


# -- applying -------------------------------------------------------------------------------------


async def apply_all(client: KubeClient, objects: list[JsonDict]) -> None:
    objs = ordered(objects)
    crds = [o for o in objs if o.get("kind") == "CustomResourceDefinition"]
    for obj in objs:
        if obj.get("kind") not in FIRST and crds:
            await wait_established(client, [c["metadata"]["name"] for c in crds])
            crds = []
        if obj.get("kind") == "Namespace":
            live = await get_or_none(client, obj)
            if live is not None and not installed_by_us(live):
                err.print(f"namespace/{obj['metadata']['name']} exists: left as is", markup=False)
                continue
        await apply_one(client, obj)


async def prune(client: KubeClient, objects: list[JsonDict], namespace: str) -> None:
    """Delete what an earlier install applied and this render no longer has (see the module doc)."""
    wanted = {(o.get("kind"), o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    for api_version, kind in PRUNABLE:
        namespaced = client.resource(api_version, kind).namespaced
        try:
            items, _ = await client.list(
                api_version, kind, namespace if namespaced else None, label_selector=PART_OF
            )
        except ApiError as exc:
            raise KubetrainError(f"listing {kind} for pruning failed: {exc}") from None
        for item in items:
            meta = item["metadata"]
            if (kind, meta.get("namespace"), meta["name"]) in wanted or not installed_by_us(item):
                continue
            try:
                await client.delete(
                    api_version, kind, meta.get("namespace"), meta["name"], propagation_policy="Foreground"
                )
            except ApiError as exc:
                if not exc.not_found:
                    raise KubetrainError(f"pruning {kind} {meta['name']} failed: {exc}") from None
                continue
            err.print(f"{kind.lower()}/{meta['name']} pruned: no longer rendered", markup=False)


async def get_or_none(client: KubeClient, obj: JsonDict) -> JsonDict | None:
    meta = obj["metadata"]
    rt = client.resource(obj["apiVersion"], obj["kind"])
    try:
        return await client.get(
            obj["apiVersion"], obj["kind"], meta.get("namespace") if rt.namespaced else None, meta["name"]
        )
    except ApiError as exc:
        if exc.not_found:
            return None
        raise KubetrainError(f"reading {obj['kind']} {meta['name']} failed: {exc}") from None


def installed_by_us(live: JsonDict) -> bool:
    """Whether install applied this object: its managedFields name our field manager."""
    managers = (live.get("metadata") or {}).get("managedFields") or ()
    return any(m.get("manager") == FIELD_MANAGER for m in managers)


async def server_side_apply(client: KubeClient, obj: JsonDict) -> JsonDict:
    """The object as applied (raises the API server's ApiError)."""
    meta = obj["metadata"]
    rt = client.resource(obj["apiVersion"], obj["kind"])
    path = rt.path(meta.get("namespace") if rt.namespaced else None, meta["name"])
    query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
    applied: JsonDict = await client.request("PATCH", path, query=query, body=obj, content_type=APPLY_PATCH)
    return applied


async def apply_one(client: KubeClient, obj: JsonDict) -> None:
    meta = obj["metadata"]
    try:
        applied = await server_side_apply(client, obj)
    except ApiError as exc:
        raise KubetrainError(f"applying {obj['kind']} {meta['name']} failed: {exc}") from None
    if (applied.get("metadata") or {}).get("deletionTimestamp"):
        # Applying to a terminating object succeeds, and the object vanishes soon after (a CRD
        # with all its jobs): the install would report success and then not be there.
        raise KubetrainError(
            f"{obj['kind']} {meta['name']} is being deleted (an uninstall that has not finished?): "
            "install again once it is gone"
        )
    err.print(f"{obj['kind'].lower()}/{meta['name']} applied", markup=False)


async def wait_established(client: KubeClient, names: list[str], timeout: float = CRD_WAIT) -> None:
    async with asyncio.timeout(timeout):
        for name in names:
            while not is_established(await client.get(CRD_API, "CustomResourceDefinition", None, name)):
                await asyncio.sleep(0.2)


async def delete_all(
    client: KubeClient, objects: list[JsonDict], namespace: str, keep_crds: bool, wait: bool
) -> None:
    """Delete the rendered objects, then what an install of another overlay left (`prune`)."""
    crds = [o for o in objects if o.get("kind") == "CustomResourceDefinition"]
    if not keep_crds:
        await ready_crd_storage(client, crds)
    deleted: list[JsonDict] = []
    for obj in reversed(ordered(objects)):
        if keep_crds and obj.get("kind") == "CustomResourceDefinition":
            continue
        meta = obj["metadata"]
        if obj.get("kind") == "Namespace":
            live = await get_or_none(client, obj)
            if live is None:
                continue
            if not installed_by_us(live):
                err.print(f"namespace/{meta['name']} kept: kubetrain install did not create it", markup=False)
                continue
            if keep_crds and await holds_jobs(client, meta["name"], crds):
                err.print(f"namespace/{meta['name']} kept: it holds jobs (--keep-crds)", markup=False)
                continue
        rt = client.resource(obj["apiVersion"], obj["kind"])
        try:
            await client.delete(
                obj["apiVersion"],
                obj["kind"],
                meta.get("namespace") if rt.namespaced else None,
                meta["name"],
                propagation_policy="Foreground",
            )
        except ApiError as exc:
            if not exc.not_found:
                raise KubetrainError(f"deleting {obj['kind']} {meta['name']} failed: {exc}") from None
            continue
        deleted.append(obj)
        err.print(f"{obj['kind'].lower()}/{meta['name']} deleted", markup=False)
    await prune(client, [], namespace)
    if wait:
        await wait_gone(client, deleted)


def served_paths(crds: list[JsonDict], namespace: str | None = None) -> list[str]:
    """The list path of each CRD's first served version (in `namespace` when given)."""
    paths = []
    for crd in crds:
        spec = crd["spec"]
        served = [v["name"] for v in spec.get("versions") or () if v.get("served")]
        if served:
            scope = f"/namespaces/{namespace}" if namespace else ""
            paths.append(f"/apis/{spec['group']}/{served[0]}{scope}/{spec['names']['plural']}")
    return paths


async def ready_crd_storage(client: KubeClient, crds: list[JsonDict]) -> None:
    """Make kube-apiserver start, and wait for, each CRD's watch cache before deleting the CRD.

    kube-apiserver builds a CRD's storage on its first request. If that first request is the CRD
    finalizer's list (nobody ever used the kind: install, then uninstall), the list fails with
    "storage is (re)initializing", and the finalizer's retry can lose a race with its own informer
    (a conflict it takes for "called again later"): the CRD then stays Terminating until the
    informer resyncs, minutes later. A cache-served list (resourceVersion=0, no limit) is refused
    with 429 + Retry-After until the cache is ready, which the client waits out; the label
    selector matches nothing, so the answer stays small however many jobs exist.
    """
    query = [("resourceVersion", "0"), ("labelSelector", "kubetrain.io/storage-probe")]
    for path in served_paths(crds):
        try:
            await client.request("GET", path, query=query)
        except ApiError as exc:
            if not exc.not_found:
                raise KubetrainError(f"listing {path} failed: {exc}") from None


async def holds_jobs(client: KubeClient, namespace: str, crds: list[JsonDict]) -> bool:
    """Whether any kind of `crds` has an object in `namespace` (deleting it would delete them)."""
    for path in served_paths(crds, namespace):
        try:
            found = await client.request("GET", path, query=[("limit", "1")])
        except ApiError as exc:
            if exc.not_found:
                continue
            raise KubetrainError(f"listing {path} failed: {exc}") from None
        if found.get("items"):
            return True
    return False


async def wait_gone(client: KubeClient, objects: list[JsonDict], timeout: float = DELETE_WAIT) -> None:
    """Until every object is gone: finalizers (namespace, CRD, foreground deletion) take a while."""
    pending = list(objects)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while pending:
        pending = [o for o in pending if await get_or_none(client, o) is not None]
        if not pending:
            return
        if loop.time() >= deadline:
            names = ", ".join(f"{o['kind'].lower()}/{o['metadata']['name']}" for o in pending)
            raise KubetrainError(f"still being deleted after {timeout:.0f}s: {names}")
        await asyncio.sleep(0.5)


async def apply_runtimes(
    client: KubeClient, runtimes: list[JsonDict], namespace: str, timeout: float
) -> None:
    """Apply each runtime, waiting up to `timeout` seconds for the webhook that admits them."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    said_waiting = False
    for obj in runtimes:
        name = obj["metadata"]["name"]
        while True:
            try:
                await server_side_apply(client, obj)
                break
            except ApiError as exc:
                if exc.not_found:
                    raise KubetrainError(
                        f"applying {obj['kind']} {name} failed: the Trainer CRDs are not installed "
                        "(run `kubetrain install` first)"
                    ) from None
                if WEBHOOK_UNREACHABLE not in str(exc):
                    raise KubetrainError(f"applying {obj['kind']} {name} failed: {exc}") from None
                if loop.time() >= deadline:
                    rollout = f"kubectl -n {namespace} rollout status deployment/{OPERATOR_DEPLOYMENT}"
                    raise KubetrainError(
                        f"the operator's webhook, which admits runtimes, did not serve within {timeout:g}s "
                        f"({exc}): once `{rollout}` succeeds, run `kubetrain install --only-runtimes`"
                    ) from None
                if not said_waiting:
                    err.print(
                        "waiting for the operator's webhook to serve, to apply the runtimes", markup=False
                    )
                    said_waiting = True
                await asyncio.sleep(1.0)
        err.print(f"{obj['kind'].lower()}/{name} applied", markup=False)


async def delete_runtimes(client: KubeClient, runtimes: list[JsonDict]) -> None:
    """Delete the runtimes an install applied (one a user wrote under the same name is kept)."""
    for obj in runtimes:
        live = await get_or_none(client, obj)
        if live is None:
            continue
        if not installed_by_us(live):
            err.print(
                f"{obj['kind'].lower()}/{obj['metadata']['name']} kept: not applied by install", markup=False
            )
            continue
        try:
            await client.delete(obj["apiVersion"], obj["kind"], None, obj["metadata"]["name"])
        except ApiError as exc:
            if not exc.not_found:
                raise KubetrainError(
                    f"deleting {obj['kind']} {obj['metadata']['name']} failed: {exc}"
                ) from None
            continue
        err.print(f"{obj['kind'].lower()}/{obj['metadata']['name']} deleted", markup=False)


# -- the command ----------------------------------------------------------------------------------


def _install(args: argparse.Namespace) -> int:
    if args.keep_crds and not args.uninstall:
        err.print("--keep-crds only applies to --uninstall", style="red", markup=False)
        return 2
    if not args.wait and not args.uninstall:
        err.print("--no-wait only applies to --uninstall", style="red", markup=False)
        return 2
    if args.only_runtimes and args.keep_crds:
        err.print("--keep-crds does not apply to --only-runtimes", style="red", markup=False)
        return 2
    manifests = manifests_dir(args.manifests)
    runtimes = render_runtimes(manifests) if args.runtimes or args.only_runtimes else []
    objects = (
        []
        if args.only_runtimes
        else render(manifests / "overlays" / args.overlay, args.namespace, args.image)
    )
    if args.print_only:
        out.print(yaml.safe_dump_all([*objects, *runtimes], sort_keys=False), end="", markup=False)
        return 0
    return run_async(_apply(args, objects, runtimes))


async def _apply(args: argparse.Namespace, objects: list[JsonDict], runtimes: list[JsonDict]) -> int:
    if args.kubeconfig and not Path(args.kubeconfig).expanduser().is_file():
        raise ConfigError(f"kubeconfig {args.kubeconfig}: no such file")
    try:
        client = await KubeClient.from_kubeconfig(args.kubeconfig, args.context)
    except Exception as exc:
        raise ConfigError(f"cannot load the kubeconfig {args.kubeconfig or '(default)'}: {exc}") from None
    try:
        if args.uninstall:
            await delete_runtimes(client, runtimes)
            if args.only_runtimes:
                out.print("kubetrain's default runtimes uninstalled", markup=False)
                return 0
            await delete_all(client, objects, args.namespace, args.keep_crds, args.wait)
            out.print(
                "kubetrain operator uninstalled" + (" (CRDs and jobs kept)" if args.keep_crds else ""),
                markup=False,
            )
            return 0
        if not args.only_runtimes:
            await apply_all(client, objects)
            await prune(client, objects, args.namespace)
            out.print(
                f"kubetrain operator installed in namespace {args.namespace} ({args.overlay}); "
                f"kubectl -n {args.namespace} rollout status deployment/{OPERATOR_DEPLOYMENT}",
                markup=False,
            )
        await apply_runtimes(client, runtimes, args.namespace, args.runtimes_timeout)
        if runtimes:
            names = ", ".join(o["metadata"]["name"] for o in runtimes)
            out.print(f"ClusterTrainingRuntimes applied: {names}", markup=False)
        return 0
    except TimeoutError:
        raise KubetrainError(f"the CRDs were not Established within {CRD_WAIT:.0f}s") from None
    finally:
        await client.close()
