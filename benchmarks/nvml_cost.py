"""Collector + engine in NVML mode: 8 simulated GPUs at 100 ms with the H200's per-call costs.

Runs ``dcgm-collector -c 100 --watch-interval 100`` (the shipped default
counters) for --seconds in three configurations, each in its own process, one
after the other, in the same run:

- ``sim``: ``--sim 8``, the engine's physics model (the baseline);
- ``nvml``: ``--nvml`` over the simulated libnvidia-ml.so.1 with its default
  per-call costs (those measured on a real H200, reference/nvml/h200-costs.tsv)
  and 8 GPUs (DCGM_SIM_SCENARIO=8): the energy counter is read truly every
  10 s per GPU and estimated from power in between;
- ``naive``: the same with DCGM_ENGINE_NVML_ENERGY_PERIOD_MS=100, the energy
  counter read truly at every sample, to show what a naive read costs.

For each: whole-process CPU (utime + stime of /proc/<pid>/stat over the
measured window, after the first served sample and a warm-up), RSS at the
end, the sampler's ticks and skipped ticks and, when the collector has them,
its late samples and per-field read costs (``dcgm_collector_field_*``
self-metrics, "n/a" otherwise), from two GETs of /metrics that bracket the
window.  A scraper GETs /metrics every 15 s within the window, as Prometheus
would, so rendering is in the figure.  The energy estimate's correction is
shown in mJ and as a share of the energy one GPU draws over one correction
period (served power x period).

    python benchmarks/nvml_cost.py [--seconds 30] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

import _workload as w
from hardware_check import (
    ENERGY_FIELD,
    FieldCost,
    SelfSnapshot,
    delta,
    field_costs,
    fmt,
    parse_exposition,
    self_snapshot,
)

GPUS = 8
COLLECT_MS = 100
WARMUP_S = 5.0
SCRAPE_EVERY_S = 15.0
DEFAULT_ENERGY_PERIOD_S = 10.0      # the engine's DCGM_ENGINE_NVML_ENERGY_PERIOD_MS default
# settings of the engine and the simulated NVML that would change what is measured: cleared for every run
CLEARED_ENV = ("DCGM_SIM_NVML_COSTS", "DCGM_SIM_NVML_TIME_US", "DCGM_SIM_NVML_NO_PERMISSION",
               "DCGM_ENGINE_NVML_ENERGY_PERIOD_MS", "DCGM_ENGINE_NVML_REPLAY_PERIOD_MS", "DCGM_ENGINE_SOURCE",
               "DCGM_COLLECTOR_NVML", "DCGM_SIM_SCENARIO")


@dataclass(frozen=True)
class Config:
    key: str
    title: str
    args: tuple[str, ...]
    env: dict[str, str]
    energy_period_s: float | None    # the configured true-read period of the energy counter (NVML mode)


def configs() -> list[Config]:
    from dcgm_collector.engine import nvml_library_path

    nvml = {"DCGM_ENGINE_NVML_LIB": str(nvml_library_path()), "DCGM_SIM_SCENARIO": str(GPUS)}
    return [
        Config("sim", "(a) --sim 8 (physics model)", ("--sim", str(GPUS)), {}, None),
        Config("nvml", "(b) --nvml, simulated NVML, H200 costs", ("--nvml",), nvml, DEFAULT_ENERGY_PERIOD_S),
        Config("naive", "(c) as (b), energy read at every sample", ("--nvml",),
               {**nvml, "DCGM_ENGINE_NVML_ENERGY_PERIOD_MS": str(COLLECT_MS)}, COLLECT_MS / 1000),
    ]


@dataclass
class Result:
    key: str
    title: str
    gpus: int
    first_sample_s: float
    wall_s: float
    cpu_seconds: float
    cpu_percent: float
    sched_cpu_percent: float          # the same from /proc/<pid>/task/*/schedstat (ns), for comparison
    rss_mib: float
    ticks: float | None
    skipped: float | None
    late: float | None
    scrapes: int
    scrape_failures: int
    power_w: float | None             # mean served DCGM_FI_DEV_POWER_USAGE over the GPUs, at the end
    energy_interval_s: float | None   # the energy field's read cadence: self-metric, else the configured one
    correction_mj: float | None       # largest |correction| of the energy estimate
    costs: list[FieldCost] | None = field(default=None)

    @property
    def correction_percent(self) -> float | None:
        """The correction as a percentage of the energy one GPU draws over one correction period."""
        if self.correction_mj is None or not self.power_w or not self.energy_interval_s:
            return None
        return 100.0 * self.correction_mj / (self.power_w * self.energy_interval_s * 1000.0)


def served_power(samples) -> float | None:
    values = [v for name, labels, v in samples if name == "DCGM_FI_DEV_POWER_USAGE" and "gpu" in labels]
    return statistics.fmean(values) if values else None


def snapshot(url: str) -> tuple[SelfSnapshot, list, float]:
    t = time.monotonic()
    body = w.get(url)
    if body is None:
        raise RuntimeError(f"GET {url} failed")
    samples = parse_exposition(body.decode())
    return self_snapshot(samples), samples, t


def measure(config: Config, seconds: float) -> Result:
    port = w.free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    command = w.collector_command("-a", f"127.0.0.1:{port}", "-c", str(COLLECT_MS), "--watch-interval",
                                  str(COLLECT_MS), *config.args)
    with w.Process(command, config.env) as collector:
        first = w.wait_for(collector, url)
        time.sleep(WARMUP_S)
        before, _, t_before = snapshot(url)
        cpu0, sched0, t0 = w.cpu_seconds(collector.pid), w.thread_cpu_ns(collector.pid), time.monotonic()
        scrapes = failures = 0
        while (left := t0 + seconds - time.monotonic()) > 0:
            next_scrape = t0 + SCRAPE_EVERY_S * (scrapes + failures + 1)
            time.sleep(max(0.0, min(next_scrape - time.monotonic(), left)))
            if time.monotonic() >= t0 + seconds:
                break
            if w.get(url) is None:
                failures += 1
            else:
                scrapes += 1
            collector.check_alive()
        cpu1, sched1, wall = w.cpu_seconds(collector.pid), w.thread_cpu_ns(collector.pid), time.monotonic() - t0
        after, samples, t_after = snapshot(url)
        rss = w.memory_mib(collector.pid)["VmRSS"]
        collector.check_alive()
    sched_ns = sum(ns - sched0.get(tid, 0) for tid, ns in sched1.items())
    interval = (after.interval or {}).get(ENERGY_FIELD) or config.energy_period_s
    correction = None
    for source in (after.correction_max, after.correction):
        if source and ENERGY_FIELD in source:
            correction = abs(source[ENERGY_FIELD])
            break
    return Result(config.key, config.title, GPUS, first, wall, cpu1 - cpu0, 100.0 * (cpu1 - cpu0) / wall,
                  100.0 * sched_ns / 1e9 / wall, rss, delta(before.ticks, after.ticks),
                  delta(before.skipped, after.skipped), delta(before.late, after.late), scrapes, failures,
                  served_power(samples), interval, correction, field_costs(before, after, t_after - t_before))


def print_tables(results: list[Result]) -> None:
    base = results[0]
    print()
    print("| configuration | GPUs | CPU % of a core | CPU % per GPU | RSS MiB | ticks / skipped | late samples "
          "| CPU vs (a) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        ratio = f"{r.cpu_percent / base.cpu_percent:.1f}x" if base.cpu_percent > 0 else "n/a"
        print(f"| {r.title} | {r.gpus} | {r.cpu_percent:.2f} | {r.cpu_percent / r.gpus:.3f} | {r.rss_mib:.1f} | "
              f"{fmt(r.ticks)} / {fmt(r.skipped)} | {fmt(r.late)} | {ratio} |")
    for r in results:
        if r.key != "nvml":
            continue
        print()
        print(f"Per-field read cost, {r.title} (collector self-metrics over {r.wall_s:.0f} s):")
        print()
        print("| field | reads/s | µs per read | share of a core | cadence |")
        print("| --- | --- | --- | --- | --- |")
        if r.costs is None:
            print("| n/a (this collector serves no dcgm_collector_field_reads_total) | n/a | n/a | n/a | n/a |")
        for c in r.costs or []:
            print(f"| {c.field} | {c.reads_per_s:.2f} | {fmt(c.us_per_read, 4)} | "
                  + (f"{c.core_percent:.3f} %" if c.core_percent is not None else "n/a") + " | "
                  + (f"{c.cadence_s * 1000:g} ms" if c.cadence_s is not None else "n/a") + " |")
    print()
    for r in results:
        if r.costs:   # the target of issue 28: what is not an NVML call, against the calls themselves
            reads = sum(c.core_percent or 0.0 for c in r.costs)
            print(f"{r.title}: the NVML reads {reads:.2f} % of a core, everything else {r.cpu_percent - reads:.2f} % "
                  f"({r.cpu_percent:.2f} % in all)")
    print()
    for r in results:
        if r.key == "sim":
            continue
        share = r.correction_percent
        print(f"Energy estimate, {r.title}: largest correction "
              + (f"{r.correction_mj:.1f} mJ" if r.correction_mj is not None else "n/a")
              + (f" = {share:.3f} % of the {r.power_w * r.energy_interval_s / 1000:.2f} kJ a GPU draws in one "
                 f"{r.energy_interval_s:g} s correction period at {r.power_w:.0f} W" if share is not None else "")
              + ".")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured window per configuration (30)")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--only", help="comma-separated configurations to run (sim,nvml,naive); sim is the baseline")
    args = parser.parse_args(argv)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # even when started with SIGINT ignored
    cleared = [name for name in CLEARED_ENV if os.environ.pop(name, None) is not None]
    w.print_machine()
    if cleared:
        print(f"cleared from the environment for the runs: {', '.join(cleared)}")
    chosen = configs()
    if args.only:
        keys = set(args.only.split(","))
        chosen = [c for c in chosen if c.key in keys]
    results = []
    try:
        for config in chosen:
            print(f"{config.title}: {args.seconds:g} s ...", flush=True)
            result = measure(config, args.seconds)
            print(f"  CPU {result.cpu_percent:.2f} % of a core (schedstat {result.sched_cpu_percent:.2f} %), "
                  f"RSS {result.rss_mib:.1f} MiB, first sample {result.first_sample_s:.2f} s, "
                  f"{result.scrapes} scrapes", flush=True)
            results.append(result)
    except KeyboardInterrupt:
        print("interrupted: the collector was stopped", file=sys.stderr)
        return 130
    print_tables(results)
    if args.json:
        data = {"machine": w.machine(), "seconds": args.seconds,
                "results": [{**asdict(r), "correction_percent": r.correction_percent} for r in results]}
        with open(args.json, "w") as out:
            json.dump(data, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
