/* One-sided operations within one process: a worker with an endpoint to itself (the self
 * transport, hence the target-executed protocol), every byte checked.
 *
 * Regions: A contiguous (odd length), B three uneven pieces, C forty 100-byte pieces with
 * gaps between them in one buffer (the gaps must never change), R read-only, N without
 * REMOTE_ATOMIC, U single-use, D deregistered before use, M at an odd address.
 *   put/get      sizes 0, 1, 8, 63, 64, 4095, 4096, 64 KiB, 1 MiB at the start, the end and an
 *                odd offset in the middle, on A and B: the region holds the data and nothing
 *                else changed; the get returns it and writes nothing past the buffer
 *   putv/getv    uneven local pieces x remote ranges (zero-length ones included, many small
 *                ones, more than one request's worth), read back through another shape
 *   atomics      post ADD/AND/OR/XOR, fetch ADD/SWAP/CSWAP (hit and miss), 32 and 64 bits,
 *                the neighbouring bytes untouched; 10 000 posts and 2 000 fetch-adds
 *   flush        many operations without completions, then ferry_ep_flush/ferry_worker_flush
 *   fence        operations after a fence complete after those before it, their iov arrays
 *                may be reused at once, and a flush covers them
 *   back-pressure the transport's queue full: a put waits for room inside ferry
 *   bad input    one past the end, offset + length overflowing, a write through a read-only
 *                key, an atomic without REMOTE_ATOMIC, misaligned atomics (offset, target
 *                address, a word across pieces), a deregistered region, a second use of a
 *                single-use region, a key of another endpoint, NULLs, unequal totals, a
 *                corrupted key; the endpoint works after each
 *   malformed    hand-made protocol messages (INTERNAL: fy_am_send_internal): truncated,
 *                unknown version or operation, a put whose payload differs from its length,
 *                replies to ids nobody issued: each dropped, one warning per kind, nothing
 *                written, the endpoint still works */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "proto/am.h"
#include "proto/rma.h"

#define RS_MIB (1u << 20)
#define RS_TIMEOUT_MS 30000

static ferry_worker_t *rs_worker;
static ferry_ep_t *rs_ep;
static uint64_t rs_seq = 1;

/* ------------------------------------------------------------------ regions */

typedef struct rs_region {
    const char *name;
    ferry_iov_t pieces[64];
    size_t count;
    uint8_t *backing[3]; /* what to free */
    size_t length;
    ferry_mem_t *mem;
    ferry_rkey_t *rkey;
    uint8_t *gaps; /* C: the buffer whose bytes between pieces must stay 0xEE */
    size_t gaps_length;
} rs_region_t;

static void *rs_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    FT_CHECK(p != NULL, "malloc(%zu)", size);
    return p;
}

static ferry_rkey_t *rs_key(ferry_ep_t *ep, ferry_mem_t *mem)
{
    void *packed = NULL;
    size_t length = 0;
    ferry_rkey_t *rkey = NULL;
    FT_CHECK_OK(ferry_rkey_pack(mem, &packed, &length));
    FT_CHECK_OK(ferry_rkey_unpack(ep, packed, length, &rkey));
    ferry_rkey_buffer_release(packed);
    return rkey;
}

static void rs_register(rs_region_t *r, ferry_context_t *context, unsigned access, unsigned flags)
{
    r->length = 0;
    for (size_t i = 0; i < r->count; i++)
        r->length += r->pieces[i].length;
    FT_CHECK_OK(ferry_mem_register(context, r->pieces, r->count, access, flags, &r->mem));
    FT_CHECK(ferry_mem_length(r->mem) == r->length, "region %s: ferry_mem_length %zu, not %zu",
             r->name, ferry_mem_length(r->mem), r->length);
    r->rkey = rs_key(rs_ep, r->mem);
}

static void rs_region_contig(rs_region_t *r, const char *name, ferry_context_t *context,
                             size_t length, unsigned access, unsigned flags)
{
    memset(r, 0, sizeof(*r));
    r->name = name;
    r->backing[0] = rs_malloc(length);
    memset(r->backing[0], 0, length);
    r->pieces[0] = (ferry_iov_t){.buffer = r->backing[0], .length = length};
    r->count = 1;
    rs_register(r, context, access, flags);
}

static void rs_region_free(rs_region_t *r)
{
    ferry_rkey_release(r->rkey);
    if (r->mem != NULL)
        FT_CHECK_OK(ferry_mem_deregister(r->mem));
    for (size_t i = 0; i < 3; i++)
        free(r->backing[i]);
    memset(r, 0, sizeof(*r));
}

/* The region's bytes, in order, into dst. */
static void rs_region_read(const rs_region_t *r, uint8_t *dst)
{
    for (size_t i = 0; i < r->count; i++) {
        memcpy(dst, r->pieces[i].buffer, r->pieces[i].length);
        dst += r->pieces[i].length;
    }
}

static void rs_region_write(rs_region_t *r, const uint8_t *src)
{
    for (size_t i = 0; i < r->count; i++) {
        memcpy(r->pieces[i].buffer, src, r->pieces[i].length);
        src += r->pieces[i].length;
    }
}

static void rs_gaps_check(const rs_region_t *r, const char *what)
{
    if (r->gaps == NULL)
        return;
    size_t p = 0;
    for (size_t i = 0; i < r->gaps_length; i++) {
        bool inside = false;
        while (p < r->count && (uint8_t *)r->pieces[p].buffer + r->pieces[p].length <= r->gaps + i)
            p++;
        if (p < r->count && (uint8_t *)r->pieces[p].buffer <= r->gaps + i)
            inside = true;
        FT_CHECK(inside || r->gaps[i] == 0xEE,
                 "%s: byte %zu of region %s's buffer, outside the registration, is 0x%02x", what, i,
                 r->name, r->gaps[i]);
    }
}

/* The whole region must equal expected (its length). */
static void rs_region_expect(const rs_region_t *r, const uint8_t *expected, const char *what)
{
    uint8_t *actual = rs_malloc(r->length);
    rs_region_read(r, actual);
    if (memcmp(actual, expected, r->length) != 0) {
        size_t i = 0, bad = 0;
        while (actual[i] == expected[i])
            i++;
        for (size_t j = i; j < r->length; j++)
            bad += actual[j] != expected[j];
        FT_CHECK(false,
                 "%s: region %s differs at offset %zu (0x%02x, expected 0x%02x), %zu bytes "
                 "differ",
                 what, r->name, i, actual[i], expected[i], bad);
    }
    free(actual);
    rs_gaps_check(r, what);
}

/* ------------------------------------------------------------------ issuing and waiting */

typedef enum rs_kind { RS_PUT, RS_GET, RS_PUTV, RS_GETV, RS_POST, RS_FETCH } rs_kind_t;

