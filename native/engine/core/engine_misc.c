/*
 * Smaller engine calls that both backends answer the same way: the
 * hostengine's version, its environment variables and field summaries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* ---- dcgmVersionInfo, dcgmHostengineVersionInfo --------------------------- */

#if defined(__x86_64__)
#define BUILD_ARCH "x86_64"
#elif defined(__aarch64__)
#define BUILD_ARCH "aarch64"
#else
#define BUILD_ARCH "unknown"
#endif

int engine_version_info(dcgmVersionInfo_t *info)
{
    if (!info)
        return DCGM_ST_BADPARAM;
    unsigned int version;
    memcpy(&version, info, sizeof version);
    if (version != dcgmVersionInfo_version2)
        return DCGM_ST_VER_MISMATCH;
    snprintf(info->rawBuildInfoString, sizeof info->rawBuildInfoString,
             "version:4.6.0;arch:" BUILD_ARCH ";buildtype:Release;buildid:0;"
             "commit:simulated;branch:simulated;author:dcgm-collector;platform:linux;"
             "simulated:yes");
    return DCGM_ST_OK;
}

/* ---- dcgmHostengineEnvironmentVariableInfo -------------------------------
 * DCGM's core module answers a name outside its short allow-list, or an
 * empty one, with ret = BADPARAM, an unset variable with ret = NOT_CONFIGURED
 * and an empty value, and a set one with ret = OK and its value; the call
 * itself succeeds in all three cases.  The environment is the engine
 * process's: the caller's own for the embedded engine, the hostengine's
 * otherwise. */

static const char *const env_var_allowed[] = { "CUDA_VISIBLE_DEVICES", "DCGM_DIAG_REMOVED" };

int engine_env_var_info(dcgmEnvVarInfo_t *info)
{
    if (!info)
        return DCGM_ST_BADPARAM;
    if (info->version != dcgmEnvVarInfo_version1)
        return DCGM_ST_VER_MISMATCH;
    char name[DCGM_MAX_STR_LENGTH];
    memcpy(name, info->envVarName, sizeof name);
    name[sizeof name - 1] = '\0';
    int allowed = 0;
    for (size_t i = 0; i < sizeof env_var_allowed / sizeof env_var_allowed[0]; i++)
        allowed |= strcmp(name, env_var_allowed[i]) == 0;
    if (!allowed) {
        info->ret = DCGM_ST_BADPARAM;
        return DCGM_ST_OK;
    }
    const char *value = getenv(name);
    if (!value) {
        info->envVarValue[0] = '\0';
        info->ret = DCGM_ST_NOT_CONFIGURED;
        return DCGM_ST_OK;
    }
    snprintf(info->envVarValue, sizeof info->envVarValue, "%s", value);
    info->ret = DCGM_ST_OK;
    return DCGM_ST_OK;
}

/* ---- dcgmGetFieldSummary -------------------------------------------------
 * DCGM: dcgmlib/src/DcgmHostEngineHandler.cpp, HelperGetFieldSummary, and
 * DcgmCacheManager.cpp, GetInt64SummaryData / GetFp64SummaryData.  The
 * requested summaries are answered in bit order over the stored samples with
 * startTime <= ts <= endTime (0 leaves that end open); blank samples count as
 * seen but take no part in any summary.  Only int64 and double fields can be
 * summarised.  With nothing kept for the field the answer is NOT_WATCHED;
 * with no sample in the window it is NO_DATA while the field is watched. */

enum { SUM_MIN, SUM_MAX, SUM_AVG, SUM_SUM, SUM_COUNT, SUM_INTEGRAL, SUM_DIFF };

typedef struct summary_acc {
    int is_double;
    int seen;               /* samples in the window, blank ones included */
    int used;               /* non-blank ones */
    int seen_at_last;       /* seen as of the newest non-blank one: DCGM's count */
    double first, last, prev, sum, min, max, integral;
    int64_t first_i, last_i, prev_i, sum_i, min_i, max_i, integral_i;
    int64_t prev_ts;
    int have_prev_ts;
} summary_acc;

