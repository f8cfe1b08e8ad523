/*
 * engine_health.c -- DCGM's health watches (dcgmHealthSet, dcgmHealthGet,
 * dcgmHealthCheck) evaluated on the engine's cache.
 *
 * The rules are DCGM 4.6's (modules/health/DcgmHealthWatch.cpp), written
 * anew; the function named next to each rule below is where DCGM has it.
 *
 *  - dcgmHealthSet watches, for every active GPU, GPU instance and compute
 *    instance of the group, the fields each enabled system needs, on behalf of
 *    a health owner of its own (the caller's owner with ENGINE_OWNER_HEALTH set,
 *    so a client's own watches of the same fields keep their intervals), then
 *    runs an update pass.  Systems switched off keep their watches, as in DCGM,
 *    except DRIVER's.
 *  - dcgmHealthCheck reads only the cache: sampled and injected values alike,
 *    fake GPUs included.  Counters are compared over the last minute (DCGM's
 *    window when the client gives no start time, which dcgmHealthCheck never
 *    does); states are read from the latest value.
 *  - XIDs are remembered per GPU once they reach the cache of a GPU whose XID
 *    field the health module watches (DCGM subscribes through the MEM and
 *    INFOROM watches), and reported in every later check: the eight
 *    "devastating" ones under DCGM_HEALTH_WATCH_ALL whatever the systems, the
 *    others under their system when it is enabled (DcgmHealthWatch::
 *    BuildXidMappings, ProcessXidFv, MonitorDevastatingXids).
 *
 * NvLink link states are checked (the core keeps them, core/engine_link.c).  CPU members
 * and the global IMEX check are engine_health_host.c's.  Not modelled:
 * NvSwitch and ConnectX checks.  XIDs are matched to GPU entities only (DCGM matches the bare
 * entity id, which lets an instance with the same number pick up a GPU's).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health_internal.h"
#include "../../../dcgm_field_ids.h"

/* DcgmHealthWatch.cpp and common/DcgmGPUHardwareLimits.h */
#define MIN_INTERVAL_US 30000000ll        /* MEM (but the DBE count), THERMAL, POWER */
#define INFOROM_MIN_INTERVAL_US 3600000000ll
#define INFOROM_MIN_KEEP_S 7200.0
#define WINDOW_US 60000000ll              /* a blank start time: the last minute */
#define WEEK_US 604800000000ll
#define LIMIT_RETIRED_PAGES 63
#define LIMIT_RETIRED_PAGES_SOFT 15
#define LIMIT_NVLINK_ERROR 1
#define LIMIT_NVLINK_CRC_PER_S 100.0
#define LIMIT_ROW_REMAP_UNCORRECTABLE 512
#define SYMBOL_BER_FLOOR_EXP 255          /* before Blackwell */
#define SYMBOL_BER_FLOOR_EXP_AGGREGATED 238

#define ALL_SYSTEMS ((dcgmHealthSystems_t)DCGM_HEALTH_WATCH_ALL)

/* an XID the health module has seen on a GPU */
struct engine_xid_seen {
    unsigned int gpu;
    int64_t xid;
};
typedef struct engine_xid_seen engine_xid_seen;

static int is_blank_i64(int64_t v) { return v >= DCGM_INT64_BLANK; }
static int is_blank_dbl(double v) { return v >= DCGM_FP64_BLANK; }

static engine_owner engine_health_owner(engine_owner owner)
{
    return owner | ENGINE_OWNER_HEALTH;
}

/* ---- XIDs ------------------------------------------------------------------ */

typedef struct xid_rule {
    int xid;
    dcgmHealthSystems_t system;   /* ALL: reported whatever the enabled systems */
    dcgmHealthWatchResults_t health;
    int code;
    const char *what;
    dcgmChipArchitecture_t only_arch; /* 0: any */
} xid_rule;

/* DcgmHealthWatch::BuildXidMappings, in ascending XID order per system */
static const xid_rule xid_rules[] = {
    { 48, ALL_SYSTEMS, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_XID_ERROR, "double-bit ECC error", 0 },
    { 74, ALL_SYSTEMS, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_XID_ERROR, "NVLink error", 0 },
    { 79, ALL_SYSTEMS, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_FALLEN_OFF_BUS, "fell off the bus", 0 },
    { 94, ALL_SYSTEMS, DCGM_HEALTH_RESULT_WARN, DCGM_FR_CONTAINED_ERROR, "contained memory error", 0 },
    { 95, ALL_SYSTEMS, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_UNCONTAINED_ERROR,
      "uncontained memory error", 0 },
    { 119, ALL_SYSTEMS, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_XID_ERROR, "GSP call timed out", 0 },
    { 120, ALL_SYSTEMS, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_XID_ERROR, "GSP error", 0 },
    { 140, ALL_SYSTEMS, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_XID_ERROR, "unrecovered ECC error", 0 },
    { 38, DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR, "PCIe bus error", 0 },
    { 39, DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR, "PCIe fabric error", 0 },
    { 42, DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR, "PCIe replay error", 0 },
    { 67, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR, "NVLink error", 0 },
    { 73, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "NVLink flow control error", 0 },
    { 121, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "corrected C2C link error", 0 },
    { 137, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "NVLink FLA privilege error", 0 },
    { 31, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR, "memory page fault", 0 },
    { 32, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "corrupted push buffer stream", 0 },
    { 43, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "channel stopped by a fault", 0 },
    { 63, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN, DCGM_FR_PENDING_PAGE_RETIREMENTS,
      "page retirement or row remapping pending", 0 },
    { 64, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_ROW_REMAP_FAILURE,
      "page retirement or row remapping failed", 0 },
    { 93, DCGM_HEALTH_WATCH_INFOROM, DCGM_HEALTH_RESULT_WARN, DCGM_FR_CORRUPT_INFOROM, "corrupt InfoROM",
      DCGM_CHIP_ARCH_VOLTA },
    { 60, DCGM_HEALTH_WATCH_THERMAL, DCGM_HEALTH_RESULT_WARN, DCGM_FR_CLOCKS_EVENT_THERMAL,
      "clocks slowed for temperature", 0 },
    { 61, DCGM_HEALTH_WATCH_THERMAL, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "power brake at a thermal limit", 0 },
    { 62, DCGM_HEALTH_WATCH_THERMAL, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "thermal violation", 0 },
    { 54, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "power state changed", 0 },
    { 56, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR, "clocks changed", 0 },
    { 57, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, DCGM_FR_CLOCKS_EVENT_POWER,
      "clocks changed for power", 0 },
    { 58, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "clocks changed for temperature", 0 },
    { 78, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, DCGM_FR_XID_ERROR,
      "power state forced to change", 0 },
};
#define N_XID_RULES (sizeof xid_rules / sizeof xid_rules[0])

static int xid_seen_locked(const sim_engine *e, unsigned int gpu, int64_t xid)
{
    for (size_t i = 0; i < e->n_xid_seen; i++)
        if (e->xid_seen[i].gpu == gpu && e->xid_seen[i].xid == xid)
            return 1;
    return 0;
}

