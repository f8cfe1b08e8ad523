/*
 * test_block_codec.c -- the block codec (ext/block_codec.c): bit-exact round
 * trips of random and hostile blocks, partial decodes, decoding of damaged
 * bytes, the sizes reached on series shaped like real GPU telemetry, and the
 * speed on a production-sized block.
 *
 * The codec is compiled into this program, as the cffi build compiles it into
 * the extension.
 *
 * usage: test_block_codec BUILD_DIR   (BUILD_DIR unused; exit 0 = pass)
 */
#include "../ext/block_codec.c"

#include "check.h"

#include <float.h>
#include <math.h>

/* ---- deterministic randomness ------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int64_t rnd_in(int64_t lo, int64_t hi) /* inclusive, hi - lo small */
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static double rnd_unit(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- blocks ------------------------------------------------------------------ */

typedef struct block {
    int64_t rows, series;
    int64_t *ts;
    double *v;
    int8_t *st;
} block;

static block block_new(int64_t rows, int64_t series)
{
    block b = { rows, series, xmalloc((size_t)rows * 8), xmalloc((size_t)(rows * series) * 8),
                xmalloc((size_t)(rows * series)) };
    memset(b.st, 0, (size_t)(rows * series));
    return b;
}

static void block_free(block *b)
{
    free(b->ts);
    free(b->v);
    free(b->st);
}

static double *cell(block *b, int64_t r, int64_t s)
{
    return &b->v[r * b->series + s];
}

/* Regular sampling: period_us apart, each stamp up to jitter_us off its slot. */
static void ts_regular(block *b, int64_t period_us, int64_t jitter_us)
{
    int64_t t0 = INT64_C(1764700000000000) + rnd_in(0, 1000000);
    for (int64_t r = 0; r < b->rows; r++)
        b->ts[r] = t0 + r * period_us + rnd_in(-jitter_us, jitter_us);
}

static const uint64_t special_bits[] = {
    0x8000000000000000u, /* -0.0 */
    0x0000000000000000u, 0x7ff0000000000000u, 0xfff0000000000000u,
    0x0000000000000001u, /* the smallest denormal */
    0x000fffffffffffffu, /* the largest denormal */
    0x7fefffffffffffffu, /* DBL_MAX */
    0xffefffffffffffffu, 0x4340000000000001u, /* 2^53 + 2 */
    0x43e0000000000000u, /* 2^63 */
    0x7ff8000000000000u, 0x7ff0000000000001u, 0xfff800000000abcdu, /* NaNs with payloads */
    0x3ff0000000000000u, 0x3fb999999999999au, /* 1, 0.1 */
};
#define N_SPECIAL (sizeof special_bits / sizeof special_bits[0])

enum kind {
    K_CONST, K_GAUGE, K_POWER, K_ENERGY, K_RATIO, /* the realistic ones */
    K_RANDOM_BITS, K_SPECIAL, K_DECIMAL_ANY, K_DECIMAL_HUGE, K_STEPS, N_KINDS
};
static const char *kind_names[] = { "constant", "small-int gauge", "3-decimal power",
                                    "energy counter", "full-precision ratio" };
#define N_REALISTIC 5

/* Fills series s of b with values of one kind (statuses untouched). */
static void fill_series(block *b, int64_t s, enum kind kind)
{
    int64_t k = rnd_in(0, 9), energy = rnd_in(0, INT64_C(1) << 40), level = rnd_in(60, 95);
    double p10 = pow10_exact[k];
    for (int64_t r = 0; r < b->rows; r++) {
        double v;
        uint64_t bits;
        switch (kind) {
        case K_CONST:
            v = 1410.0;
            break;
        case K_GAUGE:
            v = (double)(level + (int64_t)(rnd() & 1));
            break;
        case K_POWER: {
            /* a reading printed with 3 decimals and parsed back, as a source would */
            char text[32];
            snprintf(text, sizeof text, "%.3f", 693.928 + (rnd_unit() + rnd_unit() - 1.0) * 8.0);
            v = strtod(text, NULL);
            break;
        }
        case K_ENERGY:
            energy += 70000 + rnd_in(-1000, 1000);
            v = (double)energy;
            break;
        case K_RATIO:
            v = 0.94 + rnd_unit() * 0.02;
            break;
        case K_RANDOM_BITS:
            bits = rnd();
            memcpy(&v, &bits, 8);
            break;
        case K_SPECIAL:
            bits = rnd() % 4 ? special_bits[rnd() % N_SPECIAL] : rnd();
            memcpy(&v, &bits, 8);
            break;
        case K_DECIMAL_ANY:
            v = (double)rnd_in(-100000, 100000) / p10;
            break;
        case K_DECIMAL_HUGE: /* |m| close to 2^53: the widest differences */
            v = (double)(as_signed(rnd() >> 11) * (rnd() & 1 ? 1 : -1)) / p10;
            break;
        default: /* K_STEPS: long runs of one value, then a jump */
            v = r % 50 < 25 ? -3.25 : 1e6;
            break;
        }
        *cell(b, r, s) = v;
    }
}

static void random_statuses(block *b, int64_t s)
{
    int style = (int)(rnd() % 5);
    for (int64_t r = 0; r < b->rows; r++) {
        int8_t st = 0;
        if (style == 1)
            st = (int8_t)(rnd() % 4);
        else if (style == 2)
            st = DCGMC_SAMPLE_ABSENT;
        else if (style == 3)
            st = (int8_t)((r / 7) % 4);
        else if (style == 4)
            st = rnd() % 10 == 0 ? DCGMC_SAMPLE_BLANK : 0;
        b->st[r * b->series + s] = st;
        if (st != 0 && rnd() & 1)
            *cell(b, r, s) = NAN; /* the ring's way; the codec must not need it */
    }
}

/* ---- checks -------------------------------------------------------------------- */

static int same_bits(double a, double b)
{
    return double_bits(a) == double_bits(b);
}

/* The decoded rows [from, to) match the block's. */
static int decoded_matches(const block *b, int64_t from, int64_t to, const int64_t *ts,
                           const double *v, const int8_t *st)
{
    int bad = 0;
    for (int64_t r = from; r < to; r++) {
        bad |= ts[r - from] != b->ts[r];
        for (int64_t s = 0; s < b->series; s++) {
            int64_t i = r * b->series + s, o = (r - from) * b->series + s;
            bad |= st[o] != b->st[i];
            bad |= b->st[i] == 0 ? !same_bits(v[o], b->v[i]) : !isnan(v[o]);
        }
    }
    return !bad;
}

static void check_summaries(const block *b, const block_summary *sum)
{
    for (int64_t s = 0; s < b->series; s++) {
        double lo = NAN, hi = NAN, total = 0;
        int64_t count = 0;
        for (int64_t r = 0; r < b->rows; r++) {
            if (b->st[r * b->series + s] != 0)
                continue;
            double v = b->v[r * b->series + s];
            total += v;
            count++;
            if (!isnan(v)) {
                lo = isnan(lo) || v < lo ? v : lo;
                hi = isnan(hi) || v > hi ? v : hi;
            }
        }
        CHECK(sum[s].count == count, "series %lld count %lld", (long long)s,
              (long long)sum[s].count);
        CHECK(same_bits(sum[s].sum, total) || (isnan(sum[s].sum) && isnan(total)),
              "series %lld sum %.17g want %.17g", (long long)s, sum[s].sum, total);
        CHECK((isnan(lo) && isnan(sum[s].min)) || sum[s].min == lo, "series %lld min %.17g",
              (long long)s, sum[s].min);
        CHECK((isnan(hi) && isnan(sum[s].max)) || sum[s].max == hi, "series %lld max %.17g",
              (long long)s, sum[s].max);
    }
}

/* Decodes damaged copies of enc: every truncation (or a sample of them for big
 * blocks) and random byte flips; each must fail or succeed without stepping
 * outside its buffers, which ASan and valgrind watch. */
static void damage(const block *b, const uint8_t *enc, int64_t len)
{
    int64_t rows = b->rows, cells = rows * b->series;
    int64_t *ts = xmalloc((size_t)rows * 8);
    double *v = xmalloc((size_t)cells * 8);
    int8_t *st = xmalloc((size_t)cells);
    int64_t step = len > 4000 ? len / 400 : 1;
    for (int64_t cut = 0; cut < len; cut += step) {
        uint8_t *copy = xmalloc((size_t)cut); /* exactly cut bytes: reads past them are caught */
        memcpy(copy, enc, (size_t)cut);
        int rc = block_decode(copy, (size_t)cut, rows, b->series, 0, rows, ts, v, st);
        CHECK(rc == -1 || rc == 0, "truncated to %lld: %d", (long long)cut, rc);
        rc = block_decode_ts(copy, (size_t)cut, rows, 0, rows, ts);
        CHECK(rc == -1 || rc == 0, "ts truncated to %lld: %d", (long long)cut, rc);
        free(copy);
    }
    uint8_t *copy = xmalloc((size_t)len);
    for (int round = 0; round < 60; round++) {
        memcpy(copy, enc, (size_t)len);
        int flips = 1 + (int)(rnd() % 4);
        for (int f = 0; f < flips; f++)
            copy[rnd() % (uint64_t)len] ^= (uint8_t)(1 + rnd() % 255);
        int64_t from = rnd_in(0, rows), to = rnd_in(from, rows);
        int rc = block_decode(copy, (size_t)len, rows, b->series, from, to, ts, v, st);
        CHECK(rc == -1 || rc == 0, "flipped: %d", rc);
    }
    free(copy);
    free(ts);
    free(v);
    free(st);
}

/* Encodes b and checks everything a reader relies on; returns the encoded size. */
static int64_t round_trip(const block *b, int hostile)
{
    size_t cap = block_encode_bound(b->rows, b->series);
    CHECK(cap > 0, "no bound for %lld x %lld", (long long)b->rows, (long long)b->series);
    uint8_t *enc = xmalloc(cap);
    block_summary *sum = xmalloc((size_t)(b->series ? b->series : 1) * sizeof *sum);
    int64_t len = block_encode(b->ts, b->v, b->st, b->rows, b->series, enc, cap, sum);
    CHECK(len > 0 && (size_t)len <= cap, "encoded %lld bytes, bound %zu", (long long)len, cap);
    if (len <= 0) {
        free(enc);
        free(sum);
        return len;
    }
    check_summaries(b, sum);
    uint8_t *again = xmalloc((size_t)len);
    CHECK(block_encode(b->ts, b->v, b->st, b->rows, b->series, again, (size_t)len - 1, NULL) == -1,
          "one byte short must fail");
    CHECK(block_encode(b->ts, b->v, b->st, b->rows, b->series, again, (size_t)len, NULL) == len &&
              memcmp(again, enc, (size_t)len) == 0,
          "an exact-size buffer must give the same bytes");
    free(again);

    int64_t rows = b->rows, cells = rows * b->series;
    int64_t *ts = xmalloc((size_t)rows * 8);
    double *v = xmalloc((size_t)cells * 8);
    int8_t *st = xmalloc((size_t)cells);
    CHECK_RC(block_decode(enc, (size_t)len, rows, b->series, 0, rows, ts, v, st), 0);
    CHECK(decoded_matches(b, 0, rows, ts, v, st), "full decode differs (%lld x %lld)",
          (long long)rows, (long long)b->series);
    for (int i = 0; i < 6; i++) {
        int64_t from = rnd_in(0, rows), to = rnd_in(from, rows);
        if (i == 0)
            from = to = rows;
        CHECK_RC(block_decode(enc, (size_t)len, rows, b->series, from, to, ts, v, st), 0);
        CHECK(decoded_matches(b, from, to, ts, v, st), "rows [%lld, %lld) differ",
              (long long)from, (long long)to);
        CHECK_RC(block_decode_ts(enc, (size_t)len, rows, from, to, ts), 0);
        CHECK(decoded_matches(&(block){ rows, 0, b->ts, NULL, NULL }, from, to, ts, NULL, NULL),
              "ts of rows [%lld, %lld) differ", (long long)from, (long long)to);
    }
    CHECK_RC(block_decode(enc, (size_t)len, rows, b->series, 0, rows + 1, ts, v, st), -1);
    CHECK_RC(block_decode(enc, (size_t)len, rows, b->series, 2, 1, ts, v, st), -1);
    free(ts);
    free(v);
    free(st);
    if (hostile)
        damage(b, enc, len);
    free(enc);
    free(sum);
    return len;
}

/* ---- the tests ----------------------------------------------------------------- */

static void test_random_blocks(void)
{
    static const int64_t shapes[][2] = { { 1, 1 }, { 1, 7 }, { 2, 3 }, { 3, 1 },  { 64, 1 },
                                         { 256, 24 }, { 257, 5 }, { 1024, 3 }, { 100, 1000 } };
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        for (int rep = 0; rep < 12; rep++) {
            block b = block_new(shapes[sh][0], shapes[sh][1]);
            ts_regular(&b, 100000, rep % 3 == 0 ? 0 : 40);
            for (int64_t s = 0; s < b.series; s++) {
                fill_series(&b, s, (enum kind)(rnd() % N_KINDS));
                if (rep % 2)
                    random_statuses(&b, s);
            }
            round_trip(&b, b.rows * b.series <= 30000 && rep < 4);
            block_free(&b);
        }
    }
}

