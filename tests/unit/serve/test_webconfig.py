"""--web-config-file: exporter-toolkit's format, TLS and basic auth against real clients.

The certificates are made here with the ``cryptography`` package: a server
CA and server certificate for 127.0.0.1, a client CA with a client
certificate, and a stranger CA whose client certificate must be refused.
"""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import pytest

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

from dcgm_collector.serve import webconfig  # noqa: E402
from dcgm_collector.serve.server import MetricsServer  # noqa: E402
from dcgm_collector.serve.webconfig import WebConfigError, load  # noqa: E402

BODY = b"# HELP up test\n# TYPE up gauge\nup 1\n"
PASSWORD = b"s3cret-scrape"
# dcgm-exporter's integration test file: user alice, password "password"
ALICE_HASH = "$2y$10$CWCEbs7mt8QFrToJR9OcG.tduEKpx9SROhWnaDHQgQX4Q6hqWNASa"


# ---- certificates ------------------------------------------------------------------------------

@dataclass
class Issued:
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(directory: Path, stem: str, cert, key) -> Issued:
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return Issued(cert_path, key_path)


class Authority:
    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(hours=1))
                     .not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.files = _write(directory, name, self.cert, self.key)

    def issue(self, stem: str, sans: list[x509.GeneralName], server: bool) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
        cert = (x509.CertificateBuilder().subject_name(_name(stem)).issuer_name(self.cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .sign(self.key, hashes.SHA256()))
        return _write(self.directory, stem, cert, key)


@dataclass
class Pki:
    server_ca: Authority
    server: Issued
    client_ca: Authority
    client: Issued
    other_client: Issued      # from a CA the server does not trust
    stranger: Issued          # trusted CA, SAN not on the allow-list


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    server_ca = Authority(directory, "server-ca")
    server = server_ca.issue("server", [x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                        x509.DNSName("localhost")], server=True)
    client_ca = Authority(directory, "client-ca")
    client = client_ca.issue("client", [x509.DNSName("prometheus.monitoring.svc")], server=False)
    stranger = client_ca.issue("stranger", [x509.DNSName("someone-else.example")], server=False)
    other = Authority(directory, "other-ca").issue("other-client", [x509.DNSName("prometheus.monitoring.svc")],
                                                  server=False)
    return Pki(server_ca, server, client_ca, client, other, stranger)


@pytest.fixture(scope="module")
def password_hash() -> str:
    return bcrypt.hashpw(PASSWORD, bcrypt.gensalt(4)).decode()


# ---- helpers ------------------------------------------------------------------------------------

def write_config(directory: Path, text: str, name: str = "web.yml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def tls_config(pki: Pki, extra: str = "", users: str = "") -> str:
    text = f"tls_server_config:\n  cert_file: {pki.server.cert}\n  key_file: {pki.server.key}\n{extra}"
    return text + (f"basic_auth_users:\n{users}" if users else "")


def basic(user: str, password: bytes) -> str:
    return "Basic " + base64.b64encode(user.encode() + b":" + password).decode()


def client_context(pki: Pki, cert: Issued | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.server_ca.files.cert))
    if cert is not None:
        context.load_cert_chain(str(cert.cert), str(cert.key))
    return context


def https_get(port: int, context: ssl.SSLContext, path: str = "/metrics", headers: dict | None = None):
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def http_get(port: int, path: str = "/metrics", headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def serve(config: webconfig.WebConfig, **kwargs) -> MetricsServer:
    server = MetricsServer("127.0.0.1:0", lambda openmetrics: BODY, lambda: (True, "OK"), request_timeout_s=1,
                           **config.server_options(), **kwargs)
    server.start()
    return server


def refused(port: int, context: ssl.SSLContext) -> bool:
    """True when the TLS connection or its first request fails (TLS 1.3 reports a refused client cert late)."""
    try:
        response, _ = https_get(port, context)
    except (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected, OSError):
        return True
    return response.status >= 400


# ---- TLS and auth against real clients ---------------------------------------------------------

def test_tls_with_basic_auth(tmp_path, pki, password_hash):
    config = load(write_config(tmp_path, tls_config(pki, users=f"  prometheus: {password_hash}\n")))
    server = serve(config)
    try:
        context = client_context(pki)
        response, body = https_get(server.port, context, headers={"Authorization": basic("prometheus", PASSWORD)})
        assert (response.status, body) == (200, BODY)
        for headers in ({"Authorization": basic("prometheus", b"wrong")}, {},
                        {"Authorization": basic("nobody", PASSWORD)}, {"Authorization": "Bearer abc"},
                        {"Authorization": "Basic !!!"}):
            response, body = https_get(server.port, context, headers=headers)
            assert response.status == 401, headers
            assert response.getheader("WWW-Authenticate") == "Basic"
            assert BODY not in body
        for path in ("/health", "/", "/nope"):      # every path is protected, as exporter-toolkit does
            response, _ = https_get(server.port, context, path=path)
            assert response.status == 401
        response, body = https_get(server.port, context, path="/health",
                                   headers={"Authorization": basic("prometheus", PASSWORD)})
        assert (response.status, body) == (200, b"OK")
        assert server.describe().startswith("https://127.0.0.1:")
    finally:
        server.stop()


def test_plain_http_to_the_tls_port_is_refused(tmp_path, pki):
    server = serve(load(write_config(tmp_path, tls_config(pki))))
    try:
        response, body = http_get(server.port)
        assert response.status == 400
        assert body == b"Client sent an HTTP request to an HTTPS server.\n"
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(b"\x00\x01garbage")
            assert sock.recv(100) == b""          # not TLS, not HTTP: dropped
        response, body = https_get(server.port, client_context(pki))
        assert (response.status, body) == (200, BODY)
    finally:
        server.stop()


def test_untrusted_server_certificate_is_rejected_by_the_client(tmp_path, pki):
    server = serve(load(write_config(tmp_path, tls_config(pki))))
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            https_get(server.port, ssl.create_default_context())
    finally:
        server.stop()


def test_stalled_tls_client_does_not_block_others(tmp_path, pki):
    server = serve(load(write_config(tmp_path, tls_config(pki))))
    silent = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    half = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        half.sendall(b"\x16\x03\x01\x00\xff")     # a ClientHello header, then nothing
        started = time.monotonic()
        response, body = https_get(server.port, client_context(pki))
        assert (response.status, body) == (200, BODY)
        assert time.monotonic() - started < 1
        assert silent.recv(1) == b"" and half.recv(1) == b""   # both dropped after the request timeout
    finally:
        silent.close()
        half.close()
        server.stop()


def test_require_and_verify_client_cert(tmp_path, pki):
    extra = f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki.client_ca.files.cert}\n"
    server = serve(load(write_config(tmp_path, tls_config(pki, extra))))
    try:
        response, body = https_get(server.port, client_context(pki, pki.client))
        assert (response.status, body) == (200, BODY)
        assert refused(server.port, client_context(pki))                     # no certificate
        assert refused(server.port, client_context(pki, pki.other_client))  # untrusted CA
    finally:
        server.stop()


def test_verify_client_cert_if_given(tmp_path, pki):
    extra = f"  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: {pki.client_ca.files.cert}\n"
    server = serve(load(write_config(tmp_path, tls_config(pki, extra))))
    try:
        assert https_get(server.port, client_context(pki))[0].status == 200
        assert https_get(server.port, client_context(pki, pki.client))[0].status == 200
        assert refused(server.port, client_context(pki, pki.other_client))
    finally:
        server.stop()


def test_request_client_cert_asks_for_nothing(tmp_path, pki):
    config = load(write_config(tmp_path, tls_config(pki, "  client_auth_type: RequestClientCert\n")))
    server = serve(config)
    try:
        assert https_get(server.port, client_context(pki))[0].status == 200
        assert https_get(server.port, client_context(pki, pki.other_client))[0].status == 200
    finally:
        server.stop()


def test_client_allowed_sans(tmp_path, pki):
    extra = (f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki.client_ca.files.cert}\n"
             "  client_allowed_sans: [prometheus.monitoring.svc]\n")
    server = serve(load(write_config(tmp_path, tls_config(pki, extra))))
    try:
        assert https_get(server.port, client_context(pki, pki.client))[0].status == 200
        assert refused(server.port, client_context(pki, pki.stranger))
    finally:
        server.stop()