typedef struct rs_op {
    rs_kind_t kind;
    ferry_ep_t *ep; /* NULL: rs_ep */
    ferry_rkey_t *rkey;
    void *buffer;
    size_t length;
    uint64_t offset;
    const ferry_iov_t *iov;
    size_t iovcnt;
    const ferry_remote_iov_t *remote;
    size_t remote_count;
    ferry_atomic_op_t aop;
    uint64_t value;
    uint64_t compare;
    size_t size;
    uint64_t *result;
} rs_op_t;

static ferry_status_t rs_call(const rs_op_t *op, ferry_completion_t *comp)
{
    ferry_ep_t *ep = op->ep != NULL ? op->ep : rs_ep;
    switch (op->kind) {
    case RS_PUT:
        return ferry_put(ep, op->buffer, op->length, op->offset, op->rkey, comp);
    case RS_GET:
        return ferry_get(ep, op->buffer, op->length, op->offset, op->rkey, comp);
    case RS_PUTV:
        return ferry_putv(ep, op->iov, op->iovcnt, op->remote, op->remote_count, op->rkey, comp);
    case RS_GETV:
        return ferry_getv(ep, op->iov, op->iovcnt, op->remote, op->remote_count, op->rkey, comp);
    case RS_POST:
        return ferry_atomic_post(ep, op->aop, op->value, op->size, op->offset, op->rkey, comp);
    case RS_FETCH:
        return ferry_atomic_fetch(ep, op->aop, op->value, op->compare, op->size, op->offset,
                                  op->rkey, op->result, comp);
    }
    return FERRY_ERR_INVALID_PARAM;
}

/* Start op, retrying FERRY_ERR_NO_RESOURCE with progress; comp (may be NULL) is counted as
 * ft_am_try_send does. Returns the status of the call that was not NO_RESOURCE. */
static ferry_status_t rs_start(const rs_op_t *op, ferry_completion_t *comp, uint64_t *no_resource_p)
{
    ft_deadline_t deadline = ft_deadline_in_ms(RS_TIMEOUT_MS);
    for (;;) {
        if (comp != NULL)
            comp->count++;
        ferry_status_t status = rs_call(op, comp);
        if (comp != NULL && status != FERRY_INPROGRESS)
            comp->count--;
        if (status != FERRY_ERR_NO_RESOURCE)
            return status;
        if (no_resource_p != NULL)
            (*no_resource_p)++;
        ferry_worker_progress(rs_worker);
        FT_CHECK(!ft_deadline_passed(deadline), "still FERRY_ERR_NO_RESOURCE after %d ms",
                 RS_TIMEOUT_MS);
    }
}

static void rs_wait(ferry_completion_t *comp, const char *what)
{
    ft_progress_until_completion(rs_worker, RS_TIMEOUT_MS, comp, what);
}

/* Run op to its end: the immediate status if it was not FERRY_INPROGRESS, else the
 * completion's. *immediate_p (may be NULL) receives the call's status. */
static ferry_status_t rs_run(const rs_op_t *op, ferry_status_t *immediate_p)
{
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    ferry_status_t status = rs_start(op, &comp, NULL);
    if (immediate_p != NULL)
        *immediate_p = status;
    if (status != FERRY_INPROGRESS)
        return status;
    rs_wait(&comp, "a one-sided operation's completion");
    return comp.status;
}

static void rs_run_ok(const rs_op_t *op, const char *what)
{
    ferry_status_t status = rs_run(op, NULL);
    FT_CHECK(status == FERRY_OK, "%s: %s (%s)", what, ferry_status_name(status),
             ferry_status_string(status));
}

/* ------------------------------------------------------------------ put/get */

static void rs_put_get(rs_region_t *r)
{
    static const size_t sizes[] = {0, 1, 8, 63, 64, 4095, 4096, 65536, RS_MIB};
    uint8_t *expected = rs_malloc(r->length);
    char what[200];

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t size = sizes[s];
        FT_CHECK(size <= r->length, "region %s too small", r->name);
        uint64_t offsets[3] = {0, r->length - size, ((r->length - size) / 2) | 1};
        if (offsets[2] > r->length - size)
            offsets[2] = 0;
        for (int o = 0; o < 3; o++) {
            uint64_t offset = offsets[o];
            uint64_t bg = ft_pattern_seed(0xb6, rs_seq, r->length);
            uint64_t seed = ft_pattern_seed(1, rs_seq++, size);
            snprintf(what, sizeof(what), "region %s: put of %zu bytes at offset %llu", r->name,
                     size, (unsigned long long)offset);
            ft_pattern_fill(expected, r->length, bg, 0);
            rs_region_write(r, expected);
            uint8_t *src = rs_malloc(size);
            ft_pattern_fill(src, size, seed, 0);
            rs_run_ok(&(rs_op_t){.kind = RS_PUT,
                                 .rkey = r->rkey,
                                 .buffer = src,
                                 .length = size,
                                 .offset = offset},
                      what);
            memcpy(expected + offset, src, size);
            rs_region_expect(r, expected, what);

            /* read it back, with a guard after the buffer */
            snprintf(what, sizeof(what), "region %s: get of %zu bytes at offset %llu", r->name,
                     size, (unsigned long long)offset);
            uint8_t *dst = rs_malloc(size + 64);
            memset(dst, 0xCD, size + 64);
            rs_run_ok(&(rs_op_t){.kind = RS_GET,
                                 .rkey = r->rkey,
                                 .buffer = dst,
                                 .length = size,
                                 .offset = offset},
                      what);
            ft_pattern_check(dst, size, seed, 0, what);
            for (size_t i = size; i < size + 64; i++)
                FT_CHECK(dst[i] == 0xCD, "%s: byte %zu past the buffer changed", what, i - size);
            rs_region_expect(r, expected, what); /* a get changes nothing there */
            free(dst);
            free(src);
        }
    }
    free(expected);
}

/* ------------------------------------------------------------------ putv/getv */

typedef struct rs_shape {
    const char *name;
    size_t local[200];
    size_t nlocal;
    ferry_remote_iov_t remote[160];
    size_t nremote;
    size_t get_local[8]; /* the shape the data is read back into */
    size_t nget_local;
} rs_shape_t;

static size_t rs_shape_total(const size_t *lengths, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lengths[i];
    return total;
}

static ferry_iov_t *rs_iov_alloc(const size_t *lengths, size_t n)
{
    ferry_iov_t *iov = rs_malloc(n * sizeof(*iov));
    for (size_t i = 0; i < n; i++) {
        iov[i].length = lengths[i];
        iov[i].buffer = lengths[i] ? rs_malloc(lengths[i]) : NULL;
    }
    return iov;
}

static void rs_iov_free(ferry_iov_t *iov, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(iov[i].buffer);
    free(iov);
}

