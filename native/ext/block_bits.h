/*
 * block_bits.h -- the byte and bit primitives of block_codec.c: varints, zigzag,
 * little-endian words and bit-packing, written so that the encoded bytes do not
 * depend on the host's byte order and no read goes past the end it is given.
 * Included by block_codec.c only; everything is static inline.
 */
#ifndef DCGM_COLLECTOR_BLOCK_BITS_H
#define DCGM_COLLECTOR_BLOCK_BITS_H

#include <stdint.h>
#include <string.h>

/* ---- small integer helpers ----------------------------------------------------- */

static inline uint64_t zz(uint64_t v) /* v: an int64 in two's complement */
{
    return (v << 1) ^ (0 - (v >> 63));
}

static inline uint64_t unzz(uint64_t u)
{
    return (u >> 1) ^ (0 - (u & 1));
}

static inline int64_t as_signed(uint64_t u) /* without the implementation-defined cast */
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static inline unsigned varint_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline unsigned bit_width(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

static inline uint64_t packed_bytes(uint64_t n, unsigned width)
{
    return (n * width + 7) / 8;
}

static inline uint64_t double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* ---- writing: the caller has checked the room for the whole section ------------ */

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}

typedef struct bit_writer {
    uint8_t *p;
    uint64_t acc;
    unsigned n; /* bits pending in acc, below 8 between calls */
} bit_writer;

static inline void bw_put32(bit_writer *b, uint64_t v, unsigned width) /* width <= 32 */
{
    b->acc |= (v & ((UINT64_C(1) << width) - 1)) << b->n;
    b->n += width;
    while (b->n >= 8) {
        *b->p++ = (uint8_t)b->acc;
        b->acc >>= 8;
        b->n -= 8;
    }
}

static inline void bw_put(bit_writer *b, uint64_t v, unsigned width) /* width <= 64 */
{
    if (width > 32) {
        bw_put32(b, v, 32);
        bw_put32(b, v >> 32, width - 32);
    } else {
        bw_put32(b, v, width);
    }
}

static inline uint8_t *bw_end(bit_writer *b)
{
    if (b->n)
        *b->p++ = (uint8_t)b->acc;
    return b->p;
}

/* ---- reading: every access checked against the end ---------------------------- */

typedef struct reader {
    const uint8_t *p, *end;
    int bad;
} reader;

static inline uint64_t get_varint(reader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            break;
        uint8_t byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

static inline unsigned get_byte(reader *r)
{
    if (r->p >= r->end) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}

static inline uint64_t get_u64(reader *r)
{
    if (r->end - r->p < 8) {
        r->bad = 1;
        r->p = r->end;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    return v;
}

typedef struct bit_reader {
    const uint8_t *p, *end;
    uint64_t acc;
    unsigned n; /* bits in acc */
    int bad;    /* a read went past end */
} bit_reader;

static inline uint64_t br_get32(bit_reader *b, unsigned width) /* width <= 32 */
{
    if (b->n < width) {
        if (b->end - b->p >= 4) {
            uint64_t w = (uint64_t)b->p[0] | (uint64_t)b->p[1] << 8 | (uint64_t)b->p[2] << 16 |
                         (uint64_t)b->p[3] << 24;
            b->acc |= w << b->n;
            b->p += 4;
            b->n += 32;
        } else {
            while (b->n < width) {
                if (b->p < b->end)
                    b->acc |= (uint64_t)*b->p++ << b->n;
                else
                    b->bad = 1;
                b->n += 8;
            }
        }
    }
    uint64_t v = b->acc & ((UINT64_C(1) << width) - 1);
    b->acc = width < 64 ? b->acc >> width : 0;
    b->n -= width;
    return v;
}

static inline uint64_t br_get(bit_reader *b, unsigned width) /* width <= 64 */
{
    if (width > 32) {
        uint64_t low = br_get32(b, 32);
        return low | br_get32(b, width - 32) << 32;
    }
    return br_get32(b, width);
}

#endif /* DCGM_COLLECTOR_BLOCK_BITS_H */
