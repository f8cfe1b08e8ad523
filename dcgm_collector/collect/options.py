"""How the sampler collects: the collect interval, the watch interval and the retention, checked once.

Every default lives here; the command line (dcgm_collector.config) shows
them in its help and the watch plan, the sampler and the targets take one
:class:`SamplingOptions` rather than loose numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DEFAULT_COLLECT_INTERVAL_MS", "DEFAULT_RETENTION_S", "MAX_INTERVAL_MS", "MAX_RING_ROWS", "SamplingOptions"]

DEFAULT_COLLECT_INTERVAL_MS = 1000     # dcgm-exporter: 30000 (see the help's epilog)
DEFAULT_RETENTION_S = 3600.0           # an hour of every sample (compressed rings: memory follows what is held)
MAX_INTERVAL_MS = 24 * 3600 * 1000     # a collect or watch interval longer than a day is a mistake
# Rows one ring may hold: 10 million rows of 30 series are ~2.7 GB, more than a node should give a collector.
MAX_RING_ROWS = 10_000_000


@dataclass(frozen=True)
class SamplingOptions:
    """-c/--collect-interval, --watch-interval and --retention, in the units of their flags."""

    collect_interval_ms: float = DEFAULT_COLLECT_INTERVAL_MS
    watch_interval_ms: float | None = None     # None: the collect interval
    retention_s: float = DEFAULT_RETENTION_S

    def __post_init__(self) -> None:
        _positive(self.collect_interval_ms, "collect interval (-c/--collect-interval)", "milliseconds")
        if self.watch_interval_ms is not None:
            _positive(self.watch_interval_ms, "watch interval (--watch-interval)", "milliseconds")
        _positive(self.retention_s, "retention (--retention)", "seconds")
        if self.collect_interval_ms > MAX_INTERVAL_MS:
            raise ValueError(f"-c/--collect-interval {self.collect_interval_ms:g} ms is longer than a day "
                             f"({MAX_INTERVAL_MS} ms)")
        rows = math.ceil(self.retention_s * 1000 / self.watch_ms)
        if rows > MAX_RING_ROWS:
            many = f"{rows:,}" if rows < 10**12 else f"{rows:.1e}"
            raise ValueError(f"--retention {self.retention_s:g} s at a {self.watch_ms:g} ms watch interval is {many} "
                             f"rows per ring, more than the {MAX_RING_ROWS:,} a ring holds; lower --retention or "
                             "raise --watch-interval")
        if self.watch_ms > self.collect_interval_ms:
            # every other collect would find nothing new
            raise ValueError(
                f"--watch-interval {self.watch_ms:g} ms must not be longer than -c/--collect-interval "
                f"{self.collect_interval_ms:g} ms: a collect would find nothing new; use a watch interval "
                "of at most the collect interval")

    @property
    def watch_ms(self) -> float:
        """The watch interval in ms (the collect interval unless a faster one was given)."""
        return self.collect_interval_ms if self.watch_interval_ms is None else self.watch_interval_ms

    @property
    def collect_interval_us(self) -> int:
        return max(1, round(self.collect_interval_ms * 1000))

    @property
    def update_freq_us(self) -> int:
        """DCGM's updateFreq of the value watches: the watch interval in µs."""
        return max(1, round(self.watch_ms * 1000))

    @property
    def interval_s(self) -> float:
        return self.collect_interval_us / 1e6


def _positive(value: object, what: str, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"the {what} must be a number of {unit}, not {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"the {what} must be a positive number of {unit}, not {value}")
    return float(value)
