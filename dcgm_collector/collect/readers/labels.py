"""The labels reader: UUIDs, names, driver version and the other label rows, into ``Sampler.labels``.

Read at start, then every LABEL_REFRESH_S (counted in ticks): they change only
when the topology does.  A value that comes back blank keeps the last good one
(a lost GPU still has its UUID).
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import TYPE_CHECKING

from dcgm_collector.catalog.counters import CounterSet
from dcgm_collector.collect.readers.reader import Reader
from dcgm_collector.dcgm import DcgmError

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["LABEL_REFRESH_S", "LabelsReader", "label_names"]

# Labels (UUID, names, driver version) hardly ever change; reading them every
# tick would only make Python objects for nothing.
LABEL_REFRESH_S = 10.0


def label_names(counters: CounterSet) -> dict[int, tuple[str, ...]]:
    """Field id -> the names of the label rows that read it."""
    names: dict[int, list[str]] = {}
    for counter in counters.label_counters():
        names.setdefault(counter.field.id, []).append(counter.name)
    for counter in counters.field_counters():
        if counter.field.type in ("s", "b") and not counter.field.is_event:
            names.setdefault(counter.field.id, []).append(counter.name)
    return {field_id: tuple(dict.fromkeys(n)) for field_id, n in names.items()}


class LabelsReader(Reader):
    """The latest values of the sampler's label field groups (GPUs' and other levels'), every LABEL_REFRESH_S."""

    name = "labels"

    def __init__(self, sampler: Sampler) -> None:
        super().__init__(sampler)
        self.every_ticks = max(1, math.ceil(LABEL_REFRESH_S / sampler.interval_s))
        self.names = label_names(sampler.counters)

    @classmethod
    def for_sampler(cls, sampler: Sampler) -> LabelsReader | None:
        """The reader, when the sampler watches label fields."""
        return cls(sampler) if sampler._label_groups or sampler._level_label_groups else None

    def read(self, now: float) -> bool:
        sampler = self.sampler
        assert sampler.group is not None
        try:
            values = sampler.handle.latest_values(sampler.group, sampler._label_groups) if sampler._label_groups else []
            for group, fg in sampler._level_label_groups:
                values += sampler.handle.latest_values(group, [fg])
        except DcgmError as error:
            self.count(error.code)
            return False
        labels = {key: dict(names) for key, names in sampler.labels.items()}
        for v in values:
            if v.value is None or isinstance(v.value, bytes):
                continue  # keep the last good value: a lost GPU still has its UUID
            entity = labels.setdefault((v.entity_group, v.entity_id), {})
            for name in self.names.get(v.field_id, ()):
                entity[name] = str(v.value)
        sampler.labels = MappingProxyType({key: MappingProxyType(names) for key, names in labels.items()})
        return True
