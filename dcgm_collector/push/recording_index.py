"""The recordings in the recorder's directory, as the recorder's own thread last saw them.

GET / and /metrics read this index and never the directory: a FIFO, a link
to /dev/zero or a hundred thousand files placed there cost the request path
nothing.  Only the recorder's thread touches the directory: one scan at
start, one every RESCAN_EVERY_S (files someone else added or removed), and
an update whenever it writes or removes a recording.

A scan lists the entries named like recordings and looks at each with lstat,
never following a link: only regular files count (a directory, FIFO or link
named like one is skipped, said once).  A sidecar is read through
dcgm_collector.files (no blocking open, regular files of at most
SIDECAR_LIMIT bytes, no link out of the folder), and only for the recordings
the landing page shows.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import stat
from dataclasses import dataclass

from dcgm_collector.files import file_kind, read_regular_file
from dcgm_collector.model import RECORDING_SIDECAR_SUFFIX
from dcgm_collector.push.recording_file import RECORDING_PREFIX, RECORDING_SUFFIX

__all__ = ["SHOWN", "SIDECAR_LIMIT", "Listing", "Recording", "RecordingIndex", "is_recording_name"]

log = logging.getLogger("dcgm_collector")

SIDECAR_LIMIT = 256 * 1024   # a sidecar lists at most 100 triggers: a few KiB; more is not one of ours
SHOWN = 50                   # the landing page lists the newest this many recordings
RESCAN_EVERY_S = 60.0
UNREAD = "?"                 # the trigger text of a recording whose sidecar cannot be read


def is_recording_name(name: str) -> bool:
    return name.startswith(RECORDING_PREFIX) and name.endswith(RECORDING_SUFFIX)


@dataclass(frozen=True)
class Recording:
    name: str
    bytes: int        # the recording with its sidecar
    mtime: float
    trigger: str      # "XID 13 (xid) at 2026-...Z", UNREAD when the sidecar cannot be read


@dataclass(frozen=True)
class Listing:
    """What the request path reads: replaced whole, so a reader never sees half an update."""

    newest: tuple[Recording, ...] = ()    # at most SHOWN, newest first
    count: int = 0
    bytes: int = 0


class RecordingIndex:
    """The recordings of ``directory``; every method but :attr:`listing` is for the recorder's thread."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.scanned = False
        self._entries: dict[str, tuple[int, float]] = {}   # name -> (bytes with the sidecar, mtime)
        self._triggers: dict[str, tuple[tuple[int, float], str]] = {}   # name -> ((bytes, mtime), text)
        self._skipped: set[str] = set()               # entries named like recordings that are not files
        self.listing = Listing()

    # -- changes
    def scan(self) -> None:
        """Look at the directory again; OSError if it cannot be listed (the index stays as it was)."""
        recordings: dict[str, tuple[int, float]] = {}   # (size, mtime): a stat_result per file is 4 times that
        sidecars: dict[str, int] = {}
        skipped: dict[str, str] = {}
        with os.scandir(self.directory) as entries:
            for entry in entries:
                name = entry.name
                sidecar = name.endswith(RECORDING_SIDECAR_SUFFIX)
                if not is_recording_name(name.removesuffix(RECORDING_SIDECAR_SUFFIX) if sidecar else name):
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:   # removed while listed
                    continue
                if sidecar:
                    if stat.S_ISREG(info.st_mode):   # a link or FIFO in a sidecar's place takes no room of ours
                        sidecars[name] = info.st_size
                elif stat.S_ISREG(info.st_mode):
                    recordings[name] = (info.st_size, info.st_mtime)
                else:
                    skipped[name] = file_kind(info.st_mode)
        self._say_skipped(skipped)
        for sidecar_name, size in sidecars.items():
            name = sidecar_name.removesuffix(RECORDING_SIDECAR_SUFFIX)
            if name in recordings:
                recordings[name] = (recordings[name][0] + size, recordings[name][1])
        self._entries = recordings
        self._triggers = {n: t for n, t in self._triggers.items() if n in recordings}
        self.scanned = True
        self._publish()

    def add(self, name: str, size: int, trigger: str) -> None:
        """A recording the recorder just wrote (``size`` with its sidecar)."""
        try:
            mtime = os.lstat(os.path.join(self.directory, name)).st_mtime
        except OSError:
            return
        self._entries[name] = (size, mtime)
        self._triggers[name] = ((size, mtime), trigger)
        self._publish()

    def remove(self, name: str) -> None:
        """A recording the recorder removed; the listing changes at the next :meth:`publish` (one per batch)."""
        self._entries.pop(name, None)
        self._triggers.pop(name, None)

    def publish(self) -> None:
        """Make the changes so far what the request path reads."""
        self._publish()

    # -- reading (recorder's thread)
    def oldest_first(self) -> list[tuple[str, int]]:
        """(name, bytes) of every recording, oldest first (the names start with the trigger's UTC time)."""
        return [(name, self._entries[name][0]) for name in sorted(self._entries)]

    @property
    def total_bytes(self) -> int:
        return self.listing.bytes

    # -- internals
    def _publish(self) -> None:
        newest = heapq.nlargest(SHOWN, self._entries)
        shown = tuple(Recording(name, *self._entries[name], self._trigger(name)) for name in newest)
        self.listing = Listing(shown, len(self._entries), sum(size for size, _ in self._entries.values()))

    def _trigger(self, name: str) -> str:
        key = self._entries[name]
        cached = self._triggers.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        text = self._read_trigger(name)
        self._triggers[name] = (key, text)
        return text

    def _read_trigger(self, name: str) -> str:
        path = os.path.join(self.directory, name + RECORDING_SIDECAR_SUFFIX)
        try:
            trigger = json.loads(read_regular_file(path, SIDECAR_LIMIT, folder=self.directory)).get("trigger", {})
            return f"{trigger.get('detail', '?')} ({trigger.get('kind', '?')}) at {trigger.get('time', '?')}"
        except FileNotFoundError:
            return UNREAD
        except (OSError, ValueError, RecursionError, AttributeError) as error:
            # not the recorder's own failure (someone placed the file), but the page says "?" and the log why
            log.warning("flight recorder: cannot read the sidecar %s: %s", path,
                        error if isinstance(error, OSError) else f"not a recorder's sidecar ({type(error).__name__})")
            return UNREAD

    def _say_skipped(self, skipped: dict[str, str]) -> None:
        new = sorted(skipped.keys() - self._skipped)
        self._skipped = set(skipped)
        if new:
            named = ", ".join(f"{name} ({skipped[name]})" for name in new[:5])
            more = f" and {len(new) - 5} more" if len(new) > 5 else ""
            log.warning("flight recorder: %s: skipping entries named like recordings that are not regular files: "
                        "%s%s", self.directory, named, more)
