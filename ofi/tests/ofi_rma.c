/*
 * RMA and atomics through the ferry provider between two processes. Rank 0 registers a region
 * (its key chosen by the provider, or by the application) and rank 1 writes and reads it:
 * every byte checked on both sides, sizes 1 B .. 4 MiB at offsets, gather lists, inject writes,
 * writes with remote CQ data (rank 0 gets an FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA entry with the
 * data and the length), FI_DELIVERY_COMPLETE; then every atomic that maps onto ferry on 32- and
 * 64-bit words with the values checked (one element and several), and an unknown key, which
 * completes with FI_EACCES and leaves the endpoint usable.
 *
 * ctest runs it over shm and with FERRY_TRANSPORTS=tcp (where the target performs everything).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ot.h"

#define REGION (8u << 20)
#define ATOMICS 4096u      /* the region's last bytes hold the words of the atomics */
#define VEC_OFF (6u << 20) /* where the gather list goes, past the sizes' ranges */

typedef struct keyinfo {
    uint64_t key;
    uint64_t len;
} keyinfo_t;

typedef struct rma_args {
    bool app_keys; /* FI_MR_PROV_KEY not offered: the application chooses the key */
} rma_args_t;

static void wait_tx(ot_ep_t *t, void *ctx)
{
    ot_cq_expect(t, ctx, NULL);
}

static void post_retry(ot_ep_t *t, ssize_t (*post)(ot_ep_t *, void *), void *arg)
{
    ssize_t rc;
    while ((rc = post(t, arg)) == -FI_EAGAIN)
        (void)fi_cq_read(t->cq, NULL, 0);
    OT_EXPECT(rc, 0);
}

typedef struct rma_op {
    void *buf;
    size_t len;
    fi_addr_t peer;
    uint64_t addr;
    uint64_t key;
    void *ctx;
} rma_op_t;

static ssize_t do_write(ot_ep_t *t, void *arg)
{
    rma_op_t *o = arg;
    return fi_write(t->ep, o->buf, o->len, NULL, o->peer, o->addr, o->key, o->ctx);
}

static ssize_t do_read(ot_ep_t *t, void *arg)
{
    rma_op_t *o = arg;
    return fi_read(t->ep, o->buf, o->len, NULL, o->peer, o->addr, o->key, o->ctx);
}

/* ---------------------------------------------------------------- puts and gets */

static void rma_writes(ot_ep_t *t, ot_job_t *job, fi_addr_t peer, keyinfo_t *k, uint8_t *mem)
{
    static const size_t sizes[] = {1, 8, 100, 4096, 65536, 1u << 20, 4u << 20};
    const size_t n = sizeof(sizes) / sizeof(sizes[0]);
    struct fi_context ctx[4];
    if (job->rank == 1) {
        uint8_t *buf = malloc(REGION);
        OT_CHECK(buf != NULL);
        uint64_t off = 0;
        for (size_t i = 0; i < n; i++) {
            ot_fill(buf, sizes[i], 100 + (unsigned)i);
            rma_op_t o = {buf, sizes[i], peer, off, k->key, &ctx[0]};
            post_retry(t, do_write, &o);
            wait_tx(t, &ctx[0]);
            memset(buf, 0, sizes[i]);
            o.ctx = &ctx[1];
            post_retry(t, do_read, &o);
            wait_tx(t, &ctx[1]);
            ot_check(buf, sizes[i], 100 + (unsigned)i, "read back");
            off += sizes[i] + 13; /* unaligned offsets */
        }
        /* a gather list into one range, read back as a scatter list */
        struct iovec iov[3] = {{buf, 10}, {buf + 100, 1000}, {buf + 5000, 3000}};
        for (int i = 0; i < 3; i++)
            ot_fill(iov[i].iov_base, iov[i].iov_len, 200 + (unsigned)i);
        OT_EXPECT(fi_writev(t->ep, iov, NULL, 3, peer, VEC_OFF, k->key, &ctx[2]), 0);
        wait_tx(t, &ctx[2]);
        for (int i = 0; i < 3; i++)
            memset(iov[i].iov_base, 0, iov[i].iov_len);
        OT_EXPECT(fi_readv(t->ep, iov, NULL, 3, peer, VEC_OFF, k->key, &ctx[3]), 0);
        wait_tx(t, &ctx[3]);
        for (int i = 0; i < 3; i++)
            ot_check(iov[i].iov_base, iov[i].iov_len, 200 + (unsigned)i, "readv");
        /* inject: the buffer is free on return, no completion */
        ot_fill(buf, 128, 300);
        OT_EXPECT(fi_inject_write(t->ep, buf, 128, peer, REGION - ATOMICS - 128, k->key), 0);
        memset(buf, 0, 128);
        OT_EXPECT(fi_inject_write(t->ep, buf, 129, peer, 0, k->key), -FI_EMSGSIZE);
        /* no completion tells when an injected write took effect: read until it shows (the
         * deadline of ot_cq_next bounds each read) */
        uint8_t back[128];
        uint8_t want[128];
        ot_fill(want, sizeof(want), 300);
        do {
            rma_op_t o = {back, sizeof(back), peer, REGION - ATOMICS - 128, k->key, &ctx[0]};
            post_retry(t, do_read, &o);
            wait_tx(t, &ctx[0]);
        } while (memcmp(back, want, sizeof(back)) != 0);
        free(buf);
        ot_barrier(job);
        ot_cq_empty(t);
    } else {
        ot_barrier(job);
        /* the target sees the bytes the initiator wrote */
        uint64_t off = 0;
        for (size_t i = 0; i < n; i++) {
            ot_check(mem + off, sizes[i], 100 + (unsigned)i, "written at the target");
            off += sizes[i] + 13;
        }
        ot_check(mem + REGION - ATOMICS - 128, 128, 300, "inject write at the target");
        ot_cq_empty(t);
    }
    ot_barrier(job);
}

