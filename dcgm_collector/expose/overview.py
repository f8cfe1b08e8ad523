"""Each GPU's latest values at a glance, for the landing page's tiles.

The values are the newest good samples the rings hold (their rows over the
last FIRST_S, then for what that did not find over the last RECENT_S) of
the fields a tile shows, by field id:
utilisation, framebuffer used and free, GPU temperature and power.  A field the counters
do not serve, or one without a good sample in that span, is None (the page
shows "-").  Health is the worst result DCGM's recent health checks gave the
GPU when the counters ask for DCGM_EXP_GPU_HEALTH_STATUS, else the
collector's own state (``fallback``: "OK" while /health is 200).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from dcgm_collector.model import HEALTH_RESULTS, EntityType
from dcgm_collector.rings.ring import SAMPLE_OK
from dcgm_collector.series.registry import TargetSeries

__all__ = ["RECENT_S", "TILE_FIELDS", "GpuReading", "gpu_readings"]

RECENT_S = 120   # how far back the newest sample of a field is looked for (the slowest default watch is 30 s)
FIRST_S = 5      # looked for first: a ring's rows of 2 minutes at a 100 ms watch are 1,200 rows to copy

# by field id: DCGM's newer releases give some fields new names (DCGM_FI_DEV_GPU_TEMP_CELSIUS), the ids stay
UTIL, FB_FREE, FB_USED, GPU_TEMP, POWER = 203, 251, 252, 150, 155
TILE_FIELDS = (UTIL, FB_USED, FB_FREE, GPU_TEMP, POWER)


@dataclass(frozen=True)
class GpuReading:
    """One GPU's tile (serve.landing.GpuTile): its model and newest values, None where there is none."""

    gpu: int
    model: str
    util_pct: float | None
    fb_used_mib: float | None
    fb_total_mib: float | None
    temp_c: float | None
    power_w: float | None
    health: str


def _newest(target: TargetSeries, fields: Collection[int], span_s: int, now_us: int
            ) -> tuple[dict[tuple[int, int], float], dict[int, str]]:
    """(gpu, field id) -> newest good value of the whole GPU's series over the last ``span_s``, and gpu -> model
    name, read from the rings' rows (only the columns of those series)."""
    values: dict[tuple[int, int], float] = {}
    models: dict[int, str] = {}
    for ring in target.model.rings:
        chosen = [s for s in ring.series if s.field_id in fields and s.entity[0] == EntityType.GPU]
        if not chosen:
            continue   # a MIG instance's series: the tile is its GPU's
        for s in chosen:
            models.setdefault(s.gpu, dict(s.labels).get("modelName", ""))
        rows = ring.rows_since(now_us - span_s * 1_000_000)
        if not len(rows.ts):
            continue
        columns = [s.column for s in chosen]
        good = (rows.status[:, columns] == SAMPLE_OK) & ~np.isnan(rows.values[:, columns])
        found = good.any(axis=0)
        newest = len(rows.ts) - 1 - np.argmax(good[::-1], axis=0)
        for s, has, row in zip(chosen, found.tolist(), newest.tolist()):
            if has:
                values[(s.gpu, s.field_id)] = float(rows.values[row, s.column])
    return values, models


def _health(target: TargetSeries, gpu: int, fallback: str) -> str:
    state = target.view.health
    if state is None:
        return fallback
    results = [incident.health for _, incident in state.recent
               if (incident.entity_group, incident.entity_id) == (EntityType.GPU, gpu)]
    return max(results, key=lambda r: HEALTH_RESULTS.get(r, HEALTH_RESULTS["FAIL"]), default="PASS")


def gpu_readings(targets: Sequence[TargetSeries], fallback: str, now_us: int | None = None) -> list[GpuReading]:
    """A reading per GPU each sampling target samples whole, in target and GPU order."""
    now_us = time.time_ns() // 1000 if now_us is None else now_us
    out: list[GpuReading] = []
    for target in targets:
        values, models = _newest(target, TILE_FIELDS, FIRST_S, now_us)
        missing = [f for f in TILE_FIELDS if any((gpu, f) not in values for gpu in target.view.gpu_ids)]
        if missing:   # a field watched more slowly (or not served): only those, further back
            more, more_models = _newest(target, missing, RECENT_S, now_us)
            values = {**more, **values}
            models = {**more_models, **models}
        for gpu in target.view.gpu_ids:
            used, free = values.get((gpu, FB_USED)), values.get((gpu, FB_FREE))
            out.append(GpuReading(
                gpu=gpu, model=models.get(gpu, ""), util_pct=values.get((gpu, UTIL)),
                fb_used_mib=used, fb_total_mib=used + free if used is not None and free is not None else None,
                temp_c=values.get((gpu, GPU_TEMP)), power_w=values.get((gpu, POWER)),
                health=_health(target, gpu, fallback)))
    return out
