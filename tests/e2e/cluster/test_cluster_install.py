"""`kubetrain install` against a real kube-apiserver, object by object.

A control plane of this module's own (`own_plane`), not the tier's cluster: the installed
ValidatingWebhookConfiguration fails closed and nothing serves it here, so it would refuse every
other test's jobs, and the operator Deployment's pod would land on the tier's node. The plane has
no node, so the Deployment's pods stay Pending: what is tested is what the real API server, its
admission, RBAC authorizer, and controllers (namespace, garbage collector, CRD finalizer,
Deployment) make of the rendered objects.

Every test installs and uninstalls, so the next one starts from an empty plane.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.embedded.jobset import jobset_crd as embedded_jobset_crd
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from kubetrain.webhook.provisioner import CertConfig, CertProvisioner
from tests.e2e.cluster import tier
from tests.e2e.cluster.own_plane import control_plane, token_kubeconfig
from tests.integration.operator_process.jobs import job, pods_of, wait_condition, wait_for
from tests.integration.operator_process.procs import REPO, OperatorProc, run_cli

assert tier.KUBECONFIG  # importing tier skips this module without a cluster tier

JsonDict = dict[str, Any]

MANAGER = "kubetrain-install"
WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"
SECRET = "training-operator-webhook-cert"
PART_OF = "app.kubernetes.io/part-of=kubetrain"
RBAC = "rbac.authorization.k8s.io/v1"
UNREACHABLE = 'failed calling webhook "validator.pytorchjob.training-operator.kubeflow.org"'


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with control_plane(tmp_path_factory.mktemp("install-plane")) as kubeconfig:
        yield kubeconfig


@pytest.fixture
async def kube(plane: Path) -> AsyncIterator[KubeClient]:
    client = await KubeClient.from_kubeconfig(str(plane), None, qps=0)
    yield client
    await client.close()


async def kubetrain(*args: str) -> subprocess.CompletedProcess[str]:
    return await run_cli(*args, timeout=300)


async def install(kubeconfig: Path, *args: str) -> str:
    result = await kubetrain("install", "--kubeconfig", str(kubeconfig), *args)
    assert result.returncode == 0, result.stderr
    return result.stderr


_RENDERED: dict[tuple[str, ...], str] = {}


async def rendered(*args: str) -> list[JsonDict]:
    """What `install ARGS` applies: `--print` renders the same objects (a fresh copy each call)."""
    if args not in _RENDERED:
        result = await kubetrain("install", "--print", *args)
        assert result.returncode == 0, result.stderr
        _RENDERED[args] = result.stdout
    return [o for o in yaml.safe_load_all(_RENDERED[args]) if o]


async def live(kube: KubeClient, obj: JsonDict) -> JsonDict | None:
    meta = obj["metadata"]
    namespace = meta.get("namespace") if kube.resource(obj["apiVersion"], obj["kind"]).namespaced else None
    try:
        return await kube.get(obj["apiVersion"], obj["kind"], namespace, meta["name"])
    except ApiError as err:
        if err.not_found:
            return None
        raise


def ref(obj: JsonDict) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']} {meta.get('namespace', '')}/{meta['name']}"


def differences(want: Any, have: Any, path: str) -> list[str]:
    """Where `have` lacks or changes what `want` says (the server may add fields, not alter ours)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [f"{path}: {have!r} is not an object"]
        found: list[str] = []
        for key, value in want.items():
            if key not in have:
                found.append(f"{path}.{key}: missing")
            else:
                found += differences(value, have[key], f"{path}.{key}")
        return found
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return [f"{path}: {have!r} instead of {want!r}"]
        return [
            d
            for i, (w, h) in enumerate(zip(want, have, strict=True))
            for d in differences(w, h, f"{path}[{i}]")
        ]
    return [] if want == have else [f"{path}: {have!r} instead of {want!r}"]