static int any_group_watches_locked(const sim_engine *e, dcgmHealthSystems_t system)
{
    for (int i = 0; i < ENGINE_MAX_GROUPS; i++)
        if (e->groups[i] && (e->groups[i]->health_systems & system))
            return 1;
    return 0;
}

static int health_watches_series(const engine_series *s)
{
    for (size_t i = 0; i < s->n_watchers; i++)
        if (s->watchers[i].owner & ENGINE_OWNER_HEALTH)
            return 1;
    return 0;
}

/* An XID reached the cache of a GPU (sampled or injected).  As DCGM's
 * ProcessXidFv: a devastating XID is always remembered, another only while
 * some group has its system enabled, and only if the health module watches
 * that GPU's XIDs. */
static void engine_health_note_xid_locked(sim_engine *e, const engine_series *s, int64_t xid)
{
    if (s->field_id != DCGM_FI_DEV_XID_ERROR || s->group != DCGM_FE_GPU || !health_watches_series(s))
        return;
    int keep = 0;
    for (size_t i = 0; i < N_XID_RULES && !keep; i++)
        if (xid_rules[i].xid == xid)
            keep = xid_rules[i].system == ALL_SYSTEMS ||
                   any_group_watches_locked(e, xid_rules[i].system);
    if (!keep || xid_seen_locked(e, s->entity, xid))
        return;
    if (e->n_xid_seen == e->cap_xid_seen) {
        size_t cap = e->cap_xid_seen ? e->cap_xid_seen * 2 : 16;
        engine_xid_seen *grown = realloc(e->xid_seen, cap * sizeof *grown);
        if (!grown)
            return;
        e->xid_seen = grown;
        e->cap_xid_seen = cap;
    }
    e->xid_seen[e->n_xid_seen++] = (engine_xid_seen){ s->entity, xid };
}

/* ---- incidents --------------------------------------------------------------- */

typedef struct check_ctx {
    sim_engine *e;
    const engine_entity *ent;       /* the entity checked (GPU, GPU_I or GPU_CI) */
    const engine_entity *gpu;       /* the GPU it is or belongs to */
    int64_t now;
    int64_t start;                  /* window start: now - 1 minute */
    dcgmHealthResponse_v5 *out;
} check_ctx;

