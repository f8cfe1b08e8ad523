/*
 * source_nvml_fields.c -- the NVML source's field map: for each DCGM field
 * the NVML call and the unit conversion DCGM 4.6 itself uses
 * (reference/nvml/fieldmap.tsv, with DCGM's source lines).  A field absent
 * here, or whose entry point this libnvidia-ml.so.1 lacks, is NOT_SUPPORTED:
 * nothing is invented.  Costly fields (energy, PCIe replays) are read by
 * source_nvml_slow.c, profiling fields by source_nvml_gpm.c.
 *
 * Every read here is cheap on a real H200 (1-10 us); calls that several
 * fields share (utilisation, memory info) are made once per engine pass.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source_nvml.h"

typedef enum read_kind {
    RK_DRIVER_VERSION, RK_NVML_VERSION, RK_NAME, RK_BRAND, RK_SERIAL, RK_UUID, RK_PCI_BUS_ID,
    RK_INFOROM, RK_INFOROM_IMAGE, RK_VBIOS, RK_CLOCK, RK_REASONS, RK_TEMPERATURE,
    RK_FIELD_UINT_TEMP, RK_FIELD_MILLIWATTS, RK_POWER, RK_POWER_LIMIT, RK_UTIL, RK_ENCODER, RK_DECODER, RK_MEMORY, RK_FIELD,
    RK_RETIRED_PAGES, RK_NVLINK_RATE, RK_PCIE_LINK, RK_TEMP_THRESHOLD, RK_VGPU_LICENSE, RK_SLOW, RK_GPM, RK_EVENT,
} read_kind;

typedef struct field_map {
    unsigned short field_id;
    read_kind kind;
    unsigned int arg;                   /* NVML enum, field id, link or memory member */
    size_t need;                        /* offsetof(nvml_api, entry point it needs) */
    int64_t refresh_us;                 /* read again only this long after the last read; 0 = each sample */
} field_map;

#define NEED(member) offsetof(nvml_api, member)
/* How often a field whose value hardly ever changes is read again; samples
 * in between serve the latest reading.  Error counters, remapped rows and
 * licensing change on events that happen hours apart; the driver version
 * only with a driver reload (when NVML itself is reopened). */
#define COUNTS_REFRESH_US 1000000
#define STATIC_REFRESH_US 10000000
#define ALL_LINKS UINT_MAX

enum { MEM_TOTAL, MEM_FREE, MEM_USED, MEM_RESERVED };
enum { LIMIT_CURRENT, LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT, LIMIT_ENFORCED };
enum { LINK_MAX_GEN, LINK_MAX_WIDTH, LINK_GEN, LINK_WIDTH };

