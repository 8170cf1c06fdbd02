/* nt_mpi: MPI point-to-point semantics on ferry's tagged messages, for N ranks (4 in the
 * suites), every byte checked. Run by the bootstrap (tests/netns/run.sh across hosts of the
 * test bed; tests/netns/local_job.sh on one host, over shm or FERRY_TRANSPORTS=tcp).
 *
 *   addresses the endpoints come from compact addresses (FERRY_ADDRESS_COMPACT_SIZE bytes)
 *             exchanged in one allgather (nt_job.c): over shm, tcp and across hosts;
 *   identity  every rank's worker id (ferry_worker_id) through one allgather; the endpoints
 *             report them (ferry_ep_peer_id, ferry_ep_query once connected) and so do every
 *             received message's info and every active message's params;
 *   order     every rank sends every other rank ORDER_COUNT messages (mostly 16 B eager, every
 *             ORDER_RNDV_EVERY-th one 70 000 B: a rendezvous), with immediate data
 *             (sender << 32 | seq); the receiver keeps ORDER_WINDOW receives posted, directed
 *             (ferry_tag_recv_from) or any-source, chosen pseudo-randomly where no directed
 *             receive can starve; after all completed, in posting order every source's sequence
 *             numbers rise (MPI's non-overtaking rule across directed and any-source receives),
 *             each message was received once, its info names its sender (peer id, imm);
 *   probe     a message and a 1 MiB rendezvous with immediate data: ferry_tag_probe_from sees
 *             the imm and the length before the message is received (remove, then
 *             ferry_tag_message_recv);
 *   sync      synchronous sends (eager 8 B and a 1 MiB rendezvous) to a receiver that first
 *             posts and cancels a matching receive, then does not post for SYNC_HOLD_MS: the
 *             send stays pending (a cancelled receive did not match it), and completes once the
 *             receiver posted; the receiver's info says FERRY_TAG_INFO_SYNC;
 *   truncate  1000 B into a 100 B receive: FERRY_ERR_MESSAGE_TRUNCATED, info.length 1000, the
 *             first 100 bytes right, the next message intact;
 *   cancel    an any-source receive and a receive from a peer id nobody has: both pending, both
 *             cancelled (FERRY_ERR_CANCELED);
 *   ring and all-to-all of every size class (0 B .. 4 MiB: eager and each rendezvous mode the
 *             automatic choice or FERRY_RNDV_MODE takes), directed receives. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_check.h"
#include "ft_pattern.h"
#include "ft_progress.h"
#include "nt_job.h"

#define T_MS 60000
#define AM_ID 12

#define TAG_ORDER 0x4f52440000000000ull
#define TAG_PROBE 0x5052420000000000ull
#define TAG_SYNC 0x53594e0000000000ull
#define TAG_TRUNC 0x5452430000000000ull
#define TAG_CANCEL 0x434e4c0000000000ull
#define TAG_RING 0x52494e0000000000ull
#define TAG_A2A 0x4132410000000000ull

#define ORDER_COUNT 1500
#define ORDER_RNDV_EVERY 97
#define ORDER_BIG 70000
#define ORDER_WINDOW 24
#define SYNC_HOLD_MS 300

static nt_job_t job;
static ferry_peer_id_t *ids; /* every rank's worker id */

static unsigned rank_of(ferry_peer_id_t id)
{
    for (unsigned r = 0; r < job.size; r++) {
        if (ids[r] == id)
            return r;
    }
    FT_CHECK(0, "peer id %016" PRIx64 " is no rank's", id);
    return 0;
}

static uint64_t seed_of(unsigned from, unsigned to, uint64_t seq, size_t size)
{
    return ft_pattern_seed(from * 64 + to, seq, size);
}

/* ------------------------------------------------------------------ identity */

static unsigned am_seen;
static ferry_peer_id_t *am_peer, *am_reply; /* per sender: what its AM and reply endpoint say */

/* Records who the message says it came from; phase_identity checks it against the allgather,
 * which may still be running when a faster rank's message arrives (it progresses the
 * worker). */
