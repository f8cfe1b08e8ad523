/*
 * replay.c -- a recorded trace as a workload: the values a real GPU showed,
 * played back on their timestamps.
 *
 * A trace is a CSV file with a header row.  Column `t` is the time in
 * seconds (any origin; the replay starts at the first row).  Every other
 * column names what it holds, either as the H200 recorder's trace does
 * (dcgm_collector/engine/scenarios/traces/h200-2026-11-30.csv: util_gpu,
 * power_mw, NVML_FI_DEV_MEMORY_TEMP, gpm_sm_util, ...; converted to DCGM's
 * units) or as a DCGM field (its numeric id or its tag, e.g.
 * `155` or `power_usage`; in DCGM's units).  Columns it cannot place are
 * skipped.  An empty cell keeps the column's previous value.  The node
 * derives every field the trace lacks from the replayed utilisation and
 * power, through the GPU's model.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node_internal.h"
#include "recording_format.h"

#define TRACE_LINE_MAX 65536
#define TRACE_MAX_COLUMNS RECORDING_TRACE_MAX_COLUMNS
#define TRACE_MAX_ROWS RECORDING_TRACE_MAX_ROWS
#define TRACE_MAX_SPAN_US (RECORDING_MAX_SPAN_DAYS * 24.0 * 3600 * 1e6)

struct sim_trace {
    size_t rows, columns;
    unsigned short *field;      /* per column */
    int64_t *t_us;              /* per row, after the first row */
    double *values;             /* rows x columns, carried forward; NaN before a column's first value */
    int64_t period_us;          /* a loop's length: the span plus one last row interval */
};

/* Names the H200 recorder (reference/hardware/h200-2026-11-30/) gives its columns. */
static const struct trace_column_name {
    const char *name;
    unsigned short field;
    double scale;               /* trace unit -> DCGM unit */
} trace_recorder_columns[] = {
    {"util_gpu", 203, 1.0},
    {"util_mem", 204, 1.0},
    {"power_mw", 155, 1e-3},
    {"temp", 150, 1.0},
    {"sm_clock", 100, 1.0},
    {"mem_clock", 101, 1.0},
    {"fb_used", 252, 1.0},
    {"fb_free", 251, 1.0},
    {"event_reasons", 112, 1.0},
    {"pstate", 190, 1.0},
    {"pcie_tx_kbs", 200, 1.0},
    {"pcie_rx_kbs", 201, 1.0},
    {"NVML_FI_DEV_MEMORY_TEMP", 140, 1.0},
    {"NVML_FI_DEV_POWER_INSTANT", 157, 1e-3},
    {"NVML_FI_DEV_PCIE_REPLAY_COUNTER", 202, 1.0},
    {"NVML_FI_DEV_ECC_SBE_VOL_TOTAL", 310, 1.0},
    {"NVML_FI_DEV_ECC_DBE_VOL_TOTAL", 311, 1.0},
    {"gpm_graphics_util", 1001, 0.01},
    {"gpm_sm_util", 1002, 0.01},
    {"gpm_sm_occupancy", 1003, 0.01},
    {"gpm_any_tensor_util", 1004, 0.01},
    {"gpm_dram_bw_util", 1005, 0.01},
    {"gpm_fp64_util", 1006, 0.01},
    {"gpm_fp32_util", 1007, 0.01},
    {"gpm_fp16_util", 1008, 0.01},
};

/*
 * Recorder columns that are deliberately not replayed: the energy counters
 * (the node integrates the replayed power, so a loop never runs the counter
 * backwards), the power average (power_mw is the same reading) and figures
 * no DCGM field holds.
 */
static const char *const trace_skipped_columns[] = {
    "energy_mj", "fb_total", "NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "NVML_FI_DEV_POWER_AVERAGE",
    "NVML_FI_DEV_PCIE_COUNT_TX_BYTES", "NVML_FI_DEV_PCIE_COUNT_RX_BYTES",
    "NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP", "NVML_FI_DEV_PERF_POLICY_THERMAL",
    "gpm_hmma_tensor_util", "gpm_pcie_tx_per_sec", "gpm_pcie_rx_per_sec", "procs", "proc_mem_mib",
};

