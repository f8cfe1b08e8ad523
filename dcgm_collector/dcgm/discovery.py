"""The handle's discovery calls: GPUs, their attributes and status, entities, MIG, NvLink, CPUs, the hostengine.

:class:`Discovery` is a base class of :class:`~dcgm_collector.dcgm.handle.Handle`;
it reads through the handle's ``_h()`` and creates nothing, so it owns no state.
"""

from __future__ import annotations

from dcgm_collector.dcgm.checks import _INT32_MAX, _entity_group, _gpu_id
from dcgm_collector.dcgm.errors import check
from dcgm_collector.dcgm.library import _c_string, _parse_build_info
from dcgm_collector.dcgm.results import GpuAttributes, MigEntity
from dcgm_collector.dcgm.values import _INT32_BLANK
from dcgm_collector.ext._native import ffi, lib
from dcgm_collector.model import GpuInfo

_ENTITY_STATUS = {
    getattr(lib, name): name[len("DcgmEntityStatus"):]
    for name in dir(lib) if name.startswith("DcgmEntityStatus")
}


class Discovery:
    """What DCGM knows of the machine; mixed into Handle, which supplies ``_h()``."""

    def _h(self) -> int:
        raise NotImplementedError  # Handle's own _h comes first in its method order

    # -- discovery
    def gpu_ids(self, supported_only: bool = True) -> list[int]:
        """GPU ids (``dcgmGetAllSupportedDevices``, or ``dcgmGetAllDevices`` with supported_only=False)."""
        ids = ffi.new("unsigned int[]", lib.DCGM_MAX_NUM_DEVICES)
        count = ffi.new("int *")
        name = "dcgmGetAllSupportedDevices" if supported_only else "dcgmGetAllDevices"
        check(getattr(lib, name)(self._h(), ids, count), name)
        return [int(ids[i]) for i in range(max(0, min(count[0], lib.DCGM_MAX_NUM_DEVICES)))]

    def gpu_attributes(self, gpu_id: int) -> GpuAttributes:
        """Identity, limits and memory of one GPU (``dcgmGetDeviceAttributes``)."""
        gpu_id = _gpu_id(gpu_id)
        attrs = ffi.new("dcgmDeviceAttributes_t *", {"version": lib.dcgmDeviceAttributes_version})
        check(lib.dcgmGetDeviceAttributes(self._h(), gpu_id, attrs), f"dcgmGetDeviceAttributes(gpu {gpu_id})")
        ids, power, thermal, memory = attrs.identifiers, attrs.powerLimits, attrs.thermalSettings, attrs.memoryUsage

        def number(value: int) -> int | None:
            return None if _INT32_BLANK <= value <= _INT32_MAX else int(value)

        return GpuAttributes(
            gpu_id=gpu_id, name=_c_string(ids.deviceName), brand=_c_string(ids.brandName),
            uuid=_c_string(ids.uuid), pci_bus_id=_c_string(ids.pciBusId), serial=_c_string(ids.serial),
            vbios=_c_string(ids.vbios), inforom_version=_c_string(ids.inforomImageVersion),
            driver_version=_c_string(ids.driverVersion),
            pci_device_id=number(ids.pciDeviceId), pci_subsystem_id=number(ids.pciSubSystemId),
            power_limit_w=number(power.curPowerLimit), default_power_limit_w=number(power.defaultPowerLimit),
            enforced_power_limit_w=number(power.enforcedPowerLimit),
            min_power_limit_w=number(power.minPowerLimit), max_power_limit_w=number(power.maxPowerLimit),
            slowdown_temp_c=number(thermal.slowdownTemp), shutdown_temp_c=number(thermal.shutdownTemp),
            fb_total_mib=number(memory.fbTotal), fb_used_mib=number(memory.fbUsed),
            fb_free_mib=number(memory.fbFree), bar1_total_mib=number(memory.bar1Total),
            persistence_mode=number(attrs.settings.persistenceModeEnabled),
            mig_mode=number(attrs.settings.migModeEnabled),
        )

    def gpu_status(self, gpu_id: int) -> str:
        """Entity status of one GPU: "Ok", "Lost", "Fake", "Detached", ..."""
        gpu_id = _gpu_id(gpu_id)
        status = ffi.new("DcgmEntityStatus_t *")
        check(lib.dcgmGetGpuStatus(self._h(), gpu_id, status), f"dcgmGetGpuStatus(gpu {gpu_id})")
        return _ENTITY_STATUS.get(status[0], str(status[0]))

    def gpus(self) -> list[GpuInfo]:
        """Every GPU DCGM knows (supported or not), with identity and status."""
        infos = []
        for gpu_id in self.gpu_ids(supported_only=False):
            a = self.gpu_attributes(gpu_id)
            infos.append(GpuInfo(gpu_id, a.name, a.uuid, a.pci_bus_id, a.serial, a.driver_version, a.brand,
                                 self.gpu_status(gpu_id)))
        return infos

    def entities(self, entity_group: int, supported_only: bool = False) -> list[int]:
        """Entity ids of one entity group (``dcgmGetEntityGroupEntities``)."""
        entity_group = _entity_group(entity_group)
        flags = lib.DCGM_GEGE_FLAG_ONLY_SUPPORTED if supported_only else 0
        capacity = 64
        while True:
            ids = ffi.new("dcgm_field_eid_t[]", capacity)
            count = ffi.new("int *", capacity)
            status = lib.dcgmGetEntityGroupEntities(self._h(), entity_group, ids, count, flags)
            if status == lib.DCGM_ST_INSUFFICIENT_SIZE and capacity < count[0] <= 1 << 20:
                capacity = count[0]
                continue
            check(status, "dcgmGetEntityGroupEntities")
            return [int(ids[i]) for i in range(max(0, min(count[0], capacity)))]

    def mig_hierarchy(self) -> list[MigEntity]:
        """GPU instances and compute instances of MIG-enabled GPUs."""
        hierarchy = ffi.new("dcgmMigHierarchy_v2 *", {"version": lib.dcgmMigHierarchy_version2})
        check(lib.dcgmGetGpuInstanceHierarchy(self._h(), hierarchy), "dcgmGetGpuInstanceHierarchy")
        rows = []
        for i in range(min(hierarchy.count, lib.DCGM_MAX_HIERARCHY_INFO)):
            row = hierarchy.entityList[i]
            info = row.info
            rows.append(MigEntity(
                int(row.entity.entityGroupId), int(row.entity.entityId),
                int(row.parent.entityGroupId), int(row.parent.entityId), _c_string(info.gpuUuid),
                int(info.nvmlGpuIndex), int(info.nvmlInstanceId), int(info.nvmlComputeInstanceId),
                int(info.nvmlMigProfileId), int(info.nvmlProfileSlices),
            ))
        return rows

    def nvlink_link_states(self) -> tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]:
        """Every GPU's and every NvSwitch's NvLink port states (``dcgmGetNvLinkLinkStatus``).

        ``(gpus, switches)``: entity id -> the dcgmNvLinkLinkState_t of each port, in port order
        (0 not supported, 1 disabled, 2 down, 3 up).
        """
        status = ffi.new("dcgmNvLinkStatus_v5 *", {"version": lib.dcgmNvLinkStatus_version5})
        check(lib.dcgmGetNvLinkLinkStatus(self._h(), status), "dcgmGetNvLinkLinkStatus")
        gpus = {int(status.gpus[i].entityId): tuple(int(s) for s in status.gpus[i].linkState)
                for i in range(min(int(status.numGpus), lib.DCGM_MAX_NUM_DEVICES))}
        switches = {int(status.nvSwitches[i].entityId): tuple(int(s) for s in status.nvSwitches[i].linkState)
                    for i in range(min(int(status.numNvSwitches), lib.DCGM_MAX_NUM_SWITCHES))}
        return gpus, switches

    def cpu_hierarchy(self) -> dict[int, tuple[int, ...]]:
        """The CPUs DCGM monitors, each with the ids of the cores it owns (``dcgmGetCpuHierarchy_v2``)."""
        hierarchy = ffi.new("dcgmCpuHierarchy_v2 *", {"version": lib.dcgmCpuHierarchy_version2})
        check(lib.dcgmGetCpuHierarchy_v2(self._h(), hierarchy), "dcgmGetCpuHierarchy_v2")
        cpus: dict[int, tuple[int, ...]] = {}
        for i in range(min(int(hierarchy.numCpus), lib.DCGM_MAX_NUM_CPUS)):
            row = hierarchy.cpus[i]
            words = row.ownedCores.bitmask
            cpus[int(row.cpuId)] = tuple(core for core in range(lib.DCGM_MAX_NUM_CPU_CORES)
                                         if int(words[core // 64]) >> (core % 64) & 1)
        return cpus

    def version_info(self) -> dict[str, str]:
        """The hostengine's build info (``dcgmHostengineVersionInfo``)."""
        info = ffi.new("dcgmVersionInfo_t *", {"version": lib.dcgmVersionInfo_version})
        check(lib.dcgmHostengineVersionInfo(self._h(), info), "dcgmHostengineVersionInfo")
        return _parse_build_info(_c_string(info.rawBuildInfoString))

    def hostengine_healthy(self) -> bool:
        """Cheap liveness probe (``dcgmHostengineIsHealthy``)."""
        health = ffi.new("dcgmHostengineHealth_t *", {"version": lib.dcgmHostengineHealth_version})
        check(lib.dcgmHostengineIsHealthy(self._h(), health), "dcgmHostengineIsHealthy")
        return health.overallHealth == 0

    def supported_profiling_fields(self, gpu_id: int) -> frozenset[int]:
        """Profiling (DCP) field ids one GPU can watch (``dcgmProfGetSupportedMetricGroups``).

        Empty when DCGM answers NOT_SUPPORTED (a GPU without profiling);
        other refusals (no profiling module, no privileges) raise DcgmError.
        """
        gpu_id = _gpu_id(gpu_id)
        groups = ffi.new("dcgmProfGetMetricGroups_t *", {"version": lib.dcgmProfGetMetricGroups_version,
                                                          "gpuId": gpu_id})
        status = lib.dcgmProfGetSupportedMetricGroups(self._h(), groups)
        if status == lib.DCGM_ST_NOT_SUPPORTED:
            return frozenset()
        check(status, f"dcgmProfGetSupportedMetricGroups(gpu {gpu_id})")
        ids: set[int] = set()
        for i in range(min(groups.numMetricGroups, len(groups.metricGroups))):
            group = groups.metricGroups[i]
            ids.update(int(group.fieldIds[j]) for j in range(min(group.numFieldIds, len(group.fieldIds))))
        return frozenset(ids)

    def nvlink_p2p_status(self) -> dict[int, dict[int, int]]:
        """Every GPU's NvLink P2P status with every other GPU (``dcgmGetNvLinkP2PStatus``).

        GPU id -> {peer GPU id: dcgmNvLinkGpuP2PStatus_t value (0 OK .. 6 Unknown)}, the pairs of
        the square matrix DCGM fills for its numGpus GPUs, a GPU with itself left out.  Empty when
        DCGM answers NOT_SUPPORTED, as go-dcgm reads it.
        """
        status = ffi.new("dcgmNvLinkP2PStatus_v1 *", {"version": lib.dcgmNvLinkP2PStatus_version1, "numGpus": 0})
        rc = lib.dcgmGetNvLinkP2PStatus(self._h(), status)
        if rc == lib.DCGM_ST_NOT_SUPPORTED:
            return {}
        check(rc, "dcgmGetNvLinkP2PStatus")
        count = min(int(status.numGpus), lib.DCGM_MAX_NUM_DEVICES)
        matrix: dict[int, dict[int, int]] = {}
        for i in range(count):
            row = status.gpus[i]
            gpu = int(row.entityId)
            matrix[gpu] = {peer: int(row.linkStatus[peer]) for peer in range(count) if peer != gpu}
        return matrix

