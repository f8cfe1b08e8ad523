/*
 * block_codec.c -- see block_codec.h for the contract.
 *
 * Layout (varint: LEB128, 7 bits a byte, low first; zz: zigzag, so that small
 * negative numbers stay short):
 *   format byte (BLOCK_FORMAT)
 *   varint length, ts section:
 *     mode byte, varint zz(ts[0]), [varint zz(ts[1] - ts[0])], then for rows
 *     2..: the delta-of-deltas as zz varints (TS_VARINT), or varint zz(base),
 *     width byte and bit-packed (x - base) where x are the deltas (TS_DELTAS)
 *     or the delta-of-deltas (TS_DODS)
 *   per series, varint length, then:
 *     status: one byte 0..3 when the whole block has that status, else
 *             STATUS_RUNS and varints ((run length - 1) << 2 | status) up to n_rows
 *     values of the OK cells in row order, when there are any: a mode byte and
 *             V_CONST   8 bytes
 *             V_RAW     8 bytes each
 *             V_DECIMAL byte k | order << 4; order leading m as zz varints;
 *                       varint zz(base), width byte, bit-packed (d - base) where d
 *                       are the order-th differences of m and value = m / 10^k
 *             V_XOR     byte lead, byte width, the first value's 8 bytes, then per value a
 *                       bit (0: same as the previous value) or 1 and the xor with
 *                       the previous value's bits, shifted down past the block's
 *                       common trailing zeros
 * Doubles travel as their 64 bits, low byte first.  Bit-packing is low bit first.
 * The arithmetic on timestamps and decoded integers is unsigned, so any bytes
 * (and any int64 timestamps) wrap instead of overflowing.
 */
#include "block_codec.h"
#include "block_bits.h"
#include "ring.h"

#include <math.h>
#include <string.h>

#define BLOCK_FORMAT 1
#define MAX_DIM ((int64_t)1 << 24)
#define STATUS_RUNS 4
#define N_STATUS (DCGMC_SAMPLE_ABSENT + 1) /* the statuses fit the runs' two bits */

enum { TS_VARINT = 0, TS_DELTAS = 1, TS_DODS = 2 };
enum { V_CONST = 0, V_RAW = 1, V_DECIMAL = 2, V_XOR = 3 };

/* Exact as doubles, so m / 10^k is one correctly rounded division both ways. */
static const double pow10_exact[10] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };
#define TWO_POW_53 9007199254740992.0

/* ---- timestamps ---------------------------------------------------------------- */

static inline uint64_t ts_delta(const int64_t *ts, int64_t i)
{
    return (uint64_t)ts[i] - (uint64_t)ts[i - 1];
}

/* The section's payload size in the mode the encoder picks; *mode and the packed
 * parameters for ts_write.  Jittered sampling favours packed deltas (their spread
 * is half that of the delta-of-deltas); rare irregular stamps favour varints. */
static uint64_t ts_plan(const int64_t *ts, int64_t n, int *mode, int64_t *base, unsigned *width)
{
    uint64_t head = 1 + varint_len(zz((uint64_t)ts[0]));
    *mode = TS_VARINT;
    if (n < 2)
        return head;
    head += varint_len(zz(ts_delta(ts, 1)));
    if (n < 3)
        return head;
    uint64_t as_varints = 0;
    int64_t lo[2] = { INT64_MAX, INT64_MAX }, hi[2] = { INT64_MIN, INT64_MIN };
    for (int64_t i = 2; i < n; i++) {
        uint64_t d = ts_delta(ts, i), dod = d - ts_delta(ts, i - 1);
        as_varints += varint_len(zz(dod));
        int64_t sd = as_signed(d), sdod = as_signed(dod);
        lo[0] = sd < lo[0] ? sd : lo[0];
        hi[0] = sd > hi[0] ? sd : hi[0];
        lo[1] = sdod < lo[1] ? sdod : lo[1];
        hi[1] = sdod > hi[1] ? sdod : hi[1];
    }
    uint64_t best = as_varints;
    for (int k = 0; k < 2; k++) {
        unsigned w = bit_width((uint64_t)hi[k] - (uint64_t)lo[k]);
        uint64_t bytes = varint_len(zz((uint64_t)lo[k])) + 1 + packed_bytes((uint64_t)(n - 2), w);
        if (bytes < best) {
            best = bytes;
            *mode = k == 0 ? TS_DELTAS : TS_DODS;
            *base = lo[k];
            *width = w;
        }
    }
    return head + best;
}

