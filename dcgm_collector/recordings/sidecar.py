"""A flight recording's JSON sidecar (``<file>.json``), read strictly.

The sidecar names the recorded GPUs (index, model, UUID, PCI bus id) and
what triggered the recording.  Anyone can place one beside a recording, so it
is read as untrusted text: through :mod:`dcgm_collector.files` (never
blocking on a FIFO, at most :data:`MAX_SIDECAR_BYTES`), as UTF-8, with its
nesting bounded before the JSON parser sees it (a 200,000-deep list would
exhaust the parser's recursion) and every number finite and of a sane length.
Each problem is one ValueError line naming the sidecar (and its line where
one is known).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from dcgm_collector.files import FileRefused, read_regular_file
from dcgm_collector.model import RECORDING_FORMAT_VERSION, RECORDING_SIDECAR_SUFFIX

__all__ = ["MAX_SIDECAR_BYTES", "MAX_SIDECAR_DEPTH", "read_sidecar", "sidecar_path"]

MAX_SIDECAR_BYTES = 1 << 20     # the recorder writes a few KiB: GPUs, counters file name, trigger
MAX_SIDECAR_DEPTH = 32          # the recorder's sidecar nests 3 deep
MAX_INTEGER_DIGITS = 20         # any int64 fits; longer is no index, count or version
MAX_GPUS = 32                   # the simulator's node
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')


def sidecar_path(path: Path) -> Path:
    """Where the sidecar of the recording at ``path`` is."""
    return path.with_name(path.name + RECORDING_SIDECAR_SUFFIX)


class _BadNumber(ValueError):
    """A number the sidecar must not hold; ``token`` is its text, to find its line."""

    def __init__(self, token: str, problem: str) -> None:
        super().__init__(problem)
        self.token = token


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The checked sidecar of the recording at ``path``, or None when there is none.

    The trigger's ``time``, when given, is added as ``time_us`` (microseconds since the epoch).
    """
    sidecar = sidecar_path(path)
    try:
        data = read_regular_file(sidecar, MAX_SIDECAR_BYTES)
    except FileNotFoundError:
        return None
    except FileRefused as error:
        raise ValueError(f"{sidecar}: cannot read the recording's sidecar: {error.problem}") from None
    except OSError as error:
        raise ValueError(f"{sidecar}: cannot read the recording's sidecar: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{sidecar}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    _check_depth(sidecar, text)
    try:
        parsed = json.loads(text, parse_int=_strict_int, parse_float=_strict_float, parse_constant=_no_constant)
    except _BadNumber as error:
        raise ValueError(f"{sidecar}:{_line_of(text, error.token)}: {error}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{sidecar}:{error.lineno}: not JSON: {error.msg} (column {error.colno})") from None
    except (RecursionError, ValueError) as error:   # a backstop: the checks above should leave none
        raise ValueError(f"{sidecar}: not JSON: {type(error).__name__}") from None
    return _checked(sidecar, parsed)


def _check_depth(sidecar: Path, text: str) -> None:
    # strings cannot hold a raw newline in JSON, so blanking them keeps the line numbers
    bare = _STRINGS.sub('""', text)
    steps = np.frombuffer(bare.encode("utf-8"), dtype=np.uint8)
    depth = np.cumsum(np.isin(steps, (ord("["), ord("{"))).astype(np.int32)
                      - np.isin(steps, (ord("]"), ord("}"))).astype(np.int32))
    if len(depth) and depth.max() > MAX_SIDECAR_DEPTH:
        at = int(np.argmax(depth > MAX_SIDECAR_DEPTH))
        line = bare.encode("utf-8")[:at].count(b"\n") + 1
        raise ValueError(f"{sidecar}:{line}: nested deeper than {MAX_SIDECAR_DEPTH} lists or objects")


def _strict_int(token: str) -> int:
    digits = len(token.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise _BadNumber(token, f"a number of {digits} digits (at most {MAX_INTEGER_DIGITS})")
    return int(token)


def _strict_float(token: str) -> float:
    if len(token) > 64:
        raise _BadNumber(token, f"a number of {len(token)} characters (at most 64)")
    value = float(token)
    if not math.isfinite(value):
        raise _BadNumber(token, f"{token} is too large for a number")
    return value


def _no_constant(token: str) -> None:
    raise _BadNumber(token, f"{token} is not a JSON number")


def _line_of(text: str, token: str) -> int:
    at = text.find(token)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _checked(sidecar: Path, data: object) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{sidecar}: not a JSON object")
    version = data.get("format_version")
    if not _is_int(version) or version != RECORDING_FORMAT_VERSION:   # 1.0 or true is no version
        raise ValueError(f"{sidecar}: format_version {_shown(version)} is not one this version reads "
                         f"({RECORDING_FORMAT_VERSION})")
    listed = data.get("gpus", [])
    if not isinstance(listed, list) or not all(isinstance(g, dict) for g in listed):
        raise ValueError(f"{sidecar}: 'gpus' must be a list of objects")
    for i, entry in enumerate(listed):
        gpu = entry.get("gpu")
        if not _is_int(gpu) or not 0 <= gpu < MAX_GPUS:
            raise ValueError(f"{sidecar}: gpus[{i}].gpu must be a GPU index 0 to {MAX_GPUS - 1}, "
                             f"not {_shown(gpu)}")
        if not isinstance(entry.get("model", ""), str):
            raise ValueError(f"{sidecar}: gpus[{i}].model must be a string")
    trigger = data.get("trigger")
    if trigger is not None:
        if not isinstance(trigger, dict):
            raise ValueError(f"{sidecar}: 'trigger' must be an object")
        if "time" in trigger:
            trigger["time_us"] = _iso_us(sidecar, trigger["time"])
        gpus = trigger.get("gpus", [])
        if not isinstance(gpus, list) or not all(_is_int(g) and 0 <= g < MAX_GPUS for g in gpus):
            raise ValueError(f"{sidecar}: trigger.gpus must be a list of GPU indexes 0 to {MAX_GPUS - 1}")
    return data


def _iso_us(sidecar: Path, text: object) -> int:
    try:
        if not isinstance(text, str) or len(text) > 64:
            raise ValueError
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{sidecar}: trigger.time {_shown(text)} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return round(when.timestamp() * 1e6)


def _shown(value: object) -> str:
    """A value as JSON, cut short: an error line quotes it, and it may be long."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
