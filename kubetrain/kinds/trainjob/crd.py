"""Trainer v2.3.0's three CRDs, shipped unchanged in `kubetrain/kinds/trainjob/data` (upstream's
`manifests/base/crds/`, from the `github.com/kubeflow/trainer/v2@v2.3.0` module).

Shipped, not generated from our own types: their schemas embed the whole JobSet spec (a runtime's
`template`) and pod template specs, 2.4 MB of controller-gen output with upstream's CEL rules
(`runtimeRef` and `managedBy` immutable, the allowed `managedBy` values, the name format), which
our types would have to restate field by field for nothing but a copy of the same schema. A
cluster gets them from `kubetrain install` (`manifests/crds`, the same bytes); the local plane
and `--install-crds` from the registrations.
"""

from __future__ import annotations

from kubetrain.kinds.registration import ShippedCRD

PACKAGE = "kubetrain.kinds.trainjob"

TRAINJOBS_CRD = ShippedCRD(PACKAGE, "trainer.kubeflow.org_trainjobs.yaml")
TRAINING_RUNTIMES_CRD = ShippedCRD(PACKAGE, "trainer.kubeflow.org_trainingruntimes.yaml")
CLUSTER_TRAINING_RUNTIMES_CRD = ShippedCRD(PACKAGE, "trainer.kubeflow.org_clustertrainingruntimes.yaml")
