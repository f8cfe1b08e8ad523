/*
 * scenario.c -- turns a node spec into the per-GPU plan: models, workloads
 * over time, XID events, lost GPUs.
 *
 * A spec is NULL/"" (the default node), a GPU count ("4"), or the path of a
 * scenario file in a small TOML subset (dcgm_collector/engine/scenarios/README.md).  The library
 * reads the file itself because the client that sets DCGM_SIM_SCENARIO
 * knows nothing of the simulator.  The parser accepts only what the schema
 * needs and rejects everything else with "file:line: problem", so a typo
 * never silently becomes a default.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "node_internal.h"
#include "recording_format.h"

#define SCN_LINE_MAX 1024
#define SCN_ARRAY_MAX DCGM_MAX_NUM_DEVICES
#define SCN_MAX_EVENTS RECORDING_MAX_EVENTS
#define SCN_MAX_BURST RECORDING_MAX_BURST
#define SCN_MAX_SECONDS (RECORDING_MAX_SPAN_DAYS * 24.0 * 3600)

/* ---- values ------------------------------------------------------------- */

typedef enum scn_type { SCN_STRING, SCN_INT, SCN_FLOAT, SCN_BOOL, SCN_ARRAY } scn_type;

typedef struct scn_value {
    scn_type type;
    char str[256];
    int64_t i;
    double d;                   /* also set for SCN_INT */
    bool b;
    int count;                  /* SCN_ARRAY: numbers in d_items/i_items, or strings in s_items */
    bool all_int;
    bool all_str;               /* SCN_ARRAY of strings (MIG profile names) */
    double d_items[SCN_ARRAY_MAX];
    int64_t i_items[SCN_ARRAY_MAX];
    char s_items[SCN_ARRAY_MAX][16];
} scn_value;

/* ---- parsed tables ------------------------------------------------------- */

/* Workload keys shared by [[gpu]] and [[event]] kind = "workload". */
typedef struct scn_workload_keys {
    bool has_kind;
    sim_workload_kind kind;
    bool has[7];
    double val[7];
    bool has_trace, has_loop;   /* replay only */
    char trace[256];            /* as written: relative to the scenario's folder */
    int trace_line;
    bool loop;
} scn_workload_keys;

static const char *const scn_workload_param_names[7] = {
    "utilization", "fb_used", "spike_period", "spike_length",
    "spike_utilization", "leak_rate", "heat_rate",
};

typedef struct scn_gpu_table {
    int line;
    const sim_model *model;
    int count;
    scn_workload_keys wl;
    bool has_power_limit;
    double power_limit;
    int power_limit_line;
    int mig_instances;
    int mig_line;
    int mig_profile_count;      /* mig_profiles, checked against the model once it is known */
    char mig_profiles[SIM_MAX_MIG_INSTANCES][16];
    int mig_profiles_line;
    char uuid[64], bus_id[32];  /* a recorded GPU's identity; empty: seeded */
    int identity_line;
} scn_gpu_table;
_Static_assert(sizeof ((scn_gpu_table *)0)->uuid == sizeof ((sim_gpu *)0)->uuid &&
               sizeof ((scn_gpu_table *)0)->bus_id == sizeof ((sim_gpu *)0)->bus_id,
               "a table's identity is copied whole into its GPU");

typedef enum scn_event_kind {
    SCN_EV_NONE, SCN_EV_XID, SCN_EV_LOST, SCN_EV_WORKLOAD, SCN_EV_ERRORS, SCN_EV_POWER_EXCURSION
} scn_event_kind;

/* kind = "errors": a rate per error kind (sim_error_kind order), and where it ramps to */
static const char *const scn_rate_names[SIM_ERR_KIND_COUNT] = {
    "sbe_rate", "pcie_replay_rate", "nvlink_crc_rate", "remap_rate",
};
static const char *const scn_rate_end_names[SIM_ERR_KIND_COUNT] = {
    "sbe_rate_end", "pcie_replay_rate_end", "nvlink_crc_rate_end", "remap_rate_end",
};
#define SCN_MAX_RATE 1e9            /* errors per second (remap_rate: rows per minute) */
#define SCN_MAX_OVER 3.0            /* a power excursion's draw, in power limits */
#define SCN_ERRORS_KEYS "sbe_rate, pcie_replay_rate, nvlink_crc_rate, remap_rate, their *_end, ramp"

typedef struct scn_event_table {
    int line;
    bool has_at;
    double at;
    int gpu_count;
    int64_t gpus[SCN_ARRAY_MAX];
    scn_event_kind kind;
    bool has_xid;
    int64_t xid;
    bool has_count, has_interval;
    int64_t count;
    double interval;
    scn_workload_keys wl;
    bool has_rate[SIM_ERR_KIND_COUNT], has_rate_end[SIM_ERR_KIND_COUNT], has_ramp;
    double rate[SIM_ERR_KIND_COUNT], rate_end[SIM_ERR_KIND_COUNT], ramp;
    bool has_over, has_length;
    double over, length;            /* power_excursion: draw in power limits, seconds each */
} scn_event_table;

/* [[process]]: one process on one GPU, or a churn of short-lived ones (processes.c). */
typedef struct scn_process_table {
    int line;
    bool has_gpu, has_pid, has_stop, has_gi, has_ci, has_lifetime;
    int64_t gpu, pid, gi, ci;
    double start, stop, fb_bytes, fb_growth, sm_share, mem_share, churn, lifetime;
    bool graphics;
} scn_process_table;

#define SCN_MAX_PROCESSES 256

typedef enum scn_section { SCN_TOP, SCN_GPU, SCN_EVENT, SCN_PROCESS } scn_section;

/* cores of a Grace CPU unless the scenario says (cpu_cores) */
#define SCN_GRACE_CORES 72

typedef struct scn_parser {
    const char *file;
    int line;
    char *err;
    size_t errlen;
    scn_section section;
    char seen[32][32];          /* keys seen in the current table */
    int seen_count;
    bool has_seed;
    uint64_t seed;
    int64_t nvswitches, cpus, cpu_cores;   /* top-level entity counts (node_levels.c) */
    int cpus_line;                         /* where the later of grace_cpus, cpu_cores is */
    scn_gpu_table gpus[DCGM_MAX_NUM_DEVICES];
    int gpu_tables;
    int gpu_total;
    scn_event_table *events;
    int event_count, event_cap;
    scn_process_table *processes;
    int process_count;
} scn_parser;

static int scn_fail(scn_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int scn_fail(scn_parser *p, const char *fmt, ...)
{
    if (p->err == NULL || p->errlen == 0)
        return DCGM_ST_BADPARAM;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%d: %s", p->file, p->line, msg);
    return DCGM_ST_BADPARAM;
}

/* ---- lexical layer ------------------------------------------------------- */

static const char *scn_skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static bool scn_is_bare_key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* After a value: only blanks and an optional comment may follow. */
static int scn_expect_end(scn_parser *p, const char *s)
{
    s = scn_skip_space(s);
    if (*s != '\0' && *s != '#')
        return scn_fail(p, "unexpected text after the value: '%.40s'", s);
    return DCGM_ST_OK;
}

static int scn_parse_string(scn_parser *p, const char **cursor, scn_value *v)
{
    const char *s = *cursor + 1;
    size_t n = 0;
    while (*s != '"') {
        char c = *s;
        if (c == '\0')
            return scn_fail(p, "unterminated string (strings are one line, in double quotes)");
        if (c == '\\') {
            s++;
            switch (*s) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            default:
                return scn_fail(p, "unsupported escape '\\%c' in string (use \\\" \\\\ \\n \\t)",
                                *s ? *s : ' ');
            }
        }
        if (n + 1 >= sizeof v->str)
            return scn_fail(p, "string longer than %zu characters", sizeof v->str - 1);
        v->str[n++] = c;
        s++;
    }
    v->str[n] = '\0';
    v->type = SCN_STRING;
    *cursor = s + 1;
    return DCGM_ST_OK;
}

