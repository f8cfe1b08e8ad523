"""The history API's cursor through the real collector over HTTP: a live view's incremental reads.

A simulated 2-GPU node sampled every 100 ms: following ``data.cursor`` for a
few seconds gives every sample once and in order, the same samples one big
``since`` query over the span returns; a bad cursor, a cursor with
``since``, and a cursor from before a restart are 400s naming ``cursor``; a
cursor older than the rings answers from the oldest sample with
``"gap": true``; and it all works behind TLS and basic auth.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from support import COLLECTOR, launch, self_signed_certificate, stop_process
from test_cli import Running, clean_env, collector

FIELDS = "DCGM_FI_DEV_POWER_USAGE,DCGM_FI_DEV_GPU_TEMP,DCGM_FI_DEV_GPU_UTIL,DCGM_FI_DEV_SM_CLOCK,DCGM_FI_DEV_FB_USED"


def _get(url: str, headers: dict | None = None, context: ssl.SSLContext | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, json.loads(body) if error.headers.get("Content-Type") == "application/json" else {}


def _ask(port: int, query: str) -> tuple[int, dict]:
    return _get(f"http://127.0.0.1:{port}/api/v1/samples?field={FIELDS}&{query}")


def _samples(data: dict) -> list[tuple]:
    return [(s["metric"], s["labels"]["gpu"], t, v) for s in data["series"] for t, v in s["samples"]]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("cursor")
    with collector(tmp_path, "--sim", "2", "-c", "100", "-a", "127.0.0.1:0", env=clean_env()) as running:
        time.sleep(1.0)
        yield running


def test_following_the_cursor_gives_every_sample_once_in_order_as_one_since_query(node):
    status, first = _ask(node.port, "since=2s")
    assert status == 200 and first["data"]["cursor"]
    since_us = first["data"]["since_us"]
    followed, cursor, answers = _samples(first["data"]), first["data"]["cursor"], 0
    started = time.monotonic()
    while time.monotonic() - started < 4.0:
        time.sleep(0.1)
        status, page = _ask(node.port, f"cursor={cursor}")
        assert status == 200 and page["data"]["gap"] is False, page
        followed += _samples(page["data"])
        cursor, answers = page["data"]["cursor"], answers + 1
    cutoff = max(t for *_, t, _ in followed)
    status, whole = _ask(node.port, f"since={since_us / 1e6:.6f}&until={cutoff / 1e6:.6f}")
    assert status == 200 and not whole["data"]["truncated"]
    status, last = _ask(node.port, f"cursor={cursor}")   # what reached the rings before the big query, too
    followed += _samples(last["data"])
    expected = _samples(whole["data"])
    assert len(expected) > 5 * 2 * 40   # 5 fields of 2 GPUs at 10 Hz for 4 s and more
    inside = [s for s in followed if s[2] <= cutoff]
    assert len(inside) == len(set(inside))   # each once
    assert sorted(inside) == sorted(expected)
    per_series: dict[tuple, list[int]] = {}
    for metric, gpu, t, _ in followed:
        per_series.setdefault((metric, gpu), []).append(t)
    assert all(ts == sorted(ts) for ts in per_series.values())   # and in order, answer after answer
    assert answers > 20


@pytest.mark.parametrize(("query", "error"), [
    ("cursor=not-a-cursor", "cursor: 'not-a-cursor' is not a cursor this collector gave (pass data.cursor of an "
                            "answer as it is)"),
    ("cursor=AQID%25", "cursor: 'AQID%' is not a cursor this collector gave (pass data.cursor of an answer as it is)"),
])
def test_a_bad_cursor_is_a_400_naming_cursor(node, query, error):
    status, answer = _ask(node.port, query)
    assert status == 400 and answer == {"status": "error", "errorType": "bad_data", "error": error}


@pytest.mark.parametrize("other", ["since=5s", "until=1s"])
def test_a_cursor_with_since_or_until_is_a_400_naming_cursor(node, other):
    cursor = _ask(node.port, "since=1s")[1]["data"]["cursor"]
    status, answer = _ask(node.port, f"cursor={cursor}&{other}")
    assert status == 400 and answer["error"] == ("cursor: give either cursor or since/until, not both (a cursor "
                                                 "goes on from where the answer that gave it ended)")


def test_a_cursor_from_before_a_restart_is_a_400_naming_cursor(tmp_path):
    with collector(tmp_path, "--sim", "2", "-c", "100", "-a", "127.0.0.1:0", env=clean_env()) as running:
        cursor = _ask(running.port, "since=1s")[1]["data"]["cursor"]
        port = running.port
    with collector(tmp_path, "--sim", "2", "-c", "100", "-a", f"127.0.0.1:{port}", env=clean_env()) as again:
        status, answer = _ask(again.port, f"cursor={cursor}")
        assert status == 400 and answer["error"] == (
            "cursor: it is from another collector process (this one restarted since, or another made it); start "
            "again with since")
        assert _ask(again.port, "since=1s")[0] == 200


def test_a_cursor_past_the_rings_span_answers_from_the_oldest_sample_with_gap(tmp_path):
    with collector(tmp_path, "--sim", "2", "-c", "100", "--retention", "1", "--window", "1", "-a", "127.0.0.1:0",
                   env=clean_env()) as running:
        time.sleep(0.5)
        cursor = _ask(running.port, "since=1s")[1]["data"]["cursor"]
        time.sleep(3.0)   # the rings hold about 1 s: the rows after the cursor are overwritten
        status, answer = _ask(running.port, f"cursor={cursor}")
        assert status == 200 and answer["data"]["gap"] is True
        stamps = sorted({t for *_, t, _ in _samples(answer["data"])})
        assert stamps and (stamps[-1] - stamps[0]) < 2_000_000   # what the rings hold, not the 3 s since
        status, after = _ask(running.port, f"cursor={answer['data']['cursor']}")
        assert status == 200 and after["data"]["gap"] is False


def _self_signed(directory) -> tuple:
    return self_signed_certificate(directory, "collector", "collector")


def test_the_cursor_is_followed_behind_tls_and_basic_auth(tmp_path):
    cert, key = _self_signed(tmp_path)
    web = tmp_path / "web.yml"
    # a cheap bcrypt cost keeps start-up fast; the hash is of "secret"
    web.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
                   "basic_auth_users:\n  prom: $2b$04$3CVng5Jo8ynM1x1CBGG8WOt3h3ypFaT1lOcmLtXfdqnUrbJFSbkEi\n")
    context = ssl.create_default_context(cafile=str(cert))
    auth = {"Authorization": "Basic " + base64.b64encode(b"prom:secret").decode()}
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, "--sim", "2", "-c", "100", "-a", "127.0.0.1:0", "--web-config-file", str(web),
                      cwd=tmp_path, env=clean_env(), stdout=out, stderr=subprocess.STDOUT)
    running = Running(proc, log)
    try:
        running.port = int(running.wait_log(r"serving https://127\.0\.0\.1:(\d+)/metrics")[1])
        url = f"https://127.0.0.1:{running.port}/api/v1/samples?field={FIELDS}"
        assert _get(f"{url}&since=1s", context=context)[0] == 401
        status, first = _get(f"{url}&since=1s", auth, context)
        assert status == 200
        cursor, seen = first["data"]["cursor"], _samples(first["data"])
        for _ in range(5):
            time.sleep(0.3)
            assert _get(f"{url}&cursor={cursor}", context=context)[0] == 401
            status, page = _get(f"{url}&cursor={cursor}", auth, context)
            assert status == 200 and page["data"]["gap"] is False
            seen += _samples(page["data"])
            cursor = page["data"]["cursor"]
        assert len(seen) == len(set(seen)) and max(t for *_, t, _ in seen) > min(t for *_, t, _ in seen) + 1_000_000
    finally:
        stop_process(proc)
