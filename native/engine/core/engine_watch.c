/*
 * engine_watch.c -- watches and sampling.
 *
 * A watch belongs to (entity group, entity, field), not to the field group
 * it was requested through; each owner that asked for it is a watcher.  A
 * pass samples every watch that is due and stamps all its samples with the
 * pass's time, as DCGM's cache manager does.  Event fields (XID) never get
 * periodic samples: every pass, and every read in AUTO mode, appends the
 * node's events up to now with the events' own timestamps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

int64_t engine_retention_us(int64_t freq_us, double max_keep_age_s, int max_keep_samples)
{
    const int64_t one_second = 1000000;
    /* DCGM truncates the age to whole seconds and turns a sample count into
     * an age with 10% slack; either way at least a second is kept */
    int64_t by_age = max_keep_age_s > 0 && max_keep_age_s < 1e9 ? (int64_t)max_keep_age_s : 0;
    by_age *= one_second;
    if (by_age < one_second)
        by_age = one_second;
    int64_t by_count = 0;
    if (max_keep_samples > 0)
        by_count = (int64_t)((double)max_keep_samples * (double)freq_us * 1.1);
    if (by_count < one_second)
        by_count = one_second;
    return by_age > by_count ? by_age : by_count;
}

static void recompute_watch(engine_series *s)
{
    s->freq_us = INT64_MAX;
    s->keep_us = 0;
    for (size_t i = 0; i < s->n_watchers; i++) {
        if (s->watchers[i].freq_us < s->freq_us)
            s->freq_us = s->watchers[i].freq_us;
        if (s->watchers[i].keep_us > s->keep_us)
            s->keep_us = s->watchers[i].keep_us;
    }
}

int engine_watch_one_locked(sim_engine *e, engine_owner owner, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity, unsigned short field_id, int64_t freq_us,
                            int64_t keep_us, int *created)
{
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    if (!meta)
        return DCGM_ST_UNKNOWN_FIELD;
    engine_storage_key(meta, &group, &entity);
    engine_series *s = engine_series_get_locked(e, group, entity, field_id, meta->fieldType);
    if (!s)
        return DCGM_ST_MEMORY;
    *created = 0;
    for (size_t i = 0; i < s->n_watchers; i++)
        if (s->watchers[i].owner == owner) {
            s->watchers[i].freq_us = freq_us;
            s->watchers[i].keep_us = keep_us;
            recompute_watch(s);
            return DCGM_ST_OK;
        }
    if (s->n_watchers == s->cap_watchers) {
        size_t cap = s->cap_watchers ? s->cap_watchers * 2 : 2;
        engine_watcher *grown = realloc(s->watchers, cap * sizeof *grown);
        if (!grown) {
            if (s->n_watchers == 0 && s->ring.count == 0)
                engine_series_remove_locked(e, s);
            return DCGM_ST_MEMORY;
        }
        s->watchers = grown;
        s->cap_watchers = cap;
    }
    if (s->n_watchers == 0) {
        /* history starts at the watch: nothing before now is reported */
        *created = 1;
        s->last_sampled_us = 0;
        s->last_status = DCGM_ST_OK;
        s->events_done_rel = engine_wall_us() - e->t0_us;
    }
    s->watchers[s->n_watchers++] = (engine_watcher){ owner, freq_us, keep_us };
    recompute_watch(s);
    return DCGM_ST_OK;
}

void engine_unwatch_one_locked(sim_engine *e, engine_owner owner, engine_series *s)
{
    for (size_t i = 0; i < s->n_watchers; i++)
        if (s->watchers[i].owner == owner) {
            s->watchers[i] = s->watchers[--s->n_watchers];
            break;
        }
    if (s->n_watchers == 0) {
        /* The series stays, as DCGM keeps a field's watch info once it has been
         * watched (DCGM: dcgmlib/src/DcgmCacheManager.cpp, RemoveEntityFieldWatch
         * only drops the watcher), so dcgmGetCacheManagerFieldInfo still answers
         * with no watchers.  Its samples go: reads of it answer NOT_WATCHED. */
        engine_ring_clear(&s->ring);
        s->freq_us = 0;
        s->keep_us = 0;
    } else {
        recompute_watch(s);
    }
}