static ferry_status_t am_cb(void *arg, const void *header, size_t header_length, void *data,
                            size_t length, const ferry_am_recv_params_t *params)
{
    uint32_t from;
    (void)arg;
    (void)data;
    (void)length;
    FT_CHECK(header_length == sizeof(from), "AM header of %zu bytes", header_length);
    memcpy(&from, header, sizeof(from));
    FT_CHECK(from < job.size && from != job.rank && am_peer[from] == 0,
             "AM from rank %u (of %u), or a second one", from, job.size);
    am_peer[from] = params->peer;
    FT_CHECK_OK(ferry_ep_peer_id(params->reply_ep, &am_reply[from]));
    am_seen++;
    return FERRY_OK;
}

static void phase_identity(void)
{
    ferry_peer_id_t mine;
    FT_CHECK_OK(ferry_worker_id(job.worker, &mine));
    FT_CHECK(mine != FERRY_PEER_ANY, "a worker id of 0");
    ids = calloc(job.size, sizeof(*ids));
    am_peer = calloc(job.size, sizeof(*am_peer));
    am_reply = calloc(job.size, sizeof(*am_reply));
    FT_CHECK(ids != NULL && am_peer != NULL && am_reply != NULL, "out of memory");
    /* before the allgather: it progresses the worker (nt_job_barrier), and a faster rank's
     * message may arrive in there */
    FT_CHECK_OK(ferry_am_set_handler(job.worker, AM_ID, am_cb, NULL));
    nt_job_allgather(&job, &mine, sizeof(mine), ids);
    FT_CHECK(ids[job.rank] == mine, "the allgather lost my id");
    for (unsigned r = 0; r < job.size; r++) {
        if (r == job.rank)
            continue;
        FT_CHECK(ids[r] != mine, "rank %u has my worker id", r);
        ferry_peer_id_t id;
        FT_CHECK_OK(ferry_ep_peer_id(job.peers[r].ep, &id));
        FT_CHECK(id == ids[r], "the endpoint to rank %u reports peer %016" PRIx64, r, id);
        FT_CHECK_OK(ferry_ep_wait_connected(job.peers[r].ep, T_MS));
        ferry_ep_attr_t attr;
        FT_CHECK_OK(ferry_ep_query(job.peers[r].ep, &attr));
        FT_CHECK(attr.peer == ids[r] && attr.connected && attr.status == FERRY_OK,
                 "ferry_ep_query of rank %u: peer %016" PRIx64 ", connected %d, %s", r, attr.peer,
                 attr.connected, ferry_status_name(attr.status));
        FT_CHECK(attr.am_inject_max >= 64 && attr.tag_inject_max >= 32,
                 "inject bounds %zu (AM) and %zu (tagged) to rank %u", attr.am_inject_max,
                 attr.tag_inject_max, r);
        uint32_t from = job.rank;
        FT_CHECK_OK(nt_am_send(&job, r, AM_ID, &from, sizeof(from), NULL, 0, NULL, T_MS));
    }
    uint64_t want = job.size - 1;
    while (am_seen < want)
        ft_progress_once(job.worker);
    for (unsigned r = 0; r < job.size; r++) {
        if (r == job.rank)
            continue;
        FT_CHECK(am_peer[r] == ids[r],
                 "AM from rank %u carries peer id %016" PRIx64 ", rank %u's is %016" PRIx64, r,
                 am_peer[r], r, ids[r]);
        FT_CHECK(am_reply[r] == ids[r], "the reply endpoint of rank %u's AM names another peer", r);
    }
    free(am_peer);
    free(am_reply);
    nt_job_barrier(&job);
}

/* ------------------------------------------------------------------ order */

typedef struct order_recv {
    ferry_completion_t comp;
    ferry_tag_info_t info;
    ferry_peer_id_t source; /* what it was posted for */
    uint8_t *buf;
} order_recv_t;

typedef struct order_msg {
    uint32_t from;
    uint32_t seq;
} order_msg_t;

static size_t order_size(uint32_t seq)
{
    return seq % ORDER_RNDV_EVERY == ORDER_RNDV_EVERY - 1 ? ORDER_BIG : sizeof(order_msg_t);
}

