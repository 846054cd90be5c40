"""A JobSet (``jobset.x-k8s.io/v1alpha2``) controller for the embedded plane, as upstream's.

Kubeflow Trainer v2 runs every TrainJob as a JobSet, and users run JobSets of their own; on a
cluster the JobSet controller (kubernetes-sigs/jobset) turns them into batch/v1 Jobs. The local
plane has none, so this package is one, generic like the rest of ``kubetrain.embedded``:

* `crd`: upstream v0.10.1's CRD, installed by the plane;
* `constants`, `naming`, `defaults`, `construct`: upstream's keys, names, webhook defaults and
  the Jobs and headless Service built from a JobSet;
* `children`, `conditions`, `success_policy`, `failure_policy`, `startup_policy`, `ttl`: one
  module per policy, pure functions;
* `reconcile`: one pass as a pure ``plan()``; `controller`: the watches and the writes;
* `validation`: upstream's validating webhook, as an admission plugin of the plane's API server.
"""

from .controller import JobSetController
from .crd import JOBSET_VERSION, jobset_crd
from .validation import jobset_admission

__all__ = ["JOBSET_VERSION", "JobSetController", "jobset_admission", "jobset_crd"]
