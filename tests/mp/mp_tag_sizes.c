/* Tagged messages of every size class between two processes, both directions, every byte and
 * every guard byte checked.
 *
 * Two processes, "a" (this one) and "b" (forked), each with an endpoint of its own to the other,
 * follow one schedule of steps; in each step one of them sends one message and the other
 * receives it:
 *   - sizes 0, 1, 7, 255..257 (unexpected messages kept inline up to 256), 1000, 4079..4081,
 *     4095..4097, 8175..8177, 8191..8193, 16383..16385, 32767..32769 (shm's bulk buffer),
 *     65535..65537, 131071..131073, 262143..262145 (shm's automatic eager threshold: fragments
 *     placed straight into a contiguous posted receive), on both sides of the eager threshold
 *     (T-1, T, T+1 with T = FERRY_RNDV_THRESH or shm's automatic 262144), 1 MiB, 1 MiB + 13, each
 * four times: posted before sent (contiguous on both sides, every other size into a receive 4 KiB
 * larger), unexpected (sender 3 uneven pieces, receiver 7 pieces), probed with remove and received
 * with ferry_tag_message_recv (7 pieces to 3, sometimes into a larger buffer), posted again (pieces
 * with empty ones to 7 pieces);
 *   - 33 MiB (more than one 32 MiB GET section) posted and unexpected, 1 MiB of 300-byte pieces
 *     into 2000 pieces, 900000 bytes of 2000 pieces into 3000 300-byte pieces (more pieces than
 *     one registration holds);
 *   - 256 MiB once each way: a -> b contiguous into 7 pieces, posted first; b -> a 3 uneven
 *     pieces into a contiguous buffer, unexpected (the receiver posts after the RTS arrived).
 *     The argument "quick" leaves these two out.
 * With the argument "eager" (after "quick"; automatic mode on shm only), the sender also checks
 * its endpoint's counters after every send: a message of at most the eager threshold moved
 * eager, a longer one did not — the automatic eager range (up to 256 KiB: 16383..16385,
 * 32767..32769, 65535..65537, 131071..131073 and 262143..262145 are in the schedule) posted
 * (placed straight into the receive when it is contiguous, reassembled and scattered when not),
 * unexpected and probed; except that once a message of more than one bulk buffer (32 KiB) went
 * unexpected, the receiver may have told the sender EAGER_BUFFER (src/proto/tag.h): such
 * messages may then move either way; and that with cross-memory attach a message of 8 KiB ..
 * 16 KiB - 1 from one piece that answers the other process (it received since its last send of
 * those sizes) moves by GET (src/proto/tag_calib.c, tag_reply_choose); and that with
 * cross-memory attach and the store kind of shm's copies fixed (FERRY_SHM_STREAM_MIN), a message
 * of 16 KiB up to the threshold may move by rendezvous: its class calibrates from its first
 * message on, rendezvous blocks first (automatic, those messages go eagerly while shm measures
 * its copies, which these few messages do not finish).
 * "Unexpected" is synchronised through the channel: the sender says SENT once ferry_tag_send
 * returned, the receiver progresses until ferry_tag_probe sees the message (and checks what it
 * says), then receives it. The receiver checks status, info (tag, real length, the same sender
 * endpoint every time) and every byte, and that nothing around or past the message was written.
 * Registered for every FERRY_RNDV_MODE (mp_tag_sizes_<mode>), for forced thresholds and for the
 * automatic choice with and without cross-memory attach (mp_tag_sizes_auto*). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_pair.h"
#include "ft_tag.h"
#include <ferry/counters.h>

enum { TS_A = FT_PAIR_A, TS_B = FT_PAIR_B };
enum { TS_TOKEN_POSTED = 0x504f5354, TS_TOKEN_SENT = 0x53454e54 };

#define TS_TAG_BASE 0x5a00000000000000ull
#define TS_MIB ((size_t)1 << 20)

typedef enum ts_order {
    TS_POSTED,     /* the receive is posted, then the message sent */
    TS_UNEXPECTED, /* sent, seen by probe, then ferry_tag_recv */
    TS_PROBE,      /* sent, taken by ferry_tag_probe(remove), then ferry_tag_message_recv */
} ts_order_t;

