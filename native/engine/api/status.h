/*
 * status.h -- the caller-side dcgmStatus_t error lists (status.c).
 */
#ifndef DCGM_ENGINE_STATUS_H
#define DCGM_ENGINE_STATUS_H

#include "../../dcgm_abi.h"

typedef struct engine_status engine_status;

/* the list behind a handle; NULL for a zero handle */
engine_status *engine_status_of(dcgmStatus_t handle);
/* queue one error (a no-op for a NULL list) */
int engine_status_add(engine_status *st, unsigned int gpu, unsigned short field, int status);

#endif /* DCGM_ENGINE_STATUS_H */
