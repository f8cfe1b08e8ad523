/*
 * health.h -- DCGM's health module on the cache core (engine_health.c for
 * the GPUs' systems, engine_health_host.c for CPUs and the host's IMEX
 * state): dcgmHealthSet / Get / Check, and the check behind topology's
 * RemoveUnhealthyGpus.
 */
#ifndef DCGM_SIM_MODULE_HEALTH_H
#define DCGM_SIM_MODULE_HEALTH_H

#include "../../core/core.h"

/* health_set watches
 * what the systems need on behalf of the owner's health watcher, with DCGM's
 * per-system floors over update_interval_us / max_keep_age_s (dcgmHealthSet
 * passes 30 s and 600 s). */
int engine_health_set(sim_engine *engine, engine_owner owner, dcgmGpuGrp_t group,
                      unsigned int systems, long long update_interval_us, double max_keep_age_s);
int engine_health_get(sim_engine *engine, dcgmGpuGrp_t group, unsigned int *systems);
int engine_health_check(sim_engine *engine, dcgmGpuGrp_t group, dcgmHealthResponse_v5 *out);

/* RemoveUnhealthyGpus's check (modules/topo/); takes the lock */
int engine_health_unhealthy_gpus(sim_engine *e, const unsigned int *gpus, unsigned int n,
                                 uint64_t *unhealthy);

/* Its hooks into the core: it remembers every XID stored, and frees what it remembered. */
extern const engine_module engine_health_module;

#endif /* DCGM_SIM_MODULE_HEALTH_H */
