"""Init containers, restart policies, restart counts, exit codes, start errors, deadlines."""

from __future__ import annotations

from typing import Any

from kubetrain.embedded.node import KubeAPI, NodeAgent

from .conftest import container, create, get_pod, pod, read_log, wait_for, wait_phase

SHARED = [{"name": "s", "mountPath": "/shared"}]
VOLS = [{"name": "s", "emptyDir": {}}]


async def test_init_containers_run_in_order_before_containers(api: KubeAPI, agent: NodeAgent) -> None:
    inits = [
        container(
            f"init-{i}",
            f"import time; time.sleep(0.1); open('/shared/order','a').write('{i}')",
            volumeMounts=SHARED,
        )
        for i in range(3)
    ]
    main = container("main", "print(open('/shared/order').read())", volumeMounts=SHARED)
    await create(api, pod("inits", main, initContainers=inits, volumes=VOLS, restartPolicy="Never"))
    p = await wait_phase(api, "inits", "Succeeded")
    assert await read_log(api, "inits", container="main") == "012\n"
    assert [s["state"]["terminated"]["reason"] for s in p["status"]["initContainerStatuses"]] == [
        "Completed"
    ] * 3
    conds = {c["type"]: c["status"] for c in p["status"]["conditions"]}
    assert conds["Initialized"] == "True" and conds["PodScheduled"] == "True"


async def test_failed_init_container_fails_pod_under_never(api: KubeAPI, agent: NodeAgent) -> None:
    await create(
        api,
        pod(
            "badinit",
            container("main", "print('never runs')"),
            initContainers=[container("init", "raise SystemExit(4)")],
            restartPolicy="Never",
        ),
    )
    p = await wait_phase(api, "badinit", "Failed")
    init = p["status"]["initContainerStatuses"][0]["state"]["terminated"]
    assert (init["exitCode"], init["reason"]) == (4, "Error")
    assert p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"


async def test_failed_init_container_is_retried_under_onfailure(api: KubeAPI, agent: NodeAgent) -> None:
    flaky = container(
        "init",
        "import os, sys; p='/shared/n'; n=len(open(p).read()) if os.path.exists(p) else 0;"
        "open(p,'a').write('x'); sys.exit(0 if n >= 1 else 1)",
        volumeMounts=SHARED,
    )
    await create(
        api,
        pod(
            "retryinit",
            container("main", "print('ok')"),
            initContainers=[flaky],
            volumes=VOLS,
            restartPolicy="OnFailure",
        ),
    )
    p = await wait_phase(api, "retryinit", "Succeeded")
    assert p["status"]["initContainerStatuses"][0]["restartCount"] == 1


async def test_onfailure_restarts_until_success(api: KubeAPI, agent: NodeAgent) -> None:
    code = (
        "import os, sys; p='/shared/runs'; n=len(open(p).read()) if os.path.exists(p) else 0;"
        "open(p,'a').write('x'); print('attempt', n); sys.exit(0 if n >= 2 else 3)"
    )
    await create(
        api,
        pod("flaky", container("main", code, volumeMounts=SHARED), volumes=VOLS, restartPolicy="OnFailure"),
    )
    p = await wait_phase(api, "flaky", "Succeeded")
    cs = p["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 2
    assert cs["lastState"]["terminated"]["exitCode"] == 3
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert await read_log(api, "flaky") == "attempt 2\n"
    assert await read_log(api, "flaky", previous="true") == "attempt 1\n"


async def test_never_reports_exit_code_and_fails(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("exit3", container("main", "raise SystemExit(3)"), restartPolicy="Never"))
    p = await wait_phase(api, "exit3", "Failed")
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (3, "Error")
    assert p["status"]["containerStatuses"][0]["restartCount"] == 0


async def test_always_restarts_even_after_success(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("always", container("main", "print('run')")))

    async def restarted() -> Any:
        p = await get_pod(api, "always")
        cs = ((p or {}).get("status") or {}).get("containerStatuses") or [{}]
        return p if cs[0].get("restartCount", 0) >= 2 else None

    p = await wait_for(restarted, what="two restarts")
    assert p["status"]["phase"] == "Running"
    assert p["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] == "Completed"


async def test_missing_executable_is_a_start_error(api: KubeAPI, agent: NodeAgent) -> None:
    spec = {"name": "main", "image": "x", "command": ["no-such-binary-kubetrain"]}
    await create(api, pod("noexec", spec, restartPolicy="Never"))
    p = await wait_phase(api, "noexec", "Failed")
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (128, "StartError")
    assert "executable file not found" in term["message"]


async def test_image_entrypoint_cannot_be_guessed(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("noentry", {"name": "main", "image": "busybox"}, restartPolicy="Never"))
    p = await wait_phase(api, "noentry", "Failed")
    assert "image map" in p["status"]["containerStatuses"][0]["state"]["terminated"]["message"]


async def test_active_deadline_fails_the_pod(api: KubeAPI, agent: NodeAgent) -> None:
    await create(
        api,
        pod(
            "deadline",
            container("main", "import time; time.sleep(60)"),
            restartPolicy="Never",
            activeDeadlineSeconds=1,
            terminationGracePeriodSeconds=1,
        ),
    )
    p = await wait_phase(api, "deadline", "Failed")
    assert p["status"]["reason"] == "DeadlineExceeded"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143


ORPHANING = r"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # inherits stdout
print("parent exiting", flush=True)
"""


async def test_a_child_holding_stdout_does_not_keep_the_container_running(
    api: KubeAPI, agent: NodeAgent
) -> None:
    """The container ends when its process exits, even if a child still holds its stdout pipe; the
    child (same process group) is killed with it."""
    await create(api, pod("orphaning", container("main", ORPHANING), restartPolicy="Never"))
    p = await wait_phase(api, "orphaning", "Succeeded", "Failed", timeout=10)
    assert p["status"]["phase"] == "Succeeded"
    assert (await read_log(api, "orphaning")).strip() == "parent exiting"
    assert agent.pids() == []
