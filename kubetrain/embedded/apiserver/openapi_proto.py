"""The protobuf form of /openapi/v2 (``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``).

kube-openapi serves ``proto.Marshal(openapi_v2.ParseDocument(json))``: gnostic's ``openapi.v2``
messages. The message types come from gnostic's own file descriptor (``data/openapiv2.desc``, the
``rawDesc`` of gnostic-models' ``OpenAPIv2.pb.go``, written by ``openapi_gen``); this module maps
the JSON document onto them as gnostic's compiler does: ``$ref`` is ``_ref``, ``x-*`` keys become
``vendor_extension`` entries whose values are YAML text (``Any.yaml``), JSON objects keyed by
names become repeated ``Named*`` entries in document order, and the ``oneof`` wrappers
(parameter kinds, response or reference, schema or boolean) are chosen by the JSON's shape.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources as importlib_resources
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

PACKAGE = "openapi.v2"
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# The message types that stand for a JSON object keyed by names: the repeated field holding them.
_MAPS = {
    "Definitions": "additional_properties",
    "Properties": "additional_properties",
    "ParameterDefinitions": "additional_properties",
    "ResponseDefinitions": "additional_properties",
    "SecurityDefinitions": "additional_properties",
    "SecurityRequirement": "additional_properties",
    "Paths": "path",
    "Responses": "response_code",
    "Headers": "additional_properties",
    "Examples": "additional_properties",
    "Scopes": "additional_properties",
}
_SUBSCHEMA = {
    "header": "header_parameter_sub_schema",
    "formData": "form_data_parameter_sub_schema",
    "query": "query_parameter_sub_schema",
    "path": "path_parameter_sub_schema",
}
_TARGET = {"ParametersItem": "parameter", "ResponseValue": "response", "SchemaItem": "schema"}
_SECURITY = {
    "basic": "basic_authentication_security",
    "apiKey": "api_key_security",
}


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    raw = importlib_resources.files(__package__).joinpath("data/openapiv2.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(any_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(raw))
    return pool


def _cls(name: str) -> type[Message]:
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{PACKAGE}.{name}"))


def _json_name(field: FieldDescriptor) -> str:
    if field.name == "_ref":
        return "$ref"
    head, *rest = field.name.split("_")
    return head + "".join(p.capitalize() for p in rest)


_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
_NUMBER = re.compile(
    r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o[0-7]+|[-+]?\.(inf|Inf)|\.(nan|NaN)"
)


def _plain(text: str) -> bool:
    """Whether yaml.v3 writes ``text`` unquoted."""
    return not (
        not text
        or text[0] in _INDICATORS
        or text[0].isspace()
        or text[-1].isspace()
        or ": " in text
        or " #" in text
        or text.endswith(":")
        or any(c in text for c in "\n\t\r")
        or text.lower() in _RESERVED
        or _NUMBER.fullmatch(text) is not None
    )


def _scalar(value: Any) -> str:
    """A YAML scalar as yaml.v3 writes it: plain when unambiguous, else quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    if _plain(text):
        return text
    if text and text.isprintable() and "'" not in text:
        return f"'{text}'"  # yaml.v3 prefers single quotes where no escape is needed
    return json.dumps(text)


def to_yaml(value: Any) -> str:
    """yaml.v3's Marshal of a JSON value (mappings indented by 4 from their parent's level, a
    sequence's items at its key's column), for vendor extensions (``Any.yaml``)."""
    return _yaml(value, "", "", "")


