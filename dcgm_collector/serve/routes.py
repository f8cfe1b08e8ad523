"""The types the HTTP server's callers answer through.

The extra routes a caller adds (``Route``: a handler taking a ``Request`` and
giving a ``Reply``), the exceptions a metrics, health, authenticate or route
callable raises to choose a 503 or a 429, and ``_App``: every callable and
option a MetricsServer was given, as its connections' handlers read them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from dcgm_collector.serve.admission import Admission
from dcgm_collector.serve.framing import GzipPrefixes


class Unavailable(Exception):
    """Raised by a metrics, health or authenticate callable that cannot answer yet: the server answers 503."""


class TooManyRequests(Exception):
    """Raised by an authenticate callable to refuse a client for now: the server answers 429 with Retry-After."""

    def __init__(self, message: str = "", retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Request:
    """What an extra route's handler is given: the method, path, query (name -> values), body and client."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    body: bytes
    client: str


@dataclass(frozen=True)
class Reply:
    """An extra route's answer; ``compressible``: gzip it for clients that accept gzip.

    ``body`` is bytes, or a sequence of bytes pieces written one after the
    other (never joined whole).  ``sent()``, when given, is called once the
    reply is written or its client dropped, whatever happened: where a
    handler hands back the admission slot it took.
    """

    status: int
    body: bytes | Sequence[bytes]
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    compressible: bool = False
    sent: Callable[[], None] | None = None


@dataclass(frozen=True)
class Route:
    """An extra path the server answers (behind the same TLS, auth and rate limit as /metrics).

    ``handler(request) -> Reply`` runs on the request thread; raising Unavailable gets a 503.
    ``methods`` it accepts (405 otherwise), ``max_body`` the largest request body it reads
    (413 beyond), ``landing`` its line on the landing page ("" to leave it off), ``example`` a
    query the landing page's link carries (``?field=...``), for a path that answers nothing useful bare.
    """

    handler: Callable[[Request], Reply]
    methods: tuple[str, ...] = ("GET", "HEAD")
    max_body: int = 0
    landing: str = ""
    example: str = ""


class _App:
    def __init__(self, metrics, health, observe_scrape, *, ssl_context=None, authenticate=None,
                 response_headers=None, allow_request=None, verify_client=None, routes=None,
                 landing_extra=None, landing_overview=None, admission=None) -> None:
        self.admission: Admission = admission if admission is not None else Admission()
        self.routes: dict[str, Route] = dict(routes or {})
        self.landing_extra = landing_extra
        self.landing_overview = landing_overview
        self.metrics = metrics
        self.health = health
        self.observe_scrape = observe_scrape
        self.ssl_context = ssl_context
        self.authenticate = _with_client_address(authenticate)
        self.response_headers: dict[str, str] = dict(response_headers or {})
        self.allow_request = allow_request
        self.verify_client = verify_client
        self.gzip_prefixes = GzipPrefixes(1)   # the server sets its own, at its gzip level


def _with_client_address(authenticate: Callable[..., bool] | None) -> Callable[[str | None, str], bool] | None:
    """The hook as ``authenticate(header, client_address)``; a one-argument hook is not given the address."""
    if authenticate is None:
        return None
    try:
        inspect.signature(authenticate).bind(None, "")
    except (TypeError, ValueError):
        return lambda header, client_address: authenticate(header)
    return authenticate
