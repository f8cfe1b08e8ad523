/*
 * dcgm_abi.h -- this project's own declarations of the DCGM 4.x C ABI subset
 * that dcgm-collector and its simulated libdcgm.so.4 use.
 *
 * Written from the layout facts in reference/dcgm (x86_64, LP64).  Every struct
 * here is checked member by member against abi-layout.tsv by
 * tests/unit/dcgm/test_abi_layout.py, so a one-byte slip fails the suite instead of
 * corrupting memory on a GPU node.
 *
 * Everything between the CDEF-BEGIN and CDEF-END markers is also fed to cffi
 * by dcgm_collector/ext/_build.py, so that region may only hold what
 * cffi's cdef parser understands: typedefs, structs, unions, enums, and
 * #defines of plain integer literals.  Function prototypes live in
 * dcgm_functions.h.
 */
#ifndef DCGM_COLLECTOR_DCGM_ABI_H
#define DCGM_COLLECTOR_DCGM_ABI_H

#include <stdint.h>

/* CDEF-BEGIN */

/* ---- scalar handle types: all pointer sized ---------------------------- */
typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;
typedef uintptr_t dcgmStatus_t;
typedef unsigned int dcgm_field_eid_t;

/* ---- return codes ------------------------------------------------------ */
typedef enum dcgmReturn_enum {
    DCGM_ST_OK = 0,
    DCGM_ST_BADPARAM = -1,
    DCGM_ST_GENERIC_ERROR = -3,
    DCGM_ST_MEMORY = -4,
    DCGM_ST_NOT_CONFIGURED = -5,
    DCGM_ST_NOT_SUPPORTED = -6,
    DCGM_ST_INIT_ERROR = -7,
    DCGM_ST_NVML_ERROR = -8,
    DCGM_ST_PENDING = -9,
    DCGM_ST_UNINITIALIZED = -10,
    DCGM_ST_TIMEOUT = -11,
    DCGM_ST_VER_MISMATCH = -12,
    DCGM_ST_UNKNOWN_FIELD = -13,
    DCGM_ST_NO_DATA = -14,
    DCGM_ST_STALE_DATA = -15,
    DCGM_ST_NOT_WATCHED = -16,
    DCGM_ST_NO_PERMISSION = -17,
    DCGM_ST_GPU_IS_LOST = -18,
    DCGM_ST_RESET_REQUIRED = -19,
    DCGM_ST_FUNCTION_NOT_FOUND = -20,
    DCGM_ST_CONNECTION_NOT_VALID = -21,
    DCGM_ST_GPU_NOT_SUPPORTED = -22,
    DCGM_ST_GROUP_INCOMPATIBLE = -23,
    DCGM_ST_MAX_LIMIT = -24,
    DCGM_ST_LIBRARY_NOT_FOUND = -25,
    DCGM_ST_DUPLICATE_KEY = -26,
    DCGM_ST_GPU_IN_SYNC_BOOST_GROUP = -27,
    DCGM_ST_GPU_NOT_IN_SYNC_BOOST_GROUP = -28,
    DCGM_ST_REQUIRES_ROOT = -29,
    DCGM_ST_NVVS_ERROR = -30,
    DCGM_ST_INSUFFICIENT_SIZE = -31,
    DCGM_ST_FIELD_UNSUPPORTED_BY_API = -32,
    DCGM_ST_MODULE_NOT_LOADED = -33,
    DCGM_ST_IN_USE = -34,
    DCGM_ST_GROUP_IS_EMPTY = -35,
    DCGM_ST_PROFILING_NOT_SUPPORTED = -36,
    DCGM_ST_PROFILING_LIBRARY_ERROR = -37,
    DCGM_ST_PROFILING_MULTI_PASS = -38,
    DCGM_ST_DIAG_ALREADY_RUNNING = -39,
    DCGM_ST_DIAG_BAD_JSON = -40,
    DCGM_ST_DIAG_BAD_LAUNCH = -41,
    DCGM_ST_DIAG_UNUSED = -42,
    DCGM_ST_DIAG_THRESHOLD_EXCEEDED = -43,
    DCGM_ST_INSUFFICIENT_DRIVER_VERSION = -44,
    DCGM_ST_INSTANCE_NOT_FOUND = -45,
    DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND = -46,
    DCGM_ST_CHILD_NOT_KILLED = -47,
    DCGM_ST_3RD_PARTY_LIBRARY_ERROR = -48,
    DCGM_ST_INSUFFICIENT_RESOURCES = -49,
    DCGM_ST_PLUGIN_EXCEPTION = -50,
    DCGM_ST_NVVS_ISOLATE_ERROR = -51,
    DCGM_ST_NVVS_BINARY_NOT_FOUND = -52,
    DCGM_ST_NVVS_KILLED = -53,
    DCGM_ST_PAUSED = -54,
    DCGM_ST_ALREADY_INITIALIZED = -55,
    DCGM_ST_NVML_NOT_LOADED = -56,
    DCGM_ST_NVML_DRIVER_TIMEOUT = -57,
    DCGM_ST_NVVS_NO_AVAILABLE_TEST = -58,
    DCGM_ST_MNDIAG_CONNECTION_NOT_AVAILABLE = -59,
    DCGM_ST_MNDIAG_CONNECTION_UNAUTHORIZED = -60,
    DCGM_ST_REMOTE_SSH_CONNECTION_FAILED = -61,
    DCGM_ST_CHILD_SPAWN_FAILED = -62,
    DCGM_ST_FILE_IO_ERROR = -63,
    DCGM_ST_CHILD_SIGNAL_RECEIVED = -64,
    DCGM_ST_CALLER_ALREADY_STOPPED = -65,
    DCGM_ST_DIAG_STOPPED = -66,
    DCGM_ST_GPUS_DETACHED = -67
} dcgmReturn_t;

/* ---- enums ------------------------------------------------------------- */
typedef enum dcgm_field_entity_group_enum {
    DCGM_FE_NONE = 0,
    DCGM_FE_GPU = 1,
    DCGM_FE_VGPU = 2,
    DCGM_FE_SWITCH = 3,
    DCGM_FE_GPU_I = 4,
    DCGM_FE_GPU_CI = 5,
    DCGM_FE_LINK = 6,
    DCGM_FE_CPU = 7,
    DCGM_FE_CPU_CORE = 8,
    DCGM_FE_CONNECTX = 9,
    DCGM_FE_COUNT = 10
} dcgm_field_entity_group_t;

typedef enum dcgmOperationMode_enum {
    DCGM_OPERATION_MODE_AUTO = 1,
    DCGM_OPERATION_MODE_MANUAL = 2
} dcgmOperationMode_t;

typedef enum dcgmOrder_enum {
    DCGM_ORDER_ASCENDING = 1,
    DCGM_ORDER_DESCENDING = 2
} dcgmOrder_t;

