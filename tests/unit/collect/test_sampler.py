"""The sampler thread against the simulated hostengine.

Each test opens its own simulated node and runs a sampler for a second or
two at short intervals; results are checked against what DCGM itself holds
(an independent values-since read through the Python API) or against the
scenario's known timeline.  The tests of the tick schedule run the sampler on
a manual clock (dcgm_collector.clock), one tick per step, so they wait on no
deadline in real time.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from dcgm_collector.ext._native import ffi, lib

import dcgm_collector.engine
from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.clock import ManualClock
from dcgm_collector.collect import drain
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.readers import Reader
from dcgm_collector.collect.sampler import THREAD_NAME, Sampler
from dcgm_collector.dcgm import DcgmError, EntityType
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED, SAMPLE_OK

FE_GPU = int(EntityType.GPU)
TEMP, POWER, UTIL, FB_USED, FAN, SM_ACTIVE, XID = 150, 155, 203, 252, 191, 1002, 230
NOT_WATCHED = -16
SCENARIOS = Path(dcgm_collector.engine.__file__).parent / "scenarios"

BASIC = """\
DCGM_FI_DEV_GPU_TEMP, gauge, temperature
DCGM_FI_DEV_POWER_USAGE, gauge, power
DCGM_FI_DEV_GPU_UTIL, gauge, utilisation
DCGM_FI_DEV_FB_USED, gauge, framebuffer used
DCGM_FI_DEV_FAN_SPEED, gauge, fan speed (not supported by the simulated boards)
DCGM_FI_PROF_SM_ACTIVE, gauge, SM active
DCGM_FI_DRIVER_VERSION, label, driver
DCGM_FI_DEV_UUID, label, uuid
DCGM_EXP_XID_ERRORS_COUNT, gauge, XIDs
"""
ONE_GROUP = "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, p\n"


def _scenario(tmp_path, text: str) -> str:
    path = tmp_path / "node.toml"
    path.write_text(text)
    return str(path)


def _node_start_us() -> int:
    start = ffi.new("long long *")
    lib.dcgmSimGetStartTime(start)
    return int(start[0])


def _wait_for(condition, timeout: float = 5.0, step: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the sampler")
        time.sleep(step)


def _tick_until(clock: ManualClock, condition, timeout: float = 5.0) -> None:
    """Step a sampler on ``clock`` one tick at a time until ``condition()``; what the engine has sampled by
    then still takes real time, so the steps leave it a few milliseconds each."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the sampler")
        clock.wake_next()
        time.sleep(0.005)


def _sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def _ring_cells(ring, rows) -> list[tuple]:
    """(entity group, entity id, field id, ts, value or blank kind) of every stored cell."""
    cells = []
    for r, ts in enumerate(rows.ts.tolist()):
        for c, key in enumerate(ring.series):
            status = int(rows.status[r, c])
            if status == SAMPLE_ABSENT:
                continue
            value = float(rows.values[r, c]) if status == SAMPLE_OK else status
            cells.append((key.entity_group, key.entity_id, key.field_id, ts, value))
    return cells


def _dcgm_cells(values, until_us: int) -> list[tuple]:
    """The same tuples from FieldValues read through the Python API, up to until_us."""
    cells = []
    for v in values:
        if v.status != 0 or v.ts > until_us:
            continue  # NO_DATA records carry no sample
        if v.value is None:
            value = SAMPLE_NOT_SUPPORTED if v.blank_kind == "NOT_SUPPORTED" else SAMPLE_BLANK
        else:
            value = float(v.value)
        cells.append((v.entity_group, v.entity_id, v.field_id, v.ts, value))
    return cells


