"""The flight recorder: on an XID, a lost GPU, a failed health check or a request, write the samples around it.

Every sample is in the rings for --retention; the recorder keeps the ones
around an incident on disk before they age out.  A trigger opens a
*pending* recording of the window [trigger - before, trigger + after]; it is
written once the "after" part has passed (so it holds what followed), by the
recorder's own thread.  Triggers that come while a recording of the same
target is pending join it (an XID storm is one file): they add their GPUs
and push its end later, at most to MAX_AFTER_S after the first trigger.  The
sidecar lists the first MAX_LISTED_TRIGGERS of them and counts the rest, so a
flood of triggers costs no more memory than a hundred.  A target has at most
one pending recording, so triggers start at most one recording per target
every --recorder-after (+ WRITE_MARGIN_S) seconds, however many come.

Triggers come in through :meth:`Recorder.trigger`: each sampler's trigger
reader (dcgm_collector.collect.readers.triggers, which app.py gives every
target) hands it new XID entries in the event ring, GPUs the sampler lost, and
health incidents that turned FAIL, as the sampler sees them; SIGUSR2 and
``POST /recorder`` (both in dcgm_collector.app) call it directly.  The recorder
polls nothing: its thread writes each recording once it is due, reading the
target's sample model from the registry (dcgm_collector.series.registry), and
its own families go into /metrics through the registry too.

When the collector stops, a pending recording is written at once with
the samples it has so far.

Disk use is bounded by --recorder-max-bytes: after each recording the
oldest are removed (with their sidecars) until the directory is under it.
Only regular files named like recordings count; an entry the recorder cannot
remove is a failure, and the others still go.

The recorder's thread outlives any failure of one round (a write, the disk
bound, listing the directory): each is counted in
dcgm_collector_recorder_failures_total, logged once per distinct cause, and
:meth:`Recorder.problem` says what is failing until the next recording is
written (/health notes it).  The landing page and /metrics read the
directory's index (dcgm_collector.push.recording_index), never the directory.
"""

from __future__ import annotations

import contextlib
import html
import logging
import os
import re
import socket
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from dcgm_collector.files import size_text
from dcgm_collector.model import RECORDING_FORMAT_VERSION, RECORDING_SIDECAR_SUFFIX
from dcgm_collector.push.options import DEFAULT_AFTER_S, DEFAULT_BEFORE_S, DEFAULT_MAX_BYTES, MAX_AFTER_S
from dcgm_collector.push.recording_file import (
    RECORDING_PREFIX,
    RECORDING_SUFFIX,
    TEMP_PREFIX,
    Window,
    load_pyarrow,
    window_columns,
    write_recording,
)
from dcgm_collector.push.recording_index import RESCAN_EVERY_S, RecordingIndex, is_recording_name
from dcgm_collector.push.recording_users import users_of
from dcgm_collector.series.registry import Registry, Source
from dcgm_collector.series.samples import SampleModel
from dcgm_collector.series.text import Header
from dcgm_collector.series.triggers import Trigger

__all__ = ["DEFAULT_AFTER_S", "DEFAULT_BEFORE_S", "DEFAULT_MAX_BYTES", "MAX_AFTER_S", "Recorder", "RecorderError",
           "Trigger", "check_directory"]

log = logging.getLogger("dcgm_collector")

# a recording is written this long after its window ends, so the sampler has drained the window's last samples
WRITE_MARGIN_S = 1.0
# how long the collector's stop waits for the pending recordings to be written: well inside the 2 s a stop
# may take; past it the process exits and the half-written temporary file is removed at the next start
STOP_WAIT_S = 0.5
MAX_LISTED_TRIGGERS = 100    # the triggers a sidecar lists; it counts those that joined after them
MAX_CAUSES_SAID = 256        # distinct failure causes logged at ERROR; past that they go to the debug log
# the longest the recorder's thread waits between looks at what is due (a trigger wakes it at once), so that a
# step of the wall clock or a failed round holds a recording back no longer than this
IDLE_WAIT_S = 1.0


