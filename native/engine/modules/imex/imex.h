/*
 * imex.h -- the IMEX status fields, DCGM_FI_IMEX_DOMAIN_STATUS and
 * DCGM_FI_IMEX_DAEMON_STATUS (engine_imex.c): the host's, read from DCGM's
 * tool, whatever entity asks.
 */
#ifndef DCGM_SIM_MODULE_IMEX_H
#define DCGM_SIM_MODULE_IMEX_H

#include "../../../dcgm_field_ids.h"
#include "../../core/core.h"

/* DCGM's DcgmImexDaemonStatus values the engine uses by name */
#define IMEX_DAEMON_READY 5
#define IMEX_DAEMON_UNAVAILABLE 7
#define IMEX_DAEMON_NOT_INSTALLED (-1)
#define IMEX_DAEMON_NOT_CONFIGURED (-2)
#define IMEX_DAEMON_COMMAND_ERROR (-3)

/* Its hooks into the core: a new engine asks the tool afresh; the two
 * fields' readings, from a 60-second cache. */
extern const engine_module engine_imex_module;

#endif /* DCGM_SIM_MODULE_IMEX_H */
