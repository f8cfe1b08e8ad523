/*
 * ticker.c -- runs of sampler ticks with no Python in between (ticker.h).
 */
#define _GNU_SOURCE
#include "ticker.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ring_internal.h"

struct dcgmc_ticker {
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* signalled by a stop; waited on with CLOCK_MONOTONIC deadlines */
    int stopped;
};

dcgmc_ticker *dcgmc_ticker_new(void)
{
    dcgmc_ticker *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) {
        free(t);
        return NULL;
    }
    int ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
             pthread_cond_init(&t->wake, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok) {
        free(t);
        return NULL;
    }
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        pthread_cond_destroy(&t->wake);
        free(t);
        return NULL;
    }
    return t;
}

void dcgmc_ticker_free(dcgmc_ticker *t)
{
    if (t == NULL)
        return;
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void dcgmc_ticker_stop(dcgmc_ticker *t)
{
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->lock);
    t->stopped = 1;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
}

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps until CLOCK_MONOTONIC reaches deadline_s; 0 when stopped instead. */
static int sleep_until(dcgmc_ticker *t, double deadline_s)
{
    double whole = floor(deadline_s);
    struct timespec at = { (time_t)whole, (long)((deadline_s - whole) * 1e9) };
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->lock);
    while (!t->stopped && clock_s(CLOCK_MONOTONIC) < deadline_s)
        if (pthread_cond_timedwait(&t->wake, &t->lock, &at) != 0 && clock_s(CLOCK_MONOTONIC) >= deadline_s)
            break;
    int running = !t->stopped;
    pthread_mutex_unlock(&t->lock);
    return running;
}

static int is_stopped(dcgmc_ticker *t)
{
    pthread_mutex_lock(&t->lock);
    int stopped = t->stopped;
    pthread_mutex_unlock(&t->lock);
    return stopped;
}

/* What one good tick did, into the totals. */
static void add_tick(dcgmc_tick_totals *totals, dcgmc_ring *const *rings, int n_rings,
                     const dcgmc_events *events, const dcgmc_drain_stats *stats)
{
    for (int i = 0; i < n_rings; i++) {
        totals->samples += stats[i].samples;
        totals->blanks += stats[i].blanks;
        totals->rows += stats[i].rows;
        if (stats[i].rows > 0 && rings[i]->has_rows && rings[i]->newest_ts > totals->newest_ts)
            totals->newest_ts = rings[i]->newest_ts;
    }
    if (events != NULL)
        totals->events += stats[n_rings].rows;
    totals->ticks++;
}

int dcgmc_ticker_run(dcgmc_ticker *t, dcgmc_ring *const *rings, int n_rings,
                     dcgmc_events *events, const unsigned short *event_fields, int n_event_fields,
                     dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                     long long cursor, double origin_s, double interval_s, int64_t first_tick,
                     int64_t max_ticks, double until_s, dcgmc_drain_stats *stats,
                     dcgmc_tick_totals *totals)
{
    if (totals == NULL)
        return DCGM_ST_BADPARAM;
    memset(totals, 0, sizeof *totals);   /* totals->rc stays 0 for arguments refused here */
    if (t == NULL || stats == NULL || !(interval_s > 0) || !isfinite(origin_s) || isnan(until_s) ||
        first_tick < 0 || max_ticks < 0 || cursor < 0)
        return DCGM_ST_BADPARAM;
    totals->next_tick = first_tick;
    totals->cursor = cursor;
    int64_t k = first_tick;
    while (totals->ticks < max_ticks) {
        double deadline = origin_s + (double)k * interval_s;
        if (!sleep_until(t, deadline)) {
            totals->stopped = 1;
            break;
        }
        double started = clock_s(CLOCK_MONOTONIC);
        int rc = dcgmc_drain_many(rings, n_rings, events, event_fields, n_event_fields, handle, group,
                                  fieldGroup, totals->cursor, stats);
        if (rc != DCGM_ST_OK) {
            totals->rc = rc;
            break;
        }
        totals->cursor = stats[0].next_cursor;
        add_tick(totals, rings, n_rings, events, stats);
        double ended = clock_s(CLOCK_MONOTONIC);
        totals->last_tick_start_s = started;
        totals->last_tick_s = ended - started;
        totals->last_tick_wall_s = clock_s(CLOCK_REALTIME);
        /* deadlines that passed while the tick ran are skipped, not caught up */
        int64_t due = (int64_t)floor((ended - origin_s) / interval_s);
        if (due > k) {
            totals->skipped += due - k;
            k = due;
        }
        totals->next_tick = ++k;
        if (deadline >= until_s || totals->ticks == max_ticks) {
            totals->bounded = 1;
            break;
        }
    }
    if (!totals->stopped && is_stopped(t))
        totals->stopped = 1;
    return totals->rc;
}
