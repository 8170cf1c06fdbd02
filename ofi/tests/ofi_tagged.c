/*
 * Tagged and untagged messages through the ferry provider between real processes, every byte
 * checked: sizes from 0 to 4 MiB (eager and rendezvous), posted before and after arrival,
 * gather/scatter lists, inject (the buffer is overwritten on return), remote CQ data, FI_PEEK /
 * FI_CLAIM / FI_DISCARD, truncation (FI_ETRUNC with len and olen; nothing written past the
 * buffer; the next message unaffected), cancel, FI_DELIVERY_COMPLETE (no completion before the
 * receiver posted), directed receives and FI_SOURCE with three ranks, a thousand unexpected
 * messages in order, CQ reads into a buffer of one entry, and entries in completion order across
 * reads of three when one completion in the middle is an error.
 *
 * ctest runs it over shm and with FERRY_TRANSPORTS=tcp.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ot.h"

#define TAG_SIZES 0x100u
#define TAG_MSG_SYNC 0x200u
#define TAG_INJECT 0x300u
#define TAG_DATA 0x400u
#define TAG_PEEK 0x500u
#define TAG_TRUNC 0x600u
#define TAG_CANCEL 0x700u
#define TAG_DC 0x800u
#define TAG_DIRECT 0x900u
#define TAG_MANY 0xa00u
#define TAG_SMALLCQ 0xb00u
#define TAG_CQORDER 0xc00u

#define PEEK_DATA 0x0123456789abcdefull

static const size_t sizes[] = {0, 1, 7, 128, 129, 4096, 8192, 65536, 1u << 20, 4u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

typedef struct pair {
    ot_ep_t t;
    fi_addr_t peer;
    struct fi_context ctx[64];
} pair_t;

static void pair_open(pair_t *p, ot_job_t *job, uint64_t caps, uint64_t tx_op_flags)
{
    ot_ep_open(&p->t, caps, tx_op_flags, FI_CQ_FORMAT_TAGGED);
    uint8_t names[2 * OT_NAME_MAX];
    ot_allgather(job, p->t.name, OT_NAME_MAX, names);
    p->peer = ot_insert(&p->t, names + (size_t)(1 - job->rank) * OT_NAME_MAX);
}

/* Send with retries while the provider says -FI_EAGAIN (reading the CQ progresses). */
static void tsend(pair_t *p, const void *buf, size_t len, uint64_t tag, void *ctx)
{
    ssize_t rc;
    while ((rc = fi_tsend(p->t.ep, buf, len, NULL, p->peer, tag, ctx)) == -FI_EAGAIN) {
        struct fi_cq_tagged_entry e;
        OT_CHECK(fi_cq_read(p->t.cq, &e, 0) >= 0 || true);
    }
    OT_EXPECT(rc, 0);
}

/* ---------------------------------------------------------------- sizes, posted and unexpected */

static void test_sizes(pair_t *p, ot_job_t *job)
{
    size_t max = sizes[NSIZES - 1];
    uint8_t *buf = malloc(max + 64);
    OT_CHECK(buf != NULL);
    for (int round = 0; round < 2; round++) {
        /* round 0: the receiver posts first; round 1: the messages arrive unexpected */
        bool posted_first = round == 0;
        for (size_t i = 0; i < NSIZES; i++) {
            size_t len = sizes[i];
            uint64_t tag = TAG_SIZES + i;
            if (job->rank == 0) {
                memset(buf, 0xee, max + 64);
                if (posted_first) {
                    OT_EXPECT(fi_trecv(p->t.ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, 0, &p->ctx[0]),
                              0);
                    ot_barrier(job);
                } else {
                    ot_barrier(job);
                    ot_barrier(job); /* sent */
                    OT_EXPECT(fi_trecv(p->t.ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, 0, &p->ctx[0]),
                              0);
                }
                struct fi_cq_tagged_entry e;
                ot_cq_expect(&p->t, &p->ctx[0], &e);
                OT_CHECK(e.len == len && e.tag == tag);
                OT_CHECK(e.flags == (FI_RECV | FI_TAGGED));
                ot_check(buf, len, (unsigned)(i + 1000 * round), "received");
                for (size_t b = len; b < len + 64; b++)
                    OT_CHECK(buf[b] == 0xee); /* nothing written past the message */
                ot_barrier(job);
            } else {
                ot_fill(buf, len, (unsigned)(i + 1000 * round));
                ot_barrier(job);
                tsend(p, buf, len, tag, &p->ctx[1]);
                if (!posted_first)
                    ot_barrier(job); /* the receiver posts after this */
                struct fi_cq_tagged_entry e;
                ot_cq_expect(&p->t, &p->ctx[1], &e);
                OT_CHECK(e.flags == (FI_SEND | FI_TAGGED));
                ot_barrier(job);
            }
        }
    }
    free(buf);
}

