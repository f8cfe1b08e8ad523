"""DCGM_EXP_XID_ERRORS_COUNT: how many of each XID every entity had over the -x window."""

from __future__ import annotations

from collections.abc import Sequence

from dcgm_collector.catalog.fields import XID_FIELD
from dcgm_collector.expose.families import Family
from dcgm_collector.expose.labels import EntityKey, EntityLabels
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.series.text import Header

__all__ = ["XID_COUNT", "XidCountFamily"]

XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"


class XidCountFamily(Family):
    """DCGM_EXP_XID_ERRORS_COUNT: XIDs per entity and number over the -x window."""

    def __init__(self, name: str, header: Header, window_ms: int, entities: Sequence[EntityLabels]) -> None:
        self.name, self.header, self.window_us = name, header, window_ms * 1000
        window = str(window_ms)
        self.entities = list(entities)
        self.empty = {e.entity: [f"{name}{{{text}}} 0\n" for text in e.render({'window_size_in_ms': window})]
                      for e in entities}
        self._window = window
        self._prefixes = {}

    def prefix(self, entity: EntityLabels, xid: int) -> tuple[str, ...]:
        return self._cached_prefixes((entity.entity, xid), entity,
                                     {"window_size_in_ms": self._window, "xid": str(xid)})

    def lines(self, scrape: Scrape) -> list[str]:
        events = scrape.events()
        now = scrape.now_us
        counts: dict[EntityKey, dict[int, int]] = {}
        if len(events.ts):
            mask = (events.field_id == XID_FIELD) & (events.ts >= now - self.window_us) & (events.ts <= now)
            for group, entity_id, xid in zip(events.entity_group[mask].tolist(), events.entity_id[mask].tolist(),
                                             events.value[mask].tolist()):
                per_entity = counts.setdefault((group, entity_id), {})
                per_entity[xid] = per_entity.get(xid, 0) + 1
        out = []
        for entity in self.entities:
            per_entity = counts.get(entity.entity)
            if not per_entity:
                out.extend(self.empty[entity.entity])
                continue
            out.extend(f"{prefix}{n}\n" for xid, n in sorted(per_entity.items())
                       for prefix in self.prefix(entity, xid))
        return out
