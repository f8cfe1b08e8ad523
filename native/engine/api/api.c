/*
 * api.c -- the exported DCGM C ABI of the simulated libdcgm.so.4.
 *
 * Process-level state (initialised or not, the embedded engine, remote
 * connections) lives here behind one mutex.  Every call resolves its handle
 * to a backend: the embedded engine (handle 0x7fffffff) or a remote
 * connection (small ids from 1), and runs through that backend's table of
 * operations (backend.h).  A backend is reference counted while a call uses
 * it, so dcgmStopEmbedded or dcgmDisconnect racing a call, or a callback
 * calling back in, never frees what is in use; the last user of a retired
 * backend frees it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "../backends/backend.h"
#include "../engine.h"
#include "policy_dispatch.h"
#include "../remote/remote.h"
#include "../../node/node.h"
#include "../sources/source.h"

#define SCENARIO_ENV "DCGM_SIM_SCENARIO"
/* DcgmModuleIdCount: the module ids a request may name are below it */
#define ENGINE_MODULE_COUNT_PUBLIC 11u

typedef struct api_backend {
    dcgmHandle_t handle;
    const backend_ops *ops;      /* embedded_backend_ops or remote_backend_ops */
    void *impl;                  /* their self: a sim_engine or a remote_conn */
    unsigned int refs;
    int retired;
    policy_dispatch *policy;     /* dcgmPolicyRegister_v2's callbacks; NULL until the first */
} api_backend;

static struct {
    pthread_mutex_t lock;
    int initialized;
    api_backend *embedded;
    api_backend **remotes;
    size_t n_remotes, cap_remotes;
    dcgmHandle_t next_remote_id;
    char last_start_error[512];  /* the last reason an embedded start failed, printed once */
} api = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL, 0, 0, 1, "" };

static void backend_free(api_backend *b)
{
    /* the dispatcher's thread uses the backend: it stops first */
    policy_dispatch_free(b->policy);
    b->ops->destroy(b->impl);
    free(b);
}

/* Called with api.lock held; returns the backend if the caller must free it. */
static api_backend *retire_locked(api_backend *b)
{
    b->retired = 1;
    /* a request in flight on another thread fails now instead of waiting
     * out its timeout */
    b->ops->interrupt(b->impl);
    return b->refs == 0 ? b : NULL;
}

static int remote_index_locked(dcgmHandle_t handle)
{
    for (size_t i = 0; i < api.n_remotes; i++)
        if (api.remotes[i]->handle == handle)
            return (int)i;
    return -1;
}

static dcgmReturn_t api_enter(dcgmHandle_t handle, api_backend **out)
{
    /* ctypes callers may pass the handle as a C int */
    dcgmHandle_t h = handle & 0xffffffffu;
    if (h == 0)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&api.lock);
    dcgmReturn_t rc = DCGM_ST_OK;
    api_backend *b = NULL;
    if (h == DCGM_EMBEDDED_HANDLE) {
        b = api.embedded;
        if (!b)
            rc = DCGM_ST_UNINITIALIZED;
    } else {
        int at = remote_index_locked(h);
        if (at < 0)
            rc = DCGM_ST_CONNECTION_NOT_VALID;
        else
            b = api.remotes[at];
    }
    if (b)
        b->refs++;
    pthread_mutex_unlock(&api.lock);
    *out = b;
    return rc;
}

static void api_leave(api_backend *b)
{
    pthread_mutex_lock(&api.lock);
    int last = --b->refs == 0 && b->retired;
    pthread_mutex_unlock(&api.lock);
    if (last)
        backend_free(b);
}

/*
 * The body of every exported call: resolve the handle to its backend (held
 * while the call runs), call the backend's operation, release it.  (GNU ##__VA_ARGS__
 * drops the comma of an operation that takes nothing but the backend.)
 */
