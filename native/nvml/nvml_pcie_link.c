/*
 * nvml_pcie_link.c -- the PCIe link-layer counters of nvmlDeviceGetFieldValues
 * (replay rollovers, entries into Recovery, the AER-style error counts),
 * worked out from the one PCIe error the node models: the GPU's replays
 * (DCGM field 202, NVML field 94).
 *
 * A replay is the GPU's transmitter resending a TLP the root port refused,
 * so each one answers a NAK the GPU received.  Four replays of the same TLP
 * roll the 2-bit replay number over, which the spec reports as a correctable
 * error and answers by retraining the link (L0 -> Recovery); most replays
 * succeed at the first resend, so the simulated link rolls over once every
 * ROLLOVER_REPLAYS replays.
 *
 * What the GPU's own receiver saw (bad TLPs and DLLPs, receiver errors, NAKs
 * it sent) comes from the host's transmitter, which the node does not model:
 * those counters stay at what the recorded H200 had counted since boot
 * (reference/hardware/h200-2026-11-30/fields.json), as do its retrains.
 */
#include "nvml_internal.h"
#include "../dcgm_field_ids.h"

#define ROLLOVER_REPLAYS 16

/* The recorded card's counts since boot, at idle with no replays. */
enum {
    BOOT_RECOVERIES = 957,
    BOOT_RECEIVER_ERRORS = 14,
    BOOT_BAD_TLPS = 16,
    BOOT_NAKS_SENT = 10,
    BOOT_BAD_DLLPS = 1,
};

bool nvml_is_pcie_link_counter(unsigned int nvml_field_id)
{
    switch (nvml_field_id) {
    case NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER:
    case NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER:
        return true;
    default:
        return nvml_field_id >= NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS &&
               nvml_field_id <= NVML_FI_DEV_PCIE_COUNT_LANE_ERROR;
    }
}

nvmlReturn_t nvml_pcie_link_counter(const nvml_call *call, unsigned int nvml_field_id, unsigned int *count)
{
    sim_value v;
    if (!nvml_sample(call, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, &v))
        return v.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    unsigned int replays = v.i64 < 0 ? 0 : (unsigned int)v.i64;
    unsigned int rollovers = replays / ROLLOVER_REPLAYS;
    switch (nvml_field_id) {
    case NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER: *count = rollovers; break;
    case NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER: *count = BOOT_RECOVERIES + rollovers; break;
    case NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS: *count = rollovers; break;
    case NVML_FI_DEV_PCIE_COUNT_NAKS_RECEIVED: *count = replays; break;
    case NVML_FI_DEV_PCIE_COUNT_RECEIVER_ERROR: *count = BOOT_RECEIVER_ERRORS; break;
    case NVML_FI_DEV_PCIE_COUNT_BAD_TLP: *count = BOOT_BAD_TLPS; break;
    case NVML_FI_DEV_PCIE_COUNT_NAKS_SENT: *count = BOOT_NAKS_SENT; break;
    case NVML_FI_DEV_PCIE_COUNT_BAD_DLLP: *count = BOOT_BAD_DLLPS; break;
    case NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR:
    case NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR:
    case NVML_FI_DEV_PCIE_COUNT_UNSUPPORTED_REQ:
    case NVML_FI_DEV_PCIE_COUNT_LCRC_ERROR:
    case NVML_FI_DEV_PCIE_COUNT_LANE_ERROR:
        *count = 0;
        break;
    default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return NVML_SUCCESS;
}
