"""Fast JSON encode/decode and deep copy of plain JSON data.

orjson is used when it is importable (it is several times faster than the stdlib on both ends),
otherwise the stdlib json module; kubetrain does not depend on orjson.
"""

from __future__ import annotations

import json
from typing import Any

try:  # pragma: no cover - depends on the environment
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None  # type: ignore[assignment]


def dumps(obj: Any) -> bytes:
    """Serialize to compact UTF-8 JSON bytes."""
    if _orjson is not None:
        return _orjson.dumps(obj)
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises ValueError on malformed input."""
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


def clone(obj: Any) -> Any:
    """Deep-copy JSON-shaped data (dicts, lists, scalars) faster than copy.deepcopy."""
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone(v) for v in obj]
    return obj
