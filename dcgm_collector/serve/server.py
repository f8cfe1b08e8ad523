"""The HTTP server: /metrics, /health and a landing page, on a thread of its own.

Standard library only (http.server).  A request never talks to DCGM: the
``metrics`` and ``health`` callables render from what the sampler already
stored, so a slow or dead hostengine can delay samples but never a scrape.

Hardening, since the port is often reachable from a whole cluster:

* the request line is capped (414) and so is the whole header section (431);
  a header line without a colon is a 400 (as Go answers), never a reason to
  skip the headers after it;
* every connection has a read timeout, so a client that connects and sends
  nothing (or stops half way) is dropped instead of holding a thread;
* the request line and headers must arrive whole within REQUEST_HEAD_TIMEOUT_S
  of their first byte, however steadily they trickle in (slowloris), else the
  connection is dropped;
* every response, whatever its route, must be written whole within
  RESPONSE_TIMEOUT_S of its request head (as Go's WriteTimeout): a client
  that reads one byte a second is dropped at the deadline (its connection
  reset), and its thread and the answer's memory are freed
  (dcgm_collector.serve.deadline);
* Content-Length is read strictly on every request (RFC 9112 6.3): ASCII
  digits only, no sign; two Content-Length headers with different values, or
  one with Transfer-Encoding, are a 400 and the connection is closed (the
  same value repeated is taken, as Go takes it);
* the number of open connections is capped (MAX_CONNECTIONS).  When the cap
  is reached, a new connection evicts the connection that has waited longest
  for a complete request head, provided it has waited more than
  EVICTABLE_AFTER_S: a slow-header client or an idle keep-alive one, never one
  whose request is being answered, nor one just accepted.  So clients that
  never finish a request cannot lock scrapers out (a scraper sends its head
  within milliseconds and is then no longer evictable), while a burst of
  honest new connections beyond the cap still gets a 503 rather than churning
  each other.  Only a client opening more than MAX_CONNECTIONS connections per
  EVICTABLE_AFTER_S could keep the server full, and even then LIGHT_RESERVE
  connections beyond the cap are kept for /metrics, /health and / alone (a
  connection let in on the reserve that asks for another path gets the 503);
* heavy answers (the history API's) are capped and light requests go first
  (dcgm_collector.serve.admission): a route's handler takes a slot from the
  server's ``admission`` and hands it back through its Reply's ``sent``,
  which the server calls once the answer is written or its client dropped;
  /metrics, /health and / run as light requests, which heavy builders pause
  for;
* only GET and HEAD are served (405 otherwise), unknown paths get a 404;
  an extra route (``routes``) names the methods it takes and the largest
  body it reads (413 beyond; a chunked body is refused with 411);
* an exception while rendering is logged and answered with a one-line 500,
  and the server carries on.

TLS, basic auth, extra response headers and a request rate limit are
optional hooks (``ssl_context``, ``authenticate``, ``response_headers``,
``allow_request``, ``verify_client``); dcgm_collector.serve.webconfig makes them
from an exporter-toolkit web config.  The TLS handshake runs on the
connection's own thread under the request timeout, so a client that
connects and stalls never holds up the accept loop; plain HTTP sent to a
TLS port gets a plain-text 400, as Go's server answers it.  When
``authenticate`` is given every path asks for credentials (401 with
``WWW-Authenticate: Basic``), /health included, as exporter-toolkit does.

Listen addresses are written as dcgm-exporter's (Go's) ``host:port``:
``:9400`` (every interface), ``0.0.0.0:9400``, ``127.0.0.1:9400``,
``[::]:9400``, ``[::1]:9400``, ``localhost:9400``.  ``:9400`` and
``[::]:9400`` listen dual-stack (IPv6 and IPv4) where the host has IPv6, and
on IPv4 alone otherwise; ``0.0.0.0:9400`` listens on IPv4 only.  A host name
listens on one of its addresses, IPv4 first, as Go does.
"""

from __future__ import annotations

import email.errors
import errno
import gzip
import html
import http.client
import inspect
import io
import ipaddress
import logging
import os
import selectors
import socket
import socketserver
import ssl
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from dcgm_collector import __version__
from dcgm_collector.serve.addresses import parse_listen_address
from dcgm_collector.serve.admission import Admission
from dcgm_collector.serve.deadline import DeadlineReader, DeadlineWriter, ResponseDeadline
from dcgm_collector.serve.framing import FramingError, body_size, content_length, gzip_body
from dcgm_collector.serve.negotiation import (
    accepts_gzip,
    openmetrics_content_type,
    openmetrics_version,
    wants_openmetrics,
)

