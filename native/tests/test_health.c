/*
 * test_health.c -- dcgmHealthSet / dcgmHealthCheck as DCGM's health module
 * (modules/health/DcgmHealthWatch.cpp) evaluates them: from the cache, on
 * fake GPUs fed by injected values, over the last minute for counters, with
 * DCGM's limits, results and dcgmError_t codes.  The same script runs on an
 * embedded engine and through a hostengine.
 *
 * usage: test_health BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"
#include "hostengine.h"

#define PASS DCGM_HEALTH_RESULT_PASS
#define WARN DCGM_HEALTH_RESULT_WARN
#define FAIL DCGM_HEALTH_RESULT_FAIL
#define ALL ((dcgmHealthSystems_t)DCGM_HEALTH_WATCH_ALL)

/* the checks' responses: too large for the stack */
static dcgmHealthResponse_v5 hr_storage;
static dcgmHealthResponse_v5 *const hr = &hr_storage;

/* ---- helpers ------------------------------------------------------------------ */

static dcgmGpuGrp_t group_of(dcgmHandle_t h, const unsigned int *gpus, int n)
{
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "health", &g), DCGM_ST_OK);
    for (int i = 0; i < n; i++)
        CHECK_RC(p_dcgmGroupAddDevice(h, g, gpus[i]), DCGM_ST_OK);
    return g;
}

/* A fake GPU alone in a group, its systems set with dcgmHealthSet. */
static dcgmGpuGrp_t fake_group(dcgmHandle_t h, unsigned int systems, unsigned int *gpu)
{
    *gpu = new_fake_gpu(h);
    dcgmGpuGrp_t g = group_of(h, gpu, 1);
    CHECK_RC(p_dcgmHealthSet(h, g, (dcgmHealthSystems_t)systems), DCGM_ST_OK);
    return g;
}

/* Injects an INT64 value stamped offset_s seconds from now, as NVIDIA's
 * dcgm_field_injection_helpers.inject_field_value_i64 does. */
static void inject(dcgmHandle_t h, unsigned int gpu, unsigned short field, long long value,
                   double offset_s)
{
    dcgmInjectFieldValue_t v;
    injected_i64(&v, field, wall_us() + (int64_t)(offset_s * 1e6), value);
    CHECK_RC(p_dcgmInjectFieldValue(h, gpu, &v), DCGM_ST_OK);
}

static void inject_dbl(dcgmHandle_t h, unsigned int gpu, unsigned short field, double value,
                       double offset_s)
{
    dcgmInjectFieldValue_t v;
    injected_dbl(&v, field, wall_us() + (int64_t)(offset_s * 1e6), value);
    CHECK_RC(p_dcgmInjectFieldValue(h, gpu, &v), DCGM_ST_OK);
}

static void check(dcgmHandle_t h, dcgmGpuGrp_t g)
{
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g, (dcgmHealthResponse_t *)hr), DCGM_ST_OK);
}

/* The check finds exactly one incident, on the GPU, as described. */
#define EXPECT_ONE(h, g, gpu, sys, res, fr)                                                      \
    do {                                                                                       \
        check(h, g);                                                                           \
        const dcgmIncidentInfo_t *i0_ = &hr->incidents[0];                                     \
        CHECK(hr->incidentCount == 1 && hr->overallHealth == (res) && i0_->system == (sys) &&  \
                  i0_->health == (res) && i0_->error.code == (fr) &&                           \
                  i0_->entityInfo.entityGroupId == DCGM_FE_GPU &&                              \
                  i0_->entityInfo.entityId == (gpu) && i0_->error.msg[0] != '\0',              \
              "want one %s incident (system %x health %d code %d) on GPU %u; got %u, overall " \
              "%d, first: system %x health %d code %d GPU %u \"%s\"",                          \
              #fr, (unsigned)(sys), (int)(res), (int)(fr), (unsigned)(gpu), hr->incidentCount, \
              (int)hr->overallHealth, (unsigned)i0_->system, (int)i0_->health,                 \
              i0_->error.code, i0_->entityInfo.entityId, i0_->error.msg);                      \
    } while (0)