def test_basic_auth_without_tls(tmp_path, password_hash):
    config = load(write_config(tmp_path, f"basic_auth_users:\n  prometheus: {password_hash}\n"))
    assert not config.tls_enabled and config.ssl_context() is None
    server = serve(config)
    try:
        assert http_get(server.port)[0].status == 401
        response, body = http_get(server.port, headers={"Authorization": basic("prometheus", PASSWORD)})
        assert (response.status, body) == (200, BODY)
        assert server.describe().startswith("http://")
    finally:
        server.stop()


def test_headers_and_rate_limit(tmp_path):
    config = load(write_config(tmp_path, (
        "http_server_config:\n  http2: false\n  headers:\n"
        "    Strict-Transport-Security: max-age=31536000\n    x-frame-options: deny\n"
        "    X-Content-Type-Options: nosniff\n"
        "rate_limit:\n  interval: 1m\n  burst: 2\n")))
    server = serve(config)
    try:
        response, _ = http_get(server.port)
        assert response.status == 200
        assert response.getheader("Strict-Transport-Security") == "max-age=31536000"
        assert response.getheader("X-Frame-Options") == "deny"
        assert response.msg.get_all("X-Content-Type-Options") == ["nosniff"]   # not sent twice
        assert http_get(server.port)[0].status == 200
        response, _ = http_get(server.port)
        assert response.status == 429
        assert response.getheader("Strict-Transport-Security") == "max-age=31536000"
    finally:
        server.stop()


