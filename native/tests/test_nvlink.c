/*
 * test_nvlink.c -- NvLink link states: dcgmGetNvLinkLinkStatus (v5 and v4),
 * dcgmSetEntityNvLinkLinkState, and the health check's NVLINK system
 * reporting a Down link.  The same script runs on an embedded engine and
 * through a hostengine.
 *
 * usage: test_nvlink BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#define CHECK_SCRATCH_FILES
#include "check.h"
#include "hostengine.h"

#define FR_NVLINK_DOWN 14 /* dcgm_errors.h */

/* GPU 0 an H100 SXM (18 links), 1 an A100 SXM (12), 2 an L4 (none), 3 an H100 in MIG mode */
static const char SCENARIO_TEXT[] =
    "[[gpu]]\nmodel = \"H100\"\ncount = 1\n"
    "[[gpu]]\nmodel = \"A100\"\ncount = 1\n"
    "[[gpu]]\nmodel = \"L4\"\ncount = 1\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 1\nmig_instances = 2\n";
static const unsigned int UP_LINKS[] = { 18, 12, 0, 0 };

static unsigned int count_state(const dcgmNvLinkLinkState_t *s, int n, dcgmNvLinkLinkState_t want)
{
    unsigned int c = 0;
    for (int i = 0; i < n; i++)
        c += s[i] == want;
    return c;
}

static const dcgmNvLinkGpuLinkStatus_v4 *find_gpu(const dcgmNvLinkStatus_v5 *st, unsigned int id)
{
    for (unsigned int i = 0; i < st->numGpus && i < DCGM_MAX_NUM_DEVICES; i++)
        if (st->gpus[i].entityId == id)
            return &st->gpus[i];
    return NULL;
}

static int set_link(dcgmHandle_t h, dcgm_field_entity_group_t group, unsigned int id,
                    unsigned int link, dcgmNvLinkLinkState_t state)
{
    dcgmSetNvLinkLinkState_v1 req = { dcgmSetNvLinkLinkState_version1, group, id, link, state, 0 };
    return p_dcgmSetEntityNvLinkLinkState(h, &req);
}

