/*
 * engine_cpu.c -- the host's CPUs, as DCGM's system-monitoring module sees
 * them (modules/sysmon/DcgmModuleSysmon.cpp, common/CpuHelpers.cpp):
 *
 *  - CPUs are monitored when the host's CPU is NVIDIA's (a
 *    /sys/devices/soc*\/soc_id of the form "jep106:036b:<chip>") or when
 *    DCGM_SUPPORT_NON_NVIDIA_CPU is "1" in the engine's environment
 *    (CpuHelpers::Init).  Then every NUMA node of
 *    /sys/devices/system/node/has_cpu ("first-last" or one number) is a
 *    DCGM_FE_CPU entity with the node's number as id, and every logical CPU
 *    of its cpulist ("0-3,8-11") a DCGM_FE_CPU_CORE entity with the logical
 *    CPU's number as id (PopulateCpusIfNeeded, PopulateOwnedCoresBitmask).
 *    At most DCGM_MAX_NUM_CPUS CPUs and DCGM_MAX_NUM_CPU_CORES cores.
 *  - dcgmGetCpuHierarchy lists the CPUs, real and fake, each with the bitmask
 *    of its cores; no serial numbers (DCGM reads them from lshw).  Without any
 *    CPU the sysmon module is not there: DCGM_ST_MODULE_NOT_LOADED.
 *  - The utilization fields (DCGM_FI_DEV_CPU_UTIL_TOTAL/USER/NICE/SYS/IRQ,
 *    1100-1104) of a core are the share of its /proc/stat ticks since the
 *    series' previous sample that went to active time, user, nice, system and
 *    irq; of a CPU, the mean over its cores.  Ticks: user, nice, system,
 *    idle, iowait, irq, and the rest summed as "other"; the total counts all
 *    of them, active is the total less idle.  A first sample has nothing to
 *    compare with and stores no value (DcgmModuleSysmon::UpdateField answers
 *    DCGM_ST_NO_DATA).  DCGM compares with its newest /proc/stat reading at
 *    least an update interval old; the series' previous sample is that
 *    reading whenever the series is sampled on time.
 *  - A core's clock (DCGM_FI_DEV_CPU_CLOCK_CURRENT) is its cpufreq
 *    scaling_cur_freq, as written there (kHz); a CPU has none (ReadCoreSpeed).
 *    The vendor and model of every CPU are "Nvidia" and "Grace" (chip 0241)
 *    on NVIDIA's CPUs, "Unknown" otherwise (CpuHelpers).  The temperatures
 *    and powers are blank: the engine reads no thermal zones or hwmon files.
 */
#define _GNU_SOURCE
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define CPU_UTIL_FIRST 1100
#define CPU_UTIL_LAST 1104
#define CPU_CLOCK 1120
#define CPU_VENDOR 1140
#define CPU_MODEL 1141
#define CPU_LINE_MAX 4096

/* /proc/stat ticks of one core */
typedef struct core_ticks {
    unsigned long long user, nice, system, idle, irq, other;
    int present;
} core_ticks;

/* a utilization series' previous reading: the ticks of its cores */
typedef struct util_baseline {
    dcgm_field_entity_group_t group;
    dcgm_field_eid_t id;
    unsigned short field_id;
    unsigned int n;              /* cores */
    core_ticks *ticks;
} util_baseline;

struct engine_cpu_state {
    int monitoring;              /* the host's CPUs were enumerated */
    char vendor[16], model[16];
    util_baseline *baselines;
    size_t n_baselines, cap_baselines;
    core_ticks *reading;         /* the /proc/stat reading of the current pass */
    int64_t reading_us;
};

/* ---- discovery ------------------------------------------------------------------- */

/* FillVendorAndModelIfNvidiaCpuPresent: a soc_id "jep106:036b:<chip>";
 * *grace set when the chip is 0241 */
static int nvidia_cpu_present(int *grace)
{
    *grace = 0;
    glob_t g;
    if (glob("/sys/devices/soc*/soc_id", 0, NULL, &g) != 0)
        return 0;
    int found = 0;
    for (size_t i = 0; i < g.gl_pathc && !found; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        if (!f)
            continue;
        char line[128] = "";
        if (fgets(line, sizeof line, f)) {
            char *first = strchr(line, ':');
            char *second = first ? strchr(first + 1, ':') : NULL;
            found = second && second - first - 1 == 4 && strncmp(first + 1, "036b", 4) == 0 &&
                    strchr(second + 1, ':') == NULL;
            *grace = found && strncmp(second + 1, "0241", 4) == 0 &&
                     strchr(" \t\r\n", second[5]) != NULL;
        }
        fclose(f);
    }
    globfree(&g);
    return found;
}

