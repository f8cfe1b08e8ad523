/*
 * remote.h -- client side of a connection to a (simulated) nv-hostengine:
 * address parsing as dcgmConnect_v2/_v3 do it, connecting with retries, and
 * the hello exchange that tells a hostengine from any other listener.
 */
#ifndef DCGM_SIM_REMOTE_H
#define DCGM_SIM_REMOTE_H

#include "../dcgm_abi.h"

typedef enum remote_kind { REMOTE_TCP = 1, REMOTE_UNIX = 2, REMOTE_VSOCK = 3 } remote_kind;

typedef struct remote_addr {
    remote_kind kind;
    char host[256];              /* TCP: name or address, without brackets */
    unsigned int port;           /* TCP and VSOCK */
    unsigned int cid;            /* VSOCK */
    char path[108];              /* UNIX */
} remote_addr;

typedef struct remote_conn remote_conn;

/* The line each side sends first; a hostengine answers with the same. */
#define REMOTE_HELLO "DCGM-SIM-HOSTENGINE HELLO 1\n"
#define REMOTE_DEFAULT_TIMEOUT_MS 5000u

/* dcgmConnect_v2's address: host, host:port, [v6]:port, or a socket path. */
int remote_parse_v2(const char *address, int is_unix_socket, remote_addr *out);
/* dcgmConnect_v3's URI: tcp://, unix://, vsock://, or no scheme (TCP). */
int remote_parse_v3(const char *uri, remote_addr *out);
/* Connects, retrying every 50 ms until timeout_ms (0 = 5000), then greets.
 * DCGM_ST_CONNECTION_NOT_VALID when nothing suitable answers. */
int remote_open(const remote_addr *addr, unsigned int timeout_ms, remote_conn **out);
void remote_close(remote_conn *conn);
/* What a call on a connected handle answers until requests can be sent. */
int remote_unserved(const remote_conn *conn);

#endif /* DCGM_SIM_REMOTE_H */
