/*
 * nvml_internal.h -- the seams inside the simulated libnvidia-ml.so.1.
 *
 *   nvml_core.c     library state, init/shutdown, the simulated clock,
 *                   per-call costs, NO_PERMISSION, errors, system, handles
 *   nvml_device.c   per-device getters
 *   nvml_fields.c   nvmlDeviceGetFieldValues and the cumulative counters
 *   nvml_pcie_link.c  the PCIe link-layer counters among the field values
 *   nvml_events.c   event sets (XIDs from the scenario) and GPM samples
 *   nvml_processes.c  running processes and their utilisation samples
 *
 * Values come from the simulated node (native/node/, compiled into this
 * library; it sees only node.h): every getter asks sim_node_sample for the
 * DCGM field that DCGM itself fills from that NVML call, and converts units
 * the other way round (W -> mW, MiB -> bytes, ratio -> percent), so that a
 * scenario read through either library gives the same numbers.
 */
#ifndef DCGM_SIM_NVML_INTERNAL_H
#define DCGM_SIM_NVML_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "nvml_abi.h"
#include "../node/node.h"

#define NVML_HIDDEN __attribute__((visibility("hidden")))

/* Environment read at the first nvmlInit (documented in README.md beside this file). */
#define NVML_SIM_COSTS_ENV "DCGM_SIM_NVML_COSTS"
#define NVML_SIM_NO_PERMISSION_ENV "DCGM_SIM_NVML_NO_PERMISSION"
#define NVML_SIM_TIME_ENV "DCGM_SIM_NVML_TIME_US"
#define NVML_SIM_NOT_LOADED_ENV "DCGM_SIM_NVML_NOT_LOADED_WHILE"
#define NVML_SIM_SCENARIO_ENV "DCGM_SIM_SCENARIO"

/* Every exported entry point that costs something or may be denied. */
typedef enum nvml_fn {
    NVML_FN_SYSTEM_DRIVER_VERSION,
    NVML_FN_SYSTEM_NVML_VERSION,
    NVML_FN_SYSTEM_CUDA_VERSION,
    NVML_FN_DEVICE_COUNT,
    NVML_FN_HANDLE_BY_INDEX,
    NVML_FN_HANDLE_BY_UUID,
    NVML_FN_HANDLE_BY_PCI_BUS_ID,
    NVML_FN_HANDLE_BY_SERIAL,
    NVML_FN_INDEX,
    NVML_FN_NAME,
    NVML_FN_UUID,
    NVML_FN_SERIAL,
    NVML_FN_PCI_INFO,
    NVML_FN_BRAND,
    NVML_FN_ARCHITECTURE,
    NVML_FN_CUDA_COMPUTE_CAPABILITY,
    NVML_FN_INFOROM_VERSION,
    NVML_FN_INFOROM_IMAGE_VERSION,
    NVML_FN_VBIOS_VERSION,
    NVML_FN_MEMORY_INFO,
    NVML_FN_MEMORY_INFO_V2,
    NVML_FN_BAR1_MEMORY,
    NVML_FN_UTILIZATION_RATES,
    NVML_FN_ENCODER_UTILIZATION,
    NVML_FN_DECODER_UTILIZATION,
    NVML_FN_TEMPERATURE,
    NVML_FN_TEMPERATURE_V,
    NVML_FN_TEMPERATURE_THRESHOLD,
    NVML_FN_POWER_USAGE,
    NVML_FN_POWER_MANAGEMENT_LIMIT,
    NVML_FN_POWER_MANAGEMENT_DEFAULT_LIMIT,
    NVML_FN_POWER_MANAGEMENT_LIMIT_CONSTRAINTS,
    NVML_FN_ENFORCED_POWER_LIMIT,
    NVML_FN_POWER_MANAGEMENT_MODE,
    NVML_FN_SET_POWER_MANAGEMENT_LIMIT,
    NVML_FN_TOTAL_ENERGY_CONSUMPTION,
    NVML_FN_CLOCK_INFO,
    NVML_FN_MAX_CLOCK_INFO,
    NVML_FN_APPLICATIONS_CLOCK,
    NVML_FN_DEFAULT_APPLICATIONS_CLOCK,
    NVML_FN_CLOCK,
    NVML_FN_CURRENT_CLOCKS_EVENT_REASONS,
    NVML_FN_SUPPORTED_CLOCKS_EVENT_REASONS,
    NVML_FN_PCIE_THROUGHPUT,
    NVML_FN_PCIE_REPLAY_COUNTER,
    NVML_FN_PCIE_LINK,
    NVML_FN_ECC_MODE,
    NVML_FN_TOTAL_ECC_ERRORS,
    NVML_FN_RETIRED_PAGES,
    NVML_FN_RETIRED_PAGES_PENDING,
    NVML_FN_REMAPPED_ROWS,
    NVML_FN_FAN_SPEED,
    NVML_FN_PERFORMANCE_STATE,
    NVML_FN_COMPUTE_MODE,
    NVML_FN_PERSISTENCE_MODE,
    NVML_FN_DISPLAY,
    NVML_FN_DRIVER_MODEL,
    NVML_FN_MIG_MODE,
    NVML_FN_MIG_DEVICE_QUERY,
    NVML_FN_RUNNING_PROCESSES,
    NVML_FN_PROCESS_UTILIZATION,
    NVML_FN_VIOLATION_STATUS,
    NVML_FN_P2P_STATUS,
    NVML_FN_NVLINK_STATE,
    NVML_FN_GRID_LICENSABLE_FEATURES,
    NVML_FN_FIELD_VALUES,
    NVML_FN_EVENT_SET,
    NVML_FN_REGISTER_EVENTS,
    NVML_FN_SUPPORTED_EVENT_TYPES,
    NVML_FN_EVENT_WAIT,
    NVML_FN_GPM_QUERY_SUPPORT,
    NVML_FN_GPM_SAMPLE_ALLOC,
    NVML_FN_GPM_SAMPLE_GET,
    NVML_FN_GPM_METRICS_GET,
    NVML_FN_COUNT
} nvml_fn;

