/*
 * test_levels.c -- the scenario's entities beyond its GPUs: `nvswitches`
 * NvSwitches whose ports come up as the GPUs' links reach them, and
 * `grace_cpus` Grace CPUs of `cpu_cores` cores, listed by DCGM's entity,
 * link-status and CPU-hierarchy calls and read through watches like any
 * entity.  The same script runs on an embedded engine and through a
 * hostengine.
 *
 * usage: test_levels BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
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

/* two H100s (18 links each) over two switches: 18 ports up on each */
static const char SCENARIO_TEXT[] =
    "nvswitches = 2\ngrace_cpus = 1\ncpu_cores = 4\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 2\n";

enum { F_SWITCH_TEMP = 858, F_LINK_TX = 780, F_CORE_UTIL = 1100, F_CORE_CLOCK = 1120,
       F_CPU_POWER = 1130, F_CPU_MODEL = 1141 };

#define LINK_ID(type, owner, port) ((unsigned int)(type) | ((unsigned int)(port) << 8) | \
                                    ((unsigned int)(owner) << 24))

static void run_script(dcgmHandle_t h, const char *where)
{
    dcgm_field_eid_t ids[DCGM_MAX_NUM_SWITCHES];
    int n = DCGM_MAX_NUM_SWITCHES;
    CHECK_RC(p_dcgmGetEntityGroupEntities(h, DCGM_FE_SWITCH, ids, &n, 0), DCGM_ST_OK);
    CHECK(n == 2 && ids[0] == 0 && ids[1] == 1, "%s: %d switches", where, n);

    dcgmNvLinkStatus_v5 *st = calloc(1, sizeof *st);
    st->version = dcgmNvLinkStatus_version5;
    CHECK_RC(p_dcgmGetNvLinkLinkStatus(h, st), DCGM_ST_OK);
    CHECK(st->numNvSwitches == 2, "%s: %u switches in the link status", where, st->numNvSwitches);
    for (unsigned int s = 0; s < st->numNvSwitches && s < 2; s++) {
        unsigned int up = 0;
        for (unsigned int p = 0; p < DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH; p++)
            up += st->nvSwitches[s].linkState[p] == DcgmNvLinkLinkStateUp;
        CHECK(up == 18 && st->nvSwitches[s].linkState[0] == DcgmNvLinkLinkStateUp &&
                  st->nvSwitches[s].linkState[18] == DcgmNvLinkLinkStateDisabled,
              "%s: switch %u has %u ports up", where, s, up);
    }
    free(st);

    dcgmCpuHierarchy_v2 *cpus = calloc(1, sizeof *cpus);
    cpus->version = dcgmCpuHierarchy_version2;
    CHECK_RC(p_dcgmGetCpuHierarchy_v2(h, cpus), DCGM_ST_OK);
    CHECK(cpus->numCpus == 1 && cpus->cpus[0].cpuId == 0 && cpus->cpus[0].ownedCores.bitmask[0] == 0xf,
          "%s: %u CPUs, cores %llx", where, cpus->numCpus,
          (unsigned long long)cpus->cpus[0].ownedCores.bitmask[0]);
    free(cpus);

    /* one group of a switch, a switch port, the CPU and a core; each reads its own fields */
    unsigned short fields[6] = { F_SWITCH_TEMP, F_LINK_TX, F_CORE_UTIL, F_CORE_CLOCK, F_CPU_POWER,
                                 F_CPU_MODEL };
    dcgmGpuGrp_t g = 0;
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "levels", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, g, DCGM_FE_SWITCH, 1), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, g, DCGM_FE_LINK, LINK_ID(DCGM_FE_SWITCH, 1, 3)), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, g, DCGM_FE_CPU, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, g, DCGM_FE_CPU_CORE, 3), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupCreate(h, 6, fields, "levels", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFields(h, g, fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);

    dcgmFieldValue_v1 v[6];
    memset(v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_SWITCH, 1, fields, 1, v), DCGM_ST_OK);
    CHECK(v[0].status == DCGM_ST_OK && v[0].value.i64 >= 40 && v[0].value.i64 < 50,
          "%s: switch temperature %lld (status %d)", where, (long long)v[0].value.i64, v[0].status);
    memset(v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_LINK, (int)LINK_ID(DCGM_FE_SWITCH, 1, 3), &fields[1], 1, v),
             DCGM_ST_OK);
    CHECK(v[0].status == DCGM_ST_OK && v[0].value.i64 >= 0 && v[0].value.i64 < DCGM_INT64_BLANK,
          "%s: port throughput %lld (status %d)", where, (long long)v[0].value.i64, v[0].status);
    memset(v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU_CORE, 3, &fields[2], 2, v), DCGM_ST_OK);
    CHECK(v[0].status == DCGM_ST_OK && v[0].value.dbl > 0.0 && v[0].value.dbl < 1.0,
          "%s: core utilization %f (status %d)", where, v[0].value.dbl, v[0].status);
    CHECK(v[1].status == DCGM_ST_OK && v[1].value.i64 == 3100000, "%s: core clock %lld", where,
          (long long)v[1].value.i64);
    memset(v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU, 0, &fields[4], 2, v), DCGM_ST_OK);
    CHECK(v[0].status == DCGM_ST_OK && v[0].value.dbl > 100.0 && v[0].value.dbl < 300.0,
          "%s: CPU power %f", where, v[0].value.dbl);
    CHECK(v[1].status == DCGM_ST_OK && strcmp(v[1].value.str, "Grace") == 0, "%s: CPU model '%s'", where,
          v[1].value.str);
    CHECK_RC(p_dcgmUnwatchFields(h, g, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(h, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
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
        .only_env = "TEST_LEVELS_ONLY",
        .scenario_text = SCENARIO_TEXT,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
