"""The flight recording's format is declared once, in native/node/recording_format.h, and every other place
that names it agrees: dcgm_collector.model's RECORDING_* (which the writer and the readers use), the Parquet
schema the writer writes, the limits the readers check a recording against before the node sees it, and the
trace CSV the replay writes for the node.  The node's replay.c and scenario.c compile against the header.

Each check compares what the header declares with what the Python side says, so a change on either side
alone fails here; a drifted header is shown to be caught.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dcgm_collector import model
from dcgm_collector.engine import recording, recording_rows
from dcgm_collector.recordings import sidecar as recording_sidecar

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
DECLARATION = NATIVE / "node" / "recording_format.h"
# headers whose plain #defines the declaration's limits are checked against
CONSTANT_HEADERS = (NATIVE / "dcgm_abi.h", NATIVE / "dcgm_field_ids.h", NATIVE / "node" / "node.h")

DEFINE = re.compile(r"^\s*#\s*define\s+([A-Z_][A-Z0-9_]*)\s+(.+?)\s*(?:/\*.*)?$", re.MULTILINE)
X_MACRO = re.compile(r"^\s*#\s*define\s+(RECORDING_[A-Z_]+)\(X\)((?:[^\n]*\\\n)*[^\n]*)", re.MULTILINE)


def defines(text: str) -> dict[str, str]:
    """NAME -> value text of the one-line #defines without parameters."""
    return {name: value for name, value in DEFINE.findall(text) if "(" not in name}


def constants() -> dict[str, int]:
    """The integer #defines of the ABI, field id and node headers."""
    out: dict[str, int] = {}
    for header in CONSTANT_HEADERS:
        for name, value in defines(header.read_text(encoding="utf-8")).items():
            if re.fullmatch(r"-?\d+[uUlL]*", value):
                out[name] = int(value.rstrip("uUlL"))
    return out


def declared(text: str) -> dict[str, Any]:
    """What the header declares, as the Python side names it."""
    plain = defines(text)
    known = constants()
    lists = {name: body for name, body in X_MACRO.findall(text)}

    def number(name: str) -> int:
        value = plain[name]
        return known[value] if value in known else int(value)

    columns = tuple(re.findall(r'X\((\w+), "([^"]+)"\)', lists["RECORDING_COLUMNS"]))
    statuses = tuple(re.findall(r"X\((\w+)\)", lists["RECORDING_STATUSES"]))
    return {
        "format version": number("RECORDING_FORMAT_VERSION"),
        "sidecar suffix": plain["RECORDING_SIDECAR_SUFFIX"].strip('"'),
        "columns": columns,
        "statuses": statuses,
        "trace time column": plain["RECORDING_TRACE_TIME_COLUMN"].strip('"'),
        "trace fields": number("RECORDING_TRACE_MAX_COLUMNS") - 1,     # less the time
        "longest replay (us)": number("RECORDING_MAX_SPAN_DAYS") * 86_400 * 1_000_000,
        "events": number("RECORDING_MAX_EVENTS"),
        "burst": number("RECORDING_MAX_BURST"),
        "largest XID": number("RECORDING_MAX_XID"),
        "fields the node keeps": (number("RECORDING_NODE_OWN_FIELD"),),
        # what the node's scenario takes, from the headers the node is built on
        "GPUs": known["DCGM_MAX_NUM_DEVICES"],
        "NvSwitches": known["DCGM_MAX_NUM_SWITCHES"],
        "Grace CPUs": known["DCGM_MAX_NUM_CPUS"],
        "MIG instances": known["SIM_MAX_MIG_INSTANCES"],
        "XID field": known["DCGM_FI_DEV_XID_ERROR"],
        "largest field id": known["DCGM_FI_MAX_FIELDS"] - 1,
    }


def python_side() -> dict[str, list[tuple[str, Any]]]:
    """Every place in dcgm_collector that names a fact of the format: fact -> [(where, value)]."""
    return {
        "format version": [("model.RECORDING_FORMAT_VERSION", model.RECORDING_FORMAT_VERSION)],
        "sidecar suffix": [("model.RECORDING_SIDECAR_SUFFIX", model.RECORDING_SIDECAR_SUFFIX)],
        "columns": [("model.RECORDING_COLUMNS", tuple(model.RECORDING_COLUMNS)),
                    ("recording_rows.RECORDING_COLUMNS", tuple(recording_rows.RECORDING_COLUMNS))],
        "statuses": [("model.RECORDING_STATUSES", tuple(model.RECORDING_STATUSES)),
                     ("recording_rows.STATUSES", tuple(recording_rows.STATUSES))],
        "trace time column": [("recording._write_trace's header", _trace_time_column())],
        "trace fields": [("recording.MAX_TRACE_FIELDS", recording.MAX_TRACE_FIELDS)],
        "longest replay (us)": [("recording_rows.MAX_SPAN_US", recording_rows.MAX_SPAN_US)],
        "events": [("recording.MAX_EVENTS", recording.MAX_EVENTS)],
        "burst": [("recording.MAX_BURST", recording.MAX_BURST)],
        "largest XID": [("recording_rows.MAX_XID", recording_rows.MAX_XID)],
        "fields the node keeps": [("recording.ENGINE_OWN_FIELDS", tuple(recording.ENGINE_OWN_FIELDS))],
        "GPUs": [("recording_rows.MAX_GPUS", recording_rows.MAX_GPUS),
                 ("recording_sidecar.MAX_GPUS", recording_sidecar.MAX_GPUS)],
        "NvSwitches": [("recording.MAX_SWITCHES", recording.MAX_SWITCHES)],
        "Grace CPUs": [("recording.MAX_CPUS", recording.MAX_CPUS)],
        "MIG instances": [("recording.MAX_MIG_INSTANCES", recording.MAX_MIG_INSTANCES)],
        "XID field": [("recording_rows.XID_FIELD", recording_rows.XID_FIELD)],
        "largest field id": [("recording_rows.MAX_FIELD_ID", recording_rows.MAX_FIELD_ID)],
    }


