/*
 * test_policy.c -- DCGM's policy manager as a client sees it: dcgmPolicySet /
 * dcgmPolicyGet per GPU of a group, dcgmPolicyRegister_v2 callbacks for
 * violations found in values injected on fake GPUs (counters by how they
 * moved since the value before, limits by value), once per violation and per
 * 5 s of the values' timestamps, silence after dcgmPolicyUnregister, and the
 * error codes of each call.  The same script runs on an embedded engine and
 * through a hostengine (where the callbacks travel back over the wire).
 *
 * usage: test_policy BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"
#include "hostengine.h"
#include "../dcgm_field_ids.h"

/* injected values are stamped this far in the future, as NVIDIA's tests do */
#define AHEAD_S 60.0
/* how long a callback may take to arrive, and how long silence is awaited */
#define ARRIVE_MS 3000
#define QUIET_MS 400

/* ---- the callbacks' collector -------------------------------------------------- */

#define MAX_HEARD 64

typedef struct heard {
    dcgmPolicyCallbackResponse_v2 response;
    uint64_t user;
} heard;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    heard items[MAX_HEARD];
    int count;
} ear = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { { { 0 }, 0 } }, 0 };

static int on_violation(dcgmPolicyCallbackResponse_t *response, uint64_t user)
{
    pthread_mutex_lock(&ear.lock);
    if (ear.count < MAX_HEARD)
        ear.items[ear.count++] = (heard){ *response, user };
    pthread_cond_broadcast(&ear.cond);
    pthread_mutex_unlock(&ear.lock);
    return 0;
}

static void forget_heard(void)
{
    pthread_mutex_lock(&ear.lock);
    ear.count = 0;
    pthread_mutex_unlock(&ear.lock);
}

/* How many callbacks came, waiting up to ms for at least want of them. */
static int heard_count(int want, int ms)
{
    int64_t until = wall_us() + (int64_t)ms * 1000;
    pthread_mutex_lock(&ear.lock);
    while (ear.count < want && wall_us() < until) {
        pthread_mutex_unlock(&ear.lock);
        sleep_ms(10);
        pthread_mutex_lock(&ear.lock);
    }
    int n = ear.count;
    pthread_mutex_unlock(&ear.lock);
    return n;
}

static heard heard_at(int i)
{
    pthread_mutex_lock(&ear.lock);
    heard h = ear.items[i];
    pthread_mutex_unlock(&ear.lock);
    return h;
}

/* ---- helpers -------------------------------------------------------------------- */

static dcgmGpuGrp_t group_of(dcgmHandle_t h, const unsigned int *gpus, int n)
{
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "policy", &g), DCGM_ST_OK);
    for (int i = 0; i < n; i++)
        CHECK_RC(p_dcgmGroupAddDevice(h, g, gpus[i]), DCGM_ST_OK);
    return g;
}

static dcgmPolicy_t policy_of(unsigned int condition, int idx, int tag, unsigned long long value)
{
    dcgmPolicy_t p;
    memset(&p, 0, sizeof p);
    p.version = dcgmPolicy_version1;
    p.condition = (dcgmPolicyCondition_t)condition;
    p.parms[idx].tag = tag;
    if (tag)
        p.parms[idx].val.llval = value;
    else
        p.parms[idx].val.boolean = (unsigned int)value;
    return p;
}

/* A fake GPU alone in a group with policy set on it and a callback registered
 * for the conditions. */
static dcgmGpuGrp_t watched_gpu(dcgmHandle_t h, dcgmPolicy_t policy, unsigned int conditions,
                                uint64_t user, unsigned int *gpu)
{
    *gpu = new_fake_gpu(h);
    dcgmGpuGrp_t g = group_of(h, gpu, 1);
    CHECK_RC(p_dcgmPolicySet(h, g, &policy, 0), DCGM_ST_OK);
    forget_heard();
    CHECK_RC(p_dcgmPolicyRegister_v2(h, g, (dcgmPolicyCondition_t)conditions, on_violation, user),
             DCGM_ST_OK);
    return g;
}

