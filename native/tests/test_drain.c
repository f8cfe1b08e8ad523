/*
 * test_drain.c -- the extension's native half (loader.c, ring.c, drain.c) driven
 * against the simulated libdcgm.so.4, so the sanitizer and valgrind runs of
 * .ci/run cover the sampling hot path and the run-time binding.
 *
 * The Makefile compiles each test alone and links no project code, so the
 * three sources are compiled into this translation unit, as the cffi build
 * compiles them into the extension.  DCGM calls go through the loader's
 * forwarders, exactly as the extension's generated code makes them.
 *
 * usage: test_drain BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4; exit 0 = pass)
 */

/* Small, so that ordinary drains also take the give-back-and-regrow path of
 * the staging buffers, which a production-sized value would never reach here. */
#define STAGING_KEEP 64

#include "../ext/loader.c"
#include "../ext/ring.c"
#include "../ext/ring_blocks.c"
#include "../ext/block_codec.c"
#include "../ext/drain.c"
#include "../ext/ticker.c"

/* atomic: the race tests check from several threads at once */
#define CHECK_FROM_THREADS
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the cffi module source does after the headers. */
#define dcgmInit dcgmc_fwd_dcgmInit
#define dcgmShutdown dcgmc_fwd_dcgmShutdown
#define dcgmStartEmbedded dcgmc_fwd_dcgmStartEmbedded
#define dcgmStopEmbedded dcgmc_fwd_dcgmStopEmbedded
#define dcgmGetAllDevices dcgmc_fwd_dcgmGetAllDevices
#define dcgmGroupCreate dcgmc_fwd_dcgmGroupCreate
#define dcgmGroupDestroy dcgmc_fwd_dcgmGroupDestroy
#define dcgmFieldGroupCreate dcgmc_fwd_dcgmFieldGroupCreate
#define dcgmFieldGroupDestroy dcgmc_fwd_dcgmFieldGroupDestroy
#define dcgmWatchFields dcgmc_fwd_dcgmWatchFields
#define dcgmUnwatchFields dcgmc_fwd_dcgmUnwatchFields
#define dcgmUpdateAllFields dcgmc_fwd_dcgmUpdateAllFields
#define dcgmSimGetStartTime dcgmc_fwd_dcgmSimGetStartTime

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- a sample ring over caller-owned arrays, as rings/ring.py makes one ---------- */

typedef struct test_ring {
    int64_t capacity, n_series;
    int64_t *ts, *control;
    double *values;
    int8_t *status;
    dcgmc_ring *native;
} test_ring;

static test_ring ring_make(int64_t capacity, int64_t n_series, const int32_t *groups,
                           const uint32_t *entities, const uint16_t *fields)
{
    test_ring r = { capacity, n_series, NULL, NULL, NULL, NULL, NULL };
    size_t cells = (size_t)(capacity * n_series);
    r.ts = xcalloc((size_t)capacity, sizeof *r.ts);
    r.control = xcalloc(2, sizeof *r.control);
    r.values = xcalloc(cells, sizeof *r.values);
    r.status = xcalloc(cells, sizeof *r.status);
    r.native = dcgmc_ring_new(r.ts, r.values, r.status, r.control, capacity, n_series, groups,
                              entities, fields, capacity);
    CHECK(r.native != NULL, "ring of %lld x %lld", (long long)capacity, (long long)n_series);
    return r;
}

static void ring_destroy(test_ring *r)
{
    dcgmc_ring_free(r->native);
    free(r->ts);
    free(r->control);
    free(r->values);
    free(r->status);
    memset(r, 0, sizeof *r);
}

/* Rows read back out of a ring; buffers sized for the whole ring. */
typedef struct rows {
    int64_t first, end, skipped, valid;
    int64_t n_series;
    int64_t *ts;
    double *values;
    int8_t *status;
} rows;

static rows rows_make(const test_ring *r)
{
    rows out = { 0 };
    out.n_series = r->n_series;
    out.ts = xcalloc((size_t)r->capacity, sizeof *out.ts);
    out.values = xcalloc((size_t)(r->capacity * r->n_series), sizeof *out.values);
    out.status = xcalloc((size_t)(r->capacity * r->n_series), sizeof *out.status);
    return out;
}

static void rows_destroy(rows *out)
{
    free(out->ts);
    free(out->values);
    free(out->status);
    memset(out, 0, sizeof *out);
}

static int64_t rows_copy(const test_ring *r, int64_t first, int64_t end, rows *out)
{
    out->first = first;
    out->end = end;
    out->skipped = -1;
    out->valid = dcgmc_ring_copy(r->native, first, end, out->ts, out->values, out->status,
                                 &out->skipped);
    return out->valid;
}

/* The newest run of rows with ts >= since, the way rings/ring.py reads a window. */
static int64_t rows_since(const test_ring *r, int64_t since, rows *out)
{
    int64_t first = -1;
    int64_t head = dcgmc_ring_find_since(r->native, since, &first);
    return rows_copy(r, first, head, out);
}

static double cell_value(const rows *out, int64_t row, int64_t series)
{
    return out->values[row * out->n_series + series];
}

static int8_t cell_status(const rows *out, int64_t row, int64_t series)
{
    return out->status[row * out->n_series + series];
}

/* ---- the engine under the default scenario --------------------------------- */

#define N_FIELDS 5
static const unsigned short sample_fields[N_FIELDS] = { 150, 155, 203, 252, 1001 };

typedef struct engine {
    dcgmGpuGrp_t group;
    dcgmFieldGrp_t fields;
    unsigned int gpus[DCGM_MAX_NUM_DEVICES];
    int n_gpus;
    long long t0;               /* the node's start, µs since the epoch */
    int64_t n_series;
    int32_t *series_groups;
    uint32_t *series_entities;
    uint16_t *series_fields;
} engine;

static int gpu_slot(const engine *e, unsigned int gpu)
{
    for (int g = 0; g < e->n_gpus; g++)
        if (e->gpus[g] == gpu)
            return g;
    return -1;
}

static void engine_series(engine *e)
{
    e->n_series = (int64_t)e->n_gpus * N_FIELDS;
    e->series_groups = xcalloc((size_t)e->n_series, sizeof *e->series_groups);
    e->series_entities = xcalloc((size_t)e->n_series, sizeof *e->series_entities);
    e->series_fields = xcalloc((size_t)e->n_series, sizeof *e->series_fields);
    for (int g = 0; g < e->n_gpus; g++)
        for (int f = 0; f < N_FIELDS; f++) {
            int64_t s = (int64_t)g * N_FIELDS + f;
            e->series_groups[s] = DCGM_FE_GPU;
            e->series_entities[s] = e->gpus[g];
            e->series_fields[s] = sample_fields[f];
        }
}

static int engine_start(engine *e)
{
    memset(e, 0, sizeof *e);
    unsetenv("DCGM_SIM_SCENARIO");
    dcgmHandle_t handle = 0;
    CHECK_RC(dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &handle), DCGM_ST_OK);
    CHECK(handle == EMB, "handle %lu", (unsigned long)handle);
    CHECK_RC(dcgmSimGetStartTime(&e->t0), DCGM_ST_OK);
    CHECK_RC(dcgmGetAllDevices(EMB, e->gpus, &e->n_gpus), DCGM_ST_OK);
    CHECK(e->n_gpus == 8, "default scenario has %d GPUs", e->n_gpus);
    CHECK_RC(dcgmGroupCreate(EMB, DCGM_GROUP_DEFAULT, "drain-all", &e->group), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, N_FIELDS, sample_fields, "drain-fields", &e->fields),
             DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, e->group, e->fields, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    if (e->n_gpus <= 0)
        return 0;
    engine_series(e);
    return 1;
}

static void engine_forget(engine *e)
{
    free(e->series_groups);
    free(e->series_entities);
    free(e->series_fields);
    e->series_groups = NULL;
    e->series_entities = NULL;
    e->series_fields = NULL;
}

static test_ring engine_ring(const engine *e, int64_t capacity)
{
    return ring_make(capacity, e->n_series, e->series_groups, e->series_entities,
                     e->series_fields);
}

/* ---- loader --------------------------------------------------------------- */

static void test_loader_unloaded(void)
{
    char err[256];
    CHECK(!dcgmc_loaded(), "loaded before any load");
    CHECK(dcgmc_loaded_path() == NULL, "a path before any load");
    CHECK(!dcgmc_has("dcgmInit"), "dcgmInit resolved before any load");
    CHECK_RC(dcgmInit(), DCGM_ST_FUNCTION_NOT_FOUND);
    CHECK_RC(dcgmc_load(NULL, err, sizeof err), DCGM_ST_BADPARAM);
    CHECK(err[0] != '\0', "no reason given for a NULL path");
    CHECK_RC(dcgmc_load("", err, sizeof err), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_load(NULL, NULL, 0), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_load("/nonexistent/dir/libdcgm.so.4", err, sizeof err),
             DCGM_ST_LIBRARY_NOT_FOUND);
    CHECK(strstr(err, "nonexistent") != NULL, "dlopen's reason missing: '%s'", err);
    CHECK_RC(dcgmc_load("/nonexistent/dir/libdcgm.so.4", err, 1), DCGM_ST_LIBRARY_NOT_FOUND);
    CHECK(err[0] == '\0', "a one-byte error buffer holds only its terminator");
    CHECK(!dcgmc_loaded(), "a failed load left a library behind");

    /* the hot path with no library: the forwarder's answer, nothing committed */
    int32_t group = DCGM_FE_GPU;
    uint32_t entity = 0;
    uint16_t field = 150;
    test_ring r = ring_make(4, 1, &group, &entity, &field);
    dcgmc_drain_stats stats;
    CHECK_RC(dcgmc_drain(r.native, EMB, 1, 1, 77, &stats), DCGM_ST_FUNCTION_NOT_FOUND);
    CHECK(stats.next_cursor == 77 && stats.rows == 0, "cursor %lld rows %lld", stats.next_cursor,
          (long long)stats.rows);
    CHECK(dcgmc_ring_head(r.native) == 0, "a failed drain committed rows");
    ring_destroy(&r);
}

static int test_loader_load(const char *dir)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/libdcgm.so.4", dir);
    int rc = dcgmc_load(path, err, sizeof err);
    CHECK_RC(rc, DCGM_ST_OK);
    if (rc != DCGM_ST_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, err);
        return 0;
    }
    CHECK(dcgmc_loaded(), "not loaded after a load");
    CHECK_RC(dcgmc_load(path, err, sizeof err), DCGM_ST_OK);
    const char *loaded = dcgmc_loaded_path();
    size_t n = loaded ? strlen(loaded) : 0;
    CHECK(loaded && loaded[0] == '/' && n >= 12 && strcmp(loaded + n - 12, "libdcgm.so.4") == 0,
          "loaded path '%s'", loaded ? loaded : "(null)");
    CHECK(dcgmc_has("dcgmInit") && dcgmc_has("dcgmGetValuesSince_v2") &&
              dcgmc_has("dcgmSimGetStartTime"),
          "rows of dcgm_functions.h unresolved");
    CHECK(!dcgmc_has("dcgmNoSuchFunction") && !dcgmc_has(NULL) && !dcgmc_has(""),
          "a name outside the list counts as resolved");
    /* a second, different library in the same process is refused */
    CHECK_RC(dcgmc_load("libc.so.6", err, sizeof err), DCGM_ST_IN_USE);
    CHECK(strstr(err, "already loaded") != NULL, "IN_USE reason: '%s'", err);
    CHECK_RC(dcgmc_load("/nonexistent/libdcgm.so.4", err, sizeof err), DCGM_ST_IN_USE);
    CHECK(dcgmc_loaded(), "a refused load dropped the library");
    return 1;
}

/* ---- sample drains against the engine --------------------------------------- */

