"""The series of attached stores (series that come and go) in the families of the counters' field rows.

A store key (entity, field, extra labels such as ``pid``) is served under
the counters row of its field: that row's metric name, HELP and TYPE, the
labels /metrics gives its entity (one copy per HPC job or pod, as the
entity's fixed series), then the key's own labels, sorted in with the
copy's attributes.  Its families are the row's: the last value within the
lookback and the window aggregates (``_min``, ``_max``, ``_avg``) the row
asks for.  In a family, the store series come after the fixed ring series,
store by store, in key order.  A series whose last sample is older than its
store's TTL is left out even before a row expires it.

A key is not served when its entity is not one this exposition labels, when
its field has no numeric field row in the counters, or when one of its
labels is not a Prometheus label name or is a label its entity already has
(a second ``gpu`` label would make the series ambiguous).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from dcgm_collector.catalog.counters import Counter
from dcgm_collector.expose.families import Family, FieldFamilySpec
from dcgm_collector.expose.labels import EntityKey, EntityLabels
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.rings.series_store import SeriesStore, StoreKey
from dcgm_collector.series.samples import Labels, SeriesInfo, StoreSeries

__all__ = ["StoreFieldFamily", "StoreNames", "store_series", "with_store_series"]

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*", re.ASCII)


class StoreNames:
    """How one exposition labels store series: the labels of their entity, then their own.

    Label text is rendered once per (family, key) and kept; the cache is
    emptied when it reaches ``bound`` entries, so series that come and go
    never grow it.
    """

    def __init__(self, entities: Mapping[EntityKey, EntityLabels], bound: int) -> None:
        self._entities = entities
        self._bound = bound
        self._prefixes: dict[tuple[str, StoreKey], tuple[str, ...]] = {}

    def entity_labels(self, key: StoreKey) -> EntityLabels | None:
        """The labels of the key's entity, or None when the key is not served."""
        entity = self._entities.get((key.entity_group, key.entity_id))
        if entity is None:
            return None
        taken = {name for name, _ in entity.identity} | {name for name, _ in entity.labels}
        for name, _ in key.labels:
            if name in taken or name.startswith("__") or not _LABEL_NAME.fullmatch(name):
                return None
        return entity

    def pairs(self, key: StoreKey) -> tuple[Labels, ...]:
        """The labels of each copy of the key's series, as /metrics writes them (() when not served)."""
        entity = self.entity_labels(key)
        return () if entity is None else entity.pairs(attributes=dict(key.labels))

    def prefixes(self, name: str, key: StoreKey) -> tuple[str, ...]:
        """``name{labels} `` of each copy of the key's series (() when not served)."""
        found = self._prefixes.get((name, key))
        if found is None:
            if len(self._prefixes) >= self._bound:
                self._prefixes.clear()
            entity = self.entity_labels(key)
            texts = () if entity is None else entity.render(attributes=dict(key.labels))
            found = self._prefixes[(name, key)] = tuple(f"{name}{{{text}}} " for text in texts)
        return found


def names_bound(stores: Sequence[SeriesStore]) -> int:
    """Label texts worth keeping: every key a store can remember, in each of a row's four families."""
    return 64 + 8 * sum(store.max_assignments for store in stores)


class StoreFieldFamily(Family):
    """One family of a numeric field row (its last value or one window aggregate): its fixed series, then the
    stores' series of its field."""

    def __init__(self, spec: FieldFamilySpec, field_id: int, fixed: Family | None, stores: tuple[SeriesStore, ...],
                 names: StoreNames) -> None:
        self.name, self.header, self.aggregate = spec.name, spec.header, spec.aggregate
        self.field_id, self.fixed, self.stores, self.names = field_id, fixed, stores, names
        self.fmt = spec.fmt + "\n"

    def lines(self, scrape: Scrape) -> list[str]:
        lines = list(self.fixed.lines(scrape)) if self.fixed is not None else []
        fmt = self.fmt
        for store in self.stores:
            view = scrape.store_view(store)
            window = view.last if self.aggregate is None else view.aggregates()
            found = window.by_field.get(self.field_id)
            if not found:
                continue
            if self.aggregate is None:
                values, shown = window.last, window.ok
            else:
                values, shown = window.values[self.aggregate], window.count
            for i in found:
                if shown[i]:
                    value = fmt % values[i]
                    lines.extend(prefix + value for prefix in self.names.prefixes(self.name, window.keys[i]))
        return lines


def with_store_series(families: list[Family], counter: Counter, specs: Sequence[FieldFamilySpec],
                      stores: tuple[SeriesStore, ...], names: StoreNames) -> list[Family]:
    """A numeric field row's families with the stores' series of its field after the fixed ones.

    ``families`` are the row's fixed families (none when its field is not
    sampled in a ring); without stores they are returned as they are.
    """
    if not stores:
        return families
    assert counter.field is not None
    by_name = {family.name: family for family in families}
    return [StoreFieldFamily(spec, counter.field.id, by_name.get(spec.name), stores, names) for spec in specs]


def store_series(stores: Sequence[SeriesStore], rows: Sequence[Counter], names: StoreNames,
                 gpu_of: Mapping[EntityKey, int]) -> tuple[StoreSeries, ...]:
    """The sample model's view of each store: its keys named as /metrics serves them.

    ``rows`` are the numeric field rows of the counters; the first row of a
    field names its store series.
    """
    by_field: dict[int, Counter] = {}
    for counter in rows:
        assert counter.field is not None
        by_field.setdefault(counter.field.id, counter)

    def describe(key: StoreKey) -> tuple[SeriesInfo, ...]:
        counter = by_field.get(key.field_id)
        if counter is None:
            return ()
        field = counter.field
        assert field is not None
        entity = (key.entity_group, key.entity_id)
        return tuple(SeriesInfo(counter.name, labels, entity, gpu_of.get(entity), field.id, field.name,
                                field.type == "i", 0) for labels in names.pairs(key))

    fields = tuple((c.name, c.field.id, c.field.name) for c in by_field.values() if c.field is not None)
    return tuple(StoreSeries(store, describe, fields) for store in stores)
