"""NVML mode against the peers that read NVML themselves: nvitop-exporter and a plain pynvml exporter.

Each runs in its own process over the package's simulated libnvidia-ml.so.1
(8 GPUs, DCGM_SIM_SCENARIO=8; every call pays the H200's measured cost, the
simulated library's default), one after the other, at a 1 s and a 100 ms
interval, and is scraped every 15 s as Prometheus would:

- ``dcgm-collector --nvml -c MS --watch-interval MS``: the shipped default
  counters, every sample kept in the rings (an hour);
- ``nvitop-exporter --interval S`` (``pip install nvitop-exporter``; the row
  is left out when it is not installed): its own set, nothing kept between
  updates; it refuses intervals under 250 ms, so at 100 ms it runs at 250;
- a plain pynvml exporter (below, ``PYNVML_EXPORTER``): twelve NVML reads per
  GPU per interval into prometheus_client gauges, nothing kept: the loop an
  operator writes by hand.  It reads fewer fields than the collector serves.

For each: CPU as a share of one core (utime + stime of /proc/<pid>/stat over
the window, after a warm-up) and RSS at the end, and the collector's ratio to
each peer at the same interval.

    python benchmarks/nvml_peers.py [--seconds 30] [--intervals 1000,100]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import _workload as w

GPUS = 8
WARMUP_S = 5.0
SCRAPE_EVERY_S = 15.0
NVITOP_SHORTEST_MS = 250   # nvitop-exporter's --interval floor

# the hand-written exporter: argv is port and interval in seconds
PYNVML_EXPORTER = r"""
import sys, time
import pynvml
from prometheus_client import Gauge, start_http_server

port, interval = int(sys.argv[1]), float(sys.argv[2])
pynvml.nvmlInit()
handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
names = ("gpu_util", "mem_copy_util", "fb_used", "fb_free", "gpu_temp", "power_usage", "sm_clock", "mem_clock",
         "total_energy", "enc_util", "dec_util", "pcie_replay")
gauges = {name: Gauge(name, name, ["gpu"]) for name in names}
start_http_server(port, addr="127.0.0.1")
next_at = time.monotonic()
while True:
    for index, h in enumerate(handles):
        util = pynvml.nvmlDeviceGetUtilizationRates(h)
        memory = pynvml.nvmlDeviceGetMemoryInfo(h)
        values = (util.gpu, util.memory, memory.used, memory.free,
                  pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                  pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
                  pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                  pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                  pynvml.nvmlDeviceGetTotalEnergyConsumption(h),
                  pynvml.nvmlDeviceGetEncoderUtilization(h)[0],
                  pynvml.nvmlDeviceGetDecoderUtilization(h)[0],
                  pynvml.nvmlDeviceGetPcieReplayCounter(h))
        for name, value in zip(names, values):
            gauges[name].labels(str(index)).set(value)
    next_at += interval
    time.sleep(max(0.0, next_at - time.monotonic()))
"""


@dataclass
class Run:
    name: str
    interval_ms: int
    cpu_percent: float
    rss_mib: float
    series: int


def nvml_env() -> dict[str, str]:
    from dcgm_collector.engine import nvml_library_dir, nvml_library_path

    # the peers load libnvidia-ml.so.1 by name: the dynamic linker finds the simulated one first
    return {"LD_LIBRARY_PATH": str(nvml_library_dir()), "DCGM_ENGINE_NVML_LIB": str(nvml_library_path()),
            "DCGM_SIM_SCENARIO": str(GPUS)}


def nvitop_exporter() -> str | None:
    """nvitop-exporter beside this interpreter (a virtual environment not activated), else on PATH."""
    beside = Path(sys.executable).parent / "nvitop-exporter"
    return str(beside) if beside.is_file() else shutil.which("nvitop-exporter")


def commands(interval_ms: int) -> dict[str, Callable[[int], list[str]]]:
    """Each exporter's command line for a port."""
    seconds = f"{interval_ms / 1000:g}"
    out: dict[str, Callable[[int], list[str]]] = {
        "dcgm-collector --nvml": lambda port: w.collector_command(
            "-a", f"127.0.0.1:{port}", "--nvml", "-c", str(interval_ms), "--watch-interval", str(interval_ms))}
    exporter = nvitop_exporter()
    if exporter is not None:
        # it refuses an interval under 0.25 s: at 100 ms it runs at its shortest, and the row says so
        shortest = max(interval_ms, NVITOP_SHORTEST_MS)
        name = "nvitop-exporter" + (f" (at {shortest} ms, its shortest)" if shortest != interval_ms else "")
        out[name] = lambda port: [exporter, "--bind-address", "127.0.0.1", "--port", str(port),
                                  "--interval", f"{shortest / 1000:g}"]
    out["pynvml loop"] = lambda port: w.python_command(PYNVML_EXPORTER) + [str(port), seconds]
    return out


def series_count(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def measure(name: str, command: list[str], port: int, interval_ms: int, seconds: float) -> Run:
    url = f"http://127.0.0.1:{port}/metrics"
    with w.Process(command, nvml_env()) as process:
        deadline = time.monotonic() + w.READY_TIMEOUT_S
        while w.get(url, timeout=2.0) is None:
            process.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: {url} did not answer:\n{process.output()}")
            time.sleep(0.05)
        time.sleep(WARMUP_S)
        cpu0, t0 = w.cpu_seconds(process.pid), time.monotonic()
        next_scrape, body = t0, b""
        while time.monotonic() - t0 < seconds:
            if time.monotonic() >= next_scrape:
                body = w.get(url) or body
                next_scrape += SCRAPE_EVERY_S
            time.sleep(0.1)
        process.check_alive()
        cpu = 100.0 * (w.cpu_seconds(process.pid) - cpu0) / (time.monotonic() - t0)
        return Run(name, interval_ms, cpu, w.memory_mib(process.pid)["VmRSS"], series_count(body))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured window per run [%(default)s]")
    parser.add_argument("--intervals", default="1000,100", help="intervals in ms [%(default)s]")
    args = parser.parse_args(argv)
    w.print_machine()
    if nvitop_exporter() is None:
        print("nvitop-exporter is not installed (pip install nvitop-exporter): its rows are left out")
    runs: list[Run] = []
    for interval_ms in (int(ms) for ms in args.intervals.split(",")):
        for name, command in commands(interval_ms).items():
            port = w.free_port()
            print(f"{name}, {interval_ms} ms: {args.seconds:g} s ...", flush=True)
            run = measure(name, command(port), port, interval_ms, args.seconds)
            print(f"  CPU {run.cpu_percent:.2f} % of a core, RSS {run.rss_mib:.1f} MiB, {run.series} series",
                  flush=True)
            runs.append(run)
    print()
    print("| interval | exporter | CPU % of a core | RSS MiB | series served | collector's CPU against it |")
    print("| --- | --- | --- | --- | --- | --- |")
    for run in runs:
        ours = next(r for r in runs if r.interval_ms == run.interval_ms and r.name.startswith("dcgm-collector"))
        ratio = f"{ours.cpu_percent / run.cpu_percent:.2f}x" if run.cpu_percent > 0 else "n/a"
        print(f"| {run.interval_ms} ms | {run.name} | {run.cpu_percent:.2f} | {run.rss_mib:.1f} | {run.series} | "
              f"{ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
