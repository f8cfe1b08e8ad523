"""What a sampler reports to its readers: its running counts and DCGM's health checks.

Both are written by the sampler thread only; :class:`HealthState` (and the
mappings in :class:`SamplerStats`) are replaced, never mutated, so a reader on
another thread sees one consistent value.  They live here, between the collect
stage that writes them and the outputs that read them (the self-metrics,
/health, DCGM_EXP_GPU_HEALTH_STATUS, the flight recorder), so that neither
imports the other; the status names come from the extension, not the binding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dcgm_collector.ext.status import status_name
from dcgm_collector.model import FieldCost, HealthIncident, HealthReport

__all__ = ["HealthState", "SamplerStats", "newest_sample_time"]


def newest_sample_time(stats: SamplerStats, rings: Iterable) -> float | None:
    """Unix time (s) of the newest sample stored: the sampler's count, or a ring's newest row when that is newer
    (the sampler publishes its counts only between its runs of ticks in C, the rings' rows at every tick)."""
    newest = stats.last_sample_time
    for ring in rings:
        ts = ring.newest_ts
        if ts is not None and (newest is None or ts / 1e6 > newest):
            newest = ts / 1e6
    return newest


@dataclass
class SamplerStats:
    """What the sampler has done so far.  Written by the sampler thread only."""

    ticks: int = 0                      # ticks run
    skipped_ticks: int = 0              # deadlines passed over because a tick overran them
    samples: int = 0                    # cells stored in value rings (blank ones included)
    rows: int = 0                       # rows committed to value rings
    events: int = 0                     # entries committed to the event ring
    # failed DCGM calls by status code; replaced, never mutated, so a reader can iterate it
    errors_by_code: Mapping[int, int] = field(default_factory=dict)
    last_sample_time: float | None = None    # Unix time (s) of the newest sample stored
    last_good_tick_time: float | None = None  # Unix time (s) a tick last ended without a DCGM error
    last_tick_ok: bool = False          # whether the latest tick ended without a DCGM error
    last_tick_duration_s: float = 0.0
    lost_gpus: tuple[int, ...] = ()     # GPUs taken out of the group because DCGM lost them
    dropped_groups: int = 0             # field groups not watched (a profiling watch DCGM refused, ...)
    tick_failures: int = 0              # ticks that raised something other than a DCGM status
    last_tick_failure: str | None = None   # what the latest tick raised (not a DCGM status), None once one succeeds
    # what the engine spent per field (dcgm-collector's embedded engine only), with the
    # name each field has in the counters; replaced, never mutated
    field_costs: tuple[tuple[str, FieldCost], ...] = ()
    # reads of the sampler's readers (collect.readers) that raised, by reader name (each is also one of
    # tick_failures); replaced, never mutated
    reader_failures: Mapping[str, int] = field(default_factory=dict)

    @property
    def errors(self) -> int:
        return sum(self.errors_by_code.values())

    @property
    def error_names(self) -> dict[int, str]:
        """The DCGM_ST_* name of each code in errors_by_code, for readers that do not use the binding."""
        return {code: status_name(code) for code in self.errors_by_code}

    def count_error(self, code: int) -> None:
        self.errors_by_code = {**self.errors_by_code, code: self.errors_by_code.get(code, 0) + 1}


@dataclass(frozen=True)
class HealthState:
    """DCGM's health checks as the sampler last saw them; replaced, never mutated."""

    report: HealthReport                 # the latest check
    checked_at: float                    # Unix time (s) of that check
    # incidents of the checks made in the last HEALTH_HOLD_S, with the time of their check
    recent: tuple[tuple[float, HealthIncident], ...] = ()
