/*
 * source_nvml.c -- the NVML value source: GPUs and values from the driver's
 * libnvidia-ml.so.1, opened with dlopen (never linked) from
 * $DCGM_ENGINE_NVML_LIB, else by the dynamic loader's search for
 * "libnvidia-ml.so.1".
 *
 * Each DCGM field is read with the NVML call and the unit conversion that
 * reference/nvml/fieldmap.tsv records for DCGM 4.6.  A field without a
 * mapping here is NOT_SUPPORTED: nothing is invented.  NVML errors become
 * DCGM's blanks: NOT_SUPPORTED, NO_PERMISSION -> NOT_PERMISSIONED,
 * NOT_FOUND; GPU_IS_LOST marks that GPU lost from then on (entity status
 * Lost), other GPUs untouched; anything else is a plain BLANK.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"
#include "../nvml/nvml_abi.h"

#define NVML_SRC_MAX_GPUS DCGM_MAX_NUM_DEVICES

typedef nvmlReturn_t (*fn_void)(void);
typedef nvmlReturn_t (*fn_count)(unsigned int *);
typedef nvmlReturn_t (*fn_handle)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*fn_dev_str)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*fn_sys_str)(char *, unsigned int);
typedef nvmlReturn_t (*fn_dev_uint)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*fn_dev_ull)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*fn_pci)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*fn_brand)(nvmlDevice_t, nvmlBrandType_t *);
typedef nvmlReturn_t (*fn_temp)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *);
typedef nvmlReturn_t (*fn_clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *);
typedef nvmlReturn_t (*fn_util)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*fn_mem2)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*fn_fields)(nvmlDevice_t, int, nvmlFieldValue_t *);

typedef struct nvml_gpu {
    nvmlDevice_t dev;
    int64_t lost_at;                    /* -1 while it answers */
} nvml_gpu;

typedef struct nvml_source {
    void *lib;
    char path[512];
    int initialized;
    fn_void shutdown;
    fn_dev_str name, uuid, serial;
    fn_sys_str driver_version;
    fn_pci pci;
    fn_brand brand;
    fn_temp temperature;
    fn_dev_uint power, replay;
    fn_dev_ull reasons;
    fn_clock clock;
    fn_util util;
    fn_mem2 memory;
    fn_fields fields;
    unsigned int count;
    nvml_gpu gpus[NVML_SRC_MAX_GPUS];
} nvml_source;

/* the DCGM fields this source maps (everything else is NOT_SUPPORTED) */
static const unsigned short mapped_fields[] = {
    1, 50, 51, 53, 54, 57, 100, 101, 112, 140, 150, 155, 156, 202, 203, 204, 250, 251, 252,
};

static int is_mapped(unsigned short f)
{
    for (size_t i = 0; i < sizeof mapped_fields / sizeof mapped_fields[0]; i++)
        if (mapped_fields[i] == f)
            return 1;
    return 0;
}

static void put_error(nvml_source *s, unsigned int gpu, nvmlReturn_t r, int64_t t_rel,
                      sim_value *out)
{
    switch (r) {
    case NVML_ERROR_NOT_SUPPORTED: out->kind = SIM_VALUE_NOT_SUPPORTED; break;
    case NVML_ERROR_NO_PERMISSION: out->kind = SIM_VALUE_NOT_PERMISSIONED; break;
    case NVML_ERROR_NOT_FOUND: out->kind = SIM_VALUE_NOT_FOUND; break;
    case NVML_ERROR_GPU_IS_LOST:
        if (gpu < s->count && s->gpus[gpu].lost_at < 0)
            s->gpus[gpu].lost_at = t_rel < 0 ? 0 : t_rel;
        out->kind = SIM_VALUE_BLANK;
        break;
    default: out->kind = SIM_VALUE_BLANK; break;
    }
}

