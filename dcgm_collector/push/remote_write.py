"""Prometheus remote write: one sender thread per receiver URL, reading every new sample from the rings.

Each flush (--remote-write-flush-interval) a sender reads what the rings got
since its last read (:class:`~dcgm_collector.push.backlog.Backlog`), at most
--remote-write-queue-limit samples into memory, and posts them in requests of
at most --remote-write-batch-size samples.  A request that fails with 5xx,
429, no answer or no answer in time is retried with capped, jittered
exponential backoff, and nothing more is read meanwhile: the rings keep the
rest, and the sender reads on from its cursor once the receiver answers.  Any
other answer (3xx, other 4xx) is final, as it is to Prometheus: the request's
samples are dropped and counted, and each distinct cause logged once.

The sender never holds up the collector: it runs on a daemon thread, reads
the rings without locks, each request as a whole (connect to body) ends at
--remote-write-timeout (push.bounded_http), and stop() aborts an in-flight
request rather than wait for it.  An unexpected error in one round keeps its
batch for the next round, and is counted and logged once per cause.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import logging
import random
import re
import socket
import threading
import time
import traceback
import urllib.parse
from collections import Counter as Tally
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timezone
from typing import TYPE_CHECKING

from dcgm_collector.files import FileRefused, read_regular_file
from dcgm_collector.push.backlog import Backlog
from dcgm_collector.push.bounded_http import BoundedResponse, Watchdog
from dcgm_collector.push.wire import SeriesSamples, compress, encode_write_request
from dcgm_collector.series.samples import Labels, SampleModel
from dcgm_collector.series.text import Header, label_text

if TYPE_CHECKING:
    import ssl

__all__ = ["RemoteWriteError", "RemoteWriteFamilies", "RemoteWriteOptions", "RemoteWriter",
           "render_remote_write_metrics", "retry_after_s"]

log = logging.getLogger("dcgm_collector")

MIN_BACKOFF_S = 0.05
MAX_BACKOFF_S = 5.0
MAX_RETRY_AFTER_S = 60.0   # the most a receiver's Retry-After may hold a sender back
STOP_WAIT_S = 0.5      # what stop() gives the thread; an in-flight request is aborted, not awaited
MAX_SECRET_BYTES = 64 << 10   # a password or bearer token file; far larger is not a secret but a mistake


class RemoteWriteError(Exception):
    """A remote-write setting that cannot work; str() is the one line the user sees."""


@dataclass(frozen=True)
class RemoteWriteOptions:
    """The --remote-write-* flags for one receiver."""

    url: str
    username: str | None = None
    password_file: str | None = None
    bearer_token_file: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    batch_size: int = 2000
    flush_interval_s: float = 1.0
    queue_limit: int = 100_000
    timeout_s: float = 10.0
    labels: Labels = ()


def shown_url(url: str) -> str:
    """The URL without user and password, as logs and the url label show it."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _read_secret(path: str, flag: str) -> str:
    # re-read for every request: a FIFO or a device put in its place must not hold the sender for ever
    try:
        return read_regular_file(path, MAX_SECRET_BYTES).decode("utf-8").strip()
    except FileRefused as refused:
        raise RemoteWriteError(f"{flag} {path}: cannot read it: {refused.problem}") from None
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or error
        raise RemoteWriteError(f"{flag} {path}: cannot read it: {why}") from None


def _tls_context(options: RemoteWriteOptions) -> ssl.SSLContext:
    import ssl  # an https URL only: OpenSSL is about 5 MiB resident (see cli._import_http_client_without_openssl)

    try:
        context = ssl.create_default_context(cafile=options.ca_file)
    except (OSError, ssl.SSLError) as error:
        raise RemoteWriteError(f"--remote-write-ca-file {options.ca_file}: {getattr(error, 'strerror', None) or error}"
                               ) from None
    if options.cert_file or options.key_file:
        if not (options.cert_file and options.key_file):
            raise RemoteWriteError("--remote-write-cert-file and --remote-write-key-file go together")
        try:
            context.load_cert_chain(options.cert_file, options.key_file)
        except (OSError, ssl.SSLError) as error:
            raise RemoteWriteError(f"--remote-write-cert-file {options.cert_file} / --remote-write-key-file "
                                   f"{options.key_file}: {getattr(error, 'strerror', None) or error}") from None
    return context