/* Every cell of rows [from, to) is a complete, plausible reading. */
static void check_complete_rows(const engine *e, const rows *out, int64_t from, int64_t to,
                                const char *what)
{
    for (int64_t i = from; i < to; i++)
        for (int64_t s = 0; s < out->n_series; s++) {
            int8_t st = cell_status(out, i, s);
            double v = cell_value(out, i, s);
            CHECK(st == DCGMC_SAMPLE_OK && isfinite(v), "%s row %lld series %lld: status %d %g",
                  what, (long long)i, (long long)s, st, v);
            unsigned short field = e->series_fields[s];
            if (field == 1001)
                CHECK(v >= 0.0 && v <= 1.0, "%s: ratio %g", what, v);
            if (field == 150)
                CHECK(v > 0.0 && v < 120.0, "%s: temperature %g", what, v);
        }
}

static int64_t row_of_ts(const rows *out, int64_t from, int64_t to, int64_t ts)
{
    for (int64_t i = from; i < to; i++)
        if (out->ts[i] == ts)
            return i;
    return -1;
}

/* Which fields a read covers, in series order: series g * n_fields + f is (GPU g, fields[f]). */
typedef struct layout {
    dcgmFieldGrp_t group;
    const unsigned short *fields;
    int n_fields;
} layout;

static int layout_slot(const layout *l, unsigned short field)
{
    for (int f = 0; f < l->n_fields; f++)
        if (l->fields[f] == field)
            return f;
    return -1;
}

/* What a ring cell holds for a record, decided apart from drain.c's own decoder; 0: no cell. */
static int expected_cell(const dcgmc_record *rec, int8_t *status, double *value)
{
    *value = NAN;
    if (rec->fieldType == DCGM_FT_INT64 || rec->fieldType == DCGM_FT_TIMESTAMP) {
        if (rec->i64 < DCGM_INT64_BLANK) {
            *status = DCGMC_SAMPLE_OK;
            *value = (double)rec->i64;
        } else {
            *status = rec->i64 == DCGM_INT64_NOT_SUPPORTED ? DCGMC_SAMPLE_NOT_SUPPORTED
                                                           : DCGMC_SAMPLE_BLANK;
        }
        return 1;
    }
    if (rec->fieldType == DCGM_FT_DOUBLE) {
        if (!isnan(rec->dbl) && rec->dbl < DCGM_FP64_BLANK) {
            *status = DCGMC_SAMPLE_OK;
            *value = rec->dbl;
        } else {
            *status = rec->dbl == DCGM_FP64_NOT_SUPPORTED ? DCGMC_SAMPLE_NOT_SUPPORTED
                                                          : DCGMC_SAMPLE_BLANK;
        }
        return 1;
    }
    return 0;
}

/* One record against its cell; returns the cell's index, or -1 when the record has none. */
static int64_t check_record_cell(const engine *e, const layout *l, const rows *out, int64_t n,
                                 const dcgmc_record *rec)
{
    int8_t want_status;
    double want;
    if (!expected_cell(rec, &want_status, &want))
        return -1;
    int g = gpu_slot(e, rec->entityId), f = layout_slot(l, rec->fieldId);
    int64_t row = row_of_ts(out, 0, n, rec->ts);
    CHECK(rec->entityGroupId == DCGM_FE_GPU && g >= 0 && f >= 0 && row >= 0,
          "record %d/%u/%u ts %lld has no cell", rec->entityGroupId, rec->entityId,
          rec->fieldId, (long long)rec->ts);
    if (g < 0 || f < 0 || row < 0)
        return -1;
    int64_t s = (int64_t)g * l->n_fields + f;
    double got = cell_value(out, row, s);
    CHECK(cell_status(out, row, s) == want_status &&
              (want_status == DCGMC_SAMPLE_OK ? got == want : isnan(got)),
          "gpu %u field %u ts %lld: ring %d/%g, record %d/%g", rec->entityId, rec->fieldId,
          (long long)rec->ts, cell_status(out, row, s), got, want_status, want);
    return row * out->n_series + s;
}

/*
 * The ring against the loader's record path: rows [0, n) of out hold exactly
 * what dcgmGetValuesSince_v2(since) returns stamped before until -- one cell
 * per OK numeric record, ABSENT (NaN) everywhere else, and no row without a
 * record.  Returns how many cells records filled.
 */
static int64_t check_against_records(const engine *e, const layout *l, const rows *out,
                                     int64_t n, long long since, long long until)
{
    dcgmc_records recs = { 0 };
    long long next = 0;
    CHECK_RC(dcgmc_values_since(EMB, e->group, l->group, since, &next, &recs), DCGM_ST_OK);
    uint8_t *seen = xcalloc((size_t)(n * out->n_series), 1);
    int64_t matched = 0;
    for (size_t i = 0; i < recs.count; i++) {
        const dcgmc_record *rec = &recs.items[i];
        if (rec->status != DCGM_ST_OK || rec->ts >= until)
            continue;
        int64_t cell = check_record_cell(e, l, out, n, rec);
        if (cell >= 0) {
            seen[cell] = 1;
            matched++;
        }
    }
    for (int64_t row = 0; row < n; row++) {
        int filled = 0;
        for (int64_t s = 0; s < out->n_series; s++) {
            filled |= seen[row * out->n_series + s];
            if (!seen[row * out->n_series + s])
                CHECK(cell_status(out, row, s) == DCGMC_SAMPLE_ABSENT && isnan(cell_value(out, row, s)),
                      "row %lld series %lld has no record but status %d", (long long)row,
                      (long long)s, cell_status(out, row, s));
        }
        CHECK(filled, "row %lld (ts %lld) matches no record", (long long)row,
              (long long)out->ts[row]);
    }
    free(seen);
    dcgmc_records_free(&recs);
    CHECK(recs.items == NULL && recs.count == 0, "records not emptied by dcgmc_records_free");
    return matched;
}

static void check_clean_stats(const dcgmc_drain_stats *st, const char *what)
{
    CHECK(st->blanks == 0 && st->unmapped == 0 && st->errors == 0 && st->late_rows == 0,
          "%s: blanks %lld unmapped %lld errors %lld late %lld", what, (long long)st->blanks,
          (long long)st->unmapped, (long long)st->errors, (long long)st->late_rows);
}

/* One drain from *cursor, checked against the ring and the records; returns the rows read. */
static int64_t drain_and_check(const engine *e, test_ring *r, rows *out, long long *cursor,
                               int64_t *newest)
{
    int64_t head = dcgmc_ring_head(r->native);
    dcgmc_drain_stats st;
    CHECK_RC(dcgmc_drain(r->native, EMB, e->group, e->fields, *cursor, &st), DCGM_ST_OK);
    CHECK(st.next_cursor > *cursor, "cursor %lld -> %lld", *cursor, st.next_cursor);
    CHECK(st.rows >= 1 && st.dropped_rows == 0 && st.no_data == 0,
          "rows %lld dropped %lld no_data %lld", (long long)st.rows, (long long)st.dropped_rows,
          (long long)st.no_data);
    CHECK(st.samples == st.rows * e->n_series, "samples %lld for %lld rows",
          (long long)st.samples, (long long)st.rows);
    check_clean_stats(&st, "drain");
    CHECK(dcgmc_ring_head(r->native) == head + st.rows, "head %lld, was %lld + %lld",
          (long long)dcgmc_ring_head(r->native), (long long)head, (long long)st.rows);
    if (st.rows <= 0 || st.rows > r->capacity)
        return 0;
    CHECK_RC(rows_copy(r, head, head + st.rows, out), st.rows);
    CHECK(out->skipped == 0, "skipped %lld with no writer", (long long)out->skipped);
    for (int64_t i = 0; i < st.rows; i++) {
        CHECK(out->ts[i] > *newest, "row ts %lld not after %lld (a duplicate or out of order)",
              (long long)out->ts[i], (long long)*newest);
        CHECK(out->ts[i] >= *cursor && out->ts[i] < st.next_cursor,
              "row ts %lld outside [%lld, %lld)", (long long)out->ts[i], *cursor, st.next_cursor);
        *newest = out->ts[i] > *newest ? out->ts[i] : *newest;
    }
    check_complete_rows(e, out, 0, st.rows, "drained");
    layout all = { e->fields, sample_fields, N_FIELDS };
    int64_t matched = check_against_records(e, &all, out, st.rows, *cursor, st.next_cursor);
    CHECK(matched == st.samples, "%lld records for %lld cells", (long long)matched,
          (long long)st.samples);
    int64_t ts = 0;
    CHECK(dcgmc_ring_newest_ts(r->native, &ts) == 1 && ts == *newest, "newest ts %lld, want %lld",
          (long long)ts, (long long)*newest);
    *cursor = st.next_cursor;
    return st.rows;
}

/* Drained twice in a row: the second drain reads one NO_DATA per series. */
static void check_no_data(const engine *e, test_ring *r, long long *cursor)
{
    int seen = 0;
    for (int attempt = 0; attempt < 6 && !seen; attempt++) {
        dcgmc_drain_stats first, second;
        CHECK_RC(dcgmc_drain(r->native, EMB, e->group, e->fields, *cursor, &first), DCGM_ST_OK);
        *cursor = first.next_cursor;
        int64_t head = dcgmc_ring_head(r->native);
        CHECK_RC(dcgmc_drain(r->native, EMB, e->group, e->fields, *cursor, &second), DCGM_ST_OK);
        CHECK(second.next_cursor >= *cursor, "cursor went back: %lld -> %lld", *cursor,
              second.next_cursor);
        *cursor = second.next_cursor;
        if (second.rows != 0)
            continue; /* an update pass landed between the two */
        seen = 1;
        CHECK(second.no_data == e->n_series && second.samples == 0,
              "no_data %lld samples %lld, want %lld NO_DATA", (long long)second.no_data,
              (long long)second.samples, (long long)e->n_series);
        CHECK(dcgmc_ring_head(r->native) == head, "an empty drain moved the head");
        check_clean_stats(&second, "empty drain");
    }
    CHECK(seen, "never drained nothing twice in a row");
}

static void test_drain_sequence(const engine *e)
{
    test_ring r = engine_ring(e, 32);
    rows out = rows_make(&r);
    long long cursor = 0;
    int64_t newest = 0, total = 0;
    for (int i = 0; i < 5; i++) {
        total += drain_and_check(e, &r, &out, &cursor, &newest);
        sleep_ms(150);
    }
    CHECK(total >= 5, "only %lld rows in ~750 ms at 100 ms", (long long)total);
    check_no_data(e, &r, &cursor);

    /* windows over what the ring holds */
    int64_t head = dcgmc_ring_head(r.native), first = -1;
    CHECK(dcgmc_ring_newest_ts(r.native, &newest) == 1, "no newest row");
    CHECK(dcgmc_ring_find_since(r.native, newest, &first) == head && first == head - 1,
          "find_since(newest) first %lld head %lld", (long long)first, (long long)head);
    CHECK(dcgmc_ring_find_since(r.native, 0, &first) == head &&
              first == (head > r.capacity ? head - r.capacity : 0),
          "find_since(0) first %lld head %lld", (long long)first, (long long)head);
    CHECK(dcgmc_ring_find_since(r.native, newest + 1, &first) == head && first == head,
          "find_since(after newest) first %lld", (long long)first);
    int64_t valid = rows_since(&r, 0, &out);
    CHECK(out.end == head && valid == head - out.first && out.skipped == 0,
          "copied %lld of %lld", (long long)valid, (long long)(head - out.first));
    for (int64_t i = 1; i < valid; i++)
        CHECK(out.ts[i] > out.ts[i - 1], "rows not ascending at %lld", (long long)i);
    check_complete_rows(e, &out, 0, valid, "window");

    /* the library's own cost path and the loader's latest-values path */
    long long next = 0;
    int64_t count = -1;
    CHECK_RC(dcgmc_count_since(EMB, e->group, e->fields, 0, &next, &count), DCGM_ST_OK);
    CHECK(count >= total * e->n_series && next > 0, "count_since %lld records",
          (long long)count);
    dcgmc_records latest = { 0 };
    CHECK_RC(dcgmc_latest_values(EMB, e->group, e->fields, &latest), DCGM_ST_OK);
    CHECK(latest.count == (size_t)e->n_series && !latest.out_of_memory, "latest %zu records",
          latest.count);
    for (size_t i = 0; i < latest.count; i++)
        CHECK(latest.items[i].status == DCGM_ST_OK && latest.items[i].ts <= newest + 200000,
              "latest record %zu status %d", i, latest.items[i].status);
    dcgmc_records_free(&latest);
    rows_destroy(&out);
    ring_destroy(&r);
}