/* NVML's brand enum as DCGM's string (fieldmap: enum -> string table) */
static const char *brand_name(nvmlBrandType_t b)
{
    switch ((int)b) {
    case NVML_BRAND_QUADRO: return "Quadro";
    case NVML_BRAND_TESLA: return "Tesla";
    case NVML_BRAND_NVS: return "NVS";
    case NVML_BRAND_GRID: return "Grid";
    case NVML_BRAND_GEFORCE: return "GeForce";
    case NVML_BRAND_TITAN: return "Titan";
    case NVML_BRAND_NVIDIA: return "NVIDIA";
    default: return "Unknown";
    }
}

/* a field value as an int64, whichever member NVML filled */
static int64_t field_value_i64(const nvmlFieldValue_t *v)
{
    switch (v->valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return (int64_t)v->value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return (int64_t)v->value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return (int64_t)v->value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return (int64_t)v->value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return (int64_t)v->value.sllVal;
    case NVML_VALUE_TYPE_SIGNED_INT: return (int64_t)v->value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return (int64_t)v->value.usVal;
    default: return (int64_t)v->value.ullVal;
    }
}

static nvmlReturn_t read_field(nvml_source *s, nvmlDevice_t dev, unsigned int nvml_id,
                               nvmlFieldValue_t *fv)
{
    memset(fv, 0, sizeof *fv);
    fv->fieldId = nvml_id;
    nvmlReturn_t r = s->fields(dev, 1, fv);
    return r != NVML_SUCCESS ? r : fv->nvmlReturn;
}

static int nvml_sample(void *impl, unsigned int gpu, unsigned short f, int64_t t_rel,
                       sim_value *out)
{
    nvml_source *s = impl;
    if (gpu >= s->count)
        return DCGM_ST_BADPARAM;
    out->kind = SIM_VALUE_BLANK;
    if (!is_mapped(f)) {
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        return DCGM_ST_OK;
    }
    nvml_gpu *g = &s->gpus[gpu];
    if (f != 1 && g->lost_at >= 0)
        return DCGM_ST_OK;
    nvmlDevice_t dev = g->dev;
    nvmlReturn_t r = NVML_SUCCESS;
    char buf[256];
    unsigned int u = 0;
    unsigned long long ull = 0;
    nvmlFieldValue_t fv;
    switch (f) {
    case 1:
        if ((r = s->driver_version(buf, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)) == NVML_SUCCESS)
            sim_put_str(out, buf);
        break;
    case 50:
        if ((r = s->name(dev, buf, NVML_DEVICE_NAME_V2_BUFFER_SIZE)) == NVML_SUCCESS)
            sim_put_str(out, buf);
        break;
    case 53:
        if ((r = s->serial(dev, buf, NVML_DEVICE_SERIAL_BUFFER_SIZE)) == NVML_SUCCESS)
            sim_put_str(out, buf);
        break;
    case 54:
        if ((r = s->uuid(dev, buf, NVML_DEVICE_UUID_V2_BUFFER_SIZE)) == NVML_SUCCESS)
            sim_put_str(out, buf);
        break;
    case 51: {
        nvmlBrandType_t b = NVML_BRAND_UNKNOWN;
        if ((r = s->brand(dev, &b)) == NVML_SUCCESS)
            sim_put_str(out, brand_name(b));
        break;
    }
    case 57: {
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        if ((r = s->pci(dev, &pci)) == NVML_SUCCESS)
            sim_put_str(out, pci.busId);
        break;
    }
    case 100: case 101:
        if ((r = s->clock(dev, f == 100 ? NVML_CLOCK_SM : NVML_CLOCK_MEM, &u)) == NVML_SUCCESS)
            sim_put_int(out, u);
        break;
    case 112:
        if ((r = s->reasons(dev, &ull)) == NVML_SUCCESS)
            sim_put_int(out, (int64_t)ull);
        break;
    case 150:
        if ((r = s->temperature(dev, NVML_TEMPERATURE_GPU, &u)) == NVML_SUCCESS && u <= 200)
            sim_put_int(out, u);
        break;
    case 140:
        /* DCGM reads value.uiVal whatever valueType says; over 200 is no reading */
        if ((r = read_field(s, dev, NVML_FI_DEV_MEMORY_TEMP, &fv)) == NVML_SUCCESS &&
            fv.value.uiVal <= 200)
            sim_put_int(out, fv.value.uiVal);
        break;
    case 155:
        if ((r = s->power(dev, &u)) == NVML_SUCCESS)
            sim_put_double(out, (double)u / 1000.0);
        break;
    case 156:
        if ((r = read_field(s, dev, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, &fv)) == NVML_SUCCESS)
            sim_put_int(out, field_value_i64(&fv));
        break;
    case 202:
        if ((r = s->replay(dev, &u)) == NVML_SUCCESS)
            sim_put_int(out, u);
        break;
    case 203: case 204: {
        nvmlUtilization_t ut;
        if ((r = s->util(dev, &ut)) == NVML_SUCCESS)
            sim_put_int(out, f == 203 ? ut.gpu : ut.memory);
        break;
    }
    case 250: case 251: case 252: {
        nvmlMemory_v2_t m;
        memset(&m, 0, sizeof m);
        m.version = nvmlMemory_v2;
        if ((r = s->memory(dev, &m)) == NVML_SUCCESS) {
            unsigned long long bytes = f == 250 ? m.total : f == 251 ? m.free : m.used;
            sim_put_int(out, (int64_t)(bytes / (1024ull * 1024ull)));
        }
        break;
    }
    default:
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        break;
    }
    if (r != NVML_SUCCESS)
        put_error(s, gpu, r, t_rel, out);
    return DCGM_ST_OK;
}

