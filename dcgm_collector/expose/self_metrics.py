"""The collector's own ``dcgm_collector_*`` metrics: up, sample age, counts, errors, build info,
the memory and samples its rings hold, and what the engine spent per field where the engine says
(dcgm-collector's own)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dcgm_collector.model import EntityType, FieldCost
from dcgm_collector.rings.ring import RingBuffer
from dcgm_collector.series.stats import SamplerStats, newest_sample_time
from dcgm_collector.series.text import Header, family_types

__all__ = ["SelfLines", "SelfRow", "render_self_metrics"]


@dataclass(frozen=True)
class SelfRow:
    labels: str                    # the target's label pairs, rendered ("" when unlabelled)
    stats: SamplerStats
    up: bool
    reconnects: int | None = None  # None: not a remote target, no reconnects series
    rings: Sequence[RingBuffer] = ()   # the target's rings, for what they hold by entity level


def _series(name: str, labels: str, value: object) -> str:
    return f"{name}{{{labels}}} {value}\n" if labels else f"{name} {value}\n"


class SelfLines:
    """The self-metrics lines that change only with the rings or with the engine's costs, kept per target.

    What the rings hold (their newest rows are scanned for it) is rendered
    again only when a ring committed rows, and the per-field costs only when
    the sampler replaced them: a scrape between two ticks formats neither.
    One entry per target's labels, so the memory is bounded by the targets.
    """

    def __init__(self) -> None:
        self._holdings: dict[str, tuple[tuple, tuple[list[str], list[str]]]] = {}
        self._costs: dict[str, tuple[object, dict[str, list[str]]]] = {}

    def holdings(self, row: SelfRow) -> tuple[list[str], list[str]]:
        """(ring_bytes lines, ring_samples lines) of one target."""
        key = tuple((id(ring), ring.rows_written) for ring in row.rings)
        kept = self._holdings.get(row.labels)
        if kept is None or kept[0] != key:
            kept = self._holdings[row.labels] = (key, _ring_holdings(row))
        return kept[1]

    def costs(self, row: SelfRow) -> dict[str, list[str]]:
        """The field-cost families' lines of one target, by family name."""
        kept = self._costs.get(row.labels)
        if kept is None or kept[0] is not row.stats.field_costs:
            kept = self._costs[row.labels] = (row.stats.field_costs, _field_costs(row))
        return kept[1]


def render_self_metrics(parts: list[str], openmetrics: bool, now_s: float, rows: Sequence[SelfRow],
                        scrape_s: float | None, build_info: str, lines: SelfLines | None = None) -> None:
    """The self-metrics of ``rows`` (one per target); ``lines`` keeps the lines that change only with the data."""
    lines = SelfLines() if lines is None else lines

    def family(name: str, lines: list[str]) -> None:
        if lines:
            parts.append(_SELF_HEADERS[name].get(openmetrics))
            parts.extend(lines)

    family("dcgm_collector_up", [_series("dcgm_collector_up", r.labels, int(r.up)) for r in rows])
    newest = [newest_sample_time(r.stats, r.rings) for r in rows]
    family("dcgm_collector_last_sample_age_seconds", [
        _series("dcgm_collector_last_sample_age_seconds", r.labels, f"{max(0.0, now_s - t):f}")
        for r, t in zip(rows, newest) if t is not None])
    family("dcgm_collector_samples_total",
           [_series("dcgm_collector_samples_total", r.labels, r.stats.samples) for r in rows])
    family("dcgm_collector_ticks_total",
           [_series("dcgm_collector_ticks_total", r.labels, r.stats.ticks) for r in rows])
    family("dcgm_collector_skipped_ticks_total",
           [_series("dcgm_collector_skipped_ticks_total", r.labels, r.stats.skipped_ticks) for r in rows])
    family("dcgm_collector_tick_failures_total",
           [_series("dcgm_collector_tick_failures_total", r.labels, r.stats.tick_failures) for r in rows])
    family("dcgm_collector_dcgm_errors_total", [
        _series("dcgm_collector_dcgm_errors_total", ",".join(filter(None, (
            r.labels, f'code="{code}",name="{names.get(code, code)}"'))), n)
        for r in rows if r.stats.errors_by_code
        for names in (r.stats.error_names,)   # the names once per target, not once per code
        for code, n in sorted(r.stats.errors_by_code.items())])
    family("dcgm_collector_reconnects_total", [
        _series("dcgm_collector_reconnects_total", r.labels, r.reconnects) for r in rows if r.reconnects is not None])
    holdings = [lines.holdings(r) for r in rows]
    family("dcgm_collector_ring_bytes", [line for held in holdings for line in held[0]])
    family("dcgm_collector_ring_samples", [line for held in holdings for line in held[1]])
    costs = [lines.costs(r) for r in rows]
    for name in _COST_FAMILIES:
        family(name, [line for each in costs for line in each.get(name, ())])
    if scrape_s is not None:
        family("dcgm_collector_scrape_duration_seconds",
               [f"dcgm_collector_scrape_duration_seconds {scrape_s:f}\n"])
    family("dcgm_collector_build_info", [f"dcgm_collector_build_info{{{build_info}}} 1\n"])


