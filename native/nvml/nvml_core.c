/*
 * nvml_core.c -- library state, init/shutdown, the simulated clock, per-call
 * costs, NO_PERMISSION, error strings, system queries and device handles.
 *
 * Init is reference counted as in real NVML: the first nvmlInit loads the
 * node from $DCGM_SIM_SCENARIO (exactly the spec the engine's libdcgm.so.4
 * reads) and starts the simulated clock; the matching last nvmlShutdown
 * frees it.  Calls take a read lock for their whole run (costs included) so
 * that a shutdown waits for them instead of pulling the node away; the node
 * itself is not thread safe, so sampling it takes a mutex of its own.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "nvml_internal.h"

typedef struct nvml_cost {
    double spin_us;             /* CPU time the call burns */
    double sleep_us;            /* then wall time it waits without CPU */
} nvml_cost;

static struct {
    int refcount;
    sim_node *node;
    int64_t t0_wall_us;
    bool time_frozen;
    int64_t frozen_t_us;
    nvml_cost costs[NVML_FN_COUNT];
    double field_costs[NVML_FI_MAX];
    bool denied[NVML_FN_COUNT];
    struct nvmlDevice_st devices[DCGM_MAX_NUM_DEVICES];
    struct nvmlDevice_st mig_devices[DCGM_MAX_NUM_DEVICES][SIM_MAX_MIG_INSTANCES];
} lib;

static pthread_rwlock_t lib_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t node_lock = PTHREAD_MUTEX_INITIALIZER;
/* The real driver serialises its energy reads: four threads each wait for all four. */
static pthread_mutex_t energy_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- names of the entry points, for costs and NO_PERMISSION ---------------- */

