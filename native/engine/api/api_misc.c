/*
 * api_misc.c -- client-side entry points that need no engine: the vGPU
 * calls' request checks, the error codes' priority and category, and the
 * workload power profiles' names.
 */
#include <string.h>

#include "api_internal.h"
#include "../engine.h"

/* ---- vGPU (DCGM: dcgmlib/src/DcgmApi.cpp, helperVgpuConfigSet,
 * helperVgpuConfigGet, helperVgpuInstanceGetAttributes): the version stamp
 * is checked first; past it the configuration calls answer NOT_SUPPORTED in
 * DCGM too, and the simulator has no vGPU instance to describe. ---- */

/* dcgmVgpuConfig_t *pDeviceConfig */
dcgmReturn_t dcgmVgpuConfigSet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, void *pDeviceConfig,
                               dcgmStatus_t statusHandle)
{
    (void)pDcgmHandle, (void)groupId, (void)statusHandle;
    dcgmReturn_t rc = api_check_version(pDeviceConfig, dcgmVgpuConfig_version1);
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* dcgmConfigType_t type, dcgmVgpuConfig_t deviceConfigList[]: every entry
 * carries the same, known stamp */
dcgmReturn_t dcgmVgpuConfigGet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int type, int count,
                               void *deviceConfigList, dcgmStatus_t statusHandle)
{
    (void)pDcgmHandle, (void)groupId, (void)type, (void)statusHandle;
    if (!deviceConfigList || count < 1)
        return DCGM_ST_BADPARAM;
    const size_t entry = dcgmVgpuConfig_version1 & 0xffffffu;
    const unsigned char *p = deviceConfigList;
    for (int i = 0; i < count; i++)
        if (api_version_of(p + (size_t)i * entry) != dcgmVgpuConfig_version1)
            return DCGM_ST_VER_MISMATCH;
    return DCGM_ST_NOT_SUPPORTED;
}

