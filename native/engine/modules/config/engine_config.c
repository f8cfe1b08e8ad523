/*
 * engine_config.c -- DCGM's config manager on the engine's GPUs:
 * dcgmConfigSet, dcgmConfigGet and dcgmConfigEnforce as DCGM 4.6 answers them
 * (DCGM: modules/config/DcgmConfigManager.cpp, DcgmModuleConfig.cpp, and the
 * cache manager's writes, dcgmlib/src/DcgmCacheManager.cpp SetValueImpl).
 *
 *  - The target configuration of a GPU starts blank (every member
 *    DCGM_INT32_BLANK, power limit type "individual") the first time anything
 *    asks for it, and a set merges into it each member that was not blank and
 *    whose write did not fail as BADPARAM or NOT_SUPPORTED (SetConfigGpu,
 *    HelperMergeTargetConfiguration).  Targets outlive groups.
 *  - The current configuration is read live from the GPU: ECC mode (300),
 *    application clocks (111, 110), the requested power limit (160, type
 *    "individual"), compute mode (65), the requested workload power profile
 *    mask (165, which no simulated model has: it stays blank).  Sync boost
 *    always reads DCGM_INT32_NOT_SUPPORTED (GetCurrentConfig).
 *  - A write changes what the simulated GPU reports, as the driver would:
 *    the power limit (160 and 164, and the node's physics cap the GPU's draw
 *    there from then on; outside the GPU's 161..162 it is BADPARAM),
 *    the pending ECC mode (301; the current mode 300 waits for a GPU reset the
 *    simulator never does, so a set that changes ECC adds RESET_REQUIRED),
 *    the compute mode (65; 0, 1, 2 only), the application clocks (111/110, at
 *    most the GPU's 114/113; 0/0 resets them).  Autoboost (120) and workload
 *    power profiles are features no simulated model has: writing them is
 *    NOT_SUPPORTED (autoboost's NOT_SUPPORTED is not an error to DCGM).
 *  - Sync boost is gone from DCGM: on a group of one GPU asking for it is
 *    BADPARAM, on more it adds a NOT_SUPPORTED status and succeeds (SetSyncBoost).
 *  - A power limit of type "group budget" is divided among the group's GPUs.
 *  - Failures are listed per GPU and field in the message's statuses; a call
 *    whose failures all carry one code returns that code, else GENERIC_ERROR
 *    (GetConsistentErrorCode).
 *  - Everything needs root, as in DCGM (DCGM_ST_REQUIRES_ROOT otherwise).
 *  - Only the simulated node's GPUs take settings; with the NVML source, and on
 *    fake GPUs, every write is NOT_SUPPORTED.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "../../../dcgm_field_ids.h"

#define BLANK32 ((unsigned int)DCGM_INT32_BLANK)
#define IS_BLANK32(v) ((unsigned int)(v) >= (unsigned int)DCGM_INT32_BLANK)

/* What the config manager applied to one simulated GPU: a
 * setting replaces the node's reading of its fields until the engine ends.
 * (A power limit goes to the value source, whose physics follow it.) */
typedef struct engine_gpu_settings {
    int has_ecc_pending;
    int64_t ecc_pending;         /* field 301 */
    int has_compute_mode;
    int64_t compute_mode;        /* field 65 */
    int has_app_clocks;
    int64_t app_mem_mhz, app_sm_mhz; /* fields 111 and 110 */
} engine_gpu_settings;

/* DCGM's config manager state (DcgmConfigManager's m_activeConfig): the
 * target configuration of each GPU id, and what was applied to each GPU */
typedef struct engine_config_state {
    int has_target[DCGM_MAX_NUM_DEVICES];
    dcgmConfig_v2 target[DCGM_MAX_NUM_DEVICES];
    engine_gpu_settings applied[DCGM_MAX_NUM_DEVICES];  /* by node GPU index */
} engine_config_state;

/* a workload power profile write (DCGM's dcgmcmWorkloadPowerProfile_t actions) */
enum { PROFILE_NONE, PROFILE_CLEAR, PROFILE_SET };

/* ---- the overlay: settings replace the node's readings ---------------------- */

