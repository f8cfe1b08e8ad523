/*
 * nvml_device.c -- per-device getters.
 *
 * Each getter reads the DCGM field that DCGM fills from the same NVML call
 * (reference/nvml/fieldmap.tsv) and undoes DCGM's conversion: watts become
 * milliwatts, MiB become bytes.  Whether a model has a feature is the
 * engine's answer for that field, so a feature the engine serves as
 * NOT_SUPPORTED is NVML_ERROR_NOT_SUPPORTED here.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nvml_internal.h"
#include "../dcgm_field_ids.h"

#define MIB 1048576ULL

/* An integer field, or NOT_SUPPORTED when the model lacks it. */
static nvmlReturn_t read_int(const nvml_call *call, unsigned short field, long long *out)
{
    sim_value v;
    if (!nvml_sample(call, field, &v))
        return v.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    *out = v.i64;
    return NVML_SUCCESS;
}

static nvmlReturn_t read_uint(const nvml_call *call, unsigned short field, unsigned int *out)
{
    long long x = 0;
    nvmlReturn_t rc = read_int(call, field, &x);
    if (rc == NVML_SUCCESS)
        *out = (unsigned int)(x < 0 ? 0 : x);
    return rc;
}

/* Watts (a double field) to NVML's milliwatts. */
static nvmlReturn_t read_milliwatts(const nvml_call *call, unsigned short field, unsigned int *out)
{
    sim_value v;
    if (!nvml_sample(call, field, &v))
        return v.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    *out = (unsigned int)llround(fmax(v.dbl, 0.0) * 1000.0);
    return NVML_SUCCESS;
}

static nvmlReturn_t read_string(const nvml_call *call, unsigned short field, char *buf, unsigned int length)
{
    sim_value v;
    if (!nvml_sample(call, field, &v))
        return v.kind == SIM_VALUE_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNKNOWN;
    return nvml_copy_string(buf, length, v.str);
}

static bool mig_enabled(const nvml_call *call)
{
    return call->sim->mig_instances > 0;
}

/* ---- identity ---------------------------------------------------------------------- */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    BEGIN_DEVICE(NVML_FN_INDEX, device);
    if (index == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *index = call.gpu;
    return nvml_end(NVML_SUCCESS);
}

#define STRING_GETTER(function, fn, field)                                          \
    NVML_EXPORT nvmlReturn_t function(nvmlDevice_t device, char *buf, unsigned int length) \
    {                                                                               \
        BEGIN_DEVICE(fn, device);                                                   \
        return nvml_end(read_string(&call, field, buf, length));                    \
    }

STRING_GETTER(nvmlDeviceGetName, NVML_FN_NAME, DCGM_FI_DEV_GPU_NAME)
STRING_GETTER(nvmlDeviceGetUUID, NVML_FN_UUID, DCGM_FI_DEV_GPU_UUID)
STRING_GETTER(nvmlDeviceGetSerial, NVML_FN_SERIAL, DCGM_FI_DEV_BOARD_SERIAL)
STRING_GETTER(nvmlDeviceGetVbiosVersion, NVML_FN_VBIOS_VERSION, DCGM_FI_DEV_VBIOS_VERSION)
STRING_GETTER(nvmlDeviceGetInforomImageVersion, NVML_FN_INFOROM_IMAGE_VERSION, DCGM_FI_DEV_INFOROM_IMAGE_VERSION)

NVML_EXPORT nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, nvmlInforomObject_t object,
                                                     char *version, unsigned int length)
{
    BEGIN_DEVICE(NVML_FN_INFOROM_VERSION, device);
    switch (object) {
    case NVML_INFOROM_OEM: return nvml_end(read_string(&call, DCGM_FI_DEV_INFOROM_OEM_VERSION, version, length));
    case NVML_INFOROM_ECC: return nvml_end(read_string(&call, DCGM_FI_DEV_INFOROM_ECC_VERSION, version, length));
    case NVML_INFOROM_POWER: return nvml_end(read_string(&call, DCGM_FI_DEV_INFOROM_POWER_VERSION, version, length));
    default: return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    }
}

