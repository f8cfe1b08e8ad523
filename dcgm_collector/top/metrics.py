"""What ``top`` reads from /metrics: the per-process series and the GPUs' health.

Per-process series are not in the history API, so they come from the
exposition text (``DCGM_EXP_PROCESS_*``, served with ``--processes``); the
health is the worst ``DCGM_EXP_GPU_HEALTH_STATUS`` of each GPU when the
collector serves it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from dcgm_collector.model import HEALTH_RESULTS

__all__ = ["EntityKey", "Process", "entity_key", "health_by_gpu", "parse_exposition", "processes"]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
HEALTH_STATUS = "DCGM_EXP_GPU_HEALTH_STATUS"
# dcgmHealthWatchResult_t values as the collector serves them, as words
HEALTH_WORDS = {value: name.lower() for name, value in HEALTH_RESULTS.items()}
# the labels that tie a process to its workload, in the order a view shows the first one found
WORKLOAD_LABELS = ("pod", "hpc_job", "job", "namespace")

# A GPU (gpu id, no instance) or a MIG instance (gpu id, GPU_I_ID).
EntityKey = tuple[int, str | None]


def entity_key(labels: dict[str, str]) -> EntityKey | None:
    """The GPU or MIG instance a series' labels name, or None for a series of no GPU."""
    try:
        gpu = int(labels["gpu"])
    except (KeyError, ValueError):
        return None
    return gpu, labels.get("GPU_I_ID") or None


def parse_exposition(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each sample line; comments and lines that do not parse are skipped."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match[3])
        except ValueError:
            continue
        labels = {k: re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m[0]], v) for k, v in _LABEL.findall(match[2] or "")}
        yield match[1], labels, value


@dataclass
class Process:
    """One process on one GPU, as its DCGM_EXP_PROCESS_* series say."""

    key: EntityKey
    pid: str
    name: str
    fb_bytes: float | None = None
    sm_util: float | None = None
    workload: str = ""


def processes(samples: list[tuple[str, dict[str, str], float]]) -> list[Process]:
    """The processes /metrics lists, one per GPU and pid, largest framebuffer first."""
    found: dict[tuple[EntityKey, str], Process] = {}
    for name, labels, value in samples:
        if name not in ("DCGM_EXP_PROCESS_FB_USED_BYTES", "DCGM_EXP_PROCESS_SM_UTIL") or "pid" not in labels:
            continue
        key = entity_key(labels)
        if key is None:
            continue
        process = found.setdefault((key, labels["pid"]), Process(key, labels["pid"], labels.get("process_name", "")))
        process.workload = process.workload or next((labels[k] for k in WORKLOAD_LABELS if labels.get(k)), "")
        if name == "DCGM_EXP_PROCESS_FB_USED_BYTES":
            process.fb_bytes = value
        else:
            process.sm_util = value
    return sorted(found.values(), key=lambda p: (-(p.fb_bytes or 0), p.key[0], p.pid))


def health_by_gpu(samples: list[tuple[str, dict[str, str], float]]) -> dict[EntityKey, str]:
    """The worst health result of each GPU over its health systems ("pass", "warn", "fail")."""
    worst: dict[EntityKey, int] = {}
    for name, labels, value in samples:
        key = entity_key(labels) if name == HEALTH_STATUS else None
        if key is not None:
            worst[key] = max(worst.get(key, 0), int(value))
    return {key: HEALTH_WORDS.get(value, str(value)) for key, value in worst.items()}
