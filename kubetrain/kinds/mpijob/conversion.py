"""One CRD `mpijobs.kubeflow.org` serving MPIJob `v1`, `v2beta1` and `v1alpha2`: which mechanics a job gets.

Upstream ships the two versions in two operators whose CRDs cannot be installed together
(kubeflow/trainer#1930). kubetrain serves both from one CRD and keeps every job on the mechanics
of the version it was written in:

* `v1` (training-operator): ConfigMap with `kubexec.sh`, launcher RBAC, launcher *pod* that
  reaches the workers through `kubectl exec`;
* `v2beta1` (mpi-operator): headless Service, SSH key Secret, sshd workers, launcher batch/v1 Job;
* `v1alpha2` (the original mpi-operator, v0.2): ConfigMap with `kubexec.sh`, launcher RBAC, workers
  as a StatefulSet, a launcher batch/v1 Job reaching them through `kubectl exec`, the StatefulSet
  scaled to 0 when the job ends.

The design, and why:

1. **Storage version `v1`, conversion strategy `None`.** `None` only rewrites `apiVersion`, so
   no conversion webhook has to be up for every read and write of an MPIJob, and no field is
   translated. `v1` is the storage version because an API server applies the *storage* version's
   CRD defaults to every object read from etcd: v1 declares none beyond `runPolicy.suspend` (which
   both versions default to false), so a job never gains the other version's defaults on read.
   Clusters coming from training-operator already store `v1`; objects stored by mpi-operator as
   `v2beta1` stay readable (both versions remain in `spec.versions`).
2. **A superset schema per version.** Each version's schema also declares the other version's
   spec fields (without their defaults), so the API server prunes nothing when a job is written
   through either endpoint: `kubectl edit` (which uses the preferred version, v1) keeps a v2beta1
   job's `mpiImplementation`; Kueue (which speaks v2beta1) keeps a v1 job's `mainContainer`.
3. **The version a job was written in is recoverable without a webhook.** The v2beta1 schema
   defaults `sshAuthMountPath`, `launcherCreationPolicy`, `mpiImplementation` and
   `runLauncherAsWorker` (exactly as mpi-operator's CRD does) and the v1 schema does not, and the
   API server applies the *request* version's defaults on create: every job created as v2beta1
   carries those keys, no job created as v1 does. That also holds for jobs created by an upstream
   mpi-operator CRD before kubetrain was installed. Likewise the v1alpha2 schema defaults the
   top-level `backoffLimit` (to 6, what the v1alpha2 controller defaulted in memory), a field the
   other versions do not have.
4. **The operator freezes the answer** in the annotation `kubeflow.org/mpi-api-version` on its
   first reconcile, because a later write through the v2beta1 endpoint (Kueue suspending a job)
   would add the v2beta1 defaults to a v1 job. A user may set the annotation to choose explicitly.

`written_version(raw)` is the rule: annotation, else markers, else the object's own apiVersion
(offline files, and the operator, which lists MPIJobs as `v1`, the storage version: there a job
without markers is a v1 job).
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.api.kinds import GROUP, V1
from kubetrain.kinds.mpijob.types import V1ALPHA2_MARKERS, V2BETA1_MARKERS

V2BETA1 = "v2beta1"
V1ALPHA2 = "v1alpha2"
MPI_VERSIONS = (V1, V2BETA1, V1ALPHA2)
STORAGE_VERSION = V1
API_VERSION_ANNOTATION = f"{GROUP}/mpi-api-version"
"""Records the version whose mechanics a job uses (`v1`, `v2beta1` or `v1alpha2`); set by the operator."""


def _version_of(api_version: Any) -> str | None:
    if isinstance(api_version, str) and api_version.startswith(f"{GROUP}/"):
        version = api_version.split("/", 1)[1]
        if version in MPI_VERSIONS:
            return version
    return None


def annotated_version(raw: Any) -> str | None:
    """The version recorded in the annotation, when it names one we serve."""
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    value = annotations.get(API_VERSION_ANNOTATION) if isinstance(annotations, dict) else None
    return value if value in MPI_VERSIONS else None


def _has_markers(raw: Any, markers: tuple[str, ...]) -> bool:
    spec = raw.get("spec") if isinstance(raw, dict) else None
    return isinstance(spec, dict) and any(key in spec for key in markers)


def has_v2beta1_markers(raw: Any) -> bool:
    return _has_markers(raw, V2BETA1_MARKERS)


def written_version(raw: Any) -> str:
    """The version whose mechanics apply to `raw` (see the module docstring for the rule)."""
    recorded = annotated_version(raw)
    if recorded is not None:
        return recorded
    if has_v2beta1_markers(raw):
        return V2BETA1
    if _has_markers(raw, V1ALPHA2_MARKERS):
        return V1ALPHA2
    own = _version_of(raw.get("apiVersion")) if isinstance(raw, dict) else None
    return own or STORAGE_VERSION


def convert(raw: dict[str, Any], version: str) -> dict[str, Any]:
    """What the API server returns when `raw` is read as `version` (conversion strategy None).

    Only `apiVersion` changes; with the superset schema nothing is pruned. The result is a copy.
    """
    if version not in MPI_VERSIONS:
        raise ValueError(f"MPIJob has no version {version!r}; served: {', '.join(MPI_VERSIONS)}")
    out = copy.deepcopy(raw)
    out["apiVersion"] = f"{GROUP}/{version}"
    return out