#define API_CALL(handle, op, ...)                                             \
    do {                                                                      \
        api_backend *backend_;                                                \
        dcgmReturn_t rc_ = api_enter((handle), &backend_);                    \
        if (rc_ != DCGM_ST_OK)                                                \
            return rc_;                                                       \
        rc_ = (dcgmReturn_t)backend_->ops->op(backend_->impl, ##__VA_ARGS__); \
        api_leave(backend_);                                                  \
        return rc_;                                                           \
    } while (0)

unsigned int api_version_of(const void *request)
{
    unsigned int v;
    memcpy(&v, request, sizeof v);
    return v;
}

dcgmReturn_t api_check_version(const void *request, unsigned int want)
{
    if (!request)
        return DCGM_ST_BADPARAM;
    return api_version_of(request) == want ? DCGM_ST_OK : DCGM_ST_VER_MISMATCH;
}

int api_with_backend(dcgmHandle_t handle,
                     int (*fn)(const backend_ops *ops, void *impl, void *ctx), void *ctx)
{
    api_backend *b;
    dcgmReturn_t rc = api_enter(handle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    rc = (dcgmReturn_t)fn(b->ops, b->impl, ctx);
    api_leave(b);
    return rc;
}

/* ---- init, embedded engine ----------------------------------------------- */

dcgmReturn_t dcgmInit(void)
{
    pthread_mutex_lock(&api.lock);
    api.initialized = 1;
    pthread_mutex_unlock(&api.lock);
    DcgmFieldsInit();
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmShutdown(void)
{
    pthread_mutex_lock(&api.lock);
    api_backend **doomed = calloc(api.n_remotes + 1, sizeof *doomed);
    size_t n_doomed = 0;
    if (api.embedded) {
        api_backend *b = retire_locked(api.embedded);
        if (b && doomed)
            doomed[n_doomed++] = b;
        api.embedded = NULL;
    }
    for (size_t i = 0; i < api.n_remotes; i++) {
        api_backend *b = retire_locked(api.remotes[i]);
        if (b && doomed)
            doomed[n_doomed++] = b;
    }
    free(api.remotes);
    api.remotes = NULL;
    api.n_remotes = api.cap_remotes = 0;
    api.initialized = 0;
    pthread_mutex_unlock(&api.lock);
    for (size_t i = 0; i < n_doomed; i++)
        backend_free(doomed[i]);
    free(doomed);
    return DCGM_ST_OK;
}

/* What dcgmStartEmbedded_v2 asks beyond the mode: where to log, and the
 * modules to put on the denylist before anything can load them. */
typedef struct embedded_options {
    const char *log_file;
    DcgmLoggingSeverity_t severity;
    unsigned int deny_count;
    const unsigned int *deny;
} embedded_options;

static dcgmReturn_t start_embedded(dcgmOperationMode_t mode, dcgmHandle_t *handle,
                                   const embedded_options *opt)
{
    if (!handle || (mode != DCGM_OPERATION_MODE_AUTO && mode != DCGM_OPERATION_MODE_MANUAL))
        return DCGM_ST_BADPARAM;
    /* DCGM: a module id past the last is refused (ApplyModuleDenylist) */
    for (unsigned int i = 0; opt && i < opt->deny_count; i++)
        if (opt->deny[i] >= ENGINE_MODULE_COUNT_PUBLIC)
            return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&api.lock);
    dcgmReturn_t rc = DCGM_ST_OK;
    if (api.initialized)
        /* DCGM sets up its logger on every start (StartEmbeddedV2) */
        engine_log_configure(opt ? opt->log_file : NULL,
                             opt ? opt->severity : DcgmLoggingSeverityUnspecified);
    if (!api.initialized) {
        rc = DCGM_ST_UNINITIALIZED;
    } else if (api.embedded) {
        /* DCGM answers OK but leaves the handle zero on a second start */
        *handle = 0;
    } else {
        char err[512];
        sim_engine *engine = NULL;
        api_backend *b = calloc(1, sizeof *b);
        rc = b ? (dcgmReturn_t)engine_create_source(getenv(VALUE_SOURCE_ENV), getenv(SCENARIO_ENV),
                                                    mode, &engine, err, sizeof err)
               : DCGM_ST_MEMORY;
        if (rc == DCGM_ST_OK) {
            /* the core module is never denylisted; DCGM skips it quietly */
            for (unsigned int i = 0; opt && i < opt->deny_count; i++)
                if (opt->deny[i] != 0)
                    engine_module_denylist(engine, opt->deny[i]);
            b->handle = DCGM_EMBEDDED_HANDLE;
            b->ops = &embedded_backend_ops;
            b->impl = engine;
            api.embedded = b;
            *handle = DCGM_EMBEDDED_HANDLE;
        } else {
            /* a caller retrying (NVML not ready yet) sees each new reason once */
            if (b && err[0] && strcmp(err, api.last_start_error) != 0)
                fprintf(stderr, "libdcgm (engine): %s\n", err);
            if (b)
                snprintf(api.last_start_error, sizeof api.last_start_error, "%s", err);
            free(b);
        }
    }
    pthread_mutex_unlock(&api.lock);
    return rc;
}

dcgmReturn_t dcgmStartEmbedded(dcgmOperationMode_t opMode, dcgmHandle_t *pDcgmHandle)
{
    return start_embedded(opMode, pDcgmHandle, NULL);
}

dcgmReturn_t dcgmStartEmbedded_v2(dcgmStartEmbeddedV2Params_v1 *params)
{
    if (!params)
        return DCGM_ST_BADPARAM;
    /* the three versions share the layout up to dcgmHandle */
    if (params->version != dcgmStartEmbeddedV2Params_version1 &&
        params->version != dcgmStartEmbeddedV2Params_version2 &&
        params->version != dcgmStartEmbeddedV2Params_version3)
        return DCGM_ST_VER_MISMATCH;
    embedded_options opt = { params->logFile, params->severity, 0, NULL };
    if (params->version == dcgmStartEmbeddedV2Params_version3) {
        const dcgmStartEmbeddedV2Params_v3 *v3 = (const dcgmStartEmbeddedV2Params_v3 *)params;
        opt.deny = v3->denyList;
        opt.deny_count = v3->denyListCount < 16 ? v3->denyListCount : 16;
    } else if (params->version == dcgmStartEmbeddedV2Params_version2) {
        const dcgmStartEmbeddedV2Params_v2 *v2 = (const dcgmStartEmbeddedV2Params_v2 *)params;
        opt.deny = v2->denyList;
        opt.deny_count = v2->denyListCount < 10 ? v2->denyListCount : 10;
    } else {
        opt.deny = params->denyList;
        opt.deny_count = params->denyListCount < 10 ? params->denyListCount : 10;
    }
    return start_embedded(params->opMode, &params->dcgmHandle, &opt);
}

dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t pDcgmHandle)
{
    pthread_mutex_lock(&api.lock);
    dcgmReturn_t rc = DCGM_ST_OK;
    api_backend *doomed = NULL;
    if (!api.initialized)
        rc = DCGM_ST_UNINITIALIZED;
    else if ((pDcgmHandle & 0xffffffffu) != DCGM_EMBEDDED_HANDLE)
        rc = DCGM_ST_BADPARAM;
    else if (api.embedded) {
        doomed = retire_locked(api.embedded);
        api.embedded = NULL;
    }
    pthread_mutex_unlock(&api.lock);
    if (doomed)
        backend_free(doomed);
    return rc;
}

/* ---- remote connections -------------------------------------------------- */

static dcgmReturn_t register_remote(remote_conn *conn, dcgmHandle_t *handle)
{
    pthread_mutex_lock(&api.lock);
    dcgmReturn_t rc = DCGM_ST_OK;
    api_backend *b = NULL;
    if (!api.initialized) {
        rc = DCGM_ST_UNINITIALIZED; /* shut down while we were connecting */
    } else if (api.n_remotes == api.cap_remotes) {
        size_t cap = api.cap_remotes ? api.cap_remotes * 2 : 8;
        api_backend **grown = realloc(api.remotes, cap * sizeof *grown);
        if (grown) {
            api.remotes = grown;
            api.cap_remotes = cap;
        } else {
            rc = DCGM_ST_MEMORY;
        }
    }
    if (rc == DCGM_ST_OK && !(b = calloc(1, sizeof *b)))
        rc = DCGM_ST_MEMORY;
    if (rc == DCGM_ST_OK) {
        if (api.next_remote_id == DCGM_EMBEDDED_HANDLE || api.next_remote_id > 0xffffffffu)
            api.next_remote_id = 1;
        b->handle = api.next_remote_id++;
        b->ops = &remote_backend_ops;
        b->impl = conn;
        api.remotes[api.n_remotes++] = b;
        *handle = b->handle;
    }
    pthread_mutex_unlock(&api.lock);
    if (rc != DCGM_ST_OK)
        remote_close(conn);
    return rc;
}

static int is_initialized(void)
{
    pthread_mutex_lock(&api.lock);
    int yes = api.initialized;
    pthread_mutex_unlock(&api.lock);
    return yes;
}

static dcgmReturn_t connect_parsed(const remote_addr *addr, unsigned int timeout_ms,
                                   unsigned int persist, dcgmHandle_t *handle)
{
    remote_conn *conn = NULL;
    /* outside the lock: connecting may take the whole timeout */
    dcgmReturn_t rc = (dcgmReturn_t)remote_open(addr, timeout_ms, persist != 0, &conn);
    return rc == DCGM_ST_OK ? register_remote(conn, handle) : rc;
}

dcgmReturn_t dcgmConnect_v2(const char *ipAddress, dcgmConnectV2Params_t *connectParams,
                            dcgmHandle_t *pDcgmHandle)
{
    if (!ipAddress || !connectParams || !pDcgmHandle)
        return DCGM_ST_BADPARAM;
    if (!is_initialized())
        return DCGM_ST_UNINITIALIZED;
    unsigned int timeout_ms = 0, is_unix = 0;
    unsigned int persist = connectParams->persistAfterDisconnect;
    if (connectParams->version == dcgmConnectV2Params_version2) {
        timeout_ms = connectParams->timeoutMs;
        is_unix = connectParams->addressIsUnixSocket;
    } else if (connectParams->version != dcgmConnectV2Params_version1) {
        return DCGM_ST_VER_MISMATCH;
    }
    remote_addr addr;
    if (remote_parse_v2(ipAddress, is_unix != 0, &addr) != DCGM_ST_OK)
        return DCGM_ST_BADPARAM;
    return connect_parsed(&addr, timeout_ms, persist, pDcgmHandle);
}

dcgmReturn_t dcgmConnect(const char *ipAddress, dcgmHandle_t *pDcgmHandle)
{
    dcgmConnectV2Params_t params = { dcgmConnectV2Params_version2, 0, 0, 0 };
    return dcgmConnect_v2(ipAddress, &params, pDcgmHandle);
}

dcgmReturn_t dcgmConnect_v3(const char *connectionString, dcgmConnectV3Params_t *connectParams,
                            dcgmHandle_t *pDcgmHandle)
{
    if (!connectionString || !connectParams || !pDcgmHandle)
        return DCGM_ST_BADPARAM;
    if (!is_initialized())
        return DCGM_ST_UNINITIALIZED;
    if (connectParams->version != dcgmConnectV3Params_version1)
        return DCGM_ST_VER_MISMATCH;
    remote_addr addr;
    if (remote_parse_v3(connectionString, &addr) != DCGM_ST_OK)
        return DCGM_ST_BADPARAM;
    return connect_parsed(&addr, connectParams->timeoutMs, connectParams->persistAfterDisconnect,
                          pDcgmHandle);
}

dcgmReturn_t dcgmDisconnect(dcgmHandle_t pDcgmHandle)
{
    pthread_mutex_lock(&api.lock);
    api_backend *doomed = NULL;
    int at = remote_index_locked(pDcgmHandle & 0xffffffffu);
    if (at >= 0) {
        doomed = retire_locked(api.remotes[at]);
        api.remotes[at] = api.remotes[--api.n_remotes];
    }
    pthread_mutex_unlock(&api.lock);
    if (doomed)
        backend_free(doomed);
    return DCGM_ST_OK;
}

/* ---- devices and entities ------------------------------------------------ */

dcgmReturn_t dcgmGetAllDevices(dcgmHandle_t pDcgmHandle, unsigned int *gpuIdList, int *count)
{
    API_CALL(pDcgmHandle, gpu_ids, 0, gpuIdList, count);
}

dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t pDcgmHandle, unsigned int *gpuIdList,
                                        int *count)
{
    API_CALL(pDcgmHandle, gpu_ids, 1, gpuIdList, count);
}

