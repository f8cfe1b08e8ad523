/*
 * nvml_abi.h -- the part of NVML's C ABI that the simulated libnvidia-ml.so.1
 * implements, declared from the recorded facts in reference/nvml/:
 * prototypes from protos.tsv, sizes, offsets and numeric values from
 * abi-layout-nvml13.tsv (a probe compiled against the NVML 13 header).
 * tests/unit/engine/test_nvml_abi_layout.py compiles a probe against this
 * file and compares every struct and constant declared here with that table.
 *
 * Only what the library needs is here; a name that the reference table does
 * not record (the compute modes, for one) is listed in that test's allowlist.
 * Enumerations are plain int-sized C enums, as in the real ABI.
 */
#ifndef DCGM_SIM_NVML_ABI_H
#define DCGM_SIM_NVML_ABI_H

#include <stdint.h>

#define NVML_API_VERSION 13

/* ---- opaque handles ------------------------------------------------------ */

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

/* ---- return codes ---------------------------------------------------------- */

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* ---- enumerations ---------------------------------------------------------- */

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

/* Windows driver models; NVML on Linux answers NOT_SUPPORTED for them */
typedef enum nvmlDriverModel_enum {
    NVML_DRIVER_WDDM = 0,
    NVML_DRIVER_WDM = 1,
    NVML_DRIVER_MCDM = 2
} nvmlDriverModel_t;

typedef enum nvmlBrandType_enum {
    NVML_BRAND_UNKNOWN = 0,
    NVML_BRAND_QUADRO = 1,
    NVML_BRAND_TESLA = 2,
    NVML_BRAND_NVS = 3,
    NVML_BRAND_GRID = 4,
    NVML_BRAND_GEFORCE = 5,
    NVML_BRAND_TITAN = 6,
    NVML_BRAND_NVIDIA = 14
} nvmlBrandType_t;

typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3,
    NVML_CLOCK_COUNT = 4
} nvmlClockType_t;

typedef enum nvmlClockId_enum {
    NVML_CLOCK_ID_CURRENT = 0,
    NVML_CLOCK_ID_APP_CLOCK_TARGET = 1,
    NVML_CLOCK_ID_APP_CLOCK_DEFAULT = 2,
    NVML_CLOCK_ID_CUSTOMER_BOOST_MAX = 3,
    NVML_CLOCK_ID_COUNT = 4
} nvmlClockId_t;

typedef enum nvmlTemperatureSensors_enum {
    NVML_TEMPERATURE_GPU = 0,
    NVML_TEMPERATURE_COUNT = 2
} nvmlTemperatureSensors_t;

typedef enum nvmlTemperatureThresholds_enum {
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
    NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
    NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3
} nvmlTemperatureThresholds_t;

typedef enum nvmlPstates_enum {
    NVML_PSTATE_0 = 0,
    NVML_PSTATE_8 = 8,
    NVML_PSTATE_15 = 15,
    NVML_PSTATE_UNKNOWN = 32
} nvmlPstates_t;

typedef enum nvmlValueType_enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
} nvmlValueType_t;

typedef enum nvmlPcieUtilCounter_enum {
    NVML_PCIE_UTIL_TX_BYTES = 0,
    NVML_PCIE_UTIL_RX_BYTES = 1
} nvmlPcieUtilCounter_t;

typedef enum nvmlMemoryErrorType_enum {
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
    NVML_VOLATILE_ECC = 0,
    NVML_AGGREGATE_ECC = 1
} nvmlEccCounterType_t;

typedef enum nvmlPageRetirementCause_enum {
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
} nvmlPageRetirementCause_t;

typedef enum nvmlPerfPolicyType_enum {
    NVML_PERF_POLICY_POWER = 0,
    NVML_PERF_POLICY_THERMAL = 1,
    NVML_PERF_POLICY_SYNC_BOOST = 2,
    NVML_PERF_POLICY_BOARD_LIMIT = 3,
    NVML_PERF_POLICY_LOW_UTILIZATION = 4,
    NVML_PERF_POLICY_RELIABILITY = 5,
    NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10,
    NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11
} nvmlPerfPolicyType_t;

