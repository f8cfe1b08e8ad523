/*
 * nvml_fields.c -- nvmlDeviceGetFieldValues, and the cumulative byte
 * counters (PCIe bytes, NVLink KiB) that NVML has but the engine's node does
 * not: the node gives rates, so the counters integrate them.
 *
 * The integral is taken on the node's own 100 ms grid, each step at the
 * rate the node reports at the step's start, plus the part of the current
 * step.  That makes a counter a pure function of (scenario, GPU, time),
 * monotone in time, whoever reads it when; a per-GPU prefix sum keeps
 * readings that move forward cheap.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>

#include "nvml_internal.h"

#define STEP_US 100000LL        /* the node's physics step */

/* nvmlDeviceGpuRecoveryAction_t: nothing to do, or reset the GPU. */
#define RECOVERY_ACTION_NONE 0u
#define RECOVERY_ACTION_GPU_RESET 1u

/* DCGM rate fields (bytes/s) the counters integrate. */
enum {
    RATE_PCIE_TX = 1009, RATE_PCIE_RX = 1010, RATE_NVLINK_TX = 1011, RATE_NVLINK_RX = 1012,
    RATE_NVLINK_LANE_FIRST = 1040, /* then tx, rx per lane */
};
#define COUNTER_CHANNELS (4 + 2 * SIM_MAX_NVLINKS)

typedef struct counter {
    int64_t steps;              /* whole steps summed so far */
    double bytes;               /* their bytes */
} counter;

static counter counters[DCGM_MAX_NUM_DEVICES][COUNTER_CHANNELS];
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;

static int counter_channel(unsigned short rate_field)
{
    if (rate_field >= RATE_PCIE_TX && rate_field <= RATE_NVLINK_RX)
        return rate_field - RATE_PCIE_TX;
    if (rate_field >= RATE_NVLINK_LANE_FIRST && rate_field < RATE_NVLINK_LANE_FIRST + 2 * SIM_MAX_NVLINKS)
        return 4 + (rate_field - RATE_NVLINK_LANE_FIRST);
    return -1;
}

void nvml_counters_reset(void)
{
    pthread_mutex_lock(&counter_lock);
    for (unsigned int g = 0; g < DCGM_MAX_NUM_DEVICES; g++) {
        for (int c = 0; c < COUNTER_CHANNELS; c++)
            counters[g][c] = (counter){0, 0.0};
    }
    pthread_mutex_unlock(&counter_lock);
}

static double rate_at(unsigned int gpu, unsigned short rate_field, int64_t t_us)
{
    sim_value v;
    return nvml_sample_at(gpu, t_us, rate_field, &v) ? fmax(v.dbl, 0.0) : 0.0;
}

double nvml_counter_bytes(unsigned int gpu, unsigned short rate_field, int64_t t_us)
{
    int channel = counter_channel(rate_field);
    if (channel < 0 || gpu >= DCGM_MAX_NUM_DEVICES || t_us < 0)
        return 0.0;
    pthread_mutex_lock(&counter_lock);
    counter *c = &counters[gpu][channel];
    int64_t step = t_us / STEP_US;
    if (step < c->steps)
        *c = (counter){0, 0.0};  /* a reading from the past: sum again from the start */
    while (c->steps < step) {
        c->bytes += rate_at(gpu, rate_field, c->steps * STEP_US) * ((double)STEP_US / 1e6);
        c->steps++;
    }
    double partial_s = (double)(t_us - step * STEP_US) / 1e6;
    double bytes = c->bytes + rate_at(gpu, rate_field, step * STEP_US) * partial_s;
    pthread_mutex_unlock(&counter_lock);
    return bytes;
}

/* ---- one field value ---------------------------------------------------------- */

static void put_uint(nvmlFieldValue_t *fv, unsigned long long x)
{
    fv->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    fv->value.ullVal = 0;       /* the union's unused bytes read as zero */
    fv->value.uiVal = (unsigned int)x;
}

static void put_ull(nvmlFieldValue_t *fv, unsigned long long x)
{
    fv->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    fv->value.ullVal = x;
}

