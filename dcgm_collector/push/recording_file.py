"""One flight recording on disk: a window of samples as a Parquet file, and its JSON sidecar.

The rows come from the sample model (dcgm_collector.series.samples), so each
sample carries the metric name /metrics serves its series under; the columns
are dcgm_collector.model.RECORDING_COLUMNS, which the engine's replay reads
too.  A file is written under a temporary name in the same directory,
flushed to disk and renamed, so a reader (or a crash) never sees half of one.

pyarrow is imported by :func:`load_pyarrow` only, when the recorder is on.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dcgm_collector.model import (
    PYARROW_INSTALL_HINT,
    RECORDING_COLUMNS,
    RECORDING_SIDECAR_SUFFIX,
    RECORDING_STATUSES,
    entity_group_name,
    recording_schema,
)
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED, SAMPLE_OK, RingRows
from dcgm_collector.rings.series_store import StoreRows
from dcgm_collector.series.samples import SampleModel, SeriesInfo

__all__ = ["RECORDING_PREFIX", "RECORDING_SUFFIX", "TEMP_PREFIX", "PyarrowMissing", "Window", "load_pyarrow",
           "window_columns", "write_recording"]

RECORDING_PREFIX = "recording-"
RECORDING_SUFFIX = ".parquet"
TEMP_PREFIX = ".recording-"      # files being written: hidden, and removed at start-up if a crash left one

_STATUS_NAMES = dict(zip((SAMPLE_OK, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED), RECORDING_STATUSES))


class PyarrowMissing(Exception):
    """The recorder is on but pyarrow is not installed; str() is the one line the user sees."""


def load_pyarrow() -> tuple[Any, Any]:
    """(pyarrow, pyarrow.parquet), or PyarrowMissing naming the extra to install."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as error:
        raise PyarrowMissing(f"--recorder-dir needs pyarrow ({error}): {PYARROW_INSTALL_HINT}") from None
    return pyarrow, pyarrow.parquet


@dataclass(frozen=True)
class Window:
    """What one recording holds: the samples of ``gpus`` (None: every entity) with since <= ts <= until."""

    since_us: int
    until_us: int
    gpus: frozenset[int] | None


def window_columns(model: SampleModel, window: Window) -> dict[str, np.ndarray]:
    """The window's samples, one per row, as numpy columns named after RECORDING_COLUMNS, oldest first.

    ``metric`` and ``field_name`` are indexes into the extra column ``names``
    (a window repeats a few names thousands of times); ``entity_group`` and
    ``status`` are the numbers (EntityType, SAMPLE_*).  ``gpu`` is -1 where
    the entity belongs to no GPU, ``value`` NaN where the sample is not OK; an
    ABSENT cell (no record at that row's time) is no sample.
    Series that /metrics serves several times (one copy per HPC job) are one
    column of a ring, and so one sample here.  The series of the model's
    stores (series that come and go) are read the same way, each read naming
    the series of the rows it copied.
    """
    parts: list[dict[str, np.ndarray]] = []
    names: list[str] = []          # metric and field names, indexed by the *_index columns
    name_index: dict[str, int] = {}

    def index(name: str) -> int:
        if name not in name_index:
            name_index[name] = len(names)
            names.append(name)
        return name_index[name]

    for ring in model.rings:
        chosen = _chosen(ring.series, window)
        if chosen:
            part = _rows_part(ring.rows_since(window.since_us), chosen, window, index)
            if part is not None:
                parts.append(part)
    for store in model.stores:
        rows, series = store.read(window.since_us)
        chosen = _chosen(series, window)
        if chosen:
            part = _store_part(rows, chosen, window, index)
            if part is not None:
                parts.append(part)
    parts.extend(_event_parts(model, window, index))
    if not parts:
        return {**{name: np.zeros(0, dtype=np.int64) for name, _ in RECORDING_COLUMNS}, "names": np.array(names)}
    joined = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    order = np.argsort(joined["time"], kind="stable")
    return {**{key: column[order] for key, column in joined.items()}, "names": np.array(names, dtype=object)}