def test_every_sample_arrives_in_the_rings_exactly_once(open_node):
    handle = open_node("3")
    with Sampler(handle, parse_counters(BASIC),
                 SamplingOptions(collect_interval_ms=300, watch_interval_ms=100, retention_s=60)) as sampler:
        _wait_for(lambda: sampler.stats.ticks >= 7)
        assert len(sampler.rings) == 2  # values and profiling
        for watch, ring in sampler.rings.items():
            rows = ring.rows_since(0)
            assert len(rows.ts) >= 15
            assert np.all(np.diff(rows.ts) > 0), "a timestamp is stored in two rows"
            newest = int(rows.ts[-1])
            # a second field group over the same fields reads the same cache
            fields = handle.create_field_groups(watch.field_ids, f"check-{watch.kind}")
            _, values = handle.values_since(sampler.group, fields)
            ring_cells = _ring_cells(ring, rows)
            dcgm_cells = _dcgm_cells(values, newest)
            assert len(ring_cells) == len(set(ring_cells)), "a sample is stored twice"
            assert sorted(ring_cells) == sorted(dcgm_cells)
        assert sampler.stats.samples >= sum(len(_ring_cells(r, r.rows_since(0))) for r in sampler.rings.values())
    values_ring = next(r for w, r in sampler.rings.items() if w.kind == "values")
    fan = values_ring.index((FE_GPU, 0, FAN))
    assert set(values_ring.rows_since(0).status[:, fan].tolist()) == {SAMPLE_NOT_SUPPORTED}
    assert sampler.stats.errors_by_code == {}
    assert sampler.stats.last_sample_time is not None
    assert abs(sampler.stats.last_sample_time - time.time()) < 5
    assert sampler.labels[(FE_GPU, 2)]["DCGM_FI_DRIVER_VERSION"] == "550.54.15"
    assert sampler.labels[(FE_GPU, 2)]["DCGM_FI_DEV_UUID"].startswith("GPU-")


def test_a_300_ms_spike_shows_in_the_window_max_at_a_1_s_collect(open_node):
    handle = open_node(str(SCENARIOS / "spikes.toml"))
    counters = parse_counters("DCGM_FI_DEV_GPU_UTIL, gauge, utilisation\n")
    with Sampler(handle, counters, SamplingOptions(collect_interval_ms=1000, watch_interval_ms=100)) as sampler:
        ring = next(iter(sampler.rings.values()))
        # spikes come every 2 s on every GPU; 2.4 s of samples hold at least one per GPU
        _wait_for(lambda: ring.rows_written and np.ptp(ring.rows_since(0).ts) >= 2_400_000, timeout=6)
        ticks = sampler.stats.ticks
    rows = ring.rows_since(0)
    stats = ring.window(int(rows.ts[-1] - rows.ts[0]), now_us=int(rows.ts[-1]))
    assert ticks <= 4  # the rings got 100 ms samples from a handful of 1 s drains
    # utilisation is the busy share of a 200 ms period, so a 300 ms burst reads at least 50 %
    assert np.all(stats.max >= 50), stats.max
    assert np.all(stats.min < 10)  # the 5 % floor between spikes (with noise)
    # a spike reads high in 2-4 samples of 20: a reading once a second mostly misses it
    at_spike = (rows.values >= 50).mean(axis=0)
    assert np.all(at_spike < 0.3)


def test_wrap_around_keeps_the_newest_samples(open_node):
    handle = open_node("2")
    with Sampler(handle, parse_counters(ONE_GROUP),
                 SamplingOptions(collect_interval_ms=200, watch_interval_ms=100, retention_s=0.5)) as sampler:
        ring = next(iter(sampler.rings.values()))
        capacity = ring.capacity
        assert capacity < 10
        _wait_for(lambda: ring.rows_written >= capacity + 4)
        fields = handle.create_field_groups([TEMP, POWER], "check-wrap")
        rows = ring.rows_since(0)
        _, values = handle.values_since(sampler.group, fields)
    assert len(rows.ts) == capacity
    dcgm_ts = sorted({v.ts for v in values if v.status == 0 and v.ts <= rows.ts[-1]})
    assert rows.ts.tolist() == dcgm_ts[-capacity:]
    assert sorted(_ring_cells(ring, rows)) == sorted(
        c for c in _dcgm_cells(values, int(rows.ts[-1])) if c[3] >= rows.ts[0])