static int64_t inject(dcgmHandle_t h, unsigned int gpu, unsigned short field, long long value,
                      double offset_s)
{
    dcgmInjectFieldValue_t v;
    injected_i64(&v, field, wall_us() + (int64_t)((AHEAD_S + offset_s) * 1e6), value);
    CHECK_RC(p_dcgmInjectFieldValue(h, gpu, &v), DCGM_ST_OK);
    return v.ts;
}

static void inject_dbl(dcgmHandle_t h, unsigned int gpu, unsigned short field, double value,
                       double offset_s)
{
    dcgmInjectFieldValue_t v;
    injected_dbl(&v, field, wall_us() + (int64_t)((AHEAD_S + offset_s) * 1e6), value);
    CHECK_RC(p_dcgmInjectFieldValue(h, gpu, &v), DCGM_ST_OK);
}

/* ---- the script ------------------------------------------------------------------- */

static void errors(dcgmHandle_t h)
{
    dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_DBE, DCGM_POLICY_COND_IDX_DBE, 0, 1);
    dcgmPolicy_t got[2];
    memset(got, 0, sizeof got);
    got[0].version = got[1].version = dcgmPolicy_version1;
    /* checked by the client library before anything is sent */
    CHECK_RC(p_dcgmPolicySet(h, DCGM_GROUP_ALL_GPUS, NULL, 0), DCGM_ST_BADPARAM);
    p.version = 0;
    CHECK_RC(p_dcgmPolicySet(h, DCGM_GROUP_ALL_GPUS, &p, 0), DCGM_ST_VER_MISMATCH);
    p.version = dcgmPolicy_version1;
    CHECK_RC(p_dcgmPolicyGet(h, DCGM_GROUP_ALL_GPUS, 0, got, 0), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmPolicyGet(h, DCGM_GROUP_ALL_GPUS, 1, NULL, 0), DCGM_ST_BADPARAM);
    got[1].version = 50;
    CHECK_RC(p_dcgmPolicyGet(h, DCGM_GROUP_ALL_GPUS, 2, got, 0), DCGM_ST_VER_MISMATCH);
    got[1].version = dcgmPolicy_version1;
    /* a group that does not exist is not configured */
    CHECK_RC(p_dcgmPolicySet(h, 9999, &p, 0), DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmPolicyGet(h, 9999, 1, got, 0), DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmPolicyRegister_v2(h, 9999, DCGM_POLICY_COND_DBE, on_violation, 0),
             DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmPolicyUnregister(h, 9999, DCGM_POLICY_COND_DBE), DCGM_ST_NOT_CONFIGURED);
    /* nor is an empty one, for set and get */
    dcgmGpuGrp_t empty = group_of(h, NULL, 0);
    CHECK_RC(p_dcgmPolicySet(h, empty, &p, 0), DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmPolicyGet(h, empty, 1, got, 0), DCGM_ST_NOT_CONFIGURED);
    /* registering needs a condition */
    CHECK_RC(p_dcgmPolicyRegister_v2(h, DCGM_GROUP_ALL_GPUS, 0, on_violation, 0),
             DCGM_ST_BADPARAM);
    /* the edge-triggered manager needs no trigger */
    CHECK_RC(p_dcgmPolicyTrigger(h), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, empty), DCGM_ST_OK);
}

