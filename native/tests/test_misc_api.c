/*
 * test_misc_api.c -- smaller DCGM calls, each as a client sees it on an
 * embedded engine and through a hostengine:
 *   - the cache keeps a field's watch info after its last watcher leaves;
 *   - a fake GPU starts with one ECC-mode sample, fake instances have their
 *     made-up profile names;
 *   - dcgmGetFieldSummary over injected samples;
 *   - dcgmHostengineEnvironmentVariableInfo;
 *   - dcgmGetDeviceAttributes for an id no GPU has;
 *   - dcgmGetVgpuDeviceAttributes on a GPU without vGPU;
 * and the client-side ones: error priority / category, power profile names,
 * the vGPU calls' version checks, the diag validation level.
 *
 * usage: test_misc_api BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#define CHECK_SCRATCH_FILES
#include "check.h"
#include "hostengine.h"

#define FI_GPU_NAME 50
#define FI_GPU_TEMP 150
#define FI_POWER_USAGE 155 /* a double */
#define FI_ECC_MODE 300
#define FI_SBE_AGG_TOTAL 312

static const char SCENARIO_TEXT[] = "[[gpu]]\nmodel = \"H100\"\ncount = 2\n";

static dcgmReturn_t info_of(dcgmHandle_t h, unsigned int gpu, unsigned short field,
                            dcgmCacheManagerFieldInfo_v4_t *out)
{
    memset(out, 0, sizeof *out);
    out->version = dcgmCacheManagerFieldInfo_version4;
    out->entityGroupId = DCGM_FE_GPU;
    out->entityId = gpu;
    out->fieldId = field;
    return p_dcgmGetCacheManagerFieldInfo(h, out);
}

static dcgmReturn_t inject_i64(dcgmHandle_t h, unsigned int gpu, unsigned short field,
                               long long ts, long long value)
{
    dcgmInjectFieldValue_t v;
    injected_i64(&v, field, ts, value);
    return p_dcgmInjectFieldValue(h, gpu, &v);
}

static dcgmReturn_t inject_dbl(dcgmHandle_t h, unsigned int gpu, unsigned short field,
                               long long ts, double value)
{
    dcgmInjectFieldValue_t v;
    injected_dbl(&v, field, ts, value);
    return p_dcgmInjectFieldValue(h, gpu, &v);
}

static dcgmReturn_t summary(dcgmHandle_t h, unsigned int gpu, unsigned short field,
                            unsigned int mask, long long start, long long end,
                            dcgmFieldSummaryRequest_t *out)
{
    memset(out, 0, sizeof *out);
    out->version = dcgmFieldSummaryRequest_version1;
    out->fieldId = field;
    out->entityGroupId = DCGM_FE_GPU;
    out->entityId = gpu;
    out->summaryTypeMask = mask;
    out->startTime = (uint64_t)start;
    out->endTime = (uint64_t)end;
    return p_dcgmGetFieldSummary(h, out);
}

/* ---- the cache keeps watch info once a field has been watched ---------- */

