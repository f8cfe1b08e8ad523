"""A store for series that come and go (processes, pods): bounded, with a time to live, read lock-free.

A :class:`~dcgm_collector.rings.ring.RingBuffer` has a fixed set of columns,
known when it is made.  A :class:`SeriesStore` holds series that appear and
disappear while it runs, each named by a :class:`StoreKey` (an entity's
field with extra labels such as ``pid`` or ``pod``), within bounds set when
it is made and never exceeded:

* ``max_series``: series live at once.  The store is one RingBuffer whose
  columns are *slots*; a series gets a free slot with its first sample and
  keeps it until it expires.
* ``max_bytes``: every byte the store holds.  The ring, the per-slot state
  and the assignment table are allocated (or allowed for) when the store is
  made; what is left is the budget for the keys' labels, which only the
  series bring.  A store whose fixed part does not fit is refused when made.
* ``max_assignments``: slot assignments remembered at once (see below).

A sample of a series that finds no free slot, no free assignment or no
bytes for its labels is refused and counted in :attr:`SeriesStore.refused`;
memory never grows.

**Time to live.**  A series whose last sample is more than ``ttl_s`` older
than a new row expires when that row is written: its slot is free for the
next new series.  Readers ignore a series whose last sample is older than
the TTL even when no row came to expire it (:meth:`SeriesStore.window`).
Reads of past samples (:meth:`SeriesStore.rows_since`: the history API,
remote write, the flight recorder) still return an expired series' samples
for as long as the ring holds them: they are what happened.

**Attribution.**  Each row carries SAMPLE_ABSENT in the slots with no
sample.  The slot table keeps, per slot, the history of its assignments
(series, ts of the first sample, ts of the last one or "still open") for as
long as the ring holds rows of them.  It is an immutable snapshot that the
writer swaps in *before* it commits a row that needs it (a new series, an
expiry); a reader copies rows through the ring's C code, then takes the
snapshot, and gives each cell to the assignment of its slot whose span
covers the row's ts.  Rows are strictly increasing in ts (the writer refuses
a row not newer than the last, counted in ``late_rows``) and the spans of one
slot never overlap, so at most one assignment covers a cell: a reader never
attributes a sample to the wrong series.  A cell whose assignment was
retired (its rows overwritten after the copy) has none and is left out.

Each row also carries, in one more column, how many samples the store had
stored through it, so a reader that keeps its place (remote write) counts
exactly the samples it never saw.

**Threads.**  One writer (:meth:`SeriesStore.append`; a second writer at the
same time gets RuntimeError), any number of readers, which take no lock.
A reader sees the table that was current when its copy ended, and that
table was published before every row the copy holds was committed.
"""

from __future__ import annotations

import heapq
import math
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from dcgm_collector.rings.ring import (
    SAMPLE_ABSENT,
    SAMPLE_BLANK,
    SAMPLE_NOT_SUPPORTED,
    SAMPLE_OK,
    RingBuffer,
    RingRows,
    SeriesKey,
    WindowStats,
)

__all__ = ["ASSIGNMENT_BYTES", "KEY_ENTRY_BYTES", "SLOT_BYTES", "Labels", "SeriesStore", "StoreKey", "StoreRows",
           "StoreWindow", "store_key"]

Labels = tuple[tuple[str, str], ...]   # a series' extra labels: (name, value) pairs sorted by name

# What the store allows for the state it keeps besides the ring's arrays (CPython objects, so
# allowances rather than exact counts; they are charged against max_bytes all the same).
SLOT_BYTES = 64          # per slot: its key, last ts, record and free-list entries, the ring's C lookup
ASSIGNMENT_BYTES = 256   # per assignment: the writer's record, its heap entry, its row in two tables
KEY_ENTRY_BYTES = 256    # per key on top of its own objects: the dict entries that find it
_INT64_MAX = 2**63 - 1
_OPEN = _INT64_MAX       # an open assignment's last ts in a table: it covers every later row
_CODES = (SAMPLE_OK, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED)


class StoreKey(NamedTuple):
    """One series of a store: a field of one entity, with extra labels (pid, pod, ...) sorted by name."""

    entity_group: int
    entity_id: int
    field_id: int
    labels: Labels = ()