def test_a_lost_gpu_stops_its_series_without_disturbing_the_others(open_node, tmp_path):
    handle = open_node(_scenario(tmp_path, 'seed = 5\n[[gpu]]\nmodel = "H100"\ncount = 3\n'
                                           '[[event]]\nat = 0.6\ngpu = 1\nkind = "lost"\n'))
    lost_at = _node_start_us() + 600_000
    counters = parse_counters(ONE_GROUP + "DCGM_EXP_XID_ERRORS_COUNT, gauge, XIDs\n")
    with Sampler(handle, counters,
                 SamplingOptions(collect_interval_ms=200, watch_interval_ms=100, retention_s=30)) as sampler:
        ring = next(iter(sampler.rings.values()))
        _wait_for(lambda: ring.rows_written and ring.rows_since(0).ts[-1] > lost_at + 800_000)
    rows = ring.rows_since(0)
    for gpu in (0, 1, 2):
        for field_id in (TEMP, POWER):
            column = ring.index((FE_GPU, gpu, field_id))
            ok_ts = rows.ts[rows.status[:, column] == SAMPLE_OK]
            if gpu == 1:
                assert lost_at - 200_000 < ok_ts.max() <= lost_at
                # after the loss: DCGM's blanks, then nothing once the GPU is out of the group
                after = rows.status[rows.ts > lost_at, column].tolist()
                assert set(after) <= {SAMPLE_BLANK, SAMPLE_ABSENT} and after[-1] == SAMPLE_ABSENT
                assert after == sorted(after, key=lambda status: status == SAMPLE_ABSENT)
            else:
                assert len(ok_ts) == len(rows.ts)  # a sample in every row, before and after the loss
    events = sampler.events.since(0)
    assert list(zip(events.entity_id.tolist(), events.field_id.tolist(), events.value.tolist())) == [(1, XID, 79)]
    assert sampler.stats.errors_by_code == {}


def test_a_gpu_lost_before_the_first_read_is_taken_out_of_the_group(open_node, tmp_path):
    handle = open_node(_scenario(tmp_path, 'seed = 6\n[[gpu]]\nmodel = "H100"\ncount = 3\n'
                                           '[[event]]\nat = 0.0\ngpu = 1\nkind = "lost"\nxid = 0\n'))
    with Sampler(handle, parse_counters(ONE_GROUP), SamplingOptions(collect_interval_ms=200, watch_interval_ms=100),
                 gpu_ids=[0, 1, 2]) as sampler:
        ring = next(iter(sampler.rings.values()))
        _wait_for(lambda: ring.rows_written >= 5)
        assert sampler.group.entities() == [(FE_GPU, 0), (FE_GPU, 2)]
    assert sampler.stats.lost_gpus == (1,)
    rows = ring.rows_since(0)
    assert np.all(np.diff(rows.ts) > 0)  # the retried read stored nothing twice
    for gpu in (0, 2):
        assert set(rows.status[:, ring.index((FE_GPU, gpu, TEMP))].tolist()) == {SAMPLE_OK}
    # GPU 1: DCGM's blanks in the first reads, nothing once it is out of the group
    lost = rows.status[:, ring.index((FE_GPU, 1, TEMP))].tolist()
    assert set(lost) <= {SAMPLE_BLANK, SAMPLE_ABSENT} and lost[-1] == SAMPLE_ABSENT


def test_ticking_by_hand_drains_each_manual_update_once(open_node):
    handle = open_node("2", mode="manual")
    sampler = Sampler(handle, parse_counters(ONE_GROUP), SamplingOptions(collect_interval_ms=100))
    sampler.start(thread=False)
    try:
        assert not sampler.running and not _sampler_threads()
        ring = next(iter(sampler.rings.values()))
        sampler.tick_once()
        assert ring.rows_written == 1  # the watch request samples once
        for expected in (2, 3):
            time.sleep(0.11)
            handle.update_all_fields(wait=True)
            sampler.tick_once()
            sampler.tick_once()  # nothing new: no row
            assert ring.rows_written == expected
        assert sampler.stats.rows == 3 and sampler.stats.samples == 3 * 4
        assert sampler.stats.ticks == 5 and sampler.stats.errors_by_code == {}
    finally:
        sampler.stop()
    with pytest.raises(RuntimeError):
        sampler.tick_once()


