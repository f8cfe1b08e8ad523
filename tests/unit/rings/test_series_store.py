"""The store for series that come and go: attribution of every sample to its series, the bounds
(series, bytes, assignments) refusing and counting, the time to live, and the reader guarantee
under a writer churning series as fast as it can."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Iterator, Mapping

import numpy as np
import pytest

from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED, SAMPLE_OK, RingBuffer
from dcgm_collector.rings.series_store import SeriesStore, StoreKey, store_key

NAN = np.nan
OK, BL, NS, AB = SAMPLE_OK, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED, SAMPLE_ABSENT
MB = 1 << 20


def pid(n: int, field: int = 155, gpu: int = 0) -> StoreKey:
    return StoreKey(1, gpu, field, (("pid", str(n)),))


def samples_of(rows, key: StoreKey) -> list[tuple[int, float, int]]:
    """(ts, value, status) of every sample of one series in rows read from a store."""
    if key not in rows.keys:
        return []
    mine = rows.series == rows.keys.index(key)
    return [(int(t), float(v), int(s)) for t, v, s in zip(rows.ts[rows.row[mine]], rows.values[mine],
                                                          rows.status[mine])]


def test_samples_come_back_under_their_series_in_key_order():
    store = SeriesStore(4, 16, ttl_s=60, max_bytes=MB)
    assert store.append(1_000, {pid(7): 70.0, pid(3): 30.0}) == 2
    assert store.append(2_000, {pid(3): 31.0, pid(5): NAN}) == 2
    assert store.append(3_000, {pid(5): 52.0}, status={pid(5): NS}) == 1
    rows = store.rows_since(0)
    assert rows.ts.tolist() == [1_000, 2_000, 3_000]
    assert rows.keys == (pid(3), pid(5), pid(7))   # sorted: "3" < "5" < "7"
    assert samples_of(rows, pid(3)) == [(1_000, 30.0, OK), (2_000, 31.0, OK)]
    got = samples_of(rows, pid(5))
    assert [(t, s) for t, _, s in got] == [(2_000, BL), (3_000, NS)] and all(np.isnan(v) for _, v, _ in got)
    assert samples_of(rows, pid(7)) == [(1_000, 70.0, OK)]
    assert store.rows_since(2_000).ts.tolist() == [2_000, 3_000]
    assert store.rows_since(0, max_rows=1).ts.tolist() == [1_000]


def test_a_key_may_be_a_plain_tuple_and_labels_a_mapping():
    store = SeriesStore(2, 4, ttl_s=60, max_bytes=MB)
    store.append(1, {(1, 0, 155, (("namespace", "n"), ("pod", "a"))): 1.0, (1, 1, 155): 2.0})
    store.append(2, {store_key((1, 0, 155, {"pod": "a", "namespace": "n"})): 3.0})
    rows = store.rows_since(0)
    assert rows.keys == (StoreKey(1, 0, 155, (("namespace", "n"), ("pod", "a"))), StoreKey(1, 1, 155))
    assert samples_of(rows, rows.keys[0]) == [(1, 1.0, OK), (2, 3.0, OK)]
    assert store.live_series == 2


@pytest.mark.parametrize("key, error", [
    ((1, 0), TypeError),
    ((1, 0, 70_000), ValueError),
    ((1, 0, 155, (("pod", "a"), ("pid", "1"))), ValueError),   # not sorted
    ((1, 0, 155, (("pid", 1),)), TypeError),                  # a value that is not text
    ((1, 0, 155, (("", "x"),)), ValueError),
])
def test_a_bad_key_is_refused_with_nothing_written(key, error):
    store = SeriesStore(2, 4, ttl_s=60, max_bytes=MB)
    with pytest.raises(error):
        store.append(1, {pid(1): 1.0, key: 2.0})
    assert store.rows_written == 0 and store.live_series == 0


def test_a_bad_status_is_refused_with_nothing_written():
    store = SeriesStore(2, 4, ttl_s=60, max_bytes=MB)
    with pytest.raises(ValueError, match="status"):
        store.append(1, {pid(1): 1.0}, status={pid(1): AB})
    assert store.rows_written == 0 and store.live_series == 0


def test_a_row_not_newer_than_the_last_is_refused_and_counted():
    store = SeriesStore(2, 4, ttl_s=60, max_bytes=MB)
    store.append(2_000, {pid(1): 1.0})
    assert store.append(2_000, {pid(1): 2.0}) == 0
    assert store.append(1_000, {pid(1): 3.0}) == 0
    assert store.late_rows == 2
    assert samples_of(store.rows_since(0), pid(1)) == [(2_000, 1.0, OK)]


def test_series_beyond_the_bound_are_refused_and_counted_and_memory_stays_put():
    store = SeriesStore(2, 8, ttl_s=60, max_bytes=MB)
    before = store.nbytes
    assert store.append(1, {pid(1): 1.0, pid(2): 2.0, pid(3): 3.0}) == 2
    assert store.append(2, {pid(3): 3.0, pid(4): 4.0}) == 0
    assert store.refused == 3
    assert store.live_series == 2
    assert store.rows_since(0).keys == (pid(1), pid(2))
    # the two admitted series' labels are all that was added, and nothing more for the refused ones
    assert 0 < store.nbytes - before < 2_000
    assert store.nbytes <= store.max_bytes


def test_each_row_says_how_many_samples_were_stored_through_it():
    store = SeriesStore(2, 3, ttl_s=60, max_bytes=MB)
    for t, row in enumerate(({pid(1): 1.0}, {pid(1): 2.0, pid(2): 3.0, pid(3): 4.0}, {pid(2): 5.0}, {pid(1): 6.0})):
        store.append(t + 1, row)
    assert store.refused == 1 and store.samples_stored == 5
    rows = store.rows_since(0)   # the first row is overwritten: the counts go on from it
    assert rows.ts.tolist() == [2, 3, 4] and rows.stored.tolist() == [3, 4, 5]


def test_the_byte_bound_is_set_when_made_and_refuses_labels_that_do_not_fit():
    with pytest.raises(ValueError, match="max_bytes"):
        SeriesStore(100, 1_000, ttl_s=60, max_bytes=SeriesStore.bytes_for(100, 1_000) - 1)
    fixed = SeriesStore.bytes_for(8, 16)
    store = SeriesStore(8, 16, ttl_s=60, max_bytes=fixed + 2_000)
    small = StoreKey(1, 0, 155, (("pid", "1"),))
    huge = StoreKey(1, 0, 155, (("cmdline", "x" * 5_000),))
    assert store.append(1, {small: 1.0, huge: 2.0}) == 1
    assert store.refused == 1
    assert store.rows_since(0).keys == (small,)
    assert fixed < store.nbytes <= store.max_bytes
    # memory of the ring itself is what bytes_for says
    assert RingBuffer.bytes_for(8, 16) < fixed


def test_a_series_without_a_sample_for_the_ttl_expires_and_its_slot_goes_to_a_new_one():
    store = SeriesStore(1, 16, ttl_s=0.005, max_bytes=MB)   # 5 ms
    store.append(1_000, {pid(1): 1.0})
    store.append(4_000, {pid(1): 2.0})
    assert store.append(6_000, {pid(2): 20.0}) == 0        # pid 1 is 2 ms old: it keeps the only slot
    assert store.refused == 1
    assert store.append(9_001, {pid(2): 21.0}) == 1        # 5.001 ms after pid 1's last sample
    assert store.expired == 1 and store.live_series == 1
    rows = store.rows_since(0)
    # one column of the ring held both series, each sample under its own
    assert samples_of(rows, pid(1)) == [(1_000, 1.0, OK), (4_000, 2.0, OK)]
    assert samples_of(rows, pid(2)) == [(9_001, 21.0, OK)]


def test_a_series_that_comes_back_after_it_expired_keeps_one_history():
    store = SeriesStore(2, 16, ttl_s=0.002, max_bytes=MB)
    store.append(1_000, {pid(1): 1.0, pid(2): 2.0})
    store.append(5_000, {pid(2): 2.5, pid(3): 3.0})        # pid 1 expires; pid 3 takes its slot
    store.append(9_000, {pid(1): 1.5})                     # pid 2 and 3 expire; pid 1 comes back
    rows = store.rows_since(0)
    assert samples_of(rows, pid(1)) == [(1_000, 1.0, OK), (9_000, 1.5, OK)]
    assert samples_of(rows, pid(2)) == [(1_000, 2.0, OK), (5_000, 2.5, OK)]
    assert samples_of(rows, pid(3)) == [(5_000, 3.0, OK)]
    assert store.expired == 3


def test_a_series_that_samples_again_in_the_row_that_would_expire_it_keeps_its_slot():
    store = SeriesStore(1, 16, ttl_s=0.001, max_bytes=MB)
    store.append(1_000, {pid(1): 1.0})
    assert store.append(5_000, {pid(1): 2.0}) == 1
    assert store.expired == 0 and store.live_series == 1


def test_an_empty_row_is_a_tick_that_expires_series_without_writing():
    store = SeriesStore(1, 16, ttl_s=0.001, max_bytes=MB)
    store.append(1_000, {pid(1): 1.0})
    assert store.append(5_000, {}) == 0
    assert store.expired == 1 and store.live_series == 0 and store.rows_written == 1
    assert store.append(3_000, {pid(2): 2.0}) == 1   # the tick wrote no row: 3_000 is still newer
    assert store.rows_since(0).keys == (pid(1), pid(2))


def test_readers_ignore_series_past_their_ttl_even_when_no_row_expired_them():
    store = SeriesStore(4, 64, ttl_s=0.010, max_bytes=MB)
    store.append(1_000, {pid(1): 1.0, pid(2): 5.0})
    store.append(2_000, {pid(1): 3.0})
    store.append(10_500, {pid(1): 2.0})
    window = store.window(60_000, now_us=10_500)
    assert window.keys == (pid(1), pid(2))                 # pid 2's last sample is 9.5 ms old
    window = store.window(60_000, now_us=11_500)
    assert window.keys == (pid(1),)                        # 10.5 ms: gone, though no row expired it
    assert (window.stats.min.tolist(), window.stats.max.tolist(), window.stats.avg.tolist()) == ([1.0], [3.0], [2.0])
    assert window.stats.last.tolist() == [2.0] and window.stats.last_ts.tolist() == [10_500]
    assert window.stats.count.tolist() == [3]
    assert store.window(60_000, now_us=30_000).keys == ()
    # past samples are still read: an expired series' history is what happened
    assert samples_of(store.rows_since(0), pid(2)) == [(1_000, 5.0, OK)]
    assert store.live_series == 2   # the writer's count, until a row expires them


def test_a_window_leaves_out_rows_after_now_and_before_its_start():
    store = SeriesStore(2, 16, ttl_s=60, max_bytes=MB)
    for t, v in ((1_000, 1.0), (2_000, 7.0), (3_000, 4.0), (4_000, 9.0)):
        store.append(t, {pid(1): v})
    window = store.window(1_000, now_us=3_000)
    assert window.stats.rows == 2 and window.stats.max.tolist() == [7.0] and window.stats.last.tolist() == [4.0]


def test_expired_series_are_forgotten_once_the_ring_overwrote_their_rows():
    store = SeriesStore(2, 4, ttl_s=0.001, max_bytes=MB, max_assignments=2)
    bytes_empty = store.nbytes
    store.append(1_000, {pid(1): 1.0})
    store.append(3_000, {pid(2): 2.0})       # pid 1 expires, its rows stay: two assignments remembered
    assert store.append(5_000, {pid(3): 3.0}) == 0   # pid 2 expires too, but no assignment is free
    assert store.refused == 1
    for t in (6_000, 7_000):
        store.append(t, {})                 # ticks write no row: the ring still holds pid 1's
    assert store.append(8_000, {pid(3): 3.5}) == 0
    # pid 1's row is overwritten by the rows that followed it (4 rows held): its assignment is let go
    store.append(9_000, {(1, 0, 200): 0.0})
    assert store.append(10_000, {pid(3): 3.75}) == 1
    rows = store.rows_since(0)
    assert rows.ts.tolist() == [5_000, 8_000, 9_000, 10_000]
    assert pid(1) not in rows.keys and samples_of(rows, pid(3)) == [(10_000, 3.75, OK)]
    assert store.nbytes > bytes_empty


def test_memory_is_bounded_however_many_series_come_and_go():
    store = SeriesStore(8, 32, ttl_s=0.0015, max_bytes=SeriesStore.bytes_for(8, 32) + 8 * 2_000)
    for row in range(5_000):
        store.append((row + 1) * 1_000, {pid(row * 3 + k): float(k) for k in range(3)})   # 3 new series a row
        assert store.nbytes <= store.max_bytes
    assert store.live_series <= 8
    assert store.expired > 1_000
    rows = store.rows_since(0)
    assert len(rows.ts) == 32
    assert all(len(samples_of(rows, key)) == 1 for key in rows.keys)


class _BlockingSamples(Mapping):
    """Samples whose reading waits until released: holds a writer inside append."""

    def __init__(self, inside: threading.Event, release: threading.Event) -> None:
        self.inside, self.release = inside, release

    def __getitem__(self, key):
        return 1.0

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator:
        self.inside.set()
        self.release.wait(10)
        yield pid(1)


def test_a_second_writer_at_the_same_time_is_refused():
    store = SeriesStore(2, 4, ttl_s=60, max_bytes=MB)
    inside, release = threading.Event(), threading.Event()
    first = threading.Thread(target=store.append, args=(1, _BlockingSamples(inside, release)))
    first.start()
    assert inside.wait(10)
    try:
        with pytest.raises(RuntimeError, match="one writer"):
            store.append(2, {pid(2): 2.0})
    finally:
        release.set()
        first.join()
    assert store.rows_since(0).keys == (pid(1),)


@pytest.mark.parametrize("kwargs", [
    {"max_series": 0}, {"capacity": 0}, {"ttl_s": 0}, {"ttl_s": float("inf")}, {"max_bytes": 0},
    {"max_assignments": 1},
])
def test_bad_bounds_are_refused(kwargs):
    args = {"max_series": 2, "capacity": 4, "ttl_s": 1.0, "max_bytes": MB, **kwargs}
    with pytest.raises(ValueError):
        SeriesStore(args.pop("max_series"), args.pop("capacity"), **args)


ROW_US = 1_000
STEP = 2**20      # a sample's value is pid * STEP + row number: it says whose and when it is


@pytest.fixture
def short_switch_interval():
    """Threads switch every 10 µs instead of 5 ms: the writer and readers interleave far more often."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def test_readers_see_every_sample_under_its_own_series_while_a_writer_churns(short_switch_interval):
    """A writer starts and ends series (new pids, and pids coming back after they expired) as fast
    as it can, wrapping a small ring; readers copy rows and windows meanwhile, lock-free.  Every
    sample read must be one its series wrote at that row, and the rows held at the end hold
    exactly what was stored."""
    store = SeriesStore(32, 64, ttl_s=3 * ROW_US / 1e6, max_bytes=8 * MB, max_assignments=512)
    stop = threading.Event()
    errors: list[BaseException] = []
    checked = [0, 0]
    stored_by_row: dict[int, int] = {}

    def check(rows) -> int:
        pids = np.array([int(key.labels[0][1]) for key in rows.keys], dtype=np.int64)
        assert all(key.entity_id == pid % 4 for key, pid in zip(rows.keys, pids.tolist()))
        values = rows.values.astype(np.int64)
        assert (rows.status != AB).all()
        wrong = values // STEP != pids[rows.series]
        assert not wrong.any(), f"a sample of another series under {rows.keys[rows.series[wrong][0]]}"
        assert (values % STEP == rows.ts[rows.row] // ROW_US).all(), "a sample of another row"
        assert np.all(np.diff(rows.row) >= 0), "samples out of time order"
        return len(values)

    def writer() -> None:
        rng = random.Random(7)
        active: dict[int, int] = {}          # pid -> rows left
        resting: list[int] = []              # pids that ended: some come back after they expired
        next_pid = 1
        try:
            for row in range(1, STEP):
                if stop.is_set():
                    break
                if len(active) < 6 and rng.random() < 0.6:
                    if resting and rng.random() < 0.3:
                        p = resting.pop(rng.randrange(len(resting)))
                    else:
                        p, next_pid = next_pid, next_pid + 1
                    active[p] = rng.randint(1, 12)
                samples = {StoreKey(1, p % 4, 155, (("pid", str(p)),)): float(p * STEP + row) for p in active}
                stored_by_row[row] = store.append(row * ROW_US, samples)
                for p in list(active):
                    active[p] -= 1
                    if active[p] == 0:
                        del active[p]
                        resting.append(p)
        except BaseException as error:   # reported from the main thread
            errors.append(error)
        finally:
            stop.set()

    def reader(i: int) -> None:
        try:
            while not stop.is_set():
                checked[i] += check(store.rows_since(0))
                window = store.window(10 * ROW_US, now_us=(store.newest_ts or 0))
                assert len(set(window.keys)) == len(window.keys)
        except BaseException as error:
            errors.append(error)
            stop.set()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    assert min(checked) > 0, checked   # each reader checked samples
    assert store.expired > 100 and store.rows_written > 1_000
    final = store.rows_since(0)
    assert len(final.ts) == 64
    assert check(final) == sum(stored_by_row[int(t) // ROW_US] for t in final.ts)