def _level_name(group: int) -> str:
    try:
        return EntityType(group).name
    except ValueError:
        return str(group)


def _ring_holdings(r: SelfRow) -> tuple[list[str], list[str]]:
    """Bytes and samples a target's rings hold, by entity level (a ring of several levels split by series)."""
    bytes_lines, sample_lines = [], []
    held: dict[str, list[float]] = {}
    for ring in r.rings:
        groups = [key.entity_group for key in ring.series]
        ring_bytes, samples = ring.nbytes, ring.samples_held
        for group in sorted(set(groups)):
            share = groups.count(group) / len(groups)
            totals = held.setdefault(_level_name(group), [0.0, 0.0])
            totals[0] += ring_bytes * share
            totals[1] += samples * share
    for level, (level_bytes, samples) in sorted(held.items()):
        labels = ",".join(filter(None, (r.labels, f'level="{level}"')))
        bytes_lines.append(_series("dcgm_collector_ring_bytes", labels, round(level_bytes)))
        sample_lines.append(_series("dcgm_collector_ring_samples", labels, round(samples)))
    return bytes_lines, sample_lines


# the per-field cost families (dcgm-collector's embedded engine only): name, value, whether a field has one
_COST_SERIES: tuple[tuple[str, Callable[[FieldCost], object], Callable[[FieldCost], bool]], ...] = (
    ("dcgm_collector_field_late_samples_total", lambda c: c.late_samples, lambda c: c.samples > 0),
    ("dcgm_collector_field_reads_total", lambda c: c.reads, lambda c: c.reads > 0),
    ("dcgm_collector_field_read_seconds_total", lambda c: f"{c.read_seconds:f}", lambda c: c.reads > 0),
    ("dcgm_collector_field_read_interval_seconds", lambda c: f"{c.period_s:g}", lambda c: c.period_s > 0),
    ("dcgm_collector_field_late_reads_total", lambda c: c.late_reads, lambda c: c.period_s > 0),
    ("dcgm_collector_field_estimate_correction", lambda c: f"{c.last_correction:f}", lambda c: c.corrections > 0),
    ("dcgm_collector_field_estimate_correction_max", lambda c: f"{c.max_abs_correction:f}",
     lambda c: c.corrections > 0),
)
_COST_FAMILIES = tuple(name for name, _, _ in _COST_SERIES)


def _field_costs(r: SelfRow) -> dict[str, list[str]]:
    """A target's lines of each per-field cost family (none without costs)."""
    costs = [(",".join(filter(None, (r.labels, f'field="{name}"'))), cost) for name, cost in r.stats.field_costs]
    return {name: [_series(name, labels, value(c)) for labels, c in costs if when(c)]
            for name, value, when in _COST_SERIES} if costs else {}


_LATE_SAMPLES_HELP = ("Samples of the field the engine took more than half a watch interval after they were due "
                      "(dcgm-collector's engine only).")