static void phase_order(void)
{
    unsigned n = job.size;
    unsigned total = (n - 1) * ORDER_COUNT;
    order_recv_t *recvs = calloc(total, sizeof(*recvs));
    uint8_t *bufs = malloc((size_t)ORDER_WINDOW * ORDER_BIG);
    unsigned *window_slot = calloc(total, sizeof(unsigned));
    unsigned *remaining = calloc(n, sizeof(unsigned)); /* per source: not yet received */
    unsigned *directed = calloc(n, sizeof(unsigned));  /* per source: directed posted */
    uint32_t *next_send = calloc(n, sizeof(uint32_t)); /* per destination */
    /* every rendezvous send keeps its own buffer until the end: waiting for one inline could
     * wait for a receiver that waits for us */
    unsigned big_max = (n - 1) * (ORDER_COUNT / ORDER_RNDV_EVERY + 1), big_count = 0;
    uint8_t **big = calloc(big_max, sizeof(*big));
    uint8_t small[sizeof(order_msg_t)];
    bool slot_busy[ORDER_WINDOW] = {false};
    ferry_completion_t send_comp = {.count = 0};
    FT_CHECK(recvs && bufs && window_slot && remaining && directed && next_send && big,
             "out of memory");
    for (unsigned s = 0; s < n; s++)
        remaining[s] = s == job.rank ? 0 : ORDER_COUNT;

    unsigned posted = 0, completed = 0, any = 0, sent_total = 0;
    unsigned long rnd = 12345 + job.rank;
    unsigned next_check = 0; /* completions are checked in posting order */
    while (completed < total || sent_total < total) {
        /* send a few */
        for (unsigned k = 0; k < 4 && sent_total < total; k++) {
            unsigned to = (job.rank + 1 + sent_total % (n - 1)) % n;
            uint32_t seq = next_send[to]++;
            size_t size = order_size(seq);
            order_msg_t m = {job.rank, seq};
            uint8_t *buf = small;
            if (size > sizeof(m)) {
                FT_CHECK(big_count < big_max, "more rendezvous sends than planned");
                buf = big[big_count++] = malloc(size);
                FT_CHECK(buf != NULL, "out of memory");
                ft_pattern_fill(buf, size, seed_of(job.rank, to, seq, size), 0);
            }
            memcpy(buf, &m, sizeof(m));
            ferry_iov_t iov = {buf, size};
            ferry_tag_send_params_t p = {.flags = FERRY_TAG_SEND_IMM,
                                         .imm = ((uint64_t)job.rank << 32) | seq};
            ferry_status_t st = nt_tag_send_ext(&job, to, &iov, 1, TAG_ORDER, &p, &send_comp, T_MS);
            FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "order send: %s",
                     ferry_status_name(st));
            FT_CHECK(st == FERRY_OK || buf != small,
                     "a 16-byte send within the inject bound returned FERRY_INPROGRESS");
            sent_total++;
        }
        /* post receives while the window has room and no directed receive can starve */
        for (unsigned w = 0; w < ORDER_WINDOW && posted < total; w++) {
            if (slot_busy[w])
                continue;
            unsigned dsum = 0, rsum = 0;
            for (unsigned s = 0; s < n; s++) {
                dsum += directed[s];
                rsum += remaining[s];
            }
            rnd = rnd * 6364136223846793005ul + 1442695040888963407ul;
            unsigned s = (unsigned)(rnd >> 33) % n;
            bool want_directed = (rnd >> 20) & 1;
            ferry_peer_id_t source = FERRY_PEER_ANY;
            if (want_directed && s != job.rank && directed[s] + 1 + any <= remaining[s]) {
                source = ids[s];
                directed[s]++;
            } else if (any + 1 + dsum <= rsum) {
                any++;
            } else {
                break;
            }
            order_recv_t *r = &recvs[posted];
            r->buf = bufs + (size_t)w * ORDER_BIG;
            r->source = source;
            r->comp = (ferry_completion_t){.count = 1};
            window_slot[posted] = w;
            slot_busy[w] = true;
            ferry_iov_t iov = {r->buf, ORDER_BIG};
            ferry_status_t st = ferry_tag_recv_from(job.worker, source, &iov, 1, TAG_ORDER,
                                                    UINT64_MAX, &r->info, &r->comp);
            FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "order receive: %s",
                     ferry_status_name(st));
            if (st == FERRY_OK)
                r->comp.count = 0;
            posted++;
        }
        ft_progress_once(job.worker);
        /* retire completed receives in posting order (their slots are reused) */
        while (next_check < posted && recvs[next_check].comp.count == 0) {
            order_recv_t *r = &recvs[next_check];
            FT_CHECK(r->comp.status == FERRY_OK, "order receive %u: %s", next_check,
                     ferry_status_name(r->comp.status));
            order_msg_t m;
            memcpy(&m, r->buf, sizeof(m));
            FT_CHECK(m.from < n && m.from != job.rank, "order message from rank %u", m.from);
            FT_CHECK(r->info.peer == ids[m.from] && rank_of(r->info.peer) == m.from,
                     "order message of rank %u reports peer %016" PRIx64, m.from, r->info.peer);
            FT_CHECK((r->info.flags & FERRY_TAG_INFO_IMM) &&
                         r->info.imm == (((uint64_t)m.from << 32) | m.seq),
                     "order message %u of rank %u: imm %016" PRIx64 " (flags %u)", m.seq, m.from,
                     r->info.imm, r->info.flags);
            FT_CHECK(r->source == FERRY_PEER_ANY || r->source == ids[m.from],
                     "a receive directed to rank %u got a message of rank %u", rank_of(r->source),
                     m.from);
            /* per source, in posting order: 0, 1, 2, ... (each once, none overtaken) */
            uint32_t want = ORDER_COUNT - remaining[m.from];
            FT_CHECK(m.seq == want, "rank %u's message %u matched where %u was due (posting order)",
                     m.from, m.seq, want);
            size_t size = order_size(m.seq);
            FT_CHECK(r->info.length == size, "order message %u of rank %u: %zu bytes, not %zu",
                     m.seq, m.from, r->info.length, size);
            if (size > sizeof(m))
                ft_pattern_check(r->buf + sizeof(m), size - sizeof(m),
                                 seed_of(m.from, job.rank, m.seq, size), sizeof(m), "order");
            remaining[m.from]--;
            if (r->source == FERRY_PEER_ANY)
                any--;
            else
                directed[m.from]--;
            slot_busy[window_slot[next_check]] = false;
            next_check++;
            completed++;
        }
    }
    nt_wait_completion(&job, &send_comp, T_MS, "the last order sends");
    ft_note("order: %u messages from %u ranks in posting order, directed and any-source mixed",
            total, n - 1);
    free(recvs);
    free(bufs);
    free(window_slot);
    free(remaining);
    free(directed);
    free(next_send);
    for (unsigned b = 0; b < big_count; b++)
        free(big[b]);
    free(big);
    nt_job_barrier(&job);
}