static void test_hostile_timestamps(void)
{
    for (int style = 0; style < 6; style++) {
        block b = block_new(300, 2);
        for (int64_t r = 0; r < b.rows; r++) {
            switch (style) {
            case 0: b.ts[r] = as_signed(rnd()); break;
            case 1: b.ts[r] = r % 2 ? INT64_MAX : INT64_MIN; break;
            case 2: b.ts[r] = 42; break;
            case 3: b.ts[r] = -INT64_C(1000) * r; break;
            case 4: b.ts[r] = r % 3 == 0 ? INT64_MIN + 1 : INT64_MAX - r; break;
            default: b.ts[r] = r < 150 ? r : INT64_C(1) << 62; break;
            }
        }
        fill_series(&b, 0, K_SPECIAL);
        fill_series(&b, 1, K_DECIMAL_HUGE);
        random_statuses(&b, 1);
        round_trip(&b, 1);
        block_free(&b);
    }
}

/* Every value of special_bits, alone and mixed, in every mode's reach. */
static void test_special_values(void)
{
    block b = block_new((int64_t)N_SPECIAL * 3, 4);
    ts_regular(&b, 1000, 0);
    for (int64_t r = 0; r < b.rows; r++) {
        uint64_t bits = special_bits[r % N_SPECIAL];
        memcpy(cell(&b, r, 0), &bits, 8);
        bits = special_bits[(r / 3) % N_SPECIAL]; /* repeats: the xor mode's "same" bit */
        memcpy(cell(&b, r, 1), &bits, 8);
        *cell(&b, r, 2) = (double)(INT64_C(1) << 53) - (double)r; /* big exact integers */
        *cell(&b, r, 3) = (double)(r % 2 ? INT64_MAX : INT64_MIN);
    }
    round_trip(&b, 1);
    for (size_t i = 0; i < N_SPECIAL; i++) { /* each as a constant series */
        for (int64_t r = 0; r < b.rows; r++)
            for (int64_t s = 0; s < b.series; s++)
                memcpy(cell(&b, r, s), &special_bits[i], 8);
        round_trip(&b, 0);
    }
    block_free(&b);
}

