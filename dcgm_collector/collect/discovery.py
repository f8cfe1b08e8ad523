"""What a target samples on the node it reaches: the GPUs -d selects and the counters they support.

dcgm-exporter resolves ``-d`` against the node's GPUs (or the GPUs that hold
the listed MIG instances) and leaves out profiling rows the GPUs cannot
serve; :func:`discover` does both on one handle, once per connection.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from dcgm_collector.collect.counters import CounterSet
from dcgm_collector.collect.levels import ALL, LevelSelectionError, discover_levels
from dcgm_collector.collect.sampler import CONNECTION_CODES
from dcgm_collector.dcgm import DcgmError, Handle
from dcgm_collector.model import DeviceSelection, GpuInfo, LevelEntity

__all__ = ["DiscoveryError", "Topology", "discover", "drop_unsupported_profiling", "id_ranges", "select_gpus"]

log = logging.getLogger("dcgm_collector")


class DiscoveryError(Exception):
    """A target cannot be set up on what its DCGM offers (a -d GPU it lacks, ...); str() is one line."""


@dataclass(frozen=True)
class Topology:
    """What one connection found: the GPUs to sample and the counters they support."""

    gpu_ids: tuple[int, ...]
    gpus: tuple[GpuInfo, ...]          # GpuInfo of gpu_ids, in that order
    counters: CounterSet
    levels: tuple[LevelEntity, ...] = ()   # NvLinks, NvSwitches, CPUs, cores (collect.levels)

    @property
    def identity(self) -> tuple[tuple[int, str], ...]:
        """Same identity, same rings: GPU ids with their UUIDs."""
        return tuple((gpu.gpu_id, gpu.uuid) for gpu in self.gpus)


def discover(handle: Handle, counters: CounterSet, devices: DeviceSelection,
             switches: DeviceSelection = ALL, cpus: DeviceSelection = ALL) -> Topology:
    """The GPUs ``devices`` selects on this handle's node, the links, switches and CPUs ``switches``
    and ``cpus`` select (-s, -p), and the counters they support."""
    gpu_ids = select_gpus(handle, devices)
    counters = drop_unsupported_profiling(handle, counters, gpu_ids)
    ids = gpu_ids if gpu_ids is not None else handle.gpu_ids(supported_only=True)
    by_id = {gpu.gpu_id: gpu for gpu in handle.gpus()}
    try:
        # dcgm-exporter enumerates the links of the GPUs -d names (all with f); -d i names none
        link_gpus = () if devices.kind == "i" else ids
        levels = discover_levels(handle, counters, link_gpus, switches, cpus)
    except LevelSelectionError as error:
        raise DiscoveryError(str(error)) from None
    return Topology(tuple(ids), tuple(by_id[gpu] for gpu in ids if gpu in by_id), counters, levels)


def select_gpus(handle: Handle, selection: DeviceSelection) -> list[int] | None:
    """GPU ids -d selects on the handle's node (None: every supported GPU); DiscoveryError for ids it lacks."""
    present = handle.gpu_ids(supported_only=False)
    if selection.kind == "i":
        return _gpus_of_instances(handle, selection)
    if selection.kind == "f" or selection.ids is None:
        return None
    missing = [gpu for gpu in selection.ids if gpu not in present]
    if missing:
        raise DiscoveryError(f"-d {selection}: no GPU {', '.join(map(str, missing))} on this node "
                          f"(it has {id_ranges(present) or 'none'})")
    return list(selection.ids)


def _gpus_of_instances(handle: Handle, selection: DeviceSelection) -> list[int]:
    instances = {row.entity_id: row.parent_id for row in handle.mig_hierarchy()
                 if row.nvml_compute_instance_id == 0xFFFFFFFF}
    if not instances:
        raise DiscoveryError(f"-d {selection}: no GPU has MIG instances on this node; use -d f or -d g")
    wanted = sorted(instances) if selection.ids is None else list(selection.ids)
    missing = [i for i in wanted if i not in instances]
    if missing:
        raise DiscoveryError(f"-d {selection}: no GPU instance {', '.join(map(str, missing))} "
                          f"(there are {id_ranges(sorted(instances))})")
    log.warning("-d %s: MIG instances are not sampled on their own yet; sampling the GPUs that hold them",
                selection)
    return list(dict.fromkeys(instances[i] for i in wanted))


def drop_unsupported_profiling(handle: Handle, counters: CounterSet, gpu_ids: Sequence[int] | None) -> CounterSet:
    """The counters without the profiling rows the node's GPUs lack (each dropped with a warning)."""
    if not any(c.field is not None and c.field.is_profiling for c in counters):
        return counters
    gpu = (gpu_ids or handle.gpu_ids(supported_only=True) or [0])[0]
    try:
        supported = handle.supported_profiling_fields(gpu)
    except DcgmError as error:
        if error.code in CONNECTION_CODES:
            raise
        log.warning("cannot ask DCGM which profiling metrics GPU %d has (%s); skipping profiling rows", gpu, error)
        supported = frozenset()
    return counters.without_unsupported_profiling(supported, warn=log.warning)


def id_ranges(ids: Sequence[int]) -> str:
    ids = sorted(ids)
    parts = []
    start = prev = None
    for i in ids + [None]:
        if start is None:
            start = prev = i
        elif i is not None and i == prev + 1:
            prev = i
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    return ",".join(parts)
