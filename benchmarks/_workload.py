"""What the benchmarks share: the workload's counters file, the machine, a collector process.

Not a benchmark module (the name does not start with ``bench_``); the
pytest modules and the scripts of this folder import it.  Only public
tools are used to measure a process: /proc/<pid>/stat (utime + stime),
/proc/<pid>/status (VmRSS, VmHWM) and the process's own HTTP endpoint.
"""

from __future__ import annotations

import ctypes
import math
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from dcgm_collector.catalog.counters import default_counters_path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
FIRST_SAMPLE = "DCGM_FI_DEV_GPU_TEMP{"
READY_TIMEOUT_S = 30.0

_ROW = re.compile(r"^(?:# )?(DCGM_[A-Z0-9_]+)\s*,")
_PROFILING_ROW = re.compile(r"^(?:# )?DCGM_FI_PROF_[A-Z0-9_]+\s*,")



# DCGM's dcgmFieldValue_v1, for benchmarks that call the simulated libdcgm through ctypes
class FieldValueUnion(ctypes.Union):
    _fields_ = [("i64", ctypes.c_int64), ("dbl", ctypes.c_double), ("str", ctypes.c_char * 256),
                ("blob", ctypes.c_byte * 4096)]


class FieldValueV1(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("fieldId", ctypes.c_ushort), ("fieldType", ctypes.c_ushort),
                ("status", ctypes.c_int), ("ts", ctypes.c_int64), ("value", FieldValueUnion)]


# ---- the workload ------------------------------------------------------------------------

def _rows(path: str, turn_on) -> list[tuple[str, str]]:
    """(metric name, row text) of the rows a counters file has on, plus the commented rows ``turn_on`` picks."""
    rows = []
    for line in Path(path).read_text().splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        if line.startswith("#") and not turn_on(line):
            continue
        rows.append((match.group(1), line.removeprefix("# ")))
    return rows


def write_counters(directory: str | os.PathLike[str], full: bool = False) -> Path:
    """The benchmark workload as one counters file in ``directory``; returns its path.

    The rows the shipped default-counters.csv has on, plus the whole
    profiling set of dcp-metrics.csv (every DCGM_FI_PROF_* row, on or off
    there), each metric once (first row wins).  ``full=True`` turns on every
    row either file lists (the off-by-default violation, ECC, NvLink and
    inforom rows too): the larger set the render figure needs for 1,000
    series on 8 GPUs.
    """
    def profiling(line: str) -> bool:
        return full or bool(_PROFILING_ROW.match(line))

    def everything(line: str) -> bool:
        return full and not line.startswith("# DCGM_EXP_P2P_STATUS")   # not served yet

    seen: dict[str, str] = {}
    for name, row in (_rows(default_counters_path(), everything)
                      + _rows(default_counters_path("dcp-metrics.csv"), profiling)):
        seen.setdefault(name, row)
    path = Path(directory) / ("workload-full.csv" if full else "workload.csv")
    header = "# benchmark workload: shipped default counters + profiling set, de-duplicated\n"
    path.write_text(header + "\n".join(seen.values()) + "\n")
    return path


MIG_INSTANCES_PER_GPU = 7
LINKS_PER_GPU = 18          # the simulated H100's
NVSWITCHES = 4


def mig_scenario(gpus: int) -> str:
    """``gpus`` H100s in training, each split into MIG_INSTANCES_PER_GPU 1g.10gb instances."""
    return (f'seed = 7\n[[gpu]]\nmodel = "H100"\ncount = {gpus}\nworkload = "training"\n'
            f"mig_instances = {MIG_INSTANCES_PER_GPU}\n")


def links_scenario(gpus: int) -> str:
    """``gpus`` H100s in training on an HGX board with NVSWITCHES NvSwitches."""
    return f'seed = 7\nnvswitches = {NVSWITCHES}\n[[gpu]]\nmodel = "H100"\ncount = {gpus}\nworkload = "training"\n'


# Per-link rows: a GPU link's state, and what an NvSwitch port reports (throughput and errors)
LINK_ROWS = ("DCGM_FI_DEV_NVLINK_GET_STATE", "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX",
             "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_RX", "DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS",
             "DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS", "DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERROR_TOTAL",
             "DCGM_FI_DEV_NVSWITCH_LINK_RECOVERY_ERROR_TOTAL")


def write_link_counters(directory: str) -> str:
    """The ``full`` counters plus the per-link rows (LINK_ROWS)."""
    full = os.path.join(directory, "workload-full.csv")
    rows = [f"{name}, gauge, {name}" for name in LINK_ROWS]
    path = os.path.join(directory, "workload-full-links.csv")
    with open(full, encoding="utf-8") as src, open(path, "w", encoding="utf-8") as out:
        out.write(src.read() + "\n".join(rows) + "\n")
    return path


def spikes_scenario(directory: str | os.PathLike[str], gpus: int = 8) -> Path:
    """The shipped spikes workload (300 ms to 100 % every 2 s) on ``gpus`` H100s."""
    path = Path(directory) / f"spikes-{gpus}.toml"
    path.write_text(
        f'seed = 11\nname = "bench-spikes"\n\n[[gpu]]\nmodel = "H100"\ncount = {gpus}\nworkload = "spikes"\n'
        "utilization = 0.05\nspike_utilization = 1.0\nspike_period = 2.0\nspike_length = 0.3\n")
    return path


# ---- the machine --------------------------------------------------------------------------

