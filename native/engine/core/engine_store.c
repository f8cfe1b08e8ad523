/*
 * engine_store.c -- the sample cache: one series per (entity group, entity,
 * field), each a growable ring of (timestamp, value) in ascending time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

static size_t bucket_of(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                        unsigned short field_id)
{
    uint64_t key = ((uint64_t)group << 48) ^ ((uint64_t)entity << 16) ^ field_id;
    key *= 0x9E3779B97F4A7C15ull;
    return (size_t)(key >> 52) % ENGINE_HASH_BUCKETS;
}

void engine_storage_key(const dcgm_field_meta_t *meta, dcgm_field_entity_group_t *group,
                        dcgm_field_eid_t *entity)
{
    /* DCGM keeps one copy of a global field (driver version, ...) and serves
     * it for every entity */
    if (meta && meta->scope == DCGM_FS_GLOBAL) {
        *group = DCGM_FE_NONE;
        *entity = 0;
    }
}

engine_series *engine_series_find_locked(const sim_engine *e, dcgm_field_entity_group_t group,
                                         dcgm_field_eid_t entity, unsigned short field_id)
{
    for (engine_series *s = e->buckets[bucket_of(group, entity, field_id)]; s; s = s->next)
        if (s->group == group && s->entity == entity && s->field_id == field_id)
            return s;
    return NULL;
}

engine_series *engine_series_get_locked(sim_engine *e, dcgm_field_entity_group_t group,
                                        dcgm_field_eid_t entity, unsigned short field_id,
                                        char type)
{
    engine_series *s = engine_series_find_locked(e, group, entity, field_id);
    if (s)
        return s;
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->group = group;
    s->entity = entity;
    s->field_id = field_id;
    s->type = type;
    s->is_event = vs_is_event_field(e->src, field_id);
    s->last_status = DCGM_ST_OK;
    if (e->n_series == e->series_list_cap) {
        size_t cap = e->series_list_cap ? e->series_list_cap * 2 : 256;
        engine_series **grown = realloc(e->series_list, cap * sizeof *grown);
        if (!grown) {
            free(s);
            return NULL;
        }
        e->series_list = grown;
        e->series_list_cap = cap;
    }
    s->listed_at = e->n_series;
    e->series_list[e->n_series] = s;
    size_t b = bucket_of(group, entity, field_id);
    s->next = e->buckets[b];
    e->buckets[b] = s;
    e->n_series++;
    return s;
}

void engine_ring_clear(engine_ring *r)
{
    for (size_t i = 0; i < r->count; i++)
        free(r->items[(r->head + i) % r->cap].str);
    r->head = 0;
    r->count = 0;
}

static void ring_free(engine_ring *r)
{
    engine_ring_clear(r);
    free(r->items);
    r->items = NULL;
    r->cap = 0;
}

static void series_free(engine_series *s)
{
    ring_free(&s->ring);
    free(s->watchers);
    free(s);
}

void engine_series_remove_locked(sim_engine *e, engine_series *s)
{
    engine_series **link = &e->buckets[bucket_of(s->group, s->entity, s->field_id)];
    while (*link && *link != s)
        link = &(*link)->next;
    if (*link) {
        *link = s->next;
        /* the last of the list takes its place */
        engine_series *last = e->series_list[--e->n_series];
        e->series_list[s->listed_at] = last;
        last->listed_at = s->listed_at;
    }
    series_free(s);
}

void engine_series_free_all_locked(sim_engine *e)
{
    for (size_t i = 0; i < e->n_series; i++)
        series_free(e->series_list[i]);
    memset(e->buckets, 0, sizeof e->buckets);
    e->n_series = 0;
    free(e->series_list);
    e->series_list = NULL;
    e->series_list_cap = 0;
}

const engine_sample *engine_ring_at(const engine_ring *r, size_t i)
{
    return &r->items[(r->head + i) % r->cap];
}

static engine_sample *ring_slot(engine_ring *r, size_t i)
{
    return &r->items[(r->head + i) % r->cap];
}

/*
 * Index of the first sample with ts >= the given one.  Sampling appends a
 * newer sample and a reader asks for what came after its last read, so the
 * answer is nearly always at or next to the end: the newest ts in the ring's
 * header answers an append with no probe, then steps back from the end,
 * doubling, bracket it (one probe for a read of one new sample), and a binary
 * search finishes inside the bracket.  An hour of 100 ms samples is
 * 36,000: a plain binary search took 16 probes for every append.
 */
