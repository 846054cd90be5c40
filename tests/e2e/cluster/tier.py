"""The cluster tier's switch: importing this module skips the importing test module when
`KUBETRAIN_E2E_KUBECONFIG` is unset, outside CI. That is the tier's one skip, by design: without a
cluster there is nothing to test here. Under CI=true it is an error instead: `.ci/run` starts a
real control plane for it.

Settings (environment):
* `KUBETRAIN_E2E_KUBECONFIG` (required): the cluster to test;
* `KUBETRAIN_E2E_CONTEXT`: a context of that kubeconfig (default: its current context);
* `KUBETRAIN_E2E_OPERATOR`: `local` (default) runs `kubetrain operator` as a local process against
  the cluster; `external` tests the operator already running there (the in-cluster Deployment of
  `kubetrain install`, or the one inside `kubetrain up`);
* `KUBETRAIN_E2E_IMAGE`: the image of test pods on real nodes (default python:3.11-slim; the
  commands are `python -c ...`);
* `KUBETRAIN_E2E_TIMEOUT`: seconds a job may take to finish (default 120);
* `KUBETRAIN_E2E_NETWORK`: the network of the tier's own node, `isolated` (default: a loopback
  address per pod, names resolve) or `host`;
* `KUBETRAIN_E2E_BIND_PENDING=1`: the tier's node also binds pending pods (clusters without a
  scheduler; always on for an embedded plane).

`.ci/run` starts a real control plane with `scripts/k8s-control-plane up` and points the tier at it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_PATH = os.environ.get("KUBETRAIN_E2E_KUBECONFIG", "")
_HOW = (
    "set KUBETRAIN_E2E_KUBECONFIG to a cluster's kubeconfig, e.g. a real control plane on this "
    "machine: scripts/k8s-control-plane up DIR, then KUBETRAIN_E2E_KUBECONFIG=DIR/kubeconfig"
)
if not _PATH:
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI=true: the cluster tier must run: {_HOW}")
    pytest.skip(f"cluster tier: {_HOW}", allow_module_level=True)

KUBECONFIG = Path(_PATH).expanduser()
CONTEXT = os.environ.get("KUBETRAIN_E2E_CONTEXT") or None
OPERATOR_MODE = os.environ.get("KUBETRAIN_E2E_OPERATOR", "local")
TIMEOUT = float(os.environ.get("KUBETRAIN_E2E_TIMEOUT", "120"))
NETWORK = os.environ.get("KUBETRAIN_E2E_NETWORK", "isolated")
if NETWORK not in ("isolated", "host"):
    raise ValueError(f"KUBETRAIN_E2E_NETWORK={NETWORK!r}: use isolated or host")
if OPERATOR_MODE not in ("local", "external"):
    raise ValueError(f"KUBETRAIN_E2E_OPERATOR={OPERATOR_MODE!r}: use local or external")
if not KUBECONFIG.is_file():
    raise FileNotFoundError(f"KUBETRAIN_E2E_KUBECONFIG={KUBECONFIG}: no such file")
