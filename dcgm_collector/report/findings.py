"""What a recording's samples say led up to its trigger: findings, ranked by how close before it and how strong.

Each rule reads the series of one GPU (dcgm_collector.report.recording.Series,
times in seconds relative to the first trigger) and looks at the samples up
to the trigger only: what came after it cannot have caused it.  A finding
carries the seconds before the trigger it starts at (for a condition that
holds over several samples: the start of its last stretch before the
trigger), and a strength from 0 to 1; rank() orders them by strength times
closeness, so a strong sign just before the trigger comes first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from dcgm_collector.report.recording import Series, Trigger

__all__ = ["FIELDS", "Finding", "early_warnings", "find", "rank", "when"]

# field ids the rules read (DCGM 4.6 names in the comments)
FIELDS = {
    "power": 155,            # DCGM_FI_DEV_BOARD_POWER_WATTS
    "power_limit": 164,      # DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS
    "power_limit_set": 160,  # DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS (when the enforced one is not recorded)
    "gpu_temp": 150,         # DCGM_FI_DEV_GPU_TEMP_CELSIUS
    "slowdown_temp": 158,    # DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS
    "mem_temp": 140,         # DCGM_FI_DEV_MEMORY_TEMP_CELSIUS
    "sm_clock": 100,         # DCGM_FI_DEV_SM_CLOCK
    "clock_events": 112,     # DCGM_FI_DEV_CLOCKS_EVENT_REASONS
    "util": 203,             # DCGM_FI_DEV_GPU_UTIL_RATIO (percent)
}
# the counters whose acceleration is a finding: field id -> (words, strength)
ERROR_COUNTERS: dict[int, tuple[str, float]] = {
    311: ("uncorrectable (DBE) ECC errors", 1.0),
    313: ("uncorrectable (DBE) ECC errors", 1.0),
    310: ("correctable (SBE) ECC errors", 0.6),
    312: ("correctable (SBE) ECC errors", 0.6),
    202: ("PCIe replays", 0.5),
    409: ("NvLink CRC flit errors", 0.5),
    419: ("NvLink CRC data errors", 0.5),
}
SW_POWER_CAP = 0x4
SW_THERMAL, HW_THERMAL, HW_SLOWDOWN = 0x20, 0x40, 0x8
POWER_CAP_SHARE = 0.98        # power at this share of its limit is capped
NEAR_SLOWDOWN_C = 3.0         # a GPU this close to its slowdown temperature is about to slow down
CLIMB_C_PER_MIN = 1.0         # memory temperature rising faster than this over the window is a finding
CLOCK_PULLED_SHARE = 0.9      # an SM clock under this share of its window max ...
BUSY_UTIL = 80.0              # ... while utilisation stays at least this high
RECENT_S = 60.0               # an error counter's "last minute"
CLOSENESS_S = 60.0            # a finding this long before the trigger counts half as much as one at it


@dataclass(frozen=True)
class Finding:
    gpu: int
    kind: str             # "power cap", "thermal slowdown", "memory temperature", "errors", "clock"
    before_s: float       # seconds before the trigger it starts at (0: at the trigger)
    strength: float       # 0..1
    text: str             # what was seen, in words, without the time

    @property
    def score(self) -> float:
        return self.strength / (1.0 + self.before_s / CLOSENESS_S)

    def sentence(self) -> str:
        return f"GPU {self.gpu}: {self.text}, {when(self.before_s)}"


def when(before_s: float) -> str:
    """The time of a finding in words: "40 s before the trigger" ("at the trigger" under half a second)."""
    if before_s < 0.5:
        return "at the trigger"
    return f"{before_s:.0f} s before the trigger"


def rank(findings: list[Finding]) -> list[Finding]:
    """The findings, most telling first: strength times closeness to the trigger, ties by time."""
    return sorted(findings, key=lambda f: (-f.score, f.before_s, f.gpu, f.kind))


def _before(s: Series | None) -> Series | None:
    if s is None:
        return None
    keep = s.t <= 0.0
    return Series(s.t[keep], s.v[keep]) if keep.any() else None


def _last_run_start(t: np.ndarray, flags: np.ndarray) -> float | None:
    """The time the last stretch of True in ``flags`` starts at; None when none is True."""
    hits = np.flatnonzero(flags)
    if not len(hits):
        return None
    last = hits[-1]
    start = last
    while start > 0 and flags[start - 1]:
        start -= 1
    return float(t[start])


def _at(s: Series, t: np.ndarray) -> np.ndarray:
    """``s``'s value at each time of ``t``: the last sample at or before it (the first sample before any)."""
    idx = np.clip(np.searchsorted(s.t, t, side="right") - 1, 0, len(s.t) - 1)
    return s.v[idx]


