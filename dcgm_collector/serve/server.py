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
* the number of open connections is capped (MAX_CONNECTIONS); when it is
  reached a new connection evicts one that never sent a complete request
  head, and LIGHT_RESERVE connections beyond the cap are kept for /metrics,
  /health and / (dcgm_collector.serve.listener);
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
from an exporter-toolkit web config; the TLS handshake is the listener's
(dcgm_collector.serve.listener).  When ``authenticate`` is given every path
asks for credentials (401 with ``WWW-Authenticate: Basic``), /health
included, as exporter-toolkit does.

Listen addresses are written as dcgm-exporter's (Go's) ``host:port``
(dcgm_collector.serve.addresses parses them; dcgm_collector.serve.listener
says what each one binds).
"""

from __future__ import annotations

import email.errors
import http.client
import io
import logging
import os
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from http.server import BaseHTTPRequestHandler
from itertools import chain
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from dcgm_collector import __version__
from dcgm_collector.files import size_text
from dcgm_collector.serve.addresses import parse_listen_address
from dcgm_collector.serve.admission import Admission
from dcgm_collector.serve.deadline import DeadlineReader, DeadlineWriter, ResponseDeadline
from dcgm_collector.serve.framing import FramingError, GzipPrefixes, body_size, content_length, gzip_body
from dcgm_collector.serve.landing import CSP, STATIC, Overview, StaticFile, landing_page
from dcgm_collector.serve.listener import _TOO_MANY, ListenError, _display, _HTTPServer, _socket_address, _why
from dcgm_collector.serve.listener import EVICTABLE_AFTER_S as EVICTABLE_AFTER_S
from dcgm_collector.serve.listener import TLS_HANDSHAKE_RECORD as TLS_HANDSHAKE_RECORD
from dcgm_collector.serve.negotiation import (
    accepts_gzip,
    openmetrics_content_type,
    openmetrics_version,
    wants_openmetrics,
)
from dcgm_collector.serve.plain_head import PlainHead, plain_head
from dcgm_collector.serve.routes import Reply, Request, Route, TooManyRequests, Unavailable, _App

if TYPE_CHECKING:
    import ssl

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
# the kernel's send buffer per connection (it doubles this): without a cap it grows to megabytes per connection,
# charged to the pod's memory, and an answer a client does not read would sit there rather than time out.
# Doubled, it holds a /metrics answer of 8 GPUs with every counter row (~0.6 MB) whole, so that answer is
# handed to the kernel in one send (one release of the GIL, not several waits for the client to read)
SEND_BUFFER_BYTES = 512 * 1024
# Fast compression: the text format shrinks ~10x even at level 1, and a
# scrape should cost the node as little CPU as possible.
GZIP_LEVEL = 1
# How long a connection answered with an error keeps swallowing what the client
# still sends, so that closing it does not reset the error response away.
DRAIN_S = 0.5
DRAIN_BYTES = 256 * 1024
_DATE: tuple[int, str] = (-1, "")   # the second and its Date header text, shared by the request threads


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

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header's text, made once a second (formatting it costs a small answer's request a tenth)."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        global _DATE
        second = int(time.time())
        cached = _DATE
        if cached[0] != second:
            cached = _DATE = (second, super().date_time_string(second))
        return cached[1]

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
        plain = plain_head(self.raw_requestline, raw.peek(1))
        if plain is not None:
            self._take(plain)
        else:
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

    def _take(self, plain: PlainHead) -> None:
        """A plain request head (serve.plain_head), as the standard library's parse_request takes an HTTP/1.1 one."""
        self.rfile.read(plain.length)
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.command, self.path, self.request_version = plain.command, plain.path, "HTTP/1.1"
        if self.path.startswith("//"):   # not a scheme-relative URL when written back (as the standard library)
            self.path = "/" + self.path.lstrip("/")
        self.headers = plain.headers
        self.close_connection = plain.headers.get("Connection", "").lower() == "close"

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
        """The response; a body given as pieces goes out in gathered sends (DeadlineWriter.write_pieces), never
        joined whole."""
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
        # end_headers, but the head is sent with the body
        self._headers_buffer.append(b"\r\n")
        head = b"".join(self._headers_buffer)
        self._headers_buffer = []
        if self.command == "HEAD":
            self.wfile.write(head)
            return
        # the head goes out with the body's first bytes (one send, one wake-up of the client for a small
        # answer), and the body's pieces are handed to the kernel as they are, never joined
        self.wfile.write_pieces(chain((head,), (body,) if isinstance(body, bytes) else body))

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
        if serve is None and path in STATIC:
            serve = partial(self._static, STATIC[path])
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
            self._send(413, f"413 Content Too Large: at most {size_text(route.max_body)}\n".encode(), PLAIN_TYPE,
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
            body = app.gzip_prefixes.compress(body)
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
            # healthy, perhaps with a note ("OK; lost GPU 1 ...") on the first line; what follows it (the
            # source the readings come from) is kept as its own lines
            first, _, rest = (reason or "").partition("\n")
            note = " ".join(first.split())
            self._send(200, _lines(f"{note if note.startswith('OK; ') else 'OK'}\n{rest}"), PLAIN_TYPE)
        else:
            self._send(503, _lines(reason or "unhealthy"), PLAIN_TYPE)

    def _landing(self) -> None:
        app = self.server.app
        page = landing_page(app.routes, _landing_part(app.landing_extra, "", "extra section"),
                            _landing_part(app.landing_overview, None, "overview"))
        self._send(200, page.encode(), "text/html; charset=utf-8",
                   headers={"Content-Security-Policy": CSP, "Cache-Control": "no-cache"})

    def _static(self, file: StaticFile) -> None:
        # no-cache: a browser asks again (and gets the new script) after the collector is upgraded
        self._send(200, file.body, file.content_type, headers={"Cache-Control": "no-cache"})

    # -- logging: requests are routine, keep them out of the operator's log
    def log_message(self, format: str, *args) -> None:
        if log.isEnabledFor(logging.DEBUG):   # every response comes here: format only what is logged
            log.debug("%s %s", self.address_string(), format % args)

    def address_string(self) -> str:
        return str(self.client_address[0])


def _one_line(text: str) -> bytes:
    return " ".join(text.split()).encode("utf-8", "replace")


def _lines(text: str) -> bytes:
    """One line per reason (one per target), each with its whitespace folded."""
    folded = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in folded if line).encode("utf-8", "replace")


