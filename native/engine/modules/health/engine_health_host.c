/*
 * engine_health_host.c -- the health checks that are not about a GPU: the CPU
 * entities' thermal and power checks and the global IMEX check, as DCGM's
 * health module has them (modules/health/DcgmHealthWatch.cpp):
 *
 *  - dcgmHealthSet on a group with CPUs watches, per CPU, the temperature and
 *    its warning and critical limits under THERMAL, the power and its limit
 *    under POWER, at least every 30 seconds (SetCpuThermal, SetCpuPower);
 *    NVLINK watches the two IMEX fields once, on the host (SetGlobalChecks).
 *  - THERMAL on a CPU (MonitorCpuThermal): the first temperature of the last
 *    minute and the latest one, averaged, at or above the latest warning limit
 *    is a WARN; the latest temperature at or above the latest critical limit a
 *    FAIL.  POWER on a CPU (MonitorCpuPower): the latest power at or above the
 *    latest limit is a FAIL.  Both DCGM_FR_FIELD_THRESHOLD_DBL; no value, or a
 *    blank one, is no incident.
 *  - IMEX (MonitorGlobalHealthChecks, MonitorImex), before the members'
 *    checks, when NVLINK is set and a GPU of the group has a link whose state
 *    is not NotSupported (SystemHasNvLinks): a domain status DOWN or DEGRADED
 *    (anything but UP, NOT_INSTALLED, NOT_CONFIGURED, UNAVAILABLE) and a
 *    daemon status other than READY (5), UNAVAILABLE (7), NOT_INSTALLED (-1)
 *    and NOT_CONFIGURED (-2) are NVLINK FAILs of entity (NONE, 0),
 *    DCGM_FR_IMEX_UNHEALTHY.
 */
#include <stdarg.h>
#include <string.h>

#include "../imex/imex.h"
#include "health_internal.h"
#include "../../../dcgm_field_ids.h"

#define HOST_MIN_INTERVAL_US 30000000ll /* MIN_HEALTH_WATCH_UPDATE_INTERVAL_US */
#define HOST_WINDOW_US 60000000ll

