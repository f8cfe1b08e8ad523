"""Spike capture: how many 300 ms spikes 15 s scrapes show, ``_max`` family against the last value.

8 simulated H100s run the spikes workload (5 % floor, 300 ms at 100 % every
2 s, phase seeded per GPU).  The collector's own sampler runs in this
process for --seconds at ``-c 1000 --watch-interval 100`` on the benchmark
counters; then its ``Exposition`` renders /metrics as scrapes every 15 s
would have seen them (``render(now_us=t)`` for t on 15 s grids, 30 grids
offset by 0.5 s, so every phase of the scrape against the spikes counts).
From each render it reads ``DCGM_FI_DEV_GPU_UTIL`` (the last value, what
dcgm-exporter serves) and ``DCGM_FI_DEV_GPU_UTIL_max`` (the trailing 15 s
window).

The truth comes from the simulator's model (``dcgmSimGetValueAt``, every
10 ms), not from the collector: a spike is an interval where the model's
utilisation is at least 50 %.

Figures:

- scrapes whose 15 s window held a spike that show one (value >= 50 %):
  ``_max`` against the last value;
- spikes that some scrape shows: by ``_max``, a spike inside a window whose
  ``_max`` shows a spike; by the last value, a spike under way at a scrape
  (the baseline: what last-value sampling catches);
- spikes the 100 ms watch sampled at all (the rings hold a >= 50 % sample
  inside the spike): what ``_max`` is computed from.

The last-value baseline is generous: its value is at most 100 ms old at the
scrape, where dcgm-exporter's watch runs at its collect interval (30 s by
default).

    python benchmarks/spike_capture.py [--seconds 45]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
import time

import _workload as w
import numpy as np

from dcgm_collector import dcgm, engine
from dcgm_collector.catalog.counters import load_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.rings.ring import SAMPLE_OK

GPU_UTIL = 203
THRESHOLD = 50.0
SCRAPE_S = 15.0
MIN_SECONDS = 20.0
GRID_STEP_S = 0.5
MODEL_STEP_US = 10_000
GPUS = 8


class Model:
    """The simulator's own value of a field at a time (the library this process already loaded)."""

    def __init__(self) -> None:
        self.library = ctypes.CDLL(str(engine.library_path()))
        start = ctypes.c_longlong()
        if self.library.dcgmSimGetStartTime(ctypes.byref(start)) != 0:
            raise RuntimeError("dcgmSimGetStartTime failed")
        self.start_us = start.value
        self.library.dcgmSimGetValueAt.argtypes = [ctypes.c_uint, ctypes.c_ushort, ctypes.c_longlong,
                                                   ctypes.POINTER(w.FieldValueV1)]

    def value(self, gpu: int, field: int, t_us: int) -> float:
        out = w.FieldValueV1()
        if self.library.dcgmSimGetValueAt(gpu, field, t_us - self.start_us, ctypes.byref(out)) != 0:
            raise RuntimeError("dcgmSimGetValueAt failed")
        return float(out.value.i64) if out.fieldType == ord("i") else out.value.dbl

    def spikes(self, gpu: int, since_us: int, until_us: int) -> list[tuple[int, int]]:
        """[start, end) of the whole spikes in [since, until): the model's utilisation at least THRESHOLD."""
        out, begin = [], None
        for t in range(since_us, until_us, MODEL_STEP_US):
            high = self.value(gpu, GPU_UTIL, t) >= THRESHOLD
            if high and begin is None:
                begin = t
            elif not high and begin is not None:
                if begin > since_us:       # a spike already under way at since_us is not whole
                    out.append((begin, t))
                begin = None
        return out   # a spike still under way at until_us is left out too


def series_values(body: bytes, name: str) -> dict[int, float]:
    """GPU -> value of one family in a rendered body."""
    prefix = f"{name}{{gpu=\"".encode()
    out = {}
    for line in body.split(b"\n"):
        if line.startswith(prefix):
            gpu = int(line[len(prefix):line.index(b'"', len(prefix))])
            out[gpu] = float(line.rsplit(b" ", 1)[1])
    return out


def sampled_spikes(sampler: Sampler, spikes: dict[int, list[tuple[int, int]]]) -> tuple[int, int]:
    """(spikes with a >= THRESHOLD sample in the rings, spikes)."""
    for ring in sampler.rings.values():
        columns = {key.entity_id: i for i, key in enumerate(ring.series) if key.field_id == GPU_UTIL}
        if columns:
            rows = ring.rows_since(0)
            break
    else:
        raise RuntimeError("no ring holds GPU utilisation")
    seen = total = 0
    for gpu, intervals in spikes.items():
        column = columns[gpu]
        high = rows.ts[(rows.status[:, column] == SAMPLE_OK) & (rows.values[:, column] >= THRESHOLD)]
        for begin, end in intervals:
            total += 1
            seen += bool(np.any((high >= begin) & (high < end)))
    return seen, total


