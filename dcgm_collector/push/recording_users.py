"""Who used the GPUs of a recording's window: the pods and HPC jobs on their series, and their processes.

The flight recorder's sidecar lists them per GPU, so that the report of a
recording says what ran on the GPU that failed: the pod labels
(``namespace``, ``pod``, ``container``, ``hpc_job``; ``pod_namespace``,
``pod_name``, ``container_name`` with -o) that the GPU's own series carried,
and the processes the process store (--processes) had on it within the
window.  Both lists are bounded, so that a node with a churn of short jobs
still writes a sidecar of a few KiB.
"""

from __future__ import annotations

from typing import Any

from dcgm_collector.series.processes import FAMILY_BY_KEY, OTHER_PID
from dcgm_collector.series.samples import SampleModel

__all__ = ["MAX_PODS", "MAX_PROCESSES", "users_of"]

MAX_PODS = 16        # pods (or jobs) listed per GPU
MAX_PROCESSES = 32   # processes listed per GPU
_POD_LABELS = {"namespace": "namespace", "pod_namespace": "namespace", "pod": "pod", "pod_name": "pod",
               "container": "container", "container_name": "container", "hpc_job": "hpc_job"}
_FB = FAMILY_BY_KEY["fb"].field_id   # every listed process has a framebuffer series


def users_of(model: SampleModel, gpus: list[int], since_us: int) -> dict[int, dict[str, list[dict[str, Any]]]]:
    """GPU -> {"pods": [...], "processes": [...]} for ``gpus``, from what the model holds since ``since_us``."""
    wanted = set(gpus)
    out: dict[int, dict[str, list[dict[str, Any]]]] = {g: {"pods": [], "processes": []} for g in gpus}
    for ring in model.rings:
        for series in ring.series:
            if series.gpu in wanted:
                _add(out[series.gpu]["pods"], _pod(series.labels), MAX_PODS)
    for store in model.stores:
        rows = store.store.rows_since(since_us)
        for key in rows.keys:
            gpu = model.gpu_of.get((key.entity_group, key.entity_id))
            if key.field_id != _FB or gpu not in wanted:
                continue
            labels = dict(key.labels)
            if labels.get("pid") in (None, OTHER_PID):
                continue
            process = {"pid": int(labels["pid"]), "name": labels.get("process_name", "")}
            process.update(_pod(key.labels))
            _add(out[gpu]["processes"], process, MAX_PROCESSES)
    return out


def _pod(labels: Any) -> dict[str, str]:
    found = {}
    for name, value in labels:
        if name in _POD_LABELS and value:
            found[_POD_LABELS[name]] = value
    return found


def _add(listed: list[dict[str, Any]], item: dict[str, Any], most: int) -> None:
    if item and item not in listed and len(listed) < most:
        listed.append(item)
