/*
 * test_config.c -- the config manager: dcgmConfigSet / dcgmConfigGet (target
 * and current state) / dcgmConfigEnforce, what a set changes in the GPU's
 * field values, the validation errors, and the errors each call lists in the
 * caller's dcgmStatus_t; and dcgmWatchPidFields / dcgmWatchJobFields, which
 * NVIDIA's sample (sdk_samples/scripts/dcgm_example.py) calls after reading
 * the configuration.  The same script runs on an embedded engine and
 * through a hostengine, on three simulated H100s (power limit 200..700 W).
 *
 * DCGM answers config calls for root only; run as another user the script
 * checks that answer and stops there.
 *
 * usage: test_config BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"
#include "hostengine.h"

#define BLANK DCGM_INT32_BLANK
#define N_GPUS 3

#define SW_POWER_CAP 0x4 /* DCGM_CLOCKS_EVENT_REASON_SW_POWER_CAP */

enum { F_EVENT_REASONS = 112, F_POWER_USAGE = 155, F_POWER_INSTANT = 157, F_COMPUTE_MODE = 65, F_SYNC_BOOST = 91, F_APP_SM = 110, F_APP_MEM = 111,
       F_POWER = 160, F_PROFILES = 165, F_ECC = 300,
       F_ECC_PENDING = 301 };

/* a request that changes nothing */
static dcgmConfig_v2 blank_request(void)
{
    dcgmConfig_v2 c;
    memset(&c, 0, sizeof c);
    c.version = dcgmConfig_version2;
    c.eccMode = c.computeMode = c.perfState.syncBoost = BLANK;
    c.perfState.targetClocks.memClock = c.perfState.targetClocks.smClock = BLANK;
    c.powerLimit.type = DCGM_CONFIG_POWER_CAP_INDIVIDUAL;
    c.powerLimit.val = BLANK;
    for (int i = 0; i < DCGM_POWER_PROFILE_ARRAY_SIZE; i++)
        c.workloadPowerProfiles[i] = BLANK;
    return c;
}

/* the errors in a status list, emptied */
typedef struct errors {
    unsigned int n;
    dcgmErrorInfo_t e[16];
} errors;

static errors pop_all(dcgmStatus_t st)
{
    errors out;
    memset(&out, 0, sizeof out);
    unsigned int count = 99;
    CHECK_RC(p_dcgmStatusGetCount(st, &count), DCGM_ST_OK);
    dcgmErrorInfo_t e;
    while (p_dcgmStatusPopError(st, &e) == DCGM_ST_OK)
        if (out.n < 16)
            out.e[out.n++] = e;
    CHECK(count == out.n, "status count %u, popped %u", count, out.n);
    return out;
}

static int has_error(const errors *er, unsigned int gpu, short field, int status)
{
    for (unsigned int i = 0; i < er->n; i++)
        if (er->e[i].gpuId == gpu && er->e[i].fieldId == field && er->e[i].status == status)
            return 1;
    return 0;
}

static int get(dcgmHandle_t h, dcgmGpuGrp_t g, int type, int count, dcgmConfig_v2 *out,
               dcgmStatus_t st)
{
    for (int i = 0; i < count; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].version = dcgmConfig_version2;
    }
    return p_dcgmConfigGet(h, g, type, count, out, st);
}

static dcgmGpuGrp_t group_of(dcgmHandle_t h, const char *name, const unsigned int *gpus, int n)
{
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, (char *)name, &g), DCGM_ST_OK);
    for (int i = 0; i < n; i++)
        CHECK_RC(p_dcgmGroupAddDevice(h, g, gpus[i]), DCGM_ST_OK);
    return g;
}

static double latest_double(dcgmHandle_t h, unsigned int gpu, unsigned short field)
{
    dcgmFieldValue_v1 v;
    memset(&v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, (int)gpu, &field, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK, "field %u status %d", field, v.status);
    return v.fieldType == DCGM_FT_DOUBLE ? v.value.dbl : (double)v.value.i64;
}