static void add_incident(check_ctx *c, dcgmHealthSystems_t system, dcgmHealthWatchResults_t health,
                         int code, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

void engine_health_vincident(dcgmHealthResponse_v5 *out, dcgm_field_entity_group_t group,
                             dcgm_field_eid_t id, dcgmHealthSystems_t system,
                             dcgmHealthWatchResults_t health, int code, const char *fmt, va_list ap)
{
    /* DcgmHealthResponse::PopulateHealthResponse: the first 1024, and the
     * overall result over those */
    if (out->incidentCount >= DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2)
        return;
    dcgmIncidentInfo_t *inc = &out->incidents[out->incidentCount++];
    memset(inc, 0, sizeof *inc);
    inc->system = system;
    inc->health = health;
    inc->error.code = code;
    vsnprintf(inc->error.msg, sizeof inc->error.msg, fmt, ap);
    inc->entityInfo.entityGroupId = group;
    inc->entityInfo.entityId = id;
    if (health > out->overallHealth)
        out->overallHealth = health;
}

static void add_incident(check_ctx *c, dcgmHealthSystems_t system, dcgmHealthWatchResults_t health,
                         int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    engine_health_vincident(c->out, c->ent->group, c->ent->id, system, health, code, fmt, ap);
    va_end(ap);
}

/* ---- cache reads --------------------------------------------------------------- */

typedef struct hval {
    int st;              /* DCGM_ST_OK, DCGM_ST_NO_DATA or DCGM_ST_NOT_WATCHED */
    int64_t i64;         /* the sample's value; 0 without one, as DCGM's zeroed sample */
    double dbl;
} hval;

static const engine_series *series_of(const check_ctx *c, unsigned short field)
{
    return engine_visible_series_locked(c->e, c->ent->group, c->ent->id, field);
}

static hval from_sample(const engine_sample *sample)
{
    hval v = { DCGM_ST_OK, sample->num.i64, sample->num.dbl };
    return v;
}

static hval none(int st)
{
    hval v = { st, 0, 0.0 };
    return v;
}

/* GetLatestSample */
static hval latest(const check_ctx *c, unsigned short field)
{
    const engine_series *s = series_of(c, field);
    if (!s)
        return none(DCGM_ST_NOT_WATCHED);
    if (s->ring.count == 0)
        return none(DCGM_ST_NO_DATA);
    return from_sample(engine_ring_at(&s->ring, s->ring.count - 1));
}

/* GetSamples(start, end = none, ascending / descending, one sample) */
static hval in_window(const check_ctx *c, unsigned short field, int64_t start, int newest)
{
    const engine_series *s = series_of(c, field);
    if (!s)
        return none(DCGM_ST_NOT_WATCHED);
    size_t at = engine_ring_lower_bound(&s->ring, start);
    if (at >= s->ring.count)
        return none(DCGM_ST_NO_DATA);
    return from_sample(engine_ring_at(&s->ring, newest ? s->ring.count - 1 : at));
}

static hval first_in_window(const check_ctx *c, unsigned short field)
{
    return in_window(c, field, c->start, 0);
}

static hval last_in_window(const check_ctx *c, unsigned short field)
{
    return in_window(c, field, c->start, 1);
}

/* GetSamples(start = none, end, descending, one sample) */
static hval last_until(const check_ctx *c, unsigned short field, int64_t end)
{
    const engine_series *s = series_of(c, field);
    if (!s)
        return none(DCGM_ST_NOT_WATCHED);
    size_t after = engine_ring_lower_bound(&s->ring, end + 1);
    if (after == 0)
        return none(DCGM_ST_NO_DATA);
    return from_sample(engine_ring_at(&s->ring, after - 1));
}

static int64_t abs_diff(int64_t a, int64_t b)
{
    return a >= b ? a - b : b - a;
}

/* ---- the GPU's architecture -------------------------------------------------------- */

/* The major compute capability DCGM's health module reads from the cache
 * (DcgmCoreProxy::GetCudaComputeCapabilityMajorVersion): -1 without a sample. */
static int cached_cc_major(const check_ctx *c)
{
    const engine_series *s = engine_series_find_locked(c->e, DCGM_FE_GPU, c->gpu->id,
                                                       DCGM_FI_CUDA_GPU_COMPUTE_CAPABILITY);
    if (!s || s->ring.count == 0)
        return -1;
    int64_t v = engine_ring_at(&s->ring, s->ring.count - 1)->num.i64;
    return is_blank_i64(v) ? 0 : (int)(v >> 16);
}

/* What the driver says the chip is (DcgmCoreProxy::GetGpuChipArch); the
 * engine knows it from the GPU's compute capability, and nothing for a fake GPU. */
static dcgmChipArchitecture_t chip_arch(const check_ctx *c)
{
    if (c->gpu->fake || c->gpu->gpu == ENGINE_NO_GPU)
        return DCGM_CHIP_ARCH_UNKNOWN;
    sim_value v;
    engine_sample_entity_locked(c->e, c->gpu, DCGM_FI_CUDA_GPU_COMPUTE_CAPABILITY, c->now - c->e->t0_us, &v);
    if (v.kind != SIM_VALUE_OK)
        return DCGM_CHIP_ARCH_UNKNOWN;
    int major = (int)(v.i64 >> 16), minor = (int)(v.i64 & 0xffff);
    if (major >= 10)
        return DCGM_CHIP_ARCH_BLACKWELL;
    if (major == 9)
        return DCGM_CHIP_ARCH_HOPPER;
    if (major == 8)
        return minor == 9 ? DCGM_CHIP_ARCH_ADA : DCGM_CHIP_ARCH_AMPERE;
    if (major == 7)
        return minor >= 5 ? DCGM_CHIP_ARCH_TURING : DCGM_CHIP_ARCH_VOLTA;
    if (major == 6)
        return DCGM_CHIP_ARCH_PASCAL;
    return major > 0 ? DCGM_CHIP_ARCH_OLDER : DCGM_CHIP_ARCH_UNKNOWN;
}

/* DcgmHealthWatch::IsGpuBlackwellOrNewer, falling back to pre-Blackwell */
static int blackwell_or_newer(const check_ctx *c)
{
    dcgmChipArchitecture_t arch = chip_arch(c);
    if (arch != DCGM_CHIP_ARCH_UNKNOWN)
        return arch >= DCGM_CHIP_ARCH_BLACKWELL;
    return cached_cc_major(c) >= 10;
}

/* ---- XID checks ------------------------------------------------------------------------ */

static void report_xid(check_ctx *c, const xid_rule *r, dcgmHealthSystems_t system)
{
    unsigned int gpu = c->ent->id;
    switch (r->code) {
    case DCGM_FR_FALLEN_OFF_BUS:
        add_incident(c, system, r->health, r->code, "GPU %u fell off the bus (XID %d)", gpu,
                     r->xid);
        break;
    case DCGM_FR_CONTAINED_ERROR:
        add_incident(c, system, r->health, r->code,
                     "GPU %u contained a memory error (XID %d): restart the application it hit",
                     gpu, r->xid);
        break;
    case DCGM_FR_UNCONTAINED_ERROR:
        add_incident(c, system, r->health, r->code,
                     "GPU %u had an uncontained memory error (XID %d)", gpu, r->xid);
        break;
    default:
        add_incident(c, system, r->health, r->code, "GPU %u reported XID %d: %s", gpu, r->xid,
                     r->what);
        break;
    }
}

/* MonitorDevastatingXids */
static void check_devastating_xids(check_ctx *c)
{
    if (c->ent->group != DCGM_FE_GPU)
        return;
    for (size_t i = 0; i < N_XID_RULES; i++)
        if (xid_rules[i].system == ALL_SYSTEMS &&
            xid_seen_locked(c->e, c->ent->id, xid_rules[i].xid))
            report_xid(c, &xid_rules[i], ALL_SYSTEMS);
}

/* MonitorSubsystemXids */
static void check_system_xids(check_ctx *c, dcgmHealthSystems_t system)
{
    if (c->ent->group != DCGM_FE_GPU)
        return;
    for (size_t i = 0; i < N_XID_RULES; i++) {
        const xid_rule *r = &xid_rules[i];
        if (r->system != system || !xid_seen_locked(c->e, c->ent->id, r->xid))
            continue;
        if (r->only_arch && chip_arch(c) != r->only_arch)
            continue;
        report_xid(c, r, system);
    }
}

/* ---- PCIE ------------------------------------------------------------------------------ */

/* GetExpectedPcieReplayRate: 1e-12 errors per bit at the generation's rate,
 * per minute and lane, rounded up over the lanes; -1 without link data */
static int expected_replay_rate(const check_ctx *c)
{
    static const double per_lane[] = { 2.5 / 1000 * 60, 5.0 / 1000 * 60, 8.0 / 1000 * 60,
                                       16.0 / 1000 * 60, 32.0 / 1000 * 60, 64.0 / 1000 * 60 };
    hval gen = latest(c, DCGM_FI_DEV_PCIE_LINK_GEN), width = latest(c, DCGM_FI_DEV_PCIE_LINK_WIDTH);
    if (gen.st != DCGM_ST_OK || width.st != DCGM_ST_OK || is_blank_i64(gen.i64) ||
        is_blank_i64(width.i64))
        return -1;
    uint64_t g = (uint64_t)gen.i64, lanes = (uint64_t)width.i64;
    if (g == 0)
        return -1; /* no generation 0 in DCGM's table */
    if (g > sizeof per_lane / sizeof per_lane[0])
        g = sizeof per_lane / sizeof per_lane[0];
    return (int)ceil(per_lane[g - 1] * (double)lanes);
}

/* MonitorPcie */
static void check_pcie(check_ctx *c)
{
    check_system_xids(c, DCGM_HEALTH_WATCH_PCIE);
    hval first = first_in_window(c, DCGM_FI_DEV_PCIE_REPLAY_TOTAL);
    if (first.st != DCGM_ST_OK || is_blank_i64(first.i64))
        return;
    hval last = last_in_window(c, DCGM_FI_DEV_PCIE_REPLAY_TOTAL);
    if (last.st != DCGM_ST_OK || is_blank_i64(last.i64))
        return;
    int replays = (int)abs_diff(first.i64, last.i64);
    int limit = expected_replay_rate(c);
    if (limit >= 0 && replays > limit)
        add_incident(c, DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_WARN, DCGM_FR_PCI_REPLAY_RATE,
                     "GPU %u: %d PCIe replays in the last minute, over the %d its link allows",
                     c->ent->id, replays, limit);
}

/* ---- MEM ------------------------------------------------------------------------------- */

/* MonitorMemSbeDbeRetiredPages */
static void check_retired_pages(check_ctx *c)
{
    hval dbe = last_in_window(c, DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL);
    hval sbe = last_in_window(c, DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL);
    long long total = (is_blank_i64(sbe.i64) ? 0 : sbe.i64) + (is_blank_i64(dbe.i64) ? 0 : dbe.i64);
    if (total >= LIMIT_RETIRED_PAGES) {
        add_incident(c, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_RETIRED_PAGES_LIMIT,
                     "GPU %u has %lld retired pages, at or over the limit of %d", c->ent->id, total,
                     LIMIT_RETIRED_PAGES);
        return;
    }
    if (is_blank_i64(dbe.i64) || dbe.i64 <= LIMIT_RETIRED_PAGES_SOFT)
        return;
    /* past the soft limit, more than one further page retired for DBEs within
     * a week fails */
    hval week_ago = last_until(c, DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL, c->now - WEEK_US);
    if ((week_ago.st != DCGM_ST_OK && week_ago.st != DCGM_ST_NO_DATA) || is_blank_i64(week_ago.i64))
        return;
    long long this_week = dbe.i64 - week_ago.i64;
    if (this_week > 1)
        add_incident(c, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_RETIRED_PAGES_DBE_LIMIT,
                     "GPU %u has more than %d pages retired for double-bit errors, %lld of them "
                     "within the last week",
                     c->ent->id, LIMIT_RETIRED_PAGES_SOFT, this_week);
}

/* MonitorMem and its helpers */
static void check_mem(check_ctx *c)
{
    unsigned int id = c->ent->id;
    check_system_xids(c, DCGM_HEALTH_WATCH_MEM);
    hval dbe = last_in_window(c, DCGM_FI_DEV_ECC_DBE_VOL_TOTAL);
    if (!is_blank_i64(dbe.i64) && dbe.i64 > 0)
        add_incident(c, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_VOLATILE_DBE_DETECTED,
                     "GPU %u counts %lld volatile double-bit ECC errors", id, (long long)dbe.i64);
    hval pending = last_in_window(c, DCGM_FI_DEV_PAGE_RETIRED_PENDING);
    if (!is_blank_i64(pending.i64) && pending.i64 != 0)
        add_incident(c, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN, DCGM_FR_PENDING_PAGE_RETIREMENTS,
                     "GPU %u has pages waiting to be retired", id);
    check_retired_pages(c);
    hval remap_failed = last_in_window(c, DCGM_FI_DEV_ROW_REMAP_FAILED);
    if (!is_blank_i64(remap_failed.i64) && remap_failed.i64 > 0)
        add_incident(c, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_ROW_REMAP_FAILURE,
                     "GPU %u could not remap a row after uncorrectable memory errors", id);
    /* MonitorMemRowRemapUncorrectable: Ampere and later only */
    if (cached_cc_major(c) >= 8) {
        hval rows = latest(c, DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL);
        if (rows.st == DCGM_ST_OK && !is_blank_i64(rows.i64) &&
            rows.i64 >= LIMIT_ROW_REMAP_UNCORRECTABLE)
            add_incident(c, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN,
                         DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT,
                         "GPU %u remapped %lld rows for uncorrectable errors, at or over the limit "
                         "of %d",
                         id, (long long)rows.i64, LIMIT_ROW_REMAP_UNCORRECTABLE);
    }
    hval unrepairable = latest(c, DCGM_FI_DEV_MEMORY_UNREPAIRABLE);
    if (unrepairable.st == DCGM_ST_OK && !is_blank_i64(unrepairable.i64) && unrepairable.i64 != 0)
        add_incident(c, DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_FAULTY_MEMORY,
                     "GPU %u reports unrepairable memory (flag %lld)", id,
                     (long long)unrepairable.i64);
}

/* ---- INFOROM, THERMAL, POWER, DRIVER --------------------------------------------------- */

/* MonitorInforom */
static void check_inforom(check_ctx *c)
{
    check_system_xids(c, DCGM_HEALTH_WATCH_INFOROM);
    hval valid = latest(c, DCGM_FI_DEV_INFOROM_VALID);
    if (valid.st == DCGM_ST_OK && !is_blank_i64(valid.i64) && valid.i64 == 0)
        add_incident(c, DCGM_HEALTH_WATCH_INFOROM, DCGM_HEALTH_RESULT_WARN, DCGM_FR_CORRUPT_INFOROM,
                     "GPU %u has a corrupt InfoROM", c->ent->id);
}

/* MonitorThermal: the violation counter moved within the window */
static void check_thermal(check_ctx *c)
{
    check_system_xids(c, DCGM_HEALTH_WATCH_THERMAL);
    hval first = first_in_window(c, DCGM_FI_DEV_THERMAL_VIOLATION);
    if (first.st != DCGM_ST_OK || is_blank_i64(first.i64))
        return;
    hval last = latest(c, DCGM_FI_DEV_THERMAL_VIOLATION);
    if (last.st != DCGM_ST_OK || is_blank_i64(last.i64))
        return;
    if (abs_diff(first.i64, last.i64) != 0)
        add_incident(c, DCGM_HEALTH_WATCH_THERMAL, DCGM_HEALTH_RESULT_WARN, DCGM_FR_CLOCKS_EVENT_THERMAL,
                     "GPU %u: a thermal violation held its clocks back in the last minute",
                     c->ent->id);
}

/* MonitorPower */
static void check_power(check_ctx *c)
{
    check_system_xids(c, DCGM_HEALTH_WATCH_POWER);
    if (c->ent->group == DCGM_FE_GPU) {
        hval watts = latest(c, DCGM_FI_DEV_BOARD_POWER_WATTS);
        if (watts.st == DCGM_ST_OK && is_blank_dbl(watts.dbl) &&
            watts.dbl != DCGM_FP64_NOT_SUPPORTED)
            add_incident(c, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, DCGM_FR_POWER_UNREADABLE,
                         "GPU %u: its power draw cannot be read", c->ent->id);
    }
    hval first = first_in_window(c, DCGM_FI_DEV_POWER_VIOLATION);
    if (first.st != DCGM_ST_OK || is_blank_i64(first.i64))
        return;
    hval last = last_in_window(c, DCGM_FI_DEV_POWER_VIOLATION);
    if (last.st != DCGM_ST_OK || is_blank_i64(last.i64))
        return;
    if (abs_diff(first.i64, last.i64) != 0)
        add_incident(c, DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, DCGM_FR_CLOCKS_EVENT_POWER,
                     "GPU %u: a power violation held its clocks back in the last minute",
                     c->ent->id);
}

/* MonitorGpuRecoveryAction: NVML's nvmlDeviceGpuRecoveryAction_t */
static void check_driver(check_ctx *c)
{
    hval action = latest(c, DCGM_FI_DEV_GPU_RECOVERY_ACTION);
    if (action.st != DCGM_ST_OK || is_blank_i64(action.i64))
        return;
    unsigned int id = c->ent->id;
    long long a = (long long)action.i64;
    switch (action.i64) {
    case 1:
        add_incident(c, DCGM_HEALTH_WATCH_DRIVER, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_GPU_RECOVERY_RESET,
                     "GPU %u hit a fault it can only recover from by a GPU reset (recovery action "
                     "%lld)", id, a);
        break;
    case 2:
        add_incident(c, DCGM_HEALTH_WATCH_DRIVER, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_GPU_RECOVERY_REBOOT,
                     "GPU %u hit a fault that may leave the system inconsistent: reboot the node "
                     "(recovery action %lld)", id, a);
        break;
    case 3:
        add_incident(c, DCGM_HEALTH_WATCH_DRIVER, DCGM_HEALTH_RESULT_WARN,
                     DCGM_FR_GPU_RECOVERY_DRAIN_P2P,
                     "GPU %u needs its peer-to-peer traffic quiesced (recovery action %lld)", id,
                     a);
        break;
    case 4:
        add_incident(c, DCGM_HEALTH_WATCH_DRIVER, DCGM_HEALTH_RESULT_FAIL,
                     DCGM_FR_GPU_RECOVERY_DRAIN_RESET,
                     "GPU %u runs at reduced capacity after a fault: drain its work, then reset it "
                     "(recovery action %lld)", id, a);
        break;
    default:
        break; /* 0 is healthy; anything else is not an action DCGM knows */
    }
}

/* ---- NVLINK ---------------------------------------------------------------------------- */

static const char *field_tag(unsigned short field)
{
    const dcgm_field_meta_t *meta = sim_field_meta(field);
    return meta ? meta->tag : "unknown";
}

/* The first and the last sample of a counter in the window, both real values. */
static int counter_window(const check_ctx *c, unsigned short field, hval *first, hval *last)
{
    *first = first_in_window(c, field);
    if (first->st != DCGM_ST_OK || is_blank_i64(first->i64))
        return 0;
    *last = last_in_window(c, field);
    return last->st == DCGM_ST_OK && !is_blank_i64(last->i64);
}

/* MonitorNVLink4Fields */
static void check_nvlink_counters(check_ctx *c)
{
    static const unsigned short fields[] = { DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL, DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL,
                                             DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        hval first, last;
        if (!counter_window(c, fields[i], &first, &last))
            continue;
        long long errors = (long long)abs_diff(first.i64, last.i64);
        if (errors < LIMIT_NVLINK_ERROR)
            continue;
        if (fields[i] == DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL || fields[i] == DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL) {
            add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL,
                         DCGM_FR_NVLINK_ERROR_CRITICAL,
                         "GPU %u: %lld %s NVLink errors; none are expected",
                         c->ent->id, errors, field_tag(fields[i]));
            continue;
        }
        /* CRC errors fail only at 100 a second or more */
        double per_s = (double)errors / ((double)(c->now - c->start) / 1e6);
        if (per_s >= LIMIT_NVLINK_CRC_PER_S)
            add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL,
                         DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD,
                         "GPU %u: %.1f %s NVLink errors a second, at or over the limit of %.0f",
                         c->ent->id, per_s, field_tag(fields[i]), LIMIT_NVLINK_CRC_PER_S);
        else
            add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_WARN,
                         DCGM_FR_NVLINK_ERROR_THRESHOLD,
                         "GPU %u: %lld %s NVLink errors in the last minute, at or over the limit "
                         "of %d",
                         c->ent->id, errors, field_tag(fields[i]), LIMIT_NVLINK_ERROR);
    }
}