static const field_map field_maps[] = {
    { 1, RK_DRIVER_VERSION, 0, NEED(driver_version), STATIC_REFRESH_US },
    { 2, RK_NVML_VERSION, 0, NEED(nvml_version), STATIC_REFRESH_US },
    { 50, RK_NAME, 0, NEED(name), 0 },
    { 51, RK_BRAND, 0, NEED(brand), 0 },
    { 53, RK_SERIAL, 0, NEED(serial), 0 },
    { 54, RK_UUID, 0, NEED(uuid), 0 },
    { 56, RK_INFOROM, NVML_INFOROM_OEM, NEED(inforom), 0 },
    { 57, RK_PCI_BUS_ID, 0, NEED(pci), 0 },
    { 80, RK_INFOROM, NVML_INFOROM_ECC, NEED(inforom), 0 },
    { 81, RK_INFOROM, NVML_INFOROM_POWER, NEED(inforom), 0 },
    { 82, RK_INFOROM_IMAGE, 0, NEED(inforom_image), 0 },
    { 85, RK_VBIOS, 0, NEED(vbios), 0 },
    { 100, RK_CLOCK, NVML_CLOCK_SM, NEED(clock), 0 },
    { 101, RK_CLOCK, NVML_CLOCK_MEM, NEED(clock), 0 },
    { 112, RK_REASONS, 0, NEED(reasons), 0 },
    { 140, RK_FIELD_UINT_TEMP, NVML_FI_DEV_MEMORY_TEMP, NEED(fields), 0 },
    { 150, RK_TEMPERATURE, NVML_TEMPERATURE_GPU, NEED(temperature), 0 },
    /* the temperature thresholds: fixed by the board, read as seldom as the static fields */
    { 151, RK_TEMP_THRESHOLD, NVML_TEMPERATURE_THRESHOLD_MEM_MAX, NEED(temp_threshold), STATIC_REFRESH_US },
    { 152, RK_TEMP_THRESHOLD, NVML_TEMPERATURE_THRESHOLD_GPU_MAX, NEED(temp_threshold), STATIC_REFRESH_US },
    { 155, RK_POWER, 0, NEED(power), 0 },
    { 156, RK_SLOW, 0, NEED(fields), 0 },
    /* the instant draw, where power usage (155) is the driver's 1 s average on Ampere and later */
    { 157, RK_FIELD_MILLIWATTS, NVML_FI_DEV_POWER_INSTANT, NEED(fields), 0 },
    { 158, RK_TEMP_THRESHOLD, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, NEED(temp_threshold), STATIC_REFRESH_US },
    { 159, RK_TEMP_THRESHOLD, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, NEED(temp_threshold), STATIC_REFRESH_US },
    /* power limits: the current and enforced ones may change while the engine runs */
    { 160, RK_POWER_LIMIT, LIMIT_CURRENT, NEED(power_limit), 0 },
    { 161, RK_POWER_LIMIT, LIMIT_MIN, NEED(power_limit_range), STATIC_REFRESH_US },
    { 162, RK_POWER_LIMIT, LIMIT_MAX, NEED(power_limit_range), STATIC_REFRESH_US },
    { 163, RK_POWER_LIMIT, LIMIT_DEFAULT, NEED(power_limit_default), STATIC_REFRESH_US },
    { 164, RK_POWER_LIMIT, LIMIT_ENFORCED, NEED(power_limit_enforced), 0 },
    { 202, RK_SLOW, 0, NEED(replay), 0 },
    { 203, RK_UTIL, 0, NEED(util), 0 },
    { 204, RK_UTIL, 1, NEED(util), 0 },
    { 206, RK_ENCODER, 0, NEED(encoder), 0 },
    { 207, RK_DECODER, 0, NEED(decoder), 0 },
    { 230, RK_EVENT, 0, NEED(event_wait), 0 },
    /* the PCIe link: what it can do, and what it runs at now (a lower generation at idle); DCGM's
     * health check weighs the replay counter against them */
    { 235, RK_PCIE_LINK, LINK_MAX_GEN, NEED(pcie_max_gen), STATIC_REFRESH_US },
    { 236, RK_PCIE_LINK, LINK_MAX_WIDTH, NEED(pcie_max_width), STATIC_REFRESH_US },
    { 237, RK_PCIE_LINK, LINK_GEN, NEED(pcie_gen), 0 },
    { 238, RK_PCIE_LINK, LINK_WIDTH, NEED(pcie_width), 0 },
    { 240, RK_FIELD, NVML_FI_DEV_PERF_POLICY_POWER, NEED(fields), 0 },
    { 241, RK_FIELD, NVML_FI_DEV_PERF_POLICY_THERMAL, NEED(fields), 0 },
    { 242, RK_FIELD, NVML_FI_DEV_PERF_POLICY_SYNC_BOOST, NEED(fields), 0 },
    { 243, RK_FIELD, NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT, NEED(fields), 0 },
    { 244, RK_FIELD, NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION, NEED(fields), 0 },
    { 245, RK_FIELD, NVML_FI_DEV_PERF_POLICY_RELIABILITY, NEED(fields), 0 },
    /* drivers before 510 lack the _v2 call: DCGM then reads v1 (its used includes the reserved) */
    { 250, RK_MEMORY, MEM_TOTAL, NEED(memory_v1), 0 },
    { 251, RK_MEMORY, MEM_FREE, NEED(memory_v1), 0 },
    { 252, RK_MEMORY, MEM_USED, NEED(memory_v1), 0 },
    { 253, RK_MEMORY, MEM_RESERVED, NEED(memory), 0 },
    { 310, RK_FIELD, NVML_FI_DEV_ECC_SBE_VOL_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    { 311, RK_FIELD, NVML_FI_DEV_ECC_DBE_VOL_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    { 312, RK_FIELD, NVML_FI_DEV_ECC_SBE_AGG_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    { 313, RK_FIELD, NVML_FI_DEV_ECC_DBE_AGG_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    { 390, RK_RETIRED_PAGES, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
      NEED(retired_pages), COUNTS_REFRESH_US },
    { 391, RK_FIELD, NVML_FI_DEV_RETIRED_DBE, NEED(fields), COUNTS_REFRESH_US },
    { 392, RK_FIELD, NVML_FI_DEV_RETIRED_PENDING, NEED(fields), COUNTS_REFRESH_US },
    { 393, RK_FIELD, NVML_FI_DEV_REMAPPED_UNC, NEED(fields), COUNTS_REFRESH_US },
    { 394, RK_FIELD, NVML_FI_DEV_REMAPPED_COR, NEED(fields), COUNTS_REFRESH_US },
    { 395, RK_FIELD, NVML_FI_DEV_REMAPPED_FAILURE, NEED(fields), COUNTS_REFRESH_US },
    { 396, RK_FIELD, NVML_FI_DEV_REMAPPED_PENDING, NEED(fields), COUNTS_REFRESH_US },
    { 409, RK_FIELD, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    { 419, RK_FIELD, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    { 429, RK_FIELD, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    { 439, RK_FIELD, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, NEED(fields), COUNTS_REFRESH_US },
    /* NvLink throughput per link (DCGM's link order of field ids) and in all */
    { 440, RK_NVLINK_RATE, 0, NEED(fields), 0 },
    { 441, RK_NVLINK_RATE, 1, NEED(fields), 0 },
    { 442, RK_NVLINK_RATE, 2, NEED(fields), 0 },
    { 443, RK_NVLINK_RATE, 3, NEED(fields), 0 },
    { 444, RK_NVLINK_RATE, 4, NEED(fields), 0 },
    { 445, RK_NVLINK_RATE, 5, NEED(fields), 0 },
    { 446, RK_NVLINK_RATE, 12, NEED(fields), 0 },
    { 447, RK_NVLINK_RATE, 13, NEED(fields), 0 },
    { 448, RK_NVLINK_RATE, 14, NEED(fields), 0 },
    { 449, RK_NVLINK_RATE, ALL_LINKS, NEED(fields), 0 },
    { 475, RK_NVLINK_RATE, 6, NEED(fields), 0 },
    { 476, RK_NVLINK_RATE, 7, NEED(fields), 0 },
    { 477, RK_NVLINK_RATE, 8, NEED(fields), 0 },
    { 478, RK_NVLINK_RATE, 9, NEED(fields), 0 },
    { 479, RK_NVLINK_RATE, 10, NEED(fields), 0 },
    { 480, RK_NVLINK_RATE, 11, NEED(fields), 0 },
    { 494, RK_NVLINK_RATE, 15, NEED(fields), 0 },
    { 495, RK_NVLINK_RATE, 16, NEED(fields), 0 },
    { 496, RK_NVLINK_RATE, 17, NEED(fields), 0 },
    { 526, RK_VGPU_LICENSE, 0, NEED(grid_licensable), STATIC_REFRESH_US },
    { 1001, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1002, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1003, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1004, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1005, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1006, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1007, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1008, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1009, RK_GPM, 0, NEED(gpm_metrics), 0 },
    { 1010, RK_GPM, 0, NEED(gpm_metrics), 0 },
};

#define N_FIELD_MAPS (sizeof field_maps / sizeof field_maps[0])

static const field_map *find_map(unsigned short f)
{
    size_t lo = 0, hi = N_FIELD_MAPS;
    while (lo < hi) {  /* the table is sorted by field id (checked by the native test) */
        size_t mid = (lo + hi) / 2;
        if (field_maps[mid].field_id == f)
            return &field_maps[mid];
        if (field_maps[mid].field_id < f)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int have_entry_point(const nvml_source *s, const field_map *m)
{
    void *const *p = (void *const *)((const char *)&s->api + m->need);
    return *p != NULL;
}

int nvml_fields_is_mapped(const nvml_source *s, unsigned short f)
{
    const field_map *m = find_map(f);
    return m && have_entry_point(s, m);
}

void nvml_fields_describe_missing(const nvml_source *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_FIELD_MAPS && used + 8 < len; i++)
        if (!have_entry_point(s, &field_maps[i]))
            used += (size_t)snprintf(buf + used, len - used, "%s%u", used ? "," : "",
                                     field_maps[i].field_id);
}

/* The slot of a slowly changing field on one GPU, allocated on first use:
 * one per field map entry with a refresh period. */
static nvml_cached *cache_slot(nvml_source *s, unsigned int gpu, const field_map *m)
{
    nvml_gpu *g = &s->gpus[gpu];
    if (!g->cache) {
        g->cache = calloc(N_FIELD_MAPS, sizeof *g->cache);
        if (!g->cache)
            return NULL;
    }
    return &g->cache[m - field_maps];
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
int64_t nvml_src_field_i64(const nvmlFieldValue_t *v)
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

nvmlReturn_t nvml_src_read_field(nvml_source *s, nvmlDevice_t dev, unsigned int nvml_id,
                                 unsigned int scope, nvmlFieldValue_t *fv)
{
    memset(fv, 0, sizeof *fv);
    fv->fieldId = nvml_id;
    fv->scopeId = scope;
    nvmlReturn_t r = s->api.fields(dev, 1, fv);
    return r != NVML_SUCCESS ? r : fv->nvmlReturn;
}

/* DCGM's NvLink rate: the change of the cumulative rx + tx KiB counters over
 * the seconds between two reads, divided by 1000; the first read gives 0. */
static nvmlReturn_t nvlink_rate(nvml_source *s, nvml_gpu *g, unsigned int scope, int64_t t_rel,
                                sim_value *out)
{
    nvmlFieldValue_t fv[2];
    memset(fv, 0, sizeof fv);
    fv[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    fv[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    fv[0].scopeId = fv[1].scopeId = scope;
    nvmlReturn_t r = s->api.fields(g->dev, 2, fv);
    if (r == NVML_SUCCESS)
        r = fv[0].nvmlReturn != NVML_SUCCESS ? fv[0].nvmlReturn : fv[1].nvmlReturn;
    if (r != NVML_SUCCESS)
        return r;
    unsigned long long kib = (unsigned long long)nvml_src_field_i64(&fv[0]) +
                             (unsigned long long)nvml_src_field_i64(&fv[1]);
    nvml_nvlink_prev *prev = &g->nvlink[scope == ALL_LINKS ? NVML_NVLINK_MAX_LINKS : scope];
    int64_t rate = 0;
    if (prev->have && t_rel > prev->t_rel && kib >= prev->kib)
        rate = (int64_t)((double)(kib - prev->kib) / ((double)(t_rel - prev->t_rel) / 1e6) / 1000.0);
    *prev = (nvml_nvlink_prev){ 1, t_rel, kib };
    sim_put_int(out, rate);
    return NVML_SUCCESS;
}

static nvmlReturn_t read_string(nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned int),
                                nvmlDevice_t dev, unsigned int size, sim_value *out)
{
    char buf[256];
    nvmlReturn_t r = fn(dev, buf, size);
    if (r == NVML_SUCCESS)
        sim_put_str(out, buf);
    return r;
}

static nvmlReturn_t read_mapped(nvml_source *s, unsigned int gpu, const field_map *m,
                                int64_t t_rel, sim_value *out)
{
    nvml_gpu *g = &s->gpus[gpu];
    nvmlDevice_t dev = g->dev;
    nvmlReturn_t r = NVML_SUCCESS;
    char buf[256];
    unsigned int u = 0, period = 0;
    unsigned long long ull = 0;
    nvmlFieldValue_t fv;
    switch (m->kind) {
    case RK_DRIVER_VERSION:
        if ((r = s->api.driver_version(buf, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)) == NVML_SUCCESS)
            sim_put_str(out, buf);
        break;
    case RK_NVML_VERSION:
        if ((r = s->api.nvml_version(buf, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE)) == NVML_SUCCESS)
            sim_put_str(out, buf);
        break;
    case RK_NAME: r = read_string(s->api.name, dev, NVML_DEVICE_NAME_V2_BUFFER_SIZE, out); break;
    case RK_SERIAL: r = read_string(s->api.serial, dev, NVML_DEVICE_SERIAL_BUFFER_SIZE, out); break;
    case RK_UUID: r = read_string(s->api.uuid, dev, NVML_DEVICE_UUID_V2_BUFFER_SIZE, out); break;
    case RK_INFOROM_IMAGE:
        r = read_string(s->api.inforom_image, dev, NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE, out);
        break;
    case RK_VBIOS: r = read_string(s->api.vbios, dev, NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE, out); break;
    case RK_INFOROM:
        if ((r = s->api.inforom(dev, (nvmlInforomObject_t)m->arg, buf,
                                NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE)) == NVML_SUCCESS)
            sim_put_str(out, buf);
        break;
    case RK_BRAND: {
        nvmlBrandType_t b = NVML_BRAND_UNKNOWN;
        if ((r = s->api.brand(dev, &b)) == NVML_SUCCESS)
            sim_put_str(out, brand_name(b));
        break;
    }
    case RK_PCI_BUS_ID: {
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        if ((r = s->api.pci(dev, &pci)) == NVML_SUCCESS)
            sim_put_str(out, pci.busId);
        break;
    }
    case RK_CLOCK:
        if ((r = s->api.clock(dev, (nvmlClockType_t)m->arg, &u)) == NVML_SUCCESS)
            sim_put_int(out, u);
        break;
    case RK_REASONS:
        if ((r = s->api.reasons(dev, &ull)) == NVML_SUCCESS)
            sim_put_int(out, (int64_t)ull);
        break;
    case RK_TEMPERATURE:
        /* DCGM drops a reading over 200 degC as no reading */
        if ((r = s->api.temperature(dev, (nvmlTemperatureSensors_t)m->arg, &u)) == NVML_SUCCESS &&
            u <= 200)
            sim_put_int(out, u);
        break;
    case RK_FIELD_UINT_TEMP:
        /* DCGM reads value.uiVal whatever valueType says; over 200 is no reading */
        if ((r = nvml_src_read_field(s, dev, m->arg, 0, &fv)) == NVML_SUCCESS && fv.value.uiVal <= 200)
            sim_put_int(out, fv.value.uiVal);
        break;
    case RK_FIELD_MILLIWATTS:
        if ((r = nvml_src_read_field(s, dev, m->arg, 0, &fv)) == NVML_SUCCESS)
            sim_put_double(out, fv.valueType == NVML_VALUE_TYPE_DOUBLE ? fv.value.dVal / 1000.0
                                                                        : (double)nvml_src_field_i64(&fv) / 1000.0);
        break;
    case RK_POWER_LIMIT: {
        unsigned int lo = 0, hi = 0;
        switch (m->arg) {
        case LIMIT_CURRENT: r = s->api.power_limit(dev, &u); break;
        case LIMIT_DEFAULT: r = s->api.power_limit_default(dev, &u); break;
        case LIMIT_ENFORCED: r = s->api.power_limit_enforced(dev, &u); break;
        default:
            r = s->api.power_limit_range(dev, &lo, &hi);
            u = m->arg == LIMIT_MIN ? lo : hi;
            break;
        }
        if (r == NVML_SUCCESS)
            sim_put_double(out, (double)u / 1000.0);
        break;
    }
    case RK_POWER:
        if ((r = s->api.power(dev, &u)) == NVML_SUCCESS)
            sim_put_double(out, (double)u / 1000.0);
        break;
    case RK_UTIL:
        if (g->util_memo.t_rel != t_rel) {
            g->util_memo.rc = s->api.util(dev, &g->util);
            g->util_memo.t_rel = t_rel;
        }
        if ((r = g->util_memo.rc) == NVML_SUCCESS)
            sim_put_int(out, m->arg == 0 ? g->util.gpu : g->util.memory);
        break;
    case RK_ENCODER:
        if ((r = s->api.encoder(dev, &u, &period)) == NVML_SUCCESS)
            sim_put_int(out, u);
        break;
    case RK_DECODER:
        if ((r = s->api.decoder(dev, &u, &period)) == NVML_SUCCESS)
            sim_put_int(out, u);
        break;
    case RK_MEMORY:
        if (g->memory_memo.t_rel != t_rel) {
            memset(&g->memory, 0, sizeof g->memory);
            if (s->api.memory) {
                g->memory.version = nvmlMemory_v2;
                g->memory_memo.rc = s->api.memory(dev, &g->memory);
            } else {
                nvmlMemory_t v1;
                memset(&v1, 0, sizeof v1);
                g->memory_memo.rc = s->api.memory_v1(dev, &v1);
                g->memory.total = v1.total;
                g->memory.free = v1.free;
                g->memory.used = v1.used;
            }
            g->memory_memo.t_rel = t_rel;
        }
        if ((r = g->memory_memo.rc) == NVML_SUCCESS) {
            const nvmlMemory_v2_t *mem = &g->memory;
            unsigned long long bytes = m->arg == MEM_TOTAL ? mem->total
                                     : m->arg == MEM_FREE  ? mem->free
                                     : m->arg == MEM_USED  ? mem->used : mem->reserved;
            sim_put_int(out, (int64_t)(bytes / (1024ull * 1024ull)));
        }
        break;
    case RK_FIELD:
        if ((r = nvml_src_read_field(s, dev, m->arg, 0, &fv)) == NVML_SUCCESS)
            sim_put_int(out, nvml_src_field_i64(&fv));
        break;
    case RK_RETIRED_PAGES: {
        /* a count only: no address array, so INSUFFICIENT_SIZE is the answer to expect */
        unsigned int pages = 0;
        r = s->api.retired_pages(dev, (nvmlPageRetirementCause_t)m->arg, &pages, NULL);
        if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
            r = NVML_SUCCESS;
            sim_put_int(out, pages);
        }
        break;
    }
    case RK_NVLINK_RATE: r = nvlink_rate(s, g, m->arg, t_rel, out); break;
    case RK_PCIE_LINK:
        r = m->arg == LINK_MAX_GEN ? s->api.pcie_max_gen(dev, &u)
          : m->arg == LINK_MAX_WIDTH ? s->api.pcie_max_width(dev, &u)
          : m->arg == LINK_GEN ? s->api.pcie_gen(dev, &u) : s->api.pcie_width(dev, &u);
        if (r == NVML_SUCCESS)
            sim_put_int(out, u);
        break;
    case RK_TEMP_THRESHOLD:
        if ((r = s->api.temp_threshold(dev, (nvmlTemperatureThresholds_t)m->arg, &u)) == NVML_SUCCESS)
            sim_put_int(out, u);
        break;
    case RK_VGPU_LICENSE: {
        nvmlGridLicensableFeatures_t grid;
        memset(&grid, 0, sizeof grid);
        if ((r = s->api.grid_licensable(dev, &grid)) == NVML_SUCCESS) {
            int64_t licensed = 0;
            unsigned int n = grid.licensableFeaturesCount;
            if (n > NVML_GRID_LICENSE_FEATURE_MAX_COUNT)
                n = NVML_GRID_LICENSE_FEATURE_MAX_COUNT;
            for (unsigned int i = 0; grid.isGridLicenseSupported && i < n; i++)
                if (grid.gridLicensableFeatures[i].featureCode == NVML_GRID_LICENSE_FEATURE_CODE_VGPU)
                    licensed = grid.gridLicensableFeatures[i].featureState > 0;
            sim_put_int(out, licensed);
        }
        break;
    }
    case RK_SLOW:
    case RK_GPM:
    case RK_EVENT:
        /* served elsewhere (nvml_sample dispatches them); an event field's sample is its last event */
        out->kind = SIM_VALUE_BLANK;
        return NVML_SUCCESS;
    }
    return r;
}

int nvml_fields_sample(nvml_source *s, unsigned int gpu, unsigned short f, int64_t t_rel,
                       sim_value *out)
{
    const field_map *m = find_map(f);
    if (!m || !have_entry_point(s, m)) {
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        return DCGM_ST_OK;
    }
    nvml_cached *cached = NULL;
    int64_t start = nvml_src_mono_ns();
    if (m->refresh_us > 0) {
        cached = cache_slot(s, gpu, m);
        if (cached && cached->have && start - cached->read_ns < m->refresh_us * 1000) {
            *out = cached->value;
            return DCGM_ST_OK;
        }
    }
    nvmlReturn_t r = read_mapped(s, gpu, m, t_rel, out);
    nvml_src_count_read(s, f, (uint64_t)(nvml_src_mono_ns() - start));
    if (r != NVML_SUCCESS)
        nvml_src_put_error(s, gpu, r, t_rel, out);
    if (cached && r != NVML_ERROR_GPU_IS_LOST) {
        cached->have = 1;
        cached->read_ns = start;
        cached->value = *out;
    }
    return DCGM_ST_OK;
}

int nvml_fields_table_sorted(void)
{
    for (size_t i = 1; i < N_FIELD_MAPS; i++)
        if (field_maps[i - 1].field_id >= field_maps[i].field_id)
            return 0;
    return 1;
}
