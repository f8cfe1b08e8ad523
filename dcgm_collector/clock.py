"""The time the sampler and its readers run on: the real clock, or a manual one that tests move by hand.

A :class:`Clock` gives the monotonic time (schedules: tick deadlines, when a
reader is next due), the wall-clock time (stamps: the last good tick, a health
check, a trigger) and a wait on an event with a timeout (the sampler's sleep
between ticks, which a stop cuts short).  :data:`REAL_CLOCK` is Python's;
:class:`ManualClock` stands still until it is advanced, so a test of the tick
schedule runs without waiting on real time and sees exact times.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["REAL_CLOCK", "Clock", "ManualClock", "RealClock"]


class Clock(Protocol):
    """What the sampler and its readers read the time from and wait with."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (schedules and durations)."""
        ...

    def time(self) -> float:
        """Unix time in seconds (stamps a user reads)."""
        ...

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait until ``event`` is set or ``timeout`` seconds of this clock passed; whether the event is set."""
        ...


class RealClock:
    """The process's clocks: time.monotonic(), time.time() and Event.wait()."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(max(0.0, timeout))

    def __repr__(self) -> str:
        return "RealClock()"


REAL_CLOCK = RealClock()

# How often a thread waiting on a ManualClock looks at its event (an Event cannot wake a Condition).
_POLL_S = 0.002


class ManualClock:
    """A clock that moves only when told: :meth:`advance` by hand, or :meth:`wake_next` to the next wait's end.

    ``monotonic`` and ``time`` start where given and move together.  A thread
    in :meth:`wait` returns once its event is set (within a few real
    milliseconds) or once the clock has been advanced past its timeout, never
    because real time passed.  Safe from any thread.
    """

    def __init__(self, monotonic: float = 1000.0, time: float = 1_700_000_000.0) -> None:
        self._monotonic = float(monotonic)
        self._offset = float(time) - float(monotonic)   # wall clock minus monotonic clock
        self._changed = threading.Condition()
        self._deadlines: list[float] = []   # the monotonic time each thread in wait() waits for
        self._entered = 0                   # calls of wait() so far

    def monotonic(self) -> float:
        with self._changed:
            return self._monotonic

    def time(self) -> float:
        with self._changed:
            return self._monotonic + self._offset

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward (never back), waking the waits that then end."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        with self._changed:
            self._monotonic += seconds
            self._changed.notify_all()

    def wait(self, event: threading.Event, timeout: float) -> bool:
        with self._changed:
            deadline = self._monotonic + max(0.0, timeout)
            self._deadlines.append(deadline)
            self._entered += 1
            self._changed.notify_all()   # wake_next() waits for a waiter
        try:
            while not event.is_set():
                with self._changed:
                    if self._monotonic >= deadline:
                        return False
                    self._changed.wait(_POLL_S)
            return True
        finally:
            with self._changed:
                self._deadlines.remove(deadline)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock."""
        self.wait(threading.Event(), seconds)

    @property
    def waiting(self) -> int:
        """How many threads are blocked in :meth:`wait` (their timeout not reached yet)."""
        with self._changed:
            return sum(1 for d in self._deadlines if d > self._monotonic)

    def wake_next(self, timeout_s: float = 5.0) -> float:
        """Advance the clock to the end of the earliest wait a thread is blocked in, then let that thread run
        until it waits on the clock again; the new monotonic time.

        So one call lets a sampler's thread run exactly one more tick.  It waits in real time, at most
        ``timeout_s`` for a thread to block (TimeoutError if none does) and as long again for the woken one
        to wait once more (a thread that ends instead just makes it return later).
        """
        with self._changed:
            self._until(lambda: any(d > self._monotonic for d in self._deadlines), timeout_s,
                        f"no thread waited on the clock within {timeout_s:g} s")
            self._monotonic = min(d for d in self._deadlines if d > self._monotonic)
            entered = self._entered
            self._changed.notify_all()
            try:
                self._until(lambda: self._entered > entered, timeout_s, "")
            except TimeoutError:
                pass   # the woken thread ended rather than waiting again
            return self._monotonic

    def _until(self, condition, timeout_s: float, why: str) -> None:
        """Wait (real time, holding the condition's lock) until ``condition()``; TimeoutError(why) past timeout_s."""
        end = time.monotonic() + timeout_s
        while not condition():
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(why)
            self._changed.wait(min(left, 0.05))

    def __repr__(self) -> str:
        return f"ManualClock(monotonic={self.monotonic():.6f})"
