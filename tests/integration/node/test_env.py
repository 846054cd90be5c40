"""Env resolution: values, $(VAR) expansion and $$ escapes, downward API, ConfigMap/Secret refs."""

from __future__ import annotations

import base64
import json

from kubetrain.embedded.node import KubeAPI, NodeAgent

from .conftest import container, create, get_pod, pod, read_log, wait_for, wait_phase

DUMP_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


async def test_env_sources_and_expansion(api: KubeAPI, agent: NodeAgent) -> None:
    await create(
        api,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg"},
            "data": {"LR": "0.1", "EPOCHS": "3"},
        },
    )
    secret = base64.b64encode(b"s3cret").decode()
    await create(
        api, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"}, "data": {"TOKEN": secret}}
    )
    env = [
        {"name": "BASE", "value": "/data"},
        {"name": "DERIVED", "value": "$(BASE)/train-$(POD_NAME)-$(UNDEFINED)-$$(BASE)"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "LATE", "value": "$(POD_NAME)"},
        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "ROLE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['role']"}}},
        {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "LR", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "LR"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "TOKEN"}}},
        {"name": "MAYBE", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "x", "optional": True}}},
        {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {
            "name": "MEM_REQ_MI",
            "valueFrom": {"resourceFieldRef": {"resource": "requests.memory", "divisor": "1Mi"}},
        },
    ]
    spec = container(
        "main",
        DUMP_ENV,
        env=env,
        envFrom=[{"configMapRef": {"name": "cfg"}, "prefix": "CM_"}, {"secretRef": {"name": "sec"}}],
        resources={"limits": {"cpu": "1500m", "memory": "256Mi"}},
    )
    body = pod("envpod", spec, restartPolicy="Never")
    body["metadata"].update(labels={"role": "worker"}, annotations={"note": "hi"})
    await create(api, body)
    p = await wait_phase(api, "envpod", "Succeeded")
    out = json.loads(await read_log(api, "envpod"))
    assert out["DERIVED"] == "/data/train-$(POD_NAME)-$(UNDEFINED)-$(BASE)"  # POD_NAME is defined later
    assert out["LATE"] == "envpod"
    assert out["NS"] == "default" and out["UID"] == p["metadata"]["uid"]
    assert (out["ROLE"], out["NOTE"], out["NODE"], out["SA"]) == (
        "worker",
        "hi",
        "kubetrain-local",
        "default",
    )
    assert out["POD_IP"] == p["status"]["podIP"] and out["HOST_IP"] == "127.0.0.1"
    assert (out["LR"], out["TOKEN"], out["CM_EPOCHS"], out["CM_LR"]) == ("0.1", "s3cret", "3", "0.1")
    assert "MAYBE" not in out
    assert out["CPU_LIMIT"] == "2" and out["MEM_REQ_MI"] == "256"
    assert out["HOSTNAME"] == "envpod"


async def test_args_expand_from_env(api: KubeAPI, agent: NodeAgent) -> None:
    spec = {
        "name": "main",
        "image": "python:3.11",
        "command": ["python", "-c"],
        "args": ["import sys; print(sys.argv[1:])", "--name=$(ME)", "$$(ME)", "$(NOPE)"],
        "env": [{"name": "ME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    }
    await create(api, pod("argpod", spec, restartPolicy="Never"))
    await wait_phase(api, "argpod", "Succeeded")
    assert await read_log(api, "argpod") == "['--name=argpod', '$(ME)', '$(NOPE)']\n"


async def test_missing_configmap_waits_then_starts(api: KubeAPI, agent: NodeAgent) -> None:
    env = [{"name": "V", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "v"}}}]
    await create(
        api,
        pod("waiter", container("main", "import os; print(os.environ['V'])", env=env), restartPolicy="Never"),
    )

    async def waiting() -> dict | None:
        p = await get_pod(api, "waiter")
        states = ((p or {}).get("status") or {}).get("containerStatuses") or [{}]
        w = states[0].get("state", {}).get("waiting") or {}
        return w if w.get("reason") == "CreateContainerConfigError" else None

    w = await wait_for(waiting, what="CreateContainerConfigError")
    assert w["message"] == 'configmap "later" not found'
    await create(
        api, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}, "data": {"v": "ok"}}
    )
    await wait_phase(api, "waiter", "Succeeded")
    assert await read_log(api, "waiter") == "ok\n"