static void script_unwatch_keeps_info(dcgmHandle_t h, const char *where)
{
    dcgmCacheManagerFieldInfo_v4_t fi;
    CHECK_RC(info_of(h, 0, FI_GPU_NAME, &fi), DCGM_ST_NOT_WATCHED);
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, FI_GPU_NAME, 10000000, 86400.0, 0), DCGM_ST_OK);
    CHECK_RC(info_of(h, 0, FI_GPU_NAME, &fi), DCGM_ST_OK);
    CHECK(fi.numWatchers == 1 && (fi.flags & DCGM_CMI_F_WATCHED), "%s: %d watchers, flags %x",
          where, fi.numWatchers, fi.flags);
    CHECK_RC(p_dcgmUnwatchFieldValue(h, 0, FI_GPU_NAME, 1), DCGM_ST_OK);
    CHECK_RC(info_of(h, 0, FI_GPU_NAME, &fi), DCGM_ST_OK);
    CHECK(fi.numWatchers == 0 && !(fi.flags & DCGM_CMI_F_WATCHED) && fi.numSamples == 0,
          "%s: after unwatch %d watchers, flags %x, %d samples", where, fi.numWatchers,
          fi.flags, fi.numSamples);
    /* nothing left to read */
    dcgmFieldValue_v1 v;
    unsigned short field = FI_GPU_NAME;
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, 0, &field, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_NOT_WATCHED, "%s: read after unwatch status %d", where, v.status);
    /* watched again, counted again */
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, FI_GPU_NAME, 10000000, 86400.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK_RC(info_of(h, 0, FI_GPU_NAME, &fi), DCGM_ST_OK);
    CHECK(fi.numWatchers == 1 && fi.numSamples >= 1, "%s: rewatched %d watchers %d samples",
          where, fi.numWatchers, fi.numSamples);
    CHECK_RC(p_dcgmUnwatchFieldValue(h, 0, FI_GPU_NAME, 1), DCGM_ST_OK);
}

/* ---- fake entities -------------------------------------------------------- */

static void script_fake_entities(dcgmHandle_t h, const char *where)
{
    long long before = wall_us();
    unsigned int gpu = new_fake_gpu(h);
    /* ECC mode is there from the start, enabled, without any watch */
    dcgmCacheManagerFieldInfo_v4_t fi;
    CHECK_RC(info_of(h, gpu, FI_ECC_MODE, &fi), DCGM_ST_OK);
    CHECK(fi.numSamples == 1 && fi.numWatchers == 0, "%s: ecc mode %d samples %d watchers",
          where, fi.numSamples, fi.numWatchers);
    dcgmFieldValue_v1 v;
    unsigned short field = FI_ECC_MODE;
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, gpu, &field, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.value.i64 == 1 && v.ts >= before && v.ts <= wall_us(),
          "%s: ecc mode status %d value %lld ts %lld", where, v.status, (long long)v.value.i64,
          (long long)v.ts);
    /* an injected one adds to it */
    CHECK_RC(inject_i64(h, gpu, FI_ECC_MODE, (long long)v.ts + 1000, 0), DCGM_ST_OK);
    CHECK_RC(info_of(h, gpu, FI_ECC_MODE, &fi), DCGM_ST_OK);
    CHECK(fi.numSamples == 2, "%s: ecc mode %d samples after injection", where, fi.numSamples);
    /* a real GPU has no such sample */
    CHECK_RC(info_of(h, 0, FI_ECC_MODE, &fi), DCGM_ST_NOT_WATCHED);

    /* fake GPU and compute instances answer DCGM's made-up profile names live */
    unsigned int gi = new_fake_entity(h, DCGM_FE_GPU_I, DCGM_FE_GPU, gpu);
    unsigned int ci = new_fake_entity(h, DCGM_FE_GPU_CI, DCGM_FE_GPU_I, gi);
    dcgmGroupEntityPair_t ents[2] = { { DCGM_FE_GPU_I, gi }, { DCGM_FE_GPU_CI, ci } };
    unsigned short name = FI_GPU_NAME;
    dcgmFieldValue_v2 vals[2];
    memset(vals, 0, sizeof vals);
    CHECK_RC(p_dcgmEntitiesGetLatestValues(h, ents, 2, &name, 1, DCGM_FV_FLAG_LIVE_DATA, vals),
             DCGM_ST_OK);
    CHECK(vals[0].status == DCGM_ST_OK && strcmp(vals[0].value.str, "1fg.4gb") == 0,
          "%s: instance name %d '%s'", where, vals[0].status, vals[0].value.str);
    CHECK(vals[1].status == DCGM_ST_OK && strcmp(vals[1].value.str, "1fc.1g.4gb") == 0,
          "%s: compute instance name %d '%s'", where, vals[1].status, vals[1].value.str);
}

