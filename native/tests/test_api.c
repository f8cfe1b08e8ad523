/*
 * test_api.c -- exercises the simulated libdcgm.so.4 through its exported
 * ABI only, the way a DCGM client would: dlopen, dlsym, call.
 *
 * usage: test_api BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"

/* Starts a fresh embedded engine on the given scenario (NULL = default). */
static dcgmHandle_t start_engine(const char *scenario, dcgmOperationMode_t mode)
{
    if (scenario)
        setenv("DCGM_SIM_SCENARIO", scenario, 1);
    else
        unsetenv("DCGM_SIM_SCENARIO");
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(mode, &h), DCGM_ST_OK);
    CHECK(h == EMB, "handle %lu", (unsigned long)h);
    return h;
}

static void stop_engine(void)
{
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

static dcgmFieldGrp_t make_field_group(const char *name, const unsigned short *ids, int n)
{
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, n, ids, name, &fg), DCGM_ST_OK);
    return fg;
}

static char *write_scenario(const char *tag, const char *text)
{
    return write_scenario_as("test_api", tag, text);
}

/* ---- record collection through callbacks --------------------------------- */

#define MAX_RECS 4000

static int collect_entity(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                          dcgmFieldValue_v1 *values, int n, void *user)
{
    recs *r = user;
    recs_append(r, group, entity, values, n);
    if (r->reenter) {
        DcgmEntityStatus_t st;
        p_dcgmGetGpuStatus(r->reenter, 0, &st);
    }
    return recs_should_stop(r);
}

static int collect_gpu(unsigned int gpu, dcgmFieldValue_v1 *values, int n, void *user)
{
    return collect_entity(DCGM_FE_GPU, gpu, values, n, user);
}

static int is_int_blank(int64_t v) { return v >= DCGM_INT64_BLANK; }

/* ---- lifecycle ----------------------------------------------------------- */

static void test_lifecycle(void)
{
    dcgmHandle_t h = 123;
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    CHECK_RC(p_dcgmShutdown(), DCGM_ST_OK);
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &h), DCGM_ST_UNINITIALIZED);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_UNINITIALIZED);
    CHECK_RC(p_dcgmConnect("127.0.0.1", &h), DCGM_ST_UNINITIALIZED);
    CHECK_RC(p_dcgmDisconnect(5), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_UNINITIALIZED);

    CHECK_RC(p_dcgmInit(), DCGM_ST_OK);
    CHECK_RC(p_dcgmInit(), DCGM_ST_OK);
    CHECK_RC(p_dcgmStartEmbedded((dcgmOperationMode_t)3, &h), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_UNINITIALIZED);
    dcgmStartEmbeddedV2Params_v1 v2 = { 0 };
    v2.version = 0x01000047;
    v2.opMode = DCGM_OPERATION_MODE_AUTO;
    CHECK_RC(p_dcgmStartEmbedded_v2(&v2), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmStartEmbedded_v2(NULL), DCGM_ST_BADPARAM);

    start_engine(NULL, DCGM_OPERATION_MODE_AUTO);
    h = 99;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &h), DCGM_ST_OK);
    CHECK(h == 0, "second start wrote handle %lu, DCGM writes 0", (unsigned long)h);
    CHECK_RC(p_dcgmStopEmbedded(123), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetAllDevices(0, ids, &count), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetAllDevices(EMB, NULL, &count), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetAllDevices(42, ids, &count), DCGM_ST_CONNECTION_NOT_VALID);
    stop_engine();
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_UNINITIALIZED);
    /* what Python's destructors do after dcgmStopEmbedded */
    CHECK_RC(p_dcgmFieldGroupDestroy(0, 3), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupDestroy(0, 2), DCGM_ST_BADPARAM);

    v2.version = dcgmStartEmbeddedV2Params_version1;
    CHECK_RC(p_dcgmStartEmbedded_v2(&v2), DCGM_ST_OK);
    CHECK(v2.dcgmHandle == EMB, "v2 handle %lu", (unsigned long)v2.dcgmHandle);
    stop_engine();
    dcgmStartEmbeddedV2Params_v3 v3 = { 0 };
    v3.version = dcgmStartEmbeddedV2Params_version3;
    v3.opMode = DCGM_OPERATION_MODE_MANUAL;
    CHECK_RC(p_dcgmStartEmbedded_v2((dcgmStartEmbeddedV2Params_v1 *)&v3), DCGM_ST_OK);
    CHECK(v3.dcgmHandle == EMB, "v3 handle %lu", (unsigned long)v3.dcgmHandle);
    CHECK_RC(p_dcgmShutdown(), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_UNINITIALIZED);
    CHECK_RC(p_dcgmInit(), DCGM_ST_OK);

    dcgmVersionInfo_t vi = { .version = dcgmVersionInfo_version2 };
    CHECK_RC(p_dcgmVersionInfo(&vi), DCGM_ST_OK);
    CHECK(strstr(vi.rawBuildInfoString, "version:4.6.0") != NULL, "%s", vi.rawBuildInfoString);
    vi.version = 1;
    CHECK_RC(p_dcgmVersionInfo(&vi), DCGM_ST_VER_MISMATCH);
    char err[256];
    CHECK_RC(p_dcgmSimCheckScenario("/nonexistent/x.toml", err, sizeof err) != DCGM_ST_OK, 1);
    CHECK(err[0] != '\0', "no error text");
    CHECK_RC(p_dcgmSimCheckScenario("3", err, sizeof err), DCGM_ST_OK);
}

/* ---- devices ------------------------------------------------------------- */

static int is_blank_text(const char *s) { return s[0] == '\0' || strncmp(s, "<<<", 3) == 0; }

static void test_devices(void)
{
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    start_engine(NULL, DCGM_OPERATION_MODE_AUTO);
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_OK);
    CHECK(count == 8, "default node has %d GPUs", count);
    for (int i = 0; i < count; i++)
        CHECK(ids[i] == (unsigned)i, "gpu id %u at %d", ids[i], i);
    CHECK_RC(p_dcgmGetAllSupportedDevices(EMB, ids, &count), DCGM_ST_OK);
    CHECK(count == 8, "supported %d", count);
    DcgmEntityStatus_t st = DcgmEntityStatusUnknown;
    CHECK_RC(p_dcgmGetGpuStatus(EMB, 3, &st), DCGM_ST_OK);
    CHECK(st == DcgmEntityStatusOk, "status %d", st);
    CHECK_RC(p_dcgmGetGpuStatus(EMB, 99, &st), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetGpuStatus(EMB, 0, NULL), DCGM_ST_BADPARAM);

    dcgmDeviceAttributes_t *attr = calloc(1, sizeof *attr);
    attr->version = 0x03001463;
    CHECK_RC(p_dcgmGetDeviceAttributes(EMB, 0, attr), DCGM_ST_VER_MISMATCH);
    attr->version = dcgmDeviceAttributes_version3;
    /* an id no GPU has answers blanks, as DCGM's attribute read does */
    CHECK_RC(p_dcgmGetDeviceAttributes(EMB, 99, attr), DCGM_ST_OK);
    CHECK(is_blank_text(attr->identifiers.deviceName), "name '%s'", attr->identifiers.deviceName);
    CHECK(attr->powerLimits.defaultPowerLimit == DCGM_INT32_BLANK, "limit %u",
          attr->powerLimits.defaultPowerLimit);
    CHECK_RC(p_dcgmGetDeviceAttributes(EMB, 0, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetDeviceAttributes(EMB, 1, attr), DCGM_ST_OK);
    const dcgmDeviceIdentifiers_v1 *id = &attr->identifiers;
    CHECK(!is_blank_text(id->deviceName), "name '%s'", id->deviceName);
    CHECK(strncmp(id->uuid, "GPU-", 4) == 0, "uuid '%s'", id->uuid);
    CHECK(!is_blank_text(id->pciBusId), "pci '%s'", id->pciBusId);
    CHECK(!is_blank_text(id->serial), "serial '%s'", id->serial);
    CHECK(!is_blank_text(id->driverVersion), "driver '%s'", id->driverVersion);
    const dcgmDevicePowerLimits_v1 *pl = &attr->powerLimits;
    CHECK(pl->defaultPowerLimit > 50 && pl->defaultPowerLimit < 2000, "default %u",
          pl->defaultPowerLimit);
    CHECK(pl->minPowerLimit <= pl->maxPowerLimit && pl->maxPowerLimit < 2000, "min %u max %u",
          pl->minPowerLimit, pl->maxPowerLimit);
    CHECK(attr->thermalSettings.slowdownTemp > 50 && attr->thermalSettings.slowdownTemp < 120,
          "slowdown %u", attr->thermalSettings.slowdownTemp);
    char uuid0[256];
    attr->version = dcgmDeviceAttributes_version3;
    CHECK_RC(p_dcgmGetDeviceAttributes(EMB, 0, attr), DCGM_ST_OK);
    snprintf(uuid0, sizeof uuid0, "%s", attr->identifiers.uuid);
    attr->version = dcgmDeviceAttributes_version3;
    CHECK_RC(p_dcgmGetDeviceAttributes(EMB, 1, attr), DCGM_ST_OK);
    CHECK(strcmp(uuid0, attr->identifiers.uuid) != 0, "GPUs 0 and 1 share uuid %s", uuid0);
    free(attr);

    dcgm_field_eid_t ents[16];
    int n = 2;
    CHECK_RC(p_dcgmGetEntityGroupEntities(EMB, DCGM_FE_GPU, ents, &n, 0),
             DCGM_ST_INSUFFICIENT_SIZE);
    CHECK(n == 8, "needed %d", n);
    n = 16;
    CHECK_RC(p_dcgmGetEntityGroupEntities(EMB, DCGM_FE_GPU, ents, &n, 0), DCGM_ST_OK);
    CHECK(n == 8, "got %d", n);

    dcgmHostengineHealth_t hh = { .version = dcgmHostengineHealth_version1, .overallHealth = 7 };
    CHECK_RC(p_dcgmHostengineIsHealthy(EMB, &hh), DCGM_ST_OK);
    CHECK(hh.overallHealth == 0, "health %u", hh.overallHealth);

    dcgmProfGetMetricGroups_t *mg = calloc(1, sizeof *mg);
    mg->version = 1;
    CHECK_RC(p_dcgmProfGetSupportedMetricGroups(EMB, mg), DCGM_ST_VER_MISMATCH);
    mg->version = dcgmProfGetMetricGroups_version3;
    CHECK_RC(p_dcgmProfGetSupportedMetricGroups(EMB, mg), DCGM_ST_OK);
    CHECK(mg->numMetricGroups >= 1, "groups %u", mg->numMetricGroups);
    for (unsigned g = 0; g < mg->numMetricGroups; g++)
        for (unsigned k = 0; k < mg->metricGroups[g].numFieldIds; k++)
            CHECK(mg->metricGroups[g].fieldIds[k] >= 1001 &&
                  mg->metricGroups[g].fieldIds[k] <= 1099, "dcp id %u",
                  mg->metricGroups[g].fieldIds[k]);
    free(mg);
    stop_engine();

    start_engine("3", DCGM_OPERATION_MODE_AUTO);
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_OK);
    CHECK(count == 3, "DCGM_SIM_SCENARIO=3 gave %d GPUs", count);
    stop_engine();
}

