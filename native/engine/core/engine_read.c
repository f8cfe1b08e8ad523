/*
 * engine_read.c -- reads served from the cache: latest values, values since
 * a cursor, several samples of one field, and live reads of the node.
 *
 * Records are copied out under the lock and handed to the emit function
 * after it is released, so a callback may call back into the library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

int engine_records_push(engine_record_buf *buf, const engine_record *rec)
{
    if (buf->count == buf->cap) {
        size_t cap = buf->cap ? buf->cap * 2 : 64;
        engine_record *grown = realloc(buf->items, cap * sizeof *grown);
        if (!grown)
            return DCGM_ST_MEMORY;
        buf->items = grown;
        buf->cap = cap;
    }
    buf->items[buf->count++] = *rec;
    return DCGM_ST_OK;
}

void engine_records_free(engine_record_buf *buf)
{
    free(buf->items);
    buf->items = NULL;
    buf->count = buf->cap = 0;
}

static void set_blank_value(engine_record *rec)
{
    engine_sample blank;
    engine_blank_sample(rec->type, 0, &blank, rec->v.str, sizeof rec->v.str);
    if (rec->type != DCGM_FT_STRING && rec->type != DCGM_FT_BINARY)
        rec->v.i64 = blank.num.i64;
    if (rec->type == DCGM_FT_BINARY)
        rec->v.str[0] = '\0';
}

void engine_record_blank(engine_record *rec, int status)
{
    rec->status = status;
    rec->ts = 0;
    set_blank_value(rec);
}

void engine_record_from_sample(engine_record *rec, const engine_sample *s)
{
    rec->status = DCGM_ST_OK;
    rec->ts = s->ts;
    if (rec->type == DCGM_FT_STRING)
        snprintf(rec->v.str, sizeof rec->v.str, "%s", s->str ? s->str : "");
    else
        rec->v.i64 = s->num.i64; /* copies the double's bits too */
}

static void record_init(engine_record *rec, dcgm_field_entity_group_t group,
                        dcgm_field_eid_t entity, unsigned short field_id)
{
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    rec->group = group;
    rec->entity = entity;
    rec->field_id = field_id;
    /* clients turn the type into a character, so keep it a valid one even
     * when the field is unknown */
    rec->type = meta ? meta->fieldType : DCGM_FT_INT64;
}

/* Only the first 256 bytes of the union are touched: strings are at most
 * that long, and blobs are never stored. */
static void copy_value(const engine_record *rec, dcgmFieldValueUnion_t *out)
{
    memset(out->str, 0, sizeof out->str);
    if (rec->type == DCGM_FT_STRING)
        snprintf(out->str, sizeof out->str, "%s", rec->v.str);
    else if (rec->type != DCGM_FT_BINARY)
        out->i64 = rec->v.i64;
}

void engine_record_to_v1(const engine_record *rec, dcgmFieldValue_v1 *out)
{
    out->version = dcgmFieldValue_version1;
    out->fieldId = rec->field_id;
    out->fieldType = (unsigned short)(unsigned char)rec->type;
    out->status = rec->status;
    out->ts = rec->ts;
    copy_value(rec, &out->value);
}

static void record_to_v2(const engine_record *rec, dcgmFieldValue_v2 *out)
{
    out->version = dcgmFieldValue_version2;
    out->entityGroupId = rec->group;
    out->entityId = rec->entity;
    out->fieldId = rec->field_id;
    out->fieldType = (unsigned short)(unsigned char)rec->type;
    out->status = rec->status;
    out->unused = 0;
    out->ts = rec->ts;
    copy_value(rec, &out->value);
}

const engine_series *engine_visible_series_locked(const sim_engine *e,
                                                  dcgm_field_entity_group_t group,
                                                  dcgm_field_eid_t entity, unsigned short field_id)
{
    engine_storage_key(sim_field_meta(field_id), &group, &entity);
    const engine_series *s = engine_series_find_locked(e, group, entity, field_id);
    /* a series nobody watches is only there for injected values */
    if (s && s->n_watchers == 0 && s->ring.count == 0)
        return NULL;
    return s;
}

