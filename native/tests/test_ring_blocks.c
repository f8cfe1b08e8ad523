/*
 * test_ring_blocks.c -- rings with a compressed tier (ring_blocks.h): every
 * row committed reads back exactly, from the arrays or from the blocks, the
 * ring holds its retention and no more than a block beyond it, searches by
 * time cross from the arrays into the blocks, and readers racing a writer
 * only ever lose a leading run of rows, never see a wrong one.
 */
#define CHECK_FROM_THREADS
#include "../ext/loader.c"
#include "../ext/ring.c"
#include "../ext/ring_blocks.c"
#include "../ext/block_codec.c"

#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#define SERIES 3
#define ARRAY_ROWS (2 * DCGMC_RING_BLOCK_ROWS)
#define RETENTION 2000
#define TS_BASE 1000000
#define TS_STEP 100

typedef struct tiered {
    int64_t *ts, *control;
    double *values;
    int8_t *status;
    dcgmc_ring *native;
} tiered;

static tiered tiered_make(int64_t retention)
{
    static const int32_t groups[SERIES] = { 1, 1, 1 };
    static const uint32_t entities[SERIES] = { 0, 0, 1 };
    static const uint16_t fields[SERIES] = { 150, 155, 150 };
    tiered t;
    t.ts = calloc(ARRAY_ROWS, sizeof *t.ts);
    t.control = calloc(2, sizeof *t.control);
    t.values = calloc(ARRAY_ROWS * SERIES, sizeof *t.values);
    t.status = calloc(ARRAY_ROWS * SERIES, sizeof *t.status);
    t.native = dcgmc_ring_new(t.ts, t.values, t.status, t.control, ARRAY_ROWS, SERIES, groups, entities,
                              fields, retention);
    CHECK(t.native != NULL, "a ring of %d rows keeping %lld", ARRAY_ROWS, (long long)retention);
    return t;
}

static void tiered_free(tiered *t)
{
    dcgmc_ring_free(t->native);
    free(t->ts);
    free(t->control);
    free(t->values);
    free(t->status);
}

/* Row k: ts from k; series 0 a slow temperature, 1 a power reading with a blank every 7th row,
 * 2 ABSENT on odd rows (another watch's instant). */
static int64_t row_ts(int64_t k)
{
    return TS_BASE + k * TS_STEP + (k * 7919) % 37;
}

static void row_cells(int64_t k, double *values, int8_t *status)
{
    values[0] = 60 + (double)((k / 50) % 5);
    status[0] = DCGMC_SAMPLE_OK;
    values[1] = 300.0 + (double)((k * 2654435761u) % 100000) / 1000.0;
    status[1] = k % 7 == 3 ? DCGMC_SAMPLE_BLANK : DCGMC_SAMPLE_OK;
    values[2] = (double)(k * 3);
    status[2] = k % 2 ? DCGMC_SAMPLE_ABSENT : DCGMC_SAMPLE_OK;
}

static int commit(tiered *t, int64_t first, int64_t n)
{
    int64_t *ts = malloc((size_t)n * sizeof *ts);
    double *values = malloc((size_t)n * SERIES * sizeof *values);
    int8_t *status = malloc((size_t)n * SERIES * sizeof *status);
    for (int64_t i = 0; i < n; i++) {
        ts[i] = row_ts(first + i);
        row_cells(first + i, values + i * SERIES, status + i * SERIES);
    }
    dcgmc_drain_stats st;
    int rc = dcgmc_ring_commit_rows(t->native, ts, values, status, n, &st);
    free(ts);
    free(values);
    free(status);
    return rc;
}

