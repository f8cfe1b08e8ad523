"""A stand-in remote-write receiver on loopback: decodes each request and answers as a test says.

Requests are decoded with the protobuf module protoc makes of the collector's
remote_write.proto, so what the stand-in records is what any receiver would read.
"""

from __future__ import annotations

import http.server
import importlib
import ssl
import sys
import threading
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
                request = standin.messages.WriteRequest()
                request.ParseFromString(bytes(cramjam.snappy.decompress_raw(body)))
                series = {tuple((label.name, label.value) for label in ts.labels):
                          [(s.timestamp, s.value) for s in ts.samples] for ts in request.timeseries}
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
        out: dict[Labels, list[tuple[int, float]]] = {}
        with self.lock:
            for request in self.requests:
                if 200 <= request.status < 300:
                    for labels, samples in request.series.items():
                        out.setdefault(labels, []).extend(samples)
        return out