def test_ticks_keep_to_the_schedule_without_drift(open_node, monkeypatch):
    handle = open_node("1")
    clock = ManualClock()
    starts: list[float] = []
    real = drain.drain_into

    def recording(*args):
        starts.append(clock.monotonic())
        clock.advance(0.03)   # each drain takes 30 ms: a loop that waited an interval after each would drift
        return real(*args)

    monkeypatch.setattr(drain, "drain_into", recording)
    interval = 0.1
    with Sampler(handle, parse_counters(ONE_GROUP), SamplingOptions(collect_interval_ms=100),
                 clock=clock) as sampler:
        for _ in range(14):   # 1.4 s of ticks after tick 0
            clock.wake_next()
        elapsed = clock.monotonic() - sampler.tick_origin
        stats = sampler.stats
        expected = int(elapsed / interval) + 1  # tick 0 runs at the origin
        assert abs(stats.ticks + stats.skipped_ticks - expected) <= 1
        origin = sampler.tick_origin
    phases = [(t - origin) / interval for t in starts]
    late = [p - round(p) for p in phases]
    assert max(late) < 0.5 and min(late) > -0.05  # each tick starts at (or just after) its deadline
    assert late[-1] < 0.5  # no drift accumulated


def test_a_slow_tick_skips_the_ticks_it_overran(open_node, monkeypatch):
    handle = open_node("1")
    clock = ManualClock()
    interval = 0.2
    starts: list[float] = []
    real = drain.drain_into

    def slow_once(*args):
        starts.append(clock.monotonic())
        if len(starts) == 3:
            clock.advance(2.5 * interval)
        return real(*args)

    monkeypatch.setattr(drain, "drain_into", slow_once)
    with Sampler(handle, parse_counters(ONE_GROUP), SamplingOptions(collect_interval_ms=200),
                 clock=clock) as sampler:
        _tick_until(clock, lambda: len(starts) >= 7)
        origin = sampler.tick_origin
        stats = sampler.stats
    indexes = [(t - origin) / interval for t in starts[:7]]
    grid = [round(i) for i in indexes]
    assert all(abs(i - g) < 0.25 for i, g in zip(indexes, grid)), indexes
    # ticks 0, 1, 2 (slow: 2.5 intervals), then 3 and 4 are skipped, then 5, 6, ...
    assert grid[:5] == [0, 1, 2, 5, 6]
    assert stats.skipped_ticks >= 2
    assert all(b - a > 0.5 * interval for a, b in zip(starts, starts[1:])), "ticks ran back to back"


class _Counting(Reader):
    """A reader that notes the tick count and the time of each read."""

    def __init__(self, sampler, name: str, every_s: float | None = None, every_ticks: int | None = None) -> None:
        super().__init__(sampler)
        self.name, self.every_s, self.every_ticks = name, every_s, every_ticks
        self.reads: list[tuple[int, float]] = []

    def start(self, now: float) -> None:
        pass   # first read at the first tick it is due at

    def read(self, now: float) -> bool:
        self.reads.append((self.sampler.stats.ticks, now))
        return True


def test_between_readers_the_ticks_run_in_c_and_every_reader_keeps_its_cadence(open_node, monkeypatch):
    handle = open_node("2")
    made: dict[str, _Counting] = {}

    def reader(name, **cadence):
        def factory(sampler):
            made[name] = _Counting(sampler, name, **cadence)
            return made[name]
        return factory

    python_ticks = []
    real_tick = Sampler.tick_once
    monkeypatch.setattr(Sampler, "tick_once", lambda self: (python_ticks.append(1), real_tick(self))[1])
    with Sampler(handle, parse_counters(BASIC), SamplingOptions(collect_interval_ms=100, watch_interval_ms=100),
                 readers=[reader("half-second", every_s=0.5), reader("fourth-tick", every_ticks=4)]) as sampler:
        time.sleep(2.6)
    # what a run of ticks in C did is counted when it returns, a stop's included
    stats = sampler.stats
    ticks, samples = stats.ticks, stats.samples
    origin = sampler.tick_origin
    rings = list(sampler.rings.values())
    assert 22 <= ticks + stats.skipped_ticks <= 28
    # the values, profiling and event fields are read together, and only the first tick ran in Python
    assert len(python_ticks) == 1
    assert all(r.rows_written >= ticks - 1 for r in rings)
    assert samples == sum(r.samples_held for r in rings)
    # a reader every 4 ticks reads at ticks 4, 8, 12, ... as a tick in Python would have it
    fourth = [t for t, _ in made["fourth-tick"].reads]
    assert fourth == list(range(4, 4 * len(fourth) + 1, 4)) and len(fourth) >= 5
    # one every half second reads at the first tick due after each half second, on the tick grid
    half = [now - origin for _, now in made["half-second"].reads]
    assert 5 <= len(half) <= 6
    assert all(0.45 <= b - a <= 0.75 for a, b in zip(half, half[1:])), half
    assert all(abs(t / 0.1 - round(t / 0.1)) < 0.4 for t in half), half


