/*
 * remote.c -- the client's connection to a hostengine: addresses, connecting
 * with retries, the hello line, and the transport every request uses (one
 * request at a time per connection; no wait without a timeout; a connection
 * that failed once stays failed, as DCGM's does).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "remote_internal.h"

#define RETRY_INTERVAL_MS 50
#define HELLO_TIMEOUT_MS 1000

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

/* 1 when fd is ready, 0 at the deadline, -1 on a poll error. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - monotonic_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = { fd, events, 0 };
        int n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
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
    if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline_ms) > 0) {
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

/* 1 sent, 0 timed out, -1 failed.  flags: MSG_MORE when more follows at once.
 * The socket is non-blocking: send first, and wait only when its buffer is full
 * (a request is far smaller than the buffer, so a poll is rarely needed). */
static int send_all(int fd, const void *buf, size_t len, unsigned int timeout_ms, int flags)
{
    const unsigned char *p = buf;
    int64_t deadline = monotonic_ms() + timeout_ms;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT | flags);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            deadline = monotonic_ms() + timeout_ms;
            continue;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (n < 0 && errno == EINTR)
            continue;
        int ready = wait_fd(fd, POLLOUT, deadline);
        if (ready <= 0)
            return ready;
    }
    return 1;
}

/* One non-blocking recv into buf, waiting for the socket first only when nothing
 * is there yet (or at once, with wait_first: a reply just asked for is never
 * there yet): n > 0 bytes, 0 timed out, -1 EOF or failed. */
static ssize_t recv_some(int fd, void *buf, size_t len, int64_t deadline_ms, int wait_first)
{
    if (wait_first) {
        int ready = wait_fd(fd, POLLIN, deadline_ms);
        if (ready <= 0)
            return ready;
    }
    for (;;) {
        ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
        if (n > 0)
            return n;
        if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
            return -1;
        if (errno == EINTR)
            continue;
        int ready = wait_fd(fd, POLLIN, deadline_ms);
        if (ready <= 0)
            return ready;
    }
}

/* 1 received, 0 timed out, -1 EOF or failed.  The timeout counts from the
 * last byte received, so a slow but live peer is not cut off. */
static int recv_all(int fd, void *buf, size_t len, unsigned int timeout_ms)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = recv_some(fd, p, len, monotonic_ms() + timeout_ms, 0);
        if (n <= 0)
            return (int)n;
        p += n;
        len -= (size_t)n;
    }
    return 1;
}

/* Like recv_all, through the connection's inbox: what an earlier recv took
 * beyond what it needed is read first, and a short read fills the inbox with
 * whatever else has arrived (the rest of the reply, as a rule). */
static int conn_recv(remote_conn *c, void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        if (c->inbox_pos < c->inbox_len) {
            size_t take = c->inbox_len - c->inbox_pos;
            if (take > len)
                take = len;
            memcpy(p, c->inbox + c->inbox_pos, take);
            c->inbox_pos += take;
            p += take;
            len -= take;
            continue;
        }
        c->inbox_pos = c->inbox_len = 0;
        int64_t deadline = monotonic_ms() + c->request_timeout_ms;
        int wait_first = c->awaiting_reply;
        c->awaiting_reply = 0;
        ssize_t n = len >= sizeof c->inbox ? recv_some(c->fd, p, len, deadline, wait_first)
                                           : recv_some(c->fd, c->inbox, sizeof c->inbox, deadline, wait_first);
        if (n <= 0)
            return (int)n;
        if (len >= sizeof c->inbox) {
            p += n;
            len -= (size_t)n;
        } else {
            c->inbox_len = (size_t)n;
        }
    }
    return 1;
}