static int cpus_monitored(struct engine_cpu_state *st)
{
    int grace = 0;
    int nvidia = nvidia_cpu_present(&grace);
    snprintf(st->vendor, sizeof st->vendor, "%s", nvidia ? "Nvidia" : "Unknown");
    snprintf(st->model, sizeof st->model, "%s", grace ? "Grace" : "Unknown");
    const char *env = getenv("DCGM_SUPPORT_NON_NVIDIA_CPU");
    return (env && strcmp(env, "1") == 0) || nvidia;
}

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, " \t\r\n")] = '\0'; /* the first word, as DCGM's `file >> s` */
    return ok;
}

/* "a" or "a-b" (a <= b) of decimal numbers, the whole of text */
static int parse_range(const char *text, unsigned long *first, unsigned long *last)
{
    char *end;
    if (*text < '0' || *text > '9')
        return 0;
    *first = strtoul(text, &end, 10);
    *last = *first;
    if (*end == '-') {
        const char *second = end + 1;
        if (*second < '0' || *second > '9')
            return 0;
        *last = strtoul(second, &end, 10);
    }
    return *end == '\0' && *first <= *last;
}

/* The cores of one NUMA node (its cpulist) as CPU_CORE entities */
static int add_node_cores(sim_engine *e, unsigned int node, const char *cpulist)
{
    char list[CPU_LINE_MAX];
    snprintf(list, sizeof list, "%s", cpulist);
    char *save = NULL;
    for (char *part = strtok_r(list, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        unsigned long first, last;
        if (!parse_range(part, &first, &last) || last >= DCGM_MAX_NUM_CPU_CORES)
            return DCGM_ST_OK; /* DCGM gives up on the node's cores */
        for (unsigned long core = first; core <= last; core++) {
            if (engine_find_entity_locked(e, DCGM_FE_CPU_CORE, (dcgm_field_eid_t)core))
                continue;
            engine_entity ent = { DCGM_FE_CPU_CORE, (dcgm_field_eid_t)core, DCGM_FE_CPU, node,
                                  0, ENGINE_NO_GPU, 0 };
            int rc = engine_add_entity_locked(e, &ent);
            if (rc != DCGM_ST_OK)
                return rc;
        }
    }
    return DCGM_ST_OK;
}

static int engine_cpu_init(sim_engine *e)
{
    e->cpu = calloc(1, sizeof *e->cpu);
    if (!e->cpu)
        return DCGM_ST_MEMORY;
    if (engine_levels_has_cpus(e)) {
        /* the scenario's Grace CPUs stand for the host's (engine_levels.c) */
        e->cpu->monitoring = 1;
        snprintf(e->cpu->vendor, sizeof e->cpu->vendor, "Nvidia");
        snprintf(e->cpu->model, sizeof e->cpu->model, "Grace");
        return DCGM_ST_OK;
    }
    if (!cpus_monitored(e->cpu))
        return DCGM_ST_OK;
    e->cpu->monitoring = 1;
    char text[CPU_LINE_MAX];
    unsigned long first, last;
    if (!read_line("/sys/devices/system/node/has_cpu", text, sizeof text) ||
        !parse_range(text, &first, &last))
        return DCGM_ST_OK;
    for (unsigned long node = first; node <= last && node - first < DCGM_MAX_NUM_CPUS; node++) {
        engine_entity cpu = { DCGM_FE_CPU, (dcgm_field_eid_t)node, DCGM_FE_NONE, 0, 0,
                              ENGINE_NO_GPU, 0 };
        int rc = engine_add_entity_locked(e, &cpu);
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%lu/cpulist", node);
        if (rc == DCGM_ST_OK && read_line(path, text, sizeof text))
            rc = add_node_cores(e, (unsigned int)node, text);
        if (rc != DCGM_ST_OK)
            return rc;
    }
    return DCGM_ST_OK;
}

static void engine_cpu_free(sim_engine *e)
{
    if (!e->cpu)
        return;
    for (size_t i = 0; i < e->cpu->n_baselines; i++)
        free(e->cpu->baselines[i].ticks);
    free(e->cpu->baselines);
    free(e->cpu->reading);
    free(e->cpu);
    e->cpu = NULL;
}

/* ---- the hierarchy ------------------------------------------------------------------ */

int engine_cpu_hierarchy(sim_engine *e, dcgmCpuHierarchy_v2 *h)
{
    if (!e || !h)
        return DCGM_ST_BADPARAM;
    if (h->version != dcgmCpuHierarchy_version2)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    unsigned int n = 0;
    for (size_t i = 0; i < e->n_entities && n < DCGM_MAX_NUM_CPUS; i++) {
        const engine_entity *cpu = &e->entities[i];
        if (cpu->group != DCGM_FE_CPU)
            continue;
        dcgmCpuHierarchyCpu_v2 *row = &h->cpus[n++];
        memset(row, 0, sizeof *row);
        row->cpuId = cpu->id;
        row->ownedCores.version = dcgmCpuHierarchyOwnedCores_version1;
        for (size_t j = 0; j < e->n_entities; j++) {
            const engine_entity *core = &e->entities[j];
            if (core->group == DCGM_FE_CPU_CORE && core->parent_group == DCGM_FE_CPU &&
                core->parent_id == cpu->id && core->id < DCGM_MAX_NUM_CPU_CORES)
                row->ownedCores.bitmask[core->id / 64] |= 1ull << (core->id % 64);
        }
    }
    int monitoring = e->cpu && e->cpu->monitoring;
    pthread_mutex_unlock(&e->lock);
    for (unsigned int i = n; i < DCGM_MAX_NUM_CPUS; i++)
        memset(&h->cpus[i], 0, sizeof h->cpus[i]);
    h->numCpus = n;
    return n > 0 || monitoring ? DCGM_ST_OK : DCGM_ST_MODULE_NOT_LOADED;
}

/* ---- utilization ----------------------------------------------------------------------- */

/* ParseProcStatCpuLine for "cpuN ..." lines; the total line and others skipped */
static void parse_stat_line(const char *line, core_ticks *cores)
{
    if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
        return;
    char *end;
    unsigned long index = strtoul(line + 3, &end, 10);
    if (index >= DCGM_MAX_NUM_CPU_CORES)
        return;
    unsigned long long v[16] = { 0 };
    int n = 0;
    const char *p = end;
    while (n < 16) {
        char *after;
        unsigned long long x = strtoull(p, &after, 10);
        if (after == p)
            break;
        v[n++] = x;
        p = after;
    }
    if (n < 4)
        return;
    core_ticks *c = &cores[index];
    c->user = v[0];
    c->nice = v[1];
    c->system = v[2];
    c->idle = v[3];
    c->irq = v[5];
    c->other = v[4];
    for (int i = 6; i < n; i++)
        c->other += v[i];
    c->present = 1;
}

/* This pass's /proc/stat reading, read once per pass; NULL if unreadable. */
static const core_ticks *reading_at(sim_engine *e, int64_t now_us)
{
    struct engine_cpu_state *st = e->cpu;
    if (st->reading && st->reading_us == now_us)
        return st->reading;
    if (!st->reading) {
        st->reading = calloc(DCGM_MAX_NUM_CPU_CORES, sizeof *st->reading);
        if (!st->reading)
            return NULL;
    }
    memset(st->reading, 0, DCGM_MAX_NUM_CPU_CORES * sizeof *st->reading);
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return NULL;
    char line[CPU_LINE_MAX];
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        parse_stat_line(line, st->reading);
        /* the rest of a line longer than the buffer (interrupt counts) */
        while (len > 0 && line[len - 1] != '\n' && fgets(line, sizeof line, f))
            len = strlen(line);
    }
    fclose(f);
    st->reading_us = now_us;
    return st->reading;
}