static void test_bad_arguments(void)
{
    int64_t ts[4] = { 1, 2, 3, 4 };
    double v[4] = { 1, 2, 3, 4 };
    int8_t st[4] = { 0, 0, 0, 0 };
    uint8_t out[256];
    CHECK(block_encode(ts, v, st, 0, 1, out, sizeof out, NULL) == -1, "no rows");
    CHECK(block_encode(ts, v, st, 4, -1, out, sizeof out, NULL) == -1, "negative series");
    CHECK(block_encode(NULL, v, st, 4, 1, out, sizeof out, NULL) == -1, "no ts");
    CHECK(block_encode(ts, v, st, 4, 1, out, 0, NULL) == -1, "no room");
    st[2] = 4;
    CHECK(block_encode(ts, v, st, 4, 1, out, sizeof out, NULL) == -1, "unknown status");
    st[2] = -1;
    CHECK(block_encode(ts, v, st, 4, 1, out, sizeof out, NULL) == -1, "negative status");
    st[2] = 0;
    CHECK(block_encode_bound(0, 1) == 0 && block_encode_bound(1, -1) == 0 &&
              block_encode_bound(INT64_MAX, 1) == 0,
          "bad shapes have no bound");
    int64_t len = block_encode(ts, v, st, 4, 1, out, sizeof out, NULL);
    CHECK(len > 0, "encode %lld", (long long)len);
    int64_t ts_out[4];
    double v_out[4];
    int8_t st_out[4];
    CHECK_RC(block_decode(out, (size_t)len, 4, 1, 0, 4, ts_out, v_out, st_out), 0);
    CHECK_RC(block_decode(out, sizeof out, 4, 1, 0, 4, ts_out, v_out, st_out), 0); /* slack after */
    CHECK_RC(block_decode(out, (size_t)len, 4, 1, -1, 4, ts_out, v_out, st_out), -1);
    CHECK_RC(block_decode(NULL, (size_t)len, 4, 1, 0, 4, ts_out, v_out, st_out), -1);
    CHECK_RC(block_decode_ts(out, (size_t)len, 4, 3, 5, ts_out), -1);
    CHECK_RC(block_decode(out, (size_t)len, 4, 1, 0, 4, ts_out, NULL, st_out), -1);
    /* another shape than the one encoded: wrong, but still inside the buffers */
    int64_t big_ts[8];
    double big_v[16];
    int8_t big_st[16];
    int rc = block_decode(out, (size_t)len, 8, 2, 0, 8, big_ts, big_v, big_st);
    CHECK(rc == -1 || rc == 0, "wrong shape: %d", rc);
    out[0] ^= 0x40;
    CHECK_RC(block_decode(out, (size_t)len, 4, 1, 0, 4, ts_out, v_out, st_out), -1);
}

