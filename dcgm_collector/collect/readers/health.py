"""The health reader: DCGM's health checks, into ``Sampler.health``, when the counters ask for them.

When the counters have a DCGM_EXP_GPU_HEALTH_STATUS row, DCGM's health watches
are set on a group of their own (whole GPUs: those sampled whole and those that
hold the MIG instances; the group keeps lost GPUs, so their failure stays
visible), checked at start and then every ``Sampler.health_interval_s``
(HEALTH_CHECK_S).  A failed check is counted, but the tick stays good: samples
still flow.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from dcgm_collector.collect.readers.reader import Reader, quietly
from dcgm_collector.dcgm import DcgmError, EntityGroup
from dcgm_collector.ext._native import lib
from dcgm_collector.series.stats import HealthState

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["HEALTH_CHECK_S", "HEALTH_COUNTER", "HEALTH_HOLD_S", "HealthReader"]

log = logging.getLogger("dcgm_collector.collect.sampler")

# DCGM reports a counter's incident only while the counter moved within the minute
# before a check (an XID, from then on); incidents are kept this long so that a
# scrape some seconds later still sees them.
HEALTH_CHECK_S = 5.0
HEALTH_HOLD_S = 60.0
HEALTH_COUNTER = "DCGM_EXP_GPU_HEALTH_STATUS"


class HealthReader(Reader):
    """DCGM's health check of the sampler's whole GPUs, every ``Sampler.health_interval_s``."""

    name = "health"

    def __init__(self, sampler: Sampler) -> None:
        super().__init__(sampler)
        self.group: EntityGroup | None = None   # the health watches' group, once made

    @property
    def every_s(self) -> float:   # type: ignore[override]  # the sampler's, which a test may shorten
        return self.sampler.health_interval_s

    @classmethod
    def for_sampler(cls, sampler: Sampler) -> HealthReader | None:
        """The reader, when the counters have a DCGM_EXP_GPU_HEALTH_STATUS row."""
        wanted = any(c.exporter == HEALTH_COUNTER for c in sampler.counters.exporter_counters())
        return cls(sampler) if wanted else None

    def start(self, now: float) -> None:
        sampler = self.sampler
        # DCGM checks whole GPUs: those sampled whole and those that hold the instances
        gpus = list(dict.fromkeys([*sampler.gpu_ids, *(i.gpu_id for i in sampler.instances)]))
        try:
            self.group = sampler.handle.create_group(f"dcgm-collector-health-{id(sampler):x}", gpus)
            sampler.handle.health_set(self.group, lib.DCGM_HEALTH_WATCH_ALL)
        except DcgmError as error:
            self.count(error.code)
            for row in (c for c in sampler.counters.exporter_counters() if c.exporter == HEALTH_COUNTER):
                log.warning("%s:%d: not serving %s: DCGM's health checks are not available: %s", row.path,
                            row.line, row.name, error)
            self.close()
            return
        self.read(now)  # known from the start, not a HEALTH_CHECK_S later
        self.scheduled(now)

    def due(self, now: float) -> bool:
        return self.group is not None and super().due(now)

    def read(self, now: float) -> bool:
        sampler = self.sampler
        assert self.group is not None
        try:
            report = sampler.handle.health_check(self.group)
        except DcgmError as error:
            self.count(error.code)
            return True   # counted; the samples still flow
        stamp = sampler.clock.time()
        held = () if sampler.health is None else tuple(r for r in sampler.health.recent
                                                       if r[0] > stamp - HEALTH_HOLD_S)
        sampler.health = HealthState(report, stamp, held + tuple((stamp, i) for i in report.incidents))
        return True

    def close(self) -> None:
        if self.group is not None:
            quietly(self.group.destroy)
            self.group = None
