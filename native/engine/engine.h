/*
 * engine.h -- the simulated hostengine: entities, groups, field groups,
 * watches, the sample cache and the reads served from it.
 *
 * An engine owns one simulated node and knows nothing of handles: every call
 * names the engine and, where state is created or removed, the owner (the
 * connection) on whose behalf it acts, so that a separate hostengine process
 * can serve many connections from one engine and clean up after each.
 * All functions are thread safe.  Enumeration results are handed to an emit
 * function that runs without the engine lock held, so it may call back into
 * the engine.
 */
#ifndef DCGM_SIM_ENGINE_H
#define DCGM_SIM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../dcgm_abi.h"

typedef struct sim_engine sim_engine;

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
 * Build an engine on a node loaded from spec (see sim_node_load).  In AUTO
 * mode a cache-manager thread samples due watches on its own; in MANUAL mode
 * only engine_update_all_fields samples.  On failure returns the node's
 * DCGM_ST_* code with one line in err.
 */
int engine_create(const char *spec, dcgmOperationMode_t mode, sim_engine **out,
                  char *err, size_t errlen);
/*
 * The same on a chosen value source (source.h): NULL, "" or "models" is the
 * node from spec, "nvml" the NVML library (spec unused).
 */
int engine_create_source(const char *source, const char *spec, dcgmOperationMode_t mode,
                         sim_engine **out, char *err, size_t errlen);
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

/* ---- health, profiling, simulator extensions ---------------------------- */

/* DCGM's health module on the cache (engine_health.c).  health_set watches
 * what the systems need on behalf of the owner's health watcher, with DCGM's
 * per-system floors over update_interval_us / max_keep_age_s (dcgmHealthSet
 * passes 30 s and 600 s). */
int engine_health_set(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group,
                      unsigned int systems, long long update_interval_us, double max_keep_age_s);
int engine_health_get(sim_engine *engine, dcgmGpuGrp_t group, unsigned int *systems);
int engine_health_check(sim_engine *engine, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out);

/* DCGM's policy manager on the cache (engine_policy.c).  policy_get writes
 * one policy per GPU of the group (at most DCGM_MAX_NUM_DEVICES) and sets
 * *count to how many.  policy_register adds, for the owner, a watcher of the
 * conditions on every GPU of the group, its violations tagged with cookie;
 * policy_unregister drops all the owner's.  policy_take moves up to capacity
 * of the owner's pending violations, oldest first, into out. */
typedef struct engine_policy_note {
    uint32_t cookie;                   /* the registration's */
    uint32_t reserved;
    dcgmPolicyCallbackResponse_v2 response;
} engine_policy_note;
int engine_policy_set(sim_engine *engine, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy);
int engine_policy_get(sim_engine *engine, dcgmGpuGrp_t group, dcgmPolicy_v1 *out,
                      unsigned int *count);
int engine_policy_register(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group,
                           unsigned int conditions, uint32_t cookie);
int engine_policy_unregister(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group);
int engine_policy_take(sim_engine *engine, engine_owner owner, engine_policy_note *out,
                       unsigned int capacity, unsigned int *count);

/* NvLink link states (engine_nvlink.c).  status is always the v5 record; the
 * API converts for older versions. */
int engine_nvlink_status(sim_engine *engine, dcgmNvLinkStatus_v5 *status);
int engine_nvlink_set_state(sim_engine *engine, const dcgmSetNvLinkLinkState_v1 *request);
/* Chips and how they connect (engine_topo.c).  Topologies are always the v2
 * records; the API converts for v1 callers. */
int engine_gpu_chip_arch(sim_engine *engine, unsigned int gpu, unsigned int *arch);
int engine_device_topology(sim_engine *engine, unsigned int gpu, dcgmDeviceTopology_v2 *out);
int engine_group_topology(sim_engine *engine, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out);
int engine_select_gpus_by_topology(sim_engine *engine, uint64_t input, unsigned int num_gpus,
                                   uint64_t hints, uint64_t *output);
int engine_nvlink_p2p_status(sim_engine *engine, dcgmNvLinkP2PStatus_v1 *status);
/* The cache's state of one field of one entity (dcgmGetCacheManagerFieldInfo):
 * DCGM_ST_NOT_WATCHED when nothing is kept for it. */
