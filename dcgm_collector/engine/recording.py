"""A flight recording played back by the simulated engine.

A flight recording (the Parquet file ``dcgm_collector.model.RECORDING_COLUMNS``
describes, plus its ``<file>.json`` sidecar) becomes a scenario the engine
already understands: one ``[[gpu]]`` per recorded GPU, of the recorded model,
replaying a CSV trace of its recorded fields by DCGM field id on their
timestamps (the node's time 0 is the recording's first sample, and the last
readings hold after its end), the XID rows as ``xid`` events at their own
times, and a GPU whose readings all go blank as a ``lost`` event.  What the
recording lacks comes from the model.  pyarrow is imported only here, when a
recording is replayed.  The rows and the sidecar are read, and every value
checked, by ``recording_rows`` and ``recordings.sidecar``: what the scenario
hands the engine is already known to be in range, so no error names the
engine's temporary files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dcgm_collector.engine.recording_rows import (
    GROUPS,
    MAX_GPUS,
    MAX_SPAN_US,
    OK,
    XID_FIELD,
    read_rows,
    unknown_fields,
)
from dcgm_collector.files import open_regular_file
from dcgm_collector.model import RECORDING_STATUSES
from dcgm_collector.recordings.sidecar import read_sidecar, sidecar_path

__all__ = ["RecordingScenario", "is_recording", "write_scenario"]

PARQUET_MAGIC = b"PAR1"
NVLINK_ERROR_FIELD = 450        # the other event field: the simulator has no such events to replay
BLANK = RECORDING_STATUSES.index("BLANK")
MAX_SWITCHES, MAX_CPUS, MAX_MIG_INSTANCES = 12, 8, 7
MAX_TRACE_FIELDS = 1023         # replay.c's columns, less the time
MAX_EVENTS = 4096               # scenario.c's [[event]] tables
MAX_BURST = 10_000              # scenario.c's count of one XID at one time
ENGINE_OWN_FIELDS = (156,)      # replay.c leaves these to the node: the energy integrates the replayed power
# the sim's model for a recorded name, by the chip in it ("NVIDIA H100 80GB HBM3" -> H100)
MODEL_CHIPS = (("H200", "H200"), ("H100", "H100"), ("H800", "H100"), ("A100", "A100"), ("A800", "A100"),
               ("L4", "L4"), ("T4", "T4"))
DEFAULT_MODEL = "H100"
MIG_MODELS = frozenset({"H100", "H200", "A100"})
_IDENTITY = re.compile(r"[!#-\[\]-~]+")     # printable, no blank, quote or backslash: a TOML string as is
GPU = GROUPS.index("GPU")


@dataclass(frozen=True)
class RecordingScenario:
    """The scenario written for a recording, and what the replay could not keep (one line each)."""

    path: Path
    warnings: tuple[str, ...]


def is_recording(spec: str) -> bool:
    """Whether a --sim spec names a flight recording: a ``.parquet`` name, or a file that starts as Parquet does."""
    if spec.lower().endswith(".parquet"):
        return True
    try:
        fd = open_regular_file(spec)    # a FIFO or a device is no recording, and must not hold up the check
    except OSError:
        return False
    with open(fd, "rb") as f:
        return f.read(4) == PARQUET_MAGIC


@dataclass
class _Gpu:
    index: int
    model: str = DEFAULT_MODEL
    uuid: str | None = None
    pci_bus_id: str | None = None
    mig_instances: int = 0
    trace: str | None = None        # file name of its trace in the scenario's folder
    lost_at_s: float | None = None


def write_scenario(path: str | Path, folder: Path) -> RecordingScenario:
    """Write a scenario replaying the recording at ``path`` into ``folder``; ValueError ``path: problem`` if bad."""
    path = Path(path)
    warnings: list[str] = []
    sidecar = read_sidecar(path)
    if sidecar is None:
        warnings.append(f"{path}: no sidecar {sidecar_path(path).name}: the GPUs are the recorded rows' and their "
                        f"model is taken to be the {DEFAULT_MODEL}")
    rows = _known_rows(path, read_rows(path), warnings)
    t0_us = int(rows["time"].min())
    gpus = _gpus(path, rows, sidecar, warnings)
    readings = _readings_by_gpu(rows)
    for gpu in gpus.values():
        gpu.trace = _write_trace(readings.get(gpu.index), gpu.index, t0_us, folder)
        if gpu.trace is None and gpu.index in _row_gpus(rows):
            warnings.append(f"{path}: GPU {gpu.index} has no readings recorded: its values come from the model "
                            "(idle)")
    _find_lost_gpus(path, rows, readings, sidecar, gpus, t0_us, warnings)
    events = _xid_events(rows, t0_us)
    if len(events) + sum(g.lost_at_s is not None for g in gpus.values()) > MAX_EVENTS:
        warnings.append(f"{path}: {len(events)} XID events: only the first {MAX_EVENTS // 2} are replayed")
        events = events[:MAX_EVENTS // 2]
    switches = _count_entities(rows, "SWITCH", MAX_SWITCHES)
    cpus = _count_entities(rows, "CPU", MAX_CPUS)
    skipped = sorted(GROUPS[code] for code in np.unique(rows["entity_group"]) if code != GPU)
    if ((rows["field_id"] == NVLINK_ERROR_FIELD) & (rows["status"] == OK)).any():
        warnings.append(f"{path}: the NvLink error events (field {NVLINK_ERROR_FIELD}) are not replayed")
    if skipped:
        warnings.append(f"{path}: the readings of {', '.join(skipped)} entities are not replayed: they come from "
                        "the model")
    scenario = folder / "scenario.toml"
    scenario.write_text(_scenario_text(path, gpus, events, switches, cpus), encoding="utf-8")
    return RecordingScenario(scenario, tuple(warnings))


def _known_rows(path: Path, rows: dict[str, np.ndarray], warnings: list[str]) -> dict[str, np.ndarray]:
    """The rows of the fields the replay knows; a warning names the others."""
    unknown = unknown_fields(rows["field_id"])
    if not unknown:
        return rows
    shown = ", ".join(map(str, unknown[:10])) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
    warnings.append(f"{path}: field {shown}: not a numeric DCGM field this version knows, not replayed")
    keep = ~np.isin(rows["field_id"], unknown)
    if not keep.any():
        raise ValueError(f"{path}: no field this version knows is recorded")
    return {name: column[keep] for name, column in rows.items()}


# ---- building the node -------------------------------------------------------------------------

def _row_gpus(rows: dict[str, np.ndarray]) -> set[int]:
    gpu = rows["gpu"]
    return {int(g) for g in np.unique(gpu[~np.isnan(gpu)])}


def sim_model(name: str) -> str | None:
    """The simulator's model key for a recorded model name, or None when it simulates none of that chip."""
    upper = name.upper()
    for chip, key in MODEL_CHIPS:
        if re.search(rf"(?<![A-Z0-9]){chip}(?![A-Z0-9])", upper):
            return key
    return None