/* ---- sampling ------------------------------------------------------------ */

void engine_sample_entity_locked(sim_engine *e, const engine_entity *ent,
                                 unsigned short field_id, int64_t t_rel, sim_value *out)
{
    memset(out, 0, sizeof *out);
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    out->type = meta ? meta->fieldType : DCGM_FT_INT64;
    /* the node models whole GPUs; what a MIG instance reads otherwise is the engine's business */
    if (engine_instance_sample_locked(e, ent, field_id, t_rel, out)) {
        out->type = meta ? meta->fieldType : out->type;
        return;
    }
    if (engine_levels_sample_locked(e, ent, field_id, t_rel, out))
        return;
    if (engine_link_sample_locked(e, ent, field_id, t_rel, out)) {
        out->type = meta ? meta->fieldType : out->type;
        return;
    }
    /* a field a module answers (the IMEX status: the host's, read from DCGM's tool) */
    if (engine_modules_sample_locked(e, ent, field_id, t_rel, out))
        return;
    if (ent->gpu == ENGINE_NO_GPU ||
        vs_sample(e->src, ent->gpu, field_id, t_rel, out) != DCGM_ST_OK)
        out->kind = SIM_VALUE_BLANK;
    else if (out->kind == SIM_VALUE_OK && ent->group == DCGM_FE_GPU)
        /* a setting a module applied (the config manager's) replaces the node's reading */
        engine_modules_overlay_locked(e, ent->gpu, field_id, out);
    out->type = meta ? meta->fieldType : out->type;
}

static int append_value(sim_engine *e, engine_series *s, int64_t ts, const sim_value *v,
                        int64_t now_us)
{
    char text[DCGM_MAX_STR_LENGTH];
    engine_sample sample;
    engine_value_from_sim(v, s->type, &sample, text, sizeof text);
    if (s->type == DCGM_FT_STRING) {
        sample.str = strdup(text);
        if (!sample.str)
            return DCGM_ST_MEMORY;
    }
    /* Samples go in timestamp order, as DCGM's cache keeps each series sorted: a sample
     * injected with a future timestamp stays after the ones sampled before that time.
     * Only an exact clash moves the new stamp on a microsecond (the append would
     * otherwise replace the sample already there). */
    const engine_ring *r = &s->ring;
    for (size_t at = engine_ring_lower_bound(r, ts); at < r->count && engine_ring_at(r, at)->ts == ts;
         at = engine_ring_lower_bound(r, ts))
        ts++;
    return engine_series_append_locked(e, s, ts, &sample, now_us);
}

static void count_sample(sim_engine *e, const engine_series *s, int64_t now_us)
{
    if (s->field_id >= DCGM_FI_MAX_FIELDS)
        return;
    e->field_samples[s->field_id]++;
    if (s->last_sampled_us != 0 && now_us - (s->last_sampled_us + s->freq_us) > s->freq_us / 2)
        e->field_late[s->field_id]++;
}

