/*
 * hostengine.c -- the simulated nv-hostengine's listener and connections.
 *
 * One thread per connection (at most HOSTENGINE_MAX_CONNECTIONS), each
 * acting on the shared engine under its own owner id, so that what a
 * connection created goes when it goes (unless it asked to persist).  The
 * server trusts nothing it reads: lengths are bounded, a peer that stalls
 * mid-message or stops reading replies is dropped, and nothing a client
 * does can stop the listener.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
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
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hostengine_internal.h"
#include "../sources/source.h"

#define SCENARIO_ENV "DCGM_SIM_SCENARIO"
/* A message, once begun, must arrive whole within this long. */
#define HE_MESSAGE_TIMEOUT_MS 10000
/* A client must take a reply within this long. */
#define HE_SEND_TIMEOUT_MS 30000
#define HE_HELLO_TIMEOUT_MS 5000
/* Records are sent in frames of about this size. */
#define HE_CHUNK_BYTES (256u * 1024u)
#define HE_POLL_MS 200

typedef struct he_conn {
    he_session session;
    pthread_t thread;
    atomic_int done;
} he_conn;

typedef struct hostengine {
    sim_engine *engine;
    int listen_fd;
    he_conn *conns[HOSTENGINE_MAX_CONNECTIONS];
    engine_owner next_owner;
} hostengine;

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 ready, 0 deadline passed (never, for timeout_ms < 0), -1 poll failed. */
static int wait_ready(int fd, short events, int timeout_ms)
{
    int64_t deadline = monotonic_ms() + timeout_ms;
    for (;;) {
        int left = timeout_ms < 0 ? -1 : (int)(deadline - monotonic_ms());
        if (timeout_ms >= 0 && left <= 0)
            return 0;
        struct pollfd p = { fd, events, 0 };
        int n = poll(&p, 1, left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* 1 when all len bytes arrived; 0 on EOF, timeout or error.  The first byte
 * may wait first_wait_ms (-1: as long as it takes), the rest must follow
 * within HE_MESSAGE_TIMEOUT_MS of each other. */
static int read_exact(int fd, void *buf, size_t len, int first_wait_ms)
{
    unsigned char *p = buf;
    int wait = first_wait_ms;
    while (len > 0) {
        if (wait_ready(fd, POLLIN, wait) <= 0)
            return 0;
        ssize_t n = recv(fd, p, len, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
            return 0;
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            wait = HE_MESSAGE_TIMEOUT_MS;
        }
    }
    return 1;
}

static int write_all(int fd, const void *buf, size_t len, int flags)
{
    const unsigned char *p = buf;
    while (len > 0) {
        if (wait_ready(fd, POLLOUT, HE_SEND_TIMEOUT_MS) <= 0)
            return 0;
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | flags);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
            return 0;
        }
    }
    return 1;
}

/* ---- replies ---------------------------------------------------------------- */

/* more: MSG_MORE when another frame of the same reply follows at once, so that
 * the client gets the reply's frames in one segment and wakes once, not per frame. */
static void send_frame(he_session *s, const wire_reply *head, const void *tail, size_t len, int more)
{
    if (s->failed)
        return;
    if (!write_all(s->fd, head, sizeof *head, len ? MSG_MORE : more) ||
        (len && !write_all(s->fd, tail, len, more)))
        s->failed = 1;
}

static void flush_records(he_session *s, int more)
{
    if (s->chunk_len == 0)
        return;
    wire_reply head = { .magic = WIRE_REPLY_MAGIC, .kind = WIRE_RECORDS,
                        .tail_len = (uint32_t)s->chunk_len };
    send_frame(s, &head, s->chunk, s->chunk_len, more);
    s->chunk_len = 0;
}

int he_record(he_session *s, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
              const dcgmFieldValue_v1 *value)
{
    if (s->failed)
        return 1;
    wire_record rec = {
        .group = (uint32_t)group, .entity = entity, .version = value->version,
        .field_id = value->fieldId, .field_type = value->fieldType, .status = value->status,
        .value_len = (uint32_t)wire_value_len(&value->value), .ts = value->ts,
    };
    size_t need = sizeof rec + rec.value_len;
    if (s->chunk_len + need > s->chunk_cap) {
        flush_records(s, 0);
        if (!s->chunk) {
            s->chunk = malloc(HE_CHUNK_BYTES);
            if (!s->chunk) {
                s->failed = 1;
                return 1;
            }
            s->chunk_cap = HE_CHUNK_BYTES;
        }
    }
    memcpy(s->chunk + s->chunk_len, &rec, sizeof rec);
    memcpy(s->chunk + s->chunk_len + sizeof rec, &value->value, rec.value_len);
    s->chunk_len += need;
    return s->failed;
}

void he_reply(he_session *s, int status, int64_t i64, uint32_t u0, uint32_t u1,
              const void *tail, size_t tail_len)
{
    flush_records(s, MSG_MORE);
    if (tail_len > WIRE_MAX_TAIL) {
        status = DCGM_ST_GENERIC_ERROR;
        tail_len = 0;
    }
    wire_reply head = { .magic = WIRE_REPLY_MAGIC, .kind = WIRE_FINAL, .status = status,
                        .tail_len = (uint32_t)tail_len, .i64 = i64, .u = { u0, u1 } };
    send_frame(s, &head, tail, tail_len, 0);
}

/* ---- one connection --------------------------------------------------------- */

static int greet(int fd)
{
    const size_t len = strlen(REMOTE_HELLO);
    char hello[sizeof REMOTE_HELLO];
    if (!read_exact(fd, hello, len, HE_HELLO_TIMEOUT_MS) || memcmp(hello, REMOTE_HELLO, len) != 0)
        return 0;
    return write_all(fd, REMOTE_HELLO, len, 0);
}

static void serve_requests(he_session *s)
{
    unsigned char *tail = NULL;
    size_t tail_cap = 0;
    while (!s->failed) {
        wire_request req;
        if (!read_exact(s->fd, &req, sizeof req, -1))
            break;
        if (req.magic != WIRE_REQUEST_MAGIC || req.tail_len > WIRE_MAX_TAIL)
            break; /* not our client, or out of step: nothing to resync on */
        if (req.tail_len > tail_cap) {
            unsigned char *grown = realloc(tail, req.tail_len);
            if (!grown)
                break;
            tail = grown;
            tail_cap = req.tail_len;
        }
        if (req.tail_len && !read_exact(s->fd, tail, req.tail_len, HE_MESSAGE_TIMEOUT_MS))
            break;
        he_dispatch(s, &req, tail);
    }
    free(tail);
}

static void *connection_main(void *arg)
{
    he_conn *c = arg;
    he_session *s = &c->session;
    if (greet(s->fd))
        serve_requests(s);
    if (!s->persist)
        engine_release_owner(s->engine, s->owner);
    free(s->chunk);
    s->chunk = NULL;
    shutdown(s->fd, SHUT_RDWR);
    atomic_store(&c->done, 1);
    return NULL;
}

/* ---- the listener ------------------------------------------------------------ */

static void reap(hostengine *he, int all)
{
    for (int i = 0; i < HOSTENGINE_MAX_CONNECTIONS; i++) {
        he_conn *c = he->conns[i];
        if (!c || (!all && !atomic_load(&c->done)))
            continue;
        if (all)
            shutdown(c->session.fd, SHUT_RDWR); /* wakes a thread waiting on it */
        pthread_join(c->thread, NULL);
        close(c->session.fd);
        free(c);
        he->conns[i] = NULL;
    }
}

static void accept_one(hostengine *he)
{
    int fd = accept4(he->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    reap(he, 0);
    int slot = 0;
    while (slot < HOSTENGINE_MAX_CONNECTIONS && he->conns[slot])
        slot++;
    he_conn *c = slot < HOSTENGINE_MAX_CONNECTIONS ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        close(fd); /* full: the client's hello fails and it sees CONNECTION_NOT_VALID */
        return;
    }
    /* replies are answered at once: never hold them back for more */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* fails harmlessly on unix */
    c->session.fd = fd;
    c->session.engine = he->engine;
    /* owner ids wrap before the policy and health watchers' bits */
    if (++he->next_owner >= ENGINE_OWNER_POLICY)
        he->next_owner = ENGINE_OWNER_EMBEDDED + 1;
    c->session.owner = he->next_owner;
    atomic_init(&c->done, 0);
    if (pthread_create(&c->thread, NULL, connection_main, c) != 0) {
        close(fd);
        free(c);
        return;
    }
    he->conns[slot] = c;
}

static int listen_unix(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (!path || !*path || strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "unix socket path is empty or longer than %zu bytes",
                 sizeof sa.sun_path - 1);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct stat st;
    /* a socket file left by a killed hostengine would make bind fail */
    if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "cannot listen on unix socket %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int listen_tcp(const char *host, unsigned int port, char *err, size_t errlen)
{
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints, *list = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    int gai = getaddrinfo(host, service, &hints, &list);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1;
        if (fd >= 0)
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (fd >= 0 && (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0)) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(list);
    if (fd < 0)
        snprintf(err, errlen, "cannot listen on %s:%u: %s", host, port, strerror(saved));
    return fd;
}

static void describe_tcp(int fd, char *out, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t ss_len = sizeof ss;
    char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &ss_len) == 0)
        getnameinfo((struct sockaddr *)&ss, ss_len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    if (ss.ss_family == AF_INET6)
        snprintf(out, len, "[%s]:%s", host, port);
    else
        snprintf(out, len, "%s:%s", host, port);
}

static void announce(int ready_fd, const char *where)
{
    if (ready_fd < 0)
        return;
    char line[NI_MAXHOST + NI_MAXSERV + 64];
    int n = snprintf(line, sizeof line, "listening on %s\n", where);
    if (n > 0 && (size_t)n < sizeof line)
        (void)!write(ready_fd, line, (size_t)n);
}

static int stop_requested(int stop_fd, short revents)
{
    if (stop_fd < 0 || !revents)
        return 0;
    return 1; /* data, EOF or error on the stop fd all mean stop */
}

static void serve_loop(hostengine *he, int stop_fd)
{
    for (;;) {
        struct pollfd p[2] = { { he->listen_fd, POLLIN, 0 }, { stop_fd, POLLIN, 0 } };
        int n = poll(p, stop_fd >= 0 ? 2 : 1, HE_POLL_MS);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && stop_fd >= 0 && stop_requested(stop_fd, p[1].revents))
            break;
        if (n > 0 && (p[0].revents & POLLIN))
            accept_one(he);
        reap(he, 0);
    }
}