/* ---- groups and field groups --------------------------------------------- */

static int distinct_fields(unsigned short *out, int want)
{
    int n = 0;
    for (unsigned id = 1; id < 1600 && n < want; id++)
        if (p_DcgmFieldGetById((unsigned short)id))
            out[n++] = (unsigned short)id;
    return n;
}

static void test_groups(void)
{
    start_engine(NULL, DCGM_OPERATION_MODE_AUTO);
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_EMPTY, "g", NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_EMPTY, NULL, &g), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_EMPTY, "g", &g), DCGM_ST_OK);
    CHECK(g >= 2, "first user group id %lu", (unsigned long)g);
    CHECK_RC(p_dcgmGroupAddDevice(EMB, g, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddDevice(EMB, g, 0), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupAddDevice(EMB, g, 99), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupAddEntity(EMB, g, DCGM_FE_GPU, 5), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddDevice(EMB, 60, 0), DCGM_ST_NOT_CONFIGURED);
    dcgmGroupInfo_t *info = calloc(1, sizeof *info);
    info->version = 0x02000308;
    CHECK_RC(p_dcgmGroupGetInfo(EMB, g, info), DCGM_ST_VER_MISMATCH);
    info->version = dcgmGroupInfo_version3;
    CHECK_RC(p_dcgmGroupGetInfo(EMB, g, info), DCGM_ST_OK);
    CHECK(info->count == 2 && strcmp(info->groupName, "g") == 0, "count %u name %s",
          info->count, info->groupName);
    CHECK(info->entityList[1].entityGroupId == DCGM_FE_GPU && info->entityList[1].entityId == 5,
          "second member %u/%u", info->entityList[1].entityGroupId, info->entityList[1].entityId);
    /* ctypes hands the id over as a C int: only the low 32 bits are real */
    CHECK_RC(p_dcgmGroupGetInfo(EMB, (dcgmGpuGrp_t)0xdead00007fffffffull, info), DCGM_ST_OK);
    CHECK(info->count == 8, "all-GPUs group has %u", info->count);
    CHECK_RC(p_dcgmGroupRemoveEntity(EMB, g, DCGM_FE_GPU, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupRemoveEntity(EMB, g, DCGM_FE_GPU, 0), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupDestroy(EMB, g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(EMB, g), DCGM_ST_NOT_CONFIGURED);
    CHECK_RC(p_dcgmGroupGetInfo(EMB, g, info), DCGM_ST_NOT_CONFIGURED);
    dcgmGpuGrp_t all[64];
    int made = 0;
    while (made < 64 && p_dcgmGroupCreate(EMB, DCGM_GROUP_DEFAULT, "x", &all[made]) == DCGM_ST_OK)
        made++;
    CHECK(made == 62, "made %d groups before MAX_LIMIT", made);
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_DEFAULT, "x", &g), DCGM_ST_MAX_LIMIT);
    info->version = dcgmGroupInfo_version3;
    CHECK_RC(p_dcgmGroupGetInfo(EMB, all[0], info), DCGM_ST_OK);
    CHECK(info->count == 8, "default group has %u", info->count);
    for (int i = 0; i < made; i++)
        CHECK_RC(p_dcgmGroupDestroy(EMB, all[i]), DCGM_ST_OK);

    /* ids only grow, as DCGM's sequence: a new group never takes a deleted one's id */
    dcgmGpuGrp_t again = 0;
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_EMPTY, "again", &again), DCGM_ST_OK);
    CHECK(again > all[made - 1] && again > g, "new id %lu after %lu", (unsigned long)again,
          (unsigned long)all[made - 1]);
    CHECK_RC(p_dcgmGroupGetInfo(EMB, all[0], info), DCGM_ST_NOT_CONFIGURED);
    /* every id, DCGM's own two included, ascending */
    dcgmGpuGrp_t listed[DCGM_MAX_NUM_GROUPS];
    unsigned int n_listed = 0;
    CHECK_RC(p_dcgmGroupGetAllIds(EMB, listed, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupGetAllIds(EMB, listed, &n_listed), DCGM_ST_OK);
    CHECK(n_listed == 3 && listed[0] == 0 && listed[1] == 1 && listed[2] == again,
          "ids: %u listed, last %lu", n_listed, (unsigned long)(n_listed ? listed[n_listed - 1] : 0));
    /* RemoveDevice is RemoveEntity for a GPU */
    CHECK_RC(p_dcgmGroupAddDevice(EMB, again, 3), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupRemoveDevice(EMB, again, 3), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupRemoveDevice(EMB, again, 3), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGroupDestroy(EMB, again), DCGM_ST_OK);
    free(info);

    unsigned short ids[130];
    CHECK(distinct_fields(ids, 128) == 128, "not enough fields with metadata");
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 128, ids, "too-many", &fg), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 0, ids, "none", &fg), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 127, ids, "", &fg), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 127, NULL, "n", &fg), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 127, ids, "max", &fg), DCGM_ST_OK);
    CHECK(fg >= 3, "first user field group id %lu", (unsigned long)fg);
    unsigned short unknown[2] = { 150, 0 };
    CHECK(p_DcgmFieldGetById(0) == NULL, "field 0 has metadata");
    dcgmFieldGrp_t fg2 = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 2, unknown, "unknown", &fg2), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 1, ids, "max", &fg2), DCGM_ST_DUPLICATE_KEY);

    dcgmFieldGroupInfo_t fi = { 0 };
    fi.version = dcgmFieldGroupInfo_version1;
    fi.fieldGroupId = fg;
    CHECK_RC(p_dcgmFieldGroupGetInfo(EMB, &fi), DCGM_ST_OK);
    CHECK(fi.numFieldIds == 127 && strcmp(fi.fieldGroupName, "max") == 0 &&
          fi.fieldIds[126] == ids[126], "info %u %s", fi.numFieldIds, fi.fieldGroupName);
    fi.version = 7;
    CHECK_RC(p_dcgmFieldGroupGetInfo(EMB, &fi), DCGM_ST_VER_MISMATCH);

    dcgmAllFieldGroup_t *allfg = calloc(1, sizeof *allfg);
    allfg->version = dcgmAllFieldGroup_version1;
    CHECK_RC(p_dcgmFieldGroupGetAll(EMB, allfg), DCGM_ST_OK);
    CHECK(allfg->numFieldGroups == 4, "field groups %u", allfg->numFieldGroups);
    CHECK(strcmp(allfg->fieldGroups[0].fieldGroupName, "DCGM_INTERNAL_30SEC") == 0 &&
          allfg->fieldGroups[0].fieldGroupId == 0, "first %s",
          allfg->fieldGroups[0].fieldGroupName);
    CHECK(allfg->fieldGroups[3].fieldGroupId == fg, "user group id %lu",
          (unsigned long)allfg->fieldGroups[3].fieldGroupId);
    allfg->version = 0x01008407;
    CHECK_RC(p_dcgmFieldGroupGetAll(EMB, allfg), DCGM_ST_VER_MISMATCH);
    free(allfg);
    int fmade = 0;
    dcgmFieldGrp_t fgs[64];
    char name[32];
    for (;;) {
        snprintf(name, sizeof name, "fg%d", fmade);
        if (p_dcgmFieldGroupCreate(EMB, 1, ids, name, &fgs[fmade]) != DCGM_ST_OK)
            break;
        fmade++;
    }
    CHECK(fmade == 60, "made %d more field groups (64 in all)", fmade);
    for (int i = 0; i < fmade; i++)
        CHECK_RC(p_dcgmFieldGroupDestroy(EMB, fgs[i]), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(EMB, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(EMB, fg), DCGM_ST_NO_DATA);
    CHECK_RC(p_dcgmFieldGroupDestroy(EMB, 0), DCGM_ST_NO_PERMISSION);   /* DCGM's own */
    fi.version = dcgmFieldGroupInfo_version1;
    fi.fieldGroupId = fg;
    CHECK_RC(p_dcgmFieldGroupGetInfo(EMB, &fi), DCGM_ST_NO_DATA);   /* deleted: NO_DATA, as DCGM */
    /* field group ids only grow too */
    dcgmFieldGrp_t fg_again = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 1, ids, "again", &fg_again), DCGM_ST_OK);
    CHECK(fg_again > fg, "field group id %lu after %lu", (unsigned long)fg_again, (unsigned long)fg);
    CHECK_RC(p_dcgmFieldGroupDestroy(EMB, fg_again), DCGM_ST_OK);
    stop_engine();
}

