/*
 * drain.c -- DCGM samples into ring buffers without a Python object per value.
 *
 * A drain is one dcgmGetValuesSince_v2 call whose C callback stages every
 * numeric record (series, ts, value, status) in a buffer the ring keeps for
 * the next drain.  Only when DCGM answers OK does ring.c turn the staged
 * records into rows and commit them with the protocol described in ring.h.
 * Nothing here touches a Python object, so the extension runs it with the
 * GIL released.
 */
#define _GNU_SOURCE
#include "drain.h"

#include <math.h>
#include <stdlib.h>

#include "loader.h"
#include "ring_internal.h"

/* ---- sample rings ----------------------------------------------------------- */

/* 1 when DCGM gave the record a value; otherwise counts it as NO_DATA or an error. */
static int record_has_value(const dcgmFieldValue_v1 *record, dcgmc_drain_stats *stats)
{
    if (record->status == DCGM_ST_OK)
        return 1;
    if (record->status == DCGM_ST_NO_DATA)
        stats->no_data++;
    else
        stats->errors++;
    return 0;
}

typedef struct ring_drain {
    dcgmc_ring *ring;
    dcgmc_drain_stats *stats;
    int32_t entity_group;
    uint32_t entity_id;
    size_t entity_slot;         /* SIZE_MAX: that entity has no series here */
    int have_entity;
    size_t field_slot;
    int out_of_memory;
} ring_drain;

/* The ring's status for a numeric record, its value in *value; 0 for other types. */
static int decode_numeric(const dcgmFieldValue_v1 *record, double *value, int8_t *status)
{
    *value = NAN;
    if (record->fieldType == DCGM_FT_INT64 || record->fieldType == DCGM_FT_TIMESTAMP) {
        int64_t i64 = record->value.i64;
        if (i64 >= DCGM_INT64_BLANK)
            *status = i64 == DCGM_INT64_NOT_SUPPORTED ? DCGMC_SAMPLE_NOT_SUPPORTED : DCGMC_SAMPLE_BLANK;
        else {
            *status = DCGMC_SAMPLE_OK;
            *value = (double)i64;
        }
        return 1;
    }
    if (record->fieldType == DCGM_FT_DOUBLE) {
        double dbl = record->value.dbl;
        if (isnan(dbl) || dbl >= DCGM_FP64_BLANK)
            *status = dbl == DCGM_FP64_NOT_SUPPORTED ? DCGMC_SAMPLE_NOT_SUPPORTED : DCGMC_SAMPLE_BLANK;
        else {
            *status = DCGMC_SAMPLE_OK;
            *value = dbl;
        }
        return 1;
    }
    return 0;
}

static int32_t drain_series(ring_drain *d, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity, unsigned short field)
{
    const dcgmc_ring *ring = d->ring;
    if (!d->have_entity || d->entity_group != (int32_t)group || d->entity_id != entity) {
        d->entity_group = (int32_t)group;
        d->entity_id = entity;
        d->entity_slot = ring_slot_of_entity(ring, (int32_t)group, entity);
        d->have_entity = 1;
    }
    if (d->entity_slot == SIZE_MAX)
        return -1;
    size_t field_slot = ring_slot_of_field(ring, field, d->field_slot);
    if (field_slot == SIZE_MAX)
        return -1;
    d->field_slot = field_slot;
    return ring->series_of[d->entity_slot * ring->n_fields + field_slot];
}

static int stage_cell(dcgmc_ring *ring, int64_t ts, double value, int32_t series, int8_t status)
{
    void *cells;
    if (ring->n_cells == ring->cells_capacity) {
        if (!ring_grow_staging(ring->cells, &ring->cells_capacity, ring->n_cells + 1,
                               sizeof *ring->cells, &cells))
            return 0;
        ring->cells = cells;
    }
    ring->cells[ring->n_cells++] = (staged_cell){ ts, value, series, status };
    return 1;
}