def _trace_time_column() -> str:
    """The name of the time column in the trace CSV the replay writes for the node."""
    import tempfile
    ok = recording_rows.OK
    readings = recording._Readings(time=np.array([0, 1_000_000]), field_id=np.array([150, 150]),
                                   value=np.array([30.0, 31.0]), status=np.array([ok, ok]))
    with tempfile.TemporaryDirectory() as folder:
        name = recording._write_trace(readings, 0, 0, Path(folder))
        assert name is not None
        header = (Path(folder) / name).read_text(encoding="utf-8").splitlines()[0]
    return header.split(",")[0]


def drift(declaration: dict[str, Any], places: dict[str, list[tuple[str, Any]]]) -> list[str]:
    """One line per place that says other than the declaration."""
    assert set(declaration) == set(places)
    return [f"{where} is {value!r}, {DECLARATION.relative_to(ROOT)} declares {declaration[fact]!r} ({fact})"
            for fact, named in places.items() for where, value in named if value != declaration[fact]]


def test_every_place_agrees_with_the_declaration():
    assert drift(declared(DECLARATION.read_text(encoding="utf-8")), python_side()) == []


def test_a_drifted_declaration_is_caught():
    text = DECLARATION.read_text(encoding="utf-8")
    text = text.replace("#define RECORDING_FORMAT_VERSION 1", "#define RECORDING_FORMAT_VERSION 2")
    text = text.replace('X(status, "string")', 'X(status, "int8")')
    problems = drift(declared(text), python_side())
    assert any(p.startswith("model.RECORDING_FORMAT_VERSION is 1, ") for p in problems), problems
    assert any(p.startswith("model.RECORDING_COLUMNS is ") for p in problems), problems


def test_the_writer_writes_the_declared_schema(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from dcgm_collector.push.recording_file import write_recording
    from dcgm_collector.rings.ring import SAMPLE_OK

    columns = {
        "time": np.array([1_700_000_000_000_000]), "entity_group": np.array([model.EntityType.GPU.value]),
        "entity_id": np.array([0]), "gpu": np.array([0]), "field_id": np.array([150]),
        "field_name": np.array([0]), "metric": np.array([1]), "value": np.array([31.0]),
        "status": np.array([SAMPLE_OK], dtype=np.int8),
        "names": np.array(["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP"]),
    }
    write_recording(str(tmp_path), "one.parquet", columns, {"format_version": model.RECORDING_FORMAT_VERSION})
    schema = pq.read_schema(tmp_path / "one.parquet")
    want = declared(DECLARATION.read_text(encoding="utf-8"))
    assert [(field.name, str(field.type)) for field in schema] == list(want["columns"])
    assert (tmp_path / ("one.parquet" + want["sidecar suffix"])).is_file()


def test_the_recorder_stamps_the_declared_version():
    source = (ROOT / "dcgm_collector" / "push" / "recorder.py").read_text(encoding="utf-8")
    assert '"format_version": RECORDING_FORMAT_VERSION' in source


def test_the_node_reads_its_limits_from_the_declaration():
    replay = (NATIVE / "node" / "replay.c").read_text(encoding="utf-8")
    scenario = (NATIVE / "node" / "scenario.c").read_text(encoding="utf-8")
    for source in (replay, scenario):
        assert '#include "recording_format.h"' in source
    assert defines(replay)["TRACE_MAX_COLUMNS"] == "RECORDING_TRACE_MAX_COLUMNS"
    assert defines(replay)["TRACE_MAX_ROWS"] == "RECORDING_TRACE_MAX_ROWS"
    assert "RECORDING_MAX_SPAN_DAYS" in defines(replay)["TRACE_MAX_SPAN_US"]
    assert "strcmp(cell, RECORDING_TRACE_TIME_COLUMN)" in replay
    assert "RECORDING_NODE_OWN_FIELD" in replay
    assert defines(scenario)["SCN_MAX_EVENTS"] == "RECORDING_MAX_EVENTS"
    assert defines(scenario)["SCN_MAX_BURST"] == "RECORDING_MAX_BURST"
    assert "RECORDING_MAX_SPAN_DAYS" in defines(scenario)["SCN_MAX_SECONDS"]
    assert "RECORDING_MAX_XID" in scenario
