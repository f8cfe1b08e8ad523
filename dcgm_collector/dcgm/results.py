"""Result types of the handle's calls: GPU attributes, MIG entities and values-since cursors."""

from __future__ import annotations

from dataclasses import dataclass

from dcgm_collector.dcgm.groups import FieldGroup


@dataclass(frozen=True)
class GpuAttributes:
    """``dcgmGetDeviceAttributes``; numbers DCGM could not read are None."""

    gpu_id: int
    name: str
    brand: str
    uuid: str
    pci_bus_id: str
    serial: str
    vbios: str
    inforom_version: str
    driver_version: str
    pci_device_id: int | None
    pci_subsystem_id: int | None
    power_limit_w: int | None
    default_power_limit_w: int | None
    enforced_power_limit_w: int | None
    min_power_limit_w: int | None
    max_power_limit_w: int | None
    slowdown_temp_c: int | None
    shutdown_temp_c: int | None
    fb_total_mib: int | None
    fb_used_mib: int | None
    fb_free_mib: int | None
    bar1_total_mib: int | None
    persistence_mode: int | None
    mig_mode: int | None


@dataclass(frozen=True)
class MigEntity:
    """One row of ``dcgmGetGpuInstanceHierarchy``: a GPU instance or compute instance."""

    entity_group: int
    entity_id: int
    parent_group: int
    parent_id: int
    gpu_uuid: str
    nvml_gpu_index: int
    nvml_instance_id: int
    nvml_compute_instance_id: int
    nvml_profile_id: int
    nvml_profile_slices: int


@dataclass(frozen=True)
class Cursor:
    """Where each field group's values-since read got to (µs, DCGM's nextSinceTimestamp).

    DCGM answers a cursor per call, and a read of several field groups is one
    call each, so the cursor is kept per field group: passing it back returns
    every sample exactly once.  A field group it does not know starts at 0.
    """

    positions: tuple[tuple[int, int], ...]   # (field group id, next since µs)

    def since(self, field_group: FieldGroup | int) -> int:
        key = field_group.id if isinstance(field_group, FieldGroup) else field_group
        return dict(self.positions).get(key, 0)

    def __int__(self) -> int:
        """The earliest position (a conservative single number)."""
        return min((p for _, p in self.positions), default=0)
