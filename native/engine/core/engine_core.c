/*
 * engine_core.c -- engine lifecycle, its clock, the cache-manager thread and
 * the entity table (GPUs, MIG instances, fake entities).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_internal.h"

int64_t engine_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Strictly increasing across calls, so that a sample stamped by a later pass
 * can never fall at or below a cursor already handed to a client, even if
 * the wall clock steps back. */
int64_t engine_now_locked(sim_engine *e)
{
    int64_t now = engine_wall_us();
    if (now <= e->last_now_us)
        now = e->last_now_us + 1;
    e->last_now_us = now;
    return now;
}

unsigned int engine_id32(uintptr_t id)
{
    /* ctypes callers pass group ids as C ints, so only the low half is
     * meaningful; every id this engine hands out fits in it */
    return (unsigned int)(id & 0xffffffffu);
}

void engine_kick_locked(sim_engine *e)
{
    pthread_cond_signal(&e->wake);
}

/* ---- entity table -------------------------------------------------------- */

static int add_entity(sim_engine *e, const engine_entity *ent)
{
    if (e->n_entities == e->cap_entities) {
        size_t cap = e->cap_entities ? e->cap_entities * 2 : 64;
        engine_entity *grown = realloc(e->entities, cap * sizeof *grown);
        if (!grown)
            return DCGM_ST_MEMORY;
        e->entities = grown;
        e->cap_entities = cap;
    }
    e->entities[e->n_entities++] = *ent;
    return DCGM_ST_OK;
}

int engine_add_entity_locked(sim_engine *e, const engine_entity *ent)
{
    return add_entity(e, ent);
}

const engine_entity *engine_find_entity_locked(const sim_engine *e,
                                               dcgm_field_entity_group_t group,
                                               dcgm_field_eid_t id)
{
    if (group == DCGM_FE_LINK)
        return engine_link_entity_locked(e, id);
    for (size_t i = 0; i < e->n_entities; i++)
        if (e->entities[i].group == group && e->entities[i].id == id)
            return &e->entities[i];
    return NULL;
}

int engine_gpu_lost_locked(const sim_engine *e, unsigned int gpu, int64_t t_rel)
{
    if (gpu == ENGINE_NO_GPU)
        return 0;
    int64_t lost_at = vs_gpu_lost_at(e->src, gpu);
    return lost_at >= 0 && t_rel >= lost_at;
}

DcgmEntityStatus_t engine_entity_status_locked(const sim_engine *e, const engine_entity *ent,
                                               int64_t t_rel)
{
    if (ent->fake)
        return DcgmEntityStatusFake;
    if (engine_admin_hidden_locked(e, ent->group))
        return DcgmEntityStatusDetached;
    if (engine_gpu_lost_locked(e, ent->gpu, t_rel))
        return DcgmEntityStatusLost;
    /* paused telemetry disables the GPUs that were fine (DcgmCacheManager::PauseGpu) */
    if (ent->group == DCGM_FE_GPU && engine_admin_paused_locked(e))
        return DcgmEntityStatusDisabled;
    return DcgmEntityStatusOk;
}

static unsigned int count_group(const sim_engine *e, dcgm_field_entity_group_t group)
{
    unsigned int n = 0;
    for (size_t i = 0; i < e->n_entities; i++)
        n += e->entities[i].group == group;
    return n;
}