int engine_cache_field_info(sim_engine *engine, dcgmCacheManagerFieldInfo_v4_t *info);

/* The CPUs and the cores each owns (engine_cpu.c): hierarchy is the v2
 * record, its version checked; DCGM_ST_MODULE_NOT_LOADED when the engine
 * monitors no CPUs (neither the host's nor fake ones). */
int engine_cpu_hierarchy(sim_engine *engine, dcgmCpuHierarchy_v2 *hierarchy);
int engine_prof_metric_groups(sim_engine *engine, dcgmProfGetMetricGroups_v3 *groups);
/* engine_misc.c: dcgmVersionInfo's answer (this library's build, which a
 * hostengine gives too), dcgmHostengineEnvironmentVariableInfo over this
 * process's environment, and dcgmGetFieldSummary over the stored samples. */
int engine_version_info(dcgmVersionInfo_t *info);
int engine_env_var_info(dcgmEnvVarInfo_t *info);
int engine_field_summary(sim_engine *engine, dcgmFieldSummaryRequest_v1 *request);
/* DCGM's config manager (engine_config.c): dcgmConfigSet / Get / Enforce.
 * One message carries a call's input and everything it answers, as DCGM's
 * config module messages do (dcgm_config_msg_*): the errors a call adds to
 * the caller's dcgmStatus_t travel back in statuses (at most
 * DCGM_MAX_NUM_DEVICES, as in DCGM). */
typedef struct engine_config_msg {
    unsigned int req_type;       /* get: DCGM_CONFIG_TARGET_STATE or _CURRENT_STATE */
    unsigned int num_configs;    /* get: entries of configs filled */
    unsigned int num_statuses;   /* entries of statuses filled */
    unsigned int reserved;
    dcgmConfig_v2 config;        /* set: the configuration asked for */
    dcgmConfig_v2 configs[DCGM_MAX_NUM_DEVICES];
    dcgmErrorInfo_t statuses[DCGM_MAX_NUM_DEVICES];
} engine_config_msg;
int engine_config_set(sim_engine *engine, dcgmGpuGrp_t group, engine_config_msg *msg);
int engine_config_get(sim_engine *engine, dcgmGpuGrp_t group, engine_config_msg *msg);
int engine_config_enforce(sim_engine *engine, dcgmGpuGrp_t group, engine_config_msg *msg);

/* The node's value at t_rel_us, encoded as a stored sample would be. */
int engine_sim_value_at(sim_engine *engine, unsigned int gpu, unsigned short field_id,
                        int64_t t_rel_us, dcgmFieldValue_v1 *value);

/* ---- administration: modules, pause, driver, introspection ------------ */

/* The module statuses of dcgmModuleGetStatuses, written in place into a
 * dcgmModuleGetStatuses_v1 (version 1, 136 bytes: version, numStatuses,
 * then 16 (id, status) pairs). */
#define ENGINE_MODULE_STATUSES_SIZE 136u
#define ENGINE_MODULE_STATUSES_VERSION1 0x01000088u
int engine_module_statuses(sim_engine *engine, void *statuses);
int engine_module_denylist(sim_engine *engine, unsigned int module);
/* dcgmPauseTelemetryForDiag (pause 1) / dcgmResumeTelemetryForDiag (0). */
int engine_pause_resume(sim_engine *engine, int pause);
/* dcgmAttachDriver (attach 1) / dcgmDetachDriver (0). */
int engine_driver_attach(sim_engine *engine, int attach);
/* dcgmIntrospectGetHostengineMemoryUsage (cpu 0) or ...CpuUtilization (1) of
 * the process running the engine. */
typedef struct engine_introspect {
    long long bytes_used;
    double total, kernel, user;
} engine_introspect;
int engine_introspect_read(sim_engine *engine, int cpu, int wait, engine_introspect *out);
/* dcgmHostengineSetLoggingSeverity: the process's log severity (logger 0,
 * DCGM's base logger; logger 1, syslog, which this engine does not write). */
int engine_set_logging_severity(sim_engine *engine, int logger, int severity);
/* What DCGM's diag module answers before it would start NVVS on group
 * (DCGM_GROUP_NULL: the request names its entities instead). */
int engine_diag_precheck(sim_engine *engine, dcgmGpuGrp_t group);

#endif /* DCGM_SIM_ENGINE_H */
