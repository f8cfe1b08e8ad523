"""The history API under load: /metrics latency and the collector's memory while 64 clients ask for the most.

The collector runs as a child process (``dcgm-collector --sim 8 -c 100
--watch-interval 100``, the workload counters: 30 metrics, 414 series, the
default 15-minute rings; 232 ring series, as 29 numeric fields on 8 GPUs).
Before measuring it serves until the rings hold more than the largest answer
(``limit=200000``: 863 rows of 232 series, about 87 s at 10 Hz), or for
``--fill-s`` seconds.  Then, in one run:

- **baseline**: one scraper (a keep-alive connection, as Prometheus keeps)
  times GET /metrics back to back, 20 ms apart, for ``--baseline-s``, while
  the collector's VmRSS is read every 50 ms;
- **load**: the same, while ``--clients`` clients (threads of a second
  process, so the scraper does not share their GIL) ask
  ``/api/v1/samples`` for every field of the counters file since the oldest
  sample (``since=0``) with ``limit=200000`` back to back for ``--seconds``,
  each on its own keep-alive connection, reading each answer whole.  They do
  not wait for Retry-After: a 503 is asked again at once, the worst case.
  A 503 is counted as "busy" (the history API's cap, JSON) or "connections"
  (the server's connection cap, plain text).

Printed: /metrics p50 / p99 (and their ratio to the baseline), the share of
history answers that were 503, 200s per second and their size, and the
collector's peak RSS (the highest VmRSS read, and VmHWM) against the
baseline's.

First, in this process: the memory one answer takes while it is built
(tracemalloc's peak, numpy's arrays included) for the largest answer over
full 15-minute rings of the same shape (8 GPUs x 29 fields at 10 Hz,
9,000 rows), against the size of its JSON.  ``--history-module FILE``
measures another version of ``dcgm_collector/expose/history.py`` there
(``git show REV:dcgm_collector/expose/history.py > old.py``), to compare.

    python benchmarks/history_load.py [--clients 64] [--seconds 20] [--baseline-s 10] [--fill-s SECONDS]
                                      [--history-module FILE] [--memory-only]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import _workload as w

LIMIT = 200_000
PROBE_PAUSE_S = 0.02
RSS_EVERY_S = 0.05
FILL_TIMEOUT_S = 120.0


def metric_names(counters: Path) -> list[str]:
    """The metric names of the counters file's rows: "every field"."""
    names = []
    for line in counters.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.append(line.split(",", 1)[0].strip())
    return names


def history_path(names: list[str]) -> str:
    return f"/api/v1/samples?field={','.join(names)}&since=0&limit={LIMIT}"


class Prober:
    """GET /metrics back to back on one keep-alive connection, and the collector's VmRSS, until stopped."""

    def __init__(self, port: int, pid: int) -> None:
        self.port, self.pid = port, pid
        self.latencies: list[float] = []
        self.failures: Counter[str] = Counter()
        self.rss: list[float] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._probe), threading.Thread(target=self._memory)]

    def __enter__(self) -> Prober:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()

    def _probe(self) -> None:
        connection = None
        while not self._stop.is_set():
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            start = time.perf_counter()
            try:
                connection.request("GET", "/metrics")
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException) as error:
                self.failures[type(error).__name__] += 1
                connection.close()
                connection = None
                continue
            elapsed = time.perf_counter() - start
            if response.status == 200:
                self.latencies.append(elapsed)
            else:
                self.failures[str(response.status)] += 1
            if response.will_close:
                connection.close()
                connection = None
            self._stop.wait(PROBE_PAUSE_S)
        if connection is not None:
            connection.close()

    def _memory(self) -> None:
        while not self._stop.is_set():
            try:
                self.rss.append(w.memory_mib(self.pid)["VmRSS"])
            except (OSError, KeyError):
                pass
            self._stop.wait(RSS_EVERY_S)

    def summary(self) -> dict[str, float]:
        if not self.latencies:
            raise RuntimeError(f"no /metrics answer was a 200: {dict(self.failures)}")
        return {"p50_ms": w.median(self.latencies) * 1e3, "p99_ms": w.percentile(self.latencies, 99) * 1e3,
                "max_ms": max(self.latencies) * 1e3, "scrapes": len(self.latencies),
                "failed": sum(self.failures.values()), "rss_mib": max(self.rss), "rss_median_mib": w.median(self.rss)}


