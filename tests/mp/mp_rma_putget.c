/* Put and get between two processes, every byte checked at both ends.
 *
 * The parent (initiator) reaches memory of a forked target in three phases:
 *   reg     one malloc'ed buffer of 256 MiB + 64 KiB registered with ferry_mem_register
 *           (4 KiB guard bytes on each side, outside the registration);
 *   multi   one registration of six separately malloc'ed, non-contiguous pieces of uneven
 *           sizes (1, 4093, 65536, 3, 1 MiB + 5, 8192 bytes, 64 guard bytes around each);
 *   alloc   memory from ferry_mem_alloc (256 MiB + 64 KiB + 100 bytes: the tail of its last
 *           page is outside the region and must stay zero).
 * Each region is filled with a background pattern (of region offsets). Each step of the
 * schedule writes a pattern of its own (seeded by its sequence number) with ferry_put or
 * ferry_putv, waits for local completion, flushes (ferry_ep_flush or ferry_worker_flush, in
 * turn; every fourth put has no completion at all and relies on the flush), reads the data back
 * with ferry_get/getv and checks it; then the target checks its memory (the step's ranges hold
 * the step's bytes in order, 64 bytes around each range and every guard byte are untouched),
 * restores the background, and the initiator reads the ranges again and checks the background.
 * At the end of each phase the target checks the whole region.
 *
 * Steps: sizes 0, 1, 8, 63 .. 65, 255 .. 257, 4095, 4096, 16391, 24576, 24577, 32773, 65536,
 * 1 MiB, 2 MiB, 2 MiB + 1, 3 MiB + 7 at three offsets (0, an odd one, and
 * ending at the region's last byte), 256 MiB once (put, and two gets); iov shapes: 1000 x 64 B
 * and 3000 x 24 B local pieces against one remote range, uneven local pieces (3, 4093, 1,
 * 65536), pieces and ranges of length 0, several remote ranges out of order, 1500 remote ranges,
 * many pieces against many ranges, 6 MiB over two ranges; on the multi-piece region, ranges
 * across every boundary between its pieces.
 *
 * Paths: run normally, ferry uses cross-memory attach for registered memory and the mapping for
 * ferry_mem_alloc memory; with FERRY_SHM_CMA=off (a second registration of this test) the
 * target's progress performs the accesses to registered memory. A "hold" step at the start of
 * the reg and alloc phases tells which: the target stops making progress (it blocks reading its
 * channel) while the initiator puts and gets; the direct paths must complete meanwhile, the
 * fallback must not (it cannot: nobody serves it) and completes once the target goes on.
 *
 * ferry_rkey_ptr: on the peer's ferry_mem_alloc memory it returns a pointer (stores through it
 * are seen by the owner, the owner's stores through it by us; the last byte is reachable, one
 * past is FERRY_ERR_ACCESS); on registered memory FERRY_ERR_UNSUPPORTED. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ft.h"
#include "ft_rma.h"

enum { PG_INITIATOR = 11, PG_TARGET = 12 };
enum { PG_TAG_CMD = 0x434d4421, PG_TAG_ACK = 0x41434b21 };
enum {
    PG_CMD_PHASE_BEGIN = 1,
    PG_CMD_CHECK,
    PG_CMD_HOLD,
    PG_CMD_RELEASE,
    PG_CMD_PTR_CHECK,
    PG_CMD_PTR_DONE,
    PG_CMD_PHASE_END,
    PG_CMD_DONE,
};

typedef enum pg_phase { PG_REG, PG_MULTI, PG_ALLOC, PG_PHASES } pg_phase_t;
static const char *const pg_phase_names[PG_PHASES] = {"reg", "multi", "alloc"};

#define MIB (1024u * 1024u)
#define PG_REG_LENGTH (256ull * MIB + 65536)
#define PG_ALLOC_LENGTH (256ull * MIB + 65536 + 100)
#define PG_REG_GUARD 4096u
#define PG_MULTI_GUARD 64u
#define PG_GUARD_BYTE 0xc3
#define PG_WINDOW 64u /* bytes checked around each range */
#define PG_TIMEOUT_MS 60000

static const size_t pg_multi_pieces[] = {1, 4093, 65536, 3, MIB + 5, 8192};
#define PG_MULTI_COUNT (sizeof(pg_multi_pieces) / sizeof(pg_multi_pieces[0]))

/* 65 .. 3 MiB + 7: each side of the bounds of fy_copy_bulk's routines on mapped memory (vector
 * loop from 256 bytes to half the L1D: 16 or 24 KiB here; REP MOVSB to twice the L2: 2 MiB) */
static const uint64_t pg_sizes[] = {
    0,     1,     8,     63,    64,    65,  255,     256,         257,         4095,        4096,
    16391, 24576, 24577, 32773, 65536, MIB, 2 * MIB, 2 * MIB + 1, 3 * MIB + 7, 256ull * MIB};
#define PG_NSIZES (sizeof(pg_sizes) / sizeof(pg_sizes[0]))

/* ------------------------------------------------------------------ the schedule */

typedef struct pg_step {
    uint32_t seq;
    pg_phase_t phase;
    bool vector; /* putv/getv, else put/get */
    bool hold;   /* the put and get run while the target makes no progress */
    char shape[64];
    size_t local_count;
    size_t *local_lens;
    size_t remote_count;
    ferry_remote_iov_t *remote;
    uint64_t total;
} pg_step_t;

typedef struct pg_schedule {
    pg_step_t *steps;
    size_t count;
    size_t cap;
} pg_schedule_t;

static uint64_t pg_region_length(pg_phase_t phase)
{
    uint64_t total = 0;
    switch (phase) {
    case PG_REG:
        return PG_REG_LENGTH;
    case PG_ALLOC:
        return PG_ALLOC_LENGTH;
    default:
        for (size_t i = 0; i < PG_MULTI_COUNT; i++)
            total += pg_multi_pieces[i];
        return total;
    }
}