typedef enum DcgmEntityStatus_enum {
    DcgmEntityStatusUnknown = 0,
    DcgmEntityStatusOk = 1,
    DcgmEntityStatusUnsupported = 2,
    DcgmEntityStatusInaccessible = 3,
    DcgmEntityStatusLost = 4,
    DcgmEntityStatusFake = 5,
    DcgmEntityStatusDisabled = 6,
    DcgmEntityStatusDetached = 7
} DcgmEntityStatus_t;

typedef enum dcgmGroupType_enum {
    DCGM_GROUP_DEFAULT = 0,
    DCGM_GROUP_EMPTY = 1,
    DCGM_GROUP_DEFAULT_NVSWITCHES = 2,
    DCGM_GROUP_DEFAULT_INSTANCES = 3,
    DCGM_GROUP_DEFAULT_COMPUTE_INSTANCES = 4,
    DCGM_GROUP_DEFAULT_EVERYTHING = 5
} dcgmGroupType_t;

typedef enum dcgmHealthSystems_enum {
    DCGM_HEALTH_WATCH_PCIE = 0x1,
    DCGM_HEALTH_WATCH_NVLINK = 0x2,
    DCGM_HEALTH_WATCH_PMU = 0x4,
    DCGM_HEALTH_WATCH_MCU = 0x8,
    DCGM_HEALTH_WATCH_MEM = 0x10,
    DCGM_HEALTH_WATCH_SM = 0x20,
    DCGM_HEALTH_WATCH_INFOROM = 0x40,
    DCGM_HEALTH_WATCH_THERMAL = 0x80,
    DCGM_HEALTH_WATCH_POWER = 0x100,
    DCGM_HEALTH_WATCH_DRIVER = 0x200,
    DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL = 0x400,
    DCGM_HEALTH_WATCH_NVSWITCH_FATAL = 0x800,
    DCGM_HEALTH_WATCH_CONNECTX = 0x1000,
    DCGM_HEALTH_WATCH_ALL = 0xFFFFFFFF
} dcgmHealthSystems_t;

typedef enum dcgmHealthWatchResult_enum {
    DCGM_HEALTH_RESULT_PASS = 0,
    DCGM_HEALTH_RESULT_WARN = 10,
    DCGM_HEALTH_RESULT_FAIL = 20
} dcgmHealthWatchResults_t;

typedef enum dcgmChipArchitecture_enum {
    DCGM_CHIP_ARCH_OLDER = 1,
    DCGM_CHIP_ARCH_KEPLER = 2,
    DCGM_CHIP_ARCH_MAXWELL = 3,
    DCGM_CHIP_ARCH_PASCAL = 4,
    DCGM_CHIP_ARCH_VOLTA = 5,
    DCGM_CHIP_ARCH_TURING = 6,
    DCGM_CHIP_ARCH_AMPERE = 7,
    DCGM_CHIP_ARCH_ADA = 8,
    DCGM_CHIP_ARCH_HOPPER = 9,
    DCGM_CHIP_ARCH_BLACKWELL = 10,
    DCGM_CHIP_ARCH_UNKNOWN = 0xffffffff
} dcgmChipArchitecture_t;

typedef enum DcgmLoggingSeverity_enum {
    DcgmLoggingSeverityUnspecified = -1,
    DcgmLoggingSeverityNone = 0,
    DcgmLoggingSeverityFatal = 1,
    DcgmLoggingSeverityError = 2,
    DcgmLoggingSeverityWarning = 3,
    DcgmLoggingSeverityInfo = 4,
    DcgmLoggingSeverityDebug = 5,
    DcgmLoggingSeverityVerbose = 6
} DcgmLoggingSeverity_t;

/* MIG slice profile; only its size matters to this project */
typedef enum dcgmMigProfile_enum {
    DcgmMigProfileNone = 0
} dcgmMigProfile_t;

/* ---- limits and special values ----------------------------------------- */
#define DCGM_MAX_NUM_DEVICES 32
#define DCGM_MAX_NUM_SWITCHES 12
#define DCGM_NVLINK_MAX_LINKS_PER_GPU 36
#define DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3 18
#define DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH 256
#define DCGM_MAX_STR_LENGTH 256
#define DCGM_MAX_BLOB_LENGTH 4096
#define DCGM_MAX_CLOCKS 256
#define DCGM_MAX_NUM_GROUPS 64
#define DCGM_MAX_NUM_FIELD_GROUPS 64
#define DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP 128
#define DCGM_GROUP_MAX_ENTITIES_V2 1024
#define DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2 1024
#define DCGM_MAX_INSTANCES_PER_GPU 8
#define DCGM_MAX_HIERARCHY_INFO 448
#define DCGM_MAX_NUM_CPUS 8
#define DCGM_MAX_NUM_CPU_CORES 1024
#define DCGM_MAX_AGE_USEC_DEFAULT 30000000
#define DCGM_HE_PORT_NUMBER 5555
#define DCGM_PROF_MAX_NUM_GROUPS_V2 10
#define DCGM_PROF_MAX_FIELD_IDS_PER_GROUP_V2 64
#define DCGM_FI_MAX_FIELDS 1534

#define DCGM_GROUP_ALL_GPUS 0x7fffffff
#define DCGM_GROUP_ALL_NVSWITCHES 0x7ffffffe
#define DCGM_GROUP_ALL_INSTANCES 0x7ffffffd
#define DCGM_GROUP_ALL_COMPUTE_INSTANCES 0x7ffffffc
#define DCGM_GROUP_ALL_ENTITIES 0x7ffffffb
#define DCGM_GROUP_NULL 0x7ffffffa
#define DCGM_EMBEDDED_HANDLE 0x7fffffff

#define DCGM_FV_FLAG_LIVE_DATA 1
#define DCGM_GEGE_FLAG_ONLY_SUPPORTED 1

#define DCGM_FS_GLOBAL 0
#define DCGM_FS_ENTITY 1
#define DCGM_FS_DEVICE 1

/* field type codes are the ASCII letters DCGM stores in fieldType */
#define DCGM_FT_BINARY 98
#define DCGM_FT_DOUBLE 100
#define DCGM_FT_INT64 105
#define DCGM_FT_STRING 115
#define DCGM_FT_TIMESTAMP 116

/* blank sentinels: a value at or above *_BLANK carries no reading */
#define DCGM_INT8_BLANK 0x70
#define DCGM_INT32_BLANK 0x7ffffff0
#define DCGM_INT32_NOT_FOUND 0x7ffffff1
#define DCGM_INT32_NOT_SUPPORTED 0x7ffffff2
#define DCGM_INT32_NOT_PERMISSIONED 0x7ffffff3
#define DCGM_INT64_BLANK 0x7ffffffffffffff0
#define DCGM_INT64_NOT_FOUND 0x7ffffffffffffff1
#define DCGM_INT64_NOT_SUPPORTED 0x7ffffffffffffff2
#define DCGM_INT64_NOT_PERMISSIONED 0x7ffffffffffffff3

/* version stamps: sizeof(struct) | (version << 24), checked at compile
 * time in native/engine/api/abi_check.c and against abi-layout.tsv in the tests */
