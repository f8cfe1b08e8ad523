/*
 * source_nvml_events.c -- XIDs (DCGM_FI_DEV_XID_ERRORS, 230) through an
 * NVML event set, the way DCGM's own cache manager gets them.
 *
 * One set for the source, created on the first read of an event field; each
 * GPU whose supported event types include XIDs is registered on it (a GPU
 * that cannot deliver them simply has none).  Every read drains the set
 * without waiting (timeout 0: the engine reads under its lock) and files each
 * event under its GPU, stamped with the time of the read that found it --
 * NVML says what happened, not when.  A read then answers from those queues
 * exactly as the models source answers from its scenario: the events with
 * from < t <= to, oldest first.
 *
 * The set is drained only by a read that reaches past every earlier one, so
 * an event is never stamped before a time some reader has already moved past
 * (the engine asks for a lost GPU's events only up to when it was lost).
 * Each GPU keeps its latest XID_QUEUE_CAP events; older ones are dropped.
 */
#include <stdlib.h>

#include "source_nvml.h"
#include "../../dcgm_field_ids.h"

#define XID_QUEUE_CAP 256
/* a burst larger than this in one read is left for the next read */
#define MAX_DRAIN_PER_READ 1024

/* one GPU's events: a ring of the latest XID_QUEUE_CAP, oldest at head */
struct nvml_xid_queue {
    sim_event items[XID_QUEUE_CAP];
    unsigned int head, count;
};

int nvml_events_is_event_field(unsigned short f) { return f == DCGM_FI_DEV_XID_ERROR; }

static void queue_push(struct nvml_xid_queue *q, int64_t t_rel, int64_t xid)
{
    if (q->count == XID_QUEUE_CAP) {
        q->head = (q->head + 1) % XID_QUEUE_CAP;
        q->count--;
    }
    q->items[(q->head + q->count) % XID_QUEUE_CAP] = (sim_event){ t_rel, xid };
    q->count++;
}

static int have_entry_points(const nvml_source *s)
{
    return s->api.event_set_create && s->api.register_events && s->api.supported_events &&
           s->api.event_wait && s->api.event_set_free;
}

/* The queues and the set, registered for XIDs on every GPU that has them.
 * Returns 1 when events can be read. */
static int ensure_registered(nvml_source *s, int64_t t_rel)
{
    if (s->events_state != 0)
        return s->events_state > 0;
    s->events_state = -1;
    if (!have_entry_points(s) || s->count == 0)
        return 0;
    s->xids = calloc(s->count, sizeof *s->xids);
    if (!s->xids)
        return 0;
    if (s->api.event_set_create(&s->event_set) != NVML_SUCCESS) {
        free(s->xids);
        s->xids = NULL;
        s->event_set = NULL;
        return 0;
    }
    s->events_drained_to = INT64_MIN;
    for (unsigned int i = 0; i < s->count; i++) {
        nvml_gpu *g = &s->gpus[i];
        unsigned long long types = 0;
        nvmlReturn_t r = s->api.supported_events(g->dev, &types);
        if (r == NVML_SUCCESS && !(types & nvmlEventTypeXidCriticalError))
            continue;   /* no XIDs from this GPU */
        if (r == NVML_SUCCESS)
            r = s->api.register_events(g->dev, nvmlEventTypeXidCriticalError, s->event_set);
        if (r == NVML_ERROR_GPU_IS_LOST)
            nvml_src_mark_lost(s, i, t_rel);
    }
    s->events_state = 1;
    return 1;
}

static int gpu_of(const nvml_source *s, nvmlDevice_t dev)
{
    for (unsigned int i = 0; i < s->count; i++)
        if (s->gpus[i].dev == dev)
            return (int)i;
    return -1;
}

/* An event of a GPU already lost is filed at its lost time at the latest:
 * the engine reads a lost GPU's events only up to then. */
static int64_t stamp_for(nvml_source *s, unsigned int gpu, int64_t t_rel)
{
    pthread_mutex_lock(&s->mu);
    int64_t lost = s->gpus[gpu].lost_at;
    pthread_mutex_unlock(&s->mu);
    return lost >= 0 && lost < t_rel ? lost : t_rel;
}

/* Everything the set holds now, filed at t_rel. */
static void drain(nvml_source *s, int64_t t_rel)
{
    int64_t start = nvml_src_mono_ns();
    for (int n = 0; n < MAX_DRAIN_PER_READ; n++) {
        nvmlEventData_t data = { 0 };
        nvmlReturn_t r = s->api.event_wait(s->event_set, &data, 0);
        int gpu = data.device ? gpu_of(s, data.device) : -1;
        if (r == NVML_SUCCESS) {
            if (gpu >= 0 && (data.eventType & nvmlEventTypeXidCriticalError))
                queue_push(&s->xids[gpu], stamp_for(s, (unsigned int)gpu, t_rel),
                           (int64_t)data.eventData);
            continue;
        }
        /* a lost GPU is known only when the wait names it; its own reads mark it otherwise */
        if (r == NVML_ERROR_GPU_IS_LOST && gpu >= 0)
            nvml_src_mark_lost(s, (unsigned int)gpu, t_rel);
        break;  /* TIMEOUT: nothing pending; anything else: try again at the next read */
    }
    nvml_src_count_read(s, DCGM_FI_DEV_XID_ERROR, (uint64_t)(nvml_src_mono_ns() - start));
}

int nvml_events_read(nvml_source *s, unsigned int gpu, unsigned short f, int64_t from_rel,
                     int64_t to_rel, sim_event *out, int max)
{
    if (f != DCGM_FI_DEV_XID_ERROR || gpu >= s->count || !ensure_registered(s, to_rel))
        return 0;
    if (to_rel > s->events_drained_to) {
        drain(s, to_rel);
        s->events_drained_to = to_rel;
    }
    const struct nvml_xid_queue *q = &s->xids[gpu];
    int total = 0;
    for (unsigned int i = 0; i < q->count; i++) {
        const sim_event *ev = &q->items[(q->head + i) % XID_QUEUE_CAP];
        if (ev->t_rel_us <= from_rel || ev->t_rel_us > to_rel)
            continue;
        if (out && total < max)
            out[total] = *ev;
        total++;
    }
    return total;
}

void nvml_events_free(nvml_source *s)
{
    if (s->event_set && s->api.event_set_free && s->initialized)
        s->api.event_set_free(s->event_set);
    s->event_set = NULL;
    free(s->xids);
    s->xids = NULL;
    s->events_state = 0;
}
