"""The idle reader on rows the test writes into a real ring, with a real process reader over a fake NVML."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

import pytest

from dcgm_collector.clock import ManualClock
from dcgm_collector.collect.readers.idle import GPU_UTIL, GR_ENGINE_ACTIVE, MAX_GAP_INTERVALS, IdleCounts, IdleReader
from dcgm_collector.collect.readers.nvml import NvmlProcess
from dcgm_collector.collect.readers.processes import ProcessReader
from dcgm_collector.model import EntityType, MigInstance
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_OK, RingBuffer, SeriesKey
from dcgm_collector.series.idle import BUSY_FAMILY, IDLE_FAMILY

GPU, GPU_I = int(EntityType.GPU), int(EntityType.GPU_I)
MIB = 2**20
S = 1_000_000   # µs


class FakeNvml:
    """Each GPU's processes as (pid, fb bytes); a MIG GPU's by instance."""

    def __init__(self) -> None:
        self.gpus: dict[int, list[tuple[int, int]]] = {}
        self.migs: dict[int, dict[int, list[tuple[int, int]]]] = {}

    def device(self, index: int) -> object:
        return ("gpu", index)

    def mig_devices(self, device: object) -> list[object]:
        return [("mig", device[1], gi) for gi in self.migs.get(device[1], {})]

    def processes(self, device: object, graphics: bool) -> list[NvmlProcess]:
        if graphics:
            return []
        if device[0] == "mig":
            return [NvmlProcess(pid, fb, device[2]) for pid, fb in self.migs[device[1]][device[2]]]
        return [NvmlProcess(pid, fb, None) for pid, fb in self.gpus.get(device[1], [])]

    def utilization(self, device: object, last_seen_us: int) -> list:
        return []


class Node:
    """A sampler's worth of state: one ring of utilisation, the process reader and the idle reader."""

    def __init__(self, tmp_path, series, allocated=lambda gpu, uuid, instance: False, gpu_ids=(0, 1),
                 instances=(), util_below=10.0, held_fb_mib=100.0) -> None:
        self.clock = ManualClock()
        self.nvml = FakeNvml()
        self.ring = RingBuffer(series, 64)
        self.sampler = SimpleNamespace(interval_s=1.0, gpu_ids=gpu_ids, instances=tuple(instances), clock=self.clock,
                                       rings={"values": self.ring}, plan=SimpleNamespace(update_freq_us=S),
                                       handle=None, readers=())
        self.processes = ProcessReader(self.sampler, lambda: self.nvml, proc_root=str(tmp_path))
        self.idle = IdleReader.factory(allocated, util_below, held_fb_mib)(self.sampler)
        if self.idle is not None:
            self.sampler.readers = (self.processes, self.idle)
            self.processes.start(self.clock.monotonic())
            self.idle.start(self.clock.monotonic())

    def tick(self, ts_s: float, *values: float, status=None) -> None:
        """One sampling instant: a row of utilisation at ts_s, then both readers, as a tick runs them."""
        self.ring.append(round(ts_s * S), list(values), status)
        self.clock.advance(1.0)
        self.processes.read(self.clock.monotonic())
        self.idle.read(self.clock.monotonic())

    def seconds(self, entity: tuple[int, int] = (GPU, 0)) -> dict[str, float]:
        window = self.idle.store.window(100 * S, int(self.clock.time() * S))
        found = {}
        for key, value in zip(window.keys, window.stats.last.tolist()):
            if (key.entity_group, key.entity_id) == entity:
                state = "busy" if key.field_id == BUSY_FAMILY.field_id else dict(key.labels)["state"]
                assert key.field_id in (BUSY_FAMILY.field_id, IDLE_FAMILY.field_id)
                found[state] = value
        return found


def two_gpus(field_id: int = GPU_UTIL) -> list[SeriesKey]:
    return [SeriesKey(GPU, 0, field_id), SeriesKey(GPU, 1, field_id)]


def test_every_state_starts_at_an_explicit_zero(tmp_path):
    node = Node(tmp_path, two_gpus())
    zero = {"busy": 0.0, "idle_held": 0.0, "allocated_no_process": 0.0, "free": 0.0}
    assert node.seconds((GPU, 0)) == zero and node.seconds((GPU, 1)) == zero
    assert node.idle.store.refused == 0


def test_each_row_adds_the_time_since_the_previous_one_to_exactly_one_state(tmp_path):
    node = Node(tmp_path, two_gpus(), allocated=lambda gpu, uuid, instance: gpu == 1)
    node.nvml.gpus = {0: [(11, 2048 * MIB)]}   # GPU 0 held by 2 GiB; GPU 1 allocated, no process
    node.tick(10.0, 50, 0)        # a GPU's first row has nothing before it: counted nowhere
    node.tick(11.0, 50, 0)        # 1 s busy on GPU 0, 1 s allocated on GPU 1
    node.tick(11.5, 3, 0)
    node.tick(12.5, 3, 0)
    assert node.seconds((GPU, 0)) == {"busy": 1.0, "idle_held": 1.5, "allocated_no_process": 0.0, "free": 0.0}
    assert node.seconds((GPU, 1)) == {"busy": 0.0, "idle_held": 0.0, "allocated_no_process": 2.5, "free": 0.0}


