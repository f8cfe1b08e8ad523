"""DCGM_EXP_GPU_HEALTH_STATUS: the worst recent health result per entity and health system."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dcgm_collector.expose.families import Family
from dcgm_collector.expose.labels import EntityKey, EntityLabels
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.model import HEALTH_RESULTS as HEALTH_VALUES
from dcgm_collector.model import HEALTH_SYSTEMS
from dcgm_collector.series.text import Header
from dcgm_collector.series.view import TargetView

__all__ = ["HEALTH_STATUS", "HEALTH_SYSTEMS", "HEALTH_VALUES", "HealthFamily", "health_error_name"]

HEALTH_STATUS = "DCGM_EXP_GPU_HEALTH_STATUS"

# dcgmError_t names (dcgm_errors.h), index = code; health_error_code shows them.
_HEALTH_ERROR_NAMES = (
    "OK UNKNOWN UNRECOGNIZED PCI_REPLAY_RATE VOLATILE_DBE_DETECTED VOLATILE_SBE_DETECTED "
    "PENDING_PAGE_RETIREMENTS RETIRED_PAGES_LIMIT RETIRED_PAGES_DBE_LIMIT CORRUPT_INFOROM "
    "CLOCK_THROTTLE_THERMAL POWER_UNREADABLE CLOCK_THROTTLE_POWER NVLINK_ERROR_THRESHOLD NVLINK_DOWN "
    "NVSWITCH_FATAL_ERROR NVSWITCH_NON_FATAL_ERROR NVSWITCH_DOWN NO_ACCESS_TO_FILE NVML_API "
    "DEVICE_COUNT_MISMATCH BAD_PARAMETER CANNOT_OPEN_LIB DENYLISTED_DRIVER NVML_LIB_BAD GRAPHICS_PROCESSES "
    "HOSTENGINE_CONN FIELD_QUERY BAD_CUDA_ENV PERSISTENCE_MODE LOW_BANDWIDTH HIGH_LATENCY CANNOT_GET_FIELD_TAG "
    "FIELD_VIOLATION FIELD_THRESHOLD FIELD_VIOLATION_DBL FIELD_THRESHOLD_DBL UNSUPPORTED_FIELD_TYPE "
    "FIELD_THRESHOLD_TS FIELD_THRESHOLD_TS_DBL THERMAL_VIOLATIONS THERMAL_VIOLATIONS_TS TEMP_VIOLATION "
    "THROTTLING_VIOLATION INTERNAL PCIE_GENERATION PCIE_WIDTH ABORTED TEST_DISABLED CANNOT_GET_STAT "
    "STRESS_LEVEL CUDA_API FAULTY_MEMORY CANNOT_SET_WATCHES CUDA_UNBOUND ECC_DISABLED MEMORY_ALLOC CUDA_DBE "
    "MEMORY_MISMATCH CUDA_DEVICE ECC_UNSUPPORTED ECC_PENDING MEMORY_BANDWIDTH TARGET_POWER API_FAIL "
    "API_FAIL_GPU CUDA_CONTEXT DCGM_API CONCURRENT_GPUS TOO_MANY_ERRORS NVLINK_CRC_ERROR_THRESHOLD "
    "NVLINK_ERROR_CRITICAL ENFORCED_POWER_LIMIT MEMORY_ALLOC_HOST GPU_OP_MODE NO_MEMORY_CLOCKS "
    "NO_GRAPHICS_CLOCKS HAD_TO_RESTORE_STATE L1TAG_UNSUPPORTED L1TAG_MISCOMPARE ROW_REMAP_FAILURE "
    "UNCONTAINED_ERROR EMPTY_GPU_LIST DBE_PENDING_PAGE_RETIREMENTS UNCORRECTABLE_ROW_REMAP PENDING_ROW_REMAP "
    "BROKEN_P2P_MEMORY_DEVICE BROKEN_P2P_WRITER_DEVICE NVSWITCH_NVLINK_DOWN EUD_BINARY_PERMISSIONS "
    "EUD_NON_ROOT_USER EUD_SPAWN_FAILURE EUD_TIMEOUT EUD_ZOMBIE EUD_NON_ZERO_EXIT_CODE EUD_TEST_FAILED "
    "FILE_CREATE_PERMISSIONS PAUSE_RESUME_FAILED PCIE_H_REPLAY_VIOLATION GPU_EXPECTED_NVLINKS_UP "
    "NVSWITCH_EXPECTED_NVLINKS_UP XID_ERROR SBE_VIOLATION DBE_VIOLATION PCIE_REPLAY_VIOLATION "
    "SBE_THRESHOLD_VIOLATION DBE_THRESHOLD_VIOLATION PCIE_REPLAY_THRESHOLD_VIOLATION CUDA_FM_NOT_INITIALIZED "
    "SXID_ERROR ERROR_SENTINEL"
).split()


def health_error_name(code: int) -> str:
    """``DCGM_FR_*`` name of a dcgmError_t; "" for a code outside the table, as dcgm-exporter shows it."""
    return f"DCGM_FR_{_HEALTH_ERROR_NAMES[code]}" if 0 <= code < len(_HEALTH_ERROR_NAMES) else ""


class HealthFamily(Family):
    """DCGM_EXP_GPU_HEALTH_STATUS: the worst recent result per entity and health system.

    "Recent" is what the sampler holds (incidents of the last HEALTH_HOLD_S),
    since DCGM reports a counter's incident only while it moves.  ALL shows the incidents
    DCGM files under ALL, as dcgm-exporter does, not a summary of the others.
    DCGM checks the health of whole GPUs: a MIG GPU instance shows its GPU's
    incidents (``checked_as`` maps an entity to the one DCGM checks).
    """

    def __init__(self, name: str, header: Header, view: TargetView, entities: Sequence[EntityLabels],
                 checked_as: Mapping[EntityKey, EntityKey] | None = None) -> None:
        self.name, self.header, self.view, self.entities = name, header, view, list(entities)
        self.checked_as = dict(checked_as or {})
        self._prefixes = {}

    def prefix(self, entity: EntityLabels, system: str, code_name: str) -> tuple[str, ...]:
        return self._cached_prefixes((entity.entity, system, code_name), entity,
                                     {"health_watch": system, "health_error_code": code_name})

    def lines(self, scrape: Scrape) -> list[str]:
        state = self.view.health
        if state is None:
            return []
        # (entity, system bit) -> (result, error code)
        worst: dict[tuple[EntityKey, int], tuple[int, int]] = {}
        for _, incident in state.recent:
            key = ((incident.entity_group, incident.entity_id), incident.system)
            result = HEALTH_VALUES.get(incident.health, HEALTH_VALUES["FAIL"])
            if key not in worst or result >= worst[key][0]:
                worst[key] = (result, incident.code)
        out = []
        for entity in self.entities:
            for system, bit in HEALTH_SYSTEMS:
                result, code = worst.get((self.checked_as.get(entity.entity, entity.entity), bit), (0, 0))
                out.extend(f"{prefix}{result}\n" for prefix in self.prefix(entity, system, health_error_name(code)))
        return out
