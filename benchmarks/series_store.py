"""The store for series that come and go against a fixed ring of the same shape: memory per series,
write throughput, and the cost of the reads the outputs make.

In this process, one run, both measured the same way:

- **fixed**: a RingBuffer of ``--series`` columns and ``--rows`` rows (the
  shape of 8 GPUs x 64 processes x 1 field at 10 Hz for 3 minutes, by
  default), one row of every column appended at a time;
- **store, steady**: a SeriesStore of the same slots and rows holding the
  same number of series, each with a ``pid`` label, all sampled every row;
- **store, churn**: the same store while ``--churn`` of its series end every
  row and as many new ones begin (new pids: 10 a second by default, far more
  than processes come and go on a GPU node), so slots are given back after
  the TTL and taken again; its assignment table and byte bound are sized to
  remember every series its rows hold, so nothing is refused.

Memory: each one's ``nbytes`` (the store's counts the slot table and the
labels of the series it remembers, within ``max_bytes``) and what
tracemalloc saw allocated while it was made and filled, per series.  Write
throughput: samples per second appended (``time.perf_counter`` over
``--seconds`` of appends, medians of ``--repeat``).  Read: one full copy of
the rows (``rows_since(0)``) and one 15 s window, the reads history and
/metrics make.

    python benchmarks/series_store.py [--series 512] [--rows 1800] [--churn 1] [--seconds 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

import _workload as w
import numpy as np

from dcgm_collector.rings.ring import RingBuffer
from dcgm_collector.rings.series_store import SeriesStore, StoreKey

GPU, FB_USED = 1, 252
ROW_US = 100_000          # 10 Hz
KEY_BYTES = 1_024         # labels allowed per series remembered (a pid label takes about 500)


def keys_for(pids: range | list[int], gpus: int = 8) -> list[StoreKey]:
    return [StoreKey(GPU, pid % gpus, FB_USED, (("pid", str(pid)),)) for pid in pids]


def made(factory):
    """(object, bytes tracemalloc saw allocated for it and its arrays)."""
    gc.collect()
    tracemalloc.start()
    try:
        thing = factory()
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return thing, current


def throughput(write, seconds: float, repeat: int) -> tuple[float, int]:
    """(median samples per second, rows written in all) of ``write(row) -> samples`` called back to back."""
    rates, row = [], 0
    for _ in range(repeat):
        samples, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            for _ in range(50):
                samples += write(row)
                row += 1
        rates.append(samples / elapsed)
    return statistics.median(rates), row


def timed(read, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=512)
    parser.add_argument("--rows", type=int, default=1800)
    parser.add_argument("--churn", type=int, default=1, help="series replaced every row in the churn case")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, rows = args.series, args.rows
    w.print_machine()
    print(f"shape: {n} series x {rows} rows at 10 Hz; churn: {args.churn} series replaced every row")

    # -- fixed ring
    ring, ring_traced = made(lambda: RingBuffer([(GPU, i, FB_USED) for i in range(n)], rows))
    values = np.arange(n, dtype=float)

    def ring_write(row: int) -> int:
        ring.append((row + 1) * ROW_US, values)
        return n

    ring_rate, ring_rows = throughput(ring_write, args.seconds, args.repeat)
    now = ring_rows * ROW_US

    # -- store, steady: the same series every row
    max_bytes = SeriesStore.bytes_for(n, rows) + n * KEY_BYTES
    steady, steady_traced = made(lambda: SeriesStore(n, rows, ttl_s=1.0, max_bytes=max_bytes))
    steady_keys = keys_for(range(n))

    def steady_write(row: int) -> int:
        return steady.append((row + 1) * ROW_US, dict(zip(steady_keys, values.tolist())))

    steady_rate, steady_rows = throughput(steady_write, args.seconds, args.repeat)
    _, filled_traced = made(lambda: [steady_write(steady_rows + k) for k in range(rows)])

    # -- store, churn: a share of the series end every row, as many begin; slots come back after the TTL
    ttl_rows = 3
    live = n - args.churn * (ttl_rows + 1)   # room for the series that ended but whose TTL has not passed
    remembered = n + args.churn * rows       # every series the rows of the ring hold
    churn_bytes = SeriesStore.bytes_for(n, rows, remembered) + remembered * KEY_BYTES
    churned = SeriesStore(n, rows, ttl_s=ttl_rows * ROW_US / 1e6, max_bytes=churn_bytes, max_assignments=remembered)
    state = {"pids": list(range(live)), "next": live}

    def churn_write(row: int) -> int:
        pids = state["pids"]
        for i in range(args.churn):
            pids[(row * 7 + i) % live] = state["next"]
            state["next"] += 1
        return churned.append((row + 1) * ROW_US, dict(zip(keys_for(pids), values.tolist())))

    churn_rate, churn_rows = throughput(churn_write, args.seconds, args.repeat)

    print()
    print(f"{'':<16}{'nbytes/series':>15}{'traced/series':>15}{'samples/s':>14}{'vs fixed':>10}")
    print(f"{'fixed ring':<16}{ring.nbytes / n:>15,.0f}{ring_traced / n:>15,.0f}{ring_rate:>14,.0f}{1.0:>9.2f}x")
    print(f"{'store, steady':<16}{steady.nbytes / n:>15,.0f}{(steady_traced + filled_traced) / n:>15,.0f}"
          f"{steady_rate:>14,.0f}{steady_rate / ring_rate:>9.2f}x")
    print(f"{'store, churn':<16}{churned.nbytes / n:>15,.0f}{'':>15}{churn_rate:>14,.0f}"
          f"{churn_rate / ring_rate:>9.2f}x")
    print(f"store nbytes / fixed ring nbytes: steady {steady.nbytes / ring.nbytes:.3f}, churn "
          f"{churned.nbytes / ring.nbytes:.3f} (it remembers up to {remembered:,} series); churn: "
          f"{churned.expired:,} series expired, {churned.refused:,} samples refused, {churned.live_series} live")

    read_ring = timed(lambda: ring.rows_since(0))
    read_store = timed(lambda: steady.rows_since(0))
    window_ring = timed(lambda: ring.window(15_000_000, now))
    end = (steady_rows + rows) * ROW_US
    window_store = timed(lambda: steady.window(15_000_000, end))
    read_churn = timed(lambda: churned.rows_since(0))
    print(f"full copy ({rows} rows): fixed {read_ring * 1e3:.2f} ms, store {read_store * 1e3:.2f} ms "
          f"({read_store / read_ring:.2f}x), churned store {read_churn * 1e3:.2f} ms ({read_churn / read_ring:.2f}x)")
    print(f"15 s window: fixed {window_ring * 1e3:.2f} ms, store {window_store * 1e3:.2f} ms "
          f"({window_store / window_ring:.2f}x)")


if __name__ == "__main__":
    main()
