"""One RemoteWriter against the stand-in receiver in this process: credentials, TLS, the samples and stop."""

from __future__ import annotations

import email.utils
import logging
import os
import ssl
import time
from pathlib import Path

import numpy as np
import pytest
from remote_write_standin import Hold, RawReceiver, StandIn, answer, write_request_module
from support import self_signed_certificate, wait_for

from dcgm_collector.push import remote_write
from dcgm_collector.push.remote_write import (
    RemoteWriteError,
    RemoteWriteOptions,
    RemoteWriter,
    render_remote_write_metrics,
    retry_after_s,
)
from dcgm_collector.rings.ring import EventRing, RingBuffer
from dcgm_collector.series.samples import RingSeries, SampleModel, SeriesInfo

T0_MS = 1_796_000_000_000


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    return write_request_module(tmp_path_factory.mktemp("proto"))


def one_gpu_model(rows: int = 5) -> SampleModel:
    ring = RingBuffer([(1, 0, 150)], 16)
    ring.append((T0_MS + np.arange(rows) * 100) * 1000, np.arange(rows, dtype=float) + 40)
    series = (SeriesInfo("DCGM_FI_DEV_GPU_TEMP", (("gpu", "0"), ("hostname", "n")), (1, 0), 0, 150,
                         "DCGM_FI_DEV_GPU_TEMP", True, 0),)
    return SampleModel("n", (), (RingSeries(ring, series),), EventRing(4), ())


def run(options: RemoteWriteOptions, standin: StandIn, model: SampleModel | None = None) -> RemoteWriter:
    model = model or one_gpu_model()
    writer = RemoteWriter(options, lambda: [model], "9.9")
    writer.start()
    try:
        wait_for(lambda: writer.sent >= 5 or writer.failed, timeout=10, what="the samples delivered")
    finally:
        writer.stop()
    return writer


