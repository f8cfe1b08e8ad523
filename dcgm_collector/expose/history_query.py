"""The query of ``GET /api/v1/samples``, checked: fields, GPUs, the span or a cursor, the limit.

A query names the fields (``field``: a DCGM field id, DCGM's field name or the
metric name /metrics serves it under; repeated or comma-separated), may
narrow the GPUs (``gpu``: ids, repeated or comma-separated; a GPU's MIG
instances and NvLinks count as that GPU's) and gives the time span
(``since``, ``until``: Unix seconds, RFC 3339, or a duration back from now
such as ``30s``, ``5m``, ``1h``; ``since`` defaults to one minute back,
``until`` to now), or instead of the span a ``cursor`` an earlier answer
gave (expose.history_cursor), and may cap the samples (``limit``).

Numbers are read strictly: ASCII digits only (no sign, no ``_``, no
``inf``/``nan``, no other script's digits), and every time must land within
what the rings' int64 µs stamps hold (1970 to the year 9999); ``limit`` and
``gpu`` are whole ASCII numbers in range.  Anything else is a
:class:`QueryError` whose text is one line naming the parameter.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from dcgm_collector.expose.history_cursor import Cursor, CursorError, decode

if TYPE_CHECKING:
    import decimal

__all__ = ["DEFAULT_SPAN_S", "LATEST_US", "MAX_SAMPLES", "HistoryQuery", "QueryError", "parse_query", "shown_name"]

MAX_SAMPLES = 200_000       # about 6 MB of JSON: enough for 8 GPUs x 30 fields x 10 Hz over 80 s
DEFAULT_SPAN_S = 60.0
MAX_GPU_ID = 2**31 - 1
_PARAMETERS = ("field", "gpu", "since", "until", "limit", "cursor")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)", re.ASCII)
_RFC3339 = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
                      r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))", re.ASCII)
_WHOLE = re.compile(r"[0-9]+", re.ASCII)
_UNIT_US = {"ms": 1_000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000}
LATEST_US = 253_402_300_799_000_000   # 9999-12-31T23:59:59Z
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SHOWN = 40                            # characters of a bad value an error line repeats


@functools.cache
def _exact() -> tuple[decimal.Context, type[decimal.Decimal]]:
    """The decimal context and type, imported with the first query that names a time (the module is 0.5 MiB
    resident, which a collector nobody asks for history need not hold)."""
    import decimal

    return decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN, Emax=10**6, Emin=-10**6, traps=[]), \
        decimal.Decimal


class QueryError(ValueError):
    """A parameter of the query is wrong; str() is one line naming it."""


@dataclass(frozen=True)
class HistoryQuery:
    fields: tuple[str, ...]        # as given: ids, DCGM names or metric names
    gpus: frozenset[int] | None    # None: every entity
    since_us: int
    until_us: int
    limit: int
    cursor: Cursor | None = None   # go on from where an earlier answer ended (since_us: its resume time)


# ---- parsing -----------------------------------------------------------------------------

def _shown(text: str) -> str:
    """The value as an error line repeats it: quoted, and cut when long."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "...")


def shown_name(text: str) -> str:
    """A name as an error line repeats it: as it is when short and printable, else as _shown gives it."""
    return text if len(text) <= _SHOWN and text.isprintable() else _shown(text)


def _values(query: Mapping[str, Sequence[str]], name: str) -> list[str]:
    return [item.strip() for value in query.get(name, ()) for item in value.split(",") if item.strip()]


