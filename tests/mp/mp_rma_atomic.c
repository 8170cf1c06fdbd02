/* Remote atomics between three processes: the parent owns the memory (and coordinates), two
 * forked hammers, A and B, update it with ferry atomics at the same time. Everything runs twice:
 * on memory from ferry_mem_alloc (the hammers map it: CPU atomics through the mapping) and on
 * memory from ferry_mem_register (the owner's progress performs them).
 *
 *   hold    the owner stops making progress: a fetch-add on the mapped memory completes anyway,
 *           one on registered memory cannot (and does once the owner goes on);
 *   fadd64  100 000 fetch-adds of 1 each on one 64-bit counter: it ends at 200 000, and the
 *           values fetched by A and B together are exactly 0 .. 199 999, each once;
 *   fadd32  100 000 fetch-adds each (A adds 3, B adds 5) on a 32-bit counter that wraps: it ends
 *           at the sum modulo 2^32, no value is fetched twice, and its neighbours are untouched;
 *   post    10 000 rounds each of ADD, AND, OR, XOR posts on 64- and 32-bit words: the final
 *           values are those of the owner's own computation (the ops commute within a kind);
 *   swap    10 000 swaps each on a 64- and a 32-bit word, every value written unique: the
 *           values fetched, plus the final one, are exactly the values written plus the
 *           initial one, each once;
 *   lock    1 000 rounds each of: acquire a lock word with CSWAP 0 -> id (retrying), read a
 *           counter with ferry_get, write it + 1 with ferry_put, flush, release with SWAP or
 *           CSWAP id -> 0 (which must fetch id); the hammers take strict turns (each waits for
 *           the other's increment), so the lock passes between them 1 999 times and each read
 *           must find exactly the value expected; the counter ends at 2 000; then 2 000
 *           increments each of a 32-bit word by a fetch/CSWAP retry loop;
 *   mixed   20 000 fetch-adds each from A and B while the owner adds 1 20 000 times with its own
 *           CPU atomics (__atomic_fetch_add) on the same word: it ends at 60 000.
 * After each section the owner compares its whole region (and the guard bytes around the
 * registered one) with what it expects: nothing else changed. Hammers keep up to 32 operations
 * in flight, and meet at a barrier (a word both fetch-add) at the start of each section and
 * every 10 000 operations, so that they really run together. While they work on the mapped
 * memory the owner sleeps in ferry_worker_wait (it is not needed, and the CPUs are few).
 *
 * Also: a key asked for ferry_rkey_ptr before its endpoint is connected must still give a
 * pointer once it is (checked last, so that the sections run whatever it says). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ft.h"
#include "ft_rma.h"

enum { AT_TAG_GO = 0x474f2121, AT_TAG_DONE = 0x444f4e21, AT_TAG_READY = 0x52445921 };

typedef enum at_section {
    AT_HOLD,
    AT_FADD64,
    AT_FADD32,
    AT_POST,
    AT_SWAP,
    AT_LOCK,
    AT_MIXED,
    AT_SECTIONS,
    AT_EXIT = 100,
} at_section_t;

static const char *const at_section_names[AT_SECTIONS] = {"hold", "fadd64", "fadd32", "post",
                                                          "swap", "lock",   "mixed"};

typedef enum at_kind { AT_ALLOC, AT_REG, AT_KINDS } at_kind_t;
static const char *const at_kind_names[AT_KINDS] = {"ferry_mem_alloc (CPU atomics)",
                                                    "ferry_mem_register (target-executed)"};

/* the long loops' lengths on shm; over tcp every atomic is a round trip through the owner's
 * progress, so they run at_long_divisor times shorter there (still 25 000 interleaved adds) */
#define AT_N_FADD64_SHM 100000u
#define AT_N_FADD32_SHM 100000u
#define AT_N_POST_SHM 10000u
#define AT_N_SWAP 10000u
#define AT_N_LOCK 500u /* strict turns: each one waits for the scheduler to run the other */
#define AT_N_CAS32 2000u
#define AT_BARRIER_EVERY 10000u /* fetch-adds between barriers */
#define AT_N_MIXED_SHM 20000u
#define AT_WINDOW 32
#define AT_TIMEOUT_MS 60000

/* The region: 8 KiB, words on their own cache lines. */
#define AT_REGION 8192u
#define AT_GUARD 4096u
#define AT_OFF_HOLD 0u
#define AT_OFF_C64 64u
#define AT_OFF_C32 132u /* a 32-bit word between two others (128, 136) */
#define AT_OFF_ADD64 192u
#define AT_OFF_AND64 256u
#define AT_OFF_OR64 320u
#define AT_OFF_XOR64 384u
#define AT_OFF_ADD32 448u
#define AT_OFF_AND32 452u
#define AT_OFF_OR32 456u
#define AT_OFF_XOR32 460u
#define AT_OFF_SWAP64 512u
#define AT_OFF_SWAP32 580u
#define AT_OFF_LOCK 640u
#define AT_OFF_PROT 704u
#define AT_OFF_CAS32 768u
#define AT_OFF_MIX 832u
#define AT_OFF_BARRIER 896u
#define AT_FILL 0xa5

#define AT_C32_INIT 0xfff00000u
#define AT_SWAP64_INIT 0x5357415000000000ull
#define AT_SWAP32_INIT 0x7fff0000u
#define AT_AND_INIT UINT64_MAX
#define AT_OR_INIT 0x0100000000000000ull
#define AT_XOR_INIT 0x0123456789abcdefull

/* Set by main before the hammers fork: 4 over tcp, else 1. */
static unsigned at_long_divisor = 1;

/* The length of a long loop (AT_N_*_SHM) on this run's transport. */
static uint64_t at_long(uint64_t shm_count)
{
    return shm_count / at_long_divisor;
}

/* ------------------------------------------------------------------ values */

/* The post operands of hammer id (1 or 2), round i. */
static uint64_t at_add_value(unsigned id, uint64_t i)
{
    return ft_mix64(id * 1000003ull + i) >> 20;
}
static uint64_t at_and_value(unsigned id, uint64_t i, unsigned bits)
{
    return ~(1ull << ((2 * i + id - 1) % bits));
}
static uint64_t at_or_value(unsigned id, uint64_t i, unsigned bits)
{
    return 1ull << ((3 * i + id) % bits);
}
static uint64_t at_xor_value(unsigned id, uint64_t i)
{
    return ft_mix64(id * 7919ull + i * 31ull + 5);
}
static uint64_t at_swap64_value(unsigned id, uint64_t i)
{
    return ((uint64_t)id << 32) | (i + 1);
}
static uint32_t at_swap32_value(unsigned id, uint64_t i)
{
    return ((uint32_t)id << 24) | (uint32_t)(i + 1);
}

