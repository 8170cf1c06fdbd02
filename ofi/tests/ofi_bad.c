/*
 * Dead peers through the ferry provider. Rank 1 sends one message to rank 0 and closes its
 * endpoint (its worker and listening socket go away); rank 0 then inserts its name. The insert
 * succeeds, as in every libfabric provider (an address outlives its process): a directed receive
 * from that fi_addr gets the message rank 1 sent before it left (fabtests' fi_msg_inject with
 * out-of-band address exchange does exactly this when the client is faster than the server), and
 * sends to it fail (their return value or their completion) instead of hanging. A peer that dies
 * after it was inserted makes later sends fail the same way. The endpoint keeps working with the
 * live peers throughout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ot.h"

/* Sends to a dead peer: one fails (from the call or from its completion) before the deadline.
 * Earlier ones may still succeed: a message written before this process noticed the death is
 * sent as far as it knows. */
static void send_fails(ot_ep_t *t, fi_addr_t addr, const char *what)
{
    int64_t deadline = ot_now_ms() + OT_TIMEOUT_MS;
    for (int attempt = 0; ot_now_ms() < deadline; attempt++) {
        uint64_t v = 1;
        struct fi_context ctx;
        ssize_t rc = fi_tsend(t->ep, &v, sizeof(v), NULL, addr, 1, &ctx);
        if (rc == 0) {
            struct fi_cq_tagged_entry e;
            struct fi_cq_err_entry err;
            rc = ot_cq_next(t, &e, &err);
            if (rc == 1)
                continue;
            OT_CHECK(err.op_context == &ctx);
        }
        if (rc == -FI_EAGAIN)
            continue;
        OT_CHECK(rc == -FI_ECONNREFUSED || rc == -FI_ECONNRESET || rc == -FI_ETIMEDOUT);
        printf("ok %s (%s after %d sends)\n", what, fi_strerror((int)-rc), attempt);
        return;
    }
    ot_fail(__FILE__, __LINE__, "%s: sends to a dead peer still succeed after %d ms", what,
            OT_TIMEOUT_MS);
}

/* The endpoint still talks to a live peer (rank 2). */
static void still_works(ot_ep_t *t, ot_job_t *job, fi_addr_t live)
{
    uint64_t v = 0;
    struct fi_context ctx;
    if (job->rank == 0) {
        OT_EXPECT(fi_trecv(t->ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, 9, 0, &ctx), 0);
        ot_cq_expect(t, &ctx, NULL);
        OT_CHECK(v == 0x600d);
    } else {
        v = 0x600d;
        OT_EXPECT(fi_tinject(t->ep, &v, sizeof(v), live, 9), 0);
    }
}

static void three_ranks(ot_job_t *job, void *arg)
{
    (void)arg;
    ot_ep_t t;
    ot_ep_open(&t, FI_TAGGED | FI_DIRECTED_RECV, 0, FI_CQ_FORMAT_TAGGED);
    uint8_t names[3 * OT_NAME_MAX];
    ot_allgather(job, t.name, OT_NAME_MAX, names);

    /* rank 1 sends its last message and goes away before rank 0 ever inserted it */
    if (job->rank == 1) {
        uint64_t last = 0x1a57;
        struct fi_context ctx;
        fi_addr_t zero = ot_insert(&t, names);
        OT_EXPECT(fi_tsend(t.ep, &last, sizeof(last), NULL, zero, 5, &ctx), 0);
        ot_cq_expect(&t, &ctx, NULL);
        ot_ep_close(&t);
    }
    ot_barrier(job);
    if (job->rank == 0) {
        fi_addr_t addr = FI_ADDR_NOTAVAIL;
        int err = -1;
        int n = fi_av_insert(t.av, names + OT_NAME_MAX, 1, &addr, FI_SYNC_ERR, &err);
        OT_CHECK(n == 1 && err == 0 && addr != FI_ADDR_NOTAVAIL);
        printf("ok a peer that exited is inserted\n");
        uint64_t v = 0;
        struct fi_context ctx;
        struct fi_cq_tagged_entry e;
        OT_EXPECT(fi_trecv(t.ep, &v, sizeof(v), NULL, addr, 5, 0, &ctx), 0);
        ot_cq_expect(&t, &ctx, &e);
        OT_CHECK(v == 0x1a57 && e.tag == 5 && e.len == sizeof(v));
        printf("ok its last message matched a receive directed to its new fi_addr\n");
        send_fails(&t, addr, "send to a peer dead before its insert");
    }
    /* rank 2 is inserted, then dies */
    fi_addr_t two = FI_ADDR_NOTAVAIL, zero = FI_ADDR_NOTAVAIL;
    if (job->rank == 0)
        two = ot_insert(&t, names + 2 * OT_NAME_MAX);
    if (job->rank == 2)
        zero = ot_insert(&t, names);
    if (job->rank != 1)
        still_works(&t, job, zero);
    ot_barrier(job);
    if (job->rank == 2)
        ot_ep_close(&t);
    ot_barrier(job);
    if (job->rank == 0) {
        send_fails(&t, two, "send to a peer that died after its insert");
        ot_ep_close(&t);
    }
    ot_barrier(job);
}

int main(void)
{
    ot_require_provider();
    int failed = ot_job_run(3, 60, three_ranks, NULL);
    printf("%s\n", failed ? "FAILED" : "passed");
    return failed;
}
