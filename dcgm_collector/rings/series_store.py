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
from dataclasses import dataclass, field, replace
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
    """Rows copied out of a store, oldest first, and their samples, one entry each.

    ``ts`` (n,): each row's ts.  Sample i is of series ``keys[series[i]]``
    in row ``row[i]``, with ``values[i]`` (NaN unless OK) and ``status[i]``;
    samples are in row order (so in time order), a row's in slot order.
    ``keys`` holds the series with at least one sample, in key order.
    ``stored[r]``: samples the store had stored through row r (every
    series', since it was made): a reader that keeps its place compares it
    with what it was given to count what it never saw.
    """

    ts: np.ndarray
    row: np.ndarray
    series: np.ndarray
    values: np.ndarray
    status: np.ndarray
    keys: tuple[StoreKey, ...]
    stored: np.ndarray

    def only(self, keep: np.ndarray) -> StoreRows:
        """These rows with only the samples ``keep`` (a mask over samples) selects; keys stay as they are."""
        return StoreRows(self.ts, self.row[keep], self.series[keep], self.values[keep], self.status[keep],
                         self.keys, self.stored)


@dataclass(frozen=True)
class StoreWindow:
    """Window statistics of the live series of a store: ``stats`` arrays index ``keys``."""

    keys: tuple[StoreKey, ...]
    stats: WindowStats


@dataclass(frozen=True)
class _Table:
    """The slot table as readers see it: one entry per assignment still covering rows of the ring."""

    keys: tuple[StoreKey | None, ...]   # by key id (None: an id free when the table was made)
    slot: np.ndarray       # int64: the slot (ring column) of each assignment
    key: np.ndarray        # intp: its series, a key id
    first_ts: np.ndarray   # int64: ts of its first sample
    last_ts: np.ndarray    # int64: ts of its last sample, _OPEN while the series holds the slot
    _rank: list = field(default_factory=list, repr=False)   # each key id's place in key order, once asked

    def rank(self) -> np.ndarray:
        """Each key id's place in key order (reads list series sorted); worked out once per table."""
        if not self._rank:   # readers racing here work out the same array
            ids = [i for i, key in enumerate(self.keys) if key is not None]
            ids.sort(key=self.keys.__getitem__)
            rank = np.zeros(len(self.keys), dtype=np.intp)
            rank[ids] = np.arange(len(ids))
            self._rank.append(rank)
        return self._rank[0]


