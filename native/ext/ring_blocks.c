/*
 * ring_blocks.c -- a ring's compressed tier (ring_blocks.h): sealing blocks
 * into the arena's circular log, and reading them back.
 */
#define _GNU_SOURCE
#include "ring_blocks.h"

#include "ring.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static size_t words_of(size_t bytes)
{
    return (bytes + 7) / 8;
}

ring_blocks *ring_blocks_new(int64_t n_series, int64_t rows_per_block, int64_t keep)
{
    if (n_series <= 0 || rows_per_block <= 0 || keep <= 0 || keep > (INT64_MAX / 2) / rows_per_block)
        return NULL;
    ring_blocks *blocks = calloc(1, sizeof *blocks);
    if (blocks == NULL)
        return NULL;
    blocks->n_series = n_series;
    blocks->rows_per_block = rows_per_block;
    blocks->keep = keep;
    blocks->n_slots = keep + 1;
    blocks->scratch_bytes = block_encode_bound(rows_per_block, n_series);
    size_t block_words = words_of(blocks->scratch_bytes);
    /* the live blocks at their largest, and one more: the log never needs more */
    if ((size_t)blocks->n_slots > SIZE_MAX / 8 / (block_words + 1))
        goto fail;
    blocks->arena_words = (size_t)blocks->n_slots * block_words;
    blocks->mapped_bytes = blocks->arena_words * 8;
    /* reserved, not committed: pages count once a block is written on them */
    void *arena = mmap(NULL, blocks->mapped_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED)
        goto fail;
    blocks->arena = arena;
    blocks->entries = calloc((size_t)blocks->n_slots, sizeof *blocks->entries);
    blocks->summaries = calloc((size_t)blocks->n_slots * (size_t)n_series, sizeof *blocks->summaries);
    if (blocks->entries == NULL || blocks->summaries == NULL)
        goto fail;
    for (int64_t i = 0; i < blocks->n_slots; i++)
        blocks->entries[i].block = -1;
    return blocks;
fail:
    ring_blocks_free(blocks);
    return NULL;
}

void ring_blocks_free(ring_blocks *blocks)
{
    if (blocks == NULL)
        return;
    if (blocks->arena != NULL)
        munmap(blocks->arena, blocks->mapped_bytes);
    free(blocks->entries);
    free(blocks->summaries);
    free(blocks->scratch);
    free(blocks);
}

int64_t ring_blocks_sealed(const ring_blocks *blocks)
{
    return __atomic_load_n(&blocks->sealed, __ATOMIC_ACQUIRE);
}

int64_t ring_blocks_oldest(const ring_blocks *blocks)
{
    return __atomic_load_n(&blocks->oldest, __ATOMIC_ACQUIRE);
}

static block_entry *entry_of(const ring_blocks *blocks, int64_t block)
{
    return &blocks->entries[block % blocks->n_slots];
}

/* -- the writer -- */

