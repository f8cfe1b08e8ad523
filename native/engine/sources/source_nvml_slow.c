/*
 * source_nvml_slow.c -- the NVML reads too costly for every sample, done on a
 * reader thread of the source at their own cadence and never under the
 * engine's lock, so a 100 ms watch on 8 GPUs stays on time.
 *
 * Measured on a real H200 (reference/nvml/h200-costs.tsv): the total energy
 * counter costs about 3 ms of spinning CPU per read, serialised by the driver
 * (threads do not help), so reading it at 10 Hz on 8 GPUs would take a
 * quarter of a core; the PCIe replay counter costs about 135 us.
 *
 * Energy (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 156): the true counter is read
 * every DCGM_ENGINE_NVML_ENERGY_PERIOD_MS (default 10 s) per GPU.  Between
 * true reads each sample serves the last true value plus the instant power
 * (1-3 us to read) integrated by trapezoids since; each true read corrects
 * the estimate, and the correction is kept in the field's statistics.  The
 * served value never goes down (a counter that did would look reset).
 *
 * PCIe replays (DCGM_FI_DEV_PCIE_REPLAY_COUNTER, 202): read every
 * DCGM_ENGINE_NVML_REPLAY_PERIOD_MS (default 1 s); a sample serves the latest.
 *
 * A slow field is read only while samples ask for it (within the last
 * minute, or five cadences if longer).  Until its first read a sample is
 * blank, as DCGM's own cache is before its first update.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "source_nvml.h"
#include "../../dcgm_field_ids.h"

#define ENERGY_PERIOD_ENV "DCGM_ENGINE_NVML_ENERGY_PERIOD_MS"
#define REPLAY_PERIOD_ENV "DCGM_ENGINE_NVML_REPLAY_PERIOD_MS"
#define DEFAULT_ENERGY_PERIOD_US 10000000
#define DEFAULT_REPLAY_PERIOD_US 1000000
#define WANTED_FOR_US 60000000
/* the reader looks again at least this often (a new ask, a stop) */
#define IDLE_WAIT_US 1000000

int nvml_slow_is_slow(unsigned short f) { return f == DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION || f == DCGM_FI_DEV_PCIE_REPLAY_TOTAL; }

int nvml_slow_is_estimated(unsigned short f) { return f == DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION; }

/* the source's own clock: microseconds since it opened */
static int64_t src_now(const nvml_source *s) { return nvml_src_mono_us() - s->t0_mono_us; }

static int64_t period_from_env(const char *name, int64_t fallback_us)
{
    const char *text = getenv(name);
    if (!text || !text[0])
        return fallback_us;
    char *end = NULL;
    errno = 0;
    long long ms = strtoll(text, &end, 10);
    if (errno || *end || ms < 1 || ms > 3600000) {
        fprintf(stderr, "libdcgm (engine): %s=%s is not a count of milliseconds in "
                "[1, 3600000]; using %lld\n", name, text, (long long)(fallback_us / 1000));
        return fallback_us;
    }
    return (int64_t)ms * 1000;
}

static int64_t wanted_for(int64_t period_us)
{
    return period_us * 5 > WANTED_FOR_US ? period_us * 5 : WANTED_FOR_US;
}

/* ---- the reader thread --------------------------------------------------- */

static nvmlReturn_t read_energy(nvml_source *s, nvmlDevice_t dev, unsigned long long *mj)
{
    nvmlFieldValue_t fv;
    nvmlReturn_t r = nvml_src_read_field(s, dev, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 0, &fv);
    if (r == NVML_SUCCESS)
        *mj = (unsigned long long)nvml_src_field_i64(&fv);
    return r;
}

static nvmlReturn_t read_replay(nvml_source *s, nvmlDevice_t dev, unsigned long long *count)
{
    unsigned int n = 0;
    nvmlReturn_t r = s->api.replay(dev, &n);
    *count = n;
    return r;
}

typedef struct slow_kind {
    unsigned short field_id;
    size_t cells_offset;                /* offsetof(nvml_source, ..._cells) */
    size_t period_offset;
    nvmlReturn_t (*read)(nvml_source *, nvmlDevice_t, unsigned long long *);
} slow_kind;

static const slow_kind slow_kinds[] = {
    { DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, offsetof(nvml_source, energy_cells), offsetof(nvml_source, energy_period_us),
      read_energy },
    { DCGM_FI_DEV_PCIE_REPLAY_TOTAL, offsetof(nvml_source, replay_cells), offsetof(nvml_source, replay_period_us),
      read_replay },
};
#define N_SLOW_KINDS (sizeof slow_kinds / sizeof slow_kinds[0])

static nvml_slow_cell *cells_of(nvml_source *s, const slow_kind *k)
{
    return (nvml_slow_cell *)((char *)s + k->cells_offset);
}

static int64_t period_of(const nvml_source *s, const slow_kind *k)
{
    return *(const int64_t *)((const char *)s + k->period_offset);
}

static const slow_kind *kind_of(unsigned short f)
{
    for (size_t i = 0; i < N_SLOW_KINDS; i++)
        if (slow_kinds[i].field_id == f)
            return &slow_kinds[i];
    return NULL;
}

