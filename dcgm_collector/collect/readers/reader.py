"""The reader interface: one periodic side read of a sampler, and how a tick runs the readers that are due.

The interface is documented with the package (dcgm_collector.collect.readers).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dcgm_collector.dcgm import DcgmError

if TYPE_CHECKING:   # for the annotations only: the sampler imports this module
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["Reader", "ReaderFactory", "quietly", "run_readers", "start_readers"]

# logged as the sampler's own lines, under the logger they have always had
log = logging.getLogger("dcgm_collector.collect.sampler")


class Reader:
    """One periodic side read of a sampler: what it reads (:meth:`read`), how often, and what it writes.

    Set ``every_s`` (seconds of the sampler's clock between reads; 0: at every
    tick) or ``every_ticks`` (every N ticks, counted on the sampler's stats, the
    first read being :meth:`start`'s).  What a reader reads it writes on its
    sampler's state objects (``labels``, ``p2p``, ``health``, ``stats``), by
    replacing them whole, as readers on other threads expect.
    """

    name: str = "reader"             # how logs and the per-reader failure counts name it
    every_s: float | None = None     # seconds between reads, or None for every_ticks
    every_ticks: int | None = None   # ticks between reads
    reads_dcgm: bool = True          # False: it reads only memory, so it still runs once the connection is lost

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self.next_at = 0.0                     # the monotonic time it is next due (every_s readers)
        self.last_failure: str | None = None   # what its latest read raised, None once one works

    # -- what a reader may override
    def start(self, now: float) -> None:
        """Called once when the sampler starts, on the thread that starts it: by default the first read,
        and an every_s reader is next due every_s later (a reader that reads nothing at start leaves
        ``next_at`` at 0, so that its first read comes with the first tick)."""
        self.read(now)
        self.scheduled(now)

    def due(self, now: float) -> bool:
        """Whether the tick at monotonic time ``now`` should read."""
        if self.every_ticks is not None:
            ticks = self.sampler.stats.ticks
            return ticks > 0 and ticks % self.every_ticks == 0
        return now >= self.next_at

    def not_due_before(self, ticks_so_far: int) -> tuple[float, int]:
        """(until, free): of a sampler that has ticked ``ticks_so_far`` times, neither a tick that starts
        before monotonic time ``until`` nor any of its next ``free`` ticks needs this reader, so the
        sampler may run those without asking (its ticks in C).  A reader that overrides :meth:`due`
        must never be due sooner than this says."""
        if self.every_ticks is not None:
            if ticks_so_far == 0:   # due() never reads at the first tick
                return math.inf, self.every_ticks
            return math.inf, (-ticks_so_far) % self.every_ticks
        if self.every_s is not None:
            return self.next_at, 1 << 62
        return -math.inf, 0

    def read(self, now: float) -> bool:
        """Read and write the result on the sampler.  False when a DCGM call failed (counted with
        :meth:`count`), which marks the tick as not good; an exception is the tick's to handle."""
        raise NotImplementedError

    def close(self) -> None:
        """Remove what the reader made in DCGM (the sampler is stopping and its handle still open)."""

    # -- helpers
    def count(self, code: int) -> None:
        """Count a failed DCGM call on the sampler, as its own failures are."""
        self.sampler._count(code)

    def scheduled(self, now: float) -> None:
        """Note a read made at ``now``: an every_s reader is next due every_s later."""
        if self.every_s is not None:
            self.next_at = now + self.every_s

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


# Makes the reader of one sampler, or None when the sampler does not need it (its counters do not ask for it).
ReaderFactory = Callable[["Sampler"], "Reader | None"]


def start_readers(sampler: Sampler, readers: Sequence[Reader], now: float) -> None:
    """Each reader's start, when the sampler starts; one that raises is handled as in :func:`run_readers`."""
    for reader in readers:
        _guarded(sampler, reader, reader.start, now)


def run_readers(sampler: Sampler, readers: Sequence[Reader], now: float, connected: bool = True) -> bool:
    """Run the readers due at ``now``, in order; False when one of them saw a DCGM call fail.

    A reader that raises is counted (on the sampler's tick failures and per reader), logged once
    per cause, and the tick and the other readers go on; a DcgmError it raises is counted by
    status code, as the sampler's own are.  With ``connected`` False (the hostengine is gone)
    only the readers that do not read DCGM run.
    """
    good = True
    for reader in readers:
        if (reader.reads_dcgm and not connected) or not reader.due(now):
            continue
        reader.scheduled(now)
        good = _guarded(sampler, reader, reader.read, now) and good
    return good


def _guarded(sampler: Sampler, reader: Reader, call: Callable[[float], object], now: float) -> bool:
    """``call(now)``; False when it answered False or raised a DcgmError, which is counted."""
    try:
        answer = call(now)
    except DcgmError as error:
        sampler._count(error.code)
        return False
    except Exception as error:
        _failed(sampler, reader, error)
        return True   # the samples still flow: the tick stays good, the failure is counted and logged
    if reader.last_failure is not None:
        log.info("sampler reader %s works again after %d failures", reader.name,
                 sampler.stats.reader_failures.get(reader.name, 0))
        reader.last_failure = None
    return answer is not False


def _failed(sampler: Sampler, reader: Reader, error: Exception) -> None:
    stats = sampler.stats
    stats.tick_failures += 1
    stats.reader_failures = {**stats.reader_failures, reader.name: stats.reader_failures.get(reader.name, 0) + 1}
    cause = f"{type(error).__name__}: {error}"
    if cause != reader.last_failure:   # once per cause, not once per tick
        log.exception("sampler reader %s failed; the sampler and its other readers go on (counted in "
                      "dcgm_collector_tick_failures_total, logged again only if the cause changes)", reader.name)
    reader.last_failure = cause


def quietly(action: Callable[[], object]) -> None:
    """Run a clean-up call whose failure changes nothing (the handle's close removes what it leaves)."""
    try:
        action()
    except DcgmError as error:
        log.debug("clean-up: %s", error)
