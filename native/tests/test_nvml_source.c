/*
 * test_nvml_source.c -- the engine's NVML value source, through the exported
 * ABI of libdcgm.so.4 with DCGM_ENGINE_SOURCE=nvml over the simulated
 * libnvidia-ml.so.1 of the same build folder, its clock frozen and its
 * per-call costs off.  Values are compared with the NVML library's own
 * answers, read here through its ABI (nvml_abi.h).
 *
 * usage: test_nvml_source BUILD_DIR
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"
#include "../nvml/nvml_abi.h"

static char nvml_path[4096];

static void start(const char *scenario)
{
    setenv("DCGM_ENGINE_SOURCE", "nvml", 1);
    setenv("DCGM_ENGINE_NVML_LIB", nvml_path, 1);
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &h), DCGM_ST_OK);
    CHECK(h == EMB, "handle %lu", (unsigned long)h);
}

static dcgmFieldValue_v1 value_of(unsigned int gpu, unsigned short field)
{
    dcgmFieldValue_v1 v;
    memset(&v, 0, sizeof v);
    CHECK_RC(p_dcgmSimGetValueAt(gpu, field, 0, &v), DCGM_ST_OK);
    return v;
}

static void test_values(void)
{
    start("2");
    char name[600] = "";
    CHECK_RC(p_dcgmSimSourceName(name, sizeof name), DCGM_ST_OK);
    CHECK(strncmp(name, "nvml /", 6) == 0 && strstr(name, "libnvidia-ml.so.1"), "source %s", name);
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_OK);
    CHECK(count == 2, "count %d", count);

    void *nvml = dlopen(nvml_path, RTLD_NOW | RTLD_LOCAL);
    CHECK(nvml != NULL, "dlopen %s", nvml_path);
    if (!nvml)
        return;
    nvmlReturn_t (*init)(void) = (nvmlReturn_t (*)(void))dlsym(nvml, "nvmlInit_v2");
    nvmlReturn_t (*shutdown)(void) = (nvmlReturn_t (*)(void))dlsym(nvml, "nvmlShutdown");
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *) =
        (nvmlReturn_t (*)(unsigned int, nvmlDevice_t *))dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
    nvmlReturn_t (*temp)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *) =
        (nvmlReturn_t (*)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *))dlsym(nvml, "nvmlDeviceGetTemperature");
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *) =
        (nvmlReturn_t (*)(nvmlDevice_t, unsigned int *))dlsym(nvml, "nvmlDeviceGetPowerUsage");
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int) =
        (nvmlReturn_t (*)(nvmlDevice_t, char *, unsigned int))dlsym(nvml, "nvmlDeviceGetUUID");
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_v2_t *) =
        (nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(nvml, "nvmlDeviceGetMemoryInfo_v2");
    CHECK_RC(init(), NVML_SUCCESS);
    for (unsigned int g = 0; g < 2; g++) {
        nvmlDevice_t dev;
        CHECK_RC(handle(g, &dev), NVML_SUCCESS);
        unsigned int t = 0, mw = 0;
        char id[96] = "";
        nvmlMemory_v2_t mem = { .version = nvmlMemory_v2 };
        CHECK_RC(temp(dev, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
        CHECK_RC(power(dev, &mw), NVML_SUCCESS);
        CHECK_RC(uuid(dev, id, sizeof id), NVML_SUCCESS);
        CHECK_RC(memory(dev, &mem), NVML_SUCCESS);
        dcgmFieldValue_v1 v = value_of(g, 150);
        CHECK(v.value.i64 == (int64_t)t, "gpu %u temp %lld vs %u", g, (long long)v.value.i64, t);
        v = value_of(g, 155);
        CHECK(v.value.dbl == mw / 1000.0, "gpu %u power %f vs %u mW", g, v.value.dbl, mw);
        v = value_of(g, 54);
        CHECK(strcmp(v.value.str, id) == 0, "gpu %u uuid %s vs %s", g, v.value.str, id);
        v = value_of(g, 252);
        CHECK(v.value.i64 == (int64_t)(mem.used / (1024 * 1024)), "gpu %u fb used %lld", g,
              (long long)v.value.i64);
        v = value_of(g, 250);
        CHECK(v.value.i64 == (int64_t)(mem.total / (1024 * 1024)), "gpu %u fb total %lld", g,
              (long long)v.value.i64);
        /* bare metal: no vGPU license (nvmlDeviceGetGridLicensableFeatures_v4) */
        v = value_of(g, 526);
        CHECK(v.value.i64 == 0, "gpu %u vgpu license %lld", g, (long long)v.value.i64);
        /* not in the NVML field map (NvLink TX bytes from GPM): NOT_SUPPORTED, never invented */
        v = value_of(g, 1011);
        CHECK(v.value.i64 == DCGM_INT64_NOT_SUPPORTED, "gpu %u nvlink tx %lld", g, (long long)v.value.i64);
    }
    dcgmFieldValue_v1 v = value_of(0, 1);
    CHECK(v.value.str[0] != '\0' && strchr(v.value.str, '.'), "driver version %s", v.value.str);
    CHECK_RC(shutdown(), NVML_SUCCESS);
    dlclose(nvml);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

