"""A flight recording replayed by the simulated engine: what the engine answers at each time.

Each test writes a small recording (Parquet in model.RECORDING_COLUMNS, and
its JSON sidecar), turns it into a scenario with engine.replay_recording and
asks the simulated libdcgm, in a fresh process, what each GPU reads at given
times after the node started (dcgmSimGetValueAt): the recorded readings on
their own timestamps, the model for the rest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest
from support import write_recording

from dcgm_collector import engine

pytest.importorskip("pyarrow")

NAME, MEM_CLOCK, GPU_TEMP, POWER, GPU_UTIL, XID = 50, 101, 150, 155, 203, 230
FP64_BLANK, INT64_BLANK = 140737488355328.0, 9223372036854775792
H200 = {"gpu": 0, "model": "NVIDIA H200", "uuid": "GPU-0", "pci_bus_id": "00000000:18:00.0"}

_VALUES_AT = """
import json, os, sys
from dcgm_collector import dcgm, engine
from dcgm_collector.ext._native import ffi, lib
spec, warnings = engine.replay_recording(sys.argv[1])
os.environ[engine.SCENARIO_ENV] = spec
out = []
with dcgm.Handle.embedded(library=engine.library_path()):
    record = ffi.new("dcgmFieldValue_v1 *")
    for gpu, field, t in json.loads(sys.argv[2]):
        assert lib.dcgmSimGetValueAt(gpu, field, round(t * 1e6), record) == 0
        out.append(ffi.string(record.value.str).decode() if record.fieldType == ord("s") else
                   record.value.dbl if record.fieldType == ord("d") else record.value.i64)
print(json.dumps(out))
"""


def values_at(recording, *queries: tuple[int, int, float]) -> list:
    """What the replaying engine reads for each (gpu, field, seconds after the node started)."""
    # cwd outside the checkout: `python -c` puts it first on sys.path, and the source folder may lack the extension
    done = subprocess.run([sys.executable, "-c", _VALUES_AT, str(recording), json.dumps(queries)],
                          capture_output=True, text=True, timeout=60, cwd=recording.parent)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def sidecar(*gpus: dict, trigger: dict | None = None) -> dict:
    return {"format_version": 1, "host": "node-7", "gpus": list(gpus), "counters": "default-counters.csv",
            "since": "2027-01-15T08:00:00Z", "until": "2027-01-15T08:00:10Z", "rows": 0,
            "collector_version": "0.1.0", **({"trigger": trigger} if trigger else {})}


def power_step(t_step: float = 2.0, end: float = 4.0) -> list[tuple]:
    """GPU 0 at 100 W, then 500 W from t_step; its temperature 40, 41, ... each second; 10 Hz."""
    rows = []
    for i in range(round(end * 10)):
        t = i / 10
        rows += [(t, 0, POWER, 100.0 if t < t_step else 500.0), (t, 0, GPU_TEMP, 40.0 + int(t))]
    return rows


def test_recorded_fields_play_on_their_timestamps_and_the_rest_comes_from_the_model(tmp_path):
    recording = write_recording(tmp_path / "step.parquet", power_step(), sidecar(H200))
    assert values_at(recording, (0, POWER, 0.0), (0, POWER, 1.95), (0, POWER, 2.0), (0, POWER, 3.5),
                     (0, GPU_TEMP, 0.5), (0, GPU_TEMP, 3.2)) == [100.0, 100.0, 500.0, 500.0, 40, 43]
    # after the recording's end its last readings hold
    assert values_at(recording, (0, POWER, 60.0), (0, GPU_TEMP, 60.0)) == [500.0, 43]
    # not recorded: the recorded model's own answers
    assert values_at(recording, (0, NAME, 1.0), (0, MEM_CLOCK, 1.0)) == ["NVIDIA H200", 3201]
    util, = values_at(recording, (0, GPU_UTIL, 1.0))
    assert 0 <= util <= 100


def test_time_zero_is_the_recordings_first_sample_on_any_gpu(tmp_path):
    # GPU 1 starts reading a second after GPU 0: it keeps that offset, with the model's value before
    rows = [(t / 10, 0, POWER, 100.0) for t in range(30)] + [(1 + t / 10, 1, POWER, 333.0) for t in range(20)]
    recording = write_recording(tmp_path / "late.parquet", rows, sidecar(H200, {**H200, "gpu": 1}))
    before, after = values_at(recording, (1, POWER, 0.5), (1, POWER, 1.0))
    assert before != 333.0 and after == 333.0


def test_xid_rows_become_xids_at_their_own_times(tmp_path):
    rows = power_step() + [(1.25, 0, XID, 48.0), (2.5, 0, XID, 13.0)]
    recording = write_recording(tmp_path / "xid.parquet", rows, sidecar(H200))
    assert values_at(recording, (0, XID, 1.2), (0, XID, 1.25), (0, XID, 2.4), (0, XID, 2.5), (0, XID, 9.0)) == [
        INT64_BLANK, 48, 48, 13, 13]


def two_gpus(lost_from: float, end: float = 5.0, blank: bool = True) -> list[tuple]:
    """GPUs 0 and 1 read at 10 Hz; from lost_from GPU 1's readings are blank (or absent, blank=False)."""
    rows = []
    for i in range(round(end * 10)):
        t = i / 10
        rows += [(t, 0, POWER, 200.0), (t, 0, GPU_TEMP, 50.0)]
        if t < lost_from:
            rows += [(t, 1, POWER, 200.0), (t, 1, GPU_TEMP, 50.0)]
        elif blank:
            rows += [(t, 1, POWER, None), (t, 1, GPU_TEMP, None)]
    return rows


