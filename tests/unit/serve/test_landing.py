"""The landing page's HTML: relative links that answer, escaped text, the tiles, the CSP and the page's own script."""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest

from dcgm_collector import __version__
from dcgm_collector.serve.landing import STATIC, Overview, landing_page
from dcgm_collector.serve.server import MetricsServer, Reply, Route


@dataclass(frozen=True)
class Tile:
    gpu: int
    model: str
    util_pct: float | None = None
    fb_used_mib: float | None = None
    fb_total_mib: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    health: str = "OK"


class Parsed(HTMLParser):
    """Every href and src of the page, the text of each element with a data-value, and the elements' tags."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.links: list[str] = []
        self.sources: list[str] = []
        self.inline_scripts = 0
        self.styles_inline = 0
        self.tags: list[tuple[str, dict]] = []
        self._script_open = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if "href" in attributes:
            self.links.append(attributes["href"])
        if "src" in attributes:
            self.sources.append(attributes["src"])
        if "style" in attributes or tag == "style":
            self.styles_inline += 1
        self._script_open = tag == "script"

    def handle_data(self, data):
        if self._script_open and data.strip():
            self.inline_scripts += 1

    def handle_endtag(self, tag):
        self._script_open = False


def _noop(request):
    return Reply(200, b"")


ROUTES = {"/api/v1/samples": Route(_noop, landing="every sample, as JSON", example="?field=155&gpu=0&since=5m"),
          "/recorder": Route(_noop, methods=("POST",)),
          "/odd": Route(_noop, landing="a <b>bold</b> & \"quoted\" line")}


def test_every_link_is_relative_and_the_example_query_is_on_the_link():
    page = landing_page(ROUTES, "", Overview("OK", "source: sim, chosen by --sim 2", [Tile(0, "H100")]))
    parsed = Parsed(page)
    assert parsed.links == ["static/live.css", "metrics", "health", "api/v1/samples?field=155&gpu=0&since=5m", "odd"]
    assert parsed.sources == ["static/live.js"]
    # relative: the page works behind a reverse proxy's path prefix, on any host and scheme
    assert not [link for link in parsed.links + parsed.sources if link.startswith(("/", "http:", "https:", "//"))]
    assert "recorder" not in parsed.links   # a POST-only route has no link
    assert '<a href="api/v1/samples?field=155&amp;gpu=0&amp;since=5m">api/v1/samples</a>' in page


def test_text_from_routes_the_application_and_the_gpus_is_escaped():
    tile = Tile(3, 'H<100> "&"', util_pct=42.4, fb_used_mib=1536.0, fb_total_mib=81559.0, temp_c=61.0,
                power_w=312.6, health="<FAIL>")
    page = landing_page(ROUTES, "", Overview("OK; lost GPU 1 <x>", "source: sim, chosen by --sim <a>", [tile]))
    assert 'a &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot; line' in page
    assert "GPU 3 <span class=\"model\">H&lt;100&gt; &quot;&amp;&quot;</span>" in page
    assert "&lt;FAIL&gt;" in page and "OK; lost GPU 1 &lt;x&gt;" in page and "--sim &lt;a&gt;" in page
    assert "<x>" not in page and "<a>" not in page
    assert page.count("<script") == 1 and Parsed(page).inline_scripts == 0 and Parsed(page).styles_inline == 0


def test_the_tiles_show_the_newest_values_and_a_dash_for_what_is_not_served():
    full = Tile(0, "H100", util_pct=97.0, fb_used_mib=58060.8, fb_total_mib=81559.0, temp_c=70.0, power_w=695.2,
                health="PASS")
    bare = Tile(1, "H100", health="OK")
    page = landing_page(ROUTES, "", Overview("OK", "source: nvml, chosen by --nvml", [full, bare]))
    tiles = re.findall(r'<li class="tile" data-gpu="(\d)">(.*?)</li>', page, re.S)
    values = {gpu: dict(re.findall(r'<dt>([a-z]+)</dt><dd[^>]*>([^<]*)</dd>', body)) for gpu, body in tiles}
    assert values == {"0": {"util": "97 %", "fb": "56.7 / 80 GiB", "temp": "70 °C", "power": "695 W",
                            "health": "PASS"},
                      "1": {"util": "-", "fb": "-", "temp": "-", "power": "-", "health": "OK"}}
    assert "<b>nvml, chosen by --nvml</b>" in page and "<span>2 GPUs</span>" in page


def test_a_phone_gets_a_viewport_and_no_javascript_gets_the_plain_page():
    page = landing_page(ROUTES, "<h2>Flight recordings</h2>\n", None)
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "<noscript>" in page and 'id="charts"' in page and "hidden" in page   # the charts show once drawn
    assert page.index("<h2>Paths</h2>") < page.index("<h2>Flight recordings</h2>")
    assert __version__ in page and 'class="tiles"' not in page   # no overview yet: no tiles


def test_without_the_history_api_there_is_no_chart_section():
    page = landing_page({}, "", Overview("OK", "", []))
    assert 'id="charts"' not in page and "<noscript>" not in page and "<span>0 GPUs</span>" in page


def test_the_page_script_and_style_sheet_are_in_the_installed_package():
    script = STATIC["/static/live.js"].body.decode()
    assert STATIC["/static/live.js"].content_type == "text/javascript; charset=utf-8"
    assert STATIC["/static/live.css"].content_type == "text/css; charset=utf-8"
    # the script is its own: no import, no other origin, no eval; a few hundred lines
    assert not re.search(r"\bimport\b|https?://|\beval\(|new Function", script)
    assert script.count("\n") < 400 and "data.cursor" in script and "since" in script


# ---- over HTTP -------------------------------------------------------------------------

class Node:
    calls = 0

    def overview(self) -> Overview:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("not this time")
        return Overview("OK", "source: sim, chosen by --sim 1", [Tile(0, "H200", util_pct=5.0)])


@pytest.fixture
def served():
    node = Node()
    server = MetricsServer("127.0.0.1:0", lambda openmetrics: b"", lambda: (True, "OK"), routes=ROUTES,
                           landing_overview=node.overview, response_headers={"X-Frame-Options": "DENY"})
    server.start()
    yield server
    server.stop()


def _get(server: MetricsServer, path: str) -> tuple[http.client.HTTPResponse, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def test_the_page_allows_only_its_own_script_and_serves_it(served, caplog):
    response, body = _get(served, "/")   # the overview fails: the page is still served, without tiles
    assert response.status == 200 and b'class="tiles"' not in body and "overview failed" in caplog.text
    csp = response.getheader("Content-Security-Policy")
    assert "script-src 'self';" in csp and "default-src 'none';" in csp and "unsafe" not in csp
    assert response.getheader("Set-Cookie") is None and response.getheader("X-Frame-Options") == "DENY"
    response, body = _get(served, "/")
    assert response.status == 200 and b'<li class="tile" data-gpu="0"><h3>GPU 0 <span class="model">H200' in body
    for path in ("/static/live.js", "/static/live.css"):
        response, body = _get(served, path)
        assert response.status == 200 and body == STATIC[path].body
        assert response.getheader("Content-Type") == STATIC[path].content_type
        assert response.getheader("X-Content-Type-Options") == "nosniff"
    assert _get(served, "/static/other.js")[0].status == 404