static void test_no_permission(void)
{
    setenv("DCGM_SIM_NVML_NO_PERMISSION", "nvmlDeviceGetPowerUsage", 1);
    start("1");
    dcgmFieldValue_v1 v = value_of(0, 155);
    CHECK(v.value.dbl == DCGM_FP64_NOT_PERMISSIONED, "power %f", v.value.dbl);
    v = value_of(0, 150);
    CHECK(v.value.i64 > 0 && v.value.i64 < 200, "temp %lld", (long long)v.value.i64);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unsetenv("DCGM_SIM_NVML_NO_PERMISSION");
}

static void test_lost_gpu(void)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/test_nvml_source_%d.toml", (int)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "%s", path);
    if (!f)
        return;
    fputs("seed = 3\n[[gpu]]\nmodel = \"H100\"\ncount = 3\n\n"
          "[[event]]\nat = 1.0\ngpu = 1\nkind = \"lost\"\nxid = 79\n", f);
    fclose(f);
    setenv("DCGM_SIM_NVML_TIME_US", "2000000", 1);
    start(path);
    dcgmFieldValue_v1 v = value_of(1, 150);
    CHECK(v.value.i64 == DCGM_INT64_BLANK, "lost gpu temp %lld", (long long)v.value.i64);
    DcgmEntityStatus_t status = DcgmEntityStatusUnknown;
    CHECK_RC(p_dcgmGetGpuStatus(EMB, 1, &status), DCGM_ST_OK);
    CHECK(status == DcgmEntityStatusLost, "gpu 1 status %d", (int)status);
    CHECK_RC(p_dcgmGetGpuStatus(EMB, 0, &status), DCGM_ST_OK);
    CHECK(status == DcgmEntityStatusOk, "gpu 0 status %d", (int)status);
    v = value_of(0, 150);
    CHECK(v.value.i64 > 0 && v.value.i64 < 200, "gpu 0 temp %lld", (long long)v.value.i64);
    v = value_of(2, 155);
    CHECK(v.value.dbl > 0 && v.value.dbl < 1000, "gpu 2 power %f", v.value.dbl);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    setenv("DCGM_SIM_NVML_TIME_US", "5000000", 1);
    unlink(path);
}

static const char *write_scenario(const char *tag, const char *text)
{
    return write_scenario_as("test_nvml_source", tag, text);
}

static dcgmFieldGrp_t make_field_group(const char *name, const unsigned short *ids, int n)
{
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, n, ids, name, &fg), DCGM_ST_OK);
    return fg;
}

static int collect_entity(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                          dcgmFieldValue_v1 *values, int n, void *user)
{
    recs_append(user, group, entity, values, n);
    return 0;
}

/* the simulated NVML's own entry points, read beside the engine */
typedef struct nvml_lib {
    void *so;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*gpm_alloc)(nvmlGpmSample_t *);
    nvmlReturn_t (*gpm_free)(nvmlGpmSample_t);
    nvmlReturn_t (*gpm_sample)(nvmlDevice_t, nvmlGpmSample_t);
    nvmlReturn_t (*gpm_metrics)(nvmlGpmMetricsGet_t *);
} nvml_lib;