/* ------------------------------------------------------------------ probe */

static void phase_probe(void)
{
    unsigned to = (job.rank + 1) % job.size, from = (job.rank + job.size - 1) % job.size;
    static const size_t sizes[] = {100, 1u << 20};
    uint8_t *out = malloc(1u << 20), *in = malloc(1u << 20);
    ferry_completion_t sc = {.count = 0};
    FT_CHECK(out && in, "out of memory");
    for (unsigned i = 0; i < 2; i++) {
        ft_pattern_fill(out, sizes[i], seed_of(job.rank, to, 1000 + i, sizes[i]), 0);
        ferry_iov_t iov = {out, sizes[i]};
        ferry_tag_send_params_t p = {.flags = FERRY_TAG_SEND_IMM, .imm = 0xabc000u + i};
        ferry_status_t st = nt_tag_send_ext(&job, to, &iov, 1, TAG_PROBE + i, &p, &sc, T_MS);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "probe send: %s", ferry_status_name(st));
        /* the receiver probes before it receives */
        ferry_tag_info_t info;
        ferry_tag_message_t *msg = NULL;
        ft_deadline_t d = ft_deadline_in_ms(T_MS);
        while ((st = ferry_tag_probe_from(job.worker, ids[from], TAG_PROBE + i, UINT64_MAX, 1,
                                          &info, &msg)) == FERRY_ERR_NO_ELEM) {
            ft_progress_once(job.worker);
            FT_CHECK(!ft_deadline_passed(d), "probe of rank %u's message %u timed out", from, i);
        }
        FT_CHECK_OK(st);
        FT_CHECK(info.imm == 0xabc000u + i && (info.flags & FERRY_TAG_INFO_IMM) &&
                     info.length == sizes[i] && info.peer == ids[from],
                 "probe: imm %" PRIx64 ", flags %u, %zu bytes, peer %016" PRIx64, info.imm,
                 info.flags, info.length, info.peer);
        ferry_completion_t rc = {.count = 1};
        ferry_iov_t riov = {in, sizes[i]};
        st = ferry_tag_message_recv(job.worker, msg, &riov, 1, &info, &rc);
        if (st == FERRY_INPROGRESS)
            nt_wait_completion(&job, &rc, T_MS, "a probed message");
        else
            FT_CHECK_OK(st);
        FT_CHECK(info.imm == 0xabc000u + i, "received imm %" PRIx64, info.imm);
        ft_pattern_check(in, sizes[i], seed_of(from, job.rank, 1000 + i, sizes[i]), 0, "probe");
        nt_wait_completion(&job, &sc, T_MS, "a probe send");
    }
    free(out);
    free(in);
    nt_job_barrier(&job);
}