static unsigned int nvml_gpu_count(void *impl) { return ((nvml_source *)impl)->count; }

static int nvml_field_supported(void *impl, unsigned int gpu, unsigned short f)
{
    return gpu < ((nvml_source *)impl)->count && is_mapped(f);
}

/* events (XIDs) are not read from NVML yet */
static int nvml_is_event_field(void *impl, unsigned short f) { (void)impl; (void)f; return 0; }

static int nvml_events(void *impl, unsigned int gpu, unsigned short f, int64_t from, int64_t to,
                       sim_event *out, int max)
{
    return 0;
}

static int64_t nvml_gpu_lost_at(void *impl, unsigned int gpu)
{
    nvml_source *s = impl;
    return gpu < s->count ? s->gpus[gpu].lost_at : -1;
}

static unsigned int nvml_mig_instances(void *impl, unsigned int gpu) { return 0; }

static void nvml_describe(void *impl, char *buf, size_t len)
{
    snprintf(buf, len, "nvml %s", ((nvml_source *)impl)->path);
}

static void nvml_free(void *impl)
{
    nvml_source *s = impl;
    if (!s)
        return;
    if (s->initialized && s->shutdown)
        s->shutdown();
    if (s->lib)
        dlclose(s->lib);
    free(s);
}

static const value_source_ops nvml_ops = {
    "nvml", nvml_gpu_count, nvml_sample, nvml_field_supported, nvml_is_event_field, nvml_events,
    nvml_gpu_lost_at, nvml_mig_instances, nvml_describe, nvml_free,
};

static void *sym(nvml_source *s, const char *name, const char **missing)
{
    void *p = dlsym(s->lib, name);
    if (!p && !*missing)
        *missing = name;
    return p;
}

/* the path the loader really opened, for the start-up summary */
static void resolve_path(nvml_source *s, const char *asked)
{
    snprintf(s->path, sizeof s->path, "%s", asked);
    void *init = dlsym(s->lib, "nvmlInit_v2");
    Dl_info info;
    if (init && dladdr(init, &info) && info.dli_fname && info.dli_fname[0]) {
        char *real = realpath(info.dli_fname, NULL);
        snprintf(s->path, sizeof s->path, "%s", real ? real : info.dli_fname);
        free(real);
    }
}