/* ---- field summaries ------------------------------------------------------ */

static void script_field_summary(dcgmHandle_t h, const char *where)
{
    unsigned int gpu = new_fake_gpu(h);
    dcgmFieldSummaryRequest_t req;
    const unsigned int four = DCGM_SUMMARY_MIN | DCGM_SUMMARY_MAX | DCGM_SUMMARY_AVG |
                              DCGM_SUMMARY_DIFF;

    /* nothing kept for the field yet */
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, four, 0, 0, &req), DCGM_ST_NOT_WATCHED);

    CHECK_RC(p_dcgmWatchFieldValue(h, (int)gpu, FI_SBE_AGG_TOTAL, 1, 3600.0, 10000), DCGM_ST_OK);
    long long base = wall_us() - 1000000;
    for (int i = 0; i < 10; i++)
        CHECK_RC(inject_i64(h, gpu, FI_SBE_AGG_TOTAL, base + i, i), DCGM_ST_OK);
    /* a window before every sample: no data while watched */
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, four, base - 60000000, base - 30000000, &req),
             DCGM_ST_NO_DATA);
    /* all of them: answered in bit order */
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, four, 0, 0, &req), DCGM_ST_OK);
    CHECK(req.response.fieldType == DCGM_FT_INT64 && req.response.summaryCount == 4,
          "%s: type %u count %u", where, req.response.fieldType, req.response.summaryCount);
    CHECK(req.response.values[0].i64 == 0 && req.response.values[1].i64 == 9 &&
              req.response.values[2].i64 == 4 && req.response.values[3].i64 == 9,
          "%s: min %lld max %lld avg %lld diff %lld", where,
          (long long)req.response.values[0].i64, (long long)req.response.values[1].i64,
          (long long)req.response.values[2].i64, (long long)req.response.values[3].i64);
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, DCGM_SUMMARY_SUM | DCGM_SUMMARY_COUNT |
                         DCGM_SUMMARY_INTEGRAL, 0, 0, &req), DCGM_ST_OK);
    /* integral: trapezoids 1 us wide over 0..9, each (i + i+1) / 2 in integers */
    CHECK(req.response.values[0].i64 == 45 && req.response.values[1].i64 == 10 &&
              req.response.values[2].i64 == 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8,
          "%s: sum %lld count %lld integral %lld", where, (long long)req.response.values[0].i64,
          (long long)req.response.values[1].i64, (long long)req.response.values[2].i64);
    /* a window inside: samples 3..6 (both ends included) */
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, DCGM_SUMMARY_MIN | DCGM_SUMMARY_COUNT, base + 3,
                     base + 6, &req), DCGM_ST_OK);
    CHECK(req.response.values[0].i64 == 3 && req.response.values[1].i64 == 4,
          "%s: window min %lld count %lld", where, (long long)req.response.values[0].i64,
          (long long)req.response.values[1].i64);
    /* blank samples are seen but summarise nothing */
    CHECK_RC(inject_i64(h, gpu, FI_SBE_AGG_TOTAL, base + 20, DCGM_INT64_BLANK), DCGM_ST_OK);
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, DCGM_SUMMARY_MAX, 0, 0, &req), DCGM_ST_OK);
    CHECK(req.response.values[0].i64 == 9, "%s: max with a blank %lld", where,
          (long long)req.response.values[0].i64);
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, DCGM_SUMMARY_MAX, base + 20, 0, &req), DCGM_ST_OK);
    CHECK(req.response.values[0].i64 == DCGM_INT64_BLANK, "%s: max of a blank %lld", where,
          (long long)req.response.values[0].i64);

    /* a double field */
    CHECK_RC(p_dcgmWatchFieldValue(h, (int)gpu, FI_POWER_USAGE, 1, 3600.0, 10000), DCGM_ST_OK);
    CHECK_RC(inject_dbl(h, gpu, FI_POWER_USAGE, base, 100.0), DCGM_ST_OK);
    CHECK_RC(inject_dbl(h, gpu, FI_POWER_USAGE, base + 10, 300.0), DCGM_ST_OK);
    CHECK_RC(summary(h, gpu, FI_POWER_USAGE, DCGM_SUMMARY_AVG | DCGM_SUMMARY_INTEGRAL, 0, 0, &req),
             DCGM_ST_OK);
    CHECK(req.response.fieldType == DCGM_FT_DOUBLE && req.response.values[0].fp64 == 200.0 &&
              req.response.values[1].fp64 == 2000.0,
          "%s: double avg %f integral %f", where, req.response.values[0].fp64,
          req.response.values[1].fp64);

    /* unwatched with its samples gone: not watched */
    CHECK_RC(p_dcgmUnwatchFieldValue(h, (int)gpu, FI_POWER_USAGE, 1), DCGM_ST_OK);
    CHECK_RC(summary(h, gpu, FI_POWER_USAGE, DCGM_SUMMARY_AVG, 0, 0, &req), DCGM_ST_NOT_WATCHED);

    /* what cannot be summarised */
    CHECK_RC(summary(h, gpu, FI_GPU_NAME, DCGM_SUMMARY_MIN, 0, 0, &req),
             DCGM_ST_FIELD_UNSUPPORTED_BY_API);
    CHECK_RC(summary(h, gpu, 65000, DCGM_SUMMARY_MIN, 0, 0, &req), DCGM_ST_BADPARAM);
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, 0, 0, 0, &req), DCGM_ST_BADPARAM);
    memset(&req, 0, sizeof req);
    req.version = dcgmFieldSummaryRequest_version1 + 1;
    req.fieldId = FI_SBE_AGG_TOTAL;
    req.summaryTypeMask = DCGM_SUMMARY_MIN;
    CHECK_RC(p_dcgmGetFieldSummary(h, &req), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmGetFieldSummary(h, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmUnwatchFieldValue(h, (int)gpu, FI_SBE_AGG_TOTAL, 1), DCGM_ST_OK);
}

