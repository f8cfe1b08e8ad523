"""The trigger reader: each new XID, lost GPU and failed health check of a sampler reaches the sink once."""

from __future__ import annotations

import time
from types import SimpleNamespace

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.clock import ManualClock
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.readers.triggers import TriggerReader, TriggersSeen, gpus_of, new_triggers
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.model import EntityType, HealthIncident, HealthReport, MigInstance
from dcgm_collector.rings.ring import EventRing
from dcgm_collector.series.stats import HealthState, SamplerStats

GPU, GPU_I = int(EntityType.GPU), int(EntityType.GPU_I)
XID = 230
S = 1_000_000   # µs
COUNTERS = "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_EXP_XID_ERRORS_COUNT, gauge, XIDs\n"


class Sink:
    """Stands in for the flight recorder's trigger method."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, kind, detail, gpus=None, target=None, time_s=None):
        self.calls.append((kind, detail, gpus, target, time_s))
        return []


def _incident(health: str, entity_group: int, entity_id: int, code: int = 43) -> HealthIncident:
    return HealthIncident(0x10, health, f"{health} on {entity_id}", code, entity_group, entity_id)


def _stub_sampler() -> SimpleNamespace:
    """What new_triggers reads of a sampler: its event ring, stats and health, and its entities."""
    return SimpleNamespace(events=EventRing(16), stats=SamplerStats(), health=None, gpu_ids=(0, 1),
                           instances=(MigInstance(7, 1, 0, "3g.40gb"),), levels=())


def test_new_xids_lost_gpus_and_fail_incidents_are_triggers_once_each():
    sampler = _stub_sampler()
    seen = TriggersSeen()
    gpu_of = gpus_of(sampler)
    sampler.events.append(10 * S, GPU, 0, XID, 13)
    sampler.events.append(11 * S, GPU_I, 7, XID, 31)   # on the MIG instance of GPU 1
    sampler.events.append(12 * S, GPU, 1, 999, 1)      # another event field: not a trigger
    sampler.stats.lost_gpus = (1,)
    report = HealthReport("FAIL", (_incident("FAIL", GPU, 1), _incident("WARN", GPU, 0)))
    sampler.health = HealthState(report, 4990.0)
    first = new_triggers("node", sampler, gpu_of, seen, 5000.0)
    assert [(t.kind, t.detail, t.gpus, t.target, t.time_s) for t in first] == [
        ("xid", "XID 13", frozenset({0}), "node", 10.0),
        ("xid", "XID 31", frozenset({1}), "node", 11.0),
        ("lost", "GPU 1 lost", frozenset({1}), "node", 5000.0),
        ("health", "health FAIL on GPU 1: FAIL on 1", frozenset({1}), "node", 4990.0),
    ]
    # nothing new: nothing again, even with the same incident in a later check
    sampler.health = HealthState(report, 4995.0)
    assert new_triggers("node", sampler, gpu_of, seen, 5001.0) == []
    # a new XID, a second GPU lost and another failing check
    sampler.events.append(13 * S, GPU, 1, XID, 79)
    sampler.stats.lost_gpus = (1, 0)
    sampler.health = HealthState(HealthReport("FAIL", (_incident("FAIL", GPU, 1), _incident("FAIL", GPU, 0, 12))),
                                 5001.0)
    again = new_triggers("node", sampler, gpu_of, seen, 5002.0)
    assert sorted((t.kind, t.detail) for t in again) == [
        ("health", "health FAIL on GPU 0: FAIL on 0"), ("lost", "GPU 0 lost"), ("xid", "XID 79")]


def _tick_until(sampler: Sampler, clock: ManualClock, condition, timeout: float = 10.0) -> None:
    """Tick by hand, 100 ms of the clock each, until ``condition()``; the engine's events still take real time."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the sampler"
        clock.advance(0.1)
        sampler.tick_once()
        time.sleep(0.01)


def test_the_reader_hands_a_simulated_xid_and_lost_gpu_to_the_sink_and_a_resumed_sampler_not_again(open_node,
                                                                                                   tmp_path):
    scenario = tmp_path / "node.toml"
    scenario.write_text('seed = 5\n[[gpu]]\nmodel = "H100"\ncount = 3\n'
                        '[[event]]\nat = 0.2\ngpu = 0\nkind = "xid"\nxid = 13\n'
                        '[[event]]\nat = 0.4\ngpu = 1\nkind = "lost"\n')
    handle = open_node(str(scenario))
    clock = ManualClock(time=time.time())
    sink = Sink()
    readers = [TriggerReader.factory(sink, "node7")]
    options = SamplingOptions(collect_interval_ms=100, watch_interval_ms=100, retention_s=30)
    counters = parse_counters(COUNTERS)
    sampler = Sampler(handle, counters, options, gpu_ids=[0, 1, 2], readers=readers, clock=clock)
    sampler.start(thread=False)
    try:
        _tick_until(sampler, clock, lambda: any(call[0] == "lost" for call in sink.calls))
        _tick_until(sampler, clock, lambda: len([c for c in sink.calls if c[0] == "xid"]) >= 2)
    finally:
        sampler.stop()
    xids = [c for c in sink.calls if c[0] == "xid"]
    assert [(c[1], c[2], c[3]) for c in xids] == [("XID 13", frozenset({0}), "node7"),
                                                  ("XID 79", frozenset({1}), "node7")]   # a lost GPU's XID
    assert all(abs(c[4] - time.time()) < 30 for c in xids)   # DCGM's own times of the events
    [lost] = [c for c in sink.calls if c[0] == "lost"]
    assert lost[1:4] == ("GPU 1 lost", frozenset({1}), "node7")
    # the target's next sampler (a reconnect, a reload) keeps the event ring and what was seen
    resumed = Sampler(handle, counters, options, gpu_ids=[0, 1, 2], resume=sampler, stats=sampler.stats,
                      readers=readers, clock=clock)
    resumed.start(thread=False)
    try:
        assert resumed.events is sampler.events
        for _ in range(5):
            clock.advance(0.1)
            resumed.tick_once()
    finally:
        resumed.stop()
    assert [c for c in sink.calls if c[0] == "xid"] == xids   # not handed again
