"""A flight recording played back by the simulated engine.

A flight recording (the Parquet file ``dcgm_collector.model.RECORDING_COLUMNS``
describes, plus its ``<file>.json`` sidecar) becomes a scenario the engine
already understands: one ``[[gpu]]`` per recorded GPU, of the recorded model,
replaying a CSV trace of its recorded fields by DCGM field id on their
timestamps (the node's time 0 is the recording's first sample, and the last
readings hold after its end), the XID rows as ``xid`` events at their own
times, and a GPU whose readings all go blank as a ``lost`` event.  What the
recording lacks comes from the model.  pyarrow is imported only here, when a
recording is replayed.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from dcgm_collector.files import open_regular_file
from dcgm_collector.model import (
    RECORDING_COLUMNS,
    RECORDING_FORMAT_VERSION,
    RECORDING_SIDECAR_SUFFIX,
    RECORDING_STATUSES,
    EntityType,
)

__all__ = ["RecordingScenario", "is_recording", "write_scenario"]

PARQUET_MAGIC = b"PAR1"
XID_FIELD = 230
NVLINK_ERROR_FIELD = 450        # the other event field: the simulator has no such events to replay
STATUSES = RECORDING_STATUSES
OK, BLANK = STATUSES.index("OK"), STATUSES.index("BLANK")     # rows hold these codes
GROUPS = tuple(e.name for e in EntityType)                      # entity groups, by their code in rows
MAX_GPUS = 32                   # the simulator's node
MAX_SWITCHES, MAX_CPUS, MAX_MIG_INSTANCES = 12, 8, 7
MAX_TRACE_FIELDS = 1023         # replay.c's columns, less the time
MAX_EVENTS = 4096               # scenario.c's [[event]] tables
# the sim's model for a recorded name, by the chip in it ("NVIDIA H100 80GB HBM3" -> H100)
MODEL_CHIPS = (("H200", "H200"), ("H100", "H100"), ("H800", "H100"), ("A100", "A100"), ("A800", "A100"),
               ("L4", "L4"), ("T4", "T4"))
DEFAULT_MODEL = "H100"
MIG_MODELS = frozenset({"H100", "H200", "A100"})
_IDENTITY = re.compile(r"[!#-\[\]-~]+")     # printable, no blank, quote or backslash: a TOML string as is
# entity groups whose rows name the GPU they belong to
GPU_GROUPS = tuple(GROUPS.index(name) for name in ("GPU", "GPU_I", "GPU_CI", "VGPU"))
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
    try:   # without blocking: a FIFO is no recording, and the scenario check then says what it is
        with os.fdopen(open_regular_file(spec), "rb") as f:
            return f.read(4) == PARQUET_MAGIC
    except OSError:
        return False


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
    sidecar = _read_sidecar(path, warnings)
    rows = _read_rows(path)
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


# ---- reading ---------------------------------------------------------------------------------

def _read_sidecar(path: Path, warnings: list[str]) -> dict[str, Any] | None:
    sidecar = path.with_name(path.name + RECORDING_SIDECAR_SUFFIX)
    try:
        text = sidecar.read_text(encoding="utf-8")
    except FileNotFoundError:
        warnings.append(f"{path}: no sidecar {sidecar.name}: the GPUs are the recorded rows' and their model "
                        f"is taken to be the {DEFAULT_MODEL}")
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{sidecar}: cannot read the recording's sidecar: {_why(error)}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{sidecar}:{error.lineno}: not JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{sidecar}: not a JSON object")
    version = data.get("format_version")
    if version != RECORDING_FORMAT_VERSION:
        raise ValueError(f"{sidecar}: format_version {json.dumps(version)} is not one this version reads "
                         f"({RECORDING_FORMAT_VERSION})")
    listed = data.get("gpus", [])
    if not isinstance(listed, list) or not all(isinstance(g, dict) for g in listed):
        raise ValueError(f"{sidecar}: 'gpus' must be a list of objects")
    for i, entry in enumerate(listed):
        gpu = entry.get("gpu")
        if not _is_int(gpu) or not 0 <= gpu < MAX_GPUS:
            raise ValueError(f"{sidecar}: gpus[{i}].gpu must be a GPU index 0 to {MAX_GPUS - 1}, "
                             f"not {json.dumps(gpu)}")
        if not isinstance(entry.get("model", ""), str):
            raise ValueError(f"{sidecar}: gpus[{i}].model must be a string")
    trigger = data.get("trigger")
    if trigger is not None:
        if not isinstance(trigger, dict):
            raise ValueError(f"{sidecar}: 'trigger' must be an object")
        if "time" in trigger:
            trigger["time_us"] = _iso_us(sidecar, trigger["time"])
        if not isinstance(trigger.get("gpus", []), list) or not all(_is_int(g) for g in trigger.get("gpus", [])):
            raise ValueError(f"{sidecar}: trigger.gpus must be a list of GPU indexes")
    return data


def _iso_us(sidecar: Path, text: object) -> int:
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{sidecar}: trigger.time {json.dumps(text)} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return round(when.timestamp() * 1e6)


def _read_rows(path: Path) -> dict[str, np.ndarray]:
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: replaying a flight recording needs pyarrow: "
                         "pip install 'dcgm-collector[recorder]'") from None
    try:
        schema = pq.read_schema(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: cannot read recording: no such file") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot read recording: {_why(error)}") from None
    except (pa.ArrowException, ValueError) as error:
        raise ValueError(f"{path}: not a Parquet file ({_first_line(error)})") from None
    for name, kind in RECORDING_COLUMNS:
        if name not in schema.names:
            raise ValueError(f"{path}: no column '{name}' (a flight recording has "
                             f"{', '.join(n for n, _ in RECORDING_COLUMNS)})")
        have = schema.field(name).type
        if not _type_fits(pa, have, kind):
            raise ValueError(f"{path}: column '{name}' is {have}, not {kind}")
    try:
        table = pq.read_table(path, columns=[name for name, _ in RECORDING_COLUMNS])
    except (pa.ArrowException, OSError, ValueError) as error:
        raise ValueError(f"{path}: cannot read recording: {_first_line(error)}") from None
    if table.num_rows == 0:
        raise ValueError(f"{path}: the recording has no rows")
    for name in ("time", "entity_group", "entity_id", "field_id", "status"):
        _no_nulls(path, pc, table[name], name)
    rows = {
        "time": table["time"].cast(pa.timestamp("us", tz="UTC"), safe=False).cast(pa.int64()).to_numpy(),
        "entity_group": _codes(path, pa, pc, table["entity_group"], "entity_group", GROUPS,
                               "is not a DCGM entity group"),
        "entity_id": table["entity_id"].cast(pa.int64()).to_numpy(),
        "gpu": table["gpu"].cast(pa.float64()).to_numpy(zero_copy_only=False),   # NaN: no GPU
        "field_id": table["field_id"].cast(pa.int64()).to_numpy(),
        "value": table["value"].cast(pa.float64()).to_numpy(zero_copy_only=False),
        "status": _codes(path, pa, pc, table["status"], "status", STATUSES, f"is not {', '.join(STATUSES)}"),
    }
    _check_rows(path, rows)
    return rows


def _type_fits(pa: Any, have: Any, kind: str) -> bool:
    if have.__class__.__name__ == "DictionaryType":
        have = have.value_type
    if kind.startswith("timestamp"):
        return pa.types.is_timestamp(have)
    if kind == "string":
        return pa.types.is_string(have) or pa.types.is_large_string(have)
    if kind == "double":
        return pa.types.is_floating(have) or pa.types.is_integer(have) or pa.types.is_null(have)
    return pa.types.is_integer(have) or (kind == "int64" and pa.types.is_null(have))


def _codes(path: Path, pa: Any, pc: Any, column: Any, name: str, names: tuple[str, ...], what: str) -> np.ndarray:
    """A string column as each value's index in ``names``; ValueError naming the first row with another."""
    if column.type.__class__.__name__ == "DictionaryType":
        column = column.cast(column.type.value_type)
    codes = pc.index_in(column.cast(pa.string()), value_set=pa.array(names))
    if codes.null_count:
        row = int(pc.index(pc.is_null(codes), True).as_py())
        known = "" if name == "status" else f" ({', '.join(names)})"
        raise ValueError(f"{path}: row {row + 1}: {name} {column[row].as_py()!r} {what}{known}")
    return codes.cast(pa.int8()).to_numpy(zero_copy_only=False)


