"""The flight recorder's pieces: which samples a window holds, the file it writes, storms, the disk bound."""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
prometheus_parser = pytest.importorskip("prometheus_client.parser")
openmetrics_parser = pytest.importorskip("prometheus_client.openmetrics.parser")

from dcgm_collector.catalog.counters import parse_counters  # noqa: E402
from dcgm_collector.collect.readers.triggers import TriggersSeen, gpus_of, new_triggers  # noqa: E402
from dcgm_collector.model import RECORDING_COLUMNS, EntityType, GpuInfo, HealthIncident, HealthReport  # noqa: E402
from dcgm_collector.push import recording_file  # noqa: E402
from dcgm_collector.push.recorder import MAX_AFTER_S, Recorder, RecorderError, check_directory  # noqa: E402
from dcgm_collector.push.recording_file import Window, window_columns, write_recording  # noqa: E402
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_BLANK, SAMPLE_OK, EventRing, RingBuffer  # noqa: E402
from dcgm_collector.series.registry import Registry, TargetSeries  # noqa: E402
from dcgm_collector.series.samples import EventSeries, RingSeries, SampleModel, SeriesInfo  # noqa: E402
from dcgm_collector.series.stats import HealthState, SamplerStats  # noqa: E402
from dcgm_collector.series.view import TargetView  # noqa: E402

GPU, GPU_I, LINK = int(EntityType.GPU), int(EntityType.GPU_I), int(EntityType.LINK)
S = 1_000_000   # µs


def _model() -> SampleModel:
    """GPU 0 with a MIG instance (entity 7) and an NvLink (entity 3), and GPU 1; one ring, one XID row."""
    keys = [(GPU, 0, 150), (GPU, 1, 150), (GPU_I, 7, 1001), (LINK, 3, 1100)]
    ring = RingBuffer(keys, 16)
    ring.append(10 * S, [60.0, 61.0, 0.5, 100.0], [SAMPLE_OK, SAMPLE_OK, SAMPLE_OK, SAMPLE_OK])
    ring.append(11 * S, [62.0, np.nan, 0.6, np.nan], [SAMPLE_OK, SAMPLE_BLANK, SAMPLE_OK, SAMPLE_ABSENT])
    ring.append(12 * S, [63.0, 64.0, 0.7, 101.0], [SAMPLE_OK] * 4)
    series = (
        SeriesInfo("DCGM_FI_DEV_GPU_TEMP", (("gpu", "0"),), (GPU, 0), 0, 150, "DCGM_FI_DEV_GPU_TEMP", True, 0),
        # a second copy of GPU 0's series (an HPC job sharing it): the same samples, recorded once
        SeriesInfo("DCGM_FI_DEV_GPU_TEMP", (("gpu", "0"), ("hpc_job", "b")), (GPU, 0), 0, 150,
                   "DCGM_FI_DEV_GPU_TEMP", True, 0),
        SeriesInfo("DCGM_FI_DEV_GPU_TEMP", (("gpu", "1"),), (GPU, 1), 1, 150, "DCGM_FI_DEV_GPU_TEMP", True, 1),
        SeriesInfo("DCGM_FI_PROF_GR_ENGINE_ACTIVE", (("gpu", "0"), ("GPU_I_ID", "1")), (GPU_I, 7), 0, 1001,
                   "DCGM_FI_PROF_GR_ENGINE_ACTIVE", False, 2),
        SeriesInfo("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", (("gpu", "0"), ("nvlink", "0")), (LINK, 3), 0, 1100,
                   "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", False, 3),
    )
    events = EventRing(16)
    events.append(11 * S + 500_000, GPU, 0, 230, 79)
    events.append(11 * S + 600_000, GPU, 1, 230, 13)
    xid = EventSeries("DCGM_FI_DEV_XID_ERRORS", 230, "DCGM_FI_DEV_XID_ERROR", lambda entity, value: ((),))
    gpus = tuple(GpuInfo(i, "NVIDIA H100 80GB HBM3", f"GPU-{i}", f"00000000:{i:02X}:00.0", "", "550", "", "Ok")
                 for i in (0, 1))
    return SampleModel("node", gpus, (RingSeries(ring, series),), events, (xid,))


def _rows(columns: dict) -> list[tuple]:
    names = columns["names"]
    return [(int(t), int(g), int(e), int(gpu), int(f), names[m], None if math.isnan(v) else v, int(s))
            for t, g, e, gpu, f, m, v, s in zip(columns["time"], columns["entity_group"], columns["entity_id"],
                                                columns["gpu"], columns["field_id"], columns["metric"],
                                                columns["value"], columns["status"])]


