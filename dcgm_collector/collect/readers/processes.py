"""The process reader (--processes): each GPU's processes, their use of it and of the host, in a SeriesStore.

At its own interval (``max(1 s, the collect interval)``) it lists, for each
sampled GPU, the compute and graphics processes NVML reports (through each
MIG device handle on a MIG GPU, so a process is counted under its instance),
reads the per-process utilisation samples newer than the last one seen on
that GPU, and reads ``/proc/<pid>`` for the process's name, CPU seconds and
resident memory.  The series (series.processes) go into one SeriesStore the
exposition serves: a process's series leave once it has been absent for
:data:`TTL_INTERVALS` reads, and the store's bounds keep memory flat whatever
the churn.  Only the ``top`` processes of an entity by framebuffer get series
of their own; the rest are summed into one ``pid="other"`` series.

Faults: a pid gone from /proc between the list and the read is skipped; when
no listed pid is in /proc the collector does not see the host's PID namespace
(one warning: run with hostPID / --pid=host) and the series go out without
``process_name``; NOT_SUPPORTED or NO_PERMISSION on a process call is warned
once per GPU and call and reads as ``DCGM_EXP_PROCESS_QUERY_SUCCESS`` 0, the
GPU's own series unaffected.  An exception is the tick's to count
(collect.readers.reader).

Who a process belongs to (its pod, its HPC job) is not this stage's to know:
an injected ``attribute(pid, gpu_index, uuid, gpu_instance)`` gives the
labels a process's series add to ``pid`` and ``process_name`` (the app
wires attribution.processes in), and ``folded_labels`` those of
``pid="other"``, a sum over processes of anyone's.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from dcgm_collector.collect.readers.nvml import NO_PERMISSION, NOT_SUPPORTED, NvmlError, NvmlProcess, NvmlUtilization
from dcgm_collector.collect.readers.reader import Reader
from dcgm_collector.model import EntityType
from dcgm_collector.rings.series_store import SeriesStore, StoreKey
from dcgm_collector.series.processes import DEFAULT_TOP, FAMILY_BY_KEY, OTHER_PID, PROCESS_FAMILIES

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["DEFAULT_TOP", "MIN_INTERVAL_S", "TTL_INTERVALS", "ProcessInfo", "ProcessReader", "read_proc"]

log = logging.getLogger("dcgm_collector.collect.processes")

MIN_INTERVAL_S = 1.0      # process lists are a few NVML calls per GPU: not worth more than once a second
TTL_INTERVALS = 3         # a process absent from this many reads in a row has its series removed
STORE_ROWS = 60           # rows the store keeps: a minute of reads at the default interval
_LABEL_BYTES = 512        # allowance per series for its pid and process_name labels
_ATTRIBUTED_BYTES = 2048  # ... and for pod, namespace, container (up to 253, 63, 63 bytes) and hpc_job besides
_PER_PROCESS = ("fb", "sm", "mem", "enc", "dec", "cpu", "rss")
_PER_GPU = ("count", "ok", "seen", "folded")
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


Labels = tuple[tuple[str, str], ...]
Attribute = Callable[[int, int, str, "int | None"], Labels]   # (pid, GPU index, UUID, GPU instance) -> labels


class NvmlLike(Protocol):
    """What the reader calls (collect.readers.nvml.Nvml; tests pass a fake)."""

    def device(self, index: int) -> object: ...
    def uuid(self, device: object) -> str: ...
    def mig_devices(self, device: object) -> list[object]: ...
    def processes(self, device: object, graphics: bool) -> list[NvmlProcess]: ...
    def utilization(self, device: object, last_seen_us: int) -> list[NvmlUtilization]: ...


@dataclass(frozen=True)
class ProcessInfo:
    """What /proc says of one process."""

    name: str
    cpu_s: float
    rss_bytes: int


def read_proc(pid: int, root: str = "/proc") -> ProcessInfo | None:
    """``/proc/<pid>``'s comm, utime + stime (in s) and RSS (in bytes); None when the process is not there."""
    try:
        with open(f"{root}/{pid}/stat", "rb") as file:
            stat = file.read().decode("utf-8", "replace")
    except OSError:
        return None
    open_at, close_at = stat.find("("), stat.rfind(")")
    fields = stat[close_at + 2:].split()
    if open_at < 0 or close_at < open_at or len(fields) < 22:
        return None
    # after the name: state is field 3 of the line, utime 14, stime 15, rss 24 (pages)
    utime, stime, rss = int(fields[11]), int(fields[12]), int(fields[21])
    return ProcessInfo(stat[open_at + 1:close_at], (utime + stime) / _CLK_TCK, rss * _PAGE)