int hostengine_serve(const char *address, unsigned int port, int is_unix, const char *scenario,
                     int ready_fd, int stop_fd, char *err, size_t errlen)
{
    char scratch[8];
    if (!err || errlen == 0) {
        err = scratch;
        errlen = sizeof scratch;
    }
    err[0] = '\0';
    if (port > 65535 || (is_unix && !address)) {
        snprintf(err, errlen, "bad listen address");
        return DCGM_ST_BADPARAM;
    }
    hostengine *he = calloc(1, sizeof *he);
    if (!he)
        return DCGM_ST_MEMORY;
    /* nv-hostengine starts DCGM with its --log-filename / --log-level, which
     * the CLI hands over as the environment DCGM falls back on */
    engine_log_configure(NULL, DcgmLoggingSeverityUnspecified);
    ENGINE_LOG_DEBUG("Initialized the hostengine logger (pid %ld)", (long)getpid());
    int rc = engine_create_source(getenv(VALUE_SOURCE_ENV),
                                  scenario ? scenario : getenv(SCENARIO_ENV),
                                  DCGM_OPERATION_MODE_AUTO, &he->engine, err, errlen);
    const char *host = address && *address ? address : "127.0.0.1";
    if (rc == DCGM_ST_OK) {
        he->listen_fd = is_unix ? listen_unix(address, err, errlen)
                                : listen_tcp(host, port, err, errlen);
        if (he->listen_fd < 0)
            rc = DCGM_ST_CONNECTION_NOT_VALID;
    }
    if (rc == DCGM_ST_OK) {
        char where[NI_MAXHOST + NI_MAXSERV + 16];
        if (is_unix)
            snprintf(where, sizeof where, "unix:%s", address);
        else
            describe_tcp(he->listen_fd, where, sizeof where);
        announce(ready_fd, where);
        ENGINE_LOG_INFO("Listening on %s", where);
        serve_loop(he, stop_fd);
        close(he->listen_fd);
        if (is_unix)
            unlink(address);
        reap(he, 1);
    }
    engine_destroy(he->engine);
    free(he);
    return rc;
}

dcgmReturn_t dcgmSimServe(const char *address, unsigned int port, int isUnixSocket,
                          const char *scenario, int readyFd, int stopFd, char *errorText,
                          int errorTextLen)
{
    char err[512] = "";
    int rc = hostengine_serve(address, port, isUnixSocket, scenario, readyFd, stopFd, err,
                              sizeof err);
    if (errorText && errorTextLen > 0)
        snprintf(errorText, (size_t)errorTextLen, "%s", rc == DCGM_ST_OK ? "" : err);
    return (dcgmReturn_t)rc;
}
