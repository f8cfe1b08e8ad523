"""An HTTP request bounded as a whole: in time (a deadline) and in the bytes its answer may take.

The timeout http.client takes bounds each socket operation, not the request:
a receiver that trickles its status line a byte at a time, or sends
``100 Continue`` for ever, keeps every read short and so holds the request
indefinitely.  A :class:`Watchdog` cuts the request off when its deadline
passes, whatever http.client is doing then (connect, send, status line,
headers, body); :class:`BoundedResponse` counts the bytes of the answer,
interim answers included, and gives up past a bound.
"""

from __future__ import annotations

import http.client
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from dcgm_collector.files import size_text

__all__ = ["MAX_ANSWER_BYTES", "AnswerTooLong", "BoundedResponse", "Watchdog"]

# What a sender reads of one answer at most: a status line and headers of a few hundred bytes, and the
# first line of an error body, are all it uses.
MAX_ANSWER_BYTES = 64 * 1024


class AnswerTooLong(http.client.HTTPException):
    """The receiver's answer went past MAX_ANSWER_BYTES."""


class _CountingReader:
    """The response's file, counting what is read from it."""

    def __init__(self, raw: Any, limit: int) -> None:
        self._raw = raw
        self._left = limit
        self._limit = limit

    def _took(self, n: int) -> None:
        self._left -= n
        if self._left < 0:
            raise AnswerTooLong(f"the answer is larger than {size_text(self._limit)}")

    def _room(self, size: int | None) -> int:
        # one byte past the bound, so that going over it is seen rather than read up to it for ever
        return self._left + 1 if size is None or size < 0 else min(size, self._left + 1)

    def readline(self, size: int | None = -1) -> bytes:
        line = self._raw.readline(self._room(size))
        self._took(len(line))
        return line

    def read(self, size: int | None = -1) -> bytes:
        data = self._raw.read(self._room(size))
        self._took(len(data))
        return data

    def read1(self, size: int = -1) -> bytes:
        data = self._raw.read1(self._room(size))
        self._took(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        n = self._raw.readinto(view[: self._room(len(view))])
        self._took(n)
        return n

    def __getattr__(self, name: str) -> Any:   # peek, close, flush, fileno: as they are
        return getattr(self._raw, name)


class BoundedResponse(http.client.HTTPResponse):
    """An HTTPResponse that reads at most MAX_ANSWER_BYTES (set as a connection's ``response_class``)."""

    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp = _CountingReader(self.fp, MAX_ANSWER_BYTES)


class Watchdog:
    """Calls a request's cut-off once the request outlives its deadline, from a thread of its own.

    One watchdog serves one sender, one request at a time: arm() before the request, disarm() after it.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._changed = threading.Condition()
        self._deadline: float | None = None
        self._cut_off: Callable[[], None] | None = None
        self._expired = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._wakes_at = math.inf   # when the thread wakes next by itself (monotonic)

    def arm(self, seconds: float, cut_off: Callable[[], None]) -> None:
        """Call ``cut_off`` in ``seconds`` unless disarm() comes first."""
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._deadline, self._cut_off, self._expired = time.monotonic() + seconds, cut_off, False
            # woken only when it would wake too late: back-to-back requests of one timeout each push the
            # deadline later, and the thread, waking at the old one, just waits on
            if self._deadline < self._wakes_at:
                self._changed.notify()

    @property
    def expired(self) -> bool:
        """Whether the deadline armed last has passed (and its cut-off been called)."""
        with self._changed:
            return self._expired

    def disarm(self) -> bool:
        """Whether the deadline passed (and the cut-off was called) since arm()."""
        with self._changed:
            self._deadline = self._cut_off = None
            return self._expired

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _run(self) -> None:
        with self._changed:
            while not self._closed:
                if self._deadline is None or self._cut_off is None:
                    self._wakes_at = math.inf
                    self._changed.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._wakes_at = self._deadline
                    self._changed.wait(left)
                    continue
                cut_off, self._deadline, self._cut_off, self._expired = self._cut_off, None, None, True
                # under the lock: disarm() waits for it, so a late cut-off never reaches the next request
                cut_off()
