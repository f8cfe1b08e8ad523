"""What a simulated H200 does when a load starts, as the sampler's rings record it.

The recorded H200 (reference/hardware/h200-2026-11-30/) went from 38 to 57 C within
1 s of reaching its 700 W cap and to 60-61 C over the next 5 s (two time constants);
its memory warmed more slowly (40 to 45 C in the first second).  Its energy counter
is the integral of its power.  The sampler keeps every sample, so all of it is visible
at a 100 ms watch.
"""

from __future__ import annotations

import time

import numpy as np
from support import gpu_ring_series

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler

GPU_TEMP, MEM_TEMP, POWER_INSTANT, ENERGY, REASONS = 150, 140, 157, 156, 112
LOAD_AT_S = 1.0

SCENARIO = f"""\
seed = 8
[[gpu]]
model = "H200"
workload = "idle_context"
[[event]]
at = {LOAD_AT_S}
gpu = 0
kind = "workload"
workload = "tensor"
"""

COUNTERS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature
DCGM_FI_DEV_MEMORY_TEMP, gauge, memory temperature
DCGM_FI_DEV_POWER_USAGE_INSTANT, gauge, instant power
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, energy
DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, reasons
"""


def _series(sampler: Sampler) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    return gpu_ring_series(sampler, 0, (GPU_TEMP, MEM_TEMP, POWER_INSTANT, ENERGY, REASONS))


def test_a_tensor_load_heats_the_gpu_fast_then_slow_and_the_energy_integrates_the_power(open_node, tmp_path):
    scenario = tmp_path / "load.toml"
    scenario.write_text(SCENARIO)
    handle = open_node(str(scenario))
    started = time.time()       # the node's clock starts with the handle
    with Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=500,
                                                                  watch_interval_ms=100)) as sampler:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            series = _series(sampler)
            # a field may have no good sample yet in the first rows (its first reading still blank)
            if len(series) == 5 and all(len(ts) for ts, _ in series.values()) \
                    and min(np.max(ts) for ts, _ in series.values()) > (started + LOAD_AT_S + 5.5) * 1e6:
                break
            time.sleep(0.2)
    series = _series(sampler)
    load_us = (started + LOAD_AT_S) * 1e6

    def at(field: int, after_s: float) -> float:
        ts, values = series[field]
        return float(values[np.searchsorted(ts, load_us + after_s * 1e6, side="right") - 1])

    base, mem_base = at(GPU_TEMP, -0.2), at(MEM_TEMP, -0.3)
    assert 35 <= base <= 41, base                        # 38 C with a context open
    assert at(GPU_TEMP, 1.2) - base >= 14                # the fast part: most of the rise in the first second
    assert at(GPU_TEMP, 5.0) - at(GPU_TEMP, 1.2) >= 1    # the slow part keeps going
    assert at(MEM_TEMP, 1.2) - mem_base < at(GPU_TEMP, 1.2) - base   # memory follows more slowly
    assert int(at(REASONS, 2.0)) & 0x4                   # the SW power cap holds it at 700 W

    # the energy counter is the integral of the instant power, step by step
    ts, energy = series[ENERGY]
    pts, power = series[POWER_INSTANT]
    window = (ts >= load_us - 0.5e6) & (ts <= load_us + 4.5e6)
    first, last = np.flatnonzero(window)[[0, -1]]
    in_span = (pts >= ts[first]) & (pts < ts[last])
    integral_mj = float(np.sum(power[in_span] * np.diff(np.append(pts[in_span], ts[last])))) / 1e3
    drawn_mj = float(energy[last] - energy[first])
    assert abs(drawn_mj - integral_mj) < 0.05 * drawn_mj, (drawn_mj, integral_mj)