static void rs_vector(rs_region_t *r, const rs_shape_t *shape)
{
    size_t total = rs_shape_total(shape->local, shape->nlocal);
    uint64_t bg = ft_pattern_seed(0xb6, rs_seq, r->length);
    uint64_t seed = ft_pattern_seed(2, rs_seq++, total);
    uint8_t *expected = rs_malloc(r->length);
    char what[200];

    size_t rtotal = 0;
    for (size_t i = 0; i < shape->nremote; i++)
        rtotal += shape->remote[i].length;
    FT_CHECK(rtotal == total && rs_shape_total(shape->get_local, shape->nget_local) == total,
             "shape %s is inconsistent", shape->name);
    ft_pattern_fill(expected, r->length, bg, 0);
    rs_region_write(r, expected);

    ferry_iov_t *iov = rs_iov_alloc(shape->local, shape->nlocal);
    uint64_t at = 0;
    for (size_t i = 0; i < shape->nlocal; i++) {
        ft_pattern_fill(iov[i].buffer, iov[i].length, seed, at);
        at += iov[i].length;
    }
    snprintf(what, sizeof(what), "region %s: putv, shape %s (%zu bytes)", r->name, shape->name,
             total);
    rs_run_ok(&(rs_op_t){.kind = RS_PUTV,
                         .rkey = r->rkey,
                         .iov = iov,
                         .iovcnt = shape->nlocal,
                         .remote = shape->remote,
                         .remote_count = shape->nremote},
              what);
    at = 0;
    for (size_t i = 0; i < shape->nremote; i++) {
        ft_pattern_fill(expected + shape->remote[i].offset, shape->remote[i].length, seed, at);
        at += shape->remote[i].length;
    }
    rs_region_expect(r, expected, what);
    rs_iov_free(iov, shape->nlocal);

    snprintf(what, sizeof(what), "region %s: getv, shape %s (%zu bytes)", r->name, shape->name,
             total);
    iov = rs_iov_alloc(shape->get_local, shape->nget_local);
    for (size_t i = 0; i < shape->nget_local; i++)
        if (iov[i].length)
            memset(iov[i].buffer, 0xCD, iov[i].length);
    rs_run_ok(&(rs_op_t){.kind = RS_GETV,
                         .rkey = r->rkey,
                         .iov = iov,
                         .iovcnt = shape->nget_local,
                         .remote = shape->remote,
                         .remote_count = shape->nremote},
              what);
    at = 0;
    for (size_t i = 0; i < shape->nget_local; i++) {
        ft_pattern_check(iov[i].buffer, iov[i].length, seed, at, what);
        at += iov[i].length;
    }
    rs_iov_free(iov, shape->nget_local);
    free(expected);
}

static void rs_shapes(rs_region_t *r)
{
    static rs_shape_t uneven = {
        .name = "uneven",
        .local = {1, 65536, 100003 - 65537},
        .nlocal = 3,
        .remote = {{3, 5000}, {200000, 7}, {5100, 0}, {300001, 100003 - 5007}},
        .nremote = 4,
        .get_local = {50000, 0, 50003},
        .nget_local = 3};
    static rs_shape_t large = {.name = "large (several requests)",
                               .local = {700000, 0, 300000},
                               .nlocal = 3,
                               .remote = {{0, 10}, {20, 600000}, {700000, 399990}},
                               .nremote = 3,
                               .get_local = {1, 999998, 1},
                               .nget_local = 3};
    static rs_shape_t small;
    if (small.nlocal == 0) {
        small.name = "many small pieces";
        small.nlocal = 200;
        for (size_t i = 0; i < 200; i++)
            small.local[i] = 3;
        small.nremote = 150;
        for (size_t i = 0; i < 150; i++)
            small.remote[i] = (ferry_remote_iov_t){.offset = 9 * i + 1, .length = 4};
        small.nget_local = 2;
        small.get_local[0] = 599;
        small.get_local[1] = 1;
    }
    if (r->length >= 1100000)
        rs_vector(r, &large);
    if (r->length >= 400000)
        rs_vector(r, &uneven);
    rs_vector(r, &small);
}

/* ------------------------------------------------------------------ atomics */

static uint64_t rs_apply(ferry_atomic_op_t aop, uint64_t old, uint64_t value, uint64_t compare)
{
    switch (aop) {
    case FERRY_ATOMIC_ADD:
        return old + value;
    case FERRY_ATOMIC_AND:
        return old & value;
    case FERRY_ATOMIC_OR:
        return old | value;
    case FERRY_ATOMIC_XOR:
        return old ^ value;
    case FERRY_ATOMIC_SWAP:
        return value;
    case FERRY_ATOMIC_CSWAP:
        return old == compare ? value : old;
    }
    return old;
}

/* One atomic on the word of the region at offset; checks the word, its neighbours and the
 * result. */
static void rs_atomic_one(rs_region_t *r, bool fetch, ferry_atomic_op_t aop, size_t size,
                          uint64_t offset, uint64_t init, uint64_t value, uint64_t compare)
{
    uint8_t *before = rs_malloc(r->length), *expected = rs_malloc(r->length);
    uint64_t mask = size == 4 ? 0xffffffffull : ~0ull;
    uint64_t result = ~0ull, word = init & mask;
    char what[160];

    snprintf(what, sizeof(what), "region %s: %s %d, %zu bytes at %llu", r->name,
             fetch ? "fetch" : "post", (int)aop, size, (unsigned long long)offset);
    ft_pattern_fill(before, r->length, ft_pattern_seed(0xa7, rs_seq++, size), 0);
    memcpy(before + offset, &word, size); /* little-endian */
    rs_region_write(r, before);
    rs_run_ok(&(rs_op_t){.kind = fetch ? RS_FETCH : RS_POST,
                         .rkey = r->rkey,
                         .aop = aop,
                         .value = value,
                         .compare = compare,
                         .size = size,
                         .offset = offset,
                         .result = &result},
              what);
    uint64_t after = rs_apply(aop, word, value & mask, compare & mask) & mask;
    memcpy(expected, before, r->length);
    memcpy(expected + offset, &after, size);
    rs_region_expect(r, expected, what);
    if (fetch)
        FT_CHECK(result == word, "%s: result 0x%llx, expected 0x%llx", what,
                 (unsigned long long)result, (unsigned long long)word);
    else
        FT_CHECK(result == ~0ull, "%s: a post wrote the result", what);
    free(before);
    free(expected);
}

