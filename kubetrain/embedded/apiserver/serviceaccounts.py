"""Service accounts as a control plane provides them to pods: tokens, their volume, the root CA.

Four parts of Kubernetes, so that an in-cluster client in a local pod (chainer-operator's
hostfile generator, an SDK's ``load_incluster_config``) finds the API server and proves who it is:

* **The ServiceAccount admission plugin** (`admit_pod`, on pod CREATE): an empty
  ``serviceAccountName`` becomes ``default``; unless ``automountServiceAccountToken`` is false on
  the pod (or, when the pod does not say, on its ServiceAccount), every init container and
  container without a mount at ``/var/run/secrets/kubernetes.io/serviceaccount`` gets a read-only
  mount there of a ``kube-api-access-<5 random>`` projected volume (a service-account token at
  ``token``, expirationSeconds 3607; ``ca.crt`` of the ``kube-root-ca.crt`` ConfigMap; the pod's
  ``namespace`` from the downward API), added unless the pod has a ``kube-api-access-*`` volume
  already: plugin/pkg/admission/serviceaccount of Kubernetes 1.22-1.34 (``TokenVolumeSource``).
  Unlike that plugin, a pod naming a ServiceAccount that does not exist (yet) is not refused.
* **The TokenRequest API** (``POST .../serviceaccounts/<name>/token``, `TokenIssuer.request`):
  what the kubelet calls for the projected token. Tokens are JWTs (HS256 with a key of this
  server, where kube-apiserver signs RS256) with kube-apiserver's claims: ``iss``, ``sub``
  ``system:serviceaccount:<ns>:<name>``, ``aud`` (default: the issuer), ``exp``/``iat``/``nbf``,
  ``jti`` and ``kubernetes.io`` (namespace, serviceaccount and bound pod, name and uid).
* **Authentication** of such tokens (`TokenIssuer.authenticate`): signature, audience and expiry
  checked, and the ServiceAccount and bound pod must still exist with the same uid (a deleted
  pod's token stops working, as kube-apiserver's legacy-free bound tokens do). The user is
  ``system:serviceaccount:<ns>:<name>`` in the groups ``system:serviceaccounts``,
  ``system:serviceaccounts:<ns>`` and ``system:authenticated``; `rbac` authorizes it.
* **kube-controller-manager's serviceaccount and root-ca-cert-publisher controllers**
  (`namespace_objects`): every namespace has a ``default`` ServiceAccount and a
  ``kube-root-ca.crt`` ConfigMap whose ``ca.crt`` is the CA of the server's serving certificate.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JsonDict = dict[str, Any]

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DEFAULT_ACCOUNT = "default"
TOKEN_EXPIRATION = 3607  # serviceaccount.WarnOnlyBoundTokenExpirationSeconds
MIN_EXPIRATION = 600
DEFAULT_EXPIRATION = 3600
ISSUER = "https://kubernetes.default.svc.cluster.local"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# utilrand.String's alphabet: no vowels, no easily confused characters
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(n: int = 5) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def token_volume(name: str) -> JsonDict:
    """The projected volume the admission plugin adds (``TokenVolumeSource``, defaultMode 0644)."""
    return {
        "name": name,
        "projected": {
            "defaultMode": 0o644,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION, "path": "token"}},
                {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


def admit_pod(
    pod: JsonDict,
    account: Callable[[str], JsonDict | None],
    suffix: Callable[[], str] = random_suffix,
) -> None:
    """Mutate a pod being created as the ServiceAccount admission plugin does (see the module
    doc); `account(name)` is the ServiceAccount of that name in the pod's namespace, or None."""
    meta = pod.get("metadata") or {}
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return
    spec = pod.setdefault("spec", {})
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_ACCOUNT
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        sa = account(spec["serviceAccountName"])
        automount = (sa or {}).get("automountServiceAccountToken")
    if automount is False:
        return
    volumes = spec.get("volumes") or []
    existing = next(
        (v.get("name") for v in volumes if str(v.get("name", "")).startswith(VOLUME_PREFIX)), None
    )
    name = existing or f"{VOLUME_PREFIX}{suffix()}"
    needed = False
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            mounts = container.get("volumeMounts") or []
            if any(m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}]
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, token_volume(name)]


def root_ca_configmap(namespace: str, ca_pem: str) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "namespace": namespace,
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
        },
        "data": {"ca.crt": ca_pem},
    }


def default_account(namespace: str) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace},
    }


# -- tokens ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) when the user is a service account."""
        parts = self.name.split(":")
        if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
            return parts[2], parts[3]
        return None


ADMIN = UserInfo("kubetrain-admin", ("system:masters", "system:authenticated"))
"""The holder of the server's own bearer token (the kubeconfig's): allowed everything, as
kube-apiserver allows ``system:masters``."""


def service_account_user(namespace: str, name: str) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenError(ValueError):
    """A TokenRequest the server refuses: 422 with the validation error, or 400 (`bad_request`)."""

    def __init__(self, message: str, bad_request: bool = False) -> None:
        super().__init__(message)
        self.bad_request = bad_request