_READS_HELP = "Reads of the hardware the engine's value source made for the field (NVML source only)."
_READ_SECONDS_HELP = "Wall time the engine's value source spent reading the field from the hardware, in seconds."
_READ_INTERVAL_HELP = ("How often the engine truly reads a costly field (energy, PCIe replays) on its own reader "
                       "thread, in seconds; samples between serve the latest reading or an estimate.")
_LATE_READS_HELP = "Reads of a costly field made more than one read interval late."
_CORRECTION_HELP = ("For a field served as an estimate between true reads (energy: the instant power integrated): "
                    "the latest correction a true read made, estimate minus true value, in the field's unit.")
_CORRECTION_MAX_HELP = "The largest correction (absolute) a true read has made to the field's estimate so far."
_UP_HELP = "1 when the last read from DCGM succeeded and the newest sample is fresh, else 0."
_AGE_HELP = "Seconds since the newest sample DCGM took (its own timestamp)."
_SAMPLES_HELP = "Samples stored in the rings, blank ones included."
_RING_BYTES_HELP = ("Memory the rings hold, in bytes, by entity level: the arrays of the newest rows and the "
                    "compressed blocks of the older ones (grows with the history kept, up to the retention).")
_RING_SAMPLES_HELP = "Samples the rings hold now, blank ones included, by entity level."
_TICKS_HELP = "Sampler ticks run (one read of DCGM's sample cache each)."
_SKIPPED_HELP = "Sampler ticks skipped because an earlier tick overran them."
_TICK_FAILURES_HELP = ("Sampler ticks that failed with something other than a DCGM status (logged once per cause); "
                       "the sampler goes on.")
_ERRORS_HELP = "Failed DCGM calls, by DCGM status code."
_RECONNECTS_HELP = "Connections to the hostengine made again after one was lost."
_SCRAPE_HELP = "How long the previous scrape of this endpoint took to render and send, in seconds."
_BUILD_HELP = ("Version of dcgm-collector and of the DCGM library it loaded, and the source of the readings: "
               "source is dcgm (NVIDIA DCGM embedded), hostengine (nv-hostengines, -r), nvml (the package's engine "
               "on the driver's NVML) or sim (simulated GPUs); source_reason is one of given (a flag or variable "
               "named the source) | auto: libdcgm loaded | auto: no libdcgm, NVML loaded; always 1.")


def _self_headers() -> dict[str, Header]:
    specs = (
        ("dcgm_collector_up", "gauge", _UP_HELP),
        ("dcgm_collector_last_sample_age_seconds", "gauge", _AGE_HELP),
        ("dcgm_collector_samples_total", "counter", _SAMPLES_HELP),
        ("dcgm_collector_ring_bytes", "gauge", _RING_BYTES_HELP),
        ("dcgm_collector_ring_samples", "gauge", _RING_SAMPLES_HELP),
        ("dcgm_collector_ticks_total", "counter", _TICKS_HELP),
        ("dcgm_collector_skipped_ticks_total", "counter", _SKIPPED_HELP),
        ("dcgm_collector_tick_failures_total", "counter", _TICK_FAILURES_HELP),
        ("dcgm_collector_dcgm_errors_total", "counter", _ERRORS_HELP),
        ("dcgm_collector_reconnects_total", "counter", _RECONNECTS_HELP),
        ("dcgm_collector_scrape_duration_seconds", "gauge", _SCRAPE_HELP),
        ("dcgm_collector_build_info", "gauge", _BUILD_HELP),
        ("dcgm_collector_field_late_samples_total", "counter", _LATE_SAMPLES_HELP),
        ("dcgm_collector_field_reads_total", "counter", _READS_HELP),
        ("dcgm_collector_field_read_seconds_total", "counter", _READ_SECONDS_HELP),
        ("dcgm_collector_field_read_interval_seconds", "gauge", _READ_INTERVAL_HELP),
        ("dcgm_collector_field_late_reads_total", "counter", _LATE_READS_HELP),
        ("dcgm_collector_field_estimate_correction", "gauge", _CORRECTION_HELP),
        ("dcgm_collector_field_estimate_correction_max", "gauge", _CORRECTION_MAX_HELP),
    )
    return {name: Header.of(name, text, *family_types(kind, name)) for name, kind, text in specs}


_SELF_HEADERS = _self_headers()