static int nvml_open(nvml_lib *n)
{
    memset(n, 0, sizeof *n);
    n->so = dlopen(nvml_path, RTLD_NOW | RTLD_LOCAL);
    CHECK(n->so != NULL, "dlopen %s", nvml_path);
    if (!n->so)
        return 0;
    *(void **)&n->init = dlsym(n->so, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(n->so, "nvmlShutdown");
    *(void **)&n->handle = dlsym(n->so, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&n->gpm_alloc = dlsym(n->so, "nvmlGpmSampleAlloc");
    *(void **)&n->gpm_free = dlsym(n->so, "nvmlGpmSampleFree");
    *(void **)&n->gpm_sample = dlsym(n->so, "nvmlGpmSampleGet");
    *(void **)&n->gpm_metrics = dlsym(n->so, "nvmlGpmMetricsGet");
    CHECK(n->init && n->shutdown && n->handle && n->gpm_alloc && n->gpm_free && n->gpm_sample &&
          n->gpm_metrics, "NVML entry points missing");
    CHECK_RC(n->init(), NVML_SUCCESS);
    return 1;
}

static void nvml_close(nvml_lib *n)
{
    CHECK_RC(n->shutdown(), NVML_SUCCESS);
    dlclose(n->so);
}

/* ---- XIDs through NVML events -------------------------------------------- */

static const char xid_scenario[] =
    "seed = 5\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 2\nworkload = \"training\"\n"
    "[[event]]\nat = 0.5\ngpu = 0\nkind = \"xid\"\nxid = 13\ncount = 2\ninterval = 0.1\n"
    "[[event]]\nat = 0.7\ngpu = 1\nkind = \"xid\"\nxid = 48\n";

static void test_xids(void)
{
    /* events need a running clock: a frozen one never reaches an XID after registration */
    unsetenv("DCGM_SIM_NVML_TIME_US");
    const char *path = write_scenario("xid", xid_scenario);
    start(path);
    long long t0 = 0;
    CHECK_RC(p_dcgmSimGetStartTime(&t0), DCGM_ST_OK);
    unsigned short xid = 230;
    dcgmFieldGrp_t fg = make_field_group("xid", &xid, 1);
    CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(EMB, DCGM_GROUP_ALL_GPUS, DCGM_HEALTH_WATCH_ALL), DCGM_ST_OK);
    dcgmHealthResponse_t *hr = calloc(1, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_OK);
    CHECK(hr->overallHealth == DCGM_HEALTH_RESULT_PASS && hr->incidentCount == 0,
          "priming check %d/%u", hr->overallHealth, hr->incidentCount);

    recs *r = recs_new(64);
    long long next = 0;
    int64_t early = wall_us() - t0;
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, 0, &next, collect_entity, r),
             DCGM_ST_OK);
    if (early < 400000) /* a stalled machine may already be past the first XID */
        CHECK(r->count == 2 && r->items[0].v.status == DCGM_ST_NO_DATA &&
              r->items[1].v.status == DCGM_ST_NO_DATA, "before any XID: %d records", r->count);
    while (wall_us() - t0 < 1000000)
        sleep_ms(50);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    int64_t read_at = wall_us();
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, 0, &next, collect_entity, r),
             DCGM_ST_OK);
    int on_gpu[2] = { 0, 0 };
    for (int i = 0; i < r->count; i++) {
        const rec *x = &r->items[i];
        CHECK(x->entity < 2 && x->v.status == DCGM_ST_OK, "record %d: gpu %u status %d", i,
              x->entity, x->v.status);
        if (x->entity >= 2 || x->v.status != DCGM_ST_OK)
            continue;
        on_gpu[x->entity]++;
        /* stamped when the engine read the event set: not before the XID, not after now */
        CHECK(x->v.value.i64 == (x->entity == 0 ? 13 : 48) && x->v.ts >= t0 + 450000 &&
              x->v.ts <= read_at, "gpu %u: XID %lld at +%lld us", x->entity,
              (long long)x->v.value.i64, (long long)(x->v.ts - t0));
    }
    CHECK(on_gpu[0] == 2 && on_gpu[1] == 1, "XIDs on gpu 0: %d, gpu 1: %d", on_gpu[0], on_gpu[1]);
    dcgmFieldValue_v1 v;
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 1, &xid, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.value.i64 == 48, "latest XID on gpu 1: %d %lld", v.status,
          (long long)v.value.i64);
    /* nothing new since */
    r->count = 0;
    long long cursor = next;
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, cursor, &next, collect_entity,
                                     r), DCGM_ST_OK);
    CHECK(r->count == 2 && r->items[0].v.status == DCGM_ST_NO_DATA, "again: %d records", r->count);

    /* the health check sees them too, as DCGM's health module: XID 48 (double-bit ECC)
     * fails the GPU under ALL; XID 13 is not one it knows */
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_OK);
    CHECK(hr->overallHealth == DCGM_HEALTH_RESULT_FAIL && hr->incidentCount == 1 &&
              hr->incidents[0].system == DCGM_HEALTH_WATCH_ALL &&
              hr->incidents[0].error.code == 101 /* DCGM_FR_XID_ERROR */ &&
              hr->incidents[0].entityInfo.entityId == 1,
          "health %d incidents %u system %x code %d gpu %u", hr->overallHealth,
          hr->incidentCount, (unsigned)hr->incidents[0].system, hr->incidents[0].error.code,
          hr->incidents[0].entityInfo.entityId);
    free(hr);
    recs_free(r);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    setenv("DCGM_SIM_NVML_TIME_US", "5000000", 1);
    unlink(path);
}

