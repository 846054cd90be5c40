"""The ServiceAccount admission plugin's mutation and the token issuer, without a server."""

from __future__ import annotations

from typing import Any

from kubetrain.embedded.apiserver.serviceaccounts import MOUNT_PATH, TokenIssuer, admit_pod, token_volume


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}], **spec}}


def test_default_account_and_volume() -> None:
    pod = _pod(initContainers=[{"name": "i"}])
    admit_pod(pod, lambda name: None, suffix=lambda: "abcde")
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "default"
    assert spec["volumes"] == [token_volume("kube-api-access-abcde")]
    mount = {"name": "kube-api-access-abcde", "readOnly": True, "mountPath": MOUNT_PATH}
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][0]["volumeMounts"] == [mount]


def test_automount_off_on_the_account_or_pod_and_existing_volumes() -> None:
    quiet = {"metadata": {"name": "q"}, "automountServiceAccountToken": False}
    pod = _pod(serviceAccountName="q")
    admit_pod(pod, lambda name: quiet if name == "q" else None)
    assert "volumes" not in pod["spec"]
    pod = _pod(serviceAccountName="q", automountServiceAccountToken=True)  # the pod's word wins
    admit_pod(pod, lambda name: quiet)
    assert pod["spec"]["volumes"][0]["name"].startswith("kube-api-access-")
    again = _pod(volumes=[{"name": "kube-api-access-zzzzz", "emptyDir": {}}])
    admit_pod(again, lambda name: None)
    assert [v["name"] for v in again["spec"]["volumes"]] == ["kube-api-access-zzzzz"]
    assert again["spec"]["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-zzzzz"


def test_tokens_name_their_account_and_end_with_their_pod() -> None:
    objects: dict[tuple[str, str, str], dict[str, Any]] = {
        ("serviceaccounts", "ns", "sa"): {"metadata": {"name": "sa", "uid": "u1"}},
        ("pods", "ns", "p"): {"metadata": {"name": "p", "uid": "u2"}, "spec": {"serviceAccountName": "sa"}},
    }
    issuer = TokenIssuer(lambda kind, ns, name: objects.get((kind, ns, name)))
    body = {"spec": {"boundObjectRef": {"kind": "Pod", "name": "p", "uid": "u2"}, "expirationSeconds": 3607}}
    answer = issuer.request("ns", objects[("serviceaccounts", "ns", "sa")], body, now=1000)
    token = answer["status"]["token"]
    assert answer["status"]["expirationTimestamp"] == "1970-01-01T01:16:47Z"
    user = issuer.authenticate(token, now=1001)
    assert user is not None and user.name == "system:serviceaccount:ns:sa"
    assert "system:serviceaccounts:ns" in user.groups
    assert user.extra["authentication.kubernetes.io/pod-name"] == ["p"]
    assert issuer.authenticate(token, now=1000 + 3607) is None  # expired
    assert issuer.authenticate(token[:-2] + "xx", now=1001) is None  # not signed by us
    del objects[("pods", "ns", "p")]
    assert issuer.authenticate(token, now=1001) is None  # its pod is gone
