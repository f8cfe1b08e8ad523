"""The P2P reader: DCGM's NvLink P2P status matrix, into ``Sampler.p2p``, when the counters ask for it.

Read at start (a DCGM_EXP_P2P_STATUS row that will show nothing is said so,
with its file and line), then with the labels, every LABEL_REFRESH_S: the
matrix changes only with the topology.  A failed read keeps the last matrix.
"""

from __future__ import annotations

import logging
import math
from types import MappingProxyType
from typing import TYPE_CHECKING

from dcgm_collector.collect.readers.labels import LABEL_REFRESH_S
from dcgm_collector.collect.readers.reader import Reader
from dcgm_collector.dcgm import DcgmError

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["P2P_COUNTER", "P2PReader"]

log = logging.getLogger("dcgm_collector.collect.sampler")

P2P_COUNTER = "DCGM_EXP_P2P_STATUS"


class P2PReader(Reader):
    """GPU -> {peer GPU: DCGM's P2P status}, every LABEL_REFRESH_S."""

    name = "p2p"

    def __init__(self, sampler: Sampler) -> None:
        super().__init__(sampler)
        self.every_ticks = max(1, math.ceil(LABEL_REFRESH_S / sampler.interval_s))

    @classmethod
    def for_sampler(cls, sampler: Sampler) -> P2PReader | None:
        """The reader, when the counters have a DCGM_EXP_P2P_STATUS row."""
        return cls(sampler) if any(c.exporter == P2P_COUNTER for c in sampler.counters.exporter_counters()) else None

    def start(self, now: float) -> None:
        sampler = self.sampler
        why = None
        try:
            self._read()
            if not sampler.p2p:
                why = "DCGM answers NOT_SUPPORTED for the NvLink P2P status"
        except DcgmError as error:
            self.count(error.code)
            why = f"reading DCGM's NvLink P2P status failed ({error}); retried every {LABEL_REFRESH_S:g} s"
        self.scheduled(now)
        if why is not None:
            for row in (c for c in sampler.counters.exporter_counters() if c.exporter == P2P_COUNTER):
                log.warning("%s:%d: not serving %s: %s", row.path, row.line, row.name, why)

    def read(self, now: float) -> bool:
        try:
            self._read()
        except DcgmError as error:
            self.count(error.code)
            return False   # the last matrix read stays
        return True

    def _read(self) -> None:
        matrix = self.sampler.handle.nvlink_p2p_status()
        self.sampler.p2p = MappingProxyType({gpu: MappingProxyType(peers) for gpu, peers in matrix.items()})