/* The cell due first among those still wanted; *due_at its time.  Under s->mu. */
static nvml_slow_cell *next_due(nvml_source *s, int64_t now, const slow_kind **kind,
                                unsigned int *gpu, int64_t *due_at)
{
    nvml_slow_cell *best = NULL;
    *due_at = INT64_MAX;
    for (size_t k = 0; k < N_SLOW_KINDS; k++) {
        nvml_slow_cell *cells = cells_of(s, &slow_kinds[k]);
        int64_t keep = wanted_for(period_of(s, &slow_kinds[k]));
        for (unsigned int g = 0; g < s->count; g++) {
            nvml_slow_cell *c = &cells[g];
            if (!c->wanted)
                continue;
            if (now - c->asked_rel > keep || s->gpus[g].lost_at >= 0) {
                c->wanted = 0;
                continue;
            }
            if (c->due_rel < *due_at) {
                *due_at = c->due_rel;
                best = c;
                *kind = &slow_kinds[k];
                *gpu = g;
            }
        }
    }
    return best;
}

static void wait_until(nvml_source *s, int64_t until_rel)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t wait_us = until_rel - src_now(s);
    if (wait_us <= 0)
        return;
    ts.tv_sec += (time_t)(wait_us / 1000000);
    ts.tv_nsec += (long)(wait_us % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->wake, &s->mu, &ts);
}

static void *reader_main(void *arg)
{
    nvml_source *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        int64_t now = src_now(s), due = 0;
        const slow_kind *kind = NULL;
        unsigned int gpu = 0;
        nvml_slow_cell *cell = next_due(s, now, &kind, &gpu, &due);
        if (!cell || due > now) {
            wait_until(s, cell && due < now + IDLE_WAIT_US ? due : now + IDLE_WAIT_US);
            continue;
        }
        int64_t period = period_of(s, kind);
        nvmlDevice_t dev = s->gpus[gpu].dev;
        pthread_mutex_unlock(&s->mu);

        unsigned long long value = 0;
        int64_t start_ns = nvml_src_mono_ns();
        nvmlReturn_t r = kind->read(s, dev, &value);
        int64_t took_ns = nvml_src_mono_ns() - start_ns;
        int64_t read_at = src_now(s);
        if (r == NVML_ERROR_GPU_IS_LOST)
            nvml_src_mark_lost(s, gpu, read_at);

        pthread_mutex_lock(&s->mu);
        nvml_field_stats *st = &s->stats[kind->field_id];
        st->reads++;
        st->read_ns += (uint64_t)took_ns;
        st->period_us = period;
        if (now - due > period)
            st->late++;
        cell->have = 1;
        cell->rc = r;
        cell->value = value;
        cell->read_rel = read_at - (took_ns / 2000);     /* the middle of the read */
        /* keep the cadence; after a long stall start again from now */
        cell->due_rel = now - due > period ? now + period : due + period;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int nvml_slow_start(nvml_source *s, char *err, size_t errlen)
{
    s->energy_period_us = period_from_env(ENERGY_PERIOD_ENV, DEFAULT_ENERGY_PERIOD_US);
    s->replay_period_us = period_from_env(REPLAY_PERIOD_ENV, DEFAULT_REPLAY_PERIOD_US);
    int rc = pthread_create(&s->reader, NULL, reader_main, s);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the NVML reader thread: %s", strerror(rc));
        return DCGM_ST_INIT_ERROR;
    }
    s->reader_started = 1;
    return DCGM_ST_OK;
}

void nvml_slow_stop(nvml_source *s)
{
    if (!s->reader_started)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->reader, NULL);
    s->reader_started = 0;
}

/* ---- samples --------------------------------------------------------------- */

/* Ask for the cell's field; wake the reader when it has nothing yet.  Under s->mu. */
static void ask(nvml_source *s, nvml_slow_cell *c, int64_t now)
{
    c->asked_rel = now;
    if (!c->wanted) {
        c->wanted = 1;
        if (!c->have || c->due_rel > now)
            c->due_rel = c->have ? c->due_rel : now;
        pthread_cond_signal(&s->wake);
    }
}

/* Instant power in mW: field 186 where NVML has it (what the energy counter
 * integrates), else the power reading DCGM_FI_DEV_POWER_USAGE serves. */
static nvmlReturn_t instant_power_mw(nvml_source *s, nvmlDevice_t dev, double *mw)
{
    nvmlFieldValue_t fv;
    nvmlReturn_t r = nvml_src_read_field(s, dev, NVML_FI_DEV_POWER_INSTANT, 0, &fv);
    if (r == NVML_SUCCESS) {
        *mw = fv.valueType == NVML_VALUE_TYPE_DOUBLE ? fv.value.dVal : (double)nvml_src_field_i64(&fv);
        return r;
    }
    unsigned int u = 0;
    if (!s->api.power)
        return r;
    r = s->api.power(dev, &u);
    *mw = u;
    return r;
}

