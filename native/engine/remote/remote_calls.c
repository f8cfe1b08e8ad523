/*
 * remote_calls.c -- the client half of each request a remote handle sends:
 * it checks what only the caller's process can check (pointers, array
 * lengths), packs arguments, and unpacks the hostengine's answer into the
 * caller's memory exactly where the embedded engine would have written.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote_internal.h"

/* Names travel bounded; one byte more than the engine keeps, so an
 * over-long name is still refused as over-long. */
typedef struct wire_name {
    char text[DCGM_MAX_STR_LENGTH + 1];
} wire_name;

static void name_copy(wire_name *out, const char *name)
{
    memset(out, 0, sizeof *out);
    snprintf(out->text, sizeof out->text, "%s", name);
}

static void request_init(wire_request *req, wire_op op)
{
    memset(req, 0, sizeof *req);
    req->op = op;
}

int remote_call(remote_conn *c, wire_request *req, const void *tail, size_t tail_len,
                void *out, size_t out_cap, wire_reply *final)
{
    remote_reply reply;
    memset(&reply, 0, sizeof reply);
    reply.out = out;
    reply.out_cap = out ? out_cap : 0;
    int rc = remote_transact(c, req, tail, tail_len, &reply);
    if (rc == DCGM_ST_OK) {
        rc = reply.final.status;
        if (final)
            *final = reply.final;
    }
    remote_reply_free(&reply);
    return rc;
}

/* A request answered by a status alone. */
static int call_status(remote_conn *c, wire_request *req)
{
    return remote_call(c, req, NULL, 0, NULL, 0, NULL);
}

/* A request carrying a struct the engine reads and writes in place. */
static int call_inout(remote_conn *c, wire_request *req, void *inout, size_t size)
{
    return remote_call(c, req, inout, size, inout, size, NULL);
}

/* A request whose only argument is that in-place struct. */
static int call_struct(remote_conn *c, wire_op op, void *inout, size_t size)
{
    if (!inout)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, op);
    return call_inout(c, &req, inout, size);
}

/* A request answered by records, received whole before they are used. */
static int call_records(remote_conn *c, wire_request *req, const void *tail, size_t tail_len,
                        remote_reply *reply)
{
    memset(reply, 0, sizeof *reply);
    int rc = remote_transact(c, req, tail, tail_len, reply);
    return rc == DCGM_ST_OK ? reply->final.status : rc;
}

/* ---- entities ------------------------------------------------------------ */

int remote_gpu_ids(remote_conn *c, int only_supported, unsigned int *ids, int *count)
{
    if (!ids || !count)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_GPU_IDS);
    req.u[0] = only_supported != 0;
    wire_reply final;
    int rc = remote_call(c, &req, NULL, 0, ids, DCGM_MAX_NUM_DEVICES * sizeof *ids, &final);
    if (rc == DCGM_ST_OK)
        *count = (int)final.u[0];
    return rc;
}

int remote_gpu_status(remote_conn *c, unsigned int gpu, DcgmEntityStatus_t *status)
{
    if (!status)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_GPU_STATUS);
    req.u[0] = gpu;
    return remote_call(c, &req, NULL, 0, status, sizeof *status, NULL);
}

int remote_entity_group_entities(remote_conn *c, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t *entities, int *count, unsigned int flags)
{
    if (!entities || !count || *count < 0)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_ENTITY_GROUP_ENTITIES);
    req.u[0] = (uint32_t)group;
    req.u[1] = flags;
    req.u[2] = (uint32_t)*count;
    wire_reply final;
    int rc = remote_call(c, &req, NULL, 0, entities, (size_t)*count * sizeof *entities, &final);
    if (rc == DCGM_ST_OK || rc == DCGM_ST_INSUFFICIENT_SIZE)
        *count = (int)final.u[0];
    return rc;
}

int remote_create_fake_entities(remote_conn *c, dcgmCreateFakeEntities_v2 *request)
{
    return call_struct(c, WIRE_OP_CREATE_FAKE_ENTITIES, request, sizeof *request);
}

int remote_mig_hierarchy(remote_conn *c, dcgmMigHierarchy_v2 *hierarchy)
{
    return call_struct(c, WIRE_OP_MIG_HIERARCHY, hierarchy, sizeof *hierarchy);
}

int remote_cpu_hierarchy(remote_conn *c, dcgmCpuHierarchy_v2 *hierarchy)
{
    return call_struct(c, WIRE_OP_CPU_HIERARCHY, hierarchy, sizeof *hierarchy);
}

