/*
 * ring_blocks.h -- a ring's compressed tier: the sealed blocks of its older rows.
 *
 * A ring whose retention is longer than two blocks keeps its newest rows in
 * its caller-owned arrays (ring.h), as a plain ring of 2 * B rows, and every
 * aligned run of B rows, once complete, as one block encoded by
 * block_codec.h.  Block k holds rows [k * B, (k + 1) * B); the tier keeps the
 * newest ceil(retention / B) blocks, so that the ring holds at least its
 * retention of rows, and memory grows with what the blocks hold, not with
 * the retention.
 *
 * The encoded bytes live in one arena reserved at the worst case and
 * touched only as blocks are written (so only what is written is resident),
 * laid out as a circular log: a new block goes to the front of the arena as
 * soon as the oldest blocks there were dropped, so the log stays as long as
 * the live blocks need.  Nothing is freed while the ring lives, so a reader
 * can always read, and it checks afterwards whether what it read was still
 * live:
 *
 *   Writer, sealing block k: drops blocks (oldest = first live block,
 *   release fence) before writing any byte over them; writes the bytes and
 *   the block's index entry under the entry's sequence word; then
 *   sealed = k + 1 (release).
 *   Reader: reads an entry under its sequence word, copies the block's bytes
 *   out, acquire fence, then oldest: the copy is good when oldest <= k.
 *
 * Every access to the arena and the index is an __atomic word access, so
 * the races the protocol tolerates are not undefined behaviour.  Nothing
 * here is part of the extension's interface to Python.
 */
#ifndef DCGM_COLLECTOR_RING_BLOCKS_H
#define DCGM_COLLECTOR_RING_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "block_codec.h"

/* Rows per block: long enough that the per-block summaries and headers cost
 * little per sample, short enough that a reader decodes little it does not need. */
#ifndef RING_BLOCK_ROWS
#define RING_BLOCK_ROWS 256
#endif

typedef struct block_entry {
    uint64_t seq;        /* odd while the writer rewrites the entry */
    int64_t block;       /* which block the entry holds now */
    int64_t offset;      /* in arena words */
    int64_t words;
    int64_t bytes;
    int64_t min_ts, max_ts;
    int64_t samples;     /* cells of the block that are not ABSENT */
} block_entry;

typedef struct ring_blocks {
    int64_t rows_per_block;
    int64_t n_series;
    int64_t keep;               /* blocks kept */
    int64_t n_slots;            /* index entries: keep + 1 */
    block_entry *entries;       /* entry of block k at k % n_slots */
    block_summary *summaries;   /* [n_slots * n_series], under the entry's sequence word */
    uint64_t *arena;
    size_t arena_words;
    size_t mapped_bytes;
    int64_t sealed;             /* blocks ever sealed (atomic) */
    int64_t oldest;             /* first live block (atomic) */
    /* writer only */
    int64_t write_word;         /* where the log goes on */
    uint8_t *scratch;           /* one encoded block */
    size_t scratch_bytes;
    int64_t live_words;         /* words the live blocks hold (atomic) */
    int64_t live_samples;       /* not-ABSENT cells the live blocks hold (atomic) */
} ring_blocks;

/* A tier for rows of n_series cells keeping keep blocks of rows_per_block; NULL when out of memory. */
ring_blocks *ring_blocks_new(int64_t n_series, int64_t rows_per_block, int64_t keep);
void ring_blocks_free(ring_blocks *blocks);

/* Writer: seal the next block from its rows (row-major, as the ring stores them). 0 when out of memory. */
int ring_blocks_seal(ring_blocks *blocks, const int64_t *ts, const double *values, const int8_t *status);

/* Blocks ever sealed, and the first live one (atomic loads). */
int64_t ring_blocks_sealed(const ring_blocks *blocks);
int64_t ring_blocks_oldest(const ring_blocks *blocks);

/*
 * Reader: rows [first, end) (all below sealed * B) into the outputs (row
 * index i at ts_out[i], values_out[i * n_series], ...).  Returns how many
 * leading rows are not valid: those of blocks dropped before or while they
 * were read.  -1 when out of memory.
 */
int64_t ring_blocks_copy(const ring_blocks *blocks, int64_t first, int64_t end, int64_t *ts_out,
                         double *values_out, int8_t *status_out);

/*
 * Reader: scanning back from row end - 1 (end <= sealed * B) while ts >=
 * since, the first row of the run; rows whose block is gone stop the scan.
 */
int64_t ring_blocks_find_since(const ring_blocks *blocks, int64_t end, int64_t since);

/*
 * Reader: the summaries of blocks [first, end) into out[(block - first) *
 * n_series + series], and each block's least and greatest ts.  Returns how
 * many leading blocks are not valid (gone, or not sealed).
 */
int64_t ring_blocks_summaries(const ring_blocks *blocks, int64_t first, int64_t end, block_summary *out,
                              int64_t *min_ts, int64_t *max_ts);

/* Bytes the tier holds now (live blocks, their index and summaries), and the cells in them. */
int64_t ring_blocks_bytes(const ring_blocks *blocks);
int64_t ring_blocks_samples(const ring_blocks *blocks);

#endif /* DCGM_COLLECTOR_RING_BLOCKS_H */