/* ---- samples injected out of order are read in time order ------------------ */

static void script_out_of_order(dcgmHandle_t h, const char *where)
{
    unsigned int gpu = new_fake_gpu(h);
    CHECK_RC(p_dcgmWatchFieldValue(h, (int)gpu, FI_SBE_AGG_TOTAL, 1, 3600.0, 10000), DCGM_ST_OK);
    long long base = wall_us() - 10000000;
    /* the even microseconds oldest first, then the odd ones newest first (each lands in the middle),
     * then a sample at a time already held, which replaces that one */
    for (int i = 0; i < 50; i++)
        CHECK_RC(inject_i64(h, gpu, FI_SBE_AGG_TOTAL, base + 2 * i, 2 * i), DCGM_ST_OK);
    for (int i = 49; i >= 0; i--)
        CHECK_RC(inject_i64(h, gpu, FI_SBE_AGG_TOTAL, base + 2 * i + 1, 2 * i + 1), DCGM_ST_OK);
    CHECK_RC(inject_i64(h, gpu, FI_SBE_AGG_TOTAL, base + 40, 1000), DCGM_ST_OK);
    dcgmFieldValue_v1 *values = calloc(128, sizeof *values);
    CHECK(values != NULL, "%s: calloc", where);
    int count = 128;
    CHECK_RC(p_dcgmGetMultipleValuesForField(h, (int)gpu, FI_SBE_AGG_TOTAL, &count, 0, 0, DCGM_ORDER_ASCENDING,
                                             values), DCGM_ST_OK);
    CHECK(count == 100, "%s: %d samples kept of 100 times", where, count);
    for (int i = 0; i < count; i++) {
        long long want = i == 40 ? 1000 : i;
        CHECK(values[i].ts == base + i && values[i].value.i64 == want, "%s: sample %d at +%lld us is %lld",
              where, i, (long long)(values[i].ts - base), (long long)values[i].value.i64);
    }
    /* a window from the middle starts at its first sample */
    dcgmFieldSummaryRequest_t req;
    CHECK_RC(summary(h, gpu, FI_SBE_AGG_TOTAL, DCGM_SUMMARY_MIN | DCGM_SUMMARY_COUNT, base + 57, base + 60, &req),
             DCGM_ST_OK);
    CHECK(req.response.values[0].i64 == 57 && req.response.values[1].i64 == 4, "%s: window min %lld count %lld",
          where, (long long)req.response.values[0].i64, (long long)req.response.values[1].i64);
    free(values);
    CHECK_RC(p_dcgmUnwatchFieldValue(h, (int)gpu, FI_SBE_AGG_TOTAL, 1), DCGM_ST_OK);
}