def _one(query: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = query.get(name, ())
    if len(values) > 1:
        raise QueryError(f"{name}: give it once, not {len(values)} times")
    return values[0] if values else None


def _time_us(text: str, name: str, now_us: int) -> int:
    """Unix seconds, RFC 3339, or a duration back from now; within what a ring's int64 µs stamps hold."""
    if not text.isascii():
        raise QueryError(f"{name}: {_shown(text)} is not a time (write numbers with the ASCII digits 0-9)")
    moment = _parse_time_us(text, name, now_us)
    if moment is None or not 0 <= moment <= LATEST_US:
        raise QueryError(f"{name}: {_shown(text)} is out of range (before 1970 or after the year 9999)")
    return moment


def _exact_us(number: str, unit_us: int) -> int | None:
    """An ASCII decimal times a unit, rounded to the µs; None when it is past anything a ring holds.

    Decimal arithmetic, never float: ``1e308``, 400 nines or ``1e400`` are
    simply too large, not an overflow.
    """
    exact, number_type = _exact()
    try:
        product = exact.multiply(number_type(number), number_type(unit_us))
        if not product.is_finite() or product > LATEST_US:
            return None
        return int(product.to_integral_value(context=exact))
    except (ArithmeticError, ValueError):   # decimal.DecimalException is an ArithmeticError, as OverflowError
        return None


def _parse_time_us(text: str, name: str, now_us: int) -> int | None:
    match = _DURATION.fullmatch(text)
    if match:
        back = _exact_us(match.group(1), _UNIT_US[match.group(2)])
        return None if back is None else now_us - back
    if _NUMBER.fullmatch(text):
        return _exact_us(text, 1_000_000)
    if text.startswith("-") and _NUMBER.fullmatch(text[1:]):
        raise QueryError(f"{name}: {_shown(text)} is not a time")
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise QueryError(f"{name}: {_shown(text)} is not Unix seconds, an RFC 3339 time or a duration like 30s, "
                         "5m, 1h")
    year, month, day, hour, minute, second, fraction, zulu, sign, zone_h, zone_m = match.groups()
    try:
        offset = timedelta(0) if zulu else (1 if sign == "+" else -1) * timedelta(hours=int(zone_h),
                                                                                  minutes=int(zone_m))
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                          tzinfo=timezone(offset))
    except ValueError as error:
        raise QueryError(f"{name}: {_shown(text)} is not a valid RFC 3339 time ({error})") from None
    micros = round(_exact()[1]("0." + fraction) * 1_000_000) if fraction else 0
    return (moment - _EPOCH) // timedelta(microseconds=1) + micros


def _has_no_zone(text: str) -> bool:
    return text.isascii() and _RFC3339.fullmatch(text + "Z") is not None


def _whole(text: str, name: str, low: int, high: int, what: str) -> int:
    """A whole ASCII number in [low, high]; QueryError naming ``name`` otherwise."""
    if not _WHOLE.fullmatch(text):
        raise QueryError(f"{name}: {_shown(text)} is not {what}")
    if len(text) > len(str(high)) or not low <= int(text) <= high:
        raise QueryError(f"{name}: {shown_name(text)} is out of range [{low}, {high}]")
    return int(text)


def parse_query(query: Mapping[str, Sequence[str]], now_us: int | None = None) -> HistoryQuery:
    """The query string's parameters, checked; QueryError names the first wrong one."""
    now_us = time.time_ns() // 1000 if now_us is None else now_us
    unknown = sorted(set(query) - set(_PARAMETERS))
    if unknown:
        raise QueryError(f"{shown_name(unknown[0])}: unknown parameter (known: {', '.join(_PARAMETERS)})")
    fields = tuple(_values(query, "field"))
    if not fields:
        raise QueryError("field: missing; name one or more fields by id, DCGM name or metric name "
                         "(field=DCGM_FI_DEV_POWER_USAGE or field=155)")
    gpus = None
    if "gpu" in query:
        items = [item for value in query["gpu"] for item in value.split(",")]
        if not items or not all(_WHOLE.fullmatch(item) for item in items):
            raise QueryError(f"gpu: {_shown(','.join(query['gpu']))} is not a list of GPU ids")
        gpus = frozenset(_whole(item, "gpu", 0, MAX_GPU_ID, "a GPU id") for item in items)
    until_text, since_text = _one(query, "until"), _one(query, "since")
    cursor_text = _one(query, "cursor")
    cursor = None
    if cursor_text is not None:
        if until_text is not None or since_text is not None:
            raise QueryError("cursor: give either cursor or since/until, not both (a cursor goes on from where "
                             "the answer that gave it ended)")
        try:
            cursor = decode(cursor_text)
        except CursorError as error:
            raise QueryError(f"cursor: {error}") from None
    for name, text in (("until", until_text), ("since", since_text)):
        if text is not None and _has_no_zone(text):
            raise QueryError(f"{name}: {_shown(text)} has no time zone (add Z or +00:00)")
    until_us = _time_us(until_text, "until", now_us) if until_text else now_us
    since_us = (_time_us(since_text, "since", now_us) if since_text
                else max(0, until_us - round(DEFAULT_SPAN_S * 1e6)))
    if since_us > until_us:
        raise QueryError(f"since: {_shown(since_text or '')} is after until")
    limit_text = _one(query, "limit")
    limit = MAX_SAMPLES if not limit_text else _whole(limit_text, "limit", 1, MAX_SAMPLES, "a whole number")
    if cursor is not None:
        return HistoryQuery(fields, gpus, cursor.resume_us, LATEST_US, limit, cursor)
    return HistoryQuery(fields, gpus, since_us, until_us, limit)


