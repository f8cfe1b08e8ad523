"""The native drain against the simulated libdcgm: every sample exactly once,
rows by DCGM timestamp, blanks and lost GPUs stored honestly, events with
their own times, nothing committed when DCGM refuses."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import pytest
from dcgm_collector.ext._native import ffi, lib

from dcgm_collector.collect.drain import BatchDrain, DrainResult, drain_events_into, drain_into
from dcgm_collector.dcgm import EntityType
from dcgm_collector.rings.ring import (
    SAMPLE_ABSENT,
    SAMPLE_BLANK,
    SAMPLE_NOT_SUPPORTED,
    SAMPLE_OK,
    EventRing,
    RingBuffer,
    SeriesKey,
)

FE_GPU = int(EntityType.GPU)
MEM_TEMP, GPU_TEMP, POWER, ENERGY, GPU_UTIL, XID, FB_USED, UUID = 140, 150, 155, 156, 203, 230, 252, 54
FIELDS = [GPU_TEMP, POWER, GPU_UTIL, FB_USED]   # ints and doubles
NO_DATA, NOT_WATCHED = -14, -16


def _scenario(tmp_path, text: str) -> str:
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return str(path)


def _ring(gpus, fields, capacity=1000) -> RingBuffer:
    return RingBuffer([SeriesKey(FE_GPU, g, f) for g in gpus for f in fields], capacity)


def _watched(handle, fields, name, freq_us=100_000):
    group = handle.all_gpus()
    field_groups = handle.create_field_groups(fields, name)
    handle.watch(group, field_groups, update_freq_us=freq_us, max_keep_age_s=60.0)
    return group, field_groups


def _start_us() -> int:
    start = ffi.new("long long *")
    assert lib.dcgmSimGetStartTime(start) == 0
    return int(start[0])


def _cells(ring: RingBuffer) -> dict[SeriesKey, list[tuple[int, int, float]]]:
    """Every stored cell, per series: (ts, status, value)."""
    rows = ring.rows_since(0)
    cells = defaultdict(list)
    for r, ts in enumerate(rows.ts.tolist()):
        for s, key in enumerate(ring.series):
            if rows.status[r, s] != SAMPLE_ABSENT:
                cells[key].append((ts, int(rows.status[r, s]), float(rows.values[r, s])))
    return cells


def _reference(values, until: int) -> dict[SeriesKey, list[tuple[int, int, float]]]:
    """The same through the Python binding: (ts, status, value) of every sample before until."""
    cells = defaultdict(list)
    for v in values:
        if v.status != 0 or v.ts >= until:
            continue
        key = SeriesKey(v.entity_group, v.entity_id, v.field_id)
        if v.value is None:
            status = SAMPLE_NOT_SUPPORTED if v.blank_kind == "NOT_SUPPORTED" else SAMPLE_BLANK
            cells[key].append((v.ts, status, float("nan")))
        else:
            cells[key].append((v.ts, SAMPLE_OK, float(v.value)))
    return cells


def _same(got, expected) -> None:
    assert set(got) == set(expected)
    for key in expected:
        assert [c[:2] for c in got[key]] == [c[:2] for c in expected[key]], key
        np.testing.assert_array_equal([c[2] for c in got[key]], [c[2] for c in expected[key]], err_msg=str(key))


def test_drains_with_the_cursor_store_every_sample_exactly_once(handle):
    group, fields = _watched(handle, FIELDS, "exactly-once")
    gpus = handle.gpu_ids()
    ring = _ring(gpus, FIELDS)
    cursor, results = 0, []
    for _ in range(4):
        time.sleep(0.3)
        result = drain_into(ring, handle._h(), group.id, fields[0].id, cursor)
        assert result.rc == 0 and result.next_cursor > cursor
        results.append(result)
        cursor = result.next_cursor
    _, values = handle.values_since(group, fields, 0)
    expected = _reference(values, until=cursor)
    got = _cells(ring)
    _same(got, expected)
    stored = sum(len(c) for c in got.values())
    assert stored == sum(r.samples for r in results) and stored > 8 * len(FIELDS) * 10
    rows = ring.rows_since(0)
    assert (np.diff(rows.ts) > 0).all()
    assert ring.rows_written == sum(r.rows for r in results) == len(rows.ts)
    # one update pass, one timestamp: on a steady node every row is complete
    assert (rows.status != SAMPLE_ABSENT).all()
    assert sum(r.late_rows + r.dropped_rows + r.unmapped + r.errors for r in results) == 0


def test_nothing_new_is_no_data_and_the_cursor_still_moves(open_node):
    handle = open_node("2", mode="manual")
    group, fields = _watched(handle, FIELDS, "manual")
    ring = _ring([0, 1], FIELDS)
    first = drain_into(ring, handle._h(), group.id, fields[0].id, 0)
    assert (first.rc, first.rows, first.samples) == (0, 1, 2 * len(FIELDS))  # the watch samples once
    idle = drain_into(ring, handle._h(), group.id, fields[0].id, first.next_cursor)
    assert (idle.rc, idle.rows, idle.samples, idle.no_data) == (0, 0, 0, 2 * len(FIELDS))
    assert idle.next_cursor > first.next_cursor
    time.sleep(0.15)  # an update pass samples only watches that are due
    handle.update_all_fields()
    updated = drain_into(ring, handle._h(), group.id, fields[0].id, idle.next_cursor)
    assert (updated.rows, updated.samples, updated.no_data) == (1, 2 * len(FIELDS), 0)
    assert ring.rows_written == 2


def test_a_refused_read_commits_nothing_and_keeps_the_cursor(handle):
    group, watched = _watched(handle, [POWER], "watched")
    # POWER is watched (watches belong to fields), ENERGY is not: DCGM delivers
    # GPU 0's power samples, then fails the whole call on GPU 0's energy.
    mixed = handle.create_field_groups([POWER, ENERGY], "mixed")
    ring = _ring(handle.gpu_ids(), [POWER, ENERGY])
    time.sleep(0.2)
    result = drain_into(ring, handle._h(), group.id, mixed[0].id, 12345)
    assert result.rc == NOT_WATCHED
    assert result.next_cursor == 12345
    assert (result.rows, result.samples) == (0, 0)
    assert ring.rows_written == 0 and len(ring.rows_since(0).ts) == 0
    assert drain_into(ring, handle._h(), group.id, watched[0].id, 0).rows > 0


def test_records_of_other_series_and_string_fields_are_counted_not_stored(handle):
    group, fields = _watched(handle, [GPU_TEMP, UUID], "unmapped")
    ring = _ring([0], [GPU_TEMP, UUID])
    time.sleep(0.25)
    result = drain_into(ring, handle._h(), group.id, fields[0].id, 0)
    assert result.rc == 0
    n_gpus = len(handle.gpu_ids())
    per_series = result.samples  # GPU 0's temperature only
    assert per_series >= 2
    assert result.unmapped == per_series * (2 * n_gpus - 1)
    rows = ring.rows_since(0)
    assert (rows.status[:, ring.index((FE_GPU, 0, UUID))] == SAMPLE_ABSENT).all()


def test_a_300ms_spike_shows_in_the_window_max_at_a_100ms_watch_and_1s_ticks(open_node):
    # dcgm_collector/sim/scenarios/spikes.toml: 300 ms at 100 % every 2 s over a 5 % floor
    from dcgm_collector import engine

    handle = open_node(str(engine.library_dir().parent / "scenarios" / "spikes.toml"))
    group, fields = _watched(handle, [GPU_UTIL], "spikes")
    gpus = handle.gpu_ids()
    ring = _ring(gpus, [GPU_UTIL])
    cursor, start, window_max = 0, time.monotonic(), []
    for tick in (1, 2):  # 2 s of 1 s ticks hold one full spike period
        time.sleep(max(0.0, start + tick + 0.05 - time.monotonic()))
        result = drain_into(ring, handle._h(), group.id, fields[0].id, cursor)
        assert result.rc == 0
        cursor = result.next_cursor
        stats = ring.window(1_000_000)
        window_max.append(stats.max)
        assert (stats.min <= 10).all()
    # utilisation is the busy share of a 200 ms sample period (as the H200 showed),
    # so a 300 ms burst reads at least half busy in one of them
    assert (np.max(window_max, axis=0) >= 50).all(), window_max
    # and that period's reading is held over two 100 ms samples, not one
    rows = ring.rows_since(0)
    assert ((rows.values >= 50).sum(axis=0) >= 2).all()


def test_a_lost_gpu_stops_its_series_and_the_others_carry_on(open_node, tmp_path):
    spec = _scenario(tmp_path, 'seed = 2\n[[gpu]]\nmodel = "H100"\ncount = 3\n'
                               '[[event]]\nat = 0.6\ngpu = 1\nkind = "lost"\n')
    handle = open_node(spec)
    group, fields = _watched(handle, [POWER, GPU_UTIL], "lost")
    _, xid_fields = _watched(handle, [XID], "lost-xid")
    ring, events = _ring([0, 1, 2], [POWER, GPU_UTIL]), EventRing(16)
    lost_at = _start_us() + 600_000
    time.sleep(1.4)
    result = drain_into(ring, handle._h(), group.id, fields[0].id, 0)
    assert result.rc == 0
    rows = ring.rows_since(0)
    gpu1 = [ring.index((FE_GPU, 1, f)) for f in (POWER, GPU_UTIL)]
    others = [i for i in range(ring.n_series) if i not in gpu1]
    before, after = rows.ts <= lost_at, rows.ts > lost_at
    assert before.sum() >= 4 and after.sum() >= 6
    assert (rows.status[before] == SAMPLE_OK).all()
    # DCGM goes on sampling a lost GPU and stores blanks: the series carries blanks, not readings
    assert (rows.status[after][:, gpu1] == SAMPLE_BLANK).all()
    assert (rows.status[after][:, others] == SAMPLE_OK).all()
    stats = ring.window(10_000_000)
    assert (stats.last_ts > lost_at + 500_000).all()   # GPU 1's latest samples are its blanks
    assert (rows.values[before][:, gpu1] > 0).all()
    later = drain_into(ring, handle._h(), group.id, fields[0].id, result.next_cursor)
    assert later.rc == 0
    xid = drain_events_into(events, handle._h(), group.id, xid_fields[0].id, 0)
    assert xid.rc == 0 and xid.rows == 1
    got = events.since(0)
    assert (got.ts.tolist(), got.entity_id.tolist(), got.value.tolist()) == ([lost_at], [1], [79])


def test_xid_events_land_in_the_event_ring_with_their_own_times(open_node, tmp_path):
    spec = _scenario(tmp_path, 'seed = 3\n[[gpu]]\nmodel = "H100"\ncount = 2\n'
                               '[[event]]\nat = 0.3\ngpu = 0\nkind = "xid"\nxid = 48\ncount = 3\ninterval = 0.1\n')
    handle = open_node(spec)
    group, fields = _watched(handle, [XID], "xid")
    start = _start_us()
    events = EventRing(8)
    time.sleep(1.0)
    result = drain_events_into(events, handle._h(), group.id, fields[0].id, 0)
    assert (result.rc, result.rows, result.samples, result.no_data) == (0, 3, 3, 1)  # GPU 1: NO_DATA
    got = events.since(0)
    assert [t - start for t in got.ts.tolist()] == [300_000, 400_000, 500_000]
    assert got.value.tolist() == [48, 48, 48]
    assert got.entity_group.tolist() == [FE_GPU] * 3 and got.entity_id.tolist() == [0] * 3
    assert got.field_id.tolist() == [XID] * 3
    again = drain_events_into(events, handle._h(), group.id, fields[0].id, result.next_cursor)
    assert (again.rc, again.rows, again.no_data) == (0, 0, 2)
    assert events.rows_written == 3


def test_samples_with_differing_timestamps_get_rows_of_their_own(open_node, tmp_path):
    # An event stamped between two update passes shares a drain with periodic samples.
    spec = _scenario(tmp_path, 'seed = 3\n[[gpu]]\nmodel = "H100"\ncount = 2\n'
                               '[[event]]\nat = 0.35\ngpu = 1\nkind = "xid"\nxid = 31\n')
    handle = open_node(spec)
    group, fields = _watched(handle, [POWER, XID], "mixed")
    ring = _ring([0, 1], [POWER, XID])
    time.sleep(0.8)
    assert drain_into(ring, handle._h(), group.id, fields[0].id, 0).rc == 0
    rows = ring.rows_since(0)
    xid_column = ring.index((FE_GPU, 1, XID))
    event_rows = np.flatnonzero(rows.status[:, xid_column] == SAMPLE_OK)
    assert len(event_rows) == 1
    assert rows.ts[event_rows[0]] == _start_us() + 350_000
    assert rows.values[event_rows[0], xid_column] == 31
    # the event's row holds nothing else; the pass rows hold no event
    assert (np.delete(rows.status[event_rows[0]], xid_column) == SAMPLE_ABSENT).all()
    assert (np.delete(rows.status, event_rows[0], axis=0)[:, [0, 2]] == SAMPLE_OK).all()


def test_a_small_ring_keeps_the_newest_rows(handle):
    group, fields = _watched(handle, [POWER], "wrap")
    ring = _ring(handle.gpu_ids(), [POWER], capacity=4)
    time.sleep(0.8)
    result = drain_into(ring, handle._h(), group.id, fields[0].id, 0)
    assert result.rc == 0 and result.rows == 4 and result.dropped_rows >= 3
    _, values = handle.values_since(group, fields, 0)
    times = sorted({v.ts for v in values if v.status == 0 and v.ts < result.next_cursor})
    assert ring.rows_since(0).ts.tolist() == times[-4:]
    time.sleep(0.25)
    more = drain_into(ring, handle._h(), group.id, fields[0].id, result.next_cursor)
    assert more.rows >= 2 and ring.rows_written == 4 + more.rows
    assert ring.rows_since(0).ts[-more.rows - 1] == times[-1]


def test_a_field_the_gpu_lacks_is_not_supported_not_a_number(open_node, tmp_path):
    handle = open_node(_scenario(tmp_path, 'seed = 1\n[[gpu]]\nmodel = "T4"\n'))
    group, fields = _watched(handle, [MEM_TEMP, GPU_TEMP], "t4")
    ring = _ring([0], [MEM_TEMP, GPU_TEMP])
    time.sleep(0.3)
    result = drain_into(ring, handle._h(), group.id, fields[0].id, 0)
    assert result.rc == 0 and result.blanks == result.rows >= 2
    rows = ring.rows_since(0)
    assert (rows.status[:, 0] == SAMPLE_NOT_SUPPORTED).all() and np.isnan(rows.values[:, 0]).all()
    assert (rows.status[:, 1] == SAMPLE_OK).all()
    stats = ring.window(10_000_000)
    assert stats.count.tolist() == [0, len(rows.ts)]
    assert np.isnan(stats.max[0]) and stats.last_status[0] == SAMPLE_NOT_SUPPORTED


def test_bad_arguments_are_refused():
    ring = _ring([0], [POWER])
    with pytest.raises(TypeError):
        drain_into(None, 1, 1, 1, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        drain_into(ring, 1, 1, 1, -1)
    with pytest.raises(TypeError):
        drain_events_into(ring, 1, 1, 1, 0)  # type: ignore[arg-type]
    assert DrainResult(0, 1, 0, 0, 0, 0, 0).ok


def test_a_batch_stores_what_one_drain_per_ring_would_in_one_call(open_node, tmp_path):
    spec = _scenario(tmp_path, 'seed = 3\n[[gpu]]\nmodel = "H100"\ncount = 2\n'
                               '[[event]]\nat = 0.3\ngpu = 1\nkind = "xid"\nxid = 79\n')
    handle = open_node(spec)
    temps, power = [GPU_TEMP, MEM_TEMP], [POWER, GPU_UTIL]
    group, temp_fields = _watched(handle, temps, "temps")
    _, power_fields = _watched(handle, power, "power")
    _, xid_fields = _watched(handle, [XID], "xid")
    # read through a field group of all three's fields, which is not watched itself
    everything = handle.create_field_groups(temps + power + [XID], "everything")
    batch_rings = _ring([0, 1], temps), _ring([0, 1], power)
    batch_events = EventRing(8)
    batch = BatchDrain(batch_rings, batch_events, [XID])
    alone_rings = _ring([0, 1], temps), _ring([0, 1], power)
    alone_events = EventRing(8)
    # each of the single drains goes on from its own cursor, as a caller of it would;
    # the engine samples on between the batch and them, so they may hold newer samples
    cursor, alone_cursors, batch_samples = 0, [0, 0, 0], 0
    for _ in range(3):
        time.sleep(0.25)
        rc, results = batch.drain(handle._h(), group.id, everything[0].id, cursor)
        assert rc == 0 and len(results) == 3
        assert len({r.next_cursor for r in results}) == 1 and results[0].next_cursor > cursor
        batch_samples += sum(r.samples for r in results[:2])
        for k, (ring, fields) in enumerate(zip(alone_rings, (temp_fields, power_fields))):
            one = drain_into(ring, handle._h(), group.id, fields[0].id, alone_cursors[k])
            assert one.rc == 0 and one.next_cursor >= results[0].next_cursor
            alone_cursors[k] = one.next_cursor
        xid = drain_events_into(alone_events, handle._h(), group.id, xid_fields[0].id, alone_cursors[2])
        alone_cursors[2] = xid.next_cursor
        cursor = results[0].next_cursor
    for got, expected in zip(batch_rings, alone_rings):
        got_cells, expected_cells = _cells(got), _cells(expected)
        assert got.rows_written > 0 and expected.rows_written >= got.rows_written
        # up to the batch's newest sample of a series, the single drains stored the same
        newest = {key: cells[-1][0] for key, cells in got_cells.items()}
        _same(got_cells, {key: [c for c in cells if c[0] <= newest.get(key, -1)]
                          for key, cells in expected_cells.items()})
    assert batch_events.since(0).value.tolist() == alone_events.since(0).value.tolist() == [79]
    assert batch_events.since(0).entity_id.tolist() == [1]
    assert sum(len(c) for ring in batch_rings for c in _cells(ring).values()) == batch_samples


def test_a_refused_batch_commits_nothing_in_any_ring(handle):
    group, _ = _watched(handle, [POWER], "watched")
    # ENERGY is watched by nobody: DCGM delivers GPU 0's power, then fails the call on its energy
    mixed = handle.create_field_groups([POWER, ENERGY], "mixed")
    rings = _ring(handle.gpu_ids(), [POWER]), _ring(handle.gpu_ids(), [ENERGY])
    events = EventRing(8)
    time.sleep(0.2)
    rc, results = BatchDrain(rings, events, [XID]).drain(handle._h(), group.id, mixed[0].id, 12345)
    assert rc == NOT_WATCHED
    assert [r.next_cursor for r in results] == [12345] * 3
    assert [r.rows for r in results] == [0, 0, 0]
    assert [ring.rows_written for ring in rings] == [0, 0] and events.rows_written == 0


def test_records_of_no_ring_of_a_batch_are_counted_on_its_first(handle):
    group, fields = _watched(handle, [POWER, GPU_TEMP], "two")
    ring = _ring(handle.gpu_ids(), [POWER])
    time.sleep(0.2)
    rc, results = BatchDrain([ring]).drain(handle._h(), group.id, fields[0].id, 0)
    assert rc == 0 and len(results) == 1
    assert results[0].unmapped > 0 and results[0].samples > 0
    assert ring.rows_written == results[0].rows


def test_a_batch_refuses_what_it_cannot_drain():
    ring = _ring([0], [POWER])
    with pytest.raises(ValueError):
        BatchDrain([])
    with pytest.raises(ValueError):
        BatchDrain([ring, ring])
    with pytest.raises(TypeError):
        BatchDrain([EventRing(4)])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        BatchDrain([_ring([0], [POWER]) for _ in range(lib.DCGMC_DRAIN_MAX_RINGS + 1)])
