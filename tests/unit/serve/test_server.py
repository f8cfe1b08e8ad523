"""The HTTP server against real clients (http.client and raw sockets) on loopback."""

from __future__ import annotations

import gzip
import http.client
import logging
import socket
import threading
import time

import pytest

from dcgm_collector import __version__
from dcgm_collector.serve.server import (
    CONTENT_TYPE_OPENMETRICS,
    CONTENT_TYPE_TEXT,
    MAX_CONNECTIONS,
    REQUEST_HEAD_TIMEOUT_S,
    ListenError,
    MetricsServer,
    Reply,
    Route,
    Unavailable,
    accepts_gzip,
    parse_listen_address,
    wants_openmetrics,
)

BODY = b"# HELP up test\n# TYPE up gauge\nup 1\n"
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


class Stand:
    """Stand-in metrics / health callables that record how they were called."""

    def __init__(self) -> None:
        self.calls: list[bool] = []
        self.scrapes: list[float] = []
        self.health_answer: tuple[bool, str] = (True, "OK")
        self.fail: BaseException | None = None

    def metrics(self, openmetrics: bool) -> bytes:
        self.calls.append(openmetrics)
        if self.fail is not None:
            raise self.fail
        return BODY + (b"# EOF\n" if openmetrics else b"")

    def health(self) -> tuple[bool, str]:
        if isinstance(self.health_answer, BaseException):
            raise self.health_answer
        return self.health_answer

    def observe(self, seconds: float) -> None:
        self.scrapes.append(seconds)


@pytest.fixture
def stand() -> Stand:
    return Stand()


@pytest.fixture
def server(stand: Stand):
    s = MetricsServer("127.0.0.1:0", stand.metrics, stand.health, stand.observe, request_timeout_s=0.5)
    s.start()
    yield s
    s.stop()


