/*
 * source_nvml.c -- the NVML value source: GPUs and values from the driver's
 * libnvidia-ml.so.1, opened with dlopen (never linked) from
 * $DCGM_ENGINE_NVML_LIB, else by the dynamic loader's search for
 * "libnvidia-ml.so.1".
 *
 * This file opens the library, finds the GPUs and holds the ops table; the
 * field map, the slow reads, events and GPM live beside it (source_nvml.h).
 * NVML errors become DCGM's blanks: NOT_SUPPORTED, NO_PERMISSION ->
 * NOT_PERMISSIONED, NOT_FOUND; GPU_IS_LOST marks that GPU lost from then on
 * (entity status Lost), other GPUs untouched; anything else is a plain BLANK.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "source_nvml.h"

int64_t nvml_src_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t nvml_src_mono_us(void) { return nvml_src_mono_ns() / 1000; }

void nvml_src_mark_lost(nvml_source *s, unsigned int gpu, int64_t t_rel)
{
    pthread_mutex_lock(&s->mu);
    if (gpu < s->count && s->gpus[gpu].lost_at < 0)
        s->gpus[gpu].lost_at = t_rel < 0 ? 0 : t_rel;
    pthread_mutex_unlock(&s->mu);
}

void nvml_src_put_error(nvml_source *s, unsigned int gpu, nvmlReturn_t r, int64_t t_rel,
                        sim_value *out)
{
    switch (r) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND: out->kind = SIM_VALUE_NOT_SUPPORTED; break;
    case NVML_ERROR_NO_PERMISSION: out->kind = SIM_VALUE_NOT_PERMISSIONED; break;
    case NVML_ERROR_NOT_FOUND: out->kind = SIM_VALUE_NOT_FOUND; break;
    case NVML_ERROR_GPU_IS_LOST:
        nvml_src_mark_lost(s, gpu, t_rel);
        out->kind = SIM_VALUE_BLANK;
        break;
    default: out->kind = SIM_VALUE_BLANK; break;
    }
}

void nvml_src_count_read(nvml_source *s, unsigned short f, uint64_t ns)
{
    if (f >= NVML_SRC_MAX_FIELD)
        return;
    pthread_mutex_lock(&s->mu);
    s->stats[f].reads++;
    s->stats[f].read_ns += ns;
    pthread_mutex_unlock(&s->mu);
}

static int64_t lost_at(nvml_source *s, unsigned int gpu)
{
    pthread_mutex_lock(&s->mu);
    int64_t at = gpu < s->count ? s->gpus[gpu].lost_at : -1;
    pthread_mutex_unlock(&s->mu);
    return at;
}

static int nvml_sample(void *impl, unsigned int gpu, unsigned short f, int64_t t_rel,
                       sim_value *out)
{
    nvml_source *s = impl;
    if (gpu >= s->count)
        return DCGM_ST_BADPARAM;
    out->kind = SIM_VALUE_BLANK;
    if (!nvml_fields_is_mapped(s, f)) {
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        return DCGM_ST_OK;
    }
    /* a lost GPU answers nothing but the system-wide driver version */
    if (f != 1 && f != 2 && lost_at(s, gpu) >= 0)
        return DCGM_ST_OK;
    if (nvml_slow_is_slow(f))
        return nvml_slow_sample(s, gpu, f, t_rel, out);
    if (nvml_gpm_is_field(f))
        return nvml_gpm_sample(s, gpu, f, t_rel, out);
    return nvml_fields_sample(s, gpu, f, t_rel, out);
}

static unsigned int nvml_gpu_count(void *impl) { return ((nvml_source *)impl)->count; }

static int nvml_field_supported(void *impl, unsigned int gpu, unsigned short f)
{
    nvml_source *s = impl;
    if (gpu >= s->count || !nvml_fields_is_mapped(s, f))
        return 0;
    /* the profiling fields exist only where the GPU has GPM (Hopper and later) */
    return !nvml_gpm_is_field(f) || nvml_gpm_gpu_supported(s, gpu);
}

static int nvml_is_event_field(void *impl, unsigned short f)
{
    (void)impl;
    return nvml_events_is_event_field(f);
}

static int nvml_events(void *impl, unsigned int gpu, unsigned short f, int64_t from, int64_t to,
                       sim_event *out, int max)
{
    return nvml_events_read(impl, gpu, f, from, to, out, max);
}

static int64_t nvml_gpu_lost_at(void *impl, unsigned int gpu) { return lost_at(impl, gpu); }

