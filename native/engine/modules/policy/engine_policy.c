/*
 * engine_policy.c -- DCGM's policy manager on the engine's cache: per-GPU
 * policies (dcgmPolicySet / dcgmPolicyGet), registrations for violations
 * (dcgmPolicyRegister_v2 / dcgmPolicyUnregister), and the violations
 * themselves, found as values reach the cache (sampled or injected) and
 * queued for the owner that registered until its client takes them.
 *
 * The rules are DCGM 4.6's (modules/policy/DcgmPolicyManager.cpp), written
 * anew; the function named next to each rule is where DCGM has it.
 *
 *  - A policy is kept per GPU; setting it on a group overwrites the policy of
 *    every GPU in the group (ProcessSetPolicy).  Set and get refuse a group
 *    without entities (NOT_CONFIGURED), a GPU id past DCGM_MAX_NUM_DEVICES
 *    (BADPARAM) and a lost GPU (GPU_IS_LOST).
 *  - A registration adds a watcher (owner, callback cookie, conditions) to
 *    every GPU of the group; the first one of an owner watches the policy
 *    fields of every GPU every 10 s, kept for an hour, on behalf of the
 *    owner's policy watcher, and runs an update pass (RegisterForPolicy,
 *    WatchFields).  Unregistering drops every watcher of the owner whatever
 *    the conditions, once the group id checks out (UnregisterForPolicy).
 *  - A value is judged only on a GPU with a policy set, only for the
 *    conditions that policy enables (OnFieldValuesUpdate).  The counters
 *    (double-bit ECC, PCIe replays, the four NvLink error totals) violate when
 *    the value is above the one stored just before it: a reset is no
 *    violation, and the first value has nothing to compare with
 *    (GetCounterDelta).  Retired pages violate when SBE + DBE pages exceed
 *    parms[2], the other count read from its latest sample
 *    (CheckRetiredPages); temperature and power when above parms[3] and
 *    parms[4]; every XID violates.
 *  - A watcher hears of one kind of violation at most once per 5 s of the
 *    offending values' timestamps (SetViolation).
 *
 * Blank values are never judged: DCGM skips blank counters too, and a blank
 * read of the other retired-page count is taken as no sample.  Not modelled:
 * the ALL_GPUS group's watchers following GPUs attached later (AttachGpus).
 */
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "../../../dcgm_field_ids.h"

/* the fields a registration watches (DcgmPolicyManager::WatchFields) */
static const unsigned short policy_fields[] = {
    DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL, DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL, DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL,
    DCGM_FI_DEV_ECC_DBE_VOL_DEV, DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL, DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL, DCGM_FI_DEV_GPU_TEMP_CELSIUS, DCGM_FI_DEV_XID_ERROR, DCGM_FI_DEV_BOARD_POWER_WATTS,
    DCGM_FI_DEV_PCIE_REPLAY_TOTAL,
};
#define N_POLICY_FIELDS (sizeof policy_fields / sizeof policy_fields[0])

#define WATCH_INTERVAL_US 10000000ll
#define WATCH_KEEP_S 3600.0
#define MIN_SIGNAL_GAP_US 5000000ll
/* violations waiting for their client, per owner: a client that stopped
 * taking them loses its newest, and never holds up another's */
#define MAX_QUEUED_PER_OWNER 1024

typedef struct policy_watcher {
    engine_owner owner;
    uint32_t cookie;
    unsigned int gpu;
    unsigned int conditions;
    int64_t last_sent[DCGM_POLICY_COND_MAX];
} policy_watcher;

typedef struct queued_note {
    engine_owner owner;
    engine_policy_note note;
} queued_note;

struct engine_policy_state {
    int is_set[DCGM_MAX_NUM_DEVICES];
    dcgmPolicy_v1 current[DCGM_MAX_NUM_DEVICES];
    policy_watcher *watchers;
    size_t n_watchers, cap_watchers;
    queued_note *queue;
    size_t n_queue, cap_queue;
    engine_owner *watched;       /* owners whose policy fields are watched */
    size_t n_watched, cap_watched;
};