/* ------------------------------------------------------------------ sync */

static unsigned go_seen;
static ferry_status_t go_cb(void *arg, const void *header, size_t header_length, void *data,
                            size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)params;
    go_seen++;
    return FERRY_OK;
}

static void phase_sync(void)
{
    static const size_t sizes[] = {8, 1u << 20};
    bool sender = job.rank % 2 == 0;
    unsigned peer = sender ? job.rank + 1 : job.rank - 1;
    if (peer >= job.size) { /* an odd rank count: the last rank sits this one out */
        nt_job_barrier(&job);
        nt_job_barrier(&job);
        return;
    }
    FT_CHECK_OK(ferry_am_set_handler(job.worker, AM_ID + 1, go_cb, NULL));
    uint8_t *buf = malloc(1u << 20);
    FT_CHECK(buf != NULL, "out of memory");
    if (!sender) { /* a receive that matches, cancelled before anything is sent */
        ferry_completion_t cc = {.count = 1};
        ferry_iov_t iov = {buf, 1u << 20};
        FT_CHECK(ferry_tag_recv_from(job.worker, ids[peer], &iov, 1, TAG_SYNC, ~0xffull, NULL,
                                     &cc) == FERRY_INPROGRESS,
                 "the receive to cancel found a message");
        FT_CHECK_OK(ferry_tag_recv_cancel(job.worker, &cc));
        nt_wait_completion(&job, &cc, T_MS, "the cancelled receive");
        FT_CHECK(cc.status == FERRY_ERR_CANCELED, "cancelled receive: %s",
                 ferry_status_name(cc.status));
    }
    nt_job_barrier(&job);
    for (unsigned i = 0; i < 2; i++) {
        if (sender) {
            ft_pattern_fill(buf, sizes[i], seed_of(job.rank, peer, 2000 + i, sizes[i]), 0);
            ferry_iov_t iov = {buf, sizes[i]};
            ferry_tag_send_params_t p = {.flags = FERRY_TAG_SEND_SYNC};
            ferry_completion_t sc = {.count = 0};
            ferry_status_t st = nt_tag_send_ext(&job, peer, &iov, 1, TAG_SYNC + i, &p, &sc, T_MS);
            FT_CHECK(st == FERRY_INPROGRESS, "a synchronous send returned %s",
                     ferry_status_name(st));
            ft_progress_for_ms(job.worker, SYNC_HOLD_MS);
            FT_CHECK(sc.count == 1,
                     "the synchronous send of %zu bytes completed (%s) before the "
                     "receiver posted",
                     sizes[i], ferry_status_name(sc.status));
            uint32_t dummy = job.rank;
            FT_CHECK_OK(
                nt_am_send(&job, peer, AM_ID + 1, &dummy, sizeof(dummy), NULL, 0, NULL, T_MS));
            nt_wait_completion(&job, &sc, T_MS, "the synchronous send");
            FT_CHECK_OK(sc.status);
        } else {
            /* the i-th go: counted from the phase's start, since it may arrive while this rank
             * is still in the barrier above (which progresses the worker) */
            while (go_seen < i + 1) /* progress without posting: the message stays unexpected */
                ft_progress_once(job.worker);
            ferry_completion_t rc = {.count = 1};
            ferry_tag_info_t info;
            ferry_iov_t iov = {buf, 1u << 20};
            ferry_status_t st = ferry_tag_recv_from(job.worker, ids[peer], &iov, 1, TAG_SYNC + i,
                                                    UINT64_MAX, &info, &rc);
            if (st == FERRY_INPROGRESS)
                nt_wait_completion(&job, &rc, T_MS, "the synchronous message");
            else
                FT_CHECK_OK(st);
            FT_CHECK(info.length == sizes[i], "synchronous message of %zu bytes", info.length);
            if (sizes[i] < 1000)
                FT_CHECK(info.flags & FERRY_TAG_INFO_SYNC, "an eager synchronous message "
                                                           "without FERRY_TAG_INFO_SYNC");
            ft_pattern_check(buf, sizes[i], seed_of(peer, job.rank, 2000 + i, sizes[i]), 0, "sync");
        }
    }
    free(buf);
    nt_job_barrier(&job);
}