/* NVML's packed bit error rate: mantissa in bits 8-11, exponent in bits 0-7 */
static double ber_value(int64_t raw, unsigned int *mantissa, unsigned int *exponent)
{
    *mantissa = (unsigned int)((raw >> 8) & 0xf);
    *exponent = (unsigned int)(raw & 0xff);
    return *mantissa * pow(10.0, -(double)*exponent);
}

/* DcgmNs::Utils::IsEffectiveBerThresholdExceeded: worse than 1e-12, and not
 * the "no errors" encoding 15e-255 */
static int effective_ber_exceeded(unsigned int mantissa, unsigned int exponent)
{
    if (mantissa == 15 && exponent == 255)
        return 0;
    return exponent < 12 || (exponent == 12 && mantissa > 1) || (exponent == 13 && mantissa > 10);
}

/* IsSymbolBerThresholdExceeded (DcgmHealthWatch.cpp) */
static int symbol_ber_exceeded(unsigned int mantissa, unsigned int exponent, unsigned int floor_exp)
{
    if (mantissa == 0)
        return 0;
    if (exponent == floor_exp)
        return mantissa > 15;
    return exponent < floor_exp;
}

/* MonitorNVLink5Fields */
static void check_nvlink5_counters(check_ctx *c)
{
    static const unsigned short fields[] = { 1214, DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RAW, 1204, 1205, 1206, 1207,
                                             1208, 1209, 1213, 1219, DCGM_FI_DEV_NVLINK_SYMBOL_BER_RAW, 1220 };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        unsigned short f = fields[i];
        hval first, last;
        if (!counter_window(c, f, &first, &last))
            continue;
        if (f == DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RAW || f == DCGM_FI_DEV_NVLINK_SYMBOL_BER_RAW) {
            unsigned int mantissa, exponent;
            double ber = ber_value(last.i64, &mantissa, &exponent);
            int exceeded = f == DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RAW
                               ? effective_ber_exceeded(mantissa, exponent)
                               : symbol_ber_exceeded(mantissa, exponent,
                                                     blackwell_or_newer(c)
                                                         ? SYMBOL_BER_FLOOR_EXP_AGGREGATED
                                                         : SYMBOL_BER_FLOOR_EXP);
            if (exceeded)
                add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL,
                             f == DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RAW ? DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD
                                                         : DCGM_FR_NVLINK_SYMBOL_BER_THRESHOLD,
                             "GPU %u: NVLink %s bit error rate %.2e is over its threshold",
                             c->ent->id, f == DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RAW ? "effective" : "symbol", ber);
            continue;
        }
        long long errors = (long long)abs_diff(first.i64, last.i64);
        if (errors >= LIMIT_NVLINK_ERROR)
            add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL,
                         DCGM_FR_NVLINK_ERROR_CRITICAL,
                         "GPU %u: %lld %s NVLink errors; none are expected",
                         c->ent->id, errors, field_tag(f));
    }
}