def _gpus(path: Path, rows: dict[str, np.ndarray], sidecar: dict[str, Any] | None,
          warnings: list[str]) -> dict[int, _Gpu]:
    listed = {int(entry["gpu"]): entry for entry in (sidecar or {}).get("gpus", [])}
    indexes = sorted(_row_gpus(rows) | set(listed))
    if not indexes:
        raise ValueError(f"{path}: no GPU in the recording (no row names a gpu, nor does the sidecar)")
    gpus = {i: _Gpu(i) for i in range(indexes[-1] + 1)}
    missing = [i for i in gpus if i not in indexes]
    if missing:
        warnings.append(f"{path}: GPU {', '.join(map(str, missing))} not recorded: simulated idle, so that the "
                        "recorded GPUs keep their numbers")
    unknown: dict[str, list[int]] = {}
    seen: set[str] = set()
    for index, entry in listed.items():
        # the recorded identity, so that the replay's series carry the real GPU's labels
        for key, room in (("uuid", 63), ("pci_bus_id", 31)):
            text = entry.get(key)
            if isinstance(text, str) and _IDENTITY.fullmatch(text) and len(text) <= room and text not in seen:
                seen.add(text)
                setattr(gpus[index], key, text)
        recorded = entry.get("model") or ""
        key = sim_model(recorded)
        if key is None:
            unknown.setdefault(recorded, []).append(index)
        else:
            gpus[index].model = key
    for recorded, which in unknown.items():
        warnings.append(f"{path}: GPU {', '.join(map(str, which))}: model {recorded!r} is not simulated: replayed "
                        f"as an {DEFAULT_MODEL} (its recorded readings are replayed, the rest follow the "
                        f"{DEFAULT_MODEL}'s model)")
    for gpu in gpus.values():
        if gpu.model in MIG_MODELS:
            gpu.mig_instances = min(MAX_MIG_INSTANCES, _count_entities(rows, "GPU_I", MAX_GPUS * 8, gpu.index))
    return gpus


