"""Soak: many hostengine kills and restarts under steady scraping; does the collector grow?

Runs a simulated nv-hostengine (``python -m dcgm_collector.engine hostengine``)
and a collector (``python -m dcgm_collector -r``) as subprocesses.  While
scraper threads GET /metrics and /health in a loop, the hostengine is killed
with SIGKILL and restarted on the same port, ``--reconnects`` times; each
time the script waits until the collector says it is down, then until it
serves fresh values again (``dcgm_collector_up 1`` and a sample younger
than a second).  The collector's threads, open file descriptors and RSS
(from /proc/<pid>) are read once settled before the first kill and again
after the last, with no scraper connected.

    python benchmarks/soak.py                                   # ~1 minute: 20 reconnects, 1 min of scrapes
    python benchmarks/soak.py --reconnects 200 --scrape-minutes 1
    python benchmarks/soak.py --reconnects 3000 --scrape-minutes 60 --kill-every 1   # the long soak

The run lasts until both are done: the scrapers scrape for at least
``--scrape-minutes`` and go on until the last reconnect.  ``--kill-every S``
spaces the kills at least S seconds apart (default: as fast as the collector
comes back, about one a second), so an hour-long soak can spread its kills
over the hour.  Exit status 0 when every reconnect came back, no scrape
failed, and the thread and fd counts are as before; 1 otherwise.
DCGM_SIM_REQUEST_TIMEOUT_MS is set to 2000 (a simulator-only variable).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

READY_S = 20.0
SERVING = re.compile(r"serving http://127\.0\.0\.1:(\d+)/metrics")
LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")
UP = re.compile(r"^dcgm_collector_up (\S+)$", re.M)
AGE = re.compile(r"^dcgm_collector_last_sample_age_seconds (\S+)$", re.M)
RECONNECTS = re.compile(r"^dcgm_collector_reconnects_total (\S+)$", re.M)


class Child:
    """A subprocess whose output goes to a log file."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], name: str) -> None:
        self.log_path = cwd / f"{name}.log"
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=out,
                                         stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, pattern: re.Pattern, start: int = 0) -> re.Match:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            match = pattern.search(self.log()[start:])
            if match:
                return match
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.proc.args} exited ({self.proc.returncode}):\n{self.log()[-2000:]}")
            time.sleep(0.01)
        raise SystemExit(f"no {pattern.pattern!r} from {self.proc.args} within {READY_S} s")

    def end(self, signum: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DCGM_EXPORTER_", "DCGM_COLLECTOR_", "DCGM_SIM_", "DCGM_REMOTE_"))}
    env["DCGM_SIM_REQUEST_TIMEOUT_MS"] = "2000"
    return env


def start_hostengine(cwd: Path, port: int, scenario: str) -> tuple[Child, int]:
    mark = len((cwd / "hostengine.log").read_text(errors="replace")) if (cwd / "hostengine.log").exists() else 0
    engine = Child(["-m", "dcgm_collector.engine", "hostengine", "--address", "127.0.0.1", "--port", str(port),
                    "--scenario", scenario], cwd, child_env(), "hostengine")
    try:
        return engine, int(engine.wait_log(LISTENING, mark)[1])
    except SystemExit:
        engine.end(signal.SIGKILL)
        raise


def get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def fresh(body: bytes) -> bool:
    text = body.decode()
    up, age = UP.search(text), AGE.search(text)
    return bool(up and age) and up[1] == "1" and float(age[1]) < 1.0


def usage(pid: int) -> tuple[int, int, float]:
    """(threads, open fds, RSS MiB) of a process, from /proc."""
    threads = len(os.listdir(f"/proc/{pid}/task"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss_kib = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    return threads, fds, rss_kib / 1024


def settled_usage(pid: int) -> tuple[int, int, float]:
    """usage() once threads and fds read the same twice, 0.5 s apart (a request thread may be ending)."""
    previous = usage(pid)
    for _ in range(40):
        time.sleep(0.5)
        now = usage(pid)
        if now[:2] == previous[:2]:
            return now
        previous = now
    return previous


def wait_until(predicate, timeout: float, what: str) -> float:
    """Seconds until predicate() held; SystemExit after timeout."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.01)
    return time.monotonic() - started


class Scraper(threading.Thread):
    def __init__(self, port: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.stop = port, stop
        self.latencies: list[float] = []
        self.failures: list[str] = []

    def run(self) -> None:
        paths = ("/metrics",) * 9 + ("/health",)
        i = 0
        while not self.stop.is_set():
            path = paths[i % len(paths)]
            i += 1
            started = time.monotonic()
            try:
                status, body = get(self.port, path)
            except OSError as error:
                self.failures.append(f"{path}: {type(error).__name__}: {error}")
                continue
            self.latencies.append(time.monotonic() - started)
            # /health is 503 while the hostengine is down; /metrics must always answer
            if (path == "/metrics" and (status != 200 or b"dcgm_collector_up" not in body)) or \
                    (path == "/health" and status not in (200, 503)):
                self.failures.append(f"{path}: HTTP {status}: {body[:200]!r}")


def percentiles(values: list[float], unit: float = 1000.0, suffix: str = "ms") -> str:
    if not values:
        return "none"
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * unit

    return (f"p50 {at(0.5):.0f} {suffix}, p90 {at(0.9):.0f} {suffix}, p99 {at(0.99):.0f} {suffix}, "
            f"max {ordered[-1] * unit:.0f} {suffix} (n={len(ordered)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reconnects", type=int, default=20, help="hostengine kills and restarts [%(default)s]")
    parser.add_argument("--scrape-minutes", type=float, default=1.0, help="least time to scrape [%(default)s]")
    parser.add_argument("--scrapers", type=int, default=4, help="scraper threads [%(default)s]")
    parser.add_argument("--kill-every", type=float, default=0.0, help="least seconds between kills [%(default)s]")
    parser.add_argument("--gpus", default="8", help="the hostengine's scenario: a GPU count or a file [8]")
    parser.add_argument("--collect-ms", type=int, default=200, help="the collector's -c [%(default)s]")
    args = parser.parse_args(argv)

    from dcgm_collector.engine import library_path

    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        cwd = Path(tmp)
        engine, port = start_hostengine(cwd, 0, args.gpus)
        engines = [engine]   # soak() appends each restarted one: the last is still running at the end
        collector = Child(["-m", "dcgm_collector", "--dcgm-lib", str(library_path()), "-r", f"127.0.0.1:{port}",
                           "-a", "127.0.0.1:0", "-c", str(args.collect_ms), "--watch-interval",
                           str(min(100, args.collect_ms))], cwd, child_env(), "collector")
        try:
            return soak(args, cwd, engines, port, collector)
        finally:
            collector.end()
            for engine in engines:
                engine.end()


def soak(args, cwd: Path, engines: list[Child], port: int, collector: Child) -> int:
    http_port = int(collector.wait_log(SERVING)[1])
    pid = collector.proc.pid
    wait_until(lambda: fresh(get(http_port, "/metrics")[1]), READY_S, "the first fresh samples")
    time.sleep(2.0)   # past start-up: the first label refresh, health check, scrape buffers
    before = settled_usage(pid)
    print(f"collector pid {pid}, hostengine 127.0.0.1:{port} ({args.gpus} GPUs), -c {args.collect_ms}")
    print(f"before: threads {before[0]}, fds {before[1]}, RSS {before[2]:.1f} MiB")

    stop = threading.Event()
    scrapers = [Scraper(http_port, stop) for _ in range(args.scrapers)]
    for scraper in scrapers:
        scraper.start()
    started = time.monotonic()
    detect_s, restart_to_fresh_s, kill_to_fresh_s = [], [], []
    try:
        for cycle in range(args.reconnects):
            cycle_started = time.monotonic()
            killed = time.monotonic()
            engines[-1].end(signal.SIGKILL)
            detect_s.append(wait_until(lambda: get(http_port, "/health")[0] == 503, 30, f"down in cycle {cycle}"))
            engines[-1] = start_hostengine(cwd, port, args.gpus)[0]
            restarted = time.monotonic()
            wait_until(lambda: fresh(get(http_port, "/metrics")[1]), 60, f"fresh again in cycle {cycle}")
            restart_to_fresh_s.append(time.monotonic() - restarted)
            kill_to_fresh_s.append(time.monotonic() - killed)
            if (cycle + 1) % 50 == 0:
                threads, fds, rss = usage(pid)
                print(f"  {cycle + 1} reconnects, {time.monotonic() - started:.0f} s: threads {threads}, fds {fds}, "
                      f"RSS {rss:.1f} MiB")
            rest = args.kill_every - (time.monotonic() - cycle_started)
            if rest > 0:
                time.sleep(rest)
        remaining = args.scrape_minutes * 60 - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
    finally:
        stop.set()
        for scraper in scrapers:
            scraper.join(30)
    elapsed = time.monotonic() - started

    wait_until(lambda: fresh(get(http_port, "/metrics")[1]), 30, "fresh at the end")
    reconnects = RECONNECTS.search(get(http_port, "/metrics")[1].decode())
    after = settled_usage(pid)
    latencies = [t for s in scrapers for t in s.latencies]
    failures = [f for s in scrapers for f in s.failures]
    print(f"after:  threads {after[0]}, fds {after[1]}, RSS {after[2]:.1f} MiB "
          f"(RSS {after[2] - before[2]:+.1f} MiB)")
    print(f"{args.reconnects} kills in {elapsed:.0f} s; dcgm_collector_reconnects_total "
          f"{reconnects[1] if reconnects else '?'}")
    print(f"kill -> /health 503:       {percentiles(detect_s)}")
    print(f"restart -> fresh values:   {percentiles(restart_to_fresh_s)}")
    print(f"kill -> fresh values:      {percentiles(kill_to_fresh_s)}")
    print(f"scrapes: {len(latencies)} by {args.scrapers} threads, {len(failures)} failed; latency "
          f"{percentiles(latencies)}")
    for failure in failures[:5]:
        print(f"  failed: {failure}")
    if "Traceback" in collector.log():
        print("the collector logged a traceback:\n" + collector.log()[-3000:])
    ok = (after[:2] == before[:2] and not failures and reconnects is not None
          and float(reconnects[1]) == args.reconnects and "Traceback" not in collector.log())
    print("OK" if ok else "FAILED: threads or fds grew, a scrape failed, or a reconnect was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