static int build_entities(sim_engine *e)
{
    unsigned int gpus = vs_gpu_count(e->src);
    if (gpus > DCGM_MAX_NUM_DEVICES)
        gpus = DCGM_MAX_NUM_DEVICES;
    for (unsigned int g = 0; g < gpus; g++) {
        engine_entity ent = { DCGM_FE_GPU, g, DCGM_FE_NONE, 0, 0, g, 0 };
        if (add_entity(e, &ent) != DCGM_ST_OK)
            return DCGM_ST_MEMORY;
    }
    for (unsigned int g = 0; g < gpus; g++) {
        unsigned int n = vs_mig_instances(e->src, g);
        if (n > DCGM_MAX_INSTANCES_PER_GPU)
            n = DCGM_MAX_INSTANCES_PER_GPU;
        for (unsigned int i = 0; i < n; i++) {
            dcgm_field_eid_t id = g * DCGM_MAX_INSTANCES_PER_GPU + i;
            engine_entity gi = { DCGM_FE_GPU_I, id, DCGM_FE_GPU, g, 0, g, i };
            engine_entity ci = { DCGM_FE_GPU_CI, id, DCGM_FE_GPU_I, id, 0, g, i };
            if (add_entity(e, &gi) != DCGM_ST_OK || add_entity(e, &ci) != DCGM_ST_OK)
                return DCGM_ST_MEMORY;
        }
    }
    int rc = engine_modules_add_entities(e); /* e.g. the host's CPUs, when monitored */
    if (rc == DCGM_ST_OK)
        rc = engine_levels_init(e, gpus); /* the scenario's switches and CPUs */
    if (rc != DCGM_ST_OK)
        return rc;
    engine_entity global = { DCGM_FE_NONE, 0, DCGM_FE_NONE, 0, 0, gpus ? 0 : ENGINE_NO_GPU, 0 };
    return add_entity(e, &global);
}

/* ---- cache-manager thread ----------------------------------------------- */