/* A setting the config manager applied replaces the node's reading of one
 * field of node GPU gpu (out is a reading, kind OK). */
static void engine_config_overlay_locked(const sim_engine *e, unsigned int gpu,
                                         unsigned short field_id, sim_value *out)
{
    if (gpu >= DCGM_MAX_NUM_DEVICES)
        return;
    const engine_gpu_settings *g = &e->config->applied[gpu];
    switch (field_id) {
    case DCGM_FI_DEV_ECC_PENDING:
        if (g->has_ecc_pending)
            sim_put_int(out, g->ecc_pending);
        break;
    case DCGM_FI_DEV_GPU_COMPUTE_MODE:
        if (g->has_compute_mode)
            sim_put_int(out, g->compute_mode);
        break;
    case DCGM_FI_DEV_APP_MEM_CLOCK:
        if (g->has_app_clocks)
            sim_put_int(out, g->app_mem_mhz);
        break;
    case DCGM_FI_DEV_APP_SM_CLOCK:
        if (g->has_app_clocks)
            sim_put_int(out, g->app_sm_mhz);
        break;
    default:
        break;
    }
}

/* ---- helpers ------------------------------------------------------------------ */

static void add_status(engine_config_msg *m, unsigned int gpu, unsigned short field, int status)
{
    if (m->num_statuses >= DCGM_MAX_NUM_DEVICES)
        return; /* DCGM's list does not grow past this either */
    dcgmErrorInfo_t *s = &m->statuses[m->num_statuses++];
    memset(s, 0, sizeof *s);
    s->gpuId = gpu;
    s->fieldId = (short)field;
    s->status = status;
}

/* the one code every listed failure carries, else GENERIC_ERROR */
static int consistent_error(const engine_config_msg *m)
{
    if (m->num_statuses == 0)
        return DCGM_ST_GENERIC_ERROR;
    for (unsigned int i = 1; i < m->num_statuses && i < DCGM_MAX_NUM_DEVICES; i++)
        if (m->statuses[i].status != m->statuses[0].status)
            return DCGM_ST_GENERIC_ERROR;
    return m->statuses[0].status;
}

static int running_as_root(void)
{
    return geteuid() == 0;
}

static void blank_config(dcgmConfig_v2 *c, unsigned int gpu)
{
    memset(c, 0, sizeof *c);
    c->version = dcgmConfig_version2;
    c->gpuId = gpu;
    c->eccMode = BLANK32;
    c->computeMode = BLANK32;
    c->perfState.syncBoost = BLANK32;
    c->perfState.targetClocks.version = dcgmClockSet_version1;
    c->perfState.targetClocks.memClock = BLANK32;
    c->perfState.targetClocks.smClock = BLANK32;
    c->powerLimit.type = DCGM_CONFIG_POWER_CAP_INDIVIDUAL;
    c->powerLimit.val = BLANK32;
    for (int i = 0; i < DCGM_POWER_PROFILE_ARRAY_SIZE; i++)
        c->workloadPowerProfiles[i] = BLANK32;
}

/* the target of a GPU id, made blank the first time (HelperGetTargetConfig) */
static dcgmConfig_v2 *target_of(sim_engine *e, unsigned int gpu)
{
    if (gpu >= DCGM_MAX_NUM_DEVICES)
        return NULL;
    if (!e->config->has_target[gpu]) {
        blank_config(&e->config->target[gpu], gpu);
        e->config->has_target[gpu] = 1;
    }
    return &e->config->target[gpu];
}

/* A GPU of the engine that is not lost (DCGM's "active only" entity lists). */
static const engine_entity *live_gpu(sim_engine *e, unsigned int gpu, int64_t now_us)
{
    const engine_entity *ent = engine_find_entity_locked(e, DCGM_FE_GPU, gpu);
    if (!ent)
        return NULL;
    DcgmEntityStatus_t st = engine_entity_status_locked(e, ent, now_us - e->t0_us);
    return st == DcgmEntityStatusOk || st == DcgmEntityStatusFake ? ent : NULL;
}

/* The GPU ids of a group, lost GPUs left out; the group's own error if it
 * does not exist. */
