/*
 * remote.h -- the connection between the simulated libdcgm.so.4 and the
 * simulated nv-hostengine (hostengine.c): address parsing as
 * dcgmConnect_v2/_v3 do it, connecting with retries, the hello exchange, the
 * wire format, and the client half of every request a remote handle serves.
 *
 * Both ends are this library on the same machine, so fixed parts travel as
 * raw structs in host byte order; only field values are packed (a value
 * record carries just the used bytes of its union).  Every length read off
 * the wire is bounded before use.
 */
#ifndef DCGM_SIM_REMOTE_H
#define DCGM_SIM_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "../../dcgm_abi.h"
#include "../engine.h"

typedef enum remote_kind { REMOTE_TCP = 1, REMOTE_UNIX = 2, REMOTE_VSOCK = 3 } remote_kind;

typedef struct remote_addr {
    remote_kind kind;
    char host[256];              /* TCP: name or address, without brackets */
    unsigned int port;           /* TCP and VSOCK */
    unsigned int cid;            /* VSOCK */
    char path[108];              /* UNIX */
} remote_addr;

typedef struct remote_conn remote_conn;

/* The line each side sends first; a hostengine answers with the same. */
#define REMOTE_HELLO "DCGM-SIM-HOSTENGINE HELLO 1\n"
#define REMOTE_DEFAULT_TIMEOUT_MS 5000u
/* DCGM's per-request timeout; the simulator-only environment variable
 * DCGM_SIM_REQUEST_TIMEOUT_MS (read at connect) shortens it for tests. */
#define REMOTE_REQUEST_TIMEOUT_MS 60000u
#define REMOTE_REQUEST_TIMEOUT_ENV "DCGM_SIM_REQUEST_TIMEOUT_MS"

/* ---- wire format ---------------------------------------------------------- */

#define WIRE_REQUEST_MAGIC 0x44435251u   /* "DCRQ" */
#define WIRE_REPLY_MAGIC 0x44435250u     /* "DCRP" */
/* The largest tail either side accepts in one frame (a health response,
 * the biggest struct that travels whole, is about 1 MiB). */
#define WIRE_MAX_TAIL (2u << 20)
/* The most record bytes one reply may accumulate on the client. */
#define WIRE_MAX_RECORD_BYTES (512u << 20)
/* Bytes of the value union a record may carry: the engine only ever
 * touches the first 256 (strings; blobs are never stored). */
#define WIRE_MAX_VALUE DCGM_MAX_STR_LENGTH