static void set_get(dcgmHandle_t h)
{
    unsigned int gpus[2] = { new_fake_gpu(h), new_fake_gpu(h) };
    dcgmGpuGrp_t both = group_of(h, gpus, 2), first = group_of(h, gpus, 1);
    dcgmPolicy_t got[3];
    memset(got, 0, sizeof got);
    for (int i = 0; i < 3; i++)
        got[i].version = dcgmPolicy_version1;
    /* a GPU nobody set has the empty policy */
    CHECK_RC(p_dcgmPolicyGet(h, both, 3, got, 0), DCGM_ST_OK);
    CHECK(got[0].version == dcgmPolicy_version1 && got[0].condition == 0 &&
          got[1].condition == 0, "unset: version %#x condition %#x", got[0].version,
          (unsigned)got[0].condition);
    dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_DBE | DCGM_POLICY_COND_THERMAL,
                               DCGM_POLICY_COND_IDX_DBE, 0, 1);
    p.parms[DCGM_POLICY_COND_IDX_THERMAL].tag = 1;
    p.parms[DCGM_POLICY_COND_IDX_THERMAL].val.llval = 87;
    p.action = 1;
    CHECK_RC(p_dcgmPolicySet(h, both, &p, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmPolicyGet(h, both, 3, got, 0), DCGM_ST_OK);
    CHECK(memcmp(&got[0], &p, sizeof p) == 0 && memcmp(&got[1], &p, sizeof p) == 0,
          "round trip: condition %#x thermal %llu", (unsigned)got[0].condition,
          got[0].parms[DCGM_POLICY_COND_IDX_THERMAL].val.llval);
    /* a group's policy lands on each of its GPUs: set on one, the other keeps its own */
    dcgmPolicy_t q = policy_of(DCGM_POLICY_COND_PCI, DCGM_POLICY_COND_IDX_PCI, 0, 1);
    CHECK_RC(p_dcgmPolicySet(h, first, &q, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmPolicyGet(h, both, 2, got, 0), DCGM_ST_OK);
    CHECK(got[0].condition == DCGM_POLICY_COND_PCI &&
          got[1].condition == (DCGM_POLICY_COND_DBE | DCGM_POLICY_COND_THERMAL),
          "per GPU: %#x %#x", (unsigned)got[0].condition, (unsigned)got[1].condition);
    /* fewer slots than GPUs: as many as fit, and INSUFFICIENT_SIZE */
    memset(got, 0, sizeof got);
    got[0].version = dcgmPolicy_version1;
    CHECK_RC(p_dcgmPolicyGet(h, both, 1, got, 0), DCGM_ST_INSUFFICIENT_SIZE);
    CHECK(got[0].condition == DCGM_POLICY_COND_PCI && got[1].version == 0,
          "one slot: %#x, next %#x", (unsigned)got[0].condition, got[1].version);
    CHECK_RC(p_dcgmGroupDestroy(h, both), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, first), DCGM_ST_OK);
}

static void ecc_dbe(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_DBE, DCGM_POLICY_COND_IDX_DBE, 0, 1);
    dcgmGpuGrp_t g = watched_gpu(h, p, DCGM_POLICY_COND_DBE, 42, &gpu);
    /* the first value has nothing to compare with */
    inject(h, gpu, DCGM_FI_DEV_ECC_DBE_VOL_DEV, 0, 0);
    CHECK(heard_count(1, QUIET_MS) == 0, "a baseline DBE count called back");
    int64_t ts = inject(h, gpu, DCGM_FI_DEV_ECC_DBE_VOL_DEV, 1, 5);
    CHECK(heard_count(1, ARRIVE_MS) == 1, "DBE 0 -> 1: %d callbacks", heard_count(0, 0));
    CHECK(heard_count(2, QUIET_MS) == 1, "DBE 0 -> 1 called back %d times", heard_count(0, 0));
    heard got = heard_at(0);
    CHECK(got.response.version == dcgmPolicyCallbackResponse_version2 &&
          got.response.condition == DCGM_POLICY_COND_DBE && got.response.gpuId == gpu &&
          got.response.val.dbe.numerrors == 1 && got.response.val.dbe.location == 2 &&
          got.response.val.dbe.timestamp == ts && got.user == 42,
          "DBE callback: version %#x condition %#x gpu %u/%u errors %u location %d user %llu",
          got.response.version, (unsigned)got.response.condition, got.response.gpuId, gpu,
          got.response.val.dbe.numerrors, got.response.val.dbe.location,
          (unsigned long long)got.user);
    CHECK_RC(p_dcgmPolicyUnregister(h, g, DCGM_POLICY_COND_DBE), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
}

