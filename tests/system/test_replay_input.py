"""Replaying a recording someone else placed: ``--sim RECORDING.parquet`` through the real collector.

A recording or sidecar that is not a regular file (a FIFO, a device, a
folder) or is too large is refused at once with one line, never waited on; a
value the engine cannot hold (not finite, outside its field's DCGM type, a
time before 1970, after 9999 or over the replay's 400 days, a field id DCGM
has not, an XID out of range) is one line naming the recording's row and
column, never the engine's temporary trace; a hostile sidecar (nested
200,000 deep, a 5,000-digit number, not UTF-8) is one line naming the
sidecar.  SIGTERM during or after a replay's start-up exits 0 within 2 s and
leaves no temporary folder behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import (
    COLLECTOR,
    SERVING,
    http_get,
    launch,
    log_messages,
    samples,
    stop_process,
    wait_for,
    write_recording,
)
from test_fault_scenarios import Collector
from test_faults import _env

pytestmark = pytest.mark.slow
pytest.importorskip("pyarrow")

GPU_TEMP, POWER, XID = 150, 155, 230
SIDECAR = {"format_version": 1, "gpus": [{"gpu": 0, "model": "NVIDIA H200"}]}
DAY_S = 86_400.0


def readings(*extra: tuple) -> list[tuple]:
    """Two seconds of GPU 0's power at 10 Hz (rows 1 to 20), then ``extra`` (rows 21 on)."""
    return [(t / 10, 0, POWER, 100.0) for t in range(20)] + list(extra)


def private_tmp(tmp_path: Path) -> Path:
    """A TMPDIR of the test's own, so that what the collector leaves there is what this test left."""
    folder = tmp_path / "tmp"
    folder.mkdir(exist_ok=True)
    return folder


