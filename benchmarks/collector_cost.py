"""Whole-process CPU and memory of the real collector, from /proc.

Starts ``dcgm-collector`` as a child process on the benchmark workload (the
shipped default counters plus the profiling set, 8 simulated H100s), waits
for the first served sample, lets it settle, then reads utime + stime of
/proc/<pid>/stat over a measured interval and VmRSS / VmHWM of
/proc/<pid>/status.  A scraper fetches /metrics every 15 s meanwhile, as
Prometheus would.

Configurations:

- ``embedded``: the simulated DCGM engine runs inside the collector process
  (as with ``dcgm-collector --sim``), so the figure includes the simulator's
  own sampling work, which on a real node nv-hostengine does;
- ``remote``: the simulator runs as a hostengine in another process
  (``python -m dcgm_collector.engine hostengine``) and the collector connects
  with ``-r``: the figure comparable to a real node.  The hostengine's own
  CPU is reported beside it.  Skipped when this package has no hostengine
  command yet.

Baseline, same run: an idle Python process that imports the collector's
modules (and numpy) and sleeps: the floor any Python collector starts from.

    python benchmarks/collector_cost.py [--seconds 20] [--only embedded|remote]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time

import _workload as w

from dcgm_collector.catalog.counters import load_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.watches import plan_watches
from dcgm_collector.rings.ring import RingBuffer

SETTLE_S = 3.0
SCRAPE_EVERY_S = 15.0
GPUS = 8
IDLE_IMPORTS = ("import time, numpy, dcgm_collector.cli, dcgm_collector.collect.sampler, "
                "dcgm_collector.expose.exposition, dcgm_collector.serve.server; print('ready', flush=True); "
                "time.sleep(3600)")
TARGETS = {"1000": 0.5, "100": 3.0}    # % of one core, by collect interval (ms)
PER_SAMPLE_TARGET_NS = 1000.0          # the collector's own CPU per sample, as a client of a hostengine


def samples_total(url: str) -> float | None:
    """dcgm_collector_samples_total from one /metrics scrape (None when the scrape failed)."""
    body = w.get(url)
    if body is None:
        return None
    for line in body.decode().splitlines():
        if line.startswith("dcgm_collector_samples_total"):
            return float(line.rsplit(" ", 1)[1])
    return None


def ring_bytes(counters_path: str, gpus: int, collect_ms: int, watch_ms: int, retention_s: float) -> int:
    """Bytes of the value rings' arrays the sampler allocates at start for this configuration."""
    options = SamplingOptions(collect_interval_ms=collect_ms, watch_interval_ms=watch_ms, retention_s=retention_s)
    plan = plan_watches(load_counters(counters_path), options)
    return sum(RingBuffer.bytes_for(gpus * len(g.field_ids), plan.ring_capacity)
               for g in plan.groups if g.kind in ("values", "profiling") and g.entity_level in ("GPU", "NONE"))


class Scraper:
    """GETs /metrics every SCRAPE_EVERY_S on a thread of its own, as one Prometheus would."""

    def __init__(self, url: str) -> None:
        self.url, self._stop = url, threading.Event()
        self.failures = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SCRAPE_EVERY_S):
            if w.get(self.url) is None:
                self.failures += 1

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure_idle(seconds: float) -> w.CpuShare:
    with w.Process(w.python_command(IDLE_IMPORTS)) as idle:
        deadline = time.monotonic() + w.READY_TIMEOUT_S
        while "ready" not in idle.output():
            idle.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError("the idle baseline did not start")
            time.sleep(0.02)
        time.sleep(SETTLE_S)
        return w.measure_cpu(idle.pid, seconds)


