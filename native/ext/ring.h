/*
 * ring.h -- ring buffers of DCGM samples over caller-owned arrays.
 *
 * A ring holds rows of samples that share one DCGM timestamp (DCGM stamps
 * every sample of one update pass with the pass's time).  Its arrays belong
 * to the caller (numpy, in dcgm_collector/rings/ring.py); the native ring only
 * keeps pointers to them, the series lookup and a staging buffer that the
 * drain (drain.h) reuses from one drain to the next.  An event ring holds
 * one entry per event instead of rows.
 *
 * Publication protocol (one writer, any number of readers):
 *   control[0]  rows committed ("head"), control[1]  rows reserved.
 *   Row number k lives at position k % capacity.
 *   Writer: reserved = head + n; release fence; write rows head..head+n-1;
 *           head = reserved (release store).
 *   Reader: h = head (acquire); copy rows; acquire fence; r = reserved.
 *           Rows numbered below r - capacity may have been overwritten while
 *           they were copied and are dropped from the result.
 * So a reader never returns a row another thread was writing, without locks.
 * Every access to the shared arrays is an __atomic load or store, so the
 * races the protocol tolerates are not undefined behaviour.
 *
 * The CDEF region is also read by dcgm_collector/ext/_build.py as cffi
 * declarations: keep it to plain typedefs, structs and prototypes.
 */
#ifndef DCGM_COLLECTOR_RING_H
#define DCGM_COLLECTOR_RING_H

#include <stdint.h>

/* CDEF-BEGIN */

/* Per-cell status, stored in the ring's int8 status array. */
#define DCGMC_SAMPLE_OK 0
#define DCGMC_SAMPLE_BLANK 1
#define DCGMC_SAMPLE_NOT_SUPPORTED 2
#define DCGMC_SAMPLE_ABSENT 3

typedef struct dcgmc_ring dcgmc_ring;
typedef struct dcgmc_events dcgmc_events;

/* What one drain (or commit) did; every counter is for this call only. */
typedef struct dcgmc_drain_stats {
    long long next_cursor;  /* DCGM's nextSinceTimestamp; the given cursor unless rc is OK */
    int64_t samples;        /* cells (or events) stored, blank ones included */
    int64_t rows;           /* rows (or events) committed to the ring */
    int64_t no_data;        /* NO_DATA records: nothing new for that (entity, field) */
    int64_t blanks;         /* stored cells that are BLANK or NOT_SUPPORTED (events: blank records skipped) */
    int64_t unmapped;       /* records of no series of this ring, or of a non-numeric type */
    int64_t errors;         /* other non-OK per-record statuses (not stored) */
    int64_t dropped_rows;   /* rows of this call beyond the ring's capacity (the oldest ones) */
    int64_t late_rows;      /* rows whose ts is not after the newest row already committed */
} dcgmc_drain_stats;

/* Rows in a compressed block (ring_blocks.h); a ring whose retention is
 * longer than two blocks keeps only its newest two blocks' worth of rows in
 * its arrays and the older rows compressed. */
#define DCGMC_RING_BLOCK_ROWS 256

/*
 * A ring over caller-owned arrays: ts[capacity], values[capacity * n_series]
 * (row-major), status[capacity * n_series], control[2] (zeroed by the
 * caller).  Series i is (series_groups[i], series_entities[i],
 * series_fields[i]); the three arrays are copied.  retention: the rows the
 * ring holds at least; equal to capacity, or, for a compressed ring, more,
 * with capacity exactly 2 * DCGMC_RING_BLOCK_ROWS.  NULL on a bad argument
 * or out of memory.  The arrays must outlive the ring.
 */
dcgmc_ring *dcgmc_ring_new(int64_t *ts, double *values, int8_t *status, int64_t *control,
                           int64_t capacity, int64_t n_series, const int32_t *series_groups,
                           const uint32_t *series_entities, const uint16_t *series_fields,
                           int64_t retention);
void dcgmc_ring_free(dcgmc_ring *ring);

/* Rows ever committed. */
int64_t dcgmc_ring_head(const dcgmc_ring *ring);

