"""/metrics over real HTTP: one scraper, then 10 concurrent scrapers, against the real server.

The collector runs as a child process (``dcgm-collector --sim 8``, 100 ms
collect and watch interval, every row of the shipped counters files with
``--aggregations min,max,avg``: over 1,000 series), and serves for 16 s
before the first request, so the 15 s window is full.  Each scraper keeps
one HTTP/1.1 connection open (as Prometheus does) and times a request from
sending it to having read the whole body.

- one scraper: requests back to back; the median is the figure;
- 10 scrapers: bursts in which all 10 send at the same moment (a barrier),
  then wait for every answer; the latencies of every burst give p50 / p99;
- server CPU per request: 2,000 sequential requests, the server process's
  CPU (utime + stime, threads that ended included) less its idle rate
  measured just before.
  The collector renders under Python's GIL, so a burst's renders queue
  behind each other: the slowest of 10 waits for about 10 renders.

Baselines, same run, same client, same bursts, each a child process
serving the very series the collector served (names, labels, values); the
static server is measured in rounds interleaved with the collector's (both
up all along) and each figure is the median of the rounds:

- ``static``: http.server (ThreadingHTTPServer) answering a fixed body of
  the same bytes: the floor of a Python HTTP server and the transfer;
- ``prometheus_client``: ``start_http_server`` on a registry of labelled
  Gauges (``generate_latest`` per request): how a standard Python exporter
  serves the same text.

    python benchmarks/render_http.py [--requests 200] [--bursts 50] [--rounds 3] [--gzip]
"""

from __future__ import annotations

import argparse
import http.client
import sys
import tempfile
import threading
import time
from pathlib import Path

import _workload as w

WINDOW_FILL_S = 16.0
SCRAPERS = 10
TARGET_MEDIAN_MS, TARGET_P99_MS = 2.0, 20.0
CPU_REQUESTS = 2000   # sequential requests whose server CPU is counted (in 10 ms ticks: threads that ended count)
IDLE_S = 2.0          # the server's own CPU without requests is measured this long first
BENCH_DIR = Path(__file__).resolve().parent

STATIC_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
body = open(sys.argv[1], 'rb').read()
class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(('127.0.0.1', int(sys.argv[2])), Handler).serve_forever()
"""

PROMETHEUS_CLIENT_SERVER = """
import sys, time
sys.path.insert(0, sys.argv[3])
import _workload
from prometheus_client import start_http_server
registry, _ = _workload.registry_like(open(sys.argv[1], 'rb').read())
start_http_server(int(sys.argv[2]), addr='127.0.0.1', registry=registry)
while True:
    time.sleep(3600)