int remote_device_attributes(remote_conn *c, unsigned int gpu, dcgmDeviceAttributes_v3 *attr)
{
    if (!attr)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_DEVICE_ATTRIBUTES);
    req.u[0] = gpu;
    return call_inout(c, &req, attr, sizeof *attr);
}

/* ---- groups and field groups --------------------------------------------- */

int remote_group_create(remote_conn *c, dcgmGroupType_t type, const char *name,
                        dcgmGpuGrp_t *id)
{
    if (!name || !id)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_GROUP_CREATE);
    req.u[0] = (uint32_t)type;
    wire_name wire;
    name_copy(&wire, name);
    wire_reply final;
    int rc = remote_call(c, &req, &wire, sizeof wire, NULL, 0, &final);
    if (rc == DCGM_ST_OK)
        *id = (dcgmGpuGrp_t)final.i64;
    return rc;
}

static int group_entity_op(remote_conn *c, wire_op op, dcgmGpuGrp_t id,
                           dcgm_field_entity_group_t group, dcgm_field_eid_t entity)
{
    wire_request req;
    request_init(&req, op);
    req.id[0] = id;
    req.u[0] = (uint32_t)group;
    req.u[1] = entity;
    return call_status(c, &req);
}

int remote_group_add_entity(remote_conn *c, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity)
{
    return group_entity_op(c, WIRE_OP_GROUP_ADD_ENTITY, id, group, entity);
}

int remote_group_remove_entity(remote_conn *c, dcgmGpuGrp_t id,
                               dcgm_field_entity_group_t group, dcgm_field_eid_t entity)
{
    return group_entity_op(c, WIRE_OP_GROUP_REMOVE_ENTITY, id, group, entity);
}

static int id_op(remote_conn *c, wire_op op, uint64_t id)
{
    wire_request req;
    request_init(&req, op);
    req.id[0] = id;
    return call_status(c, &req);
}

int remote_group_destroy(remote_conn *c, dcgmGpuGrp_t id)
{
    return id_op(c, WIRE_OP_GROUP_DESTROY, id);
}

int remote_group_get_info(remote_conn *c, dcgmGpuGrp_t id, dcgmGroupInfo_v3 *info)
{
    if (!info)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_GROUP_GET_INFO);
    req.id[0] = id;
    return call_inout(c, &req, info, sizeof *info);
}

typedef struct wire_field_group {
    wire_name name;
    unsigned short ids[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
} wire_field_group;

int remote_field_group_create(remote_conn *c, int count, const unsigned short *field_ids,
                              const char *name, dcgmFieldGrp_t *id)
{
    if (!field_ids || !name || !id || count < 1 || count > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_FIELD_GROUP_CREATE);
    req.u[0] = (uint32_t)count;
    wire_field_group wire;
    memset(&wire, 0, sizeof wire);
    name_copy(&wire.name, name);
    memcpy(wire.ids, field_ids, (size_t)count * sizeof *field_ids);
    wire_reply final;
    int rc = remote_call(c, &req, &wire, sizeof wire, NULL, 0, &final);
    if (rc == DCGM_ST_OK)
        *id = (dcgmFieldGrp_t)final.i64;
    return rc;
}

int remote_field_group_destroy(remote_conn *c, dcgmFieldGrp_t id)
{
    return id_op(c, WIRE_OP_FIELD_GROUP_DESTROY, id);
}

int remote_field_group_get_info(remote_conn *c, dcgmFieldGroupInfo_v1 *info)
{
    return call_struct(c, WIRE_OP_FIELD_GROUP_GET_INFO, info, sizeof *info);
}

int remote_group_get_all_ids(remote_conn *c, engine_group_ids *out)
{
    memset(out, 0, sizeof *out);
    return call_struct(c, WIRE_OP_GROUP_GET_ALL_IDS, out, sizeof *out);
}

int remote_nvlink_status(remote_conn *c, dcgmNvLinkStatus_v5 *status)
{
    return call_struct(c, WIRE_OP_NVLINK_STATUS, status, sizeof *status);
}

int remote_env_var_info(remote_conn *c, dcgmEnvVarInfo_t *info)
{
    return call_struct(c, WIRE_OP_ENV_VAR_INFO, info, sizeof *info);
}

int remote_field_summary(remote_conn *c, dcgmFieldSummaryRequest_v1 *request)
{
    return call_struct(c, WIRE_OP_FIELD_SUMMARY, request, sizeof *request);
}

int remote_cache_field_info(remote_conn *c, dcgmCacheManagerFieldInfo_v4_t *info)
{
    return call_struct(c, WIRE_OP_CACHE_FIELD_INFO, info, sizeof *info);
}

/* ---- chips and topology: the answer comes back over the request's struct ---- */

int remote_chip_arch(remote_conn *c, unsigned int gpu, unsigned int *arch)
{
    if (!arch)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_CHIP_ARCH);
    req.u[0] = gpu;
    uint32_t out = 0;
    int rc = call_inout(c, &req, &out, sizeof out);
    if (rc == DCGM_ST_OK)
        *arch = out;
    return rc;
}