/* Drop the oldest live block: readers see it gone before any byte of it is rewritten. */
static void drop_oldest(ring_blocks *blocks)
{
    int64_t oldest = blocks->oldest;
    const block_entry *e = entry_of(blocks, oldest);
    __atomic_store_n(&blocks->live_words, blocks->live_words - e->words, __ATOMIC_RELAXED);
    __atomic_store_n(&blocks->live_samples, blocks->live_samples - e->samples, __ATOMIC_RELAXED);
    __atomic_store_n(&blocks->oldest, oldest + 1, __ATOMIC_RELAXED);
    /* keeps the arena stores that follow from becoming visible before the drop */
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

/*
 * Where a block of that many words goes: at the front as soon as the space
 * before the oldest live block holds it, else after the newest; the oldest
 * blocks are dropped while neither has room.
 */
static int64_t place(ring_blocks *blocks, int64_t words)
{
    for (;;) {
        if (blocks->oldest == blocks->sealed)
            return 0;
        int64_t tail = entry_of(blocks, blocks->oldest)->offset;
        int64_t end = blocks->write_word;
        if (end > tail || (end == tail && blocks->live_words == 0)) {
            if (words <= tail)
                return 0;
            if ((size_t)(end + words) <= blocks->arena_words)
                return end;
        } else if (end + words <= tail) {
            return end;
        }
        drop_oldest(blocks);
    }
}

static void store_words(uint64_t *to, const uint8_t *from, size_t bytes)
{
    size_t whole = bytes / 8;
    for (size_t i = 0; i < whole; i++) {
        uint64_t w;
        memcpy(&w, from + i * 8, 8);
        __atomic_store_n(&to[i], w, __ATOMIC_RELAXED);
    }
    if (bytes % 8) {
        uint64_t w = 0;
        memcpy(&w, from + whole * 8, bytes % 8);
        __atomic_store_n(&to[whole], w, __ATOMIC_RELAXED);
    }
}

static void store_summary(block_summary *to, const block_summary *from)
{
    __atomic_store(&to->min, &from->min, __ATOMIC_RELAXED);
    __atomic_store(&to->max, &from->max, __ATOMIC_RELAXED);
    __atomic_store(&to->sum, &from->sum, __ATOMIC_RELAXED);
    __atomic_store_n(&to->count, from->count, __ATOMIC_RELAXED);
}

int ring_blocks_seal(ring_blocks *blocks, const int64_t *ts, const double *values, const int8_t *status)
{
    int64_t rows = blocks->rows_per_block, n_series = blocks->n_series;
    size_t encoded_room = words_of(blocks->scratch_bytes) * 8;
    if (blocks->scratch == NULL) {
        /* the encoded block and then the block's summaries, both reused from seal to seal */
        blocks->scratch = malloc(encoded_room + (size_t)n_series * sizeof(block_summary));
        if (blocks->scratch == NULL)
            return 0;
    }
    block_summary *summaries = (block_summary *)(void *)(blocks->scratch + encoded_room);
    int64_t bytes = block_encode(ts, values, status, rows, n_series, blocks->scratch, blocks->scratch_bytes,
                                 summaries);
    if (bytes < 0)
        return 0;
    int64_t min_ts = ts[0], max_ts = ts[0], samples = 0;
    for (int64_t r = 1; r < rows; r++) {
        min_ts = ts[r] < min_ts ? ts[r] : min_ts;
        max_ts = ts[r] > max_ts ? ts[r] : max_ts;
    }
    for (int64_t i = 0; i < rows * n_series; i++)
        samples += status[i] != DCGMC_SAMPLE_ABSENT;
    int64_t block = blocks->sealed;
    /* the slot this block takes held block - n_slots, older than any kept */
    while (blocks->sealed - blocks->oldest >= blocks->keep)
        drop_oldest(blocks);
    int64_t words = (int64_t)words_of((size_t)bytes);
    int64_t offset = place(blocks, words);
    store_words(blocks->arena + offset, blocks->scratch, (size_t)bytes);
    block_entry *e = entry_of(blocks, block);
    __atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&e->block, block, __ATOMIC_RELAXED);
    __atomic_store_n(&e->offset, offset, __ATOMIC_RELAXED);
    __atomic_store_n(&e->words, words, __ATOMIC_RELAXED);
    __atomic_store_n(&e->bytes, bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&e->min_ts, min_ts, __ATOMIC_RELAXED);
    __atomic_store_n(&e->max_ts, max_ts, __ATOMIC_RELAXED);
    __atomic_store_n(&e->samples, samples, __ATOMIC_RELAXED);
    block_summary *slot = blocks->summaries + (block % blocks->n_slots) * n_series;
    for (int64_t s = 0; s < n_series; s++)
        store_summary(&slot[s], &summaries[s]);
    __atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
    blocks->write_word = offset + words;
    __atomic_store_n(&blocks->live_words, blocks->live_words + words, __ATOMIC_RELAXED);
    __atomic_store_n(&blocks->live_samples, blocks->live_samples + samples, __ATOMIC_RELAXED);
    __atomic_store_n(&blocks->sealed, block + 1, __ATOMIC_RELEASE);
    return 1;
}

/* -- readers -- */

/* A consistent copy of block's entry; 0 when the slot holds another block now. */
static int load_entry(const ring_blocks *blocks, int64_t block, block_entry *out)
{
    const block_entry *e = entry_of(blocks, block);
    for (int tries = 0; tries < 64; tries++) {
        uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
        if (seq & 1)
            continue;
        out->block = __atomic_load_n(&e->block, __ATOMIC_RELAXED);
        out->offset = __atomic_load_n(&e->offset, __ATOMIC_RELAXED);
        out->words = __atomic_load_n(&e->words, __ATOMIC_RELAXED);
        out->bytes = __atomic_load_n(&e->bytes, __ATOMIC_RELAXED);
        out->min_ts = __atomic_load_n(&e->min_ts, __ATOMIC_RELAXED);
        out->max_ts = __atomic_load_n(&e->max_ts, __ATOMIC_RELAXED);
        out->samples = __atomic_load_n(&e->samples, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != seq)
            continue;
        return out->block == block && out->offset >= 0 && out->words >= 0 &&
               (size_t)(out->offset + out->words) <= blocks->arena_words && out->bytes <= out->words * 8;
    }
    return 0;
}

static void load_words(uint8_t *to, const uint64_t *from, size_t words)
{
    for (size_t i = 0; i < words; i++) {
        uint64_t w = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
        memcpy(to + i * 8, &w, 8);
    }
}

/* Whether block was still live after what was read of it (the fence orders those reads first). */
static int still_live(const ring_blocks *blocks, int64_t block)
{
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&blocks->oldest, __ATOMIC_RELAXED) <= block;
}

/* Block's bytes copied into *buffer (grown as needed): their length, or -1 when the block is gone. */
static int64_t copy_block(const ring_blocks *blocks, int64_t block, uint8_t **buffer, size_t *capacity)
{
    block_entry e;
    if (block < ring_blocks_oldest(blocks) || !load_entry(blocks, block, &e))
        return -1;
    size_t need = (size_t)e.words * 8;
    if (need > *capacity) {
        uint8_t *bigger = realloc(*buffer, need);
        if (bigger == NULL)
            return -2;
        *buffer = bigger;
        *capacity = need;
    }
    load_words(*buffer, blocks->arena + e.offset, (size_t)e.words);
    return still_live(blocks, block) ? e.bytes : -1;
}

