"""Who uses each GPU: pod labels and HPC job copies, as one input for the exposition.

dcgm-exporter adds these as "attributes": they render after the label rows,
sorted together with the other attributes (``err_code``, ``err_msg``).  A
GPU held by a pod gets ``pod``, ``namespace`` and ``container`` on each of
its series; a GPU listed in the HPC job mapping directory gets one copy of
each series per job, with ``hpc_job`` (and the pod labels, if any, on every
copy).  A GPU with neither keeps its plain series.

A MIG GPU instance is looked up as its own device: as ``"<gpu>-<GPU_I_ID>"``
(how dcgm-exporter keys MIG series), or by its MIG device UUID, the id the
device plugin hands the kubelet.

``copies(gpu_id, uuid)`` gives the attribute sets (one per copy, each a
sorted tuple of pairs; ``((),)`` when nothing is known), and
``generation`` changes whenever any answer may have, so the exposition
rebuilds its label text only then, not on every scrape.
"""

from __future__ import annotations

from typing import Protocol

from dcgm_collector.model import MigInstance

__all__ = ["AttributeCopies", "GpuAttribution", "NO_COPIES"]

AttributeCopies = tuple[tuple[tuple[str, str], ...], ...]
NO_COPIES: AttributeCopies = ((),)


class _Pods(Protocol):
    @property
    def generation(self) -> int: ...

    def labels_for(self, gpu_index: int, uuid: str) -> dict[str, str]: ...

    def labels_for_instance(self, gpu_index: int, instance_id: int, mig_uuid: str = "") -> dict[str, str]: ...


class _Jobs(Protocol):
    @property
    def generation(self) -> int: ...

    def jobs_for(self, gpu_index: int, instance_id: int | None = None) -> list[str]: ...


class GpuAttribution:
    """Pod labels (a PodMapper) and HPC job copies (an HpcJobMapper), either optional."""

    def __init__(self, pods: _Pods | None = None, jobs: _Jobs | None = None) -> None:
        self.pods = pods
        self.jobs = jobs

    @property
    def generation(self) -> tuple[int, int]:
        return (self.pods.generation if self.pods is not None else 0,
                self.jobs.generation if self.jobs is not None else 0)

    def copies(self, gpu_id: int, uuid: str, instance: MigInstance | None = None) -> AttributeCopies:
        """The attribute sets of a GPU's series, or of one of its MIG GPU instances' series."""
        if self.pods is None:
            pod: dict[str, str] = {}
        elif instance is None:
            pod = self.pods.labels_for(gpu_id, uuid)
        else:
            pod = self.pods.labels_for_instance(gpu_id, instance.instance_id, instance.uuid)
        instance_id = None if instance is None else instance.instance_id
        jobs = self.jobs.jobs_for(gpu_id, instance_id) if self.jobs is not None else []
        if not jobs:
            return (tuple(sorted(pod.items())),)
        return tuple(tuple(sorted({**pod, "hpc_job": job}.items())) for job in jobs)
