"""HPC job attribution: dcgm-exporter's job mapping directory (``--hpc-job-mapping-dir``).

A batch system's prolog writes one file per GPU it hands to a job, named by
the GPU's DCGM id (``3``) or, for a MIG GPU instance, ``<gpu>.<instance>``
(``3.1``); each line of the file is the id of a job using that GPU.  The
epilog removes or rewrites the file.  Every series of a GPU is then served
once per job, with an ``hpc_job`` label, as dcgm-exporter does: dashboards
and alerts written for it join and sum over those copies, so one series
per GPU with a joined label would break them.  A GPU without a file (or
with an empty one) keeps its plain series.

dcgm-exporter reads the directory and every file on every scrape.  Here a
scrape reads a cached mapping; the directory is listed and the files
stat-ed at most once per ``refresh_s``, and a file is read again only when
its size, mtime or inode changed.

Differences from dcgm-exporter, on purpose:

* Lines are stripped of surrounding white space, and blank lines and
  repeated ids are dropped: each would otherwise make a series with the
  same labels as another one, which Prometheus rejects.
* At most MAX_JOBS_PER_GPU ids per file are used (a warning names the file):
  each id copies every series of the GPU.
* An unreadable file is logged once and counts as empty, and a missing
  directory is logged once (and its return once); neither fails a scrape.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dcgm_collector.files import open_regular_file, size_text

__all__ = ["HpcJobMapper", "JOB_FILE_NAME", "MAX_JOBS_PER_GPU", "parse_jobs"]

log = logging.getLogger(__name__)

# [0-9], not \d: Python's \d also matches other scripts' digits, Go's does not
JOB_FILE_NAME = re.compile(r"^[0-9]+(\.[0-9]+)?$")
MAX_JOBS_PER_GPU = 64
MAX_FILE_BYTES = 64 * 1024
DEFAULT_REFRESH_S = 5.0


def parse_jobs(data: bytes) -> list[str]:
    """Job ids of one mapping file, in file order, without blanks or repeats."""
    jobs: dict[str, None] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        job = line.strip()
        if job:
            jobs[job] = None
    return list(jobs)


@dataclass(frozen=True)
class _Stamp:
    """What tells a file changed without reading it."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, info: os.stat_result) -> _Stamp:
        return cls(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


class HpcJobMapper:
    """GPU (or GPU instance) -> job ids, from a mapping directory, re-read when it changes.

    Thread-safe.  The first call of :meth:`jobs_for` (or :meth:`refresh`)
    reads the directory; later calls re-check it once ``refresh_s`` has
    passed, on the calling thread, costing one directory listing and one
    stat per file.  ``generation`` changes whenever the mapping does.
    """

    def __init__(self, directory: str | os.PathLike, refresh_s: float = DEFAULT_REFRESH_S, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(refresh_s, bool) or not isinstance(refresh_s, (int, float)) or refresh_s < 0:
            raise ValueError(f"refresh_s must be a number of seconds >= 0, not {refresh_s!r}")
        self.directory = os.fspath(directory)
        if not self.directory:
            raise ValueError("the HPC job mapping directory is empty (--hpc-job-mapping-dir)")
        self.refresh_s = float(refresh_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._checked_at: float | None = None
        self._files: dict[str, tuple[_Stamp, tuple[str, ...]]] = {}
        self._mapping: Mapping[str, tuple[str, ...]] = {}
        self._generation = 0
        self._reported: set[str] = set()   # problems logged and not yet over

    # -- reading
    def jobs_for(self, gpu_index: int, instance_id: int | None = None) -> list[str]:
        """Job ids for a whole GPU, or for one of its MIG GPU instances; [] when none."""
        self._maybe_refresh()
        key = str(int(gpu_index)) if instance_id is None else f"{int(gpu_index)}.{int(instance_id)}"
        return list(self._mapping.get(key, ()))

    @property
    def generation(self) -> int:
        """Changes each time a refresh finds a different mapping (call jobs_for or refresh first)."""
        self._maybe_refresh()
        return self._generation

    def mapping(self) -> dict[str, list[str]]:
        """File name (``"3"``, ``"3.1"``) -> job ids."""
        self._maybe_refresh()
        return {key: list(jobs) for key, jobs in self._mapping.items()}

    # -- refreshing
    def _maybe_refresh(self) -> None:
        checked = self._checked_at
        if checked is not None and self._clock() - checked < self.refresh_s:
            return
        self.refresh(force=False)

    def refresh(self, force: bool = True) -> None:
        """Re-read the directory now (``force``), or only if ``refresh_s`` has passed."""
        with self._lock:
            now = self._clock()
            if not force and self._checked_at is not None and now - self._checked_at < self.refresh_s:
                return   # another thread refreshed while this one waited for the lock
            files = self._scan()
            self._checked_at = self._clock()
            mapping = {name: jobs for name, (_, jobs) in files.items() if jobs}
            self._files = files
            if mapping != self._mapping:
                self._mapping = mapping
                self._generation += 1

    def _scan(self) -> dict[str, tuple[_Stamp, tuple[str, ...]]]:
        try:
            entries = list(os.scandir(self.directory))
        except OSError as error:
            self._report("dir", "cannot read the HPC job mapping directory %s: %s; no hpc_job labels until it is back",
                         self.directory, error.strerror or error)
            return {}
        self._recovered("dir", "the HPC job mapping directory %s is readable again", self.directory)
        files: dict[str, tuple[_Stamp, tuple[str, ...]]] = {}
        for entry in entries:
            if not JOB_FILE_NAME.match(entry.name):
                continue
            read = self._read_entry(entry)
            if read is not None:
                files[entry.name] = read
        for name in [p for p in self._reported if p.startswith("file:") and p[5:] not in files]:
            self._reported.discard(name)   # gone: a new problem with it is news again
        return files

    def _read_entry(self, entry: os.DirEntry) -> tuple[_Stamp, tuple[str, ...]] | None:
        problem = f"file:{entry.name}"
        try:
            info = entry.stat()     # follows symbolic links, as a plain open would
        except OSError:
            return None             # vanished between the listing and the stat
        if not stat.S_ISREG(info.st_mode):
            return None
        stamp = _Stamp.of(info)
        known = self._files.get(entry.name)
        if known is not None and known[0] == stamp:
            return known
        try:
            # without blocking and inside the folder: a FIFO or a link elsewhere put there is not read
            with os.fdopen(open_regular_file(entry.path, folder=self.directory), "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as error:
            self._report(problem, "cannot read HPC job mapping file %s: %s; its GPU gets no hpc_job label",
                         entry.path, error.strerror or error)
            return stamp, ()
        self._recovered(problem, "HPC job mapping file %s is readable again", entry.path)
        jobs = parse_jobs(data[:MAX_FILE_BYTES])
        if len(data) > MAX_FILE_BYTES or len(jobs) > MAX_JOBS_PER_GPU:
            log.warning("HPC job mapping file %s lists more than %d jobs (or is larger than %s); using the first %d",
                        entry.path, MAX_JOBS_PER_GPU, size_text(MAX_FILE_BYTES), min(len(jobs), MAX_JOBS_PER_GPU))
            jobs = jobs[:MAX_JOBS_PER_GPU]
        return stamp, tuple(jobs)

    def _report(self, problem: str, message: str, *args: object) -> None:
        if problem not in self._reported:
            self._reported.add(problem)
            log.warning(message, *args)

    def _recovered(self, problem: str, message: str, *args: object) -> None:
        if problem in self._reported:
            self._reported.discard(problem)
            log.info(message, *args)
