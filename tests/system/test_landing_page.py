"""The landing page from a running collector: every link answers, and a real browser draws the live charts.

The collector runs as a process on the shipped ``spikes`` scenario (300 ms at
100 % every 2 s over a 5 % floor) watched every 100 ms.  Every link and
script the page names is fetched over HTTP and answers 200 (the example
history query and a flight recording's download included).  Then Debian's
headless Chromium loads the page: with --dump-dom the page's script has
written, on each canvas, the largest value it drew, which for utilisation
is the spike's 100 %; with --screenshot the PNG (decoded here with zlib and
PNG's row filters) shows the charts' columns, the spikes' tall over the
floor's short.  The same page is drawn by a collector behind TLS and basic
auth, the credentials given once in the page's URL.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import ssl
import struct
import subprocess
import urllib.request
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support import COLLECTOR, launch, self_signed_certificate, stop_process, wait_for
from test_cli import Running, clean_env, collector

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                    "(apt-get install chromium): the browser tests need it")
WATCH = ("--sim", "spikes", "-a", "127.0.0.1:0", "--watch-interval", "100")
FILL = (0x3B, 0x7D, 0xD8)   # the charts' fill colour (live.css --fill)
# a cheap bcrypt cost keeps start-up fast; the hash is of "secret"
USERS = "basic_auth_users:\n  prom: $2b$04$3CVng5Jo8ynM1x1CBGG8WOt3h3ypFaT1lOcmLtXfdqnUrbJFSbkEi\n"


class Links(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__()
        self.found: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.found.extend(value for name, value in attrs if name in ("href", "src") and value)


def _fetch(url: str, context: ssl.SSLContext | None = None, auth: str | None = None) -> tuple[int, bytes, dict]:
    request = urllib.request.Request(url, headers={"Authorization": auth} if auth else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def _util_series(base: str, context: ssl.SSLContext | None = None, auth: str | None = None) -> list[dict]:
    """The utilisation series the rings hold of the charts' span, from the samples API ([] when it refuses)."""
    status, body, _ = _fetch(f"{base}/api/v1/samples?field=DCGM_FI_DEV_GPU_UTIL&since=300s", context, auth)
    return json.loads(body)["data"]["series"] if status == 200 else []


def _util_max(base: str, context: ssl.SSLContext | None = None, auth: str | None = None) -> dict[str, float]:
    """GPU -> the largest utilisation the rings hold of the charts' span."""
    return {str(s["gpu"]): max(v for _, v in s["samples"]) for s in _util_series(base, context, auth)
            if s["samples"]}


def _held_s(base: str) -> float:
    """Seconds between GPU 0's oldest and newest utilisation sample the rings hold."""
    stamps = [ts_us for s in _util_series(base) if str(s["gpu"]) == "0" for ts_us, _ in s["samples"]]
    return (max(stamps) - min(stamps)) / 1e6 if stamps else 0.0


def _spikes_held(base: str, context: ssl.SSLContext | None = None, auth: str | None = None) -> dict[str, float]:
    """The rings' utilisation maxima, once a spike shows on every GPU (a 200 ms reading of a 300 ms spike is at
    least 50 %, 100 % when the reading falls within it) and one GPU has had its 100 %; else {}."""
    held = _util_max(base, context, auth)
    return held if len(held) == 4 and min(held.values()) >= 50 and max(held.values()) == 100 else {}


def _chromium(*args: str) -> subprocess.CompletedProcess:
    # --virtual-time-budget: the page's load, its first history query and drawing, then the DOM or screenshot
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1280,900", "--virtual-time-budget=4000", *args],
                          capture_output=True, text=True, timeout=120)


def _canvases(dom: str) -> dict[tuple[str, str], dict[str, str]]:
    """(gpu, chart) -> the canvas's data attributes, from Chromium's --dump-dom."""
    out = {}
    for tag in re.findall(r"<canvas [^>]*>", dom):
        attributes = dict(re.findall(r'data-([a-z]+)="([^"]*)"', tag))
        out[(attributes["gpu"], attributes["chart"])] = attributes
    return out