void engine_latest_record_locked(sim_engine *e, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t entity, unsigned short field_id,
                                 engine_record *rec)
{
    record_init(rec, group, entity, field_id);
    if (!sim_field_meta(field_id)) {
        engine_record_blank(rec, DCGM_ST_UNKNOWN_FIELD);
        return;
    }
    const engine_series *s = engine_visible_series_locked(e, group, entity, field_id);
    if (engine_admin_hidden_locked(e, group))
        /* a detached GPU has no current value (DCGM blanks what it reads of one) */
        engine_record_blank(rec, DCGM_ST_NO_DATA);
    else if (!s)
        engine_record_blank(rec, DCGM_ST_NOT_WATCHED);
    else if (s->ring.count > 0)
        engine_record_from_sample(rec, engine_ring_at(&s->ring, s->ring.count - 1));
    else
        engine_record_blank(rec, s->last_status != DCGM_ST_OK ? s->last_status : DCGM_ST_NO_DATA);
}

void engine_live_record_locked(sim_engine *e, const engine_entity *ent,
                               unsigned short field_id, int64_t now_us, engine_record *rec)
{
    /* a fake GPU or compute instance still has DCGM's made-up profile name
     * (DCGM: dcgmlib/src/DcgmCacheManager.cpp, AddFakeInstance /
     * AddFakeComputeInstance) */
    int fake_instance_name = field_id == 50 && (ent->group == DCGM_FE_GPU_I ||
                                                ent->group == DCGM_FE_GPU_CI);
    if ((ent->fake && !fake_instance_name) || !sim_field_meta(field_id)) {
        /* nothing to ask for a fake entity but what was injected */
        engine_latest_record_locked(e, ent->group, ent->id, field_id, rec);
        return;
    }
    record_init(rec, ent->group, ent->id, field_id);
    if (engine_admin_hidden_locked(e, ent->group)) {
        engine_record_blank(rec, DCGM_ST_NO_DATA);
        return;
    }
    if (rec->type == DCGM_FT_BINARY) {
        engine_record_blank(rec, DCGM_ST_NOT_SUPPORTED);
        return;
    }
    sim_value v;
    engine_sample sample;
    engine_sample_entity_locked(e, ent, field_id, now_us - e->t0_us, &v);
    engine_value_from_sim(&v, rec->type, &sample, rec->v.str, sizeof rec->v.str);
    rec->status = DCGM_ST_OK;
    rec->ts = now_us;
    if (rec->type != DCGM_FT_STRING)
        rec->v.i64 = sample.num.i64;
}

/* ---- delivering ---------------------------------------------------------- */

static int deliver(const engine_record_buf *buf, engine_emit_fn emit, void *ctx,
                   dcgmFieldValue_v1 *scratch)
{
    for (size_t i = 0; i < buf->count; i++) {
        engine_record_to_v1(&buf->items[i], scratch);
        if (emit(ctx, buf->items[i].group, buf->items[i].entity, scratch) != 0)
            return 1;
    }
    return 0;
}