/* Distinct timestamps below until of the records since `since`, ascending, into times. */
static int64_t distinct_record_times(const engine *e, long long since, long long until,
                                     int64_t *times, int64_t max)
{
    dcgmc_records recs = { 0 };
    long long next = 0;
    CHECK_RC(dcgmc_values_since(EMB, e->group, e->fields, since, &next, &recs), DCGM_ST_OK);
    int64_t n = 0;
    for (size_t i = 0; i < recs.count; i++) {
        int64_t ts = recs.items[i].ts;
        if (recs.items[i].status != DCGM_ST_OK || ts >= until)
            continue;
        int64_t at = 0;
        while (at < n && times[at] < ts)
            at++;
        if (at < n && times[at] == ts)
            continue;
        if (n == max)
            break;
        memmove(&times[at + 1], &times[at], (size_t)(n - at) * sizeof *times);
        times[at] = ts;
        n++;
    }
    dcgmc_records_free(&recs);
    return n;
}

static void test_wrap_around(const engine *e)
{
    while (wall_us() - e->t0 < 1300000)
        sleep_ms(20);
    test_ring r = engine_ring(e, 4);
    rows out = rows_make(&r);
    long long since = wall_us() - 1000000;
    dcgmc_drain_stats st;
    CHECK_RC(dcgmc_drain(r.native, EMB, e->group, e->fields, since, &st), DCGM_ST_OK);
    CHECK(st.rows == 4 && st.dropped_rows >= 5 && st.dropped_rows <= 9,
          "1 s at 100 ms into 4 rows: rows %lld dropped %lld", (long long)st.rows,
          (long long)st.dropped_rows);
    CHECK(st.samples == 4 * e->n_series, "samples %lld", (long long)st.samples);
    check_clean_stats(&st, "wrap");
    CHECK(dcgmc_ring_head(r.native) == 4, "head %lld", (long long)dcgmc_ring_head(r.native));

    int64_t times[64];
    int64_t n = distinct_record_times(e, since, st.next_cursor, times, 64);
    CHECK(n == st.rows + st.dropped_rows, "%lld distinct times, ring saw %lld",
          (long long)n, (long long)(st.rows + st.dropped_rows));
    CHECK_RC(rows_since(&r, 0, &out), 4);
    for (int64_t i = 0; i < 4 && n >= 4; i++)
        CHECK(out.ts[i] == times[n - 4 + i], "row %lld ts %lld, newest-4 record ts %lld",
              (long long)i, (long long)out.ts[i], (long long)times[n - 4 + i]);
    check_complete_rows(e, &out, 0, 4, "wrapped");
    layout all = { e->fields, sample_fields, N_FIELDS };
    CHECK(check_against_records(e, &all, &out, 4, out.ts[0], st.next_cursor) == 4 * e->n_series,
          "wrapped rows disagree with the records");

    /* a later drain overwrites the oldest positions in place */
    int64_t before_newest = out.ts[3];
    long long cursor = st.next_cursor;
    sleep_ms(250);
    CHECK_RC(dcgmc_drain(r.native, EMB, e->group, e->fields, cursor, &st), DCGM_ST_OK);
    CHECK(st.rows >= 1 && st.rows <= 4 && st.dropped_rows == 0, "rows %lld dropped %lld",
          (long long)st.rows, (long long)st.dropped_rows);
    int64_t head = dcgmc_ring_head(r.native);
    CHECK(head == 4 + st.rows, "head %lld", (long long)head);
    CHECK_RC(rows_since(&r, 0, &out), 4);
    CHECK(out.first == head - 4, "window starts at %lld", (long long)out.first);
    for (int64_t i = 1; i < 4; i++)
        CHECK(out.ts[i] > out.ts[i - 1], "wrapped rows not ascending at %lld", (long long)i);
    CHECK(out.ts[3 - st.rows] == before_newest, "the old newest row moved");
    check_complete_rows(e, &out, 0, 4, "overwritten");
    CHECK_RC(rows_copy(&r, head - 5, head, &out), -1);
    rows_destroy(&out);
    ring_destroy(&r);
}

/* Series for only some (entity, field) pairs, in no particular order: the rest is unmapped. */
static void test_unmapped(const engine *e)
{
    int32_t groups[3] = { DCGM_FE_GPU, DCGM_FE_GPU, DCGM_FE_GPU_I };
    uint32_t entities[3] = { e->gpus[3], e->gpus[0], e->gpus[0] };
    uint16_t fields[3] = { 1001, 150, 150 };
    test_ring r = ring_make(8, 3, groups, entities, fields);
    rows out = rows_make(&r);
    dcgmc_drain_stats st;
    CHECK_RC(dcgmc_drain(r.native, EMB, e->group, e->fields, 0, &st), DCGM_ST_OK);
    int64_t seen = st.rows + st.dropped_rows;
    CHECK(st.rows >= 1 && st.rows <= 8 && st.samples == 2 * st.rows, "rows %lld samples %lld",
          (long long)st.rows, (long long)st.samples);
    CHECK(st.unmapped == (e->n_series - 2) * seen, "unmapped %lld for %lld rows",
          (long long)st.unmapped, (long long)seen);
    int64_t valid = rows_since(&r, 0, &out);
    CHECK(valid == st.rows, "copied %lld", (long long)valid);
    for (int64_t i = 0; i < valid; i++) {
        CHECK(cell_status(&out, i, 0) == DCGMC_SAMPLE_OK && cell_status(&out, i, 1) == DCGMC_SAMPLE_OK,
              "mapped cells of row %lld not OK", (long long)i);
        CHECK(cell_status(&out, i, 2) == DCGMC_SAMPLE_ABSENT && isnan(cell_value(&out, i, 2)),
              "a series no record maps to is not ABSENT in row %lld", (long long)i);
    }
    rows_destroy(&out);
    ring_destroy(&r);
}

/* A ring over any layout of fields on every GPU. */
static test_ring layout_ring(const engine *e, const layout *l, int64_t capacity)
{
    int64_t n = (int64_t)e->n_gpus * l->n_fields;
    int32_t *groups = xcalloc((size_t)n, sizeof *groups);
    uint32_t *entities = xcalloc((size_t)n, sizeof *entities);
    uint16_t *fields = xcalloc((size_t)n, sizeof *fields);
    for (int g = 0; g < e->n_gpus; g++)
        for (int f = 0; f < l->n_fields; f++) {
            groups[g * l->n_fields + f] = DCGM_FE_GPU;
            entities[g * l->n_fields + f] = e->gpus[g];
            fields[g * l->n_fields + f] = l->fields[f];
        }
    test_ring r = ring_make(capacity, n, groups, entities, fields);
    free(groups);
    free(entities);
    free(fields);
    return r;
}

/*
 * Fields watched at different intervals in one read: the slow one first, so
 * the later series bring timestamps it lacks and rows have ABSENT cells;
 * a NOT_SUPPORTED field (fan speed) and a string (the name) ride along.
 */