def owners(obj: JsonDict, field: str) -> set[str]:
    """The managers whose managedFields entry names `field` (e.g. "f:caBundle")."""
    return {
        m["manager"]
        for m in obj["metadata"].get("managedFields") or ()
        if f'"{field}"' in json.dumps(m.get("fieldsV1") or {})
    }


async def assert_installed(kube: KubeClient, objects: list[JsonDict]) -> dict[str, JsonDict]:
    """Every rendered object is on the server with the fields we rendered, applied by our manager."""
    found: dict[str, JsonDict] = {}
    problems: list[str] = []
    for obj in objects:
        have = await live(kube, obj)
        if have is None:
            problems.append(f"{ref(obj)}: not found")
            continue
        found[ref(obj)] = have
        problems += differences(obj, have, ref(obj))
        applied = [m for m in have["metadata"].get("managedFields") or () if m["manager"] == MANAGER]
        if [m.get("operation") for m in applied] != ["Apply"]:
            problems.append(f"{ref(obj)}: managedFields of {MANAGER}: {applied}")
    assert problems == []
    return found


async def assert_crds_served(kube: KubeClient, objects: list[JsonDict]) -> None:
    """Established, the names accepted, each version served as rendered and in discovery."""
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        have = await live(kube, crd)
        assert have is not None, ref(crd)
        conditions = {c["type"]: c["status"] for c in have["status"]["conditions"]}
        assert conditions["Established"] == conditions["NamesAccepted"] == "True", conditions
        assert differences(crd["spec"]["names"], have["status"]["acceptedNames"], "acceptedNames") == []
        for version in crd["spec"]["versions"]:
            served = next(v for v in have["spec"]["versions"] if v["name"] == version["name"])
            want = version.get("additionalPrinterColumns") or []
            assert differences(want, served.get("additionalPrinterColumns") or [], ref(crd)) == []
            if version["served"]:
                group = crd["spec"]["group"]
                discovery = await kube.request("GET", f"/apis/{group}/{version['name']}")
                names = {r["name"] for r in discovery["resources"]}
                assert crd["spec"]["names"]["plural"] in names, (version["name"], names)


async def assert_gone(kube: KubeClient, objects: list[JsonDict]) -> None:
    remaining = [ref(o) for o in objects if await live(kube, o) is not None]
    assert remaining == []


async def labelled(kube: KubeClient, api_version: str, kind: str) -> set[str]:
    items, _ = await kube.list(api_version, kind, label_selector=PART_OF)
    return {i["metadata"]["name"] for i in items}


async def items(kube: KubeClient, path: str) -> list[JsonDict]:
    """A list by path, for kinds the client's registry does not know (ReplicaSets)."""
    found: list[JsonDict] = (await kube.request("GET", path)).get("items") or []
    return found


def of_kind(objects: list[JsonDict], kind: str) -> list[JsonDict]:
    return [o for o in objects if o["kind"] == kind]


def names(objects: list[JsonDict], kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in of_kind(objects, kind)}


async def refused_unreachable(kube: KubeClient, namespace: str) -> str:
    """Create a PyTorchJob in `namespace`; the error text, which must come from the webhook call."""
    with pytest.raises(ApiError) as refused:
        await kube.create(job("PyTorchJob", f"refused-{secrets.token_hex(2)}", namespace))
    assert UNREACHABLE in str(refused.value), refused.value
    return str(refused.value)


@asynccontextmanager
async def uninstalled_after(plane: Path, kube: KubeClient, *args: str) -> AsyncIterator[None]:
    """Uninstall on the way out if anything is left, so a failed test does not spoil the next."""
    try:
        yield
    finally:
        if any([await live(kube, o) is not None for o in await rendered(*args)]):
            await install(plane, *args, "--uninstall")


async def namespace(kube: KubeClient, name: str) -> str:
    await kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


# -- install, uninstall ----------------------------------------------------------------------------


