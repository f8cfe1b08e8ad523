"""The clocks: the real one waits in real time and a stop cuts it short; the manual one moves only when told."""

from __future__ import annotations

import threading
import time

import pytest

from dcgm_collector.clock import REAL_CLOCK, ManualClock


def test_the_real_clock_is_the_process_clock_and_an_event_ends_its_wait():
    assert abs(REAL_CLOCK.time() - time.time()) < 1
    assert abs(REAL_CLOCK.monotonic() - time.monotonic()) < 1
    event = threading.Event()
    began = time.monotonic()
    assert REAL_CLOCK.wait(event, 0.05) is False
    assert time.monotonic() - began >= 0.04
    threading.Timer(0.02, event.set).start()
    assert REAL_CLOCK.wait(event, 30) is True


def test_a_manual_clock_moves_both_times_together_and_only_forward():
    clock = ManualClock(monotonic=50.0, time=1_000_000.0)
    assert (clock.monotonic(), clock.time()) == (50.0, 1_000_000.0)
    clock.advance(2.5)
    assert (clock.monotonic(), clock.time()) == (52.5, 1_000_002.5)
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_a_wait_on_a_manual_clock_ends_when_the_clock_passes_its_timeout_not_in_real_time():
    clock = ManualClock()
    event = threading.Event()
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(clock.wait(event, 10.0)))
    waiter.start()
    time.sleep(0.05)   # real time passes: the wait goes on
    assert answers == [] and clock.waiting == 1
    clock.advance(9.0)
    time.sleep(0.02)
    assert answers == []
    clock.advance(1.0)
    waiter.join(5)
    assert answers == [False] and clock.waiting == 0


def test_an_event_ends_a_wait_on_a_manual_clock_at_once():
    clock = ManualClock()
    event = threading.Event()
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(clock.wait(event, 3600.0)))
    waiter.start()
    event.set()
    waiter.join(1)
    assert answers == [True]
    assert clock.wait(event, 3600.0) is True   # already set: no wait


def test_wake_next_runs_a_waiting_loop_one_round_at_a_time():
    clock = ManualClock(monotonic=0.0)
    stop = threading.Event()
    rounds: list[float] = []

    def loop() -> None:
        while not clock.wait(stop, 0.25):
            rounds.append(clock.monotonic())

    thread = threading.Thread(target=loop)
    thread.start()
    assert clock.wake_next() == 0.25
    assert rounds == [0.25]   # the round ran before wake_next returned
    clock.wake_next()
    clock.wake_next()
    assert rounds == [0.25, 0.5, 0.75]
    stop.set()
    thread.join(5)
    with pytest.raises(TimeoutError):
        clock.wake_next(timeout_s=0.05)   # nobody waits any more