typedef struct read_plan {
    dcgmGroupEntityPair_t *entities;
    unsigned int n_entities;
    unsigned short fields[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
    unsigned int n_fields;
} read_plan;

static int plan_locked(sim_engine *e, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                       read_plan *plan)
{
    int rc = engine_group_entities_locked(e, group, plan->entities, &plan->n_entities);
    if (rc != DCGM_ST_OK)
        return rc;
    const engine_field_group *fg = engine_field_group_locked(e, field_group);
    if (!fg)
        return DCGM_ST_NOT_CONFIGURED;
    plan->n_fields = fg->count;
    memcpy(plan->fields, fg->ids, fg->count * sizeof fg->ids[0]);
    return DCGM_ST_OK;
}

static void pump_if_auto(sim_engine *e)
{
    if (e->mode == DCGM_OPERATION_MODE_AUTO)
        engine_pump_events_locked(e, engine_now_locked(e));
}

int engine_latest_values(sim_engine *e, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                         int gpu_only, engine_emit_fn emit, void *ctx)
{
    if (!e || !emit)
        return DCGM_ST_BADPARAM;
    read_plan plan = { 0 };
    engine_record_buf buf = { 0 };
    dcgmFieldValue_v1 *scratch = malloc(sizeof *scratch);
    plan.entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *plan.entities);
    int rc = scratch && plan.entities ? DCGM_ST_OK : DCGM_ST_MEMORY;
    if (rc == DCGM_ST_OK) {
        pthread_mutex_lock(&e->lock);
        pump_if_auto(e);
        rc = plan_locked(e, group, field_group, &plan);
        for (unsigned int i = 0; rc == DCGM_ST_OK && i < plan.n_entities; i++) {
            if (gpu_only && plan.entities[i].entityGroupId != DCGM_FE_GPU)
                continue;
            for (unsigned int f = 0; rc == DCGM_ST_OK && f < plan.n_fields; f++) {
                engine_record rec;
                engine_latest_record_locked(e, plan.entities[i].entityGroupId,
                                            plan.entities[i].entityId, plan.fields[f], &rec);
                rc = engine_records_push(&buf, &rec);
            }
        }
        pthread_mutex_unlock(&e->lock);
    }
    if (rc == DCGM_ST_OK)
        deliver(&buf, emit, ctx, scratch);
    engine_records_free(&buf);
    free(plan.entities);
    free(scratch);
    return rc;
}

/* One (entity, field) of a values-since read: its samples in [since, until],
 * or the single record an empty window yields.  s is its series (NULL: none
 * visible).  Returns non-OK to abort. */
static int collect_window_locked(const engine_series *s, dcgmGroupEntityPair_t entity,
                                 unsigned short field_id, long long since, int64_t until,
                                 engine_record_buf *buf)
{
    engine_record rec;
    record_init(&rec, entity.entityGroupId, entity.entityId, field_id);
    if (!s)
        return DCGM_ST_NOT_WATCHED;
    size_t before = buf->count;
    const engine_ring *r = &s->ring;
    for (size_t i = engine_ring_lower_bound(r, since); i < r->count; i++) {
        const engine_sample *sample = engine_ring_at(r, i);
        if (sample->ts > until)
            break;
        engine_record_from_sample(&rec, sample);
        if (engine_records_push(buf, &rec) != DCGM_ST_OK)
            return DCGM_ST_MEMORY;
    }
    if (buf->count > before)
        return DCGM_ST_OK;
    if (r->count == 0 && s->last_status != DCGM_ST_OK && s->last_status != DCGM_ST_NOT_SUPPORTED)
        return s->last_status;
    engine_record_blank(&rec, s->last_status == DCGM_ST_NOT_SUPPORTED && r->count == 0
                                  ? DCGM_ST_NOT_SUPPORTED
                                  : DCGM_ST_NO_DATA);
    return engine_records_push(buf, &rec);
}

static int has_non_gpu(const read_plan *plan)
{
    for (unsigned int i = 0; i < plan->n_entities; i++)
        if (plan->entities[i].entityGroupId != DCGM_FE_GPU &&
            plan->entities[i].entityGroupId != DCGM_FE_NONE)
            return 1;
    return 0;
}

/*
 * Series are looked up READ_RUN at a time, and the newest samples of each
 * asked of the CPU, before the first is copied: each lookup and each ring is
 * a cache miss of its own after 100 ms of other work, and asked for together
 * they overlap instead of coming one after the other.  The lock is let go
 * once a copy holds READ_FLUSH_RECORDS, so it stays small however long the
 * retention; the rest of the run is looked up again under the next lock.
 */