def refusals(tmp_path: Path, names: list[str], timeout: float = 30.0) -> dict[str, tuple[int | None, str, float]]:
    """(exit status, stderr, seconds to exit) of ``--sim NAME`` for each name, all run at once."""
    env = _env(TMPDIR=str(private_tmp(tmp_path)))
    started = time.monotonic()
    runs = {name: launch(COLLECTOR, "-a", "127.0.0.1:0", "--sim", name, cwd=tmp_path, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for name in names}
    out = {}
    try:
        for name, proc in runs.items():
            try:
                _, err = proc.communicate(timeout=max(1.0, started + timeout - time.monotonic()))
            except subprocess.TimeoutExpired:
                out[name] = (None, f"still running after {timeout:.0f} s", timeout)
                continue
            out[name] = (proc.returncode, err, time.monotonic() - started)
    finally:
        for proc in runs.values():
            stop_process(proc, signal.SIGKILL)
    return out


def assert_one_line_errors(tmp_path: Path, expected: dict[str, str], within_s: float = 20.0) -> None:
    results = refusals(tmp_path, list(expected))
    for name, (code, err, seconds) in results.items():
        print(f"\n--sim {name}: exit {code} after {seconds:.2f} s: {err.strip()}")
        assert code == 1, (name, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (name, err)
        assert "dcgm-replay-" not in err and "scenario.toml" not in err, (name, err)
        assert err.strip() == f"dcgm-collector: error: --sim {expected[name]}", (name, err)
        assert seconds < within_s, (name, seconds)
    assert os.listdir(private_tmp(tmp_path)) == []


def test_a_recording_or_sidecar_that_is_no_regular_file_or_too_large_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "fifo.parquet")
    os.mkfifo(tmp_path / "pipe")            # no .parquet name: the collector looks at its first bytes
    write_recording(tmp_path / "side.parquet", readings())
    os.mkfifo(tmp_path / "side.parquet.json")
    (tmp_path / "folder.parquet").mkdir()
    os.mkfifo(tmp_path / "trace.csv")       # a scenario's replayed trace, which the engine opens itself
    (tmp_path / "trace.toml").write_text('[[gpu]]\nmodel = "H200"\nworkload = "replay"\ntrace = "trace.csv"\n')
    (tmp_path / "zero.parquet").symlink_to("/dev/zero")
    with open(tmp_path / "huge.parquet", "wb") as f:
        f.truncate((1 << 30) + 1)           # sparse: no disk
    write_recording(tmp_path / "wide.parquet", readings())
    (tmp_path / "wide.parquet.json").write_text(" " * (1 << 20) + "{}")
    assert_one_line_errors(tmp_path, {
        "fifo.parquet": "fifo.parquet: cannot read recording: not a regular file (a FIFO)",
        "pipe": "pipe: pipe: cannot read scenario: not a regular file (a FIFO)",
        "side.parquet": "side.parquet.json: cannot read the recording's sidecar: not a regular file (a FIFO)",
        "trace.toml": "trace.toml: trace.toml:4: trace.csv: cannot open trace: not a regular file (a FIFO)",
        "folder.parquet": "folder.parquet: cannot read recording: not a regular file (a directory)",
        "zero.parquet": "zero.parquet: cannot read recording: not a regular file (a character device)",
        "huge.parquet": "huge.parquet: cannot read recording: larger than 1 GiB",
        "wide.parquet": "wide.parquet.json: cannot read the recording's sidecar: larger than 1 MiB",
    })


def test_a_value_the_engine_cannot_hold_names_the_recordings_row_and_column(tmp_path):
    cases = {
        "big-int.parquet": (readings((0.5, 0, GPU_TEMP, 1e300)),
                            "row 21, column value: 1e+300 does not fit field 150's int64 reading "
                            "(-9223372036854775808 to 9223372036854775791; DCGM's blank values lie above)"),
        "small-int.parquet": (readings((0.5, 0, GPU_TEMP, -1e300)),
                              "row 21, column value: -1e+300 does not fit field 150's int64 reading "
                              "(-9223372036854775808 to 9223372036854775791; DCGM's blank values lie above)"),
        "sentinel.parquet": (readings((0.5, 0, GPU_TEMP, 2.0 ** 63)),
                             "row 21, column value: 9.223372036854776e+18 does not fit field 150's int64 reading "
                             "(-9223372036854775808 to 9223372036854775791; DCGM's blank values lie above)"),
        "half.parquet": (readings((0.5, 0, GPU_TEMP, 40.5)),
                         "row 21, column value: 40.5 is not a whole number: field 150 is an integer field"),
        "inf.parquet": (readings((0.5, 0, POWER, float("inf"))),
                        "row 21, column value: inf with status OK: a reading is a finite number"),
        "minus-inf.parquet": (readings((0.5, 0, GPU_TEMP, float("-inf"))),
                              "row 21, column value: -inf with status OK: a reading is a finite number"),
        "blank-double.parquet": (readings((0.5, 0, POWER, 1e300)),
                                 "row 21, column value: 1e+300 is at or above DCGM's blank double "
                                 "140737488355328: field 155 cannot read it"),
        "long.parquet": (readings((500 * DAY_S, 0, POWER, 1.0)),
                         "row 21, column time: 2028-05-29T08:00:00Z is 500 days after the recording's first sample "
                         "(row 1): a replay spans at most 400 days"),
        "field-0.parquet": (readings((0.5, 0, 0, 1.0)),
                            "row 21, column field_id: 0 is not a DCGM field id (1 to 1533)"),
        "field-70000.parquet": (readings((0.5, 0, 70000, 1.0)),
                                "row 21, column field_id: 70000 is not a DCGM field id (1 to 1533)"),
        "field-negative.parquet": (readings((0.5, 0, -155, 1.0)),
                                   "row 21, column field_id: -155 is not a DCGM field id (1 to 1533)"),
        "xid-huge.parquet": (readings((0.5, 0, XID, 1e300)),
                             "row 21, column value: 1e+300 does not fit field 230's int64 reading "
                             "(-9223372036854775808 to 9223372036854775791; DCGM's blank values lie above)"),
        "xid-big.parquet": (readings((0.5, 0, XID, 200000.0)),
                            "row 21, column value: XID 200000.0 is not one the replay can raise (1 to 100000)"),
        "xid-0.parquet": (readings((0.5, 0, XID, 0.0)),
                          "row 21, column value: XID 0.0 is not one the replay can raise (1 to 100000)"),
    }
    for name, (rows, _) in cases.items():
        write_recording(tmp_path / name, rows, SIDECAR)
    write_recording(tmp_path / "unknown.parquet", [(0.0, 0, 999, 1.0), (0.1, 0, 50, 2.0)], SIDECAR)
    write_recording(tmp_path / "old.parquet", readings(), SIDECAR, start=-100.0)
    write_recording(tmp_path / "future.parquet", readings(), SIDECAR, start=253_402_300_800.0)
    expected = {name: f"{name}: {line}" for name, (_, line) in cases.items()}
    expected["unknown.parquet"] = "unknown.parquet: no field this version knows is recorded"
    expected["old.parquet"] = "old.parquet: row 1, column time: 1969-12-31T23:58:20Z is before 1970"
    expected["future.parquet"] = ("future.parquet: row 1, column time: 253402300800000000 µs from 1970-01-01 is after "
                                  "the year 9999")
    assert_one_line_errors(tmp_path, expected)


def test_a_field_this_version_does_not_know_is_left_out_with_a_warning(tmp_path):
    write_recording(tmp_path / "newer.parquet", readings((0.0, 0, 999, 1.0), (0.1, 0, 50, 2.0)), SIDECAR)
    collector = Collector(tmp_path, "--sim", "newer.parquet", counters="DCGM_FI_DEV_POWER_USAGE, gauge, power\n")
    try:
        assert ("WARNING", "--sim newer.parquet: field 50, 999: not a numeric DCGM field this version knows, not "
                "replayed") in log_messages(collector.log())
        assert [v for name, _, v in samples(collector.metrics()) if name == "DCGM_FI_DEV_POWER_USAGE"] == [100.0]
    finally:
        collector.end()


def test_a_hostile_sidecar_is_one_line_naming_it(tmp_path):
    sidecars = {
        "deep.parquet": '{"format_version": 1,\n"gpus": ' + "[" * 200_000 + "]" * 200_000 + "}",
        "digits.parquet": '{"format_version": 1,\n\n"gpus": [{"gpu": ' + "9" * 5000 + "}]}",
        "float.parquet": '{"format_version": 1, "gpus": [{"gpu": 1' + "0" * 400 + ".5}]}",
        "nan.parquet": '{"format_version": NaN}',
        "version.parquet": '{"format_version": 1.0}',
        "latin1.parquet": b'{"format_version": 1, "host": "n\xe9ud"}',
        "list.parquet": "[1, 2, 3]",
        "trigger.parquet": '{"format_version": 1, "trigger": {"kind": "lost", "gpus": [0], '
                           '"time": "2099-01-01T00:00:00Z"}}',
    }
    for name, text in sidecars.items():
        write_recording(tmp_path / name, readings())
        sidecar = tmp_path / f"{name}.json"
        sidecar.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert_one_line_errors(tmp_path, {
        "deep.parquet": "deep.parquet.json:2: nested deeper than 32 lists or objects",
        "digits.parquet": "digits.parquet.json:3: a number of 5000 digits (at most 20)",
        "float.parquet": "float.parquet.json:1: a number of 403 characters (at most 64)",
        "nan.parquet": "nan.parquet.json:1: NaN is not a JSON number",
        "version.parquet": "version.parquet.json: format_version 1.0 is not one this version reads (1)",
        "latin1.parquet": "latin1.parquet.json: not UTF-8 text (invalid continuation byte at byte 32)",
        "list.parquet": "list.parquet.json: not a JSON object",
        "trigger.parquet": "trigger.parquet.json: trigger.time 2099-01-01T00:00:00Z is more than 400 days after the "
                           "recording's first sample",
    })


def big_recording(path: Path, rows: int) -> Path:
    """GPU 0's power once a millisecond for ``rows`` rows: its replay takes seconds to write."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dcgm_collector.model import recording_schema

    time_us = 1_800_000_000_000_000 + np.arange(rows, dtype=np.int64) * 1000
    columns = {"time": pa.array(time_us, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
               "entity_group": pa.array(["GPU"] * rows), "entity_id": np.zeros(rows, np.int64),
               "gpu": np.zeros(rows, np.int64), "field_id": np.full(rows, POWER, np.int32),
               "field_name": pa.array(["DCGM_FI_DEV_POWER_USAGE"] * rows), "metric": pa.array(["power"] * rows),
               "value": 100.0 + np.arange(rows) % 400, "status": pa.array(["OK"] * rows)}
    pq.write_table(pa.table(columns, schema=recording_schema(pa)), path)
    return path


def sigterm_exit(proc: subprocess.Popen) -> tuple[int | None, float]:
    """SIGTERM ``proc``: its exit status and how long it took to exit (None: still running after 10 s)."""
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - started
    return proc.returncode, time.monotonic() - started


def test_sigterm_while_a_replay_is_being_written_exits_0_within_2_s_and_leaves_no_folder(tmp_path):
    big_recording(tmp_path / "big.parquet", 2_000_000)
    tmp = private_tmp(tmp_path)
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, "-a", "127.0.0.1:0", "--sim", "big.parquet", cwd=tmp_path,
                      env=_env(TMPDIR=str(tmp)), stdout=out, stderr=subprocess.STDOUT)
    try:
        # the start-up has made its folder and is writing the trace: the stop cannot wait for it
        wait_for(lambda: os.listdir(tmp) or proc.poll() is not None, timeout=60, what="the replay's folder",
                 log=log.read_text)
        code, seconds = sigterm_exit(proc)
        print(f"\nSIGTERM while the replay is written: exit {code} after {seconds:.2f} s, left {os.listdir(tmp)}")
        assert code == 0, log.read_text()
        assert seconds < 2.0, log.read_text()
        assert os.listdir(tmp) == [], log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        stop_process(proc, signal.SIGKILL)


def test_sigterm_while_a_replay_serves_exits_0_within_2_s_and_leaves_no_folder(tmp_path):
    write_recording(tmp_path / "small.parquet", readings(), SIDECAR)
    tmp = private_tmp(tmp_path)
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, "-a", "127.0.0.1:0", "--sim", "small.parquet", cwd=tmp_path,
                      env=_env(TMPDIR=str(tmp)), stdout=out, stderr=subprocess.STDOUT)
    try:
        port = int(wait_for(lambda: SERVING.search(log.read_text()), timeout=30, what="serving",
                            log=log.read_text)[1])
        assert http_get(f"http://127.0.0.1:{port}/metrics")[0] == 200
        assert len(os.listdir(tmp)) == 1        # the replay's scenario and trace, while it serves
        code, seconds = sigterm_exit(proc)
        print(f"\nSIGTERM while the replay serves: exit {code} after {seconds:.2f} s, left {os.listdir(tmp)}")
        assert code == 0, log.read_text()
        assert seconds < 2.0, log.read_text()
        assert os.listdir(tmp) == [], log.read_text()
    finally:
        stop_process(proc, signal.SIGKILL)
