/*
 * engine_groups.c -- entity groups and field groups.
 *
 * Groups are global to the engine (any connection may use any id, as in
 * DCGM); the owner is only remembered so a departing connection's groups can
 * be removed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define OWNER_INTERNAL 0xffffffffu

static const char *const internal_group_names[ENGINE_FIRST_USER_GROUP] = {
    "DCGM_ALL_SUPPORTED_GPUS", "DCGM_ALL_SUPPORTED_NVSWITCHES"
};

/* DCGM keeps three field groups of its own; their contents only need to be
 * plausible, since clients only list them and skip them by name. */
static const struct {
    const char *name;
    unsigned short ids[8];
} internal_field_groups[ENGINE_FIRST_USER_FIELD_GROUP] = {
    { "DCGM_INTERNAL_30SEC", { 150, 155, 203, 204, 230, 310, 311, 0 } },
    { "DCGM_INTERNAL_HOURLY", { 1, 50, 54, 57, 100, 101, 0 } },
    { "DCGM_INTERNAL_JOB", { 155, 156, 203, 204, 252, 0 } },
};

int engine_groups_init(sim_engine *e)
{
    for (int i = 0; i < ENGINE_FIRST_USER_GROUP; i++) {
        engine_group *g = calloc(1, sizeof *g);
        if (!g)
            return DCGM_ST_MEMORY;
        g->used = 1;
        g->id = (unsigned int)i;
        g->owner = OWNER_INTERNAL;
        snprintf(g->name, sizeof g->name, "%s", internal_group_names[i]);
        e->groups[i] = g;
    }
    e->next_group_id = ENGINE_FIRST_USER_GROUP;
    e->next_field_group_id = ENGINE_FIRST_USER_FIELD_GROUP;
    for (int i = 0; i < ENGINE_FIRST_USER_FIELD_GROUP; i++) {
        engine_field_group *fg = calloc(1, sizeof *fg);
        if (!fg)
            return DCGM_ST_MEMORY;
        fg->used = 1;
        fg->id = (unsigned int)i;
        fg->owner = OWNER_INTERNAL;
        snprintf(fg->name, sizeof fg->name, "%s", internal_field_groups[i].name);
        for (int k = 0; k < 8 && internal_field_groups[i].ids[k]; k++)
            if (sim_field_meta(internal_field_groups[i].ids[k]))
                fg->ids[fg->count++] = internal_field_groups[i].ids[k];
        e->field_groups[i] = fg;
    }
    return DCGM_ST_OK;
}

void engine_groups_free(sim_engine *e)
{
    for (int i = 0; i < ENGINE_MAX_GROUPS; i++) {
        free(e->groups[i]);
        e->groups[i] = NULL;
    }
    for (int i = 0; i < ENGINE_MAX_FIELD_GROUPS; i++) {
        free(e->field_groups[i]);
        e->field_groups[i] = NULL;
    }
}

void engine_groups_release_owner_locked(sim_engine *e, engine_owner owner)
{
    for (int i = ENGINE_FIRST_USER_GROUP; i < ENGINE_MAX_GROUPS; i++)
        if (e->groups[i] && e->groups[i]->owner == owner) {
            free(e->groups[i]);
            e->groups[i] = NULL;
        }
    for (int i = ENGINE_FIRST_USER_FIELD_GROUP; i < ENGINE_MAX_FIELD_GROUPS; i++)
        if (e->field_groups[i] && e->field_groups[i]->owner == owner) {
            free(e->field_groups[i]);
            e->field_groups[i] = NULL;
        }
}

/* ---- resolving group ids ------------------------------------------------- */

static unsigned int collect(const sim_engine *e, int (*want)(const engine_entity *),
                            dcgmGroupEntityPair_t *out)
{
    unsigned int n = 0;
    for (size_t i = 0; i < e->n_entities && n < DCGM_GROUP_MAX_ENTITIES_V2; i++) {
        if (!want(&e->entities[i]))
            continue;
        out[n].entityGroupId = e->entities[i].group;
        out[n].entityId = e->entities[i].id;
        n++;
    }
    return n;
}

static int is_gpu(const engine_entity *x) { return x->group == DCGM_FE_GPU; }
static int is_switch(const engine_entity *x) { return x->group == DCGM_FE_SWITCH; }
static int is_instance(const engine_entity *x) { return x->group == DCGM_FE_GPU_I; }
static int is_compute_instance(const engine_entity *x) { return x->group == DCGM_FE_GPU_CI; }
static int is_any(const engine_entity *x) { return x->group != DCGM_FE_NONE; }