/* the suite's delta pattern: same, rise, reset, rise; then too soon, then unregistered */
static void pcie_delta(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_PCI, DCGM_POLICY_COND_IDX_PCI, 1, 0);
    dcgmGpuGrp_t g = watched_gpu(h, p, DCGM_POLICY_COND_PCI, 7, &gpu);
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 5, 0);
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 5, 5);
    CHECK(heard_count(1, QUIET_MS) == 0, "5, 5: %d callbacks", heard_count(0, 0));
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 10, 10);
    CHECK(heard_count(1, ARRIVE_MS) == 1, "5 -> 10: %d callbacks", heard_count(0, 0));
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 3, 15);
    CHECK(heard_count(2, QUIET_MS) == 1, "10 -> 3: %d callbacks", heard_count(0, 0));
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 7, 20);
    CHECK(heard_count(2, ARRIVE_MS) == 2, "3 -> 7: %d callbacks", heard_count(0, 0));
    /* a rise within 5 s of the last one signalled is not signalled */
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 9, 22);
    CHECK(heard_count(3, QUIET_MS) == 2, "7 -> 9 two seconds on: %d callbacks", heard_count(0, 0));
    heard a = heard_at(0), b = heard_at(1);
    CHECK(a.response.condition == DCGM_POLICY_COND_PCI && a.response.val.pci.counter == 10 &&
          b.response.val.pci.counter == 7 && a.response.gpuId == gpu && b.user == 7,
          "PCIe callbacks: condition %#x counters %u, %u", (unsigned)a.response.condition,
          a.response.val.pci.counter, b.response.val.pci.counter);
    /* unregistered: nothing more */
    CHECK_RC(p_dcgmPolicyUnregister(h, g, DCGM_POLICY_COND_PCI), DCGM_ST_OK);
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 50, 40);
    CHECK(heard_count(3, QUIET_MS) == 2, "after unregister: %d callbacks", heard_count(0, 0));
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
}

/* a registration hears only its conditions, and only those the policy enables */
static void conditions(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_DBE | DCGM_POLICY_COND_NVLINK,
                               DCGM_POLICY_COND_IDX_DBE, 0, 1);
    dcgmGpuGrp_t g = watched_gpu(h, p, DCGM_POLICY_COND_NVLINK | DCGM_POLICY_COND_PCI, 0, &gpu);
    inject(h, gpu, DCGM_FI_DEV_ECC_DBE_VOL_DEV, 0, 0);
    inject(h, gpu, DCGM_FI_DEV_ECC_DBE_VOL_DEV, 4, 6);     /* not registered for */
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 0, 0);
    inject(h, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, 4, 6);     /* registered for, but not in the policy */
    CHECK(heard_count(1, QUIET_MS) == 0, "unwanted conditions: %d callbacks", heard_count(0, 0));
    inject(h, gpu, DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, 10, 0);
    inject(h, gpu, DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, 15, 6);
    CHECK(heard_count(1, ARRIVE_MS) == 1, "NvLink 10 -> 15: %d callbacks", heard_count(0, 0));
    heard got = heard_at(0);
    CHECK(got.response.condition == DCGM_POLICY_COND_NVLINK &&
          got.response.val.nvlink.fieldId == DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL &&
          got.response.val.nvlink.counter == 15,
          "NvLink callback: condition %#x field %u counter %u", (unsigned)got.response.condition,
          got.response.val.nvlink.fieldId, got.response.val.nvlink.counter);
    CHECK_RC(p_dcgmPolicyUnregister(h, g, DCGM_POLICY_COND_NVLINK), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
}

