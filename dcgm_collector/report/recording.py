"""A flight recording read back for its report: the sidecar's triggers and GPUs, and one series per GPU and signal.

The Parquet file holds one row per sample (dcgm_collector.model.RECORDING_COLUMNS);
here they become, per GPU and field id, the sample times in seconds relative to
the first trigger and the values.  A field sampled per NvLink is summed over
the GPU's links at each time (the report charts a GPU's links as one count).
pyarrow is imported by :func:`read_recording` only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from dcgm_collector.model import PYARROW_INSTALL_HINT, RECORDING_SIDECAR_SUFFIX

__all__ = ["GpuInfo", "Recording", "RecordingError", "Series", "Trigger", "iso_seconds", "read_recording"]


class RecordingError(Exception):
    """A recording that cannot be read; str() is the one line the user sees."""


@dataclass(frozen=True)
class Series:
    """One signal of one GPU: times in seconds relative to the first trigger, and the values (oldest first)."""

    t: np.ndarray
    v: np.ndarray


@dataclass(frozen=True)
class Trigger:
    kind: str
    t: float              # seconds after the first trigger
    time: str             # as the sidecar writes it (ISO 8601 UTC)
    gpus: tuple[int, ...]
    detail: str


@dataclass(frozen=True)
class GpuInfo:
    gpu: int
    model: str
    uuid: str


@dataclass
class Recording:
    """What the report reads of one recording."""

    path: str
    triggers: list[Trigger]
    more_triggers: int
    gpus: list[GpuInfo]
    host: str
    since: float          # the window, in seconds relative to the first trigger
    until: float
    rows: int
    series: dict[tuple[int, int], Series] = field(default_factory=dict)   # (gpu, field id) -> samples
    field_names: dict[int, str] = field(default_factory=dict)             # field id -> DCGM name

    def get(self, gpu: int, field_id: int) -> Series | None:
        return self.series.get((gpu, field_id))

    def gpu_numbers(self) -> list[int]:
        return sorted({g.gpu for g in self.gpus} | {gpu for gpu, _ in self.series})

    def has_field(self, field_id: int) -> bool:
        return any(f == field_id for _, f in self.series)


def iso_seconds(text: str) -> float:
    """Seconds since the epoch of a sidecar time ("2026-05-04T10:31:07.412000Z")."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _load_pyarrow() -> Any:
    try:
        import pyarrow.parquet
    except ImportError as error:
        raise RecordingError(f"reading a recording needs pyarrow ({error}): {PYARROW_INSTALL_HINT}") from None
    return pyarrow.parquet


def _sidecar(path: str) -> dict:
    sidecar = path + RECORDING_SIDECAR_SUFFIX
    try:
        with open(sidecar, encoding="utf-8") as text:
            data = json.load(text)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise RecordingError(f"{sidecar}: cannot read the sidecar: {error}") from None
    if not isinstance(data, dict):
        raise RecordingError(f"{sidecar}: the sidecar is not a JSON object")
    return data


def _triggers(side: dict, sidecar: str, first_s: float) -> list[Trigger]:
    out = []
    listed = side.get("triggers") or ([side["trigger"]] if isinstance(side.get("trigger"), dict) else [])
    gpus_of_first = tuple((side.get("trigger") or {}).get("gpus") or ())
    for i, t in enumerate(listed):
        try:
            at = iso_seconds(t["time"]) - first_s
        except (KeyError, TypeError, ValueError):
            raise RecordingError(f"{sidecar}: triggers[{i}]: no readable time") from None
        gpus = tuple(t.get("gpus") or (gpus_of_first if i == 0 else ()))
        out.append(Trigger(str(t.get("kind", "?")), at, str(t["time"]), gpus, str(t.get("detail", ""))))
    return out


def read_recording(path: str) -> Recording:
    """The recording at ``path`` with its sidecar (``path`` + .json); RecordingError with one line if unreadable."""
    pq = _load_pyarrow()
    if not os.path.isfile(path):
        raise RecordingError(f"{path}: no such recording file")
    side = _sidecar(path)
    sidecar = path + RECORDING_SIDECAR_SUFFIX
    try:
        table = pq.read_table(path, columns=["time", "entity_group", "entity_id", "gpu", "field_id", "field_name",
                                             "value", "status"])
    except Exception as error:   # pyarrow raises several kinds for a file that is not a recording
        raise RecordingError(f"{path}: not a flight recording: {error}") from None
    times = table.column("time").cast("int64").to_numpy(zero_copy_only=False) / 1e6
    first_s = None
    if isinstance(side.get("trigger"), dict) and "time" in side["trigger"]:
        try:
            first_s = iso_seconds(side["trigger"]["time"])
        except (TypeError, ValueError):
            raise RecordingError(f"{sidecar}: trigger: no readable time") from None
    if first_s is None:   # no sidecar: the time axis starts at the first sample
        first_s = float(times.min()) if len(times) else 0.0
    triggers = _triggers(side, sidecar, first_s)
    gpus = [GpuInfo(int(g.get("gpu", -1)), str(g.get("model", "")), str(g.get("uuid", "")))
            for g in side.get("gpus") or [] if isinstance(g, dict)]
    rec = Recording(
        path=path, triggers=triggers, more_triggers=int(side.get("more_triggers", 0)), gpus=gpus,
        host=str(side.get("host", "")),
        since=_relative(side.get("since"), first_s, times.min() - first_s if len(times) else 0.0),
        until=_relative(side.get("until"), first_s, times.max() - first_s if len(times) else 0.0),
        rows=table.num_rows)
    _fill_series(rec, table, times - first_s)
    return rec


def _relative(text: Any, first_s: float, otherwise: float) -> float:
    try:
        return iso_seconds(text) - first_s
    except (AttributeError, TypeError, ValueError):
        return float(otherwise)


def _fill_series(rec: Recording, table: Any, t: np.ndarray) -> None:
    gpu_col = table.column("gpu").to_numpy(zero_copy_only=False)
    gpu = np.where(np.isnan(gpu_col.astype(np.float64)), -1, gpu_col).astype(np.int64)
    field_id = table.column("field_id").to_numpy(zero_copy_only=False).astype(np.int64)
    group = np.array(table.column("entity_group").to_pylist(), dtype=object)
    value = table.column("value").to_numpy(zero_copy_only=False).astype(np.float64)
    ok = np.array(table.column("status").to_pylist(), dtype=object) == "OK"
    names = table.column("field_name").to_pylist()
    for f, n in zip(field_id, names):
        rec.field_names.setdefault(int(f), n)
    keep = ok & (gpu >= 0) & ~np.isnan(value)
    for g, f in sorted({(int(a), int(b)) for a, b in zip(gpu[keep], field_id[keep])}):
        mine = keep & (gpu == g) & (field_id == f)
        own = mine & (group == "GPU")
        if own.any():   # the GPU's own sample; a field also sampled per link is the GPU's total then
            rec.series[(g, f)] = _ordered(t[own], value[own])
        else:           # per link (or instance): summed per time
            times, where = np.unique(t[mine], return_inverse=True)
            rec.series[(g, f)] = Series(times, np.bincount(where, weights=value[mine]))


def _ordered(t: np.ndarray, v: np.ndarray) -> Series:
    order = np.argsort(t, kind="stable")
    return Series(t[order], v[order])
