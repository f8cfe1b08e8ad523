/*
 * engine.h -- the simulated hostengine: the cache core (core/) with DCGM's
 * modules (modules/) plugged in.  What the backends, the hostengine, the
 * remote client and the API include; everything an engine answers is
 * declared in the headers below, the creation of one with its modules here.
 *
 *   core/core.h                entities, groups, watches, the cache, reads
 *   modules/admin/admin.h      module statuses, pause, driver, introspection
 *   modules/config/config.h    dcgmConfigSet / Get / Enforce
 *   modules/cpu/cpu.h          the host's CPUs (sysmon)
 *   modules/health/health.h    dcgmHealthSet / Get / Check
 *   modules/imex/imex.h        the IMEX status fields
 *   modules/nvlink/nvlink.h    NvLink link states
 *   modules/policy/policy.h    the policy manager
 *   modules/topo/topo.h        chips and topology
 */
#ifndef DCGM_SIM_ENGINE_H
#define DCGM_SIM_ENGINE_H

#include "core/core.h"
#include "modules/admin/admin.h"
#include "modules/config/config.h"
#include "modules/cpu/cpu.h"
#include "modules/health/health.h"
#include "modules/imex/imex.h"
#include "modules/nvlink/nvlink.h"
#include "modules/policy/policy.h"
#include "modules/topo/topo.h"

/*
 * Build an engine on a node loaded from spec (see sim_node_load), with
 * DCGM's modules.  In AUTO mode a cache-manager thread samples due watches
 * on its own; in MANUAL mode only engine_update_all_fields samples.  On
 * failure returns the node's DCGM_ST_* code with one line in err.
 */
int engine_create(const char *spec, dcgmOperationMode_t mode, sim_engine **out,
                  char *err, size_t errlen);
/*
 * The same on a chosen value source (source.h): NULL, "" or "models" is the
 * node from spec, "nvml" the NVML library (spec unused).
 */
int engine_create_source(const char *source, const char *spec, dcgmOperationMode_t mode,
                         sim_engine **out, char *err, size_t errlen);

#endif /* DCGM_SIM_ENGINE_H */