dcgmReturn_t dcgmGetDeviceAttributes(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                                     dcgmDeviceAttributes_t *pDcgmAttr)
{
    API_CALL(pDcgmHandle, device_attributes, gpuId, pDcgmAttr);
}

dcgmReturn_t dcgmGetGpuStatus(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                              DcgmEntityStatus_t *status)
{
    API_CALL(pDcgmHandle, gpu_status, gpuId, status);
}

dcgmReturn_t dcgmGetEntityGroupEntities(dcgmHandle_t dcgmHandle,
                                        dcgm_field_entity_group_t entityGroup,
                                        dcgm_field_eid_t *entities, int *numEntities,
                                        unsigned int flags)
{
    API_CALL(dcgmHandle, entity_group_entities, entityGroup, entities, numEntities, flags);
}

dcgmReturn_t dcgmCreateFakeEntities(dcgmHandle_t pDcgmHandle,
                                    dcgmCreateFakeEntities_t *createFakeEntities)
{
    API_CALL(pDcgmHandle, create_fake_entities, createFakeEntities);
}

dcgmReturn_t dcgmGetGpuInstanceHierarchy(dcgmHandle_t dcgmHandle, dcgmMigHierarchy_v2 *hierarchy)
{
    API_CALL(dcgmHandle, mig_hierarchy, hierarchy);
}

/* ---- CPUs ------------------------------------------------------------------ */

dcgmReturn_t dcgmGetCpuHierarchy_v2(dcgmHandle_t dcgmHandle, dcgmCpuHierarchy_v2 *cpuHierarchy)
{
    dcgmReturn_t checked = api_check_version(cpuHierarchy, dcgmCpuHierarchy_version2);
    if (checked != DCGM_ST_OK)
        return checked;
    API_CALL(dcgmHandle, cpu_hierarchy, cpuHierarchy);
}

/* v1: the v2 record without the serial numbers (DCGM: DcgmApi.cpp,
 * helperFillCpuHierarchyV1) */
dcgmReturn_t dcgmGetCpuHierarchy(dcgmHandle_t dcgmHandle, dcgmCpuHierarchy_v1 *cpuHierarchy)
{
    dcgmReturn_t checked = api_check_version(cpuHierarchy, dcgmCpuHierarchy_version1);
    if (checked != DCGM_ST_OK)
        return checked;
    dcgmCpuHierarchy_v2 *full = calloc(1, sizeof *full);
    if (!full)
        return DCGM_ST_MEMORY;
    full->version = dcgmCpuHierarchy_version2;
    dcgmReturn_t rc = dcgmGetCpuHierarchy_v2(dcgmHandle, full);
    if (rc == DCGM_ST_OK) {
        unsigned int n = full->numCpus < DCGM_MAX_NUM_CPUS ? full->numCpus : DCGM_MAX_NUM_CPUS;
        cpuHierarchy->numCpus = n;
        for (unsigned int i = 0; i < n; i++) {
            cpuHierarchy->cpus[i].cpuId = full->cpus[i].cpuId;
            cpuHierarchy->cpus[i].ownedCores = full->cpus[i].ownedCores;
        }
    }
    free(full);
    return rc;
}

unsigned int dcgmCpuHierarchyCpuOwnsCore(unsigned int coreId,
                                         const dcgmCpuHierarchyOwnedCores_v1 *ownedCores)
{
    if (!ownedCores || coreId >= DCGM_MAX_NUM_CPU_CORES)
        return 0;
    return (ownedCores->bitmask[coreId / 64] >> (coreId % 64)) & 1u;
}

/* ---- groups -------------------------------------------------------------- */

dcgmReturn_t dcgmGroupCreate(dcgmHandle_t pDcgmHandle, dcgmGroupType_t type,
                             const char *groupName, dcgmGpuGrp_t *pDcgmGrpId)
{
    API_CALL(pDcgmHandle, group_create, type, groupName, pDcgmGrpId);
}

dcgmReturn_t dcgmGroupAddEntity(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                dcgm_field_entity_group_t entityGroupId,
                                dcgm_field_eid_t entityId)
{
    API_CALL(pDcgmHandle, group_add_entity, groupId, entityGroupId, entityId);
}

dcgmReturn_t dcgmGroupAddDevice(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                unsigned int gpuId)
{
    API_CALL(pDcgmHandle, group_add_entity, groupId, DCGM_FE_GPU, gpuId);
}