async def test_cluster_wide_install_then_uninstall_object_by_object(plane: Path, kube: KubeClient) -> None:
    objects = await rendered()
    async with uninstalled_after(plane, kube):
        await install(plane)

        found = await assert_installed(kube, objects)
        await assert_crds_served(kube, objects)
        mpi = found["CustomResourceDefinition /mpijobs.kubeflow.org"]["spec"]["versions"]
        assert {v["name"]: (v["served"], v["storage"]) for v in mpi} == {
            "v1": (True, True),
            "v2beta1": (True, False),
            "v1alpha2": (True, False),
        }
        container = found["Deployment kubeflow/training-operator"]["spec"]["template"]["spec"]["containers"][
            0
        ]
        assert container["image"] == "kubetrain:0.1.0"
        assert "--leader-elect" in container["args"]
        assert not [a for a in container["args"] if a.startswith("--namespace")]
        hooks = found[f"ValidatingWebhookConfiguration /{WEBHOOK_CONFIGURATION}"]["webhooks"]
        assert {h["clientConfig"]["service"]["namespace"] for h in hooks} == {"kubeflow"}
        assert all("caBundle" not in h["clientConfig"] for h in hooks)  # the operator injects it
        # Nothing of ours that was not rendered: the cluster-scoped RBAC is exactly the tree's.
        assert await labelled(kube, RBAC, "ClusterRole") == names(objects, "ClusterRole")
        assert await labelled(kube, RBAC, "ClusterRoleBinding") == names(objects, "ClusterRoleBinding")
        # The real controllers act on it: the Deployment's pod exists (Pending: no node), as rendered.
        pods = await items(kube, "/api/v1/namespaces/kubeflow/pods")
        assert [p["spec"]["serviceAccountName"] for p in pods] == ["training-operator"]
        assert pods[0]["spec"]["containers"][0]["image"] == "kubetrain:0.1.0"
        # The webhook's rules match jobs in every namespace and fail closed while nothing serves them.
        jobs_ns = await namespace(kube, f"jobs-{secrets.token_hex(3)}")
        await refused_unreachable(kube, jobs_ns)
        await kube.delete("v1", "Namespace", None, jobs_ns)

        await install(plane, "--uninstall")

        # It waited for the namespace controller, the garbage collector and the CRD finalizer.
        await assert_gone(kube, objects)
        for path in ("/apis/apps/v1/namespaces/kubeflow/replicasets", "/api/v1/namespaces/kubeflow/pods"):
            assert await items(kube, path) == []
        assert await labelled(kube, RBAC, "ClusterRole") == set()


async def test_single_namespace_install_and_keep_crds(plane: Path, kube: KubeClient) -> None:
    ns = f"ml-{secrets.token_hex(3)}"
    args = ("--overlay", "single-namespace", "--namespace", ns)
    objects = await rendered(*args)
    elsewhere = await namespace(kube, f"other-{secrets.token_hex(3)}")
    async with uninstalled_after(plane, kube, *args):
        await install(plane, *args)

        found = await assert_installed(kube, objects)
        await assert_crds_served(kube, objects)
        assert {o["metadata"]["namespace"] for o in objects if "namespace" in o["metadata"]} == {ns}
        container = found[f"Deployment {ns}/training-operator"]["spec"]["template"]["spec"]["containers"][0]
        assert f"--namespace={ns}" in container["args"]
        # Namespaced RBAC only: no cluster-wide grant to pods, services or jobs (the webhook
        # configuration's caBundle and reading ClusterTrainingRuntimes are cluster-scoped).
        cluster_grants = {"training-operator-webhook", "training-operator-cluster-kinds"}
        assert await labelled(kube, RBAC, "ClusterRole") == cluster_grants
        assert await labelled(kube, RBAC, "ClusterRoleBinding") == cluster_grants
        assert await labelled(kube, RBAC, "Role") == names(objects, "Role")
        # The namespaceSelector as the real server evaluates it: the served namespace's jobs reach the
        # (unreachable, fail-closed) webhook, another namespace's are admitted without it.
        await refused_unreachable(kube, ns)
        kept = await kube.create(job("PyTorchJob", "kept", elsewhere))

        await install(plane, *args, "--uninstall", "--keep-crds")

        crds = of_kind(objects, "CustomResourceDefinition")
        await assert_gone(kube, [o for o in objects if o not in crds])
        assert [ref(crd) for crd in crds if await live(kube, crd) is None] == []
        still = await live(kube, kept)
        assert still is not None and still["metadata"]["uid"] == kept["metadata"]["uid"]

        removed = await install(plane, *args, "--uninstall")

        assert "customresourcedefinition/pytorchjobs.kubeflow.org deleted" in removed
        await assert_gone(kube, [*crds, kept])  # the CRD's finalizer deleted its jobs
    await kube.delete("v1", "Namespace", None, elsewhere)


