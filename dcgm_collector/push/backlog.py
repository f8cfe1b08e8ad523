"""What the rings hold that a remote-write receiver has not been given yet.

The rings are the queue: a sender keeps, per series, the time (ms) of the
last sample it took, and reads what is newer straight from the rings.  While
a receiver is down nothing piles up in memory; once it is back the sender
reads on from where it stopped, so every sample still in a ring reaches it,
and only rows a ring overwrote meanwhile are lost (and counted).

Series are keyed by (target, metric name, labels), not by ring: a reload or a
reconnect makes new rings, new samplers and a new sample model, and the
series that keep their name and labels keep their place, so nothing is sent
twice (a receiver refuses a second sample at a time it already holds).

A store of series that come and go keeps one place for all its series (its
rows are in time order, each series' samples in them): the ts of the last
row taken, so no cursor per series piles up as series come and go.  Each
row says how many samples the store had stored through it, so what the
store overwrote before it was read is counted exactly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dcgm_collector.push.wire import SeriesSamples, encode_labels
from dcgm_collector.rings.ring import SAMPLE_OK, RingBuffer
from dcgm_collector.rings.series_store import SeriesStore
from dcgm_collector.series.samples import Labels, SampleModel, StoreSeries
from dcgm_collector.series.text import label_text

__all__ = ["Backlog", "SeriesKey"]

SeriesKey = tuple[str, str, Labels]   # (target, metric name, labels)


@dataclass
class _RingPlace:
    ring: RingBuffer
    next_row: int        # the ring's row number (rows_written counting) after the last row read


@dataclass
class _StorePlace:
    store: SeriesStore
    cursor_us: int = 0            # ts of the last row taken (0: none yet)
    last_ms: int = -1             # its millisecond: a later row's samples in it would be refused
    through: int | None = None    # samples the store had stored through the last row taken


@dataclass
class Backlog:
    """Reads the samples not yet taken from the rings and events of the sample models.

    ``extra`` labels go on every series (unless it has a label of that name);
    a series gone from the models is forgotten once its last sample is
    ``forget_after_s`` old.
    """

    extra: Labels = ()
    forget_after_s: float = 3600.0
    lost: int = 0                       # samples rings overwrote before they were read
    more: bool = False                  # the last read left rows in a ring for want of budget
    _taken: dict[SeriesKey, int] = field(default_factory=dict)      # last sample time taken, ms
    _labels: dict[SeriesKey, bytes] = field(default_factory=dict)   # each series' encoded labels
    _events_taken: dict[str, int] = field(default_factory=dict)     # per target, last event time taken, ms
    _newest: dict[str, int] = field(default_factory=dict)           # per target, the newest sample time taken
    _places: dict[int, _RingPlace] = field(default_factory=dict)
    _store_places: dict[int, _StorePlace] = field(default_factory=dict)
    _store_labels: dict[SeriesKey, bytes] = field(default_factory=dict)   # store series' encoded labels, last read

    def read(self, models: Sequence[SampleModel], budget: int) -> list[SeriesSamples]:
        """Every series' new samples, oldest first, at most about ``budget`` samples in all.

        A ring's rows are taken whole, oldest first, until the budget is used
        (at least one row a ring): what is left stays in the rings for the next read.
        """
        out: list[SeriesSamples] = []
        left = budget
        self.more = False
        present: set[SeriesKey] = set()
        places: dict[int, _RingPlace] = {}
        store_places: dict[int, _StorePlace] = {}
        store_labels: dict[SeriesKey, bytes] = {}
        for model in models:
            # A series new to a target the sender already reads (new pod labels, a field a reload
            # added) starts at the target's newest sample: what its ring held before it was
            # served is history under other labels, or none.  A new target starts at its rings' start.
            floor = self._newest.get(model.target, 0)
            for ring_series in model.rings:
                keys = [(model.target, s.name, s.labels) for s in ring_series.series]
                present.update(keys)
                taken, newest = self._read_ring(ring_series.ring, ring_series.series, keys, floor, left, out, places)
                left = max(0, left - taken)
                self._newest[model.target] = max(self._newest.get(model.target, 0), newest)
            for store in model.stores:
                left = max(0, left - self._read_store(model.target, store, left, out, store_places, store_labels))
            self._read_events(model, out, present)
        self._places = places   # rings no model names any more are let go
        self._store_places, self._store_labels = store_places, store_labels   # and stores, and their gone series
        self._forget(present)
        return out

    def _read_ring(self, ring: RingBuffer, series: Sequence, keys: list[SeriesKey], floor: int, budget: int,
                   out: list[SeriesSamples], places: dict[int, _RingPlace]) -> tuple[int, int]:
        """Append the ring's new samples to ``out``: (how many, the time of its newest row read, 0 if none)."""
        cursors = np.array([self._taken.get(key, floor) for key in keys], dtype=np.int64)
        # The rows copied are the newest when the copy ran, numbered up to rows_written then: a row
        # written during the copy makes the count before it too low and the one after it too high.
        # Losses are judged with the low one and the next row expected with the high one, so that
        # a race can hide a loss but never invent one.
        written_before = ring.rows_written
        rows = ring.rows_since(int(cursors.min()) * 1000 + 1000)   # rows of a later millisecond
        written_after = ring.rows_written
        copied = len(rows.ts)
        place = self._places.get(id(ring))
        if place is not None and place.ring is ring and written_before - copied > place.next_row:
            self.lost += (written_before - copied - place.next_row) * len(series)
        n = min(copied, max(1, budget // max(1, len(series))))
        self.more = self.more or n < copied
        next_row = written_after - copied + n
        places[id(ring)] = _RingPlace(ring, next_row if place is None or place.ring is not ring
                                      else max(place.next_row, next_row))
        if n == 0:
            return 0, 0
        ts_ms = rows.ts[:n] // 1000
        columns = np.array([s.column for s in series], dtype=np.intp)
        # series by row (k x n), so that one boolean index gives every series' samples back to back
        take = (rows.status[:n][:, columns] == SAMPLE_OK).T & (ts_ms[None, :] > cursors[:, None])
        counts = take.sum(axis=1)
        times = np.broadcast_to(ts_ms, take.shape)[take]
        values = rows.values[:n][:, columns].T[take]
        ordered = n < 2 or bool(np.all(ts_ms[1:] > ts_ms[:-1]))   # else a series may need _increasing
        taken, at = 0, 0
        last = int(ts_ms[-1])
        for j, key in enumerate(keys):
            count = int(counts[j])
            if count:
                t, v = times[at:at + count], values[at:at + count]
                if not ordered:
                    t, v = _increasing(t, v, int(cursors[j]))
                at += count
                out.append(SeriesSamples(self._encoded(key), t, v))
                taken += len(t)
            self._taken[key] = max(int(cursors[j]), last)
        return taken, last

    def _read_store(self, target: str, store: StoreSeries, budget: int, out: list[SeriesSamples],
                    places: dict[int, _StorePlace], labels: dict[SeriesKey, bytes]) -> int:
        """Append the store's samples after its place to ``out``: how many.

        Rows are taken whole, oldest first, while their samples fit the budget (at least one row).
        """
        place = places.get(id(store.store)) or self._store_places.get(id(store.store))
        if place is None or place.store is not store.store:
            place = _StorePlace(store.store)
        places[id(store.store)] = place
        rows, series = store.read(place.cursor_us + 1 if place.cursor_us else 0)
        copied = len(rows.ts)
        if copied == 0:
            return 0
        per_row = np.bincount(rows.row, minlength=copied)
        n = min(copied, max(1, int(np.searchsorted(np.cumsum(per_row), budget, side="right"))))
        self.more = self.more or n < copied
        if place.through is not None:   # what the rows between the last taken and these held, less what came
            self.lost += max(0, int(rows.stored[n - 1]) - place.through - int(per_row[:n].sum()))
        after_ms = place.last_ms
        place.cursor_us, place.through = int(rows.ts[n - 1]), int(rows.stored[n - 1])
        place.last_ms = int(rows.ts[n - 1]) // 1000
        ok = (rows.row < n) & (rows.status == SAMPLE_OK)
        numbers = rows.series[ok]
        order = np.argsort(numbers, kind="stable")   # series by series, each in time order
        numbers, ts_ms, values = numbers[order], (rows.ts[rows.row[ok]] // 1000)[order], rows.values[ok][order]
        taken = 0
        for info in series:
            a, b = np.searchsorted(numbers, info.column, side="left"), np.searchsorted(numbers, info.column, "right")
            if a == b:
                continue
            t, v = _increasing(ts_ms[a:b], values[a:b], after_ms)
            if len(t):
                key = (target, info.name, info.labels)
                encoded = labels.get(key) or self._store_labels.get(key) or encode_labels(key[1], key[2], self.extra)
                labels[key] = encoded
                out.append(SeriesSamples(encoded, t, v))
                taken += len(t)
        return taken

    def _read_events(self, model: SampleModel, out: list[SeriesSamples], present: set[SeriesKey]) -> None:
        """XID and the other event fields: each event is a sample of its series at its own time."""
        if not model.event_series:
            return
        since = self._events_taken.get(model.target, 0)
        events = model.events_since(since * 1000 + 1000)
        if len(events.ts) == 0:
            return
        by_field = {e.field_id: e for e in model.event_series}
        found: dict[SeriesKey, tuple[list[int], list[float]]] = {}
        for t, group, entity, field_id, value in zip((events.ts // 1000).tolist(), events.entity_group.tolist(),
                                                     events.entity_id.tolist(), events.field_id.tolist(),
                                                     events.value.tolist()):
            series = by_field.get(field_id)
            if series is None:
                continue
            for labels in series.labels((group, entity), value):
                key = (model.target, series.name, labels)
                times, values = found.setdefault(key, ([], []))
                times.append(t)
                values.append(float(value))
        for key, (times, values) in found.items():
            present.add(key)
            cursor = self._taken.get(key, 0)
            t, v = _increasing(np.array(times, dtype=np.int64), np.array(values), cursor)
            if len(t):
                out.append(SeriesSamples(self._encoded(key), t, v))
                self._taken[key] = int(t[-1])
        self._events_taken[model.target] = int(events.ts.max()) // 1000

    def _encoded(self, key: SeriesKey) -> bytes:
        labels = self._labels.get(key)
        if labels is None:
            labels = self._labels[key] = encode_labels(key[1], key[2], self.extra)
        return labels

    def describe(self, encoded: bytes) -> str:
        """``name{labels}`` of a series read here, by its encoded labels, as a log line names it."""
        known = (*self._labels.items(), *self._store_labels.items())
        key = next((k for k, labels in known if labels == encoded), None)   # rare: a log line
        if key is None:
            return "?"
        pairs = dict(self.extra)
        pairs.update(key[2])
        return f"{key[1]}{{{label_text(sorted(pairs.items()))}}}"

    def _forget(self, present: set[SeriesKey]) -> None:
        """Drop the cursors of series no model has, once their last sample is too old to come back."""
        if len(self._taken) == len(present):
            return
        oldest = int(time.time() * 1000 - self.forget_after_s * 1000)
        for key in [k for k, t in self._taken.items() if k not in present and t < oldest]:
            del self._taken[key]
            self._labels.pop(key, None)


def _increasing(ts_ms: np.ndarray, values: np.ndarray, after_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """The samples whose time is later than every earlier one (and than ``after_ms``).

    A receiver refuses a series' sample at or before one it holds; two DCGM
    samples in one millisecond, or a back-dated row, would make it refuse the
    whole request.
    """
    if len(ts_ms) == 0:
        return ts_ms, values
    before = np.maximum.accumulate(np.concatenate(([after_ms], ts_ms[:-1])))
    keep = ts_ms > before
    if keep.all():
        return ts_ms, values
    return ts_ms[keep], values[keep]