def power_cap(gpu: int, get: Callable[[str], Series | None]) -> Finding | None:
    power, limit, events = _before(get("power")), _before(get("power_limit") or get("power_limit_set")), \
        _before(get("clock_events"))
    t_hits: list[tuple[float, float, str]] = []
    if power is not None and limit is not None:
        share = power.v / np.maximum(_at(limit, power.t), 1e-9)
        start = _last_run_start(power.t, share >= POWER_CAP_SHARE)
        if start is not None:
            peak = float(share[power.t >= start].max())
            t_hits.append((start, min(1.0, 0.6 + 0.4 * peak),
                           f"power at {peak * 100:.0f} % of its {float(_at(limit, np.array([start]))[0]):.0f} W "
                           "limit"))
    if events is not None:
        start = _last_run_start(events.t, (events.v.astype(np.int64) & SW_POWER_CAP) != 0)
        if start is not None:
            t_hits.append((start, 0.8, "clocks held back by the power cap (SW power cap reason set)"))
    if not t_hits:
        return None
    start, strength, text = max(t_hits, key=lambda h: (h[0], h[1]))   # the one nearest the trigger
    return Finding(gpu, "power cap", -start, strength, text)


def thermal(gpu: int, get: Callable[[str], Series | None]) -> Finding | None:
    events, temp, slowdown = _before(get("clock_events")), _before(get("gpu_temp")), _before(get("slowdown_temp"))
    hits: list[tuple[float, float, str]] = []
    if events is not None:
        bits = events.v.astype(np.int64)
        for mask, strength, words in ((HW_THERMAL, 1.0, "HW thermal slowdown reason set"),
                                      (SW_THERMAL, 0.8, "SW thermal slowdown reason set")):
            start = _last_run_start(events.t, (bits & mask) != 0)
            if start is not None:
                hits.append((start, strength, words))
    if temp is not None and slowdown is not None:
        limit = _at(slowdown, temp.t)
        start = _last_run_start(temp.t, (limit > 0) & (temp.v >= limit - NEAR_SLOWDOWN_C))
        if start is not None:
            top = float(temp.v[temp.t >= start].max())
            hits.append((start, 0.7, f"GPU temperature {top:.0f} °C, within {NEAR_SLOWDOWN_C:.0f} °C of its "
                                     f"{float(limit[-1]):.0f} °C slowdown threshold"))
    if not hits:
        return None
    start, strength, text = max(hits, key=lambda h: (h[1], h[0]))   # the strongest; its start
    return Finding(gpu, "thermal slowdown", -start, strength, text)


def memory_climb(gpu: int, get: Callable[[str], Series | None]) -> Finding | None:
    temp = _before(get("mem_temp"))
    if temp is None or len(temp.t) < 3 or temp.t[-1] - temp.t[0] < 10.0:
        return None
    slope = float(np.polyfit(temp.t, temp.v, 1)[0]) * 60.0
    if slope < CLIMB_C_PER_MIN:
        return None
    rise = float(temp.v[-1] - temp.v[0])
    return Finding(gpu, "memory temperature", -float(temp.t[0]), min(1.0, 0.3 + slope / 20.0),
                   f"memory temperature climbing {slope:.1f} °C/min ({temp.v[0]:.0f} to {temp.v[-1]:.0f} °C, "
                   f"{rise:+.0f} °C) from the start of the window")