static engine_owner engine_policy_owner(engine_owner owner)
{
    return owner | ENGINE_OWNER_POLICY;
}

static engine_policy_state *state_locked(sim_engine *e)
{
    if (e->policy)
        return e->policy;
    engine_policy_state *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    for (int i = 0; i < DCGM_MAX_NUM_DEVICES; i++)
        p->current[i].version = dcgmPolicy_version1;
    e->policy = p;
    return p;
}

static void engine_policy_free(sim_engine *e)
{
    engine_policy_state *p = e->policy;
    if (!p)
        return;
    free(p->watchers);
    free(p->queue);
    free(p->watched);
    free(p);
    e->policy = NULL;
}

static int grow(void **items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return 1;
    size_t n = *cap ? *cap * 2 : 8;
    void *grown = realloc(*items, n * size);
    if (!grown)
        return 0;
    *items = grown;
    *cap = n;
    return 1;
}

/* ---- groups ---------------------------------------------------------------- */

/* The group's entities, and the check every request makes of its GPUs. */
static int group_gpus_locked(sim_engine *e, dcgmGpuGrp_t group, dcgmGroupEntityPair_t *entities,
                             unsigned int *count)
{
    int rc = engine_group_entities_locked(e, group, entities, count);
    if (rc != DCGM_ST_OK)
        return rc;
    int64_t t_rel = engine_now_locked(e) - e->t0_us;
    for (unsigned int i = 0; i < *count; i++) {
        if (entities[i].entityGroupId != DCGM_FE_GPU)
            continue;
        if (entities[i].entityId >= DCGM_MAX_NUM_DEVICES)
            return DCGM_ST_BADPARAM;
        const engine_entity *ent = engine_find_entity_locked(e, DCGM_FE_GPU, entities[i].entityId);
        if (!ent || engine_gpu_lost_locked(e, ent->gpu, t_rel))
            return DCGM_ST_GPU_IS_LOST;
    }
    return DCGM_ST_OK;
}

/* A request on a group's GPUs: set, get and register each start alike. */
typedef struct group_request {
    engine_policy_state *p;
    dcgmGroupEntityPair_t *entities;
    unsigned int count;
    int rc; /* group_gpus_locked's answer, or DCGM_ST_MEMORY for no state */
} group_request;

/* Locks e and fills r: the policy state and the group's checked entities.
 * Returns 0, with e not locked, when there is no memory for the entities. */
static int group_request_begin(sim_engine *e, dcgmGpuGrp_t group, group_request *r)
{
    memset(r, 0, sizeof *r);
    r->entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *r->entities);
    if (!r->entities)
        return 0;
    pthread_mutex_lock(&e->lock);
    r->p = state_locked(e);
    r->rc = r->p ? group_gpus_locked(e, group, r->entities, &r->count) : DCGM_ST_MEMORY;
    return 1;
}

static void group_request_end(sim_engine *e, group_request *r)
{
    pthread_mutex_unlock(&e->lock);
    free(r->entities);
}

/* ---- set and get ------------------------------------------------------------ */

int engine_policy_set(sim_engine *e, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy)
{
    if (!e || !policy)
        return DCGM_ST_BADPARAM;
    group_request r;
    if (!group_request_begin(e, group, &r))
        return DCGM_ST_MEMORY;
    int rc = r.rc;
    /* DCGM: ProcessSetPolicy, an empty group is not configured */
    if (rc == DCGM_ST_OK && r.count == 0)
        rc = DCGM_ST_NOT_CONFIGURED;
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < r.count; i++) {
        if (r.entities[i].entityGroupId != DCGM_FE_GPU)
            continue;
        r.p->is_set[r.entities[i].entityId] = 1;
        r.p->current[r.entities[i].entityId] = *policy;
    }
    group_request_end(e, &r);
    return rc;
}