/* No watch of field 230 but the MEM health watch's: that alone makes the source listen,
 * in MANUAL mode too (DCGM reads XIDs on a thread of their own). */
static void test_xid_health_only(void)
{
    unsetenv("DCGM_SIM_NVML_TIME_US");
    const char *path = write_scenario("xidhealth", xid_scenario);
    start(path);
    long long t0 = 0;
    CHECK_RC(p_dcgmSimGetStartTime(&t0), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(EMB, DCGM_GROUP_ALL_GPUS, DCGM_HEALTH_WATCH_MEM), DCGM_ST_OK);
    dcgmHealthResponse_t *hr = calloc(1, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_OK);
    int64_t primed = wall_us() - t0;
    while (wall_us() - t0 < 900000)
        sleep_ms(50);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_OK);
    if (primed < 600000) /* watched before XID 48 happened */
        CHECK(hr->overallHealth == DCGM_HEALTH_RESULT_FAIL && hr->incidentCount == 1 &&
              hr->incidents[0].system == DCGM_HEALTH_WATCH_ALL &&
              hr->incidents[0].entityInfo.entityId == 1,
              "XID 48 by health check only: health %d incidents %u", hr->overallHealth,
              hr->incidentCount);
    free(hr);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    setenv("DCGM_SIM_NVML_TIME_US", "5000000", 1);
    unlink(path);
}

/* ---- profiling fields from GPM ------------------------------------------- */

#define N_PROF 10

/* any of DCGM's blanks (plain, not supported, not found, ...) */
static int is_blank(const dcgmFieldValue_v1 *v)
{
    return v->fieldType == DCGM_FT_DOUBLE ? v->value.dbl >= DCGM_FP64_BLANK
                                          : v->value.i64 >= DCGM_INT64_BLANK;
}

/* the plain blank: no reading yet */
static int is_plain_blank(const dcgmFieldValue_v1 *v)
{
    return v->fieldType == DCGM_FT_DOUBLE ? v->value.dbl == DCGM_FP64_BLANK
                                          : v->value.i64 == DCGM_INT64_BLANK;
}

