"""What of a pod's securityContext the local node can honour, and the one rule it enforces.

Containers are processes of the user running the node, with no namespaces, LSM profiles or
capability sets of their own, so most securityContext fields cannot be applied. Silently ignoring
them would let a pod believe it runs as uid 1000 or read-only; instead `unenforced` lists each set
field the node cannot honour with what happens instead, and the pod worker reports them in one
Warning event ``SecurityContextNotEnforced``. A field is honoured when the process already is what
it asks (``runAsUser`` equal to the node's uid, ``capabilities.drop`` for a non-root user, ...).
``windowsOptions`` is skipped, as a Linux kubelet skips it; ``procMount`` too (the host /proc is
what ``Unmasked`` asks for, and ``Default`` is what every pod gets unless it says otherwise).

``runAsNonRoot`` is enforced as the kubelet's ``verifyRunAsNonRoot`` does, with its messages: a
container that must not run as root does not start when the node would run it as root.
"""

from __future__ import annotations

import json
import os
import pwd
from dataclasses import dataclass, field
from typing import Any

from .errors import ContainerConfigError

JsonDict = dict[str, Any]

EVENT_REASON = "SecurityContextNotEnforced"

_OVERRIDABLE = (
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "seLinuxOptions",
    "seccompProfile",
    "appArmorProfile",
)
"""Fields a container's securityContext overrides from the pod's (DetermineEffectiveSecurityContext)."""


@dataclass(frozen=True)
class Identity:
    """Who the node's processes run as."""

    uid: int
    gid: int
    groups: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def current(cls) -> Identity:
        return cls(os.geteuid(), os.getegid(), frozenset(os.getgroups()))

    @property
    def who(self) -> str:
        try:
            name = pwd.getpwuid(self.uid).pw_name
        except KeyError:
            name = "no name"
        return f"uid {self.uid} ({name}), the user running kubetrain"


def _dict(value: Any) -> JsonDict:
    return value if isinstance(value, dict) else {}


def _containers(spec: JsonDict) -> list[tuple[str, JsonDict]]:
    out = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        for i, c in enumerate(items if isinstance(items, list) else []):
            if isinstance(c, dict):
                out.append((f"spec.{key}[{i}]", c))
    return out


def _profile(value: Any) -> str:
    return str(_dict(value).get("type") or "")


def _field_problem(name: str, value: Any, me: Identity) -> str | None:
    """What happens instead of `name: value`, or None when the node already honours it."""
    groups = me.groups | {me.gid}
    if name == "runAsUser":
        return None if value == me.uid else f"runs as {me.who}"
    if name == "runAsGroup":
        return None if value == me.gid else f"runs as gid {me.gid}"
    if name == "supplementalGroups":
        wanted = set(value) if isinstance(value, list) else set()
        return None if wanted <= groups else f"its groups stay {sorted(groups)}"
    if name == "fsGroup":
        return None if value in groups else "volumes are not given to that group, nor is the process"
    if name == "privileged":
        if bool(value) == (me.uid == 0):
            return None
        return "runs with every privilege of root" if me.uid == 0 else f"runs unprivileged, as {me.who}"
    if name == "capabilities":
        caps = _dict(value)
        if caps.get("add") and me.uid != 0:
            return f"nothing is added: the process has the capabilities of {me.who}"
        if caps.get("drop") and me.uid == 0:
            return "nothing is dropped: the process has every capability of root"
        return None
    if name == "allowPrivilegeEscalation":
        return None if value is not False else "setuid programs still gain privileges (no no_new_privs)"
    if name == "readOnlyRootFilesystem":
        return None if value is not True else f"the filesystem stays writable wherever {me.who} may write"
    if name == "seLinuxOptions":
        return "no SELinux label is applied" if _dict(value) else None
    if name == "seccompProfile":
        return None if _profile(value) in ("", "Unconfined") else "no seccomp filter is applied"
    if name == "appArmorProfile":
        return None if _profile(value) in ("", "Unconfined") else "no AppArmor profile is applied"
    if name == "sysctls":
        return "the node's values stay" if value else None
    return None


_POD_ONLY = ("supplementalGroups", "fsGroup", "sysctls")
_CONTAINER_ONLY = ("privileged", "capabilities", "allowPrivilegeEscalation", "readOnlyRootFilesystem")


def unenforced(pod: JsonDict, me: Identity) -> list[str]:
    """``<field path>=<value>: <what happens instead>`` for each set field the node cannot honour
    (a pod-level field once, however many containers inherit it)."""
    spec = _dict(pod.get("spec"))
    pod_sc = _dict(spec.get("securityContext"))
    found: dict[str, str] = {}

    def check(path: str, name: str, value: Any) -> None:
        problem = _field_problem(name, value, me)
        if problem is not None:
            found.setdefault(f"{path}.{name}", f"{path}.{name}={_show(value)}: {problem}")

    for name in _POD_ONLY:
        if pod_sc.get(name) is not None:
            check("spec.securityContext", name, pod_sc[name])
    containers = _containers(spec)
    for path, c in containers:
        sc = _dict(c.get("securityContext"))
        for name in _CONTAINER_ONLY:
            if sc.get(name) is not None:
                check(f"{path}.securityContext", name, sc[name])
        for name in _OVERRIDABLE:
            if sc.get(name) is not None:
                check(f"{path}.securityContext", name, sc[name])
            elif pod_sc.get(name) is not None:
                check("spec.securityContext", name, pod_sc[name])
    if not containers:
        for name in _OVERRIDABLE:
            if pod_sc.get(name) is not None:
                check("spec.securityContext", name, pod_sc[name])
    return list(found.values())


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def verify_run_as_non_root(pod: JsonDict, container: JsonDict, me: Identity) -> None:
    """The kubelet's verifyRunAsNonRoot, with the node's user as the image's: raises
    ContainerConfigError (the container waits in CreateContainerConfigError)."""
    spec = _dict(pod.get("spec"))
    pod_sc, sc = _dict(spec.get("securityContext")), _dict(container.get("securityContext"))
    non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
    if non_root is not True:
        return
    meta = _dict(pod.get("metadata"))
    pod_id = f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"  # format.Pod
    where = f'(pod: "{pod_id}", container: {container.get("name", "")})'
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    if user == 0:
        raise ContainerConfigError(f"container's runAsUser breaks non-root policy {where}")
    if me.uid == 0:  # a runAsUser the node cannot switch to changes nothing: it would run as root
        raise ContainerConfigError(f"container has runAsNonRoot and image will run as root {where}")