/* A device handle points at one of these; index is the node's GPU index. */
struct nvmlDevice_st {
    unsigned int index;
    unsigned int mig_instance;  /* MIG device handles: the GPU instance (whole-GPU handles: 0, unused) */
};

/* What a device call has once it may go ahead. */
typedef struct nvml_call {
    unsigned int gpu;
    int64_t t_us;               /* simulated time, us after init */
    const sim_gpu_info *sim;         /* the GPU's plan and model (read only) */
} nvml_call;

/*
 * Checks in the order real NVML reports them: initialised, arguments
 * (device handle valid), denied for want of root, GPU lost; then pays the
 * function's cost.  On NVML_SUCCESS the caller holds the library's read
 * lock and must end with nvml_end; on anything else nothing is held.
 */
NVML_HIDDEN nvmlReturn_t nvml_begin_device(nvml_fn fn, nvmlDevice_t device, nvml_call *call);

/* The same for calls that take no device (the GPU fields of call are 0). */
NVML_HIDDEN nvmlReturn_t nvml_begin(nvml_fn fn, nvml_call *call);
NVML_HIDDEN nvmlReturn_t nvml_end(nvmlReturn_t rc);

/* The exported NVML entry points, beside the library's hidden functions. */
#define NVML_EXPORT __attribute__((visibility("default")))

/* Starts a device call: declares `call`, returns the error if the call may not go ahead. */
#define BEGIN_DEVICE(fn, device)                                          \
    nvml_call call;                                                       \
    do {                                                                  \
        nvmlReturn_t begin_rc_ = nvml_begin_device((fn), (device), &call); \
        if (begin_rc_ != NVML_SUCCESS)                                    \
            return begin_rc_;                                             \
    } while (0)

/*
 * nvml_begin_device that also takes a MIG device handle (the few calls that
 * answer for one: *instance is its GPU instance, and the call runs on its
 * GPU), else *instance is NVML_SIM_WHOLE_GPU.  Every other call takes whole
 * GPUs only and answers INVALID_ARGUMENT for a MIG device handle.
 */