/* ---- AUTO sampling and the values-since cursor --------------------------- */

#define F_TEMP 150
#define F_POWER 155
#define F_UTIL 203
#define F_DRIVER 1

typedef struct series_check {
    int64_t last_ts[DCGM_MAX_NUM_DEVICES][4];
    int samples[DCGM_MAX_NUM_DEVICES][4];
    int max_gap_us;
    int min_gap_us;
} series_check;

static int field_slot(unsigned short f)
{
    return f == F_TEMP ? 0 : f == F_POWER ? 1 : f == F_UTIL ? 2 : 3;
}

static void check_page(series_check *sc, const recs *r, long long since, long long next)
{
    for (int i = 0; i < r->count; i++) {
        const rec *x = &r->items[i];
        CHECK(x->group == DCGM_FE_GPU && x->entity < 8, "entity %u/%u", x->group, x->entity);
        if (x->entity >= 8)
            continue;
        int slot = field_slot(x->v.fieldId);
        if (x->v.status == DCGM_ST_NO_DATA) {
            CHECK(x->v.ts == 0, "NO_DATA record with ts %lld", (long long)x->v.ts);
            continue;
        }
        CHECK(x->v.status == DCGM_ST_OK, "status %d", x->v.status);
        CHECK(x->v.ts >= since && x->v.ts < next, "ts %lld outside [%lld, %lld)",
              (long long)x->v.ts, since, next);
        int64_t prev = sc->last_ts[x->entity][slot];
        CHECK(x->v.ts > prev, "series %u/%u not increasing: %lld after %lld", x->entity,
              x->v.fieldId, (long long)x->v.ts, (long long)prev);
        if (prev) {
            int gap = (int)(x->v.ts - prev);
            if (gap > sc->max_gap_us)
                sc->max_gap_us = gap;
            if (gap < sc->min_gap_us)
                sc->min_gap_us = gap;
        }
        sc->last_ts[x->entity][slot] = x->v.ts;
        sc->samples[x->entity][slot]++;
    }
}