static int pg_range_cmp(const void *a, const void *b)
{
    const ferry_remote_iov_t *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Add a step: local pieces and remote ranges are copied. */
static pg_step_t *pg_add(pg_schedule_t *s, pg_phase_t phase, bool vector, const char *shape,
                         const size_t *local_lens, size_t local_count,
                         const ferry_remote_iov_t *remote, size_t remote_count)
{
    uint64_t ltotal = 0, rtotal = 0, length = pg_region_length(phase);
    if (s->count == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->steps = realloc(s->steps, s->cap * sizeof(*s->steps));
        FT_CHECK(s->steps != NULL, "out of memory");
    }
    pg_step_t *st = &s->steps[s->count];
    memset(st, 0, sizeof(*st));
    st->seq = (uint32_t)s->count;
    st->phase = phase;
    st->vector = vector;
    snprintf(st->shape, sizeof(st->shape), "%s", shape);
    st->local_count = local_count;
    st->local_lens = malloc(local_count * sizeof(size_t));
    st->remote_count = remote_count;
    st->remote = malloc(remote_count * sizeof(ferry_remote_iov_t));
    FT_CHECK(st->local_lens != NULL && st->remote != NULL, "out of memory");
    memcpy(st->local_lens, local_lens, local_count * sizeof(size_t));
    memcpy(st->remote, remote, remote_count * sizeof(ferry_remote_iov_t));
    for (size_t i = 0; i < local_count; i++)
        ltotal += local_lens[i];
    for (size_t i = 0; i < remote_count; i++) {
        FT_CHECK(remote[i].offset + remote[i].length <= length,
                 "schedule: range %zu of %s is outside the %s region", i, shape,
                 pg_phase_names[phase]);
        rtotal += remote[i].length;
    }
    FT_CHECK(ltotal == rtotal, "schedule: %s: %llu local bytes, %llu remote", shape,
             (unsigned long long)ltotal, (unsigned long long)rtotal);
    ferry_remote_iov_t *sorted = malloc(remote_count * sizeof(*sorted));
    FT_CHECK(sorted != NULL, "out of memory");
    memcpy(sorted, remote, remote_count * sizeof(*sorted));
    qsort(sorted, remote_count, sizeof(*sorted), pg_range_cmp);
    for (size_t i = 1; i < remote_count; i++)
        FT_CHECK(sorted[i - 1].offset + sorted[i - 1].length <= sorted[i].offset,
                 "schedule: ranges of %s overlap", shape);
    free(sorted);
    st->total = ltotal;
    s->count++;
    return st;
}

static void pg_add_contig(pg_schedule_t *s, pg_phase_t phase, uint64_t offset, uint64_t size,
                          bool hold)
{
    char shape[64];
    size_t len = (size_t)size;
    ferry_remote_iov_t r = {.offset = offset, .length = len};
    snprintf(shape, sizeof(shape), "%s%llu bytes at offset %llu", hold ? "hold: " : "",
             (unsigned long long)size, (unsigned long long)offset);
    pg_add(s, phase, false, shape, &len, 1, &r, 1)->hold = hold;
}

/* Local pieces of cyclic lengths (the last one cut) covering total bytes. */
static size_t pg_cyclic_pieces(size_t *out, size_t cap, const size_t *cycle, size_t cycle_len,
                               uint64_t total)
{
    size_t n = 0;
    uint64_t done = 0;
    while (done < total) {
        FT_CHECK(n < cap, "schedule: too many pieces");
        size_t len = cycle[n % cycle_len];
        if (len > total - done)
            len = (size_t)(total - done);
        out[n++] = len;
        done += len;
    }
    return n;
}

/* The vector shapes of the reg and alloc phases. */
static void pg_add_vectors(pg_schedule_t *s, pg_phase_t phase)
{
    static size_t lens[4000];
    static ferry_remote_iov_t ranges[2000];
    uint64_t length = pg_region_length(phase);

    for (size_t i = 0; i < 1000; i++)
        lens[i] = 64;
    ranges[0] = (ferry_remote_iov_t){.offset = 100003, .length = 64000};
    pg_add(s, phase, true, "1000 x 64 B local, one range", lens, 1000, ranges, 1);

    for (size_t i = 0; i < 3000; i++)
        lens[i] = 24;
    ranges[0] = (ferry_remote_iov_t){.offset = 7, .length = 72000};
    pg_add(s, phase, true, "3000 x 24 B local, one range", lens, 3000, ranges, 1);

    static const size_t uneven[] = {3, 4093, 1, 65536};
    ranges[0] = (ferry_remote_iov_t){.offset = 7, .length = 3 + 4093 + 1 + 65536};
    pg_add(s, phase, true, "uneven local (3, 4093, 1, 65536), one range", uneven, 4, ranges, 1);

    static const size_t zeros[] = {0, 10, 0, 0, 22, 0};
    static const ferry_remote_iov_t zranges[] = {{50, 0}, {60, 12}, {200, 20}, {300, 0}};
    pg_add(s, phase, true, "empty pieces and ranges", zeros, 6, zranges, 4);

    static const size_t three[] = {70000, 5, 100000};
    static const ferry_remote_iov_t four[] = {
        {500000, 1}, {7, 4096}, {200001, 100000}, {10000, 65908}};
    pg_add(s, phase, true, "3 local pieces, 4 remote ranges out of order", three, 3, four, 4);

    for (size_t i = 0; i < 1500; i++)
        ranges[i] = (ferry_remote_iov_t){.offset = 5 + 33 * (uint64_t)i, .length = 9};
    lens[0] = 1500 * 9;
    pg_add(s, phase, true, "contiguous local, 1500 x 9 B remote ranges", lens, 1, ranges, 1500);

    /* many against many: ranges of 5, 100, 1 bytes with gaps of 3, pieces of 1, 7, 64, 3 */
    static const size_t rcycle[] = {5, 100, 1}, lcycle[] = {1, 7, 64, 3};
    uint64_t off = 1, total = 0;
    size_t nr = 0;
    for (; nr < 1200; nr++) {
        ranges[nr] = (ferry_remote_iov_t){.offset = off, .length = rcycle[nr % 3]};
        off += rcycle[nr % 3] + 3;
        total += rcycle[nr % 3];
    }
    size_t nl = pg_cyclic_pieces(lens, 4000, lcycle, 4, total);
    pg_add(s, phase, true, "many local pieces, 1200 remote ranges", lens, nl, ranges, nr);

    static const size_t big[] = {MIB + 3, 5 * MIB - 3};
    ferry_remote_iov_t bigr[] = {{length - 4 * MIB, 4 * MIB}, {0, 2 * MIB}};
    pg_add(s, phase, true, "6 MiB: 2 local pieces, 2 remote ranges", big, 2, bigr, 2);
}

static void pg_add_sizes(pg_schedule_t *s, pg_phase_t phase)
{
    uint64_t length = pg_region_length(phase);
    for (size_t i = 0; i < PG_NSIZES; i++) {
        uint64_t n = pg_sizes[i];
        if (n >= 16 * MIB) {
            pg_add_contig(s, phase, length - n, n, false);
            continue;
        }
        pg_add_contig(s, phase, 0, n, false);
        pg_add_contig(s, phase, 3 * 4096 + 13, n, false);
        pg_add_contig(s, phase, length - n, n, false);
    }
    pg_add_contig(s, phase, length, 0, false); /* 0 bytes at the very end */
}

static void pg_add_multi(pg_schedule_t *s)
{
    uint64_t ends[PG_MULTI_COUNT], end = 0, total = pg_region_length(PG_MULTI);
    static size_t lens[2000];
    for (size_t i = 0; i < PG_MULTI_COUNT; i++) {
        end += pg_multi_pieces[i];
        ends[i] = end;
    }
    pg_add_contig(s, PG_MULTI, 0, total, false);
    pg_add_contig(s, PG_MULTI, 0, 4094, false);
    pg_add_contig(s, PG_MULTI, 4093, 65536 + 3 + 10, false);
    pg_add_contig(s, PG_MULTI, total - 8193, 8193, false);
    pg_add_contig(s, PG_MULTI, total, 0, false);
    for (size_t i = 0; i + 1 < PG_MULTI_COUNT; i++) {
        pg_add_contig(s, PG_MULTI, ends[i] - 1, 2, false);
        pg_add_contig(s, PG_MULTI, ends[i], 1, false);
        if (ends[i] >= 8)
            pg_add_contig(s, PG_MULTI, ends[i] - 8, 16, false);
    }
    /* ranges across the boundaries, uneven local pieces */
    ferry_remote_iov_t r[] = {{total - 100, 100},
                              {0, 4100},
                              {69500, 100},
                              {ends[1] + 65536 - 1, 11},
                              {ends[3] + MIB - 300, 500}};
    static const size_t cycle[] = {1, 2, 3, 500, 17, 64};
    uint64_t rt = 0;
    for (size_t i = 0; i < 5; i++)
        rt += r[i].length;
    size_t nl = pg_cyclic_pieces(lens, 2000, cycle, 6, rt);
    pg_add(s, PG_MULTI, true, "uneven pieces, 5 ranges across piece boundaries", lens, nl, r, 5);
    /* 1000 x 64 B against one range across a boundary */
    for (size_t i = 0; i < 1000; i++)
        lens[i] = 64;
    ferry_remote_iov_t one = {4000, 64000};
    pg_add(s, PG_MULTI, true, "1000 x 64 B local, one range across a boundary", lens, 1000, &one,
           1);
    /* the pieces in reverse order as remote ranges, 2 local pieces */
    ferry_remote_iov_t rev[PG_MULTI_COUNT];
    for (size_t i = 0; i < PG_MULTI_COUNT; i++) {
        size_t j = PG_MULTI_COUNT - 1 - i;
        rev[i] = (ferry_remote_iov_t){.offset = ends[j] - pg_multi_pieces[j],
                                      .length = pg_multi_pieces[j]};
    }
    size_t two[] = {12345, (size_t)total - 12345};
    pg_add(s, PG_MULTI, true, "the pieces in reverse order", two, 2, rev, PG_MULTI_COUNT);
}

static void pg_build(pg_schedule_t *s)
{
    /* reg: the hold step first (the connection is up by then: see pg_run_phase) */
    pg_add_contig(s, PG_REG, 8192 + 5, 65536, true);
    pg_add_sizes(s, PG_REG);
    pg_add_vectors(s, PG_REG);
    pg_add_multi(s);
    pg_add_contig(s, PG_ALLOC, 8192 + 5, 65536, true);
    pg_add_sizes(s, PG_ALLOC);
    pg_add_vectors(s, PG_ALLOC);
}

/* ------------------------------------------------------------------ patterns */

static uint64_t pg_bg_seed(pg_phase_t phase)
{
    return ft_pattern_seed(PG_TARGET, 0xb6000000u + phase, 0);
}

static uint64_t pg_step_seed(const pg_step_t *st)
{
    return ft_pattern_seed(PG_INITIATOR, st->seq, st->total);
}

/* Walk a step's message: local pieces against remote ranges, chunk by chunk. */
typedef void (*pg_chunk_fn_t)(void *arg, uint8_t *local, size_t len, uint64_t msg_offset,
                              uint64_t region_offset);

static void pg_walk(const pg_step_t *st, const ferry_iov_t *local, pg_chunk_fn_t fn, void *arg)
{
    size_t li = 0, loff = 0;
    uint64_t msg = 0;
    for (size_t r = 0; r < st->remote_count; r++) {
        uint64_t roff = st->remote[r].offset;
        size_t left = st->remote[r].length;
        while (left > 0) {
            while (local[li].length == loff) {
                li++;
                loff = 0;
            }
            size_t n = local[li].length - loff;
            if (n > left)
                n = left;
            fn(arg, (uint8_t *)local[li].buffer + loff, n, msg, roff);
            loff += n;
            left -= n;
            roff += n;
            msg += n;
        }
    }
}

/* ------------------------------------------------------------------ the target's memory */

typedef struct pg_region {
    pg_phase_t phase;
    ferry_mem_t *mem;
    uint64_t length;
    size_t count;
    uint8_t *block[PG_MULTI_COUNT]; /* malloc'ed: guard, piece, guard */
    uint8_t *piece[PG_MULTI_COUNT];
    size_t len[PG_MULTI_COUNT];
    uint64_t start[PG_MULTI_COUNT];
    size_t guard;
    size_t alloc_tail; /* alloc: bytes of the last page after the region */
} pg_region_t;

/* The piece holding offset: pointer and contiguous bytes from there. */
static uint8_t *pg_region_at(const pg_region_t *r, uint64_t offset, size_t *avail_p)
{
    for (size_t i = 0; i < r->count; i++) {
        if (offset >= r->start[i] && offset - r->start[i] < r->len[i]) {
            *avail_p = r->len[i] - (size_t)(offset - r->start[i]);
            return r->piece[i] + (offset - r->start[i]);
        }
    }
    ft_fail_at(__FILE__, __LINE__, "offset %llu is outside the region", (unsigned long long)offset);
}

/* Check [offset, offset + len) of the region against the pattern seed at msg_offset.. */
static void pg_region_check(const pg_region_t *r, uint64_t offset, uint64_t len, uint64_t seed,
                            uint64_t msg_offset, const char *what)
{
    char desc[256];
    while (len > 0) {
        size_t avail;
        uint8_t *p = pg_region_at(r, offset, &avail);
        size_t n = avail < len ? avail : (size_t)len;
        snprintf(desc, sizeof(desc), "%s (region offset %llu, %zu bytes)", what,
                 (unsigned long long)offset, n);
        ft_pattern_check(p, n, seed, msg_offset, desc);
        offset += n;
        msg_offset += n;
        len -= n;
    }
}

static void pg_region_fill(pg_region_t *r, uint64_t offset, uint64_t len, uint64_t seed,
                           uint64_t msg_offset)
{
    while (len > 0) {
        size_t avail;
        uint8_t *p = pg_region_at(r, offset, &avail);
        size_t n = avail < len ? avail : (size_t)len;
        ft_pattern_fill(p, n, seed, msg_offset);
        offset += n;
        msg_offset += n;
        len -= n;
    }
}

static void pg_region_check_guards(const pg_region_t *r, const char *when)
{
    for (size_t i = 0; i < r->count && r->guard > 0; i++) {
        for (size_t g = 0; g < r->guard; g++) {
            FT_CHECK(r->block[i][g] == PG_GUARD_BYTE,
                     "%s: guard byte %zu before piece %zu of the %s region is 0x%02x", when,
                     r->guard - g, i, pg_phase_names[r->phase], r->block[i][g]);
            FT_CHECK(r->piece[i][r->len[i] + g] == PG_GUARD_BYTE,
                     "%s: guard byte %zu after piece %zu of the %s region is 0x%02x", when, g, i,
                     pg_phase_names[r->phase], r->piece[i][r->len[i] + g]);
        }
    }
    for (size_t g = 0; g < r->alloc_tail; g++)
        FT_CHECK(r->piece[0][r->length + g] == 0,
                 "%s: byte %zu after the end of the ferry_mem_alloc region (in its last page) "
                 "is 0x%02x",
                 when, g, r->piece[0][r->length + g]);
}

static void pg_region_create(pg_region_t *r, pg_phase_t phase, ferry_context_t *context)
{
    memset(r, 0, sizeof(*r));
    r->phase = phase;
    r->length = pg_region_length(phase);
    if (phase == PG_ALLOC) {
        void *ptr = NULL;
        long page = sysconf(_SC_PAGESIZE);
        FT_CHECK_OK(ferry_mem_alloc(context, (size_t)r->length,
                                    FERRY_ACCESS_REMOTE_READ | FERRY_ACCESS_REMOTE_WRITE, &r->mem,
                                    &ptr));
        FT_CHECK(ptr != NULL && ((uintptr_t)ptr & ((uintptr_t)page - 1)) == 0,
                 "ferry_mem_alloc returned %p, not page-aligned", ptr);
        r->count = 1;
        r->piece[0] = ptr;
        r->len[0] = (size_t)r->length;
        r->alloc_tail =
            (size_t)(((r->length + (uint64_t)page - 1) & ~((uint64_t)page - 1)) - r->length);
        for (uint64_t i = 0; i < r->length + r->alloc_tail; i += 4096)
            FT_CHECK(((uint8_t *)ptr)[i] == 0, "ferry_mem_alloc memory is not zeroed at %llu",
                     (unsigned long long)i);
    } else {
        ferry_iov_t iov[PG_MULTI_COUNT];
        uint64_t start = 0;
        r->count = phase == PG_REG ? 1 : PG_MULTI_COUNT;
        r->guard = phase == PG_REG ? PG_REG_GUARD : PG_MULTI_GUARD;
        for (size_t i = 0; i < r->count; i++) {
            r->len[i] = phase == PG_REG ? (size_t)r->length : pg_multi_pieces[i];
            r->block[i] = malloc(r->len[i] + 2 * r->guard);
            FT_CHECK(r->block[i] != NULL, "malloc(%zu)", r->len[i] + 2 * r->guard);
            memset(r->block[i], PG_GUARD_BYTE, r->guard);
            r->piece[i] = r->block[i] + r->guard;
            memset(r->piece[i] + r->len[i], PG_GUARD_BYTE, r->guard);
            r->start[i] = start;
            start += r->len[i];
            iov[i] = (ferry_iov_t){.buffer = r->piece[i], .length = r->len[i]};
        }
        FT_CHECK_OK(ferry_mem_register(context, iov, r->count,
                                       FERRY_ACCESS_REMOTE_READ | FERRY_ACCESS_REMOTE_WRITE, 0,
                                       &r->mem));
    }
    FT_CHECK(ferry_mem_length(r->mem) == r->length, "ferry_mem_length says %zu, expected %llu",
             ferry_mem_length(r->mem), (unsigned long long)r->length);
    pg_region_fill(r, 0, r->length, pg_bg_seed(phase), 0);
}

static void pg_region_destroy(pg_region_t *r)
{
    FT_CHECK_OK(ferry_mem_deregister(r->mem));
    for (size_t i = 0; i < r->count; i++)
        free(r->block[i]); /* NULL for alloc memory (freed by the deregistration) */
    memset(r, 0, sizeof(*r));
}

/* The target's check of one step, then the background is restored. */
static void pg_target_check(pg_region_t *r, const pg_step_t *st)
{
    char what[160];
    uint64_t seed = pg_step_seed(st), bg = pg_bg_seed(r->phase), msg = 0;
    FT_CHECK(st->phase == r->phase, "step %u belongs to another phase", st->seq);
    snprintf(what, sizeof(what), "target: step %u (%s, %s) put data", st->seq, st->shape,
             st->vector ? "putv" : "put");
    for (size_t i = 0; i < st->remote_count; i++) {
        pg_region_check(r, st->remote[i].offset, st->remote[i].length, seed, msg, what);
        msg += st->remote[i].length;
    }
    /* the bytes around each range (between ranges, those not in another range) */
    ferry_remote_iov_t *sorted = malloc((st->remote_count + 1) * sizeof(*sorted));
    FT_CHECK(sorted != NULL, "out of memory");
    memcpy(sorted, st->remote, st->remote_count * sizeof(*sorted));
    qsort(sorted, st->remote_count, sizeof(*sorted), pg_range_cmp);
    snprintf(what, sizeof(what), "target: step %u (%s): background next to a range", st->seq,
             st->shape);
    uint64_t prev_end = 0;
    for (size_t i = 0; i <= st->remote_count; i++) {
        uint64_t next = i < st->remote_count ? sorted[i].offset : r->length;
        uint64_t gap = next - prev_end;
        if (gap <= 2 * PG_WINDOW) {
            pg_region_check(r, prev_end, gap, bg, prev_end, what);
        } else {
            pg_region_check(r, prev_end, PG_WINDOW, bg, prev_end, what);
            pg_region_check(r, next - PG_WINDOW, PG_WINDOW, bg, next - PG_WINDOW, what);
        }
        if (i < st->remote_count)
            prev_end = sorted[i].offset + sorted[i].length;
    }
    free(sorted);
    snprintf(what, sizeof(what), "after step %u (%s)", st->seq, st->shape);
    pg_region_check_guards(r, what);
    for (size_t i = 0; i < st->remote_count; i++)
        pg_region_fill(r, st->remote[i].offset, st->remote[i].length, bg, st->remote[i].offset);
}

/* ------------------------------------------------------------------ the target */

#define PG_PTR_OFFSET 1000003u
#define PG_PTR_OFFSET2 2000000u
#define PG_PTR_LENGTH 4096u

static uint64_t pg_ptr_seed(unsigned which)
{
    return ft_pattern_seed(which, 0x505452, PG_PTR_LENGTH);
}

static volatile uint64_t pg_probe_word = 0x70726f6265;

static void pg_ack(int chan, uint64_t cmd, uint64_t arg)
{
    ft_chan_send_token(chan, PG_TAG_ACK, cmd, arg, 0, 0);
}

static int pg_target_role(int chan, void *arg)
{
    const pg_schedule_t *s = arg;
    pg_region_t r;
    ft_ferry_t f;
    bool have_region = false;

#ifdef PR_SET_PTRACER
    /* let the initiator map our ferry_mem_alloc memory where Yama restricts ptrace */
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    for (;;) {
        ft_token_t t;
        ft_progress_until_token(f.worker, chan, PG_TAG_CMD, PG_TIMEOUT_MS, &t);
        switch (t.v[0]) {
        case PG_CMD_PHASE_BEGIN:
            FT_CHECK(!have_region && t.v[1] < PG_PHASES, "PHASE_BEGIN %llu",
                     (unsigned long long)t.v[1]);
            pg_region_create(&r, (pg_phase_t)t.v[1], f.context);
            have_region = true;
            ft_rkey_send(chan, r.mem);
            break;
        case PG_CMD_CHECK:
            FT_CHECK(have_region && t.v[1] < s->count, "CHECK %llu", (unsigned long long)t.v[1]);
            pg_target_check(&r, &s->steps[t.v[1]]);
            pg_ack(chan, PG_CMD_CHECK, t.v[1]);
            break;
        case PG_CMD_HOLD: {
            /* no progress until RELEASE: only the direct paths can serve the initiator */
            pg_ack(chan, PG_CMD_HOLD, 0);
            ft_token_t rel = ft_chan_expect_token(chan, PG_TAG_CMD, 30000);
            FT_CHECK(rel.v[0] == PG_CMD_RELEASE, "command %llu while held",
                     (unsigned long long)rel.v[0]);
            break;
        }
        case PG_CMD_PTR_CHECK:
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            pg_region_check(&r, PG_PTR_OFFSET, PG_PTR_LENGTH, pg_ptr_seed(PG_INITIATOR), 0,
                            "target: bytes the initiator stored through ferry_rkey_ptr");
            pg_region_check_guards(&r, "after stores through ferry_rkey_ptr");
            pg_region_fill(&r, PG_PTR_OFFSET2, PG_PTR_LENGTH, pg_ptr_seed(PG_TARGET), 0);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            pg_ack(chan, PG_CMD_PTR_CHECK, 0);
            break;
        case PG_CMD_PTR_DONE:
            pg_region_fill(&r, PG_PTR_OFFSET, PG_PTR_LENGTH, pg_bg_seed(r.phase), PG_PTR_OFFSET);
            pg_region_fill(&r, PG_PTR_OFFSET2, PG_PTR_LENGTH, pg_bg_seed(r.phase), PG_PTR_OFFSET2);
            pg_ack(chan, PG_CMD_PTR_DONE, 0);
            break;
        case PG_CMD_PHASE_END: {
            char what[96];
            FT_CHECK(have_region, "PHASE_END without a region");
            snprintf(what, sizeof(what), "target: the whole %s region at the end of its phase",
                     pg_phase_names[r.phase]);
            pg_region_check(&r, 0, r.length, pg_bg_seed(r.phase), 0, what);
            pg_region_check_guards(&r, what);
            pg_region_destroy(&r);
            have_region = false;
            pg_ack(chan, PG_CMD_PHASE_END, 0);
            break;
        }
        case PG_CMD_DONE:
            FT_CHECK(!have_region, "DONE with a region left");
            ft_ferry_fini(&f);
            return 0;
        default:
            ft_fail_at(__FILE__, __LINE__, "unknown command %llu", (unsigned long long)t.v[0]);
        }
    }
}

/* ------------------------------------------------------------------ the initiator */

typedef struct pg_initiator {
    ft_ferry_t f;
    ferry_ep_t *ep;
    ferry_rkey_t *rkey;
    int chan;
    bool direct_reg; /* registered memory is reached without the target (CMA) */
    uint64_t seed;   /* of the chunk check */
    const char *what;
} pg_initiator_t;

static void pg_command(pg_initiator_t *in, uint64_t cmd, uint64_t arg)
{
    ft_token_t t;
    ft_chan_send_token(in->chan, PG_TAG_CMD, cmd, arg, 0, 0);
    ft_progress_until_token(in->f.worker, in->chan, PG_TAG_ACK, PG_TIMEOUT_MS, &t);
    FT_CHECK(t.v[0] == cmd && t.v[1] == arg, "ack %llu/%llu for command %llu/%llu",
             (unsigned long long)t.v[0], (unsigned long long)t.v[1], (unsigned long long)cmd,
             (unsigned long long)arg);
}

static void pg_chunk_check_step(void *arg, uint8_t *local, size_t len, uint64_t msg,
                                uint64_t region)
{
    pg_initiator_t *in = arg;
    char desc[256];
    snprintf(desc, sizeof(desc), "%s (message offset %llu, region offset %llu)", in->what,
             (unsigned long long)msg, (unsigned long long)region);
    ft_pattern_check(local, len, in->seed, msg, desc);
}

static void pg_chunk_check_bg(void *arg, uint8_t *local, size_t len, uint64_t msg, uint64_t region)
{
    pg_initiator_t *in = arg;
    char desc[256];
    snprintf(desc, sizeof(desc), "%s (message offset %llu, region offset %llu)", in->what,
             (unsigned long long)msg, (unsigned long long)region);
    ft_pattern_check(local, len, in->seed, region, desc);
}

static ft_rma_op_t pg_op(const pg_step_t *st, ferry_iov_t *local, bool put)
{
    if (st->vector)
        return put ? ft_rma_putv(local, st->local_count, st->remote, st->remote_count)
                   : ft_rma_getv(local, st->local_count, st->remote, st->remote_count);
    return put ? ft_rma_put(local[0].buffer, local[0].length, st->remote[0].offset)
               : ft_rma_get(local[0].buffer, local[0].length, st->remote[0].offset);
}

static void pg_poison(ferry_iov_t *local, size_t count, int byte)
{
    for (size_t i = 0; i < count; i++)
        memset(local[i].buffer, byte, local[i].length);
}

static void pg_expect_ok(pg_initiator_t *in, const pg_step_t *st, const ft_rma_op_t *op)
{
    char what[300];
    snprintf(what, sizeof(what), "step %u (%s phase, %s)", st->seq, pg_phase_names[st->phase],
             st->shape);
    ft_rma_expect(in->f.worker, in->ep, in->rkey, op, FERRY_OK, what);
}

/* The hold step's put and get: the target makes no progress meanwhile. */
static void pg_hold_step(pg_initiator_t *in, const pg_step_t *st, ferry_iov_t *local, bool direct)
{
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    ft_rma_op_t put = pg_op(st, local, true), get = pg_op(st, local, false);
    char what[200];

    pg_command(in, PG_CMD_HOLD, 0);
    ferry_status_t status = ft_rma_start(in->f.worker, in->ep, in->rkey, &put, &comp, 10000);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "hold: %s returned %s",
             ft_rma_describe(&put, what, sizeof(what)), ferry_status_name(status));
    if (direct) {
        ft_progress_until_completion(in->f.worker, 10000, &comp,
                                     "a put while the target makes no progress (the direct "
                                     "path needs none)");
        FT_CHECK(comp.status == FERRY_OK, "hold: the put completed with %s",
                 ferry_status_name(comp.status));
        ft_rma_flush_ep(in->f.worker, in->ep, 10000);
        pg_poison(local, st->local_count, 0xa5);
        pg_expect_ok(in, st, &get);
        in->seed = pg_step_seed(st);
        in->what = "hold: data read back while the target made no progress";
        pg_walk(st, local, pg_chunk_check_step, in);
        ft_chan_send_token(in->chan, PG_TAG_CMD, PG_CMD_RELEASE, 0, 0, 0);
        ft_note("%s phase: put and get of %llu bytes completed while the target made no "
                "progress (direct path)",
                pg_phase_names[st->phase], (unsigned long long)st->total);
        return;
    }
    FT_CHECK(status == FERRY_INPROGRESS,
             "hold: %s returned FERRY_OK while the target makes no progress, but this memory "
             "should be reached through the target's progress (FERRY_SHM_CMA=off or cross-memory "
             "attach denied)",
             ft_rma_describe(&put, what, sizeof(what)));
    ft_progress_for_ms(in->f.worker, 200);
    FT_CHECK(comp.count == 1,
             "hold: the put completed (%s) while the target made no progress: the fallback "
             "cannot have performed it",
             ferry_status_name(comp.status));
    ft_chan_send_token(in->chan, PG_TAG_CMD, PG_CMD_RELEASE, 0, 0, 0);
    ft_progress_until_completion(in->f.worker, 30000, &comp, "the put once the target progresses");
    FT_CHECK(comp.status == FERRY_OK, "hold: the put completed with %s",
             ferry_status_name(comp.status));
    ft_rma_flush_ep(in->f.worker, in->ep, 10000);
    pg_poison(local, st->local_count, 0xa5);
    pg_expect_ok(in, st, &get);
    in->seed = pg_step_seed(st);
    in->what = "hold: data read back";
    pg_walk(st, local, pg_chunk_check_step, in);
    ft_note("%s phase: a put waited for the target's progress (fallback path)",
            pg_phase_names[st->phase]);
}