class StoreRows(NamedTuple):
    """Samples copied out of a store, oldest first: ts (n,), values and status (n, len(keys)).

    Column j holds the samples of ``keys[j]``; a cell with no sample of it
    is SAMPLE_ABSENT (NaN).  Only series with at least one sample appear,
    in key order.  ``stored[i]``: samples the store had stored through row i
    (every series', since it was made), so ``stored[-1] - stored[0]`` plus
    row 0's samples is what these rows held when they were written.
    """

    ts: np.ndarray
    values: np.ndarray
    status: np.ndarray
    keys: tuple[StoreKey, ...]
    stored: np.ndarray


@dataclass(frozen=True)
class StoreWindow:
    """Window statistics of the live series of a store: ``stats`` arrays index ``keys``."""

    keys: tuple[StoreKey, ...]
    stats: WindowStats


@dataclass(frozen=True)
class _Table:
    """The slot table as readers see it: one entry per assignment still covering rows of the ring."""

    keys: tuple[StoreKey, ...]
    slot: np.ndarray       # int64: the slot (ring column) of each assignment
    key: np.ndarray        # intp: its series, an index into keys
    first_ts: np.ndarray   # int64: ts of its first sample
    last_ts: np.ndarray    # int64: ts of its last sample, _OPEN while the series holds the slot


_EMPTY_TABLE = _Table((), *(np.zeros(0, dtype=t) for t in (np.int64, np.intp, np.int64, np.int64)))


class _Assignment:
    """The writer's record of one series holding one slot."""

    __slots__ = ("key", "slot", "first_ts", "last_ts", "last_row")

    def __init__(self, key: StoreKey, slot: int, first_ts: int, row: int) -> None:
        self.key, self.slot, self.first_ts = key, slot, first_ts
        self.last_ts: int | None = None   # set when the series expires
        self.last_row = row               # the row number of its newest sample