/* limits: temperature, power, retired pages; and every XID */
static void limits(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_THERMAL | DCGM_POLICY_COND_POWER |
                                   DCGM_POLICY_COND_MAX_PAGES_RETIRED | DCGM_POLICY_COND_XID,
                               DCGM_POLICY_COND_IDX_THERMAL, 1, 90);
    p.parms[DCGM_POLICY_COND_IDX_POWER].tag = 1;
    p.parms[DCGM_POLICY_COND_IDX_POWER].val.llval = 200;
    p.parms[DCGM_POLICY_COND_IDX_MAX_PAGES_RETIRED].tag = 1;
    p.parms[DCGM_POLICY_COND_IDX_MAX_PAGES_RETIRED].val.llval = 5;
    dcgmGpuGrp_t g = watched_gpu(h, p, 0x7f, 0, &gpu);
    inject(h, gpu, DCGM_FI_DEV_GPU_TEMP_CELSIUS, 90, 0);         /* at the limit: fine */
    inject_dbl(h, gpu, DCGM_FI_DEV_BOARD_POWER_WATTS, 199.5, 0);
    CHECK(heard_count(1, QUIET_MS) == 0, "within limits: %d callbacks", heard_count(0, 0));
    inject(h, gpu, DCGM_FI_DEV_GPU_TEMP_CELSIUS, 95, 10);
    CHECK(heard_count(1, ARRIVE_MS) == 1, "95 C: %d callbacks", heard_count(0, 0));
    heard got = heard_at(0);
    CHECK(got.response.condition == DCGM_POLICY_COND_THERMAL &&
          got.response.val.thermal.thermalViolation == 95,
          "thermal: condition %#x value %u", (unsigned)got.response.condition,
          got.response.val.thermal.thermalViolation);
    inject_dbl(h, gpu, DCGM_FI_DEV_BOARD_POWER_WATTS, 210.7, 10);
    CHECK(heard_count(2, ARRIVE_MS) == 2, "210.7 W: %d callbacks", heard_count(0, 0));
    got = heard_at(1);
    CHECK(got.response.condition == DCGM_POLICY_COND_POWER &&
          got.response.val.power.powerViolation == 210,
          "power: condition %#x value %u", (unsigned)got.response.condition,
          got.response.val.power.powerViolation);
    /* 10 DBE pages alone: the SBE count is unknown yet, nothing to judge */
    inject(h, gpu, DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL, 10, 10);
    CHECK(heard_count(3, QUIET_MS) == 2, "DBE pages alone: %d callbacks", heard_count(0, 0));
    inject(h, gpu, DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL, 1, 10);
    CHECK(heard_count(3, ARRIVE_MS) == 3, "11 pages: %d callbacks", heard_count(0, 0));
    got = heard_at(2);
    CHECK(got.response.condition == DCGM_POLICY_COND_MAX_PAGES_RETIRED &&
          got.response.val.mpr.dbepages == 10 && got.response.val.mpr.sbepages == 1,
          "pages: condition %#x sbe %u dbe %u", (unsigned)got.response.condition,
          got.response.val.mpr.sbepages, got.response.val.mpr.dbepages);
    inject(h, gpu, DCGM_FI_DEV_XID_ERROR, 16, 10);
    CHECK(heard_count(4, ARRIVE_MS) == 4, "XID 16: %d callbacks", heard_count(0, 0));
    got = heard_at(3);
    CHECK(got.response.condition == DCGM_POLICY_COND_XID && got.response.val.xid.errnum == 16,
          "xid: condition %#x errnum %u", (unsigned)got.response.condition,
          got.response.val.xid.errnum);
    CHECK_RC(p_dcgmPolicyUnregister(h, g, DCGM_POLICY_COND_XID), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
}

/* a registration left in place when the handle goes: no hang, no leak */
static void left_registered(dcgmHandle_t h)
{
    unsigned int gpu;
    dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_XID, DCGM_POLICY_COND_IDX_XID, 0, 1);
    watched_gpu(h, p, DCGM_POLICY_COND_XID, 0, &gpu);
    inject(h, gpu, DCGM_FI_DEV_XID_ERROR, 43, 0);
    CHECK(heard_count(1, ARRIVE_MS) == 1, "XID 43: %d callbacks", heard_count(0, 0));
}

static const script_step script[] = {
    { "errors", errors },
    { "set_get", set_get },
    { "ecc_dbe", ecc_dbe },
    { "pcie_delta", pcie_delta },
    { "conditions", conditions },
    { "limits", limits },
    { "left_registered", left_registered },
};

static void run_script(dcgmHandle_t h, const char *tag)
{
    run_steps(script, sizeof script / sizeof script[0], h, tag);
}

static void test_embedded(void)
{
    setenv("DCGM_SIM_SCENARIO", "1", 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &h), DCGM_ST_OK);
    run_script(EMB, "embedded");
    int64_t t = wall_us();
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    CHECK(wall_us() - t < 1000000, "stopping with a registration took %lld us",
          (long long)(wall_us() - t));
}

