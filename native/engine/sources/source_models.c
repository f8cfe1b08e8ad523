/*
 * source_models.c -- the default value source: the simulated node (node.c,
 * models.c, scenario.c), and value_source_open, which picks a source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"

static unsigned int models_gpu_count(void *impl) { return sim_node_gpu_count(impl); }

static int models_sample(void *impl, unsigned int gpu, unsigned short f, int64_t t, sim_value *out)
{
    return sim_node_sample(impl, gpu, f, t, out);
}

static int models_field_supported(void *impl, unsigned int gpu, unsigned short f)
{
    return sim_node_field_supported(impl, gpu, f);
}

static int models_is_event_field(void *impl, unsigned short f)
{
    (void)impl;
    return sim_node_is_event_field(f);
}

static int models_events(void *impl, unsigned int gpu, unsigned short f, int64_t from, int64_t to,
                         sim_event *out, int max)
{
    return sim_node_events(impl, gpu, f, from, to, out, max);
}

static int64_t models_gpu_lost_at(void *impl, unsigned int gpu)
{
    return sim_node_gpu_lost_at(impl, gpu);
}

static unsigned int models_mig_instances(void *impl, unsigned int gpu)
{
    return sim_node_gpu_mig_instances(impl, gpu);
}

static const struct sim_mig_profile *models_mig_profile(void *impl, unsigned int gpu, unsigned int index)
{
    return sim_node_gpu_mig_profile(impl, gpu, index);
}

/* every link the model has is up */
static int models_nvlink_state(void *impl, unsigned int gpu, unsigned int link)
{
    return link < sim_node_gpu_nvlinks(impl, gpu) ? VS_LINK_UP : VS_LINK_NONE;
}

static void models_describe(void *impl, char *buf, size_t len)
{
    (void)impl;
    snprintf(buf, len, "models");
}

/* the node's values cost nothing worth counting */
static int models_field_stats(void *impl, value_source_field_stats *out, int max)
{
    (void)impl, (void)out, (void)max;
    return 0;
}

static void models_notes(void *impl, char *buf, size_t len)
{
    (void)impl;
    if (len)
        buf[0] = '\0';
}

static int models_set_power_limit(void *impl, unsigned int gpu, int64_t t_rel_us, double watts)
{
    return sim_node_set_power_limit(impl, gpu, t_rel_us, watts);
}

static void models_free(void *impl) { sim_node_free(impl); }

static unsigned int models_nvswitch_count(void *impl) { return sim_node_nvswitch_count(impl); }
static unsigned int models_cpu_count(void *impl) { return sim_node_cpu_count(impl); }
static unsigned int models_cpu_core_count(void *impl) { return sim_node_cpu_core_count(impl); }

static int models_level_sample(void *impl, int group, unsigned int id, unsigned int parent,
                               unsigned int index, unsigned short f, int64_t t, sim_value *out)
{
    return sim_node_level_sample(impl, group, id, parent, index, f, t, out);
}

static const value_source_ops models_ops = {
    .kind = "models",
    .gpu_count = models_gpu_count,
    .sample = models_sample,
    .field_supported = models_field_supported,
    .is_event_field = models_is_event_field,
    .events = models_events,
    .gpu_lost_at = models_gpu_lost_at,
    .mig_instances = models_mig_instances,
    .mig_profile = models_mig_profile,
    .nvlink_state = models_nvlink_state,
    .describe = models_describe,
    .field_stats = models_field_stats,
    .notes = models_notes,
    .set_power_limit = models_set_power_limit,
    .free = models_free,
    .nvswitch_count = models_nvswitch_count,
    .cpu_count = models_cpu_count,
    .cpu_core_count = models_cpu_core_count,
    .level_sample = models_level_sample,
};

int value_source_models_open(const char *spec, value_source *src, char *err, size_t errlen)
{
    sim_node *node = NULL;
    int rc = sim_node_load(spec, &node, err, errlen);
    if (rc != DCGM_ST_OK || !node) {
        sim_node_free(node);
        return rc != DCGM_ST_OK ? rc : DCGM_ST_INIT_ERROR;
    }
    src->ops = &models_ops;
    src->impl = node;
    return DCGM_ST_OK;
}

int value_source_open(const char *kind, const char *spec, value_source **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    value_source *src = calloc(1, sizeof *src);
    if (!src)
        return DCGM_ST_MEMORY;
    int rc;
    if (!kind || !kind[0] || strcmp(kind, "models") == 0) {
        rc = value_source_models_open(spec, src, err, errlen);
    } else if (strcmp(kind, "nvml") == 0) {
        rc = value_source_nvml_open(src, err, errlen);
    } else {
        snprintf(err, errlen, "%s=%s: unknown value source (models or nvml)", VALUE_SOURCE_ENV, kind);
        rc = DCGM_ST_BADPARAM;
    }
    if (rc != DCGM_ST_OK) {
        free(src);
        return rc;
    }
    *out = src;
    return DCGM_ST_OK;
}

void value_source_free(value_source *src)
{
    if (!src)
        return;
    if (src->ops)
        src->ops->free(src->impl);
    free(src);
}
