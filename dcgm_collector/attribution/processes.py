"""The pod, namespace, container and HPC job of one GPU process, for its per-process series.

A GPU's series carry the labels of the container the kubelet gave the GPU to
(copies.GpuAttribution); a process's series carry those of the container it
runs in, which is not the same thing when time-slicing gives replicas of one
GPU to several pods, or a host process uses a pod's GPU.  What
:class:`ProcessAttribution` answers, for a process on a GPU (or MIG
instance):

* Kubernetes (``-k``): the process's cgroup names its pod's UID
  (attribution.cgroups).  The pod-resources API names pods but not their
  UIDs; the device manager's checkpoint (attribution.checkpoint) names the
  UID of each container's devices, so the two are joined on container name
  and device id.  A process in a pod the join knows gets that pod's labels
  (and its container's, when one container of the pod holds the GPU, or only
  one of its containers holds any).  A process in no pod, or in a pod that
  holds no GPU, gets empty pod labels: it is not the GPU holder.  Without a
  readable checkpoint, a process in a pod gets the labels of the one
  container holding its GPU (or the GPU's replicas), and none when several
  hold it: which of them the process belongs to is not known then.
* HPC jobs (``--hpc-job-mapping-dir``): the Slurm job the process's cgroup
  names; else the GPU's job when its mapping file lists one; else (several
  jobs, and a cgroup naming none) an empty ``hpc_job``.

A process whose cgroup cannot be read (it exited, or the collector does not
see the host's PID namespace) is taken for the GPU's: its one holder, its one
job.  Every answer names each label the attribution serves, empty when not
known, so that a process series replaces the GPU's copies (one per job or
pod) with its own labels and is served once (an empty label is left out of
/metrics).

The cgroup facts are cached per pid (checked against the process's start
time, so a reused pid is read afresh), and entries not asked about for
:data:`FORGET_AFTER_S` are dropped; at most :data:`MAX_CACHED` are kept.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from dcgm_collector.attribution.cgroups import CgroupFacts, read_cgroup
from dcgm_collector.attribution.checkpoint import CheckpointEntry, DeviceCheckpoint

if TYPE_CHECKING:   # not at run time: podresources loads gRPC, which only -k needs
    from dcgm_collector.attribution.podresources import PodInfo

__all__ = ["FORGET_AFTER_S", "MAX_CACHED", "ProcessAttribution", "pods_by_uid"]

Pairs = tuple[tuple[str, str], ...]
MAX_CACHED = 4096         # pids whose cgroup facts are kept: a GPU node lists far fewer processes at once
FORGET_AFTER_S = 10.0     # a pid not asked about for this long has left the GPUs' lists
REFRESH_S = 1.0           # the checkpoint is stat-ed (and the UID join rebuilt when it or the pods changed) this often
_POD_NAMES = ("pod", "namespace", "container")
_OLD_POD_NAMES = ("pod_name", "pod_namespace", "container_name")


class _Pods(Protocol):
    old_names: bool

    @property
    def generation(self) -> int: ...

    def holders(self, key: str) -> tuple[PodInfo, ...]: ...

    def holders_for(self, gpu_index: int, uuid: str) -> tuple[PodInfo, ...]: ...

    def holders_for_instance(self, gpu_index: int, instance_id: int, mig_uuid: str = "") -> tuple[PodInfo, ...]: ...


class _Jobs(Protocol):
    def jobs_for(self, gpu_index: int, instance_id: int | None = None) -> list[str]: ...


def pods_by_uid(entries: tuple[CheckpointEntry, ...], holders: Callable[[str], tuple[PodInfo, ...]]
                ) -> dict[str, tuple[PodInfo, ...]]:
    """Pod UID -> its containers that hold devices: each checkpoint entry matched to the pod-resources
    container of the same name holding the same device id."""
    found: dict[str, dict[PodInfo, None]] = {}
    for entry in entries:
        for device_id in entry.device_ids:
            for holder in holders(device_id):
                if holder.container == entry.container:
                    found.setdefault(entry.pod_uid.lower(), {})[holder] = None
    return {uid: tuple(infos) for uid, infos in found.items()}


def _start_time(pid: int, proc_root: str) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot), what tells a reused pid; None when gone."""
    try:
        with open(f"{proc_root}/{pid}/stat", "rb") as file:
            text = file.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


