"""A flight recording read back for its report: the sidecar's triggers and GPUs, and one series per GPU and signal.

The Parquet file holds one row per sample (dcgm_collector.model.RECORDING_COLUMNS);
here they become, per GPU and field id, the sample times in seconds relative to
the first trigger and the values.  A field sampled per NvLink is summed over
the GPU's links at each time (the report charts a GPU's links as one count).
The file and its sidecar are read through dcgm_collector.recordings, as the
engine's replay reads them; pyarrow is imported by :func:`read_recording` only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from dcgm_collector.model import PYARROW_INSTALL_HINT
from dcgm_collector.recordings.rows import GROUPS, OK, load_rows
from dcgm_collector.recordings.sidecar import read_sidecar, sidecar_path

__all__ = ["GpuInfo", "Recording", "RecordingError", "Series", "Trigger", "iso_seconds", "read_recording"]

_GPU_GROUP = GROUPS.index("GPU")


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
    pods: tuple[dict, ...] = ()        # the pods (or HPC jobs) on its series in the window
    processes: tuple[dict, ...] = ()   # its processes in the window (--processes)


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
    earlier: list[Trigger] = field(default_factory=list)   # triggers in the window before the first (warnings)

    def get(self, gpu: int, field_id: int) -> Series | None:
        return self.series.get((gpu, field_id))

    def gpu_numbers(self) -> list[int]:
        return sorted({g.gpu for g in self.gpus} | {gpu for gpu, _ in self.series})

    def has_field(self, field_id: int) -> bool:
        return any(f == field_id for _, f in self.series)


def iso_seconds(text: str) -> float:
    """Seconds since the epoch of a sidecar time ("2026-05-04T10:31:07.412000Z")."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _check_pyarrow() -> None:
    try:
        import pyarrow.parquet  # noqa: F401 - only whether it is there: recordings.rows reads with it
    except ImportError as error:
        raise RecordingError(f"reading a recording needs pyarrow ({error}): {PYARROW_INSTALL_HINT}") from None


def _triggers(side: dict, sidecar: Path, first_s: float, key: str = "triggers") -> list[Trigger]:
    out = []
    listed = side.get(key) or ([side["trigger"]] if key == "triggers" and isinstance(side.get("trigger"), dict)
                               else [])
    if not isinstance(listed, list):
        raise RecordingError(f"{sidecar}: '{key}' must be a list")
    gpus_of_first = tuple((side.get("trigger") or {}).get("gpus") or ()) if key == "triggers" else ()
    for i, t in enumerate(listed):
        try:
            at = iso_seconds(t["time"]) - first_s
        except (KeyError, TypeError, ValueError):
            raise RecordingError(f"{sidecar}: {key}[{i}]: no readable time") from None
        gpus = tuple(t.get("gpus") or (gpus_of_first if i == 0 else ()))
        out.append(Trigger(str(t.get("kind", "?")), at, str(t["time"]), gpus, str(t.get("detail", ""))))
    return out


def read_recording(path: str) -> Recording:
    """The recording at ``path`` with its sidecar (``path`` + .json); RecordingError with one line if unreadable.

    The file and the sidecar are read as the replay reads them (dcgm_collector.recordings): safely opened,
    bounded, checked by type."""
    _check_pyarrow()
    if not os.path.isfile(path):
        raise RecordingError(f"{path}: no such recording file")
    try:
        rows = load_rows(Path(path))
    except ValueError as error:
        problem = str(error).removeprefix(f"{path}: ")
        raise RecordingError(f"{path}: not a flight recording: {problem}") from None
    try:
        side = read_sidecar(Path(path)) or {}
    except ValueError as error:
        raise RecordingError(str(error)) from None
    times = rows["time"] / 1e6
    trigger = side.get("trigger")
    # no sidecar, or no trigger time: the time axis starts at the first sample
    first_s = trigger["time_us"] / 1e6 if isinstance(trigger, dict) and "time_us" in trigger else float(times.min())
    gpus = [GpuInfo(int(g.get("gpu", -1)), str(g.get("model", "")), str(g.get("uuid", "")),
                    _dicts(g.get("pods")), _dicts(g.get("processes")))
            for g in side.get("gpus") or []]
    rec = Recording(
        path=path, triggers=_triggers(side, sidecar_path(Path(path)), first_s),
        earlier=_triggers(side, sidecar_path(Path(path)), first_s, "earlier"),
        more_triggers=int(side.get("more_triggers", 0)), gpus=gpus, host=str(side.get("host", "")),
        since=_relative(side.get("since"), first_s, times.min() - first_s),
        until=_relative(side.get("until"), first_s, times.max() - first_s),
        rows=len(times))
    _fill_series(rec, rows, times - first_s)
    return rec


def _dicts(listed: Any) -> tuple[dict, ...]:
    """The objects of a sidecar list (anything else in it, or a list that is not one, is left out)."""
    return tuple(item for item in listed if isinstance(item, dict)) if isinstance(listed, list) else ()


def _relative(text: Any, first_s: float, otherwise: float) -> float:
    try:
        return iso_seconds(text) - first_s
    except (AttributeError, TypeError, ValueError):
        return float(otherwise)


def _fill_series(rec: Recording, rows: dict[str, np.ndarray], t: np.ndarray) -> None:
    gpu = np.where(np.isnan(rows["gpu"]), -1, rows["gpu"]).astype(np.int64)
    field_id, value = rows["field_id"], rows["value"]
    own_rows = rows["entity_group"] == _GPU_GROUP
    keep = (rows["status"] == OK) & (gpu >= 0) & ~np.isnan(value)
    for g, f in sorted({(int(a), int(b)) for a, b in zip(gpu[keep], field_id[keep])}):
        mine = keep & (gpu == g) & (field_id == f)
        own = mine & own_rows
        if own.any():   # the GPU's own sample; a field also sampled per link is the GPU's total then
            rec.series[(g, f)] = _ordered(t[own], value[own])
        else:           # per link (or instance): summed per time
            times, where = np.unique(t[mine], return_inverse=True)
            rec.series[(g, f)] = Series(times, np.bincount(where, weights=value[mine]))


def _ordered(t: np.ndarray, v: np.ndarray) -> Series:
    order = np.argsort(t, kind="stable")
    return Series(t[order], v[order])
