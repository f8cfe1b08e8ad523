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
- ``full-mig``: the ``full`` set on 8 H100s each split into seven 1g.10gb
  MIG instances, sampled as the collector samples them in flex mode (every
  series per GPU instance; the rows DCGM serves per GPU only, GPU and
  memory-copy utilisation, have no series).  Its figure is a ratio to the
  ``full`` 8-GPU render of the same run.  No links: a GPU in MIG mode has
  none (DCGM reports its NvLinks off).
- ``full-links``: the ``full`` set plus per-link rows (a GPU link's state, an
  NvSwitch port's throughput and errors: LINK_ROWS) on 8 H100s of an HGX board (18 NvLinks each) with its four
  NvSwitches (36 ports each): the link and switch-port series of a whole
  board.  Also a ratio to the ``full`` 8-GPU render of the same run.

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
from dcgm_collector.catalog.counters import load_counters
from dcgm_collector.collect.discovery import discover
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.model import DeviceSelection

WINDOW_ROWS = 150          # 15 s at 100 ms
STEP_US = 100_000
ALL_AGGREGATIONS = ("min", "max", "avg")
CASES = [("full", 1), ("full", 8), ("full", 32), ("workload", 8), ("full-mig", 8), ("full-links", 8)]
MIG_INSTANCES_PER_GPU, LINKS_PER_GPU, NVSWITCHES = w.MIG_INSTANCES_PER_GPU, w.LINKS_PER_GPU, w.NVSWITCHES


_results: dict[str, dict] = {}


class RenderNode:
    def __init__(self, handle: dcgm.Handle, counters_path: str, aggregations: tuple[str, ...]) -> None:
        # as the collector does in flex mode: GPUs split into MIG instances are sampled through them
        topology = discover(handle, load_counters(counters_path), DeviceSelection("f"))
        self.instances = len(topology.instances)
        self.links = sum(1 for entity in topology.levels if entity.level == dcgm.EntityType.LINK)
        self.sampler = Sampler(handle, topology.counters,
                               SamplingOptions(collect_interval_ms=100, watch_interval_ms=100, retention_s=900),
                               gpu_ids=topology.gpu_ids, instances=topology.instances, levels=topology.levels)
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
        self.exposition = Exposition(target_view(self.sampler), topology.gpus,
                                     ExpositionOptions(aggregations=aggregations), version="bench")
        self.ring_bytes = sum(ring.nbytes for ring in self.sampler.rings.values())

    def render(self) -> bytes:
        return self.exposition.render(now_us=self.now_us)


@pytest.fixture(scope="module")
def counters_dir():
    with tempfile.TemporaryDirectory() as tmp:
        w.write_counters(tmp)
        w.write_counters(tmp, full=True)
        w.write_link_counters(tmp)
        yield tmp


def _open(counters_dir: str, kind: str, gpus: int):
    previous = os.environ.get(engine.SCENARIO_ENV)
    spec = str(gpus)
    if kind in ("full-mig", "full-links"):
        spec = os.path.join(counters_dir, f"{kind}-{gpus}.toml")
        with open(spec, "w", encoding="utf-8") as handle:
            handle.write(w.mig_scenario(gpus) if kind == "full-mig" else w.links_scenario(gpus))
    os.environ[engine.SCENARIO_ENV] = spec
    try:
        handle = dcgm.Handle.embedded("manual", library=engine.library_path())
    finally:
        if previous is None:
            os.environ.pop(engine.SCENARIO_ENV, None)
        else:
            os.environ[engine.SCENARIO_ENV] = previous
    full = kind.startswith("full")
    path = os.path.join(counters_dir, "workload-full-links.csv" if kind == "full-links"
                        else "workload-full.csv" if full else "workload.csv")
    return handle, RenderNode(handle, path, ALL_AGGREGATIONS if full else ())


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
                "ring_mib": node.ring_bytes / w.MIB, "mig_instances": node.instances, "links": node.links,
                "body": body}
        _results[f"{kind}-{gpus}"] = info
        benchmark.extra_info.update({k: v for k, v in info.items() if k != "body"})
        entities = (f"{gpus} GPUs" + (f" / {node.instances} MIG instances" if node.instances else "")
                    + (f" / {node.links} NvLinks and NvSwitch ports" if node.links else ""))
        print(f"\nrender {kind} counters, {entities}: {series} series, {len(body)} bytes, median "
              f"{median * 1e3:.3f} ms ({median / series * 1e6:.2f} us per series); value rings "
              f"{node.ring_bytes / w.MIB:.1f} MiB (15 min at 100 ms)")
        plain = _results.get(f"full-{gpus}")
        if kind in ("full-mig", "full-links") and plain is not None:
            what = "MIG" if kind == "full-mig" else f"{LINKS_PER_GPU} links per GPU + {NVSWITCHES} NvSwitches"
            print(f"{what} / plain {gpus} GPUs, same run: time {median * 1e3 / plain['median_ms']:.2f}x, series "
                  f"{series / plain['series']:.2f}x, bytes {len(body) / plain['bytes']:.2f}x, per series "
                  f"{(median * 1e3 / series) / (plain['median_ms'] / plain['series']):.2f}x")
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