/* The number of the oldest row the ring still holds (the head when it holds none). */
int64_t dcgmc_ring_oldest_row(const dcgmc_ring *ring);

/* Bytes of the compressed blocks held (the arrays' bytes not included), and
 * the cells held that are not ABSENT, in blocks and arrays together. */
int64_t dcgmc_ring_block_bytes(const dcgmc_ring *ring);
int64_t dcgmc_ring_samples_held(const dcgmc_ring *ring);

/*
 * Per-series statistics of the OK cells of compressed blocks [first_block,
 * end_block) (block k holds rows [k * DCGMC_RING_BLOCK_ROWS, (k + 1) *
 * DCGMC_RING_BLOCK_ROWS)), each block's row of n_series columns in min,
 * max, sum (NaN, NaN, 0 where a block has no OK cell) and count, and its
 * least and greatest ts.  Returns how many leading blocks are not valid
 * (dropped or never sealed), or -1 on a bad argument (a ring without blocks).
 */
int64_t dcgmc_ring_summaries(const dcgmc_ring *ring, int64_t first_block, int64_t end_block, double *min,
                             double *max, double *sum, int64_t *count, int64_t *min_ts, int64_t *max_ts);

/* The encoded bytes of the blocks held and the cells in them that are not ABSENT
 * (what the compression achieves, without the blocks' index and summaries). */
void dcgmc_ring_encoded(const dcgmc_ring *ring, int64_t *bytes, int64_t *samples);

/* ts of the newest row into *ts: 1, or 0 when the ring has no row (or a writer lapped the read). */
int dcgmc_ring_newest_ts(const dcgmc_ring *ring, int64_t *ts);

/*
 * Commit n_rows rows given by the caller (ts ascending, values and status
 * row-major with n_series columns).  A cell whose status is not OK is stored
 * as NaN.  Returns DCGM_ST_OK, DCGM_ST_BADPARAM, or DCGM_ST_IN_USE when
 * another thread is writing this ring.  stats may be NULL.
 */
int dcgmc_ring_commit_rows(dcgmc_ring *ring, const int64_t *ts, const double *values,
                           const int8_t *status, int64_t n_rows, dcgmc_drain_stats *stats);

/*
 * The newest run of rows with ts >= since (since <= 0: every row held):
 * scanning back from the newest row, it stops at the first older one.
 * Sets *first to the first such row number and returns the head at the time
 * of the scan, so rows [*first, head) are the answer to copy.
 */
int64_t dcgmc_ring_find_since(const dcgmc_ring *ring, int64_t since, int64_t *first);

/*
 * Copy rows [first, end) into ts_out[end - first], values_out and
 * status_out (n_series columns each), oldest first.  Rows overwritten while
 * copying are dropped: *skipped leading output rows are not valid.  Returns
 * the number of valid rows (from ts_out[*skipped] on), or -1 on a bad
 * argument.
 */
int64_t dcgmc_ring_copy(const dcgmc_ring *ring, int64_t first, int64_t end, int64_t *ts_out,
                        double *values_out, int8_t *status_out, int64_t *skipped);

/* An event ring: ts, entity group, entity id, field id, int64 value per entry. */
dcgmc_events *dcgmc_events_new(int64_t *ts, int32_t *entity_groups, uint32_t *entity_ids,
                               uint16_t *field_ids, int64_t *values, int64_t *control,
                               int64_t capacity);
void dcgmc_events_free(dcgmc_events *events);
int64_t dcgmc_events_head(const dcgmc_events *events);
int dcgmc_events_commit(dcgmc_events *events, const int64_t *ts, const int32_t *entity_groups,
                        const uint32_t *entity_ids, const uint16_t *field_ids,
                        const int64_t *values, int64_t n, dcgmc_drain_stats *stats);
int64_t dcgmc_events_find_since(const dcgmc_events *events, int64_t since, int64_t *first);
int64_t dcgmc_events_copy(const dcgmc_events *events, int64_t first, int64_t end, int64_t *ts_out,
                          int32_t *groups_out, uint32_t *entities_out, uint16_t *fields_out,
                          int64_t *values_out, int64_t *skipped);

/* CDEF-END */

#endif /* DCGM_COLLECTOR_RING_H */
