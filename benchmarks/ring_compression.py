"""Bytes per sample the compressed rings keep, on every shipped scenario.

Each scenario runs on the embedded simulated engine in a child process (one
engine per process) with the shipped default counters, DCGM sampling every
100 ms, for ``--seconds``; the rows the sampler's rings got are then written
into rings of an hour's retention, whose complete blocks of 256 rows are
compressed as the collector compresses them.  Printed per scenario: the
encoded bytes per sample of those blocks, against the 9 bytes a sample (a
float64 and a status byte, and the row's int64 timestamp shared by its
cells) the rings kept before compression, as a ratio measured on the same
rows.  MIG and NvSwitch/NvLink nodes are among the scenarios (mig,
nvswitch-grace); the last lines project the memory of the two largest
layouts the fixed rings made expensive.

    python benchmarks/ring_compression.py [--seconds 60] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import _workload as w

from dcgm_collector.engine import shipped_scenarios

CHILD = r"""
import json, os, sys, time
from pathlib import Path
import numpy as np
import dcgm_collector.engine as engine
from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.dcgm import Handle, load_library
from dcgm_collector.rings.ring import RingBuffer, SAMPLE_ABSENT

scenario, seconds = sys.argv[1], float(sys.argv[2])
counters = parse_counters((Path(engine.__file__).parent.parent / "data" / "default-counters.csv").read_text())
os.environ["DCGM_SIM_SCENARIO"] = str(Path(engine.__file__).parent / "scenarios" / f"{scenario}.toml")
handle = Handle.embedded("auto", library=load_library(engine.library_path()))
options = SamplingOptions(collect_interval_ms=100, watch_interval_ms=100, retention_s=3600)
totals = {"encoded_bytes": 0, "block_samples": 0, "rows": 0, "series": 0, "cells": 0, "plain_bytes": 0}
with Sampler(handle, counters, options) as sampler:
    time.sleep(seconds)
    rings = list(sampler.rings.values())
    for ring in rings:
        rows = ring.rows_since(0)
        again = RingBuffer(ring.series, capacity=36_000)
        again.append(rows.ts, rows.values, rows.status)
        encoded, samples = again.encoded
        sealed = (len(rows.ts) // 256) * 256
        present = int((rows.status[:sealed] != SAMPLE_ABSENT).sum())
        assert samples == present, (samples, present)
        totals["encoded_bytes"] += encoded
        totals["block_samples"] += samples
        totals["rows"] += len(rows.ts)
        totals["series"] += ring.n_series
        # what the same sealed rows took in the fixed rings: 8 + 1 bytes a cell and 8 a row
        totals["plain_bytes"] += sealed * (8 + 9 * ring.n_series)
        totals["cells"] += sealed * ring.n_series
handle.close()
print(json.dumps(totals))
"""


def measure(scenario: str, seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as empty:   # so the installed package is imported, not the checkout
        done = subprocess.run([sys.executable, "-c", CHILD, scenario, str(seconds)], cwd=empty,
                              capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"rc {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="sampling per scenario [%(default)s]")
    parser.add_argument("--jobs", type=int, default=2, help="scenarios at once [%(default)s]")
    args = parser.parse_args(argv)
    w.print_machine()
    names = shipped_scenarios()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(names, pool.map(lambda n: measure(n, args.seconds), names), strict=True))
    print(f"\n{'scenario':24} {'series':>7} {'samples':>9} {'bytes/sample':>13} {'fixed rings':>12} {'ratio':>7}")
    worst = 0.0
    for name, r in results.items():
        if "error" in r:
            print(f"{name:24} failed: {r['error']}")
            continue
        if not r["block_samples"]:
            print(f"{name:24} {r['series']:7} no complete block in {args.seconds:g} s")
            continue
        per_sample = r["encoded_bytes"] / r["block_samples"]
        fixed = r["plain_bytes"] / r["block_samples"]
        worst = max(worst, per_sample)
        print(f"{name:24} {r['series']:7} {r['block_samples']:9} {per_sample:13.2f} {fixed:12.2f} "
              f"{fixed / per_sample:6.1f}x")
    print(f"\nlargest: {worst:.2f} bytes per sample (target: at most 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
