"""The ring content as JSON, for scripts: what ``GET /api/v1/samples`` answers.

A query names the fields (``field``: a DCGM field id, DCGM's field name or the
metric name /metrics serves it under; repeated or comma-separated), may
narrow the GPUs (``gpu``: ids, repeated or comma-separated; a GPU's MIG
instances and NvLinks count as that GPU's) and gives the time span
(``since``, ``until``: Unix seconds, RFC 3339, or a duration back from now
such as ``30s``, ``5m``, ``1h``; ``since`` defaults to one minute back,
``until`` to now).  The answer carries, per series, the name and labels
/metrics gives it and every sample the rings hold in the span, oldest first,
as ``[ts_us, value]`` pairs (``value`` null for a blank or not-supported
sample).  XID rows come from the event ring, each event a sample.

Answers are bounded: at most ``limit`` samples (default and cap
:data:`MAX_SAMPLES`), taken oldest first whole row by whole row; a cut
answer says ``"truncated": true`` and gives ``next_since`` to ask for the
rest.  A bad parameter is a :class:`QueryError` whose text is one line
naming it.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from dcgm_collector.collect.ring import SAMPLE_ABSENT, SAMPLE_OK
from dcgm_collector.expose.samples import SampleModel, SeriesInfo
from dcgm_collector.model import entity_group_name

__all__ = ["DEFAULT_SPAN_S", "MAX_SAMPLES", "HistoryQuery", "QueryError", "answer", "parse_query"]

MAX_SAMPLES = 200_000       # about 5 MB of JSON: enough for 8 GPUs x 30 fields x 10 Hz over 80 s
DEFAULT_SPAN_S = 60.0
_PARAMETERS = ("field", "gpu", "since", "until", "limit")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_LATEST_US = 253_402_300_799_000_000   # 9999-12-31T23:59:59Z


class QueryError(ValueError):
    """A parameter of the query is wrong; str() is one line naming it."""


@dataclass(frozen=True)
class HistoryQuery:
    fields: tuple[str, ...]        # as given: ids, DCGM names or metric names
    gpus: frozenset[int] | None    # None: every entity
    since_us: int
    until_us: int
    limit: int


def _values(query: Mapping[str, Sequence[str]], name: str) -> list[str]:
    return [item.strip() for value in query.get(name, ()) for item in value.split(",") if item.strip()]


def _one(query: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = query.get(name, ())
    if len(values) > 1:
        raise QueryError(f"{name}: give it once, not {len(values)} times")
    return values[0].strip() if values else None


def _time_us(text: str, name: str, now_us: int) -> int:
    """Unix seconds, RFC 3339, or a duration back from now; within what a ring's int64 µs stamps hold."""
    moment = _parse_time_us(text, name, now_us)
    if not 0 <= moment <= _LATEST_US:
        raise QueryError(f"{name}: {text!r} is out of range (before 1970 or after the year 9999)")
    return moment


def _parse_time_us(text: str, name: str, now_us: int) -> int:
    match = _DURATION.match(text)
    if match:
        return now_us - round(float(match.group(1)) * _UNIT_S[match.group(2)] * 1e6)
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or seconds < 0:
            raise QueryError(f"{name}: {text!r} is not a time")
        return round(seconds * 1e6)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise QueryError(f"{name}: {text!r} is not Unix seconds, an RFC 3339 time or a duration like 30s, 5m, "
                         "1h") from None
    if moment.tzinfo is None:
        raise QueryError(f"{name}: {text!r} has no time zone (add Z or +00:00)")
    return round(moment.timestamp() * 1e6)


def parse_query(query: Mapping[str, Sequence[str]], now_us: int | None = None) -> HistoryQuery:
    """The query string's parameters, checked; QueryError names the first wrong one."""
    now_us = time.time_ns() // 1000 if now_us is None else now_us
    unknown = sorted(set(query) - set(_PARAMETERS))
    if unknown:
        raise QueryError(f"{unknown[0]}: unknown parameter (known: {', '.join(_PARAMETERS)})")
    fields = tuple(_values(query, "field"))
    if not fields:
        raise QueryError("field: missing; name one or more fields by id, DCGM name or metric name "
                         "(field=DCGM_FI_DEV_POWER_USAGE or field=155)")
    gpus = None
    if "gpu" in query:
        try:
            gpus = frozenset(int(g) for g in _values(query, "gpu"))
        except ValueError:
            raise QueryError(f"gpu: {','.join(query['gpu'])!r} is not a list of GPU ids") from None
        if any(g < 0 for g in gpus) or not gpus:
            raise QueryError(f"gpu: {','.join(query['gpu'])!r} is not a list of GPU ids")
    until_text, since_text = _one(query, "until"), _one(query, "since")
    until_us = _time_us(until_text, "until", now_us) if until_text else now_us
    since_us = _time_us(since_text, "since", now_us) if since_text else until_us - round(DEFAULT_SPAN_S * 1e6)
    if since_us > until_us:
        raise QueryError(f"since: {since_text!r} is after until")
    limit_text = _one(query, "limit")
    limit = MAX_SAMPLES
    if limit_text:
        try:
            limit = int(limit_text)
        except ValueError:
            raise QueryError(f"limit: {limit_text!r} is not a whole number") from None
        if not 1 <= limit <= MAX_SAMPLES:
            raise QueryError(f"limit: {limit} is out of range [1, {MAX_SAMPLES}]")
    return HistoryQuery(fields, gpus, since_us, until_us, limit)


