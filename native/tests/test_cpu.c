/*
 * test_cpu.c -- CPU entities as DCGM's sysmon module has them: the host's
 * NUMA nodes and logical CPUs when DCGM_SUPPORT_NON_NVIDIA_CPU=1 (or on an
 * NVIDIA CPU), fake CPUs and cores from dcgmCreateFakeEntities,
 * dcgmGetCpuHierarchy / _v2 and dcgmCpuHierarchyCpuOwnsCore, the
 * utilization fields read from /proc/stat, and the health module's CPU
 * thermal and power checks on injected values.  Every script runs on an
 * embedded engine and through a hostengine.
 *
 * usage: test_cpu BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glob.h>
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

#define FR_FIELD_THRESHOLD_DBL 36 /* dcgm_errors.h */
enum {
    F_UTIL_TOTAL = 1100, F_UTIL_USER = 1101, F_UTIL_IRQ = 1104,
    F_TEMP = 1110, F_TEMP_WARN = 1111, F_TEMP_CRIT = 1112,
    F_POWER = 1130, F_POWER_LIMIT = 1131, F_CLOCK = 1120, F_VENDOR = 1140, F_MODEL = 1141
};

static const char SCENARIO_TEXT[] = "[[gpu]]\nmodel = \"H100\"\ncount = 1\n";

/* ---- the host, read the way NVIDIA's test reads it ------------------------------ */

typedef struct host_node {
    unsigned int id;
    unsigned char owns[DCGM_MAX_NUM_CPU_CORES];
} host_node;

static host_node host[DCGM_MAX_NUM_CPUS];
static unsigned int host_nodes;

static int read_first_word(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, " \r\n")] = '\0';
    return ok;
}

static void read_host(void)
{
    char text[4096];
    host_nodes = 0;
    if (!read_first_word("/sys/devices/system/node/has_cpu", text, sizeof text))
        return;
    unsigned int first = 0, last = 0;
    if (sscanf(text, "%u-%u", &first, &last) < 2)
        last = first;
    for (unsigned int n = first; n <= last && host_nodes < DCGM_MAX_NUM_CPUS; n++) {
        host_node *h = &host[host_nodes++];
        memset(h, 0, sizeof *h);
        h->id = n;
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%u/cpulist", n);
        if (!read_first_word(path, text, sizeof text))
            continue;
        char *save = NULL;
        for (char *part = strtok_r(text, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
            unsigned int a = 0, b = 0;
            if (sscanf(part, "%u-%u", &a, &b) < 2)
                b = a;
            for (unsigned int c = a; c <= b && c < DCGM_MAX_NUM_CPU_CORES; c++)
                h->owns[c] = 1;
        }
    }
}

static int nvidia_cpu(void)
{
    glob_t g;
    int found = 0;
    if (glob("/sys/devices/soc*/soc_id", 0, NULL, &g) != 0)
        return 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char text[128];
        if (read_first_word(g.gl_pathv[i], text, sizeof text) && strstr(text, ":036b:"))
            found = 1;
    }
    globfree(&g);
    return found;
}

/* ---- hierarchy and entities ------------------------------------------------------ */

static void script_no_cpus(dcgmHandle_t h, const char *where)
{
    dcgmCpuHierarchy_v2 *h2 = calloc(1, sizeof *h2);
    h2->version = dcgmCpuHierarchy_version2;
    /* without CPUs to monitor the sysmon module is not loaded */
    CHECK_RC(p_dcgmGetCpuHierarchy_v2(h, h2), DCGM_ST_MODULE_NOT_LOADED);
    dcgm_field_eid_t ids[16];
    int n = 16;
    CHECK_RC(p_dcgmGetEntityGroupEntities(h, DCGM_FE_CPU, ids, &n, 0), DCGM_ST_OK);
    CHECK(n == 0, "%s: %d CPUs without DCGM_SUPPORT_NON_NVIDIA_CPU", where, n);
    free(h2);
}