/* Fold a new true reading into the estimate.  Under s->mu. */
static void correct(nvml_source *s, nvml_energy *e, const nvml_slow_cell *c)
{
    double true_mj = (double)c->value;
    if (e->have_base) {
        /* the estimate for the moment of the true read, from the latest power */
        double estimate = e->base_mj + e->integral_mj -
                          e->power_mw * (double)(e->power_rel - c->read_rel) / 1e6;
        double error = estimate - true_mj;
        e->last_error_mj = error;
        if (fabs(error) > e->max_abs_error_mj)
            e->max_abs_error_mj = fabs(error);
        e->corrections++;
    }
    e->have_base = 1;
    e->base_rel = c->read_rel;
    e->base_mj = true_mj;
    /* the integral now runs from the moment of the true read: what was drawn since, at the
     * latest power -- negative when the latest power reading came before the true read, so that
     * the next trapezoid (which starts at that reading) does not count that stretch twice */
    e->integral_mj = e->have_power ? e->power_mw * (double)(e->power_rel - c->read_rel) / 1e6 : 0.0;
    (void)s;
}

static int sample_energy(nvml_source *s, unsigned int gpu, int64_t t_rel, sim_value *out)
{
    nvml_gpu *g = &s->gpus[gpu];
    double mw = 0;
    int64_t start_ns = nvml_src_mono_ns();
    nvmlReturn_t pr = instant_power_mw(s, g->dev, &mw);
    int64_t took_ns = nvml_src_mono_ns() - start_ns;
    int64_t now = src_now(s);
    if (pr == NVML_ERROR_GPU_IS_LOST) {
        nvml_src_mark_lost(s, gpu, t_rel);
        out->kind = SIM_VALUE_BLANK;
        return DCGM_ST_OK;
    }

    pthread_mutex_lock(&s->mu);
    nvml_field_stats *st = &s->stats[DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION];
    st->reads++;
    st->read_ns += (uint64_t)took_ns;
    st->period_us = s->energy_period_us;
    nvml_slow_cell *c = &s->energy_cells[gpu];
    nvml_energy *e = &s->energy[gpu];
    ask(s, c, now);
    if (pr == NVML_SUCCESS) {
        if (e->have_power && now > e->power_rel)
            e->integral_mj += (e->power_mw + mw) / 2.0 * (double)(now - e->power_rel) / 1e6;
        e->have_power = 1;
        e->power_rel = now;
        e->power_mw = mw;
    }
    nvmlReturn_t rc = c->have ? c->rc : NVML_SUCCESS;
    if (c->have && c->rc == NVML_SUCCESS && (!e->have_base || c->read_rel != e->base_rel))
        correct(s, e, c);
    int served = 0;
    if (e->have_base && (rc == NVML_SUCCESS)) {
        double estimate = e->base_mj + e->integral_mj;
        if (estimate > e->served_mj)
            e->served_mj = estimate;
        served = 1;
    }
    double value = e->served_mj;
    pthread_mutex_unlock(&s->mu);

    if (rc != NVML_SUCCESS)
        nvml_src_put_error(s, gpu, rc, t_rel, out);
    else if (served)
        sim_put_int(out, (int64_t)value);
    else
        out->kind = SIM_VALUE_BLANK;
    return DCGM_ST_OK;
}

static int sample_cell(nvml_source *s, unsigned int gpu, const slow_kind *k, int64_t t_rel,
                       sim_value *out)
{
    pthread_mutex_lock(&s->mu);
    nvml_slow_cell *c = &cells_of(s, k)[gpu];
    ask(s, c, src_now(s));
    s->stats[k->field_id].period_us = period_of(s, k);
    int have = c->have;
    nvmlReturn_t rc = c->rc;
    unsigned long long value = c->value;
    pthread_mutex_unlock(&s->mu);
    if (!have)
        out->kind = SIM_VALUE_BLANK;
    else if (rc != NVML_SUCCESS)
        nvml_src_put_error(s, gpu, rc, t_rel, out);
    else
        sim_put_int(out, (int64_t)value);
    return DCGM_ST_OK;
}

int nvml_slow_sample(nvml_source *s, unsigned int gpu, unsigned short f, int64_t t_rel,
                     sim_value *out)
{
    if (f == DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION)
        return sample_energy(s, gpu, t_rel, out);
    const slow_kind *k = kind_of(f);
    if (!k) {
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        return DCGM_ST_OK;
    }
    return sample_cell(s, gpu, k, t_rel, out);
}

void nvml_slow_energy_error(nvml_source *s, double *last_mj, double *max_abs_mj,
                            uint64_t *corrections)
{
    *last_mj = *max_abs_mj = 0;
    *corrections = 0;
    pthread_mutex_lock(&s->mu);
    for (unsigned int g = 0; g < s->count; g++) {
        const nvml_energy *e = &s->energy[g];
        *corrections += e->corrections;
        if (e->max_abs_error_mj > *max_abs_mj)
            *max_abs_mj = e->max_abs_error_mj;
        if (e->corrections && fabs(e->last_error_mj) >= fabs(*last_mj))
            *last_mj = e->last_error_mj;
    }
    pthread_mutex_unlock(&s->mu);
}
