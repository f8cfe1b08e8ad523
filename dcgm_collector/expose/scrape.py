"""One scrape: each ring's and store's window statistics read once, and the event ring copied once."""

from __future__ import annotations

from collections.abc import Callable

from dcgm_collector.rings.ring import SAMPLE_OK, EventRows, RingBuffer
from dcgm_collector.rings.series_store import SeriesStore, StoreKey, StoreWindow

__all__ = ["RingView", "Scrape", "StoreView", "StoreWindowLists"]


class RingView:
    """One ring's window statistics as Python lists, read once per scrape."""

    def __init__(self, ring: RingBuffer, now_us: int, window_us: int, lookback_us: int) -> None:
        self._ring, self._now_us, self._window_us = ring, now_us, window_us
        stats = ring.window(lookback_us, now_us)
        self.ok: list[bool] = (stats.last_status == SAMPLE_OK).tolist()
        self.last: list[float] = stats.last.tolist()
        self._window_stats = stats if lookback_us == window_us else None
        self._aggregates: tuple[list[int], dict[str, list[float]]] | None = None

    def aggregates(self) -> tuple[list[int], dict[str, list[float]]]:
        """(OK sample count, {min, max, avg}) per series over the window."""
        if self._aggregates is None:
            stats = self._window_stats or self._ring.window(self._window_us, self._now_us)
            self._aggregates = (stats.count.tolist(),
                                {"min": stats.min.tolist(), "max": stats.max.tolist(), "avg": stats.avg.tolist()})
        return self._aggregates


class StoreWindowLists:
    """A store's live series over one window as Python lists, with each field's series found by field id."""

    def __init__(self, window: StoreWindow) -> None:
        stats = window.stats
        self.keys: tuple[StoreKey, ...] = window.keys
        self.ok: list[bool] = (stats.last_status == SAMPLE_OK).tolist()
        self.last: list[float] = stats.last.tolist()
        self.count: list[int] = stats.count.tolist()
        self.values: dict[str, list[float]] = {"min": stats.min.tolist(), "max": stats.max.tolist(),
                                               "avg": stats.avg.tolist()}
        self.by_field: dict[int, list[int]] = {}
        for i, key in enumerate(self.keys):
            self.by_field.setdefault(key.field_id, []).append(i)


class StoreView:
    """One store's live series: their last values over the lookback, their aggregates over the window; read once."""

    def __init__(self, store: SeriesStore, now_us: int, window_us: int, lookback_us: int) -> None:
        self._store, self._now_us, self._window_us = store, now_us, window_us
        self.last = StoreWindowLists(store.window(lookback_us, now_us))
        self._aggregates = self.last if lookback_us == window_us else None

    def aggregates(self) -> StoreWindowLists:
        if self._aggregates is None:
            self._aggregates = StoreWindowLists(self._store.window(self._window_us, self._now_us))
        return self._aggregates


class Scrape:
    """What one render of one exposition reads: ring views over its windows, and its events, each once."""

    def __init__(self, now_us: int, window_us: int, lookback_us: int, event_rows: Callable[[], EventRows]) -> None:
        self.now_us = now_us
        self._window_us, self._lookback_us = window_us, lookback_us
        self._event_rows = event_rows
        self._views: dict[int, RingView] = {}
        self._store_views: dict[int, StoreView] = {}
        self._events: EventRows | None = None

    def view(self, ring: RingBuffer) -> RingView:
        view = self._views.get(id(ring))
        if view is None:
            view = self._views[id(ring)] = RingView(ring, self.now_us, self._window_us, self._lookback_us)
        return view

    def store_view(self, store: SeriesStore) -> StoreView:
        view = self._store_views.get(id(store))
        if view is None:
            view = self._store_views[id(store)] = StoreView(store, self.now_us, self._window_us, self._lookback_us)
        return view

    def events(self) -> EventRows:
        if self._events is None:
            self._events = self._event_rows()
        return self._events