/* Copies a number token without TOML's digit-separating underscores. */
static int scn_number_token(scn_parser *p, const char **cursor, char *buf, size_t buflen, bool *is_float)
{
    const char *s = *cursor;
    size_t n = 0;
    char prev = '\0';
    *is_float = false;
    while (*s && (isalnum((unsigned char)*s) || *s == '+' || *s == '-' || *s == '.' || *s == '_')) {
        if (*s == '_') {
            if (!isdigit((unsigned char)prev) || !isdigit((unsigned char)s[1]))
                return scn_fail(p, "misplaced '_' in number");
        } else {
            if (n + 1 >= buflen)
                return scn_fail(p, "number too long");
            if (*s == '.' || *s == 'e' || *s == 'E')
                *is_float = true;
            buf[n++] = *s;
        }
        prev = *s++;
    }
    buf[n] = '\0';
    *cursor = s;
    return DCGM_ST_OK;
}

static bool scn_has_leading_zero(const char *digits)
{
    if (*digits == '+' || *digits == '-')
        digits++;
    return digits[0] == '0' && isdigit((unsigned char)digits[1]);
}

/* TOML wants digits on both sides of a decimal point: no "1." or ".5". */
static bool scn_dot_between_digits(const char *num)
{
    const char *dot = strchr(num, '.');
    if (dot == NULL)
        return true;
    return dot > num && isdigit((unsigned char)dot[-1]) && isdigit((unsigned char)dot[1]);
}

static int scn_parse_number(scn_parser *p, const char **cursor, scn_value *v)
{
    char buf[64];
    bool is_float;
    int rc = scn_number_token(p, cursor, buf, sizeof buf, &is_float);
    if (rc != DCGM_ST_OK)
        return rc;
    if (buf[0] == '\0' || scn_has_leading_zero(buf))
        return scn_fail(p, "not a number: '%s'", buf);
    char *end = NULL;
    errno = 0;
    if (is_float) {
        double d = strtod(buf, &end);
        if (*end != '\0' || errno != 0 || !isfinite(d) || !scn_dot_between_digits(buf))
            return scn_fail(p, "not a number: '%s'", buf);
        v->type = SCN_FLOAT;
        v->d = d;
        return DCGM_ST_OK;
    }
    long long i = strtoll(buf, &end, 10);
    if (*end != '\0' || errno != 0)
        return scn_fail(p, "not an integer: '%s' (hex, octal and binary are not supported)", buf);
    v->type = SCN_INT;
    v->i = i;
    v->d = (double)i;
    return DCGM_ST_OK;
}

static int scn_parse_array(scn_parser *p, const char **cursor, scn_value *v)
{
    const char *s = scn_skip_space(*cursor + 1);
    v->type = SCN_ARRAY;
    v->count = 0;
    v->all_int = true;
    while (*s != ']') {
        if (*s == '\0' || *s == '#')
            return scn_fail(p, "unterminated array (arrays must close on the same line)");
        if (v->count == SCN_ARRAY_MAX)
            return scn_fail(p, "array longer than %d items", SCN_ARRAY_MAX);
        scn_value item;
        int rc;
        if (*s == '"') {
            /* strings: short names only (MIG profiles), never mixed with numbers */
            if ((rc = scn_parse_string(p, &s, &item)) != DCGM_ST_OK)
                return rc;
            if (strlen(item.str) >= sizeof v->s_items[0])
                return scn_fail(p, "\"%s\" is too long for an array item", item.str);
            if (v->count > 0 && !v->all_str)
                return scn_fail(p, "arrays hold numbers or strings, not both");
            v->all_str = true;
            v->all_int = false;
            memcpy(v->s_items[v->count++], item.str, strlen(item.str) + 1);   /* fits: checked above */
        } else {
            if (!(isdigit((unsigned char)*s) || *s == '+' || *s == '-' || *s == '.'))
                return scn_fail(p, "arrays may hold only numbers or strings");
            if (v->all_str)
                return scn_fail(p, "arrays hold numbers or strings, not both");
            if ((rc = scn_parse_number(p, &s, &item)) != DCGM_ST_OK)
                return rc;
            v->d_items[v->count] = item.d;
            v->i_items[v->count] = item.i;
            v->all_int = v->all_int && item.type == SCN_INT;
            v->count++;
        }
        s = scn_skip_space(s);
        if (*s == ',')
            s = scn_skip_space(s + 1);
        else if (*s != ']')
            return scn_fail(p, "expected ',' or ']' in array");
    }
    *cursor = s + 1;
    return DCGM_ST_OK;
}

static int scn_parse_value(scn_parser *p, const char *s, scn_value *v)
{
    int rc;
    memset(v, 0, sizeof *v);
    if (*s == '"') {
        if (s[1] == '"' && s[2] == '"')
            return scn_fail(p, "multi-line strings are not supported");
        rc = scn_parse_string(p, &s, v);
    } else if (*s == '\'') {
        return scn_fail(p, "literal strings ('...') are not supported; use \"...\"");
    } else if (*s == '[') {
        rc = scn_parse_array(p, &s, v);
    } else if (strncmp(s, "true", 4) == 0 && !scn_is_bare_key_char(s[4])) {
        v->type = SCN_BOOL;
        v->b = true;
        s += 4;
        rc = DCGM_ST_OK;
    } else if (strncmp(s, "false", 5) == 0 && !scn_is_bare_key_char(s[5])) {
        v->type = SCN_BOOL;
        s += 5;
        rc = DCGM_ST_OK;
    } else if (isdigit((unsigned char)*s) || *s == '+' || *s == '-' || *s == '.') {
        rc = scn_parse_number(p, &s, v);
    } else if (*s == '\0' || *s == '#') {
        return scn_fail(p, "missing value after '='");
    } else if (*s == '{') {
        return scn_fail(p, "inline tables are not supported");
    } else {
        return scn_fail(p, "unsupported value '%.40s' (strings need double quotes)", s);
    }
    if (rc != DCGM_ST_OK)
        return rc;
    return scn_expect_end(p, s);
}

/* ---- typed getters -------------------------------------------------------- */

static const char *scn_type_name(scn_type t)
{
    switch (t) {
    case SCN_STRING: return "a string";
    case SCN_INT: return "an integer";
    case SCN_FLOAT: return "a number";
    case SCN_BOOL: return "a boolean";
    default: return "an array";
    }
}

static int scn_want_number(scn_parser *p, const char *key, const scn_value *v, double lo, double hi,
                           double *out)
{
    if (v->type != SCN_INT && v->type != SCN_FLOAT)
        return scn_fail(p, "'%s' must be a number, not %s", key, scn_type_name(v->type));
    if (!(v->d >= lo && v->d <= hi))
        return scn_fail(p, "'%s' = %g is out of range (%g to %g)", key, v->d, lo, hi);
    *out = v->d;
    return DCGM_ST_OK;
}

static int scn_want_int(scn_parser *p, const char *key, const scn_value *v, int64_t lo, int64_t hi,
                        int64_t *out)
{
    if (v->type != SCN_INT)
        return scn_fail(p, "'%s' must be an integer, not %s", key, scn_type_name(v->type));
    if (v->i < lo || v->i > hi)
        return scn_fail(p, "'%s' = %lld is out of range (%lld to %lld)", key, (long long)v->i,
                        (long long)lo, (long long)hi);
    *out = v->i;
    return DCGM_ST_OK;
}

static int scn_want_string(scn_parser *p, const char *key, const scn_value *v)
{
    if (v->type != SCN_STRING)
        return scn_fail(p, "'%s' must be a string, not %s", key, scn_type_name(v->type));
    return DCGM_ST_OK;
}

static int scn_want_workload(scn_parser *p, const char *key, const scn_value *v, scn_workload_keys *wl)
{
    int rc = scn_want_string(p, key, v);
    if (rc != DCGM_ST_OK)
        return rc;
    if (sim_workload_from_name(v->str, &wl->kind) != 0)
        return scn_fail(p, "unknown workload \"%s\" (known: %s)", v->str, sim_workload_known_names());
    wl->has_kind = true;
    return DCGM_ST_OK;
}