#define dcgmFieldValue_version1 0x01001018
#define dcgmFieldValue_version2 0x02001020
#define dcgmInjectFieldValue_version1 0x01001018
#define dcgmInjectFieldValue_version 0x01001018
#define dcgmDeviceAttributes_version3 0x03001464
#define dcgmDeviceAttributes_version 0x03001464
#define dcgmDeviceIdentifiers_version1 0x01000810
#define dcgmDeviceSupportedClockSets_version1 0x01000c08
#define dcgmClockSet_version1 0x0100000c
#define dcgmDeviceThermals_version1 0x0100000c
#define dcgmDevicePowerLimits_version1 0x01000018
#define dcgmDeviceMemoryUsage_version1 0x01000014
#define dcgmDeviceSettings_version2 0x02000010
#define dcgmConnectV2Params_version1 0x01000008
#define dcgmConnectV2Params_version2 0x02000010
#define dcgmConnectV2Params_version 0x02000010
#define dcgmConnectV3Params_version1 0x0100000c
#define dcgmConnectV3Params_version 0x0100000c
#define dcgmStartEmbeddedV2Params_version1 0x01000048
#define dcgmStartEmbeddedV2Params_version2 0x02000050
#define dcgmStartEmbeddedV2Params_version3 0x03000068
#define dcgmStartEmbeddedV2Params_version 0x03000068
#define dcgmGroupInfo_version2 0x02000308
#define dcgmGroupInfo_version3 0x03002108
#define dcgmGroupInfo_version 0x03002108
#define dcgmFieldGroupInfo_version1 0x01000210
#define dcgmFieldGroupInfo_version 0x01000210
#define dcgmAllFieldGroup_version1 0x01008408
#define dcgmAllFieldGroup_version 0x01008408
#define dcgmHealthResponse_version5 0x0510500c
#define dcgmHealthResponse_version 0x0510500c
#define dcgmHealthSetParams_version2 0x02000028
#define dcgmMigHierarchy_version2 0x02011f08
#define dcgmMigHierarchy_version 0x02011f08
#define dcgmCpuHierarchyOwnedCores_version1 0x01000088
#define dcgmCpuHierarchy_version1 0x01000488
#define dcgmCpuHierarchy_version2 0x02000c88
#define dcgmCpuHierarchy_version 0x02000c88
#define dcgmProfGetMetricGroups_version3 0x03000560
#define dcgmProfGetMetricGroups_version 0x03000560
#define dcgmVersionInfo_version2 0x02000204
#define dcgmVersionInfo_version 0x02000204
#define dcgmHostengineHealth_version1 0x01000008
#define dcgmHostengineHealth_version 0x01000008
#define dcgmCreateFakeEntities_version2 0x02002308
#define dcgmCreateFakeEntities_version 0x02002308
#define dcgmNvLinkStatus_version4 0x040039bc
#define dcgmNvLinkStatus_version5 0x050042bc
#define dcgmNvLinkStatus_version 0x050042bc
#define dcgmSetNvLinkLinkState_version1 0x01000018
#define dcgmConfig_version2 0x02000048
#define dcgmConfig_version 0x02000048
#define dcgmPolicy_version1 0x01000090
#define dcgmPolicy_version 0x01000090
#define dcgmPolicyCallbackResponse_version2 0x02000020
#define dcgmPolicyCallbackResponse_version 0x02000020
/* version stamps of requests api_versioned.c checks (only the leading
 * version field of those structs is read, so the structs are not declared) */
#define dcgmVgpuConfig_version1 0x01000028
#define dcgmVgpuConfig_version 0x01000028
#define dcgmPidInfo_version2 0x02004528
#define dcgmPidInfo_version 0x02004528
#define dcgmJobInfo_version3 0x030098a8
#define dcgmJobInfo_version 0x030098a8
#define dcgmRunDiag_version7 0x070054d0
#define dcgmRunDiag_version8 0x0801c818
#define dcgmRunDiag_version9 0x0901cfe8
#define dcgmRunDiag_version10 0x0a01d1e8
#define dcgmDiagResponse_version7 0x07099290
#define dcgmDiagResponse_version8 0x080d9690
#define dcgmDiagResponse_version9 0x0914f4dc
#define dcgmDiagResponse_version10 0x0a155abc
#define dcgmDiagResponse_version11 0x0b155abc
#define dcgmDiagResponse_version12 0x0c155abc
#define dcgmIntrospectMemory_version1 0x01000010
#define dcgmIntrospectMemory_version 0x01000010
#define dcgmIntrospectCpuUtil_version1 0x01000020
#define dcgmIntrospectCpuUtil_version 0x01000020
#define dcgmVgpuDeviceAttributes_version7 0x070029a0
#define dcgmVgpuDeviceAttributes_version 0x070029a0
#define dcgmEnvVarInfo_version1 0x01000208
#define dcgmEnvVarInfo_version 0x01000208
#define dcgmFieldSummaryRequest_version1 0x01000068
#define dcgmVgpuInstanceAttributes_version1 0x01000154

/* ---- field values ------------------------------------------------------ */
/* value union shared by v1 and v2 records; blob is the largest member */
typedef union dcgmFieldValueUnion_u {
    int64_t i64;
    double dbl;
    char str[256];
    char blob[4096];
} dcgmFieldValueUnion_t;

/* v1: the record every enumeration callback receives */
typedef struct dcgmFieldValue_v1_s {
    unsigned int version;
    unsigned short fieldId;
    unsigned short fieldType;   /* ASCII type letter */
    int status;                 /* dcgmReturn_t of this one reading */
    int64_t ts;                 /* microseconds since the Unix epoch */
    dcgmFieldValueUnion_t value;
} dcgmFieldValue_v1;

/* v2: carries its entity, used by dcgmEntitiesGetLatestValues */
typedef struct dcgmFieldValue_v2_s {
    unsigned int version;
    dcgm_field_entity_group_t entityGroupId;
    dcgm_field_eid_t entityId;
    unsigned short fieldId;
    unsigned short fieldType;
    int status;
    unsigned int unused;
    int64_t ts;
    dcgmFieldValueUnion_t value;
} dcgmFieldValue_v2;

/* injection uses the v1 layout unchanged */
typedef dcgmFieldValue_v1 dcgmInjectFieldValue_v1;
typedef dcgmFieldValue_v1 dcgmInjectFieldValue_t;

typedef struct dcgmGroupEntityPair_s {
    dcgm_field_entity_group_t entityGroupId;
    dcgm_field_eid_t entityId;
} dcgmGroupEntityPair_t;

/* one error of a dcgmStatus_t list */
typedef struct {
    unsigned int gpuId;
    short fieldId;
    int status;
} dcgmErrorInfo_t;

/* ---- connecting and starting ------------------------------------------- */
typedef struct dcgmConnectV2Params_v1_s {
    unsigned int version;
    unsigned int persistAfterDisconnect;
} dcgmConnectV2Params_v1;

