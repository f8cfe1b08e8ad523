"""The history API poller against a small HTTP server that answers as a collector would, and records what it was asked.

The collector in this branch answers ``since`` reads; the server here also answers with ``data.cursor``, as the
history API's cursor does, to check that the poller moves to it as soon as an answer carries one.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dcgm_collector.top.client import Connection, SamplePoller, TopError

T0 = 1_800_000_000_000_000


class StandIn:
    """Serves /api/v1/samples from a list of prepared answers; ``asked`` holds each request's query."""

    def __init__(self, answers: list[tuple[int, dict]]) -> None:
        self.answers = answers
        self.asked: list[dict[str, str]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:   # noqa: N802 (http.server's name)
                url = urllib.parse.urlsplit(self.path)
                stand_in.asked.append(dict(urllib.parse.parse_qsl(url.query)))
                status, body = stand_in.answers.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def ok(samples: list[list], **data: object) -> tuple[int, dict]:
    series = [{"metric": "DCGM_FI_DEV_GPU_UTIL", "labels": {"gpu": "0"}, "field_id": 203, "samples": samples}]
    return 200, {"status": "success", "data": {"truncated": False, "series": series, **data}}


@pytest.fixture
def stand_in(request):
    server = StandIn(list(request.param))
    yield server
    server.close()


@pytest.mark.parametrize("stand_in", [[ok([[T0, 1], [T0 + 100_000, 2]]), ok([[T0 + 200_000, 3]]), ok([])]],
                         indirect=True)
def test_without_a_cursor_it_reads_on_from_one_microsecond_past_the_newest_sample(stand_in):
    poller = SamplePoller(Connection(stand_in.url), fields=[203])
    assert [p["samples"] for p in poller.poll()] == [[[T0, 1], [T0 + 100_000, 2]]]
    poller.poll()
    poller.poll()
    assert [q.get("since") for q in stand_in.asked] == ["300s", "1800000000.100001", "1800000000.200001"]
    assert all("cursor" not in q for q in stand_in.asked)


@pytest.mark.parametrize("stand_in", [[ok([[T0, 1]], cursor="c-1"), ok([], cursor="c-2"), ok([], cursor="c-3")]],
                         indirect=True)
def test_once_an_answer_carries_a_cursor_the_next_read_gives_it_back(stand_in):
    poller = SamplePoller(Connection(stand_in.url), fields=[203])
    for _ in range(3):
        poller.poll()
    assert stand_in.asked[0]["since"] == "300s"
    assert [(q.get("cursor"), q.get("since")) for q in stand_in.asked[1:]] == [("c-1", None), ("c-2", None)]


NOT_SERVED = (400, {"status": "error", "errorType": "bad_data",
                    "error": "field: 164 is not served here (name a field of the counters file by id, DCGM name or "
                             "metric name)"})


@pytest.mark.parametrize("stand_in", [[NOT_SERVED, ok([[T0, 5]])]], indirect=True)
def test_a_field_the_collector_does_not_serve_is_dropped_not_an_error(stand_in):
    poller = SamplePoller(Connection(stand_in.url), fields=[203, 164])
    assert poller.poll()[0]["samples"] == [[T0, 5]]
    assert [q["field"] for q in stand_in.asked] == ["203,164", "203"]
    assert poller.served == frozenset({203})


@pytest.mark.parametrize("stand_in", [[(400, {"status": "error", "error": "cursor: from another process"})]],
                         indirect=True)
def test_any_other_refusal_is_one_line_naming_the_url(stand_in):
    with pytest.raises(TopError) as error:
        SamplePoller(Connection(stand_in.url), fields=[203]).poll()
    assert str(error.value) == f"{stand_in.url}/api/v1/samples: cursor: from another process"


@pytest.mark.parametrize("stand_in", [[(401, {"status": "error"})]], indirect=True)
def test_a_401_says_to_give_a_user(stand_in):
    with pytest.raises(TopError) as error:
        SamplePoller(Connection(stand_in.url + "/"), fields=[203]).poll()
    assert str(error.value) == f"{stand_in.url}: 401 Unauthorized (give --user and --password)"