static int group_gpus(sim_engine *e, dcgmGpuGrp_t group, unsigned int *gpus, unsigned int *n)
{
    dcgmGroupEntityPair_t entities[DCGM_GROUP_MAX_ENTITIES_V2];
    unsigned int count = 0;
    *n = 0;
    int rc = engine_group_entities_locked(e, group, entities, &count);
    if (rc != DCGM_ST_OK)
        return rc;
    int64_t now = engine_now_locked(e);
    for (unsigned int i = 0; i < count && *n < DCGM_MAX_NUM_DEVICES; i++)
        if (entities[i].entityGroupId == DCGM_FE_GPU && live_gpu(e, entities[i].entityId, now))
            gpus[(*n)++] = entities[i].entityId;
    return DCGM_ST_OK;
}

/* One field of a GPU read live, as a stored sample would give it. */
static void read_live(sim_engine *e, const engine_entity *ent, unsigned short field,
                      engine_record *rec)
{
    engine_live_record_locked(e, ent, field, engine_now_locked(e), rec);
}

/* DCGM's int64 / double to int32 conversions: the blank codes map onto the
 * int32 ones, everything else is truncated. */
static unsigned int int32_of_i64(int64_t v)
{
    if (v >= DCGM_INT64_BLANK && v <= DCGM_INT64_NOT_PERMISSIONED)
        return (unsigned int)(DCGM_INT32_BLANK + (v - DCGM_INT64_BLANK));
    return (unsigned int)v;
}

static unsigned int int32_of_double(double v)
{
    if (v >= DCGM_FP64_BLANK && v <= DCGM_FP64_NOT_PERMISSIONED)
        return (unsigned int)(DCGM_INT32_BLANK + (int64_t)(v - DCGM_FP64_BLANK));
    if (v <= 0.0)
        return 0;
    if (v >= 4294967295.0)
        return 0xffffffffu;
    return (unsigned int)v;
}

static unsigned int record_int32(const engine_record *rec)
{
    return rec->type == DCGM_FT_DOUBLE ? int32_of_double(rec->v.dbl) : int32_of_i64(rec->v.i64);
}

/* GetCurrentConfigGpu: the GPU's configuration as it reads now */
static int current_config(sim_engine *e, unsigned int gpu, dcgmConfig_v2 *c)
{
    blank_config(c, gpu);
    const engine_entity *ent = live_gpu(e, gpu, engine_now_locked(e));
    if (!ent)
        return DCGM_ST_GPU_IS_LOST;
    engine_record rec;
    read_live(e, ent, DCGM_FI_DEV_ECC_MODE, &rec);
    if (rec.status == DCGM_ST_OK)
        c->eccMode = record_int32(&rec);
    read_live(e, ent, DCGM_FI_DEV_APP_MEM_CLOCK, &rec);
    if (rec.status == DCGM_ST_OK)
        c->perfState.targetClocks.memClock = record_int32(&rec);
    read_live(e, ent, DCGM_FI_DEV_APP_SM_CLOCK, &rec);
    if (rec.status == DCGM_ST_OK)
        c->perfState.targetClocks.smClock = record_int32(&rec);
    read_live(e, ent, DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS, &rec);
    if (rec.status == DCGM_ST_OK) {
        c->powerLimit.type = DCGM_CONFIG_POWER_CAP_INDIVIDUAL;
        c->powerLimit.val = record_int32(&rec);
    }
    read_live(e, ent, DCGM_FI_DEV_GPU_COMPUTE_MODE, &rec);
    if (rec.status == DCGM_ST_OK)
        c->computeMode = record_int32(&rec);
    /* 165 is a binary field no simulated model has: the profiles stay blank */
    return DCGM_ST_OK;
}

/* ---- writes to a GPU (the cache manager's SetValue) -------------------------- */

typedef struct gpu_write {
    unsigned short field;
    int64_t i1, i2;             /* ECC, compute mode, autoboost; clocks mem, sm */
    double dbl;                 /* power limit in W */
    int profile_action;
} gpu_write;

/* What the node reads for a field of a GPU right now (overlay included). */
static int node_reading(sim_engine *e, const engine_entity *ent, unsigned short field,
                        sim_value *v)
{
    engine_sample_entity_locked(e, ent, field, engine_now_locked(e) - e->t0_us, v);
    return v->kind == SIM_VALUE_OK;
}