/* One record into the ring's staging; 0 when staging could not grow. */
static int ring_take(ring_drain *d, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                     const dcgmFieldValue_v1 *record)
{
    if (!record_has_value(record, d->stats))
        return 1;
    double value;
    int8_t status;
    int32_t series = drain_series(d, group, entity, record->fieldId);
    if (series < 0 || !decode_numeric(record, &value, &status)) {
        d->stats->unmapped++;
        return 1;
    }
    if (!stage_cell(d->ring, record->ts, value, series, status)) {
        d->out_of_memory = 1;
        return 0;
    }
    return 1;
}

/* Non-zero stops DCGM's enumeration; the call then keeps the cursor where it was. */
static int ring_on_values(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                          dcgmFieldValue_v1 *values, int numValues, void *userData)
{
    ring_drain *d = userData;
    if (d == NULL || values == NULL)
        return 0;
    for (int i = 0; i < numValues; i++)
        if (!ring_take(d, group, entity, &values[i]))
            return 1;
    return 0;
}

static int drain_locked(dcgmc_ring *ring, dcgmHandle_t handle, dcgmGpuGrp_t group,
                        dcgmFieldGrp_t fieldGroup, long long since, dcgmc_drain_stats *stats)
{
    ring_drain d = { .ring = ring, .stats = stats, .entity_slot = SIZE_MAX };
    long long next = since;
    ring->n_cells = 0;
    int rc = dcgmc_fwd_dcgmGetValuesSince_v2(handle, group, fieldGroup, since, &next,
                                             ring_on_values, &d);
    if (rc == DCGM_ST_OK && d.out_of_memory)
        rc = DCGM_ST_MEMORY;
    if (rc == DCGM_ST_OK && !ring_commit_staged(ring, stats))
        rc = DCGM_ST_MEMORY;
    if (rc == DCGM_ST_OK)
        stats->next_cursor = next;
    ring_trim_staging(ring);
    return rc;
}

int dcgmc_drain(dcgmc_ring *ring, dcgmHandle_t handle, dcgmGpuGrp_t group,
                dcgmFieldGrp_t fieldGroup, long long since, dcgmc_drain_stats *stats)
{
    if (ring == NULL || stats == NULL)
        return DCGM_ST_BADPARAM;
    clear_stats(stats, since);
    if (!ring_control_begin_write(&ring->control))
        return DCGM_ST_IN_USE;
    int rc = drain_locked(ring, handle, group, fieldGroup, since, stats);
    ring_control_end_write(&ring->control);
    return rc;
}

/* ---- event rings ------------------------------------------------------------- */

typedef struct events_drain {
    dcgmc_events *events;
    dcgmc_drain_stats *stats;
    int out_of_memory;
} events_drain;

static int stage_event(dcgmc_events *events, const staged_event *e)
{
    void *staged;
    if (events->n_staged == events->staged_capacity) {
        if (!ring_grow_staging(events->staged, &events->staged_capacity, events->n_staged + 1,
                               sizeof *events->staged, &staged))
            return 0;
        events->staged = staged;
    }
    events->staged[events->n_staged++] = *e;
    return 1;
}

/* One record into the event ring's staging; 0 when staging could not grow. */
static int events_take(events_drain *d, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                       const dcgmFieldValue_v1 *record)
{
    if (!record_has_value(record, d->stats))
        return 1;
    if (record->fieldType != DCGM_FT_INT64 && record->fieldType != DCGM_FT_TIMESTAMP) {
        d->stats->unmapped++;
    } else if (record->value.i64 >= DCGM_INT64_BLANK) {
        d->stats->blanks++;
    } else {
        staged_event e = { record->ts, record->value.i64, entity, (int32_t)group,
                           record->fieldId };
        if (!stage_event(d->events, &e)) {
            d->out_of_memory = 1;
            return 0;
        }
    }
    return 1;
}

static int events_on_values(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                            dcgmFieldValue_v1 *values, int numValues, void *userData)
{
    events_drain *d = userData;
    if (d == NULL || values == NULL)
        return 0;
    for (int i = 0; i < numValues; i++)
        if (!events_take(d, group, entity, &values[i]))
            return 1;
    return 0;
}

