"""Start to first served sample: process start until /metrics holds a DCGM_FI_DEV_GPU_TEMP sample.

The clock starts just before the child process is spawned and stops when a
GET of /metrics (polled every 5 ms) answers 200 with a
``DCGM_FI_DEV_GPU_TEMP{`` line: interpreter start, imports, counters file,
listener, libdcgm, the embedded simulated engine (8 H100s), watches, the
first drain and the first render all count.

Baseline, same run and same poll loop: ``python -m http.server`` started the
same way until it answers its first 200, the least any Python HTTP
endpoint can take to come up on this machine.

    python benchmarks/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import _workload as w

TARGET_S = 1.0


def collector_start(counters: str, extra: list[str]) -> float:
    port = w.free_port()
    with w.start_collector(port, "-f", counters, *extra) as collector:
        return w.wait_for(collector, f"http://127.0.0.1:{port}/metrics")


def http_server_start() -> float:
    port = w.free_port()
    with w.Process([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]) as server:
        return w.wait_for(server, f"http://127.0.0.1:{port}/", needle="")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    w.print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        counters = str(w.write_counters(tmp))
        baseline = [http_server_start() for _ in range(args.runs)]
        default = [collector_start(counters, []) for _ in range(args.runs)]
        fast = [collector_start(counters, ["-c", "100", "--watch-interval", "100"]) for _ in range(args.runs)]
    base = w.median(baseline)
    print(f"baseline: python -m http.server to its first 200: median {base * 1000:.0f} ms "
          f"(runs: {', '.join(f'{t * 1000:.0f}' for t in baseline)})")
    for label, times in (("-c 1000", default), ("-c 100 --watch-interval 100", fast)):
        median = w.median(times)
        verdict = "met" if median <= TARGET_S else "MISSED"
        print(f"dcgm-collector --sim 8 {label}: start to first GPU_TEMP sample: median {median * 1000:.0f} ms "
              f"(runs: {', '.join(f'{t * 1000:.0f}' for t in times)}; target <= {TARGET_S:g} s: {verdict}); "
              f"{median / base:.1f}x the http.server baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