/* ------------------------------------------------------------------ truncate, cancel */

static void phase_truncate_cancel(void)
{
    unsigned to = (job.rank + 1) % job.size, from = (job.rank + job.size - 1) % job.size;
    uint8_t out[1000], in[1000];
    ferry_completion_t sc = {.count = 0};
    for (unsigned i = 0; i < 2; i++) {
        ft_pattern_fill(out, sizeof(out), seed_of(job.rank, to, 3000 + i, sizeof(out)), 0);
        ferry_iov_t iov = {out, sizeof(out)};
        ferry_status_t st = nt_tag_send(&job, to, &iov, 1, TAG_TRUNC, &sc, T_MS);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "truncate send: %s",
                 ferry_status_name(st));
        nt_wait_completion(&job, &sc, T_MS, "a truncate send");
    }
    for (unsigned i = 0; i < 2; i++) {
        size_t cap = i == 0 ? 100 : sizeof(in);
        ferry_completion_t rc = {.count = 1};
        ferry_tag_info_t info;
        memset(in, 0xee, sizeof(in));
        ferry_iov_t iov = {in, cap};
        ferry_status_t st =
            ferry_tag_recv_from(job.worker, ids[from], &iov, 1, TAG_TRUNC, UINT64_MAX, &info, &rc);
        if (st == FERRY_INPROGRESS) {
            nt_wait_completion(&job, &rc, T_MS, "a truncated message");
            st = rc.status;
        }
        FT_CHECK(st == (i == 0 ? FERRY_ERR_MESSAGE_TRUNCATED : FERRY_OK),
                 "receive %u of 1000 B into %zu B: %s", i, cap, ferry_status_name(st));
        FT_CHECK(info.length == sizeof(out), "info.length %zu", info.length);
        ft_pattern_check(in, cap, seed_of(from, job.rank, 3000 + i, sizeof(out)), 0, "truncate");
        for (size_t b = cap; b < sizeof(in); b++)
            FT_CHECK(in[b] == 0xee, "byte %zu written past a %zu-byte receive", b, cap);
    }
    /* cancel: any source, and a peer id no rank has */
    ferry_peer_id_t nobody = 0x1234567890abcdefull;
    for (unsigned r = 0; r < job.size; r++)
        if (ids[r] == nobody)
            nobody++;
    ferry_completion_t c1 = {.count = 1}, c2 = {.count = 1};
    uint8_t b1[8], b2[8];
    ferry_iov_t i1 = {b1, 8}, i2 = {b2, 8};
    FT_CHECK(ferry_tag_recv(job.worker, &i1, 1, TAG_CANCEL, UINT64_MAX, NULL, &c1) ==
                 FERRY_INPROGRESS,
             "an any-source receive for a tag nobody sends completed");
    FT_CHECK(ferry_tag_recv_from(job.worker, nobody, &i2, 1, 0, 0, NULL, &c2) == FERRY_INPROGRESS,
             "a receive from an unknown peer completed");
    ft_progress_for_ms(job.worker, 50);
    FT_CHECK(c1.count == 1 && c2.count == 1, "a receive nothing matches completed");
    FT_CHECK_OK(ferry_tag_recv_cancel(job.worker, &c1));
    FT_CHECK_OK(ferry_tag_recv_cancel(job.worker, &c2));
    nt_wait_completion(&job, &c1, T_MS, "cancelled receive 1");
    nt_wait_completion(&job, &c2, T_MS, "cancelled receive 2");
    FT_CHECK(c1.status == FERRY_ERR_CANCELED && c2.status == FERRY_ERR_CANCELED,
             "cancelled receives: %s, %s", ferry_status_name(c1.status),
             ferry_status_name(c2.status));
    FT_CHECK(ferry_tag_recv_cancel(job.worker, &c1) == FERRY_ERR_NO_ELEM, "cancelled twice");
    nt_job_barrier(&job);
}

