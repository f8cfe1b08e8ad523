/*
 * engine_admin.c -- the engine's administration as DCGM's host engine does
 * it: the module table's requests (the denylist, statuses), pausing
 * telemetry for a diagnostic, detaching and re-attaching the driver, and
 * introspection of the process that runs the engine.  The table itself, and
 * what a pause or a detached driver means for sampling, are the core's
 * (core/engine_modules.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "../../../dcgm_field_ids.h"

/* bind/unbind states of DCGM_FI_SYSTEM_GPU_BIND_EVENT (dcgmBindUnbindEventState_t) */
#define BIND_EVENT_REINITIALIZING 1
#define BIND_EVENT_REINITIALIZED 2

int engine_module_statuses(sim_engine *e, void *statuses)
{
    if (!e || !statuses)
        return DCGM_ST_BADPARAM;
    unsigned char *p = statuses;
    unsigned int version;
    memcpy(&version, p, sizeof version);
    if (version != ENGINE_MODULE_STATUSES_VERSION1)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    unsigned int n = ENGINE_MODULE_COUNT;
    memcpy(p + 4, &n, sizeof n);
    for (unsigned int i = 0; i < n; i++) {
        unsigned int pair[2] = { i, (unsigned int)e->admin.module_status[i] };
        memcpy(p + 8 + 8 * i, pair, sizeof pair);
    }
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}

/* DCGM: DcgmHostEngineHandler::HelperModuleDenylist. */
int engine_module_denylist(sim_engine *e, unsigned int module)
{
    if (!e || module == ENGINE_MODULE_CORE || module >= ENGINE_MODULE_COUNT)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = DCGM_ST_OK;
    int *status = &e->admin.module_status[module];
    if (*status == ENGINE_MODULE_LOADED || *status == ENGINE_MODULE_PAUSED) {
        ENGINE_LOG_WARNING("Module %u is loaded: it cannot go on the denylist", module);
        rc = DCGM_ST_IN_USE;
    } else if (*status != ENGINE_MODULE_DENYLISTED) {
        *status = ENGINE_MODULE_DENYLISTED;
        ENGINE_LOG_INFO("Module %u is on the denylist now", module);
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* DCGM: DcgmHostEngineHandler::Pause / Resume: every loaded module, the core
 * last when pausing and first when resuming.  The core's pause is the cache
 * manager's (DcgmCacheManager::Pause): its GPUs are Disabled, so neither
 * sampled nor counted as supported, until it resumes. */
/* The watches of the GPUs and their MIG instances, due again at the next pass. */
static void gpu_watches_due_now_locked(sim_engine *e)
{
    for (size_t i = 0; i < e->n_series; i++) {
        engine_series *s = e->series_list[i];
        if (s->group == DCGM_FE_GPU || s->group == DCGM_FE_GPU_I || s->group == DCGM_FE_GPU_CI)
            s->last_sampled_us = 0;
    }
}

int engine_pause_resume(sim_engine *e, int pause)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int from = pause ? ENGINE_MODULE_LOADED : ENGINE_MODULE_PAUSED;
    int to = pause ? ENGINE_MODULE_PAUSED : ENGINE_MODULE_LOADED;
    for (int i = 0; i < ENGINE_MODULE_COUNT; i++) {
        int *status = &e->admin.module_status[i];
        if (*status == from || (pause && *status == ENGINE_MODULE_RELOADABLE))
            *status = to;
    }
    if (!pause)
        gpu_watches_due_now_locked(e);
    engine_kick_locked(e);
    ENGINE_LOG_INFO("Telemetry %s", pause ? "paused for a diagnostic" : "resumed");
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}

/* DCGM: DcgmCacheManager::RecordBindUnbindEvent, a value of the global field
 * whether anyone watches it or not. */
static void record_bind_event_locked(sim_engine *e, int64_t state)
{
    const dcgm_field_meta_t *meta = sim_field_meta(DCGM_FI_SYSTEM_GPU_BIND_EVENT);
    if (!meta)
        return;
    dcgm_field_entity_group_t group = DCGM_FE_NONE;
    dcgm_field_eid_t entity = 0;
    engine_storage_key(meta, &group, &entity);
    engine_series *s = engine_series_get_locked(e, group, entity, DCGM_FI_SYSTEM_GPU_BIND_EVENT, DCGM_FT_INT64);
    if (!s)
        return;
    engine_sample sample = { 0 };
    sample.num.i64 = state;
    int64_t now = engine_wall_us();
    /* each event its own sample: never the stamp of the one before */
    int64_t ts = now;
    if (s->ring.count > 0 && engine_ring_at(&s->ring, s->ring.count - 1)->ts >= ts)
        ts = engine_ring_at(&s->ring, s->ring.count - 1)->ts + 1;
    engine_series_append_locked(e, s, ts, &sample, now);
}

/* DCGM: DcgmNvmlSystemEventThread::DetachDriverImpl / AttachDriverImpl.
 * Detaching marks every GPU detached (they keep their ids, the cache keeps
 * what it had, watches stay registered but nothing of a GPU is sampled);
 * attaching brings them back and the watches resume.  Either is a no-op in
 * the state it would reach, as DCGM's are. */
int engine_driver_attach(sim_engine *e, int attach)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    if (!attach) {
        record_bind_event_locked(e, BIND_EVENT_REINITIALIZING);
        if (!e->admin.gpus_detached) {
            e->admin.gpus_detached = 1;
            ENGINE_LOG_INFO("Detached the driver");
        }
    } else if (e->admin.gpus_detached) {
        e->admin.gpus_detached = 0;
        gpu_watches_due_now_locked(e);
        record_bind_event_locked(e, BIND_EVENT_REINITIALIZED);
        engine_kick_locked(e);
        ENGINE_LOG_INFO("Attached the driver");
    }
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}

