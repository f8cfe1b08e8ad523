"""Per-process series: what ``--processes`` costs, and whether memory stays flat under churn.

Two figures, each beside a baseline from the same run:

1. 8 simulated H100s with 20 processes each: 160 real ``sleep`` processes this
   script starts, named by pid in a generated scenario, so the collector reads
   each one's /proc as on a node.  The collector runs on the benchmark
   workload's counters first without ``--processes``, then with it (and
   ``--processes-top 20``, so every process has series of its own): its CPU
   share over the measured interval (from /proc) and the median time of a
   /metrics scrape (50 scrapes, one after another), with the number of series
   served.  The ratios are the cost of the feature.
2. Churn: the same 8 GPUs each starting 50 short jobs a second that live one
   second (400 processes a second, 24,000 a minute), ``--processes-top 16``:
   the collector's RSS after a settle and then every 10 s, against the same
   node without ``--processes``.

    python benchmarks/processes.py [--seconds 20] [--churn-seconds 60]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _workload as w

SETTLE_S = 4.0
GPUS, PER_GPU = 8, 20
SCRAPES = 50
SAMPLE_LINE = re.compile(rb"^[A-Za-z_:][^ #\n]* ", re.M)


def scenario_with(pids: list[int], directory: str) -> Path:
    """8 H100s in steady training, each running PER_GPU of ``pids`` with equal shares."""
    lines = ['seed = 5\nname = "bench-processes"\n\n[[gpu]]\nmodel = "H100"\ncount = 8\nworkload = "training"\n']
    for i, pid in enumerate(pids):
        lines.append(f"[[process]]\ngpu = {i // PER_GPU}\npid = {pid}\nfb_bytes = {(256 + 16 * (i % PER_GPU)) << 20}\n"
                     f"sm_share = {1 / PER_GPU:.4f}\nmem_share = {1 / PER_GPU:.4f}\n")
    path = Path(directory) / "processes-160.toml"
    path.write_text("\n".join(lines))
    return path


def churn_scenario(directory: str) -> Path:
    lines = ['seed = 6\nname = "bench-churn"\n\n[[gpu]]\nmodel = "H100"\ncount = 8\nworkload = "training"\n']
    for gpu in range(GPUS):
        lines.append(f"[[process]]\ngpu = {gpu}\npid = {4300000 + 100000 * gpu}\nchurn = 50\nlifetime = 1\n"
                     "fb_bytes = 134217728\n")
    path = Path(directory) / "churn-8.toml"
    path.write_text("\n".join(lines))
    return path


def scrape_ms(url: str) -> tuple[float, int]:
    """Median milliseconds of a /metrics scrape, and the samples in the last one."""
    times, body = [], b""
    for _ in range(SCRAPES):
        start = time.perf_counter()
        body = w.get(url) or b""
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), len(SAMPLE_LINE.findall(body))


def run(scenario: Path, counters: str, seconds: float, *extra: str) -> tuple[w.CpuShare, float, int]:
    port = w.free_port()
    metrics = f"http://127.0.0.1:{port}/metrics"
    with w.start_collector(port, "-f", counters, *extra, sim=str(scenario)) as collector:
        w.wait_for(collector, metrics)
        time.sleep(SETTLE_S)
        share = w.measure_cpu(collector.pid, seconds)
        ms, samples = scrape_ms(metrics)
        collector.check_alive()
    return share, ms, samples


def churn_rss(scenario: Path, counters: str, seconds: float, *extra: str) -> list[float]:
    """RSS MiB after the settle and then every 10 s for ``seconds``."""
    port = w.free_port()
    metrics = f"http://127.0.0.1:{port}/metrics"
    with w.start_collector(port, "-f", counters, *extra, sim=str(scenario)) as collector:
        w.wait_for(collector, metrics)
        time.sleep(SETTLE_S)
        rss = [w.memory_mib(collector.pid)["VmRSS"]]
        start = time.monotonic()
        while time.monotonic() - start < seconds:   # scraped as Prometheus would, so the exposition's costs count
            w.get(metrics)
            time.sleep(1.0)
            if time.monotonic() - start >= 10 * len(rss):
                rss.append(w.memory_mib(collector.pid)["VmRSS"])
        collector.check_alive()
    return rss


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured interval per configuration")
    parser.add_argument("--churn-seconds", type=float, default=60.0, help="length of the churn run")
    args = parser.parse_args(argv)
    w.print_machine()
    sleepers = [subprocess.Popen(["sleep", "3600"]) for _ in range(GPUS * PER_GPU)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            counters = str(w.write_counters(tmp))
            scenario = scenario_with([p.pid for p in sleepers], tmp)
            off, off_ms, off_samples = run(scenario, counters, args.seconds)
            on, on_ms, on_samples = run(scenario, counters, args.seconds, "--processes", "--processes-top",
                                        str(PER_GPU))
            print(f"{GPUS} GPUs x {PER_GPU} real processes: without --processes {off.percent:.2f} % of one core, "
                  f"scrape {off_ms:.2f} ms ({off_samples} samples); with it {on.percent:.2f} %, scrape "
                  f"{on_ms:.2f} ms ({on_samples} samples): CPU {on.percent / off.percent:.2f}x, scrape "
                  f"{on_ms / off_ms:.2f}x; RSS {off.rss_mib:.1f} -> {on.rss_mib:.1f} MiB")
            sys.stdout.flush()
            churn = churn_scenario(tmp)
            base = churn_rss(churn, counters, args.churn_seconds)
            churned = churn_rss(churn, counters, args.churn_seconds, "--processes")
            print(f"churn of {GPUS * 50} processes a second for {args.churn_seconds:g} s, RSS every 10 s: without "
                  f"--processes {' '.join(f'{m:.1f}' for m in base)} MiB; with it "
                  f"{' '.join(f'{m:.1f}' for m in churned)} MiB")
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