/* MonitorFabricFields: the fabric health mask (NVML's 2-bit and 4-bit
 * sub-fields) and the fabric manager's state */
static void check_fabric(check_ctx *c)
{
    unsigned int id = c->ent->id;
    hval mask = latest(c, DCGM_FI_DEV_FABRIC_HEALTH_MASK);
    if (mask.st == DCGM_ST_OK && !is_blank_i64(mask.i64)) {
        static const struct { int shift; const char *what; } flags[] = {
            { 4, "Route Unhealthy" }, { 0, "Bandwidth Degraded" }, { 2, "Route Recovery" },
            { 6, "Access Timeout Recovery" },
        };
        long long m = (long long)mask.i64;
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
            if (((m >> flags[i].shift) & 0x3) == 1) /* _TRUE */
                add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL,
                             DCGM_FR_FIELD_VIOLATION, "GPU %u fabric health: %s (mask 0x%llx)", id,
                             flags[i].what, m);
        int config = (int)((m >> 8) & 0xf); /* 0 not supported, 1 correct */
        if (config > 1)
            add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_FIELD_VIOLATION,
                         "GPU %u fabric health: Incorrect Configuration %d (mask 0x%llx)", id,
                         config, m);
    }
    hval fm = latest(c, DCGM_FI_DEV_FABRIC_MANAGER_STATUS);
    if (fm.st != DCGM_ST_OK || is_blank_i64(fm.i64))
        return;
    /* dcgmFabricManagerStatus_t */
    static const char *const names[] = { "Not Supported", "Not Started", "In Progress", "Success",
                                         "Failed", "Unrecognized", "NVML Too Old" };
    long long st = (long long)fm.i64;
    if (st == 0 || st == 3)
        return;
    add_incident(c, DCGM_HEALTH_WATCH_NVLINK,
                 st == 2 ? DCGM_HEALTH_RESULT_WARN : DCGM_HEALTH_RESULT_FAIL, DCGM_FR_FABRIC_PROBE_STATE,
                 "GPU %u: fabric manager state %s (%lld)", id,
                 st > 0 && st < 7 ? names[st] : "Unknown", st);
}