/* A watched field gets the written value at once, as DCGM appends it. */
static void note_written(sim_engine *e, const engine_entity *ent, unsigned short field)
{
    engine_series *s = engine_series_find_locked(e, DCGM_FE_GPU, ent->id, field);
    if (!s || s->n_watchers == 0)
        return;
    int64_t now = engine_now_locked(e);
    if (s->ring.count > 0 && engine_ring_at(&s->ring, s->ring.count - 1)->ts >= now)
        return;
    sim_value v;
    engine_sample_entity_locked(e, ent, field, now - e->t0_us, &v);
    engine_sample sample;
    engine_value_from_sim(&v, s->type, &sample, NULL, 0);
    if (s->type != DCGM_FT_STRING)
        engine_series_append_locked(e, s, now, &sample, now);
}

static int write_gpu(sim_engine *e, unsigned int gpu, const gpu_write *w)
{
    int64_t now = engine_now_locked(e);
    const engine_entity *any = engine_find_entity_locked(e, DCGM_FE_GPU, gpu);
    if (!any)
        return DCGM_ST_BADPARAM;
    const engine_entity *ent = live_gpu(e, gpu, now);
    if (!ent)
        return DCGM_ST_GPU_IS_LOST;
    if (w->field == DCGM_FI_DEV_BOARD_POWER_PROFILE_REQUESTED_MASK && w->profile_action == PROFILE_NONE)
        return DCGM_ST_OK;
    /* only the simulated node's GPUs take settings */
    if (ent->fake || ent->gpu == ENGINE_NO_GPU || ent->gpu >= DCGM_MAX_NUM_DEVICES ||
        strcmp(e->src->ops->kind, "models") != 0)
        return DCGM_ST_NOT_SUPPORTED;
    if (!vs_field_supported(e->src, ent->gpu, w->field))
        return DCGM_ST_NOT_SUPPORTED;
    engine_gpu_settings *g = &e->config->applied[ent->gpu];
    switch (w->field) {
    case DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS: {
        sim_value lo, hi;
        if (!node_reading(e, ent, DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS, &lo) || !node_reading(e, ent, DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS, &hi))
            return DCGM_ST_NOT_SUPPORTED;
        /* compared in milliwatts, as NVML takes the limit */
        double mw = w->dbl * 1000.0;
        if (!(mw >= 0.0) || mw > 4294967295.0)
            return DCGM_ST_BADPARAM;
        unsigned int new_mw = (unsigned int)mw;
        if (new_mw < (unsigned int)(lo.dbl * 1000.0 + 0.5) ||
            new_mw > (unsigned int)(hi.dbl * 1000.0 + 0.5))
            return DCGM_ST_BADPARAM;
        if (!e->src->ops->set_power_limit)
            return DCGM_ST_NOT_SUPPORTED;
        /* from now on the GPU's draw is capped there (the node's physics) */
        int rc = e->src->ops->set_power_limit(e->src->impl, ent->gpu, now - e->t0_us,
                                              new_mw / 1000.0);
        if (rc == DCGM_ST_OK)
            note_written(e, ent, DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS);
        return rc;
    }
    case DCGM_FI_DEV_ECC_PENDING:
        g->has_ecc_pending = 1;
        g->ecc_pending = w->i1 == 1;
        note_written(e, ent, DCGM_FI_DEV_ECC_PENDING);
        return DCGM_ST_OK;
    case DCGM_FI_DEV_GPU_COMPUTE_MODE:
        if (w->i1 != DCGM_CONFIG_COMPUTEMODE_DEFAULT && w->i1 != DCGM_CONFIG_COMPUTEMODE_PROHIBITED &&
            w->i1 != DCGM_CONFIG_COMPUTEMODE_EXCLUSIVE_PROCESS)
            return DCGM_ST_BADPARAM;
        g->has_compute_mode = 1;
        g->compute_mode = w->i1;
        note_written(e, ent, DCGM_FI_DEV_GPU_COMPUTE_MODE);
        return DCGM_ST_OK;
    case DCGM_FI_DEV_APP_MEM_CLOCK: {
        if (w->i1 == 0 && w->i2 == 0) { /* back to the GPU's own clocks */
            g->has_app_clocks = 0;
        } else {
            sim_value mem_max, sm_max;
            if (!node_reading(e, ent, DCGM_FI_DEV_MAX_MEM_CLOCK, &mem_max) ||
                !node_reading(e, ent, DCGM_FI_DEV_MAX_SM_CLOCK, &sm_max))
                return DCGM_ST_NOT_SUPPORTED;
            if (w->i1 <= 0 || w->i2 <= 0 || w->i1 > mem_max.i64 || w->i2 > sm_max.i64)
                return DCGM_ST_BADPARAM;
            g->has_app_clocks = 1;
            g->app_mem_mhz = w->i1;
            g->app_sm_mhz = w->i2;
        }
        note_written(e, ent, DCGM_FI_DEV_APP_MEM_CLOCK);
        note_written(e, ent, DCGM_FI_DEV_APP_SM_CLOCK);
        return DCGM_ST_OK;
    }
    default:
        /* autoboost and workload power profiles: supported by no model, so
         * not reached; anything else is a field DCGM does not write */
        return DCGM_ST_GENERIC_ERROR;
    }
}

