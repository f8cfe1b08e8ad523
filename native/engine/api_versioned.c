/*
 * api_versioned.c -- entry points whose features the simulator does not
 * model, but whose request checks it does: a NULL request is BADPARAM, a
 * request whose version stamp DCGM would not accept is VER_MISMATCH, and an
 * acceptable request answers NOT_SUPPORTED.  DCGM's client library makes
 * these checks before it dispatches anything, so they come first here too.
 *
 * Every DCGM versioned struct starts with an `unsigned int version`, and that
 * leading field is all these functions read, so the structs themselves are
 * not declared: the parameters are void pointers (the same ABI as DCGM's
 * typed pointers) read through version_of().  Arrays of structs are walked
 * with the element size carried in the low 24 bits of the version stamp.
 */
#include <string.h>

#include "engine.h"

/* api.c: what the diag module answers before it would start NVVS */
dcgmReturn_t api_diag_precheck(dcgmHandle_t handle, dcgmGpuGrp_t group);

/* the group a dcgmRunDiag_v7..v10 names: the same offset in every version */
static dcgmGpuGrp_t diag_group(const void *drd)
{
    dcgmGpuGrp_t group;
    memcpy(&group, (const unsigned char *)drd + 16, sizeof group);
    return group;
}

/* the leading version field of any versioned DCGM struct */
static unsigned int version_of(const void *request)
{
    unsigned int v;
    memcpy(&v, request, sizeof v);
    return v;
}

#define STAMP_SIZE(stamp) ((size_t)((stamp) & 0xffffffu))

/* count entries of one struct type, each stamped `want` */
static dcgmReturn_t check_array(const void *list, int count, unsigned int want)
{
    if (!list || count <= 0)
        return DCGM_ST_BADPARAM;
    const unsigned char *p = list;
    for (int i = 0; i < count; i++)
        if (version_of(p + (size_t)i * STAMP_SIZE(want)) != want)
            return DCGM_ST_VER_MISMATCH;
    return DCGM_ST_OK;
}

/* dcgmConfig_t *pDeviceConfig */
dcgmReturn_t dcgmConfigSet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, void *pDeviceConfig,
                           dcgmStatus_t statusHandle)
{
    (void)pDcgmHandle, (void)groupId, (void)statusHandle;
    if (!pDeviceConfig)
        return DCGM_ST_BADPARAM;
    if (version_of(pDeviceConfig) != dcgmConfig_version2)
        return DCGM_ST_VER_MISMATCH;
    return DCGM_ST_NOT_SUPPORTED;
}

