"""What a target samples on the node it reaches: the GPUs and MIG instances -d selects, and the counters they support.

dcgm-exporter resolves ``-d`` against the node's GPUs and GPU instances and
leaves out profiling rows the GPUs cannot serve; :func:`discover` does both on
one handle, once per connection.  As in dcgm-exporter, flex mode (``-d f``,
the default) samples a GPU that has MIG instances through its instances only,
``-d g`` samples whole GPUs, ``-d i`` the listed GPU instances.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from dcgm_collector.catalog.counters import CounterSet
from dcgm_collector.collect.levels import ALL, LevelSelectionError, discover_levels
from dcgm_collector.collect.sampler import CONNECTION_CODES
from dcgm_collector.dcgm import DcgmError, Handle
from dcgm_collector.model import DeviceSelection, EntityType, GpuInfo, LevelEntity, MigInstance, id_ranges

__all__ = ["DiscoveryError", "Topology", "discover", "drop_unsupported_profiling", "id_ranges", "mig_instances",
           "select_gpus"]

log = logging.getLogger("dcgm_collector")

NO_COMPUTE_INSTANCE = 0xFFFFFFFF   # a hierarchy row's compute-instance id on GPU-instance rows
FIELD_NAME = 50                    # DCGM_FI_DEV_NAME: a GPU instance's profile name
FIELD_UUID = 54                    # DCGM_FI_DEV_UUID: a GPU instance's MIG device UUID


class DiscoveryError(Exception):
    """A target cannot be set up on what its DCGM offers (a -d GPU it lacks, ...); str() is one line."""


@dataclass(frozen=True)
class Topology:
    """What one connection found: the GPUs and GPU instances to sample and the counters they support."""

    gpu_ids: tuple[int, ...]             # GPUs sampled as whole GPUs
    gpus: tuple[GpuInfo, ...]            # GpuInfo of gpu_ids, then of the GPUs that hold the instances
    counters: CounterSet
    instances: tuple[MigInstance, ...] = ()   # GPU instances sampled on their own
    levels: tuple[LevelEntity, ...] = ()   # NvLinks, NvSwitches, CPUs, cores (collect.levels)

    def gpus_line(self) -> str:
        """Each physical GPU counted once by model, and with MIG which are read through their instances:
        ``GPUs 0-3 (3 x H100, 1 x H200): GPU 3 whole, GPUs 0-2 with MIG through their 12 GPU instances``."""
        def named(ids: Sequence[int]) -> str:
            return f"GPU {id_ranges(ids)}" if len(ids) == 1 else f"GPUs {id_ranges(ids) or 'none'}"

        by_id = {gpu.gpu_id: gpu for gpu in self.gpus}
        models = Counter(gpu.name for gpu in by_id.values())
        line = f"{named(sorted(by_id))} ({', '.join(f'{n} x {model}' for model, n in models.items()) or 'none'})"
        instances = self.instances
        if not instances:
            return line
        mig = sorted({instance.gpu_id for instance in instances})
        parts = [f"{named(self.gpu_ids)} whole"] if self.gpu_ids else []
        their = "its" if len(mig) == 1 else "their"
        parts.append(f"{named(mig)} with MIG through {their} {len(instances)} GPU instance"
                     f"{'s' * (len(instances) != 1)}")
        return f"{line}: {', '.join(parts)}"

    @property
    def identity(self) -> tuple[tuple[int, str], ...]:
        """Same identity, same rings: GPU ids with their UUIDs, and the instances with their profiles."""
        return (tuple((gpu.gpu_id, gpu.uuid) for gpu in self.gpus)
                + tuple((instance.entity_id, instance.profile) for instance in self.instances))


def discover(handle: Handle, counters: CounterSet, devices: DeviceSelection,
             switches: DeviceSelection = ALL, cpus: DeviceSelection = ALL) -> Topology:
    """The GPUs and GPU instances ``devices`` selects on this handle's node, the links, switches and
    CPUs ``switches`` and ``cpus`` select (-s, -p), and the counters they support."""
    instances: list[MigInstance] = []
    if devices.kind in ("f", "i"):
        instances = mig_instances(handle)
    if devices.kind == "i":
        instances = _select_instances(instances, devices)
        gpu_ids: list[int] | None = []
    else:
        gpu_ids = select_gpus(handle, devices)
        if devices.kind == "f":
            held = {instance.gpu_id for instance in instances}
            gpu_ids = [gpu for gpu in handle.gpu_ids(supported_only=True) if gpu not in held]
    parents = list(dict.fromkeys(instance.gpu_id for instance in instances))
    counters = drop_unsupported_profiling(handle, counters, (gpu_ids or []) + parents or None)
    ids = gpu_ids if gpu_ids is not None else handle.gpu_ids(supported_only=True)
    by_id = {gpu.gpu_id: gpu for gpu in handle.gpus()}
    held_or_whole = list(dict.fromkeys(list(ids) + parents))
    infos = [by_id[gpu] for gpu in held_or_whole if gpu in by_id]
    try:
        # dcgm-exporter enumerates the links of the GPUs -d names (all with f); -d i names none
        link_gpus = () if devices.kind == "i" else held_or_whole
        levels = discover_levels(handle, counters, link_gpus, switches, cpus)
    except LevelSelectionError as error:
        raise DiscoveryError(str(error)) from None
    return Topology(tuple(ids), tuple(infos), counters, tuple(instances), levels)


def mig_instances(handle: Handle) -> list[MigInstance]:
    """The node's GPU instances in GPU order, each with its profile name and MIG UUID as DCGM reads them live."""
    try:
        rows = handle.mig_hierarchy()
    except DcgmError as error:
        if error.code in CONNECTION_CODES:
            raise
        log.warning("cannot read the MIG hierarchy (%s); sampling whole GPUs", error)
        return []
    found = []
    for row in rows:
        if row.entity_group != EntityType.GPU_I or row.nvml_compute_instance_id != NO_COMPUTE_INSTANCE:
            continue
        found.append(MigInstance(row.entity_id, row.parent_id, row.nvml_instance_id,
                                 *_name_and_uuid(handle, row.entity_id)))
    return sorted(found, key=lambda instance: (instance.gpu_id, instance.entity_id))


