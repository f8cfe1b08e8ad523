/*
 * What a MIG GPU instance (or its compute instance) reads, where it differs
 * from the GPU that holds it.
 *
 * Its name is its profile (1g.10gb ... on an H100; DCGM answers an instance's
 * DCGM_FI_DEV_NAME with it), its UUID is the MIG device's own ("MIG-...", what
 * the device plugin hands pods), its framebuffer is the profile's share of the
 * GPU's (DCGM answers the framebuffer fields per instance), and the
 * whole-GPU utilisation counters are not supported on it (DCGM and NVML only
 * count them per GPU; MIG users read the profiling fields instead).  Other
 * fields read as the GPU's.
 */
#include <stdint.h>
#include <stdio.h>

#include "core_internal.h"
#include "../../dcgm_field_ids.h"

static int is_instance(const engine_entity *ent)
{
    return ent->group == DCGM_FE_GPU_I || ent->group == DCGM_FE_GPU_CI;
}

const sim_mig_profile *engine_instance_mig_profile(const sim_engine *e, const engine_entity *ent)
{
    if (ent->fake || ent->gpu == ENGINE_NO_GPU)
        return NULL;
    return vs_mig_profile(e->src, ent->gpu, ent->index);
}

const char *engine_instance_profile(const sim_engine *e, const engine_entity *ent)
{
    if (ent->fake)
        return ent->group == DCGM_FE_GPU_CI ? "1fc.1g.4gb" : "1fg.4gb";
    const sim_mig_profile *profile = engine_instance_mig_profile(e, ent);
    if (profile)
        return profile->name;
    /* a source that cannot say: an 80 GB H100 split evenly */
    switch (vs_mig_instances(e->src, ent->gpu)) {
    case 1: return "7g.80gb";
    case 2: return "3g.40gb";
    case 3: return "2g.20gb";
    default: return "1g.10gb";
    }
}

/* A MIG device UUID, the same on every run: the GPU's UUID and the instance index, hashed */
static void mig_uuid(sim_engine *e, const engine_entity *ent, int64_t t_rel, sim_value *out)
{
    sim_value gpu;
    if (vs_sample(e->src, ent->gpu, DCGM_FI_DEV_GPU_UUID, t_rel, &gpu) != DCGM_ST_OK || gpu.kind != SIM_VALUE_OK) {
        out->kind = SIM_VALUE_BLANK;
        return;
    }
    uint64_t h[2] = { 1469598103934665603ULL, 1099511628211ULL * 31 };
    for (int k = 0; k < 2; k++) {
        for (const char *c = gpu.str; *c; c++)
            h[k] = (h[k] ^ (unsigned char)*c) * 1099511628211ULL;
        h[k] = (h[k] ^ (ent->index + 1)) * 1099511628211ULL;
    }
    char text[64];
    snprintf(text, sizeof text, "MIG-%08x-%04x-%04x-%04x-%012llx", (unsigned int)(h[0] >> 32),
             (unsigned int)(h[0] >> 16) & 0xffffu, (unsigned int)h[0] & 0xffffu, (unsigned int)(h[1] >> 48),
             (unsigned long long)(h[1] & 0xffffffffffffULL));
    sim_put_str(out, text);
}

static int64_t gpu_int(sim_engine *e, unsigned int gpu, unsigned short field_id, int64_t t_rel, int *ok)
{
    sim_value v;
    if (vs_sample(e->src, gpu, field_id, t_rel, &v) != DCGM_ST_OK || v.kind != SIM_VALUE_OK) {
        *ok = 0;
        return 0;
    }
    return v.i64;
}

int engine_instance_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                  int64_t t_rel, sim_value *out)
{
    if (!is_instance(ent))
        return 0;
    if (field_id == DCGM_FI_DEV_GPU_NAME) {
        sim_put_str(out, engine_instance_profile(e, ent));
        return 1;
    }
    if (field_id == DCGM_FI_DEV_GPU_UUID && !ent->fake && ent->gpu != ENGINE_NO_GPU) {
        mig_uuid(e, ent, t_rel, out);
        return 1;
    }
    if (field_id == DCGM_FI_DEV_GPU_UTIL_RATIO || field_id == DCGM_FI_DEV_MEM_COPY_UTIL) {
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        return 1;
    }
    if (field_id < DCGM_FI_DEV_FB_TOTAL || field_id > DCGM_FI_DEV_FB_USED_RATIO)
        return 0;
    const sim_mig_profile *profile = engine_instance_mig_profile(e, ent);
    if (!profile)
        return 0;
    /* the profile's memory slices of the GPU's framebuffer, and of what the GPU's work uses */
    int ok = 1;
    int64_t total = gpu_int(e, ent->gpu, DCGM_FI_DEV_FB_TOTAL, t_rel, &ok) * profile->memory_slices / SIM_MIG_MEMORY_SLICES;
    int64_t reserved = gpu_int(e, ent->gpu, DCGM_FI_DEV_FB_RESERVED, t_rel, &ok) * profile->memory_slices /
                       SIM_MIG_MEMORY_SLICES;
    int64_t used = gpu_int(e, ent->gpu, DCGM_FI_DEV_FB_USED, t_rel, &ok) * profile->memory_slices / SIM_MIG_MEMORY_SLICES;
    if (!ok) {
        out->kind = SIM_VALUE_BLANK;
        return 1;
    }
    int64_t usable = total - reserved;
    switch (field_id) {
    case DCGM_FI_DEV_FB_TOTAL: sim_put_int(out, total); break;
    case DCGM_FI_DEV_FB_FREE: sim_put_int(out, usable - used); break;
    case DCGM_FI_DEV_FB_USED: sim_put_int(out, used); break;
    case DCGM_FI_DEV_FB_RESERVED: sim_put_int(out, reserved); break;
    default: sim_put_double(out, usable > 0 ? (double)used / (double)usable : 0.0); break;
    }
    return 1;
}
