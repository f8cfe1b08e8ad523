"""The value parsers that flags and environment variables share (argparse ``type`` functions).

Boolean values follow Go's strconv.ParseBool (1 t T TRUE true True / 0 f F FALSE false False);
numbers are ASCII digits; the device grammar is dcgm-exporter's (-d, -s, -p).  Each raises
argparse.ArgumentTypeError, which config turns into a usage error naming the flag or variable.
"""

from __future__ import annotations

import argparse
import math
import re
import urllib.parse
from collections.abc import Callable

from dcgm_collector.model import DeviceSelection
from dcgm_collector.numbers import parse_decimal, parse_whole
from dcgm_collector.serve.addresses import parse_listen_address

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


# ---- value parsers (shared by flags and environment variables) ------------------------------

def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (use true or false, 1 or 0)")


def _positive_int(what: str, most: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = parse_whole(text.strip(), signed=True)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {what} (ASCII digits)") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0 {what}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"{text!r}: must be at most {most} {what}")
        return value
    return parse


def _positive_float(what: str, most: float | None = None) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = parse_decimal(text.strip(), signed=True)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what} (ASCII digits, finite)") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number of {what}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"{text!r}: must be at most {most:g} {what}")
        return value
    return parse


def _number_between(what: str, low: float, high: float | None = None) -> Callable[[str], float]:
    """A finite number from ``low`` up to ``high`` (no bound above when None), both included."""
    def parse(text: str) -> float:
        try:
            value = parse_decimal(text.strip(), signed=True)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what} (ASCII digits, finite)") from None
        if not math.isfinite(value) or value < low or (high is not None and value > high):
            within = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"{text!r}: must be {within} {what}")
        return value
    return parse


def _address(text: str) -> str:
    try:
        parse_listen_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text.strip()


def _log_format(text: str) -> str:
    if text not in ("text", "json"):
        raise argparse.ArgumentTypeError(f"{text!r}: choose text or json")
    return text


def _text(text: str) -> str:
    return text


def _gpu_id_type(text: str) -> str:
    value = text.strip()
    if value not in ("uid", "device-name"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a GPU id type (use uid or device-name)")
    return value



def _nonempty(what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"empty {what}")
        return text.strip()
    return parse


# ---- --remote-write-* -------------------------------------------------------------------------

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _remote_write_url(text: str) -> str:
    value = text.strip()
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port   # noqa: B018 -- raises on a bad port
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise argparse.ArgumentTypeError(f"{text!r}: the URL must start with http:// or https://")
    if not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r}: the URL has no host")
    if parts.fragment:
        raise argparse.ArgumentTypeError(f"{text!r}: a receiver URL has no #fragment")
    return value


def _remote_write_label(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
        raise argparse.ArgumentTypeError(f"{text!r}: {name!r} is not a label name (letters, digits and _, not "
                                         "starting with a digit or __)")
    if not value or any(not c.isprintable() for c in value):
        raise argparse.ArgumentTypeError(f"{text!r}: the value must be printable text, not empty")
    return name, value


# ---- -d/--devices ------------------------------------------------------------------------------

# DCGM numbers at most DCGM_MAX_NUM_DEVICES (32) GPUs and 8 instances per GPU, so a real id is far
# below this; the bound is checked before a range is expanded, so "g:0-4294967296" is a usage error
# rather than billions of ints.
MAX_DEVICE_ID = 1023


def parse_devices(text: str) -> DeviceSelection:
    """dcgm-exporter's device grammar: ``f``, ``g``, ``g:0,1``, ``g:0-3``, ``g:0,2-4``, ``i``, ``i:...``.

    Ids go from 0 to MAX_DEVICE_ID.
    """
    spec = text.strip()
    letter, colon, ranges = spec.partition(":")
    if ":" in ranges:
        raise argparse.ArgumentTypeError(f"{text!r}: only one ':<range>' is allowed")
    if letter == "f":
        if colon:
            raise argparse.ArgumentTypeError(f"{text!r}: the flex option 'f' takes no range")
        return DeviceSelection("f")
    if letter not in ("g", "i"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected f, g, g:<range>, i or i:<range> (a range is N, N-M or a comma list of them; "
            "g and i cannot be combined)")
    if not colon:
        return DeviceSelection(letter)
    ids: dict[int, None] = {}   # ordered and without repeats, at most MAX_DEVICE_ID + 1 keys
    for item in ranges.split(","):
        ids.update(dict.fromkeys(_range_item(text, item)))
    return DeviceSelection(letter, tuple(ids))


def _range_item(text: str, item: str) -> range:
    start, dash, end = item.strip().partition("-")
    if not _ascii_digits(start) or (dash and not _ascii_digits(end)):
        what = "an empty item" if not item.strip() else repr(item)
        raise argparse.ArgumentTypeError(f"{text!r}: {what} is not N or N-M")
    first, last = _device_id(text, start), _device_id(text, end) if dash else _device_id(text, start)
    if last < first:
        raise argparse.ArgumentTypeError(f"{text!r}: range {item.strip()!r} runs backwards")
    return range(first, last + 1)


def _ascii_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()   # str.isdigit alone takes any script's digits, and '²'


def _device_id(text: str, digits: str) -> int:
    # the length is checked first: int() of thousands of digits is slow, or refused
    if len(digits.lstrip("0")) > len(str(MAX_DEVICE_ID)) or int(digits) > MAX_DEVICE_ID:
        spec = text if len(text) <= 60 else f"{text[:60]}..."
        shown = digits if len(digits) <= 20 else f"{digits[:20]}..."
        raise argparse.ArgumentTypeError(f"{spec!r}: id {shown} is too large (ids go from 0 to {MAX_DEVICE_ID})")
    return int(digits)
