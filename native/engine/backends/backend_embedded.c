/*
 * backend_embedded.c -- the backend of the embedded engine (backend.h).
 *
 * Each operation forwards to the engine_* function of the same name; the
 * engine acts on behalf of owner ENGINE_OWNER_EMBEDDED, the process itself.
 */
#include "backend.h"

#include "../engine.h"

#define OWNER ENGINE_OWNER_EMBEDDED

/* ---- lifetime ------------------------------------------------------------- */

static void embedded_interrupt(void *self)
{
    (void)self; /* engine calls never wait on anything another thread could cut short */
}

static void embedded_destroy(void *self)
{
    engine_destroy(self);
}

/* ---- entities ------------------------------------------------------------- */

static int embedded_gpu_ids(void *self, int only_supported, unsigned int *ids, int *count)
{
    return engine_gpu_ids(self, only_supported, ids, count);
}

static int embedded_gpu_status(void *self, unsigned int gpu, DcgmEntityStatus_t *status)
{
    return engine_gpu_status(self, gpu, status);
}

static int embedded_entity_group_entities(void *self, dcgm_field_entity_group_t group,
                                          dcgm_field_eid_t *entities, int *count,
                                          unsigned int flags)
{
    return engine_entity_group_entities(self, group, entities, count, flags);
}

static int embedded_create_fake_entities(void *self, dcgmCreateFakeEntities_v2 *request)
{
    return engine_create_fake_entities(self, request);
}

static int embedded_mig_hierarchy(void *self, dcgmMigHierarchy_v2 *hierarchy)
{
    return engine_mig_hierarchy(self, hierarchy);
}

static int embedded_device_attributes(void *self, unsigned int gpu, dcgmDeviceAttributes_v3 *attr)
{
    return engine_device_attributes(self, gpu, attr);
}

/* ---- groups and field groups ---------------------------------------------- */

static int embedded_group_create(void *self, dcgmGroupType_t type, const char *name,
                                 dcgmGpuGrp_t *id)
{
    return engine_group_create(self, OWNER, type, name, id);
}

static int embedded_group_add_entity(void *self, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                                     dcgm_field_eid_t entity)
{
    return engine_group_add_entity(self, id, group, entity);
}

static int embedded_group_remove_entity(void *self, dcgmGpuGrp_t id,
                                        dcgm_field_entity_group_t group, dcgm_field_eid_t entity)
{
    return engine_group_remove_entity(self, id, group, entity);
}

static int embedded_group_destroy(void *self, dcgmGpuGrp_t id)
{
    return engine_group_destroy(self, id);
}

static int embedded_group_get_all_ids(void *self, engine_group_ids *out)
{
    return engine_group_get_all_ids(self, out);
}

static int embedded_group_get_info(void *self, dcgmGpuGrp_t id, dcgmGroupInfo_v3 *info)
{
    return engine_group_get_info(self, id, info);
}

static int embedded_field_group_create(void *self, int count, const unsigned short *field_ids,
                                       const char *name, dcgmFieldGrp_t *id)
{
    return engine_field_group_create(self, OWNER, count, field_ids, name, id);
}

static int embedded_field_group_destroy(void *self, dcgmFieldGrp_t id)
{
    return engine_field_group_destroy(self, id);
}

static int embedded_field_group_get_info(void *self, dcgmFieldGroupInfo_v1 *info)
{
    return engine_field_group_get_info(self, info);
}

static int embedded_field_group_get_all(void *self, dcgmAllFieldGroup_v1 *all)
{
    return engine_field_group_get_all(self, all);
}

/* ---- watches and the cache ------------------------------------------------ */

static int embedded_watch_fields(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                                 long long update_freq_us, double max_keep_age_s,
                                 int max_keep_samples)
{
    return engine_watch_fields(self, OWNER, group, field_group, update_freq_us, max_keep_age_s,
                               max_keep_samples);
}