static void sample_series(sim_engine *e, engine_series *s, int64_t now_us)
{
    count_sample(e, s, now_us);
    s->last_sampled_us = now_us;
    const engine_entity *ent = engine_find_entity_locked(e, s->group, s->entity);
    if (!ent || ent->fake)
        return;
    int64_t t_rel = now_us - e->t0_us;
    if (engine_gpu_lost_locked(e, ent->gpu, t_rel)) {
        /* DCGM goes on sampling a lost GPU and stores a blank for each field, so a reader
         * sees the loss as blanks, not as silence (DCGM: DcgmCacheManager.cpp,
         * GetGpuFieldValue -> InsertNvmlErrorValue with NVML_ERROR_GPU_IS_LOST). */
        if (s->type == DCGM_FT_BINARY) {
            s->last_status = DCGM_ST_GPU_IS_LOST;
            return;
        }
        sim_value blank = { .kind = SIM_VALUE_BLANK, .type = s->type };
        s->last_status = append_value(e, s, now_us, &blank, now_us);
        return;
    }
    if (s->type == DCGM_FT_BINARY) {
        s->last_status = DCGM_ST_NOT_SUPPORTED;
        return;
    }
    engine_ring_prefetch_append(&s->ring);
    sim_value v;
    int64_t started = engine_wall_us();
    /* a series a module samples itself (the host's CPUs: a utilization
     * series stores nothing at first) */
    int own = engine_modules_sample_series_locked(e, ent, s->field_id, now_us, &v);
    if (own == 0) {
        s->exec_us += engine_wall_us() - started;
        s->last_status = DCGM_ST_NO_DATA;
        return;
    }
    if (own < 0)
        engine_sample_entity_locked(e, ent, s->field_id, t_rel, &v);
    s->exec_us += engine_wall_us() - started;
    s->fetch_count++;
    s->last_status = append_value(e, s, now_us, &v, now_us);
}

static void pump_series_events(sim_engine *e, engine_series *s, int64_t now_us)
{
    const engine_entity *ent = engine_find_entity_locked(e, s->group, s->entity);
    if (!ent || ent->fake || ent->gpu == ENGINE_NO_GPU)
        return;
    int64_t to_rel = now_us - e->t0_us;
    int64_t lost_at = vs_gpu_lost_at(e->src, ent->gpu);
    if (lost_at >= 0 && to_rel > lost_at)
        to_rel = lost_at;
    if (to_rel <= s->events_done_rel)
        return;
    sim_event stack_events[32];
    sim_event *events = stack_events;
    int n = vs_events(e->src, ent->gpu, s->field_id, s->events_done_rel, to_rel,
                            events, 32);
    if (n > 32) {
        events = malloc((size_t)n * sizeof *events);
        if (!events)
            return; /* try again next pass */
        n = vs_events(e->src, ent->gpu, s->field_id, s->events_done_rel, to_rel,
                            events, n);
    }
    for (int i = 0; i < n; i++) {
        sim_value v = { .kind = SIM_VALUE_OK, .type = s->type, .i64 = events[i].value,
                        .dbl = (double)events[i].value };
        append_value(e, s, e->t0_us + events[i].t_rel_us, &v, now_us);
    }
    if (events != stack_events)
        free(events);
    s->events_done_rel = to_rel;
}

void engine_pump_events_locked(sim_engine *e, int64_t now_us)
{
    /* by index, read again each time: an append's module hooks may add a series */
    for (size_t i = 0; i < e->n_series; i++) {
        engine_series *s = e->series_list[i];
        if (s->is_event && s->n_watchers > 0)
            pump_series_events(e, s, now_us);
    }
}

int engine_run_pass_locked(sim_engine *e, int64_t now_us)
{
    engine_pump_events_locked(e, now_us);
    for (size_t i = 0; i < e->n_series; i++) {
        engine_series *s = e->series_list[i];
        if (s->n_watchers == 0 || s->is_event)
            continue;
        if (s->last_sampled_us == 0 || now_us - s->last_sampled_us >= s->freq_us) {
            if (engine_admin_idle_locked(e, s->group))
                s->last_sampled_us = now_us; /* nothing read of a detached or paused GPU */
            else
                sample_series(e, s, now_us);
        }
    }
    return DCGM_ST_OK;
}

int64_t engine_next_due_locked(const sim_engine *e)
{
    int64_t due = INT64_MAX;
    for (size_t i = 0; i < e->n_series; i++) {
        const engine_series *s = e->series_list[i];
        if (s->n_watchers == 0 || s->is_event)
            continue;
        int64_t at = s->last_sampled_us == 0 ? 0 : s->last_sampled_us + s->freq_us;
        if (at < due)
            due = at;
    }
    return due;
}

