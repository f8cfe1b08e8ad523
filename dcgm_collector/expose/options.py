"""How the exposition renders: the window of the aggregate families, labels, count windows, staleness.

Every default of these options lives here; the command line shows them in
its help (dcgm_collector.config).
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass, field

from dcgm_collector.attribution.copies import GpuAttribution
from dcgm_collector.catalog.counters import AGGREGATIONS

__all__ = ["DEFAULT_COUNT_WINDOW_MS", "DEFAULT_WINDOW_S", "MIN_STALE_AFTER_S", "STALE_AFTER_INTERVALS",
           "ExpositionOptions"]

DEFAULT_WINDOW_S = 15.0                # --window: the span of the _min/_max/_avg families
DEFAULT_COUNT_WINDOW_MS = 300_000      # -x and --clock-events-count-window-size, as dcgm-exporter
# samples older than STALE_AFTER_INTERVALS collect intervals (at least MIN_STALE_AFTER_S) are stale
MIN_STALE_AFTER_S = 5.0
STALE_AFTER_INTERVALS = 3


@dataclass(frozen=True)
class ExpositionOptions:
    window_s: float = DEFAULT_WINDOW_S                     # --window: span of the _min/_max/_avg families
    aggregations: tuple[str, ...] = ()           # --aggregations: added to every numeric row
    hostname: str | None = field(default_factory=socket.gethostname)  # None or "": no hostname label (-n)
    replace_blanks_in_model_name: bool = False   # -rbmn
    use_old_namespace: bool = False              # -o: the 1.x label names (uuid; the pod labels' are the mapper's)
    xid_count_window_ms: int = DEFAULT_COUNT_WINDOW_MS         # -x
    clock_events_count_window_ms: int = DEFAULT_COUNT_WINDOW_MS  # --clock-events-count-window-size
    # samples older than this are stale (health, dcgm_collector_up, last values);
    # None: STALE_AFTER_INTERVALS collect intervals, at least MIN_STALE_AFTER_S
    stale_after_s: float | None = None
    # pod labels and HPC job copies (-k, --hpc-job-mapping-dir); None: neither
    attribution: GpuAttribution | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _positive(self.window_s, "window_s (--window, seconds)")
        if self.stale_after_s is not None:
            _positive(self.stale_after_s, "stale_after_s (seconds)")
        for value, what in ((self.xid_count_window_ms, "xid_count_window_ms (-x/--xid-count-window-size)"),
                            (self.clock_events_count_window_ms,
                             "clock_events_count_window_ms (--clock-events-count-window-size)")):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{what} must be a positive number of milliseconds, not {value!r}")
        if isinstance(self.aggregations, str):
            raise TypeError("aggregations must be a tuple of names, not a str")
        unknown = [a for a in self.aggregations if a not in AGGREGATIONS]
        if unknown:
            raise ValueError(f"unknown aggregation {unknown[0]!r} (--aggregations); expected {', '.join(AGGREGATIONS)}")
        if self.hostname is not None and not isinstance(self.hostname, str):
            raise TypeError(f"hostname must be a str or None, not {type(self.hostname).__name__}")


def _positive(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a positive number, not {value!r}")