def _wanted(series_name: str, field_id: int, field_name: str, fields: tuple[str, ...]) -> bool:
    return any(f == series_name or f == field_name or f == str(field_id) for f in fields)


def _entity_json(entity: tuple[int, int]) -> dict[str, object]:
    return {"group": entity_group_name(entity[0]), "id": entity[1]}


def answer(models: Sequence[SampleModel], query: HistoryQuery) -> bytes:
    """The JSON body for a checked query over the sample models of the targets."""
    out: list[dict[str, object]] = []
    budget = query.limit
    truncated = False
    next_since: int | None = None
    known = False
    for model in models:
        for ring in model.rings:
            chosen = [s for s in ring.series if _wanted(s.name, s.field_id, s.field_name, query.fields)
                      and (query.gpus is None or s.gpu in query.gpus)]
            known = known or any(_wanted(s.name, s.field_id, s.field_name, query.fields) for s in ring.series)
            if not chosen:
                continue
            rows = ring.rows_since(query.since_us)
            inside = rows.ts <= query.until_us
            ts, values, status = rows.ts[inside], rows.values[inside], rows.status[inside]
            n_rows = len(ts)
            if n_rows * len(chosen) > budget:   # whole rows, oldest first
                keep = budget // len(chosen)
                truncated = True
                if keep < n_rows:
                    cut = int(ts[keep])
                    next_since = cut if next_since is None else min(next_since, cut)
                ts, values, status = ts[:keep], values[:keep], status[:keep]
            budget -= len(ts) * len(chosen)
            out.extend(_series_json(s, ts, values, status) for s in chosen)
        events = model.events_since(query.since_us) if model.event_series else None
        for family in model.event_series:
            if not _wanted(family.name, family.field_id, family.field_name, query.fields):
                continue
            known = True
            assert events is not None
            mask = (events.field_id == family.field_id) & (events.ts <= query.until_us)
            by_series: dict[tuple, dict[str, object]] = {}
            for i in np.flatnonzero(mask).tolist():
                entity = (int(events.entity_group[i]), int(events.entity_id[i]))
                value = int(events.value[i])
                gpu = model.gpu(entity)
                if query.gpus is not None and gpu not in query.gpus:
                    continue
                if budget <= 0:
                    truncated = True
                    cut = int(events.ts[i])
                    next_since = cut if next_since is None else min(next_since, cut)
                    break
                for labels in family.labels(entity, value):
                    entry = by_series.setdefault((entity, labels), {
                        "metric": family.name, "labels": dict(labels), "field_id": family.field_id,
                        "field_name": family.field_name, "gpu": gpu, "entity": _entity_json(entity), "samples": []})
                    entry["samples"].append([int(events.ts[i]), value])   # type: ignore[union-attr]
                budget -= 1
            out.extend(by_series.values())
    if not known:
        raise QueryError(f"field: {','.join(query.fields)} is not served here (name a field of the counters file "
                         "by id, DCGM name or metric name)")
    data: dict[str, object] = {"since_us": query.since_us, "until_us": query.until_us,
                               "columns": ["ts_us", "value"], "truncated": truncated, "series": out}
    if next_since is not None:
        data["next_since"] = next_since / 1e6
    return json.dumps({"status": "success", "data": data}, separators=(",", ":"), allow_nan=False).encode()


def _series_json(series: SeriesInfo, ts: np.ndarray, values: np.ndarray, status: np.ndarray) -> dict[str, object]:
    cells = status[:, series.column]
    ok = cells == SAMPLE_OK
    present = cells != SAMPLE_ABSENT     # a row with no record of this series is no sample of it
    numbers = np.where(ok, values[:, series.column], 0.0)
    shown = numbers.astype(np.int64).tolist() if series.integer else numbers.tolist()
    samples = [[t, v if good else None]
               for t, v, good in zip(ts[present].tolist(), np.asarray(shown)[present].tolist(), ok[present].tolist())]
    return {"metric": series.name, "labels": dict(series.labels), "field_id": series.field_id,
            "field_name": series.field_name, "gpu": series.gpu, "entity": _entity_json(series.entity),
            "samples": samples}