/* An integer DCGM field as either width; NOT_SUPPORTED where the model lacks it. */
static nvmlReturn_t put_field(const nvml_call *call, nvmlFieldValue_t *fv, unsigned short dcgm_field, bool wide)
{
    sim_value v;
    if (!nvml_sample(call, dcgm_field, &v))
        return v.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    unsigned long long x = v.i64 < 0 ? 0 : (unsigned long long)v.i64;
    if (wide)
        put_ull(fv, x);
    else
        put_uint(fv, x);
    return NVML_SUCCESS;
}

static nvmlReturn_t put_milliwatts(const nvml_call *call, nvmlFieldValue_t *fv, unsigned short dcgm_field)
{
    if (fv->scopeId != 0)
        return NVML_ERROR_NOT_SUPPORTED; /* module and GPU-base scopes exist on Grace parts only */
    sim_value v;
    if (!nvml_sample(call, dcgm_field, &v))
        return v.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    put_uint(fv, (unsigned long long)llround(fmax(v.dbl, 0.0) * 1000.0));
    return NVML_SUCCESS;
}

/*
 * A temperature threshold on the T.Limit scale: degrees below the reference
 * limit at which it acts (negative: past the limit).  The GPU's thresholds
 * count from its max operating temperature, the memory's from its own max,
 * so the recorded H200 (shutdown 95, slowdown 89, GPU max 87 C) read -8, -2,
 * 0 and 0 whatever its temperature.  What moves with heat is the current
 * margin to that limit (nvmlDeviceGetMarginTemperature), not these.
 */
static nvmlReturn_t put_tlimit(const nvml_call *call, nvmlFieldValue_t *fv, unsigned short reference_field,
                               unsigned short threshold_field)
{
    sim_value reference, threshold;
    if (!nvml_sample(call, reference_field, &reference))
        return reference.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    if (!nvml_sample(call, threshold_field, &threshold))
        return threshold.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    fv->valueType = NVML_VALUE_TYPE_SIGNED_INT;
    fv->value.ullVal = 0;
    fv->value.siVal = (int)(reference.i64 - threshold.i64);
    return NVML_SUCCESS;
}

/* Slowdown time (ns) for a hardware clock-event reason the node counts apart. */
static nvmlReturn_t put_slowdown_ns(const nvml_call *call, nvmlFieldValue_t *fv, uint64_t reason)
{
    int64_t ns = 0;
    if (!nvml_slowdown_ns(call, reason, &ns))
        return NVML_ERROR_UNKNOWN;
    put_ull(fv, ns < 0 ? 0 : (unsigned long long)ns);
    return NVML_SUCCESS;
}

/*
 * Whether the GPU needs a reset before it is whole again: a row remap (or,
 * before Ampere, a page retirement) waits for one, as the driver reports it.
 */
static bool reset_pending(const nvml_call *call)
{
    sim_value v;
    if (nvml_sample(call, 396, &v))
        return v.i64 != 0;
    return nvml_sample(call, 392, &v) && v.i64 != 0;
}

/*
 * NVLink data counters in KiB, per link (scopeId) or summed (UINT_MAX).
 * RAW adds the protocol overhead: a 16-byte header per 256-byte packet.
 */