static void test_mixed_watches(const engine *e)
{
    static const unsigned short slow[1] = { 251 }, fast[3] = { 156, 191, 50 };
    static const unsigned short read[4] = { 251, 156, 191, 50 };
    dcgmFieldGrp_t slow_fg = 0, fast_fg = 0, read_fg = 0;
    CHECK_RC(dcgmFieldGroupCreate(EMB, 1, slow, "mixed-slow", &slow_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 3, fast, "mixed-fast", &fast_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 4, read, "mixed-read", &read_fg), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, e->group, slow_fg, 300000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, e->group, fast_fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(dcgmUpdateAllFields(EMB, 1), DCGM_ST_OK);
    long long since = wall_us() - 50000;
    sleep_ms(700);
    layout l = { read_fg, read, 4 };
    test_ring r = layout_ring(e, &l, 32);
    rows out = rows_make(&r);
    dcgmc_drain_stats st;
    CHECK_RC(dcgmc_drain(r.native, EMB, e->group, read_fg, since, &st), DCGM_ST_OK);
    CHECK(st.rows >= 4 && st.rows <= 16 && st.dropped_rows == 0 && st.errors == 0 &&
              st.late_rows == 0,
          "rows %lld dropped %lld errors %lld", (long long)st.rows, (long long)st.dropped_rows,
          (long long)st.errors);
    /* fan speed and name are sampled together: one NOT_SUPPORTED cell per name record */
    CHECK(st.blanks > 0 && st.blanks == st.unmapped,
          "fan speed should be NOT_SUPPORTED (blanks %lld), the name unmapped (%lld)",
          (long long)st.blanks, (long long)st.unmapped);
    int64_t valid = rows_since(&r, 0, &out);
    CHECK(valid == st.rows, "copied %lld of %lld", (long long)valid, (long long)st.rows);
    int64_t matched = check_against_records(e, &l, &out, valid, since, st.next_cursor);
    CHECK(matched == st.samples, "%lld records for %lld cells", (long long)matched,
          (long long)st.samples);
    int slow_present = 0, slow_absent = 0;
    for (int64_t i = 0; i < valid; i++) {
        slow_present += cell_status(&out, i, 0) == DCGMC_SAMPLE_OK;
        slow_absent += cell_status(&out, i, 0) == DCGMC_SAMPLE_ABSENT;
    }
    CHECK(slow_present >= 1 && slow_absent >= 1,
          "a 300 ms series among 100 ms ones: %d rows with it, %d without", slow_present,
          slow_absent);
    rows_destroy(&out);
    ring_destroy(&r);
    CHECK_RC(dcgmFieldGroupDestroy(EMB, read_fg), DCGM_ST_OK);
}

/* The arrays of an event ring of eight entries. */
typedef struct event_arrays {
    int64_t ts[8], values[8], control[2];
    int32_t groups[8];
    uint32_t ids[8];
    uint16_t fields[8];
} event_arrays;

static dcgmc_events *events_of_eight(event_arrays *a)
{
    memset(a, 0, sizeof *a);
    dcgmc_events *ev = dcgmc_events_new(a->ts, a->groups, a->ids, a->fields, a->values, a->control, 8);
    CHECK(ev != NULL, "events ring");
    return ev;
}

/* Two rings and the event ring from one field group in one call: the same
 * rows as one drain per ring, one cursor, and all-or-nothing on a refusal. */
static void test_drain_many(const engine *e)
{
    static const unsigned short temps[1] = { 150 }, power[2] = { 155, 203 }, xid[1] = { 230 };
    static const unsigned short all[4] = { 150, 155, 203, 230 }, unwatched[2] = { 150, 140 };
    dcgmFieldGrp_t temps_fg = 0, power_fg = 0, xid_fg = 0, all_fg = 0, unwatched_fg = 0;
    CHECK_RC(dcgmFieldGroupCreate(EMB, 1, temps, "many-temps", &temps_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 2, power, "many-power", &power_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 1, xid, "many-xid", &xid_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 4, all, "many-all", &all_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 2, unwatched, "many-unwatched", &unwatched_fg), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, e->group, temps_fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, e->group, power_fg, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, e->group, xid_fg, 100000, 60.0, 0), DCGM_ST_OK);
    long long since = wall_us() - 50000;
    sleep_ms(400);
    layout lt = { temps_fg, temps, 1 }, lp = { power_fg, power, 2 };
    test_ring batch_t = layout_ring(e, &lt, 32), batch_p = layout_ring(e, &lp, 32);
    test_ring alone_t = layout_ring(e, &lt, 32), alone_p = layout_ring(e, &lp, 32);
    event_arrays arrays;
    dcgmc_events *ev = events_of_eight(&arrays);
    dcgmc_ring *rings[2] = { batch_t.native, batch_p.native };
    dcgmc_drain_stats st[3], one_t, one_p;
    CHECK_RC(dcgmc_drain_many(rings, 2, ev, xid, 1, EMB, e->group, all_fg, since, st), DCGM_ST_OK);
    long long until = st[0].next_cursor;
    CHECK(until > since && st[1].next_cursor == until && st[2].next_cursor == until,
          "cursors %lld %lld %lld", st[0].next_cursor, st[1].next_cursor, st[2].next_cursor);
    CHECK_RC(dcgmc_drain(alone_t.native, EMB, e->group, temps_fg, since, &one_t), DCGM_ST_OK);
    CHECK_RC(dcgmc_drain(alone_p.native, EMB, e->group, power_fg, since, &one_p), DCGM_ST_OK);
    /* the separate drains came later and may hold one more update pass */
    CHECK(st[0].rows >= 3 && st[0].rows <= one_t.rows && st[1].rows >= 3 && st[1].rows <= one_p.rows,
          "batch rows %lld %lld, alone %lld %lld", (long long)st[0].rows, (long long)st[1].rows,
          (long long)one_t.rows, (long long)one_p.rows);
    CHECK(st[0].samples == st[0].rows * e->n_gpus && st[1].samples == st[1].rows * e->n_gpus * 2,
          "samples %lld %lld", (long long)st[0].samples, (long long)st[1].samples);
    CHECK(st[0].unmapped == 0 && st[1].unmapped == 0 && st[2].rows == 0 && st[2].no_data == e->n_gpus,
          "unmapped %lld %lld, events %lld, event no_data %lld", (long long)st[0].unmapped,
          (long long)st[1].unmapped, (long long)st[2].rows, (long long)st[2].no_data);
    rows out = rows_make(&batch_t);
    int64_t valid = rows_since(&batch_t, 0, &out);
    CHECK(valid == st[0].rows, "copied %lld of %lld", (long long)valid, (long long)st[0].rows);
    int64_t matched = check_against_records(e, &lt, &out, valid, since, until);
    CHECK(matched == st[0].samples, "%lld records for %lld cells", (long long)matched,
          (long long)st[0].samples);
    rows_destroy(&out);

    /* a field watched by nobody fails the call: no ring moves, the cursor stays */
    int64_t head_t = dcgmc_ring_head(batch_t.native), head_p = dcgmc_ring_head(batch_p.native);
    CHECK_RC(dcgmc_drain_many(rings, 2, ev, xid, 1, EMB, e->group, unwatched_fg, until, st),
             DCGM_ST_NOT_WATCHED);
    CHECK(st[0].next_cursor == until && st[1].next_cursor == until && st[0].rows == 0,
          "a refused batch moved: cursor %lld rows %lld", st[0].next_cursor, (long long)st[0].rows);
    CHECK(dcgmc_ring_head(batch_t.native) == head_t && dcgmc_ring_head(batch_p.native) == head_p,
          "a refused batch committed rows");

    /* what it refuses */
    dcgmc_ring *twice[2] = { batch_t.native, batch_t.native };
    CHECK_RC(dcgmc_drain_many(twice, 2, NULL, NULL, 0, EMB, e->group, all_fg, until, st),
             DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_drain_many(rings, DCGMC_DRAIN_MAX_RINGS + 1, NULL, NULL, 0, EMB, e->group, all_fg,
                              until, st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_drain_many(NULL, 0, NULL, NULL, 0, EMB, e->group, all_fg, until, st),
             DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_drain_many(rings, 2, ev, NULL, 1, EMB, e->group, all_fg, until, st),
             DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_drain_many(rings, 2, NULL, NULL, 0, EMB, e->group, all_fg, until, NULL),
             DCGM_ST_BADPARAM);
    if (ev)
        dcgmc_events_free(ev);
    ring_destroy(&batch_t);
    ring_destroy(&batch_p);
    ring_destroy(&alone_t);
    ring_destroy(&alone_p);
    CHECK_RC(dcgmFieldGroupDestroy(EMB, unwatched_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupDestroy(EMB, all_fg), DCGM_ST_OK);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *stop_later(void *ticker)
{
    sleep_ms(100);
    dcgmc_ticker_stop(ticker);
    return NULL;
}

/* Runs of ticks in C: bounded by a tick count or a time, ended by a stop or a refused drain. */
static void test_ticker(const engine *e)
{
    /* a field of its own (the SM clock), so that the other tests' rows stay whole */
    static const unsigned short temps[1] = { 100 }, unwatched[2] = { 100, 140 };
    dcgmFieldGrp_t temps_fg = 0, unwatched_fg = 0;
    CHECK_RC(dcgmFieldGroupCreate(EMB, 1, temps, "ticker-clock", &temps_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 2, unwatched, "ticker-unwatched", &unwatched_fg), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, e->group, temps_fg, 50000, 60.0, 0), DCGM_ST_OK);
    layout lt = { temps_fg, temps, 1 };
    test_ring r = layout_ring(e, &lt, 64);
    dcgmc_ring *rings[1] = { r.native };
    dcgmc_drain_stats st[2];
    dcgmc_tick_totals tt;
    dcgmc_ticker *t = dcgmc_ticker_new();
    CHECK(t != NULL, "ticker");
    if (t == NULL)
        return;

    /* three ticks at most, on a 50 ms grid from now */
    double origin = mono_s();
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, 0, origin, 0.05, 0, 3,
                              1e300, st, &tt), DCGM_ST_OK);
    CHECK(tt.ticks == 3 && tt.bounded && !tt.stopped && tt.rc == 0 && tt.next_tick == 3 + tt.skipped,
          "ticks %lld bounded %d next %lld skipped %lld", (long long)tt.ticks, tt.bounded,
          (long long)tt.next_tick, (long long)tt.skipped);
    CHECK(tt.rows >= 1 && tt.samples >= tt.rows * e->n_gpus && tt.cursor > 0 &&
              tt.rows == dcgmc_ring_head(r.native),
          "rows %lld samples %lld head %lld", (long long)tt.rows, (long long)tt.samples,
          (long long)dcgmc_ring_head(r.native));
    int64_t newest = 0;
    CHECK(dcgmc_ring_newest_ts(r.native, &newest) == 1 && tt.newest_ts == newest, "newest %lld, ring %lld",
          (long long)tt.newest_ts, (long long)newest);
    double elapsed = mono_s() - origin;
    CHECK(elapsed >= 0.1 && tt.last_tick_start_s >= origin + 0.1, "three ticks on a 50 ms grid in %.3f s",
          elapsed);

    /* up to the first tick due at or after until: ticks 3, 4, 5 and 6 (due at 0.30 >= 0.27) */
    long long cursor = tt.cursor;
    int64_t next = tt.next_tick;
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, cursor, origin, 0.05, next,
                              1000, origin + 0.05 * 6 - 0.03, st, &tt), DCGM_ST_OK);
    CHECK(tt.bounded && tt.next_tick == 7 && tt.ticks + tt.skipped == 7 - next && tt.cursor > cursor,
          "from %lld: ticks %lld skipped %lld next %lld", (long long)next, (long long)tt.ticks,
          (long long)tt.skipped, (long long)tt.next_tick);

    /* a refused drain ends the run at once, uncounted: the caller runs that tick again */
    cursor = tt.cursor;
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, unwatched_fg, cursor, origin, 0.05,
                              tt.next_tick, 1000, 1e300, st, &tt), DCGM_ST_NOT_WATCHED);
    CHECK(tt.rc == DCGM_ST_NOT_WATCHED && tt.ticks == 0 && !tt.bounded && tt.cursor == cursor,
          "refused: rc %d ticks %lld", tt.rc, (long long)tt.ticks);

    /* a stop wakes a run that sleeps toward a tick ten seconds away, and every later run returns at once */
    pthread_t stopper;
    CHECK(pthread_create(&stopper, NULL, stop_later, t) == 0, "stopper thread");
    double began = mono_s();
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, cursor, began + 10.0, 1.0, 0,
                              5, 1e300, st, &tt), DCGM_ST_OK);
    pthread_join(stopper, NULL);
    CHECK(tt.stopped && tt.ticks == 0 && mono_s() - began < 2.0, "stop took %.3f s (stopped %d)",
          mono_s() - began, tt.stopped);
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, cursor, mono_s(), 0.05, 0, 5,
                              1e300, st, &tt), DCGM_ST_OK);
    CHECK(tt.stopped && tt.ticks == 0, "a run after the stop ticked %lld times", (long long)tt.ticks);

    /* what it refuses */
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, 0, origin, 0.0, 0, 1, 1e300,
                              st, &tt), DCGM_ST_BADPARAM);
    CHECK(tt.rc == 0 && tt.ticks == 0, "a refused run says rc %d", tt.rc);
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, -1, origin, 0.05, 0, 1, 1e300,
                              st, &tt), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, 0, origin, 0.05, 0, 1, 1e300,
                              NULL, &tt), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_ticker_run(NULL, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, 0, origin, 0.05, 0, 1,
                              1e300, st, &tt), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_ticker_run(t, rings, 1, NULL, NULL, 0, EMB, e->group, temps_fg, 0, origin, 0.05, 0, 1, 1e300,
                              st, NULL), DCGM_ST_BADPARAM);
    dcgmc_ticker_stop(NULL);
    dcgmc_ticker_free(NULL);
    dcgmc_ticker_free(t);
    ring_destroy(&r);
    CHECK_RC(dcgmUnwatchFields(EMB, e->group, temps_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupDestroy(EMB, temps_fg), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupDestroy(EMB, unwatched_fg), DCGM_ST_OK);
}

/* ---- committed rows: wrap-around and windows, no DCGM ---------------------- */

#define CR_SERIES 3

static int8_t pattern_status(int64_t ts, int64_t s)
{
    if ((ts + s) % 5 == 0)
        return DCGMC_SAMPLE_BLANK;
    if ((ts + s) % 7 == 0)
        return DCGMC_SAMPLE_ABSENT;
    if ((ts + s) % 11 == 0)
        return DCGMC_SAMPLE_NOT_SUPPORTED;
    return DCGMC_SAMPLE_OK;
}

static double pattern_value(int64_t ts, int64_t s)
{
    return (double)(ts * 16 + s) + 0.25;
}

static void fill_pattern(int64_t first_ts, int64_t n, int64_t *ts, double *values, int8_t *status)
{
    for (int64_t i = 0; i < n; i++) {
        ts[i] = first_ts + i;
        for (int64_t s = 0; s < CR_SERIES; s++) {
            values[i * CR_SERIES + s] = pattern_value(ts[i], s);
            status[i * CR_SERIES + s] = pattern_status(ts[i], s);
        }
    }
}

/* Row i of out (from `from`) is the pattern for its ts; returns 1 when it is. */
static int row_matches_pattern(const rows *out, int64_t i)
{
    int64_t ts = out->ts[i];
    for (int64_t s = 0; s < CR_SERIES; s++) {
        int8_t want = pattern_status(ts, s);
        double v = cell_value(out, i, s);
        if (cell_status(out, i, s) != want)
            return 0;
        if (want == DCGMC_SAMPLE_OK ? v != pattern_value(ts, s) : !isnan(v))
            return 0;
    }
    return 1;
}

static int64_t pattern_samples(int64_t first_ts, int64_t n, int64_t *blanks)
{
    int64_t samples = 0;
    *blanks = 0;
    for (int64_t t = first_ts; t < first_ts + n; t++)
        for (int64_t s = 0; s < CR_SERIES; s++) {
            int8_t st = pattern_status(t, s);
            samples += st != DCGMC_SAMPLE_ABSENT;
            *blanks += st == DCGMC_SAMPLE_BLANK || st == DCGMC_SAMPLE_NOT_SUPPORTED;
        }
    return samples;
}