/* ------------------------------------------------------------------ bitmaps */

typedef struct at_bitmap {
    uint8_t *bits;
    size_t nbits;
    size_t bytes;
} at_bitmap_t;

static void at_bitmap_init(at_bitmap_t *b, size_t nbits)
{
    b->nbits = nbits;
    b->bytes = (nbits + 7) / 8;
    b->bits = calloc(1, b->bytes);
    FT_CHECK(b->bits != NULL, "out of memory");
}

static void at_bitmap_free(at_bitmap_t *b)
{
    free(b->bits);
    b->bits = NULL;
}

static bool at_bitmap_test(const at_bitmap_t *b, size_t bit)
{
    return (b->bits[bit / 8] >> (bit % 8)) & 1;
}

/* Set bit; fail if it is out of range or already set. */
static void at_bitmap_set_once(at_bitmap_t *b, size_t bit, const char *what, uint64_t value)
{
    FT_CHECK(bit < b->nbits, "%s: fetched value 0x%llx is not one that could be there", what,
             (unsigned long long)value);
    FT_CHECK(!at_bitmap_test(b, bit), "%s: value 0x%llx was fetched twice", what,
             (unsigned long long)value);
    b->bits[bit / 8] |= (uint8_t)(1u << (bit % 8));
}

/* into |= from; fail on a bit set in both. */
static void at_bitmap_merge(at_bitmap_t *into, const at_bitmap_t *from, const char *what)
{
    for (size_t i = 0; i < into->bytes; i++) {
        if (into->bits[i] & from->bits[i]) {
            size_t bit = i * 8 + (size_t)__builtin_ctz(into->bits[i] & from->bits[i]);
            ft_fail_at(__FILE__, __LINE__, "%s: both hammers fetched the value of bit %zu", what,
                       bit);
        }
        into->bits[i] |= from->bits[i];
    }
}

/* ------------------------------------------------------------------ a hammer */

typedef struct at_hammer at_hammer_t;
typedef void (*at_result_fn_t)(at_hammer_t *h, uint64_t tag, uint64_t result);

typedef struct at_slot {
    ferry_completion_t comp; /* first: the callback gets &comp */
    at_hammer_t *h;
    uint64_t result;
    uint64_t tag;
    at_result_fn_t fn;
    bool busy;
} at_slot_t;

struct at_hammer {
    unsigned id;
    ft_ferry_t f;
    ferry_ep_t *ep;
    ferry_rkey_t *rkey[AT_KINDS];
    ferry_rkey_t *cur; /* the key of the kind in use */
    at_slot_t slots[AT_WINDOW];
    unsigned inflight;
    at_bitmap_t bm, bm2;
    const char *what;
    uint64_t last;        /* fadd64: the last value fetched */
    uint64_t interleaved; /* fadd64: fetched values not following the previous one */
    uint64_t barriers;    /* barriers passed in this section */
};

static void at_slot_done(ferry_completion_t *comp)
{
    at_slot_t *slot = (at_slot_t *)comp;
    at_hammer_t *h = slot->h;
    FT_CHECK(comp->status == FERRY_OK, "%s: an atomic completed with %s (%s)", h->what,
             ferry_status_name(comp->status), ferry_status_string(comp->status));
    slot->busy = false;
    h->inflight--;
    if (slot->fn != NULL)
        slot->fn(h, slot->tag, slot->result);
}

static bool at_slot_free(void *arg)
{
    return ((at_hammer_t *)arg)->inflight < AT_WINDOW;
}

static bool at_all_done(void *arg)
{
    return ((at_hammer_t *)arg)->inflight == 0;
}

/* Issue one atomic with up to AT_WINDOW in flight; fn (may be NULL) gets the result. */
static void at_issue(at_hammer_t *h, ft_rma_op_t op, uint64_t tag, at_result_fn_t fn)
{
    char what[200];
    if (h->inflight == AT_WINDOW)
        ft_progress_until(h->f.worker, AT_TIMEOUT_MS, at_slot_free, h, "a free atomic slot");
    at_slot_t *slot = NULL;
    for (unsigned i = 0; i < AT_WINDOW; i++) {
        if (!h->slots[i].busy) {
            slot = &h->slots[i];
            break;
        }
    }
    FT_CHECK(slot != NULL, "no free slot with %u in flight", h->inflight);
    slot->comp = (ferry_completion_t){.cb = at_slot_done, .count = 0, .status = FERRY_OK};
    slot->h = h;
    slot->tag = tag;
    slot->fn = fn;
    slot->result = 0xdeadbeefdeadbeefull;
    if (op.kind == FT_RMA_FETCH)
        op.result = &slot->result;
    ferry_status_t status =
        ft_rma_start(h->f.worker, h->ep, h->cur, &op, &slot->comp, AT_TIMEOUT_MS);
    if (status == FERRY_INPROGRESS) {
        slot->busy = true;
        h->inflight++;
        return;
    }
    FT_CHECK(status == FERRY_OK, "%s: %s returned %s (%s)", h->what,
             ft_rma_describe(&op, what, sizeof(what)), ferry_status_name(status),
             ferry_status_string(status));
    if (fn != NULL)
        fn(h, tag, slot->result);
}

static void at_drain(at_hammer_t *h)
{
    ft_progress_until(h->f.worker, AT_TIMEOUT_MS, at_all_done, h, "the atomics in flight");
    ft_rma_flush_ep(h->f.worker, h->ep, AT_TIMEOUT_MS);
}

/* One blocking atomic (the lock section). */
static uint64_t at_fetch_now(at_hammer_t *h, ferry_atomic_op_t aop, uint64_t value,
                             uint64_t compare, size_t size, uint64_t offset)
{
    uint64_t result = 0xdeadbeefdeadbeefull;
    ft_rma_op_t op = ft_rma_fetch(aop, value, compare, size, offset, &result);
    ft_rma_expect(h->f.worker, h->ep, h->cur, &op, FERRY_OK, h->what);
    if (size == 4)
        FT_CHECK(result <= UINT32_MAX, "%s: a 32-bit fetch returned 0x%llx", h->what,
                 (unsigned long long)result);
    return result;
}

static void at_fadd64_result(at_hammer_t *h, uint64_t tag, uint64_t result)
{
    (void)tag;
    at_bitmap_set_once(&h->bm, (size_t)result, "fadd64", result);
    if (result != h->last + 1)
        h->interleaved++; /* the other hammer's adds came in between */
    h->last = result;
}