def request(server: MetricsServer, method: str = "GET", path: str = "/metrics", headers: dict | None = None,
            body: bytes | None = None) -> tuple[http.client.HTTPResponse, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def raw_exchange(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


# ---- /metrics ------------------------------------------------------------------------

def test_metrics_text_format(server, stand):
    response, body = request(server)
    assert response.status == 200
    assert body == BODY
    assert response.getheader("Content-Type") == CONTENT_TYPE_TEXT
    assert response.getheader("Content-Length") == str(len(BODY))
    assert response.getheader("Content-Encoding") is None
    assert stand.calls == [False]


def test_metrics_openmetrics_when_prometheus_asks(server, stand):
    response, body = request(server, headers={"Accept": PROMETHEUS_ACCEPT})
    assert response.getheader("Content-Type") == CONTENT_TYPE_OPENMETRICS
    assert body.endswith(b"# EOF\n")
    assert stand.calls == [True]


@pytest.mark.parametrize("accept, openmetrics", [
    (None, False),
    ("*/*", False),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", False),   # a browser
    ("text/plain;version=0.0.4", False),
    ("application/openmetrics-text", True),
    ("application/openmetrics-text; version=1.0.0; charset=utf-8", True),
    (PROMETHEUS_ACCEPT, True),
    ("application/openmetrics-text;version=1.0.0;q=0.2,text/plain;q=0.5", False),
    ("application/openmetrics-text;q=0", False),
    ("application/openmetrics-text;version=9.9.9", False),
    ("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,text/plain;version=0.0.4;q=0.3", True),
])
def test_content_negotiation(accept, openmetrics):
    assert wants_openmetrics(None if accept is None else [accept]) is openmetrics


@pytest.mark.parametrize("encoding, gzipped", [
    (None, False), ("gzip", True), ("gzip, deflate, br", True), ("deflate", False), ("gzip;q=0", False),
    ("*", True), ("*;q=0", False), ("identity", False), ("br;q=1.0, gzip;q=0.8", True),
])
def test_gzip_negotiation(encoding, gzipped):
    assert accepts_gzip(None if encoding is None else [encoding]) is gzipped


def test_metrics_gzip_only_when_accepted(server):
    response, body = request(server, headers={"Accept-Encoding": "gzip"})
    assert response.getheader("Content-Encoding") == "gzip"
    assert response.getheader("Content-Length") == str(len(body))
    assert gzip.decompress(body) == BODY
    assert "Accept-Encoding" in response.getheader("Vary")
    response, body = request(server, headers={"Accept-Encoding": "identity"})
    assert response.getheader("Content-Encoding") is None and body == BODY


def test_head_sends_headers_only(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("HEAD", "/metrics")
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Length") == str(len(BODY))
    assert response.read() == b""
    # the connection is still in step: a GET on it gets its own answer
    conn.request("GET", "/health")
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"OK")
    conn.close()


def test_keep_alive_serves_several_requests_on_one_connection(server, stand):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    for _ in range(3):
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        assert response.read() == BODY
    conn.close()
    assert len(stand.calls) == 3


def test_scrape_duration_is_observed(server, stand):
    request(server)
    deadline = time.monotonic() + 2
    while not stand.scrapes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(stand.scrapes) == 1 and 0 <= stand.scrapes[0] < 5


def test_query_string_is_ignored(server):
    response, body = request(server, path="/metrics?collect[]=x")
    assert response.status == 200 and body == BODY


def test_render_exception_gives_500_and_the_server_carries_on(server, stand, caplog):
    stand.fail = RuntimeError("boom")
    with caplog.at_level(logging.ERROR, logger="dcgm_collector.serve.server"):
        response, body = request(server)
    assert response.status == 500
    assert body.count(b"\n") == 1 and b"Traceback" not in body and b"boom" not in body
    assert any("boom" in r.getMessage() for r in caplog.records)
    stand.fail = None
    response, body = request(server)
    assert response.status == 200 and body == BODY


def test_unavailable_gives_503(server, stand):
    stand.fail = Unavailable("starting: no sampler yet")
    response, body = request(server)
    assert (response.status, body) == (503, b"starting: no sampler yet")


# ---- /health and / ---------------------------------------------------------------------

def test_health_ok(server):
    response, body = request(server, path="/health")
    assert (response.status, body) == (200, b"OK")


def test_health_503_with_the_reason_one_line_per_target(server, stand):
    stand.health_answer = (False, "gpu-a:  samples are stale: last one 12.0 s ago\n\ngpu-b: cannot reach\thostengine")
    response, body = request(server, path="/health")
    assert response.status == 503
    assert body == b"gpu-a: samples are stale: last one 12.0 s ago\ngpu-b: cannot reach hostengine"


def test_health_exception_is_503(server, stand, caplog):
    stand.health_answer = RuntimeError("bad")
    with caplog.at_level(logging.ERROR, logger="dcgm_collector.serve.server"):
        response, body = request(server, path="/health")
    assert response.status == 503 and b"RuntimeError" in body


def test_landing_page_links_metrics_and_health(server):
    response, body = request(server, path="/")
    assert response.status == 200
    assert response.getheader("Content-Type").startswith("text/html")
    page = body.decode()
    assert 'href="metrics"' in page and 'href="health"' in page and __version__ in page


# ---- bad requests -------------------------------------------------------------------------

def test_unknown_path_is_404(server, stand):
    response, body = request(server, path="/metricsx")
    assert response.status == 404 and body.count(b"\n") == 1
    assert stand.calls == []


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
def test_other_methods_are_405(server, stand, method):
    response, _ = request(server, method=method, body=b"x=1" if method in ("POST", "PUT") else None)
    assert response.status == 405
    assert response.getheader("Allow") == "GET, HEAD"
    assert stand.calls == []


def test_oversized_headers_get_431(server):
    data = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"".join(
        b"X-Filler-%d: %s\r\n" % (i, b"a" * 1000) for i in range(40)) + b"\r\n"
    reply = raw_exchange(server.port, data)
    assert reply.startswith(b"HTTP/1.1 431 ")


def test_one_huge_header_line_gets_431(server):
    reply = raw_exchange(server.port, b"GET / HTTP/1.1\r\nCookie: " + b"c" * 100_000 + b"\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 431 ")


def test_long_uri_gets_414(server):
    reply = raw_exchange(server.port, b"GET /" + b"m" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 414 ")


def test_garbage_request_line_gets_400(server):
    reply = raw_exchange(server.port, b"HELLO\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ") or reply.startswith(b"HTTP/1.0 400 ")
    response, _ = request(server)
    assert response.status == 200


def test_silent_client_does_not_block_others_and_is_dropped(server):
    silent = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        started = time.monotonic()
        response, body = request(server)       # served while the silent one holds a connection
        assert response.status == 200 and body == BODY
        assert silent.recv(1) == b""           # dropped after the request timeout (0.5 s here)
        assert time.monotonic() - started < 4
    finally:
        silent.close()


def test_half_sent_request_is_dropped(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")   # headers never finished
        assert sock.recv(65536) == b""


def test_connections_beyond_the_cap_get_503(stand):
    with MetricsServer("127.0.0.1:0", stand.metrics, stand.health, max_connections=2, light_reserve=0,
                       request_timeout_s=5) as s:
        idle = [socket.create_connection(("127.0.0.1", s.port), timeout=5) for _ in range(2)]
        try:
            time.sleep(0.2)
            reply = raw_exchange(s.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert reply.startswith(b"HTTP/1.1 503 ")
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if raw_exchange(s.port, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") \
                    .startswith(b"HTTP/1.1 200 "):
                break
            time.sleep(0.05)
        else:
            pytest.fail("closed connections were not released")


def test_the_reserve_beyond_the_cap_is_for_metrics_and_health_only(stand):
    # a client holding every slot of the cap cannot lock the scrapers out: a few connections beyond it are kept
    # for /metrics, /health and /, and a connection let in on them that asks for anything else gets the 503
    routes = {"/api": Route(lambda req: Reply(200, b"api\n"))}
    with MetricsServer("127.0.0.1:0", stand.metrics, stand.health, max_connections=2, light_reserve=1,
                       request_timeout_s=5, routes=routes) as s:
        idle = [socket.create_connection(("127.0.0.1", s.port), timeout=5) for _ in range(2)]
        try:
            time.sleep(0.2)
            assert raw_exchange(s.port, b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n").startswith(
                b"HTTP/1.1 503 Service Unavailable")
            assert raw_exchange(s.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") \
                .endswith(BODY)
            with socket.create_connection(("127.0.0.1", s.port), timeout=5):   # the reserve is taken now
                time.sleep(0.2)
                assert raw_exchange(s.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").startswith(
                    b"HTTP/1.1 503 ")
        finally:
            for sock in idle:
                sock.close()


# ---- addresses and life cycle ---------------------------------------------------------------

@pytest.mark.parametrize("address, expected", [
    (":9400", ("", 9400)), ("0.0.0.0:9400", ("0.0.0.0", 9400)), ("127.0.0.1:0", ("127.0.0.1", 0)),
    ("[::]:9400", ("::", 9400)), ("[::1]:9400", ("::1", 9400)), ("localhost:9400", ("localhost", 9400)),
    ("[fe80::1%eth0]:9400", ("fe80::1%eth0", 9400)),
])
def test_listen_addresses(address, expected):
    assert parse_listen_address(address) == expected


@pytest.mark.parametrize("address", ["9400", "", ":", ":http", ":70000", "::1:9400", "[::1]9400", "[nope]:1",
                                     "host name:1", "[::1]:"])
def test_bad_listen_addresses(address):
    with pytest.raises(ValueError, match="listen address"):
        parse_listen_address(address)


def test_address_in_use_is_one_clear_line(stand):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = MetricsServer(f"127.0.0.1:{port}", stand.metrics, stand.health)
        with pytest.raises(ListenError) as info:
            s.start()
    assert str(info.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"


def test_all_interfaces_listens_on_ipv4_and_ipv6(stand):
    with MetricsServer(":0", stand.metrics, stand.health) as s:
        response, _ = request(s, path="/health")
        assert response.status == 200
        if socket.has_dualstack_ipv6():
            try:
                conn = http.client.HTTPConnection("::1", s.port, timeout=5)
                conn.request("GET", "/health")
                assert conn.getresponse().status == 200
                conn.close()
            except OSError as error:  # loopback without ::1 (some containers)
                pytest.skip(f"no IPv6 loopback: {error}")


def test_ipv6_loopback(stand):
    try:
        s = MetricsServer("[::1]:0", stand.metrics, stand.health)
        s.start()
    except ListenError as error:
        pytest.skip(f"no IPv6 loopback: {error}")
    try:
        conn = http.client.HTTPConnection("::1", s.port, timeout=5)
        conn.request("GET", "/metrics")
        assert conn.getresponse().read() == BODY
        conn.close()
    finally:
        s.stop()


def test_localhost_name(stand):
    with MetricsServer("localhost:0", stand.metrics, stand.health) as s:
        response, _ = request(s, path="/health")
        assert response.status == 200


def test_stop_closes_idle_connections_and_frees_the_port(stand):
    s = MetricsServer("127.0.0.1:0", stand.metrics, stand.health, request_timeout_s=30)
    s.start()
    port = s.port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/metrics")
    conn.getresponse().read()        # keep-alive: the connection stays open
    started = time.monotonic()
    s.stop()
    assert time.monotonic() - started < 2
    assert not s.running
    assert not any(t.name == "dcgm-collector-http" and t.is_alive() for t in threading.enumerate())
    again = MetricsServer(f"127.0.0.1:{port}", stand.metrics, stand.health)
    again.start()
    again.stop()
    conn.close()


# ---- slow clients (slowloris) ------------------------------------------------------------------

class SlowHeaderClients:
    """Connections that send a request line, then one header byte every ``interval_s``, forever.

    A closed one is opened again, as an attacker would; ``run`` for ``seconds`` from one thread.
    """

    def __init__(self, port: int, count: int, interval_s: float = 2.0) -> None:
        self.port = port
        self.count = count
        self.interval_s = interval_s
        self.sockets: list[socket.socket | None] = [None] * count
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> socket.socket | None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            return sock
        except OSError:
            return None

    def _run(self) -> None:
        while not self.stop.is_set():
            for i in range(self.count):
                sock = self.sockets[i]
                try:
                    if sock is None:
                        raise OSError("not connected")
                    sock.sendall(b"a")
                except OSError:
                    if sock is not None:
                        sock.close()
                    self.sockets[i] = self._open()
            self.stop.wait(self.interval_s)

    def __enter__(self) -> SlowHeaderClients:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        for sock in self.sockets:
            if sock is not None:
                sock.close()


def test_slow_header_clients_do_not_lock_scrapers_out(stand):
    """More slow-header clients than the connection cap: a scraper still gets its metrics, promptly."""
    with MetricsServer("127.0.0.1:0", stand.metrics, stand.health) as s:   # the defaults, as deployed
        with SlowHeaderClients(s.port, count=MAX_CONNECTIONS + 16):
            time.sleep(3.0)   # every slow client connected and dripping
            for _ in range(3):
                started = time.monotonic()
                response, body = request(s)
                assert (response.status, body) == (200, BODY)
                assert time.monotonic() - started < 2.0
                time.sleep(0.5)


def test_request_head_must_arrive_within_its_deadline(stand):
    """A client dripping header bytes faster than the idle timeout is still dropped once the head deadline passes."""
    with MetricsServer("127.0.0.1:0", stand.metrics, stand.health) as s:
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as sock:
            started = time.monotonic()
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            closed_after = None
            while time.monotonic() - started < REQUEST_HEAD_TIMEOUT_S + 5:
                try:
                    sock.sendall(b"a")
                    sock.settimeout(1.0)
                    if sock.recv(65536) == b"":
                        closed_after = time.monotonic() - started
                        break
                except TimeoutError:
                    continue
                except OSError:
                    closed_after = time.monotonic() - started
                    break
    assert closed_after is not None, "the dripping client was never dropped"
    assert REQUEST_HEAD_TIMEOUT_S - 0.5 <= closed_after < REQUEST_HEAD_TIMEOUT_S + 3


# ---- protocol details ----------------------------------------------------------------------------

def read_response_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_http10_keep_alive_is_answered_with_keep_alive(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        head = read_response_head(sock)
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"\r\nconnection: keep-alive\r\n" in head.lower()
        sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")   # the connection is still open: a second answer comes
        rest = head.partition(b"\r\n\r\n")[2]
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        assert rest.startswith(b"OK") and b"HTTP/1.1 200 " in rest
        assert b"\r\nconnection: keep-alive\r\n" not in rest.lower()   # plain HTTP/1.0: closed after


@pytest.mark.parametrize("accept, content_type", [
    ("application/openmetrics-text; version=0.0.1", "application/openmetrics-text; version=0.0.1; charset=utf-8"),
    ("application/openmetrics-text;version=1.0.0", "application/openmetrics-text; version=1.0.0; charset=utf-8"),
    ("application/openmetrics-text", "application/openmetrics-text; version=1.0.0; charset=utf-8"),
    ("application/openmetrics-text;version=0.0.1;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5",
     "application/openmetrics-text; version=0.0.1; charset=utf-8"),
    (PROMETHEUS_ACCEPT, "application/openmetrics-text; version=1.0.0; charset=utf-8"),
])
def test_openmetrics_version_asked_for_is_served(server, accept, content_type):
    response, body = request(server, headers={"Accept": accept})
    assert response.status == 200
    assert response.getheader("Content-Type") == content_type
    assert body.endswith(b"# EOF\n")


def test_header_line_without_colon_is_400_and_closes(server, stand):
    reply = raw_exchange(server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"\r\nConnection: close\r\n" in reply
    assert stand.calls == []


# ---- extra routes ----------------------------------------------------------------------

def _routed(stand: Stand, **server_options):
    from dcgm_collector.serve.server import Reply, Route

    seen = []

    def echo(req):
        seen.append(req)
        if req.query.get("fail") == ["1"]:
            raise RuntimeError("boom")
        if req.query.get("busy") == ["1"]:
            raise Unavailable("not ready yet")
        return Reply(200, b"x" * 2000 + req.body, "application/json", compressible=True)

    routes = {"/api/echo": Route(echo, landing="echoes"), "/trigger": Route(echo, methods=("POST",), max_body=64)}
    s = MetricsServer("127.0.0.1:0", stand.metrics, stand.health, stand.observe, request_timeout_s=0.5,
                      routes=routes, landing_extra=lambda: "<h2>Recordings</h2>", **server_options)
    s.start()
    return s, seen


def test_extra_routes_answer_with_their_methods_bodies_and_errors(stand, caplog):
    server, seen = _routed(stand)
    try:
        response, body = request(server, "GET", "/api/echo?field=150&gpu=0&gpu=1&since=")
        assert response.status == 200 and response.getheader("Content-Type") == "application/json"
        assert body == b"x" * 2000
        assert seen[-1].query == {"field": ["150"], "gpu": ["0", "1"], "since": [""]} and seen[-1].method == "GET"
        response, body = request(server, "GET", "/api/echo", headers={"Accept-Encoding": "gzip"})
        assert response.getheader("Content-Encoding") == "gzip" and gzip.decompress(body) == b"x" * 2000
        response, body = request(server, "POST", "/trigger", body=b'{"why": "test"}')
        assert response.status == 200 and body.endswith(b'{"why": "test"}')
        response, body = request(server, "GET", "/trigger")
        assert response.status == 405 and response.getheader("Allow") == "POST"
        response, body = request(server, "POST", "/api/echo", body=b"{}")
        assert response.status == 405 and response.getheader("Allow") == "GET, HEAD"
        response, body = request(server, "POST", "/trigger", body=b"y" * 65)
        assert response.status == 413 and b"at most 64 bytes" in body
        response, body = request(server, "GET", "/api/echo?busy=1")
        assert response.status == 503 and body == b"not ready yet"
        with caplog.at_level(logging.ERROR):
            response, body = request(server, "GET", "/api/echo?fail=1")
        assert response.status == 500 and "answering GET /api/echo failed: boom" in caplog.text
        response, body = request(server, "GET", "/")
        assert b'<a href="api/echo">api/echo</a>: echoes' in body and b"<h2>Recordings</h2>" in body
        assert b"trigger" not in body
        response, _ = request(server, "GET", "/metrics")   # the built-in paths are still there
        assert response.status == 200
    finally:
        server.stop()


def test_extra_routes_ask_for_the_same_credentials(stand):
    import base64

    server, seen = _routed(stand, authenticate=lambda header: header == "Basic " + base64.b64encode(b"a:b").decode())
    try:
        response, _ = request(server, "POST", "/trigger", body=b"{}")
        assert response.status == 401 and not seen
        response, _ = request(server, "POST", "/trigger", body=b"{}",
                              headers={"Authorization": "Basic " + base64.b64encode(b"a:b").decode()})
        assert response.status == 200 and len(seen) == 1
    finally:
        server.stop()


# ---- framing: Content-Length, strictly ------------------------------------------------------------

@pytest.mark.parametrize("lengths", [
    [b"5", b"6"], [b"0", b"5"], [b"+5"], [b"-1"], [b" 5 5"], [b"5 5"], [b"5,5"], ["\u0665".encode()], [b"0x5"],
    [b""], [b"1_0"], [b"9" * 40],
])
@pytest.mark.parametrize("path", ["/metrics", "/trigger"])
def test_a_content_length_that_cannot_be_trusted_is_400_and_closes(stand, lengths, path):
    server, seen = _routed(stand)
    try:
        method = b"POST" if path == "/trigger" else b"GET"
        head = b"".join(b"Content-Length: " + value + b"\r\n" for value in lengths)
        reply = raw_exchange(server.port, method + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + head
                             + b"\r\nhello")
        status, _, rest = reply.partition(b"\r\n")
        assert status == b"HTTP/1.1 400 Bad Request", reply
        assert b"\r\nConnection: close\r\n" in rest
        body = rest.partition(b"\r\n\r\n")[2]
        assert body.startswith(b"400 Bad Request: Content-Length") and body.count(b"\n") == 1
        assert stand.calls == [] and seen == []
    finally:
        server.stop()


def test_content_length_beside_transfer_encoding_is_400(server, stand):
    reply = raw_exchange(server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                      b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ") and b"both Content-Length and Transfer-Encoding" in reply
    assert stand.calls == []


def test_the_same_content_length_twice_is_taken(stand):
    server, seen = _routed(stand)
    try:
        reply = raw_exchange(server.port, b"POST /trigger HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                          b"Content-Length:  5\r\nConnection: close\r\n\r\nhello")
        assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"hello") and seen[-1].body == b"hello"
    finally:
        server.stop()


# ---- bodies in pieces, the write deadline, light requests first -------------------------------------

def _piece_server(stand: Stand, pieces: list[bytes], **options):
    sent = threading.Event()
    routes = {"/big": Route(lambda req: Reply(200, pieces, "application/json", compressible=True, sent=sent.set))}
    s = MetricsServer("127.0.0.1:0", stand.metrics, stand.health, routes=routes, **options)
    s.start()
    return s, sent


def test_a_body_in_pieces_goes_out_whole_with_its_length_and_gzip(stand):
    pieces = [b"[", *(b"%d," % i for i in range(50_000)), b"0]"]
    whole = b"".join(pieces)
    server, sent = _piece_server(stand, pieces)
    try:
        response, body = request(server, path="/big")
        assert response.status == 200 and body == whole and response.getheader("Content-Length") == str(len(whole))
        assert sent.wait(2)
        sent.clear()
        response, body = request(server, path="/big", headers={"Accept-Encoding": "gzip"})
        assert response.getheader("Content-Encoding") == "gzip" and gzip.decompress(body) == whole
        assert int(response.getheader("Content-Length")) == len(body) < len(whole)
        assert sent.wait(2)
        response, _ = request(server, "HEAD", "/big")
        assert response.status == 200 and response.getheader("Content-Length") == str(len(whole))
    finally:
        server.stop()


def test_metrics_in_pieces_share_the_compression_of_their_first_piece(stand, monkeypatch):
    """/metrics given as pieces (the families text kept between two ticks, then the self-metrics): each answer
    is the whole body, gzip or not, and the kept first piece is compressed once for all the answers it is in."""
    from dcgm_collector.serve import framing

    families = b"".join(b'DCGM_FI_DEV_GPU_TEMP{gpu="%d"} %d\n' % (i, i % 90) for i in range(20_000))
    scrapes = iter(range(1, 100))
    compressors = []
    real = framing.zlib.compressobj
    monkeypatch.setattr(framing.zlib, "compressobj", lambda *a: compressors.append(a) or real(*a))

    def metrics(openmetrics: bool) -> list[bytes]:
        return [families, b"dcgm_collector_scrapes %d\n" % next(scrapes)]

    server = MetricsServer("127.0.0.1:0", metrics, stand.health, stand.observe)
    server.start()
    try:
        for n in (1, 2):
            response, body = request(server, headers={"Accept-Encoding": "gzip"})
            assert response.getheader("Content-Encoding") == "gzip"
            assert gzip.decompress(body) == families + b"dcgm_collector_scrapes %d\n" % n
        response, body = request(server)
        assert body == families + b"dcgm_collector_scrapes 3\n"
        assert response.getheader("Content-Length") == str(len(body))
        assert len(compressors) == 1
    finally:
        server.stop()


def _slow_reader(port: int, path: str) -> socket.socket:
    """A client that asks for ``path`` with a tiny receive window and then reads nothing."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return sock


def _read_until_closed(sock: socket.socket, timeout: float) -> int:
    """Bytes read until the server closed or reset the connection (-1 if it stayed open ``timeout`` s)."""
    sock.settimeout(timeout)
    total = 0
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return total
            total += len(chunk)
    except ConnectionResetError:
        return total
    except TimeoutError:
        return -1


@pytest.mark.parametrize("trickle", [False, True])
def test_a_client_that_does_not_read_the_answer_is_dropped_at_the_deadline(stand, trickle):
    # 8 MB that the client reads at most a few bytes of at a time: per-write timeouts would let it hold the
    # thread and the answer for ever; the whole response has RESPONSE_TIMEOUT_S (here 1 s)
    pieces = [b"x" * 65536 for _ in range(128)]
    server, sent = _piece_server(stand, pieces, response_timeout_s=1.0, request_timeout_s=5.0)
    try:
        started = time.monotonic()
        with _slow_reader(server.port, "/big") as sock:
            if trickle:   # one byte every 0.2 s: each write makes progress, the whole never ends in time
                sock.settimeout(0.5)
                while not sent.is_set() and time.monotonic() - started < 5:
                    try:
                        if not sock.recv(1):
                            break
                    except OSError:
                        break
                    time.sleep(0.2)
            assert sent.wait(5), "the answer was never let go"
            dropped_after = time.monotonic() - started
            assert 0.9 <= dropped_after < 3.0
            got = _read_until_closed(sock, 5.0)
            assert 0 <= got < 8 * 1024 * 1024   # closed (reset) before the whole answer
        response, body = request(server)   # and the server serves on
        assert (response.status, body) == (200, BODY)
    finally:
        server.stop()


def test_metrics_runs_as_a_light_request(stand):
    from dcgm_collector.serve.admission import Admission

    admission = Admission()
    during = []

    def metrics(openmetrics: bool) -> bytes:
        during.append(admission._light)
        return BODY

    with MetricsServer("127.0.0.1:0", metrics, stand.health, admission=admission) as s:
        assert s.admission is admission
        response, _ = request(s)
        assert response.status == 200 and during == [1]
        # the client may read the answer before the server's thread leaves the light section
        deadline = time.monotonic() + 5
        while admission._light and time.monotonic() < deadline:
            time.sleep(0.01)
        assert admission._light == 0
