"""What the rings cost to read: window aggregates and history copies, this checkout against an older one.

One ring of an hour of 100 ms rows (36,000) for 8 GPUs x 30 fields (240
series), filled with values shaped like a GPU's (constant clocks and limits,
integer temperatures and utilisations that walk, powers and energies with
decimals, a few blanks), then timed in process, medians of repeated calls:

- ``window 15 s`` / ``5 min`` / ``1 h``: ``RingBuffer.window`` at the newest
  row, what /metrics computes for each ``_min``/``_max``/``_avg`` family;
- ``copy 15 min`` / ``copy 1 h``: ``rows_since``, what the history API, remote
  write's backlog and the recorder read;
- ``append 1 row``: one committed row, the write the drain makes every tick;

and the ring's bytes.  With ``--before PYTHON`` the same measurement also runs
under another interpreter whose environment has an older dcgm-collector (the
fixed rings before compression, for example), in interleaved rounds, and the
table gives this checkout's time over the older one's:

    git worktree add /tmp/rings-before 44f5c90^
    python -m venv /tmp/rings-before/.venv && /tmp/rings-before/.venv/bin/pip install /tmp/rings-before
    python benchmarks/ring_reads.py --before /tmp/rings-before/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

GPUS, FIELDS = 8, 30
ROWS = 36_000            # an hour at 100 ms
STEP_US = 100_000
FIGURES = ("window 15 s", "window 5 min", "window 1 h", "copy 15 min", "copy 1 h", "append 1 row")


def values(rng, rows: int, n: int):
    """(rows, n) values shaped like a GPU's fields, and a few blanks (NaN)."""
    import numpy as np

    out = np.empty((rows, n))
    for column in range(n):
        kind = column % 5
        if kind == 0:     # a clock or a limit: constant
            out[:, column] = 1980.0
        elif kind == 1:   # a temperature or a utilisation: an integer that walks
            out[:, column] = np.clip(60 + np.cumsum(rng.integers(-1, 2, rows)), 0, 100)
        elif kind == 2:   # a power: watts with two decimals
            out[:, column] = np.round(450 + 200 * rng.random(rows), 2)
        elif kind == 3:   # a running energy counter in mJ
            out[:, column] = np.cumsum(rng.integers(40_000, 70_000, rows)).astype(float)
        else:             # a ratio with many digits (profiling)
            out[:, column] = rng.random(rows)
    out[rng.random((rows, n)) < 0.001] = np.nan
    return out


def measure(repeat: int) -> dict[str, float]:
    """Median seconds of each figure, and the ring's bytes, for the dcgm_collector importable here."""
    import numpy as np

    from dcgm_collector.rings.ring import RingBuffer

    rng = np.random.default_rng(28)
    series = [(1, gpu, 100 + field) for gpu in range(GPUS) for field in range(FIELDS)]
    ring = RingBuffer(series, ROWS)
    start_us = 1_700_000_000_000_000
    ts = start_us + STEP_US * np.arange(ROWS, dtype=np.int64)
    data = values(rng, ROWS, len(series))
    for first in range(0, ROWS - 1, 1000):   # in batches, as a drain of a backlog would
        last = min(first + 1000, ROWS - 1)
        ring.append(ts[first:last], data[first:last])
    now_us = int(ts[ROWS - 2])
    calls = {
        "window 15 s": lambda: ring.window(15_000_000, now_us),
        "window 5 min": lambda: ring.window(300_000_000, now_us),
        "window 1 h": lambda: ring.window(3_600_000_000, now_us),
        "copy 15 min": lambda: ring.rows_since(now_us - 900_000_000),
        "copy 1 h": lambda: ring.rows_since(0),
    }
    out: dict[str, float] = {}
    for name, call in calls.items():
        call()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    # the newest row is written last, and timed once: a ring holds one row per time
    t0 = time.perf_counter()
    ring.append(ts[ROWS - 1], data[ROWS - 1])
    out["append 1 row"] = time.perf_counter() - t0
    out["bytes"] = float(ring.nbytes)
    return out


def run_under(python: str, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cwd:   # away from the checkout, so the installed package is imported
        done = subprocess.run([python, __file__, "--child", "--repeat", str(repeat)], capture_output=True,
                              text=True, cwd=cwd, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{python}: the measurement failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="PYTHON", help="an interpreter with an older dcgm-collector installed")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds [%(default)s]")
    parser.add_argument("--repeat", type=int, default=20, help="calls timed per figure and round [%(default)s]")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.repeat)))
        return 0
    sys.path.insert(0, __file__.rpartition("/")[0])
    import _workload as w

    w.print_machine()
    pythons = {"this checkout": sys.executable, **({"before": args.before} if args.before else {})}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in pythons}
    for number in range(args.rounds):
        for name, python in pythons.items():
            rounds[name].append(run_under(python, args.repeat))
            print(f"round {number + 1} {name}: " + ", ".join(
                f"{figure} {rounds[name][-1][figure] * 1e3:.3f} ms" for figure in FIGURES), flush=True)
    medians = {name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
               for name, runs in rounds.items()}
    print()
    print(f"8 GPUs x {FIELDS} fields, {ROWS:,} rows of 100 ms; medians of {args.rounds} rounds")
    print()
    header = "| figure | this checkout |" + (" before | ratio |" if args.before else "")
    print(header)
    print("| --- | --- |" + (" --- | --- |" if args.before else ""))
    for figure in (*FIGURES, "bytes"):
        ours = medians["this checkout"][figure]
        shown = (lambda v: f"{v / 2**20:.1f} MiB") if figure == "bytes" else (lambda v: f"{v * 1e3:.3f} ms")
        row = f"| {figure} | {shown(ours)} |"
        if args.before:
            theirs = medians["before"][figure]
            row += f" {shown(theirs)} | {ours / theirs:.2f}x |" if theirs > 0 else f" {shown(theirs)} | n/a |"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
