"""The history API's cursor: where a reader of ``/api/v1/samples`` stopped, ring by ring, as a short string.

A cursor is based on what was written, not on timestamps.  For each ring,
store and event ring an answer read (named by its serial,
:attr:`RingBuffer.serial`), it holds the number of the next row the reader
has not been given (rows are numbered in commit order,
:meth:`RingBuffer.rows_from`), so following cursors gives each row once
whatever its timestamp: a slower field group that writes an older sample
later is neither missed nor repeated.  It also holds

* a token of the collector process: a cursor from another process (a
  restarted collector among them) is refused, since its serials and row
  numbers mean nothing here;
* a time, the newest sample given out plus 1 µs: a ring the cursor does not
  name (one made since, after a reconnect that changed what is watched, or
  one left out to keep the cursor short) is read from that time on.

The bytes are a version, the 6-byte token, then unsigned LEB128 numbers:
the time, how many rings, and per ring the increase of its serial over the
previous ring's and its row number as the zigzag-coded difference from the
previous ring's (rings sampled at one pace have nearly the same counts, so
a ring costs 2-3 bytes), written in URL-safe base64 without padding: about
30-40 characters for a view of a few rings, never more than
:data:`MAX_CHARS` (rings that would pass it are left out, and read by time).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MAX_CHARS", "PROCESS_TOKEN", "Cursor", "CursorError", "decode", "encode"]

MAX_CHARS = 200
PROCESS_TOKEN = os.urandom(6)   # this process's: a cursor another process made does not carry it
_VERSION = 1
_HEADER = 1 + len(PROCESS_TOKEN)
_TEXT = re.compile(r"[A-Za-z0-9_-]+", re.ASCII)
_MAX_NUMBER = 2**63 - 1
_SHOWN = 40


class CursorError(ValueError):
    """A cursor that is not one this process gave; str() is one line (without the parameter's name)."""


@dataclass(frozen=True)
class Cursor:
    """Where a reader stopped: per ring serial the number of its next row, and the time to read other rings from."""

    resume_us: int               # the newest sample given out + 1 µs
    rows: Mapping[int, int]      # ring serial -> number of the first row not given out


def _number(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _zigzag(value: int) -> int:
    return 2 * value if value >= 0 else -2 * value - 1


def _text(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def encode(cursor: Cursor, token: bytes = PROCESS_TOKEN) -> str:
    """The cursor as at most MAX_CHARS URL-safe characters (the rings of the highest serials left out if need be)."""
    head = bytearray([_VERSION])
    head += token
    _number(cursor.resume_us, head)
    places = sorted(cursor.rows.items())
    body = bytearray()
    ends = []   # body length after each ring
    serial = row = 0
    for s, r in places:
        _number(s - serial, body)
        _number(_zigzag(r - row), body)
        serial, row = s, r
        ends.append(len(body))
    count = len(places)
    while True:
        count_bytes = bytearray()
        _number(count, count_bytes)
        data = bytes(head + count_bytes + body[:ends[count - 1] if count else 0])
        if (len(data) + 2) // 3 * 4 <= MAX_CHARS or count == 0:
            return _text(data)
        count -= 1


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, _HEADER

    def number(self) -> int:
        value = shift = 0
        while True:
            if self.at >= len(self.data) or shift > 63:
                raise CursorError("cut short")
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                if value > _MAX_NUMBER:
                    raise CursorError("a number out of range")
                return value


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "...")


def decode(text: str, token: bytes = PROCESS_TOKEN) -> Cursor:
    """The cursor a string holds; CursorError when it is malformed or from another process."""
    not_one = f"{_shown(text)} is not a cursor this collector gave (pass data.cursor of an answer as it is)"
    if len(text) > MAX_CHARS or not _TEXT.fullmatch(text) or len(text) % 4 == 1:
        raise CursorError(not_one)
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise CursorError(not_one) from None
    if len(data) <= _HEADER or data[0] != _VERSION:
        raise CursorError(not_one)
    if data[1:_HEADER] != token:
        raise CursorError("it is from another collector process (this one restarted since, or another made it); "
                          "start again with since")
    reader = _Reader(data)
    try:
        resume_us = reader.number()
        rows: dict[int, int] = {}
        serial = row = 0
        for _ in range(reader.number()):
            step, coded = reader.number(), reader.number()
            if step == 0 and rows:
                raise CursorError("a ring twice")
            serial += step
            row += coded // 2 if coded % 2 == 0 else -(coded + 1) // 2
            if row < 0:
                raise CursorError("a row before the first")
            rows[serial] = row
    except CursorError:
        raise CursorError(not_one) from None
    if reader.at != len(data):
        raise CursorError(not_one)
    return Cursor(resume_us, rows)
