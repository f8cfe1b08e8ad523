"""DCGM_EXP_P2P_STATUS: DCGM's NvLink P2P status of every ordered GPU pair.

As dcgm-exporter 4.8 serves it: one series per GPU and peer GPU (the GPU
itself left out), the GPU's identity labels, then ``peer_gpu`` (the peer's
GPU id) and ``link_status`` (the status's name) merged into the sorted label
rows, and the status code as the value (0 OK ... 6 Unknown).  The matrix is
the one the sampler last read; a scrape never asks DCGM.
"""

from __future__ import annotations

from collections.abc import Sequence

from dcgm_collector.expose.families import Family
from dcgm_collector.expose.labels import EntityLabels
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.model import EntityType
from dcgm_collector.series.text import Header
from dcgm_collector.series.view import TargetView

__all__ = ["LINK_STATUS_NAMES", "P2P_STATUS", "P2PStatusFamily", "link_status_name"]

P2P_STATUS = "DCGM_EXP_P2P_STATUS"
FE_GPU = int(EntityType.GPU)

# dcgmNvLinkGpuP2PStatus_t values (index) as dcgm-exporter names them
LINK_STATUS_NAMES = ("OK", "ChipsetNotSupported", "GPUNotSupported", "TopologyNotSupported", "DisabledByRegKey",
                     "NotSupported", "Unknown")


def link_status_name(status: int) -> str:
    """The ``link_status`` label of a P2P status; Unknown for a value past the known ones."""
    return LINK_STATUS_NAMES[status] if 0 <= status < len(LINK_STATUS_NAMES) else "Unknown"


class P2PStatusFamily(Family):
    """One series per sampled GPU and each other GPU DCGM reports a P2P status for."""

    def __init__(self, name: str, header: Header, view: TargetView, entities: Sequence[EntityLabels]) -> None:
        self.name, self.header, self.view = name, header, view
        self.entities = [e for e in entities if e.entity[0] == FE_GPU]
        self._prefixes = {}

    def prefix(self, entity: EntityLabels, peer: int, status: int) -> tuple[str, ...]:
        return self._cached_prefixes((entity.entity, peer, status), entity,
                                     {"peer_gpu": str(peer), "link_status": link_status_name(status)})

    def lines(self, scrape: Scrape) -> list[str]:
        matrix = self.view.p2p
        out = []
        for entity in self.entities:
            peers = matrix.get(entity.entity[1])
            if not peers:
                continue
            for peer, status in sorted(peers.items()):
                out.extend(f"{prefix}{status}\n" for prefix in self.prefix(entity, peer, status))
        return out
