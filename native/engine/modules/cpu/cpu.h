/*
 * cpu.h -- the host's CPUs as DCGM's sysmon module monitors them
 * (engine_cpu.c): the CPU hierarchy, and the CPUs and cores as entities
 * with their utilization readings.
 */
#ifndef DCGM_SIM_MODULE_CPU_H
#define DCGM_SIM_MODULE_CPU_H

#include "../../core/core.h"

/* The CPUs and the cores each owns: hierarchy is the v2
 * record, its version checked; DCGM_ST_MODULE_NOT_LOADED when the engine
 * monitors no CPUs (neither the host's nor fake ones). */
int engine_cpu_hierarchy(sim_engine *engine, dcgmCpuHierarchy_v2 *hierarchy);

/* Its hooks into the core: the host's CPUs and cores as entities (when DCGM
 * would monitor them and the scenario has no Grace CPUs), their readings. */
extern const engine_module engine_cpu_module;

#endif /* DCGM_SIM_MODULE_CPU_H */