/* Returns 1 if key is a workload parameter (and stores it), 0 if not, <0 on error. */
static int scn_workload_param(scn_parser *p, const char *key, const scn_value *v, scn_workload_keys *wl)
{
    static const double hi[7] = {1.0, 1.0, 3600.0, 3600.0, 1.0, 1e6, 100.0};
    static const double lo[7] = {0.0, 0.0, 0.001, 0.001, 0.0, 0.0, 0.0};
    for (int i = 0; i < 7; i++) {
        if (strcmp(key, scn_workload_param_names[i]) != 0)
            continue;
        int rc = scn_want_number(p, key, v, lo[i], hi[i], &wl->val[i]);
        if (rc != DCGM_ST_OK)
            return rc;
        wl->has[i] = true;
        return 1;
    }
    return 0;
}

/* Returns 1 if key is a replay key (and stores it), 0 if not, <0 on error. */
static int scn_replay_param(scn_parser *p, const char *key, const scn_value *v, scn_workload_keys *wl)
{
    if (strcmp(key, "trace") == 0) {
        int rc = scn_want_string(p, key, v);
        if (rc != DCGM_ST_OK)
            return rc;
        if (v->str[0] == '\0')
            return scn_fail(p, "'trace' is empty: give the path of a CSV trace");
        snprintf(wl->trace, sizeof wl->trace, "%s", v->str);
        wl->has_trace = true;
        wl->trace_line = p->line;
        return 1;
    }
    if (strcmp(key, "loop") == 0) {
        if (v->type != SCN_BOOL)
            return scn_fail(p, "'loop' must be true or false, not %s", scn_type_name(v->type));
        wl->loop = v->b;
        wl->has_loop = true;
        return 1;
    }
    return 0;
}

/* ---- tables --------------------------------------------------------------- */

#define SCN_WORKLOAD_KEYS "workload, utilization, fb_used, spike_period, spike_length, " \
                          "spike_utilization, leak_rate, heat_rate, trace, loop"

static int scn_top_key(scn_parser *p, const char *key, const scn_value *v)
{
    int64_t seed;
    if (strcmp(key, "seed") == 0) {
        int rc = scn_want_int(p, key, v, 0, INT64_MAX, &seed);
        p->seed = (uint64_t)seed;
        p->has_seed = true;
        return rc;
    }
    if (strcmp(key, "name") == 0 || strcmp(key, "description") == 0)
        return scn_want_string(p, key, v);
    if (strcmp(key, "nvswitches") == 0)
        return scn_want_int(p, key, v, 0, DCGM_MAX_NUM_SWITCHES, &p->nvswitches);
    if (strcmp(key, "grace_cpus") == 0 || strcmp(key, "cpu_cores") == 0)
        p->cpus_line = p->line;
    if (strcmp(key, "grace_cpus") == 0)
        return scn_want_int(p, key, v, 0, DCGM_MAX_NUM_CPUS, &p->cpus);
    if (strcmp(key, "cpu_cores") == 0)
        return scn_want_int(p, key, v, 1, DCGM_MAX_NUM_CPU_CORES, &p->cpu_cores);
    return scn_fail(p, "unknown key '%s' at top level (known: seed, name, description, nvswitches, "
                       "grace_cpus, cpu_cores)", key);
}

static int scn_mig_profiles_key(scn_parser *p, const char *key, const scn_value *v, scn_gpu_table *g)
{
    if (v->type != SCN_ARRAY || (v->count > 0 && !v->all_str))
        return scn_fail(p, "'%s' must be an array of profile names, e.g. [\"3g.40gb\", \"1g.10gb\"]", key);
    if (v->count > SIM_MAX_MIG_INSTANCES)
        return scn_fail(p, "'%s' lists %d GPU instances (at most %d)", key, v->count, SIM_MAX_MIG_INSTANCES);
    g->mig_profile_count = v->count;
    for (int i = 0; i < v->count; i++)
        snprintf(g->mig_profiles[i], sizeof g->mig_profiles[i], "%s", v->s_items[i]);
    g->mig_profiles_line = p->line;
    return DCGM_ST_OK;
}

static int scn_gpu_key(scn_parser *p, const char *key, const scn_value *v)
{
    scn_gpu_table *g = &p->gpus[p->gpu_tables - 1];
    int64_t n;
    int rc;
    if (strcmp(key, "model") == 0) {
        if ((rc = scn_want_string(p, key, v)) != DCGM_ST_OK)
            return rc;
        g->model = sim_model_find(v->str);
        if (g->model == NULL)
            return scn_fail(p, "unknown model \"%s\" (known: %s)", v->str, sim_model_known_names());
        return DCGM_ST_OK;
    }
    if (strcmp(key, "count") == 0) {
        rc = scn_want_int(p, key, v, 1, DCGM_MAX_NUM_DEVICES, &n);
        g->count = (int)n;
        return rc;
    }
    if (strcmp(key, "mig_instances") == 0) {
        rc = scn_want_int(p, key, v, 0, SIM_MAX_MIG_INSTANCES, &n);
        g->mig_instances = (int)n;
        g->mig_line = p->line;
        return rc;
    }
    if (strcmp(key, "mig_profiles") == 0)
        return scn_mig_profiles_key(p, key, v, g);
    if (strcmp(key, "power_limit") == 0) {
        g->has_power_limit = true;
        g->power_limit_line = p->line;
        return scn_want_number(p, key, v, 1.0, 10000.0, &g->power_limit);
    }
    if (strcmp(key, "uuid") == 0 || strcmp(key, "pci_bus_id") == 0) {
        bool uuid = key[0] == 'u';
        char *into = uuid ? g->uuid : g->bus_id;
        size_t room = uuid ? sizeof g->uuid : sizeof g->bus_id;
        if ((rc = scn_want_string(p, key, v)) != DCGM_ST_OK)
            return rc;
        size_t len = strlen(v->str);
        if (len == 0 || len >= room)
            return scn_fail(p, "'%s' must be 1 to %zu characters", key, room - 1);
        for (size_t i = 0; i < len; i++) {
            if (!isgraph((unsigned char)v->str[i]))
                return scn_fail(p, "'%s' has a blank or control character", key);
        }
        memcpy(into, v->str, len + 1);
        g->identity_line = p->line;
        return DCGM_ST_OK;
    }
    if (strcmp(key, "workload") == 0)
        return scn_want_workload(p, key, v, &g->wl);
    rc = scn_workload_param(p, key, v, &g->wl);
    if (rc == 0)
        rc = scn_replay_param(p, key, v, &g->wl);
    if (rc != 0)
        return rc < 0 ? rc : DCGM_ST_OK;
    return scn_fail(p, "unknown key '%s' in [[gpu]] (known: model, count, mig_instances, mig_profiles, "
                       "power_limit, uuid, pci_bus_id, " SCN_WORKLOAD_KEYS ")", key);
}

static int scn_event_gpus(scn_parser *p, const scn_value *v, scn_event_table *e)
{
    if (v->type == SCN_INT) {
        e->gpus[0] = v->i;
        e->gpu_count = 1;
    } else if (v->type == SCN_ARRAY && v->all_int && v->count > 0) {
        memcpy(e->gpus, v->i_items, sizeof e->gpus[0] * (size_t)v->count);
        e->gpu_count = v->count;
    } else {
        return scn_fail(p, "'gpu' must be a GPU index or an array of them, e.g. gpu = [0, 3]");
    }
    for (int i = 0; i < e->gpu_count; i++) {
        if (e->gpus[i] < 0 || e->gpus[i] >= DCGM_MAX_NUM_DEVICES)
            return scn_fail(p, "gpu %lld is out of range (0 to %d)", (long long)e->gpus[i],
                            DCGM_MAX_NUM_DEVICES - 1);
    }
    return DCGM_ST_OK;
}