int engine_policy_get(sim_engine *e, dcgmGpuGrp_t group, dcgmPolicy_v1 *out,
                      unsigned int *count)
{
    if (!e || !out || !count)
        return DCGM_ST_BADPARAM;
    group_request r;
    if (!group_request_begin(e, group, &r))
        return DCGM_ST_MEMORY;
    unsigned int filled = 0;
    int rc = r.rc;
    /* DCGM: ProcessGetPolicies, an empty group is not configured */
    if (rc == DCGM_ST_OK && r.count == 0)
        rc = DCGM_ST_NOT_CONFIGURED;
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < r.count && filled < DCGM_MAX_NUM_DEVICES; i++)
        if (r.entities[i].entityGroupId == DCGM_FE_GPU)
            out[filled++] = r.p->current[r.entities[i].entityId];
    group_request_end(e, &r);
    *count = filled;
    return rc;
}

/* ---- registrations ----------------------------------------------------------- */

static int owner_watched_locked(const engine_policy_state *p, engine_owner owner)
{
    for (size_t i = 0; i < p->n_watched; i++)
        if (p->watched[i] == owner)
            return 1;
    return 0;
}

/* DcgmPolicyManager::WatchFields: once per owner, every GPU there is */
static int watch_policy_fields_locked(sim_engine *e, engine_policy_state *p, engine_owner owner)
{
    if (owner_watched_locked(p, owner))
        return DCGM_ST_OK;
    if (!grow((void **)&p->watched, &p->cap_watched, p->n_watched, sizeof *p->watched))
        return DCGM_ST_MEMORY;
    p->watched[p->n_watched++] = owner;
    int64_t keep = engine_retention_us(WATCH_INTERVAL_US, WATCH_KEEP_S, 0);
    int64_t t_rel = engine_now_locked(e) - e->t0_us;
    for (size_t i = 0; i < e->n_entities; i++) {
        const engine_entity *ent = &e->entities[i];
        if (ent->group != DCGM_FE_GPU || engine_gpu_lost_locked(e, ent->gpu, t_rel))
            continue;
        for (size_t f = 0; f < N_POLICY_FIELDS; f++) {
            int created = 0;
            int rc = engine_watch_one_locked(e, engine_policy_owner(owner), DCGM_FE_GPU, ent->id,
                                             policy_fields[f], WATCH_INTERVAL_US, keep, &created);
            if (rc != DCGM_ST_OK)
                return rc;
        }
    }
    engine_run_pass_locked(e, engine_now_locked(e));
    engine_kick_locked(e);
    return DCGM_ST_OK;
}

int engine_policy_register(sim_engine *e, engine_owner owner, dcgmGpuGrp_t group,
                           unsigned int conditions, uint32_t cookie)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    if (!conditions)
        return DCGM_ST_BADPARAM;
    group_request r;
    if (!group_request_begin(e, group, &r))
        return DCGM_ST_MEMORY;
    engine_policy_state *p = r.p;
    int rc = r.rc;
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < r.count; i++) {
        if (r.entities[i].entityGroupId != DCGM_FE_GPU)
            continue;
        if (!grow((void **)&p->watchers, &p->cap_watchers, p->n_watchers, sizeof *p->watchers)) {
            rc = DCGM_ST_MEMORY;
            break;
        }
        policy_watcher *w = &p->watchers[p->n_watchers++];
        memset(w, 0, sizeof *w);
        w->owner = owner;
        w->cookie = cookie;
        w->gpu = r.entities[i].entityId;
        w->conditions = conditions;
    }
    if (rc == DCGM_ST_OK)
        rc = watch_policy_fields_locked(e, p, owner);
    group_request_end(e, &r);
    return rc;
}

