"""The kubelet device manager's checkpoint: which pod UID was given which devices.

The pod-resources API names each pod and container with its devices, but not
the pod's UID, which is what a process's cgroup names.  The kubelet's device
manager keeps its allocations in a JSON file,
``/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint``::

    {"Data": {"PodDeviceEntries": [{"PodUID": "...", "ContainerName": "...",
                                    "ResourceName": "nvidia.com/gpu",
                                    "DeviceIDs": {"0": ["GPU-...::1"]}, "AllocResp": "..."}],
              "RegisteredDevices": {"nvidia.com/gpu": [...]}},
     "Checksum": 1234}

``DeviceIDs`` maps a NUMA node to ids since Kubernetes 1.20; older kubelets
wrote a plain list, read here as well.  The checksum is not checked: it is
the kubelet's guard against its own torn writes, and an entry read from such
a file is at worst a stale one.

:class:`DeviceCheckpoint` re-reads the file only when its size, mtime or
inode changed, reads at most :data:`MAX_CHECKPOINT_BYTES`, and says once
(and once when it is good again) when the file is missing, unreadable or not
a checkpoint; meanwhile it gives no entries, never the last good ones, which
may name pods long gone.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from dcgm_collector.files import open_regular_file, size_text

__all__ = ["DEFAULT_DEVICE_CHECKPOINT", "MAX_CHECKPOINT_BYTES", "CheckpointEntry", "CheckpointError",
           "DeviceCheckpoint", "parse_checkpoint"]

log = logging.getLogger(__name__)

DEFAULT_DEVICE_CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
# a node's allocations with their AllocResp blobs: tens of KiB for a busy node; past this it is not a checkpoint
MAX_CHECKPOINT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class CheckpointEntry:
    """One container's devices of one resource."""

    pod_uid: str
    container: str
    resource: str
    device_ids: tuple[str, ...]


class CheckpointError(ValueError):
    """The text is not a device-manager checkpoint; str() says what is wrong in it."""


def _device_ids(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):          # before per-NUMA ids
        lists = [value]
    elif isinstance(value, dict):        # NUMA node -> ids
        lists = list(value.values())
    else:
        raise CheckpointError(f"DeviceIDs is {type(value).__name__}, not a list or an object of lists")
    ids: list[str] = []
    for listed in lists:
        if not isinstance(listed, list) or not all(isinstance(i, str) for i in listed):
            raise CheckpointError("DeviceIDs holds something other than lists of strings")
        ids.extend(listed)
    return tuple(ids)


def parse_checkpoint(data: bytes) -> tuple[CheckpointEntry, ...]:
    """The entries of a checkpoint file's bytes; CheckpointError naming the bad part."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise CheckpointError(f"not JSON: {error}") from None
    inner = document.get("Data") if isinstance(document, dict) else None
    if not isinstance(inner, dict):
        raise CheckpointError('no "Data" object')
    listed = inner.get("PodDeviceEntries")
    if listed is None:   # a kubelet with no allocation writes null
        return ()
    if not isinstance(listed, list):
        raise CheckpointError('"Data.PodDeviceEntries" is not a list')
    entries = []
    for number, entry in enumerate(listed):
        if not isinstance(entry, dict):
            raise CheckpointError(f"PodDeviceEntries[{number}] is not an object")
        fields = [entry.get(name) for name in ("PodUID", "ContainerName", "ResourceName")]
        if not all(isinstance(value, str) for value in fields):
            raise CheckpointError(f"PodDeviceEntries[{number}] lacks PodUID, ContainerName or ResourceName")
        try:
            ids = _device_ids(entry.get("DeviceIDs"))
        except CheckpointError as error:
            raise CheckpointError(f"PodDeviceEntries[{number}]: {error}") from None
        entries.append(CheckpointEntry(fields[0], fields[1], fields[2], ids))
    return tuple(entries)


class DeviceCheckpoint:
    """The checkpoint file's entries, re-read when the file changes.  Thread-safe.

    ``generation`` changes whenever the entries do.
    """

    def __init__(self, path: str | os.PathLike = DEFAULT_DEVICE_CHECKPOINT) -> None:
        self.path = os.fspath(path)
        if not self.path:
            raise ValueError("the device checkpoint path is empty (--kubernetes-device-checkpoint)")
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._entries: tuple[CheckpointEntry, ...] | None = None
        self._generation = 0
        self._problem: str | None = None   # the kind of problem last logged, until the file reads again

    @property
    def generation(self) -> int:
        return self._generation

    def entries(self) -> tuple[CheckpointEntry, ...] | None:
        """The current entries; None while the file is missing, unreadable or not a checkpoint."""
        with self._lock:
            self._refresh()
            return self._entries

    def _refresh(self) -> None:
        try:
            info = os.stat(self.path)
        except OSError as error:
            self._set(None, None, "stat", f"cannot read the kubelet device checkpoint {self.path}: "
                      f"{error.strerror or error}")
            return
        stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
        if stamp == self._stamp:
            return
        if info.st_size > MAX_CHECKPOINT_BYTES:
            self._set(stamp, None, "size", f"the kubelet device checkpoint {self.path} is larger than "
                      f"{size_text(MAX_CHECKPOINT_BYTES)}")
            return
        try:
            with os.fdopen(open_regular_file(self.path), "rb") as handle:
                data = handle.read(MAX_CHECKPOINT_BYTES + 1)
        except OSError as error:
            self._set(None, None, "read", f"cannot read the kubelet device checkpoint {self.path}: "
                      f"{error.strerror or error}")
            return
        try:
            if len(data) > MAX_CHECKPOINT_BYTES:
                raise CheckpointError(f"larger than {size_text(MAX_CHECKPOINT_BYTES)}")
            entries = parse_checkpoint(data)
        except CheckpointError as error:
            self._set(stamp, None, "parse", f"{self.path}: not a kubelet device checkpoint: {error}")
            return
        self._set(stamp, entries, None, "")

    def _set(self, stamp: tuple[int, int, int] | None, entries: tuple[CheckpointEntry, ...] | None,
             problem: str | None, message: str) -> None:
        self._stamp = stamp
        if entries != self._entries:
            self._entries = entries
            self._generation += 1
        if problem is not None and problem != self._problem:
            log.warning("%s; processes in pods get pod labels only where one container holds their GPU", message)
        elif problem is None and self._problem is not None:
            log.info("the kubelet device checkpoint %s reads again: processes get their own pod's labels", self.path)
        self._problem = problem
