"""Kubernetes resource quantities (``500m``, ``2``, ``1Gi``, ``1e3``) as exact fractions.

The node agent needs them for ``resourceFieldRef`` and the binder for capacity sums; both must
round the way Kubernetes does, so they work on `Fraction` and never on floats.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$"
)


def parse_quantity(value: object) -> Fraction:
    """The value of a quantity string (or number); ValueError when it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")
    if isinstance(value, int | float):
        return Fraction(value)
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"invalid quantity {value!r}")
    number, exponent, suffix = match.groups()
    result = Fraction(number)
    if exponent:
        result *= Fraction(10) ** int(exponent[1:])
    return result * _SUFFIXES[suffix or ""]


def ceil_div(value: Fraction, divisor: Fraction) -> int:
    """``resourceFieldRef`` rounding: the value in units of `divisor`, rounded up, at least 1."""
    return max(1, math.ceil(value / divisor)) if value > 0 else 0


def format_cpu(value: Fraction) -> str:
    """A CPU amount the way the API shows it: whole cores as ``"2"``, else millicores ``"1500m"``."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{math.ceil(value * 1000)}m"
