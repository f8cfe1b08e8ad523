/*
 * ring.c -- ring buffers over caller-owned arrays, and their publication
 * protocol (ring.h): commits by the one writer, copies by any reader.
 *
 * The rows a drain (drain.c) staged are committed here too: one row per
 * distinct timestamp, so a row some series missed keeps ABSENT cells for
 * them.  Nothing here touches a Python object, so the extension runs it
 * with the GIL released.
 */
#define _GNU_SOURCE
#include "ring.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../dcgm_abi.h"
#include "loader.h"
#include "ring_internal.h"

/* ---- the publication protocol, shared by sample rings and event rings ---- */

int ring_control_begin_write(ring_control *c)
{
    return __atomic_exchange_n(&c->writing, 1, __ATOMIC_ACQUIRE) == 0;
}

void ring_control_end_write(ring_control *c)
{
    __atomic_store_n(&c->writing, 0, __ATOMIC_RELEASE);
}

/* Announce rows head..head+n-1 before any of them is written; returns head. */
static int64_t control_reserve(ring_control *c, int64_t n)
{
    int64_t head = __atomic_load_n(&c->words[0], __ATOMIC_RELAXED);
    __atomic_store_n(&c->words[1], head + n, __ATOMIC_RELAXED);
    /* keeps the row stores that follow from becoming visible before the reservation */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return head;
}

static void control_publish(ring_control *c, int64_t head)
{
    __atomic_store_n(&c->words[0], head, __ATOMIC_RELEASE);
}

static int64_t control_head(const ring_control *c)
{
    return __atomic_load_n(&c->words[0], __ATOMIC_ACQUIRE);
}

/* Scan back from the newest row while ts >= since; returns the head scanned from. */
static int64_t control_find_since(const ring_control *c, const int64_t *ts, int64_t since,
                                  int64_t *first)
{
    int64_t head = control_head(c);
    int64_t oldest = head > c->capacity ? head - c->capacity : 0;
    int64_t row = head;
    if (since <= 0) {
        row = oldest;
    } else {
        /* an overwritten row only ever holds a newer ts, so it can only make
         * the scan go further back; the copy drops such rows afterwards */
        while (row > oldest &&
               __atomic_load_n(&ts[(row - 1) % c->capacity], __ATOMIC_RELAXED) >= since)
            row--;
    }
    *first = row;
    return head;
}

static int control_range_ok(const ring_control *c, int64_t first, int64_t end)
{
    return first >= 0 && first <= end && end - first <= c->capacity && end <= control_head(c);
}

/* After copying rows [first, end): how many leading rows may have been overwritten. */
static int64_t control_torn_prefix(const ring_control *c, int64_t first, int64_t end)
{
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    int64_t reserved = __atomic_load_n(&c->words[1], __ATOMIC_RELAXED);
    int64_t safe_from = reserved - c->capacity;
    if (safe_from <= first)
        return 0;
    return safe_from < end ? safe_from - first : end - first;
}

/* ---- growable scratch ---------------------------------------------------- */

int ring_grow_staging(void *items, size_t *capacity, size_t needed, size_t item_size, void **out)
{
    return dcgmc_grow_block(items, capacity, needed, item_size, STAGING_FIRST, out);
}

/* items cut back to STAGING_KEEP entries (or left as they are if realloc fails). */
static void *shrink_block(void *items, size_t *capacity, size_t item_size)
{
    void *smaller = realloc(items, STAGING_KEEP * item_size);
    if (smaller == NULL)
        return items; /* keeping the larger block is harmless */
    *capacity = STAGING_KEEP;
    return smaller;
}

/* ---- sample rings ----------------------------------------------------------- */

