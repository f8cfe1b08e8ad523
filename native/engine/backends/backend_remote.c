/*
 * backend_remote.c -- the backend of a connection to a simulated hostengine
 * (backend.h).
 *
 * Each operation forwards to the remote_* request of the same name
 * (remote_calls.c); the hostengine serves it from its own engine, on behalf
 * of this connection.
 */
#include "backend.h"

#include "../remote/remote.h"

/* ---- lifetime ------------------------------------------------------------- */

static void remote_op_interrupt(void *self)
{
    remote_interrupt(self);
}

static void remote_op_destroy(void *self)
{
    remote_close(self);
}

/* ---- entities ------------------------------------------------------------- */

static int remote_op_gpu_ids(void *self, int only_supported, unsigned int *ids, int *count)
{
    return remote_gpu_ids(self, only_supported, ids, count);
}

static int remote_op_gpu_status(void *self, unsigned int gpu, DcgmEntityStatus_t *status)
{
    return remote_gpu_status(self, gpu, status);
}

static int remote_op_entity_group_entities(void *self, dcgm_field_entity_group_t group,
                                           dcgm_field_eid_t *entities, int *count,
                                           unsigned int flags)
{
    return remote_entity_group_entities(self, group, entities, count, flags);
}

static int remote_op_create_fake_entities(void *self, dcgmCreateFakeEntities_v2 *request)
{
    return remote_create_fake_entities(self, request);
}

static int remote_op_mig_hierarchy(void *self, dcgmMigHierarchy_v2 *hierarchy)
{
    return remote_mig_hierarchy(self, hierarchy);
}

static int remote_op_device_attributes(void *self, unsigned int gpu, dcgmDeviceAttributes_v3 *attr)
{
    return remote_device_attributes(self, gpu, attr);
}

/* ---- groups and field groups ---------------------------------------------- */

static int remote_op_group_create(void *self, dcgmGroupType_t type, const char *name,
                                  dcgmGpuGrp_t *id)
{
    return remote_group_create(self, type, name, id);
}

static int remote_op_group_add_entity(void *self, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                                      dcgm_field_eid_t entity)
{
    return remote_group_add_entity(self, id, group, entity);
}

static int remote_op_group_remove_entity(void *self, dcgmGpuGrp_t id,
                                         dcgm_field_entity_group_t group, dcgm_field_eid_t entity)
{
    return remote_group_remove_entity(self, id, group, entity);
}

static int remote_op_group_destroy(void *self, dcgmGpuGrp_t id)
{
    return remote_group_destroy(self, id);
}

static int remote_op_group_get_all_ids(void *self, engine_group_ids *out)
{
    return remote_group_get_all_ids(self, out);
}

static int remote_op_group_get_info(void *self, dcgmGpuGrp_t id, dcgmGroupInfo_v3 *info)
{
    return remote_group_get_info(self, id, info);
}

static int remote_op_field_group_create(void *self, int count, const unsigned short *field_ids,
                                        const char *name, dcgmFieldGrp_t *id)
{
    return remote_field_group_create(self, count, field_ids, name, id);
}

static int remote_op_field_group_destroy(void *self, dcgmFieldGrp_t id)
{
    return remote_field_group_destroy(self, id);
}

static int remote_op_field_group_get_info(void *self, dcgmFieldGroupInfo_v1 *info)
{
    return remote_field_group_get_info(self, info);
}

static int remote_op_field_group_get_all(void *self, dcgmAllFieldGroup_v1 *all)
{
    return remote_field_group_get_all(self, all);
}

/* ---- watches and the cache ------------------------------------------------ */

static int remote_op_watch_fields(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                                  long long update_freq_us, double max_keep_age_s,
                                  int max_keep_samples)
{
    return remote_watch_fields(self, group, field_group, update_freq_us, max_keep_age_s,
                               max_keep_samples);
}

