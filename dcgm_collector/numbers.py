"""Numbers written by people and other programs, read strictly.

Python's int() and float() are generous in ways that let odd input through:
they take any Unicode decimal digit (``١٢`` is 12), underscores between
digits (``1_000``), surrounding white space, and float() takes ``inf``,
``nan`` and exponents that overflow to infinity.  A number that a flag, a
query parameter, a header or a file gives is read here instead: ASCII digits
only, finite, and of a length that cannot make the conversion itself slow.
Each function raises ValueError with a short reason; the caller names the
flag, parameter or file:line.
"""

from __future__ import annotations

import math
import re

__all__ = ["MAX_DIGITS", "parse_decimal", "parse_whole"]

# More digits than any value the collector takes can need (int64 has 19); also keeps int() fast.
MAX_DIGITS = 40

_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def parse_whole(text: str, *, signed: bool = False) -> int:
    """A whole number in ASCII digits (a leading '-' or '+' only when ``signed``)."""
    if len(text) > MAX_DIGITS + 1 or not _WHOLE.fullmatch(text) or (not signed and text[0] in "+-"):
        raise ValueError("not a whole number in ASCII digits")
    return int(text, 10)


def parse_decimal(text: str, *, signed: bool = False) -> float:
    """A finite decimal number in ASCII (digits, a point, an exponent; a sign only when ``signed``)."""
    if len(text) > 2 * MAX_DIGITS or not _DECIMAL.fullmatch(text) or (not signed and text[0] in "+-"):
        raise ValueError("not a decimal number in ASCII digits")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("too large")
    return value
