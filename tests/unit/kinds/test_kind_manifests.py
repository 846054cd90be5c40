"""The per-kind parts of the manifests tree come from the registry: the CRDs' kustomization, the
operator's RBAC rules for every kind, its status and its finalizers, and the validating webhooks;
what is committed is what the generators write, so a new kind is listed, granted and admitted by
registering it."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import yaml

from kubetrain.kinds import crds, manifests, rbac, webhooks
from kubetrain.kinds.registry import BY_KIND, REGISTERED_KINDS, SERVED_KINDS, webhook_kinds
from kubetrain.webhook.provisioner import DEFAULT_NAMESPACE, DEFAULT_SERVICE_NAME

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests"


def test_the_committed_kustomization_is_the_generated_one() -> None:
    committed = (MANIFESTS / "crds" / crds.KUSTOMIZATION).read_text(encoding="utf-8")
    assert committed == crds.generate_tree()[crds.KUSTOMIZATION], (
        f"stale: run {crds.COMMAND} --write manifests/crds"
    )


def test_the_kustomization_lists_every_crd_file_and_names_shared_crds() -> None:
    text = crds.kustomization(["b.yaml", "a.yaml"])
    assert yaml.safe_load(text)["resources"] == ["a.yaml", "b.yaml"]
    assert "# mpijobs.kubeflow.org serves MPIJob v1 (storage), v2beta1 and v1alpha2 from one CRD.\n" in text


def test_the_committed_rbac_grants_exactly_the_registered_kinds() -> None:
    assert manifests.drift(MANIFESTS) == [], f"stale: run {manifests.COMMAND} --write manifests"
    for target in rbac.TARGETS:
        role = yaml.safe_load((MANIFESTS / target.path).read_text(encoding="utf-8"))
        for info in REGISTERED_KINDS.values():
            granted = {
                r for rule in role["rules"] if info.group in rule["apiGroups"] for r in rule["resources"]
            }
            if not target.scope(info):  # e.g. a cluster-scoped kind in a namespaced Role
                assert not {r for r in granted if r.partition("/")[0] == info.plural}, (
                    target.path,
                    info.kind,
                )
            elif target.read_only:
                assert info.plural in granted and _verbs(role, info.group, info.plural) == set(
                    rbac.READ_VERBS
                )
            else:
                assert {info.plural, f"{info.plural}/status", f"{info.plural}/finalizers"} <= granted, (
                    target.path
                )


def test_a_namespaced_role_grants_no_cluster_scoped_kind_and_a_cluster_role_grants_them() -> None:
    """Kubernetes ignores a Role's rule on a cluster-scoped resource: each kind is granted where it
    takes effect, in every overlay (the single-namespace one reads ClusterTrainingRuntimes through
    its cluster-kinds ClusterRole)."""
    cluster_scoped = [i for i in REGISTERED_KINDS.values() if not i.namespaced]
    assert [i.kind for i in cluster_scoped] == ["ClusterTrainingRuntime"]
    by_path = {t.path: t for t in rbac.TARGETS}
    single = [by_path["overlays/single-namespace/rbac/role.yaml"], by_path[rbac.TARGETS[2].path]]
    for info in REGISTERED_KINDS.values():
        assert [t.path for t in single if t.scope(info)] == [
            single[0].path if info.namespaced else single[1].path
        ], info.kind


def _verbs(role: dict, group: str, plural: str) -> set[str]:
    return {
        v
        for rule in role["rules"]
        if group in rule["apiGroups"] and plural in rule["resources"]
        for v in rule["verbs"]
    }


def test_the_committed_rbac_grants_a_trainjobs_jobsets_and_runtimes() -> None:
    """The hand-written rule covers the TrainJob planner's JobSets (deleted past the deadline),
    the MPI plugin's ConfigMaps and Secrets and the pod group plugins' PodGroups of both groups
    (never deleted: garbage collected with the TrainJob; ConfigMaps and PodGroups read through the
    cache only, a Secret read by name when its create finds a namesake); its context kinds (the
    runtimes) are read through the generated rules."""
    trainjob = BY_KIND["TrainJob"]
    needs = {
        "jobsets": {"get", "list", "watch", "create", "patch", "delete"},
        "configmaps": {"list", "watch", "create", "patch"},
        "secrets": {"get", "list", "watch", "create", "patch"},
        "podgroups": {"list", "watch", "create", "patch"},
    }
    assert {c.plural for c in trainjob.children} == set(needs)
    for target in rbac.TARGETS:
        role = yaml.safe_load((MANIFESTS / target.path).read_text(encoding="utf-8"))
        if target.scope(trainjob.info):  # the roles that grant the TrainJob's children
            for child in trainjob.children:
                group = child.api_version.rpartition("/")[0]
                assert needs[child.plural] <= _verbs(role, group, child.plural), (target.path, child.key)
        for ctx in trainjob.observe.context:
            if target.scope(REGISTERED_KINDS[ctx.kind]):
                group = ctx.api_version.rpartition("/")[0]
                assert {"list", "watch"} <= _verbs(role, group, ctx.plural), (target.path, ctx.key)


def test_check_names_the_stale_role(tmp_path: Path) -> None:
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    tree = tmp_path / "manifests"
    victim = tree / rbac.TARGETS[1].path
    victim.write_text(victim.read_text().replace("mxjobs, ", ""), encoding="utf-8")
    assert manifests.drift(tree) == [rbac.TARGETS[1].path]
    assert manifests.main(["--check", str(tree)]) == 1
    assert manifests.main(["--write", str(tree)]) == 0
    assert manifests.drift(tree) == []
    assert victim.read_text() == (MANIFESTS / rbac.TARGETS[1].path).read_text()


def test_a_new_kind_is_granted_in_its_own_group_and_the_rest_is_kept() -> None:
    tfjob = SERVED_KINDS["TFJob"]
    barjob = replace(tfjob, kind="BarJob", plural="barjobs", group="example.kubeflow.org")
    kinds = [*REGISTERED_KINDS.values(), barjob]
    committed = (MANIFESTS / rbac.TARGETS[0].path).read_text(encoding="utf-8")
    role = yaml.safe_load(rbac.generate(MANIFESTS, kinds)[rbac.TARGETS[0].path])
    old = yaml.safe_load(committed)
    assert role["rules"][6:9] == [
        {"apiGroups": ["example.kubeflow.org"], "resources": ["barjobs"], "verbs": list(rbac.JOB_VERBS)},
        {
            "apiGroups": ["example.kubeflow.org"],
            "resources": ["barjobs/status"],
            "verbs": ["get", "update", "patch"],
        },
        {"apiGroups": ["example.kubeflow.org"], "resources": ["barjobs/finalizers"], "verbs": ["update"]},
    ]
    assert role["rules"][:6] == old["rules"][:6] and role["rules"][9:] == old["rules"][6:]
    again = rbac.splice(
        rbac.splice(committed, rbac.job_rules(kinds), 100), rbac.job_rules(REGISTERED_KINDS.values()), 100
    )
    assert again == committed


def test_kinds_the_operator_does_not_reconcile_are_granted_too() -> None:
    role = yaml.safe_load((MANIFESTS / rbac.TARGETS[0].path).read_text(encoding="utf-8"))
    trainer = [r for r in role["rules"] if r["apiGroups"] == ["trainer.kubeflow.org"]]
    assert trainer[0]["resources"] == ["trainjobs", "trainingruntimes", "clustertrainingruntimes"]
    assert "TrainingRuntime" not in SERVED_KINDS


def test_every_webhook_kind_has_its_entry_and_its_namespace_patch() -> None:
    infos = webhook_kinds()
    for target in webhooks.TARGETS:
        doc = yaml.safe_load((MANIFESTS / target.path).read_text(encoding="utf-8"))
        assert [hook["name"] for hook in doc["webhooks"]] == [target.entry(i)["name"] for i in infos]
    assert (webhooks.SERVICE_NAME, webhooks.SERVICE_NAMESPACE) == (DEFAULT_SERVICE_NAME, DEFAULT_NAMESPACE)


def test_a_new_webhook_kind_gets_its_entry(tmp_path: Path) -> None:
    foo = replace(SERVED_KINDS["JAXJob"], kind="FooJob", plural="foojobs", singular="foojob")
    files = webhooks.generate(MANIFESTS, [*webhook_kinds(), foo])
    hooks = yaml.safe_load(files["base/webhook.yaml"])["webhooks"]
    assert hooks[-1]["name"] == "validator.foojob.training-operator.kubeflow.org"
    assert hooks[-1]["clientConfig"]["service"]["path"] == "/validate-kubeflow-org-v1-foojob"
    assert hooks[-1]["rules"][0]["resources"] == ["foojobs"]
    patch = yaml.safe_load(files["overlays/single-namespace/webhook-namespace-selector.yaml"])["webhooks"]
    assert patch[-1]["name"] == hooks[-1]["name"] and "namespaceSelector" in patch[-1]
