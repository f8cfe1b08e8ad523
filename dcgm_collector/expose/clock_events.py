"""DCGM_EXP_CLOCK_EVENTS_COUNT: samples of each clock event reason over the window."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from dcgm_collector.expose.families import Family
from dcgm_collector.expose.labels import EntityLabels
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.rings.ring import SAMPLE_OK, RingBuffer
from dcgm_collector.series.text import Header

__all__ = ["CLOCK_EVENTS", "CLOCK_EVENTS_COUNT", "ClockEventCounter", "ClockEventsFamily"]

CLOCK_EVENTS_COUNT = "DCGM_EXP_CLOCK_EVENTS_COUNT"

# DCGM_CLOCKS_EVENT_REASON_* bits of field 112, with dcgm-exporter's clock_event names.
CLOCK_EVENTS: tuple[tuple[str, int], ...] = (
    ("gpu_idle", 0x1),
    ("clocks_setting", 0x2),
    ("power_cap", 0x4),
    ("hw_slowdown", 0x8),
    ("sync_boost", 0x10),
    ("sw_thermal", 0x20),
    ("hw_thermal", 0x40),
    ("hw_power_brake", 0x80),
    ("display_clocks", 0x100),
)


class ClockEventCounter:
    """Per GPU and clock event: samples of field 112 with that bit set over the window.

    The window is long (5 min by default) and field 112 shares its ring with
    every other value field, so rather than copy the whole window each
    scrape, only rows newer than those already read are copied, and running
    totals are kept: a scrape costs what arrived since the previous one.
    """

    def __init__(self, ring: RingBuffer, columns: list[int], window_ms: int) -> None:
        self.ring = ring
        self.columns = np.asarray(columns, dtype=np.intp)
        self.window_us = window_ms * 1000
        self.masks = np.array([bit for _, bit in CLOCK_EVENTS], dtype=np.int64)
        self._lock = threading.Lock()
        shape = (len(columns), len(CLOCK_EVENTS))
        self._ts = np.empty(0, dtype=np.int64)
        self._hits = np.empty((0, *shape), dtype=bool)   # [row, GPU, clock event]
        self._totals = np.zeros(shape, dtype=np.int64)
        self._until: int | None = None  # newest ts read so far

    def counts(self, now_us: int) -> list[list[int]]:
        """[GPU][clock event] sample counts over [now - window, now]."""
        since = now_us - self.window_us
        with self._lock:
            restart = self._until is None or now_us < self._until or self._until < since
            if restart:
                self._ts = self._ts[:0]
                self._hits = self._hits[:0]
                self._totals[:] = 0
            ts, hits = self._read(since if restart else self._until + 1, now_us)
            old = self._ts < since
            if old.any():
                self._totals -= self._hits[old].sum(axis=0)
                self._ts, self._hits = self._ts[~old], self._hits[~old]
            if len(ts):
                self._totals += hits.sum(axis=0)
                self._ts = np.concatenate((self._ts, ts))
                self._hits = np.concatenate((self._hits, hits))
                self._until = int(ts.max()) if restart else max(self._until, int(ts.max()))
            elif restart:
                self._until = since - 1
            return self._totals.tolist()

    def _read(self, since: int, now_us: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.ring.rows_since(since)
        # rows newer than now are left for a later scrape (a caller may render the past)
        new = (rows.ts <= now_us) & (rows.ts >= since)
        values = rows.values[new][:, self.columns]
        ok = rows.status[new][:, self.columns] == SAMPLE_OK
        bits = np.where(ok, values, 0).astype(np.int64)
        return rows.ts[new], (bits[:, :, None] & self.masks) != 0


class ClockEventsFamily(Family):
    def __init__(self, name: str, header: Header, counter: ClockEventCounter, window_ms: int,
                 gpus: Sequence[EntityLabels]) -> None:
        self.name, self.header, self.counter = name, header, counter
        window = str(window_ms)
        self.prefixes = [[tuple(f"{name}{{{text}}} "
                                for text in g.render({'clock_event': event, 'window_size_in_ms': window}))
                          for event, _ in CLOCK_EVENTS] for g in gpus]

    def lines(self, scrape: Scrape) -> list[str]:
        counts = self.counter.counts(scrape.now_us)
        return [f"{prefix}{n}\n" for prefixes, row in zip(self.prefixes, counts)
                for copies, n in zip(prefixes, row) for prefix in copies]