static uint8_t *ts_write(uint8_t *p, const int64_t *ts, int64_t n, int mode, int64_t base,
                         unsigned width)
{
    *p++ = (uint8_t)mode;
    p = put_varint(p, zz((uint64_t)ts[0]));
    if (n >= 2)
        p = put_varint(p, zz(ts_delta(ts, 1)));
    if (n < 3)
        return p;
    if (mode == TS_VARINT) {
        for (int64_t i = 2; i < n; i++)
            p = put_varint(p, zz(ts_delta(ts, i) - ts_delta(ts, i - 1)));
        return p;
    }
    p = put_varint(p, zz((uint64_t)base));
    *p++ = (uint8_t)width;
    bit_writer bw = { p, 0, 0 };
    for (int64_t i = 2; i < n; i++) {
        uint64_t term = mode == TS_DELTAS ? ts_delta(ts, i) : ts_delta(ts, i) - ts_delta(ts, i - 1);
        bw_put(&bw, term - (uint64_t)base, width);
    }
    return bw_end(&bw);
}

/* Decodes a ts section payload [p, end) into out for rows [from, to). */
static int ts_read(const uint8_t *p, const uint8_t *end, int64_t n, int64_t from, int64_t to,
                   int64_t *out)
{
    reader r = { p, end, 0 };
    unsigned mode = get_byte(&r);
    uint64_t t = unzz(get_varint(&r)), d = 0, base = 0;
    unsigned width = 0;
    if (n >= 2)
        d = unzz(get_varint(&r));
    if (mode != TS_VARINT && mode != TS_DELTAS && mode != TS_DODS)
        return -1;
    bit_reader br = { 0 };
    if (n >= 3 && mode != TS_VARINT) {
        base = unzz(get_varint(&r));
        width = get_byte(&r);
        if (width > 64 || (uint64_t)(r.end - r.p) != packed_bytes((uint64_t)(n - 2), width))
            return -1;
        br.p = r.p;
        br.end = r.end;
    }
    if (r.bad)
        return -1;
    for (int64_t i = 0; i < to; i++) {
        if (i == 1) {
            t += d;
        } else if (i >= 2) {
            if (mode == TS_VARINT)
                d += unzz(get_varint(&r));
            else if (mode == TS_DELTAS)
                d = base + br_get(&br, width);
            else
                d += base + br_get(&br, width);
            t += d;
        }
        if (i >= from)
            out[i - from] = as_signed(t);
    }
    return r.bad || br.bad ? -1 : 0;
}

/* ---- one series: statuses ------------------------------------------------------ */

typedef struct column {
    const double *v;     /* the series' first cell; row r at v[r * stride] */
    const int8_t *st;
    int64_t stride, n;
} column;

/* What the encoder learns from one pass over a column. */
typedef struct column_scan {
    uint64_t status_bytes;
    int64_t ok;            /* OK cells */
    int all_same;          /* every OK value has the first one's bits */
    unsigned lead, trail;  /* fewest leading / trailing zeros of a non-zero xor */
    int64_t changes;       /* OK values whose bits differ from the previous one's */
    int decimal_k;         /* -1: some OK value is no m / 10^k */
} column_scan;

