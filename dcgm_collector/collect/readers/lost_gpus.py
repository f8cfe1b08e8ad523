"""The lost-GPU reader: a GPU DCGM lost without failing a drain is found and taken out of the sampler's group.

DCGM keeps sampling a lost GPU, storing a blank for each of its fields
(DcgmCacheManager.cpp: a lost GPU's fields get the NVML GPU_IS_LOST error
value), so a drain does not fail.  The tick counts the cells it drained and the
blank ones among them; once every LOST_GPU_CHECK_EVERY_S, when the share of
blanks rose above the lowest share seen in one interval (fields a GPU does not
support are always blank), this reader asks DCGM for each GPU's status and
takes those gone out of the group: their ring series simply get no new rows,
``SamplerStats.lost_gpus`` names them, and /health says which stopped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from dcgm_collector.collect.readers.reader import Reader
from dcgm_collector.dcgm import DcgmError

if TYPE_CHECKING:
    from dcgm_collector.collect.sampler import Sampler

__all__ = ["GONE_STATUSES", "LOST_GPU_CHECK_EVERY_S", "LostGpusReader", "remove_lost_gpus"]

log = logging.getLogger("dcgm_collector.collect.sampler")

# Entity statuses of a GPU that can no longer be read.
GONE_STATUSES = frozenset({"Lost", "Inaccessible", "Detached", "Disabled"})
# Asking for each GPU's status is one call per GPU, which on a remote hostengine is one round trip
# each: not worth making every tick, and once a second is soon enough for /health.
LOST_GPU_CHECK_EVERY_S = 1.0


class LostGpusReader(Reader):
    """Once a second: when more cells came back blank than usual, the GPUs DCGM reports as gone leave the group."""

    name = "lost-gpus"
    every_s = LOST_GPU_CHECK_EVERY_S

    def __init__(self, sampler: Sampler) -> None:
        super().__init__(sampler)
        self.usual_blank_share = -1.0   # the lowest share of blanks seen in one interval (none yet: -1)

    @classmethod
    def for_sampler(cls, sampler: Sampler) -> LostGpusReader:
        return cls(sampler)

    def start(self, now: float) -> None:
        """Nothing at start: the first tick looks (next_at is still 0)."""

    def read(self, now: float) -> bool:
        if self.blanker_than_usual():
            remove_lost_gpus(self.sampler)
        return True

    def blanker_than_usual(self) -> bool:
        """Whether the cells drained since the last call had more blanks than the best interval had."""
        sampler = self.sampler
        cells, blanks = sampler._cells, sampler._blank_cells
        sampler._cells = sampler._blank_cells = 0
        if not cells:
            return False
        share = blanks / cells
        usual = self.usual_blank_share
        self.usual_blank_share = share if usual < 0 else min(usual, share)
        return share > usual   # the first interval is always checked


def remove_lost_gpus(sampler: Sampler) -> bool:
    """Take the GPUs DCGM reports as gone out of the sampler's group; True when there were any.

    Also what the sampler does when a drain fails, before it retries the drain.
    """
    lost = []
    for gpu in sorted(sampler._live_gpus, key=sampler.gpu_ids.index):
        try:
            status = sampler.handle.gpu_status(gpu)
        except DcgmError as error:
            sampler._count(error.code)
            return False
        if status in GONE_STATUSES:
            lost.append(gpu)
    for gpu in lost:
        _remove_gpu(sampler, gpu)
    return bool(lost)


def _remove_gpu(sampler: Sampler, gpu: int) -> None:
    assert sampler.group is not None
    try:
        sampler.handle.remove_from_group(sampler.group, [gpu])
    except DcgmError as error:
        sampler._count(error.code)
        return
    sampler._live_gpus.discard(gpu)
    sampler.stats.lost_gpus = (*sampler.stats.lost_gpus, gpu)
    log.warning("GPU %d is lost: its series stop, the other GPUs carry on", gpu)