static void run_script(dcgmHandle_t h, const char *where)
{
    dcgmNvLinkStatus_v5 *st = calloc(1, sizeof *st);
    dcgmNvLinkStatus_v4 *st4 = calloc(1, sizeof *st4);

    /* live GPUs: the model's links up, the rest not supported; no switches */
    st->version = dcgmNvLinkStatus_version5;
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, st), DCGM_ST_OK);
    CHECK(st->numGpus == 4, "%s: %u GPUs", where, st->numGpus);
    CHECK(st->numNvSwitches == 0, "%s: %u switches", where, st->numNvSwitches);
    for (unsigned int g = 0; g < 4; g++) {
        const dcgmNvLinkGpuLinkStatus_v4 *row = find_gpu(st, g);
        CHECK(row != NULL, "%s: GPU %u missing", where, g);
        if (!row)
            continue;
        unsigned int up = count_state(row->linkState, DCGM_NVLINK_MAX_LINKS_PER_GPU,
                                      DcgmNvLinkLinkStateUp);
        unsigned int none = count_state(row->linkState, DCGM_NVLINK_MAX_LINKS_PER_GPU,
                                        DcgmNvLinkLinkStateNotSupported);
        CHECK(up == UP_LINKS[g], "%s: GPU %u has %u links up, want %u", where, g, up, UP_LINKS[g]);
        CHECK(up + none == DCGM_NVLINK_MAX_LINKS_PER_GPU, "%s: GPU %u other states", where, g);
        if (UP_LINKS[g])
            CHECK(row->linkState[UP_LINKS[g] - 1] == DcgmNvLinkLinkStateUp &&
                      row->linkState[UP_LINKS[g]] == DcgmNvLinkLinkStateNotSupported,
                  "%s: GPU %u links are the first ones", where, g);
    }

    /* the v4 record: 18 links a GPU */
    st4->version = dcgmNvLinkStatus_version4;
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, (dcgmNvLinkStatus_v5 *)st4), DCGM_ST_OK);
    CHECK(st4->version == dcgmNvLinkStatus_version4, "%s: v4 version kept", where);
    CHECK(st4->numGpus == 4 && st4->gpus[1].entityId == 1, "%s: v4 %u GPUs", where, st4->numGpus);
    CHECK(count_state(st4->gpus[0].linkState, DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3,
                      DcgmNvLinkLinkStateUp) == 18, "%s: v4 GPU 0 links", where);
    CHECK(count_state(st4->gpus[1].linkState, DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3,
                      DcgmNvLinkLinkStateUp) == 12, "%s: v4 GPU 1 links", where);

    /* versions and parameters */
    st->version = dcgmNvLinkStatus_version5 + 1;
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, st), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, NULL), DCGM_ST_BADPARAM);
    dcgmSetNvLinkLinkState_v1 bad = { dcgmSetNvLinkLinkState_version1 + 1, DCGM_FE_GPU, 0, 0,
                                      DcgmNvLinkLinkStateDown, 0 };
    CHECK_RC(p_dcgmSetEntityNvLinkLinkState(h, &bad), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmSetEntityNvLinkLinkState(h, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(set_link(h, DCGM_FE_GPU, 99, 0, DcgmNvLinkLinkStateDown), DCGM_ST_BADPARAM);
    CHECK_RC(set_link(h, DCGM_FE_GPU, 0, DCGM_NVLINK_MAX_LINKS_PER_GPU, DcgmNvLinkLinkStateDown),
             DCGM_ST_BADPARAM);
    CHECK_RC(set_link(h, DCGM_FE_SWITCH, 0, 1, DcgmNvLinkLinkStateDown), DCGM_ST_BADPARAM);
    CHECK_RC(set_link(h, DCGM_FE_CPU, 0, 1, DcgmNvLinkLinkStateDown), DCGM_ST_NOT_SUPPORTED);

    /* a fake GPU: no links until set, then what was set */
    unsigned int fake = new_fake_gpu(h);
    st->version = dcgmNvLinkStatus_version5;
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, st), DCGM_ST_OK);
    const dcgmNvLinkGpuLinkStatus_v4 *row = find_gpu(st, fake);
    CHECK(row && count_state(row->linkState, DCGM_NVLINK_MAX_LINKS_PER_GPU,
                             DcgmNvLinkLinkStateNotSupported) == DCGM_NVLINK_MAX_LINKS_PER_GPU,
          "%s: fake GPU %u starts without links", where, fake);
    for (unsigned int l = 0; l < DCGM_NVLINK_MAX_LINKS_PER_GPU; l++)
        CHECK_RC(set_link(h, DCGM_FE_GPU, fake, l, DcgmNvLinkLinkStateUp), DCGM_ST_OK);
    CHECK_RC(set_link(h, DCGM_FE_GPU, fake, 3, DcgmNvLinkLinkStateDown), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, st), DCGM_ST_OK);
    row = find_gpu(st, fake);
    CHECK(row && row->linkState[3] == DcgmNvLinkLinkStateDown &&
              count_state(row->linkState, DCGM_NVLINK_MAX_LINKS_PER_GPU, DcgmNvLinkLinkStateUp) ==
                  DCGM_NVLINK_MAX_LINKS_PER_GPU - 1,
          "%s: fake GPU link 3 down, the rest up", where);

    /* a live GPU reads its hardware again: a set lasts until the next read */
    CHECK_RC(set_link(h, DCGM_FE_GPU, 0, 2, DcgmNvLinkLinkStateDown), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, st), DCGM_ST_OK);
    row = find_gpu(st, 0);
    CHECK(row && row->linkState[2] == DcgmNvLinkLinkStateUp, "%s: GPU 0 link 2 read again", where);

    /* health: the down link is one NVLINK failure naming the link */
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "nvlink", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddDevice(h, g, fake), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_NVLINK), DCGM_ST_OK);
    dcgmHealthResponse_v5 *hr = calloc(1, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g, hr), DCGM_ST_OK);
    unsigned int down = 0;
    for (unsigned int i = 0; i < hr->incidentCount; i++) {
        if (hr->incidents[i].error.code != FR_NVLINK_DOWN)
            continue;
        down++;
        CHECK(hr->incidents[i].system == DCGM_HEALTH_WATCH_NVLINK &&
                  hr->incidents[i].health == DCGM_HEALTH_RESULT_FAIL &&
                  hr->incidents[i].entityInfo.entityGroupId == DCGM_FE_GPU &&
                  hr->incidents[i].entityInfo.entityId == fake &&
                  strstr(hr->incidents[i].error.msg, "3") != NULL,
              "%s: incident %s", where, hr->incidents[i].error.msg);
    }
    CHECK(down == 1 && hr->overallHealth == DCGM_HEALTH_RESULT_FAIL,
          "%s: %u link-down incidents, overall %d", where, down, (int)hr->overallHealth);
    /* the GPU's cached MIG mode on: a Down link is what the driver reports
     * for MIG GPUs, so it is passed over; off again: it fails again */
    dcgmInjectFieldValue_t mig;
    memset(&mig, 0, sizeof mig);
    mig.version = dcgmInjectFieldValue_version1;
    mig.fieldId = 67; /* DCGM_FI_DEV_MIG_MODE */
    mig.fieldType = DCGM_FT_INT64;
    mig.ts = (int64_t)time(NULL) * 1000000;
    mig.value.i64 = 1;
    CHECK_RC(p_dcgmInjectFieldValue(h, fake, &mig), DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g, hr), DCGM_ST_OK);
    CHECK(hr->incidentCount == 0, "%s: %u incidents with MIG mode on", where, hr->incidentCount);
    mig.ts += 1000;
    mig.value.i64 = 0;
    CHECK_RC(p_dcgmInjectFieldValue(h, fake, &mig), DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g, hr), DCGM_ST_OK);
    CHECK(hr->incidentCount == 1 && hr->incidents[0].error.code == FR_NVLINK_DOWN,
          "%s: %u incidents with MIG mode off again", where, hr->incidentCount);
    /* back up: healthy again */
    CHECK_RC(set_link(h, DCGM_FE_GPU, fake, 3, DcgmNvLinkLinkStateUp), DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g, hr), DCGM_ST_OK);
    CHECK(hr->incidentCount == 0, "%s: %u incidents after link 3 came back", where,
          hr->incidentCount);
    /* a live GPU with all links up passes */
    dcgmGpuGrp_t g0 = 0;
    unsigned int gpu0 = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "nvlink0", &g0), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddDevice(h, g0, gpu0), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(h, g0, DCGM_HEALTH_WATCH_NVLINK), DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g0, hr), DCGM_ST_OK);
    down = 0;
    for (unsigned int i = 0; i < hr->incidentCount; i++)
        down += hr->incidents[i].error.code == FR_NVLINK_DOWN;
    CHECK(down == 0, "%s: live GPU 0 has %u link-down incidents", where, down);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g0), DCGM_ST_OK);

    /* fake NvSwitches: listed with every port Disabled; a set port keeps its state */
    dcgmCreateFakeEntities_t *cfe = calloc(1, sizeof *cfe);
    cfe->version = dcgmCreateFakeEntities_version2;
    cfe->numToCreate = 2;
    cfe->entityList[0].entity.entityGroupId = DCGM_FE_SWITCH;
    cfe->entityList[1].entity.entityGroupId = DCGM_FE_SWITCH;
    CHECK_RC(p_dcgmCreateFakeEntities(h, cfe), DCGM_ST_OK);
    unsigned int sw0 = cfe->entityList[0].entity.entityId, sw1 = cfe->entityList[1].entity.entityId;
    CHECK(sw0 != sw1, "%s: two switch ids", where);
    CHECK_RC(set_link(h, DCGM_FE_SWITCH, sw1, 7, DcgmNvLinkLinkStateUp), DCGM_ST_OK);
    CHECK_RC(set_link(h, DCGM_FE_SWITCH, sw1, DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH,
                      DcgmNvLinkLinkStateUp),
             DCGM_ST_BADPARAM);
    CHECK_RC(set_link(h, DCGM_FE_SWITCH, sw1 + 10, 7, DcgmNvLinkLinkStateUp), DCGM_ST_BADPARAM);
    st->version = dcgmNvLinkStatus_version5;
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, st), DCGM_ST_OK);
    CHECK(st->numNvSwitches == 2 && st->nvSwitches[0].entityId == sw0 &&
              st->nvSwitches[1].entityId == sw1,
          "%s: %u switches", where, st->numNvSwitches);
    CHECK(count_state(st->nvSwitches[0].linkState, DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH,
                      DcgmNvLinkLinkStateDisabled) == DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH,
          "%s: switch %u ports start disabled", where, sw0);
    CHECK(st->nvSwitches[1].linkState[7] == DcgmNvLinkLinkStateUp &&
              count_state(st->nvSwitches[1].linkState, DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH,
                          DcgmNvLinkLinkStateDisabled) == DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH - 1,
          "%s: switch %u port 7 up", where, sw1);
    st4->version = dcgmNvLinkStatus_version4;
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, (dcgmNvLinkStatus_v5 *)st4), DCGM_ST_OK);
    CHECK(st4->numNvSwitches == 2 && st4->nvSwitches[1].linkState[7] == DcgmNvLinkLinkStateUp,
          "%s: v4 switches", where);
    free(cfe);

    /* NvSwitch health: an SXID count in the last minute is an incident (fatal
     * FAIL, non-fatal WARN), and so is a port Down in the fatal check */
    dcgmGpuGrp_t gs = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "switches", &gs), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, gs, DCGM_FE_SWITCH, sw0), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(h, gs, DCGM_HEALTH_WATCH_NVSWITCH_FATAL |
                                         DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL),
             DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, gs, hr), DCGM_ST_OK);
    CHECK(hr->incidentCount == 0, "%s: %u switch incidents before errors", where,
          hr->incidentCount);
    dcgmInjectFieldValue_t sx;
    memset(&sx, 0, sizeof sx);
    sx.version = dcgmInjectFieldValue_version1;
    sx.fieldId = 856; /* DCGM_FI_DEV_SXID_FATAL_ERROR */
    sx.fieldType = DCGM_FT_INT64;
    sx.ts = ((int64_t)time(NULL) - 90) * 1000000; /* older than a minute: not counted */
    sx.value.i64 = 9;
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_SWITCH, sw0, &sx), DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, gs, hr), DCGM_ST_OK);
    CHECK(hr->incidentCount == 0, "%s: an old SXID gave %u incidents", where, hr->incidentCount);
    sx.ts = ((int64_t)time(NULL) - 1) * 1000000;
    sx.value.i64 = 5;
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_SWITCH, sw0, &sx), DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, gs, hr), DCGM_ST_OK);
    CHECK(hr->incidentCount == 1 && hr->incidents[0].entityInfo.entityGroupId == DCGM_FE_SWITCH &&
              hr->incidents[0].entityInfo.entityId == sw0 &&
              hr->incidents[0].system == DCGM_HEALTH_WATCH_NVSWITCH_FATAL &&
              hr->incidents[0].health == DCGM_HEALTH_RESULT_FAIL &&
              hr->incidents[0].error.code == 15,
          "%s: fatal SXID: %u incidents", where, hr->incidentCount);
    sx.fieldId = 857; /* DCGM_FI_DEV_SXID_NON_FATAL_ERROR */
    sx.value.i64 = 2;
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_SWITCH, sw0, &sx), DCGM_ST_OK);
    CHECK_RC(set_link(h, DCGM_FE_SWITCH, sw0, 5, DcgmNvLinkLinkStateDown), DCGM_ST_OK);
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, gs, hr), DCGM_ST_OK);
    unsigned int warn = 0, port_down = 0;
    for (unsigned int i = 0; i < hr->incidentCount; i++) {
        warn += hr->incidents[i].error.code == 16 &&
                hr->incidents[i].health == DCGM_HEALTH_RESULT_WARN &&
                hr->incidents[i].system == DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL;
        port_down += hr->incidents[i].error.code == FR_NVLINK_DOWN &&
                     hr->incidents[i].system == DCGM_HEALTH_WATCH_NVSWITCH_FATAL;
    }
    CHECK(hr->incidentCount == 3 && warn == 1 && port_down == 1 &&
              hr->overallHealth == DCGM_HEALTH_RESULT_FAIL,
          "%s: %u switch incidents, %u warnings, %u ports down", where, hr->incidentCount, warn,
          port_down);
    CHECK_RC(p_dcgmGroupDestroy(h, gs), DCGM_ST_OK);

    /* NvLink entities: a GPU's link by its packed id (group in bits 0-7, port in
     * 8-23, GPU in 24-31), valid while the GPU exists and the port is below 72 */
