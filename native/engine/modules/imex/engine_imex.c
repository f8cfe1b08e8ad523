/*
 * engine_imex.c -- the IMEX status fields, DCGM_FI_IMEX_DOMAIN_STATUS (1502,
 * a string) and DCGM_FI_IMEX_DAEMON_STATUS (1503, an integer), as DCGM's
 * cache manager fills them (dcgmlib/src/DcgmImexManager.cpp):
 *
 *  - both come from the nvidia-imex-ctl tool, looked for (an executable regular
 *    file) in DCGM's trusted folders only: /usr/bin, /usr/local/bin,
 *    /opt/nvidia/imex/bin, /usr/local/nvidia/imex/bin and
 *    /usr/libexec/datacenter-gpu-manager-4.  DCGM_SIM_IMEX_CTL names another
 *    path instead (DCGM's tests override the path the same way);
 *  - without the tool: domain "NOT_INSTALLED", daemon -1;
 *  - the domain status is the last "status":"..." of `nvidia-imex-ctl -N -j`,
 *    upper-cased: UP, DOWN or DEGRADED, anything else UNAVAILABLE; the daemon
 *    status is the trimmed, upper-cased output of `nvidia-imex-ctl -q`, one of
 *    INITIALIZING (0) .. UNAVAILABLE (7), anything else UNAVAILABLE;
 *  - output telling that the node configuration file could not be read:
 *    domain "NOT_CONFIGURED", daemon -2; a run that fails or outlives its
 *    time: domain "UNAVAILABLE", daemon -3;
 *  - the answers are kept 60 seconds, both refreshed together.
 *
 * The tool runs while the engine's lock is held (the sampler holds it), so a
 * run is cut off after IMEX_RUN_LIMIT_MS, shorter than DCGM's 30 seconds.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "imex.h"

extern char **environ;

#define IMEX_CACHE_US 60000000ll
#define IMEX_RUN_LIMIT_MS 5000
#define IMEX_OUTPUT_MAX 65536

static pthread_mutex_t imex_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int valid;
    int64_t stamp_us;
    char domain[32];
    int64_t daemon;
} imex_cache;

static int64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
}

/* FindImexCtlExecutable: 1 and the path in out when the tool is there */
static int find_tool(char *out, size_t outlen)
{
    const char *override = getenv("DCGM_SIM_IMEX_CTL");
    if (override && *override) {
        if (!executable_file(override))
            return 0;
        snprintf(out, outlen, "%s", override);
        return 1;
    }
    static const char *const dirs[] = { "/usr/bin", "/usr/local/bin", "/opt/nvidia/imex/bin",
                                        "/usr/local/nvidia/imex/bin",
                                        "/usr/libexec/datacenter-gpu-manager-4" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(out, outlen, "%s/nvidia-imex-ctl", dirs[i]);
        if (executable_file(out))
            return 1;
    }
    return 0;
}

/* Runs path with one or two arguments; its stdout and stderr, at most
 * IMEX_OUTPUT_MAX - 1 bytes, go to *out (malloc'd, NUL terminated).
 * 0 when it ran and exited 0 in time, -1 otherwise. */