static void drop_owner_locked(engine_policy_state *p, engine_owner owner)
{
    size_t kept = 0;
    for (size_t i = 0; i < p->n_watchers; i++)
        if (p->watchers[i].owner != owner)
            p->watchers[kept++] = p->watchers[i];
    p->n_watchers = kept;
    kept = 0;
    for (size_t i = 0; i < p->n_queue; i++)
        if (p->queue[i].owner != owner)
            p->queue[kept++] = p->queue[i];
    p->n_queue = kept;
}

int engine_policy_unregister(sim_engine *e, engine_owner owner, dcgmGpuGrp_t group)
{
    if (!e)
        return DCGM_ST_BADPARAM;
    dcgmGroupEntityPair_t *entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *entities);
    if (!entities)
        return DCGM_ST_MEMORY;
    unsigned int count = 0;
    pthread_mutex_lock(&e->lock);
    /* DCGM: UnregisterForPolicy checks the group id, then drops every watcher
     * of the connection */
    int rc = engine_group_entities_locked(e, group, entities, &count);
    if (rc == DCGM_ST_OK && e->policy)
        drop_owner_locked(e->policy, owner);
    pthread_mutex_unlock(&e->lock);
    free(entities);
    return rc;
}

int engine_policy_take(sim_engine *e, engine_owner owner, engine_policy_note *out,
                       unsigned int capacity, unsigned int *count)
{
    if (!e || !count || (!out && capacity))
        return DCGM_ST_BADPARAM;
    unsigned int n = 0;
    pthread_mutex_lock(&e->lock);
    engine_policy_state *p = e->policy;
    if (p) {
        size_t kept = 0;
        for (size_t i = 0; i < p->n_queue; i++) {
            if (p->queue[i].owner == owner && n < capacity)
                out[n++] = p->queue[i].note;
            else
                p->queue[kept++] = p->queue[i];
        }
        p->n_queue = kept;
    }
    pthread_mutex_unlock(&e->lock);
    *count = n;
    return DCGM_ST_OK;
}

static void engine_policy_release_owner_locked(sim_engine *e, engine_owner owner)
{
    engine_policy_state *p = e->policy;
    if (!p)
        return;
    drop_owner_locked(p, owner);
    size_t kept = 0;
    for (size_t i = 0; i < p->n_watched; i++)
        if (p->watched[i] != owner)
            p->watched[kept++] = p->watched[i];
    p->n_watched = kept;
}

/* ---- violations -------------------------------------------------------------- */

static unsigned int cond_index(unsigned int condition)
{
    unsigned int i = 0;
    while (i < DCGM_POLICY_COND_MAX - 1 && !(condition & (1u << i)))
        i++;
    return i;
}

/* DcgmPolicyManager::SetViolation */
static void violate_locked(engine_policy_state *p, unsigned int gpu, int64_t ts,
                           dcgmPolicyCallbackResponse_v2 *response)
{
    unsigned int idx = cond_index(response->condition);
    response->version = dcgmPolicyCallbackResponse_version2;
    response->gpuId = gpu;
    for (size_t i = 0; i < p->n_watchers; i++) {
        policy_watcher *w = &p->watchers[i];
        if (w->gpu != gpu || !(w->conditions & response->condition))
            continue;
        if (ts - w->last_sent[idx] < MIN_SIGNAL_GAP_US)
            continue;
        size_t waiting = 0;
        for (size_t k = 0; k < p->n_queue; k++)
            waiting += p->queue[k].owner == w->owner;
        if (waiting >= MAX_QUEUED_PER_OWNER)
            continue;
        if (!grow((void **)&p->queue, &p->cap_queue, p->n_queue, sizeof *p->queue))
            return;
        queued_note *q = &p->queue[p->n_queue++];
        memset(q, 0, sizeof *q);
        q->owner = w->owner;
        q->note.cookie = w->cookie;
        q->note.response = *response;
        w->last_sent[idx] = ts;
    }
}