/* MonitorNVLinkErrorFields: totals that should stay at zero */
static void check_nvlink_totals(check_ctx *c)
{
    struct total { unsigned short field; dcgmHealthWatchResults_t health; const char *what; };
    static const struct total newer[] = {
        { DCGM_FI_DEV_NVLINK_RECOVERY_SUCCESSFUL_TOTAL, DCGM_HEALTH_RESULT_WARN, "link recoveries" },
        { DCGM_FI_DEV_NVLINK_RECOVERY_FAILED_TOTAL, DCGM_HEALTH_RESULT_FAIL, "failed link recoveries" },
    };
    static const struct total older[] = {
        { DCGM_FI_DEV_NVLINK_CRC_ERROR_TOTAL, DCGM_HEALTH_RESULT_FAIL, "data link CRC" },
        { DCGM_FI_DEV_NVLINK_RECOVERY_TOTAL, DCGM_HEALTH_RESULT_FAIL, "data link recovery" },
        { DCGM_FI_DEV_NVLINK_REPLAY_TOTAL, DCGM_HEALTH_RESULT_FAIL, "data link replay" },
    };
    int bw = blackwell_or_newer(c);
    const struct total *list = bw ? newer : older;
    size_t n = bw ? sizeof newer / sizeof newer[0] : sizeof older / sizeof older[0];
    for (size_t i = 0; i < n; i++) {
        hval v = latest(c, list[i].field);
        if (v.st == DCGM_ST_OK && !is_blank_i64(v.i64) && v.i64 > 0)
            add_incident(c, DCGM_HEALTH_WATCH_NVLINK, list[i].health, DCGM_FR_NVLINK_ERROR_CRITICAL,
                         "GPU %u: %lld %s NVLink errors; none are expected", c->ent->id,
                         (long long)v.i64, list[i].what);
    }
}

/* DcgmHealthWatch::IsGpuMigEnabled: the cached MIG mode (DCGM_FI_DEV_MIG_MODE),
 * off without a sample or with a blank one */
static int cached_mig_enabled(const check_ctx *c)
{
    hval v = latest(c, DCGM_FI_DEV_MIG_MODE);
    return v.st == DCGM_ST_OK && !is_blank_i64(v.i64) && v.i64 != 0;
}

/* MonitorNVLinkStatus: a GPU (not its instances) fails for each link Down;
 * in MIG mode the driver reports links down, so a GPU whose cached MIG mode
 * is on has its Down links passed over */
static void check_nvlink_links(check_ctx *c)
{
    if (c->ent->group != DCGM_FE_GPU)
        return;
    dcgmNvLinkLinkState_t states[DCGM_NVLINK_MAX_LINKS_PER_GPU];
    if (engine_nvlink_gpu_states_locked(c->e, c->ent->id, c->now - c->e->t0_us, states) !=
        DCGM_ST_OK)
        return;
    int mig = cached_mig_enabled(c);
    for (unsigned int link = 0; link < DCGM_NVLINK_MAX_LINKS_PER_GPU; link++)
        if (states[link] == DcgmNvLinkLinkStateDown && !mig)
            add_incident(c, DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL, DCGM_FR_NVLINK_DOWN,
                         "GPU %u: NvLink link %u is down", c->ent->id, link);
}

/* MonitorNVLink */
static void check_nvlink(check_ctx *c)
{
    check_nvlink_counters(c);
    check_nvlink5_counters(c);
    check_system_xids(c, DCGM_HEALTH_WATCH_NVLINK);
    check_nvlink_links(c);
    check_fabric(c);
    check_nvlink_totals(c);
}

/* ---- NvSwitches (MonitorNvSwitchErrorCounts) ---------------------------------------------- */


/* A switch's SXID count of the last minute above zero is an incident (fatal:
 * FAIL, non-fatal: WARN); in the fatal check every port Down is one too. */
static void check_switch_errors(check_ctx *c, int fatal)
{
    hval v = last_in_window(c, fatal ? DCGM_FI_DEV_SXID_FATAL_ERROR : DCGM_FI_DEV_SXID_NON_FATAL_ERROR);
    dcgmHealthSystems_t system =
        fatal ? DCGM_HEALTH_WATCH_NVSWITCH_FATAL : DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL;
    dcgmHealthWatchResults_t result = fatal ? DCGM_HEALTH_RESULT_FAIL : DCGM_HEALTH_RESULT_WARN;
    if (v.st == DCGM_ST_OK && !is_blank_i64(v.i64) && v.i64 > 0)
        add_incident(c, system, result, fatal ? DCGM_FR_NVSWITCH_FATAL_ERROR : DCGM_FR_NVSWITCH_NON_FATAL_ERROR,
                     "NvSwitch %u reported %s errors (link 0)", c->ent->id,
                     fatal ? "fatal" : "non-fatal");
    if (!fatal)
        return;
    const dcgmNvLinkLinkState_t *ports = engine_nvlink_switch_states_locked(c->e, c->ent);
    for (unsigned int p = 0; ports && p < DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH; p++)
        if (ports[p] == DcgmNvLinkLinkStateDown)
            add_incident(c, system, result, DCGM_FR_NVLINK_DOWN, "NvSwitch %u: NvLink port %u is down",
                         c->ent->id, p);
}

static void check_switch(check_ctx *c, unsigned int systems)
{
    if (systems & DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL)
        check_switch_errors(c, 0);
    if (systems & DCGM_HEALTH_WATCH_NVSWITCH_FATAL)
        check_switch_errors(c, 1);
}

/* ---- watches ----------------------------------------------------------------------------- */

static void watch(sim_engine *e, engine_owner owner, const engine_entity *ent, unsigned short field,
                  int64_t freq_us, double keep_s)
{
    int created = 0;
    if (freq_us < ENGINE_MIN_UPDATE_US)
        freq_us = ENGINE_MIN_UPDATE_US;
    /* a failure only loses this field, as DCGM's SetWatches logs and goes on */
    engine_watch_one_locked(e, owner, ent->group, ent->id, field, freq_us,
                            engine_retention_us(freq_us, keep_s, 0), &created);
}

static void unwatch(sim_engine *e, engine_owner owner, const engine_entity *ent,
                    unsigned short field)
{
    dcgm_field_entity_group_t group = ent->group;
    dcgm_field_eid_t id = ent->id;
    engine_storage_key(sim_field_meta(field), &group, &id);
    engine_series *s = engine_series_find_locked(e, group, id, field);
    if (!s)
        return;
    for (size_t i = 0; i < s->n_watchers; i++)
        if (s->watchers[i].owner == owner) {
            engine_unwatch_one_locked(e, owner, s);
            return;
        }
}

static int64_t at_least(int64_t v, int64_t floor_v) { return v > floor_v ? v : floor_v; }

