/*
 * policy_dispatch.c -- delivers policy violations to dcgmPolicyRegister_v2's
 * callbacks (see policy_dispatch.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy_dispatch.h"

typedef struct dispatch_entry {
    uint32_t cookie;
    fpRecvUpdates callback;
    uint64_t user_data;
} dispatch_entry;

struct policy_dispatch {
    const backend_ops *ops;
    void *impl;
    pthread_mutex_t lock;
    pthread_cond_t wake;          /* CLOCK_MONOTONIC */
    pthread_t thread;
    int thread_started;
    int stopping;
    int self_free;                /* freed from a callback: the thread frees pd */
    uint32_t next_cookie;
    dispatch_entry *entries;
    size_t n_entries, cap_entries;
};

#define TAKE_BATCH 64u

static void destroy(policy_dispatch *pd)
{
    pthread_cond_destroy(&pd->wake);
    pthread_mutex_destroy(&pd->lock);
    free(pd->entries);
    free(pd);
}

policy_dispatch *policy_dispatch_new(const backend_ops *ops, void *impl)
{
    policy_dispatch *pd = calloc(1, sizeof *pd);
    if (!pd)
        return NULL;
    pd->ops = ops;
    pd->impl = impl;
    pd->next_cookie = 1;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&pd->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&pd->lock, NULL);
    return pd;
}

static int find_locked(const policy_dispatch *pd, uint32_t cookie)
{
    for (size_t i = 0; i < pd->n_entries; i++)
        if (pd->entries[i].cookie == cookie)
            return (int)i;
    return -1;
}

/* Waits up to POLICY_POLL_MS, or until stopped; called with pd->lock held. */
static void nap_locked(policy_dispatch *pd)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += (long)POLICY_POLL_MS * 1000000L;
    while (until.tv_nsec >= 1000000000L) {
        until.tv_nsec -= 1000000000L;
        until.tv_sec++;
    }
    while (!pd->stopping && pthread_cond_timedwait(&pd->wake, &pd->lock, &until) != ETIMEDOUT)
        ;
}

static void *dispatch_main(void *arg)
{
    policy_dispatch *pd = arg;
    engine_policy_note *notes = malloc(TAKE_BATCH * sizeof *notes);
    pthread_mutex_lock(&pd->lock);
    while (!pd->stopping && notes) {
        if (pd->n_entries == 0) {
            pthread_cond_wait(&pd->wake, &pd->lock);
            continue;
        }
        pthread_mutex_unlock(&pd->lock);
        unsigned int n = 0;
        int rc = pd->ops->policy_take(pd->impl, notes, TAKE_BATCH, &n);
        pthread_mutex_lock(&pd->lock);
        if (rc != DCGM_ST_OK)
            n = 0;
        for (unsigned int i = 0; i < n && !pd->stopping; i++) {
            int at = find_locked(pd, notes[i].cookie);
            if (at < 0 || !pd->entries[at].callback)
                continue; /* unregistered since, or registered without a callback */
            dispatch_entry entry = pd->entries[at];
            dcgmPolicyCallbackResponse_v2 response = notes[i].response;
            pthread_mutex_unlock(&pd->lock);
            entry.callback(&response, entry.user_data);
            pthread_mutex_lock(&pd->lock);
        }
        if (!pd->stopping && n < TAKE_BATCH)
            nap_locked(pd);
    }
    int free_here = pd->self_free;
    pthread_mutex_unlock(&pd->lock);
    free(notes);
    if (free_here)
        destroy(pd);
    return NULL;
}

int policy_dispatch_add(policy_dispatch *pd, fpRecvUpdates callback, uint64_t user_data,
                        uint32_t *cookie)
{
    pthread_mutex_lock(&pd->lock);
    int rc = DCGM_ST_OK;
    if (pd->n_entries == pd->cap_entries) {
        size_t cap = pd->cap_entries ? pd->cap_entries * 2 : 4;
        dispatch_entry *grown = realloc(pd->entries, cap * sizeof *grown);
        if (!grown)
            rc = DCGM_ST_MEMORY;
        else {
            pd->entries = grown;
            pd->cap_entries = cap;
        }
    }
    if (rc == DCGM_ST_OK && !pd->thread_started) {
        if (pthread_create(&pd->thread, NULL, dispatch_main, pd) != 0)
            rc = DCGM_ST_MEMORY;
        else
            pd->thread_started = 1;
    }
    if (rc == DCGM_ST_OK) {
        if (pd->next_cookie == 0)
            pd->next_cookie = 1;
        *cookie = pd->next_cookie++;
        pd->entries[pd->n_entries++] = (dispatch_entry){ *cookie, callback, user_data };
        pthread_cond_broadcast(&pd->wake);
    }
    pthread_mutex_unlock(&pd->lock);
    return rc;
}

void policy_dispatch_remove(policy_dispatch *pd, uint32_t cookie)
{
    pthread_mutex_lock(&pd->lock);
    int at = find_locked(pd, cookie);
    if (at >= 0)
        pd->entries[at] = pd->entries[--pd->n_entries];
    pthread_mutex_unlock(&pd->lock);
}

void policy_dispatch_clear(policy_dispatch *pd)
{
    pthread_mutex_lock(&pd->lock);
    pd->n_entries = 0;
    pthread_mutex_unlock(&pd->lock);
}

void policy_dispatch_free(policy_dispatch *pd)
{
    if (!pd)
        return;
    pthread_mutex_lock(&pd->lock);
    pd->stopping = 1;
    pthread_cond_broadcast(&pd->wake);
    int started = pd->thread_started;
    int from_callback = started && pthread_equal(pd->thread, pthread_self());
    if (from_callback)
        pd->self_free = 1;
    pthread_mutex_unlock(&pd->lock);
    if (from_callback) {
        pthread_detach(pd->thread);
        return;
    }
    if (started)
        pthread_join(pd->thread, NULL);
    destroy(pd);
}
