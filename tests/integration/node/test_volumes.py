"""Volumes as files in the pod sandbox, with mount paths rewritten in command, args and env."""

from __future__ import annotations

import base64
import json

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.kube.client import core_path

from .conftest import container, create, get_pod, pod, read_log, wait_for, wait_phase

READER = r"""
import json, os, stat, sys
# Paths reach the program through argv and env, where the node rewrites mount paths; a literal
# path inside the script would not be rewritten (documented), hence KUBETRAIN_PATH_MAP.
mounts = json.loads(os.environ["KUBETRAIN_PATH_MAP"])
def info(p):
    return {"text": open(p).read(), "mode": oct(stat.S_IMODE(os.stat(p).st_mode))}
print(json.dumps({
    "hostfile": info(os.environ["HOSTFILE"]),
    "key": info(sys.argv[3] + "/id_rsa"),
    "labels": open(mounts["/etc/podinfo"] + "/labels").read(),
    "name": open(mounts["/etc/podinfo"] + "/name").read(),
    "shared": open("from-init").read(),
    "proj": sorted(os.listdir(mounts["/etc/proj"])),
    "argv": sys.argv[1:3],
    "cwd": os.getcwd(),
    "map": json.loads(os.environ["KUBETRAIN_PATH_MAP"]),
}))
"""


async def test_configmap_secret_emptydir_downward_projected(api: KubeAPI, agent: NodeAgent) -> None:
    await create(
        api,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "mpi"},
            "data": {"hostfile": "job-worker-0 slots=1\n", "ignored": "x", "reader.py": READER},
        },
    )
    await create(
        api,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "ssh"},
            "data": {"ssh-privatekey": base64.b64encode(b"PRIVATE").decode()},
        },
    )
    volumes = [
        {
            "name": "cfg",
            "configMap": {"name": "mpi", "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}]},
        },
        {"name": "scripts", "configMap": {"name": "mpi", "defaultMode": 0o555}},
        {
            "name": "keys",
            "secret": {
                "secretName": "ssh",
                "defaultMode": 0o600,
                "items": [{"key": "ssh-privatekey", "path": "id_rsa"}],
            },
        },
        {"name": "scratch", "emptyDir": {}},
        {
            "name": "podinfo",
            "downwardAPI": {
                "items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                ]
            },
        },
        {
            "name": "proj",
            "projected": {
                "sources": [
                    {"configMap": {"name": "mpi", "items": [{"key": "ignored", "path": "a"}]}},
                    {"secret": {"name": "ssh"}},
                ]
            },
        },
    ]
    init = container(
        "prep",
        "open('/scratch/from-init', 'w').write('made by init')",
        volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}],
    )
    main = {
        "name": "main",
        "image": "trainer:latest",
        "command": ["python", "/opt/scripts/reader.py"],
        "args": ["--hostfile=/etc/mpi/hostfile", "/etc/mpix", "/etc/ssh-keys"],
        "workingDir": "/scratch",
        "env": [{"name": "HOSTFILE", "value": "/etc/mpi/hostfile"}],
        "volumeMounts": [
            {"name": "cfg", "mountPath": "/etc/mpi"},
            {"name": "scripts", "mountPath": "/opt/scripts"},
            {"name": "keys", "mountPath": "/etc/ssh-keys"},
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "podinfo", "mountPath": "/etc/podinfo"},
            {"name": "proj", "mountPath": "/etc/proj"},
        ],
    }
    body = pod("vols", main, initContainers=[init], volumes=volumes, restartPolicy="Never")
    body["metadata"]["labels"] = {"app": "x", "role": "w"}
    await create(api, body)
    await wait_phase(api, "vols", "Succeeded")
    out = json.loads(await read_log(api, "vols"))
    assert out["hostfile"] == {"text": "job-worker-0 slots=1\n", "mode": "0o444"}
    assert out["key"] == {"text": "PRIVATE", "mode": "0o600"}
    assert out["labels"] == 'app="x"\nrole="w"' and out["name"] == "vols"
    assert out["shared"] == "made by init"
    assert out["proj"] == ["a", "ssh-privatekey"]
    local_mpi = out["map"]["/etc/mpi"]
    assert out["argv"] == [f"--hostfile={local_mpi}/hostfile", "/etc/mpix"]  # whole path prefixes only
    assert out["cwd"] == out["map"]["/scratch"]


async def test_missing_volume_source_reports_failed_mount(api: KubeAPI, agent: NodeAgent) -> None:
    vols = [{"name": "c", "configMap": {"name": "nope"}}]
    await create(
        api,
        pod(
            "nomount",
            container("m", "print(1)", volumeMounts=[{"name": "c", "mountPath": "/c"}]),
            volumes=vols,
            restartPolicy="Never",
        ),
    )

    async def failed_mount() -> list[dict]:
        events, _ = await api.list(core_path("events", "default"))
        return [
            e for e in events if e["reason"] == "FailedMount" and e["involvedObject"]["name"] == "nomount"
        ]

    events = await wait_for(failed_mount, what="FailedMount event")
    assert 'configmap "nope" not found' in events[0]["message"]
    p = await get_pod(api, "nomount")
    assert p is not None and p["status"]["phase"] == "Pending"
    assert p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    await create(
        api, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nope"}, "data": {"k": "v"}}
    )
    await wait_phase(api, "nomount", "Succeeded")


KUBE_API_ACCESS = {
    "name": "kube-api-access-x7k2p",
    "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
    },
}


async def test_service_account_volume_gets_its_token(api: KubeAPI, agent: NodeAgent) -> None:
    """What ServiceAccount admission adds to every pod (the embedded server adds it too, with
    the kube-root-ca.crt its controllers publish): the token from the TokenRequest API, the CA,
    the namespace; the pod runs."""
    mount = "/var/run/secrets/kubernetes.io/serviceaccount"
    script = "import os, sys; d = sys.argv[1]; print(sorted(os.listdir(d)), open(d + '/namespace').read())"
    body = pod(
        "sa",
        container(
            "main", script, args=[mount], volumeMounts=[{"name": KUBE_API_ACCESS["name"], "mountPath": mount}]
        ),
        restartPolicy="Never",
        volumes=[KUBE_API_ACCESS],
    )
    await create(api, body)

    await wait_phase(api, "sa", "Succeeded")
    assert await read_log(api, "sa") == "['ca.crt', 'namespace', 'token'] default\n"
