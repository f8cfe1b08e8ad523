/*
 * loader.h -- run-time binding to a libdcgm.so.4 for the cffi extension.
 *
 * The extension never links libdcgm: it dlopen's one at run time (the real
 * library or the simulator), so that it imports on machines without DCGM and
 * the caller chooses which library to use.  Every row of dcgm_functions.h
 * gets a forwarder dcgmc_fwd_<name> with the row's prototype; the cffi module
 * source maps each DCGM name onto its forwarder with a #define, so Python sees
 * the real DCGM names.
 *
 * The region between CDEF-BEGIN and CDEF-END is also read by
 * dcgm_collector/ext/_build.py as cffi declarations: keep it to plain
 * typedefs, structs and prototypes.
 */
#ifndef DCGM_COLLECTOR_LOADER_H
#define DCGM_COLLECTOR_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "../dcgm_abi.h"

/* CDEF-BEGIN */

/* One field value, flattened: entity included, value kept in all forms. */
typedef struct dcgmc_record {
    int entityGroupId;
    unsigned int entityId;
    unsigned short fieldId;
    unsigned short fieldType;   /* DCGM_FT_* letter */
    int status;                 /* dcgmReturn_t of this reading */
    int64_t ts;                 /* microseconds since the Unix epoch */
    int64_t i64;
    double dbl;
    char str[256];              /* strings: NUL terminated; blobs: first 256 bytes */
} dcgmc_record;

/* A growable array of records; zero-initialise, release with dcgmc_records_free. */
typedef struct dcgmc_records {
    dcgmc_record *items;
    size_t count;
    size_t capacity;
    int out_of_memory;
} dcgmc_records;

/*
 * dlopen the library at path (a file name without '/' goes through the
 * dynamic linker's search) and resolve every row of dcgm_functions.h;
 * symbols the library lacks stay unresolved.  Returns DCGM_ST_OK,
 * DCGM_ST_LIBRARY_NOT_FOUND (err holds dlerror's text), DCGM_ST_IN_USE when
 * another library is already loaded, or DCGM_ST_BADPARAM.
 */
int dcgmc_load(const char *path, char *err, size_t errlen);

/*
 * dlopen another library at path (RTLD_LAZY | RTLD_LOCAL) to learn whether it
 * loads, then dlclose it.  Returns 0, or -1 with dlerror's text in err.  It is
 * here rather than in Python's own loaders because those hold the GIL: a load
 * that blocks (a file on a hung mount, a constructor that waits) would stop
 * every thread of the process, signal handling included.
 */
int dcgmc_probe_library(const char *path, char *err, size_t errlen);

/* Forget the library.  Only safe when no DCGM call is in flight. */
void dcgmc_unload(void);

int dcgmc_loaded(void);

/* 1 when the loaded library exports the row called name. */
int dcgmc_has(const char *name);

/* Absolute path of the loaded library, or NULL. */
const char *dcgmc_loaded_path(void);

/* How many calls went into the loaded library (through any forwarder) so far. */
unsigned long long dcgmc_call_count(void);

/*
 * dcgmGetValuesSince_v2 / dcgmGetLatestValues_v2, with every record appended
 * to out (which is emptied first) by a C callback.  Returns the DCGM status,
 * or DCGM_ST_MEMORY when out could not grow (the records gathered so far stay).
 */
int dcgmc_values_since(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                       long long since, long long *next, dcgmc_records *out);
int dcgmc_latest_values(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                        dcgmc_records *out);
void dcgmc_records_free(dcgmc_records *records);

/* CDEF-END */

/*
 * The growable arrays of the extension (records here, drain staging): a block
 * of at least needed items in *out -- items itself, or items moved by realloc,
 * starting at first_capacity and doubling.  0 when it cannot grow, leaving
 * items and *capacity as they were.
 */
int dcgmc_grow_block(void *items, size_t *capacity, size_t needed, size_t item_size,
                     size_t first_capacity, void **out);

#define DCGMC_DECLARE_FORWARDER(ret, name, params, args, missing) ret dcgmc_fwd_##name params;
DCGM_FUNCTION_LIST(DCGMC_DECLARE_FORWARDER)
#undef DCGMC_DECLARE_FORWARDER

#endif /* DCGM_COLLECTOR_LOADER_H */