dcgmReturn_t dcgmGroupRemoveEntity(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                   dcgm_field_entity_group_t entityGroupId,
                                   dcgm_field_eid_t entityId)
{
    API_CALL(pDcgmHandle, group_remove_entity, groupId, entityGroupId, entityId);
}

dcgmReturn_t dcgmGroupRemoveDevice(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                   unsigned int gpuId)
{
    API_CALL(pDcgmHandle, group_remove_entity, groupId, DCGM_FE_GPU, gpuId);
}

/* Every group's id, ascending, DCGM's own two included (DcgmGroupManager::GetAllGroupIds).
 * groupIdList holds DCGM_MAX_NUM_GROUPS entries, as DCGM's callers size it. */
dcgmReturn_t dcgmGroupGetAllIds(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupIdList[],
                                unsigned int *count)
{
    if (!groupIdList || !count)
        return DCGM_ST_BADPARAM;
    api_backend *b;
    dcgmReturn_t rc = api_enter(pDcgmHandle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    engine_group_ids ids;
    rc = (dcgmReturn_t)b->ops->group_get_all_ids(b->impl, &ids);
    api_leave(b);
    if (rc == DCGM_ST_OK) {
        for (unsigned int i = 0; i < ids.count && i < DCGM_MAX_NUM_GROUPS; i++)
            groupIdList[i] = (dcgmGpuGrp_t)ids.ids[i];
        *count = ids.count;
    }
    return rc;
}

dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId)
{
    API_CALL(pDcgmHandle, group_destroy, groupId);
}

dcgmReturn_t dcgmGroupGetInfo(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                              dcgmGroupInfo_t *pDcgmGroupInfo)
{
    API_CALL(pDcgmHandle, group_get_info, groupId, pDcgmGroupInfo);
}

/* ---- field groups -------------------------------------------------------- */

dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t dcgmHandle, int numFieldIds,
                                  const unsigned short *fieldIds, const char *fieldGroupName,
                                  dcgmFieldGrp_t *dcgmFieldGroupId)
{
    API_CALL(dcgmHandle, field_group_create,
             numFieldIds, fieldIds, fieldGroupName, dcgmFieldGroupId);
}

dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t dcgmHandle, dcgmFieldGrp_t dcgmFieldGroupId)
{
    API_CALL(dcgmHandle, field_group_destroy, dcgmFieldGroupId);
}

dcgmReturn_t dcgmFieldGroupGetInfo(dcgmHandle_t dcgmHandle, dcgmFieldGroupInfo_t *fieldGroupInfo)
{
    API_CALL(dcgmHandle, field_group_get_info, fieldGroupInfo);
}

dcgmReturn_t dcgmFieldGroupGetAll(dcgmHandle_t dcgmHandle, dcgmAllFieldGroup_t *allGroupInfo)
{
    API_CALL(dcgmHandle, field_group_get_all, allGroupInfo);
}

/* ---- watches ------------------------------------------------------------- */

dcgmReturn_t dcgmWatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                             dcgmFieldGrp_t fieldGroupId, long long updateFreq,
                             double maxKeepAge, int maxKeepSamples)
{
    API_CALL(pDcgmHandle, watch_fields,
             groupId, fieldGroupId, updateFreq, maxKeepAge, maxKeepSamples);
}

dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                               dcgmFieldGrp_t fieldGroupId)
{
    API_CALL(pDcgmHandle, unwatch_fields, groupId, fieldGroupId);
}

dcgmReturn_t dcgmWatchFieldValue(dcgmHandle_t pDcgmHandle, int gpuId, unsigned short fieldId,
                                 long long updateFreq, double maxKeepAge, int maxKeepSamples)
{
    if (gpuId < 0)
        return DCGM_ST_BADPARAM;
    API_CALL(pDcgmHandle, watch_field_value,
             DCGM_FE_GPU, (dcgm_field_eid_t)gpuId, fieldId, updateFreq, maxKeepAge, maxKeepSamples);
}

dcgmReturn_t dcgmUnwatchFieldValue(dcgmHandle_t pDcgmHandle, int gpuId, unsigned short fieldId,
                                   int clearCache)
{
    if (gpuId < 0)
        return DCGM_ST_BADPARAM;
    API_CALL(pDcgmHandle, unwatch_field_value,
             DCGM_FE_GPU, (dcgm_field_eid_t)gpuId, fieldId, clearCache);
}

dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t pDcgmHandle, int waitForUpdate)
{
    API_CALL(pDcgmHandle, update_all_fields, waitForUpdate);
}

dcgmReturn_t dcgmInjectFieldValue(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                                  dcgmInjectFieldValue_t *dcgmInjectFieldValue)
{
    API_CALL(pDcgmHandle, inject, DCGM_FE_GPU, gpuId, dcgmInjectFieldValue);
}

dcgmReturn_t dcgmInjectEntityFieldValue(dcgmHandle_t pDcgmHandle,
                                        dcgm_field_entity_group_t entityGroupId,
                                        dcgm_field_eid_t entityId,
                                        dcgmInjectFieldValue_t *pDcgmInjectFieldValue)
{
    API_CALL(pDcgmHandle, inject, entityGroupId, entityId, pDcgmInjectFieldValue);
}

dcgmReturn_t dcgmEmptyCache(dcgmHandle_t pDcgmHandle)
{
    API_CALL(pDcgmHandle, empty_cache);
}

/* ---- reads --------------------------------------------------------------- */

typedef struct entity_cb_ctx {
    dcgmFieldValueEntityEnumeration_f cb;
    void *user;
} entity_cb_ctx;

typedef struct gpu_cb_ctx {
    dcgmFieldValueEnumeration_f cb;
    void *user;
} gpu_cb_ctx;

/* DCGM hands records to callbacks one at a time */
static int emit_entity(void *ctx, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                       dcgmFieldValue_v1 *value)
{
    const entity_cb_ctx *c = ctx;
    return c->cb(group, entity, value, 1, c->user);
}

static int emit_gpu(void *ctx, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                    dcgmFieldValue_v1 *value)
{
    (void)group;
    const gpu_cb_ctx *c = ctx;
    return c->cb(entity, value, 1, c->user);
}

dcgmReturn_t dcgmGetLatestValues_v2(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                    dcgmFieldGrp_t fieldGroupId,
                                    dcgmFieldValueEntityEnumeration_f enumCB, void *userData)
{
    if (!enumCB)
        return DCGM_ST_BADPARAM;
    entity_cb_ctx ctx = { enumCB, userData };
    API_CALL(pDcgmHandle, latest_values, groupId, fieldGroupId, 0, emit_entity, &ctx);
}

dcgmReturn_t dcgmGetLatestValues(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                 dcgmFieldGrp_t fieldGroupId, dcgmFieldValueEnumeration_f enumCB,
                                 void *userData)
{
    if (!enumCB)
        return DCGM_ST_BADPARAM;
    gpu_cb_ctx ctx = { enumCB, userData };
    API_CALL(pDcgmHandle, latest_values, groupId, fieldGroupId, 1, emit_gpu, &ctx);
}