_EMPTY_TABLE = _Table((), *(np.zeros(0, dtype=t) for t in (np.int64, np.intp, np.int64, np.int64)))


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
        n, m = self.max_series, self.max_assignments
        self._live: dict[StoreKey, int] = {}                       # series holding a slot -> the slot
        self._slot_assignment = np.full(n, -1, dtype=np.intp)    # each slot's open assignment (-1: free)
        self._slot_last = np.zeros(n, dtype=np.int64)             # ts of each slot's last sample
        self._slot_last_row = np.zeros(n, dtype=np.int64)         # and its row number
        self._free_slots = list(range(n - 1, -1, -1))              # the lowest on top
        # the assignments, as the tables readers take them: open ones and expired ones the ring still holds
        self._slot_of = np.zeros(m, dtype=np.int64)
        self._key_of = np.zeros(m, dtype=np.intp)
        self._first_ts = np.zeros(m, dtype=np.int64)
        self._last_ts = np.full(m, _OPEN, dtype=np.int64)
        self._in_use = np.zeros(m, dtype=bool)
        self._free_assignments = list(range(m - 1, -1, -1))
        self._expired: list[tuple[int, int]] = []                  # heap of (last row, assignment)
        # key ids: at most one per assignment, reused once no assignment names the key
        self._key_id: dict[StoreKey, int] = {}
        self._keys: list[StoreKey | None] = []
        self._key_refs: list[int] = []
        self._free_key_ids: list[int] = []
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
        Every key, value and status is checked before anything changes.
        """
        ts = _whole(ts_us, "ts_us", 1, _INT64_MAX)
        if not isinstance(samples, Mapping):
            raise TypeError(f"samples must map series to values, not {type(samples).__name__}")
        if not self._writing.acquire(blocking=False):
            raise RuntimeError("another thread is writing this store; a store has one writer")
        try:
            return self._append(ts, samples, status)
        finally:
            self._writing.release()

    def _append(self, ts: int, samples: Mapping[Any, float], status: Mapping[Any, int] | None) -> int:
        given = list(samples)
        values = np.fromiter(samples.values(), dtype=np.float64, count=len(given))
        codes = _codes(given, values, status)
        try:
            slots: list[int | None] = list(map(self._live.get, given))
        except TypeError:   # an unhashable key: store_key says what is wrong with it
            slots = [None] * len(given)
        new: dict[int, StoreKey] = {}   # index in the row -> the checked key, for keys holding no slot
        if None in slots:
            for i, slot in enumerate(slots):
                if slot is None:
                    key = new[i] = store_key(given[i])
                    slots[i] = self._live.get(key)
        # -- checked: from here on the store changes
        if self._newest is not None and ts <= self._newest:
            self.late_rows += 1 if given else 0
            return 0
        changed = self._expire(ts, samples, set(new.values()))
        if not given:   # a tick: series expire, no row is written
            if changed:
                self._publish()
            return 0
        # A row with samples is committed even when every one was refused, so that the rows the
        # ring holds after it are exactly the ones retire counts with.
        row = self._rows
        changed = self._retire(row + 1 - self.capacity) or changed
        if None in slots:
            for i, key in new.items():
                slot = slots[i] if slots[i] is not None else self._live.get(key)   # two spellings, one row
                if slot is None:
                    slot = self._admit(key, ts, row)
                    changed = changed or slot >= 0
                slots[i] = slot
        where = np.array(slots, dtype=np.intp)
        refused = where < 0
        if refused.any():
            self.refused += int(refused.sum())
            where, values, codes = where[~refused], values[~refused], codes[~refused]
        stored = len(where)
        row_values = np.full(self.max_series + 1, np.nan)
        row_cells = np.full(self.max_series + 1, SAMPLE_ABSENT, dtype=np.int8)
        row_values[where] = np.where(codes == SAMPLE_OK, values, np.nan)
        row_cells[where] = codes
        row_values[self.max_series], row_cells[self.max_series] = self._stored + stored, SAMPLE_OK
        self._slot_last[where] = ts
        self._slot_last_row[where] = row
        if changed:
            self._publish()   # before the commit: a reader that copies the row finds its assignment
        self._ring.append(ts, row_values, row_cells)
        self._stored += stored
        self._rows += 1
        self._newest = ts
        return stored

    def _expire(self, ts: int, samples: Mapping[Any, float], new: set[StoreKey]) -> bool:
        """Give back the slots of series with no sample for ttl_us (those with one in this row keep theirs)."""
        stale = np.flatnonzero((self._slot_assignment >= 0) & (self._slot_last < ts - self.ttl_us))
        changed = False
        for slot in stale.tolist():
            assignment = int(self._slot_assignment[slot])
            key = self._keys[self._key_of[assignment]]
            assert key is not None
            if key in samples or key in new:
                continue
            self._last_ts[assignment] = self._slot_last[slot]
            heapq.heappush(self._expired, (int(self._slot_last_row[slot]), assignment))
            self._slot_assignment[slot] = -1
            del self._live[key]
            self._free_slots.append(slot)
            self.expired += 1
            changed = True
        return changed

    def _retire(self, first_held_row: int) -> bool:
        """Forget expired assignments whose every row is before ``first_held_row`` (overwritten)."""
        changed = False
        while self._expired and self._expired[0][0] < first_held_row:
            _, assignment = heapq.heappop(self._expired)
            self._in_use[assignment] = False
            self._free_assignments.append(assignment)
            self._release(int(self._key_of[assignment]))
            changed = True
        return changed

    def _release(self, key_id: int) -> None:
        self._key_refs[key_id] -= 1
        if not self._key_refs[key_id]:
            key = self._keys[key_id]
            assert key is not None
            self._keys[key_id] = None
            del self._key_id[key]
            self._free_key_ids.append(key_id)
            self._label_bytes -= _key_bytes(key)

    def _admit(self, key: StoreKey, ts: int, row: int) -> int:
        """A free slot for a new series, or -1 when a bound refuses it."""
        if not self._free_slots or not self._free_assignments:
            return -1
        key_id = self._key_id.get(key)
        if key_id is None:
            cost = _key_bytes(key)
            if self.fixed_bytes + self._label_bytes + cost > self.max_bytes:
                return -1
            self._label_bytes += cost
            if self._free_key_ids:
                key_id = self._free_key_ids.pop()
                self._keys[key_id], self._key_refs[key_id] = key, 0
            else:
                key_id = len(self._keys)
                self._keys.append(key)
                self._key_refs.append(0)
            self._key_id[key] = key_id
        self._key_refs[key_id] += 1
        slot, assignment = self._free_slots.pop(), self._free_assignments.pop()
        self._slot_of[assignment], self._key_of[assignment] = slot, key_id
        self._first_ts[assignment], self._last_ts[assignment] = ts, _OPEN
        self._in_use[assignment] = True
        self._slot_assignment[slot] = assignment
        self._live[key] = slot
        self._slot_last[slot], self._slot_last_row[slot] = ts, row
        return slot

    def _publish(self) -> None:
        """Swap in a new table of every assignment: the live ones, and the expired ones the ring still holds."""
        used = self._in_use
        self._table = _Table(tuple(self._keys), self._slot_of[used], self._key_of[used], self._first_ts[used],
                             self._last_ts[used])

    # -- reading
    @property
    def serial(self) -> int:
        """Its ring's serial: names the store in a reader's saved place, as RingBuffer.serial does a ring."""
        return self._ring.serial

    def rows_since(self, since_us: int, max_rows: int | None = None, end_row: int | None = None) -> StoreRows:
        """The samples of rows with ts >= since_us (<= 0: every row held), oldest first, by series.

        Expired series are in it while the ring holds their rows.
        ``max_rows``: only the oldest that many rows; ``end_row``: none of
        the rows numbered from it on (RingBuffer.rows_since).
        """
        rows = self._ring.rows_since(since_us, max_rows, end_row)
        table = self._table   # taken after the copy: it names the assignment of every row copied
        return _attribute(rows, table)

    def rows_from(self, row: int, max_rows: int | None = None) -> tuple[StoreRows, int]:
        """The samples of the rows numbered from ``row`` on, and the number of the first row (RingBuffer.rows_from)."""
        rows, first = self._ring.rows_from(row, max_rows)
        table = self._table
        return _attribute(rows, table), first

    def first_row_since(self, since_us: int) -> int:
        """The number of the first row ``rows_since(since_us)`` would copy (``rows_written`` when none)."""
        return self._ring.first_row_since(since_us)

    def window(self, window_us: int, now_us: int | None = None) -> StoreWindow:
        """Statistics of the live series over the rows with ts in [now_us - window_us, now_us].

        A series is live while its last sample is at most ttl_s before
        ``now_us`` (the current time by default), whether or not a row came
        to expire it.  The statistics are WindowStats': min, max, avg and
        count over OK samples, and the newest sample whatever its status.
        """
        window_us = _whole(window_us, "window_us", 0, _INT64_MAX)
        now_us = time.time_ns() // 1000 if now_us is None else _whole(now_us, "now_us", 0, _INT64_MAX)
        since = now_us - window_us
        rows = self.rows_since(since)
        inside = int(np.searchsorted(rows.ts, now_us, side="right"))   # rows ascend: later ones are after now
        if inside < len(rows.ts):
            rows = rows.only(rows.row < inside)
        stats = _window_stats(rows, inside, since, now_us)
        live = np.flatnonzero((stats.last_status != SAMPLE_ABSENT) & (stats.last_ts >= now_us - self.ttl_us))
        keys = tuple(rows.keys[i] for i in live.tolist())
        if len(live) < len(rows.keys):
            arrays = {name: getattr(stats, name)[live]
                      for name in ("last", "last_ts", "last_status", "min", "max", "avg", "count")}
            stats = replace(stats, series=tuple(stats.series[i] for i in live.tolist()), **arrays)
        return StoreWindow(keys, stats)

    def __repr__(self) -> str:
        return (f"SeriesStore({self.live_series}/{self.max_series} series x {self.capacity} rows, "
                f"{self.rows_written} written, {self.refused} refused)")


def _codes(given: list, values: np.ndarray, status: Mapping[Any, int] | None) -> np.ndarray:
    """The SAMPLE_* code of each sample: ``status``'s where it gives one, else BLANK for NaN and OK."""
    codes = np.where(np.isnan(values), SAMPLE_BLANK, SAMPLE_OK).astype(np.int8)
    if status:
        for i, key in enumerate(given):
            code = status.get(key)
            if code is not None:
                if isinstance(code, bool) or code not in _CODES:
                    raise ValueError(f"status of {key} is {code!r}, not one of SAMPLE_OK, SAMPLE_BLANK, "
                                     "SAMPLE_NOT_SUPPORTED")
                codes[i] = code
    return codes