static int compare_events(const void *left, const void *right)
{
    const staged_event *a = left, *b = right;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->entity_group != b->entity_group)
        return a->entity_group < b->entity_group ? -1 : 1;
    if (a->entity_id != b->entity_id)
        return a->entity_id < b->entity_id ? -1 : 1;
    if (a->field_id != b->field_id)
        return a->field_id < b->field_id ? -1 : 1;
    return 0;
}

/* With the event ring held for writing: staged entries committed in order. */
static void commit_events(dcgmc_events *events, dcgmc_drain_stats *stats)
{
    if (events->n_staged > 1)
        qsort(events->staged, events->n_staged, sizeof *events->staged, compare_events);
    ring_commit_events(events, events->staged, (int64_t)events->n_staged, stats);
}

int dcgmc_drain_events(dcgmc_events *events, dcgmHandle_t handle, dcgmGpuGrp_t group,
                       dcgmFieldGrp_t fieldGroup, long long since, dcgmc_drain_stats *stats)
{
    if (events == NULL || stats == NULL)
        return DCGM_ST_BADPARAM;
    clear_stats(stats, since);
    if (!ring_control_begin_write(&events->control))
        return DCGM_ST_IN_USE;
    events_drain d = { .events = events, .stats = stats };
    long long next = since;
    events->n_staged = 0;
    int rc = dcgmc_fwd_dcgmGetValuesSince_v2(handle, group, fieldGroup, since, &next,
                                             events_on_values, &d);
    if (rc == DCGM_ST_OK && d.out_of_memory)
        rc = DCGM_ST_MEMORY;
    if (rc == DCGM_ST_OK) {
        commit_events(events, stats);
        stats->next_cursor = next;
    }
    ring_trim_events(events);
    ring_control_end_write(&events->control);
    return rc;
}

/* ---- several rings, one call ------------------------------------------------ */

typedef struct many_drain {
    ring_drain rings[DCGMC_DRAIN_MAX_RINGS];
    int n_rings;
    events_drain events;
    const unsigned short *event_fields;
    int n_event_fields;
    int last;                   /* the ring the previous record went to */
    dcgmc_drain_stats *stray;   /* where records of no target are counted */
} many_drain;

static int is_event_field(const many_drain *m, unsigned short field)
{
    for (int i = 0; i < m->n_event_fields; i++)
        if (m->event_fields[i] == field)
            return 1;
    return 0;
}

/* The ring holding the field (records come field after field, so the last one first); -1: none. */
static int ring_of_field(many_drain *m, unsigned short field)
{
    for (int k = 0; k < m->n_rings; k++) {
        int i = (m->last + k) % m->n_rings;
        ring_drain *d = &m->rings[i];
        size_t slot = ring_slot_of_field(d->ring, field, d->field_slot);
        if (slot != SIZE_MAX) {
            m->last = i;
            d->field_slot = slot;   /* ring_take's own lookup then hits on its first guess */
            return i;
        }
    }
    return -1;
}

static int many_on_values(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                          dcgmFieldValue_v1 *values, int numValues, void *userData)
{
    many_drain *m = userData;
    if (m == NULL || values == NULL)
        return 0;
    for (int i = 0; i < numValues; i++) {
        const dcgmFieldValue_v1 *record = &values[i];
        if (m->events.events != NULL && is_event_field(m, record->fieldId)) {
            if (!events_take(&m->events, group, entity, record))
                return 1;
            continue;
        }
        int target = ring_of_field(m, record->fieldId);
        if (target < 0) {
            if (record_has_value(record, m->stray))
                m->stray->unmapped++;
            continue;
        }
        if (!ring_take(&m->rings[target], group, entity, record))
            return 1;
    }
    return 0;
}

