"""A flight recording's rows, read from its Parquet file and checked value by value.

The file is opened through :mod:`dcgm_collector.files` (never blocking on a
FIFO, a regular file of at most :data:`MAX_RECORDING_BYTES`) and pyarrow
reads that same descriptor, so the file checked is the file read.  Every
value the replay will hand the engine is checked here first, so that an
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
from dcgm_collector.files import FileRefused, open_regular_file
from dcgm_collector.model import PYARROW_INSTALL_HINT, RECORDING_COLUMNS, RECORDING_STATUSES, EntityType

__all__ = ["MAX_RECORDING_BYTES", "MAX_SPAN_US", "read_rows", "unknown_fields"]

MAX_RECORDING_BYTES = 1 << 30   # about 100 million rows; the engine replays at most 10 million per GPU
MAX_SPAN_US = 400 * 86_400 * 1_000_000      # replay.c's and scenario.c's longest replay
LATEST_US = 253_402_300_800 * 1_000_000     # 10000-01-01T00:00:00Z
MAX_FIELD_ID = 1533             # DCGM_FI_MAX_FIELDS - 1
INT64_MIN = -(1 << 63)
INT64_BLANK = 0x7FFFFFFFFFFFFFF0    # DCGM_INT64_BLANK: at or above it an int64 is a sentinel, not a reading
FP64_BLANK = 140737488355328.0      # DCGM_FP64_BLANK: the same for a double
XID_FIELD = 230
MAX_XID = 100_000               # scenario.c's largest xid
MAX_GPUS = 32                   # the simulator's node
STATUSES = RECORDING_STATUSES
OK = STATUSES.index("OK")
GROUPS = tuple(e.name for e in EntityType)                      # entity groups, by their code in rows
GPU_GROUPS = tuple(GROUPS.index(name) for name in ("GPU", "GPU_I", "GPU_CI", "VGPU"))


def read_rows(path: Path) -> dict[str, np.ndarray]:
    """The recording's columns as arrays (codes for the string columns); ValueError ``path: problem``."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: replaying a flight recording needs pyarrow: {PYARROW_INSTALL_HINT}") from None
    try:
        fd = open_regular_file(path, MAX_RECORDING_BYTES)
    except FileNotFoundError:
        raise ValueError(f"{path}: cannot read recording: no such file") from None
    except FileRefused as error:
        raise ValueError(f"{path}: cannot read recording: {error.problem}") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot read recording: {error.strerror or error}") from None
    with open(fd, "rb") as file:
        try:
            parquet = pq.ParquetFile(file)
            schema = parquet.schema_arrow
        except (pa.ArrowException, OSError, ValueError) as error:
            raise ValueError(f"{path}: not a Parquet file ({_first_line(error)})") from None
        for name, kind in RECORDING_COLUMNS:
            if name not in schema.names:
                raise ValueError(f"{path}: no column '{name}' (a flight recording has "
                                 f"{', '.join(n for n, _ in RECORDING_COLUMNS)})")
            have = schema.field(name).type
            if not _type_fits(pa, have, kind):
                raise ValueError(f"{path}: column '{name}' is {have}, not {kind}")
        try:
            table = parquet.read(columns=[name for name, _ in RECORDING_COLUMNS])
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
    _check_gpus(path, rows)
    _check_times(path, rows["time"])
    _check_fields(path, rows["field_id"])
    _check_values(path, rows)
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
        raise ValueError(f"{path}: row {row + 1}: {name} {column[row].as_py()[:40]!r} {what}{known}")
    return codes.cast(pa.int8()).to_numpy(zero_copy_only=False)


def _no_nulls(path: Path, pc: Any, column: Any, name: str) -> None:
    if column.null_count:
        row = int(pc.index(pc.is_null(column), True).as_py())
        raise ValueError(f"{path}: row {row + 1}: no {name}")


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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