static const struct {
    const char *name;
    nvml_fn fn;
} fn_names[] = {
    {"nvmlSystemGetDriverVersion", NVML_FN_SYSTEM_DRIVER_VERSION},
    {"nvmlSystemGetNVMLVersion", NVML_FN_SYSTEM_NVML_VERSION},
    {"nvmlSystemGetCudaDriverVersion", NVML_FN_SYSTEM_CUDA_VERSION},
    {"nvmlSystemGetCudaDriverVersion_v2", NVML_FN_SYSTEM_CUDA_VERSION},
    {"nvmlDeviceGetCount", NVML_FN_DEVICE_COUNT},
    {"nvmlDeviceGetCount_v2", NVML_FN_DEVICE_COUNT},
    {"nvmlDeviceGetHandleByIndex", NVML_FN_HANDLE_BY_INDEX},
    {"nvmlDeviceGetHandleByIndex_v2", NVML_FN_HANDLE_BY_INDEX},
    {"nvmlDeviceGetHandleByUUID", NVML_FN_HANDLE_BY_UUID},
    {"nvmlDeviceGetHandleByPciBusId", NVML_FN_HANDLE_BY_PCI_BUS_ID},
    {"nvmlDeviceGetHandleByPciBusId_v2", NVML_FN_HANDLE_BY_PCI_BUS_ID},
    {"nvmlDeviceGetHandleBySerial", NVML_FN_HANDLE_BY_SERIAL},
    {"nvmlDeviceGetIndex", NVML_FN_INDEX},
    {"nvmlDeviceGetName", NVML_FN_NAME},
    {"nvmlDeviceGetUUID", NVML_FN_UUID},
    {"nvmlDeviceGetSerial", NVML_FN_SERIAL},
    {"nvmlDeviceGetPciInfo_v2", NVML_FN_PCI_INFO},
    {"nvmlDeviceGetPciInfo_v3", NVML_FN_PCI_INFO},
    {"nvmlDeviceGetBrand", NVML_FN_BRAND},
    {"nvmlDeviceGetArchitecture", NVML_FN_ARCHITECTURE},
    {"nvmlDeviceGetCudaComputeCapability", NVML_FN_CUDA_COMPUTE_CAPABILITY},
    {"nvmlDeviceGetInforomVersion", NVML_FN_INFOROM_VERSION},
    {"nvmlDeviceGetInforomImageVersion", NVML_FN_INFOROM_IMAGE_VERSION},
    {"nvmlDeviceGetVbiosVersion", NVML_FN_VBIOS_VERSION},
    {"nvmlDeviceGetMemoryInfo", NVML_FN_MEMORY_INFO},
    {"nvmlDeviceGetMemoryInfo_v2", NVML_FN_MEMORY_INFO_V2},
    {"nvmlDeviceGetBAR1MemoryInfo", NVML_FN_BAR1_MEMORY},
    {"nvmlDeviceGetUtilizationRates", NVML_FN_UTILIZATION_RATES},
    {"nvmlDeviceGetEncoderUtilization", NVML_FN_ENCODER_UTILIZATION},
    {"nvmlDeviceGetDecoderUtilization", NVML_FN_DECODER_UTILIZATION},
    {"nvmlDeviceGetTemperature", NVML_FN_TEMPERATURE},
    {"nvmlDeviceGetTemperatureV", NVML_FN_TEMPERATURE_V},
    {"nvmlDeviceGetTemperatureThreshold", NVML_FN_TEMPERATURE_THRESHOLD},
    {"nvmlDeviceGetPowerUsage", NVML_FN_POWER_USAGE},
    {"nvmlDeviceGetPowerManagementLimit", NVML_FN_POWER_MANAGEMENT_LIMIT},
    {"nvmlDeviceGetPowerManagementDefaultLimit", NVML_FN_POWER_MANAGEMENT_DEFAULT_LIMIT},
    {"nvmlDeviceGetPowerManagementLimitConstraints", NVML_FN_POWER_MANAGEMENT_LIMIT_CONSTRAINTS},
    {"nvmlDeviceGetEnforcedPowerLimit", NVML_FN_ENFORCED_POWER_LIMIT},
    {"nvmlDeviceGetPowerManagementMode", NVML_FN_POWER_MANAGEMENT_MODE},
    {"nvmlDeviceSetPowerManagementLimit", NVML_FN_SET_POWER_MANAGEMENT_LIMIT},
    {"nvmlDeviceGetTotalEnergyConsumption", NVML_FN_TOTAL_ENERGY_CONSUMPTION},
    {"nvmlDeviceGetClockInfo", NVML_FN_CLOCK_INFO},
    {"nvmlDeviceGetMaxClockInfo", NVML_FN_MAX_CLOCK_INFO},
    {"nvmlDeviceGetApplicationsClock", NVML_FN_APPLICATIONS_CLOCK},
    {"nvmlDeviceGetDefaultApplicationsClock", NVML_FN_DEFAULT_APPLICATIONS_CLOCK},
    {"nvmlDeviceGetClock", NVML_FN_CLOCK},
    {"nvmlDeviceGetCurrentClocksEventReasons", NVML_FN_CURRENT_CLOCKS_EVENT_REASONS},
    {"nvmlDeviceGetCurrentClocksThrottleReasons", NVML_FN_CURRENT_CLOCKS_EVENT_REASONS},
    {"nvmlDeviceGetSupportedClocksEventReasons", NVML_FN_SUPPORTED_CLOCKS_EVENT_REASONS},
    {"nvmlDeviceGetSupportedClocksThrottleReasons", NVML_FN_SUPPORTED_CLOCKS_EVENT_REASONS},
    {"nvmlDeviceGetPcieThroughput", NVML_FN_PCIE_THROUGHPUT},
    {"nvmlDeviceGetPcieReplayCounter", NVML_FN_PCIE_REPLAY_COUNTER},
    {"nvmlDeviceGetCurrPcieLinkGeneration", NVML_FN_PCIE_LINK},
    {"nvmlDeviceGetMaxPcieLinkGeneration", NVML_FN_PCIE_LINK},
    {"nvmlDeviceGetCurrPcieLinkWidth", NVML_FN_PCIE_LINK},
    {"nvmlDeviceGetMaxPcieLinkWidth", NVML_FN_PCIE_LINK},
    {"nvmlDeviceGetEccMode", NVML_FN_ECC_MODE},
    {"nvmlDeviceGetTotalEccErrors", NVML_FN_TOTAL_ECC_ERRORS},
    {"nvmlDeviceGetRetiredPages", NVML_FN_RETIRED_PAGES},
    {"nvmlDeviceGetRetiredPagesPendingStatus", NVML_FN_RETIRED_PAGES_PENDING},
    {"nvmlDeviceGetRemappedRows", NVML_FN_REMAPPED_ROWS},
    {"nvmlDeviceGetFanSpeed", NVML_FN_FAN_SPEED},
    {"nvmlDeviceGetFanSpeed_v2", NVML_FN_FAN_SPEED},
    {"nvmlDeviceGetNumFans", NVML_FN_FAN_SPEED},
    {"nvmlDeviceGetPerformanceState", NVML_FN_PERFORMANCE_STATE},
    {"nvmlDeviceGetPowerState", NVML_FN_PERFORMANCE_STATE},
    {"nvmlDeviceGetComputeMode", NVML_FN_COMPUTE_MODE},
    {"nvmlDeviceGetPersistenceMode", NVML_FN_PERSISTENCE_MODE},
    {"nvmlDeviceGetDisplayMode", NVML_FN_DISPLAY},
    {"nvmlDeviceGetDisplayActive", NVML_FN_DISPLAY},
    {"nvmlDeviceGetDriverModel", NVML_FN_DRIVER_MODEL},
    {"nvmlDeviceGetDriverModel_v2", NVML_FN_DRIVER_MODEL},
    {"nvmlDeviceGetMigMode", NVML_FN_MIG_MODE},
    {"nvmlDeviceIsMigDeviceHandle", NVML_FN_MIG_DEVICE_QUERY},
    {"nvmlDeviceGetMaxMigDeviceCount", NVML_FN_MIG_DEVICE_QUERY},
    {"nvmlDeviceGetMigDeviceHandleByIndex", NVML_FN_MIG_DEVICE_QUERY},
    {"nvmlDeviceGetDeviceHandleFromMigDeviceHandle", NVML_FN_MIG_DEVICE_QUERY},
    {"nvmlDeviceGetComputeRunningProcesses", NVML_FN_RUNNING_PROCESSES},
    {"nvmlDeviceGetComputeRunningProcesses_v2", NVML_FN_RUNNING_PROCESSES},
    {"nvmlDeviceGetComputeRunningProcesses_v3", NVML_FN_RUNNING_PROCESSES},
    {"nvmlDeviceGetGraphicsRunningProcesses", NVML_FN_RUNNING_PROCESSES},
    {"nvmlDeviceGetGraphicsRunningProcesses_v2", NVML_FN_RUNNING_PROCESSES},
    {"nvmlDeviceGetGraphicsRunningProcesses_v3", NVML_FN_RUNNING_PROCESSES},
    {"nvmlDeviceGetProcessUtilization", NVML_FN_PROCESS_UTILIZATION},
    {"nvmlDeviceGetProcessesUtilizationInfo", NVML_FN_PROCESS_UTILIZATION},
    {"nvmlDeviceGetViolationStatus", NVML_FN_VIOLATION_STATUS},
    {"nvmlDeviceGetP2PStatus", NVML_FN_P2P_STATUS},
    {"nvmlDeviceGetNvLinkState", NVML_FN_NVLINK_STATE},
    {"nvmlDeviceGetGridLicensableFeatures", NVML_FN_GRID_LICENSABLE_FEATURES},
    {"nvmlDeviceGetGridLicensableFeatures_v4", NVML_FN_GRID_LICENSABLE_FEATURES},
    {"nvmlDeviceGetFieldValues", NVML_FN_FIELD_VALUES},
    {"nvmlEventSetCreate", NVML_FN_EVENT_SET},
    {"nvmlEventSetFree", NVML_FN_EVENT_SET},
    {"nvmlDeviceRegisterEvents", NVML_FN_REGISTER_EVENTS},
    {"nvmlDeviceGetSupportedEventTypes", NVML_FN_SUPPORTED_EVENT_TYPES},
    {"nvmlEventSetWait", NVML_FN_EVENT_WAIT},
    {"nvmlEventSetWait_v2", NVML_FN_EVENT_WAIT},
    {"nvmlGpmQueryDeviceSupport", NVML_FN_GPM_QUERY_SUPPORT},
    {"nvmlGpmQueryIfStreamingEnabled", NVML_FN_GPM_QUERY_SUPPORT},
    {"nvmlGpmSampleAlloc", NVML_FN_GPM_SAMPLE_ALLOC},
    {"nvmlGpmSampleFree", NVML_FN_GPM_SAMPLE_ALLOC},
    {"nvmlGpmSampleGet", NVML_FN_GPM_SAMPLE_GET},
    {"nvmlGpmMetricsGet", NVML_FN_GPM_METRICS_GET},
};

