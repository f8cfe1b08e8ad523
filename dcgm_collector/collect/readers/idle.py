"""The idle reader (--processes): how many seconds each GPU was busy, idle while held, idle while allocated, free.

At every tick it reads the rows of the GPU utilisation field its rings got
since its last read: ``DCGM_FI_DEV_GPU_UTIL`` (203, in %), or, when the
counters do not sample that, ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (1001, a
0..1 ratio, taken x100).  Each row is one sampling instant, so the time is
counted at the sampling rate, not at scrape time: the time since the GPU's
previous row (at most :data:`MAX_GAP_INTERVALS` collect or watch intervals,
so that a stall or a reconnect is not counted as hours) goes to exactly one
of

- ``busy``: the utilisation is at or over ``util_below`` %;
- ``idle_held``: under it, while the GPU's processes (the process reader's
  latest list, collect.readers.processes) hold ``held_fb_mib`` MiB or more;
- ``allocated_no_process``: under it and not held, while ``allocated``
  (a callable app.py builds from the pod and HPC job mappings, which this
  package does not import) says a pod or a job has the GPU;
- ``free``: none of these.

A row whose utilisation is blank or not supported counts nowhere (the time
up to it is not known to be either).  MIG GPU instances sampled on their
own (``-d f``, ``-d i``) are counted from 1001 on the instance, when the
counters sample it; they have no 203.  The counters go, as monotonic floats,
into a small SeriesStore of the reader's own that the exposition serves
(series.idle's families), every series written at every read, so none ever
outlives the store's time to live while the sampler runs, and all four start
at an explicit 0.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dcgm_collector.collect.readers.processes import ProcessReader
from dcgm_collector.collect.readers.reader import Reader
from dcgm_collector.dcgm import DcgmError
from dcgm_collector.model import EntityType
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_OK, RingBuffer, SeriesKey
from dcgm_collector.rings.series_store import SeriesStore, StoreKey
from dcgm_collector.series.idle import BUSY, BUSY_FAMILY, IDLE_FAMILY, IDLE_STATES, STATE_LABEL

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["GPU_UTIL", "GR_ENGINE_ACTIVE", "MAX_GAP_INTERVALS", "Allocated", "IdleCounts", "IdleReader"]

log = logging.getLogger("dcgm_collector.collect.idle")

GPU_UTIL = 203           # DCGM_FI_DEV_GPU_UTIL, in %
GR_ENGINE_ACTIVE = 1001  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, a 0..1 ratio
MAX_GAP_INTERVALS = 5    # the most time one row may count, in collect (or watch) intervals
STORE_ROWS = 8           # the exposition reads the newest row only
MIN_TTL_S = 60.0
_LABEL_BYTES = 1024     # allowance per series for its key and state label (series_store._key_bytes)
_GPU, _GPU_I = int(EntityType.GPU), int(EntityType.GPU_I)

# allocated(gpu_index, uuid, instance_id or None): whether a pod or an HPC job holds the GPU (or MIG instance)
Allocated = Callable[[int, str, "int | None"], bool]


@dataclass
class _Entity:
    """One GPU or MIG instance counted: where its utilisation is, what it is, and its running totals."""

    key: tuple[int, int]        # (entity group, entity id)
    gpu: int
    instance_id: int | None     # the GPU_I_ID of a MIG instance, None for a whole GPU
    uuid: str
    ring: RingBuffer
    column: int
    scale: float                # x100 for the 0..1 ratio of 1001
    previous_us: int | None = None   # ts of its latest row with a reading, or blank
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys((BUSY, *IDLE_STATES), 0.0))


class IdleCounts:
    """The classification, apart from rings and clocks: a row's utilisation and the GPU's state -> one bucket."""

    def __init__(self, util_below: float, held_fb_mib: float) -> None:
        self.util_below = float(util_below)
        self.held_bytes = float(held_fb_mib) * 2**20

    def held(self, fb_bytes: list[int | None]) -> bool:
        """Whether processes holding these framebuffer sizes make an idle GPU held (at least one process)."""
        return bool(fb_bytes) and sum(b for b in fb_bytes if b is not None) >= self.held_bytes

    def state(self, util_percent: float, held: bool, allocated: Callable[[], bool]) -> str:
        """Which counter a row of this utilisation goes to; ``allocated`` is asked only when it matters."""
        if util_percent >= self.util_below:
            return BUSY
        if held:
            return IDLE_STATES[0]
        return IDLE_STATES[1] if allocated() else IDLE_STATES[2]


class IdleReader(Reader):
    """Every tick: each GPU's utilisation rows into busy and idle seconds in :attr:`store` (see the module)."""

    name = "idle"
    every_s = 0.0
    reads_dcgm = False

    def __init__(self, sampler: Sampler, entities: list[_Entity], allocated: Allocated, counts: IdleCounts) -> None:
        super().__init__(sampler)
        self.entities = entities
        self.allocated = allocated
        self.counts = counts
        interval_s = max(sampler.interval_s, sampler.plan.update_freq_us / 1e6)
        self.max_gap_us = round(MAX_GAP_INTERVALS * interval_s * 1e6)
        max_series = max(1, len(entities)) * (1 + len(IDLE_STATES))
        self.store = SeriesStore(max_series, STORE_ROWS, ttl_s=max(MIN_TTL_S, 10 * sampler.interval_s),
                                 max_bytes=SeriesStore.bytes_for(max_series, STORE_ROWS) + max_series * _LABEL_BYTES)
        self._since: dict[int, int] = {}   # id(ring) -> the ts its next read starts at
        self._rings = {id(e.ring): e.ring for e in entities}
        self._processes: ProcessReader | None = None
        self._last_ts = 0

    @classmethod
    def factory(cls, allocated: Allocated, util_below: float, held_fb_mib: float) -> Callable[[Sampler], Reader | None]:
        """Makes a sampler's idle reader, or None (one warning) when its rings have neither utilisation field."""
        counts = IdleCounts(util_below, held_fb_mib)

        def make(sampler: Sampler) -> Reader | None:
            entities = _entities(sampler)
            if not entities:
                log.warning("--processes: the counters sample neither DCGM_FI_DEV_GPU_UTIL (%d) nor "
                            "DCGM_FI_PROF_GR_ENGINE_ACTIVE (%d): no DCGM_EXP_GPU_IDLE_SECONDS_TOTAL or "
                            "DCGM_EXP_GPU_BUSY_SECONDS_TOTAL", GPU_UTIL, GR_ENGINE_ACTIVE)
                return None
            return cls(sampler, entities, allocated, counts)
        return make

    def start(self, now: float) -> None:
        """Count from the rows after those the rings already hold (a resumed sampler's), from 0 each."""
        self._processes = next((r for r in self.sampler.readers if isinstance(r, ProcessReader)), None)
        for key, ring in self._rings.items():
            newest = ring.newest_ts
            self._since[key] = 0 if newest is None else newest + 1
        for entity in self.entities:
            if entity.ring.newest_ts is not None:
                entity.previous_us = entity.ring.newest_ts
        self._write()
        self.scheduled(now)

    def read(self, now: float) -> bool:
        held = self._held()
        answers: dict[tuple[int, int], bool] = {}

        def allocated_of(entity: _Entity) -> Callable[[], bool]:
            def ask() -> bool:
                if entity.key not in answers:
                    answers[entity.key] = bool(self.allocated(entity.gpu, entity.uuid, entity.instance_id))
                return answers[entity.key]
            return ask

        by_ring: dict[int, list[_Entity]] = {}
        for entity in self.entities:
            by_ring.setdefault(id(entity.ring), []).append(entity)
        for key, members in by_ring.items():
            rows = self._rings[key].rows_since(self._since[key])
            if not len(rows.ts):
                continue
            self._since[key] = int(rows.ts[-1]) + 1
            for entity in members:
                self._count(entity, rows.ts, rows.values[:, entity.column], rows.status[:, entity.column],
                            held.get(entity.key, False), allocated_of(entity))
        self._write()
        return True

    def _count(self, entity: _Entity, ts: np.ndarray, values: np.ndarray, status: np.ndarray, held: bool,
               allocated: Callable[[], bool]) -> None:
        seconds = entity.seconds
        for row_ts, value, code in zip(ts.tolist(), values.tolist(), status.tolist(), strict=True):
            if code == SAMPLE_ABSENT:
                continue   # a row of another entity's sampling instant
            previous, entity.previous_us = entity.previous_us, row_ts
            if code != SAMPLE_OK or previous is None or row_ts <= previous or math.isnan(value):
                continue
            gap_us = min(row_ts - previous, self.max_gap_us)
            seconds[self.counts.state(value * entity.scale, held, allocated)] += gap_us / 1e6

    def _held(self) -> dict[tuple[int, int], bool]:
        """Each entity's held state from the process reader's latest lists (a whole GPU with its instances')."""
        processes = self._processes
        latest: Mapping[tuple[int, int], tuple] = processes.latest if processes is not None else {}
        gpu_of = {(_GPU_I, i.entity_id): i.gpu_id for i in self.sampler.instances}
        fb: dict[tuple[int, int], list[int | None]] = {}
        for key, listed in latest.items():
            sizes = [p.fb_bytes for p in listed]
            fb.setdefault(key, []).extend(sizes)
            if key in gpu_of:   # an instance's processes are its GPU's too
                fb.setdefault((_GPU, gpu_of[key]), []).extend(sizes)
        return {key: self.counts.held(sizes) for key, sizes in fb.items()}

    def _write(self) -> None:
        ts = max(int(self.sampler.clock.time() * 1e6), self._last_ts + 1)
        self._last_ts = ts
        samples: dict[StoreKey, float] = {}
        for entity in self.entities:
            group, entity_id = entity.key
            seconds = entity.seconds
            samples[StoreKey(group, entity_id, BUSY_FAMILY.field_id)] = seconds[BUSY]
            for state in IDLE_STATES:
                samples[StoreKey(group, entity_id, IDLE_FAMILY.field_id, ((STATE_LABEL, state),))] = seconds[state]
        self.store.append(ts, samples)


