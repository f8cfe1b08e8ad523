/*
 * test_versions.c -- the request checks of the entry points in
 * engine/api/api_versioned.c and dcgmHostengineEnvironmentVariableInfo: NULL is
 * BADPARAM, versions 0 and 50 are VER_MISMATCH, an accepted version answers
 * something else.
 *
 * usage: test_versions BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"

/* big enough for any of the requests, which are only read up to their size */
static unsigned char req[0x20000 * 4];
static unsigned char req2[0x20000 * 8];

static void stamp(void *p, unsigned int v) { memcpy(p, &v, sizeof v); }

/* calls fn with the request stamped 0, 50 and `good` */
#define VERSIONS(name, good, call)                                                    \
    do {                                                                              \
        unsigned int bad_[] = { 0, 50 };                                              \
        for (int i_ = 0; i_ < 2; i_++) {                                              \
            stamp(req, bad_[i_]);                                                     \
            CHECK_RC(call, DCGM_ST_VER_MISMATCH);                                     \
        }                                                                             \
        stamp(req, good);                                                             \
        dcgmReturn_t rc_ = call;                                                      \
        CHECK(rc_ != DCGM_ST_VER_MISMATCH && rc_ != DCGM_ST_BADPARAM, "%s: %d", name, \
              (int)rc_);                                                              \
    } while (0)

static void test_versioned(void)
{
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &h), DCGM_ST_OK);
    dcgmStatus_t st = 0;
    CHECK_RC(p_dcgmStatusCreate(&st), DCGM_ST_OK);
    char job[64] = "job";

    CHECK_RC(p_dcgmConfigSet(EMB, 0, NULL, st), DCGM_ST_BADPARAM);
    VERSIONS("ConfigSet", dcgmConfig_version2, p_dcgmConfigSet(EMB, 0, req, st));
    CHECK_RC(p_dcgmConfigGet(EMB, 0, 0, 1, NULL, st), DCGM_ST_BADPARAM);
    VERSIONS("ConfigGet", dcgmConfig_version2, p_dcgmConfigGet(EMB, 0, 0, 1, req, st));
    /* every entry of the list is checked */
    stamp(req, dcgmConfig_version2);
    stamp(req + 0x48, 50);
    CHECK_RC(p_dcgmConfigGet(EMB, 0, 0, 2, req, st), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmVgpuConfigSet(EMB, 0, NULL, st), DCGM_ST_BADPARAM);
    VERSIONS("VgpuConfigSet", dcgmVgpuConfig_version1, p_dcgmVgpuConfigSet(EMB, 0, req, st));
    CHECK_RC(p_dcgmVgpuConfigGet(EMB, 0, 1, 0, req, st), DCGM_ST_BADPARAM);
    VERSIONS("VgpuConfigGet", dcgmVgpuConfig_version1, p_dcgmVgpuConfigGet(EMB, 0, 1, 1, req, st));
    stamp(req, dcgmVgpuConfig_version1);
    stamp(req + 0x28, 0);
    CHECK_RC(p_dcgmVgpuConfigGet(EMB, 0, 1, 2, req, st), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmPolicyGet(EMB, 0, 1, NULL, st), DCGM_ST_BADPARAM);
    VERSIONS("PolicyGet", dcgmPolicy_version1, p_dcgmPolicyGet(EMB, 0, 1, (void *)req, st));

    CHECK_RC(p_dcgmActionValidate_v2(EMB, NULL, req2), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmActionValidate_v2(EMB, req, NULL), DCGM_ST_BADPARAM);
    stamp(req2, dcgmDiagResponse_version12);
    VERSIONS("ActionValidate_v2", dcgmRunDiag_version10, p_dcgmActionValidate_v2(EMB, req, req2));
    stamp(req, dcgmRunDiag_version7); /* response 12 needs run-diag 9 or 10 */
    CHECK_RC(p_dcgmActionValidate_v2(EMB, req, req2), DCGM_ST_VER_MISMATCH);
    stamp(req2, dcgmDiagResponse_version10);
    CHECK(p_dcgmActionValidate_v2(EMB, req, req2) == DCGM_ST_NOT_SUPPORTED, "v7 with response 10");

    CHECK_RC(p_dcgmRunDiagnostic(EMB, 0, 10, NULL), DCGM_ST_BADPARAM);
    VERSIONS("RunDiagnostic", dcgmDiagResponse_version12, p_dcgmRunDiagnostic(EMB, 0, 10, req));
    stamp(req, dcgmDiagResponse_version12);
    CHECK_RC(p_dcgmRunDiagnostic(EMB, 0, 0, req), DCGM_ST_BADPARAM);

    CHECK_RC(p_dcgmGetPidInfo(EMB, 0, NULL), DCGM_ST_BADPARAM);
    VERSIONS("GetPidInfo", dcgmPidInfo_version2, p_dcgmGetPidInfo(EMB, 0, req));
    CHECK_RC(p_dcgmJobGetStats(EMB, job, NULL), DCGM_ST_BADPARAM);
    VERSIONS("JobGetStats", dcgmJobInfo_version3, p_dcgmJobGetStats(EMB, job, req));
    CHECK_RC(p_dcgmIntrospectGetHostengineMemoryUsage(EMB, NULL, 0), DCGM_ST_BADPARAM);
    VERSIONS("IntrospectMemory", dcgmIntrospectMemory_version1,
             p_dcgmIntrospectGetHostengineMemoryUsage(EMB, req, 0));
    CHECK_RC(p_dcgmIntrospectGetHostengineCpuUtilization(EMB, NULL, 0), DCGM_ST_BADPARAM);
    VERSIONS("IntrospectCpu", dcgmIntrospectCpuUtil_version1,
             p_dcgmIntrospectGetHostengineCpuUtilization(EMB, req, 0));
    CHECK_RC(p_dcgmGetVgpuDeviceAttributes(EMB, 0, NULL), DCGM_ST_BADPARAM);
    VERSIONS("GetVgpuDeviceAttributes", dcgmVgpuDeviceAttributes_version7,
             p_dcgmGetVgpuDeviceAttributes(EMB, 0, req));

    CHECK_RC(p_dcgmStatusDestroy(st), DCGM_ST_OK);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

