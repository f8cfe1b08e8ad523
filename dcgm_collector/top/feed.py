"""Keeps a :class:`NodeState` current: the history API at each poll, /metrics and /health once a second."""

from __future__ import annotations

import time

from dcgm_collector.top.client import Connection, SamplePoller
from dcgm_collector.top.metrics import health_by_gpu, parse_exposition, processes
from dcgm_collector.top.model import NodeState

__all__ = ["MAX_RATE_HZ", "METRICS_EVERY_S", "Feed"]

MAX_RATE_HZ = 10.0
# /metrics is a large answer and the process series change once a second at most: read it this often
METRICS_EVERY_S = 1.0


class Feed:
    """The node as one collector shows it; :meth:`poll` brings it up to date or raises TopError."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.poller = SamplePoller(connection)
        self.node = NodeState()
        self._metrics_at: float | None = None
        self.gaps = 0     # answers that said samples were overwritten in the rings before they were read

    def poll(self) -> None:
        now = time.monotonic()
        if self._metrics_at is None or now - self._metrics_at >= METRICS_EVERY_S:
            self._metrics_at = now
            self._read_metrics()
        self.node.ingest(self.poller.poll())
        self.node.served = self.poller.served
        if self.poller.gap:
            self.gaps += 1

    def _read_metrics(self) -> None:
        samples = list(parse_exposition(self.connection.text("/metrics")))
        names = {name for name, _, _ in samples}
        served = "DCGM_EXP_PROCESS_FB_USED_BYTES" in names or "DCGM_EXP_PROCESS_COUNT" in names
        self.node.processes = processes(samples) if served else None
        self.node.health = health_by_gpu(samples)
        health = self.connection.text("/health").strip().splitlines()
        self.node.node_health = health[0] if health else ""

    def refresh_s(self) -> float:
        """How long to wait between polls: the collector's sampling interval, at most 10 a second."""
        interval = self.node.sample_interval_s()
        return max(1 / MAX_RATE_HZ, interval if interval is not None else 1.0)