/* FI_MSG with gather/scatter lists of three pieces, and FI_SOURCE through fi_cq_readfrom. */
static void test_msg_iov(pair_t *p, ot_job_t *job)
{
    enum { LEN = 100000 };
    uint8_t *buf = malloc(LEN);
    OT_CHECK(buf != NULL);
    size_t cut[] = {1000, 60000};
    struct iovec iov[3] = {
        {buf, cut[0]}, {buf + cut[0], cut[1] - cut[0]}, {buf + cut[1], LEN - cut[1]}};
    if (job->rank == 0) {
        memset(buf, 0, LEN);
        OT_EXPECT(fi_recvv(p->t.ep, iov, NULL, 3, FI_ADDR_UNSPEC, &p->ctx[2]), 0);
        ot_barrier(job);
        struct fi_cq_tagged_entry e;
        fi_addr_t src = FI_ADDR_NOTAVAIL;
        for (;;) {
            ssize_t rc = fi_cq_readfrom(p->t.cq, &e, 1, &src);
            if (rc == 1)
                break;
            OT_EXPECT(rc, -FI_EAGAIN);
        }
        OT_CHECK(e.op_context == &p->ctx[2] && e.len == LEN);
        OT_CHECK(e.flags == (FI_RECV | FI_MSG));
        OT_CHECK(src == p->peer);
        ot_check(buf, LEN, 77, "FI_MSG iov");
    } else {
        ot_fill(buf, LEN, 77);
        ot_barrier(job);
        OT_EXPECT(fi_sendv(p->t.ep, iov, NULL, 3, p->peer, &p->ctx[3]), 0);
        ot_cq_expect(&p->t, &p->ctx[3], NULL);
    }
    ot_barrier(job);
    free(buf);
}

/* ---------------------------------------------------------------- inject and data */

static void test_inject_data(pair_t *p, ot_job_t *job)
{
    uint8_t buf[256];
    if (job->rank == 0) {
        for (unsigned i = 0; i < 3; i++) {
            memset(buf, 0, sizeof(buf));
            OT_EXPECT(fi_trecv(p->t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG_INJECT + i, 0,
                               &p->ctx[4]),
                      0);
            struct fi_cq_tagged_entry e;
            ot_cq_expect(&p->t, &p->ctx[4], &e);
            OT_CHECK(e.len == 128 && e.tag == TAG_INJECT + i);
            ot_check(buf, 128, 300 + i, "injected");
            if (i == 2) {
                OT_CHECK(e.flags == (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA));
                OT_CHECK(e.data == 0x1122334455667788ull);
            } else {
                OT_CHECK(e.flags == (FI_RECV | FI_TAGGED));
            }
        }
        OT_EXPECT(
            fi_trecv(p->t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG_DATA, 0, &p->ctx[5]), 0);
        struct fi_cq_tagged_entry e;
        ot_cq_expect(&p->t, &p->ctx[5], &e);
        OT_CHECK(e.flags == (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA));
        OT_CHECK(e.data == 0xfeedfacecafebeefull && e.len == 200);
        ot_check(buf, 200, 400, "senddata");
        ot_cq_empty(&p->t);
    } else {
        for (unsigned i = 0; i < 3; i++) {
            ot_fill(buf, 128, 300 + i);
            ssize_t rc;
            if (i < 2)
                rc = fi_tinject(p->t.ep, buf, 128, p->peer, TAG_INJECT + i);
            else
                rc = fi_tinjectdata(p->t.ep, buf, 128, 0x1122334455667788ull, p->peer,
                                    TAG_INJECT + i);
            OT_EXPECT(rc, 0);
            memset(buf, 0xab, sizeof(buf)); /* the buffer is ours again at once */
        }
        OT_EXPECT(fi_tinject(p->t.ep, buf, 129, p->peer, TAG_INJECT), -FI_EMSGSIZE);
        ot_fill(buf, 200, 400);
        OT_EXPECT(fi_tsenddata(p->t.ep, buf, 200, NULL, 0xfeedfacecafebeefull, p->peer, TAG_DATA,
                               &p->ctx[6]),
                  0);
        ot_cq_expect(&p->t, &p->ctx[6], NULL);
        ot_cq_empty(&p->t); /* injects write no entry */
    }
    ot_barrier(job);
}