#define EXPECT_PASS(h, g, why)                                                                 \
    do {                                                                                       \
        check(h, g);                                                                           \
        CHECK(hr->incidentCount == 0 && hr->overallHealth == PASS,                             \
              "%s: want PASS, got %u incidents, overall %d, first code %d \"%s\"", why,        \
              hr->incidentCount, (int)hr->overallHealth, hr->incidents[0].error.code,          \
              hr->incidents[0].error.msg);                                                     \
    } while (0)

/* ---- the script: fake GPUs and injected values -------------------------------- */

enum {
    F_CC = 63, F_INFOROM_VALID = 84, F_POWER = 155, F_PCIE_REPLAY = 202, F_XID = 230,
    F_PCIE_GEN = 237, F_PCIE_WIDTH = 238, F_POWER_VIOLATION = 240, F_THERMAL_VIOLATION = 241,
    F_DBE_VOL = 311, F_RETIRED_SBE = 390, F_RETIRED_DBE = 391, F_RETIRED_PENDING = 392,
    F_ROW_REMAP_UNCORRECTABLE = 393, F_ROW_REMAP_FAILED = 395, F_NVLINK_CRC_FLIT = 409,
    F_NVLINK_RECOVERY = 439, F_NVLINK_EFFECTIVE_BER = 1217, F_FM_STATUS = 170,
    F_FABRIC_MASK = 174, F_UNREPAIRABLE = 1507, F_RECOVERY_ACTION = 1523
};

static void healthy_and_disabled(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmGpuGrp_t g = fake_group(h, ALL, &gpu);
    dcgmHealthSystems_t systems = 0;
    CHECK_RC(p_dcgmHealthGet(h, g, &systems), DCGM_ST_OK);
    CHECK(systems == ALL, "systems %x", (unsigned)systems);
    EXPECT_PASS(h, g, "a fake GPU with nothing injected");
    /* a double-bit error with only PCIe watched: nothing */
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_PCIE), DCGM_ST_OK);
    inject(h, gpu, F_DBE_VOL, 2, -50);
    EXPECT_PASS(h, g, "MEM not enabled");
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_MEM), DCGM_ST_OK);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_VOLATILE_DBE_DETECTED);
    /* no systems: no check at all */
    CHECK_RC(p_dcgmHealthSet(h, g, 0), DCGM_ST_OK);
    EXPECT_PASS(h, g, "no systems");
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthCheck(h, g, (dcgmHealthResponse_t *)hr), DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_MEM), DCGM_ST_NOT_CONFIGURED);
}

static void mem(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmGpuGrp_t g = fake_group(h, DCGM_HEALTH_WATCH_MEM, &gpu);
    EXPECT_PASS(h, g, "nothing injected");
    /* DcgmHealthWatch::MonitorMemVolatileDbes: any DBE in the last minute fails */
    inject(h, gpu, F_DBE_VOL, 2, -50);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_VOLATILE_DBE_DETECTED);
    inject(h, gpu, F_DBE_VOL, 0, -40);
    EXPECT_PASS(h, g, "the DBE count went back to 0");

    /* only the last minute counts */
    unsigned int old;
    dcgmGpuGrp_t g_old = fake_group(h, DCGM_HEALTH_WATCH_MEM, &old);
    inject(h, old, F_DBE_VOL, 5, -90);
    EXPECT_PASS(h, g_old, "a DBE 90 s ago");

    /* pending page retirement: a warning */
    inject(h, gpu, F_RETIRED_PENDING, 0, -50);
    inject(h, gpu, F_RETIRED_PENDING, 1, -40);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, WARN, DCGM_FR_PENDING_PAGE_RETIREMENTS);
    inject(h, gpu, F_RETIRED_PENDING, 0, -35);
    EXPECT_PASS(h, g, "no page pending");

    /* a failed row remap */
    inject(h, gpu, F_ROW_REMAP_FAILED, 1, 0);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_ROW_REMAP_FAILURE);
    inject(h, gpu, F_ROW_REMAP_FAILED, 0, 1);
    EXPECT_PASS(h, g, "row remap failure cleared");

    /* unrepairable memory */
    inject(h, gpu, F_UNREPAIRABLE, 1, -45);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_FAULTY_MEMORY);
    inject(h, gpu, F_UNREPAIRABLE, 0, -40);
    EXPECT_PASS(h, g, "unrepairable flag cleared");

    /* uncorrectable row remaps: only from Ampere on, as the cached compute capability says */
    inject(h, gpu, F_ROW_REMAP_UNCORRECTABLE, 600, -10);
    EXPECT_PASS(h, g, "no compute capability cached");
    inject(h, gpu, F_CC, 7 << 16 | 5, -10);
    EXPECT_PASS(h, g, "Turing");
    inject(h, gpu, F_CC, 8 << 16, -5);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, WARN, DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT);
    inject(h, gpu, F_ROW_REMAP_UNCORRECTABLE, 511, -4);
    EXPECT_PASS(h, g, "511 uncorrectable row remaps");
}