static void check_owned(const dcgmCpuHierarchyOwnedCores_v1 *owned, const host_node *node,
                        const char *where)
{
    unsigned int wrong = 0;
    for (unsigned int c = 0; c < DCGM_MAX_NUM_CPU_CORES; c++)
        wrong += p_dcgmCpuHierarchyCpuOwnsCore(c, owned) != node->owns[c];
    CHECK(wrong == 0, "%s: node %u: %u cores differ from its cpulist", where, node->id, wrong);
    CHECK(owned->version == dcgmCpuHierarchyOwnedCores_version1, "%s: owned cores version %x",
          where, owned->version);
}

static void script_host(dcgmHandle_t h, const char *where)
{
    dcgmCpuHierarchy_v2 *h2 = calloc(1, sizeof *h2);
    dcgmCpuHierarchy_v1 *h1 = calloc(1, sizeof *h1);

    CHECK_RC(p_dcgmGetCpuHierarchy_v2(h, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetCpuHierarchy(h, NULL), DCGM_ST_BADPARAM);
    h2->version = dcgmCpuHierarchy_version1;
    CHECK_RC(p_dcgmGetCpuHierarchy_v2(h, h2), DCGM_ST_VER_MISMATCH);
    h1->version = dcgmCpuHierarchy_version2;
    CHECK_RC(p_dcgmGetCpuHierarchy(h, h1), DCGM_ST_VER_MISMATCH);

    h2->version = dcgmCpuHierarchy_version2;
    CHECK_RC(p_dcgmGetCpuHierarchy_v2(h, h2), DCGM_ST_OK);
    h1->version = dcgmCpuHierarchy_version1;
    CHECK_RC(p_dcgmGetCpuHierarchy(h, h1), DCGM_ST_OK);
    CHECK(h2->numCpus == host_nodes && h1->numCpus == host_nodes, "%s: %u / %u CPUs, host has %u",
          where, h2->numCpus, h1->numCpus, host_nodes);
    for (unsigned int i = 0; i < h2->numCpus && i < host_nodes; i++) {
        CHECK(h2->cpus[i].cpuId == host[i].id && h1->cpus[i].cpuId == host[i].id,
              "%s: CPU %u is %u", where, i, h2->cpus[i].cpuId);
        check_owned(&h2->cpus[i].ownedCores, &host[i], where);
        check_owned(&h1->cpus[i].ownedCores, &host[i], where);
    }

    /* the entities: the nodes, and every logical CPU as a core */
    dcgm_field_eid_t *ids = calloc(DCGM_MAX_NUM_CPU_CORES, sizeof *ids);
    int n = DCGM_MAX_NUM_CPU_CORES;
    CHECK_RC(p_dcgmGetEntityGroupEntities(h, DCGM_FE_CPU, ids, &n, 0), DCGM_ST_OK);
    CHECK(n == (int)host_nodes && (n == 0 || ids[0] == host[0].id), "%s: %d CPU entities", where, n);
    unsigned int cores = 0;
    for (unsigned int i = 0; i < host_nodes; i++)
        for (unsigned int c = 0; c < DCGM_MAX_NUM_CPU_CORES; c++)
            cores += host[i].owns[c];
    n = DCGM_MAX_NUM_CPU_CORES;
    CHECK_RC(p_dcgmGetEntityGroupEntities(h, DCGM_FE_CPU_CORE, ids, &n, 0), DCGM_ST_OK);
    CHECK(n == (int)cores, "%s: %d core entities, want %u", where, n, cores);

    /* a fake CPU comes after the host's, with a fake core of its own */
    dcgmCreateFakeEntities_v2 *fake = calloc(1, sizeof *fake);
    fake->version = dcgmCreateFakeEntities_version2;
    fake->numToCreate = 1;
    fake->entityList[0].entity.entityGroupId = DCGM_FE_CPU;
    if (host_nodes >= DCGM_MAX_NUM_CPUS) {
        /* a host with DCGM's maximum of CPUs leaves no room for a fake one */
        CHECK_RC(p_dcgmCreateFakeEntities(h, fake), DCGM_ST_INSUFFICIENT_RESOURCES);
        free(fake);
        free(ids);
        free(h1);
        free(h2);
        return;
    }
    CHECK_RC(p_dcgmCreateFakeEntities(h, fake), DCGM_ST_OK);
    unsigned int cpu = fake->entityList[0].entity.entityId;
    CHECK(cpu == host_nodes, "%s: fake CPU %u", where, cpu);
    fake->entityList[0].entity.entityGroupId = DCGM_FE_CPU_CORE;
    fake->entityList[0].parent.entityGroupId = DCGM_FE_CPU;
    fake->entityList[0].parent.entityId = cpu;
    CHECK_RC(p_dcgmCreateFakeEntities(h, fake), DCGM_ST_OK);
    unsigned int core = fake->entityList[0].entity.entityId;
    CHECK(core >= cores && core < DCGM_MAX_NUM_CPU_CORES, "%s: fake core %u", where, core);
    /* a core of a real CPU, or under something else than a CPU, is refused */
    if (host_nodes > 0) {
        fake->entityList[0].parent.entityId = host[0].id;
        CHECK_RC(p_dcgmCreateFakeEntities(h, fake), DCGM_ST_INSUFFICIENT_RESOURCES);
    }
    fake->entityList[0].parent.entityGroupId = DCGM_FE_GPU;
    fake->entityList[0].parent.entityId = 0;
    CHECK_RC(p_dcgmCreateFakeEntities(h, fake), DCGM_ST_BADPARAM);

    CHECK_RC(p_dcgmGetCpuHierarchy_v2(h, h2), DCGM_ST_OK);
    CHECK(h2->numCpus == host_nodes + 1 && h2->cpus[host_nodes].cpuId == cpu, "%s: %u CPUs", where,
          h2->numCpus);
    CHECK(p_dcgmCpuHierarchyCpuOwnsCore(core, &h2->cpus[host_nodes].ownedCores) == 1 &&
              p_dcgmCpuHierarchyCpuOwnsCore(0, &h2->cpus[host_nodes].ownedCores) == (core == 0),
          "%s: the fake CPU owns its core", where);
    CHECK(p_dcgmCpuHierarchyCpuOwnsCore(DCGM_MAX_NUM_CPU_CORES, &h2->cpus[0].ownedCores) == 0 &&
              p_dcgmCpuHierarchyCpuOwnsCore(0, NULL) == 0,
          "%s: out-of-range core or no mask", where);

    /* DCGM_MAX_NUM_CPUS at most */
    fake->entityList[0].entity.entityGroupId = DCGM_FE_CPU;
    int rc = DCGM_ST_OK;
    for (unsigned int i = h2->numCpus; i <= DCGM_MAX_NUM_CPUS && rc == DCGM_ST_OK; i++)
        rc = p_dcgmCreateFakeEntities(h, fake);
    CHECK_RC(rc, DCGM_ST_INSUFFICIENT_RESOURCES);
    CHECK_RC(p_dcgmGetCpuHierarchy_v2(h, h2), DCGM_ST_OK);
    CHECK(h2->numCpus == DCGM_MAX_NUM_CPUS, "%s: %u CPUs at the limit", where, h2->numCpus);

    free(fake);
    free(ids);
    free(h1);
    free(h2);
}

/* ---- utilization ---------------------------------------------------------------------- */

static void script_util(dcgmHandle_t h, const char *where)
{
    if (host_nodes == 0)
        return;
    unsigned int cpu = host[0].id, core = 0;
    while (core < DCGM_MAX_NUM_CPU_CORES && !host[0].owns[core])
        core++;
    /* the five utilization fields, the temperature, the clock, vendor and model */
    unsigned short fields[9] = { F_UTIL_TOTAL, F_UTIL_USER, 1102, 1103, F_UTIL_IRQ, F_TEMP,
                                 F_CLOCK, F_VENDOR, F_MODEL };
    dcgmGpuGrp_t g = 0;
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "cpus", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, g, DCGM_FE_CPU, cpu), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, g, DCGM_FE_CPU_CORE, core), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupCreate(h, 9, fields, "util", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFields(h, g, fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);

    /* values come once a series has a reading to compare with */
    dcgmFieldValue_v1 cv[5], kv[5];
    int64_t deadline = mono_ms() + 5000;
    int ready = 0;
    while (!ready && mono_ms() < deadline) {
        sleep_ms(150);
        CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
        memset(cv, 0, sizeof cv);
        memset(kv, 0, sizeof kv);
        CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU, (int)cpu, fields, 5, cv), DCGM_ST_OK);
        CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU_CORE, (int)core, fields, 5, kv),
                 DCGM_ST_OK);
        ready = 1;
        for (int i = 0; i < 5; i++)
            ready &= cv[i].status == DCGM_ST_OK && kv[i].status == DCGM_ST_OK;
    }
    CHECK(ready, "%s: CPU %u / core %u utilization never came (status %d / %d)", where, cpu, core,
          cv[0].status, kv[0].status);
    for (int i = 0; ready && i < 5; i++) {
        CHECK(cv[i].fieldType == DCGM_FT_DOUBLE && cv[i].value.dbl >= 0.0 && cv[i].value.dbl <= 1.0,
              "%s: CPU field %u = %f", where, fields[i], cv[i].value.dbl);
        CHECK(kv[i].value.dbl >= 0.0 && kv[i].value.dbl <= 1.0, "%s: core field %u = %f", where,
              fields[i], kv[i].value.dbl);
    }
    if (ready)
        CHECK(cv[0].value.dbl + 1e-9 >= cv[1].value.dbl &&
                  kv[0].value.dbl + 1e-9 >= kv[1].value.dbl,
              "%s: total below user", where);
    /* the CPUs' other fields have no reading here */
    unsigned short temp = F_TEMP;
    dcgmFieldValue_v1 t;
    memset(&t, 0, sizeof t);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU, (int)cpu, &temp, 1, &t), DCGM_ST_OK);
    CHECK(t.status != DCGM_ST_OK || t.value.dbl >= DCGM_FP64_BLANK, "%s: CPU temperature %f", where,
          t.value.dbl);

    /* vendor and model: NVIDIA's Grace, or unknown */
    unsigned short names[2] = { F_VENDOR, F_MODEL };
    dcgmFieldValue_v1 nv[2];
    memset(nv, 0, sizeof nv);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU, (int)cpu, names, 2, nv), DCGM_ST_OK);
    const char *vendor = nvidia_cpu() ? "Nvidia" : "Unknown";
    CHECK(nv[0].status == DCGM_ST_OK && strcmp(nv[0].value.str, vendor) == 0,
          "%s: vendor \"%s\", want %s", where, nv[0].value.str, vendor);
    CHECK(nv[1].status == DCGM_ST_OK &&
              (strcmp(nv[1].value.str, "Unknown") == 0 || strcmp(nv[1].value.str, "Grace") == 0),
          "%s: model \"%s\"", where, nv[1].value.str);
    /* a core's clock is its cpufreq reading, in kHz; a CPU has none */
    char path[96], khz[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_cur_freq", core);
    unsigned short clock = F_CLOCK;
    dcgmFieldValue_v1 cl;
    memset(&cl, 0, sizeof cl);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU_CORE, (int)core, &clock, 1, &cl),
             DCGM_ST_OK);
    if (read_first_word(path, khz, sizeof khz))
        CHECK(cl.status == DCGM_ST_OK && cl.value.i64 > 0 && cl.value.i64 < DCGM_INT64_BLANK,
              "%s: core clock %lld", where, (long long)cl.value.i64);
    else
        CHECK(cl.status != DCGM_ST_OK || cl.value.i64 >= DCGM_INT64_BLANK,
              "%s: core clock %lld without cpufreq", where, (long long)cl.value.i64);
    memset(&cl, 0, sizeof cl);
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_CPU, (int)cpu, &clock, 1, &cl), DCGM_ST_OK);
    CHECK(cl.status != DCGM_ST_OK || cl.value.i64 >= DCGM_INT64_BLANK, "%s: CPU clock %lld",
          where, (long long)cl.value.i64);
    CHECK_RC(p_dcgmUnwatchFields(h, g, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(h, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
}

/* In MANUAL mode the first update stores no utilization at all. */
static void test_util_first_reading(void)
{
    if (host_nodes == 0)
        return;
    setenv("DCGM_SUPPORT_NON_NVIDIA_CPU", "1", 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_MANUAL, &h), DCGM_ST_OK);
    dcgmGpuGrp_t g = 0;
    dcgmFieldGrp_t fg = 0;
    unsigned short field = F_UTIL_USER;
    CHECK_RC(p_dcgmGroupCreate(EMB, DCGM_GROUP_EMPTY, "cpu", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(EMB, g, DCGM_FE_CPU, host[0].id), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupCreate(EMB, 1, &field, "user", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFields(EMB, g, fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    dcgmFieldValue_v1 v;
    memset(&v, 0, sizeof v);
    CHECK_RC(p_dcgmEntityGetLatestValues(EMB, DCGM_FE_CPU, (int)host[0].id, &field, 1, &v),
             DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_NO_DATA, "first reading: status %d value %f", v.status, v.value.dbl);
    sleep_ms(120);
    CHECK_RC(p_dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    CHECK_RC(p_dcgmEntityGetLatestValues(EMB, DCGM_FE_CPU, (int)host[0].id, &field, 1, &v),
             DCGM_ST_OK);
    CHECK(v.status == DCGM_ST_OK && v.value.dbl >= 0 && v.value.dbl <= 1.0,
          "second reading: status %d value %f", v.status, v.value.dbl);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    unsetenv("DCGM_SUPPORT_NON_NVIDIA_CPU");
}

/* ---- health ------------------------------------------------------------------------------ */

static void inject_cpu(dcgmHandle_t h, unsigned int cpu, unsigned short field, double value,
                       int offset_s)
{
    dcgmInjectFieldValue_t v;
    injected_dbl(&v, field, wall_us() + (int64_t)offset_s * 1000000, value);
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_CPU, cpu, &v), DCGM_ST_OK);
}

static void health_check(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmHealthResponse_v5 *hr)
{
    memset(hr, 0, sizeof *hr);
    hr->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, g, hr), DCGM_ST_OK);
}

static void script_health(dcgmHandle_t h, const char *where)
{
    dcgmHealthResponse_v5 *hr = calloc(1, sizeof *hr);
    unsigned int cpu = new_fake_entity(h, DCGM_FE_CPU, DCGM_FE_NONE, 0);
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "cpu", &g), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, g, DCGM_FE_CPU, cpu), DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_THERMAL | DCGM_HEALTH_WATCH_POWER), DCGM_ST_OK);

    /* nothing injected: nothing to judge */
    health_check(h, g, hr);
    CHECK(hr->incidentCount == 0 && hr->overallHealth == DCGM_HEALTH_RESULT_PASS,
          "%s: %u incidents without values", where, hr->incidentCount);

    /* below the limits */
    inject_cpu(h, cpu, F_TEMP, 60.0, -10);
    inject_cpu(h, cpu, F_TEMP_WARN, 100.0, -10);
    inject_cpu(h, cpu, F_TEMP_CRIT, 110.0, -10);
    inject_cpu(h, cpu, F_POWER, 100.0, -10);
    inject_cpu(h, cpu, F_POWER_LIMIT, 150.0, -10);
    health_check(h, g, hr);
    CHECK(hr->incidentCount == 0, "%s: %u incidents below the limits", where, hr->incidentCount);

    /* the mean of the minute's first and latest temperatures reaches the warning
     * limit (60 and 140: 100): a WARN, and 140 >= 110 a FAIL */
    inject_cpu(h, cpu, F_TEMP, 140.0, 5);
    health_check(h, g, hr);
    CHECK(hr->incidentCount == 2 && hr->overallHealth == DCGM_HEALTH_RESULT_FAIL,
          "%s: %u incidents, overall %d", where, hr->incidentCount, (int)hr->overallHealth);
    const dcgmIncidentInfo_t *i0 = &hr->incidents[0], *i1 = &hr->incidents[1];
    CHECK(i0->system == DCGM_HEALTH_WATCH_THERMAL && i0->health == DCGM_HEALTH_RESULT_WARN &&
              i0->error.code == FR_FIELD_THRESHOLD_DBL &&
              i0->entityInfo.entityGroupId == DCGM_FE_CPU && i0->entityInfo.entityId == cpu,
          "%s: first incident system %x health %d code %d \"%s\"", where, (unsigned)i0->system,
          (int)i0->health, i0->error.code, i0->error.msg);
    CHECK(i1->system == DCGM_HEALTH_WATCH_THERMAL && i1->health == DCGM_HEALTH_RESULT_FAIL &&
              i1->error.code == FR_FIELD_THRESHOLD_DBL && strstr(i1->error.msg, "140.0"),
          "%s: second incident health %d \"%s\"", where, (int)i1->health, i1->error.msg);

    /* a cooler latest value: the mean 80 is below 100, 100 below 110 */
    inject_cpu(h, cpu, F_TEMP, 100.0, 6);
    health_check(h, g, hr);
    CHECK(hr->incidentCount == 0, "%s: %u incidents after cooling", where, hr->incidentCount);

    /* power at the limit: a FAIL under POWER */
    inject_cpu(h, cpu, F_POWER, 150.0, 7);
    health_check(h, g, hr);
    CHECK(hr->incidentCount == 1 && hr->incidents[0].system == DCGM_HEALTH_WATCH_POWER &&
              hr->incidents[0].health == DCGM_HEALTH_RESULT_FAIL &&
              hr->incidents[0].error.code == FR_FIELD_THRESHOLD_DBL &&
              hr->incidents[0].entityInfo.entityGroupId == DCGM_FE_CPU,
          "%s: power: %u incidents", where, hr->incidentCount);

    /* only the systems set are checked; a blank power is no finding */
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_THERMAL), DCGM_ST_OK);
    health_check(h, g, hr);
    CHECK(hr->incidentCount == 0, "%s: %u incidents, THERMAL only", where, hr->incidentCount);
    CHECK_RC(p_dcgmHealthSet(h, g, DCGM_HEALTH_WATCH_POWER), DCGM_ST_OK);
    inject_cpu(h, cpu, F_POWER, DCGM_FP64_BLANK, 8);
    health_check(h, g, hr);
    CHECK(hr->incidentCount == 0, "%s: %u incidents on a blank power", where, hr->incidentCount);

    CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
    free(hr);
}