static int embedded_unwatch_fields(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group)
{
    return engine_unwatch_fields(self, OWNER, group, field_group);
}

static int embedded_watch_field_value(void *self, dcgm_field_entity_group_t group,
                                      dcgm_field_eid_t entity, unsigned short field_id,
                                      long long update_freq_us, double max_keep_age_s,
                                      int max_keep_samples)
{
    return engine_watch_field_value(self, OWNER, group, entity, field_id, update_freq_us,
                                    max_keep_age_s, max_keep_samples);
}

static int embedded_unwatch_field_value(void *self, dcgm_field_entity_group_t group,
                                        dcgm_field_eid_t entity, unsigned short field_id,
                                        int clear_cache)
{
    return engine_unwatch_field_value(self, OWNER, group, entity, field_id, clear_cache);
}

static int embedded_update_all_fields(void *self, int wait)
{
    return engine_update_all_fields(self, wait);
}

static int embedded_inject(void *self, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                           const dcgmFieldValue_v1 *value)
{
    return engine_inject(self, group, entity, value);
}

static int embedded_empty_cache(void *self)
{
    return engine_empty_cache(self);
}

/* ---- reads ---------------------------------------------------------------- */

static int embedded_latest_values(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                                  int gpu_only, engine_emit_fn emit, void *ctx)
{
    return engine_latest_values(self, group, field_group, gpu_only, emit, ctx);
}

static int embedded_values_since(void *self, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                                 long long since, long long *next_since, int gpu_only,
                                 engine_emit_fn emit, void *ctx)
{
    return engine_values_since(self, group, field_group, since, next_since, gpu_only, emit, ctx);
}

static int embedded_entity_latest(void *self, dcgm_field_entity_group_t group,
                                  dcgm_field_eid_t entity, const unsigned short *fields,
                                  unsigned int count, dcgmFieldValue_v1 *values)
{
    return engine_entity_latest(self, group, entity, fields, count, values);
}

static int embedded_entities_latest(void *self, const dcgmGroupEntityPair_t *entities,
                                    unsigned int entity_count, const unsigned short *fields,
                                    unsigned int field_count, unsigned int flags,
                                    dcgmFieldValue_v2 *values)
{
    return engine_entities_latest(self, entities, entity_count, fields, field_count, flags,
                                  values);
}

static int embedded_multiple_values(void *self, unsigned int gpu, unsigned short field_id,
                                    int *count, long long start_ts, long long end_ts,
                                    dcgmOrder_t order, dcgmFieldValue_v1 *values)
{
    return engine_multiple_values(self, gpu, field_id, count, start_ts, end_ts, order, values);
}

/* ---- policy manager ------------------------------------------------------- */

static int embedded_policy_set(void *self, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy)
{
    return engine_policy_set(self, group, policy);
}

static int embedded_policy_get(void *self, dcgmGpuGrp_t group, dcgmPolicy_v1 *out,
                               unsigned int *count)
{
    return engine_policy_get(self, group, out, count);
}

static int embedded_policy_register(void *self, dcgmGpuGrp_t group, unsigned int conditions,
                                    uint32_t cookie)
{
    return engine_policy_register(self, OWNER, group, conditions, cookie);
}

static int embedded_policy_unregister(void *self, dcgmGpuGrp_t group)
{
    return engine_policy_unregister(self, OWNER, group);
}

static int embedded_policy_take(void *self, engine_policy_note *out, unsigned int capacity,
                                unsigned int *count)
{
    return engine_policy_take(self, OWNER, out, capacity, count);
}

/* ---- health, profiling, versions ------------------------------------------ */

static int embedded_health_set(void *self, dcgmGpuGrp_t group, unsigned int systems,
                               long long update_interval_us, double max_keep_age_s)
{
    return engine_health_set(self, OWNER, group, systems, update_interval_us, max_keep_age_s);
}