static void test_auto_sampling(void)
{
    start_engine(NULL, DCGM_OPERATION_MODE_AUTO);
    unsigned short fields[4] = { F_TEMP, F_POWER, F_UTIL, F_DRIVER };
    dcgmFieldGrp_t watch_fg = make_field_group("watch", fields, 4);
    dcgmFieldGrp_t read_fg = make_field_group("read", fields, 4);
    CHECK_RC(p_dcgmWatchFields(EMB, 0, watch_fg, 100000, 60.0, 0), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmWatchFields(EMB, (dcgmGpuGrp_t)DCGM_GROUP_ALL_GPUS, watch_fg, 100000, 60.0, 0),
             DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);

    long long t0 = 0;
    CHECK_RC(p_dcgmSimGetStartTime(&t0), DCGM_ST_OK);
    series_check sc;
    memset(&sc, 0, sizeof sc);
    sc.min_gap_us = 1 << 30;
    recs *r = recs_new(MAX_RECS);
    long long cursor = 0, next = 0;
    int64_t begin = mono_ms();
    int pages = 0;
    while (mono_ms() - begin < 2000) {
        r->count = 0;
        CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, cursor, &next,
                                         collect_entity, r), DCGM_ST_OK);
        CHECK(next > cursor, "cursor did not move: %lld -> %lld", cursor, next);
        CHECK(r->count >= 32, "only %d records in a page", r->count);
        check_page(&sc, r, cursor, next);
        cursor = next;
        pages++;
        sleep_ms(130 + (pages % 3) * 70);
    }
    for (int g = 0; g < 8; g++)
        for (int f = 0; f < 4; f++)
            CHECK(sc.samples[g][f] >= 15 && sc.samples[g][f] <= 23,
                  "gpu %d field slot %d has %d samples over ~2 s at 100 ms", g, f,
                  sc.samples[g][f]);
    CHECK(sc.min_gap_us >= 100000, "samples closer than the watch interval: %d us", sc.min_gap_us);
    /* a late pass stretches a gap; a missed one would double it */
    CHECK(sc.max_gap_us < 200000, "gap of %d us in a 100 ms series", sc.max_gap_us);

    /* a stored sample is the node's value at its time: same seed, same value */
    const rec *last = NULL;
    for (int i = 0; i < r->count; i++)
        if (r->items[i].v.fieldId == F_POWER && r->items[i].v.status == DCGM_ST_OK)
            last = &r->items[i];
    if (last) {
        dcgmFieldValue_v1 again;
        CHECK_RC(p_dcgmSimGetValueAt(last->entity, F_POWER, last->v.ts - t0, &again),
                 DCGM_ST_OK);
        CHECK(again.value.dbl == last->v.value.dbl, "stored %f, node says %f",
              last->v.value.dbl, again.value.dbl);
    }

    /* reading straight after a read: nothing new is one NO_DATA per series */
    int saw_no_data = 0;
    for (int attempt = 0; attempt < 5 && !saw_no_data; attempt++) {
        r->count = 0;
        CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, cursor, &next,
                                         collect_entity, r), DCGM_ST_OK);
        check_page(&sc, r, cursor, next);
        cursor = next;
        r->count = 0;
        CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, cursor, &next,
                                         collect_entity, r), DCGM_ST_OK);
        int no_data = 0;
        for (int i = 0; i < r->count; i++)
            no_data += r->items[i].v.status == DCGM_ST_NO_DATA;
        if (r->count == 32 && no_data == 32)
            saw_no_data = 1;
        check_page(&sc, r, cursor, next);
        cursor = next;
    }
    CHECK(saw_no_data, "never saw a page of 32 NO_DATA records");

    /* a callback that stops: OK, cursor not advanced; one that re-enters */
    r->count = 0;
    r->stop_after = 3;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, 0, &next,
                                     collect_entity, r), DCGM_ST_OK);
    CHECK(r->count == 3 && next == 0, "stopped read gave %d records, cursor %lld", r->count,
          next);
    r->stop_after = 0;
    r->reenter = EMB;
    r->count = 0;
    CHECK_RC(p_dcgmGetLatestValues_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, collect_entity, r),
             DCGM_ST_OK);
    r->reenter = 0;
    CHECK(r->count == 32, "latest gave %d records", r->count);
    for (int i = 0; i < r->count; i++) {
        CHECK(r->items[i].v.status == DCGM_ST_OK, "latest status %d", r->items[i].v.status);
        CHECK(r->items[i].v.version == dcgmFieldValue_version1, "version %x",
              r->items[i].v.version);
        if (i > 0)
            CHECK(r->items[i].entity >= r->items[i - 1].entity, "not entity-major");
    }
    const rec *drv = NULL;
    for (int i = 0; i < r->count; i++)
        if (r->items[i].v.fieldId == F_DRIVER)
            drv = &r->items[i];
    CHECK(drv && drv->v.fieldType == 's' && !is_blank_text(drv->v.value.str),
          "global driver version served per GPU");

    r->count = 0;
    CHECK_RC(p_dcgmGetLatestValues(EMB, DCGM_GROUP_ALL_GPUS, read_fg, collect_gpu, r),
             DCGM_ST_OK);
    CHECK(r->count == 32, "v1 latest gave %d", r->count);
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince(EMB, DCGM_GROUP_ALL_GPUS, read_fg, 0, &next, collect_gpu, r),
             DCGM_ST_OK);
    CHECK(r->count > 32, "v1 since gave %d", r->count);
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, 0, NULL, collect_entity,
                                     r), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, 0, &next, NULL, r),
             DCGM_ST_BADPARAM);

    /* an unwatched field: a NOT_WATCHED record, and values-since fails */
    unsigned short other[2] = { F_TEMP, 156 };
    dcgmFieldGrp_t other_fg = make_field_group("other", other, 2);
    r->count = 0;
    CHECK_RC(p_dcgmGetLatestValues_v2(EMB, DCGM_GROUP_ALL_GPUS, other_fg, collect_entity, r),
             DCGM_ST_OK);
    CHECK(r->count == 16, "records %d", r->count);
    CHECK(r->items[1].v.fieldId == 156 && r->items[1].v.status == DCGM_ST_NOT_WATCHED &&
          r->items[1].v.ts == 0 && is_int_blank(r->items[1].v.value.i64),
          "unwatched record status %d ts %lld", r->items[1].v.status,
          (long long)r->items[1].v.ts);
    next = 5;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, other_fg, 1234, &next,
                                     collect_entity, r), DCGM_ST_NOT_WATCHED);
    CHECK(next == 1234, "cursor after NOT_WATCHED %lld", next);

    unsigned short asked[3] = { F_TEMP, 0, F_DRIVER };
    dcgmFieldValue_v1 vals[3];
    CHECK_RC(p_dcgmEntityGetLatestValues(EMB, DCGM_FE_GPU, 2, asked, 3, vals), DCGM_ST_OK);
    CHECK(vals[0].status == DCGM_ST_OK && vals[0].fieldId == F_TEMP, "temp status %d",
          vals[0].status);
    CHECK(vals[1].status == DCGM_ST_UNKNOWN_FIELD, "unknown field status %d", vals[1].status);
    CHECK(vals[2].status == DCGM_ST_OK && vals[2].fieldType == 's', "driver %d", vals[2].status);
    CHECK_RC(p_dcgmEntityGetLatestValues(EMB, DCGM_FE_GPU, 77, asked, 3, vals), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmEntityGetLatestValues(EMB, DCGM_FE_GPU, 2, asked, 129, vals),
             DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 2, asked, 1, vals), DCGM_ST_OK);

    dcgmGroupEntityPair_t pairs[2] = { { DCGM_FE_GPU, 0 }, { DCGM_FE_GPU, 7 } };
    dcgmFieldValue_v2 *v2 = calloc(4, sizeof *v2);
    CHECK_RC(p_dcgmEntitiesGetLatestValues(EMB, pairs, 2, other, 2, 0, v2), DCGM_ST_OK);
    CHECK(v2[2].entityId == 7 && v2[2].fieldId == F_TEMP && v2[2].status == DCGM_ST_OK &&
          v2[3].status == DCGM_ST_NOT_WATCHED, "v2 records %u %u %d %d", v2[2].entityId,
          v2[2].fieldId, v2[2].status, v2[3].status);
    CHECK_RC(p_dcgmEntitiesGetLatestValues(EMB, pairs, 2, other, 2, DCGM_FV_FLAG_LIVE_DATA, v2),
             DCGM_ST_OK);
    CHECK(v2[3].status == DCGM_ST_OK && v2[3].ts > 0, "live read of unwatched field %d",
          v2[3].status);
    free(v2);

    /* unwatch through the other field group: the watch goes away */
    CHECK_RC(p_dcgmUnwatchFields(EMB, DCGM_GROUP_ALL_GPUS, read_fg), DCGM_ST_OK);
    r->count = 0;
    CHECK_RC(p_dcgmGetLatestValues_v2(EMB, DCGM_GROUP_ALL_GPUS, read_fg, collect_entity, r),
             DCGM_ST_OK);
    CHECK(r->count == 32 && r->items[0].v.status == DCGM_ST_NOT_WATCHED, "after unwatch %d",
          r->count ? r->items[0].v.status : 0);
    recs_free(r);
    stop_engine();
}

/* ---- retention, NOT_SUPPORTED, injection --------------------------------- */

static int is_not_supported(const dcgmFieldValue_v1 *v)
{
    if (v->fieldType == 'i')
        return v->value.i64 == DCGM_INT64_NOT_SUPPORTED;
    if (v->fieldType == 'd')
        return v->value.dbl == DCGM_FP64_NOT_SUPPORTED;
    return 0;
}

