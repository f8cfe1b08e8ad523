"""The trigger reader: new XIDs, lost GPUs and failed health checks on a sampler, handed to a sink as triggers.

Twice a second it looks at what the sampler holds, all in memory: XID entries
in the event ring newer than the last it saw, GPUs in ``SamplerStats.lost_gpus``
it had not seen lost, and FAIL incidents of the latest health check it had not
seen failing.  Each new one is a :class:`~dcgm_collector.series.triggers.Trigger`,
handed to the sink (the flight recorder's ``trigger`` method, which app.py
injects) on the sampler's thread.  What it has seen (:class:`TriggersSeen`) belongs to the target, not to
one sampler, so a reconnect or a reload, whose new sampler keeps the event
ring, does not trigger the same XID twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from dcgm_collector.catalog.fields import XID_FIELD
from dcgm_collector.collect.readers.reader import Reader, ReaderFactory
from dcgm_collector.model import LevelEntity, MigInstance
from dcgm_collector.rings.ring import EventRing
from dcgm_collector.series.samples import entity_gpus, gpu_of_entity
from dcgm_collector.series.stats import HealthState, SamplerStats
from dcgm_collector.series.triggers import Trigger, TriggerSink

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["TriggerReader", "TriggersSeen", "Watched", "gpus_of", "new_triggers"]

EntityKey = tuple[int, int]


class Watched(Protocol):
    """What the triggers are found in: a sampler, or its read-only view (dcgm_collector.series.view)."""

    @property
    def gpu_ids(self) -> Sequence[int]: ...
    @property
    def instances(self) -> Sequence[MigInstance]: ...
    @property
    def levels(self) -> Sequence[LevelEntity]: ...
    @property
    def events(self) -> EventRing: ...
    @property
    def stats(self) -> SamplerStats: ...
    @property
    def health(self) -> HealthState | None: ...


@dataclass
class TriggersSeen:
    """What has already been turned into triggers, for one target (kept across its samplers)."""

    xid_us: int = 0                           # the newest event-ring timestamp looked at
    lost: frozenset[int] = frozenset()        # GPUs seen lost
    failing: frozenset[tuple] = frozenset()   # (entity group, entity, system, code) of FAIL incidents


class TriggerReader(Reader):
    """Hands each new XID, lost GPU and FAIL health incident of its sampler to ``sink``, twice a second."""

    name = "triggers"
    # twice a second, as the recorder looked before: a recording's window is seconds wide, so looking at
    # every tick (10 a second at -c 100) would only add work to the sampler's thread
    every_s = 0.5
    reads_dcgm = False

    def __init__(self, sampler: Sampler, sink: TriggerSink, target: str, seen: TriggersSeen | None = None) -> None:
        super().__init__(sampler)
        self.sink = sink
        self.target = target
        self.seen = seen if seen is not None else TriggersSeen()
        self.gpu_of = gpus_of(sampler)

    @classmethod
    def factory(cls, sink: TriggerSink, target: str) -> ReaderFactory:
        """One trigger reader for each sampler of a target, sharing what they have seen."""
        seen = TriggersSeen()
        return lambda sampler: cls(sampler, sink, target, seen)

    def start(self, now: float) -> None:
        """Nothing at start: the first tick looks, once the sampler has drained something."""

    def read(self, now: float) -> bool:
        for trigger in new_triggers(self.target, self.sampler, self.gpu_of, self.seen, self.sampler.clock.time()):
            self.sink(trigger.kind, trigger.detail, trigger.gpus, trigger.target, trigger.time_s)
        return True


def gpus_of(sampler: Watched) -> dict[EntityKey, int]:
    """The GPU each of the sampler's entities is or belongs to (a MIG instance's, a link's)."""
    return entity_gpus(sampler.gpu_ids, sampler.instances, sampler.levels)


def _gpu(gpu_of: Mapping[EntityKey, int], group: int, entity: int) -> int | None:
    return gpu_of_entity(gpu_of, (group, entity))


def new_triggers(target: str, sampler: Watched, gpu_of: Mapping[EntityKey, int], seen: TriggersSeen,
                 now_s: float) -> list[Trigger]:
    """XIDs, lost GPUs and FAIL health incidents on ``sampler`` not in ``seen`` yet (which then holds them).

    An XID is stamped with DCGM's time of it, a FAIL incident with its health check's, a lost GPU
    with ``now_s`` (the Unix time it was found lost).
    """
    out: list[Trigger] = []
    events = sampler.events.since(seen.xid_us + 1)
    for ts, group, entity, field_id, value in zip(events.ts, events.entity_group, events.entity_id,
                                                  events.field_id, events.value):
        seen.xid_us = max(seen.xid_us, int(ts))
        if field_id != XID_FIELD:
            continue
        gpu = _gpu(gpu_of, int(group), int(entity))
        out.append(Trigger("xid", int(ts) / 1e6, frozenset({gpu}) if gpu is not None else None,
                           f"XID {int(value)}", target))
    lost = frozenset(sampler.stats.lost_gpus)
    for gpu in sorted(lost - seen.lost):
        out.append(Trigger("lost", now_s, frozenset({gpu}), f"GPU {gpu} lost", target))
    seen.lost = lost
    health = sampler.health
    if health is not None:
        failing = {}
        for incident in health.report.incidents:
            if incident.health != "FAIL":
                continue
            failing[(incident.entity_group, incident.entity_id, incident.system, incident.code)] = incident
        for key in failing.keys() - seen.failing:
            incident = failing[key]
            gpu = _gpu(gpu_of, incident.entity_group, incident.entity_id)
            out.append(Trigger("health", health.checked_at, frozenset({gpu}) if gpu is not None else None,
                               f"health FAIL on GPU {gpu if gpu is not None else '?'}: {incident.message}", target))
        seen.failing = frozenset(failing)
    return out
