"""A connection's reader and writer, each bounded by an idle timeout and by a whole-exchange deadline.

A per-call socket timeout alone lets a client that sends (or reads) one
byte every few seconds hold a connection, its thread and whatever the
answer holds for ever: every single call makes progress in time.  Here each
call waits at most the idle timeout *and* no call runs past ``deadline``
(time.monotonic()), so the request head as a whole (DeadlineReader) and the
whole response (DeadlineWriter) have a bound, however slowly the client
trickles.
"""

from __future__ import annotations

import io
import socket
import sys
import time
from collections import deque
from collections.abc import Iterable

__all__ = ["DeadlineReader", "DeadlineWriter", "ResponseDeadline", "SEND_BYTES"]

# the most one send() is handed; each send waits at most the idle timeout and never past the deadline whatever
# it is handed (it returns with what the kernel took), so this only bounds one call's slice of a larger body
SEND_BYTES = 4096 * 1024
GATHER_PIECES = 256       # the most pieces one sendmsg() is handed (the kernel takes up to 1024)


class ResponseDeadline(TimeoutError):
    """The client did not take the whole response before the deadline."""


def _timeout(idle_timeout_s: float, deadline: float | None, error: type[TimeoutError], what: str) -> float:
    if deadline is None:
        return idle_timeout_s
    left = deadline - time.monotonic()
    if left <= 0:
        raise error(what)
    return min(idle_timeout_s, left)


class DeadlineReader(io.RawIOBase):
    """The connection's raw reader: each read waits at most the idle timeout, and none runs past ``deadline``."""

    def __init__(self, sock: socket.socket, idle_timeout_s: float) -> None:
        super().__init__()
        self._sock = sock
        self._idle_timeout_s = idle_timeout_s
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self._sock.settimeout(_timeout(self._idle_timeout_s, self.deadline, TimeoutError,
                                       "the request head did not arrive in time"))
        return self._sock.recv_into(buffer)


class DeadlineWriter(io.RawIOBase):
    """The connection's writer: every byte is sent (as sendall does) or ResponseDeadline is raised.

    Each send() waits at most the idle timeout; none starts past ``deadline``
    and none waits beyond it.
    """

    def __init__(self, sock: socket.socket, idle_timeout_s: float) -> None:
        super().__init__()
        self._sock = sock
        self._idle_timeout_s = idle_timeout_s
        self.deadline: float | None = None

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            self._wait_budget()
            try:
                sent += self._sock.send(view[sent:sent + SEND_BYTES])
            except TimeoutError:
                self._timed_out()
        return sent

    def write_pieces(self, pieces: Iterable[bytes]) -> int:
        """Every piece, in order, as one stream: pieces are gathered into sends of about SEND_BYTES by
        reference (sendmsg), never joined, so a large body cached between answers is not copied per answer.
        Over TLS (no sendmsg) each gathered run is joined and written."""
        total = 0
        batch: list[bytes] = []
        size = 0
        for piece in pieces:
            if not piece:
                continue
            batch.append(piece)
            size += len(piece)
            if size >= SEND_BYTES or len(batch) >= GATHER_PIECES:
                self._write_batch(batch)
                total += size
                batch, size = [], 0
        if batch:
            self._write_batch(batch)
            total += size
        return total

    def _write_batch(self, pieces: list[bytes]) -> None:
        ssl = sys.modules.get("ssl")   # not imported unless TLS is configured; then no socket is an SSLSocket
        if ssl is not None and isinstance(self._sock, ssl.SSLSocket):   # sendmsg is not TLS's: one write
            self.write(pieces[0] if len(pieces) == 1 else b"".join(pieces))
            return
        views = deque(memoryview(piece).cast("B") for piece in pieces)
        while views:
            self._wait_budget()
            chunk, room = [], SEND_BYTES
            for view in views:
                if room <= 0:
                    break
                chunk.append(view[:room])
                room -= len(chunk[-1])
            try:
                sent = self._sock.sendmsg(chunk)
            except TimeoutError:
                self._timed_out()
            while sent:
                first = views[0]
                if sent >= len(first):
                    sent -= len(first)
                    views.popleft()
                else:
                    views[0] = first[sent:]
                    sent = 0

    def _wait_budget(self) -> None:
        """The next send waits at most the idle timeout and not past the deadline."""
        self._sock.settimeout(_timeout(self._idle_timeout_s, self.deadline, ResponseDeadline,
                                       "the client did not read the response in time"))

    def _timed_out(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise ResponseDeadline("the client did not read the response in time") from None
        raise TimeoutError("the client did not read the response in time")