static int blank_i64(int64_t v)
{
    return v >= DCGM_INT64_BLANK;
}

/* DcgmPolicyManager::GetCounterDelta: the sample at `at` and the one before,
 * both readable counts */
static int counter_rose(const engine_ring *r, size_t at, unsigned int *current)
{
    if (at == 0)
        return 0;
    int64_t now = engine_ring_at(r, at)->num.i64, before = engine_ring_at(r, at - 1)->num.i64;
    if (blank_i64(now) || blank_i64(before) || now < 0 || before < 0 || now > UINT32_MAX ||
        before > UINT32_MAX)
        return 0;
    *current = (unsigned int)now;
    return now > before;
}

/* DcgmPolicyManager::CheckRetiredPages: the other count from its latest sample */
static int other_pages(sim_engine *e, unsigned int gpu, unsigned short field, unsigned int *pages,
                       int64_t *ts)
{
    const engine_series *s = engine_series_find_locked(e, DCGM_FE_GPU, gpu, field);
    if (!s || s->ring.count == 0)
        return 0;
    const engine_sample *last = engine_ring_at(&s->ring, s->ring.count - 1);
    if (blank_i64(last->num.i64))
        return 0;
    *pages = (unsigned int)last->num.i64;
    *ts = last->ts;
    return 1;
}

/* The policy condition a field's values are judged for; 0 for every other field. */
static unsigned int condition_of_field(unsigned short field_id)
{
    switch (field_id) {
    case DCGM_FI_DEV_ECC_DBE_VOL_DEV: return DCGM_POLICY_COND_DBE;
    case DCGM_FI_DEV_PCIE_REPLAY_TOTAL: return DCGM_POLICY_COND_PCI;
    case DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL: case DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL: case DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL: case DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL:
        return DCGM_POLICY_COND_NVLINK;
    case DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL: case DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL: return DCGM_POLICY_COND_MAX_PAGES_RETIRED;
    case DCGM_FI_DEV_GPU_TEMP_CELSIUS: return DCGM_POLICY_COND_THERMAL;
    case DCGM_FI_DEV_BOARD_POWER_WATTS: return DCGM_POLICY_COND_POWER;
    case DCGM_FI_DEV_XID_ERROR: return DCGM_POLICY_COND_XID;
    default: return 0;
    }
}

/* Called for every value stored in a series, once it is in the ring at ts:
 * DCGM's policy manager hears of every value stored, sampled or injected. */
