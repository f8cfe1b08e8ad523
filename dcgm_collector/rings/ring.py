"""Ring buffers of DCGM samples, and window statistics over them.

DCGM stamps every sample of one update pass with the pass's time, so one
field group watched at one frequency yields *rows*: a :class:`RingBuffer`
keeps rows of ``ts`` (int64 µs), ``values[n_series]`` (float64, NaN unless
the sample is OK) and ``status[n_series]`` (int8, one of the ``SAMPLE_*``
codes).  A series is one (entity group, entity id, field id).

A ring keeps its newest rows in arrays (``ts[n]``, ``values[n, n_series]``,
``status[n, n_series]``).  A ring that holds more than two blocks of rows
(``BLOCK_ROWS``) keeps two blocks' worth there and every older complete
block compressed in native memory (``native/ext/ring_blocks.h``): lossless,
a few bytes or less a sample, and growing with what was written up to the
retention, so the retention costs memory only as it fills.  Reads give the
same rows from either.

Rows are written by the native drain (:mod:`dcgm_collector.collect.drain`)
or :meth:`RingBuffer.append`, one writer at a time, and copied out by any
number of readers with the publication protocol of ``native/ext/ring.h``: a
reader never sees a row that is being written, and takes no lock.  Reads go
through C only; never read the arrays behind a ring directly while a writer
may run.

Rows are kept in the order they were committed.  DCGM's cursor makes each
drain's rows newer than the last one's; a row that is not (a back-dated
injection) is still stored, and a read that scans back to a ``since`` time
stops at the first row older than ``since``, so such a late row hides the
rows committed before it from reads that start after its time.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from dcgm_collector.ext._native import ffi, lib

__all__ = [
    "BLOCK_ROWS",
    "SAMPLE_ABSENT",
    "SAMPLE_BLANK",
    "SAMPLE_NOT_SUPPORTED",
    "SAMPLE_OK",
    "EventRing",
    "EventRows",
    "RingBuffer",
    "RingRows",
    "SeriesKey",
    "WindowStats",
]

SAMPLE_OK: int = lib.DCGMC_SAMPLE_OK                        # a number
SAMPLE_BLANK: int = lib.DCGMC_SAMPLE_BLANK                  # DCGM's blank value (no reading)
SAMPLE_NOT_SUPPORTED: int = lib.DCGMC_SAMPLE_NOT_SUPPORTED  # DCGM's NOT_SUPPORTED value
SAMPLE_ABSENT: int = lib.DCGMC_SAMPLE_ABSENT                # no record for this series at this row's time

BLOCK_ROWS: int = lib.DCGMC_RING_BLOCK_ROWS   # rows in one compressed block

_ST_OK = lib.DCGM_ST_OK
_ST_IN_USE = lib.DCGM_ST_IN_USE
_UINT32_MAX = 2**32 - 1
_INT64_MAX = 2**63 - 1
_SERIALS = itertools.count(1)   # ring serials: no two rings of one process share one, even after one is freed


class SeriesKey(NamedTuple):
    """One series of a ring: a field of one entity."""

    entity_group: int
    entity_id: int
    field_id: int


class RingRows(NamedTuple):
    """Rows copied out of a ring, oldest first: ts (n,), values and status (n, n_series)."""

    ts: np.ndarray
    values: np.ndarray
    status: np.ndarray


@dataclass(frozen=True)
class WindowStats:
    """Statistics of every series of a ring over the rows of one window.

    Per-series arrays (index = series index of the ring): ``min``, ``max``,
    ``avg`` over the OK samples (NaN where there is none), ``count`` of OK
    samples, and the newest cell that is not ABSENT: ``last`` (NaN unless it
    is OK), ``last_status`` (which SAMPLE_* it is; SAMPLE_ABSENT when the
    window holds no cell of the series) and ``last_ts`` (0 when none).
    Blank and not-supported samples count in ``last`` but not in the numbers.
    """

    series: tuple[SeriesKey, ...]
    rows: int            # rows inside the window
    since_us: int        # the window is [since_us, until_us], both ends included
    until_us: int
    last: np.ndarray
    last_ts: np.ndarray
    last_status: np.ndarray
    min: np.ndarray
    max: np.ndarray
    avg: np.ndarray
    count: np.ndarray

    @classmethod
    def from_rows(cls, series: tuple[SeriesKey, ...], rows: RingRows, since_us: int, until_us: int) -> WindowStats:
        """Statistics of rows copied out of a ring, whose cells are NaN exactly where they are not OK.

        That invariant (the ring stores NaN for every cell that is not OK,
        and a NaN reading as BLANK) lets min and max run as plain NaN-skipping
        reductions: a scrape computes them for every series of every ring, and
        masked (``where=``) reductions cost several times more.
        """
        count, low, high, total = _reduce(rows, len(series))
        return cls._of(series, rows, since_us, until_us, count, low, high, total, len(rows.ts))

    @classmethod
    def _of(cls, series: tuple[SeriesKey, ...], rows: RingRows, since_us: int, until_us: int, count: np.ndarray,
            low: np.ndarray, high: np.ndarray, total: np.ndarray, n_rows: int) -> WindowStats:
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = total / count                     # 0 / 0: NaN where there is no OK cell
        last, last_ts, last_status = _newest_present(rows, len(series))
        return cls(series, n_rows, since_us, until_us, last, last_ts, last_status, low, high, avg, count)


def _reduce(rows: RingRows, n_series: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Count, min, max and sum of the OK cells of each series (NaN min and max where there is none)."""
    values, status = rows.values, rows.status
    ok = status == SAMPLE_OK
    count = ok.sum(axis=0, dtype=np.int64)
    if len(values):
        low = np.fmin.reduce(values, axis=0)    # NaN only where the rows hold no OK cell
        high = np.fmax.reduce(values, axis=0)
    else:
        low, high = np.full(n_series, np.nan), np.full(n_series, np.nan)
    total = np.add.reduce(np.where(ok, values, 0.0), axis=0)
    return count, low, high, total