def _chosen(series: Sequence[SeriesInfo], window: Window) -> list[SeriesInfo]:
    """The series of the window's GPUs, one per column (the first copy of a series served several times)."""
    chosen: dict[int, SeriesInfo] = {}
    for s in series:
        if s.column not in chosen and (window.gpus is None or s.gpu in window.gpus):
            chosen[s.column] = s
    return list(chosen.values())


def _rows_part(rows: RingRows, series: list[SeriesInfo], window: Window, index: Callable[[str], int]
               ) -> dict[str, np.ndarray] | None:
    """The samples of ``series`` (columns of ``rows``) stamped up to the window's end, one per row of the part."""
    keep = rows.ts <= window.until_us
    ts = rows.ts[keep]
    if not len(ts):
        return None
    columns = np.array([s.column for s in series], dtype=np.intp)
    status = rows.status[keep][:, columns].ravel()
    values = rows.values[keep][:, columns].ravel()
    n = len(ts)
    present = status != SAMPLE_ABSENT
    return {
        "time": np.repeat(ts, len(series))[present],
        "entity_group": np.tile([s.entity[0] for s in series], n)[present],
        "entity_id": np.tile([s.entity[1] for s in series], n)[present],
        "gpu": np.tile([-1 if s.gpu is None else s.gpu for s in series], n)[present],
        "field_id": np.tile([s.field_id for s in series], n)[present],
        "field_name": np.tile([index(s.field_name) for s in series], n)[present],
        "metric": np.tile([index(s.name) for s in series], n)[present],
        "value": values[present],
        "status": status[present],
    }


def _store_part(rows: StoreRows, series: list[SeriesInfo], window: Window, index: Callable[[str], int]
                ) -> dict[str, np.ndarray] | None:
    """The samples of ``series`` (by series number in ``rows``) stamped up to the window's end."""
    chosen = np.zeros(len(rows.keys), dtype=bool)
    chosen[[s.column for s in series]] = True
    keep = chosen[rows.series] & (rows.ts[rows.row] <= window.until_us)
    if not keep.any():
        return None

    def per_series(values: list[int]) -> np.ndarray:
        column = np.zeros(len(rows.keys), dtype=np.int64)
        column[[s.column for s in series]] = values
        return column[rows.series[keep]]

    return {
        "time": rows.ts[rows.row[keep]],
        "entity_group": per_series([s.entity[0] for s in series]),
        "entity_id": per_series([s.entity[1] for s in series]),
        "gpu": per_series([-1 if s.gpu is None else s.gpu for s in series]),
        "field_id": per_series([s.field_id for s in series]),
        "field_name": per_series([index(s.field_name) for s in series]),
        "metric": per_series([index(s.name) for s in series]),
        "value": rows.values[keep],
        "status": rows.status[keep],
    }


def _event_parts(model: SampleModel, window: Window, index) -> list[dict]:
    """The event fields' (XID) entries in the window, each a sample of its field with its own time."""
    by_field = {e.field_id: e for e in model.event_series}
    if not by_field:
        return []
    events = model.events_since(window.since_us)
    out = []
    for field_id, series in by_field.items():
        keep = (events.ts <= window.until_us) & (events.field_id == field_id)
        groups, entities = events.entity_group[keep], events.entity_id[keep]
        gpus = np.array([_or_none(model.gpu((int(g), int(e)))) for g, e in zip(groups, entities)], dtype=np.int64)
        if window.gpus is not None:
            mine = np.isin(gpus, list(window.gpus))
            keep_idx = np.flatnonzero(keep)[mine]
            groups, entities, gpus = groups[mine], entities[mine], gpus[mine]
        else:
            keep_idx = np.flatnonzero(keep)
        n = len(keep_idx)
        if not n:
            continue
        out.append({
            "time": events.ts[keep_idx],
            "entity_group": groups.astype(np.int64),
            "entity_id": entities.astype(np.int64),
            "gpu": gpus,
            "field_id": np.full(n, field_id),
            "field_name": np.full(n, index(series.field_name)),
            "metric": np.full(n, index(series.name)),
            "value": events.value[keep_idx].astype(np.float64),
            "status": np.full(n, SAMPLE_OK, dtype=np.int8),
        })
    return out