/* ---------------------------------------------------------------- peek, claim, discard */

static int trecvmsg(pair_t *p, void *buf, size_t len, uint64_t tag, uint64_t flags, void *ctx,
                    struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
    struct iovec iov = {buf, len};
    struct fi_msg_tagged msg = {.msg_iov = buf ? &iov : NULL,
                                .iov_count = buf ? 1 : 0,
                                .addr = FI_ADDR_UNSPEC,
                                .tag = tag,
                                .context = ctx};
    OT_EXPECT(fi_trecvmsg(p->t.ep, &msg, flags | FI_COMPLETION), 0);
    return ot_cq_next(&p->t, e, err);
}

static void test_peek(pair_t *p, ot_job_t *job)
{
    static uint8_t buf[70000];
    size_t lens[4] = {10, 5000, 70000, 300};
    if (job->rank == 0) {
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        OT_EXPECT(trecvmsg(p, NULL, 0, TAG_PEEK + 9, FI_PEEK, &p->ctx[7], &e, &err), -FI_ENOMSG);
        OT_CHECK(err.op_context == &p->ctx[7]);
        ot_barrier(job); /* all four were sent */
        /* A: peek (retry until it arrived), then receive */
        while (trecvmsg(p, NULL, 0, TAG_PEEK, FI_PEEK, &p->ctx[8], &e, &err) == -FI_ENOMSG)
            ;
        OT_CHECK(e.op_context == &p->ctx[8] && e.len == lens[0] && e.tag == TAG_PEEK);
        /* its remote CQ data is seen before it is received (the MPI probe's source rank) */
        OT_CHECK(e.flags == (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA) && e.data == PEEK_DATA);
        OT_CHECK(trecvmsg(p, buf, sizeof(buf), TAG_PEEK, 0, &p->ctx[9], &e, &err) == 1);
        OT_CHECK(e.len == lens[0] && e.data == PEEK_DATA);
        ot_check(buf, lens[0], 500, "peeked then received");
        /* B: peek and claim, then receive the claimed message */
        while (trecvmsg(p, NULL, 0, TAG_PEEK + 1, FI_PEEK | FI_CLAIM, &p->ctx[10], &e, &err) ==
               -FI_ENOMSG)
            ;
        OT_CHECK(e.len == lens[1]);
        OT_EXPECT(trecvmsg(p, NULL, 0, TAG_PEEK + 1, FI_PEEK, &p->ctx[11], &e, &err), -FI_ENOMSG);
        memset(buf, 0, sizeof(buf));
        OT_CHECK(trecvmsg(p, buf, sizeof(buf), TAG_PEEK + 1, FI_CLAIM, &p->ctx[10], &e, &err) == 1);
        OT_CHECK(e.op_context == &p->ctx[10] && e.len == lens[1]);
        ot_check(buf, lens[1], 501, "claimed");
        /* C (a rendezvous size): peek and discard; it is gone afterwards */
        while (trecvmsg(p, NULL, 0, TAG_PEEK + 2, FI_PEEK | FI_DISCARD, &p->ctx[12], &e, &err) ==
               -FI_ENOMSG)
            ;
        OT_CHECK(e.op_context == &p->ctx[12] && e.len == lens[2]);
        OT_EXPECT(trecvmsg(p, NULL, 0, TAG_PEEK + 2, FI_PEEK, &p->ctx[13], &e, &err), -FI_ENOMSG);
        /* D: claim, then discard the claimed message */
        while (trecvmsg(p, NULL, 0, TAG_PEEK + 3, FI_PEEK | FI_CLAIM, &p->ctx[14], &e, &err) ==
               -FI_ENOMSG)
            ;
        OT_CHECK(trecvmsg(p, NULL, 0, TAG_PEEK + 3, FI_CLAIM | FI_DISCARD, &p->ctx[14], &e, &err) ==
                 1);
        OT_EXPECT(trecvmsg(p, NULL, 0, TAG_PEEK + 3, FI_PEEK, &p->ctx[15], &e, &err), -FI_ENOMSG);
        ot_cq_empty(&p->t);
    } else {
        static uint8_t bufs[4][70000];
        for (unsigned i = 0; i < 4; i++) {
            ot_fill(bufs[i], lens[i], 500 + i);
            if (i == 0)
                OT_EXPECT(fi_tsenddata(p->t.ep, bufs[i], lens[i], NULL, PEEK_DATA, p->peer,
                                       TAG_PEEK + i, &p->ctx[16 + i]),
                          0);
            else
                tsend(p, bufs[i], lens[i], TAG_PEEK + i, &p->ctx[16 + i]);
        }
        ot_barrier(job);
        /* the rendezvous one completes once the receiver discarded it */
        for (unsigned i = 0; i < 4; i++) {
            struct fi_cq_tagged_entry e;
            struct fi_cq_err_entry err;
            OT_EXPECT(ot_cq_next(&p->t, &e, &err), 1);
            int k = (int)((struct fi_context *)e.op_context - &p->ctx[16]);
            OT_CHECK(k >= 0 && k < 4);
        }
    }
    ot_barrier(job);
}