def _count_entities(rows: dict[str, np.ndarray], group: str, most: int, gpu: int | None = None) -> int:
    mask = rows["entity_group"] == GROUPS.index(group)
    if gpu is not None:
        mask &= rows["gpu"] == gpu
    return min(most, len(np.unique(rows["entity_id"][mask])))


@dataclass(frozen=True)
class _Readings:
    """One GPU's readings (its GPU entity's rows but the events), in time order."""

    time: np.ndarray
    field_id: np.ndarray
    value: np.ndarray
    status: np.ndarray


def _readings_by_gpu(rows: dict[str, np.ndarray]) -> dict[int, _Readings]:
    mask = (rows["entity_group"] == GPU) & ~np.isin(rows["field_id"], (XID_FIELD, NVLINK_ERROR_FIELD))
    gpu, time = rows["gpu"][mask], rows["time"][mask]
    order = np.lexsort((time, gpu))          # by GPU, then time; stable, so equal times keep file order
    gpu = gpu[order]
    columns = {name: rows[name][mask][order] for name in ("time", "field_id", "value", "status")}
    indexes, starts = np.unique(gpu, return_index=True)
    ends = [*starts[1:], len(gpu)]
    return {int(index): _Readings(**{name: column[a:b] for name, column in columns.items()})
            for index, a, b in zip(indexes, starts, ends)}


def _write_trace(readings: _Readings | None, gpu: int, t0_us: int, folder: Path) -> str | None:
    if readings is None:
        return None
    ok = (readings.status == OK) & ~np.isin(readings.field_id, ENGINE_OWN_FIELDS)
    if not ok.any():
        return None
    t_ms = (readings.time[ok] - t0_us) // 1000   # one row per millisecond the GPU was read
    fields, values = readings.field_id[ok], readings.value[ok]
    columns, column_of = np.unique(fields, return_inverse=True)
    columns, keep = columns[:MAX_TRACE_FIELDS], column_of < MAX_TRACE_FIELDS
    times, row_of = np.unique(t_ms[keep], return_inverse=True)
    table = np.full((len(times) + (times[0] > 0), len(columns) + 1), np.nan)
    first = int(times[0] > 0)       # the replay starts at its first row: make that the recording's start
    table[0, 0] = 0.0
    table[first:, 0] = times / 1000.0
    table[row_of + first, column_of[keep] + 1] = values[keep]   # the later of two readings in one ms wins
    name = f"gpu{gpu}.csv"
    header = ",".join(["t", *map(str, columns.tolist())])
    np.savetxt(folder / name, table, fmt=["%.3f"] + ["%.17g"] * len(columns), delimiter=",", header=header,
               comments="")
    return name


def _find_lost_gpus(path: Path, rows: dict[str, np.ndarray], readings: dict[int, _Readings],
                    sidecar: dict[str, Any] | None, gpus: dict[int, _Gpu], t0_us: int, warnings: list[str]) -> None:
    """Which GPUs fell off the bus during the recording, and when (see _lost_at_us)."""
    readings_end_us = max((int(r.time[-1]) for r in readings.values()), default=None)
    for gpu in gpus.values():
        if gpu.index not in readings:
            continue
        lost_at_us = _lost_at_us(rows, readings[gpu.index], gpu.index, readings_end_us)
        if lost_at_us is not None:
            # one interval after a last reading at the end of the longest replay is still within it
            gpu.lost_at_s = min(max(0, lost_at_us - t0_us), MAX_SPAN_US) / 1e6
    trigger = (sidecar or {}).get("trigger") or {}
    if trigger.get("kind") == "lost" and "time_us" in trigger:
        if trigger["time_us"] - t0_us > MAX_SPAN_US:
            raise ValueError(f"{sidecar_path(path)}: trigger.time {trigger['time']} is more than "
                             f"{MAX_SPAN_US // 86_400_000_000} days after the recording's first sample")
        for index in trigger.get("gpus", []):
            gpu = gpus.get(index)
            if gpu is None or gpu.lost_at_s is not None:
                continue
            mine = readings.get(index)
            if mine is not None and (mine.time[mine.status == OK] > trigger["time_us"]).any():
                warnings.append(f"{path}: the trigger says GPU {index} was lost at {trigger['time']}, but it has "
                                "readings after that: it is replayed as still there")
                continue
            gpu.lost_at_s = max(0.0, (trigger["time_us"] - t0_us) / 1e6)