typedef struct dcgmConnectV2Params_v2_s {
    unsigned int version;
    unsigned int persistAfterDisconnect;
    unsigned int timeoutMs;
    unsigned int addressIsUnixSocket;
} dcgmConnectV2Params_v2;
typedef dcgmConnectV2Params_v2 dcgmConnectV2Params_t;

typedef struct dcgmConnectV3Params_v1_s {
    unsigned int version;
    unsigned int persistAfterDisconnect;
    unsigned int timeoutMs;
} dcgmConnectV3Params_v1;
typedef dcgmConnectV3Params_v1 dcgmConnectV3Params_t;

typedef struct dcgmStartEmbeddedV2Params_v1_s {
    unsigned int version;
    dcgmOperationMode_t opMode;
    dcgmHandle_t dcgmHandle;        /* OUT */
    const char *logFile;
    DcgmLoggingSeverity_t severity;
    unsigned int denyListCount;
    unsigned int denyList[10];
} dcgmStartEmbeddedV2Params_v1;

typedef struct dcgmStartEmbeddedV2Params_v2_s {
    unsigned int version;
    dcgmOperationMode_t opMode;
    dcgmHandle_t dcgmHandle;
    const char *logFile;
    DcgmLoggingSeverity_t severity;
    unsigned int denyListCount;
    const char *serviceAccount;
    unsigned int denyList[10];
} dcgmStartEmbeddedV2Params_v2;

typedef struct dcgmStartEmbeddedV2Params_v3_s {
    unsigned int version;
    dcgmOperationMode_t opMode;
    dcgmHandle_t dcgmHandle;
    const char *logFile;
    DcgmLoggingSeverity_t severity;
    unsigned int denyListCount;
    const char *serviceAccount;
    unsigned int denyList[16];
} dcgmStartEmbeddedV2Params_v3;

/* ---- device attributes ------------------------------------------------- */
typedef struct dcgmClockSet_v1_s {
    unsigned int version;
    unsigned int memClock;
    unsigned int smClock;
} dcgmClockSet_v1;

typedef struct dcgmDeviceSupportedClockSets_v1_s {
    unsigned int version;
    unsigned int count;
    dcgmClockSet_v1 clockSet[256];
} dcgmDeviceSupportedClockSets_v1;

typedef struct dcgmDeviceThermals_v1_s {
    unsigned int version;
    unsigned int slowdownTemp;
    unsigned int shutdownTemp;
} dcgmDeviceThermals_v1;

typedef struct dcgmDevicePowerLimits_v1_s {
    unsigned int version;
    unsigned int curPowerLimit;
    unsigned int defaultPowerLimit;
    unsigned int enforcedPowerLimit;
    unsigned int minPowerLimit;
    unsigned int maxPowerLimit;
} dcgmDevicePowerLimits_v1;

typedef struct dcgmDeviceIdentifiers_v1_s {
    unsigned int version;
    char brandName[256];
    char deviceName[256];
    char pciBusId[256];
    char serial[256];
    char uuid[256];
    char vbios[256];
    char inforomImageVersion[256];
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char driverVersion[256];
    unsigned int virtualizationMode;
} dcgmDeviceIdentifiers_v1;

typedef struct dcgmDeviceMemoryUsage_v1_s {
    unsigned int version;
    unsigned int bar1Total;
    unsigned int fbTotal;
    unsigned int fbUsed;
    unsigned int fbFree;
} dcgmDeviceMemoryUsage_v1;

typedef struct dcgmDeviceSettings_v2_s {
    unsigned int version;
    unsigned int persistenceModeEnabled;
    unsigned int migModeEnabled;
    unsigned int confidentialComputeMode;
} dcgmDeviceSettings_v2;

typedef struct dcgmDeviceAttributes_v3_s {
    unsigned int version;
    dcgmDeviceSupportedClockSets_v1 clockSets;
    dcgmDeviceThermals_v1 thermalSettings;
    dcgmDevicePowerLimits_v1 powerLimits;
    dcgmDeviceIdentifiers_v1 identifiers;
    dcgmDeviceMemoryUsage_v1 memoryUsage;
    dcgmDeviceSettings_v2 settings;
} dcgmDeviceAttributes_v3;

/* ---- configuration (dcgmConfigSet / Get / Enforce) --------------------- */
typedef enum {
    DCGM_CONFIG_TARGET_STATE = 0,   /* what dcgmConfigSet asked for */
    DCGM_CONFIG_CURRENT_STATE = 1   /* what the GPU reports now */
} dcgmConfigType_t;

typedef enum {
    DCGM_CONFIG_POWER_CAP_INDIVIDUAL = 0, /* val is each GPU's cap */
    DCGM_CONFIG_POWER_BUDGET_GROUP = 1    /* val is shared by the group's GPUs */
} dcgmConfigPowerLimitType_t;

#define DCGM_CONFIG_COMPUTEMODE_DEFAULT 0
#define DCGM_CONFIG_COMPUTEMODE_PROHIBITED 1
#define DCGM_CONFIG_COMPUTEMODE_EXCLUSIVE_PROCESS 2
#define DCGM_POWER_PROFILE_ARRAY_SIZE 8

/* every member below may be DCGM_INT32_BLANK: "leave it as it is" */
typedef struct {
    unsigned int syncBoost;
    dcgmClockSet_v1 targetClocks;
} dcgmConfigPerfStateSettings_t;

typedef struct {
    dcgmConfigPowerLimitType_t type;
    unsigned int val;               /* watts */
} dcgmConfigPowerLimit_t;

typedef struct {
    unsigned int version;
    unsigned int gpuId;
    unsigned int eccMode;
    unsigned int computeMode;
    dcgmConfigPerfStateSettings_t perfState;
    dcgmConfigPowerLimit_t powerLimit;
    unsigned int workloadPowerProfiles[DCGM_POWER_PROFILE_ARRAY_SIZE];
} dcgmConfig_v2;
typedef dcgmConfig_v2 dcgmConfig_t;
typedef dcgmDeviceAttributes_v3 dcgmDeviceAttributes_t;

/* ---- groups and field groups ------------------------------------------- */
typedef struct dcgmGroupInfo_v3_s {
    unsigned int version;
    unsigned int count;
    char groupName[256];
    dcgmGroupEntityPair_t entityList[1024];
} dcgmGroupInfo_v3;
typedef dcgmGroupInfo_v3 dcgmGroupInfo_t;

typedef struct dcgmFieldGroupInfo_v1_s {
    unsigned int version;
    unsigned int numFieldIds;
    dcgmFieldGrp_t fieldGroupId;    /* IN for GetInfo, OUT for GetAll */
    char fieldGroupName[256];
    unsigned short fieldIds[128];
} dcgmFieldGroupInfo_v1;
typedef dcgmFieldGroupInfo_v1 dcgmFieldGroupInfo_t;

typedef struct dcgmAllFieldGroup_v1_s {
    unsigned int version;
    unsigned int numFieldGroups;
    dcgmFieldGroupInfo_v1 fieldGroups[64];
} dcgmAllFieldGroup_v1;
typedef dcgmAllFieldGroup_v1 dcgmAllFieldGroup_t;