/* Distinct entities and fields of the series, and the table from both slots to a series. */
static int ring_build_lookup(dcgmc_ring *ring, const int32_t *groups, const uint32_t *ids,
                             const uint16_t *fields)
{
    size_t n = (size_t)ring->n_series;
    ring->entity_groups = malloc(n * sizeof *ring->entity_groups);
    ring->entity_ids = malloc(n * sizeof *ring->entity_ids);
    ring->field_ids = malloc(n * sizeof *ring->field_ids);
    if (!ring->entity_groups || !ring->entity_ids || !ring->field_ids)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (ring_slot_of_entity(ring, groups[i], ids[i]) == SIZE_MAX) {
            ring->entity_groups[ring->n_entities] = groups[i];
            ring->entity_ids[ring->n_entities++] = ids[i];
        }
        if (ring_slot_of_field(ring, fields[i], 0) == SIZE_MAX)
            ring->field_ids[ring->n_fields++] = fields[i];
    }
    if (ring->n_fields != 0 && ring->n_entities > SIZE_MAX / sizeof(int32_t) / ring->n_fields)
        return 0;
    size_t cells = ring->n_entities * ring->n_fields;
    ring->series_of = malloc(cells * sizeof *ring->series_of);
    if (!ring->series_of)
        return 0;
    for (size_t i = 0; i < cells; i++)
        ring->series_of[i] = -1;
    for (size_t i = 0; i < n; i++) {
        size_t at = ring_slot_of_entity(ring, groups[i], ids[i]) * ring->n_fields +
                    ring_slot_of_field(ring, fields[i], 0);
        if (ring->series_of[at] != -1)
            return 0; /* the same series twice */
        ring->series_of[at] = (int32_t)i;
    }
    return 1;
}

dcgmc_ring *dcgmc_ring_new(int64_t *ts, double *values, int8_t *status, int64_t *control,
                           int64_t capacity, int64_t n_series, const int32_t *series_groups,
                           const uint32_t *series_entities, const uint16_t *series_fields,
                           int64_t retention)
{
    if (!ts || !values || !status || !control || !series_groups || !series_entities ||
        !series_fields || capacity <= 0 || n_series <= 0 || n_series > INT32_MAX ||
        capacity > INT64_MAX / n_series || retention < capacity ||
        (retention > capacity && capacity != 2 * DCGMC_RING_BLOCK_ROWS))
        return NULL;
    dcgmc_ring *ring = calloc(1, sizeof *ring);
    if (ring == NULL)
        return NULL;
    ring->control.words = control;
    ring->control.capacity = capacity;
    ring->ts = ts;
    ring->values = values;
    ring->status = status;
    ring->n_series = n_series;
    ring->retention = retention;
    if (retention > capacity) {
        int64_t block_rows = DCGMC_RING_BLOCK_ROWS;
        ring->blocks = ring_blocks_new(n_series, block_rows, (retention + block_rows - 1) / block_rows);
        if (ring->blocks == NULL) {
            dcgmc_ring_free(ring);
            return NULL;
        }
    }
    if (!ring_build_lookup(ring, series_groups, series_entities, series_fields)) {
        dcgmc_ring_free(ring);
        return NULL;
    }
    return ring;
}

void dcgmc_ring_free(dcgmc_ring *ring)
{
    if (ring == NULL)
        return;
    free(ring->entity_groups);
    free(ring->entity_ids);
    free(ring->field_ids);
    free(ring->series_of);
    free(ring->cells);
    free(ring->times);
    free(ring->merged);
    ring_blocks_free(ring->blocks);
    free(ring);
}

int64_t dcgmc_ring_head(const dcgmc_ring *ring)
{
    return ring ? control_head(&ring->control) : 0;
}

int64_t dcgmc_ring_oldest_row(const dcgmc_ring *ring)
{
    if (ring == NULL)
        return 0;
    int64_t head = control_head(&ring->control);
    int64_t capacity = ring->control.capacity;
    if (head <= capacity)
        return 0;
    if (ring->blocks != NULL)   /* the blocks reach further back than the arrays once past them */
        return ring_blocks_oldest(ring->blocks) * ring->blocks->rows_per_block;
    return head - capacity;
}

int64_t dcgmc_ring_block_bytes(const dcgmc_ring *ring)
{
    return ring != NULL && ring->blocks != NULL ? ring_blocks_bytes(ring->blocks) : 0;
}

