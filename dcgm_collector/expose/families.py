"""The families of a counters file's field rows: last value, window aggregates, events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from dcgm_collector.catalog.counters import AGGREGATIONS, Counter
from dcgm_collector.catalog.fields import XID_FIELD
from dcgm_collector.expose.labels import EntityKey, EntityLabels
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.expose.xid_messages import xid_message
from dcgm_collector.rings.ring import RingBuffer
from dcgm_collector.series.text import Header, family_types

__all__ = ["EventFamily", "Family", "FieldFamily", "FieldFamilySpec", "field_family_specs"]


class Family:
    """One metric family: a header per format and the sample lines of one scrape (none: left out)."""

    name: str
    header: Header
    _prefixes: dict[tuple, tuple[str, ...]]   # label text of a labelled series, per key (entity, label values)

    def lines(self, scrape: Scrape) -> list[str]:
        raise NotImplementedError

    def _cached_prefixes(self, key: tuple, entity: EntityLabels, extra: Mapping[str, str] | None = None,
                         attributes: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """``name{labels} `` of each copy of one entity's series, rendered once per key."""
        prefixes = self._prefixes.get(key)
        if prefixes is None:
            texts = entity.render(extra, attributes)
            prefixes = self._prefixes[key] = tuple(f"{self.name}{{{text}}} " for text in texts)
        return prefixes


class FieldFamilySpec(NamedTuple):
    """One family of a numeric field row: its name, header, value format and window aggregate (None: last value)."""

    name: str
    header: Header
    fmt: str
    aggregate: str | None


def field_family_specs(counter: Counter, window_s: float, aggregations: Sequence[str]) -> list[FieldFamilySpec]:
    """The families of a numeric field row: its last value, then each window aggregate it asks for.

    ``aggregations`` (--aggregations) adds window families to gauge rows only:
    a counter's maximum over a window is its last value.
    """
    field = counter.field
    assert field is not None
    name = counter.name
    fmt = "%d" if field.type == "i" else "%f"
    specs = [FieldFamilySpec(name, Header.of(name, counter.help, *family_types(counter.served_type, name)), fmt, None)]
    wanted = set(counter.aggregations)
    if counter.served_type != "counter":
        wanted |= set(aggregations)
    for aggregate in (a for a in AGGREGATIONS if a in wanted):
        window_name = f"{name}_{aggregate}"
        help_text = f"{counter.help} ({aggregate} over the last {window_s:g} s window)"
        specs.append(FieldFamilySpec(window_name, Header.of(window_name, help_text, "gauge", "gauge"),
                                     "%f" if aggregate == "avg" else fmt, aggregate))
    return specs


class FieldFamily(Family):
    """A numeric field row: the last value of each entity (or one window aggregate of it)."""

    def __init__(self, name: str, header: Header, ring: RingBuffer, columns: list[int],
                 prefixes: list[tuple[str, ...]], fmt: str, aggregate: str | None = None) -> None:
        self.name, self.header, self.ring = name, header, ring
        self.series = [(column, prefix) for column, copies in zip(columns, prefixes) for prefix in copies]
        self.fmt = fmt + "\n"
        self.aggregate = aggregate

    def lines(self, scrape: Scrape) -> list[str]:
        view = scrape.view(self.ring)
        fmt = self.fmt
        if self.aggregate is None:
            ok, last = view.ok, view.last
            return [prefix + fmt % last[c] for c, prefix in self.series if ok[c]]
        count, values = view.aggregates()
        chosen = values[self.aggregate]
        return [prefix + fmt % chosen[c] for c, prefix in self.series if count[c]]


class EventFamily(Family):
    """An event field row (XID): the last event of each entity, kept however old."""

    def __init__(self, name: str, header: Header, field_id: int, entities: Sequence[EntityLabels]) -> None:
        self.name, self.header, self.field_id = name, header, field_id
        self.entities: dict[EntityKey, EntityLabels] = {e.entity: e for e in entities}
        self.order = [e.entity for e in entities]
        self._prefixes = {}

    def prefix(self, entity: EntityKey, value: int) -> tuple[str, ...]:
        attributes = {"err_code": str(value), "err_msg": xid_message(value)} if self.field_id == XID_FIELD else {}
        return self._cached_prefixes((entity, value), self.entities[entity], attributes=attributes)

    def label_pairs(self, entity: EntityKey, value: int) -> tuple[tuple[tuple[str, str], ...], ...]:
        """The labels of each copy of an entity's series for an event of ``value``; () when not served."""
        labels = self.entities.get(entity)
        if labels is None:
            return ()
        attributes = {"err_code": str(value), "err_msg": xid_message(value)} if self.field_id == XID_FIELD else {}
        return labels.pairs(attributes=attributes)

    def lines(self, scrape: Scrape) -> list[str]:
        events = scrape.events()
        if len(events.ts) == 0:
            return []
        mask = (events.field_id == self.field_id) & (events.ts <= scrape.now_us)
        found: dict[EntityKey, int] = {}
        groups, ids, values = events.entity_group, events.entity_id, events.value
        for i in np.flatnonzero(mask)[::-1].tolist():  # newest first: stop once every entity has its last
            entity = (int(groups[i]), int(ids[i]))
            if entity in self.entities and entity not in found:
                found[entity] = int(values[i])
                if len(found) == len(self.entities):
                    break
        return [f"{prefix}{found[entity]}\n" for entity in self.order if entity in found
                for prefix in self.prefix(entity, found[entity])]