/* dcgmVgpuInstanceAttributes_t *pDcgmVgpuInstanceAttr */
dcgmReturn_t dcgmGetVgpuInstanceAttributes(dcgmHandle_t pDcgmHandle, unsigned int vgpuId,
                                           void *pDcgmVgpuInstanceAttr)
{
    (void)pDcgmHandle, (void)vgpuId;
    dcgmReturn_t rc = api_check_version(pDcgmVgpuInstanceAttr, dcgmVgpuInstanceAttributes_version1);
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* dcgmVgpuDeviceAttributes_t *pDcgmVgpuDeviceAttr (DCGM: dcgmlib/src/
 * DcgmApi.cpp, helperVgpuDeviceGetAttributes): the GPU's latest vGPU and
 * utilisation fields, any of them not watched yet watched first (every 30 s,
 * kept 4 hours or 480 samples) and read again after an update.  The vGPU
 * lists are blobs the simulator never fills, so their counts are 0; the
 * utilisations are the fields' values cut to 32 bits, blanks included.
 * Offsets are dcgmVgpuDeviceAttributes_v7's. */

#define VGPU_ATTR_GPU_UTIL 10640 /* then memCopyUtil, encUtil, decUtil */

dcgmReturn_t dcgmGetVgpuDeviceAttributes(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                                         void *pDcgmVgpuDeviceAttr)
{
    dcgmReturn_t rc = api_check_version(pDcgmVgpuDeviceAttr, dcgmVgpuDeviceAttributes_version7);
    if (rc != DCGM_ST_OK)
        return rc;
    unsigned short fields[] = { 501, 502, 503, 504, 203, 204, 206, 207 };
    enum { N_FIELDS = sizeof fields / sizeof fields[0] };
    dcgmFieldValue_v1 values[N_FIELDS];
    memset(values, 0, sizeof values);
    rc = dcgmEntityGetLatestValues(pDcgmHandle, DCGM_FE_GPU, gpuId, fields, N_FIELDS, values);
    if (rc != DCGM_ST_OK)
        return rc;
    int watched_any = 0;
    for (int i = 0; i < N_FIELDS; i++) {
        if (values[i].status != DCGM_ST_NOT_WATCHED)
            continue;
        rc = dcgmWatchFieldValue(pDcgmHandle, (int)gpuId, fields[i], 30000000, 14400.0, 480);
        if (rc != DCGM_ST_OK)
            return rc;
        watched_any = 1;
    }
    if (watched_any) {
        dcgmUpdateAllFields(pDcgmHandle, 1);
        rc = dcgmEntityGetLatestValues(pDcgmHandle, DCGM_FE_GPU, gpuId, fields, N_FIELDS, values);
        if (rc != DCGM_ST_OK)
            return rc;
    }
    /* everything past the version zeroed: the instance, creatable and
     * supported counts and their lists */
    unsigned char *out = pDcgmVgpuDeviceAttr;
    size_t size = dcgmVgpuDeviceAttributes_version7 & 0xffffffu;
    memset(out + sizeof(unsigned int), 0, size - sizeof(unsigned int));
    for (int i = 4; i < N_FIELDS; i++) {
        unsigned int util = (unsigned int)values[i].value.i64;
        memcpy(out + VGPU_ATTR_GPU_UTIL + (size_t)(i - 4) * sizeof util, &util, sizeof util);
    }
    return DCGM_ST_OK;
}

/* ---- error codes (DCGM: dcgmlib/src/dcgm_errors.c) ------------------------
 * Each DCGM_FR_* code 0..132 has a severity (dcgmErrorSeverity_t: 1 monitor,
 * 2 isolate, 3 unknown, 4 triage, 5 config, 6 reset) and a category
 * (dcgmErrorCategory_t, 0..16); codes past the table answer 3 (unknown) for
 * both. */

#define ERROR_CODE_COUNT 133
#define ERROR_UNKNOWN 3

static const unsigned char error_severity[ERROR_CODE_COUNT] = {
    3, 3, 3, 2, 2, 1, 6, 2, 2, 4, 1, 1, 1, 2, 4, 2, 1, 1, 5, 1, /*   0.. 19 */
    5, 3, 4, 5, 2, 6, 1, 1, 5, 5, 4, 4, 1, 2, 1, 2, 2, 4, 2, 2, /*  20.. 39 */
    1, 1, 1, 1, 4, 4, 5, 5, 5, 4, 4, 1, 2, 1, 4, 5, 4, 2, 2, 4, /*  40.. 59 */
    5, 1, 4, 4, 4, 4, 4, 4, 5, 1, 2, 2, 5, 4, 1, 1, 1, 4, 5, 2, /*  60.. 79 */
    6, 2, 5, 6, 6, 6, 2, 2, 2, 4, 4, 4, 4, 4, 4, 2, 5, 4, 2, 4, /*  80.. 99 */
    4, 4, 2, 2, 2, 2, 2, 2, 1, 2, 4, 2, 5, 2, 2, 2, 2, 5, 2, 2, /* 100..119 */
    2, 2, 2, 1, 4, 6, 2, 6, 6, 6, 4, 1, 4,                      /* 120..132 */
};

static const unsigned char error_category[ERROR_CODE_COUNT] = {
    0,  0,  0,  13, 10, 10, 10, 10, 10, 15, 9,  14, 14, 11, 11, 12, 12, 12, 8,  4,  /*   0.. 19 */
    8,  16, 4,  3,  4,  8,  16, 16, 6,  8,  13, 13, 16, 15, 2,  2,  2,  16, 1,  1,  /*  20.. 39 */
    9,  9,  9,  15, 16, 13, 13, 8,  3,  16, 1,  6,  10, 16, 6,  10, 8,  10, 10, 6,  /*  40.. 59 */
    10, 10, 1,  14, 8,  8,  6,  16, 3,  8,  11, 11, 14, 8,  3,  10, 15, 8,  8,  10, /*  60.. 79 */
    10, 5,  3,  10, 10, 10, 15, 15, 11, 7,  7,  7,  7,  7,  7,  7,  3,  16, 13, 11, /*  80.. 99 */
    11, 5,  10, 10, 13, 10, 10, 13, 6,  5,  2,  10, 6,  13, 13, 11, 11, 3,  10, 11, /* 100..119 */
    15, 11, 8,  11, 8,  15, 15, 15, 15, 15, 8,  5,  10,                             /* 120..132 */
};

int dcgmErrorGetPriorityByCode(unsigned int code)
{
    return code < ERROR_CODE_COUNT ? error_severity[code] : ERROR_UNKNOWN;
}

int dcgmErrorGetCategoryByCode(unsigned int code)
{
    return code < ERROR_CODE_COUNT ? error_category[code] : ERROR_UNKNOWN;
}

/* ---- workload power profiles (DCGM: dcgmlib/src/DcgmApi.cpp,
 * tsapiPowerProfileIdToName): ids 0..14 are named after their
 * dcgmPowerProfileType_t constant without the DCGM_ prefix; anything else,
 * or no place for the answer, is BADPARAM. ---- */

static const char *const power_profile_names[] = {
    "POWER_PROFILE_MAX_P",         "POWER_PROFILE_MAX_Q",         "POWER_PROFILE_COMPUTE",
    "POWER_PROFILE_MEMORY_BOUND",  "POWER_PROFILE_NETWORK",       "POWER_PROFILE_BALANCED",
    "POWER_PROFILE_LLM_INFERENCE", "POWER_PROFILE_LLM_TRAINING",  "POWER_PROFILE_RBM",
    "POWER_PROFILE_DCPCIE",        "POWER_PROFILE_HMMA_SPARSE",   "POWER_PROFILE_HMMA_DENSE",
    "POWER_PROFILE_SYNC_BALANCED", "POWER_PROFILE_HPC",           "POWER_PROFILE_MIG",
};

dcgmReturn_t dcgmPowerProfileIdToName(unsigned int id, const char **name)
{
    if (!name)
        return DCGM_ST_BADPARAM;
    if (id >= sizeof power_profile_names / sizeof power_profile_names[0])
        return DCGM_ST_BADPARAM;
    *name = power_profile_names[id];
    return DCGM_ST_OK;
}