int64_t dcgmc_ring_summaries(const dcgmc_ring *ring, int64_t first_block, int64_t end_block, double *min,
                             double *max, double *sum, int64_t *count, int64_t *min_ts, int64_t *max_ts)
{
    if (ring == NULL || ring->blocks == NULL || first_block < 0 || first_block > end_block)
        return -1;
    int64_t n = end_block - first_block, n_series = ring->n_series;
    if (n == 0)
        return 0;
    if (!min || !max || !sum || !count || !min_ts || !max_ts)
        return -1;
    block_summary *out = malloc((size_t)n * (size_t)n_series * sizeof *out);
    if (out == NULL)
        return -1;
    int64_t torn = ring_blocks_summaries(ring->blocks, first_block, end_block, out, min_ts, max_ts);
    for (int64_t i = 0; i < n * n_series; i++) {
        min[i] = out[i].min;
        max[i] = out[i].max;
        sum[i] = out[i].sum;
        count[i] = out[i].count;
    }
    free(out);
    return torn;
}

void dcgmc_ring_encoded(const dcgmc_ring *ring, int64_t *bytes, int64_t *samples)
{
    int64_t b = 0, n = 0;
    if (ring != NULL && ring->blocks != NULL) {
        b = __atomic_load_n(&ring->blocks->live_words, __ATOMIC_RELAXED) * 8;
        n = ring_blocks_samples(ring->blocks);
    }
    if (bytes != NULL)
        *bytes = b;
    if (samples != NULL)
        *samples = n;
}

int64_t dcgmc_ring_samples_held(const dcgmc_ring *ring)
{
    if (ring == NULL)
        return 0;
    int64_t head = control_head(&ring->control);
    int64_t from = head > ring->control.capacity ? head - ring->control.capacity : 0;
    int64_t held = 0;
    if (ring->blocks != NULL) {
        int64_t sealed_rows = ring_blocks_sealed(ring->blocks) * ring->blocks->rows_per_block;
        from = sealed_rows > from ? sealed_rows : from;
        held = ring_blocks_samples(ring->blocks);
    }
    /* the rows not in a block yet: an estimate while a writer runs, which is all a gauge needs */
    for (int64_t row = from; row < head; row++) {
        const int8_t *status = ring->status + (row % ring->control.capacity) * ring->n_series;
        for (int64_t s = 0; s < ring->n_series; s++)
            held += __atomic_load_n(&status[s], __ATOMIC_RELAXED) != DCGMC_SAMPLE_ABSENT;
    }
    return held;
}

int dcgmc_ring_newest_ts(const dcgmc_ring *ring, int64_t *ts)
{
    if (ring == NULL || ts == NULL)
        return 0;
    int64_t head = control_head(&ring->control);
    if (head == 0)
        return 0;
    *ts = __atomic_load_n(&ring->ts[(head - 1) % ring->control.capacity], __ATOMIC_RELAXED);
    return control_torn_prefix(&ring->control, head - 1, head) == 0;
}

/* -- writing rows -- */

static void store_cell(dcgmc_ring *ring, int64_t position, int64_t series, double value,
                       int8_t status)
{
    int64_t at = position * ring->n_series + series;
    if (status != DCGMC_SAMPLE_OK)
        value = NAN;
    __atomic_store(&ring->values[at], &value, __ATOMIC_RELAXED);
    __atomic_store_n(&ring->status[at], status, __ATOMIC_RELAXED);
}

static void store_empty_row(dcgmc_ring *ring, int64_t position, int64_t ts)
{
    __atomic_store_n(&ring->ts[position], ts, __ATOMIC_RELAXED);
    for (int64_t s = 0; s < ring->n_series; s++)
        store_cell(ring, position, s, NAN, DCGMC_SAMPLE_ABSENT);
}

/* Late: not newer than the newest row committed before it (the ring then
 * holds rows out of ts order, see dcgmc_ring_find_since). */
static void count_late_rows(dcgmc_ring *ring, const int64_t *times, int64_t n,
                            dcgmc_drain_stats *stats)
{
    for (int64_t i = 0; i < n; i++) {
        if (ring->has_rows && times[i] <= ring->newest_ts)
            stats->late_rows++;
        else
            ring->newest_ts = times[i];
        ring->has_rows = 1;
    }
}

static void count_cell(int8_t status, dcgmc_drain_stats *stats)
{
    stats->samples++;
    if (status != DCGMC_SAMPLE_OK)
        stats->blanks++;
}

