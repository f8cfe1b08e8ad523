/*
 * engine_log.c -- DCGM's debug log file (engine_log.h).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "engine_log.h"

static struct {
    pthread_mutex_t lock;
    int configured;
    DcgmLoggingSeverity_t severity;
    char path[PATH_MAX];
    FILE *out;
    int open_failed;
} lg = { PTHREAD_MUTEX_INITIALIZER, 0, DcgmLoggingSeverityNone, "", NULL, 0 };

/* index = DcgmLoggingSeverity_t */
static const char *const severity_names[] = { "NONE", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "VERB" };
#define N_SEVERITIES ((int)(sizeof severity_names / sizeof severity_names[0]))

DcgmLoggingSeverity_t engine_log_severity_from_name(const char *name)
{
    if (!name)
        return DcgmLoggingSeverityUnspecified;
    for (int i = 0; i < N_SEVERITIES; i++)
        if (strcasecmp(severity_names[i], name) == 0)
            return (DcgmLoggingSeverity_t)i;
    return DcgmLoggingSeverityUnspecified;
}

/* an environment value DCGM would take: set, not empty, shorter than a path */
static const char *env_setting(const char *name)
{
    const char *v = getenv(name);
    if (!v)
        return NULL;
    size_t len = strnlen(v, PATH_MAX);
    return len > 0 && len < PATH_MAX ? v : NULL;
}

void engine_log_configure(const char *file, DcgmLoggingSeverity_t severity)
{
    DcgmLoggingSeverity_t sev = severity;
    if (sev < DcgmLoggingSeverityNone || sev > DcgmLoggingSeverityVerbose) {
        const char *name = env_setting(ENGINE_LOG_LEVEL_ENV);
        sev = name ? engine_log_severity_from_name(name) : DcgmLoggingSeverityError;
        if (sev == DcgmLoggingSeverityUnspecified)
            sev = DcgmLoggingSeverityError;
    }
    pthread_mutex_lock(&lg.lock);
    if (!lg.configured) {
        const char *path = file && file[0] ? file : env_setting(ENGINE_LOG_FILE_ENV);
        snprintf(lg.path, sizeof lg.path, "%s", path ? path : ENGINE_LOG_DEFAULT_FILE);
        lg.configured = 1;
    }
    lg.severity = sev;
    pthread_mutex_unlock(&lg.lock);
}

void engine_log_set_severity(DcgmLoggingSeverity_t severity)
{
    if (severity < DcgmLoggingSeverityNone || severity > DcgmLoggingSeverityVerbose)
        return;
    pthread_mutex_lock(&lg.lock);
    lg.severity = severity;
    pthread_mutex_unlock(&lg.lock);
}

const char *engine_log_severity_name(DcgmLoggingSeverity_t severity)
{
    return severity >= 0 && severity < N_SEVERITIES ? severity_names[severity] : "Unknown";
}

int engine_log_enabled(DcgmLoggingSeverity_t severity)
{
    pthread_mutex_lock(&lg.lock);
    int yes = lg.configured && severity > DcgmLoggingSeverityNone && severity <= lg.severity;
    pthread_mutex_unlock(&lg.lock);
    return yes;
}

static FILE *output_locked(void)
{
    if (lg.out || lg.open_failed)
        return lg.out;
    if (strcmp(lg.path, "-") == 0) {
        lg.out = stdout;
    } else {
        lg.out = fopen(lg.path, "ae");
        lg.open_failed = lg.out == NULL;
    }
    return lg.out;
}

void engine_log_write(DcgmLoggingSeverity_t severity, const char *src, int line, const char *func,
                      const char *fmt, ...)
{
    if (!engine_log_enabled(severity))
        return;
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t secs = tv.tv_sec;
    localtime_r(&secs, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    const char *base = src ? strrchr(src, '/') : NULL;
    base = base ? base + 1 : (src ? src : "?");
    pthread_mutex_lock(&lg.lock);
    FILE *out = output_locked();
    if (out) {
        fprintf(out, "%s.%03ld %s [%ld:%ld] %s [%s:%d] [%s]\n", stamp, (long)(tv.tv_usec / 1000),
                severity_names[severity], (long)getpid(), (long)syscall(SYS_gettid), message, base,
                line, func ? func : "?");
        fflush(out);
    }
    pthread_mutex_unlock(&lg.lock);
}
