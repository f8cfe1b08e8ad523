"""The state a ``top`` view shows: per GPU (or MIG instance) the recent samples of each field, plus the node's.

It is fed the history API's series pieces as they arrive and keeps, per
entity and field, the samples of the last :data:`KEEP_S` seconds (the
longest span a view shows), ordered by timestamp.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dcgm_collector.top.metrics import EntityKey, Process, entity_key

__all__ = ["FIELD", "KEEP_S", "GpuState", "NodeState"]

KEEP_S = 300

# DCGM field ids a view reads, by what they are.
FIELD = {
    "util": 203, "fb_used": 252, "fb_free": 251, "power": 155, "power_limit": 164, "power_limit_requested": 160,
    "gpu_temp": 150, "mem_temp": 140, "sm_clock": 100, "clock_events": 112, "xid": 230,
}

Sample = tuple[int, float | None]


@dataclass
class GpuState:
    """One GPU or MIG instance: its labels and, per field id, [(ts_us, value)] oldest first."""

    key: EntityKey
    labels: dict[str, str] = field(default_factory=dict)
    series: dict[int, list[Sample]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        gpu, instance = self.key
        return f"GPU {gpu}" if instance is None else f"GPU {gpu}/{instance}"

    @property
    def model(self) -> str:
        return self.labels.get("modelName", "-")

    def add(self, field_id: int, samples: Iterable[list[Any]]) -> None:
        rows = self.series.setdefault(field_id, [])
        for ts, value in samples:
            item = (int(ts), None if value is None else float(value))
            if not rows or item[0] >= rows[-1][0]:
                rows.append(item)
            else:   # a slower field group's sample, stamped before one already here
                bisect.insort(rows, item, key=lambda s: s[0])

    def latest(self, name: str) -> float | None:
        """The newest non-blank value of a field, or None when there is none (or the field is not served)."""
        for _, value in reversed(self.series.get(FIELD[name], ())):
            if value is not None:
                return value
        return None

    def samples(self, name: str) -> list[Sample]:
        return self.series.get(FIELD[name], [])

    def prune(self, oldest_us: int) -> None:
        for field_id, rows in self.series.items():
            cut = bisect.bisect_left(rows, oldest_us, key=lambda s: s[0])
            if cut:
                self.series[field_id] = rows[cut:]


@dataclass
class NodeState:
    """Every GPU seen, the fields the collector serves, its processes and health, and the newest timestamp."""

    gpus: dict[EntityKey, GpuState] = field(default_factory=dict)
    served: frozenset[int] = frozenset()
    processes: list[Process] | None = None         # None: the collector serves no process series
    health: dict[EntityKey, str] = field(default_factory=dict)
    node_health: str = ""                           # the first line of /health
    newest_us: int = 0

    def ingest(self, pieces: Iterable[dict[str, Any]]) -> None:
        """Adds history API series pieces (``labels``, ``field_id``, ``samples``) to the GPUs they belong to."""
        for piece in pieces:
            labels = piece.get("labels") or {}
            key = entity_key(labels)
            if key is None or not isinstance(piece.get("field_id"), int):
                continue
            gpu = self.gpus.setdefault(key, GpuState(key))
            if not gpu.labels or labels.get("modelName"):
                gpu.labels = dict(labels)
            samples = piece.get("samples") or []
            gpu.add(piece["field_id"], samples)
            if samples:
                self.newest_us = max(self.newest_us, max(int(s[0]) for s in samples))
        for gpu in self.gpus.values():
            gpu.prune(self.newest_us - KEEP_S * 1_000_000)

    def sample_interval_s(self) -> float | None:
        """The collector's sampling interval, from the spacing of the newest utilisation (or power) samples."""
        for name in ("util", "power", "gpu_temp"):
            for gpu in self.gpus.values():
                rows = gpu.samples(name)[-21:]
                steps = [b[0] - a[0] for a, b in zip(rows, rows[1:]) if b[0] > a[0]]
                if len(steps) >= 3:
                    return statistics.median(steps) / 1e6
        return None

    def health_of(self, key: EntityKey) -> str:
        return self.health.get(key) or self.health.get((key[0], None)) or "-"

    def serves(self, name: str) -> bool:
        return FIELD[name] in self.served
