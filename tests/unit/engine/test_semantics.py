"""DCGM semantics of the simulated library, seen through the Python binding.

What a collector relies on: the model behind the samples is deterministic
per seed, retention bounds the cache, NOT_WATCHED / unknown / NOT_SUPPORTED /
lost-GPU readings arrive the way DCGM delivers them, and event fields get a
sample only when something happens.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict

import pytest
from dcgm_collector.ext._native import ffi, lib

from dcgm_collector import engine
from dcgm_collector.dcgm import DcgmNotWatchedError, EntityType

GPU_TEMP, MEM_TEMP, POWER, ENERGY, GPU_UTIL, XID, FB_USED = 150, 140, 155, 156, 203, 230, 252
FE_GPU = int(EntityType.GPU)
OK, NOT_WATCHED, UNKNOWN_FIELD = 0, -16, -13


def _scenario(tmp_path, text: str, name: str = "s.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _series(values):
    by_series = defaultdict(list)
    for v in values:
        if v.status == OK and v.value is not None:
            by_series[(v.entity_id, v.field_id)].append(v)
    return by_series


_VALUES_AT = """
import json, sys
from dcgm_collector import dcgm, engine
from dcgm_collector.ext._native import ffi, lib
with dcgm.Handle.embedded(library=engine.library_path()):
    out = []
    record = ffi.new("dcgmFieldValue_v1 *")
    for gpu in range(4):
        for field in (150, 155, 156, 203, 252, 1001, 54):
            for t in (0, 250_000, 3_000_000, 61_000_000, 900_000_000):
                rc = lib.dcgmSimGetValueAt(gpu, field, t, record)
                v = ffi.string(record.value.str).decode() if field == 54 else (
                    record.value.dbl if record.fieldType == ord("d") else record.value.i64)
                out.append([rc, record.status, v])