typedef struct ts_step {
    unsigned from; /* TS_A or TS_B */
    ts_order_t order;
    size_t size;
    size_t extra; /* the receive buffer holds size + extra bytes */
    ft_shape_t send_shape;
    ft_shape_t recv_shape;
} ts_step_t;

static ts_step_t ts_steps[256];
static size_t ts_nsteps;

static const char *ts_order_name(ts_order_t order)
{
    static const char *const names[] = {"posted", "unexpected", "probed"};
    return names[order];
}

static void ts_add(unsigned from, ts_order_t order, size_t size, size_t extra, ft_shape_t ss,
                   ft_shape_t rs)
{
    FT_CHECK(ts_nsteps < sizeof(ts_steps) / sizeof(ts_steps[0]), "too many steps");
    ts_steps[ts_nsteps++] = (ts_step_t){from, order, size, extra, ss, rs};
}

/* The schedule: the same in both processes. */
static void ts_schedule(bool quick)
{
    size_t t = ft_tag_eager_max();
    size_t sizes[40], n = 0;
    const size_t fixed[] = {0,      1,      7,      255,        256,    257,    1000,   4079,
                            4080,   4081,   4095,   4096,       4097,   8175,   8176,   8177,
                            8191,   8192,   8193,   16383,      16384,  16385,  32767,  32768,
                            32769,  65535,  65536,  65537,      131071, 131072, 131073, 262143,
                            262144, 262145, TS_MIB, TS_MIB + 13};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        sizes[n++] = fixed[i];
    if (t > 0)
        sizes[n++] = t - 1;
    sizes[n++] = t;
    sizes[n++] = t + 1;
    /* sorted, without duplicates */
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && sizes[k - 1] > sizes[k]; k--) {
            size_t x = sizes[k];
            sizes[k] = sizes[k - 1];
            sizes[k - 1] = x;
        }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || sizes[m - 1] != sizes[i])
            sizes[m++] = sizes[i];

    for (size_t k = 0; k < m; k++) {
        unsigned one = k % 2 ? TS_B : TS_A, other = k % 2 ? TS_A : TS_B;
        ts_add(one, TS_POSTED, sizes[k], k % 2 ? 4096 : 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG);
        ts_add(other, TS_UNEXPECTED, sizes[k], 0, FT_SHAPE_UNEVEN3, FT_SHAPE_SEVEN);
        ts_add(one, TS_PROBE, sizes[k], k % 3 == 0 ? 100 : 0, FT_SHAPE_SEVEN, FT_SHAPE_UNEVEN3);
        ts_add(other, TS_POSTED, sizes[k], k % 4 == 1 ? 4097 : 0, FT_SHAPE_ZEROS, FT_SHAPE_SEVEN);
    }
    ts_add(TS_A, TS_POSTED, 33 * TS_MIB, 0, FT_SHAPE_CONTIG, FT_SHAPE_SEVEN);
    ts_add(TS_B, TS_UNEXPECTED, 33 * TS_MIB + 5, 0, FT_SHAPE_UNEVEN3, FT_SHAPE_CONTIG);
    ts_add(TS_A, TS_POSTED, TS_MIB, 0, FT_SHAPE_SMALL, FT_SHAPE_2000);
    ts_add(TS_B, TS_UNEXPECTED, 900000, 0, FT_SHAPE_2000, FT_SHAPE_SMALL);
    ts_add(TS_A, TS_PROBE, 3 * TS_MIB + 1, 0, FT_SHAPE_2000, FT_SHAPE_UNEVEN3);
    if (!quick) {
        ts_add(TS_A, TS_POSTED, 256 * TS_MIB, 0, FT_SHAPE_CONTIG, FT_SHAPE_SEVEN);
        ts_add(TS_B, TS_UNEXPECTED, 256 * TS_MIB, 0, FT_SHAPE_UNEVEN3, FT_SHAPE_CONTIG);
    }
}

static uint64_t ts_tag(size_t step)
{
    return TS_TAG_BASE | ((uint64_t)step << 8) | ts_steps[step].from;
}

/* ------------------------------------------------------------------ one process */

