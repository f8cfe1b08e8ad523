"""One RemoteWriter against the stand-in receiver in this process: credentials, TLS, the samples and stop."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import time
from pathlib import Path

import numpy as np
import pytest
from remote_write_standin import StandIn, write_request_module
from support import wait_for

from dcgm_collector.collect.ring import EventRing, RingBuffer
from dcgm_collector.expose.samples import RingSeries, SampleModel, SeriesInfo
from dcgm_collector.push.remote_write import (
    RemoteWriteError,
    RemoteWriteOptions,
    RemoteWriter,
    render_remote_write_metrics,
)

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
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "receiver")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "receiver.pem", directory / "receiver.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


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