static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    BEGIN_DEVICE(NVML_FN_PCI_INFO, device);
    if (pci == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    sim_value bus;
    long long combined = 0, subsys = 0;
    if (!nvml_sample(&call, DCGM_FI_DEV_PCI_BUS_ID, &bus) || read_int(&call, DCGM_FI_DEV_PCI_COMBINED_ID, &combined) != NVML_SUCCESS ||
        read_int(&call, DCGM_FI_DEV_PCI_SUBSYS_ID, &subsys) != NVML_SUCCESS)
        return nvml_end(NVML_ERROR_UNKNOWN);
    unsigned int domain = 0, bus_no = 0, dev = 0, function = 0;
    if (sscanf(bus.str, "%x:%x:%x.%x", &domain, &bus_no, &dev, &function) != 4)
        return nvml_end(NVML_ERROR_UNKNOWN);
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", domain, bus_no, dev, function);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xffffu, bus_no & 0xffu,
             dev & 0xffu, function & 0xfu);
    pci->domain = domain;
    pci->bus = bus_no;
    pci->device = dev;
    pci->pciDeviceId = (unsigned int)combined;
    pci->pciSubSystemId = (unsigned int)subsys;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return pci_info(device, pci);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return pci_info(device, pci);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    BEGIN_DEVICE(NVML_FN_BRAND, device);
    if (type == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    const char *brand = call.sim->brand;
    if (strcasecmp(brand, "Tesla") == 0)
        *type = NVML_BRAND_TESLA;
    else if (strcasecmp(brand, "NVIDIA") == 0)
        *type = NVML_BRAND_NVIDIA;
    else
        *type = NVML_BRAND_UNKNOWN;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    BEGIN_DEVICE(NVML_FN_ARCHITECTURE, device);
    if (arch == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    const sim_gpu_info *m = call.sim;
    if (m->cc_major == 9)
        *arch = NVML_DEVICE_ARCH_HOPPER;
    else if (m->cc_major == 8)
        *arch = m->cc_minor == 9 ? NVML_DEVICE_ARCH_ADA : NVML_DEVICE_ARCH_AMPERE;
    else if (m->cc_major == 7)
        *arch = m->cc_minor >= 5 ? NVML_DEVICE_ARCH_TURING : NVML_DEVICE_ARCH_VOLTA;
    else
        *arch = NVML_DEVICE_ARCH_UNKNOWN;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    BEGIN_DEVICE(NVML_FN_CUDA_COMPUTE_CAPABILITY, device);
    if (major == NULL || minor == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *major = call.sim->cc_major;
    *minor = call.sim->cc_minor;
    return nvml_end(NVML_SUCCESS);
}

/* ---- memory --------------------------------------------------------------------------- */

typedef struct fb_mib {
    long long total, reserved, free, used;
} fb_mib;

static nvmlReturn_t read_fb(const nvml_call *call, fb_mib *fb)
{
    nvmlReturn_t rc = read_int(call, DCGM_FI_DEV_FB_TOTAL, &fb->total);
    if (rc == NVML_SUCCESS)
        rc = read_int(call, DCGM_FI_DEV_FB_RESERVED, &fb->reserved);
    if (rc == NVML_SUCCESS)
        rc = read_int(call, DCGM_FI_DEV_FB_FREE, &fb->free);
    if (rc == NVML_SUCCESS)
        rc = read_int(call, DCGM_FI_DEV_FB_USED, &fb->used);
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    BEGIN_DEVICE(NVML_FN_MEMORY_INFO, device);
    if (memory == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    fb_mib fb;
    nvmlReturn_t rc = read_fb(&call, &fb);
    if (rc != NVML_SUCCESS)
        return nvml_end(rc);
    memory->total = (unsigned long long)fb.total * MIB;
    memory->free = (unsigned long long)fb.free * MIB;
    memory->used = (unsigned long long)(fb.used + fb.reserved) * MIB; /* v1 counts reserved as used */
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    BEGIN_DEVICE(NVML_FN_MEMORY_INFO_V2, device);
    if (memory == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (memory->version != nvmlMemory_v2)
        return nvml_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    fb_mib fb;
    nvmlReturn_t rc = read_fb(&call, &fb);
    if (rc != NVML_SUCCESS)
        return nvml_end(rc);
    memory->total = (unsigned long long)fb.total * MIB;
    memory->reserved = (unsigned long long)fb.reserved * MIB;
    memory->free = (unsigned long long)fb.free * MIB;
    memory->used = (unsigned long long)fb.used * MIB;
    return nvml_end(NVML_SUCCESS);
}

/* BAR1 (the GPU's PCIe aperture): fields 90, 92 and 93.  A MIG device handle reads its GPU's,
 * as the engine's MIG instances read the GPU's value for fields they do not split. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t *bar1Memory)
{
    unsigned int instance;
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device_or_mig(NVML_FN_BAR1_MEMORY, device, &call, &instance);
    if (rc != NVML_SUCCESS)
        return rc;
    if (bar1Memory == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long total = 0, used = 0, free_mib = 0;
    if ((rc = read_int(&call, DCGM_FI_DEV_BAR1_TOTAL, &total)) != NVML_SUCCESS ||
        (rc = read_int(&call, DCGM_FI_DEV_BAR1_USED, &used)) != NVML_SUCCESS ||
        (rc = read_int(&call, DCGM_FI_DEV_BAR1_FREE, &free_mib)) != NVML_SUCCESS)
        return nvml_end(rc);
    bar1Memory->bar1Total = (unsigned long long)total * MIB;
    bar1Memory->bar1Used = (unsigned long long)used * MIB;
    bar1Memory->bar1Free = (unsigned long long)free_mib * MIB;
    return nvml_end(NVML_SUCCESS);
}

/* ---- utilisation ---------------------------------------------------------------------- */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    BEGIN_DEVICE(NVML_FN_UTILIZATION_RATES, device);
    if (utilization == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (mig_enabled(&call))
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    nvmlReturn_t rc = read_uint(&call, DCGM_FI_DEV_GPU_UTIL_RATIO, &utilization->gpu);
    if (rc == NVML_SUCCESS)
        rc = read_uint(&call, DCGM_FI_DEV_MEM_COPY_UTIL, &utilization->memory);
    return nvml_end(rc);
}

/* The real encoder and decoder report over a window of about a sixth of a second. */
#define CODEC_SAMPLING_PERIOD_US 167000u

static nvmlReturn_t codec_utilization(nvml_fn fn, unsigned short field, nvmlDevice_t device,
                                      unsigned int *utilization, unsigned int *period)
{
    BEGIN_DEVICE(fn, device);
    if (utilization == NULL || period == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (mig_enabled(&call))
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    nvmlReturn_t rc = read_uint(&call, field, utilization);
    *period = CODEC_SAMPLING_PERIOD_US;
    return nvml_end(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                         unsigned int *samplingPeriodUs)
{
    return codec_utilization(NVML_FN_ENCODER_UTILIZATION, DCGM_FI_DEV_ENC_UTIL, device, utilization, samplingPeriodUs);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                         unsigned int *samplingPeriodUs)
{
    return codec_utilization(NVML_FN_DECODER_UTILIZATION, DCGM_FI_DEV_DEC_UTIL, device, utilization, samplingPeriodUs);
}

/* ---- temperature ------------------------------------------------------------------------ */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                  unsigned int *temp)
{
    BEGIN_DEVICE(NVML_FN_TEMPERATURE, device);
    if (temp == NULL || sensorType != NVML_TEMPERATURE_GPU)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(read_uint(&call, DCGM_FI_DEV_GPU_TEMP_CELSIUS, temp));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *temperature)
{
    BEGIN_DEVICE(NVML_FN_TEMPERATURE_V, device);
    if (temperature == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (temperature->version != nvmlTemperature_v1)
        return nvml_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (temperature->sensorType != NVML_TEMPERATURE_GPU)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long t = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_GPU_TEMP_CELSIUS, &t);
    temperature->temperature = (int)t;
    return nvml_end(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                           nvmlTemperatureThresholds_t thresholdType,
                                                           unsigned int *temp)
{
    BEGIN_DEVICE(NVML_FN_TEMPERATURE_THRESHOLD, device);
    if (temp == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    switch (thresholdType) {
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: return nvml_end(read_uint(&call, DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS, temp));
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: return nvml_end(read_uint(&call, DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS, temp));
    case NVML_TEMPERATURE_THRESHOLD_MEM_MAX: return nvml_end(read_uint(&call, DCGM_FI_DEV_MEMORY_MAX_OP_TEMP_CELSIUS, temp));
    case NVML_TEMPERATURE_THRESHOLD_GPU_MAX: return nvml_end(read_uint(&call, DCGM_FI_DEV_GPU_MAX_OP_TEMP_CELSIUS, temp));
    default: return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    }
}

/* ---- power and energy --------------------------------------------------------------------- */

#define MILLIWATT_GETTER(function, fn, field)                                  \
    NVML_EXPORT nvmlReturn_t function(nvmlDevice_t device, unsigned int *value) \
    {                                                                          \
        BEGIN_DEVICE(fn, device);                                              \
        if (value == NULL)                                                     \
            return nvml_end(NVML_ERROR_INVALID_ARGUMENT);                      \
        return nvml_end(read_milliwatts(&call, field, value));                 \
    }

MILLIWATT_GETTER(nvmlDeviceGetPowerUsage, NVML_FN_POWER_USAGE, DCGM_FI_DEV_BOARD_POWER_WATTS)
MILLIWATT_GETTER(nvmlDeviceGetPowerManagementLimit, NVML_FN_POWER_MANAGEMENT_LIMIT, DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS)
MILLIWATT_GETTER(nvmlDeviceGetPowerManagementDefaultLimit, NVML_FN_POWER_MANAGEMENT_DEFAULT_LIMIT, DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS)
MILLIWATT_GETTER(nvmlDeviceGetEnforcedPowerLimit, NVML_FN_ENFORCED_POWER_LIMIT, DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS)

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int *minLimit,
                                                                      unsigned int *maxLimit)
{
    BEGIN_DEVICE(NVML_FN_POWER_MANAGEMENT_LIMIT_CONSTRAINTS, device);
    if (minLimit == NULL || maxLimit == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    nvmlReturn_t rc = read_milliwatts(&call, DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS, minLimit);
    if (rc == NVML_SUCCESS)
        rc = read_milliwatts(&call, DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS, maxLimit);
    return nvml_end(rc);
}

/*
 * A new power limit from now on, in mW within the board's constraints.  Real
 * NVML lets only root do this; here every client may, unless
 * DCGM_SIM_NVML_NO_PERMISSION names this call.  The node caps the draw at it
 * and its requested and enforced limits (DCGM 160, 164) read it.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit)
{
    BEGIN_DEVICE(NVML_FN_SET_POWER_MANAGEMENT_LIMIT, device);
    unsigned int low = 0, high = 0;
    nvmlReturn_t rc = read_milliwatts(&call, DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS, &low);
    if (rc == NVML_SUCCESS)
        rc = read_milliwatts(&call, DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS, &high);
    if (rc != NVML_SUCCESS)
        return nvml_end(rc);
    if (limit < low || limit > high)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(nvml_set_power_limit(&call, limit / 1000.0) ? NVML_SUCCESS : NVML_ERROR_UNKNOWN);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    BEGIN_DEVICE(NVML_FN_POWER_MANAGEMENT_MODE, device);
    if (mode == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *mode = NVML_FEATURE_ENABLED;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
    BEGIN_DEVICE(NVML_FN_TOTAL_ENERGY_CONSUMPTION, device);
    if (energy == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long mj = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, &mj);
    *energy = (unsigned long long)(mj < 0 ? 0 : mj);
    return nvml_end(rc);
}

/* ---- clocks ---------------------------------------------------------------------------------- */

static unsigned short clock_field(nvmlClockType_t type, unsigned short graphics, unsigned short mem,
                                  unsigned short video)
{
    switch (type) {
    case NVML_CLOCK_GRAPHICS: case NVML_CLOCK_SM: return graphics;
    case NVML_CLOCK_MEM: return mem;
    case NVML_CLOCK_VIDEO: return video;
    default: return 0;
    }
}

static nvmlReturn_t read_clock(const nvml_call *call, unsigned short field, unsigned int *clock)
{
    if (field == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    return read_uint(call, field, clock);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    BEGIN_DEVICE(NVML_FN_CLOCK_INFO, device);
    if (clock == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(read_clock(&call, clock_field(type, DCGM_FI_DEV_SM_CLOCK, DCGM_FI_DEV_MEM_CLOCK, DCGM_FI_DEV_VIDEO_CLOCK), clock));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    BEGIN_DEVICE(NVML_FN_MAX_CLOCK_INFO, device);
    if (clock == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(read_clock(&call, clock_field(type, DCGM_FI_DEV_APP_SM_CLOCK, DCGM_FI_DEV_APP_MEM_CLOCK, DCGM_FI_DEV_MAX_VIDEO_CLOCK), clock));
}

/*
 * Application clocks: the simulated boards run at their default, the maximum.
 * Hopper boards have none for the video clock (recorded on an H200: graphics,
 * SM and memory answer, video is NOT_SUPPORTED, current and default alike).
 */
static nvmlReturn_t read_app_clock(const nvml_call *call, nvmlClockType_t type, unsigned int *clock)
{
    if (type == NVML_CLOCK_VIDEO && call->sim->cc_major == 9)
        return NVML_ERROR_NOT_SUPPORTED;
    return read_clock(call, clock_field(type, DCGM_FI_DEV_MAX_SM_CLOCK, DCGM_FI_DEV_MAX_MEM_CLOCK, DCGM_FI_DEV_MAX_VIDEO_CLOCK), clock);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, nvmlClockType_t type,
                                                        unsigned int *clock)
{
    BEGIN_DEVICE(NVML_FN_APPLICATIONS_CLOCK, device);
    if (clock == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(read_app_clock(&call, type, clock));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, nvmlClockType_t type,
                                                               unsigned int *clock)
{
    BEGIN_DEVICE(NVML_FN_DEFAULT_APPLICATIONS_CLOCK, device);
    if (clock == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(read_app_clock(&call, type, clock));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t clockType, nvmlClockId_t clockId,
                                            unsigned int *clockMHz)
{
    BEGIN_DEVICE(NVML_FN_CLOCK, device);
    if (clockMHz == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    unsigned short field;
    switch (clockId) {
    case NVML_CLOCK_ID_CURRENT:
        field = clock_field(clockType, DCGM_FI_DEV_SM_CLOCK, DCGM_FI_DEV_MEM_CLOCK, DCGM_FI_DEV_VIDEO_CLOCK);
        break;
    case NVML_CLOCK_ID_APP_CLOCK_TARGET: case NVML_CLOCK_ID_APP_CLOCK_DEFAULT:
        field = clock_field(clockType, DCGM_FI_DEV_MAX_SM_CLOCK, DCGM_FI_DEV_MAX_MEM_CLOCK, DCGM_FI_DEV_MAX_VIDEO_CLOCK);
        break;
    case NVML_CLOCK_ID_CUSTOMER_BOOST_MAX:
        field = clock_field(clockType, DCGM_FI_DEV_APP_SM_CLOCK, DCGM_FI_DEV_APP_MEM_CLOCK, DCGM_FI_DEV_MAX_VIDEO_CLOCK);
        break;
    default:
        field = 0;
        break;
    }
    return nvml_end(read_clock(&call, field, clockMHz));
}

/* DCGM's field 112 carries NVML's own reason bits unchanged. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons)
{
    BEGIN_DEVICE(NVML_FN_CURRENT_CLOCKS_EVENT_REASONS, device);
    if (reasons == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long bits = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_CLOCKS_EVENT_REASONS, &bits);
    *reasons = (unsigned long long)bits & nvmlClocksEventReasonAll;
    return nvml_end(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons)
{
    return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons)
{
    BEGIN_DEVICE(NVML_FN_SUPPORTED_CLOCKS_EVENT_REASONS, device);
    if (reasons == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    /* every reason but the display clock: these are headless data-centre boards */
    *reasons = nvmlClocksEventReasonAll & ~nvmlClocksEventReasonDisplayClockSetting;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons)
{
    return nvmlDeviceGetSupportedClocksEventReasons(device, reasons);
}

/* ---- PCIe ------------------------------------------------------------------------------------- */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                     unsigned int *value)
{
    BEGIN_DEVICE(NVML_FN_PCIE_THROUGHPUT, device);
    if (value == NULL || (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES))
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    /* KB/s over the 20 ms window the cost above just slept through */
    return nvml_end(read_uint(&call, counter == NVML_PCIE_UTIL_TX_BYTES ? DCGM_FI_DEV_PCIE_TX_THROUGHPUT : DCGM_FI_DEV_PCIE_RX_THROUGHPUT, value));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value)
{
    BEGIN_DEVICE(NVML_FN_PCIE_REPLAY_COUNTER, device);
    if (value == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(read_uint(&call, DCGM_FI_DEV_PCIE_REPLAY_TOTAL, value));
}

#define PCIE_LINK_GETTER(function, field)                                       \
    NVML_EXPORT nvmlReturn_t function(nvmlDevice_t device, unsigned int *value) \
    {                                                                           \
        BEGIN_DEVICE(NVML_FN_PCIE_LINK, device);                                \
        if (value == NULL)                                                      \
            return nvml_end(NVML_ERROR_INVALID_ARGUMENT);                       \
        return nvml_end(read_uint(&call, field, value));                        \
    }

PCIE_LINK_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, DCGM_FI_DEV_PCIE_LINK_GEN)
PCIE_LINK_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, DCGM_FI_DEV_PCIE_MAX_LINK_GEN)
PCIE_LINK_GETTER(nvmlDeviceGetCurrPcieLinkWidth, DCGM_FI_DEV_PCIE_LINK_WIDTH)
PCIE_LINK_GETTER(nvmlDeviceGetMaxPcieLinkWidth, DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH)

/* ---- ECC, retired pages, remapped rows ------------------------------------------------------------ */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                              nvmlEnableState_t *pending)
{
    BEGIN_DEVICE(NVML_FN_ECC_MODE, device);
    if (current == NULL || pending == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long cur = 0, pend = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_ECC_MODE, &cur);
    if (rc == NVML_SUCCESS)
        rc = read_int(&call, DCGM_FI_DEV_ECC_PENDING, &pend);
    *current = cur ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    *pending = pend ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return nvml_end(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType, unsigned long long *eccCounts)
{
    BEGIN_DEVICE(NVML_FN_TOTAL_ECC_ERRORS, device);
    if (eccCounts == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    unsigned short field;
    bool corrected = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    if (errorType != NVML_MEMORY_ERROR_TYPE_CORRECTED && errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (counterType == NVML_VOLATILE_ECC)
        field = corrected ? DCGM_FI_DEV_ECC_SBE_VOL_TOTAL : DCGM_FI_DEV_ECC_DBE_VOL_TOTAL;
    else if (counterType == NVML_AGGREGATE_ECC)
        field = corrected ? DCGM_FI_DEV_ECC_SBE_AGG_TOTAL : DCGM_FI_DEV_ECC_DBE_AGG_TOTAL;
    else
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long count = 0;
    nvmlReturn_t rc = read_int(&call, field, &count);
    *eccCounts = (unsigned long long)(count < 0 ? 0 : count);
    return nvml_end(rc);
}

/*
 * Page retirement (pre-Ampere boards only).  The addresses are made up but
 * stable: page-aligned, distinct, the same on every call.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                   unsigned int *pageCount, unsigned long long *addresses)
{
    BEGIN_DEVICE(NVML_FN_RETIRED_PAGES, device);
    if (pageCount == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    unsigned short field;
    if (cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
        field = DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL;
    else if (cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
        field = DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL;
    else
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int count = 0;
    nvmlReturn_t rc = read_uint(&call, field, &count);
    if (rc != NVML_SUCCESS)
        return nvml_end(rc);
    unsigned int room = *pageCount;
    *pageCount = count;
    if (room < count)
        return nvml_end(NVML_ERROR_INSUFFICIENT_SIZE);
    if (count > 0 && addresses == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    for (unsigned int i = 0; i < count; i++)
        addresses[i] = 0x1000ULL * (0x40000ULL * (cause + 1) + 17ULL * i + call.gpu);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending)
{
    BEGIN_DEVICE(NVML_FN_RETIRED_PAGES_PENDING, device);
    if (isPending == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long pending = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_PAGE_RETIRED_PENDING, &pending);
    *isPending = pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return nvml_end(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                                   unsigned int *isPending, unsigned int *failureOccurred)
{
    BEGIN_DEVICE(NVML_FN_REMAPPED_ROWS, device);
    if (corrRows == NULL || uncRows == NULL || isPending == NULL || failureOccurred == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (mig_enabled(&call))
        return nvml_end(NVML_ERROR_NOT_SUPPORTED); /* as on a board with MIG instances */
    nvmlReturn_t rc = read_uint(&call, DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL, corrRows);
    if (rc == NVML_SUCCESS)
        rc = read_uint(&call, DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL, uncRows);
    if (rc == NVML_SUCCESS)
        rc = read_uint(&call, DCGM_FI_DEV_ROW_REMAP_PENDING, isPending);
    if (rc == NVML_SUCCESS)
        rc = read_uint(&call, DCGM_FI_DEV_ROW_REMAP_FAILED, failureOccurred);
    return nvml_end(rc);
}

/* ---- fans, states, modes ------------------------------------------------------------------------------ */

/* Every simulated model is passively cooled: the engine has no fan field for any of them. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
    BEGIN_DEVICE(NVML_FN_FAN_SPEED, device);
    if (speed == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(read_uint(&call, DCGM_FI_DEV_FAN_SPEED, speed));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan, unsigned int *speed)
{
    BEGIN_DEVICE(NVML_FN_FAN_SPEED, device);
    if (speed == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    (void)fan;
    return nvml_end(read_uint(&call, DCGM_FI_DEV_FAN_SPEED, speed));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int *numFans)
{
    BEGIN_DEVICE(NVML_FN_FAN_SPEED, device);
    if (numFans == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    /* a board without a fan has zero of them: the count succeeds where the speed is NOT_SUPPORTED
     * (recorded on an H200: NumFans 0, FanSpeed NOT_SUPPORTED) */
    unsigned int speed = 0;
    *numFans = read_uint(&call, DCGM_FI_DEV_FAN_SPEED, &speed) == NVML_SUCCESS ? 1 : 0;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    BEGIN_DEVICE(NVML_FN_PERFORMANCE_STATE, device);
    if (pState == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long p = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_GPU_PSTATE, &p);
    *pState = (p >= 0 && p <= 15) ? (nvmlPstates_t)p : NVML_PSTATE_UNKNOWN;
    return nvml_end(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    return nvmlDeviceGetPerformanceState(device, pState);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    BEGIN_DEVICE(NVML_FN_COMPUTE_MODE, device);
    if (mode == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long m = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_GPU_COMPUTE_MODE, &m);
    *mode = (m >= 0 && m <= 3) ? (nvmlComputeMode_t)m : NVML_COMPUTEMODE_DEFAULT;
    return nvml_end(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    BEGIN_DEVICE(NVML_FN_PERSISTENCE_MODE, device);
    if (mode == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    long long m = 0;
    nvmlReturn_t rc = read_int(&call, DCGM_FI_DEV_GPU_PERSISTENCE_MODE, &m);
    *mode = m ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return nvml_end(rc);
}

/* A data-centre GPU drives no display: both answers are DISABLED. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, nvmlEnableState_t *display)
{
    BEGIN_DEVICE(NVML_FN_DISPLAY, device);
    if (display == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *display = NVML_FEATURE_DISABLED;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, nvmlEnableState_t *isActive)
{
    BEGIN_DEVICE(NVML_FN_DISPLAY, device);
    if (isActive == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *isActive = NVML_FEATURE_DISABLED;
    return nvml_end(NVML_SUCCESS);
}

/* Driver models (WDDM, WDM, MCDM) are a Windows notion: on Linux NVML answers NOT_SUPPORTED. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t device, nvmlDriverModel_t *current,
                                                  nvmlDriverModel_t *pending)
{
    BEGIN_DEVICE(NVML_FN_DRIVER_MODEL, device);
    if (current == NULL && pending == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    return nvml_end(NVML_ERROR_NOT_SUPPORTED);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetDriverModel_v2(nvmlDevice_t device, nvmlDriverModel_t *current,
                                                     nvmlDriverModel_t *pending)
{
    return nvmlDeviceGetDriverModel(device, current, pending);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                              unsigned int *pendingMode)
{
    BEGIN_DEVICE(NVML_FN_MIG_MODE, device);
    if (currentMode == NULL || pendingMode == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (!call.sim->mig_capable)
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    *currentMode = *pendingMode = mig_enabled(&call) ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return nvml_end(NVML_SUCCESS);
}

/*
 * MIG device handles: one per GPU instance of a MIG-enabled GPU.  The process
 * lists and the handle queries below take them; every other getter takes
 * whole GPUs only (INVALID_ARGUMENT for a MIG device handle).
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    unsigned int instance;
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device_or_mig(NVML_FN_MIG_DEVICE_QUERY, device, &call, &instance);
    if (rc != NVML_SUCCESS)
        return rc;
    if (isMigDevice == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *isMigDevice = instance != NVML_SIM_WHOLE_GPU;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                             nvmlDevice_t *migDevice)
{
    BEGIN_DEVICE(NVML_FN_MIG_DEVICE_QUERY, device);
    if (migDevice == NULL || index >= SIM_MAX_MIG_INSTANCES)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (!call.sim->mig_capable)
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    if (index >= call.sim->mig_instances)
        return nvml_end(NVML_ERROR_NOT_FOUND);
    *migDevice = nvml_mig_device_handle(call.gpu, index);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
    unsigned int instance;
    nvml_call call;
    nvmlReturn_t rc = nvml_begin_device_or_mig(NVML_FN_MIG_DEVICE_QUERY, migDevice, &call, &instance);
    if (rc != NVML_SUCCESS)
        return rc;
    if (device == NULL || instance == NVML_SIM_WHOLE_GPU)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *device = nvml_device_handle(call.gpu);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    BEGIN_DEVICE(NVML_FN_MIG_DEVICE_QUERY, device);
    if (count == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (!call.sim->mig_capable)
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    /* zero while MIG is off (recorded on an H200 with MIG disabled) */
    *count = mig_enabled(&call) ? SIM_MAX_MIG_INSTANCES : 0;
    return nvml_end(NVML_SUCCESS);
}

/* ---- violation counters ------------------------------------------------------------------------------------ */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType,
                                                      nvmlViolationTime_t *violTime)
{
    BEGIN_DEVICE(NVML_FN_VIOLATION_STATUS, device);
    if (violTime == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    /* DCGM fields 240-245 hold policies 0-5 in order, in ns */
    if (perfPolicyType < NVML_PERF_POLICY_POWER || perfPolicyType > NVML_PERF_POLICY_RELIABILITY)
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    long long ns = 0;
    nvmlReturn_t rc = read_int(&call, (unsigned short)(DCGM_FI_DEV_POWER_VIOLATION + perfPolicyType), &ns);
    violTime->referenceTime = (unsigned long long)nvml_wall_us();
    violTime->violationTime = (unsigned long long)(ns < 0 ? 0 : ns);
    return nvml_end(rc);
}

/* ---- NVLink and peer-to-peer ----------------------------------------------------------------------------------- */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)
{
    BEGIN_DEVICE(NVML_FN_NVLINK_STATE, device);
    if (isActive == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    int links = call.sim->nvlinks;
    if (links == 0)
        return nvml_end(NVML_ERROR_NOT_SUPPORTED);
    if (link >= (unsigned int)links)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    *isActive = NVML_FEATURE_ENABLED;
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t *p2pStatus)
{
    BEGIN_DEVICE(NVML_FN_P2P_STATUS, device1);
    unsigned int other = 0;
    if (p2pStatus == NULL || !nvml_device_index(device2, &other) || p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    bool both_nvlink = call.sim->nvlinks > 0 && nvml_sim_gpu(other)->nvlinks > 0;
    if (p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK)
        *p2pStatus = both_nvlink && other != call.gpu ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
    else
        *p2pStatus = NVML_P2P_STATUS_OK;
    return nvml_end(NVML_SUCCESS);
}

/* ---- vGPU licensing ------------------------------------------------------------------ */

/* Bare metal, as every simulated GPU is: no vGPU licensing and no licensable
 * features.  Each version of the struct starts with the same two members
 * (supported flag, feature count), so the unversioned name writes only those
 * and never past an older caller's smaller struct. */
static nvmlReturn_t grid_licensable_features(nvmlDevice_t device, nvmlGridLicensableFeatures_t *features,
                                             size_t size)
{
    BEGIN_DEVICE(NVML_FN_GRID_LICENSABLE_FEATURES, device);
    if (features == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    memset(features, 0, size);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGridLicensableFeatures_v4(nvmlDevice_t device,
                                                                nvmlGridLicensableFeatures_t *pGridLicensableFeatures)
{
    return grid_licensable_features(device, pGridLicensableFeatures, sizeof *pGridLicensableFeatures);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGridLicensableFeatures(nvmlDevice_t device,
                                                             nvmlGridLicensableFeatures_t *pGridLicensableFeatures)
{
    return grid_licensable_features(device, pGridLicensableFeatures,
                                    offsetof(nvmlGridLicensableFeatures_t, gridLicensableFeatures));
}