@dataclass
class _Batch:
    series: list[SeriesSamples]
    samples: int


@dataclass(frozen=True)
class _Answer:
    """What one request got: an HTTP status, or none (``code`` says why: "network" or "timeout")."""

    status: int | None
    code: str           # the requests_failed_total label, should it fail
    text: str           # the first line of the body, or why no answer came
    retry_after_s: float | None = None
    location: str = ""

    @property
    def what(self) -> str:
        """The failure in a few words, as the log and /health give it."""
        if self.status is not None:
            return f"HTTP {self.status}"
        return self.text if self.code == "timeout" else f"no answer ({self.text.split(':')[0]})"


def _recoverable(status: int) -> bool:
    """Whether a non-2xx answer is worth sending the request again for: Prometheus' own rule (5xx and 429)."""
    return 500 <= status <= 599 or status == 429


class RemoteWriter:
    """One receiver: its thread, its backlog cursor, its counts (the self-metrics)."""

    def __init__(self, options: RemoteWriteOptions, models: Callable[[], Sequence[SampleModel]], version: str,
                 forget_after_s: float = 3600.0) -> None:
        self.options = options
        self.url = shown_url(options.url)
        parts = urllib.parse.urlsplit(options.url)
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname or "", parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._tls = _tls_context(options) if self._https else None
        if options.password_file and not options.username:
            raise RemoteWriteError("--remote-write-password-file needs --remote-write-username")
        if options.username and options.bearer_token_file:
            raise RemoteWriteError("give --remote-write-username or --remote-write-bearer-token-file, not both")
        self._password = _read_secret(options.password_file, "--remote-write-password-file") \
            if options.password_file else ""
        self._token = _read_secret(options.bearer_token_file, "--remote-write-bearer-token-file") \
            if options.bearer_token_file else None
        if parts.username is not None and not options.username:   # user:password@ in the URL
            self._user_in_url = (urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or ""))
        else:
            self._user_in_url = None
        self._models = models
        self._user_agent = f"dcgm-collector/{version}"
        self._backlog = Backlog(extra=options.labels, forget_after_s=forget_after_s)
        self._pending: deque[SeriesSamples] = deque()
        self._stop = threading.Event()
        self._connection: http.client.HTTPConnection | None = None
        self._watchdog = Watchdog(f"remote-write deadline {self.url}")
        self._thread: threading.Thread | None = None
        self._causes_logged: set[str] = set()
        # the batch being delivered: off the pending queue, kept here until the receiver takes or refuses it, so
        # that an unexpected error on the way loses nothing
        self._batch: _Batch | None = None
        self._failing: tuple[str, float] | None = None   # (what, since when, monotonic) until a request succeeds
        # the self-metrics (written by the thread, read by scrapes: plain ints)
        self.sent = 0
        self.retried = 0
        self.dropped: Tally[str] = Tally()
        self.failed: Tally[str] = Tally()
        self.newest_sent_ms = 0
        self.failures = 0      # rounds cut short by an unexpected error (its batch kept for the next round)

    # -- life
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"remote-write {self.url}", daemon=True)
        self._thread.start()

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Stop the thread, waiting at most ``wait_s`` for it (it is a daemon thread)."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(wait_s)

    def request_stop(self) -> None:
        """Tell the thread to stop; a request in flight is cut off rather than waited for."""
        self._stop.set()
        self._cut_off()

    def _cut_off(self) -> None:
        """End the request in flight now: its socket is shut, so whatever http.client waits for ends."""
        connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            try:
                # the plain socket's shutdown, also under TLS: SSLSocket.shutdown() would unwrap it under the
                # sender's feet, which then fails with a ValueError instead of the end of the stream
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    # -- what /metrics shows
    @property
    def queued(self) -> int:
        batch = self._batch
        return sum(len(s.ts_ms) for s in list(self._pending)) + (batch.samples if batch is not None else 0)

    @property
    def lost(self) -> int:
        return self._backlog.lost

    def lag_s(self, now_s: float | None = None) -> float | None:
        """Seconds from the newest sample the receiver took to now (None until one is sent)."""
        if not self.newest_sent_ms:
            return None
        return max(0.0, (time.time() if now_s is None else now_s) - self.newest_sent_ms / 1000)

    def problem(self, now_s: float | None = None) -> str | None:
        """None while the last request succeeded (or none was made), else one line saying since when it fails
        and how it failed last (``now_s`` is monotonic)."""
        failing = self._failing
        if failing is None:
            return None
        what, since = failing
        seconds = (time.monotonic() if now_s is None else now_s) - since
        return f"remote write to {self.url} failing for {seconds:.0f} s: {what}"

    # -- the thread
    def _run(self) -> None:
        interval = self.options.flush_interval_s
        while not self._stop.is_set():
            started = time.monotonic()
            full = False
            try:
                if self._batch is None and not self._pending:
                    models = self._models()
                    self._pending.extend(self._backlog.read(models, self.options.queue_limit))
                    full = self._backlog.more   # a backlog: read on at once once this is sent
                while (self._batch is not None or self._pending) and not self._stop.is_set():
                    if self._batch is None:
                        self._batch = self._next_batch()
                    self._deliver(self._batch)
            except Exception as error:   # a sender must outlive any surprise; the collector keeps serving
                full = False   # the next round after the flush interval, not at once
                self._unexpected(error)
            if not full:
                self._stop.wait(max(0.0, interval - (time.monotonic() - started)))
        self._watchdog.close()
        self._close()

    def _unexpected(self, error: Exception) -> None:
        self.failures += 1
        self._note_failure(f"unexpected error ({type(error).__name__})")
        frame = traceback.extract_tb(error.__traceback__)[-1:]
        where = f" (at {frame[0].filename.rsplit('/', 1)[-1]}:{frame[0].lineno} in {frame[0].name})" if frame else ""
        message = " ".join(str(error).split())[:300]
        self._log_once(f"error:{type(error).__name__}:{re.sub(r'[0-9]+', 'N', message)}{where}", logging.ERROR,
                       "remote write to %s: unexpected error: %s: %s%s; the batch is kept and sent again next round "
                       "(further errors of this kind are counted, not logged)", self.url, type(error).__name__,
                       message, where)

    def _next_batch(self) -> _Batch:
        """Up to batch_size samples off the front of the pending series (a long series is split)."""
        room = self.options.batch_size
        series: list[SeriesSamples] = []
        while self._pending and room > 0:
            head = self._pending[0]
            if len(head.ts_ms) <= room:
                series.append(self._pending.popleft())
                room -= len(head.ts_ms)
            else:
                series.append(SeriesSamples(head.labels, head.ts_ms[:room], head.values[:room]))
                self._pending[0] = SeriesSamples(head.labels, head.ts_ms[room:], head.values[room:])
                room = 0
        return _Batch(series, self.options.batch_size - room)

    def _deliver(self, batch: _Batch) -> None:
        """Post the batch until the receiver takes or refuses it (or stop()); then it is no longer kept."""
        body = compress(encode_write_request(batch.series))
        backoff = MIN_BACKOFF_S
        while not self._stop.is_set():
            answer = self._post(body)
            if answer.status is not None and 200 <= answer.status < 300:
                newest_ms = max(self.newest_sent_ms, max(int(s.ts_ms[-1]) for s in batch.series))
                self._batch, self._failing = None, None
                self.sent += batch.samples
                self.newest_sent_ms = newest_ms
                return
            self.failed[answer.code] += 1
            self._note_failure(answer.what)
            if answer.status is not None and not _recoverable(answer.status):
                self._batch = None
                self.dropped["rejected"] += batch.samples
                self._log_rejection(answer, batch)
                return
            self.retried += batch.samples
            self._log_once(f"retry:{answer.what}", logging.WARNING, "remote write to %s: %s; retrying with backoff "
                           "(further failures of this kind are counted, not logged)", self.url,
                           f"HTTP {answer.status}: {answer.text}" if answer.status is not None else answer.text)
            # jittered, so that senders do not retry in step; a receiver that says when to come back is obeyed
            wait = answer.retry_after_s if answer.retry_after_s is not None else random.uniform(backoff / 2, backoff)
            self._stop.wait(max(MIN_BACKOFF_S, wait))
            backoff = min(MAX_BACKOFF_S, backoff * 2)

    def _note_failure(self, what: str) -> None:
        failing = self._failing
        self._failing = (what, failing[1] if failing is not None else time.monotonic())

    def _post(self, body: bytes) -> _Answer:
        """One request, ended by the watchdog at --remote-write-timeout whatever the receiver does."""
        headers = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
                   "X-Prometheus-Remote-Write-Version": "0.1.0", "User-Agent": self._user_agent}
        headers.update(self._authorization())
        timeout = self.options.timeout_s
        self._watchdog.arm(timeout, self._cut_off)
        try:
            answer = self._exchange(body, headers)
        except (OSError, http.client.HTTPException) as error:
            answer = _Answer(None, "timeout" if isinstance(error, TimeoutError) else "network",
                             f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
        finally:
            expired = self._watchdog.disarm()
        if answer.status is None:
            self._close()   # its socket is shut, or in an unknown state
            if expired or answer.code == "timeout":
                answer = _Answer(None, "timeout", f"timed out after {timeout:g} s (--remote-write-timeout)")
        elif expired:
            self._close()   # shut while the body came; the status and headers had come in time
        return answer

    def _exchange(self, body: bytes, headers: dict[str, str]) -> _Answer:
        connection = self._connect()
        if connection.sock is None:
            connection.connect()
            # a cut-off while connecting found no socket to shut: a connect that ends late ends here
            if self._watchdog.expired or self._stop.is_set():
                raise TimeoutError("connect") if self._watchdog.expired else ConnectionAbortedError("stopping")
        connection.request("POST", self._path, body=body, headers=headers)
        response = connection.getresponse()
        if self._watchdog.expired:   # a status line or header cut off at the deadline reads as a whole one
            raise TimeoutError("the answer's head")
        try:
            text = response.read(4096).decode("utf-8", "replace")
        except (OSError, ValueError, http.client.HTTPException):   # a garbled chunk size is a ValueError
            text = ""   # the status is the answer; the body would only have explained it
            self._close()
        status = response.status
        # an interim answer other than 100 (102, 103) comes back as the answer, its request's real one still
        # unread on the connection: a next request there would read that instead of its own
        if response.will_close or not response.isclosed() or status < 200:
            self._close()
        retry_after = retry_after_s(response.getheader("Retry-After")) if status in (429, 503) else None
        location = " ".join((response.getheader("Location") or "").split())[:300]
        return _Answer(status, str(status), (text.strip().splitlines() or [""])[0][:300], retry_after, location)

    def _authorization(self) -> dict[str, str]:
        options = self.options
        if options.bearer_token_file:
            try:   # re-read each time: a mounted token is rotated under us
                self._token = _read_secret(options.bearer_token_file, "--remote-write-bearer-token-file")
            except RemoteWriteError as error:
                self._log_once(f"token:{error}", logging.WARNING, "%s; using the token read before", error)
            return {"Authorization": f"Bearer {self._token}"}
        user = (options.username, self._password) if options.username else self._user_in_url
        if user is None:
            return {}
        return {"Authorization": "Basic " + base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()}

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            timeout = self.options.timeout_s
            if self._https:
                self._connection = http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                                               context=self._tls)
            else:
                self._connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
            self._connection.response_class = BoundedResponse
        return self._connection

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _log_rejection(self, answer: _Answer, batch: _Batch) -> None:
        cause = re.sub(r"\d+", "N", answer.text)   # one cause whatever the timestamps and counts in it
        said = f"HTTP {answer.status}" + (f": {answer.text}" if answer.text else "")
        if answer.status is not None and 300 <= answer.status < 400:
            said += f" (a redirect, not followed: Location: {answer.location or 'none given'})"
            cause += f" -> {answer.location}"
        first = batch.series[0]
        self._log_once(f"{answer.status}:{cause}", logging.ERROR,
                       "remote write to %s: %s; dropped %d samples of %d series (the first: %s); other "
                       "batches are still sent, and further refusals of this kind are counted, not logged",
                       self.url, said, batch.samples, len(batch.series), self._backlog.describe(first.labels))

    def _log_once(self, cause: str, level: int, message: str, *args: object) -> None:
        if cause in self._causes_logged or len(self._causes_logged) > 100:
            return
        self._causes_logged.add(cause)
        log.log(level, message, *args)


