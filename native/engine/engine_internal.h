/*
 * engine_internal.h -- state shared by the engine_*.c files.  Nothing
 * outside the engine includes this; the interface is engine.h.
 *
 * Every function named *_locked expects the caller to hold engine->lock.
 */
#ifndef DCGM_SIM_ENGINE_INTERNAL_H
#define DCGM_SIM_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "engine.h"
#include "../node/node.h"
#include "sources/source.h"

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
} engine_ring;

typedef struct engine_watcher {
    engine_owner owner;
    int64_t freq_us;
    int64_t keep_us;
} engine_watcher;

typedef struct engine_series {
    struct engine_series *next;  /* hash chain */
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

/* an XID the health module has seen on a GPU (engine_health.c) */
typedef struct engine_xid_seen {
    unsigned int gpu;
    int64_t xid;
} engine_xid_seen;

/* What the config manager applied to one simulated GPU (engine_config.c): a
 * setting replaces the node's reading of its fields until the engine ends.
 * (A power limit goes to the value source, whose physics follow it.) */
typedef struct engine_gpu_settings {
    int has_ecc_pending;
    int64_t ecc_pending;         /* field 301 */
    int has_compute_mode;
    int64_t compute_mode;        /* field 65 */
    int has_app_clocks;
    int64_t app_mem_mhz, app_sm_mhz; /* fields 111 and 110 */
} engine_gpu_settings;

/* DCGM's config manager state (DcgmConfigManager's m_activeConfig): the
 * target configuration of each GPU id, and what was applied to each GPU */
typedef struct engine_config_state {
    int has_target[DCGM_MAX_NUM_DEVICES];
    dcgmConfig_v2 target[DCGM_MAX_NUM_DEVICES];
    engine_gpu_settings applied[DCGM_MAX_NUM_DEVICES];  /* by node GPU index */
} engine_config_state;

typedef struct engine_record_buf {
    engine_record *items;
    size_t count, cap;
} engine_record_buf;

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
    /* per field id: samples taken by passes, and those taken more than half a
     * watch interval after they were due (dcgmSimFieldStats) */
    uint64_t field_samples[DCGM_FI_MAX_FIELDS];
    uint64_t field_late[DCGM_FI_MAX_FIELDS];
    /* XIDs the health checks report, kept for the engine's life as DCGM's
     * health module keeps them */
    engine_xid_seen *xid_seen;
    size_t n_xid_seen, cap_xid_seen;
    /* per GPU id, per link: the dcgmNvLinkLinkState_t last set or read
     * (engine_nvlink.c); zero is NotSupported, a fake GPU's start */
    dcgmNvLinkLinkState_t nvlink_state[DCGM_MAX_NUM_DEVICES][DCGM_NVLINK_MAX_LINKS_PER_GPU];
    /* per NvSwitch id, per port: the state last set; a switch's ports start
     * Disabled the first time the engine looks at it (engine_nvlink.c) */
    dcgmNvLinkLinkState_t switch_link_state[DCGM_MAX_NUM_SWITCHES]
                                           [DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH];
    unsigned char switch_link_ready[DCGM_MAX_NUM_SWITCHES];
    /* NvLink entities named so far (engine_link.c) */
    struct engine_link_node *links;
    /* the host's CPUs and their utilization readings (engine_cpu.c) */
    struct engine_cpu_state *cpu;
    /* the config manager's targets and the settings it applied (engine_config.c) */
    engine_config_state config;
    /* policies, registrations and pending violations (engine_policy.c);
     * NULL until the first policy request */
    engine_policy_state *policy;
    /* modules, pause, driver attachment, introspection (engine_admin.c) */
    engine_admin_state admin;
};

/* engine.c */
int64_t engine_wall_us(void);
int64_t engine_now_locked(sim_engine *e);
const engine_entity *engine_find_entity_locked(const sim_engine *e,
                                               dcgm_field_entity_group_t group,
                                               dcgm_field_eid_t id);
int engine_gpu_lost_locked(const sim_engine *e, unsigned int gpu, int64_t t_rel);
DcgmEntityStatus_t engine_entity_status_locked(const sim_engine *e, const engine_entity *ent,
                                               int64_t t_rel);
/* MIG instances (engine_mig.c): the profile, its name, and what an instance reads where it
 * differs from its GPU (1 when *out is filled, 0 to read the GPU's value) */
