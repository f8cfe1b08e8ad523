/*
 * backend.h -- what a handle of the simulated libdcgm.so.4 runs against.
 *
 * The API (native/engine/api/) resolves every handle to a backend: the
 * embedded engine (backend_embedded.c) or a connection to a simulated
 * hostengine (backend_remote.c).  Both answer the same operations through one table
 * of function pointers; self is the backend's own object (a sim_engine or
 * a remote_conn).  Every operation returns a DCGM_ST_* code, exactly what
 * the matching engine_* or remote_* function returns.
 */
#ifndef DCGM_SIM_BACKEND_H
#define DCGM_SIM_BACKEND_H

#include "../../dcgm_abi.h"
#include "../engine.h"

typedef struct backend_ops {
    /* ---- lifetime ---- */
    /* Makes a call in flight on another thread fail now rather than wait out
     * its timeout; safe while another thread uses self. */
    void (*interrupt)(void *self);
    /* Frees self; no call may be using it. */
    void (*destroy)(void *self);

    /* ---- entities ---- */
    int (*gpu_ids)(void *self, int only_supported, unsigned int *ids, int *count);
    int (*gpu_status)(void *self, unsigned int gpu, DcgmEntityStatus_t *status);
    int (*entity_group_entities)(void *self, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t *entities, int *count, unsigned int flags);
    int (*create_fake_entities)(void *self, dcgmCreateFakeEntities_v2 *request);
    int (*mig_hierarchy)(void *self, dcgmMigHierarchy_v2 *hierarchy);
    int (*device_attributes)(void *self, unsigned int gpu, dcgmDeviceAttributes_v3 *attr);

    /* ---- groups and field groups (the embedded engine acts as owner 0) ---- */
    int (*group_create)(void *self, dcgmGroupType_t type, const char *name, dcgmGpuGrp_t *id);
    int (*group_add_entity)(void *self, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity);
    int (*group_remove_entity)(void *self, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                               dcgm_field_eid_t entity);
    int (*group_destroy)(void *self, dcgmGpuGrp_t id);
    int (*group_get_info)(void *self, dcgmGpuGrp_t id, dcgmGroupInfo_v3 *info);
    int (*group_get_all_ids)(void *self, engine_group_ids *out);
    int (*field_group_create)(void *self, int count, const unsigned short *field_ids,
                              const char *name, dcgmFieldGrp_t *id);
    int (*field_group_destroy)(void *self, dcgmFieldGrp_t id);
    int (*field_group_get_info)(void *self, dcgmFieldGroupInfo_v1 *info);
    int (*field_group_get_all)(void *self, dcgmAllFieldGroup_v1 *all);

    /* ---- watches and the cache ---- */
    int (*watch_fields)(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long update_freq_us, double max_keep_age_s, int max_keep_samples);
    int (*unwatch_fields)(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group);
    int (*watch_field_value)(void *self, dcgm_field_entity_group_t group,
                             dcgm_field_eid_t entity, unsigned short field_id,
                             long long update_freq_us, double max_keep_age_s,
                             int max_keep_samples);
    int (*unwatch_field_value)(void *self, dcgm_field_entity_group_t group,
                               dcgm_field_eid_t entity, unsigned short field_id,
                               int clear_cache);
    int (*update_all_fields)(void *self, int wait);
    int (*inject)(void *self, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                  const dcgmFieldValue_v1 *value);
    int (*empty_cache)(void *self);

    /* ---- reads ---- */
    int (*latest_values)(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                         int gpu_only, engine_emit_fn emit, void *ctx);
    int (*values_since)(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long since, long long *next_since, int gpu_only,
                        engine_emit_fn emit, void *ctx);
    int (*entity_latest)(void *self, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                         const unsigned short *fields, unsigned int count,
                         dcgmFieldValue_v1 *values);
    int (*entities_latest)(void *self, const dcgmGroupEntityPair_t *entities,
                           unsigned int entity_count, const unsigned short *fields,
                           unsigned int field_count, unsigned int flags,
                           dcgmFieldValue_v2 *values);
    int (*multiple_values)(void *self, unsigned int gpu, unsigned short field_id, int *count,
                           long long start_ts, long long end_ts, dcgmOrder_t order,
                           dcgmFieldValue_v1 *values);

    /* ---- health, profiling, versions ---- */
    int (*health_set)(void *self, dcgmGpuGrp_t group, unsigned int systems,
                      long long update_interval_us, double max_keep_age_s);
    int (*health_get)(void *self, dcgmGpuGrp_t group, unsigned int *systems);
    int (*health_check)(void *self, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out);
    int (*nvlink_status)(void *self, dcgmNvLinkStatus_v5 *status);
    int (*nvlink_set_state)(void *self, const dcgmSetNvLinkLinkState_v1 *request);
    int (*cache_field_info)(void *self, dcgmCacheManagerFieldInfo_v4_t *info);
    /* ---- chips and topology (engine_topo.c) ---- */
    int (*chip_arch)(void *self, unsigned int gpu, unsigned int *arch);
    int (*device_topology)(void *self, unsigned int gpu, dcgmDeviceTopology_v2 *out);
    int (*group_topology)(void *self, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out);
    int (*select_gpus)(void *self, uint64_t input, unsigned int num_gpus, uint64_t hints,
                       uint64_t *output);
    int (*nvlink_p2p)(void *self, dcgmNvLinkP2PStatus_v1 *status);
    int (*prof_metric_groups)(void *self, dcgmProfGetMetricGroups_v3 *groups);
    int (*version_info)(void *self, dcgmVersionInfo_t *info);
    int (*hostengine_health)(void *self, dcgmHostengineHealth_t *health);
    /* the engine process's environment variable (dcgmHostengineEnvironmentVariableInfo) */
    int (*env_var_info)(void *self, dcgmEnvVarInfo_t *info);
    int (*field_summary)(void *self, dcgmFieldSummaryRequest_v1 *request);

    /* ---- policy manager (engine_policy.c) ---- */
    int (*policy_set)(void *self, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy);
    /* out holds DCGM_MAX_NUM_DEVICES policies */
    int (*policy_get)(void *self, dcgmGpuGrp_t group, dcgmPolicy_v1 *out, unsigned int *count);
    int (*policy_register)(void *self, dcgmGpuGrp_t group, unsigned int conditions,
                           uint32_t cookie);
    int (*policy_unregister)(void *self, dcgmGpuGrp_t group);
    /* never waits: the violations pending for this client, up to capacity */
    int (*policy_take)(void *self, engine_policy_note *out, unsigned int capacity,
                       unsigned int *count);

    /* ---- administration: modules, pause, driver, introspection (engine_admin.c) ---- */
    /* statuses: a dcgmModuleGetStatuses_v1, filled in place */
    int (*module_statuses)(void *self, void *statuses);
    int (*module_denylist)(void *self, unsigned int module);
    int (*pause_resume)(void *self, int pause);
    int (*driver_attach)(void *self, int attach);
    int (*introspect)(void *self, int cpu, int wait, engine_introspect *out);
    int (*diag_precheck)(void *self, dcgmGpuGrp_t group);
    int (*set_logging_severity)(void *self, int logger, int severity);

    /* ---- simulator extensions ---- */
    /* When the node started (t_rel 0), us since the Unix epoch. */
    int (*start_time)(void *self, long long *start_us);
    /* The node's value at t_rel_us; only the embedded engine has the node. */
    int (*sim_value_at)(void *self, unsigned int gpu, unsigned short field_id,
                        int64_t t_rel_us, dcgmFieldValue_v1 *value);

    /* ---- CPUs (sysmon) ---- */
    /* dcgmGetCpuHierarchy(_v2): always the v2 record */
    int (*cpu_hierarchy)(void *self, dcgmCpuHierarchy_v2 *hierarchy);
    /* ---- config manager (engine_config.c): msg in, msg out ---- */
    int (*config_set)(void *self, dcgmGpuGrp_t group, engine_config_msg *msg);
    int (*config_get)(void *self, dcgmGpuGrp_t group, engine_config_msg *msg);
    int (*config_enforce)(void *self, dcgmGpuGrp_t group, engine_config_msg *msg);
} backend_ops;

/* self: a sim_engine, the process's embedded engine */
extern const backend_ops embedded_backend_ops;
/* self: a remote_conn to a hostengine */
extern const backend_ops remote_backend_ops;

#endif /* DCGM_SIM_BACKEND_H */
