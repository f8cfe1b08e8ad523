/*
 * nvlink.h -- NvLink link states as DCGM reports and sets them
 * (engine_nvlink.c), on the states the core keeps (core/engine_link.c).
 */
#ifndef DCGM_SIM_MODULE_NVLINK_H
#define DCGM_SIM_MODULE_NVLINK_H

#include "../../core/core.h"

/* status is always the v5 record; the
 * API converts for older versions. */
int engine_nvlink_status(sim_engine *engine, dcgmNvLinkStatus_v5 *status);
int engine_nvlink_set_state(sim_engine *engine, const dcgmSetNvLinkLinkState_v1 *request);

#endif /* DCGM_SIM_MODULE_NVLINK_H */
