/*
 * recording_format.h -- the flight recording's format, declared once: the
 * Parquet file and its sidecar, and what a replay of one hands the node.
 *
 * A flight recording is a Parquet file with one row per sample, in the
 * columns below, and a JSON sidecar (the file's name plus
 * RECORDING_SIDECAR_SUFFIX) whose "format_version" is
 * RECORDING_FORMAT_VERSION.  dcgm_collector/push/ writes both (the
 * recorder, recording_file.py); dcgm_collector/engine/recording*.py read
 * them and turn them into a scenario for this folder's node: per GPU a trace
 * CSV that replay.c reads (column RECORDING_TRACE_TIME_COLUMN the time in
 * seconds, every other column a DCGM field id) and [[event]] tables that
 * scenario.c reads, within the limits below.
 *
 * The node's C sources use these macros.  The Python side names the same
 * facts (dcgm_collector.model's RECORDING_* and the readers' limits), and
 * tests/unit/test_recording_format.py fails when one of them drifts from
 * this file.  That test parses the definitions below: keep their plain form.
 */
#ifndef DCGM_SIM_RECORDING_FORMAT_H
#define DCGM_SIM_RECORDING_FORMAT_H

#include "../dcgm_field_ids.h"

/* ---- the recording ------------------------------------------------------- */

#define RECORDING_FORMAT_VERSION 1
#define RECORDING_SIDECAR_SUFFIX ".json"

/* The Parquet columns, in order: X(name, Arrow type). */
#define RECORDING_COLUMNS(X)                                                         \
    X(time, "timestamp[us, tz=UTC]")   /* DCGM's timestamp of the sample */          \
    X(entity_group, "string")          /* EntityType name: "GPU", "GPU_I", ... */    \
    X(entity_id, "int64")              /* DCGM's entity id */                        \
    X(gpu, "int64")                    /* the GPU it is or belongs to (null: none) */ \
    X(field_id, "int32")               /* DCGM field id */                           \
    X(field_name, "string")            /* DCGM's name of the field */                \
    X(metric, "string")                /* the /metrics name of its series */         \
    X(value, "double")                 /* null unless status is "OK" */              \
    X(status, "string")                /* one of RECORDING_STATUSES */

/* The status column's words, in order (a reader codes each by its index). */
#define RECORDING_STATUSES(X) X(OK) X(BLANK) X(NOT_SUPPORTED)

/* ---- its replay: what the node takes ------------------------------------- */

/* The trace CSV's time column (seconds; the replay starts at its first row). */
#define RECORDING_TRACE_TIME_COLUMN "t"
/* Columns of one trace, the time's included: a recording of every GPU field fits. */
#define RECORDING_TRACE_MAX_COLUMNS 1024
#define RECORDING_TRACE_MAX_ROWS 10000000
/* The longest replay: its last row (and any event) at most this long after its first. */
#define RECORDING_MAX_SPAN_DAYS 400
/* A scenario's [[event]] tables, one XID raised at once (count), the largest XID. */
#define RECORDING_MAX_EVENTS 4096
#define RECORDING_MAX_BURST 10000
#define RECORDING_MAX_XID 100000
/* The field no trace sets: the node integrates the replayed power into the
 * energy counter itself, so a looping replay never runs it backwards. */
#define RECORDING_NODE_OWN_FIELD DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION

#endif /* DCGM_SIM_RECORDING_FORMAT_H */
