"""The history API's cursor against real rings: each sample once in order, late rows, gaps, bad cursors."""

from __future__ import annotations

import json

import pytest

from dcgm_collector.expose import history_cursor
from dcgm_collector.expose.history import QueryError, answer, parse_query
from dcgm_collector.expose.history_cursor import MAX_CHARS, Cursor, CursorError, decode, encode
from dcgm_collector.model import EntityType
from dcgm_collector.rings.ring import (
    SAMPLE_ABSENT,
    SAMPLE_BLANK,
    SAMPLE_NOT_SUPPORTED,
    SAMPLE_OK,
    EventRing,
    RingBuffer,
)
from dcgm_collector.series.samples import EventSeries, RingSeries, SampleModel, SeriesInfo

GPU = int(EntityType.GPU)
T0 = 1_764_590_000_000_000
NOW = T0 + 3_600_000_000
FIELDS = "155,150,203,230"


def _xid_labels(entity, value):
    return ((("gpu", str(entity[1])), ("err_code", str(value))),)


def _info(name, gpu, field, column, integer=False):
    return SeriesInfo(name, (("gpu", str(gpu)),), (GPU, gpu), gpu, field, name, integer, column)


class Node:
    """Two rings on their own clocks and an event ring, written a step at a time as the sampler would."""

    def __init__(self, capacity: int = 1000) -> None:
        self.fast = RingBuffer([(GPU, 0, 155), (GPU, 1, 155), (GPU, 0, 150)], capacity=capacity)
        self.slow = RingBuffer([(GPU, 0, 203)], capacity=capacity)
        self.events = EventRing(64)
        self.k = 0
        self.model = SampleModel("node", (), (
            RingSeries(self.fast, (_info("DCGM_FI_DEV_POWER_USAGE", 0, 155, 0),
                                   _info("DCGM_FI_DEV_POWER_USAGE", 1, 155, 1),
                                   _info("DCGM_FI_DEV_GPU_TEMP", 0, 150, 2, integer=True))),
            RingSeries(self.slow, (_info("DCGM_FI_DEV_GPU_UTIL", 0, 203, 0, integer=True),)),
        ), self.events, (EventSeries("DCGM_FI_DEV_XID_ERRORS", 230, "DCGM_FI_DEV_XID_ERRORS", _xid_labels),))

    def step(self, n: int = 1) -> None:
        """n rows of the fast ring (100 ms apart), a slow row every 2.5 of them, an XID every 7th."""
        for _ in range(n):
            k, self.k = self.k, self.k + 1
            status = [SAMPLE_OK, SAMPLE_ABSENT if k % 7 == 3 else SAMPLE_OK, SAMPLE_OK]
            self.fast.append(T0 + k * 100_000, [100.0 + k / 4, 200.0 + k, 40.0 + k % 3], status)
            if k % 5 in (0, 2):
                self.slow.append(T0 + 50_000 + k * 100_000, [float(k % 100)])
            if k % 7 == 6:
                self.events.append(T0 + k * 100_000 + 10, GPU, k % 2, 230, 40 + k)


def _ask(model: SampleModel, **params) -> dict:
    query = parse_query({k: [str(v)] for k, v in params.items()}, NOW)
    return json.loads(answer([model], query).body)["data"]


def _samples(data: dict) -> list[tuple]:
    return [(s["metric"], tuple(sorted(s["labels"].items())), t, v) for s in data["series"] for t, v in s["samples"]]


def _by_series(samples: list[tuple]) -> dict[tuple, list]:
    series: dict[tuple, list] = {}
    for metric, labels, t, v in samples:
        series.setdefault((metric, labels), []).append((t, v))
    return series