static unsigned int nvml_mig_instances(void *impl, unsigned int gpu) { return 0; }

/* Any error (a link the part lacks, an older driver) reads as no link, as
 * DCGM's UpdateNvLinkLinkStateFromNvml (DcgmTopology.cpp) treats it. */
static int nvml_nvlink_state(void *impl, unsigned int gpu, unsigned int link)
{
    nvml_source *s = impl;
    if (gpu >= s->count || !s->api.nvlink_state || lost_at(s, gpu) >= 0)
        return VS_LINK_NONE;
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    if (s->api.nvlink_state(s->gpus[gpu].dev, link, &active) != NVML_SUCCESS)
        return VS_LINK_NONE;
    return active == NVML_FEATURE_ENABLED ? VS_LINK_UP : VS_LINK_DOWN;
}

static void nvml_describe(void *impl, char *buf, size_t len)
{
    snprintf(buf, len, "nvml %s", ((nvml_source *)impl)->path);
}

static int nvml_stats(void *impl, value_source_field_stats *out, int max)
{
    nvml_source *s = impl;
    double last = 0, max_abs = 0;
    uint64_t corrections = 0;
    nvml_slow_energy_error(s, &last, &max_abs, &corrections);
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (unsigned int f = 0; f < NVML_SRC_MAX_FIELD; f++) {
        const nvml_field_stats *st = &s->stats[f];
        if (st->reads == 0 && st->period_us == 0)
            continue;
        if (n < max) {
            out[n] = (value_source_field_stats){ .field_id = (unsigned short)f, .reads = st->reads,
                                                 .read_ns = st->read_ns, .late = st->late,
                                                 .period_us = st->period_us };
            if (nvml_slow_is_estimated(f)) {
                out[n].corrections = corrections;
                out[n].last_correction = last;
                out[n].max_abs_correction = max_abs;
            }
        }
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void nvml_notes(void *impl, char *buf, size_t len)
{
    nvml_source *s = impl;
    buf[0] = '\0';
    if (s->missing[0])
        snprintf(buf, len, "%s lacks %s (a driver older than this engine knows): the fields "
                 "that need them are NOT_SUPPORTED", s->path, s->missing);
}

static void nvml_free(void *impl)
{
    nvml_source *s = impl;
    if (!s)
        return;
    nvml_slow_stop(s);
    nvml_events_free(s);
    nvml_gpm_free(s);
    if (s->initialized && s->api.shutdown)
        s->api.shutdown();
    if (s->lib)
        dlclose(s->lib);
    for (unsigned int i = 0; i < NVML_SRC_MAX_GPUS; i++)
        free(s->gpus[i].cache);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static const value_source_ops nvml_ops = {
    .kind = "nvml",
    .gpu_count = nvml_gpu_count,
    .sample = nvml_sample,
    .field_supported = nvml_field_supported,
    .is_event_field = nvml_is_event_field,
    .events = nvml_events,
    .gpu_lost_at = nvml_gpu_lost_at,
    .mig_instances = nvml_mig_instances,
    .nvlink_state = nvml_nvlink_state,
    .describe = nvml_describe,
    .field_stats = nvml_stats,
    .notes = nvml_notes,
    .free = nvml_free,
};

/* the path the loader really opened, for the start-up summary */
static void resolve_path(nvml_source *s, const char *asked)
{
    snprintf(s->path, sizeof s->path, "%s", asked);
    void *init = dlsym(s->lib, "nvmlInit_v2");
    Dl_info info;
    if (init && dladdr(init, &info) && info.dli_fname && info.dli_fname[0]) {
        char *real = realpath(info.dli_fname, NULL);
        snprintf(s->path, sizeof s->path, "%s", real ? real : info.dli_fname);
        free(real);
    }
}

static void note_missing(nvml_source *s, const char *symbol)
{
    size_t used = strlen(s->missing);
    snprintf(s->missing + used, sizeof s->missing - used, "%s%s", used ? ", " : "", symbol);
}

/* Look every entry point up; returns the first required one that is missing. */
static const char *load_symbols(nvml_source *s)
{
    const char *missing_required = NULL;
#define NVML_SRC_LOAD_REQUIRED(member, ret, args, symbol)                                  \
    *(void **)&s->api.member = dlsym(s->lib, symbol);                                       \
    if (!s->api.member && !missing_required)                                                \
        missing_required = symbol;
#define NVML_SRC_LOAD_OPTIONAL(member, ret, args, symbol)                                  \
    *(void **)&s->api.member = dlsym(s->lib, symbol);                                       \
    if (!s->api.member)                                                                     \
        note_missing(s, symbol);
    NVML_SRC_REQUIRED(NVML_SRC_LOAD_REQUIRED)
    NVML_SRC_OPTIONAL(NVML_SRC_LOAD_OPTIONAL)
#undef NVML_SRC_LOAD_REQUIRED
#undef NVML_SRC_LOAD_OPTIONAL
    return missing_required;
}

static int fail(nvml_source *s, int rc)
{
    nvml_free(s);
    return rc;
}

int value_source_nvml_open(value_source *src, char *err, size_t errlen)
{
    nvml_source *s = calloc(1, sizeof *s);
    if (!s)
        return DCGM_ST_MEMORY;
    pthread_mutex_init(&s->mu, NULL);
    /* the reader waits on CLOCK_MONOTONIC deadlines: the condition must use that clock */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    s->t0_mono_us = nvml_src_mono_us();
    const char *env = getenv(VALUE_SOURCE_NVML_LIB_ENV);
    const char *path = env && env[0] ? env : VALUE_SOURCE_NVML_SONAME;
    s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!s->lib) {
        if (env && env[0])
            snprintf(err, errlen, "cannot open the NVML library %s=%s (%s); point %s at "
                     "libnvidia-ml.so.1, or run without NVML", VALUE_SOURCE_NVML_LIB_ENV, env,
                     dlerror(), VALUE_SOURCE_NVML_LIB_ENV);
        else
            snprintf(err, errlen, "no %s found by the dynamic loader (LD_LIBRARY_PATH, ld.so.cache, "
                     "system paths); install the NVIDIA driver, set %s to its path, or run "
                     "without NVML", VALUE_SOURCE_NVML_SONAME, VALUE_SOURCE_NVML_LIB_ENV);
        return fail(s, DCGM_ST_LIBRARY_NOT_FOUND);
    }
    resolve_path(s, path);
    const char *missing = load_symbols(s);
    if (missing) {
        snprintf(err, errlen, "%s lacks %s: not an NVML library this engine can use", s->path,
                 missing);
        return fail(s, DCGM_ST_LIBRARY_NOT_FOUND);
    }
    nvmlReturn_t r = s->api.init();
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "%s: nvmlInit_v2 failed with NVML error %d%s", s->path, (int)r,
                 r == NVML_ERROR_DRIVER_NOT_LOADED ? " (the NVIDIA kernel driver is not loaded)" : "");
        return fail(s, DCGM_ST_INIT_ERROR);
    }
    s->initialized = 1;
    unsigned int n = 0;
    if ((r = s->api.count(&n)) != NVML_SUCCESS) {
        snprintf(err, errlen, "%s: nvmlDeviceGetCount_v2 failed with NVML error %d", s->path, (int)r);
        return fail(s, DCGM_ST_INIT_ERROR);
    }
    if (n > NVML_SRC_MAX_GPUS)
        n = NVML_SRC_MAX_GPUS;
    for (unsigned int i = 0; i < n; i++) {
        nvml_gpu *g = &s->gpus[i];
        g->lost_at = -1;
        g->util_memo.t_rel = g->memory_memo.t_rel = g->gpm.memo.t_rel = -1;
        r = s->api.handle(i, &g->dev);
        if (r == NVML_ERROR_GPU_IS_LOST) {
            g->lost_at = 0;     /* lost already: its index stays, it is Lost */
        } else if (r != NVML_SUCCESS) {
            snprintf(err, errlen, "%s: no handle for GPU %u (NVML error %d)", s->path, i, (int)r);
            return fail(s, DCGM_ST_INIT_ERROR);
        }
    }
    s->count = n;
    int rc = nvml_slow_start(s, err, errlen);
    if (rc != DCGM_ST_OK)
        return fail(s, rc);
    /* one warning for an older driver: what it lacks, and so which fields are NOT_SUPPORTED */
    if (s->missing[0]) {
        char fields[512];
        nvml_fields_describe_missing(s, fields, sizeof fields);
        fprintf(stderr, "libdcgm (engine): %s lacks %s (a driver older than this engine knows); "
                "NOT_SUPPORTED for that reason: fields %s\n", s->path, s->missing,
                fields[0] ? fields : "none");
    }
    src->ops = &nvml_ops;
    src->impl = s;
    return DCGM_ST_OK;
}
