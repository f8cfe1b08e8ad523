/*
 * source_nvml.h -- the seams inside the NVML value source.  Nothing outside
 * the source_nvml*.c files includes this; the interface is source.h.
 *
 *   source_nvml.c         open (dlopen, symbols, GPUs), the ops table, errors
 *   source_nvml_fields.c  the field map: which NVML call and conversion serves
 *                         each DCGM field (reference/nvml/fieldmap.tsv)
 *   source_nvml_slow.c    the reader thread for the costly reads (energy, PCIe
 *                         replays) and the energy integrated between them
 *   source_nvml_events.c  XIDs through an NVML event set
 *   source_nvml_gpm.c     the profiling fields (DCGM_FI_PROF_*) from GPM
 *
 * Locking: every ops call comes under the engine's lock, so the per-GPU
 * state below is touched by one thread at a time -- except the slow-read
 * cells and the statistics, which the reader thread shares under s->mu.
 */
#ifndef DCGM_ENGINE_SOURCE_NVML_H
#define DCGM_ENGINE_SOURCE_NVML_H

#include <pthread.h>
#include <stdint.h>

#include "source.h"
#include "../../nvml/nvml_abi.h"

#define NVML_SRC_MAX_GPUS DCGM_MAX_NUM_DEVICES
#define NVML_SRC_MAX_FIELD 1536           /* above every DCGM field id (DCGM_FI_MAX_FIELDS) */
#define NVML_SRC_NVLINK_SCOPES (NVML_NVLINK_MAX_LINKS + 1)  /* links 0..17 and the total */

/* ---- the NVML entry points the source may use ---------------------------
 * Each is looked up once at open; NULL when this libnvidia-ml.so.1 lacks it
 * (an older driver), and then the fields that need it are NOT_SUPPORTED.
 * Only the first group (nvml_required) must exist for the source to open. */
#define NVML_SRC_REQUIRED(X)                                                        \
    X(init, nvmlReturn_t, (void), "nvmlInit_v2")                                    \
    X(shutdown, nvmlReturn_t, (void), "nvmlShutdown")                               \
    X(count, nvmlReturn_t, (unsigned int *), "nvmlDeviceGetCount_v2")               \
    X(handle, nvmlReturn_t, (unsigned int, nvmlDevice_t *), "nvmlDeviceGetHandleByIndex_v2")

