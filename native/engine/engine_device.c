/*
 * engine_device.c -- device attributes, health checks, profiling metric
 * groups and the simulator's own read of the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

/* dcgmError_t codes used in health incidents */
enum {
    FR_TEMP_VIOLATION = 42,
    FR_API_FAIL_GPU = 65,
    FR_ROW_REMAP_FAILURE = 80,
    FR_UNCONTAINED_ERROR = 81,
    FR_PENDING_ROW_REMAP = 85,
    FR_XID_ERROR = 101,
    FR_DBE_VIOLATION = 103
};

#define FIELD_XID 230
#define FIELD_GPU_TEMP 150
#define FIELD_SLOWDOWN_TEMP 158
#define FIELD_SHUTDOWN_TEMP 159

/* ---- device attributes --------------------------------------------------- */

/* INT64 / FP64 blanks map to the INT32 blank family, as DCGM's own
 * conversion does; real readings are truncated to 32 bits. */
static unsigned int record_u32(const engine_record *rec)
{
    if (rec->status != DCGM_ST_OK)
        return DCGM_INT32_BLANK;
    if (rec->type == DCGM_FT_DOUBLE) {
        double d = rec->v.dbl;
        if (d >= DCGM_FP64_BLANK) {
            double k = d - DCGM_FP64_BLANK;
            return DCGM_INT32_BLANK + (k >= 0 && k <= 3 ? (unsigned int)k : 0);
        }
        return d <= 0 ? 0 : d >= 4294967295.0 ? 0xffffffffu : (unsigned int)d;
    }
    int64_t v = rec->v.i64;
    if (v >= DCGM_INT64_BLANK) {
        int64_t k = v - DCGM_INT64_BLANK;
        return DCGM_INT32_BLANK + (k >= 0 && k <= 3 ? (unsigned int)k : 0);
    }
    return v <= 0 ? 0 : v >= 0xffffffffll ? 0xffffffffu : (unsigned int)v;
}

static void record_text(const engine_record *rec, char *out, size_t len)
{
    if (rec->status != DCGM_ST_OK || rec->type != DCGM_FT_STRING)
        snprintf(out, len, "%s", DCGM_STR_BLANK);
    else
        snprintf(out, len, "%s", rec->v.str);
}

typedef struct attr_reader {
    sim_engine *e;
    const engine_entity *gpu;
    const engine_entity *global;
    int64_t now;
} attr_reader;

static void read_live(const attr_reader *r, unsigned short field_id, engine_record *rec)
{
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    const engine_entity *ent = meta && meta->scope == DCGM_FS_GLOBAL && r->global ? r->global
                                                                                   : r->gpu;
    engine_live_record_locked(r->e, ent, field_id, r->now, rec);
}

static unsigned int live_u32(const attr_reader *r, unsigned short field_id)
{
    engine_record rec;
    read_live(r, field_id, &rec);
    return record_u32(&rec);
}

static void live_text(const attr_reader *r, unsigned short field_id, char *out, size_t len)
{
    engine_record rec;
    read_live(r, field_id, &rec);
    record_text(&rec, out, len);
}

