"""/metrics render time, in process, with the window families, on 1, 8 and 32 simulated GPUs.

The collector's own objects: an embedded simulated node in manual mode, a
``Sampler`` on the benchmark's counters at a 100 ms watch and collect
interval with 15 min retention, drained once for real, then 15 s of rows at
100 ms added to every ring (the first row repeated, 150 rows), so that each
render reads a full 15 s window, as it would in a running collector.  The
benchmark times ``Exposition.render()`` at a fixed time at the end of those
rows: ring window reads, statistics, text.

Cases:

- ``full``: every metric row the shipped counters files list (their
  off-by-default rows turned on) with ``--aggregations min,max,avg``, so
  every numeric gauge row has all three window families (counters get none);
  over 1,000 series on 8 GPUs.  Run on 1, 8 and 32 GPUs for the scaling figure.
- ``workload``: the benchmark workload (default counters + profiling set)
  with the window families the shipped file asks for, on 8 GPUs.

Baseline, same run: ``prometheus_client.generate_latest`` on a registry of
labelled Gauges holding exactly the series of the 8-GPU ``full`` render
(same names, labels and values): the standard Python exporter's render of
the same text, with no window to compute.

Real HTTP with concurrent scrapers is measured by ``render_http.py``.
"""

from __future__ import annotations

import os
import tempfile

import _workload as w
import numpy as np
import pytest
from prometheus_client import generate_latest

from dcgm_collector import dcgm, engine
from dcgm_collector.collect.counters import load_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions

WINDOW_ROWS = 150          # 15 s at 100 ms
STEP_US = 100_000
ALL_AGGREGATIONS = ("min", "max", "avg")
CASES = [("full", 1), ("full", 8), ("full", 32), ("workload", 8)]

_results: dict[str, dict] = {}


class RenderNode:
    def __init__(self, handle: dcgm.Handle, counters_path: str, aggregations: tuple[str, ...]) -> None:
        counters = load_counters(counters_path)
        gpu = handle.gpu_ids()[0]
        counters = counters.without_unsupported_profiling(handle.supported_profiling_fields(gpu), lambda _: None)
        self.sampler = Sampler(handle, counters,
                               SamplingOptions(collect_interval_ms=100, watch_interval_ms=100, retention_s=900))
        self.sampler.start(thread=False)
        handle.update_all_fields()
        self.sampler.tick_once()
        newest = 0
        for ring in self.sampler.rings.values():
            rows = ring.rows_since(0)
            first = int(rows.ts[-1])
            ts = first + STEP_US * np.arange(1, WINDOW_ROWS + 1)
            ring.append(ts, np.repeat(rows.values[-1:], WINDOW_ROWS, axis=0),
                        np.repeat(rows.status[-1:], WINDOW_ROWS, axis=0))
            newest = max(newest, int(ts[-1]))
        self.now_us = newest
        self.exposition = Exposition(self.sampler, handle.gpus(), ExpositionOptions(aggregations=aggregations),
                                     version="bench")
        self.ring_bytes = sum(ring.nbytes for ring in self.sampler.rings.values())

    def render(self) -> bytes:
        return self.exposition.render(now_us=self.now_us)


@pytest.fixture(scope="module")
def counters_dir():
    with tempfile.TemporaryDirectory() as tmp:
        w.write_counters(tmp)
        w.write_counters(tmp, full=True)
        yield tmp


def _open(counters_dir: str, kind: str, gpus: int):
    previous = os.environ.get(engine.SCENARIO_ENV)
    os.environ[engine.SCENARIO_ENV] = str(gpus)
    try:
        handle = dcgm.Handle.embedded("manual", library=engine.library_path())
    finally:
        if previous is None:
            os.environ.pop(engine.SCENARIO_ENV, None)
        else:
            os.environ[engine.SCENARIO_ENV] = previous
    path = os.path.join(counters_dir, "workload-full.csv" if kind == "full" else "workload.csv")
    return handle, RenderNode(handle, path, ALL_AGGREGATIONS if kind == "full" else ())


def _series(body: bytes) -> int:
    return sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))


@pytest.mark.parametrize("kind,gpus", CASES, ids=[f"{k}-{g}gpu" for k, g in CASES])
def test_render(benchmark, counters_dir, kind, gpus):
    handle, node = _open(counters_dir, kind, gpus)
    try:
        body = node.render()
        assert b"DCGM_FI_DEV_GPU_TEMP_max{" in body
        series = _series(body)
        benchmark(node.render)
        median = benchmark.stats.stats.median
        info = {"series": series, "bytes": len(body), "median_ms": median * 1e3,
                "ring_mib": node.ring_bytes / w.MIB, "body": body}
        _results[f"{kind}-{gpus}"] = info
        benchmark.extra_info.update({k: v for k, v in info.items() if k != "body"})
        print(f"\nrender {kind} counters, {gpus} GPUs: {series} series, {len(body)} bytes, median "
              f"{median * 1e3:.3f} ms ({median / series * 1e6:.2f} us per series); value rings "
              f"{node.ring_bytes / w.MIB:.1f} MiB (15 min at 100 ms)")
    finally:
        node.sampler.stop()
        handle.close()


def test_prometheus_client_baseline(benchmark, counters_dir):
    body = _results.get("full-8", {}).get("body")
    if body is None:
        handle, node = _open(counters_dir, "full", 8)
        try:
            body = node.render()
        finally:
            node.sampler.stop()
            handle.close()
    registry, series = w.registry_like(body)
    benchmark(generate_latest, registry)
    median = benchmark.stats.stats.median
    benchmark.extra_info.update({"series": series, "median_ms": median * 1e3})
    print(f"\nbaseline: prometheus_client generate_latest, {series} gauges with the same labels: median "
          f"{median * 1e3:.3f} ms ({median / series * 1e6:.2f} us per series)")
    ours = _results.get("full-8")
    if ours:
        print(f"dcgm-collector render (full, 8 GPUs, window families computed per scrape): "
              f"{ours['median_ms']:.3f} ms = {ours['median_ms'] / (median * 1e3):.2f}x the baseline's time "
              f"(target: median <= 2 ms)")