static int scn_event_kind_of(scn_parser *p, const scn_value *v, scn_event_table *e)
{
    int rc = scn_want_string(p, "kind", v);
    if (rc != DCGM_ST_OK)
        return rc;
    if (strcasecmp(v->str, "xid") == 0)
        e->kind = SCN_EV_XID;
    else if (strcasecmp(v->str, "lost") == 0)
        e->kind = SCN_EV_LOST;
    else if (strcasecmp(v->str, "workload") == 0)
        e->kind = SCN_EV_WORKLOAD;
    else if (strcasecmp(v->str, "errors") == 0)
        e->kind = SCN_EV_ERRORS;
    else if (strcasecmp(v->str, "power_excursion") == 0)
        e->kind = SCN_EV_POWER_EXCURSION;
    else
        return scn_fail(p, "unknown event kind \"%s\" (known: xid, lost, workload, errors, power_excursion)",
                        v->str);
    return DCGM_ST_OK;
}

/* The keys of kind = "errors" and "power_excursion" events: 1 if key was one (stored), 0 if not, < 0 on error. */
static int scn_fault_key(scn_parser *p, const char *key, const scn_value *v, scn_event_table *e)
{
    for (int k = 0; k < SIM_ERR_KIND_COUNT; k++) {
        if (strcmp(key, scn_rate_names[k]) == 0) {
            e->has_rate[k] = true;
            int rc = scn_want_number(p, key, v, 0.0, SCN_MAX_RATE, &e->rate[k]);
            return rc != DCGM_ST_OK ? rc : 1;
        }
        if (strcmp(key, scn_rate_end_names[k]) == 0) {
            e->has_rate_end[k] = true;
            int rc = scn_want_number(p, key, v, 0.0, SCN_MAX_RATE, &e->rate_end[k]);
            return rc != DCGM_ST_OK ? rc : 1;
        }
    }
    struct { const char *name; bool *has; double *into; double lo, hi; } numbers[] = {
        {"ramp", &e->has_ramp, &e->ramp, 0.0, SCN_MAX_SECONDS},
        {"over", &e->has_over, &e->over, 1.0, SCN_MAX_OVER},
        {"length", &e->has_length, &e->length, 0.1, 86400.0},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        if (strcmp(key, numbers[i].name) == 0) {
            *numbers[i].has = true;
            int rc = scn_want_number(p, key, v, numbers[i].lo, numbers[i].hi, numbers[i].into);
            return rc != DCGM_ST_OK ? rc : 1;
        }
    }
    return 0;
}

static int scn_event_key(scn_parser *p, const char *key, const scn_value *v)
{
    scn_event_table *e = &p->events[p->event_count - 1];
    int rc;
    if (strcmp(key, "at") == 0) {
        e->has_at = true;
        return scn_want_number(p, key, v, 0.0, SCN_MAX_SECONDS, &e->at);
    }
    if (strcmp(key, "gpu") == 0)
        return scn_event_gpus(p, v, e);
    if (strcmp(key, "kind") == 0)
        return scn_event_kind_of(p, v, e);
    if (strcmp(key, "xid") == 0) {
        e->has_xid = true;
        return scn_want_int(p, key, v, 0, RECORDING_MAX_XID, &e->xid);
    }
    if (strcmp(key, "count") == 0) {
        e->has_count = true;
        return scn_want_int(p, key, v, 1, SCN_MAX_BURST, &e->count);
    }
    if (strcmp(key, "interval") == 0) {
        e->has_interval = true;
        return scn_want_number(p, key, v, 0.0, 86400.0, &e->interval);
    }
    if (strcmp(key, "workload") == 0)
        return scn_want_workload(p, key, v, &e->wl);
    rc = scn_workload_param(p, key, v, &e->wl);
    if (rc == 0)
        rc = scn_replay_param(p, key, v, &e->wl);
    if (rc == 0)
        rc = scn_fault_key(p, key, v, e);
    if (rc != 0)
        return rc < 0 ? rc : DCGM_ST_OK;
    return scn_fail(p, "unknown key '%s' in [[event]] (known: at, gpu, kind, xid, count, interval, "
                       SCN_WORKLOAD_KEYS ", " SCN_ERRORS_KEYS ", over, length)", key);
}

static int scn_process_key(scn_parser *p, const char *key, const scn_value *v)
{
    scn_process_table *t = &p->processes[p->process_count - 1];
    int rc;
    struct { const char *name; double *into; double lo, hi; } numbers[] = {
        {"start", &t->start, 0.0, SCN_MAX_SECONDS}, {"stop", &t->stop, 0.0, SCN_MAX_SECONDS},
        {"fb_bytes", &t->fb_bytes, 0.0, 1e15}, {"fb_growth", &t->fb_growth, 0.0, 1e13},
        {"sm_share", &t->sm_share, 0.0, 1.0}, {"mem_share", &t->mem_share, 0.0, 1.0},
        {"churn", &t->churn, 0.001, 10000.0}, {"lifetime", &t->lifetime, 0.001, SCN_MAX_SECONDS},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        if (strcmp(key, numbers[i].name) != 0)
            continue;
        t->has_stop |= numbers[i].into == &t->stop;
        t->has_lifetime |= numbers[i].into == &t->lifetime;
        return scn_want_number(p, key, v, numbers[i].lo, numbers[i].hi, numbers[i].into);
    }
    struct { const char *name; int64_t *into; bool *has; int64_t lo, hi; } ints[] = {
        {"gpu", &t->gpu, &t->has_gpu, 0, DCGM_MAX_NUM_DEVICES - 1},
        {"pid", &t->pid, &t->has_pid, 1, 0xFFFFFFFELL},
        {"gpu_instance", &t->gi, &t->has_gi, 0, SIM_MAX_MIG_INSTANCES - 1},
        {"compute_instance", &t->ci, &t->has_ci, 0, SIM_MAX_MIG_INSTANCES - 1},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(key, ints[i].name) != 0)
            continue;
        *ints[i].has = true;
        return scn_want_int(p, key, v, ints[i].lo, ints[i].hi, ints[i].into);
    }
    if (strcmp(key, "name") == 0)
        return scn_want_string(p, key, v);   /* the scenario's own note: NVML gives no names */
    if (strcmp(key, "type") == 0) {
        if ((rc = scn_want_string(p, key, v)) != DCGM_ST_OK)
            return rc;
        if (strcasecmp(v->str, "compute") != 0 && strcasecmp(v->str, "graphics") != 0)
            return scn_fail(p, "unknown process type \"%s\" (known: compute, graphics)", v->str);
        t->graphics = strcasecmp(v->str, "graphics") == 0;
        return DCGM_ST_OK;
    }
    return scn_fail(p, "unknown key '%s' in [[process]] (known: gpu, pid, name, type, start, stop, fb_bytes, "
                       "fb_growth, sm_share, mem_share, gpu_instance, compute_instance, churn, lifetime)", key);
}

static int scn_open_table(scn_parser *p, const char *name)
{
    p->seen_count = 0;
    if (strcmp(name, "gpu") == 0) {
        if (p->gpu_tables == DCGM_MAX_NUM_DEVICES)
            return scn_fail(p, "too many [[gpu]] tables (at most %d)", DCGM_MAX_NUM_DEVICES);
        scn_gpu_table *g = &p->gpus[p->gpu_tables++];
        memset(g, 0, sizeof *g);
        g->line = p->line;
        g->model = sim_model_default();
        g->count = 1;
        p->section = SCN_GPU;
        return DCGM_ST_OK;
    }
    if (strcmp(name, "event") == 0) {
        if (p->event_count == SCN_MAX_EVENTS)
            return scn_fail(p, "too many [[event]] tables (at most %d)", SCN_MAX_EVENTS);
        if (p->event_count == p->event_cap) {
            int cap = p->event_cap ? p->event_cap * 2 : 16;
            scn_event_table *grown = realloc(p->events, (size_t)cap * sizeof *grown);
            if (grown == NULL)
                return scn_fail(p, "out of memory");
            p->events = grown;
            p->event_cap = cap;
        }
        scn_event_table *e = &p->events[p->event_count++];
        memset(e, 0, sizeof *e);
        e->line = p->line;
        p->section = SCN_EVENT;
        return DCGM_ST_OK;
    }
    if (strcmp(name, "process") == 0) {
        if (p->process_count == SCN_MAX_PROCESSES)
            return scn_fail(p, "too many [[process]] tables (at most %d)", SCN_MAX_PROCESSES);
        if (p->processes == NULL && (p->processes = calloc(SCN_MAX_PROCESSES, sizeof *p->processes)) == NULL)
            return scn_fail(p, "out of memory");
        scn_process_table *t = &p->processes[p->process_count++];
        memset(t, 0, sizeof *t);
        t->line = p->line;
        t->sm_share = t->mem_share = 1.0;
        p->section = SCN_PROCESS;
        return DCGM_ST_OK;
    }
    return scn_fail(p, "unknown table [[%s]] (known: [[gpu]], [[event]], [[process]])", name);
}

