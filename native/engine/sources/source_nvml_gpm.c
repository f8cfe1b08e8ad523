/*
 * source_nvml_gpm.c -- the profiling fields (DCGM_FI_PROF_* 1001..1010) from
 * GPM, the GPU performance monitor of Hopper and later
 * (reference/nvml/fieldmap.tsv).
 *
 * Per GPU: nvmlGpmQueryDeviceSupport once (a GPU without GPM answers
 * NOT_SUPPORTED for these fields), two samples allocated on first use, and
 * on each engine pass (one t_rel) one nvmlGpmSampleGet and one
 * nvmlGpmMetricsGet of all ten metrics between the previous sample and the
 * new one; the samples then swap roles.  The first pass has no previous
 * sample and is blank, as DCGM's first profiling sample is.
 *
 * Units: utilisations come in percent and are served as ratios (value/100);
 * PCIe TX/RX come in MiB/s and are served as bytes/s (int64).
 */
#include <stdlib.h>

#include "source_nvml.h"
#include "../../dcgm_field_ids.h"

#define FIRST_FIELD 1001

/* the GPM metric behind each of the fields 1001..1010, in field order */
static const unsigned int metric_ids[NVML_GPM_METRICS] = {
    NVML_GPM_METRIC_GRAPHICS_UTIL,      /* 1001 DCGM_FI_PROF_GR_ENGINE_ACTIVE */
    NVML_GPM_METRIC_SM_UTIL,            /* 1002 DCGM_FI_PROF_SM_ACTIVE */
    NVML_GPM_METRIC_SM_OCCUPANCY,       /* 1003 DCGM_FI_PROF_SM_OCCUPANCY */
    NVML_GPM_METRIC_ANY_TENSOR_UTIL,    /* 1004 DCGM_FI_PROF_PIPE_TENSOR_ACTIVE */
    NVML_GPM_METRIC_DRAM_BW_UTIL,       /* 1005 DCGM_FI_PROF_DRAM_ACTIVE */
    NVML_GPM_METRIC_FP64_UTIL,          /* 1006 DCGM_FI_PROF_PIPE_FP64_ACTIVE */
    NVML_GPM_METRIC_FP32_UTIL,          /* 1007 DCGM_FI_PROF_PIPE_FP32_ACTIVE */
    NVML_GPM_METRIC_FP16_UTIL,          /* 1008 DCGM_FI_PROF_PIPE_FP16_ACTIVE */
    NVML_GPM_METRIC_PCIE_TX_PER_SEC,    /* 1009 DCGM_FI_PROF_PCIE_TX_BYTES */
    NVML_GPM_METRIC_PCIE_RX_PER_SEC,    /* 1010 DCGM_FI_PROF_PCIE_RX_BYTES */
};

#define MIB 1048576.0

int nvml_gpm_is_field(unsigned short f)
{
    return f >= FIRST_FIELD && f < FIRST_FIELD + NVML_GPM_METRICS;
}

static int have_entry_points(const nvml_source *s)
{
    return s->api.gpm_support && s->api.gpm_alloc && s->api.gpm_free && s->api.gpm_sample &&
           s->api.gpm_metrics;
}

/* Whether the GPU has GPM, asked once; NVML_SUCCESS or why not.  A lost GPU
 * is marked at t_rel, not when t_rel is negative (no pass asked). */
static nvmlReturn_t check_support(nvml_source *s, unsigned int gpu, int64_t t_rel)
{
    nvml_gpm *g = &s->gpus[gpu].gpm;
    if (g->checked)
        return g->supported ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    if (!have_entry_points(s)) {
        g->checked = 1;
        return NVML_ERROR_NOT_SUPPORTED;
    }
    nvmlGpmSupport_t support = { .version = NVML_GPM_SUPPORT_VERSION };
    nvmlReturn_t r = s->api.gpm_support(s->gpus[gpu].dev, &support);
    if (r == NVML_SUCCESS || r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND) {
        g->checked = 1;
        g->supported = r == NVML_SUCCESS && support.isSupportedDevice;
        return g->supported ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    }
    if (r == NVML_ERROR_GPU_IS_LOST && t_rel >= 0)
        nvml_src_mark_lost(s, gpu, t_rel);
    return r;   /* asked again next time */
}