/* ---- the runs ------------------------------------------------------------------------------ */

static void both_ways(void (*script)(dcgmHandle_t, const char *))
{
    run_both_ways(scenario, DCGM_OPERATION_MODE_AUTO, script);
}

static void test_no_cpus(void)
{
    unsetenv("DCGM_SUPPORT_NON_NVIDIA_CPU");
    if (nvidia_cpu())
        return; /* DCGM monitors NVIDIA's CPUs whatever the variable says */
    both_ways(script_no_cpus);
}

static void test_host(void)
{
    setenv("DCGM_SUPPORT_NON_NVIDIA_CPU", "1", 1);
    both_ways(script_host);
    unsetenv("DCGM_SUPPORT_NON_NVIDIA_CPU");
}

static void test_util(void)
{
    setenv("DCGM_SUPPORT_NON_NVIDIA_CPU", "1", 1);
    both_ways(script_util);
    unsetenv("DCGM_SUPPORT_NON_NVIDIA_CPU");
}

static void test_health(void)
{
    /* fake CPUs need no host CPUs */
    unsetenv("DCGM_SUPPORT_NON_NVIDIA_CPU");
    both_ways(script_health);
}

/* Every engine of the program runs the one scenario; the host is read before any runs. */
static void set_scenario_read_host(const char *build_dir)
{
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    read_host();
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "no_cpus", test_no_cpus },
        { "host", test_host },
        { "util", test_util },
        { "util_first_reading", test_util_first_reading },
        { "health", test_health },
    };
    const check_program program = {
        .only_env = "TEST_CPU_ONLY",
        .scenario_text = SCENARIO_TEXT,
        .prepare = set_scenario_read_host,
    };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