static void retired_pages(dcgmHandle_t h)
{
    unsigned int gpu = new_fake_gpu(h);
    dcgmGpuGrp_t g = group_of(h, &gpu, 1);
    /* keep more than a week, so that the week-old count stays in the cache */
    dcgmHealthSetParams_v2 params = { dcgmHealthSetParams_version2, g, DCGM_HEALTH_WATCH_MEM,
                                      30000000, 8 * 86400.0 };
    CHECK_RC(p_dcgmHealthSet_v2(h, &params), DCGM_ST_OK);
    /* 40 + 30 retired pages reach DCGM's limit of 63 */
    inject(h, gpu, F_RETIRED_DBE, 40, -30);
    inject(h, gpu, F_RETIRED_SBE, 30, -30);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_RETIRED_PAGES_LIMIT);
    /* 10 + 49 do not, and 10 for DBEs is under the soft limit of 15 */
    inject(h, gpu, F_RETIRED_DBE, 10, -29);
    inject(h, gpu, F_RETIRED_SBE, 49, -29);
    EXPECT_PASS(h, g, "59 retired pages");
    /* 16 for DBEs, none of them a week ago: more than one in a week fails */
    inject(h, gpu, F_RETIRED_SBE, 0, -28);
    inject(h, gpu, F_RETIRED_DBE, 16, -28);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_RETIRED_PAGES_DBE_LIMIT);
    /* 15 already a week and a minute ago: one more this week passes, two more fail */
    inject(h, gpu, F_RETIRED_DBE, 15, -(604800.0 + 60));
    EXPECT_PASS(h, g, "one DBE page retired this week");
    inject(h, gpu, F_RETIRED_DBE, 17, -27);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_RETIRED_PAGES_DBE_LIMIT);
}

static void pcie(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmGpuGrp_t g = fake_group(h, DCGM_HEALTH_WATCH_PCIE, &gpu);
    /* without the link's generation and width there is no limit to compare with */
    inject(h, gpu, F_PCIE_REPLAY, 0, -50);
    inject(h, gpu, F_PCIE_REPLAY, 1000, 10);
    EXPECT_PASS(h, g, "no link data");
    /* gen 4 x16: ceil(16e9 b/s * 1e-12 * 60 s * 16 lanes) = 16 replays a minute */
    unsigned int gpu2;
    dcgmGpuGrp_t g2 = fake_group(h, DCGM_HEALTH_WATCH_PCIE, &gpu2);
    inject(h, gpu2, F_PCIE_GEN, 4, 0);
    inject(h, gpu2, F_PCIE_WIDTH, 16, 0);
    inject(h, gpu2, F_PCIE_REPLAY, 0, -50);
    EXPECT_PASS(h, g2, "no replays");
    inject(h, gpu2, F_PCIE_REPLAY, 16, 100); /* DCGM's test stamps it in the future */
    EXPECT_PASS(h, g2, "16 replays in a minute");
    inject(h, gpu2, F_PCIE_REPLAY, 17, 101);
    EXPECT_ONE(h, g2, gpu2, DCGM_HEALTH_WATCH_PCIE, WARN, DCGM_FR_PCI_REPLAY_RATE);
}