def retry_after_s(value: str | None, now_s: float | None = None) -> float | None:
    """The seconds a Retry-After header asks a sender to wait, capped at MAX_RETRY_AFTER_S: delay-seconds (ASCII
    digits only) or an HTTP-date; None for anything else (the sender's own backoff then), never an exception."""
    value = (value or "").strip()
    if not value:
        return None
    if re.fullmatch(r"[0-9]+", value):   # not str.isdigit(): it takes '²' and '١', which int() does not
        return MAX_RETRY_AFTER_S if len(value) > 6 else min(float(int(value)), MAX_RETRY_AFTER_S)
    if not re.search(r"[A-Za-z]{3}", value):   # an HTTP-date names its month; a bare number is not one
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:   # "-0000": an HTTP-date is always GMT
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - (time.time() if now_s is None else now_s)
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None
    return min(max(0.0, seconds), MAX_RETRY_AFTER_S)


# ---- self-metrics ----------------------------------------------------------------------------

_HEADERS = {
    "samples_sent_total": ("counter", "Samples the remote-write receiver accepted."),
    "samples_dropped_total": ("counter", "Samples never delivered, by reason: rejected (the receiver refused "
                              "the request with a 4xx), overwritten (a ring dropped them before they were read)."),
    "samples_retried_total": ("counter", "Samples sent again after a 5xx, a 429 or no answer."),
    "requests_failed_total": ("counter", "Remote-write requests that failed, by HTTP status (network: no answer, "
                              "timeout: no whole answer within --remote-write-timeout)."),
    "failures_total": ("counter", "Sender rounds cut short by an unexpected error (logged once per cause); the "
                     "batch is kept and sent again."),
    "queue_samples": ("gauge", "Samples read from the rings and not yet delivered."),
    "lag_seconds": ("gauge", "Seconds from the newest sample the receiver accepted to now."),
}