dcgmReturn_t dcgmEntityGetLatestValues(dcgmHandle_t pDcgmHandle,
                                       dcgm_field_entity_group_t entityGroup, int entityId,
                                       unsigned short *fields, unsigned int count,
                                       dcgmFieldValue_v1 *values)
{
    if (entityId < 0)
        return DCGM_ST_BADPARAM;
    API_CALL(pDcgmHandle, entity_latest,
             entityGroup, (dcgm_field_eid_t)entityId, fields, count, values);
}

dcgmReturn_t dcgmGetLatestValuesForFields(dcgmHandle_t pDcgmHandle, int gpuId,
                                          unsigned short *fields, unsigned int count,
                                          dcgmFieldValue_v1 *values)
{
    if (gpuId < 0)
        return DCGM_ST_BADPARAM;
    API_CALL(pDcgmHandle, entity_latest,
             DCGM_FE_GPU, (dcgm_field_eid_t)gpuId, fields, count, values);
}

dcgmReturn_t dcgmEntitiesGetLatestValues(dcgmHandle_t pDcgmHandle,
                                         dcgmGroupEntityPair_t *entities,
                                         unsigned int entityCount, unsigned short *fields,
                                         unsigned int fieldCount, unsigned int flags,
                                         dcgmFieldValue_v2 *values)
{
    API_CALL(pDcgmHandle, entities_latest,
             entities, entityCount, fields, fieldCount, flags, values);
}

dcgmReturn_t dcgmGetValuesSince_v2(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                   dcgmFieldGrp_t fieldGroupId, long long sinceTimestamp,
                                   long long *nextSinceTimestamp,
                                   dcgmFieldValueEntityEnumeration_f enumCB, void *userData)
{
    if (!enumCB || !nextSinceTimestamp)
        return DCGM_ST_BADPARAM;
    *nextSinceTimestamp = sinceTimestamp;
    entity_cb_ctx ctx = { enumCB, userData };
    API_CALL(pDcgmHandle, values_since,
             groupId, fieldGroupId, sinceTimestamp, nextSinceTimestamp, 0, emit_entity, &ctx);
}

dcgmReturn_t dcgmGetValuesSince(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                dcgmFieldGrp_t fieldGroupId, long long sinceTimestamp,
                                long long *nextSinceTimestamp,
                                dcgmFieldValueEnumeration_f enumCB, void *userData)
{
    if (!enumCB || !nextSinceTimestamp)
        return DCGM_ST_BADPARAM;
    *nextSinceTimestamp = sinceTimestamp;
    gpu_cb_ctx ctx = { enumCB, userData };
    API_CALL(pDcgmHandle, values_since,
             groupId, fieldGroupId, sinceTimestamp, nextSinceTimestamp, 1, emit_gpu, &ctx);
}

dcgmReturn_t dcgmGetMultipleValuesForField(dcgmHandle_t pDcgmHandle, int gpuId,
                                           unsigned short fieldId, int *count, long long startTs,
                                           long long endTs, dcgmOrder_t order,
                                           dcgmFieldValue_v1 *values)
{
    if (gpuId < 0)
        return DCGM_ST_BADPARAM;
    API_CALL(pDcgmHandle, multiple_values,
             (unsigned int)gpuId, fieldId, count, startTs, endTs, order, values);
}

/* ---- health and profiling ------------------------------------------------ */

/* dcgmHealthSet watches every 30 s and keeps 10 minutes, as DCGM's
 * tsapiEngineHealthSet (dcgmlib/src/DcgmApi.cpp) */
dcgmReturn_t dcgmHealthSet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                           dcgmHealthSystems_t systems)
{
    API_CALL(pDcgmHandle, health_set, groupId, (unsigned int)systems, 30000000LL, 600.0);
}

dcgmReturn_t dcgmHealthSet_v2(dcgmHandle_t pDcgmHandle, dcgmHealthSetParams_v2 *params)
{
    dcgmReturn_t checked = api_check_version(params, dcgmHealthSetParams_version2);
    if (checked != DCGM_ST_OK)
        return checked;
    API_CALL(pDcgmHandle, health_set, params->groupId, (unsigned int)params->systems,
             params->updateInterval, params->maxKeepAge);
}