static int embedded_health_get(void *self, dcgmGpuGrp_t group, unsigned int *systems)
{
    return engine_health_get(self, group, systems);
}

static int embedded_health_check(void *self, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out)
{
    return engine_health_check(self, group, out);
}

static int embedded_prof_metric_groups(void *self, dcgmProfGetMetricGroups_v3 *groups)
{
    return engine_prof_metric_groups(self, groups);
}

/* The embedded "hostengine" is this library. */
static int embedded_version_info(void *self, dcgmVersionInfo_t *info)
{
    (void)self;
    return engine_version_info(info);
}

static int embedded_hostengine_health(void *self, dcgmHostengineHealth_t *health)
{
    (void)self;
    if (!health)
        return DCGM_ST_BADPARAM;
    if (health->version != dcgmHostengineHealth_version1)
        return DCGM_ST_VER_MISMATCH;
    health->overallHealth = 0;
    return DCGM_ST_OK;
}

static int embedded_nvlink_status(void *self, dcgmNvLinkStatus_v5 *status)
{
    return engine_nvlink_status(self, status);
}

static int embedded_env_var_info(void *self, dcgmEnvVarInfo_t *info)
{
    (void)self;
    return engine_env_var_info(info);
}

static int embedded_field_summary(void *self, dcgmFieldSummaryRequest_v1 *request)
{
    return engine_field_summary(self, request);
}

static int embedded_cache_field_info(void *self, dcgmCacheManagerFieldInfo_v4_t *info)
{
    return engine_cache_field_info(self, info);
}

static int embedded_nvlink_set_state(void *self, const dcgmSetNvLinkLinkState_v1 *request)
{
    return engine_nvlink_set_state(self, request);
}

/* ---- chips and topology ----------------------------------------------------- */

static int embedded_chip_arch(void *self, unsigned int gpu, unsigned int *arch)
{
    return engine_gpu_chip_arch(self, gpu, arch);
}

static int embedded_device_topology(void *self, unsigned int gpu, dcgmDeviceTopology_v2 *out)
{
    return engine_device_topology(self, gpu, out);
}

static int embedded_group_topology(void *self, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out)
{
    return engine_group_topology(self, group, out);
}

static int embedded_select_gpus(void *self, uint64_t input, unsigned int num_gpus, uint64_t hints,
                                uint64_t *output)
{
    return engine_select_gpus_by_topology(self, input, num_gpus, hints, output);
}

static int embedded_nvlink_p2p(void *self, dcgmNvLinkP2PStatus_v1 *status)
{
    return engine_nvlink_p2p_status(self, status);
}

/* ---- administration ---------------------------------------------------------- */

static int embedded_module_statuses(void *self, void *statuses)
{
    return engine_module_statuses(self, statuses);
}

static int embedded_module_denylist(void *self, unsigned int module)
{
    return engine_module_denylist(self, module);
}

static int embedded_pause_resume(void *self, int pause)
{
    return engine_pause_resume(self, pause);
}

static int embedded_driver_attach(void *self, int attach)
{
    return engine_driver_attach(self, attach);
}

static int embedded_introspect(void *self, int cpu, int wait, engine_introspect *out)
{
    return engine_introspect_read(self, cpu, wait, out);
}

static int embedded_diag_precheck(void *self, dcgmGpuGrp_t group)
{
    return engine_diag_precheck(self, group);
}

static int embedded_set_logging_severity(void *self, int logger, int severity)
{
    return engine_set_logging_severity(self, logger, severity);
}

/* ---- simulator extensions ------------------------------------------------- */

static int embedded_start_time(void *self, long long *start_us)
{
    *start_us = (long long)engine_start_time_us(self);
    return DCGM_ST_OK;
}

static int embedded_sim_value_at(void *self, unsigned int gpu, unsigned short field_id,
                                 int64_t t_rel_us, dcgmFieldValue_v1 *value)
{
    return engine_sim_value_at(self, gpu, field_id, t_rel_us, value);
}

