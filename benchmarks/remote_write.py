"""Remote write: what pushing every sample costs, and how fast the sender drains a backlog.

Two figures, each beside a baseline from the same run:

1. Whole process: the collector on the benchmark workload (8 simulated H100s,
   the workload counters, ``-c 100 --watch-interval 100``: 10 Hz), first with
   scrapes only, then with ``--remote-write-url`` to a stand-in receiver (a
   child process that reads each request and answers 204).  CPU of the
   collector process from /proc over the measured interval, both runs; the
   ratio is the cost of remote write.  The samples per second it pushed come
   from its own ``dcgm_collector_remote_write_samples_sent_total``.
2. The sender alone, in this process: rings holding 15 minutes of 8 GPUs x 30
   fields at 10 Hz (2.16 million samples, as after a receiver outage), read,
   encoded, snappy-compressed and posted to the same stand-in by a
   RemoteWriter until all are delivered: samples per CPU second (this
   process's CPU; the receiver runs in its own).

    python benchmarks/remote_write.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time

import _workload as w
import numpy as np

from dcgm_collector import __version__
from dcgm_collector.push.remote_write import RemoteWriteOptions, RemoteWriter
from dcgm_collector.rings.ring import EventRing, RingBuffer
from dcgm_collector.series.samples import RingSeries, SampleModel, SeriesInfo

SETTLE_S = 3.0
GPUS, FIELDS, HZ = 8, 30, 10
RECEIVER = """
import http.server, sys
class Discard(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Discard)
print("ready", flush=True)
server.serve_forever()
"""
SENT = re.compile(r"^dcgm_collector_remote_write_samples_sent_total\{[^}]*\} (\S+)$", re.M)


def start_receiver() -> tuple[w.Process, str]:
    port = w.free_port()
    receiver = w.Process([sys.executable, "-c", RECEIVER, str(port)])
    w.wait_for_port(receiver, port)
    return receiver, f"http://127.0.0.1:{port}/api/v1/write"


def collector_cpu(counters: str, seconds: float, url: str | None) -> tuple[w.CpuShare, float | None]:
    """The collector's CPU share, and the samples per second it pushed (None without remote write)."""
    port = w.free_port()
    args = ["-f", counters, "-c", "100", "--watch-interval", "100", "--retention", "900"]
    if url:
        args += ["--remote-write-url", url]
    metrics = f"http://127.0.0.1:{port}/metrics"
    with w.start_collector(port, *args) as collector:
        w.wait_for(collector, metrics)
        time.sleep(SETTLE_S)
        before = _sent(metrics)
        share = w.measure_cpu(collector.pid, seconds)
        after = _sent(metrics)
        collector.check_alive()
    rate = (after - before) / share.wall if url else None
    return share, rate


def _sent(url: str) -> float:
    body = (w.get(url) or b"").decode()
    return sum(float(v) for v in SENT.findall(body))


def backlog_model(rows: int) -> SampleModel:
    """One ring of GPUS x FIELDS series holding ``rows`` rows at HZ, named as /metrics would name them."""
    keys = [(1, gpu, 1000 + field) for field in range(FIELDS) for gpu in range(GPUS)]
    ring = RingBuffer(keys, rows)
    start_us = (time.time_ns() // 1000) - rows * 1_000_000 // HZ
    ts = start_us + np.arange(rows, dtype=np.int64) * (1_000_000 // HZ)
    values = np.random.default_rng(7).normal(300, 20, size=(rows, len(keys))).round(3)
    ring.append(ts, values)
    series = tuple(SeriesInfo(f"DCGM_FI_BENCH_FIELD_{field}", (
        ("gpu", str(gpu)), ("UUID", f"GPU-{gpu:08x}-0000-0000-0000-000000000000"),
        ("pci_bus_id", f"00000000:{gpu:02X}:00.0"), ("device", f"nvidia{gpu}"),
        ("modelName", "NVIDIA H100 80GB HBM3"), ("hostname", "node"), ("DCGM_FI_DRIVER_VERSION", "550.54.15")),
        (1, gpu), gpu, 1000 + field, f"F{field}", False, ring.index((1, gpu, 1000 + field)))
        for field in range(FIELDS) for gpu in range(GPUS))
    return SampleModel("node", (), (RingSeries(ring, series),), EventRing(16), ())


def sender_throughput(url: str, rows: int) -> tuple[int, float, float]:
    """(samples delivered, CPU seconds of this process, wall seconds) draining a full backlog."""
    model = backlog_model(rows)
    total = rows * GPUS * FIELDS
    writer = RemoteWriter(RemoteWriteOptions(url), lambda: [model], __version__)   # the default options
    cpu, wall = time.process_time(), time.monotonic()
    writer.start()
    while writer.sent < total:
        time.sleep(0.01)
        if time.monotonic() - wall > 600:
            raise TimeoutError(f"{writer.sent} of {total} samples sent in 600 s")
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    writer.stop()
    return writer.sent, cpu, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured interval per configuration")
    parser.add_argument("--backlog-s", type=float, default=900.0, help="seconds of samples in the backlog")
    args = parser.parse_args(argv)
    w.print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        counters = str(w.write_counters(tmp))
        receiver, url = start_receiver()
        with receiver:
            scrape_only, _ = collector_cpu(counters, args.seconds, None)
            pushing, rate = collector_cpu(counters, args.seconds, url)
            print(f"collector, 8 GPUs at 10 Hz: scrape only {scrape_only.percent:.2f} % of one core; with remote "
                  f"write {pushing.percent:.2f} % ({rate:,.0f} samples/s pushed): "
                  f"{pushing.percent / scrape_only.percent:.2f}x; RSS {scrape_only.rss_mib:.1f} -> "
                  f"{pushing.rss_mib:.1f} MiB")
            sys.stdout.flush()
            rows = int(args.backlog_s * HZ)
            sent, cpu, wall = sender_throughput(url, rows)
            print(f"sender alone, a {args.backlog_s:g} s backlog of {GPUS} GPUs x {FIELDS} fields at {HZ} Hz: "
                  f"{sent:,} samples in {wall:.2f} s, {cpu:.2f} CPU s: {sent / cpu:,.0f} samples per CPU second "
                  f"({sent / wall:,.0f} per wall second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