TWO_H200 = sidecar(H200, {**H200, "gpu": 1})


def test_a_gpu_whose_readings_go_blank_for_good_is_lost_there(tmp_path):
    recording = write_recording(tmp_path / "lost.parquet", two_gpus(3.0), TWO_H200)
    assert values_at(recording, (1, POWER, 2.95), (1, POWER, 3.0), (1, GPU_TEMP, 4.0), (0, POWER, 4.0)) == [
        200.0, FP64_BLANK, INT64_BLANK, 200.0]


def test_a_gpu_falls_off_the_bus_at_its_xid_79(tmp_path):
    recording = write_recording(tmp_path / "xid79.parquet", [*two_gpus(3.0), (2.95, 1, XID, 79.0)], TWO_H200)
    assert values_at(recording, (1, POWER, 2.9), (1, POWER, 2.95), (0, POWER, 2.95)) == [200.0, FP64_BLANK, 200.0]
    # nothing recorded after the XID but the end of the recording
    short = write_recording(tmp_path / "short.parquet", [*power_step(end=3.0), (2.95, 0, XID, 79.0)], sidecar(H200))
    assert values_at(short, (0, POWER, 2.9), (0, POWER, 2.95)) == [500.0, FP64_BLANK]


def test_a_gpu_whose_readings_stop_while_the_others_go_on_is_lost_after_its_last(tmp_path):
    recording = write_recording(tmp_path / "gone.parquet", two_gpus(3.0, blank=False), TWO_H200)
    assert values_at(recording, (1, POWER, 2.95), (1, POWER, 3.0), (0, POWER, 4.9)) == [200.0, FP64_BLANK, 200.0]


def test_a_field_that_is_always_blank_or_one_gap_at_the_end_is_not_a_lost_gpu(tmp_path):
    rows = power_step() + [(t / 10, 0, 240, None) for t in range(40)] + [(3.95, 0, GPU_TEMP, None)]
    recording = write_recording(tmp_path / "gaps.parquet", rows, sidecar(H200))
    assert values_at(recording, (0, POWER, 5.0)) == [500.0]