print(json.dumps(out))
"""


def _values_in_a_new_process(spec: str, cwd) -> list:
    env = dict(os.environ, DCGM_SIM_SCENARIO=spec)
    # cwd outside the checkout: `python -c` puts the cwd first on sys.path, and the source
    # folder has no compiled extension
    done = subprocess.run([sys.executable, "-c", _VALUES_AT], env=env, capture_output=True, text=True,
                          timeout=60, check=True, cwd=cwd)
    return json.loads(done.stdout)


def test_same_seed_gives_the_same_values_in_another_process(tmp_path):
    body = '[[gpu]]\nmodel = "H100"\ncount = 2\n[[gpu]]\nmodel = "A100"\ncount = 2\nworkload = "spikes"\n'
    first = _values_in_a_new_process(_scenario(tmp_path, "seed = 5\n" + body, "a.toml"), tmp_path)
    again = _values_in_a_new_process(_scenario(tmp_path, "seed = 5\n" + body, "b.toml"), tmp_path)
    other = _values_in_a_new_process(_scenario(tmp_path, "seed = 6\n" + body, "c.toml"), tmp_path)
    assert all(rc == OK for rc, _, _ in first)
    assert first == again
    differing = [a for a, b in zip(first, other) if a != b]
    assert len(differing) > len(first) // 2


def test_stored_samples_are_the_models_values_at_their_timestamps(handle):
    group = handle.all_gpus()
    fields = handle.create_field_groups([GPU_TEMP, POWER, GPU_UTIL, FB_USED], "model-check")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=30.0)
    time.sleep(0.5)
    _, values = handle.values_since(group, fields)
    start = ffi.new("long long *")
    assert lib.dcgmSimGetStartTime(start) == OK
    record = ffi.new("dcgmFieldValue_v1 *")
    checked = 0
    for v in values:
        assert v.status == OK
        assert lib.dcgmSimGetValueAt(v.entity_id, v.field_id, v.ts - start[0], record) == OK
        expected = record.value.dbl if v.field_type == "d" else record.value.i64
        assert v.value == expected, v
        checked += 1
    assert checked >= 8 * 4 * 3


def test_a_100ms_watch_samples_ten_times_a_second_and_one_pass_shares_a_timestamp(handle):
    group = handle.all_gpus()
    fields = handle.create_field_groups([GPU_TEMP, POWER], "rate")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=30.0)
    cursor, _ = handle.values_since(group, fields)
    time.sleep(1.05)
    _, values = handle.values_since(group, fields, cursor)
    series = _series(values)
    assert len(series) == 16
    for samples in series.values():
        stamps = [s.ts for s in samples]
        assert 8 <= len(stamps) <= 12
        assert stamps == sorted(set(stamps))
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        assert all(90_000 <= g <= 200_000 for g in gaps), gaps
    # every sample of one pass carries the pass's time: all series share stamps
    stamp_sets = {tuple(s.ts for s in samples[:5]) for samples in series.values()}
    assert len(stamp_sets) == 1


def test_retention_keeps_only_max_keep_age(handle):
    group = handle.all_gpus()
    fields = handle.create_field_groups([POWER], "retention")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=1.0)
    time.sleep(2.5)
    now_us = time.time_ns() // 1000
    _, values = handle.values_since(group, fields)
    series = _series(values)
    assert len(series) == len(group.entities()) >= 1
    for samples in series.values():
        assert now_us - samples[0].ts <= 1_300_000
        assert 9 <= len(samples) <= 14


def test_watches_belong_to_the_field_not_to_the_field_group(handle):
    group = handle.all_gpus()
    watched_through = handle.create_field_groups([GPU_TEMP, POWER], "watch-via")
    read_through = handle.create_field_groups([POWER, GPU_TEMP], "read-via")
    handle.watch(group, watched_through, update_freq_us=100_000, max_keep_age_s=10.0)
    time.sleep(0.3)
    latest = handle.latest_values(group, read_through)
    assert len(latest) == 16
    assert all(v.status == OK and v.value is not None for v in latest)


def test_an_unwatched_field_is_not_watched(handle):
    group = handle.all_gpus()
    fields = handle.create_field_groups([ENERGY], "never-watched")
    latest = handle.latest_values(group, fields)
    assert {(v.status, v.blank_kind, v.ts) for v in latest} == {(NOT_WATCHED, "NOT_WATCHED", 0)}
    with pytest.raises(DcgmNotWatchedError) as caught:
        handle.values_since(group, fields)
    assert caught.value.code == NOT_WATCHED


def test_an_unknown_field_id_reads_as_unknown_field(handle):
    values = handle.entity_latest_values(FE_GPU, 0, [GPU_TEMP, 99])
    assert [v.field_id for v in values] == [GPU_TEMP, 99]
    assert values[1].status == UNKNOWN_FIELD and values[1].value is None


def test_a_field_the_model_lacks_is_stored_as_ok_with_the_not_supported_sentinel(open_node, tmp_path):
    handle = open_node(_scenario(tmp_path, 'seed = 1\n[[gpu]]\nmodel = "T4"\n'))
    group = handle.all_gpus()
    fields = handle.create_field_groups([MEM_TEMP, GPU_TEMP], "t4")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=10.0)
    latest = {v.field_id: v for v in handle.latest_values(group, fields)}
    assert latest[MEM_TEMP].status == OK
    assert latest[MEM_TEMP].ts > 0
    assert latest[MEM_TEMP].value is None and latest[MEM_TEMP].blank_kind == "NOT_SUPPORTED"
    assert isinstance(latest[GPU_TEMP].value, int)


def test_a_lost_gpu_stops_its_series_and_others_carry_on(open_node, tmp_path):
    spec = _scenario(tmp_path, 'seed = 2\n[[gpu]]\nmodel = "H100"\ncount = 3\n'
                               '[[event]]\nat = 0.6\ngpu = 1\nkind = "lost"\n')
    handle = open_node(spec)
    group = handle.all_gpus()
    fields = handle.create_field_groups([POWER, XID], "lost")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=30.0)
    time.sleep(1.6)
    assert handle.gpu_status(1) == "Lost"
    assert handle.gpu_ids(supported_only=True) == [0, 2]
    assert handle.gpu_ids(supported_only=False) == [0, 1, 2]
    start = ffi.new("long long *")
    lib.dcgmSimGetStartTime(start)
    _, values = handle.values_since(group, fields)
    series = _series(values)
    lost_at = start[0] + 600_000
    assert max(s.ts for s in series[(1, POWER)]) <= lost_at
    assert max(s.ts for s in series[(0, POWER)]) > lost_at + 500_000
    assert [s.value for s in series[(1, XID)]] == [79]
    assert (0, XID) not in series


def test_xid_events_arrive_with_their_own_times_and_nothing_else(open_node, tmp_path):
    spec = _scenario(tmp_path, 'seed = 3\n[[gpu]]\nmodel = "H100"\ncount = 2\n'
                               '[[event]]\nat = 0.3\ngpu = 0\nkind = "xid"\nxid = 48\ncount = 3\ninterval = 0.1\n')
    handle = open_node(spec)
    group = handle.all_gpus()
    fields = handle.create_field_groups([XID], "xid")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=30.0)
    start = ffi.new("long long *")
    lib.dcgmSimGetStartTime(start)
    time.sleep(1.0)
    cursor, values = handle.values_since(group, fields)
    events = _series(values)[(0, XID)]
    assert [e.value for e in events] == [48, 48, 48]
    assert [e.ts - start[0] for e in events] == [300_000, 400_000, 500_000]
    assert [v.status for v in values if v.entity_id == 1] == [-14]  # NO_DATA: no event on GPU 1
    _, later = handle.values_since(group, fields, cursor)
    assert {v.status for v in later} == {-14}


def test_manual_mode_samples_only_when_asked(open_node):
    handle = open_node("2", mode="manual")
    group = handle.all_gpus()
    fields = handle.create_field_groups([POWER], "manual")
    handle.watch(group, fields, update_freq_us=100_000, max_keep_age_s=10.0)
    cursor, first = handle.values_since(group, fields)
    assert len(_series(first)) == 2  # the watch request itself samples once
    time.sleep(0.3)
    cursor, idle = handle.values_since(group, fields, cursor)
    assert {v.status for v in idle} == {-14}
    handle.update_all_fields()
    _, updated = handle.values_since(group, fields, cursor)
    assert [len(s) for s in _series(updated).values()] == [1, 1]


def test_scenario_errors_name_the_file_and_line(tmp_path):
    bad = _scenario(tmp_path, 'seed = 1\n[[gpu]]\nmodel = "V100"\n', "bad.toml")
    with pytest.raises(ValueError, match=r"bad\.toml:3: unknown model \"V100\""):
        engine.check_scenario(bad)