def test_following_cursors_gives_every_sample_once_and_in_order_as_one_big_query_does():
    node = Node()
    node.step(5)
    first = _ask(node.model, field=FIELDS, since="0")
    seen, cursor = _samples(first), first["cursor"]
    for n in (1, 0, 3, 1, 1, 9, 0, 2, 4, 1):
        node.step(n)
        data = _ask(node.model, field=FIELDS, cursor=cursor)
        assert not data["truncated"] and data["gap"] is False and data["since_us"] is None
        assert len({t for *_, t, _ in _samples(data)}) >= n   # the new rows, no more
        seen += _samples(data)
        cursor = data["cursor"]
    whole = _samples(_ask(node.model, field=FIELDS, since="0"))
    assert len(whole) > 80
    assert sorted(seen) == sorted(whole)   # XIDs alike at one time are two samples: compare as multisets
    assert _by_series(seen) == _by_series(whole)   # and each series' samples in time order
    assert _ask(node.model, field=FIELDS, cursor=cursor)["series"] == []   # nothing new: no series at all


@pytest.mark.parametrize("limit", [1, 2, 5, 13, 100])
def test_a_cursor_behind_by_more_than_the_limit_catches_up_each_sample_once(limit):
    node = Node()
    cursor = _ask(node.model, field=FIELDS, since="0")["cursor"]   # nothing written yet
    node.step(60)
    seen, answers = [], 0
    while True:
        data = _ask(node.model, field=FIELDS, cursor=cursor, limit=limit)
        seen += _samples(data)
        answers += 1
        cursor = data["cursor"]
        if not data["truncated"]:
            break
        assert answers < 1000 and "next_since" not in data
    assert answers >= min(len(seen) // max(limit, 4), 10)
    whole = _samples(_ask(node.model, field=FIELDS, since="0"))
    assert sorted(seen) == sorted(whole) and _by_series(seen) == _by_series(whole)


def test_a_late_row_of_a_slower_ring_comes_once_in_the_next_answer():
    node = Node()
    node.step(10)
    data = _ask(node.model, field="155,203", since="0")
    newest = max(t for *_, t, _ in _samples(data))
    node.slow.append(newest - 300_000, [77.0])   # a slow field group writes an older sample after the answer
    later = _ask(node.model, field="155,203", cursor=data["cursor"])
    assert _samples(later) == [("DCGM_FI_DEV_GPU_UTIL", (("gpu", "0"),), newest - 300_000, 77)]
    assert _samples(_ask(node.model, field="155,203", cursor=later["cursor"])) == []
    # a since query past the newest sample (the fallback without cursors) would have missed it
    assert _samples(_ask(node.model, field="203", since=f"{(newest + 1) / 1e6:.6f}")) == []


def test_a_back_dated_row_in_one_ring_waits_for_the_next_answer_and_comes_once():
    node = Node()
    node.step(3)
    cursor = _ask(node.model, field="155", since="0")["cursor"]
    node.fast.append(T0 + 10 * 100_000, [1.0, 2.0, 3.0])
    node.fast.append(T0 + 5 * 100_000, [4.0, 5.0, 6.0])    # older than the row before it
    node.fast.append(T0 + 11 * 100_000, [7.0, 8.0, 9.0])
    first = _ask(node.model, field="155", cursor=cursor)
    assert [v for *_, v in _samples(first)] == [1.0, 2.0] and first["truncated"]   # up to the late row
    second = _ask(node.model, field="155", cursor=first["cursor"])
    assert sorted(v for *_, v in _samples(second)) == [4.0, 5.0, 7.0, 8.0] and not second["truncated"]
    assert _by_series(_samples(second))[("DCGM_FI_DEV_POWER_USAGE", (("gpu", "0"),))] == [
        (T0 + 5 * 100_000, 4.0), (T0 + 11 * 100_000, 7.0)]   # in time order within the answer


def test_a_cursor_older_than_the_ring_answers_from_the_oldest_row_held_and_says_gap():
    node = Node(capacity=8)
    node.step(2)
    cursor = _ask(node.model, field="155", since="0")["cursor"]
    node.step(20)   # 20 rows into a ring of 8: 12 were overwritten
    data = _ask(node.model, field="155", cursor=cursor)
    assert data["gap"] is True
    stamps = sorted({t for *_, t, _ in _samples(data)})
    assert stamps == [T0 + k * 100_000 for k in range(14, 22)]   # the 8 rows held
    following = _ask(node.model, field="155", cursor=data["cursor"])
    assert following["gap"] is False and following["series"] == []


def test_the_cursor_of_a_span_goes_on_after_the_rows_the_answer_read_even_when_it_was_paged():
    node = Node()
    node.step(30)
    page = _ask(node.model, field=FIELDS, since="0", limit=10)
    assert page["truncated"]
    node.step(4)
    after = _ask(node.model, field=FIELDS, cursor=page["cursor"])
    assert {t for *_, t, _ in _samples(after)} >= {T0 + k * 100_000 for k in range(30, 34)}
    assert min(t for *_, t, _ in _samples(after)) >= T0 + 30 * 100_000   # nothing of what the rings held then


def test_a_ring_the_cursor_does_not_name_is_read_from_the_cursors_resume_time():
    node = Node()
    node.step(10)
    data = _ask(node.model, field="155", since="0")   # names the fast ring only
    node.step(3)
    both = _ask(node.model, field="155,203", cursor=data["cursor"])
    util = {t for m, _, t, _ in _samples(both) if m == "DCGM_FI_DEV_GPU_UTIL"}
    assert util == {T0 + 50_000 + k * 100_000 for k in (10, 12)}   # the slow rows after the newest sample given


def test_events_follow_the_cursor_once_each():
    node = Node()
    node.step(7)
    first = _ask(node.model, field="230", since="0")
    assert [v for *_, v in _samples(first)] == [46]
    node.step(14)
    data = _ask(node.model, field="230", cursor=first["cursor"])
    assert [v for *_, v in _samples(data)] == [53, 60]
    assert _ask(node.model, field="230", cursor=data["cursor"])["series"] == []


def test_the_cursor_is_short_url_safe_and_bounded_however_many_rings():
    node = Node()
    node.step(3)
    text = _ask(node.model, field=FIELDS, since="0")["cursor"]
    assert text.isascii() and all(c.isalnum() or c in "-_" for c in text) and len(text) <= 40
    many = Cursor(T0, {serial: 10**9 + serial * 13 for serial in range(1, 400)})
    long = encode(many)
    assert len(long) <= MAX_CHARS
    kept = decode(long)
    assert kept.resume_us == T0 and 30 <= len(kept.rows) < 399
    assert all(kept.rows[s] == many.rows[s] for s in kept.rows)   # the rings left out are read by time


@pytest.mark.parametrize("text", ["", "x", "AAAA", "!!!!", "a" * 201, "AZgb9zXM1tGegoGq\u00e9", "AQ", "AQ=="])
def test_a_malformed_cursor_is_a_one_line_400_naming_cursor(text):
    with pytest.raises(QueryError) as info:
        parse_query({"field": ["155"], "cursor": [text]}, NOW)
    message = str(info.value)
    assert message.startswith("cursor: ") and "is not a cursor this collector gave" in message
    assert "\n" not in message and len(message) < 200


def test_every_cut_or_altered_cursor_is_refused_never_misread():
    node = Node()
    node.step(3)
    text = _ask(node.model, field=FIELDS, since="0")["cursor"]
    for cut in range(len(text)):
        with pytest.raises(CursorError):
            decode(text[:cut])
    with pytest.raises(CursorError):
        decode(text + "AA")


def test_a_cursor_from_another_process_is_refused():
    other = encode(Cursor(T0, {1: 5}), token=bytes(6) if history_cursor.PROCESS_TOKEN != bytes(6) else b"x" * 6)
    with pytest.raises(QueryError) as info:
        parse_query({"field": ["155"], "cursor": [other]}, NOW)
    assert str(info.value) == ("cursor: it is from another collector process (this one restarted since, or another "
                               "made it); start again with since")


def test_a_cursor_naming_rows_not_written_is_refused():
    node = Node()
    node.step(3)
    forged = encode(Cursor(T0, {node.fast.serial: 10**6}))
    with pytest.raises(QueryError) as info:
        answer([node.model], parse_query({"field": ["155"], "cursor": [forged]}, NOW))
    assert str(info.value) == "cursor: it names rows not written yet (it is not one this collector gave)"


@pytest.mark.parametrize("other", ["since", "until"])
def test_a_cursor_with_since_or_until_is_refused(other):
    node = Node()
    text = _ask(node.model, field="155", since="0")["cursor"]
    with pytest.raises(QueryError) as info:
        parse_query({"field": ["155"], "cursor": [text], other: ["5m"]}, NOW)
    assert str(info.value) == ("cursor: give either cursor or since/until, not both (a cursor goes on from where "
                               "the answer that gave it ended)")


def test_rows_from_numbers_rows_in_commit_order_and_says_where_the_ring_starts():
    ring = RingBuffer([(GPU, 0, 155)], capacity=4)
    assert ring.rows_from(0)[0].ts.tolist() == [] and ring.rows_from(0)[1] == 0
    for k in range(6):
        ring.append(T0 + k, [float(k)])
    rows, first = ring.rows_from(1)
    assert first == 2 and rows.ts.tolist() == [T0 + 2, T0 + 3, T0 + 4, T0 + 5]
    rows, first = ring.rows_from(3, max_rows=2)
    assert first == 3 and rows.ts.tolist() == [T0 + 3, T0 + 4]
    assert ring.rows_from(6)[0].ts.tolist() == [] and ring.first_row_since(T0 + 4) == 4
    assert ring.rows_since(0, end_row=5).ts.tolist() == [T0 + 2, T0 + 3, T0 + 4]


def _odd_node() -> SampleModel:
    """One ring whose cells are every kind a sample can be: numbers, blank, not supported, absent, NaN, huge."""
    ring = RingBuffer([(GPU, 0, 155), (GPU, 0, 150), (GPU, 1, 150)], capacity=100)
    return SampleModel("odd", (), (RingSeries(ring, (_info("DCGM_FI_DEV_POWER_USAGE", 0, 155, 0),
                                                     _info("DCGM_FI_DEV_GPU_TEMP", 0, 150, 1, integer=True),
                                                     _info("DCGM_FI_DEV_GPU_TEMP", 1, 150, 2, integer=True))),),
                       EventRing(8), ())


def _odd_rows(model: SampleModel, first: int, n: int) -> None:
    kinds = [SAMPLE_OK, SAMPLE_BLANK, SAMPLE_NOT_SUPPORTED, SAMPLE_ABSENT, SAMPLE_OK]
    numbers = [1.5, -0.0, float("nan"), 3e20, 1e16, 7.0, -2.25]
    for k in range(first, first + n):
        row = [numbers[k % 7], numbers[(k + 2) % 7], float(k)]
        model.rings[0].ring.append(T0 + k * 100_000, row, [kinds[k % 5], kinds[(k + 1) % 5], SAMPLE_OK])


def test_a_few_rows_after_a_cursor_read_as_many_rows_are():
    """The answer of a few rows (made without numpy) holds the same samples, as the same JSON, as one of many."""
    many, few = _odd_node(), _odd_node()
    start_many = _ask(many, field="155,150", since="0")["cursor"]
    cursor = _ask(few, field="155,150", since="0")["cursor"]
    _odd_rows(many, 0, 40)
    whole = _ask(many, field="155,150", cursor=start_many)
    followed, k = [], 0
    for n in (1, 3, 1, 1, 2, 1, 5, 1, 1, 4, 1, 1, 3, 1, 1, 1, 2, 1, 4, 1, 1, 1, 1, 1):   # 40 rows, one at a time mostly
        _odd_rows(few, k, n)
        k += n
        data = _ask(few, field="155,150", cursor=cursor)
        followed += _samples(data)
        cursor = data["cursor"]
    assert k == 40
    typed = [(metric, labels, t, v, type(v)) for metric, labels, t, v in followed]   # 40 and 40.0 differ in JSON
    assert sorted(typed, key=repr) == sorted(((*s, type(s[3])) for s in _samples(whole)), key=repr)
    assert _by_series(followed) == _by_series(_samples(whole))
    ints = [v for metric, labels, t, v in _samples(whole) if metric == "DCGM_FI_DEV_GPU_TEMP" and v is not None]
    assert ints and all(type(v) is int for v in ints)
    assert None in [v for *_, v in followed] and 3e20 in [v for *_, v in followed]