def run(seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        counters = load_counters(w.write_counters(tmp))
        scenario = str(w.spikes_scenario(tmp, GPUS))
        os.environ[engine.SCENARIO_ENV] = scenario
        with dcgm.Handle.embedded(library=engine.library_path()) as handle:
            gpu0 = handle.gpu_ids()[0]
            counters = counters.without_unsupported_profiling(handle.supported_profiling_fields(gpu0), lambda _: 0)
            sampler = Sampler(handle, counters,
                              SamplingOptions(collect_interval_ms=1000, watch_interval_ms=100, retention_s=900))
            with sampler:
                begin_us = time.time_ns() // 1000
                time.sleep(seconds)
                end_us = time.time_ns() // 1000 - 1_500_000   # the last collect may still be on its way
            exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(window_s=SCRAPE_S),
                                    version="bench")
            model = Model()
            first_us = begin_us + 1_000_000      # the first drain's rows
            spikes = {gpu: model.spikes(gpu, first_us, end_us) for gpu in sampler.gpu_ids}
            grids = []
            for offset in np.arange(0.0, SCRAPE_S, GRID_STEP_S):
                t, grid = first_us + int((SCRAPE_S + offset) * 1e6), []
                while t <= end_us:
                    grid.append(t)
                    t += int(SCRAPE_S * 1e6)
                grids.append(grid)
            windows = {"max": [0, 0], "last": [0, 0]}     # [scrapes showing a spike, scrapes whose window held one]
            spike_counts = {"max": [0, 0], "last": [0, 0]}  # [spikes shown, spikes inside the grid's windows]
            for grid in grids:
                for t in grid:
                    body = exposition.render(now_us=t)
                    values = {"last": series_values(body, "DCGM_FI_DEV_GPU_UTIL"),
                              "max": series_values(body, "DCGM_FI_DEV_GPU_UTIL_max")}
                    for gpu, intervals in spikes.items():
                        # each spike belongs to the one window of this grid its start falls in
                        inside = [s for s in intervals if t - SCRAPE_S * 1e6 < s[0] <= t]
                        if not inside:
                            continue
                        for kind in ("max", "last"):
                            shows = values[kind].get(gpu, 0.0) >= THRESHOLD
                            windows[kind][0] += shows
                            windows[kind][1] += 1
                            if kind == "max":
                                spike_counts[kind][0] += len(inside) if shows else 0
                            else:   # the last value shows the spike under way at the scrape, if any
                                spike_counts[kind][0] += shows and any(s[0] <= t < s[1] + 100_000 for s in inside)
                            spike_counts[kind][1] += len(inside)
            sampled, total = sampled_spikes(sampler, spikes)
    scrapes = sum(len(g) for g in grids)
    print(f"{GPUS} H100s, spikes workload, {seconds:g} s of sampling at a 100 ms watch, {total} whole spikes in the "
          f"model; {scrapes} scrape times on {len(grids)} grids of 15 s scrapes (offset {GRID_STEP_S:g} s apart)")
    for kind, label in (("max", "DCGM_FI_DEV_GPU_UTIL_max"), ("last", "DCGM_FI_DEV_GPU_UTIL (last value)")):
        hit, all_ = windows[kind]
        shown, spikes_all = spike_counts[kind]
        print(f"{label}: {100 * hit / all_:.1f} % of {all_} scrape windows holding a spike show one; "
              f"{100 * shown / spikes_all:.1f} % of the spikes in those windows ({spikes_all}, counted per grid) "
              "are shown")
    print(f"spikes the 100 ms watch sampled (>= {THRESHOLD:g} % inside the spike): {100 * sampled / total:.1f} % "
          f"({sampled} of {total})")
    max_share = windows["max"][0] / windows["max"][1]
    last_share = windows["last"][0] / windows["last"][1]
    print(f"ratio _max / last value (scrape windows): {max_share / max(last_share, 1e-9):.1f}x; "
          f"target: _max 100 %: {'met' if max_share == 1.0 else 'MISSED'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=45.0, help="real time the sampler runs")
    args = parser.parse_args(argv)
    if args.seconds < MIN_SECONDS:
        parser.error(f"--seconds must be at least {MIN_SECONDS:g}: shorter runs hold no complete {SCRAPE_S:g} s scrape")
    w.print_machine()
    run(args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