static void acc_add(summary_acc *a, const engine_sample *sample)
{
    a->seen++;
    if (a->is_double) {
        double v = sample->num.dbl;
        if (v >= DCGM_FP64_BLANK) {
            a->prev = v;
            a->prev_ts = sample->ts;
            a->have_prev_ts = sample->ts != 0;
            return;
        }
        if (!a->used++)
            a->first = a->min = a->max = v;
        if (v < a->min)
            a->min = v;
        if (v > a->max)
            a->max = v;
        a->sum += v;
        if (a->have_prev_ts)
            a->integral += (v + a->prev) / 2.0 * (double)(sample->ts - a->prev_ts);
        a->prev = a->last = v;
    } else {
        int64_t v = sample->num.i64;
        if (v >= DCGM_INT64_BLANK) {
            a->prev_i = v;
            a->prev_ts = sample->ts;
            a->have_prev_ts = sample->ts != 0;
            return;
        }
        if (!a->used++)
            a->first_i = a->min_i = a->max_i = v;
        if (v < a->min_i)
            a->min_i = v;
        if (v > a->max_i)
            a->max_i = v;
        /* wrapping sums, as the 64-bit arithmetic they model */
        a->sum_i = (int64_t)((uint64_t)a->sum_i + (uint64_t)v);
        if (a->have_prev_ts) {
            /* halves summed in unsigned arithmetic: no overflow trap */
            int64_t avg = (int64_t)(((uint64_t)v + (uint64_t)a->prev_i)) / 2;
            uint64_t area = (uint64_t)avg * (uint64_t)(sample->ts - a->prev_ts);
            a->integral_i = (int64_t)((uint64_t)a->integral_i + area);
        }
        a->prev_i = a->last_i = v;
    }
    a->seen_at_last = a->seen;
    a->prev_ts = sample->ts;
    a->have_prev_ts = sample->ts != 0;
}

static void acc_answer(const summary_acc *a, int kind, dcgmSummaryResponse_t *out, int slot)
{
    if (a->is_double) {
        double v = DCGM_FP64_BLANK;
        if (a->used) {
            switch (kind) {
            case SUM_MIN: v = a->min; break;
            case SUM_MAX: v = a->max; break;
            case SUM_AVG: v = a->sum / (double)a->seen_at_last; break;
            case SUM_SUM: v = a->sum; break;
            case SUM_COUNT: v = a->seen_at_last; break;
            case SUM_INTEGRAL: v = a->integral; break;
            default: v = a->last - a->first; break;
            }
        }
        out->values[slot].fp64 = v;
    } else {
        int64_t v = DCGM_INT64_BLANK;
        if (a->used) {
            switch (kind) {
            case SUM_MIN: v = a->min_i; break;
            case SUM_MAX: v = a->max_i; break;
            case SUM_AVG: v = a->sum_i / a->seen_at_last; break;
            case SUM_SUM: v = a->sum_i; break;
            case SUM_COUNT: v = a->seen_at_last; break;
            case SUM_INTEGRAL: v = a->integral_i; break;
            default: v = (int64_t)((uint64_t)a->last_i - (uint64_t)a->first_i); break;
            }
        }
        out->values[slot].i64 = v;
    }
}

int engine_field_summary(sim_engine *e, dcgmFieldSummaryRequest_v1 *request)
{
    if (!e || !request)
        return DCGM_ST_BADPARAM;
    if (request->version != dcgmFieldSummaryRequest_version1)
        return DCGM_ST_VER_MISMATCH;
    const dcgm_field_meta_t *meta = sim_field_meta(request->fieldId);
    if (!meta || request->fieldId == 0)
        return DCGM_ST_BADPARAM;
    int kinds[DCGM_SUMMARY_SIZE], n_kinds = 0;
    for (int i = 0; i < DCGM_SUMMARY_SIZE; i++)
        if (request->summaryTypeMask & (1u << i))
            kinds[n_kinds++] = i;
    request->response.fieldType = (unsigned char)meta->fieldType;
    request->response.summaryCount = (unsigned int)n_kinds;
    if (meta->fieldType != DCGM_FT_INT64 && meta->fieldType != DCGM_FT_DOUBLE)
        return DCGM_ST_FIELD_UNSUPPORTED_BY_API;
    if (n_kinds == 0)
        return DCGM_ST_BADPARAM;

    summary_acc acc = { .is_double = meta->fieldType == DCGM_FT_DOUBLE };
    dcgm_field_entity_group_t group = (dcgm_field_entity_group_t)request->entityGroupId;
    dcgm_field_eid_t entity = request->entityId;
    engine_storage_key(meta, &group, &entity);
    pthread_mutex_lock(&e->lock);
    const engine_series *s = engine_series_find_locked(e, group, entity, request->fieldId);
    int rc = DCGM_ST_OK;
    int watched = s && s->n_watchers > 0;
    if (!s) {
        rc = DCGM_ST_NOT_WATCHED;
    } else if (s->ring.count == 0) {
        rc = !watched ? DCGM_ST_NOT_WATCHED
             : s->last_status != DCGM_ST_OK ? s->last_status : DCGM_ST_NO_DATA;
    } else {
        int64_t start = (int64_t)request->startTime, end = (int64_t)request->endTime;
        size_t i = start ? engine_ring_lower_bound(&s->ring, start) : 0;
        for (; i < s->ring.count; i++) {
            const engine_sample *sample = engine_ring_at(&s->ring, i);
            if (end && sample->ts > end)
                break;
            acc_add(&acc, sample);
        }
        if (!acc.seen)
            rc = watched ? DCGM_ST_NO_DATA : DCGM_ST_NOT_WATCHED;
    }
    pthread_mutex_unlock(&e->lock);
    for (int k = 0; k < n_kinds; k++)
        acc_answer(&acc, kinds[k], &request->response, k);
    return rc;
}
