"""A target's state machine, with an injected connect function.

The "hostengine" here is the simulator's embedded engine seen through a
handle whose connection can be cut: once cut, every call on it goes to a
connection id DCGM does not know and answers DCGM_ST_CONNECTION_NOT_VALID,
exactly as a dead remote connection does.  Closing the cut handle stops the
engine (it was the last user), so the next connect starts a fresh engine:
a restarted hostengine, with another node if the scenario changed.  The
real hostengine process is exercised in test_faults.py.
"""

from __future__ import annotations

import os
import random
import threading
import time
from functools import partial

import numpy as np
import pytest
from support import wait_for as support_wait_for

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.target import Backoff, State, Target
from dcgm_collector.collect.view import target_view
from dcgm_collector.dcgm import DcgmError, Handle
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.expose.multi import MultiExposition

COUNTERS = "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\nDCGM_FI_DEV_POWER_USAGE, gauge, power\n"
CONNECTION_NOT_VALID = -21
UNKNOWN_CONNECTION = 0x7FFFFFF0   # neither the embedded handle nor a connection the library made
TEMP = 150


class CuttableHandle(Handle):
    """An embedded handle whose connection can be cut, after which DCGM no longer knows it."""

    cut = False

    def _h(self) -> int:
        raw = super()._h()
        return UNKNOWN_CONNECTION if self.cut else raw


class FakeHostengine:
    """connect() for a Target: a CuttableHandle while "running", CONNECTION_NOT_VALID while "down"."""

    def __init__(self, library, monkeypatch: pytest.MonkeyPatch, scenario: str = "2") -> None:
        self.library = library
        self.monkeypatch = monkeypatch
        self.running = True
        self.attempts = 0
        self.handles: list[CuttableHandle] = []
        monkeypatch.setenv("DCGM_SIM_SCENARIO", scenario)

    def connect(self) -> Handle:
        self.attempts += 1
        if not self.running:
            raise DcgmError(CONNECTION_NOT_VALID, where="dcgmConnect_v2(fake:5555)")
        handle = CuttableHandle.embedded(library=self.library)
        self.handles.append(handle)
        return handle

    def kill(self) -> None:
        self.running = False
        for handle in self.handles:
            handle.cut = True
        self.handles.clear()

    def restart(self, scenario: str | None = None) -> None:
        if scenario is not None:
            self.monkeypatch.setenv("DCGM_SIM_SCENARIO", scenario)
        self.running = True


class RecordingBackoff(Backoff):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.delays: list[float] = []

    def next(self) -> float:
        delay = super().next()
        self.delays.append(delay)
        return delay


def _expose(sampler, gpus) -> Exposition:
    return Exposition(target_view(sampler), gpus, ExpositionOptions(hostname="fake"), version="test")


def make_target(fake: FakeHostengine, backoff: Backoff | None = None) -> Target:
    return Target("fake", parse_counters(COUNTERS), connect=fake.connect, expose=_expose,
                  sampling=SamplingOptions(collect_interval_ms=100), address="fake:5555",
                  backoff=backoff or RecordingBackoff(first_s=0.02, cap_s=0.1))


# the fake hostengine answers at once: poll it more often than a subprocess
wait_for = partial(support_wait_for, poll_s=0.01)


def wait_up_with_samples(target: Target, since_ticks: int = 0) -> None:
    wait_for(lambda: target.state is State.UP and target.stats.ticks > since_ticks + 1
             and target.generation.sampler.stats.last_tick_ok, what="the target up and sampling")


def temperatures(target: Target):
    ring = target.generation.sampler.rings[next(iter(target.generation.sampler.rings))]
    rows = ring.rows_since(0)
    column = [i for i, key in enumerate(ring.series) if key.field_id == TEMP][0]
    return ring, rows.ts, rows.status[:, column]


@pytest.fixture
def fake(library, monkeypatch):
    return FakeHostengine(library, monkeypatch)


@pytest.fixture
def target(fake):
    t = make_target(fake)
    yield t
    t.stop()


# ---- backoff ----------------------------------------------------------------------------------