static void test_cache(void)
{
    start_engine(NULL, DCGM_OPERATION_MODE_AUTO);
    CHECK_RC(p_dcgmWatchFieldValue(EMB, 0, 204, 100000, 1.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFieldValue(EMB, 99, 204, 100000, 1.0, 0), DCGM_ST_BADPARAM);
    sleep_ms(2500);
    dcgmFieldValue_v1 *vals = calloc(100, sizeof *vals);
    int count = 100;
    CHECK_RC(p_dcgmGetMultipleValuesForField(EMB, 0, 204, &count, 0, 0, DCGM_ORDER_ASCENDING,
                                             vals), DCGM_ST_OK);
    int64_t age = wall_us() - vals[0].ts;
    CHECK(count >= 8 && count <= 13, "retained %d samples with 1 s retention", count);
    CHECK(age <= 1200000, "oldest retained sample is %lld us old", (long long)age);
    count = 3;
    CHECK_RC(p_dcgmGetMultipleValuesForField(EMB, 0, 204, &count, 0, 0, DCGM_ORDER_DESCENDING,
                                             vals), DCGM_ST_OK);
    CHECK(count == 3 && vals[0].ts > vals[1].ts, "descending %d", count);
    count = 3;
    CHECK_RC(p_dcgmGetMultipleValuesForField(EMB, 0, 156, &count, 0, 0, DCGM_ORDER_ASCENDING,
                                             vals), DCGM_ST_NOT_WATCHED);
    CHECK_RC(p_dcgmUnwatchFieldValue(EMB, 0, 204, 1), DCGM_ST_OK);

    /* a field this model lacks: stored with status OK and the sentinel */
    unsigned short lacking = 0;
    for (unsigned f = 100; f < 1100 && !lacking; f++) {
        dcgm_field_meta_p meta = p_DcgmFieldGetById((unsigned short)f);
        if (!meta || (meta->fieldType != 'i' && meta->fieldType != 'd') ||
            meta->scope == DCGM_FS_GLOBAL || (f >= 220 && f <= 240))
            continue;
        dcgmFieldValue_v1 v;
        if (p_dcgmSimGetValueAt(0, (unsigned short)f, 1000000, &v) == DCGM_ST_OK &&
            is_not_supported(&v))
            lacking = (unsigned short)f;
    }
    CHECK(lacking != 0, "no unsupported field found on GPU 0");
    if (lacking) {
        CHECK_RC(p_dcgmWatchFieldValue(EMB, 0, lacking, 100000, 10.0, 0), DCGM_ST_OK);
        dcgmFieldValue_v1 v;
        CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 0, &lacking, 1, &v), DCGM_ST_OK);
        CHECK(v.status == DCGM_ST_OK && is_not_supported(&v) && v.ts > 0,
              "field %u: status %d", lacking, v.status);
    }

    /* injection: fake GPU and an unwatched field of a real one */
    dcgmCreateFakeEntities_t *fake = calloc(1, sizeof *fake);
    fake->version = dcgmCreateFakeEntities_version2;
    fake->numToCreate = 1;
    fake->entityList[0].entity.entityGroupId = DCGM_FE_GPU;
    CHECK_RC(p_dcgmCreateFakeEntities(EMB, fake), DCGM_ST_OK);
    unsigned int fake_gpu = fake->entityList[0].entity.entityId;
    CHECK(fake_gpu == 8, "fake GPU id %u", fake_gpu);
    free(fake);
    DcgmEntityStatus_t st;
    CHECK_RC(p_dcgmGetGpuStatus(EMB, fake_gpu, &st), DCGM_ST_OK);
    CHECK(st == DcgmEntityStatusFake, "fake status %d", st);
    dcgmInjectFieldValue_t inj;
    memset(&inj, 0, sizeof inj);
    inj.version = dcgmInjectFieldValue_version1;
    inj.fieldId = F_TEMP;
    inj.fieldType = 'i';
    inj.ts = wall_us() - 5000;
    inj.value.i64 = 77;
    CHECK_RC(p_dcgmInjectFieldValue(EMB, fake_gpu, &inj), DCGM_ST_OK);
    dcgmFieldValue_v1 v;
    unsigned short temp = F_TEMP;
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, (int)fake_gpu, &temp, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.value.i64 == 77 && v.ts == inj.ts,
          "injected read back status %d value %lld", v.status, (long long)v.value.i64);
    inj.fieldType = 'd';
    CHECK_RC(p_dcgmInjectFieldValue(EMB, fake_gpu, &inj), DCGM_ST_BADPARAM);
    inj.fieldType = 'i';
    inj.version = 1;
    CHECK_RC(p_dcgmInjectFieldValue(EMB, fake_gpu, &inj), DCGM_ST_VER_MISMATCH);
    inj.version = dcgmInjectFieldValue_version1;
    CHECK_RC(p_dcgmInjectFieldValue(EMB, 99, &inj), DCGM_ST_BADPARAM);
    /* a global field has one series: injected through any entity, read through any */
    dcgmInjectFieldValue_t quantity = inj;
    quantity.fieldId = 4; /* DCGM_FI_SYSTEM_GPU_QUANTITY */
    quantity.value.i64 = 8;
    CHECK_RC(p_dcgmInjectEntityFieldValue(EMB, DCGM_FE_NONE, 5, &quantity), DCGM_ST_OK);
    unsigned short quantity_id = 4;
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 0, &quantity_id, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.value.i64 == 8 && v.ts == quantity.ts,
          "global field injected through entity 5: status %d value %lld", v.status,
          (long long)v.value.i64);
    inj.fieldId = 155;
    inj.fieldType = 'd';
    inj.value.dbl = 123.5;
    CHECK_RC(p_dcgmInjectEntityFieldValue(EMB, DCGM_FE_GPU, 3, &inj), DCGM_ST_OK);
    unsigned short power = 155;
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 3, &power, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.value.dbl == 123.5, "injected unwatched %d", v.status);
    CHECK_RC(p_dcgmEmptyCache(EMB), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 3, &power, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_NOT_WATCHED, "after EmptyCache %d", v.status);

    /* a value injected into a watched series with a future timestamp stays last: the
     * series is kept in timestamp order, the samples taken meanwhile go before it */
    CHECK_RC(p_dcgmWatchFieldValue(EMB, 1, F_TEMP, 100000, 30.0, 0), DCGM_ST_OK);
    inj.fieldId = F_TEMP;
    inj.fieldType = 'i';
    inj.value.i64 = 99;
    inj.ts = wall_us() + 10000000;
    CHECK_RC(p_dcgmInjectFieldValue(EMB, 1, &inj), DCGM_ST_OK);
    sleep_ms(450);
    count = 100;
    CHECK_RC(p_dcgmGetMultipleValuesForField(EMB, 1, F_TEMP, &count, 0, 0, DCGM_ORDER_ASCENDING,
                                             vals), DCGM_ST_OK);
    CHECK(count >= 4 && vals[count - 1].ts == inj.ts && vals[count - 1].value.i64 == 99,
          "%d samples, last at %lld (injected at %lld)", count, (long long)vals[count - 1].ts,
          (long long)inj.ts);
    for (int i = 1; i < count; i++)
        CHECK(vals[i].ts > vals[i - 1].ts, "sample %d at %lld after %lld", i, (long long)vals[i].ts,
              (long long)vals[i - 1].ts);
    CHECK(count < 2 || vals[count - 2].ts < wall_us(), "a sample taken now stamped %lld",
          (long long)vals[count - 2].ts);
    CHECK_RC(p_dcgmUnwatchFieldValue(EMB, 1, F_TEMP, 1), DCGM_ST_OK);
    free(vals);
    stop_engine();
}

/* ---- status lists (caller side, as DCGM's) ------------------------------- */

static void test_status(void)
{
    dcgmStatus_t st = 0;
    CHECK_RC(p_dcgmStatusCreate(NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmStatusCreate(&st), DCGM_ST_OK);
    CHECK(st != 0, "status handle %lu", (unsigned long)st);
    unsigned int n = 99;
    CHECK_RC(p_dcgmStatusGetCount(st, &n), DCGM_ST_OK);
    CHECK(n == 0, "fresh list holds %u", n);
    dcgmErrorInfo_t err;
    CHECK_RC(p_dcgmStatusPopError(st, &err), DCGM_ST_NO_DATA);
    CHECK_RC(p_dcgmStatusPopError(st, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmStatusClear(st), DCGM_ST_OK);
    CHECK_RC(p_dcgmStatusGetCount(0, &n), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmStatusClear(0), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmStatusDestroy(st), DCGM_ST_OK);
    CHECK_RC(p_dcgmStatusDestroy(0), DCGM_ST_BADPARAM);
}

/* ---- MANUAL mode --------------------------------------------------------- */

static void test_manual(void)
{
    start_engine("2", DCGM_OPERATION_MODE_MANUAL);
    unsigned short fields[2] = { F_TEMP, F_POWER };
    dcgmFieldGrp_t fg = make_field_group("m", fields, 2);
    CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, fg, 100000, 60.0, 0), DCGM_ST_OK);
    sleep_ms(300);
    recs *r = recs_new(MAX_RECS);
    CHECK_RC(p_dcgmGetLatestValues_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, collect_entity, r),
             DCGM_ST_OK);
    CHECK(r->count == 4, "records %d", r->count);
    /* the watch request itself ran one pass, as DCGM 4.6 does */
    for (int i = 0; i < r->count; i++)
        CHECK(r->items[i].v.status == DCGM_ST_OK, "no sample at watch time: %d",
              r->items[i].v.status);
    long long next = 0;
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, 0, &next, collect_entity, r),
             DCGM_ST_OK);
    CHECK(r->count == 4 && r->items[0].v.status == DCGM_ST_OK, "since %d", r->count);
    /* nothing more on its own: MANUAL mode waits for dcgmUpdateAllFields */
    sleep_ms(300);
    long long cursor = next;
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, cursor, &next, collect_entity,
                                     r), DCGM_ST_OK);
    CHECK(r->count == 4 && r->items[0].v.status == DCGM_ST_NO_DATA, "MANUAL sampled on its own");
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    cursor = next;
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, cursor, &next, collect_entity,
                                     r), DCGM_ST_OK);
    CHECK(r->count == 4, "after update %d", r->count);
    for (int i = 0; i < r->count; i++)
        CHECK(r->items[i].v.status == DCGM_ST_OK && r->items[i].v.ts == r->items[0].v.ts,
              "one pass, one timestamp: %d %lld", r->items[i].v.status,
              (long long)r->items[i].v.ts);
    /* not due yet: a second pass at once adds nothing */
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    cursor = next;
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, cursor, &next, collect_entity,
                                     r), DCGM_ST_OK);
    CHECK(r->count == 4 && r->items[0].v.status == DCGM_ST_NO_DATA, "early pass sampled");
    sleep_ms(120);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 0), DCGM_ST_OK);
    cursor = next;
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, cursor, &next, collect_entity,
                                     r), DCGM_ST_OK);
    CHECK(r->count == 4 && r->items[0].v.status == DCGM_ST_OK, "due pass did not sample");
    recs_free(r);
    stop_engine();
}

/* ---- scenarios: XID, lost GPU, MIG, health -------------------------------- */

static const char xid_scenario[] =
    "seed = 5\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 2\nworkload = \"training\"\n"
    "[[event]]\nat = 0.8\ngpu = 0\nkind = \"xid\"\nxid = 13\ncount = 3\ninterval = 0.1\n"
    "[[event]]\nat = 2.0\ngpu = 1\nkind = \"xid\"\nxid = 48\n";

