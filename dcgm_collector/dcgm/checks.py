"""Argument checks: every value a handle method passes to C is validated here first.

They raise TypeError / ValueError for bad arguments, so that only checked
values reach DCGM; hostengine addresses are parsed here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from dcgm_collector.ext._native import lib
from dcgm_collector.files import size_text

_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1
_INT64_MAX = 2**63 - 1


# ---- argument checks ---------------------------------------------------------
def _integer(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is out of range [{low}, {high}]")
    return int(value)


def _number(value: Any, what: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    number = float(value)
    if not low <= number <= high:  # also rejects NaN
        raise ValueError(f"{what} {value} is out of range [{low}, {high}]")
    return number


def _text(value: Any, what: str, max_bytes: int) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    data = value.encode("utf-8")
    if b"\0" in data:
        raise ValueError(f"{what} contains a NUL character")
    if len(data) > max_bytes:
        raise ValueError(f"{what} is longer than {size_text(max_bytes)}")
    return data


def _entity_group(value: Any) -> int:
    return _integer(value, "entity group", 0, lib.DCGM_FE_COUNT - 1)


def _gpu_id(value: Any) -> int:
    return _integer(value, "GPU id", 0, _UINT32_MAX)


def _entity(spec: Any) -> tuple[int, int]:
    """A GPU id, or an (entity group, entity id) pair."""
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise ValueError(f"an entity is a GPU id or an (entity group, entity id) pair, not {spec!r}")
        return _entity_group(spec[0]), _integer(spec[1], "entity id", 0, _UINT32_MAX)
    return int(lib.DCGM_FE_GPU), _gpu_id(spec)


def _field_ids(values: Any) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"field ids must be an iterable of ints, not {type(values).__name__}")
    ids = [_integer(v, "field id", 1, 65535) for v in values]
    if not ids:
        raise ValueError("no field ids given")
    return list(dict.fromkeys(ids))  # duplicates would only be read twice

_HOST_PORT = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.%\w]+)\]|(?P<host>[^\s:\[\]/]+))(?::(?P<port>\d{1,5}))?")


def _parse_address(address: Any) -> tuple[bool, bool]:
    """(is a URI for dcgmConnect_v3, is a unix socket path for dcgmConnect_v2)."""
    if not isinstance(address, str):
        raise TypeError(f"address must be a str, not {type(address).__name__}")
    _text(address, "address", 4095)
    lower = address.lower()
    if lower.startswith(("tcp://", "unix://", "vsock://")):
        if len(address) == lower.index("://") + 3:
            raise ValueError(f"address {address!r} has no target after the scheme")
        return True, False
    if address.startswith("/"):
        return False, True
    if address.count(":") >= 2 and not address.startswith("["):
        return False, False  # a bare IPv6 address; DCGM parses it
    match = _HOST_PORT.fullmatch(address)
    if match is None:
        raise ValueError(
            f"bad hostengine address {address!r}: expected host, host:port, [v6]:port, /socket/path, "
            "tcp://host:port or unix:///path"
        )
    if match["port"] is not None and not 1 <= int(match["port"]) <= 65535:
        raise ValueError(f"bad port in hostengine address {address!r}")
    return False, False

