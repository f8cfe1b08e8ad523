"""TLS for ``--web-config-file``: the checked TLS settings, the SSLContext built from them, and file stamps.

:func:`build_context` turns :class:`TlsSettings` into a server SSLContext
(at start-up and again whenever :func:`file_stamps` of the certificate, key and
client CA files change, so rotated certificates are served without a
restart).  Inline PEM (``cert``, ``key``) goes to private temporary files
for the load.  A certificate file holding no PEM certificate, a key that does
not fit the certificate or is encrypted, and a CA bundle with no usable
certificate each raise :class:`WebConfigError` naming the key.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass

from dcgm_collector.files import FileRefused, read_regular_file

MAX_WEB_CONFIG_BYTES = 1 << 20   # a web config file, a certificate or a CA bundle: far more than any needs


# defined here, below webconfig, because building the context (at every reload too) raises it
class WebConfigError(Exception):
    """A bad web config file; str() is one line: ``FILE: KEY: problem``."""


@dataclass(frozen=True)
class TlsSettings:
    cert_file: str = ""
    key_file: str = ""
    cert: str = ""
    key: str = ""
    client_auth_type: str = "NoClientCert"
    client_ca_file: str = ""
    client_ca: str = ""
    client_allowed_sans: tuple[str, ...] = ()
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3
    openssl_ciphers: tuple[str, ...] = ()      # empty: OpenSSL's defaults
    prefer_server_cipher_suites: bool = True

    @property
    def watched_files(self) -> tuple[str, ...]:
        return tuple(f for f in (self.cert_file, self.key_file, self.client_ca_file) if f)


def build_context(tls: TlsSettings, source: str) -> ssl.SSLContext:
    key = "tls_server_config."
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.minimum_version = tls.min_version
        context.maximum_version = tls.max_version
    except (ValueError, ssl.SSLError) as error:
        raise WebConfigError(f"{source}: {key}min_version: not supported here: {error}") from None
    if tls.prefer_server_cipher_suites:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    if tls.openssl_ciphers:
        try:
            context.set_ciphers(":".join(tls.openssl_ciphers))
        except ssl.SSLError:
            raise WebConfigError(f"{source}: {key}cipher_suites: none of them is available in this OpenSSL") from None
    with _pem_files(tls) as (cert_path, key_path):
        _check_certificates(cert_path, f"{source}: {key}{'cert_file' if tls.cert_file else 'cert'}")
        try:
            context.load_cert_chain(cert_path, key_path, password=_no_password)
        except (ssl.SSLError, OSError, ValueError) as error:
            where = f"{source}: {key}{'key_file' if tls.key_file else 'key'}"
            raise WebConfigError(f"{where}: cannot use the key with the certificate "
                                 f"(not a PEM private key, encrypted, or not the certificate's key): "
                                 f"{_ssl_reason(error)}") from None
    if tls.client_auth_type in ("VerifyClientCertIfGiven", "RequireAndVerifyClientCert"):
        where = f"{source}: {key}{'client_ca' if tls.client_ca else 'client_ca_file'}"
        try:
            if tls.client_ca_file:
                context.load_verify_locations(cafile=tls.client_ca_file)
            elif tls.client_ca:
                context.load_verify_locations(cadata=tls.client_ca)
            else:
                context.load_default_certs(ssl.Purpose.CLIENT_AUTH)   # Go verifies against the system's roots
        except (ssl.SSLError, OSError, ValueError) as error:
            raise WebConfigError(f"{where}: no usable CA certificate: {_ssl_reason(error)}") from None
        context.verify_mode = (ssl.CERT_REQUIRED if tls.client_auth_type == "RequireAndVerifyClientCert"
                               else ssl.CERT_OPTIONAL)
    else:
        context.verify_mode = ssl.CERT_NONE
    return context


def _no_password() -> bytes:
    # without a callback OpenSSL would prompt on the terminal for an encrypted key
    raise ValueError("the private key is encrypted")


class _pem_files:
    """The cert and key as file paths; inline PEM goes to private temporary files for the load."""

    def __init__(self, tls: TlsSettings) -> None:
        self.tls = tls
        self.directory: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> tuple[str, str]:
        cert, key = self.tls.cert_file, self.tls.key_file
        if self.tls.cert or self.tls.key:
            self.directory = tempfile.TemporaryDirectory(prefix="dcgm-collector-tls-")
            if self.tls.cert:
                cert = self._write("cert.pem", self.tls.cert)
            if self.tls.key:
                key = self._write("key.pem", self.tls.key)
        return cert, key

    def _write(self, name: str, text: str) -> str:
        assert self.directory is not None
        path = os.path.join(self.directory.name, name)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def __exit__(self, *exc: object) -> None:
        if self.directory is not None:
            self.directory.cleanup()


def _check_certificates(path: str, where: str) -> None:
    """A clear error for a certificate file that holds no PEM certificate (load_cert_chain's is vague)."""
    try:
        # a regular file, checked at every (re)load: OpenSSL's own open would wait on a FIFO put in its place
        text = read_regular_file(path, MAX_WEB_CONFIG_BYTES).decode("ascii", errors="replace")
    except FileRefused as refused:
        raise WebConfigError(f"{where}: {refused}") from None
    except OSError as error:
        raise WebConfigError(f"{where}: cannot read {path}: {error.strerror}") from None
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=text)
    except (ssl.SSLError, ValueError) as error:
        raise WebConfigError(f"{where}: no PEM certificate in it: {_ssl_reason(error)}") from None


def _ssl_reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    text = reason or getattr(error, "strerror", None) or str(error)
    return " ".join(str(text).split())


def file_stamps(paths: tuple[str, ...]) -> tuple:
    stamps = []
    for path in paths:
        try:
            info = os.stat(path)
            stamps.append((info.st_mtime_ns, info.st_size, info.st_ino))
        except OSError:
            stamps.append(None)
    return tuple(stamps)
