/*
 * core.h -- the engine's cache core: entities (GPUs, MIG instances, links,
 * the scenario's switches and CPUs), groups and field groups, watches, the
 * sample cache and the reads served from it, on a value source.  The one
 * header of native/engine/core/ that code outside it includes: the backends
 * and the hostengine (through ../engine.h) for the calls below, and DCGM's
 * modules (native/engine/modules/) for the engine's state and the locked
 * helpers further down, on which they are built.
 *
 * An engine knows nothing of handles: every call names the engine and,
 * where state is created or removed, the owner (the connection) on whose
 * behalf it acts, so that a separate hostengine process can serve many
 * connections from one engine and clean up after each.  All functions not
 * named *_locked are thread safe.  Enumeration results are handed to an emit
 * function that runs without the engine lock held, so it may call back into
 * the engine.
 *
 * The core never calls a module by name: a module that needs to see values
 * stored, take part in sampling or keep state fills an engine_module (below)
 * and ../engine.c hands the core their table.  Dependencies go one way:
 * modules -> core -> value sources -> node.
 *
 *   engine_core.c     lifecycle, the clock, the cache-manager thread, entities
 *   engine_modules.c  DCGM's module table (statuses, pause, detached driver)
 *                     and the modules' hooks
 *   engine_groups.c   groups and field groups
 *   engine_watch.c    watches and sampling passes
 *   engine_store.c    the per-series rings and value encoding
 *   engine_read.c     reads of the cache
 *   engine_mig.c      MIG instances' readings
 *   engine_levels.c   the scenario's NvSwitches and Grace CPUs
 *   engine_link.c     NvLink entities and link states
 *   engine_device.c   device attributes, profiling groups, the node's values
 *   engine_misc.c     versions, environment variables, field summaries
 *   engine_log.c      DCGM's debug log
 */
#ifndef DCGM_SIM_CORE_H
#define DCGM_SIM_CORE_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "../../dcgm_abi.h"
#include "../../node/node.h"
#include "../sources/source.h"
#include "engine_log.h"

typedef struct sim_engine sim_engine;
typedef struct engine_module engine_module;

/* The process that embeds the engine acts as owner 0; remote connections
 * served by a hostengine get their own ids. */
typedef unsigned int engine_owner;
#define ENGINE_OWNER_EMBEDDED 0u
/* Set on the owner of the watches dcgmHealthSet makes for an owner (DCGM's
 * health watcher of that connection): never on an owner handed out. */
#define ENGINE_OWNER_HEALTH 0x80000000u
/* Set on the owner of the watches a policy registration makes (DCGM's policy
 * manager watcher of that connection); owner ids handed out stay below it. */
#define ENGINE_OWNER_POLICY 0x40000000u

/* ---- lifecycle ---------------------------------------------------------- */

/*
 * Build an engine on a value source (source.h): NULL, "" or "models" is the
 * node loaded from spec (see sim_node_load), "nvml" the NVML library (spec
 * unused), with modules (NULL-terminated; NULL for none) plugged in.  In AUTO
 * mode a cache-manager thread samples due watches on its own; in MANUAL mode
 * only engine_update_all_fields samples.  On failure returns the source's
 * DCGM_ST_* code with one line in err.  engine_create_source (../engine.h)
 * is this with DCGM's modules.
 */
int engine_core_create(const char *source, const char *spec, dcgmOperationMode_t mode,
                       const engine_module *const *modules, sim_engine **out, char *err,
                       size_t errlen);
/* One line naming the engine's value source: "models", or "nvml <path>". */
void engine_source_describe(const sim_engine *engine, char *buf, size_t len);
/* Stops the cache-manager thread and frees everything, node included. */
void engine_destroy(sim_engine *engine);
/* Removes the groups, field groups and watchers an owner created, its
 * health watches included. */
void engine_release_owner(sim_engine *engine, engine_owner owner);
/* Microseconds since the Unix epoch at which the node started (t_rel 0). */
int64_t engine_start_time_us(const sim_engine *engine);
/* Per-field statistics of the engine and its value source into stats (at
 * most capacity rows); *count is how many there are. */