static void deadline_after_us(struct timespec *ts, int64_t delta_us)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    int64_t ns = ts->tv_nsec + (delta_us % 1000000) * 1000;
    ts->tv_sec += (time_t)(delta_us / 1000000) + (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

static void *cache_manager_main(void *arg)
{
    sim_engine *e = arg;
    pthread_mutex_lock(&e->lock);
    while (!e->stopping) {
        engine_run_pass_locked(e, engine_now_locked(e));
        int64_t due = engine_next_due_locked(e);
        int64_t wait_us = 1000000; /* re-check now and then even when idle */
        if (due != INT64_MAX) {
            int64_t until = due - engine_wall_us();
            wait_us = until < 0 ? 0 : (until < wait_us ? until : wait_us);
        }
        if (wait_us > 0) {
            struct timespec deadline;
            deadline_after_us(&deadline, wait_us);
            pthread_cond_timedwait(&e->wake, &e->lock, &deadline);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

static int init_sync(sim_engine *e)
{
    pthread_condattr_t attr;
    if (pthread_mutex_init(&e->lock, NULL) != 0)
        return DCGM_ST_GENERIC_ERROR;
    if (pthread_condattr_init(&attr) != 0) {
        pthread_mutex_destroy(&e->lock);
        return DCGM_ST_GENERIC_ERROR;
    }
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&e->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0) {
        pthread_mutex_destroy(&e->lock);
        return DCGM_ST_GENERIC_ERROR;
    }
    return DCGM_ST_OK;
}

static void free_state(sim_engine *e)
{
    engine_series_free_all_locked(e);
    engine_groups_free(e);
    engine_modules_free(e);
    free(e->entities);
    engine_links_free(e);
    value_source_free(e->src);
}

void engine_source_describe(const sim_engine *e, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    if (e && e->src && e->src->ops->describe)
        e->src->ops->describe(e->src->impl, buf, len);
}

int engine_core_create(const char *source, const char *spec, dcgmOperationMode_t mode,
                       const engine_module *const *modules, sim_engine **out, char *err,
                       size_t errlen)
{
    if (!out)
        return DCGM_ST_BADPARAM;
    *out = NULL;
    if (mode != DCGM_OPERATION_MODE_AUTO && mode != DCGM_OPERATION_MODE_MANUAL)
        return DCGM_ST_BADPARAM;
    sim_engine *e = calloc(1, sizeof *e);
    if (!e)
        return DCGM_ST_MEMORY;
    char scratch[8];
    if (!err || errlen == 0) {
        err = scratch;
        errlen = sizeof scratch;
    }
    err[0] = '\0';
    int rc = value_source_open(source, spec, &e->src, err, errlen);
    if (rc != DCGM_ST_OK || !e->src) {
        free(e);
        return rc != DCGM_ST_OK ? rc : DCGM_ST_INIT_ERROR;
    }
    e->mode = mode;
    e->modules = modules;
    rc = engine_modules_init(e);
    if (rc != DCGM_ST_OK) {
        free_state(e);
        free(e);
        return rc;
    }
    e->t0_us = engine_wall_us();
    e->last_now_us = e->t0_us;
    rc = build_entities(e);
    if (rc == DCGM_ST_OK)
        rc = engine_groups_init(e);
    if (rc == DCGM_ST_OK)
        rc = init_sync(e);
    if (rc == DCGM_ST_OK)
        engine_admin_init_locked(e); /* not shared yet: no lock to take */
    if (rc != DCGM_ST_OK) {
        free_state(e);
        free(e);
        return rc;
    }
    if (mode == DCGM_OPERATION_MODE_AUTO) {
        if (pthread_create(&e->thread, NULL, cache_manager_main, e) != 0) {
            engine_destroy(e);
            return DCGM_ST_INIT_ERROR;
        }
        e->thread_started = 1;
    }
    *out = e;
    return DCGM_ST_OK;
}

void engine_destroy(sim_engine *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stopping = 1;
    pthread_cond_broadcast(&e->wake);
    pthread_mutex_unlock(&e->lock);
    if (e->thread_started)
        pthread_join(e->thread, NULL);
    free_state(e);
    pthread_cond_destroy(&e->wake);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

void engine_release_owner(sim_engine *e, engine_owner owner)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    engine_groups_release_owner_locked(e, owner);
    engine_modules_release_owner_locked(e, owner);
    /* the watches health checks and policy registrations made for the owner */
    engine_owner health = owner | ENGINE_OWNER_HEALTH, policy = owner | ENGINE_OWNER_POLICY;
    for (size_t k = 0; k < e->n_series; k++) {
        engine_series *s = e->series_list[k];
        /* unwatching an owner that does not watch it would drop the samples
         * of a series that only holds injected values */
        int mine = 0, theirs = 0, policy_too = 0;
        for (size_t i = 0; i < s->n_watchers; i++) {
            mine |= s->watchers[i].owner == owner;
            theirs |= s->watchers[i].owner == health;
            policy_too |= s->watchers[i].owner == policy;
        }
        if (mine)
            engine_unwatch_one_locked(e, owner, s);
        if (theirs)
            engine_unwatch_one_locked(e, health, s);
        if (policy_too)
            engine_unwatch_one_locked(e, policy, s);
    }
    pthread_mutex_unlock(&e->lock);
}

int64_t engine_start_time_us(const sim_engine *e)
{
    return e ? e->t0_us : 0;
}

static dcgmSimFieldStats_t *stats_row(dcgmSimFieldStats_t *rows, int *n, unsigned short f)
{
    for (int i = 0; i < *n; i++)
        if (rows[i].fieldId == f)
            return &rows[i];
    dcgmSimFieldStats_t *row = &rows[(*n)++];
    memset(row, 0, sizeof *row);
    row->fieldId = f;
    return row;
}

int engine_field_stats(sim_engine *e, dcgmSimFieldStats_t *stats, int capacity, int *count)
{
    if (!e || !count || capacity < 0 || (!stats && capacity > 0))
        return DCGM_ST_BADPARAM;
    /* gathered in full first (few fields are ever watched), then copied out */
    dcgmSimFieldStats_t *rows = calloc(DCGM_FI_MAX_FIELDS, sizeof *rows);
    value_source_field_stats *src = calloc(DCGM_FI_MAX_FIELDS, sizeof *src);
    if (!rows || !src) {
        free(rows);
        free(src);
        return DCGM_ST_MEMORY;
    }
    int n = 0;
    pthread_mutex_lock(&e->lock);
    for (unsigned int f = 0; f < DCGM_FI_MAX_FIELDS; f++)
        if (e->field_samples[f]) {
            dcgmSimFieldStats_t *row = stats_row(rows, &n, (unsigned short)f);
            row->samples = (long long)e->field_samples[f];
            row->lateSamples = (long long)e->field_late[f];
        }
    int n_src = e->src->ops->field_stats(e->src->impl, src, DCGM_FI_MAX_FIELDS);
    pthread_mutex_unlock(&e->lock);
    if (n_src > DCGM_FI_MAX_FIELDS)
        n_src = DCGM_FI_MAX_FIELDS;
    for (int i = 0; i < n_src; i++) {
        if (src[i].field_id >= DCGM_FI_MAX_FIELDS)
            continue;
        dcgmSimFieldStats_t *row = stats_row(rows, &n, src[i].field_id);
        row->reads = (long long)src[i].reads;
        row->readNs = (long long)src[i].read_ns;
        row->lateReads = (long long)src[i].late;
        row->periodUs = (long long)src[i].period_us;
        row->corrections = (long long)src[i].corrections;
        row->lastCorrection = src[i].last_correction;
        row->maxAbsCorrection = src[i].max_abs_correction;
    }
    for (int i = 0; i < n && i < capacity; i++)
        stats[i] = rows[i];
    *count = n;
    free(rows);
    free(src);
    return DCGM_ST_OK;
}

/* ---- entity queries ------------------------------------------------------ */

int engine_gpu_ids(sim_engine *e, int only_supported, unsigned int *ids, int *count)
{
    if (!e || !ids || !count)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int64_t t_rel = engine_wall_us() - e->t0_us;
    int n = 0;
    for (size_t i = 0; i < e->n_entities && n < DCGM_MAX_NUM_DEVICES; i++) {
        const engine_entity *ent = &e->entities[i];
        if (ent->group != DCGM_FE_GPU)
            continue;
        DcgmEntityStatus_t status = engine_entity_status_locked(e, ent, t_rel);
        /* DCGM: DcgmCacheManager::GetGpuIds, active means Ok or Fake */
        if (only_supported && status != DcgmEntityStatusOk && status != DcgmEntityStatusFake)
            continue;
        ids[n++] = ent->id;
    }
    *count = n;
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}

int engine_gpu_status(sim_engine *e, unsigned int gpu, DcgmEntityStatus_t *status)
{
    if (!e || !status)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    const engine_entity *ent = engine_find_entity_locked(e, DCGM_FE_GPU, gpu);
    int rc = DCGM_ST_BADPARAM;
    if (ent) {
        *status = engine_entity_status_locked(e, ent, engine_wall_us() - e->t0_us);
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int engine_entity_group_entities(sim_engine *e, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t *entities, int *count, unsigned int flags)
{
    if (!e || !entities || !count || *count < 0 || (unsigned)group >= DCGM_FE_COUNT)
        return DCGM_ST_BADPARAM;
    if (group == DCGM_FE_NONE)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int64_t t_rel = engine_wall_us() - e->t0_us;
    int capacity = *count, n = 0;
    for (size_t i = 0; i < e->n_entities; i++) {
        const engine_entity *ent = &e->entities[i];
        if (ent->group != group)
            continue;
        if ((flags & DCGM_GEGE_FLAG_ONLY_SUPPORTED) &&
            engine_entity_status_locked(e, ent, t_rel) == DcgmEntityStatusLost)
            continue;
        if (n < capacity)
            entities[n] = ent->id;
        n++;
    }
    pthread_mutex_unlock(&e->lock);
    *count = n;
    return n > capacity ? DCGM_ST_INSUFFICIENT_SIZE : DCGM_ST_OK;
}

/* The lowest instance index of group still free on a GPU;
 * DCGM_MAX_INSTANCES_PER_GPU when every one is taken. */
static unsigned int free_instance_index(const sim_engine *e, dcgm_field_entity_group_t group,
                                        unsigned int gpu_id)
{
    unsigned int index = 0;
    while (index < DCGM_MAX_INSTANCES_PER_GPU &&
           engine_find_entity_locked(e, group, gpu_id * DCGM_MAX_INSTANCES_PER_GPU + index))
        index++;
    return index;
}

static int create_one_fake(sim_engine *e, dcgmMigHierarchyInfo_t *item)
{
    engine_entity ent = { item->entity.entityGroupId, 0, DCGM_FE_NONE, 0, 1, ENGINE_NO_GPU, 0 };
    switch (item->entity.entityGroupId) {
    case DCGM_FE_GPU: {
        unsigned int gpus = count_group(e, DCGM_FE_GPU);
        if (gpus >= DCGM_MAX_NUM_DEVICES)
            return DCGM_ST_MAX_LIMIT;
        ent.id = gpus;
        break;
    }
    case DCGM_FE_GPU_I: {
        const engine_entity *gpu = engine_find_entity_locked(e, DCGM_FE_GPU, item->parent.entityId);
        if (item->parent.entityGroupId != DCGM_FE_GPU || !gpu)
            return DCGM_ST_BADPARAM;
        unsigned int index = free_instance_index(e, DCGM_FE_GPU_I, gpu->id);
        if (index >= DCGM_MAX_INSTANCES_PER_GPU)
            return DCGM_ST_MAX_LIMIT;
        ent.id = gpu->id * DCGM_MAX_INSTANCES_PER_GPU + index;
        ent.parent_group = DCGM_FE_GPU;
        ent.parent_id = gpu->id;
        ent.gpu = gpu->fake ? ENGINE_NO_GPU : gpu->gpu;
        ent.index = index;
        break;
    }
    case DCGM_FE_GPU_CI: {
        const engine_entity *gi = engine_find_entity_locked(e, DCGM_FE_GPU_I, item->parent.entityId);
        if (item->parent.entityGroupId != DCGM_FE_GPU_I || !gi)
            return DCGM_ST_BADPARAM;
        unsigned int gpu_id = gi->parent_id;
        unsigned int index = free_instance_index(e, DCGM_FE_GPU_CI, gpu_id);
        if (index >= DCGM_MAX_INSTANCES_PER_GPU)
            return DCGM_ST_MAX_LIMIT;
        ent.id = gpu_id * DCGM_MAX_INSTANCES_PER_GPU + index;
        ent.parent_group = DCGM_FE_GPU_I;
        ent.parent_id = gi->id;
        ent.gpu = gi->gpu;
        ent.index = index;
        break;
    }
    case DCGM_FE_CPU:
        /* DCGM: DcgmCpuManager::AddFakeCpu, the next id after the CPUs there */
        ent.id = count_group(e, DCGM_FE_CPU);
        if (ent.id >= DCGM_MAX_NUM_CPUS)
            return DCGM_ST_INSUFFICIENT_RESOURCES;
        break;
    case DCGM_FE_CPU_CORE: {
        /* DcgmModuleSysmon::ProcessCreateFakeEntities, AddFakeCore: a core
         * belongs to a fake CPU */
        if (item->parent.entityGroupId != DCGM_FE_CPU)
            return DCGM_ST_BADPARAM;
        const engine_entity *cpu = engine_find_entity_locked(e, DCGM_FE_CPU, item->parent.entityId);
        ent.id = count_group(e, DCGM_FE_CPU_CORE);
        while (engine_find_entity_locked(e, DCGM_FE_CPU_CORE, ent.id))
            ent.id++;
        if (!cpu || !cpu->fake || ent.id >= DCGM_MAX_NUM_CPU_CORES)
            return DCGM_ST_INSUFFICIENT_RESOURCES;
        ent.parent_group = DCGM_FE_CPU;
        ent.parent_id = cpu->id;
        break;
    }
    case DCGM_FE_SWITCH:
        ent.id = count_group(e, item->entity.entityGroupId);
        ent.parent_group = item->parent.entityGroupId;
        ent.parent_id = item->parent.entityId;
        break;
    default:
        return DCGM_ST_NOT_SUPPORTED;
    }
    int rc = add_entity(e, &ent);
    if (rc == DCGM_ST_OK)
        item->entity.entityId = ent.id;
    if (rc == DCGM_ST_OK && ent.group == DCGM_FE_GPU) {
        /* a fake GPU starts with ECC mode reported as enabled, as DCGM stores
         * one such sample when it adds a fake GPU (DCGM: dcgmlib/src/
         * DcgmCacheManager.cpp, AddFakeGpu) */
        engine_series *s = engine_series_get_locked(e, DCGM_FE_GPU, ent.id,
                                                    300 /* ECC mode */, DCGM_FT_INT64);
        if (s) {
            int64_t now = engine_wall_us();
            engine_sample one = { 0 };
            one.num.i64 = 1;
            engine_series_append_locked(e, s, now, &one, now);
        }
    }
    return rc;
}

int engine_create_fake_entities(sim_engine *e, dcgmCreateFakeEntities_v2 *request)
{
    if (!e || !request)
        return DCGM_ST_BADPARAM;
    if (request->version != dcgmCreateFakeEntities_version2)
        return DCGM_ST_VER_MISMATCH;
    if (request->numToCreate > DCGM_MAX_HIERARCHY_INFO)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK;
    for (unsigned int i = 0; i < request->numToCreate && rc == DCGM_ST_OK; i++)
        rc = create_one_fake(e, &request->entityList[i]);
    pthread_mutex_unlock(&e->lock);
    return rc;
}

static void hierarchy_row(sim_engine *e, const engine_entity *ent, dcgmMigHierarchyInfo_v2 *row)
{
    memset(row, 0, sizeof *row);
    row->entity.entityGroupId = ent->group;
    row->entity.entityId = ent->id;
    row->parent.entityGroupId = ent->parent_group;
    row->parent.entityId = ent->parent_id;
    const engine_entity *gpu = ent;
    if (ent->group == DCGM_FE_GPU_CI)
        gpu = engine_find_entity_locked(e, DCGM_FE_GPU_I, ent->parent_id);
    unsigned int gpu_id = gpu ? gpu->parent_id : 0;
    row->info.nvmlGpuIndex = gpu_id;
    row->info.nvmlInstanceId = gpu ? gpu->index : 0;
    row->info.nvmlComputeInstanceId = ent->group == DCGM_FE_GPU_I ? 0xffffffffu : 0;
    const sim_mig_profile *profile = engine_instance_mig_profile(e, ent);
    unsigned int n = ent->fake ? 1 : vs_mig_instances(e->src, ent->gpu);
    unsigned int slices = profile ? profile->compute_slices : n >= 1 && n <= 7 ? 7 / n : 1;
    row->info.nvmlMigProfileId = profile ? profile->dcgm_profile : slices;
    row->info.nvmlProfileSlices = slices;
    if (ent->gpu != ENGINE_NO_GPU) {
        sim_value v;
        if (vs_sample(e->src, ent->gpu, 54, 0, &v) == DCGM_ST_OK && v.kind == SIM_VALUE_OK)
            snprintf(row->info.gpuUuid, sizeof row->info.gpuUuid, "%.127s", v.str);
    }
}

int engine_mig_hierarchy(sim_engine *e, dcgmMigHierarchy_v2 *h)
{
    if (!e || !h)
        return DCGM_ST_BADPARAM;
    if (h->version != dcgmMigHierarchy_version2)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    unsigned int n = 0;
    for (size_t i = 0; i < e->n_entities; i++) {
        const engine_entity *gi = &e->entities[i];
        if (gi->group != DCGM_FE_GPU_I)
            continue;
        if (n < DCGM_MAX_HIERARCHY_INFO)
            hierarchy_row(e, gi, &h->entityList[n++]);
        for (size_t j = 0; j < e->n_entities; j++) {
            const engine_entity *ci = &e->entities[j];
            if (ci->group == DCGM_FE_GPU_CI && ci->parent_id == gi->id && n < DCGM_MAX_HIERARCHY_INFO)
                hierarchy_row(e, ci, &h->entityList[n++]);
        }
    }
    h->count = n;
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}