static unsigned long long ticks_total(const core_ticks *c)
{
    return c->user + c->nice + c->system + c->idle + c->irq + c->other;
}

static unsigned long long ticks_of(const core_ticks *c, unsigned short field_id)
{
    switch (field_id) {
    case 1100: return ticks_total(c) - c->idle;
    case 1101: return c->user;
    case 1102: return c->nice;
    case 1103: return c->system;
    default: return c->irq;
    }
}

static util_baseline *baseline_of(struct engine_cpu_state *st, const engine_entity *ent,
                                  unsigned short field_id)
{
    for (size_t i = 0; i < st->n_baselines; i++) {
        util_baseline *b = &st->baselines[i];
        if (b->group == ent->group && b->id == ent->id && b->field_id == field_id)
            return b;
    }
    if (st->n_baselines == st->cap_baselines) {
        size_t cap = st->cap_baselines ? st->cap_baselines * 2 : 16;
        util_baseline *grown = realloc(st->baselines, cap * sizeof *grown);
        if (!grown)
            return NULL;
        st->baselines = grown;
        st->cap_baselines = cap;
    }
    util_baseline *b = &st->baselines[st->n_baselines++];
    memset(b, 0, sizeof *b);
    b->group = ent->group;
    b->id = ent->id;
    b->field_id = field_id;
    return b;
}