def _attribute(rows: RingRows, table: _Table) -> StoreRows:
    """Each copied sample given to the assignment of its slot whose span covers its row's ts.

    Rows are strictly increasing in ts, so an assignment covers one run of
    rows [start, end) of its slot.  A sample no assignment covers (its
    assignment was retired after the copy) is left out.
    """
    n, slots = len(rows.ts), rows.status.shape[1] - 1
    stored = rows.values[:, slots].astype(np.int64)
    cells = rows.status[:, :slots]
    present = cells != SAMPLE_ABSENT
    at_row, at_slot = np.nonzero(present)   # row by row: time order
    start = np.searchsorted(rows.ts, table.first_ts, side="left")
    end = np.searchsorted(rows.ts, table.last_ts, side="right")
    covering = np.flatnonzero(end > start)
    if len(at_row) == 0 or len(covering) == 0:
        empty = np.zeros(0, dtype=np.intp)
        return StoreRows(rows.ts, empty, empty, np.zeros(0), np.zeros(0, dtype=np.int8), (), stored)
    slot_of, start, end = table.slot[covering], start[covering], end[covering]
    # the series of the covering assignments, numbered in key order
    key_ids = table.key[covering]
    ids = np.unique(key_ids)
    ids = ids[np.argsort(table.rank()[ids])]
    number = np.zeros(len(table.keys), dtype=np.intp)
    number[ids] = np.arange(len(ids))
    series_of = number[key_ids]
    # a slot that one assignment holds through every row: its samples are that series'
    whole = (np.bincount(slot_of, minlength=slots)[slot_of] == 1) & (start == 0) & (end == n)
    series_of_slot = np.full(slots, -1, dtype=np.intp)
    series_of_slot[slot_of[whole]] = series_of[whole]
    series = series_of_slot[at_slot]
    rest = np.flatnonzero(series < 0)
    if len(rest):   # slots passed from one series to another, or held for part of these rows
        width = n + 1   # runs as [slot * width + start, slot * width + end): disjoint, sortable
        low, high = slot_of * width + start, slot_of * width + end
        by_low = np.argsort(low)
        cell = at_slot[rest].astype(np.int64) * width + at_row[rest]
        at = np.maximum(np.searchsorted(low[by_low], cell, side="right") - 1, 0)
        inside = (low[by_low][at] <= cell) & (cell < high[by_low][at])
        series[rest] = np.where(inside, series_of[by_low[at]], -1)
    values, status = rows.values[:, :slots][present], cells[present]
    if len(rest) and (series < 0).any():   # cells of assignments retired after the copy
        keep = series >= 0
        at_row, series, values, status = at_row[keep], series[keep], values[keep], status[keep]
    has = np.bincount(series, minlength=len(ids)) > 0
    if not has.all():   # series whose run holds no sample of theirs
        series = (np.cumsum(has) - 1)[series]
        ids = ids[has]
    return StoreRows(rows.ts, at_row, series, values, status, tuple(table.keys[i] for i in ids.tolist()), stored)


