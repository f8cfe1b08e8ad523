"""Readers on a sampler over the simulated engine: a new one is one class passed in, and a failing one is contained.

Each sampler here runs on a manual clock and is ticked by hand (start(thread=False)), so a
reader's cadence is exact and no test waits on real time.
"""

from __future__ import annotations

import pytest
from dcgm_collector.ext._native import lib

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.clock import ManualClock
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.readers import Reader
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.dcgm import DcgmError

COUNTERS = "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, p\nDCGM_FI_DEV_UUID, label, uuid\n"
INTERVAL_S = 0.1


class HottestGpu(Reader):
    """What an early-warning detector looks like: every half second, the hottest GPU's temperature so far."""

    name = "hottest-gpu"
    every_s = 0.5

    def __init__(self, sampler: Sampler) -> None:
        super().__init__(sampler)
        self.reads: list[tuple[float, int]] = []   # (clock time, the sampler's ticks so far)
        self.hottest: float | None = None

    def read(self, now: float) -> bool:
        self.reads.append((now, self.sampler.stats.ticks))
        for ring in self.sampler.rings.values():
            rows = ring.rows_since(0)
            temps = [c for c, key in enumerate(ring.series) if key.field_id == 150]
            if len(rows.ts):
                self.hottest = max(float(rows.values[:, temps].max()), self.hottest or 0.0)
        return True


class Broken(Reader):
    """A reader with a bug: it raises whatever ``cause`` says, at every tick."""

    name = "broken"
    every_s = 0.0
    cause: str | None = "no such GPU"

    def read(self, now: float) -> bool:
        if Broken.cause is not None:
            raise KeyError(Broken.cause)
        return True


class Counting(Reader):
    name = "counting"
    every_s = 0.0
    reads = 0

    def read(self, now: float) -> bool:
        Counting.reads += 1
        return True


def _ticks(sampler: Sampler, clock: ManualClock, n: int) -> None:
    for _ in range(n):
        clock.advance(INTERVAL_S)
        sampler.tick_once()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def test_a_new_reader_runs_at_its_own_cadence_after_the_samplers_own(open_node, clock):
    handle = open_node("2")
    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=100),
                      readers=[HottestGpu], clock=clock)
    sampler.start(thread=False)
    try:
        hottest = sampler.readers[-1]
        assert [r.name for r in sampler.readers] == ["labels", "field-costs", "lost-gpus", "hottest-gpu"]
        _ticks(sampler, clock, 12)
    finally:
        sampler.stop()
    origin = sampler.tick_origin
    # read at start, then every 0.5 s of the clock: at ticks 5 and 10 of the 100 ms ticks
    assert [(round(t - origin, 6), ticks) for t, ticks in hottest.reads] == [(0.0, 0), (0.5, 4), (1.0, 9)]
    assert hottest.hottest is not None and 20 < hottest.hottest < 100   # it read what the sampler drained
    assert sampler.stats.ticks == 12 and sampler.stats.tick_failures == 0


def test_a_reader_that_raises_is_logged_once_per_cause_and_the_tick_and_other_readers_go_on(open_node, clock,
                                                                                             caplog, monkeypatch):
    handle = open_node("2")
    monkeypatch.setattr(Broken, "cause", "no such GPU")
    monkeypatch.setattr(Counting, "reads", 0)
    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=100),
                      readers=[Broken, Counting], clock=clock)
    with caplog.at_level("INFO", logger="dcgm_collector"):
        sampler.start(thread=False)
        try:
            _ticks(sampler, clock, 5)
            stats = sampler.stats
            # the start and every tick failed in the broken reader, and nowhere else
            assert stats.reader_failures == {"broken": 6} and stats.tick_failures == 6
            assert Counting.reads == 6 and stats.ticks == 5
            assert stats.last_tick_ok and stats.last_tick_failure is None   # the samples flow: /health stays OK
            assert next(iter(sampler.rings.values())).rows_written >= 1
            assert sampler.labels[(1, 0)]["DCGM_FI_DEV_UUID"].startswith("GPU-")   # the labels reader ran
            Broken.cause = "another cause"
            _ticks(sampler, clock, 2)
            Broken.cause = None
            _ticks(sampler, clock, 2)
        finally:
            sampler.stop()
    failures = [r for r in caplog.records if "sampler reader broken failed" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info is not None for r in failures)   # once per cause, with traceback
    assert "another cause" in str(failures[1].exc_info[1])
    assert [r.getMessage() for r in caplog.records if "works again" in r.getMessage()] == [
        "sampler reader broken works again after 8 failures"]
    assert sampler.stats.reader_failures == {"broken": 8} and Counting.reads == 10


def test_a_readers_dcgm_error_is_counted_by_code_and_marks_the_tick_not_good(open_node, clock):
    handle = open_node("1")

    class Refused(Reader):
        name = "refused"
        every_s = 0.0

        def start(self, now: float) -> None:
            pass

        def read(self, now: float) -> bool:
            raise DcgmError(lib.DCGM_ST_NOT_SUPPORTED, where="dcgmSomething")

    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=100),
                      readers=[Refused, Counting], clock=clock)
    sampler.start(thread=False)
    try:
        reads = Counting.reads
        _ticks(sampler, clock, 3)
    finally:
        sampler.stop()
    stats = sampler.stats
    assert stats.errors_by_code == {int(lib.DCGM_ST_NOT_SUPPORTED): 3}
    assert not stats.last_tick_ok and stats.tick_failures == 0 and stats.ticks == 3
    assert Counting.reads == reads + 3


def test_a_reader_a_sampler_does_not_need_is_not_made(open_node, clock):
    handle = open_node("1")
    sampler = Sampler(handle, parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"),
                      SamplingOptions(collect_interval_ms=100), readers=[lambda sampler: None], clock=clock)
    sampler.start(thread=False)
    sampler.stop()
    # no label rows, no DCGM_EXP_P2P_STATUS, no DCGM_EXP_GPU_HEALTH_STATUS: only the housekeeping readers
    assert [r.name for r in sampler.readers] == ["field-costs", "lost-gpus"]
