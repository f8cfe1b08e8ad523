/*
 * nvml_events.c -- event sets and GPM samples.
 *
 * Events: the scenario's XIDs (and the XID a lost GPU raises) are delivered
 * to sets registered for nvmlEventTypeXidCriticalError, each once, in time
 * order, only those that happen after registration, as on a real GPU.  A
 * wait with nothing pending sleeps until the next scenario XID or the
 * timeout, whichever is first.
 *
 * GPM: a sample records the GPU and the simulated time; nvmlGpmMetricsGet
 * averages the engine's profiling fields (DCGM 1001-1012) over the time
 * between two samples and converts them to GPM's units (percent, MiB/s).
 *
 * Handles of both kinds are heap objects on a list of live ones, so that a
 * stale or foreign handle is an INVALID_ARGUMENT and not a crash.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "nvml_internal.h"

/* What a simulated device can register for (the H200 recorded 0xFF9F). */
#define SUPPORTED_EVENTS_ALL 0xFF9FULL

struct nvmlEventSet_st {
    struct nvmlEventSet_st *next_live;
    unsigned long long types[DCGM_MAX_NUM_DEVICES];  /* registered event types per GPU */
    size_t next_xid[DCGM_MAX_NUM_DEVICES];           /* first XID not yet delivered */
};

struct nvmlGpmSample_st {
    struct nvmlGpmSample_st *next_live;
    bool taken;
    unsigned int gpu;
    int64_t t_us;
};

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvmlEventSet_st *live_sets;
static struct nvmlGpmSample_st *live_samples;

static bool set_is_live(const struct nvmlEventSet_st *set)
{
    pthread_mutex_lock(&handles_lock);
    const struct nvmlEventSet_st *s = live_sets;
    while (s != NULL && s != set)
        s = s->next_live;
    pthread_mutex_unlock(&handles_lock);
    return set != NULL && s == set;
}

static bool sample_is_live(const struct nvmlGpmSample_st *sample)
{
    pthread_mutex_lock(&handles_lock);
    const struct nvmlGpmSample_st *s = live_samples;
    while (s != NULL && s != sample)
        s = s->next_live;
    pthread_mutex_unlock(&handles_lock);
    return sample != NULL && s == sample;
}

static unsigned long long supported_events(const sim_gpu_info *g)
{
    return g->mig_capable ? SUPPORTED_EVENTS_ALL : (SUPPORTED_EVENTS_ALL & ~nvmlEventMigConfigChange);
}

/* ---- event sets ----------------------------------------------------------------- */

NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_EVENT_SET, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (set == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    struct nvmlEventSet_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return nvml_end(NVML_ERROR_MEMORY);
    pthread_mutex_lock(&handles_lock);
    s->next_live = live_sets;
    live_sets = s;
    pthread_mutex_unlock(&handles_lock);
    *set = s;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_EVENT_SET, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    pthread_mutex_lock(&handles_lock);
    struct nvmlEventSet_st **link = &live_sets;
    while (*link != NULL && *link != set)
        link = &(*link)->next_live;
    bool found = set != NULL && *link == set;
    if (found)
        *link = set->next_live;
    pthread_mutex_unlock(&handles_lock);
    if (!found)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    free(set);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device(NVML_FN_SUPPORTED_EVENT_TYPES, device, &call);
    if (rc != NVML_SUCCESS)
        return rc;
    if (eventTypes == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *eventTypes = supported_events(call.sim);
    return nvml_end(NVML_SUCCESS);
}

/* Index of the first XID of g after t: those up to t happened before registration. */
static size_t first_xid_after(const sim_gpu_info *g, int64_t t_us)
{
    size_t i = 0;
    while (i < g->xid_count && g->xids[i].t_rel_us <= t_us)
        i++;
    return i;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                  nvmlEventSet_t set)
{
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device(NVML_FN_REGISTER_EVENTS, device, &call);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!set_is_live(set))
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (eventTypes & ~supported_events(call.sim))
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    pthread_mutex_lock(&handles_lock);
    bool new_xid = (eventTypes & nvmlEventTypeXidCriticalError) &&
                   !(set->types[call.gpu] & nvmlEventTypeXidCriticalError);
    if (new_xid)
        set->next_xid[call.gpu] = first_xid_after(call.sim, call.t_us);
    set->types[call.gpu] |= eventTypes;
    pthread_mutex_unlock(&handles_lock);
    return nvml_end(NVML_SUCCESS);
}