#define LINK_ID(type, owner, port) ((unsigned int)(type) | ((unsigned int)(port) << 8) | \
                                    ((unsigned int)(owner) << 24))
    dcgmGpuGrp_t gl = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "links", &gl), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, gl, DCGM_FE_LINK, LINK_ID(DCGM_FE_GPU, 0, 1)), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, gl, DCGM_FE_LINK, LINK_ID(DCGM_FE_GPU, 0, 20)), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, gl, DCGM_FE_LINK, LINK_ID(DCGM_FE_GPU, fake, 4)), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, gl, DCGM_FE_LINK, LINK_ID(DCGM_FE_GPU, 0, 72)),
             DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupAddEntity(h, gl, DCGM_FE_LINK, LINK_ID(DCGM_FE_GPU, 99, 1)),
             DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupAddEntity(h, gl, DCGM_FE_LINK, LINK_ID(DCGM_FE_CPU, 0, 1)),
             DCGM_ST_BADPARAM);
    unsigned short state_field = 1508; /* DCGM_FI_DEV_NVLINK_GET_STATE */
    dcgmFieldGrp_t fgl = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(h, 1, &state_field, "link_state", &fgl), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFields(h, gl, fgl, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    dcgmFieldValue_v1 lv;
    memset(&lv, 0, sizeof lv);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_LINK, (int)LINK_ID(DCGM_FE_GPU, 0, 1),
                                         &state_field, 1, &lv),
             DCGM_ST_OK);
    CHECK(lv.status == DCGM_ST_OK && lv.value.i64 == 1, "%s: GPU 0 link 1 state %lld (st %d)",
          where, (long long)lv.value.i64, lv.status);
    memset(&lv, 0, sizeof lv);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_LINK, (int)LINK_ID(DCGM_FE_GPU, 0, 20),
                                         &state_field, 1, &lv),
             DCGM_ST_OK);
    CHECK(lv.status != DCGM_ST_OK || lv.value.i64 >= DCGM_INT64_BLANK,
          "%s: GPU 0 has no link 20, read %lld", where, (long long)lv.value.i64);
    /* an injected value on a fake GPU's link is what a read gets */
    dcgmInjectFieldValue_t lj;
    memset(&lj, 0, sizeof lj);
    lj.version = dcgmInjectFieldValue_version1;
    lj.fieldId = state_field;
    lj.fieldType = DCGM_FT_INT64;
    lj.ts = (int64_t)time(NULL) * 1000000;
    lj.value.i64 = 1;
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_LINK, LINK_ID(DCGM_FE_GPU, fake, 4), &lj),
             DCGM_ST_OK);
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_LINK, LINK_ID(DCGM_FE_GPU, 99, 4), &lj),
             DCGM_ST_BADPARAM);
    memset(&lv, 0, sizeof lv);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_LINK, (int)LINK_ID(DCGM_FE_GPU, fake, 4),
                                         &state_field, 1, &lv),
             DCGM_ST_OK);
    CHECK(lv.status == DCGM_ST_OK && lv.value.i64 == 1, "%s: injected link state %lld", where,
          (long long)lv.value.i64);
    CHECK_RC(p_dcgmUnwatchFields(h, gl, fgl), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(h, fgl), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, gl), DCGM_ST_OK);

    free(hr);
    free(st4);
    free(st);
}

static void test_embedded(void) { run_embedded(scenario, DCGM_OPERATION_MODE_AUTO, run_script); }

static void test_hostengine(void) { run_through_hostengine(scenario, run_script); }

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "embedded", test_embedded },
        { "hostengine", test_hostengine },
    };
    const check_program program = {
        .only_env = "TEST_NVLINK_ONLY",
        .scenario_text = SCENARIO_TEXT,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
