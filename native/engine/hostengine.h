/*
 * hostengine.h -- the simulated nv-hostengine: one engine served to remote
 * clients of the simulated library over TCP or a unix socket.
 */
#ifndef DCGM_SIM_HOSTENGINE_H
#define DCGM_SIM_HOSTENGINE_H

#include <stddef.h>

/* Connections served at once; further ones are closed at accept. */
#define HOSTENGINE_MAX_CONNECTIONS 64

/*
 * Builds an engine on scenario (NULL: $DCGM_SIM_SCENARIO), listens on
 * host:port (host NULL = 127.0.0.1, port 0 = any free one) or on the unix
 * socket path, writes one line "listening on ADDRESS\n" to ready_fd (if
 * >= 0), and serves until stop_fd becomes readable or reaches EOF (never,
 * if stop_fd < 0).  Then it closes every connection, removes the socket
 * file and returns DCGM_ST_OK.  On a failure to start it returns a DCGM_ST_*
 * code with one line in err.
 */
int hostengine_serve(const char *address, unsigned int port, int is_unix, const char *scenario,
                     int ready_fd, int stop_fd, char *err, size_t errlen);



/* ---- between hostengine.c (connections) and hostengine_ops.c (requests) -- */

#include "engine.h"
#include "remote.h"

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

#endif /* DCGM_SIM_HOSTENGINE_H */