__all__ = [
    "CONTENT_TYPE_OPENMETRICS",
    "CONTENT_TYPE_TEXT",
    "ListenError",
    "MetricsServer",
    "Reply",
    "Request",
    "Route",
    "TooManyRequests",
    "Unavailable",
    "accepts_gzip",
    "openmetrics_version",
    "parse_listen_address",
    "wants_openmetrics",
]

log = logging.getLogger(__name__)

CONTENT_TYPE_TEXT = "text/plain; version=0.0.4; charset=utf-8"
CONTENT_TYPE_OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PLAIN_TYPE = "text/plain; charset=utf-8"

MAX_REQUEST_LINE = 8 * 1024          # bytes, request line with its CRLF
MAX_HEADER_BYTES = 32 * 1024         # bytes, the whole header section
REQUEST_TIMEOUT_S = 10.0             # per read or write, as dcgm-exporter's Read/WriteTimeout
REQUEST_HEAD_TIMEOUT_S = 10.0        # the request line and headers, from their first byte
RESPONSE_TIMEOUT_S = 10.0            # the whole response, from the end of its request head (Go's WriteTimeout)
MAX_CONNECTIONS = 64
LIGHT_RESERVE = 8                    # connections beyond MAX_CONNECTIONS, for the light paths only
LIGHT_PATHS = frozenset({"/metrics", "/health", "/"})
WRITE_BYTES = 64 * 1024              # a body given in pieces goes out in writes of about this size
# the kernel's send buffer per connection (it doubles this): without a cap it grows to megabytes per connection,
# charged to the pod's memory, and an answer a client does not read would sit there rather than time out
SEND_BUFFER_BYTES = 256 * 1024
# A connection this long without a complete request head may be evicted to make room; a
# scraper's head arrives in milliseconds, so only slow or idle connections ever get this old.
EVICTABLE_AFTER_S = 1.0
# Fast compression: the text format shrinks ~10x even at level 1, and a
# scrape should cost the node as little CPU as possible.
GZIP_LEVEL = 1
# How long a connection answered with an error keeps swallowing what the client
# still sends, so that closing it does not reset the error response away.
DRAIN_S = 0.5
DRAIN_BYTES = 256 * 1024
TLS_HANDSHAKE_RECORD = 0x16   # the first byte a TLS client sends
# Go's answer to plain HTTP on a TLS port, so clients see the same thing
_PLAIN_HTTP_ON_TLS = (b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                      b"\r\nClient sent an HTTP request to an HTTPS server.\n")


class ListenError(Exception):
    """The server cannot listen on the address; str() is one line naming it."""


class Unavailable(Exception):
    """Raised by a metrics, health or authenticate callable that cannot answer yet: the server answers 503."""


class TooManyRequests(Exception):
    """Raised by an authenticate callable to refuse a client for now: the server answers 429 with Retry-After."""

    def __init__(self, message: str = "", retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


# ---- addresses ------------------------------------------------------------------

def _socket_address(host: str, port: int) -> tuple[int, tuple, bool]:
    """(address family, bind address, dual-stack) for a parsed listen address."""
    if host in ("", "::"):
        if socket.has_ipv6 and socket.has_dualstack_ipv6():
            return socket.AF_INET6, ("::", port, 0, 0), True
        if host == "":
            return socket.AF_INET, ("0.0.0.0", port), False
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        ip = None
    if ip is not None and ip.version == 4:
        return socket.AF_INET, (host, port), False
    try:
        infos = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise ListenError(f"cannot listen on {_display(host, port)}: cannot resolve {host!r} ({error.strerror})") \
            from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)  # IPv4 first, as Go listens on a name
    family, _, _, _, sockaddr = infos[0]
    return family, sockaddr, False