def _landing_part(make: Callable[[], Any] | None, absent: Any, what: str) -> Any:
    """A part the application adds to the landing page (its overview, its recordings), or ``absent`` when it
    has none, is still starting (Unavailable) or fails (logged): the page is served whatever its parts do."""
    if make is None:
        return absent
    try:
        return make()
    except Unavailable:
        return absent
    except Exception:
        log.exception("the landing page's %s failed", what)
        return absent


# ---- the server -----------------------------------------------------------------------

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
      landing page adds (the recordings); ``landing_overview() -> Overview``:
      the page's head (the source and a tile per GPU).
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
        landing_overview: Callable[[], Overview] | None = None,
    ) -> None:
        self.address = address
        self.host, self._requested_port = parse_listen_address(address)
        self._app = _App(metrics, health, observe_scrape, ssl_context=ssl_context, authenticate=authenticate,
                         response_headers=response_headers, allow_request=allow_request,
                         verify_client=verify_client, routes=routes, landing_extra=landing_extra,
                         landing_overview=landing_overview, admission=admission)
        # the /metrics text kept between two ticks is compressed once for every gzip answer until the next
        self._app.gzip_prefixes = GzipPrefixes(GZIP_LEVEL)
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
            httpd = _HTTPServer(sockaddr, family, dual_stack, self._app, _Handler, self.request_timeout_s,
                                self.max_connections, self.request_head_timeout_s, self.response_timeout_s,
                                self.light_reserve)
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
