"""One scrape: each ring's window statistics read once, and the event ring copied once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcgm_collector.collect.ring import SAMPLE_OK, EventRows, RingBuffer

if TYPE_CHECKING:  # the exposition owns the scrape; imported for the annotation only
    from dcgm_collector.expose.exposition import Exposition

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
    def __init__(self, exposition: Exposition, now_us: int) -> None:
        self.exposition = exposition
        self.now_us = now_us
        self._views: dict[int, RingView] = {}
        self._events: EventRows | None = None

    def view(self, ring: RingBuffer) -> RingView:
        view = self._views.get(id(ring))
        if view is None:
            e = self.exposition
            view = self._views[id(ring)] = RingView(ring, self.now_us, e.window_us, e.lookback_us)
        return view

    def events(self) -> EventRows:
        if self._events is None:
            self._events = self.exposition._event_rows()
        return self._events