/* ---- the helpers of SetConfigGpu / HelperEnforceConfig ------------------------ */

static int set_ecc(sim_engine *e, unsigned int gpu, const dcgmConfig_v2 *want,
                   const dcgmConfig_v2 *cur, int *reset_needed)
{
    if (IS_BLANK32(want->eccMode) || IS_BLANK32(cur->eccMode) || cur->eccMode == want->eccMode)
        return DCGM_ST_OK;
    gpu_write w = { .field = DCGM_FI_DEV_ECC_PENDING, .i1 = want->eccMode };
    int rc = write_gpu(e, gpu, &w);
    if (rc == DCGM_ST_OK)
        *reset_needed = 1;
    return rc;
}

static int set_power(sim_engine *e, unsigned int gpu, const dcgmConfig_v2 *want)
{
    if (IS_BLANK32(want->powerLimit.val))
        return DCGM_ST_OK;
    gpu_write w = { .field = DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS, .dbl = want->powerLimit.val };
    return write_gpu(e, gpu, &w);
}

static int64_t i64_of_int32(unsigned int v)
{
    return IS_BLANK32(v) && v <= (unsigned int)DCGM_INT32_NOT_PERMISSIONED
               ? DCGM_INT64_BLANK + (int64_t)(v - (unsigned int)DCGM_INT32_BLANK)
               : (int64_t)v;
}

static int set_clocks(sim_engine *e, unsigned int gpu, const dcgmConfig_v2 *want)
{
    unsigned int mem = want->perfState.targetClocks.memClock;
    unsigned int sm = want->perfState.targetClocks.smClock;
    if (IS_BLANK32(mem) && IS_BLANK32(sm))
        return DCGM_ST_OK;
    gpu_write w = { .field = DCGM_FI_DEV_APP_MEM_CLOCK, .i1 = i64_of_int32(mem), .i2 = i64_of_int32(sm) };
    int rc = write_gpu(e, gpu, &w);
    if (rc != DCGM_ST_OK)
        return rc;
    /* autoboost back on after a reset, off with fixed clocks; NOT_SUPPORTED
     * (every model here) is no error */
    gpu_write boost = { .field = DCGM_FI_DEV_CLOCKS_AUTOBOOST_MODE, .i1 = mem == 0 && sm == 0 };
    rc = write_gpu(e, gpu, &boost);
    return rc == DCGM_ST_NOT_SUPPORTED ? DCGM_ST_OK : rc;
}

static int set_compute_mode(sim_engine *e, unsigned int gpu, const dcgmConfig_v2 *want)
{
    if (IS_BLANK32(want->computeMode))
        return DCGM_ST_OK;
    gpu_write w = { .field = DCGM_FI_DEV_GPU_COMPUTE_MODE, .i1 = want->computeMode };
    return write_gpu(e, gpu, &w);
}

/* HelperGetWorkloadPowerProfiles: what a set of profiles asks the GPU to do,
 * and the target's profiles afterwards (merged; NULL when unchanged) */