static dcgmReturn_t env_info(unsigned int version, const char *name, dcgmEnvVarInfo_t *info)
{
    memset(info, 0, sizeof *info);
    info->version = version;
    snprintf(info->envVarName, sizeof info->envVarName, "%s", name);
    info->ret = DCGM_ST_GENERIC_ERROR;
    return p_dcgmHostengineEnvironmentVariableInfo(EMB, info);
}

static void test_env_var(void)
{
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &h), DCGM_ST_OK);
    dcgmEnvVarInfo_t info;
    CHECK_RC(p_dcgmHostengineEnvironmentVariableInfo(EMB, NULL), DCGM_ST_BADPARAM);
    CHECK_RC(env_info(999, "CUDA_VISIBLE_DEVICES", &info), DCGM_ST_VER_MISMATCH);
    CHECK_RC(env_info(0, "CUDA_VISIBLE_DEVICES", &info), DCGM_ST_VER_MISMATCH);

    setenv("CUDA_VISIBLE_DEVICES", "0,1,2", 1);
    CHECK_RC(env_info(dcgmEnvVarInfo_version, "CUDA_VISIBLE_DEVICES", &info), DCGM_ST_OK);
    CHECK_RC(info.ret, DCGM_ST_OK);
    CHECK(strcmp(info.envVarValue, "0,1,2") == 0, "value '%s'", info.envVarValue);
    CHECK_RC(env_info(dcgmEnvVarInfo_version, "INVALID_VAR", &info), DCGM_ST_OK);
    CHECK_RC(info.ret, DCGM_ST_BADPARAM);
    CHECK_RC(env_info(dcgmEnvVarInfo_version, "", &info), DCGM_ST_OK);
    CHECK_RC(info.ret, DCGM_ST_BADPARAM);
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK_RC(env_info(dcgmEnvVarInfo_version, "CUDA_VISIBLE_DEVICES", &info), DCGM_ST_OK);
    CHECK_RC(info.ret, DCGM_ST_NOT_CONFIGURED);
    CHECK(info.envVarValue[0] == '\0', "value '%s'", info.envVarValue);
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
    /* no engine: the handle is no longer valid */
    CHECK(env_info(dcgmEnvVarInfo_version, "CUDA_VISIBLE_DEVICES", &info) != DCGM_ST_OK, "stopped");
}

int main(int argc, char **argv)
{
    const check_test tests[] = { { "versioned", test_versioned }, { "env_var", test_env_var } };
    const check_program program = { .only_env = "TEST_VERSIONS_ONLY" };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