static int scn_header(scn_parser *p, const char *s)
{
    if (s[1] != '[')
        return scn_fail(p, "plain [tables] are not supported; use [[gpu]], [[event]] or [[process]]");
    s = scn_skip_space(s + 2);
    char name[32];
    size_t n = 0;
    while (scn_is_bare_key_char(*s)) {
        if (n + 1 >= sizeof name)
            return scn_fail(p, "table name too long");
        name[n++] = *s++;
    }
    name[n] = '\0';
    s = scn_skip_space(s);
    if (n == 0 || s[0] != ']' || s[1] != ']')
        return scn_fail(p, "malformed table header (expected [[gpu]], [[event]] or [[process]])");
    int rc = scn_expect_end(p, s + 2);
    return rc != DCGM_ST_OK ? rc : scn_open_table(p, name);
}

static int scn_note_key(scn_parser *p, const char *key)
{
    for (int i = 0; i < p->seen_count; i++) {
        if (strcmp(p->seen[i], key) == 0)
            return scn_fail(p, "key '%s' given twice in the same table", key);
    }
    if (p->seen_count < (int)(sizeof p->seen / sizeof p->seen[0]))
        snprintf(p->seen[p->seen_count++], sizeof p->seen[0], "%s", key);
    return DCGM_ST_OK;
}

static int scn_key_value(scn_parser *p, const char *s)
{
    char key[32];
    size_t n = 0;
    if (*s == '"' || *s == '\'')
        return scn_fail(p, "quoted keys are not supported");
    while (scn_is_bare_key_char(*s)) {
        if (n + 1 >= sizeof key)
            return scn_fail(p, "key too long");
        key[n++] = *s++;
    }
    key[n] = '\0';
    s = scn_skip_space(s);
    if (n == 0)
        return scn_fail(p, "expected 'key = value' or a [[table]] header");
    if (*s == '.')
        return scn_fail(p, "dotted keys are not supported");
    if (*s != '=')
        return scn_fail(p, "expected '=' after key '%s'", key);
    int rc = scn_note_key(p, key);
    if (rc != DCGM_ST_OK)
        return rc;
    scn_value v;
    rc = scn_parse_value(p, scn_skip_space(s + 1), &v);
    if (rc != DCGM_ST_OK)
        return rc;
    switch (p->section) {
    case SCN_GPU: return scn_gpu_key(p, key, &v);
    case SCN_EVENT: return scn_event_key(p, key, &v);
    case SCN_PROCESS: return scn_process_key(p, key, &v);
    default: return scn_top_key(p, key, &v);
    }
}

static int scn_line(scn_parser *p, char *line)
{
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    const char *s = scn_skip_space(line);
    if (*s == '\0' || *s == '#')
        return DCGM_ST_OK;
    if (*s == '[')
        return scn_header(p, s);
    return scn_key_value(p, s);
}

static int scn_read_file(scn_parser *p, FILE *f)
{
    char line[SCN_LINE_MAX];
    p->line = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        p->line++;
        if (strchr(line, '\n') == NULL && !feof(f))
            return scn_fail(p, "line longer than %d characters", SCN_LINE_MAX - 2);
        int rc = scn_line(p, line);
        if (rc != DCGM_ST_OK)
            return rc;
    }
    if (ferror(f))
        return scn_fail(p, "read error");
    return DCGM_ST_OK;
}

/* ---- checks across tables ------------------------------------------------- */

/* mig_profiles: names the model has, slices that fit one GPU, as many as mig_instances says */
static int scn_check_mig_profiles(scn_parser *p, const scn_gpu_table *g)
{
    const sim_model *m = g->model;
    if (g->mig_profile_count == 0)
        return DCGM_ST_OK;
    p->line = g->mig_profiles_line;
    if (!m->mig_capable)
        return scn_fail(p, "model %s does not support MIG (mig_profiles must be left out)", m->key);
    if (g->mig_instances > 0 && g->mig_instances != g->mig_profile_count)
        return scn_fail(p, "mig_profiles lists %d GPU instances but mig_instances = %d", g->mig_profile_count,
                        g->mig_instances);
    unsigned int compute = 0, memory = 0;
    for (int i = 0; i < g->mig_profile_count; i++) {
        const sim_mig_profile *profile = sim_mig_profile_find(m->key, g->mig_profiles[i]);
        if (!profile) {
            char known[128];
            return scn_fail(p, "%s has no MIG profile \"%s\" (known: %s)", m->key, g->mig_profiles[i],
                            sim_mig_profile_names(m->key, known, sizeof known));
        }
        compute += profile->compute_slices;
        memory += profile->memory_slices;
    }
    if (compute > SIM_MIG_COMPUTE_SLICES || memory > SIM_MIG_MEMORY_SLICES)
        return scn_fail(p, "mig_profiles do not fit one GPU: %u of %d compute slices, %u of %d memory slices",
                        compute, SIM_MIG_COMPUTE_SLICES, memory, SIM_MIG_MEMORY_SLICES);
    return DCGM_ST_OK;
}

static int scn_check_gpu_table(scn_parser *p, const scn_gpu_table *g)
{
    const sim_model *m = g->model;
    if (g->mig_instances > 0 && !m->mig_capable) {
        p->line = g->mig_line;
        return scn_fail(p, "model %s does not support MIG (mig_instances must be 0)", m->key);
    }
    int rc = scn_check_mig_profiles(p, g);
    if (rc != DCGM_ST_OK)
        return rc;
    if ((g->uuid[0] != '\0' || g->bus_id[0] != '\0') && g->count > 1) {
        p->line = g->identity_line;
        return scn_fail(p, "'uuid' and 'pci_bus_id' name one GPU: they need count = 1, not %d", g->count);
    }
    if (g->has_power_limit && (g->power_limit < m->power_min_w || g->power_limit > m->power_max_w)) {
        p->line = g->power_limit_line;
        return scn_fail(p, "power_limit %g W is outside %s's range (%g to %g W)", g->power_limit,
                        m->key, m->power_min_w, m->power_max_w);
    }
    return DCGM_ST_OK;
}

static int scn_check_workload_keys(scn_parser *p, const scn_workload_keys *wl, bool allowed)
{
    for (int i = 0; i < 7; i++) {
        if (wl->has[i] && !allowed)
            return scn_fail(p, "'%s' only applies to kind = \"workload\" events",
                            scn_workload_param_names[i]);
    }
    if (wl->has[2] && wl->has[3] && wl->val[3] >= wl->val[2])
        return scn_fail(p, "spike_length must be shorter than spike_period");
    bool replay = wl->has_kind && wl->kind == SIM_WL_REPLAY;
    if (replay && !wl->has_trace)
        return scn_fail(p, "workload = \"replay\" needs 'trace' (the path of a CSV trace)");
    if (!replay && (wl->has_trace || wl->has_loop))
        return scn_fail(p, "'%s' only applies to workload = \"replay\"", wl->has_trace ? "trace" : "loop");
    return DCGM_ST_OK;
}