int engine_field_stats(sim_engine *engine, dcgmSimFieldStats_t *stats, int capacity, int *count);

/* ---- entities ----------------------------------------------------------- */

int engine_gpu_ids(sim_engine *engine, int only_supported, unsigned int *ids, int *count);
int engine_gpu_status(sim_engine *engine, unsigned int gpu, DcgmEntityStatus_t *status);
int engine_entity_group_entities(sim_engine *engine, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t *entities, int *count, unsigned int flags);
int engine_create_fake_entities(sim_engine *engine, dcgmCreateFakeEntities_v2 *request);
int engine_mig_hierarchy(sim_engine *engine, dcgmMigHierarchy_v2 *hierarchy);
int engine_device_attributes(sim_engine *engine, unsigned int gpu, dcgmDeviceAttributes_v3 *attr);

/* ---- groups and field groups -------------------------------------------- */

int engine_group_create(sim_engine *engine, engine_owner owner, dcgmGroupType_t type,
                        const char *name, dcgmGpuGrp_t *id);
int engine_group_add_entity(sim_engine *engine, dcgmGpuGrp_t id,
                            dcgm_field_entity_group_t group, dcgm_field_eid_t entity);
int engine_group_remove_entity(sim_engine *engine, dcgmGpuGrp_t id,
                               dcgm_field_entity_group_t group, dcgm_field_eid_t entity);
int engine_group_destroy(sim_engine *engine, dcgmGpuGrp_t id);
int engine_group_get_info(sim_engine *engine, dcgmGpuGrp_t id, dcgmGroupInfo_v3 *info);
/* Every group id, DCGM's own two included, ascending (dcgmGroupGetAllIds). */
typedef struct engine_group_ids {
    unsigned int count;
    unsigned int ids[DCGM_MAX_NUM_GROUPS];
} engine_group_ids;
int engine_group_get_all_ids(sim_engine *engine, engine_group_ids *out);

int engine_field_group_create(sim_engine *engine, engine_owner owner, int count,
                              const unsigned short *field_ids, const char *name,
                              dcgmFieldGrp_t *id);
int engine_field_group_destroy(sim_engine *engine, dcgmFieldGrp_t id);
int engine_field_group_get_info(sim_engine *engine, dcgmFieldGroupInfo_v1 *info);
int engine_field_group_get_all(sim_engine *engine, dcgmAllFieldGroup_v1 *all);

/* ---- watches and the cache ---------------------------------------------- */

int engine_watch_fields(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group,
                        dcgmFieldGrp_t field_group, long long update_freq_us,
                        double max_keep_age_s, int max_keep_samples);
int engine_unwatch_fields(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group,
                          dcgmFieldGrp_t field_group);
int engine_watch_field_value(sim_engine *engine, engine_owner owner,
                             dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                             unsigned short field_id, long long update_freq_us,
                             double max_keep_age_s, int max_keep_samples);
int engine_unwatch_field_value(sim_engine *engine, engine_owner owner,
                               dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                               unsigned short field_id, int clear_cache);
/* One pass over due watches; returns when it is done whatever wait says. */
int engine_update_all_fields(sim_engine *engine, int wait);
int engine_inject(sim_engine *engine, dcgm_field_entity_group_t group,
                  dcgm_field_eid_t entity, const dcgmFieldValue_v1 *value);
int engine_empty_cache(sim_engine *engine);

/* ---- reads -------------------------------------------------------------- */

/* Receives one record; non-zero stops the enumeration.  The record is only
 * valid during the call. */
typedef int (*engine_emit_fn)(void *ctx, dcgm_field_entity_group_t group,
                              dcgm_field_eid_t entity, dcgmFieldValue_v1 *value);

/* gpu_only: the v1 API flavour (latest skips non-GPU entities, values-since
 * refuses groups holding them). */
int engine_latest_values(sim_engine *engine, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                         int gpu_only, engine_emit_fn emit, void *ctx);
int engine_values_since(sim_engine *engine, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long since, long long *next_since, int gpu_only,
                        engine_emit_fn emit, void *ctx);