static void pg_initiator_step(pg_initiator_t *in, const pg_step_t *st)
{
    ferry_iov_t *local = calloc(st->local_count, sizeof(*local));
    uint64_t seed = pg_step_seed(st), msg = 0;
    char what[300];
    FT_CHECK(local != NULL, "out of memory");
    for (size_t i = 0; i < st->local_count; i++) {
        local[i].length = st->local_lens[i];
        local[i].buffer = malloc(local[i].length ? local[i].length : 1);
        FT_CHECK(local[i].buffer != NULL, "malloc(%zu)", local[i].length);
        ft_pattern_fill(local[i].buffer, local[i].length, seed, msg);
        msg += local[i].length;
    }

    if (st->hold) {
        pg_hold_step(in, st, local,
                     (st->phase == PG_ALLOC && strcmp(ft_remote_transport(), "tcp") != 0) ||
                         in->direct_reg); /* tcp maps nothing: every access needs the target */
    } else {
        ft_rma_op_t put = pg_op(st, local, true), get = pg_op(st, local, false);
        if (st->seq % 4 == 3) {
            /* no completion: the flush below tells when the buffers are free */
            ferry_status_t status =
                ft_rma_start(in->f.worker, in->ep, in->rkey, &put, NULL, PG_TIMEOUT_MS);
            FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
                     "step %u: %s without a completion returned %s", st->seq,
                     ft_rma_describe(&put, what, sizeof(what)), ferry_status_name(status));
        } else {
            pg_expect_ok(in, st, &put);
        }
        if (st->seq % 2)
            ft_rma_flush_ep(in->f.worker, in->ep, PG_TIMEOUT_MS);
        else
            ft_rma_flush_worker(in->f.worker, PG_TIMEOUT_MS);
        pg_poison(local, st->local_count, 0xa5);
        pg_expect_ok(in, st, &get);
        snprintf(what, sizeof(what), "initiator: step %u (%s phase, %s): data read back", st->seq,
                 pg_phase_names[st->phase], st->shape);
        in->seed = seed;
        in->what = what;
        pg_walk(st, local, pg_chunk_check_step, in);
    }

    pg_command(in, PG_CMD_CHECK, st->seq);

    ft_rma_op_t get = pg_op(st, local, false);
    pg_poison(local, st->local_count, 0x5a);
    pg_expect_ok(in, st, &get);
    snprintf(what, sizeof(what), "initiator: step %u (%s phase, %s): background read back", st->seq,
             pg_phase_names[st->phase], st->shape);
    in->seed = pg_bg_seed(st->phase);
    in->what = what;
    pg_walk(st, local, pg_chunk_check_bg, in);

    for (size_t i = 0; i < st->local_count; i++)
        free(local[i].buffer);
    free(local);
}