def _whole(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is out of range [{low}, {high}]")
    return int(value)


def _labels(labels: Any) -> Labels:
    if isinstance(labels, Mapping):
        labels = tuple(sorted(labels.items()))
    if not isinstance(labels, (tuple, list)):
        raise TypeError(f"a series' labels are (name, value) pairs, not {type(labels).__name__}")
    pairs = []
    for pair in labels:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise TypeError(f"a label is a (name, value) pair of strings, not {pair!r}")
        if not pair[0]:
            raise ValueError("a label name is empty")
        pairs.append((pair[0], pair[1]))
    names = [name for name, _ in pairs]
    if names != sorted(set(names)):
        raise ValueError(f"label names must be distinct and sorted, not {names}")
    return tuple(pairs)


def store_key(key: Any) -> StoreKey:
    """A key as the store keeps it: (entity group, entity id, field id[, labels]) checked, labels sorted."""
    if not isinstance(key, tuple) or len(key) not in (3, 4):
        raise TypeError(f"a series is an (entity group, entity id, field id, labels) tuple, not {key!r}")
    return StoreKey(_whole(key[0], "entity group", 0, 2**31 - 1), _whole(key[1], "entity id", 0, 2**32 - 1),
                    _whole(key[2], "field id", 0, 65535), _labels(key[3]) if len(key) == 4 else ())


def _key_bytes(key: StoreKey) -> int:
    """What one key costs: its objects (the key, its label tuple, each pair and string) and its dict entries."""
    size = sys.getsizeof(key) + sys.getsizeof(key.labels) + KEY_ENTRY_BYTES
    for pair in key.labels:
        size += sys.getsizeof(pair) + sum(sys.getsizeof(text) for text in pair)
    return size


class SeriesStore:
    """Series that come and go, in slots of one ring; one writer, many lock-free readers.

    ``max_series`` slots of ``capacity`` rows; a series that has had no
    sample for ``ttl_s`` seconds expires.  ``max_bytes`` bounds everything
    the store holds (:attr:`nbytes`); ``max_assignments`` (default twice the
    slots) bounds the assignments remembered while the ring holds their rows.
    """

    def __init__(self, max_series: int, capacity: int, *, ttl_s: float, max_bytes: int,
                 max_assignments: int | None = None) -> None:
        self.max_series: int = _whole(max_series, "max_series", 1, 2**24)
        self.capacity: int = _whole(capacity, "capacity", 1, 2**40)
        if max_assignments is None:
            max_assignments = 2 * self.max_series
        self.max_assignments: int = _whole(max_assignments, "max_assignments", self.max_series, 2**26)
        if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)) or not math.isfinite(ttl_s) or ttl_s <= 0:
            raise ValueError(f"ttl_s must be a positive number of seconds, not {ttl_s!r}")
        self.ttl_s = float(ttl_s)
        self.ttl_us = max(1, round(self.ttl_s * 1e6))
        self.max_bytes: int = _whole(max_bytes, "max_bytes", 1, 2**62)
        self.fixed_bytes = self.bytes_for(self.max_series, self.capacity, self.max_assignments)
        if self.fixed_bytes > self.max_bytes:
            raise ValueError(f"a store of {self.max_series} series x {self.capacity} rows needs {self.fixed_bytes} "
                             f"bytes before any label, more than max_bytes {self.max_bytes}")
        # the ring's columns are slots, not series: column i is (0, i, 0), a key no DCGM record has;
        # one more column holds each row's count of samples stored through it
        self._ring = RingBuffer([SeriesKey(0, slot, 0) for slot in range(self.max_series + 1)], self.capacity)
        # -- the writer's state (only append touches it)
        self._writing = threading.Lock()
        self._live: dict[StoreKey, int] = {}                       # series holding a slot -> the slot
        self._open: list[_Assignment | None] = [None] * self.max_series
        self._slot_live = np.zeros(self.max_series, dtype=bool)
        self._slot_last = np.zeros(self.max_series, dtype=np.int64)   # ts of each live slot's last sample
        self._free = list(range(self.max_series - 1, -1, -1))      # free slots, the lowest on top
        self._closed: list[tuple[int, int, _Assignment]] = []      # heap by last row: expired, rows still held
        self._closed_seq = 0
        self._key_refs: dict[StoreKey, int] = {}                   # assignments naming each key
        self._label_bytes = 0
        self._rows = 0
        self._stored = 0
        self._newest: int | None = None
        # -- what readers take
        self._table: _Table = _EMPTY_TABLE
        # -- counters (written by the writer, read by anyone)
        self.refused = 0      # samples whose series found no slot, assignment or bytes for its labels
        self.expired = 0      # series that gave their slot back after ttl_s without a sample
        self.late_rows = 0    # rows refused because their ts was not after the newest row's

    @staticmethod
    def bytes_for(max_series: int, capacity: int, max_assignments: int | None = None) -> int:
        """Bytes a store of that shape holds before any label: its ring, slots and assignment table."""
        if max_assignments is None:
            max_assignments = 2 * max_series
        return (RingBuffer.bytes_for(max_series + 1, capacity) + max_series * SLOT_BYTES
                + max_assignments * ASSIGNMENT_BYTES)

    # -- what the store holds
    @property
    def nbytes(self) -> int:
        """Bytes held: the fixed part and the labels of the series remembered; never above max_bytes."""
        return self.fixed_bytes + self._label_bytes

    @property
    def live_series(self) -> int:
        """Series holding a slot (the writer's count: expired series that no row has expired yet included)."""
        return len(self._live)

    @property
    def rows_written(self) -> int:
        return self._ring.rows_written

    @property
    def newest_ts(self) -> int | None:
        """ts of the newest row (µs), or None before the first."""
        return self._ring.newest_ts

    @property
    def samples_stored(self) -> int:
        """Samples stored since the store was made (the writer's count)."""
        return self._stored

    @property
    def torn_rows_dropped(self) -> int:
        """Rows readers copied but dropped because the writer overwrote them meanwhile (diagnostics)."""
        return self._ring.torn_rows_dropped

    # -- writing
    def append(self, ts_us: int, samples: Mapping[Any, float], status: Mapping[Any, int] | None = None) -> int:
        """Commit one row at ts_us: a sample of each series in ``samples``; returns how many were stored.

        Keys are :class:`StoreKey` (or equal tuples).  ``status`` gives a
        SAMPLE_* code (OK, BLANK, NOT_SUPPORTED) per key; by default a NaN
        value is BLANK and any other OK.  A series new to the store takes a
        free slot, or is refused and counted.  A row whose ts is not after
        the newest row's stores nothing (counted in ``late_rows``).  An
        empty ``samples`` writes no row but expires the series whose TTL
        passed at ts_us (a writer with nothing to store calls it as a tick).
        """
        ts = _whole(ts_us, "ts_us", 1, _INT64_MAX)
        if not self._writing.acquire(blocking=False):
            raise RuntimeError("another thread is writing this store; a store has one writer")
        try:
            return self._append(ts, self._checked(samples, status))
        finally:
            self._writing.release()

    def _checked(self, samples: Mapping[Any, float], status: Mapping[Any, int] | None
                 ) -> list[tuple[StoreKey, int | None, float, int]]:
        """(key, its slot or None, value, code) per sample, every one checked before anything changes."""
        if not isinstance(samples, Mapping):
            raise TypeError(f"samples must map series to values, not {type(samples).__name__}")
        checked = []
        for given_key, given in samples.items():
            try:
                slot = self._live.get(given_key)
            except TypeError:   # unhashable labels (a dict): store_key says what is wrong or fixes it
                slot = None
            key = given_key
            if slot is None:
                key = store_key(given_key)
                slot = self._live.get(key)
            value = float(given)
            code = status.get(given_key) if status is not None else None
            if code is None:
                code = SAMPLE_BLANK if math.isnan(value) else SAMPLE_OK
            elif code not in _CODES:
                raise ValueError(f"status of {key} is {code!r}, not one of SAMPLE_OK, SAMPLE_BLANK, "
                                 "SAMPLE_NOT_SUPPORTED")
            checked.append((key, slot, value if code == SAMPLE_OK else math.nan, int(code)))
        return checked

    def _append(self, ts: int, samples: list[tuple[StoreKey, int | None, float, int]]) -> int:
        if self._newest is not None and ts <= self._newest:
            self.late_rows += 1 if samples else 0
            return 0
        changed = self._expire(ts, {key for key, *_ in samples})
        if not samples:   # a tick: series expire, no row is written
            if changed:
                self._publish()
            return 0
        # A row with samples is committed even when every one was refused, so that the rows the
        # ring holds after it are exactly the ones retire counts with.
        row = self._rows
        changed = self._retire(row + 1 - self.capacity) or changed
        values = np.full(self.max_series + 1, np.nan)
        cells = np.full(self.max_series + 1, SAMPLE_ABSENT, dtype=np.int8)
        stored = 0
        for key, slot, value, code in samples:
            if slot is None:
                slot = self._live.get(key)   # two spellings of one new key in one row
            if slot is None:
                slot = self._admit(key, ts, row)
                if slot is None:
                    self.refused += 1
                    continue
                changed = True
            values[slot], cells[slot] = value, code
            self._slot_last[slot] = ts
            assignment = self._open[slot]
            assert assignment is not None
            assignment.last_row = row
            stored += 1
        if changed:
            self._publish()   # before the commit: a reader that copies the row finds its assignment
        values[self.max_series], cells[self.max_series] = self._stored + stored, SAMPLE_OK
        self._ring.append(ts, values, cells)
        self._stored += stored
        self._rows += 1
        self._newest = ts
        return stored

    def _expire(self, ts: int, in_row: set[StoreKey]) -> bool:
        """Give back the slots of series with no sample for ttl_us (those with one in this row keep theirs)."""
        stale = np.flatnonzero(self._slot_live & (self._slot_last < ts - self.ttl_us))
        changed = False
        for slot in stale.tolist():
            assignment = self._open[slot]
            assert assignment is not None
            if assignment.key in in_row:
                continue
            assignment.last_ts = int(self._slot_last[slot])
            self._open[slot] = None
            del self._live[assignment.key]
            self._slot_live[slot] = False
            self._free.append(slot)
            heapq.heappush(self._closed, (assignment.last_row, self._closed_seq, assignment))
            self._closed_seq += 1
            self.expired += 1
            changed = True
        return changed

    def _retire(self, first_held_row: int) -> bool:
        """Forget expired assignments whose every row is before ``first_held_row`` (overwritten)."""
        changed = False
        while self._closed and self._closed[0][0] < first_held_row:
            _, _, assignment = heapq.heappop(self._closed)
            self._release(assignment.key)
            changed = True
        return changed

    def _release(self, key: StoreKey) -> None:
        refs = self._key_refs[key] - 1
        if refs:
            self._key_refs[key] = refs
        else:
            del self._key_refs[key]
            self._label_bytes -= _key_bytes(key)

    def _admit(self, key: StoreKey, ts: int, row: int) -> int | None:
        """A free slot for a new series, or None when a bound refuses it."""
        if not self._free or len(self._live) + len(self._closed) >= self.max_assignments:
            return None
        cost = 0 if key in self._key_refs else _key_bytes(key)
        if self.fixed_bytes + self._label_bytes + cost > self.max_bytes:
            return None
        slot = self._free.pop()
        self._label_bytes += cost
        self._key_refs[key] = self._key_refs.get(key, 0) + 1
        self._live[key] = slot
        self._open[slot] = _Assignment(key, slot, ts, row)
        self._slot_live[slot] = True
        self._slot_last[slot] = ts
        return slot

    def _publish(self) -> None:
        """Swap in a new table of every assignment: the live ones, and the expired ones the ring still holds."""
        assignments = [a for a in self._open if a is not None] + [entry[2] for entry in self._closed]
        ordered = sorted({a.key for a in assignments})   # key order is read order: reads list series sorted
        index = {key: i for i, key in enumerate(ordered)}
        self._table = _Table(
            tuple(ordered), np.array([a.slot for a in assignments], dtype=np.int64),
            np.array([index[a.key] for a in assignments], dtype=np.intp),
            np.array([a.first_ts for a in assignments], dtype=np.int64),
            np.array([_OPEN if a.last_ts is None else a.last_ts for a in assignments], dtype=np.int64))

    # -- reading
    def rows_since(self, since_us: int, max_rows: int | None = None) -> StoreRows:
        """The samples of rows with ts >= since_us (<= 0: every row held), oldest first, by series.

        Expired series are in it while the ring holds their rows.
        ``max_rows``: only the oldest that many rows.
        """
        rows = self._ring.rows_since(since_us, max_rows)
        table = self._table   # taken after the copy: it names the assignment of every row copied
        return _attribute(rows, table)

    def window(self, window_us: int, now_us: int | None = None) -> StoreWindow:
        """Statistics of the live series over the rows with ts in [now_us - window_us, now_us].

        A series is live while its last sample is at most ttl_s before
        ``now_us`` (the current time by default), whether or not a row came
        to expire it.
        """
        window_us = _whole(window_us, "window_us", 0, _INT64_MAX)
        now_us = time.time_ns() // 1000 if now_us is None else _whole(now_us, "now_us", 0, _INT64_MAX)
        since = now_us - window_us
        rows = self.rows_since(since)
        keep = rows.ts <= now_us
        if not keep.all():
            rows = StoreRows(rows.ts[keep], rows.values[keep], rows.status[keep], rows.keys, rows.stored[keep])
        series = tuple(SeriesKey(k.entity_group, k.entity_id, k.field_id) for k in rows.keys)
        stats = WindowStats.from_rows(series, RingRows(rows.ts, rows.values, rows.status), since, now_us)
        live = (stats.last_status != SAMPLE_ABSENT) & (stats.last_ts >= now_us - self.ttl_us)
        if live.all():
            return StoreWindow(rows.keys, stats)
        chosen = np.flatnonzero(live)
        arrays = {name: getattr(stats, name)[chosen]
                  for name in ("last", "last_ts", "last_status", "min", "max", "avg", "count")}
        stats = replace(stats, series=tuple(series[i] for i in chosen.tolist()), **arrays)
        return StoreWindow(tuple(rows.keys[i] for i in chosen.tolist()), stats)

    def __repr__(self) -> str:
        return (f"SeriesStore({self.live_series}/{self.max_series} series x {self.capacity} rows, "
                f"{self.rows_written} written, {self.refused} refused)")