/* ---- health ------------------------------------------------------------ */
typedef struct dcgmDiagErrorDetail_s {
    char msg[1024];
    int code;
} dcgmDiagErrorDetail_t;

typedef struct dcgmIncidentInfo_s {
    dcgmHealthSystems_t system;
    dcgmHealthWatchResults_t health;
    dcgmDiagErrorDetail_t error;
    dcgmGroupEntityPair_t entityInfo;
} dcgmIncidentInfo_t;

typedef struct dcgmHealthResponse_v5_s {
    unsigned int version;
    dcgmHealthWatchResults_t overallHealth;
    unsigned int incidentCount;
    dcgmIncidentInfo_t incidents[1024];
} dcgmHealthResponse_v5;
typedef dcgmHealthResponse_v5 dcgmHealthResponse_t;

typedef struct dcgmHealthSetParams_v2_s {
    unsigned int version;
    dcgmGpuGrp_t groupId;
    dcgmHealthSystems_t systems;
    long long updateInterval;   /* microseconds */
    double maxKeepAge;          /* seconds */
} dcgmHealthSetParams_v2;

/* ---- policy (dcgmPolicySet / Get / Register_v2 / Unregister) ----------- */
/* The bits of a policy's condition mask; the index of each bit (its log2) is
 * the slot of its parameter in dcgmPolicy_v1.parms. */
typedef enum dcgmPolicyCondition_enum {
    /* DBE: volatile double-bit ECC errors grew; PCI: the PCIe replay counter
     * grew; MAX_PAGES_RETIRED: retired pages above parms[2]; THERMAL:
     * temperature above parms[3]; POWER: board power above parms[4]; NVLINK:
     * an NvLink error counter grew; XID: any XID */
    DCGM_POLICY_COND_DBE = 0x1,
    DCGM_POLICY_COND_PCI = 0x2,
    DCGM_POLICY_COND_MAX_PAGES_RETIRED = 0x4,
    DCGM_POLICY_COND_THERMAL = 0x8,
    DCGM_POLICY_COND_POWER = 0x10,
    DCGM_POLICY_COND_NVLINK = 0x20,
    DCGM_POLICY_COND_XID = 0x40
} dcgmPolicyCondition_t;
#define DCGM_POLICY_COND_IDX_DBE 0
#define DCGM_POLICY_COND_IDX_PCI 1
#define DCGM_POLICY_COND_IDX_MAX_PAGES_RETIRED 2
#define DCGM_POLICY_COND_IDX_THERMAL 3
#define DCGM_POLICY_COND_IDX_POWER 4
#define DCGM_POLICY_COND_IDX_NVLINK 5
#define DCGM_POLICY_COND_IDX_XID 6
#define DCGM_POLICY_COND_MAX 7

/* One condition's parameter: a flag (tag 0) or a number (tag 1).  (The
 * unions here are named types of this header only; DCGM nests them.) */
typedef union dcgmPolicyParamValue_u {
    unsigned int boolean;
    unsigned long long llval;
} dcgmPolicyParamValue_t;

typedef struct dcgmPolicyConditionParams_st {
    int tag;                    /* 0: val.boolean, 1: val.llval */
    dcgmPolicyParamValue_t val;
} dcgmPolicyConditionParams_t;

typedef struct dcgmPolicy_v1_st {
    unsigned int version;       /* dcgmPolicy_version1 */
    dcgmPolicyCondition_t condition;
    int mode;                   /* automated 0, manual 1 */
    int isolation;              /* none 0 */
    int action;                 /* none 0, GPU reset 1 (deprecated) */
    int validation;             /* none 0, short 1 .. extra long 4 */
    int response;               /* none 0 */
    dcgmPolicyConditionParams_t parms[7];
} dcgmPolicy_v1;
typedef dcgmPolicy_v1 dcgmPolicy_t;

/* What a callback learns of each kind of violation.  Timestamps are the
 * offending sample's, in microseconds since the epoch. */
typedef struct dcgmPolicyConditionDbe_st {
    long long timestamp;
    int location;               /* L1 0, L2 1, device 2, register 3, texture 4 */
    unsigned int numerrors;     /* the counter's value */
} dcgmPolicyConditionDbe_t;

typedef struct dcgmPolicyConditionPci_st {
    long long timestamp;
    unsigned int counter;       /* the replay counter's value */
} dcgmPolicyConditionPci_t;

typedef struct dcgmPolicyConditionMpr_st {
    long long timestamp;
    unsigned int sbepages;
    unsigned int dbepages;
} dcgmPolicyConditionMpr_t;

typedef struct dcgmPolicyConditionThermal_st {
    long long timestamp;
    unsigned int thermalViolation;  /* degrees C */
} dcgmPolicyConditionThermal_t;

typedef struct dcgmPolicyConditionPower_st {
    long long timestamp;
    unsigned int powerViolation;    /* watts */
} dcgmPolicyConditionPower_t;

typedef struct dcgmPolicyConditionNvlink_st {
    long long timestamp;
    unsigned short fieldId;     /* which NvLink error counter */
    unsigned int counter;       /* its value */
} dcgmPolicyConditionNvlink_t;

typedef struct dcgmPolicyConditionXID_st {
    long long timestamp;
    unsigned int errnum;
} dcgmPolicyConditionXID_t;

/* the violation's details, by condition */
typedef union dcgmPolicyViolationValue_u {
    dcgmPolicyConditionDbe_t dbe;
    dcgmPolicyConditionPci_t pci;
    dcgmPolicyConditionMpr_t mpr;
    dcgmPolicyConditionThermal_t thermal;
    dcgmPolicyConditionPower_t power;
    dcgmPolicyConditionNvlink_t nvlink;
    dcgmPolicyConditionXID_t xid;
} dcgmPolicyViolationValue_t;

typedef struct dcgmPolicyCallbackResponse_v2_st {
    unsigned int version;       /* dcgmPolicyCallbackResponse_version2 */
    dcgmPolicyCondition_t condition;  /* the one bit violated */
    dcgmPolicyViolationValue_t val;
    unsigned int gpuId;
} dcgmPolicyCallbackResponse_v2;
typedef dcgmPolicyCallbackResponse_v2 dcgmPolicyCallbackResponse_t;

/* dcgmPolicyRegister_v2's callback; its return value is ignored. */
typedef int (*fpRecvUpdates)(dcgmPolicyCallbackResponse_t *response, uint64_t userData);

/* ---- MIG hierarchy and fake entities ----------------------------------- */
typedef struct dcgmMigHierarchyInfo_s {
    dcgmGroupEntityPair_t entity;
    dcgmGroupEntityPair_t parent;
    dcgmMigProfile_t sliceProfile;
} dcgmMigHierarchyInfo_t;

typedef struct dcgmMigEntityInfo_s {
    char gpuUuid[128];
    unsigned int nvmlGpuIndex;
    unsigned int nvmlInstanceId;
    unsigned int nvmlComputeInstanceId;
    unsigned int nvmlMigProfileId;
    unsigned int nvmlProfileSlices;
} dcgmMigEntityInfo_t;