/* With the ring held for writing: every complete block of rows its arrays hold goes to the blocks. */
static int seal_blocks(dcgmc_ring *ring)
{
    ring_blocks *blocks = ring->blocks;
    if (blocks == NULL)
        return 1;
    int64_t rows = blocks->rows_per_block, head = ring->control.words[0];
    for (int64_t block = blocks->sealed; (block + 1) * rows <= head; block++) {
        int64_t position = (block * rows) % ring->control.capacity;   /* a block never wraps: capacity is 2 blocks */
        if (!ring_blocks_seal(blocks, ring->ts + position, ring->values + position * ring->n_series,
                              ring->status + position * ring->n_series))
            return 0;
    }
    return 1;
}

/* How many more rows the arrays take before one not yet in a block would be overwritten. */
static int64_t room(const dcgmc_ring *ring)
{
    if (ring->blocks == NULL)
        return ring->control.capacity;
    int64_t sealed_rows = ring->blocks->sealed * ring->blocks->rows_per_block;
    return sealed_rows + ring->control.capacity - ring->control.words[0];
}

int dcgmc_ring_commit_rows(dcgmc_ring *ring, const int64_t *ts, const double *values,
                           const int8_t *status, int64_t n_rows, dcgmc_drain_stats *stats)
{
    dcgmc_drain_stats local;
    stats = stats ? stats : &local;
    clear_stats(stats, 0);
    if (ring == NULL || n_rows < 0 || (n_rows > 0 && (!ts || !values || !status)))
        return DCGM_ST_BADPARAM;
    if (!ring_control_begin_write(&ring->control))
        return DCGM_ST_IN_USE;
    int64_t keep = n_rows < ring->retention ? n_rows : ring->retention;
    int64_t skip = n_rows - keep;
    count_late_rows(ring, ts, n_rows, stats);
    int rc = DCGM_ST_OK;
    for (int64_t done = 0; done < keep;) {
        if (room(ring) <= 0 && !seal_blocks(ring)) {   /* an earlier seal ran out of memory */
            rc = DCGM_ST_MEMORY;
            keep = done;
            break;
        }
        int64_t chunk = keep - done < room(ring) ? keep - done : room(ring);
        int64_t head = control_reserve(&ring->control, chunk);
        for (int64_t r = 0; r < chunk; r++) {
            int64_t position = (head + r) % ring->control.capacity;
            const double *row_values = values + (skip + done + r) * ring->n_series;
            const int8_t *row_status = status + (skip + done + r) * ring->n_series;
            __atomic_store_n(&ring->ts[position], ts[skip + done + r], __ATOMIC_RELAXED);
            for (int64_t s = 0; s < ring->n_series; s++) {
                store_cell(ring, position, s, row_values[s], row_status[s]);
                if (row_status[s] != DCGMC_SAMPLE_ABSENT)
                    count_cell(row_status[s], stats);
            }
        }
        control_publish(&ring->control, head + chunk);
        done += chunk;
        if (!seal_blocks(ring)) {
            rc = DCGM_ST_MEMORY;
            keep = done;
            break;
        }
    }
    ring_control_end_write(&ring->control);
    stats->rows = keep;
    stats->dropped_rows = skip;
    return rc;
}

/* -- reading rows -- */

int64_t dcgmc_ring_find_since(const dcgmc_ring *ring, int64_t since, int64_t *first)
{
    if (ring == NULL || first == NULL)
        return 0;
    int64_t head = control_find_since(&ring->control, ring->ts, since, first);
    int64_t capacity = ring->control.capacity;
    if (ring->blocks == NULL || head <= capacity || *first > head - capacity)
        return head;
    /* the scan reached the arrays' oldest row: it goes on in the blocks */
    *first = since <= 0 ? dcgmc_ring_oldest_row(ring) : ring_blocks_find_since(ring->blocks, *first, since);
    return head;
}

static void load_row(const dcgmc_ring *ring, int64_t position, int64_t *ts_out,
                     double *values_out, int8_t *status_out)
{
    *ts_out = __atomic_load_n(&ring->ts[position], __ATOMIC_RELAXED);
    const double *values = ring->values + position * ring->n_series;
    const int8_t *status = ring->status + position * ring->n_series;
    for (int64_t s = 0; s < ring->n_series; s++) {
        __atomic_load(&values[s], &values_out[s], __ATOMIC_RELAXED);
        status_out[s] = __atomic_load_n(&status[s], __ATOMIC_RELAXED);
    }
}