def _client(port: int, path: str, until: float, tally: Counter, lock: threading.Lock, sizes: list[int],
            latencies: list[float]) -> None:
    connection = None
    while time.monotonic() < until:
        if connection is None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        start = time.perf_counter()
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as error:
            with lock:
                tally[type(error).__name__] += 1
            connection.close()
            connection = None
            continue
        elapsed = time.perf_counter() - start
        kind = str(response.status)
        if response.status == 503:   # the history API's own refusal, or the connection cap's
            kind += " busy" if response.getheader("Content-Type") == "application/json" else " connections"
        with lock:
            tally[kind] += 1
            if response.status == 200:
                sizes.append(len(body))
                latencies.append(elapsed)
        if response.will_close:
            connection.close()
            connection = None
    if connection is not None:
        connection.close()


def clients(port: int, path: str, count: int, seconds: float, results) -> None:
    """In a child process: ``count`` threads asking ``path`` for ``seconds``; the tallies go to ``results``."""
    tally: Counter[str] = Counter()
    lock = threading.Lock()
    sizes: list[int] = []
    latencies: list[float] = []
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=_client, args=(port, path, until, tally, lock, sizes, latencies))
               for _ in range(count)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put({"tally": dict(tally), "sizes": sizes, "latencies": latencies,
                 "wall_s": time.monotonic() - started})


def answer_memory(history_file: str | None, gpus: int = 8, fields: int = 29, rows: int = 9_000) -> dict[str, float]:
    """tracemalloc's peak while the largest answer is built over synthetic full rings, and the answer's size."""
    import importlib.util
    import tracemalloc

    import numpy as np

    from dcgm_collector.model import EntityType
    from dcgm_collector.rings.ring import SAMPLE_OK, EventRing, RingBuffer
    from dcgm_collector.series.samples import RingSeries, SampleModel, SeriesInfo

    if history_file is None:
        from dcgm_collector.expose import history
    else:
        spec = importlib.util.spec_from_file_location("history_under_test", history_file)
        history = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = history
        spec.loader.exec_module(history)
    keys = [(int(EntityType.GPU), gpu, 100 + f) for gpu in range(gpus) for f in range(fields)]
    ring = RingBuffer(keys, capacity=rows)
    now_us = time.time_ns() // 1000
    stamps = now_us - (rows - np.arange(rows, dtype=np.int64)) * 100_000
    values = np.random.default_rng(1).uniform(0, 700, (rows, len(keys)))
    values[:, ::3] = np.round(values[:, ::3])
    ring.append(stamps, values, np.full(values.shape, SAMPLE_OK))
    series = tuple(SeriesInfo(f"DCGM_FI_BENCH_{f}", (("gpu", str(gpu)), ("UUID", f"GPU-{gpu:08d}"),
                                                      ("device", f"nvidia{gpu}"), ("Hostname", "node")),
                              (int(EntityType.GPU), gpu), gpu, 100 + f, f"DCGM_FI_BENCH_{f}", f % 3 == 0, i)
                   for i, (_, gpu, f) in enumerate((k[0], k[1], k[2] - 100) for k in keys))
    model = SampleModel("node", (), (RingSeries(ring, series),), EventRing(16), ())
    query = history.parse_query({"field": [",".join(f"DCGM_FI_BENCH_{f}" for f in range(fields))],
                                 "since": ["0"], "limit": [str(LIMIT)]})
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    result = history.answer([model], query)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    size = len(result) if isinstance(result, bytes) else sum(len(p) for p in result.pieces)
    del result
    started = time.perf_counter()
    history.answer([model], query)
    untraced = time.perf_counter() - started
    return {"peak_mib": peak / w.MIB, "bytes": size, "seconds": elapsed, "seconds_untraced": untraced,
            "ring_mib": ring.nbytes / w.MIB}


