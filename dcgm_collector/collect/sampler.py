"""The sampler: one thread that drains DCGM's sample cache into the rings.

DCGM samples inside the hostengine at the watch interval; every collect
interval the sampler reads what DCGM took since the last read, carrying
DCGM's cursor from call to call, so every sample DCGM took arrives in the
rings exactly once however far apart the ticks are.  The GPU-level field
groups (values, profiling, events) are read in one GetValuesSince call, and
between the readers' reads the ticks run in C (dcgm_collector.collect.batches);
the values go from the enumeration callback straight into the ring arrays
in C (dcgm_collector.collect.drain): no Python object is made per sample.

Ticks run on a fixed monotonic grid (tick k is due at origin + k * interval):
a late tick does not push the following ones back, and a tick that overran
one or more deadlines skips them instead of running them back to back (the
cursor makes a skipped tick cost latency, never data).

NvLinks, NvSwitches, CPUs and CPU cores (``levels``, from collect.levels)
are watched on groups of their own, one per watch level (a CPU-core field
on the CPUs and the cores), and drained like the GPUs into rings of their
own; their label rows are read with the GPUs'.

Besides the drains, each tick runs the sampler's readers that are due
(dcgm_collector.collect.readers, one module each): the labels and, when the
counters ask for DCGM_EXP_P2P_STATUS, DCGM's NvLink P2P status matrix
(:attr:`Sampler.labels`, :attr:`Sampler.p2p`); when they ask for
DCGM_EXP_GPU_HEALTH_STATUS, DCGM's health checks every HEALTH_CHECK_S
(:attr:`Sampler.health`); the engine's field costs and the search for lost
GPUs; and whatever readers its owner passes in (the flight recorder's
triggers).  A reader that raises does not stop the tick or the other readers.
What the sampler counts (:class:`SamplerStats`) and the health it saw
(:class:`HealthState`) are in dcgm_collector.series.stats, where the outputs read them.  Every
time the sampler and its readers read or wait on comes from its clock
(dcgm_collector.clock: the real one unless a test passes a manual one).

Failures are counted by DCGM status code and the thread carries on.  When a
read fails, the GPUs DCGM reports as lost are taken out of the sampler's
group (their ring series simply get no new rows) and the read is retried, so
a lost GPU stops its own series without disturbing the others; a field group
someone unwatched behind the sampler's back is watched again.

A lost or timed-out hostengine connection cannot be repaired on the same
handle (DCGM does not reconnect by itself).  A sampler given
``on_connection_lost`` then stops ticking and reports the status once; its
owner (dcgm_collector.collect.target) reconnects and starts a new sampler that
``resume``s this one: same GPUs and counters, so it keeps the rings and
carries on from the cursors, and nothing is read twice or skipped.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

from dcgm_collector.catalog.counters import CounterSet
from dcgm_collector.clock import REAL_CLOCK, Clock, RealClock
from dcgm_collector.collect import drain
from dcgm_collector.collect.batches import CONNECTION_CODES, Batch, Drain, batch_drains, native_ticks
from dcgm_collector.collect.levels import MEMBERS
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.readers import DEFAULT_READERS, Reader, ReaderFactory, run_readers, start_readers
from dcgm_collector.collect.readers.health import HEALTH_CHECK_S
from dcgm_collector.collect.readers.lost_gpus import remove_lost_gpus
from dcgm_collector.collect.readers.reader import quietly
from dcgm_collector.collect.servable import SAMPLED_LEVELS
from dcgm_collector.collect.watches import WatchGroup, WatchPlan, plan_watches
from dcgm_collector.dcgm import (
    DcgmError,
    EntityGroup,
    EntityType,
    FieldGroup,
    FieldValue,
    Handle,
)
from dcgm_collector.ext._native import lib
from dcgm_collector.model import LevelEntity, MigInstance
from dcgm_collector.rings.ring import EventRing, RingBuffer, SeriesKey
from dcgm_collector.series.stats import HealthState, SamplerStats

__all__ = ["CONNECTION_CODES", "THREAD_NAME", "HealthState", "Sampler", "SamplerStats"]

log = logging.getLogger(__name__)

THREAD_NAME = "dcgm-sampler"
FE_GPU = int(EntityType.GPU)
FE_GPU_I = int(EntityType.GPU_I)
ST_NOT_WATCHED: int = lib.DCGM_ST_NOT_WATCHED
MAX_GROUP_ENTITIES: int = lib.DCGM_GROUP_MAX_ENTITIES_V2


class Sampler:
    """Watches the counters' fields on a set of GPUs and MIG GPU instances and drains them into rings.

    ``instances`` are GPU instances sampled on their own (dcgm-exporter's flex
    mode samples a MIG GPU through its instances only): the GPU-level fields are
    watched on them as on the GPUs, and their series are keyed by their GPU_I entity.

    ``rings`` (one per value / profiling field group), ``events`` and
    ``labels`` are what readers use; they are created by :meth:`start` and
    stay readable after :meth:`stop`.

    ``stats`` may be shared with earlier samplers of the same source, so that
    the counts go on across reconnects.  ``resume`` is a stopped sampler on
    the same GPUs with the same counters: this one then writes into its rings
    and event ring, from its cursors (a sampler on other GPUs or counters is
    not resumed).  ``on_connection_lost(status)`` is called once, on the
    sampler's thread, when DCGM answers CONNECTION_NOT_VALID or TIMEOUT; the
    thread then stops.

    ``readers`` are more periodic side reads (dcgm_collector.collect.readers): factories called with
    the sampler when it starts, each giving a Reader or None; they run after the sampler's own.
    ``clock`` is what the sampler and its readers take the time from and wait on (the real one by default).
    """

    def __init__(
        self,
        handle: Handle,
        counters: CounterSet,
        options: SamplingOptions | None = None,
        *,
        gpu_ids: Sequence[int] | None = None,
        instances: Sequence[MigInstance] = (),
        levels: Sequence[LevelEntity] = (),
        stats: SamplerStats | None = None,
        resume: Sampler | None = None,
        on_connection_lost: Callable[[int], None] | None = None,
        readers: Sequence[ReaderFactory] = (),
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(handle, Handle):
            raise TypeError(f"handle must be a Handle, not {type(handle).__name__}")
        self.handle = handle
        self.counters = counters
        if options is not None and not isinstance(options, SamplingOptions):
            raise TypeError(f"options must be SamplingOptions, not {type(options).__name__}")
        self.options = options if options is not None else SamplingOptions()
        # fields a reader reads from the rings whether the counters serve them or not (the early warnings')
        extra = tuple(f for factory in readers for f in getattr(factory, "watch_fields", ()))
        self.plan: WatchPlan = plan_watches(counters, self.options, extra_fields=extra)
        self._requested_gpus = None if gpu_ids is None else _gpu_list(gpu_ids)
        # NvLinks, NvSwitches, CPUs and cores whose fields the counters ask for (collect.levels)
        self.levels: tuple[LevelEntity, ...] = tuple(levels)
        self._level_groups: dict[str, EntityGroup] = {}
        self._level_label_groups: list[tuple[EntityGroup, FieldGroup]] = []   # label rows of those levels
        self.interval_s = self.plan.collect_interval_us / 1e6
        self.stats = stats if stats is not None else SamplerStats()
        self.gpu_ids: tuple[int, ...] = ()
        self.instances: tuple[MigInstance, ...] = tuple(instances)
        self.group: EntityGroup | None = None
        self.rings: Mapping[WatchGroup, RingBuffer] = MappingProxyType({})
        self.field_groups: Mapping[WatchGroup, FieldGroup] = MappingProxyType({})
        self.events = EventRing(self.plan.event_capacity)
        self.labels: Mapping[tuple[int, int], Mapping[str, str]] = MappingProxyType({})
        self.health: HealthState | None = None  # only when the counters ask for health status
        # GPU -> {peer GPU: DCGM's P2P status}, only when the counters ask for P2P status
        self.p2p: Mapping[int, Mapping[int, int]] = MappingProxyType({})
        self.health_interval_s = HEALTH_CHECK_S   # how often the health reader checks
        self.clock: Clock = clock if clock is not None else REAL_CLOCK
        self._reader_factories = (*DEFAULT_READERS, *readers)
        self.readers: tuple[Reader, ...] = ()   # made by start(), run by each tick in this order
        # cells and blank cells drained since the lost-GPU reader last looked (collect.readers.lost_gpus)
        self._cells = 0
        self._blank_cells = 0
        self.tick_origin: float | None = None   # monotonic time tick 0 was due
        self._drains: list[Drain] = []
        self._batches: list[Batch] = []   # how the drains are read: one DCGM call each
        self._ticker: drain.Ticker | None = None   # ticks in C, when the sampler has one batch on the real clock
        self._label_groups: list[FieldGroup] = []
        self._made_field_groups: list[FieldGroup] = []
        self._live_gpus: set[int] = set()   # GPUs still in the group (not lost)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self._torn_down = False
        self._resume = resume
        self._on_connection_lost = on_connection_lost
        self.connection_lost: int | None = None   # the status that ended the connection, once it did

    # -- life cycle
    def start(self, thread: bool = True) -> None:
        """Create the group, field groups and watches, then start the sampling thread.

        With ``thread=False`` nothing ticks on its own: the caller drives the
        sampler with :meth:`tick_once` (tests, a manual-mode hostengine).
        """
        if self._started:
            raise RuntimeError("a Sampler starts once")
        self._started = True
        try:
            self._setup()
            self.tick_origin = self.clock.monotonic()
            if thread:
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self._thread.start()
        except BaseException:
            self._teardown()
            raise

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread and remove the watches and groups the sampler made."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.stop()   # a run of ticks in C sleeps on the ticker, not on the event
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("sampler thread did not stop within %.1f s (a DCGM call is stuck)", timeout)
        self._teardown()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end (after stop()); True once it has, or when there is none."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return not self.running

    @property
    def connected(self) -> bool:
        """False once the sampler's DCGM handle is closed.  A connection lost under an open handle is the
        target's to report (it names the hostengine and the status), so it does not count here."""
        return not self.handle.closed

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- set-up and tear-down
    def _setup(self) -> None:
        h = self.handle
        gpus = self._requested_gpus if self._requested_gpus is not None else h.gpu_ids(supported_only=True)
        if not gpus and not self.instances:
            raise RuntimeError("DCGM reports no supported GPU to sample")
        self.gpu_ids = tuple(gpus)
        entities = [(FE_GPU, gpu) for gpu in gpus] + [(FE_GPU_I, i.entity_id) for i in self.instances]
        previous = self._adoptable(self._resume)
        self._resume = None   # keep no reference: an old sampler must be free to go
        self.stats.lost_gpus = ()
        self.group = self.handle.create_group(f"dcgm-collector-gpus-{id(self):x}", entities)
        self._live_gpus = set(gpus)
        if previous is not None:
            self.events = previous.events
            self.labels = previous.labels
            self.health = previous.health
            self.p2p = previous.p2p
        old_rings = previous.rings if previous is not None else {}
        cursors = {d.watch: b.cursor for b in previous._batches for d in b.drains} if previous is not None else {}
        rings: dict[WatchGroup, RingBuffer] = {}
        field_groups: dict[WatchGroup, FieldGroup] = {}
        for watch in self.plan.groups:
            if watch.entity_level not in SAMPLED_LEVELS:
                # each of its rows was warned about, with its file and line, when the counters were read
                self.stats.dropped_groups += 1
                log.debug("not sampling %s fields %s (%s level): the level is not sampled yet", watch.kind,
                          _ids(watch.field_ids), watch.entity_level)
                continue
            if watch.entity_level in MEMBERS:
                self._setup_level(watch, old_rings, rings, field_groups)
                continue
            # Global fields are read through the GPUs, as dcgm-exporter does: DCGM
            # keeps one copy and answers it for every GPU, so each GPU's series show it.
            fg = self._watch(watch)
            if fg is None:
                continue
            field_groups[watch] = fg
            if watch.kind == "labels":
                self._label_groups.append(fg)
            elif watch.kind == "events":
                self._drains.append(Drain(watch, fg, self.events, True))
            else:
                ring = old_rings.get(watch)
                if ring is None:
                    series = [SeriesKey(group, entity, field_id) for group, entity in entities
                              for field_id in watch.field_ids]
                    ring = RingBuffer(series, self.plan.ring_capacity)
                rings[watch] = ring
                self._drains.append(Drain(watch, fg, ring, False))
        self.rings = MappingProxyType(rings)
        self.field_groups = MappingProxyType(field_groups)
        self._batches = batch_drains(self, cursors)
        if len(self._batches) == 1 and self._batches[0].native is not None and isinstance(self.clock, RealClock):
            self._ticker = drain.Ticker()
        made = (factory(self) for factory in self._reader_factories)
        self.readers = tuple(reader for reader in made if reader is not None)
        start_readers(self, self.readers, self.clock.monotonic())

    def _setup_level(self, watch: WatchGroup, old_rings: Mapping[WatchGroup, RingBuffer],
                     rings: dict[WatchGroup, RingBuffer],
                     field_groups: dict[WatchGroup, FieldGroup]) -> None:
        """Watch one field group on the links, switches, CPUs or cores of its level, into a ring of its own."""
        members = [e for e in self.levels if e.level in MEMBERS[watch.entity_level]]
        if watch.kind == "events" or not members:
            # event rows at these levels were warned about with the counters, and so was
            # each row of a level the node has no entities of (collect.levels)
            self.stats.dropped_groups += 1
            log.debug("not sampling %s fields %s: no %s entity to watch them on", watch.kind,
                      _ids(watch.field_ids), watch.entity_level)
            return
        if len(members) > MAX_GROUP_ENTITIES:
            # one DCGM group holds at most this many; more CPU cores than that is beyond any node today
            log.warning("%d %s entities: sampling the first %d (a DCGM group holds no more)", len(members),
                        watch.entity_level, MAX_GROUP_ENTITIES)
            members = members[:MAX_GROUP_ENTITIES]
        group = self._level_groups.get(watch.entity_level)
        if group is None:
            group = self.handle.create_group(f"dcgm-collector-{watch.entity_level.lower()}-{id(self):x}",
                                             [e.key for e in members])
            self._level_groups[watch.entity_level] = group
        fg = self._watch(watch, group)
        if fg is None:
            return
        field_groups[watch] = fg
        if watch.kind == "labels":
            self._level_label_groups.append((group, fg))
            return
        ring = old_rings.get(watch)
        if ring is None:
            series = [SeriesKey(int(e.level), e.entity_id, field_id) for e in members for field_id in watch.field_ids]
            ring = RingBuffer(series, self.plan.ring_capacity)
        rings[watch] = ring
        self._drains.append(Drain(watch, fg, ring, False, group))

    def _adoptable(self, previous: Sampler | None) -> Sampler | None:
        """``previous`` if its rings fit this sampler (same GPUs, same plan) and nobody writes them any more."""
        if previous is None:
            return None
        if previous.running:
            raise RuntimeError("a sampler resumes a stopped one only (a ring has one writer)")
        if (previous.gpu_ids != self.gpu_ids or previous.instances != self.instances or previous.plan != self.plan
                or previous.levels != self.levels):
            return None
        return previous

    def _watch(self, watch: WatchGroup, group: EntityGroup | None = None) -> FieldGroup | None:
        """Create and watch one field group (on ``group``, else the GPUs); None if a profiling watch was refused."""
        name = f"dcgm-collector-{watch.kind}-{id(self):x}-{len(self._made_field_groups)}"
        fgs = self.handle.create_field_groups(watch.field_ids, name)
        fg = fgs[0]
        self._made_field_groups.append(fg)
        # labels need no more than the collect interval, whatever the watch interval
        freq = self.plan.collect_interval_us if watch.kind == "labels" else self.plan.update_freq_us
        try:
            self.handle.watch(group if group is not None else self.group, fg, freq, self.plan.max_keep_age_s)
        except DcgmError as error:
            self._made_field_groups.remove(fg)
            fgs.destroy()
            if watch.kind != "profiling":
                raise
            self._count(error.code)
            self._drop(watch, f"DCGM refused the profiling watch: {error}")
            return None
        return fg

    def _drop(self, watch: WatchGroup, why: str) -> None:
        """A field group not watched: a warning for each row of the counters it leaves unserved."""
        self.stats.dropped_groups += 1
        rows = [c for c in self.counters if c.field is not None and c.field.id in watch.field_ids]
        for row in rows:
            log.warning("%s:%d: not serving %s (field %d): %s", row.path, row.line, row.name,
                        row.field.id, why)   # type: ignore[union-attr]
        if not rows:   # fields a DCGM_EXP_* row needs
            log.warning("not sampling %s fields %s (%s level): %s", watch.kind, _ids(watch.field_ids),
                        watch.entity_level, why)

    def _teardown(self) -> None:
        if self._torn_down:
            return
        self._torn_down = True
        if self.handle.closed or self.connection_lost is not None:
            return  # the handle's close removes everything (a lost connection took it all already)
        for fg in reversed(self._made_field_groups):
            quietly(fg.destroy)  # the handle unwatches a field group before destroying it
        for reader in reversed(self.readers):
            reader.close()
        for group in self._level_groups.values():
            quietly(group.destroy)
        if self.group is not None:
            quietly(self.group.destroy)

    # -- the thread
    def _run(self) -> None:
        clock = self.clock
        origin = self.tick_origin if self.tick_origin is not None else clock.monotonic()
        interval = self.interval_s
        k = 0
        while True:
            delay = origin + k * interval - clock.monotonic()
            if delay > 0 and clock.wait(self._stop, delay) or self._stop.is_set():
                return
            self._guarded_tick()
            if self.connection_lost is not None and self._on_connection_lost is not None:
                self._on_connection_lost(self.connection_lost)
                return
            # deadlines that passed while the tick ran are skipped, not caught up
            due = math.floor((clock.monotonic() - origin) / interval)
            if due > k:
                self.stats.skipped_ticks += due - k
                k = due
            k += 1
            if self._ticker is not None:
                k = self._native_ticks(origin, interval, k)
                if self.connection_lost is not None and self._on_connection_lost is not None:
                    self._on_connection_lost(self.connection_lost)
                    return

    def _guarded_tick(self) -> None:
        try:
            self.tick_once()
        except DcgmError as error:  # e.g. the handle was closed under the sampler
            self.stats.last_tick_ok = False
            self._count(error.code)
        except Exception as error:
            stats = self.stats
            stats.last_tick_ok = False
            stats.tick_failures += 1
            cause = f"{type(error).__name__}: {error}"
            if cause != stats.last_tick_failure:   # once per cause, not once per tick (10 a second at 100 ms)
                log.exception("sampler tick failed; the sampler goes on (counted in "
                              "dcgm_collector_tick_failures_total, logged again only if the cause changes)")
            stats.last_tick_failure = cause
        else:
            if self.stats.last_tick_failure is not None:
                log.info("sampler ticks succeed again after %d failures", self.stats.tick_failures)
                self.stats.last_tick_failure = None

    def _native_ticks(self, origin: float, interval: float, k: int) -> int:
        """Ticks k, k + 1, ... in C (collect.batches); the tick due next.  One that raises turns them off."""
        try:
            return native_ticks(self, origin, interval, k)
        except Exception:
            log.exception("ticks in C failed; the sampler goes on ticking in Python")
            self.stats.tick_failures += 1
            self._ticker = None
            return k

    def tick_once(self) -> None:
        """One pass: drain every field group once, then run the readers that are due.

        The sampler's thread calls this every collect interval; call it
        yourself only on a sampler started with ``thread=False`` (a ring has
        one writer).
        """
        if self.group is None or self._torn_down:
            raise RuntimeError("the sampler is not started, or already stopped")
        if self._thread is not None and threading.current_thread() is not self._thread:
            raise RuntimeError("the sampler's thread is ticking; start(thread=False) to tick by hand")
        started = self.clock.monotonic()
        raw = self.handle._h()
        stats = self.stats
        good = True
        newest = 0
        batches = self._batches if self._live_gpus or self.instances else ()  # every GPU lost: nothing to read
        for batch in batches:
            results = self._read(batch, raw)
            if results is None:
                good = False
                if self.connection_lost is not None:
                    break   # every other call on this handle would fail the same way
                continue
            batch.cursor = results[0].next_cursor   # one call: one cursor for all its drains
            for d, result in zip(batch.drains, results):
                if d.is_events:
                    stats.events += result.rows
                    continue
                stats.samples += result.samples
                stats.rows += result.rows
                # DCGM keeps sampling a lost GPU, storing a blank for each of its fields
                # (DcgmCacheManager.cpp: a lost GPU's fields get the NVML GPU_IS_LOST error value)
                self._cells += result.samples
                self._blank_cells += result.blanks
                if result.rows:
                    newest = max(newest, d.target.newest_ts or 0)
        good = run_readers(self, self.readers, started, connected=self.connection_lost is None) and good
        stats.ticks += 1
        if newest:
            stats.last_sample_time = newest / 1e6
        stats.last_tick_ok = good
        if good:
            stats.last_good_tick_time = self.clock.time()
        stats.last_tick_duration_s = self.clock.monotonic() - started

    def unsupported_counters(self) -> tuple[str, ...]:
        """The counters DCGM answers NOT_SUPPORTED for on every GPU and MIG instance sampled, in counters order.

        Read from DCGM's latest values (a new watch is sampled at once), so call it after
        :meth:`start`; a GPU that lacks a field only for now (lost, no profiling) does not
        make it unsupported.
        """
        if self.group is None:
            return ()
        groups = [d.field_group for d in self._drains if not d.is_events and d.group is None]
        try:
            values = self.handle.latest_values(self.group, groups) if groups else []
        except DcgmError as error:
            self._count(error.code)
            return ()
        return self._never_supported(v for v in values if v.entity_group in (FE_GPU, FE_GPU_I))

    def unsupported_level_counters(self) -> tuple[str, ...]:
        """The counters of link, switch and CPU fields DCGM answers NOT_SUPPORTED for on every entity
        they are watched on, in counters order (as :meth:`unsupported_counters`, after :meth:`start`)."""
        values = []
        for d in self._drains:
            if d.group is None or d.is_events:
                continue
            try:
                values += self.handle.latest_values(d.group, [d.field_group])
            except DcgmError as error:
                self._count(error.code)
                return ()
        return self._never_supported(values)

    def _never_supported(self, values: Iterable[FieldValue]) -> tuple[str, ...]:
        """The counters whose field every one of ``values`` answers NOT_SUPPORTED for, in counters order."""
        kinds: dict[int, set[str | None]] = {}
        for v in values:
            kinds.setdefault(v.field_id, set()).add(v.blank_kind if v.is_blank else None)
        never = {field_id for field_id, seen in kinds.items() if seen == {"NOT_SUPPORTED"}}
        return tuple(c.name for c in self.counters.field_counters() if c.field is not None and c.field.id in never)

    def _read(self, batch: Batch, raw: int) -> list[drain.DrainResult] | None:
        """One batch's call; on a failure, repair what can be repaired and try once more."""
        rc, results = self._read_call(batch, raw)
        if rc == 0:
            return results
        self._count(rc)
        if not self._repair(batch, rc):
            return None
        rc, results = self._read_call(batch, raw)
        if rc == 0:
            return results
        self._count(rc)
        return None

    def _read_call(self, batch: Batch, raw: int) -> tuple[int, list[drain.DrainResult]]:
        first = batch.drains[0]
        group_id = (first.group or self.group).id  # type: ignore[union-attr]  # set by start()
        if batch.native is not None:
            return batch.native.drain(raw, group_id, batch.field_group.id, batch.cursor)
        if first.is_events:
            result = drain.drain_events_into(first.target, raw, group_id, first.field_group.id, batch.cursor)
        else:
            result = drain.drain_into(first.target, raw, group_id, first.field_group.id, batch.cursor)
        return result.rc, [result]

    # -- repairs
    def _repair(self, batch: Batch, rc: int) -> bool:
        """Fix what made a read fail, if the sampler can; True when a retry is worth it."""
        if rc in CONNECTION_CODES:
            return False
        if remove_lost_gpus(self):
            return bool(self._live_gpus)
        if rc == ST_NOT_WATCHED:
            return all([self._rewatch(d) for d in batch.drains])
        return False

    def _rewatch(self, d: Drain) -> bool:
        freq = self.plan.update_freq_us
        try:
            self.handle.watch(d.group or self.group, d.field_group, freq, self.plan.max_keep_age_s)
        except DcgmError as error:
            self._count(error.code)
            return False
        log.warning("field group %s was not watched any more; watched it again", d.field_group.name)
        return True

    def _count(self, code: int) -> None:
        self.stats.count_error(code)
        if code in CONNECTION_CODES and self.connection_lost is None:
            self.connection_lost = code


def _gpu_list(gpu_ids: Sequence[int]) -> list[int]:
    if isinstance(gpu_ids, (str, bytes)):
        raise TypeError("gpu_ids must be a sequence of ints")
    ids = []
    for gpu in gpu_ids:
        if isinstance(gpu, bool) or not isinstance(gpu, int) or gpu < 0:
            raise ValueError(f"bad GPU id {gpu!r}")
        ids.append(int(gpu))
    return list(dict.fromkeys(ids))


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids)) if len(ids) <= 8 else f"{ids[0]}..{ids[-1]} ({len(ids)} ids)"