/* ferry_rkey_ptr on the peer's ferry_mem_alloc memory: stores both ways. */
static void pg_ptr_checks(pg_initiator_t *in)
{
    void *p = NULL, *p2 = NULL, *last = NULL, *none = (void *)(uintptr_t)0x1234;
    uint64_t length = pg_region_length(PG_ALLOC);
    FT_CHECK_OK(ferry_rkey_ptr(in->rkey, PG_PTR_OFFSET, &p));
    FT_CHECK_OK(ferry_rkey_ptr(in->rkey, PG_PTR_OFFSET2, &p2));
    FT_CHECK_OK(ferry_rkey_ptr(in->rkey, length - 1, &last));
    FT_CHECK(p != NULL && (uint8_t *)p2 - (uint8_t *)p == PG_PTR_OFFSET2 - PG_PTR_OFFSET &&
                 (uint8_t *)last - (uint8_t *)p == (ptrdiff_t)(length - 1 - PG_PTR_OFFSET),
             "ferry_rkey_ptr: pointers %p %p %p are not those of one mapping", p, p2, last);
    FT_CHECK_STATUS(ferry_rkey_ptr(in->rkey, length, &none), FERRY_ERR_ACCESS);
    FT_CHECK(none == (void *)(uintptr_t)0x1234, "ferry_rkey_ptr failed but wrote its pointer");
    /* the last byte holds the background */
    FT_CHECK(*(volatile uint8_t *)last == ft_pattern_byte(pg_bg_seed(PG_ALLOC), length - 1),
             "the last byte through ferry_rkey_ptr is 0x%02x, not the background",
             *(volatile uint8_t *)last);
    ft_pattern_fill(p, PG_PTR_LENGTH, pg_ptr_seed(PG_INITIATOR), 0);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    pg_command(in, PG_CMD_PTR_CHECK, 0);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ft_pattern_check(p2, PG_PTR_LENGTH, pg_ptr_seed(PG_TARGET), 0,
                     "the owner's stores, loaded through ferry_rkey_ptr");
    pg_command(in, PG_CMD_PTR_DONE, 0);
    ft_note("ferry_rkey_ptr: stores seen both ways");
}

