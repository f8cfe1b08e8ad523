"""The ring content as JSON, for scripts: what ``GET /api/v1/samples`` answers.

A query names the fields (``field``: a DCGM field id, DCGM's field name or the
metric name /metrics serves it under; repeated or comma-separated), may
narrow the GPUs (``gpu``: ids, repeated or comma-separated; a GPU's MIG
instances and NvLinks count as that GPU's) and gives the time span
(``since``, ``until``: Unix seconds, RFC 3339, or a duration back from now
such as ``30s``, ``5m``, ``1h``; ``since`` defaults to one minute back,
``until`` to now).  The answer carries, per series, the name and labels
/metrics gives it and every sample the rings hold in the span, oldest first,
as ``[ts_us, value]`` pairs (``value`` null for a blank or not-supported
sample).  XID rows come from the event ring, each event a sample.  The series
of attached stores (series that come and go, expose.store_families) are
answered as the fixed ones, under the names and labels /metrics gives them,
for as long as their store holds their samples (an expired series' past
samples included).

Numbers are read strictly: ASCII digits only (no sign, no ``_``, no
``inf``/``nan``, no other script's digits), and every time must land within
what the rings' int64 µs stamps hold (1970 to the year 9999); ``limit`` and
``gpu`` are whole ASCII numbers in range.  Anything else is a
:class:`QueryError` whose text is one line naming the parameter.

**Pages.**  An answer holds at most ``limit`` samples (default and cap
:data:`MAX_SAMPLES`), cut at one moment for every series alike: it holds
every sample of the chosen series (ring rows and events together) stamped
before ``next_since`` and none after, so following ``next_since`` returns
each sample exactly once and ends.  A cut answer says ``"truncated": true``
and gives ``next_since`` (Unix seconds, exact to the µs), always later than
``since``.  The samples of one timestamp are never split: when the oldest
timestamp alone holds more than ``limit`` samples (a limit smaller than one
row of the chosen series), the page holds that one whole timestamp anyway,
so a small limit still moves on.

**Bounded cost.**  Rows are copied out of a ring COPY_ROWS at a time, only
as many as the limit can use, and only the chosen columns are kept; the JSON
is written in slabs of whole timestamps (about SLAB_SAMPLES samples each,
encoded series by series with the C encoder from short lists) into bytes
pieces, so an answer holds about its JSON and never a Python object per
sample for its whole span (the largest answer, 200,000 samples: 6 MB of
JSON, an 8.6 MiB peak, against 73.5 MiB when it was built whole; see
benchmarks/README.md).  The builder calls ``pause`` between series (the
server's: /metrics goes first) and checks its ``deadline`` between slabs:
past it the answer is cut at the slab it reached, truncated with
``next_since`` like a page cut by the limit.
"""

from __future__ import annotations

import decimal
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from dcgm_collector.model import entity_group_name
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_OK
from dcgm_collector.series.samples import EventSeries, Labels, RingSeries, SampleModel, SeriesInfo, StoreSeries

__all__ = ["ANSWER_BUDGET_S", "DEFAULT_SPAN_S", "MAX_SAMPLES", "Answer", "HistoryQuery", "QueryError", "answer",
           "parse_query"]

MAX_SAMPLES = 200_000       # about 6 MB of JSON: enough for 8 GPUs x 30 fields x 10 Hz over 80 s
DEFAULT_SPAN_S = 60.0
ANSWER_BUDGET_S = 2.0       # building one answer: past this it is cut where it got to (truncated, next_since)
SLAB_SAMPLES = 32_768       # samples written between two checks of the deadline (a slab's lists: about 1 MB)
COPY_ROWS = 256             # ring rows copied at a time (the whole width of the ring, before the chosen columns)
MAX_GPU_ID = 2**31 - 1
_PARAMETERS = ("field", "gpu", "since", "until", "limit")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)", re.ASCII)
_RFC3339 = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
                      r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))", re.ASCII)