/* Rows [first, end) copied: valid ones match their row exactly; returns how many were skipped. */
static int64_t check_copy(const tiered *t, int64_t first, int64_t end, int64_t shift)
{
    int64_t n = end - first;
    int64_t *ts = malloc((size_t)(n ? n : 1) * sizeof *ts);
    double *values = malloc((size_t)(n ? n : 1) * SERIES * sizeof *values);
    int8_t *status = malloc((size_t)(n ? n : 1) * SERIES * sizeof *status);
    int64_t skipped = -1;
    int64_t valid = dcgmc_ring_copy(t->native, first, end, ts, values, status, &skipped);
    CHECK(valid >= 0 && valid + skipped == n, "copy [%lld, %lld): %lld valid, %lld skipped", (long long)first,
          (long long)end, (long long)valid, (long long)skipped);
    for (int64_t i = skipped < 0 ? n : skipped; i < n; i++) {
        int64_t k = first + i + shift;
        double want_v[SERIES];
        int8_t want_s[SERIES];
        row_cells(k, want_v, want_s);
        CHECK(ts[i] == row_ts(k), "row %lld: ts %lld", (long long)k, (long long)ts[i]);
        for (int s = 0; s < SERIES; s++) {
            int8_t st = status[i * SERIES + s];
            double v = values[i * SERIES + s];
            CHECK(st == want_s[s], "row %lld series %d: status %d, want %d", (long long)k, s, st, want_s[s]);
            CHECK(st == DCGMC_SAMPLE_OK ? memcmp(&v, &want_v[s], sizeof v) == 0 : isnan(v),
                  "row %lld series %d: %.17g, want %.17g", (long long)k, s, v, want_v[s]);
        }
    }
    free(ts);
    free(values);
    free(status);
    return skipped;
}

static void test_every_row_reads_back(void)
{
    printf("tiered ring: rows read back exactly from arrays and blocks, retention held\n");
    tiered t = tiered_make(RETENTION);
    static const int64_t batches[] = { 1, 7, 300, 2, 1500, 1, 1, 513, 4000, 3, 256, 255, 1 };
    int64_t next = 0, shift = 0;
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
        CHECK_RC(commit(&t, next, batches[b]), DCGM_ST_OK);
        next += batches[b];
        int64_t rows = dcgmc_ring_head(t.native);
        /* a catch-up longer than the retention keeps its newest rows, numbered on from the head */
        shift = next - rows;
        int64_t oldest = dcgmc_ring_oldest_row(t.native);
        CHECK(rows - oldest >= (rows < RETENTION ? rows : RETENTION), "holds %lld of %lld rows",
              (long long)(rows - oldest), (long long)rows);
        CHECK(rows - oldest < RETENTION + DCGMC_RING_BLOCK_ROWS + ARRAY_ROWS, "holds %lld rows",
              (long long)(rows - oldest));
        CHECK(check_copy(&t, oldest > rows - RETENTION ? oldest : rows - RETENTION, rows, shift) == 0,
              "a quiet ring tore rows");
    }
    tiered_free(&t);
}

static void test_find_since_crosses_into_blocks(void)
{
    printf("tiered ring: a search by time goes on from the arrays into the blocks\n");
    tiered t = tiered_make(RETENTION);
    for (int64_t k = 0; k < 3000; k += 10)
        CHECK_RC(commit(&t, k, 10), DCGM_ST_OK);
    int64_t head = dcgmc_ring_head(t.native), oldest = dcgmc_ring_oldest_row(t.native);
    for (int64_t want = oldest; want < head; want += 97) {
        int64_t first = -1;
        CHECK(dcgmc_ring_find_since(t.native, row_ts(want), &first) == head, "head");
        CHECK(first == want, "since row %lld's ts: first %lld", (long long)want, (long long)first);
        first = -1;
        dcgmc_ring_find_since(t.native, row_ts(want) - 1, &first);
        CHECK(first == want, "since just before row %lld's ts: first %lld", (long long)want, (long long)first);
    }
    int64_t first = -1;
    dcgmc_ring_find_since(t.native, 0, &first);
    CHECK(first == oldest, "since 0: %lld, oldest %lld", (long long)first, (long long)oldest);
    dcgmc_ring_find_since(t.native, row_ts(0), &first);
    CHECK(first == oldest, "since before the oldest held: %lld", (long long)first);
    int64_t held = dcgmc_ring_samples_held(t.native), want = 0;
    for (int64_t k = oldest; k < head; k++)
        want += 2 + (k % 2 == 0);
    CHECK(held == want, "samples held %lld, want %lld", (long long)held, (long long)want);
    CHECK(dcgmc_ring_block_bytes(t.native) > 0, "no block bytes");
    tiered_free(&t);
}

typedef struct race {
    tiered t;
    atomic_int stop;
    atomic_long reads, torn, rows_checked;
} race;