/* fi_writedata: rank 0 gets an entry with the data; FI_DELIVERY_COMPLETE writes too. */
static void rma_writedata(ot_ep_t *t, ot_job_t *job, fi_addr_t peer, keyinfo_t *k, uint8_t *mem)
{
    struct fi_context ctx[3];
    uint8_t buf[5000];
    if (job->rank == 1) {
        ot_fill(buf, sizeof(buf), 400);
        OT_EXPECT(fi_writedata(t->ep, buf, sizeof(buf), NULL, 0x5eed, peer, 64, k->key, &ctx[0]),
                  0);
        wait_tx(t, &ctx[0]);
        ot_fill(buf, 128, 401);
        OT_EXPECT(fi_inject_writedata(t->ep, buf, 128, 0x5eee, peer, 8192, k->key), 0);
        ot_fill(buf, sizeof(buf), 402);
        struct iovec iov = {buf, sizeof(buf)};
        struct fi_rma_iov rma = {.addr = 16384, .len = sizeof(buf), .key = k->key};
        struct fi_msg_rma msg = {.msg_iov = &iov,
                                 .iov_count = 1,
                                 .addr = peer,
                                 .rma_iov = &rma,
                                 .rma_iov_count = 1,
                                 .context = &ctx[1]};
        OT_EXPECT(fi_writemsg(t->ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION), 0);
        wait_tx(t, &ctx[1]);
    } else {
        uint64_t want[2] = {0x5eed, 0x5eee};
        size_t lens[2] = {sizeof(buf), 128};
        for (int i = 0; i < 2; i++) {
            struct fi_cq_tagged_entry e;
            struct fi_cq_err_entry err;
            OT_EXPECT(ot_cq_next(t, &e, &err), 1);
            OT_CHECK(e.flags == (FI_REMOTE_WRITE | FI_RMA | FI_REMOTE_CQ_DATA));
            OT_CHECK(e.data == want[i] && e.len == lens[i] && e.op_context == NULL);
        }
        /* the entry comes after the data is in place */
        ot_check(mem + 64, sizeof(buf), 400, "writedata");
        ot_check(mem + 8192, 128, 401, "inject writedata");
    }
    ot_barrier(job);
    if (job->rank == 0)
        ot_check(mem + 16384, sizeof(buf), 402, "delivery complete write");
    ot_barrier(job);
}

/* ---------------------------------------------------------------- atomics */

static uint64_t remote_word(ot_ep_t *t, fi_addr_t peer, keyinfo_t *k, uint64_t off, size_t size)
{
    uint64_t v = 0;
    struct fi_context ctx;
    OT_EXPECT(fi_read(t->ep, &v, size, NULL, peer, off, k->key, &ctx), 0);
    wait_tx(t, &ctx);
    return v;
}