/* The keys of kind = "errors" and kind = "power_excursion", on those kinds only. */
static int scn_check_fault_keys(scn_parser *p, const scn_event_table *e)
{
    bool errors = e->kind == SCN_EV_ERRORS, any_rate = false, any_end = false;
    for (int k = 0; k < SIM_ERR_KIND_COUNT; k++) {
        if ((e->has_rate[k] || e->has_rate_end[k]) && !errors)
            return scn_fail(p, "'%s' only applies to kind = \"errors\" events",
                            e->has_rate[k] ? scn_rate_names[k] : scn_rate_end_names[k]);
        any_rate |= e->has_rate[k];
        any_end |= e->has_rate_end[k];
    }
    if (e->has_ramp && !errors)
        return scn_fail(p, "'ramp' only applies to kind = \"errors\" events");
    if (errors && !any_rate && !any_end)
        return scn_fail(p, "kind = \"errors\" needs a rate (%s)", SCN_ERRORS_KEYS);
    if (any_end && !(e->has_ramp && e->ramp > 0.0))
        return scn_fail(p, "a *_rate_end needs 'ramp' (the seconds the rates take to reach it, above 0)");
    if (e->has_ramp && !any_end)
        return scn_fail(p, "'ramp' needs a *_rate_end to ramp to");
    bool excursion = e->kind == SCN_EV_POWER_EXCURSION;
    if ((e->has_over || e->has_length) && !excursion)
        return scn_fail(p, "'%s' only applies to kind = \"power_excursion\" events",
                        e->has_over ? "over" : "length");
    if (!excursion)
        return DCGM_ST_OK;
    if (!e->has_over || !(e->over > 1.0))
        return scn_fail(p, "kind = \"power_excursion\" needs 'over' above 1 (the draw, in power limits)");
    if (!e->has_length)
        return scn_fail(p, "kind = \"power_excursion\" needs 'length' (seconds each excursion lasts)");
    if (e->has_count && e->count > 1 && !(e->has_interval && e->interval > e->length))
        return scn_fail(p, "a power_excursion with count > 1 needs 'interval' longer than its length (%g s)",
                        e->length);
    return DCGM_ST_OK;
}

static int scn_check_event(scn_parser *p, const scn_event_table *e)
{
    p->line = e->line;
    if (!e->has_at)
        return scn_fail(p, "[[event]] needs 'at' (seconds after start)");
    if (e->gpu_count == 0)
        return scn_fail(p, "[[event]] needs 'gpu' (an index or an array of indexes)");
    if (e->kind == SCN_EV_NONE)
        return scn_fail(p, "[[event]] needs 'kind' (xid, lost, workload, errors or power_excursion)");
    for (int i = 0; i < e->gpu_count; i++) {
        if (e->gpus[i] >= p->gpu_total)
            return scn_fail(p, "gpu %lld does not exist (the scenario has %d GPUs, numbered 0-%d)",
                            (long long)e->gpus[i], p->gpu_total, p->gpu_total - 1);
    }
    if (e->kind == SCN_EV_XID && !e->has_xid)
        return scn_fail(p, "kind = \"xid\" needs 'xid' (the XID number, e.g. 79)");
    if (e->kind != SCN_EV_XID && e->kind != SCN_EV_POWER_EXCURSION && (e->has_count || e->has_interval))
        return scn_fail(p, "'count' and 'interval' only apply to kind = \"xid\" and \"power_excursion\" events");
    if (e->kind == SCN_EV_WORKLOAD && !e->wl.has_kind)
        return scn_fail(p, "kind = \"workload\" needs 'workload' (known: %s)", sim_workload_known_names());
    if (e->kind != SCN_EV_WORKLOAD && e->wl.has_kind)
        return scn_fail(p, "'workload' only applies to kind = \"workload\" events");
    int rc = scn_check_fault_keys(p, e);
    if (rc != DCGM_ST_OK)
        return rc;
    return scn_check_workload_keys(p, &e->wl, e->kind == SCN_EV_WORKLOAD);
}

/* The GPU table a GPU index falls in (the index must exist). */
static const scn_gpu_table *scn_table_of_gpu(const scn_parser *p, int64_t gpu)
{
    int64_t first = 0;
    for (int i = 0; i < p->gpu_tables; i++) {
        if (gpu < first + p->gpus[i].count)
            return &p->gpus[i];
        first += p->gpus[i].count;
    }
    return NULL;
}

static int scn_check_process(scn_parser *p, const scn_process_table *t)
{
    p->line = t->line;
    if (!t->has_gpu)
        return scn_fail(p, "[[process]] needs 'gpu' (the index of the GPU it runs on)");
    if (t->gpu >= p->gpu_total)
        return scn_fail(p, "gpu %lld does not exist (the scenario has %d GPUs, numbered 0-%d)",
                        (long long)t->gpu, p->gpu_total, p->gpu_total - 1);
    if (t->has_stop && t->stop <= t->start)
        return scn_fail(p, "stop (%g s) must come after start (%g s)", t->stop, t->start);
    if ((t->churn > 0.0) != t->has_lifetime)
        return scn_fail(p, "'churn' (processes started per second) and 'lifetime' (seconds each lives) "
                           "go together");
    if (t->churn * t->lifetime > SIM_PROCESS_MAX_ALIVE)
        return scn_fail(p, "churn %g/s with lifetime %g s keeps %.0f processes alive (at most %d)", t->churn,
                        t->lifetime, ceil(t->churn * t->lifetime), SIM_PROCESS_MAX_ALIVE);
    const scn_gpu_table *g = scn_table_of_gpu(p, t->gpu);
    int instances = g->mig_profile_count > 0 ? g->mig_profile_count : g->mig_instances;
    if (instances == 0 && (t->has_gi || t->has_ci))
        return scn_fail(p, "'gpu_instance' and 'compute_instance' need MIG on GPU %lld (mig_instances > 0)",
                        (long long)t->gpu);
    if (t->has_gi && t->gi >= instances)
        return scn_fail(p, "gpu_instance %lld does not exist (GPU %lld has %d, numbered 0-%d)", (long long)t->gi,
                        (long long)t->gpu, instances, instances - 1);
    if (t->has_ci && t->ci != 0)
        return scn_fail(p, "compute_instance %lld does not exist (each GPU instance has one, numbered 0)",
                        (long long)t->ci);
    return DCGM_ST_OK;
}

static int scn_check(scn_parser *p)
{
    if (p->gpu_tables == 0) {
        p->line = 1;
        return scn_fail(p, "no [[gpu]] table: a scenario needs at least one GPU");
    }
    p->gpu_total = 0;
    for (int i = 0; i < p->gpu_tables; i++) {
        const scn_gpu_table *g = &p->gpus[i];
        p->gpu_total += g->count;
        p->line = g->line;
        if (p->gpu_total > DCGM_MAX_NUM_DEVICES)
            return scn_fail(p, "too many GPUs: %d (at most %d)", p->gpu_total, DCGM_MAX_NUM_DEVICES);
        int rc = scn_check_gpu_table(p, g);
        if (rc == DCGM_ST_OK) {
            p->line = g->line;
            rc = scn_check_workload_keys(p, &g->wl, true);
        }
        if (rc != DCGM_ST_OK)
            return rc;
    }
    for (int i = 0; i < p->event_count; i++) {
        int rc = scn_check_event(p, &p->events[i]);
        if (rc != DCGM_ST_OK)
            return rc;
    }
    for (int i = 0; i < p->process_count; i++) {
        int rc = scn_check_process(p, &p->processes[i]);
        if (rc != DCGM_ST_OK)
            return rc;
    }
    return DCGM_ST_OK;
}

/* ---- building the node ----------------------------------------------------- */

/* The trace path as the scenario names it: relative paths start at the scenario's folder. */
static void scn_trace_path(const scn_parser *p, const char *name, char *out, size_t len)
{
    const char *slash = strrchr(p->file, '/');
    if (name[0] == '/' || slash == NULL)
        snprintf(out, len, "%s", name);
    else
        snprintf(out, len, "%.*s/%s", (int)(slash - p->file), p->file, name);
}

