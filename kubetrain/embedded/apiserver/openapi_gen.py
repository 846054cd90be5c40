"""Regenerate ``data/openapi.json.xz`` from a kube-apiserver's own OpenAPI v3 documents.

The embedded server publishes, for the built-in kinds it serves, the real server's schemas and
paths rather than hand-written ones, so ``kubectl explain`` and field validation see exactly what
a cluster shows. The source is the ``api/openapi-spec/v3`` directory of the ``k8s.io/kubernetes``
module (``go mod download k8s.io/kubernetes@v1.36.3``); only the paths of served resources and the
schemas reachable from them are kept, and schemas shared by several group-versions are stored once.

    python -m kubetrain.embedded.apiserver.openapi_gen $(go env GOMODCACHE)/k8s.io/kubernetes@v1.36.3

It also writes ``data/openapiv2.desc``, gnostic's descriptor of the protobuf form of /openapi/v2,
from the gnostic-models module that k8s.io/kubernetes requires (in the same module cache).
"""

from __future__ import annotations

import json
import lzma
import re
import sys
from pathlib import Path
from typing import Any

from .openapi import _closure, _refs, _served_path, gv_key
from .resources import BUILTINS, ResourceType

DATA_FILE = Path(__file__).with_name("data") / "openapi.json.xz"
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


def _load(spec_dir: Path, key: str) -> dict[str, Any]:
    name = key.replace("/", "__")
    doc: dict[str, Any] = json.loads((spec_dir / f"{name}_openapi.json").read_text())
    return doc


def generate(module_dir: Path) -> dict[str, Any]:
    spec_dir = module_dir / "api" / "openapi-spec" / "v3"
    by_gv: dict[str, dict[str, ResourceType]] = {}
    for rt in BUILTINS:
        by_gv.setdefault(gv_key(rt.group, rt.version), {})[rt.plural] = rt
    pool: dict[str, Any] = {}
    gvs: dict[str, Any] = {}
    docs: dict[str, dict[str, Any]] = {}
    for key, types in by_gv.items():
        doc = docs[key] = _load(spec_dir, key)
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
    for name, source in CRD_SCHEMA_SOURCES.items():
        doc = docs.get(source) or _load(spec_dir, source)
        for dep in _closure({name}, doc["components"]["schemas"]):
            crd_schemas[dep] = doc["components"]["schemas"][dep]
    # The root, /apis, /version and per-group documents (their one path is the discovery GET).
    extra = {"api", "apis", "version"} | {
        "apis/" + key.split("/")[1] for key in by_gv if key.startswith("apis/")
    }
    others = {key: _load(spec_dir, key) for key in sorted(extra)}
    batch = docs["apis/batch/v1"]["paths"]
    crd_ops = {
        op: batch[path][method].get("parameters", []) for op, (path, method) in CRD_TEMPLATE_PATHS.items()
    }
    type_meta = _type_meta(module_dir)
    return {
        "source": f"k8s.io/kubernetes {module_dir.name.split('@')[-1]} api/openapi-spec/v3",
        "info": docs["api/v1"]["info"],
        "securitySchemes": docs["api/v1"]["components"]["securitySchemes"],
        "schemas": pool,
        "groupVersions": gvs,
        "others": others,
        "crd": {"schemas": crd_schemas, "parameters": crd_ops, "typeMeta": type_meta},
    }


def _type_meta(module_dir: Path) -> dict[str, Any]:
    """apiVersion and kind as TypeMeta's generated definition describes them."""
    doc = json.loads((module_dir / "api" / "openapi-spec" / "swagger.json").read_text())
    defs = doc["definitions"]
    props = defs["io.k8s.api.batch.v1.Job"]["properties"]
    return {"apiVersion": props["apiVersion"], "kind": props["kind"]}


def gnostic_descriptor(module_dir: Path) -> bytes:
    """The serialized FileDescriptorProto of gnostic's openapi.v2 messages (its ``rawDesc``)."""
    go_mod = (module_dir / "go.mod").read_text()
    version = re.search(r"github.com/google/gnostic-models (v\S+)", go_mod)
    assert version, "k8s.io/kubernetes' go.mod requires no gnostic-models"
    gnostic = module_dir.parent.parent / "github.com" / "google" / f"gnostic-models@{version.group(1)}"
    src = (gnostic / "openapiv2" / "OpenAPIv2.pb.go").read_text()
    start = src.index("var file_openapiv2_OpenAPIv2_proto_rawDesc = []byte{")
    end = src.index("\n}\n", start)
    return bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", src[start:end]))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    data = generate(Path(argv[0]))
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    DATA_FILE.parent.mkdir(exist_ok=True)
    DATA_FILE.write_bytes(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))
    print(f"{DATA_FILE}: {len(raw)} bytes of JSON, {DATA_FILE.stat().st_size} compressed")
    DESCRIPTOR_FILE.write_bytes(gnostic_descriptor(Path(argv[0])))
    print(f"{DESCRIPTOR_FILE}: {DESCRIPTOR_FILE.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