int engine_entity_latest(sim_engine *engine, dcgm_field_entity_group_t group,
                         dcgm_field_eid_t entity, const unsigned short *fields,
                         unsigned int count, dcgmFieldValue_v1 *values);
int engine_entities_latest(sim_engine *engine, const dcgmGroupEntityPair_t *entities,
                           unsigned int entity_count, const unsigned short *fields,
                           unsigned int field_count, unsigned int flags,
                           dcgmFieldValue_v2 *values);
int engine_multiple_values(sim_engine *engine, unsigned int gpu, unsigned short field_id,
                           int *count, long long start_ts, long long end_ts,
                           dcgmOrder_t order, dcgmFieldValue_v1 *values);

/* ---- devices, the cache's bookkeeping, versions, simulator extensions ---- */

/* The cache's state of one field of one entity (dcgmGetCacheManagerFieldInfo):
 * DCGM_ST_NOT_WATCHED when nothing is kept for it. */
int engine_cache_field_info(sim_engine *engine, dcgmCacheManagerFieldInfo_v4_t *info);
/* engine_device.c: the profiling metric groups (dcgmProfGetSupportedMetricGroups) */
int engine_prof_metric_groups(sim_engine *engine, dcgmProfGetMetricGroups_v3 *groups);
/* engine_misc.c: dcgmVersionInfo's answer (this library's build, which a
 * hostengine gives too), dcgmHostengineEnvironmentVariableInfo over this
 * process's environment, and dcgmGetFieldSummary over the stored samples. */
int engine_version_info(dcgmVersionInfo_t *info);
int engine_env_var_info(dcgmEnvVarInfo_t *info);
int engine_field_summary(sim_engine *engine, dcgmFieldSummaryRequest_v1 *request);
/* The node's value at t_rel_us, encoded as a stored sample would be. */
int engine_sim_value_at(sim_engine *engine, unsigned int gpu, unsigned short field_id,
                        int64_t t_rel_us, dcgmFieldValue_v1 *value);

/* ==== for DCGM's modules: the engine's state and its locked helpers ======
 * Every function named *_locked expects the caller to hold engine->lock. */

#define ENGINE_MAX_GROUPS DCGM_MAX_NUM_GROUPS
#define ENGINE_MAX_FIELD_GROUPS DCGM_MAX_NUM_FIELD_GROUPS
/* ids 0 (all GPUs) and 1 (all NvSwitches) are DCGM's internal groups */
#define ENGINE_FIRST_USER_GROUP 2
/* ids 0..2 are DCGM's internal field groups (30 s, hourly, job) */
#define ENGINE_FIRST_USER_FIELD_GROUP 3
#define ENGINE_MAX_FIELDS_PER_GROUP (DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP - 1)
#define ENGINE_HASH_BUCKETS 4096
/* a series nobody watches (only injected values) keeps at most this many */
#define ENGINE_UNWATCHED_CAP 65536
#define ENGINE_MIN_UPDATE_US 1000
#define ENGINE_NO_GPU 0xffffffffu

typedef struct engine_entity {
    dcgm_field_entity_group_t group;
    dcgm_field_eid_t id;
    dcgm_field_entity_group_t parent_group;
    dcgm_field_eid_t parent_id;
    int fake;
    unsigned int gpu;            /* node GPU that backs it, ENGINE_NO_GPU if none */
    unsigned int index;          /* instance index on its GPU (GPU_I / GPU_CI) */
} engine_entity;

typedef struct engine_sample {
    int64_t ts;
    union {
        int64_t i64;
        double dbl;
    } num;
    char *str;                   /* owned copy, string fields only */
} engine_sample;

/* growable ring, oldest first; timestamps ascending */
typedef struct engine_ring {
    engine_sample *items;
    size_t head, count, cap;
    /* the newest sample's ts while count > 0: an append or a read of what is new
     * answers from here without touching the items, which are cold by the next pass */
    int64_t newest_ts;
} engine_ring;

typedef struct engine_watcher {
    engine_owner owner;
    int64_t freq_us;
    int64_t keep_us;
} engine_watcher;