typedef struct dcgmMigHierarchyInfo_v2_s {
    dcgmGroupEntityPair_t entity;
    dcgmGroupEntityPair_t parent;
    dcgmMigEntityInfo_t info;
} dcgmMigHierarchyInfo_v2;

typedef struct dcgmMigHierarchy_v2_s {
    unsigned int version;
    unsigned int count;
    dcgmMigHierarchyInfo_v2 entityList[448];
} dcgmMigHierarchy_v2;

typedef struct dcgmCreateFakeEntities_v2_s {
    unsigned int version;
    unsigned int numToCreate;
    dcgmMigHierarchyInfo_t entityList[448];
} dcgmCreateFakeEntities_v2;
typedef dcgmCreateFakeEntities_v2 dcgmCreateFakeEntities_t;

/* ---- CPU hierarchy ------------------------------------------------------ */
/* bit n of the mask: core (logical CPU) n belongs to the CPU */
typedef struct dcgmCpuHierarchyOwnedCores_v1_s {
    unsigned int version;
    uint64_t bitmask[16];   /* DCGM_MAX_NUM_CPU_CORES bits */
} dcgmCpuHierarchyOwnedCores_v1;
typedef dcgmCpuHierarchyOwnedCores_v1 dcgmCpuHierarchyOwnedCores_t;

/* DCGM declares the two per-CPU records inside their hierarchies, as
 * struct dcgmCpuHierarchyCpu_v1 and _v2; the layout is the same */
typedef struct dcgmCpuHierarchyCpu_v1 {
    unsigned int cpuId;
    dcgmCpuHierarchyOwnedCores_v1 ownedCores;
} dcgmCpuHierarchyCpu_v1;

typedef struct dcgmCpuHierarchyCpu_v2 {
    unsigned int cpuId;
    dcgmCpuHierarchyOwnedCores_v1 ownedCores;
    char serial[256];
} dcgmCpuHierarchyCpu_v2;

typedef struct dcgmCpuHierarchy_v1_s {
    unsigned int version;
    unsigned int numCpus;
    dcgmCpuHierarchyCpu_v1 cpus[8];
} dcgmCpuHierarchy_v1;

typedef struct dcgmCpuHierarchy_v2_s {
    unsigned int version;
    unsigned int numCpus;
    dcgmCpuHierarchyCpu_v2 cpus[8];
} dcgmCpuHierarchy_v2;
typedef dcgmCpuHierarchy_v2 dcgmCpuHierarchy_t;

/* ---- profiling metric groups ------------------------------------------- */
typedef struct dcgmProfMetricGroupInfo_v2_s {
    unsigned short majorId;
    unsigned short minorId;
    unsigned int numFieldIds;
    unsigned short fieldIds[64];
} dcgmProfMetricGroupInfo_v2;

typedef struct dcgmProfGetMetricGroups_v3_s {
    unsigned int version;
    unsigned int unused;
    unsigned int gpuId;
    unsigned int numMetricGroups;
    dcgmProfMetricGroupInfo_v2 metricGroups[10];
} dcgmProfGetMetricGroups_v3;
typedef dcgmProfGetMetricGroups_v3 dcgmProfGetMetricGroups_t;

/* ---- versions and liveness --------------------------------------------- */
typedef struct dcgmVersionInfo_v2_s {
    unsigned int version;
    char rawBuildInfoString[512];
} dcgmVersionInfo_v2;
typedef dcgmVersionInfo_v2 dcgmVersionInfo_t;

typedef struct dcgmHostengineHealth_v1_s {
    unsigned int version;
    unsigned int overallHealth;     /* 0 = healthy */
} dcgmHostengineHealth_v1;
typedef dcgmHostengineHealth_v1 dcgmHostengineHealth_t;

/* ---- NvLink link states ------------------------------------------------ */
typedef enum dcgmNvLinkLinkState_enum {
    DcgmNvLinkLinkStateNotSupported = 0,   /* no such link on this device */
    DcgmNvLinkLinkStateDisabled = 1,
    DcgmNvLinkLinkStateDown = 2,
    DcgmNvLinkLinkStateUp = 3
} dcgmNvLinkLinkState_t;

/* one GPU's links: 18 of them in the v3 record, 36 in the v4 record */
typedef struct {
    dcgm_field_eid_t entityId;
    dcgmNvLinkLinkState_t linkState[DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3];
} dcgmNvLinkGpuLinkStatus_v3;

typedef struct {
    dcgm_field_eid_t entityId;
    dcgmNvLinkLinkState_t linkState[DCGM_NVLINK_MAX_LINKS_PER_GPU];
} dcgmNvLinkGpuLinkStatus_v4;

typedef struct {
    dcgm_field_eid_t entityId;
    dcgmNvLinkLinkState_t linkState[DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH];
} dcgmNvLinkNvSwitchLinkStatus_t;

/* dcgmGetNvLinkLinkStatus's answer; v5 is the current one */
typedef struct {
    unsigned int version;
    unsigned int numGpus;
    dcgmNvLinkGpuLinkStatus_v3 gpus[DCGM_MAX_NUM_DEVICES];
    unsigned int numNvSwitches;
    dcgmNvLinkNvSwitchLinkStatus_t nvSwitches[DCGM_MAX_NUM_SWITCHES];
} dcgmNvLinkStatus_v4;

typedef struct {
    unsigned int version;
    unsigned int numGpus;
    dcgmNvLinkGpuLinkStatus_v4 gpus[DCGM_MAX_NUM_DEVICES];
    unsigned int numNvSwitches;
    dcgmNvLinkNvSwitchLinkStatus_t nvSwitches[DCGM_MAX_NUM_SWITCHES];
} dcgmNvLinkStatus_v5;
typedef dcgmNvLinkStatus_v5 dcgmNvLinkStatus_t;

/* dcgmSetEntityNvLinkLinkState's request (a test API in DCGM) */
typedef struct {
    unsigned int version;
    dcgm_field_entity_group_t entityGroupId;
    dcgm_field_eid_t entityId;
    unsigned int linkId;
    dcgmNvLinkLinkState_t linkState;
    unsigned int unused;            /* 0 */
} dcgmSetNvLinkLinkState_v1;

/* dcgmHostengineEnvironmentVariableInfo's request and answer */
typedef struct {
    unsigned int version;
    char envVarName[DCGM_MAX_STR_LENGTH];   /* in */
    char envVarValue[DCGM_MAX_STR_LENGTH];  /* out */
    dcgmReturn_t ret;                       /* out: the lookup's own result */
} dcgmEnvVarInfo_v1;
typedef dcgmEnvVarInfo_v1 dcgmEnvVarInfo_t;

/* dcgmGetFieldSummary: the summaries a request may ask for, one bit each,
 * answered in bit order in response.values */
