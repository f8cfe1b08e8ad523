/*
 * ticker.h -- the sampler's ticks in C: sleep to each tick's deadline, drain.
 *
 * At 10 Hz most of a tick's cost is not the samples but waking up: the
 * interpreter's own work per tick (the loop, the drain's arguments and
 * results, the bookkeeping) costs as much as the drain itself.  A run of the
 * ticker does a stretch of ticks with no Python in between: each sleeps until
 * origin + k * interval on CLOCK_MONOTONIC (time.monotonic's clock), reads
 * one batch (dcgmc_drain_many) and adds what it did to the run's totals.  A
 * run ends with the first tick due at or after until_s or its max_ticks-th
 * ("bounded": the caller then does what that tick needs besides the drain,
 * such as its periodic side reads), when dcgmc_ticker_stop is called, or at
 * the first drain DCGM does not answer OK (that tick is not counted: nothing
 * of it was committed, so the caller runs it again its own way and repairs
 * what failed).
 *
 * The CDEF region is also read by dcgm_collector/ext/_build.py as cffi
 * declarations: keep it to plain typedefs, structs and prototypes.
 */
#ifndef DCGM_COLLECTOR_TICKER_H
#define DCGM_COLLECTOR_TICKER_H

#include <stdint.h>

#include "../dcgm_abi.h"
#include "drain.h"

/* CDEF-BEGIN */

typedef struct dcgmc_ticker dcgmc_ticker;

/* What one run did. */
typedef struct dcgmc_tick_totals {
    int64_t ticks;            /* ticks run, each one drain answered OK */
    int64_t skipped;          /* deadlines that passed while a tick ran, skipped */
    int64_t next_tick;        /* k of the tick due next */
    int64_t samples;          /* cells stored in the rings, blank ones included */
    int64_t blanks;           /* of those, the blank and not-supported ones */
    int64_t rows;             /* rows committed to the rings */
    int64_t events;           /* events committed to the event ring */
    int64_t newest_ts;        /* the newest row ts (µs) the run committed; 0 when none */
    long long cursor;         /* the cursor for the next drain */
    double last_tick_start_s; /* CLOCK_MONOTONIC when the run's last tick started */
    double last_tick_s;       /* how long the run's last tick took (0 when it ran none) */
    double last_tick_wall_s;  /* CLOCK_REALTIME when it ended, in seconds */
    int rc;                   /* DCGM's status of the drain that ended the run; 0 otherwise */
    int stopped;              /* 1 when dcgmc_ticker_stop ended it (or had been called before) */
    int bounded;              /* 1 when it ended with a tick due at or after until_s, or its max_ticks-th */
} dcgmc_tick_totals;

/* A ticker, not stopped; NULL when out of memory. */
dcgmc_ticker *dcgmc_ticker_new(void);
void dcgmc_ticker_free(dcgmc_ticker *ticker);

/* Ends the run under way at once (a drain in flight first returns) and every later one. */
void dcgmc_ticker_stop(dcgmc_ticker *ticker);

/*
 * Ticks first_tick, first_tick + 1, ... of the grid origin_s + k * interval_s
 * (a deadline that passed while a tick ran is skipped, not caught up), each a
 * dcgmc_drain_many of the rings and event ring from cursor on, at most
 * max_ticks of them; stats holds n_rings + 1 entries, the last tick's.
 * Returns totals->rc, or DCGM_ST_BADPARAM for bad arguments (nothing run).
 */
int dcgmc_ticker_run(dcgmc_ticker *ticker, dcgmc_ring *const *rings, int n_rings,
                     dcgmc_events *events, const unsigned short *event_fields, int n_event_fields,
                     dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                     long long cursor, double origin_s, double interval_s, int64_t first_tick,
                     int64_t max_ticks, double until_s, dcgmc_drain_stats *stats,
                     dcgmc_tick_totals *totals);

/* CDEF-END */

#endif
