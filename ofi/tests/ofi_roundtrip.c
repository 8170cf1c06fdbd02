/*
 * ofi_roundtrip: Open MPI's tagged round trip over the provider, both ranks in one process, so
 * that callgrind counts the instructions of a round trip without the polls of a waiting rank.
 *
 * Two endpoints (two domains, each with its AV and CQ) opened as Open MPI 4.1's OFI MTL opens
 * its one (FI_TAGGED | FI_DIRECTED_RECV, FI_THREAD_DOMAIN, FI_CQ_FORMAT_TAGGED, the CQ bound
 * with FI_SELECTIVE_COMPLETION, op_flags FI_COMPLETION, remote CQ data). A round trip is what
 * two ranks of an MPI ping-pong call: A sends (fi_tinjectdata up to the inject size, else
 * fi_tsenddata and its completion), posts its receive directed at B (fi_trecv); B reads its CQ
 * (its receive, posted before, completes), sends back and posts the receive of the next round;
 * A reads its CQ. Every byte, tag, CQ datum and source is checked.
 *
 * Usage: ofi_roundtrip [SIZE [ROUND_TRIPS [POLLS [STREAM_ROUNDS]]]]   (default 8 B, 1000, 0, 0)
 * then POLLS reads of A's empty CQ (a rank waiting: what one poll costs), then STREAM_ROUNDS
 * rounds of Open MPI's tag_bw stream (a sender that outruns its receiver): A injects
 * 2 x STREAM_WINDOW messages (stream_send); B, which keeps STREAM_WINDOW receives posted, reads
 * its CQ as the MTL does (up to 100 entries a read) and posts a receive for each entry it got
 * (stream_recv): half the messages match a posted receive, half wait in ferry's unexpected
 * queue until their receive is posted.
 * Counting: valgrind --tool=callgrind --toggle-collect=round_trips ofi_roundtrip 8 20000
 * (instructions / (ROUND_TRIPS + 100 warm-up ones); --toggle-collect=empty_polls for POLLS;
 * --toggle-collect=stream_send and stream_recv: / (2 x STREAM_WINDOW x STREAM_ROUNDS) a
 * message on each side).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ot.h"

typedef struct rank {
    ot_ep_t t;
    fi_addr_t peer;
    uint64_t data; /* its remote CQ data (Open MPI: the rank) */
    uint8_t *sbuf;
    uint8_t *rbuf;
    struct fi_context2 rctx;
    struct fi_context2 sctx;
} rank_t;

/* Open MPI's full tag mode: the communicator in the high bits, the MPI tag in the low */
#define TAG 0x0000000500000007ull

static size_t size;
static size_t inject_size;

static void rank_open(rank_t *r, uint64_t data)
{
    struct fi_info *hints = fi_allocinfo();
    OT_CHECK(hints != NULL);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->av_type = FI_AV_MAP;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->cq_data_size = 4;
    hints->tx_attr->op_flags = FI_COMPLETION;
    hints->rx_attr->op_flags = FI_COMPLETION;
    hints->fabric_attr->prov_name = strdup("ferry");
    memset(&r->t, 0, sizeof(r->t));
    r->t.info = ot_getinfo(hints);
    fi_freeinfo(hints);
    OT_EXPECT(fi_fabric(r->t.info->fabric_attr, &r->t.fabric, NULL), 0);
    OT_EXPECT(fi_domain(r->t.fabric, r->t.info, &r->t.domain, NULL), 0);
    struct fi_av_attr av_attr = {.type = FI_AV_MAP};
    OT_EXPECT(fi_av_open(r->t.domain, &av_attr, &r->t.av, NULL), 0);
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 100};
    OT_EXPECT(fi_cq_open(r->t.domain, &cq_attr, &r->t.cq, NULL), 0);
    OT_EXPECT(fi_endpoint(r->t.domain, r->t.info, &r->t.ep, NULL), 0);
    OT_EXPECT(fi_ep_bind(r->t.ep, &r->t.av->fid, 0), 0);
    OT_EXPECT(fi_ep_bind(r->t.ep, &r->t.cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION),
              0);
    OT_EXPECT(fi_enable(r->t.ep), 0);
    r->t.namelen = sizeof(r->t.name);
    OT_EXPECT(fi_getname(&r->t.ep->fid, r->t.name, &r->t.namelen), 0);
    r->data = data;
    r->sbuf = malloc(size > 0 ? size : 1);
    r->rbuf = malloc(size > 0 ? size : 1);
    OT_CHECK(r->sbuf != NULL && r->rbuf != NULL);
}

