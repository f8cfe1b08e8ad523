/*
 * ring_internal.h -- what ring.c and drain.c share about a ring's insides.
 *
 * ring.c owns the rings: their layout, the publication protocol (ring.h),
 * commits and copies.  drain.c fills a ring's staging buffers from DCGM's
 * enumeration callbacks and asks ring.c to turn them into committed rows.
 * Nothing here is part of the extension's interface to Python.
 */
#ifndef DCGM_COLLECTOR_RING_INTERNAL_H
#define DCGM_COLLECTOR_RING_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ring.h"
#include "ring_blocks.h"

/* Staging above this many entries is given back after a small drain, so one
 * catch-up read of the whole retention does not pin its memory forever. */
#ifndef STAGING_KEEP
#define STAGING_KEEP 65536
#endif

/* Staging starts this large: a drain of a few GPUs stages about this many records. */
#define STAGING_FIRST 1024

/* The control words of a ring's publication protocol, and its writer flag. */
typedef struct ring_control {
    int64_t *words;     /* [0] rows committed, [1] rows reserved */
    int64_t capacity;
    int writing;        /* 1 while a writer holds the ring */
} ring_control;

typedef struct staged_cell {
    int64_t ts;
    double value;
    int32_t series;
    int8_t status;
} staged_cell;

struct dcgmc_ring {
    ring_control control;
    int64_t *ts;
    double *values;
    int8_t *status;
    int64_t n_series;
    int64_t newest_ts;          /* newest ts ever committed; writer only */
    int has_rows;
    /* series lookup: series_of[entity slot * n_fields + field slot], -1 for none */
    int32_t *entity_groups;
    uint32_t *entity_ids;
    size_t n_entities;
    uint16_t *field_ids;
    size_t n_fields;
    int32_t *series_of;
    /* staging, reused from drain to drain; writer only */
    staged_cell *cells;
    size_t n_cells, cells_capacity;
    int64_t *times, *merged;    /* distinct timestamps, ascending; merge buffer */
    size_t times_capacity;
    /* the older rows, compressed (ring_blocks.h); NULL when the arrays hold the whole retention */
    ring_blocks *blocks;
    int64_t retention;          /* rows the ring holds at least (the arrays' capacity without blocks) */
};

typedef struct staged_event {
    int64_t ts;
    int64_t value;
    uint32_t entity_id;
    int32_t entity_group;
    uint16_t field_id;
} staged_event;

struct dcgmc_events {
    ring_control control;
    int64_t *ts;
    int32_t *entity_groups;
    uint32_t *entity_ids;
    uint16_t *field_ids;
    int64_t *values;
    int64_t newest_ts;
    int has_entries;
    staged_event *staged;
    size_t n_staged, staged_capacity;
};

static inline void clear_stats(dcgmc_drain_stats *stats, long long cursor)
{
    memset(stats, 0, sizeof *stats);
    stats->next_cursor = cursor;
}

static inline size_t ring_slot_of_entity(const dcgmc_ring *ring, int32_t group, uint32_t id)
{
    for (size_t i = 0; i < ring->n_entities; i++)
        if (ring->entity_groups[i] == group && ring->entity_ids[i] == id)
            return i;
    return SIZE_MAX;
}

static inline size_t ring_slot_of_field(const dcgmc_ring *ring, uint16_t field, size_t guess)
{
    if (guess < ring->n_fields && ring->field_ids[guess] == field)
        return guess;
    if (guess + 1 < ring->n_fields && ring->field_ids[guess + 1] == field)
        return guess + 1;
    for (size_t i = 0; i < ring->n_fields; i++)
        if (ring->field_ids[i] == field)
            return i;
    return SIZE_MAX;
}

/* ---- ring.c, for drain.c ---------------------------------------------------- */

/* 1 when the caller became the ring's only writer; 0 when another thread writes. */
int ring_control_begin_write(ring_control *c);
void ring_control_end_write(ring_control *c);

/* A staging block of at least needed items (see dcgmc_grow_block); 0 when it cannot grow. */
int ring_grow_staging(void *items, size_t *capacity, size_t needed, size_t item_size, void **out);

/*
 * With the ring held for writing: the staged cells become rows, one per
 * distinct timestamp, committed in ascending ts (the newest capacity of
 * them).  0 when the buffers for that could not grow; nothing is committed.
 */
int ring_commit_staged(dcgmc_ring *ring, dcgmc_drain_stats *stats);

/* With the ring held for writing: what ring_commit_staged needs, allocated; 0 when it could not
 * be.  After it, ring_commit_staged of the same staged cells cannot fail. */
int ring_prepare_commit(dcgmc_ring *ring);

/* With the ring held for writing: empty staging, giving back most of a large block. */
void ring_trim_staging(dcgmc_ring *ring);

/* With the event ring held for writing: commit staged[0..n), the newest capacity of them,
 * in the order given. */
void ring_commit_events(dcgmc_events *events, const staged_event *staged, int64_t n,
                        dcgmc_drain_stats *stats);

/* With the event ring held for writing: empty staging, giving back most of a large block. */
void ring_trim_events(dcgmc_events *events);

#endif /* DCGM_COLLECTOR_RING_INTERNAL_H */