static void test_hostengine(void)
{
    run_through_hostengine("1", run_script);
}

/* two clients of one hostengine: each hears its own registrations only, and
 * one's unregistering leaves the other's in place */
static void test_two_clients(void)
{
    hostengine he;
    if (!hostengine_start(&he, "1", NULL))
        return;
    dcgmHandle_t a = hostengine_connect(he.address);
    dcgmHandle_t b = hostengine_connect(he.address);
    if (a && b) {
        unsigned int gpu;
        dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_XID, DCGM_POLICY_COND_IDX_XID, 0, 1);
        dcgmGpuGrp_t ga = watched_gpu(a, p, DCGM_POLICY_COND_XID, 1, &gpu);
        dcgmGpuGrp_t gb = group_of(b, &gpu, 1);
        CHECK_RC(p_dcgmPolicyRegister_v2(b, gb, DCGM_POLICY_COND_XID, on_violation, 2), DCGM_ST_OK);
        inject(a, gpu, DCGM_FI_DEV_XID_ERROR, 31, 0);
        CHECK(heard_count(2, ARRIVE_MS) == 2, "two clients: %d callbacks", heard_count(0, 0));
        CHECK(heard_at(0).user + heard_at(1).user == 3, "each its own: users %llu, %llu",
              (unsigned long long)heard_at(0).user, (unsigned long long)heard_at(1).user);
        CHECK_RC(p_dcgmPolicyUnregister(a, ga, DCGM_POLICY_COND_XID), DCGM_ST_OK);
        forget_heard();
        inject(a, gpu, DCGM_FI_DEV_XID_ERROR, 32, 10);
        CHECK(heard_count(2, ARRIVE_MS) == 1 && heard_at(0).user == 2,
              "after one unregistered: %d callbacks, user %llu", heard_count(0, 0),
              (unsigned long long)heard_at(0).user);
    }
    int64_t t = wall_us();
    if (a)
        CHECK_RC(p_dcgmDisconnect(a), DCGM_ST_OK);
    if (b)
        CHECK_RC(p_dcgmDisconnect(b), DCGM_ST_OK);
    CHECK(wall_us() - t < 1000000, "disconnecting took %lld us", (long long)(wall_us() - t));
    hostengine_stop(&he);
}

/* The policy manager's watchers of a field of a GPU (dcgmGetCacheManagerFieldInfo);
 * -1 when nothing watches it. */
static int policy_watchers(dcgmHandle_t h, unsigned int gpu, unsigned short field,
                           dcgm_cm_field_info_watcher_t *first)
{
    dcgmCacheManagerFieldInfo_v4_t info;
    memset(&info, 0, sizeof info);
    info.version = dcgmCacheManagerFieldInfo_version4;
    info.entityGroupId = DCGM_FE_GPU;
    info.entityId = gpu;
    info.fieldId = field;
    if (p_dcgmGetCacheManagerFieldInfo(h, &info) != DCGM_ST_OK)
        return -1;
    int n = 0;
    for (int i = 0; i < info.numWatchers && i < DCGM_CM_FIELD_INFO_NUM_WATCHERS; i++)
        if (info.watchers[i].watcherType == DcgmWatcherTypePolicyManager && n++ == 0 && first)
            *first = info.watchers[i];
    return n;
}

/* A registration watches the policy fields of every GPU, every 10 s for an hour, as the
 * connection's policy manager watcher; they go with the connection. */
