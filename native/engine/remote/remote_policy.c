/*
 * remote_policy.c -- the client half of the policy manager's requests
 * (dcgmPolicySet / Get / Register_v2 / Unregister) and of the dispatcher's
 * question "what violations are waiting for me?" (POLICY_TAKE).
 */
#include <string.h>

#include "remote_internal.h"

static void policy_request(wire_request *req, wire_op op, dcgmGpuGrp_t group)
{
    memset(req, 0, sizeof *req);
    req->op = op;
    req->id[0] = group;
}

int remote_policy_set(remote_conn *c, dcgmGpuGrp_t group, const dcgmPolicy_v1 *policy)
{
    if (!policy)
        return DCGM_ST_BADPARAM;
    wire_request req;
    policy_request(&req, WIRE_OP_POLICY_SET, group);
    return remote_call(c, &req, policy, sizeof *policy, NULL, 0, NULL);
}

int remote_policy_get(remote_conn *c, dcgmGpuGrp_t group, dcgmPolicy_v1 *out,
                      unsigned int *count)
{
    if (!out || !count)
        return DCGM_ST_BADPARAM;
    wire_request req;
    policy_request(&req, WIRE_OP_POLICY_GET, group);
    wire_reply final;
    memset(&final, 0, sizeof final);
    int rc = remote_call(c, &req, NULL, 0, out, DCGM_MAX_NUM_DEVICES * sizeof *out, &final);
    /* never more than the buffer holds, whatever the other end says */
    *count = final.u[0] <= DCGM_MAX_NUM_DEVICES ? final.u[0] : DCGM_MAX_NUM_DEVICES;
    return rc;
}

int remote_policy_register(remote_conn *c, dcgmGpuGrp_t group, unsigned int conditions,
                           uint32_t cookie)
{
    wire_request req;
    policy_request(&req, WIRE_OP_POLICY_REGISTER, group);
    req.u[0] = conditions;
    req.u[1] = cookie;
    return remote_call(c, &req, NULL, 0, NULL, 0, NULL);
}

int remote_policy_unregister(remote_conn *c, dcgmGpuGrp_t group)
{
    wire_request req;
    policy_request(&req, WIRE_OP_POLICY_UNREGISTER, group);
    return remote_call(c, &req, NULL, 0, NULL, 0, NULL);
}

int remote_policy_take(remote_conn *c, engine_policy_note *out, unsigned int capacity,
                       unsigned int *count)
{
    if (!out || !count)
        return DCGM_ST_BADPARAM;
    if (capacity > REMOTE_POLICY_TAKE_MAX)
        capacity = REMOTE_POLICY_TAKE_MAX;
    wire_request req;
    policy_request(&req, WIRE_OP_POLICY_TAKE, 0);
    req.u[0] = capacity;
    wire_reply final;
    memset(&final, 0, sizeof final);
    int rc = remote_call(c, &req, NULL, 0, out, capacity * sizeof *out, &final);
    *count = rc == DCGM_ST_OK && final.u[0] <= capacity ? final.u[0] : 0;
    return rc;
}