"""


class Scraper:
    """One keep-alive connection to /metrics."""

    def __init__(self, port: int, gzip: bool) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Accept-Encoding": "gzip"} if gzip else {}

    def scrape(self) -> tuple[float, int]:
        start = time.perf_counter()
        self.connection.request("GET", "/metrics", headers=self.headers)
        response = self.connection.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - start
        if response.status != 200:
            raise RuntimeError(f"/metrics answered {response.status}")
        return elapsed, len(body)

    def close(self) -> None:
        self.connection.close()


def sequential(port: int, requests: int, gzip: bool) -> list[float]:
    scraper = Scraper(port, gzip)
    try:
        scraper.scrape()  # connection set up
        return [scraper.scrape()[0] for _ in range(requests)]
    finally:
        scraper.close()


def bursts(port: int, count: int, gzip: bool) -> list[float]:
    scrapers = [Scraper(port, gzip) for _ in range(SCRAPERS)]
    for s in scrapers:
        s.scrape()
    barrier = threading.Barrier(SCRAPERS)
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def run(scraper: Scraper) -> None:
        try:
            for _ in range(count):
                barrier.wait()
                elapsed, _ = scraper.scrape()
                with lock:
                    latencies.append(elapsed)
        except BaseException as error:  # reported by the caller
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(s,)) for s in scrapers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in scrapers:
        s.close()
    if errors:
        raise errors[0]
    return latencies


def server_cpu_us(pid: int, port: int, requests: int, gzip: bool) -> float:
    """The server's CPU per request (µs), sequential requests, less what the process spends idle meanwhile
    (the collector samples all along): what each answer costs the node."""
    scraper = Scraper(port, gzip)
    try:
        scraper.scrape()   # the connection's thread exists before the count starts and until it ends
        idle_start, idle_wall = w.cpu_seconds(pid), time.monotonic()
        time.sleep(IDLE_S)
        before, start = w.cpu_seconds(pid), time.monotonic()
        idle_rate = (before - idle_start) / (start - idle_wall)
        for _ in range(requests):
            scraper.scrape()
        used, wall = w.cpu_seconds(pid) - before, time.monotonic() - start
    finally:
        scraper.close()
    return max(0.0, used - idle_rate * wall) / requests * 1e6


def measure(name: str, port: int, args: argparse.Namespace, pid: int) -> dict[str, float]:
    one = sequential(port, args.requests, args.gzip)
    many = bursts(port, args.bursts, args.gzip)
    result = {"median_ms": w.median(one) * 1e3, "p99_one_ms": w.percentile(one, 99) * 1e3,
              "p50_10_ms": w.median(many) * 1e3, "p99_10_ms": w.percentile(many, 99) * 1e3,
              "cpu_us": server_cpu_us(pid, port, CPU_REQUESTS, args.gzip)}
    print(f"{name}: one scraper median {result['median_ms']:.2f} ms (p99 {result['p99_one_ms']:.2f} ms, "
          f"{len(one)} requests); {SCRAPERS} concurrent scrapers p50 {result['p50_10_ms']:.2f} ms, "
          f"p99 {result['p99_10_ms']:.2f} ms ({len(many)} requests in {args.bursts} bursts); "
          f"server CPU {result['cpu_us']:.0f} us per request")
    sys.stdout.flush()
    return result


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: w.median([r[key] for r in rounds]) for key in rounds[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="sequential requests per server and round")
    parser.add_argument("--bursts", type=int, default=50, help="bursts of 10 concurrent requests per server and round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, each the collector then the static server; the figures are their medians")
    parser.add_argument("--gzip", action="store_true", help="ask for gzip, as Prometheus does")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval-ms", type=int, default=100, help="the collector's collect and watch interval")
    parser.add_argument("--no-baselines", action="store_true")
    args = parser.parse_args(argv)
    w.print_machine()
    baselines: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        counters = str(w.write_counters(tmp, full=True))
        port = w.free_port()
        with w.start_collector(port, "-f", counters, "--aggregations", "min,max,avg",
                               "-c", str(args.interval_ms), "--watch-interval", str(args.interval_ms),
                               sim=str(args.gpus)) as collector:
            w.wait_for(collector, f"http://127.0.0.1:{port}/metrics")
            time.sleep(WINDOW_FILL_S)
            body = w.get(f"http://127.0.0.1:{port}/metrics")
            assert body is not None
            series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
            print(f"collector: {args.gpus} GPUs, {series} series, {len(body)} bytes per scrape"
                  f"{', gzip asked for' if args.gzip else ''}")
            body_path = Path(tmp) / "body.txt"
            body_path.write_bytes(body)
            static_port = w.free_port()
            static = None if args.no_baselines else w.Process(w.python_command(STATIC_SERVER)
                                                               + [str(body_path), str(static_port), str(BENCH_DIR)])
            try:
                if static is not None:
                    w.wait_for(static, f"http://127.0.0.1:{static_port}/metrics", needle="DCGM_FI_DEV_GPU_TEMP")
                # interleaved, both servers up all along (the collector samples meanwhile): the machine's
                # drift over the run reaches both alike
                ours_rounds, static_rounds = [], []
                for round_ in range(1, args.rounds + 1):
                    ours_rounds.append(measure(f"round {round_} dcgm-collector", port, args, collector.pid))
                    if static is not None:
                        static_rounds.append(measure(f"round {round_} baseline static http.server", static_port,
                                                     args, static.pid))
            finally:
                if static is not None:
                    static.stop()
        ours = medians(ours_rounds)
        if static_rounds:
            baselines["static http.server"] = medians(static_rounds)
        if not args.no_baselines:
            port = w.free_port()
            with w.Process(w.python_command(PROMETHEUS_CLIENT_SERVER)
                           + [str(body_path), str(port), str(BENCH_DIR)]) as server:
                w.wait_for(server, f"http://127.0.0.1:{port}/metrics", needle="DCGM_FI_DEV_GPU_TEMP")
                baselines["prometheus_client"] = measure("baseline prometheus_client", port, args, server.pid)
    print(f"dcgm-collector, median of {args.rounds} rounds: one scraper median {ours['median_ms']:.2f} ms; "
          f"{SCRAPERS} scrapers p50 {ours['p50_10_ms']:.2f} ms, p99 {ours['p99_10_ms']:.2f} ms; "
          f"server CPU {ours['cpu_us']:.0f} us per request")
    if "static http.server" in baselines:
        base = baselines["static http.server"]
        print(f"static http.server, median of {args.rounds} rounds: one scraper median {base['median_ms']:.2f} ms; "
              f"{SCRAPERS} scrapers p50 {base['p50_10_ms']:.2f} ms, p99 {base['p99_10_ms']:.2f} ms; "
              f"server CPU {base['cpu_us']:.0f} us per request")
    verdict = ("met" if ours["median_ms"] <= TARGET_MEDIAN_MS else "MISSED",
               "met" if ours["p99_10_ms"] <= TARGET_P99_MS else "MISSED")
    print(f"targets: median <= {TARGET_MEDIAN_MS:g} ms: {verdict[0]}; p99 with {SCRAPERS} scrapers <= "
          f"{TARGET_P99_MS:g} ms: {verdict[1]}")
    for name, base in baselines.items():
        print(f"ratio to {name}: median {ours['median_ms'] / base['median_ms']:.2f}x, "
              f"p99 with {SCRAPERS} scrapers {ours['p99_10_ms'] / base['p99_10_ms']:.2f}x, "
              f"server CPU per request {ours['cpu_us'] / max(base['cpu_us'], 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