int nvml_gpm_gpu_supported(nvml_source *s, unsigned int gpu)
{
    return gpu < s->count && check_support(s, gpu, -1) == NVML_SUCCESS;
}

/* The pass's sample and the metrics since the previous one, into g. */
static void take_pass(nvml_source *s, unsigned int gpu, nvml_gpm *g)
{
    nvmlDevice_t dev = s->gpus[gpu].dev;
    g->have_values = 0;
    if (!g->prev || !g->cur) {
        nvmlReturn_t r = NVML_SUCCESS;
        if (!g->prev)
            r = s->api.gpm_alloc(&g->prev);
        if (r == NVML_SUCCESS && !g->cur)
            r = s->api.gpm_alloc(&g->cur);
        if (r != NVML_SUCCESS) {
            g->memo.rc = r;
            return;
        }
    }
    nvmlReturn_t r = s->api.gpm_sample(dev, g->cur);
    g->memo.rc = r;
    if (r != NVML_SUCCESS)
        return;                 /* prev stays the one to measure from */
    if (g->have_prev) {
        /* about 23 KiB (NVML's metric array is sized for every metric id): not on the stack */
        nvmlGpmMetricsGet_t *mg = calloc(1, sizeof *mg);
        if (!mg) {
            g->memo.rc = NVML_ERROR_MEMORY;
        } else {
            mg->version = NVML_GPM_METRICS_GET_VERSION;
            mg->numMetrics = NVML_GPM_METRICS;
            mg->sample1 = g->prev;
            mg->sample2 = g->cur;
            for (int i = 0; i < NVML_GPM_METRICS; i++)
                mg->metrics[i].metricId = metric_ids[i];
            g->memo.rc = s->api.gpm_metrics(mg);
            if (g->memo.rc == NVML_SUCCESS) {
                for (int i = 0; i < NVML_GPM_METRICS; i++) {
                    g->values[i] = mg->metrics[i].value;
                    g->rcs[i] = mg->metrics[i].nvmlReturn;
                }
                g->have_values = 1;
            }
            free(mg);
        }
    }
    nvmlGpmSample_t t = g->prev;
    g->prev = g->cur;
    g->cur = t;
    g->have_prev = 1;
}

int nvml_gpm_sample(nvml_source *s, unsigned int gpu, unsigned short f, int64_t t_rel,
                    sim_value *out)
{
    if (gpu >= s->count || !nvml_gpm_is_field(f)) {
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        return DCGM_ST_OK;
    }
    nvmlReturn_t r = check_support(s, gpu, t_rel);
    if (r != NVML_SUCCESS) {
        nvml_src_put_error(s, gpu, r, t_rel, out);
        return DCGM_ST_OK;
    }
    nvml_gpm *g = &s->gpus[gpu].gpm;
    if (g->memo.t_rel != t_rel) {
        int64_t start = nvml_src_mono_ns();
        take_pass(s, gpu, g);
        g->memo.t_rel = t_rel;
        nvml_src_count_read(s, f, (uint64_t)(nvml_src_mono_ns() - start));
    }
    if (g->memo.rc != NVML_SUCCESS) {
        nvml_src_put_error(s, gpu, g->memo.rc, t_rel, out);
        return DCGM_ST_OK;
    }
    if (!g->have_values) {
        out->kind = SIM_VALUE_BLANK;    /* the first pass: nothing to measure from yet */
        return DCGM_ST_OK;
    }
    int i = f - FIRST_FIELD;
    if (g->rcs[i] != NVML_SUCCESS) {
        nvml_src_put_error(s, gpu, g->rcs[i], t_rel, out);
        return DCGM_ST_OK;
    }
    if (f >= DCGM_FI_PROF_PCIE_TX_BYTES)
        sim_put_int(out, (int64_t)(g->values[i] * MIB));
    else
        sim_put_double(out, g->values[i] / 100.0);
    return DCGM_ST_OK;
}

void nvml_gpm_free(nvml_source *s)
{
    for (unsigned int i = 0; i < s->count; i++) {
        nvml_gpm *g = &s->gpus[i].gpm;
        if (s->initialized && s->api.gpm_free) {
            if (g->prev)
                s->api.gpm_free(g->prev);
            if (g->cur)
                s->api.gpm_free(g->cur);
        }
        g->prev = g->cur = NULL;
        g->have_prev = g->have_values = 0;
    }
}