static int trace_fail(char *err, size_t errlen, const char *path, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int trace_fail(char *err, size_t errlen, const char *path, size_t line, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        char msg[384];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (line > 0)
            snprintf(err, errlen, "%s:%zu: %s", path, line, msg);
        else
            snprintf(err, errlen, "%s: %s", path, msg);
    }
    return DCGM_ST_BADPARAM;
}

/* Cuts the next comma-separated cell off *cursor, trimmed of blanks and one pair of quotes. */
static char *trace_next_cell(char **cursor)
{
    char *cell = *cursor;
    if (cell == NULL)
        return NULL;
    char *comma = strchr(cell, ',');
    if (comma != NULL) {
        *comma = '\0';
        *cursor = comma + 1;
    } else {
        *cursor = NULL;
    }
    while (isspace((unsigned char)*cell))
        cell++;
    size_t len = strlen(cell);
    while (len > 0 && isspace((unsigned char)cell[len - 1]))
        cell[--len] = '\0';
    if (len >= 2 && cell[0] == '"' && cell[len - 1] == '"') {
        cell[len - 1] = '\0';
        cell++;
    }
    return cell;
}

/* The DCGM field a column holds and the factor to DCGM's unit; 0 when it holds none. */
static unsigned short trace_column_field(const char *name, double *scale)
{
    *scale = 1.0;
    for (size_t i = 0; i < sizeof trace_recorder_columns / sizeof trace_recorder_columns[0]; i++) {
        if (strcmp(name, trace_recorder_columns[i].name) == 0) {
            *scale = trace_recorder_columns[i].scale;
            return trace_recorder_columns[i].field;
        }
    }
    for (size_t i = 0; i < sizeof trace_skipped_columns / sizeof trace_skipped_columns[0]; i++) {
        if (strcmp(name, trace_skipped_columns[i]) == 0)
            return 0;
    }
    const dcgm_field_meta_t *meta = NULL;
    char *end = NULL;
    unsigned long id = strtoul(name, &end, 10);
    if (name[0] != '\0' && *end == '\0' && id > 0 && id < 65536)
        meta = sim_field_meta((unsigned short)id);
    else
        meta = sim_field_meta_by_tag(name);
    if (meta == NULL || (meta->fieldType != DCGM_FT_INT64 && meta->fieldType != DCGM_FT_DOUBLE))
        return 0;
    /* the GPU's identity and everything the node keeps itself stay the model's */
    if (meta->fieldId == RECORDING_NODE_OWN_FIELD)
        return 0;
    return meta->fieldId;
}

static bool trace_read_line(FILE *f, char *buf, size_t len, bool *too_long)
{
    *too_long = false;
    if (fgets(buf, (int)len, f) == NULL)
        return false;
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] != '\n' && !feof(f))
        *too_long = true;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    return true;
}

typedef struct trace_builder {
    sim_trace *trace;
    int t_column;               /* index of `t` among the file's columns */
    int file_columns;
    int kept_of[TRACE_MAX_COLUMNS]; /* file column -> trace column, or -1 */
    double scale[TRACE_MAX_COLUMNS];
    bool is_int[TRACE_MAX_COLUMNS];   /* an int64 field: its values must fit one */
    char name[TRACE_MAX_COLUMNS][48]; /* of the columns read, for errors */
    size_t cap;
    double first_t_s;
} trace_builder;

static int trace_header(trace_builder *b, char *line, const char *path, char *err, size_t errlen)
{
    sim_trace *tr = b->trace;
    b->t_column = -1;
    char *cursor = line;
    char *cell;
    while ((cell = trace_next_cell(&cursor)) != NULL) {
        if (b->file_columns == TRACE_MAX_COLUMNS)
            return trace_fail(err, errlen, path, 1, "more than %d columns", TRACE_MAX_COLUMNS);
        int index = b->file_columns++;
        b->kept_of[index] = -1;
        snprintf(b->name[index], sizeof b->name[index], "%s", cell);
        if (strcmp(cell, RECORDING_TRACE_TIME_COLUMN) == 0) {
            if (b->t_column >= 0)
                return trace_fail(err, errlen, path, 1, "column '" RECORDING_TRACE_TIME_COLUMN "' appears twice");
            b->t_column = index;
            continue;
        }
        double scale;
        unsigned short field = trace_column_field(cell, &scale);
        bool taken = false;
        for (size_t k = 0; k < tr->columns; k++)
            taken = taken || tr->field[k] == field;
        if (field == 0 || taken)
            continue;   /* a column this replay cannot place, or a second one for the same field */
        b->kept_of[index] = (int)tr->columns;
        b->scale[index] = scale;
        b->is_int[index] = sim_field_meta(field)->fieldType == DCGM_FT_INT64;
        tr->field[tr->columns++] = field;
    }
    if (b->t_column < 0)
        return trace_fail(err, errlen, path, 1, "no column 't' (the time of each row, in seconds)");
    if (tr->columns == 0)
        return trace_fail(err, errlen, path, 1,
                          "no column this replay can use (for example util_gpu, power_mw, temp, "
                          "sm_clock, or a DCGM field id or tag such as 155 or power_usage)");
    return DCGM_ST_OK;
}

