"""Concurrent identical requests share one computation.

Ten scrapers arriving together would otherwise render ten times, one after
another under the GIL, and the last would wait for all of them.  The data only
changes once per collect interval, so a render that is already running is as
fresh as a new one; a caller that may answer with the result before it
(``meanwhile``) does not wait at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Call(Generic[T]):
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: T | None = None
        self.error: BaseException | None = None


class SingleFlight(Generic[T]):
    """``do(key, fn)``: run fn, unless a call with the same key is running: then wait for its answer, or answer
    what ``meanwhile()`` gives when that is not None."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Hashable, _Call[T]] = {}

    def do(self, key: Hashable, fn: Callable[[], T], meanwhile: Callable[[], T | None] | None = None) -> T:
        with self._lock:
            call = self._running.get(key)
            leader = call is None
            if leader:
                call = self._running[key] = _Call()
        assert call is not None
        if not leader:
            if meanwhile is not None and (kept := meanwhile()) is not None:
                return kept
            call.done.wait()
            if call.error is not None:
                raise call.error
            return call.result  # type: ignore[return-value]
        try:
            call.result = fn()
        except BaseException as error:
            call.error = error
            raise
        finally:
            with self._lock:
                del self._running[key]
            call.done.set()
        return call.result