def _display(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ---- the request handler ----------------------------------------------------------

class _HeaderBudget:
    """The connection's reader while headers are parsed: fails once they pass the budget."""

    def __init__(self, raw, budget: int) -> None:
        self._raw = raw
        self._left = budget

    def readline(self, limit: int = -1) -> bytes:
        want = self._left + 1 if limit is None or limit < 0 else min(limit, self._left + 1)
        line = self._raw.readline(want)
        self._left -= len(line)
        if self._left < 0:
            raise http.client.LineTooLong("header section")
        return line

    def __getattr__(self, name: str):
        return getattr(self._raw, name)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive; every response carries Content-Length
    # HTTP/0.9 replies have no status line; nothing here speaks it, so answer such requests as 1.0
    default_request_version = "HTTP/1.0"
    server_version = f"dcgm-collector/{__version__}"
    sys_version = ""
    server: _HTTPServer

    def version_string(self) -> str:
        return self.server_version

    def setup(self) -> None:
        self.timeout = self.server.request_timeout_s
        self._drain_on_close = False
        super().setup()
        self._reader = DeadlineReader(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reader)
        self._writer = DeadlineWriter(self.connection, self.timeout)
        self.wfile = self._writer
        self._content_length: int | None = None
        # headers and body go out in separate writes: without this, Nagle's algorithm holds a
        # small body back until the client's delayed ACK (~40 ms per keep-alive scrape)
        if self.connection.family in (socket.AF_INET, socket.AF_INET6):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)

    def handle_one_request(self) -> None:
        try:
            self._reader.deadline = None
            if not self.rfile.peek(1):   # waiting for a request: the idle timeout applies
                self.close_connection = True
                return
            self._reader.deadline = time.monotonic() + self.server.request_head_timeout_s
            # an error answered while the head comes in: within the head's time and a response's
            self._writer.deadline = self._reader.deadline + self.server.response_timeout_s
            self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE + 1)
            if len(self.raw_requestline) > MAX_REQUEST_LINE:
                self.requestline = self.request_version = self.command = ""
                self._drain_on_close = True
                self.send_error(414, "URI Too Long")
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            self._reader.deadline = None
            self._writer.deadline = time.monotonic() + self.server.response_timeout_s
            self.connection.settimeout(self.timeout)   # a body's reads: the usual timeout
            state = self.server.answering(self.connection)
            if state is None:
                self.close_connection = True   # evicted while its head came in
                return
            if state.reserve and urlsplit(self.path).path not in LIGHT_PATHS:
                # the reserve is for /metrics, /health and /
                self._send(503, _TOO_MANY, PLAIN_TYPE, close=True, headers={"Retry-After": "1"})
                return
            self._dispatch()
            self.wfile.flush()
            self.server.waiting(self.connection)
        except ResponseDeadline:
            log.debug("dropping %s: the response was not read within %g s", self.client_address[0],
                      self.server.response_timeout_s)
            self._abort()
            self.close_connection = True
        except TimeoutError:
            self.close_connection = True   # idle or stalled client: drop it
        except (ConnectionError, OSError) as error:
            log.debug("connection from %s ended: %s", self.client_address[0], error)
            self.close_connection = True

    def parse_request(self) -> bool:
        raw = self.rfile
        self.rfile = _HeaderBudget(raw, MAX_HEADER_BYTES)
        try:
            if not super().parse_request():
                return False
        finally:
            self.rfile = raw
        # the stdlib parser takes a line without a colon as the end of the headers and silently
        # drops the ones after it (Connection: close among them); Go answers 400, and so do we
        if self.headers.get_payload() or any(isinstance(defect, email.errors.MissingHeaderBodySeparatorDefect)
                                             for defect in self.headers.defects):
            self._drain_on_close = True
            self.send_error(400, "Bad Request: malformed header line")
            return False
        try:
            self._content_length = content_length(self.headers)
        except FramingError as error:
            self._drain_on_close = True
            self.send_error(400, f"Bad Request: {error}")
            return False
        return True

    def _abort(self) -> None:
        """Reset the connection when it closes: the unsent rest of the answer is dropped, not left to the kernel."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self._drain_on_close:
                self._drain()

    def _drain(self) -> None:
        """Swallow what the client still sends, so closing does not reset our error reply."""
        sock = self.connection
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(DRAIN_S)
            deadline = time.monotonic() + DRAIN_S
            left = DRAIN_BYTES
            while left > 0 and time.monotonic() < deadline:
                chunk = sock.recv(min(65536, left))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass

    # -- responses
    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors as one plain-text line (stdlib sends HTML); the connection is closed."""
        if code == 431:
            message = "Request Header Fields Too Large"
            self._drain_on_close = True
        elif message is None:
            message = self.responses.get(code, ("Error",))[0]
        self.log_error("%d %s", code, message)
        self._send(code, f"{code} {message}\n".encode("utf-8", "replace"), PLAIN_TYPE, close=True)

    def _send(self, code: int, body: bytes | Sequence[bytes], content_type: str, *, close: bool = False,
              headers: dict[str, str] | None = None) -> None:
        """The response; a body given as pieces goes out in writes of about WRITE_BYTES, never joined whole."""
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(body_size(body)))
        configured = self.server.app.response_headers
        if "X-Content-Type-Options" not in configured:
            self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in configured.items():
            self.send_header(name, value)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
        elif self.request_version == "HTTP/1.0" and not self.close_connection:
            # an HTTP/1.0 client keeps the connection only when told so; the stdlib keeps it open silently
            self.send_header("Connection", "keep-alive")
        self.end_headers()
        if self.command == "HEAD":
            return
        if isinstance(body, bytes):
            self.wfile.write(body)
            return
        pending: list[bytes] = []
        size = 0
        for piece in body:
            pending.append(piece)
            size += len(piece)
            if size >= WRITE_BYTES:
                self.wfile.write(b"".join(pending))
                pending.clear()
                size = 0
        if pending:
            self.wfile.write(b"".join(pending))

    def _dispatch(self) -> None:
        app = self.server.app
        path = urlsplit(self.path).path
        route = app.routes.get(path)
        methods = route.methods if route is not None else ("GET", "HEAD")
        if self.command not in methods:
            self._drain_on_close = True   # the request body (if any) is not read
            allowed = ", ".join(methods)
            self._send(405, f"405 Method Not Allowed: use {allowed.replace(', ', ' or ')}\n".encode(), PLAIN_TYPE,
                       close=True, headers={"Allow": allowed})
            return
        body_expected = bool(self._content_length) or "Transfer-Encoding" in self.headers
        if body_expected and (route is None or route.max_body == 0):
            self.close_connection = True  # a body we do not read would be taken for the next request
        if app.allow_request is not None and not app.allow_request():
            self._send(429, b"429 Too Many Requests\n", PLAIN_TYPE)
            return
        if app.authenticate is not None:
            try:
                authenticated = self._authenticated(app.authenticate)
            except TooManyRequests as refusal:
                self._send(429, b"429 Too Many Requests\n", PLAIN_TYPE,
                           headers={"Retry-After": str(refusal.retry_after_s)})
                return
            except Unavailable as error:
                self._send(503, _one_line(str(error) or "unavailable"), PLAIN_TYPE, headers={"Retry-After": "1"})
                return
            if not authenticated:
                self._send(401, b"401 Unauthorized\n", PLAIN_TYPE, headers={"WWW-Authenticate": "Basic"})
                return
        if route is not None:
            self._route(route, path)
            return
        serve = {"/metrics": self._metrics, "/health": self._health, "/": self._landing}.get(path)
        if serve is None:
            self._send(404, b"404 Not Found: try /metrics, /health or /\n", PLAIN_TYPE)
            return
        with app.admission.light():   # heavy answers being built pause meanwhile
            serve()

    def _route(self, route: Route, path: str) -> None:
        """An extra route: read its body (bounded), call its handler, send its reply."""
        body = b""
        if "Transfer-Encoding" in self.headers:
            self._send(411, b"411 Length Required: send the body with a Content-Length\n", PLAIN_TYPE, close=True)
            return
        length = self._content_length or 0   # checked with the head
        if length > route.max_body:
            self._drain_on_close = True
            self._send(413, f"413 Content Too Large: at most {route.max_body} bytes\n".encode(), PLAIN_TYPE,
                       close=True)
            return
        if length:
            body = self.rfile.read(length)
            if len(body) != length:
                self.close_connection = True
                return
        split = urlsplit(self.path)
        request = Request(self.command, path, parse_qs(split.query, keep_blank_values=True), body,
                          self.address_string())
        try:
            reply = route.handler(request)
        except Unavailable as error:
            self._send(503, _one_line(str(error) or "unavailable"), PLAIN_TYPE, headers={"Retry-After": "1"})
            return
        except Exception as error:
            log.exception("answering %s %s failed: %s", self.command, path, error)
            self._send(500, b"500 Internal Server Error: see the collector's log\n", PLAIN_TYPE)
            return
        try:
            headers = dict(reply.headers)
            content = reply.body
            gzip_ok = accepts_gzip(self.headers.get_all("Accept-Encoding"))
            if reply.compressible and gzip_ok and body_size(content) > 1024:
                content = gzip_body(content, GZIP_LEVEL)
                headers["Content-Encoding"] = "gzip"
                headers["Vary"] = "Accept-Encoding"
            self._send(reply.status, content, reply.content_type, headers=headers)
        finally:
            if reply.sent is not None:
                try:
                    reply.sent()
                except Exception:
                    log.exception("the end of %s %s failed", self.command, path)

    def _authenticated(self, authenticate: Callable[[str | None, str], bool]) -> bool:
        """The hook's verdict; TooManyRequests and Unavailable pass through to be answered 429 and 503."""
        try:
            return bool(authenticate(self.headers.get("Authorization"), self.address_string()))
        except (TooManyRequests, Unavailable):
            raise
        except Exception:
            log.exception("checking credentials failed")
            return False

    def _metrics(self) -> None:
        started = time.perf_counter()
        app = self.server.app
        version = openmetrics_version(self.headers.get_all("Accept"))
        openmetrics = version is not None
        try:
            body = app.metrics(openmetrics)
        except Unavailable as error:
            self._send(503, _one_line(str(error) or "unavailable"), PLAIN_TYPE)
            return
        except Exception as error:
            log.exception("rendering /metrics failed: %s", error)
            self._send(500, b"500 Internal Server Error: rendering the metrics failed, see the collector's log\n",
                       PLAIN_TYPE)
            return
        headers = {"Vary": "Accept, Accept-Encoding"}
        if accepts_gzip(self.headers.get_all("Accept-Encoding")):
            body = gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)
            headers["Content-Encoding"] = "gzip"
        content_type = openmetrics_content_type(version) if version is not None else CONTENT_TYPE_TEXT
        self._send(200, body, content_type, headers=headers)
        if app.observe_scrape is not None:
            try:
                app.observe_scrape(time.perf_counter() - started)
            except Exception:
                log.exception("recording the scrape duration failed")

    def _health(self) -> None:
        try:
            ok, reason = self.server.app.health()
        except Unavailable as error:
            ok, reason = False, str(error) or "unavailable"
        except Exception as error:
            log.exception("health check failed: %s", error)
            ok, reason = False, f"health check failed: {type(error).__name__}"
        if ok:
            # healthy, perhaps with a note ("OK; lost GPU 1 ...") on one line
            note = " ".join((reason or "").split())
            self._send(200, note.encode() if note.startswith("OK; ") else b"OK", PLAIN_TYPE)
        else:
            self._send(503, _lines(reason or "unhealthy"), PLAIN_TYPE)

    def _landing(self) -> None:
        version = html.escape(__version__)
        page = (
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dcgm-collector</title></head>\n"
            f"<body><h1>dcgm-collector {version}</h1>\n"
            "<p>DCGM GPU telemetry for Prometheus.</p>\n<ul>\n"
            "<li><a href=\"metrics\">metrics</a>: Prometheus text format (OpenMetrics on request)</li>\n"
            "<li><a href=\"health\">health</a>: 200 while DCGM answers and samples are fresh</li>\n"
            + "".join(f"<li><a href=\"{html.escape(p.lstrip('/'))}\">{html.escape(p.lstrip('/'))}</a>: "
                      f"{html.escape(r.landing)}</li>\n" for p, r in self.server.app.routes.items() if r.landing)
            + "</ul>\n" + self._landing_extra() + "</body></html>\n"
        )
        self._send(200, page.encode(), "text/html; charset=utf-8")

    def _landing_extra(self) -> str:
        """HTML the application adds to the landing page (recordings, ...); nothing when it fails."""
        extra = self.server.app.landing_extra
        if extra is None:
            return ""
        try:
            return extra()
        except Exception:
            log.exception("the landing page's extra section failed")
            return ""

    # -- logging: requests are routine, keep them out of the operator's log
    def log_message(self, format: str, *args) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def address_string(self) -> str:
        return str(self.client_address[0])