def test_a_gpus_window_holds_its_own_samples_its_mig_instances_and_nvlinks_with_its_xids():
    rows = _rows(window_columns(_model(), Window(11 * S, 12 * S, frozenset({0}))))
    assert rows == [
        (11 * S, GPU, 0, 0, 150, "DCGM_FI_DEV_GPU_TEMP", 62.0, SAMPLE_OK),
        (11 * S, GPU_I, 7, 0, 1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.6, SAMPLE_OK),
        # the link had no record at 11 s (ABSENT): no sample
        (11 * S + 500_000, GPU, 0, 0, 230, "DCGM_FI_DEV_XID_ERRORS", 79.0, SAMPLE_OK),
        (12 * S, GPU, 0, 0, 150, "DCGM_FI_DEV_GPU_TEMP", 63.0, SAMPLE_OK),
        (12 * S, GPU_I, 7, 0, 1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.7, SAMPLE_OK),
        (12 * S, LINK, 3, 0, 1100, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", 101.0, SAMPLE_OK),
    ]


def test_an_all_entities_window_keeps_blank_samples_without_a_value():
    rows = _rows(window_columns(_model(), Window(0, 11 * S + 700_000, None)))
    assert (11 * S, GPU, 1, 1, 150, "DCGM_FI_DEV_GPU_TEMP", None, SAMPLE_BLANK) in rows
    assert [r[6] for r in rows if r[4] == 230] == [79.0, 13.0]
    assert len(rows) == 4 + 3 + 2   # 10 s: four samples; 11 s: three (one absent); two XIDs


def test_the_file_has_the_shared_columns_and_opens_as_written(tmp_path):
    columns = window_columns(_model(), Window(0, 20 * S, None))
    size = write_recording(str(tmp_path), "recording-x.parquet", columns, {"rows": len(columns["time"])})
    table = pq.read_table(tmp_path / "recording-x.parquet")
    assert [(f.name, str(f.type)) for f in table.schema] == list(RECORDING_COLUMNS)
    first = table.slice(0, 1).to_pylist()[0]
    assert first["entity_group"] == "GPU" and first["metric"] == "DCGM_FI_DEV_GPU_TEMP" and first["status"] == "OK"
    blank = [r for r in table.to_pylist() if r["status"] == "BLANK"]
    assert len(blank) == 1 and blank[0]["value"] is None
    assert json.loads((tmp_path / "recording-x.parquet.json").read_text()) == {"rows": table.num_rows}
    assert size == sum(p.stat().st_size for p in tmp_path.iterdir())


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    columns = window_columns(_model(), Window(0, 20 * S, None))

    def no_rename(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(recording_file.os, "rename", no_rename)
    with pytest.raises(OSError, match="No space left"):
        write_recording(str(tmp_path), "recording-x.parquet", columns, {})
    assert list(tmp_path.iterdir()) == []


def test_triggers_while_a_recording_is_pending_join_it_up_to_the_cap(tmp_path):
    recorder = Recorder(str(tmp_path), before_s=300, after_s=60, host="node")
    first = recorder.trigger("xid", "XID 13", [0], time_s=1000.0)
    assert recorder.trigger("xid", "XID 13", [0], time_s=1030.0) == first
    assert recorder.trigger("xid", "XID 48", [2], time_s=1590.0) == first
    assert recorder.pending == 1
    [pending] = recorder._pending.values()
    assert (pending.since_s, pending.until_s) == (700.0, 1000.0 + MAX_AFTER_S)
    assert pending.gpus == frozenset({0, 2})
    recorder.trigger("signal", "SIGUSR2", None, time_s=1591.0)
    assert pending.gpus is None   # every entity


def test_a_new_recording_lists_the_triggers_of_its_window_that_came_before_it(tmp_path):
    """An early warning 90 s before an XID, each a recording of its own: the XID's names the warning as earlier,
    and the sidecar lists each trigger's GPUs."""
    recorder = Recorder(str(tmp_path), before_s=300, after_s=10, host="node")
    recorder.trigger("warning", "early warning pcie_replays on GPU 1: 40 a minute", [1], time_s=1000.0)
    [warned] = recorder._pending.values()
    recorder._pending.clear()   # written: the XID starts a recording of its own
    recorder.trigger("xid", "XID 79", [1], time_s=1090.0)
    [failed] = recorder._pending.values()
    assert warned.earlier == []
    assert [(t.kind, t.time_s) for t in failed.earlier] == [("warning", 1000.0)]
    model = _model()
    side = recorder._sidecar(failed, model, 0)
    assert side["earlier"] == [{"kind": "warning", "time": "1970-01-01T00:16:40.000000Z",
                                "detail": "early warning pcie_replays on GPU 1: 40 a minute", "gpus": [1]}]
    assert side["triggers"][0]["gpus"] == [1]
    recorder._pending.clear()
    recorder.trigger("xid", "XID 79", [1], time_s=1380.0)   # 380 s on: the warning is out of its window
    [late] = recorder._pending.values()
    assert [t.time_s for t in late.earlier] == [1090.0]


def test_a_trigger_before_the_start_names_its_target_when_the_collector_has_several(tmp_path):
    """The samplers of several hostengines may hand triggers before the recorder has the targets: the file names
    its target all the same."""
    several = Recorder(str(tmp_path / "a"), host="node", name_targets=True)
    assert several.trigger("xid", "XID 13", [0], target="node-b", time_s=1000.0) == [
        "recording-19700101T001640.000000Z-xid-node-b.parquet"]
    one = Recorder(str(tmp_path / "b"), host="node")
    assert one.trigger("xid", "XID 13", [0], target="node", time_s=1000.0) == [
        "recording-19700101T001640.000000Z-xid.parquet"]


def test_the_window_never_reaches_past_the_rings_retention(tmp_path):
    recorder = Recorder(str(tmp_path), before_s=300, after_s=60, retention_s=600, host="node")
    recorder.trigger("xid", "XID 13", [0], time_s=1000.0)
    recorder.trigger("xid", "XID 13", [0], time_s=1400.0)
    [pending] = recorder._pending.values()
    assert pending.until_s - pending.since_s <= 600


def test_the_oldest_recordings_and_their_sidecars_go_first(tmp_path):
    for n in range(4):
        (tmp_path / f"recording-2026010{n}T000000.000000Z-xid.parquet").write_bytes(b"x" * 1000)
        (tmp_path / f"recording-2026010{n}T000000.000000Z-xid.parquet.json").write_bytes(b"{}")
    (tmp_path / "unrelated.txt").write_text("kept")
    recorder = Recorder(str(tmp_path), max_bytes=2100, host="node")
    recorder._bound_disk_use(keep="recording-20260103T000000.000000Z-xid.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "recording-20260102T000000.000000Z-xid.parquet", "recording-20260102T000000.000000Z-xid.parquet.json",
        "recording-20260103T000000.000000Z-xid.parquet", "recording-20260103T000000.000000Z-xid.parquet.json",
        "unrelated.txt"]
    assert recorder.disk_bytes() == 2004


def test_a_crash_mid_write_leaves_a_temporary_file_the_next_start_removes(tmp_path):
    (tmp_path / ".recording-123-recording-x.parquet.tmp").write_bytes(b"half")
    Recorder(str(tmp_path), host="node")
    assert list(tmp_path.iterdir()) == []


def test_the_recorders_metrics_parse_in_both_formats(tmp_path):
    recorder = Recorder(str(tmp_path), host="node")
    recorder.trigger("signal", "SIGUSR2", time_s=1.0)
    text = recorder.render_metrics(False)
    families = {f.name: f for f in prometheus_parser.text_string_to_metric_families(text)}
    assert families["dcgm_collector_recorder_pending"].samples[0].value == 1
    assert families["dcgm_collector_recordings_written"].type == "counter"
    om = {f.name: f for f in openmetrics_parser.text_string_to_metric_families(recorder.render_metrics(True)
                                                                              + "# EOF\n")}
    assert om["dcgm_collector_recorder_failures"].samples[0].value == 0


def test_a_directory_that_cannot_be_made_is_one_line_naming_the_flag(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RecorderError, match=r"^--recorder-dir .*/file/sub: cannot create it: Not a directory$"):
        check_directory(str(blocker / "sub"))
    if os.geteuid() != 0:   # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(RecorderError, match="not writable"):
            check_directory(str(locked))


def test_a_window_without_samples_is_an_empty_file_with_the_columns(tmp_path):
    columns = window_columns(_model(), Window(100 * S, 200 * S, None))
    write_recording(str(tmp_path), "recording-e.parquet", columns, {"rows": 0})
    table = pq.read_table(tmp_path / "recording-e.parquet")
    assert table.num_rows == 0 and [(f.name, str(f.type)) for f in table.schema] == list(RECORDING_COLUMNS)


def test_the_disk_bound_leaves_links_and_directories_named_like_recordings_alone(tmp_path):
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"y" * 5000)
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "recording-20260101T000000.000000Z-xid.parquet").mkdir()
    (folder / "recording-20260102T000000.000000Z-xid.parquet").symlink_to(outside)
    (folder / "recording-20260103T000000.000000Z-xid.parquet").write_bytes(b"x" * 1000)
    (folder / "recording-20260104T000000.000000Z-xid.parquet").write_bytes(b"x" * 1000)
    recorder = Recorder(str(folder), max_bytes=1500, host="node")
    recorder._bound_disk_use(keep="recording-20260104T000000.000000Z-xid.parquet")
    assert sorted(p.name for p in folder.iterdir()) == [
        "recording-20260101T000000.000000Z-xid.parquet", "recording-20260102T000000.000000Z-xid.parquet",
        "recording-20260104T000000.000000Z-xid.parquet"]
    assert outside.read_bytes() == b"y" * 5000 and recorder.disk_bytes() == 1000 and recorder.failures == 0