struct sim_mig_profile;
const struct sim_mig_profile *engine_instance_mig_profile(const sim_engine *e, const engine_entity *ent);
const char *engine_instance_profile(const sim_engine *e, const engine_entity *ent);
int engine_instance_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                  int64_t t_rel, sim_value *out);
void engine_kick_locked(sim_engine *e);
unsigned int engine_id32(uintptr_t id);

int engine_add_entity_locked(sim_engine *e, const engine_entity *ent);

/* engine_cpu.c: the host's CPUs as entities (when DCGM would monitor them),
 * their utilization */
int engine_cpu_init(sim_engine *e);
void engine_cpu_free(sim_engine *e);
/* A sample of a CPU or core field into *out (blank but for the utilization
 * fields); 0 when the series has no value yet (its first utilization
 * reading), 1 otherwise. */
int engine_cpu_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                             int64_t now_us, sim_value *out);

/* engine_levels.c: the scenario's NvSwitches (and their ports) and Grace CPUs */
int engine_levels_init(sim_engine *e, unsigned int gpus);
int engine_levels_has_cpus(sim_engine *e);
/* 1 with *out filled when ent is one of the scenario's switches, switch ports or CPUs, else 0 */
int engine_levels_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                int64_t t_rel, sim_value *out);

/* engine_groups.c */
int engine_groups_init(sim_engine *e);
void engine_groups_free(sim_engine *e);
/* The entities of a group, special ids resolved; out holds 1024. */
int engine_group_entities_locked(sim_engine *e, dcgmGpuGrp_t id,
                                 dcgmGroupEntityPair_t *out, unsigned int *count);
engine_group *engine_group_slot_locked(sim_engine *e, dcgmGpuGrp_t id);
const engine_field_group *engine_field_group_locked(const sim_engine *e, dcgmFieldGrp_t id);
void engine_groups_release_owner_locked(sim_engine *e, engine_owner owner);

/* engine_store.c */
engine_series *engine_series_find_locked(const sim_engine *e, dcgm_field_entity_group_t group,
                                         dcgm_field_eid_t entity, unsigned short field_id);
engine_series *engine_series_get_locked(sim_engine *e, dcgm_field_entity_group_t group,
                                        dcgm_field_eid_t entity, unsigned short field_id,
                                        char type);
void engine_series_remove_locked(sim_engine *e, engine_series *s);
void engine_series_free_all_locked(sim_engine *e);
void engine_ring_clear(engine_ring *r);
const engine_sample *engine_ring_at(const engine_ring *r, size_t i);
size_t engine_ring_lower_bound(const engine_ring *r, int64_t ts);
int engine_series_append_locked(sim_engine *e, engine_series *s, int64_t ts,
                                const engine_sample *value, int64_t now_us);
void engine_storage_key(const dcgm_field_meta_t *meta, dcgm_field_entity_group_t *group,
                        dcgm_field_eid_t *entity);
void engine_value_from_sim(const sim_value *v, char type, engine_sample *out,
                           char *strbuf, size_t strlen);
void engine_blank_sample(char type, int64_t code_offset, engine_sample *out, char *strbuf,
                         size_t strlen);

/* engine_nvlink.c: a GPU's link states, a live GPU's read afresh;
 * DCGM_ST_BADPARAM for no such GPU */
int engine_nvlink_gpu_states_locked(sim_engine *e, unsigned int gpu, int64_t t_rel,
                                    dcgmNvLinkLinkState_t *states);

/* engine_nvlink.c: an NvSwitch entity's port states (Disabled until set), NULL
 * for anything else */
dcgmNvLinkLinkState_t *engine_nvlink_switch_states_locked(sim_engine *e, const engine_entity *ent);

/* engine_link.c: DCGM_FE_LINK entities, found (and kept) by their packed id;
 * NULL for a link whose owner or index does not exist */
const engine_entity *engine_link_entity_locked(const sim_engine *e, dcgm_field_eid_t raw);
void engine_links_free(sim_engine *e);
/* A link's own reading of field_id into out: 1 when ent is a link (out filled), else 0 */
int engine_link_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                              int64_t t_rel, sim_value *out);

/* engine_watch.c */
int engine_run_pass_locked(sim_engine *e, int64_t now_us);
void engine_pump_events_locked(sim_engine *e, int64_t now_us);
int64_t engine_next_due_locked(const sim_engine *e);
void engine_sample_entity_locked(sim_engine *e, const engine_entity *ent,
                                 unsigned short field_id, int64_t t_rel, sim_value *out);
int engine_watch_one_locked(sim_engine *e, engine_owner owner, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity, unsigned short field_id, int64_t freq_us,
                            int64_t keep_us, int *created);
