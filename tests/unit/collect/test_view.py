"""The read-only view of a sampler: the live rings, events and counts, and the values its thread replaces."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.expose.exposition import Exposition
from dcgm_collector.model import HealthReport
from dcgm_collector.series.stats import HealthState
from dcgm_collector.series.view import TargetView

COUNTERS = ("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"
            "DCGM_FI_DEV_XID_ERRORS, gauge, last XID\n"
            "DCGM_FI_DRIVER_VERSION, label, driver\n")


@pytest.fixture
def sampler(handle):
    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=250), gpu_ids=[0, 2])
    sampler.start(thread=False)
    sampler.tick_once()
    yield sampler
    sampler.stop()


def test_the_view_holds_the_sampler_s_own_rings_events_and_counts(sampler):
    view = target_view(sampler)
    assert view.gpu_ids == (0, 2) and view.instances == () and view.levels == ()
    assert view.interval_s == 0.25 and view.counters is sampler.counters
    rings = list(sampler.rings.values())
    assert len(view.rings) == len(rings) and all(a is b for a, b in zip(view.rings, rings))
    assert view.events is sampler.events and view.stats is sampler.stats
    ticks = view.stats.ticks
    sampler.tick_once()   # counted into the same object: the view sees it without being made again
    assert view.stats.ticks == ticks + 1


def test_the_view_reads_what_the_sampler_thread_replaces_at_each_access(sampler, handle):
    view = target_view(sampler)
    assert view.labels is sampler.labels and view.labels[(1, 0)]["DCGM_FI_DRIVER_VERSION"]
    sampler.labels = MappingProxyType({(1, 0): MappingProxyType({"DCGM_FI_DRIVER_VERSION": "560.1"})})
    assert view.labels[(1, 0)]["DCGM_FI_DRIVER_VERSION"] == "560.1"
    assert view.health is None   # the counters do not ask for health status
    sampler.health = state = HealthState(HealthReport("PASS", ()), 1.0)
    assert view.health is state
    sampler.p2p = matrix = MappingProxyType({0: MappingProxyType({2: 0})})
    assert view.p2p is matrix
    assert view.connected
    sampler.stop()
    handle.close()
    assert not view.connected


def test_a_view_is_made_of_a_sampler_and_the_exposition_takes_only_a_view(sampler, handle):
    with pytest.raises(TypeError, match="sampler must be a Sampler, not str"):
        target_view("sampler")
    with pytest.raises(TypeError, match="view must be a TargetView .* not Sampler"):
        Exposition(sampler, handle.gpus(), version="t")
    assert isinstance(target_view(sampler), TargetView)
