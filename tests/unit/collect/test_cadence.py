"""A 10 ms watch on a simulated H200 sees readings change as often as the card's did, no faster.

The recorded H200 (reference/hardware/h200-2026-11-30/changes.csv, a ~2 ms poll) gave a
new power, energy and SM clock reading every 100 ms and a new utilisation every 200 ms or
more (a sample period, not an instant).  The sampler's rings keep every sample DCGM took,
so a 10 ms watch must hold the same value ten times over, not invent detail between.
"""

from __future__ import annotations

import time

import numpy as np
from support import gpu_ring_series

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler

GPU_UTIL, SM_CLOCK, POWER_INSTANT, ENERGY = 203, 100, 157, 156

# bursts of bf16-like load from an open context: every reading moves
SPIKES = """\
seed = 3
[[gpu]]
model = "H200"
workload = "spikes"
utilization = 0.0
spike_period = 0.9
spike_length = 0.3
"""

COUNTERS = """\
DCGM_FI_DEV_GPU_UTIL, gauge, utilisation
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock
DCGM_FI_DEV_POWER_USAGE_INSTANT, gauge, instant power
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, energy
"""


def _changes(ts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Timestamps (us) of the samples whose value differs from the one before."""
    return ts[1:][values[1:] != values[:-1]]


def test_a_10ms_watch_sees_each_reading_repeated_until_the_card_would_change_it(open_node, tmp_path):
    scenario = tmp_path / "spikes.toml"
    scenario.write_text(SPIKES)
    handle = open_node(str(scenario))
    options = SamplingOptions(collect_interval_ms=250, watch_interval_ms=10)
    with Sampler(handle, parse_counters(COUNTERS), options) as sampler:
        rings = list(sampler.rings.values())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            spans = [np.ptp(r.rows_since(0).ts) if r.rows_written > 1 else 0 for r in rings]
            if min(spans) >= 3_000_000:
                break
            time.sleep(0.1)
    series = gpu_ring_series(sampler, 0, (GPU_UTIL, SM_CLOCK, POWER_INSTANT, ENERGY))
    assert set(series) == {GPU_UTIL, SM_CLOCK, POWER_INSTANT, ENERGY}

    for field, (ts, values) in series.items():
        assert np.ptp(ts) >= 3_000_000, field
        # ten 10 ms samples per 100 ms reading: most samples repeat the one before
        assert (values[1:] == values[:-1]).mean() > 0.8, field
        changes = _changes(ts, values)
        assert len(changes) >= 3, (field, values)
        gaps = np.diff(changes)
        # a change shows at the first sample after it, up to one watch interval (plus
        # scheduling slack) late, so two changes 100 ms apart can look a little closer
        if field == GPU_UTIL:
            assert gaps.min() >= 150_000, (field, gaps.min())
        else:
            assert gaps.min() >= 80_000, (field, gaps.min())