#define DCGM_SUMMARY_MIN 0x00000001
#define DCGM_SUMMARY_MAX 0x00000002
#define DCGM_SUMMARY_AVG 0x00000004
#define DCGM_SUMMARY_SUM 0x00000008
#define DCGM_SUMMARY_COUNT 0x00000010
#define DCGM_SUMMARY_INTEGRAL 0x00000020
#define DCGM_SUMMARY_DIFF 0x00000040
#define DCGM_SUMMARY_SIZE 7

typedef struct {
    unsigned int fieldType;         /* DCGM_FT_INT64 or DCGM_FT_DOUBLE */
    unsigned int summaryCount;      /* how many of values are filled */
    union {
        int64_t i64;
        double fp64;
    } values[DCGM_SUMMARY_SIZE];
} dcgmSummaryResponse_t;

typedef struct {
    unsigned int version;
    unsigned short fieldId;
    dcgm_field_entity_group_t entityGroupId;
    dcgm_field_eid_t entityId;
    uint32_t summaryTypeMask;       /* DCGM_SUMMARY_* bits */
    uint64_t startTime;             /* us since 1970; 0: from the oldest sample */
    uint64_t endTime;               /* us since 1970, inclusive; 0: to the newest */
    dcgmSummaryResponse_t response; /* out */
} dcgmFieldSummaryRequest_v1;
typedef dcgmFieldSummaryRequest_v1 dcgmFieldSummaryRequest_t;

/* ---- field metadata ---------------------------------------------------- */
typedef struct dcgm_field_output_format_s {
    char shortName[10];
    char unit[4];
    short width;
} dcgm_field_output_format_t;

typedef struct dcgm_field_meta_s {
    unsigned short fieldId;
    char fieldType;             /* DCGM_FT_* letter */
    unsigned char size;
    char tag[48];
    int scope;                  /* DCGM_FS_* */
    int nvmlFieldId;
    dcgm_field_entity_group_t entityLevel;
    dcgm_field_output_format_t *valueFormat;
} dcgm_field_meta_t;
typedef const dcgm_field_meta_t *dcgm_field_meta_p;

/* ---- callbacks --------------------------------------------------------- */
/* both enumeration callbacks get v1 records, one per call; non-zero stops */
typedef int (*dcgmFieldValueEnumeration_f)(unsigned int gpuId, dcgmFieldValue_v1 *values,
                                           int numValues, void *userData);
typedef int (*dcgmFieldValueEntityEnumeration_f)(dcgm_field_entity_group_t entityGroupId,
                                                 dcgm_field_eid_t entityId,
                                                 dcgmFieldValue_v1 *values, int numValues,
                                                 void *userData);

/* ---- dcgm-collector's engine only (not in NVIDIA's libdcgm) -------------
 * What the embedded engine spent per field: samples its passes took, those
 * taken more than half a watch interval late, and its value source's reads
 * of the hardware (NVML: cost, own cadence, and for the energy estimate the
 * corrections each true read made). */
typedef struct {
    unsigned int fieldId;
    unsigned int reserved;
    long long samples;
    long long lateSamples;
    long long reads;
    long long readNs;
    long long lateReads;
    long long periodUs;          /* the source's own cadence for the field; 0 = each sample */
    long long corrections;
    double lastCorrection;       /* estimate minus true value, in the field's unit */
    double maxAbsCorrection;
} dcgmSimFieldStats_t;

/* ---- cache manager field info (dcgmGetCacheManagerFieldInfo) ---------- */
/* Who holds a watch on a field */
typedef enum {
    DcgmWatcherTypeClient = 0,
    DcgmWatcherTypeHostEngine = 1,
    DcgmWatcherTypeHealthWatch = 2,
    DcgmWatcherTypePolicyManager = 3,
    DcgmWatcherTypeCacheManager = 4,
    DcgmWatcherTypeConfigManager = 5,
    DcgmWatcherTypeNvSwitchManager = 6,
    DcgmWatcherTypeCount = 7
} DcgmWatcherType_t;

/* flags bit: the field has at least one watcher */
#define DCGM_CMI_F_WATCHED 1
/* watchers[] holds at most this many */
#define DCGM_CM_FIELD_INFO_NUM_WATCHERS 10

typedef struct dcgm_cm_field_info_watcher_s {
    DcgmWatcherType_t watcherType;
    unsigned int connectionId;        /* 0: not a remote connection */
    long long monitorIntervalUsec;    /* this watcher's sampling interval */
    long long maxAgeUsec;             /* this watcher's retention */
} dcgm_cm_field_info_watcher_t;

typedef struct dcgmCacheManagerFieldInfo_v4_s {
    unsigned int version;
    unsigned int flags;               /* DCGM_CMI_F_* */
    unsigned int entityId;            /* in: entity asked about */
    unsigned int entityGroupId;       /* in: its dcgm_field_entity_group_t */
    unsigned short fieldId;           /* in: field asked about */
    short lastStatus;                 /* outcome of the last sampling */
    long long oldestTimestamp;        /* usec since epoch; 0 if nothing cached */
    long long newestTimestamp;
    long long monitorIntervalUsec;    /* effective (fastest) interval */
    long long maxAgeUsec;             /* effective (longest) retention */
    long long execTimeUsec;           /* time spent sampling it */
    long long fetchCount;             /* times it was sampled */
    int numSamples;                   /* samples cached now */
    int numWatchers;                  /* valid entries of watchers[] */
    dcgm_cm_field_info_watcher_t watchers[DCGM_CM_FIELD_INFO_NUM_WATCHERS];
} dcgmCacheManagerFieldInfo_v4_t;

#define dcgmCacheManagerFieldInfo_version4 0x04000140

/* ---- topology, chip architecture, NvLink P2P (dcgmGetDeviceTopology,
 * dcgmGetGroupTopology, dcgmSelectGpusByTopology, dcgmGetNvLinkP2PStatus) ---- */

#define DCGM_AFFINITY_BITMASK_ARRAY_SIZE 8
#define DCGM_TOPO_HINT_F_NONE 0x00000000
#define DCGM_TOPO_HINT_F_IGNOREHEALTH 0x00000001

typedef uint64_t dcgmGpuTopologyLevel_t;

/* the v1 structs carry 32-bit paths and link masks (at most 24 links) */
typedef struct {
    unsigned int version;
    unsigned long cpuAffinityMask[DCGM_AFFINITY_BITMASK_ARRAY_SIZE];
    unsigned int numGpus;
    struct {
        unsigned int gpuId;
        unsigned int path;
        unsigned int localNvLinkIds;
    } gpuPaths[DCGM_MAX_NUM_DEVICES - 1];
} dcgmDeviceTopology_v1;

typedef struct {
    unsigned int version;
    unsigned long cpuAffinityMask[DCGM_AFFINITY_BITMASK_ARRAY_SIZE];
    unsigned int numGpus;
    struct {
        unsigned int gpuId;
        dcgmGpuTopologyLevel_t path;
        uint64_t localNvLinkIds;
    } gpuPaths[DCGM_MAX_NUM_DEVICES - 1];
} dcgmDeviceTopology_v2;
typedef dcgmDeviceTopology_v2 dcgmDeviceTopology_t;

