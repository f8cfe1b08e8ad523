/*
 * admin.h -- the engine's administration (engine_admin.c): module
 * statuses and the denylist, pausing telemetry, the driver, introspection,
 * the log's severity and the diag module's precheck.
 */
#ifndef DCGM_SIM_MODULE_ADMIN_H
#define DCGM_SIM_MODULE_ADMIN_H

#include "../../core/core.h"

/* The module statuses of dcgmModuleGetStatuses, written in place into a
 * dcgmModuleGetStatuses_v1 (version 1, 136 bytes: version, numStatuses,
 * then 16 (id, status) pairs). */
#define ENGINE_MODULE_STATUSES_SIZE 136u
#define ENGINE_MODULE_STATUSES_VERSION1 0x01000088u
int engine_module_statuses(sim_engine *engine, void *statuses);
int engine_module_denylist(sim_engine *engine, unsigned int module);
/* dcgmPauseTelemetryForDiag (pause 1) / dcgmResumeTelemetryForDiag (0). */
int engine_pause_resume(sim_engine *engine, int pause);
/* dcgmAttachDriver (attach 1) / dcgmDetachDriver (0). */
int engine_driver_attach(sim_engine *engine, int attach);
/* dcgmIntrospectGetHostengineMemoryUsage (cpu 0) or ...CpuUtilization (1) of
 * the process running the engine. */
typedef struct engine_introspect {
    long long bytes_used;
    double total, kernel, user;
} engine_introspect;
int engine_introspect_read(sim_engine *engine, int cpu, int wait, engine_introspect *out);
/* dcgmHostengineSetLoggingSeverity: the process's log severity (logger 0,
 * DCGM's base logger; logger 1, syslog, which this engine does not write). */
int engine_set_logging_severity(sim_engine *engine, int logger, int severity);
/* What DCGM's diag module answers before it would start NVVS on group
 * (DCGM_GROUP_NULL: the request names its entities instead). */
int engine_diag_precheck(sim_engine *engine, dcgmGpuGrp_t group);

#endif /* DCGM_SIM_MODULE_ADMIN_H */