static void at_fadd32_result(at_hammer_t *h, uint64_t tag, uint64_t result)
{
    (void)tag;
    FT_CHECK(result <= UINT32_MAX, "fadd32: a 32-bit fetch returned 0x%llx",
             (unsigned long long)result);
    uint32_t delta = (uint32_t)result - AT_C32_INIT;
    at_bitmap_set_once(&h->bm, delta, "fadd32 (fetched value - initial value)", result);
}

/* Bit of a swapped value: 0 the initial one, then A's values, then B's. */
static size_t at_swap_bit(uint64_t value, bool is32)
{
    uint64_t init = is32 ? AT_SWAP32_INIT : AT_SWAP64_INIT;
    unsigned shift = is32 ? 24 : 32;
    if (value == init)
        return 0;
    uint64_t id = value >> shift, i = (value & ((1ull << shift) - 1));
    if ((id != 1 && id != 2) || i == 0 || i > AT_N_SWAP)
        return SIZE_MAX;
    return 1 + (size_t)(id - 1) * AT_N_SWAP + (size_t)(i - 1);
}

static void at_swap_result(at_hammer_t *h, uint64_t tag, uint64_t result)
{
    bool is32 = tag == 32;
    at_bitmap_set_once(is32 ? &h->bm2 : &h->bm, at_swap_bit(result, is32),
                       is32 ? "swap32" : "swap64", result);
}

/* Both hammers start a section (and, in the long ones, every AT_BARRIER_EVERY operations)
 * together: each adds 1 to the barrier word, then reads it until the other did too (the
 * hammers of the mapped memory would otherwise often run one after the other). The word ends
 * at twice the number of barriers. */
static void at_barrier(at_hammer_t *h)
{
    uint64_t want = 2 * ++h->barriers;
    uint64_t v = at_fetch_now(h, FERRY_ATOMIC_ADD, 1, 0, 8, AT_OFF_BARRIER) + 1;
    while (v < want)
        v = at_fetch_now(h, FERRY_ATOMIC_ADD, 0, 0, 8, AT_OFF_BARRIER);
    /* the other may already be at the next barrier, not beyond it */
    FT_CHECK(v <= want + 1, "barrier %llu: the word holds %llu", (unsigned long long)h->barriers,
             (unsigned long long)v);
}

/* In a long loop: a barrier every AT_BARRIER_EVERY operations (after the first). */
static void at_maybe_barrier(at_hammer_t *h, uint64_t i, uint64_t n)
{
    if (i > 0 && i < n && i % AT_BARRIER_EVERY == 0) {
        ft_progress_until(h->f.worker, AT_TIMEOUT_MS, at_all_done, h, "the atomics in flight");
        at_barrier(h);
    }
}

/* Barriers a section has: one at its start, and those of its long loop. */
static uint64_t at_section_barriers(at_section_t s)
{
    uint64_t n = s == AT_FADD64   ? at_long(AT_N_FADD64_SHM)
                 : s == AT_FADD32 ? at_long(AT_N_FADD32_SHM)
                 : s == AT_MIXED  ? at_long(AT_N_MIXED_SHM)
                                  : 0;
    return 1 + (n > 0 ? (n - 1) / AT_BARRIER_EVERY : 0);
}

