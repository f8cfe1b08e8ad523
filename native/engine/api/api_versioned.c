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
 * typed pointers) read through api_version_of() and api_check_version().
 * Arrays of structs are walked with the element size carried in the low 24
 * bits of the version stamp.
 */
#include <string.h>

#include "api_internal.h"
#include "../engine.h"

/* api.c: what the diag module answers before it would start NVVS */
dcgmReturn_t api_diag_precheck(dcgmHandle_t handle, dcgmGpuGrp_t group);

/* the group a dcgmRunDiag_v7..v10 names: the same offset in every version */
static dcgmGpuGrp_t diag_group(const void *drd)
{
    dcgmGpuGrp_t group;
    memcpy(&group, (const unsigned char *)drd + 16, sizeof group);
    return group;
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
    dcgmReturn_t rc = check_diag_pair(api_version_of(drd), api_version_of(response));
    if (rc != DCGM_ST_OK)
        return rc;
    /* A request naming no test runs the level in validate, and one past the
     * extra-long level (4) is refused before anything runs (DCGM: modules/
     * diag/DcgmDiagManager.cpp, the command line built for the diag).  In
     * run-diag versions 7 to 10, validate sits at byte 24 and the first test
     * name at byte 28. */
    unsigned int validate;
    const unsigned char *request = drd;
    memcpy(&validate, request + 24, sizeof validate);
    if (request[28] == '\0' && validate > 4)
        return DCGM_ST_BADPARAM;
    rc = api_diag_precheck(pDcgmHandle, diag_group(drd));
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* dcgmDiagnosticLevel_t diagLevel, dcgmDiagResponse_v12 *diagResponse */
dcgmReturn_t dcgmRunDiagnostic(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int diagLevel,
                               void *diagResponse)
{
    if (!diagResponse)
        return DCGM_ST_BADPARAM;
    unsigned int v = api_version_of(diagResponse);
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
    dcgmReturn_t rc = api_check_version(pidInfo, dcgmPidInfo_version2);
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

/* dcgmJobInfo_t *pJobInfo */
dcgmReturn_t dcgmJobGetStats(dcgmHandle_t pDcgmHandle, char jobId[64], void *pJobInfo)
{
    (void)pDcgmHandle;
    if (!jobId)
        return DCGM_ST_BADPARAM;
    dcgmReturn_t rc = api_check_version(pJobInfo, dcgmJobInfo_version3);
    return rc != DCGM_ST_OK ? rc : DCGM_ST_NOT_SUPPORTED;
}