static void rs_atomics(rs_region_t *r, uint64_t offset8, uint64_t offset4)
{
    const uint64_t init = 0x0123456789abcdefull, value = 0xf0f0f0f012345678ull;
    for (size_t size = 4; size <= 8; size += 4) {
        uint64_t offset = size == 8 ? offset8 : offset4;
        rs_atomic_one(r, false, FERRY_ATOMIC_ADD, size, offset, init, value, 0);
        rs_atomic_one(r, false, FERRY_ATOMIC_AND, size, offset, init, value, 0);
        rs_atomic_one(r, false, FERRY_ATOMIC_OR, size, offset, init, value, 0);
        rs_atomic_one(r, false, FERRY_ATOMIC_XOR, size, offset, init, value, 0);
        rs_atomic_one(r, true, FERRY_ATOMIC_ADD, size, offset, init, value, 0);
        rs_atomic_one(r, true, FERRY_ATOMIC_ADD, size, offset, ~0ull, 1, 0); /* wraps */
        rs_atomic_one(r, true, FERRY_ATOMIC_SWAP, size, offset, init, value, 0);
        rs_atomic_one(r, true, FERRY_ATOMIC_CSWAP, size, offset, init, value, init); /* hit */
        rs_atomic_one(r, true, FERRY_ATOMIC_CSWAP, size, offset, init, value, init + 1);
    }
}

