"""The backlog reads each sample of the rings once, under its /metrics name, across reloads and outages."""

from __future__ import annotations

import numpy as np

from dcgm_collector.push.backlog import Backlog
from dcgm_collector.push.wire import encode_labels
from dcgm_collector.rings.ring import SAMPLE_BLANK, SAMPLE_OK, EventRing, RingBuffer
from dcgm_collector.series.samples import EventSeries, RingSeries, SampleModel, SeriesInfo

GPU = 1
POWER, TEMP, XID = 155, 150, 230
T0_US = 1_796_000_000_000_000


def ring_model(ring: RingBuffer, events: EventRing | None = None, target: str = "node") -> SampleModel:
    series = tuple(SeriesInfo(name, (("gpu", str(gpu)),), (GPU, gpu), gpu, field, name, False, ring.index((GPU, gpu,
                                                                                                             field)))
                   for name, field in (("DCGM_FI_DEV_POWER_USAGE", POWER), ("DCGM_FI_DEV_GPU_TEMP", TEMP))
                   for gpu in (0, 1))

    def xid_labels(entity, value):
        return ((("gpu", str(entity[1])), ("err_code", str(value))),)

    return SampleModel(target, (), (RingSeries(ring, series),), events or EventRing(16),
                       (EventSeries("DCGM_FI_DEV_XID_ERRORS", XID, "DCGM_FI_DEV_XID_ERRORS", xid_labels),))


def new_ring(capacity: int = 100) -> RingBuffer:
    return RingBuffer([(GPU, gpu, field) for field in (POWER, TEMP) for gpu in (0, 1)], capacity)


def add_rows(ring: RingBuffer, first: int, n: int) -> None:
    """Rows first..first+n-1, 100 ms apart; each cell's value tells its row and column."""
    rows = np.arange(first, first + n)
    ring.append(T0_US + rows * 100_000, rows[:, None] * 10.0 + np.arange(4)[None, :])


def as_dict(read) -> dict[bytes, list[tuple[int, float]]]:
    out: dict[bytes, list] = {}
    for series in read:
        out.setdefault(series.labels, []).extend(zip(series.ts_ms.tolist(), series.values.tolist()))
    return out


def power(gpu: int) -> bytes:
    return encode_labels("DCGM_FI_DEV_POWER_USAGE", (("gpu", str(gpu)),))


def test_each_sample_is_read_once_in_time_order():
    ring = new_ring()
    model = ring_model(ring)
    backlog = Backlog()
    add_rows(ring, 0, 3)
    first = as_dict(backlog.read([model], 1000))
    add_rows(ring, 3, 2)
    second = as_dict(backlog.read([model], 1000))
    assert as_dict(backlog.read([model], 1000)) == {}
    assert first[power(1)] == [(T0_US // 1000 + r * 100, r * 10.0 + 1) for r in range(3)]
    assert second[power(1)] == [(T0_US // 1000 + r * 100, r * 10.0 + 1) for r in (3, 4)]
    assert len(first) == len(second) == 4
    assert backlog.lost == 0


def test_blank_cells_are_not_sent():
    ring = new_ring()
    ring.append(T0_US, [1.0, np.nan, 3.0, 4.0], [SAMPLE_OK, SAMPLE_BLANK, SAMPLE_OK, SAMPLE_OK])
    read = as_dict(Backlog().read([ring_model(ring)], 1000))
    assert power(1) not in read and len(read) == 3


def test_a_reload_with_new_rings_sends_no_sample_twice():
    old = new_ring()
    backlog = Backlog()
    add_rows(old, 0, 5)
    backlog.read([ring_model(old)], 1000)
    new = new_ring()   # a reload: a new sampler, whose rings may hold samples the old ones had
    add_rows(new, 3, 4)
    read = as_dict(backlog.read([ring_model(new)], 1000))
    assert read[power(0)] == [(T0_US // 1000 + r * 100, r * 10.0) for r in (5, 6)]


def test_the_budget_leaves_the_rest_in_the_ring():
    ring = new_ring()
    model = ring_model(ring)
    backlog = Backlog()
    add_rows(ring, 0, 10)
    first = as_dict(backlog.read([model], 8))       # two rows of four series
    assert backlog.more
    rest = as_dict(backlog.read([model], 1000))
    assert not backlog.more
    assert [t for t, _ in first[power(0)]] == [T0_US // 1000, T0_US // 1000 + 100]
    assert [t for t, _ in rest[power(0)]] == [T0_US // 1000 + r * 100 for r in range(2, 10)]
    assert backlog.lost == 0


def test_rows_a_ring_overwrote_before_they_were_read_are_counted():
    ring = new_ring(capacity=5)
    model = ring_model(ring)
    backlog = Backlog()
    add_rows(ring, 0, 2)
    backlog.read([model], 1000)
    add_rows(ring, 2, 4)
    add_rows(ring, 6, 4)     # rows 2..9; the ring keeps 5..9: rows 2, 3, 4 are gone
    read = as_dict(backlog.read([model], 1000))
    assert [t for t, _ in read[power(0)]] == [T0_US // 1000 + r * 100 for r in range(5, 10)]
    assert backlog.lost == 3 * 4


def test_events_are_samples_of_their_series_at_their_own_time():
    ring, events = new_ring(), EventRing(16)
    model = ring_model(ring, events)
    backlog = Backlog()
    events.append(T0_US + 1234, GPU, 1, XID, 79)
    events.append(T0_US + 1500, GPU, 1, XID, 79)   # same millisecond as the one before: one sample
    events.append(T0_US + 5000, GPU, 0, XID, 13)
    read = as_dict(backlog.read([model], 1000))
    xid79 = encode_labels("DCGM_FI_DEV_XID_ERRORS", (("gpu", "1"), ("err_code", "79")))
    xid13 = encode_labels("DCGM_FI_DEV_XID_ERRORS", (("gpu", "0"), ("err_code", "13")))
    assert read == {xid79: [(T0_US // 1000 + 1, 79.0)], xid13: [(T0_US // 1000 + 5, 13.0)]}
    events.append(T0_US + 9000, GPU, 1, XID, 79)
    assert as_dict(backlog.read([model], 1000)) == {xid79: [(T0_US // 1000 + 9, 79.0)]}


def test_a_series_with_new_labels_starts_at_the_targets_newest_sample():
    ring = new_ring()
    backlog = Backlog()
    add_rows(ring, 0, 3)
    backlog.read([ring_model(ring)], 1000)
    add_rows(ring, 3, 2)
    relabelled = ring_model(ring)   # the same columns, now served with a pod label
    relabelled = SampleModel(relabelled.target, (), (RingSeries(ring, tuple(
        SeriesInfo(s.name, (*s.labels, ("pod", "p")), s.entity, s.gpu, s.field_id, s.field_name, s.integer, s.column)
        for s in relabelled.rings[0].series)),), relabelled.events, ())
    read = as_dict(backlog.read([relabelled], 1000))
    pod_power = encode_labels("DCGM_FI_DEV_POWER_USAGE", (("gpu", "0"), ("pod", "p")))
    assert read[pod_power] == [(T0_US // 1000 + r * 100, r * 10.0) for r in (3, 4)]   # not rows 0-2 again