/* the slot holding group id32, or -1 */
static int group_slot_of(const sim_engine *e, unsigned int id32)
{
    for (int i = 0; i < ENGINE_MAX_GROUPS; i++)
        if (e->groups[i] && e->groups[i]->id == id32)
            return i;
    return -1;
}

engine_group *engine_group_slot_locked(sim_engine *e, dcgmGpuGrp_t id)
{
    unsigned int id32 = engine_id32(id);
    if (id32 == DCGM_GROUP_ALL_GPUS)
        id32 = 0;
    else if (id32 == DCGM_GROUP_ALL_NVSWITCHES)
        id32 = 1;
    int slot = group_slot_of(e, id32);
    return slot < 0 ? NULL : e->groups[slot];
}

int engine_group_entities_locked(sim_engine *e, dcgmGpuGrp_t id,
                                 dcgmGroupEntityPair_t *out, unsigned int *count)
{
    unsigned int id32 = engine_id32(id);
    switch (id32) {
    case 0:
    case DCGM_GROUP_ALL_GPUS:
        *count = collect(e, is_gpu, out);
        return DCGM_ST_OK;
    case 1:
    case DCGM_GROUP_ALL_NVSWITCHES:
        *count = collect(e, is_switch, out);
        return DCGM_ST_OK;
    case DCGM_GROUP_ALL_INSTANCES:
        *count = collect(e, is_instance, out);
        return DCGM_ST_OK;
    case DCGM_GROUP_ALL_COMPUTE_INSTANCES:
        *count = collect(e, is_compute_instance, out);
        return DCGM_ST_OK;
    case DCGM_GROUP_ALL_ENTITIES:
        *count = collect(e, is_any, out);
        return DCGM_ST_OK;
    case DCGM_GROUP_NULL:
        *count = 0;
        return DCGM_ST_OK;
    default:
        break;
    }
    int slot = group_slot_of(e, id32);
    if (slot < 0)
        return DCGM_ST_NOT_CONFIGURED;
    const engine_group *g = e->groups[slot];
    memcpy(out, g->entities, g->count * sizeof *out);
    *count = g->count;
    return DCGM_ST_OK;
}

static const char *special_group_name(unsigned int id32)
{
    switch (id32) {
    case DCGM_GROUP_ALL_INSTANCES: return "DCGM_ALL_INSTANCES";
    case DCGM_GROUP_ALL_COMPUTE_INSTANCES: return "DCGM_ALL_COMPUTE_INSTANCES";
    case DCGM_GROUP_ALL_ENTITIES: return "DCGM_ALL_ENTITIES";
    case DCGM_GROUP_NULL: return "DCGM_NULL_GROUP";
    default: return NULL;
    }
}

/* ---- entity groups ------------------------------------------------------- */

static int fill_for_type(sim_engine *e, dcgmGroupType_t type, engine_group *g)
{
    int64_t t_rel = engine_wall_us() - e->t0_us;
    for (size_t i = 0; i < e->n_entities && g->count < DCGM_GROUP_MAX_ENTITIES_V2; i++) {
        const engine_entity *ent = &e->entities[i];
        int take;
        switch (type) {
        case DCGM_GROUP_DEFAULT:
            take = ent->group == DCGM_FE_GPU &&
                   engine_entity_status_locked(e, ent, t_rel) != DcgmEntityStatusLost;
            break;
        case DCGM_GROUP_EMPTY: take = 0; break;
        case DCGM_GROUP_DEFAULT_NVSWITCHES: take = ent->group == DCGM_FE_SWITCH; break;
        case DCGM_GROUP_DEFAULT_INSTANCES: take = ent->group == DCGM_FE_GPU_I; break;
        case DCGM_GROUP_DEFAULT_COMPUTE_INSTANCES: take = ent->group == DCGM_FE_GPU_CI; break;
        case DCGM_GROUP_DEFAULT_EVERYTHING: take = ent->group != DCGM_FE_NONE; break;
        default: return DCGM_ST_BADPARAM;
        }
        if (take) {
            g->entities[g->count].entityGroupId = ent->group;
            g->entities[g->count].entityId = ent->id;
            g->count++;
        }
    }
    return DCGM_ST_OK;
}