static int remote_op_unwatch_fields(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group)
{
    return remote_unwatch_fields(self, group, field_group);
}

static int remote_op_watch_field_value(void *self, dcgm_field_entity_group_t group,
                                       dcgm_field_eid_t entity, unsigned short field_id,
                                       long long update_freq_us, double max_keep_age_s,
                                       int max_keep_samples)
{
    return remote_watch_field_value(self, group, entity, field_id, update_freq_us,
                                    max_keep_age_s, max_keep_samples);
}

static int remote_op_unwatch_field_value(void *self, dcgm_field_entity_group_t group,
                                         dcgm_field_eid_t entity, unsigned short field_id,
                                         int clear_cache)
{
    return remote_unwatch_field_value(self, group, entity, field_id, clear_cache);
}

static int remote_op_update_all_fields(void *self, int wait)
{
    return remote_update_all_fields(self, wait);
}

static int remote_op_inject(void *self, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                            const dcgmFieldValue_v1 *value)
{
    return remote_inject(self, group, entity, value);
}

static int remote_op_empty_cache(void *self)
{
    return remote_empty_cache(self);
}

/* ---- reads ---------------------------------------------------------------- */

static int remote_op_latest_values(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                                   int gpu_only, engine_emit_fn emit, void *ctx)
{
    return remote_latest_values(self, group, field_group, gpu_only, emit, ctx);
}

static int remote_op_values_since(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                                  long long since, long long *next_since, int gpu_only,
                                  engine_emit_fn emit, void *ctx)
{
    return remote_values_since(self, group, field_group, since, next_since, gpu_only, emit, ctx);
}

static int remote_op_entity_latest(void *self, dcgm_field_entity_group_t group,
                                   dcgm_field_eid_t entity, const unsigned short *fields,
                                   unsigned int count, dcgmFieldValue_v1 *values)
{
    return remote_entity_latest(self, group, entity, fields, count, values);
}

static int remote_op_entities_latest(void *self, const dcgmGroupEntityPair_t *entities,
                                     unsigned int entity_count, const unsigned short *fields,
                                     unsigned int field_count, unsigned int flags,
                                     dcgmFieldValue_v2 *values)
{
    return remote_entities_latest(self, entities, entity_count, fields, field_count, flags,
                                  values);
}

static int remote_op_multiple_values(void *self, unsigned int gpu, unsigned short field_id,
                                     int *count, long long start_ts, long long end_ts,
                                     dcgmOrder_t order, dcgmFieldValue_v1 *values)
{
    return remote_multiple_values(self, gpu, field_id, count, start_ts, end_ts, order, values);
}

/* ---- policy manager ------------------------------------------------------- */

static int remote_op_policy_set(void *self, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy)
{
    return remote_policy_set(self, group, policy);
}

static int remote_op_policy_get(void *self, dcgmGpuGrp_t group, dcgmPolicy_v1 *out,
                                unsigned int *count)
{
    return remote_policy_get(self, group, out, count);
}

static int remote_op_policy_register(void *self, dcgmGpuGrp_t group, unsigned int conditions,
                                     uint32_t cookie)
{
    return remote_policy_register(self, group, conditions, cookie);
}

static int remote_op_policy_unregister(void *self, dcgmGpuGrp_t group)
{
    return remote_policy_unregister(self, group);
}

static int remote_op_policy_take(void *self, engine_policy_note *out, unsigned int capacity,
                                 unsigned int *count)
{
    return remote_policy_take(self, out, capacity, count);
}

/* ---- health, profiling, versions ------------------------------------------ */

static int remote_op_health_set(void *self, dcgmGpuGrp_t group, unsigned int systems,
                                long long update_interval_us, double max_keep_age_s)
{
    return remote_health_set(self, group, systems, update_interval_us, max_keep_age_s);
}

static int remote_op_health_get(void *self, dcgmGpuGrp_t group, unsigned int *systems)
{
    return remote_health_get(self, group, systems);
}