#define FN_NAME_COUNT (sizeof fn_names / sizeof fn_names[0])

/* ---- default costs: a real H200 (driver 580.159.04), medians --------------- */

/*
 * From reference/nvml/h200-costs.tsv (wall and CPU time of one call at idle
 * and under load).  CPU time becomes spin; wall time beyond it becomes sleep
 * only where it is large (PCIe throughput sleeps 20 ms inside the driver):
 * sub-microsecond gaps are scheduling noise, not something the driver does.
 */
static void costs_set_defaults(void)
{
    for (int i = 0; i < NVML_FN_COUNT; i++)
        lib.costs[i] = (nvml_cost){.spin_us = 1.0, .sleep_us = 0.0};
    lib.costs[NVML_FN_UTILIZATION_RATES].spin_us = 1.2;
    lib.costs[NVML_FN_POWER_USAGE].spin_us = 1.2;
    lib.costs[NVML_FN_TEMPERATURE].spin_us = 1.6;
    lib.costs[NVML_FN_TEMPERATURE_V].spin_us = 1.6;
    lib.costs[NVML_FN_CLOCK_INFO].spin_us = 1.1;
    lib.costs[NVML_FN_CURRENT_CLOCKS_EVENT_REASONS].spin_us = 0.9;
    lib.costs[NVML_FN_MEMORY_INFO].spin_us = 5.1;
    lib.costs[NVML_FN_MEMORY_INFO_V2].spin_us = 8.0;
    lib.costs[NVML_FN_RUNNING_PROCESSES].spin_us = 8.5;
    lib.costs[NVML_FN_PROCESS_UTILIZATION].spin_us = 2000.0;
    lib.costs[NVML_FN_REMAPPED_ROWS].spin_us = 3.0;
    lib.costs[NVML_FN_TOTAL_ENERGY_CONSUMPTION].spin_us = 3100.0;
    lib.costs[NVML_FN_VIOLATION_STATUS].spin_us = 720.0;
    lib.costs[NVML_FN_PCIE_THROUGHPUT] = (nvml_cost){.spin_us = 800.0, .sleep_us = 20100.0};
    lib.costs[NVML_FN_GPM_SAMPLE_GET].spin_us = 44.0;
    lib.costs[NVML_FN_GPM_METRICS_GET].spin_us = 10.0;
    lib.costs[NVML_FN_FIELD_VALUES].spin_us = 0.7; /* the batch itself; each id adds its own */
    lib.costs[NVML_FN_EVENT_WAIT].spin_us = 0.0;   /* the wait is the cost */
    for (unsigned int id = 0; id < NVML_FI_MAX; id++)
        lib.field_costs[id] = 3.0;
    lib.field_costs[NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION] = 3000.0;
    lib.field_costs[NVML_FI_DEV_ENERGY] = 2700.0;
    lib.field_costs[NVML_FI_DEV_PCIE_COUNT_TX_BYTES] = 125.0;
    lib.field_costs[NVML_FI_DEV_PCIE_COUNT_RX_BYTES] = 125.0;
    lib.field_costs[NVML_FI_DEV_PCIE_REPLAY_COUNTER] = 135.0;
    /* Not in the cost probe; the card's own latencyUsec of one all-fields read
     * (reference/hardware/h200-2026-11-30/fields.json) puts the other PCIe link
     * registers with the replay counter, the MIG capability and atomics queries
     * near them, and the hardware slowdown timers with nvmlDeviceGetViolationStatus. */
    for (unsigned int id = NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS; id <= NVML_FI_DEV_PCIE_COUNT_LANE_ERROR; id++)
        lib.field_costs[id] = 135.0;
    lib.field_costs[NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER] = 135.0;
    lib.field_costs[NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER] = 135.0;
    lib.field_costs[NVML_FI_DEV_IS_RESETLESS_MIG_SUPPORTED] = 160.0;
    lib.field_costs[NVML_FI_DEV_IS_MIG_MODE_INDEPENDENT_MIG_QUERY_CAPABLE] = 160.0;
    lib.field_costs[NVML_FI_DEV_PCIE_OUTBOUND_ATOMICS_MASK] = 150.0;
    lib.field_costs[NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN] = 700.0;
    lib.field_costs[NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN] = 630.0;
}

