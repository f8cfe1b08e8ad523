"""One scrape: each ring's window statistics read once, and the event ring copied once."""

from __future__ import annotations

from collections.abc import Callable

from dcgm_collector.rings.ring import SAMPLE_OK, EventRows, RingBuffer

__all__ = ["RingView", "Scrape"]


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


class Scrape:
    """What one render of one exposition reads: ring views over its windows, and its events, each once."""

    def __init__(self, now_us: int, window_us: int, lookback_us: int, event_rows: Callable[[], EventRows]) -> None:
        self.now_us = now_us
        self._window_us, self._lookback_us = window_us, lookback_us
        self._event_rows = event_rows
        self._views: dict[int, RingView] = {}
        self._events: EventRows | None = None

    def view(self, ring: RingBuffer) -> RingView:
        view = self._views.get(id(ring))
        if view is None:
            view = self._views[id(ring)] = RingView(ring, self.now_us, self._window_us, self._lookback_us)
        return view

    def events(self) -> EventRows:
        if self._events is None:
            self._events = self._event_rows()
        return self._events