static int remote_op_nvlink_status(void *self, dcgmNvLinkStatus_v5 *status)
{
    return remote_nvlink_status(self, status);
}

static int remote_op_env_var_info(void *self, dcgmEnvVarInfo_t *info)
{
    return remote_env_var_info(self, info);
}

static int remote_op_field_summary(void *self, dcgmFieldSummaryRequest_v1 *request)
{
    return remote_field_summary(self, request);
}

static int remote_op_cache_field_info(void *self, dcgmCacheManagerFieldInfo_v4_t *info)
{
    return remote_cache_field_info(self, info);
}

static int remote_op_chip_arch(void *self, unsigned int gpu, unsigned int *arch)
{
    return remote_chip_arch(self, gpu, arch);
}

static int remote_op_device_topology(void *self, unsigned int gpu, dcgmDeviceTopology_v2 *out)
{
    return remote_device_topology(self, gpu, out);
}

static int remote_op_group_topology(void *self, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out)
{
    return remote_group_topology(self, group, out);
}

static int remote_op_select_gpus(void *self, uint64_t input, unsigned int num_gpus,
                                 uint64_t hints, uint64_t *output)
{
    return remote_select_gpus(self, input, num_gpus, hints, output);
}

static int remote_op_nvlink_p2p(void *self, dcgmNvLinkP2PStatus_v1 *status)
{
    return remote_nvlink_p2p(self, status);
}

static int remote_op_nvlink_set_state(void *self, const dcgmSetNvLinkLinkState_v1 *request)
{
    return remote_nvlink_set_state(self, request);
}

static int remote_op_health_check(void *self, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out)
{
    return remote_health_check(self, group, out);
}

static int remote_op_prof_metric_groups(void *self, dcgmProfGetMetricGroups_v3 *groups)
{
    return remote_prof_metric_groups(self, groups);
}

static int remote_op_version_info(void *self, dcgmVersionInfo_t *info)
{
    return remote_version_info(self, info);
}

static int remote_op_hostengine_health(void *self, dcgmHostengineHealth_t *health)
{
    return remote_hostengine_health(self, health);
}

/* ---- administration ---------------------------------------------------------- */

static int remote_op_module_statuses(void *self, void *statuses)
{
    return remote_module_statuses(self, statuses);
}

static int remote_op_module_denylist(void *self, unsigned int module)
{
    return remote_module_denylist(self, module);
}

static int remote_op_pause_resume(void *self, int pause)
{
    return remote_pause_resume(self, pause);
}

static int remote_op_driver_attach(void *self, int attach)
{
    return remote_driver_attach(self, attach);
}

static int remote_op_introspect(void *self, int cpu, int wait, engine_introspect *out)
{
    return remote_introspect(self, cpu, wait, out);
}

static int remote_op_diag_precheck(void *self, dcgmGpuGrp_t group)
{
    return remote_diag_precheck(self, group);
}

static int remote_op_set_logging_severity(void *self, int logger, int severity)
{
    return remote_set_logging_severity(self, logger, severity);
}

/* ---- simulator extensions ------------------------------------------------- */

static int remote_op_start_time(void *self, long long *start_us)
{
    return remote_start_time(self, start_us);
}

/* dcgmSimGetValueAt asks the embedded engine only: a hostengine's node is not reachable. */
static int remote_op_sim_value_at(void *self, unsigned int gpu, unsigned short field_id,
                                  int64_t t_rel_us, dcgmFieldValue_v1 *value)
{
    (void)self;
    return DCGM_ST_UNINITIALIZED;
}

static int remote_op_cpu_hierarchy(void *self, dcgmCpuHierarchy_v2 *hierarchy)
{
    return remote_cpu_hierarchy(self, hierarchy);
}

/* ---- config manager ------------------------------------------------------- */