static void at_hammer_section(at_hammer_t *h, at_section_t section, int chan)
{
    unsigned id = h->id;
    h->barriers = 0;
    if (section != AT_HOLD)
        at_barrier(h);
    switch (section) {
    case AT_HOLD: {
        /* the owner is not progressing now */
        uint64_t r1 = 0, r2 = 0;
        ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
        ft_rma_op_t op = ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, AT_OFF_HOLD, &r1);
        h->cur = h->rkey[AT_ALLOC];
        ferry_status_t status = ft_rma_start(h->f.worker, h->ep, h->cur, &op, &comp, 10000);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "hold: fetch-add returned %s",
                 ferry_status_name(status));
        ft_progress_until_completion(h->f.worker, 10000, &comp,
                                     "a fetch-add on mapped memory while the owner makes no "
                                     "progress");
        FT_CHECK(comp.status == FERRY_OK && r1 == 0, "hold: fetch-add on mapped memory: %s, %llu",
                 ferry_status_name(comp.status), (unsigned long long)r1);
        h->cur = h->rkey[AT_REG];
        op = ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, AT_OFF_HOLD, &r2);
        status = ft_rma_start(h->f.worker, h->ep, h->cur, &op, &comp, 10000);
        FT_CHECK(status == FERRY_INPROGRESS,
                 "hold: a fetch-add on registered memory returned %s while the owner makes no "
                 "progress (only the owner can perform it)",
                 ferry_status_name(status));
        ft_progress_for_ms(h->f.worker, 200);
        FT_CHECK(comp.count == 1,
                 "hold: a fetch-add on registered memory completed (%s) while the owner made no "
                 "progress",
                 ferry_status_name(comp.status));
        ft_chan_send_token(chan, AT_TAG_DONE, 1, 0, 0, 0); /* the owner goes on */
        ft_progress_until_completion(h->f.worker, 30000, &comp,
                                     "the fetch-add once the owner "
                                     "progresses");
        FT_CHECK(comp.status == FERRY_OK && r2 == 0,
                 "hold: fetch-add on registered memory: %s, "
                 "%llu",
                 ferry_status_name(comp.status), (unsigned long long)r2);
        ft_rma_flush_ep(h->f.worker, h->ep, 10000);
        ft_chan_send_token(chan, AT_TAG_DONE, 2, 0, 0, 0);
        return;
    }
    case AT_FADD64:
        at_bitmap_init(&h->bm, 2 * at_long(AT_N_FADD64_SHM));
        h->last = UINT64_MAX;
        h->interleaved = 0;
        for (uint64_t i = 0; i < at_long(AT_N_FADD64_SHM);
             i++, at_maybe_barrier(h, i, at_long(AT_N_FADD64_SHM)))
            at_issue(h, ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, AT_OFF_C64, NULL), i,
                     at_fadd64_result);
        at_drain(h);
        ft_chan_send_token(chan, AT_TAG_DONE, section, h->interleaved, 0, 0);
        ft_chan_send_big(chan, h->bm.bits, h->bm.bytes);
        at_bitmap_free(&h->bm);
        return;
    case AT_FADD32:
        at_bitmap_init(&h->bm, 8 * at_long(AT_N_FADD32_SHM));
        for (uint64_t i = 0; i < at_long(AT_N_FADD32_SHM);
             i++, at_maybe_barrier(h, i, at_long(AT_N_FADD32_SHM)))
            at_issue(h, ft_rma_fetch(FERRY_ATOMIC_ADD, id == 1 ? 3 : 5, 0, 4, AT_OFF_C32, NULL), i,
                     at_fadd32_result);
        at_drain(h);
        ft_chan_send_token(chan, AT_TAG_DONE, section, 0, 0, 0);
        ft_chan_send_big(chan, h->bm.bits, h->bm.bytes);
        at_bitmap_free(&h->bm);
        return;
    case AT_POST:
        for (uint64_t i = 0; i < at_long(AT_N_POST_SHM); i++) {
            at_issue(h, ft_rma_post(FERRY_ATOMIC_ADD, at_add_value(id, i), 8, AT_OFF_ADD64), i,
                     NULL);
            at_issue(h, ft_rma_post(FERRY_ATOMIC_AND, at_and_value(id, i, 64), 8, AT_OFF_AND64), i,
                     NULL);
            at_issue(h, ft_rma_post(FERRY_ATOMIC_OR, at_or_value(id, i, 56), 8, AT_OFF_OR64), i,
                     NULL);
            at_issue(h, ft_rma_post(FERRY_ATOMIC_XOR, at_xor_value(id, i), 8, AT_OFF_XOR64), i,
                     NULL);
            at_issue(h,
                     ft_rma_post(FERRY_ATOMIC_ADD, (uint32_t)at_add_value(id, i), 4, AT_OFF_ADD32),
                     i, NULL);
            at_issue(
                h,
                ft_rma_post(FERRY_ATOMIC_AND, (uint32_t)at_and_value(id, i, 32), 4, AT_OFF_AND32),
                i, NULL);
            at_issue(h,
                     ft_rma_post(FERRY_ATOMIC_OR, (uint32_t)at_or_value(id, i, 30), 4, AT_OFF_OR32),
                     i, NULL);
            at_issue(h,
                     ft_rma_post(FERRY_ATOMIC_XOR, (uint32_t)at_xor_value(id, i), 4, AT_OFF_XOR32),
                     i, NULL);
        }
        at_drain(h);
        ft_chan_send_token(chan, AT_TAG_DONE, section, 0, 0, 0);
        return;
    case AT_SWAP:
        at_bitmap_init(&h->bm, 1 + 2 * AT_N_SWAP);
        at_bitmap_init(&h->bm2, 1 + 2 * AT_N_SWAP);
        for (uint64_t i = 0; i < AT_N_SWAP; i++) {
            at_issue(
                h,
                ft_rma_fetch(FERRY_ATOMIC_SWAP, at_swap64_value(id, i), 0, 8, AT_OFF_SWAP64, NULL),
                64, at_swap_result);
            at_issue(
                h,
                ft_rma_fetch(FERRY_ATOMIC_SWAP, at_swap32_value(id, i), 0, 4, AT_OFF_SWAP32, NULL),
                32, at_swap_result);
        }
        at_drain(h);
        ft_chan_send_token(chan, AT_TAG_DONE, section, 0, 0, 0);
        ft_chan_send_big(chan, h->bm.bits, h->bm.bytes);
        ft_chan_send_big(chan, h->bm2.bits, h->bm2.bytes);
        at_bitmap_free(&h->bm);
        at_bitmap_free(&h->bm2);
        return;
    case AT_LOCK: {
        /* Strict turns: after its round i (but the last), a hammer waits until the other has
         * incremented the counter, so every acquisition after the first takes the lock over
         * from the other hammer, and the value read must be exactly the one expected. */
        uint64_t spins = 0, last = 0, cas_retries = 0, polls = 0;
        for (uint64_t i = 0; i < AT_N_LOCK; i++) {
            uint64_t r;
            while ((r = at_fetch_now(h, FERRY_ATOMIC_CSWAP, id, 0, 8, AT_OFF_LOCK)) != 0) {
                FT_CHECK(r == 1 || r == 2, "lock: the lock word holds %llu", (unsigned long long)r);
                FT_CHECK(r != id, "lock: the lock word holds my own id %u, which I released", id);
                if ((++spins & 0xf) == 0)
                    sched_yield(); /* the holder may need this CPU */
            }
            uint64_t c = 0xdeadbeef;
            ft_rma_op_t get = ft_rma_get(&c, sizeof(c), AT_OFF_PROT);
            ft_rma_expect(h->f.worker, h->ep, h->cur, &get, FERRY_OK, "lock: reading the counter");
            FT_CHECK(i == 0 ? c <= 1 : c == last + 2,
                     "lock: round %llu read the protected counter as %llu, expected %s%llu: the "
                     "lock did not exclude the other hammer, or a put was lost",
                     (unsigned long long)i, (unsigned long long)c, i == 0 ? "at most " : "",
                     i == 0 ? 1ull : (unsigned long long)(last + 2));
            last = c;
            c++;
            ft_rma_op_t put = ft_rma_put(&c, sizeof(c), AT_OFF_PROT);
            ft_rma_expect(h->f.worker, h->ep, h->cur, &put, FERRY_OK, "lock: writing the counter");
            ft_rma_flush_ep(h->f.worker, h->ep, AT_TIMEOUT_MS);
            if (i % 2 == 0)
                r = at_fetch_now(h, FERRY_ATOMIC_SWAP, 0, 0, 8, AT_OFF_LOCK);
            else
                r = at_fetch_now(h, FERRY_ATOMIC_CSWAP, 0, id, 8, AT_OFF_LOCK);
            FT_CHECK(r == id, "lock: releasing the lock fetched %llu, expected my id %u",
                     (unsigned long long)r, id);
            if (i + 1 == AT_N_LOCK)
                break;
            /* the other hammer's turn */
            uint64_t now = c;
            ft_deadline_t deadline = ft_deadline_in_ms(AT_TIMEOUT_MS);
            while (now == c) {
                ft_rma_op_t poll = ft_rma_get(&now, sizeof(now), AT_OFF_PROT);
                ft_rma_expect(h->f.worker, h->ep, h->cur, &poll, FERRY_OK,
                              "lock: waiting for the other hammer's turn");
                polls++;
                FT_CHECK((polls & 0xff) != 0 || !ft_deadline_passed(deadline),
                         "lock: the other hammer took no turn after round %llu",
                         (unsigned long long)i);
                sched_yield(); /* the other hammer may need this CPU */
                if ((polls & 0x3f) == 0)
                    ft_progress_once(h->f.worker);
            }
            FT_CHECK(now == c + 1,
                     "lock: the counter went from %llu to %llu during the other "
                     "hammer's turn",
                     (unsigned long long)c, (unsigned long long)now);
        }
        /* a 32-bit counter incremented by fetch + CSWAP retries */
        for (uint64_t i = 0; i < AT_N_CAS32; i++) {
            uint64_t old = at_fetch_now(h, FERRY_ATOMIC_ADD, 0, 0, 4, AT_OFF_CAS32);
            for (;;) {
                uint64_t r =
                    at_fetch_now(h, FERRY_ATOMIC_CSWAP, (uint32_t)(old + 1), old, 4, AT_OFF_CAS32);
                if (r == old)
                    break;
                cas_retries++;
                old = r;
            }
        }
        ft_rma_flush_ep(h->f.worker, h->ep, AT_TIMEOUT_MS);
        ft_chan_send_token(chan, AT_TAG_DONE, section, spins, cas_retries, 0);
        return;
    }
    case AT_MIXED:
        for (uint64_t i = 0; i < at_long(AT_N_MIXED_SHM);
             i++, at_maybe_barrier(h, i, at_long(AT_N_MIXED_SHM)))
            at_issue(h, ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, AT_OFF_MIX, NULL), i, NULL);
        at_drain(h);
        ft_chan_send_token(chan, AT_TAG_DONE, section, 0, 0, 0);
        return;
    default:
        ft_fail_at(__FILE__, __LINE__, "unknown section %d", (int)section);
    }
}