async def test_default_runtimes_wait_for_the_webhook_then_apply_and_uninstall(
    plane: Path, kube: KubeClient
) -> None:
    """`--runtimes`: upstream's five default ClusterTrainingRuntimes, as the real API server (with
    upstream's CRD schema) stores them. The validating webhook admits runtimes and fails closed, so
    while nothing serves it (this plane has no node for the operator) install waits, then says what
    to run; with the webhook out of the way `--only-runtimes` applies them, and uninstalls them."""
    runtimes = of_kind(await rendered("--only-runtimes"), "ClusterTrainingRuntime")
    assert sorted(names(runtimes, "ClusterTrainingRuntime")) == [
        "deepspeed-distributed",
        "jax-distributed",
        "mlx-distributed",
        "torch-distributed",
        "xgboost-distributed",
    ]
    early = await kubetrain("install", "--kubeconfig", str(plane), "--only-runtimes")
    assert early.returncode == 1 and "the Trainer CRDs are not installed" in early.stderr, early.stderr
    async with uninstalled_after(plane, kube):
        waited = await kubetrain(
            "install", "--kubeconfig", str(plane), "--runtimes", "--runtimes-timeout", "3"
        )
        assert waited.returncode == 1, waited.stderr
        assert "waiting for the operator's webhook to serve" in waited.stderr, waited.stderr
        assert "did not serve within 3s" in waited.stderr and "install --only-runtimes" in waited.stderr
        assert [o for o in runtimes if await live(kube, o) is not None] == []
        await assert_installed(kube, await rendered())  # the operator's objects went in first

        await kube.delete(
            "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", None, WEBHOOK_CONFIGURATION
        )
        applied = await install(plane, "--only-runtimes")
        assert "clustertrainingruntime/torch-distributed applied" in applied
        await assert_installed(kube, runtimes)
        assert "applied" in await install(plane, "--only-runtimes")  # again: an upgrade, no conflict

        await install(plane, "--only-runtimes", "--uninstall")
        assert [o for o in runtimes if await live(kube, o) is not None] == []
        assert await live(kube, of_kind(await rendered(), "Deployment")[0]) is not None  # only the runtimes


async def test_an_existing_namespace_survives_uninstall(plane: Path, kube: KubeClient) -> None:
    ns = await namespace(kube, f"team-{secrets.token_hex(3)}")
    precious = await kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "precious", "namespace": ns}}
    )
    args = ("--overlay", "single-namespace", "--namespace", ns)
    objects = await rendered(*args)
    async with uninstalled_after(plane, kube, *args):
        said = await install(plane, *args)

        assert f"namespace/{ns} exists: left as is" in said
        live_ns = await kube.get("v1", "Namespace", None, ns)
        assert MANAGER not in {m["manager"] for m in live_ns["metadata"].get("managedFields") or ()}

        said = await install(plane, *args, "--uninstall")

        assert f"namespace/{ns} kept: kubetrain install did not create it" in said
        await assert_gone(kube, [o for o in objects if o["kind"] != "Namespace"])
        assert await live(kube, precious) is not None
    await kube.delete("v1", "Namespace", None, ns)


# -- upgrade ---------------------------------------------------------------------------------------