static void fill_attributes(const attr_reader *r, dcgmDeviceAttributes_v3 *a)
{
    a->clockSets.version = dcgmDeviceSupportedClockSets_version1;
    a->clockSets.count = 0; /* field 130 is a blob the simulator does not model */
    a->thermalSettings.version = dcgmDeviceThermals_version1;
    a->thermalSettings.slowdownTemp = live_u32(r, 158);
    a->thermalSettings.shutdownTemp = live_u32(r, 159);
    dcgmDevicePowerLimits_v1 *p = &a->powerLimits;
    p->version = dcgmDevicePowerLimits_version1;
    p->curPowerLimit = live_u32(r, 160);
    p->enforcedPowerLimit = live_u32(r, 164);
    p->defaultPowerLimit = live_u32(r, 163);
    p->maxPowerLimit = live_u32(r, 162);
    p->minPowerLimit = live_u32(r, 161);
    dcgmDeviceIdentifiers_v1 *id = &a->identifiers;
    id->version = dcgmDeviceIdentifiers_version1;
    live_text(r, 54, id->uuid, sizeof id->uuid);
    live_text(r, 85, id->vbios, sizeof id->vbios);
    live_text(r, 82, id->inforomImageVersion, sizeof id->inforomImageVersion);
    live_text(r, 51, id->brandName, sizeof id->brandName);
    live_text(r, 50, id->deviceName, sizeof id->deviceName);
    live_text(r, 53, id->serial, sizeof id->serial);
    live_text(r, 57, id->pciBusId, sizeof id->pciBusId);
    live_text(r, 1, id->driverVersion, sizeof id->driverVersion);
    id->pciDeviceId = live_u32(r, 58);
    id->pciSubSystemId = live_u32(r, 59);
    id->virtualizationMode = live_u32(r, 500);
    dcgmDeviceMemoryUsage_v1 *m = &a->memoryUsage;
    m->version = dcgmDeviceMemoryUsage_version1;
    m->bar1Total = live_u32(r, 90);
    m->fbTotal = live_u32(r, 250);
    m->fbUsed = live_u32(r, 252);
    m->fbFree = live_u32(r, 251);
    dcgmDeviceSettings_v2 *s = &a->settings;
    s->version = dcgmDeviceSettings_version2;
    s->persistenceModeEnabled = live_u32(r, 66);
    s->migModeEnabled = live_u32(r, 67);
    s->confidentialComputeMode = live_u32(r, 74);
}