static void test_xid_and_health(void)
{
    char *path = write_scenario("xid", xid_scenario);
    start_engine(path, DCGM_OPERATION_MODE_AUTO);
    long long t0 = 0;
    CHECK_RC(p_dcgmSimGetStartTime(&t0), DCGM_ST_OK);
    unsigned short xid = 230;
    dcgmFieldGrp_t fg = make_field_group("xid", &xid, 1);
    CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(EMB, DCGM_GROUP_ALL_GPUS, DCGM_HEALTH_WATCH_ALL), DCGM_ST_OK);
    dcgmHealthSystems_t systems = 0;
    CHECK_RC(p_dcgmHealthGet(EMB, DCGM_GROUP_ALL_GPUS, &systems), DCGM_ST_OK);
    CHECK(systems == DCGM_HEALTH_WATCH_ALL, "systems %x", (unsigned)systems);
    dcgmHealthResponse_t *hr = calloc(1, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_OK);
    CHECK(hr->overallHealth == DCGM_HEALTH_RESULT_PASS && hr->incidentCount == 0,
          "priming check %d/%u", hr->overallHealth, hr->incidentCount);

    recs *r = recs_new(MAX_RECS);
    long long next = 0;
    int64_t early = wall_us() - t0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, 0, &next, collect_entity, r),
             DCGM_ST_OK);
    if (early < 700000) /* a stalled machine may already be past the first XID */
        CHECK(r->count == 2 && r->items[0].v.status == DCGM_ST_NO_DATA, "before any XID %d",
              r->count);
    while (wall_us() - t0 < 1300000)
        sleep_ms(50);
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, 0, &next, collect_entity, r),
             DCGM_ST_OK);
    CHECK(r->count == 4, "records %d", r->count);
    for (int i = 0; i < 3 && i < r->count; i++)
        CHECK(r->items[i].entity == 0 && r->items[i].v.status == DCGM_ST_OK &&
              r->items[i].v.value.i64 == 13 && r->items[i].v.ts == t0 + 800000 + i * 100000,
              "xid %d: gpu %u value %lld ts +%lld", i, r->items[i].entity,
              (long long)r->items[i].v.value.i64, (long long)(r->items[i].v.ts - t0));
    if (r->count == 4)
        CHECK(r->items[3].entity == 1 && r->items[3].v.status == DCGM_ST_NO_DATA,
              "gpu 1 has no XID yet");

    /* DCGM's health module knows nothing of XID 13 (a graphics engine exception) */
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_OK);
    CHECK(hr->overallHealth == DCGM_HEALTH_RESULT_PASS && hr->incidentCount == 0,
          "XID 13 x3: health %d incidents %u", hr->overallHealth, hr->incidentCount);
    while (wall_us() - t0 < 2200000)
        sleep_ms(50);
    /* XID 48 (double-bit ECC) is one DCGM reports under ALL, and in every later check */
    for (int again = 0; again < 2; again++) {
        hr->version = dcgmHealthResponse_version5;
        CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_OK);
        CHECK(hr->overallHealth == DCGM_HEALTH_RESULT_FAIL && hr->incidentCount == 1 &&
                  hr->incidents[0].system == DCGM_HEALTH_WATCH_ALL &&
                  hr->incidents[0].health == DCGM_HEALTH_RESULT_FAIL &&
                  hr->incidents[0].error.code == 101 /* DCGM_FR_XID_ERROR */ &&
                  hr->incidents[0].entityInfo.entityGroupId == DCGM_FE_GPU &&
                  hr->incidents[0].entityInfo.entityId == 1 &&
                  strstr(hr->incidents[0].error.msg, "XID 48") != NULL,
              "XID 48 (check %d): health %d incidents %u system %x code %d", again,
              hr->overallHealth, hr->incidentCount, (unsigned)hr->incidents[0].system,
              hr->incidents[0].error.code);
    }
    hr->version = 5;
    CHECK_RC(p_dcgmHealthCheck(EMB, DCGM_GROUP_ALL_GPUS, hr), DCGM_ST_VER_MISMATCH);
    dcgmHealthSetParams_v2 hs = { dcgmHealthSetParams_version2, DCGM_GROUP_ALL_GPUS,
                                  DCGM_HEALTH_WATCH_MEM, 1000000, 60.0 };
    CHECK_RC(p_dcgmHealthSet_v2(EMB, &hs), DCGM_ST_OK);
    hs.version = 1;
    CHECK_RC(p_dcgmHealthSet_v2(EMB, &hs), DCGM_ST_VER_MISMATCH);

    dcgmFieldValue_v1 v;
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 1, &xid, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.value.i64 == 48 && v.ts == t0 + 2000000,
          "latest XID on gpu 1: %d %lld", v.status, (long long)v.value.i64);
    free(hr);
    recs_free(r);
    stop_engine();
    unlink(path);
}

static const char lost_scenario[] =
    "seed = 9\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 2\nworkload = \"training\"\n"
    "[[event]]\nat = 0.8\ngpu = 1\nkind = \"lost\"\n";

static void test_lost_gpu(void)
{
    char *path = write_scenario("lost", lost_scenario);
    start_engine(path, DCGM_OPERATION_MODE_AUTO);
    long long t0 = 0;
    CHECK_RC(p_dcgmSimGetStartTime(&t0), DCGM_ST_OK);
    unsigned short fields[1] = { F_TEMP };
    dcgmFieldGrp_t fg = make_field_group("lost", fields, 1);
    CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, fg, 100000, 60.0, 0), DCGM_ST_OK);
    while (wall_us() - t0 < 1200000)
        sleep_ms(50);
    DcgmEntityStatus_t st;
    CHECK_RC(p_dcgmGetGpuStatus(EMB, 1, &st), DCGM_ST_OK);
    CHECK(st == DcgmEntityStatusLost, "lost GPU status %d", st);
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    CHECK_RC(p_dcgmGetAllDevices(EMB, ids, &count), DCGM_ST_OK);
    CHECK(count == 2, "all devices %d", count);
    CHECK_RC(p_dcgmGetAllSupportedDevices(EMB, ids, &count), DCGM_ST_OK);
    CHECK(count == 1 && ids[0] == 0, "supported devices %d", count);

    recs *r = recs_new(MAX_RECS);
    long long next = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, 0, &next, collect_entity, r),
             DCGM_ST_OK);
    /* DCGM keeps sampling a lost GPU and stores blanks: its last reading comes
     * before the loss, every sample after it is a blank */
    int64_t last_gpu1 = 0;
    int gpu0 = 0, gpu1_blanks_after = 0, gpu1_readings_after = 0;
    for (int i = 0; i < r->count; i++) {
        const dcgmFieldValue_v1 *v = &r->items[i].v;
        if (r->items[i].entity != 1) {
            gpu0++;
            continue;
        }
        CHECK(v->status == DCGM_ST_OK, "gpu 1 record status %d", v->status);
        if (!is_int_blank(v->value.i64))
            last_gpu1 = v->ts;
        else if (v->ts >= t0 + 800000)
            gpu1_blanks_after++;
        if (!is_int_blank(v->value.i64) && v->ts >= t0 + 800000)
            gpu1_readings_after++;
    }
    CHECK(last_gpu1 > 0 && last_gpu1 < t0 + 800000, "gpu 1 reading after it was lost: +%lld",
          (long long)(last_gpu1 - t0));
    CHECK(gpu1_readings_after == 0, "gpu 1: %d readings after the loss", gpu1_readings_after);
    CHECK(gpu1_blanks_after >= 3, "gpu 1: %d blanks after the loss", gpu1_blanks_after);
    CHECK(gpu0 >= 10, "gpu 0 has %d samples", gpu0);
    sleep_ms(250);
    long long cursor = next;
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, fg, cursor, &next, collect_entity,
                                     r), DCGM_ST_OK);
    int fresh_blanks = 0;
    for (int i = 0; i < r->count; i++)
        if (r->items[i].entity == 1) {
            CHECK(r->items[i].v.status == DCGM_ST_OK && is_int_blank(r->items[i].v.value.i64),
                  "lost gpu record status %d value %lld", r->items[i].v.status,
                  (long long)r->items[i].v.value.i64);
            fresh_blanks++;
        }
    CHECK(fresh_blanks >= 1, "no new blank for the lost gpu in 250 ms");

    /* a watch made after the loss is accepted (DCGM refuses only detached GPUs) and
     * gets blanks */
    unsigned short power = F_POWER;
    CHECK_RC(p_dcgmWatchFieldValue(EMB, 1, power, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    dcgmFieldValue_v1 v;
    CHECK_RC(p_dcgmGetLatestValuesForFields(EMB, 1, &power, 1, &v), DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.fieldType == DCGM_FT_DOUBLE && v.value.dbl >= DCGM_FP64_BLANK,
          "latest on lost gpu: status %d type %c", v.status, v.fieldType);
    dcgmFieldGrp_t pfg = make_field_group("lostpower", &power, 1);
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_EMPTY, "lostgpu", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddDevice(EMB, g, 1), DCGM_ST_OK);
    next = 0;
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(EMB, g, pfg, 0, &next, collect_entity, r), DCGM_ST_OK);
    CHECK(r->count >= 1 && r->items[0].v.value.dbl >= DCGM_FP64_BLANK, "blank power records %d",
          r->count);
    recs_free(r);
    stop_engine();
    unlink(path);
}