/* ---- watch requests ------------------------------------------------------ */

typedef struct new_watches {
    engine_series **items;
    size_t count, cap;
} new_watches;

static int remember(new_watches *w, engine_series *s)
{
    if (w->count == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        engine_series **grown = realloc(w->items, cap * sizeof *grown);
        if (!grown)
            return DCGM_ST_MEMORY;
        w->items = grown;
        w->cap = cap;
    }
    w->items[w->count++] = s;
    return DCGM_ST_OK;
}

static int64_t clamp_freq(long long update_freq_us)
{
    return update_freq_us < ENGINE_MIN_UPDATE_US ? ENGINE_MIN_UPDATE_US : (int64_t)update_freq_us;
}

/* A new watch is sampled at once, in MANUAL mode too: DCGM 4.6 runs an
 * update pass whenever a watch request created a watch.  After that, MANUAL
 * mode leaves every sample to dcgmUpdateAllFields. */
static void after_new_watches_locked(sim_engine *e)
{
    engine_run_pass_locked(e, engine_now_locked(e));
    if (e->mode == DCGM_OPERATION_MODE_AUTO)
        engine_kick_locked(e);
}

/* The series a group member's field is kept in, if there is one. */
static engine_series *member_series_locked(const sim_engine *e,
                                           const dcgmGroupEntityPair_t *member,
                                           unsigned short field_id)
{
    dcgm_field_entity_group_t g = member->entityGroupId;
    dcgm_field_eid_t id = member->entityId;
    engine_storage_key(sim_field_meta(field_id), &g, &id);
    return engine_series_find_locked(e, g, id, field_id);
}

static int watch_pairs_locked(sim_engine *e, engine_owner owner,
                              const dcgmGroupEntityPair_t *entities, unsigned int n_entities,
                              const engine_field_group *fg, int64_t freq_us, int64_t keep_us)
{
    new_watches added = { 0 };
    int rc = DCGM_ST_OK, any_new = 0;
    for (unsigned int i = 0; i < n_entities && rc == DCGM_ST_OK; i++)
        for (unsigned int f = 0; f < fg->count && rc == DCGM_ST_OK; f++) {
            int created = 0;
            rc = engine_watch_one_locked(e, owner, entities[i].entityGroupId,
                                         entities[i].entityId, fg->ids[f], freq_us, keep_us,
                                         &created);
            if (rc == DCGM_ST_OK && created) {
                any_new = 1;
                rc = remember(&added, member_series_locked(e, &entities[i], fg->ids[f]));
            }
        }
    if (rc != DCGM_ST_OK) {
        /* all or nothing, as DCGM rolls back a failed watch request */
        for (size_t i = 0; i < added.count; i++)
            if (added.items[i])
                engine_unwatch_one_locked(e, owner, added.items[i]);
    } else if (any_new) {
        after_new_watches_locked(e);
    }
    free(added.items);
    return rc;
}

/* The members of a group and a field group: what every group-wide watch
 * request names.  entities holds DCGM_GROUP_MAX_ENTITIES_V2. */
static int resolve_locked(sim_engine *e, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                          dcgmGroupEntityPair_t *entities, unsigned int *n,
                          const engine_field_group **fg)
{
    int rc = engine_group_entities_locked(e, group, entities, n);
    *fg = engine_field_group_locked(e, field_group);
    if (rc == DCGM_ST_OK && !*fg)
        rc = DCGM_ST_NOT_CONFIGURED;
    return rc;
}