def test_inline_cert_and_key(tmp_path, pki):
    def indented(path: Path) -> str:
        return "".join(f"    {line}\n" for line in path.read_text().splitlines())

    text = (f"tls_server_config:\n  cert: |\n{indented(pki.server.cert)}  key: |\n{indented(pki.server.key)}")
    server = serve(load(write_config(tmp_path, text)))
    try:
        assert https_get(server.port, client_context(pki))[0].status == 200
    finally:
        server.stop()


def test_relative_paths_resolve_against_the_config_file(tmp_path, pki):
    (tmp_path / "tls").mkdir()
    (tmp_path / "tls" / "s.crt").write_bytes(pki.server.cert.read_bytes())
    (tmp_path / "tls" / "s.key").write_bytes(pki.server.key.read_bytes())
    config = load(write_config(tmp_path, "tls_server_config:\n  cert_file: tls/s.crt\n  key_file: tls/s.key\n"))
    assert config.tls.cert_file == str(tmp_path / "tls" / "s.crt")


def test_tls12_cipher_suites_are_applied(tmp_path, pki):
    extra = "  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n"
    server = serve(load(write_config(tmp_path, tls_config(pki, extra))))
    try:
        context = client_context(pki)
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                assert tls.version() == "TLSv1.2"
                assert tls.cipher()[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
    finally:
        server.stop()


def test_min_version_refuses_older_clients(tmp_path, pki):
    server = serve(load(write_config(tmp_path, tls_config(pki, "  min_version: TLS13\n"))))
    try:
        context = client_context(pki)
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        assert refused(server.port, context)
    finally:
        server.stop()


def test_rotated_certificate_is_served_without_a_restart(tmp_path, pki, monkeypatch):
    monkeypatch.setattr(webconfig, "CERT_RECHECK_S", 0.0)
    cert, key = tmp_path / "live.crt", tmp_path / "live.key"
    cert.write_bytes(pki.server.cert.read_bytes())
    key.write_bytes(pki.server.key.read_bytes())
    config = load(write_config(tmp_path, f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"))
    server = serve(config)
    try:
        def served_serial() -> int:
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
                with client_context(pki).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                    return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number

        first = served_serial()
        renewed = pki.server_ca.issue("renewed", [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))], server=True)
        key.write_bytes(renewed.key.read_bytes())
        cert.write_bytes(b"-----BEGIN CERTIFICATE-----\nhalf written")   # mid-rotation: keep the old pair
        assert served_serial() == first
        cert.write_bytes(renewed.cert.read_bytes())
        second = served_serial()
        assert second != first
        assert second == x509.load_pem_x509_certificate(renewed.cert.read_bytes()).serial_number
    finally:
        server.stop()


# ---- basic auth details --------------------------------------------------------------------------

def test_dcgm_exporter_example_hash(tmp_path):
    config = load(write_config(tmp_path, f"basic_auth_users:\n  alice: {ALICE_HASH}\n"))
    assert config.authenticate(basic("alice", b"password"))
    assert not config.authenticate(basic("alice", b"Password"))


def test_bare_2_prefix_is_checked_as_2a(tmp_path):
    hashed = bcrypt.hashpw(PASSWORD, bcrypt.gensalt(4, prefix=b"2a")).decode()
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: '$2${hashed[4:]}'\n"))
    assert config.authenticate(basic("u", PASSWORD))


def test_checks_are_cached_and_expire(tmp_path, password_hash, monkeypatch):
    class Clock:
        now = 100.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: {password_hash}\n"), clock=clock)
    calls = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda pw, h: calls.append(h) or real(pw, h))
    header = basic("u", PASSWORD)
    assert config.authenticate(header) and config.authenticate(header) and config.authenticate(header)
    assert len(calls) == 1
    assert not config.authenticate(basic("u", b"bad")) and not config.authenticate(basic("u", b"bad"))
    assert len(calls) == 2
    clock.now += webconfig.AUTH_CACHE_S + 1
    assert config.authenticate(header)
    assert len(calls) == 3