static void incident(dcgmHealthResponse_v5 *out, dcgm_field_entity_group_t group,
                     dcgm_field_eid_t id, dcgmHealthSystems_t system,
                     dcgmHealthWatchResults_t health, int code, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static void incident(dcgmHealthResponse_v5 *out, dcgm_field_entity_group_t group,
                     dcgm_field_eid_t id, dcgmHealthSystems_t system,
                     dcgmHealthWatchResults_t health, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    engine_health_vincident(out, group, id, system, health, code, fmt, ap);
    va_end(ap);
}

static void watch(sim_engine *e, engine_owner owner, dcgm_field_entity_group_t group,
                  dcgm_field_eid_t id, unsigned short field, int64_t freq_us, double keep_s)
{
    int created = 0;
    if (freq_us < ENGINE_MIN_UPDATE_US)
        freq_us = ENGINE_MIN_UPDATE_US;
    /* a failure only loses this field, as DCGM's SetWatches logs and goes on */
    engine_watch_one_locked(e, owner, group, id, field, freq_us,
                            engine_retention_us(freq_us, keep_s, 0), &created);
}

void engine_health_watch_cpu_locked(sim_engine *e, engine_owner owner, const engine_entity *cpu,
                                    unsigned int systems, int64_t freq_us, double keep_s)
{
    int64_t freq = freq_us > HOST_MIN_INTERVAL_US ? freq_us : HOST_MIN_INTERVAL_US;
    if (systems & DCGM_HEALTH_WATCH_THERMAL) {
        watch(e, owner, cpu->group, cpu->id, DCGM_FI_DEV_CPU_TEMP_CELSIUS, freq, keep_s);
        watch(e, owner, cpu->group, cpu->id, DCGM_FI_DEV_CPU_TEMP_WARNING_CELSIUS, freq, keep_s);
        watch(e, owner, cpu->group, cpu->id, DCGM_FI_DEV_CPU_TEMP_CRITICAL_CELSIUS, freq, keep_s);
    }
    if (systems & DCGM_HEALTH_WATCH_POWER) {
        watch(e, owner, cpu->group, cpu->id, DCGM_FI_DEV_CPU_POWER_WATTS, freq, keep_s);
        watch(e, owner, cpu->group, cpu->id, DCGM_FI_DEV_CPU_POWER_LIMIT_WATTS, freq, keep_s);
    }
}

void engine_health_watch_global_locked(sim_engine *e, engine_owner owner, unsigned int systems,
                                       int64_t freq_us, double keep_s)
{
    if (!(systems & DCGM_HEALTH_WATCH_NVLINK))
        return;
    watch(e, owner, DCGM_FE_NONE, 0, DCGM_FI_IMEX_DOMAIN_STATUS, freq_us, keep_s);
    watch(e, owner, DCGM_FE_NONE, 0, DCGM_FI_IMEX_DAEMON_STATUS, freq_us, keep_s);
}

/* ---- cache reads ---------------------------------------------------------------- */

/* GetLatestSample: NULL for no value */
static const engine_sample *latest(const sim_engine *e, dcgm_field_entity_group_t group,
                                   dcgm_field_eid_t id, unsigned short field)
{
    const engine_series *s = engine_visible_series_locked(e, group, id, field);
    return s && s->ring.count > 0 ? engine_ring_at(&s->ring, s->ring.count - 1) : NULL;
}

/* GetSamples(start, ascending, one): the first value at or after start */
static const engine_sample *first_since(const sim_engine *e, dcgm_field_entity_group_t group,
                                        dcgm_field_eid_t id, unsigned short field, int64_t start)
{
    const engine_series *s = engine_visible_series_locked(e, group, id, field);
    if (!s)
        return NULL;
    size_t at = engine_ring_lower_bound(&s->ring, start);
    return at < s->ring.count ? engine_ring_at(&s->ring, at) : NULL;
}

/* DCGM tests a CPU double for blank through its integer view; a double blank
 * is taken as blank too */
static int blank_dbl(const engine_sample *s)
{
    return s->num.i64 >= DCGM_INT64_BLANK || s->num.dbl >= DCGM_FP64_BLANK;
}

/* ---- CPU checks ------------------------------------------------------------------- */

static void check_cpu_thermal(sim_engine *e, const engine_entity *cpu, int64_t now,
                              dcgmHealthResponse_v5 *out)
{
    static const unsigned short fields[] = { DCGM_FI_DEV_CPU_TEMP_CELSIUS, DCGM_FI_DEV_CPU_TEMP_WARNING_CELSIUS, DCGM_FI_DEV_CPU_TEMP_CRITICAL_CELSIUS };
    double first[3], last[3];
    for (int i = 0; i < 3; i++) {
        const engine_sample *s = first_since(e, cpu->group, cpu->id, fields[i], now - HOST_WINDOW_US);
        if (!s || blank_dbl(s))
            return;
        first[i] = s->num.dbl;
    }
    for (int i = 0; i < 3; i++) {
        const engine_sample *s = latest(e, cpu->group, cpu->id, fields[i]);
        if (!s || blank_dbl(s))
            return;
        last[i] = s->num.dbl;
    }
    double mean = (first[0] + last[0]) / 2;
    if (mean >= last[1])
        incident(out, cpu->group, cpu->id, DCGM_HEALTH_WATCH_THERMAL, DCGM_HEALTH_RESULT_WARN,
                 DCGM_FR_FIELD_THRESHOLD_DBL,
                 "CPU %u temperature (DCGM_FI_DEV_CPU_TEMP_CELSIUS, entity group %d) averaged "
                 "%.1f, at or above its warning threshold %.1f",
                 cpu->id, (int)cpu->group, mean, last[1]);
    if (last[0] >= last[2])
        incident(out, cpu->group, cpu->id, DCGM_HEALTH_WATCH_THERMAL, DCGM_HEALTH_RESULT_FAIL,
                 DCGM_FR_FIELD_THRESHOLD_DBL,
                 "CPU %u temperature (DCGM_FI_DEV_CPU_TEMP_CELSIUS, entity group %d) is %.1f, "
                 "at or above its critical threshold %.1f",
                 cpu->id, (int)cpu->group, last[0], last[2]);
}

static void check_cpu_power(sim_engine *e, const engine_entity *cpu, dcgmHealthResponse_v5 *out)
{
    const engine_sample *power = latest(e, cpu->group, cpu->id, DCGM_FI_DEV_CPU_POWER_WATTS);
    if (!power || blank_dbl(power))
        return;
    const engine_sample *limit = latest(e, cpu->group, cpu->id, DCGM_FI_DEV_CPU_POWER_LIMIT_WATTS);
    if (!limit || blank_dbl(limit))
        return;
    if (power->num.dbl >= limit->num.dbl)
        incident(out, cpu->group, cpu->id, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_FAIL,
                 DCGM_FR_FIELD_THRESHOLD_DBL,
                 "CPU %u power (DCGM_FI_DEV_CPU_POWER_WATTS, entity group %d) is %.1f W, "
                 "at or above its limit %.1f W",
                 cpu->id, (int)cpu->group, power->num.dbl, limit->num.dbl);
}

void engine_health_check_cpu_locked(sim_engine *e, const engine_entity *cpu, unsigned int systems,
                                    int64_t now, dcgmHealthResponse_v5 *out)
{
    if (systems & DCGM_HEALTH_WATCH_THERMAL)
        check_cpu_thermal(e, cpu, now, out);
    if (systems & DCGM_HEALTH_WATCH_POWER)
        check_cpu_power(e, cpu, out);
}

/* ---- the global IMEX check --------------------------------------------------------- */

/* DCGM_STR_IS_BLANK */
static int blank_str(const char *s)
{
    return strcmp(s, DCGM_STR_BLANK) == 0 || strcmp(s, DCGM_STR_NOT_FOUND) == 0 ||
           strcmp(s, DCGM_STR_NOT_SUPPORTED) == 0 || strcmp(s, DCGM_STR_NOT_PERMISSIONED) == 0;
}

static int group_has_nvlinks(sim_engine *e, const dcgmGroupEntityPair_t *members, unsigned int n,
                             int64_t t_rel)
{
    for (unsigned int i = 0; i < n; i++) {
        if (members[i].entityGroupId != DCGM_FE_GPU)
            continue;
        dcgmNvLinkLinkState_t states[DCGM_NVLINK_MAX_LINKS_PER_GPU];
        if (engine_nvlink_gpu_states_locked(e, members[i].entityId, t_rel, states) != DCGM_ST_OK)
            continue;
        for (unsigned int link = 0; link < DCGM_NVLINK_MAX_LINKS_PER_GPU; link++)
            if (states[link] != DcgmNvLinkLinkStateNotSupported)
                return 1;
    }
    return 0;
}

static void check_imex(sim_engine *e, dcgmHealthResponse_v5 *out)
{
    const engine_sample *domain = latest(e, DCGM_FE_NONE, 0, DCGM_FI_IMEX_DOMAIN_STATUS);
    if (domain && domain->str && !blank_str(domain->str)) {
        static const char *const healthy[] = { "UP", "NOT_INSTALLED", "NOT_CONFIGURED",
                                               "UNAVAILABLE" };
        int ok = 0;
        for (size_t i = 0; i < sizeof healthy / sizeof healthy[0]; i++)
            ok |= strcmp(domain->str, healthy[i]) == 0;
        if (!ok)
            incident(out, DCGM_FE_NONE, 0, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL,
                     DCGM_FR_IMEX_UNHEALTHY, "IMEX domain status %.64s is not healthy", domain->str);
    }
    const engine_sample *daemon = latest(e, DCGM_FE_NONE, 0, DCGM_FI_IMEX_DAEMON_STATUS);
    if (!daemon || daemon->num.i64 >= DCGM_INT64_BLANK)
        return;
    int64_t st = daemon->num.i64;
    if (st != IMEX_DAEMON_READY && st != IMEX_DAEMON_UNAVAILABLE &&
        st != IMEX_DAEMON_NOT_INSTALLED && st != IMEX_DAEMON_NOT_CONFIGURED)
        incident(out, DCGM_FE_NONE, 0, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL,
                 DCGM_FR_IMEX_UNHEALTHY, "IMEX daemon status %lld is not READY", (long long)st);
}

void engine_health_check_global_locked(sim_engine *e, const dcgmGroupEntityPair_t *members,
                                       unsigned int n, unsigned int systems, int64_t t_rel,
                                       dcgmHealthResponse_v5 *out)
{
    if ((systems & DCGM_HEALTH_WATCH_NVLINK) && group_has_nvlinks(e, members, n, t_rel))
        check_imex(e, out);
}