static const char mig_scenario[] =
    "[[gpu]]\nmodel = \"H100\"\ncount = 1\nmig_instances = 3\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 1\n";

static void test_mig(void)
{
    char *path = write_scenario("mig", mig_scenario);
    start_engine(path, DCGM_OPERATION_MODE_AUTO);
    dcgmMigHierarchy_v2 *h = calloc(1, sizeof *h);
    h->version = 1;
    CHECK_RC(p_dcgmGetGpuInstanceHierarchy(EMB, h), DCGM_ST_VER_MISMATCH);
    h->version = dcgmMigHierarchy_version2;
    CHECK_RC(p_dcgmGetGpuInstanceHierarchy(EMB, h), DCGM_ST_OK);
    CHECK(h->count == 6, "hierarchy rows %u", h->count);
    for (unsigned i = 0; i + 1 < h->count && i < 6; i += 2) {
        const dcgmMigHierarchyInfo_v2 *gi = &h->entityList[i], *ci = &h->entityList[i + 1];
        CHECK(gi->entity.entityGroupId == DCGM_FE_GPU_I && gi->entity.entityId == i / 2 &&
              gi->parent.entityGroupId == DCGM_FE_GPU && gi->parent.entityId == 0 &&
              gi->info.nvmlComputeInstanceId == 0xffffffffu,
              "GPU_I row %u: %u/%u parent %u/%u", i, gi->entity.entityGroupId,
              gi->entity.entityId, gi->parent.entityGroupId, gi->parent.entityId);
        CHECK(ci->entity.entityGroupId == DCGM_FE_GPU_CI && ci->entity.entityId == i / 2 &&
              ci->parent.entityGroupId == DCGM_FE_GPU_I && ci->parent.entityId == i / 2,
              "GPU_CI row %u", i + 1);
        CHECK(strncmp(gi->info.gpuUuid, "GPU-", 4) == 0, "uuid %s", gi->info.gpuUuid);
    }
    free(h);
    dcgm_field_eid_t ents[16];
    int n = 16;
    CHECK_RC(p_dcgmGetEntityGroupEntities(EMB, DCGM_FE_GPU_I, ents, &n, 0), DCGM_ST_OK);
    CHECK(n == 3, "GPU_I entities %d", n);
    dcgmGroupEntityPair_t gi0 = { DCGM_FE_GPU_I, 1 };
    unsigned short name = 50;
    dcgmFieldValue_v2 v;
    CHECK_RC(p_dcgmEntitiesGetLatestValues(EMB, &gi0, 1, &name, 1, DCGM_FV_FLAG_LIVE_DATA, &v),
             DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.fieldType == 's' && !is_blank_text(v.value.str) &&
          strchr(v.value.str, 'g') != NULL, "profile name '%s'", v.value.str);

    /* the v1 reads are GPU-only: latest skips instances, since refuses them */
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_DEFAULT_INSTANCES, "gis", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddDevice(EMB, g, 1), DCGM_ST_OK);
    unsigned short temp = F_TEMP;
    dcgmFieldGrp_t fg = make_field_group("mig-temp", &temp, 1);
    CHECK_RC(p_dcgmWatchFields(EMB, g, fg, 100000, 10.0, 0), DCGM_ST_OK);
    recs *r = recs_new(MAX_RECS);
    CHECK_RC(p_dcgmGetLatestValues(EMB, g, fg, collect_gpu, r), DCGM_ST_OK);
    CHECK(r->count == 1 && r->items[0].entity == 1, "v1 latest gave %d records", r->count);
    r->count = 0;
    CHECK_RC(p_dcgmGetLatestValues_v2(EMB, g, fg, collect_entity, r), DCGM_ST_OK);
    CHECK(r->count == 4 && r->items[0].group == DCGM_FE_GPU_I &&
          r->items[0].v.status == DCGM_ST_OK, "v2 latest gave %d records", r->count);
    long long next = 0;
    CHECK_RC(p_dcgmGetValuesSince(EMB, g, fg, 0, &next, collect_gpu, r), DCGM_ST_NOT_SUPPORTED);
    recs_free(r);
    stop_engine();
    unlink(path);
}

/* mig_profiles: each instance reads its profile's name, slices and framebuffer share */
static const char mig_profiles_scenario[] =
    "[[gpu]]\nmodel = \"H200\"\nmig_profiles = [\"3g.71gb\", \"2g.35gb\", \"1g.18gb\"]\n"
    "[[gpu]]\nmodel = \"H100\"\nmig_profiles = [\"4g.40gb\", \"3g.40gb\"]\n";

static void test_mig_profiles(void)
{
    char *path = write_scenario("mig-profiles", mig_profiles_scenario);
    start_engine(path, DCGM_OPERATION_MODE_AUTO);
    static const struct {
        dcgm_field_eid_t entity;
        const char *name;
        unsigned int slices, eighths, gpu;
    } want[] = {
        { 0, "3g.71gb", 3, 4, 0 }, { 1, "2g.35gb", 2, 2, 0 }, { 2, "1g.18gb", 1, 1, 0 },
        { DCGM_MAX_INSTANCES_PER_GPU, "4g.40gb", 4, 4, 1 }, { DCGM_MAX_INSTANCES_PER_GPU + 1, "3g.40gb", 3, 4, 1 },
    };
    dcgmMigHierarchy_v2 *h = calloc(1, sizeof *h);
    h->version = dcgmMigHierarchy_version2;
    CHECK_RC(p_dcgmGetGpuInstanceHierarchy(EMB, h), DCGM_ST_OK);
    CHECK(h->count == 10, "hierarchy rows %u", h->count);
    for (unsigned i = 0; i < 5 && 2 * i < h->count; i++) {
        const dcgmMigHierarchyInfo_v2 *gi = &h->entityList[2 * i];
        CHECK(gi->entity.entityId == want[i].entity && gi->parent.entityId == want[i].gpu &&
                  gi->info.nvmlProfileSlices == want[i].slices,
              "GPU_I row %u: entity %u parent %u slices %u", i, gi->entity.entityId, gi->parent.entityId,
              gi->info.nvmlProfileSlices);
    }
    free(h);
    unsigned short fields[] = { 50, 250, 203, 54 };   /* name, FB total, GPU utilisation, UUID */
    char uuids[5][64] = { "" };
    for (unsigned i = 0; i < 5; i++) {
        dcgmGroupEntityPair_t gpu = { DCGM_FE_GPU, want[i].gpu }, gi = { DCGM_FE_GPU_I, want[i].entity };
        dcgmFieldValue_v2 whole[4], inst[4];
        CHECK_RC(p_dcgmEntitiesGetLatestValues(EMB, &gpu, 1, fields, 4, DCGM_FV_FLAG_LIVE_DATA, whole), DCGM_ST_OK);
        CHECK_RC(p_dcgmEntitiesGetLatestValues(EMB, &gi, 1, fields, 4, DCGM_FV_FLAG_LIVE_DATA, inst), DCGM_ST_OK);
        /* the MIG device's own UUID, not the GPU's, one per instance */
        CHECK(inst[3].status == DCGM_ST_OK && strncmp(inst[3].value.str, "MIG-", 4) == 0 &&
                  strlen(inst[3].value.str) == 40 && strncmp(whole[3].value.str, "GPU-", 4) == 0,
              "instance %u UUID '%s' (GPU '%s')", want[i].entity, inst[3].value.str, whole[3].value.str);
        snprintf(uuids[i], sizeof uuids[i], "%s", inst[3].value.str);
        for (unsigned k = 0; k < i; k++)
            CHECK(strcmp(uuids[k], uuids[i]) != 0, "instances %u and %u share UUID %s", k, i, uuids[i]);
        CHECK(inst[0].status == DCGM_ST_OK && strcmp(inst[0].value.str, want[i].name) == 0, "instance %u name '%s'",
              want[i].entity, inst[0].value.str);
        CHECK(inst[1].status == DCGM_ST_OK && whole[1].status == DCGM_ST_OK &&
                  inst[1].value.i64 == whole[1].value.i64 * want[i].eighths / 8,
              "instance %u FB total %lld of the GPU's %lld", want[i].entity, (long long)inst[1].value.i64,
              (long long)whole[1].value.i64);
        CHECK(whole[2].status == DCGM_ST_OK && whole[2].value.i64 < DCGM_INT64_BLANK &&
                  (inst[2].status != DCGM_ST_OK || inst[2].value.i64 >= DCGM_INT64_BLANK),
              "GPU utilisation: GPU %lld, instance %u %lld (not supported there)", (long long)whole[2].value.i64,
              want[i].entity, (long long)inst[2].value.i64);
    }
    stop_engine();
    unlink(path);
}