/* Reads a replay workload's trace into the node, which owns it from then on. */
static int scn_load_trace(scn_parser *p, const scn_workload_keys *wl, sim_node *node, const sim_trace **out)
{
    char path[4096];
    char why[512];
    scn_trace_path(p, wl->trace, path, sizeof path);
    sim_trace **grown = realloc(node->traces, (node->trace_count + 1) * sizeof *grown);
    if (grown == NULL)
        return DCGM_ST_MEMORY;
    node->traces = grown;
    sim_trace *trace = NULL;
    int rc = sim_trace_load(path, &trace, why, sizeof why);
    if (rc != DCGM_ST_OK) {
        p->line = wl->trace_line;
        scn_fail(p, "%s", why);
        return rc == DCGM_ST_MEMORY ? DCGM_ST_MEMORY : DCGM_ST_BADPARAM;
    }
    node->traces[node->trace_count++] = trace;
    *out = trace;
    return DCGM_ST_OK;
}

static void scn_make_workload(const scn_workload_keys *wl, sim_workload *out)
{
    sim_workload_defaults(wl->has_kind ? wl->kind : SIM_WL_TRAINING, out);
    double *fields[7] = {
        &out->utilization, &out->fb_used, &out->spike_period_s, &out->spike_length_s,
        &out->spike_utilization, &out->leak_rate_mib_s, &out->heat_rate_c_s,
    };
    for (int i = 0; i < 7; i++) {
        if (wl->has[i])
            *fields[i] = wl->val[i];
    }
    if (out->spike_length_s >= out->spike_period_s)
        out->spike_length_s = out->spike_period_s / 2;
    out->loop = wl->loop;
}

/* A workload from its keys, with its trace read when it replays one. */
static int scn_build_workload(scn_parser *p, const scn_workload_keys *wl, sim_node *node, sim_workload *out)
{
    scn_make_workload(wl, out);
    if (out->kind != SIM_WL_REPLAY)
        return DCGM_ST_OK;
    return scn_load_trace(p, wl, node, &out->trace);
}

static int scn_push_segment(sim_gpu *g, int64_t start_us, const sim_workload *w)
{
    if (g->segment_count > 0 && g->segments[g->segment_count - 1].start_us == start_us) {
        g->segments[g->segment_count - 1].workload = *w;
        return DCGM_ST_OK;
    }
    sim_segment *grown = realloc(g->segments, (g->segment_count + 1) * sizeof *grown);
    if (grown == NULL)
        return DCGM_ST_MEMORY;
    g->segments = grown;
    g->segments[g->segment_count++] = (sim_segment){.start_us = start_us, .workload = *w};
    return DCGM_ST_OK;
}

static int scn_push_xid(sim_gpu *g, int64_t t_us, int64_t xid)
{
    sim_event *grown = realloc(g->xids, (g->xid_count + 1) * sizeof *grown);
    if (grown == NULL)
        return DCGM_ST_MEMORY;
    g->xids = grown;
    g->xids[g->xid_count++] = (sim_event){.t_rel_us = t_us, .value = xid};
    return DCGM_ST_OK;
}

static int scn_add_gpus(scn_parser *p, sim_node *node)
{
    unsigned int n = 0;
    for (int i = 0; i < p->gpu_tables; i++) {
        const scn_gpu_table *t = &p->gpus[i];
        sim_workload w;
        int rc = scn_build_workload(p, &t->wl, node, &w);
        if (rc != DCGM_ST_OK)
            return rc;
        for (int c = 0; c < t->count; c++, n++) {
            sim_gpu *g = &node->gpus[n];
            g->model = t->model;
            g->mig_instances = (unsigned int)t->mig_instances;
            if (t->mig_profile_count > 0)
                g->mig_instances = (unsigned int)t->mig_profile_count;
            for (int i = 0; i < t->mig_profile_count; i++)
                g->mig_profiles[i] = sim_mig_profile_find(t->model->key, t->mig_profiles[i]);
            g->power_limit_w = t->has_power_limit ? t->power_limit : t->model->power_default_w;
            g->lost_at_us = -1;
            memcpy(g->uuid, t->uuid, sizeof g->uuid);       /* both sized alike; empty: seeded at load */
            memcpy(g->bus_id, t->bus_id, sizeof g->bus_id);
            if (scn_push_segment(g, 0, &w) != DCGM_ST_OK)
                return DCGM_ST_MEMORY;
        }
    }
    node->gpu_count = n;
    /* models that change with their neighbours (an H200 on an HGX board) */
    for (unsigned int i = 0; i < n; i++) {
        unsigned int same = 0;
        for (unsigned int j = 0; j < n; j++)
            same += strcmp(node->gpus[j].model->key, node->gpus[i].model->key) == 0;
        node->gpus[i].model = sim_model_on_board(node->gpus[i].model, same);
    }
    return DCGM_ST_OK;
}

/* An `errors` event: its rates replace the GPU's earlier ones from its time on (remap_rate is per minute). */
static int scn_push_error_rates(const scn_event_table *e, sim_gpu *g, int64_t at_us)
{
    sim_error_rates r = {.start_us = at_us, .ramp_us = e->has_ramp ? llround(e->ramp * 1e6) : 0};
    for (int k = 0; k < SIM_ERR_KIND_COUNT; k++) {
        double per = k == SIM_ERR_REMAP ? 1.0 / 60.0 : 1.0;
        r.from[k] = (e->has_rate[k] ? e->rate[k] : 0.0) * per;
        r.to[k] = e->has_rate_end[k] ? e->rate_end[k] * per : r.from[k];
    }
    /* events come in time order (ties in file order): one at the same time as the last replaces it */
    if (g->error_rate_count > 0 && g->error_rates[g->error_rate_count - 1].start_us == at_us) {
        g->error_rates[g->error_rate_count - 1] = r;
        return DCGM_ST_OK;
    }
    sim_error_rates *grown = realloc(g->error_rates, (g->error_rate_count + 1) * sizeof *grown);
    if (grown == NULL)
        return DCGM_ST_MEMORY;
    g->error_rates = grown;
    g->error_rates[g->error_rate_count++] = r;
    return DCGM_ST_OK;
}

static int scn_push_excursions(const scn_event_table *e, sim_gpu *g)
{
    int64_t count = e->has_count ? e->count : 1;
    sim_excursion *grown = realloc(g->excursions, (g->excursion_count + (size_t)count) * sizeof *grown);
    if (grown == NULL)
        return DCGM_ST_MEMORY;
    g->excursions = grown;
    for (int64_t i = 0; i < count; i++) {
        double start = e->at + (e->has_interval ? e->interval : 0.0) * (double)i;
        g->excursions[g->excursion_count++] = (sim_excursion){
            .start_us = llround(start * 1e6), .end_us = llround((start + e->length) * 1e6), .over = e->over,
        };
    }
    return DCGM_ST_OK;
}

/* One event on one GPU; a workload event's workload (w) is built once for all its GPUs. */
static int scn_apply_event(const scn_event_table *e, const sim_workload *w, sim_gpu *g)
{
    int64_t at_us = llround(e->at * 1e6);
    if (e->kind == SCN_EV_WORKLOAD)
        return scn_push_segment(g, at_us, w);
    if (e->kind == SCN_EV_ERRORS)
        return scn_push_error_rates(e, g, at_us);
    if (e->kind == SCN_EV_POWER_EXCURSION)
        return scn_push_excursions(e, g);
    if (e->kind == SCN_EV_LOST) {
        if (g->lost_at_us < 0 || at_us < g->lost_at_us)
            g->lost_at_us = at_us;
        int64_t xid = e->has_xid ? e->xid : 79;
        return xid > 0 ? scn_push_xid(g, at_us, xid) : DCGM_ST_OK;
    }
    int64_t count = e->has_count ? e->count : 1;
    double interval = e->has_interval ? e->interval : 0.1;
    for (int64_t i = 0; i < count; i++) {
        int rc = scn_push_xid(g, llround((e->at + interval * (double)i) * 1e6), e->xid);
        if (rc != DCGM_ST_OK)
            return rc;
    }
    return DCGM_ST_OK;
}

static int scn_compare_events(const void *a, const void *b)
{
    const scn_event_table *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->line - y->line;   /* file order breaks ties, so qsort stays deterministic */
}

static int scn_compare_excursions(const void *a, const void *b)
{
    const sim_excursion *x = a, *y = b;
    if (x->start_us != y->start_us)
        return x->start_us < y->start_us ? -1 : 1;
    return 0;
}