/* SetPcie, SetMem, SetInforom, SetThermal, SetPower, SetNVLink, SetDriver for one entity */
static void watch_entity(sim_engine *e, engine_owner owner, const engine_entity *ent,
                         unsigned int systems, int64_t freq, double keep)
{
    if (systems & DCGM_HEALTH_WATCH_PCIE) {
        watch(e, owner, ent, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, freq, keep);
        watch(e, owner, ent, DCGM_FI_DEV_PCIE_LINK_GEN, freq, keep);
        watch(e, owner, ent, DCGM_FI_DEV_PCIE_LINK_WIDTH, freq, keep);
    }
    if (systems & DCGM_HEALTH_WATCH_NVLINK) {
        static const unsigned short fields[] = {
            DCGM_FI_CUDA_GPU_COMPUTE_CAPABILITY, DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL, DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL,
            DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL, 1214, DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RAW, 1204, 1205, 1206, 1207, 1208, 1209,
            1219, DCGM_FI_DEV_NVLINK_SYMBOL_BER_RAW, 1220, DCGM_FI_DEV_FABRIC_HEALTH_MASK, DCGM_FI_DEV_FABRIC_MANAGER_STATUS, 1213,
        };
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
            watch(e, owner, ent, fields[i], freq, keep);
        const engine_entity *gpu = ent;
        while (gpu && gpu->group != DCGM_FE_GPU)
            gpu = engine_find_entity_locked(e, gpu->parent_group, gpu->parent_id);
        if (gpu) {
            check_ctx c = { e, ent, gpu, engine_wall_us(), 0, NULL };
            if (blackwell_or_newer(&c)) {
                watch(e, owner, ent, DCGM_FI_DEV_NVLINK_RECOVERY_SUCCESSFUL_TOTAL, freq, keep);
                watch(e, owner, ent, DCGM_FI_DEV_NVLINK_RECOVERY_FAILED_TOTAL, freq, keep);
            } else {
                watch(e, owner, ent, DCGM_FI_DEV_NVLINK_CRC_ERROR_TOTAL, freq, keep);
                watch(e, owner, ent, DCGM_FI_DEV_NVLINK_RECOVERY_TOTAL, freq, keep);
                watch(e, owner, ent, DCGM_FI_DEV_NVLINK_REPLAY_TOTAL, freq, keep);
            }
        }
    }
    if (systems & DCGM_HEALTH_WATCH_MEM) {
        watch(e, owner, ent, DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, freq, keep);
        int64_t slow = at_least(freq, MIN_INTERVAL_US);
        watch(e, owner, ent, DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL, slow, keep);
        watch(e, owner, ent, DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL, slow, keep);
        watch(e, owner, ent, DCGM_FI_DEV_PAGE_RETIRED_PENDING, slow, keep);
        watch(e, owner, ent, DCGM_FI_DEV_XID_ERROR, slow, keep); /* the subscription to XIDs */
        watch(e, owner, ent, DCGM_FI_DEV_ROW_REMAP_FAILED, slow, keep);
        watch(e, owner, ent, DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL, slow, keep);
        watch(e, owner, ent, DCGM_FI_DEV_MEMORY_UNREPAIRABLE, slow, keep);
    }
    if (systems & DCGM_HEALTH_WATCH_INFOROM) {
        double long_keep = keep > INFOROM_MIN_KEEP_S ? keep : INFOROM_MIN_KEEP_S;
        watch(e, owner, ent, DCGM_FI_DEV_INFOROM_VALID, at_least(freq, INFOROM_MIN_INTERVAL_US), long_keep);
        watch(e, owner, ent, DCGM_FI_DEV_XID_ERROR, MIN_INTERVAL_US, long_keep);
    }
    if (systems & DCGM_HEALTH_WATCH_THERMAL)
        watch(e, owner, ent, DCGM_FI_DEV_THERMAL_VIOLATION, at_least(freq, MIN_INTERVAL_US), keep);
    if (systems & DCGM_HEALTH_WATCH_POWER) {
        watch(e, owner, ent, DCGM_FI_DEV_POWER_VIOLATION, at_least(freq, MIN_INTERVAL_US), keep);
        watch(e, owner, ent, DCGM_FI_DEV_BOARD_POWER_WATTS, at_least(freq, MIN_INTERVAL_US), keep);
    }
    if (systems & DCGM_HEALTH_WATCH_DRIVER)
        watch(e, owner, ent, DCGM_FI_DEV_GPU_RECOVERY_ACTION, freq, keep);
    else
        unwatch(e, owner, ent, DCGM_FI_DEV_GPU_RECOVERY_ACTION);
}

/* ---- group members ----------------------------------------------------------------------- */

static const engine_entity *gpu_of(const sim_engine *e, const engine_entity *ent)
{
    while (ent && ent->group != DCGM_FE_GPU) {
        if (ent->group != DCGM_FE_GPU_I && ent->group != DCGM_FE_GPU_CI)
            return NULL;
        ent = engine_find_entity_locked(e, ent->parent_group, ent->parent_id);
    }
    return ent;
}

/* A GPU, GPU instance or compute instance whose GPU is present (OK or fake):
 * the members DCGM's FilterActiveEntities keeps and FitsGpuHardwareCheck checks. */
static const engine_entity *checked_member(const sim_engine *e, const dcgmGroupEntityPair_t *pair,
                                           int64_t t_rel, const engine_entity **gpu)
{
    const engine_entity *ent = engine_find_entity_locked(e, pair->entityGroupId, pair->entityId);
    *gpu = gpu_of(e, ent);
    if (!ent || !*gpu)
        return NULL;
    DcgmEntityStatus_t st = engine_entity_status_locked(e, *gpu, t_rel);
    return st == DcgmEntityStatusOk || st == DcgmEntityStatusFake ? ent : NULL;
}

/* ---- the API ------------------------------------------------------------------------------ */

int engine_health_set(sim_engine *e, engine_owner owner, dcgmGpuGrp_t group, unsigned int systems,
                      long long update_interval_us, double max_keep_age_s)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    dcgmGroupEntityPair_t *entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *entities);
    if (!entities)
        return DCGM_ST_MEMORY;
    pthread_mutex_lock(&e->lock);
    unsigned int n = 0;
    /* every health request goes to DCGM's health module, loaded on first use */
    int rc = engine_module_use_locked(e, ENGINE_MODULE_HEALTH);
    engine_group *g = rc == DCGM_ST_OK ? engine_group_slot_locked(e, group) : NULL;
    if (rc == DCGM_ST_OK)
        rc = g ? engine_group_entities_locked(e, group, entities, &n) : DCGM_ST_NOT_CONFIGURED;
    if (rc == DCGM_ST_OK) {
        g->health_systems = systems;
        int64_t now = engine_now_locked(e);
        engine_owner health_owner = engine_health_owner(owner);
        for (unsigned int i = 0; i < n; i++) {
            const engine_entity *gpu;
            const engine_entity *ent = checked_member(e, &entities[i], now - e->t0_us, &gpu);
            if (ent)
                watch_entity(e, health_owner, ent, systems, update_interval_us, max_keep_age_s);
            else if (entities[i].entityGroupId == DCGM_FE_SWITCH &&
                     (ent = engine_find_entity_locked(e, DCGM_FE_SWITCH, entities[i].entityId))) {
                /* SetNvSwitchWatches */
                if (systems & DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL)
                    watch(e, health_owner, ent, DCGM_FI_DEV_SXID_NON_FATAL_ERROR, update_interval_us,
                          max_keep_age_s);
                if (systems & DCGM_HEALTH_WATCH_NVSWITCH_FATAL)
                    watch(e, health_owner, ent, DCGM_FI_DEV_SXID_FATAL_ERROR, update_interval_us, max_keep_age_s);
            }
            else if (entities[i].entityGroupId == DCGM_FE_CPU &&
                     (ent = engine_find_entity_locked(e, DCGM_FE_CPU, entities[i].entityId)))
                engine_health_watch_cpu_locked(e, health_owner, ent, systems, update_interval_us,
                                               max_keep_age_s);
        }
        /* SetGlobalChecks: IMEX status, on the host */
        engine_health_watch_global_locked(e, health_owner, systems, update_interval_us,
                                          max_keep_age_s);
        /* UpdateAllFields(1): every watched field has a sample before the call returns */
        engine_run_pass_locked(e, engine_now_locked(e));
        engine_kick_locked(e);
    }
    pthread_mutex_unlock(&e->lock);
    free(entities);
    return rc;
}