/* ---- concurrency ----------------------------------------------------------- */

typedef struct reader_arg {
    dcgmFieldGrp_t fg;
    atomic_int *stop;
    int errors;
} reader_arg;

static void *reader_main(void *arg)
{
    reader_arg *a = arg;
    recs *r = recs_new(MAX_RECS);
    long long cursor = 0, next = 0;
    while (!atomic_load(a->stop)) {
        r->count = 0;
        int rc = p_dcgmGetValuesSince_v2(EMB, DCGM_GROUP_ALL_GPUS, a->fg, cursor, &next,
                                         collect_entity, r);
        /* once the engine is stopped the handle is simply not served */
        if (rc == DCGM_ST_UNINITIALIZED)
            break;
        if (rc != DCGM_ST_OK)
            a->errors++;
        cursor = next;
        r->count = 0;
        rc = p_dcgmGetLatestValues_v2(EMB, DCGM_GROUP_ALL_GPUS, a->fg, collect_entity, r);
        if (rc != DCGM_ST_OK && rc != DCGM_ST_UNINITIALIZED)
            a->errors++;
    }
    recs_free(r);
    return NULL;
}

static void test_concurrency(void)
{
    start_engine(NULL, DCGM_OPERATION_MODE_AUTO);
    unsigned short fields[3] = { F_TEMP, F_POWER, F_DRIVER };
    dcgmFieldGrp_t fg = make_field_group("conc", fields, 3);
    CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, fg, 20000, 5.0, 0), DCGM_ST_OK);
    atomic_int stop = 0;
    reader_arg args[3];
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) {
        args[i] = (reader_arg){ fg, &stop, 0 };
        pthread_create(&threads[i], NULL, reader_main, &args[i]);
    }
    unsigned short extra = F_UTIL;
    dcgmFieldGrp_t efg = make_field_group("conc-extra", &extra, 1);
    for (int i = 0; i < 20; i++) {
        CHECK_RC(p_dcgmWatchFields(EMB, DCGM_GROUP_ALL_GPUS, efg, 10000, 1.0, 0), DCGM_ST_OK);
        sleep_ms(10);
        CHECK_RC(p_dcgmUnwatchFields(EMB, DCGM_GROUP_ALL_GPUS, efg), DCGM_ST_OK);
        CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    }
    /* stopping under the readers' feet must neither crash nor hang */
    stop_engine();
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++) {
        pthread_join(threads[i], NULL);
        CHECK(args[i].errors == 0, "reader %d saw %d errors", i, args[i].errors);
    }
}

/* ---- remote connections -------------------------------------------------- */

static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bind(fd, (struct sockaddr *)&sa, sizeof sa);
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    close(fd);
    return ntohs(sa.sin_port);
}

typedef struct server {
    int fd;
    int port;
    int greet;           /* answer the hello line */
    pthread_t thread;
} server;

static void *serve_one(void *arg)
{
    server *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    char buf[64];
    ssize_t n = recv(c, buf, sizeof buf, 0);
    if (s->greet && n > 0)
        send(c, buf, (size_t)n, MSG_NOSIGNAL);
    sleep_ms(s->greet ? 200 : 1500);
    close(c);
    return NULL;
}

static void server_start(server *s, int greet)
{
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bind(s->fd, (struct sockaddr *)&sa, sizeof sa);
    listen(s->fd, 1);
    socklen_t len = sizeof sa;
    getsockname(s->fd, (struct sockaddr *)&sa, &len);
    s->port = ntohs(sa.sin_port);
    s->greet = greet;
    pthread_create(&s->thread, NULL, serve_one, s);
}

static void server_stop(server *s)
{
    pthread_join(s->thread, NULL);
    close(s->fd);
}

static void test_remote(void)
{
    char addr[64];
    dcgmHandle_t h = 0;
    dcgmConnectV2Params_t p2 = { dcgmConnectV2Params_version2, 0, 200, 0 };
    snprintf(addr, sizeof addr, "127.0.0.1:%d", closed_port());
    int64_t begin = mono_ms();
    CHECK_RC(p_dcgmConnect_v2(addr, &p2, &h), DCGM_ST_CONNECTION_NOT_VALID);
    int64_t took = mono_ms() - begin;
    CHECK(took >= 150 && took < 1500, "closed port took %lld ms with timeoutMs 200",
          (long long)took);
    const char *bad[] = { "", "host:abc", "[::1", "host:0", "host:70000", ":5555", "a b" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_RC(p_dcgmConnect_v2(bad[i], &p2, &h), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmConnect_v2(NULL, &p2, &h), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmConnect_v2(addr, &p2, NULL), DCGM_ST_BADPARAM);
    p2.version = 0x02000011;
    CHECK_RC(p_dcgmConnect_v2(addr, &p2, &h), DCGM_ST_VER_MISMATCH);
    p2.version = dcgmConnectV2Params_version2;
    p2.addressIsUnixSocket = 1;
    CHECK_RC(p_dcgmConnect_v2("/tmp/no-such-hostengine.sock", &p2, &h),
             DCGM_ST_CONNECTION_NOT_VALID);
    p2.addressIsUnixSocket = 0;

    dcgmConnectV3Params_t p3 = { dcgmConnectV3Params_version1, 0, 200 };
    CHECK_RC(p_dcgmConnect_v3("http://host", &p3, &h), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmConnect_v3("vsock://x", &p3, &h), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmConnect_v3("vsock://3:5555", &p3, &h), DCGM_ST_CONNECTION_NOT_VALID);
    snprintf(addr, sizeof addr, "TCP://127.0.0.1:%d", closed_port());
    CHECK_RC(p_dcgmConnect_v3(addr, &p3, &h), DCGM_ST_CONNECTION_NOT_VALID);
    CHECK_RC(p_dcgmConnect_v3("unix:///tmp/no-such-hostengine.sock", &p3, &h),
             DCGM_ST_CONNECTION_NOT_VALID);
    p3.version = 0x0100000d;
    CHECK_RC(p_dcgmConnect_v3("tcp://127.0.0.1", &p3, &h), DCGM_ST_VER_MISMATCH);

    /* something that listens but does not greet is not a hostengine */
    server silent;
    server_start(&silent, 0);
    snprintf(addr, sizeof addr, "[::ffff:127.0.0.1]:%d", silent.port);
    p2.timeoutMs = 500;
    CHECK_RC(p_dcgmConnect_v2(addr, &p2, &h), DCGM_ST_CONNECTION_NOT_VALID);
    server_stop(&silent);

    server greeter;
    server_start(&greeter, 1);
    snprintf(addr, sizeof addr, "tcp://localhost:%d", greeter.port);
    p3.version = dcgmConnectV3Params_version1;
    h = 0;
    int rc = p_dcgmConnect_v3(addr, &p3, &h);
    if (rc != DCGM_ST_OK) { /* localhost may resolve to ::1 first; the server is v4 only */
        snprintf(addr, sizeof addr, "127.0.0.1:%d", greeter.port);
        rc = p_dcgmConnect_v2(addr, &p2, &h);
    }
    CHECK(rc == DCGM_ST_OK && h != 0 && h != EMB, "connect to greeter rc %d handle %lu", rc,
          (unsigned long)h);
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count;
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_CONNECTION_NOT_VALID);
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    server_stop(&greeter);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BUILD_DIR\n", argv[0]);
        return 2;
    }
    void *lib = load_library(argv[1]);
    const check_test tests[] = {
        { "lifecycle", test_lifecycle }, { "devices", test_devices },
        { "groups", test_groups }, { "status", test_status },       { "auto_sampling", test_auto_sampling },
        { "cache", test_cache },         { "manual", test_manual },
        { "xid_and_health", test_xid_and_health }, { "lost_gpu", test_lost_gpu },
        { "mig", test_mig }, { "mig_profiles", test_mig_profiles },             { "concurrency", test_concurrency },
        { "remote", test_remote },
    };
    const char *only = getenv("TEST_API_ONLY");
    /* the lifecycle test starts from an uninitialised library */
    if (only && strcmp(only, "lifecycle") != 0 && p_dcgmInit() != DCGM_ST_OK)
        return 2;
    run_tests(tests, sizeof tests / sizeof tests[0], only);
    CHECK_RC(p_dcgmShutdown(), DCGM_ST_OK);
    dlclose(lib);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