/* ---- environment variables ------------------------------------------------ */

static dcgmReturn_t env_info(dcgmHandle_t h, const char *name, dcgmEnvVarInfo_t *out)
{
    memset(out, 0, sizeof *out);
    out->version = dcgmEnvVarInfo_version1;
    snprintf(out->envVarName, sizeof out->envVarName, "%s", name);
    snprintf(out->envVarValue, sizeof out->envVarValue, "stale");
    return p_dcgmHostengineEnvironmentVariableInfo(h, out);
}

static void script_env_var(dcgmHandle_t h, const char *where)
{
    dcgmEnvVarInfo_t info;
    /* the engine's process is this one, in both modes of this test */
    setenv("CUDA_VISIBLE_DEVICES", "0,1,2", 1);
    CHECK_RC(env_info(h, "CUDA_VISIBLE_DEVICES", &info), DCGM_ST_OK);
    CHECK(info.ret == DCGM_ST_OK && strcmp(info.envVarValue, "0,1,2") == 0,
          "%s: set: ret %d value '%s'", where, info.ret, info.envVarValue);
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK_RC(env_info(h, "CUDA_VISIBLE_DEVICES", &info), DCGM_ST_OK);
    CHECK(info.ret == DCGM_ST_NOT_CONFIGURED && info.envVarValue[0] == '\0',
          "%s: unset: ret %d value '%s'", where, info.ret, info.envVarValue);
    setenv("INVALID_VAR", "x", 1);
    CHECK_RC(env_info(h, "INVALID_VAR", &info), DCGM_ST_OK);
    CHECK(info.ret == DCGM_ST_BADPARAM, "%s: not allowed: ret %d", where, info.ret);
    unsetenv("INVALID_VAR");
    CHECK_RC(env_info(h, "", &info), DCGM_ST_OK);
    CHECK(info.ret == DCGM_ST_BADPARAM, "%s: empty: ret %d", where, info.ret);
    memset(&info, 0, sizeof info);
    info.version = dcgmEnvVarInfo_version1 + 1;
    CHECK_RC(p_dcgmHostengineEnvironmentVariableInfo(h, &info), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmHostengineEnvironmentVariableInfo(h, NULL), DCGM_ST_BADPARAM);
}

/* ---- device attributes of an id no GPU has -------------------------------- */

static void script_attributes_bad_gpu(dcgmHandle_t h, const char *where)
{
    dcgmDeviceAttributes_t *attr = calloc(1, sizeof *attr);
    unsigned int ids[] = { 0xffffffffu, DCGM_MAX_NUM_DEVICES };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        memset(attr, 0, sizeof *attr);
        attr->version = dcgmDeviceAttributes_version3;
        CHECK_RC(p_dcgmGetDeviceAttributes(h, ids[i], attr), DCGM_ST_OK);
        CHECK(strcmp(attr->identifiers.deviceName, DCGM_STR_BLANK) == 0 &&
                  attr->powerLimits.maxPowerLimit == DCGM_INT32_BLANK,
              "%s: gpu %u name '%s' limit %u", where, ids[i], attr->identifiers.deviceName,
              attr->powerLimits.maxPowerLimit);
        /* the driver version is the system's, whatever the GPU */
        CHECK(strcmp(attr->identifiers.driverVersion, DCGM_STR_BLANK) != 0,
              "%s: gpu %u driver '%s'", where, ids[i], attr->identifiers.driverVersion);
    }
    free(attr);
}