def measure_collector(counters: str, collect_ms: int, seconds: float, remote: str | None,
                      engine: w.Process | None) -> dict:
    port = w.free_port()
    args = ["-f", counters, "-c", str(collect_ms), "--watch-interval", str(collect_ms), "--retention", "900"]
    sim = None if remote else str(GPUS)
    if remote:
        args += ["-r", remote]
    url = f"http://127.0.0.1:{port}/metrics"
    with w.start_collector(port, *args, sim=sim) as collector:
        first = w.wait_for(collector, url)
        time.sleep(SETTLE_S)
        start_rss = w.memory_mib(collector.pid)["VmRSS"]
        engine_before = w.thread_cpu_ns(engine.pid) if engine else {}
        samples_before = samples_total(url)
        with Scraper(url) as scraper:
            share = w.measure_cpu(collector.pid, seconds)
        samples_after = samples_total(url)
        engine_share = None
        if engine:
            after = w.thread_cpu_ns(engine.pid)
            engine_share = 100.0 * sum(ns - engine_before.get(t, 0) for t, ns in after.items()) / 1e9 / share.wall
        memory = w.memory_mib(collector.pid)
        collector.check_alive()
        return {"first_sample_s": first, "cpu_percent": share.percent, "cpu_seconds": share.seconds,
                "tick_seconds": share.tick_seconds,
                "wall_s": share.wall, "rss_start_mib": start_rss, "rss_end_mib": memory["VmRSS"],
                "hwm_mib": memory["VmHWM"], "engine_cpu_percent": engine_share, "scrape_failures": scraper.failures,
                "samples": None if samples_before is None or samples_after is None else samples_after - samples_before}


def report(mode: str, collect_ms: int, result: dict, idle: w.CpuShare, rings: int) -> None:
    target = TARGETS[str(collect_ms)]
    verdict = "met" if result["cpu_percent"] <= target else "MISSED"
    print(f"{mode:8} -c {collect_ms:4} --watch-interval {collect_ms:4}: collector CPU {result['cpu_percent']:.3f} % "
          f"of one core ({result['cpu_seconds']:.3f} s over {result['wall_s']:.1f} s; target <= {target} %: "
          f"{verdict}; /proc/<pid>/stat ticks: {result['tick_seconds']:.2f} s); "
          f"idle Python baseline {idle.percent:.3f} %")
    if result["samples"]:
        per_sample = result["cpu_seconds"] / result["samples"] * 1e9
        met = "met" if per_sample <= PER_SAMPLE_TARGET_NS else "MISSED"
        print(f"{'':8} {per_sample:.0f} ns of collector CPU per sample ({result['samples'] / result['wall_s']:.0f} "
              f"samples/s; target <= {PER_SAMPLE_TARGET_NS:.0f} ns as a hostengine's client: {met})")
    if result["engine_cpu_percent"] is not None:
        print(f"{'':8} the hostengine process (simulator) used {result['engine_cpu_percent']:.2f} % of one core "
              "beside it")
    print(f"{'':8} RSS {result['rss_start_mib']:.1f} MiB after start, {result['rss_end_mib']:.1f} MiB at the end, "
          f"peak {result['hwm_mib']:.1f} MiB (idle baseline {idle.rss_mib:.1f} MiB, so the collector adds "
          f"{result['rss_end_mib'] - idle.rss_mib:.1f} MiB); value rings' arrays {rings / w.MIB:.1f} MiB "
          f"at {collect_ms} ms, allocated at start (older rows go to compressed blocks as they come: "
          f"benchmarks/ring_memory.py); first sample served after "
          f"{result['first_sample_s']:.2f} s")
    if result["scrape_failures"]:
        print(f"{'':8} {result['scrape_failures']} scrapes failed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured interval per configuration")
    parser.add_argument("--only", choices=("embedded", "remote"), help="run one mode only")
    parser.add_argument("--intervals", default="1000,100", help="collect intervals, ms (each also the watch one)")
    args = parser.parse_args(argv)
    w.print_machine()
    intervals = [int(x) for x in args.intervals.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        counters = str(w.write_counters(tmp))
        idle = measure_idle(args.seconds)
        print(f"baseline: idle Python importing the package: {idle.percent:.3f} % of one core, "
              f"RSS {idle.rss_mib:.1f} MiB")
        modes = [args.only] if args.only else ["embedded", "remote"]
        for mode in modes:
            if mode == "remote" and not w.hostengine_available():
                print("remote: skipped: `python -m dcgm_collector.engine hostengine` is not available yet")
                continue
            for collect_ms in intervals:
                rings = ring_bytes(counters, GPUS, collect_ms, collect_ms, 900.0)
                if mode == "embedded":
                    result = measure_collector(counters, collect_ms, args.seconds, None, None)
                else:
                    port = w.free_port()
                    with w.start_hostengine(port, str(GPUS)) as engine:
                        w.wait_for_port(engine, port)
                        result = measure_collector(counters, collect_ms, args.seconds, f"127.0.0.1:{port}", engine)
                report(mode, collect_ms, result, idle, rings)
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