static void pg_run_phase(pg_initiator_t *in, const pg_schedule_t *s, pg_phase_t phase)
{
    uint8_t key[FT_CHAN_MSG_MAX];
    uint64_t start = ft_now_ns();
    size_t steps = 0;
    ft_chan_send_token(in->chan, PG_TAG_CMD, PG_CMD_PHASE_BEGIN, phase, 0, 0);
    size_t key_len = ft_rkey_recv(in->chan, key, sizeof(key), PG_TIMEOUT_MS);
    FT_CHECK_OK(ferry_rkey_unpack(in->ep, key, key_len, &in->rkey));

    if (phase != PG_ALLOC) {
        void *p = (void *)(uintptr_t)0x1234;
        FT_CHECK_STATUS(ferry_rkey_ptr(in->rkey, 0, &p), FERRY_ERR_UNSUPPORTED);
        FT_CHECK(p == (void *)(uintptr_t)0x1234, "ferry_rkey_ptr failed but wrote its pointer");
    }
    if (phase == PG_REG) {
        /* bring the connection up (the target progresses) before the hold step */
        uint8_t b[8];
        ft_rma_op_t get = ft_rma_get(b, sizeof(b), 0);
        ft_rma_expect(in->f.worker, in->ep, in->rkey, &get, FERRY_OK, "the first get");
        ft_pattern_check(b, sizeof(b), pg_bg_seed(PG_REG), 0, "the first get");
    }
    for (size_t i = 0; i < s->count; i++) {
        if (s->steps[i].phase != phase)
            continue;
        pg_initiator_step(in, &s->steps[i]);
        steps++;
    }
    if (phase == PG_ALLOC)
        if (strcmp(ft_remote_transport(), "tcp") != 0) /* another host's memory: no pointer */
            pg_ptr_checks(in);
    ferry_rkey_release(in->rkey);
    in->rkey = NULL;
    pg_command(in, PG_CMD_PHASE_END, 0);
    ft_note("%s phase: %zu steps in %.2f s", pg_phase_names[phase], steps,
            (double)(ft_now_ns() - start) / 1e9);
}