def _assert_the_spikes_are_drawn(dom: str, before: dict[str, float], after: dict[str, float]) -> None:
    """Each utilisation chart drew the largest sample of the rings (read before and after the page loaded)."""
    canvases = _canvases(dom)
    assert set(canvases) == {(str(g), c) for g in range(4) for c in ("util", "power", "fb", "temp")}, dom[-3000:]
    drawn = {gpu: float(canvases[(gpu, "util")]["max"]) for gpu in "0123"}
    # the spikes as sampled, not averaged away by the many samples a pixel column covers
    assert all(before[gpu] <= drawn[gpu] <= after[gpu] for gpu in drawn), (before, drawn, after)
    assert max(drawn.values()) == 100.0 and min(drawn.values()) >= 50, drawn
    for gpu in "0123":
        assert int(canvases[(gpu, "util")]["samples"]) >= 20    # 100 ms samples of the seconds before
        assert float(canvases[(gpu, "power")]["max"]) > 0 and float(canvases[(gpu, "temp")]["max"]) > 0


def png_pixels(data: bytes) -> tuple[int, int, list[bytes], int]:
    """(width, height, rows, bytes per pixel) of an 8-bit RGB or RGBA PNG, its rows unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows, bpp


def _fill_columns(png: bytes) -> list[int]:
    """For each x of the screenshot, the longest vertical run of the charts' fill colour."""
    width, height, rows, bpp = png_pixels(png)
    runs, longest = [0] * width, [0] * width
    for row in rows:
        for x in range(width):
            r, g, b = row[x * bpp:x * bpp + 3]
            if abs(r - FILL[0]) <= 3 and abs(g - FILL[1]) <= 3 and abs(b - FILL[2]) <= 3:
                runs[x] += 1
                longest[x] = max(longest[x], runs[x])
            else:
                runs[x] = 0
    return longest


@pytest.fixture(scope="module")
def spikes(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("landing")
    recordings = tmp_path / "recordings"
    with collector(tmp_path, *WATCH, "--recorder-dir", str(recordings), "--recorder-before", "3",
                   "--recorder-after", "1", env=clean_env()) as running:
        base = f"http://127.0.0.1:{running.port}"
        wait_for(lambda: _spikes_held(base), timeout=30, what="a spike on every GPU")
        running.proc.send_signal(signal.SIGUSR2)   # a flight recording to download
        wait_for(lambda: "download</a>" in running.get("/")[1], timeout=30, what="a recording on the page",
                 log=running.log)
        running.recordings = recordings
        yield running


def test_every_link_and_script_on_the_page_answers(spikes):
    base = f"http://127.0.0.1:{spikes.port}/"
    status, page, headers = _fetch(base)
    assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
    links = Links(page.decode()).found
    assert {"metrics", "health", "static/live.js", "static/live.css"} <= set(links)
    assert "api/v1/samples?field=DCGM_FI_DEV_POWER_USAGE&gpu=0&since=5m" in links   # with the field it needs
    [download] = [link for link in links if link.startswith("recordings?name=")]
    for link in links:
        status, body, _ = _fetch(base + link)
        assert status == 200, f"{link}: {status} {body[:200]!r}"
    [recording] = sorted(spikes.recordings.glob("recording-*.parquet"))
    status, body, headers = _fetch(base + download)
    assert body == recording.read_bytes() and recording.name in headers["Content-Disposition"]
    # a name that is not a recording of the folder is never opened
    for name in ("../" + recording.name, "recording-x.parquet", "health", recording.name + "%00"):
        assert _fetch(f"{base}recordings?name={name}")[0] == 404


def test_the_page_without_javascript_has_the_tiles_and_the_source(spikes):
    page = _fetch(f"http://127.0.0.1:{spikes.port}/")[1].decode()
    assert "<b>sim, chosen by --sim spikes</b>" in page and "<span>4 GPUs</span>" in page
    tiles = re.findall(r'<li class="tile" data-gpu="(\d)"><h3>GPU \d <span class="model">([^<]*)</span>', page)
    assert tiles == [(str(g), "NVIDIA H100 80GB HBM3") for g in range(4)]
    values = re.findall(r'<dt>([a-z]+)</dt><dd[^>]*>([^<]*)</dd>', page)
    assert [name for name, _ in values] == ["util", "fb", "temp", "power", "health"] * 4
    assert all(re.fullmatch(r"\d+ %|\d+\.\d / \d+ GiB|\d+ °C|\d+ W|OK", value) for _, value in values), values
    assert "<noscript>" in page


def test_a_tile_shows_a_dash_for_what_the_counters_do_not_serve_and_dcgm_health_when_they_ask(tmp_path):
    counters = tmp_path / "counters.csv"
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                        "DCGM_EXP_GPU_HEALTH_STATUS, counter, DCGM reported health status\n")
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "-f", str(counters), env=clean_env()) as running:
        # DCGM's first health check and the first temperature sample come within a second or two of the start
        wait_for(lambda: "°C" in (page := running.get("/")[1]) and ">PASS<" in page, timeout=20,
                 what="a temperature and DCGM's health on the tile", log=running.log)
        page = running.get("/")[1]
    values = dict(re.findall(r'<dt>([a-z]+)</dt><dd[^>]*>([^<]*)</dd>', page))
    assert values == {"util": "-", "fb": "-", "temp": values["temp"], "power": "-", "health": "PASS"}, values
    assert re.fullmatch(r"\d+ °C", values["temp"])


