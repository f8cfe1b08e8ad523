"""What a process's cgroup says about it: its Kubernetes pod, its container, its Slurm job.

``/proc/<pid>/cgroup`` has one line per hierarchy, ``<id>:<controllers>:<path>``:
a v1 hierarchy's lines name their controllers, the v2 (unified) line is
``0::<path>``.  The kubelet and the container runtime name the cgroups they
make after the pod and the container, and Slurm's cgroup plugins after the
job, so the path alone tells where a process runs:

* the kubelet's systemd driver nests ``kubepods.slice/kubepods-<qos>.slice/
  kubepods-<qos>-pod<uid>.slice`` (``kubepods-pod<uid>.slice`` for a
  Guaranteed pod), the pod's UID with ``_`` for ``-`` (systemd gives ``-`` a
  meaning of its own); its cgroupfs driver ``/kubepods/<qos>/pod<uid>/``;
* the runtime's container cgroup is the last segment, the 64 hex digits of
  the container id, bare (cgroupfs) or as a systemd scope,
  ``cri-containerd-<id>.scope``, ``docker-<id>.scope``, ``crio-<id>.scope``;
* Slurm's v1 plugin puts a job step in ``/slurm/uid_<uid>/job_<id>/step_<s>``
  (``/slurm_<node>/...`` with several slurmd on one host), its v2 plugin in
  ``/system.slice/slurmstepd.scope/job_<id>/step_<s>/...``.

A collector in a container with a cgroup namespace of its own sees the
paths of other cgroups relative to its own root (``/../../kubepods...``);
the segments are the same, so they are found all the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CgroupFacts", "MAX_CGROUP_FILE_BYTES", "parse_cgroup", "read_cgroup"]

MAX_CGROUP_FILE_BYTES = 64 * 1024   # a few hundred bytes in practice; more is not a cgroup file worth reading

# kubepods-pod<uid>.slice, kubepods-burstable-pod<uid>.slice, kubepods-besteffort-pod<uid>.slice
_SYSTEMD_POD = re.compile(r"^kubepods(?:-[a-z]+)?-pod([0-9a-fA-F][0-9a-fA-F_]*)\.slice$")
_CGROUPFS_POD = re.compile(r"^pod([0-9a-fA-F][0-9a-fA-F-]*)$")
_CONTAINER = re.compile(r"^(?:(?:cri-containerd|containerd|docker|crio|libpod)-)?([0-9a-f]{64})(?:\.scope)?$")
_SLURM_JOB = re.compile(r"^job_([0-9]+)$")


@dataclass(frozen=True)
class CgroupFacts:
    """What one process's cgroup lines name; None where they name nothing."""

    pod_uid: str | None = None        # the pod's UID as the API server writes it (with dashes)
    container_id: str | None = None   # the container's id, 64 hex digits
    slurm_job: str | None = None      # the Slurm job id

    @property
    def in_pod(self) -> bool:
        return self.pod_uid is not None


def _pod_uid(segments: list[str]) -> str | None:
    for segment in segments:
        found = _SYSTEMD_POD.match(segment)
        if found is not None:
            return found.group(1).replace("_", "-").lower()
    # cgroupfs: pod<uid> only below a kubepods folder, so a stray "pod..." folder elsewhere is not taken for one
    for at, segment in enumerate(segments):
        if segment.startswith("kubepods"):
            for inner in segments[at + 1:]:
                found = _CGROUPFS_POD.match(inner)
                if found is not None:
                    return found.group(1).lower()
            break
    return None


def _slurm_job(segments: list[str]) -> str | None:
    for at, segment in enumerate(segments):
        if segment.startswith("slurm"):   # slurm, slurm_<node>, slurmstepd.scope
            for inner in segments[at + 1:]:
                found = _SLURM_JOB.match(inner)
                if found is not None:
                    return found.group(1)
            break
    return None


def parse_cgroup(text: str) -> CgroupFacts:
    """The pod UID, container id and Slurm job a ``/proc/<pid>/cgroup`` text names.

    The v2 line is read first (on a hybrid host it is the one the runtime
    and the kubelet keep current), then the v1 lines in order; the first
    line that names a thing gives it.
    """
    paths: list[str] = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            paths.insert(0, parts[2])
        else:
            paths.append(parts[2])
    pod = container = job = None
    for path in paths:
        segments = [segment for segment in path.split("/") if segment and segment != ".."]
        if not segments:
            continue
        if pod is None:
            pod = _pod_uid(segments)
        if container is None and (found := _CONTAINER.match(segments[-1])) is not None:
            container = found.group(1)
        if job is None:
            job = _slurm_job(segments)
    return CgroupFacts(pod, container, job)


def read_cgroup(pid: int, proc_root: str = "/proc") -> CgroupFacts | None:
    """``parse_cgroup`` of ``/proc/<pid>/cgroup``; None when it cannot be read (the process is gone, or is not
    in this PID namespace)."""
    try:
        with open(f"{proc_root}/{int(pid)}/cgroup", "rb") as file:
            data = file.read(MAX_CGROUP_FILE_BYTES)
    except OSError:
        return None
    return parse_cgroup(data.decode("utf-8", "replace"))