static void rank_close(rank_t *r)
{
    fi_close(&r->t.ep->fid);
    fi_close(&r->t.cq->fid);
    fi_close(&r->t.av->fid);
    fi_close(&r->t.domain->fid);
    fi_close(&r->t.fabric->fid);
    fi_freeinfo(r->t.info);
    free(r->sbuf);
    free(r->rbuf);
}

static void rank_post(rank_t *r, uint64_t tag)
{
    OT_EXPECT(fi_trecv(r->t.ep, r->rbuf, size, NULL, r->peer, tag, 0, &r->rctx), 0);
}

static long empty_reads; /* reads that found nothing (then the peer is progressed too) */

/* Read r's CQ until the entry of context came, checking a receive's; while nothing is there,
 * the peer's CQ is read too (count 0: progress only), as that rank would poll it. */
static void rank_wait(rank_t *r, rank_t *peer, void *context, uint64_t tag)
{
    struct fi_cq_tagged_entry entry;
    int64_t deadline = ot_now_ms() + OT_TIMEOUT_MS;
    for (;;) {
        ssize_t n = fi_cq_read(r->t.cq, &entry, 1);
        if (n == -FI_EAGAIN) {
            empty_reads++;
            OT_EXPECT(fi_cq_read(peer->t.cq, &entry, 0), 0);
            OT_CHECK(ot_now_ms() < deadline);
            continue;
        }
        OT_EXPECT(n, 1);
        break;
    }
    OT_CHECK(entry.op_context == context);
    if (context == &r->rctx) {
        OT_CHECK(entry.len == size && entry.tag == tag);
        OT_CHECK((entry.flags & FI_REMOTE_CQ_DATA) && entry.data == peer->data);
        OT_CHECK(memcmp(r->rbuf, peer->sbuf, size) == 0);
    }
}

/* The MTL's blocking send: an inject when it fits, else a send whose completion it waits for
 * (the peer progressing meanwhile, as it polls for its receive). */
static void rank_send(rank_t *r, rank_t *peer, uint64_t tag)
{
    if (size <= inject_size) {
        OT_EXPECT(fi_tinjectdata(r->t.ep, r->sbuf, size, r->data, r->peer, tag), 0);
        return;
    }
    OT_EXPECT(fi_tsenddata(r->t.ep, r->sbuf, size, NULL, r->data, r->peer, tag, &r->sctx), 0);
    rank_wait(r, peer, &r->sctx, tag);
}

/* The measured part (callgrind --toggle-collect=round_trips). */
__attribute__((noinline)) void round_trips(rank_t *a, rank_t *b, long count);
__attribute__((noinline)) void round_trips(rank_t *a, rank_t *b, long count)
{
    for (long i = 0; i < count; i++) {
        rank_send(a, b, TAG);
        rank_post(a, TAG);
        rank_wait(b, a, &b->rctx, TAG);
        rank_send(b, a, TAG);
        rank_post(b, TAG); /* the next round's */
        rank_wait(a, b, &a->rctx, TAG);
    }
}

/* Reads of an empty CQ: what a rank waiting for a message spends per poll
 * (callgrind --toggle-collect=empty_polls). */
__attribute__((noinline)) void empty_polls(rank_t *r, long count);
__attribute__((noinline)) void empty_polls(rank_t *r, long count)
{
    struct fi_cq_tagged_entry entries[100];
    for (long i = 0; i < count; i++)
        OT_EXPECT(fi_cq_read(r->t.cq, entries, 100), -FI_EAGAIN);
}

