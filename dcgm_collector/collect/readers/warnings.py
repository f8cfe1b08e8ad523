"""The warning reader (--warnings): every sample of each GPU's precursor fields through its rules, twice a second.

It reads the rows its rings got since its last read (every sample, at the
sampling rate: nothing is lost between two reads) for the fields the rules
need (warning_rules.WATCHED, which app.py has the sampler watch whether the
counters serve them or not), and the XIDs of the event ring, into one
:class:`~dcgm_collector.collect.readers.warning_rules.GpuWarnings` per GPU.
Each read writes, for every GPU, ``DCGM_EXP_GPU_WARNING`` 0 or 1 for every
reason and ``DCGM_EXP_GPU_ERROR_RATE`` for every error counter with a rate
(series.warnings) into a small store of its own that the exposition serves.
A warning that starts (a reason going from 0 to 1) is logged once and
handed to the flight recorder's trigger, as an XID is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from dcgm_collector.catalog.fields import XID_FIELD
from dcgm_collector.collect.readers.reader import Reader
from dcgm_collector.collect.readers.warning_rules import POWER, POWER_LIMIT, WATCHED, GpuWarnings
from dcgm_collector.model import EntityType
from dcgm_collector.rings.ring import SAMPLE_OK, RingBuffer
from dcgm_collector.rings.series_store import SeriesStore, StoreKey
from dcgm_collector.series.triggers import TriggerSink
from dcgm_collector.series.warnings import (
    COUNTER_LABEL,
    ERROR_COUNTERS,
    ERROR_RATE_FAMILY,
    REASON_LABEL,
    REASON_NAMES,
    WARNING_FAMILY,
    WarningThresholds,
)

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["WarningReader"]

log = logging.getLogger("dcgm_collector.collect.warnings")

STORE_ROWS = 8          # the exposition reads the newest row only
MIN_TTL_S = 60.0
_LABEL_BYTES = 1024     # allowance per series for its key and labels (series_store._key_bytes)
_GPU = int(EntityType.GPU)
# the limit before the power, so that a batch's power samples are compared with its own limit
_FEED_ORDER = tuple(sorted(WATCHED, key=lambda f: (f != POWER_LIMIT, f == POWER)))


class WarningReader(Reader):
    """Twice a second: each GPU's new samples through its rules; the warnings and rates into :attr:`store`."""

    name = "warnings"
    every_s = 0.5
    reads_dcgm = False

    def __init__(self, sampler: Sampler, thresholds: WarningThresholds, sink: TriggerSink | None,
                 target: str) -> None:
        super().__init__(sampler)
        self.thresholds = thresholds
        self.sink = sink
        self.target = target
        self.gpus: dict[int, GpuWarnings] = {gpu: GpuWarnings(thresholds) for gpu in sampler.gpu_ids}
        self.holding: dict[int, dict[str, str]] = {gpu: {} for gpu in sampler.gpu_ids}
        # (ring, [(column, gpu, field id)]) for each ring holding a watched GPU field
        self._columns: list[tuple[RingBuffer, list[tuple[int, int, int]]]] = []
        for ring in sampler.rings.values():
            picked = [(column, key.entity_id, key.field_id) for column, key in enumerate(ring.series)
                      if key.entity_group == _GPU and key.field_id in WATCHED and key.entity_id in self.gpus]
            if picked:
                picked.sort(key=lambda c: _FEED_ORDER.index(c[2]))
                self._columns.append((ring, picked))
        self._since: dict[int, int] = {}
        self._event_since = 0
        max_series = max(1, len(self.gpus)) * (len(REASON_NAMES) + len(ERROR_COUNTERS))
        self.store = SeriesStore(max_series, STORE_ROWS, ttl_s=max(MIN_TTL_S, 10 * sampler.interval_s),
                                 max_bytes=SeriesStore.bytes_for(max_series, STORE_ROWS) + max_series * _LABEL_BYTES)
        self._last_ts = 0

    @classmethod
    def factory(cls, thresholds: WarningThresholds, sink: TriggerSink | None,
                target: str) -> Callable[[Sampler], Reader | None]:
        """Makes a sampler's warning reader; the sampler watches the fields it reads (``watch_fields``)."""
        def make(sampler: Sampler) -> Reader | None:
            return cls(sampler, thresholds, sink, target)
        make.watch_fields = WATCHED   # type: ignore[attr-defined]  # read by the sampler's watch plan
        return make

    def start(self, now: float) -> None:
        """Read from what the rings already hold (a resumed sampler's), then every half second."""
        self.read(now)
        self.scheduled(now)

    def read(self, now: float) -> bool:
        for ring, picked in self._columns:
            rows = ring.rows_since(self._since.get(id(ring), 0))
            if not len(rows.ts):
                continue
            self._since[id(ring)] = int(rows.ts[-1]) + 1
            for column, gpu, field_id in picked:
                good = rows.status[:, column] == SAMPLE_OK
                if good.any():
                    self.gpus[gpu].feed(field_id, rows.ts[good].tolist(), rows.values[good, column].tolist())
        events = self.sampler.events.since(self._event_since)
        if len(events.ts):
            self._event_since = int(events.ts[-1]) + 1
            xids = (events.field_id == XID_FIELD) & (events.entity_group == _GPU)
            for ts, gpu, value in zip(events.ts[xids].tolist(), events.entity_id[xids].tolist(),
                                      events.value[xids].tolist()):
                if gpu in self.gpus:
                    self.gpus[gpu].xid(int(value), int(ts))
        self._evaluate()
        return True

    def _evaluate(self) -> None:
        now_us = int(self.sampler.clock.time() * 1e6)
        ts = max(now_us, self._last_ts + 1)
        self._last_ts = ts
        samples: dict[StoreKey, float] = {}
        lost = set(self.sampler.stats.lost_gpus)
        for gpu, rules in self.gpus.items():
            if gpu in lost:
                continue   # its series stop with the GPU's own
            rates = rules.rates()
            holding = rules.holding(max(now_us, rules.newest_ts), rates)
            for reason in REASON_NAMES:
                samples[StoreKey(_GPU, gpu, WARNING_FAMILY.field_id, ((REASON_LABEL, reason),))] = \
                    1.0 if reason in holding else 0.0
            for counter in ERROR_COUNTERS:
                rate = rates.get(counter)
                if rate is not None:
                    samples[StoreKey(_GPU, gpu, ERROR_RATE_FAMILY.field_id, ((COUNTER_LABEL, counter),))] = \
                        float(np.float64(rate))
            self._started(gpu, holding)
        self.store.append(ts, samples)

    def _started(self, gpu: int, holding: dict[str, str]) -> None:
        before = self.holding.get(gpu, {})
        for reason in holding.keys() - before.keys():
            log.warning("early warning on GPU %d: %s (%s)", gpu, reason, holding[reason])
            if self.sink is not None:
                self.sink("warning", f"early warning {reason} on GPU {gpu}: {holding[reason]}", [gpu],
                          self.target, None)
        for reason in before.keys() - holding.keys():
            log.info("early warning on GPU %d cleared: %s", gpu, reason)
        self.holding[gpu] = holding
