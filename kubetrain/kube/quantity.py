"""Kubernetes `resource.Quantity` (``500m``, ``2``, ``1Gi``, ``1e3``) as exact fractions.

The operator sums pod requests into PodGroup minResources, the binder sums capacity and the node
agent answers ``resourceFieldRef``; all must round the way Kubernetes does, so values are `Fraction`
and never floats. Sums are formatted canonically the way apimachinery does: the result keeps the
format of the first addend (binary `Ki..Ei` or decimal `n..E`) and picks the largest suffix that
keeps the number whole, so `500m + 1` is `1500m` and `1Gi + 512Mi` is `1536Mi`. Quantities are
compared by value, never by spelling, so a PodGroup re-serialised by someone else is not patched
forever.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_PATTERN = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)


@dataclass(frozen=True)
class Quantity:
    value: Fraction
    binary: bool = False

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.binary)

    def __str__(self) -> str:
        return format_quantity(self.value, self.binary)


def parse_quantity(raw: Any) -> Quantity | None:
    """A Quantity from a string or a number; None when it is not a valid quantity."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return Quantity(Fraction(raw))
    if isinstance(raw, float):
        return Quantity(Fraction(raw)) if math.isfinite(raw) else None
    if not isinstance(raw, str):
        return None
    match = _PATTERN.match(raw.strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        return Quantity(value * Fraction(10) ** int(exponent[1:]))
    if suffix in _BINARY:
        return Quantity(value * 1024 ** _BINARY[suffix], binary=True)
    return Quantity(value * Fraction(10) ** _DECIMAL[suffix or ""])


def quantity_value(raw: Any) -> Fraction:
    """The exact value of a quantity string (or number); ValueError when it is not one."""
    quantity = parse_quantity(raw)
    if quantity is None:
        raise ValueError(f"invalid quantity {raw!r}")
    return quantity.value


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """apimachinery's canonical form (values below one nano are rounded up, as it does)."""
    if binary and abs(value) >= 1024 and value.denominator == 1:
        number, power = int(value), 0
        while power < 6 and number % 1024 == 0:
            number //= 1024
            power += 1
        return f"{number}{_BINARY_SUFFIX[power]}" if power else str(number)
    nanos = value * 10**9
    scaled = math.ceil(nanos) if nanos.denominator != 1 else int(nanos)
    if scaled == 0:
        return "0"
    exp = -9
    while exp < 18 and scaled % 1000 == 0:
        scaled //= 1000
        exp += 3
    return f"{scaled}{_DECIMAL_SUFFIX[exp]}"


def ceil_div(value: Fraction, divisor: Fraction) -> int:
    """``resourceFieldRef`` rounding: the value in units of `divisor`, rounded up, at least 1."""
    return max(1, math.ceil(value / divisor)) if value > 0 else 0


def add_resources(total: dict[str, Quantity], resources: Any) -> None:
    """Add a `resources.requests`/`limits` map into `total` (invalid quantities are skipped)."""
    if not isinstance(resources, dict):
        return
    for name, raw in resources.items():
        quantity = parse_quantity(raw)
        if quantity is None:
            continue
        current = total.get(name)
        total[name] = quantity if current is None else current + quantity


def same_resources(left: Any, right: Any) -> bool:
    """Whether two resource maps hold the same values (spelling ignored; absent == empty)."""
    left_map = left if isinstance(left, dict) else {}
    right_map = right if isinstance(right, dict) else {}
    if left_map.keys() != right_map.keys():
        return False
    for name, raw in left_map.items():
        a, b = parse_quantity(raw), parse_quantity(right_map[name])
        if a is None or b is None:
            if raw != right_map[name]:
                return False
        elif a.value != b.value:
            return False
    return True