int engine_watch_fields(sim_engine *e, engine_owner owner, dcgmGpuGrp_t group,
                        dcgmFieldGrp_t field_group, long long update_freq_us,
                        double max_keep_age_s, int max_keep_samples)
{
    if (!e || engine_id32(group) == 0)
        return DCGM_ST_BADPARAM;
    dcgmGroupEntityPair_t *entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *entities);
    if (!entities)
        return DCGM_ST_MEMORY;
    int64_t freq_us = clamp_freq(update_freq_us);
    int64_t keep_us = engine_retention_us(freq_us, max_keep_age_s, max_keep_samples);
    pthread_mutex_lock(&e->lock);
    unsigned int n = 0;
    const engine_field_group *fg = NULL;
    int rc = resolve_locked(e, group, field_group, entities, &n, &fg);
    if (rc == DCGM_ST_OK)
        rc = watch_pairs_locked(e, owner, entities, n, fg, freq_us, keep_us);
    pthread_mutex_unlock(&e->lock);
    free(entities);
    return rc;
}

int engine_unwatch_fields(sim_engine *e, engine_owner owner, dcgmGpuGrp_t group,
                          dcgmFieldGrp_t field_group)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    dcgmGroupEntityPair_t *entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *entities);
    if (!entities)
        return DCGM_ST_MEMORY;
    pthread_mutex_lock(&e->lock);
    unsigned int n = 0;
    const engine_field_group *fg = NULL;
    int rc = resolve_locked(e, group, field_group, entities, &n, &fg);
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < n; i++)
        for (unsigned int f = 0; f < fg->count; f++) {
            engine_series *s = member_series_locked(e, &entities[i], fg->ids[f]);
            if (s)
                engine_unwatch_one_locked(e, owner, s);
        }
    pthread_mutex_unlock(&e->lock);
    free(entities);
    return rc;
}

int engine_watch_field_value(sim_engine *e, engine_owner owner, dcgm_field_entity_group_t group,
                             dcgm_field_eid_t entity, unsigned short field_id,
                             long long update_freq_us, double max_keep_age_s,
                             int max_keep_samples)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    if (!sim_field_meta(field_id))
        return DCGM_ST_UNKNOWN_FIELD;
    int64_t freq_us = clamp_freq(update_freq_us);
    int64_t keep_us = engine_retention_us(freq_us, max_keep_age_s, max_keep_samples);
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_BADPARAM, created = 0;
    if (engine_find_entity_locked(e, group, entity))
        rc = engine_watch_one_locked(e, owner, group, entity, field_id, freq_us, keep_us,
                                     &created);
    if (rc == DCGM_ST_OK && created)
        after_new_watches_locked(e);
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_unwatch_field_value(sim_engine *e, engine_owner owner,
                               dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                               unsigned short field_id, int clear_cache)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    if (!meta)
        return DCGM_ST_UNKNOWN_FIELD;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK;
    if (!engine_find_entity_locked(e, group, entity)) {
        rc = DCGM_ST_BADPARAM;
    } else {
        engine_storage_key(meta, &group, &entity);
        engine_series *s = engine_series_find_locked(e, group, entity, field_id);
        if (s && clear_cache)
            engine_ring_clear(&s->ring);
        if (s)
            engine_unwatch_one_locked(e, owner, s);
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_update_all_fields(sim_engine *e, int wait)
{
    (void)wait; /* the pass runs on the caller's thread, so it is always waited for */
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    engine_run_pass_locked(e, engine_now_locked(e));
    engine_kick_locked(e);
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}

/* ---- injection and the cache itself -------------------------------------- */

int engine_inject(sim_engine *e, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                  const dcgmFieldValue_v1 *value)
{
    if (!e || !value)
        return DCGM_ST_BADPARAM;
    if (value->version != dcgmInjectFieldValue_version1)
        return DCGM_ST_VER_MISMATCH;
    const dcgm_field_meta_t *meta = sim_field_meta(value->fieldId);
    if (!meta || value->fieldType != (unsigned char)meta->fieldType)
        return DCGM_ST_BADPARAM;
    if (meta->fieldType != DCGM_FT_INT64 && meta->fieldType != DCGM_FT_DOUBLE &&
        meta->fieldType != DCGM_FT_STRING)
        return DCGM_ST_BADPARAM;
    engine_sample sample = { 0 };
    if (meta->fieldType == DCGM_FT_STRING) {
        sample.str = strndup(value->value.str, DCGM_MAX_STR_LENGTH - 1);
        if (!sample.str)
            return DCGM_ST_MEMORY;
    } else if (meta->fieldType == DCGM_FT_DOUBLE) {
        sample.num.dbl = value->value.dbl;
    } else {
        sample.num.i64 = value->value.i64;
    }
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_BADPARAM;
    /* a global field has one series whatever entity the caller names; only a
     * per-entity field needs that entity to exist (DCGM: DcgmCacheManager.cpp,
     * InjectSamples) */
    if (meta->scope == DCGM_FS_GLOBAL || engine_find_entity_locked(e, group, entity)) {
        engine_storage_key(meta, &group, &entity);
        engine_series *s = engine_series_get_locked(e, group, entity, value->fieldId,
                                                    meta->fieldType);
        rc = DCGM_ST_MEMORY;
        if (s) {
            rc = engine_series_append_locked(e, s, value->ts, &sample, engine_wall_us());
            sample.str = NULL; /* owned by the series now, or freed by it */
        }
    }
    pthread_mutex_unlock(&e->lock);
    free(sample.str);
    return rc;
}

int engine_empty_cache(sim_engine *e)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < e->n_series; i++)
        engine_ring_clear(&e->series_list[i]->ring);
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}