async def test_upgrade_changes_the_image_and_nothing_else(
    plane: Path, kube: KubeClient, tmp_path: Path
) -> None:
    objects = await rendered()
    new_image = "registry.example/kubetrain:next"
    async with uninstalled_after(plane, kube):
        await install(plane)
        # The operator's own certificate code writes the Secret and the caBundle (PUT, its manager).
        bundle = await CertProvisioner(kube, CertConfig(cert_dir=tmp_path)).ensure()
        before = await assert_installed(kube, objects)
        secret = before[f"Secret kubeflow/{SECRET}"]
        hooks = before[f"ValidatingWebhookConfiguration /{WEBHOOK_CONFIGURATION}"]
        assert set(secret["data"]) >= {"tls.crt", "tls.key", "ca.crt"}
        assert MANAGER not in owners(secret, "f:tls.crt") and owners(secret, "f:tls.crt")
        assert MANAGER not in owners(hooks, "f:caBundle") and owners(hooks, "f:caBundle")
        deployment = before["Deployment kubeflow/training-operator"]

        await install(plane, "--image", new_image)

        after = await assert_installed(kube, await rendered("--image", new_image))
        upgraded = after["Deployment kubeflow/training-operator"]
        assert upgraded["metadata"]["uid"] == deployment["metadata"]["uid"]
        assert upgraded["metadata"]["generation"] == deployment["metadata"]["generation"] + 1
        assert upgraded["spec"]["template"]["spec"]["containers"][0]["image"] == new_image
        upgraded["spec"]["template"]["spec"]["containers"][0]["image"] = "kubetrain:0.1.0"
        assert upgraded["spec"] == deployment["spec"]
        # The other manager's fields survive; every other object is untouched (same resourceVersion).
        assert after[f"Secret kubeflow/{SECRET}"]["data"] == secret["data"]
        webhooks = after[f"ValidatingWebhookConfiguration /{WEBHOOK_CONFIGURATION}"]["webhooks"]
        assert {h["clientConfig"]["caBundle"] for h in webhooks} == {
            base64.b64encode(bundle.ca_cert).decode()
        }
        changed = [
            key
            for key, obj in after.items()
            if key != "Deployment kubeflow/training-operator"
            and obj["metadata"]["resourceVersion"] != before[key]["metadata"]["resourceVersion"]
        ]
        assert changed == []
        # The Deployment controller rolls it out: a ReplicaSet of the new image, owned by it.
        await until_replica_set(kube, upgraded["metadata"]["uid"], new_image)


