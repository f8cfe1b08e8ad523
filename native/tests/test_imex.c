/*
 * test_imex.c -- the IMEX status fields (DCGM_FI_IMEX_DOMAIN_STATUS 1502,
 * DCGM_FI_IMEX_DAEMON_STATUS 1503) as DCGM's cache manager fills them from
 * nvidia-imex-ctl, and the health module's global IMEX check under NVLINK.
 * The engine is pointed at stand-in tools (DCGM_SIM_IMEX_CTL) that print what
 * a real one would; every script runs on an embedded engine and through a
 * hostengine.
 *
 * usage: test_imex BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#define CHECK_SCRATCH_FILES
#include "check.h"
#include "hostengine.h"

#define F_DOMAIN 1502
#define F_DAEMON 1503
#define FR_IMEX_UNHEALTHY 122 /* dcgm_errors.h */

static const char SCENARIO_TEXT[] = "[[gpu]]\nmodel = \"H100\"\ncount = 1\n";

/* a stand-in nvidia-imex-ctl: "-N -j" prints a JSON document, "-q" a state */
static const char TOOL_DOWN[] =
    "#!/bin/sh\n"
    "if [ \"$1\" = -N ]; then\n"
    "  echo '{\"nodes\": [{\"host\": \"a\", \"status\": \"READY\"}], \"status\": \"down\"}'\n"
    "else\n"
    "  printf '  waiting_for_peers \\n'\n"
    "fi\n";
static const char TOOL_UP[] =
    "#!/bin/sh\n"
    "if [ \"$1\" = -N ]; then echo '{\"status\":\"UP\"}'; else echo READY; fi\n";
static const char TOOL_ODD[] =
    "#!/bin/sh\n"
    "if [ \"$1\" = -N ]; then echo '{\"status\":\"SIDEWAYS\"}'; else echo NAPPING; fi\n";
static const char TOOL_UNCONFIGURED[] =
    "#!/bin/sh\necho 'Failed to read node configuration file /etc/nvidia-imex/nodes_config.cfg'\n";
static const char TOOL_BROKEN[] = "#!/bin/sh\necho oops\nexit 3\n";

static const char *tool(const char *name, const char *text)
{
    const char *path = write_file(name, text);
    CHECK(chmod(path, 0755) == 0, "chmod %s", path);
    return path;
}

/* The two fields' latest values for GPU 0, watched and updated first. */
static void read_imex(dcgmHandle_t h, char *domain, size_t len, long long *daemon)
{
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, F_DOMAIN, 1000000, 3600.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, F_DAEMON, 1000000, 3600.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    unsigned short fields[2] = { F_DOMAIN, F_DAEMON };
    dcgmFieldValue_v1 v[2];
    memset(v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, 0, fields, 2, v), DCGM_ST_OK);
    CHECK(v[0].status == DCGM_ST_OK && v[0].fieldType == DCGM_FT_STRING, "domain status %d type %c",
          v[0].status, v[0].fieldType);
    CHECK(v[1].status == DCGM_ST_OK && v[1].fieldType == DCGM_FT_INT64, "daemon status %d type %c",
          v[1].status, v[1].fieldType);
    snprintf(domain, len, "%s", v[0].value.str);
    *daemon = v[1].value.i64;
}

/* ---- the field values, one engine per stand-in ------------------------------------ */

static const char *expect_domain;
static long long expect_daemon;

static void script_values(dcgmHandle_t h, const char *where)
{
    char domain[256];
    long long daemon = 0;
    read_imex(h, domain, sizeof domain, &daemon);
    CHECK(strcmp(domain, expect_domain) == 0, "%s: domain \"%s\", want \"%s\"", where, domain,
          expect_domain);
    CHECK(daemon == expect_daemon, "%s: daemon %lld, want %lld", where, daemon, expect_daemon);
}

static void values_both_ways(const char *tool_path, const char *domain, long long daemon)
{
    setenv("DCGM_SIM_IMEX_CTL", tool_path, 1);
    expect_domain = domain;
    expect_daemon = daemon;
    run_both_ways(scenario, DCGM_OPERATION_MODE_MANUAL, script_values);
}

static void test_values(void)
{
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no-such-tool", tmpdir);
    /* no tool: not installed */
    values_both_ways(missing, "NOT_INSTALLED", -1);
    /* a file that is not executable is no tool either */
    values_both_ways(write_file("plain", "#!/bin/sh\necho READY\n"), "NOT_INSTALLED", -1);
    /* the last "status" of the JSON, upper-cased; the daemon's state trimmed */
    values_both_ways(tool("down.sh", TOOL_DOWN), "DOWN", 2);
    values_both_ways(tool("up.sh", TOOL_UP), "UP", 5);
    /* words DCGM does not know are UNAVAILABLE */
    values_both_ways(tool("odd.sh", TOOL_ODD), "UNAVAILABLE", 7);
    values_both_ways(tool("unconf.sh", TOOL_UNCONFIGURED), "NOT_CONFIGURED", -2);
    /* a run that fails */
    values_both_ways(tool("broken.sh", TOOL_BROKEN), "UNAVAILABLE", -3);
}

/* ---- the health check ------------------------------------------------------------------ */

static void inject_global(dcgmHandle_t h, unsigned short field, const char *s, long long i,
                          int offset_s)
{
    dcgmInjectFieldValue_t v;
    memset(&v, 0, sizeof v);
    v.version = dcgmInjectFieldValue_version1;
    v.fieldId = field;
    v.fieldType = s ? DCGM_FT_STRING : DCGM_FT_INT64;
    v.ts = wall_us() + (int64_t)offset_s * 1000000;
    if (s)
        snprintf(v.value.str, sizeof v.value.str, "%s", s);
    else
        v.value.i64 = i;
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_NONE, 0, &v), DCGM_ST_OK);
}