static int run_tool(const char *path, const char *arg1, const char *arg2, char **out)
{
    *out = NULL;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    char *argv[] = { (char *)path, (char *)arg1, (char *)arg2, NULL };
    pid_t pid;
    int rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    char *buf = malloc(IMEX_OUTPUT_MAX);
    size_t len = 0;
    int timed_out = 0;
    int64_t deadline = monotonic_us() + IMEX_RUN_LIMIT_MS * 1000ll;
    while (buf) {
        int64_t left_ms = (deadline - monotonic_us()) / 1000;
        if (left_ms <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = { fds[0], POLLIN, 0 };
        int n = poll(&p, 1, (int)left_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            timed_out = n == 0;
            break;
        }
        char chunk[4096];
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size_t keep = (size_t)got;
        if (keep > IMEX_OUTPUT_MAX - 1 - len)
            keep = IMEX_OUTPUT_MAX - 1 - len;
        memcpy(buf + len, chunk, keep);
        len += keep;
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!buf)
        return -1;
    buf[len] = '\0';
    *out = buf;
    return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void upper_in_place(char *s)
{
    for (; *s; s++)
        *s = (char)toupper((unsigned char)*s);
}

static int not_configured(const char *output)
{
    return strstr(output, "Failed to read node configuration file") != NULL;
}

/* ParseDomainStatusJson */
static const char *parse_domain(const char *json)
{
    const char *key = "\"status\":";
    const char *at = NULL;
    for (const char *p = strstr(json, key); p; p = strstr(p + 1, key))
        at = p;
    if (!at)
        return "UNAVAILABLE";
    const char *open = strchr(at + strlen(key), '"');
    const char *close_q = open ? strchr(open + 1, '"') : NULL;
    if (!close_q || close_q - open - 1 >= 32)
        return "UNAVAILABLE";
    char value[32];
    memcpy(value, open + 1, (size_t)(close_q - open - 1));
    value[close_q - open - 1] = '\0';
    upper_in_place(value);
    static const char *const known[] = { "UP", "DOWN", "DEGRADED" };
    for (size_t i = 0; i < 3; i++)
        if (strcmp(value, known[i]) == 0)
            return known[i];
    return "UNAVAILABLE";
}

/* ParseDaemonStatusText */
static int64_t parse_daemon(char *text)
{
    while (*text && strchr(" \t\r\n", *text))
        text++;
    size_t n = strlen(text);
    while (n > 0 && strchr(" \t\r\n", text[n - 1]))
        text[--n] = '\0';
    upper_in_place(text);
    static const char *const names[] = { "INITIALIZING", "STARTING_AUTH_SERVER", "WAITING_FOR_PEERS",
                                         "WAITING_FOR_RECOVERY", "INIT_GPU", "READY",
                                         "SHUTTING_DOWN", "UNAVAILABLE" };
    for (int64_t i = 0; i < 8; i++)
        if (strcmp(text, names[i]) == 0)
            return i;
    return IMEX_DAEMON_UNAVAILABLE;
}

static void refresh_locked(void)
{
    char path[512];
    if (!find_tool(path, sizeof path)) {
        snprintf(imex_cache.domain, sizeof imex_cache.domain, "NOT_INSTALLED");
        imex_cache.daemon = IMEX_DAEMON_NOT_INSTALLED;
    } else {
        char *out = NULL;
        if (run_tool(path, "-N", "-j", &out) != 0)
            snprintf(imex_cache.domain, sizeof imex_cache.domain, "UNAVAILABLE");
        else if (not_configured(out))
            snprintf(imex_cache.domain, sizeof imex_cache.domain, "NOT_CONFIGURED");
        else
            snprintf(imex_cache.domain, sizeof imex_cache.domain, "%s", parse_domain(out));
        free(out);
        out = NULL;
        if (run_tool(path, "-q", NULL, &out) != 0)
            imex_cache.daemon = IMEX_DAEMON_COMMAND_ERROR;
        else if (not_configured(out))
            imex_cache.daemon = IMEX_DAEMON_NOT_CONFIGURED;
        else
            imex_cache.daemon = parse_daemon(out);
        free(out);
    }
    imex_cache.stamp_us = monotonic_us();
    imex_cache.valid = 1;
}

/* Whether field_id is one of the two IMEX fields. */
static int engine_imex_field(unsigned short field_id)
{
    return field_id == DCGM_FI_IMEX_DOMAIN_STATUS || field_id == DCGM_FI_IMEX_DAEMON_STATUS;
}

/* The field's current value (kind OK), from the 60-second cache. */
static void engine_imex_sample(unsigned short field_id, sim_value *out)
{
    pthread_mutex_lock(&imex_lock);
    if (!imex_cache.valid || monotonic_us() - imex_cache.stamp_us >= IMEX_CACHE_US)
        refresh_locked();
    if (field_id == DCGM_FI_IMEX_DOMAIN_STATUS)
        sim_put_str(out, imex_cache.domain);
    else
        sim_put_int(out, imex_cache.daemon);
    pthread_mutex_unlock(&imex_lock);
}

/* Drops the cache: the next sample asks the tool again. */
static void engine_imex_forget(void)
{
    pthread_mutex_lock(&imex_lock);
    imex_cache.valid = 0;
    pthread_mutex_unlock(&imex_lock);
}

/* ---- the module's hooks ------------------------------------------------------ */

static int imex_init(sim_engine *e)
{
    (void)e;
    engine_imex_forget(); /* a new engine asks the IMEX tool afresh */
    return DCGM_ST_OK;
}

static int imex_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                              int64_t t_rel, sim_value *out)
{
    (void)e;
    (void)ent;
    (void)t_rel;
    if (!engine_imex_field(field_id))
        return 0;
    engine_imex_sample(field_id, out);
    return 1;
}

const engine_module engine_imex_module = {
    .name = "imex",
    .init = imex_init,
    .sample_locked = imex_sample_locked,
};