/* ---- introspection (DCGM: modules/introspect/DcgmMetadataMgr.cpp) -------- */

/* resident plus swapped kB of this process */
static long long process_kb(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return 0;
    char line[256];
    long long rss = 0, swap = 0, v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %lld", &v) == 1)
            rss = v;
        else if (sscanf(line, "VmSwap: %lld", &v) == 1)
            swap = v;
    }
    fclose(f);
    return rss + swap;
}

/* user and system ticks of this process */
static void process_ticks(long long *user, long long *system)
{
    *user = *system = 0;
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f)
        return;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the fields after the command name, which may hold spaces */
    const char *p = strrchr(buf, ')');
    if (!p)
        return;
    unsigned long long ut = 0, st = 0;
    /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2) {
        *user = (long long)ut;
        *system = (long long)st;
    }
}

/* ticks of every CPU since boot (the "cpu" line of /proc/stat) */
static long long system_ticks(void)
{
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return 0;
    char line[512];
    long long total = 0;
    if (fgets(line, sizeof line, f) && strncmp(line, "cpu ", 4) == 0) {
        const char *p = line + 4;
        char *end;
        for (;;) {
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p)
                break;
            total += (long long)v;
            p = end;
        }
    }
    fclose(f);
    return total;
}

static int cpu_util_locked(sim_engine *e, engine_introspect *out)
{
    long long total = system_ticks(), user, system;
    process_ticks(&user, &system);
    if (total == 0)
        return DCGM_ST_GENERIC_ERROR;
    if (e->admin.cpu_prev_total == 0) {
        e->admin.cpu_prev_total = total;
        e->admin.cpu_prev_user = user;
        e->admin.cpu_prev_system = system;
        return DCGM_ST_NO_DATA;
    }
    double d_total = (double)(total - e->admin.cpu_prev_total);
    double d_user = (double)(user - e->admin.cpu_prev_user);
    double d_system = (double)(system - e->admin.cpu_prev_system);
    e->admin.cpu_prev_total = total;
    e->admin.cpu_prev_user = user;
    e->admin.cpu_prev_system = system;
    if (d_total <= 0) {
        out->user = out->kernel = out->total = 0;
    } else {
        out->user = d_user / d_total;
        out->kernel = d_system / d_total;
        out->total = out->user + out->kernel;
    }
    return DCGM_ST_OK;
}

int engine_introspect_read(sim_engine *e, int cpu, int wait, engine_introspect *out)
{
    if (!e || !out)
        return DCGM_ST_BADPARAM;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&e->lock);
    int rc = engine_module_use_locked(e, ENGINE_MODULE_INTROSPECT);
    if (rc == DCGM_ST_OK) {
        if (!cpu)
            out->bytes_used = process_kb() * 1024;
        else
            rc = cpu_util_locked(e, out);
    }
    pthread_mutex_unlock(&e->lock);
    if (rc == DCGM_ST_NO_DATA && wait) {
        /* the first reading has nothing to compare with: let some CPU time
         * pass, then compare (DcgmMetadataManager::GetCpuUtilization) */
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&e->lock);
        rc = cpu_util_locked(e, out);
        pthread_mutex_unlock(&e->lock);
    }
    return rc;
}

/* DCGM: DcgmModuleDiag::ProcessMessage (a paused module refuses to run) and
 * DcgmDiagManager (an empty group is refused before anything runs). */
int engine_diag_precheck(sim_engine *e, dcgmGpuGrp_t group)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    int rc = engine_module_use_locked(e, ENGINE_MODULE_DIAG);
    if (rc == DCGM_ST_OK && e->admin.module_status[ENGINE_MODULE_DIAG] == ENGINE_MODULE_PAUSED)
        rc = DCGM_ST_PAUSED;
    if (rc == DCGM_ST_OK && group != DCGM_GROUP_NULL) {
        dcgmGroupEntityPair_t *entities = calloc(DCGM_GROUP_MAX_ENTITIES_V2, sizeof *entities);
        unsigned int count = 0;
        if (!entities)
            rc = DCGM_ST_MEMORY;
        else
            rc = engine_group_entities_locked(e, group, entities, &count);
        if (rc == DCGM_ST_OK && count == 0)
            rc = DCGM_ST_GROUP_IS_EMPTY;
        free(entities);
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* DCGM: modules/core/DcgmModuleCore.cpp, ProcessSetLoggingSeverity: a
 * severity out of range is BADPARAM for the two loggers it knows; any other
 * logger id is accepted and changes nothing. */
int engine_set_logging_severity(sim_engine *e, int logger, int severity)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    if (logger != 0 && logger != 1)
        return DCGM_ST_OK;
    if (severity < DcgmLoggingSeverityNone || severity > DcgmLoggingSeverityVerbose)
        return DCGM_ST_BADPARAM;
    if (logger == 0)
        engine_log_set_severity((DcgmLoggingSeverity_t)severity);
    ENGINE_LOG_INFO("Severity of logger %d is %s (%d) now", logger,
                    engine_log_severity_name((DcgmLoggingSeverity_t)severity), severity);
    return DCGM_ST_OK;
}