/* m with v == m / 10^k exactly and |m| < 2^53, the way the decoder computes it. */
static inline int decimal_at(double v, int k, int64_t *m)
{
    double x = v * pow10_exact[k];
    if (!(x > -TWO_POW_53 && x < TWO_POW_53))
        return 0;
    int64_t c = (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
    if (c <= -(INT64_C(1) << 53) || c >= (INT64_C(1) << 53))
        return 0;
    if (double_bits((double)c / pow10_exact[k]) != double_bits(v))
        return 0;
    *m = c;
    return 1;
}

/* 1 when a status is valid, the scan filled and the summary (may be NULL) set. */
static int column_scan_all(const column *c, column_scan *s, block_summary *sum)
{
    memset(s, 0, sizeof *s);
    s->all_same = 1;
    s->lead = s->trail = 64;
    double lo = NAN, hi = NAN, total = 0;
    uint64_t prev = 0;
    int k = 0, decimal = 1;
    int8_t run_status = c->st[0];
    int64_t run_len = 0, runs_bytes = 0, n_runs = 0;
    for (int64_t r = 0; r < c->n; r++) {
        int8_t st = c->st[r * c->stride];
        if (st < 0 || st >= N_STATUS)
            return 0;
        if (st != run_status) {
            runs_bytes += varint_len((uint64_t)(run_len - 1) << 2 | (uint64_t)run_status);
            n_runs++;
            run_status = st;
            run_len = 0;
        }
        run_len++;
        if (st != DCGMC_SAMPLE_OK)
            continue;
        double v = c->v[r * c->stride];
        uint64_t bits = double_bits(v);
        total += v;
        if (v == v) {
            lo = !(v >= lo) ? v : lo; /* NaN lo (nothing yet) takes v */
            hi = !(v <= hi) ? v : hi;
        }
        if (s->ok > 0 && bits != prev) {
            uint64_t x = bits ^ prev;
            unsigned l = (unsigned)__builtin_clzll(x), t = (unsigned)__builtin_ctzll(x);
            s->lead = l < s->lead ? l : s->lead;
            s->trail = t < s->trail ? t : s->trail;
            s->changes++;
            s->all_same = 0;
        }
        prev = bits;
        s->ok++;
        if (decimal) {
            int64_t m;
            while (k < 10 && !decimal_at(v, k, &m))
                k++;
            decimal = k < 10;
        }
    }
    if (n_runs == 0) {
        s->status_bytes = 1;
    } else {
        runs_bytes += varint_len((uint64_t)(run_len - 1) << 2 | (uint64_t)run_status);
        s->status_bytes = 1 + (uint64_t)runs_bytes;
    }
    s->decimal_k = decimal ? k : -1;
    if (sum) {
        sum->min = lo;
        sum->max = hi;
        sum->sum = total;
        sum->count = s->ok;
    }
    return 1;
}

static uint8_t *status_write(uint8_t *p, const column *c, const column_scan *s)
{
    int8_t run_status = c->st[0];
    if (s->status_bytes == 1) {
        *p++ = (uint8_t)run_status;
        return p;
    }
    *p++ = STATUS_RUNS;
    int64_t run_len = 0;
    for (int64_t r = 0; r < c->n; r++) {
        int8_t st = c->st[r * c->stride];
        if (st != run_status) {
            p = put_varint(p, (uint64_t)(run_len - 1) << 2 | (uint64_t)run_status);
            run_status = st;
            run_len = 0;
        }
        run_len++;
    }
    return put_varint(p, (uint64_t)(run_len - 1) << 2 | (uint64_t)run_status);
}

/* ---- one series: values -------------------------------------------------------- */

typedef struct value_plan {
    int mode;
    uint64_t bytes;        /* the value part's size, mode byte included */
    int k, order;          /* V_DECIMAL */
    int64_t first[2], base;
    unsigned width;        /* V_DECIMAL: packed width; V_XOR: the xor window's */
    unsigned lead;         /* V_XOR */
} value_plan;

/* The cheapest difference order for m = v * 10^k, into *plan when it beats plan->bytes;
 * 0 when some OK value is no m / 10^k at that k after all. */
static int decimal_plan(const column *c, int k, int64_t ok, value_plan *plan)
{
    int64_t lo[3] = { INT64_MAX, INT64_MAX, INT64_MAX }, hi[3] = { INT64_MIN, INT64_MIN, INT64_MIN };
    int64_t first[2] = { 0, 0 }, prev = 0, prev_d = 0, i = 0;
    for (int64_t r = 0; r < c->n; r++) {
        if (c->st[r * c->stride] != DCGMC_SAMPLE_OK)
            continue;
        int64_t m;
        if (!decimal_at(c->v[r * c->stride], k, &m))
            return 0;
        if (i < 2)
            first[i] = m;
        lo[0] = m < lo[0] ? m : lo[0];
        hi[0] = m > hi[0] ? m : hi[0];
        if (i >= 1) { /* |m| < 2^53, so these differences cannot overflow */
            int64_t d = m - prev;
            lo[1] = d < lo[1] ? d : lo[1];
            hi[1] = d > hi[1] ? d : hi[1];
            if (i >= 2) {
                lo[2] = d - prev_d < lo[2] ? d - prev_d : lo[2];
                hi[2] = d - prev_d > hi[2] ? d - prev_d : hi[2];
            }
            prev_d = d;
        }
        prev = m;
        i++;
    }
    for (int order = 0; order < 3 && order < ok; order++) {
        unsigned width = bit_width((uint64_t)hi[order] - (uint64_t)lo[order]);
        uint64_t bytes = 3 + varint_len(zz((uint64_t)lo[order])) +
                         packed_bytes((uint64_t)(ok - order), width);
        if (order >= 1)
            bytes += varint_len(zz((uint64_t)first[0]));
        if (order >= 2)
            bytes += varint_len(zz((uint64_t)(first[1] - first[0])));
        if (bytes < plan->bytes) {
            plan->mode = V_DECIMAL;
            plan->bytes = bytes;
            plan->k = k;
            plan->order = order;
            plan->first[0] = first[0];
            plan->first[1] = first[1];
            plan->base = lo[order];
            plan->width = width;
        }
    }
    return 1;
}

static void value_choose(const column *c, const column_scan *s, value_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->mode = V_RAW;
    plan->bytes = 1 + 8 * (uint64_t)s->ok;
    if (s->all_same) {
        plan->mode = V_CONST;
        plan->bytes = 9;
    }
    unsigned width = s->changes ? 64 - s->lead - s->trail : 0;
    uint64_t xor_bytes = 11 + packed_bytes((uint64_t)(s->ok - 1) + (uint64_t)s->changes * width, 1);
    if (xor_bytes < plan->bytes) {
        plan->mode = V_XOR;
        plan->bytes = xor_bytes;
        plan->lead = s->changes ? s->lead : 0;
        plan->width = width;
    }
    if (s->decimal_k >= 0)
        decimal_plan(c, s->decimal_k, s->ok, plan);
}

static uint8_t *values_write(uint8_t *p, const column *c, const value_plan *plan)
{
    *p++ = (uint8_t)plan->mode;
    if (plan->mode == V_DECIMAL) {
        *p++ = (uint8_t)(plan->k | plan->order << 4);
        if (plan->order >= 1)
            p = put_varint(p, zz((uint64_t)plan->first[0]));
        if (plan->order >= 2)
            p = put_varint(p, zz((uint64_t)(plan->first[1] - plan->first[0])));
        p = put_varint(p, zz((uint64_t)plan->base));
        *p++ = (uint8_t)plan->width;
    } else if (plan->mode == V_XOR) {
        *p++ = (uint8_t)plan->lead;
        *p++ = (uint8_t)plan->width;
    }
    bit_writer bw = { p, 0, 0 };
    unsigned trail = 64 - plan->lead - plan->width;
    int64_t i = 0, prev = 0, prev_d = 0;
    uint64_t prev_bits = 0;
    for (int64_t r = 0; r < c->n; r++) {
        if (c->st[r * c->stride] != DCGMC_SAMPLE_OK)
            continue;
        double v = c->v[r * c->stride];
        uint64_t bits = double_bits(v);
        if (plan->mode == V_CONST) {
            return put_u64(p, bits);
        } else if (plan->mode == V_RAW) {
            p = put_u64(p, bits);
        } else if (plan->mode == V_XOR) {
            if (i == 0) {
                bw.p = put_u64(bw.p, bits);
            } else if (bits == prev_bits) {
                bw_put32(&bw, 0, 1);
            } else {
                bw_put32(&bw, 1, 1);
                bw_put(&bw, (bits ^ prev_bits) >> trail, plan->width);
            }
            prev_bits = bits;
        } else {
            int64_t m = 0;
            decimal_at(v, plan->k, &m);
            int64_t d = m - prev, term = plan->order == 0 ? m : plan->order == 1 ? d : d - prev_d;
            if (i >= plan->order)
                bw_put(&bw, (uint64_t)term - (uint64_t)plan->base, plan->width);
            prev_d = d;
            prev = m;
        }
        i++;
    }
    return plan->mode == V_RAW ? p : bw_end(&bw);
}

/* A decoder of the OK values of one series, in row order. */
typedef struct value_reader {
    int mode, order;
    const uint8_t *raw;   /* V_RAW: the next value's bytes */
    uint64_t cur;         /* V_CONST, V_XOR: the bits; V_DECIMAL: m */
    uint64_t d, base, first[2];
    double scale;
    unsigned width, trail;
    int64_t i;
    bit_reader br;
} value_reader;

/* Reads the value header from r and checks the payload's size for ok values. */
static int value_open(value_reader *vr, reader *r, int64_t ok)
{
    memset(vr, 0, sizeof *vr);
    vr->mode = (int)get_byte(r);
    uint64_t room;
    switch (vr->mode) {
    case V_CONST:
        vr->cur = get_u64(r);
        return r->bad || r->p != r->end ? -1 : 0;
    case V_RAW:
        vr->raw = r->p;
        return r->bad || (uint64_t)(r->end - r->p) != 8 * (uint64_t)ok ? -1 : 0;
    case V_DECIMAL: {
        unsigned kb = get_byte(r);
        vr->order = (int)(kb >> 4);
        if ((kb & 15) > 9 || vr->order > 2 || vr->order >= ok)
            return -1;
        vr->scale = pow10_exact[kb & 15];
        if (vr->order >= 1)
            vr->first[0] = unzz(get_varint(r));
        if (vr->order >= 2)
            vr->first[1] = vr->first[0] + unzz(get_varint(r));
        vr->base = unzz(get_varint(r));
        vr->width = get_byte(r);
        room = packed_bytes((uint64_t)(ok - vr->order), vr->width);
        if (r->bad || vr->width > 64 || (uint64_t)(r->end - r->p) != room)
            return -1;
        break;
    }
    case V_XOR: {
        unsigned lead = get_byte(r);
        vr->width = get_byte(r);
        vr->cur = get_u64(r);
        if (r->bad || lead + vr->width > 64)
            return -1;
        vr->trail = 64 - lead - vr->width;
        /* at least the "same" bits must be there */
        if ((uint64_t)(r->end - r->p) < packed_bytes((uint64_t)(ok - 1), 1))
            return -1;
        break;
    }
    default:
        return -1;
    }
    vr->br.p = r->p;
    vr->br.end = r->end;
    return 0;
}

static inline double value_next(value_reader *vr)
{
    switch (vr->mode) {
    case V_CONST:
        return bits_double(vr->cur);
    case V_RAW: {
        uint64_t v = 0;
        for (int b = 0; b < 8; b++)
            v |= (uint64_t)vr->raw[b] << (8 * b);
        vr->raw += 8;
        return bits_double(v);
    }
    case V_XOR:
        if (vr->i++ > 0 && br_get32(&vr->br, 1)) {
            if (vr->width)
                vr->cur ^= br_get(&vr->br, vr->width) << vr->trail;
        }
        return bits_double(vr->cur);
    default: { /* V_DECIMAL */
        int64_t i = vr->i++;
        if (i < vr->order) {
            if (i == 1)
                vr->d = vr->first[1] - vr->first[0];
            vr->cur = vr->first[i];
        } else {
            uint64_t term = vr->base + br_get(&vr->br, vr->width);
            if (vr->order == 0) {
                vr->cur = term;
            } else if (vr->order == 1) {
                vr->cur += term;
            } else {
                vr->d += term;
                vr->cur += vr->d;
            }
        }
        return (double)as_signed(vr->cur) / vr->scale;
    }
    }
}

/* Decodes one series section payload [p, end) for rows [from, to) into the column
 * vout / sout (stride cells apart). */
static int series_read(const uint8_t *p, const uint8_t *end, int64_t n, int64_t from,
                       int64_t to, double *vout, int8_t *sout, int64_t stride)
{
    reader r = { p, end, 0 };
    unsigned whole = get_byte(&r);
    const uint8_t *runs = r.p;
    int64_t ok = 0;
    if (whole < N_STATUS) {
        ok = whole == 0 ? n : 0;
    } else if (whole == STATUS_RUNS) {
        for (int64_t seen = 0; seen < n;) {
            uint64_t u = get_varint(&r);
            if (r.bad || (u >> 2) >= (uint64_t)(n - seen))
                return -1;
            seen += (int64_t)(u >> 2) + 1;
            ok += (u & 3) == 0 ? (int64_t)(u >> 2) + 1 : 0;
        }
    } else {
        return -1;
    }
    if (r.bad)
        return -1;
    value_reader vr = { 0 };
    if (ok > 0 ? value_open(&vr, &r, ok) != 0 : r.p != r.end)
        return -1;
    reader rr = { runs, end, 0 };
    for (int64_t row = 0; row < to;) {
        unsigned st = whole;
        int64_t stop = n;
        if (whole == STATUS_RUNS) { /* validated above */
            uint64_t u = get_varint(&rr);
            st = (unsigned)(u & 3);
            stop = row + (int64_t)(u >> 2) + 1;
        }
        stop = stop < to ? stop : to;
        if (st == 0) {
            for (; row < from && row < stop; row++)
                value_next(&vr);
            for (; row < stop; row++) {
                vout[(row - from) * stride] = value_next(&vr);
                sout[(row - from) * stride] = 0;
            }
        } else {
            row = row > from ? row : from < stop ? from : stop;
            for (; row < stop; row++) {
                vout[(row - from) * stride] = NAN;
                sout[(row - from) * stride] = (int8_t)st;
            }
        }
    }
    return vr.br.bad ? -1 : 0;
}

/* ---- the block ----------------------------------------------------------------- */

size_t block_encode_bound(int64_t n_rows, int64_t n_series)
{
    if (n_rows < 1 || n_series < 0 || n_rows > MAX_DIM || n_series > MAX_DIM)
        return 0;
    uint64_t rows = (uint64_t)n_rows;
    uint64_t ts = 1 + 10 + 1 + 10 * rows;
    uint64_t run = varint_len((rows - 1) << 2 | 3);
    uint64_t series = 10 + 1 + run * rows + 1 + 8 * rows;
    uint64_t total = ts + series * (uint64_t)n_series;
    return total > SIZE_MAX ? 0 : (size_t)total;
}

int64_t block_encode(const int64_t *ts, const double *values, const int8_t *status,
                     int64_t n_rows, int64_t n_series, uint8_t *out, size_t out_cap,
                     block_summary *summaries)
{
    if (!block_encode_bound(n_rows, n_series) || !ts || !out ||
        (n_series > 0 && (!values || !status)))
        return -1;
    uint8_t *p = out, *end = out + out_cap;
    int mode;
    int64_t base = 0;
    unsigned width = 0;
    uint64_t size = ts_plan(ts, n_rows, &mode, &base, &width);
    if ((uint64_t)(end - p) < 1 + varint_len(size) + size)
        return -1;
    *p++ = BLOCK_FORMAT;
    p = put_varint(p, size);
    p = ts_write(p, ts, n_rows, mode, base, width);
    for (int64_t s = 0; s < n_series; s++) {
        column c = { values + s, status + s, n_series, n_rows };
        column_scan scan;
        if (!column_scan_all(&c, &scan, summaries ? &summaries[s] : NULL))
            return -1;
        value_plan plan;
        if (scan.ok > 0)
            value_choose(&c, &scan, &plan);
        size = scan.status_bytes + (scan.ok > 0 ? plan.bytes : 0);
        if ((uint64_t)(end - p) < varint_len(size) + size)
            return -1;
        p = put_varint(p, size);
        uint8_t *section = p;
        p = status_write(p, &c, &scan);
        if (scan.ok > 0)
            p = values_write(p, &c, &plan);
        if ((uint64_t)(p - section) != size) /* the planner and the writer disagree */
            return -1;
    }
    return (int64_t)(p - out);
}

/* The ts section's payload of a block, after checking the arguments. */
static int ts_section(const uint8_t *in, size_t len, int64_t n_rows, int64_t from, int64_t to,
                      reader *r, const uint8_t **ts_end)
{
    if (!in || n_rows < 1 || n_rows > MAX_DIM || from < 0 || from > to || to > n_rows)
        return -1;
    r->p = in;
    r->end = in + len;
    r->bad = 0;
    if (get_byte(r) != BLOCK_FORMAT)
        return -1;
    uint64_t size = get_varint(r);
    if (r->bad || size > (uint64_t)(r->end - r->p))
        return -1;
    *ts_end = r->p + size;
    return 0;
}

int block_decode_ts(const uint8_t *in, size_t len, int64_t n_rows, int64_t from, int64_t to,
                    int64_t *ts_out)
{
    reader r;
    const uint8_t *ts_end;
    if (ts_section(in, len, n_rows, from, to, &r, &ts_end) != 0 || (to > from && !ts_out))
        return -1;
    return ts_read(r.p, ts_end, n_rows, from, to, ts_out);
}

int block_decode(const uint8_t *in, size_t len, int64_t n_rows, int64_t n_series,
                 int64_t from, int64_t to, int64_t *ts_out, double *values_out,
                 int8_t *status_out)
{
    reader r;
    const uint8_t *ts_end;
    if (ts_section(in, len, n_rows, from, to, &r, &ts_end) != 0 || n_series < 0 ||
        n_series > MAX_DIM || (to > from && (!ts_out || (n_series > 0 && (!values_out || !status_out)))))
        return -1;
    if (ts_read(r.p, ts_end, n_rows, from, to, ts_out) != 0)
        return -1;
    r.p = ts_end;
    for (int64_t s = 0; s < n_series; s++) {
        uint64_t size = get_varint(&r);
        if (r.bad || size > (uint64_t)(r.end - r.p))
            return -1;
        if (to > from &&
            series_read(r.p, r.p + size, n_rows, from, to, values_out + s, status_out + s, n_series) != 0)
            return -1;
        r.p += size;
    }
    return 0;
}