int main(void)
{
    static pg_schedule_t s;
    uint8_t address[FT_CHAN_MSG_MAX];
    pg_initiator_t in = {0};
    ft_files_t before;
    ft_peer_t target;
    const char *why = "";

    ft_set_role("initiator");
    ft_watchdog(175);
    pg_build(&s);
    ft_files_snapshot(&before);
    ft_peer_spawn(&target, "target", pg_target_role, &s);
    in.chan = target.chan;

    bool cma_off = ft_cma_forced_off();
    bool cma_ok = ft_cma_usable(target.pid, (const void *)&pg_probe_word, &why);
    in.direct_reg = !cma_off && cma_ok;
    if (cma_off)
        ft_note("FERRY_SHM_CMA=off: registered memory is reached through the target's progress");
    else if (!cma_ok)
        ft_note("cross-memory attach to the target is denied here (%s): registered memory is "
                "reached through the target's progress",
                why);
    else
        ft_note("cross-memory attach is usable: registered memory is reached directly");

    ft_ferry_init(&in.f, NULL, NULL);
    size_t length = ft_recv_address(in.chan, address, sizeof(address), PG_TIMEOUT_MS);
    in.ep = ft_ep_create(in.f.worker, address, length, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(in.ep), ft_remote_transport()) == 0,
             "an endpoint to another process uses %s, expected %s", ferry_ep_transport_name(in.ep),
             ft_remote_transport());

    uint64_t start = ft_now_ns();
    for (int phase = 0; phase < PG_PHASES; phase++)
        pg_run_phase(&in, &s, (pg_phase_t)phase);
    ft_files_check_self();
    ft_note("%zu steps in %.2f s", s.count, (double)(ft_now_ns() - start) / 1e9);

    ferry_completion_t close_comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(in.ep, 0, &close_comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(in.f.worker, 10000, &close_comp, "the graceful close");
    ft_chan_send_token(in.chan, PG_TAG_CMD, PG_CMD_DONE, 0, 0, 0);
    ft_peer_expect_exit(&target, 30000, 0);
    ferry_ep_destroy(in.ep);
    ft_ferry_fini(&in.f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    for (size_t i = 0; i < s.count; i++) {
        free(s.steps[i].local_lens);
        free(s.steps[i].remote);
    }
    free(s.steps);
    ft_note("passed");
    return 0;
}