async def until_replica_set(kube: KubeClient, owner_uid: str, image: str, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while True:
            for rs in await items(kube, "/apis/apps/v1/namespaces/kubeflow/replicasets"):
                owned = any(o["uid"] == owner_uid for o in rs["metadata"].get("ownerReferences") or ())
                if owned and rs["spec"]["template"]["spec"]["containers"][0]["image"] == image:
                    return
            await asyncio.sleep(0.2)


async def test_switching_overlays_prunes_what_is_no_longer_rendered(plane: Path, kube: KubeClient) -> None:
    """cluster-wide -> single-namespace must take the cluster-wide grants away; objects another
    manager applied (components/launcher-rbac with kubectl) are not ours to prune."""
    single = await rendered("--overlay", "single-namespace")
    async with uninstalled_after(plane, kube):
        await install(plane)
        launcher = yaml.safe_load((REPO / "manifests/components/launcher-rbac/cluster-role.yaml").read_text())
        launcher["metadata"]["labels"] = {"app.kubernetes.io/part-of": "kubetrain"}
        await kube.create(launcher)

        said = await install(plane, "--overlay", "single-namespace")

        assert "clusterrole/training-operator pruned: no longer rendered" in said
        assert await labelled(kube, RBAC, "ClusterRole") == {
            *names(single, "ClusterRole"),
            "training-operator-launcher-rbac",
        }
        assert await labelled(kube, RBAC, "ClusterRoleBinding") == names(single, "ClusterRoleBinding")
        await assert_installed(kube, single)

        said = await install(plane)

        assert "role/training-operator-jobs pruned: no longer rendered" in said
        assert await labelled(kube, RBAC, "Role") == names(await rendered(), "Role")

        # Uninstalling with the other overlay's render still removes everything of ours.
        said = await install(plane, "--overlay", "single-namespace", "--uninstall")

        assert "clusterrole/training-operator pruned: no longer rendered" in said
        await assert_gone(kube, await rendered())
        assert await labelled(kube, RBAC, "ClusterRole") == {"training-operator-launcher-rbac"}
        await kube.delete(RBAC, "ClusterRole", None, "training-operator-launcher-rbac")


# -- RBAC ------------------------------------------------------------------------------------------


async def test_the_operator_works_under_the_installed_rbac(
    plane: Path, kube: KubeClient, tmp_path: Path
) -> None:
    """The least-privilege grants, under the real authorizer: the operator, with the installed
    ServiceAccount's token, writes its certificates, leads, and reconciles a job of every kind that
    needs no launcher RBAC (MPIJob v1 and ChainerJob need components/launcher-rbac)."""
    async with uninstalled_after(plane, kube):
        await install(plane)
        account = await token_kubeconfig(
            kube, plane, "kubeflow", "training-operator", tmp_path / "operator", create=False
        )
        async with await KubeClient.from_kubeconfig(str(account), None, qps=0) as as_operator:
            await CertProvisioner(as_operator, CertConfig(cert_dir=tmp_path / "certs")).ensure()
            # Updates are confined by name: not another Secret of its namespace.
            other = await kube.create(
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "other", "namespace": "kubeflow"}}
            )
            with pytest.raises(ApiError) as refused:
                await as_operator.replace({**other, "data": {"k": "dg=="}})
            assert refused.value.status == 403
        secret = await kube.get("v1", "Secret", "kubeflow", SECRET)
        assert set(secret["data"]) >= {"tls.crt", "tls.key", "ca.crt"}
        # Nothing serves the webhook in this plane (no node): remove it so that jobs can be created.
        await kube.delete(
            "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", None, WEBHOOK_CONFIGURATION
        )
        operator = OperatorProc(
            account,
            tmp_path / "operator.log",
            "--no-webhook",
            "--leader-elect",
            "--leader-election-namespace",
            "kubeflow",
        )
        try:
            await operator.wait_ready(120)
            ns = await namespace(kube, f"rbac-{secrets.token_hex(3)}")
            jobs = [
                job(kind, kind.lower(), ns)
                for kind in ("TFJob", "PyTorchJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob")
            ]
            mpi = yaml.safe_load((REPO / "examples" / "mpi" / "mpijob-v2beta1-pi.yaml").read_text())
            jobs.append({**mpi, "metadata": {**mpi["metadata"], "namespace": ns}})
            for obj in jobs:
                await kube.create(obj)
            for obj in jobs:
                await wait_condition(kube, obj, "Created", tier.TIMEOUT)
                name = obj["metadata"]["name"]
                await wait_for(
                    functools.partial(pods_of, kube, ns, name), tier.TIMEOUT, f"pods of {ref(obj)}"
                )
            lease = await kube.get(
                "coordination.k8s.io/v1", "Lease", "kubeflow", "1ca428e5.training-operator.kubeflow.org"
            )
            assert lease["spec"]["holderIdentity"]
        finally:
            operator.stop()
        assert "Forbidden" not in operator.log(), operator.log()
        await kube.delete("v1", "Namespace", None, ns)