/* ---- cache manager field info --------------------------------------------- */

int engine_cache_field_info(sim_engine *e, dcgmCacheManagerFieldInfo_v4_t *info)
{
    if (!e || !info)
        return DCGM_ST_BADPARAM;
    if (info->version != dcgmCacheManagerFieldInfo_version4)
        return DCGM_ST_VER_MISMATCH;
    const dcgm_field_meta_t *meta = sim_field_meta(info->fieldId);
    if (!meta)
        return DCGM_ST_BADPARAM;
    dcgm_field_entity_group_t group = (dcgm_field_entity_group_t)info->entityGroupId;
    dcgm_field_eid_t entity = info->entityId;
    engine_storage_key(meta, &group, &entity);
    pthread_mutex_lock(&e->lock);
    const engine_series *s = engine_series_find_locked(e, group, entity, info->fieldId);
    if (!s) {
        pthread_mutex_unlock(&e->lock);
        return DCGM_ST_NOT_WATCHED;
    }
    info->flags = s->n_watchers ? DCGM_CMI_F_WATCHED : 0;
    info->lastStatus = (short)s->last_status;
    info->monitorIntervalUsec = s->n_watchers ? s->freq_us : 0;
    info->maxAgeUsec = s->n_watchers ? s->keep_us : 0;
    info->execTimeUsec = s->exec_us;
    info->fetchCount = s->fetch_count;
    int n = 0;
    for (size_t i = 0; i < s->n_watchers && n < DCGM_CM_FIELD_INFO_NUM_WATCHERS; i++, n++) {
        const engine_watcher *w = &s->watchers[i];
        dcgm_cm_field_info_watcher_t *out = &info->watchers[n];
        out->watcherType = (w->owner & ENGINE_OWNER_HEALTH)   ? DcgmWatcherTypeHealthWatch
                           : (w->owner & ENGINE_OWNER_POLICY) ? DcgmWatcherTypePolicyManager
                                                              : DcgmWatcherTypeClient;
        out->connectionId = w->owner & ~(ENGINE_OWNER_HEALTH | ENGINE_OWNER_POLICY);
        out->monitorIntervalUsec = w->freq_us;
        out->maxAgeUsec = w->keep_us;
    }
    info->numWatchers = n;
    for (int i = n; i < DCGM_CM_FIELD_INFO_NUM_WATCHERS; i++)
        memset(&info->watchers[i], 0, sizeof info->watchers[i]);
    info->numSamples = (int)s->ring.count;
    info->oldestTimestamp = s->ring.count ? engine_ring_at(&s->ring, 0)->ts : 0;
    info->newestTimestamp = s->ring.count ? engine_ring_at(&s->ring, s->ring.count - 1)->ts : 0;
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}
