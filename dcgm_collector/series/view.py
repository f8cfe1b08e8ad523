"""A read-only view of one target's sampler: what every output reads, without the sampler itself.

The collect stage makes one per sampler once it has started
(dcgm_collector.collect.view); the exposition, the health and P2P families, the
self-metrics and the flight recorder read it.  It copies nothing: it holds the
live rings, the event ring and the counts the sampler thread writes into, and
for the values that thread replaces whole (the label values, the latest health
check, the P2P matrix, whether its handle is open) a function that reads the
current one, so a scrape sees what the sampler last published.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dcgm_collector.catalog.counters import CounterSet
from dcgm_collector.model import LevelEntity, MigInstance
from dcgm_collector.rings.ring import EventRing, RingBuffer
from dcgm_collector.series.samples import EntityKey
from dcgm_collector.series.stats import HealthState, SamplerStats

__all__ = ["LabelValues", "P2PMatrix", "TargetView"]

LabelValues = Mapping[EntityKey, Mapping[str, str]]   # entity -> {label row name: value}
P2PMatrix = Mapping[int, Mapping[int, int]]           # GPU -> {peer GPU: DCGM's P2P status}


@dataclass(frozen=True, eq=False)
class TargetView:
    """One started sampler as its readers see it: entities, counters, rings, events, counts, health, labels, P2P.

    The entities and rings are fixed for the sampler's life (a reload or a
    reconnect makes a new sampler, and so a new view); ``stats`` is the live
    object the sampler counts into.  ``labels``, ``health``, ``p2p`` and
    ``connected`` are read afresh on each access.
    """

    counters: CounterSet
    gpu_ids: tuple[int, ...]                 # the GPUs sampled whole
    instances: tuple[MigInstance, ...]       # the MIG GPU instances sampled on their own
    levels: tuple[LevelEntity, ...]          # the NvLinks, NvSwitches, CPUs and cores sampled
    interval_s: float                        # how often the sampler drains DCGM
    rings: tuple[RingBuffer, ...]            # one per field group, in the sampler's order
    events: EventRing
    stats: SamplerStats
    read_labels: Callable[[], LabelValues]
    read_health: Callable[[], HealthState | None]
    read_p2p: Callable[[], P2PMatrix]
    read_connected: Callable[[], bool]

    @property
    def labels(self) -> LabelValues:
        """The label rows' values per entity, as the sampler last read them (replaced, never mutated)."""
        return self.read_labels()

    @property
    def health(self) -> HealthState | None:
        """DCGM's health checks as last seen; None unless the counters ask for DCGM_EXP_GPU_HEALTH_STATUS."""
        return self.read_health()

    @property
    def p2p(self) -> P2PMatrix:
        """GPU -> {peer GPU: status}, as last read; empty unless the counters ask for DCGM_EXP_P2P_STATUS."""
        return self.read_p2p()

    @property
    def connected(self) -> bool:
        """False once the sampler's DCGM handle is closed."""
        return self.read_connected()