/* ---------------------------------------------------------------- truncation and cancel */

static void test_truncate(pair_t *p, ot_job_t *job)
{
    /* an eager message and a rendezvous one, each followed by a message that must arrive whole */
    size_t big[2] = {1000, 2u << 20};
    size_t small = 100, next = 200;
    static uint8_t buf[(2u << 20) + 64];
    for (int k = 0; k < 2; k++) {
        if (job->rank == 0) {
            ot_barrier(job);
            memset(buf, 0xee, small + 64);
            struct fi_cq_tagged_entry e;
            struct fi_cq_err_entry err;
            OT_EXPECT(
                fi_trecv(p->t.ep, buf, small, NULL, FI_ADDR_UNSPEC, TAG_TRUNC, 0, &p->ctx[20]), 0);
            OT_EXPECT(ot_cq_next(&p->t, &e, &err), -FI_ETRUNC);
            OT_CHECK(err.op_context == &p->ctx[20] && err.len == small);
            OT_CHECK(err.olen == big[k] - small && err.tag == TAG_TRUNC);
            OT_CHECK(err.flags & FI_RECV);
            ot_check(buf, small, 600 + (unsigned)k, "truncated");
            for (size_t b = small; b < small + 64; b++)
                OT_CHECK(buf[b] == 0xee);
            OT_EXPECT(fi_trecv(p->t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG_TRUNC, 0,
                               &p->ctx[21]),
                      0);
            ot_cq_expect(&p->t, &p->ctx[21], &e);
            OT_CHECK(e.len == next);
            ot_check(buf, next, 610 + (unsigned)k, "after the truncated one");
        } else {
            ot_fill(buf, big[k], 600 + (unsigned)k);
            tsend(p, buf, big[k], TAG_TRUNC, &p->ctx[22]);
            ot_barrier(job);
            ot_cq_expect(&p->t, &p->ctx[22], NULL);
            ot_fill(buf, next, 610 + (unsigned)k);
            tsend(p, buf, next, TAG_TRUNC, &p->ctx[23]);
            ot_cq_expect(&p->t, &p->ctx[23], NULL);
        }
        ot_barrier(job);
    }
}