_WHOLE = re.compile(r"[0-9]+", re.ASCII)
_UNIT_US = {"ms": 1_000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000}
_LATEST_US = 253_402_300_799_000_000   # 9999-12-31T23:59:59Z
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SHOWN = 40                            # characters of a bad value an error line repeats
_EXACT = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN, Emax=10**6, Emin=-10**6, traps=[])
_SEPARATORS = (",", ":")
_SAMPLES = json.JSONEncoder(separators=_SEPARATORS, allow_nan=False)   # one encoder for every slab


class QueryError(ValueError):
    """A parameter of the query is wrong; str() is one line naming it."""


@dataclass(frozen=True)
class HistoryQuery:
    fields: tuple[str, ...]        # as given: ids, DCGM names or metric names
    gpus: frozenset[int] | None    # None: every entity
    since_us: int
    until_us: int
    limit: int


# ---- parsing -----------------------------------------------------------------------------

def _shown(text: str) -> str:
    """The value as an error line repeats it: quoted, and cut when long."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "...")


def _name(text: str) -> str:
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
    if moment is None or not 0 <= moment <= _LATEST_US:
        raise QueryError(f"{name}: {_shown(text)} is out of range (before 1970 or after the year 9999)")
    return moment


def _exact_us(number: str, unit_us: int) -> int | None:
    """An ASCII decimal times a unit, rounded to the µs; None when it is past anything a ring holds.

    Decimal arithmetic, never float: ``1e308``, 400 nines or ``1e400`` are
    simply too large, not an overflow.
    """
    try:
        product = _EXACT.multiply(decimal.Decimal(number), decimal.Decimal(unit_us))
        if not product.is_finite() or product > _LATEST_US:
            return None
        return int(product.to_integral_value(context=_EXACT))
    except (decimal.DecimalException, ValueError, OverflowError):
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
    micros = round(decimal.Decimal("0." + fraction) * 1_000_000) if fraction else 0
    return (moment - _EPOCH) // timedelta(microseconds=1) + micros


def _has_no_zone(text: str) -> bool:
    return text.isascii() and _RFC3339.fullmatch(text + "Z") is not None


def _whole(text: str, name: str, low: int, high: int, what: str) -> int:
    """A whole ASCII number in [low, high]; QueryError naming ``name`` otherwise."""
    if not _WHOLE.fullmatch(text):
        raise QueryError(f"{name}: {_shown(text)} is not {what}")
    if len(text) > len(str(high)) or not low <= int(text) <= high:
        raise QueryError(f"{name}: {_name(text)} is out of range [{low}, {high}]")
    return int(text)


def parse_query(query: Mapping[str, Sequence[str]], now_us: int | None = None) -> HistoryQuery:
    """The query string's parameters, checked; QueryError names the first wrong one."""
    now_us = time.time_ns() // 1000 if now_us is None else now_us
    unknown = sorted(set(query) - set(_PARAMETERS))
    if unknown:
        raise QueryError(f"{_name(unknown[0])}: unknown parameter (known: {', '.join(_PARAMETERS)})")
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
    return HistoryQuery(fields, gpus, since_us, until_us, limit)


# ---- answering -----------------------------------------------------------------------------

@dataclass
class Answer:
    """An answer's JSON body, as bytes pieces (never one Python object per sample)."""

    pieces: list[bytes]
    samples: int
    truncated: bool
    next_since_us: int | None

    @property
    def nbytes(self) -> int:
        return sum(len(p) for p in self.pieces)

    @property
    def body(self) -> bytes:
        return b"".join(self.pieces)


def _wanted(series_name: str, field_id: int, field_name: str, fields: tuple[str, ...]) -> bool:
    return any(f == series_name or f == field_name or f == str(field_id) for f in fields)


def _entity_json(entity: tuple[int, int]) -> dict[str, object]:
    return {"group": entity_group_name(entity[0]), "id": entity[1]}


