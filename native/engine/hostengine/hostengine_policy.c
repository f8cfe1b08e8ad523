/*
 * hostengine_policy.c -- the hostengine's side of the policy manager's
 * requests: each runs on the engine on behalf of the connection's owner, so
 * a connection's registrations and pending violations are its own and go
 * with it when it closes (engine_release_owner).
 */
#include <stdlib.h>
#include <string.h>

#include "hostengine_internal.h"

static void serve_set(he_session *s, const wire_request *req, const unsigned char *tail)
{
    dcgmPolicy_v1 policy;
    if (req->tail_len != sizeof policy) {
        he_reply(s, DCGM_ST_BADPARAM, 0, 0, 0, NULL, 0);
        return;
    }
    memcpy(&policy, tail, sizeof policy);
    he_reply(s, engine_policy_set(s->engine, req->id[0], &policy), 0, 0, 0, NULL, 0);
}

static void serve_get(he_session *s, const wire_request *req)
{
    dcgmPolicy_v1 *out = calloc(DCGM_MAX_NUM_DEVICES, sizeof *out);
    unsigned int count = 0;
    int rc = out ? engine_policy_get(s->engine, req->id[0], out, &count) : DCGM_ST_MEMORY;
    he_reply(s, rc, 0, count, 0, out, out ? count * sizeof *out : 0);
    free(out);
}

static void serve_take(he_session *s, const wire_request *req)
{
    unsigned int capacity = req->u[0] < REMOTE_POLICY_TAKE_MAX ? req->u[0] : REMOTE_POLICY_TAKE_MAX;
    engine_policy_note *out = calloc(REMOTE_POLICY_TAKE_MAX, sizeof *out);
    unsigned int count = 0;
    int rc = out ? engine_policy_take(s->engine, s->owner, out, capacity, &count) : DCGM_ST_MEMORY;
    he_reply(s, rc, 0, count, 0, out, out ? count * sizeof *out : 0);
    free(out);
}

int he_policy_dispatch(he_session *s, const wire_request *req, const unsigned char *tail)
{
    switch (req->op) {
    case WIRE_OP_POLICY_SET:
        serve_set(s, req, tail);
        return 1;
    case WIRE_OP_POLICY_GET:
        serve_get(s, req);
        return 1;
    case WIRE_OP_POLICY_REGISTER:
        he_reply(s, engine_policy_register(s->engine, s->owner, req->id[0], req->u[0], req->u[1]),
                 0, 0, 0, NULL, 0);
        return 1;
    case WIRE_OP_POLICY_UNREGISTER:
        he_reply(s, engine_policy_unregister(s->engine, s->owner, req->id[0]), 0, 0, 0, NULL, 0);
        return 1;
    case WIRE_OP_POLICY_TAKE:
        serve_take(s, req);
        return 1;
    default:
        return 0;
    }
}