static void test_cancel(pair_t *p, ot_job_t *job)
{
    uint8_t buf[64];
    if (job->rank == 0) {
        OT_EXPECT(
            fi_trecv(p->t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG_CANCEL, 0, &p->ctx[24]),
            0);
        OT_EXPECT(fi_cancel(&p->t.ep->fid, &p->ctx[24]), 0);
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        OT_EXPECT(ot_cq_next(&p->t, &e, &err), -FI_ECANCELED);
        OT_CHECK(err.op_context == &p->ctx[24] && (err.flags & FI_RECV));
        OT_EXPECT(fi_cancel(&p->t.ep->fid, &p->ctx[24]), -FI_ENOENT);
        OT_EXPECT(fi_cancel(&p->t.ep->fid, &p->ctx[25]), -FI_ENOENT);
        ot_barrier(job);
        OT_EXPECT(
            fi_trecv(p->t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG_CANCEL, 0, &p->ctx[26]),
            0);
        ot_cq_expect(&p->t, &p->ctx[26], &e);
        OT_CHECK(e.len == 50);
        ot_check(buf, 50, 700, "after a cancel");
    } else {
        ot_barrier(job);
        ot_fill(buf, 50, 700);
        tsend(p, buf, 50, TAG_CANCEL, &p->ctx[27]);
        ot_cq_expect(&p->t, &p->ctx[27], NULL);
    }
    ot_barrier(job);
}

/* ---------------------------------------------------------------- delivery complete */

static void test_delivery_complete(ot_job_t *job, void *arg)
{
    (void)arg;
    pair_t p;
    pair_open(&p, job, FI_TAGGED, FI_DELIVERY_COMPLETE);
    static uint8_t buf[1u << 20];
    size_t lens[2] = {64, sizeof(buf)};
    for (int k = 0; k < 2; k++) {
        if (job->rank == 1) {
            ot_fill(buf, lens[k], 800 + (unsigned)k);
            tsend(&p, buf, lens[k], TAG_DC, &p.ctx[0]);
            /* the receiver has not posted: no completion may appear until it says it will */
            for (int i = 0; i < 2000; i++)
                OT_EXPECT(fi_cq_read(p.t.cq, &(struct fi_cq_tagged_entry){0}, 1), -FI_EAGAIN);
            ot_barrier(job); /* the receiver posts after this */
            ot_cq_expect(&p.t, &p.ctx[0], NULL);
        } else {
            ot_barrier(job);
            OT_EXPECT(
                fi_trecv(p.t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG_DC, 0, &p.ctx[1]), 0);
            struct fi_cq_tagged_entry e;
            ot_cq_expect(&p.t, &p.ctx[1], &e);
            OT_CHECK(e.len == lens[k]);
            ot_check(buf, lens[k], 800 + (unsigned)k, "delivery complete");
        }
        ot_barrier(job);
    }
    if (job->rank == 0)
        printf("ok delivery_complete\n");
    ot_ep_close(&p.t);
}

/* ---------------------------------------------------------------- many unexpected, small CQ */

static void test_many(pair_t *p, ot_job_t *job)
{
    enum { N = 1000 };
    if (job->rank == 1) {
        for (uint64_t i = 0; i < N; i++) {
            uint64_t v = i * 3 + 1;
            ssize_t rc;
            while ((rc = fi_tinject(p->t.ep, &v, sizeof(v), p->peer, TAG_MANY)) == -FI_EAGAIN)
                (void)fi_cq_read(p->t.cq, NULL, 0);
            OT_EXPECT(rc, 0);
        }
        ot_barrier(job);
    } else {
        ot_barrier(job);
        for (uint64_t i = 0; i < N; i++) {
            uint64_t v = 0;
            OT_EXPECT(
                fi_trecv(p->t.ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, TAG_MANY, 0, &p->ctx[28]),
                0);
            ot_cq_expect(&p->t, &p->ctx[28], NULL);
            if (v != i * 3 + 1)
                ot_fail(__FILE__, __LINE__, "message %llu carried %llu: out of order",
                        (unsigned long long)i, (unsigned long long)v);
        }
    }
    ot_barrier(job);
}