/* Many atomics in flight: posts without completions (then a flush), fetch-adds with one. */
static void rs_atomic_flood(rs_region_t *r)
{
    enum { POSTS = 10000, FETCHES = 2000 };
    uint64_t *counter = (uint64_t *)((uint8_t *)r->pieces[0].buffer + 128);
    uint64_t no_resource = 0;
    *counter = 0;
    for (unsigned i = 0; i < POSTS; i++) {
        ferry_status_t status = rs_start(&(rs_op_t){.kind = RS_POST,
                                                    .rkey = r->rkey,
                                                    .aop = FERRY_ATOMIC_ADD,
                                                    .value = 1,
                                                    .size = 8,
                                                    .offset = 128},
                                         NULL, &no_resource);
        FT_CHECK(status == FERRY_INPROGRESS || status == FERRY_OK, "post %u: %s", i,
                 ferry_status_name(status));
    }
    ferry_completion_t flush = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_flush(rs_ep, &flush);
    FT_CHECK(status == FERRY_INPROGRESS || status == FERRY_OK, "ferry_ep_flush: %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        rs_wait(&flush, "the flush after 10000 posts");
    FT_CHECK(flush.status == FERRY_OK, "flush status %s", ferry_status_name(flush.status));
    FT_CHECK(*counter == POSTS, "after %d posted adds the counter is %llu", POSTS,
             (unsigned long long)*counter);

    uint64_t *results = rs_malloc(FETCHES * sizeof(*results));
    uint8_t *seen = rs_malloc(FETCHES);
    memset(seen, 0, FETCHES);
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    for (unsigned i = 0; i < FETCHES; i++) {
        status = rs_start(&(rs_op_t){.kind = RS_FETCH,
                                     .rkey = r->rkey,
                                     .aop = FERRY_ATOMIC_ADD,
                                     .value = 1,
                                     .size = 8,
                                     .offset = 128,
                                     .result = &results[i]},
                          &comp, &no_resource);
        FT_CHECK(status == FERRY_INPROGRESS || status == FERRY_OK, "fetch %u: %s", i,
                 ferry_status_name(status));
    }
    rs_wait(&comp, "2000 fetch-adds");
    FT_CHECK(comp.status == FERRY_OK, "fetch-adds completed with %s",
             ferry_status_name(comp.status));
    for (unsigned i = 0; i < FETCHES; i++) {
        FT_CHECK(results[i] >= POSTS && results[i] < POSTS + FETCHES && !seen[results[i] - POSTS],
                 "fetch-add %u returned %llu (twice, or out of range)", i,
                 (unsigned long long)results[i]);
        seen[results[i] - POSTS] = 1;
    }
    FT_CHECK(*counter == POSTS + FETCHES, "counter %llu", (unsigned long long)*counter);
    ft_note("atomics: %d posts and %d fetch-adds (%llu FERRY_ERR_NO_RESOURCE retries)", POSTS,
            FETCHES, (unsigned long long)no_resource);
    free(results);
    free(seen);
}

/* ------------------------------------------------------------------ flush, fence */

typedef struct rs_order {
    ferry_completion_t comp;
    unsigned *clock;
    unsigned at; /* the clock when the callback ran */
} rs_order_t;

static void rs_order_cb(ferry_completion_t *comp)
{
    rs_order_t *o = (rs_order_t *)comp; /* comp is its first member */
    o->at = ++*o->clock;
}

static void rs_flush_fence(rs_region_t *r)
{
    enum { N = 64, SIZE = 4096 };
    uint8_t *expected = rs_malloc(r->length);
    uint8_t *src = rs_malloc(N * SIZE);
    ferry_completion_t flush = {.cb = NULL, .count = 1, .status = FERRY_OK};
    uint64_t seed = ft_pattern_seed(3, rs_seq++, N * SIZE);

    /* nothing outstanding: both flushes are done at once */
    FT_CHECK_OK(ferry_ep_flush(rs_ep, &flush));
    FT_CHECK_OK(ferry_worker_flush(rs_worker, &flush));

    for (int which = 0; which < 2; which++) {
        memset(expected, 0, r->length);
        rs_region_write(r, expected);
        ft_pattern_fill(src, N * SIZE, seed + (uint64_t)which, 0);
        for (unsigned i = 0; i < N; i++) {
            ferry_status_t status = rs_start(&(rs_op_t){.kind = RS_PUT,
                                                        .rkey = r->rkey,
                                                        .buffer = src + i * SIZE,
                                                        .length = SIZE,
                                                        .offset = (uint64_t)i * SIZE * 2},
                                             NULL, NULL);
            FT_CHECK(status == FERRY_INPROGRESS || status == FERRY_OK, "put %u: %s", i,
                     ferry_status_name(status));
            memcpy(expected + (size_t)i * SIZE * 2, src + i * SIZE, SIZE);
        }
        flush = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
        ferry_status_t status =
            which == 0 ? ferry_ep_flush(rs_ep, &flush) : ferry_worker_flush(rs_worker, &flush);
        FT_CHECK(status == FERRY_INPROGRESS, "%s with %d puts outstanding: %s",
                 which == 0 ? "ferry_ep_flush" : "ferry_worker_flush", N,
                 ferry_status_name(status));
        rs_wait(&flush, which == 0 ? "ferry_ep_flush" : "ferry_worker_flush");
        FT_CHECK(flush.status == FERRY_OK, "flush: %s", ferry_status_name(flush.status));
        rs_region_expect(r, expected,
                         which == 0 ? "after ferry_ep_flush" : "after ferry_worker_flush");
    }

    /* fence: the get after it completes after the put before it, and sees its data */
    unsigned clock = 0;
    rs_order_t a = {.comp = {.cb = rs_order_cb, .count = 1, .status = FERRY_OK}, .clock = &clock};
    rs_order_t b = {.comp = {.cb = rs_order_cb, .count = 1, .status = FERRY_OK}, .clock = &clock};
    size_t big = r->length < RS_MIB ? r->length : RS_MIB;
    uint8_t *data = rs_malloc(big), *back = rs_malloc(64);
    ft_pattern_fill(data, big, seed ^ 0x55, 0);
    FT_CHECK_STATUS(ferry_put(rs_ep, data, big, 0, r->rkey, &a.comp), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_ep_fence(rs_ep));
    FT_CHECK_STATUS(ferry_get(rs_ep, back, 64, big - 64, r->rkey, &b.comp), FERRY_INPROGRESS);
    rs_wait(&b.comp, "the get after a fence");
    rs_wait(&a.comp, "the put before a fence");
    FT_CHECK(a.comp.status == FERRY_OK && b.comp.status == FERRY_OK, "fence: %s, %s",
             ferry_status_name(a.comp.status), ferry_status_name(b.comp.status));
    FT_CHECK(a.at == 1 && b.at == 2, "fence: the put completed %u-th, the get %u-th", a.at, b.at);
    ft_pattern_check(back, 64, seed ^ 0x55, big - 64, "the get after a fence");

    /* the operation queued behind a fence keeps its own copy of the iov arrays */
    memset(expected, 0, r->length);
    rs_region_write(r, expected);
    ferry_completion_t comp = {.cb = NULL, .count = 2, .status = FERRY_OK};
    FT_CHECK_STATUS(ferry_put(rs_ep, data, 1000, 0, r->rkey, &comp), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_ep_fence(rs_ep));
    ferry_iov_t iov[2] = {{data + 1000, 10}, {data + 1010, 90}};
    ferry_remote_iov_t remote[2] = {{2000, 50}, {3000, 50}};
    FT_CHECK_STATUS(ferry_putv(rs_ep, iov, 2, remote, 2, r->rkey, &comp), FERRY_INPROGRESS);
    memset(iov, 0, sizeof(iov));
    memset(remote, 0xff, sizeof(remote));
    /* and a flush covers what waits behind the fence */
    flush = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    FT_CHECK_STATUS(ferry_ep_flush(rs_ep, &flush), FERRY_INPROGRESS);
    rs_wait(&flush, "a flush behind a fence");
    FT_CHECK(comp.count == 0 && comp.status == FERRY_OK,
             "the flush completed before the operations (count %lld, %s)", (long long)comp.count,
             ferry_status_name(comp.status));
    memcpy(expected, data, 1000);
    memcpy(expected + 2000, data + 1000, 50);
    memcpy(expected + 3000, data + 1050, 50);
    rs_region_expect(r, expected, "a putv queued behind a fence");

    free(data);
    free(back);
    free(src);
    free(expected);
}

/* The transport's queue nearly full (the self transport holds a bounded number of messages):
 * a large put sends the requests that fit and the rest from progress; a get issued after it
 * waits behind them inside ferry (it returns FERRY_INPROGRESS although the queue is full) and
 * still reads the put's data. */
static unsigned rs_fill(rs_region_t *r, uint64_t offset, unsigned max)
{
    unsigned posts = 0;
    while (posts < max) {
        ferry_status_t status =
            ferry_atomic_post(rs_ep, FERRY_ATOMIC_ADD, 1, 8, offset, r->rkey, NULL);
        if (status == FERRY_ERR_NO_RESOURCE)
            break;
        FT_CHECK(status == FERRY_INPROGRESS, "post %u: %s", posts, ferry_status_name(status));
        FT_CHECK(++posts < 100000, "the transport never said FERRY_ERR_NO_RESOURCE");
    }
    return posts;
}

static void rs_drain(void)
{
    ferry_completion_t flush = {.cb = NULL, .count = 1, .status = FERRY_OK};
    if (ferry_worker_flush(rs_worker, &flush) == FERRY_INPROGRESS)
        rs_wait(&flush, "a worker flush");
}

static void rs_backpressure(rs_region_t *r)
{
    size_t size = RS_MIB;
    uint8_t *data = rs_malloc(size), *back = rs_malloc(size);
    uint64_t seed = ft_pattern_seed(4, rs_seq++, size);
    uint64_t offset = RS_MIB + 8; /* after what the put writes */
    uint64_t *counter = (uint64_t *)((uint8_t *)r->pieces[0].buffer + offset);

    *counter = 0;
    ft_pattern_fill(data, size, seed, 0);
    unsigned capacity = rs_fill(r, offset, UINT32_MAX);
    rs_drain();
    FT_CHECK(capacity > 2, "the queue holds %u messages", capacity);
    unsigned posts = rs_fill(r, offset, capacity - 2); /* room for two requests */
    FT_CHECK(posts == capacity - 2, "%u posts fit, then %u", capacity, posts);

    ferry_completion_t comp = {.cb = NULL, .count = 2, .status = FERRY_OK};
    FT_CHECK_STATUS(ferry_put(rs_ep, data, size, 0, r->rkey, &comp), FERRY_INPROGRESS);
    memset(back, 0, size);
    FT_CHECK_STATUS(ferry_get(rs_ep, back, size, 0, r->rkey, &comp), FERRY_INPROGRESS);
    rs_wait(&comp, "a put and a get behind a full queue");
    FT_CHECK(comp.status == FERRY_OK, "%s", ferry_status_name(comp.status));
    ft_pattern_check(back, size, seed, 0, "a get behind a put that waited for room");
    rs_drain();
    FT_CHECK(*counter == capacity + posts, "%u posts, counter %llu", capacity + posts,
             (unsigned long long)*counter);
    ft_note("back-pressure: the queue holds %u messages; a 1 MiB put and get behind it: ok",
            capacity);
    free(data);
    free(back);
}

/* ------------------------------------------------------------------ bad input */

static void rs_expect(const rs_op_t *op, ferry_status_t immediate, ferry_status_t final,
                      const char *what)
{
    ferry_status_t got_immediate;
    ferry_status_t got = rs_run(op, &got_immediate);
    FT_CHECK(got_immediate == immediate && got == final,
             "%s: returned %s and completed with %s; expected %s then %s", what,
             ferry_status_name(got_immediate), ferry_status_name(got), ferry_status_name(immediate),
             ferry_status_name(final));
}

static void rs_bad_input(ferry_context_t *context, rs_region_t *a, rs_region_t *b)
{
    uint8_t buf[64] = {0};
    uint64_t result = 0;
    const ferry_status_t ACCESS = FERRY_ERR_ACCESS, INVAL = FERRY_ERR_INVALID_PARAM;
    uint8_t *expected = rs_malloc(a->length);

    ft_pattern_fill(expected, a->length, 0x1234, 0);
    rs_region_write(a, expected);

    /* ranges */
    rs_expect(
        &(rs_op_t){
            .kind = RS_PUT, .rkey = a->rkey, .buffer = buf, .length = 1, .offset = a->length},
        ACCESS, ACCESS, "a put one byte past the end");
    rs_expect(
        &(rs_op_t){
            .kind = RS_GET, .rkey = a->rkey, .buffer = buf, .length = 2, .offset = a->length - 1},
        ACCESS, ACCESS, "a get ending one byte past the end");
    rs_expect(
        &(rs_op_t){
            .kind = RS_PUT, .rkey = a->rkey, .buffer = buf, .length = 0, .offset = a->length},
        FERRY_OK, FERRY_OK, "a 0-byte put at the end");
    rs_expect(
        &(rs_op_t){
            .kind = RS_PUT, .rkey = a->rkey, .buffer = buf, .length = 0, .offset = a->length + 1},
        ACCESS, ACCESS, "a 0-byte put past the end");
    rs_expect(&(rs_op_t){.kind = RS_PUT,
                         .rkey = a->rkey,
                         .buffer = buf,
                         .length = 64,
                         .offset = UINT64_MAX - 10},
              ACCESS, ACCESS, "a put whose offset + length overflows");
    rs_expect(
        &(rs_op_t){.kind = RS_GET, .rkey = a->rkey, .buffer = buf, .length = SIZE_MAX, .offset = 8},
        ACCESS, ACCESS, "a get of SIZE_MAX bytes");
    ferry_remote_iov_t over[2] = {{0, 8}, {UINT64_MAX - 3, 8}};
    ferry_iov_t local16 = {buf, 16};
    rs_expect(&(rs_op_t){.kind = RS_PUTV,
                         .rkey = a->rkey,
                         .iov = &local16,
                         .iovcnt = 1,
                         .remote = over,
                         .remote_count = 2},
              ACCESS, ACCESS, "a putv with a range that overflows");
    ferry_remote_iov_t two[2] = {{0, 8}, {100, 9}};
    rs_expect(&(rs_op_t){.kind = RS_PUTV,
                         .rkey = a->rkey,
                         .iov = &local16,
                         .iovcnt = 1,
                         .remote = two,
                         .remote_count = 2},
              INVAL, INVAL, "a putv whose totals differ");
    rs_expect(&(rs_op_t){.kind = RS_PUTV,
                         .rkey = a->rkey,
                         .iov = NULL,
                         .iovcnt = 1,
                         .remote = two,
                         .remote_count = 1},
              INVAL, INVAL, "a putv with a NULL iov");
    rs_expect(&(rs_op_t){.kind = RS_PUT, .rkey = a->rkey, .buffer = NULL, .length = 8}, INVAL,
              INVAL, "a put from NULL");
    rs_expect(&(rs_op_t){.kind = RS_PUT, .rkey = NULL, .buffer = buf, .length = 8}, INVAL, INVAL,
              "a put with a NULL key");
    FT_CHECK_STATUS(ferry_put(NULL, buf, 8, 0, a->rkey, NULL), INVAL);
    FT_CHECK_STATUS(ferry_ep_flush(NULL, NULL), INVAL);
    FT_CHECK_STATUS(ferry_ep_fence(NULL), INVAL);
    FT_CHECK_STATUS(ferry_worker_flush(NULL, NULL), INVAL);

    /* atomics */
    rs_expect(&(rs_op_t){.kind = RS_POST,
                         .rkey = a->rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 8,
                         .offset = 4},
              INVAL, INVAL, "an 8-byte atomic at offset 4");
    rs_expect(&(rs_op_t){.kind = RS_FETCH,
                         .rkey = a->rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 4,
                         .offset = 2,
                         .result = &result},
              INVAL, INVAL, "a 4-byte atomic at offset 2");
    rs_expect(&(rs_op_t){.kind = RS_POST,
                         .rkey = a->rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 2,
                         .offset = 0},
              INVAL, INVAL, "a 2-byte atomic");
    rs_expect(&(rs_op_t){.kind = RS_POST,
                         .rkey = a->rkey,
                         .aop = FERRY_ATOMIC_SWAP,
                         .value = 1,
                         .size = 8,
                         .offset = 0},
              INVAL, INVAL, "a posted swap");
    rs_expect(&(rs_op_t){.kind = RS_FETCH,
                         .rkey = a->rkey,
                         .aop = FERRY_ATOMIC_XOR,
                         .value = 1,
                         .size = 8,
                         .offset = 0,
                         .result = &result},
              INVAL, INVAL, "a fetched xor");
    rs_expect(&(rs_op_t){.kind = RS_FETCH,
                         .rkey = a->rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 8,
                         .offset = 0,
                         .result = NULL},
              INVAL, INVAL, "a fetch without a result");
    rs_expect(&(rs_op_t){.kind = RS_POST,
                         .rkey = a->rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 8,
                         .offset = (a->length & ~7ull)},
              ACCESS, ACCESS, "an atomic past the end");
    /* B: pieces of 1004, 70001, ... bytes: offset 1000 is aligned but the word spans two
     * pieces; offset 1008 is aligned in the region but not in memory (piece 1 + 4) */
    rs_expect(&(rs_op_t){.kind = RS_POST,
                         .rkey = b->rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 8,
                         .offset = 1000},
              FERRY_INPROGRESS, INVAL, "an atomic on a word across two pieces");
    rs_expect(&(rs_op_t){.kind = RS_FETCH,
                         .rkey = b->rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 8,
                         .offset = 1008,
                         .result = &result},
              FERRY_INPROGRESS, INVAL, "an atomic on a misaligned address of the target");
    rs_region_expect(a, expected, "after the refused operations");

    /* access the key does not grant */
    rs_region_t ro, noatomic;
    rs_region_contig(&ro, "R", context, 4096, FERRY_ACCESS_REMOTE_READ, 0);
    rs_region_contig(&noatomic, "N", context, 4096,
                     FERRY_ACCESS_REMOTE_READ | FERRY_ACCESS_REMOTE_WRITE, 0);
    rs_expect(&(rs_op_t){.kind = RS_PUT, .rkey = ro.rkey, .buffer = buf, .length = 8}, ACCESS,
              ACCESS, "a put through a read-only key");
    rs_expect(
        &(rs_op_t){
            .kind = RS_POST, .rkey = ro.rkey, .aop = FERRY_ATOMIC_ADD, .value = 1, .size = 8},
        ACCESS, ACCESS, "an atomic through a read-only key");
    rs_expect(&(rs_op_t){.kind = RS_GET, .rkey = ro.rkey, .buffer = buf, .length = 8},
              FERRY_INPROGRESS, FERRY_OK, "a get through a read-only key");
    rs_expect(
        &(rs_op_t){
            .kind = RS_POST, .rkey = noatomic.rkey, .aop = FERRY_ATOMIC_ADD, .value = 1, .size = 8},
        ACCESS, ACCESS, "an atomic without REMOTE_ATOMIC");
    rs_expect(&(rs_op_t){.kind = RS_FETCH,
                         .rkey = noatomic.rkey,
                         .aop = FERRY_ATOMIC_CSWAP,
                         .value = 1,
                         .size = 4,
                         .result = &result},
              ACCESS, ACCESS, "a compare-and-swap without REMOTE_ATOMIC");
    FT_CHECK(((uint64_t *)ro.backing[0])[0] == 0 && ((uint64_t *)noatomic.backing[0])[0] == 0,
             "a refused operation changed memory");
    rs_region_free(&ro);
    rs_region_free(&noatomic);

    /* a deregistered region: only the target can tell */
    rs_region_t d;
    rs_region_contig(&d, "D", context, 4096, FERRY_ACCESS_ALL, 0);
    FT_CHECK_OK(ferry_mem_deregister(d.mem));
    d.mem = NULL;
    rs_expect(&(rs_op_t){.kind = RS_PUT, .rkey = d.rkey, .buffer = buf, .length = 8},
              FERRY_INPROGRESS, ACCESS, "a put to a deregistered region");
    rs_expect(&(rs_op_t){.kind = RS_FETCH,
                         .rkey = d.rkey,
                         .aop = FERRY_ATOMIC_ADD,
                         .value = 1,
                         .size = 8,
                         .result = &result},
              FERRY_INPROGRESS, ACCESS, "an atomic on a deregistered region");
    FT_CHECK(((uint64_t *)d.backing[0])[0] == 0, "a deregistered region was written");
    rs_region_free(&d);

    /* single use */
    rs_region_t u;
    rs_region_contig(&u, "U", context, 4096, FERRY_ACCESS_ALL, FERRY_MEM_SINGLE_USE);
    uint64_t v = 0x1122334455667788ull;
    rs_expect(&(rs_op_t){.kind = RS_PUT, .rkey = u.rkey, .buffer = &v, .length = 8},
              FERRY_INPROGRESS, FERRY_OK, "the first use of a single-use region");
    v = 0;
    rs_expect(&(rs_op_t){.kind = RS_PUT, .rkey = u.rkey, .buffer = &v, .length = 8, .offset = 8},
              FERRY_INPROGRESS, ACCESS, "a second put to a single-use region");
    rs_expect(&(rs_op_t){.kind = RS_GET, .rkey = u.rkey, .buffer = &v, .length = 8},
              FERRY_INPROGRESS, ACCESS, "a get after the single use");
    FT_CHECK(((uint64_t *)u.backing[0])[0] == 0x1122334455667788ull &&
                 ((uint64_t *)u.backing[0])[1] == 0 && v == 0,
             "the single-use region: the first put did not land, or a later one did");
    rs_region_free(&u);

    /* a key unpacked on another endpoint (to the same worker) */
    const void *address;
    size_t address_length;
    FT_CHECK_OK(ferry_worker_address(rs_worker, &address, &address_length));
    ferry_ep_t *other = ft_ep_create(rs_worker, address, address_length, NULL);
    ferry_rkey_t *other_key = rs_key(other, a->mem);
    rs_expect(&(rs_op_t){.kind = RS_PUT, .rkey = other_key, .buffer = buf, .length = 8}, INVAL,
              INVAL, "a key of another endpoint");
    rs_expect(&(rs_op_t){.kind = RS_PUT,
                         .ep = other,
                         .rkey = other_key,
                         .buffer = buf,
                         .length = 8,
                         .offset = 16},
              FERRY_INPROGRESS, FERRY_OK, "the same key on its own endpoint");
    memcpy(expected + 16, buf, 8);
    rs_region_expect(a, expected, "after the put on the other endpoint");

    /* a corrupted key */
    void *packed;
    size_t packed_length;
    ferry_rkey_t *bad = NULL;
    FT_CHECK_OK(ferry_rkey_pack(a->mem, &packed, &packed_length));
    ((uint8_t *)packed)[0] ^= 0x40;
    FT_CHECK_STATUS(ferry_rkey_unpack(rs_ep, packed, packed_length, &bad),
                    FERRY_ERR_INVALID_ADDRESS);
    ((uint8_t *)packed)[0] ^= 0x40;
    FT_CHECK_STATUS(ferry_rkey_unpack(rs_ep, packed, packed_length - 1, &bad),
                    FERRY_ERR_INVALID_ADDRESS);
    ferry_rkey_buffer_release(packed);

    /* the endpoint still works */
    rs_expect(&(rs_op_t){.kind = RS_GET, .rkey = a->rkey, .buffer = buf, .length = 64},
              FERRY_INPROGRESS, FERRY_OK, "a get after all the bad input");
    FT_CHECK(memcmp(buf, expected, 64) == 0, "the get after the bad input read wrong bytes");

    /* operations outstanding when an endpoint is force-closed complete with CANCELED;
     * afterwards the endpoint refuses them */
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    FT_CHECK_STATUS(ferry_get(other, buf, 8, 0, other_key, &comp), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_ep_close(other, FERRY_EP_CLOSE_FORCE, NULL));
    rs_wait(&comp, "a get on a force-closed endpoint");
    FT_CHECK(comp.status == FERRY_ERR_CANCELED, "a get on a force-closed endpoint: %s",
             ferry_status_name(comp.status));
    FT_CHECK_STATUS(ferry_get(other, buf, 8, 0, other_key, NULL), FERRY_ERR_ENDPOINT_CLOSED);
    FT_CHECK_STATUS(ferry_ep_flush(other, &comp), FERRY_ERR_ENDPOINT_CLOSED);
    ferry_rkey_release(other_key);
    ferry_ep_destroy(other);

    /* a graceful close with an operation outstanding: it completes (its reply can no longer
     * come: FERRY_ERR_ENDPOINT_CLOSED), and so does the close */
    other = ft_ep_create(rs_worker, address, address_length, NULL);
    other_key = rs_key(other, a->mem);
    ferry_completion_t closed = {.cb = NULL, .count = 1, .status = FERRY_OK};
    comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    FT_CHECK_STATUS(ferry_get(other, buf, 8, 0, other_key, &comp), FERRY_INPROGRESS);
    ferry_status_t status = ferry_ep_close(other, 0, &closed);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "graceful close: %s",
             ferry_status_name(status));
    if (status == FERRY_OK)
        closed.count = 0;
    rs_wait(&comp, "a get outstanding at a graceful close");
    rs_wait(&closed, "a graceful close");
    FT_CHECK(comp.status == FERRY_OK || comp.status == FERRY_ERR_ENDPOINT_CLOSED ||
                 comp.status == FERRY_ERR_CANCELED,
             "a get outstanding at a graceful close: %s", ferry_status_name(comp.status));
    ferry_rkey_release(other_key);
    ferry_ep_destroy(other);
    free(expected);
}