static int at_hammer_role(int chan, void *arg)
{
    at_hammer_t h = {.id = (unsigned)(uintptr_t)arg};
    uint8_t address[FT_CHAN_MSG_MAX];
    char what[64];

    ft_ferry_init(&h.f, NULL, NULL);
    size_t len = ft_recv_address(chan, address, sizeof(address), AT_TIMEOUT_MS);
    h.ep = ft_ep_create(h.f.worker, address, len, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(h.ep), ft_remote_transport()) == 0,
             "the endpoint uses %s", ferry_ep_transport_name(h.ep));
    uint8_t key[AT_KINDS][FT_CHAN_MSG_MAX];
    size_t key_len[AT_KINDS];
    for (int k = 0; k < AT_KINDS; k++) {
        key_len[k] = ft_rkey_recv(chan, key[k], sizeof(key[k]), AT_TIMEOUT_MS);
        FT_CHECK_OK(ferry_rkey_unpack(h.ep, key[k], key_len[k], &h.rkey[k]));
    }
    /* A second key of the mapped memory, asked for a pointer before the connection is up: it
     * says "not yet" (or, when the connection was quick, gives one); once the endpoint is
     * connected it must give one. */
    ferry_rkey_t *early_key = NULL;
    void *p = NULL;
    FT_CHECK_OK(ferry_rkey_unpack(h.ep, key[AT_ALLOC], key_len[AT_ALLOC], &early_key));
    ferry_status_t early = ferry_rkey_ptr(early_key, AT_OFF_C64, &p);
    FT_CHECK(early == FERRY_OK || early == FERRY_ERR_NOT_CONNECTED ||
                 (early == FERRY_ERR_UNSUPPORTED && strcmp(ft_remote_transport(), "tcp") == 0),
             "ferry_rkey_ptr before the connection is up returned %s", ferry_status_name(early));
    FT_CHECK_STATUS(ferry_rkey_ptr(h.rkey[AT_REG], AT_OFF_C64, &p), FERRY_ERR_UNSUPPORTED);
    /* bring the connection up: the owner progresses */
    for (int k = 0; k < AT_KINDS; k++) {
        uint64_t r = 0;
        ft_rma_op_t op = ft_rma_fetch(FERRY_ATOMIC_ADD, 0, 0, 8, AT_OFF_MIX, &r);
        ft_rma_expect(h.f.worker, h.ep, h.rkey[k], &op, FERRY_OK, "the first fetch-add");
        FT_CHECK(r == 0, "the first fetch-add of 0 read %llu", (unsigned long long)r);
    }
    bool tcp = strcmp(ft_remote_transport(), "tcp") == 0; /* maps nothing: no pointers */
    FT_CHECK_STATUS(ferry_rkey_ptr(h.rkey[AT_ALLOC], AT_OFF_C64, &p),
                    tcp ? FERRY_ERR_UNSUPPORTED : FERRY_OK);
    ft_chan_send_token(chan, AT_TAG_READY, 0, 0, 0, 0);
    for (;;) {
        ft_token_t t;
        ft_progress_until_token(h.f.worker, chan, AT_TAG_GO, AT_TIMEOUT_MS, &t);
        if (t.v[0] == AT_EXIT)
            break;
        FT_CHECK(t.v[0] < AT_SECTIONS && t.v[1] < AT_KINDS, "GO %llu/%llu",
                 (unsigned long long)t.v[0], (unsigned long long)t.v[1]);
        snprintf(what, sizeof(what), "%s on %s memory", at_section_names[t.v[0]],
                 t.v[1] == AT_ALLOC ? "alloc" : "registered");
        h.what = what;
        h.cur = h.rkey[t.v[1]];
        at_hammer_section(&h, (at_section_t)t.v[0], chan);
    }
    /* last, so that the sections ran whatever this says */
    ferry_status_t late = ferry_rkey_ptr(early_key, AT_OFF_C64, &p);
    FT_CHECK(late == (tcp ? FERRY_ERR_UNSUPPORTED : FERRY_OK),
             "ferry_rkey_ptr on the owner's ferry_mem_alloc memory, the endpoint connected, "
             "returned %s because it was first asked (and said %s) before the connection was "
             "up: the key never maps the memory (its atomics are not CPU atomics)",
             ferry_status_name(late), ferry_status_name(early));
    ferry_rkey_release(early_key);
    for (int k = 0; k < AT_KINDS; k++)
        ferry_rkey_release(h.rkey[k]);
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(h.ep, 0, &comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(h.f.worker, 10000, &comp, "the graceful close");
    ft_chan_send_token(chan, AT_TAG_DONE, AT_EXIT, 0, 0, 0);
    ft_chan_expect_eof(chan, AT_TIMEOUT_MS);
    ferry_ep_destroy(h.ep);
    ft_ferry_fini(&h.f);
    return 0;
}

/* ------------------------------------------------------------------ the owner */

typedef struct at_owner {
    ft_ferry_t f;
    ft_peer_t peer[2];
    uint8_t *mem[AT_KINDS];     /* the regions */
    ferry_mem_t *reg[AT_KINDS]; /* their registrations */
    uint8_t *reg_block;         /* malloc'ed: guard, registered region, guard */
    uint8_t expect[AT_REGION];  /* what the region of the kind in use must hold */
} at_owner_t;

