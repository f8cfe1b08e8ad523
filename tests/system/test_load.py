"""Many scrapers at once against the CLI on 8 simulated GPUs: no errors, every body complete and parseable.

20 threads scrape /metrics for a bounded time (5 s, at most 300 scrapes
each): half over one keep-alive connection each, half with a new
connection per scrape, as a crowd of Prometheus servers and curl loops
would.  Every response is parsed with prometheus_client's parser and must
hold every GPU series.  Parsing takes ~10x longer than serving, so each
response is checked cheaply as it comes (status, GPU series count, up,
samples never going back) and parsed once per distinct body, the two
per-scrape numbers (sample age, scrape duration) masked after checking they
are numbers: responses between two sampler ticks are otherwise the same
bytes.  Latencies are printed, not asserted (the machine may be busy); the
soak version is benchmarks/soak.py.
"""

from __future__ import annotations

import hashlib
import http.client
import re
import statistics
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import COLLECTOR
from test_faults import SERVING, Proc, _env, fresh, wait_for
from test_faults import Collector as _FaultsCollector

pytestmark = pytest.mark.slow

GPUS = 8
SCRAPERS = 20
SECONDS = 5.0
MAX_SCRAPES = 300   # per scraper

VOLATILE = re.compile(rb"^(dcgm_collector_(?:last_sample_age|scrape_duration)_seconds) \d+\.\d+$", re.M)
SELF = re.compile(rb"^dcgm_collector_(up|samples_total) (\d+)$", re.M)


class Collector(_FaultsCollector):
    def __init__(self, cwd, *args: str) -> None:
        # the package's default counters file: what a node runs out of the box
        Proc.__init__(self, COLLECTOR, ["-a", "127.0.0.1:0", "--sim", str(GPUS), "-c", "500", *args],
                      cwd, _env(), "collector")
        self.port = int(self.wait_log(SERVING)[1])


def gpu_series(body: str) -> dict[str, set[str]]:
    """Family name -> the gpu label values of its series, for families with GPU series."""
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if "gpu" in sample.labels:
                found.setdefault(family.name, set()).add(sample.labels["gpu"])
    return found


class Bodies:
    """Distinct response bodies (per-scrape numbers masked), to parse once each after the load."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.distinct: dict[bytes, bytes] = {}

    def add(self, body: bytes) -> None:
        masked = VOLATILE.sub(rb"\1 0", body)
        key = hashlib.sha1(masked).digest()
        with self._lock:
            self.distinct.setdefault(key, masked)


class Scraper(threading.Thread):
    def __init__(self, port: int, keep_alive: bool, deadline: float, gpu_lines: int, bodies: Bodies) -> None:
        super().__init__(daemon=True)
        self.port, self.keep_alive, self.deadline = port, keep_alive, deadline
        self.gpu_lines, self.bodies = gpu_lines, bodies
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def run(self) -> None:
        conn = None
        last_samples = -1
        while time.monotonic() < self.deadline and len(self.latencies) < MAX_SCRAPES and not self.errors:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                started = time.monotonic()
                conn.request("GET", "/metrics")
                response = conn.getresponse()
                body = response.read()
                self.latencies.append(time.monotonic() - started)
                if not self.keep_alive or response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
                if response.status != 200:
                    self.errors.append(f"HTTP {response.status}: {body[:200]!r}")
                    continue
                if body.count(b'{gpu="') != self.gpu_lines:
                    self.errors.append(f"{body.count(b'{gpu=')} GPU series, not {self.gpu_lines}")
                own = dict(SELF.findall(body))
                samples = int(own.get(b"samples_total", -1))
                if own.get(b"up") != b"1" or samples < last_samples:
                    self.errors.append(f"up {own.get(b'up')!r}, samples_total {samples} after {last_samples}")
                last_samples = samples
                self.bodies.add(body)
            except Exception as error:   # any failure is a test failure, reported with the others
                self.errors.append(f"{type(error).__name__}: {error}")
                if conn is not None:
                    conn.close()
                    conn = None
        if conn is not None:
            conn.close()


def test_many_concurrent_scrapers_on_8_gpus(tmp_path):
    collector = Collector(tmp_path)
    try:
        first = wait_for(lambda: (t := collector.metrics()) and fresh(t) and t, what="fresh samples",
                         log=collector.log)
        expected = gpu_series(first)
        assert len(expected) >= 10 and all(gpus == {str(i) for i in range(GPUS)} for gpus in expected.values())
        threads_before, fds_before = collector.settled_counts()

        gpu_lines = first.count('{gpu="')
        bodies = Bodies()
        deadline = time.monotonic() + SECONDS
        scrapers = [Scraper(collector.port, i % 2 == 0, deadline, gpu_lines, bodies) for i in range(SCRAPERS)]
        started = time.monotonic()
        for scraper in scrapers:
            scraper.start()
        for scraper in scrapers:
            scraper.join(SECONDS + 30)
        elapsed = time.monotonic() - started
        assert not any(s.is_alive() for s in scrapers), "a scraper hung"

        errors = [e for s in scrapers for e in s.errors]
        assert not errors, f"{len(errors)} errors, first: {errors[:3]}"
        latencies = sorted(t for s in scrapers for t in s.latencies)
        assert all(s.latencies for s in scrapers), "a scraper never got an answer"
        for body in bodies.distinct.values():
            assert gpu_series(body.decode()) == expected
        p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
        print(f"\n{SCRAPERS} scrapers x {elapsed:.1f} s on {GPUS} GPUs ({sum(map(len, expected.values()))} GPU "
              f"series): {len(latencies)} scrapes, {len(latencies) / elapsed:.0f}/s; latency p50 "
              f"{statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
              f"max {latencies[-1] * 1000:.1f} ms ({sum(t > 0.9 for t in latencies)} over 0.9 s); "
              f"{len(bodies.distinct)} distinct bodies parsed")

        # the collector kept sampling, is healthy, and the request threads are gone
        assert fresh(collector.metrics())
        assert collector.get("/health") == (200, f"OK\nsource: sim, chosen by --sim {GPUS}")
        wait_for(lambda: collector.settled_counts() == (threads_before, fds_before),
                 what="threads and fds back to where they were", log=collector.log)
        assert "Traceback" not in collector.log()
    finally:
        assert collector.end() == 0
