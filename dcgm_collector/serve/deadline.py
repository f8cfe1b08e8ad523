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
import time

__all__ = ["DeadlineReader", "DeadlineWriter", "ResponseDeadline", "SEND_BYTES"]

SEND_BYTES = 256 * 1024   # the most one send() is handed, so a deadline is checked at least this often


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
            self._sock.settimeout(_timeout(self._idle_timeout_s, self.deadline, ResponseDeadline,
                                           "the client did not read the response in time"))
            try:
                sent += self._sock.send(view[sent:sent + SEND_BYTES])
            except TimeoutError:
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    raise ResponseDeadline("the client did not read the response in time") from None
                raise
        return sent
