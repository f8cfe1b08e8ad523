"""The early-warning rules of one GPU: its samples in, which warnings hold and its error rates out.

Apart from rings, readers and clocks, so that each rule is tested on the
samples alone.  :class:`GpuWarnings` is fed every good sample of the fields
in :data:`WATCHED` (``feed``, in time order per field) and answers, at a
time, which of series.warnings' reasons hold (``holding``) and the error
counters' rates (``rates``).  What it keeps is bounded: the counters and the
temperature a point a second over the longest window (about 300 points
each), the slowdown starts of the last 10 minutes, and a few newest values.
XIDs come in through ``xid``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable

from dcgm_collector.catalog.xids import xid_entry
from dcgm_collector.series.warnings import WarningThresholds

__all__ = ["FIELDS", "WATCHED", "GpuWarnings", "pcie_replays_allowed"]

# DCGM field ids the rules read
ECC_SBE_VOL = 310
PCIE_REPLAYS = 202
PCIE_GEN, PCIE_WIDTH = 237, 238
ROW_REMAP_PENDING, ROW_REMAP_FAILED, PAGES_PENDING = 396, 395, 392
NVLINK_CRC = (409, 419)              # flit and data CRC errors, all links
NVLINK_REPLAY = (429, 439)           # replay and recovery errors, all links
GPU_TEMP, SLOWDOWN_TEMP = 150, 158
POWER, POWER_LIMIT = 155, 164        # the 1 s average (the instant on some models) and the enforced limit
CLOCK_EVENTS = 112
FIELDS = {
    "ecc_sbe": (ECC_SBE_VOL,), "pcie_replay": (PCIE_REPLAYS,), "nvlink_crc": NVLINK_CRC,
    "nvlink_replay": NVLINK_REPLAY,
}
WATCHED: tuple[int, ...] = (ECC_SBE_VOL, PCIE_REPLAYS, PCIE_GEN, PCIE_WIDTH, ROW_REMAP_PENDING, ROW_REMAP_FAILED,
                            PAGES_PENDING, *NVLINK_CRC, *NVLINK_REPLAY, GPU_TEMP, SLOWDOWN_TEMP, POWER,
                            POWER_LIMIT, CLOCK_EVENTS)

# hardware slowdowns among the clock-event reasons: HW slowdown, HW thermal, HW power brake
HW_SLOWDOWN_BITS = 0x8 | 0x40 | 0x80
# GT/s of one lane, by PCIe generation (DCGM's table; a later generation counts as the last)
LANE_GT_S = (2.5, 5.0, 8.0, 16.0, 32.0, 64.0)
# the shortest span a rate is computed over; less is not a rate yet
MIN_SPAN_S = 10.0


def pcie_replays_allowed(gen: int, width: int, ber: float = 1e-12) -> int | None:
    """Replays a minute DCGM's health watch allows a link of this generation and width; None without a link."""
    if gen <= 0 or width <= 0:
        return None
    gt_s = LANE_GT_S[min(gen, len(LANE_GT_S)) - 1]
    return math.ceil(ber * gt_s * 1e9 * 60 * width - 1e-9)


def xid_needs(number: int) -> str | None:
    """'reset' or 'inspect' when the catalogue's action for XID ``number`` is one; None otherwise."""
    entry = xid_entry(number)
    return entry.needs or None if entry is not None else None


class _Points:
    """A series thinned to its first sample of each second, over a window: what a rate or a slope is taken from."""

    def __init__(self, keep_s: float) -> None:
        self.keep_us = int(keep_s * 1e6)
        self.points: deque[tuple[int, float]] = deque()

    def add(self, ts: int, value: float) -> None:
        points = self.points
        if not points or ts - points[-1][0] >= 1_000_000:
            points.append((ts, value))
        while points and points[0][0] < ts - self.keep_us:
            points.popleft()


class _Counter(_Points):
    """A running total's points; a drop (a reset of the counter) starts afresh."""

    def __init__(self, keep_s: float) -> None:
        super().__init__(keep_s)
        self.newest: tuple[int, float] | None = None

    def add(self, ts: int, value: float) -> None:
        if self.newest is not None and value < self.newest[1]:
            self.points.clear()
        self.newest = (ts, value)
        super().add(ts, value)

    def at(self, ts: int) -> tuple[int, float] | None:
        """The oldest point at or after ``ts``."""
        for point in self.points:
            if point[0] >= ts:
                return point
        return None

    def rate(self, window_s: float, end: tuple[int, float] | None = None) -> float | None:
        """Per second over the last ``window_s`` up to ``end`` (the newest sample); None over less than MIN_SPAN_S."""
        end = end if end is not None else self.newest
        if end is None:
            return None
        start = self.at(end[0] - int(window_s * 1e6))
        if start is None or end[0] - start[0] < MIN_SPAN_S * 1e6:
            return None
        return (end[1] - start[1]) / ((end[0] - start[0]) / 1e6)


