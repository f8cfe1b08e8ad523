"""The reports the collector serves (GET /reports): one built at a time, each kept per file, none of a large file.

Building a report reads the whole recording into arrays and draws its charts,
a cost paid on a request thread of the collector, so it is bounded:

* one report is built at a time; a request that finds one building waits up
  to WAIT_S for it, then is refused with a 503 and Retry-After;
* a built page is kept, per recording name, size and modification time (the
  recording's and its sidecar's), so the same report asked again costs a
  dictionary look-up; at most CACHE_BYTES of pages are kept, oldest out first;
* a recording of more than MAX_SERVED_ROWS samples is not read past its
  Parquet footer: the answer (413) says to download it and run
  ``dcgm-collector report`` on it elsewhere.  Building costs about 250 bytes
  of memory a sample at its peak (the columns, their masks and series, and
  pyarrow's table) and about 1.5 s a million samples, while on disk a sample
  takes 1 to 4 bytes, so the cap is on samples, not bytes: one build stays
  near 250 MiB and a few seconds at worst.  A recording of the default
  window (6 minutes) of 8 GPUs sampled every second is about 70,000 samples.

A build that fails (a file named like a recording that is not one, or a bug)
is counted (dcgm_collector_report_failures_total), logged once per distinct
cause, answered 500 with one line, and :meth:`ReportPages.problem` says so on
/health until a report is built again.  The HTTP answers are
:class:`ReportRefused`'s status and line: dcgm_collector.app turns them into
replies (the server knows nothing of reports).  The report's own modules (the
findings, the charts) are imported by the first build only.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from dcgm_collector.files import open_regular_file
from dcgm_collector.model import PYARROW_INSTALL_HINT
from dcgm_collector.recordings.rows import MAX_RECORDING_BYTES
from dcgm_collector.series.text import Header

__all__ = ["CACHE_BYTES", "CSP", "MAX_SERVED_ROWS", "WAIT_S", "RecordingFile", "ReportPages", "ReportRefused"]

log = logging.getLogger("dcgm_collector")

MAX_SERVED_ROWS = 1_000_000     # the most samples a recording a report is built of on request may hold
WAIT_S = 2.0                    # how long a request waits for the report being built before it is refused
RETRY_AFTER_S = 2
CACHE_BYTES = 16 * 2**20        # the built pages kept; a page of a few minutes of 8 GPUs is well under 1 MiB
MAX_CAUSES_SAID = 64            # distinct failure causes logged at ERROR; past that they go to the debug log
# the page has inline style and SVG and nothing else: no script, nothing fetched
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


class ReportRefused(Exception):
    """A report not served: ``status`` and str() (one line) are the answer, ``headers`` go with it."""

    def __init__(self, status: int, line: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(line)
        self.status = status
        self.headers = dict(headers or {})


@dataclass(frozen=True)
class RecordingFile:
    """A recording of the recorder's folder as it is now: where it is and what identifies this version of it."""

    name: str
    path: str
    version: tuple[int, ...] = field(default=())   # the file's and its sidecar's sizes and modification times