int remote_device_topology(remote_conn *c, unsigned int gpu, dcgmDeviceTopology_v2 *out)
{
    if (!out)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_DEVICE_TOPOLOGY);
    req.u[0] = gpu;
    return call_inout(c, &req, out, sizeof *out);
}

int remote_group_topology(remote_conn *c, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out)
{
    if (!out)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_GROUP_TOPOLOGY);
    req.id[0] = (uint64_t)group;
    return call_inout(c, &req, out, sizeof *out);
}

int remote_select_gpus(remote_conn *c, uint64_t input, unsigned int num_gpus, uint64_t hints,
                       uint64_t *output)
{
    if (!output)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_SELECT_GPUS);
    req.id[0] = input;
    req.id[1] = hints;
    req.u[0] = num_gpus;
    uint64_t out = 0;
    int rc = call_inout(c, &req, &out, sizeof out);
    *output = out;
    return rc;
}

int remote_nvlink_p2p(remote_conn *c, dcgmNvLinkP2PStatus_v1 *status)
{
    return call_struct(c, WIRE_OP_NVLINK_P2P, status, sizeof *status);
}

int remote_nvlink_set_state(remote_conn *c, const dcgmSetNvLinkLinkState_v1 *request)
{
    if (!request)
        return DCGM_ST_BADPARAM;
    dcgmSetNvLinkLinkState_v1 copy = *request;
    return call_struct(c, WIRE_OP_NVLINK_SET_STATE, &copy, sizeof copy);
}

int remote_field_group_get_all(remote_conn *c, dcgmAllFieldGroup_v1 *all)
{
    return call_struct(c, WIRE_OP_FIELD_GROUP_GET_ALL, all, sizeof *all);
}

/* ---- watches and the cache ----------------------------------------------- */

int remote_watch_fields(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long update_freq_us, double max_keep_age_s, int max_keep_samples)
{
    wire_request req;
    request_init(&req, WIRE_OP_WATCH_FIELDS);
    req.id[0] = group;
    req.id[1] = field_group;
    req.ts[0] = update_freq_us;
    req.dbl = max_keep_age_s;
    req.u[0] = (uint32_t)max_keep_samples;
    return call_status(c, &req);
}

int remote_unwatch_fields(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group)
{
    wire_request req;
    request_init(&req, WIRE_OP_UNWATCH_FIELDS);
    req.id[0] = group;
    req.id[1] = field_group;
    return call_status(c, &req);
}

int remote_watch_field_value(remote_conn *c, dcgm_field_entity_group_t group,
                             dcgm_field_eid_t entity, unsigned short field_id,
                             long long update_freq_us, double max_keep_age_s,
                             int max_keep_samples)
{
    wire_request req;
    request_init(&req, WIRE_OP_WATCH_FIELD_VALUE);
    req.u[0] = (uint32_t)group;
    req.u[1] = entity;
    req.u[2] = field_id;
    req.u[3] = (uint32_t)max_keep_samples;
    req.ts[0] = update_freq_us;
    req.dbl = max_keep_age_s;
    return call_status(c, &req);
}

int remote_unwatch_field_value(remote_conn *c, dcgm_field_entity_group_t group,
                               dcgm_field_eid_t entity, unsigned short field_id,
                               int clear_cache)
{
    wire_request req;
    request_init(&req, WIRE_OP_UNWATCH_FIELD_VALUE);
    req.u[0] = (uint32_t)group;
    req.u[1] = entity;
    req.u[2] = field_id;
    req.u[3] = (uint32_t)clear_cache;
    return call_status(c, &req);
}

int remote_update_all_fields(remote_conn *c, int wait)
{
    wire_request req;
    request_init(&req, WIRE_OP_UPDATE_ALL_FIELDS);
    req.u[0] = (uint32_t)wait;
    return call_status(c, &req);
}

