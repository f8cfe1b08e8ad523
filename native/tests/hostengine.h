/*
 * hostengine.h -- a hostengine of the engine (dcgmSimServe) on a thread of the
 * test program, for the native tests that talk to one.  Include after check.h
 * with CHECK_DLOPEN_DCGM defined.
 */
#ifndef NATIVE_TESTS_HOSTENGINE_H
#define NATIVE_TESTS_HOSTENGINE_H

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

typedef struct hostengine {
    pthread_t thread;
    int ready[2], stop[2];
    const char *scenario;
    char unix_path[108];         /* empty: TCP on 127.0.0.1, any port */
    char address[256];           /* what clients connect to */
    int rc;
    char err[256];
} hostengine;

static void *hostengine_main(void *arg)
{
    hostengine *he = arg;
    int is_unix = he->unix_path[0] != '\0';
    he->rc = p_dcgmSimServe(is_unix ? he->unix_path : NULL, 0, is_unix, he->scenario,
                            he->ready[1], he->stop[0], he->err, (int)sizeof he->err);
    close(he->ready[1]); /* a failed start ends the reader's wait */
    return NULL;
}

/* Reads the "listening on ..." line; 0 if none came within 10 s. */
static int read_ready_line(int fd, char *line, size_t len)
{
    size_t got = 0;
    int64_t deadline = mono_ms() + 10000;
    while (got + 1 < len) {
        struct pollfd p = { fd, POLLIN, 0 };
        int left = (int)(deadline - mono_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return 0;
        ssize_t n = read(fd, line + got, 1);
        if (n <= 0)
            return 0;
        if (line[got] == '\n') {
            line[got] = '\0';
            return 1;
        }
        got++;
    }
    return 0;
}

static int hostengine_start(hostengine *he, const char *scenario, const char *unix_path)
{
    memset(he, 0, sizeof *he);
    he->scenario = scenario;
    if (unix_path)
        snprintf(he->unix_path, sizeof he->unix_path, "%s", unix_path);
    if (pipe(he->ready) != 0 || pipe(he->stop) != 0)
        return 0;
    pthread_create(&he->thread, NULL, hostengine_main, he);
    char line[256];
    int ok = read_ready_line(he->ready[0], line, sizeof line);
    const char *prefix = "listening on ";
    ok = ok && strncmp(line, prefix, strlen(prefix)) == 0;
    if (ok && unix_path)
        snprintf(he->address, sizeof he->address, "unix://%s", unix_path);
    else if (ok)
        snprintf(he->address, sizeof he->address, "%s", line + strlen(prefix));
    CHECK(ok, "hostengine did not start: %s", he->err);
    return ok;
}

static void hostengine_stop(hostengine *he)
{
    CHECK(write(he->stop[1], "x", 1) == 1, "stop write");
    pthread_join(he->thread, NULL);
    CHECK_RC(he->rc, DCGM_ST_OK);
    close(he->ready[0]);
    close(he->stop[0]);
    close(he->stop[1]);
}

/* A connection to address, checked to succeed within 5 s; 0 when there is none. */
static inline dcgmHandle_t hostengine_connect(const char *address)
{
    dcgmConnectV3Params_t params = { dcgmConnectV3Params_version1, 0, 5000 };
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmConnect_v3(address, &params, &h), DCGM_ST_OK);
    return h;
}

/* Start a hostengine on scenario, connect, run script(handle, "hostengine"), disconnect, stop. */
static inline void run_through_hostengine(const char *scenario,
                                          void (*script)(dcgmHandle_t, const char *))
{
    hostengine he;
    if (!hostengine_start(&he, scenario, NULL))
        return;
    dcgmHandle_t h = hostengine_connect(he.address);
    if (h) {
        script(h, "hostengine");
        CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    }
    hostengine_stop(&he);
}

/* Start an embedded engine on scenario in mode, run script(EMB, "embedded"), stop it. */
static inline void run_embedded(const char *scenario, dcgmOperationMode_t mode,
                                void (*script)(dcgmHandle_t, const char *))
{
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmStartEmbedded(mode, &h), DCGM_ST_OK);
    script(EMB, "embedded");
    CHECK_RC(p_dcgmStopEmbedded(EMB), DCGM_ST_OK);
}

/* The same script embedded, then through a hostengine: the two must agree. */
static inline void run_both_ways(const char *scenario, dcgmOperationMode_t mode,
                                 void (*script)(dcgmHandle_t, const char *))
{
    run_embedded(scenario, mode, script);
    run_through_hostengine(scenario, script);
}

#endif /* NATIVE_TESTS_HOSTENGINE_H */