int engine_group_create(sim_engine *e, engine_owner owner, dcgmGroupType_t type,
                        const char *name, dcgmGpuGrp_t *id)
{
    if (!e || !name || !id || (unsigned)type > DCGM_GROUP_DEFAULT_EVERYTHING)
        return DCGM_ST_BADPARAM;
    engine_group *g = calloc(1, sizeof *g);
    if (!g)
        return DCGM_ST_MEMORY;
    g->used = 1;
    g->owner = owner;
    snprintf(g->name, sizeof g->name, "%s", name);
    pthread_mutex_lock(&e->lock);
    int rc = fill_for_type(e, type, g);
    int slot = ENGINE_FIRST_USER_GROUP;
    while (rc == DCGM_ST_OK && slot < ENGINE_MAX_GROUPS && e->groups[slot])
        slot++;
    if (rc == DCGM_ST_OK && slot >= ENGINE_MAX_GROUPS)
        rc = DCGM_ST_MAX_LIMIT;
    if (rc == DCGM_ST_OK) {
        g->id = e->next_group_id++;
        e->groups[slot] = g;
        *id = (dcgmGpuGrp_t)g->id;
        g = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    free(g);
    return rc;
}

static engine_group *user_group_locked(sim_engine *e, dcgmGpuGrp_t id)
{
    unsigned int id32 = engine_id32(id);
    int slot = id32 < ENGINE_FIRST_USER_GROUP ? -1 : group_slot_of(e, id32);
    return slot < 0 ? NULL : e->groups[slot];
}

static int find_member(const engine_group *g, dcgm_field_entity_group_t group,
                       dcgm_field_eid_t entity)
{
    for (unsigned int i = 0; i < g->count; i++)
        if (g->entities[i].entityGroupId == group && g->entities[i].entityId == entity)
            return (int)i;
    return -1;
}

int engine_group_add_entity(sim_engine *e, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK;
    engine_group *g = user_group_locked(e, id);
    if (!g)
        rc = DCGM_ST_NOT_CONFIGURED;
    else if (group == DCGM_FE_NONE || !engine_find_entity_locked(e, group, entity))
        rc = DCGM_ST_BADPARAM;
    else if (find_member(g, group, entity) >= 0)
        rc = DCGM_ST_BADPARAM;
    else if (g->count >= DCGM_GROUP_MAX_ENTITIES_V2)
        rc = DCGM_ST_MAX_LIMIT;
    else {
        g->entities[g->count].entityGroupId = group;
        g->entities[g->count].entityId = entity;
        g->count++;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_group_remove_entity(sim_engine *e, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                               dcgm_field_eid_t entity)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK;
    engine_group *g = user_group_locked(e, id);
    int at = g ? find_member(g, group, entity) : -1;
    if (!g)
        rc = DCGM_ST_NOT_CONFIGURED;
    else if (at < 0)
        rc = DCGM_ST_BADPARAM;
    else {
        memmove(&g->entities[at], &g->entities[at + 1],
                (g->count - (unsigned)at - 1) * sizeof g->entities[0]);
        g->count--;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_group_destroy(sim_engine *e, dcgmGpuGrp_t id)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    engine_group *g = user_group_locked(e, id);
    if (g) {
        e->groups[group_slot_of(e, g->id)] = NULL;
        free(g);
    }
    pthread_mutex_unlock(&e->lock);
    return g ? DCGM_ST_OK : DCGM_ST_NOT_CONFIGURED;
}

int engine_group_get_info(sim_engine *e, dcgmGpuGrp_t id, dcgmGroupInfo_v3 *info)
{
    if (!e || !info)
        return DCGM_ST_BADPARAM;
    if (info->version != dcgmGroupInfo_version3)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    unsigned int count = 0;
    int rc = engine_group_entities_locked(e, id, info->entityList, &count);
    if (rc == DCGM_ST_OK) {
        info->count = count;
        const engine_group *slot = engine_group_slot_locked(e, id);
        const char *name = slot ? slot->name : special_group_name(engine_id32(id));
        snprintf(info->groupName, sizeof info->groupName, "%s", name ? name : "");
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

static int by_id(const void *a, const void *b)
{
    unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;
    return x < y ? -1 : x > y;
}

int engine_group_get_all_ids(sim_engine *e, engine_group_ids *out)
{
    if (!e || !out)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    out->count = 0;
    for (int i = 0; i < ENGINE_MAX_GROUPS && out->count < DCGM_MAX_NUM_GROUPS; i++)
        if (e->groups[i])
            out->ids[out->count++] = e->groups[i]->id;
    pthread_mutex_unlock(&e->lock);
    qsort(out->ids, out->count, sizeof out->ids[0], by_id);
    return DCGM_ST_OK;
}

/* ---- field groups -------------------------------------------------------- */

/* the slot holding field group id32, or -1 */
static int field_group_slot_of(const sim_engine *e, unsigned int id32)
{
    for (int i = 0; i < ENGINE_MAX_FIELD_GROUPS; i++)
        if (e->field_groups[i] && e->field_groups[i]->id == id32)
            return i;
    return -1;
}

const engine_field_group *engine_field_group_locked(const sim_engine *e, dcgmFieldGrp_t id)
{
    int slot = field_group_slot_of(e, engine_id32(id));
    return slot < 0 ? NULL : e->field_groups[slot];
}

static int name_taken(const sim_engine *e, const char *name)
{
    for (int i = 0; i < ENGINE_MAX_FIELD_GROUPS; i++)
        if (e->field_groups[i] && strcmp(e->field_groups[i]->name, name) == 0)
            return 1;
    return 0;
}

int engine_field_group_create(sim_engine *e, engine_owner owner, int count,
                              const unsigned short *field_ids, const char *name,
                              dcgmFieldGrp_t *id)
{
    if (!e || !field_ids || !name || !id)
        return DCGM_ST_BADPARAM;
    if (count < 1 || count > ENGINE_MAX_FIELDS_PER_GROUP)
        return DCGM_ST_BADPARAM;
    size_t len = strnlen(name, DCGM_MAX_STR_LENGTH);
    if (len == 0 || len >= DCGM_MAX_STR_LENGTH)
        return DCGM_ST_BADPARAM;
    for (int i = 0; i < count; i++)
        if (!sim_field_meta(field_ids[i]))
            return DCGM_ST_BADPARAM;
    engine_field_group *fg = calloc(1, sizeof *fg);
    if (!fg)
        return DCGM_ST_MEMORY;
    fg->used = 1;
    fg->owner = owner;
    memcpy(fg->name, name, len);
    fg->count = (unsigned int)count;
    memcpy(fg->ids, field_ids, (size_t)count * sizeof fg->ids[0]);
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK, slot = ENGINE_FIRST_USER_FIELD_GROUP;
    if (name_taken(e, fg->name))
        rc = DCGM_ST_DUPLICATE_KEY;
    while (rc == DCGM_ST_OK && slot < ENGINE_MAX_FIELD_GROUPS && e->field_groups[slot])
        slot++;
    if (rc == DCGM_ST_OK && slot >= ENGINE_MAX_FIELD_GROUPS)
        rc = DCGM_ST_MAX_LIMIT;
    if (rc == DCGM_ST_OK) {
        fg->id = e->next_field_group_id++;
        e->field_groups[slot] = fg;
        *id = (dcgmFieldGrp_t)fg->id;
        fg = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    free(fg);
    return rc;
}

int engine_field_group_destroy(sim_engine *e, dcgmFieldGrp_t id)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    unsigned int id32 = engine_id32(id);
    pthread_mutex_lock(&e->lock);
    /* DcgmFieldGroupManager::RemoveFieldGroup: unknown -> NO_DATA, DCGM's own -> NO_PERMISSION */
    int slot = field_group_slot_of(e, id32);
    int rc = slot < 0 ? DCGM_ST_NO_DATA : DCGM_ST_NO_PERMISSION;
    if (slot >= 0 && id32 >= ENGINE_FIRST_USER_FIELD_GROUP) {
        free(e->field_groups[slot]);
        e->field_groups[slot] = NULL;
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

static void describe(const engine_field_group *fg, unsigned int id, dcgmFieldGroupInfo_v1 *out)
{
    out->version = dcgmFieldGroupInfo_version1;
    out->fieldGroupId = id;
    snprintf(out->fieldGroupName, sizeof out->fieldGroupName, "%s", fg->name);
    out->numFieldIds = fg->count;
    memset(out->fieldIds, 0, sizeof out->fieldIds);
    memcpy(out->fieldIds, fg->ids, fg->count * sizeof fg->ids[0]);
}

int engine_field_group_get_info(sim_engine *e, dcgmFieldGroupInfo_v1 *info)
{
    if (!e || !info)
        return DCGM_ST_BADPARAM;
    if (info->version != dcgmFieldGroupInfo_version1)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    const engine_field_group *fg = engine_field_group_locked(e, info->fieldGroupId);
    if (fg)
        describe(fg, fg->id, info);
    pthread_mutex_unlock(&e->lock);
    /* DcgmFieldGroupManager::PopulateFieldGroupInfo answers NO_DATA for an unknown id */
    return fg ? DCGM_ST_OK : DCGM_ST_NO_DATA;
}

int engine_field_group_get_all(sim_engine *e, dcgmAllFieldGroup_v1 *all)
{
    if (!e || !all)
        return DCGM_ST_BADPARAM;
    if (all->version != dcgmAllFieldGroup_version1)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    unsigned int n = 0;
    for (unsigned int i = 0; i < ENGINE_MAX_FIELD_GROUPS; i++)
        if (e->field_groups[i])
            describe(e->field_groups[i], e->field_groups[i]->id, &all->fieldGroups[n++]);
    all->numFieldGroups = n;
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}