static void set_links(dcgmHandle_t h, unsigned int gpu, dcgmNvLinkLinkState_t state)
{
    for (unsigned int l = 0; l < DCGM_NVLINK_MAX_LINKS_PER_GPU; l++) {
        dcgmSetNvLinkLinkState_v1 req = { dcgmSetNvLinkLinkState_version1, DCGM_FE_GPU, gpu, l,
                                          state, 0 };
        CHECK_RC(p_dcgmSetEntityNvLinkLinkState(h, &req), DCGM_ST_OK);
    }
}

static int offset_s;

/* Injects a domain and daemon status a second after the last ones, checks;
 * the number of IMEX incidents found (all checked for their shape). */
static unsigned int imex_incidents(dcgmHandle_t h, dcgmGpuGrp_t g, const char *domain,
                                   long long daemon, dcgmHealthResponse_v5 *hr, const char *where)
{
    inject_global(h, F_DOMAIN, domain, 0, offset_s);
    inject_global(h, F_DAEMON, NULL, daemon, offset_s);
    offset_s++;
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g, hr), DCGM_ST_OK);
    unsigned int n = 0;
    for (unsigned int i = 0; i < hr->incidentCount; i++) {
        const dcgmIncidentInfo_t *inc = &hr->incidents[i];
        if (inc->error.code != FR_IMEX_UNHEALTHY)
            continue;
        n++;
        CHECK(inc->system == DCGM_HEALTH_WATCH_NVLINK && inc->health == DCGM_HEALTH_RESULT_FAIL &&
                  inc->entityInfo.entityGroupId == DCGM_FE_NONE && inc->entityInfo.entityId == 0,
              "%s: IMEX incident system %x health %d entity %d/%u", where, (unsigned)inc->system,
              (int)inc->health, (int)inc->entityInfo.entityGroupId, inc->entityInfo.entityId);
    }
    return n;
}

static void script_health(dcgmHandle_t h, const char *where)
{
    dcgmHealthResponse_v5 *hr = calloc(1, sizeof *hr);
    unsigned int gpu = new_fake_gpu(h);
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "imex", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddDevice(h, g, gpu), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_NVLINK), DCGM_ST_OK);
    offset_s = 0;

    /* a GPU without NvLinks: the IMEX check is not run at all */
    CHECK(imex_incidents(h, g, "DOWN", 0, hr, where) == 0 &&
              hr->overallHealth == DCGM_HEALTH_RESULT_PASS,
          "%s: no links, yet %u incidents", where, hr->incidentCount);

    set_links(h, gpu, DcgmNvLinkLinkStateUp);
    CHECK(imex_incidents(h, g, "UP", 5, hr, where) == 0 &&
              hr->overallHealth == DCGM_HEALTH_RESULT_PASS,
          "%s: UP/READY has %u incidents", where, hr->incidentCount);
    CHECK(imex_incidents(h, g, "DOWN", 5, hr, where) == 1 &&
              hr->overallHealth == DCGM_HEALTH_RESULT_FAIL,
          "%s: DOWN: %u incidents", where, hr->incidentCount);
    CHECK(strstr(hr->incidents[0].error.msg, "IMEX domain status") &&
              strstr(hr->incidents[0].error.msg, "DOWN"),
          "%s: message \"%s\"", where, hr->incidents[0].error.msg);
    CHECK(imex_incidents(h, g, "DEGRADED", 5, hr, where) == 1, "%s: DEGRADED passes", where);
    CHECK(imex_incidents(h, g, "UP", 0, hr, where) == 1, "%s: daemon INITIALIZING passes", where);
    CHECK(strstr(hr->incidents[0].error.msg, "IMEX daemon status") &&
              strstr(hr->incidents[0].error.msg, "0"),
          "%s: message \"%s\"", where, hr->incidents[0].error.msg);
    CHECK(imex_incidents(h, g, "UP", -3, hr, where) == 1, "%s: daemon COMMAND_ERROR", where);
    CHECK(imex_incidents(h, g, "DOWN", 2, hr, where) == 2, "%s: both unhealthy", where);
    /* the statuses that pass */
    CHECK(imex_incidents(h, g, "UP", 7, hr, where) == 0, "%s: daemon UNAVAILABLE", where);
    CHECK(imex_incidents(h, g, "NOT_INSTALLED", -1, hr, where) == 0, "%s: not installed", where);
    CHECK(imex_incidents(h, g, "NOT_CONFIGURED", -2, hr, where) == 0, "%s: unconfigured", where);
    CHECK(imex_incidents(h, g, "UNAVAILABLE", -1, hr, where) == 0, "%s: unavailable", where);
    /* blanks are no finding */
    CHECK(imex_incidents(h, g, DCGM_STR_BLANK, DCGM_INT64_BLANK, hr, where) == 0,
          "%s: blanks", where);

    /* other systems than NVLINK: no IMEX check */
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_PCIE), DCGM_ST_OK);
    CHECK(imex_incidents(h, g, "DOWN", 0, hr, where) == 0, "%s: PCIE only", where);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
    free(hr);
}

static void test_health(void)
{
    /* the tool says all is well: only injected values make findings */
    setenv("DCGM_SIM_IMEX_CTL", tool("up.sh", TOOL_UP), 1);
    run_both_ways(scenario, DCGM_OPERATION_MODE_AUTO, script_health);
}

/* Every engine of the program runs the one scenario. */
static void set_scenario(const char *build_dir) { setenv("DCGM_SIM_SCENARIO", scenario, 1); }

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "values", test_values },
        { "health", test_health },
    };
    const check_program program = {
        .only_env = "TEST_IMEX_ONLY",
        .scenario_text = SCENARIO_TEXT,
        .prepare = set_scenario,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
