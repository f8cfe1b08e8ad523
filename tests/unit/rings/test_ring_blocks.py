"""Rings that keep their older rows in compressed blocks: the same rows come
back, bit for bit, memory follows what was written up to the retention, and
the reads that page through a ring by row number or by time cross from the
newest rows into the blocks without a gap."""

from __future__ import annotations

import numpy as np
import pytest

from dcgm_collector.rings.ring import (
    BLOCK_ROWS,
    SAMPLE_ABSENT,
    SAMPLE_BLANK,
    SAMPLE_NOT_SUPPORTED,
    SAMPLE_OK,
    RingBuffer,
)

SERIES = [(1, gpu, field) for gpu in range(2) for field in (150, 155, 156, 203, 1001)]


def _rows(n: int, seed: int = 3, first_ts: int = 1_700_000_000_000_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n rows like a GPU's: a slow temperature, a 3-decimal power, an energy counter, a utilisation, a ratio;
    with blanks, not-supported and absent cells, and the awkward doubles."""
    rng = np.random.default_rng(seed)
    ts = first_ts + np.arange(n, dtype=np.int64) * 100_000 + rng.integers(0, 80, n)
    k = np.arange(n)
    per_gpu = [
        60.0 + (k // 300) % 4,
        np.round(300 + rng.normal(0, 20, n), 3),
        4e9 + np.cumsum(rng.integers(69_000, 71_000, n)).astype(float),
        np.where(rng.random(n) < 0.9, 96.0, 97.0),
        rng.random(n),
    ]
    values = np.stack(per_gpu + per_gpu[::-1], axis=1)
    values[5, 0], values[6, 0], values[7, 0], values[8, 0] = -0.0, np.inf, -np.inf, 2.0**53 + 2
    status = np.full(values.shape, SAMPLE_OK, dtype=np.int8)
    status[rng.random(values.shape) < 0.02] = SAMPLE_BLANK
    status[:, 9][k % 2 == 1] = SAMPLE_ABSENT
    status[100:140, 4] = SAMPLE_NOT_SUPPORTED
    values[status != SAMPLE_OK] = np.nan
    return ts, values, status


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("batch", [1, 7, 1000, 5000])
def test_every_row_comes_back_bit_for_bit_from_the_blocks(batch):
    ts, values, status = _rows(5000)
    ring = RingBuffer(SERIES, capacity=3000)
    for start in range(0, 5000, batch):
        ring.append(ts[start:start + batch], values[start:start + batch], status[start:start + batch])
    held = ring.rows_since(0)
    n = len(held.ts)
    assert 3000 <= n <= 3000 + BLOCK_ROWS
    assert _same(held.ts, ts[-n:]) and _same(held.status, status[-n:]) and _same(held.values, values[-n:])
    assert ring.samples_held == int((status[-n:] != SAMPLE_ABSENT).sum())


def test_reads_by_number_and_by_time_cross_into_the_blocks():
    ts, values, status = _rows(4000)
    ring = RingBuffer(SERIES, capacity=3000)
    for start in range(0, 4000, 500):
        ring.append(ts[start:start + 500], values[start:start + 500], status[start:start + 500])
    first = ring.rows_written - len(ring.rows_since(0).ts)
    for row in (first, first + 1, first + 300, 4000 - 2 * BLOCK_ROWS - 1, 3999):
        rows, at = ring.rows_from(row, max_rows=700)
        assert at == row
        assert _same(rows.ts, ts[row:row + 700]) and _same(rows.values, values[row:row + 700])
        assert ring.first_row_since(int(ts[row])) == row
        assert _same(ring.rows_since(int(ts[row]) - 1).ts, ts[row:])
    rows, at = ring.rows_from(0, max_rows=10)
    assert at == first and _same(rows.ts, ts[first:first + 10])


def test_a_window_reaching_into_the_blocks_is_exact():
    ts, values, status = _rows(3000)
    ring = RingBuffer(SERIES, capacity=3000)
    ring.append(ts, values, status)
    since = int(ts[500])
    stats = ring.window(int(ts[-1]) - since, now_us=int(ts[-1]))
    ok = status[500:] == SAMPLE_OK
    assert stats.rows == 2500
    assert stats.count.tolist() == ok.sum(axis=0).tolist()
    assert _same(stats.max, np.where(ok, values[500:], -np.inf).max(axis=0))
    assert _same(stats.min, np.where(ok, values[500:], np.inf).min(axis=0))
    # the blocks' sums are added block by block: the same to the last few bits
    np.testing.assert_allclose(stats.avg, np.where(ok, values[500:], 0).sum(axis=0) / ok.sum(axis=0), rtol=1e-12)
    newest = np.array([np.flatnonzero(status[:, s] != SAMPLE_ABSENT)[-1] for s in range(len(SERIES))])
    assert stats.last_ts.tolist() == ts[newest].tolist()
    assert _same(stats.last_status, status[newest, np.arange(len(SERIES))])


def test_a_window_whose_newest_cell_of_a_series_is_in_a_block_reads_the_rows():
    ts, values, status = _rows(3000)
    status[-2 * BLOCK_ROWS - 10:, 3] = SAMPLE_ABSENT     # series 3 silent for the arrays' whole span
    values[status != SAMPLE_OK] = np.nan
    ring = RingBuffer(SERIES, capacity=3000)
    ring.append(ts, values, status)
    stats = ring.window(int(ts[-1]) - int(ts[100]), now_us=int(ts[-1]))
    newest = np.flatnonzero(status[:, 3] != SAMPLE_ABSENT)[-1]
    assert stats.last_ts[3] == ts[newest] and stats.rows == 2900


def test_memory_follows_the_rows_written_up_to_the_retention():
    ts, values, status = _rows(20_000)
    ring = RingBuffer(SERIES, capacity=9000)
    arrays = RingBuffer.bytes_for(len(SERIES), 9000)
    assert ring.nbytes < arrays + 32 * 1024   # nothing but the arrays of the newest rows and the blocks' index
    ring.append(ts[:3000], values[:3000], status[:3000])
    at_3000 = ring.nbytes
    ring.append(ts[3000:9000], values[3000:9000], status[3000:9000])
    at_9000 = ring.nbytes
    ring.append(ts[9000:], values[9000:], status[9000:])
    assert arrays < at_3000 < at_9000
    # full: each block in replaces one out, so it stays about where the retention put it
    assert abs(ring.nbytes - at_9000) < 0.1 * (at_9000 - arrays)
    # every sample in a block cost at most what the arrays spend on one (8 bytes and a status)
    assert (at_9000 - arrays) < 9000 * len(SERIES) * 9


def test_a_ring_kept_past_its_blocks_refuses_no_read_while_a_writer_laps_it():
    ts, values, status = _rows(6000)
    ring = RingBuffer(SERIES, capacity=2 * BLOCK_ROWS + 1)
    for start in range(0, 6000, 50):
        ring.append(ts[start:start + 50], values[start:start + 50], status[start:start + 50])
        rows = ring.rows_since(0)
        end = start + 50
        assert _same(rows.ts, ts[end - len(rows.ts):end])
