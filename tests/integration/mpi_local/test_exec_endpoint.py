"""The node agent's exec endpoint through the ``kubectl`` and ``ssh`` wrappers it puts on PATH."""

from __future__ import annotations

import asyncio
import os
from ipaddress import ip_address, ip_network
from pathlib import Path

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.kube.client import core_path

from .conftest import PY, create, wait_for


async def run_tool(agent: NodeAgent, *argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    """Run a wrapper from the agent's bin as a process of the `default` namespace would."""
    env = {**os.environ, "KUBETRAIN_POD_NAMESPACE": "default"}
    proc = await asyncio.create_subprocess_exec(
        str(agent.exec_service.bin_dir / argv[0]),
        *argv[1:],
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 30)
    return int(proc.returncode or 0), out.decode(), err.decode()


async def running_pod(api: KubeAPI, tmp_path: Path) -> None:
    await create(
        api, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v1"}}
    )
    await create(
        api,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "target"},
            "spec": {
                "hostname": "target",
                "containers": [
                    {
                        "name": "main",
                        "image": "python:3.11",
                        "command": [PY, "-c", "import time; time.sleep(3600)"],
                        "env": [{"name": "GREETING", "value": "hello-from-target"}],
                        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}],
                    }
                ],
                "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
            },
        },
    )

    async def running() -> bool:
        pod = await api.get_or_none(core_path("pods", "default", "target"))
        return (pod or {}).get("status", {}).get("phase") == "Running"

    await wait_for(running, 30, "pod target running")


async def test_exit_codes_stdout_stderr(api: KubeAPI, plane: NodeAgent, tmp_path: Path) -> None:
    await running_pod(api, tmp_path)
    code, out, err = await run_tool(
        plane, "kubectl", "exec", "target", "--", "sh", "-c", "echo out; echo err >&2; exit 3"
    )
    assert (code, out, err) == (3, "out\n", "err\n")
    code, out, _ = await run_tool(plane, "kubectl", "exec", "target", "--", "true")
    assert (code, out) == (0, "")


async def test_runs_in_the_pods_environment(api: KubeAPI, plane: NodeAgent, tmp_path: Path) -> None:
    await running_pod(api, tmp_path)
    code, out, err = await run_tool(
        plane,
        "kubectl",
        "exec",
        "target",
        "--",
        "sh",
        "-c",
        "echo $GREETING $HOSTNAME $KUBETRAIN_POD_IP; cat /etc/cfg/k; echo; hostname",
    )
    assert code == 0, err
    greeting, hostname, ip, value, nss_hostname = out.split()
    assert (greeting, hostname, value, nss_hostname) == ("hello-from-target", "target", "v1", "target")
    assert ip_address(ip) in ip_network(plane.network.pod_cidr)
    code, out, err = await run_tool(plane, "ssh", "-o", "ConnectionAttempts=2", "target", "echo", "$GREETING")
    assert (code, out) == (0, "hello-from-target\n"), err


async def test_stdin_is_streamed(api: KubeAPI, plane: NodeAgent, tmp_path: Path) -> None:
    await running_pod(api, tmp_path)
    code, out, _ = await run_tool(
        plane, "kubectl", "exec", "-i", "target", "--", "cat", stdin=b"line1\nline2\n"
    )
    assert (code, out) == (0, "line1\nline2\n")
    code, out, _ = await run_tool(plane, "ssh", "target", "wc -l", stdin=b"a\nb\nc\n")
    assert (code, out.strip()) == (0, "3")


async def test_unknown_pod_and_missing_command(api: KubeAPI, plane: NodeAgent, tmp_path: Path) -> None:
    await running_pod(api, tmp_path)
    code, _, err = await run_tool(plane, "kubectl", "exec", "nope", "--", "true")
    assert code == 1
    assert 'Error from server (NotFound): pods "nope" not found' in err
    code, _, err = await run_tool(plane, "kubectl", "exec", "target", "-c", "other", "--", "true")
    assert code == 1 and "container other is not valid for pod target" in err
    code, _, err = await run_tool(plane, "kubectl", "exec", "target", "--", "/no/such/program")
    assert code == 127 and "/no/such/program" in err
    code, _, err = await run_tool(plane, "ssh", "nope.nowhere.default.svc", "true")
    assert code == 255 and "nope.nowhere.default.svc" in err


async def test_caller_hangup_kills_the_command(api: KubeAPI, plane: NodeAgent, tmp_path: Path) -> None:
    await running_pod(api, tmp_path)
    proc = await asyncio.create_subprocess_exec(
        str(plane.exec_service.bin_dir / "kubectl"),
        "exec",
        "target",
        "--",
        "sleep",
        "300",
        env={**os.environ, "KUBETRAIN_POD_NAMESPACE": "default"},
    )
    await wait_for(lambda: asyncio.sleep(0, result=bool(plane.exec_service.pids())), 10, "exec session")
    proc.kill()
    await proc.wait()
    await wait_for(lambda: asyncio.sleep(0, result=not plane.exec_service.pids()), 10, "exec session ended")
