"""The protobuf form of the /openapi/v3 group-version documents (``...spec.v3.v1.0+protobuf``).

As ``openapi_proto`` for v2: kube-openapi's handler3 serves ``proto.Marshal`` of gnostic's
``openapi.v3`` Document parsed from the JSON; the message types come from gnostic's descriptor
(``data/openapiv3.desc``). The mapping follows gnostic's compiler, with ``openapi_gnostic``'s
field, map and extension rules (``x-*`` keys are ``specification_extension`` entries) and v3's
own: ``*OrReference`` wrappers hold a ``reference`` when the JSON has ``$ref``, a schema's
``default`` is a ``DefaultType`` (empty for an object or array default).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from .openapi_gnostic import Gnostic, to_yaml

PACKAGE = "openapi.v3"
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
_PATH_MAPS = {"Paths": "path", "Callback": "path"}
_GNOSTIC = Gnostic(PACKAGE, "openapiv3.desc", "specification_extension")


def _fill(msg: Any, value: Any) -> None:
    """Set ``msg`` from the JSON ``value``: v3's wrappers and maps, else a plain message."""
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
        _GNOSTIC.entries(msg, _PATH_MAPS[name], value, _fill)
    elif name == "Responses":
        rest = {k: v for k, v in value.items() if k != "default"}
        if "default" in value:
            _fill(msg.default, value["default"])
        _GNOSTIC.entries(msg, "response_or_reference", rest, _fill)
    elif set(fields) <= {"additional_properties"} and "additional_properties" in fields:
        _GNOSTIC.entries(msg, "additional_properties", value, _fill)
    else:
        _GNOSTIC.fields(msg, value, _fill)


def to_protobuf(document: dict[str, Any]) -> bytes:
    """A group-version's v3 document as gnostic's ``openapi.v3.Document``, serialized."""
    return _GNOSTIC.serialize(document, _fill)


def parse(data: bytes) -> Message:
    """Decode a served protobuf document (for tests and comparisons)."""
    return _GNOSTIC.parse(data)