int64_t dcgmc_ring_copy(const dcgmc_ring *ring, int64_t first, int64_t end, int64_t *ts_out,
                        double *values_out, int8_t *status_out, int64_t *skipped)
{
    if (ring == NULL || skipped == NULL || first < 0 || first > end)
        return -1;
    int64_t head = control_head(&ring->control), capacity = ring->control.capacity;
    if (end > head || (ring->blocks == NULL && end - first > capacity))
        return -1;
    if (end > first && (!ts_out || !values_out || !status_out))
        return -1;
    int64_t n_series = ring->n_series;
    /* the newest rows from the arrays, those before them from the blocks */
    int64_t split = head > capacity ? head - capacity : 0;
    split = split < first ? first : (split > end ? end : split);
    for (int64_t row = split; row < end; row++) {
        int64_t i = row - first;
        load_row(ring, row % capacity, &ts_out[i], values_out + i * n_series, status_out + i * n_series);
    }
    int64_t torn = control_torn_prefix(&ring->control, split, end);
    if (ring->blocks == NULL) {
        *skipped = split - first + torn;
    } else {
        /* rows overwritten in the arrays while copied were in a block before */
        int64_t gone = ring_blocks_copy(ring->blocks, first, split + torn, ts_out, values_out, status_out);
        if (gone < 0)
            return -1;
        *skipped = gone;
    }
    return end - first - *skipped;
}

/* -- rows from the cells a drain staged -- */

/* End of the run of strictly increasing timestamps that starts at cell i. */
static size_t run_end(const dcgmc_ring *ring, size_t i)
{
    size_t j = i + 1;
    while (j < ring->n_cells && ring->cells[j].ts > ring->cells[j - 1].ts)
        j++;
    return j;
}

