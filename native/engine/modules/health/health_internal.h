/*
 * health_internal.h -- between engine_health.c (the GPUs' systems, the
 * incidents) and engine_health_host.c (CPUs and the host's IMEX state).
 * Nothing outside native/engine/modules/health/ includes it.
 */
#ifndef DCGM_SIM_MODULE_HEALTH_INTERNAL_H
#define DCGM_SIM_MODULE_HEALTH_INTERNAL_H

#include <stdarg.h>

#include "health.h"

/* engine_health.c: one incident into out (the first 1024 are kept) */
void engine_health_vincident(dcgmHealthResponse_v5 *out, dcgm_field_entity_group_t group,
                             dcgm_field_eid_t id, dcgmHealthSystems_t system,
                             dcgmHealthWatchResults_t health, int code, const char *fmt,
                             va_list ap);

/* engine_health_host.c: CPU and IMEX (global) health watches and checks */
void engine_health_watch_cpu_locked(sim_engine *e, engine_owner owner, const engine_entity *cpu,
                                    unsigned int systems, int64_t freq_us, double keep_s);
void engine_health_watch_global_locked(sim_engine *e, engine_owner owner, unsigned int systems,
                                       int64_t freq_us, double keep_s);
void engine_health_check_cpu_locked(sim_engine *e, const engine_entity *cpu, unsigned int systems,
                                    int64_t now, dcgmHealthResponse_v5 *out);
void engine_health_check_global_locked(sim_engine *e, const dcgmGroupEntityPair_t *members,
                                       unsigned int n, unsigned int systems, int64_t t_rel,
                                       dcgmHealthResponse_v5 *out);

#endif /* DCGM_SIM_MODULE_HEALTH_INTERNAL_H */