#define READ_RUN 32
#define READ_FLUSH_RECORDS 4096

/* The plan's (entity, field) pairs in order, entity after entity: pair at of them. */
static dcgmGroupEntityPair_t plan_entity(const read_plan *plan, size_t at)
{
    return plan->entities[at / plan->n_fields];
}

static unsigned short plan_field(const read_plan *plan, size_t at)
{
    return plan->fields[at % plan->n_fields];
}

static int deliver_since(sim_engine *e, const read_plan *plan, long long since, int64_t until,
                         engine_emit_fn emit, void *ctx, int *stopped)
{
    engine_record_buf buf = { 0 };
    dcgmFieldValue_v1 *scratch = malloc(sizeof *scratch);
    int rc = scratch ? DCGM_ST_OK : DCGM_ST_MEMORY;
    size_t total = (size_t)plan->n_entities * plan->n_fields;
    for (size_t next = 0; rc == DCGM_ST_OK && !*stopped && next < total;) {
        const engine_series *run[READ_RUN];
        size_t n = total - next < READ_RUN ? total - next : READ_RUN;
        buf.count = 0;
        pthread_mutex_lock(&e->lock);
        for (size_t k = 0; k < n; k++) {
            dcgmGroupEntityPair_t entity = plan_entity(plan, next + k);
            run[k] = engine_visible_series_locked(e, entity.entityGroupId, entity.entityId,
                                                  plan_field(plan, next + k));
            if (run[k])
                engine_ring_prefetch_newest(&run[k]->ring);
        }
        size_t k = 0;
        for (; rc == DCGM_ST_OK && k < n && buf.count < READ_FLUSH_RECORDS; k++)
            rc = collect_window_locked(run[k], plan_entity(plan, next + k), plan_field(plan, next + k),
                                       since, until, &buf);
        pthread_mutex_unlock(&e->lock);
        next += k;
        if (rc == DCGM_ST_OK)
            *stopped = deliver(&buf, emit, ctx, scratch);
    }
    engine_records_free(&buf);
    free(scratch);
    return rc;
}

int engine_values_since(sim_engine *e, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long since, long long *next_since, int gpu_only,
                        engine_emit_fn emit, void *ctx)
{
    if (!e || !emit || !next_since)
        return DCGM_ST_BADPARAM;
    *next_since = since;
    read_plan plan = { 0 };
    plan.entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *plan.entities);
    if (!plan.entities)
        return DCGM_ST_MEMORY;
    pthread_mutex_lock(&e->lock);
    /* the cursor is the engine's time now: every sample stamped at or
     * before it is already stored (events included), every later one is
     * stamped after it */
    int64_t until = engine_now_locked(e);
    if (e->mode == DCGM_OPERATION_MODE_AUTO)
        engine_pump_events_locked(e, until);
    int rc = plan_locked(e, group, field_group, &plan);
    pthread_mutex_unlock(&e->lock);
    if (rc == DCGM_ST_OK && gpu_only && has_non_gpu(&plan))
        rc = DCGM_ST_NOT_SUPPORTED;
    int stopped = 0;
    if (rc == DCGM_ST_OK)
        rc = deliver_since(e, &plan, since, until, emit, ctx, &stopped);
    if (rc == DCGM_ST_OK && !stopped)
        *next_since = until + 1;
    free(plan.entities);
    return rc;
}

