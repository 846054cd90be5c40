"""What gnostic's ``openapi.v2`` and ``openapi.v3`` encoders share (``openapi_proto``, ``openapi_proto3``).

Both map a JSON document onto gnostic's messages as its compiler does: fields by their JSON names
(``$ref`` is ``_ref``), ``x-*`` keys as extension entries whose values are YAML text (``Any.yaml``,
written as yaml.v3 writes it), JSON objects keyed by names as repeated ``Named*`` entries in
document order. What differs per document (which messages are wrappers, maps, ``oneof``s) stays
in the document's own ``fill``, which the helpers here call back for nested messages.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources as importlib_resources
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

Fill = Callable[[Any, Any], None]
"""A document's ``fill(msg, value)``: set the message ``msg`` from the JSON ``value``."""


@functools.cache
def _pool(descriptor: str) -> descriptor_pool.DescriptorPool:
    raw = importlib_resources.files(__package__).joinpath(f"data/{descriptor}").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(any_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(raw))
    return pool


def json_name(field: FieldDescriptor) -> str:
    """The JSON key gnostic reads a field from."""
    if field.name == "_ref":
        return "$ref"
    head, *rest = field.name.split("_")
    return head + "".join(p.capitalize() for p in rest)


@dataclass(frozen=True)
class Gnostic:
    """One gnostic document model: its proto package, descriptor file and extension field."""

    package: str  # "openapi.v2"
    descriptor: str  # file under data/, written by openapi_gen
    extension: str  # the repeated NamedAny field ``x-*`` keys go to

    def cls(self, name: str) -> type[Message]:
        return message_factory.GetMessageClass(
            _pool(self.descriptor).FindMessageTypeByName(f"{self.package}.{name}")
        )

    def add_extension(self, msg: Any, key: str, value: Any) -> bool:
        """Keep an ``x-*`` key as an extension entry if ``msg`` has extensions; False otherwise."""
        if not key.startswith("x-") or self.extension not in msg.DESCRIPTOR.fields_by_name:
            return False
        ext = getattr(msg, self.extension).add()
        ext.name = key
        ext.value.yaml = to_yaml(value)
        return True

    def entries(self, msg: Any, field: str, value: dict[str, Any], fill: Fill) -> None:
        """A JSON object keyed by names as the repeated ``Named*`` entries of ``field``."""
        target = getattr(msg, field)
        value_field = msg.DESCRIPTOR.fields_by_name[field].message_type.fields_by_name["value"]
        for name, item in value.items():
            if self.add_extension(msg, name, item):
                continue
            entry = target.add()
            entry.name = name
            if value_field.message_type is None:
                entry.value = item
            elif value_field.message_type.name == "StringArray":
                entry.value.value.extend(item)
            else:
                fill(entry.value, item)

    def fields(self, msg: Any, value: dict[str, Any], fill: Fill) -> None:
        """A plain message: each JSON key into the field of that JSON name (unknown keys and nulls
        dropped, as gnostic does)."""
        by_json = {json_name(f): f for f in msg.DESCRIPTOR.fields}
        for key, item in value.items():
            if self.add_extension(msg, key, item):
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
                    fill(target.add(), element)
            else:
                fill(getattr(msg, field.name), item)

    def serialize(self, document: dict[str, Any], fill: Fill) -> bytes:
        """The JSON document as this model's ``Document``, serialized as Go's ``proto.Marshal``."""
        doc = self.cls("Document")()
        fill(doc, document)
        return doc.SerializeToString(deterministic=True)

    def parse(self, data: bytes) -> Message:
        """Decode a served protobuf document (for tests and comparisons)."""
        doc = self.cls("Document")()
        doc.ParseFromString(data)
        return doc


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