def test_a_lost_trigger_loses_the_gpu_at_the_trigger_time_when_its_readings_stop(tmp_path):
    rows = [(t / 10, 0, POWER, 100.0) for t in range(20)]
    trigger = {"kind": "lost", "time": "2027-01-15T08:00:03.500Z", "gpus": [0], "detail": "GPU 0 lost"}
    start = datetime(2027, 1, 15, 8, tzinfo=timezone.utc).timestamp()
    recording = write_recording(tmp_path / "trigger.parquet", rows, sidecar(H200, trigger=trigger), start=start)
    assert values_at(recording, (0, POWER, 3.4), (0, POWER, 3.5)) == [100.0, FP64_BLANK]


@pytest.mark.parametrize(("recorded", "simulated"), [
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"), ("NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"), ("Tesla T4", "Tesla T4"), ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA H200", "NVIDIA H200"),
])
def test_recorded_models_map_to_the_simulated_ones(tmp_path, recorded, simulated):
    recording = write_recording(tmp_path / "m.parquet", [(0.0, 0, POWER, 50.0)], sidecar({"gpu": 0, "model": recorded}))
    assert values_at(recording, (0, NAME, 0.0)) == [simulated]
    assert engine.replay_recording(str(recording))[1] == ()


def test_what_the_replay_cannot_keep_is_one_warning_line_each(tmp_path):
    rows = [(0.0, 0, POWER, 50.0), (0.0, 2, POWER, 60.0)]
    unknown = write_recording(tmp_path / "b.parquet", rows, sidecar({"gpu": 0, "model": "NVIDIA L40S"}))
    _, warnings = engine.replay_recording(str(unknown))
    assert warnings == (
        f"{unknown}: GPU 1 not recorded: simulated idle, so that the recorded GPUs keep their numbers",
        f"{unknown}: GPU 0: model 'NVIDIA L40S' is not simulated: replayed as an H100 (its recorded readings are "
        "replayed, the rest follow the H100's model)",
    )
    assert values_at(unknown, (0, NAME, 0.0), (1, NAME, 0.0), (2, POWER, 0.5)) == [
        "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 60.0]
    bare = write_recording(tmp_path / "bare.parquet", rows[:1])
    assert engine.replay_recording(str(bare))[1] == (
        f"{bare}: no sidecar bare.parquet.json: the GPUs are the recorded rows' and their model is taken to be "
        "the H100",)


def test_a_recording_is_known_by_its_name_or_its_first_bytes(tmp_path):
    recording = write_recording(tmp_path / "rec.parquet", [(0.0, 0, POWER, 50.0)])
    renamed = tmp_path / "rec.bin"
    renamed.write_bytes(recording.read_bytes())
    (tmp_path / "s.toml").write_text("[[gpu]]\n")
    assert engine.is_recording(str(recording)) and engine.is_recording(str(renamed))
    assert engine.is_recording(str(tmp_path / "missing.parquet"))
    assert not engine.is_recording(str(tmp_path / "s.toml")) and not engine.is_recording("4")


def _bad_recordings(tmp_path):
    """name -> (make it, the one line the replay answers, relative to the folder)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def good(name):
        return write_recording(tmp_path / name, power_step(), sidecar(H200))

    def drop(name, column):
        path = good(name)
        pq.write_table(pq.read_table(path).drop_columns([column]), path)

    def retype(name, column, values):
        path = good(name)
        table = pq.read_table(path)
        pq.write_table(table.set_column(table.schema.get_field_index(column), column, values(table)), path)

    def sidecar_text(name, text):
        good(name)
        (tmp_path / f"{name}.json").write_text(text)

    return {
        "missing.parquet": (lambda n: None, "missing.parquet: cannot read recording: no such file"),
        "text.parquet": (lambda n: (tmp_path / n).write_text("t,155\n0,100\n"),
                         "text.parquet: not a Parquet file ("),
        "no-status.parquet": (lambda n: drop(n, "status"),
                              "no-status.parquet: no column 'status' (a flight recording has time, entity_group, "
                              "entity_id, gpu, field_id, field_name, metric, value, status)"),
        "string-value.parquet": (lambda n: retype(n, "value", lambda t: pa.array(["1"] * t.num_rows)),
                                 "string-value.parquet: column 'value' is string, not double"),
        "int-time.parquet": (lambda n: retype(n, "time", lambda t: pa.array(range(t.num_rows), pa.int64())),
                             "int-time.parquet: column 'time' is int64, not timestamp[us, tz=UTC]"),
        "empty.parquet": (lambda n: write_recording(tmp_path / n, [], sidecar(H200)),
                          "empty.parquet: the recording has no rows"),
        "bad-status.parquet": (lambda n: write_recording(tmp_path / n, [(0.0, 0, POWER, 1.0), (0.1, 0, POWER, 1.0,
                                                                                                  "FINE")]),
                               "bad-status.parquet: row 2: status 'FINE' is not OK, BLANK, NOT_SUPPORTED"),
        "no-value.parquet": (lambda n: write_recording(tmp_path / n, [(0.0, 0, POWER, None, "OK")]),
                             "no-value.parquet: row 1: status OK without a value"),
        "gpu-40.parquet": (lambda n: write_recording(tmp_path / n, [(0.0, 0, POWER, 1.0), (0.0, 40, POWER, 1.0)]),
                           "gpu-40.parquet: row 2: gpu 40: the simulated node has GPUs 0 to 31"),
        "bad-json.parquet": (lambda n: sidecar_text(n, '{"format_version": 1,\n "gpus": [}'),
                             "bad-json.parquet.json:2: not JSON: Expecting value (column 11)"),
        "version.parquet": (lambda n: sidecar_text(n, '{"format_version": 2}'),
                            "version.parquet.json: format_version 2 is not one this version reads (1)"),
        "bad-gpus.parquet": (lambda n: sidecar_text(n, '{"format_version": 1, "gpus": [{"gpu": "0"}]}'),
                             'bad-gpus.parquet.json: gpus[0].gpu must be a GPU index 0 to 31, not "0"'),
        "bad-trigger.parquet": (lambda n: sidecar_text(n, '{"format_version": 1, "trigger": {"time": "soon"}}'),
                                'bad-trigger.parquet.json: trigger.time "soon" is not an ISO 8601 time'),
    }


def test_an_unreadable_recording_is_one_line_naming_the_file_and_the_problem(tmp_path):
    bad = _bad_recordings(tmp_path)
    assert len(bad) >= 5
    for name, (make, expected) in bad.items():
        make(name)
        with pytest.raises(ValueError) as raised:
            engine.replay_recording(str(tmp_path / name))
        message = str(raised.value)
        assert "\n" not in message, message
        assert message.startswith(f"{tmp_path}/{expected}"), (name, message)


def test_a_null_in_a_required_column_names_its_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = write_recording(tmp_path / "null.parquet", power_step(), sidecar(H200))
    table = pq.read_table(path)
    ids = table["field_id"].to_pylist()
    ids[4] = None
    pq.write_table(table.set_column(table.schema.get_field_index("field_id"), "field_id", pa.array(ids, pa.int32())),
                   path)
    with pytest.raises(ValueError, match=rf"^{tmp_path}/null\.parquet: row 5: no field_id$"):
        engine.replay_recording(str(path))


def test_a_recording_of_hundreds_of_fields_replays_each_one(tmp_path):
    fields = [f for f in range(100, 520) if f != XID]
    recording = write_recording(tmp_path / "wide.parquet", [(0.0, 0, f, float(f)) for f in fields], sidecar(H200))
    assert values_at(recording, (0, POWER, 1.0), (0, GPU_TEMP, 1.0), (0, 252, 1.0), (0, 310, 1.0), (0, 240, 1.0)) == [
        155.0, 150, 252, 310, 240]


def test_the_recorded_gpus_keep_their_uuid_and_pci_bus_id(tmp_path):
    gpus = [{"gpu": 0, "model": "NVIDIA H200", "uuid": "GPU-5c1e0a7b-0d2f-4e88-9a61-3b7c2d1e0f42",
             "pci_bus_id": "00000000:C1:00.0"},
            {"gpu": 1, "model": "NVIDIA H200", "uuid": 'GPU-"quoted"', "pci_bus_id": ""}]
    rows = [(0.0, 0, POWER, 50.0), (0.0, 1, POWER, 60.0)]
    recording = write_recording(tmp_path / "ids.parquet", rows, sidecar(*gpus))
    uuid0, bus0, uuid1, bus1 = values_at(recording, (0, 54, 0.0), (0, 57, 0.0), (1, 54, 0.0), (1, 57, 0.0))
    assert (uuid0, bus0) == ("GPU-5c1e0a7b-0d2f-4e88-9a61-3b7c2d1e0f42", "00000000:C1:00.0")
    # one that cannot be a UUID stays the simulator's own
    assert uuid1.startswith("GPU-") and '"' not in uuid1 and bus1 == "00000000:2A:00.0"


def test_each_xid_row_is_one_xid_even_two_at_one_time(open_node, tmp_path):
    rows = [(0.0, 0, POWER, 100.0), (0.0, 1, POWER, 100.0), (0.2, 0, XID, 13.0), (0.2, 0, XID, 13.0),
            (0.2, 1, XID, 13.0), (0.3, 1, XID, 31.0)]
    spec, _ = engine.replay_recording(str(write_recording(tmp_path / "xids.parquet", rows, TWO_H200)))
    handle = open_node(spec)
    group = handle.all_gpus()
    fields = handle.create_field_groups([XID], "xid")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=30.0)
    time.sleep(0.8)
    _, values = handle.values_since(group, fields)
    seen = sorted((v.entity_id, v.value) for v in values if v.status == 0 and v.value is not None)
    assert seen == [(0, 13), (0, 13), (1, 13), (1, 31)]


def test_nvlink_error_events_are_left_out_with_a_warning(tmp_path):
    rows = [(0.0, 0, POWER, 100.0), (0.5, 0, 450, 3.0)]
    recording = write_recording(tmp_path / "nvlink.parquet", rows, sidecar(H200))
    assert engine.replay_recording(str(recording))[1] == (
        f"{recording}: the NvLink error events (field 450) are not replayed",)
    assert values_at(recording, (0, POWER, 1.0)) == [100.0]


def test_the_extreme_readings_each_type_holds_replay_as_recorded(tmp_path):
    # the largest int64 reading a double can carry, below DCGM's blank sentinels, and the smallest int64;
    # a double just under DCGM's blank double
    largest, smallest, double = 2.0 ** 63 - 1024, -(2.0 ** 63), FP64_BLANK - 1
    rows = [(0.0, 0, GPU_TEMP, largest), (0.0, 0, MEM_CLOCK, smallest), (0.0, 0, POWER, double)]
    recording = write_recording(tmp_path / "extremes.parquet", rows, sidecar(H200))
    assert values_at(recording, (0, GPU_TEMP, 0.5), (0, MEM_CLOCK, 0.5), (0, POWER, 0.5)) == [
        2 ** 63 - 1024, -(2 ** 63), FP64_BLANK - 1]


def test_an_exit_that_skips_atexit_still_removes_the_replay_folder(tmp_path):
    """SIGTERM's exit when the stop hangs is os._exit: the collector removes the replay's folder itself first."""
    recording = write_recording(tmp_path / "rec.parquet", power_step(), sidecar(H200))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = ("import sys\nfrom dcgm_collector import engine, lifecycle\nengine.replay_recording(sys.argv[1])\n"
              "import os\nassert len(os.listdir(sys.argv[2])) == 1\nlifecycle._exit_now(0)\n")
    done = subprocess.run([sys.executable, "-c", script, str(recording), str(tmp)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp) == []
