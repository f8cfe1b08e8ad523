/*
 * remote.c -- connecting to a hostengine.  Requests over the connection
 * come with the simulated hostengine; until then a connected handle only
 * proves that something speaking the hello line listens there.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "remote.h"

#define RETRY_INTERVAL_MS 50
#define HELLO_TIMEOUT_MS 1000

struct remote_conn {
    int fd;
    remote_addr addr;
};

/* ---- parsing ------------------------------------------------------------- */

static int parse_port(const char *text, unsigned int *port)
{
    if (!*text || strlen(text) > 5)
        return DCGM_ST_BADPARAM;
    unsigned int value = 0;
    for (const char *p = text; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return DCGM_ST_BADPARAM;
        value = value * 10 + (unsigned int)(*p - '0');
    }
    if (value == 0 || value > 65535)
        return DCGM_ST_BADPARAM;
    *port = value;
    return DCGM_ST_OK;
}

static int valid_host(const char *host, size_t len)
{
    if (len == 0 || len >= sizeof((remote_addr *)0)->host)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (isspace((unsigned char)host[i]) || iscntrl((unsigned char)host[i]) ||
            host[i] == '/' || host[i] == '[' || host[i] == ']')
            return 0;
    return 1;
}

static int parse_host_port(const char *text, remote_addr *out)
{
    out->kind = REMOTE_TCP;
    out->port = DCGM_HE_PORT_NUMBER;
    const char *host = text, *port = NULL;
    size_t host_len;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close)
            return DCGM_ST_BADPARAM;
        host = text + 1;
        host_len = (size_t)(close - host);
        if (close[1] == ':')
            port = close + 2;
        else if (close[1] != '\0')
            return DCGM_ST_BADPARAM;
    } else {
        const char *colon = strchr(text, ':');
        if (colon && !strchr(colon + 1, ':')) {
            host_len = (size_t)(colon - text);
            port = colon + 1;
        } else {
            host_len = strlen(text); /* no colon, or a bare IPv6 address */
        }
    }
    if (!valid_host(host, host_len))
        return DCGM_ST_BADPARAM;
    memcpy(out->host, host, host_len);
    out->host[host_len] = '\0';
    return port ? parse_port(port, &out->port) : DCGM_ST_OK;
}

static int parse_path(const char *path, remote_addr *out)
{
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof out->path)
        return DCGM_ST_BADPARAM;
    out->kind = REMOTE_UNIX;
    memcpy(out->path, path, len + 1);
    return DCGM_ST_OK;
}

static int parse_vsock(const char *text, remote_addr *out)
{
    char cid[16];
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    if (len == 0 || len >= sizeof cid)
        return DCGM_ST_BADPARAM;
    memcpy(cid, text, len);
    cid[len] = '\0';
    unsigned int value = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)cid[i]))
            return DCGM_ST_BADPARAM;
        value = value * 10 + (unsigned int)(cid[i] - '0');
    }
    out->kind = REMOTE_VSOCK;
    out->cid = value;
    out->port = DCGM_HE_PORT_NUMBER;
    return colon ? parse_port(colon + 1, &out->port) : DCGM_ST_OK;
}

int remote_parse_v2(const char *address, int is_unix_socket, remote_addr *out)
{
    if (!address || !out)
        return DCGM_ST_BADPARAM;
    memset(out, 0, sizeof *out);
    return is_unix_socket ? parse_path(address, out) : parse_host_port(address, out);
}

int remote_parse_v3(const char *uri, remote_addr *out)
{
    if (!uri || !out)
        return DCGM_ST_BADPARAM;
    memset(out, 0, sizeof *out);
    const char *sep = strstr(uri, "://");
    if (!sep)
        return parse_host_port(uri, out);
    size_t scheme_len = (size_t)(sep - uri);
    const char *rest = sep + 3;
    if (scheme_len == 3 && strncasecmp(uri, "tcp", 3) == 0)
        return parse_host_port(rest, out);
    if (scheme_len == 4 && strncasecmp(uri, "unix", 4) == 0)
        return parse_path(rest, out);
    if (scheme_len == 5 && strncasecmp(uri, "vsock", 5) == 0)
        return parse_vsock(rest, out);
    return DCGM_ST_BADPARAM;
}

