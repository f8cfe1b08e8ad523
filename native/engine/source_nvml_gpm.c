/*
 * source_nvml_gpm.c -- the profiling fields (DCGM_FI_PROF_*) from GPM.
 * Not read yet: NOT_SUPPORTED.
 */
#include "source_nvml.h"

int nvml_gpm_is_field(unsigned short f) { return f >= 1001 && f <= 1010; }

int nvml_gpm_sample(nvml_source *s, unsigned int gpu, unsigned short f, int64_t t_rel,
                    sim_value *out)
{
    (void)s, (void)gpu, (void)f, (void)t_rel;
    out->kind = SIM_VALUE_NOT_SUPPORTED;
    return DCGM_ST_OK;
}

void nvml_gpm_free(nvml_source *s) { (void)s; }