class ReportPages:
    """The HTML reports of recordings, built on request within the bounds above; safe to call from any thread."""

    def __init__(self, max_rows: int = MAX_SERVED_ROWS, wait_s: float = WAIT_S,
                 cache_bytes: int = CACHE_BYTES) -> None:
        self.max_rows = max_rows
        self.wait_s = wait_s
        self.cache_bytes = cache_bytes
        self.failures = 0
        self.built = 0
        self._building = threading.Lock()   # held while one report is built
        self._lock = threading.Lock()       # guards the cache and the problem
        self._pages: OrderedDict[tuple, bytes] = OrderedDict()
        self._problem: tuple[str, int] | None = None   # (why, failures since the last report built)
        self._said: set[str] = set()

    def page(self, recording: RecordingFile) -> bytes:
        """The report page of ``recording`` (UTF-8 HTML); ReportRefused with the answer when it is not served."""
        key = (recording.name, recording.version)
        cached = self._cached(key)
        if cached is not None:
            return cached
        _check_pyarrow()
        if not self._building.acquire(timeout=self.wait_s):
            raise ReportRefused(503, f"503 Service Unavailable: busy building another report; retry in "
                                     f"{RETRY_AFTER_S} s", {"Retry-After": str(RETRY_AFTER_S)})
        try:
            cached = self._cached(key)   # built while this request waited
            if cached is not None:
                return cached
            rows = _rows(recording.path)
            if rows is not None and rows > self.max_rows:
                raise ReportRefused(413, f"413 Content Too Large: {recording.name} holds {rows:,} samples, over the "
                                         f"{self.max_rows:,} a report is built of here: download it and run "
                                         "dcgm-collector report on it")
            body = self._build(recording)
            with self._lock:
                self._pages[key] = body
                while sum(map(len, self._pages.values())) > self.cache_bytes and len(self._pages) > 1:
                    self._pages.popitem(last=False)
            return body
        finally:
            self._building.release()

    def problem(self) -> str | None:
        """None while reports build, else one line for /health saying what failed (cleared by the next build)."""
        problem = self._problem
        if problem is None:
            return None
        why, count = problem
        return f"reports: building a report failed: {why} ({count} failure{'s' if count != 1 else ''})"

    def write_families(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None = None) -> None:
        """The reports' own family, for /metrics (series.registry.Families)."""
        parts.append(_FAILURES.get(openmetrics) + f"dcgm_collector_report_failures_total {self.failures}\n")

    # -- internals
    def _cached(self, key: tuple) -> bytes | None:
        with self._lock:
            body = self._pages.get(key)
            if body is not None:
                self._pages.move_to_end(key)
            return body

    def _build(self, recording: RecordingFile) -> bytes:
        # imported here: numpy, pyarrow and the charts are for the collector to load only once a report is asked for
        from dcgm_collector.report.page import html_page
        from dcgm_collector.report.recording import RecordingError, read_recording

        try:
            body = html_page(read_recording(recording.path)).encode()
        except Exception as error:
            # a file named like a recording that is not one says so; anything else is a bug, with its traceback
            known = isinstance(error, RecordingError)
            why = " ".join(str(error).replace(recording.path, recording.name).split()) or type(error).__name__
            if not known:
                why = f"{recording.name}: {type(error).__name__}: {why}"
            self._failed(why, error, traceback=not known)
            raise ReportRefused(500, f"500 Internal Server Error: no report: {why}") from None
        with self._lock:
            self.built += 1
            self._problem = None
        return body

    def _failed(self, why: str, error: BaseException, traceback: bool) -> None:
        with self._lock:
            self.failures += 1
            count = self._problem[1] + 1 if self._problem is not None else 1
            self._problem = (why, count)
            first = why not in self._said and len(self._said) < MAX_CAUSES_SAID
            self._said.add(why)
        if first:
            log.error("building a report failed: %s", why, exc_info=error if traceback else None)
        else:
            log.debug("building a report failed: %s (again)", why)


def _rows(path: str) -> int | None:
    """The samples the Parquet footer of ``path`` counts; None when it cannot be read (the build then says why)."""
    import pyarrow.parquet as pq

    try:
        fd = open_regular_file(path, MAX_RECORDING_BYTES)
    except OSError:
        return None
    with open(fd, "rb") as file:
        try:
            return int(pq.ParquetFile(file).metadata.num_rows)
        except Exception:   # not Parquet, truncated: read_recording names the problem in one line
            return None


def _check_pyarrow() -> None:
    try:
        import pyarrow.parquet  # noqa: F401 - only whether it is there: the report reads the file with it
    except ImportError as error:
        raise ReportRefused(501, f"501 Not Implemented: building a report needs pyarrow ({error}): "
                                 f"{PYARROW_INSTALL_HINT}") from None


_FAILURES = Header.of("dcgm_collector_report_failures_total",
                      "Reports of flight recordings (GET /reports) that could not be built.", "counter", "counter")
