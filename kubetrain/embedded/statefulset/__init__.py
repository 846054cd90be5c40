"""apps/v1 StatefulSets for the embedded plane: ordinal pods, ordered or parallel, with revisions.

``identity`` names and labels a pod, ``revisions`` builds ControllerRevisions, ``plan`` decides
one sync (pure), ``controller`` watches and carries plans out.
"""

from kubetrain.embedded.statefulset.controller import StatefulSetController

__all__ = ["StatefulSetController"]
