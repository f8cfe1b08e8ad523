"""The watchdog that ends a remote-write request at its deadline, request after request."""

from __future__ import annotations

import threading
import time

from dcgm_collector.push.bounded_http import Watchdog


def test_the_watchdog_cuts_off_each_request_that_outlives_its_deadline_and_no_other():
    watchdog = Watchdog("test deadline")
    cut = threading.Semaphore(0)
    try:
        for _ in range(3):   # one after another, as a sender's requests time out in a row
            started = time.monotonic()
            watchdog.arm(0.2, cut.release)
            assert cut.acquire(timeout=5)
            assert 0.15 < time.monotonic() - started < 3
            assert watchdog.disarm() is True
        for _ in range(50):   # requests that end in time, each arming a later deadline
            watchdog.arm(0.3, cut.release)
            assert watchdog.disarm() is False
        watchdog.arm(0.05, cut.release)   # a deadline sooner than the one the thread waits for
        assert cut.acquire(timeout=5)
        watchdog.arm(0.1, cut.release)
        watchdog.disarm()
        assert not cut.acquire(timeout=0.5)   # a disarmed deadline is not cut off late
    finally:
        watchdog.close()
