"""The field-costs reader: what dcgm-collector's engine spent on each field, into ``SamplerStats.field_costs``.

Read once every FIELD_COSTS_EVERY_S, from the first tick on (enough for a 15 s
scrape), under the name each field has in the counters (else DCGM's).  A
hostengine connection and NVIDIA's libdcgm give none, and the stats stay empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcgm_collector.catalog.fields import field_table
from dcgm_collector.collect.readers.reader import Reader

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["FIELD_COSTS_EVERY_S", "FieldCostsReader"]

FIELD_COSTS_EVERY_S = 1.0


class FieldCostsReader(Reader):
    """The engine's per-field statistics, once a second."""

    name = "field-costs"
    every_s = FIELD_COSTS_EVERY_S

    def __init__(self, sampler: Sampler) -> None:
        super().__init__(sampler)
        # the names the costs are served under (the counters' first)
        self.names: dict[int, str] = {c.field.id: c.name for c in sampler.counters.field_counters()
                                      if c.field is not None}

    @classmethod
    def for_sampler(cls, sampler: Sampler) -> FieldCostsReader:
        return cls(sampler)

    def start(self, now: float) -> None:
        """Nothing at start: the first tick reads (next_at is still 0)."""

    def read(self, now: float) -> bool:
        costs = self.sampler.handle.field_costs()
        if costs:
            self.sampler.stats.field_costs = tuple((self._name(c.field_id), c) for c in costs)
        return True

    def _name(self, field_id: int) -> str:
        """The name a field has in the counters, else DCGM's; worked out once per field, not once a second."""
        name = self.names.get(field_id)
        if name is None:
            field = field_table().by_id(field_id)
            name = self.names[field_id] = field.name if field is not None else f"field_{field_id}"
        return name