size_t engine_ring_lower_bound(const engine_ring *r, int64_t ts)
{
    /* below lo every ts is < the one asked for, from hi on every ts is >= it */
    size_t lo = 0, hi = r->count, step = 1;
    if (hi == 0 || r->newest_ts < ts)
        return hi;
    hi--;   /* the newest is >= ts: no need to probe it */
    while (hi > 0) {
        size_t probe = hi > step ? hi - step : 0;
        if (engine_ring_at(r, probe)->ts < ts) {
            lo = probe + 1;
            break;
        }
        hi = probe;
        step *= 2;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (engine_ring_at(r, mid)->ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * Asks the CPU for the lines an append will touch: the slot it writes and the
 * oldest sample, which the keep age checks and drops.  A pass comes back to a
 * series every 100 ms or so and finds both out of cache; asked for before the
 * driver read, they arrive while the read runs instead of stalling the append.
 */
void engine_ring_prefetch_append(const engine_ring *r)
{
    if (r->cap == 0)
        return;
    __builtin_prefetch(&r->items[(r->head + r->count) % r->cap], 1);
    __builtin_prefetch(&r->items[r->head], 1);
}

/* The same for a read of what is new: the newest sample and the one before it. */
void engine_ring_prefetch_newest(const engine_ring *r)
{
    if (r->count == 0)
        return;
    __builtin_prefetch(&r->items[(r->head + r->count - 1) % r->cap]);
    if (r->count > 1)
        __builtin_prefetch(&r->items[(r->head + r->count - 2) % r->cap]);
}

static int ring_grow(engine_ring *r)
{
    size_t cap = r->cap ? r->cap * 2 : 16;
    engine_sample *items = malloc(cap * sizeof *items);
    if (!items)
        return DCGM_ST_MEMORY;
    for (size_t i = 0; i < r->count; i++)
        items[i] = *engine_ring_at(r, i);
    free(r->items);
    r->items = items;
    r->cap = cap;
    r->head = 0;
    return DCGM_ST_OK;
}

static void ring_drop_oldest(engine_ring *r)
{
    engine_sample *oldest = ring_slot(r, 0);
    free(oldest->str);
    oldest->str = NULL;
    r->head = (r->head + 1) % r->cap;
    r->count--;
}

static void drop_expired(engine_series *s, int64_t now_us)
{
    if (s->n_watchers == 0) {
        while (s->ring.count > ENGINE_UNWATCHED_CAP)
            ring_drop_oldest(&s->ring);
        return;
    }
    int64_t cutoff = now_us - s->keep_us;
    /* the newest sample is kept whatever its age, so a latest-value read of a
     * watch that stopped producing still has something to say */
    while (s->ring.count > 1 && engine_ring_at(&s->ring, 0)->ts < cutoff)
        ring_drop_oldest(&s->ring);
}

/*
 * Insert keeping timestamps ascending.  Sampling always appends at the end;
 * only injection with an old timestamp lands in the middle, and a sample
 * with a timestamp already present replaces that one.  Takes ownership of
 * value->str.
 */
int engine_series_append_locked(sim_engine *e, engine_series *s, int64_t ts,
                                const engine_sample *value, int64_t now_us)
{
    /* DCGM tells its health module of every XID stored, sampled or injected */
    engine_modules_storing_locked(e, s, value);
    engine_ring *r = &s->ring;
    size_t at = engine_ring_lower_bound(r, ts);
    if (at < r->count && engine_ring_at(r, at)->ts == ts) {
        engine_sample *same = ring_slot(r, at);
        free(same->str);
        *same = *value;
        same->ts = ts;
        engine_modules_stored_locked(e, s, ts);
        return DCGM_ST_OK;
    }
    if (r->count == r->cap && ring_grow(r) != DCGM_ST_OK) {
        free(value->str);
        return DCGM_ST_MEMORY;
    }
    for (size_t i = r->count; i > at; i--)
        *ring_slot(r, i) = *ring_slot(r, i - 1);
    engine_sample *slot = ring_slot(r, at);
    *slot = *value;
    slot->ts = ts;
    if (at == r->count)
        r->newest_ts = ts;
    r->count++;
    drop_expired(s, now_us);
    /* DCGM's policy manager hears of every value stored, sampled or injected */
    engine_modules_stored_locked(e, s, ts);
    return DCGM_ST_OK;
}

/* ---- value encoding ------------------------------------------------------ */

/* offset 0 = BLANK, 1 = NOT_FOUND, 2 = NOT_SUPPORTED, 3 = NOT_PERMISSIONED */
void engine_blank_sample(char type, int64_t offset, engine_sample *out, char *strbuf,
                         size_t strlen_max)
{
    static const char *const blank_strings[] = {
        DCGM_STR_BLANK, DCGM_STR_NOT_FOUND, DCGM_STR_NOT_SUPPORTED, DCGM_STR_NOT_PERMISSIONED
    };
    if (offset < 0 || offset > 3)
        offset = 0;
    out->str = NULL;
    out->num.i64 = 0;
    switch (type) {
    case DCGM_FT_DOUBLE:
        out->num.dbl = DCGM_FP64_BLANK + (double)offset;
        break;
    case DCGM_FT_STRING:
        if (strbuf)
            snprintf(strbuf, strlen_max, "%s", blank_strings[offset]);
        break;
    default:
        out->num.i64 = DCGM_INT64_BLANK + offset;
        break;
    }
}

void engine_value_from_sim(const sim_value *v, char type, engine_sample *out, char *strbuf,
                           size_t strlen_max)
{
    if (v->kind == SIM_VALUE_NOT_SUPPORTED) {
        engine_blank_sample(type, 2, out, strbuf, strlen_max);
        return;
    }
    if (v->kind == SIM_VALUE_NOT_FOUND || v->kind == SIM_VALUE_NOT_PERMISSIONED) {
        engine_blank_sample(type, v->kind == SIM_VALUE_NOT_FOUND ? 1 : 3, out, strbuf, strlen_max);
        return;
    }
    if (v->kind != SIM_VALUE_OK) {
        engine_blank_sample(type, 0, out, strbuf, strlen_max);
        return;
    }
    out->str = NULL;
    switch (type) {
    case DCGM_FT_DOUBLE:
        out->num.dbl = v->dbl;
        break;
    case DCGM_FT_STRING:
        out->num.i64 = 0;
        if (strbuf)
            snprintf(strbuf, strlen_max, "%.*s", (int)sizeof v->str - 1, v->str);
        break;
    default:
        out->num.i64 = v->i64;
        break;
    }
}
