/*
 * policy_dispatch.h -- the client side of dcgmPolicyRegister_v2's callbacks.
 *
 * A handle with registrations gets one dispatcher: a thread that every
 * POLICY_POLL_MS takes the violations waiting for this client from its
 * backend (backend_ops.policy_take, which never waits: the embedded engine's
 * queue, or a POLICY_TAKE request to the hostengine) and calls the callback
 * of the registration each names, on the dispatcher's thread, with no lock
 * held.  The registry is filled before a registration reaches the engine, so
 * no violation can arrive for a callback not yet known.
 */
#ifndef DCGM_SIM_POLICY_DISPATCH_H
#define DCGM_SIM_POLICY_DISPATCH_H

#include "../backends/backend.h"

#define POLICY_POLL_MS 100

typedef struct policy_dispatch policy_dispatch;

/* A dispatcher for backend ops/impl; its thread starts with the first callback. */
policy_dispatch *policy_dispatch_new(const backend_ops *ops, void *impl);
/* Remembers a callback; *cookie names it to the engine. */
int policy_dispatch_add(policy_dispatch *pd, fpRecvUpdates callback, uint64_t user_data,
                        uint32_t *cookie);
/* Forgets one callback (its registration failed) or all of them (unregistered). */
void policy_dispatch_remove(policy_dispatch *pd, uint32_t cookie);
void policy_dispatch_clear(policy_dispatch *pd);
/* Stops the thread (a callback in progress finishes first) and frees pd;
 * from inside a callback, the thread finishes that callback and frees pd
 * itself.  Either way the backend is not touched once this returns. */
void policy_dispatch_free(policy_dispatch *pd);

#endif /* DCGM_SIM_POLICY_DISPATCH_H */