static int exchange_hello(int fd)
{
    const char *hello = REMOTE_HELLO;
    size_t len = strlen(hello);
    char reply[sizeof REMOTE_HELLO];
    return send_all(fd, hello, len, HELLO_TIMEOUT_MS, 0) > 0 &&
           recv_all(fd, reply, len, HELLO_TIMEOUT_MS) > 0 && memcmp(reply, hello, len) == 0;
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

static unsigned int request_timeout_ms(void)
{
    const char *text = getenv(REMOTE_REQUEST_TIMEOUT_ENV);
    if (!text || !*text)
        return REMOTE_REQUEST_TIMEOUT_MS;
    char *end = NULL;
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (errno || *end || value == 0 || value > REMOTE_REQUEST_TIMEOUT_MS * 10ul)
        return REMOTE_REQUEST_TIMEOUT_MS;
    return (unsigned int)value;
}

static int connect_with_retries(const remote_addr *addr, unsigned int timeout_ms)
{
    struct addrinfo *list = NULL;
    if (addr->kind == REMOTE_TCP && resolve(addr, &list) != DCGM_ST_OK)
        return -1;
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
    return fd;
}

static void conn_free(remote_conn *conn)
{
    if (conn->fd >= 0)
        close(conn->fd);
    pthread_mutex_destroy(&conn->lock);
    free(conn);
}

static int ask_persist(remote_conn *conn)
{
    wire_request req;
    memset(&req, 0, sizeof req);
    req.op = WIRE_OP_PERSIST;
    req.u[0] = 1;
    remote_reply reply;
    memset(&reply, 0, sizeof reply);
    int rc = remote_transact(conn, &req, NULL, 0, &reply);
    remote_reply_free(&reply);
    return rc == DCGM_ST_OK ? reply.final.status : rc;
}

int remote_open(const remote_addr *addr, unsigned int timeout_ms, int persist,
                remote_conn **out)
{
    if (!addr || !out)
        return DCGM_ST_BADPARAM;
    *out = NULL;
    if (addr->kind == REMOTE_VSOCK)
        return DCGM_ST_CONNECTION_NOT_VALID; /* no vsock transport here */
    int fd = connect_with_retries(addr, timeout_ms);
    if (fd < 0)
        return DCGM_ST_CONNECTION_NOT_VALID;
    /* requests are small and answered at once: never wait for more to send */
    int one = 1;
    if (addr->kind == REMOTE_TCP)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    remote_conn *conn = calloc(1, sizeof *conn);
    if (!conn || !exchange_hello(fd)) {
        close(fd);
        free(conn);
        return DCGM_ST_CONNECTION_NOT_VALID;
    }
    conn->fd = fd;
    conn->addr = *addr;
    conn->request_timeout_ms = request_timeout_ms();
    pthread_mutex_init(&conn->lock, NULL);
    atomic_init(&conn->dead, 0);
    if (persist && ask_persist(conn) != DCGM_ST_OK) {
        conn_free(conn);
        return DCGM_ST_CONNECTION_NOT_VALID;
    }
    *out = conn;
    return DCGM_ST_OK;
}

void remote_interrupt(remote_conn *conn)
{
    if (!conn)
        return;
    atomic_store(&conn->dead, 1);
    shutdown(conn->fd, SHUT_RDWR);
}

void remote_close(remote_conn *conn)
{
    if (conn)
        conn_free(conn);
}

/* ---- transport ------------------------------------------------------------ */

size_t wire_value_len(const dcgmFieldValueUnion_t *value)
{
    const unsigned char *bytes = (const unsigned char *)value;
    size_t len = WIRE_MAX_VALUE;
    while (len > 0 && bytes[len - 1] == 0)
        len--;
    return len;
}

void remote_reply_free(remote_reply *reply)
{
    if (!reply)
        return;
    free(reply->records);
    reply->records = NULL;
    reply->records_len = reply->records_cap = reply->n_records = 0;
}

/* Counts the records of a chunk; 0 if any is malformed. */
static int count_records(const unsigned char *chunk, size_t len, size_t *count)
{
    size_t pos = 0, n = 0;
    while (pos < len) {
        wire_record rec;
        if (len - pos < sizeof rec)
            return 0;
        memcpy(&rec, chunk + pos, sizeof rec);
        pos += sizeof rec;
        if (rec.value_len > WIRE_MAX_VALUE || rec.value_len > len - pos)
            return 0;
        pos += rec.value_len;
        n++;
    }
    *count += n;
    return 1;
}

/* Makes room for len more record bytes; 0 when over the bound or out of memory. */
static int reserve_records(remote_reply *reply, size_t len)
{
    if (len > WIRE_MAX_RECORD_BYTES - reply->records_len)
        return 0;
    if (reply->records_len + len <= reply->records_cap)
        return 1;
    size_t cap = reply->records_cap ? reply->records_cap : 64 * 1024;
    while (cap < reply->records_len + len)
        cap *= 2;
    unsigned char *grown = realloc(reply->records, cap);
    if (!grown)
        return 0;
    reply->records = grown;
    reply->records_cap = cap;
    return 1;
}

void remote_record_next(const remote_reply *reply, size_t *pos, wire_record *rec,
                        dcgmFieldValueUnion_t *value)
{
    memcpy(rec, reply->records + *pos, sizeof *rec);
    *pos += sizeof *rec;
    memset(value, 0, WIRE_MAX_VALUE);
    memcpy(value, reply->records + *pos, rec->value_len);
    *pos += rec->value_len;
}

/* 1 when the whole reply arrived, else what recv_all said (0 / -1). */
static int receive_reply(remote_conn *c, remote_reply *reply)
{
    for (;;) {
        wire_reply head;
        int got = conn_recv(c, &head, sizeof head);
        if (got <= 0)
            return got;
        if (head.magic != WIRE_REPLY_MAGIC || head.tail_len > WIRE_MAX_TAIL)
            return -1;
        if (head.kind == WIRE_FINAL) {
            if (head.tail_len > reply->out_cap)
                return -1;
            if (head.tail_len &&
                (got = conn_recv(c, reply->out, head.tail_len)) <= 0)
                return got;
            reply->final = head;
            reply->out_len = head.tail_len;
            return 1;
        }
        if (head.kind != WIRE_RECORDS || !reserve_records(reply, head.tail_len))
            return -1;
        unsigned char *chunk = reply->records + reply->records_len;
        if ((got = conn_recv(c, chunk, head.tail_len)) <= 0)
            return got;
        if (!count_records(chunk, head.tail_len, &reply->n_records))
            return -1;
        reply->records_len += head.tail_len;
    }
}

static int exchange(remote_conn *c, wire_request *req, const void *tail, size_t tail_len,
                    remote_reply *reply)
{
    int ok = send_all(c->fd, req, sizeof *req, c->request_timeout_ms, tail_len ? MSG_MORE : 0);
    if (ok > 0 && tail_len)
        ok = send_all(c->fd, tail, tail_len, c->request_timeout_ms, 0);
    c->awaiting_reply = c->inbox_pos == c->inbox_len;   /* nothing of the reply read ahead */
    if (ok > 0)
        ok = receive_reply(c, reply);
    if (ok > 0)
        return DCGM_ST_OK;
    /* a reply may still be on its way: the stream is out of step for good */
    remote_interrupt(c);
    return ok == 0 ? DCGM_ST_TIMEOUT : DCGM_ST_CONNECTION_NOT_VALID;
}

int remote_transact(remote_conn *c, wire_request *req, const void *tail, size_t tail_len,
                    remote_reply *reply)
{
    if (!c)
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (tail_len > WIRE_MAX_TAIL)
        return DCGM_ST_BADPARAM;
    req->magic = WIRE_REQUEST_MAGIC;
    req->tail_len = (uint32_t)tail_len;
    if (atomic_load(&c->dead))
        return DCGM_ST_CONNECTION_NOT_VALID;
    pthread_mutex_lock(&c->lock);
    int rc = atomic_load(&c->dead) ? DCGM_ST_CONNECTION_NOT_VALID
                                   : exchange(c, req, tail, tail_len, reply);
    pthread_mutex_unlock(&c->lock);
    if (rc != DCGM_ST_OK)
        remote_reply_free(reply);
    return rc;
}
