"""The text files MPI reads: hostfiles, `discover_hosts.sh` (Horovod elastic) and `kubexec.sh`.

Byte-exact with upstream because images and user scripts parse them (`mpirun --hostfile`,
`horovodrun --host-discovery-script`).
"""

from __future__ import annotations

from kubetrain.kinds.mpijob.types import OPENMPI

KUBECTL_DIR = "/opt/kube"


# ---- v2beta1 (mpi-operator) ---------------------------------------------------------------------


def v2_host(pod: str, job: str, namespace: str, cluster_domain: str = "") -> str:
    """`<pod>.<job>.<ns>.svc[.<domain>]`: the pod's name under the job's headless Service."""
    host = f"{pod}.{job}.{namespace}.svc"
    return f"{host}.{cluster_domain}" if cluster_domain else host


def v2_hostfile(
    job: str,
    namespace: str,
    workers: int,
    slots: int,
    implementation: str,
    launcher_as_worker: bool,
    cluster_domain: str = "",
) -> str:
    """OpenMPI `<host> slots=<n>`; Intel MPI and MPICH `<host>:<n>`; the launcher first if it works."""
    names = [f"{job}-launcher"] if launcher_as_worker else []
    names += [f"{job}-worker-{i}" for i in range(workers)]
    lines = []
    for name in names:
        host = v2_host(name, job, namespace, cluster_domain)
        lines.append(f"{host} slots={slots}\n" if implementation == OPENMPI else f"{host}:{slots}\n")
    return "".join(lines)


def v2_discover_hosts(job: str, namespace: str, running_workers: list[str], launcher_as_worker: bool) -> str:
    """`echo <host>` per running worker (sorted), the launcher first if it works; no slots.

    Upstream writes these hosts without the cluster domain even when one is configured.
    """
    out = "#!/bin/sh\n"
    if launcher_as_worker:
        out += f"echo {v2_host(f'{job}-launcher', job, namespace)}\n"
    for pod in sorted(running_workers):
        out += f"echo {v2_host(pod, job, namespace)}\n"
    return out


# ---- v1 (training-operator) ---------------------------------------------------------------------


def v1_hostfile(job: str, workers: int, slots: int, gpu_launcher: bool) -> str:
    """`<pod> slots=<n>` per worker; a GPU launcher is listed first (it runs ranks too)."""
    out = f"{job}-launcher slots={slots}\n" if gpu_launcher else ""
    return out + "".join(f"{job}-worker-{i} slots={slots}\n" for i in range(workers))


def v1_discover_hosts(job: str, running_workers: list[str], slots: int, gpu_launcher: bool) -> str:
    """Upstream's exact bytes: no trailing newline, and a blank line after a GPU launcher's entry."""
    out = "#!/bin/sh"
    if gpu_launcher:
        out += f"\necho {job}-launcher:{slots}\n"
    for pod in sorted(running_workers):
        out += f"\necho {pod}:{slots}"
    return out


def v1_kubexec(main_container: str | None) -> str:
    """OpenMPI's rsh agent: `kubexec.sh <pod> <command...>` runs the command in the worker pod."""
    script = f"#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n{KUBECTL_DIR}/kubectl exec ${{POD_NAME}}"
    if main_container:
        script += f" --container {main_container}"
    return script + ' -- /bin/sh -c "$*"'
