/*
 * One endpoint used by two threads at once (FI_THREAD_SAFE: the provider's domain lock): in
 * rank 0, one thread sends 2000 tagged messages to rank 1 and reads the transmit CQ while the
 * other receives rank 1's 2000 replies and reads the receive CQ, so both progress the same
 * ferry worker concurrently. Rank 1 echoes each message with its value + 1. Every value is
 * checked, in order. Labelled threads: run under ThreadSanitizer by the suite.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ot.h"

#define N 2000
#define TAG_PING 1
#define TAG_PONG 2

typedef struct side {
    struct fid_ep *ep;
    struct fid_cq *cq;
    fi_addr_t peer;
} side_t;

static void cq_wait_one(struct fid_cq *cq, void *want)
{
    int64_t deadline = ot_now_ms() + OT_TIMEOUT_MS;
    struct fi_cq_tagged_entry e;
    for (;;) {
        ssize_t rc = fi_cq_read(cq, &e, 1);
        if (rc == 1) {
            OT_CHECK(want == NULL || e.op_context == want);
            return;
        }
        if (rc != -FI_EAGAIN)
            ot_fail(__FILE__, __LINE__, "fi_cq_read = %zd", rc);
        if (ot_now_ms() > deadline)
            ot_fail(__FILE__, __LINE__, "no completion within %d ms", OT_TIMEOUT_MS);
    }
}

static void *sender(void *arg)
{
    side_t *s = arg;
    struct fi_context ctx;
    for (uint64_t i = 0; i < N; i++) {
        uint64_t v = i * 2;
        ssize_t rc;
        while ((rc = fi_tsend(s->ep, &v, sizeof(v), NULL, s->peer, TAG_PING, &ctx)) == -FI_EAGAIN)
            (void)fi_cq_read(s->cq, NULL, 0);
        OT_EXPECT(rc, 0);
        cq_wait_one(s->cq, &ctx);
    }
    return NULL;
}

static void *receiver(void *arg)
{
    side_t *s = arg;
    struct fi_context ctx;
    for (uint64_t i = 0; i < N; i++) {
        uint64_t v = 0;
        OT_EXPECT(fi_trecv(s->ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, TAG_PONG, 0, &ctx), 0);
        cq_wait_one(s->cq, &ctx);
        if (v != i * 2 + 1)
            ot_fail(__FILE__, __LINE__, "reply %llu carried %llu", (unsigned long long)i,
                    (unsigned long long)v);
    }
    return NULL;
}

static void two_ranks(ot_job_t *job, void *arg)
{
    (void)arg;
    struct fi_info *hints = ot_hints(FI_TAGGED, 0);
    hints->domain_attr->threading = FI_THREAD_SAFE;
    struct fi_info *info = ot_getinfo(hints);
    fi_freeinfo(hints);
    OT_CHECK(info->domain_attr->threading == FI_THREAD_SAFE);
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *txcq, *rxcq;
    struct fid_ep *ep;
    OT_EXPECT(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
    OT_EXPECT(fi_domain(fabric, info, &domain, NULL), 0);
    struct fi_av_attr aattr = {.type = FI_AV_TABLE};
    OT_EXPECT(fi_av_open(domain, &aattr, &av, NULL), 0);
    struct fi_cq_attr cattr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
    OT_EXPECT(fi_cq_open(domain, &cattr, &txcq, NULL), 0);
    OT_EXPECT(fi_cq_open(domain, &cattr, &rxcq, NULL), 0);
    OT_EXPECT(fi_endpoint(domain, info, &ep, NULL), 0);
    OT_EXPECT(fi_ep_bind(ep, &av->fid, 0), 0);
    OT_EXPECT(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT), 0);
    OT_EXPECT(fi_ep_bind(ep, &rxcq->fid, FI_RECV), 0);
    OT_EXPECT(fi_enable(ep), 0);
    uint8_t name[OT_NAME_MAX], names[2 * OT_NAME_MAX];
    size_t len = sizeof(name);
    OT_EXPECT(fi_getname(&ep->fid, name, &len), 0);
    ot_allgather(job, name, OT_NAME_MAX, names);
    fi_addr_t peer;
    OT_EXPECT(fi_av_insert(av, names + (size_t)(1 - job->rank) * OT_NAME_MAX, 1, &peer, 0, NULL),
              1);
    if (job->rank == 0) {
        side_t tx = {ep, txcq, peer}, rx = {ep, rxcq, peer};
        pthread_t t[2];
        OT_CHECK(pthread_create(&t[0], NULL, receiver, &rx) == 0);
        OT_CHECK(pthread_create(&t[1], NULL, sender, &tx) == 0);
        OT_CHECK(pthread_join(t[0], NULL) == 0 && pthread_join(t[1], NULL) == 0);
        printf("ok %d messages each way, two threads on one endpoint\n", N);
    } else {
        /* echo, one message at a time: the reply of message i carries 2i + 1 */
        struct fi_context rctx, sctx;
        for (uint64_t i = 0; i < N; i++) {
            uint64_t v = 0;
            OT_EXPECT(fi_trecv(ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, TAG_PING, 0, &rctx), 0);
            cq_wait_one(rxcq, &rctx);
            OT_CHECK(v == i * 2);
            v++;
            ssize_t rc;
            while ((rc = fi_tsend(ep, &v, sizeof(v), NULL, peer, TAG_PONG, &sctx)) == -FI_EAGAIN)
                (void)fi_cq_read(txcq, NULL, 0);
            OT_EXPECT(rc, 0);
            cq_wait_one(txcq, &sctx);
        }
    }
    ot_barrier(job);
    OT_EXPECT(fi_close(&ep->fid), 0);
    OT_EXPECT(fi_close(&txcq->fid), 0);
    OT_EXPECT(fi_close(&rxcq->fid), 0);
    OT_EXPECT(fi_close(&av->fid), 0);
    OT_EXPECT(fi_close(&domain->fid), 0);
    OT_EXPECT(fi_close(&fabric->fid), 0);
    fi_freeinfo(info);
}

int main(void)
{
    ot_require_provider();
    int failed = ot_job_run(2, 100, two_ranks, NULL);
    printf("%s\n", failed ? "FAILED" : "passed");
    return failed;
}
