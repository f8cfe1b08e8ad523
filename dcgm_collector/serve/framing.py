"""Message framing: a request's Content-Length read strictly, and bodies given as pieces.

RFC 9112 6.3: a Content-Length that is not a number, two that differ, or one
beside Transfer-Encoding leave the request's end unknowable, so the request
is refused (400) and its connection closed.  A value is ASCII digits and
nothing else: no sign, no spaces inside, no other script's digits, at most
18 of them.  The same value repeated is taken, as Go's net/http takes it
(RFC 9110 8.6 allows either).

A body is bytes, or a sequence of bytes pieces written one after the other
(an answer built piece by piece, never joined whole); :func:`body_size` and
:func:`gzip_body` take either.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Sequence
from email.message import Message

__all__ = ["FramingError", "body_size", "content_length", "gzip_body"]

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