static void rma_atomics(ot_ep_t *t, ot_job_t *job, fi_addr_t peer, keyinfo_t *k, uint8_t *mem)
{
    uint64_t base = REGION - ATOMICS;
    if (job->rank == 0) {
        memset(mem + base, 0, ATOMICS);
        ot_barrier(job);
        ot_barrier(job);
        uint64_t w64;
        memcpy(&w64, mem + base, 8);
        OT_CHECK(w64 == 0xf00dull); /* the last value rank 1 left there */
        ot_barrier(job);
        return;
    }
    ot_barrier(job);
    struct fi_context ctx;
    for (int wide = 0; wide < 2; wide++) {
        enum fi_datatype dt = wide ? FI_UINT64 : FI_UINT32;
        size_t size = wide ? 8 : 4;
        uint64_t off = base + (uint64_t)wide * 64;
        uint64_t mask = wide ? ~0ull : 0xffffffffull;
        uint64_t v = 0x1111, expect = 0;
        /* post operations */
        struct {
            enum fi_op op;
            uint64_t operand;
        } posts[] = {{FI_SUM, 0x1111},  {FI_SUM, 0x2222},  {FI_BOR, 0xf000},
                     {FI_BAND, 0xf0ff}, {FI_BXOR, 0x0101}, {FI_ATOMIC_WRITE, 0x7777}};
        for (size_t i = 0; i < sizeof(posts) / sizeof(posts[0]); i++) {
            v = posts[i].operand;
            OT_EXPECT(fi_atomic(t->ep, &v, 1, NULL, peer, off, k->key, dt, posts[i].op, &ctx), 0);
            wait_tx(t, &ctx);
            switch (posts[i].op) {
            case FI_SUM:
                expect += posts[i].operand;
                break;
            case FI_BOR:
                expect |= posts[i].operand;
                break;
            case FI_BAND:
                expect &= posts[i].operand;
                break;
            case FI_BXOR:
                expect ^= posts[i].operand;
                break;
            default:
                expect = posts[i].operand;
                break;
            }
            OT_CHECK((remote_word(t, peer, k, off, size) & mask) == (expect & mask));
        }
        /* fetching operations: the old value comes back */
        uint64_t result = 0;
        v = 5;
        OT_EXPECT(
            fi_fetch_atomic(t->ep, &v, 1, NULL, &result, NULL, peer, off, k->key, dt, FI_SUM, &ctx),
            0);
        wait_tx(t, &ctx);
        OT_CHECK((result & mask) == expect);
        expect += 5;
        result = 0;
        OT_EXPECT(fi_fetch_atomic(t->ep, &v, 1, NULL, &result, NULL, peer, off, k->key, dt,
                                  FI_ATOMIC_READ, &ctx),
                  0);
        wait_tx(t, &ctx);
        OT_CHECK((result & mask) == expect);
        v = 0x9999;
        OT_EXPECT(fi_fetch_atomic(t->ep, &v, 1, NULL, &result, NULL, peer, off, k->key, dt,
                                  FI_ATOMIC_WRITE, &ctx),
                  0);
        wait_tx(t, &ctx);
        OT_CHECK((result & mask) == expect);
        expect = 0x9999;
        /* compare-and-swap: a miss leaves the word, a hit replaces it */
        uint64_t cmp = 1234;
        v = 0xaaaa;
        OT_EXPECT(fi_compare_atomic(t->ep, &v, 1, NULL, &cmp, NULL, &result, NULL, peer, off,
                                    k->key, dt, FI_CSWAP, &ctx),
                  0);
        wait_tx(t, &ctx);
        OT_CHECK((result & mask) == expect);
        OT_CHECK((remote_word(t, peer, k, off, size) & mask) == expect);
        cmp = expect;
        OT_EXPECT(fi_compare_atomic(t->ep, &v, 1, NULL, &cmp, NULL, &result, NULL, peer, off,
                                    k->key, dt, FI_CSWAP, &ctx),
                  0);
        wait_tx(t, &ctx);
        OT_CHECK((result & mask) == expect);
        OT_CHECK((remote_word(t, peer, k, off, size) & mask) == 0xaaaa);
        /* several elements at once: consecutive words, results in order */
        uint64_t vals[4], res[4] = {0};
        uint8_t raw[32], rres[32];
        for (int i = 0; i < 4; i++) {
            vals[i] = (uint64_t)(i + 1) * 10;
            memcpy(raw + (size_t)i * size, &vals[i], size);
        }
        uint64_t arr = off + 16;
        OT_EXPECT(fi_atomic(t->ep, raw, 4, NULL, peer, arr, k->key, dt, FI_SUM, &ctx), 0);
        wait_tx(t, &ctx);
        OT_EXPECT(
            fi_fetch_atomic(t->ep, raw, 4, NULL, rres, NULL, peer, arr, k->key, dt, FI_SUM, &ctx),
            0);
        wait_tx(t, &ctx);
        for (int i = 0; i < 4; i++) {
            memcpy(&res[i], rres + (size_t)i * size, size);
            OT_CHECK(res[i] == vals[i]);
            OT_CHECK(remote_word(t, peer, k, arr + (uint64_t)i * size, size) == 2 * vals[i]);
        }
        /* unsupported: refused at once */
        OT_EXPECT(fi_atomic(t->ep, &v, 1, NULL, peer, off, k->key, dt, FI_MIN, &ctx),
                  -FI_EOPNOTSUPP);
        size_t count = 0;
        OT_EXPECT(fi_atomicvalid(t->ep, dt, FI_SUM, &count), 0);
        OT_CHECK(count >= 1);
        OT_EXPECT(fi_fetch_atomicvalid(t->ep, dt, FI_BAND, &count), -FI_EOPNOTSUPP);
        OT_EXPECT(fi_compare_atomicvalid(t->ep, dt, FI_CSWAP, &count), 0);
    }
    uint64_t last = 0xf00d;
    OT_EXPECT(fi_inject_atomic(t->ep, &last, 1, peer, base, k->key, FI_UINT64, FI_ATOMIC_WRITE), 0);
    last = 0; /* the operand was copied */
    while (remote_word(t, peer, k, base, 8) != 0xf00d)
        ;
    ot_barrier(job);
    ot_barrier(job);
    ot_cq_empty(t);
}