static int remote_op_config_set(void *self, dcgmGpuGrp_t group, engine_config_msg *msg)
{
    return remote_config_call(self, WIRE_OP_CONFIG_SET, group, msg);
}

static int remote_op_config_get(void *self, dcgmGpuGrp_t group, engine_config_msg *msg)
{
    return remote_config_call(self, WIRE_OP_CONFIG_GET, group, msg);
}

static int remote_op_config_enforce(void *self, dcgmGpuGrp_t group, engine_config_msg *msg)
{
    return remote_config_call(self, WIRE_OP_CONFIG_ENFORCE, group, msg);
}

const backend_ops remote_backend_ops = {
    .interrupt = remote_op_interrupt,
    .destroy = remote_op_destroy,
    .gpu_ids = remote_op_gpu_ids,
    .gpu_status = remote_op_gpu_status,
    .entity_group_entities = remote_op_entity_group_entities,
    .create_fake_entities = remote_op_create_fake_entities,
    .mig_hierarchy = remote_op_mig_hierarchy,
    .device_attributes = remote_op_device_attributes,
    .group_create = remote_op_group_create,
    .group_add_entity = remote_op_group_add_entity,
    .group_remove_entity = remote_op_group_remove_entity,
    .group_destroy = remote_op_group_destroy,
    .group_get_info = remote_op_group_get_info,
    .group_get_all_ids = remote_op_group_get_all_ids,
    .field_group_create = remote_op_field_group_create,
    .field_group_destroy = remote_op_field_group_destroy,
    .field_group_get_info = remote_op_field_group_get_info,
    .field_group_get_all = remote_op_field_group_get_all,
    .watch_fields = remote_op_watch_fields,
    .unwatch_fields = remote_op_unwatch_fields,
    .watch_field_value = remote_op_watch_field_value,
    .unwatch_field_value = remote_op_unwatch_field_value,
    .update_all_fields = remote_op_update_all_fields,
    .inject = remote_op_inject,
    .empty_cache = remote_op_empty_cache,
    .latest_values = remote_op_latest_values,
    .values_since = remote_op_values_since,
    .entity_latest = remote_op_entity_latest,
    .entities_latest = remote_op_entities_latest,
    .multiple_values = remote_op_multiple_values,
    .policy_set = remote_op_policy_set,
    .policy_get = remote_op_policy_get,
    .policy_register = remote_op_policy_register,
    .policy_unregister = remote_op_policy_unregister,
    .policy_take = remote_op_policy_take,
    .health_set = remote_op_health_set,
    .health_get = remote_op_health_get,
    .health_check = remote_op_health_check,
    .nvlink_status = remote_op_nvlink_status,
    .nvlink_set_state = remote_op_nvlink_set_state,
    .cache_field_info = remote_op_cache_field_info,
    .chip_arch = remote_op_chip_arch,
    .device_topology = remote_op_device_topology,
    .group_topology = remote_op_group_topology,
    .select_gpus = remote_op_select_gpus,
    .nvlink_p2p = remote_op_nvlink_p2p,
    .env_var_info = remote_op_env_var_info,
    .field_summary = remote_op_field_summary,
    .prof_metric_groups = remote_op_prof_metric_groups,
    .version_info = remote_op_version_info,
    .hostengine_health = remote_op_hostengine_health,
    .module_statuses = remote_op_module_statuses,
    .module_denylist = remote_op_module_denylist,
    .pause_resume = remote_op_pause_resume,
    .driver_attach = remote_op_driver_attach,
    .introspect = remote_op_introspect,
    .diag_precheck = remote_op_diag_precheck,
    .set_logging_severity = remote_op_set_logging_severity,
    .start_time = remote_op_start_time,
    .sim_value_at = remote_op_sim_value_at,
    .cpu_hierarchy = remote_op_cpu_hierarchy,
    .config_set = remote_op_config_set,
    .config_get = remote_op_config_get,
    .config_enforce = remote_op_config_enforce,
};