/* The modes the encoder picked for a one-series block whose cells are all OK. */
static void modes_of(const block *b, int *ts_mode, int *value_mode, int *order)
{
    uint8_t enc[16384];
    int64_t len = block_encode(b->ts, b->v, b->st, b->rows, 1, enc, sizeof enc, NULL);
    reader r = { enc, enc + (len > 0 ? len : 0), 0 };
    get_byte(&r);
    uint64_t ts_len = get_varint(&r);
    *ts_mode = r.p < r.end ? *r.p : -1;
    r.p += ts_len < (uint64_t)(r.end - r.p) ? ts_len : 0;
    get_varint(&r);
    get_byte(&r); /* the status byte */
    *value_mode = (int)get_byte(&r);
    *order = (int)(get_byte(&r) >> 4);
    CHECK(len > 0 && !r.bad, "encode %lld", (long long)len);
}

/* Each mode is reached by the data it is meant for (and so is tested above). */
static void test_modes(void)
{
    block b = block_new(256, 1);
    int ts_mode, value_mode, order;
    struct { enum kind kind; int mode, order; } want[] = {
        { K_CONST, V_DECIMAL, 0 }, /* 1410: a width-0 decimal beats 8 bytes */
        { K_RANDOM_BITS, V_RAW, -1 }, { K_RATIO, V_XOR, -1 },
        { K_GAUGE, V_DECIMAL, 0 },  { K_POWER, V_DECIMAL, 0 },    { K_ENERGY, V_DECIMAL, 1 },
    };
    ts_regular(&b, 100000, 40);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fill_series(&b, 0, want[i].kind);
        modes_of(&b, &ts_mode, &value_mode, &order);
        CHECK(value_mode == want[i].mode && (want[i].order < 0 || order == want[i].order),
              "kind %d: mode %d order %d", (int)want[i].kind, value_mode, order);
        CHECK(ts_mode == TS_DELTAS, "jittered stamps: ts mode %d", ts_mode);
    }
    for (int64_t r = 0; r < b.rows; r++)
        b.v[r] = 0.9480690464047971; /* no m / 10^k with k <= 9 */
    modes_of(&b, &ts_mode, &value_mode, &order);
    CHECK(value_mode == V_CONST, "constant ratio: mode %d", value_mode);
    for (int64_t r = 0; r < b.rows; r++) { /* accelerating: constant second differences */
        b.ts[r] = 1000 + r * r * 7;
        b.v[r] = (double)(r * r * 3 - r) / 100.0;
    }
    modes_of(&b, &ts_mode, &value_mode, &order);
    CHECK(ts_mode == TS_DODS, "accelerating stamps: ts mode %d", ts_mode);
    CHECK(value_mode == V_DECIMAL && order == 2, "quadratic values: mode %d order %d", value_mode,
          order);
    for (int64_t r = 0; r < b.rows; r++) /* regular with rare jumps */
        b.ts[r] = 1000 + r * 100000 + (r % 64 == 0 ? INT64_C(1) << 40 : 0);
    modes_of(&b, &ts_mode, &value_mode, &order);
    CHECK(ts_mode == TS_VARINT, "rare jumps: ts mode %d", ts_mode);
    block_free(&b);
}