class _Sum:
    """Several running totals read as one (the CRC errors of flits and of data)."""

    def __init__(self, fields: Iterable[int], keep_s: float) -> None:
        self.parts = {f: _Counter(keep_s) for f in fields}

    def rate(self, window_s: float) -> float | None:
        rates = [c.rate(window_s) for c in self.parts.values()]
        known = [r for r in rates if r is not None]
        return sum(known) if known else None


class GpuWarnings:
    """One GPU's rules and what they keep (see the module)."""

    def __init__(self, thresholds: WarningThresholds) -> None:
        t = self.thresholds = thresholds
        keep = t.rate_window_s + t.baseline_window_s + 2
        self.sbe = _Counter(keep)
        self.pcie = _Counter(t.rate_window_s + 2)
        self.crc = _Sum(NVLINK_CRC, t.rate_window_s + 2)
        self.replay = _Sum(NVLINK_REPLAY, t.rate_window_s + 2)
        self.temps = _Points(t.rate_window_s)             # the GPU temperature, for its slope
        # the running totals, by field id
        self._counters = {ECC_SBE_VOL: self.sbe, PCIE_REPLAYS: self.pcie, **self.crc.parts, **self.replay.parts}
        self.latest: dict[int, float] = {}
        self.over_limit_since: int | None = None        # ts of the first sample of the current run over the limit
        self.newest_power_ts: int | None = None
        self.slowdown_starts: deque[int] = deque()
        self.in_slowdown = False
        self.xids: dict[str, int] = {}                  # 'reset' / 'inspect' -> ts of the newest such XID
        self.newest_ts = 0

    # -- samples in
    def feed(self, field_id: int, ts: Iterable[int], values: Iterable[float]) -> None:
        """Good samples of one field, oldest first."""
        for t, v in zip(ts, values):
            self._one(field_id, int(t), float(v))

    def _one(self, field_id: int, ts: int, value: float) -> None:
        if not math.isfinite(value):
            return
        self.newest_ts = max(self.newest_ts, ts)
        self.latest[field_id] = value
        counter = self._counters.get(field_id)
        if counter is not None:
            counter.add(ts, value)
        elif field_id == GPU_TEMP:
            self.temps.add(ts, value)
        elif field_id == POWER:
            limit = self.latest.get(POWER_LIMIT)
            if limit is not None and limit > 0 and value > limit:
                if self.over_limit_since is None:
                    self.over_limit_since = ts
            else:
                self.over_limit_since = None
            self.newest_power_ts = ts
        elif field_id == CLOCK_EVENTS:
            slowing = bool(int(value) & HW_SLOWDOWN_BITS)
            if slowing and not self.in_slowdown:
                self.slowdown_starts.append(ts)
            self.in_slowdown = slowing
            while self.slowdown_starts and self.slowdown_starts[0] < ts - int(self.thresholds.slowdown_window_s * 1e6):
                self.slowdown_starts.popleft()

    def xid(self, number: int, ts: int) -> None:
        """An XID the GPU reported at ``ts``."""
        needs = xid_needs(number)
        if needs is not None:
            self.xids[needs] = max(self.xids.get(needs, 0), ts)

    # -- what holds
    def rates(self) -> dict[str, float | None]:
        """Each error counter's rate over the last minute, per second (None: not sampled long enough)."""
        window = self.thresholds.rate_window_s
        return {"ecc_sbe": self.sbe.rate(window), "pcie_replay": self.pcie.rate(window),
                "nvlink_crc": self.crc.rate(window), "nvlink_replay": self.replay.rate(window)}

    def holding(self, now_us: int, rates: dict[str, float | None] | None = None) -> dict[str, str]:
        """The reasons that hold at ``now_us``, each with a line saying why."""
        t = self.thresholds
        rates = self.rates() if rates is None else rates
        out: dict[str, str] = {}
        sbe = rates["ecc_sbe"]
        if sbe is not None and sbe >= t.sbe_rate:
            out["ecc_sbe_storm"] = f"{sbe:.0f} correctable ECC errors a second over the last minute"
        accel = self._sbe_acceleration(sbe)
        if accel is not None:
            out["ecc_sbe_accelerating"] = accel
        if self.latest.get(ROW_REMAP_PENDING, 0) >= 1 or self.latest.get(PAGES_PENDING, 0) >= 1:
            out["row_remap_pending"] = "a row remap (or page retirement) is pending: it needs a GPU reset"
        if self.latest.get(ROW_REMAP_FAILED, 0) >= 1:
            out["row_remap_failed"] = "row remapping failed: a memory bank has no spare rows left"
        pcie = self._pcie()
        if pcie is not None:
            out["pcie_replays"] = pcie
        crc, replay = rates["nvlink_crc"], rates["nvlink_replay"]
        if crc is not None and crc >= t.nvlink_crc_rate:
            out["nvlink_errors"] = f"{crc:.0f} NvLink CRC errors a second over the last minute"
        elif replay is not None and replay >= t.nvlink_replay_rate:
            out["nvlink_errors"] = f"{replay:.1f} NvLink replay and recovery errors a second over the last minute"
        thermal = self._thermal()
        if thermal is not None:
            out["thermal_margin"] = thermal
        if len(self.slowdown_starts) >= t.hw_slowdown_events:
            out["hw_slowdown_repeated"] = (f"{len(self.slowdown_starts)} hardware slowdowns began in the last "
                                           f"{t.slowdown_window_s / 60:g} minutes")
        if (self.over_limit_since is not None and self.newest_power_ts is not None
                and self.newest_power_ts - self.over_limit_since >= t.power_over_limit_s * 1e6):
            seconds = (self.newest_power_ts - self.over_limit_since) / 1e6
            out["power_over_limit"] = (f"power {self.latest.get(POWER, 0):.0f} W over the "
                                       f"{self.latest.get(POWER_LIMIT, 0):.0f} W limit for {seconds:.0f} s")
        for needs in ("reset", "inspect"):
            at = self.xids.get(needs)
            if at is not None and now_us - at <= t.hold_s * 1e6:
                out[f"xid_{needs}"] = f"an XID that needs a GPU {'reset' if needs == 'reset' else 'inspection'}"
        return out

    def _sbe_acceleration(self, rate: float | None) -> str | None:
        t = self.thresholds
        if rate is None or rate < 1.0 or self.sbe.newest is None:
            return None
        # the rate of the minutes before the last one: from the oldest point kept to the start of the last minute
        split = self.sbe.at(self.sbe.newest[0] - int(t.rate_window_s * 1e6))
        if split is None or not self.sbe.points:
            return None
        first = self.sbe.points[0]
        span_s = (split[0] - first[0]) / 1e6
        if span_s < 3 * MIN_SPAN_S:
            return None
        before = (split[1] - first[1]) / span_s
        if rate >= t.sbe_acceleration * before:
            times = "from none" if before <= 0 else f"{rate / before:.1f} times"
            return (f"correctable ECC errors at {rate:.0f} a second over the last minute, "
                    f"{times} the {before:.1f} a second of the {span_s:.0f} s before")
        return None

    def _pcie(self) -> str | None:
        gen, width = self.latest.get(PCIE_GEN), self.latest.get(PCIE_WIDTH)
        if gen is None or width is None or self.pcie.newest is None:
            return None
        allowed = pcie_replays_allowed(int(gen), int(width), self.thresholds.pcie_ber)
        rate = self.pcie.rate(self.thresholds.rate_window_s)
        if allowed is None or rate is None:
            return None
        per_minute = rate * 60
        if per_minute > allowed:
            return (f"{per_minute:.1f} PCIe replays a minute, over the {allowed} a Gen{int(gen)} x{int(width)} "
                    f"link allows")
        return None

    def _thermal(self) -> str | None:
        t = self.thresholds
        temp, slowdown = self.latest.get(GPU_TEMP), self.latest.get(SLOWDOWN_TEMP)
        if temp is None or slowdown is None or slowdown <= 0:
            return None
        margin = slowdown - temp
        if margin <= t.thermal_margin_c:
            return f"{temp:.0f} C, {margin:.0f} C below the {slowdown:.0f} C slowdown temperature"
        temps = self.temps.points
        if margin > t.thermal_trend_margin_c or len(temps) < 2:
            return None
        first, last = temps[0], temps[-1]
        span_s = (last[0] - first[0]) / 1e6
        if span_s < MIN_SPAN_S:
            return None
        rising = _slope(temps)
        if rising > 0 and margin / rising <= t.thermal_lead_s:
            return (f"{temp:.0f} C and rising {rising * 60:.0f} C a minute: the {slowdown:.0f} C slowdown "
                    f"temperature in about {margin / rising:.0f} s")
        return None


def _slope(points: Iterable[tuple[int, float]]) -> float:
    """Least-squares slope of (ts in µs, value) points, per second."""
    pts = list(points)
    n = len(pts)
    mean_t = sum(p[0] for p in pts) / n
    mean_v = sum(p[1] for p in pts) / n
    num = sum((p[0] - mean_t) * (p[1] - mean_v) for p in pts)
    den = sum((p[0] - mean_t) ** 2 for p in pts)
    return 0.0 if den == 0 else num / den * 1e6