dcgmReturn_t dcgmHealthGet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                           dcgmHealthSystems_t *systems)
{
    if (!systems)
        return DCGM_ST_BADPARAM;
    api_backend *b;
    dcgmReturn_t rc = api_enter(pDcgmHandle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    unsigned int bits = 0;
    rc = (dcgmReturn_t)b->ops->health_get(b->impl, groupId, &bits);
    api_leave(b);
    if (rc == DCGM_ST_OK)
        *systems = (dcgmHealthSystems_t)bits;
    return rc;
}

dcgmReturn_t dcgmHealthCheck(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                             dcgmHealthResponse_t *results)
{
    API_CALL(pDcgmHandle, health_check, groupId, results);
}

/* ---- NvLink link states (DcgmApi.cpp: tsapiGetNvLinkLinkStatus,
 * tsapiSetEntityNvLinkLinkState; the version checks are the client's) ---- */

/* v5 is the engine's record; a v4 caller gets the first 18 links of each GPU */
dcgmReturn_t dcgmGetNvLinkLinkStatus(dcgmHandle_t dcgmHandle, dcgmNvLinkStatus_v5 *linkStatus)
{
    if (!linkStatus)
        return DCGM_ST_BADPARAM;
    if (linkStatus->version == dcgmNvLinkStatus_version5)
        API_CALL(dcgmHandle, nvlink_status, linkStatus);
    if (linkStatus->version != dcgmNvLinkStatus_version4)
        return DCGM_ST_VER_MISMATCH;
    dcgmNvLinkStatus_v5 *full = calloc(1, sizeof *full);
    if (!full)
        return DCGM_ST_MEMORY;
    full->version = dcgmNvLinkStatus_version5;
    api_backend *b;
    dcgmReturn_t rc = api_enter(dcgmHandle, &b);
    if (rc == DCGM_ST_OK) {
        rc = (dcgmReturn_t)b->ops->nvlink_status(b->impl, full);
        api_leave(b);
    }
    if (rc == DCGM_ST_OK) {
        dcgmNvLinkStatus_v4 *old = (dcgmNvLinkStatus_v4 *)linkStatus;
        old->numGpus = full->numGpus;
        for (unsigned int i = 0; i < DCGM_MAX_NUM_DEVICES; i++) {
            old->gpus[i].entityId = full->gpus[i].entityId;
            memcpy(old->gpus[i].linkState, full->gpus[i].linkState,
                   sizeof old->gpus[i].linkState);
        }
        old->numNvSwitches = full->numNvSwitches;
        memcpy(old->nvSwitches, full->nvSwitches, sizeof old->nvSwitches);
    }
    free(full);
    return rc;
}

dcgmReturn_t dcgmSetEntityNvLinkLinkState(dcgmHandle_t dcgmHandle,
                                          dcgmSetNvLinkLinkState_v1 *linkState)
{
    dcgmReturn_t checked = api_check_version(linkState, dcgmSetNvLinkLinkState_version1);
    if (checked != DCGM_ST_OK)
        return checked;
    API_CALL(dcgmHandle, nvlink_set_state, linkState);
}

/* ---- chips and topology (DcgmApi.cpp: tsapiGetGpuChipArchitecture,
 * tsapiEngineGetDeviceTopology, tsapiEngineGroupTopology,
 * helperSelectGpusByTopology, tsapiGetNvLinkP2PStatus) ---- */

dcgmReturn_t dcgmGetGpuChipArchitecture(dcgmHandle_t dcgmHandle, unsigned int gpuId,
                                        dcgmChipArchitecture_t *chipArchitecture)
{
    if (!chipArchitecture)
        return DCGM_ST_BADPARAM;
    api_backend *b;
    dcgmReturn_t rc = api_enter(dcgmHandle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    unsigned int arch = 0;
    rc = (dcgmReturn_t)b->ops->chip_arch(b->impl, gpuId, &arch);
    api_leave(b);
    /* DCGM copies the answer back before looking at the engine's status */
    *chipArchitecture = (dcgmChipArchitecture_t)arch;
    return rc;
}

/* The legacy 32-bit path keeps the PCIe part and at most 18 links'
 * worth of NvLink bit (TopologyPathToLegacy). */
static unsigned int topology_path_v1(dcgmGpuTopologyLevel_t path)
{
    uint64_t nvlink = DCGM_TOPOLOGY_PATH_NVLINK(path) >> 8;
    unsigned int links = 0;
    while (nvlink) {
        links++;
        nvlink >>= 1;
    }
    if (links > DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3)
        links = DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3;
    uint64_t v1 = DCGM_TOPOLOGY_PATH_PCI(path);
    if (links)
        v1 |= DCGM_TOPOLOGY_NVLINK1 << (links - 1);
    return (unsigned int)v1;
}

dcgmReturn_t dcgmGetDeviceTopology(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                                   dcgmDeviceTopology_t *pDcgmDeviceTopology)
{
    if (!pDcgmDeviceTopology)
        return DCGM_ST_BADPARAM;
    unsigned int version = pDcgmDeviceTopology->version;
    if (version == dcgmDeviceTopology_version2)
        API_CALL(pDcgmHandle, device_topology, gpuId, pDcgmDeviceTopology);
    if (version != dcgmDeviceTopology_version1)
        return DCGM_ST_VER_MISMATCH;
    dcgmDeviceTopology_v2 *full = calloc(1, sizeof *full);
    if (!full)
        return DCGM_ST_MEMORY;
    api_backend *b;
    dcgmReturn_t rc = api_enter(pDcgmHandle, &b);
    if (rc == DCGM_ST_OK) {
        rc = (dcgmReturn_t)b->ops->device_topology(b->impl, gpuId, full);
        api_leave(b);
        dcgmDeviceTopology_v1 *old = (dcgmDeviceTopology_v1 *)pDcgmDeviceTopology;
        memset(old, 0, sizeof *old);
        old->version = dcgmDeviceTopology_version1;
        memcpy(old->cpuAffinityMask, full->cpuAffinityMask, sizeof old->cpuAffinityMask);
        old->numGpus = full->numGpus < DCGM_MAX_NUM_DEVICES - 1 ? full->numGpus
                                                                 : DCGM_MAX_NUM_DEVICES - 1;
        for (unsigned int i = 0; i < old->numGpus; i++) {
            old->gpuPaths[i].gpuId = full->gpuPaths[i].gpuId;
            old->gpuPaths[i].path = topology_path_v1(full->gpuPaths[i].path);
            old->gpuPaths[i].localNvLinkIds = (unsigned int)(full->gpuPaths[i].localNvLinkIds &
                                                             0xffffffffULL);
        }
    }
    free(full);
    return rc;
}

dcgmReturn_t dcgmGetGroupTopology(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                  dcgmGroupTopology_t *pDcgmGroupTopology)
{
    if (!pDcgmGroupTopology)
        return DCGM_ST_BADPARAM;
    unsigned int version = pDcgmGroupTopology->version;
    if (version == dcgmGroupTopology_version2)
        API_CALL(pDcgmHandle, group_topology, groupId, pDcgmGroupTopology);
    if (version != dcgmGroupTopology_version1)
        return DCGM_ST_VER_MISMATCH;
    dcgmGroupTopology_v2 full;
    memset(&full, 0, sizeof full);
    api_backend *b;
    dcgmReturn_t rc = api_enter(pDcgmHandle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    rc = (dcgmReturn_t)b->ops->group_topology(b->impl, groupId, &full);
    api_leave(b);
    dcgmGroupTopology_v1 *old = (dcgmGroupTopology_v1 *)pDcgmGroupTopology;
    memset(old, 0, sizeof *old);
    old->version = dcgmGroupTopology_version1;
    memcpy(old->groupCpuAffinityMask, full.groupCpuAffinityMask, sizeof old->groupCpuAffinityMask);
    old->numaOptimalFlag = full.numaOptimalFlag;
    old->slowestPath = topology_path_v1(full.slowestPath);
    return rc;
}

dcgmReturn_t dcgmSelectGpusByTopology(dcgmHandle_t pDcgmHandle, uint64_t inputGpuIds,
                                      uint32_t numGpus, uint64_t *outputGpuIds, uint64_t hintFlags)
{
    if (!pDcgmHandle || !outputGpuIds)
        return DCGM_ST_BADPARAM;
    API_CALL(pDcgmHandle, select_gpus, inputGpuIds, numGpus, hintFlags, outputGpuIds);
}

dcgmReturn_t dcgmGetNvLinkP2PStatus(dcgmHandle_t dcgmHandle, dcgmNvLinkP2PStatus_v1 *linkStatus)
{
    dcgmReturn_t checked = api_check_version(linkStatus, dcgmNvLinkP2PStatus_version1);
    if (checked != DCGM_ST_OK)
        return checked;
    /* the answer replaces the request only when the engine succeeded */
    dcgmNvLinkP2PStatus_v1 *work = malloc(sizeof *work);
    if (!work)
        return DCGM_ST_MEMORY;
    memcpy(work, linkStatus, sizeof *work);
    api_backend *b;
    dcgmReturn_t rc = api_enter(dcgmHandle, &b);
    if (rc == DCGM_ST_OK) {
        rc = (dcgmReturn_t)b->ops->nvlink_p2p(b->impl, work);
        api_leave(b);
    }
    if (rc == DCGM_ST_OK)
        memcpy(linkStatus, work, sizeof *work);
    free(work);
    return rc;
}

/* As DCGM's client side: the caller's version is not checked but replaced
 * by the one version there is; the engine checks what arrives. */
dcgmReturn_t dcgmGetCacheManagerFieldInfo(dcgmHandle_t pDcgmHandle,
                                          dcgmCacheManagerFieldInfo_v4_t *fieldInfo)
{
    if (!fieldInfo)
        return DCGM_ST_BADPARAM;
    fieldInfo->version = dcgmCacheManagerFieldInfo_version4;
    API_CALL(pDcgmHandle, cache_field_info, fieldInfo);
}

dcgmReturn_t dcgmProfGetSupportedMetricGroups(dcgmHandle_t pDcgmHandle,
                                              dcgmProfGetMetricGroups_t *metricGroups)
{
    API_CALL(pDcgmHandle, prof_metric_groups, metricGroups);
}

/* ---- versions and liveness ----------------------------------------------- */

dcgmReturn_t dcgmVersionInfo(dcgmVersionInfo_t *pVersionInfo)
{
    return (dcgmReturn_t)engine_version_info(pVersionInfo);
}

dcgmReturn_t dcgmHostengineVersionInfo(dcgmHandle_t pDcgmHandle, dcgmVersionInfo_t *pVersionInfo)
{
    API_CALL(pDcgmHandle, version_info, pVersionInfo);
}

dcgmReturn_t dcgmHostengineIsHealthy(dcgmHandle_t pDcgmHandle, dcgmHostengineHealth_t *heHealth)
{
    API_CALL(pDcgmHandle, hostengine_health, heHealth);
}

/* ---- simulator extensions ------------------------------------------------ */

/* The embedded engine if there is one, else the oldest remote connection:
 * a process that only talks to a hostengine asks about that one. */
static dcgmHandle_t start_time_source(void)
{
    pthread_mutex_lock(&api.lock);
    dcgmHandle_t h = api.embedded ? DCGM_EMBEDDED_HANDLE : 0;
    for (size_t i = 0; !api.embedded && i < api.n_remotes; i++)
        if (h == 0 || api.remotes[i]->handle < h)
            h = api.remotes[i]->handle;
    pthread_mutex_unlock(&api.lock);
    return h;
}

dcgmReturn_t dcgmSimGetStartTime(long long *startUs)
{
    if (!startUs)
        return DCGM_ST_BADPARAM;
    dcgmHandle_t source = start_time_source();
    if (source == 0)
        return DCGM_ST_UNINITIALIZED;
    API_CALL(source, start_time, startUs);
}

dcgmReturn_t dcgmSimGetValueAt(unsigned int gpuId, unsigned short fieldId, long long tRelUs,
                               dcgmFieldValue_v1 *value)
{
    API_CALL(DCGM_EMBEDDED_HANDLE, sim_value_at, gpuId, fieldId, (int64_t)tRelUs, value);
}

dcgmReturn_t dcgmSimCheckScenario(const char *spec, char *errorText, int errorTextLen)
{
    char err[512] = "";
    sim_node *node = NULL;
    int rc = sim_node_load(spec, &node, err, sizeof err);
    if (node)
        sim_node_free(node);
    if (errorText && errorTextLen > 0)
        snprintf(errorText, (size_t)errorTextLen, "%s", rc == DCGM_ST_OK ? "" : err);
    return (dcgmReturn_t)rc;
}

/* One line naming the embedded engine's value source: "models" or "nvml <path>". */
dcgmReturn_t dcgmSimSourceName(char *name, int nameLen)
{
    if (!name || nameLen <= 0)
        return DCGM_ST_BADPARAM;
    name[0] = '\0';
    pthread_mutex_lock(&api.lock);
    dcgmReturn_t rc = DCGM_ST_UNINITIALIZED;
    if (api.embedded) {
        engine_source_describe(api.embedded->impl, name, (size_t)nameLen);
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&api.lock);
    return rc;
}

/* The embedded engine's per-field statistics (dcgmSimFieldStats_t). */
dcgmReturn_t dcgmSimFieldStats(dcgmSimFieldStats_t *stats, int capacity, int *count)
{
    if (!count || capacity < 0 || (!stats && capacity > 0))
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&api.lock);
    dcgmReturn_t rc = DCGM_ST_UNINITIALIZED;
    if (api.embedded)
        rc = (dcgmReturn_t)engine_field_stats(api.embedded->impl, stats, capacity, count);
    pthread_mutex_unlock(&api.lock);
    return rc;
}

/* ---- dcgmHostengineEnvironmentVariableInfo (DcgmApi.cpp): the client
 * checks the pointer and the version stamp; the engine the handle leads to
 * answers from its own environment (engine_misc.c).  ---- */

dcgmReturn_t dcgmHostengineEnvironmentVariableInfo(dcgmHandle_t pDcgmHandle,
                                                   dcgmEnvVarInfo_t *pEnvVarInfo)
{
    dcgmReturn_t checked = api_check_version(pEnvVarInfo, dcgmEnvVarInfo_version1);
    if (checked != DCGM_ST_OK)
        return checked;
    API_CALL(pDcgmHandle, env_var_info, pEnvVarInfo);
}

/* ---- dcgmGetFieldSummary (DcgmApi.cpp, helperGetFieldSummary): pointer and
 * version are the client's checks, the rest the engine's. ---- */

dcgmReturn_t dcgmGetFieldSummary(dcgmHandle_t pDcgmHandle, dcgmFieldSummaryRequest_t *request)
{
    dcgmReturn_t checked = api_check_version(request, dcgmFieldSummaryRequest_version1);
    if (checked != DCGM_ST_OK)
        return checked;
    API_CALL(pDcgmHandle, field_summary, request);
}

/* ---- policy manager ------------------------------------------------------ */

/* The status handle is ignored, as DCGM's helperPolicySet / helperPolicyGet
 * do (dcgmlib/src/DcgmApi.cpp); the version checks come before anything is
 * sent. */
dcgmReturn_t dcgmPolicySet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmPolicy_t *policy,
                           dcgmStatus_t statusHandle)
{
    (void)statusHandle;
    dcgmReturn_t checked = api_check_version(policy, dcgmPolicy_version1);
    if (checked != DCGM_ST_OK)
        return checked;
    API_CALL(pDcgmHandle, policy_set, groupId, policy);
}

dcgmReturn_t dcgmPolicyGet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int count,
                           dcgmPolicy_t *policy, dcgmStatus_t statusHandle)
{
    (void)statusHandle;
    if (!policy || count <= 0)
        return DCGM_ST_BADPARAM;
    for (int i = 0; i < count; i++)
        if (policy[i].version != dcgmPolicy_version1)
            return DCGM_ST_VER_MISMATCH;
    api_backend *b;
    dcgmReturn_t rc = api_enter(pDcgmHandle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    dcgmPolicy_v1 *all = calloc(DCGM_MAX_NUM_DEVICES, sizeof *all);
    unsigned int n = 0;
    rc = all ? (dcgmReturn_t)b->ops->policy_get(b->impl, groupId, all, &n) : DCGM_ST_MEMORY;
    api_leave(b);
    if (rc == DCGM_ST_OK) {
        /* a policy per GPU of the group: as many as fit, and a word if not all did */
        if (n > (unsigned int)count) {
            rc = DCGM_ST_INSUFFICIENT_SIZE;
            n = (unsigned int)count;
        }
        memcpy(policy, all, n * sizeof *all);
    }
    free(all);
    return rc;
}

/* Policy management is edge triggered: DCGM's dcgmPolicyTrigger does nothing
 * and answers OK (tsapiEnginePolicyTrigger). */
dcgmReturn_t dcgmPolicyTrigger(dcgmHandle_t pDcgmHandle)
{
    (void)pDcgmHandle;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmPolicyRegister_v2(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                   dcgmPolicyCondition_t condition, fpRecvUpdates callback,
                                   uint64_t userData)
{
    api_backend *b;
    dcgmReturn_t rc = api_enter(pDcgmHandle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    pthread_mutex_lock(&api.lock);
    if (!b->policy && !b->retired)
        b->policy = policy_dispatch_new(b->ops, b->impl);
    policy_dispatch *pd = b->retired ? NULL : b->policy;
    pthread_mutex_unlock(&api.lock);
    uint32_t cookie = 0;
    if (!pd)
        rc = b->retired ? DCGM_ST_CONNECTION_NOT_VALID : DCGM_ST_MEMORY;
    else
        rc = (dcgmReturn_t)policy_dispatch_add(pd, callback, userData, &cookie);
    if (rc == DCGM_ST_OK) {
        rc = (dcgmReturn_t)b->ops->policy_register(b->impl, groupId, (unsigned int)condition,
                                                   cookie);
        if (rc != DCGM_ST_OK)
            policy_dispatch_remove(pd, cookie);
    }
    api_leave(b);
    return rc;
}

/* DCGM drops every registration of the connection, whatever the condition
 * (DcgmPolicyManager::UnregisterForPolicy). */
dcgmReturn_t dcgmPolicyUnregister(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                  dcgmPolicyCondition_t condition)
{
    (void)condition;
    api_backend *b;
    dcgmReturn_t rc = api_enter(pDcgmHandle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    rc = (dcgmReturn_t)b->ops->policy_unregister(b->impl, groupId);
    pthread_mutex_lock(&api.lock);
    policy_dispatch *pd = b->policy;
    pthread_mutex_unlock(&api.lock);
    if (rc == DCGM_ST_OK && pd)
        policy_dispatch_clear(pd);
    api_leave(b);
    return rc;
}

/* ---- administration: modules, pause, driver, introspection --------------- */

dcgmReturn_t dcgmModuleGetStatuses(dcgmHandle_t pDcgmHandle, void *moduleStatuses)
{
    dcgmReturn_t rc = api_check_version(moduleStatuses, ENGINE_MODULE_STATUSES_VERSION1);
    if (rc != DCGM_ST_OK)
        return rc;
    API_CALL(pDcgmHandle, module_statuses, moduleStatuses);
}

dcgmReturn_t dcgmModuleDenylist(dcgmHandle_t pDcgmHandle, unsigned int moduleId)
{
    /* DCGM's client refuses the core module and ids past the last */
    if (moduleId == 0 || moduleId >= ENGINE_MODULE_COUNT_PUBLIC)
        return DCGM_ST_BADPARAM;
    API_CALL(pDcgmHandle, module_denylist, moduleId);
}

dcgmReturn_t dcgmPauseTelemetryForDiag(dcgmHandle_t pDcgmHandle)
{
    API_CALL(pDcgmHandle, pause_resume, 1);
}

dcgmReturn_t dcgmResumeTelemetryForDiag(dcgmHandle_t pDcgmHandle)
{
    API_CALL(pDcgmHandle, pause_resume, 0);
}

dcgmReturn_t dcgmAttachDriver(dcgmHandle_t pDcgmHandle)
{
    API_CALL(pDcgmHandle, driver_attach, 1);
}

dcgmReturn_t dcgmDetachDriver(dcgmHandle_t pDcgmHandle)
{
    API_CALL(pDcgmHandle, driver_attach, 0);
}

/* The hostengine's own usage (cpu: its CPU, else its memory) for a
 * dcgmIntrospect* struct that must carry the stamp version. */
static dcgmReturn_t introspect(dcgmHandle_t handle, const void *info, unsigned int version,
                               int cpu, int wait, engine_introspect *out)
{
    dcgmReturn_t rc = api_check_version(info, version);
    if (rc != DCGM_ST_OK)
        return rc;
    api_backend *b;
    rc = api_enter(handle, &b);
    if (rc != DCGM_ST_OK)
        return rc;
    rc = (dcgmReturn_t)b->ops->introspect(b->impl, cpu, wait, out);
    api_leave(b);
    return rc;
}

/* dcgmIntrospectMemory_t *memoryInfo: version, then bytesUsed at offset 8 */
dcgmReturn_t dcgmIntrospectGetHostengineMemoryUsage(dcgmHandle_t pDcgmHandle, void *memoryInfo,
                                                    int waitIfNoData)
{
    engine_introspect out;
    dcgmReturn_t rc = introspect(pDcgmHandle, memoryInfo, dcgmIntrospectMemory_version1, 0,
                                 waitIfNoData, &out);
    if (rc == DCGM_ST_OK)
        memcpy((char *)memoryInfo + 8, &out.bytes_used, sizeof out.bytes_used);
    return rc;
}

/* dcgmIntrospectCpuUtil_t *cpuUtil: version, then total, kernel, user at 8, 16, 24 */
dcgmReturn_t dcgmIntrospectGetHostengineCpuUtilization(dcgmHandle_t pDcgmHandle, void *cpuUtil,
                                                       int waitIfNoData)
{
    engine_introspect out;
    dcgmReturn_t rc = introspect(pDcgmHandle, cpuUtil, dcgmIntrospectCpuUtil_version1, 1,
                                 waitIfNoData, &out);
    if (rc == DCGM_ST_OK) {
        double parts[3] = { out.total, out.kernel, out.user };
        memcpy((char *)cpuUtil + 8, parts, sizeof parts);
    }
    return rc;
}

/* What the diag module answers before it would run anything (api_versioned.c). */
dcgmReturn_t api_diag_precheck(dcgmHandle_t handle, dcgmGpuGrp_t group)
{
    API_CALL(handle, diag_precheck, group);
}

/* dcgmSettingsSetLoggingSeverity_v2 *logging: version, targetLogger, targetSeverity */
#define SET_LOGGING_SEVERITY_VERSION2 0x0200000cu
dcgmReturn_t dcgmHostengineSetLoggingSeverity(dcgmHandle_t pDcgmHandle, void *logging)
{
    if (!logging)
        return DCGM_ST_BADPARAM;
    int fields[3];
    memcpy(fields, logging, sizeof fields);
    if ((unsigned int)fields[0] != SET_LOGGING_SEVERITY_VERSION2)
        return DCGM_ST_VER_MISMATCH;
    API_CALL(pDcgmHandle, set_logging_severity, fields[1], fields[2]);
}