def errors(gpu: int, field_id: int, s: Series | None) -> Finding | None:
    s = _before(s)
    if s is None or len(s.t) < 2:
        return None
    words, strength = ERROR_COUNTERS[field_id]
    recent = s.t >= -RECENT_S
    last = float(s.v[-1])
    start_recent = float(_at(s, np.array([-RECENT_S]))[0]) if (~recent).any() else float(s.v[0])
    new = last - start_recent
    if new <= 0:
        return None
    span_before = float(-RECENT_S - s.t[0]) if (~recent).any() else 0.0
    earlier = float(start_recent - s.v[0]) if span_before > 0 else 0.0
    rate_recent = new / min(RECENT_S, float(-s.t[0]) or RECENT_S)
    rate_before = earlier / span_before if span_before > 0 else 0.0
    if rate_before > 0 and rate_recent < 2 * rate_before:
        return None
    first = np.flatnonzero(np.diff(s.v) > 0)
    first = [i for i in first if s.t[i + 1] >= -RECENT_S]
    at = float(s.t[first[0] + 1]) if first else float(s.t[-1])
    per_min = rate_recent * 60.0
    was = f"{rate_before * 60:.1f}/min before" if span_before > 0 else "none before"
    return Finding(gpu, "errors", -at, strength,
                   f"{words} accelerating: {new:.0f} in the last minute ({per_min:.1f}/min; {was})")


def clock_pulled(gpu: int, get: Callable[[str], Series | None]) -> Finding | None:
    clock, util = _before(get("sm_clock")), _before(get("util"))
    if clock is None or util is None or len(clock.t) < 2:
        return None
    full = get("sm_clock")
    peak = float(full.v.max()) if full is not None else float(clock.v.max())
    if peak <= 0:
        return None
    low = (clock.v < CLOCK_PULLED_SHARE * peak) & (_at(util, clock.t) >= BUSY_UTIL)
    start = _last_run_start(clock.t, low)
    if start is None:
        return None
    least = float(clock.v[(clock.t >= start) & low].min())
    return Finding(gpu, "clock", -start, 0.4 + 0.5 * (1 - least / peak),
                   f"SM clock pulled down to {least:.0f} MHz ({least / peak * 100:.0f} % of its {peak:.0f} MHz "
                   "window max) while utilisation stayed high")


def early_warnings(triggers: Iterable[Trigger]) -> list[Finding]:
    """The collector's early warnings (triggers of kind "warning") at or before the trigger, earliest first.

    A warning is the collector's own rule having seen the precursor at the full sampling rate, so it
    leads the findings, and the first to come names the cause best: what followed grew out of it.
    """
    out = []
    for trigger in triggers:
        if trigger.kind != "warning" or trigger.t > 0.5:
            continue
        text = trigger.detail.removeprefix("early warning ")
        reason, _, rest = text.partition(" on GPU ")
        _, _, why = rest.partition(": ")
        for gpu in trigger.gpus or (-1,):
            out.append(Finding(gpu, "early warning", max(0.0, -trigger.t), 1.0,
                               f"early warning {reason}" + (f" ({why})" if why else "")))
    return sorted(out, key=lambda f: (-f.before_s, f.gpu))


def find(series: dict[tuple[int, int], Series], gpus: list[int]) -> list[Finding]:
    """Every finding in ``series`` ((gpu, field id) -> samples) for ``gpus``, ranked."""
    out: list[Finding] = []
    for gpu in gpus:
        def get(name: str, gpu: int = gpu) -> Series | None:
            return series.get((gpu, FIELDS[name]))
        for rule in (power_cap, thermal, memory_climb, clock_pulled):
            found = rule(gpu, get)
            if found is not None:
                out.append(found)
        seen: set[str] = set()
        for field_id in ERROR_COUNTERS:   # volatile before aggregate: one finding per kind of error
            found = errors(gpu, field_id, series.get((gpu, field_id)))
            if found is not None and ERROR_COUNTERS[field_id][0] not in seen:
                seen.add(ERROR_COUNTERS[field_id][0])
                out.append(found)
    return rank(out)
