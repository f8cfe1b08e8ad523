"""Which requests go first: a cap on heavy answers in flight, and light requests ahead of them.

A *heavy* answer (the history API's) costs memory while it is built and
sent, and CPU under the GIL while it is built; a *light* one (/metrics,
/health, the landing page) is what an orchestrator and Prometheus need
whatever else the port is asked.  :class:`Admission` keeps both bounded:

* at most ``heavy_slots`` heavy answers are in flight at once, across all
  clients, from the moment one is admitted until its last byte is written
  (or its client is dropped).  :meth:`Admission.heavy` waits up to
  ``queue_s`` for a slot and gives a :class:`Slot`, or None: the caller
  answers 503 with ``Retry-After: retry_after_s``.  The short wait lets a
  client that asks again as soon as it is refused (and ignores Retry-After)
  cost one refusal per ``queue_s``, not as many as it can send; a waiting
  request holds its thread and connection but no answer;
* a heavy builder calls :meth:`Admission.yield_to_light` between slices of
  its work: while a light request is being answered it waits (at most
  ``max_pause_s`` a call), so a scrape runs without sharing the GIL with
  the builders.  The server wraps each light request in :meth:`light`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["HEAVY_SLOTS", "MAX_PAUSE_S", "QUEUE_S", "RETRY_AFTER_S", "Admission", "Slot"]

HEAVY_SLOTS = 2          # heavy answers built or sent at once
QUEUE_S = 1.0            # how long a heavy request waits for a slot before its 503
RETRY_AFTER_S = 1        # what a refused client is told to wait
MAX_PAUSE_S = 0.05       # the longest a builder waits for light requests at one pause


class Slot:
    """A heavy answer's place; release() (idempotent) frees it."""

    def __init__(self, admission: Admission) -> None:
        self._admission: Admission | None = admission

    def release(self) -> None:
        admission, self._admission = self._admission, None
        if admission is not None:
            admission._release()

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Admission:
    """The cap on heavy answers in flight and the priority of light requests; shared by every request thread."""

    def __init__(self, heavy_slots: int = HEAVY_SLOTS, retry_after_s: int = RETRY_AFTER_S,
                 max_pause_s: float = MAX_PAUSE_S, queue_s: float = QUEUE_S) -> None:
        if heavy_slots < 1:
            raise ValueError(f"heavy_slots must be at least 1, not {heavy_slots}")
        self.heavy_slots = heavy_slots
        self.retry_after_s = retry_after_s
        self.max_pause_s = max_pause_s
        self.queue_s = queue_s
        self._heavy = 0
        self._light = 0
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)   # notified when no light request is in flight
        self._freed = threading.Condition(self._lock)   # notified when a heavy slot is released
        self.refused = 0   # heavy answers refused so far

    @property
    def heavy_in_flight(self) -> int:
        return self._heavy

    def heavy(self) -> Slot | None:
        """A slot for one heavy answer, waiting up to queue_s for one; None when all stayed taken (answer 503)."""
        with self._lock:
            if not self._freed.wait_for(lambda: self._heavy < self.heavy_slots, timeout=self.queue_s):
                self.refused += 1
                return None
            self._heavy += 1
        return Slot(self)

    def _release(self) -> None:
        with self._lock:
            self._heavy -= 1
            self._freed.notify()

    @contextmanager
    def light(self) -> Iterator[None]:
        """Around a light request: heavy builders pause while it runs."""
        with self._lock:
            self._light += 1
        try:
            yield
        finally:
            with self._lock:
                self._light -= 1
                if self._light == 0:
                    self._quiet.notify_all()

    def yield_to_light(self) -> None:
        """Called by a heavy builder between slices: waits while light requests run (at most max_pause_s)."""
        if not self._light:   # unlocked read: a stale answer costs one slice of delay at most
            return
        with self._lock:
            self._quiet.wait_for(lambda: self._light == 0, timeout=self.max_pause_s)