/* ------------------------------------------------------------------ ring, all-to-all */

static const size_t class_sizes[] = {0, 100, 4096, 65536, 1u << 20, 4u << 20};
#define CLASSES (sizeof(class_sizes) / sizeof(class_sizes[0]))

static void exchange(const char *name, uint64_t tag_base, bool all)
{
    unsigned n = job.size;
    size_t max = class_sizes[CLASSES - 1];
    for (unsigned c = 0; c < CLASSES; c++) {
        size_t size = class_sizes[c];
        uint8_t **out = calloc(n, sizeof(*out)), **in = calloc(n, sizeof(*in));
        ferry_completion_t *rc = calloc(n, sizeof(*rc));
        ferry_tag_info_t *info = calloc(n, sizeof(*info));
        ferry_completion_t sc = {.count = 0};
        FT_CHECK(out && in && rc && info, "out of memory");
        for (unsigned p = 0; p < n; p++) {
            bool recv_from = all ? p != job.rank : p == (job.rank + n - 1) % n;
            if (!recv_from)
                continue;
            in[p] = malloc(max + 1);
            FT_CHECK(in[p] != NULL, "out of memory");
            rc[p] = (ferry_completion_t){.count = 1};
            ferry_iov_t iov = {in[p], size};
            ferry_status_t st = ferry_tag_recv_from(job.worker, ids[p], &iov, 1, tag_base + c,
                                                    UINT64_MAX, &info[p], &rc[p]);
            FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "%s receive: %s", name,
                     ferry_status_name(st));
            if (st == FERRY_OK)
                rc[p].count = 0;
        }
        for (unsigned p = 0; p < n; p++) {
            bool send_to = all ? p != job.rank : p == (job.rank + 1) % n;
            if (!send_to)
                continue;
            out[p] = malloc(size + 1);
            FT_CHECK(out[p] != NULL, "out of memory");
            ft_pattern_fill(out[p], size, seed_of(job.rank, p, tag_base + c, size), 0);
            ferry_iov_t iov = {out[p], size};
            ferry_status_t st = nt_tag_send(&job, p, &iov, 1, tag_base + c, &sc, T_MS);
            FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "%s send: %s", name,
                     ferry_status_name(st));
        }
        for (unsigned p = 0; p < n; p++) {
            if (in[p] == NULL)
                continue;
            nt_wait_completion(&job, &rc[p], T_MS, name);
            FT_CHECK_OK(rc[p].status);
            FT_CHECK(info[p].length == size && info[p].peer == ids[p], "%s: %zu bytes from %u",
                     name, info[p].length, rank_of(info[p].peer));
            ft_pattern_check(in[p], size, seed_of(p, job.rank, tag_base + c, size), 0, name);
            free(in[p]);
        }
        nt_wait_completion(&job, &sc, T_MS, name);
        for (unsigned p = 0; p < n; p++)
            free(out[p]);
        free(out);
        free(in);
        free(rc);
        free(info);
    }
    nt_job_barrier(&job);
}

int main(void)
{
    nt_job_init(&job, "nt_mpi", 150);
    FT_CHECK(job.size >= 2, "nt_mpi needs at least 2 ranks");
    nt_job_check_transports(&job);
    phase_identity();
    phase_order();
    phase_probe();
    phase_sync();
    phase_truncate_cancel();
    exchange("ring", TAG_RING, false);
    exchange("all-to-all", TAG_A2A, true);
    nt_job_fini(&job, true);
    free(ids);
    printf("nt_mpi: rank %u of %u passed\n", job.rank, job.size);
    return 0;
}
