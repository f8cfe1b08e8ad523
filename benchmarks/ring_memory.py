"""Resident memory of the collector as its rings fill: 15 minutes and an hour of every 100 ms sample.

Two collectors are DCGM clients of one simulated hostengine of 8 H100s,
with the benchmark workload (README: 30 metrics, 414 series), DCGM
sampling every 100 ms and /metrics scraped every 15 s: one with the
default retention (an hour), one keeping 30 s, which holds next to no
history, as the peers do.  At each checkpoint it prints both collectors'
VmRSS, the history one's ``dcgm_collector_ring_bytes`` and
``dcgm_collector_ring_samples`` (summed over levels), and what the fixed
rings of before (9 bytes a sample, allocated whole at start) took for the
same retention.

``--node mig`` and ``--node links`` run the same on the nodes of
bench_render.py instead, with its full set of counters: 8 H100s each split
into seven MIG instances (sampled through the 56 instances), and 8 H100s of
an HGX board with four NvSwitches, with the per-link rows (18 NvLinks a GPU,
the switches' ports).  Their fixed rings of before are in bench_render.py's
figures (value rings for 15 min at 100 ms); here the column shows what 9
bytes a held sample would take.

    python benchmarks/ring_memory.py [--minutes 15,60] [--node plain|mig|links]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time

import _workload as w

from dcgm_collector.catalog.counters import load_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.watches import plan_watches

SCRAPE_EVERY_S = 15.0
GPUS = 8
_HELD = re.compile(rb"^dcgm_collector_ring_(bytes|samples)\{[^}]*\} (\S+)$", re.MULTILINE)


def fixed_ring_bytes(counters_path: str, retention_s: float) -> int:
    """What the rings allocated at start before compression: 8 bytes of ts a row, 9 a cell."""
    plan = plan_watches(load_counters(counters_path), SamplingOptions(100, 100, retention_s))
    rows = plan.ring_capacity
    return sum(rows * 8 + rows * GPUS * len(g.field_ids) * 9
               for g in plan.groups if g.kind in ("values", "profiling") and g.entity_level in ("GPU", "NONE"))


def held(url: str) -> tuple[float, float]:
    body = w.get(url) or b""
    totals = {b"bytes": 0.0, b"samples": 0.0}
    for kind, value in _HELD.findall(body):
        totals[kind] += float(value)
    return totals[b"bytes"], totals[b"samples"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", default="15,60", help="checkpoints, in minutes [%(default)s]")
    parser.add_argument("--node", choices=("plain", "mig", "links"), default="plain",
                        help="8 GPUs with the workload set, or the MIG or HGX-link node with the full set [plain]")
    args = parser.parse_args(argv)
    checkpoints = sorted(float(m) for m in args.minutes.split(","))
    w.print_machine()
    with tempfile.TemporaryDirectory() as directory:
        scenario = str(GPUS)
        if args.node == "plain":
            counters = str(w.write_counters(directory))
        else:
            full = str(w.write_counters(directory, full=True))
            counters = w.write_link_counters(directory) if args.node == "links" else full
            scenario = f"{directory}/{args.node}.toml"
            with open(scenario, "w", encoding="utf-8") as out:
                out.write(w.mig_scenario(GPUS) if args.node == "mig" else w.links_scenario(GPUS))
        engine_port = w.free_port()
        with w.start_hostengine(engine_port, scenario) as engine:
            w.wait_for_port(engine, engine_port)
            remote = f"127.0.0.1:{engine_port}"
            common = ["-f", counters, "-c", "100", "--watch-interval", "100", "-r", remote]
            ports = w.free_port(), w.free_port()
            urls = [f"http://127.0.0.1:{p}/metrics" for p in ports]
            with w.start_collector(ports[0], *common, sim=None) as history, \
                    w.start_collector(ports[1], *common, "--retention", "30", sim=None) as baseline:
                for process, url in ((history, urls[0]), (baseline, urls[1])):
                    w.wait_for(process, url)
                started = time.monotonic()
                print(f"\n{'minutes':>7} {'RSS, 1 h kept':>14} {'RSS, 30 s kept':>15} {'ratio':>6} "
                      f"{'ring bytes':>11} {'samples held':>13} {'bytes/sample':>13} {'fixed rings':>12}")
                next_scrape = started
                for minutes in checkpoints:
                    while time.monotonic() - started < minutes * 60:
                        if time.monotonic() >= next_scrape:
                            for url in urls:
                                w.get(url)
                            next_scrape += SCRAPE_EVERY_S
                        for process in (history, baseline, engine):
                            process.check_alive()
                        time.sleep(1.0)
                    rss = [w.memory_mib(p.pid)["VmRSS"] for p in (history, baseline)]
                    ring_bytes, samples = held(urls[0])
                    fixed = fixed_ring_bytes(counters, minutes * 60) if args.node == "plain" else 9 * samples
                    print(f"{minutes:7g} {rss[0]:10.1f} MiB {rss[1]:11.1f} MiB {rss[0] / rss[1]:6.2f} "
                          f"{ring_bytes / w.MIB:7.1f} MiB {samples:13.0f} {ring_bytes / max(samples, 1):13.2f} "
                          f"{fixed / w.MIB:8.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