def test_a_blank_row_counts_nowhere_and_an_absent_cell_is_not_a_row(tmp_path):
    node = Node(tmp_path, two_gpus())
    node.tick(0.0, 50, 50)
    node.tick(1.0, math.nan, 50)   # GPU 0 blank: the second up to it is not known
    node.tick(2.0, 50, 50)
    # GPU 1 has no record at 2.5 (a row of GPU 0's instant): GPU 1's next row counts from its last one
    node.tick(2.5, 50, math.nan, status=[[SAMPLE_OK, SAMPLE_ABSENT]])
    node.tick(3.0, 50, 50)
    assert node.seconds((GPU, 0))["busy"] == 2.0
    assert node.seconds((GPU, 1))["busy"] == 3.0


def test_a_stall_counts_at_most_a_few_intervals(tmp_path):
    node = Node(tmp_path, two_gpus())
    node.tick(0.0, 0, 0)
    node.tick(3600.0, 0, 0)   # an hour without rows: a reconnect, a hung driver
    assert node.seconds((GPU, 0))["free"] == MAX_GAP_INTERVALS * 1.0


def test_the_thresholds_util_at_the_threshold_is_busy_and_memory_under_it_is_not_held(tmp_path):
    node = Node(tmp_path, two_gpus(), util_below=10.0, held_fb_mib=100.0)
    node.nvml.gpus = {0: [(1, 60 * MIB), (2, 39 * MIB)], 1: [(3, 60 * MIB), (4, 40 * MIB)]}
    node.tick(0.0, 10, 9.99)
    node.tick(1.0, 10, 9.99)
    assert node.seconds((GPU, 0)) == {"busy": 1.0, "idle_held": 0.0, "allocated_no_process": 0.0, "free": 0.0}
    # 99 MiB in all on GPU 0 is not held; 100 MiB on GPU 1 is
    node.tick(2.0, 0, 0)
    assert node.seconds((GPU, 0))["free"] == 1.0
    assert node.seconds((GPU, 1))["idle_held"] == 2.0


def test_a_held_gpu_is_not_asked_whether_it_is_allocated(tmp_path):
    asked = []
    node = Node(tmp_path, two_gpus(), allocated=lambda gpu, uuid, instance: asked.append(gpu) or True)
    node.nvml.gpus = {0: [(1, 200 * MIB)]}
    node.tick(0.0, 0, 0)
    node.tick(1.0, 0, 0)
    assert asked == [1]
    assert node.seconds((GPU, 0))["idle_held"] == node.seconds((GPU, 1))["allocated_no_process"] == 1.0


def test_without_gpu_util_the_graphics_engine_ratio_counts_in_percent(tmp_path):
    node = Node(tmp_path, two_gpus(GR_ENGINE_ACTIVE))
    node.tick(0.0, 0.5, 0.05)
    node.tick(1.0, 0.5, 0.05)
    assert node.seconds((GPU, 0))["busy"] == 1.0 and node.seconds((GPU, 1))["free"] == 1.0


def test_neither_utilisation_field_is_one_warning_naming_both_and_no_reader(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        node = Node(tmp_path, [SeriesKey(GPU, 0, 150), SeriesKey(GPU, 1, 150)])
    assert node.idle is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["--processes: the counters sample neither DCGM_FI_DEV_GPU_UTIL (203) nor "
                        "DCGM_FI_PROF_GR_ENGINE_ACTIVE (1001): no DCGM_EXP_GPU_IDLE_SECONDS_TOTAL or "
                        "DCGM_EXP_GPU_BUSY_SECONDS_TOTAL"]


def test_mig_instances_count_from_the_instance_engine_ratio_with_their_own_processes(tmp_path):
    instances = [MigInstance(8, 1, 1, "3g.71gb", "MIG-a"), MigInstance(9, 1, 2, "2g.35gb", "MIG-b")]
    allocated = []
    series = [SeriesKey(GPU, 0, GPU_UTIL), SeriesKey(GPU_I, 8, GR_ENGINE_ACTIVE), SeriesKey(GPU_I, 9, GR_ENGINE_ACTIVE)]
    node = Node(tmp_path, series, gpu_ids=(0,), instances=instances,
                allocated=lambda gpu, uuid, instance: allocated.append((gpu, uuid, instance)) or False)
    node.nvml.migs = {1: {1: [(5, 500 * MIB)], 2: []}}
    node.tick(0.0, 0, 0.01, 0.9)
    node.tick(1.0, 0, 0.01, 0.9)
    assert node.seconds((GPU_I, 8))["idle_held"] == 1.0
    assert node.seconds((GPU_I, 9))["busy"] == 1.0
    assert node.seconds((GPU, 0))["free"] == 1.0
    assert allocated == [(0, "", None)]


@pytest.mark.parametrize("util, held, allocated, state", [
    (10.0, True, True, "busy"), (9.9, True, True, "idle_held"), (0.0, False, True, "allocated_no_process"),
    (0.0, False, False, "free"),
])
def test_the_classification(util, held, allocated, state):
    assert IdleCounts(10, 100).state(util, held, lambda: allocated) == state


def test_held_needs_a_process_even_at_a_zero_threshold():
    assert not IdleCounts(10, 0).held([])
    assert IdleCounts(10, 0).held([0])
    assert IdleCounts(10, 100).held([100 * MIB, None])