typedef enum wire_op {
    WIRE_OP_PERSIST = 1,
    WIRE_OP_GPU_IDS,
    WIRE_OP_GPU_STATUS,
    WIRE_OP_ENTITY_GROUP_ENTITIES,
    WIRE_OP_CREATE_FAKE_ENTITIES,
    WIRE_OP_MIG_HIERARCHY,
    WIRE_OP_DEVICE_ATTRIBUTES,
    WIRE_OP_GROUP_CREATE,
    WIRE_OP_GROUP_ADD_ENTITY,
    WIRE_OP_GROUP_REMOVE_ENTITY,
    WIRE_OP_GROUP_DESTROY,
    WIRE_OP_GROUP_GET_INFO,
    WIRE_OP_FIELD_GROUP_CREATE,
    WIRE_OP_FIELD_GROUP_DESTROY,
    WIRE_OP_FIELD_GROUP_GET_INFO,
    WIRE_OP_FIELD_GROUP_GET_ALL,
    WIRE_OP_WATCH_FIELDS,
    WIRE_OP_UNWATCH_FIELDS,
    WIRE_OP_WATCH_FIELD_VALUE,
    WIRE_OP_UNWATCH_FIELD_VALUE,
    WIRE_OP_UPDATE_ALL_FIELDS,
    WIRE_OP_INJECT,
    WIRE_OP_EMPTY_CACHE,
    WIRE_OP_LATEST_VALUES,
    WIRE_OP_VALUES_SINCE,
    WIRE_OP_ENTITY_LATEST,
    WIRE_OP_ENTITIES_LATEST,
    WIRE_OP_MULTIPLE_VALUES,
    WIRE_OP_HEALTH_SET,
    WIRE_OP_HEALTH_GET,
    WIRE_OP_HEALTH_CHECK,
    WIRE_OP_PROF_METRIC_GROUPS,
    WIRE_OP_VERSION_INFO,
    WIRE_OP_HOSTENGINE_HEALTH,
    WIRE_OP_START_TIME,
    WIRE_OP_GROUP_GET_ALL_IDS,
    WIRE_OP_NVLINK_STATUS,
    WIRE_OP_NVLINK_SET_STATE,
    WIRE_OP_CACHE_FIELD_INFO,
    /* chips and topology (engine_topo.c) */
    WIRE_OP_CHIP_ARCH,
    WIRE_OP_DEVICE_TOPOLOGY,
    WIRE_OP_GROUP_TOPOLOGY,
    WIRE_OP_SELECT_GPUS,
    WIRE_OP_NVLINK_P2P,
    /* misc API gaps: hostengine environment, field summaries */
    WIRE_OP_ENV_VAR_INFO,
    WIRE_OP_FIELD_SUMMARY,
    /* CPUs, IMEX and sysmon */
    WIRE_OP_CPU_HIERARCHY,
    /* config manager (engine_config.c): an engine_config_msg in and out */
    WIRE_OP_CONFIG_SET,
    WIRE_OP_CONFIG_GET,
    WIRE_OP_CONFIG_ENFORCE,
    /* ---- policy manager (remote_policy.c, hostengine_policy.c) ---- */
    WIRE_OP_POLICY_SET,          /* id[0] group; tail: dcgmPolicy_v1 */
    WIRE_OP_POLICY_GET,          /* id[0] group; reply: u[0] policies */
    WIRE_OP_POLICY_REGISTER,     /* id[0] group, u[0] conditions, u[1] cookie */
    WIRE_OP_POLICY_UNREGISTER,   /* id[0] group */
    WIRE_OP_POLICY_TAKE,         /* u[0] capacity; reply: u[0] engine_policy_notes */
    /* ---- end of policy manager ---- */
    /* engine administration: modules, pause, driver attachment, introspection */
    WIRE_OP_MODULE_STATUSES,
    WIRE_OP_MODULE_DENYLIST,
    WIRE_OP_PAUSE_RESUME,
    WIRE_OP_DRIVER_ATTACH,
    WIRE_OP_INTROSPECT,
    WIRE_OP_DIAG_PRECHECK,
    WIRE_OP_SET_LOGGING_SEVERITY,
    WIRE_OP_COUNT
} wire_op;

/* A request: this header, then tail_len bytes (a struct, ids, a name). */
typedef struct wire_request {
    uint32_t magic;
    uint32_t op;
    uint32_t tail_len;
    uint32_t u[5];               /* small integers: entity group/id, field, flags, counts */
    uint64_t id[2];              /* group and field group ids */
    int64_t ts[2];               /* cursors, time bounds, update intervals */
    double dbl;                  /* max keep age */
} wire_request;

/* Records replies come as RECORDS frames followed by one FINAL frame. */
typedef enum wire_reply_kind { WIRE_FINAL = 1, WIRE_RECORDS = 2 } wire_reply_kind;

typedef struct wire_reply {
    uint32_t magic;
    uint32_t kind;
    int32_t status;              /* FINAL: the call's DCGM_ST_* */
    uint32_t tail_len;
    int64_t i64;                 /* next cursor, start time, new ids */
    uint32_t u[2];               /* counts */
} wire_reply;

/* One packed value: this header, then value_len bytes of the union. */
typedef struct wire_record {
    uint32_t group;
    uint32_t entity;
    uint32_t version;
    uint16_t field_id;
    uint16_t field_type;
    int32_t status;
    uint32_t value_len;
    int64_t ts;
} wire_record;

/* Bytes of value's union worth sending (the rest is zero). */
size_t wire_value_len(const dcgmFieldValueUnion_t *value);

/* ---- addresses and connections -------------------------------------------- */

