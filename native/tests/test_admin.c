/*
 * test_admin.c -- the engine's administration as a DCGM client sees it:
 * module statuses and the denylist (dcgmModuleGetStatuses,
 * dcgmModuleDenylist, modules loading on first use), pausing telemetry for
 * a diagnostic (dcgmPauseTelemetryForDiag / dcgmResumeTelemetryForDiag and
 * the diag module's PAUSED), the diag entry points' checks before NVVS
 * (GROUP_IS_EMPTY), detaching and re-attaching the driver (dcgmDetachDriver,
 * dcgmAttachDriver: DETACHED GPUs, blank reads, bind events, watches
 * resuming), introspection of the process serving the engine, and DCGM's
 * debug log file ($__DCGM_DBG_FILE / $__DCGM_DBG_LVL).  The script runs on
 * an embedded engine and through a hostengine.
 *
 * usage: test_admin BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
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

/* dcgmModuleId_t, dcgmModuleStatus_t, dcgmBindUnbindEventState_t */
enum { M_CORE = 0, M_NVSWITCH = 1, M_INTROSPECT = 3, M_HEALTH = 4, M_POLICY = 5, M_DIAG = 7,
       M_COUNT = 11 };
enum { S_NOT_LOADED = 0, S_DENYLISTED = 1, S_LOADED = 3, S_PAUSED = 5 };
enum { BU_REINITIALIZING = 1, BU_REINITIALIZED = 2 };
#define F_BIND_EVENT 6
#define F_GPU_TEMP 150

/* dcgmModuleGetStatuses_v1, dcgmIntrospectMemory_v1, dcgmIntrospectCpuUtil_v1 */
typedef struct {
    unsigned int version, numStatuses;
    struct {
        unsigned int id, status;
    } statuses[16];
} module_statuses;
#define MODULE_STATUSES_V1 (0x01000000u | (unsigned int)sizeof(module_statuses))
typedef struct {
    unsigned int version;
    long long bytesUsed;
} intro_memory;
typedef struct {
    unsigned int version;
    double total, kernel, user;
} intro_cpu;

/* dcgmRunDiag_v10 is large; the engine reads its version and group only */
#define RUN_DIAG_V10_SIZE 119272u
#define DIAG_RESPONSE_V12_SIZE (dcgmDiagResponse_version12 & 0xffffffu)

static const char SCENARIO_TEXT[] = "[[gpu]]\nmodel = \"H100\"\ncount = 2\n";
static char log_path[512];

static unsigned int module_status(dcgmHandle_t h, unsigned int module)
{
    module_statuses ms;
    memset(&ms, 0, sizeof ms);
    ms.version = MODULE_STATUSES_V1;
    CHECK_RC(p_dcgmModuleGetStatuses(h, &ms), DCGM_ST_OK);
    return module < ms.numStatuses ? ms.statuses[module].status : 0xffffffffu;
}

static int action_validate(dcgmHandle_t h, dcgmGpuGrp_t group)
{
    unsigned char *drd = calloc(1, RUN_DIAG_V10_SIZE);
    unsigned char *response = calloc(1, DIAG_RESPONSE_V12_SIZE);
    unsigned int v = dcgmRunDiag_version10, rv = dcgmDiagResponse_version12;
    memcpy(drd, &v, sizeof v);
    memcpy(drd + 16, &group, sizeof group);
    memcpy(response, &rv, sizeof rv);
    int rc = p_dcgmActionValidate_v2(h, drd, response);
    free(response);
    free(drd);
    return rc;
}

static int64_t temp_of(dcgmHandle_t h, unsigned int gpu)
{
    unsigned short field = F_GPU_TEMP;
    dcgmFieldValue_v1 v;
    memset(&v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, (int)gpu, &field, 1, &v), DCGM_ST_OK);
    return v.value.i64;
}