def _name_and_uuid(handle: Handle, entity_id: int) -> tuple[str, str]:
    try:
        values = handle.live_values([(int(EntityType.GPU_I), entity_id)], [FIELD_NAME, FIELD_UUID])
    except DcgmError as error:
        if error.code in CONNECTION_CODES:
            raise
        return "", ""
    name, uuid = (v.value for v in values)
    # a DCGM that answers an instance's UUID with its GPU's gives no MIG device UUID
    return (name if isinstance(name, str) else "",
            uuid if isinstance(uuid, str) and uuid.startswith("MIG-") else "")


def _select_instances(instances: list[MigInstance], selection: DeviceSelection) -> list[MigInstance]:
    if not instances:
        raise DiscoveryError(f"-d {selection}: no GPU has MIG instances on this node; use -d f or -d g")
    by_id = {instance.entity_id: instance for instance in instances}
    if selection.ids is None:
        return instances
    missing = [i for i in selection.ids if i not in by_id]
    if missing:
        raise DiscoveryError(f"-d {selection}: no GPU instance {', '.join(map(str, missing))} "
                             f"(there are {id_ranges(sorted(by_id))})")
    return [by_id[i] for i in selection.ids]


def select_gpus(handle: Handle, selection: DeviceSelection) -> list[int] | None:
    """GPU ids -d g selects on the handle's node (None: every supported GPU); DiscoveryError for ids it lacks."""
    present = handle.gpu_ids(supported_only=False)
    if selection.kind in ("f", "i") or selection.ids is None:
        return None
    missing = [gpu for gpu in selection.ids if gpu not in present]
    if missing:
        raise DiscoveryError(f"-d {selection}: no GPU {', '.join(map(str, missing))} on this node "
                          f"(it has {id_ranges(present) or 'none'})")
    return list(selection.ids)


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