static void engine_policy_on_value_locked(sim_engine *e, const engine_series *s, int64_t ts)
{
    engine_policy_state *p = e->policy;
    if (!p || s->group != DCGM_FE_GPU || s->entity >= DCGM_MAX_NUM_DEVICES ||
        !p->is_set[s->entity])
        return;
    unsigned int gpu = s->entity;
    const dcgmPolicy_v1 *policy = &p->current[gpu];
    unsigned int enabled = (unsigned int)policy->condition;
    /* every stored value comes through here: leave before the ring search unless it is judged */
    if (!(enabled & condition_of_field(s->field_id)))
        return;
    size_t at = engine_ring_lower_bound(&s->ring, ts);
    if (at >= s->ring.count || engine_ring_at(&s->ring, at)->ts != ts)
        return;
    const engine_sample *v = engine_ring_at(&s->ring, at);
    dcgmPolicyCallbackResponse_v2 r;
    memset(&r, 0, sizeof r);
    unsigned int count = 0;
    switch (s->field_id) {
    case DCGM_FI_DEV_ECC_DBE_VOL_DEV:
        if (!(enabled & DCGM_POLICY_COND_DBE) || !counter_rose(&s->ring, at, &count))
            return;
        r.condition = DCGM_POLICY_COND_DBE;
        r.val.dbe.timestamp = ts;
        r.val.dbe.location = 2; /* the device */
        r.val.dbe.numerrors = count;
        break;
    case DCGM_FI_DEV_PCIE_REPLAY_TOTAL:
        if (!(enabled & DCGM_POLICY_COND_PCI) || !counter_rose(&s->ring, at, &count))
            return;
        r.condition = DCGM_POLICY_COND_PCI;
        r.val.pci.timestamp = ts;
        r.val.pci.counter = count;
        break;
    case DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL:
    case DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL:
    case DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL:
    case DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL:
        if (!(enabled & DCGM_POLICY_COND_NVLINK) || !counter_rose(&s->ring, at, &count))
            return;
        r.condition = DCGM_POLICY_COND_NVLINK;
        r.val.nvlink.timestamp = ts;
        r.val.nvlink.fieldId = s->field_id;
        r.val.nvlink.counter = count;
        break;
    case DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL:
    case DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL: {
        if (!(enabled & DCGM_POLICY_COND_MAX_PAGES_RETIRED) || blank_i64(v->num.i64))
            return;
        unsigned int mine = (unsigned int)v->num.i64, other = 0;
        int64_t other_ts = 0;
        unsigned short other_field = s->field_id == DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL ? DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL : DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL;
        if (!other_pages(e, gpu, other_field, &other, &other_ts))
            return;
        unsigned int sbe = s->field_id == DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL ? mine : other;
        unsigned int dbe = s->field_id == DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL ? mine : other;
        unsigned int limit =
            (unsigned int)policy->parms[DCGM_POLICY_COND_IDX_MAX_PAGES_RETIRED].val.llval;
        if ((unsigned long long)sbe + dbe <= limit)
            return;
        r.condition = DCGM_POLICY_COND_MAX_PAGES_RETIRED;
        r.val.mpr.timestamp = other_ts < ts ? other_ts : ts; /* the older of the two */
        r.val.mpr.sbepages = sbe;
        r.val.mpr.dbepages = dbe;
        break;
    }
    case DCGM_FI_DEV_GPU_TEMP_CELSIUS: {
        if (!(enabled & DCGM_POLICY_COND_THERMAL) || blank_i64(v->num.i64))
            return;
        unsigned int temp = (unsigned int)v->num.i64;
        if (temp <= (unsigned int)policy->parms[DCGM_POLICY_COND_IDX_THERMAL].val.llval)
            return;
        r.condition = DCGM_POLICY_COND_THERMAL;
        r.val.thermal.timestamp = ts;
        r.val.thermal.thermalViolation = temp;
        break;
    }
    case DCGM_FI_DEV_BOARD_POWER_WATTS: {
        double watts = v->num.dbl;
        /* a blank, or a number no unsigned int holds, is not judged */
        if (!(enabled & DCGM_POLICY_COND_POWER) || !(watts >= 0.0) || watts >= 4294967296.0 ||
            watts >= DCGM_FP64_BLANK)
            return;
        unsigned int power = (unsigned int)watts;
        if (power <= (unsigned int)policy->parms[DCGM_POLICY_COND_IDX_POWER].val.llval)
            return;
        r.condition = DCGM_POLICY_COND_POWER;
        r.val.power.timestamp = ts;
        r.val.power.powerViolation = power;
        break;
    }
    case DCGM_FI_DEV_XID_ERROR:
        if (!(enabled & DCGM_POLICY_COND_XID) || blank_i64(v->num.i64))
            return;
        r.condition = DCGM_POLICY_COND_XID;
        r.val.xid.timestamp = ts;
        r.val.xid.errnum = (unsigned int)v->num.i64;
        break;
    default:
        return;
    }
    violate_locked(p, gpu, ts, &r);
}

/* ---- the module's hooks ------------------------------------------------------ */

const engine_module engine_policy_module = {
    .name = "policy",
    .free = engine_policy_free,
    .release_owner_locked = engine_policy_release_owner_locked,
    .stored_locked = engine_policy_on_value_locked,
};