int value_source_nvml_open(value_source *src, char *err, size_t errlen)
{
    nvml_source *s = calloc(1, sizeof *s);
    if (!s)
        return DCGM_ST_MEMORY;
    const char *env = getenv(VALUE_SOURCE_NVML_LIB_ENV);
    const char *path = env && env[0] ? env : VALUE_SOURCE_NVML_SONAME;
    s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!s->lib) {
        if (env && env[0])
            snprintf(err, errlen, "cannot open the NVML library %s=%s (%s); point %s at "
                     "libnvidia-ml.so.1, or run without NVML", VALUE_SOURCE_NVML_LIB_ENV, env,
                     dlerror(), VALUE_SOURCE_NVML_LIB_ENV);
        else
            snprintf(err, errlen, "no %s found by the dynamic loader (LD_LIBRARY_PATH, ld.so.cache, "
                     "system paths); install the NVIDIA driver, set %s to its path, or run "
                     "without NVML", VALUE_SOURCE_NVML_SONAME, VALUE_SOURCE_NVML_LIB_ENV);
        free(s);
        return DCGM_ST_LIBRARY_NOT_FOUND;
    }
    resolve_path(s, path);
    const char *missing = NULL;
    fn_void init = (fn_void)sym(s, "nvmlInit_v2", &missing);
    s->shutdown = (fn_void)sym(s, "nvmlShutdown", &missing);
    fn_count count = (fn_count)sym(s, "nvmlDeviceGetCount_v2", &missing);
    fn_handle handle = (fn_handle)sym(s, "nvmlDeviceGetHandleByIndex_v2", &missing);
    s->name = (fn_dev_str)sym(s, "nvmlDeviceGetName", &missing);
    s->uuid = (fn_dev_str)sym(s, "nvmlDeviceGetUUID", &missing);
    s->serial = (fn_dev_str)sym(s, "nvmlDeviceGetSerial", &missing);
    s->driver_version = (fn_sys_str)sym(s, "nvmlSystemGetDriverVersion", &missing);
    s->pci = (fn_pci)sym(s, "nvmlDeviceGetPciInfo_v3", &missing);
    s->brand = (fn_brand)sym(s, "nvmlDeviceGetBrand", &missing);
    s->temperature = (fn_temp)sym(s, "nvmlDeviceGetTemperature", &missing);
    s->power = (fn_dev_uint)sym(s, "nvmlDeviceGetPowerUsage", &missing);
    s->replay = (fn_dev_uint)sym(s, "nvmlDeviceGetPcieReplayCounter", &missing);
    s->reasons = (fn_dev_ull)sym(s, "nvmlDeviceGetCurrentClocksEventReasons", &missing);
    s->clock = (fn_clock)sym(s, "nvmlDeviceGetClockInfo", &missing);
    s->util = (fn_util)sym(s, "nvmlDeviceGetUtilizationRates", &missing);
    s->memory = (fn_mem2)sym(s, "nvmlDeviceGetMemoryInfo_v2", &missing);
    s->fields = (fn_fields)sym(s, "nvmlDeviceGetFieldValues", &missing);
    if (missing) {
        snprintf(err, errlen, "%s lacks %s: a driver too old for this engine", s->path, missing);
        nvml_free(s);
        return DCGM_ST_LIBRARY_NOT_FOUND;
    }
    nvmlReturn_t r = init();
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "%s: nvmlInit_v2 failed with NVML error %d", s->path, (int)r);
        nvml_free(s);
        return DCGM_ST_INIT_ERROR;
    }
    s->initialized = 1;
    unsigned int n = 0;
    if ((r = count(&n)) != NVML_SUCCESS) {
        snprintf(err, errlen, "%s: nvmlDeviceGetCount_v2 failed with NVML error %d", s->path, (int)r);
        nvml_free(s);
        return DCGM_ST_INIT_ERROR;
    }
    if (n > NVML_SRC_MAX_GPUS)
        n = NVML_SRC_MAX_GPUS;
    for (unsigned int i = 0; i < n; i++) {
        s->gpus[i].lost_at = -1;
        r = handle(i, &s->gpus[i].dev);
        if (r == NVML_ERROR_GPU_IS_LOST) {
            s->gpus[i].lost_at = 0;     /* lost already: its index stays, it is Lost */
        } else if (r != NVML_SUCCESS) {
            snprintf(err, errlen, "%s: no handle for GPU %u (NVML error %d)", s->path, i, (int)r);
            nvml_free(s);
            return DCGM_ST_INIT_ERROR;
        }
    }
    s->count = n;
    src->ops = &nvml_ops;
    src->impl = s;
    return DCGM_ST_OK;
}