class ProcessAttribution:
    """``attribute(pid, gpu_index, uuid, gpu_instance)``: the labels of a process's own series.

    ``uuid`` is the GPU's UUID, or the MIG device's (``MIG-...``) with
    ``gpu_instance`` the NVML GPU-instance id of the MIG instance the
    process is served under (None for a whole GPU).
    """

    def __init__(self, pods: _Pods | None = None, jobs: _Jobs | None = None,
                 checkpoint: DeviceCheckpoint | None = None, *, proc_root: str = "/proc",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.pods, self.jobs, self.checkpoint = pods, jobs, checkpoint
        self.proc_root = proc_root
        self._clock = clock
        self._lock = threading.Lock()
        self._facts: dict[int, tuple[int, CgroupFacts | None, float]] = {}   # pid -> (start time, facts, asked)
        self._uids: dict[str, tuple[PodInfo, ...]] | None = None            # None: no readable checkpoint
        self._joined: tuple[int, int] | None = None
        self._checked_at: float | None = None
        self._swept_at = clock()
        names: tuple[str, ...] = ()
        if pods is not None:
            names += _OLD_POD_NAMES if pods.old_names else _POD_NAMES
        if jobs is not None:
            names += ("hpc_job",)
        self.names = tuple(sorted(names))

    def blank(self) -> Pairs:
        """Every label this attribution serves, empty: for a series that belongs to no one process."""
        return tuple((name, "") for name in self.names)

    def __call__(self, pid: int, gpu_index: int, uuid: str, gpu_instance: int | None) -> Pairs:
        with self._lock:
            now = self._clock()
            facts = self._cgroup(pid, now)
            labels: dict[str, str] = dict(self.blank())
            if self.pods is not None:
                self._refresh(now)
                holder = self._pod(facts, gpu_index, uuid, gpu_instance)
                if holder is not None:
                    labels.update(holder.labels(self.pods.old_names))
            if self.jobs is not None:
                labels["hpc_job"] = self._job(facts, gpu_index, gpu_instance)
            if now - self._swept_at >= FORGET_AFTER_S:
                self._sweep(now)
            return tuple(sorted(labels.items()))

    # -- cgroups
    def _cgroup(self, pid: int, now: float) -> CgroupFacts | None:
        started = _start_time(pid, self.proc_root)
        if started is None:
            self._facts.pop(pid, None)
            return None
        known = self._facts.get(pid)
        if known is not None and known[0] == started:
            facts = known[1]
        else:
            facts = read_cgroup(pid, self.proc_root)
            if len(self._facts) >= MAX_CACHED:
                self._sweep(now)
                if len(self._facts) >= MAX_CACHED:
                    self._facts.clear()
        self._facts[pid] = (started, facts, now)
        return facts

    def _sweep(self, now: float) -> None:
        self._swept_at = now
        self._facts = {pid: known for pid, known in self._facts.items() if now - known[2] < FORGET_AFTER_S}

    # -- pods
    def _refresh(self, now: float) -> None:
        pods, checkpoint = self.pods, self.checkpoint
        if pods is None or checkpoint is None:
            return
        if self._checked_at is not None and now - self._checked_at < REFRESH_S:
            return
        self._checked_at = now
        entries = checkpoint.entries()
        stamp = (pods.generation, checkpoint.generation)
        if stamp != self._joined:
            self._joined = stamp
            self._uids = None if entries is None else pods_by_uid(entries, pods.holders)

    def _holders(self, gpu_index: int, uuid: str, gpu_instance: int | None) -> tuple[PodInfo, ...]:
        pods = self.pods
        assert pods is not None
        if gpu_instance is None:
            return pods.holders_for(gpu_index, uuid)
        return pods.holders_for_instance(gpu_index, gpu_instance, uuid)

    def _pod(self, facts: CgroupFacts | None, gpu_index: int, uuid: str, gpu_instance: int | None) -> PodInfo | None:
        holders = self._holders(gpu_index, uuid, gpu_instance)
        sole = holders[0] if len(holders) == 1 else None
        if facts is None:          # not known where it runs: the GPU's own holder, when there is one
            return sole
        if facts.pod_uid is None:  # a host process (or another runtime's): not the pod's
            return None
        if self._uids is None:     # no checkpoint: only a GPU held by one container says which pod
            return sole
        infos = self._uids.get(facts.pod_uid, ())
        chosen = [info for info in infos if info in holders] or list(infos)
        if not chosen:
            return None            # a pod that holds no GPU: its name is not known, and it is not the holder
        if len(chosen) == 1:
            return chosen[0]
        return dataclasses.replace(chosen[0], container="")   # several of its containers: the pod, not which one

    # -- jobs
    def _job(self, facts: CgroupFacts | None, gpu_index: int, gpu_instance: int | None) -> str:
        if facts is not None and facts.slurm_job is not None:
            return facts.slurm_job
        assert self.jobs is not None
        listed = self.jobs.jobs_for(gpu_index, gpu_instance)
        return listed[0] if len(listed) == 1 else ""
