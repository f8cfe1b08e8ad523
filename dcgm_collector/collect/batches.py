"""How a sampler's drains are read: in batches of one DCGM call, and in runs of ticks in C.

A tick against a hostengine costs more in waking up than in samples: each
dcgmGetValuesSince_v2 is a round trip the sampler thread sleeps through, and
each tick run by the interpreter costs about what its drain does.  So the
GPU-level drains of a sampler (values, profiling, events: watched on the same
GPUs at the same interval) are read as one batch, through a field group of
all their fields (DCGM reads a field watched on an entity whatever field
group asks for it), and while no reader is due the sampler's ticks run in C
(dcgm_collector.collect.drain.Ticker): between two readers' reads the thread
sleeps and drains without running Python at all.  The tick a reader is due
at is still drained in C; the sampler then runs its readers as its own tick
would have, in the same order.

Runs of ticks in C need one batch (a sampler with link, switch or CPU fields
has more, and ticks in Python) and the real clock (a test's manual clock
drives the ticks in Python).  A run returns to Python at least every
NATIVE_RUN_S, when the counts that /metrics and /health read are published.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dcgm_collector.collect import drain
from dcgm_collector.collect.readers import run_readers
from dcgm_collector.collect.watches import WatchGroup
from dcgm_collector.dcgm import EntityGroup, FieldGroup
from dcgm_collector.dcgm.handle import MAX_FIELDS_PER_FIELD_GROUP
from dcgm_collector.ext._native import lib
from dcgm_collector.rings.ring import EventRing, RingBuffer

if TYPE_CHECKING:   # for the annotations only: the sampler imports this module
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["CONNECTION_CODES", "NATIVE_RUN_S", "Batch", "Drain", "batch_drains", "native_ticks"]

# The longest run of ticks in C between two returns to Python, which publishes the counts (samples, ticks,
# the newest sample's time) that /metrics and /health read: they lag the rings by at most this.
NATIVE_RUN_S = 1.0
# more ticks than any run makes (a run is bounded by NATIVE_RUN_S)
_UNBOUNDED = 1 << 62
# Statuses that say the hostengine itself is gone or stuck: asking it about each GPU would only fail the
# same way, and the connection cannot be used again after them.
CONNECTION_CODES = frozenset({int(lib.DCGM_ST_CONNECTION_NOT_VALID), int(lib.DCGM_ST_TIMEOUT)})


@dataclass
class Drain:
    """One field group drained into one ring (a value ring, or the event ring)."""

    watch: WatchGroup
    field_group: FieldGroup
    target: RingBuffer | EventRing
    is_events: bool
    group: EntityGroup | None = None   # the entities it is watched on; None: the sampler's GPU group


@dataclass
class Batch:
    """Drains read in one DCGM call, through a field group of all their fields (not watched itself).
    A batch of one drain reads through that drain's own field group."""

    drains: list[Drain]
    field_group: FieldGroup
    cursor: int = 0                           # DCGM's cursor, for every drain of the batch
    native: drain.BatchDrain | None = None   # None: one drain, read as before


def batch_drains(sampler: Sampler, cursors: Mapping[WatchGroup, int]) -> list[Batch]:
    """The sampler's GPU drains as one batch when their fields fit one field group (the field group is
    made here, and removed with the sampler's own); the others, and all of them otherwise, one batch each.
    ``cursors`` are where a resumed sampler's drains had got to, by watch."""
    drains = sampler._drains
    on_gpus = [d for d in drains if d.group is None]
    alone = [Batch([d], d.field_group, cursors.get(d.watch, 0)) for d in drains if d.group is not None]
    fields = [f for d in on_gpus for f in d.field_group.field_ids]
    events = [d for d in on_gpus if d.is_events]
    if (len(on_gpus) < 2 or len(set(fields)) != len(fields) or len(fields) > MAX_FIELDS_PER_FIELD_GROUP
            or len(events) > 1 or len(on_gpus) - len(events) > lib.DCGMC_DRAIN_MAX_RINGS):
        return [Batch([d], d.field_group, cursors.get(d.watch, 0)) for d in on_gpus] + alone
    rings = [d for d in on_gpus if not d.is_events]
    members = rings + events   # the order BatchDrain answers in
    fgs = sampler.handle.create_field_groups(fields, f"dcgm-collector-read-{id(sampler):x}")
    sampler._made_field_groups.append(fgs[0])
    native = drain.BatchDrain([d.target for d in rings],   # type: ignore[misc]
                              events[0].target if events else None,  # type: ignore[arg-type]
                              events[0].field_group.field_ids if events else ())
    # equal unless the sampler resumed one that was not batched: the oldest, so that nothing is skipped
    cursor = min(cursors.get(d.watch, 0) for d in members)
    return [Batch(members, fgs[0], cursor, native), *alone]


def native_ticks(sampler: Sampler, origin: float, interval: float, k: int) -> int:
    """Ticks k, k + 1, ... of the sampler's grid in C, in runs that each end at the first tick a reader may be
    due at (whose readers then run here), for as long as the runs end so; the tick due next.  What ends a run
    otherwise (a drain DCGM did not answer OK, a stop) the sampler's own tick then handles."""
    while _runnable(sampler):
        k, bounded = _run(sampler, origin, interval, k)
        if not bounded:
            break
    return k


def _runnable(sampler: Sampler) -> bool:
    # the sampler makes a ticker only for one batch read natively (Sampler._setup)
    return (sampler._ticker is not None and sampler.connection_lost is None
            and bool(sampler._live_gpus or sampler.instances) and not sampler._stop.is_set())


def _run(sampler: Sampler, origin: float, interval: float, k: int) -> tuple[int, bool]:
    """One run of ticks in C from tick k: the tick due next, and whether the run ended for a reader."""
    stats = sampler.stats
    until, free = sampler.clock.monotonic() + NATIVE_RUN_S, _UNBOUNDED
    for reader in sampler.readers:
        reader_until, reader_free = reader.not_due_before(stats.ticks)
        until, free = min(until, reader_until), min(free, reader_free)
    batch = sampler._batches[0]
    assert batch.native is not None and sampler._ticker is not None and sampler.group is not None
    run = batch.native.run_ticks(sampler._ticker, sampler.handle._h(), sampler.group.id, batch.field_group.id,
                                 batch.cursor, origin_s=origin, interval_s=interval, first_tick=k,
                                 max_ticks=min(free, _UNBOUNDED - 1) + 1, until_s=until)
    if run.rc in CONNECTION_CODES:
        # counted here, as the sampler's own tick would: a tick in Python after it would only see the
        # connection the failure closed, and name that instead of what happened
        sampler._count(run.rc)
        stats.last_tick_ok = False
    if not run.ticks:
        return run.next_tick, False
    batch.cursor = run.cursor
    # the run's last tick, when it ended for a reader, is finished below, as Sampler.tick_once would
    stats.ticks += run.ticks - run.bounded
    stats.samples += run.samples
    stats.rows += run.rows
    stats.events += run.events
    stats.skipped_ticks += run.skipped
    sampler._cells += run.samples
    sampler._blank_cells += run.blanks
    if run.newest_ts:
        stats.last_sample_time = run.newest_ts / 1e6
    good = run.rc == 0
    if run.bounded:
        good = run_readers(sampler, sampler.readers, run.last_tick_start_s, connected=True)
        stats.ticks += 1
    stats.last_tick_ok = good
    stats.last_good_tick_time = run.last_tick_wall_s   # the run's drains all answered OK
    stats.last_tick_duration_s = run.last_tick_s
    return run.next_tick, run.bounded