static uint64_t at_load(const uint8_t *mem, unsigned off, size_t size)
{
    if (size == 4)
        return __atomic_load_n((const uint32_t *)(mem + off), __ATOMIC_SEQ_CST);
    return __atomic_load_n((const uint64_t *)(mem + off), __ATOMIC_SEQ_CST);
}

static void at_store(uint8_t *mem, unsigned off, size_t size, uint64_t v)
{
    if (size == 4)
        __atomic_store_n((uint32_t *)(mem + off), (uint32_t)v, __ATOMIC_SEQ_CST);
    else
        __atomic_store_n((uint64_t *)(mem + off), v, __ATOMIC_SEQ_CST);
}

static void at_set(at_owner_t *o, at_kind_t k, unsigned off, size_t size, uint64_t v)
{
    at_store(o->mem[k], off, size, v);
    if (size == 4) {
        uint32_t w = (uint32_t)v;
        memcpy(o->expect + off, &w, 4);
    } else {
        memcpy(o->expect + off, &v, 8);
    }
}

static void at_expect(at_owner_t *o, unsigned off, size_t size, uint64_t v)
{
    if (size == 4) {
        uint32_t w = (uint32_t)v;
        memcpy(o->expect + off, &w, 4);
    } else {
        memcpy(o->expect + off, &v, 8);
    }
}

static void at_check_region(at_owner_t *o, at_kind_t k, const char *when)
{
    const uint8_t *m = o->mem[k];
    for (unsigned i = 0; i < AT_REGION; i++) {
        if (m[i] == o->expect[i])
            continue;
        unsigned w = i & ~7u;
        uint64_t got, want;
        memcpy(&got, m + w, 8);
        memcpy(&want, o->expect + w, 8);
        ft_fail_at(__FILE__, __LINE__,
                   "%s, %s memory: byte %u is 0x%02x, expected 0x%02x (the 8-byte word at %u "
                   "holds 0x%016llx, expected 0x%016llx)",
                   when, at_kind_names[k], i, m[i], o->expect[i], w, (unsigned long long)got,
                   (unsigned long long)want);
    }
    if (k == AT_REG) {
        for (unsigned g = 0; g < AT_GUARD; g++) {
            FT_CHECK(o->reg_block[g] == AT_FILL,
                     "%s: guard byte %u before the registered "
                     "region changed",
                     when, AT_GUARD - g);
            FT_CHECK(o->reg_block[AT_GUARD + AT_REGION + g] == AT_FILL,
                     "%s: guard byte %u after the registered region changed", when, g);
        }
    }
}

typedef struct at_wait {
    at_owner_t *o;
    bool done[2];
    ft_token_t token[2];
    unsigned spins;
    uint64_t own_left; /* mixed: CPU atomics the owner still has to do */
    uint64_t *own_word;
    bool sleep; /* wait in ferry_worker_wait (the hammers then have the CPUs) */
} at_wait_t;

static bool at_both_done(void *arg)
{
    at_wait_t *w = arg;
    if (w->own_left > 0) {
        __atomic_fetch_add(w->own_word, 1, __ATOMIC_SEQ_CST);
        w->own_left--;
    }
    if (w->sleep || (++w->spins & 0x1f) == 0) {
        for (int p = 0; p < 2; p++) {
            if (!w->done[p])
                w->done[p] = ft_chan_try_token(w->o->peer[p].chan, AT_TAG_DONE, &w->token[p]);
        }
    }
    return w->done[0] && w->done[1] && w->own_left == 0;
}

/* Progress (and do the owner's own CPU atomics) until both hammers are done. */
static void at_wait_both(at_owner_t *o, at_wait_t *w, const char *what)
{
    w->o = o;
    if (w->sleep) {
        ft_deadline_t deadline = ft_deadline_in_ms(AT_TIMEOUT_MS);
        while (!at_both_done(w)) {
            FT_CHECK(!ft_deadline_passed(deadline), "timed out after %d ms waiting for %s",
                     AT_TIMEOUT_MS, what);
            ferry_status_t status = ferry_worker_wait(o->f.worker, 2);
            FT_CHECK(status == FERRY_OK || status == FERRY_ERR_TIMED_OUT,
                     "ferry_worker_wait returned %s", ferry_status_name(status));
        }
    } else
        ft_progress_until(o->f.worker, AT_TIMEOUT_MS, at_both_done, w, what);
}

static void at_recv_bitmap(at_owner_t *o, int p, at_bitmap_t *b, size_t nbits)
{
    at_bitmap_init(b, nbits);
    ft_chan_recv_big(o->peer[p].chan, b->bits, b->bytes, AT_TIMEOUT_MS);
}