typedef enum nvmlInforomObject_enum {
    NVML_INFOROM_OEM = 0,
    NVML_INFOROM_ECC = 1,
    NVML_INFOROM_POWER = 2
} nvmlInforomObject_t;

typedef enum nvmlGpuP2PCapsIndex_enum {
    NVML_P2P_CAPS_INDEX_READ = 0,
    NVML_P2P_CAPS_INDEX_WRITE = 1,
    NVML_P2P_CAPS_INDEX_NVLINK = 2,
    NVML_P2P_CAPS_INDEX_ATOMICS = 3,
    NVML_P2P_CAPS_INDEX_PCI = 4,
    NVML_P2P_CAPS_INDEX_UNKNOWN = 5
} nvmlGpuP2PCapsIndex_t;

typedef enum nvmlGpuP2PStatus_enum {
    NVML_P2P_STATUS_OK = 0,
    NVML_P2P_STATUS_NOT_SUPPORTED = 5
} nvmlGpuP2PStatus_t;

/* Not in the reference table (allowlisted in the layout test). */
typedef enum nvmlComputeMode_enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
} nvmlComputeMode_t;

/* GPM metric ids: only those the library computes. */
typedef enum nvmlGpmMetricId_enum {
    NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
    NVML_GPM_METRIC_SM_UTIL = 2,
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
    NVML_GPM_METRIC_FP64_UTIL = 11,
    NVML_GPM_METRIC_FP32_UTIL = 12,
    NVML_GPM_METRIC_FP16_UTIL = 13,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,
    NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
    NVML_GPM_METRIC_MAX = 477
} nvmlGpmMetricId_t;

/* The architecture is a plain unsigned int with named values. */
typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_VOLTA 5
#define NVML_DEVICE_ARCH_TURING 6
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_ADA 8
#define NVML_DEVICE_ARCH_HOPPER 9
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffffu

/* ---- buffer sizes and flags ------------------------------------------------ */

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_BUFFER_SIZE 80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_BUFFER_SIZE 64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE 32
#define NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE 16
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS 36
#define NVML_VALUE_NOT_AVAILABLE (-1)
#define NVML_INIT_FLAG_NO_GPUS 1
#define NVML_INIT_FLAG_NO_ATTACH 2
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

/* Version stamps: the struct size in the low bits, the version above bit 24. */
#define NVML_STRUCT_VERSION(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24))
#define nvmlMemory_v2 NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2)
#define nvmlTemperature_v1 NVML_STRUCT_VERSION(sizeof(nvmlTemperature_t), 1)
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

/* ---- event types (a 64-bit mask) ------------------------------------------- */

#define nvmlEventTypeNone 0x0ULL
#define nvmlEventTypeSingleBitEccError 0x1ULL
#define nvmlEventTypeDoubleBitEccError 0x2ULL
#define nvmlEventTypePState 0x4ULL
#define nvmlEventTypeXidCriticalError 0x8ULL
#define nvmlEventTypeClock 0x10ULL
#define nvmlEventTypePowerSourceChange 0x80ULL
#define nvmlEventMigConfigChange 0x100ULL

/* ---- clock event ("throttle") reasons, a 64-bit mask ------------------------ */

#define nvmlClocksEventReasonGpuIdle 0x1ULL
#define nvmlClocksEventReasonApplicationsClocksSetting 0x2ULL
#define nvmlClocksEventReasonSwPowerCap 0x4ULL
#define nvmlClocksThrottleReasonHwSlowdown 0x8ULL
#define nvmlClocksEventReasonSyncBoost 0x10ULL
#define nvmlClocksEventReasonSwThermalSlowdown 0x20ULL
#define nvmlClocksThrottleReasonHwThermalSlowdown 0x40ULL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown 0x80ULL
#define nvmlClocksEventReasonDisplayClockSetting 0x100ULL
#define nvmlClocksEventReasonNone 0x0ULL
#define nvmlClocksEventReasonAll 0x7ffULL

/* ---- field ids of nvmlDeviceGetFieldValues ---------------------------------- */