static int many_locked(many_drain *m, dcgmHandle_t handle, dcgmGpuGrp_t group,
                       dcgmFieldGrp_t fieldGroup, long long since)
{
    long long next = since;
    int rc = dcgmc_fwd_dcgmGetValuesSince_v2(handle, group, fieldGroup, since, &next,
                                             many_on_values, m);
    int oom = m->events.out_of_memory;
    for (int i = 0; i < m->n_rings; i++)
        oom |= m->rings[i].out_of_memory;
    if (rc == DCGM_ST_OK && oom)
        rc = DCGM_ST_MEMORY;
    /* all or nothing: every ring's commit buffers are allocated before any
     * ring commits, so that one that cannot grow leaves all as they were */
    for (int i = 0; rc == DCGM_ST_OK && i < m->n_rings; i++)
        if (!ring_prepare_commit(m->rings[i].ring))
            rc = DCGM_ST_MEMORY;
    for (int i = 0; rc == DCGM_ST_OK && i < m->n_rings; i++)
        ring_commit_staged(m->rings[i].ring, m->rings[i].stats);
    if (rc == DCGM_ST_OK && m->events.events != NULL)
        commit_events(m->events.events, m->events.stats);
    if (rc == DCGM_ST_OK) {
        for (int i = 0; i < m->n_rings; i++)
            m->rings[i].stats->next_cursor = next;
        if (m->events.events != NULL)
            m->events.stats->next_cursor = next;
    }
    return rc;
}

int dcgmc_drain_many(dcgmc_ring *const *rings, int n_rings, dcgmc_events *events,
                     const unsigned short *event_fields, int n_event_fields, dcgmHandle_t handle,
                     dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup, long long since,
                     dcgmc_drain_stats *stats)
{
    if (stats == NULL || n_rings < 0 || n_rings > DCGMC_DRAIN_MAX_RINGS || (n_rings && rings == NULL) ||
        (events != NULL && (n_event_fields < 0 || (n_event_fields && event_fields == NULL))) ||
        (n_rings == 0 && events == NULL))
        return DCGM_ST_BADPARAM;
    many_drain m = { .n_rings = n_rings, .event_fields = event_fields,
                     .n_event_fields = events != NULL ? n_event_fields : 0 };
    for (int i = 0; i < n_rings; i++) {
        if (rings[i] == NULL)
            return DCGM_ST_BADPARAM;
        for (int j = 0; j < i; j++)
            if (rings[j] == rings[i])
                return DCGM_ST_BADPARAM;
    }
    for (int i = 0; i <= n_rings; i++)
        clear_stats(&stats[i], since);
    m.stray = &stats[0];
    int held = 0, rc = DCGM_ST_OK;
    for (; held < n_rings; held++) {
        if (!ring_control_begin_write(&rings[held]->control)) {
            rc = DCGM_ST_IN_USE;
            break;
        }
        m.rings[held] = (ring_drain){ .ring = rings[held], .stats = &stats[held],
                                      .entity_slot = SIZE_MAX };
        rings[held]->n_cells = 0;
    }
    int events_held = 0;
    if (rc == DCGM_ST_OK && events != NULL) {
        if (!ring_control_begin_write(&events->control)) {
            rc = DCGM_ST_IN_USE;
        } else {
            events_held = 1;
            m.events = (events_drain){ .events = events, .stats = &stats[n_rings] };
            events->n_staged = 0;
        }
    }
    if (rc == DCGM_ST_OK)
        rc = many_locked(&m, handle, group, fieldGroup, since);
    if (events_held) {
        ring_trim_events(events);
        ring_control_end_write(&events->control);
    }
    while (held-- > 0) {
        ring_trim_staging(rings[held]);
        ring_control_end_write(&rings[held]->control);
    }
    return rc;
}

/* ---- the library's own cost ----------------------------------------------- */

static int count_values(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                        dcgmFieldValue_v1 *values, int numValues, void *userData)
{
    (void)group;
    (void)entity;
    (void)values;
    int64_t *records = userData;
    if (records != NULL && numValues > 0)
        *records += numValues;
    return 0;
}

int dcgmc_count_since(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                      long long since, long long *next, int64_t *records)
{
    if (next == NULL || records == NULL)
        return DCGM_ST_BADPARAM;
    *records = 0;
    return dcgmc_fwd_dcgmGetValuesSince_v2(handle, group, fieldGroup, since, next, count_values,
                                           records);
}
