"""Message framing: a request's Content-Length read strictly, and bodies given as pieces.

RFC 9112 6.3: a Content-Length that is not a number, two that differ, or one
beside Transfer-Encoding leave the request's end unknowable, so the request
is refused (400) and its connection closed.  A value is ASCII digits and
nothing else: no sign, no spaces inside, no other script's digits, at most
18 of them.  The same value repeated is taken, as Go's net/http takes it
(RFC 9110 8.6 allows either).

A body is bytes, or a sequence of bytes pieces written one after the other
(an answer built piece by piece, never joined whole); :func:`body_size` and
:func:`gzip_body` take either.  :class:`GzipPrefixes` compresses a large first
piece that answers share (the /metrics text kept between two ticks) once, not
once per answer.
"""

from __future__ import annotations

import gzip
import re
import threading
import zlib
from collections.abc import Sequence
from email.message import Message

__all__ = ["FramingError", "GzipPrefixes", "body_size", "content_length", "gzip_body"]

_CONTENT_LENGTH = re.compile(r"[0-9]{1,18}", re.ASCII)


class FramingError(ValueError):
    """The request's headers do not say where its body ends; str() is one line."""


def content_length(headers: Message) -> int | None:
    """The request's Content-Length (None: none given); FramingError when it cannot be trusted."""
    values = headers.get_all("Content-Length")
    if not values:
        return None
    distinct = {value.strip(" \t") for value in values}
    if len(distinct) > 1:
        raise FramingError("Content-Length given more than once with different values")
    (value,) = distinct
    if not _CONTENT_LENGTH.fullmatch(value):
        raise FramingError("Content-Length is not a number of bytes (ASCII digits)")
    if "Transfer-Encoding" in headers:
        raise FramingError("both Content-Length and Transfer-Encoding")
    return int(value)


def body_size(body: bytes | Sequence[bytes]) -> int:
    return len(body) if isinstance(body, bytes) else sum(map(len, body))


def gzip_body(body: bytes | Sequence[bytes], level: int) -> bytes | list[bytes]:
    """gzip of a body; of a body's pieces piece by piece, so the whole body is never joined."""
    if isinstance(body, bytes):
        return gzip.compress(body, compresslevel=level, mtime=0)
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)   # wbits 31: a gzip header and trailer
    out = [chunk for chunk in map(compressor.compress, body) if chunk]
    out.append(compressor.flush())
    return out


class GzipPrefixes:
    """gzip of bodies whose large first piece is one that answers share (the same bytes object).

    The first piece is compressed once and the compressor's state kept after
    it; an answer copies that state, compresses its own remaining pieces and
    ends the stream: one gzip member, as gzip_body would write it, for the
    cost of the small pieces.  Up to ``slots`` first pieces are kept (one per
    format); a new one replaces the oldest, so the memory is bounded by the
    kept pieces' compressed text and ``slots`` compressor states (~0.3 MiB
    each at level 1).
    """

    def __init__(self, level: int, min_bytes: int = 64 * 1024, slots: int = 2) -> None:
        self.level = level
        self.min_bytes = min_bytes
        self.slots = slots
        self._lock = threading.Lock()   # one compression of a new first piece at a time: the others wait for it
        self._kept: tuple[tuple[bytes, object, bytes], ...] = ()   # (first piece, compressor after it, its output)

    def compress(self, body: bytes | Sequence[bytes]) -> bytes | list[bytes]:
        pieces = (body,) if isinstance(body, bytes) else tuple(body)
        if not pieces or len(pieces[0]) < self.min_bytes:
            return gzip_body(body, self.level)
        first = pieces[0]
        kept = self._find(first)
        if kept is None:
            with self._lock:
                kept = self._find(first)
                if kept is None:
                    compressor = zlib.compressobj(self.level, zlib.DEFLATED, 31)
                    kept = (first, compressor, compressor.compress(first))
                    self._kept = (kept, *self._kept[:self.slots - 1])
        compressor = kept[1].copy()   # type: ignore[attr-defined]
        out = [kept[2], *(chunk for chunk in map(compressor.compress, pieces[1:]) if chunk)]
        out.append(compressor.flush())
        return out

    def _find(self, first: bytes) -> tuple[bytes, object, bytes] | None:
        return next((kept for kept in self._kept if kept[0] is first), None)