#define NVML_FI_DEV_ECC_CURRENT 1
#define NVML_FI_DEV_ECC_PENDING 2
#define NVML_FI_DEV_ECC_SBE_VOL_TOTAL 3
#define NVML_FI_DEV_ECC_DBE_VOL_TOTAL 4
#define NVML_FI_DEV_ECC_SBE_AGG_TOTAL 5
#define NVML_FI_DEV_ECC_DBE_AGG_TOTAL 6
#define NVML_FI_DEV_RETIRED_SBE 29
#define NVML_FI_DEV_RETIRED_DBE 30
#define NVML_FI_DEV_RETIRED_PENDING 31
#define NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL 38
#define NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL 45
#define NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL 52
#define NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL 59
#define NVML_FI_DEV_PERF_POLICY_POWER 74
#define NVML_FI_DEV_PERF_POLICY_THERMAL 75
#define NVML_FI_DEV_PERF_POLICY_SYNC_BOOST 76
#define NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT 77
#define NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION 78
#define NVML_FI_DEV_PERF_POLICY_RELIABILITY 79
#define NVML_FI_DEV_PERF_POLICY_TOTAL_APP_CLOCKS 80
#define NVML_FI_DEV_PERF_POLICY_TOTAL_BASE_CLOCKS 81
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION 83
#define NVML_FI_DEV_NVLINK_LINK_COUNT 91
#define NVML_FI_DEV_PCIE_REPLAY_COUNTER 94
#define NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER 95
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX 140
#define NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX 141
#define NVML_FI_DEV_REMAPPED_COR 142
#define NVML_FI_DEV_REMAPPED_UNC 143
#define NVML_FI_DEV_REMAPPED_PENDING 144
#define NVML_FI_DEV_REMAPPED_FAILURE 145
#define NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT 147
#define NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER 169
#define NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS 173
#define NVML_FI_DEV_PCIE_COUNT_NAKS_RECEIVED 174
#define NVML_FI_DEV_PCIE_COUNT_RECEIVER_ERROR 175
#define NVML_FI_DEV_PCIE_COUNT_BAD_TLP 176
#define NVML_FI_DEV_PCIE_COUNT_NAKS_SENT 177
#define NVML_FI_DEV_PCIE_COUNT_BAD_DLLP 178
#define NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR 179
#define NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR 180
#define NVML_FI_DEV_PCIE_COUNT_UNSUPPORTED_REQ 181
#define NVML_FI_DEV_PCIE_COUNT_LCRC_ERROR 182
#define NVML_FI_DEV_PCIE_COUNT_LANE_ERROR 183
#define NVML_FI_DEV_IS_RESETLESS_MIG_SUPPORTED 184
#define NVML_FI_DEV_POWER_AVERAGE 185
#define NVML_FI_DEV_POWER_INSTANT 186
#define NVML_FI_DEV_POWER_MIN_LIMIT 187
#define NVML_FI_DEV_POWER_MAX_LIMIT 188
#define NVML_FI_DEV_POWER_DEFAULT_LIMIT 189
#define NVML_FI_DEV_POWER_CURRENT_LIMIT 190
#define NVML_FI_DEV_ENERGY 191
#define NVML_FI_DEV_POWER_REQUESTED_LIMIT 192
#define NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT 193
#define NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT 194
#define NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT 195
#define NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT 196
#define NVML_FI_DEV_PCIE_COUNT_TX_BYTES 197
#define NVML_FI_DEV_PCIE_COUNT_RX_BYTES 198
#define NVML_FI_DEV_IS_MIG_MODE_INDEPENDENT_MIG_QUERY_CAPABLE 199
#define NVML_FI_DEV_RESET_STATUS 226
#define NVML_FI_DEV_DRAIN_AND_RESET_STATUS 227
#define NVML_FI_DEV_PCIE_OUTBOUND_ATOMICS_MASK 228
#define NVML_FI_DEV_PCIE_INBOUND_ATOMICS_MASK 229
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN 269
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN 270
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN 271
#define NVML_FI_DEV_REMAPPED_ROWS_COR_INACTIVE 301
#define NVML_FI_DEV_REMAPPED_ROWS_UNC_INACTIVE 302
#define NVML_FI_MAX 308

/* ---- structs --------------------------------------------------------------- */

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;           /* device id in the high half, vendor id low */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;                   /* percent of the sample period a kernel ran */
    unsigned int memory;                /* percent of it device memory was read or written */
} nvmlUtilization_t;