static void test_gpm(void)
{
    static const unsigned int metric_ids[N_PROF] = { 1, 2, 3, 5, 10, 11, 12, 13, 20, 21 };
    start("2");
    unsigned short ids[N_PROF];
    for (int i = 0; i < N_PROF; i++)
        ids[i] = (unsigned short)(1001 + i);
    dcgmFieldGrp_t fg = make_field_group("prof", ids, N_PROF);
    /* the watch request runs the first pass: no earlier sample to measure from */
    CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, fg, 100000, 60.0, 0), DCGM_ST_OK);
    dcgmFieldValue_v1 vals[N_PROF];
    for (unsigned int g = 0; g < 2; g++) {
        CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, (int)g, ids, N_PROF, vals), DCGM_ST_OK);
        for (int i = 0; i < N_PROF; i++)
            CHECK(vals[i].status == DCGM_ST_OK && is_plain_blank(&vals[i]),
                  "gpu %u field %u first pass not blank: %d %lld %g", g, ids[i], vals[i].status,
                  (long long)vals[i].value.i64, vals[i].value.dbl);
    }
    sleep_ms(120);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);

    /* what GPM itself says between two samples; the clock is frozen, so the
     * engine's two samples and these two all measure the same instant */
    nvml_lib n;
    if (!nvml_open(&n)) {
        CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
        return;
    }
    nvmlGpmMetricsGet_t *mg = calloc(1, sizeof *mg);
    for (unsigned int g = 0; g < 2; g++) {
        nvmlDevice_t dev;
        nvmlGpmSample_t s1 = NULL, s2 = NULL;
        CHECK_RC(n.handle(g, &dev), NVML_SUCCESS);
        CHECK_RC(n.gpm_alloc(&s1), NVML_SUCCESS);
        CHECK_RC(n.gpm_alloc(&s2), NVML_SUCCESS);
        CHECK_RC(n.gpm_sample(dev, s1), NVML_SUCCESS);
        CHECK_RC(n.gpm_sample(dev, s2), NVML_SUCCESS);
        memset(mg, 0, sizeof *mg);
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = N_PROF;
        mg->sample1 = s1;
        mg->sample2 = s2;
        for (int i = 0; i < N_PROF; i++)
            mg->metrics[i].metricId = metric_ids[i];
        CHECK_RC(n.gpm_metrics(mg), NVML_SUCCESS);
        CHECK_RC(n.gpm_free(s1), NVML_SUCCESS);
        CHECK_RC(n.gpm_free(s2), NVML_SUCCESS);
        CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, (int)g, ids, N_PROF, vals), DCGM_ST_OK);
        int nonzero = 0;
        for (int i = 0; i < N_PROF; i++) {
            CHECK_RC(mg->metrics[i].nvmlReturn, NVML_SUCCESS);
            CHECK(vals[i].status == DCGM_ST_OK, "gpu %u field %u status %d", g, ids[i],
                  vals[i].status);
            if (i < 8) {
                double want = mg->metrics[i].value / 100.0;
                CHECK(vals[i].fieldType == DCGM_FT_DOUBLE && vals[i].value.dbl == want &&
                      want >= 0.0 && want <= 1.0, "gpu %u field %u: %g, GPM %g", g, ids[i],
                      vals[i].value.dbl, want);
                nonzero += vals[i].value.dbl > 0.0;
            } else {
                int64_t want = (int64_t)(mg->metrics[i].value * 1048576.0);
                CHECK(vals[i].fieldType == DCGM_FT_INT64 && vals[i].value.i64 == want && want >= 0,
                      "gpu %u field %u: %lld, GPM %lld", g, ids[i], (long long)vals[i].value.i64,
                      (long long)want);
                nonzero += vals[i].value.i64 > 0;
            }
        }
        CHECK(nonzero >= 3, "gpu %u: only %d profiling fields above 0 under training", g, nonzero);
    }
    free(mg);
    nvml_close(&n);

    /* the profiling metric groups (the collector's discovery asks) list them */
    dcgmProfGetMetricGroups_t *groups = calloc(1, sizeof *groups);
    groups->version = dcgmProfGetMetricGroups_version;
    groups->gpuId = 0;
    CHECK_RC(p_dcgmProfGetSupportedMetricGroups(EMB, groups), DCGM_ST_OK);
    int listed = 0;
    for (unsigned int i = 0; i < groups->numMetricGroups; i++)
        for (unsigned int j = 0; j < groups->metricGroups[i].numFieldIds; j++) {
            unsigned short f = groups->metricGroups[i].fieldIds[j];
            CHECK(f >= 1001 && f <= 1010, "H100 lists profiling field %u", f);
            listed++;
        }
    CHECK(listed == N_PROF, "H100 lists %d profiling fields", listed);
    free(groups);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

