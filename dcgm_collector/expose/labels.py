"""Label text per entity level: one labeller per level, one :class:`EntityLabels` per entity.

Families key their series by entity, ``(entity group, entity id)``, and take
the label text from here, so a new entity level (MIG instances, NvLink,
NvSwitch, CPU) is one labeller in :data:`LABELLERS`, not an edit in every family.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from dcgm_collector.attribution.copies import NO_COPIES, AttributeCopies
from dcgm_collector.expose.options import ExpositionOptions
from dcgm_collector.model import EntityType, GpuInfo, LevelEntity, MigInstance
from dcgm_collector.series.samples import EntityKey
from dcgm_collector.series.text import label_text

__all__ = ["LABELLERS", "CpuCoreLabeller", "CpuLabeller", "EntityKey", "EntityLabels", "GpuLabeller", "Labeller",
           "LevelLabeller", "LinkLabeller", "MigLabeller", "SwitchLabeller"]


@dataclass(frozen=True)
class EntityLabels:
    """One entity's label text: one text per copy of its series (one copy unless HPC jobs share a GPU)."""

    entity: EntityKey
    identity: tuple[tuple[str, str], ...]   # the level's identity labels (GPU: gpu, UUID, ..., hostname)
    labels: tuple[tuple[str, str], ...]     # label rows, sorted by key
    copies: AttributeCopies                 # attributes (pod, namespace, container, hpc_job) of each copy
    commons: tuple[str, ...]                # identity + labels + each copy's attributes, rendered

    @classmethod
    def of(cls, entity: EntityKey, identity: list[tuple[str, str]], labels: Mapping[str, str],
           copies: AttributeCopies = NO_COPIES) -> EntityLabels:
        rows = tuple(sorted(labels.items()))
        commons = tuple(label_text(identity + list(rows) + list(attributes)) for attributes in copies)
        return cls(entity, tuple(identity), rows, copies, commons)

    def pairs(self, extra: Mapping[str, str] | None = None,
              attributes: Mapping[str, str] | None = None) -> tuple[tuple[tuple[str, str], ...], ...]:
        """The labels of each copy as (name, value) pairs, in the order :meth:`render` writes them."""
        if not extra and not attributes:
            return tuple(self.identity + self.labels + tuple(copy) for copy in self.copies)
        merged = dict(self.labels)
        merged.update(extra or {})
        head = self.identity + tuple(sorted(merged.items()))
        return tuple(head + copy for copy in self._merged_copies(attributes))

    def render(self, extra: Mapping[str, str] | None = None,
               attributes: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """Label text of each copy: exporter labels merged into the sorted label rows, then all attributes sorted."""
        if not extra and not attributes:
            return self.commons
        merged = dict(self.labels)
        merged.update(extra or {})
        head = list(self.identity) + sorted(merged.items())
        return tuple(label_text(head + list(copy)) for copy in self._merged_copies(attributes))

    def _merged_copies(self, attributes: Mapping[str, str] | None) -> AttributeCopies:
        """Each copy's attributes with the series' own over them, sorted; an empty one is left out (a process
        known to be in no pod), and copies made alike by them are one (a process's one job over the GPU's)."""
        if not attributes:
            return self.copies
        merged = {tuple(sorted((name, value) for name, value in {**dict(copy), **attributes}.items() if value)): None
                  for copy in self.copies}
        return tuple(merged)


class Labeller(Protocol):
    """The identity labels of one entity level, in dcgm-exporter's order.

    ``info`` is the GPU the entity is or belongs to; ``instance`` the MIG GPU
    instance for the GPU_I level (None on other levels).
    """

    level: EntityType

    def identity(self, info: GpuInfo, options: ExpositionOptions,
                 instance: MigInstance | None = None) -> list[tuple[str, str]]: ...


class GpuLabeller:
    """GPUs: ``gpu, UUID, pci_bus_id, device, modelName, hostname`` (hostname left out with -n;
    ``uuid`` for ``UUID`` with -o, dcgm-exporter 1.x's name)."""

    level = EntityType.GPU

    def identity(self, info: GpuInfo, options: ExpositionOptions,
                 instance: MigInstance | None = None) -> list[tuple[str, str]]:
        identity = _gpu_identity(info, options)
        if options.hostname:
            identity.append(("hostname", options.hostname))
        return identity


class MigLabeller:
    """MIG GPU instances: the GPU labels of the GPU that holds the instance, then
    ``GPU_I_PROFILE, GPU_I_ID`` (profile name, NVML GPU-instance id) before ``hostname``,
    as dcgm-exporter labels an instance's series."""

    level = EntityType.GPU_I

    def identity(self, info: GpuInfo, options: ExpositionOptions,
                 instance: MigInstance | None = None) -> list[tuple[str, str]]:
        if instance is None:
            raise ValueError("a GPU instance's labels need its MigInstance")
        identity = _gpu_identity(info, options)
        identity += [("GPU_I_PROFILE", instance.profile), ("GPU_I_ID", str(instance.instance_id))]
        if options.hostname:
            identity.append(("hostname", options.hostname))
        return identity


def _gpu_identity(info: GpuInfo, options: ExpositionOptions) -> list[tuple[str, str]]:
    model = info.name.replace(" ", "-") if options.replace_blanks_in_model_name else info.name
    uuid = "uuid" if options.use_old_namespace else "UUID"     # dcgm-exporter 1.x's name (-o)
    return [("gpu", str(info.gpu_id)), (uuid, info.uuid), ("pci_bus_id", info.pci_bus_id),
            ("device", f"nvidia{info.gpu_id}"), ("modelName", model)]


class LevelLabeller(Protocol):
    """The identity labels of a link, switch, CPU or core, in dcgm-exporter's order; ``gpu`` is the
    GPU a link belongs to (None for a switch's link and the other levels)."""

    level: EntityType

    def identity(self, entity: LevelEntity, gpu: GpuInfo | None,
                 options: ExpositionOptions) -> list[tuple[str, str]]: ...


def _with_hostname(identity: list[tuple[str, str]], options: ExpositionOptions) -> list[tuple[str, str]]:
    if options.hostname:
        identity.append(("hostname", options.hostname))
    return identity


class LinkLabeller:
    """NvLinks: ``nvlink`` first, then ``nvswitch`` (``nvswitch<N>``) on a switch's port, or on a GPU's
    link ``gpu, gpu_uuid, pci_bus_id, device, model_name`` (not GPU's ``UUID`` and ``modelName``:
    dcgm-exporter's link template names them so), then ``hostname``.  Like dcgm-exporter, a label
    with an empty value is left out, -o does not rename the UUID, and -rbmn leaves the model as is."""

    level = EntityType.LINK

    def identity(self, entity: LevelEntity, gpu: GpuInfo | None,
                 options: ExpositionOptions) -> list[tuple[str, str]]:
        identity = [("nvlink", str(entity.number))]
        if entity.parent_level == EntityType.SWITCH:
            identity.append(("nvswitch", f"nvswitch{entity.parent}"))
        elif gpu is not None:
            identity += [(name, value) for name, value in (
                ("gpu", str(gpu.gpu_id)), ("gpu_uuid", gpu.uuid), ("pci_bus_id", gpu.pci_bus_id),
                ("device", f"nvidia{gpu.gpu_id}"), ("model_name", gpu.name)) if value]
        return _with_hostname(identity, options)


class SwitchLabeller:
    """NvSwitches: ``nvswitch`` (``nvswitch<N>``, its own id), ``hostname``."""

    level = EntityType.SWITCH

    def identity(self, entity: LevelEntity, gpu: GpuInfo | None,
                 options: ExpositionOptions) -> list[tuple[str, str]]:
        return _with_hostname([("nvswitch", f"nvswitch{entity.number}")], options)


class CpuLabeller:
    """CPUs: ``cpu`` (its id), ``hostname``."""

    level = EntityType.CPU

    def identity(self, entity: LevelEntity, gpu: GpuInfo | None,
                 options: ExpositionOptions) -> list[tuple[str, str]]:
        return _with_hostname([("cpu", str(entity.number))], options)


class CpuCoreLabeller:
    """CPU cores: ``cpucore`` (the core's id), ``cpu`` (its CPU's), ``hostname``."""

    level = EntityType.CPU_CORE

    def identity(self, entity: LevelEntity, gpu: GpuInfo | None,
                 options: ExpositionOptions) -> list[tuple[str, str]]:
        return _with_hostname([("cpucore", str(entity.number)), ("cpu", str(entity.parent))], options)


LABELLERS: Mapping[EntityType, Labeller | LevelLabeller] = {
    EntityType.GPU: GpuLabeller(),
    EntityType.GPU_I: MigLabeller(),
    EntityType.LINK: LinkLabeller(),
    EntityType.SWITCH: SwitchLabeller(),
    EntityType.CPU: CpuLabeller(),
    EntityType.CPU_CORE: CpuCoreLabeller(),
}
