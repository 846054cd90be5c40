"""The protobuf form of /openapi/v2 (``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``).

kube-openapi serves ``proto.Marshal(openapi_v2.ParseDocument(json))``: gnostic's ``openapi.v2``
messages. The message types come from gnostic's own file descriptor (``data/openapiv2.desc``, the
``rawDesc`` of gnostic-models' ``OpenAPIv2.pb.go``, written by ``openapi_gen``); this module maps
the JSON document onto them as gnostic's compiler does, with ``openapi_gnostic``'s field, map and
extension rules (``x-*`` keys are ``vendor_extension`` entries) and v2's own: which messages are
name-keyed maps, and the ``oneof`` wrappers (parameter kinds, response or reference, schema or
boolean) chosen by the JSON's shape.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from .openapi_gnostic import Gnostic, to_yaml

PACKAGE = "openapi.v2"
_GNOSTIC = Gnostic(PACKAGE, "openapiv2.desc", "vendor_extension")
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


def _fill_oneof(msg: Any, value: Any) -> bool:
    """The wrappers whose one field is chosen by the value's shape; False if ``msg`` is none."""
    name = msg.DESCRIPTOR.name
    if name in ("ParametersItem", "ResponseValue", "SchemaItem"):
        if isinstance(value, dict) and "$ref" in value and name != "SchemaItem":
            _fill(msg.json_reference, value)
        else:
            _fill(getattr(msg, _TARGET[name]), value)
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
        msg.yaml = to_yaml(value)
        return True
    return False


def _fill(msg: Any, value: Any) -> None:
    """Set ``msg`` from the JSON ``value`` (gnostic's New<Message> from a YAML node)."""
    name = msg.DESCRIPTOR.name
    if name in _MAPS:
        _GNOSTIC.entries(msg, _MAPS[name], value, _fill)
        return
    if _fill_oneof(msg, value):
        return
    _GNOSTIC.fields(msg, value, _fill)


def to_protobuf(document: dict[str, Any]) -> bytes:
    """The swagger 2.0 document as gnostic's ``openapi.v2.Document``, serialized."""
    return _GNOSTIC.serialize(document, _fill)


def parse(data: bytes) -> Message:
    """Decode a served protobuf document (for tests and comparisons)."""
    return _GNOSTIC.parse(data)