static test_ring pattern_ring(int64_t capacity)
{
    int32_t groups[CR_SERIES] = { DCGM_FE_GPU, DCGM_FE_GPU, DCGM_FE_SWITCH };
    uint32_t entities[CR_SERIES] = { 0, 1, 0 };
    uint16_t fields[CR_SERIES] = { 150, 150, 150 };
    return ring_make(capacity, CR_SERIES, groups, entities, fields);
}

static void test_commit_rows(void)
{
    test_ring r = pattern_ring(4);
    rows out = rows_make(&r);
    int64_t ts[16];
    double values[16 * CR_SERIES];
    int8_t status[16 * CR_SERIES];
    dcgmc_drain_stats st;
    int64_t got = 0;
    CHECK(dcgmc_ring_newest_ts(r.native, &got) == 0, "an empty ring has a newest row");

    fill_pattern(1, 10, ts, values, status);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, ts, values, status, 10, &st), DCGM_ST_OK);
    int64_t blanks = 0, samples = pattern_samples(7, 4, &blanks);
    CHECK(st.rows == 4 && st.dropped_rows == 6 && st.late_rows == 0, "rows %lld dropped %lld",
          (long long)st.rows, (long long)st.dropped_rows);
    CHECK(st.samples == samples && st.blanks == blanks, "samples %lld/%lld blanks %lld/%lld",
          (long long)st.samples, (long long)samples, (long long)st.blanks, (long long)blanks);
    CHECK_RC(rows_since(&r, 0, &out), 4);
    for (int64_t i = 0; i < 4; i++)
        CHECK(out.ts[i] == 7 + i && row_matches_pattern(&out, i), "row %lld: ts %lld",
              (long long)i, (long long)out.ts[i]);

    /* three more rows wrap the positions round */
    fill_pattern(11, 3, ts, values, status);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, ts, values, status, 3, NULL), DCGM_ST_OK);
    CHECK(dcgmc_ring_head(r.native) == 7, "head %lld", (long long)dcgmc_ring_head(r.native));
    CHECK_RC(rows_since(&r, 0, &out), 4);
    CHECK(out.first == 3, "window first %lld", (long long)out.first);
    for (int64_t i = 0; i < 4; i++)
        CHECK(out.ts[i] == 10 + i && row_matches_pattern(&out, i), "wrapped row %lld: ts %lld",
              (long long)i, (long long)out.ts[i]);
    CHECK_RC(rows_since(&r, 12, &out), 2);
    CHECK(out.first == 5 && out.ts[0] == 12 && out.ts[1] == 13, "since 12: first %lld ts %lld",
          (long long)out.first, (long long)out.ts[0]);
    CHECK(dcgmc_ring_newest_ts(r.native, &got) == 1 && got == 13, "newest %lld", (long long)got);

    /* a row older than the newest is kept but counted late, and ends a since-window */
    fill_pattern(5, 1, ts, values, status);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, ts, values, status, 1, &st), DCGM_ST_OK);
    CHECK(st.late_rows == 1 && st.rows == 1, "late %lld", (long long)st.late_rows);
    CHECK_RC(rows_since(&r, 6, &out), 0);
    CHECK_RC(rows_since(&r, 5, &out), 4);
    CHECK(out.ts[0] == 11 && out.ts[3] == 5, "late row ts %lld", (long long)out.ts[3]);

    /* nothing to commit is fine, and counts nothing */
    CHECK_RC(dcgmc_ring_commit_rows(r.native, NULL, NULL, NULL, 0, &st), DCGM_ST_OK);
    CHECK(st.rows == 0 && st.samples == 0 && dcgmc_ring_head(r.native) == 8, "empty commit");
    rows_destroy(&out);
    ring_destroy(&r);
}

/* ---- scripted DCGM answers: row building and event ordering, exactly -------- */

/*
 * The loader's pointer for dcgmGetValuesSince_v2 is swapped for a script, so
 * the public drain functions run end to end on records no simulator would
 * produce: series out of order, repeated and missing timestamps, blanks,
 * per-record errors, strings, unknown entities.
 */
typedef struct script_record {
    int32_t group;
    uint32_t entity;
    unsigned short field;
    unsigned short type;
    int status;
    int64_t ts;
    int64_t i64;
    double dbl;
} script_record;

static const script_record *script;
static int script_length;
static int script_rc;
static long long script_next;

/* One callback per run of records of one entity, as DCGM enumerates them. */
static dcgmReturn_t scripted_values_since(dcgmHandle_t handle, dcgmGpuGrp_t group,
                                          dcgmFieldGrp_t fields, long long since, long long *next,
                                          dcgmFieldValueEntityEnumeration_f callback, void *user)
{
    if (next == NULL || callback == NULL)
        return DCGM_ST_BADPARAM;
    dcgmFieldValue_v1 *values = xcalloc((size_t)script_length, sizeof *values);
    for (int i = 0; i < script_length;) {
        int end = i, n = 0;
        while (end < script_length && script[end].group == script[i].group &&
               script[end].entity == script[i].entity) {
            const script_record *r = &script[end++];
            dcgmFieldValue_v1 *v = &values[n++];
            memset(v, 0, sizeof *v);
            v->version = dcgmFieldValue_version1;
            v->fieldId = r->field;
            v->fieldType = r->type;
            v->status = r->status;
            v->ts = r->ts;
            if (r->type == DCGM_FT_DOUBLE)
                v->value.dbl = r->dbl;
            else if (r->type == DCGM_FT_STRING)
                snprintf(v->value.str, sizeof v->value.str, "scripted");
            else
                v->value.i64 = r->i64;
        }
        if (callback((dcgm_field_entity_group_t)script[i].group, script[i].entity, values, n, user))
            break;
        i = end;
    }
    free(values);
    if (script_rc == DCGM_ST_OK)
        *next = script_next;
    return script_rc;
}

static __typeof__(dcgmc_ptr_dcgmGetValuesSince_v2) script_saved;

static void script_begin(const script_record *records, int n, int rc, long long next)
{
    script = records;
    script_length = n;
    script_rc = rc;
    script_next = next;
    script_saved = __atomic_load_n(&dcgmc_ptr_dcgmGetValuesSince_v2, __ATOMIC_ACQUIRE);
    __atomic_store_n(&dcgmc_ptr_dcgmGetValuesSince_v2, scripted_values_since, __ATOMIC_RELEASE);
}

static void script_end(void)
{
    __atomic_store_n(&dcgmc_ptr_dcgmGetValuesSince_v2, script_saved, __ATOMIC_RELEASE);
}

#define I64(g, e, f, ts, v) { g, e, f, DCGM_FT_INT64, DCGM_ST_OK, ts, v, 0.0 }
#define DBL(g, e, f, ts, v) { g, e, f, DCGM_FT_DOUBLE, DCGM_ST_OK, ts, 0, v }
#define STATUS(g, e, f, st) { g, e, f, DCGM_FT_INT64, st, 0, DCGM_INT64_BLANK, 0.0 }
#define GPU DCGM_FE_GPU

static const script_record row_script[] = {
    I64(GPU, 0, 150, 10, 1), I64(GPU, 0, 150, 20, 2), I64(GPU, 0, 150, 30, 3),
    /* descending: a second run inside one series */
    DBL(GPU, 0, 155, 20, 2.5), DBL(GPU, 0, 155, 10, 1.5), DBL(GPU, 0, 155, 40, DCGM_FP64_BLANK),
    { GPU, 0, 50, DCGM_FT_STRING, DCGM_ST_OK, 10, 0, 0.0 },
    /* a timestamp no earlier series had, then ones they had */
    I64(GPU, 1, 150, 5, DCGM_INT64_NOT_SUPPORTED), I64(GPU, 1, 150, 20, 7),
    STATUS(GPU, 1, 150, DCGM_ST_NO_DATA),
    DBL(GPU, 1, 155, 30, DCGM_FP64_NOT_SUPPORTED), DBL(GPU, 1, 155, 35, NAN),
    STATUS(GPU, 1, 155, DCGM_ST_GPU_IS_LOST),
    I64(GPU, 2, 150, 10, 99), I64(GPU, 1, 200, 10, 98),
};

/* Rows the script makes: ts, then per series (g0/150 g1/150 g0/155 g1/155 g0/50) status and value. */
typedef struct want_row {
    int64_t ts;
    int8_t status[5];
    double value[5];
} want_row;

#define A DCGMC_SAMPLE_ABSENT
#define OK DCGMC_SAMPLE_OK
#define NS DCGMC_SAMPLE_NOT_SUPPORTED
#define BL DCGMC_SAMPLE_BLANK
static const want_row row_want[] = {
    { 5, { A, NS, A, A, A }, { 0, 0, 0, 0, 0 } },
    { 10, { OK, A, OK, A, A }, { 1, 0, 1.5, 0, 0 } },
    { 20, { OK, OK, OK, A, A }, { 2, 7, 2.5, 0, 0 } },
    { 30, { OK, A, A, NS, A }, { 3, 0, 0, 0, 0 } },
    { 35, { A, A, A, BL, A }, { 0, 0, 0, 0, 0 } },
    { 40, { A, A, BL, A, A }, { 0, 0, 0, 0, 0 } },
};
#undef A
#undef OK
#undef NS
#undef BL

static test_ring script_ring(int64_t capacity)
{
    int32_t groups[5] = { GPU, GPU, GPU, GPU, GPU };
    uint32_t entities[5] = { 0, 1, 0, 1, 0 };
    uint16_t fields[5] = { 150, 150, 155, 155, 50 };
    return ring_make(capacity, 5, groups, entities, fields);
}

static void check_want_rows(const rows *out, int64_t n, int64_t from_want)
{
    for (int64_t i = 0; i < n; i++) {
        const want_row *w = &row_want[from_want + i];
        CHECK(out->ts[i] == w->ts, "row %lld ts %lld, want %lld", (long long)i,
              (long long)out->ts[i], (long long)w->ts);
        for (int64_t s = 0; s < 5; s++) {
            double v = cell_value(out, i, s);
            CHECK(cell_status(out, i, s) == w->status[s] &&
                      (w->status[s] == DCGMC_SAMPLE_OK ? v == w->value[s] : isnan(v)),
                  "ts %lld series %lld: %d/%g, want %d/%g", (long long)w->ts, (long long)s,
                  cell_status(out, i, s), v, w->status[s], w->value[s]);
        }
    }
}

static void test_scripted_rows(void)
{
    int n_script = (int)(sizeof row_script / sizeof row_script[0]);
    int64_t n_rows = (int64_t)(sizeof row_want / sizeof row_want[0]);
    test_ring r = script_ring(8);
    rows out = rows_make(&r);
    dcgmc_drain_stats st;
    script_begin(row_script, n_script, DCGM_ST_OK, 1000);
    CHECK_RC(dcgmc_drain(r.native, EMB, 1, 1, 3, &st), DCGM_ST_OK);
    CHECK(st.next_cursor == 1000 && st.rows == n_rows && st.dropped_rows == 0 && st.late_rows == 0,
          "cursor %lld rows %lld dropped %lld late %lld", st.next_cursor, (long long)st.rows,
          (long long)st.dropped_rows, (long long)st.late_rows);
    CHECK(st.samples == 10 && st.blanks == 4 && st.unmapped == 3 && st.no_data == 1 &&
              st.errors == 1,
          "samples %lld blanks %lld unmapped %lld no_data %lld errors %lld",
          (long long)st.samples, (long long)st.blanks, (long long)st.unmapped,
          (long long)st.no_data, (long long)st.errors);
    CHECK_RC(rows_since(&r, 0, &out), n_rows);
    check_want_rows(&out, n_rows, 0);

    /* the same records again: every row is late, none lost */
    CHECK_RC(dcgmc_drain(r.native, EMB, 1, 1, 3, &st), DCGM_ST_OK);
    CHECK(st.rows == n_rows && st.late_rows == n_rows, "rows %lld late %lld",
          (long long)st.rows, (long long)st.late_rows);

    /* into a smaller ring: the newest rows, built the same */
    test_ring small = script_ring(3);
    rows small_out = rows_make(&small);
    CHECK_RC(dcgmc_drain(small.native, EMB, 1, 1, 3, &st), DCGM_ST_OK);
    CHECK(st.rows == 3 && st.dropped_rows == n_rows - 3, "rows %lld dropped %lld",
          (long long)st.rows, (long long)st.dropped_rows);
    CHECK_RC(rows_since(&small, 0, &small_out), 3);
    check_want_rows(&small_out, 3, n_rows - 3);

    /* DCGM fails after delivering records: nothing committed, the cursor kept */
    script_rc = DCGM_ST_GENERIC_ERROR;
    int64_t head = dcgmc_ring_head(small.native);
    CHECK_RC(dcgmc_drain(small.native, EMB, 1, 1, 3, &st), DCGM_ST_GENERIC_ERROR);
    CHECK(st.next_cursor == 3 && st.rows == 0 && dcgmc_ring_head(small.native) == head,
          "a failed read committed %lld rows", (long long)st.rows);
    script_rc = DCGM_ST_OK;

    int64_t count = 0;
    long long next = 0;
    CHECK_RC(dcgmc_count_since(EMB, 1, 1, 3, &next, &count), DCGM_ST_OK);
    CHECK(count == n_script && next == 1000, "count_since %lld", (long long)count);
    script_end();
    rows_destroy(&small_out);
    ring_destroy(&small);
    rows_destroy(&out);
    ring_destroy(&r);
}