typedef struct {
    unsigned int version;
    unsigned long groupCpuAffinityMask[DCGM_AFFINITY_BITMASK_ARRAY_SIZE];
    unsigned int numaOptimalFlag;
    unsigned int slowestPath;
} dcgmGroupTopology_v1;

typedef struct {
    unsigned int version;
    unsigned long groupCpuAffinityMask[DCGM_AFFINITY_BITMASK_ARRAY_SIZE];
    unsigned int numaOptimalFlag;
    dcgmGpuTopologyLevel_t slowestPath;
} dcgmGroupTopology_v2;
typedef dcgmGroupTopology_v2 dcgmGroupTopology_t;

#define dcgmDeviceTopology_version1 0x010001c0
#define dcgmDeviceTopology_version2 0x02000338
#define dcgmDeviceTopology_version 0x02000338
#define dcgmGroupTopology_version1 0x01000050
#define dcgmGroupTopology_version2 0x02000058
#define dcgmGroupTopology_version 0x02000058

/* NVML's nvmlGpuP2PStatus_t values, one per GPU pair */
typedef enum dcgmNvLinkGpuP2PStatus_enum {
    DcgmNvLinkP2pStatusOK = 0,
    DcgmNvLinkP2pStatusChipsetNotSupported = 1,
    DcgmNvLinkP2pStatusGpuNotSupported = 2,
    DcgmNvLinkP2pStatusTopologyNotSupported = 3,
    DcgmNvLinkP2pStatusDisabledByRegKey = 4,
    DcgmNvLinkP2pStatusNotSupported = 5,
    DcgmNvLinkP2pStatusUnknown = 6
} dcgmNvLinkGpuP2PStatus_t;

typedef struct {
    dcgm_field_eid_t entityId;
    dcgmNvLinkGpuP2PStatus_t linkStatus[DCGM_MAX_NUM_DEVICES];
} dcgmNvLinkGpuLinkP2PStatus_v1;

/* numGpus 0 asks for every GPU; otherwise gpus[0..numGpus).entityId name them */
typedef struct {
    unsigned int version;
    unsigned int numGpus;
    dcgmNvLinkGpuLinkP2PStatus_v1 gpus[DCGM_MAX_NUM_DEVICES];
} dcgmNvLinkP2PStatus_v1;
typedef dcgmNvLinkP2PStatus_v1 dcgmNvLinkP2PStatus_t;
#define dcgmNvLinkP2PStatus_version1 0x01001088

/* CDEF-END */

/* 2^47 and its neighbours: not expressible as cdef integer literals */
#define DCGM_FP64_BLANK 140737488355328.0
#define DCGM_FP64_NOT_FOUND 140737488355329.0
#define DCGM_FP64_NOT_SUPPORTED 140737488355330.0
#define DCGM_FP64_NOT_PERMISSIONED 140737488355331.0

#define DCGM_STR_BLANK "<<<NULL>>>"
#define DCGM_STR_NOT_FOUND "<<<NOT_FOUND>>>"
#define DCGM_STR_NOT_SUPPORTED "<<<NOT_SUPPORTED>>>"
#define DCGM_STR_NOT_PERMISSIONED "<<<NOT_PERM>>>"

#define DCGM_DEFAULT_SOCKET_PATH "/tmp/nv-hostengine"
#define DCGM_UNIX_SOCKET_PREFIX "unix://"
#define DCGM_TCP_SOCKET_PREFIX "tcp://"
#define DCGM_VSOCK_SOCKET_PREFIX "vsock://"


#include "dcgm_functions.h"


/* a path's PCI part sits in the low byte; the NvLink part is one bit for
 * the number of links (bit 8 = 1 link ... bit 43 = 36 links) */
#define DCGM_TOPOLOGY_UNINITIALIZED 0x0ULL
#define DCGM_TOPOLOGY_BOARD 0x1ULL
#define DCGM_TOPOLOGY_SINGLE 0x2ULL
#define DCGM_TOPOLOGY_MULTIPLE 0x4ULL
#define DCGM_TOPOLOGY_HOSTBRIDGE 0x8ULL
#define DCGM_TOPOLOGY_CPU 0x10ULL
#define DCGM_TOPOLOGY_SYSTEM 0x20ULL
#define DCGM_TOPOLOGY_NVLINK1 0x100ULL
#define DCGM_TOPOLOGY_PATH_PCI(x) ((dcgmGpuTopologyLevel_t)((uint64_t)(x) & 0xFFULL))
#define DCGM_TOPOLOGY_PATH_NVLINK(x) ((dcgmGpuTopologyLevel_t)((uint64_t)(x) & 0xFFFFFFFFFFFFFF00ULL))

/* dcgmError_t: the incident codes of health checks and policy violations
 * (dcgm_errors.h); only the ones the engine raises */
typedef enum dcgmError_enum {
    DCGM_FR_PCI_REPLAY_RATE = 3,
    DCGM_FR_VOLATILE_DBE_DETECTED = 4,
    DCGM_FR_PENDING_PAGE_RETIREMENTS = 6,
    DCGM_FR_RETIRED_PAGES_LIMIT = 7,
    DCGM_FR_RETIRED_PAGES_DBE_LIMIT = 8,
    DCGM_FR_CORRUPT_INFOROM = 9,
    DCGM_FR_CLOCKS_EVENT_THERMAL = 10,
    DCGM_FR_POWER_UNREADABLE = 11,
    DCGM_FR_CLOCKS_EVENT_POWER = 12,
    DCGM_FR_NVLINK_ERROR_THRESHOLD = 13,
    DCGM_FR_NVLINK_DOWN = 14,
    DCGM_FR_NVSWITCH_FATAL_ERROR = 15,
    DCGM_FR_NVSWITCH_NON_FATAL_ERROR = 16,
    DCGM_FR_FIELD_VIOLATION = 33,
    DCGM_FR_FIELD_THRESHOLD_DBL = 36,
    DCGM_FR_FAULTY_MEMORY = 52,
    DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD = 70,
    DCGM_FR_NVLINK_ERROR_CRITICAL = 71,
    DCGM_FR_ROW_REMAP_FAILURE = 80,
    DCGM_FR_UNCONTAINED_ERROR = 81,
    DCGM_FR_XID_ERROR = 101,
    DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD = 119,
    DCGM_FR_FALLEN_OFF_BUS = 120,
    DCGM_FR_NVLINK_SYMBOL_BER_THRESHOLD = 121,
    DCGM_FR_IMEX_UNHEALTHY = 122,
    DCGM_FR_FABRIC_PROBE_STATE = 123,
    DCGM_FR_GPU_RECOVERY_RESET = 125,
    DCGM_FR_GPU_RECOVERY_REBOOT = 126,
    DCGM_FR_GPU_RECOVERY_DRAIN_P2P = 127,
    DCGM_FR_GPU_RECOVERY_DRAIN_RESET = 128,
    DCGM_FR_CONTAINED_ERROR = 131,
    DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT = 132,
} dcgmError_t;

#endif /* DCGM_COLLECTOR_DCGM_ABI_H */