class TokenIssuer:
    """Issues and checks bound service-account tokens. `lookup(kind, namespace, name)` reads a
    stored ``serviceaccounts`` or ``pods`` object (None when absent)."""

    def __init__(
        self,
        lookup: Callable[[str, str, str], JsonDict | None],
        key: bytes | None = None,
        issuer: str = ISSUER,
    ) -> None:
        self._lookup = lookup
        self._key = key or secrets.token_bytes(32)
        self.issuer = issuer
        self._kid = _b64(hashlib.sha256(self._key).digest()[:12])

    def _sign(self, signing_input: bytes) -> str:
        return _b64(hmac.new(self._key, signing_input, hashlib.sha256).digest())

    def request(
        self, namespace: str, account: JsonDict, body: JsonDict, now: float | None = None
    ) -> JsonDict:
        """The answered TokenRequest for ServiceAccount `account` (raises TokenError)."""
        spec = dict(body.get("spec") or {})
        expiration = spec.get("expirationSeconds")
        expiration = DEFAULT_EXPIRATION if expiration is None else int(expiration)
        bad = f"spec.expirationSeconds: Invalid value: {expiration}"
        if expiration < MIN_EXPIRATION:
            raise TokenError(f"{bad}: may not specify a duration less than 10 minutes")
        if expiration > 1 << 32:
            raise TokenError(f"{bad}: may not specify a duration larger than 2^32 seconds")
        audiences = list(spec.get("audiences") or []) or [self.issuer]
        ameta = account.get("metadata") or {}
        issued = int(now if now is not None else time.time())
        private: JsonDict = {
            "namespace": namespace,
            "serviceaccount": {"name": ameta.get("name"), "uid": ameta.get("uid")},
        }
        bound = spec.get("boundObjectRef")
        if bound:
            kind = bound.get("kind")
            if kind != "Pod":
                raise TokenError(
                    f'spec.boundObjectRef.kind: Unsupported value: "{kind}": supported values: "Pod"'
                )
            pod = self._lookup("pods", namespace, bound.get("name") or "")
            puid = ((pod or {}).get("metadata") or {}).get("uid")
            if pod is None or (bound.get("uid") and bound["uid"] != puid):
                raise TokenError(
                    f'the bound object pods "{bound.get("name")}" does not exist or has another uid'
                )
            if ((pod or {}).get("spec") or {}).get("serviceAccountName") != ameta.get("name"):
                raise TokenError(
                    f'cannot bind token for serviceaccount "{ameta.get("name")}" to pod running with '
                    "different serviceaccount name.",
                    bad_request=True,
                )
            private["pod"] = {"name": bound.get("name"), "uid": puid}
            spec["boundObjectRef"] = {**bound, "uid": puid}
        claims = {
            "aud": audiences,
            "exp": issued + expiration,
            "iat": issued,
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
            "nbf": issued,
            "sub": f"system:serviceaccount:{namespace}:{ameta.get('name')}",
        }
        header = _b64(json.dumps({"alg": "HS256", "kid": self._kid}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signing_input = f"{header}.{payload}".encode()
        token = f"{header}.{payload}.{self._sign(signing_input)}"
        spec["audiences"] = audiences
        spec["expirationSeconds"] = expiration
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(issued + expiration))
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": ameta.get("name"), "namespace": namespace, "creationTimestamp": None},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": stamp},
        }

    def authenticate(self, token: str, now: float | None = None) -> UserInfo | None:
        """The user a token of this issuer names, or None (not ours, bad, expired, or stale)."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        if not hmac.compare_digest(self._sign(f"{parts[0]}.{parts[1]}".encode()), parts[2]):
            return None
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            return None
        moment = now if now is not None else time.time()
        if claims.get("iss") != self.issuer or self.issuer not in (claims.get("aud") or []):
            return None
        if not (claims.get("nbf", 0) - 60 <= moment < claims.get("exp", 0)):
            return None
        private = claims.get("kubernetes.io") or {}
        namespace = private.get("namespace") or ""
        sa = private.get("serviceaccount") or {}
        account = self._lookup("serviceaccounts", namespace, sa.get("name") or "")
        if account is None or (account.get("metadata") or {}).get("uid") != sa.get("uid"):
            return None
        pod_ref = private.get("pod")
        extra: dict[str, list[str]] = {}
        if pod_ref:
            pod = self._lookup("pods", namespace, pod_ref.get("name") or "")
            pmeta = (pod or {}).get("metadata") or {}
            if pod is None or pmeta.get("uid") != pod_ref.get("uid") or pmeta.get("deletionTimestamp"):
                return None
            extra = {
                "authentication.kubernetes.io/pod-name": [pod_ref["name"]],
                "authentication.kubernetes.io/pod-uid": [pod_ref["uid"]],
            }
        user = service_account_user(namespace, sa.get("name") or "")
        return UserInfo(user.name, user.groups, extra)