/* dcgmConfigType_t type, dcgmConfig_t deviceConfigList[] */
dcgmReturn_t dcgmConfigGet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int type, int count,
                           void *deviceConfigList, dcgmStatus_t statusHandle)
{
    (void)pDcgmHandle, (void)groupId, (void)type, (void)statusHandle;
    dcgmReturn_t rc = check_array(deviceConfigList, count, dcgmConfig_version2);
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* dcgmPolicy_t *policy (count entries) */
dcgmReturn_t dcgmPolicyGet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int count, void *policy,
                           dcgmStatus_t statusHandle)
{
    (void)pDcgmHandle, (void)groupId, (void)statusHandle;
    dcgmReturn_t rc = check_array(policy, count, dcgmPolicy_version1);
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* Which dcgmRunDiag versions each dcgmDiagResponse version pairs with:
 * responses 11 and 12 take run-diag 9 or 10, response 10 takes 7 or 8,
 * responses 7 to 9 take 7 only. */
static dcgmReturn_t check_diag_pair(unsigned int drd, unsigned int response)
{
    switch (drd) {
    case dcgmRunDiag_version7: case dcgmRunDiag_version8:
    case dcgmRunDiag_version9: case dcgmRunDiag_version10:
        break;
    default:
        return DCGM_ST_VER_MISMATCH;
    }
    switch (response) {
    case dcgmDiagResponse_version12: case dcgmDiagResponse_version11:
        return drd == dcgmRunDiag_version10 || drd == dcgmRunDiag_version9 ? DCGM_ST_OK
                                                                           : DCGM_ST_VER_MISMATCH;
    case dcgmDiagResponse_version10:
        return drd == dcgmRunDiag_version8 || drd == dcgmRunDiag_version7 ? DCGM_ST_OK
                                                                          : DCGM_ST_VER_MISMATCH;
    case dcgmDiagResponse_version9: case dcgmDiagResponse_version8: case dcgmDiagResponse_version7:
        return drd == dcgmRunDiag_version7 ? DCGM_ST_OK : DCGM_ST_VER_MISMATCH;
    default:
        return DCGM_ST_VER_MISMATCH;
    }
}

/* dcgmRunDiag_v10 *drd, dcgmDiagResponse_v12 *response */
dcgmReturn_t dcgmActionValidate_v2(dcgmHandle_t pDcgmHandle, void *drd, void *response)
{
    if (!drd || !response)
        return DCGM_ST_BADPARAM;
    dcgmReturn_t rc = check_diag_pair(version_of(drd), version_of(response));
    if (rc == DCGM_ST_OK)
        rc = api_diag_precheck(pDcgmHandle, diag_group(drd));
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* dcgmDiagnosticLevel_t diagLevel, dcgmDiagResponse_v12 *diagResponse */
dcgmReturn_t dcgmRunDiagnostic(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int diagLevel,
                               void *diagResponse)
{
    if (!diagResponse)
        return DCGM_ST_BADPARAM;
    unsigned int v = version_of(diagResponse);
    if (v == 0)
        return DCGM_ST_VER_MISMATCH;
    /* the short, medium, long and extra-long levels */
    if (diagLevel != 10 && diagLevel != 20 && diagLevel != 30 && diagLevel != 40)
        return DCGM_ST_BADPARAM;
    unsigned int drd = v == dcgmDiagResponse_version12 || v == dcgmDiagResponse_version11
                           ? dcgmRunDiag_version10 : dcgmRunDiag_version7;
    dcgmReturn_t rc = check_diag_pair(drd, v);
    if (rc == DCGM_ST_OK)
        rc = api_diag_precheck(pDcgmHandle, groupId);
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* dcgmPidInfo_t *pidInfo */
dcgmReturn_t dcgmGetPidInfo(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, void *pidInfo)
{
    (void)pDcgmHandle, (void)groupId;
    if (!pidInfo)
        return DCGM_ST_BADPARAM;
    if (version_of(pidInfo) != dcgmPidInfo_version2)
        return DCGM_ST_VER_MISMATCH;
    return DCGM_ST_NOT_SUPPORTED;
}

/* dcgmJobInfo_t *pJobInfo */
dcgmReturn_t dcgmJobGetStats(dcgmHandle_t pDcgmHandle, char jobId[64], void *pJobInfo)
{
    (void)pDcgmHandle;
    if (!jobId || !pJobInfo)
        return DCGM_ST_BADPARAM;
    if (version_of(pJobInfo) != dcgmJobInfo_version3)
        return DCGM_ST_VER_MISMATCH;
    return DCGM_ST_NOT_SUPPORTED;
}

/* dcgmVgpuDeviceAttributes_t *pDcgmVgpuDeviceAttr (a test API in DCGM) */
dcgmReturn_t dcgmGetVgpuDeviceAttributes(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                                         void *pDcgmVgpuDeviceAttr)
{
    (void)pDcgmHandle, (void)gpuId;
    if (!pDcgmVgpuDeviceAttr)
        return DCGM_ST_BADPARAM;
    if (version_of(pDcgmVgpuDeviceAttr) != dcgmVgpuDeviceAttributes_version7)
        return DCGM_ST_VER_MISMATCH;
    return DCGM_ST_NOT_SUPPORTED;
}
