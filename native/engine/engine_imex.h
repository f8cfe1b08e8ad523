/*
 * engine_imex.h -- the IMEX status fields (engine_imex.c).
 */
#ifndef DCGM_SIM_ENGINE_IMEX_H
#define DCGM_SIM_ENGINE_IMEX_H

#include "../dcgm_field_ids.h"
#include "../node/node.h"

/* DCGM's DcgmImexDaemonStatus values the engine uses by name */
#define IMEX_DAEMON_READY 5
#define IMEX_DAEMON_UNAVAILABLE 7
#define IMEX_DAEMON_NOT_INSTALLED (-1)
#define IMEX_DAEMON_NOT_CONFIGURED (-2)
#define IMEX_DAEMON_COMMAND_ERROR (-3)

/* Whether field_id is one of the two IMEX fields. */
int engine_imex_field(unsigned short field_id);
/* The field's current value (kind OK), from the 60-second cache. */
void engine_imex_sample(unsigned short field_id, sim_value *out);
/* Drops the cache: the next sample asks the tool again. */
void engine_imex_forget(void);

#endif /* DCGM_SIM_ENGINE_IMEX_H */