int engine_health_get(sim_engine *e, dcgmGpuGrp_t group, unsigned int *systems)
{
    if (!e || !systems)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = engine_module_use_locked(e, ENGINE_MODULE_HEALTH);
    engine_group *g = rc == DCGM_ST_OK ? engine_group_slot_locked(e, group) : NULL;
    if (g)
        *systems = g->health_systems;
    else if (rc == DCGM_ST_OK)
        rc = DCGM_ST_NOT_CONFIGURED;
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* MonitorWatches: per member, the devastating XIDs, then each enabled system
 * in DCGM's bit order */
static void check_member(check_ctx *c, unsigned int systems)
{
    check_devastating_xids(c);
    if (systems & DCGM_HEALTH_WATCH_PCIE)
        check_pcie(c);
    if (systems & DCGM_HEALTH_WATCH_NVLINK)
        check_nvlink(c);
    if (systems & DCGM_HEALTH_WATCH_MEM)
        check_mem(c);
    if (systems & DCGM_HEALTH_WATCH_INFOROM)
        check_inforom(c);
    if (systems & DCGM_HEALTH_WATCH_THERMAL)
        check_thermal(c);
    if (systems & DCGM_HEALTH_WATCH_POWER)
        check_power(c);
    if (systems & DCGM_HEALTH_WATCH_DRIVER)
        check_driver(c);
}

int engine_health_check(sim_engine *e, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out)
{
    if (!e || !out)
        return DCGM_ST_BADPARAM;
    if (out->version != dcgmHealthResponse_version5)
        return DCGM_ST_VER_MISMATCH;
    dcgmGroupEntityPair_t *entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *entities);
    if (!entities)
        return DCGM_ST_MEMORY;
    pthread_mutex_lock(&e->lock);
    unsigned int n = 0;
    int rc = engine_module_use_locked(e, ENGINE_MODULE_HEALTH);
    engine_group *g = rc == DCGM_ST_OK ? engine_group_slot_locked(e, group) : NULL;
    if (rc == DCGM_ST_OK)
        rc = g ? engine_group_entities_locked(e, group, entities, &n) : DCGM_ST_NOT_CONFIGURED;
    if (rc == DCGM_ST_OK) {
        out->overallHealth = DCGM_HEALTH_RESULT_PASS;
        out->incidentCount = 0;
        int64_t now = engine_now_locked(e);
        /* XIDs that happened since the last pass reach the cache first: DCGM
         * hears of them from the driver on a thread of their own, in MANUAL
         * mode too (DcgmCacheManagerEventThread) */
        engine_pump_events_locked(e, now);
        unsigned int systems = g->health_systems;
        /* MonitorGlobalHealthChecks, before the members */
        if (systems != 0)
            engine_health_check_global_locked(e, entities, n, systems, now - e->t0_us, out);
        for (unsigned int i = 0; systems != 0 && i < n; i++) {
            check_ctx c = { e, NULL, NULL, now, now - WINDOW_US, out };
            c.ent = checked_member(e, &entities[i], now - e->t0_us, &c.gpu);
            if (c.ent)
                check_member(&c, systems);
            else if (entities[i].entityGroupId == DCGM_FE_SWITCH &&
                     (c.ent = engine_find_entity_locked(e, DCGM_FE_SWITCH, entities[i].entityId)))
                check_switch(&c, systems);
            else if (entities[i].entityGroupId == DCGM_FE_CPU) {
                const engine_entity *cpu =
                    engine_find_entity_locked(e, DCGM_FE_CPU, entities[i].entityId);
                if (cpu) /* XIDs are matched to GPUs only */
                    engine_health_check_cpu_locked(e, cpu, systems, now, out);
            }
        }
    }
    pthread_mutex_unlock(&e->lock);
    free(entities);
    return rc;
}

/* RemoveUnhealthyGpus's question to the health module (DcgmHostEngineHandler.cpp,
 * DCGM_HEALTH_SR_CHECK_GPUS): every system checked on the given GPUs, whatever
 * watches are set; a GPU with a failing incident is marked in *unhealthy
 * (bit = GPU id).  Used by dcgmSelectGpusByTopology (engine_topo.c). */
int engine_health_unhealthy_gpus(sim_engine *e, const unsigned int *gpus, unsigned int n,
                                 uint64_t *unhealthy)
{
    if (!e || !unhealthy || (n && !gpus))
        return DCGM_ST_BADPARAM;
    *unhealthy = 0;
    dcgmHealthResponse_v5 *out = calloc(1, sizeof *out);
    if (!out)
        return DCGM_ST_MEMORY;
    out->version = dcgmHealthResponse_version5;
    pthread_mutex_lock(&e->lock);
    int64_t now = engine_now_locked(e);
    engine_pump_events_locked(e, now);
    for (unsigned int i = 0; i < n && i < DCGM_MAX_NUM_DEVICES; i++) {
        dcgmGroupEntityPair_t pair = { DCGM_FE_GPU, gpus[i] };
        check_ctx c = { e, NULL, NULL, now, now - WINDOW_US, out };
        c.ent = checked_member(e, &pair, now - e->t0_us, &c.gpu);
        if (c.ent)
            check_member(&c, DCGM_HEALTH_WATCH_ALL);
    }
    pthread_mutex_unlock(&e->lock);
    for (unsigned int i = 0; i < out->incidentCount; i++) {
        const dcgmIncidentInfo_t *inc = &out->incidents[i];
        if (inc->entityInfo.entityGroupId == DCGM_FE_GPU && inc->entityInfo.entityId < 64 &&
            inc->health == DCGM_HEALTH_RESULT_FAIL)
            *unhealthy |= 1ULL << inc->entityInfo.entityId;
    }
    free(out);
    return DCGM_ST_OK;
}

/* ---- the module's hooks ------------------------------------------------------ */

/* DCGM tells its health module of every XID stored, sampled or injected */
static void health_storing_locked(sim_engine *e, const engine_series *s, const engine_sample *value)
{
    if (s->field_id == DCGM_FI_DEV_XID_ERROR)
        engine_health_note_xid_locked(e, s, value->num.i64);
}

static void health_free(sim_engine *e)
{
    free(e->xid_seen);
    e->xid_seen = NULL;
}

const engine_module engine_health_module = {
    .name = "health",
    .free = health_free,
    .storing_locked = health_storing_locked,
};