static void thermal_and_power(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmGpuGrp_t g = fake_group(h, DCGM_HEALTH_WATCH_THERMAL, &gpu);
    inject(h, gpu, F_THERMAL_VIOLATION, 0, -50);
    EXPECT_PASS(h, g, "no thermal violation");
    inject(h, gpu, F_THERMAL_VIOLATION, 1000, 10);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_THERMAL, WARN, DCGM_FR_CLOCKS_EVENT_THERMAL);
    /* a power violation is not THERMAL's business */
    inject(h, gpu, F_POWER_VIOLATION, 0, -50);
    inject(h, gpu, F_POWER_VIOLATION, 1000, 10);
    check(h, g);
    CHECK(hr->incidentCount == 1, "thermal only: %u incidents", hr->incidentCount);

    unsigned int gpu2;
    dcgmGpuGrp_t g2 = fake_group(h, DCGM_HEALTH_WATCH_POWER, &gpu2);
    inject(h, gpu2, F_POWER_VIOLATION, 0, -50);
    EXPECT_PASS(h, g2, "no power violation");
    inject(h, gpu2, F_POWER_VIOLATION, 1000, 10);
    EXPECT_ONE(h, g2, gpu2, DCGM_HEALTH_WATCH_POWER, WARN, DCGM_FR_CLOCKS_EVENT_POWER);
    /* a power reading that is blank (not NOT_SUPPORTED) warns */
    unsigned int gpu3;
    dcgmGpuGrp_t g3 = fake_group(h, DCGM_HEALTH_WATCH_POWER, &gpu3);
    inject_dbl(h, gpu3, F_POWER, DCGM_FP64_NOT_SUPPORTED, 40);
    EXPECT_PASS(h, g3, "power not supported");
    inject_dbl(h, gpu3, F_POWER, DCGM_FP64_BLANK, 50);
    EXPECT_ONE(h, g3, gpu3, DCGM_HEALTH_WATCH_POWER, WARN, DCGM_FR_POWER_UNREADABLE);
}

static void nvlink(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmGpuGrp_t g = fake_group(h, DCGM_HEALTH_WATCH_NVLINK, &gpu);
    EXPECT_PASS(h, g, "nothing injected");
    /* CRC errors: a warning under 100 a second, a failure from there */
    inject(h, gpu, F_NVLINK_CRC_FLIT, 0, -50);
    inject(h, gpu, F_NVLINK_CRC_FLIT, 100, 10);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_NVLINK, WARN, DCGM_FR_NVLINK_ERROR_THRESHOLD);
    inject(h, gpu, F_NVLINK_CRC_FLIT, 1000000, 11);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_NVLINK, FAIL, DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD);
    /* one recovery error fails */
    unsigned int gpu2;
    dcgmGpuGrp_t g2 = fake_group(h, DCGM_HEALTH_WATCH_NVLINK, &gpu2);
    inject(h, gpu2, F_NVLINK_RECOVERY, 0, -50);
    inject(h, gpu2, F_NVLINK_RECOVERY, 1, -40);
    EXPECT_ONE(h, g2, gpu2, DCGM_HEALTH_WATCH_NVLINK, FAIL, DCGM_FR_NVLINK_ERROR_CRITICAL);
    /* effective BER: 10e-13 passes, 11e-13 fails (mantissa << 8 | exponent) */
    unsigned int gpu3;
    dcgmGpuGrp_t g3 = fake_group(h, DCGM_HEALTH_WATCH_NVLINK, &gpu3);
    inject(h, gpu3, F_NVLINK_EFFECTIVE_BER, 4095, -50);
    inject(h, gpu3, F_NVLINK_EFFECTIVE_BER, 10 << 8 | 13, -20);
    EXPECT_PASS(h, g3, "BER 1e-12");
    inject(h, gpu3, F_NVLINK_EFFECTIVE_BER, 11 << 8 | 13, -19);
    EXPECT_ONE(h, g3, gpu3, DCGM_HEALTH_WATCH_NVLINK, FAIL, DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD);
    /* the fabric: health mask sub-fields (route unhealthy: bits 4-5 == 1) and the
     * fabric manager's state (2: in progress, a warning; 3: success) */
    unsigned int gpu4;
    dcgmGpuGrp_t g4 = fake_group(h, DCGM_HEALTH_WATCH_NVLINK, &gpu4);
    inject(h, gpu4, F_FABRIC_MASK, 2 << 4 | 2 << 0 | 2 << 2 | 2 << 6 | 1 << 8, -10);
    EXPECT_PASS(h, g4, "healthy fabric");
    inject(h, gpu4, F_FABRIC_MASK, 1 << 4 | 2 << 0, -9);
    EXPECT_ONE(h, g4, gpu4, DCGM_HEALTH_WATCH_NVLINK, FAIL, DCGM_FR_FIELD_VIOLATION);
    CHECK(strstr(hr->incidents[0].error.msg, "Route Unhealthy") != NULL, "message \"%s\"",
          hr->incidents[0].error.msg);
    inject(h, gpu4, F_FABRIC_MASK, 0, -8);
    inject(h, gpu4, F_FM_STATUS, 3, -8);
    EXPECT_PASS(h, g4, "fabric manager started");
    inject(h, gpu4, F_FM_STATUS, 2, -7);
    EXPECT_ONE(h, g4, gpu4, DCGM_HEALTH_WATCH_NVLINK, WARN, DCGM_FR_FABRIC_PROBE_STATE);
}