def machine() -> dict[str, str]:
    """CPU model, cores, memory, kernel, Python and numpy versions of this machine."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    import numpy

    return {
        "cpu": model,
        "cores": f"{len(os.sched_getaffinity(0))} usable of {os.cpu_count()}",
        "memory": memory,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
    }


def print_machine() -> None:
    info = machine()
    print("machine: " + "; ".join(f"{k} {v}" for k, v in info.items()))


# ---- a process, seen through /proc ----------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of the process so far (fields 14 and 15 of /proc/<pid>/stat)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2:].split()   # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """Nanoseconds on CPU of each live thread (first field of /proc/<pid>/task/<tid>/schedstat)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # the thread ended meanwhile
    return out


def memory_mib(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak RSS) of the process, MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


@dataclass
class CpuShare:
    seconds: float        # CPU seconds used in the interval, from schedstat (ns resolution)
    tick_seconds: float   # the same from /proc/<pid>/stat (10 ms ticks, threads that ended included)
    wall: float           # length of the interval
    rss_mib: float

    @property
    def percent(self) -> float:
        """CPU used as a percentage of one core."""
        return 100.0 * self.seconds / self.wall


def measure_cpu(pid: int, seconds: float) -> CpuShare:
    """CPU share of one core the process uses over the next ``seconds``.

    The figure sums the schedstat run time of the threads alive at the end
    (a thread started meanwhile counts whole); a thread that ended within the
    interval (an HTTP connection's) is missing from it but not from the
    coarser tick count, which comes beside it.
    """
    start_ticks, start_threads, start_wall = cpu_seconds(pid), thread_cpu_ns(pid), time.monotonic()
    time.sleep(seconds)
    end_threads, end_ticks, wall = thread_cpu_ns(pid), cpu_seconds(pid), time.monotonic() - start_wall
    used_ns = sum(ns - start_threads.get(tid, 0) for tid, ns in end_threads.items())
    return CpuShare(used_ns / 1e9, end_ticks - start_ticks, wall, memory_mib(pid)["VmRSS"])


# ---- the collector as a process -----------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_command(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def collector_command(*args: str) -> list[str]:
    """The real CLI, run by this interpreter (the installed package, not the source folder)."""
    return python_command("from dcgm_collector.cli import run; run()") + list(args)


class Process:
    """A child process started in an empty directory (so the installed package is imported), stopped with
    SIGTERM on exit."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.command = command
        self._env = {**os.environ, **(env or {})}
        self._cwd = tempfile.TemporaryDirectory(prefix="dcgm-bench-")
        self._log = tempfile.TemporaryFile()
        self.started = time.monotonic()
        self.popen = subprocess.Popen(command, cwd=self._cwd.name, env=self._env, stdout=self._log,
                                      stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise RuntimeError(f"{' '.join(self.command[3:]) or self.command} exited with "
                               f"{self.popen.returncode}:\n{self.output()}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()
        self._cwd.cleanup()

    def __enter__(self) -> Process:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def get(url: str, timeout: float = 5.0) -> bytes | None:
    """The body of a 200 answer, None for any other answer or a refused connection."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def wait_for(process: Process, url: str, needle: str = FIRST_SAMPLE, timeout: float = READY_TIMEOUT_S,
             poll_s: float = 0.005) -> float:
    """Seconds from the process's start until ``url`` answers 200 with ``needle`` in the body."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = get(url, timeout=2.0)
        if body is not None and needle.encode() in body:
            return time.monotonic() - process.started
        process.check_alive()
        time.sleep(poll_s)
    raise TimeoutError(f"{url} had no {needle!r} after {timeout:g} s:\n{process.output()}")


def start_collector(port: int, *args: str, sim: str | None = "8", env: dict[str, str] | None = None) -> Process:
    """``dcgm-collector -a 127.0.0.1:PORT --sim SIM ARGS`` as a child process; with ``sim=None`` the
    simulator's library is given with --dcgm-lib instead (for -r: a client of a hostengine, no engine
    in the collector's process)."""
    from dcgm_collector.engine import library_path

    chosen = ["--sim", sim] if sim else ["--dcgm-lib", str(library_path())]
    command = collector_command("-a", f"127.0.0.1:{port}", *chosen, *args)
    return Process(command, env)


def hostengine_available() -> bool:
    """Whether this package's simulator can run as a hostengine (``python -m dcgm_collector.engine hostengine``)."""
    probe = subprocess.run([sys.executable, "-m", "dcgm_collector.engine", "hostengine", "--help"],
                           capture_output=True, cwd=tempfile.gettempdir())
    return probe.returncode == 0


def start_hostengine(port: int, scenario: str = "8") -> Process:
    return Process([sys.executable, "-m", "dcgm_collector.engine", "hostengine", "--port", str(port),
                    "--scenario", scenario])


def wait_for_port(process: Process, port: int, timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            process.check_alive()
            time.sleep(0.02)
    raise TimeoutError(f"nothing listens on port {port} after {timeout:g} s:\n{process.output()}")


def median(values) -> float:
    return statistics.median(values)


def percentile(values, q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


# ---- the prometheus_client baseline -----------------------------------------------------------

def registry_like(body: bytes):
    """(registry, series): a prometheus_client registry of labelled Gauges holding the series of a
    rendered /metrics body, with the same names, labels and values."""
    from prometheus_client import CollectorRegistry, Gauge
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    gauges: dict = {}
    count = 0
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            names = tuple(sample.labels)
            if sample.name not in gauges:
                gauges[sample.name] = (Gauge(sample.name, family.documentation or sample.name, names,
                                             registry=registry), names)
            gauge, expected = gauges[sample.name]
            if names != expected:
                continue  # a family whose series carry different label names (none in this workload)
            (gauge.labels(*sample.labels.values()) if names else gauge).set(sample.value)
            count += 1
    return registry, count
