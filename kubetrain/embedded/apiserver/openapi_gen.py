"""Regenerate ``data/openapi.json.xz`` from a kube-apiserver's own OpenAPI v3 documents.

The embedded server publishes, for the built-in kinds it serves, the real server's schemas and
paths rather than hand-written ones, so ``kubectl explain`` and field validation see exactly what
a cluster shows. Only the paths of served resources and the schemas reachable from them are kept,
and schemas shared by several group-versions are stored once. The committed data comes from a
running kube-apiserver (``scripts/k8s-control-plane up DIR``, default feature gates, with a CRD
installed so that the CRD documents' shared schemas are the real ones too):

    python -m kubetrain.embedded.apiserver.openapi_gen MODULE_DIR --server DIR/kubeconfig

Without ``--server`` the documents are read from ``MODULE_DIR/api/openapi-spec/v3`` (generated with
every feature gate on, so they list CBOR content types and lack enum values a server publishes).
MODULE_DIR is the ``k8s.io/kubernetes`` module, ``$(go env GOMODCACHE)/k8s.io/kubernetes@v1.36.3``;
``data/openapiv{2,3}.desc``, gnostic's descriptors of the protobuf forms of /openapi/v2 and v3, are
taken from the gnostic-models module it requires (in the same module cache).
"""

from __future__ import annotations

import argparse
import base64
import json
import lzma
import re
import ssl
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .openapi import _closure, _refs, _served_path, gv_key, to_v2_schema
from .resources import BUILTINS, ResourceType

DATA_FILE = Path(__file__).with_name("data") / "openapi.json.xz"
SWAGGER = "swagger"  # the loader's key for the /openapi/v2 document
DESCRIPTOR_FILE = Path(__file__).with_name("data") / "openapiv2.desc"

# Schemas the documents generated for CRDs refer to, and the group-version they are taken from.
CRD_SCHEMA_SOURCES = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": "apis/apiextensions.k8s.io/v1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta": "apis/apiextensions.k8s.io/v1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status": "apis/apiextensions.k8s.io/v1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": "apis/apiextensions.k8s.io/v1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": "apis/apiextensions.k8s.io/v1",
    "io.k8s.api.autoscaling.v1.Scale": "api/v1",
}
# The query parameters of CRD operations are those of the same operations on batch/v1 jobs
# (deletecollection takes the list parameters, get only resourceVersion: see openapi._crd_params).
CRD_TEMPLATE_PATHS = {
    "list": ("/apis/batch/v1/namespaces/{namespace}/jobs", "get"),
    "post": ("/apis/batch/v1/namespaces/{namespace}/jobs", "post"),
    "put": ("/apis/batch/v1/namespaces/{namespace}/jobs/{name}", "put"),
    "delete": ("/apis/batch/v1/namespaces/{namespace}/jobs/{name}", "delete"),
    "patch": ("/apis/batch/v1/namespaces/{namespace}/jobs/{name}", "patch"),
}


Loader = Callable[[str], dict[str, Any]]


def file_loader(module_dir: Path) -> Loader:
    spec_dir = module_dir / "api" / "openapi-spec" / "v3"

    def load(key: str) -> dict[str, Any]:
        path = (
            spec_dir.parent / "swagger.json"
            if key == SWAGGER
            else spec_dir / f"{key.replace('/', '__')}_openapi.json"
        )
        doc: dict[str, Any] = json.loads(path.read_text())
        return doc

    return load