def test_unknown_user_costs_a_bcrypt_check(tmp_path, password_hash, monkeypatch):
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: {password_hash}\n"))
    calls = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda pw, h: calls.append(h) or real(pw, h))
    assert not config.authenticate(basic("intruder", PASSWORD))
    assert len(calls) == 1 and calls[0] != password_hash.encode()
    assert calls[0][4:6] == password_hash.encode()[4:6]        # the dummy hash has the users' cost


def test_long_password_is_a_failure_not_an_error(tmp_path, password_hash):
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: {password_hash}\n"))
    assert not config.authenticate(basic("u", b"x" * 200))


def test_password_may_contain_colons(tmp_path):
    hashed = bcrypt.hashpw(b"a:b:c", bcrypt.gensalt(4)).decode()
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: {hashed}\n"))
    assert config.authenticate(basic("u", b"a:b:c"))


def test_no_users_means_no_auth(tmp_path):
    config = load(write_config(tmp_path, ""))
    assert config.authenticate(None) and config.server_options()["authenticate"] is None
    assert config.describe() == "no TLS, no auth"


# ---- bad files: one clear line naming the file and the key -------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("tls_server_config:\n  cert_file: /nonexistent/x.pem\n  key_file: /nonexistent/x.key\n",
     "web.yml: tls_server_config.cert_file: no such file /nonexistent/x.pem"),
    ("tls_server_config:\n  cert_file: {cert}\n", "web.yml: tls_server_config.key_file: missing"),
    ("tls_server_config:\n  key_file: {key}\n", "web.yml: tls_server_config.cert_file: missing"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  client_auth_type: Sometimes\n",
     "web.yml: tls_server_config.client_auth_type: invalid ClientAuth 'Sometimes'"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  client_auth_type: RequireAnyClientCert\n",
     "web.yml: tls_server_config.client_auth_type: RequireAnyClientCert (any certificate, unchecked) is not supported"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  client_ca_file: {cert}\n",
     "web.yml: tls_server_config.client_ca_file: a client CA is set but client_auth_type is NoClientCert"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  min_version: TLS13\n  max_version: TLS12\n",
     "web.yml: tls_server_config.min_version: TLS13 is above max_version TLS12"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  min_version: SSL3\n",
     "web.yml: tls_server_config.min_version: unknown TLS version 'SSL3'"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  cipher_suites: [TLS_FANCY]\n",
     "web.yml: tls_server_config.cipher_suites: unknown cipher 'TLS_FANCY'"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  curve_preferences: [P999]\n",
     "web.yml: tls_server_config.curve_preferences: unknown curve 'P999'"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  certfile: x\n",
     "web.yml: tls_server_config.certfile: unknown key"),
    ("tls_server_config:\n  cert_file: {key}\n  key_file: {key}\n",
     "web.yml: tls_server_config.cert_file: no PEM certificate in it"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {cert}\n",
     "web.yml: tls_server_config.key_file: cannot use the key with the certificate"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {other_key}\n",
     "web.yml: tls_server_config.key_file: cannot use the key with the certificate"),
    ("basic_auth_users:\n  alice: password\n", "web.yml: basic_auth_users.alice: not a bcrypt hash"),
    ("basic_auth_users:\n  alice: [1]\n", "web.yml: basic_auth_users.alice: must be a string, not a list"),
    ("basic_auth_users: [alice]\n", "web.yml: basic_auth_users: must be a mapping, not a list"),
    ("http_server_config:\n  headers:\n    Server: nginx\n",
     "web.yml: http_server_config.headers.Server: HTTP header 'Server' can not be configured"),
    ("http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
     "web.yml: http_server_config.headers.X-Frame-Options: invalid value 'allow'"),
    ("http_server_config:\n  http2: maybe\n", "web.yml: http_server_config.http2: must be true or false"),
    ("rate_limit:\n  interval: fast\n  burst: 1\n", "web.yml: rate_limit.interval: 'fast' is not a duration"),
    ("rate_limit:\n  interval: 1s\n  burst: -1\n", "web.yml: rate_limit.burst: must be a whole number"),
    ("tls_config:\n  cert_file: x\n", "web.yml: tls_config: unknown key"),
    ("basic_auth_users:\n  a: x\n  a: y\n", "web.yml: line 3: not valid YAML: key 'a' is given twice"),
    ("tls_server_config: [\n", "web.yml: line 2: not valid YAML"),
    ("- just\n- a list\n", "web.yml: must be a mapping, not a list"),
])
def test_bad_config_is_one_clear_line(tmp_path, pki, text, message):
    other_key = pki.client.key
    path = write_config(tmp_path, text.format(cert=pki.server.cert, key=pki.server.key, other_key=other_key))
    with pytest.raises(WebConfigError) as info:
        load(path)
    text_of_error = str(info.value)
    assert "\n" not in text_of_error
    assert text_of_error.startswith(str(tmp_path / "web.yml") + ":")
    assert message.replace("web.yml", str(tmp_path / "web.yml")) in text_of_error, text_of_error