/* v1: used includes the reserved part. */
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* v2: reserved apart, used excludes it. */
typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
    unsigned int fieldId;               /* in: NVML_FI_* */
    unsigned int scopeId;               /* in: link for NVLink ids (UINT_MAX: all) */
    long long timestamp;                /* out: CPU time of the reading, us since 1970 */
    long long latencyUsec;              /* out: how long NVML took for it */
    nvmlValueType_t valueType;          /* out: which member of value is set */
    nvmlReturn_t nvmlReturn;            /* out: this entry's own status */
    nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;       /* the XID number for XID events */
    unsigned int gpuInstanceId;         /* 0xFFFFFFFF: not a MIG instance's */
    unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct nvmlBAR1Memory_st {
    unsigned long long bar1Total;       /* bytes */
    unsigned long long bar1Free;
    unsigned long long bar1Used;
} nvmlBAR1Memory_t;

typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp;       /* CPU timestamp, us */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlProcessUtilizationInfo_v1_st {
    unsigned long long timeStamp;       /* CPU timestamp, us */
    unsigned int pid;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
    unsigned int jpgUtil;
    unsigned int ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct nvmlProcessesUtilizationInfo_v1_st {
    unsigned int version;               /* nvmlProcessesUtilizationInfo_v1 */
    unsigned int processSamplesCount;   /* in: room in procUtilArray; out: samples */
    unsigned long long lastSeenTimeStamp;
    nvmlProcessUtilizationInfo_v1_t *procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;

typedef nvmlProcessesUtilizationInfo_v1_t nvmlProcessesUtilizationInfo_t;
#define nvmlProcessesUtilizationInfo_v1 NVML_STRUCT_VERSION(sizeof(nvmlProcessesUtilizationInfo_v1_t), 1)

typedef struct nvmlViolationTime_st {
    unsigned long long referenceTime;   /* CPU timestamp, us */
    unsigned long long violationTime;   /* ns spent under the policy */
} nvmlViolationTime_t;

typedef struct nvmlTemperature_st {
    unsigned int version;
    nvmlTemperatureSensors_t sensorType;
    int temperature;
} nvmlTemperature_t;

typedef struct nvmlGpmSupport_st {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct nvmlGpmMetric_st {
    unsigned int metricId;              /* in: nvmlGpmMetricId_t */
    nvmlReturn_t nvmlReturn;            /* out */
    double value;                       /* out */
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;                       /* out: static strings */
} nvmlGpmMetric_t;

typedef struct nvmlGpmMetricsGet_st {
    unsigned int version;               /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;            /* the earlier sample */
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

/* vGPU licensing (DCGM_FI_DEV_VGPU_LICENSE_STATUS reads the VGPU entry) */
#define NVML_GRID_LICENSE_BUFFER_SIZE 128
#define NVML_GRID_LICENSE_FEATURE_MAX_COUNT 3

typedef enum nvmlGridLicenseFeatureCode_enum {
    NVML_GRID_LICENSE_FEATURE_CODE_UNKNOWN = 0,
    NVML_GRID_LICENSE_FEATURE_CODE_VGPU = 1,
} nvmlGridLicenseFeatureCode_t;

typedef struct nvmlGridLicenseExpiry_st {
    unsigned int year;
    unsigned short month, day, hour, min, sec;
    unsigned char status;
} nvmlGridLicenseExpiry_t;

typedef struct nvmlGridLicensableFeature_st {
    nvmlGridLicenseFeatureCode_t featureCode;
    unsigned int featureState;          /* 0 unlicensed, else licensed */
    char licenseInfo[NVML_GRID_LICENSE_BUFFER_SIZE];
    char productName[NVML_GRID_LICENSE_BUFFER_SIZE];
    unsigned int featureEnabled;
    nvmlGridLicenseExpiry_t licenseExpiry;
} nvmlGridLicensableFeature_t;

typedef struct nvmlGridLicensableFeatures_st {
    int isGridLicenseSupported;         /* 0 on bare metal */
    unsigned int licensableFeaturesCount;
    nvmlGridLicensableFeature_t gridLicensableFeatures[NVML_GRID_LICENSE_FEATURE_MAX_COUNT];
} nvmlGridLicensableFeatures_t;

#endif /* DCGM_SIM_NVML_ABI_H */
