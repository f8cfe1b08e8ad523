"""HTTP to a collector for ``dcgm-collector top``: one connection's options, and the history API polled forward.

A :class:`Connection` is what a scraper has: the URL, TLS (a CA file, or no
verification at all) and basic auth, and a timeout; every failure is a
:class:`TopError` whose text is one line naming the URL and the problem.

:class:`SamplePoller` reads ``/api/v1/samples`` forward from where the last
answer stopped: with ``cursor=`` once the collector's answers carry
``data.cursor``, else with ``since=`` one microsecond past the newest
timestamp seen.  It asks for the fields a view shows by DCGM field id and
drops each one the collector does not serve (its 400 names it), so a field
missing from the counters file is shown as missing, never as an error.
"""

from __future__ import annotations

import base64
import functools
import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_URL", "VIEW_FIELDS", "Connection", "SamplePoller", "TopError", "since_text"]

DEFAULT_URL = "http://localhost:9400"

# The fields a view shows, by DCGM field id: utilisation, framebuffer used and free, power and its limits,
# GPU and memory temperature, SM clock, clock-event reasons, XIDs.
VIEW_FIELDS: tuple[int, ...] = (203, 252, 251, 155, 164, 160, 150, 140, 100, 112, 230)
BACKFILL_S = 300       # the first read goes back this far: the longest span a view shows
MAX_PAGES = 20         # pages followed in one poll; the rest comes with the next poll


class TopError(Exception):
    """One line: the URL and what went wrong there."""


@dataclass(frozen=True)
class Connection:
    """How to reach one collector: its base URL, TLS, basic auth and a timeout per request."""

    url: str = DEFAULT_URL
    ca_file: str | None = None
    insecure: bool = False
    user: str | None = None
    password: str | None = None
    timeout: float = 5.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", self.url.rstrip("/"))

    @functools.cached_property
    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS context of an https URL (None for http); TopError naming --ca-file when it cannot be read."""
        if not self.url.startswith("https:"):
            return None
        if self.insecure:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        try:
            return ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as error:
            raise TopError(f"--ca-file {self.ca_file}: cannot read it as PEM certificates: "
                           f"{getattr(error, 'strerror', None) or error}") from None

    def get(self, path: str, query: Sequence[tuple[str, str]] = ()) -> tuple[int, bytes]:
        """(status, body) of GET ``path``: 200, or a 400 of the history API (its body says why); else TopError."""
        target = self.url + path + ("?" + urllib.parse.urlencode(list(query)) if query else "")
        request = urllib.request.Request(target, headers={"Accept-Encoding": "identity"})
        if self.user is not None:
            token = base64.b64encode(f"{self.user}:{self.password or ''}".encode()).decode("ascii")
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.tls_context) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            body = error.read()
            if error.code == 400:
                return 400, body
            if error.code == 401:
                hint = "wrong --user or --password" if self.user is not None else "give --user and --password"
                raise TopError(f"{self.url}: 401 Unauthorized ({hint})") from None
            raise TopError(f"{self.url}{path}: HTTP {error.code} {error.reason}") from None
        except urllib.error.URLError as error:
            raise TopError(f"{self.url}: {_reason(error.reason)}") from None
        except TimeoutError:
            raise TopError(f"{self.url}: no answer within {self.timeout:g} s (--timeout)") from None
        except (ConnectionError, ssl.SSLError, OSError) as error:
            raise TopError(f"{self.url}: {_reason(error)}") from None

    def text(self, path: str) -> str:
        status, body = self.get(path)
        if status != 200:
            raise TopError(f"{self.url}{path}: HTTP {status}")
        return body.decode("utf-8", errors="replace")


def _reason(reason: object) -> str:
    if isinstance(reason, ssl.SSLCertVerificationError):
        return f"TLS: certificate not verified: {reason.verify_message} (give --ca-file, or --insecure to skip it)"
    if isinstance(reason, ssl.SSLError):
        return f"TLS: {reason.reason or reason}"
    if isinstance(reason, TimeoutError):
        return "no answer in time (--timeout)"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is the collector running?)"
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve the host: {reason.strerror}"
    if isinstance(reason, OSError):
        return reason.strerror or str(reason)
    return str(reason)


def since_text(ts_us: int) -> str:
    """Unix seconds exact to the µs, as ``since=`` reads them."""
    return f"{ts_us // 1_000_000}.{ts_us % 1_000_000:06d}"


class SamplePoller:
    """Each call of :meth:`poll` answers the samples that reached the collector since the previous call."""

    def __init__(self, connection: Connection, fields: Sequence[int] = VIEW_FIELDS,
                 backfill_s: float = BACKFILL_S) -> None:
        self.connection = connection
        self.fields = list(fields)
        self.backfill_s = backfill_s
        self.cursor: str | None = None
        self.newest_us: int | None = None
        self.gap = False          # the last answer said samples were lost between two polls

    def _query(self, since: str | None) -> list[tuple[str, str]]:
        query = [("field", ",".join(str(f) for f in self.fields))]
        if self.cursor is not None and since is None:
            query.append(("cursor", self.cursor))
        else:
            query.append(("since", since or f"{self.backfill_s:g}s"))
        return query

    def _ask(self, since: str | None) -> dict[str, Any]:
        """One answer's data; drops each field the collector says it does not serve and asks again."""
        while self.fields:
            status, body = self.connection.get("/api/v1/samples", self._query(since))
            try:
                answer = json.loads(body)
            except ValueError:
                raise TopError(f"{self.connection.url}/api/v1/samples: not a JSON answer") from None
            if status == 200 and isinstance(answer, dict) and isinstance(answer.get("data"), dict):
                return answer["data"]
            error = str(answer.get("error", "")) if isinstance(answer, dict) else ""
            dropped = [f for f in self.fields if error.startswith(f"field: {f} ")]
            if not dropped:
                raise TopError(f"{self.connection.url}/api/v1/samples: {error or f'HTTP {status}'}")
            self.fields.remove(dropped[0])
        return {"series": []}

    def poll(self) -> list[dict[str, Any]]:
        """The new series pieces (the history API's series objects), oldest samples first within each."""
        if not self.fields:
            return []
        since = None if self.cursor is not None or self.newest_us is None else since_text(self.newest_us + 1)
        if self.cursor is None and self.newest_us is None:
            since = f"{self.backfill_s:g}s"
        pieces: list[dict[str, Any]] = []
        self.gap = False
        for _ in range(MAX_PAGES):
            data = self._ask(since)
            series = data.get("series") or []
            pieces.extend(series)
            for s in series:
                if s.get("samples"):
                    newest = max(int(pair[0]) for pair in s["samples"])
                    self.newest_us = newest if self.newest_us is None else max(self.newest_us, newest)
            self.gap = self.gap or bool(data.get("gap"))
            if isinstance(data.get("cursor"), str):
                self.cursor = data["cursor"]
            if not data.get("truncated"):
                break
            # a cut page: a cursor answer's new cursor goes on from the cut, a since answer says where
            since = None if isinstance(data.get("cursor"), str) else str(data.get("next_since"))
        return pieces

    @property
    def served(self) -> frozenset[int]:
        """The fields the collector answered for (the others are not in its counters file)."""
        return frozenset(self.fields)