int engine_entity_latest(sim_engine *e, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                         const unsigned short *fields, unsigned int count,
                         dcgmFieldValue_v1 *values)
{
    if (!e || !fields || !values || count == 0 || count > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_BADPARAM;
    if (engine_find_entity_locked(e, group, entity)) {
        pump_if_auto(e);
        for (unsigned int i = 0; i < count; i++) {
            engine_record rec;
            engine_latest_record_locked(e, group, entity, fields[i], &rec);
            engine_record_to_v1(&rec, &values[i]);
        }
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_entities_latest(sim_engine *e, const dcgmGroupEntityPair_t *entities,
                           unsigned int entity_count, const unsigned short *fields,
                           unsigned int field_count, unsigned int flags,
                           dcgmFieldValue_v2 *values)
{
    if (!e || !entities || !fields || !values || entity_count == 0 || field_count == 0 ||
        entity_count > DCGM_GROUP_MAX_ENTITIES_V2 ||
        field_count > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK;
    for (unsigned int i = 0; i < entity_count && rc == DCGM_ST_OK; i++)
        if (!engine_find_entity_locked(e, entities[i].entityGroupId, entities[i].entityId))
            rc = DCGM_ST_BADPARAM;
    if (rc == DCGM_ST_OK) {
        int64_t now = engine_now_locked(e);
        if (!(flags & DCGM_FV_FLAG_LIVE_DATA))
            pump_if_auto(e);
        size_t k = 0;
        for (unsigned int i = 0; i < entity_count; i++) {
            const engine_entity *ent =
                engine_find_entity_locked(e, entities[i].entityGroupId, entities[i].entityId);
            for (unsigned int f = 0; f < field_count; f++) {
                engine_record rec;
                if (flags & DCGM_FV_FLAG_LIVE_DATA)
                    engine_live_record_locked(e, ent, fields[f], now, &rec);
                else
                    engine_latest_record_locked(e, ent->group, ent->id, fields[f], &rec);
                record_to_v2(&rec, &values[k++]);
            }
        }
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

static int in_range(int64_t ts, long long start_ts, long long end_ts)
{
    return (start_ts == 0 || ts >= start_ts) && (end_ts == 0 || ts <= end_ts);
}

int engine_multiple_values(sim_engine *e, unsigned int gpu, unsigned short field_id, int *count,
                           long long start_ts, long long end_ts, dcgmOrder_t order,
                           dcgmFieldValue_v1 *values)
{
    if (!e || !count || !values || *count <= 0)
        return DCGM_ST_BADPARAM;
    if (order != DCGM_ORDER_ASCENDING && order != DCGM_ORDER_DESCENDING)
        return DCGM_ST_BADPARAM;
    if (!sim_field_meta(field_id))
        return DCGM_ST_UNKNOWN_FIELD;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK, capacity = *count, n = 0;
    const engine_series *s = NULL;
    if (!engine_find_entity_locked(e, DCGM_FE_GPU, gpu))
        rc = DCGM_ST_BADPARAM;
    else {
        pump_if_auto(e);
        s = engine_visible_series_locked(e, DCGM_FE_GPU, gpu, field_id);
        if (!s)
            rc = DCGM_ST_NOT_WATCHED;
    }
    engine_record rec;
    record_init(&rec, DCGM_FE_GPU, gpu, field_id);
    for (size_t i = 0; rc == DCGM_ST_OK && i < s->ring.count && n < capacity; i++) {
        size_t at = order == DCGM_ORDER_ASCENDING ? i : s->ring.count - 1 - i;
        const engine_sample *sample = engine_ring_at(&s->ring, at);
        if (!in_range(sample->ts, start_ts, end_ts))
            continue;
        engine_record_from_sample(&rec, sample);
        engine_record_to_v1(&rec, &values[n++]);
    }
    if (rc == DCGM_ST_OK && n == 0) {
        /* no samples is not an error here: one blank record says why */
        int why = s->ring.count == 0 && s->last_status != DCGM_ST_OK ? s->last_status
                                                                     : DCGM_ST_NO_DATA;
        engine_record_blank(&rec, why);
        engine_record_to_v1(&rec, &values[n++]);
    }
    pthread_mutex_unlock(&e->lock);
    *count = rc == DCGM_ST_OK ? n : 0;
    return rc;
}