class RecorderError(Exception):
    """A recorder flag that cannot work; str() is one line naming it."""


@dataclass
class _Pending:
    target: str
    name: str
    first: Trigger
    since_s: float
    until_s: float
    latest_until_s: float         # the most a later trigger may push until_s to
    gpus: frozenset[int] | None
    triggers: list[Trigger] = field(default_factory=list)   # the first MAX_LISTED_TRIGGERS
    more_triggers: int = 0                                   # those that joined after them
    earlier: list[Trigger] = field(default_factory=list)    # triggers inside its window that came before its first


def check_directory(directory: str) -> None:
    """RecorderError unless ``directory`` is (or can be made) a writable directory."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise RecorderError(f"--recorder-dir {directory}: cannot create it: {error.strerror or error}") from None
    if not os.path.isdir(directory):
        raise RecorderError(f"--recorder-dir {directory}: not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise RecorderError(f"--recorder-dir {directory}: not writable by this process")


def _iso(time_s: float) -> str:
    return datetime.fromtimestamp(time_s, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _listed(trigger: Trigger) -> dict[str, Any]:
    """A trigger as a sidecar lists it."""
    out: dict[str, Any] = {"kind": trigger.kind, "time": _iso(trigger.time_s), "detail": trigger.detail}
    if trigger.gpus is not None:
        out["gpus"] = sorted(trigger.gpus)
    return out


def _stamp(time_s: float) -> str:
    return datetime.fromtimestamp(time_s, timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


class Recorder:
    """Writes flight recordings of the windows around the triggers it is given into ``directory``.

    ``start(registry)`` registers the recorder's families with the registry and
    reads the collector's targets from it (each a series.registry.Source: a
    name, and its view and sample model while it samples) when a trigger comes
    and when a recording is written; triggers that come before it starts wait
    for its thread.  ``name_targets``: each file names its target (the collector
    samples several hostengines), as it also does whenever the registry holds
    several targets.  stop() writes the pending recordings, cut at the stop, waiting
    for them at most STOP_WAIT_S (past that the process may exit mid-write: the
    temporary file is removed at the next start, and no partial recording is left).
    """

    def __init__(self, directory: str, *, before_s: float = DEFAULT_BEFORE_S, after_s: float = DEFAULT_AFTER_S,
                 max_bytes: int = DEFAULT_MAX_BYTES, retention_s: float | None = None,
                 counters_path: str = "", version: str = "", host: str | None = None,
                 name_targets: bool = False) -> None:
        load_pyarrow()   # PyarrowMissing now, at start-up, not at the first incident
        check_directory(directory)
        self.directory = directory
        self.before_s = float(before_s)
        self.after_s = float(after_s)
        longest = max(self.after_s, MAX_AFTER_S)
        if retention_s is not None:
            # the rings must still hold the window's start when the recording is written
            longest = max(self.after_s, min(longest, retention_s - self.before_s - WRITE_MARGIN_S))
        self.max_after_s = longest
        self.max_bytes = int(max_bytes)
        self.counters_path = counters_path
        self.version = version
        self.host = host or socket.gethostname()
        self.name_targets = name_targets
        self.written = 0
        self.failures = 0
        self._targets: Callable[[], Sequence[Source]] = tuple
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._recent: dict[str, deque[Trigger]] = {}   # each target's latest triggers, for a new recording's earlier
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.index = RecordingIndex(directory)   # what the landing page and /metrics read
        self._problem: tuple[str, str, int] | None = None   # (what, why, failures since), until a write succeeds
        self._said: set[tuple[str, str]] = set()             # failure causes already logged
        self._remove_leftovers()

    # -- life cycle
    def start(self, registry: Registry) -> None:
        """Register the recorder's families and start its thread, which writes the recordings when due."""
        registry.register(self)
        self._targets = registry.sources
        self._thread = threading.Thread(target=self._run, name="dcgm-collector-recorder", daemon=True)
        self._thread.start()

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Write the pending recordings with the samples so far, waiting at most ``wait_s`` for them."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(wait_s)

    # -- triggers
    def trigger(self, kind: str, detail: str, gpus: Sequence[int] | None = None, target: str | None = None,
                time_s: float | None = None) -> list[str]:
        """Record the window around now (or ``time_s``); the names of the files that will hold it.

        Safe from any thread (not from a signal handler: it takes a lock).
        """
        when = time.time() if time_s is None else time_s
        chosen = frozenset(int(g) for g in gpus) if gpus is not None else None
        names = [t.name for t in self._targets()] if target is None else [target]
        if not names:   # no target yet (still starting): the embedded one will be named after the host
            names = [self.host]
        trigger = Trigger(kind, when, chosen, detail, target)
        several = self.name_targets or len(self._targets()) > 1   # then each file names its target
        files = [self._join(name, trigger, several) for name in names]
        self._wake.set()
        return files

    def _join(self, target: str, trigger: Trigger, name_target: bool) -> str:
        with self._lock:
            pending = self._pending.get(target)
            recent = self._recent.setdefault(target, deque(maxlen=MAX_LISTED_TRIGGERS))
            if pending is None:
                suffix = f"-{_safe(target)}" if name_target else ""
                name = f"{RECORDING_PREFIX}{_stamp(trigger.time_s)}-{trigger.kind}{suffix}{RECORDING_SUFFIX}"
                pending = _Pending(target, name, trigger, trigger.time_s - self.before_s,
                                   trigger.time_s + self.after_s, trigger.time_s + self.max_after_s, trigger.gpus)
                # what came before it in its window (an early warning before an XID) is part of its story
                pending.earlier = [t for t in recent if pending.since_s <= t.time_s < trigger.time_s]
                self._pending[target] = pending
                log.info("flight recorder: %s (%s); writing %s once the %g s after it have passed",
                         trigger.detail, trigger.kind, name, self.after_s)
            else:
                pending.until_s = min(max(pending.until_s, trigger.time_s + self.after_s), pending.latest_until_s)
                pending.gpus = None if pending.gpus is None or trigger.gpus is None else pending.gpus | trigger.gpus
            recent.append(trigger)
            if len(pending.triggers) < MAX_LISTED_TRIGGERS:
                pending.triggers.append(trigger)
            else:
                pending.more_triggers += 1
            return pending.name

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def problem(self) -> str | None:
        """None while the recorder works, else one line saying what is failing (cleared by the next write)."""
        problem = self._problem
        if problem is None:
            return None
        what, why, count = problem
        return f"flight recorder: {what} failed: {why} ({count} failure{'s' if count != 1 else ''})"

    def _failed(self, what: str, error: BaseException, line: str = "") -> None:
        """One failure of the recorder's work: counted, logged once per distinct cause, noted for /health.

        ``line`` is what the log says failed (default: "<what> failed").
        """
        why = _why(error, name_file=what != "writing")   # a write's temporary file name says nothing
        self.failures += 1
        problem = self._problem
        self._problem = (what, why, problem[2] + 1 if problem is not None and problem[0] == what else 1)
        cause = (what, why)
        line = line or f"{what} failed"
        if cause in self._said or len(self._said) >= MAX_CAUSES_SAID:
            log.debug("flight recorder: %s: %s (again)", line, why)
            return
        self._said.add(cause)
        # a bug (not an OSError) gets its traceback, once
        log.error("flight recorder: %s: %s", line, why, exc_info=not isinstance(error, OSError))

    def _succeeded(self, what: str) -> None:
        # a cause that comes back after this success is news again
        self._said = {cause for cause in self._said if cause[0] != what}
        problem = self._problem
        if problem is not None and (what == "writing" or problem[0] == what):
            self._problem = None
            if problem[0] == what:
                log.info("flight recorder: %s works again after %d failure%s", what, problem[2],
                         "s" if problem[2] != 1 else "")

    # -- the recorder's thread
    def _run(self) -> None:
        next_scan = 0.0
        while True:
            self._wake.clear()   # before looking: a trigger or a stop from here on cuts the wait short
            if self._stop.is_set():
                break
            try:
                now = time.monotonic()
                if now >= next_scan:
                    next_scan = now + RESCAN_EVERY_S
                    self._scan()
                for pending in self._due(time.time()):
                    self._write(pending)
                wait = min(next_scan - time.monotonic(), self._next_due() - time.time(), IDLE_WAIT_S)
            except Exception as error:   # a bug of one round must not end the recorder for good
                self._failed("a round of the recorder", error)
                wait = IDLE_WAIT_S
            self._wake.wait(max(0.05, wait))
        # stopping: what a pending recording holds so far is kept rather than lost with the process
        now = time.time()
        with self._lock:
            cut, self._pending = list(self._pending.values()), {}
        for pending in cut:
            pending.until_s = min(pending.until_s, now)
            log.info("flight recorder: stopping: writing %s with the samples up to now", pending.name)
            try:
                self._write(pending)
            except Exception as error:
                self._failed("writing", error, f"cannot write {pending.name}")

    def _due(self, now_s: float) -> list[_Pending]:
        with self._lock:
            due = [p for p in self._pending.values() if p.until_s + WRITE_MARGIN_S <= now_s]
            for p in due:
                del self._pending[p.target]
            return due

    def _next_due(self) -> float:
        with self._lock:
            return min((p.until_s + WRITE_MARGIN_S for p in self._pending.values()), default=float("inf"))

    # -- writing
    def _write(self, pending: _Pending) -> None:
        try:
            source = next((t for t in self._targets() if t.name == pending.target), None)
            found = source.series() if source is not None else None
            if found is None:
                raise RecorderError(f"the target {pending.target} is not sampling")
            model = found.model
            window = Window(int(pending.since_s * 1e6), int(pending.until_s * 1e6), pending.gpus)
            columns = window_columns(model, window)
            sidecar = self._sidecar(pending, model, len(columns["time"]))
            size = write_recording(self.directory, pending.name, columns, sidecar)
        except Exception as error:
            self._failed("writing", error, f"cannot write {pending.name} into {self.directory}")
            return
        self.written += 1
        self._succeeded("writing")
        log.info("flight recorder: wrote %s (%d samples, %.1f KiB)", os.path.join(self.directory, pending.name),
                 len(columns["time"]), size / 1024)
        first = pending.first
        self.index.add(pending.name, size, f"{first.detail} ({first.kind}) at {_iso(first.time_s)}")
        try:
            self._bound_disk_use(keep=pending.name)
        except Exception as error:
            self._failed("bounding the disk use", error)

    def _sidecar(self, pending: _Pending, model: SampleModel, rows: int) -> dict[str, Any]:
        first = pending.first
        gpus = [g for g in model.gpus if pending.gpus is None or g.gpu_id in pending.gpus]
        users = users_of(model, [g.gpu_id for g in gpus], int(pending.since_s * 1e6))
        return {
            "format_version": RECORDING_FORMAT_VERSION,
            "trigger": {
                "kind": first.kind,
                "time": _iso(first.time_s),
                "gpus": sorted(first.gpus) if first.gpus is not None else [g.gpu_id for g in model.gpus],
                "detail": first.detail,
            },
            # the triggers that joined this recording while it was pending (an XID storm), the first included
            "triggers": [_listed(t) for t in pending.triggers],
            # the triggers inside its window that came before the first (the early warnings before a failure)
            **({"earlier": [_listed(t) for t in pending.earlier]} if pending.earlier else {}),
            # how many joined past the first MAX_LISTED_TRIGGERS: "and N more"
            **({"more_triggers": pending.more_triggers} if pending.more_triggers else {}),
            "host": pending.target,
            # each GPU with what used it in the window: pods and jobs on its series, processes (--processes)
            "gpus": [{"gpu": g.gpu_id, "model": g.name, "uuid": g.uuid, "pci_bus_id": g.pci_bus_id,
                      **{k: v for k, v in users[g.gpu_id].items() if v}} for g in gpus],
            "counters": self.counters_path,
            "since": _iso(pending.since_s),
            "until": _iso(pending.until_s),
            "rows": rows,
            "collector_version": self.version,
        }

    # -- disk use and the listing
    def _scan(self) -> None:
        try:
            self.index.scan()
        except OSError as error:
            self._failed("listing the directory", error, f"cannot list {self.directory}")
            return
        self._succeeded("listing the directory")

    def disk_bytes(self) -> int:
        """What the recordings take, with their sidecars, as the recorder's thread last saw."""
        return self.index.listing.bytes

    def _bound_disk_use(self, keep: str) -> None:
        if not self.index.scanned:
            self.index.scan()
        total = self.index.total_bytes
        try:
            self._remove_oldest(total, keep)
        finally:
            self.index.publish()   # once for the batch: each publish walks the whole index

    def _remove_oldest(self, total: int, keep: str) -> None:
        for name, size in self.index.oldest_first():
            if total <= self.max_bytes:
                return
            if name == keep:   # the newest is kept even alone over the bound: it is why the recorder is on
                continue
            try:
                removed = self._remove_recording(name)
            except OSError as error:   # not the recorder's to remove (immutable, read-only): the others still go
                self._failed("removing an old recording", error)
                continue
            total -= size
            if removed:
                log.info("flight recorder: removed %s: the recordings exceeded --recorder-max-bytes (%s)", name,
                         size_text(self.max_bytes))

    def _remove_recording(self, name: str) -> bool:
        """Remove a recording and then its sidecar, each only while it is a regular file (never a link's target).

        Whether the recording went; one no longer there, or replaced by something else, leaves the index too.
        """
        removed = False
        for path in (name, name + RECORDING_SIDECAR_SUFFIX):
            full = os.path.join(self.directory, path)
            try:
                if stat.S_ISREG(os.lstat(full).st_mode):   # replaced since the scan by something not ours: kept
                    os.remove(full)
                    removed = removed or path == name
            except FileNotFoundError:
                pass
            except OSError as error:
                if path == name:
                    raise
                self._failed("removing an old recording", error)   # the recording went; its sidecar stays
            if path == name:
                self.index.remove(name)
        return removed

    def _remove_leftovers(self) -> None:
        """Temporary files a crash left mid-write: never a recording, so removed."""
        with contextlib.suppress(OSError), os.scandir(self.directory) as entries:
            for entry in entries:
                if entry.name.startswith(TEMP_PREFIX) and entry.name.endswith(".tmp") \
                        and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.remove(entry.path)

    def read_recording(self, name: str) -> bytes | None:
        """A recording's bytes, for the landing page's download links; None unless ``name`` is one in the folder.

        Only a plain file named as a recording (and only of the characters the
        recorder's names use), directly in the folder: no other name, path or
        link is ever opened.
        """
        path = self._path_of(name)
        if path is None:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return file.read()

    def recording_version(self, name: str) -> tuple[str, tuple[int, ...]] | None:
        """For GET /reports: the recording's path and what tells this version of it and its sidecar apart
        (their sizes and modification times, which key the built page); None as for read_recording.

        The report reads the file through dcgm_collector.recordings, which opens it as safely."""
        path = self._path_of(name)
        if path is None:
            return None
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        try:
            side = os.lstat(path + RECORDING_SIDECAR_SUFFIX)
            side_version = (side.st_size, side.st_mtime_ns) if stat.S_ISREG(side.st_mode) else (0, 0)
        except OSError:
            side_version = (0, 0)
        return path, (info.st_size, info.st_mtime_ns, *side_version)

    def _path_of(self, name: str) -> str | None:
        """The path of ``name`` in the folder if it is a name the recorder gives (no path, no other characters)."""
        if not is_recording_name(name) or not _FILE_NAME.fullmatch(name):
            return None
        return os.path.join(self.directory, name)

    def landing_html(self) -> str:
        """The landing page's section: the newest recordings with their size and trigger, from the index, each
        linked to its download (/recordings) and its report (/reports, which dcgm_collector.app serves)."""
        listing = self.index.listing
        pending = self.pending
        head = (f"<h2>Flight recordings</h2>\n<p>{html.escape(self.directory)}: {listing.count} recording"
                f"{'s' if listing.count != 1 else ''}, {listing.bytes / 2**20:.1f} MiB of "
                f"{size_text(self.max_bytes)}" + (f"; {pending} being recorded" if pending else "") + "</p>\n")
        if not listing.newest:
            return head
        items = "".join(f"<li>{html.escape(r.name)}: {r.bytes / 1024:.1f} KiB, {html.escape(r.trigger)} "
                        f"(<a href=\"recordings?name={quote(r.name)}\">download</a>, "
                        f"<a href=\"reports?name={quote(r.name)}\">report</a>)</li>\n" for r in listing.newest)
        more = listing.count - len(listing.newest)
        tail = f"<p>and {more} older recording{'s' if more != 1 else ''} not listed</p>\n" if more > 0 else ""
        return head + "<ul>\n" + items + "</ul>\n" + tail

    def write_families(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None = None) -> None:
        """The recorder's own families, for /metrics (series.registry.Families)."""
        parts.append(self.render_metrics(openmetrics))

    def render_metrics(self, openmetrics: bool) -> str:
        """The recorder's own families, in the /metrics format asked for."""
        values = (("dcgm_collector_recordings_written_total", self.written),
                  ("dcgm_collector_recorder_failures_total", self.failures),
                  ("dcgm_collector_recorder_bytes", self.disk_bytes()),
                  ("dcgm_collector_recorder_pending", self.pending))
        return "".join(_HEADERS[name].get(openmetrics) + f"{name} {value}\n" for name, value in values)