static const script_record event_script[] = {
    I64(GPU, 1, 230, 50, 13),
    I64(GPU, 0, 230, 50, 48), I64(GPU, 0, 230, 40, 31), I64(GPU, 0, 240, 50, 5),
    I64(GPU, 0, 230, 60, DCGM_INT64_BLANK), STATUS(GPU, 0, 230, DCGM_ST_NO_DATA),
    STATUS(GPU, 0, 230, DCGM_ST_GENERIC_ERROR), DBL(GPU, 0, 155, 50, 1.0),
    I64(DCGM_FE_GPU_I, 0, 230, 50, 9),
};

/* Ascending ts, then entity group, entity, field. */
static const script_record event_want[] = {
    I64(GPU, 0, 230, 40, 31), I64(GPU, 0, 230, 50, 48), I64(GPU, 0, 240, 50, 5),
    I64(GPU, 1, 230, 50, 13), I64(DCGM_FE_GPU_I, 0, 230, 50, 9),
};

static void test_scripted_events(void)
{
    int64_t n_want = (int64_t)(sizeof event_want / sizeof event_want[0]);
    event_arrays arrays;
    dcgmc_events *ev = events_of_eight(&arrays);
    if (ev == NULL)
        return;
    dcgmc_drain_stats st;
    script_begin(event_script, (int)(sizeof event_script / sizeof event_script[0]), DCGM_ST_OK,
                 2000);
    CHECK_RC(dcgmc_drain_events(ev, EMB, 1, 1, 0, &st), DCGM_ST_OK);
    script_end();
    CHECK(st.rows == n_want && st.samples == n_want && st.blanks == 1 && st.no_data == 1 &&
              st.errors == 1 && st.unmapped == 1 && st.next_cursor == 2000,
          "rows %lld blanks %lld no_data %lld errors %lld unmapped %lld", (long long)st.rows,
          (long long)st.blanks, (long long)st.no_data, (long long)st.errors,
          (long long)st.unmapped);
    int64_t ots[8], ovalues[8], skipped = -1;
    int32_t ogroups[8];
    uint32_t oids[8];
    uint16_t ofields[8];
    CHECK_RC(dcgmc_events_copy(ev, 0, dcgmc_events_head(ev), ots, ogroups, oids, ofields,
                               ovalues, &skipped), n_want);
    for (int64_t i = 0; i < n_want && i < dcgmc_events_head(ev); i++) {
        const script_record *w = &event_want[i];
        CHECK(ots[i] == w->ts && ogroups[i] == w->group && oids[i] == w->entity &&
                  ofields[i] == w->field && ovalues[i] == w->i64,
              "event %lld: ts %lld %d/%u field %u value %lld", (long long)i, (long long)ots[i],
              ogroups[i], oids[i], ofields[i], (long long)ovalues[i]);
    }
    dcgmc_events_free(ev);
}

/* ---- bad arguments ----------------------------------------------------------- */

static void test_bad_ring_arguments(void)
{
    int64_t ts[4] = { 0 }, control[2] = { 0 };
    double values[8] = { 0 };
    int8_t status[8] = { 0 };
    int32_t groups[2] = { DCGM_FE_GPU, DCGM_FE_GPU };
    uint32_t entities[2] = { 0, 0 };
    uint16_t fields[2] = { 150, 155 }, same[2] = { 150, 150 };
    CHECK(!dcgmc_ring_new(NULL, values, status, control, 4, 2, groups, entities, fields, 4), "ts");
    CHECK(!dcgmc_ring_new(ts, NULL, status, control, 4, 2, groups, entities, fields, 4), "values");
    CHECK(!dcgmc_ring_new(ts, values, NULL, control, 4, 2, groups, entities, fields, 4), "status");
    CHECK(!dcgmc_ring_new(ts, values, status, NULL, 4, 2, groups, entities, fields, 4), "control");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 4, 2, NULL, entities, fields, 4), "groups");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 4, 2, groups, NULL, fields, 4), "entities");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 4, 2, groups, entities, NULL, 4), "fields");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 0, 2, groups, entities, fields, 4), "cap 0");
    CHECK(!dcgmc_ring_new(ts, values, status, control, -4, 2, groups, entities, fields, 4), "cap<0");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 4, 0, groups, entities, fields, 4), "0 series");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 4, -1, groups, entities, fields, 4), "<0 series");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 4, (int64_t)INT32_MAX + 1, groups, entities,
                          fields, 4), "series beyond int32");
    CHECK(!dcgmc_ring_new(ts, values, status, control, INT64_MAX, 2, groups, entities, fields, INT64_MAX),
          "capacity x series overflows");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 4, 2, groups, entities, same, 4),
          "the same series twice");
    dcgmc_ring_free(NULL);
    CHECK(dcgmc_ring_head(NULL) == 0, "head of NULL");

    test_ring r = pattern_ring(4);
    rows out = rows_make(&r);
    int64_t got = 0, first = -7, skipped = 0;
    CHECK(dcgmc_ring_newest_ts(NULL, &got) == 0 && dcgmc_ring_newest_ts(r.native, NULL) == 0,
          "newest_ts with NULL");
    dcgmc_drain_stats st;
    int64_t cts[2] = { 1, 2 };
    double cvalues[2 * CR_SERIES] = { 0 };
    int8_t cstatus[2 * CR_SERIES] = { 0 };
    CHECK_RC(dcgmc_ring_commit_rows(NULL, cts, cvalues, cstatus, 2, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, cts, cvalues, cstatus, -1, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, NULL, cvalues, cstatus, 2, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, cts, NULL, cstatus, 2, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, cts, cvalues, NULL, 2, NULL), DCGM_ST_BADPARAM);
    CHECK(dcgmc_ring_head(r.native) == 0, "a refused commit committed");
    CHECK(dcgmc_ring_find_since(NULL, 0, &first) == 0 && dcgmc_ring_find_since(r.native, 0, NULL) == 0,
          "find_since with NULL");
    CHECK_RC(dcgmc_ring_commit_rows(r.native, cts, cvalues, cstatus, 2, &st), DCGM_ST_OK);

    CHECK(dcgmc_ring_copy(NULL, 0, 2, out.ts, out.values, out.status, &skipped) == -1, "NULL ring");
    CHECK(dcgmc_ring_copy(r.native, 0, 2, out.ts, out.values, out.status, NULL) == -1, "NULL skipped");
    CHECK(dcgmc_ring_copy(r.native, 0, 2, NULL, out.values, out.status, &skipped) == -1, "NULL ts");
    CHECK(dcgmc_ring_copy(r.native, 0, 2, out.ts, NULL, out.status, &skipped) == -1, "NULL values");
    CHECK(dcgmc_ring_copy(r.native, 0, 2, out.ts, out.values, NULL, &skipped) == -1, "NULL status");
    CHECK(dcgmc_ring_copy(r.native, -1, 2, out.ts, out.values, out.status, &skipped) == -1, "first<0");
    CHECK(dcgmc_ring_copy(r.native, 2, 1, out.ts, out.values, out.status, &skipped) == -1, "first>end");
    CHECK(dcgmc_ring_copy(r.native, 0, 3, out.ts, out.values, out.status, &skipped) == -1, "end>head");
    CHECK(dcgmc_ring_copy(r.native, 1, 1, NULL, NULL, NULL, &skipped) == 0 && skipped == 0,
          "an empty range needs no buffers");

    /* another writer holding the ring */
    __atomic_store_n(&r.native->control.writing, 1, __ATOMIC_RELEASE);
    CHECK_RC(dcgmc_ring_commit_rows(r.native, cts, cvalues, cstatus, 2, &st), DCGM_ST_IN_USE);
    CHECK_RC(dcgmc_drain(r.native, EMB, 1, 1, 55, &st), DCGM_ST_IN_USE);
    CHECK(st.next_cursor == 55 && st.rows == 0, "IN_USE drain stats");
    __atomic_store_n(&r.native->control.writing, 0, __ATOMIC_RELEASE);
    CHECK(dcgmc_ring_head(r.native) == 2, "a refused writer committed");

    CHECK_RC(dcgmc_drain(NULL, EMB, 1, 1, 0, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_drain(r.native, EMB, 1, 1, 0, NULL), DCGM_ST_BADPARAM);
    rows_destroy(&out);
    ring_destroy(&r);
}

