"""The collector against NVIDIA's own DcgmReader, reading the same fields at the same rate, every sample kept.

NVIDIA's Python bindings (DcgmReader and the modules it imports, from
NVIDIA/DCGM testing/python3) are not part of this project: point
DCGM_NVIDIA_BINDINGS at that folder of a DCGM source checkout; without it
this script says so and stops.  DcgmReader then runs unchanged on the
package's libdcgm.so.4, as it would on a real one.

Both read the benchmark workload (the default counters plus the profiling
set, 8 simulated H100s) every 100 ms, watched at 100 ms, keeping every
sample: the collector drains DCGM's cache with its cursor into its rings;
DcgmReader calls GetAllGpuValuesAsFieldIdDictSinceLastCall every 100 ms (each
sample since its previous call, as a dict of value objects).

- ``remote``: both are clients of one hostengine (``python -m
  dcgm_collector.engine hostengine``), the comparison for a real node;
- ``embedded``: each runs the engine in its own process (``--sim 8`` and
  DcgmReader with hostname None), the engine's sampling included.

The collector's CPU comes from /proc over the measured interval, with
/metrics scraped every 15 s; DcgmReader's from its own process time over
the same interval.  Runs alternate, collector first, and the ratio is of
the medians.

    DCGM_NVIDIA_BINDINGS=.../testing/python3 python benchmarks/dcgm_reader.py [--seconds 20] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import _workload as w
from collector_cost import Scraper, samples_total

from dcgm_collector.catalog.counters import load_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.watches import plan_watches

BINDINGS_ENV = "DCGM_NVIDIA_BINDINGS"
INTERVAL_MS = 100
SETTLE_S = 3.0

# DcgmReader in a child interpreter: primes its cursor, settles, then polls on a fixed grid for the
# measured interval and prints its own CPU time and the samples it got.
READER = textwrap.dedent("""
    import json, sys, time
    import DcgmReader
    host, fields, interval, settle, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), \\
        float(sys.argv[5])
    reader = DcgmReader.DcgmReader(hostname=None if host == "embedded" else host,
                                   fieldIds=[int(f) for f in fields.split(",")],
                                   updateFrequency=int(interval * 1e6))
    reader.Init()
    def poll():
        got = reader.GetAllGpuValuesAsFieldIdDictSinceLastCall()
        return sum(len(values) for per_gpu in got.values() for values in per_gpu.values())
    poll()   # the first call only primes the cursor
    origin = time.monotonic()
    k, samples, started = 0, 0, None
    while True:
        k += 1
        delay = origin + k * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        now = time.monotonic()
        if started is None and now - origin >= settle:
            started, cpu0, samples = now, time.process_time(), 0
        got = poll()
        if started is not None:
            samples += got
            if now - started >= seconds:
                break
    print(json.dumps({"cpu_s": time.process_time() - cpu0, "wall_s": time.monotonic() - started,
                      "samples": samples}), flush=True)
    reader.Shutdown()
""")


def gpu_field_ids(counters: str) -> list[int]:
    """The GPU-level fields the collector samples for these counters (values, profiling, events)."""
    plan = plan_watches(load_counters(counters), SamplingOptions(collect_interval_ms=INTERVAL_MS,
                                                                   watch_interval_ms=INTERVAL_MS))
    ids = [f for g in plan.groups if g.kind in ("values", "profiling", "events") and g.entity_level in ("GPU", "NONE")
           for f in g.field_ids]
    return list(dict.fromkeys(ids))


def run_reader(bindings: Path, host: str, fields: list[int], seconds: float, workdir: str) -> dict:
    from dcgm_collector.engine import library_dir

    script = Path(workdir) / "dcgm_reader_poll.py"
    script.write_text(READER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_SIM_", "DCGM_ENGINE_"))}
    env["PYTHONPATH"] = str(bindings)
    env["LD_LIBRARY_PATH"] = str(library_dir())
    if host == "embedded":
        env["DCGM_SIM_SCENARIO"] = "8"
    command = [sys.executable, str(script), host, ",".join(map(str, fields)), str(INTERVAL_MS / 1000),
               str(SETTLE_S), str(seconds)]
    with w.Process(command, env=env) as reader:
        deadline = time.monotonic() + SETTLE_S + seconds + 60
        while reader.popen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        out = reader.output()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"DcgmReader printed no result:\n{out[-2000:]}")
    result = json.loads(lines[-1])
    return {"cpu_percent": 100 * result["cpu_s"] / result["wall_s"], "samples": result["samples"],
            "cpu_s": result["cpu_s"], "wall_s": result["wall_s"]}


def run_collector(counters: str, seconds: float, remote: str | None) -> dict:
    port = w.free_port()
    args = ["-f", counters, "-c", str(INTERVAL_MS), "--watch-interval", str(INTERVAL_MS), "--retention", "900"]
    if remote:
        args += ["-r", remote]
    url = f"http://127.0.0.1:{port}/metrics"
    with w.start_collector(port, *args, sim=None if remote else "8") as collector:
        w.wait_for(collector, url)
        time.sleep(SETTLE_S)
        before = samples_total(url)
        with Scraper(url):
            share = w.measure_cpu(collector.pid, seconds)
        after = samples_total(url)
        collector.check_alive()
    return {"cpu_percent": share.percent, "samples": (after or 0) - (before or 0), "cpu_s": share.seconds,
            "wall_s": share.wall}


def describe(name: str, result: dict) -> str:
    per_sample = result["cpu_s"] / result["samples"] * 1e9 if result["samples"] else float("nan")
    return (f"{name} {result['cpu_percent']:.3f} % of one core, {result['samples'] / result['wall_s']:.0f} "
            f"samples/s, {per_sample:.0f} ns per sample")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured interval of each run")
    parser.add_argument("--runs", type=int, default=2, help="runs of each, alternating")
    parser.add_argument("--only", choices=("remote", "embedded"), help="one configuration only")
    args = parser.parse_args(argv)
    configured = os.environ.get(BINDINGS_ENV)
    if not configured or not (Path(configured) / "DcgmReader.py").is_file():
        print(f"skipped: set {BINDINGS_ENV} to NVIDIA/DCGM testing/python3 of a DCGM source checkout "
              "(the folder that holds DcgmReader.py)")
        return 0
    bindings = Path(configured)
    w.print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        counters = str(w.write_counters(tmp))
        fields = gpu_field_ids(counters)
        print(f"workload: {len(fields)} GPU fields on 8 simulated GPUs, every {INTERVAL_MS} ms, every sample kept")
        for mode in [args.only] if args.only else ["remote", "embedded"]:
            ours, theirs = [], []
            for _ in range(args.runs):
                if mode == "remote":
                    port = w.free_port()
                    with w.start_hostengine(port, "8") as engine:
                        w.wait_for_port(engine, port)
                        ours.append(run_collector(counters, args.seconds, f"127.0.0.1:{port}"))
                        theirs.append(run_reader(bindings, f"127.0.0.1:{port}", fields, args.seconds, tmp))
                else:
                    ours.append(run_collector(counters, args.seconds, None))
                    theirs.append(run_reader(bindings, "embedded", fields, args.seconds, tmp))
                print(f"{mode:8} {describe('collector', ours[-1])}; {describe('DcgmReader', theirs[-1])}")
                sys.stdout.flush()
            mine = w.median([r["cpu_percent"] for r in ours])
            nvidia = w.median([r["cpu_percent"] for r in theirs])
            print(f"{mode:8} medians: collector {mine:.3f} %, DcgmReader {nvidia:.3f} % of one core: "
                  f"the collector uses {nvidia / mine:.1f}x less CPU (target >= 10x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