def _head(metric: str, labels, field_id: int, field_name: str, gpu: int | None, entity) -> bytes:
    """A series object's JSON up to the opening of its samples array."""
    text = json.dumps({"metric": metric, "labels": dict(labels), "field_id": field_id, "field_name": field_name,
                       "gpu": gpu, "entity": _entity_json(entity), "samples": []}, separators=_SEPARATORS)
    assert text.endswith("[]}")
    return text[:-2].encode()


@dataclass
class _Output:
    """One series of the answer: its head and its samples, written slab by slab."""

    head: bytes
    pieces: list[bytes] = field(default_factory=list)

    def add(self, pairs: list) -> None:
        if pairs:
            self.pieces.append(_SAMPLES.encode(pairs)[1:-1].encode())


class _RingPart:
    """The chosen series of one ring: their columns of the rows in the span, copied a slice at a time."""

    def __init__(self, ring: RingSeries, chosen: list[SeriesInfo]) -> None:
        self.chosen = chosen
        self.outputs = [_Output(_head(s.name, s.labels, s.field_id, s.field_name, s.gpu, s.entity)) for s in chosen]
        self.ring = ring
        self.integer = np.array([s.integer for s in chosen], dtype=bool)
        self.ts = np.empty(0, np.int64)
        self.values = np.empty((0, len(chosen)))
        self.status = np.empty((0, len(chosen)), np.int8)
        self.horizon: int | None = None   # the last row copied, when rows after it were left in the ring

    def read(self, since_us: int, until_us: int, limit: int) -> None:
        columns = np.array([s.column for s in self.chosen], dtype=np.intp)
        wanted = max(limit // len(self.chosen), 1) + 1   # rows the limit can use, and one to know it is passed
        ts_parts, value_parts, status_parts = [], [], []
        got, cursor = 0, since_us
        while got < wanted:
            ask = min(COPY_ROWS, wanted - got)
            rows = self.ring.rows_since(cursor, ask)
            if len(rows.ts) == 0:
                break
            inside = rows.ts <= until_us
            ts_parts.append(rows.ts[inside])
            value_parts.append(rows.values[inside][:, columns])
            status_parts.append(rows.status[inside][:, columns])
            got += len(ts_parts[-1])
            if not inside.all() or len(rows.ts) < ask:
                break
            cursor = int(rows.ts.max()) + 1
        else:
            self.horizon = int(ts_parts[-1][-1])
        if ts_parts:
            self.ts = np.concatenate(ts_parts)
            self.values = np.concatenate(value_parts)
            self.status = np.concatenate(status_parts)
        if len(self.ts) > 1 and not np.all(self.ts[1:] > self.ts[:-1]):   # a late row: keep time order
            order = np.argsort(self.ts, kind="stable")
            self.ts, self.values, self.status = self.ts[order], self.values[order], self.status[order]

    def weights(self) -> np.ndarray:
        return (self.status != SAMPLE_ABSENT).sum(axis=1)

    def write(self, low_us: int, high_us: int, pause: Callable[[], None] | None) -> None:
        """The samples stamped in [low_us, high_us] into each series' pieces; ``pause()`` between series."""
        start, end = np.searchsorted(self.ts, low_us, side="left"), np.searchsorted(self.ts, high_us, side="right")
        if start >= end:
            return
        ts = self.ts[start:end].tolist()
        cells, numbers = self.status[start:end], self.values[start:end]
        present = cells != SAMPLE_ABSENT
        good = (cells == SAMPLE_OK) & np.isfinite(numbers)
        clean = (present & good).all(axis=0).tolist()   # per series: every row a number
        any_present = present.any(axis=0).tolist()
        columns: list[list] = [[]] * len(self.chosen)
        whole = np.flatnonzero(self.integer)
        if len(whole):   # integer fields as integers (not-OK cells are 0 here, null below)
            with np.errstate(invalid="ignore"):
                integers = np.where(good[:, whole], numbers[:, whole], 0.0).astype(np.int64)
            for j, column in zip(whole.tolist(), integers.T.tolist()):
                columns[j] = column
        real = np.flatnonzero(~self.integer)
        for j, column in zip(real.tolist(), numbers[:, real].T.tolist()):
            columns[j] = column
        for j, output in enumerate(self.outputs):
            if not any_present[j]:
                continue
            column = columns[j]
            if clean[j]:
                output.add(list(zip(ts, column)))
            else:
                output.add([(t, v if ok else None) for t, v, here, ok
                            in zip(ts, column, present[:, j].tolist(), good[:, j].tolist()) if here])
            if pause is not None:
                pause()

    def release(self) -> None:
        self.ts = self.values = self.status = None   # type: ignore[assignment]


class _StorePart:
    """The chosen series of one store: each of their samples in the span, found a slice of rows at a time.

    A store's series come and go, so they are found as its rows are read,
    and its samples are kept one entry each (ts, series, value, status), not
    as a table of rows by series: a store's rows hold a few of its series each.
    """

    def __init__(self, store: StoreSeries, query: HistoryQuery) -> None:
        self.outputs: list[_Output] = []
        self.integer: list[bool] = []
        self.horizon: int | None = None   # the last row copied, when rows after it were left in the store
        index: dict[tuple[str, Labels], int] = {}
        parts: list[tuple[np.ndarray, ...]] = []
        got, cursor = 0, query.since_us
        while True:
            rows, series = store.read(cursor, COPY_ROWS)
            if len(rows.ts) == 0:
                break
            inside = int(np.searchsorted(rows.ts, query.until_us, side="right"))   # a store's rows ascend
            copies: dict[int, list[int]] = {}   # series number -> the outputs of its chosen copies
            for s in series:
                if _wanted(s.name, s.field_id, s.field_name, query.fields) and (query.gpus is None
                                                                                 or s.gpu in query.gpus):
                    copies.setdefault(s.column, []).append(self._output(index, s))
            if copies and inside:
                mine = rows.row < inside
                for copy in range(max(len(outputs) for outputs in copies.values())):
                    output_of = np.full(len(rows.keys), -1, dtype=np.intp)
                    for number, outputs in copies.items():
                        if copy < len(outputs):
                            output_of[number] = outputs[copy]
                    which = output_of[rows.series]
                    take = mine & (which >= 0)
                    parts.append((rows.ts[rows.row[take]], which[take], rows.values[take], rows.status[take]))
                    got += int(take.sum())
            if inside < len(rows.ts) or len(rows.ts) < COPY_ROWS:
                break
            if got > query.limit:
                self.horizon = int(rows.ts[-1])
                break
            cursor = int(rows.ts[-1]) + 1
        columns_of = zip(*parts) if parts else ([np.empty(0, np.int64)], [np.empty(0, np.intp)], [np.empty(0)],
                                                 [np.empty(0, np.int8)])
        ts, which, values, status = (np.concatenate(c) for c in columns_of)
        order = np.argsort(ts, kind="stable")   # copies of a series were gathered one after the other
        self.ts, self.which, self.values, self.status = ts[order], which[order], values[order], status[order]

    def _output(self, index: dict[tuple[str, Labels], int], s: SeriesInfo) -> int:
        found = index.get((s.name, s.labels))
        if found is None:
            found = index[(s.name, s.labels)] = len(self.outputs)
            self.outputs.append(_Output(_head(s.name, s.labels, s.field_id, s.field_name, s.gpu, s.entity)))
            self.integer.append(s.integer)
        return found

    def weights(self) -> np.ndarray:
        return np.ones(len(self.ts), dtype=np.int64)

    def write(self, low_us: int, high_us: int, pause: Callable[[], None] | None) -> None:
        """The samples stamped in [low_us, high_us] into each series' pieces; ``pause()`` between series."""
        start, end = np.searchsorted(self.ts, low_us, side="left"), np.searchsorted(self.ts, high_us, side="right")
        if start >= end:
            return
        order = np.argsort(self.which[start:end], kind="stable")   # series by series, each in time order
        which = self.which[start:end][order]
        ts, values = self.ts[start:end][order], self.values[start:end][order]
        good = (self.status[start:end][order] == SAMPLE_OK) & np.isfinite(values)
        bounds = [0, *(np.flatnonzero(which[1:] != which[:-1]) + 1).tolist(), len(which)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            k = int(which[a])
            times, ok = ts[a:b].tolist(), good[a:b]
            if self.integer[k]:   # integer fields as integers (not-OK cells are 0 here, null below)
                with np.errstate(invalid="ignore"):
                    numbers = np.where(ok, values[a:b], 0.0).astype(np.int64).tolist()
            else:
                numbers = values[a:b].tolist()
            if ok.all():
                self.outputs[k].add(list(zip(times, numbers)))
            else:
                self.outputs[k].add([(t, v if g else None) for t, v, g in zip(times, numbers, ok.tolist())])
            if pause is not None:
                pause()

    def release(self) -> None:
        self.ts = self.which = self.values = self.status = None   # type: ignore[assignment]


class _EventPart:
    """The chosen event families of one target: each event in the span, under each copy of its series."""

    def __init__(self, model: SampleModel, families: list[EventSeries], query: HistoryQuery) -> None:
        self.outputs: list[_Output] = []
        index: dict[tuple, int] = {}
        ts_list: list[int] = []
        which: list[int] = []
        values: list[int] = []
        events = model.events_since(query.since_us)
        for family in families:
            mask = (events.field_id == family.field_id) & (events.ts <= query.until_us)
            for i in np.flatnonzero(mask).tolist():
                entity = (int(events.entity_group[i]), int(events.entity_id[i]))
                gpu = model.gpu(entity)
                if query.gpus is not None and gpu not in query.gpus:
                    continue
                value = int(events.value[i])
                for labels in family.labels(entity, value):
                    key = (family.name, entity, labels)
                    if key not in index:
                        index[key] = len(self.outputs)
                        self.outputs.append(_Output(_head(family.name, labels, family.field_id, family.field_name,
                                                          gpu, entity)))
                    ts_list.append(int(events.ts[i]))
                    which.append(index[key])
                    values.append(value)
        order = np.argsort(np.array(ts_list, dtype=np.int64), kind="stable")
        self.ts = np.array(ts_list, dtype=np.int64)[order]
        self.which = np.array(which, dtype=np.intp)[order]
        self.values = np.array(values, dtype=np.int64)[order]
        self.horizon: int | None = None

    def weights(self) -> np.ndarray:
        return np.ones(len(self.ts), dtype=np.int64)

    def write(self, low_us: int, high_us: int, pause: Callable[[], None] | None) -> None:
        start, end = np.searchsorted(self.ts, low_us, side="left"), np.searchsorted(self.ts, high_us, side="right")
        pairs: dict[int, list] = {}
        for t, k, v in zip(self.ts[start:end].tolist(), self.which[start:end].tolist(),
                           self.values[start:end].tolist()):
            pairs.setdefault(k, []).append((t, v))
        for k, samples in pairs.items():
            self.outputs[k].add(samples)

    def release(self) -> None:
        self.ts = self.which = self.values = None   # type: ignore[assignment]


def _stamps(parts: list) -> tuple[np.ndarray, np.ndarray]:
    """Every timestamp of the span once, ascending, and how many samples each holds."""
    stamps = [p.ts for p in parts]
    weights = [p.weights() for p in parts]
    if not stamps or not sum(len(s) for s in stamps):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    unique, where = np.unique(np.concatenate(stamps), return_inverse=True)
    counts = np.bincount(where, weights=np.concatenate(weights), minlength=len(unique)).astype(np.int64)
    return unique, counts


def _cut(unique: np.ndarray, cumulative: np.ndarray, limit: int, horizon: int | None) -> tuple[int, int | None]:
    """(how many of the timestamps the page holds, next_since or None).

    Whole timestamps, oldest first, while the page stays within ``limit``
    (at least one, however many samples it holds), and none after
    ``horizon``, the earliest row copied from a ring that holds more.
    """
    keep = max(int(np.searchsorted(cumulative, limit, side="right")), 1)
    if horizon is not None:
        keep = min(keep, max(int(np.searchsorted(unique, horizon, side="right")), 1))
    keep = min(keep, len(unique))
    if keep < len(unique):
        return keep, int(unique[keep])
    if horizon is not None:
        return keep, horizon + 1   # the ring's rows after the horizon were not read: they come next
    return keep, None


def _seconds(us: int) -> str:
    """µs as exact decimal Unix seconds, a JSON number."""
    return f"{us // 1_000_000}.{us % 1_000_000:06d}"


def answer(models: Sequence[SampleModel], query: HistoryQuery, *, deadline: float | None = None,
           pause: Callable[[], None] | None = None) -> Answer:
    """The JSON answer for a checked query over the sample models of the targets.

    ``deadline`` (time.monotonic()): past it the answer is cut at the slab
    it reached.  ``pause()`` is called between slabs.
    """
    parts: list[_RingPart | _StorePart | _EventPart] = []
    known = False
    for model in models:
        for ring in model.rings:
            chosen = [s for s in ring.series if _wanted(s.name, s.field_id, s.field_name, query.fields)
                      and (query.gpus is None or s.gpu in query.gpus)]
            known = known or any(_wanted(s.name, s.field_id, s.field_name, query.fields) for s in ring.series)
            if chosen:
                parts.append(_RingPart(ring, chosen))
        for store in model.stores:
            if not any(_wanted(name, field_id, field_name, query.fields)
                       for name, field_id, field_name in store.fields):
                continue
            known = True
            part = _StorePart(store, query)
            if part.outputs:
                parts.append(part)
            if pause is not None:
                pause()
        families = [f for f in model.event_series if _wanted(f.name, f.field_id, f.field_name, query.fields)]
        if families:
            known = True
            parts.append(_EventPart(model, families, query))
    if not known:
        raise QueryError(f"field: {_name(','.join(query.fields))} is not served here (name a field of the "
                         "counters file by id, DCGM name or metric name)")
    for part in parts:
        if isinstance(part, _RingPart):
            part.read(query.since_us, query.until_us, query.limit)
            if pause is not None:
                pause()
    horizons = [p.horizon for p in parts if p.horizon is not None]
    unique, counts = _stamps(parts)
    cumulative = np.cumsum(counts)
    keep, next_since = _cut(unique, cumulative, query.limit, min(horizons) if horizons else None)
    start = 0
    while start < keep:   # slabs of whole timestamps, each about SLAB_SAMPLES samples
        before = int(cumulative[start - 1]) if start else 0
        end = min(max(int(np.searchsorted(cumulative, before + SLAB_SAMPLES, side="right")), start + 1), keep)
        for part in parts:
            part.write(int(unique[start]), int(unique[end - 1]), pause)
        start = end
        if start < keep:
            if pause is not None:
                pause()
            if deadline is not None and time.monotonic() > deadline:
                keep, next_since = start, int(unique[start])
    samples = int(cumulative[keep - 1]) if keep else 0
    for part in parts:
        part.release()
    truncated = next_since is not None
    head = (f'{{"status":"success","data":{{"since_us":{query.since_us},"until_us":{query.until_us},'
            f'"columns":["ts_us","value"],"truncated":{"true" if truncated else "false"}'
            + (f',"next_since":{_seconds(next_since)}' if next_since is not None else "") + ',"series":[')
    pieces = [head.encode()]
    for part in parts:
        for output in part.outputs:
            if isinstance(part, (_EventPart, _StorePart)) and not output.pieces:
                continue   # an event or store series appears only with samples
            if len(pieces) > 1:
                pieces.append(b",")
            pieces.append(output.head)
            for i, piece in enumerate(output.pieces):
                if i:
                    pieces.append(b",")
                pieces.append(piece)
            pieces.append(b"]}")
    pieces.append(b"]}}")
    return Answer(pieces, samples, truncated, next_since)