#define STREAM_WINDOW 16 /* mpi_pingpong's MP_WINDOW */

/* The sender's half of a stream round: 2 x STREAM_WINDOW sends, as the MTL's MPI_Isend of a
 * small message (an inject, complete on return). */
__attribute__((noinline)) void stream_send(rank_t *a);
__attribute__((noinline)) void stream_send(rank_t *a)
{
    for (int i = 0; i < 2 * STREAM_WINDOW; i++)
        OT_EXPECT(fi_tinjectdata(a->t.ep, a->sbuf, size, a->data, a->peer, TAG), 0);
}

/* The receiver's half: 2 x STREAM_WINDOW completions; each entry's receive is posted again
 * (B keeps STREAM_WINDOW receives posted, all with the same context: the MTL's requests). */
__attribute__((noinline)) long stream_recv(rank_t *b, rank_t *a);
__attribute__((noinline)) long stream_recv(rank_t *b, rank_t *a)
{
    struct fi_cq_tagged_entry entries[100];
    long got = 0;
    long empty = 0;
    int64_t deadline = ot_now_ms() + OT_TIMEOUT_MS;
    while (got < 2 * STREAM_WINDOW) {
        ssize_t n = fi_cq_read(b->t.cq, entries, 100);
        if (n == -FI_EAGAIN) {
            empty++;
            OT_EXPECT(fi_cq_read(a->t.cq, entries, 0), 0);
            OT_CHECK(ot_now_ms() < deadline);
            continue;
        }
        OT_CHECK(n > 0);
        for (ssize_t i = 0; i < n; i++) {
            OT_CHECK(entries[i].op_context == &b->rctx && entries[i].len == size);
            OT_CHECK(entries[i].tag == TAG && entries[i].data == a->data);
            rank_post(b, TAG);
        }
        got += n;
    }
    return empty;
}

static long stream(rank_t *a, rank_t *b, long rounds)
{
    long empty = 0;
    for (long r = 0; r < rounds; r++) {
        stream_send(a);
        empty += stream_recv(b, a);
    }
    OT_CHECK(memcmp(b->rbuf, a->sbuf, size) == 0);
    return empty;
}

int main(int argc, char **argv)
{
    size = argc > 1 ? strtoul(argv[1], NULL, 0) : 8;
    long count = argc > 2 ? strtol(argv[2], NULL, 0) : 1000;
    long polls = argc > 3 ? strtol(argv[3], NULL, 0) : 0;
    long rounds = argc > 4 ? strtol(argv[4], NULL, 0) : 0;
    ot_require_provider();
    rank_t a;
    rank_t b;
    rank_open(&a, 0);
    rank_open(&b, 1);
    inject_size = a.t.info->tx_attr->inject_size;
    a.peer = ot_insert(&a.t, b.t.name);
    b.peer = ot_insert(&b.t, a.t.name);
    ot_fill(a.sbuf, size, 1);
    ot_fill(b.sbuf, size, 2);
    /* b waits for the first round's message; warm-up: 100 rounds (connections, pools) */
    rank_post(&b, TAG);
    round_trips(&a, &b, 100 < count ? 100 : count);
    empty_reads = 0;
    round_trips(&a, &b, count);
    long empty = empty_reads;
    empty_polls(&a, polls);
    long stream_empty = 0;
    if (rounds > 0) {
        OT_CHECK(size <= inject_size); /* the stream's sends are injects */
        /* b has one receive posted (the last round's): STREAM_WINDOW in all */
        for (int i = 1; i < STREAM_WINDOW; i++)
            rank_post(&b, TAG);
        stream_empty = stream(&a, &b, rounds);
    }
    rank_close(&a);
    rank_close(&b);
    printf("ofi_roundtrip: %ld round trips of %zu B checked; %ld empty CQ reads\n", count, size,
           empty);
    if (rounds > 0)
        printf("ofi_roundtrip: %ld messages of %zu B streamed; %ld empty CQ reads\n",
               rounds * 2 * STREAM_WINDOW, size, stream_empty);
    return 0;
}