/* An unknown key: an error entry, and the endpoint goes on working. */
static void rma_bad_key(ot_ep_t *t, ot_job_t *job, fi_addr_t peer, keyinfo_t *k)
{
    if (job->rank == 1) {
        uint64_t v = 1;
        struct fi_context ctx[2];
        OT_EXPECT(fi_write(t->ep, &v, 8, NULL, peer, 0, k->key + 1000, &ctx[0]), 0);
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        OT_EXPECT(ot_cq_next(t, &e, &err), -FI_EACCES);
        OT_CHECK(err.op_context == &ctx[0] && (err.flags & FI_WRITE));
        OT_EXPECT(fi_atomic(t->ep, &v, 1, NULL, peer, 0, k->key + 1000, FI_UINT64, FI_SUM, &ctx[1]),
                  0);
        OT_EXPECT(ot_cq_next(t, &e, &err), -FI_EACCES);
        OT_CHECK(err.op_context == &ctx[1]);
        /* out of the region's range */
        OT_EXPECT(fi_read(t->ep, &v, 8, NULL, peer, REGION, k->key, &ctx[0]), 0);
        OT_EXPECT(ot_cq_next(t, &e, &err), -FI_EACCES);
        /* the endpoint still works */
        v = 0x0123456789abcdefull;
        OT_EXPECT(fi_write(t->ep, &v, 8, NULL, peer, REGION - 8, k->key, &ctx[0]), 0);
        wait_tx(t, &ctx[0]);
        OT_CHECK(remote_word(t, peer, k, REGION - 8, 8) == 0x0123456789abcdefull);
    }
    ot_barrier(job);
}

static void two_ranks(ot_job_t *job, void *arg)
{
    rma_args_t *a = arg;
    ot_ep_t t;
    struct fi_info *hints = ot_hints(FI_RMA | FI_ATOMIC, 0);
    if (a->app_keys)
        hints->domain_attr->mr_mode = 0; /* no FI_MR_PROV_KEY: the application chooses */
    ot_ep_open_hints(&t, hints, FI_CQ_FORMAT_TAGGED);
    fi_freeinfo(hints);
    OT_CHECK((t.info->domain_attr->mr_mode == FI_MR_PROV_KEY) == !a->app_keys);
    uint8_t names[2 * OT_NAME_MAX];
    ot_allgather(job, t.name, OT_NAME_MAX, names);
    fi_addr_t peer = ot_insert(&t, names + (size_t)(1 - job->rank) * OT_NAME_MAX);
    uint8_t *mem = NULL;
    struct fid_mr *mr = NULL;
    keyinfo_t mine = {0}, keys[2];
    if (job->rank == 0) {
        mem = calloc(1, REGION);
        OT_CHECK(mem != NULL);
        OT_EXPECT(fi_mr_reg(t.domain, mem, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x5678, 0,
                            &mr, NULL),
                  0);
        mine.key = fi_mr_key(mr);
        OT_CHECK(!a->app_keys || mine.key == 0x5678);
        mine.len = REGION;
    }
    ot_allgather(job, &mine, sizeof(mine), keys);
    rma_writes(&t, job, peer, &keys[0], mem);
    rma_writedata(&t, job, peer, &keys[0], mem);
    rma_atomics(&t, job, peer, &keys[0], mem);
    rma_bad_key(&t, job, peer, &keys[0]);
    if (job->rank == 1)
        printf("ok rma (%s keys)\n", a->app_keys ? "application" : "provider");
    ot_barrier(job);
    if (mr != NULL)
        OT_EXPECT(fi_close(&mr->fid), 0);
    ot_ep_close(&t);
    free(mem);
}

int main(void)
{
    ot_require_provider();
    rma_args_t prov = {.app_keys = false}, app = {.app_keys = true};
    int failed = ot_job_run(2, 100, two_ranks, &prov);
    failed |= ot_job_run(2, 100, two_ranks, &app);
    printf("%s\n", failed ? "FAILED" : "passed");
    return failed;
}