def _one_line(text: str) -> bytes:
    return " ".join(text.split()).encode("utf-8", "replace")


def _lines(text: str) -> bytes:
    """One line per reason (one per target), each with its whitespace folded."""
    folded = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in folded if line).encode("utf-8", "replace")


# ---- the server -----------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """What an extra route's handler is given: the method, path, query (name -> values), body and client."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    body: bytes
    client: str


@dataclass(frozen=True)
class Reply:
    """An extra route's answer; ``compressible``: gzip it for clients that accept gzip.

    ``body`` is bytes, or a sequence of bytes pieces written one after the
    other (never joined whole).  ``sent()``, when given, is called once the
    reply is written or its client dropped, whatever happened: where a
    handler hands back the admission slot it took.
    """

    status: int
    body: bytes | Sequence[bytes]
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    compressible: bool = False
    sent: Callable[[], None] | None = None


@dataclass(frozen=True)
class Route:
    """An extra path the server answers (behind the same TLS, auth and rate limit as /metrics).

    ``handler(request) -> Reply`` runs on the request thread; raising Unavailable gets a 503.
    ``methods`` it accepts (405 otherwise), ``max_body`` the largest request body it reads
    (413 beyond), ``landing`` its line on the landing page ("" to leave it off).
    """

    handler: Callable[[Request], Reply]
    methods: tuple[str, ...] = ("GET", "HEAD")
    max_body: int = 0
    landing: str = ""