static int profile_action(const dcgmConfig_v2 *target, const dcgmConfig_v2 *cur,
                          const dcgmConfig_v2 *want, unsigned int *merged, int *merge)
{
    int blank = 1, empty = 1, same = 1;
    for (int i = 0; i < DCGM_POWER_PROFILE_ARRAY_SIZE; i++) {
        if (!IS_BLANK32(want->workloadPowerProfiles[i])) {
            blank = 0;
            if (cur->workloadPowerProfiles[i] != want->workloadPowerProfiles[i])
                same = 0;
        }
        if (want->workloadPowerProfiles[i] != 0)
            empty = 0;
    }
    *merge = !blank;
    if (blank)
        return PROFILE_NONE;
    if (empty) {
        memset(merged, 0, DCGM_POWER_PROFILE_ARRAY_SIZE * sizeof *merged);
        return PROFILE_CLEAR;
    }
    for (int i = 0; i < DCGM_POWER_PROFILE_ARRAY_SIZE; i++) {
        unsigned int t = target->workloadPowerProfiles[i];
        merged[i] = (IS_BLANK32(t) ? 0 : t) | want->workloadPowerProfiles[i];
    }
    return same ? PROFILE_NONE : PROFILE_SET;
}

static int set_profiles(sim_engine *e, unsigned int gpu, int action)
{
    gpu_write w = { .field = DCGM_FI_DEV_BOARD_POWER_PROFILE_REQUESTED_MASK, .profile_action = action };
    return write_gpu(e, gpu, &w);
}

/* HelperEnforceConfig: the target applied again, each failure listed */
static int enforce_gpu(sim_engine *e, unsigned int gpu, engine_config_msg *m)
{
    if (gpu >= DCGM_MAX_NUM_DEVICES || !e->config->has_target[gpu]) {
        add_status(m, gpu, 0, DCGM_ST_NOT_CONFIGURED);
        return DCGM_ST_NOT_CONFIGURED;
    }
    const dcgmConfig_v2 *t = &e->config->target[gpu];
    dcgmConfig_v2 cur;
    int rc = current_config(e, gpu, &cur);
    if (rc != DCGM_ST_OK) {
        add_status(m, gpu, 0, rc);
        return rc;
    }
    int failures = 0, reset_needed = 0;
    rc = set_ecc(e, gpu, t, &cur, &reset_needed);
    if (rc != DCGM_ST_OK) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_ECC_MODE, rc);
    }
    if (reset_needed) {
        /* the new ECC mode waits for a GPU reset nobody will do */
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_ECC_MODE, DCGM_ST_RESET_REQUIRED);
    }
    if ((rc = set_power(e, gpu, t)) != DCGM_ST_OK) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS, rc);
    }
    if ((rc = set_clocks(e, gpu, t)) != DCGM_ST_OK) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_APP_SM_CLOCK, rc);
        add_status(m, gpu, DCGM_FI_DEV_APP_MEM_CLOCK, rc);
    }
    if ((rc = set_compute_mode(e, gpu, t)) != DCGM_ST_OK) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_GPU_COMPUTE_MODE, rc);
    }
    unsigned int merged[DCGM_POWER_PROFILE_ARRAY_SIZE];
    int merge = 0;
    if ((rc = set_profiles(e, gpu, profile_action(t, &cur, t, merged, &merge))) != DCGM_ST_OK) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_BOARD_POWER_PROFILE_REQUESTED_MASK, rc);
    }
    return failures ? DCGM_ST_GENERIC_ERROR : DCGM_ST_OK;
}

/* Whether a failed write still becomes part of the target (DCGM keeps it
 * for the next enforce unless the value itself was refused). */
static int kept_despite(int rc)
{
    return rc == DCGM_ST_OK || rc == DCGM_ST_GPU_IS_LOST ||
           (rc != DCGM_ST_BADPARAM && rc != DCGM_ST_NOT_SUPPORTED);
}