def test_missing_config_file(tmp_path):
    with pytest.raises(WebConfigError, match="nope.yml: no such file"):
        load(tmp_path / "nope.yml")


def test_encrypted_key_is_an_error_not_a_prompt(tmp_path, pki):
    key = serialization.load_pem_private_key(pki.server.key.read_bytes(), None)
    encrypted = tmp_path / "enc.key"
    encrypted.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"pw")))
    path = write_config(tmp_path, f"tls_server_config:\n  cert_file: {pki.server.cert}\n  key_file: {encrypted}\n")
    with pytest.raises(WebConfigError, match="key_file: cannot use the key"):
        load(path)


@pytest.mark.parametrize("text, seconds", [("1s", 1.0), ("500ms", 0.5), ("1m30s", 90.0), ("2h", 7200.0),
                                           ("1d", 86400.0), ("0", 0.0), ("1.5s", 1.5)])
def test_durations(text, seconds):
    assert webconfig.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "s", "1x", "1s2", " 1 s"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        webconfig.parse_duration(text)


# ---- basic auth under attack: timing and floods ------------------------------------------------------

def _median_seconds(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2]


def test_a_low_cost_user_answers_as_slowly_as_an_unknown_one(tmp_path):
    """A wrong password for a user hashed at a low cost must not answer faster than for a user who does not exist."""
    cheap = bcrypt.hashpw(b"cheap-password", bcrypt.gensalt(4)).decode()
    dear = bcrypt.hashpw(b"dear-password", bcrypt.gensalt(10)).decode()
    config = load(write_config(tmp_path, f"basic_auth_users:\n  cheap: {cheap}\n  dear: {dear}\n"))
    server = serve(config)
    timings: dict[str, list[float]] = {"cheap": [], "dear": [], "nobody": []}
    try:
        for attempt in range(5):   # interleaved, so noise on the machine hits every user alike
            for user in timings:
                started = time.perf_counter()
                response, _ = http_get(server.port, headers={"Authorization": basic(user, b"guess-%d" % attempt)})
                timings[user].append(time.perf_counter() - started)
                assert response.status == 401
    finally:
        server.stop()
    # the fastest of each user's answers: what the check itself costs, with the least of the
    # machine's other work on top (a busy machine only ever adds time)
    fastest = {user: min(samples) for user, samples in timings.items()}
    assert max(fastest.values()) < 1.5 * min(fastest.values()), timings