int remote_inject(remote_conn *c, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                  const dcgmFieldValue_v1 *value)
{
    if (!value)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_INJECT);
    req.u[0] = (uint32_t)group;
    req.u[1] = entity;
    return remote_call(c, &req, value, sizeof *value, NULL, 0, NULL);
}

int remote_empty_cache(remote_conn *c)
{
    wire_request req;
    request_init(&req, WIRE_OP_EMPTY_CACHE);
    return call_status(c, &req);
}

/* ---- reads ---------------------------------------------------------------- */

/* Everything of a record but its value into a v1 value. */
static void header_to_v1(const wire_record *rec, dcgmFieldValue_v1 *out)
{
    out->version = rec->version;
    out->fieldId = rec->field_id;
    out->fieldType = rec->field_type;
    out->status = rec->status;
    out->ts = rec->ts;
}

static void record_to_v1(const wire_record *rec, const dcgmFieldValueUnion_t *value,
                         dcgmFieldValue_v1 *out)
{
    header_to_v1(rec, out);
    memcpy(&out->value, value, WIRE_MAX_VALUE);
}

/* Unpacks the first n records of a reply into consecutive v1 values. */
static void unpack_v1(const remote_reply *reply, size_t n, dcgmFieldValue_v1 *values)
{
    dcgmFieldValueUnion_t value;
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        wire_record rec;
        remote_record_next(reply, &pos, &rec, &value);
        record_to_v1(&rec, &value, &values[i]);
    }
}

/* Hands every record to emit until it asks to stop; 1 if it did.  The value
 * bytes past a record's own are kept zero by clearing only what the previous
 * record wrote, not the whole union each time (a tick hands over hundreds). */
static int replay(const remote_reply *reply, engine_emit_fn emit, void *ctx)
{
    dcgmFieldValue_v1 *scratch = calloc(1, sizeof *scratch);
    if (!scratch)
        return -1;
    unsigned char *value = (unsigned char *)&scratch->value;
    int stopped = 0;
    size_t pos = 0, written = 0;
    for (size_t i = 0; i < reply->n_records && !stopped; i++) {
        wire_record rec;
        memcpy(&rec, reply->records + pos, sizeof rec);
        pos += sizeof rec;
        memcpy(value, reply->records + pos, rec.value_len);
        pos += rec.value_len;
        if (written > rec.value_len)
            memset(value + rec.value_len, 0, written - rec.value_len);
        written = rec.value_len;
        header_to_v1(&rec, scratch);
        stopped = emit(ctx, (dcgm_field_entity_group_t)rec.group, rec.entity, scratch) != 0;
    }
    free(scratch);
    return stopped;
}

static void read_request(wire_request *req, wire_op op, dcgmGpuGrp_t group,
                         dcgmFieldGrp_t field_group, int gpu_only)
{
    request_init(req, op);
    req->id[0] = group;
    req->id[1] = field_group;
    req->u[0] = gpu_only != 0;
}

int remote_latest_values(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                         int gpu_only, engine_emit_fn emit, void *ctx)
{
    if (!emit)
        return DCGM_ST_BADPARAM;
    wire_request req;
    read_request(&req, WIRE_OP_LATEST_VALUES, group, field_group, gpu_only);
    remote_reply reply;
    int rc = call_records(c, &req, NULL, 0, &reply);
    if (reply.n_records && replay(&reply, emit, ctx) < 0)
        rc = DCGM_ST_MEMORY;
    remote_reply_free(&reply);
    return rc;
}

int remote_values_since(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long since, long long *next_since, int gpu_only,
                        engine_emit_fn emit, void *ctx)
{
    if (!emit || !next_since)
        return DCGM_ST_BADPARAM;
    *next_since = since;
    wire_request req;
    read_request(&req, WIRE_OP_VALUES_SINCE, group, field_group, gpu_only);
    req.ts[0] = since;
    remote_reply reply;
    int rc = call_records(c, &req, NULL, 0, &reply);
    int stopped = reply.n_records ? replay(&reply, emit, ctx) : 0;
    if (stopped < 0)
        rc = DCGM_ST_MEMORY;
    else if (rc == DCGM_ST_OK && !stopped)
        *next_since = reply.final.i64;
    remote_reply_free(&reply);
    return rc;
}

