/*
 * test_nvml_cost.c -- the NVML source's handling of costly reads, through the
 * exported ABI of libdcgm.so.4 (DCGM_ENGINE_SOURCE=nvml) over the simulated
 * libnvidia-ml.so.1 of the same build folder, its clock running.
 *
 *   energy_estimate  the served energy is the true counter between true
 *                    reads plus the integrated power: never decreasing, and
 *                    close to the true counter read just before and just
 *                    after it (same library instance, so the same simulated
 *                    clock)
 *   field_stats      dcgmSimFieldStats reports the reads, the cadence of the
 *                    slow fields and the energy corrections
 *   watched          an AUTO-mode watch at 100 ms: samples counted per field,
 *                    the slow fields read at their own cadence, and the
 *                    slowly changing ones (remapped rows) once a second
 *
 * usage: test_nvml_cost BUILD_DIR
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"
#include "../nvml/nvml_abi.h"

static char nvml_path[4096];

typedef nvmlReturn_t (*fn_void)(void);
typedef nvmlReturn_t (*fn_handle)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*fn_fields)(nvmlDevice_t, int, nvmlFieldValue_t *);

static void start(const char *scenario, dcgmOperationMode_t mode)
{
    setenv("DCGM_ENGINE_SOURCE", "nvml", 1);
    setenv("DCGM_ENGINE_NVML_LIB", nvml_path, 1);
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(mode, &h), DCGM_ST_OK);
}

static long long served(unsigned int gpu, unsigned short field)
{
    dcgmFieldValue_v1 v;
    memset(&v, 0, sizeof v);
    CHECK_RC(p_dcgmSimGetValueAt(gpu, field, 0, &v), DCGM_ST_OK);
    return v.value.i64;
}

static const dcgmSimFieldStats_t *find(const dcgmSimFieldStats_t *rows, int n, unsigned int f)
{
    for (int i = 0; i < n; i++)
        if (rows[i].fieldId == f)
            return &rows[i];
    return NULL;
}

static void test_energy_estimate(void)
{
    setenv("DCGM_ENGINE_NVML_ENERGY_PERIOD_MS", "500", 1);
    start("2", DCGM_OPERATION_MODE_MANUAL);
    void *nvml = dlopen(nvml_path, RTLD_NOW | RTLD_LOCAL);
    CHECK(nvml != NULL, "dlopen %s", nvml_path);
    if (!nvml)
        return;
    fn_void init = (fn_void)dlsym(nvml, "nvmlInit_v2");
    fn_void shutdown = (fn_void)dlsym(nvml, "nvmlShutdown");
    fn_handle handle = (fn_handle)dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
    fn_fields fields = (fn_fields)dlsym(nvml, "nvmlDeviceGetFieldValues");
    CHECK_RC(init(), NVML_SUCCESS);
    nvmlDevice_t dev;
    CHECK_RC(handle(0, &dev), NVML_SUCCESS);

    /* before the reader's first true read the sample is blank, never made up */
    long long first = served(0, 156);
    CHECK(first == DCGM_INT64_BLANK || first > 0, "first energy %lld", first);
    long long prev = 0, start_true = -1, end_true = 0;
    double worst = 0, max_power_mw = 0;
    int readings = 0;
    for (int i = 0; i < 40; i++) {
        sleep_ms(100);
        /* the true counter read just before and just after the served sample: the sample's
         * instant lies between the two, however slowly the calls run (valgrind) */
        nvmlFieldValue_t before = { .fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION };
        CHECK_RC(fields(dev, 1, &before), NVML_SUCCESS);
        long long got = served(0, 156);
        nvmlFieldValue_t after = { .fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION };
        CHECK_RC(fields(dev, 1, &after), NVML_SUCCESS);
        long long truth_lo = (long long)before.value.ullVal, truth_hi = (long long)after.value.ullVal;
        nvmlFieldValue_t power = { .fieldId = NVML_FI_DEV_POWER_INSTANT };
        CHECK_RC(fields(dev, 1, &power), NVML_SUCCESS);
        double mw = power.valueType == NVML_VALUE_TYPE_DOUBLE ? power.value.dVal : (double)power.value.uiVal;
        if (mw > max_power_mw)
            max_power_mw = mw;
        if (got == DCGM_INT64_BLANK)
            continue;
        readings++;
        CHECK(got >= prev, "energy went back: %lld after %lld", got, prev);
        prev = got;
        if (start_true < 0)
            start_true = truth_lo;
        end_true = truth_hi;
        double off = got < truth_lo ? (double)(truth_lo - got) : got > truth_hi ? (double)(got - truth_hi) : 0.0;
        if (off > worst)
            worst = off;
    }
    CHECK(readings >= 35, "only %d energy readings in 4 s", readings);
    double drawn = (double)(end_true - start_true);
    CHECK(drawn > 0, "no energy drawn (%lld -> %lld)", start_true, end_true);
    printf("  energy: %d readings, largest distance from the true counter %.0f mJ of %.0f mJ drawn\n",
           readings, worst, drawn);
    /* The true counter moves once per 100 ms step of the node (as the recorded H200's does)
     * while the estimate integrates continuously, so the two may differ by one step's energy
     * however well the estimate tracks; beyond that it stays within 2 % of what was drawn. */
    double step_mj = max_power_mw * 0.1;
    CHECK(max_power_mw > 0, "no instant power read");
    CHECK(worst <= 0.02 * drawn + step_mj, "estimate off by %.0f mJ of %.0f mJ drawn (one step %.0f mJ)",
          worst, drawn, step_mj);

    dcgmSimFieldStats_t rows[64];
    int n = 0;
    CHECK_RC(p_dcgmSimFieldStats(rows, 64, &n), DCGM_ST_OK);
    const dcgmSimFieldStats_t *e = find(rows, n < 64 ? n : 64, 156);
    CHECK(e != NULL, "no stats row for field 156");
    if (e) {
        CHECK(e->periodUs == 500000, "energy cadence %lld us", e->periodUs);
        CHECK(e->reads >= 40, "energy reads %lld", e->reads);
        CHECK(e->corrections >= 4, "corrections %lld", e->corrections);
        CHECK(fabs(e->lastCorrection) <= e->maxAbsCorrection + 1e-9 &&
              e->maxAbsCorrection <= 0.02 * drawn + step_mj,
              "corrections last %.1f max %.1f of %.0f drawn", e->lastCorrection,
              e->maxAbsCorrection, drawn);
        CHECK(e->readNs > 0, "energy read time %lld ns", e->readNs);
    }
    /* too small a buffer: the count still says how many there are */
    int m = 0;
    CHECK_RC(p_dcgmSimFieldStats(rows, 0, &m), DCGM_ST_OK);
    CHECK(m == n, "count %d vs %d", m, n);
    CHECK_RC(p_dcgmSimFieldStats(NULL, 1, &m), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmSimFieldStats(rows, 1, NULL), DCGM_ST_BADPARAM);

    CHECK_RC(shutdown(), NVML_SUCCESS);
    dlclose(nvml);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unsetenv("DCGM_ENGINE_NVML_ENERGY_PERIOD_MS");
    CHECK_RC(p_dcgmSimFieldStats(rows, 64, &n), DCGM_ST_UNINITIALIZED);
}