def _attribute(rows: RingRows, table: _Table) -> StoreRows:
    """Each copied cell given to the assignment of its slot whose span covers its row's ts."""
    n = len(rows.ts)
    stored = rows.values[:, -1].astype(np.int64)
    if n == 0 or len(table.slot) == 0:
        return StoreRows(rows.ts, np.empty((n, 0)), np.empty((n, 0), dtype=np.int8), (), stored)
    # rows are strictly increasing in ts, so each assignment covers one run of them
    start = np.searchsorted(rows.ts, table.first_ts, side="left")
    end = np.searchsorted(rows.ts, table.last_ts, side="right")
    covering = np.flatnonzero(end > start)
    series, column = np.unique(table.key[covering], return_inverse=True)
    values = np.full((n, len(series)), np.nan)
    status = np.full((n, len(series)), SAMPLE_ABSENT, dtype=np.int8)
    for j, c in zip(covering.tolist(), column.tolist()):
        a, b, slot = int(start[j]), int(end[j]), int(table.slot[j])
        values[a:b, c] = rows.values[a:b, slot]
        status[a:b, c] = rows.status[a:b, slot]
    present = (status != SAMPLE_ABSENT).any(axis=0)
    if not present.all():
        values, status, series = values[:, present], status[:, present], series[present]
    return StoreRows(rows.ts, values, status, tuple(table.keys[i] for i in series.tolist()), stored)