static void test_bad_event_arguments(void)
{
    int64_t ts[2] = { 0 }, values[2] = { 0 }, control[2] = { 0 };
    int32_t groups[2] = { 0 };
    uint32_t ids[2] = { 0 };
    uint16_t fields[2] = { 0 };
    CHECK(!dcgmc_events_new(NULL, groups, ids, fields, values, control, 2), "ts");
    CHECK(!dcgmc_events_new(ts, NULL, ids, fields, values, control, 2), "groups");
    CHECK(!dcgmc_events_new(ts, groups, NULL, fields, values, control, 2), "ids");
    CHECK(!dcgmc_events_new(ts, groups, ids, NULL, values, control, 2), "fields");
    CHECK(!dcgmc_events_new(ts, groups, ids, fields, NULL, control, 2), "values");
    CHECK(!dcgmc_events_new(ts, groups, ids, fields, values, NULL, 2), "control");
    CHECK(!dcgmc_events_new(ts, groups, ids, fields, values, control, 0), "capacity 0");
    CHECK(!dcgmc_events_new(ts, groups, ids, fields, values, control, -2), "capacity < 0");
    dcgmc_events_free(NULL);
    CHECK(dcgmc_events_head(NULL) == 0, "head of NULL");

    dcgmc_events *ev = dcgmc_events_new(ts, groups, ids, fields, values, control, 2);
    CHECK(ev != NULL, "events ring");
    if (ev == NULL)
        return;
    int64_t cts[1] = { 5 }, cvalues[1] = { 13 }, first = 0, skipped = 0;
    int32_t cgroups[1] = { DCGM_FE_GPU };
    uint32_t cids[1] = { 0 };
    uint16_t cfields[1] = { 230 };
    dcgmc_drain_stats st;
    CHECK_RC(dcgmc_events_commit(NULL, cts, cgroups, cids, cfields, cvalues, 1, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_events_commit(ev, cts, cgroups, cids, cfields, cvalues, -1, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_events_commit(ev, NULL, cgroups, cids, cfields, cvalues, 1, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_events_commit(ev, cts, NULL, cids, cfields, cvalues, 1, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_events_commit(ev, cts, cgroups, NULL, cfields, cvalues, 1, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_events_commit(ev, cts, cgroups, cids, NULL, cvalues, 1, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_events_commit(ev, cts, cgroups, cids, cfields, NULL, 1, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_events_commit(ev, NULL, NULL, NULL, NULL, NULL, 0, NULL), DCGM_ST_OK);
    CHECK(dcgmc_events_head(ev) == 0, "a refused commit committed");
    CHECK_RC(dcgmc_events_commit(ev, cts, cgroups, cids, cfields, cvalues, 1, NULL), DCGM_ST_OK);
    CHECK(dcgmc_events_find_since(NULL, 0, &first) == 0 && dcgmc_events_find_since(ev, 0, NULL) == 0,
          "find_since with NULL");
    int64_t ots[2], ovalues[2];
    int32_t ogroups[2];
    uint32_t oids[2];
    uint16_t ofields[2];
    CHECK(dcgmc_events_copy(NULL, 0, 1, ots, ogroups, oids, ofields, ovalues, &skipped) == -1, "NULL");
    CHECK(dcgmc_events_copy(ev, 0, 1, ots, ogroups, oids, ofields, ovalues, NULL) == -1, "skipped");
    CHECK(dcgmc_events_copy(ev, 0, 1, NULL, ogroups, oids, ofields, ovalues, &skipped) == -1, "ts");
    CHECK(dcgmc_events_copy(ev, 0, 1, ots, NULL, oids, ofields, ovalues, &skipped) == -1, "groups");
    CHECK(dcgmc_events_copy(ev, 0, 1, ots, ogroups, NULL, ofields, ovalues, &skipped) == -1, "ids");
    CHECK(dcgmc_events_copy(ev, 0, 1, ots, ogroups, oids, NULL, ovalues, &skipped) == -1, "fields");
    CHECK(dcgmc_events_copy(ev, 0, 1, ots, ogroups, oids, ofields, NULL, &skipped) == -1, "values");
    CHECK(dcgmc_events_copy(ev, 0, 2, ots, ogroups, oids, ofields, ovalues, &skipped) == -1, "end>head");
    CHECK(dcgmc_events_copy(ev, -1, 1, ots, ogroups, oids, ofields, ovalues, &skipped) == -1, "first<0");
    CHECK(dcgmc_events_copy(ev, 0, 1, ots, ogroups, oids, ofields, ovalues, &skipped) == 1 &&
              ots[0] == 5 && ovalues[0] == 13 && ofields[0] == 230,
          "the one committed event");
    CHECK_RC(dcgmc_drain_events(NULL, EMB, 1, 1, 0, &st), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_drain_events(ev, EMB, 1, 1, 0, NULL), DCGM_ST_BADPARAM);
    __atomic_store_n(&ev->control.writing, 1, __ATOMIC_RELEASE);
    CHECK_RC(dcgmc_drain_events(ev, EMB, 1, 1, 9, &st), DCGM_ST_IN_USE);
    CHECK_RC(dcgmc_events_commit(ev, cts, cgroups, cids, cfields, cvalues, 1, &st), DCGM_ST_IN_USE);
    __atomic_store_n(&ev->control.writing, 0, __ATOMIC_RELEASE);
    dcgmc_events_free(ev);
}

static void test_bad_dcgm_arguments(const engine *e)
{
    long long next = 0;
    int64_t count = 0;
    CHECK_RC(dcgmc_count_since(EMB, e->group, e->fields, 0, NULL, &count), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_count_since(EMB, e->group, e->fields, 0, &next, NULL), DCGM_ST_BADPARAM);
    dcgmc_records recs = { 0 };
    CHECK_RC(dcgmc_values_since(EMB, e->group, e->fields, 0, &next, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_values_since(EMB, e->group, e->fields, 0, NULL, &recs), DCGM_ST_BADPARAM);
    CHECK_RC(dcgmc_latest_values(EMB, e->group, e->fields, NULL), DCGM_ST_BADPARAM);
    dcgmc_records_free(NULL);
    dcgmc_records_free(&recs);

    /* DCGM refuses the read: its status, the cursor kept, nothing committed */
    test_ring r = engine_ring(e, 4);
    dcgmc_drain_stats st;
    int rc = dcgmc_drain(r.native, EMB, (dcgmGpuGrp_t)9999, e->fields, 42, &st);
    CHECK(rc != DCGM_ST_OK && st.next_cursor == 42 && st.rows == 0, "unknown group: rc %d", rc);
    rc = dcgmc_drain(r.native, EMB, e->group, (dcgmFieldGrp_t)9999, 42, &st);
    CHECK(rc != DCGM_ST_OK && st.next_cursor == 42, "unknown field group: rc %d", rc);
    rc = dcgmc_drain(r.native, (dcgmHandle_t)12345, e->group, e->fields, 42, &st);
    CHECK(rc != DCGM_ST_OK && st.next_cursor == 42, "unknown handle: rc %d", rc);
    CHECK(dcgmc_ring_head(r.native) == 0, "a refused drain committed rows");
    ring_destroy(&r);
}

/* ---- one writer, two readers ------------------------------------------------- */

#define RACE_BASE 1000

typedef struct race {
    test_ring ring;
    const engine *engine;       /* NULL: rows committed from the pattern */
    atomic_int stop;
    atomic_long reads, torn, rows_checked, refused;
} race;

/* Rows of a pattern ring: row number k always holds ts RACE_BASE + k. */
static void check_pattern_read(const rows *out, int64_t since)
{
    int64_t n = out->end - out->first;
    CHECK(out->valid >= 0 && out->skipped >= 0 && out->valid + out->skipped == n,
          "copy of %lld rows: valid %lld skipped %lld", (long long)n, (long long)out->valid,
          (long long)out->skipped);
    for (int64_t i = out->skipped; i < n; i++) {
        int64_t row = out->first + i;
        CHECK(out->ts[i] == RACE_BASE + row && out->ts[i] >= since,
              "row %lld holds ts %lld (since %lld)", (long long)row, (long long)out->ts[i],
              (long long)since);
        CHECK(row_matches_pattern(out, i), "row %lld (ts %lld) is torn", (long long)row,
              (long long)out->ts[i]);
    }
}

/* Rows of a drained ring: ascending, and every cell of a returned row complete. */
static void check_drained_read(const rows *out)
{
    int64_t n = out->end - out->first;
    CHECK(out->valid >= 0 && out->skipped >= 0 && out->valid + out->skipped == n,
          "copy of %lld rows: valid %lld skipped %lld", (long long)n, (long long)out->valid,
          (long long)out->skipped);
    for (int64_t i = out->skipped + 1; i < n; i++)
        CHECK(out->ts[i] > out->ts[i - 1], "rows not ascending at %lld", (long long)i);
    for (int64_t i = out->skipped; i < n; i++)
        for (int64_t s = 0; s < out->n_series; s++)
            CHECK(cell_status(out, i, s) == DCGMC_SAMPLE_OK && isfinite(cell_value(out, i, s)),
                  "row %lld series %lld returned half-written: status %d",
                  (long long)(out->first + i), (long long)s, cell_status(out, i, s));
}

static void *race_reader(void *arg)
{
    race *rc = arg;
    rows out = rows_make(&rc->ring);
    int64_t last_head = 0;
    for (long k = 0; !atomic_load(&rc->stop); k++) {
        int64_t since = 0, newest = 0;
        if ((k & 1) && dcgmc_ring_newest_ts(rc->ring.native, &newest))
            since = newest - 2;
        rows_since(&rc->ring, since, &out);
        CHECK(out.end >= last_head, "head went back: %lld after %lld", (long long)out.end,
              (long long)last_head);
        last_head = out.end;
        if (rc->engine == NULL)
            check_pattern_read(&out, since);
        else
            check_drained_read(&out);
        atomic_fetch_add(&rc->reads, 1);
        atomic_fetch_add(&rc->torn, out.skipped > 0);
        atomic_fetch_add(&rc->rows_checked, (long)out.valid);
        if (rc->engine != NULL)
            sleep_ms(1);
    }
    rows_destroy(&out);
    return NULL;
}

static void *race_pattern_writer(void *arg)
{
    race *rc = arg;
    int64_t ts[3];
    double values[3 * CR_SERIES];
    int8_t status[3 * CR_SERIES];
    int64_t next_ts = RACE_BASE;
    for (long k = 0; !atomic_load(&rc->stop); k++) {
        int64_t batch = 1 + k % 3;
        fill_pattern(next_ts, batch, ts, values, status);
        dcgmc_drain_stats st;
        int result = dcgmc_ring_commit_rows(rc->ring.native, ts, values, status, batch, &st);
        if (result == DCGM_ST_IN_USE) {
            atomic_fetch_add(&rc->refused, 1);
            continue; /* the intruder holds the ring; the same rows again */
        }
        CHECK_RC(result, DCGM_ST_OK);
        next_ts += batch;
        if (k % 64 == 0)
            sched_yield();
    }
    return NULL;
}

/* A second writer that commits nothing: it only contends for the ring. */
static void *race_intruder(void *arg)
{
    race *rc = arg;
    while (!atomic_load(&rc->stop)) {
        int result = dcgmc_ring_commit_rows(rc->ring.native, NULL, NULL, NULL, 0, NULL);
        CHECK(result == DCGM_ST_OK || result == DCGM_ST_IN_USE, "intruder got %d", result);
        sched_yield();
    }
    return NULL;
}

static void *race_drain_writer(void *arg)
{
    race *rc = arg;
    long long cursor = wall_us() - 300000;
    while (!atomic_load(&rc->stop)) {
        dcgmc_drain_stats st;
        CHECK_RC(dcgmc_drain(rc->ring.native, EMB, rc->engine->group, rc->engine->fields, cursor,
                             &st), DCGM_ST_OK);
        cursor = st.next_cursor;
        sleep_ms(15);
    }
    return NULL;
}

/* Runs the race for duration_ms, and longer (up to 20 s more) until the writer's
 * head passed min_head: under valgrind (threads serialised) or on a busy machine
 * the writer can get little time, and the checks need it to have written. */
static void run_race(race *rc, void *(*writer)(void *), int with_intruder, int duration_ms,
                     int64_t min_head)
{
    pthread_t threads[4];
    int n = 0;
    atomic_store(&rc->stop, 0);
    if (pthread_create(&threads[n], NULL, writer, rc) == 0)
        n++;
    for (int i = 0; i < 2; i++)
        if (pthread_create(&threads[n], NULL, race_reader, rc) == 0)
            n++;
    if (with_intruder && pthread_create(&threads[n], NULL, race_intruder, rc) == 0)
        n++;
    CHECK(n == 3 + with_intruder, "started %d threads", n);
    sleep_ms(duration_ms);
    for (int waited = 0; dcgmc_ring_head(rc->ring.native) <= min_head && waited < 20000; waited += 50)
        sleep_ms(50);
    atomic_store(&rc->stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
}

static void test_threads(const engine *e)
{
    race pattern = { .ring = pattern_ring(8) };
    run_race(&pattern, race_pattern_writer, 1, 400, 8);
    CHECK(dcgmc_ring_head(pattern.ring.native) > 8 && atomic_load(&pattern.reads) > 0 &&
              atomic_load(&pattern.rows_checked) > 0,
          "pattern race: head %lld, %ld reads", (long long)dcgmc_ring_head(pattern.ring.native),
          atomic_load(&pattern.reads));
    printf("  pattern race: %lld rows written, %ld reads (%ld torn), %ld rows checked, "
           "%ld commits refused\n",
           (long long)dcgmc_ring_head(pattern.ring.native), atomic_load(&pattern.reads),
           atomic_load(&pattern.torn), atomic_load(&pattern.rows_checked),
           atomic_load(&pattern.refused));
    ring_destroy(&pattern.ring);

    race drained = { .ring = engine_ring(e, 4), .engine = e };
    run_race(&drained, race_drain_writer, 0, 400, 1);
    CHECK(dcgmc_ring_head(drained.ring.native) >= 2 && atomic_load(&drained.reads) > 0,
          "drain race: head %lld, %ld reads", (long long)dcgmc_ring_head(drained.ring.native),
          atomic_load(&drained.reads));
    printf("  drain race: %lld rows drained, %ld reads (%ld torn), %ld rows checked\n",
           (long long)dcgmc_ring_head(drained.ring.native), atomic_load(&drained.reads),
           atomic_load(&drained.torn), atomic_load(&drained.rows_checked));
    ring_destroy(&drained.ring);
}

/* ---- events ---------------------------------------------------------------------- */

typedef struct test_events {
    int64_t capacity;
    int64_t *ts, *values, *control;
    int32_t *groups;
    uint32_t *ids;
    uint16_t *fields;
    dcgmc_events *native;
} test_events;

typedef struct event_rows {
    int64_t ts[16], values[16], valid, skipped;
    int32_t groups[16];
    uint32_t ids[16];
    uint16_t fields[16];
} event_rows;

static test_events events_make(int64_t capacity)
{
    test_events ev = { capacity, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    size_t n = (size_t)capacity;
    ev.ts = xcalloc(n, sizeof *ev.ts);
    ev.values = xcalloc(n, sizeof *ev.values);
    ev.control = xcalloc(2, sizeof *ev.control);
    ev.groups = xcalloc(n, sizeof *ev.groups);
    ev.ids = xcalloc(n, sizeof *ev.ids);
    ev.fields = xcalloc(n, sizeof *ev.fields);
    ev.native = dcgmc_events_new(ev.ts, ev.groups, ev.ids, ev.fields, ev.values, ev.control,
                                 capacity);
    CHECK(ev.native != NULL, "events ring of %lld", (long long)capacity);
    return ev;
}

static void events_destroy(test_events *ev)
{
    dcgmc_events_free(ev->native);
    free(ev->ts);
    free(ev->values);
    free(ev->control);
    free(ev->groups);
    free(ev->ids);
    free(ev->fields);
    memset(ev, 0, sizeof *ev);
}

static int64_t events_read_since(const test_events *ev, int64_t since, event_rows *out)
{
    int64_t first = -1;
    int64_t head = dcgmc_events_find_since(ev->native, since, &first);
    CHECK(head - first <= 16, "window of %lld events", (long long)(head - first));
    out->skipped = -1;
    out->valid = dcgmc_events_copy(ev->native, first, head, out->ts, out->groups, out->ids,
                                   out->fields, out->values, &out->skipped);
    return out->valid;
}

static const char xid_scenario[] =
    "seed = 7\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 2\nworkload = \"training\"\n"
    "[[event]]\nat = 0.2\ngpu = 0\nkind = \"xid\"\nxid = 13\ncount = 2\ninterval = 0.1\n"
    "[[event]]\nat = 0.3\ngpu = 1\nkind = \"xid\"\nxid = 48\n";

static void write_scenario(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fputs(xid_scenario, f);
    fclose(f);
}

typedef struct want_event {
    int64_t at_us;
    uint32_t gpu;
    int64_t xid;
} want_event;

/* Ordered by ts, then entity: what dcgmc_drain_events commits. */
static const want_event want_events[3] = { { 200000, 0, 13 }, { 300000, 0, 13 }, { 300000, 1, 48 } };

static void check_events(const event_rows *out, int64_t n, int from, long long t0)
{
    for (int64_t i = 0; i < n && from + i < 3; i++) {
        const want_event *w = &want_events[from + i];
        int64_t k = out->skipped + i;
        CHECK(out->ts[k] == t0 + w->at_us && out->ids[k] == w->gpu && out->values[k] == w->xid &&
                  out->groups[k] == DCGM_FE_GPU && out->fields[k] == 230,
              "event %lld: +%lld us gpu %u xid %lld field %u", (long long)i,
              (long long)(out->ts[k] - t0), out->ids[k], (long long)out->values[k],
              out->fields[k]);
    }
}

static void test_events_xid(void)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/test_drain_%d_xid.toml", (int)getpid());
    write_scenario(path);
    setenv("DCGM_SIM_SCENARIO", path, 1);
    dcgmHandle_t handle = 0;
    CHECK_RC(dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &handle), DCGM_ST_OK);
    unsetenv("DCGM_SIM_SCENARIO");
    remove(path);
    long long t0 = 0;
    CHECK_RC(dcgmSimGetStartTime(&t0), DCGM_ST_OK);
    dcgmGpuGrp_t group = 0;
    dcgmFieldGrp_t xid_fields = 0, power_fields = 0;
    unsigned short xid = 230, power = 155;
    CHECK_RC(dcgmGroupCreate(EMB, DCGM_GROUP_DEFAULT, "events", &group), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 1, &xid, "xid", &xid_fields), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupCreate(EMB, 1, &power, "power", &power_fields), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, group, xid_fields, 100000, 60.0, 0), DCGM_ST_OK);
    CHECK_RC(dcgmWatchFields(EMB, group, power_fields, 100000, 60.0, 0), DCGM_ST_OK);

    test_events ev = events_make(8);
    event_rows out;
    dcgmc_drain_stats st;
    long long cursor = 0;
    int64_t early = wall_us() - t0;
    CHECK_RC(dcgmc_drain_events(ev.native, EMB, group, xid_fields, cursor, &st), DCGM_ST_OK);
    if (early < 150000) /* a stalled machine may already be past the first XID */
        CHECK(st.rows == 0 && st.no_data == 2, "before any XID: rows %lld no_data %lld",
              (long long)st.rows, (long long)st.no_data);
    cursor = st.next_cursor;
    while (wall_us() - t0 < 600000)
        sleep_ms(20);
    CHECK_RC(dcgmc_drain_events(ev.native, EMB, group, xid_fields, cursor, &st), DCGM_ST_OK);
    cursor = st.next_cursor;
    CHECK(dcgmc_events_head(ev.native) == 3 && st.dropped_rows == 0 && st.late_rows == 0 &&
              st.errors == 0 && st.unmapped == 0,
          "head %lld dropped %lld late %lld", (long long)dcgmc_events_head(ev.native),
          (long long)st.dropped_rows, (long long)st.late_rows);
    CHECK_RC(events_read_since(&ev, 0, &out), 3);
    check_events(&out, 3, 0, t0);
    CHECK_RC(events_read_since(&ev, t0 + 300000, &out), 2);
    check_events(&out, 2, 1, t0);

    CHECK_RC(dcgmc_drain_events(ev.native, EMB, group, xid_fields, cursor, &st), DCGM_ST_OK);
    CHECK(st.rows == 0 && st.no_data == 2 && st.next_cursor >= cursor,
          "drained again: rows %lld no_data %lld", (long long)st.rows, (long long)st.no_data);

    /* a small ring keeps the newest events of one drain */
    test_events small = events_make(2);
    CHECK_RC(dcgmc_drain_events(small.native, EMB, group, xid_fields, 0, &st), DCGM_ST_OK);
    CHECK(st.rows == 2 && st.dropped_rows == 1, "rows %lld dropped %lld", (long long)st.rows,
          (long long)st.dropped_rows);
    CHECK_RC(events_read_since(&small, 0, &out), 2);
    check_events(&out, 2, 1, t0);

    /* a double field is no event */
    CHECK_RC(dcgmc_drain_events(small.native, EMB, group, power_fields, 0, &st), DCGM_ST_OK);
    CHECK(st.rows == 0 && st.unmapped >= 2, "power as events: rows %lld unmapped %lld",
          (long long)st.rows, (long long)st.unmapped);

    /* committed by hand: more than fits, and one late */
    int64_t cts[3] = { t0 + 400000, t0 + 500000, t0 + 100000 }, cvalues[3] = { 31, 32, 33 };
    int32_t cgroups[3] = { DCGM_FE_GPU, DCGM_FE_GPU, DCGM_FE_GPU };
    uint32_t cids[3] = { 1, 0, 1 };
    uint16_t cfields[3] = { 230, 230, 230 };
    CHECK_RC(dcgmc_events_commit(small.native, cts, cgroups, cids, cfields, cvalues, 3, &st),
             DCGM_ST_OK);
    CHECK(st.rows == 2 && st.dropped_rows == 1 && st.late_rows == 1, "rows %lld dropped %lld late %lld",
          (long long)st.rows, (long long)st.dropped_rows, (long long)st.late_rows);
    CHECK_RC(events_read_since(&small, 0, &out), 2);
    CHECK(out.ts[0] == cts[1] && out.values[0] == 32 && out.ts[1] == cts[2] && out.values[1] == 33,
          "committed events %lld %lld", (long long)out.values[0], (long long)out.values[1]);
    events_destroy(&small);
    events_destroy(&ev);
    CHECK_RC(dcgmFieldGroupDestroy(EMB, xid_fields), DCGM_ST_OK);
    CHECK_RC(dcgmFieldGroupDestroy(EMB, power_fields), DCGM_ST_OK);
    CHECK_RC(dcgmGroupDestroy(EMB, group), DCGM_ST_OK);
}

/* ---- teardown ------------------------------------------------------------------- */

static void test_unload(const char *dir)
{
    CHECK_RC(dcgmShutdown(), DCGM_ST_OK);
    dcgmc_unload();
    CHECK(!dcgmc_loaded() && dcgmc_loaded_path() == NULL, "still loaded after unload");
    CHECK(!dcgmc_has("dcgmInit"), "a pointer survived unload");
    CHECK_RC(dcgmInit(), DCGM_ST_FUNCTION_NOT_FOUND);
    dcgmc_unload(); /* twice is harmless */

    /* and the same library loads again, its state fresh */
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/libdcgm.so.4", dir);
    CHECK_RC(dcgmc_load(path, err, sizeof err), DCGM_ST_OK);
    CHECK_RC(dcgmInit(), DCGM_ST_OK);
    dcgmc_unload(); /* shuts the library down itself */
    CHECK(!dcgmc_loaded(), "still loaded after the second unload");
}

static void run(const char *name, void (*fn)(void))
{
    int before = failures;
    fn();
    printf("%-18s %s\n", name, failures == before ? "ok" : "FAILED");
    fflush(stdout);
}

static const engine *current;
static void run_sequence(void) { test_drain_sequence(current); }
static void run_wrap(void) { test_wrap_around(current); }
static void run_unmapped(void) { test_unmapped(current); }
static void run_mixed(void) { test_mixed_watches(current); }
static void run_many(void) { test_drain_many(current); }
static void run_ticker(void) { test_ticker(current); }
static void run_bad_dcgm(void) { test_bad_dcgm_arguments(current); }
static void run_threads(void) { test_threads(current); }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BUILD_DIR\n", argv[0]);
        return 2;
    }
    int64_t started = mono_ms();
    run("loader_unloaded", test_loader_unloaded);
    run("commit_rows", test_commit_rows);
    run("bad_ring_args", test_bad_ring_arguments);
    run("bad_event_args", test_bad_event_arguments);
    if (!test_loader_load(argv[1]))
        return 1;
    run("scripted_rows", test_scripted_rows);
    run("scripted_events", test_scripted_events);
    CHECK_RC(dcgmInit(), DCGM_ST_OK);
    engine e;
    if (engine_start(&e)) {
        current = &e;
        run("drain_sequence", run_sequence);
        run("wrap_around", run_wrap);
        run("unmapped", run_unmapped);
        run("mixed_watches", run_mixed);
        run("drain_many", run_many);
        run("ticker", run_ticker);
        run("bad_dcgm_args", run_bad_dcgm);
        run("threads", run_threads);
    }
    engine_forget(&e);
    CHECK_RC(dcgmStopEmbedded(EMB), DCGM_ST_OK);
    run("events_xid", test_events_xid);
    CHECK_RC(dcgmStopEmbedded(EMB), DCGM_ST_OK);
    test_unload(argv[1]);
    printf("%d checks, %d failures, %.1f s\n", atomic_load(&checks), atomic_load(&failures),
           (double)(mono_ms() - started) / 1000.0);
    return failures ? 1 : 0;
}