def test_basic_auth_from_the_password_file_and_the_samples(tmp_path, messages):
    standin = StandIn(messages).start()
    try:
        password = tmp_path / "password"
        password.write_text("s3cret\n")
        writer = run(RemoteWriteOptions(standin.url, username="gpu", password_file=str(password),
                                        labels=(("cluster", "a"),)), standin)
    finally:
        standin.stop()
    [request] = standin.requests
    assert request.headers["Authorization"] == "Basic Z3B1OnMzY3JldA=="   # gpu:s3cret
    assert request.headers["User-Agent"] == "dcgm-collector/9.9"
    assert request.series == {(("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("cluster", "a"), ("gpu", "0"), ("hostname", "n")):
                              [(T0_MS + i * 100, 40.0 + i) for i in range(5)]}
    assert writer.sent == 5 and writer.queued == 0


def test_the_bearer_token_file_is_read_again_for_each_request(tmp_path, messages):
    standin = StandIn(messages).start()
    token = tmp_path / "token"
    token.write_text("first")
    model = one_gpu_model()
    writer = RemoteWriter(RemoteWriteOptions(standin.url, bearer_token_file=str(token), flush_interval_s=0.05),
                          lambda: [model], "9.9")
    writer.start()
    try:
        wait_for(lambda: writer.sent == 5, timeout=10, what="the first request")
        token.write_text("second")
        ring = model.rings[0].ring
        ring.append((T0_MS + 1000) * 1000, [50.0])
        wait_for(lambda: writer.sent == 6, timeout=10, what="the second request")
    finally:
        writer.stop()
        standin.stop()
    assert [r.headers["Authorization"] for r in standin.requests] == ["Bearer first", "Bearer second"]


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA, and its key."""
    return self_signed_certificate(directory, "receiver", "receiver")


def test_https_with_a_ca_file_and_a_client_certificate(tmp_path, messages):
    cert, key = self_signed(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    server.verify_mode = ssl.CERT_REQUIRED     # the client must show a certificate of this CA
    server.load_verify_locations(cert)
    standin = StandIn(messages).start(tls=server)
    try:
        writer = run(RemoteWriteOptions(standin.url, ca_file=str(cert), cert_file=str(cert), key_file=str(key)),
                     standin)
    finally:
        standin.stop()
    assert writer.sent == 5, writer.failed


def test_an_untrusted_receiver_certificate_fails_as_network_errors(tmp_path, messages):
    cert, key = self_signed(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    standin = StandIn(messages).start(tls=server)
    try:
        writer = run(RemoteWriteOptions(standin.url), standin)   # the system CAs do not know it
    finally:
        standin.stop()
    assert writer.sent == 0 and writer.failed["network"] >= 1
    assert 'code="network"' in render_remote_write_metrics([writer], False)


@pytest.mark.parametrize("options, message", [
    (RemoteWriteOptions("http://a/w", password_file="/nonexistent/pw", username="u"),
     "--remote-write-password-file /nonexistent/pw: cannot read it: No such file or directory"),
    (RemoteWriteOptions("https://a/w", cert_file="/nonexistent/c.pem", key_file="/nonexistent/k.pem"),
     "--remote-write-cert-file /nonexistent/c.pem / --remote-write-key-file /nonexistent/k.pem: No such file"),
])
def test_unreadable_files_are_one_line_errors(options, message):
    with pytest.raises(RemoteWriteError) as error:
        RemoteWriter(options, lambda: [], "9.9")
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_stop_does_not_wait_for_a_request_in_flight():
    import socket

    with socket.socket() as silent:   # accepts (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        model = one_gpu_model()
        writer = RemoteWriter(RemoteWriteOptions(f"http://127.0.0.1:{silent.getsockname()[1]}/w"),
                              lambda: [model], "9.9")
        writer.start()
        wait_for(lambda: writer.queued == 5, timeout=10, what="a request in flight")
        time.sleep(0.2)
        writer.stop()
        assert writer._thread is not None and not writer._thread.is_alive()
        assert writer.sent == 0


NOW_S = 1_796_000_000.0


@pytest.mark.parametrize("value, seconds", [
    ("7", 7.0), (" 12 ", 12.0), ("0", 0.0), ("60", 60.0), ("61", 60.0),   # delay-seconds, capped
    ("99999999999999999999", 60.0), ("9" * 5000, 60.0),                  # too big for int() to mind
    (email.utils.formatdate(NOW_S + 30, usegmt=True), 30.0),             # an HTTP-date
    (email.utils.formatdate(NOW_S + 3600, usegmt=True), 60.0),
    (email.utils.formatdate(NOW_S - 30, usegmt=True), 0.0),              # in the past: at once
    ("Sun, 06 Nov 1994 08:49:37 -0000", 0.0),
    # anything else: the sender's own backoff
    ("\u00b2", None), ("\u0661", None), ("1\u00b2", None), ("1e3", None), ("-5", None), ("+5", None),
    ("5.5", None), ("inf", None), ("nan", None), ("0x10", None), ("", None), (None, None), ("soon", None),
    ("Sun, 99 Foo 1994 99:99:99 GMT", None), ("Mon, 01 Jan 99999 00:00:00 GMT", None),
])
def test_retry_after_is_ascii_delay_seconds_or_an_http_date_and_nothing_else(value, seconds):
    assert retry_after_s(value, now_s=NOW_S) == (pytest.approx(seconds, abs=1) if seconds is not None else None)


def test_an_unexpected_error_keeps_the_batch_and_is_counted_and_logged_once(messages, monkeypatch, caplog):
    standin = StandIn(messages).start()
    real_encode = remote_write.encode_write_request
    calls = []

    def fails_twice(series):
        calls.append(len(series))
        if len(calls) <= 2:
            raise ValueError(f"surprise number {len(calls)}")
        return real_encode(series)

    monkeypatch.setattr(remote_write, "encode_write_request", fails_twice)
    model = one_gpu_model()
    writer = RemoteWriter(RemoteWriteOptions(standin.url, flush_interval_s=0.05), lambda: [model], "9.9")
    with caplog.at_level(logging.ERROR, "dcgm_collector"):
        writer.start()
        try:
            wait_for(lambda: writer.sent == 5, timeout=10, what="the batch delivered after the errors")
            assert writer.failures == 2 and writer.queued == 0
            ring = model.rings[0].ring
            ring.append((T0_MS + 1000) * 1000, [50.0])
            wait_for(lambda: writer.sent == 6, timeout=10, what="the next sample")
        finally:
            writer.stop()
            standin.stop()
    assert [r.samples for r in standin.requests] == [5, 1]   # nothing lost, nothing sent twice
    assert writer.dropped["rejected"] == 0 and writer.problem() is None
    [record] = [r for r in caplog.records if "unexpected error" in r.getMessage()]
    assert "ValueError: surprise number 1" in record.getMessage() and record.exc_info is None
    assert 'dcgm_collector_remote_write_failures_total{url="' + writer.url + '"} 2' in \
        render_remote_write_metrics([writer], False)


def test_a_tls_request_held_by_the_receiver_ends_at_the_timeout_and_is_sent_again(tmp_path, messages):
    cert, key = self_signed(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    receiver = RawReceiver(messages, lambda n: Hold(b"", b"HTTP/1.1 100 Continue\r\n\r\n") if n == 1 else answer(204),
                           tls=server)
    model = one_gpu_model()
    writer = RemoteWriter(RemoteWriteOptions(receiver.url, ca_file=str(cert), timeout_s=1.0), lambda: [model], "9.9")
    writer.start()
    try:
        failing = wait_for(writer.problem, timeout=10, what="the held request noticed")
        wait_for(lambda: writer.sent == 5, timeout=15, what="the batch sent again")
        wait_for(lambda: receiver.held, timeout=5, what="the receiver to see the sender hang up")
    finally:
        writer.stop()
        receiver.stop()
    assert failing.startswith(f"remote write to {receiver.url} failing for ")
    assert failing.endswith(" s: timed out after 1 s (--remote-write-timeout)")
    assert writer.problem() is None
    assert writer.failed == {"timeout": 1} and writer.failures == 0
    assert [r.samples for r in receiver.requests] == [5, 5]
    assert 0.8 < receiver.held[0] < 4.0


def test_each_kind_of_failed_answer_is_logged_once(messages, caplog):
    answers = {1: b"NOT HTTP\r\n\r\n", 2: b"NOT HTTP EITHER\r\n\r\n",
               3: Hold(b"", b"HTTP/1.1 100 Continue\r\n\r\n" * 64, every_s=0)}
    receiver = RawReceiver(messages, lambda n: answers.get(n, answer(204)))
    model = one_gpu_model()
    writer = RemoteWriter(RemoteWriteOptions(receiver.url), lambda: [model], "9.9")
    with caplog.at_level(logging.WARNING, "dcgm_collector"):
        writer.start()
        try:
            wait_for(lambda: writer.sent == 5, timeout=15, what="the batch sent at the fourth try")
        finally:
            writer.stop()
            receiver.stop()
    assert writer.failed == {"network": 3}
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 2, logged
    assert "BadStatusLine" in logged[0] and "AnswerTooLong: the answer is larger than 64 KiB" in logged[1]


@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",       # a garbled chunk size
    Hold(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 100000\r\n\r\nout of", b"."),  # a body past the timeout
], ids=["garbled-body", "body-past-the-timeout"])
def test_a_status_that_came_in_time_is_the_answer_whatever_its_body_does(messages, reply):
    receiver = RawReceiver(messages, lambda n: reply if n == 1 else answer(204))
    model = one_gpu_model()
    writer = RemoteWriter(RemoteWriteOptions(receiver.url, timeout_s=1.0), lambda: [model], "9.9")
    writer.start()
    try:
        wait_for(lambda: writer.dropped["rejected"] or writer.sent, timeout=10, what="the answer taken")
        model.rings[0].ring.append((T0_MS + 1000) * 1000, [50.0])
        wait_for(lambda: writer.sent == 1, timeout=10, what="the next request")
    finally:
        writer.stop()
        receiver.stop()
    assert writer.dropped["rejected"] == 5 and writer.failed == {"400": 1} and writer.failures == 0


def test_an_interim_answer_taken_for_the_answer_leaves_nothing_for_the_next_request(messages):
    # http.client skips 100 Continue only: a 103 reads as the answer, and the real answer after it stays unread
    early_hints = Hold(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n", answer(400, body=b"late"), 0.3, 1)
    receiver = RawReceiver(messages, lambda n: early_hints if n == 1 else answer(204))
    model = one_gpu_model()
    writer = RemoteWriter(RemoteWriteOptions(receiver.url), lambda: [model], "9.9")
    writer.start()
    try:
        wait_for(lambda: writer.dropped["rejected"], timeout=10, what="the first answer taken")
        model.rings[0].ring.append((T0_MS + 1000) * 1000, [50.0])
        wait_for(lambda: writer.sent or writer.dropped["rejected"] > 5, timeout=10, what="the second answer")
    finally:
        writer.stop()
        receiver.stop()
    assert writer.failed == {"103": 1} and writer.dropped["rejected"] == 5 and writer.sent == 1


@pytest.mark.parametrize("flag", ["password", "bearer_token"])
def test_a_secret_file_that_is_a_fifo_is_a_one_line_error_at_once(tmp_path, flag):
    fifo = tmp_path / "secret"
    os.mkfifo(fifo)
    options = (RemoteWriteOptions("http://a/w", username="u", password_file=str(fifo)) if flag == "password"
               else RemoteWriteOptions("http://a/w", bearer_token_file=str(fifo)))
    started = time.monotonic()
    with pytest.raises(RemoteWriteError) as error:
        RemoteWriter(options, lambda: [], "9.9")
    assert time.monotonic() - started < 1.0
    assert str(error.value) == (f"--remote-write-{flag.replace('_', '-')}-file {fifo}: cannot read it: "
                                "not a regular file (a FIFO)")
