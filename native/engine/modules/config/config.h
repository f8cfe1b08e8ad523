/*
 * config.h -- DCGM's config manager on the cache core (engine_config.c):
 * dcgmConfigSet / Get / Enforce.
 */
#ifndef DCGM_SIM_MODULE_CONFIG_H
#define DCGM_SIM_MODULE_CONFIG_H

#include "../../core/core.h"

/* One message carries a call's input and everything it answers, as DCGM's
 * config module messages do (dcgm_config_msg_*): the errors a call adds to
 * the caller's dcgmStatus_t travel back in statuses (at most
 * DCGM_MAX_NUM_DEVICES, as in DCGM). */
typedef struct engine_config_msg {
    unsigned int req_type;       /* get: DCGM_CONFIG_TARGET_STATE or _CURRENT_STATE */
    unsigned int num_configs;    /* get: entries of configs filled */
    unsigned int num_statuses;   /* entries of statuses filled */
    unsigned int reserved;
    dcgmConfig_v2 config;        /* set: the configuration asked for */
    dcgmConfig_v2 configs[DCGM_MAX_NUM_DEVICES];
    dcgmErrorInfo_t statuses[DCGM_MAX_NUM_DEVICES];
} engine_config_msg;
int engine_config_set(sim_engine *engine, dcgmGpuGrp_t group, engine_config_msg *msg);
int engine_config_get(sim_engine *engine, dcgmGpuGrp_t group, engine_config_msg *msg);
int engine_config_enforce(sim_engine *engine, dcgmGpuGrp_t group, engine_config_msg *msg);

/* Its hooks into the core: its state, and the settings it applied, which
 * replace the node's readings of their fields. */
extern const engine_module engine_config_module;

#endif /* DCGM_SIM_MODULE_CONFIG_H */