static void test_watched(void)
{
    setenv("DCGM_ENGINE_NVML_REPLAY_PERIOD_MS", "300", 1);
    start("4", DCGM_OPERATION_MODE_AUTO);
    dcgmGpuGrp_t group = 0;
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_DEFAULT, "all", &group), DCGM_ST_OK);
    unsigned short ids[] = { 150, 155, 156, 202, 203, 252, 393 };
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 7, ids, "cost", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFields(EMB, group, fg, 100000, 60.0, 0), DCGM_ST_OK);
    sleep_ms(1500);
    dcgmSimFieldStats_t rows[64];
    int n = 0;
    CHECK_RC(p_dcgmSimFieldStats(rows, 64, &n), DCGM_ST_OK);
    n = n < 64 ? n : 64;
    for (unsigned int i = 0; i < 7; i++) {
        const dcgmSimFieldStats_t *r = find(rows, n, ids[i]);
        CHECK(r != NULL, "no stats for watched field %u", ids[i]);
        if (!r)
            continue;
        /* 4 GPUs sampled about every 100 ms for 1.5 s */
        CHECK(r->samples >= 4 * 8 && r->samples <= 4 * 17, "field %u: %lld samples", ids[i],
              r->samples);
        CHECK(r->lateSamples <= r->samples, "field %u late %lld", ids[i], r->lateSamples);
    }
    const dcgmSimFieldStats_t *replay = find(rows, n, 202);
    if (replay) {
        /* read on the reader thread every 300 ms, not at each of the ~15 samples */
        CHECK(replay->periodUs == 300000, "replay cadence %lld", replay->periodUs);
        CHECK(replay->reads >= 4 && replay->reads <= 4 * 7, "replay reads %lld", replay->reads);
    }
    const dcgmSimFieldStats_t *temp = find(rows, n, 150);
    if (temp)
        CHECK(temp->periodUs == 0 && temp->reads >= temp->samples,
              "temperature read at each sample: %lld reads, %lld samples", temp->reads, temp->samples);
    /* remapped rows hardly ever change: read again once a second, not at each sample */
    const dcgmSimFieldStats_t *rows_remapped = find(rows, n, 393);
    if (rows_remapped)
        CHECK(rows_remapped->reads >= 4 && rows_remapped->reads <= 4 * 2 &&
              rows_remapped->samples >= 4 * 8,
              "remapped rows: %lld reads for %lld samples", rows_remapped->reads,
              rows_remapped->samples);
    /* every watched value is there: the replay counter from its cell, energy estimated */
    for (unsigned int g = 0; g < 4; g++) {
        dcgmFieldValue_v1 v;
        memset(&v, 0, sizeof v);
        CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, g, ids + 3, 1, &v), DCGM_ST_OK);
        CHECK(v.status == DCGM_ST_OK && v.value.i64 >= 0 && v.value.i64 < DCGM_INT64_BLANK,
              "gpu %u replay status %d value %lld", g, v.status, (long long)v.value.i64);
        CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, g, ids + 2, 1, &v), DCGM_ST_OK);
        CHECK(v.status == DCGM_ST_OK && v.value.i64 > 0 && v.value.i64 < DCGM_INT64_BLANK,
              "gpu %u energy status %d value %lld", g, v.status, (long long)v.value.i64);
    }
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unsetenv("DCGM_ENGINE_NVML_REPLAY_PERIOD_MS");
}

/* The build's simulated NVML, free of simulated costs, on a running clock. */
static void use_build_nvml(const char *build_dir)
{
    nvml_library_in(build_dir, nvml_path, sizeof nvml_path);
    setenv("DCGM_SIM_NVML_COSTS", "off", 1);
    unsetenv("DCGM_SIM_NVML_TIME_US");
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "energy_estimate", test_energy_estimate }, { "watched", test_watched },
    };
    const check_program program = { .only_env = "TEST_NVML_COST_ONLY", .prepare = use_build_nvml };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
