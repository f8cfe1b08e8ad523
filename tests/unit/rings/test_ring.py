"""Ring buffers on their own: rows in and out, window statistics, wrap-around,
and the reader guarantee under a writer committing as fast as it can."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from dcgm_collector.rings.ring import (
    BLOCK_ROWS,
    SAMPLE_ABSENT,
    SAMPLE_BLANK,
    SAMPLE_NOT_SUPPORTED,
    SAMPLE_OK,
    EventRing,
    RingBuffer,
    SeriesKey,
)

NAN = np.nan
OK, BL, NS, AB = SAMPLE_OK, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED, SAMPLE_ABSENT
TWO = [SeriesKey(1, 0, 150), SeriesKey(1, 1, 150)]


def _three_series_ring() -> RingBuffer:
    ring = RingBuffer([(1, 0, 155), (1, 1, 155), (1, 2, 155)], capacity=16)
    # ts      gpu0          gpu1                 gpu2
    ring.append(1_000, [10.0, 1.0, NAN], [OK, OK, AB])
    ring.append(2_000, [20.0, NAN, NAN], [OK, BL, AB])
    ring.append(3_000, [30.0, 5.0, NAN], [OK, OK, NS])
    ring.append(4_000, [NAN, NAN, NAN], [AB, NS, AB])
    return ring


def test_rows_come_back_as_appended():
    ring = RingBuffer(TWO, capacity=4)
    ring.append(100, [1.5, 2.5])
    ring.append([200, 300], [[3.0, NAN], [4.0, 5.0]], [[OK, BL], [OK, OK]])
    rows = ring.rows_since(0)
    assert rows.ts.tolist() == [100, 200, 300]
    np.testing.assert_array_equal(rows.values, [[1.5, 2.5], [3.0, NAN], [4.0, 5.0]])
    assert rows.status.tolist() == [[OK, OK], [OK, BL], [OK, OK]]
    assert ring.rows_written == 3
    assert ring.index((1, 1, 150)) == 1


def test_a_cell_that_is_not_ok_is_stored_as_nan_whatever_value_was_given():
    ring = RingBuffer(TWO, capacity=2)
    ring.append(1, [7.0, 8.0], [NS, AB])
    rows = ring.rows_since(0)
    assert np.isnan(rows.values).all()
    assert rows.status.tolist() == [[NS, AB]]


def test_a_nan_value_defaults_to_blank():
    ring = RingBuffer(TWO, capacity=2)
    ring.append(1, [NAN, 3.0])
    assert ring.rows_since(0).status.tolist() == [[BL, OK]]


def test_window_statistics_are_exact_and_ignore_blank_not_supported_and_absent_cells():
    stats = _three_series_ring().window(10_000, now_us=4_000)
    assert stats.rows == 4
    np.testing.assert_array_equal(stats.min, [10.0, 1.0, NAN])
    np.testing.assert_array_equal(stats.max, [30.0, 5.0, NAN])
    np.testing.assert_array_equal(stats.avg, [20.0, 3.0, NAN])
    assert stats.count.tolist() == [3, 2, 0]
    # last: the newest cell that is not ABSENT, whatever its status
    np.testing.assert_array_equal(stats.last, [30.0, NAN, NAN])
    assert stats.last_status.tolist() == [OK, NS, NS]
    assert stats.last_ts.tolist() == [3_000, 4_000, 3_000]


def test_window_bounds_are_inclusive_and_rows_after_now_are_left_out():
    ring = _three_series_ring()
    stats = ring.window(1_000, now_us=3_000)  # [2000, 3000]
    assert (stats.since_us, stats.until_us, stats.rows) == (2_000, 3_000, 2)
    np.testing.assert_array_equal(stats.min, [20.0, 5.0, NAN])
    assert stats.count.tolist() == [2, 1, 0]
    assert stats.last_status.tolist() == [OK, OK, NS]


def test_a_window_without_rows_has_nan_statistics_and_absent_last():
    stats = _three_series_ring().window(500, now_us=900)
    assert stats.rows == 0
    assert np.isnan(stats.min).all() and np.isnan(stats.max).all() and np.isnan(stats.avg).all()
    assert np.isnan(stats.last).all()
    assert stats.count.tolist() == [0, 0, 0]
    assert stats.last_status.tolist() == [AB, AB, AB]
    assert stats.last_ts.tolist() == [0, 0, 0]


def test_window_statistics_raise_no_numpy_warnings(recwarn):
    ring = RingBuffer(TWO, capacity=4)
    ring.append([1, 2], [[NAN, 1.0], [NAN, 2.0]], [[BL, OK], [NS, OK]])
    ring.window(10, now_us=2)
    RingBuffer(TWO, capacity=4).window(10, now_us=2)
    assert not recwarn.list


def test_window_defaults_to_now():
    ring = RingBuffer(TWO, capacity=4)
    now = time.time_ns() // 1000
    ring.append([now - 5_000_000, now - 1_000], [[1.0, 1.0], [2.0, 2.0]])
    assert ring.window(1_000_000).count.tolist() == [1, 1]


def test_wrap_around_keeps_the_newest_rows():
    ring = RingBuffer(TWO, capacity=5)
    for t in range(12):
        ring.append(t, [t, -t])
    rows = ring.rows_since(0)
    assert rows.ts.tolist() == [7, 8, 9, 10, 11]
    assert rows.values[:, 0].tolist() == [7, 8, 9, 10, 11]
    assert ring.rows_written == 12
    assert ring.newest_ts == 11
    assert RingBuffer(TWO, capacity=5).newest_ts is None


def test_one_append_of_more_rows_than_the_capacity_keeps_the_newest():
    ring = RingBuffer(TWO, capacity=5)
    ts = np.arange(12)
    ring.append(ts, np.stack([ts, ts], axis=1).astype(float))
    assert ring.rows_since(0).ts.tolist() == [7, 8, 9, 10, 11]
    assert ring.rows_written == 5


@pytest.mark.parametrize(
    ("since", "expected"),
    [(0, [10, 20, 30]), (-5, [10, 20, 30]), (10, [10, 20, 30]), (11, [20, 30]), (20, [20, 30]),
     (30, [30]), (31, [])],
)
def test_rows_since_includes_its_bound(since, expected):
    ring = RingBuffer(TWO, capacity=8)
    for t in (10, 20, 30):
        ring.append(t, [1.0, 2.0])
    rows = ring.rows_since(since)
    assert rows.ts.tolist() == expected
    assert rows.values.shape == (len(expected), 2) and rows.status.shape == (len(expected), 2)


def test_an_empty_ring_reads_as_no_rows():
    ring = RingBuffer(TWO, capacity=3)
    assert len(ring.rows_since(0).ts) == 0
    assert ring.rows_written == 0


def test_a_late_row_is_stored_and_ends_a_scan_that_reaches_back_past_it():
    ring = RingBuffer(TWO, capacity=8)
    for t in (10, 20, 30, 15):
        ring.append(t, [1.0, 1.0])
    assert ring.rows_since(0).ts.tolist() == [10, 20, 30, 15]
    assert ring.rows_since(12).ts.tolist() == [20, 30, 15]
    assert ring.rows_since(18).ts.tolist() == []  # 15 < 18 ends the scan: 20 and 30 are hidden


def test_a_ring_of_two_blocks_or_fewer_rows_is_fixed_at_construction():
    series = [(1, gpu, field) for gpu in range(8) for field in range(100, 130)]
    ring = RingBuffer(series, capacity=2 * BLOCK_ROWS)
    rows = 2 * BLOCK_ROWS
    assert ring.nbytes == rows * 8 + rows * 240 * 8 + rows * 240 + 16 == RingBuffer.bytes_for(240, rows)
    before = ring.nbytes
    ring.append(np.arange(20_000), np.ones((20_000, 240)))
    assert ring.nbytes == before
    assert ring.samples_held == rows * 240


@pytest.mark.parametrize(
    ("series", "capacity", "error"),
    [([], 4, ValueError), ([(1, 0, 150), (1, 0, 150)], 4, ValueError), ([(1, 0)], 4, TypeError),
     ("abc", 4, TypeError), (TWO, 0, ValueError), (TWO, 2.5, TypeError), ([(1, -1, 150)], 4, ValueError)],
)
def test_bad_rings_are_refused(series, capacity, error):
    with pytest.raises(error):
        RingBuffer(series, capacity)


def test_bad_appends_are_refused():
    ring = RingBuffer(TWO, capacity=4)
    with pytest.raises(ValueError):
        ring.append(1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        ring.append(1, [1.0, 2.0], [OK, 7])
    assert ring.rows_written == 0


def test_event_ring_keeps_events_with_their_own_times():
    events = EventRing(capacity=4)
    events.append(100, 1, 0, 230, 13)
    events.append([200, 200, 300], [1, 1, 1], [0, 1, 0], 230, [13, 48, 79])
    got = events.since(150)
    assert got.ts.tolist() == [200, 200, 300]
    assert got.entity_id.tolist() == [0, 1, 0]
    assert got.value.tolist() == [13, 48, 79]
    assert got.field_id.tolist() == [230] * 3
    events.append([400, 500], 1, 2, 230, 31)
    assert events.since(0).ts.tolist() == [200, 300, 400, 500]
    assert events.rows_written == 6
    assert events.nbytes == 4 * (8 + 4 + 4 + 2 + 8) + 16


# ---- the reader guarantee ----------------------------------------------------

STRESS_SERIES = 256
STRESS_CAPACITY = 12


def _stress_rows(start: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows whose every cell is a function of the row's ts, so a mixed row shows."""
    ts = np.arange(start, start + n, dtype=np.int64)
    columns = np.arange(STRESS_SERIES)
    values = ts[:, None] * 1000.0 + columns[None, :]
    status = np.where((ts[:, None] + columns[None, :]) % 7 == 0, BL, OK).astype(np.int8)
    return ts, values, status


