/*
 * api_internal.h -- what the API's files (native/engine/api/) share: the
 * handle table's entry for calls outside api.c, and the version checks of
 * DCGM's versioned structs.  Nothing outside this folder includes it.
 */
#ifndef DCGM_SIM_API_INTERNAL_H
#define DCGM_SIM_API_INTERNAL_H

#include "../../dcgm_abi.h"
#include "../backends/backend.h"

/* Runs fn on the backend of a handle, held while fn runs (api.c): for entry
 * points outside api.c.  Returns the handle's error, or what fn returns. */
int api_with_backend(dcgmHandle_t handle,
                     int (*fn)(const backend_ops *ops, void *impl, void *ctx), void *ctx);

/* The leading version stamp of a versioned DCGM struct a caller hands in (api.c). */
unsigned int api_version_of(const void *request);

/* DCGM's first check of such a struct (api.c): BADPARAM when there is none,
 * VER_MISMATCH when its stamp is not want, else DCGM_ST_OK. */
dcgmReturn_t api_check_version(const void *request, unsigned int want);

#endif /* DCGM_SIM_API_INTERNAL_H */