def test_backoff_doubles_to_a_cap_with_jitter_and_resets():
    backoff = Backoff(first_s=0.5, cap_s=10.0, jitter=0.2, rng=random.Random(7))
    bases = [0.5, 1, 2, 4, 8, 10, 10, 10, 10, 10]
    delays = [backoff.next() for _ in bases]
    for base, delay in zip(bases, delays):
        assert base * 0.8 <= delay <= base * 1.2
    assert max(delays) <= backoff.longest_s == 12.0
    assert len({round(d / b, 6) for d, b in zip(delays, bases)}) > 5, "the delays are not jittered"
    for _ in range(10_000):   # a long outage: no overflow, still capped
        assert backoff.next() <= 12.0
    backoff.reset()
    assert 0.4 <= backoff.next() <= 0.6
    with pytest.raises(ValueError):
        Backoff(first_s=2, cap_s=1)


# ---- the state machine ----------------------------------------------------------------------

def test_a_lost_connection_keeps_serving_then_resumes_into_the_same_rings(fake, target):
    target.start()
    wait_up_with_samples(target)
    exposition = MultiExposition([target], version="test")
    before = target.generation
    old_ring, old_ts, _ = temperatures(target)
    fake.kill()
    wait_for(lambda: target.state is not State.UP, what="the target down")
    ok, reason = target.health()
    assert not ok
    # lost, then (once the first reconnect failed) unreachable
    assert reason.startswith(("lost the connection to the hostengine at fake:5555: DCGM_ST_CONNECTION_NOT_VALID",
                              "cannot reach hostengine at fake:5555: DCGM_ST_CONNECTION_NOT_VALID"))
    assert before.handle.closed and not before.sampler.running
    # what was collected is still served, flagged by up 0
    text = exposition.render().decode()
    assert "DCGM_FI_DEV_GPU_TEMP{" in text and "dcgm_collector_up 0\n" in text
    assert "dcgm_collector_reconnects_total 0\n" in text
    wait_for(lambda: fake.attempts >= 3, what="a few reconnect attempts")
    assert target.stats.errors_by_code[CONNECTION_NOT_VALID] >= 2
    fake.restart()
    wait_for(lambda: target.generation is not before and target.state is State.UP, what="reconnected")
    wait_up_with_samples(target, target.stats.ticks)
    assert target.reconnects == 1
    # same GPUs, same UUIDs: the same rings, carried on from the old cursor
    ring, ts, _ = temperatures(target)
    assert ring is old_ring
    assert np.all(np.diff(ts) > 0), "a row was stored twice"
    assert ts[-1] > old_ts[-1]
    text = exposition.render().decode()
    assert "dcgm_collector_up 1\n" in text and "dcgm_collector_reconnects_total 1\n" in text


def test_a_changed_gpu_count_gets_new_rings(fake, target):
    target.start()
    wait_up_with_samples(target)
    old_ring, _, _ = temperatures(target)
    assert len(target.generation.topology.gpus) == 2
    fake.kill()
    wait_for(lambda: target.state is not State.UP, what="the target down")
    fake.restart(scenario="4")
    wait_for(lambda: target.state is State.UP and len(target.generation.topology.gpus) == 4, what="4 GPUs")
    wait_up_with_samples(target, target.stats.ticks)
    ring, _, _ = temperatures(target)
    assert ring is not old_ring
    assert {key.entity_id for key in ring.series} == {0, 1, 2, 3}
    text = MultiExposition([target], version="test").render().decode()
    assert {f'gpu="{i}"' in text for i in range(4)} == {True}


def test_the_backoff_grows_while_down_and_starts_over_after_a_good_connection(fake):
    backoff = RecordingBackoff(first_s=0.02, cap_s=0.08, jitter=0.0)
    target = make_target(fake, backoff)
    fake.running = False
    try:
        target.start()
        wait_for(lambda: len(backoff.delays) >= 5, what="five failed attempts")
        assert backoff.delays[:5] == pytest.approx([0.02, 0.04, 0.08, 0.08, 0.08])
        assert target.state is not State.UP and target.reconnects == 0
        assert target.health()[1].startswith("cannot reach hostengine at fake:5555: DCGM_ST_CONNECTION_NOT_VALID")
        fake.restart()
        wait_up_with_samples(target)
        assert target.reconnects == 0   # the first connection is no reconnect
        backoff.delays.clear()
        fake.kill()
        wait_for(lambda: backoff.delays, what="the delay after the loss")
        assert backoff.delays[0] == pytest.approx(0.02)
    finally:
        target.stop()