/* dcgmConnect_v2's address: host, host:port, [v6]:port, or a socket path. */
int remote_parse_v2(const char *address, int is_unix_socket, remote_addr *out);
/* dcgmConnect_v3's URI: tcp://, unix://, vsock://, or no scheme (TCP). */
int remote_parse_v3(const char *uri, remote_addr *out);
/* Connects, retrying every 50 ms until timeout_ms (0 = 5000), then greets
 * and, when asked, tells the hostengine to keep what this connection creates.
 * DCGM_ST_CONNECTION_NOT_VALID when nothing suitable answers. */
int remote_open(const remote_addr *addr, unsigned int timeout_ms, int persist,
                remote_conn **out);
/* Wakes a request in flight (it fails with CONNECTION_NOT_VALID) and fails
 * every later one; safe to call while another thread uses conn. */
void remote_interrupt(remote_conn *conn);
void remote_close(remote_conn *conn);

/* ---- requests: the engine's interface, served by the hostengine ----------- */

int remote_gpu_ids(remote_conn *c, int only_supported, unsigned int *ids, int *count);
int remote_gpu_status(remote_conn *c, unsigned int gpu, DcgmEntityStatus_t *status);
int remote_entity_group_entities(remote_conn *c, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t *entities, int *count, unsigned int flags);
int remote_create_fake_entities(remote_conn *c, dcgmCreateFakeEntities_v2 *request);
int remote_mig_hierarchy(remote_conn *c, dcgmMigHierarchy_v2 *hierarchy);
int remote_device_attributes(remote_conn *c, unsigned int gpu, dcgmDeviceAttributes_v3 *attr);

int remote_group_create(remote_conn *c, dcgmGroupType_t type, const char *name,
                        dcgmGpuGrp_t *id);
int remote_group_add_entity(remote_conn *c, dcgmGpuGrp_t id, dcgm_field_entity_group_t group,
                            dcgm_field_eid_t entity);
int remote_group_remove_entity(remote_conn *c, dcgmGpuGrp_t id,
                               dcgm_field_entity_group_t group, dcgm_field_eid_t entity);
int remote_group_destroy(remote_conn *c, dcgmGpuGrp_t id);
int remote_group_get_info(remote_conn *c, dcgmGpuGrp_t id, dcgmGroupInfo_v3 *info);
int remote_group_get_all_ids(remote_conn *c, engine_group_ids *out);
int remote_nvlink_status(remote_conn *c, dcgmNvLinkStatus_v5 *status);
int remote_nvlink_set_state(remote_conn *c, const dcgmSetNvLinkLinkState_v1 *request);
int remote_cache_field_info(remote_conn *c, dcgmCacheManagerFieldInfo_v4_t *info);
int remote_chip_arch(remote_conn *c, unsigned int gpu, unsigned int *arch);
int remote_device_topology(remote_conn *c, unsigned int gpu, dcgmDeviceTopology_v2 *out);
int remote_group_topology(remote_conn *c, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out);
int remote_select_gpus(remote_conn *c, uint64_t input, unsigned int num_gpus, uint64_t hints,
                       uint64_t *output);
int remote_nvlink_p2p(remote_conn *c, dcgmNvLinkP2PStatus_v1 *status);
int remote_env_var_info(remote_conn *c, dcgmEnvVarInfo_t *info);
int remote_field_summary(remote_conn *c, dcgmFieldSummaryRequest_v1 *request);
int remote_cpu_hierarchy(remote_conn *c, dcgmCpuHierarchy_v2 *hierarchy);

int remote_field_group_create(remote_conn *c, int count, const unsigned short *field_ids,
                              const char *name, dcgmFieldGrp_t *id);
int remote_field_group_destroy(remote_conn *c, dcgmFieldGrp_t id);
int remote_field_group_get_info(remote_conn *c, dcgmFieldGroupInfo_v1 *info);
int remote_field_group_get_all(remote_conn *c, dcgmAllFieldGroup_v1 *all);