def _window_stats(rows: StoreRows, n_rows: int, since_us: int, until_us: int) -> WindowStats:
    """WindowStats of every series of ``rows`` (index = series number), from its samples."""
    k = len(rows.keys)
    ok = rows.status == SAMPLE_OK
    series, values = rows.series[ok], rows.values[ok]
    count = np.bincount(series, minlength=k).astype(np.int64)
    total = np.bincount(series, weights=values, minlength=k)
    low, high = np.full(k, np.inf), np.full(k, -np.inf)
    np.minimum.at(low, series, values)
    np.maximum.at(high, series, values)
    none = count == 0
    low[none], high[none] = np.nan, np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = total / count
    # the newest sample of each series: its last entry (samples are in time order)
    last_at = np.full(k, -1, dtype=np.intp)
    np.maximum.at(last_at, rows.series, np.arange(len(rows.series), dtype=np.intp))
    has = last_at >= 0
    last, last_ts = np.full(k, np.nan), np.zeros(k, dtype=np.int64)
    last_status = np.full(k, SAMPLE_ABSENT, dtype=np.int8)
    at = last_at[has]
    last[has], last_ts[has], last_status[has] = rows.values[at], rows.ts[rows.row[at]], rows.status[at]
    series_keys = tuple(SeriesKey(key.entity_group, key.entity_id, key.field_id) for key in rows.keys)
    return WindowStats(series_keys, n_rows, since_us, until_us, last, last_ts, last_status, low, high, avg, count)