/* The earliest undelivered XID of the set at or before now, or the time of the next one. */
static bool next_xid(struct nvmlEventSet_st *set, int64_t now_us, unsigned int *gpu_out, int64_t *next_at_us)
{
    bool found = false;
    int64_t best = INT64_MAX;
    *next_at_us = INT64_MAX;
    for (unsigned int gpu = 0; gpu < nvml_gpu_count(); gpu++) {
        if (!(set->types[gpu] & nvmlEventTypeXidCriticalError))
            continue;
        const sim_gpu_info *g = nvml_sim_gpu(gpu);
        if (set->next_xid[gpu] >= g->xid_count)
            continue;
        int64_t t = g->xids[set->next_xid[gpu]].t_rel_us;
        if (t <= now_us && t < best) {
            best = t;
            *gpu_out = gpu;
            found = true;
        } else if (t > now_us && t < *next_at_us) {
            *next_at_us = t;
        }
    }
    return found;
}

static nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_EVENT_WAIT, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (data == NULL || !set_is_live(set))
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    int64_t deadline_wall = nvml_wall_us() + (int64_t)timeoutms * 1000;
    for (;;) {
        int64_t now = nvml_now_us();
        unsigned int gpu = 0;
        int64_t next_at = INT64_MAX;
        pthread_mutex_lock(&handles_lock);
        bool found = next_xid(set, now, &gpu, &next_at);
        if (found) {
            const sim_event *ev = &nvml_sim_gpu(gpu)->xids[set->next_xid[gpu]++];
            *data = (nvmlEventData_t){
                .device = nvml_device_handle(gpu),
                .eventType = nvmlEventTypeXidCriticalError,
                .eventData = (unsigned long long)ev->value,
                .gpuInstanceId = 0xFFFFFFFFu,
                .computeInstanceId = 0xFFFFFFFFu,
            };
        }
        pthread_mutex_unlock(&handles_lock);
        if (found)
            return nvml_end(NVML_SUCCESS);
        int64_t left = deadline_wall - nvml_wall_us();
        if (left <= 0)
            return nvml_end(NVML_ERROR_TIMEOUT);
        /* a frozen clock never reaches the next event: sleep out the timeout */
        int64_t until_event = (next_at == INT64_MAX || nvml_time_is_frozen()) ? left : next_at - now;
        nvml_sleep_us((double)(until_event < left ? until_event : left));
    }
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    return event_wait(set, data, timeoutms);
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    return event_wait(set, data, timeoutms);
}

/* ---- GPM ---------------------------------------------------------------------------- */

NVML_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device(NVML_FN_GPM_QUERY_SUPPORT, device, &call);
    if (rc != NVML_SUCCESS)
        return rc;
    if (gpmSupport == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        return nvml_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    gpmSupport->isSupportedDevice = call.sim->gpm ? 1 : 0;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlGpmQueryIfStreamingEnabled(nvmlDevice_t device, unsigned int *state)
{
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device(NVML_FN_GPM_QUERY_SUPPORT, device, &call);
    if (rc != NVML_SUCCESS)
        return rc;
    if (state == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (!call.sim->gpm)
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    *state = 0;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_GPM_SAMPLE_ALLOC, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (gpmSample == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    struct nvmlGpmSample_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return nvml_end(NVML_ERROR_MEMORY);
    pthread_mutex_lock(&handles_lock);
    s->next_live = live_samples;
    live_samples = s;
    pthread_mutex_unlock(&handles_lock);
    *gpmSample = s;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_GPM_SAMPLE_ALLOC, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    pthread_mutex_lock(&handles_lock);
    struct nvmlGpmSample_st **link = &live_samples;
    while (*link != NULL && *link != gpmSample)
        link = &(*link)->next_live;
    bool found = gpmSample != NULL && *link == gpmSample;
    if (found)
        *link = gpmSample->next_live;
    pthread_mutex_unlock(&handles_lock);
    if (!found)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    free(gpmSample);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device(NVML_FN_GPM_SAMPLE_GET, device, &call);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!sample_is_live(gpmSample))
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (!call.sim->gpm)
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    pthread_mutex_lock(&handles_lock);
    gpmSample->taken = true;
    gpmSample->gpu = call.gpu;
    gpmSample->t_us = call.t_us;
    pthread_mutex_unlock(&handles_lock);
    return nvml_end(NVML_SUCCESS);
}

/* A GPM metric: the DCGM field it averages and the factor to GPM's unit. */
typedef struct gpm_metric {
    unsigned int id;
    unsigned short dcgm_field;
    double scale;
    bool needs_nvlink;
    char short_name[24];
    char long_name[48];
    char unit[8];
} gpm_metric;

#define PERCENT 100.0
#define PER_MIB (1.0 / 1048576.0)

/* Not const: the ABI hands out the names as char *. */
static gpm_metric gpm_metrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, 1001, PERCENT, false, "GR_UTIL", "graphics engine busy", "%"},
    {NVML_GPM_METRIC_SM_UTIL, 1002, PERCENT, false, "SM_UTIL", "SMs with a warp resident", "%"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, 1003, PERCENT, false, "SM_OCCUP", "warps resident of the maximum", "%"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, 1004, PERCENT, false, "TENSOR_UTIL", "tensor pipes busy", "%"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, 1005, PERCENT, false, "DRAM_BW_UTIL", "DRAM bandwidth used", "%"},
    {NVML_GPM_METRIC_FP64_UTIL, 1006, PERCENT, false, "FP64_UTIL", "FP64 pipe busy", "%"},
    {NVML_GPM_METRIC_FP32_UTIL, 1007, PERCENT, false, "FP32_UTIL", "FP32 pipe busy", "%"},
    {NVML_GPM_METRIC_FP16_UTIL, 1008, PERCENT, false, "FP16_UTIL", "FP16 pipe busy", "%"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, 1009, PER_MIB, false, "PCIE_TX", "PCIe bytes sent", "MiB/s"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, 1010, PER_MIB, false, "PCIE_RX", "PCIe bytes received", "MiB/s"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, 1012, PER_MIB, true, "NVLINK_RX", "NVLink bytes received", "MiB/s"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, 1011, PER_MIB, true, "NVLINK_TX", "NVLink bytes sent", "MiB/s"},
};

