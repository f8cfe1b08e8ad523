"""GET /api/v1/samples: the rings' samples as JSON, from the real collector over HTTP.

The collector runs as a process on a simulated node watched every 100 ms; the
answers are read with a real HTTP client and checked against what /metrics
serves: same names and labels, the scraped value among the samples, every
100 ms sample once, XIDs from the event ring, bounded answers, one-line
errors naming the parameter, and the same credentials as /metrics.  Then
the costs are bounded: every bad number is a 400, following next_since ends,
a doubtful Content-Length is a 400, 64 clients asking for the largest answer
get it or a 503 with Retry-After while /metrics answers, and clients that
stop reading hold their slots only until the response deadline.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import threading
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
    ("field=155&window=5m", "window: unknown parameter (known: field, gpu, since, until, limit, cursor)"),
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
    link = b'<a href="api/v1/samples?field=DCGM_FI_DEV_POWER_USAGE&amp;gpu=0&amp;since=5m">api/v1/samples</a>'
    assert status == 200 and link in body
    status, answer = _get_json(node.port, "field=DCGM_FI_DEV_POWER_USAGE&gpu=0&since=5m")   # the link answers
    assert status == 200 and [s["gpu"] for s in answer["data"]["series"]] == [0]


def test_a_collector_still_starting_answers_503():
    # before the targets exist the API has nothing to read: the same 503 /metrics gives
    from dcgm_collector import app
    from dcgm_collector.config import parse_config
    from dcgm_collector.serve.server import Request, Unavailable

    collector_ = app.Collector(parse_config(["--sim", "1"], {}))
    with pytest.raises(Unavailable):
        collector_.samples(Request("GET", "/api/v1/samples", {"field": ["155"]}, b"", "127.0.0.1"))


# ---- strict numbers, paging, framing -------------------------------------------------------------

@pytest.mark.parametrize(("name", "raw"), [
    ("since", "1e308"), ("until", "1e308"), ("since", "9" * 400 + "s"), ("since", "1e400ms"), ("until", "inf"),
    ("since", "nan"), ("since", "%D9%A1%D9%A2s"), ("since", "%2B5"), ("since", "+5"), ("since", "1_000"),
    ("until", "9" * 400), ("since", "-1e308"), ("limit", "1_000"), ("limit", "%2B5"), ("limit", "%D9%A1"),
    ("limit", "9" * 400), ("gpu", "%2B1"), ("gpu", "%D9%A1"), ("gpu", "1e3"),
])
def test_every_bad_number_is_a_400_naming_its_parameter_never_a_500(node, name, raw):
    status, answer = _get_json(node.port, f"field=155&{name}={raw}")
    assert status == 400, answer
    assert answer["status"] == "error" and answer["errorType"] == "bad_data"
    assert answer["error"].startswith(f"{name}: ") and "\n" not in answer["error"] and len(answer["error"]) < 200
    assert "Traceback" not in node.log()


def test_following_next_since_with_a_small_limit_ends_with_every_sample_once(node):
    until = time.time() - 0.5   # a closed span: the pages and the whole answer see the same samples
    fields = "DCGM_FI_DEV_POWER_USAGE,DCGM_FI_DEV_GPU_TEMP,DCGM_FI_DEV_XID_ERRORS"
    status, whole = _get_json(node.port, f"field={fields}&since=0&until={until}")
    assert status == 200 and not whole["data"]["truncated"]

    def flat(data):
        return sorted((s["metric"], s["labels"]["gpu"], t, v) for s in data["series"] for t, v in s["samples"])

    expected = flat(whole["data"])
    assert any(m == "DCGM_FI_DEV_XID_ERRORS" for m, *_ in expected)
    seen, since, pages = [], 0.0, 0
    while True:
        pages += 1
        assert pages < 2_000, "following next_since did not end"
        status, page = _get_json(node.port, f"field={fields}&since={since}&until={until}&limit=7")
        assert status == 200
        seen += flat(page["data"])
        if not page["data"]["truncated"]:
            break
        assert page["data"]["next_since"] > since
        since = page["data"]["next_since"]
    assert sorted(seen) == expected and pages > len(expected) // 8


@pytest.mark.parametrize("head", [
    b"Content-Length: 0\r\nContent-Length: 5\r\n", b"Content-Length: +0\r\n", b"Content-Length: -1\r\n",
    "Content-Length: \u0660\r\n".encode(), b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n",
])
def test_a_content_length_that_cannot_be_trusted_is_a_400(node, head):
    with socket.create_connection(("127.0.0.1", node.port), timeout=5) as sock:
        sock.sendall(b"GET /api/v1/samples?field=155 HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"\r\nConnection: close\r\n" in reply
    assert reply.split(b"\r\n\r\n", 1)[1].count(b"\n") == 1


# ---- bounded cost under many clients -------------------------------------------------------------

@pytest.fixture(scope="module")
def busy_node(tmp_path_factory):
    """32 simulated GPUs every 100 ms, one minute of rings: the largest answer is megabytes within seconds."""
    from dcgm_collector.catalog.counters import default_counters_path

    tmp_path = tmp_path_factory.mktemp("busy")
    fields = sorted({line.split(",")[0].strip() for line in open(default_counters_path())
                     if line.strip() and not line.startswith("#") and ", label," not in line})
    with collector(tmp_path, "--sim", "32", "-a", "127.0.0.1:0", "-c", "100", "--watch-interval", "100",
                   "--retention", "60", env=clean_env(), start_timeout=30) as running:
        running.big = f"/api/v1/samples?field={','.join(fields)}&since=0&limit=200000"
        wait_for(lambda: len(http_get(running.url(running.big), timeout=30)[1]) > 2_000_000, timeout=60,
                 poll_s=1.0, what="an answer of megabytes")
        yield running


def _get(port: int, path: str, timeout: float = 60) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


class Scraper:
    """GET /metrics every 100 ms on a thread: the status and time of each answer."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                status = _get(self.port, "/metrics", timeout=10)[0]
            except OSError as error:
                status = repr(error)
            self.answers.append((status, time.monotonic() - started))
            self._stop.wait(0.1)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _is_busy(status: int, headers: dict, body: bytes) -> bool:
    """A 503 the history API or the connection cap gives: Retry-After, and the API's one-line JSON error."""
    if status != 503 or headers.get("Retry-After") != "1":
        return False
    if headers.get("Content-Type") == "application/json":
        problem = json.loads(body)
        return problem["status"] == "error" and problem["errorType"] == "unavailable" and body.count(b"\n") == 1
    return body == b"503 Service Unavailable: too many open connections\n"