def _newest_present(rows: RingRows, n_series: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per series: value, ts and status of the newest cell that is not ABSENT."""
    last = np.full(n_series, np.nan)
    last_ts = np.zeros(n_series, dtype=np.int64)
    last_status = np.full(n_series, SAMPLE_ABSENT, dtype=np.int8)
    if len(rows.ts) == 0:
        return last, last_ts, last_status
    present = rows.status != SAMPLE_ABSENT
    found = present.any(axis=0)
    newest = len(rows.ts) - 1 - np.argmax(present[::-1], axis=0)
    columns = np.arange(n_series)[found]
    rows_of = newest[found]
    last[found] = rows.values[rows_of, columns]
    last_ts[found] = rows.ts[rows_of]
    last_status[found] = rows.status[rows_of, columns]
    return last, last_ts, last_status


def _int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is out of range [{low}, {high}]")
    return int(value)


def _series_keys(series: Sequence[Any]) -> tuple[SeriesKey, ...]:
    if isinstance(series, (str, bytes)) or not isinstance(series, Sequence):
        raise TypeError(f"series must be a sequence of (group, entity, field) tuples, not {type(series).__name__}")
    keys = []
    for item in series:
        if not isinstance(item, tuple) or len(item) != 3:
            raise TypeError(f"a series is an (entity group, entity id, field id) tuple, not {item!r}")
        keys.append(SeriesKey(_int(item[0], "entity group", 0, 2**31 - 1), _int(item[1], "entity id", 0, _UINT32_MAX),
                              _int(item[2], "field id", 0, 65535)))
    if not keys:
        raise ValueError("a ring needs at least one series")
    if len(set(keys)) != len(keys):
        raise ValueError("series repeat in a ring")
    return tuple(keys)


def _pointer(kind: str, array: np.ndarray) -> Any:
    return ffi.from_buffer(kind, array, require_writable=True)


def _copy_since(native: Any, since_us: int, find: Any, copy: Any, columns: Callable[[int], Any],
                kinds: tuple[str, ...], max_rows: int | None = None, end_row: int | None = None) -> tuple[Any, int]:
    """The newest rows with ts >= since_us, copied into ``columns(n)`` less the torn ones, and how many were torn.

    ``find`` and ``copy`` are one ring kind's ``*_find_since`` and ``*_copy``;
    ``kinds`` gives the C type of each column.  ``max_rows``: only the oldest
    that many of those rows; ``end_row``: none numbered from it on.
    """
    since_us = _int(since_us, "since_us", -_INT64_MAX, _INT64_MAX)
    first = ffi.new("int64_t *")
    head = find(native, since_us, first)
    if max_rows is not None:
        head = min(head, first[0] + _int(max_rows, "max_rows", 0, _INT64_MAX))
    if end_row is not None:
        head = max(min(head, _int(end_row, "end_row", 0, _INT64_MAX)), first[0])
    return _copy_rows(native, copy, columns, kinds, first[0], head)


def _copy_rows(native: Any, copy: Any, columns: Callable[[int], Any], kinds: tuple[str, ...], first: int,
               end: int) -> tuple[Any, int]:
    """Rows [first, end) (all still within the ring's capacity of its head) less the torn ones, and how many."""
    out = columns(end - first)
    if end == first:
        return out, 0
    skipped = ffi.new("int64_t *")
    pointers = (_pointer(kind, column) for kind, column in zip(kinds, out, strict=True))
    if copy(native, first, end, *pointers, skipped) < 0:
        raise RuntimeError("ring copy refused its arguments")
    torn = skipped[0]
    return (type(out)(*(column[torn:] for column in out)) if torn else out), torn


def _copy_from(native: Any, head: int, capacity: int, row: int, copy: Any, columns: Callable[[int], Any],
               kinds: tuple[str, ...], max_rows: int | None) -> tuple[Any, int]:
    """The rows numbered from ``row`` on that the ring still holds, and the number of the first one copied.

    Rows are numbered in commit order from 0 (``rows_written`` is the next
    number); the first one copied is later than ``row`` when the writer had
    overwritten those rows (before or while copying).
    """
    row = _int(row, "row", 0, _INT64_MAX)
    first = min(max(row, head - capacity), head)
    end = head if max_rows is None else min(head, first + _int(max_rows, "max_rows", 0, _INT64_MAX))
    out, torn = _copy_rows(native, copy, columns, kinds, first, end)
    return out, first + torn


def _first_row_since(native: Any, find: Any, since_us: int) -> int:
    """The number of the first row stamped at or after ``since_us`` (``find``: one ring kind's ``*_find_since``)."""
    first = ffi.new("int64_t *")
    find(native, _int(since_us, "since_us", -_INT64_MAX, _INT64_MAX), first)
    return int(first[0])


def _array_rows(capacity: int) -> int:
    """Rows of a ring's arrays: all of them, or two blocks when the older rows go to compressed blocks."""
    return capacity if capacity <= 2 * BLOCK_ROWS else 2 * BLOCK_ROWS


class RingBuffer:
    """Rows of samples sharing one DCGM timestamp; one writer, many readers.

    It holds at least the newest ``capacity`` rows (at most a block more);
    when full, each new row replaces the oldest.
    """

    def __init__(self, series: Sequence[SeriesKey | tuple[int, int, int]], capacity: int) -> None:
        self.series: tuple[SeriesKey, ...] = _series_keys(series)
        self.capacity: int = _int(capacity, "capacity", 1, 2**40)
        n = len(self.series)
        rows = _array_rows(self.capacity)
        self._index = {key: i for i, key in enumerate(self.series)}
        self._ts = np.zeros(rows, dtype=np.int64)
        self._values = np.full((rows, n), np.nan)
        self._status = np.full((rows, n), SAMPLE_ABSENT, dtype=np.int8)
        self._control = np.zeros(2, dtype=np.int64)
        groups = np.array([k.entity_group for k in self.series], dtype=np.int32)
        entities = np.array([k.entity_id for k in self.series], dtype=np.uint32)
        fields = np.array([k.field_id for k in self.series], dtype=np.uint16)
        native = lib.dcgmc_ring_new(
            _pointer("int64_t[]", self._ts), _pointer("double[]", self._values), _pointer("int8_t[]", self._status),
            _pointer("int64_t[]", self._control), rows, n, ffi.from_buffer("int32_t[]", groups),
            ffi.from_buffer("uint32_t[]", entities), ffi.from_buffer("uint16_t[]", fields), self.capacity,
        )
        if native == ffi.NULL:
            raise MemoryError(f"cannot make a ring of {self.capacity} rows x {n} series")
        # The C side holds pointers into the arrays above; both live as long as this object.
        self._native = ffi.gc(native, lib.dcgmc_ring_free)
        # rows readers copied but dropped because the writer overwrote them meanwhile (diagnostics)
        self.torn_rows_dropped = 0
        self.serial: int = next(_SERIALS)   # names this ring in a reader's saved place (the history API's cursor)

    @staticmethod
    def bytes_for(n_series: int, capacity: int) -> int:
        """Bytes of the arrays of a ring of that shape (ts, values, status, control); its blocks come on top."""
        rows = _array_rows(capacity)
        return rows * 8 + rows * n_series * (8 + 1) + 16

    @property
    def nbytes(self) -> int:
        """Bytes this ring holds now: its arrays and its compressed blocks (staging of a drain comes on top)."""
        arrays = self._ts.nbytes + self._values.nbytes + self._status.nbytes + self._control.nbytes
        return arrays + int(lib.dcgmc_ring_block_bytes(self._native))

    @property
    def encoded(self) -> tuple[int, int]:
        """(bytes, samples) of the compressed blocks held: what compression achieves, index not counted."""
        out = ffi.new("int64_t[2]")
        lib.dcgmc_ring_encoded(self._native, out, out + 1)
        return int(out[0]), int(out[1])

    @property
    def samples_held(self) -> int:
        """Cells the ring holds that are not ABSENT (samples, blank ones included)."""
        return int(lib.dcgmc_ring_samples_held(self._native))

    @property
    def n_series(self) -> int:
        return len(self.series)

    @property
    def rows_written(self) -> int:
        """Rows ever committed (the ring holds the newest ``min(rows_written, capacity)``)."""
        return int(lib.dcgmc_ring_head(self._native))

    @property
    def newest_ts(self) -> int | None:
        """ts of the newest row committed (µs), or None when there is none; safe while a writer runs."""
        ts = ffi.new("int64_t *")
        for _ in range(8):  # only a writer lapping the whole ring between two loads makes this retry
            if lib.dcgmc_ring_newest_ts(self._native, ts):
                return int(ts[0])
            if self.rows_written == 0:
                return None
        return None

    def index(self, key: SeriesKey | tuple[int, int, int]) -> int:
        """The column of a series."""
        return self._index[SeriesKey(*key)]

    def append(self, ts_us: Any, values: Any, status: Any = None) -> None:
        """Commit one row (ts scalar, values of n_series) or several (ts (n,), values (n, n_series)).

        ``status`` has the shape of values; by default a NaN value is
        SAMPLE_BLANK and any other SAMPLE_OK.  Cells that are not OK are
        stored as NaN.  Rows beyond the capacity keep only the newest ones.
        """
        ts = np.ascontiguousarray(np.atleast_1d(np.asarray(ts_us)), dtype=np.int64)
        if ts.ndim != 1:
            raise ValueError("ts_us must be a number or a 1-D array")
        shape = (len(ts), self.n_series)
        values = np.ascontiguousarray(np.asarray(values, dtype=np.float64).reshape(shape))
        if status is None:
            status = np.where(np.isnan(values), SAMPLE_BLANK, SAMPLE_OK)
        status = np.asarray(status)
        if status.size != values.size or np.any((status < SAMPLE_OK) | (status > SAMPLE_ABSENT)):
            raise ValueError("status must match values and hold SAMPLE_* codes")
        status = np.ascontiguousarray(status.reshape(shape), dtype=np.int8)
        rc = lib.dcgmc_ring_commit_rows(
            self._native, ffi.from_buffer("int64_t[]", ts), ffi.from_buffer("double[]", values),
            ffi.from_buffer("int8_t[]", status), len(ts), ffi.NULL,
        )
        _check_write(rc)

    def rows_since(self, since_us: int, max_rows: int | None = None, end_row: int | None = None) -> RingRows:
        """A consistent copy of the newest rows with ts >= since_us (since_us <= 0: all held), oldest first.

        ``max_rows``: only the oldest that many of them (a reader that pages
        through the ring copies a bounded slice at a time).  ``end_row``:
        none of the rows committed from that row number on (a reader that
        noted ``rows_written`` reads only what was there then).
        """
        rows, torn = _copy_since(self._native, since_us, lib.dcgmc_ring_find_since, lib.dcgmc_ring_copy,
                                 self._empty_rows, _ROW_KINDS, max_rows, end_row)
        self.torn_rows_dropped += torn
        return rows

    def rows_from(self, row: int, max_rows: int | None = None) -> tuple[RingRows, int]:
        """A consistent copy of the rows numbered from ``row`` on, oldest first, and the number of the first.

        Rows are numbered in commit order from 0, so ``rows_written`` is the
        number the next row gets: a reader that keeps its place by number
        sees every row once, whatever their timestamps.  The first row
        copied is later than ``row`` when the ring no longer holds those
        rows.  ``max_rows``: only the oldest that many.
        """
        head = int(lib.dcgmc_ring_head(self._native))
        held = head - int(lib.dcgmc_ring_oldest_row(self._native))
        return _copy_from(self._native, head, max(held, 0), row, lib.dcgmc_ring_copy, self._empty_rows,
                          _ROW_KINDS, max_rows)

    def first_row_since(self, since_us: int) -> int:
        """The number of the first row ``rows_since(since_us)`` would copy (``rows_written`` when none)."""
        return _first_row_since(self._native, lib.dcgmc_ring_find_since, since_us)

    def _empty_rows(self, n: int) -> RingRows:
        return RingRows(np.empty(n, dtype=np.int64), np.empty((n, self.n_series)),
                        np.empty((n, self.n_series), dtype=np.int8))

    def window(self, window_us: int, now_us: int | None = None) -> WindowStats:
        """Statistics of every series over the rows with ts in [now_us - window_us, now_us].

        ``now_us`` defaults to the current time (µs since the Unix epoch, the
        clock DCGM stamps samples with).  A window that reaches back over
        whole compressed blocks reads their summaries instead of their rows.
        """
        window_us = _int(window_us, "window_us", 0, _INT64_MAX)
        now_us = time.time_ns() // 1000 if now_us is None else _int(now_us, "now_us", 0, _INT64_MAX)
        since = now_us - window_us
        if self.capacity <= 2 * BLOCK_ROWS:
            return WindowStats.from_rows(self.series, _until(self.rows_since(since), now_us), since, now_us)
        first = self.first_row_since(since)   # one scan back, for the blocks and the rows alike
        stats = self._window_over_blocks(first, since, now_us)
        if stats is not None:
            return stats
        rows, _ = self.rows_from(first)
        return WindowStats.from_rows(self.series, _until(rows, now_us), since, now_us)

    def _window_over_blocks(self, first: int, since: int, now_us: int) -> WindowStats | None:
        """The window from the summaries of the whole blocks in it and the rows around them; None when it
        spans no whole block, or its oldest block went while read, or a block has rows after now_us, or a
        series' newest cell is in a block (the plain read answers those)."""
        head = self.rows_written
        arrays_from = max(0, head - 2 * BLOCK_ROWS)
        first_block, end_block = -(-first // BLOCK_ROWS), arrays_from // BLOCK_ROWS
        n_blocks, n = end_block - first_block, self.n_series
        if n_blocks < 1:
            return None
        low, high, total = (np.empty((n_blocks, n)) for _ in range(3))
        count = np.empty((n_blocks, n), dtype=np.int64)
        min_ts, max_ts = np.empty(n_blocks, dtype=np.int64), np.empty(n_blocks, dtype=np.int64)
        torn = lib.dcgmc_ring_summaries(self._native, first_block, end_block, *(
            _pointer(kind, a) for kind, a in (("double[]", low), ("double[]", high), ("double[]", total),
                                              ("int64_t[]", count), ("int64_t[]", min_ts), ("int64_t[]", max_ts))))
        if torn != 0 or max_ts.max() > now_us:
            return None
        before, at = self.rows_from(first, max_rows=first_block * BLOCK_ROWS - first)
        after, at_after = self.rows_from(end_block * BLOCK_ROWS)
        if at != first or at_after != end_block * BLOCK_ROWS:
            return None
        rows = _until(RingRows(*(np.concatenate(pair) for pair in zip(before, after, strict=True))), now_us)
        count_r, low_r, high_r, total_r = _reduce(rows, n)
        stats = WindowStats._of(self.series, rows, since, now_us, count_r + count.sum(axis=0),
                                np.fmin(low_r, np.fmin.reduce(low, axis=0)),
                                np.fmax(high_r, np.fmax.reduce(high, axis=0)),
                                total_r + np.add.reduce(total, axis=0), len(rows.ts) + n_blocks * BLOCK_ROWS)
        if np.any(stats.last_status == SAMPLE_ABSENT):
            return None
        return stats

    def __repr__(self) -> str:
        return f"RingBuffer({self.n_series} series x {self.capacity} rows, {self.rows_written} written)"


_ROW_KINDS = ("int64_t[]", "double[]", "int8_t[]")


def _until(rows: RingRows, now_us: int) -> RingRows:
    """The rows stamped at or before now_us."""
    newer = rows.ts > now_us
    if newer.any():
        keep = ~newer
        return RingRows(rows.ts[keep], rows.values[keep], rows.status[keep])
    return rows
_EVENT_KINDS = ("int64_t[]", "int32_t[]", "uint32_t[]", "uint16_t[]", "int64_t[]")


def _check_write(rc: int) -> None:
    if rc == _ST_IN_USE:
        raise RuntimeError("another thread is writing this ring; a ring has one writer")
    if rc != _ST_OK:
        raise ValueError(f"ring write refused (DCGM status {rc})")


class EventRows(NamedTuple):
    """Events copied out of an EventRing, oldest first; one array per column."""

    ts: np.ndarray
    entity_group: np.ndarray
    entity_id: np.ndarray
    field_id: np.ndarray
    value: np.ndarray


def _empty_events(n: int) -> EventRows:
    return EventRows(np.empty(n, np.int64), np.empty(n, np.int32), np.empty(n, np.uint32), np.empty(n, np.uint16),
                     np.empty(n, np.int64))


class EventRing:
    """Events (XID, ...) with their own timestamps: (ts, entity group, entity id, field id, int64 value).

    Fixed capacity, the newest entries kept; same one-writer, many-readers
    guarantee as :class:`RingBuffer`.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity: int = _int(capacity, "capacity", 1, 2**40)
        self._ts = np.zeros(self.capacity, dtype=np.int64)
        self._groups = np.zeros(self.capacity, dtype=np.int32)
        self._entities = np.zeros(self.capacity, dtype=np.uint32)
        self._fields = np.zeros(self.capacity, dtype=np.uint16)
        self._values = np.zeros(self.capacity, dtype=np.int64)
        self._control = np.zeros(2, dtype=np.int64)
        native = lib.dcgmc_events_new(
            _pointer("int64_t[]", self._ts), _pointer("int32_t[]", self._groups),
            _pointer("uint32_t[]", self._entities), _pointer("uint16_t[]", self._fields),
            _pointer("int64_t[]", self._values), _pointer("int64_t[]", self._control), self.capacity,
        )
        if native == ffi.NULL:
            raise MemoryError(f"cannot make an event ring of {self.capacity} entries")
        self._native = ffi.gc(native, lib.dcgmc_events_free)
        self.serial: int = next(_SERIALS)   # as a RingBuffer's: no other ring of this process has it

    @property
    def nbytes(self) -> int:
        arrays = (self._ts, self._groups, self._entities, self._fields, self._values, self._control)
        return sum(a.nbytes for a in arrays)

    @property
    def rows_written(self) -> int:
        """Events ever committed."""
        return int(lib.dcgmc_events_head(self._native))

    def append(self, ts_us: Any, entity_group: Any, entity_id: Any, field_id: Any, value: Any) -> None:
        """Commit one event (scalars) or several (equal-length arrays), in the order given."""
        ts = np.ascontiguousarray(np.atleast_1d(ts_us), dtype=np.int64)
        n = len(ts)
        columns = [np.ascontiguousarray(np.broadcast_to(np.asarray(c), (n,)), dtype=t)
                   for c, t in ((entity_group, np.int32), (entity_id, np.uint32), (field_id, np.uint16),
                                (value, np.int64))]
        groups, entities, fields, values = columns
        rc = lib.dcgmc_events_commit(
            self._native, ffi.from_buffer("int64_t[]", ts), ffi.from_buffer("int32_t[]", groups),
            ffi.from_buffer("uint32_t[]", entities), ffi.from_buffer("uint16_t[]", fields),
            ffi.from_buffer("int64_t[]", values), n, ffi.NULL,
        )
        _check_write(rc)

    def since(self, since_us: int, end_row: int | None = None) -> EventRows:
        """A consistent copy of the newest events with ts >= since_us (<= 0: all held), oldest first.

        ``end_row``: none of the events committed from that number on.
        """
        events, _ = _copy_since(self._native, since_us, lib.dcgmc_events_find_since, lib.dcgmc_events_copy,
                                _empty_events, _EVENT_KINDS, None, end_row)
        return events

    def rows_from(self, row: int, max_rows: int | None = None) -> tuple[EventRows, int]:
        """The events numbered from ``row`` on, oldest first, and the number of the first (RingBuffer.rows_from)."""
        return _copy_from(self._native, int(lib.dcgmc_events_head(self._native)), self.capacity, row,
                          lib.dcgmc_events_copy, _empty_events, _EVENT_KINDS, max_rows)

    def first_row_since(self, since_us: int) -> int:
        """The number of the first event ``since(since_us)`` would copy (``rows_written`` when none)."""
        return _first_row_since(self._native, lib.dcgmc_events_find_since, since_us)

    def __repr__(self) -> str:
        return f"EventRing({self.capacity} entries, {self.rows_written} written)"