static void inforom_and_driver(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmGpuGrp_t g = fake_group(h, DCGM_HEALTH_WATCH_INFOROM | DCGM_HEALTH_WATCH_DRIVER, &gpu);
    inject(h, gpu, F_INFOROM_VALID, 1, -5);
    EXPECT_PASS(h, g, "valid InfoROM");
    inject(h, gpu, F_INFOROM_VALID, 0, -4);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_INFOROM, WARN, DCGM_FR_CORRUPT_INFOROM);
    inject(h, gpu, F_INFOROM_VALID, 1, -3);
    /* the driver's recovery action */
    inject(h, gpu, F_RECOVERY_ACTION, 0, -3);
    EXPECT_PASS(h, g, "no recovery action");
    inject(h, gpu, F_RECOVERY_ACTION, 1, -2);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_DRIVER, FAIL, DCGM_FR_GPU_RECOVERY_RESET);
    CHECK(strstr(hr->incidents[0].error.msg, "reset") && strstr(hr->incidents[0].error.msg, "1"),
          "message \"%s\"", hr->incidents[0].error.msg);
    inject(h, gpu, F_RECOVERY_ACTION, 3, -1);
    EXPECT_ONE(h, g, gpu, DCGM_HEALTH_WATCH_DRIVER, WARN, DCGM_FR_GPU_RECOVERY_DRAIN_P2P);
    inject(h, gpu, F_RECOVERY_ACTION, 9, 0);
    EXPECT_PASS(h, g, "an action DCGM does not know");
}

static void xids(dcgmHandle_t h)
{
    /* the devastating XIDs: under ALL whatever the systems, and in every later check */
    unsigned int gpu;
    dcgmGpuGrp_t g = fake_group(h, DCGM_HEALTH_WATCH_MEM, &gpu);
    inject(h, gpu, F_XID, 13, 0); /* not one DCGM's health module knows */
    EXPECT_PASS(h, g, "XID 13");
    inject(h, gpu, F_XID, 95, 0);
    EXPECT_ONE(h, g, gpu, ALL, FAIL, DCGM_FR_UNCONTAINED_ERROR);
    EXPECT_ONE(h, g, gpu, ALL, FAIL, DCGM_FR_UNCONTAINED_ERROR);
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_PCIE), DCGM_ST_OK);
    EXPECT_ONE(h, g, gpu, ALL, FAIL, DCGM_FR_UNCONTAINED_ERROR);

    unsigned int gpu2;
    dcgmGpuGrp_t g2 = fake_group(h, DCGM_HEALTH_WATCH_ALL, &gpu2);
    inject(h, gpu2, F_XID, 94, 0);
    EXPECT_ONE(h, g2, gpu2, ALL, WARN, DCGM_FR_CONTAINED_ERROR);

    /* a memory XID under MEM, while MEM is enabled */
    unsigned int gpu3;
    dcgmGpuGrp_t g3 = fake_group(h, DCGM_HEALTH_WATCH_MEM, &gpu3);
    inject(h, gpu3, F_XID, 64, 0);
    EXPECT_ONE(h, g3, gpu3, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_ROW_REMAP_FAILURE);
    CHECK(strstr(hr->incidents[0].error.msg, "XID 64") != NULL, "message \"%s\"",
          hr->incidents[0].error.msg);

    /* XID 79 (fallen off the bus) on a GPU whose XIDs the health module does not watch
     * (no MEM or INFOROM yet): DCGM never hears of it */
    unsigned int gpu4;
    dcgmGpuGrp_t g4 = fake_group(h, DCGM_HEALTH_WATCH_PCIE, &gpu4);
    inject(h, gpu4, F_XID, 79, 0);
    CHECK_RC(p_dcgmHealthSet(h, g4, DCGM_HEALTH_WATCH_MEM), DCGM_ST_OK);
    EXPECT_PASS(h, g4, "XID before the health module watched XIDs");
    inject(h, gpu4, F_XID, 79, 1);
    EXPECT_ONE(h, g4, gpu4, ALL, FAIL, DCGM_FR_FALLEN_OFF_BUS);
    inject(h, gpu4, F_XID, 48, 2);
    check(h, g4);
    CHECK(hr->incidentCount == 2 && hr->incidents[0].error.code == DCGM_FR_XID_ERROR &&
              strstr(hr->incidents[0].error.msg, "XID 48") != NULL &&
              hr->incidents[1].error.code == DCGM_FR_FALLEN_OFF_BUS,
          "XIDs 48 and 79: %u incidents, codes %d %d", hr->incidentCount,
          hr->incidents[0].error.code, hr->incidents[1].error.code);
}