/* Many small blocks damaged in the ways a torn write leaves them: random bytes,
 * runs of 0xff and 0x80 (endless varints), zeroed tails, or no block at all. */
static void test_fuzz(void)
{
    for (int round = 0; round < 3000; round++) {
        block b = block_new(rnd_in(1, 40), rnd_in(1, 4));
        ts_regular(&b, rnd_in(0, 3) * 100000, rnd_in(0, 50));
        for (int64_t s = 0; s < b.series; s++) {
            fill_series(&b, s, (enum kind)(rnd() % N_KINDS));
            random_statuses(&b, s);
        }
        size_t cap = block_encode_bound(b.rows, b.series);
        uint8_t *enc = xmalloc(cap);
        int64_t len = block_encode(b.ts, b.v, b.st, b.rows, b.series, enc, cap, NULL);
        CHECK(len > 0, "encode %lld", (long long)len);
        if (len <= 0) {
            free(enc);
            block_free(&b);
            continue;
        }
        int how = (int)(rnd() % 4);
        int64_t at = rnd_in(0, len - 1), span = rnd_in(1, 12);
        for (int64_t i = at; i < len && i < at + span; i++) {
            if (how == 0)
                enc[i] = (uint8_t)rnd();
            else if (how == 1)
                enc[i] = rnd() & 1 ? 0xff : 0x80;
            else if (how == 2)
                enc[i] = 0;
        }
        if (how == 3)
            for (int64_t i = 0; i < len; i++)
                enc[i] = (uint8_t)rnd();
        uint8_t *copy = xmalloc((size_t)len);
        memcpy(copy, enc, (size_t)len);
        int64_t cells = b.rows * b.series, from = rnd_in(0, b.rows), to = rnd_in(from, b.rows);
        int64_t *ts = xmalloc((size_t)b.rows * 8);
        double *v = xmalloc((size_t)cells * 8);
        int8_t *st = xmalloc((size_t)cells);
        int rc = block_decode(copy, (size_t)len, b.rows, b.series, from, to, ts, v, st);
        CHECK(rc == 0 || rc == -1, "damaged: %d", rc);
        rc = block_decode_ts(copy, (size_t)len, b.rows, from, to, ts);
        CHECK(rc == 0 || rc == -1, "damaged ts: %d", rc);
        free(copy);
        free(ts);
        free(v);
        free(st);
        free(enc);
        block_free(&b);
    }
}