#define NVML_SIM_WHOLE_GPU 0xFFFFFFFFu
NVML_HIDDEN nvmlReturn_t nvml_begin_device_or_mig(nvml_fn fn, nvmlDevice_t device, nvml_call *call,
                                                  unsigned int *instance);
/* The MIG device handle of a GPU's instance (the caller checked both exist). */
NVML_HIDDEN nvmlDevice_t nvml_mig_device_handle(unsigned int gpu, unsigned int instance);

/* The node's value of a DCGM field for the call's GPU and time. */
NVML_HIDDEN bool nvml_sample(const nvml_call *call, unsigned short dcgm_field, sim_value *out);
NVML_HIDDEN bool nvml_sample_at(unsigned int gpu, int64_t t_us, unsigned short dcgm_field, sim_value *out);
/* Time (ns) the call's GPU was slowed for one hardware clock-event reason (sim_node_slowdown_ns). */
NVML_HIDDEN bool nvml_slowdown_ns(const nvml_call *call, uint64_t reason, int64_t *ns);
/* Sets the call's GPU's power limit from the call's time on (sim_node_set_power_limit). */
NVML_HIDDEN bool nvml_set_power_limit(const nvml_call *call, double watts);
NVML_HIDDEN int64_t nvml_sample_int(const nvml_call *call, unsigned short dcgm_field);
NVML_HIDDEN double nvml_sample_double(const nvml_call *call, unsigned short dcgm_field);

/* The node's processes on a GPU at t (sim_node_processes). */
NVML_HIDDEN int nvml_processes_at(unsigned int gpu, int64_t t_us, sim_process_info *out, int max);
/* CLOCK_REALTIME us of simulated time t_us: the timestamps NVML puts on samples. */
NVML_HIDDEN int64_t nvml_wall_of(int64_t t_us);

NVML_HIDDEN unsigned int nvml_gpu_count(void);
NVML_HIDDEN nvmlDevice_t nvml_device_handle(unsigned int gpu);
NVML_HIDDEN bool nvml_device_index(nvmlDevice_t device, unsigned int *gpu);
NVML_HIDDEN const sim_gpu_info *nvml_sim_gpu(unsigned int gpu);
NVML_HIDDEN int64_t nvml_now_us(void);       /* simulated time, us after init */
NVML_HIDDEN bool nvml_time_is_frozen(void);
NVML_HIDDEN int64_t nvml_wall_us(void);      /* CLOCK_REALTIME, us since 1970 */

/* Costs: spin for the configured CPU time, then sleep (both in us). */
NVML_HIDDEN void nvml_pay_cost(nvml_fn fn);
/* Pays one field id's share of nvmlDeviceGetFieldValues; returns it in us. */
NVML_HIDDEN double nvml_pay_field_cost(unsigned int nvml_field_id);
NVML_HIDDEN void nvml_spin_us(double us);
NVML_HIDDEN void nvml_sleep_us(double us);

/* Copies s into buf of length; INSUFFICIENT_SIZE if it does not fit with its NUL. */
NVML_HIDDEN nvmlReturn_t nvml_copy_string(char *buf, unsigned int length, const char *s);

/* Cumulative counters integrated from the node's rates (nvml_fields.c). */
NVML_HIDDEN void nvml_counters_reset(void);
NVML_HIDDEN double nvml_counter_bytes(unsigned int gpu, unsigned short rate_field, int64_t t_us);

/* PCIe link-layer field ids (replay rollovers, recoveries, error counts; nvml_pcie_link.c). */
NVML_HIDDEN bool nvml_is_pcie_link_counter(unsigned int nvml_field_id);
NVML_HIDDEN nvmlReturn_t nvml_pcie_link_counter(const nvml_call *call, unsigned int nvml_field_id,
                                                unsigned int *count);

#endif /* DCGM_SIM_NVML_INTERNAL_H */
