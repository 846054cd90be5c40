"""The protobuf form of the /openapi/v3 group-version documents (``...spec.v3.v1.0+protobuf``).

As ``openapi_proto`` for v2: kube-openapi's handler3 serves ``proto.Marshal`` of gnostic's
``openapi.v3`` Document parsed from the JSON; the message types come from gnostic's descriptor
(``data/openapiv3.desc``). The mapping follows gnostic's compiler: ``*OrReference`` wrappers hold
a ``reference`` when the JSON has ``$ref``, objects keyed by names become ``Named*`` entries,
``x-*`` keys ``specification_extension`` entries of YAML text, a schema's ``default`` a
``DefaultType`` (empty for an object or array default).
"""

from __future__ import annotations

import functools
from importlib import resources as importlib_resources
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from .openapi_proto import _json_name, to_yaml

PACKAGE = "openapi.v3"
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
_PATH_MAPS = {"Paths": "path", "Callback": "path"}
_EXT = "specification_extension"


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    raw = importlib_resources.files(__package__).joinpath("data/openapiv3.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(any_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(raw))
    return pool


def _cls(name: str) -> type[Message]:
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{PACKAGE}.{name}"))


def _extension(msg: Any, key: str, value: Any) -> None:
    ext = getattr(msg, _EXT).add()
    ext.name = key
    ext.value.yaml = to_yaml(value)


def _entries(msg: Any, field: str, value: dict[str, Any]) -> None:
    """A JSON object keyed by names as repeated ``Named*`` entries (extensions apart)."""
    entries = getattr(msg, field)
    value_field = msg.DESCRIPTOR.fields_by_name[field].message_type.fields_by_name["value"]
    for name, item in value.items():
        if name.startswith("x-") and _EXT in msg.DESCRIPTOR.fields_by_name:
            _extension(msg, name, item)
            continue
        entry = entries.add()
        entry.name = name
        if value_field.message_type is None:
            entry.value = item
        elif value_field.message_type.name == "StringArray":
            entry.value.value.extend(item)
        else:
            _fill(entry.value, item)


def _fill(msg: Any, value: Any) -> None:
    name = msg.DESCRIPTOR.name
    fields = msg.DESCRIPTOR.fields_by_name
    if name == "Any":
        msg.yaml = to_yaml(value)
    elif name == "DefaultType":
        if isinstance(value, bool):
            msg.boolean = value
        elif isinstance(value, int | float):
            msg.number = float(value)
        elif isinstance(value, str):
            msg.string = value
        else:
            msg.SetInParent()  # gnostic keeps an object or array default as an empty DefaultType
    elif name.endswith("OrReference"):
        if isinstance(value, dict) and "$ref" in value:
            _fill(msg.reference, value)
        else:
            other = next(f for f in fields if f != "reference")
            _fill(getattr(msg, other), value)
    elif name == "AdditionalPropertiesItem":
        if isinstance(value, bool):
            msg.boolean = value
        else:
            _fill(msg.schema_or_reference, value)
    elif name == "ItemsItem":
        for item in value if isinstance(value, list) else [value]:
            _fill(msg.schema_or_reference.add(), item)
    elif name in _PATH_MAPS:
        _entries(msg, _PATH_MAPS[name], value)
    elif name == "Responses":
        rest = {k: v for k, v in value.items() if k != "default"}
        if "default" in value:
            _fill(msg.default, value["default"])
        _entries(msg, "response_or_reference", rest)
    elif set(fields) <= {"additional_properties"} and "additional_properties" in fields:
        _entries(msg, "additional_properties", value)
    else:
        _fill_fields(msg, value)


def _fill_fields(msg: Any, value: dict[str, Any]) -> None:
    by_json = {_json_name(f): f for f in msg.DESCRIPTOR.fields}
    for key, item in value.items():
        if key.startswith("x-") and _EXT in msg.DESCRIPTOR.fields_by_name:
            _extension(msg, key, item)
            continue
        field = by_json.get(key)
        if field is None or item is None:
            continue
        if field.message_type is None:
            if field.is_repeated:
                getattr(msg, field.name).extend(item)
            else:
                setattr(msg, field.name, item)
        elif field.is_repeated:
            target = getattr(msg, field.name)
            for element in item:
                _fill(target.add(), element)
        else:
            _fill(getattr(msg, field.name), item)


def to_protobuf(document: dict[str, Any]) -> bytes:
    """A group-version's v3 document as gnostic's ``openapi.v3.Document``, serialized."""
    doc = _cls("Document")()
    _fill(doc, document)
    return doc.SerializeToString(deterministic=True)


def parse(data: bytes) -> Message:
    doc = _cls("Document")()
    doc.ParseFromString(data)
    return doc