def test_the_disk_bound_removes_many_recordings_in_one_pass(tmp_path):
    for n in range(20_000):
        (tmp_path / f"recording-2026{n:010d}-xid.parquet").write_bytes(b"x" * 10)
    recorder = Recorder(str(tmp_path), max_bytes=100, host="node")
    recorder._bound_disk_use(keep="recording-20260000019999-xid.parquet")
    assert len(list(tmp_path.iterdir())) == 10 and recorder.disk_bytes() == 100
    assert recorder.index.listing.count == 10


class _Source:
    """A target as the registry gives it to the recorder: its name, and its view and sample model while it samples."""

    def __init__(self, name: str, found) -> None:
        self.name, self.found = name, found

    def series(self):
        return self.found


def _view(model: SampleModel, stats, health) -> TargetView:
    """The read-only view of a sampler holding ``model``'s rings and events, with these counts and health."""
    return TargetView(counters=parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"), gpu_ids=(0, 1), instances=(),
                      levels=(), interval_s=1.0, rings=tuple(r.ring for r in model.rings), events=model.events,
                      stats=stats, read_labels=dict, read_health=lambda: health, read_p2p=dict,
                      read_connected=lambda: True)


def test_the_triggers_of_a_targets_view_start_one_recording_written_from_its_sample_model(tmp_path):
    """XIDs in the event ring, a lost GPU and a failed health check of a target's view, as its sampler's trigger
    reader hands them to the recorder, start one recording, written from the target's sample model; the
    recorder's families join /metrics through the registry."""
    from support import wait_for

    model = _model()
    incident = HealthIncident(0x10, "FAIL", "double-bit ECC", 20, GPU, 0)
    view = _view(model, SamplerStats(lost_gpus=(1,)), HealthState(HealthReport("FAIL", (incident,)), 12.0))
    registry = Registry()
    registry.add_source(_Source("node", TargetSeries("node", view, model)))
    registry.add_source(_Source("idle", None))   # not sampling: nothing to write yet
    recorder = Recorder(str(tmp_path), before_s=5, after_s=1, host="node")
    recorder.start(registry)
    try:
        for trigger in new_triggers("node", view, gpus_of(view), TriggersSeen(), time.time()):
            recorder.trigger(trigger.kind, trigger.detail, trigger.gpus, trigger.target, trigger.time_s)
        wait_for(lambda: recorder.written == 1, timeout=30, what="the recording")
    finally:
        recorder.stop()
    [sidecar] = tmp_path.glob("*.parquet.json")
    meta = json.loads(sidecar.read_text())
    assert [(t["kind"], t["detail"]) for t in meta["triggers"]] == [
        ("xid", "XID 79"), ("xid", "XID 13"), ("lost", "GPU 1 lost"),
        ("health", "health FAIL on GPU 0: double-bit ECC")]
    assert meta["host"] == "node" and [g["gpu"] for g in meta["gpus"]] == [0, 1]
    assert meta["rows"] == len(pq.read_table(str(sidecar)[: -len(".json")])) > 0
    assert b"dcgm_collector_recordings_written_total 1\n" in registry.render()


def test_the_sidecar_lists_the_pods_and_jobs_on_each_gpus_series():
    from dcgm_collector.push.recording_users import users_of
    model = _model()   # GPU 0's series have a second copy for HPC job "b"
    assert users_of(model, [0, 1], 0) == {0: {"pods": [{"hpc_job": "b"}], "processes": []},
                                          1: {"pods": [], "processes": []}}