#define NVML_SRC_OPTIONAL(X)                                                        \
    X(name, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int), "nvmlDeviceGetName") \
    X(uuid, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int), "nvmlDeviceGetUUID") \
    X(serial, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int), "nvmlDeviceGetSerial") \
    X(driver_version, nvmlReturn_t, (char *, unsigned int), "nvmlSystemGetDriverVersion") \
    X(nvml_version, nvmlReturn_t, (char *, unsigned int), "nvmlSystemGetNVMLVersion") \
    X(pci, nvmlReturn_t, (nvmlDevice_t, nvmlPciInfo_t *), "nvmlDeviceGetPciInfo_v3") \
    X(brand, nvmlReturn_t, (nvmlDevice_t, nvmlBrandType_t *), "nvmlDeviceGetBrand") \
    X(inforom, nvmlReturn_t, (nvmlDevice_t, nvmlInforomObject_t, char *, unsigned int), \
      "nvmlDeviceGetInforomVersion")                                                \
    X(inforom_image, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int),            \
      "nvmlDeviceGetInforomImageVersion")                                           \
    X(vbios, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int), "nvmlDeviceGetVbiosVersion") \
    X(temperature, nvmlReturn_t, (nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *), \
      "nvmlDeviceGetTemperature")                                                   \
    X(temp_threshold, nvmlReturn_t, (nvmlDevice_t, nvmlTemperatureThresholds_t, unsigned int *), \
      "nvmlDeviceGetTemperatureThreshold")                                          \
    X(power, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetPowerUsage") \
    X(power_limit, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetPowerManagementLimit") \
    X(power_limit_range, nvmlReturn_t, (nvmlDevice_t, unsigned int *, unsigned int *), \
      "nvmlDeviceGetPowerManagementLimitConstraints")                               \
    X(power_limit_default, nvmlReturn_t, (nvmlDevice_t, unsigned int *),          \
      "nvmlDeviceGetPowerManagementDefaultLimit")                                   \
    X(power_limit_enforced, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetEnforcedPowerLimit") \
    X(replay, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetPcieReplayCounter") \
    X(pcie_gen, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetCurrPcieLinkGeneration") \
    X(pcie_width, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetCurrPcieLinkWidth") \
    X(pcie_max_gen, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetMaxPcieLinkGeneration") \
    X(pcie_max_width, nvmlReturn_t, (nvmlDevice_t, unsigned int *), "nvmlDeviceGetMaxPcieLinkWidth") \
    X(reasons, nvmlReturn_t, (nvmlDevice_t, unsigned long long *),                  \
      "nvmlDeviceGetCurrentClocksEventReasons")                                     \
    X(clock, nvmlReturn_t, (nvmlDevice_t, nvmlClockType_t, unsigned int *), "nvmlDeviceGetClockInfo") \
    X(util, nvmlReturn_t, (nvmlDevice_t, nvmlUtilization_t *), "nvmlDeviceGetUtilizationRates") \
    X(encoder, nvmlReturn_t, (nvmlDevice_t, unsigned int *, unsigned int *),        \
      "nvmlDeviceGetEncoderUtilization")                                            \
    X(decoder, nvmlReturn_t, (nvmlDevice_t, unsigned int *, unsigned int *),        \
      "nvmlDeviceGetDecoderUtilization")                                            \
    X(memory, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_v2_t *), "nvmlDeviceGetMemoryInfo_v2") \
    X(memory_v1, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t *), "nvmlDeviceGetMemoryInfo") \
    X(fields, nvmlReturn_t, (nvmlDevice_t, int, nvmlFieldValue_t *), "nvmlDeviceGetFieldValues") \
    X(retired_pages, nvmlReturn_t, (nvmlDevice_t, nvmlPageRetirementCause_t, unsigned int *, \
                                    unsigned long long *), "nvmlDeviceGetRetiredPages") \
    X(grid_licensable, nvmlReturn_t, (nvmlDevice_t, nvmlGridLicensableFeatures_t *), \
      "nvmlDeviceGetGridLicensableFeatures_v4")                                     \
    X(event_set_create, nvmlReturn_t, (nvmlEventSet_t *), "nvmlEventSetCreate")     \
    X(register_events, nvmlReturn_t, (nvmlDevice_t, unsigned long long, nvmlEventSet_t), \
      "nvmlDeviceRegisterEvents")                                                   \
    X(supported_events, nvmlReturn_t, (nvmlDevice_t, unsigned long long *),         \
      "nvmlDeviceGetSupportedEventTypes")                                           \
    X(event_wait, nvmlReturn_t, (nvmlEventSet_t, nvmlEventData_t *, unsigned int),  \
      "nvmlEventSetWait_v2")                                                        \
    X(event_set_free, nvmlReturn_t, (nvmlEventSet_t), "nvmlEventSetFree")           \
    X(gpm_support, nvmlReturn_t, (nvmlDevice_t, nvmlGpmSupport_t *), "nvmlGpmQueryDeviceSupport") \
    X(gpm_alloc, nvmlReturn_t, (nvmlGpmSample_t *), "nvmlGpmSampleAlloc")           \
    X(gpm_free, nvmlReturn_t, (nvmlGpmSample_t), "nvmlGpmSampleFree")               \
    X(gpm_sample, nvmlReturn_t, (nvmlDevice_t, nvmlGpmSample_t), "nvmlGpmSampleGet") \
    X(gpm_metrics, nvmlReturn_t, (nvmlGpmMetricsGet_t *), "nvmlGpmMetricsGet") \
    X(nvlink_state, nvmlReturn_t, (nvmlDevice_t, unsigned int, nvmlEnableState_t *),  \
      "nvmlDeviceGetNvLinkState")

#define NVML_SRC_DECLARE(member, ret, args, symbol) ret(*member) args;

typedef struct nvml_api {
    NVML_SRC_REQUIRED(NVML_SRC_DECLARE)
    NVML_SRC_OPTIONAL(NVML_SRC_DECLARE)
} nvml_api;

/* ---- per-GPU state ------------------------------------------------------- */

/* Several DCGM fields come from one NVML call (utilisation, memory info,
 * GPM metrics): the call is made once per engine pass (one t_rel) and its
 * answer kept here for the other fields of the same pass. */
typedef struct nvml_memo {
    int64_t t_rel;                      /* the pass it belongs to, -1 = none */
    nvmlReturn_t rc;
} nvml_memo;

/* One NvLink throughput scope (a link, or all of them): the cumulative
 * KiB counters at the previous read, for DCGM's rate. */
typedef struct nvml_nvlink_prev {
    int have;
    int64_t t_rel;
    unsigned long long kib;             /* rx + tx */
} nvml_nvlink_prev;

#define NVML_GPM_METRICS 10                 /* DCGM_FI_PROF_* 1001..1010 */

typedef struct nvml_gpm {
    int checked, supported;
    nvmlGpmSample_t prev, cur;          /* allocated on first use */
    int have_prev;
    int have_values;                    /* the memo's pass measured between two samples */
    nvml_memo memo;
    double values[NVML_GPM_METRICS];
    nvmlReturn_t rcs[NVML_GPM_METRICS];
} nvml_gpm;

/* the latest reading of a field read less often than it is sampled */
typedef struct nvml_cached {
    int have;
    int64_t read_ns;                    /* CLOCK_MONOTONIC */
    sim_value value;
} nvml_cached;

typedef struct nvml_gpu {
    nvmlDevice_t dev;
    nvml_cached *cache;                 /* per field map entry, allocated on first use */
    int64_t lost_at;                    /* -1 while it answers */
    nvml_memo util_memo;
    nvmlUtilization_t util;
    nvml_memo memory_memo;
    nvmlMemory_v2_t memory;
    nvml_nvlink_prev nvlink[NVML_SRC_NVLINK_SCOPES];
    nvml_gpm gpm;
} nvml_gpu;

/* ---- slow reads (source_nvml_slow.c) ------------------------------------- */

/* A costly read done on the reader thread at its own cadence, never under
 * the engine's lock.  The latest answer is kept here for sample(). */
typedef struct nvml_slow_cell {
    int wanted;                         /* sample() asked for it: keep reading */
    int64_t asked_rel;                  /* when sample() last asked */
    int64_t due_rel;                    /* next read */
    int have;                           /* a reading has been taken */
    nvmlReturn_t rc;                    /* of the latest read */
    int64_t read_rel;                   /* when it was taken */
    unsigned long long value;
} nvml_slow_cell;

/* Energy between true counter reads: the true counter at its last read plus
 * the instant power integrated (trapezoids) since, served never below what
 * was served before (a counter must not go back). */
typedef struct nvml_energy {
    int have_base;
    int64_t base_rel;                   /* when the true counter was read */
    double base_mj;                     /* its value */
    double integral_mj;                 /* power integrated since base_rel */
    int have_power;
    int64_t power_rel;
    double power_mw;
    double served_mj;                   /* the latest value served */
    /* the correction each true read made: served estimate minus true counter */
    double last_error_mj;
    double max_abs_error_mj;
    uint64_t corrections;
} nvml_energy;

/* ---- statistics (per DCGM field id) -------------------------------------- */

typedef struct nvml_field_stats {
    uint64_t reads;                     /* NVML reads made for this field */
    uint64_t read_ns;                   /* wall time spent in them */
    uint64_t late;                      /* slow reads made more than one cadence late */
    int64_t period_us;                  /* slow fields: cadence of the true read; 0 = each sample */
} nvml_field_stats;

typedef struct nvml_source {
    void *lib;
    char path[512];
    int initialized;
    nvml_api api;
    char missing[1024];                 /* optional entry points this library lacks */
    unsigned int count;
    nvml_gpu gpus[NVML_SRC_MAX_GPUS];
    int64_t t0_mono_us;                 /* CLOCK_MONOTONIC at open: the source's own t_rel for the reader */

    pthread_mutex_t mu;                 /* the cells, energy state and stats below */
    pthread_cond_t wake;
    pthread_t reader;
    int reader_started, stopping;
    nvml_slow_cell energy_cells[NVML_SRC_MAX_GPUS];
    nvml_slow_cell replay_cells[NVML_SRC_MAX_GPUS];
    nvml_energy energy[NVML_SRC_MAX_GPUS];
    int64_t energy_period_us, replay_period_us;
    nvml_field_stats stats[NVML_SRC_MAX_FIELD];

    /* events (source_nvml_events.c) */
    nvmlEventSet_t event_set;
    int events_state;                   /* 0 not tried, 1 registered, -1 unavailable */
    int64_t events_drained_to;          /* the latest t_rel the set was drained at */
    struct nvml_xid_queue *xids;        /* per GPU, owned by source_nvml_events.c */
} nvml_source;

/* ---- between the files --------------------------------------------------- */

int64_t nvml_src_mono_us(void);
int64_t nvml_src_mono_ns(void);
/* NVML's answer as DCGM's blank kind; GPU_IS_LOST also marks the GPU lost */
void nvml_src_put_error(nvml_source *s, unsigned int gpu, nvmlReturn_t r, int64_t t_rel,
                        sim_value *out);
void nvml_src_mark_lost(nvml_source *s, unsigned int gpu, int64_t t_rel);
/* add one read of field f taking ns of wall time to its statistics (takes s->mu) */
void nvml_src_count_read(nvml_source *s, unsigned short f, uint64_t ns);

/* source_nvml_fields.c */
/* one id of nvmlDeviceGetFieldValues; the call's status, else the entry's own */
nvmlReturn_t nvml_src_read_field(nvml_source *s, nvmlDevice_t dev, unsigned int nvml_id,
                                 unsigned int scope, nvmlFieldValue_t *fv);
/* a field value as an int64, whichever member NVML filled */
int64_t nvml_src_field_i64(const nvmlFieldValue_t *v);
int nvml_fields_is_mapped(const nvml_source *s, unsigned short f);
int nvml_fields_sample(nvml_source *s, unsigned int gpu, unsigned short f, int64_t t_rel,
                       sim_value *out);
/* one line naming the default-counter fields this library cannot serve */
void nvml_fields_describe_missing(const nvml_source *s, char *buf, size_t len);
/* 1 when the map is sorted by field id, as its lookup needs */
int nvml_fields_table_sorted(void);

/* source_nvml_slow.c */
int nvml_slow_start(nvml_source *s, char *err, size_t errlen);
void nvml_slow_stop(nvml_source *s);
int nvml_slow_is_slow(unsigned short f);
/* the field served as an estimate between true reads (energy) */
int nvml_slow_is_estimated(unsigned short f);
/* the energy estimate's corrections over all GPUs: the latest largest, the largest, how many */
void nvml_slow_energy_error(nvml_source *s, double *last_mj, double *max_abs_mj,
                            uint64_t *corrections);
int nvml_slow_sample(nvml_source *s, unsigned int gpu, unsigned short f, int64_t t_rel,
                     sim_value *out);

/* source_nvml_events.c */
int nvml_events_is_event_field(unsigned short f);
int nvml_events_read(nvml_source *s, unsigned int gpu, unsigned short f, int64_t from_rel,
                     int64_t to_rel, sim_event *out, int max);
void nvml_events_free(nvml_source *s);

/* source_nvml_gpm.c */
int nvml_gpm_is_field(unsigned short f);
/* whether the GPU has GPM (asked once), for the profiling metric groups */
int nvml_gpm_gpu_supported(nvml_source *s, unsigned int gpu);
int nvml_gpm_sample(nvml_source *s, unsigned int gpu, unsigned short f, int64_t t_rel,
                    sim_value *out);
void nvml_gpm_free(nvml_source *s);

#endif /* DCGM_ENGINE_SOURCE_NVML_H */