/* several systems and several GPUs in one check */
static void several(dcgmHandle_t h)
{
    unsigned int gpus[2] = { new_fake_gpu(h), new_fake_gpu(h) };
    dcgmGpuGrp_t g = group_of(h, gpus, 2);
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_PCIE | DCGM_HEALTH_WATCH_MEM), DCGM_ST_OK);
    inject(h, gpus[0], F_PCIE_GEN, 4, 0);
    inject(h, gpus[0], F_PCIE_WIDTH, 16, 0);
    inject(h, gpus[0], F_PCIE_REPLAY, 0, -50);
    inject(h, gpus[0], F_DBE_VOL, 4, 100);
    inject(h, gpus[0], F_PCIE_REPLAY, 100, 100);
    inject(h, gpus[1], F_RETIRED_PENDING, 1, -1);
    check(h, g);
    /* DCGM's order: per GPU, PCIE before MEM */
    CHECK(hr->incidentCount == 3 && hr->overallHealth == FAIL &&
              hr->incidents[0].system == DCGM_HEALTH_WATCH_PCIE &&
              hr->incidents[0].error.code == DCGM_FR_PCI_REPLAY_RATE &&
              hr->incidents[0].entityInfo.entityId == gpus[0] &&
              hr->incidents[1].error.code == DCGM_FR_VOLATILE_DBE_DETECTED &&
              hr->incidents[1].entityInfo.entityId == gpus[0] &&
              hr->incidents[2].error.code == DCGM_FR_PENDING_PAGE_RETIREMENTS &&
              hr->incidents[2].health == WARN && hr->incidents[2].entityInfo.entityId == gpus[1],
          "%u incidents, overall %d, codes %d %d %d", hr->incidentCount, (int)hr->overallHealth,
          hr->incidents[0].error.code, hr->incidents[1].error.code, hr->incidents[2].error.code);
}

static const script_step script[] = {
    { "healthy_and_disabled", healthy_and_disabled },
    { "mem", mem },
    { "retired_pages", retired_pages },
    { "pcie", pcie },
    { "thermal_and_power", thermal_and_power },
    { "nvlink", nvlink },
    { "inforom_and_driver", inforom_and_driver },
    { "xids", xids },
    { "several", several },
};

static void run_script(dcgmHandle_t h, const char *tag)
{
    run_steps(script, sizeof script / sizeof script[0], h, tag);
}

/* ---- embedded ----------------------------------------------------------------------------- */

static void start_embedded(const char *scenario, dcgmOperationMode_t mode)
{
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(mode, &h), DCGM_ST_OK);
}