typedef struct ts_proc {
    unsigned self;
    ferry_worker_t *worker;
    ferry_ep_t *ep; /* ours, to the other process */
    int chan;
    ferry_ep_t *sender_ep;  /* what receives said about the other process */
    bool check_eager;       /* "eager": check how each message moved (automatic mode, shm) */
    bool pieces_unexpected; /* a message of ours in pieces went unexpected (EAGER_BUFFER) */
    bool cma;               /* cross-memory attach on (FERRY_SHM_CMA not off) */
    bool stores_fixed;      /* FERRY_SHM_STREAM_MIN set: shm does not measure its copies */
    bool answers;           /* a message came from the other process since our last send of
                             * 8 KiB .. 16 KiB - 1 (tag_reply_choose) */
} ts_proc_t;

/* Eager messages of length's size class sent so far on p's endpoint. */
static uint64_t ts_eager_count(const ts_proc_t *p, size_t length)
{
    ferry_counters_t c = {.size = sizeof(c)};
    FT_CHECK(ferry_ep_counters(p->ep, &c) == FERRY_OK, "ferry_ep_counters failed");
    return c.tag_modes[ferry_counters_size_class(length)][FERRY_COUNTERS_MODE_EAGER];
}

static void ts_send(ts_proc_t *p, size_t i)
{
    const ts_step_t *st = &ts_steps[i];
    ft_tag_send_t s;
    if (st->order == TS_POSTED)
        ft_progress_until_token(p->worker, p->chan, TS_TOKEN_POSTED, FT_TAG_TIMEOUT, NULL);
    uint64_t eager_before = p->check_eager ? ts_eager_count(p, st->size) : 0;
    ft_tag_send_start(p->worker, p->ep, &s, p->self, ts_tag(i), st->size, st->send_shape);
    if (st->order != TS_POSTED)
        ft_chan_send_token(p->chan, TS_TOKEN_SENT, i, 0, 0, 0);
    ft_tag_send_wait(p->worker, &s, FERRY_OK);
    /* with cross-memory attach, a message of 8 KiB .. 16 KiB - 1 from one piece that answers
     * the other process goes by GET */
    bool reply_range = st->size >= 8192 && st->size < 16384;
    bool by_get = reply_range && p->cma && p->answers && st->send_shape == FT_SHAPE_CONTIG;
    if (reply_range)
        p->answers = false;
    /* with cross-memory attach and the store kind fixed, the eager classes (16 KiB up) calibrate
     * from their first message on, rendezvous blocks first (src/proto/tag_calib.c) */
    bool calibrating = p->cma && p->stores_fixed && st->size >= 16384;
    if (p->check_eager) {
        bool eager = ts_eager_count(p, st->size) != eager_before;
        bool pieces = st->size > 32768 && st->size <= ft_tag_eager_max();
        FT_CHECK(eager == (st->size <= ft_tag_eager_max() && !by_get) ||
                     (pieces && p->pieces_unexpected) ||
                     (calibrating && st->size <= ft_tag_eager_max()),
                 "step %zu (%s, %zu bytes, %s): moved %s, the eager threshold is %zu%s", i,
                 ts_order_name(st->order), st->size, ft_shape_name(st->send_shape),
                 eager ? "eager" : "by rendezvous", ft_tag_eager_max(),
                 by_get ? " (an answer from one piece: by GET)" : "");
        if (pieces && eager && st->order != TS_POSTED)
            p->pieces_unexpected = true;
    }
}