static nvmlReturn_t put_nvlink_kib(const nvml_call *call, nvmlFieldValue_t *fv, bool tx, bool raw)
{
    int links = call->sim->nvlinks;
    if (links == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned short rate_field;
    if (fv->scopeId == UINT_MAX)
        rate_field = tx ? RATE_NVLINK_TX : RATE_NVLINK_RX;
    else if (fv->scopeId < (unsigned int)links)
        rate_field = (unsigned short)(RATE_NVLINK_LANE_FIRST + 2 * fv->scopeId + (tx ? 0 : 1));
    else
        return NVML_ERROR_INVALID_ARGUMENT;
    double bytes = nvml_counter_bytes(call->gpu, rate_field, call->t_us);
    if (raw)
        bytes *= 272.0 / 256.0;
    put_ull(fv, (unsigned long long)(bytes / 1024.0));
    return NVML_SUCCESS;
}

static nvmlReturn_t field_value(const nvml_call *call, nvmlFieldValue_t *fv)
{
    unsigned int id = fv->fieldId;
    bool mig = call->sim->mig_instances > 0;
    switch (id) {
    case NVML_FI_DEV_ECC_CURRENT: return put_field(call, fv, 300, true);
    case NVML_FI_DEV_ECC_PENDING: return put_field(call, fv, 301, true);
    case NVML_FI_DEV_ECC_SBE_VOL_TOTAL: return put_field(call, fv, 310, true);
    case NVML_FI_DEV_ECC_DBE_VOL_TOTAL: return put_field(call, fv, 311, true);
    case NVML_FI_DEV_ECC_SBE_AGG_TOTAL: return put_field(call, fv, 312, true);
    case NVML_FI_DEV_ECC_DBE_AGG_TOTAL: return put_field(call, fv, 313, true);
    case NVML_FI_DEV_RETIRED_SBE: return put_field(call, fv, 390, true);
    case NVML_FI_DEV_RETIRED_DBE: return put_field(call, fv, 391, true);
    case NVML_FI_DEV_RETIRED_PENDING: return put_field(call, fv, 392, false);
    case NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: return put_field(call, fv, 409, true);
    case NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: return put_field(call, fv, 419, true);
    case NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: return put_field(call, fv, 429, true);
    case NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: return put_field(call, fv, 439, true);
    case NVML_FI_DEV_PERF_POLICY_POWER: case NVML_FI_DEV_PERF_POLICY_THERMAL:
    case NVML_FI_DEV_PERF_POLICY_SYNC_BOOST: case NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT:
    case NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION: case NVML_FI_DEV_PERF_POLICY_RELIABILITY:
        /* DCGM's 240-245 are these six counters in the same order, in ns */
        return put_field(call, fv, (unsigned short)(240 + (id - NVML_FI_DEV_PERF_POLICY_POWER)), true);
    case NVML_FI_DEV_MEMORY_TEMP: return put_field(call, fv, 140, false);
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: case NVML_FI_DEV_ENERGY: return put_field(call, fv, 156, true);
    case NVML_FI_DEV_NVLINK_LINK_COUNT:
        if (call->sim->nvlinks == 0)
            return NVML_ERROR_NOT_SUPPORTED;
        put_uint(fv, (unsigned long long)call->sim->nvlinks);
        return NVML_SUCCESS;
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER: return put_field(call, fv, 202, false);
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: return put_nvlink_kib(call, fv, true, false);
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: return put_nvlink_kib(call, fv, false, false);
    case NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX: return put_nvlink_kib(call, fv, true, true);
    case NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX: return put_nvlink_kib(call, fv, false, true);
    case NVML_FI_DEV_REMAPPED_COR: case NVML_FI_DEV_REMAPPED_UNC:
    case NVML_FI_DEV_REMAPPED_PENDING: case NVML_FI_DEV_REMAPPED_FAILURE: {
        if (mig)
            return NVML_ERROR_NOT_SUPPORTED;
        static const unsigned short dcgm[] = {394, 393, 396, 395};
        return put_field(call, fv, dcgm[id - NVML_FI_DEV_REMAPPED_COR], true);
    }
    case NVML_FI_DEV_POWER_AVERAGE: return put_milliwatts(call, fv, 155);
    case NVML_FI_DEV_POWER_INSTANT: return put_milliwatts(call, fv, 157);
    case NVML_FI_DEV_PCIE_COUNT_TX_BYTES: case NVML_FI_DEV_PCIE_COUNT_RX_BYTES: {
        /* 32 bits wide on the card, so the count wraps every 4 GiB: readers take deltas modulo 2^32 */
        unsigned short rate = id == NVML_FI_DEV_PCIE_COUNT_TX_BYTES ? RATE_PCIE_TX : RATE_PCIE_RX;
        put_uint(fv, (unsigned long long)nvml_counter_bytes(call->gpu, rate, call->t_us));
        return NVML_SUCCESS;
    }
    /* DCGM's total app / base clock violation fields are these counters, in ns */
    case NVML_FI_DEV_PERF_POLICY_TOTAL_APP_CLOCKS: return put_field(call, fv, 246, true);
    case NVML_FI_DEV_PERF_POLICY_TOTAL_BASE_CLOCKS: return put_field(call, fv, 247, true);
    case NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT: {
        int links = call->sim->nvlinks;
        if (links == 0) {
            /* a card without NvLink answers success and leaves the entry as it was set
             * up, a double 0 (the recorded H200 did) */
            fv->valueType = NVML_VALUE_TYPE_DOUBLE;
            fv->value.dVal = 0.0;
            return NVML_SUCCESS;
        }
        put_uint(fv, (unsigned long long)links); /* an HGX board wires every link to an NvSwitch */
        return NVML_SUCCESS;
    }
    case NVML_FI_DEV_IS_RESETLESS_MIG_SUPPORTED:
        /* Hopper (the GPM parts) switches MIG mode without a GPU reset; A100 needs one */
        put_uint(fv, call->sim->mig_capable && call->sim->gpm);
        return NVML_SUCCESS;
    case NVML_FI_DEV_IS_MIG_MODE_INDEPENDENT_MIG_QUERY_CAPABLE:
        put_uint(fv, call->sim->mig_capable);
        return NVML_SUCCESS;
    case NVML_FI_DEV_POWER_MIN_LIMIT: return put_milliwatts(call, fv, 161);
    case NVML_FI_DEV_POWER_MAX_LIMIT: return put_milliwatts(call, fv, 162);
    case NVML_FI_DEV_POWER_DEFAULT_LIMIT: return put_milliwatts(call, fv, 163);
    case NVML_FI_DEV_POWER_CURRENT_LIMIT: return put_milliwatts(call, fv, 164);
    case NVML_FI_DEV_POWER_REQUESTED_LIMIT: return put_milliwatts(call, fv, 160);
    case NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT: return put_tlimit(call, fv, 152, 159);
    case NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT: return put_tlimit(call, fv, 152, 158);
    case NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT: return put_tlimit(call, fv, 151, 151);
    case NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT: return put_tlimit(call, fv, 152, 152);
    case NVML_FI_DEV_RESET_STATUS:
        put_uint(fv, reset_pending(call));
        return NVML_SUCCESS;
    case NVML_FI_DEV_DRAIN_AND_RESET_STATUS:
        put_uint(fv, 0); /* the node has no degraded mode that asks for a drain first */
        return NVML_SUCCESS;
    case NVML_FI_DEV_GET_GPU_RECOVERY_ACTION:
        put_uint(fv, reset_pending(call) ? RECOVERY_ACTION_GPU_RESET : RECOVERY_ACTION_NONE);
        return NVML_SUCCESS;
    case NVML_FI_DEV_PCIE_OUTBOUND_ATOMICS_MASK: case NVML_FI_DEV_PCIE_INBOUND_ATOMICS_MASK:
        put_uint(fv, 0); /* no PCIe atomics enabled, as on the recorded card */
        return NVML_SUCCESS;
    /* NVML's thermal policy counter is the SW thermal slowdown time */
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN: return put_field(call, fv, 241, true);
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN:
        return put_slowdown_ns(call, fv, SIM_CLOCKS_EVENT_HW_THERMAL);
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN:
        return put_slowdown_ns(call, fv, SIM_CLOCKS_EVENT_HW_POWER_BRAKE);
    case NVML_FI_DEV_REMAPPED_ROWS_COR_INACTIVE: case NVML_FI_DEV_REMAPPED_ROWS_UNC_INACTIVE: {
        /* where rows are remapped at all: the node never deactivates a remapping */
        sim_value v;
        if (mig || !nvml_sample(call, 394, &v))
            return NVML_ERROR_NOT_SUPPORTED;
        put_ull(fv, 0);
        return NVML_SUCCESS;
    }
    default:
        if (nvml_is_pcie_link_counter(id)) {
            unsigned int count = 0;
            nvmlReturn_t rc = nvml_pcie_link_counter(call, id, &count);
            if (rc == NVML_SUCCESS)
                put_uint(fv, count);
            return rc;
        }
        return (id > 0 && id < NVML_FI_MAX) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
    }
}

/*
 * Each entry gets its own status, timestamp and latency (its share of the
 * configured cost); the call itself fails only for bad arguments or a lost
 * GPU, as real NVML's does.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values)
{
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device(NVML_FN_FIELD_VALUES, device, &call);
    if (rc != NVML_SUCCESS)
        return rc;
    if (valuesCount < 0 || (valuesCount > 0 && values == NULL))
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *fv = &values[i];
        double cost_us = nvml_pay_field_cost(fv->fieldId);
        fv->value.ullVal = 0;
        fv->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        fv->nvmlReturn = field_value(&call, fv);
        fv->timestamp = nvml_wall_us();
        fv->latencyUsec = (long long)llround(cost_us);
    }
    return nvml_end(NVML_SUCCESS);
}