def test_stop_is_prompt_and_leaves_nothing_behind(open_node):
    handle = open_node("2")
    owned_before = dict(handle._owned)
    sampler = Sampler(handle, parse_counters(BASIC), SamplingOptions(collect_interval_ms=5000))
    sampler.start()
    assert sampler.running
    assert len(_sampler_threads()) == 1 and _sampler_threads()[0].daemon
    time.sleep(0.1)
    began = time.monotonic()
    sampler.stop()
    assert time.monotonic() - began < 0.5
    assert not sampler.running and not _sampler_threads()
    assert handle._owned == owned_before  # watches, field groups and the group are gone
    sampler.stop()  # twice is fine
    ring = next(iter(sampler.rings.values()))
    assert ring.rows_written >= 1  # the rings stay readable


def test_a_tick_that_raises_is_counted_logged_once_and_the_sampler_goes_on(open_node, monkeypatch, caplog):
    handle = open_node("1")
    real = drain.drain_into
    broken = threading.Event()
    broken.set()

    def sometimes_broken(*args):
        if broken.is_set():
            raise RuntimeError("a surprise in one tick")
        return real(*args)

    monkeypatch.setattr(drain, "drain_into", sometimes_broken)
    clock = ManualClock()
    with caplog.at_level("INFO", logger="dcgm_collector"), \
            Sampler(handle, parse_counters(ONE_GROUP), SamplingOptions(collect_interval_ms=100),
                    clock=clock) as sampler:
        _tick_until(clock, lambda: sampler.stats.tick_failures >= 5)
        assert sampler.stats.last_tick_failure == "RuntimeError: a surprise in one tick"
        broken.clear()
        ring = next(iter(sampler.rings.values()))
        _tick_until(clock, lambda: ring.rows_written >= 2 and sampler.stats.last_tick_failure is None)
        assert sampler.running
    failures = [r for r in caplog.records if "sampler tick failed" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None   # once, with its traceback, not once a tick
    assert any("sampler ticks succeed again" in r.getMessage() for r in caplog.records)


def test_dcgm_errors_are_counted_by_code_and_the_watch_is_restored(open_node):
    handle = open_node("2")
    clock = ManualClock()
    with Sampler(handle, parse_counters(ONE_GROUP),
                 SamplingOptions(collect_interval_ms=100, watch_interval_ms=100), clock=clock) as sampler:
        watch, ring = next(iter(sampler.rings.items()))
        _tick_until(clock, lambda: sampler.stats.ticks >= 2)
        handle.unwatch(sampler.group, sampler.field_groups[watch])  # behind the sampler's back
        _tick_until(clock, lambda: sampler.stats.errors_by_code.get(NOT_WATCHED, 0) >= 1)
        written = ring.rows_written
        _tick_until(clock, lambda: ring.rows_written > written + 2)
    assert sampler.stats.errors_by_code == {NOT_WATCHED: 1}
    assert sampler.stats.last_good_tick_time is not None


def test_a_refused_profiling_watch_is_dropped_and_the_rest_go_on(open_node, monkeypatch, caplog):
    handle = open_node("2")
    real_watch = handle.watch

    def watch(group, field_group, *args, **kwargs):
        if any(1001 <= f <= 1099 for f in field_group.field_ids):
            raise DcgmError(lib.DCGM_ST_PROFILING_NOT_SUPPORTED, where="dcgmWatchFields")
        return real_watch(group, field_group, *args, **kwargs)

    monkeypatch.setattr(handle, "watch", watch)
    with Sampler(handle, parse_counters(BASIC), SamplingOptions(collect_interval_ms=100)) as sampler:
        assert [w.kind for w in sampler.rings] == ["values"]
        ring = next(iter(sampler.rings.values()))
        _wait_for(lambda: ring.rows_written >= 2)
    assert sampler.stats.dropped_groups == 1
    assert sampler.stats.errors_by_code == {int(lib.DCGM_ST_PROFILING_NOT_SUPPORTED): 1}
    assert "profiling" in caplog.text and str(SM_ACTIVE) in caplog.text
    # one warning per row left unserved, naming where the row is
    refused = [r.getMessage() for r in caplog.records if "DCGM refused the profiling watch" in r.getMessage()]
    profiling_rows = [c for c in parse_counters(BASIC) if c.field is not None and c.field.is_profiling]
    assert len(refused) == len(profiling_rows) > 0
    assert all(m.startswith(f"<string>:{c.line}: not serving {c.name} (field {c.field.id}): ")
               for m, c in zip(refused, profiling_rows))


def test_bad_arguments_are_refused_before_anything_is_created(handle):
    counters = parse_counters(ONE_GROUP)
    with pytest.raises(ValueError, match="watch interval"):
        Sampler(handle, counters, SamplingOptions(collect_interval_ms=100, watch_interval_ms=200))
    with pytest.raises(TypeError):
        Sampler("not a handle", counters)
    with pytest.raises(ValueError):
        Sampler(handle, counters, gpu_ids=[-1])
    sampler = Sampler(handle, counters)
    with pytest.raises(RuntimeError):
        sampler.start()
        sampler.start()
    sampler.stop()


def test_fields_of_entities_other_than_gpus_are_skipped(handle, caplog):
    # each such row is warned about with its file and line when the counters are read (collect.servable),
    # once, not again by every sampler a reconnect or a second hostengine starts
    counters = parse_counters(ONE_GROUP + "DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT, gauge, switch voltage\n"
                                          "DCGM_FI_DEV_CPU_TEMP_CELSIUS, gauge, CPU temperature\n")
    caplog.set_level("DEBUG")
    with Sampler(handle, counters, SamplingOptions(collect_interval_ms=100)) as sampler:
        assert [(w.kind, w.entity_level) for w in sampler.rings] == [("values", "GPU")]
    assert sampler.stats.dropped_groups == 2
    skipped = [r for r in caplog.records if "not sampling" in r.getMessage()]
    assert [r.levelname for r in skipped] == ["DEBUG", "DEBUG"]
    assert "SWITCH" in caplog.text and "CPU" in caplog.text


def test_health_checks_dcgm_refuses_name_the_row_they_leave_unserved(open_node, monkeypatch, caplog):
    handle = open_node("2")

    def health_set(group, systems=0):
        raise DcgmError(lib.DCGM_ST_NOT_SUPPORTED, where="dcgmHealthSet")

    monkeypatch.setattr(handle, "health_set", health_set)
    counters = parse_counters(ONE_GROUP + "DCGM_EXP_GPU_HEALTH_STATUS, gauge, health\n", "h.csv")
    row = counters.exporter_counters()[0]
    with Sampler(handle, counters, SamplingOptions(collect_interval_ms=100)) as sampler:
        assert sampler.health is None
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"h.csv:{row.line}: not serving DCGM_EXP_GPU_HEALTH_STATUS: DCGM's health checks "
                                  "are not available: ")


@pytest.mark.parametrize("status, why", [
    (lib.DCGM_ST_NOT_SUPPORTED, "DCGM answers NOT_SUPPORTED for the NvLink P2P status"),
    (lib.DCGM_ST_GENERIC_ERROR, "reading DCGM's NvLink P2P status failed ("),
], ids=["not-supported", "failed"])
def test_a_p2p_status_dcgm_does_not_give_names_the_row(open_node, monkeypatch, caplog, status, why):
    handle = open_node("2")

    def nvlink_p2p_status():
        if status == lib.DCGM_ST_NOT_SUPPORTED:
            return {}   # what the binding makes of NOT_SUPPORTED
        raise DcgmError(status, where="dcgmGetNvLinkP2PStatus")

    monkeypatch.setattr(handle, "nvlink_p2p_status", nvlink_p2p_status)
    counters = parse_counters(ONE_GROUP + "DCGM_EXP_P2P_STATUS, gauge, p2p\n", "p.csv")
    row = counters.exporter_counters()[0]
    with Sampler(handle, counters, SamplingOptions(collect_interval_ms=100)) as sampler:
        assert dict(sampler.p2p) == {}
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"p.csv:{row.line}: not serving DCGM_EXP_P2P_STATUS: {why}")