static void at_section(at_owner_t *o, at_kind_t k, at_section_t s)
{
    at_wait_t w = {0};
    char what[128];
    uint64_t start = ft_now_ns();
    uint8_t *m = o->mem[k];
    snprintf(what, sizeof(what), "section %s on %s memory", at_section_names[s], at_kind_names[k]);

    /* set the words up */
    switch (s) {
    case AT_HOLD:
        at_store(o->mem[AT_ALLOC], AT_OFF_HOLD, 8, 0);
        at_store(o->mem[AT_REG], AT_OFF_HOLD, 8, 0);
        break;
    case AT_FADD64:
        at_set(o, k, AT_OFF_C64, 8, 0);
        break;
    case AT_FADD32:
        at_set(o, k, AT_OFF_C32, 4, AT_C32_INIT);
        break;
    case AT_POST:
        at_set(o, k, AT_OFF_ADD64, 8, 0x1000);
        at_set(o, k, AT_OFF_AND64, 8, AT_AND_INIT);
        at_set(o, k, AT_OFF_OR64, 8, AT_OR_INIT);
        at_set(o, k, AT_OFF_XOR64, 8, AT_XOR_INIT);
        at_set(o, k, AT_OFF_ADD32, 4, 0xfffffff0u);
        at_set(o, k, AT_OFF_AND32, 4, (uint32_t)AT_AND_INIT);
        at_set(o, k, AT_OFF_OR32, 4, 0x80000000u);
        at_set(o, k, AT_OFF_XOR32, 4, (uint32_t)AT_XOR_INIT);
        break;
    case AT_SWAP:
        at_set(o, k, AT_OFF_SWAP64, 8, AT_SWAP64_INIT);
        at_set(o, k, AT_OFF_SWAP32, 4, AT_SWAP32_INIT);
        break;
    case AT_LOCK:
        at_set(o, k, AT_OFF_LOCK, 8, 0);
        at_set(o, k, AT_OFF_PROT, 8, 0);
        at_set(o, k, AT_OFF_CAS32, 4, 0);
        break;
    case AT_MIXED:
        at_set(o, k, AT_OFF_MIX, 8, 0);
        break;
    default:
        break;
    }
    if (s != AT_HOLD) {
        at_set(o, k, AT_OFF_BARRIER, 8, 0);
        at_check_region(o, k, "before the section");
        at_expect(o, AT_OFF_BARRIER, 8, 2 * at_section_barriers(s));
    }

    if (s == AT_HOLD) {
        /* only hammer A; the owner makes no progress until A says so */
        ft_chan_send_token(o->peer[0].chan, AT_TAG_GO, s, k, 0, 0);
        ft_token_t t = ft_chan_expect_token(o->peer[0].chan, AT_TAG_DONE, AT_TIMEOUT_MS);
        FT_CHECK(t.v[0] == 1, "hold: token %llu", (unsigned long long)t.v[0]);
        FT_CHECK(at_load(m, AT_OFF_HOLD, 8) == 1,
                 "hold: the fetch-add on mapped memory is not in the owner's memory (%llu)",
                 (unsigned long long)at_load(m, AT_OFF_HOLD, 8));
        ft_progress_until_token(o->f.worker, o->peer[0].chan, AT_TAG_DONE, AT_TIMEOUT_MS, &t);
        FT_CHECK(t.v[0] == 2, "hold: token %llu", (unsigned long long)t.v[0]);
        FT_CHECK(at_load(o->mem[AT_REG], AT_OFF_HOLD, 8) == 1,
                 "hold: the fetch-add on registered memory is not there (%llu)",
                 (unsigned long long)at_load(o->mem[AT_REG], AT_OFF_HOLD, 8));
        ft_note("hold: a fetch-add on mapped memory completed while the owner made no progress; "
                "one on registered memory waited for it");
        return;
    }

    if (s == AT_MIXED) {
        w.own_left = at_long(AT_N_MIXED_SHM);
        w.own_word = (uint64_t *)(m + AT_OFF_MIX);
    }
    /* the mapped memory needs nothing from the owner: let the hammers have the CPUs (over tcp
     * nothing is mapped: the owner's progress performs every atomic, so it keeps polling) */
    w.sleep = k == AT_ALLOC && s != AT_MIXED && strcmp(ft_remote_transport(), "tcp") != 0;
    for (int p = 0; p < 2; p++)
        ft_chan_send_token(o->peer[p].chan, AT_TAG_GO, s, k, 0, 0);
    at_wait_both(o, &w, what);
    for (int p = 0; p < 2; p++)
        FT_CHECK(w.token[p].v[0] == (uint64_t)s, "%s: hammer %d says it did section %llu", what,
                 p + 1, (unsigned long long)w.token[p].v[0]);

    switch (s) {
    case AT_FADD64: {
        at_bitmap_t b[2];
        for (int p = 0; p < 2; p++)
            at_recv_bitmap(o, p, &b[p], 2 * at_long(AT_N_FADD64_SHM));
        at_bitmap_merge(&b[0], &b[1], "fadd64");
        for (size_t i = 0; i < 2 * at_long(AT_N_FADD64_SHM); i++)
            FT_CHECK(at_bitmap_test(&b[0], i), "fadd64: nobody fetched the value %zu", i);
        at_expect(o, AT_OFF_C64, 8, 2 * at_long(AT_N_FADD64_SHM));
        ft_note("fadd64 on %s: the other hammer's adds came between %llu + %llu times",
                at_kind_names[k], (unsigned long long)w.token[0].v[1],
                (unsigned long long)w.token[1].v[1]);
        at_bitmap_free(&b[0]);
        at_bitmap_free(&b[1]);
        break;
    }
    case AT_FADD32: {
        at_bitmap_t b[2];
        size_t count = 0;
        for (int p = 0; p < 2; p++)
            at_recv_bitmap(o, p, &b[p], 8 * at_long(AT_N_FADD32_SHM));
        at_bitmap_merge(&b[0], &b[1], "fadd32");
        for (size_t i = 0; i < 8 * at_long(AT_N_FADD32_SHM); i++)
            count += at_bitmap_test(&b[0], i);
        FT_CHECK(count == 2 * at_long(AT_N_FADD32_SHM),
                 "fadd32: %zu distinct values fetched, expected %llu", count,
                 (unsigned long long)(2 * at_long(AT_N_FADD32_SHM)));
        at_expect(o, AT_OFF_C32, 4, AT_C32_INIT + 8u * at_long(AT_N_FADD32_SHM));
        at_bitmap_free(&b[0]);
        at_bitmap_free(&b[1]);
        break;
    }
    case AT_POST: {
        uint64_t add64 = 0x1000, and64 = AT_AND_INIT, or64 = AT_OR_INIT, xor64 = AT_XOR_INIT;
        uint32_t add32 = 0xfffffff0u, and32 = (uint32_t)AT_AND_INIT, or32 = 0x80000000u,
                 xor32 = (uint32_t)AT_XOR_INIT;
        for (unsigned id = 1; id <= 2; id++) {
            for (uint64_t i = 0; i < at_long(AT_N_POST_SHM); i++) {
                add64 += at_add_value(id, i);
                and64 &= at_and_value(id, i, 64);
                or64 |= at_or_value(id, i, 56);
                xor64 ^= at_xor_value(id, i);
                add32 += (uint32_t)at_add_value(id, i);
                and32 &= (uint32_t)at_and_value(id, i, 32);
                or32 |= (uint32_t)at_or_value(id, i, 30);
                xor32 ^= (uint32_t)at_xor_value(id, i);
            }
        }
        at_expect(o, AT_OFF_ADD64, 8, add64);
        at_expect(o, AT_OFF_AND64, 8, and64);
        at_expect(o, AT_OFF_OR64, 8, or64);
        at_expect(o, AT_OFF_XOR64, 8, xor64);
        at_expect(o, AT_OFF_ADD32, 4, add32);
        at_expect(o, AT_OFF_AND32, 4, and32);
        at_expect(o, AT_OFF_OR32, 4, or32);
        at_expect(o, AT_OFF_XOR32, 4, xor32);
        break;
    }
    case AT_SWAP:
        for (int which = 0; which < 2; which++) {
            bool is32 = which == 1;
            at_bitmap_t b[2];
            for (int p = 0; p < 2; p++)
                at_recv_bitmap(o, p, &b[p], 1 + 2 * AT_N_SWAP);
            at_bitmap_merge(&b[0], &b[1], is32 ? "swap32" : "swap64");
            uint64_t final = at_load(m, is32 ? AT_OFF_SWAP32 : AT_OFF_SWAP64, is32 ? 4 : 8);
            size_t fbit = at_swap_bit(final, is32);
            FT_CHECK(fbit != SIZE_MAX && fbit != 0,
                     "%s: the final value 0x%llx is not one a hammer wrote",
                     is32 ? "swap32" : "swap64", (unsigned long long) final);
            FT_CHECK(!at_bitmap_test(&b[0], fbit),
                     "%s: the final value 0x%llx was also fetched by a swap",
                     is32 ? "swap32" : "swap64", (unsigned long long) final);
            for (size_t i = 0; i < 1 + 2 * AT_N_SWAP; i++)
                FT_CHECK(i == fbit || at_bitmap_test(&b[0], i),
                         "%s: value of bit %zu (0: the initial value) was written but neither "
                         "fetched nor left",
                         is32 ? "swap32" : "swap64", i);
            at_expect(o, is32 ? AT_OFF_SWAP32 : AT_OFF_SWAP64, is32 ? 4 : 8, final);
            at_bitmap_free(&b[0]);
            at_bitmap_free(&b[1]);
        }
        break;
    case AT_LOCK:
        at_expect(o, AT_OFF_LOCK, 8, 0);
        at_expect(o, AT_OFF_PROT, 8, 2 * AT_N_LOCK);
        at_expect(o, AT_OFF_CAS32, 4, 2 * AT_N_CAS32);
        ft_note("lock on %s: the lock passed %u times; %llu + %llu failed acquisitions, %llu + "
                "%llu CSWAP retries",
                at_kind_names[k], 2 * AT_N_LOCK - 1, (unsigned long long)w.token[0].v[1],
                (unsigned long long)w.token[1].v[1], (unsigned long long)w.token[0].v[2],
                (unsigned long long)w.token[1].v[2]);
        break;
    case AT_MIXED:
        at_expect(o, AT_OFF_MIX, 8, 3 * at_long(AT_N_MIXED_SHM));
        break;
    default:
        break;
    }
    at_check_region(o, k, what);
    ft_note("%s: %.2f s", what, (double)(ft_now_ns() - start) / 1e9);
}