_HEADERS = {
    "dcgm_collector_recordings_written_total": Header.of(
        "dcgm_collector_recordings_written_total", "Flight recordings written.", "counter", "counter"),
    "dcgm_collector_recorder_failures_total": Header.of(
        "dcgm_collector_recorder_failures_total",
        "Failures of the flight recorder: recordings not written, old ones not removed, its directory not listed.",
        "counter", "counter"),
    "dcgm_collector_recorder_bytes": Header.of(
        "dcgm_collector_recorder_bytes", "Bytes the flight recordings take in the recorder's directory.",
        "gauge", "gauge"),
    "dcgm_collector_recorder_pending": Header.of(
        "dcgm_collector_recorder_pending", "1 while a flight recording waits for the end of its window.",
        "gauge", "gauge"),
}


def _why(error: BaseException, name_file: bool = True) -> str:
    """An error as one short line: an OSError's words (with the file it names), else the message."""
    if isinstance(error, OSError) and error.strerror:
        # pyarrow's "Error writing bytes to file. Detail: [errno 28] ...": the system's own words say it
        words = os.strerror(error.errno) if _ERRNO.search(error.strerror) and error.errno else error.strerror
        name = os.path.basename(error.filename) if name_file and isinstance(error.filename, str) else ""
        return f"{name}: {words}" if name else words
    return " ".join(str(error).split()) or type(error).__name__


_ERRNO = re.compile(r"\[errno (\d+)\]")
_FILE_NAME = re.compile(r"[\w.-]+")   # what _safe leaves: letters, digits, "-", "_", "."


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