static void test_embedded(void)
{
    start_embedded("2", DCGM_OPERATION_MODE_AUTO);
    run_script(EMB, "embedded");
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    start_embedded("2", DCGM_OPERATION_MODE_MANUAL);
    run_script(EMB, "embedded, manual");
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

/* ---- watches: intervals, the health watcher's own, a real GPU ------------------------------ */

static int samples_of(dcgmHandle_t h, unsigned int gpu, unsigned short field)
{
    dcgmFieldValue_v1 *v = calloc(200, sizeof *v);
    int n = 200;
    int rc = p_dcgmGetMultipleValuesForField(h, (int)gpu, field, &n, 0, 0, DCGM_ORDER_ASCENDING, v);
    int real = 0;
    for (int i = 0; rc == DCGM_ST_OK && i < n; i++)
        real += v[i].status == DCGM_ST_OK;
    free(v);
    return rc == DCGM_ST_OK ? real : -1;
}

static void test_watches(void)
{
    start_embedded("2", DCGM_OPERATION_MODE_AUTO);
    /* dcgmHealthSet samples every 30 s: one sample at once, then nothing for a while */
    unsigned int gpu0 = 0, gpu1 = 1;
    dcgmGpuGrp_t g0 = group_of(EMB, &gpu0, 1);
    CHECK_RC(p_dcgmHealthSet(EMB, g0, DCGM_HEALTH_WATCH_PCIE), DCGM_ST_OK);
    /* dcgmHealthSet_v2 at 100 ms */
    dcgmGpuGrp_t g1 = group_of(EMB, &gpu1, 1);
    dcgmHealthSetParams_v2 params = { dcgmHealthSetParams_version2, g1, DCGM_HEALTH_WATCH_PCIE,
                                      100000, 60.0 };
    CHECK_RC(p_dcgmHealthSet_v2(EMB, &params), DCGM_ST_OK);
    params.version = 1;
    CHECK_RC(p_dcgmHealthSet_v2(EMB, &params), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmHealthSet_v2(EMB, NULL), DCGM_ST_BADPARAM);
    /* a client's own 100 ms watch of the thermal violation counter is not slowed down by
     * the health module's 30 s one */
    CHECK_RC(p_dcgmWatchFieldValue(EMB, 0, F_THERMAL_VIOLATION, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(EMB, g0, DCGM_HEALTH_WATCH_PCIE | DCGM_HEALTH_WATCH_THERMAL),
             DCGM_ST_OK);
    sleep_ms(650);
    int legacy = samples_of(EMB, 0, F_PCIE_REPLAY), fast = samples_of(EMB, 1, F_PCIE_REPLAY);
    int client = samples_of(EMB, 0, F_THERMAL_VIOLATION);
    CHECK(legacy == 1, "dcgmHealthSet: %d samples of the replay counter in 0.65 s", legacy);
    CHECK(fast >= 4, "dcgmHealthSet_v2 at 100 ms: %d samples in 0.65 s", fast);
    CHECK(client >= 4, "the client's 100 ms watch: %d samples in 0.65 s", client);
    /* simulated training GPUs are healthy */
    unsigned int both[2] = { 0, 1 };
    dcgmGpuGrp_t g = group_of(EMB, both, 2);
    CHECK_RC(p_dcgmHealthSet(EMB, g, ALL), DCGM_ST_OK);
    EXPECT_PASS(EMB, g, "two simulated H100s");
    /* an injected DBE on a real GPU counts like a sampled one */
    inject(EMB, 1, F_DBE_VOL, 1, 1);
    EXPECT_ONE(EMB, g, 1, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_VOLATILE_DBE_DETECTED);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

/* XIDs of the simulated node's scenario reach the health checks through the cache. */
static void test_scenario_xids(void)
{
    char *path = write_scenario_as("test_health", "xid",
                                   "seed = 3\n[[gpu]]\nmodel = \"H100\"\ncount = 2\n"
                                   "workload = \"training\"\n"
                                   "[[event]]\nat = 0.6\ngpu = 1\nkind = \"xid\"\nxid = 64\n"
                                   "[[event]]\nat = 0.7\ngpu = 0\nkind = \"xid\"\nxid = 13\n");
    start_embedded(path, DCGM_OPERATION_MODE_AUTO);
    long long t0 = 0;
    CHECK_RC(p_dcgmSimGetStartTime(&t0), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(EMB, DCGM_GROUP_ALL_GPUS, DCGM_HEALTH_WATCH_MEM), DCGM_ST_OK);
    int64_t watched = wall_us() - t0;
    while (wall_us() - t0 < 900000)
        sleep_ms(50);
    if (watched < 500000)
        EXPECT_ONE(EMB, DCGM_GROUP_ALL_GPUS, 1, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_ROW_REMAP_FAILURE);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unlink(path);
}

/* The checks judge the cache, whatever fills it: with the engine reading the
 * (simulated) driver through NVML, an XID arrives through NVML's event set and
 * fails the memory system as it does from the models. */
static char nvml_path[4096];

static void remember_nvml_library(const char *build_dir)
{
    nvml_library_in(build_dir, nvml_path, sizeof nvml_path);
}

static void test_nvml_source(void)
{
    char *path = write_scenario_as("test_health", "nvml_xid",
                                   "seed = 3\n[[gpu]]\nmodel = \"H100\"\ncount = 2\n"
                                   "[[event]]\nat = 1.0\ngpu = 1\nkind = \"xid\"\nxid = 64\n");
    setenv("DCGM_ENGINE_SOURCE", "nvml", 1);
    setenv("DCGM_ENGINE_NVML_LIB", nvml_path, 1);
    start_embedded(path, DCGM_OPERATION_MODE_AUTO);
    CHECK_RC(p_dcgmHealthSet(EMB, DCGM_GROUP_ALL_GPUS, DCGM_HEALTH_WATCH_MEM), DCGM_ST_OK);
    check(EMB, DCGM_GROUP_ALL_GPUS);
    CHECK(hr->overallHealth == DCGM_HEALTH_RESULT_PASS && hr->incidentCount == 0,
          "NVML source before the XID: overall %d, %u incidents", (int)hr->overallHealth,
          hr->incidentCount);
    /* the XID comes 1 s after the simulated driver started; its event within a pass or two */
    int64_t deadline = wall_us() + 5000000;
    do {
        sleep_ms(100);
        check(EMB, DCGM_GROUP_ALL_GPUS);
    } while (hr->incidentCount == 0 && wall_us() < deadline);
    EXPECT_ONE(EMB, DCGM_GROUP_ALL_GPUS, 1, DCGM_HEALTH_WATCH_MEM, FAIL, DCGM_FR_ROW_REMAP_FAILURE);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unsetenv("DCGM_ENGINE_SOURCE");
    unsetenv("DCGM_ENGINE_NVML_LIB");
    unlink(path);
}

/* ---- through a hostengine ------------------------------------------------------------------ */

static void test_hostengine(void)
{
    hostengine he;
    if (!hostengine_start(&he, "2", NULL))
        return;
    dcgmHandle_t h = hostengine_connect(he.address);
    if (h) {
        run_script(h, "hostengine");
        /* dcgmHealthSet_v2's interval travels: 100 ms, not 30 s */
        unsigned int gpu = 0;
        dcgmGpuGrp_t g = group_of(h, &gpu, 1);
        dcgmHealthSetParams_v2 hs = { dcgmHealthSetParams_version2, g, DCGM_HEALTH_WATCH_PCIE,
                                      100000, 60.0 };
        CHECK_RC(p_dcgmHealthSet_v2(h, &hs), DCGM_ST_OK);
        sleep_ms(650);
        int n = samples_of(h, 0, F_PCIE_REPLAY);
        CHECK(n >= 4, "remote dcgmHealthSet_v2 at 100 ms: %d samples", n);
        CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    }
    /* the connection's health watches went with it: a new client finds the counter unwatched */
    h = hostengine_connect(he.address);
    if (h) {
        dcgmFieldValue_v1 v;
        unsigned short f = F_PCIE_REPLAY;
        /* the hostengine drops a closed connection's watches when it reads the close, which can come
           after the new client's first request (seen under valgrind on a loaded machine): wait up to 5 s */
        for (int tries = 0; tries < 50; tries++) {
            CHECK_RC(p_dcgmGetLatestValuesForFields(h, 0, &f, 1, &v), DCGM_ST_OK);
            if (v.status == DCGM_ST_NOT_WATCHED)
                break;
            sleep_ms(100);
        }
        CHECK(v.status == DCGM_ST_NOT_WATCHED, "after disconnect: status %d", v.status);
        CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    }
    hostengine_stop(&he);
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "embedded", test_embedded },
        { "watches", test_watches },
        { "scenario_xids", test_scenario_xids },
        { "nvml_source", test_nvml_source },
        { "hostengine", test_hostengine },
    };
    const check_program program = { .only_env = "TEST_HEALTH_ONLY",
                                    .prepare = remember_nvml_library };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