static int scn_compare_xids(const void *a, const void *b)
{
    const sim_event *x = a, *y = b;
    if (x->t_rel_us != y->t_rel_us)
        return x->t_rel_us < y->t_rel_us ? -1 : 1;
    return 0;
}

/* XIDs after a GPU fell off the bus never reach anyone. */
static void scn_finish_gpu(sim_gpu *g)
{
    if (g->xid_count > 1) {
        /* equal times keep burst order: each burst pushes ascending, ties are identical XIDs or
         * from different events, which the event sort already ordered by line */
        for (size_t i = 1; i < g->xid_count; i++) {
            sim_event key = g->xids[i];
            size_t j = i;
            while (j > 0 && scn_compare_xids(&g->xids[j - 1], &key) > 0) {
                g->xids[j] = g->xids[j - 1];
                j--;
            }
            g->xids[j] = key;
        }
    }
    if (g->lost_at_us >= 0) {
        while (g->xid_count > 0 && g->xids[g->xid_count - 1].t_rel_us > g->lost_at_us)
            g->xid_count--;
    }
    /* repeated excursions of several events interleave: in time order, one that starts during
     * another ends that one (equal starts: the later line's, which the stable insertion keeps last) */
    if (g->excursion_count > 1) {
        for (size_t i = 1; i < g->excursion_count; i++) {
            sim_excursion key = g->excursions[i];
            size_t j = i;
            while (j > 0 && scn_compare_excursions(&g->excursions[j - 1], &key) > 0) {
                g->excursions[j] = g->excursions[j - 1];
                j--;
            }
            g->excursions[j] = key;
        }
        size_t kept = 0;
        for (size_t i = 0; i < g->excursion_count; i++) {
            if (kept > 0 && g->excursions[kept - 1].start_us == g->excursions[i].start_us)
                kept--;
            g->excursions[kept++] = g->excursions[i];
            if (kept > 1 && g->excursions[kept - 2].end_us > g->excursions[kept - 1].start_us)
                g->excursions[kept - 2].end_us = g->excursions[kept - 1].start_us;
        }
        g->excursion_count = kept;
    }
}

/* A table without 'pid' gets one above any real pid (SIM_PROCESS_PID_BASE), a churn's range its own. */
static int scn_add_processes(const scn_parser *p, sim_node *node)
{
    for (int i = 0; i < p->process_count; i++) {
        const scn_process_table *t = &p->processes[i];
        sim_gpu *g = &node->gpus[t->gpu];
        sim_process *grown = realloc(g->processes, (g->process_count + 1) * sizeof *grown);
        if (grown == NULL)
            return DCGM_ST_MEMORY;
        g->processes = grown;
        bool mig = g->mig_instances > 0;
        g->processes[g->process_count++] = (sim_process){
            .pid = t->has_pid ? (unsigned int)t->pid
                              : SIM_PROCESS_PID_BASE + SIM_PROCESS_CHURN_PIDS * (unsigned int)(i + 1),
            .graphics = t->graphics,
            .start_us = llround(t->start * 1e6),
            .stop_us = t->has_stop ? llround(t->stop * 1e6) : -1,
            .fb_bytes = t->fb_bytes, .fb_growth_bytes_s = t->fb_growth,
            .sm_share = t->sm_share, .mem_share = t->mem_share,
            .gpu_instance = mig ? (unsigned int)t->gi : SIM_NO_MIG_ID,
            .compute_instance = mig ? (unsigned int)t->ci : SIM_NO_MIG_ID,
            .churn_per_s = t->churn, .lifetime_us = llround(t->lifetime * 1e6),
        };
    }
    return DCGM_ST_OK;
}

static int scn_build(scn_parser *p, sim_node *node)
{
    node->seed = p->has_seed ? p->seed : SIM_DEFAULT_SEED;
    if (p->cpu_cores == 0)
        p->cpu_cores = SCN_GRACE_CORES;
    if (p->cpus * p->cpu_cores > DCGM_MAX_NUM_CPU_CORES) {
        p->line = p->cpus_line;
        return scn_fail(p, "grace_cpus = %lld with cpu_cores = %lld makes %lld cores (at most %d)",
                        (long long)p->cpus, (long long)p->cpu_cores, (long long)(p->cpus * p->cpu_cores),
                        DCGM_MAX_NUM_CPU_CORES);
    }
    node->nvswitches = (unsigned int)p->nvswitches;
    node->cpus = (unsigned int)p->cpus;
    node->cpu_cores = (unsigned int)p->cpu_cores;
    int rc = scn_add_gpus(p, node);
    if (rc != DCGM_ST_OK)
        return rc;
    if (p->event_count > 0)
        qsort(p->events, (size_t)p->event_count, sizeof *p->events, scn_compare_events);
    for (int i = 0; i < p->event_count; i++) {
        const scn_event_table *e = &p->events[i];
        sim_workload w = {0};
        if (e->kind == SCN_EV_WORKLOAD && (rc = scn_build_workload(p, &e->wl, node, &w)) != DCGM_ST_OK)
            return rc;
        for (int k = 0; k < e->gpu_count; k++) {
            rc = scn_apply_event(e, &w, &node->gpus[e->gpus[k]]);
            if (rc != DCGM_ST_OK)
                return rc;
        }
    }
    for (unsigned int i = 0; i < node->gpu_count; i++)
        scn_finish_gpu(&node->gpus[i]);
    return scn_add_processes(p, node);
}

/* ---- specs ---------------------------------------------------------------- */

static int scn_uniform_node(sim_node *node, unsigned int count)
{
    sim_workload w;
    sim_workload_defaults(SIM_WL_TRAINING, &w);
    node->seed = SIM_DEFAULT_SEED;
    node->gpu_count = count;
    for (unsigned int i = 0; i < count; i++) {
        sim_gpu *g = &node->gpus[i];
        g->model = sim_model_default();
        g->power_limit_w = g->model->power_default_w;
        g->lost_at_us = -1;
        if (scn_push_segment(g, 0, &w) != DCGM_ST_OK)
            return DCGM_ST_MEMORY;
    }
    return DCGM_ST_OK;
}

static bool scn_all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return false;
    }
    return true;
}

static int scn_count_spec(const char *spec, sim_node *node, char *err, size_t errlen)
{
    size_t len = strlen(spec);
    long count = len > 3 ? 0 : strtol(spec, NULL, 10);
    if (count < 1 || count > DCGM_MAX_NUM_DEVICES) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "simulated node spec \"%.16s\": GPU count must be 1 to %d",
                     spec, DCGM_MAX_NUM_DEVICES);
        return DCGM_ST_BADPARAM;
    }
    return scn_uniform_node(node, (unsigned int)count);
}

static int scn_file_spec(const char *path, sim_node *node, char *err, size_t errlen)
{
    const char *why = NULL;
    FILE *f = sim_open_regular(path, &why);
    if (f == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: cannot open scenario: %s", path, why);
        return DCGM_ST_FILE_IO_ERROR;
    }
    scn_parser *p = calloc(1, sizeof *p);
    if (p == NULL) {
        fclose(f);
        return DCGM_ST_MEMORY;
    }
    p->file = path;
    p->err = err;
    p->errlen = errlen;
    int rc = scn_read_file(p, f);
    fclose(f);
    if (rc == DCGM_ST_OK)
        rc = scn_check(p);
    if (rc == DCGM_ST_OK)
        rc = scn_build(p, node);
    if (rc == DCGM_ST_MEMORY && err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: out of memory building the node", path);
    free(p->events);
    free(p->processes);
    free(p);
    return rc;
}

int sim_scenario_load(const char *spec, sim_node *node, char *err, size_t errlen)
{
    if (node == NULL)
        return DCGM_ST_BADPARAM;
    if (spec == NULL || spec[0] == '\0')
        return scn_uniform_node(node, 8);
    if (scn_all_digits(spec))
        return scn_count_spec(spec, node, err, errlen);
    return scn_file_spec(spec, node, err, errlen);
}
