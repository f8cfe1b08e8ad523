"""The backlog reads each sample of a store of series that come and go once, counts exactly what the
store overwrote before it was read, and keeps no cursor per series however many come and go."""

from __future__ import annotations

import numpy as np

from dcgm_collector.push.backlog import Backlog
from dcgm_collector.push.wire import encode_labels
from dcgm_collector.rings.ring import SAMPLE_NOT_SUPPORTED, EventRing
from dcgm_collector.rings.series_store import SeriesStore, StoreKey
from dcgm_collector.series.samples import SampleModel, SeriesInfo, StoreSeries

GPU, FB_USED = 1, 252
T0_US = 1_796_000_000_000_000
NAME = "DCGM_FI_DEV_FB_USED"


def process(pid: int) -> StoreKey:
    return StoreKey(GPU, 0, FB_USED, (("pid", str(pid)),))


def describe(key: StoreKey) -> tuple[SeriesInfo, ...]:
    return (SeriesInfo(NAME, (("gpu", str(key.entity_id)), *key.labels), (GPU, key.entity_id), key.entity_id,
                       FB_USED, NAME, True, 0),)


def store_model(store: SeriesStore) -> SampleModel:
    return SampleModel("node", (), (), EventRing(4), (), {}, (StoreSeries(store, describe, ((NAME, FB_USED, NAME),)),))


def labels(pid: int) -> bytes:
    return encode_labels(NAME, (("gpu", "0"), ("pid", str(pid))))


def as_dict(read) -> dict[bytes, list[tuple[int, float]]]:
    out: dict[bytes, list] = {}
    for series in read:
        out.setdefault(series.labels, []).extend(zip(series.ts_ms.tolist(), series.values.tolist()))
    return out


def write_rows(store: SeriesStore, first: int, n: int, pids=(1, 2)) -> None:
    """Rows first..first+n-1, 100 ms apart; each sample's value tells its row and its process."""
    for row in range(first, first + n):
        store.append(T0_US + row * 100_000, {process(p): row * 10.0 + p for p in pids})


def ms(row: int) -> int:
    return T0_US // 1000 + row * 100


def test_each_store_sample_is_read_once_in_time_order():
    store = SeriesStore(4, 64, ttl_s=60, max_bytes=1 << 20)
    model, backlog = store_model(store), Backlog()
    write_rows(store, 0, 3)
    first = as_dict(backlog.read([model], 1000))
    write_rows(store, 3, 2, pids=(2, 3))   # process 1 ended, process 3 began
    second = as_dict(backlog.read([model], 1000))
    assert as_dict(backlog.read([model], 1000)) == {}
    assert first == {labels(p): [(ms(r), r * 10.0 + p) for r in range(3)] for p in (1, 2)}
    assert second == {labels(p): [(ms(r), r * 10.0 + p) for r in (3, 4)] for p in (2, 3)}
    assert backlog.lost == 0


def test_a_budget_takes_whole_rows_and_leaves_the_rest_for_the_next_read():
    store = SeriesStore(4, 64, ttl_s=60, max_bytes=1 << 20)
    model, backlog = store_model(store), Backlog()
    write_rows(store, 0, 10)
    read = as_dict(backlog.read([model], 7))   # three rows of two samples fit
    assert read == {labels(p): [(ms(r), r * 10.0 + p) for r in range(3)] for p in (1, 2)} and backlog.more
    rest = as_dict(backlog.read([model], 1000))
    assert [t for t, _ in rest[labels(1)]] == [ms(r) for r in range(3, 10)] and not backlog.more
    assert as_dict(backlog.read([model], 0)) == {}


def test_what_the_store_overwrote_before_it_was_read_is_counted_exactly():
    store = SeriesStore(4, 4, ttl_s=60, max_bytes=1 << 20)
    model, backlog = store_model(store), Backlog()
    write_rows(store, 0, 2)
    backlog.read([model], 1000)
    write_rows(store, 2, 5, pids=(1, 2, 3))   # 5 rows of 3 samples into a ring of 4: row 2 is overwritten
    read = as_dict(backlog.read([model], 1000))
    assert backlog.lost == 3
    assert [t for t, _ in read[labels(3)]] == [ms(r) for r in range(3, 7)]
    write_rows(store, 7, 1)
    backlog.read([model], 1000)
    assert backlog.lost == 3


def test_samples_that_are_not_numbers_are_not_sent_and_not_lost():
    store = SeriesStore(4, 16, ttl_s=60, max_bytes=1 << 20)
    store.append(T0_US, {process(1): 5.0, process(2): np.nan})
    store.append(T0_US + 100_000, {process(1): 6.0}, status={process(1): SAMPLE_NOT_SUPPORTED})
    backlog = Backlog()
    assert as_dict(backlog.read([store_model(store)], 1000)) == {labels(1): [(T0_US // 1000, 5.0)]}
    store.append(T0_US + 200_000, {process(1): 7.0})
    assert as_dict(backlog.read([store_model(store)], 1000)) == {labels(1): [(T0_US // 1000 + 200, 7.0)]}
    assert backlog.lost == 0


def test_a_later_row_in_the_same_millisecond_as_one_sent_is_not_sent_again():
    store = SeriesStore(4, 16, ttl_s=60, max_bytes=1 << 20)
    model, backlog = store_model(store), Backlog()
    store.append(T0_US + 100, {process(1): 1.0})
    backlog.read([model], 1000)
    store.append(T0_US + 600, {process(1): 2.0})            # the same millisecond: a receiver refuses it
    store.append(T0_US + 1_000, {process(1): 3.0, process(2): 4.0})
    assert as_dict(backlog.read([model], 1000)) == {labels(1): [(T0_US // 1000 + 1, 3.0)],
                                                    labels(2): [(T0_US // 1000 + 1, 4.0)]}
    assert backlog.lost == 0


def test_series_that_come_and_go_leave_no_state_behind():
    store = SeriesStore(4, 8, ttl_s=0.05, max_bytes=1 << 20)
    model, backlog = store_model(store), Backlog()
    for row in range(2_000):
        store.append(T0_US + row * 100_000, {process(row): float(row)})   # a new process every row
        if row % 50 == 0:
            backlog.read([model], 1000)
    backlog.read([model], 1000)
    assert len(backlog._store_labels) <= 8 and not backlog._taken   # noqa: SLF001 -- what would pile up
    assert backlog.describe(labels(1_999)) == f'{NAME}{{gpu="0",pid="1999"}}'
