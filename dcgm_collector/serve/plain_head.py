"""The common request head read without the email parser: ``METHOD /path HTTP/1.1`` and plain header lines.

The standard library reads a request's headers with the email package's
parser, which is made for mail and costs a poll of the history API at a
viewer's pace (10 a second, caches cold between them) about a fifth of its
CPU.  Nearly every request is of one plain shape, so that shape is read
here: a request line of an upper-case method, an origin-form path and
``HTTP/1.1`` separated by single spaces; header lines ``Name: value`` with a
token for the name, ending in CRLF; a blank line; all of it already in the
connection's buffer.  Anything else (another version, folded or odd lines,
bare LF, an ``Expect`` header, more than :data:`MAX_LINES` headers, a head not
all arrived yet) gives None, and the server reads it as before with the
standard library, so every unusual case keeps the answers it had.

The headers come back as an :class:`http.client.HTTPMessage`, as the
standard library makes them: the name as sent, the value with the spaces
after the colon taken off (and the ones at its end kept).
"""

from __future__ import annotations

import http.client
import re
from typing import NamedTuple

__all__ = ["MAX_LINES", "PlainHead", "plain_head"]

MAX_LINES = 100   # as the standard library: more headers than this is its 431
_REQUEST_LINE = re.compile(rb"([A-Z]+) (/[!-~]*) HTTP/1\.1\r\n")
_HEADER_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([^\r\n]*)\r\n")


class PlainHead(NamedTuple):
    command: str
    path: str
    headers: http.client.HTTPMessage
    length: int   # bytes of the buffer the header lines and the blank line take


def plain_head(request_line: bytes, buffered: bytes) -> PlainHead | None:
    """The request, when its line and the header lines in ``buffered`` (what follows the line) are plain."""
    line = _REQUEST_LINE.fullmatch(request_line)
    if line is None:
        return None
    end = -2 if buffered.startswith(b"\r\n") else buffered.find(b"\r\n\r\n")   # -2: no header lines
    if end == -1:
        return None   # not all arrived yet, or not plain: the standard library reads it
    headers = http.client.HTTPMessage()
    at, stop, count = 0, end + 2, 0
    while at < stop:
        header = _HEADER_LINE.match(buffered, at, stop)
        count += 1
        if header is None or count > MAX_LINES:
            return None
        name = header.group(1).decode("ascii")
        if name.lower() == "expect":
            return None   # 100-continue and its refusals stay the standard library's
        headers[name] = header.group(2).decode("iso-8859-1")
        at = header.end()
    return PlainHead(line.group(1).decode("ascii"), line.group(2).decode("ascii"), headers, stop + 2)
