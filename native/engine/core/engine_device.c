/*
 * engine_device.c -- device attributes, profiling metric groups and the
 * simulator's own read of the node.  Health checks live in modules/health/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

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
    if (!ent) {
        /* no such GPU: its fields read as blanks */
        memset(rec, 0, sizeof *rec);
        rec->field_id = field_id;
        rec->type = meta ? meta->fieldType : DCGM_FT_INT64;
        engine_record_blank(rec, DCGM_ST_BADPARAM);
        return;
    }
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
    /* DCGM reads the attributes as the latest values of their fields for
     * that GPU, and an id no GPU has only makes those values blank: the call
     * still succeeds (DCGM: dcgmlib/src/DcgmApi.cpp, helperDeviceGetAttributes) */
    r.now = engine_now_locked(e);
    fill_attributes(&r, attr);
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
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