static void *race_writer(void *arg)
{
    race *r = arg;
    for (int64_t k = 0; !atomic_load(&r->stop);) {
        int64_t n = 1 + k % 3;
        CHECK_RC(commit(&r->t, k, n), DCGM_ST_OK);
        k += n;
    }
    return NULL;
}

static void *race_reader(void *arg)
{
    race *r = arg;
    for (long i = 0; !atomic_load(&r->stop); i++) {
        /* the oldest first: read after the head, it could be past it */
        int64_t oldest = dcgmc_ring_oldest_row(r->t.native), head = dcgmc_ring_head(r->t.native);
        if (head == 0)
            continue;
        /* the oldest rows (the ones a writer drops next), a middle run, or the newest */
        int64_t first = i % 3 == 0 ? oldest : (i % 3 == 1 ? oldest + (head - oldest) / 2 : head - 5);
        first = first < oldest ? oldest : first;
        int64_t end = first + 700 < head ? first + 700 : head;
        int64_t skipped = check_copy(&r->t, first, end, 0);
        atomic_fetch_add(&r->reads, 1);
        atomic_fetch_add(&r->torn, skipped > 0);
        atomic_fetch_add(&r->rows_checked, (long)(end - first - skipped));
    }
    return NULL;
}

static void test_readers_racing_a_writer(void)
{
    printf("tiered ring: readers racing a writer lose only leading rows\n");
    race r = { .t = tiered_make(RETENTION) };
    pthread_t writer, readers[2];
    pthread_create(&writer, NULL, race_writer, &r);
    for (int i = 0; i < 2; i++)
        pthread_create(&readers[i], NULL, race_reader, &r);
    /* 1.5 s of racing, then on until the readers have read enough: under valgrind, which runs one thread at
     * a time, on a busy machine the writer can have the whole 1.5 s (0 reads, 1.2 M rows written, seen) */
    int64_t started = mono_ms();
    sleep_ms(1500);
    while ((atomic_load(&r.reads) <= 10 || atomic_load(&r.rows_checked) <= 1000) && mono_ms() - started < 60000)
        sleep_ms(50);
    atomic_store(&r.stop, 1);
    pthread_join(writer, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(readers[i], NULL);
    printf("  %ld reads, %ld with torn leading rows, %ld rows checked, %lld rows written\n",
           atomic_load(&r.reads), atomic_load(&r.torn), atomic_load(&r.rows_checked),
           (long long)dcgmc_ring_head(r.t.native));
    CHECK(atomic_load(&r.reads) > 10 && atomic_load(&r.rows_checked) > 1000, "the race did not run");
    tiered_free(&r.t);
}

static void test_bad_tiered_arguments(void)
{
    printf("tiered ring: a retention past the arrays needs arrays of two blocks\n");
    int64_t ts[8] = { 0 }, control[2] = { 0 };
    double values[8] = { 0 };
    int8_t status[8] = { 0 };
    int32_t groups[1] = { 1 };
    uint32_t entities[1] = { 0 };
    uint16_t fields[1] = { 150 };
    CHECK(!dcgmc_ring_new(ts, values, status, control, 8, 1, groups, entities, fields, 100), "8 rows, 100 kept");
    CHECK(!dcgmc_ring_new(ts, values, status, control, 8, 1, groups, entities, fields, 4), "retention < rows");
    int64_t skipped;
    CHECK(dcgmc_ring_oldest_row(NULL) == 0 && dcgmc_ring_block_bytes(NULL) == 0 &&
          dcgmc_ring_samples_held(NULL) == 0, "NULL ring");
    tiered t = tiered_make(RETENTION);
    CHECK(dcgmc_ring_copy(t.native, 0, 1, ts, values, status, &skipped) == -1, "copy past the head");
    CHECK(dcgmc_ring_copy(t.native, 2, 1, ts, values, status, &skipped) == -1, "first after end");
    tiered_free(&t);
}

int main(void)
{
    test_every_row_reads_back();
    test_find_since_crosses_into_blocks();
    test_readers_racing_a_writer();
    test_bad_tiered_arguments();
    printf("%d checks, %d failures\n", (int)checks, (int)failures);
    return failures != 0;
}
