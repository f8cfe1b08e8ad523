"""The collector's own ``dcgm_collector_*`` metrics: up, sample age, counts, errors, build info."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dcgm_collector.collect.sampler import SamplerStats
from dcgm_collector.expose.text import Header, family_types

__all__ = ["SelfRow", "render_self_metrics"]


@dataclass(frozen=True)
class SelfRow:
    labels: str                    # the target's label pairs, rendered ("" when unlabelled)
    stats: SamplerStats
    up: bool
    reconnects: int | None = None  # None: not a remote target, no reconnects series


def _series(name: str, labels: str, value: object) -> str:
    return f"{name}{{{labels}}} {value}\n" if labels else f"{name} {value}\n"


def render_self_metrics(parts: list[str], openmetrics: bool, now_s: float, rows: Sequence[SelfRow],
                  scrape_s: float | None, build_info: str) -> None:
    def family(name: str, lines: list[str]) -> None:
        if lines:
            parts.append(_SELF_HEADERS[name].get(openmetrics))
            parts.extend(lines)

    family("dcgm_collector_up", [_series("dcgm_collector_up", r.labels, int(r.up)) for r in rows])
    family("dcgm_collector_last_sample_age_seconds", [
        _series("dcgm_collector_last_sample_age_seconds", r.labels,
                f"{max(0.0, now_s - r.stats.last_sample_time):f}")
        for r in rows if r.stats.last_sample_time is not None])
    family("dcgm_collector_samples_total",
           [_series("dcgm_collector_samples_total", r.labels, r.stats.samples) for r in rows])
    family("dcgm_collector_ticks_total",
           [_series("dcgm_collector_ticks_total", r.labels, r.stats.ticks) for r in rows])
    family("dcgm_collector_skipped_ticks_total",
           [_series("dcgm_collector_skipped_ticks_total", r.labels, r.stats.skipped_ticks) for r in rows])
    family("dcgm_collector_dcgm_errors_total", [
        _series("dcgm_collector_dcgm_errors_total", ",".join(filter(None, (
            r.labels, f'code="{code}",name="{names.get(code, code)}"'))), n)
        for r in rows if r.stats.errors_by_code
        for names in (r.stats.error_names,)   # the names once per target, not once per code
        for code, n in sorted(r.stats.errors_by_code.items())])
    family("dcgm_collector_reconnects_total", [
        _series("dcgm_collector_reconnects_total", r.labels, r.reconnects) for r in rows if r.reconnects is not None])
    if scrape_s is not None:
        family("dcgm_collector_scrape_duration_seconds",
               [f"dcgm_collector_scrape_duration_seconds {scrape_s:f}\n"])
    family("dcgm_collector_build_info", [f"dcgm_collector_build_info{{{build_info}}} 1\n"])


_UP_HELP = "1 when the last read from DCGM succeeded and the newest sample is fresh, else 0."
_AGE_HELP = "Seconds since the newest sample DCGM took (its own timestamp)."
_SAMPLES_HELP = "Samples stored in the rings, blank ones included."
_TICKS_HELP = "Sampler ticks run (one read of DCGM's sample cache each)."
_SKIPPED_HELP = "Sampler ticks skipped because an earlier tick overran them."
_ERRORS_HELP = "Failed DCGM calls, by DCGM status code."
_RECONNECTS_HELP = "Connections to the hostengine made again after one was lost."
_SCRAPE_HELP = "How long the previous scrape of this endpoint took to render and send, in seconds."
_BUILD_HELP = "Version of dcgm-collector and of the DCGM library it loaded; always 1."


def _self_headers() -> dict[str, Header]:
    specs = (
        ("dcgm_collector_up", "gauge", _UP_HELP),
        ("dcgm_collector_last_sample_age_seconds", "gauge", _AGE_HELP),
        ("dcgm_collector_samples_total", "counter", _SAMPLES_HELP),
        ("dcgm_collector_ticks_total", "counter", _TICKS_HELP),
        ("dcgm_collector_skipped_ticks_total", "counter", _SKIPPED_HELP),
        ("dcgm_collector_dcgm_errors_total", "counter", _ERRORS_HELP),
        ("dcgm_collector_reconnects_total", "counter", _RECONNECTS_HELP),
        ("dcgm_collector_scrape_duration_seconds", "gauge", _SCRAPE_HELP),
        ("dcgm_collector_build_info", "gauge", _BUILD_HELP),
    )
    return {name: Header.of(name, text, *family_types(kind, name)) for name, kind, text in specs}


_SELF_HEADERS = _self_headers()
