"""Concurrent identical renders share one computation; errors reach every waiter."""

from __future__ import annotations

import threading
import time

import pytest

from dcgm_collector.serve.singleflight import SingleFlight


def test_concurrent_calls_with_one_key_run_once():
    flight: SingleFlight[int] = SingleFlight()
    runs = []
    started = threading.Event()

    def slow() -> int:
        runs.append(1)
        started.set()
        time.sleep(0.2)
        return 42

    results = []
    leader = threading.Thread(target=lambda: results.append(flight.do("k", slow)))
    leader.start()
    started.wait(5)
    followers = [threading.Thread(target=lambda: results.append(flight.do("k", slow))) for _ in range(5)]
    for t in followers:
        t.start()
    for t in [leader, *followers]:
        t.join(5)
    assert results == [42] * 6
    assert len(runs) == 1
    # once finished, the next call computes afresh
    assert flight.do("k", lambda: 7) == 7


def test_other_keys_do_not_wait_and_errors_reach_every_waiter():
    flight: SingleFlight[int] = SingleFlight()
    gate = threading.Event()
    started = threading.Event()

    def failing() -> int:
        started.set()
        gate.wait(5)
        raise RuntimeError("render failed")

    errors = []

    def call() -> None:
        try:
            flight.do("a", failing)
        except RuntimeError as error:
            errors.append(str(error))

    first = threading.Thread(target=call)
    first.start()
    started.wait(5)
    second = threading.Thread(target=call)
    second.start()
    assert flight.do("b", lambda: 1) == 1   # another key runs while "a" is blocked
    time.sleep(0.05)
    gate.set()
    first.join(5)
    second.join(5)
    assert errors == ["render failed", "render failed"]
    with pytest.raises(ZeroDivisionError):
        flight.do("a", lambda: 1 // 0)


def test_a_caller_with_an_answer_of_its_own_does_not_wait_for_the_running_call():
    flight: SingleFlight[str] = SingleFlight()
    started, release = threading.Event(), threading.Event()

    def render() -> str:
        started.set()
        release.wait(5)
        return "new"

    results = []
    leader = threading.Thread(target=lambda: results.append(flight.do("k", render)))
    leader.start()
    started.wait(5)
    # while the render runs: one caller keeps the body before it, one has none kept and waits
    assert flight.do("k", render, meanwhile=lambda: "before") == "before"
    waiting = threading.Thread(target=lambda: results.append(flight.do("k", render, meanwhile=lambda: None)))
    waiting.start()
    time.sleep(0.1)
    assert results == []   # it waits for the render, as a caller without meanwhile does
    release.set()
    for t in (leader, waiting):
        t.join(5)
    assert results == ["new", "new"]
    # with no call running, meanwhile is not asked: the caller renders
    assert flight.do("k", lambda: "fresh", meanwhile=lambda: "before") == "fresh"