class RemoteWriteFamilies:
    """The senders' dcgm_collector_remote_write_* families as /metrics writes them (series.registry.Families)."""

    def __init__(self, writers: Sequence[RemoteWriter]) -> None:
        self.writers = tuple(writers)

    def write_families(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None = None) -> None:
        parts.append(render_remote_write_metrics(self.writers, openmetrics, None if now_us is None else now_us / 1e6))


def render_remote_write_metrics(writers: Sequence[RemoteWriter], openmetrics: bool, now_s: float | None = None
                                ) -> str:
    """The dcgm_collector_remote_write_* families of these senders (text format or OpenMetrics)."""
    if not writers:
        return ""
    now_s = time.time() if now_s is None else now_s
    parts: list[str] = []

    def family(short: str, rows: list[tuple[list[tuple[str, str]], object]]) -> None:
        kind, help_text = _HEADERS[short]
        name = f"dcgm_collector_remote_write_{short}"
        parts.append(Header.of(name, help_text, kind, kind).get(openmetrics))
        parts.extend(f"{name}{{{label_text(labels)}}} {value}\n" for labels, value in rows)

    family("samples_sent_total", [([("url", w.url)], w.sent) for w in writers])
    family("samples_dropped_total", [([("url", w.url), ("reason", reason)], n) for w in writers
                                     for reason, n in (("rejected", w.dropped["rejected"]), ("overwritten", w.lost))])
    family("samples_retried_total", [([("url", w.url)], w.retried) for w in writers])
    failed = [([("url", w.url), ("code", code)], n) for w in writers for code, n in sorted(w.failed.items())]
    if failed:
        family("requests_failed_total", failed)
    family("failures_total", [([("url", w.url)], w.failures) for w in writers])
    family("queue_samples", [([("url", w.url)], w.queued) for w in writers])
    lags = [([("url", w.url)], f"{lag:f}") for w in writers if (lag := w.lag_s(now_s)) is not None]
    if lags:
        family("lag_seconds", lags)
    return "".join(parts)
