"""The /metrics text: the sampler's rings rendered as dcgm-exporter 4.8 writes them.

A scrape never calls DCGM.  It reads the rings (one window read per ring),
the event ring, and what the sampler thread refreshed (labels, health),
through the sampler's read-only view (dcgm_collector.series.view), never the
sampler itself.

Compatibility with dcgm-exporter 4.8 (reference §2.2-2.6):

* Metric names are the counters file's first column as written; families
  come in counters-file order, the series of a family in GPU order.
* GPU labels, in this order: ``gpu, UUID, pci_bus_id, device, modelName,
  hostname`` (hostname left out with -n), then the values of the file's
  ``label`` rows keyed by the row's name together with the DCGM_EXP_*
  counters' own labels, sorted by key, then ``err_code, err_msg`` on
  DCGM_FI_DEV_XID_ERRORS.  Global (node-wide) fields are served on every GPU.
* NvLink, NvSwitch, CPU and CPU-core fields are served on those entities,
  labelled by their level's labeller (expose.labels), in the order
  collect.levels enumerates them; node-wide label rows are on them too.
* Integer fields print as ``%d``, doubles as ``%f``; blank and
  not-supported values are left out, and so is a family with no series.
* The family of a field row carries the last value (within the trailing
  ``max(window, stale_after)``, so a GPU that stopped reporting drops out).

Differences, on purpose:

* Label values and HELP are escaped as the text format requires; HELP and
  TYPE come once per family.
* Rows typed histogram or summary are typed ``untyped`` (``unknown`` in
  OpenMetrics): one plain sample is neither.  DCGM_EXP_* rows whose type is
  not gauge or counter are gauges (their values are windowed counts).
* OpenMetrics: a counter family whose name ends in ``_total`` is declared
  without that suffix, as the format wants; any other counter is declared
  ``unknown`` so its series keeps the name it has in the text format
  (Prometheus prefers OpenMetrics, and a renamed series would break queries).
* Extra families: ``<name>_min``, ``_max``, ``_avg`` (gauges) over the
  trailing window for rows that ask (4th column or --aggregations), and the
  collector's own ``dcgm_collector_*`` metrics.
* DCGM_EXP_P2P_STATUS covers the sampled GPUs (with -d, the selected ones),
  each against every GPU DCGM reports; dcgm-exporter serves every GPU's row.

MIG: a GPU instance the sampler samples on its own (flex mode samples a GPU
with instances through them only) has its own series, labelled with the labels
of the GPU that holds it followed by ``GPU_I_PROFILE`` and ``GPU_I_ID`` (before
``hostname``); series come in GPU order, a GPU's instances in its place.  A field DCGM
does not answer for an instance (``DCGM_FI_DEV_GPU_UTIL``) has no series there.

Several targets (one collector, several hostengines): :class:`MultiExposition`
writes each family's HELP and TYPE once, then the series of every target, in
target order and GPU order within a target (each target's series carry its
own ``hostname``).  The collector's per-target metrics (up, sample age,
samples, ticks, errors, reconnects) are then labelled ``hostname`` with the
target's name; with a single target they stay unlabelled, as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from dcgm_collector.attribution.copies import NO_COPIES
from dcgm_collector.catalog.counters import Counter
from dcgm_collector.catalog.fields import CLOCK_EVENT_REASONS, watch_level
from dcgm_collector.expose.clock_events import CLOCK_EVENTS_COUNT, ClockEventCounter, ClockEventsFamily
from dcgm_collector.expose.families import EventFamily, Family, FieldFamily, field_family_specs
from dcgm_collector.expose.health_status import HEALTH_STATUS, HealthFamily
from dcgm_collector.expose.labels import LABELLERS, EntityKey, EntityLabels, LevelLabeller
from dcgm_collector.expose.options import MIN_STALE_AFTER_S, STALE_AFTER_INTERVALS, ExpositionOptions
from dcgm_collector.expose.p2p_status import P2P_STATUS, P2PStatusFamily
from dcgm_collector.expose.processes import process_family, store_size_families
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.expose.self_metrics import SelfLines, SelfRow, render_self_metrics
from dcgm_collector.expose.store_families import (
    StoreFieldFamily,
    StoreNames,
    names_bound,
    store_series,
    with_store_series,
)
from dcgm_collector.expose.xid_count import XID_COUNT, XidCountFamily
from dcgm_collector.model import EntityType, GpuInfo, MigInstance
from dcgm_collector.rings.ring import EventRows, RingBuffer
from dcgm_collector.rings.series_store import SeriesStore
from dcgm_collector.series.processes import ProcessFamily
from dcgm_collector.series.registry import TargetSeries, render_body
from dcgm_collector.series.samples import EventSeries, RingSeries, SampleModel, SeriesInfo, entity_gpus
from dcgm_collector.series.stats import newest_sample_time
from dcgm_collector.series.text import Header, family_types, label_text
from dcgm_collector.series.view import TargetView

__all__ = ["Exposition", "ExpositionOptions"]


class Exposition:
    """Renders a started sampler's state, read through its view, as the Prometheus text format (or OpenMetrics).

    Safe to call from several server threads at once.  Built once per
    sampler (a reload makes a new one); label text is rebuilt only when the
    values of the label rows change.
    """

    def __init__(self, view: TargetView, gpus: Sequence[GpuInfo], options: ExpositionOptions | None = None,
                 *, version: str, library_version: str = "unknown") -> None:
        if not isinstance(view, TargetView):
            raise TypeError(f"view must be a TargetView (dcgm_collector.collect.view.target_view), "
                            f"not {type(view).__name__}")
        self.view = view
        self.options = options = options if options is not None else ExpositionOptions()
        self.version = version
        self.library_version = library_version
        by_id = {g.gpu_id: g for g in gpus}

        def info(gpu: int) -> GpuInfo:
            return by_id.get(gpu) or GpuInfo(gpu, "", "", "", "", "", "", "Unknown")

        self.gpus = tuple(info(i) for i in view.gpu_ids)
        self.instances: tuple[MigInstance, ...] = tuple(view.instances)
        # the entities whose series this exposition serves, in series order, with the GPU
        # each is or belongs to and the instance it is (None for a whole GPU)
        owners = ([((int(EntityType.GPU), g.gpu_id), g, None) for g in self.gpus]
                  + [((int(EntityType.GPU_I), i.entity_id), info(i.gpu_id), i) for i in self.instances])
        # GPU order, as dcgm-exporter lists them: a MIG GPU's instances where the GPU would be
        if self.instances:
            owners.sort(key=lambda owner: owner[1].gpu_id)
        self._owners: tuple[tuple[EntityKey, GpuInfo, MigInstance | None], ...] = tuple(owners)
        self.entities: tuple[EntityKey, ...] = tuple(owner[0] for owner in self._owners)
        # the NvLinks, NvSwitches, CPUs and cores sampled, in series order; they carry the node-wide
        # label rows (DCGM_FI_DRIVER_VERSION, ...) as dcgm-exporter's collectors of those levels do
        self.levels = view.levels
        self._node_label_names = frozenset(c.name for c in view.counters.label_counters()
                                           if watch_level(c.field) == "NONE")
        self._gpu_by_id = by_id
        self.window_us = round(options.window_s * 1e6)
        stale = options.stale_after_s
        if stale is None:
            stale = max(MIN_STALE_AFTER_S, STALE_AFTER_INTERVALS * view.interval_s)
        self.stale_after_s = float(stale)
        self.lookback_us = max(self.window_us, round(self.stale_after_s * 1e6))
        self._columns = self._index_columns()
        self._level_columns = self._index_level_columns()
        self._clock = self._clock_counter()
        self._lock = threading.Lock()
        self._labels_seen: object = None
        self._attribution_seen: object = None
        self._label_values: dict[tuple[int, int], dict[str, str]] | None = None
        self._families: tuple[Family, ...] = ()
        self._family_labels: tuple[list[EntityLabels], dict[EntityKey, EntityLabels]] = ([], {})
        self._sample_model: tuple[tuple[Family, ...], SampleModel] | None = None
        self._events_cache: tuple[int, EventRows] | None = None
        self._last_scrape_s: float | None = None
        self._self_lines = SelfLines()
        self._build_info = label_text([("version", version), ("dcgm_library", library_version)])
        self._stores: tuple[SeriesStore, ...] = ()   # attached stores of series that come and go
        self._store_families: tuple[tuple[SeriesStore, ProcessFamily], ...] = ()   # the stores' own families
        self._sized_stores: tuple[SeriesStore, ...] = ()   # the stores whose memory figures are served
        self._refresh_families()

    # -- public
    def render(self, openmetrics: bool = False, now_us: int | None = None) -> bytes:
        """The whole /metrics body; ``now_us`` (µs since the epoch) defaults to now."""
        return render_body(self, openmetrics, now_us)

    def write_families(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None = None) -> None:
        """The body without OpenMetrics' ``# EOF``: the families, then the self-metrics (series.registry.Families)."""
        now_us = time.time_ns() // 1000 if now_us is None else int(now_us)
        self._refresh_families()
        scrape = self.scrape(now_us)
        for family in self._families:
            lines = family.lines(scrape)
            if lines:
                parts.append(family.header.get(openmetrics))
                parts.extend(lines)
        self._self_metrics(parts, openmetrics, now_us / 1e6)

    def scrape(self, now_us: int) -> Scrape:
        """What one render at ``now_us`` reads of this exposition's rings and events."""
        return Scrape(now_us, self.window_us, self.lookback_us, self._event_rows)

    @property
    def window_families(self) -> int:
        """How many _min/_max/_avg families the counters asked for (served once they have samples)."""
        return sum(1 for family in self._families
                   if isinstance(family, (FieldFamily, StoreFieldFamily)) and family.aggregate)

    def attach_store(self, store: SeriesStore, families: Sequence[ProcessFamily] = (), sized: bool = True) -> None:
        """Serve a store's series beside the rings' (see expose.store_families) on /metrics and in the sample model.

        ``families`` are families of the store's own (the per-process ones,
        expose.processes), served after the counters' families, and with
        ``sized`` the figures of the store's memory (a store of fixed size,
        as the idle counters', has none worth serving).  The store
        stays this exposition's (one sampler's): a reload's new exposition has
        none until one is attached to it.
        """
        if not isinstance(store, SeriesStore):
            raise TypeError(f"store must be a SeriesStore, not {type(store).__name__}")
        with self._lock:
            if any(s is store for s in self._stores):
                return
            self._stores = (*self._stores, store)
            self._store_families = (*self._store_families, *((store, spec) for spec in families))
            if sized and families:
                self._sized_stores = (*self._sized_stores, store)
            self._labels_seen = self._label_values = None   # rebuild the families (and so the sample model)
        self._refresh_families()

    @property
    def stores(self) -> tuple[SeriesStore, ...]:
        return self._stores

    @property
    def rings_written(self) -> tuple[int, ...]:
        """Rows committed to each ring and events to the event ring: what a cached /metrics text must match
        too (the sampler publishes its tick count only between its runs of ticks in C)."""
        view = self.view
        return (*(ring.rows_written for ring in view.rings), view.events.rows_written)

    @property
    def stores_written(self) -> tuple[int, ...]:
        """Rows written to each attached store: what a cached /metrics text must match."""
        return tuple(store.rows_written for store in self._stores)

    def health(self, now_s: float | None = None) -> tuple[bool, str]:
        """(ok, reason): ok only while DCGM answers and the newest sample is fresh; a healthy
        target that lost GPUs says which ("OK; lost GPU 1 (its series stop)")."""
        return self._state(time.time() if now_s is None else now_s)

    def observe_scrape(self, seconds: float) -> None:
        """How long the previous scrape took (served as dcgm_collector_scrape_duration_seconds)."""
        self._last_scrape_s = float(seconds)

    # -- health / up
    def _state(self, now_s: float) -> tuple[bool, str]:
        view, stats = self.view, self.view.stats
        if not view.connected:
            return False, "the DCGM handle is closed"
        newest = newest_sample_time(stats, view.rings)
        if newest is None:
            return False, "no sample from DCGM yet"
        age = max(0.0, now_s - newest)
        if age > self.stale_after_s:
            return False, f"no sample for {age:.1f} s (stale after {self.stale_after_s:g} s)"
        if stats.last_tick_failure is not None:
            return False, f"the last sampler tick failed ({stats.tick_failures} so far): {stats.last_tick_failure}"
        if not stats.last_tick_ok:
            names = stats.error_names
            errors = ", ".join(f"{names.get(code, code)} x{n}" for code, n in sorted(stats.errors_by_code.items()))
            return False, f"the last read from DCGM failed (errors so far: {errors or 'none counted'})"
        notes = []
        if stats.lost_gpus:
            # still healthy (the other GPUs are fresh), but say which stopped
            notes.append(f"lost GPU {', '.join(str(gpu) for gpu in stats.lost_gpus)} (its series stop)")
        if stats.reader_failures:
            # a side read (processes, labels) that raised: the samples still flow, but say so
            notes.append("sampler readers failed: " + ", ".join(
                f"{name} x{count}" for name, count in sorted(stats.reader_failures.items())))
        return True, "; ".join(["OK", *notes])

    # -- set-up
    def _index_columns(self) -> dict[int, tuple[RingBuffer, list[int]]]:
        """Field id -> (ring, column of each entity in entity order), for fields every entity has in one ring."""
        where: dict[tuple[EntityKey, int], tuple[RingBuffer, int]] = {}
        for ring in self.view.rings:
            for column, key in enumerate(ring.series):
                where[((key.entity_group, key.entity_id), key.field_id)] = (ring, column)
        columns: dict[int, tuple[RingBuffer, list[int]]] = {}
        for field_id in {key[1] for key in where}:
            cells = [where.get((entity, field_id)) for entity in self.entities]
            rings = {id(c[0]) for c in cells if c is not None}
            if len(rings) == 1 and all(c is not None for c in cells):
                columns[field_id] = (cells[0][0], [c[1] for c in cells])  # type: ignore[index]
        return columns

    def _index_level_columns(self) -> dict[int, tuple[RingBuffer, list[int], list[EntityKey]]]:
        """Field id -> (ring, columns, entity of each column) for the fields of links, switches, CPUs and cores."""
        wanted = {e.key for e in self.levels}
        columns: dict[int, tuple[RingBuffer, list[int], list[EntityKey]]] = {}
        for ring in self.view.rings:
            for column, key in enumerate(ring.series):
                entity = (key.entity_group, key.entity_id)
                if entity in wanted:
                    found = columns.setdefault(key.field_id, (ring, [], []))
                    if found[0] is ring:
                        found[1].append(column)
                        found[2].append(entity)
        return columns

    def _level_labels(self, values: dict[tuple[int, int], dict[str, str]]) -> dict[EntityKey, EntityLabels]:
        """Label text of every link, switch, CPU and core sampled."""
        gpus = self._gpu_by_id    # a link's GPU may be sampled whole or through its MIG instances
        node_labels: dict[str, str] = {}
        for entity in self.entities:   # node-wide label rows are read through the GPUs: any one has them
            node_labels = {k: v for k, v in values.get(entity, {}).items() if k in self._node_label_names}
            if node_labels:
                break
        labels = {}
        for entity in self.levels:
            labeller: LevelLabeller = LABELLERS[entity.level]   # type: ignore[assignment]
            gpu = gpus.get(entity.parent) if entity.parent_level == EntityType.GPU else None
            own = values.get(entity.key, {})   # the level's own label rows (a CPU's model, ...)
            labels[entity.key] = EntityLabels.of(entity.key, labeller.identity(entity, gpu, self.options),
                                                 {**node_labels, **own})
        return labels

    def _clock_counter(self) -> ClockEventCounter | None:
        if not any(c.exporter == CLOCK_EVENTS_COUNT for c in self.view.counters):
            return None
        found = self._columns.get(CLOCK_EVENT_REASONS)
        if found is None:
            return None
        return ClockEventCounter(found[0], found[1], self.options.clock_events_count_window_ms)

    def _refresh_families(self) -> None:
        """Rebuild the families' label text when the label rows' values or the attribution changed."""
        labels = self.view.labels
        attribution = self.options.attribution
        generation = attribution.generation if attribution is not None else None
        if labels is self._labels_seen and generation == self._attribution_seen:
            return
        values = {key: dict(names) for key, names in labels.items()}
        with self._lock:
            if values != self._label_values or generation != self._attribution_seen:
                entities = [
                    EntityLabels.of(entity, LABELLERS[EntityType(entity[0])].identity(info, self.options, instance),
                                    values.get(entity, {}),
                                    NO_COPIES if attribution is None else attribution.copies(info.gpu_id, info.uuid,
                                                                                             instance))
                    for entity, info, instance in self._owners]
                level_labels = self._level_labels(values)
                self._families = self._build_families(entities, level_labels)
                # what the sample model is built from, when an output asks for it (never on a scrape)
                self._family_labels = (entities, level_labels)
                self._label_values = values
            self._labels_seen = labels
            self._attribution_seen = generation

    def _build_families(self, entities: list[EntityLabels],
                        level_labels: dict[EntityKey, EntityLabels] | None = None) -> tuple[Family, ...]:
        families: list[Family] = []
        names: set[str] = set()
        stores = self._stores
        store_names = StoreNames({**{e.entity: e for e in entities}, **(level_labels or {})},
                                 names_bound(stores))

        def add(family: Family | None) -> None:
            if family is not None and family.name not in names:
                names.add(family.name)
                families.append(family)

        for counter in self.view.counters:
            if counter.exporter is not None:
                add(self._exporter_family(counter, entities))
            elif counter.field is not None and counter.prom_type != "label" and counter.field.is_numeric:
                found = self._field_families(counter, entities, level_labels or {})
                if stores and not counter.field.is_event:
                    found = with_store_series(found, counter, field_family_specs(
                        counter, self.options.window_s, self.options.aggregations), stores, store_names)
                for family in found:
                    add(family)
        for store, spec in self._store_families:
            add(process_family(spec, store, store_names))
        for store in self._sized_stores:
            for family in store_size_families(store):
                add(family)
        return tuple(families)

    def _field_families(self, counter: Counter, entities: list[EntityLabels],
                        level_labels: dict[EntityKey, EntityLabels] | None = None) -> list[Family]:
        field = counter.field
        assert field is not None
        name = counter.name
        if field.is_event:
            return [EventFamily(name, Header.of(name, counter.help, *family_types(counter.served_type, name)),
                                field.id, entities)]
        found = self._field_columns(field.id, entities, level_labels or {})
        if found is None:
            return []  # not sampled (a refused profiling watch, an entity level not sampled)
        ring, columns, entities = found
        return [FieldFamily(spec.name, spec.header, ring, columns,
                            [tuple(f"{spec.name}{{{t}}} " for t in e.commons) for e in entities], spec.fmt,
                            spec.aggregate)
                for spec in field_family_specs(counter, self.options.window_s, self.options.aggregations)]

    def _field_columns(self, field_id: int, entities: list[EntityLabels], level_labels: dict[EntityKey, EntityLabels]
                       ) -> tuple[RingBuffer, list[int], list[EntityLabels]] | None:
        """The ring of a field, its column for each entity that has it, and those entities (None: not sampled)."""
        found = self._columns.get(field_id)
        if found is not None:
            return found[0], found[1], entities
        at_level = self._level_columns.get(field_id)
        if at_level is None:
            return None
        ring, columns, keys = at_level   # a field of links, switches, CPUs or cores: their series, not the GPUs'
        return ring, columns, [level_labels[key] for key in keys]

    def _build_sample_model(self, target: str, families: tuple[Family, ...], entities: list[EntityLabels],
                            level_labels: dict[EntityKey, EntityLabels]) -> SampleModel:
        """The series of every numeric field row, ring by ring, and the event rows, as ``families`` serve them."""
        by_ring: dict[int, list[SeriesInfo]] = {}
        events: list[EventSeries] = []
        names: set[str] = set()
        gpu_of = entity_gpus(self.view.gpu_ids, self.instances, self.levels)
        event_families = {f.name: f for f in families if isinstance(f, EventFamily)}
        store_rows: list[Counter] = []   # the rows store series are served under, sampled in a ring or not
        for counter in self.view.counters:
            field = counter.field
            if (counter.exporter is not None or field is None or counter.prom_type == "label"
                    or not field.is_numeric or counter.name in names):
                continue
            names.add(counter.name)
            if field.is_event:
                family = event_families.get(counter.name)
                if family is not None:
                    events.append(EventSeries(counter.name, field.id, field.name, family.label_pairs))
                continue
            store_rows.append(counter)
            found = self._field_columns(field.id, entities, level_labels)
            if found is None:
                continue
            ring, columns, owners = found
            series = by_ring.setdefault(id(ring), [])
            for column, owner in zip(columns, owners):
                for labels in owner.pairs():
                    series.append(SeriesInfo(counter.name, labels, owner.entity, gpu_of.get(owner.entity),
                                             field.id, field.name, field.type == "i", column))
        rings = tuple(RingSeries(ring, tuple(by_ring[id(ring)])) for ring in self.view.rings
                      if by_ring.get(id(ring)))
        names_of = StoreNames({**{e.entity: e for e in entities}, **level_labels}, names_bound(self._stores))
        stores = store_series(self._stores, store_rows, names_of, gpu_of)
        return SampleModel(target, self.gpus, rings, self.view.events, tuple(events), gpu_of, stores)

    def sample_model(self, target: str = "") -> SampleModel:
        """Where this exposition's samples are and what /metrics calls them (see series.samples).

        Built from the labels the families were last built with, and kept until they change.
        """
        self._refresh_families()
        with self._lock:   # the families and the labels they were built from are replaced together
            families, (entities, level_labels) = self._families, self._family_labels
        cached = self._sample_model
        if cached is not None and cached[0] is families and cached[1].target == target:
            return cached[1]
        model = self._build_sample_model(target, families, entities, level_labels)
        self._sample_model = (families, model)
        return model

    def target_series(self, target: str) -> TargetSeries:
        """This exposition's view and sample model, as the outputs read a target (series.registry)."""
        return TargetSeries(target, self.view, self.sample_model(target))

    def _exporter_family(self, counter: Counter, entities: list[EntityLabels]) -> Family | None:
        name = counter.name
        header = Header.of(name, counter.help, *family_types(counter.prom_type, name, exporter=True))
        if counter.exporter == XID_COUNT:
            return XidCountFamily(name, header, self.options.xid_count_window_ms, entities)
        if counter.exporter == CLOCK_EVENTS_COUNT and self._clock is not None:
            return ClockEventsFamily(name, header, self._clock, self.options.clock_events_count_window_ms, entities)
        if counter.exporter == HEALTH_STATUS:
            checked_as = {(int(EntityType.GPU_I), i.entity_id): (int(EntityType.GPU), i.gpu_id) for i in self.instances}
            return HealthFamily(name, header, self.view, entities, checked_as)
        if counter.exporter == P2P_STATUS:
            return P2PStatusFamily(name, header, self.view, entities)
        return None

    # -- per scrape
    def _event_rows(self) -> EventRows:
        """Every event the ring holds; copied again only when new ones arrived."""
        events = self.view.events
        written = events.rows_written
        cached = self._events_cache
        if cached is None or cached[0] != written:
            cached = self._events_cache = (written, events.since(0))
        return cached[1]

    def _self_metrics(self, parts: list[str], openmetrics: bool, now_s: float) -> None:
        up, _ = self._state(now_s)
        row = SelfRow("", self.view.stats, up, rings=self.view.rings)
        render_self_metrics(parts, openmetrics, now_s, [row], self._last_scrape_s,
                            self._build_info, self._self_lines)