def _lost_at_us(rows: dict[str, np.ndarray], readings: _Readings, index: int,
                readings_end_us: int | None) -> int | None:
    """When a GPU fell off the bus, or None: the first of

    * its readings go BLANK and stay so to the end (most of the fields it read before: a field that is
      always blank, or one gap at the end, is not a lost GPU);
    * an XID 79 (fallen off the bus) with no good reading after it;
    * its readings stop while other GPUs' go on (a recorder that writes nothing for a lost GPU): one of
      its sample intervals after its last reading.
    """
    ok = readings.status == OK
    last_ok = int(readings.time[ok].max()) if ok.any() else None
    blank = readings.status == BLANK
    candidates = []
    if last_ok is None:
        if blank.any():
            candidates.append(int(readings.time[blank].min()))
    else:
        read = np.unique(readings.field_id[ok])
        blank &= np.isin(readings.field_id, read) & (readings.time > last_ok)
        if 2 * len(np.unique(readings.field_id[blank])) > len(read):
            candidates.append(int(readings.time[blank].min()))
    off_the_bus = ((rows["entity_group"] == GPU) & (rows["gpu"] == index) & (rows["field_id"] == XID_FIELD)
                   & (rows["status"] == OK) & (rows["value"] == 79))
    if last_ok is not None:
        off_the_bus &= rows["time"] >= last_ok
    if off_the_bus.any():
        candidates.append(int(rows["time"][off_the_bus].min()))
    if readings_end_us is not None:
        times = np.unique(readings.time)
        step = int(np.median(np.diff(times))) if len(times) > 1 else 1_000_000
        if readings_end_us - int(times[-1]) > max(1_000_000, 3 * step):
            candidates.append(int(times[-1]) + step)
    return min(candidates) if candidates else None


def _xid_events(rows: dict[str, np.ndarray], t0_us: int) -> list[tuple[int, int, int, list[int]]]:
    """(microseconds after the start, XID, how many at once, GPUs) per XID row; the same XID at the same
    time on several GPUs is one event."""
    xid = (rows["field_id"] == XID_FIELD) & (rows["status"] == OK) & (rows["entity_group"] == GPU)
    counts: dict[tuple[int, int, int], int] = {}
    for t, value, gpu in zip(rows["time"][xid], rows["value"][xid], rows["gpu"][xid]):
        key = (int(t) - t0_us, int(value), int(gpu))     # read_rows checked each XID: 1 to 100000
        counts[key] = min(counts.get(key, 0) + 1, MAX_BURST)
    events: dict[tuple[int, int, int], list[int]] = {}
    for (t, value, gpu), count in counts.items():
        events.setdefault((t, value, count), []).append(gpu)
    return sorted((t, value, count, sorted(which)) for (t, value, count), which in events.items())


def _scenario_text(path: Path, gpus: dict[int, _Gpu], events: list[tuple[int, int, int, list[int]]],
                   switches: int, cpus: int) -> str:
    source = re.sub(r"[\x00-\x1f\x7f]", "?", str(path))
    lines = [f"# the flight recording {source}, replayed", "seed = 42"]
    if switches:
        lines.append(f"nvswitches = {switches}")
    if cpus:
        lines.append(f"grace_cpus = {cpus}")
    for gpu in gpus.values():
        lines += ["", "[[gpu]]", f'model = "{gpu.model}"']
        lines += [f'{key} = "{getattr(gpu, key)}"' for key in ("uuid", "pci_bus_id") if getattr(gpu, key)]
        if gpu.trace is None:
            lines.append('workload = "idle"')
        else:
            lines += ['workload = "replay"', f'trace = "{gpu.trace}"', "loop = false"]
        if gpu.mig_instances:
            lines.append(f"mig_instances = {gpu.mig_instances}")
    for t_us, xid, count, which in events:
        lines += ["", "[[event]]", f"at = {t_us / 1e6:.6f}", f"gpu = [{', '.join(map(str, which))}]",
                  'kind = "xid"', f"xid = {xid}"]
        if count > 1:   # several of one XID at one time
            lines += [f"count = {count}", "interval = 0"]
    for gpu in gpus.values():
        if gpu.lost_at_s is not None:
            # its XID, if one was recorded, is among the xid events
            lines += ["", "[[event]]", f"at = {gpu.lost_at_s:.6f}", f"gpu = {gpu.index}", 'kind = "lost"', "xid = 0"]
    return "\n".join(lines) + "\n"
