/*
 * api_watch_predefined.c -- dcgmWatchPidFields and dcgmWatchJobFields: both
 * watch DCGM's internal job field group (id 2, "DCGM_INTERNAL_JOB") on a
 * group of GPUs for the caller (DCGM: DcgmHostEngineHandler::HelperWatchPredefined,
 * which serves the two the same way).
 */
#include "api_internal.h"

#define JOB_FIELD_GROUP 2

typedef struct predefined_watch {
    dcgmGpuGrp_t group;
    long long update_freq_us;
    double max_keep_age_s;
    int max_keep_samples;
} predefined_watch;

static int run_watch(const backend_ops *ops, void *impl, void *ctx)
{
    const predefined_watch *w = ctx;
    return ops->watch_fields(impl, w->group, JOB_FIELD_GROUP, w->update_freq_us,
                             w->max_keep_age_s, w->max_keep_samples);
}

static dcgmReturn_t watch_predefined(dcgmHandle_t handle, dcgmGpuGrp_t group, long long freq,
                                     double age, int samples)
{
    predefined_watch w = { group, freq, age, samples };
    return (dcgmReturn_t)api_with_backend(handle, run_watch, &w);
}

dcgmReturn_t dcgmWatchPidFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                long long updateFreq, double maxKeepAge, int maxKeepSamples)
{
    return watch_predefined(pDcgmHandle, groupId, updateFreq, maxKeepAge, maxKeepSamples);
}

dcgmReturn_t dcgmWatchJobFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                long long updateFreq, double maxKeepAge, int maxKeepSamples)
{
    return watch_predefined(pDcgmHandle, groupId, updateFreq, maxKeepAge, maxKeepSamples);
}