static int trace_grow(trace_builder *b)
{
    sim_trace *tr = b->trace;
    size_t cap = b->cap ? b->cap * 2 : 1024;
    int64_t *t = realloc(tr->t_us, cap * sizeof *t);
    if (t == NULL)
        return DCGM_ST_MEMORY;
    tr->t_us = t;
    double *v = realloc(tr->values, cap * tr->columns * sizeof *v);
    if (v == NULL)
        return DCGM_ST_MEMORY;
    tr->values = v;
    b->cap = cap;
    return DCGM_ST_OK;
}

static int trace_row(trace_builder *b, char *line, size_t line_no, const char *path, char *err, size_t errlen)
{
    sim_trace *tr = b->trace;
    if (tr->rows == TRACE_MAX_ROWS)
        return trace_fail(err, errlen, path, line_no, "more than %d rows", TRACE_MAX_ROWS);
    if (tr->rows == b->cap && trace_grow(b) != DCGM_ST_OK)
        return DCGM_ST_MEMORY;
    double *row = &tr->values[tr->rows * tr->columns];
    /* empty cells keep the column's last value */
    for (size_t k = 0; k < tr->columns; k++)
        row[k] = tr->rows > 0 ? tr->values[(tr->rows - 1) * tr->columns + k] : NAN;
    char *cursor = line;
    char *cell;
    int index = 0;
    bool has_t = false;
    double t_s = 0.0;
    for (; (cell = trace_next_cell(&cursor)) != NULL; index++) {
        if (index >= b->file_columns)
            return trace_fail(err, errlen, path, line_no, "more cells than the header's %d columns",
                              b->file_columns);
        if (index != b->t_column && b->kept_of[index] < 0)
            continue;
        /* an empty cell, or a recorder's "nan", is no reading: the last one holds */
        if (cell[0] == '\0' || (index != b->t_column && strcasecmp(cell, "nan") == 0))
            continue;
        char *end = NULL;
        errno = 0;
        double v = strtod(cell, &end);
        if (*end != '\0' || errno != 0 || !isfinite(v))
            return trace_fail(err, errlen, path, line_no, "column %d (%s): '%.40s' is not a number", index + 1,
                              b->name[index], cell);
        if (index == b->t_column) {
            has_t = true;
            t_s = v;
            continue;
        }
        v *= b->scale[index];
        /* the node reads an int64 field's value as one: beyond int64 there is no such reading */
        if (b->is_int[index] && !(v >= -0x1p63 && v < 0x1p63))
            return trace_fail(err, errlen, path, line_no, "column %d (%s): %g does not fit an int64 field",
                              index + 1, b->name[index], v);
        row[b->kept_of[index]] = v;
    }
    if (!has_t)
        return trace_fail(err, errlen, path, line_no, "no time in column '" RECORDING_TRACE_TIME_COLUMN "'");
    if (tr->rows == 0)
        b->first_t_s = t_s;
    /* bounded as a double first: llround of a time beyond int64 has no specified answer */
    double dt_us = (t_s - b->first_t_s) * 1e6;
    if (dt_us > TRACE_MAX_SPAN_US)
        return trace_fail(err, errlen, path, line_no, "t = %g is more than %d days after the first row", t_s,
                          RECORDING_MAX_SPAN_DAYS);
    int64_t t_us = dt_us < 0 ? -1 : llround(dt_us);
    if (tr->rows > 0 && t_us < tr->t_us[tr->rows - 1])
        return trace_fail(err, errlen, path, line_no, "t = %g goes back in time (rows must be in time order)", t_s);
    tr->t_us[tr->rows++] = t_us;
    return DCGM_ST_OK;
}

