"""A flight recording's rows, read from its Parquet file: the file opened safely, the columns checked by type.

The file is opened through :mod:`dcgm_collector.files` (never blocking on a
FIFO, a regular file of at most :data:`MAX_RECORDING_BYTES`) and pyarrow
reads that same descriptor, so the file checked is the file read.  Every
column the recorder writes must be there with a type that fits, the key
columns without nulls and the string columns of known values; what a
reading may be is for the reader to check (the engine's replay checks much
more, engine.recording_rows).  Each problem is one ValueError line naming
the file (and the row where one is known).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dcgm_collector.files import FileRefused, open_regular_file
from dcgm_collector.model import PYARROW_INSTALL_HINT, RECORDING_COLUMNS, RECORDING_STATUSES, EntityType

__all__ = ["GROUPS", "MAX_RECORDING_BYTES", "OK", "STATUSES", "load_rows"]

MAX_RECORDING_BYTES = 1 << 30   # about 100 million rows; the engine replays at most 10 million per GPU
STATUSES = RECORDING_STATUSES
OK = STATUSES.index("OK")
GROUPS = tuple(e.name for e in EntityType)                      # entity groups, by their code in rows


def load_rows(path: Path, reading: str = "reading a flight recording") -> dict[str, np.ndarray]:
    """The recording's columns as arrays: ``time`` (µs), ``entity_group`` and ``status`` as codes (indexes in
    GROUPS, STATUSES), ``entity_id``, ``gpu`` (NaN: none), ``field_id``, ``value``; ValueError ``path: problem``
    (``reading`` says what needs pyarrow when it is missing)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: {reading} needs pyarrow: {PYARROW_INSTALL_HINT}") from None
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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