static void modules_script(dcgmHandle_t h, const char *where)
{
    module_statuses ms;
    memset(&ms, 0, sizeof ms);
    ms.version = MODULE_STATUSES_V1;
    CHECK_RC(p_dcgmModuleGetStatuses(h, NULL), DCGM_ST_BADPARAM);
    ms.version = 0;
    CHECK_RC(p_dcgmModuleGetStatuses(h, &ms), DCGM_ST_VER_MISMATCH);
    ms.version = MODULE_STATUSES_V1;
    CHECK_RC(p_dcgmModuleGetStatuses(h, &ms), DCGM_ST_OK);
    CHECK(ms.numStatuses == M_COUNT, "%s: %u statuses", where, ms.numStatuses);
    for (unsigned int i = 0; i < ms.numStatuses && i < 16; i++)
        CHECK(ms.statuses[i].id == i, "%s: entry %u is module %u", where, i, ms.statuses[i].id);
    CHECK(ms.statuses[M_CORE].status == S_LOADED, "%s: core %u", where, ms.statuses[M_CORE].status);
    CHECK(ms.statuses[M_HEALTH].status == S_NOT_LOADED, "%s: health %u", where,
          ms.statuses[M_HEALTH].status);
    CHECK(ms.statuses[M_INTROSPECT].status == S_NOT_LOADED, "%s: introspect %u", where,
          ms.statuses[M_INTROSPECT].status);

    /* the core module and ids past the last cannot go on the denylist */
    CHECK_RC(p_dcgmModuleDenylist(h, M_CORE), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmModuleDenylist(h, M_COUNT), DCGM_ST_BADPARAM);

    /* health loads on first use; a loaded module is in use */
    CHECK_RC(p_dcgmHealthSet(h, DCGM_GROUP_ALL_GPUS, DCGM_HEALTH_WATCH_PCIE), DCGM_ST_OK);
    CHECK(module_status(h, M_HEALTH) == S_LOADED, "%s: health not loaded", where);
    CHECK_RC(p_dcgmModuleDenylist(h, M_HEALTH), DCGM_ST_IN_USE);

    /* a module never used goes on the denylist (twice is fine) */
    CHECK_RC(p_dcgmModuleDenylist(h, M_POLICY), DCGM_ST_OK);
    CHECK_RC(p_dcgmModuleDenylist(h, M_POLICY), DCGM_ST_OK);
    CHECK(module_status(h, M_POLICY) == S_DENYLISTED, "%s: policy not denylisted", where);

    /* introspection: the numbers of the process serving the engine */
    intro_memory mem = { 0, 0 };
    CHECK_RC(p_dcgmIntrospectGetHostengineMemoryUsage(h, &mem, 1), DCGM_ST_VER_MISMATCH);
    mem.version = dcgmIntrospectMemory_version1;
    CHECK_RC(p_dcgmIntrospectGetHostengineMemoryUsage(h, &mem, 1), DCGM_ST_OK);
    CHECK(mem.bytesUsed > (1 << 20) && mem.bytesUsed < (4ll << 30), "%s: %lld bytes used", where,
          mem.bytesUsed);
    CHECK(module_status(h, M_INTROSPECT) == S_LOADED, "%s: introspect not loaded", where);
    intro_cpu cpu = { dcgmIntrospectCpuUtil_version1, -1, -1, -1 };
    CHECK_RC(p_dcgmIntrospectGetHostengineCpuUtilization(h, &cpu, 1), DCGM_ST_OK);
    CHECK(cpu.total >= 0 && cpu.total <= 1 && cpu.kernel >= 0 && cpu.user >= 0,
          "%s: cpu %f %f %f", where, cpu.total, cpu.kernel, cpu.user);
    CHECK(cpu.total == cpu.user + cpu.kernel, "%s: total %f != %f + %f", where, cpu.total, cpu.user,
          cpu.kernel);
    CHECK_RC(p_dcgmModuleDenylist(h, M_INTROSPECT), DCGM_ST_IN_USE);

    /* paused: loaded modules pause, the diag module refuses to run */
    CHECK_RC(p_dcgmPauseTelemetryForDiag(h), DCGM_ST_OK);
    CHECK(module_status(h, M_CORE) == S_PAUSED, "%s: core not paused", where);
    CHECK(module_status(h, M_HEALTH) == S_PAUSED, "%s: health not paused", where);
    CHECK_RC(action_validate(h, DCGM_GROUP_ALL_GPUS), DCGM_ST_PAUSED);
    CHECK(module_status(h, M_DIAG) == S_PAUSED, "%s: diag loaded unpaused", where);
    /* the cache manager's GPUs are disabled meanwhile */
    DcgmEntityStatus_t st = DcgmEntityStatusUnknown;
    CHECK_RC(p_dcgmGetGpuStatus(h, 0, &st), DCGM_ST_OK);
    CHECK(st == DcgmEntityStatusDisabled, "%s: status %d while paused", where, (int)st);
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int n = -1;
    CHECK_RC(p_dcgmGetAllSupportedDevices(h, ids, &n), DCGM_ST_OK);
    CHECK(n == 0, "%s: %d supported GPUs while paused", where, n);
    CHECK_RC(p_dcgmResumeTelemetryForDiag(h), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetGpuStatus(h, 0, &st), DCGM_ST_OK);
    CHECK(st == DcgmEntityStatusOk, "%s: status %d after resuming", where, (int)st);
    CHECK_RC(p_dcgmGetAllSupportedDevices(h, ids, &n), DCGM_ST_OK);
    CHECK(n == 2, "%s: %d supported GPUs after resuming", where, n);
    CHECK(module_status(h, M_CORE) == S_LOADED, "%s: core not resumed", where);
    CHECK(module_status(h, M_DIAG) == S_LOADED, "%s: diag not resumed", where);
    CHECK(module_status(h, M_POLICY) == S_DENYLISTED, "%s: policy left the denylist", where);

    /* an empty group is refused before anything would run */
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "admin-empty", &g), DCGM_ST_OK);
    CHECK_RC(action_validate(h, g), DCGM_ST_GROUP_IS_EMPTY);
    CHECK_RC(p_dcgmGroupAddDevice(h, g, 0), DCGM_ST_OK);
    CHECK_RC(action_validate(h, g), DCGM_ST_NOT_SUPPORTED);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
}