int remote_entity_latest(remote_conn *c, dcgm_field_entity_group_t group,
                         dcgm_field_eid_t entity, const unsigned short *fields,
                         unsigned int count, dcgmFieldValue_v1 *values)
{
    if (!fields || !values || count == 0 || count > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_ENTITY_LATEST);
    req.u[0] = (uint32_t)group;
    req.u[1] = entity;
    req.u[2] = count;
    remote_reply reply;
    int rc = call_records(c, &req, fields, count * sizeof *fields, &reply);
    if (rc == DCGM_ST_OK && reply.n_records != count)
        rc = DCGM_ST_GENERIC_ERROR;
    if (rc == DCGM_ST_OK)
        unpack_v1(&reply, count, values);
    remote_reply_free(&reply);
    return rc;
}

int remote_entities_latest(remote_conn *c, const dcgmGroupEntityPair_t *entities,
                           unsigned int entity_count, const unsigned short *fields,
                           unsigned int field_count, unsigned int flags,
                           dcgmFieldValue_v2 *values)
{
    if (!entities || !fields || !values || entity_count == 0 || field_count == 0 ||
        entity_count > DCGM_GROUP_MAX_ENTITIES_V2 ||
        field_count > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP)
        return DCGM_ST_BADPARAM;
    size_t entities_len = entity_count * sizeof *entities;
    size_t tail_len = entities_len + field_count * sizeof *fields;
    unsigned char *tail = malloc(tail_len);
    if (!tail)
        return DCGM_ST_MEMORY;
    memcpy(tail, entities, entities_len);
    memcpy(tail + entities_len, fields, field_count * sizeof *fields);
    wire_request req;
    request_init(&req, WIRE_OP_ENTITIES_LATEST);
    req.u[0] = entity_count;
    req.u[1] = field_count;
    req.u[2] = flags;
    remote_reply reply;
    int rc = call_records(c, &req, tail, tail_len, &reply);
    free(tail);
    size_t want = (size_t)entity_count * field_count;
    if (rc == DCGM_ST_OK && reply.n_records != want)
        rc = DCGM_ST_GENERIC_ERROR;
    dcgmFieldValueUnion_t value;
    size_t pos = 0;
    for (size_t i = 0; rc == DCGM_ST_OK && i < want; i++) {
        wire_record rec;
        remote_record_next(&reply, &pos, &rec, &value);
        dcgmFieldValue_v2 *out = &values[i];
        out->version = rec.version;
        out->entityGroupId = (dcgm_field_entity_group_t)rec.group;
        out->entityId = rec.entity;
        out->fieldId = rec.field_id;
        out->fieldType = rec.field_type;
        out->status = rec.status;
        out->unused = 0;
        out->ts = rec.ts;
        memcpy(&out->value, &value, WIRE_MAX_VALUE);
    }
    remote_reply_free(&reply);
    return rc;
}

int remote_multiple_values(remote_conn *c, unsigned int gpu, unsigned short field_id,
                           int *count, long long start_ts, long long end_ts,
                           dcgmOrder_t order, dcgmFieldValue_v1 *values)
{
    if (!count || !values || *count <= 0)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_MULTIPLE_VALUES);
    req.u[0] = gpu;
    req.u[1] = field_id;
    req.u[2] = (uint32_t)*count;
    req.u[3] = (uint32_t)order;
    req.ts[0] = start_ts;
    req.ts[1] = end_ts;
    remote_reply reply;
    int rc = call_records(c, &req, NULL, 0, &reply);
    if (rc == DCGM_ST_OK && reply.n_records > (size_t)*count)
        rc = DCGM_ST_GENERIC_ERROR;
    if (rc == DCGM_ST_OK) {
        unpack_v1(&reply, reply.n_records, values);
        *count = (int)reply.n_records;
    }
    remote_reply_free(&reply);
    return rc;
}

/* ---- health, profiling, versions ----------------------------------------- */

int remote_health_set(remote_conn *c, dcgmGpuGrp_t group, unsigned int systems,
                      long long update_interval_us, double max_keep_age_s)
{
    wire_request req;
    request_init(&req, WIRE_OP_HEALTH_SET);
    req.id[0] = group;
    req.u[0] = systems;
    req.u[1] = 1; /* interval and keep age travel (a client that sends 0 gets dcgmHealthSet's) */
    req.ts[0] = update_interval_us;
    req.dbl = max_keep_age_s;
    return call_status(c, &req);
}