static void test_watches(void)
{
    hostengine he;
    if (!hostengine_start(&he, "1", NULL))
        return;
    dcgmHandle_t a = hostengine_connect(he.address);
    dcgmHandle_t b = hostengine_connect(he.address);
    if (a && b) {
        unsigned int gpu = 0;
        CHECK(policy_watchers(b, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, NULL) == -1, "watched before registering");
        dcgmGpuGrp_t g = group_of(a, &gpu, 1);
        CHECK_RC(p_dcgmPolicyRegister_v2(a, g, DCGM_POLICY_COND_XID, on_violation, 0), DCGM_ST_OK);
        const unsigned short fields[] = { DCGM_FI_DEV_PCIE_REPLAY_TOTAL, DCGM_FI_DEV_ECC_DBE_VOL_DEV, DCGM_FI_DEV_GPU_TEMP_CELSIUS, DCGM_FI_DEV_BOARD_POWER_WATTS,
                                          DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL, DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, DCGM_FI_DEV_XID_ERROR };
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            dcgm_cm_field_info_watcher_t w;
            memset(&w, 0, sizeof w);
            int n = policy_watchers(b, gpu, fields[i], &w);
            CHECK(n == 1 && w.monitorIntervalUsec == 10000000 && w.maxAgeUsec == 3600000000ll &&
                      w.connectionId != 0,
                  "field %u: %d policy watchers, every %lld us, kept %lld us, connection %u",
                  fields[i], n, w.monitorIntervalUsec, w.maxAgeUsec, w.connectionId);
        }
        CHECK_RC(p_dcgmPolicyUnregister(a, g, DCGM_POLICY_COND_XID), DCGM_ST_OK);
        CHECK(policy_watchers(b, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, NULL) == 1, "unregistering unwatched");
        CHECK_RC(p_dcgmDisconnect(a), DCGM_ST_OK);
        /* the field keeps its cache entry, with no watcher left (DCGM drops only the
         * watcher); the hostengine tidies a connection up once it sees it close, so
         * the other client may see the watcher for a moment */
        int left = policy_watchers(b, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, NULL);
        for (int waited_ms = 0; left != 0 && waited_ms < 2000; waited_ms += 20) {
            sleep_ms(20);
            left = policy_watchers(b, gpu, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, NULL);
        }
        CHECK(left == 0, "%d policy watchers 2 s after the disconnect", left);
        CHECK_RC(p_dcgmDisconnect(b), DCGM_ST_OK);
    }
    hostengine_stop(&he);
}

/* a callback may call back into the library, even to close its own handle */
static dcgmHandle_t closing_handle;
static int closing_rc = 1;

static int disconnect_from_callback(dcgmPolicyCallbackResponse_t *response, uint64_t user)
{
    closing_rc = p_dcgmDisconnect(closing_handle);
    return on_violation(response, user);
}

static void test_reentry(void)
{
    hostengine he;
    if (!hostengine_start(&he, "1", NULL))
        return;
    dcgmHandle_t h = hostengine_connect(he.address);
    if (h) {
        closing_handle = h;
        unsigned int gpu = new_fake_gpu(h);
        dcgmGpuGrp_t g = group_of(h, &gpu, 1);
        dcgmPolicy_t p = policy_of(DCGM_POLICY_COND_XID, DCGM_POLICY_COND_IDX_XID, 0, 1);
        CHECK_RC(p_dcgmPolicySet(h, g, &p, 0), DCGM_ST_OK);
        forget_heard();
        CHECK_RC(p_dcgmPolicyRegister_v2(h, g, DCGM_POLICY_COND_XID, disconnect_from_callback, 0),
                 DCGM_ST_OK);
        inject(h, gpu, DCGM_FI_DEV_XID_ERROR, 13, 0);
        CHECK(heard_count(1, ARRIVE_MS) == 1, "XID 13: %d callbacks", heard_count(0, 0));
        CHECK(closing_rc == DCGM_ST_OK, "dcgmDisconnect from the callback: %d", closing_rc);
        /* the dispatcher, detached by that disconnect, ends on its own once the callback
         * returns: give it the moment before the library may be unloaded */
        sleep_ms(200);
        dcgmGpuGrp_t other = 0;
        CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "after", &other),
                 DCGM_ST_CONNECTION_NOT_VALID);
    }
    hostengine_stop(&he);
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "embedded", test_embedded },
        { "hostengine", test_hostengine },
        { "two_clients", test_two_clients },
        { "reentry", test_reentry },
        { "watches", test_watches },
    };
    const check_program program = { .only_env = "TEST_POLICY_ONLY" };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
