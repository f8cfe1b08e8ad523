/*
 * hostengine_ops.c -- what the simulated hostengine does for each request:
 * unpack, call the engine on behalf of the connection's owner id, answer.
 * Every request gets exactly one FINAL frame, whatever goes wrong, so the
 * stream never falls out of step with the client.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hostengine_internal.h"

/* The most values one dcgmGetMultipleValuesForField answers remotely: the
 * hostengine allocates the caller's whole array, so it is bounded. */
#define HE_MAX_MULTIPLE_VALUES 8192
/* The most entity ids one dcgmGetEntityGroupEntities returns remotely. */
#define HE_MAX_ENTITY_IDS 65536

typedef struct wire_name {
    char text[DCGM_MAX_STR_LENGTH + 1];
} wire_name;

typedef struct wire_field_group {
    wire_name name;
    unsigned short ids[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
} wire_field_group;

static void reply_status(he_session *s, int status)
{
    he_reply(s, status, 0, 0, 0, NULL, 0);
}

/* Copies a request's tail into a zeroed struct of size bytes; NULL when the
 * tail is longer than the struct or memory ran out. */
static void *struct_from_tail(const wire_request *req, const unsigned char *tail, size_t size)
{
    if (req->tail_len > size)
        return NULL;
    void *out = calloc(1, size);
    if (out && req->tail_len)
        memcpy(out, tail, req->tail_len);
    return out;
}

/* ---- structs the engine reads and writes in place -------------------------- */

/* Each fill may read the request's numbers (a GPU, a group id) besides the
 * struct it is handed. */
static int fill_version(sim_engine *e, const wire_request *req, void *p)
{
    (void)e;
    return engine_version_info(p);
}

static int fill_health(sim_engine *e, const wire_request *req, void *p)
{
    (void)e;
    dcgmHostengineHealth_t *health = p;
    if (health->version != dcgmHostengineHealth_version1)
        return DCGM_ST_VER_MISMATCH;
    health->overallHealth = 0;
    return DCGM_ST_OK;
}

static int fill_fake(sim_engine *e, const wire_request *req, void *p)
{
    return engine_create_fake_entities(e, p);
}

static int fill_mig(sim_engine *e, const wire_request *req, void *p)
{
    return engine_mig_hierarchy(e, p);
}

static int fill_fg_info(sim_engine *e, const wire_request *req, void *p)
{
    return engine_field_group_get_info(e, p);
}

static int fill_fg_all(sim_engine *e, const wire_request *req, void *p)
{
    return engine_field_group_get_all(e, p);
}

static int fill_group_ids(sim_engine *e, const wire_request *req, void *p)
{
    return engine_group_get_all_ids(e, p);
}

static int fill_prof(sim_engine *e, const wire_request *req, void *p)
{
    return engine_prof_metric_groups(e, p);
}

static int fill_attributes(sim_engine *e, const wire_request *req, void *p)
{
    return engine_device_attributes(e, req->u[0], p);
}

static int fill_module_statuses(sim_engine *e, const wire_request *req, void *p)
{
    return engine_module_statuses(e, p);
}

static int fill_group_info(sim_engine *e, const wire_request *req, void *p)
{
    return engine_group_get_info(e, req->id[0], p);
}

static int fill_cpu_hierarchy(sim_engine *e, const wire_request *req, void *p)
{
    return engine_cpu_hierarchy(e, p);
}

static int fill_nvlink_status(sim_engine *e, const wire_request *req, void *p)
{
    return engine_nvlink_status(e, p);
}

static int fill_cache_field_info(sim_engine *e, const wire_request *req, void *p)
{
    return engine_cache_field_info(e, p);
}

static int fill_env_var_info(sim_engine *e, const wire_request *req, void *p)
{
    return engine_env_var_info(p);
}

static int fill_field_summary(sim_engine *e, const wire_request *req, void *p)
{
    return engine_field_summary(e, p);
}

static int fill_nvlink_set(sim_engine *e, const wire_request *req, void *p)
{
    return engine_nvlink_set_state(e, p);
}

static int fill_chip_arch(sim_engine *e, const wire_request *req, void *p)
{
    unsigned int arch = 0;
    int rc = engine_gpu_chip_arch(e, req->u[0], &arch);
    *(uint32_t *)p = arch;
    return rc;
}

static int fill_device_topology(sim_engine *e, const wire_request *req, void *p)
{
    return engine_device_topology(e, req->u[0], p);
}

static int fill_group_topology(sim_engine *e, const wire_request *req, void *p)
{
    return engine_group_topology(e, (dcgmGpuGrp_t)req->id[0], p);
}

static int fill_select_gpus(sim_engine *e, const wire_request *req, void *p)
{
    return engine_select_gpus_by_topology(e, req->id[0], req->u[0], req->id[1], p);
}

static int fill_nvlink_p2p(sim_engine *e, const wire_request *req, void *p)
{
    return engine_nvlink_p2p_status(e, p);
}

static int fill_config_set(sim_engine *e, const wire_request *req, void *p)
{
    return engine_config_set(e, req->id[0], p);
}

static int fill_config_get(sim_engine *e, const wire_request *req, void *p)
{
    return engine_config_get(e, req->id[0], p);
}

static int fill_config_enforce(sim_engine *e, const wire_request *req, void *p)
{
    return engine_config_enforce(e, req->id[0], p);
}

typedef struct inout_op {
    size_t size;
    int (*fill)(sim_engine *e, const wire_request *req, void *p);
} inout_op;

static void serve_inout(he_session *s, const wire_request *req, const unsigned char *tail,
                        const inout_op *op)
{
    void *p = struct_from_tail(req, tail, op->size);
    if (!p) {
        reply_status(s, DCGM_ST_BADPARAM);
        return;
    }
    int rc = op->fill(s->engine, req, p);
    he_reply(s, rc, 0, 0, 0, p, op->size);
    free(p);
}

static void serve_health_check(he_session *s, const wire_request *req,
                               const unsigned char *tail)
{
    dcgmHealthResponse_v5 *out = struct_from_tail(req, tail, sizeof *out);
    if (!out) {
        reply_status(s, DCGM_ST_BADPARAM);
        return;
    }
    int rc = engine_health_check(s->engine, req->id[0], out);
    unsigned int n = out->incidentCount <= 1024 ? out->incidentCount : 1024;
    size_t len = offsetof(dcgmHealthResponse_v5, incidents) + n * sizeof out->incidents[0];
    he_reply(s, rc, 0, 0, 0, out, len);
    free(out);
}

/* ---- entities -------------------------------------------------------------- */

static void serve_gpu_ids(he_session *s, const wire_request *req)
{
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    int rc = engine_gpu_ids(s->engine, req->u[0] != 0, ids, &count);
    size_t n = rc == DCGM_ST_OK && count > 0 ? (size_t)count : 0;
    he_reply(s, rc, 0, (uint32_t)count, 0, ids, n * sizeof ids[0]);
}

static void serve_gpu_status(he_session *s, const wire_request *req)
{
    DcgmEntityStatus_t status = DcgmEntityStatusUnknown;
    int rc = engine_gpu_status(s->engine, req->u[0], &status);
    he_reply(s, rc, 0, 0, 0, &status, rc == DCGM_ST_OK ? sizeof status : 0);
}

static void serve_entity_group_entities(he_session *s, const wire_request *req)
{
    int capacity = req->u[2] > HE_MAX_ENTITY_IDS ? HE_MAX_ENTITY_IDS : (int)req->u[2];
    dcgm_field_eid_t *ids = malloc(((size_t)capacity + 1) * sizeof *ids);
    if (!ids) {
        reply_status(s, DCGM_ST_MEMORY);
        return;
    }
    int count = capacity;
    int rc = engine_entity_group_entities(s->engine, (dcgm_field_entity_group_t)req->u[0], ids,
                                          &count, req->u[1]);
    int filled = count < capacity ? count : capacity;
    size_t len = (rc == DCGM_ST_OK || rc == DCGM_ST_INSUFFICIENT_SIZE) && filled > 0
                     ? (size_t)filled * sizeof *ids : 0;
    he_reply(s, rc, 0, (uint32_t)count, 0, ids, len);
    free(ids);
}

/* ---- groups, field groups, watches ----------------------------------------- */

static void serve_group_create(he_session *s, const wire_request *req, const unsigned char *tail)
{
    wire_name name;
    if (req->tail_len != sizeof name) {
        reply_status(s, DCGM_ST_BADPARAM);
        return;
    }
    memcpy(&name, tail, sizeof name);
    name.text[DCGM_MAX_STR_LENGTH] = '\0';
    dcgmGpuGrp_t id = 0;
    int rc = engine_group_create(s->engine, s->owner, (dcgmGroupType_t)req->u[0], name.text, &id);
    he_reply(s, rc, (int64_t)id, 0, 0, NULL, 0);
}

static void serve_field_group_create(he_session *s, const wire_request *req,
                                     const unsigned char *tail)
{
    wire_field_group *fg = struct_from_tail(req, tail, sizeof *fg);
    if (!fg || req->tail_len != sizeof *fg || req->u[0] > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP) {
        free(fg);
        reply_status(s, DCGM_ST_BADPARAM);
        return;
    }
    fg->name.text[DCGM_MAX_STR_LENGTH] = '\0';
    dcgmFieldGrp_t id = 0;
    int rc = engine_field_group_create(s->engine, s->owner, (int)req->u[0], fg->ids,
                                       fg->name.text, &id);
    free(fg);
    he_reply(s, rc, (int64_t)id, 0, 0, NULL, 0);
}

static int serve_simple(he_session *s, const wire_request *req, const unsigned char *tail)
{
    sim_engine *e = s->engine;
    const uint32_t *u = req->u;
    switch (req->op) {
    case WIRE_OP_PERSIST:
        s->persist = u[0] != 0;
        return DCGM_ST_OK;
    case WIRE_OP_GROUP_ADD_ENTITY:
        return engine_group_add_entity(e, req->id[0], (dcgm_field_entity_group_t)u[0], u[1]);
    case WIRE_OP_GROUP_REMOVE_ENTITY:
        return engine_group_remove_entity(e, req->id[0], (dcgm_field_entity_group_t)u[0], u[1]);
    case WIRE_OP_GROUP_DESTROY:
        return engine_group_destroy(e, req->id[0]);
    case WIRE_OP_FIELD_GROUP_DESTROY:
        return engine_field_group_destroy(e, req->id[0]);
    case WIRE_OP_WATCH_FIELDS:
        return engine_watch_fields(e, s->owner, req->id[0], req->id[1], req->ts[0], req->dbl,
                                   (int)u[0]);
    case WIRE_OP_UNWATCH_FIELDS:
        return engine_unwatch_fields(e, s->owner, req->id[0], req->id[1]);
    case WIRE_OP_WATCH_FIELD_VALUE:
        return engine_watch_field_value(e, s->owner, (dcgm_field_entity_group_t)u[0], u[1],
                                        (unsigned short)u[2], req->ts[0], req->dbl, (int)u[3]);
    case WIRE_OP_UNWATCH_FIELD_VALUE:
        return engine_unwatch_field_value(e, s->owner, (dcgm_field_entity_group_t)u[0], u[1],
                                          (unsigned short)u[2], (int)u[3]);
    case WIRE_OP_UPDATE_ALL_FIELDS:
        return engine_update_all_fields(e, (int)u[0]);
    case WIRE_OP_MODULE_DENYLIST:
        return engine_module_denylist(e, u[0]);
    case WIRE_OP_PAUSE_RESUME:
        return engine_pause_resume(e, u[0] != 0);
    case WIRE_OP_DRIVER_ATTACH:
        return engine_driver_attach(e, u[0] != 0);
    case WIRE_OP_DIAG_PRECHECK:
        return engine_diag_precheck(e, req->id[0]);
    case WIRE_OP_SET_LOGGING_SEVERITY:
        return engine_set_logging_severity(e, (int)u[0], (int)u[1]);
    case WIRE_OP_EMPTY_CACHE:
        return engine_empty_cache(e);
    case WIRE_OP_HEALTH_SET:
        if (u[1] == 0) /* a client from before dcgmHealthSet_v2 travelled: dcgmHealthSet's */
            return engine_health_set(e, s->owner, req->id[0], u[0], 30000000, 600.0);
        return engine_health_set(e, s->owner, req->id[0], u[0], req->ts[0], req->dbl);
    case WIRE_OP_INJECT: {
        dcgmFieldValue_v1 *value = struct_from_tail(req, tail, sizeof *value);
        int rc = value ? engine_inject(e, (dcgm_field_entity_group_t)u[0], u[1], value)
                       : DCGM_ST_BADPARAM;
        free(value);
        return rc;
    }
    default:
        return DCGM_ST_FUNCTION_NOT_FOUND;
    }
}

/* ---- reads ------------------------------------------------------------------ */

static int emit_record(void *ctx, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                       dcgmFieldValue_v1 *value)
{
    return he_record(ctx, group, entity, value);
}

static void serve_latest(he_session *s, const wire_request *req)
{
    int rc = engine_latest_values(s->engine, req->id[0], req->id[1], req->u[0] != 0,
                                  emit_record, s);
    reply_status(s, rc);
}

static void serve_since(he_session *s, const wire_request *req)
{
    long long next = req->ts[0];
    int rc = engine_values_since(s->engine, req->id[0], req->id[1], req->ts[0], &next,
                                 req->u[0] != 0, emit_record, s);
    /* a client that vanished mid-stream stopped the enumeration early */
    he_reply(s, rc, next, 0, 0, NULL, 0);
}

static void serve_entity_latest(he_session *s, const wire_request *req,
                                const unsigned char *tail)
{
    unsigned int count = req->u[2];
    if (count == 0 || count > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP ||
        req->tail_len != count * sizeof(unsigned short)) {
        reply_status(s, DCGM_ST_BADPARAM);
        return;
    }
    unsigned short fields[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
    memcpy(fields, tail, req->tail_len);
    dcgmFieldValue_v1 *values = calloc(count, sizeof *values);
    int rc = values ? engine_entity_latest(s->engine, (dcgm_field_entity_group_t)req->u[0],
                                           req->u[1], fields, count, values)
                    : DCGM_ST_MEMORY;
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < count; i++)
        he_record(s, (dcgm_field_entity_group_t)req->u[0], req->u[1], &values[i]);
    free(values);
    reply_status(s, rc);
}

static void v2_to_v1(const dcgmFieldValue_v2 *in, dcgmFieldValue_v1 *out)
{
    out->version = in->version;
    out->fieldId = in->fieldId;
    out->fieldType = in->fieldType;
    out->status = in->status;
    out->ts = in->ts;
    memcpy(&out->value, &in->value, WIRE_MAX_VALUE);
}

static void serve_entities_latest(he_session *s, const wire_request *req,
                                  const unsigned char *tail)
{
    unsigned int n_entities = req->u[0], n_fields = req->u[1];
    if (n_entities == 0 || n_fields == 0 || n_entities > DCGM_GROUP_MAX_ENTITIES_V2 ||
        n_fields > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP ||
        req->tail_len != n_entities * sizeof(dcgmGroupEntityPair_t) +
                             n_fields * sizeof(unsigned short)) {
        reply_status(s, DCGM_ST_BADPARAM);
        return;
    }
    dcgmGroupEntityPair_t *entities = malloc(n_entities * sizeof *entities);
    unsigned short fields[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
    size_t n = (size_t)n_entities * n_fields;
    dcgmFieldValue_v2 *values = calloc(n, sizeof *values);
    dcgmFieldValue_v1 *one = calloc(1, sizeof *one);
    int rc = DCGM_ST_MEMORY;
    if (entities && values && one) {
        memcpy(entities, tail, n_entities * sizeof *entities);
        memcpy(fields, tail + n_entities * sizeof *entities, n_fields * sizeof fields[0]);
        rc = engine_entities_latest(s->engine, entities, n_entities, fields, n_fields, req->u[2],
                                    values);
    }
    for (size_t i = 0; rc == DCGM_ST_OK && i < n; i++) {
        v2_to_v1(&values[i], one);
        he_record(s, values[i].entityGroupId, values[i].entityId, one);
    }
    free(entities);
    free(values);
    free(one);
    reply_status(s, rc);
}

static void serve_multiple_values(he_session *s, const wire_request *req)
{
    int count = req->u[2] > HE_MAX_MULTIPLE_VALUES ? HE_MAX_MULTIPLE_VALUES : (int)req->u[2];
    if (count <= 0) {
        reply_status(s, DCGM_ST_BADPARAM);
        return;
    }
    dcgmFieldValue_v1 *values = calloc((size_t)count, sizeof *values);
    int rc = values ? engine_multiple_values(s->engine, req->u[0], (unsigned short)req->u[1],
                                             &count, req->ts[0], req->ts[1],
                                             (dcgmOrder_t)req->u[3], values)
                    : DCGM_ST_MEMORY;
    for (int i = 0; rc == DCGM_ST_OK && i < count; i++)
        he_record(s, DCGM_FE_GPU, req->u[0], &values[i]);
    free(values);
    reply_status(s, rc);
}

/* ---- dispatch --------------------------------------------------------------- */

static int serve_reads(he_session *s, const wire_request *req, const unsigned char *tail)
{
    switch (req->op) {
    case WIRE_OP_LATEST_VALUES: serve_latest(s, req); return 1;
    case WIRE_OP_VALUES_SINCE: serve_since(s, req); return 1;
    case WIRE_OP_ENTITY_LATEST: serve_entity_latest(s, req, tail); return 1;
    case WIRE_OP_ENTITIES_LATEST: serve_entities_latest(s, req, tail); return 1;
    case WIRE_OP_MULTIPLE_VALUES: serve_multiple_values(s, req); return 1;
    default: return 0;
    }
}

static const inout_op *inout_for(uint32_t op)
{
    static const inout_op fake = { sizeof(dcgmCreateFakeEntities_v2), fill_fake };
    static const inout_op mig = { sizeof(dcgmMigHierarchy_v2), fill_mig };
    static const inout_op fg_info = { sizeof(dcgmFieldGroupInfo_v1), fill_fg_info };
    static const inout_op fg_all = { sizeof(dcgmAllFieldGroup_v1), fill_fg_all };
    static const inout_op prof = { sizeof(dcgmProfGetMetricGroups_v3), fill_prof };
    static const inout_op version = { sizeof(dcgmVersionInfo_t), fill_version };
    static const inout_op health = { sizeof(dcgmHostengineHealth_t), fill_health };
    static const inout_op attributes = { sizeof(dcgmDeviceAttributes_v3), fill_attributes };
    static const inout_op group_info = { sizeof(dcgmGroupInfo_v3), fill_group_info };
    static const inout_op group_ids = { sizeof(engine_group_ids), fill_group_ids };
    static const inout_op nvlink_status = { sizeof(dcgmNvLinkStatus_v5), fill_nvlink_status };
    static const inout_op nvlink_set = { sizeof(dcgmSetNvLinkLinkState_v1), fill_nvlink_set };
    static const inout_op cache_info = { sizeof(dcgmCacheManagerFieldInfo_v4_t), fill_cache_field_info };
    static const inout_op chip_arch = { sizeof(uint32_t), fill_chip_arch };
    static const inout_op device_topology = { sizeof(dcgmDeviceTopology_v2), fill_device_topology };
    static const inout_op group_topology = { sizeof(dcgmGroupTopology_v2), fill_group_topology };
    static const inout_op select_gpus = { sizeof(uint64_t), fill_select_gpus };
    static const inout_op nvlink_p2p = { sizeof(dcgmNvLinkP2PStatus_v1), fill_nvlink_p2p };
    static const inout_op env_var = { sizeof(dcgmEnvVarInfo_t), fill_env_var_info };
    static const inout_op summary = { sizeof(dcgmFieldSummaryRequest_v1), fill_field_summary };
    static const inout_op cpu_hierarchy = { sizeof(dcgmCpuHierarchy_v2), fill_cpu_hierarchy };
    static const inout_op config_set = { sizeof(engine_config_msg), fill_config_set };
    static const inout_op config_get = { sizeof(engine_config_msg), fill_config_get };
    static const inout_op config_enforce = { sizeof(engine_config_msg), fill_config_enforce };
    static const inout_op module_statuses = { ENGINE_MODULE_STATUSES_SIZE, fill_module_statuses };
    switch (op) {
    case WIRE_OP_CHIP_ARCH: return &chip_arch;
    case WIRE_OP_DEVICE_TOPOLOGY: return &device_topology;
    case WIRE_OP_GROUP_TOPOLOGY: return &group_topology;
    case WIRE_OP_SELECT_GPUS: return &select_gpus;
    case WIRE_OP_NVLINK_P2P: return &nvlink_p2p;
    case WIRE_OP_CREATE_FAKE_ENTITIES: return &fake;
    case WIRE_OP_MIG_HIERARCHY: return &mig;
    case WIRE_OP_FIELD_GROUP_GET_INFO: return &fg_info;
    case WIRE_OP_FIELD_GROUP_GET_ALL: return &fg_all;
    case WIRE_OP_PROF_METRIC_GROUPS: return &prof;
    case WIRE_OP_VERSION_INFO: return &version;
    case WIRE_OP_HOSTENGINE_HEALTH: return &health;
    case WIRE_OP_DEVICE_ATTRIBUTES: return &attributes;
    case WIRE_OP_GROUP_GET_INFO: return &group_info;
    case WIRE_OP_GROUP_GET_ALL_IDS: return &group_ids;
    case WIRE_OP_NVLINK_STATUS: return &nvlink_status;
    case WIRE_OP_NVLINK_SET_STATE: return &nvlink_set;
    case WIRE_OP_CACHE_FIELD_INFO: return &cache_info;
    case WIRE_OP_ENV_VAR_INFO: return &env_var;
    case WIRE_OP_FIELD_SUMMARY: return &summary;
    case WIRE_OP_CPU_HIERARCHY: return &cpu_hierarchy;
    case WIRE_OP_CONFIG_SET: return &config_set;
    case WIRE_OP_CONFIG_GET: return &config_get;
    case WIRE_OP_CONFIG_ENFORCE: return &config_enforce;
    case WIRE_OP_MODULE_STATUSES: return &module_statuses;
    default: return NULL;
    }
}

static int serve_structs(he_session *s, const wire_request *req, const unsigned char *tail)
{
    const inout_op *op = inout_for(req->op);
    if (op) {
        serve_inout(s, req, tail, op);
        return 1;
    }
    switch (req->op) {
    case WIRE_OP_HEALTH_CHECK: serve_health_check(s, req, tail); return 1;
    case WIRE_OP_GPU_IDS: serve_gpu_ids(s, req); return 1;
    case WIRE_OP_GPU_STATUS: serve_gpu_status(s, req); return 1;
    case WIRE_OP_ENTITY_GROUP_ENTITIES: serve_entity_group_entities(s, req); return 1;
    case WIRE_OP_GROUP_CREATE: serve_group_create(s, req, tail); return 1;
    case WIRE_OP_FIELD_GROUP_CREATE: serve_field_group_create(s, req, tail); return 1;
    default: return 0;
    }
}

void he_dispatch(he_session *s, const wire_request *req, const unsigned char *tail)
{
    if (serve_reads(s, req, tail) || serve_structs(s, req, tail) ||
        he_policy_dispatch(s, req, tail))
        return;
    if (req->op == WIRE_OP_HEALTH_GET) {
        unsigned int systems = 0;
        int rc = engine_health_get(s->engine, req->id[0], &systems);
        he_reply(s, rc, 0, systems, 0, NULL, 0);
    } else if (req->op == WIRE_OP_INTROSPECT) {
        engine_introspect out;
        int rc = engine_introspect_read(s->engine, req->u[0] != 0, req->u[1] != 0, &out);
        he_reply(s, rc, 0, 0, 0, &out, sizeof out);
    } else if (req->op == WIRE_OP_START_TIME) {
        he_reply(s, DCGM_ST_OK, engine_start_time_us(s->engine), 0, 0, NULL, 0);
    } else {
        reply_status(s, serve_simple(s, req, tail));
    }
}