def _yaml(value: Any, first: str, indent: str, level: str) -> str:
    """``value`` with its first line prefixed by ``first``, the others by ``indent``; ``level`` is
    the indentation a nested mapping is counted from (a sequence item's mapping counts from the
    sequence's)."""
    if isinstance(value, dict):
        if not value:
            return f"{first}{{}}\n"
        out = []
        for i, (k, v) in enumerate(value.items()):
            lead = first if i == 0 else indent
            if isinstance(v, dict) and v:
                child = level + "    "
                out.append(f"{lead}{_scalar(k)}:\n{_yaml(v, child, child, child)}")
            elif isinstance(v, list) and v:
                out.append(f"{lead}{_scalar(k)}:\n{_yaml(v, indent, indent, indent)}")
            else:
                shown = _yaml(v, "", "", "").strip()  # a scalar, {} or []
                out.append(f"{lead}{_scalar(k)}: {shown}\n")
        return "".join(out)
    if isinstance(value, list):
        if not value:
            return f"{first}[]\n"
        out = []
        for i, item in enumerate(value):
            lead = first if i == 0 else indent
            if isinstance(item, dict | list) and item:
                out.append(_yaml(item, lead + "- ", indent + "  ", indent))
            else:
                out.append(f"{lead}- {_yaml(item, '', '', '').strip()}\n")
        return "".join(out)
    return f"{first}{_scalar(value)}\n"


def _any(msg: Any, value: Any) -> None:
    msg.yaml = to_yaml(value)


def _fill_map(msg: Any, value: dict[str, Any]) -> None:
    desc: Descriptor = msg.DESCRIPTOR
    field = desc.fields_by_name[_MAPS[desc.name]]
    entries = getattr(msg, field.name)
    value_field = field.message_type.fields_by_name["value"]
    for name, item in value.items():
        if name.startswith("x-") and "vendor_extension" in desc.fields_by_name:
            ext = msg.vendor_extension.add()
            ext.name = name
            _any(ext.value, item)
            continue
        entry = entries.add()
        entry.name = name
        if value_field.message_type.name == "StringArray":
            entry.value.value.extend(item)
        else:
            _fill(entry.value, item)


def _fill_oneof(msg: Any, value: Any) -> bool:
    """The wrappers whose one field is chosen by the value's shape; False if ``msg`` is none."""
    name = msg.DESCRIPTOR.name
    if name in ("ParametersItem", "ResponseValue", "SchemaItem"):
        if isinstance(value, dict) and "$ref" in value and name != "SchemaItem":
            _fill(msg.json_reference, value)
        else:
            target = {"ParametersItem": "parameter", "ResponseValue": "response", "SchemaItem": "schema"}[
                name
            ]
            _fill(getattr(msg, target), value)
        return True
    if name == "Parameter":
        if value.get("in") == "body":
            _fill(msg.body_parameter, value)
        else:
            _fill(msg.non_body_parameter, value)
        return True
    if name == "NonBodyParameter":
        _fill(getattr(msg, _SUBSCHEMA.get(value.get("in"), "query_parameter_sub_schema")), value)
        return True
    if name == "AdditionalPropertiesItem":
        if isinstance(value, bool):
            msg.boolean = value
        else:
            _fill(msg.schema, value)
        return True
    if name == "SecurityDefinitionsItem":
        _fill(getattr(msg, _SECURITY.get(value.get("type"), "api_key_security")), value)
        return True
    if name == "ItemsItem":
        for item in value if isinstance(value, list) else [value]:
            _fill(msg.schema.add(), item)
        return True
    if name == "TypeItem":
        msg.value.extend(value if isinstance(value, list) else [value])
        return True
    if name == "Any":
        _any(msg, value)
        return True
    return False


def _fill(msg: Any, value: Any) -> None:
    """Set ``msg`` from the JSON ``value`` (gnostic's New<Message> from a YAML node)."""
    desc: Descriptor = msg.DESCRIPTOR
    if desc.name in _MAPS:
        _fill_map(msg, value)
        return
    if _fill_oneof(msg, value):
        return
    fields = {_json_name(f): f for f in desc.fields}
    for key, item in value.items():
        if key.startswith("x-") and "vendor_extension" in desc.fields_by_name:
            ext = msg.vendor_extension.add()
            ext.name = key
            _any(ext.value, item)
            continue
        field = fields.get(key)
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
    """The swagger 2.0 document as gnostic's ``openapi.v2.Document``, serialized."""
    doc = _cls("Document")()
    _fill(doc, document)
    return doc.SerializeToString(deterministic=True)


def parse(data: bytes) -> Message:
    """Decode a served protobuf document (for tests and comparisons)."""
    doc = _cls("Document")()
    doc.ParseFromString(data)
    return doc
