/*
 * hostengine.h -- the simulated nv-hostengine: one engine served to remote
 * clients of the simulated library over TCP or a unix socket (exported as
 * dcgmSimServe).  hostengine_internal.h holds what the folder's files share.
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

#endif /* DCGM_SIM_HOSTENGINE_H */