/* ---- vGPU attributes ------------------------------------------------------- */

#define VGPU_ATTR_SIZE (dcgmVgpuDeviceAttributes_version7 & 0xffffffu)

static unsigned int u32_at(const unsigned char *p, size_t offset)
{
    unsigned int v;
    memcpy(&v, p + offset, sizeof v);
    return v;
}

static void script_vgpu_attributes(dcgmHandle_t h, const char *where)
{
    unsigned char *attr = malloc(VGPU_ATTR_SIZE);
    memset(attr, 0xab, VGPU_ATTR_SIZE);
    unsigned int v = 0;
    memcpy(attr, &v, sizeof v);
    CHECK_RC(p_dcgmGetVgpuDeviceAttributes(h, 0, attr), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmGetVgpuDeviceAttributes(h, 0, NULL), DCGM_ST_BADPARAM);
    v = dcgmVgpuDeviceAttributes_version7;
    memcpy(attr, &v, sizeof v);
    CHECK_RC(p_dcgmGetVgpuDeviceAttributes(h, 0, attr), DCGM_ST_OK);
    /* no vGPU: every count 0 (instances at 4, creatable types at 136,
     * supported types at 268) */
    CHECK(u32_at(attr, 0) == dcgmVgpuDeviceAttributes_version7 && u32_at(attr, 4) == 0 &&
              u32_at(attr, 136) == 0 && u32_at(attr, 268) == 0,
          "%s: version %x counts %u %u %u", where, u32_at(attr, 0), u32_at(attr, 4),
          u32_at(attr, 136), u32_at(attr, 268));
    /* the utilisation fields were watched for the call, and it reports their values */
    dcgmCacheManagerFieldInfo_v4_t fi;
    CHECK_RC(info_of(h, 0, 203, &fi), DCGM_ST_OK);
    CHECK(fi.numWatchers == 1 && fi.monitorIntervalUsec == 30000000, "%s: util watch %d %lld",
          where, fi.numWatchers, fi.monitorIntervalUsec);
    unsigned short fields[4] = { 203, 204, 206, 207 };
    dcgmFieldValue_v1 vals[4];
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, 0, fields, 4, vals), DCGM_ST_OK);
    for (int i = 0; i < 4; i++)
        CHECK(vals[i].status == DCGM_ST_OK &&
                  u32_at(attr, 10640 + 4 * (size_t)i) == (unsigned int)vals[i].value.i64,
              "%s: util %u: status %d, %u vs %lld", where, fields[i], vals[i].status,
              u32_at(attr, 10640 + 4 * (size_t)i), (long long)vals[i].value.i64);
    free(attr);
}

static void script_all(dcgmHandle_t h, const char *where)
{
    script_vgpu_attributes(h, where);
    script_unwatch_keeps_info(h, where);
    script_fake_entities(h, where);
    script_field_summary(h, where);
    script_out_of_order(h, where);
    script_env_var(h, where);
    script_attributes_bad_gpu(h, where);
}

static void test_embedded(void) { run_embedded(scenario, DCGM_OPERATION_MODE_MANUAL, script_all); }

static void test_hostengine(void) { run_through_hostengine(scenario, script_all); }

/* ---- a hostengine in another process answers from its own environment ---- */