@pytest.mark.slow
def test_64_clients_get_answers_or_503s_and_metrics_answers_meanwhile(busy_node):
    barrier = threading.Barrier(64)
    results: list[tuple[int, dict, bytes]] = []

    def client() -> None:
        barrier.wait()
        for _ in range(3):
            try:
                results.append(_get(busy_node.port, busy_node.big))
            except OSError as error:
                results.append((0, {}, repr(error).encode()))

    with Scraper(busy_node.port) as scraper:
        threads = [threading.Thread(target=client) for _ in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    statuses = [status for status, _, _ in results]
    assert len(results) == 192 and set(statuses) <= {200, 503}, sorted(set(statuses))
    assert statuses.count(200) >= 2 and statuses.count(503) >= 10
    assert all(_is_busy(*r) for r in results if r[0] == 503)
    assert all(json.loads(body)["status"] == "success" for status, _, body in results if status == 200)
    assert len(scraper.answers) >= 5 and all(status == 200 and took < 5 for status, took in scraper.answers), \
        scraper.answers
    assert "Traceback" not in busy_node.log()


@pytest.mark.slow
def test_clients_that_stop_reading_hold_their_slots_only_until_the_deadline(busy_node):
    from dcgm_collector.serve.server import RESPONSE_TIMEOUT_S

    readers = []
    for _ in range(2):   # both history slots, held by clients that read nothing of megabytes
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", busy_node.port))
        sock.sendall(f"GET {busy_node.big} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        readers.append(sock)
    started = time.monotonic()
    try:
        time.sleep(1.5)
        refused = _get(busy_node.port, busy_node.big)
        assert refused[0] == 503 and _is_busy(*refused)
        scraped = time.monotonic()
        assert _get(busy_node.port, "/metrics", timeout=5)[0] == 200 and time.monotonic() - scraped < 2
        time.sleep(max(0.0, started + RESPONSE_TIMEOUT_S + 1.5 - time.monotonic()))
        for sock in readers:   # dropped at the deadline, with most of the answer unsent
            sock.settimeout(5)
            got = 0
            try:
                while chunk := sock.recv(65536):
                    got += len(chunk)
            except ConnectionResetError:
                pass
            assert got < 2_000_000
        status, _, body = _get(busy_node.port, busy_node.big)   # the slots are free again
        assert status == 200 and len(body) > 2_000_000
    finally:
        for sock in readers:
            sock.close()