#define GPM_METRIC_COUNT (sizeof gpm_metrics / sizeof gpm_metrics[0])
#define GPM_AVERAGE_POINTS 64

/* Mean of the field over [t1, t2] at up to GPM_AVERAGE_POINTS evenly spaced times. */
static nvmlReturn_t gpm_average(unsigned int gpu, const gpm_metric *m, int64_t t1, int64_t t2, double *out)
{
    int64_t span = t2 - t1;
    int points = (int)(span / 100000) + 1;
    if (points > GPM_AVERAGE_POINTS)
        points = GPM_AVERAGE_POINTS;
    double sum = 0.0;
    for (int i = 0; i < points; i++) {
        int64_t t = points == 1 ? t2 : t1 + span * i / (points - 1);
        sim_value v;
        if (!nvml_sample_at(gpu, t, m->dcgm_field, &v))
            return v.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_GPU_IS_LOST;
        sum += v.dbl;
    }
    *out = sum / points * m->scale;
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet)
{
    nvmlReturn_t rc = nvml_begin(NVML_FN_GPM_METRICS_GET, NULL);
    if (rc != NVML_SUCCESS)
        return rc;
    if (metricsGet == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
        return nvml_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    nvmlGpmSample_t s1 = metricsGet->sample1, s2 = metricsGet->sample2;
    if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || !sample_is_live(s1) || !sample_is_live(s2))
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    pthread_mutex_lock(&handles_lock);
    bool usable = s1->taken && s2->taken && s1->gpu == s2->gpu && s1->t_us <= s2->t_us &&
                  s1->gpu < nvml_gpu_count();
    unsigned int gpu = s1->gpu;
    int64_t t1 = s1->t_us, t2 = s2->t_us;
    pthread_mutex_unlock(&handles_lock);
    if (!usable)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    const sim_gpu_info *g = nvml_sim_gpu(gpu);
    for (unsigned int i = 0; i < metricsGet->numMetrics; i++) {
        nvmlGpmMetric_t *out = &metricsGet->metrics[i];
        const gpm_metric *m = NULL;
        for (size_t k = 0; k < GPM_METRIC_COUNT && m == NULL; k++) {
            if (gpm_metrics[k].id == out->metricId)
                m = &gpm_metrics[k];
        }
        out->value = 0.0;
        out->metricInfo.shortName = out->metricInfo.longName = out->metricInfo.unit = NULL;
        if (m == NULL || (m->needs_nvlink && g->nvlinks == 0)) {
            out->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        gpm_metric *named = &gpm_metrics[m - gpm_metrics];
        out->metricInfo.shortName = named->short_name;
        out->metricInfo.longName = named->long_name;
        out->metricInfo.unit = named->unit;
        out->nvmlReturn = gpm_average(gpu, m, t1, t2, &out->value);
    }
    return nvml_end(NVML_SUCCESS);
}