def test_stop_while_down_is_prompt_and_leaves_no_thread(fake):
    target = make_target(fake, Backoff(first_s=5.0, cap_s=5.0))
    fake.running = False
    target.start()
    wait_for(lambda: target.state is State.DOWN, what="down")
    started = time.monotonic()
    target.stop()
    assert time.monotonic() - started < 1.0
    assert not any(t.name.startswith("dcgm-target-") for t in threading.enumerate())


def test_reload_while_down_is_used_by_the_next_connection(fake, target):
    target.start()
    wait_up_with_samples(target)
    fake.kill()
    wait_for(lambda: target.state is not State.UP, what="down")
    assert target.reload(parse_counters("DCGM_FI_DEV_SM_CLOCK, gauge, clock\n"))
    fake.restart()
    wait_for(lambda: target.state is State.UP, what="up")
    assert [c.name for c in target.generation.topology.counters] == ["DCGM_FI_DEV_SM_CLOCK"]


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_growth_of_threads_or_fds_over_25_reconnects(fake, target):
    target.start()
    wait_up_with_samples(target)
    threads, fds = threading.active_count(), _fds()
    first_ring, _, _ = temperatures(target)
    for cycle in range(25):
        before = target.generation
        fake.kill()
        wait_for(lambda: target.state is not State.UP, what=f"down in cycle {cycle}")
        fake.restart()
        wait_for(lambda before=before: target.state is State.UP and target.generation is not before,
                 what=f"up in cycle {cycle}")
    wait_up_with_samples(target, target.stats.ticks)
    assert target.reconnects == 25
    assert temperatures(target)[0] is first_ring
    assert (threading.active_count(), _fds()) == (threads, fds)
    assert sum(t.name.startswith("dcgm-target-") for t in threading.enumerate()) == 1


def test_two_targets_one_exposition_and_one_failure(library, monkeypatch):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
    from prometheus_client.parser import text_string_to_metric_families as parse_text

    fakes = [FakeHostengine(library, monkeypatch), FakeHostengine(library, monkeypatch)]
    targets = []
    for name, fake in zip("ab", fakes):
        def expose(sampler, gpus, name=name):
            return Exposition(target_view(sampler), gpus, ExpositionOptions(hostname=name), version="test")
        targets.append(Target(name, parse_counters(COUNTERS), connect=fake.connect,
                              expose=expose, sampling=SamplingOptions(collect_interval_ms=100),
                              address=f"{name}:5555", backoff=Backoff(first_s=0.02, cap_s=0.1)))
    exposition = MultiExposition(targets, version="test", library_version="4.6.0")
    try:
        for target in targets:
            target.start()
        for target in targets:
            wait_up_with_samples(target)
        assert exposition.health() == (True, "OK")
        text = exposition.render().decode()
        assert text.count("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n") == 1
        temp_hosts = [line.split('hostname="')[1][0] for line in text.splitlines()
                      if line.startswith("DCGM_FI_DEV_GPU_TEMP{")]
        assert temp_hosts == ["a", "a", "b", "b"]   # target order, then GPU order
        assert 'dcgm_collector_up{hostname="a"} 1\n' in text and 'dcgm_collector_up{hostname="b"} 1\n' in text
        assert 'dcgm_collector_reconnects_total{hostname="b"} 0\n' in text
        families = {f.name for f in parse_text(text)}
        assert {"DCGM_FI_DEV_GPU_TEMP", "dcgm_collector_up", "dcgm_collector_reconnects"} <= families
        assert {f.name for f in parse_openmetrics(exposition.render(openmetrics=True).decode())} >= {
            "DCGM_FI_DEV_GPU_TEMP", "dcgm_collector_reconnects"}

        fakes[0].kill()
        wait_for(lambda: targets[0].state is not State.UP, what="a down")
        ok, report = exposition.health()
        assert not ok and report.startswith("a: ") and "\n" not in report and "b: " not in report
        ticks = targets[1].stats.ticks
        wait_for(lambda: targets[1].stats.ticks >= ticks + 3, what="b still sampling")
        text = exposition.render().decode()
        assert 'dcgm_collector_up{hostname="a"} 0\n' in text and 'dcgm_collector_up{hostname="b"} 1\n' in text
        assert 'dcgm_collector_dcgm_errors_total{hostname="a",code="-21",name="DCGM_ST_CONNECTION_NOT_VALID"}' in text
        assert len([line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_TEMP{")]) == 4
    finally:
        for target in targets:
            target.stop()