class ProcessReader(Reader):
    """Every interval: each GPU's processes into :attr:`store` (see the module's docstring)."""

    name = "processes"
    reads_dcgm = False

    def __init__(self, sampler: Sampler, open_nvml: Callable[[], NvmlLike], top: int = DEFAULT_TOP,
                 proc_root: str = "/proc", attribute: Attribute | None = None, folded_labels: Labels = ()) -> None:
        super().__init__(sampler)
        self.every_s = max(MIN_INTERVAL_S, sampler.interval_s)
        self.top = top
        self.proc_root = proc_root
        self.attribute = attribute
        self.folded_labels = tuple(folded_labels)
        self._open_nvml = open_nvml
        self.nvml: NvmlLike | None = None
        entities = max(1, len(sampler.gpu_ids or ()) + len(sampler.instances))   # GPUs and instances served
        # a process past its last read keeps its slots for the TTL: under churn, the top N of TTL_INTERVALS + 1
        # reads hold slots at once, besides pid="other" and the GPU's own series
        max_series = entities * ((top * (TTL_INTERVALS + 1) + 1) * len(_PER_PROCESS) + len(_PER_GPU))
        fixed = SeriesStore.bytes_for(max_series, STORE_ROWS)
        label_bytes = _LABEL_BYTES if attribute is None and not folded_labels else _ATTRIBUTED_BYTES
        self.store = SeriesStore(max_series, STORE_ROWS, ttl_s=TTL_INTERVALS * self.every_s,
                                 max_bytes=fixed + max_series * label_bytes)
        self._instances = {instance.entity_id: instance for instance in sampler.instances}
        self._uuids: dict[int, str] = {}               # GPU -> its UUID, asked of NVML once
        self._last_seen: dict[int, int] = {}          # GPU -> newest utilisation sample's ts
        self._totals: dict[tuple[int, int], list[int]] = {}   # entity -> [seen, folded]
        self._warned: set[tuple[int, str, int]] = set()
        self._warned_pid_namespace = False
        self._warned_open = False
        self._last_ts = 0
        self._first_seen_us = 0
        self._written: set[StoreKey] = set()   # the series the last read gave a value
        # entity -> the processes its latest read listed (an entity whose list failed is left out); replaced
        # whole on each read, for the idle reader (collect.readers.idle), which runs on the same thread
        self.latest: Mapping[tuple[int, int], tuple[NvmlProcess, ...]] = MappingProxyType({})

    @classmethod
    def factory(cls, open_nvml: Callable[[], NvmlLike], top: int = DEFAULT_TOP, attribute: Attribute | None = None,
                folded_labels: Labels = ()) -> Callable[[Sampler], Reader]:
        return lambda sampler: cls(sampler, open_nvml, top, attribute=attribute, folded_labels=folded_labels)

    def close(self) -> None:
        if self.nvml is not None and hasattr(self.nvml, "close"):
            self.nvml.close()
        self.nvml = None

    def read(self, now: float) -> bool:
        if self.nvml is None:
            try:
                self.nvml = self._open_nvml()
            except (OSError, NvmlError) as error:
                if not self._warned_open:
                    log.warning("--processes: cannot open NVML (%s): no process series, "
                                "DCGM_EXP_PROCESS_QUERY_SUCCESS reads 0", error)
                    self._warned_open = True
        ts = max(int(self.sampler.clock.time() * 1e6), self._last_ts + 1)
        self._last_ts = ts
        # a GPU's first utilisation query asks for the last interval only: lastSeen 0 would return the
        # driver's whole buffer, samples of processes long gone
        self._first_seen_us = ts - round(self.every_s * 1e6)
        samples: dict[StoreKey, float] = {}
        sampler = self.sampler
        instances = {(i.gpu_id, i.instance_id): i.entity_id for i in sampler.instances}
        whole = set(sampler.gpu_ids or ())
        listed: list[tuple[tuple[int, int], list[NvmlProcess], dict[int, NvmlUtilization] | None]] = []
        for gpu in sorted(whole | {i.gpu_id for i in sampler.instances}):
            # the entities /metrics labels for this GPU: the whole GPU, its sampled instances, or both
            served = ([(int(EntityType.GPU), gpu)] if gpu in whole else []) + [
                (int(EntityType.GPU_I), i.entity_id) for i in sampler.instances if i.gpu_id == gpu]
            found = self._gpu_processes(gpu, instances) if self.nvml is not None else None
            for entity in served:
                self._put(samples, entity, "ok", 0 if found is None else 1)
            if found is None:
                continue
            by_entity: dict[tuple[int, int], list[NvmlProcess]] = {entity: [] for entity in served}
            utilization_of: dict[tuple[int, int], dict[int, NvmlUtilization] | None] = {}
            for entity, processes, utilization in found:
                if entity not in by_entity:   # an instance the sampler does not sample: the whole GPU's
                    entity = (int(EntityType.GPU), gpu)
                    if entity not in by_entity:
                        continue
                by_entity[entity].extend(processes)
                utilization_of[entity] = utilization
            for entity, processes in by_entity.items():
                self._put(samples, entity, "count", len(processes))
                listed.append((entity, processes, utilization_of.get(entity)))
        infos = self._proc_infos({p.pid for _, processes, _ in listed for p in processes})
        for entity, processes, utilization in listed:
            self._entity_series(samples, entity, processes, utilization, infos)
        self._blank_left_series(samples, listed)
        self.store.append(ts, samples)
        self.latest = MappingProxyType({entity: tuple(processes) for entity, processes, _ in listed})
        return True

    def _blank_left_series(self, samples: dict[StoreKey, float],
                           listed: list[tuple[tuple[int, int], list[NvmlProcess], object]]) -> None:
        """A blank for each series of the last read that a process still listed no longer has (it moved into
        pid="other", or its name changed), and for a pid="other" no longer needed: /metrics drops them now,
        where an exited process's series stay for the time to live."""
        still = {(entity, str(p.pid)) for entity, processes, _ in listed for p in processes}
        for key in self._written - samples.keys():
            pid = dict(key.labels).get("pid")
            if pid is not None and (pid == OTHER_PID or ((key.entity_group, key.entity_id), pid) in still):
                samples[key] = math.nan
        self._written = {key for key, value in samples.items() if not math.isnan(value)}

    def _put(self, samples: dict[StoreKey, float], entity: tuple[int, int], key: str, value: float,
             labels: tuple[tuple[str, str], ...] = ()) -> None:
        samples[StoreKey(entity[0], entity[1], FAMILY_BY_KEY[key].field_id, labels)] = value

    def _gpu_processes(self, gpu: int, instances: dict[tuple[int, int], int]
                       ) -> list[tuple[tuple[int, int], list[NvmlProcess], dict[int, NvmlUtilization] | None]] | None:
        """Each entity of the GPU with its processes and their newest utilisation; None when the list failed."""
        nvml = self.nvml
        assert nvml is not None
        try:
            device = nvml.device(gpu)
            if self.attribute is not None and gpu not in self._uuids:
                self._uuids[gpu] = self._uuid(device)
            migs = nvml.mig_devices(device)
            if not migs:
                found = [((int(EntityType.GPU), gpu), self._listed(handle=device))]
            else:   # each MIG device lists its own instance's processes, which carry the instance's id
                by_instance: dict[tuple[int, int], list[NvmlProcess]] = {}
                for handle in migs:
                    for p in self._listed(handle):
                        entity = ((int(EntityType.GPU_I), instances[(gpu, p.gpu_instance)])
                                  if (gpu, p.gpu_instance) in instances else (int(EntityType.GPU), gpu))
                        by_instance.setdefault(entity, []).append(p)
                found = list(by_instance.items())
        except NvmlError as error:
            self._warn_once(gpu, error)
            return None
        utilization: dict[int, NvmlUtilization] = {}
        if not migs:
            try:
                for sample in nvml.utilization(device, self._last_seen.get(gpu, self._first_seen_us)):
                    if sample.ts_us >= utilization.get(sample.pid, sample).ts_us:
                        utilization[sample.pid] = sample
            except NvmlError as error:
                self._warn_once(gpu, error)
            if utilization:
                self._last_seen[gpu] = max(s.ts_us for s in utilization.values())
        elif (gpu, "utilization", NOT_SUPPORTED) not in self._warned:
            self._warned.add((gpu, "utilization", NOT_SUPPORTED))
            log.warning("--processes: GPU %d is in MIG mode: NVML gives no per-process utilisation there, "
                        "its processes' SM, memory, encoder and decoder series are left out", gpu)
        return [(entity, processes, None if migs else utilization) for entity, processes in found]

    def _uuid(self, device: object) -> str:
        """The GPU's UUID, for pod lookups by UUID; "" when NVML does not say (lookups by index still work)."""
        try:
            return self.nvml.uuid(device) if self.nvml is not None else ""
        except NvmlError as error:
            log.warning("--processes: %s; processes on this GPU get pod labels only under "
                        "--kubernetes-gpu-id-type device-name", error)
            return ""

    def _own_labels(self, entity: tuple[int, int], pid: int) -> Labels:
        """What the attribution says of a process on the entity (a GPU, or a MIG instance)."""
        if self.attribute is None:
            return ()
        if entity[0] == int(EntityType.GPU_I):
            instance = self._instances[entity[1]]
            return self.attribute(pid, instance.gpu_id, instance.uuid, instance.instance_id)
        return self.attribute(pid, entity[1], self._uuids.get(entity[1], ""), None)

    def _listed(self, handle: object) -> list[NvmlProcess]:
        """Compute and graphics processes of one handle, each pid once (a process may be both)."""
        nvml = self.nvml
        assert nvml is not None
        by_pid = {p.pid: p for p in nvml.processes(handle, graphics=False)}
        try:
            for p in nvml.processes(handle, graphics=True):
                by_pid.setdefault(p.pid, p)
        except NvmlError as error:
            if error.code != NOT_SUPPORTED:
                raise
        return list(by_pid.values())

    def _warn_once(self, gpu: int, error: NvmlError) -> None:
        key = (gpu, error.call, error.code)
        if key in self._warned:
            return
        self._warned.add(key)
        if error.code in (NOT_SUPPORTED, NO_PERMISSION):
            log.warning("--processes: GPU %d: %s; its process series are left out, its other series go on", gpu,
                        error)
        else:
            log.warning("--processes: GPU %d: %s; DCGM_EXP_PROCESS_QUERY_SUCCESS reads 0 until it works", gpu,
                        error)

    def _proc_infos(self, pids: set[int]) -> dict[int, ProcessInfo | None]:
        """/proc of each pid; when none is there, every pid maps to a nameless entry (another PID namespace)."""
        infos = {pid: read_proc(pid, self.proc_root) for pid in pids}
        if pids and all(info is None for info in infos.values()):
            if not self._warned_pid_namespace:
                self._warned_pid_namespace = True
                log.warning("--processes: none of the GPU processes' pids is in %s: the collector does not see the "
                            "host's processes (run it with hostPID: true in Kubernetes, --pid=host in Docker); "
                            "process series go out without process_name, CPU seconds and RSS", self.proc_root)
            return dict.fromkeys(pids, ProcessInfo("", float("nan"), -1))
        return infos

    def _entity_series(self, samples: dict[StoreKey, float], entity: tuple[int, int], processes: list[NvmlProcess],
                       utilization: dict[int, NvmlUtilization] | None, infos: dict[int, ProcessInfo | None]) -> None:
        alive = [p for p in processes if infos.get(p.pid) is not None]   # gone between the list and /proc
        alive.sort(key=lambda p: (-(p.fb_bytes or 0), p.pid))
        kept, folded = alive[:self.top], alive[self.top:]
        totals = self._totals.setdefault(entity, [0, 0])
        totals[0] += len(processes)
        totals[1] += len(folded)
        self._put(samples, entity, "seen", totals[0])
        self._put(samples, entity, "folded", totals[1])
        for p in kept:
            info = infos[p.pid]
            assert info is not None
            labels = (("pid", str(p.pid)), ("process_name", info.name), *self._own_labels(entity, p.pid))
            self._process(samples, entity, tuple(sorted(labels)), [p], utilization, [info])
        if folded:
            labels = (("pid", OTHER_PID), ("process_name", ""), *self.folded_labels)
            self._process(samples, entity, tuple(sorted(labels)), folded, utilization,
                          [infos[p.pid] for p in folded])

    def _process(self, samples: dict[StoreKey, float], entity: tuple[int, int], labels: tuple[tuple[str, str], ...],
                 processes: list[NvmlProcess], utilization: dict[int, NvmlUtilization] | None,
                 infos: list[ProcessInfo | None]) -> None:
        """One series set: one process, or the sum of the folded ones."""
        fb = [p.fb_bytes for p in processes if p.fb_bytes is not None]
        if fb:
            self._put(samples, entity, "fb", sum(fb), labels)
        if utilization is not None:   # None on a MIG GPU: NVML gives no per-process utilisation there
            for key in ("sm", "mem", "enc", "dec"):
                self._put(samples, entity, key, sum(getattr(utilization[p.pid], key) for p in processes
                                                    if p.pid in utilization), labels)
        known = [info for info in infos if info is not None and info.rss_bytes >= 0]
        if known:
            if len(processes) == 1 and dict(labels)["pid"] != OTHER_PID:
                # a counter of one process; the fold's set changes from read to read, so its sum could fall
                self._put(samples, entity, "cpu", known[0].cpu_s, labels)
            self._put(samples, entity, "rss", sum(info.rss_bytes for info in known), labels)


assert {f.key for f in PROCESS_FAMILIES} == {*_PER_PROCESS, *_PER_GPU}