static void costs_set_all(double spin_us, double sleep_us)
{
    for (int i = 0; i < NVML_FN_COUNT; i++)
        lib.costs[i] = (nvml_cost){.spin_us = spin_us, .sleep_us = sleep_us};
    for (unsigned int id = 0; id < NVML_FI_MAX; id++)
        lib.field_costs[id] = spin_us;
}

static void warn(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "libnvidia-ml.so.1 (simulated): ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

static void costs_apply_text(const char *text, int depth);

static void costs_apply_file(const char *path, int depth)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        warn("%s: cannot read costs file: %s", path, strerror(errno));
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = '\0';
        costs_apply_text(line, depth + 1);
    }
    fclose(f);
}

/* NAME=SPIN[:SLEEP], NAME an entry point, "field:N" or "*" (every entry point and field). */
static void costs_apply_token(const char *token, int depth)
{
    if (strcasecmp(token, "off") == 0) {
        costs_set_all(0.0, 0.0);
        return;
    }
    if (token[0] == '@') {
        if (depth < 4)
            costs_apply_file(token + 1, depth);
        return;
    }
    const char *eq = strchr(token, '=');
    if (eq == NULL) {
        warn("ignoring cost \"%s\"%s: want NAME=SPIN_US[:SLEEP_US], off or @FILE", token, "");
        return;
    }
    char name[128];
    size_t n = (size_t)(eq - token);
    if (n >= sizeof name)
        n = sizeof name - 1;
    memcpy(name, token, n);
    name[n] = '\0';
    char *end = NULL;
    double spin = strtod(eq + 1, &end);
    double sleep = 0.0;
    if (end != NULL && *end == ':')
        sleep = strtod(end + 1, &end);
    if (end == NULL || *end != '\0' || !(spin >= 0.0) || !(sleep >= 0.0)) {
        warn("ignoring cost \"%s\"%s: the times must be microseconds >= 0", token, "");
        return;
    }
    if (strcmp(name, "*") == 0) {
        costs_set_all(spin, sleep);
        return;
    }
    if (strncmp(name, "field:", 6) == 0) {
        long id = strtol(name + 6, &end, 10);
        if (*end == '\0' && id > 0 && id < NVML_FI_MAX)
            lib.field_costs[id] = spin;
        else
            warn("ignoring cost \"%s\"%s: no such field id", token, "");
        return;
    }
    bool found = false;
    for (size_t i = 0; i < FN_NAME_COUNT; i++) {
        if (strcmp(fn_names[i].name, name) == 0) {
            lib.costs[fn_names[i].fn] = (nvml_cost){.spin_us = spin, .sleep_us = sleep};
            found = true;
        }
    }
    if (!found)
        warn("ignoring cost for \"%s\"%s: not an entry point of this library", name, "");
}