typedef struct engine_series {
    struct engine_series *next;  /* hash chain */
    size_t listed_at;            /* its index in the engine's series list */
    dcgm_field_entity_group_t group;
    dcgm_field_eid_t entity;
    unsigned short field_id;
    char type;
    int is_event;                /* sampled only when the node has an event */
    engine_watcher *watchers;
    size_t n_watchers, cap_watchers;
    int64_t freq_us;             /* min over watchers */
    int64_t keep_us;             /* max over watchers */
    int64_t last_sampled_us;     /* stamp of the pass that last sampled it, 0 = never */
    int64_t events_done_rel;     /* event fields: node events up to here are in the ring */
    int last_status;             /* outcome of the last sampling attempt */
    int64_t fetch_count;         /* values read from the source for it */
    int64_t exec_us;             /* wall time those reads took */
    engine_ring ring;
} engine_series;

typedef struct engine_group {
    int used;
    unsigned int id;             /* DCGM's ids only grow: never the slot it sits in */
    engine_owner owner;
    char name[DCGM_MAX_STR_LENGTH];
    unsigned int count;
    dcgmGroupEntityPair_t entities[DCGM_GROUP_MAX_ENTITIES_V2];
    unsigned int health_systems; /* dcgmHealthSet's systems */
} engine_group;