def _entities(sampler: Sampler) -> list[_Entity]:
    """The GPUs (203, else 1001 x100) and MIG instances (1001 x100) whose utilisation the sampler's rings hold."""
    columns: dict[SeriesKey, tuple[RingBuffer, int]] = {}
    for ring in sampler.rings.values():
        for column, key in enumerate(ring.series):
            if key.field_id in (GPU_UTIL, GR_ENGINE_ACTIVE) and key.entity_group in (_GPU, _GPU_I):
                columns.setdefault(key, (ring, column))
    found: list[_Entity] = []
    for gpu in sampler.gpu_ids:
        for field_id, scale in ((GPU_UTIL, 1.0), (GR_ENGINE_ACTIVE, 100.0)):
            where = columns.get(SeriesKey(_GPU, gpu, field_id))
            if where is not None:
                found.append(_Entity((_GPU, gpu), gpu, None, _uuid(sampler, gpu), where[0], where[1], scale))
                break
    for instance in sampler.instances:
        where = columns.get(SeriesKey(_GPU_I, instance.entity_id, GR_ENGINE_ACTIVE))
        if where is not None:
            found.append(_Entity((_GPU_I, instance.entity_id), instance.gpu_id, instance.instance_id, instance.uuid,
                                 where[0], where[1], 100.0))
    return found


def _uuid(sampler: Sampler, gpu: int) -> str:
    """The GPU's UUID, as the pod mapping keys GPUs by it; "" when DCGM does not say."""
    try:
        return str(sampler.handle.gpu_attributes(gpu).uuid)
    except (DcgmError, AttributeError):
        return ""