@needs_chromium
def test_the_browser_draws_the_spikes(spikes, tmp_path):
    base = f"http://127.0.0.1:{spikes.port}"
    before = wait_for(lambda: _spikes_held(base), timeout=30, what="a spike on every GPU")
    result = _chromium("--dump-dom", f"{base}/")
    assert result.returncode == 0, result.stderr[-2000:]
    _assert_the_spikes_are_drawn(result.stdout, before, _util_max(base))
    # a young collector's charts fill only the part of their 60 s axis it has samples for:
    # with 15 s held, a quarter of each chart's width at least
    wait_for(lambda: _held_s(base) >= 15, timeout=60, what="15 s of samples")
    shot = tmp_path / "page.png"
    result = _chromium(f"--screenshot={shot}", f"http://127.0.0.1:{spikes.port}/")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    columns = [run for run in _fill_columns(shot.read_bytes()) if run]
    # the utilisation charts' spikes reach near the plot's top (72 px less the caption), the floor stays low
    assert len(columns) > 100 and max(columns) >= 50 and min(columns) <= 6, columns


def _self_signed(directory: Path) -> tuple[Path, Path]:
    return self_signed_certificate(directory, "server", ca=False)


@needs_chromium
def test_the_browser_draws_the_spikes_behind_tls_and_basic_auth(tmp_path):
    pytest.importorskip("cryptography")
    cert, key = _self_signed(tmp_path)
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n{USERS}")
    context = ssl.create_default_context(cafile=str(cert))
    auth = "Basic cHJvbTpzZWNyZXQ="   # prom:secret
    with open(tmp_path / "collector.log", "wb") as log:   # the collector's TLS line: not the helper's http pattern
        proc = launch(COLLECTOR, *WATCH, "--web-config-file", str(web), cwd=tmp_path, env=clean_env(), stdout=log,
                      stderr=subprocess.STDOUT)
    running = Running(proc, tmp_path / "collector.log")
    try:
        running.port = int(running.wait_log(r"serving https://127\.0\.0\.1:(\d+)/metrics")[1])
        base = f"https://127.0.0.1:{running.port}"
        before = wait_for(lambda: _spikes_held(base, context, auth), timeout=30, what="a spike on every GPU")
        status, _, headers = _fetch(base + "/", context)
        assert status == 401 and headers["WWW-Authenticate"] == "Basic"   # the page asks, as /metrics does
        for path in ("/static/live.js", "/api/v1/samples?field=DCGM_FI_DEV_POWER_USAGE&gpu=0&since=5m"):
            assert _fetch(base + path, context)[0] == 401 and _fetch(base + path, context, auth)[0] == 200
        status, _, headers = _fetch(base + "/", context, auth)
        assert status == 200 and "Set-Cookie" not in headers
        # the credentials once, in the URL; the script's requests go without them in their URLs
        result = _chromium("--ignore-certificate-errors", "--dump-dom",
                           f"https://prom:secret@127.0.0.1:{running.port}/")
        after = _util_max(base, context, auth)
    finally:
        stop_process(proc)
    assert result.returncode == 0, result.stderr[-2000:]
    _assert_the_spikes_are_drawn(result.stdout, before, after)
