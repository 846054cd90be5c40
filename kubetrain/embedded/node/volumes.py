"""Pod volumes as plain files in the pod's sandbox directory.

Supported: ``configMap``, ``secret`` (``items``, ``mode``, ``defaultMode``, ``optional``),
``emptyDir``, ``hostPath`` (the host directory itself), ``downwardAPI`` and ``projected``
(configMap, secret, downwardAPI and serviceAccountToken sources: the ``kube-api-access-*`` volume
the ServiceAccount admission plugin adds to every pod), and ``persistentVolumeClaim`` as a directory per
namespace and claim under the node's state dir, shared by every pod that names the claim (so a
job's replicas can share checkpoints, as with a ReadWriteMany volume). Other types fail the pod's
start with a FailedMount message rather than run with a silently missing directory.

Files are written fresh each time a pod is (re)started; ``readOnly`` is not enforced beyond the
file modes. See `paths` for how mount paths in the spec reach these directories.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from .errors import MountError
from .expand import expand
from .sources import ObjectSource, TokenSource, field_value, read_source, resource_value

JsonDict = dict[str, Any]

DEFAULT_MODE = 0o644


def _safe_join(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if rel.startswith("/") or ".." in Path(rel).parts or not str(target).startswith(str(root.resolve())):
        raise MountError(f"invalid path {rel!r}: must be relative and must not contain '..'")
    return target


def _write(root: Path, rel: str, content: bytes, mode: int) -> None:
    path = _safe_join(root, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.chmod(0o600)
    path.write_bytes(content)
    path.chmod(mode)


class VolumeBuilder:
    """Materialises one pod's volumes under ``<pod_dir>/volumes`` and says where each one lives."""

    def __init__(
        self,
        pod: JsonDict,
        pod_dir: Path,
        source: ObjectSource,
        *,
        pod_ip: str,
        host_ip: str,
        allocatable: Mapping[str, Fraction],
        claims_dir: Path,
    ) -> None:
        self.pod = pod
        self.root = pod_dir / "volumes"
        self.source = source
        self.pod_ip = pod_ip
        self.host_ip = host_ip
        self.allocatable = allocatable
        self.claims_dir = claims_dir
        self.namespace = (pod.get("metadata") or {}).get("namespace") or "default"

    async def build(self) -> dict[str, Path]:
        """Volume name -> local directory, for every volume of the pod."""
        self.root.mkdir(parents=True, exist_ok=True)
        locations: dict[str, Path] = {}
        for vol in (self.pod.get("spec") or {}).get("volumes") or []:
            name = vol.get("name", "")
            locations[name] = await self._build_one(name, vol)
        return locations

    async def _build_one(self, name: str, vol: JsonDict) -> Path:
        if "hostPath" in vol:
            return self._host_path(vol["hostPath"] or {})
        if "persistentVolumeClaim" in vol:
            claim = (vol["persistentVolumeClaim"] or {}).get("claimName", name)
            path = self.claims_dir / self.namespace / claim
            path.mkdir(parents=True, exist_ok=True)
            return path
        target = self.root / name
        if "emptyDir" in vol:
            target.mkdir(parents=True, exist_ok=True)
            return target
        if target.exists():  # configMap/secret/downward content is rewritten whole on each start
            shutil.rmtree(target)
        target.mkdir(parents=True)
        if "configMap" in vol:
            cm = vol["configMap"] or {}
            await self._keys(target, "configmap", cm.get("name", ""), cm, cm.get("defaultMode", DEFAULT_MODE))
        elif "secret" in vol:
            sec = vol["secret"] or {}
            await self._keys(
                target, "secret", sec.get("secretName", ""), sec, sec.get("defaultMode", DEFAULT_MODE)
            )
        elif "downwardAPI" in vol:
            dw = vol["downwardAPI"] or {}
            self._downward(target, dw.get("items") or [], dw.get("defaultMode", DEFAULT_MODE))
        elif "projected" in vol:
            await self._projected(target, vol["projected"] or {})
        else:
            kinds = sorted(k for k in vol if k != "name")
            raise MountError(
                f'MountVolume.SetUp failed for volume "{name}" : volume type {kinds} is not '
                "supported by the kubetrain local node"
            )
        return target

    def _host_path(self, spec: JsonDict) -> Path:
        path = Path(spec.get("path", ""))
        kind = spec.get("type") or ""
        if kind == "DirectoryOrCreate":
            path.mkdir(parents=True, exist_ok=True)
        elif kind == "FileOrCreate" and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        elif kind in ("Directory", "File") and not path.exists():
            raise MountError(
                f"MountVolume.SetUp failed: hostPath type check failed: {path} is not a {kind.lower()}"
            )
        return path

    async def _keys(self, target: Path, kind: str, name: str, spec: JsonDict, default_mode: int) -> None:
        data = await read_source(self.source, kind, self.namespace, name)
        if data is None:
            if spec.get("optional"):
                return
            raise MountError(f'MountVolume.SetUp failed for volume "{name}" : {kind} "{name}" not found')
        items = spec.get("items")
        if not items:
            for key, value in data.items():
                _write(target, key, value, default_mode)
            return
        for item in items:
            key = item.get("key", "")
            if key not in data:
                if spec.get("optional"):
                    continue
                raise MountError(
                    f'MountVolume.SetUp failed for volume "{name}" : configmap references non-existent '
                    f"config key: {key}"
                    if kind == "configmap"
                    else f'MountVolume.SetUp failed for volume "{name}" : references non-existent secret '
                    f"key: {key}"
                )
            _write(target, item.get("path") or key, data[key], item.get("mode", default_mode))

    def _downward(self, target: Path, items: list[JsonDict], default_mode: int) -> None:
        for item in items:
            try:
                if "fieldRef" in item:
                    value = field_value(
                        self.pod, (item["fieldRef"] or {}).get("fieldPath", ""), self.pod_ip, self.host_ip
                    )
                else:
                    rf = item.get("resourceFieldRef") or {}
                    value = resource_value(
                        self.pod,
                        rf.get("containerName", ""),
                        rf.get("resource", ""),
                        rf.get("divisor"),
                        self.allocatable,
                    )
            except ValueError as err:
                raise MountError(f"MountVolume.SetUp failed: {err}") from err
            _write(target, item.get("path", ""), value.encode(), item.get("mode", default_mode))

    async def _projected(self, target: Path, spec: JsonDict) -> None:
        default_mode = spec.get("defaultMode", DEFAULT_MODE)
        for src in spec.get("sources") or []:
            if "configMap" in src:
                cm = src["configMap"] or {}
                await self._keys(target, "configmap", cm.get("name", ""), cm, default_mode)
            elif "secret" in src:
                sec = src["secret"] or {}
                await self._keys(target, "secret", sec.get("name", ""), sec, default_mode)
            elif "downwardAPI" in src:
                self._downward(target, (src["downwardAPI"] or {}).get("items") or [], default_mode)
            elif "serviceAccountToken" in src:
                await self._token(target, src["serviceAccountToken"] or {}, default_mode)
            # clusterTrustBundle and podCertificate need signers a local node does not have

    async def _token(self, target: Path, spec: JsonDict, mode: int) -> None:
        """Request the token as the kubelet does; without a TokenRequest API, leave it out."""
        if not hasattr(self.source, "token"):
            return
        source: TokenSource = self.source  # type: ignore[assignment]
        account = (self.pod.get("spec") or {}).get("serviceAccountName") or "default"
        try:
            token = await source.token(
                self.pod, account, spec.get("audience") or "", int(spec.get("expirationSeconds") or 3600)
            )
        except Exception as err:
            raise MountError(
                f'MountVolume.SetUp failed: failed to fetch token: serviceaccounts "{account}": {err}'
            ) from err
        if token is not None:
            _write(target, spec.get("path") or "token", token.encode(), mode)


def container_mounts(
    container: JsonDict, volumes: Mapping[str, Path], env: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(mount path, local path) for each of the container's volumeMounts, with subPath(Expr) applied."""
    mounts: list[tuple[str, str]] = []
    for mount in container.get("volumeMounts") or []:
        base = volumes.get(mount.get("name", ""))
        if base is None:
            raise MountError(
                f'unable to find volume "{mount.get("name")}" for container "{container.get("name")}"'
            )
        sub = mount.get("subPath") or (expand(mount["subPathExpr"], env) if mount.get("subPathExpr") else "")
        local = _safe_join(base, sub) if sub else base
        if sub and not local.exists():
            local.mkdir(parents=True, exist_ok=True)
        mounts.append((mount.get("mountPath", ""), os.fspath(local)))
    return mounts
