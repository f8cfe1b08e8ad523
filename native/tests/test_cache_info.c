/*
 * test_cache_info.c -- dcgmGetCacheManagerFieldInfo: what the cache keeps for
 * a watched field (flags, interval, retention, watchers, samples and their
 * timestamps), an unwatched or unknown field, and bad arguments.  The same
 * script runs on an embedded engine and through a hostengine.
 *
 * usage: test_cache_info BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
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
#define CHECK_SCRATCH_FILES
#include "check.h"
#include "hostengine.h"

#define FI_DRIVER_VERSION 1 /* a global field */
#define FI_GPU_TEMP 150
#define FI_POWER_USAGE 155

static const char SCENARIO_TEXT[] = "[[gpu]]\nmodel = \"H100\"\ncount = 2\n";

static dcgmReturn_t info_of(dcgmHandle_t h, unsigned int group, unsigned int id,
                            unsigned short field, dcgmCacheManagerFieldInfo_v4_t *out)
{
    memset(out, 0, sizeof *out);
    out->version = dcgmCacheManagerFieldInfo_version4;
    out->entityGroupId = group;
    out->entityId = id;
    out->fieldId = field;
    return p_dcgmGetCacheManagerFieldInfo(h, out);
}

static void run_script(dcgmHandle_t h, const char *where)
{
    dcgmCacheManagerFieldInfo_v4_t fi;
    long long before = wall_us();

    /* nothing watched yet */
    CHECK_RC(info_of(h, DCGM_FE_GPU, 0, FI_GPU_TEMP, &fi), DCGM_ST_NOT_WATCHED);

    /* a watched field: its interval and retention, one client watcher */
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, FI_GPU_TEMP, 100000, 30.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK_RC(info_of(h, DCGM_FE_GPU, 0, FI_GPU_TEMP, &fi), DCGM_ST_OK);
    CHECK(fi.version == dcgmCacheManagerFieldInfo_version4, "%s: version %x", where, fi.version);
    CHECK(fi.flags & DCGM_CMI_F_WATCHED, "%s: flags %x", where, fi.flags);
    CHECK(fi.monitorIntervalUsec == 100000, "%s: interval %lld", where, fi.monitorIntervalUsec);
    CHECK(fi.maxAgeUsec == 30000000, "%s: max age %lld", where, fi.maxAgeUsec);
    CHECK(fi.numWatchers == 1, "%s: %d watchers", where, fi.numWatchers);
    CHECK(fi.watchers[0].watcherType == DcgmWatcherTypeClient &&
              fi.watchers[0].monitorIntervalUsec == 100000 &&
              fi.watchers[0].maxAgeUsec == 30000000,
          "%s: watcher %d %lld %lld", where, (int)fi.watchers[0].watcherType,
          fi.watchers[0].monitorIntervalUsec, fi.watchers[0].maxAgeUsec);
    CHECK(fi.lastStatus == DCGM_ST_OK, "%s: last status %d", where, fi.lastStatus);
    CHECK(fi.numSamples >= 1, "%s: %d samples", where, fi.numSamples);
    CHECK(fi.fetchCount >= 1, "%s: fetched %lld times", where, fi.fetchCount);
    CHECK(fi.oldestTimestamp >= before && fi.oldestTimestamp <= fi.newestTimestamp &&
              fi.newestTimestamp <= wall_us(),
          "%s: timestamps %lld..%lld", where, fi.oldestTimestamp, fi.newestTimestamp);
    int first = fi.numSamples;
    long long newest = fi.newestTimestamp;

    /* another pass after the interval: one more sample, newer */
    usleep(150000);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK_RC(info_of(h, DCGM_FE_GPU, 0, FI_GPU_TEMP, &fi), DCGM_ST_OK);
    CHECK(fi.numSamples > first, "%s: %d samples after %d", where, fi.numSamples, first);
    CHECK(fi.newestTimestamp > newest, "%s: newest %lld after %lld", where, fi.newestTimestamp,
          newest);

    /* the other GPU's copy of the field is not watched */
    CHECK_RC(info_of(h, DCGM_FE_GPU, 1, FI_GPU_TEMP, &fi), DCGM_ST_NOT_WATCHED);
    CHECK_RC(info_of(h, DCGM_FE_GPU, 0, FI_POWER_USAGE, &fi), DCGM_ST_NOT_WATCHED);

    /* a global field is kept once, whatever entity is asked about */
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, FI_DRIVER_VERSION, 1000000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK_RC(info_of(h, DCGM_FE_NONE, 0, FI_DRIVER_VERSION, &fi), DCGM_ST_OK);
    CHECK((fi.flags & DCGM_CMI_F_WATCHED) && fi.monitorIntervalUsec == 1000000 &&
              fi.numSamples >= 1,
          "%s: global field flags %x interval %lld samples %d", where, fi.flags,
          fi.monitorIntervalUsec, fi.numSamples);
    CHECK_RC(info_of(h, DCGM_FE_GPU, 1, FI_DRIVER_VERSION, &fi), DCGM_ST_OK);

    /* unwatched again: the cache still knows the field, with no watcher and
     * (the cache cleared) no samples */
    CHECK_RC(p_dcgmUnwatchFieldValue(h, 0, FI_GPU_TEMP, 1), DCGM_ST_OK);
    CHECK_RC(info_of(h, DCGM_FE_GPU, 0, FI_GPU_TEMP, &fi), DCGM_ST_OK);
    CHECK(fi.numWatchers == 0 && !(fi.flags & DCGM_CMI_F_WATCHED) && fi.numSamples == 0,
          "%s: unwatched: %d watchers, flags %x, %d samples", where, fi.numWatchers, fi.flags,
          fi.numSamples);
    CHECK_RC(p_dcgmUnwatchFieldValue(h, 0, FI_DRIVER_VERSION, 1), DCGM_ST_OK);

    /* arguments: an unknown field, no struct; the version is the API's to set */
    CHECK_RC(info_of(h, DCGM_FE_GPU, 0, 65000, &fi), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetCacheManagerFieldInfo(h, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, FI_GPU_TEMP, 100000, 30.0, 0), DCGM_ST_OK);
    memset(&fi, 0, sizeof fi);
    fi.version = dcgmCacheManagerFieldInfo_version4 + 1;
    fi.entityGroupId = DCGM_FE_GPU;
    fi.fieldId = FI_GPU_TEMP;
    CHECK_RC(p_dcgmGetCacheManagerFieldInfo(h, &fi), DCGM_ST_OK);
    CHECK(fi.version == dcgmCacheManagerFieldInfo_version4, "%s: version stamped %x", where,
          fi.version);
    CHECK_RC(p_dcgmUnwatchFieldValue(h, 0, FI_GPU_TEMP, 1), DCGM_ST_OK);
}

static void test_embedded(void) { run_embedded(scenario, DCGM_OPERATION_MODE_MANUAL, run_script); }

static void test_hostengine(void) { run_through_hostengine(scenario, run_script); }

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "embedded", test_embedded },
        { "hostengine", test_hostengine },
    };
    const check_program program = {
        .only_env = "TEST_CACHE_INFO_ONLY",
        .scenario_text = SCENARIO_TEXT,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