static void test_env_of_hostengine_process(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/he.sock", tmpdir);
    int ready[2], stop[2];
    CHECK(pipe(ready) == 0 && pipe(stop) == 0, "pipes");
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        close(stop[1]);
        setenv("CUDA_VISIBLE_DEVICES", "5,6", 1);
        char err[256];
        int rc = p_dcgmSimServe(path, 0, 1, scenario, ready[1], stop[0], err, (int)sizeof err);
        _exit(rc == DCGM_ST_OK ? 0 : 1);
    }
    close(ready[1]);
    close(stop[0]);
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    char line[256];
    int up = read_ready_line(ready[0], line, sizeof line);
    CHECK(up, "hostengine process did not start");
    if (up) {
        char address[700];
        snprintf(address, sizeof address, "unix://%s", path);
        dcgmHandle_t h = hostengine_connect(address);
        if (h) {
            dcgmEnvVarInfo_t info;
            CHECK_RC(env_info(h, "CUDA_VISIBLE_DEVICES", &info), DCGM_ST_OK);
            CHECK(info.ret == DCGM_ST_OK && strcmp(info.envVarValue, "5,6") == 0,
                  "hostengine process: ret %d value '%s'", info.ret, info.envVarValue);
            CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
        }
    }
    CHECK(write(stop[1], "x", 1) == 1, "stop write");
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "hostengine process status %d", status);
    close(ready[0]);
    close(stop[1]);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unlink(path);
}

/* ---- client-side calls ---------------------------------------------------- */