/* Calls each(token, ctx) for every token of text, tokens being separated by commas or white space
 * (a token is cut at 255 bytes). */
static void for_each_token(const char *text, void (*each)(const char *token, void *ctx), void *ctx)
{
    char token[256];
    size_t len = 0;
    for (const char *p = text;; p++) {
        bool separator = *p == '\0' || *p == ',' || isspace((unsigned char)*p);
        if (!separator) {
            if (len + 1 < sizeof token)
                token[len++] = *p;
            continue;
        }
        if (len > 0) {
            token[len] = '\0';
            each(token, ctx);
            len = 0;
        }
        if (*p == '\0')
            break;
    }
}

static void cost_token(const char *token, void *depth)
{
    costs_apply_token(token, *(const int *)depth);
}

static void costs_apply_text(const char *text, int depth)
{
    for_each_token(text, cost_token, &depth);
}

static void deny_token(const char *token, void *unused)
{
    (void)unused;
    bool found = false;
    for (size_t i = 0; i < FN_NAME_COUNT; i++) {
        if (strcmp(fn_names[i].name, token) == 0) {
            lib.denied[fn_names[i].fn] = true;
            found = true;
        }
    }
    if (!found)
        warn("%s: \"%s\" is not an entry point of this library", NVML_SIM_NO_PERMISSION_ENV, token);
}

static void permissions_load(const char *text)
{
    memset(lib.denied, 0, sizeof lib.denied);
    if (text != NULL)
        for_each_token(text, deny_token, NULL);
}

/* ---- clock and cost primitives -------------------------------------------- */

int64_t nvml_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t nvml_now_us(void)
{
    if (lib.time_frozen)
        return lib.frozen_t_us;
    int64_t t = nvml_wall_us() - lib.t0_wall_us;
    return t < 0 ? 0 : t;
}

bool nvml_time_is_frozen(void)
{
    return lib.time_frozen;
}

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Burns this thread's CPU for us microseconds, as the driver's busy-waits do. */
void nvml_spin_us(double us)
{
    if (us <= 0.0)
        return;
    double until = thread_cpu_us() + us;
    while (thread_cpu_us() < until) {
        /* spin: the point is the CPU time */
    }
}