class _App:
    def __init__(self, metrics, health, observe_scrape, *, ssl_context=None, authenticate=None,
                 response_headers=None, allow_request=None, verify_client=None, routes=None,
                 landing_extra=None, admission=None) -> None:
        self.admission: Admission = admission if admission is not None else Admission()
        self.routes: dict[str, Route] = dict(routes or {})
        self.landing_extra = landing_extra
        self.metrics = metrics
        self.health = health
        self.observe_scrape = observe_scrape
        self.ssl_context = ssl_context
        self.authenticate = _with_client_address(authenticate)
        self.response_headers: dict[str, str] = dict(response_headers or {})
        self.allow_request = allow_request
        self.verify_client = verify_client


def _with_client_address(authenticate: Callable[..., bool] | None) -> Callable[[str | None, str], bool] | None:
    """The hook as ``authenticate(header, client_address)``; a one-argument hook is not given the address."""
    if authenticate is None:
        return None
    try:
        inspect.signature(authenticate).bind(None, "")
    except (TypeError, ValueError):
        return lambda header, client_address: authenticate(header)
    return authenticate


@dataclass
class _Connection:
    """An open connection's place under the cap."""

    waiting_since: float | None   # monotonic time it began waiting for a request head; None while answering
    reserve: bool = False         # let in beyond the cap: for the light paths only


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops connects in a burst; each dropped one
    # then waits for a 1 s SYN retry
    request_queue_size = 128

    def __init__(self, sockaddr: tuple, family: int, dual_stack: bool, app: _App,
                 request_timeout_s: float, max_connections: int, request_head_timeout_s: float,
                 response_timeout_s: float, light_reserve: int) -> None:
        self.address_family = family
        self.dual_stack = dual_stack
        self.app = app
        self.request_timeout_s = request_timeout_s
        self.request_head_timeout_s = request_head_timeout_s
        self.response_timeout_s = response_timeout_s
        self.max_connections = max_connections
        self.light_reserve = light_reserve
        self.open_connections: dict[socket.socket, _Connection] = {}
        self.connections_lock = threading.Lock()
        super().__init__(sockaddr, _Handler)

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if self.dual_stack else 1)
        # TCPServer's bind, not HTTPServer's: that one asks DNS for the host's
        # full name, which can hang on a node without a resolver.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    def process_request(self, request, client_address) -> None:
        now = time.monotonic()
        evicted = None
        reserve = False
        with self.connections_lock:
            full = len(self.open_connections) >= self.max_connections
            if full:
                evicted = self._longest_waiting(now)
                if evicted is not None:
                    del self.open_connections[evicted]   # its slot is the new one's from now on
                    full = False
            if full and len(self.open_connections) < self.max_connections + self.light_reserve:
                full, reserve = False, True   # let in for /metrics, /health or / only
            if not full:
                self.open_connections[request] = _Connection(waiting_since=now, reserve=reserve)
        if evicted is not None:
            log.debug("connection cap reached: dropping a connection that sent no complete request head")
            try:   # the plain socket's shutdown, also under TLS: wakes its thread, which then ends
                socket.socket.shutdown(evicted, socket.SHUT_RDWR)
            except OSError:
                pass
        if full:
            _refuse(request)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def _longest_waiting(self, now: float) -> socket.socket | None:
        """The evictable connection that has waited longest for a request head (the lock is held)."""
        oldest, oldest_since = None, now - EVICTABLE_AFTER_S
        for sock, state in self.open_connections.items():
            if state.waiting_since is not None and state.waiting_since <= oldest_since:
                oldest, oldest_since = sock, state.waiting_since
        return oldest

    def answering(self, sock: socket.socket) -> _Connection | None:
        """The connection's request head is complete: it is no longer evictable.  None if it was evicted."""
        with self.connections_lock:
            state = self.open_connections.get(sock)
            if state is None:
                return None
            state.waiting_since = None
            return state

    def waiting(self, sock: socket.socket) -> None:
        """The response is sent: the connection waits for its next request (and may be evicted)."""
        with self.connections_lock:
            state = self.open_connections.get(sock)
            if state is not None:
                state.waiting_since = time.monotonic()

    def shutdown_request(self, request) -> None:
        with self.connections_lock:
            self.open_connections.pop(request, None)
        super().shutdown_request(request)

    def finish_request(self, request, client_address) -> None:
        """On the connection's thread: the TLS handshake (when serving TLS), then the requests."""
        if self.app.ssl_context is None:
            super().finish_request(request, client_address)
            return
        connection = self._tls_handshake(request, client_address)
        if connection is None:
            return
        try:
            super().finish_request(connection, client_address)
        finally:
            self.shutdown_request(connection)

    def _tls_handshake(self, request: socket.socket, client_address) -> ssl.SSLSocket | None:
        """The connection wrapped in TLS, or None (answered or dropped) when that fails."""
        peer = client_address[0] if client_address else "?"
        request.settimeout(self.request_timeout_s)
        try:
            first = request.recv(1, socket.MSG_PEEK)
            if not first:
                return None
            if first[0] != TLS_HANDSHAKE_RECORD:
                if first.isalpha():
                    request.sendall(_PLAIN_HTTP_ON_TLS)
                log.debug("plain HTTP (or garbage) from %s on the TLS port", peer)
                return None
            provider = self.app.ssl_context
            context = provider() if callable(provider) else provider
            connection = context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        except (OSError, ValueError) as error:
            log.debug("connection from %s ended before TLS: %s", peer, error)
            return None
        with self.connections_lock:   # wrap_socket took over the descriptor: track the TLS socket
            state = self.open_connections.pop(request, None)
            if state is None:   # evicted before the handshake began
                connection.close()
                return None
            self.open_connections[connection] = state
        try:
            connection.do_handshake()
            if self.app.verify_client is not None and not self.app.verify_client(connection):
                raise ssl.SSLError("the client certificate names no allowed SAN")
        except (OSError, ValueError) as error:   # ssl.SSLError and timeouts are OSErrors
            log.debug("TLS handshake with %s failed: %s", peer, error)
            self.shutdown_request(connection)
            return None
        return connection

    def close_open_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.open_connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address) -> None:
        log.exception("unexpected error serving %s", client_address[0] if client_address else "?")


