/*
 * remote_internal.h -- the transport shared by remote.c (connections),
 * remote_calls.c and remote_policy.c (one function per request).
 */
#ifndef DCGM_SIM_REMOTE_INTERNAL_H
#define DCGM_SIM_REMOTE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "remote.h"

/* Receive buffer of a connection (a tick's reply of a few hundred records fits). */
#define REMOTE_INBOX_BYTES (32u << 10)

struct remote_conn {
    int fd;
    remote_addr addr;
    unsigned int request_timeout_ms;
    pthread_mutex_t lock;        /* one request on the wire at a time */
    atomic_int dead;             /* EOF, timeout, garbage or interrupt seen */
    /* Bytes received and not yet read: one recv takes a whole reply's
     * frames when they have arrived, instead of one recv (and one poll) per
     * frame header and tail. */
    unsigned char inbox[REMOTE_INBOX_BYTES];
    size_t inbox_pos, inbox_len;
    int awaiting_reply;          /* a request went out and nothing has come back yet */
};

/* Where a reply goes: the FINAL frame's header and tail, and the records of
 * any RECORDS frames before it. */
typedef struct remote_reply {
    wire_reply final;
    void *out;                   /* receives the FINAL tail, at most out_cap bytes */
    size_t out_cap;
    size_t out_len;
    unsigned char *records;      /* malloc'd; the caller frees */
    size_t records_len, records_cap;
    size_t n_records;
} remote_reply;

/*
 * Sends one request (header fields other than magic and tail_len set by the
 * caller) and receives its whole reply.  Returns DCGM_ST_OK when a FINAL
 * frame arrived (its status is in reply->final.status), else
 * DCGM_ST_CONNECTION_NOT_VALID or DCGM_ST_TIMEOUT, after which the
 * connection is dead.  Records are checked to be well formed.
 */
int remote_transact(remote_conn *c, wire_request *req, const void *tail, size_t tail_len,
                    remote_reply *reply);
void remote_reply_free(remote_reply *reply);

/* A request whose answer is a status, a few numbers and at most out_cap
 * bytes written to out (NULL: none); *final (when not NULL) receives the
 * FINAL frame's header.  Returns the transport's failure or the engine's
 * status. */
int remote_call(remote_conn *c, wire_request *req, const void *tail, size_t tail_len,
                void *out, size_t out_cap, wire_reply *final);

/* Walks the records of a reply: unpacks record i into *rec (group, entity)
 * and value.  *pos starts at 0. */
void remote_record_next(const remote_reply *reply, size_t *pos, wire_record *rec,
                        dcgmFieldValueUnion_t *value);

#endif /* DCGM_SIM_REMOTE_INTERNAL_H */