def test_a_flood_of_wrong_passwords_does_not_slow_a_good_scraper(tmp_path):
    """16 clients guess passwords non-stop; a scraper with the right one stays fast at every scrape.

    Between two scrapes the flood gets more answers than the verdict cache holds, as it
    does over a real scrape interval (15 s and more), so no scrape can lean on luck.
    """
    hashed = bcrypt.hashpw(PASSWORD, bcrypt.gensalt(10)).decode()   # htpasswd's usual cost
    config = load(write_config(tmp_path, f"basic_auth_users:\n  prometheus: {hashed}\n"))
    server = serve(config)
    good = {"Authorization": basic("prometheus", PASSWORD)}
    stop = threading.Event()
    answered = [0]
    lock = threading.Lock()

    def flood(worker: int) -> None:
        attempt = 0
        while not stop.is_set():
            attempt += 1
            try:
                wrong = basic("prometheus", b"wrong-%d-%d" % (worker, attempt))
                http_get(server.port, headers={"Authorization": wrong})
            except OSError:
                continue
            with lock:
                answered[0] += 1

    def flood_answers_beyond(count: int) -> None:
        deadline = time.monotonic() + 120
        while answered[0] < count and time.monotonic() < deadline:
            time.sleep(0.01)

    flooders = [threading.Thread(target=flood, args=(i,), daemon=True) for i in range(16)]
    latencies = []
    try:
        assert http_get(server.port, headers=good)[0].status == 200   # the scraper was there before the flood
        for thread in flooders:
            thread.start()
        for _ in range(5):
            flood_answers_beyond(answered[0] + webconfig.AUTH_CACHE_ENTRIES + 20)
            started = time.perf_counter()
            response, body = http_get(server.port, headers=good)
            latencies.append(time.perf_counter() - started)
            assert (response.status, body) == (200, BODY)
    finally:
        stop.set()
        for thread in flooders:
            thread.join(10)
        server.stop()
    assert _median_seconds(latencies) < 0.2, sorted(latencies)


def test_repeated_wrong_passwords_from_one_address_get_429_quickly(tmp_path, password_hash):
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: {password_hash}\n"))
    server = serve(config)
    try:
        statuses = []
        for attempt in range(webconfig.FAILED_AUTH_BURST + 5):
            response, _ = http_get(server.port, headers={"Authorization": basic("u", b"guess-%d" % attempt)})
            statuses.append(response.status)
        assert statuses[:webconfig.FAILED_AUTH_BURST] == [401] * webconfig.FAILED_AUTH_BURST
        assert statuses[-1] == 429 and response.getheader("Retry-After")
        response, body = http_get(server.port, headers={"Authorization": basic("u", PASSWORD)})
        assert response.status == 429                # no more guesses from here for now, right or wrong
    finally:
        server.stop()


def test_good_credentials_stay_cached_through_a_flood_of_failures(tmp_path, password_hash, monkeypatch):
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: {password_hash}\n"))
    calls = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda pw, h: calls.append(h) or real(pw, h))
    good = basic("u", PASSWORD)
    assert config.authenticate(good)
    for attempt in range(3 * webconfig.AUTH_CACHE_ENTRIES):
        assert not config.authenticate(basic("u", b"guess-%d" % attempt), "192.0.2.%d" % (attempt % 250))
    before = len(calls)
    assert config.authenticate(good)
    assert len(calls) == before                        # answered from the cache, no bcrypt


def test_checks_beyond_the_bcrypt_queue_are_refused_quickly(tmp_path):
    hashed = bcrypt.hashpw(PASSWORD, bcrypt.gensalt(12)).decode()   # ~0.3 s a check: a queue builds up
    config = load(write_config(tmp_path, f"basic_auth_users:\n  u: {hashed}\n"))
    server = serve(config)
    results: list[tuple[int, float]] = []
    lock = threading.Lock()

    def attempt(worker: int) -> None:
        started = time.perf_counter()
        response, _ = http_get(server.port, headers={"Authorization": basic("u", b"w%d" % worker)})
        with lock:
            results.append((response.status, time.perf_counter() - started))

    try:
        callers = [threading.Thread(target=attempt, args=(i,)) for i in range(webconfig.BCRYPT_WORKERS
                                                                               + webconfig.BCRYPT_QUEUE + 6)]
        for thread in callers:
            thread.start()
        for thread in callers:
            thread.join(60)
    finally:
        server.stop()
    refused = [seconds for status, seconds in results if status == 503]
    assert len(refused) >= 6
    assert max(refused) < 0.2