static size_t lower_bound(const int64_t *times, size_t n, int64_t ts)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (times[mid] < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int run_is_known(const dcgmc_ring *ring, size_t n_times, size_t from, size_t to)
{
    size_t t = lower_bound(ring->times, n_times, ring->cells[from].ts);
    for (size_t i = from; i < to; i++) {
        while (t < n_times && ring->times[t] < ring->cells[i].ts)
            t++;
        if (t == n_times || ring->times[t] != ring->cells[i].ts)
            return 0;
    }
    return 1;
}

/* Merge one run's timestamps into the distinct sorted set; returns its new size. */
static size_t merge_run(dcgmc_ring *ring, size_t n_times, size_t from, size_t to)
{
    size_t a = 0, b = from, out = 0;
    while (a < n_times || b < to) {
        int64_t next;
        if (b == to || (a < n_times && ring->times[a] < ring->cells[b].ts))
            next = ring->times[a++];
        else if (a == n_times || ring->cells[b].ts < ring->times[a])
            next = ring->cells[b++].ts;
        else {
            next = ring->times[a++];
            b++;
        }
        ring->merged[out++] = next;
    }
    int64_t *swap = ring->times;
    ring->times = ring->merged;
    ring->merged = swap;
    return out;
}

/* Every distinct staged timestamp, ascending, in ring->times; returns how many. */
static int64_t distinct_times(dcgmc_ring *ring)
{
    size_t n_times = 0;
    for (size_t i = 0; i < ring->n_cells;) {
        size_t end = run_end(ring, i);
        if (!run_is_known(ring, n_times, i, end))
            n_times = merge_run(ring, n_times, i, end);
        i = end;
    }
    return (int64_t)n_times;
}

/* The staged cells of times [from, to) into the rows from head on. */
static void place_cells(dcgmc_ring *ring, int64_t from, int64_t to, int64_t head, dcgmc_drain_stats *stats)
{
    int64_t capacity = ring->control.capacity;
    for (size_t i = 0; i < ring->n_cells;) {
        size_t end = run_end(ring, i);
        size_t t = lower_bound(ring->times, (size_t)to, ring->cells[i].ts);
        for (; i < end; i++) {
            const staged_cell *cell = &ring->cells[i];
            while ((int64_t)t < to && ring->times[t] < cell->ts)
                t++;
            if ((int64_t)t < from || (int64_t)t >= to)
                continue;
            int64_t position = (head + (int64_t)t - from) % capacity;
            store_cell(ring, position, cell->series, cell->value, cell->status);
            count_cell(cell->status, stats);
        }
    }
}

/* times_capacity is what both time buffers hold at least: they swap roles while merging. */
static int reserve_times(dcgmc_ring *ring)
{
    size_t times = ring->times_capacity, merged = ring->times_capacity;
    void *block;
    if (!ring_grow_staging(ring->times, &times, ring->n_cells, sizeof *ring->times, &block))
        return 0;
    ring->times = block;
    if (!ring_grow_staging(ring->merged, &merged, ring->n_cells, sizeof *ring->merged, &block))
        return 0;
    ring->merged = block;
    ring->times_capacity = times < merged ? times : merged;
    return 1;
}

int ring_prepare_commit(dcgmc_ring *ring)
{
    return reserve_times(ring);
}

int ring_commit_staged(dcgmc_ring *ring, dcgmc_drain_stats *stats)
{
    if (!reserve_times(ring))
        return 0;
    int64_t n_times = distinct_times(ring);
    int64_t capacity = ring->control.capacity;
    int64_t keep = n_times < ring->retention ? n_times : ring->retention;
    int64_t first_kept = n_times - keep;
    count_late_rows(ring, ring->times, n_times, stats);
    /* in runs the arrays take without overwriting a row not yet in a block (one run almost always) */
    for (int64_t from = first_kept; from < n_times;) {
        if (room(ring) <= 0 && !seal_blocks(ring))
            break;
        int64_t to = n_times - from < room(ring) ? n_times : from + room(ring);
        int64_t head = control_reserve(&ring->control, to - from);
        for (int64_t r = 0; r < to - from; r++)
            store_empty_row(ring, (head + r) % capacity, ring->times[from + r]);
        place_cells(ring, from, to, head, stats);
        control_publish(&ring->control, head + (to - from));
        stats->rows += to - from;
        from = to;
        if (!seal_blocks(ring))
            break;
    }
    stats->dropped_rows = first_kept;
    return 1;
}

void ring_trim_staging(dcgmc_ring *ring)
{
    if (ring->cells_capacity > STAGING_KEEP && ring->n_cells < ring->cells_capacity / 4) {
        ring->cells = shrink_block(ring->cells, &ring->cells_capacity, sizeof *ring->cells);
        if (ring->times_capacity > STAGING_KEEP) {
            size_t times = ring->times_capacity, merged = ring->times_capacity;
            ring->times = shrink_block(ring->times, &times, sizeof *ring->times);
            ring->merged = shrink_block(ring->merged, &merged, sizeof *ring->merged);
            ring->times_capacity = times < merged ? times : merged;
        }
    }
    ring->n_cells = 0;
}

/* ---- event rings ------------------------------------------------------------- */

dcgmc_events *dcgmc_events_new(int64_t *ts, int32_t *entity_groups, uint32_t *entity_ids,
                               uint16_t *field_ids, int64_t *values, int64_t *control,
                               int64_t capacity)
{
    if (!ts || !entity_groups || !entity_ids || !field_ids || !values || !control || capacity <= 0)
        return NULL;
    dcgmc_events *events = calloc(1, sizeof *events);
    if (events == NULL)
        return NULL;
    events->control.words = control;
    events->control.capacity = capacity;
    events->ts = ts;
    events->entity_groups = entity_groups;
    events->entity_ids = entity_ids;
    events->field_ids = field_ids;
    events->values = values;
    return events;
}

void dcgmc_events_free(dcgmc_events *events)
{
    if (events == NULL)
        return;
    free(events->staged);
    free(events);
}

int64_t dcgmc_events_head(const dcgmc_events *events)
{
    return events ? control_head(&events->control) : 0;
}

static void store_event(dcgmc_events *events, int64_t position, const staged_event *e)
{
    __atomic_store_n(&events->ts[position], e->ts, __ATOMIC_RELAXED);
    __atomic_store_n(&events->entity_groups[position], e->entity_group, __ATOMIC_RELAXED);
    __atomic_store_n(&events->entity_ids[position], e->entity_id, __ATOMIC_RELAXED);
    __atomic_store_n(&events->field_ids[position], e->field_id, __ATOMIC_RELAXED);
    __atomic_store_n(&events->values[position], e->value, __ATOMIC_RELAXED);
}

/* Events may share a timestamp; only one older than an event already committed is late. */
static void count_late_events(dcgmc_events *events, const staged_event *staged, int64_t n,
                              dcgmc_drain_stats *stats)
{
    for (int64_t i = 0; i < n; i++) {
        if (events->has_entries && staged[i].ts < events->newest_ts)
            stats->late_rows++;
        else
            events->newest_ts = staged[i].ts;
        events->has_entries = 1;
    }
}

/* Commit staged[0..n): the newest capacity of them, in the order given. */
void ring_commit_events(dcgmc_events *events, const staged_event *staged, int64_t n,
                        dcgmc_drain_stats *stats)
{
    int64_t capacity = events->control.capacity;
    int64_t keep = n < capacity ? n : capacity;
    count_late_events(events, staged, n, stats);
    int64_t head = control_reserve(&events->control, keep);
    for (int64_t i = 0; i < keep; i++)
        store_event(events, (head + i) % capacity, &staged[n - keep + i]);
    control_publish(&events->control, head + keep);
    stats->samples = stats->rows = keep;
    stats->dropped_rows = n - keep;
}

int dcgmc_events_commit(dcgmc_events *events, const int64_t *ts, const int32_t *entity_groups,
                        const uint32_t *entity_ids, const uint16_t *field_ids,
                        const int64_t *values, int64_t n, dcgmc_drain_stats *stats)
{
    dcgmc_drain_stats local;
    stats = stats ? stats : &local;
    clear_stats(stats, 0);
    if (events == NULL || n < 0 ||
        (n > 0 && (!ts || !entity_groups || !entity_ids || !field_ids || !values)))
        return DCGM_ST_BADPARAM;
    if ((uint64_t)n > SIZE_MAX / sizeof(staged_event))
        return DCGM_ST_MEMORY;
    staged_event *staged = malloc((n > 0 ? (size_t)n : 1) * sizeof *staged);
    if (staged == NULL)
        return DCGM_ST_MEMORY;
    for (int64_t i = 0; i < n; i++)
        staged[i] = (staged_event){ ts[i], values[i], entity_ids[i], entity_groups[i], field_ids[i] };
    int rc = DCGM_ST_IN_USE;
    if (ring_control_begin_write(&events->control)) {
        ring_commit_events(events, staged, n, stats);
        ring_control_end_write(&events->control);
        rc = DCGM_ST_OK;
    }
    free(staged);
    return rc;
}

int64_t dcgmc_events_find_since(const dcgmc_events *events, int64_t since, int64_t *first)
{
    if (events == NULL || first == NULL)
        return 0;
    return control_find_since(&events->control, events->ts, since, first);
}

int64_t dcgmc_events_copy(const dcgmc_events *events, int64_t first, int64_t end, int64_t *ts_out,
                          int32_t *groups_out, uint32_t *entities_out, uint16_t *fields_out,
                          int64_t *values_out, int64_t *skipped)
{
    if (events == NULL || skipped == NULL || !control_range_ok(&events->control, first, end))
        return -1;
    if (end > first && (!ts_out || !groups_out || !entities_out || !fields_out || !values_out))
        return -1;
    for (int64_t row = first; row < end; row++) {
        int64_t p = row % events->control.capacity, i = row - first;
        ts_out[i] = __atomic_load_n(&events->ts[p], __ATOMIC_RELAXED);
        groups_out[i] = __atomic_load_n(&events->entity_groups[p], __ATOMIC_RELAXED);
        entities_out[i] = __atomic_load_n(&events->entity_ids[p], __ATOMIC_RELAXED);
        fields_out[i] = __atomic_load_n(&events->field_ids[p], __ATOMIC_RELAXED);
        values_out[i] = __atomic_load_n(&events->values[p], __ATOMIC_RELAXED);
    }
    *skipped = control_torn_prefix(&events->control, first, end);
    return end - first - *skipped;
}

void ring_trim_events(dcgmc_events *events)
{
    if (events->staged_capacity > STAGING_KEEP && events->n_staged < events->staged_capacity / 4)
        events->staged = shrink_block(events->staged, &events->staged_capacity, sizeof *events->staged);
    events->n_staged = 0;
}