def wait_until_full(port: int, path: str, fill_s: float | None, collector: w.Process) -> dict:
    """Serve until the largest answer is cut by the limit (or for ``fill_s``); returns that answer's data."""
    deadline = time.monotonic() + (fill_s if fill_s is not None else FILL_TIMEOUT_S)
    while True:
        collector.check_alive()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        data = json.loads(body)["data"] if response.status == 200 else None
        now = time.monotonic()
        if data is not None and ((fill_s is None and data["truncated"]) or now >= deadline):
            data["bytes"] = len(body)
            return data
        if now >= deadline:
            raise TimeoutError(f"the history answer was not cut by the limit after {FILL_TIMEOUT_S:g} s")
        time.sleep(min(2.0, max(0.0, deadline - now)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=64, help="concurrent history clients (64)")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the load (20)")
    parser.add_argument("--baseline-s", type=float, default=10.0, help="length of the baseline (10)")
    parser.add_argument("--fill-s", type=float,
                        help="serve this long before measuring (default: until the largest answer is cut by limit)")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--history-module", help="measure this history.py's answer memory instead of the package's")
    parser.add_argument("--memory-only", action="store_true", help="only the in-process answer memory")
    args = parser.parse_args(argv)
    w.print_machine()
    memory = answer_memory(args.history_module)
    print(f"one answer in process ({args.history_module or 'dcgm_collector.expose.history'}), limit {LIMIT} over "
          f"full rings ({memory['ring_mib']:.1f} MiB): peak {memory['peak_mib']:.1f} MiB traced for "
          f"{memory['bytes'] / 1e6:.2f} MB of JSON ({memory['peak_mib'] * w.MIB / memory['bytes']:.2f}x), built in "
          f"{memory['seconds']:.2f} s traced, {memory['seconds_untraced']:.2f} s untraced")
    sys.stdout.flush()
    if args.memory_only:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        counters = w.write_counters(tmp)
        names = metric_names(counters)
        path = history_path(names)
        port = w.free_port()
        with w.start_collector(port, "-f", str(counters), "-c", "100", "--watch-interval", "100",
                               sim=str(args.gpus)) as collector:
            w.wait_for(collector, f"http://127.0.0.1:{port}/metrics")
            full = wait_until_full(port, path, args.fill_s, collector)
            n_samples = sum(len(s["samples"]) for s in full["series"])
            print(f"collector: {args.gpus} GPUs, {len(names)} fields, {len(full['series'])} series; the largest "
                  f"answer: {n_samples} samples, {full['bytes']} bytes, truncated {full['truncated']} "
                  f"(after {time.monotonic() - collector.started:.0f} s of serving)")
            sys.stdout.flush()
            with Prober(port, collector.pid) as baseline:
                time.sleep(args.baseline_s)
            base = baseline.summary()
            print(f"baseline: /metrics p50 {base['p50_ms']:.2f} ms, p99 {base['p99_ms']:.2f} ms "
                  f"({base['scrapes']} scrapes, {base['failed']} failed); RSS {base['rss_mib']:.1f} MiB")
            sys.stdout.flush()
            context = multiprocessing.get_context("fork")
            results = context.Queue()
            child = context.Process(target=clients, args=(port, path, args.clients, args.seconds, results))
            with Prober(port, collector.pid) as loaded:
                child.start()
                outcome = results.get(timeout=args.seconds + 300)
                child.join()
            load = loaded.summary()
            hwm = w.memory_mib(collector.pid)["VmHWM"]
            collector.check_alive()
    tally = outcome["tally"]
    answers = sum(tally.values())
    ok = tally.get("200", 0)
    refused = sum(v for k, v in tally.items() if k.startswith("503"))
    kinds = ", ".join(f"{tally[k]} x {k}" for k in sorted(tally) if k.startswith("503")) or "no 503"
    other = {k: v for k, v in tally.items() if k != "200" and not k.startswith("503")}
    print(f"load: {args.clients} clients for {outcome['wall_s']:.1f} s: {answers} answers, {ok} x 200, "
          f"{kinds} ({100 * refused / max(answers, 1):.1f} % 503), other {other or 'none'}; "
          f"{ok / outcome['wall_s']:.2f} answers of 200 per second"
          + (f", {w.median(outcome['sizes']) / 1e6:.2f} MB each, answered in {w.median(outcome['latencies']):.2f} s "
             f"(median)" if ok else ""))
    print(f"load: /metrics p50 {load['p50_ms']:.2f} ms, p99 {load['p99_ms']:.2f} ms, max {load['max_ms']:.1f} ms "
          f"({load['scrapes']} scrapes, {load['failed']} failed); peak RSS {load['rss_mib']:.1f} MiB "
          f"(VmHWM {hwm:.1f} MiB), median {load['rss_median_mib']:.1f} MiB")
    print(f"ratios to the baseline of this run: /metrics p50 {load['p50_ms'] / base['p50_ms']:.2f}x, "
          f"p99 {load['p99_ms'] / base['p99_ms']:.2f}x; peak RSS {load['rss_mib'] / base['rss_mib']:.2f}x "
          f"(+{load['rss_mib'] - base['rss_mib']:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
