"""The history API: query parsing (strict numbers, one-line errors) and answers (pages, cuts, bounded memory)."""

from __future__ import annotations

import json
import math
import tracemalloc

import numpy as np
import pytest

from dcgm_collector.expose import history
from dcgm_collector.expose.history import DEFAULT_SPAN_S, MAX_SAMPLES, QueryError, answer, parse_query
from dcgm_collector.model import EntityType
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_BLANK, SAMPLE_OK, EventRing, RingBuffer
from dcgm_collector.series.samples import EventSeries, RingSeries, SampleModel, SeriesInfo

NOW_US = 1_764_590_400_000_000   # 2025-12-01T12:00:00Z


def test_defaults_are_the_last_minute_and_the_whole_bound():
    q = parse_query({"field": ["155"]}, NOW_US)
    assert (q.fields, q.gpus, q.until_us, q.since_us, q.limit) == (
        ("155",), None, NOW_US, NOW_US - round(DEFAULT_SPAN_S * 1e6), MAX_SAMPLES)


@pytest.mark.parametrize(("since", "expected_us"), [
    ("30s", NOW_US - 30_000_000), ("5m", NOW_US - 300_000_000), ("1h", NOW_US - 3_600_000_000),
    ("250ms", NOW_US - 250_000), ("1764590340.5", 1_764_590_340_500_000),
    ("2025-12-01T11:59:00Z", NOW_US - 60_000_000), ("2025-12-01T12:59:00+01:00", NOW_US - 60_000_000),
])
def test_times_are_unix_seconds_rfc3339_or_durations_back_from_now(since, expected_us):
    assert parse_query({"field": ["155"], "since": [since]}, NOW_US).since_us == expected_us


def test_fields_and_gpus_repeat_or_take_commas():
    q = parse_query({"field": ["155,DCGM_FI_DEV_GPU_TEMP", "gpu_power"], "gpu": ["0,2", "3"]}, NOW_US)
    assert q.fields == ("155", "DCGM_FI_DEV_GPU_TEMP", "gpu_power") and q.gpus == frozenset({0, 2, 3})


@pytest.mark.parametrize(("query", "error"), [
    ({"field": ["155"], "since": ["2025-12-01T11:59:00"]}, "since: '2025-12-01T11:59:00' has no time zone "
                                                           "(add Z or +00:00)"),
    ({"field": ["155"], "since": ["1", "2"]}, "since: give it once, not 2 times"),
    ({"field": ["155"], "until": ["-5"]}, "until: '-5' is not a time"),
    ({"field": ["155"], "since": ["1e300"]}, "since: '1e300' is out of range (before 1970 or after the year 9999)"),
    ({"field": ["155"], "since": ["99999999999h"]}, "since: '99999999999h' is out of range (before 1970 or after "
                                                    "the year 9999)"),
    ({"field": ["155"], "gpu": ["-1"]}, "gpu: '-1' is not a list of GPU ids"),
    ({"field": ["155"], "limit": ["many"]}, "limit: 'many' is not a whole number"),
    ({"field": [" , "]}, "field: missing; name one or more fields by id, DCGM name or metric name "
                         "(field=DCGM_FI_DEV_POWER_USAGE or field=155)"),
])
def test_bad_parameters_name_themselves(query, error):
    with pytest.raises(QueryError) as info:
        parse_query(query, NOW_US)
    assert str(info.value) == error


# ---- strict numbers ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", [
    "1e308", "1e400", "9" * 400, "9" * 400 + "s", "1e400ms", "1e99999999999999999999", "inf", "-inf", "nan",
    "Infinity", "١٢", "١٢s", "١٢٣٤٥٦٧٨٩٠", "+5", " 5", "5 ", "1_000", "1_000s", "0x10", "5e", ".5", "5.", "1,5",
    "\uff15", "5\u00a0", "2025-12-01T11:59:00Z\n", "٢٠٢٥-12-01T11:59:00Z", "2025-13-01T11:59:00Z",
    "0000-12-01T11:59:00Z", "99999999999h",
])
def test_every_bad_time_is_a_one_line_error_naming_it(name, value):
    with pytest.raises(QueryError) as info:
        parse_query({"field": ["155"], name: [value]}, NOW_US)
    text = str(info.value)
    assert text.startswith(f"{name}: ") and "\n" not in text and len(text) < 200


