"""The history API's query parsing: times, durations, fields and GPUs, and the one-line errors."""

from __future__ import annotations

import pytest

from dcgm_collector.expose.history import DEFAULT_SPAN_S, MAX_SAMPLES, QueryError, parse_query

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
