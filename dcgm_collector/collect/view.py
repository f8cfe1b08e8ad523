"""The read-only view (dcgm_collector.series.view) of a started sampler, which the outputs read instead of it."""

from __future__ import annotations

from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.series.view import TargetView

__all__ = ["target_view"]


def target_view(sampler: Sampler) -> TargetView:
    """The view of ``sampler``, once started (its rings, event ring and entities exist only from then on).

    It refers to the sampler's rings, event ring and counts, and reads the
    values the sampler thread replaces whole (labels, health, P2P, whether the
    handle is open) through the sampler at each access: nothing is copied.
    """
    if not isinstance(sampler, Sampler):
        raise TypeError(f"sampler must be a Sampler, not {type(sampler).__name__}")
    return TargetView(
        counters=sampler.counters,
        gpu_ids=tuple(sampler.gpu_ids),
        instances=tuple(sampler.instances),
        levels=tuple(sampler.levels),
        interval_s=sampler.interval_s,
        rings=tuple(sampler.rings.values()),
        events=sampler.events,
        stats=sampler.stats,
        read_labels=lambda: sampler.labels,
        read_health=lambda: sampler.health,
        read_p2p=lambda: sampler.p2p,
        read_connected=lambda: sampler.connected,
    )