@pytest.mark.parametrize(("query", "error"), [
    ({"limit": ["1_000"]}, "limit: '1_000' is not a whole number"),
    ({"limit": ["+5"]}, "limit: '+5' is not a whole number"),
    ({"limit": [" 5"]}, "limit: ' 5' is not a whole number"),
    ({"limit": ["١٠"]}, "limit: '١٠' is not a whole number"),
    ({"limit": ["1e3"]}, "limit: '1e3' is not a whole number"),
    ({"limit": ["-1"]}, "limit: '-1' is not a whole number"),
    ({"limit": ["9" * 400]}, "limit: '" + "9" * 37 + "...' is out of range [1, 200000]"),
    ({"limit": ["200001"]}, "limit: 200001 is out of range [1, 200000]"),
    ({"gpu": ["+1"]}, "gpu: '+1' is not a list of GPU ids"),
    ({"gpu": ["0, 1"]}, "gpu: '0, 1' is not a list of GPU ids"),
    ({"gpu": ["0,,1"]}, "gpu: '0,,1' is not a list of GPU ids"),
    ({"gpu": ["١"]}, "gpu: '١' is not a list of GPU ids"),
    ({"gpu": [""]}, "gpu: '' is not a list of GPU ids"),
    ({"gpu": ["99999999999"]}, "gpu: 99999999999 is out of range [0, 2147483647]"),
])
def test_limit_and_gpu_are_whole_ascii_numbers_in_range(query, error):
    with pytest.raises(QueryError) as info:
        parse_query({"field": ["155"], **query}, NOW_US)
    assert str(info.value) == error


def test_times_are_exact_to_the_microsecond():
    q = parse_query({"field": ["155"], "since": ["1764590340.123457"], "until": ["1.7645904e9"]}, NOW_US)
    assert (q.since_us, q.until_us) == (1_764_590_340_123_457, 1_764_590_400_000_000)
    q = parse_query({"field": ["155"], "since": ["2025-12-01T11:59:00.0000015Z"], "until": ["0.5s"]}, NOW_US)
    assert (q.since_us, q.until_us) == (NOW_US - 60_000_000 + 2, NOW_US - 500_000)
    assert parse_query({"field": ["155"], "since": ["0"]}, NOW_US).since_us == 0


# ---- answers -------------------------------------------------------------------------------

GPU = int(EntityType.GPU)
T0 = 1_764_590_000_000_000


def _xid_labels(entity, value):
    return ((("gpu", str(entity[1])), ("err_code", str(value))),)