typedef struct engine_field_group {
    int used;
    unsigned int id;
    engine_owner owner;
    char name[DCGM_MAX_STR_LENGTH];
    unsigned int count;
    unsigned short ids[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
} engine_field_group;

/* DCGM's module ids (dcgmModuleId_t) and statuses (dcgmModuleStatus_t) */
#define ENGINE_MODULE_CORE 0
#define ENGINE_MODULE_NVSWITCH 1
#define ENGINE_MODULE_INTROSPECT 3
#define ENGINE_MODULE_HEALTH 4
#define ENGINE_MODULE_POLICY 5
#define ENGINE_MODULE_CONFIG 6
#define ENGINE_MODULE_DIAG 7
#define ENGINE_MODULE_PROFILING 8
#define ENGINE_MODULE_COUNT 11
#define ENGINE_MODULE_NOT_LOADED 0
#define ENGINE_MODULE_DENYLISTED 1
#define ENGINE_MODULE_FAILED 2
#define ENGINE_MODULE_LOADED 3
#define ENGINE_MODULE_UNLOADED 4
#define ENGINE_MODULE_PAUSED 5
#define ENGINE_MODULE_RELOADABLE 6

typedef struct engine_admin_state {
    int module_status[ENGINE_MODULE_COUNT];
    int gpus_detached;           /* dcgmDetachDriver until dcgmAttachDriver */
    /* the last CPU tick counts introspection read (0: none yet) */
    long long cpu_prev_total, cpu_prev_user, cpu_prev_system;
} engine_admin_state;

/* a read result before it is handed out, compact enough to batch */
typedef struct engine_record {
    dcgm_field_entity_group_t group;
    dcgm_field_eid_t entity;
    unsigned short field_id;
    char type;
    int status;
    int64_t ts;
    union {
        int64_t i64;
        double dbl;
        char str[DCGM_MAX_STR_LENGTH];
    } v;
} engine_record;

typedef struct engine_record_buf {
    engine_record *items;
    size_t count, cap;
} engine_record_buf;

/* The modules' own state, which only they look inside (native/engine/modules/). */
typedef struct engine_policy_state engine_policy_state;

struct sim_engine {
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* CLOCK_MONOTONIC */
    pthread_t thread;
    int thread_started;
    int stopping;
    dcgmOperationMode_t mode;
    value_source *src;           /* where GPUs and values come from */
    int64_t t0_us;
    int64_t last_now_us;
    engine_entity *entities;
    size_t n_entities, cap_entities;
    engine_group *groups[ENGINE_MAX_GROUPS];
    engine_field_group *field_groups[ENGINE_MAX_FIELD_GROUPS];
    /* the next ids handed out: a sequence, as DCGM's group managers keep
     * (DcgmGroupManager::GetNextGroupId, DcgmFieldGroupManager), so an id
     * is never reused after a delete */
    unsigned int next_group_id, next_field_group_id;
    engine_series *buckets[ENGINE_HASH_BUCKETS];
    size_t n_series;
    /* every series, densely: the sampling pass, the event pump and the next-due
     * search walk this, not the 4,096 buckets, several times a tick */
    engine_series **series_list;
    size_t series_list_cap;
    /* per field id: samples taken by passes, and those taken more than half a
     * watch interval after they were due (dcgmSimFieldStats) */
    uint64_t field_samples[DCGM_FI_MAX_FIELDS];
    uint64_t field_late[DCGM_FI_MAX_FIELDS];
    /* XIDs the health checks report, kept for the engine's life as DCGM's
     * health module keeps them (modules/health/) */
    struct engine_xid_seen *xid_seen;
    size_t n_xid_seen, cap_xid_seen;
    /* per GPU id, per link: the dcgmNvLinkLinkState_t last set or read
     * (engine_link.c); zero is NotSupported, a fake GPU's start */
    dcgmNvLinkLinkState_t nvlink_state[DCGM_MAX_NUM_DEVICES][DCGM_NVLINK_MAX_LINKS_PER_GPU];
    /* per NvSwitch id, per port: the state last set; a switch's ports start
     * Disabled the first time the engine looks at it (engine_link.c) */
    dcgmNvLinkLinkState_t switch_link_state[DCGM_MAX_NUM_SWITCHES]
                                           [DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH];
    unsigned char switch_link_ready[DCGM_MAX_NUM_SWITCHES];
    /* NvLink entities named so far (engine_link.c) */
    struct engine_link_node *links;
    /* the host's CPUs and their utilization readings (modules/cpu/) */
    struct engine_cpu_state *cpu;
    /* the config manager's targets and the settings it applied (modules/config/) */
    struct engine_config_state *config;
    /* policies, registrations and pending violations (modules/policy/);
     * NULL until the first policy request */
    engine_policy_state *policy;
    /* module statuses, pause, driver attachment (engine_modules.c; the
     * requests that change them are modules/admin/'s), introspection */
    engine_admin_state admin;
    /* the modules plugged into this engine (engine_core_create), NULL-terminated */
    const engine_module *const *modules;
};

/* ---- what a module plugs into the core -----------------------------------
 * Each hook may be NULL.  They run in the order of the engine's module table,
 * under the engine's lock where named *_locked (init, add_entities and free
 * run while the engine is not shared). */
struct engine_module {
    const char *name;
    /* the value source is open, nothing else built yet: the module's own
     * state (DCGM_ST_*; a failure ends the creation, free runs) */
    int (*init)(sim_engine *e);
    /* after the GPUs and their MIG instances: entities the module owns (DCGM_ST_*) */
    int (*add_entities)(sim_engine *e);
    /* the engine is going (or failed to start): frees the module's state */
    void (*free)(sim_engine *e);
    /* a connection is gone: drops what it registered with the module */
    void (*release_owner_locked)(sim_engine *e, engine_owner owner);
    /* a watched series of ent the module samples itself: 1 with *out filled,
     * 0 when there is no value to store yet, -1 when it is not the module's */
    int (*sample_series_locked)(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                int64_t now_us, sim_value *out);
    /* ent's reading of a field the module answers (1, *out filled), else 0 */
    int (*sample_locked)(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                         int64_t t_rel, sim_value *out);
    /* a live GPU's reading from the value source (kind OK), which the module may replace */
    void (*overlay_locked)(const sim_engine *e, unsigned int gpu, unsigned short field_id,
                           sim_value *out);
    /* a value is about to be stored in s (sampled or injected) */
    void (*storing_locked)(sim_engine *e, const engine_series *s, const engine_sample *value);
    /* a value is now in s's ring at ts */
    void (*stored_locked)(sim_engine *e, const engine_series *s, int64_t ts);
};

/* engine_core.c: the clock, entities, the cache-manager thread */
int64_t engine_wall_us(void);
int64_t engine_now_locked(sim_engine *e);
const engine_entity *engine_find_entity_locked(const sim_engine *e,
                                               dcgm_field_entity_group_t group,
                                               dcgm_field_eid_t id);
int engine_gpu_lost_locked(const sim_engine *e, unsigned int gpu, int64_t t_rel);
DcgmEntityStatus_t engine_entity_status_locked(const sim_engine *e, const engine_entity *ent,
                                               int64_t t_rel);
void engine_kick_locked(sim_engine *e);
int engine_add_entity_locked(sim_engine *e, const engine_entity *ent);

/* engine_modules.c: DCGM's module table.  A request that needs module
 * `module`: loads it as DCGM loads modules lazily (Loaded, or Paused while
 * telemetry is paused).  DCGM_ST_MODULE_NOT_LOADED when it is on the
 * denylist, DCGM_ST_GPUS_DETACHED while the driver is detached and the
 * module was never loaded. */
int engine_module_use_locked(sim_engine *e, int module);
/* Whether telemetry is paused for a diagnostic (the core module is paused). */
int engine_admin_paused_locked(const sim_engine *e);

/* engine_levels.c: whether the scenario has Grace CPUs (they replace the host's) */
int engine_levels_has_cpus(sim_engine *e);

/* engine_groups.c: the entities of a group, special ids resolved; out holds 1024. */
int engine_group_entities_locked(sim_engine *e, dcgmGpuGrp_t id,
                                 dcgmGroupEntityPair_t *out, unsigned int *count);
engine_group *engine_group_slot_locked(sim_engine *e, dcgmGpuGrp_t id);

/* engine_store.c */
engine_series *engine_series_find_locked(const sim_engine *e, dcgm_field_entity_group_t group,
                                         dcgm_field_eid_t entity, unsigned short field_id);
engine_series *engine_series_get_locked(sim_engine *e, dcgm_field_entity_group_t group,
                                        dcgm_field_eid_t entity, unsigned short field_id,
                                        char type);
const engine_sample *engine_ring_at(const engine_ring *r, size_t i);
size_t engine_ring_lower_bound(const engine_ring *r, int64_t ts);
void engine_ring_prefetch_append(const engine_ring *r);
void engine_ring_prefetch_newest(const engine_ring *r);
int engine_series_append_locked(sim_engine *e, engine_series *s, int64_t ts,
                                const engine_sample *value, int64_t now_us);
void engine_storage_key(const dcgm_field_meta_t *meta, dcgm_field_entity_group_t *group,
                        dcgm_field_eid_t *entity);
void engine_value_from_sim(const sim_value *v, char type, engine_sample *out,
                           char *strbuf, size_t strlen);

/* engine_link.c: a GPU's link states, a live GPU's read afresh;
 * DCGM_ST_BADPARAM for no such GPU */
int engine_nvlink_gpu_states_locked(sim_engine *e, unsigned int gpu, int64_t t_rel,
                                    dcgmNvLinkLinkState_t *states);
/* engine_link.c: an NvSwitch entity's port states (Disabled until set), NULL
 * for anything else */
dcgmNvLinkLinkState_t *engine_nvlink_switch_states_locked(sim_engine *e, const engine_entity *ent);

/* engine_watch.c */
int engine_run_pass_locked(sim_engine *e, int64_t now_us);
void engine_pump_events_locked(sim_engine *e, int64_t now_us);
void engine_sample_entity_locked(sim_engine *e, const engine_entity *ent,
                                 unsigned short field_id, int64_t t_rel, sim_value *out);
int engine_watch_one_locked(sim_engine *e, engine_owner owner, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity, unsigned short field_id, int64_t freq_us,
                            int64_t keep_us, int *created);
void engine_unwatch_one_locked(sim_engine *e, engine_owner owner, engine_series *s);
int64_t engine_retention_us(int64_t freq_us, double max_keep_age_s, int max_keep_samples);

/* engine_read.c: the series a reader of (group, entity, field) sees, stored
 * under the field's storage key; NULL when nothing is kept for it (a series
 * nobody watches is only there for injected values). */
const engine_series *engine_visible_series_locked(const sim_engine *e,
                                                  dcgm_field_entity_group_t group,
                                                  dcgm_field_eid_t entity, unsigned short field_id);
void engine_live_record_locked(sim_engine *e, const engine_entity *ent,
                               unsigned short field_id, int64_t now_us, engine_record *rec);

#endif /* DCGM_SIM_CORE_H */