_TOO_MANY = b"503 Service Unavailable: too many open connections\n"
_REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s" % (len(_TOO_MANY), _TOO_MANY))


def _refuse(request: socket.socket) -> None:
    try:
        request.settimeout(1.0)
        request.sendall(_REFUSAL)
    except OSError:
        pass


class MetricsServer:
    """Serves /metrics, /health and / on ``address`` from a thread of its own.

    ``metrics(openmetrics)`` returns the exposition body; ``health()`` returns
    (ok, reason); ``observe_scrape(seconds)`` hears how long each /metrics
    request took.  The callables are called on request threads, concurrently.

    Optional hooks (all called on request threads):

    * ``ssl_context``: an SSLContext, or a callable returning the one to use
      for each new connection (so certificates can be rotated): serve TLS.
    * ``authenticate(authorization_header_or_None, client_address) -> bool``:
      False gets 401; raising TooManyRequests gets 429, Unavailable 503 (a
      one-argument callable is called without the address).
    * ``response_headers``: added to every response.
    * ``allow_request() -> bool``: False gets 429 (a rate limit).
    * ``verify_client(ssl_socket) -> bool``: after the handshake; False drops
      the connection (a client certificate SAN allow-list).
    * ``routes``: extra paths (:class:`Route`), e.g. the history API and the
      recorder's trigger, and ``landing_extra() -> html``: a section the
      landing page adds (the recordings).
    * ``admission``: the :class:`~dcgm_collector.serve.admission.Admission`
      that light requests (/metrics, /health, /) are marked in and that
      heavy route handlers take their slots from (one of its own if None).

    ``response_timeout_s`` bounds each whole response, from the end of its
    request head to its last byte written.
    """

    def __init__(
        self,
        address: str,
        metrics: Callable[[bool], bytes],
        health: Callable[[], tuple[bool, str]],
        observe_scrape: Callable[[float], None] | None = None,
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        light_reserve: int = LIGHT_RESERVE,
        request_head_timeout_s: float = REQUEST_HEAD_TIMEOUT_S,
        response_timeout_s: float = RESPONSE_TIMEOUT_S,
        admission: Admission | None = None,
        ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        authenticate: Callable[[str | None], bool] | None = None,
        response_headers: Mapping[str, str] | None = None,
        allow_request: Callable[[], bool] | None = None,
        verify_client: Callable[[ssl.SSLSocket], bool] | None = None,
        routes: Mapping[str, Route] | None = None,
        landing_extra: Callable[[], str] | None = None,
    ) -> None:
        self.address = address
        self.host, self._requested_port = parse_listen_address(address)
        self._app = _App(metrics, health, observe_scrape, ssl_context=ssl_context, authenticate=authenticate,
                         response_headers=response_headers, allow_request=allow_request,
                         verify_client=verify_client, routes=routes, landing_extra=landing_extra,
                         admission=admission)
        self.request_timeout_s = float(request_timeout_s)
        self.response_timeout_s = float(response_timeout_s)
        self.max_connections = int(max_connections)
        self.light_reserve = int(light_reserve)
        self.request_head_timeout_s = float(request_head_timeout_s)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._wake_r = self._wake_w = -1
        self._where = ""

    def start(self) -> None:
        """Listen and serve; ListenError (one line naming the address) if the address cannot be used."""
        if self._httpd is not None:
            raise RuntimeError("the server is already started")
        family, sockaddr, dual_stack = _socket_address(self.host, self._requested_port)
        try:
            httpd = _HTTPServer(sockaddr, family, dual_stack, self._app, self.request_timeout_s, self.max_connections,
                                self.request_head_timeout_s, self.response_timeout_s, self.light_reserve)
        except OSError as error:
            raise ListenError(f"cannot listen on {self.address}: {_why(error)}") from None
        self._httpd = httpd
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._accept_loop, args=(httpd, self._wake_r),
                                        name="dcgm-collector-http", daemon=True)
        self._thread.start()
        self._where = _display(str(sockaddr[0]), self.port)
        if self.host in ("", "::"):
            self._where += " (every interface, IPv6 and IPv4)" if dual_stack else " (every IPv4 interface)"

    @staticmethod
    def _accept_loop(httpd: _HTTPServer, wake_r: int) -> None:
        # socketserver's serve_forever polls for shutdown; waiting on a pipe
        # as well makes stop() immediate and an idle server cost no wake-ups.
        with selectors.DefaultSelector() as selector:
            selector.register(httpd.socket, selectors.EVENT_READ)
            selector.register(wake_r, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if wake_r in ready:
                    return
                httpd._handle_request_noblock()   # accept one connection, hand it to a thread

    def stop(self) -> None:
        """Stop accepting, close open connections and the listening socket."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(5.0)
        os.close(self._wake_r)
        os.close(self._wake_w)
        httpd.close_open_connections()
        httpd.server_close()

    def describe(self) -> str:
        """Where the server listens, for the log: ``http(s)://127.0.0.1:9400/metrics``, plus the interfaces."""
        where = self._where or _display(self.host, self.port)
        host_port, _, note = where.partition(" ")
        scheme = "https" if self._app.ssl_context is not None else "http"
        return f"{scheme}://{host_port}/metrics" + (f" {note}" if note else "")

    @property
    def port(self) -> int:
        """The port listened on (the real one when the address asked for port 0)."""
        if self._httpd is None:
            return self._requested_port
        return int(self._httpd.server_address[1])

    @property
    def admission(self) -> Admission:
        """The cap on heavy answers and the priority of light requests this server keeps."""
        return self._app.admission

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._httpd is not None

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _why(error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return "address already in use"
    if error.errno == errno.EADDRNOTAVAIL:
        return "no interface has that address"
    if error.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    return error.strerror or str(error)
