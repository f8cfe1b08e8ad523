"""Stand-in remote-write receivers on loopback: they decode each request and answer as a test says.

Requests are decoded with the protobuf module protoc makes of the collector's
remote_write.proto, so what the stand-in records is what any receiver would read.
"""

from __future__ import annotations

import http.server
import importlib
import re
import select
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import cramjam

PROTO = Path(__file__).resolve().parents[1] / "dcgm_collector" / "push" / "remote_write.proto"

Labels = tuple[tuple[str, str], ...]


def write_request_module(folder: Path):
    """The WriteRequest module of remote_write.proto, compiled into ``folder``."""
    from grpc_tools import protoc

    if protoc.main(["protoc", f"-I{PROTO.parent}", f"--python_out={folder}", PROTO.name]) != 0:
        raise RuntimeError("protoc failed on remote_write.proto")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("remote_write_pb2")
    finally:
        sys.path.remove(str(folder))


@dataclass
class Request:
    """One POST: its headers and its series ({labels: [(ts ms, value)]}), and the status answered."""

    headers: dict[str, str]
    series: dict[Labels, list[tuple[int, float]]]
    status: int = 0

    @property
    def samples(self) -> int:
        return sum(len(s) for s in self.series.values())


@dataclass
class StandIn:
    """The receiver: ``answer(n)`` gives the (status, body) of the n-th request (from 1)."""

    messages: object
    answer: Callable[[int], tuple[int, str]] = lambda n: (204, "")
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: http.server.ThreadingHTTPServer | None = None
    tls: ssl.SSLContext | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.server.server_address[1]}/api/v1/write"

    def start(self, tls: ssl.SSLContext | None = None) -> StandIn:
        """Listen on a loopback port (TLS with ``tls``) and answer on a thread of its own."""
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:   # noqa: N802 -- http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                series = decode(standin.messages, body)
                with standin.lock:
                    record = Request(dict(self.headers.items()), series)
                    standin.requests.append(record)
                    status, text = standin.answer(len(standin.requests))
                    record.status = status
                payload = text.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.tls = tls
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def accepted(self) -> dict[Labels, list[tuple[int, float]]]:
        """Every sample of the requests answered 2xx, per series, in arrival order."""
        with self.lock:
            return accepted_samples(self.requests)


def accepted_samples(requests: list) -> dict[Labels, list[tuple[int, float]]]:
    """Every sample of the requests answered 2xx, per series, in arrival order."""
    out: dict[Labels, list[tuple[int, float]]] = {}
    for request in requests:
        if 200 <= request.status < 300:
            for labels, samples in request.series.items():
                out.setdefault(labels, []).extend(samples)
    return out


def decode(messages: object, body: bytes) -> dict[Labels, list[tuple[int, float]]]:
    """The series of one request body: {labels: [(ts ms, value)]}."""
    request = messages.WriteRequest()
    request.ParseFromString(bytes(cramjam.snappy.decompress_raw(body)))
    return {tuple((label.name, label.value) for label in ts.labels): [(s.timestamp, s.value) for s in ts.samples]
            for ts in request.timeseries}


@dataclass(frozen=True)
class Hold:
    """An answer in pieces: ``first`` at once, then ``then`` every ``every_s``, ``times`` times (None: until the
    client hangs up)."""

    first: bytes
    then: bytes
    every_s: float = 0.2
    times: int | None = None


def answer(status: int, *headers: str, body: bytes = b"") -> bytes:
    """A whole HTTP/1.1 answer."""
    head = [f"HTTP/1.1 {status} Status", *headers, f"Content-Length: {len(body)}"]
    return "".join(f"{line}\r\n" for line in head).encode("latin-1") + b"\r\n" + body   # as HTTP reads headers


class RawReceiver:
    """A receiver on a bare TCP socket, for the answers http.server cannot give: a status line trickled a byte at
    a time, 100 Continue for ever, any status line and headers.

    ``answer(n)`` gives the n-th request's (from 1) answer: the bytes to send, or a :class:`Hold`.  ``held`` has
    the seconds each held request was held before the client hung up.
    """

    def __init__(self, messages: object, respond: Callable[[int], bytes | Hold] = lambda n: answer(204),
                 tls: ssl.SSLContext | None = None) -> None:
        self.messages = messages
        self.respond = respond
        self.tls = tls
        self.requests: list[Request] = []
        self.held: list[float] = []
        self.lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/api/v1/write"

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()

    def accepted(self) -> dict[Labels, list[tuple[int, float]]]:
        """Every sample of the requests answered 2xx, per series, in arrival order."""
        with self.lock:
            return accepted_samples(self.requests)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        if self.tls is not None:
            try:
                connection = self.tls.wrap_socket(connection, server_side=True)
            except OSError:
                connection.close()
                return
        with connection:
            buffered = b""
            while not self._stopped.is_set():
                while b"\r\n\r\n" not in buffered:
                    chunk = self._recv(connection)
                    if not chunk:
                        return
                    buffered += chunk
                head, buffered = buffered.split(b"\r\n\r\n", 1)
                length = int(re.search(rb"(?im)^content-length:\s*(\d+)", head)[1])
                while len(buffered) < length:
                    chunk = self._recv(connection)
                    if not chunk:
                        return
                    buffered += chunk
                body, buffered = buffered[:length], buffered[length:]
                headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
                with self.lock:
                    record = Request(headers, decode(self.messages, body))
                    self.requests.append(record)
                    reply = self.respond(len(self.requests))
                    status = re.match(rb"HTTP/1\.[01] (\d{3}) ", reply) if isinstance(reply, bytes) else None
                    record.status = int(status[1]) if status else 0   # 0: no status, or not yet
                try:
                    if isinstance(reply, Hold):
                        early = self._hold(connection, reply)
                        if early is None:
                            return
                        buffered += early
                    else:
                        connection.sendall(reply)
                except OSError:
                    return

    def _hold(self, connection: socket.socket, hold: Hold) -> bytes | None:
        """What the client sent meanwhile once the whole answer is sent, or None when it hung up first (and
        ``held`` says after how long)."""
        started = time.monotonic()
        early, sent = b"", 0
        try:
            connection.sendall(hold.first)
            while not self._stopped.is_set() and (hold.times is None or sent < hold.times):
                readable, _, _ = select.select([connection], [], [], hold.every_s)
                if readable:
                    chunk = connection.recv(65536)
                    if not chunk:
                        break   # the client hung up
                    early += chunk   # its next request
                connection.sendall(hold.then)
                sent += 1
            else:
                if hold.times is not None:
                    return early
        except OSError:
            pass
        with self.lock:
            self.held.append(time.monotonic() - started)
        return None

    @staticmethod
    def _recv(connection: socket.socket) -> bytes:
        try:
            return connection.recv(65536)
        except OSError:
            return b""