static void test_small_cq(pair_t *p, ot_job_t *job)
{
    enum { N = 10 };
    uint32_t vals[N];
    if (job->rank == 0) {
        for (int i = 0; i < N; i++)
            OT_EXPECT(fi_trecv(p->t.ep, &vals[i], sizeof(vals[i]), NULL, FI_ADDR_UNSPEC,
                               TAG_SMALLCQ, 0, &p->ctx[30 + i]),
                      0);
        ot_barrier(job);
        /* an entry and a canary after it: a read of one entry writes one entry */
        struct {
            struct fi_cq_tagged_entry e;
            uint8_t canary[64];
        } out;
        bool seen[N] = {false};
        for (int got = 0; got < N;) {
            memset(out.canary, 0x5a, sizeof(out.canary));
            OT_EXPECT(fi_cq_read(p->t.cq, &out, 0), 0);
            ssize_t rc = fi_cq_read(p->t.cq, &out.e, 1);
            for (size_t b = 0; b < sizeof(out.canary); b++)
                OT_CHECK(out.canary[b] == 0x5a);
            if (rc == -FI_EAGAIN)
                continue;
            OT_EXPECT(rc, 1);
            int i = (int)((struct fi_context *)out.e.op_context - &p->ctx[30]);
            OT_CHECK(i >= 0 && i < N && !seen[i]);
            seen[i] = true;
            OT_CHECK(vals[i] == 1000u + (uint32_t)i);
            got++;
        }
        ot_cq_empty(&p->t);
    } else {
        ot_barrier(job);
        for (uint32_t i = 0; i < N; i++) {
            uint32_t v = 1000 + i;
            OT_EXPECT(fi_tinject(p->t.ep, &v, sizeof(v), p->peer, TAG_SMALLCQ), 0);
        }
    }
    ot_barrier(job);
}

/* Six receives complete in one progress, the second truncated: reads of three entries give them
 * in order, the error entry where it happened (a read that progresses writes successes straight
 * into its buffer until an entry has to wait in the ring: cq_readfrom). */
static void test_cq_order(pair_t *p, ot_job_t *job)
{
    enum { N = 6, BAD = 1 };
    uint64_t vals[N];
    if (job->rank == 0) {
        for (int i = 0; i < N; i++)
            OT_EXPECT(fi_trecv(p->t.ep, &vals[i], i == BAD ? 2 : sizeof(vals[i]), NULL,
                               FI_ADDR_UNSPEC, TAG_CQORDER, 0, &p->ctx[40 + i]),
                      0);
        ot_barrier(job);
        /* the peer's six sends are out, and nothing read them: the first read's progress takes
         * them all */
        ot_ep_t *progressed = ot_collectives_progress(NULL);
        ot_barrier(job);
        ot_collectives_progress(progressed);
        int next = 0;
        while (next < N) {
            struct fi_cq_tagged_entry e[3];
            ssize_t rc = fi_cq_read(p->t.cq, e, 3);
            if (rc == -FI_EAGAIN)
                continue;
            if (rc == -FI_EAVAIL) {
                struct fi_cq_err_entry err = {0};
                OT_EXPECT(fi_cq_readerr(p->t.cq, &err, 0), 1);
                OT_CHECK(next == BAD && err.op_context == &p->ctx[40 + BAD]);
                OT_CHECK(err.err == FI_ETRUNC && err.len == 2 && err.olen == sizeof(uint64_t) - 2);
                next++;
                continue;
            }
            OT_CHECK(rc >= 1 && rc <= 3);
            for (ssize_t k = 0; k < rc; k++, next++) {
                OT_CHECK(next != BAD && e[k].op_context == &p->ctx[40 + next]);
                OT_CHECK(e[k].len == sizeof(uint64_t) && vals[next] == 7000u + (uint64_t)next);
            }
        }
        ot_cq_empty(&p->t);
    } else {
        ot_barrier(job); /* the receives are posted: the messages will be expected ones */
        for (uint64_t i = 0; i < N; i++) {
            uint64_t v = 7000 + i;
            OT_EXPECT(fi_tinject(p->t.ep, &v, sizeof(v), p->peer, TAG_CQORDER), 0);
        }
        ot_barrier(job);
    }
    ot_barrier(job);
}

