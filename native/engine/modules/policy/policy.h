/*
 * policy.h -- DCGM's policy manager on the cache core (engine_policy.c):
 * policies per GPU, registrations, and the violations waiting for each
 * owner.
 */
#ifndef DCGM_SIM_MODULE_POLICY_H
#define DCGM_SIM_MODULE_POLICY_H

#include "../../core/core.h"

/* policy_get writes
 * one policy per GPU of the group (at most DCGM_MAX_NUM_DEVICES) and sets
 * *count to how many.  policy_register adds, for the owner, a watcher of the
 * conditions on every GPU of the group, its violations tagged with cookie;
 * policy_unregister drops all the owner's.  policy_take moves up to capacity
 * of the owner's pending violations, oldest first, into out. */
typedef struct engine_policy_note {
    uint32_t cookie;                   /* the registration's */
    uint32_t reserved;
    dcgmPolicyCallbackResponse_v2 response;
} engine_policy_note;
int engine_policy_set(sim_engine *engine, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy);
int engine_policy_get(sim_engine *engine, dcgmGpuGrp_t group, dcgmPolicy_v1 *out,
                      unsigned int *count);
int engine_policy_register(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group,
                           unsigned int conditions, uint32_t cookie);
int engine_policy_unregister(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group);
int engine_policy_take(sim_engine *engine, engine_owner owner, engine_policy_note *out,
                       unsigned int capacity, unsigned int *count);

/* Its hooks into the core: every value stored is checked against the
 * registrations; a connection's registrations go with it. */
extern const engine_module engine_policy_module;

#endif /* DCGM_SIM_MODULE_POLICY_H */
