"""A flight recording's rows, as the replay reads them: loaded (recordings.rows) and checked value by value.

Every value the replay will hand the engine is checked here first, so that an
error names the recording, the row and the column, never the engine's
temporary trace or scenario: a reading must be finite and fit its field's
DCGM type (an int64 below DCGM's blank sentinels, a double below DCGM's blank
double), a time must lie between 1970 and 9999 and within the engine's
400-day span of the first, a field id must be one DCGM can have, an XID one
the engine can raise.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from dcgm_collector.catalog.fields import field_table
from dcgm_collector.model import RECORDING_COLUMNS
from dcgm_collector.recordings.rows import GROUPS, MAX_RECORDING_BYTES, OK, STATUSES, load_rows

__all__ = ["GROUPS", "MAX_RECORDING_BYTES", "MAX_SPAN_US", "OK", "RECORDING_COLUMNS", "STATUSES", "read_rows",
           "unknown_fields"]

MAX_SPAN_US = 400 * 86_400 * 1_000_000      # replay.c's and scenario.c's longest replay
LATEST_US = 253_402_300_800 * 1_000_000     # 10000-01-01T00:00:00Z
MAX_FIELD_ID = 1533             # DCGM_FI_MAX_FIELDS - 1
INT64_MIN = -(1 << 63)
INT64_BLANK = 0x7FFFFFFFFFFFFFF0    # DCGM_INT64_BLANK: at or above it an int64 is a sentinel, not a reading
FP64_BLANK = 140737488355328.0      # DCGM_FP64_BLANK: the same for a double
XID_FIELD = 230
MAX_XID = 100_000               # scenario.c's largest xid
MAX_GPUS = 32                   # the simulator's node
GPU_GROUPS = tuple(GROUPS.index(name) for name in ("GPU", "GPU_I", "GPU_CI", "VGPU"))


def read_rows(path: Path) -> dict[str, np.ndarray]:
    """The recording's columns as arrays (codes for the string columns); ValueError ``path: problem``."""
    rows = load_rows(path, "replaying a flight recording")
    _check_gpus(path, rows)
    _check_times(path, rows["time"])
    _check_fields(path, rows["field_id"])
    _check_values(path, rows)
    return rows


def _refuse_first(path: Path, bad: np.ndarray, column: str, problem: Any) -> None:
    """ValueError naming the first row where ``bad`` holds; ``problem(row)`` says what is wrong there."""
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"{path}: row {row + 1}, column {column}: {problem(row)}")


def _check_gpus(path: Path, rows: dict[str, np.ndarray]) -> None:
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


def _check_times(path: Path, time: np.ndarray) -> None:
    _refuse_first(path, time < 0, "time", lambda row: f"{_when(time[row])} is before 1970")
    _refuse_first(path, time >= LATEST_US, "time", lambda row: f"{_when(time[row])} is after the year 9999")
    first = int(np.argmin(time))
    _refuse_first(path, time - time[first] > MAX_SPAN_US, "time", lambda row: (
        f"{_when(time[row])} is {(time[row] - time[first]) / 86_400e6:.0f} days after the recording's first "
        f"sample (row {first + 1}): a replay spans at most {MAX_SPAN_US // 86_400_000_000} days"))


def _check_fields(path: Path, field_id: np.ndarray) -> None:
    _refuse_first(path, (field_id < 1) | (field_id > MAX_FIELD_ID), "field_id",
                  lambda row: f"{field_id[row]} is not a DCGM field id (1 to {MAX_FIELD_ID})")


def unknown_fields(field_id: np.ndarray) -> list[int]:
    """The recorded field ids that are no numeric field this version knows (a newer DCGM's, or text)."""
    table = field_table()
    return [fid for fid in np.unique(field_id).tolist() if not ((field := table.by_id(fid)) and field.is_numeric)]


def _check_values(path: Path, rows: dict[str, np.ndarray]) -> None:
    ok = rows["status"] == OK
    value, field_id = rows["value"], rows["field_id"]
    no_value = ok & np.isnan(value)
    if no_value.any():
        row = int(np.argmax(no_value))
        raise ValueError(f"{path}: row {row + 1}: status OK without a value")
    _refuse_first(path, ok & np.isinf(value), "value", lambda row: f"{float(value[row])!r} with status OK: a reading "
                  "is a finite number")
    table = field_table()
    ids = np.unique(field_id)
    # an unknown field's readings are not replayed (see unknown_fields), but must still be numbers
    is_int = np.array([(f := table.by_id(int(fid))) is not None and f.type == "i"
                       for fid in ids])[np.searchsorted(ids, field_id)]
    with np.errstate(invalid="ignore"):
        ints, doubles = ok & is_int, ok & ~is_int
        _refuse_first(path, ints & (value != np.round(value)), "value", lambda row: (
            f"{float(value[row])!r} is not a whole number: field {field_id[row]} is an integer field"))
        # float(INT64_BLANK) rounds up to 2**63, so compare below it: the largest double under 2**63 is a reading
        _refuse_first(path, ints & ((value < INT64_MIN) | (value >= float(INT64_BLANK))), "value", lambda row: (
            f"{float(value[row])!r} does not fit field {field_id[row]}'s int64 reading ({INT64_MIN} to "
            f"{INT64_BLANK - 1}; DCGM's blank values lie above)"))
        _refuse_first(path, doubles & (value >= FP64_BLANK), "value", lambda row: (
            f"{float(value[row])!r} is at or above DCGM's blank double {FP64_BLANK:.0f}: field {field_id[row]} cannot "
            "read it"))
        xid = ok & (field_id == XID_FIELD)
        _refuse_first(path, xid & ((value < 1) | (value > MAX_XID)), "value", lambda row: (
            f"XID {float(value[row])!r} is not one the replay can raise (1 to {MAX_XID})"))


def _when(us: int) -> str:
    """A recorded time as ISO 8601, or as microseconds where no calendar date holds it."""
    try:
        when = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=int(us))
    except OverflowError:
        return f"{int(us)} µs from 1970-01-01"
    return when.isoformat().replace("+00:00", "Z")