static void two_ranks(ot_job_t *job, void *arg)
{
    (void)arg;
    pair_t p;
    pair_open(&p, job, FI_TAGGED | FI_MSG, 0);
    struct {
        const char *name;
        void (*fn)(pair_t *, ot_job_t *);
    } tests[] = {
        {"sizes", test_sizes}, {"msg_iov", test_msg_iov},   {"inject_data", test_inject_data},
        {"peek", test_peek},   {"truncate", test_truncate}, {"cancel", test_cancel},
        {"many", test_many},   {"small_cq", test_small_cq}, {"cq_order", test_cq_order},
    };
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        tests[i].fn(&p, job);
        if (job->rank == 0)
            printf("ok %s\n", tests[i].name);
    }
    ot_ep_close(&p.t);
}

/* ---------------------------------------------------------------- directed receives */

static void three_ranks(ot_job_t *job, void *arg)
{
    (void)arg;
    ot_ep_t t;
    ot_ep_open(&t, FI_TAGGED | FI_DIRECTED_RECV, 0, FI_CQ_FORMAT_TAGGED);
    uint8_t names[3 * OT_NAME_MAX];
    ot_allgather(job, t.name, OT_NAME_MAX, names);
    fi_addr_t addr[3];
    for (int r = 0; r < 3; r++)
        addr[r] = ot_insert(&t, names + (size_t)r * OT_NAME_MAX);
    struct fi_context ctx[4];
    if (job->rank == 0) {
        uint32_t v[4] = {0};
        /* one receive from rank 2 posted before anything arrives */
        OT_EXPECT(fi_trecv(t.ep, &v[0], 4, NULL, addr[2], TAG_DIRECT, 0, &ctx[0]), 0);
        ot_barrier(job); /* ranks 1 and 2 send two messages each */
        ot_barrier(job);
        ot_cq_expect(&t, &ctx[0], NULL);
        OT_CHECK(v[0] == 2000);
        /* then, unexpected: from 2 first, from 1, from anyone, from 1 */
        OT_EXPECT(fi_trecv(t.ep, &v[1], 4, NULL, addr[2], TAG_DIRECT, 0, &ctx[1]), 0);
        ot_cq_expect(&t, &ctx[1], NULL);
        OT_CHECK(v[1] == 2001);
        OT_EXPECT(fi_trecv(t.ep, &v[2], 4, NULL, addr[1], TAG_DIRECT, 0, &ctx[2]), 0);
        ot_cq_expect(&t, &ctx[2], NULL);
        OT_CHECK(v[2] == 1000);
        OT_EXPECT(fi_trecv(t.ep, &v[3], 4, NULL, FI_ADDR_UNSPEC, TAG_DIRECT, 0, &ctx[3]), 0);
        struct fi_cq_tagged_entry e;
        fi_addr_t src = FI_ADDR_NOTAVAIL;
        for (;;) {
            ssize_t rc = fi_cq_readfrom(t.cq, &e, 1, &src);
            if (rc == 1)
                break;
            OT_EXPECT(rc, -FI_EAGAIN);
        }
        OT_CHECK(e.op_context == &ctx[3] && v[3] == 1001 && src == addr[1]);
        ot_cq_empty(&t);
        printf("ok directed\n");
    } else {
        ot_barrier(job);
        for (uint32_t k = 0; k < 2; k++) {
            uint32_t v = (uint32_t)job->rank * 1000 + k;
            OT_EXPECT(fi_tinject(t.ep, &v, 4, addr[0], TAG_DIRECT), 0);
        }
        ot_barrier(job); /* progresses until rank 0 has both */
    }
    ot_barrier(job);
    ot_ep_close(&t);
}

int main(void)
{
    ot_require_provider();
    int failed = 0;
    failed |= ot_job_run(2, 100, two_ranks, NULL);
    failed |= ot_job_run(2, 60, test_delivery_complete, NULL);
    failed |= ot_job_run(3, 60, three_ranks, NULL);
    printf("%s\n", failed ? "FAILED" : "passed");
    return failed;
}