int64_t ring_blocks_copy(const ring_blocks *blocks, int64_t first, int64_t end, int64_t *ts_out,
                         double *values_out, int8_t *status_out)
{
    int64_t rows = blocks->rows_per_block, n_series = blocks->n_series;
    uint8_t *buffer = NULL;
    size_t capacity = 0;
    int64_t torn = 0;
    for (int64_t row = first; row < end;) {
        int64_t block = row / rows, from = row % rows;
        int64_t to = (end - block * rows) < rows ? end - block * rows : rows;
        int64_t i = row - first;
        int64_t bytes = copy_block(blocks, block, &buffer, &capacity);
        if (bytes == -2) {
            free(buffer);
            return -1;
        }
        if (bytes < 0 || block_decode(buffer, (size_t)bytes, rows, n_series, from, to, ts_out + i,
                                      values_out + i * n_series, status_out + i * n_series) != 0) {
            /* gone, or rewritten while read: so is every row before it */
            torn = i + (to - from);
        }
        row += to - from;
    }
    free(buffer);
    return torn;
}

/* Block's summaries and time bounds, read under its entry's sequence word; 0 when it is gone. */
static int load_summaries(const ring_blocks *blocks, int64_t block, block_summary *out, int64_t *min_ts,
                          int64_t *max_ts)
{
    const block_entry *e = entry_of(blocks, block);
    const block_summary *slot = blocks->summaries + (block % blocks->n_slots) * blocks->n_series;
    for (int tries = 0; tries < 64; tries++) {
        uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
        if (seq & 1)
            continue;
        int64_t which = __atomic_load_n(&e->block, __ATOMIC_RELAXED);
        *min_ts = __atomic_load_n(&e->min_ts, __ATOMIC_RELAXED);
        *max_ts = __atomic_load_n(&e->max_ts, __ATOMIC_RELAXED);
        for (int64_t s = 0; s < blocks->n_series; s++) {
            __atomic_load(&slot[s].min, &out[s].min, __ATOMIC_RELAXED);
            __atomic_load(&slot[s].max, &out[s].max, __ATOMIC_RELAXED);
            __atomic_load(&slot[s].sum, &out[s].sum, __ATOMIC_RELAXED);
            out[s].count = __atomic_load_n(&slot[s].count, __ATOMIC_RELAXED);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != seq)
            continue;
        return which == block && still_live(blocks, block);
    }
    return 0;
}

int64_t ring_blocks_summaries(const ring_blocks *blocks, int64_t first, int64_t end, block_summary *out,
                              int64_t *min_ts, int64_t *max_ts)
{
    int64_t torn = 0;
    for (int64_t block = first; block < end; block++) {
        int64_t i = block - first;
        if (block < ring_blocks_oldest(blocks) || block >= ring_blocks_sealed(blocks) ||
            !load_summaries(blocks, block, out + i * blocks->n_series, &min_ts[i], &max_ts[i]))
            torn = i + 1;
    }
    return torn;
}

int64_t ring_blocks_find_since(const ring_blocks *blocks, int64_t end, int64_t since)
{
    int64_t rows = blocks->rows_per_block;
    int64_t *ts = malloc((size_t)rows * sizeof *ts);
    uint8_t *buffer = NULL;
    size_t capacity = 0;
    int64_t row = end;
    if (ts == NULL)
        return row;
    int64_t oldest = ring_blocks_oldest(blocks);
    while (row > oldest * rows) {
        int64_t block = (row - 1) / rows;
        block_entry e;
        if (!load_entry(blocks, block, &e))
            break;
        if (e.min_ts >= since && still_live(blocks, block)) {
            row = block * rows;   /* the whole block is at or after since */
            continue;
        }
        int64_t bytes = copy_block(blocks, block, &buffer, &capacity);
        if (bytes < 0 || block_decode_ts(buffer, (size_t)bytes, rows, 0, rows, ts) != 0)
            break;
        while (row > block * rows && ts[row - 1 - block * rows] >= since)
            row--;
        if (row > block * rows)
            break;
    }
    free(ts);
    free(buffer);
    return row;
}

int64_t ring_blocks_bytes(const ring_blocks *blocks)
{
    int64_t words = __atomic_load_n(&blocks->live_words, __ATOMIC_RELAXED);
    int64_t live = ring_blocks_sealed(blocks) - ring_blocks_oldest(blocks);
    /* the index and summaries of blocks not written yet are untouched pages, not memory */
    return words * 8 + (live > 0 ? live : 0) * (int64_t)(sizeof(block_entry) +
                                                         (size_t)blocks->n_series * sizeof(block_summary));
}

int64_t ring_blocks_samples(const ring_blocks *blocks)
{
    return __atomic_load_n(&blocks->live_samples, __ATOMIC_RELAXED);
}