/* Bytes per sample of one series of each realistic kind in 256-row blocks
 * sampled every 100 ms with tens of microseconds of jitter. */
static void test_sizes(void)
{
    static const double limits[N_REALISTIC] = { 0.05, 0.3, 2.2, 1.6, 8.0 };
    const int64_t rows = 256, blocks = 20;
    size_t cap = block_encode_bound(rows, 1);
    uint8_t *enc = xmalloc(cap);
    int64_t ts_bytes = 0;
    for (int kind = 0; kind < N_REALISTIC; kind++) {
        int64_t series_bytes = 0;
        for (int64_t i = 0; i < blocks; i++) {
            block b = block_new(rows, 1);
            ts_regular(&b, 100000, 40);
            fill_series(&b, 0, (enum kind)kind);
            int64_t with = block_encode(b.ts, b.v, b.st, rows, 1, enc, cap, NULL);
            int64_t without = block_encode(b.ts, b.v, b.st, rows, 0, enc, cap, NULL);
            series_bytes += with - without;
            ts_bytes += without;
            round_trip(&b, 0);
            block_free(&b);
        }
        double per = (double)series_bytes / (double)(rows * blocks);
        printf("  %-22s %.3f bytes/sample (limit %.2f)\n", kind_names[kind], per, limits[kind]);
        CHECK(per <= limits[kind], "%s: %.3f bytes/sample", kind_names[kind], per);
    }
    double per_row = (double)ts_bytes / (double)(rows * blocks * N_REALISTIC);
    printf("  %-22s %.3f bytes/row (block header included)\n", "timestamps", per_row);
    CHECK(per_row <= 1.2, "timestamps: %.3f bytes/row", per_row);
    free(enc);
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int instrumented(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#else
    const char *preload = getenv("LD_PRELOAD");
    return preload != NULL && strstr(preload, "vgpreload") != NULL; /* valgrind */
#endif
}

/* ns per cell for a 256 x 192 block of the realistic kinds, a few cells not OK. */
static void test_speed(void)
{
    const int64_t rows = 256, series = 192;
    block b = block_new(rows, series);
    ts_regular(&b, 100000, 40);
    for (int64_t s = 0; s < series; s++) {
        fill_series(&b, s, (enum kind)(s % N_REALISTIC));
        if (s % 16 == 0)
            random_statuses(&b, s);
    }
    size_t cap = block_encode_bound(rows, series);
    uint8_t *enc = xmalloc(cap);
    block_summary *sum = xmalloc((size_t)series * sizeof *sum);
    int64_t *ts = xmalloc((size_t)rows * 8);
    double *v = xmalloc((size_t)(rows * series) * 8);
    int8_t *st = xmalloc((size_t)(rows * series));
    int reps = instrumented() ? 2 : 200;
    int64_t len = 0, t0 = now_ns();
    for (int i = 0; i < reps; i++)
        len = block_encode(b.ts, b.v, b.st, rows, series, enc, cap, sum);
    int64_t t1 = now_ns();
    int rc = 0;
    for (int i = 0; i < reps; i++)
        rc |= block_decode(enc, (size_t)len, rows, series, 0, rows, ts, v, st);
    int64_t t2 = now_ns();
    for (int i = 0; i < reps; i++)
        rc |= block_decode_ts(enc, (size_t)len, rows, 0, rows, ts);
    int64_t t3 = now_ns();
    CHECK(len > 0 && rc == 0, "encode %lld, decode %d", (long long)len, rc);
    CHECK(decoded_matches(&b, 0, rows, ts, v, st), "speed block differs");
    double cells = (double)(rows * series) * reps;
    double enc_ns = (double)(t1 - t0) / cells, dec_ns = (double)(t2 - t1) / cells;
    printf("  256 x 192 block: %lld bytes (%.3f bytes/cell); encode %.1f ns/cell, decode %.1f "
           "ns/cell, timestamps only %.1f ns/row%s\n",
           (long long)len, (double)len / (double)(rows * series), enc_ns, dec_ns,
           (double)(t3 - t2) / ((double)rows * reps), instrumented() ? " (instrumented)" : "");
    if (!instrumented()) {
        CHECK(enc_ns < 50, "encode %.1f ns/cell", enc_ns);
        CHECK(dec_ns < 50, "decode %.1f ns/cell", dec_ns);
    }
    free(enc);
    free(sum);
    free(ts);
    free(v);
    free(st);
    block_free(&b);
}

static void run(const char *name, void (*test)(void))
{
    int before = failures;
    test();
    printf("%-20s %s\n", name, failures == before ? "ok" : "FAILED");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    run("bad_arguments", test_bad_arguments);
    run("special_values", test_special_values);
    run("hostile_timestamps", test_hostile_timestamps);
    run("modes", test_modes);
    run("random_blocks", test_random_blocks);
    run("fuzz", test_fuzz);
    run("sizes", test_sizes);
    run("speed", test_speed);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