/* ---- connecting ---------------------------------------------------------- */

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - monotonic_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = { fd, events, 0 };
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 0;
    }
}

/* One non-blocking connect attempt; returns the socket or -1. */
static int try_connect(const struct sockaddr *sa, socklen_t len, int family, int64_t deadline_ms)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, sa, len) == 0)
        return fd;
    if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline_ms)) {
        int err = 0;
        socklen_t err_len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) == 0 && err == 0)
            return fd;
    }
    close(fd);
    return -1;
}

static int connect_tcp_once(const struct addrinfo *list, int64_t deadline_ms)
{
    for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
        int fd = try_connect(ai->ai_addr, ai->ai_addrlen, ai->ai_family, deadline_ms);
        if (fd >= 0)
            return fd;
    }
    return -1;
}

static int connect_unix_once(const char *path, int64_t deadline_ms)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    return try_connect((const struct sockaddr *)&sa, sizeof sa, AF_UNIX, deadline_ms);
}

static int exchange_hello(int fd)
{
    int64_t deadline = monotonic_ms() + HELLO_TIMEOUT_MS;
    const char *hello = REMOTE_HELLO;
    size_t len = strlen(hello), sent = 0;
    while (sent < len) {
        if (!wait_fd(fd, POLLOUT, deadline))
            return 0;
        ssize_t n = send(fd, hello + sent, len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return 0;
        if (n > 0)
            sent += (size_t)n;
    }
    char reply[64];
    size_t got = 0;
    while (got < len) {
        if (!wait_fd(fd, POLLIN, deadline))
            return 0;
        ssize_t n = recv(fd, reply + got, len - got, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return 0;
        if (n > 0)
            got += (size_t)n;
    }
    return memcmp(reply, hello, len) == 0;
}

static int resolve(const remote_addr *addr, struct addrinfo **list)
{
    char port[8];
    snprintf(port, sizeof port, "%u", addr->port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    return getaddrinfo(addr->host, port, &hints, list) == 0 ? DCGM_ST_OK
                                                           : DCGM_ST_CONNECTION_NOT_VALID;
}

int remote_open(const remote_addr *addr, unsigned int timeout_ms, remote_conn **out)
{
    if (!addr || !out)
        return DCGM_ST_BADPARAM;
    *out = NULL;
    if (addr->kind == REMOTE_VSOCK)
        return DCGM_ST_CONNECTION_NOT_VALID; /* no vsock transport here */
    struct addrinfo *list = NULL;
    if (addr->kind == REMOTE_TCP && resolve(addr, &list) != DCGM_ST_OK)
        return DCGM_ST_CONNECTION_NOT_VALID;
    int64_t deadline = monotonic_ms() + (timeout_ms ? timeout_ms : REMOTE_DEFAULT_TIMEOUT_MS);
    int fd = -1;
    for (;;) {
        fd = addr->kind == REMOTE_TCP ? connect_tcp_once(list, deadline)
                                      : connect_unix_once(addr->path, deadline);
        int64_t left = deadline - monotonic_ms();
        if (fd >= 0 || left <= 0)
            break;
        sleep_ms(left < RETRY_INTERVAL_MS ? left : RETRY_INTERVAL_MS);
    }
    if (list)
        freeaddrinfo(list);
    if (fd < 0)
        return DCGM_ST_CONNECTION_NOT_VALID;
    remote_conn *conn = calloc(1, sizeof *conn);
    if (!conn || !exchange_hello(fd)) {
        close(fd);
        free(conn);
        return DCGM_ST_CONNECTION_NOT_VALID;
    }
    conn->fd = fd;
    conn->addr = *addr;
    *out = conn;
    return DCGM_ST_OK;
}

void remote_close(remote_conn *conn)
{
    if (!conn)
        return;
    close(conn->fd);
    free(conn);
}

int remote_unserved(const remote_conn *conn)
{
    (void)conn;
    return DCGM_ST_CONNECTION_NOT_VALID;
}