/* The cores a utilization value covers: the core itself or a CPU's cores. */
static unsigned int cores_of(const sim_engine *e, const engine_entity *ent, unsigned int *ids,
                             unsigned int max)
{
    if (ent->group == DCGM_FE_CPU_CORE) {
        ids[0] = ent->id;
        return 1;
    }
    unsigned int n = 0;
    for (size_t i = 0; i < e->n_entities && n < max; i++) {
        const engine_entity *core = &e->entities[i];
        if (core->group == DCGM_FE_CPU_CORE && core->parent_group == DCGM_FE_CPU &&
            core->parent_id == ent->id && core->id < DCGM_MAX_NUM_CPU_CORES)
            ids[n++] = core->id;
    }
    return n;
}

static int engine_cpu_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                             int64_t now_us, sim_value *out)
{
    memset(out, 0, sizeof *out);
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    out->type = meta ? meta->fieldType : DCGM_FT_DOUBLE;
    out->kind = SIM_VALUE_BLANK;
    if (!e->cpu)
        return 1;
    if (field_id == CPU_VENDOR || field_id == CPU_MODEL) {
        sim_put_str(out, field_id == CPU_VENDOR ? e->cpu->vendor : e->cpu->model);
        return 1;
    }
    if (field_id == CPU_CLOCK) {
        char path[96], text[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_cur_freq",
                 ent->id);
        char *end;
        if (ent->group == DCGM_FE_CPU_CORE && read_line(path, text, sizeof text)) {
            long long khz = strtoll(text, &end, 10);
            if (end != text && *end == '\0')
                sim_put_int(out, khz);
        }
        return 1;
    }
    if (field_id < CPU_UTIL_FIRST || field_id > CPU_UTIL_LAST)
        return 1;
    const core_ticks *now = reading_at(e, now_us);
    util_baseline *base = now ? baseline_of(e->cpu, ent, field_id) : NULL;
    if (!base)
        return 1;
    unsigned int *ids = malloc(DCGM_MAX_NUM_CPU_CORES * sizeof *ids);
    if (!ids)
        return 1;
    unsigned int n = cores_of(e, ent, ids, DCGM_MAX_NUM_CPU_CORES);
    core_ticks *ticks = malloc((n ? n : 1) * sizeof *ticks);
    if (!ticks) {
        free(ids);
        return 1;
    }
    for (unsigned int i = 0; i < n; i++)
        ticks[i] = now[ids[i]];
    free(ids);
    int had_baseline = base->ticks != NULL && base->n == n;
    double sum = 0;
    unsigned int counted = 0;
    for (unsigned int i = 0; had_baseline && i < n; i++) {
        const core_ticks *was = &base->ticks[i], *is = &ticks[i];
        if (!was->present || !is->present || ticks_total(is) <= ticks_total(was) ||
            ticks_of(is, field_id) < ticks_of(was, field_id))
            continue; /* no ticks in between (or a counter went back): no share */
        sum += (double)(ticks_of(is, field_id) - ticks_of(was, field_id)) /
               (double)(ticks_total(is) - ticks_total(was));
        counted++;
    }
    free(base->ticks);
    base->ticks = ticks;
    base->n = n;
    if (!had_baseline)
        return 0;
    if (counted > 0) {
        out->kind = SIM_VALUE_OK;
        out->dbl = sum / counted;
        out->i64 = (int64_t)out->dbl;
    }
    return 1;
}

/* ---- the module's hooks ------------------------------------------------------ */

/* The host's CPUs and cores (the scenario's Grace CPUs, when it has any, are
 * the core's, core/engine_levels.c) */
static int cpu_sample_series_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                    int64_t now_us, sim_value *out)
{
    if ((ent->group != DCGM_FE_CPU && ent->group != DCGM_FE_CPU_CORE) || engine_levels_has_cpus(e))
        return -1;
    return engine_cpu_sample_locked(e, ent, field_id, now_us, out) ? 1 : 0;
}

const engine_module engine_cpu_module = {
    .name = "cpu",
    .add_entities = engine_cpu_init,
    .free = engine_cpu_free,
    .sample_series_locked = cpu_sample_series_locked,
};
