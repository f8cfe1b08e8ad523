"""``--web-config-file``: TLS, client certificates and basic auth, in exporter-toolkit's format.

dcgm-exporter (like every Prometheus exporter) reads a ``web-config.yml``
through prometheus/exporter-toolkit; the same file works here::

    tls_server_config:
      cert_file: server.crt          # relative paths: from the config file's directory
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert
      client_ca_file: clients-ca.crt
    basic_auth_users:
      prometheus: $2y$10$...         # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\\n')
    http_server_config:
      headers:
        Strict-Transport-Security: max-age=31536000

:func:`load` checks the whole file at start-up (unknown keys are errors, as
exporter-toolkit parses strictly) and raises :class:`WebConfigError`, whose
text is one line naming the file and the key::

    web.yml: tls_server_config.cert_file: no such file /etc/x.pem

Behaviour, following exporter-toolkit v0.16:

* No TLS key at all: plain HTTP, with basic auth and headers still applied.
* Basic auth protects every path, /health included (probes must send the
  credentials, or probe the TCP port).  A missing or wrong password gets 401
  with ``WWW-Authenticate: Basic``.
* Every check costs the same bcrypt work whoever the user, verdicts are
  cached, and both the bcrypt checks at once and each client address's
  failed checks are limited (503 and 429): see
  :mod:`dcgm_collector.serve.basicauth`.
* The certificate, key and client CA files are checked for changes at most
  once per CERT_RECHECK_S and reloaded when they change, so rotated
  certificates are served without a restart (a reload that fails keeps the
  old ones and logs once).  Users and headers are read at start-up only.
* ``rate_limit`` (interval, burst): beyond it, 429.

What Python's ssl module cannot do, and how that is handled:

* ``RequireAnyClientCert`` (alias ``RequireClientCert``) asks for a client
  certificate and accepts it unchecked; Python can only accept verified
  ones, so this is an error at start-up naming ``RequireAndVerifyClientCert``.
* ``RequestClientCert`` asks for a certificate it never checks nor uses;
  here no certificate is asked for, which admits the same clients.
* ``curve_preferences`` is checked but not applied (Python cannot set a
  curve list); ``prefer_server_cipher_suites`` and ``cipher_suites`` are
  applied (Go names are mapped to OpenSSL's; TLS 1.3 suites are accepted and,
  as in Go, not configurable); ``http_server_config.http2`` is accepted and
  has no effect (the server speaks HTTP/1.1).
* ``$2$`` bcrypt hashes (no minor version) are checked as ``$2a$``, which is
  what Go's bcrypt computes for them.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from dcgm_collector.files import FileRefused, read_regular_file

# the limits were defined here before basic auth had its own module; tests still read them here
from dcgm_collector.serve.basicauth import AUTH_CACHE_ENTRIES as AUTH_CACHE_ENTRIES
from dcgm_collector.serve.basicauth import AUTH_CACHE_S as AUTH_CACHE_S
from dcgm_collector.serve.basicauth import BCRYPT_QUEUE as BCRYPT_QUEUE
from dcgm_collector.serve.basicauth import BCRYPT_WORKERS as BCRYPT_WORKERS
from dcgm_collector.serve.basicauth import DUMMY_HASH_MAX_COST as DUMMY_HASH_MAX_COST
from dcgm_collector.serve.basicauth import FAILED_AUTH_ADDRESSES as FAILED_AUTH_ADDRESSES
from dcgm_collector.serve.basicauth import FAILED_AUTH_BURST as FAILED_AUTH_BURST
from dcgm_collector.serve.basicauth import FAILED_AUTH_INTERVAL_S as FAILED_AUTH_INTERVAL_S
from dcgm_collector.serve.basicauth import (
    AuthCache,
    BcryptSlots,
    FailureAllowance,
    basic_credentials,
    check_cost,
    check_password,
    dummy_hashes,
    hash_cost,
    is_utf8,
)
from dcgm_collector.serve.server import TooManyRequests
from dcgm_collector.serve.tlscontext import (
    MAX_WEB_CONFIG_BYTES,
    TlsSettings,
    WebConfigError,
    build_context,
    file_stamps,
)

__all__ = ["AUTH_CACHE_S", "WebConfig", "WebConfigError", "load"]

log = logging.getLogger(__name__)

CERT_RECHECK_S = 1.0

CLIENT_AUTH_TYPES = ("NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
                     "RequireAndVerifyClientCert")
_CLIENT_AUTH_ALIASES = {"": "NoClientCert", "RequireClientCert": "RequireAnyClientCert"}
TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
CURVES = ("CurveP256", "CurveP384", "CurveP521", "X25519")

# Go's cipher suite names (tls.CipherSuites() and tls.InsecureCipherSuites()) -> OpenSSL's.
TLS12_CIPHERS = {
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
TLS13_CIPHERS = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")

# exporter-toolkit allows only these response headers, some with fixed values
ALLOWED_HEADERS: dict[str, tuple[str, ...] | None] = {
    "Content-Security-Policy": None,
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-Content-Type-Options": ("nosniff",),
    "X-XSS-Protection": None,
    "Strict-Transport-Security": None,
}

_BCRYPT_HASH = re.compile(r"^\$2[abxy]?\$(\d\d)\$[./A-Za-z0-9]{53}$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w|y)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
                   "d": 86400.0, "w": 604800.0, "y": 31536000.0}

_TOP_KEYS = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit")
_TLS_KEYS = ("cert_file", "key_file", "cert", "key", "client_auth_type", "client_ca_file", "client_ca",
             "client_allowed_sans", "min_version", "max_version", "cipher_suites", "curve_preferences",
             "prefer_server_cipher_suites")
_HTTP_KEYS = ("http2", "headers")
_RATE_KEYS = ("interval", "burst")


# ---- parsing ----------------------------------------------------------------------------

class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice (Go's strict YAML does; PyYAML keeps the last)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _Reader:
    """Typed access to the parsed YAML that names the key path in every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> WebConfigError:
        return WebConfigError(f"{self.source}: {key}: {problem}" if key else f"{self.source}: {problem}")

    def mapping(self, value: Any, key: str, allowed: tuple[str, ...] | None) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a mapping, not {_kind(value)}")
        for name in value:
            if not isinstance(name, str):
                raise self.fail(key, f"key {name!r} is not a string")
            if allowed is not None and name not in allowed:
                where = f"{key}.{name}" if key else name
                raise self.fail(where, f"unknown key; expected one of {', '.join(allowed)}")
        return value

    def string(self, value: Any, key: str) -> str:
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(key, f"must be a string, not {_kind(value)}")
        return str(value)

    def boolean(self, value: Any, key: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, not {value!r}")
        return value

    def strings(self, value: Any, key: str) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list, not {_kind(value)}")
        return [self.string(item, f"{key}[{i}]") for i, item in enumerate(value)]


def _kind(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", bool: "a boolean", str: "a string"}
    return names.get(type(value), type(value).__name__)


def parse_duration(text: str) -> float:
    """Seconds in a Go or Prometheus duration (``1s``, ``500ms``, ``1m30s``); ValueError if malformed."""
    text = text.strip()
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if position != len(text) or not text:
        raise ValueError(f"{text!r} is not a duration such as 1s, 500ms or 1m30s")
    return total


# ---- the parts of the config -------------------------------------------------------------------


class RateLimiter:
    """Token bucket: ``burst`` requests at once, then one per ``interval_s``."""

    def __init__(self, interval_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) / self.interval_s)
            self._at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False


# ---- the config ----------------------------------------------------------------------------------

class WebConfig:
    """A checked web config.  Hand :meth:`server_options` to MetricsServer."""

    def __init__(self, source: str, tls: TlsSettings | None, users: Mapping[str, bytes],
                 headers: Mapping[str, str], rate_limit: tuple[float, int] | None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.source = source
        self.tls = tls
        self.users = dict(users)
        self.headers = dict(headers)
        self.rate_limiter = RateLimiter(*rate_limit, clock=clock) if rate_limit else None
        self._clock = clock
        # apart, so that failures (which anyone can make) never push a good verdict out
        self._good_verdicts = AuthCache(clock=clock)
        self._bad_verdicts = AuthCache(clock=clock)
        self._failures = FailureAllowance(clock=clock)
        self._bcrypt_slots = BcryptSlots()
        self._check_cost = check_cost(self.users)
        self._dummy_hashes = dummy_hashes(self.users, self._check_cost)
        self._dummy_hash = self._dummy_hashes.get(self._check_cost, b"")
        self._context: ssl.SSLContext | None = None
        self._stamps: tuple = ()
        self._checked_at = 0.0
        self._context_lock = threading.Lock()
        self._reload_failed = False
        if tls is not None:
            self._context = build_context(tls, source)
            self._stamps = file_stamps(tls.watched_files)
            self._checked_at = clock()

    # -- TLS
    @property
    def tls_enabled(self) -> bool:
        return self.tls is not None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The server's SSLContext (None: plain HTTP), rebuilt when its files changed."""
        if self.tls is None:
            return None
        now = self._clock()
        if now - self._checked_at >= CERT_RECHECK_S:
            with self._context_lock:
                if now - self._checked_at >= CERT_RECHECK_S:
                    self._checked_at = now
                    self._reload_if_changed()
        return self._context

    def _reload_if_changed(self) -> None:
        assert self.tls is not None
        stamps = file_stamps(self.tls.watched_files)
        if stamps == self._stamps:
            return
        try:
            context = build_context(self.tls, self.source)
        except WebConfigError as error:
            if not self._reload_failed:
                log.warning("TLS files changed but cannot be loaded, still serving the previous ones: %s", error)
                self._reload_failed = True
            return   # stamps not updated: try again on the next check
        self._context, self._stamps, self._reload_failed = context, stamps, False
        log.info("TLS certificate files changed: reloaded %s", ", ".join(self.tls.watched_files))

    def verify_client(self, connection: ssl.SSLSocket) -> bool:
        """After the handshake: does the client certificate name an allowed SAN (when the config lists any)?"""
        if self.tls is None or not self.tls.client_allowed_sans:
            return True
        cert = connection.getpeercert()
        if not cert:
            return False
        allowed = set(self.tls.client_allowed_sans)
        for kind, value in cert.get("subjectAltName", ()):
            if kind == "IP Address":
                value = _normal_ip(value)
            if value in allowed:
                return True
        return False

    # -- basic auth
    @property
    def auth_enabled(self) -> bool:
        return bool(self.users)

    def authenticate(self, header: str | None, client_address: str = "") -> bool:
        """Whether an Authorization header value carries a configured user's password (True if no users).

        Raises TooManyRequests when ``client_address`` has used up its failed
        checks, Unavailable when too many checks are already waiting.
        """
        if not self.users:
            return True
        credentials = basic_credentials(header)
        if credentials is None:
            return False
        user, password = credentials
        known = self.users.get(user.decode("utf-8", "replace")) if is_utf8(user) else None
        hashed = known if known is not None else self._dummy_hash
        digest = self._good_verdicts.digest(user, hashed, password)
        if self._good_verdicts.get(digest):
            return known is not None
        if self._bad_verdicts.get(digest) is not None:
            return False
        if not self._failures.take(client_address):
            raise TooManyRequests("too many failed credential checks", self._failures.retry_after_s())

        def check() -> bool:
            if self._good_verdicts.get(digest):   # a concurrent request with the same credentials checked them
                return True
            if self._bad_verdicts.get(digest) is not None:
                return False
            verdict = self._padded_check(password, hashed) and known is not None
            (self._good_verdicts if verdict else self._bad_verdicts).put(digest, verdict)
            return verdict

        verdict = self._bcrypt_slots.run(check)
        if verdict:
            self._failures.give_back(client_address)
        return verdict

    def _padded_check(self, password: bytes, hashed: bytes) -> bool:
        """bcrypt against ``hashed``, then dummy checks up to the common cost, so every check costs the same."""
        verdict = check_password(password, hashed)
        for cost in range(hash_cost(hashed), self._check_cost):
            check_password(password, self._dummy_hashes[cost])
        return verdict

    # -- the server's hooks
    def server_options(self) -> dict[str, Any]:
        """Keyword arguments for MetricsServer: TLS, auth, headers, rate limit, client SAN check."""
        return {
            "ssl_context": self.ssl_context if self.tls is not None else None,
            "authenticate": self.authenticate if self.users else None,
            "response_headers": dict(self.headers),
            "allow_request": self.rate_limiter.allow if self.rate_limiter is not None else None,
            "verify_client": self.verify_client if self.tls is not None and self.tls.client_allowed_sans else None,
        }

    def describe(self) -> str:
        """One line for the start-up log."""
        parts = []
        if self.tls is not None:
            parts.append(f"TLS (client certificates: {self.tls.client_auth_type})")
        if self.users:
            parts.append(f"basic auth ({len(self.users)} user{'s' if len(self.users) != 1 else ''})")
        if self.rate_limiter is not None:
            parts.append(f"rate limit {self.rate_limiter.burst} per {self.rate_limiter.interval_s:g} s")
        return ", ".join(parts) or "no TLS, no auth"


def load(path: str | os.PathLike, *, clock: Callable[[], float] = time.monotonic) -> WebConfig:
    """Read and check a web config file; WebConfigError (one line) if anything is wrong."""
    source = os.fspath(path)
    try:
        text = read_regular_file(source, MAX_WEB_CONFIG_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise WebConfigError(f"{source}: no such file") from None
    except UnicodeDecodeError:
        raise WebConfigError(f"{source}: not UTF-8 text") from None
    except FileRefused as refused:
        raise WebConfigError(str(refused)) from None
    except OSError as error:
        raise WebConfigError(f"{source}: cannot read: {error.strerror or error}") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)   # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise WebConfigError(f"{source}: {where}not valid YAML: {' '.join(str(problem).split())}") from None
    reader = _Reader(source)
    top = reader.mapping(data, "", _TOP_KEYS)
    base = Path(source).resolve().parent
    tls = _tls_settings(reader, reader.mapping(top.get("tls_server_config"), "tls_server_config", _TLS_KEYS), base)
    http = reader.mapping(top.get("http_server_config"), "http_server_config", _HTTP_KEYS)
    reader.boolean(http.get("http2"), "http_server_config.http2", True)   # accepted; HTTP/1.1 only here
    headers = _headers(reader, reader.mapping(http.get("headers"), "http_server_config.headers", None))
    users = _users(reader, reader.mapping(top.get("basic_auth_users"), "basic_auth_users", None))
    rate_limit = _rate_limit(reader, reader.mapping(top.get("rate_limit"), "rate_limit", _RATE_KEYS))
    return WebConfig(source, tls, users, headers, rate_limit, clock=clock)


def _tls_settings(reader: _Reader, section: dict, base: Path) -> TlsSettings | None:
    key = "tls_server_config."
    values = {name: reader.string(section.get(name), key + name)
              for name in ("cert_file", "key_file", "cert", "key", "client_auth_type", "client_ca_file", "client_ca",
                           "min_version", "max_version")}
    sans = reader.strings(section.get("client_allowed_sans"), key + "client_allowed_sans")
    ciphers = reader.strings(section.get("cipher_suites"), key + "cipher_suites")
    curves = reader.strings(section.get("curve_preferences"), key + "curve_preferences")
    prefer = reader.boolean(section.get("prefer_server_cipher_suites"), key + "prefer_server_cipher_suites", True)
    if not any((values["cert_file"], values["key_file"], values["cert"], values["key"], values["client_ca_file"],
                values["client_ca"], values["client_auth_type"], sans)):
        return None   # no TLS: plain HTTP, as exporter-toolkit does
    for inline, path in (("cert", "cert_file"), ("key", "key_file"), ("client_ca", "client_ca_file")):
        if values[inline] and values[path]:
            raise reader.fail(key + path, f"set {path} or {inline}, not both")
    if not values["cert"] and not values["cert_file"]:
        raise reader.fail(key + "cert_file", "missing: TLS needs cert_file (or cert)")
    if not values["key"] and not values["key_file"]:
        raise reader.fail(key + "key_file", "missing: TLS needs key_file (or key)")
    files = {name: _existing_file(reader, key + name, values[name], base)
             for name in ("cert_file", "key_file", "client_ca_file")}
    client_auth = _client_auth(reader, key + "client_auth_type", values["client_auth_type"])
    if (values["client_ca_file"] or values["client_ca"]) and client_auth == "NoClientCert":
        raise reader.fail(key + "client_ca_file",
                          "a client CA is set but client_auth_type is NoClientCert; "
                          "set client_auth_type: RequireAndVerifyClientCert")
    if sans and client_auth not in ("VerifyClientCertIfGiven", "RequireAndVerifyClientCert"):
        raise reader.fail(key + "client_allowed_sans",
                          "needs a verified client certificate: set client_auth_type: RequireAndVerifyClientCert")
    for name in curves:
        if name not in CURVES:
            raise reader.fail(key + "curve_preferences", f"unknown curve {name!r}; expected one of {', '.join(CURVES)}")
    if curves:
        log.info("%s: tls_server_config.curve_preferences is not applied (Python cannot set a curve list)",
                 reader.source)
    low = _tls_version(reader, key + "min_version", values["min_version"], ssl.TLSVersion.TLSv1_2)
    high = _tls_version(reader, key + "max_version", values["max_version"], ssl.TLSVersion.TLSv1_3)
    if low > high:
        raise reader.fail(key + "min_version", f"{values['min_version']} is above max_version {values['max_version']}")
    return TlsSettings(
        cert_file=files["cert_file"], key_file=files["key_file"], cert=values["cert"], key=values["key"],
        client_auth_type=client_auth, client_ca_file=files["client_ca_file"], client_ca=values["client_ca"],
        client_allowed_sans=tuple(_normal_ip(s) for s in sans), min_version=low, max_version=high,
        openssl_ciphers=_ciphers(reader, key + "cipher_suites", ciphers), prefer_server_cipher_suites=prefer)


def _existing_file(reader: _Reader, key: str, value: str, base: Path) -> str:
    if not value:
        return ""
    path = Path(value) if os.path.isabs(value) else base / value
    if not path.exists():
        raise reader.fail(key, f"no such file {path}")
    if not path.is_file():
        raise reader.fail(key, f"not a file: {path}")
    if not os.access(path, os.R_OK):
        raise reader.fail(key, f"cannot read {path} (permission denied)")
    return str(path)


def _client_auth(reader: _Reader, key: str, value: str) -> str:
    name = _CLIENT_AUTH_ALIASES.get(value, value)
    if name not in CLIENT_AUTH_TYPES:
        raise reader.fail(key, f"invalid ClientAuth {value!r}; expected one of {', '.join(CLIENT_AUTH_TYPES)}")
    if name == "RequireAnyClientCert":
        raise reader.fail(key, f"{value} (any certificate, unchecked) is not supported: Python's ssl module only "
                               "accepts client certificates it can verify; use RequireAndVerifyClientCert with "
                               "client_ca_file")
    if name == "RequestClientCert":
        log.info("%s: client_auth_type RequestClientCert: client certificates are not asked for "
                 "(they would not be checked)", reader.source)
    return name


def _tls_version(reader: _Reader, key: str, value: str, default: ssl.TLSVersion) -> ssl.TLSVersion:
    if not value:
        return default
    version = TLS_VERSIONS.get(value)
    if version is None:
        raise reader.fail(key, f"unknown TLS version {value!r}; expected one of {', '.join(TLS_VERSIONS)}")
    return version


def _ciphers(reader: _Reader, key: str, names: list[str]) -> tuple[str, ...]:
    mapped = []
    for name in names:
        if name in TLS12_CIPHERS:
            mapped.append(TLS12_CIPHERS[name])
        elif name not in TLS13_CIPHERS:
            raise reader.fail(key, f"unknown cipher {name!r} (use Go's names, e.g. "
                                   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)")
    return tuple(mapped)


def _headers(reader: _Reader, section: dict) -> dict[str, str]:
    headers = {}
    for name, raw in section.items():
        key = f"http_server_config.headers.{name}"
        canonical = next((h for h in ALLOWED_HEADERS if h.lower() == name.lower()), None)
        if canonical is None:
            raise reader.fail(key, f"HTTP header {name!r} can not be configured; allowed: {', '.join(ALLOWED_HEADERS)}")
        value = reader.string(raw, key)
        if any(c in value for c in "\r\n\0"):
            raise reader.fail(key, "the value has a line break")
        fixed = ALLOWED_HEADERS[canonical]
        if fixed is not None and value.lower() not in fixed:
            raise reader.fail(key, f"invalid value {value!r}; expected {' or '.join(fixed)}")
        headers[canonical] = value
    return headers


def _users(reader: _Reader, section: dict) -> dict[str, bytes]:
    users = {}
    for name, raw in section.items():
        key = f"basic_auth_users.{name}"
        hashed = reader.string(raw, key)
        if ":" in name:
            raise reader.fail(key, "a user name cannot contain ':' (basic auth splits on it)")
        if hashed.startswith("$2$"):
            hashed = "$2a$" + hashed[3:]   # Go computes $2$ as $2a$; PyPI bcrypt refuses the bare form
        match = _BCRYPT_HASH.match(hashed)
        if match is None:
            raise reader.fail(key, "not a bcrypt hash (expected $2y$10$ and 53 more characters; "
                                   "make one with htpasswd -nBC 10 \"\" | tr -d ':\\n')")
        if not 4 <= int(match.group(1)) <= 31:
            raise reader.fail(key, f"bcrypt cost {match.group(1)} is outside 4-31")
        users[name] = hashed.encode("ascii")
    return users


def _rate_limit(reader: _Reader, section: dict) -> tuple[float, int] | None:
    if not section:
        return None
    interval_text = reader.string(section.get("interval"), "rate_limit.interval")
    try:
        interval = parse_duration(interval_text) if interval_text else 0.0
    except ValueError as error:
        raise reader.fail("rate_limit.interval", str(error)) from None
    burst = section.get("burst", 0)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 0:
        raise reader.fail("rate_limit.burst", f"must be a whole number >= 0, not {burst!r}")
    if interval <= 0:
        return None   # exporter-toolkit: an interval of 0 turns the limit off
    if burst == 0:
        raise reader.fail("rate_limit.burst", "must be at least 1 when an interval is set (0 refuses every request)")
    return interval, burst


def _normal_ip(value: str) -> str:
    """IP SANs compare by address (``::1`` and ``0:0:0:0:0:0:0:1`` alike); anything else as written."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return value