/* SetConfigGpu */
static int set_gpu(sim_engine *e, unsigned int gpu, const dcgmConfig_v2 *want,
                   engine_config_msg *m)
{
    if (!running_as_root()) {
        add_status(m, BLANK32, 0, DCGM_ST_REQUIRES_ROOT);
        return DCGM_ST_REQUIRES_ROOT;
    }
    dcgmConfig_v2 *t = target_of(e, gpu);
    if (!t) {
        add_status(m, gpu, 0, DCGM_ST_BADPARAM);
        return DCGM_ST_BADPARAM;
    }
    dcgmConfig_v2 cur;
    int rc = current_config(e, gpu, &cur);
    if (rc != DCGM_ST_OK)
        return rc;
    int failures = 0, reset_needed = 0;

    rc = set_ecc(e, gpu, want, &cur, &reset_needed);
    if (rc != DCGM_ST_OK && rc != DCGM_ST_GPU_IS_LOST) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_ECC_MODE, rc);
    }
    if (kept_despite(rc) && !IS_BLANK32(want->eccMode))
        t->eccMode = want->eccMode;
    if (reset_needed)
        enforce_gpu(e, gpu, m); /* best effort; its failures are listed */

    rc = set_power(e, gpu, want);
    if (rc != DCGM_ST_OK && rc != DCGM_ST_GPU_IS_LOST) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS, rc);
    }
    if (kept_despite(rc) && !IS_BLANK32(want->powerLimit.val))
        t->powerLimit.val = want->powerLimit.val;

    rc = set_clocks(e, gpu, want);
    if (rc != DCGM_ST_OK && rc != DCGM_ST_GPU_IS_LOST) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_APP_SM_CLOCK, rc);
        add_status(m, gpu, DCGM_FI_DEV_APP_MEM_CLOCK, rc);
    }
    if (kept_despite(rc)) {
        if (!IS_BLANK32(want->perfState.targetClocks.memClock))
            t->perfState.targetClocks.memClock = want->perfState.targetClocks.memClock;
        if (!IS_BLANK32(want->perfState.targetClocks.smClock))
            t->perfState.targetClocks.smClock = want->perfState.targetClocks.smClock;
    }

    rc = set_compute_mode(e, gpu, want);
    if (rc != DCGM_ST_OK && rc != DCGM_ST_GPU_IS_LOST) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_GPU_COMPUTE_MODE, rc);
    }
    if (kept_despite(rc) && !IS_BLANK32(want->computeMode))
        t->computeMode = want->computeMode;

    unsigned int merged[DCGM_POWER_PROFILE_ARRAY_SIZE];
    int merge = 0;
    rc = set_profiles(e, gpu, profile_action(t, &cur, want, merged, &merge));
    if (rc != DCGM_ST_OK && rc != DCGM_ST_GPU_IS_LOST) {
        failures++;
        add_status(m, gpu, DCGM_FI_DEV_BOARD_POWER_PROFILE_REQUESTED_MASK, rc);
    }
    if (kept_despite(rc) && merge)
        memcpy(t->workloadPowerProfiles, merged, sizeof merged);

    return failures ? consistent_error(m) : DCGM_ST_OK;
}

/* ---- the three calls ----------------------------------------------------------- */

/* Locks e and lists the group's live GPUs for set and enforce, which refuse
 * an empty group (NOT_CONFIGURED); e is left unlocked on any failure. */