def _check_rows(rows) -> None:
    if len(rows.ts) == 0:
        return
    assert (np.diff(rows.ts) == 1).all(), "rows must be consecutive and ascending"
    _, values, status = _stress_rows(int(rows.ts[0]), len(rows.ts))
    np.testing.assert_array_equal(rows.status, status)
    np.testing.assert_array_equal(rows.values, np.where(status == OK, values, NAN))


def test_readers_never_see_a_half_written_row():
    ring = RingBuffer([(1, 0, f) for f in range(STRESS_SERIES)], STRESS_CAPACITY)
    stop = threading.Event()
    failures: list[BaseException] = []
    reads = [0]

    def writer() -> None:
        t = 1
        while not stop.is_set():
            ts, values, status = _stress_rows(t, 5)
            ring.append(ts, values, status)
            t += 5

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                head = ring.rows_written
                rows = ring.rows_since(int(rng.integers(0, head + 1)) if rng.random() < 0.5 else 0)
                _check_rows(rows)
                stats = ring.window(STRESS_CAPACITY, now_us=int(rows.ts[-1]) if len(rows.ts) else 0)
                assert stats.rows <= STRESS_CAPACITY
                reads[0] += 1
        except BaseException as error:  # reported from the main thread
            failures.append(error)
            stop.set()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    assert reads[0] > 100
    assert ring.rows_written > 10 * STRESS_CAPACITY


def test_rows_since_can_stop_after_the_oldest_few():
    # a reader paging through a ring copies a bounded slice at a time: the oldest rows from since on
    ring = RingBuffer(TWO, capacity=8)
    for t in range(1, 11):   # 10 rows into 8: rows 3..10 held
        ring.append(t * 100, [float(t), float(-t)])
    assert ring.rows_since(0, 3).ts.tolist() == [300, 400, 500]
    assert ring.rows_since(650, 2).ts.tolist() == [700, 800]
    assert ring.rows_since(650, 100).ts.tolist() == [700, 800, 900, 1000]
    assert ring.rows_since(650, 0).ts.tolist() == []
    rows = ring.rows_since(900, 1)
    assert rows.values.tolist() == [[9.0, -9.0]] and rows.status.shape == (1, 2)
