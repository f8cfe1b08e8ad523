"""Live viewers on the history API's cursor: the collector's CPU and /metrics latency with 0, 1 and 10 of them.

The collector runs as a child process (``dcgm-collector --sim 8 -c 100``, the
shipped default counters).  A viewer (a thread of a second process, real
HTTP on its own keep-alive connection) asks once for the last second of the
fields a live view shows (``since=1s``), then follows ``data.cursor`` 10
times a second.  In one run, for 0, 1 and 10 viewers in turn, over
``--seconds`` each:

- the collector's CPU, % of one core (utime + stime from /proc/<pid>/stat,
  and the schedstat run time of its threads beside it);
- /metrics p50 / p99 from a separate scraper (its own process and
  keep-alive connection) every ``--scrape-every`` seconds;
- what the viewers got: answers, samples, bytes per answer, and the answers
  that were not a 200.

Printed: each figure, and its ratio (CPU: its difference) against 0 viewers.
The issue's target: one 10 Hz viewer < 0.5 % of a core, /metrics never slowed.

    python benchmarks/viewers.py [--seconds 20] [--scrape-every 0.25] [--viewers 0,1,10]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import sys
import threading
import time
from collections import Counter

import _workload as w

FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
          "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_SM_CLOCK",
          "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_XID_ERRORS")   # the live views' fields (a missing one: "-")
POLL_S = 0.1
PATH = "/api/v1/samples?field=" + ",".join(FIELDS)


def _viewer(port: int, until: float, tally: Counter, lock: threading.Lock) -> None:
    """Follow the cursor every POLL_S until ``until``, as a live view does."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    cursor, due = None, time.monotonic()
    while time.monotonic() < until:
        path = PATH + (f"&cursor={cursor}" if cursor else "&since=1s")
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as error:
            with lock:
                tally[type(error).__name__] += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            continue
        if response.status == 200:
            data = json.loads(body)["data"]
            cursor = data["cursor"]
            with lock:
                tally["answers"] += 1
                tally["bytes"] += len(body)
                tally["samples"] += sum(len(s["samples"]) for s in data["series"])
                tally["gaps"] += bool(data.get("gap"))
        else:
            with lock:
                tally[str(response.status)] += 1
        due += POLL_S
        time.sleep(max(0.0, due - time.monotonic()))
    connection.close()


def viewers(port: int, count: int, seconds: float, results) -> None:
    """In a child process: ``count`` viewer threads for ``seconds``; the tally goes to ``results``."""
    tally: Counter[str] = Counter()
    lock = threading.Lock()
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=_viewer, args=(port, until, tally, lock)) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put(dict(tally))


def scraper(port: int, seconds: float, every_s: float, results) -> None:
    """In a child process: GET /metrics every ``every_s`` on one keep-alive connection; latencies to ``results``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies, failed = [], 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        start = time.perf_counter()
        try:
            connection.request("GET", "/metrics")
            response = connection.getresponse()
            response.read()
            ok = response.status == 200
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            ok = False
        if ok:
            latencies.append(time.perf_counter() - start)
        else:
            failed += 1
        time.sleep(every_s)
    connection.close()
    results.put({"latencies": latencies, "failed": failed})


def measure(port: int, pid: int, count: int, seconds: float, every_s: float) -> dict:
    """One phase: ``count`` viewers and the scraper for ``seconds``, and the collector's CPU meanwhile."""
    context = multiprocessing.get_context("spawn")
    view_results, scrape_results = context.Queue(), context.Queue()
    children = [context.Process(target=scraper, args=(port, seconds + 1.0, every_s, scrape_results))]
    if count:
        children.append(context.Process(target=viewers, args=(port, count, seconds + 1.0, view_results)))
    for child in children:
        child.start()
    time.sleep(0.5)   # the viewers' first (since=1s) answers and the connections are made before measuring
    share = w.measure_cpu(pid, seconds)
    scraped = scrape_results.get(timeout=60)
    tally = view_results.get(timeout=60) if count else {}
    for child in children:
        child.join()
    latencies = scraped["latencies"]
    return {"viewers": count, "cpu_pct": share.percent, "cpu_tick_pct": 100 * share.tick_seconds / share.wall,
            "p50_ms": w.median(latencies) * 1e3, "p99_ms": w.percentile(latencies, 99) * 1e3,
            "scrapes": len(latencies), "scrape_failed": scraped["failed"], "tally": tally}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase (20)")
    parser.add_argument("--scrape-every", type=float, default=0.25, help="pause between /metrics scrapes, s (0.25)")
    parser.add_argument("--viewers", default="0,1,10", help="viewer counts, in order (0,1,10)")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.viewers.split(",")]
    w.print_machine()
    port = w.free_port()
    with w.start_collector(port, "-c", "100") as collector:
        w.wait_for(collector, f"http://127.0.0.1:{port}/metrics")
        time.sleep(3.0)   # past start-up: the rings fill, the first scrapes are done
        rows = [measure(port, collector.pid, count, args.seconds, args.scrape_every) for count in counts]
        collector.check_alive()
    base = next((r for r in rows if r["viewers"] == 0), rows[0])
    print(f"collector --sim 8 -c 100; viewers poll the cursor every {POLL_S * 1e3:.0f} ms for {len(FIELDS)} fields; "
          f"{args.seconds:g} s per phase, /metrics every {args.scrape_every:g} s")
    print(f"{'viewers':>7} {'CPU %':>7} {'+CPU %':>7} {'ticks %':>7} {'p50 ms':>7} {'x':>5} {'p99 ms':>7} {'x':>5} "
          f"{'answers/s':>9} {'B/answer':>8} {'samples/s':>9} {'not 200':>7}")
    for r in rows:
        tally = r["tally"]
        answers = tally.get("answers", 0)
        bad = sum(v for k, v in tally.items() if k not in ("answers", "bytes", "samples", "gaps"))
        print(f"{r['viewers']:>7} {r['cpu_pct']:>7.2f} {r['cpu_pct'] - base['cpu_pct']:>+7.2f} "
              f"{r['cpu_tick_pct']:>7.2f} {r['p50_ms']:>7.2f} {r['p50_ms'] / base['p50_ms']:>5.2f} "
              f"{r['p99_ms']:>7.2f} {r['p99_ms'] / base['p99_ms']:>5.2f} {answers / (args.seconds + 1):>9.1f} "
              f"{tally.get('bytes', 0) // max(answers, 1):>8} {tally.get('samples', 0) / (args.seconds + 1):>9.0f} "
              f"{bad:>7}")
        if r["viewers"]:
            per = (r["cpu_pct"] - base["cpu_pct"]) / r["viewers"]
            print(f"        per viewer: {per:+.2f} % of a core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
