"""Scaling: memory, CPU and render time of the collector process for 1, 8 and 32 GPUs, then 1-4 hostengines.

Each configuration starts ``dcgm-collector`` as a child process on the
benchmark counters at ``-c 100 --watch-interval 100 --retention 900``
(every row of the shipped files with ``--aggregations min,max,avg`` when
``--full``), waits for the first sample, then reads VmRSS (the rings are
allocated and written at start), CPU over --seconds from /proc, and the
median of --requests sequential GETs of /metrics over one keep-alive
connection.  Per GPU figures divide by the GPU count.

- ``embedded N``: ``--sim N`` (simulator inside the collector process);
- ``remote xK``: K simulated hostengines of 8 H100s each (``python -m
  dcgm_collector.engine hostengine``), one collector with
  ``-r host:p1,host:p2,...``; the hostengines' own CPU is not included.
  Skipped when the hostengine command or several -r targets are not there.

    python benchmarks/scaling.py [--seconds 5] [--requests 50] [--full]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time

import _workload as w
from render_http import Scraper

GPUS_PER_ENGINE = 8


def measure(args: argparse.Namespace, counters: str, gpus: int, sim: str | None, remotes: list[str]) -> dict:
    port = w.free_port()
    extra = ["-f", counters, "-c", "100", "--watch-interval", "100", "--retention", "900"]
    if args.full:
        extra += ["--aggregations", "min,max,avg"]
    if remotes:
        extra += ["-r", ",".join(remotes)]
    with w.start_collector(port, *extra, sim=sim) as collector:
        w.wait_for(collector, f"http://127.0.0.1:{port}/metrics")
        time.sleep(2.0)
        rss = w.memory_mib(collector.pid)["VmRSS"]
        share = w.measure_cpu(collector.pid, args.seconds)
        body = w.get(f"http://127.0.0.1:{port}/metrics") or b""
        series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
        scraper = Scraper(port, False)
        try:
            scraper.scrape()
            times = [scraper.scrape()[0] for _ in range(args.requests)]
        finally:
            scraper.close()
        collector.check_alive()
    return {"gpus": gpus, "rss": rss, "cpu": share.percent, "series": series, "render_ms": w.median(times) * 1e3}


def show(label: str, r: dict) -> None:
    print(f"{label:12} {r['gpus']:3} GPUs: RSS {r['rss']:6.1f} MiB ({r['rss'] / r['gpus']:5.2f} MiB/GPU), "
          f"CPU {r['cpu']:5.2f} % of one core ({r['cpu'] / r['gpus']:.3f} %/GPU), {r['series']:5} series, "
          f"GET /metrics median {r['render_ms']:6.2f} ms ({r['render_ms'] * 1000 / max(r['series'], 1):.2f} us/series)")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--full", action="store_true", help="every row of the shipped files, all window families")
    parser.add_argument("--gpus", default="1,8,32")
    parser.add_argument("--engines", default="1,2,3,4")
    args = parser.parse_args(argv)
    w.print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        counters = str(w.write_counters(tmp, full=args.full))
        for gpus in (int(g) for g in args.gpus.split(",") if g):
            show("embedded", measure(args, counters, gpus, str(gpus), []))
        if not w.hostengine_available():
            print("remote: skipped: `python -m dcgm_collector.engine hostengine` is not available yet")
            return 0
        for count in (int(k) for k in args.engines.split(",") if k):
            with contextlib.ExitStack() as stack:
                ports = []
                for _ in range(count):
                    port = w.free_port()
                    engine = stack.enter_context(w.start_hostengine(port, str(GPUS_PER_ENGINE)))
                    w.wait_for_port(engine, port)
                    ports.append(port)
                try:
                    result = measure(args, counters, GPUS_PER_ENGINE * count, None,
                                     [f"127.0.0.1:{p}" for p in ports])
                except (RuntimeError, TimeoutError) as error:
                    print(f"remote x{count}: failed: {str(error).splitlines()[0]}")
                    continue
            show(f"remote x{count}", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