static void driver_script(dcgmHandle_t h, const char *where)
{
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int n = 0;
    CHECK_RC(p_dcgmGetAllSupportedDevices(h, ids, &n), DCGM_ST_OK);
    CHECK(n == 2, "%s: %d GPUs", where, n);

    /* a field watched on every GPU, and the bind event */
    unsigned short temp = F_GPU_TEMP;
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(h, 1, &temp, "admin-temp", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFields(h, DCGM_GROUP_ALL_GPUS, fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFieldValue(h, 0, F_BIND_EVENT, 1000000, 600.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK(temp_of(h, 0) < DCGM_INT64_BLANK, "%s: no temperature before detaching", where);
    long long t0 = wall_us();

    /* detached: the GPUs stay, DETACHED, with nothing to read */
    CHECK_RC(p_dcgmDetachDriver(h), DCGM_ST_OK);
    CHECK_RC(p_dcgmDetachDriver(h), DCGM_ST_OK);
    DcgmEntityStatus_t st = DcgmEntityStatusUnknown;
    CHECK_RC(p_dcgmGetGpuStatus(h, 0, &st), DCGM_ST_OK);
    CHECK(st == DcgmEntityStatusDetached, "%s: status %d", where, (int)st);
    CHECK_RC(p_dcgmGetAllSupportedDevices(h, ids, &n), DCGM_ST_OK);
    CHECK(n == 0, "%s: %d supported GPUs while detached", where, n);
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &n), DCGM_ST_OK);
    CHECK(n == 2, "%s: %d GPUs while detached", where, n);
    CHECK(temp_of(h, 0) >= DCGM_INT64_BLANK, "%s: a detached GPU has a temperature", where);
    /* no module loads while detached */
    CHECK_RC(action_validate(h, DCGM_GROUP_ALL_GPUS), DCGM_ST_GPUS_DETACHED);
    intro_memory mem = { dcgmIntrospectMemory_version1, 0 };
    CHECK_RC(p_dcgmIntrospectGetHostengineMemoryUsage(h, &mem, 0), DCGM_ST_GPUS_DETACHED);
    CHECK(module_status(h, M_DIAG) == S_NOT_LOADED, "%s: diag loaded while detached", where);

    /* attached again: the watch resumes on the same GPUs */
    CHECK_RC(p_dcgmAttachDriver(h), DCGM_ST_OK);
    CHECK_RC(p_dcgmAttachDriver(h), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetGpuStatus(h, 1, &st), DCGM_ST_OK);
    CHECK(st == DcgmEntityStatusOk, "%s: status %d after attaching", where, (int)st);
    CHECK_RC(p_dcgmGetAllSupportedDevices(h, ids, &n), DCGM_ST_OK);
    CHECK(n == 2 && ids[0] == 0 && ids[1] == 1, "%s: %d GPUs after attaching", where, n);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    CHECK(temp_of(h, 1) < DCGM_INT64_BLANK, "%s: no temperature after attaching", where);

    /* each detach and the attach left a bind event, in order */
    dcgmFieldValue_v1 vals[32];
    int count = 32;
    memset(vals, 0, sizeof vals);
    CHECK_RC(p_dcgmGetMultipleValuesForField(h, 0, F_BIND_EVENT, &count, t0, 0,
                                             DCGM_ORDER_ASCENDING, vals),
             DCGM_ST_OK);
    int64_t seen[8];
    int n_seen = 0;
    for (int i = 0; i < count && n_seen < 8; i++)
        if (vals[i].value.i64 == BU_REINITIALIZING || vals[i].value.i64 == BU_REINITIALIZED)
            seen[n_seen++] = vals[i].value.i64;
    CHECK(n_seen == 3 && seen[0] == BU_REINITIALIZING && seen[1] == BU_REINITIALIZING &&
              seen[2] == BU_REINITIALIZED,
          "%s: %d bind events", where, n_seen);

    CHECK_RC(p_dcgmUnwatchFields(h, DCGM_GROUP_ALL_GPUS, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(h, fg), DCGM_ST_OK);
}

static void script(dcgmHandle_t h, const char *where)
{
    driver_script(h, where);
    modules_script(h, where);
}

static void test_embedded(void) { run_embedded(scenario, DCGM_OPERATION_MODE_AUTO, script); }

static void test_hostengine(void) { run_through_hostengine(scenario, script); }

/* dcgmStartEmbedded_v2's denylist applies before anything can load a module */
static void test_start_denylist(void)
{
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    dcgmStartEmbeddedV2Params_v3 params;
    memset(&params, 0, sizeof params);
    params.version = dcgmStartEmbeddedV2Params_version3;
    params.opMode = DCGM_OPERATION_MODE_MANUAL;
    params.severity = DcgmLoggingSeverityUnspecified;
    params.denyListCount = 2;
    params.denyList[0] = M_CORE; /* ignored */
    params.denyList[1] = M_INTROSPECT;
    CHECK_RC(p_dcgmStartEmbedded_v2((dcgmStartEmbeddedV2Params_v1 *)&params), DCGM_ST_OK);
    CHECK(module_status(EMB, M_INTROSPECT) == S_DENYLISTED, "introspect not denylisted");
    CHECK(module_status(EMB, M_CORE) == S_LOADED, "core not loaded");
    intro_memory mem = { dcgmIntrospectMemory_version1, 0 };
    CHECK_RC(p_dcgmIntrospectGetHostengineMemoryUsage(EMB, &mem, 1), DCGM_ST_MODULE_NOT_LOADED);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    params.denyListCount = 1;
    params.denyList[0] = M_COUNT;
    CHECK_RC(p_dcgmStartEmbedded_v2((dcgmStartEmbeddedV2Params_v1 *)&params), DCGM_ST_BADPARAM);
}

static size_t read_log(char *buf, size_t cap)
{
    FILE *f = fopen(log_path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return n;
}

/* The log file the environment names, at its severity; a hostengine started
 * later in the process changes only the severity. */
static void test_logging(void)
{
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    static char buf[1 << 16];
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &h), DCGM_ST_OK);
    size_t n = read_log(buf, sizeof buf);
    CHECK(strstr(buf, " DEBUG [") != NULL, "no DEBUG line in %s", log_path);
    CHECK(strstr(buf, "module 1 (NvSwitch) loaded") != NULL, "no NvSwitch module line");
    CHECK(strstr(buf, " VERB [") == NULL, "a VERB line at DEBUG");
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);

    setenv("__DCGM_DBG_LVL", "warn", 1);
    setenv("__DCGM_DBG_FILE", "/nonexistent/elsewhere.log", 1);
    hostengine he;
    if (hostengine_start(&he, scenario, NULL)) {
        dcgmHandle_t rh = hostengine_connect(he.address);
        if (rh) {
            /* loading a module is INFO, refusing its denylisting a WARN */
            intro_memory mem = { dcgmIntrospectMemory_version1, 0 };
            CHECK_RC(p_dcgmIntrospectGetHostengineMemoryUsage(rh, &mem, 1), DCGM_ST_OK);
            CHECK_RC(p_dcgmModuleDenylist(rh, M_INTROSPECT), DCGM_ST_IN_USE);
            /* the severity request travels; the hostengine checks it */
            int remote_bad[3] = { 0x0200000c, 0, -5 };
            CHECK_RC(p_dcgmHostengineSetLoggingSeverity(rh, remote_bad), DCGM_ST_BADPARAM);
            int remote_other_logger[3] = { 0x0200000c, 7, 99 };
            CHECK_RC(p_dcgmHostengineSetLoggingSeverity(rh, remote_other_logger), DCGM_ST_OK);
            int remote_warn[3] = { 0x0200000c, 0, DcgmLoggingSeverityWarning };
            CHECK_RC(p_dcgmHostengineSetLoggingSeverity(rh, remote_warn), DCGM_ST_OK);
            CHECK_RC(p_dcgmDisconnect(rh), DCGM_ST_OK);
        }
        hostengine_stop(&he);
    }
    size_t m = read_log(buf, sizeof buf);
    CHECK(m > n, "nothing more in %s", log_path);
    const char *tail = buf + (m > n ? n : m);
    CHECK(strstr(tail, " WARN [") != NULL, "no WARN line after the severity changed");
    CHECK(strstr(tail, " INFO [") == NULL && strstr(tail, " DEBUG [") == NULL,
          "lines below WARN after the severity changed: %s", tail);

    /* dcgmHostengineSetLoggingSeverity: checked, then the severity of the
     * process serving the handle changes (its INFO line names the new one) */
    dcgmHandle_t eh = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &eh), DCGM_ST_OK);
    int bad_version[3] = { 0x0100000c, 0, DcgmLoggingSeverityVerbose };
    CHECK_RC(p_dcgmHostengineSetLoggingSeverity(EMB, bad_version), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmHostengineSetLoggingSeverity(EMB, NULL), DCGM_ST_BADPARAM);
    int too_high[3] = { 0x0200000c, 0, DcgmLoggingSeverityVerbose + 1 };
    CHECK_RC(p_dcgmHostengineSetLoggingSeverity(EMB, too_high), DCGM_ST_BADPARAM);
    size_t before = read_log(buf, sizeof buf);
    int verbose[3] = { 0x0200000c, 0, DcgmLoggingSeverityVerbose };
    CHECK_RC(p_dcgmHostengineSetLoggingSeverity(EMB, verbose), DCGM_ST_OK);
    size_t after = read_log(buf, sizeof buf);
    CHECK(after > before && strstr(buf + before, " INFO [") && strstr(buf + before, "VERB"),
          "no INFO line naming VERB after the change: %s", buf + (after > before ? before : after));
    int back[3] = { 0x0200000c, 0, DcgmLoggingSeverityWarning };
    CHECK_RC(p_dcgmHostengineSetLoggingSeverity(EMB, back), DCGM_ST_OK);
    before = read_log(buf, sizeof buf);
    CHECK_RC(p_dcgmModuleDenylist(EMB, M_POLICY), DCGM_ST_OK); /* an INFO line, filtered now */
    CHECK(read_log(buf, sizeof buf) == before, "an INFO line at WARN");
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unsetenv("__DCGM_DBG_LVL");
}

/* The process's log, in the scratch folder: chosen by the first start,
 * whichever test runs first. */
static void log_to_scratch(const char *build_dir)
{
    snprintf(log_path, sizeof log_path, "%s/engine.log", tmpdir);
    setenv("__DCGM_DBG_FILE", log_path, 1);
    setenv("__DCGM_DBG_LVL", "DEBUG", 1);
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "logging", test_logging },
        { "embedded", test_embedded },
        { "hostengine", test_hostengine },
        { "start_denylist", test_start_denylist },
    };
    const check_program program = {
        .only_env = "TEST_ADMIN_ONLY",
        .scenario_text = SCENARIO_TEXT,
        .prepare = log_to_scratch,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
