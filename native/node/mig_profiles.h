/*
 * MIG GPU-instance profiles of the simulated models: the names an operator
 * gives nvidia-smi (and DCGM reports as an instance's DCGM_FI_DEV_NAME), with
 * the compute slices (sevenths of the SMs) and memory slices (eighths of the
 * framebuffer) each takes.
 *
 * Header-only, so that the node (scenario checks) and the engine (instance
 * names, hierarchy, per-instance framebuffer) share one table without another
 * source file in either library's build.
 */
#ifndef SIM_MIG_PROFILES_H
#define SIM_MIG_PROFILES_H

#include <stddef.h>
#include <string.h>

typedef struct sim_mig_profile {
    const char *name;             /* e.g. "3g.40gb" */
    unsigned int compute_slices;  /* of 7 */
    unsigned int memory_slices;   /* of 8 */
    unsigned int dcgm_profile;    /* dcgmMigProfile_t: 1, 2, 3, 4 slices; 5 = 7 slices; 10 = 1 slice rev 2 */
} sim_mig_profile;

#define SIM_MIG_COMPUTE_SLICES 7
#define SIM_MIG_MEMORY_SLICES 8

/* the same layout on every model: only the memory in the name differs */
#define SIM_MIG_TABLE(g1, g1x2, g2, g3, g4, g7)                                               \
    {                                                                                         \
        { g1, 1, 1, 1 }, { g1x2, 1, 2, 10 }, { g2, 2, 2, 2 }, { g3, 3, 4, 3 }, { g4, 4, 4, 4 }, \
            { g7, 7, 8, 5 }                                                                   \
    }
#define SIM_MIG_PROFILES_PER_MODEL 6

typedef struct sim_mig_model_profiles {
    const char *model_key;
    sim_mig_profile profiles[SIM_MIG_PROFILES_PER_MODEL];
} sim_mig_model_profiles;

/* The profiles of a model (by its scenario key); NULL for a model without MIG. */
static inline const sim_mig_profile *sim_mig_profiles_of(const char *model_key)
{
    /* inside the function: an unused table in a file that includes this would warn */
    static const sim_mig_model_profiles tables[] = {
        { "H100", SIM_MIG_TABLE("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb") },
        { "H200", SIM_MIG_TABLE("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb") },
        { "A100", SIM_MIG_TABLE("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb") },
    };
    for (size_t i = 0; model_key && i < sizeof tables / sizeof tables[0]; i++)
        if (strcmp(tables[i].model_key, model_key) == 0)
            return tables[i].profiles;
    return NULL;
}

static inline const sim_mig_profile *sim_mig_profile_find(const char *model_key, const char *name)
{
    const sim_mig_profile *p = sim_mig_profiles_of(model_key);
    for (int i = 0; p && i < SIM_MIG_PROFILES_PER_MODEL; i++)
        if (strcmp(p[i].name, name) == 0)
            return &p[i];
    return NULL;
}

/* The profile of each of n instances that split a GPU evenly (mig_instances = n):
 * one 7g, two 3g, three 2g, else 1g each. */
static inline const sim_mig_profile *sim_mig_profile_even(const char *model_key, unsigned int n)
{
    const sim_mig_profile *p = sim_mig_profiles_of(model_key);
    if (!p)
        return NULL;
    switch (n) {
    case 1: return &p[5];
    case 2: return &p[3];
    case 3: return &p[2];
    default: return &p[0];
    }
}

/* "1g.10gb, 1g.20gb, ..." into buf, for error messages. */
static inline const char *sim_mig_profile_names(const char *model_key, char *buf, size_t len)
{
    const sim_mig_profile *p = sim_mig_profiles_of(model_key);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; p && i < SIM_MIG_PROFILES_PER_MODEL && used + 1 < len; i++) {
        size_t n = strlen(p[i].name) + (i ? 2 : 0);
        if (used + n + 1 > len)
            break;
        memcpy(buf + used, i ? ", " : "", i ? 2 : 0);
        memcpy(buf + used + (i ? 2 : 0), p[i].name, strlen(p[i].name) + 1);
        used += n;
    }
    return buf;
}

#endif