FILE *sim_open_regular(const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    struct stat st;
    int flags = fcntl(fd, F_GETFL);
    FILE *f = NULL;
    /* checked on the descriptor, so the file read is the file checked */
    if (fstat(fd, &st) != 0)
        *why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        *why = S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO)" : "not a regular file";
    else if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || (f = fdopen(fd, "r")) == NULL)
        *why = strerror(errno);
    if (f == NULL)
        close(fd);
    return f;
}

int sim_trace_load(const char *path, sim_trace **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *why = NULL;
    FILE *f = sim_open_regular(path, &why);
    if (f == NULL) {
        trace_fail(err, errlen, path, 0, "cannot open trace: %s", why);
        return DCGM_ST_FILE_IO_ERROR;
    }
    char *line = malloc(TRACE_LINE_MAX);
    trace_builder *b = calloc(1, sizeof *b);
    sim_trace *tr = calloc(1, sizeof *tr);
    unsigned short *fields = calloc(TRACE_MAX_COLUMNS, sizeof *fields);
    int rc = DCGM_ST_OK;
    if (line == NULL || b == NULL || tr == NULL || fields == NULL) {
        rc = DCGM_ST_MEMORY;
        goto done;
    }
    tr->field = fields;
    fields = NULL;
    b->trace = tr;
    bool too_long;
    size_t line_no = 1;
    if (!trace_read_line(f, line, TRACE_LINE_MAX, &too_long)) {
        rc = trace_fail(err, errlen, path, 0, "empty file: a trace needs a header row and at least one row");
        goto done;
    }
    if (too_long) {
        rc = trace_fail(err, errlen, path, 1, "line longer than %d characters", TRACE_LINE_MAX - 2);
        goto done;
    }
    if ((rc = trace_header(b, line, path, err, errlen)) != DCGM_ST_OK)
        goto done;
    while (trace_read_line(f, line, TRACE_LINE_MAX, &too_long)) {
        line_no++;
        if (too_long) {
            rc = trace_fail(err, errlen, path, line_no, "line longer than %d characters", TRACE_LINE_MAX - 2);
            goto done;
        }
        if (line[strspn(line, " \t")] == '\0')
            continue;
        if ((rc = trace_row(b, line, line_no, path, err, errlen)) != DCGM_ST_OK)
            goto done;
    }
    if (ferror(f)) {
        rc = trace_fail(err, errlen, path, line_no, "read error");
        goto done;
    }
    if (tr->rows == 0) {
        rc = trace_fail(err, errlen, path, line_no, "no rows after the header");
        goto done;
    }
    int64_t last_gap = tr->rows > 1 ? tr->t_us[tr->rows - 1] - tr->t_us[tr->rows - 2] : 0;
    tr->period_us = tr->t_us[tr->rows - 1] + (last_gap > 0 ? last_gap : 100000);
done:
    if (rc == DCGM_ST_MEMORY && err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: out of memory reading the trace", path);
    fclose(f);
    free(line);
    free(b);
    free(fields);
    if (rc != DCGM_ST_OK)
        sim_trace_free(tr);
    else
        *out = tr;
    return rc;
}

void sim_trace_free(sim_trace *trace)
{
    if (trace == NULL)
        return;
    free(trace->field);
    free(trace->t_us);
    free(trace->values);
    free(trace);
}

bool sim_trace_has(const sim_trace *trace, unsigned short fieldId)
{
    for (size_t k = 0; trace != NULL && k < trace->columns; k++) {
        if (trace->field[k] == fieldId)
            return true;
    }
    return false;
}

bool sim_trace_value(const sim_trace *trace, unsigned short fieldId, int64_t t_us, bool loop, double *out)
{
    if (trace == NULL || t_us < 0)
        return false;
    size_t column = 0;
    while (column < trace->columns && trace->field[column] != fieldId)
        column++;
    if (column == trace->columns)
        return false;
    if (loop)
        t_us %= trace->period_us;
    /* the last row at or before t: its value holds until the next row */
    size_t lo = 0, hi = trace->rows;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (trace->t_us[mid] <= t_us)
            lo = mid;
        else
            hi = mid;
    }
    double v = trace->values[lo * trace->columns + column];
    if (isnan(v))
        return false;
    *out = v;
    return true;
}