def server_loader(kubeconfig: Path) -> tuple[Loader, list[str]]:
    """Documents from a live server (admin client certificate), and its group-version keys."""
    cfg = yaml.safe_load(kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    user = cfg["users"][0]["user"]
    tmp = Path(tempfile.mkdtemp())

    def material(name: str, key: str) -> str:
        if key in cluster or key in user:
            return str(cluster.get(key) or user.get(key))
        path = tmp / name
        path.write_bytes(base64.b64decode(cluster.get(f"{key}-data") or user[f"{key}-data"]))
        return str(path)

    ctx = ssl.create_default_context(cafile=material("ca.crt", "certificate-authority"))
    ctx.load_cert_chain(material("tls.crt", "client-certificate"), material("tls.key", "client-key"))
    base = cluster["server"]

    def fetch(path: str) -> dict[str, Any]:
        req = urllib.request.Request(base + path, headers={"Accept": "application/json"})
        with urllib.request.urlopen(req, context=ctx) as resp:
            doc: dict[str, Any] = json.loads(resp.read())
        return doc

    index = fetch("/openapi/v3")["paths"]
    return (lambda key: fetch("/openapi/v2" if key == SWAGGER else index[key]["serverRelativeURL"])), list(
        index
    )


def generate(load: Loader, source: str, crd_key: str | None = None) -> dict[str, Any]:
    """The data file's content; ``crd_key`` names a CRD group-version whose shared schemas to use."""
    by_gv: dict[str, dict[str, ResourceType]] = {}
    for rt in BUILTINS:
        by_gv.setdefault(gv_key(rt.group, rt.version), {})[rt.plural] = rt
    pool: dict[str, Any] = {}
    gvs: dict[str, Any] = {}
    docs: dict[str, dict[str, Any]] = {}
    for key, types in by_gv.items():
        doc = docs[key] = load(key)
        prefix = "/" + key
        paths = {p: item for p, item in doc["paths"].items() if _served_path(p, prefix, types)}
        schemas = doc["components"]["schemas"]
        names = _closure(_refs(paths, set()), schemas)
        overrides = {}
        for name in sorted(names):
            if name not in pool:
                pool[name] = schemas[name]
            elif pool[name] != schemas[name]:
                overrides[name] = schemas[name]
        gvs[key] = {"paths": paths, "schemas": sorted(names), "overrides": overrides}
    crd_schemas: dict[str, Any] = {}
    crd_doc = load(crd_key) if crd_key else None
    for name, origin in CRD_SCHEMA_SOURCES.items():
        doc = docs.get(origin) or load(origin)
        if crd_doc is not None and name in crd_doc["components"]["schemas"]:
            doc = crd_doc
        for dep in _closure({name}, doc["components"]["schemas"]):
            crd_schemas[dep] = doc["components"]["schemas"][dep]
    # The root, /apis, /version and per-group documents (their one path is the discovery GET).
    extra = {"api", "apis", "version"} | {
        "apis/" + key.split("/")[1] for key in by_gv if key.startswith("apis/")
    }
    others = {key: load(key) for key in sorted(extra)}
    batch = docs["apis/batch/v1"]["paths"]
    crd_ops = {
        op: batch[path][method].get("parameters", []) for op, (path, method) in CRD_TEMPLATE_PATHS.items()
    }
    job = docs["apis/batch/v1"]["components"]["schemas"]["io.k8s.api.batch.v1.Job"]["properties"]
    type_meta = {"apiVersion": job["apiVersion"], "kind": job["kind"]}  # TypeMeta's, as CRDs get them
    return {
        "source": source,
        "info": docs["api/v1"]["info"],
        "securitySchemes": docs["api/v1"]["components"]["securitySchemes"],
        "schemas": pool,
        "groupVersions": gvs,
        "others": others,
        "v2": _v2_data(load(SWAGGER), by_gv, pool, gvs),
        "crd": {"schemas": crd_schemas, "parameters": crd_ops, "typeMeta": type_meta},
    }


def gnostic_descriptor(module_dir: Path, spec: str = "2") -> bytes:
    """The serialized FileDescriptorProto of gnostic's openapi.v2 (or v3) messages (``rawDesc``)."""
    go_mod = (module_dir / "go.mod").read_text()
    version = re.search(r"github.com/google/gnostic-models (v\S+)", go_mod)
    assert version, "k8s.io/kubernetes' go.mod requires no gnostic-models"
    gnostic = module_dir.parent.parent / "github.com" / "google" / f"gnostic-models@{version.group(1)}"
    src = (gnostic / f"openapiv{spec}" / f"OpenAPIv{spec}.pb.go").read_text()
    start = src.index(f"var file_openapiv{spec}_OpenAPIv{spec}_proto_rawDesc = []byte{{")
    end = src.index("\n}\n", start)
    return bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", src[start:end]))


def _v2_data(
    swagger: dict[str, Any],
    by_gv: dict[str, dict[str, ResourceType]],
    pool: dict[str, Any],
    gvs: dict[str, Any],
) -> dict[str, Any]:
    """The v2 paths of served resources with the shared parameters they use, and the definitions
    that converting the v3 schemas does not reproduce (v2 lists every group in some extensions)."""
    paths: dict[str, Any] = {}
    for key, types in by_gv.items():
        prefix = "/" + key
        for path, item in swagger["paths"].items():
            if (path == prefix + "/" or path.startswith(prefix + "/")) and _served_path(path, prefix, types):
                paths[path] = item
    params = {r.rsplit("/", 1)[-1] for r in _ref_strings(paths) if r.startswith("#/parameters/")}
    names = {n for gv in gvs.values() for n in gv["schemas"]}
    differ = {n: swagger["definitions"][n] for n in sorted(names) if n in swagger["definitions"]}
    converted = {n: to_v2_schema(pool[n]) for n in differ}
    return {
        "paths": paths,
        "parameters": {p: swagger["parameters"][p] for p in sorted(params)},
        "definitions": {n: d for n, d in differ.items() if converted[n] != d},
    }


def _ref_strings(node: Any) -> list[str]:
    out: list[str] = []
    todo = [node]
    while todo:
        cur = todo.pop()
        if isinstance(cur, dict):
            out.extend(v for k, v in cur.items() if k == "$ref" and isinstance(v, str))
            todo.extend(cur.values())
        elif isinstance(cur, list):
            todo.extend(cur)
    return out


def _is_crd(doc: dict[str, Any]) -> bool:
    return bool(doc.get("info", {}).get("title") == "Kubernetes CRD Swagger")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("module_dir", type=Path, help="the k8s.io/kubernetes module in the Go module cache")
    parser.add_argument("--server", type=Path, metavar="KUBECONFIG", help="read a live kube-apiserver")
    args = parser.parse_args(argv)
    version = args.module_dir.name.split("@")[-1]
    if args.server:
        load, keys = server_loader(args.server)
        crd = next((k for k in sorted(keys) if k.count("/") == 2 and _is_crd(load(k))), None)
        data = generate(load, f"kube-apiserver {version} /openapi/v3 (default feature gates)", crd)
    else:
        data = generate(file_loader(args.module_dir), f"k8s.io/kubernetes {version} api/openapi-spec/v3")
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    DATA_FILE.parent.mkdir(exist_ok=True)
    DATA_FILE.write_bytes(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))
    print(f"{DATA_FILE}: {len(raw)} bytes of JSON, {DATA_FILE.stat().st_size} compressed")
    for version in ("2", "3"):
        target = DESCRIPTOR_FILE.with_name(f"openapiv{version}.desc")
        target.write_bytes(gnostic_descriptor(args.module_dir, version))
        print(f"{target}: {target.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