static int embedded_cpu_hierarchy(void *self, dcgmCpuHierarchy_v2 *hierarchy)
{
    return engine_cpu_hierarchy(self, hierarchy);
}

/* ---- config manager ------------------------------------------------------- */

static int embedded_config_set(void *self, dcgmGpuGrp_t group, engine_config_msg *msg)
{
    return engine_config_set(self, group, msg);
}

static int embedded_config_get(void *self, dcgmGpuGrp_t group, engine_config_msg *msg)
{
    return engine_config_get(self, group, msg);
}

static int embedded_config_enforce(void *self, dcgmGpuGrp_t group, engine_config_msg *msg)
{
    return engine_config_enforce(self, group, msg);
}

const backend_ops embedded_backend_ops = {
    .interrupt = embedded_interrupt,
    .destroy = embedded_destroy,
    .gpu_ids = embedded_gpu_ids,
    .gpu_status = embedded_gpu_status,
    .entity_group_entities = embedded_entity_group_entities,
    .create_fake_entities = embedded_create_fake_entities,
    .mig_hierarchy = embedded_mig_hierarchy,
    .device_attributes = embedded_device_attributes,
    .group_create = embedded_group_create,
    .group_add_entity = embedded_group_add_entity,
    .group_remove_entity = embedded_group_remove_entity,
    .group_destroy = embedded_group_destroy,
    .group_get_info = embedded_group_get_info,
    .group_get_all_ids = embedded_group_get_all_ids,
    .nvlink_status = embedded_nvlink_status,
    .nvlink_set_state = embedded_nvlink_set_state,
    .cache_field_info = embedded_cache_field_info,
    .chip_arch = embedded_chip_arch,
    .device_topology = embedded_device_topology,
    .group_topology = embedded_group_topology,
    .select_gpus = embedded_select_gpus,
    .nvlink_p2p = embedded_nvlink_p2p,
    .env_var_info = embedded_env_var_info,
    .field_summary = embedded_field_summary,
    .field_group_create = embedded_field_group_create,
    .field_group_destroy = embedded_field_group_destroy,
    .field_group_get_info = embedded_field_group_get_info,
    .field_group_get_all = embedded_field_group_get_all,
    .watch_fields = embedded_watch_fields,
    .unwatch_fields = embedded_unwatch_fields,
    .watch_field_value = embedded_watch_field_value,
    .unwatch_field_value = embedded_unwatch_field_value,
    .update_all_fields = embedded_update_all_fields,
    .inject = embedded_inject,
    .empty_cache = embedded_empty_cache,
    .latest_values = embedded_latest_values,
    .values_since = embedded_values_since,
    .entity_latest = embedded_entity_latest,
    .entities_latest = embedded_entities_latest,
    .multiple_values = embedded_multiple_values,
    .policy_set = embedded_policy_set,
    .policy_get = embedded_policy_get,
    .policy_register = embedded_policy_register,
    .policy_unregister = embedded_policy_unregister,
    .policy_take = embedded_policy_take,
    .health_set = embedded_health_set,
    .health_get = embedded_health_get,
    .health_check = embedded_health_check,
    .prof_metric_groups = embedded_prof_metric_groups,
    .version_info = embedded_version_info,
    .hostengine_health = embedded_hostengine_health,
    .module_statuses = embedded_module_statuses,
    .module_denylist = embedded_module_denylist,
    .pause_resume = embedded_pause_resume,
    .driver_attach = embedded_driver_attach,
    .introspect = embedded_introspect,
    .diag_precheck = embedded_diag_precheck,
    .set_logging_severity = embedded_set_logging_severity,
    .start_time = embedded_start_time,
    .sim_value_at = embedded_sim_value_at,
    .cpu_hierarchy = embedded_cpu_hierarchy,
    .config_set = embedded_config_set,
    .config_get = embedded_config_get,
    .config_enforce = embedded_config_enforce,
};