int remote_watch_fields(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long update_freq_us, double max_keep_age_s, int max_keep_samples);
int remote_unwatch_fields(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group);
int remote_watch_field_value(remote_conn *c, dcgm_field_entity_group_t group,
                             dcgm_field_eid_t entity, unsigned short field_id,
                             long long update_freq_us, double max_keep_age_s,
                             int max_keep_samples);
int remote_unwatch_field_value(remote_conn *c, dcgm_field_entity_group_t group,
                               dcgm_field_eid_t entity, unsigned short field_id,
                               int clear_cache);
int remote_update_all_fields(remote_conn *c, int wait);
int remote_inject(remote_conn *c, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                  const dcgmFieldValue_v1 *value);
int remote_empty_cache(remote_conn *c);

/* Records are received whole, then replayed to emit on the caller's thread
 * with no lock held, so emit may call back into the library. */
int remote_latest_values(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                         int gpu_only, engine_emit_fn emit, void *ctx);
int remote_values_since(remote_conn *c, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                        long long since, long long *next_since, int gpu_only,
                        engine_emit_fn emit, void *ctx);
int remote_entity_latest(remote_conn *c, dcgm_field_entity_group_t group,
                         dcgm_field_eid_t entity, const unsigned short *fields,
                         unsigned int count, dcgmFieldValue_v1 *values);
int remote_entities_latest(remote_conn *c, const dcgmGroupEntityPair_t *entities,
                           unsigned int entity_count, const unsigned short *fields,
                           unsigned int field_count, unsigned int flags,
                           dcgmFieldValue_v2 *values);
int remote_multiple_values(remote_conn *c, unsigned int gpu, unsigned short field_id,
                           int *count, long long start_ts, long long end_ts,
                           dcgmOrder_t order, dcgmFieldValue_v1 *values);

int remote_health_set(remote_conn *c, dcgmGpuGrp_t group, unsigned int systems,
                      long long update_interval_us, double max_keep_age_s);
int remote_health_get(remote_conn *c, dcgmGpuGrp_t group, unsigned int *systems);
int remote_health_check(remote_conn *c, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out);
int remote_prof_metric_groups(remote_conn *c, dcgmProfGetMetricGroups_v3 *groups);
int remote_version_info(remote_conn *c, dcgmVersionInfo_t *info);
int remote_hostengine_health(remote_conn *c, dcgmHostengineHealth_t *health);
/* dcgmConfigSet / Get / Enforce (op is one of the WIRE_OP_CONFIG_* ops); the
 * answer's counts are bounded before they are returned. */
int remote_config_call(remote_conn *c, wire_op op, dcgmGpuGrp_t group, engine_config_msg *msg);
/* The policy manager (remote_policy.c).  Violations are not pushed: the
 * client's policy dispatcher takes them with POLICY_TAKE, which never waits. */
#define REMOTE_POLICY_TAKE_MAX 64u
int remote_policy_set(remote_conn *c, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy);
int remote_policy_get(remote_conn *c, dcgmGpuGrp_t group, dcgmPolicy_v1 *out,
                      unsigned int *count);
int remote_policy_register(remote_conn *c, dcgmGpuGrp_t group, unsigned int conditions,
                           uint32_t cookie);
int remote_policy_unregister(remote_conn *c, dcgmGpuGrp_t group);
int remote_policy_take(remote_conn *c, engine_policy_note *out, unsigned int capacity,
                       unsigned int *count);
/* engine administration (engine_admin.c on the hostengine) */
int remote_module_statuses(remote_conn *c, void *statuses);
int remote_module_denylist(remote_conn *c, unsigned int module);
int remote_pause_resume(remote_conn *c, int pause);
int remote_driver_attach(remote_conn *c, int attach);
int remote_introspect(remote_conn *c, int cpu, int wait, engine_introspect *out);
int remote_diag_precheck(remote_conn *c, dcgmGpuGrp_t group);
int remote_set_logging_severity(remote_conn *c, int logger, int severity);

/* When the hostengine's node started (t_rel 0), us since the Unix epoch. */
int remote_start_time(remote_conn *c, long long *start_us);

#endif /* DCGM_SIM_REMOTE_H */