void nvml_sleep_us(double us)
{
    if (us <= 0.0)
        return;
    struct timespec ts = {.tv_sec = (time_t)(us / 1e6), .tv_nsec = (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void nvml_pay_cost(nvml_fn fn)
{
    nvml_cost c = lib.costs[fn];
    if (fn == NVML_FN_TOTAL_ENERGY_CONSUMPTION && c.spin_us > 0.0) {
        pthread_mutex_lock(&energy_lock);
        nvml_spin_us(c.spin_us);
        pthread_mutex_unlock(&energy_lock);
    } else {
        nvml_spin_us(c.spin_us);
    }
    nvml_sleep_us(c.sleep_us);
}

double nvml_pay_field_cost(unsigned int id)
{
    double us = id < NVML_FI_MAX ? lib.field_costs[id] : 0.0;
    bool energy = id == NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION || id == NVML_FI_DEV_ENERGY;
    if (energy && us > 0.0)
        pthread_mutex_lock(&energy_lock);
    nvml_spin_us(us);
    if (energy && us > 0.0)
        pthread_mutex_unlock(&energy_lock);
    return us;
}

/* ---- entry and exit of every call ------------------------------------------ */

nvmlReturn_t nvml_begin(nvml_fn fn, nvml_call *call)
{
    pthread_rwlock_rdlock(&lib_lock);
    if (lib.refcount == 0) {
        pthread_rwlock_unlock(&lib_lock);
        return NVML_ERROR_UNINITIALIZED;
    }
    if (lib.denied[fn]) {
        pthread_rwlock_unlock(&lib_lock);
        return NVML_ERROR_NO_PERMISSION;
    }
    if (call != NULL)
        *call = (nvml_call){.gpu = 0, .t_us = nvml_now_us(), .sim = NULL};
    nvml_pay_cost(fn);
    return NVML_SUCCESS;
}

nvmlReturn_t nvml_begin_device(nvml_fn fn, nvmlDevice_t device, nvml_call *call)
{
    pthread_rwlock_rdlock(&lib_lock);
    nvmlReturn_t rc = NVML_SUCCESS;
    unsigned int gpu = 0;
    if (lib.refcount == 0)
        rc = NVML_ERROR_UNINITIALIZED;
    else if (!nvml_device_index(device, &gpu))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (lib.denied[fn])
        rc = NVML_ERROR_NO_PERMISSION;
    if (rc != NVML_SUCCESS) {
        pthread_rwlock_unlock(&lib_lock);
        return rc;
    }
    int64_t t = nvml_now_us();
    int64_t lost = sim_node_gpu_lost_at(lib.node, gpu);
    if (lost >= 0 && t >= lost) {
        pthread_rwlock_unlock(&lib_lock);
        return NVML_ERROR_GPU_IS_LOST;
    }
    *call = (nvml_call){.gpu = gpu, .t_us = t, .sim = sim_node_gpu_info(lib.node, gpu)};
    nvml_pay_cost(fn);
    return NVML_SUCCESS;
}

/* Whether device is a MIG device handle this library gave out, and whose. */
static bool mig_device_of(nvmlDevice_t device, unsigned int *gpu, unsigned int *instance)
{
    uintptr_t p = (uintptr_t)device, first = (uintptr_t)&lib.mig_devices[0][0];
    if (device == NULL || p < first || p >= first + sizeof lib.mig_devices ||
        (p - first) % sizeof lib.mig_devices[0][0] != 0)
        return false;
    const struct nvmlDevice_st *d = (const struct nvmlDevice_st *)device;
    if (d->index >= nvml_gpu_count() || d->mig_instance >= sim_node_gpu_mig_instances(lib.node, d->index))
        return false;
    *gpu = d->index;
    *instance = d->mig_instance;
    return true;
}

nvmlReturn_t nvml_begin_device_or_mig(nvml_fn fn, nvmlDevice_t device, nvml_call *call, unsigned int *instance)
{
    unsigned int gpu = 0, mig = 0;
    *instance = NVML_SIM_WHOLE_GPU;
    pthread_rwlock_rdlock(&lib_lock);
    bool is_mig = lib.refcount > 0 && mig_device_of(device, &gpu, &mig);
    pthread_rwlock_unlock(&lib_lock);
    if (!is_mig)
        return nvml_begin_device(fn, device, call);
    nvmlReturn_t rc = nvml_begin_device(fn, &lib.devices[gpu], call);
    if (rc == NVML_SUCCESS)
        *instance = mig;
    return rc;
}

nvmlDevice_t nvml_mig_device_handle(unsigned int gpu, unsigned int instance)
{
    return &lib.mig_devices[gpu][instance];
}

nvmlReturn_t nvml_end(nvmlReturn_t rc)
{
    pthread_rwlock_unlock(&lib_lock);
    return rc;
}

/* ---- node access ------------------------------------------------------------ */

bool nvml_sample_at(unsigned int gpu, int64_t t_us, unsigned short dcgm_field, sim_value *out)
{
    pthread_mutex_lock(&node_lock);
    int rc = sim_node_sample(lib.node, gpu, dcgm_field, t_us, out);
    pthread_mutex_unlock(&node_lock);
    return rc == DCGM_ST_OK && out->kind == SIM_VALUE_OK;
}

int nvml_processes_at(unsigned int gpu, int64_t t_us, sim_process_info *out, int max)
{
    pthread_mutex_lock(&node_lock);
    int n = sim_node_processes(lib.node, gpu, t_us, out, max);
    pthread_mutex_unlock(&node_lock);
    return n;
}

int64_t nvml_wall_of(int64_t t_us)
{
    return lib.t0_wall_us + t_us;
}

bool nvml_sample(const nvml_call *call, unsigned short dcgm_field, sim_value *out)
{
    return nvml_sample_at(call->gpu, call->t_us, dcgm_field, out);
}

bool nvml_set_power_limit(const nvml_call *call, double watts)
{
    pthread_mutex_lock(&node_lock);
    int rc = sim_node_set_power_limit(lib.node, call->gpu, call->t_us, watts);
    pthread_mutex_unlock(&node_lock);
    return rc == DCGM_ST_OK;
}

bool nvml_slowdown_ns(const nvml_call *call, uint64_t reason, int64_t *ns)
{
    pthread_mutex_lock(&node_lock);
    int rc = sim_node_slowdown_ns(lib.node, call->gpu, call->t_us, reason, ns);
    pthread_mutex_unlock(&node_lock);
    return rc == DCGM_ST_OK;
}

int64_t nvml_sample_int(const nvml_call *call, unsigned short dcgm_field)
{
    sim_value v;
    return nvml_sample(call, dcgm_field, &v) ? v.i64 : 0;
}

double nvml_sample_double(const nvml_call *call, unsigned short dcgm_field)
{
    sim_value v;
    return nvml_sample(call, dcgm_field, &v) ? v.dbl : 0.0;
}

unsigned int nvml_gpu_count(void)
{
    return sim_node_gpu_count(lib.node);
}

nvmlDevice_t nvml_device_handle(unsigned int gpu)
{
    return &lib.devices[gpu];
}

bool nvml_device_index(nvmlDevice_t device, unsigned int *gpu)
{
    /* compare addresses as integers: a foreign pointer is not UB to test this way */
    uintptr_t p = (uintptr_t)device, first = (uintptr_t)&lib.devices[0];
    if (device == NULL || p < first || p >= first + sizeof lib.devices || (p - first) % sizeof lib.devices[0] != 0)
        return false;
    unsigned int index = (unsigned int)((p - first) / sizeof lib.devices[0]);
    if (index >= nvml_gpu_count())
        return false;
    *gpu = index;
    return true;
}

const sim_gpu_info *nvml_sim_gpu(unsigned int gpu)
{
    return sim_node_gpu_info(lib.node, gpu);
}

nvmlReturn_t nvml_copy_string(char *buf, unsigned int length, const char *s)
{
    if (buf == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(s);
    if ((size_t)length < n + 1)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

/* ---- init and shutdown ------------------------------------------------------- */

static nvmlReturn_t init_locked(void)
{
    if (lib.refcount > 0) {
        lib.refcount++;
        return NVML_SUCCESS;
    }
    char err[512] = "";
    sim_node *node = NULL;
    int rc = sim_node_load(getenv(NVML_SIM_SCENARIO_ENV), &node, err, sizeof err);
    if (rc != DCGM_ST_OK || node == NULL) {
        warn("cannot load the simulated node: %s%s", err[0] ? err : "unknown error", "");
        sim_node_free(node);
        return NVML_ERROR_UNKNOWN;
    }
    lib.node = node;
    costs_set_defaults();
    const char *costs = getenv(NVML_SIM_COSTS_ENV);
    if (costs != NULL)
        costs_apply_text(costs, 0);
    permissions_load(getenv(NVML_SIM_NO_PERMISSION_ENV));
    const char *frozen = getenv(NVML_SIM_TIME_ENV);
    lib.time_frozen = false;
    if (frozen != NULL && frozen[0] != '\0') {
        char *end = NULL;
        long long t = strtoll(frozen, &end, 10);
        if (*end == '\0' && t >= 0) {
            lib.time_frozen = true;
            lib.frozen_t_us = t;
        } else {
            warn("%s=%s is not a count of microseconds: the clock runs", NVML_SIM_TIME_ENV, frozen);
        }
    }
    for (unsigned int i = 0; i < DCGM_MAX_NUM_DEVICES; i++) {
        lib.devices[i].index = i;
        for (unsigned int k = 0; k < SIM_MAX_MIG_INSTANCES; k++)
            lib.mig_devices[i][k] = (struct nvmlDevice_st){.index = i, .mig_instance = k};
    }
    nvml_counters_reset();
    lib.t0_wall_us = nvml_wall_us();
    lib.refcount = 1;
    return NVML_SUCCESS;
}

/* A driver that is not loaded (yet), as while it is being reinstalled or
 * reloaded: read at every init, so a test can load it while a client retries. */
static bool driver_not_loaded(void)
{
    const char *gate = getenv(NVML_SIM_NOT_LOADED_ENV);
    return gate != NULL && gate[0] != '\0' && access(gate, F_OK) == 0;
}

NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags; /* NO_GPUS / NO_ATTACH change nothing for a simulated node */
    if (driver_not_loaded())
        return NVML_ERROR_DRIVER_NOT_LOADED;
    pthread_rwlock_wrlock(&lib_lock);
    nvmlReturn_t rc = init_locked();
    pthread_rwlock_unlock(&lib_lock);
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

NVML_EXPORT nvmlReturn_t nvmlInit(void)
{
    return nvmlInitWithFlags(0);
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    pthread_rwlock_wrlock(&lib_lock);
    nvmlReturn_t rc = NVML_SUCCESS;
    if (lib.refcount == 0) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else if (--lib.refcount == 0) {
        sim_node_free(lib.node);
        lib.node = NULL;
    }
    pthread_rwlock_unlock(&lib_lock);
    return rc;
}

/* The messages are this library's own wording of each code's meaning. */
NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "ECC is not supported for vGPU";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED: return "Reset type not supported";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
    }
}

/* ---- system ------------------------------------------------------------------ */

static nvmlReturn_t system_string(nvml_fn fn, unsigned short dcgm_field, char *buf, unsigned int length)
{
    nvmlReturn_t rc = nvml_begin(fn, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    sim_value v;
    if (!nvml_sample_at(0, 0, dcgm_field, &v))
        return nvml_end(NVML_ERROR_UNKNOWN);
    return nvml_end(nvml_copy_string(buf, length, v.str));
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    return system_string(NVML_FN_SYSTEM_DRIVER_VERSION, 1, version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    return system_string(NVML_FN_SYSTEM_NVML_VERSION, 2, version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_SYSTEM_CUDA_VERSION, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (cudaDriverVersion == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    sim_value v;
    if (!nvml_sample_at(0, 0, 5, &v))
        return nvml_end(NVML_ERROR_UNKNOWN);
    *cudaDriverVersion = (int)v.i64;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

/* ---- device count and handles --------------------------------------------------- */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_DEVICE_COUNT, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (deviceCount == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *deviceCount = nvml_gpu_count();
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return nvmlDeviceGetCount_v2(deviceCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_HANDLE_BY_INDEX, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (device == NULL || index >= nvml_gpu_count())
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *device = nvml_device_handle(index);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* The GPU whose identity string (a DCGM field) equals key, by same(). */
static nvmlReturn_t handle_by(nvml_fn fn, unsigned short dcgm_field, const char *key,
                              bool (*same)(const char *, const char *), nvmlDevice_t *device)
{
    nvmlReturn_t rc = nvml_begin(fn, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (key == NULL || device == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    for (unsigned int i = 0; i < nvml_gpu_count(); i++) {
        sim_value v;
        if (nvml_sample_at(i, 0, dcgm_field, &v) && same(v.str, key)) {
            *device = nvml_device_handle(i);
            return nvml_end(NVML_SUCCESS);
        }
    }
    return nvml_end(NVML_ERROR_NOT_FOUND);
}

static bool same_string(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

/* Bus ids match by value: "0000:18:00.0", "00000000:18:00.0", any case. */
static bool same_bus_id(const char *a, const char *b)
{
    unsigned int d1, b1, s1, f1, d2, b2, s2, f2;
    if (sscanf(a, "%x:%x:%x.%x", &d1, &b1, &s1, &f1) != 4 || sscanf(b, "%x:%x:%x.%x", &d2, &b2, &s2, &f2) != 4)
        return false;
    return d1 == d2 && b1 == b2 && s1 == s2 && f1 == f2;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    return handle_by(NVML_FN_HANDLE_BY_UUID, 54, uuid, same_string, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    return handle_by(NVML_FN_HANDLE_BY_SERIAL, 53, serial, same_string, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    return handle_by(NVML_FN_HANDLE_BY_PCI_BUS_ID, 57, pciBusId, same_bus_id, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}
