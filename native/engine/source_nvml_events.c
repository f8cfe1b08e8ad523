/*
 * source_nvml_events.c -- XIDs (DCGM_FI_DEV_XID_ERRORS, 230) through an
 * NVML event set.  Not read yet: no event fields.
 */
#include "source_nvml.h"

int nvml_events_is_event_field(unsigned short f)
{
    (void)f;
    return 0;
}

int nvml_events_read(nvml_source *s, unsigned int gpu, unsigned short f, int64_t from_rel,
                     int64_t to_rel, sim_event *out, int max)
{
    (void)s, (void)gpu, (void)f, (void)from_rel, (void)to_rel, (void)out, (void)max;
    return 0;
}

void nvml_events_free(nvml_source *s) { (void)s; }
