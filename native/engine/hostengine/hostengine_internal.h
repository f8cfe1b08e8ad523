/*
 * hostengine_internal.h -- between hostengine.c (connections),
 * hostengine_ops.c (requests) and hostengine_policy.c (the policy manager's
 * requests).  Nothing outside native/engine/hostengine/ includes it.
 */
#ifndef DCGM_SIM_HOSTENGINE_INTERNAL_H
#define DCGM_SIM_HOSTENGINE_INTERNAL_H

#include "hostengine.h"
#include "../engine.h"
#include "../remote/remote.h"

typedef struct he_session {
    int fd;
    sim_engine *engine;
    engine_owner owner;
    int persist;                 /* keep what this connection made after it goes */
    int failed;                  /* a reply could not be sent: drop the connection */
    unsigned char *chunk;        /* records not yet sent */
    size_t chunk_len, chunk_cap;
} he_session;

/* Serves one request; its tail (tail_len bytes) has been read. */
void he_dispatch(he_session *s, const wire_request *req, const unsigned char *tail);
/* Serves a policy manager request (hostengine_policy.c); 0 when op is not one. */
int he_policy_dispatch(he_session *s, const wire_request *req, const unsigned char *tail);
/* Sends the FINAL frame of a reply, after any pending records. */
void he_reply(he_session *s, int status, int64_t i64, uint32_t u0, uint32_t u1,
              const void *tail, size_t tail_len);
/* Queues one record (sent in RECORDS frames); non-zero when the client is gone. */
int he_record(he_session *s, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
              const dcgmFieldValue_v1 *value);

#endif /* DCGM_SIM_HOSTENGINE_INTERNAL_H */
