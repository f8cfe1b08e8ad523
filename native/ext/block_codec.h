/*
 * block_codec.h -- a lossless, compact encoding of one block of ring rows.
 *
 * A block is n_rows rows of one timestamp and n_series cells (a float64 value
 * and an int8 status each, ring.h's DCGMC_SAMPLE_*).  Only the values of OK
 * cells are stored, bit for bit; every other cell decodes as NaN with its
 * status.  The bytes are a format byte, a timestamp section, then one section
 * per series, each with its byte length first, so that a reader reaches any
 * series without decoding the ones before it.  All multi-byte fields are
 * written byte by byte, so the bytes mean the same on every host.
 *
 * Pure functions: no globals, no threads, no allocation.  Decoding checks
 * every length against the bytes it is given, because a reader may decode a
 * block a writer was overwriting and only learn so afterwards.
 */
#ifndef DCGM_COLLECTOR_BLOCK_CODEC_H
#define DCGM_COLLECTOR_BLOCK_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* What a reader needs to answer range queries without decoding the block. */
typedef struct block_summary {   /* over the OK cells of one series in one block */
    double min, max, sum;        /* NaN, NaN, 0 when count == 0 */
    int64_t count;
} block_summary;

/* An upper bound on block_encode's output for a block of that shape, whatever
 * the values; 0 for a shape the codec refuses (n_rows < 1, n_series < 0, or
 * either beyond 2^24). */
size_t block_encode_bound(int64_t n_rows, int64_t n_series);

/* Encode rows [0, n_rows): ts[n_rows], values and status row-major [n_rows * n_series].
 * Writes at most out_cap bytes to out; fills summaries[n_series] (may be NULL).
 * Returns the bytes written, or -1 (bad arguments or out_cap too small). n_rows >= 1.
 * A status outside DCGMC_SAMPLE_OK..DCGMC_SAMPLE_ABSENT is a bad argument.  The
 * summary's min and max skip OK cells that hold NaN (they are NaN only when every
 * OK cell does); its sum adds the OK values left to right in row order. */
int64_t block_encode(const int64_t *ts, const double *values, const int8_t *status,
                     int64_t n_rows, int64_t n_series, uint8_t *out, size_t out_cap,
                     block_summary *summaries);

/* Decode rows [from, to) of a block encoded with that shape into ts_out[to - from],
 * values_out and status_out [(to - from) * n_series], row-major.  Returns 0, or -1 when
 * the bytes are malformed or truncated: it never reads outside in[0, len) nor writes
 * outside the outputs, whatever the bytes hold (the outputs may then hold anything).
 * Bytes after the block's last section are ignored, so len may be a slot's size. */
int block_decode(const uint8_t *in, size_t len, int64_t n_rows, int64_t n_series,
                 int64_t from, int64_t to, int64_t *ts_out, double *values_out,
                 int8_t *status_out);

/* Only the timestamps of rows [from, to): readers search a block by time first,
 * and this stops before the series sections.  Same return. */
int block_decode_ts(const uint8_t *in, size_t len, int64_t n_rows, int64_t from, int64_t to,
                    int64_t *ts_out);

#endif /* DCGM_COLLECTOR_BLOCK_CODEC_H */
