"""GET /api/v1/samples: the rings' samples as JSON, from the real collector over HTTP.

The collector runs as a process on a simulated node watched every 100 ms; the
answers are read with a real HTTP client and checked against what /metrics
serves: same names and labels, the scraped value among the samples, every
100 ms sample once, XIDs from the event ring, bounded answers, one-line
errors naming the parameter, and the same credentials as /metrics.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.request

import pytest
from support import http_get, samples, wait_for
from test_cli import clean_env, collector

COUNTERS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DRIVER_VERSION, label, Driver version.
"""
SCENARIO = """\
seed = 5
[[gpu]]
model = "H100"
count = 2
workload = "training"
[[event]]
at = 1.0
gpu = 1
kind = "xid"
xid = 79
"""


def _get_json(port: int, query: str, headers: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/samples?{query}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Type"] == "application/json"
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("history")
    (tmp_path / "counters.csv").write_text(COUNTERS)
    (tmp_path / "node.toml").write_text(SCENARIO)
    with collector(tmp_path, "--sim", str(tmp_path / "node.toml"), "-f", str(tmp_path / "counters.csv"),
                   "-a", "127.0.0.1:0", "-c", "500", "--watch-interval", "100", env=clean_env()) as running:
        wait_for(lambda: _get_json(running.port, "field=DCGM_FI_DEV_XID_ERRORS")[1]["data"]["series"], timeout=20,
                 what="the XID at 1 s")
        time.sleep(1.0)
        yield running


def test_samples_carry_the_metrics_names_labels_and_values(node):
    text = node.metrics()
    scraped = {(name, labels["gpu"]): (labels, value) for name, labels, value in samples(text)
               if name in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP")}
    status, answer = _get_json(node.port, "field=DCGM_FI_DEV_POWER_USAGE,DCGM_FI_DEV_GPU_TEMP&since=20s")
    assert status == 200 and answer["status"] == "success"
    series = answer["data"]["series"]
    assert {(s["metric"], s["labels"]["gpu"]) for s in series} == set(scraped)
    for s in series:
        labels, value = scraped[(s["metric"], s["labels"]["gpu"])]
        assert s["labels"] == labels                       # the same label set /metrics gives the series
        values = [v for _, v in s["samples"]]
        assert value in values, (s["metric"], value, values[-5:])
        assert s["field_id"] == (155 if s["metric"] == "DCGM_FI_DEV_POWER_USAGE" else 150)
        assert s["entity"] == {"group": "GPU", "id": int(labels["gpu"])}
        if s["metric"] == "DCGM_FI_DEV_GPU_TEMP":
            assert all(isinstance(v, int) for v in values)   # an integer field stays an integer
    # every 100 ms sample once, oldest first: ~10 a second over what the rings hold
    power0 = next(s for s in series if s["metric"] == "DCGM_FI_DEV_POWER_USAGE" and s["labels"]["gpu"] == "0")
    stamps = [t for t, _ in power0["samples"]]
    assert stamps == sorted(set(stamps))
    steps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert len(stamps) >= 20 and sorted(steps)[len(steps) // 2] == pytest.approx(100_000, abs=5_000)


def test_fields_by_id_dcgm_name_or_metric_name_and_gpus(node):
    since = time.time() - 2.5   # a 2 s span the collector has sampled (it started at least 2 s ago)
    by_id = _get_json(node.port, f"field=155&gpu=1&since={since}&until={since + 2}")[1]["data"]
    by_name = _get_json(node.port, f"field=DCGM_FI_DEV_POWER_USAGE&gpu=1&since={since}&until={since + 2}")[1]["data"]
    assert by_id == by_name and len(by_id["series"]) == 1 and by_id["series"][0]["labels"]["gpu"] == "1"
    assert all(since * 1e6 <= t <= (since + 2) * 1e6 for t, _ in by_id["series"][0]["samples"])
    assert len(by_id["series"][0]["samples"]) >= 10


def test_xids_come_from_the_event_ring_with_their_labels(node):
    status, answer = _get_json(node.port, "field=DCGM_FI_DEV_XID_ERRORS&since=1h")
    assert status == 200
    (series,) = answer["data"]["series"]
    assert series["labels"]["gpu"] == "1" and series["labels"]["err_code"] == "79"
    assert series["labels"]["err_msg"] == "GPU has fallen off the bus"
    assert [v for _, v in series["samples"]] == [79]
    assert _get_json(node.port, "field=230&gpu=0&since=1h")[1]["data"]["series"] == []


def test_answers_are_bounded_and_say_where_to_go_on(node):
    status, answer = _get_json(node.port, "field=DCGM_FI_DEV_POWER_USAGE&gpu=0&since=1h&limit=5")
    data = answer["data"]
    assert status == 200 and data["truncated"] is True and len(data["series"][0]["samples"]) == 5
    next_since = data["next_since"]
    assert next_since * 1e6 > data["series"][0]["samples"][-1][0]
    rest = _get_json(node.port, f"field=DCGM_FI_DEV_POWER_USAGE&gpu=0&since={next_since}&limit=5")[1]["data"]
    assert rest["series"][0]["samples"][0][0] == round(next_since * 1e6)
    whole = _get_json(node.port, "field=DCGM_FI_DEV_POWER_USAGE&gpu=0&since=1h")[1]["data"]
    assert whole["truncated"] is False and "next_since" not in whole


@pytest.mark.parametrize(("query", "error"), [
    ("gpu=0", "field: missing; name one or more fields by id, DCGM name or metric name "
              "(field=DCGM_FI_DEV_POWER_USAGE or field=155)"),
    ("field=DCGM_FI_DEV_NOPE", "field: DCGM_FI_DEV_NOPE is not served here (name a field of the counters file by "
                               "id, DCGM name or metric name)"),
    ("field=155&since=yesterday", "since: 'yesterday' is not Unix seconds, an RFC 3339 time or a duration like 30s, "
                                  "5m, 1h"),
    ("field=155&gpu=zero", "gpu: 'zero' is not a list of GPU ids"),
    ("field=155&limit=0", "limit: 0 is out of range [1, 200000]"),
    ("field=155&window=5m", "window: unknown parameter (known: field, gpu, since, until, limit)"),
    ("field=155&since=10s&until=20s", "since: '10s' is after until"),
])
def test_a_bad_parameter_is_a_400_naming_it(node, query, error):
    status, answer = _get_json(node.port, query)
    assert status == 400
    assert answer == {"status": "error", "errorType": "bad_data", "error": error}


def test_the_api_asks_for_the_credentials_metrics_asks_for(tmp_path):
    web = tmp_path / "web.yml"
    # a cheap bcrypt cost keeps start-up fast; the hash is of "secret"
    web.write_text("basic_auth_users:\n  prom: $2b$04$3CVng5Jo8ynM1x1CBGG8WOt3h3ypFaT1lOcmLtXfdqnUrbJFSbkEi\n")
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "--web-config-file", str(web),
                   env=clean_env()) as running:
        status, _ = http_get(f"http://127.0.0.1:{running.port}/api/v1/samples?field=155")
        assert status == 401
        token = base64.b64encode(b"prom:secret").decode()
        status, answer = _get_json(running.port, "field=155", {"Authorization": f"Basic {token}"})
        assert status == 200 and answer["status"] == "success"


def test_the_landing_page_lists_the_api(node):
    status, body = http_get(f"http://127.0.0.1:{node.port}/")
    assert status == 200 and b'<a href="api/v1/samples">api/v1/samples</a>' in body


def test_a_collector_still_starting_answers_503():
    # before the targets exist the API has nothing to read: the same 503 /metrics gives
    from dcgm_collector import app
    from dcgm_collector.config import parse_config
    from dcgm_collector.serve.server import Request, Unavailable

    collector_ = app.Collector(parse_config(["--sim", "1"], {}))
    with pytest.raises(Unavailable):
        collector_.samples(Request("GET", "/api/v1/samples", {"field": ["155"]}, b"", "127.0.0.1"))