/* ------------------------------------------------------------------ malformed messages */

static void rs_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void rs_send_raw(unsigned id, const uint8_t *header, size_t header_length,
                        const void *payload, size_t length)
{
    ferry_iov_t iov = {.buffer = (void *)payload, .length = length};
    FT_CHECK_OK(fy_am_send_internal(rs_ep, id, header, header_length, &iov, length ? 1 : 0, NULL));
}

static void rs_malformed(rs_region_t *r, const uint8_t *packed_key)
{
    uint8_t *expected = rs_malloc(r->length);
    uint8_t req[64], reply[24], payload[16] = {0};
    uint8_t buf[64];

    ft_pattern_fill(expected, r->length, 0x4d41, 0);
    rs_region_write(r, expected);
    /* a well-formed put of 16 bytes at offset 0 to the region (slot and generation from the
     * packed key: bytes 28 and 32), then spoiled one field at a time */
    memset(req, 0, sizeof(req));
    req[0] = 2; /* version */
    req[1] = 1; /* put */
    memcpy(req + 4, packed_key + 28, 8);
    rs_le64(req + 24, 16);     /* length */
    rs_le64(req + 32, 0x4242); /* request id */

    ft_capture_begin();
    rs_send_raw(FY_AM_ID_RMA_REQUEST, req, 20, payload, 16); /* truncated */
    req[0] = 3;
    rs_send_raw(FY_AM_ID_RMA_REQUEST, req, sizeof(req), payload, 16); /* version */
    req[0] = 2;
    req[1] = 9;
    rs_send_raw(FY_AM_ID_RMA_REQUEST, req, sizeof(req), payload, 16); /* operation */
    req[1] = 1;
    rs_send_raw(FY_AM_ID_RMA_REQUEST, req, sizeof(req), payload, 15); /* payload length */
    req[1] = 3;
    req[2] = 4; /* a posted swap */
    req[3] = 8;
    rs_le64(req + 24, 8);
    rs_send_raw(FY_AM_ID_RMA_REQUEST, req, sizeof(req), NULL, 0);
    memset(reply, 0, sizeof(reply));
    reply[0] = 2;
    rs_le64(reply + 8, 0x0000000700000003ull); /* an id nobody issued */
    rs_send_raw(FY_AM_ID_RMA_REPLY, reply, sizeof(reply), buf, 8);
    rs_send_raw(FY_AM_ID_RMA_REPLY, reply, 8, NULL, 0); /* truncated */
    reply[0] = 7;
    rs_send_raw(FY_AM_ID_RMA_REPLY, reply, sizeof(reply), NULL, 0); /* version */
    /* messages of one endpoint are delivered in order: when this get is done, so are they */
    rs_expect(&(rs_op_t){.kind = RS_GET, .rkey = r->rkey, .buffer = buf, .length = 64},
              FERRY_INPROGRESS, FERRY_OK, "a get after malformed messages");
    char *text = ft_capture_end();
    FT_CHECK(memcmp(buf, expected, 64) == 0, "the get after malformed messages read wrong bytes");
    rs_region_expect(r, expected, "after malformed messages");
    size_t warned = ft_count(text, "further ones are logged at debug level");
    FT_CHECK(warned == 2,
             "malformed messages: %zu warnings, expected 2 (one for requests, one "
             "for replies); log:\n%s",
             warned, text);
    free(text);
    free(expected);
    ft_note("malformed messages: 5 requests and 3 replies dropped with 2 warnings; ok");
}