static const char no_gpm_scenario[] =
    "seed = 2\n"
    "[[gpu]]\nmodel = \"A100\"\ncount = 1\n"
    "[[gpu]]\nmodel = \"L4\"\ncount = 1\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 1\n";

static void test_gpm_unsupported(void)
{
    const char *path = write_scenario("nogpm", no_gpm_scenario);
    start(path);
    unsigned short ids[N_PROF];
    for (int i = 0; i < N_PROF; i++)
        ids[i] = (unsigned short)(1001 + i);
    dcgmFieldGrp_t fg = make_field_group("prof", ids, N_PROF);
    CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, fg, 100000, 60.0, 0), DCGM_ST_OK);
    sleep_ms(120);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    dcgmFieldValue_v1 vals[N_PROF];
    dcgmProfGetMetricGroups_t *groups = calloc(1, sizeof *groups);
    for (unsigned int g = 0; g < 3; g++) {
        CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, (int)g, ids, N_PROF, vals), DCGM_ST_OK);
        for (int i = 0; i < N_PROF; i++) {
            int unsupported = vals[i].fieldType == DCGM_FT_DOUBLE
                                  ? vals[i].value.dbl == DCGM_FP64_NOT_SUPPORTED
                                  : vals[i].value.i64 == DCGM_INT64_NOT_SUPPORTED;
            if (g < 2)
                CHECK(unsupported, "gpu %u (no GPM) field %u: %lld %g", g, ids[i],
                      (long long)vals[i].value.i64, vals[i].value.dbl);
            else
                CHECK(!unsupported && !is_blank(&vals[i]), "gpu 2 (H100) field %u: %lld %g",
                      ids[i], (long long)vals[i].value.i64, vals[i].value.dbl);
        }
        memset(groups, 0, sizeof *groups);
        groups->version = dcgmProfGetMetricGroups_version;
        groups->gpuId = g;
        CHECK_RC(p_dcgmProfGetSupportedMetricGroups(EMB, groups),
                 g < 2 ? DCGM_ST_NOT_SUPPORTED : DCGM_ST_OK);
    }
    free(groups);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unlink(path);
}

static void test_missing_library(void)
{
    setenv("DCGM_ENGINE_SOURCE", "nvml", 1);
    setenv("DCGM_ENGINE_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &h), DCGM_ST_LIBRARY_NOT_FOUND);
    setenv("DCGM_ENGINE_SOURCE", "models", 1);
    setenv("DCGM_SIM_SCENARIO", "1", 1);
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &h), DCGM_ST_OK);
    char name[64] = "";
    CHECK_RC(p_dcgmSimSourceName(name, sizeof name), DCGM_ST_OK);
    CHECK(strcmp(name, "models") == 0, "source %s", name);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

/* The build's simulated NVML, free of simulated costs, its clock frozen 5 s in. */
static void use_build_nvml(const char *build_dir)
{
    nvml_library_in(build_dir, nvml_path, sizeof nvml_path);
    setenv("DCGM_SIM_NVML_COSTS", "off", 1);
    setenv("DCGM_SIM_NVML_TIME_US", "5000000", 1);
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "values", test_values }, { "no_permission", test_no_permission },
        { "lost_gpu", test_lost_gpu }, { "xids", test_xids },
        { "xid_health_only", test_xid_health_only }, { "gpm", test_gpm },
        { "gpm_unsupported", test_gpm_unsupported }, { "missing_library", test_missing_library },
    };
    const check_program program = {
        .only_env = "TEST_NVML_SOURCE_ONLY",
        .prepare = use_build_nvml,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