static int lock_configured_gpus(sim_engine *e, dcgmGpuGrp_t group, unsigned int *gpus,
                                unsigned int *n)
{
    pthread_mutex_lock(&e->lock);
    int rc = group_gpus(e, group, gpus, n);
    if (rc == DCGM_ST_OK && *n == 0)
        rc = DCGM_ST_NOT_CONFIGURED;
    if (rc != DCGM_ST_OK)
        pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_config_set(sim_engine *e, dcgmGpuGrp_t group, engine_config_msg *m)
{
    if (!m)
        return DCGM_ST_BADPARAM;
    m->num_statuses = 0;
    if (m->config.version != dcgmConfig_version2)
        return DCGM_ST_VER_MISMATCH;
    unsigned int gpus[DCGM_MAX_NUM_DEVICES], n = 0;
    int rc = lock_configured_gpus(e, group, gpus, &n);
    if (rc != DCGM_ST_OK)
        return rc;
    dcgmConfig_v2 want = m->config;
    if (!IS_BLANK32(want.powerLimit.val) && want.powerLimit.type == DCGM_CONFIG_POWER_BUDGET_GROUP) {
        /* a budget for the group: each GPU gets its share */
        want.powerLimit.type = DCGM_CONFIG_POWER_CAP_INDIVIDUAL;
        want.powerLimit.val /= n;
    }
    int failures = 0;
    for (unsigned int i = 0; i < n; i++)
        if (set_gpu(e, gpus[i], &want, m) != DCGM_ST_OK)
            failures++;
    /* sync boost (SetSyncBoost): no longer a DCGM feature */
    if (!IS_BLANK32(want.perfState.syncBoost)) {
        if (n <= 1) {
            add_status(m, BLANK32, DCGM_FI_SYSTEM_GPU_SYNC_BOOST, DCGM_ST_BADPARAM);
            failures++;
        } else {
            add_status(m, BLANK32, DCGM_FI_SYSTEM_GPU_SYNC_BOOST, DCGM_ST_NOT_SUPPORTED);
        }
    }
    rc = failures ? consistent_error(m) : DCGM_ST_OK;
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_config_get(sim_engine *e, dcgmGpuGrp_t group, engine_config_msg *m)
{
    if (!m)
        return DCGM_ST_BADPARAM;
    m->num_statuses = 0;
    m->num_configs = 0;
    if (m->req_type != DCGM_CONFIG_TARGET_STATE && m->req_type != DCGM_CONFIG_CURRENT_STATE)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    unsigned int gpus[DCGM_MAX_NUM_DEVICES], n = 0;
    int rc = group_gpus(e, group, gpus, &n);
    if (rc != DCGM_ST_OK) {
        pthread_mutex_unlock(&e->lock);
        return rc;
    }
    if (!running_as_root()) {
        add_status(m, BLANK32, 0, DCGM_ST_REQUIRES_ROOT);
        rc = DCGM_ST_REQUIRES_ROOT;
    } else if (n == 0) {
        add_status(m, BLANK32, 0, DCGM_ST_BADPARAM);
        rc = DCGM_ST_BADPARAM;
    } else if (m->req_type == DCGM_CONFIG_TARGET_STATE) {
        for (unsigned int i = 0; i < n; i++) {
            const dcgmConfig_v2 *t = target_of(e, gpus[i]);
            if (t)
                m->configs[m->num_configs++] = *t;
        }
    } else {
        int failures = 0;
        for (unsigned int i = 0; i < n; i++) {
            if (current_config(e, gpus[i], &m->configs[m->num_configs]) != DCGM_ST_OK)
                failures++;
            /* sync boost is no longer something a GPU has */
            m->configs[m->num_configs++].perfState.syncBoost = DCGM_INT32_NOT_SUPPORTED;
        }
        rc = failures ? DCGM_ST_GENERIC_ERROR : DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_config_enforce(sim_engine *e, dcgmGpuGrp_t group, engine_config_msg *m)
{
    if (!m)
        return DCGM_ST_BADPARAM;
    m->num_statuses = 0;
    unsigned int gpus[DCGM_MAX_NUM_DEVICES], n = 0;
    int rc = lock_configured_gpus(e, group, gpus, &n);
    if (rc != DCGM_ST_OK)
        return rc;
    int failures = 0;
    for (unsigned int i = 0; i < n; i++) {
        /* EnforceConfigGpu */
        if (!running_as_root()) {
            add_status(m, BLANK32, 0, DCGM_ST_REQUIRES_ROOT);
            failures++;
        } else if (enforce_gpu(e, gpus[i], m) != DCGM_ST_OK) {
            failures++;
        }
    }
    pthread_mutex_unlock(&e->lock);
    return failures ? DCGM_ST_GENERIC_ERROR : DCGM_ST_OK;
}

/* ---- the module's hooks ------------------------------------------------------ */

static int config_init(sim_engine *e)
{
    e->config = calloc(1, sizeof *e->config);
    return e->config ? DCGM_ST_OK : DCGM_ST_MEMORY;
}

static void config_free(sim_engine *e)
{
    free(e->config);
    e->config = NULL;
}

const engine_module engine_config_module = {
    .name = "config",
    .init = config_init,
    .free = config_free,
    .overlay_locked = engine_config_overlay_locked,
};
