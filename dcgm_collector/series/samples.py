"""The sample model: every series /metrics serves from the rings, with its name and labels.

A scrape sees the last value of each series; the rings hold every sample DCGM
took.  The outputs that want every sample (remote write, the flight recorder,
the history API) read them through this model, so that a sample leaves the
collector under the metric name and the labels /metrics gives its series,
whichever way it goes out.

A :class:`SampleModel` is one target's view, rebuilt with its exposition's
families (a reload, new label values, new pod attribution); it holds no
samples itself, only where they are: each ring with the series of its columns
(:class:`RingSeries`), the stores of series that come and go
(:class:`StoreSeries`, whose series each read names), and the event families
(XID) that are kept in the event ring with their own timestamps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from dcgm_collector.model import EntityType, GpuInfo, LevelEntity, MigInstance
from dcgm_collector.rings.ring import EventRing, EventRows, RingBuffer, RingRows
from dcgm_collector.rings.series_store import SeriesStore, StoreKey, StoreRows

__all__ = ["EntityKey", "EventSeries", "Labels", "RingSeries", "SampleModel", "SeriesInfo", "StoreRead",
           "StoreSeries", "entity_gpus", "gpu_of_entity"]

EntityKey = tuple[int, int]     # (DCGM entity group, entity id): how families and the model key an entity
Labels = tuple[tuple[str, str], ...]   # (name, value) pairs in the order /metrics writes them


@dataclass(frozen=True)
class SeriesInfo:
    """One series of /metrics: a column of a ring, under a metric name and its labels.

    An entity with several copies of its series (HPC jobs sharing a GPU) has
    one SeriesInfo per copy, all on the same column.
    """

    name: str            # the metric name, as the counters file writes it
    labels: Labels
    entity: EntityKey    # (DCGM entity group, entity id)
    gpu: int | None      # the GPU the entity is or belongs to (None: a switch, a CPU, a core)
    field_id: int
    field_name: str      # DCGM's name of the field (DCGM_FI_DEV_GPU_TEMP)
    integer: bool        # DCGM stores the field as an integer
    column: int          # the ring column holding its samples


@dataclass(frozen=True)
class RingSeries:
    """A ring and the /metrics series of its columns (not every column need be served)."""

    ring: RingBuffer
    series: tuple[SeriesInfo, ...]

    def rows_since(self, since_us: int, max_rows: int | None = None, end_row: int | None = None) -> RingRows:
        """The ring's rows with ts >= since_us, oldest first (a consistent copy); at most ``max_rows`` of them,
        none numbered ``end_row`` or later."""
        return self.ring.rows_since(since_us, max_rows, end_row)


class StoreRead(NamedTuple):
    """Rows copied out of a store, and the /metrics series of their samples.

    A SeriesInfo's ``column`` is the series number its samples carry in
    ``rows.series``; a series served several times (HPC jobs) has one
    SeriesInfo per copy, all with that number.
    """

    rows: StoreRows
    series: tuple[SeriesInfo, ...]


@dataclass(frozen=True, eq=False)
class StoreSeries:
    """A store of series that come and go, and what /metrics calls each of them.

    Its series are not known when the model is built: each :meth:`read`
    names the series of the rows it copied.  ``describe(key)`` gives the
    /metrics series of one store key (one per copy, ``column`` left at 0),
    or () when the key is not served; ``fields`` names every counters row
    (metric name, field id, DCGM field name) a store series may be served under.
    """

    store: SeriesStore
    describe: Callable[[StoreKey], tuple[SeriesInfo, ...]]
    fields: tuple[tuple[str, int, str], ...] = ()
    # describe's answers; cleared when it outgrows what the store can hold, so churn never grows it
    _described: dict[StoreKey, tuple[SeriesInfo, ...]] = field(default_factory=dict, repr=False)

    def read(self, since_us: int, max_rows: int | None = None, end_row: int | None = None) -> StoreRead:
        """The store's rows with ts >= since_us, oldest first, and the served series of their columns."""
        return self._named(self.store.rows_since(since_us, max_rows, end_row))

    def read_from(self, row: int, max_rows: int | None = None) -> tuple[StoreRead, int]:
        """The store's rows numbered from ``row`` on, with their series, and the number of the first row."""
        rows, first = self.store.rows_from(row, max_rows)
        return self._named(rows), first

    def _named(self, rows: StoreRows) -> StoreRead:
        return StoreRead(rows, tuple(replace(info, column=j) for j, key in enumerate(rows.keys)
                                     for info in self.series_of(key)))

    def series_of(self, key: StoreKey) -> tuple[SeriesInfo, ...]:
        """The /metrics series of one key of the store (() when it is not served)."""
        found = self._described.get(key)
        if found is None:
            if len(self._described) >= 2 * self.store.max_assignments:
                self._described.clear()
            found = self._described[key] = self.describe(key)
        return found


@dataclass(frozen=True)
class EventSeries:
    """An event field (XID) of the counters: its samples are the event ring's entries of that field.

    ``labels(entity, value)`` gives the labels of each copy of the entity's
    series for an event of that value (an XID's ``err_code`` and ``err_msg``
    depend on it), or () when the entity is not served.
    """

    name: str
    field_id: int
    field_name: str
    labels: Callable[[EntityKey, int], tuple[Labels, ...]]


@dataclass(frozen=True)
class SampleModel:
    """Where one target's samples are, and what /metrics calls them."""

    target: str                          # the target's name (its hostname label, or the node's name)
    gpus: tuple[GpuInfo, ...]
    rings: tuple[RingSeries, ...]
    events: EventRing
    event_series: tuple[EventSeries, ...]
    gpu_of: Mapping[EntityKey, int] = field(default_factory=dict)   # the GPU an entity is or belongs to
    stores: tuple[StoreSeries, ...] = ()                            # series that come and go, store by store

    def gpu(self, entity: EntityKey) -> int | None:
        """The GPU an entity is or belongs to (a MIG instance's, a link's); None for a switch, a CPU, a core."""
        return gpu_of_entity(self.gpu_of, entity)

    def series(self) -> tuple[SeriesInfo, ...]:
        """Every ring series, ring by ring."""
        return tuple(s for ring in self.rings for s in ring.series)

    def events_since(self, since_us: int, end_row: int | None = None) -> EventRows:
        """The event ring's entries with ts >= since_us, oldest first (none numbered ``end_row`` or later)."""
        return self.events.since(since_us, end_row)


def entity_gpus(gpu_ids: Iterable[int], instances: Iterable[MigInstance],
                levels: Iterable[LevelEntity]) -> dict[EntityKey, int]:
    """The GPU each sampled entity is or belongs to: a GPU itself, a MIG instance's, a GPU link's."""
    gpu_of: dict[EntityKey, int] = {(int(EntityType.GPU), gpu): gpu for gpu in gpu_ids}
    gpu_of.update({(int(EntityType.GPU_I), i.entity_id): i.gpu_id for i in instances})
    gpu_of.update({e.key: e.parent for e in levels if e.parent_level == EntityType.GPU})
    return gpu_of


def gpu_of_entity(gpu_of: Mapping[EntityKey, int], entity: EntityKey) -> int | None:
    """The GPU an entity is or belongs to, from :func:`entity_gpus`; None for a switch, a CPU, a core."""
    if entity[0] == EntityType.GPU:
        return entity[1]
    return gpu_of.get(entity)