void engine_unwatch_one_locked(sim_engine *e, engine_owner owner, engine_series *s);
int64_t engine_retention_us(int64_t freq_us, double max_keep_age_s, int max_keep_samples);

/* engine_config.c: a setting the config manager applied replaces the node's
 * reading of one field of node GPU gpu (out is a reading, kind OK) */
void engine_config_overlay_locked(const sim_engine *e, unsigned int gpu,
                                  unsigned short field_id, sim_value *out);

/* engine_health.c */
engine_owner engine_health_owner(engine_owner owner);
/* Called for every value stored in a series: an XID the health module watches is remembered. */
void engine_health_note_xid_locked(sim_engine *e, const engine_series *s, int64_t xid);

/* engine_health.c: RemoveUnhealthyGpus's check (engine_topo.c); takes the lock */
int engine_health_unhealthy_gpus(sim_engine *e, const unsigned int *gpus, unsigned int n,
                                 uint64_t *unhealthy);
/* engine_health.c: one incident into out (the first 1024 are kept) */
void engine_health_vincident(dcgmHealthResponse_v5 *out, dcgm_field_entity_group_t group,
                             dcgm_field_eid_t id, dcgmHealthSystems_t system,
                             dcgmHealthWatchResults_t health, int code, const char *fmt,
                             va_list ap);

/* engine_health_host.c: CPU and IMEX (global) health watches and checks */
void engine_health_watch_cpu_locked(sim_engine *e, engine_owner owner, const engine_entity *cpu,
                                    unsigned int systems, int64_t freq_us, double keep_s);
void engine_health_watch_global_locked(sim_engine *e, engine_owner owner, unsigned int systems,
                                       int64_t freq_us, double keep_s);
void engine_health_check_cpu_locked(sim_engine *e, const engine_entity *cpu, unsigned int systems,
                                    int64_t now, dcgmHealthResponse_v5 *out);
void engine_health_check_global_locked(sim_engine *e, const dcgmGroupEntityPair_t *members,
                                       unsigned int n, unsigned int systems, int64_t t_rel,
                                       dcgmHealthResponse_v5 *out);
/* engine_policy.c */
engine_owner engine_policy_owner(engine_owner owner);
/* Called for every value stored in a series, once it is in the ring at ts. */
void engine_policy_on_value_locked(sim_engine *e, const engine_series *s, int64_t ts);
void engine_policy_release_owner_locked(sim_engine *e, engine_owner owner);
void engine_policy_free(sim_engine *e);
/* engine_admin.c */
void engine_admin_init_locked(sim_engine *e);
/* A request that needs module `module`: loads it as DCGM loads modules
 * lazily (Loaded, or Paused while telemetry is paused).  DCGM_ST_MODULE_NOT_LOADED
 * when it is on the denylist, DCGM_ST_GPUS_DETACHED while the driver is
 * detached and the module was never loaded. */
int engine_module_use_locked(sim_engine *e, int module);
/* A GPU, GPU instance or compute instance: what a detached driver hides. */
int engine_admin_hidden_locked(const sim_engine *e, dcgm_field_entity_group_t group);
/* Whether telemetry is paused for a diagnostic (the core module is paused). */
int engine_admin_paused_locked(const sim_engine *e);
/* Whether nothing of an entity of this group is sampled now: its GPU is
 * detached, or paused with the rest of telemetry. */
int engine_admin_idle_locked(const sim_engine *e, dcgm_field_entity_group_t group);

/* engine_read.c */
int engine_records_push(engine_record_buf *buf, const engine_record *rec);
/* The series a reader of (group, entity, field) sees, stored under the field's
 * storage key; NULL when nothing is kept for it (a series nobody watches is
 * only there for injected values). */
const engine_series *engine_visible_series_locked(const sim_engine *e,
                                                  dcgm_field_entity_group_t group,
                                                  dcgm_field_eid_t entity, unsigned short field_id);
void engine_records_free(engine_record_buf *buf);
void engine_record_to_v1(const engine_record *rec, dcgmFieldValue_v1 *out);
void engine_record_blank(engine_record *rec, int status);
void engine_record_from_sample(engine_record *rec, const engine_sample *s);
void engine_latest_record_locked(sim_engine *e, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t entity, unsigned short field_id,
                                 engine_record *rec);
void engine_live_record_locked(sim_engine *e, const engine_entity *ent,
                               unsigned short field_id, int64_t now_us, engine_record *rec);

#endif /* DCGM_SIM_ENGINE_INTERNAL_H */