int main(void)
{
    static at_owner_t o;
    ft_files_t before;

    bool over_tcp = strcmp(ft_remote_transport(), "tcp") == 0;

    ft_set_role("owner");
    at_long_divisor = over_tcp ? 4 : 1;
    ft_watchdog(over_tcp ? 110 : 55); /* within ctest's TIMEOUT (tests.cmake) */
    ft_files_snapshot(&before);
    ft_peer_spawn(&o.peer[0], "hammer-A", at_hammer_role, (void *)(uintptr_t)1);
    ft_peer_spawn(&o.peer[1], "hammer-B", at_hammer_role, (void *)(uintptr_t)2);
#ifdef PR_SET_PTRACER
    /* let the hammers map our ferry_mem_alloc memory where Yama restricts ptrace */
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    ft_ferry_init(&o.f, NULL, NULL);

    void *ptr = NULL;
    FT_CHECK_OK(ferry_mem_alloc(o.f.context, AT_REGION, FERRY_ACCESS_ALL, &o.reg[AT_ALLOC], &ptr));
    o.mem[AT_ALLOC] = ptr;
    o.reg_block = aligned_alloc(64, AT_GUARD + AT_REGION + AT_GUARD);
    FT_CHECK(o.reg_block != NULL, "out of memory");
    memset(o.reg_block, AT_FILL, AT_GUARD + AT_REGION + AT_GUARD);
    o.mem[AT_REG] = o.reg_block + AT_GUARD;
    memset(o.mem[AT_ALLOC], AT_FILL, AT_REGION);
    ferry_iov_t iov = {.buffer = o.mem[AT_REG], .length = AT_REGION};
    FT_CHECK_OK(ferry_mem_register(o.f.context, &iov, 1, FERRY_ACCESS_ALL, 0, &o.reg[AT_REG]));
    memset(o.expect, AT_FILL, sizeof(o.expect));
    /* the words the connection set-up touches */
    for (int k = 0; k < AT_KINDS; k++)
        at_store(o.mem[k], AT_OFF_MIX, 8, 0);

    for (int p = 0; p < 2; p++) {
        ft_send_address(o.peer[p].chan, o.f.worker);
        for (int k = 0; k < AT_KINDS; k++)
            ft_rkey_send(o.peer[p].chan, o.reg[k]);
    }
    for (int p = 0; p < 2; p++)
        ft_progress_until_token(o.f.worker, o.peer[p].chan, AT_TAG_READY, AT_TIMEOUT_MS, NULL);

    uint64_t start = ft_now_ns();
    /* hold's premise is memory the hammers map; tcp maps nothing (every atomic is performed by
     * the owner's progress, which the other sections cover) */
    if (strcmp(ft_remote_transport(), "tcp") != 0)
        at_section(&o, AT_ALLOC, AT_HOLD);
    else
        ft_note("hold: skipped over tcp (nothing is mapped; the owner performs every atomic)");
    for (int k = 0; k < AT_KINDS; k++) {
        memset(o.expect, AT_FILL, sizeof(o.expect));
        at_set(&o, (at_kind_t)k, AT_OFF_MIX, 8, 0);
        at_set(&o, (at_kind_t)k, AT_OFF_HOLD, 8, 0);
        for (int s = AT_FADD64; s < AT_SECTIONS; s++)
            at_section(&o, (at_kind_t)k, (at_section_t)s);
    }
    ft_note("all sections in %.2f s", (double)(ft_now_ns() - start) / 1e9);

    for (int p = 0; p < 2; p++)
        ft_chan_send_token(o.peer[p].chan, AT_TAG_GO, AT_EXIT, 0, 0, 0);
    for (int p = 0; p < 2; p++) {
        ft_token_t t;
        ft_progress_until_token(o.f.worker, o.peer[p].chan, AT_TAG_DONE, AT_TIMEOUT_MS, &t);
        FT_CHECK(t.v[0] == AT_EXIT, "exit: token %llu", (unsigned long long)t.v[0]);
    }
    for (int p = 0; p < 2; p++) {
        close(o.peer[p].chan);
        ft_peer_expect_exit(&o.peer[p], 30000, 0);
    }
    for (int k = 0; k < AT_KINDS; k++)
        FT_CHECK_OK(ferry_mem_deregister(o.reg[k]));
    free(o.reg_block);
    ft_ferry_fini(&o.f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
