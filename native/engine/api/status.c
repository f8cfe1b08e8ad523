/*
 * status.c -- dcgmStatus_t: a caller's list of per-GPU errors that calls such
 * as dcgmConfigSet fill in.  It lives in the caller's process (DCGM's is a
 * client-side object too, common/DcgmStatus.cpp): errors are queued at the
 * back and popped from the front; popping an empty list is NO_DATA.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

struct engine_status {
    pthread_mutex_t lock;
    dcgmErrorInfo_t *items;
    size_t head, count, cap;
};

engine_status *engine_status_of(dcgmStatus_t handle) { return (engine_status *)handle; }

int engine_status_add(engine_status *st, unsigned int gpu, unsigned short field, int status)
{
    if (!st)
        return DCGM_ST_OK;   /* the caller passed no status list: nothing to tell */
    pthread_mutex_lock(&st->lock);
    int rc = DCGM_ST_OK;
    if (st->head + st->count == st->cap) {
        if (st->head > 0) {
            memmove(st->items, st->items + st->head, st->count * sizeof *st->items);
            st->head = 0;
        } else {
            size_t cap = st->cap ? st->cap * 2 : 16;
            dcgmErrorInfo_t *grown = realloc(st->items, cap * sizeof *grown);
            if (!grown)
                rc = DCGM_ST_MEMORY;
            else {
                st->items = grown;
                st->cap = cap;
            }
        }
    }
    if (rc == DCGM_ST_OK) {
        dcgmErrorInfo_t *e = &st->items[st->head + st->count++];
        memset(e, 0, sizeof *e);
        e->gpuId = gpu;
        e->fieldId = (short)field;
        e->status = status;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

dcgmReturn_t dcgmStatusCreate(dcgmStatus_t *statusHandle)
{
    if (!statusHandle)
        return DCGM_ST_BADPARAM;
    engine_status *st = calloc(1, sizeof *st);
    if (!st)
        return DCGM_ST_MEMORY;
    pthread_mutex_init(&st->lock, NULL);
    *statusHandle = (dcgmStatus_t)st;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmStatusDestroy(dcgmStatus_t statusHandle)
{
    engine_status *st = engine_status_of(statusHandle);
    if (!st)
        return DCGM_ST_BADPARAM;
    pthread_mutex_destroy(&st->lock);
    free(st->items);
    free(st);
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmStatusGetCount(dcgmStatus_t statusHandle, unsigned int *count)
{
    engine_status *st = engine_status_of(statusHandle);
    if (!st || !count)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&st->lock);
    *count = (unsigned int)st->count;
    pthread_mutex_unlock(&st->lock);
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmStatusPopError(dcgmStatus_t statusHandle, dcgmErrorInfo_t *pDcgmErrorInfo)
{
    engine_status *st = engine_status_of(statusHandle);
    if (!st || !pDcgmErrorInfo)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&st->lock);
    dcgmReturn_t rc = DCGM_ST_NO_DATA;
    if (st->count > 0) {
        *pDcgmErrorInfo = st->items[st->head++];
        st->count--;
        if (st->count == 0)
            st->head = 0;
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

dcgmReturn_t dcgmStatusClear(dcgmStatus_t statusHandle)
{
    engine_status *st = engine_status_of(statusHandle);
    if (!st)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&st->lock);
    st->head = st->count = 0;
    pthread_mutex_unlock(&st->lock);
    return DCGM_ST_OK;
}
