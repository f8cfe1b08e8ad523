/*
 * loader.c -- dlopen a libdcgm.so.4 at run time and forward the DCGM API to it.
 *
 * The function pointers are written only by dcgmc_load / dcgmc_unload, under
 * a mutex, and read without it by the forwarders (which run with the GIL
 * released); atomic loads and stores keep those reads free of data races.
 */
#define _GNU_SOURCE
#include "loader.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t dcgmc_lock = PTHREAD_MUTEX_INITIALIZER;
static void *dcgmc_library;
static char dcgmc_path[PATH_MAX];

/* One pointer per row, typed from the row's own prototype.  Inside a forwarder a
 * parameter may shadow the function's name (dcgmInjectFieldValue does), so the
 * forwarders take their types from these pointers instead. */
#define DCGMC_POINTER(ret, name, params, args, missing) static __typeof__(&name) dcgmc_ptr_##name;
DCGM_FUNCTION_LIST(DCGMC_POINTER)
#undef DCGMC_POINTER

/* Calls made into the library through the forwarders, so tests can show which
 * paths never call DCGM (a scrape must not). */
static unsigned long long dcgmc_calls;

#define DCGMC_FORWARDER(ret, name, params, args, missing)                              \
    ret dcgmc_fwd_##name params                                                         \
    {                                                                                   \
        __typeof__(dcgmc_ptr_##name) fn = __atomic_load_n(&dcgmc_ptr_##name, __ATOMIC_ACQUIRE); \
        if (fn == NULL)                                                                 \
            return missing;                                                             \
        __atomic_fetch_add(&dcgmc_calls, 1, __ATOMIC_RELAXED);                         \
        return fn args;                                                                 \
    }
DCGM_FUNCTION_LIST(DCGMC_FORWARDER)
#undef DCGMC_FORWARDER

unsigned long long dcgmc_call_count(void)
{
    return __atomic_load_n(&dcgmc_calls, __ATOMIC_RELAXED);
}

static void dcgmc_set_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void dcgmc_set_error(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void dcgmc_resolve_all(void *library)
{
/* POSIX guarantees dlsym's object pointer converts to a function pointer. */
#define DCGMC_RESOLVE(ret, name, params, args, missing) \
    __atomic_store_n(&dcgmc_ptr_##name, (__typeof__(dcgmc_ptr_##name))dlsym(library, #name), \
                     __ATOMIC_RELEASE);
    DCGM_FUNCTION_LIST(DCGMC_RESOLVE)
#undef DCGMC_RESOLVE
}

static void dcgmc_clear_all(void)
{
#define DCGMC_CLEAR(ret, name, params, args, missing) \
    __atomic_store_n(&dcgmc_ptr_##name, NULL, __ATOMIC_RELEASE);
    DCGM_FUNCTION_LIST(DCGMC_CLEAR)
#undef DCGMC_CLEAR
}

/* The file the dynamic linker actually mapped, so a soname search reports where it looked. */
static void dcgmc_remember_path(void *library, const char *requested)
{
    struct link_map *map = NULL;
    const char *name = requested;
    if (dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL &&
        map->l_name[0] != '\0')
        name = map->l_name;
    char resolved[PATH_MAX];
    if (realpath(name, resolved) != NULL)
        name = resolved;
    snprintf(dcgmc_path, sizeof dcgmc_path, "%s", name);
}

static int dcgmc_load_locked(const char *path, char *err, size_t errlen)
{
    if (dcgmc_library != NULL) {
        /* RTLD_NOLOAD finds the same object under another name without loading anything new. */
        void *same = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (same != NULL)
            dlclose(same);
        if (same == dcgmc_library)
            return DCGM_ST_OK;
        dcgmc_set_error(err, errlen, "%s is already loaded; one libdcgm per process", dcgmc_path);
        return DCGM_ST_IN_USE;
    }
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        dcgmc_set_error(err, errlen, "%s", why != NULL ? why : "dlopen failed");
        return DCGM_ST_LIBRARY_NOT_FOUND;
    }
    dcgmc_library = library;
    dcgmc_remember_path(library, path);
    dcgmc_resolve_all(library);
    return DCGM_ST_OK;
}

int dcgmc_load(const char *path, char *err, size_t errlen)
{
    dcgmc_set_error(err, errlen, "%s", "");
    if (path == NULL || path[0] == '\0') {
        dcgmc_set_error(err, errlen, "no library path given");
        return DCGM_ST_BADPARAM;
    }
    pthread_mutex_lock(&dcgmc_lock);
    int result = dcgmc_load_locked(path, err, errlen);
    pthread_mutex_unlock(&dcgmc_lock);
    return result;
}

int dcgmc_probe_library(const char *path, char *err, size_t errlen)
{
    dcgmc_set_error(err, errlen, "%s", "");
    if (path == NULL || path[0] == '\0') {
        dcgmc_set_error(err, errlen, "no library path given");
        return -1;
    }
    void *library = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        dcgmc_set_error(err, errlen, "%s", why != NULL ? why : "dlopen failed");
        return -1;
    }
    dlclose(library);
    return 0;
}

void dcgmc_unload(void)
{
    pthread_mutex_lock(&dcgmc_lock);
    if (dcgmc_library != NULL) {
        /* The library may run threads of its own; they must stop before its code is unmapped. */
        __typeof__(dcgmc_ptr_dcgmShutdown) shutdown = __atomic_load_n(&dcgmc_ptr_dcgmShutdown, __ATOMIC_ACQUIRE);
        if (shutdown != NULL)
            shutdown();
        dcgmc_clear_all();
        dlclose(dcgmc_library);
        dcgmc_library = NULL;
        dcgmc_path[0] = '\0';
    }
    pthread_mutex_unlock(&dcgmc_lock);
}

int dcgmc_loaded(void)
{
    pthread_mutex_lock(&dcgmc_lock);
    int loaded = dcgmc_library != NULL;
    pthread_mutex_unlock(&dcgmc_lock);
    return loaded;
}

int dcgmc_has(const char *name)
{
    if (name == NULL)
        return 0;
#define DCGMC_HAS(ret, row, params, args, missing) \
    if (strcmp(name, #row) == 0)                    \
        return __atomic_load_n(&dcgmc_ptr_##row, __ATOMIC_ACQUIRE) != NULL;
    DCGM_FUNCTION_LIST(DCGMC_HAS)
#undef DCGMC_HAS
    return 0;
}

const char *dcgmc_loaded_path(void)
{
    pthread_mutex_lock(&dcgmc_lock);
    const char *path = dcgmc_library != NULL ? dcgmc_path : NULL;
    pthread_mutex_unlock(&dcgmc_lock);
    return path;
}

/* ---- gathering field values without a Python callback per value -------- */

int dcgmc_grow_block(void *items, size_t *capacity, size_t needed, size_t item_size,
                     size_t first_capacity, void **out)
{
    *out = items;
    if (needed <= *capacity)
        return 1;
    size_t wanted = *capacity ? *capacity : first_capacity;
    while (wanted < needed) {
        if (wanted > SIZE_MAX / 2 / item_size)
            return 0;
        wanted *= 2;
    }
    void *grown = realloc(items, wanted * item_size);
    if (grown == NULL)
        return 0;
    *out = grown;
    *capacity = wanted;
    return 1;
}

static int dcgmc_reserve_one(dcgmc_records *records)
{
    void *items;
    if (!dcgmc_grow_block(records->items, &records->capacity, records->count + 1,
                          sizeof *records->items, 64, &items))
        return 0;
    records->items = items;
    return 1;
}

static void dcgmc_flatten(dcgmc_record *record, dcgm_field_entity_group_t group,
                          dcgm_field_eid_t entity, const dcgmFieldValue_v1 *value)
{
    record->entityGroupId = (int)group;
    record->entityId = entity;
    record->fieldId = value->fieldId;
    record->fieldType = value->fieldType;
    record->status = value->status;
    record->ts = value->ts;
    record->i64 = value->value.i64;
    record->dbl = value->value.dbl;
    if (value->fieldType == DCGM_FT_STRING) {
        size_t length = strnlen(value->value.str, sizeof record->str - 1);
        memcpy(record->str, value->value.str, length);
        record->str[length] = '\0';
    } else if (value->fieldType == DCGM_FT_BINARY) {
        memcpy(record->str, value->value.blob, sizeof record->str);
    } else {
        record->str[0] = '\0';
    }
}

/* Non-zero stops DCGM's enumeration, which then leaves the cursor where it was. */
static int dcgmc_append(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                        dcgmFieldValue_v1 *values, int numValues, void *userData)
{
    dcgmc_records *records = userData;
    if (records == NULL || values == NULL)
        return 0;
    for (int i = 0; i < numValues; i++) {
        if (!dcgmc_reserve_one(records)) {
            records->out_of_memory = 1;
            return 1;
        }
        dcgmc_flatten(&records->items[records->count], group, entity, &values[i]);
        records->count++;
    }
    return 0;
}

static int dcgmc_finish(int status, const dcgmc_records *records)
{
    if (status == DCGM_ST_OK && records->out_of_memory)
        return DCGM_ST_MEMORY;
    return status;
}

int dcgmc_values_since(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                       long long since, long long *next, dcgmc_records *out)
{
    if (out == NULL || next == NULL)
        return DCGM_ST_BADPARAM;
    out->count = 0;
    out->out_of_memory = 0;
    int status = dcgmc_fwd_dcgmGetValuesSince_v2(handle, group, fieldGroup, since, next,
                                                 dcgmc_append, out);
    return dcgmc_finish(status, out);
}

int dcgmc_latest_values(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                        dcgmc_records *out)
{
    if (out == NULL)
        return DCGM_ST_BADPARAM;
    out->count = 0;
    out->out_of_memory = 0;
    int status = dcgmc_fwd_dcgmGetLatestValues_v2(handle, group, fieldGroup, dcgmc_append, out);
    return dcgmc_finish(status, out);
}

void dcgmc_records_free(dcgmc_records *records)
{
    if (records == NULL)
        return;
    free(records->items);
    records->items = NULL;
    records->count = 0;
    records->capacity = 0;
    records->out_of_memory = 0;
}
