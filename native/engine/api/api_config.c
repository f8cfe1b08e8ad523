/*
 * api_config.c -- dcgmConfigSet, dcgmConfigGet and dcgmConfigEnforce: the
 * checks DCGM's client library makes before it sends anything, then one
 * engine_config_msg through the handle's backend (engine_config.c does the
 * work), then the errors it lists added to the caller's dcgmStatus_t and the
 * configurations copied out (DCGM: dcgmlib/src/DcgmApi.cpp, helperConfigSet,
 * helperConfigGet, helperConfigEnforce, helperUpdateErrorCodes).
 */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "status.h"

typedef struct config_call {
    int which;                   /* 0 set, 1 get, 2 enforce */
    dcgmGpuGrp_t group;
    engine_config_msg *msg;
} config_call;

static int run_config(const backend_ops *ops, void *impl, void *ctx)
{
    config_call *c = ctx;
    switch (c->which) {
    case 0: return ops->config_set(impl, c->group, c->msg);
    case 1: return ops->config_get(impl, c->group, c->msg);
    default: return ops->config_enforce(impl, c->group, c->msg);
    }
}

/* Sends the message; the errors it comes back with go to the status list. */
static dcgmReturn_t config_send(dcgmHandle_t handle, int which, dcgmGpuGrp_t group,
                                engine_config_msg *msg, dcgmStatus_t statusHandle)
{
    config_call call = { which, group, msg };
    dcgmReturn_t rc = (dcgmReturn_t)api_with_backend(handle, run_config, &call);
    unsigned int n = msg->num_statuses <= DCGM_MAX_NUM_DEVICES ? msg->num_statuses
                                                                : DCGM_MAX_NUM_DEVICES;
    engine_status *st = engine_status_of(statusHandle);
    for (unsigned int i = 0; i < n; i++)
        engine_status_add(st, msg->statuses[i].gpuId, (unsigned short)msg->statuses[i].fieldId,
                          msg->statuses[i].status);
    return rc;
}

dcgmReturn_t dcgmConfigSet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, void *pDeviceConfig,
                           dcgmStatus_t statusHandle)
{
    if (!pDeviceConfig)
        return DCGM_ST_BADPARAM;
    const dcgmConfig_v2 *config = pDeviceConfig;
    if (config->version != dcgmConfig_version2)
        return DCGM_ST_VER_MISMATCH;
    engine_config_msg *msg = calloc(1, sizeof *msg);
    if (!msg)
        return DCGM_ST_MEMORY;
    msg->config = *config;
    dcgmReturn_t rc = config_send(pDcgmHandle, 0, groupId, msg, statusHandle);
    free(msg);
    return rc;
}

dcgmReturn_t dcgmConfigGet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int type, int count,
                           void *deviceConfigList, dcgmStatus_t statusHandle)
{
    if (!deviceConfigList || count <= 0 ||
        (type != DCGM_CONFIG_TARGET_STATE && type != DCGM_CONFIG_CURRENT_STATE))
        return DCGM_ST_BADPARAM;
    dcgmConfig_v2 *list = deviceConfigList;
    /* every entry carries the one version there is */
    for (int i = 0; i < count; i++)
        if (list[i].version != dcgmConfig_version2)
            return DCGM_ST_VER_MISMATCH;
    engine_config_msg *msg = calloc(1, sizeof *msg);
    if (!msg)
        return DCGM_ST_MEMORY;
    msg->req_type = (unsigned int)type;
    dcgmReturn_t rc = config_send(pDcgmHandle, 1, groupId, msg, statusHandle);
    unsigned int n = msg->num_configs <= DCGM_MAX_NUM_DEVICES ? msg->num_configs
                                                               : DCGM_MAX_NUM_DEVICES;
    if (n > (unsigned int)count)
        n = (unsigned int)count;
    memcpy(list, msg->configs, n * sizeof *list);
    free(msg);
    return rc;
}

dcgmReturn_t dcgmConfigEnforce(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                               dcgmStatus_t statusHandle)
{
    engine_config_msg *msg = calloc(1, sizeof *msg);
    if (!msg)
        return DCGM_ST_MEMORY;
    dcgmReturn_t rc = config_send(pDcgmHandle, 2, groupId, msg, statusHandle);
    free(msg);
    return rc;
}