static void ts_recv(ts_proc_t *p, size_t i)
{
    const ts_step_t *st = &ts_steps[i];
    uint64_t tag = ts_tag(i);
    ft_tag_recv_t r;
    char what[200];
    snprintf(what, sizeof(what), "step %zu (%s, %zu bytes, %s into %s%s)", i,
             ts_order_name(st->order), st->size, ft_shape_name(st->send_shape),
             ft_shape_name(st->recv_shape), st->extra ? ", larger buffer" : "");

    ft_tag_recv_init(&r, st->recv_shape, st->size + st->extra);
    if (st->order == TS_POSTED) {
        ft_tag_recv_post(p->worker, &r, tag, UINT64_MAX);
        FT_CHECK(!r.done, "%s: a receive completed before its message was sent", what);
        ft_chan_send_token(p->chan, TS_TOKEN_POSTED, i, 0, 0, 0);
    } else {
        ft_progress_until_token(p->worker, p->chan, TS_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
        ferry_tag_info_t info = ft_tag_probe_until(p->worker, tag, UINT64_MAX);
        FT_CHECK(info.tag == tag && info.length == st->size && info.sender != NULL,
                 "%s: probe says tag 0x%llx, %zu bytes, sender %p", what,
                 (unsigned long long)info.tag, info.length, (void *)info.sender);
        ft_tag_imm_check(&info, tag, st->size, what);
        FT_CHECK(p->sender_ep == NULL || info.sender == p->sender_ep,
                 "%s: probe names sender %p, earlier messages came from %p", what,
                 (void *)info.sender, (void *)p->sender_ep);
        /* another probe finds the same message: it is still there */
        ferry_tag_info_t again;
        FT_CHECK_OK(ferry_tag_probe(p->worker, 0, 0, 0, &again, NULL));
        FT_CHECK(again.tag == tag, "%s: a wildcard probe found tag 0x%llx", what,
                 (unsigned long long)again.tag);
        if (st->order == TS_UNEXPECTED) {
            ft_tag_recv_post(p->worker, &r, tag, UINT64_MAX);
        } else {
            ferry_tag_message_t *msg = NULL;
            FT_CHECK_OK(ferry_tag_probe(p->worker, tag, UINT64_MAX, 1, &again, &msg));
            FT_CHECK(msg != NULL && again.tag == tag && again.length == st->size,
                     "%s: probe(remove) gave %p, tag 0x%llx, %zu bytes", what, (void *)msg,
                     (unsigned long long)again.tag, again.length);
            FT_CHECK_STATUS(ferry_tag_probe(p->worker, 0, 0, 0, &again, NULL), FERRY_ERR_NO_ELEM);
            ft_tag_recv_message(p->worker, &r, msg);
        }
    }
    ft_tag_recv_wait(p->worker, &r);
    ft_tag_recv_check(&r, p->self == TS_A ? TS_B : TS_A, tag, st->size, what);
    if (p->sender_ep == NULL)
        p->sender_ep = r.info.sender;
    FT_CHECK(r.info.sender == p->sender_ep, "%s: info.sender %p, earlier messages came from %p",
             what, (void *)r.info.sender, (void *)p->sender_ep);
    ft_tag_recv_free(&r);
    p->answers = true;
}

static void ts_run(ts_proc_t *p, bool verbose)
{
    uint64_t start = ft_now_ns();
    for (size_t i = 0; i < ts_nsteps; i++) {
        uint64_t t0 = ft_now_ns();
        if (ts_steps[i].from == p->self)
            ts_send(p, i);
        else
            ts_recv(p, i);
        if (verbose && ts_steps[i].size >= 32 * TS_MIB)
            ft_note("step %3zu %s -> %s %-10s %10zu bytes: %.1f ms", i,
                    ts_steps[i].from == TS_A ? "a" : "b", ts_steps[i].from == TS_A ? "b" : "a",
                    ts_order_name(ts_steps[i].order), ts_steps[i].size,
                    (double)(ft_now_ns() - t0) / 1e6);
    }
    if (verbose)
        ft_note("%zu steps (rendezvous mode %s, eager up to %zu bytes) in %.2f s", ts_nsteps,
                ft_tag_mode(), ft_tag_eager_max(), (double)(ft_now_ns() - start) / 1e9);
}

/* Both processes (ft_pair_run): a also checks the transport and its own descriptors. */
static void ts_pair(ft_pair_t *pair, void *arg)
{
    ts_proc_t p = {.self = pair->self,
                   .worker = pair->worker,
                   .ep = pair->ep,
                   .chan = pair->chan,
                   .check_eager = *(const bool *)arg};
    const char *cma = getenv("FERRY_SHM_CMA");
    p.cma = cma == NULL || strcmp(cma, "off") != 0;
    p.stores_fixed = getenv("FERRY_SHM_STREAM_MIN") != NULL;
    if (p.self == TS_A)
        FT_CHECK(strcmp(ferry_ep_transport_name(p.ep), ft_remote_transport()) == 0,
                 "an endpoint to another process uses %s, expected %s",
                 ferry_ep_transport_name(p.ep), ft_remote_transport());
    ts_run(&p, p.self == TS_A);
    if (p.self == TS_A)
        ft_files_check_self();
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    bool check_eager = argc > 2 && strcmp(argv[2], "eager") == 0;
    ft_watchdog(quick ? 55 : 115);
    ts_schedule(quick); /* before the fork: b has the same schedule */
    ft_pair_run(ts_pair, &check_eager);
    ft_note("passed");
    return 0;
}
