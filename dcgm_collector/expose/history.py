"""The ring content as JSON, for scripts: what ``GET /api/v1/samples`` answers.

A query (expose.history_query: the fields, the GPUs, the span or a cursor,
the limit) is answered with, per series, the name and labels /metrics gives
it and every sample the rings hold in the span, oldest first, as ``[ts_us,
value]`` pairs (``value`` null for a blank or not-supported sample).  XID
rows come from the event ring, each event a sample.  The series of attached
stores (series that come and go, expose.store_families) are answered as the
fixed ones, under the names and labels /metrics gives them, for as long as
their store holds their samples (an expired series' past samples included).

**Cursors.**  Every answer gives ``cursor`` (expose.history_cursor): asked
with it instead of a span, the answer holds exactly the rows committed to
the chosen rings after the rows the earlier answer read, each once across
successive answers whatever their timestamps, and a new cursor.  A span's
answer reads only the rows each ring held when the answer began to read it
(its rows_written then), so its cursor goes on from there.  When rows a
cursor names were overwritten, the answer starts at the oldest row held and
says ``"gap": true``.  After a cursor only series with samples are listed,
and ``since_us``/``until_us`` are null.  The usual cursor answer, a few new
rows of a ring, is made without numpy (expose.history_few), the same JSON.

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

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from dcgm_collector.expose.history_cursor import Cursor, encode
from dcgm_collector.expose.history_few import FEW_ROWS, cursor_answer_head, few_after, few_texts, start_row
from dcgm_collector.expose.history_heads import Layout, head_of, layout_of, wanted
from dcgm_collector.expose.history_query import (
    DEFAULT_SPAN_S,
    MAX_SAMPLES,
    HistoryQuery,
    QueryError,
    parse_query,
    shown_name,
)
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_OK, EventRows
from dcgm_collector.series.samples import (
    EventSeries,
    Labels,
    RingSeries,
    SampleModel,
    SeriesInfo,
    StoreRead,
    StoreSeries,
)

__all__ = ["ANSWER_BUDGET_S", "DEFAULT_SPAN_S", "MAX_SAMPLES", "Answer", "HistoryQuery", "QueryError", "answer",
           "parse_query"]

ANSWER_BUDGET_S = 2.0       # building one answer: past this it is cut where it got to (truncated, next_since)
SLAB_SAMPLES = 32_768       # samples written between two checks of the deadline (a slab's lists: about 1 MB)
COPY_ROWS = 256             # ring rows copied at a time (the whole width of the ring, before the chosen columns)
_SEPARATORS = (",", ":")
_SAMPLES = json.JSONEncoder(separators=_SEPARATORS, allow_nan=False)   # one encoder for every slab
_NO_EVENTS = EventRows(np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.uint32), np.empty(0, np.uint16),
                       np.empty(0, np.int64))
_NO_TS = np.empty(0, np.int64)

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


@dataclass
class _Place:
    """Where a part's rows are in its ring, for the answer's cursor; and whether rows a cursor asked for were lost.

    Read by time (``since``), the place is the ring's ``rows_written`` when
    the answer began to read it (``end_row``: rows committed later are not
    read, they are the next cursor's).  Read from a cursor, it is the first
    row read and the ts of the rows read, in row order and never
    descending (:func:`_ascending`), so a cut at a time ends a run of rows.
    """

    serial: int
    end_row: int = 0
    first_row: int | None = None
    row_ts: np.ndarray | None = None
    gap: bool = False

    def next_row(self, cut_us: int | None) -> int:
        """The number of the first row this answer did not give out (all up to ``cut_us``, exclusive, if cut)."""
        if self.first_row is None or self.row_ts is None:
            return self.end_row
        given = len(self.row_ts) if cut_us is None else int(np.searchsorted(self.row_ts, cut_us, side="left"))
        return self.first_row + given


def _ascending(ts: np.ndarray) -> int:
    """How many leading rows keep time order (none older than one before it): a late row waits for the next
    answer, so that the rows an answer gives out by time are a run of the ring's."""
    if len(ts) < 2:
        return len(ts)
    late = np.flatnonzero(ts[1:] < np.maximum.accumulate(ts)[:-1])
    return int(late[0]) + 1 if len(late) else len(ts)


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

    def __init__(self, ring: RingSeries, layout: Layout) -> None:
        self.chosen = layout.chosen
        self.outputs = [_Output(head) for head in layout.heads]
        self.ring = ring
        self.layout = layout
        self.columns = layout.columns
        self.ts = _NO_TS
        self.values = self.status = None   # type: ignore[assignment]   # (rows, chosen), once read
        self.horizon: int | None = None   # the last row copied, when rows after it were left in the ring
        self.place = _Place(ring.ring.serial)

    def read(self, query: HistoryQuery) -> None:
        """The rows of the query's span (or after its cursor), at most as many as its limit can use."""
        if query.cursor is not None:
            ring = self.ring.ring
            self._read_from(start_row(query.cursor, self.place.serial, ring.rows_written, ring.first_row_since),
                            query.limit)
            return
        since_us, until_us, limit = query.since_us, query.until_us, query.limit
        self.place.end_row = end = self.ring.ring.rows_written
        columns = self.columns
        wanted = max(limit // len(self.chosen), 1) + 1   # rows the limit can use, and one to know it is passed
        ts_parts, value_parts, status_parts = [], [], []
        got, cursor = 0, since_us
        while got < wanted:
            ask = min(COPY_ROWS, wanted - got)
            rows = self.ring.rows_since(cursor, ask, end)
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

    def _read_from(self, row: int, limit: int) -> None:
        """The rows from number ``row`` on, a slice at a time, as many as the limit can use, in time order."""
        columns = self.columns
        wanted = max(limit // len(self.chosen), 1) + 1
        ts_parts, value_parts, status_parts = [], [], []
        got, at, more = 0, row, False
        while got < wanted:
            ask = min(COPY_ROWS, wanted - got)
            rows, first = self.ring.ring.rows_from(at, ask)
            if self.place.first_row is None:
                self.place.first_row, self.place.gap = first, first > row
            elif first > at:   # the writer lapped this read: what was read goes out, the rest next time
                more = True
                break
            ts_parts.append(rows.ts)
            value_parts.append(rows.values[:, columns])
            status_parts.append(rows.status[:, columns])
            got, at = got + len(rows.ts), first + len(rows.ts)
            if len(rows.ts) < ask:
                break
        else:
            more = True
        ts = np.concatenate(ts_parts)
        keep = _ascending(ts)
        more = more or keep < len(ts)
        self.ts, self.values, self.status = ts[:keep], np.concatenate(value_parts)[:keep], \
            np.concatenate(status_parts)[:keep]
        self.place.row_ts = self.ts
        if more and keep:
            self.horizon = int(self.ts[-1])

    def weights(self) -> np.ndarray:
        return (self.status != SAMPLE_ABSENT).sum(axis=1) if len(self.ts) else _NO_TS

    def write(self, low_us: int, high_us: int, pause: Callable[[], None] | None) -> None:
        """The samples stamped in [low_us, high_us] into each series' pieces; ``pause()`` between series."""
        start, end = np.searchsorted(self.ts, low_us, side="left"), np.searchsorted(self.ts, high_us, side="right")
        if start >= end:
            return
        if end - start <= FEW_ROWS:
            self._write_few(start, end)
            if pause is not None:
                pause()
            return
        ts = self.ts[start:end].tolist()
        cells, numbers = self.status[start:end], self.values[start:end]
        present = cells != SAMPLE_ABSENT
        good = (cells == SAMPLE_OK) & np.isfinite(numbers)
        clean = (present & good).all(axis=0).tolist()   # per series: every row a number
        any_present = present.any(axis=0).tolist()
        columns: list[list] = [[]] * len(self.chosen)
        whole = self.layout.whole
        if len(whole):   # integer fields as integers (not-OK cells are 0 here, null below)
            with np.errstate(invalid="ignore"):
                integers = np.where(good[:, whole], numbers[:, whole], 0.0).astype(np.int64)
            for j, column in zip(whole.tolist(), integers.T.tolist()):
                columns[j] = column
        real = self.layout.real
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

    def _write_few(self, start: int, end: int) -> None:
        """As write, for a few rows: the text made in Python (:func:`_few_texts`)."""
        texts, _ = few_texts(self.ts[start:end].tolist(), self.values[start:end].tolist(),
                           self.status[start:end].tolist(), self.layout.integer, list(range(len(self.chosen))))
        for output, text in zip(self.outputs, texts):
            if text:
                output.pieces.append(text)

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
        self.place = _Place(store.store.serial)
        self._lapped = False
        index: dict[tuple[str, Labels], int] = {}
        parts: list[tuple[np.ndarray, ...]] = []
        row_ts: list[np.ndarray] = [np.empty(0, np.int64)]
        got = 0
        for rows, series in self._slices(store, query):
            if len(rows.ts) == 0:
                break
            row_ts.append(rows.ts)
            inside = int(np.searchsorted(rows.ts, query.until_us, side="right"))   # a store's rows ascend
            copies: dict[int, list[int]] = {}   # series number -> the outputs of its chosen copies
            for s in series:
                if wanted(s.name, s.field_id, s.field_name, query.fields) and (query.gpus is None
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
        if query.cursor is not None:
            self.place.row_ts = np.concatenate(row_ts)   # a store's rows ascend: no late row to hold back
            if self._lapped and len(self.place.row_ts):
                self.horizon = int(self.place.row_ts[-1])
        columns_of = zip(*parts) if parts else ([np.empty(0, np.int64)], [np.empty(0, np.intp)], [np.empty(0)],
                                                 [np.empty(0, np.int8)])
        ts, which, values, status = (np.concatenate(c) for c in columns_of)
        order = np.argsort(ts, kind="stable")   # copies of a series were gathered one after the other
        self.ts, self.which, self.values, self.status = ts[order], which[order], values[order], status[order]

    def _slices(self, store: StoreSeries, query: HistoryQuery) -> Iterator[StoreRead]:
        """The store's rows COPY_ROWS at a time: from the span's start by time, or from the cursor's row."""
        if query.cursor is None:
            self.place.end_row = end = store.store.rows_written
            since = query.since_us
            while True:
                read = store.read(since, COPY_ROWS, end)
                yield read
                if len(read.rows.ts) == 0:
                    return
                since = int(read.rows.ts[-1]) + 1
        at = start_row(query.cursor, self.place.serial, store.store.rows_written, store.store.first_row_since)
        while True:
            read, first = store.read_from(at, COPY_ROWS)
            if self.place.first_row is None:
                self.place.first_row, self.place.gap = first, first > at
            elif first > at:   # the writer lapped this read: what was read goes out, the rest next time
                self._lapped = True
                return
            yield read
            at = first + len(read.rows.ts)

    def _output(self, index: dict[tuple[str, Labels], int], s: SeriesInfo) -> int:
        found = index.get((s.name, s.labels))
        if found is None:
            found = index[(s.name, s.labels)] = len(self.outputs)
            self.outputs.append(_Output(head_of(s.name, s.labels, s.field_id, s.field_name, s.gpu, s.entity)))
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
        self.horizon: int | None = None
        self.place = _Place(model.events.serial)
        if query.cursor is None:
            self.place.end_row = end = model.events.rows_written
            events = model.events_since(query.since_us, end)
        else:
            ring = model.events
            at = start_row(query.cursor, self.place.serial, ring.rows_written, ring.first_row_since)
            events, first = ring.rows_from(at) if at < ring.rows_written else (_NO_EVENTS, at)
            self.place.first_row, self.place.gap = first, first > at
            keep = _ascending(events.ts)
            if keep < len(events.ts):   # a late event: it and the ones after it come in the next answer
                events = EventRows(*(column[:keep] for column in events))
                self.horizon = int(events.ts[-1])
            self.place.row_ts = events.ts
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
                        self.outputs.append(_Output(head_of(family.name, labels, family.field_id, family.field_name,
                                                          gpu, entity)))
                    ts_list.append(int(events.ts[i]))
                    which.append(index[key])
                    values.append(value)
        order = np.argsort(np.array(ts_list, dtype=np.int64), kind="stable")
        self.ts = np.array(ts_list, dtype=np.int64)[order]
        self.which = np.array(which, dtype=np.intp)[order]
        self.values = np.array(values, dtype=np.int64)[order]

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


def _answer_head(query: HistoryQuery, parts: list, newest_us: int | None, next_since: int | None) -> str:
    """The answer's JSON up to its series: the span (null after a cursor), truncated, gap, the next cursor."""
    cursor = query.cursor
    since_resume = query.since_us if cursor is None else cursor.resume_us
    resume_us = max(since_resume, newest_us + 1) if newest_us is not None else since_resume
    rows = {part.place.serial: part.place.next_row(next_since) for part in parts}
    text = encode(Cursor(resume_us, rows))
    truncated = "true" if next_since is not None else "false"
    if cursor is None:
        return (f'{{"status":"success","data":{{"since_us":{query.since_us},"until_us":{query.until_us},'
                f'"columns":["ts_us","value"],"truncated":{truncated}'
                + (f',"next_since":{_seconds(next_since)}' if next_since is not None else "")
                + f',"cursor":"{text}","series":[')
    return cursor_answer_head(text, next_since is not None, any(part.place.gap for part in parts))


def answer(models: Sequence[SampleModel], query: HistoryQuery, *, deadline: float | None = None,
           pause: Callable[[], None] | None = None) -> Answer:
    """The JSON answer for a checked query over the sample models of the targets.

    ``deadline`` (time.monotonic()): past it the answer is cut at the slab
    it reached.  ``pause()`` is called between slabs.
    """
    if query.cursor is not None:
        few = few_after(models, query, query.cursor, pause)
        if few is not None:
            return Answer([few[0]], few[1], False, None)
    parts: list[_RingPart | _StorePart | _EventPart] = []
    known = False
    for model in models:
        for ring in model.rings:
            layout = layout_of(ring, query)
            known = known or layout.served
            if layout.chosen:
                parts.append(_RingPart(ring, layout))
        for store in model.stores:
            if not any(wanted(name, field_id, field_name, query.fields)
                       for name, field_id, field_name in store.fields):
                continue
            known = True
            parts.append(_StorePart(store, query))   # kept without series too: the cursor keeps its place
            if pause is not None:
                pause()
        families = [f for f in model.event_series if wanted(f.name, f.field_id, f.field_name, query.fields)]
        if families:
            known = True
            parts.append(_EventPart(model, families, query))
    if not known:
        raise QueryError(f"field: {shown_name(','.join(query.fields))} is not served here (name a field of the "
                         "counters file by id, DCGM name or metric name)")
    for part in parts:
        if isinstance(part, _RingPart):
            part.read(query)
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
    head = _answer_head(query, parts, int(unique[keep - 1]) if keep else None, next_since)
    pieces = [head.encode()]
    for part in parts:
        for output in part.outputs:
            if (query.cursor is not None or isinstance(part, (_EventPart, _StorePart))) and not output.pieces:
                continue   # an event or store series appears only with samples, and so does any after a cursor
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