def _table(pa: Any, columns: dict[str, np.ndarray]) -> Any:
    names = pa.array(list(columns["names"]), type=pa.string())
    groups = sorted({int(g) for g in columns["entity_group"]})
    group_names = pa.array([entity_group_name(g) for g in groups], type=pa.string())
    group_index = np.searchsorted(np.array(groups, dtype=np.int64), columns["entity_group"]) if groups else []
    status_codes = sorted(_STATUS_NAMES)
    status_index = np.searchsorted(np.array(status_codes), columns["status"].astype(np.int64))
    status_names = pa.array([_STATUS_NAMES[c] for c in status_codes], type=pa.string())

    def text(indices: Any, dictionary: Any) -> Any:
        return pa.DictionaryArray.from_arrays(pa.array(indices, type=pa.int32()), dictionary).cast(pa.string())

    gpu = columns["gpu"].astype(np.int64)
    value = columns["value"].astype(np.float64)
    arrays = {
        "time": pa.array(columns["time"].astype(np.int64), type=pa.int64()),
        "entity_group": text(group_index, group_names),
        "entity_id": pa.array(columns["entity_id"].astype(np.int64), type=pa.int64()),
        "gpu": pa.array(gpu, type=pa.int64(), mask=gpu < 0),
        "field_id": pa.array(columns["field_id"].astype(np.int32), type=pa.int32()),
        "field_name": text(columns["field_name"], names),
        "metric": text(columns["metric"], names),
        "value": pa.array(value, type=pa.float64(), mask=np.isnan(value)),
        "status": text(status_index, status_names),
    }
    schema = recording_schema(pa)
    return pa.table([arrays[name].cast(schema.field(name).type) for name, _ in RECORDING_COLUMNS], schema=schema)


def _or_none(gpu: int | None) -> int:
    return -1 if gpu is None else gpu


def write_recording(directory: str, name: str, columns: dict[str, np.ndarray], sidecar: dict[str, Any]) -> int:
    """Write ``name`` and its sidecar into ``directory``, atomically; the bytes written.

    Both files are written under temporary names, flushed to disk, then
    renamed; on any failure the temporary files are removed and the error
    raised, so the directory never holds a partial recording.
    """
    pa, pq = load_pyarrow()
    table = _table(pa, columns)
    path = os.path.join(directory, name)
    sidecar_path = path + RECORDING_SIDECAR_SUFFIX
    temp = os.path.join(directory, f"{TEMP_PREFIX}{os.getpid()}-{name}.tmp")
    temp_sidecar = os.path.join(directory, f"{TEMP_PREFIX}{os.getpid()}-{name}{RECORDING_SIDECAR_SUFFIX}.tmp")
    try:
        pq.write_table(table, temp)
        _fsync(temp)
        with open(temp_sidecar, "w", encoding="utf-8") as out:
            json.dump(sidecar, out, indent=2)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.rename(temp, path)
        try:
            os.rename(temp_sidecar, sidecar_path)
        except OSError:
            _remove(path)
            raise
        _fsync_directory(directory)
    except BaseException:
        _remove(temp)
        _remove(temp_sidecar)
        raise
    return os.path.getsize(path) + os.path.getsize(sidecar_path)


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: str) -> None:
    # the renames are durable once the directory is flushed; a filesystem that cannot flush one is no failure
    with contextlib.suppress(OSError):
        _fsync(directory)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)
