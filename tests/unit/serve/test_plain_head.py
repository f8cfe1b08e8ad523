"""The plain request head is read as the standard library reads it, and every other head is left to it."""

from __future__ import annotations

import http.client
import io

import pytest

from dcgm_collector.serve.plain_head import MAX_LINES, plain_head

LINE = b"GET /api/v1/samples?field=155&cursor=AQ-x_9 HTTP/1.1\r\n"


def _stdlib(head: bytes) -> list[tuple[str, str]]:
    return http.client.parse_headers(io.BytesIO(head)).items()


@pytest.mark.parametrize("head", [
    b"Host: 127.0.0.1:9400\r\nAccept-Encoding: identity\r\n\r\n",
    b"\r\n",
    b"host:x\r\nX-Odd:\t  spaced value  \r\nAccept: */*\r\nAccept: text/plain\r\nEmpty:\r\n\r\n",
    b"Authorization: Basic dXNlcjpwYXNz\r\nConnection: close\r\n\r\nGET /next HTTP/1.1\r\n",
])
def test_a_plain_head_gives_what_the_standard_library_gives(head):
    plain = plain_head(LINE, head)
    assert plain is not None
    assert (plain.command, plain.path) == ("GET", "/api/v1/samples?field=155&cursor=AQ-x_9")
    assert plain.headers.items() == _stdlib(head[:plain.length])
    assert head[plain.length:] in (b"", b"GET /next HTTP/1.1\r\n")
    assert plain.headers.get_payload() is None and not plain.headers.defects


@pytest.mark.parametrize(("line", "head"), [
    (b"GET / HTTP/1.0\r\n", b"Host: x\r\n\r\n"),
    (b"GET  / HTTP/1.1\r\n", b"Host: x\r\n\r\n"),
    (b"get / HTTP/1.1\r\n", b"Host: x\r\n\r\n"),
    (b"GET http://x/ HTTP/1.1\r\n", b"Host: x\r\n\r\n"),
    (b"GET / HTTP/1.1\n", b"Host: x\r\n\r\n"),
    (LINE, b"Host: x\r\n"),                              # not all arrived
    (LINE, b"Host: x\n\n"),                              # bare LF
    (LINE, b"Host: x\r\n folded\r\n\r\n"),               # a continuation line
    (LINE, b"Host x\r\n\r\n"),                           # no colon
    (LINE, b"Bad Name: x\r\n\r\n"),
    (LINE, b"Expect: 100-continue\r\n\r\n"),
    (LINE, b"".join(b"X-%d: y\r\n" % i for i in range(MAX_LINES + 1)) + b"\r\n"),
])
def test_any_other_head_is_left_to_the_standard_library(line, head):
    assert plain_head(line, head) is None