static void test_client_side(void)
{
    /* priorities: a volatile DBE isolates, an SBE is watched, unknown codes
     * and the sentinel are unknown (3) */
    CHECK(p_dcgmErrorGetPriorityByCode(4) == 2, "DBE priority %d", p_dcgmErrorGetPriorityByCode(4));
    CHECK(p_dcgmErrorGetPriorityByCode(5) == 1, "SBE priority %d", p_dcgmErrorGetPriorityByCode(5));
    CHECK(p_dcgmErrorGetPriorityByCode(6) == 6, "pending retirement priority %d",
          p_dcgmErrorGetPriorityByCode(6));
    CHECK(p_dcgmErrorGetPriorityByCode(132) == 4, "last code priority %d",
          p_dcgmErrorGetPriorityByCode(132));
    CHECK(p_dcgmErrorGetPriorityByCode(133) == 3, "sentinel priority %d",
          p_dcgmErrorGetPriorityByCode(133));
    CHECK(p_dcgmErrorGetPriorityByCode(0xffffffffu) == 3, "far code priority %d",
          p_dcgmErrorGetPriorityByCode(0xffffffffu));
    CHECK(p_dcgmErrorGetCategoryByCode(4) == 10 && p_dcgmErrorGetCategoryByCode(3) == 13 &&
              p_dcgmErrorGetCategoryByCode(0) == 0 && p_dcgmErrorGetCategoryByCode(500) == 3,
          "categories %d %d %d %d", p_dcgmErrorGetCategoryByCode(4),
          p_dcgmErrorGetCategoryByCode(3), p_dcgmErrorGetCategoryByCode(0),
          p_dcgmErrorGetCategoryByCode(500));

    /* power profile names: 0..14 distinct, POWER_PROFILE_ prefixed */
    const char *names[15];
    for (unsigned int id = 0; id < 15; id++) {
        names[id] = NULL;
        CHECK_RC(p_dcgmPowerProfileIdToName(id, &names[id]), DCGM_ST_OK);
        CHECK(names[id] && strncmp(names[id], "POWER_PROFILE_", 14) == 0, "profile %u '%s'", id,
              names[id] ? names[id] : "(null)");
        for (unsigned int j = 0; names[id] && j < id; j++)
            CHECK(names[j] && strcmp(names[id], names[j]) != 0, "profiles %u and %u share '%s'",
                  id, j, names[id]);
    }
    CHECK(names[0] && strcmp(names[0], "POWER_PROFILE_MAX_P") == 0, "profile 0 '%s'", names[0]);
    CHECK(names[14] && strcmp(names[14], "POWER_PROFILE_MIG") == 0, "profile 14 '%s'", names[14]);
    const char *name = NULL;
    CHECK_RC(p_dcgmPowerProfileIdToName(15, &name), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmPowerProfileIdToName(0, NULL), DCGM_ST_BADPARAM);

    /* vGPU calls: the version stamp first, then not supported */
    unsigned int cfg[2][10];
    memset(cfg, 0, sizeof cfg);
    CHECK_RC(p_dcgmVgpuConfigSet(EMB, 0, cfg[0], 0), DCGM_ST_VER_MISMATCH);
    cfg[0][0] = 50;
    CHECK_RC(p_dcgmVgpuConfigSet(EMB, 0, cfg[0], 0), DCGM_ST_VER_MISMATCH);
    cfg[0][0] = dcgmVgpuConfig_version1;
    CHECK_RC(p_dcgmVgpuConfigSet(EMB, 0, cfg[0], 0), DCGM_ST_NOT_SUPPORTED);
    CHECK_RC(p_dcgmVgpuConfigSet(EMB, 0, NULL, 0), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmVgpuConfigGet(EMB, 0, 0, 2, cfg, 0), DCGM_ST_VER_MISMATCH);
    cfg[1][0] = dcgmVgpuConfig_version1;
    CHECK_RC(p_dcgmVgpuConfigGet(EMB, 0, 0, 2, cfg, 0), DCGM_ST_NOT_SUPPORTED);
    CHECK_RC(p_dcgmVgpuConfigGet(EMB, 0, 0, 0, cfg, 0), DCGM_ST_BADPARAM);
    unsigned int inst[340 / sizeof(unsigned int)];
    memset(inst, 0, sizeof inst);
    CHECK_RC(p_dcgmGetVgpuInstanceAttributes(EMB, 0, inst), DCGM_ST_VER_MISMATCH);
    inst[0] = 50;
    CHECK_RC(p_dcgmGetVgpuInstanceAttributes(EMB, 0, inst), DCGM_ST_VER_MISMATCH);
    inst[0] = dcgmVgpuInstanceAttributes_version1;
    CHECK_RC(p_dcgmGetVgpuInstanceAttributes(EMB, 0, inst), DCGM_ST_NOT_SUPPORTED);
    CHECK_RC(p_dcgmGetVgpuInstanceAttributes(EMB, 0, NULL), DCGM_ST_BADPARAM);

    /* diag validation: a level past extra-long is refused when no test is named */
    unsigned char *drd = calloc(1, dcgmRunDiag_version10 & 0xffffff);
    unsigned char *resp = calloc(1, dcgmDiagResponse_version12 & 0xffffff);
    unsigned int v = dcgmRunDiag_version10, level = 5;
    memcpy(drd, &v, sizeof v);
    memcpy(drd + 24, &level, sizeof level);
    v = dcgmDiagResponse_version12;
    memcpy(resp, &v, sizeof v);
    CHECK_RC(p_dcgmActionValidate_v2(EMB, drd, resp), DCGM_ST_BADPARAM);
    /* past the client's checks the call goes to the engine's diag module, and
     * no engine runs here */
    level = 4;
    memcpy(drd + 24, &level, sizeof level);
    CHECK_RC(p_dcgmActionValidate_v2(EMB, drd, resp), DCGM_ST_UNINITIALIZED);
    level = 5;
    memcpy(drd + 24, &level, sizeof level);
    memcpy(drd + 28, "memory", 7);
    CHECK_RC(p_dcgmActionValidate_v2(EMB, drd, resp), DCGM_ST_UNINITIALIZED);
    free(drd);
    free(resp);
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "embedded", test_embedded },
        { "hostengine", test_hostengine },
        { "client_side", test_client_side },
        { "env_process", test_env_of_hostengine_process },
    };
    const check_program program = {
        .only_env = "TEST_MISC_API_ONLY",
        .scenario_text = SCENARIO_TEXT,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