int engine_device_attributes(sim_engine *e, unsigned int gpu, dcgmDeviceAttributes_v3 *attr)
{
    if (!e || !attr)
        return DCGM_ST_BADPARAM;
    if (attr->version != dcgmDeviceAttributes_version3)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    attr_reader r = { e, engine_find_entity_locked(e, DCGM_FE_GPU, gpu),
                      engine_find_entity_locked(e, DCGM_FE_NONE, 0), 0 };
    int rc = DCGM_ST_BADPARAM;
    if (r.gpu) {
        r.now = engine_now_locked(e);
        fill_attributes(&r, attr);
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* ---- health -------------------------------------------------------------- */

int engine_health_set(sim_engine *e, dcgmGpuGrp_t group, unsigned int systems)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    engine_group *g = engine_group_slot_locked(e, group);
    if (g) {
        g->health_systems = systems;
        g->health_primed = 0;
    }
    pthread_mutex_unlock(&e->lock);
    return g ? DCGM_ST_OK : DCGM_ST_NOT_CONFIGURED;
}

int engine_health_get(sim_engine *e, dcgmGpuGrp_t group, unsigned int *systems)
{
    if (!e || !systems)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    engine_group *g = engine_group_slot_locked(e, group);
    if (g)
        *systems = g->health_systems;
    pthread_mutex_unlock(&e->lock);
    return g ? DCGM_ST_OK : DCGM_ST_NOT_CONFIGURED;
}

typedef struct xid_class {
    dcgmHealthSystems_t system;
    dcgmHealthWatchResults_t health;
    int code;
} xid_class;

/*
 * Memory XIDs (ECC, row remapping) go to MEM, a GPU falling off the bus to
 * PCIE, NVLink errors to NVLINK; everything else (application faults,
 * driver trouble) is reported under DRIVER as a warning.
 */
static xid_class classify_xid(int64_t xid)
{
    switch (xid) {
    case 48: return (xid_class){ DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, FR_DBE_VIOLATION };
    case 63: return (xid_class){ DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN, FR_PENDING_ROW_REMAP };
    case 64: return (xid_class){ DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, FR_ROW_REMAP_FAILURE };
    case 94: return (xid_class){ DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_WARN, FR_XID_ERROR };
    case 95: return (xid_class){ DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, FR_UNCONTAINED_ERROR };
    case 79: return (xid_class){ DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_FAIL, FR_XID_ERROR };
    case 74: return (xid_class){ DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_FAIL, FR_XID_ERROR };
    default: return (xid_class){ DCGM_HEALTH_WATCH_DRIVER, DCGM_HEALTH_RESULT_WARN, FR_XID_ERROR };
    }
}

static void add_incident(dcgmHealthResponse_v5 *out, unsigned int gpu, dcgmHealthSystems_t system,
                         dcgmHealthWatchResults_t health, int code, const char *msg)
{
    if (out->incidentCount >= DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2)
        return;
    dcgmIncidentInfo_t *inc = &out->incidents[out->incidentCount++];
    memset(inc, 0, sizeof *inc);
    inc->system = system;
    inc->health = health;
    inc->error.code = code;
    snprintf(inc->error.msg, sizeof inc->error.msg, "%s", msg);
    inc->entityInfo.entityGroupId = DCGM_FE_GPU;
    inc->entityInfo.entityId = gpu;
    if (health > out->overallHealth)
        out->overallHealth = health;
}

static void check_xids(sim_engine *e, const engine_entity *gpu, unsigned int systems,
                       int64_t from_rel, int64_t to_rel, dcgmHealthResponse_v5 *out)
{
    sim_event events[64];
    int n = vs_events(e->src, gpu->gpu, FIELD_XID, from_rel, to_rel, events, 64);
    for (int i = 0; i < n && i < 64; i++) {
        xid_class c = classify_xid(events[i].value);
        if (!(systems & c.system))
            continue;
        char msg[128];
        snprintf(msg, sizeof msg, "Detected XID %lld on GPU %u", (long long)events[i].value,
                 gpu->id);
        add_incident(out, gpu->id, c.system, c.health, c.code, msg);
    }
}

static int64_t sampled_int(sim_engine *e, const engine_entity *gpu, unsigned short field,
                           int64_t t_rel)
{
    sim_value v;
    engine_sample_entity_locked(e, gpu, field, t_rel, &v);
    if (v.kind != SIM_VALUE_OK)
        return -1;
    return v.type == DCGM_FT_DOUBLE ? (int64_t)v.dbl : v.i64;
}

static void check_thermal(sim_engine *e, const engine_entity *gpu, int64_t t_rel,
                          dcgmHealthResponse_v5 *out)
{
    int64_t temp = sampled_int(e, gpu, FIELD_GPU_TEMP, t_rel);
    int64_t slowdown = sampled_int(e, gpu, FIELD_SLOWDOWN_TEMP, t_rel);
    int64_t shutdown = sampled_int(e, gpu, FIELD_SHUTDOWN_TEMP, t_rel);
    if (temp < 0 || slowdown <= 0)
        return;
    dcgmHealthWatchResults_t health = DCGM_HEALTH_RESULT_PASS;
    if (shutdown > 0 && temp >= shutdown)
        health = DCGM_HEALTH_RESULT_FAIL;
    else if (temp >= slowdown)
        health = DCGM_HEALTH_RESULT_WARN;
    if (health == DCGM_HEALTH_RESULT_PASS)
        return;
    char msg[128];
    snprintf(msg, sizeof msg, "GPU %u temperature %lld C is at or above its slowdown limit %lld C",
             gpu->id, (long long)temp, (long long)slowdown);
    add_incident(out, gpu->id, DCGM_HEALTH_WATCH_THERMAL, health, FR_TEMP_VIOLATION, msg);
}

static void check_gpu(sim_engine *e, const engine_entity *gpu, unsigned int systems,
                      int64_t from_rel, int64_t to_rel, dcgmHealthResponse_v5 *out)
{
    int64_t lost_at = vs_gpu_lost_at(e->src, gpu->gpu);
    int lost = lost_at >= 0 && to_rel >= lost_at;
    if (systems & (DCGM_HEALTH_WATCH_MEM | DCGM_HEALTH_WATCH_PCIE | DCGM_HEALTH_WATCH_NVLINK |
                   DCGM_HEALTH_WATCH_DRIVER))
        check_xids(e, gpu, systems, from_rel, lost ? lost_at : to_rel, out);
    if (lost && (systems & DCGM_HEALTH_WATCH_PCIE)) {
        char msg[128];
        snprintf(msg, sizeof msg, "GPU %u has fallen off the bus", gpu->id);
        add_incident(out, gpu->id, DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_FAIL,
                     FR_API_FAIL_GPU, msg);
    }
    if (!lost && (systems & DCGM_HEALTH_WATCH_THERMAL))
        check_thermal(e, gpu, to_rel, out);
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
    engine_group *g = engine_group_slot_locked(e, group);
    int rc = g ? engine_group_entities_locked(e, group, entities, &n) : DCGM_ST_NOT_CONFIGURED;
    if (rc == DCGM_ST_OK) {
        out->overallHealth = DCGM_HEALTH_RESULT_PASS;
        out->incidentCount = 0;
        int64_t now_rel = engine_now_locked(e) - e->t0_us;
        /* the first check only sets the point later checks report from; its empty
         * read of XIDs lets a source that must subscribe to them (NVML) start
         * listening, so that the next check sees what happened in between */
        for (unsigned int i = 0; i < n; i++) {
            const engine_entity *ent =
                engine_find_entity_locked(e, entities[i].entityGroupId, entities[i].entityId);
            if (!ent || ent->group != DCGM_FE_GPU || ent->fake || ent->gpu == ENGINE_NO_GPU)
                continue;
            if (g->health_primed)
                check_gpu(e, ent, g->health_systems, g->health_last_rel, now_rel, out);
            else
                vs_events(e->src, ent->gpu, FIELD_XID, now_rel, now_rel, NULL, 0);
        }
        g->health_primed = 1;
        g->health_last_rel = now_rel;
    }
    pthread_mutex_unlock(&e->lock);
    free(entities);
    return rc;
}

/* ---- profiling ----------------------------------------------------------- */

int engine_prof_metric_groups(sim_engine *e, dcgmProfGetMetricGroups_v3 *groups)
{
    if (!e || !groups)
        return DCGM_ST_BADPARAM;
    if (groups->version != dcgmProfGetMetricGroups_version3)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    const engine_entity *gpu = engine_find_entity_locked(e, DCGM_FE_GPU, groups->gpuId);
    int rc = gpu ? DCGM_ST_OK : DCGM_ST_BADPARAM;
    unsigned int n_groups = 0;
    if (gpu && !gpu->fake) {
        memset(groups->metricGroups, 0, sizeof groups->metricGroups);
        for (unsigned short f = 1001; f <= 1099; f++) {
            if (!sim_field_meta(f) || !vs_field_supported(e->src, gpu->gpu, f))
                continue;
            dcgmProfMetricGroupInfo_v2 *mg = &groups->metricGroups[n_groups];
            if (mg->numFieldIds == DCGM_PROF_MAX_FIELD_IDS_PER_GROUP_V2) {
                if (n_groups + 1 >= DCGM_PROF_MAX_NUM_GROUPS_V2)
                    break;
                mg = &groups->metricGroups[++n_groups];
            }
            mg->majorId = 0;
            mg->minorId = (unsigned short)n_groups;
            mg->fieldIds[mg->numFieldIds++] = f;
        }
        if (groups->metricGroups[n_groups].numFieldIds > 0)
            n_groups++;
    }
    if (rc == DCGM_ST_OK) {
        groups->numMetricGroups = n_groups;
        if (n_groups == 0)
            rc = DCGM_ST_NOT_SUPPORTED;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* ---- simulator extension ------------------------------------------------- */

int engine_sim_value_at(sim_engine *e, unsigned int gpu, unsigned short field_id,
                        int64_t t_rel_us, dcgmFieldValue_v1 *value)
{
    if (!e || !value)
        return DCGM_ST_BADPARAM;
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    if (!meta)
        return DCGM_ST_UNKNOWN_FIELD;
    pthread_mutex_lock(&e->lock);
    const engine_entity *ent = engine_find_entity_locked(e, DCGM_FE_GPU, gpu);
    int rc = DCGM_ST_BADPARAM;
    if (ent && !ent->fake) {
        engine_record rec = { .group = DCGM_FE_GPU, .entity = gpu, .field_id = field_id,
                              .type = meta->fieldType };
        if (rec.type == DCGM_FT_BINARY) {
            engine_record_blank(&rec, DCGM_ST_NOT_SUPPORTED);
        } else {
            sim_value v;
            engine_sample sample;
            engine_sample_entity_locked(e, ent, field_id, t_rel_us, &v);
            engine_value_from_sim(&v, rec.type, &sample, rec.v.str, sizeof rec.v.str);
            if (rec.type != DCGM_FT_STRING)
                rec.v.i64 = sample.num.i64;
            rec.status = DCGM_ST_OK;
            rec.ts = e->t0_us + t_rel_us;
        }
        engine_record_to_v1(&rec, value);
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}