int remote_health_get(remote_conn *c, dcgmGpuGrp_t group, unsigned int *systems)
{
    if (!systems)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_HEALTH_GET);
    req.id[0] = group;
    wire_reply final;
    int rc = remote_call(c, &req, NULL, 0, NULL, 0, &final);
    if (rc == DCGM_ST_OK)
        *systems = final.u[0];
    return rc;
}

int remote_health_check(remote_conn *c, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out)
{
    if (!out)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_HEALTH_CHECK);
    req.id[0] = group;
    /* only the head travels out; the answer is the head and the incidents
     * the engine wrote, the rest of the caller's struct stays as it was */
    return remote_call(c, &req, out, offsetof(dcgmHealthResponse_v5, incidents), out,
                       sizeof *out, NULL);
}

int remote_prof_metric_groups(remote_conn *c, dcgmProfGetMetricGroups_v3 *groups)
{
    return call_struct(c, WIRE_OP_PROF_METRIC_GROUPS, groups, sizeof *groups);
}

int remote_version_info(remote_conn *c, dcgmVersionInfo_t *info)
{
    return call_struct(c, WIRE_OP_VERSION_INFO, info, sizeof *info);
}

int remote_hostengine_health(remote_conn *c, dcgmHostengineHealth_t *health)
{
    return call_struct(c, WIRE_OP_HOSTENGINE_HEALTH, health, sizeof *health);
}

int remote_start_time(remote_conn *c, long long *start_us)
{
    if (!start_us)
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, WIRE_OP_START_TIME);
    wire_reply final;
    int rc = remote_call(c, &req, NULL, 0, NULL, 0, &final);
    if (rc == DCGM_ST_OK)
        *start_us = final.i64;
    return rc;
}

/* ---- config manager -------------------------------------------------------- */

int remote_config_call(remote_conn *c, wire_op op, dcgmGpuGrp_t group, engine_config_msg *msg)
{
    if (!msg || (op != WIRE_OP_CONFIG_SET && op != WIRE_OP_CONFIG_GET &&
                 op != WIRE_OP_CONFIG_ENFORCE))
        return DCGM_ST_BADPARAM;
    wire_request req;
    request_init(&req, op);
    req.id[0] = group;
    int rc = call_inout(c, &req, msg, sizeof *msg);
    /* the counts came off the wire */
    if (msg->num_configs > DCGM_MAX_NUM_DEVICES)
        msg->num_configs = DCGM_MAX_NUM_DEVICES;
    if (msg->num_statuses > DCGM_MAX_NUM_DEVICES)
        msg->num_statuses = DCGM_MAX_NUM_DEVICES;
    return rc;
}

/* ---- engine administration ------------------------------------------------ */

int remote_module_statuses(remote_conn *c, void *statuses)
{
    return call_struct(c, WIRE_OP_MODULE_STATUSES, statuses, ENGINE_MODULE_STATUSES_SIZE);
}

static int call_number(remote_conn *c, wire_op op, uint32_t number)
{
    wire_request req;
    request_init(&req, op);
    req.u[0] = number;
    return call_status(c, &req);
}

int remote_module_denylist(remote_conn *c, unsigned int module)
{
    return call_number(c, WIRE_OP_MODULE_DENYLIST, module);
}

int remote_pause_resume(remote_conn *c, int pause)
{
    return call_number(c, WIRE_OP_PAUSE_RESUME, pause != 0);
}

int remote_driver_attach(remote_conn *c, int attach)
{
    return call_number(c, WIRE_OP_DRIVER_ATTACH, attach != 0);
}

int remote_introspect(remote_conn *c, int cpu, int wait, engine_introspect *out)
{
    if (!out)
        return DCGM_ST_BADPARAM;
    memset(out, 0, sizeof *out);
    wire_request req;
    request_init(&req, WIRE_OP_INTROSPECT);
    req.u[0] = cpu != 0;
    req.u[1] = wait != 0;
    return remote_call(c, &req, NULL, 0, out, sizeof *out, NULL);
}

int remote_diag_precheck(remote_conn *c, dcgmGpuGrp_t group)
{
    wire_request req;
    request_init(&req, WIRE_OP_DIAG_PRECHECK);
    req.id[0] = group;
    return call_status(c, &req);
}

int remote_set_logging_severity(remote_conn *c, int logger, int severity)
{
    wire_request req;
    request_init(&req, WIRE_OP_SET_LOGGING_SEVERITY);
    req.u[0] = (uint32_t)logger;
    req.u[1] = (uint32_t)severity;
    return call_status(c, &req);
}
