"""Annotations kubetrain's own components agree on (the client writes them, the local node reads).

They live in the bottom layer because the writer (the client) and the reader (the embedded node)
may not import each other.
"""

from __future__ import annotations

WORKDIR = "kubetrain.io/workdir"
"""The job directory of a pod whose containers set no `workingDir`: the directory of the job file it
came from, whose entries a local node shows in the pod's own working directory. `kubetrain
create/apply -f`, `kubetrain run` and `Client.create(path)` set it on the job and on each pod
template (pods carry their template's annotations), unless the job already names one; kubectl users
may write it themselves. A cluster's kubelet ignores it."""
