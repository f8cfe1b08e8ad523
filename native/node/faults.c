/*
 * faults.c -- rehearsed faults of a GPU over time: the error rates its
 * `errors` events set, and the power excursions during which its power cap
 * does not hold.  scenario.c fills the plans, node.c reads them.
 *
 * Counts are the integral of the rates, taken in closed form (a rate is
 * piecewise linear in time), so they are exact and a pure function of t:
 * a storm of 17,700 SBEs a second adds 17,700 a second, not one per 100 ms
 * step as the seeded background noise does.
 */
#include <math.h>

#include "node_internal.h"

/* Errors a rate plan adds in its first x seconds (ramp of r seconds from f to e per second). */
static double faults_integral(double f, double e, double r, double x)
{
    if (x <= 0.0)
        return 0.0;
    if (r <= 0.0)
        return f * x;
    if (x <= r)
        return f * x + (e - f) * x * x / (2.0 * r);
    return f * r + (e - f) * r / 2.0 + e * (x - r);
}

uint64_t sim_fault_count(const sim_gpu *gpu, sim_error_kind kind, int64_t t_us)
{
    double sum = 0.0;
    for (size_t i = 0; i < gpu->error_rate_count; i++) {
        const sim_error_rates *p = &gpu->error_rates[i];
        if (p->start_us >= t_us)
            break;
        int64_t end_us = t_us;
        if (i + 1 < gpu->error_rate_count && gpu->error_rates[i + 1].start_us < end_us)
            end_us = gpu->error_rates[i + 1].start_us;
        sum += faults_integral(p->from[kind], p->to[kind], (double)p->ramp_us * 1e-6,
                               (double)(end_us - p->start_us) * 1e-6);
    }
    /* a hair above the floor: 8 rows over a minute are 8, not 7.999999 */
    return (uint64_t)floor(sum + 1e-6);
}

const sim_excursion *sim_fault_excursion_at(const sim_gpu *gpu, int64_t t_us)
{
    /* the last excursion starting at or before t, by bisection: a scenario may repeat one often */
    size_t lo = 0, hi = gpu->excursion_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (gpu->excursions[mid].start_us <= t_us)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const sim_excursion *x = &gpu->excursions[lo - 1];
    return t_us < x->end_us ? x : NULL;
}