def _node(rows: int = 40, xids: tuple[tuple[int, int, int], ...] = ()) -> SampleModel:
    """Two rings on their own clocks and an event ring: power of GPUs 0 and 1 and the temperature of GPU 0 every
    100 ms (with gaps), utilisation of GPU 0 every 250 ms starting 50 ms in, and XIDs (ts, gpu, code)."""
    fast = RingBuffer([(GPU, 0, 155), (GPU, 1, 155), (GPU, 0, 150)], capacity=1000)
    for k in range(rows):
        status = [SAMPLE_OK, SAMPLE_ABSENT if k % 7 == 3 else SAMPLE_OK, SAMPLE_BLANK if k % 5 == 2 else SAMPLE_OK]
        fast.append(T0 + k * 100_000, [100.0 + k / 4, 200.0 + k, 40.0 + k % 3], status)
    slow = RingBuffer([(GPU, 0, 203)], capacity=1000)
    for k in range(rows * 2 // 5):
        slow.append(T0 + 50_000 + k * 250_000, [float(k % 100)])
    events = EventRing(64)
    for ts, gpu, code in xids:
        events.append(ts, GPU, gpu, 230, code)

    def info(name, gpu, field, column, integer=False):
        return SeriesInfo(name, (("gpu", str(gpu)),), (GPU, gpu), gpu, field, name, integer, column)

    return SampleModel("node", (), (
        RingSeries(fast, (info("DCGM_FI_DEV_POWER_USAGE", 0, 155, 0), info("DCGM_FI_DEV_POWER_USAGE", 1, 155, 1),
                          info("DCGM_FI_DEV_GPU_TEMP", 0, 150, 2, integer=True))),
        RingSeries(slow, (info("DCGM_FI_DEV_GPU_UTIL", 0, 203, 0, integer=True),)),
    ), events, (EventSeries("DCGM_FI_DEV_XID_ERRORS", 230, "DCGM_FI_DEV_XID_ERRORS", _xid_labels),))


FIELDS = "155,150,203,230"
XIDS = ((T0, 1, 79), (T0, 0, 13), (T0 + 100_000, 1, 48), (T0 + 150_000, 0, 31), (T0 + 1_000_000, 1, 79),
        (T0 + 1_000_000, 1, 79), (T0 + 3_900_000, 0, 94))


def _ask(model: SampleModel, **params) -> dict:
    query = parse_query({k: [str(v)] for k, v in params.items()}, T0 + 10_000_000)
    return json.loads(answer([model], query).body)["data"]


def _samples(data: dict) -> list[tuple]:
    return [(s["metric"], tuple(sorted(s["labels"].items())), t, v) for s in data["series"] for t, v in s["samples"]]


def _follow(model: SampleModel, limit: int, **params) -> tuple[list[tuple], int]:
    """Every sample of the pages from since on, following next_since; and how many pages it took."""
    since = params.pop("since")
    seen: list[tuple] = []
    for page in range(1, 10_000):
        data = _ask(model, since=since, limit=limit, **params)
        seen += _samples(data)
        stamps = {t for *_, t, _ in _samples(data)}
        if len(_samples(data)) > limit:
            assert len(stamps) == 1, "only a page of one timestamp may pass the limit"
        if not data["truncated"]:
            assert "next_since" not in data
            return seen, page
        assert round(data["next_since"] * 1e6) > data["since_us"]   # every page moves on
        assert all(t < round(data["next_since"] * 1e6) for t in stamps)
        since = data["next_since"]
    pytest.fail("following next_since never ended")


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 7, 10, 33, 100, 1000])
def test_following_next_since_returns_every_sample_once_and_ends(limit):
    model = _node(xids=XIDS)
    until = f"{(T0 + 3_950_000) / 1e6:.6f}"
    whole = _ask(model, field=FIELDS, since=f"{T0 / 1e6:.6f}", until=until)
    assert not whole["truncated"]
    expected = _samples(whole)   # two XIDs alike at one time are two samples: compare as multisets
    assert len(expected) > 130
    seen, pages = _follow(model, limit, field=FIELDS, since=f"{T0 / 1e6:.6f}", until=until)
    assert sorted(seen) == sorted(expected)
    assert pages >= min(len(expected) // limit, 40)


def test_a_limit_below_one_row_pages_whole_timestamps():
    # the first timestamp holds three ring samples and two XIDs: a page of limit 1 holds all five, then moves on
    model = _node(xids=XIDS)
    data = _ask(model, field=FIELDS, since=f"{T0 / 1e6:.6f}", limit=1)
    assert data["truncated"] and round(data["next_since"] * 1e6) == T0 + 50_000
    assert sorted((m, v) for m, _, t, v in _samples(data)) == sorted([
        ("DCGM_FI_DEV_POWER_USAGE", 100.0), ("DCGM_FI_DEV_POWER_USAGE", 200.0), ("DCGM_FI_DEV_GPU_TEMP", 40),
        ("DCGM_FI_DEV_XID_ERRORS", 13), ("DCGM_FI_DEV_XID_ERRORS", 79)])


def test_events_at_the_cut_are_not_split_from_their_rows():
    # limit 3 is spent by the ring rows at T0: the XIDs at T0 come in the same page, and next_since is later
    model = _node(xids=XIDS)
    data = _ask(model, field="155,150,230", since=f"{T0 / 1e6:.6f}", limit=3)
    assert {t for *_, t, _ in _samples(data)} == {T0} and len(_samples(data)) == 5
    assert round(data["next_since"] * 1e6) == T0 + 100_000
    # events alone at the start of the span, before any ring row
    data = _ask(model, field="230", since=f"{(T0 - 1) / 1e6:.6f}", limit=1)
    assert len(_samples(data)) == 2 and round(data["next_since"] * 1e6) == T0 + 100_000


def test_an_answer_past_its_deadline_is_cut_at_a_slab_and_pages_on(monkeypatch):
    monkeypatch.setattr(history, "SLAB_SAMPLES", 10)
    model = _node(xids=XIDS)
    query = parse_query({"field": [FIELDS], "since": [f"{T0 / 1e6:.6f}"]}, T0 + 10_000_000)
    cut = answer([model], query, deadline=0.0)
    data = json.loads(cut.body)["data"]
    assert data["truncated"] and 10 <= len(_samples(data)) < 20 and cut.samples == len(_samples(data))
    pauses = []
    whole = answer([model], query, pause=lambda: pauses.append(1))
    assert not whole.truncated and len(pauses) > 10   # light requests get their turn between series and slabs
    seen, since = [], data["since_us"] / 1e6
    while True:
        query = parse_query({"field": [FIELDS], "since": [f"{since:.6f}"]}, T0 + 10_000_000)
        page = json.loads(answer([model], query, deadline=0.0).body)["data"]
        seen += _samples(page)
        if not page["truncated"]:
            break
        since = page["next_since"]
    assert sorted(seen) == sorted(_samples(json.loads(whole.body)["data"]))


def test_values_are_numbers_or_null_and_integers_stay_integers():
    ring = RingBuffer([(GPU, 0, 155), (GPU, 0, 150)], capacity=8)
    ring.append([T0, T0 + 1, T0 + 2], [[1.5, 40.0], [math.inf, 41.0], [np.nan, 42.0]],
                [[SAMPLE_OK, SAMPLE_OK], [SAMPLE_OK, SAMPLE_BLANK], [SAMPLE_BLANK, SAMPLE_OK]])
    model = SampleModel("node", (), (RingSeries(ring, (
        SeriesInfo("power", (), (GPU, 0), 0, 155, "DCGM_FI_DEV_POWER_USAGE", False, 0),
        SeriesInfo("temp", (), (GPU, 0), 0, 150, "DCGM_FI_DEV_GPU_TEMP", True, 1))),), EventRing(4), ())
    data = _ask(model, field="155,150", since=f"{T0 / 1e6:.6f}")
    power, temp = data["series"]
    assert power["samples"] == [[T0, 1.5], [T0 + 1, None], [T0 + 2, None]]
    assert temp["samples"] == [[T0, 40], [T0 + 1, None], [T0 + 2, 42]]
    assert all(isinstance(v, int) for _, v in temp["samples"] if v is not None)


def test_the_answer_is_the_json_it_always_was():
    data = _ask(_node(rows=3, xids=((T0 + 100_000, 1, 79),)), field=FIELDS, since=f"{T0 / 1e6:.6f}", limit=5)
    cursor = data.pop("cursor")   # opaque: where the next answer goes on (test_history_cursor)
    assert isinstance(cursor, str) and 0 < len(cursor) <= 200
    assert data == {
        "since_us": T0, "until_us": T0 + 10_000_000, "columns": ["ts_us", "value"], "truncated": True,
        "next_since": (T0 + 100_000) / 1e6,
        "series": [
            {"metric": "DCGM_FI_DEV_POWER_USAGE", "labels": {"gpu": "0"}, "field_id": 155,
             "field_name": "DCGM_FI_DEV_POWER_USAGE", "gpu": 0, "entity": {"group": "GPU", "id": 0},
             "samples": [[T0, 100.0]]},
            {"metric": "DCGM_FI_DEV_POWER_USAGE", "labels": {"gpu": "1"}, "field_id": 155,
             "field_name": "DCGM_FI_DEV_POWER_USAGE", "gpu": 1, "entity": {"group": "GPU", "id": 1},
             "samples": [[T0, 200.0]]},
            {"metric": "DCGM_FI_DEV_GPU_TEMP", "labels": {"gpu": "0"}, "field_id": 150,
             "field_name": "DCGM_FI_DEV_GPU_TEMP", "gpu": 0, "entity": {"group": "GPU", "id": 0},
             "samples": [[T0, 40]]},
            {"metric": "DCGM_FI_DEV_GPU_UTIL", "labels": {"gpu": "0"}, "field_id": 203,
             "field_name": "DCGM_FI_DEV_GPU_UTIL", "gpu": 0, "entity": {"group": "GPU", "id": 0},
             "samples": [[T0 + 50_000, 0]]},
        ]}


def test_an_answer_holds_about_its_json_and_not_the_rings_or_an_object_per_sample():
    # 15 minutes of 64 series at 10 Hz (5.3 MB of ring) and an answer of 100,000 samples (2.9 MB of JSON): the
    # answer's peak is its JSON and a bounded working set, not a copy of the ring nor a Python list per sample
    rows, width = 9_000, 64
    ring = RingBuffer([(GPU, g, 100 + f) for g in range(8) for f in range(8)], capacity=rows)
    values = np.random.default_rng(3).uniform(0, 700, (rows, width))
    ring.append(T0 + np.arange(rows, dtype=np.int64) * 100_000, values)
    series = tuple(SeriesInfo(f"F{i % 8}", (("gpu", str(i // 8)),), (GPU, i // 8), i // 8, 100 + i % 8, f"F{i % 8}",
                              False, i) for i in range(width))
    model = SampleModel("node", (), (RingSeries(ring, series),), EventRing(4), ())
    query = parse_query({"field": [",".join(f"F{f}" for f in range(8))], "since": ["0"], "limit": ["100000"]},
                        T0 + rows * 100_000)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = answer([model], query)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.samples == 100_000 // width * width
    assert peak < 2.5 * result.nbytes, (peak, result.nbytes)