def _no_nulls(path: Path, pc: Any, column: Any, name: str) -> None:
    if column.null_count:
        row = int(pc.index(pc.is_null(column), True).as_py())
        raise ValueError(f"{path}: row {row + 1}: no {name}")


def _check_rows(path: Path, rows: dict[str, np.ndarray]) -> None:
    ok = rows["status"] == OK
    no_value = ok & np.isnan(rows["value"])
    if no_value.any():
        row = int(np.argmax(no_value))
        raise ValueError(f"{path}: row {row + 1}: status OK without a value")
    gpu = rows["gpu"]
    needs_gpu = np.isin(rows["entity_group"], GPU_GROUPS) & np.isnan(gpu)
    if needs_gpu.any():
        row = int(np.argmax(needs_gpu))
        raise ValueError(f"{path}: row {row + 1}: no gpu for a {GROUPS[rows['entity_group'][row]]} entity")
    out_of_range = ~np.isnan(gpu) & ((gpu < 0) | (gpu >= MAX_GPUS))
    if out_of_range.any():
        row = int(np.argmax(out_of_range))
        raise ValueError(f"{path}: row {row + 1}: gpu {gpu[row]:.0f}: the simulated node has GPUs 0 to "
                         f"{MAX_GPUS - 1}")


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
    if readings is None or not (ok := readings.status == OK).any():
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
            gpu.lost_at_s = max(0, lost_at_us - t0_us) / 1e6
    trigger = (sidecar or {}).get("trigger") or {}
    if trigger.get("kind") == "lost" and "time_us" in trigger:
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
        if value > 0 and math.isfinite(value):
            key = (int(t) - t0_us, int(value), int(gpu))
            counts[key] = counts.get(key, 0) + 1
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


# ---- helpers -----------------------------------------------------------------------------------

def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _why(error: BaseException) -> str:
    return getattr(error, "strerror", None) or _first_line(error)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