static void check_not_root(dcgmHandle_t h, const char *where, dcgmStatus_t st)
{
    dcgmConfig_v2 req = blank_request();
    CHECK_RC(p_dcgmConfigSet(h, DCGM_GROUP_ALL_GPUS, &req, st), DCGM_ST_REQUIRES_ROOT);
    errors er = pop_all(st);
    CHECK(er.n == N_GPUS && has_error(&er, BLANK, 0, DCGM_ST_REQUIRES_ROOT),
          "%s: %u errors", where, er.n);
    dcgmConfig_v2 got[N_GPUS];
    CHECK_RC(get(h, DCGM_GROUP_ALL_GPUS, DCGM_CONFIG_CURRENT_STATE, N_GPUS, got, st),
             DCGM_ST_REQUIRES_ROOT);
    pop_all(st);
    printf("  %s: not root, config calls refused as DCGM refuses them; the rest needs root\n",
           where);
}

static void run_script(dcgmHandle_t h, const char *where)
{
    dcgmStatus_t st = 0;
    CHECK_RC(p_dcgmStatusCreate(&st), DCGM_ST_OK);
    if (geteuid() != 0) {
        check_not_root(h, where, st);
        CHECK_RC(p_dcgmStatusDestroy(st), DCGM_ST_OK);
        return;
    }
    const unsigned int one[] = { 0 }, two[] = { 0, 1 }, third[] = { 2 };
    dcgmGpuGrp_t g1 = group_of(h, "cfg-one", one, 1);
    dcgmGpuGrp_t g2 = group_of(h, "cfg-two", two, 2);
    dcgmGpuGrp_t g3 = group_of(h, "cfg-third", third, 1);
    dcgmGpuGrp_t empty = group_of(h, "cfg-empty", NULL, 0);
    dcgmConfig_v2 got[N_GPUS];
    dcgmDeviceAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    attr.version = dcgmDeviceAttributes_version3;
    CHECK_RC(p_dcgmGetDeviceAttributes(h, 0, &attr), DCGM_ST_OK);
    unsigned int pmin = attr.powerLimits.minPowerLimit, pmax = attr.powerLimits.maxPowerLimit;
    CHECK(pmin == 200 && pmax == 700 && attr.powerLimits.curPowerLimit == 700,
          "%s: H100 limits %u..%u, now %u", where, pmin, pmax, attr.powerLimits.curPowerLimit);
    unsigned int mid = (pmin + pmax) / 2;

    /* the target of a GPU nobody configured: all blank */
    CHECK_RC(get(h, g1, DCGM_CONFIG_TARGET_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].gpuId == 0 && got[0].eccMode == BLANK && got[0].computeMode == BLANK &&
              got[0].powerLimit.val == BLANK &&
              got[0].powerLimit.type == DCGM_CONFIG_POWER_CAP_INDIVIDUAL &&
              got[0].perfState.syncBoost == BLANK &&
              got[0].perfState.targetClocks.memClock == BLANK &&
              got[0].perfState.targetClocks.smClock == BLANK &&
              got[0].workloadPowerProfiles[0] == BLANK,
          "%s: blank target %u %u %u", where, got[0].eccMode, got[0].computeMode,
          got[0].powerLimit.val);
    CHECK(pop_all(st).n == 0, "%s: target get listed errors", where);

    /* the current state: what the GPU reads */
    CHECK_RC(get(h, g2, DCGM_CONFIG_CURRENT_STATE, 2, got, st), DCGM_ST_OK);
    for (int i = 0; i < 2; i++)
        CHECK(got[i].gpuId == (unsigned int)i && got[i].eccMode == 1 && got[i].computeMode == 0 &&
                  got[i].powerLimit.val == 700 &&
                  got[i].powerLimit.type == DCGM_CONFIG_POWER_CAP_INDIVIDUAL &&
                  got[i].perfState.syncBoost == DCGM_INT32_NOT_SUPPORTED &&
                  got[i].perfState.targetClocks.memClock == 2619 &&
                  got[i].perfState.targetClocks.smClock == 1980 &&
                  got[i].workloadPowerProfiles[0] == BLANK,
              "%s: current of GPU %d: ecc %u compute %u power %u clocks %u/%u", where, i,
              got[i].eccMode, got[i].computeMode, got[i].powerLimit.val,
              got[i].perfState.targetClocks.memClock, got[i].perfState.targetClocks.smClock);
    CHECK(pop_all(st).n == 0, "%s: current get listed errors", where);

    /* a power limit and a compute mode on one GPU: target, current, fields */
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, F_POWER, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, F_ECC_PENDING, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK(latest_double(h, 0, F_POWER) == 700.0, "%s: limit before", where);
    dcgmConfig_v2 req = blank_request();
    req.powerLimit.val = mid;
    req.computeMode = DCGM_CONFIG_COMPUTEMODE_PROHIBITED;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_OK);
    CHECK(pop_all(st).n == 0, "%s: set listed errors", where);
    CHECK_RC(get(h, g1, DCGM_CONFIG_TARGET_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].powerLimit.val == mid && got[0].computeMode == 1 && got[0].eccMode == BLANK,
          "%s: target after set: power %u compute %u", where, got[0].powerLimit.val,
          got[0].computeMode);
    CHECK_RC(get(h, g1, DCGM_CONFIG_CURRENT_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].powerLimit.val == mid && got[0].computeMode == 1 && got[0].eccMode == 1,
          "%s: current after set: power %u compute %u", where, got[0].powerLimit.val,
          got[0].computeMode);
    /* the watched field has the new limit at once, and keeps it */
    CHECK(latest_double(h, 0, F_POWER) == (double)mid, "%s: watched limit after set", where);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK(latest_double(h, 0, F_POWER) == (double)mid, "%s: watched limit later", where);
    CHECK_RC(p_dcgmGetDeviceAttributes(h, 0, &attr), DCGM_ST_OK);
    CHECK(attr.powerLimits.curPowerLimit == mid && attr.powerLimits.enforcedPowerLimit == mid &&
              attr.powerLimits.maxPowerLimit == 700,
          "%s: attributes after set: %u %u", where, attr.powerLimits.curPowerLimit,
          attr.powerLimits.enforcedPowerLimit);
    CHECK_RC(p_dcgmGetDeviceAttributes(h, 1, &attr), DCGM_ST_OK);
    CHECK(attr.powerLimits.curPowerLimit == 700, "%s: GPU 1 untouched", where);

    /* out of the GPU's range: refused, listed, the target keeps the last good value */
    req = blank_request();
    req.powerLimit.val = pmax + 1;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_BADPARAM);
    errors er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, 0, F_POWER, DCGM_ST_BADPARAM), "%s: %u errors", where,
          er.n);
    req.powerLimit.val = pmin - 1;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_BADPARAM);
    pop_all(st);
    CHECK_RC(get(h, g1, DCGM_CONFIG_TARGET_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].powerLimit.val == mid, "%s: target after refusal %u", where,
          got[0].powerLimit.val);
    CHECK(latest_double(h, 0, F_POWER) == (double)mid, "%s: limit after refusal", where);

    /* a compute mode DCGM does not know, clocks above the GPU's, a profile
     * the model lacks: each listed with its field */
    req = blank_request();
    req.computeMode = 7;
    req.perfState.targetClocks.memClock = 99999;
    req.perfState.targetClocks.smClock = 1000;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_BADPARAM);
    er = pop_all(st);
    CHECK(er.n == 3 && has_error(&er, 0, F_COMPUTE_MODE, DCGM_ST_BADPARAM) &&
              has_error(&er, 0, F_APP_SM, DCGM_ST_BADPARAM) &&
              has_error(&er, 0, F_APP_MEM, DCGM_ST_BADPARAM),
          "%s: %u errors for compute mode and clocks", where, er.n);
    req = blank_request();
    memset(req.workloadPowerProfiles, 0, sizeof req.workloadPowerProfiles);
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_NOT_SUPPORTED);
    er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, 0, F_PROFILES, DCGM_ST_NOT_SUPPORTED), "%s: profiles",
          where);
    /* mixed failures: GENERIC_ERROR, every one listed */
    req = blank_request();
    req.computeMode = 7;
    memset(req.workloadPowerProfiles, 0, sizeof req.workloadPowerProfiles);
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_GENERIC_ERROR);
    CHECK(pop_all(st).n == 2, "%s: mixed errors", where);

    /* application clocks within the GPU's, then reset */
    req = blank_request();
    req.perfState.targetClocks.memClock = 2619;
    req.perfState.targetClocks.smClock = 1500;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_OK);
    CHECK_RC(get(h, g1, DCGM_CONFIG_CURRENT_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].perfState.targetClocks.smClock == 1500, "%s: clocks set: %u", where,
          got[0].perfState.targetClocks.smClock);
    req.perfState.targetClocks.memClock = req.perfState.targetClocks.smClock = 0;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_OK);
    CHECK_RC(get(h, g1, DCGM_CONFIG_CURRENT_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].perfState.targetClocks.smClock == 1980, "%s: clocks reset: %u", where,
          got[0].perfState.targetClocks.smClock);
    CHECK(pop_all(st).n == 0, "%s: clock errors", where);

    /* sync boost: BADPARAM on one GPU, a NOT_SUPPORTED entry on two */
    req = blank_request();
    req.perfState.syncBoost = 1;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_BADPARAM);
    er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, BLANK, F_SYNC_BOOST, DCGM_ST_BADPARAM), "%s: sync 1",
          where);
    CHECK_RC(p_dcgmConfigSet(h, g2, &req, st), DCGM_ST_OK);
    er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, BLANK, F_SYNC_BOOST, DCGM_ST_NOT_SUPPORTED), "%s: sync 2",
          where);

    /* a group power budget is shared out */
    req = blank_request();
    req.powerLimit.type = DCGM_CONFIG_POWER_BUDGET_GROUP;
    req.powerLimit.val = 2 * 300 + 1;
    CHECK_RC(p_dcgmConfigSet(h, g2, &req, st), DCGM_ST_OK);
    CHECK_RC(get(h, g2, DCGM_CONFIG_CURRENT_STATE, 2, got, st), DCGM_ST_OK);
    CHECK(got[0].powerLimit.val == 300 && got[1].powerLimit.val == 300 &&
              got[1].powerLimit.type == DCGM_CONFIG_POWER_CAP_INDIVIDUAL,
          "%s: budget: %u %u", where, got[0].powerLimit.val, got[1].powerLimit.val);
    CHECK_RC(get(h, g2, DCGM_CONFIG_TARGET_STATE, 2, got, st), DCGM_ST_OK);
    CHECK(got[1].powerLimit.val == 300 && got[1].perfState.syncBoost == BLANK &&
              got[1].computeMode == BLANK,
          "%s: GPU 1 target: power %u sync %u", where, got[1].powerLimit.val,
          got[1].perfState.syncBoost);
    CHECK(pop_all(st).n == 0, "%s: budget errors", where);

    /* ECC: the pending mode changes, the current one waits for a reset */
    req = blank_request();
    req.eccMode = 0;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_OK);
    er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, 0, F_ECC, DCGM_ST_RESET_REQUIRED), "%s: ecc %u errors",
          where, er.n);
    CHECK(latest_double(h, 0, F_ECC_PENDING) == 0.0, "%s: pending ECC", where);
    CHECK_RC(get(h, g1, DCGM_CONFIG_CURRENT_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].eccMode == 1, "%s: current ECC %u", where, got[0].eccMode);
    CHECK_RC(get(h, g1, DCGM_CONFIG_TARGET_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].eccMode == 0, "%s: target ECC %u", where, got[0].eccMode);

    /* enforce: the target applied again; GPU 0 still waits for its reset,
     * GPU 2 was never configured */
    CHECK_RC(p_dcgmConfigEnforce(h, g2, st), DCGM_ST_GENERIC_ERROR);
    er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, 0, F_ECC, DCGM_ST_RESET_REQUIRED), "%s: enforce %u errors",
          where, er.n);
    CHECK_RC(p_dcgmConfigEnforce(h, g3, st), DCGM_ST_GENERIC_ERROR);
    er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, 2, 0, DCGM_ST_NOT_CONFIGURED), "%s: enforce unconfigured",
          where);
    req = blank_request();
    req.powerLimit.val = 450;
    CHECK_RC(p_dcgmConfigSet(h, g3, &req, 0), DCGM_ST_OK); /* no status list: fine */
    CHECK_RC(p_dcgmConfigEnforce(h, g3, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetDeviceAttributes(h, 2, &attr), DCGM_ST_OK);
    CHECK(attr.powerLimits.enforcedPowerLimit == 450, "%s: GPU 2 enforced limit %u", where,
          attr.powerLimits.enforcedPowerLimit);

    /* a lower limit caps what the GPU draws from then on (GPU 2 trains flat out) */
    CHECK_RC(p_dcgmWatchFieldValue(h, 2, F_POWER_USAGE, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFieldValue(h, 2, F_POWER_INSTANT, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFieldValue(h, 2, F_EVENT_REASONS, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    double before = latest_double(h, 2, F_POWER_USAGE);
    CHECK(before > 1.2 * pmin, "%s: GPU 2 draws %.1f W before", where, before);
    req = blank_request();
    req.powerLimit.val = pmin;
    CHECK_RC(p_dcgmConfigSet(h, g3, &req, st), DCGM_ST_OK);
    /* the instant draw obeys from the next 100 ms step; power usage is a 1 s average (H100) */
    sleep_ms(250);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    double instant = latest_double(h, 2, F_POWER_INSTANT);
    CHECK(instant <= 1.01 * pmin, "%s: GPU 2 draws %.1f W instantly under a %u W cap", where, instant, pmin);
    double averaged = latest_double(h, 2, F_POWER_USAGE);
    CHECK(averaged > 1.01 * pmin, "%s: GPU 2's 1 s average %.1f W already under the %u W cap", where,
          averaged, pmin);
    sleep_ms(1000);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    double after = latest_double(h, 2, F_POWER_USAGE);
    CHECK(after <= 1.01 * pmin, "%s: GPU 2 draws %.1f W under a %u W cap", where, after, pmin);
    CHECK(((int64_t)latest_double(h, 2, F_EVENT_REASONS) & SW_POWER_CAP) != 0,
          "%s: no power cap reason", where);
    CHECK(pop_all(st).n == 0, "%s: cap errors", where);

    /* groups without GPUs, requests DCGM's client refuses */
    req = blank_request();
    CHECK_RC(p_dcgmConfigSet(h, empty, &req, st), DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmConfigEnforce(h, empty, st), DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(get(h, empty, DCGM_CONFIG_TARGET_STATE, 1, got, st), DCGM_ST_BADPARAM);
    er = pop_all(st);
    CHECK(er.n == 1 && has_error(&er, BLANK, 0, DCGM_ST_BADPARAM), "%s: empty get", where);
    CHECK_RC(get(h, (dcgmGpuGrp_t)9999, DCGM_CONFIG_TARGET_STATE, 1, got, st),
             DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(get(h, g1, 2, 1, got, st), DCGM_ST_BADPARAM);
    CHECK_RC(get(h, g1, DCGM_CONFIG_TARGET_STATE, 0, got, st), DCGM_ST_BADPARAM);
    got[1].version = 0;
    CHECK_RC(p_dcgmConfigGet(h, g1, DCGM_CONFIG_TARGET_STATE, 2, got, st), DCGM_ST_VER_MISMATCH);
    req.version = dcgmConfig_version2 - 0x01000000u;
    CHECK_RC(p_dcgmConfigSet(h, g1, &req, st), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmConfigSet(h, g1, NULL, st), DCGM_ST_BADPARAM);
    CHECK(pop_all(st).n == 0, "%s: refused requests listed errors", where);
    /* a short list gets the first GPUs */
    CHECK_RC(get(h, DCGM_GROUP_ALL_GPUS, DCGM_CONFIG_TARGET_STATE, 1, got, st), DCGM_ST_OK);
    CHECK(got[0].gpuId == 0 && got[0].powerLimit.val == 300, "%s: short list", where);

    /* dcgmWatchPidFields / dcgmWatchJobFields watch DCGM's job fields (252, framebuffer
     * used, among them) on the group's GPUs */
    CHECK_RC(p_dcgmWatchPidFields(h, g3, 1000000, 3600.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchJobFields(h, g3, 1000000, 3600.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchPidFields(h, (dcgmGpuGrp_t)9999, 1000000, 3600.0, 0),
             DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK(latest_double(h, 2, 252) > 0.0, "%s: job field watched", where);

    CHECK_RC(p_dcgmStatusDestroy(st), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g1), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g2), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g3), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, empty), DCGM_ST_OK);
}

static void test_embedded(void)
{
    setenv("DCGM_SIM_SCENARIO", "3", 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &h), DCGM_ST_OK);
    run_script(EMB, "embedded");
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    /* a new engine starts from the GPUs' own settings */
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &h), DCGM_ST_OK);
    dcgmDeviceAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    attr.version = dcgmDeviceAttributes_version3;
    CHECK_RC(p_dcgmGetDeviceAttributes(EMB, 0, &attr), DCGM_ST_OK);
    CHECK(attr.powerLimits.curPowerLimit == 700, "fresh engine limit %u",
          attr.powerLimits.curPowerLimit);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

/* The config manager's state is the hostengine's: a later connection sees
 * the targets and settings an earlier one left. */
static void test_hostengine(void)
{
    hostengine he;
    if (!hostengine_start(&he, "3", NULL))
        return;
    dcgmHandle_t h = hostengine_connect(he.address);
    if (h) {
        run_script(h, "hostengine");
        CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    }
    h = hostengine_connect(he.address);
    if (h && geteuid() == 0) {
        dcgmConfig_v2 got[N_GPUS];
        CHECK_RC(get(h, DCGM_GROUP_ALL_GPUS, DCGM_CONFIG_TARGET_STATE, N_GPUS, got, 0), DCGM_ST_OK);
        CHECK(got[0].powerLimit.val == 300 && got[0].eccMode == 0 && got[2].powerLimit.val == 200,
              "targets after reconnecting: %u %u %u", got[0].powerLimit.val, got[0].eccMode,
              got[2].powerLimit.val);
        CHECK_RC(get(h, DCGM_GROUP_ALL_GPUS, DCGM_CONFIG_CURRENT_STATE, N_GPUS, got, 0), DCGM_ST_OK);
        CHECK(got[1].powerLimit.val == 300 && got[2].powerLimit.val == 200,
              "limits after reconnecting: %u %u", got[1].powerLimit.val, got[2].powerLimit.val);
    }
    if (h)
        CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    hostengine_stop(&he);
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "embedded", test_embedded },
        { "hostengine", test_hostengine },
    };
    const check_program program = { .only_env = "TEST_CONFIG_ONLY" };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