/* ------------------------------------------------------------------ main */

int main(void)
{
    ft_ferry_t f;
    const void *address;
    size_t address_length;

    ft_set_role("rma_self");
    ft_watchdog(55);
    ft_ferry_init(&f, "self", NULL);
    rs_worker = f.worker;
    FT_CHECK_OK(ferry_worker_address(f.worker, &address, &address_length));
    rs_ep = ft_ep_create(f.worker, address, address_length, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(rs_ep), "self") == 0, "transport %s",
             ferry_ep_transport_name(rs_ep));

    rs_region_t a, b, c;
    rs_region_contig(&a, "A", f.context, RS_MIB + 65536 + 3, FERRY_ACCESS_ALL, 0);

    memset(&b, 0, sizeof(b));
    b.name = "B";
    size_t blen[3] = {1004, 70001, RS_MIB - 3000};
    for (int i = 0; i < 3; i++) {
        b.backing[i] = rs_malloc(blen[i]);
        b.pieces[i] = (ferry_iov_t){.buffer = b.backing[i], .length = blen[i]};
    }
    b.count = 3;
    rs_register(&b, f.context, FERRY_ACCESS_ALL, 0);

    memset(&c, 0, sizeof(c));
    c.name = "C";
    c.gaps_length = 40 * 128;
    c.gaps = c.backing[0] = rs_malloc(c.gaps_length);
    memset(c.gaps, 0xEE, c.gaps_length);
    for (int i = 0; i < 40; i++)
        c.pieces[i] = (ferry_iov_t){.buffer = c.gaps + 128 * i + 14, .length = 100};
    c.count = 40;
    rs_register(&c, f.context, FERRY_ACCESS_ALL, 0);

    rs_put_get(&a);
    rs_put_get(&b);
    ft_note("put/get: 9 sizes x 3 offsets on a contiguous and a 3-piece region: ok");
    rs_shapes(&a);
    rs_shapes(&b);
    rs_shapes(&c);
    ft_note("putv/getv: uneven, large and many-piece shapes on 3 regions: ok");
    rs_atomics(&a, 64, 68);
    /* B: 8 bytes in piece 0; 4 bytes in piece 1 (region offset 1004 is its start, so 1008 is
     * 4-aligned in memory; no offset of piece 1 is both 8-aligned and at an 8-aligned address) */
    rs_atomics(&b, 16, 1008);
    rs_atomic_flood(&a);
    ft_note("atomics: all operations, 32 and 64 bits: ok");
    rs_flush_fence(&a);
    ft_note("flush and fence: ok");
    rs_backpressure(&a);
    rs_bad_input(f.context, &a, &b);
    void *packed;
    size_t packed_length;
    FT_CHECK_OK(ferry_rkey_pack(a.mem, &packed, &packed_length));
    rs_malformed(&a, packed);
    ferry_rkey_buffer_release(packed);
    ft_note("bad input: every case refused with the right status; the endpoint still works");

    rs_region_free(&a);
    rs_region_free(&b);
    rs_region_free(&c);
    ferry_ep_destroy(rs_ep);
    ft_ferry_fini(&f);
    ft_note("ok");
    return 0;
}
