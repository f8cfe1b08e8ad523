/*
 * source.h -- the engine's value source: where its GPUs and their values
 * come from.  Below the cache, watches and API (shared by every source).
 *
 *   source_models.c  the simulated node (native/node/node.h), the default
 *   source_nvml.c    the driver's libnvidia-ml.so.1, opened at run time
 *
 * GPU identity (name, UUID, PCI bus id, serial, brand, driver version) is
 * served as the DCGM fields that carry it (50, 54, 57, 53, 51, 1) through
 * sample().  Every call is made under the engine's lock.
 */
#ifndef DCGM_SIM_SOURCE_H
#define DCGM_SIM_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "../../node/node.h"

#define VALUE_SOURCE_ENV "DCGM_ENGINE_SOURCE"
#define VALUE_SOURCE_NVML_LIB_ENV "DCGM_ENGINE_NVML_LIB"
#define VALUE_SOURCE_NVML_SONAME "libnvidia-ml.so.1"

/* What a source spent on one field: its reads of the hardware and their
 * cadence where the source reads the field on its own schedule. */
typedef struct value_source_field_stats {
    unsigned short field_id;
    uint64_t reads;                     /* reads of the hardware for this field */
    uint64_t read_ns;                   /* wall time spent in them */
    uint64_t late;                      /* reads made more than one cadence late */
    int64_t period_us;                  /* own cadence of the read; 0 = at each sample */
    /* estimated fields (energy between true reads): each true read's correction,
     * the estimate minus the true value, in the field's unit */
    uint64_t corrections;
    double last_correction;
    double max_abs_correction;
} value_source_field_stats;

enum { VS_LINK_NONE = 0, VS_LINK_DOWN = 1, VS_LINK_UP = 2 };

typedef struct value_source_ops {
    const char *kind;                                   /* "models" or "nvml" */
    unsigned int (*gpu_count)(void *impl);
    /* DCGM_ST_OK with out->kind telling a reading from a blank, or an error */
    int (*sample)(void *impl, unsigned int gpu, unsigned short field_id, int64_t t_rel_us,
                  sim_value *out);
    int (*field_supported)(void *impl, unsigned int gpu, unsigned short field_id);
    int (*is_event_field)(void *impl, unsigned short field_id);
    int (*events)(void *impl, unsigned int gpu, unsigned short field_id, int64_t from_rel_us,
                  int64_t to_rel_us, sim_event *out, int max);
    /* when the GPU was lost (us after start), -1 while it is not */
    int64_t (*gpu_lost_at)(void *impl, unsigned int gpu);
    unsigned int (*mig_instances)(void *impl, unsigned int gpu);
    /* the profile of one GPU instance (node.h); NULL when the source cannot say */
    const struct sim_mig_profile *(*mig_profile)(void *impl, unsigned int gpu, unsigned int index);
    /* one NvLink link of a GPU: VS_LINK_UP, VS_LINK_DOWN or VS_LINK_NONE (no such
     * link, or the hardware would not say) */
    int (*nvlink_state)(void *impl, unsigned int gpu, unsigned int link);
    /* one line: what the source reads, e.g. the path of the NVML library */
    void (*describe)(void *impl, char *buf, size_t len);
    /* per-field statistics into out (at most max), returns how many there are */
    int (*field_stats)(void *impl, value_source_field_stats *out, int max);
    /* one line worth a warning at start-up (e.g. entry points the library lacks), or "" */
    void (*notes)(void *impl, char *buf, size_t len);
    /* sets a GPU's power limit from t_rel_us on (DCGM_ST_*); NULL: the source's
     * GPUs take no settings (the config manager answers NOT_SUPPORTED) */
    int (*set_power_limit)(void *impl, unsigned int gpu, int64_t t_rel_us, double watts);
    void (*free)(void *impl);
    /* entities beyond the GPUs (NULL: none): NvSwitches, Grace CPUs and the cores of
     * each, and their readings (sim_node_level_sample) */
    unsigned int (*nvswitch_count)(void *impl);
    unsigned int (*cpu_count)(void *impl);
    unsigned int (*cpu_core_count)(void *impl);
    int (*level_sample)(void *impl, int group, unsigned int id, unsigned int parent, unsigned int index,
                        unsigned short field_id, int64_t t_rel_us, sim_value *out);
} value_source_ops;

typedef struct value_source {
    const value_source_ops *ops;
    void *impl;
} value_source;

/*
 * Open a source: kind NULL, "" or "models" is the simulated node built from
 * spec (sim_node_load); "nvml" is the NVML library.  On failure returns a
 * DCGM_ST_* code and writes one line into err.
 */
int value_source_open(const char *kind, const char *spec, value_source **out, char *err,
                      size_t errlen);
void value_source_free(value_source *src);

/* the two implementations (source_models.c, source_nvml.c) */
int value_source_models_open(const char *spec, value_source *src, char *err, size_t errlen);
int value_source_nvml_open(value_source *src, char *err, size_t errlen);

static inline unsigned int vs_gpu_count(value_source *s) { return s->ops->gpu_count(s->impl); }
static inline int vs_sample(value_source *s, unsigned int gpu, unsigned short f, int64_t t,
                            sim_value *out)
{
    return s->ops->sample(s->impl, gpu, f, t, out);
}
static inline int vs_field_supported(value_source *s, unsigned int gpu, unsigned short f)
{
    return s->ops->field_supported(s->impl, gpu, f);
}
static inline int vs_is_event_field(value_source *s, unsigned short f)
{
    return s->ops->is_event_field(s->impl, f);
}
static inline int vs_events(value_source *s, unsigned int gpu, unsigned short f, int64_t from,
                            int64_t to, sim_event *out, int max)
{
    return s->ops->events(s->impl, gpu, f, from, to, out, max);
}
static inline int64_t vs_gpu_lost_at(value_source *s, unsigned int gpu)
{
    return s->ops->gpu_lost_at(s->impl, gpu);
}
static inline unsigned int vs_mig_instances(value_source *s, unsigned int gpu)
{
    return s->ops->mig_instances(s->impl, gpu);
}
static inline const struct sim_mig_profile *vs_mig_profile(value_source *s, unsigned int gpu,
                                                           unsigned int index)
{
    return s->ops->mig_profile ? s->ops->mig_profile(s->impl, gpu, index) : NULL;
}

static inline int vs_nvlink_state(value_source *s, unsigned int gpu, unsigned int link)
{
    return s->ops->nvlink_state ? s->ops->nvlink_state(s->impl, gpu, link) : VS_LINK_NONE;
}

static inline unsigned int vs_nvswitch_count(value_source *s)
{
    return s->ops->nvswitch_count ? s->ops->nvswitch_count(s->impl) : 0;
}
static inline unsigned int vs_cpu_count(value_source *s)
{
    return s->ops->cpu_count ? s->ops->cpu_count(s->impl) : 0;
}
static inline unsigned int vs_cpu_core_count(value_source *s)
{
    return s->ops->cpu_core_count ? s->ops->cpu_core_count(s->impl) : 0;
}
/* DCGM_ST_OK with out->kind OK or NOT_SUPPORTED; NOT_SUPPORTED when the source has no such entities */
static inline int vs_level_sample(value_source *s, int group, unsigned int id, unsigned int parent,
                                  unsigned int index, unsigned short f, int64_t t, sim_value *out)
{
    if (!s->ops->level_sample)
        return DCGM_ST_NOT_SUPPORTED;
    return s->ops->level_sample(s->impl, group, id, parent, index, f, t, out);
}

#endif /* DCGM_SIM_SOURCE_H */