async def test_a_single_namespace_operator_builds_trainjobs_on_cluster_training_runtimes(
    plane: Path, kube: KubeClient, tmp_path: Path
) -> None:
    """A ClusterTrainingRuntime is cluster-scoped, which the single-namespace Role cannot grant:
    under the installed RBAC and the real authorizer, the operator of one namespace still lists
    them and builds a TrainJob's JobSet from one, without being able to change it."""
    ns = f"ml-{secrets.token_hex(3)}"
    args = ("--overlay", "single-namespace", "--namespace", ns)
    runtime, trainjob = yaml.safe_load_all((REPO / "examples/local/trainjob-torch/trainjob.yaml").read_text())
    trainjob["metadata"]["namespace"] = ns
    runtime_ref = (runtime["apiVersion"], runtime["kind"], None, runtime["metadata"]["name"])
    jobset_crd = embedded_jobset_crd()  # what runs JobSets is not under test: only what is built
    kube.registry.register_crd(jobset_crd)
    await kube.create(jobset_crd)
    async with uninstalled_after(plane, kube, *args):
        await install(plane, *args)
        await kube.delete(
            "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", None, WEBHOOK_CONFIGURATION
        )
        account = await token_kubeconfig(
            kube, plane, ns, "training-operator", tmp_path / "operator", create=False
        )
        operator = OperatorProc(account, tmp_path / "operator.log", "--no-webhook", "--namespace", ns)
        try:
            await operator.wait_ready(120)
            await kube.create(runtime)
            await kube.create(trainjob)
            wanted = {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": trainjob["metadata"],
            }
            jobset = await wait_for(lambda: live(kube, wanted), tier.TIMEOUT, "the TrainJob's JobSet")
            owner = jobset["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"]) == ("TrainJob", trainjob["metadata"]["name"])
            async with await KubeClient.from_kubeconfig(str(account), None, qps=0) as as_operator:
                with pytest.raises(ApiError) as refused:  # read-only: the runtime serves every namespace
                    await as_operator.delete(*runtime_ref)
                assert refused.value.status == 403
        finally:
            operator.stop()
            await kube.delete(*runtime_ref)
            await kube.delete(
                jobset_crd["apiVersion"], jobset_crd["kind"], None, jobset_crd["metadata"]["name"]
            )
        assert "Forbidden" not in operator.log(), operator.log()


# -- RBAC escalation -------------------------------------------------------------------------------


async def test_rbac_escalation_checks(plane: Path, kube: KubeClient, tmp_path: Path) -> None:
    """Not system:masters: cluster-admin may install; a user who may write every object install
    writes, but does not hold what the operator's ClusterRole grants, is refused by the escalation
    check, and install says which object and why."""
    admin = await token_kubeconfig(kube, plane, "default", "admin-installer", tmp_path / "admin")
    await kube.create(binding("admin-installer", "cluster-admin"))
    limited = await token_kubeconfig(kube, plane, "default", "rbac-writer", tmp_path / "limited")
    writer = {"apiGroups": ["*"], "resources": INSTALLED_RESOURCES, "verbs": WRITE}
    await kube.create(
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "rbac-writer"}, "rules": [writer]}
    )
    await kube.create(binding("rbac-writer", "rbac-writer"))
    async with uninstalled_after(plane, kube):
        await install(admin)
        assert await assert_installed(kube, await rendered())
        await install(admin, "--uninstall")

        refused = await kubetrain("install", "--kubeconfig", str(limited))

        assert refused.returncode == 1, refused.stderr
        assert "applying ClusterRole training-operator failed" in refused.stderr
        assert "is attempting to grant RBAC permissions not currently held" in refused.stderr
        role = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "training-operator"}}
        assert await live(kube, role) is None


INSTALLED_RESOURCES = [
    "namespaces",
    "customresourcedefinitions",
    "serviceaccounts",
    "roles",
    "leases",
    "rolebindings",
    "clusterroles",
    "clusterrolebindings",
    "secrets",
    "services",
    "deployments",
    "validatingwebhookconfigurations",
]
"""Every resource install writes, and leases: enough to apply every object and to grant the namespaced
Role (Secrets, Leases), not to hold what the operator's ClusterRole grants (pods, services, jobs)."""

WRITE = ["get", "list", "watch", "create", "update", "patch", "delete"]
"""Not `escalate` nor `bind`: those verbs on roles would skip the check under test."""


def binding(account: str, role: str) -> JsonDict:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{account}-{secrets.token_hex(2)}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "default"}],
    }
