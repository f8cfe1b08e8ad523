"""The listening server under MetricsServer: binding its address, the connection cap, the TLS handshake.

The number of open connections is capped (the server's MAX_CONNECTIONS).  When the cap
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
connection let in on the reserve that asks for another path gets the 503).

When serving TLS, the handshake runs on the connection's own thread under
the request timeout, so a client that connects and stalls never holds up the
accept loop; plain HTTP sent to a TLS port gets a plain-text 400, as Go's
server answers it.

Listen addresses are written as dcgm-exporter's (Go's) ``host:port``:
``:9400`` (every interface), ``0.0.0.0:9400``, ``127.0.0.1:9400``,
``[::]:9400``, ``[::1]:9400``, ``localhost:9400``.  ``:9400`` and
``[::]:9400`` listen dual-stack (IPv6 and IPv4) where the host has IPv6, and
on IPv4 alone otherwise; ``0.0.0.0:9400`` listens on IPv4 only.  A host name
listens on one of its addresses, IPv4 first, as Go does.

The requests on each connection are read and answered by the handler class
MetricsServer passes in (dcgm_collector.serve.server).
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
import socketserver
import threading
import time
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from socketserver import BaseRequestHandler
from typing import TYPE_CHECKING

from dcgm_collector.serve.routes import _App

if TYPE_CHECKING:
    import ssl

# the server's logger, as before these classes had a module of their own: a level set for it still
# covers what happens to connections
log = logging.getLogger("dcgm_collector.serve.server")

# A connection this long without a complete request head may be evicted to make room; a
# scraper's head arrives in milliseconds, so only slow or idle connections ever get this old.
EVICTABLE_AFTER_S = 1.0
TLS_HANDSHAKE_RECORD = 0x16   # the first byte a TLS client sends
# Go's answer to plain HTTP on a TLS port, so clients see the same thing
_PLAIN_HTTP_ON_TLS = (b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                      b"\r\nClient sent an HTTP request to an HTTPS server.\n")


class ListenError(Exception):
    """The server cannot listen on the address; str() is one line naming it."""


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


def _why(error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return "address already in use"
    if error.errno == errno.EADDRNOTAVAIL:
        return "no interface has that address"
    if error.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    return error.strerror or str(error)


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

    # ``handler`` is MetricsServer's request handler, passed in since its module imports this one
    def __init__(self, sockaddr: tuple, family: int, dual_stack: bool, app: _App, handler: type[BaseRequestHandler],
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
        super().__init__(sockaddr, handler)

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
        # loaded already, as there is a context: only plain HTTP runs without the module
        import ssl

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
