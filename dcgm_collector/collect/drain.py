"""Drain DCGM's cached samples into rings: one dcgmGetValuesSince_v2 call each.

The enumeration callback is C (``native/ext/drain.c``): it writes no Python
object per value and runs with the GIL released.  Records are grouped into
rows by their DCGM timestamp and committed only when DCGM answers OK; on any
other answer nothing is committed and the cursor stays where it was, so the
next drain reads the same samples again (DCGM itself leaves the cursor
unchanged then).

Typical use, once per tick and field group::

    result = drain_into(ring, handle._h(), group_id, field_group_id, cursor)
    if result.rc == 0:
        cursor = result.next_cursor

A :class:`BatchDrain` fills several rings and the event ring from one field
group holding all their fields, in one call: against a hostengine, one round
trip a tick instead of one per ring (each a wait for the reply and a wake-up,
which cost more than the samples they bring).  A :class:`Ticker` runs a
stretch of a batch's ticks in C (``native/ext/ticker.h``), sleeping to each
deadline with no Python in between.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dcgm_collector.ext._native import ffi, lib
from dcgm_collector.rings.ring import EventRing, RingBuffer

__all__ = ["BatchDrain", "DrainResult", "TickRun", "Ticker", "drain_events_into", "drain_into"]

_INT64_MAX = 2**63 - 1
_HANDLE_MAX = 2**64 - 1
# dcgmc_drain_stats is nine 64-bit integers, in DrainResult's order after rc
_STATS = struct.Struct("=9q")
assert ffi.sizeof("dcgmc_drain_stats") == _STATS.size


@dataclass
class DrainResult:
    """What one drain did.

    ``rc`` is DCGM's status (or DCGM_ST_MEMORY / DCGM_ST_IN_USE from the
    drain itself); ``next_cursor`` is the cursor for the next drain (the one
    given unless rc is 0).  ``samples`` counts cells stored (events for an
    event ring), blank and not-supported ones included; ``blanks`` those of
    them that are blank or not supported (for events: blank records, which
    are not stored); ``rows`` rows (events) committed; ``no_data`` NO_DATA
    records (nothing new for an (entity, field)); ``unmapped`` records of no
    series of the ring or of a type a ring does not hold (strings, blobs);
    ``errors`` records with another non-OK status; ``dropped_rows`` rows of
    this drain beyond the ring's capacity (the oldest); ``late_rows`` rows not
    newer than the ring's newest row before them.
    """

    rc: int
    next_cursor: int
    samples: int
    rows: int
    no_data: int
    blanks: int
    unmapped: int
    errors: int = 0
    dropped_rows: int = 0
    late_rows: int = 0

    @property
    def ok(self) -> bool:
        return self.rc == lib.DCGM_ST_OK


def _int(value: Any, what: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= value <= high:
        raise ValueError(f"{what} {value} is out of range [0, {high}]")
    return value


def _read_args(handle: int, group_id: int, field_group_id: int, cursor: int) -> tuple[int, int, int, int]:
    """The DCGM arguments of a drain, checked: what every native drain call takes."""
    return (_int(handle, "handle", _HANDLE_MAX), _int(group_id, "group id", _HANDLE_MAX),
            _int(field_group_id, "field group id", _HANDLE_MAX), _int(cursor, "cursor", _INT64_MAX))


def _drain(drain: Any, native: Any, handle: int, group_id: int, field_group_id: int, cursor: int) -> DrainResult:
    """One native drain call (``lib.dcgmc_drain`` or ``lib.dcgmc_drain_events``) and what it did."""
    stats = ffi.new("dcgmc_drain_stats *")
    rc = drain(native, *_read_args(handle, group_id, field_group_id, cursor), stats)
    return DrainResult(rc, *_STATS.unpack(ffi.buffer(stats)))


def drain_into(ring: RingBuffer, handle: int, group_id: int, field_group_id: int, cursor: int) -> DrainResult:
    """Every sample of (group, field group) since ``cursor`` into ``ring``, in one DCGM call.

    ``handle`` is the raw dcgmHandle_t (``Handle._h()``); ``cursor`` is 0 for
    everything DCGM holds, a time in µs, or the previous result's next_cursor.
    """
    if not isinstance(ring, RingBuffer):
        raise TypeError(f"ring must be a RingBuffer, not {type(ring).__name__}")
    return _drain(lib.dcgmc_drain, ring._native, handle, group_id, field_group_id, cursor)


def drain_events_into(
    events: EventRing, handle: int, group_id: int, field_group_id: int, cursor: int
) -> DrainResult:
    """Every event record (OK, not blank) of (group, field group) since ``cursor`` into ``events``."""
    if not isinstance(events, EventRing):
        raise TypeError(f"events must be an EventRing, not {type(events).__name__}")
    return _drain(lib.dcgmc_drain_events, events._native, handle, group_id, field_group_id, cursor)


class BatchDrain:
    """Rings and (optionally) the event ring filled from one field group in one DCGM call.

    The field group must hold the fields of every ring and ``event_fields``
    (those that go to ``events``), watched on the group's entities; each
    record goes where its field is, as :func:`drain_into` and
    :func:`drain_events_into` would store it.  :meth:`drain` answers the
    status and one DrainResult per ring, then one for the event ring when
    there is one; nothing is committed unless DCGM answers OK.  The arrays
    the call takes are made once, here.
    """

    def __init__(self, rings: Sequence[RingBuffer], events: EventRing | None = None,
                 event_fields: Sequence[int] = ()) -> None:
        for ring in rings:
            if not isinstance(ring, RingBuffer):
                raise TypeError(f"ring must be a RingBuffer, not {type(ring).__name__}")
        if events is not None and not isinstance(events, EventRing):
            raise TypeError(f"events must be an EventRing, not {type(events).__name__}")
        if len({id(r) for r in rings}) != len(rings) or len(rings) > lib.DCGMC_DRAIN_MAX_RINGS:
            raise ValueError(f"a batch takes 1 to {lib.DCGMC_DRAIN_MAX_RINGS} distinct rings")
        if not rings and events is None:
            raise ValueError("a batch drains at least one ring")
        self.rings = tuple(rings)      # held: the native rings must outlive the arrays that point at them
        self.events = events
        fields = [_int(f, "event field id", 0xFFFF) for f in event_fields] if events is not None else []
        self._n = len(self.rings)
        self._rings = ffi.new("dcgmc_ring *[]", [r._native for r in self.rings] or [ffi.NULL])
        self._events = events._native if events is not None else ffi.NULL
        self._fields = ffi.new("unsigned short[]", fields or [0])
        self._n_fields = len(fields)
        self._stats = ffi.new("dcgmc_drain_stats[]", self._n + 1)
        self._buffer = ffi.buffer(self._stats)

    def drain(self, handle: int, group_id: int, field_group_id: int, cursor: int) -> tuple[int, list[DrainResult]]:
        """One call: DCGM's status and what it did to each ring (then the event ring)."""
        rc = lib.dcgmc_drain_many(self._rings, self._n, self._events, self._fields, self._n_fields,
                                  *_read_args(handle, group_id, field_group_id, cursor), self._stats)
        count = self._n + (self.events is not None)
        buffer = self._buffer
        return rc, [DrainResult(rc, *_STATS.unpack_from(buffer, i * _STATS.size)) for i in range(count)]

    def run_ticks(self, ticker: Ticker, handle: int, group_id: int, field_group_id: int, cursor: int, *,
                  origin_s: float, interval_s: float, first_tick: int, max_ticks: int, until_s: float) -> TickRun:
        """Ticks ``first_tick``, ... of the grid ``origin_s + k * interval_s`` in C, each one :meth:`drain`,
        up to the first due at or after ``until_s`` or the ``max_ticks``-th (``bounded``), a stop, or the
        first drain DCGM does not answer OK (not counted: nothing of it was committed)."""
        totals = ticker._totals
        rc = lib.dcgmc_ticker_run(ticker._native, self._rings, self._n, self._events, self._fields, self._n_fields,
                                  *_read_args(handle, group_id, field_group_id, cursor), float(origin_s),
                                  float(interval_s), _int(first_tick, "first tick", _INT64_MAX),
                                  _int(max_ticks, "max ticks", _INT64_MAX), float(until_s), self._stats, totals)
        if rc == lib.DCGM_ST_BADPARAM and totals.ticks == 0 and totals.rc == 0:
            raise ValueError("bad tick grid or cursor for a run of ticks")
        return TickRun(totals.ticks, totals.skipped, totals.next_tick, totals.samples, totals.blanks, totals.rows,
                       totals.events, totals.newest_ts, totals.cursor, totals.last_tick_start_s, totals.last_tick_s,
                       totals.last_tick_wall_s, totals.rc, bool(totals.stopped), bool(totals.bounded))


@dataclass(frozen=True)
class TickRun:
    """What one run of ticks in C did (``dcgmc_tick_totals``): counts summed over its ticks; ``rc`` DCGM's
    status of the drain that ended it (0 when time, its tick count or a stop did)."""

    ticks: int
    skipped: int
    next_tick: int
    samples: int
    blanks: int
    rows: int
    events: int
    newest_ts: int
    cursor: int
    last_tick_start_s: float   # time.monotonic() when its last tick started
    last_tick_s: float
    last_tick_wall_s: float    # time.time() when its last tick ended
    rc: int
    stopped: bool
    bounded: bool              # it ended with its last tick allowed (until_s or max_ticks)


class Ticker:
    """What a run of ticks sleeps on: :meth:`stop` (from any thread) ends the run under way and every later one."""

    def __init__(self) -> None:
        native = lib.dcgmc_ticker_new()
        if native == ffi.NULL:
            raise MemoryError("no memory for a ticker")
        # freed with this object: a run on the sampler's thread holds a reference to it
        self._native = ffi.gc(native, lib.dcgmc_ticker_free)
        self._totals = ffi.new("dcgmc_tick_totals *")

    def stop(self) -> None:
        lib.dcgmc_ticker_stop(self._native)
