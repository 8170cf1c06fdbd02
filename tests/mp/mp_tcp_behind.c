/* A tcp receiver that fell behind a stream of large eager messages catches up without buffering
 * one (run with FERRY_TRANSPORTS=tcp).
 *
 * Two processes, "a" (sender) and "b" (receiver), each with an endpoint to the other:
 *   a sends BH_COUNT messages of BH_SIZE (1 MiB: eager over tcp, one frame each), keeping
 *   BH_WINDOW sends in flight, message i filled with the pattern of its tag;
 *   b keeps one receive posted, and posts the next one only between progress calls, once the
 *   last is complete (as an application does that waits for each message and then asks for the
 *   next); before receive BH_STALL_AT it calls no progress until a says that its sends stopped
 *   completing for BH_STALL_MS (the sockets hold what they can take: several messages), then
 *   takes the rest.
 * Checks: status, tag, length and every byte of every message; no message was ever unexpected
 * (the counters' tag_unexpected_peak_count is 0): once a large payload read straight into its
 * receive is complete, tcp reads nothing more until the next progress call, so the next
 * receive is posted by then. Before (a poll, and the further polls of the same progress call
 * through the worker's fd set, read on), the next frames found no receive and each went
 * through a buffer and a copy, which kept the receiver behind (tag_bw 1 MiB over tcp 4-6 GB/s
 * in about a third of the runs, 10-12 otherwise). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/counters.h>

#include "ft.h"
#include "ft_pair.h"
#include "ft_tag.h"

enum { BH_A = FT_PAIR_A, BH_B = FT_PAIR_B };
enum { BH_TOKEN_READY = 0x52454459, BH_TOKEN_STALLED = 0x5354414c, BH_TOKEN_DONE = 0x444f4e45 };

#define BH_COUNT 48u
#define BH_WINDOW 16u
#define BH_SIZE (1u << 20)
#define BH_STALL_AT 8u
#define BH_STALL_MS 50u
#define BH_TAG_BASE 0x6200000000000000ull

static uint64_t bh_tag(unsigned i)
{
    return BH_TAG_BASE | i;
}

static void bh_send(ft_pair_t *p)
{
    static ft_tag_send_t sends[BH_WINDOW];
    static ft_tbuf_t bufs[BH_WINDOW];
    for (unsigned k = 0; k < BH_WINDOW; k++)
        ft_tbuf_init(&bufs[k], FT_SHAPE_CONTIG, BH_SIZE);
    ft_progress_until_token(p->worker, p->chan, BH_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    uint64_t last_done = ft_now_ns();
    bool stalled_said = false;
    for (unsigned i = 0; i < BH_COUNT + BH_WINDOW; i++) {
        ft_tag_send_t *s = &sends[i % BH_WINDOW];
        if (i >= BH_WINDOW) { /* the oldest must be done before its slot is used again */
            while (!ft_tag_send_done(s)) {
                FT_CHECK(ft_now_ns() < deadline, "send %u not complete after %u ms", i - BH_WINDOW,
                         FT_TAG_TIMEOUT);
                ft_progress_once(p->worker);
                if (!stalled_said && i - BH_WINDOW >= BH_STALL_AT &&
                    ft_now_ns() - last_done > (uint64_t)BH_STALL_MS * 1000000u) {
                    ft_chan_send_token(p->chan, BH_TOKEN_STALLED, i - BH_WINDOW, 0, 0, 0);
                    stalled_said = true;
                }
            }
            FT_CHECK(s->comp.status == FERRY_OK, "send %u completed with %s", i - BH_WINDOW,
                     ferry_status_name(s->comp.status));
            last_done = ft_now_ns();
        }
        if (i >= BH_COUNT)
            continue;
        ft_tbuf_fill(&bufs[i % BH_WINDOW], BH_A, bh_tag(i), BH_SIZE);
        s->buf = bufs[i % BH_WINDOW]; /* not freed by the send: ours */
        ferry_status_t status = ft_tag_send_buf(p->worker, p->ep, s, bh_tag(i), BH_SIZE);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "send %u: %s", i,
                 ferry_status_name(status));
    }
    if (!stalled_said) /* the sockets took every message: the receiver may go on */
        ft_chan_send_token(p->chan, BH_TOKEN_STALLED, BH_COUNT, 0, 0, 0);
    ft_progress_until_token(p->worker, p->chan, BH_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
    ferry_counters_t c;
    ft_worker_counters(p->worker, &c);
    uint64_t eager = c.tag_modes[ferry_counters_size_class(BH_SIZE)][FERRY_COUNTERS_MODE_EAGER];
    FT_CHECK(eager == BH_COUNT, "%llu of %u messages of 1 MiB went eager (the case is eager's)",
             (unsigned long long)eager, BH_COUNT);
    for (unsigned k = 0; k < BH_WINDOW; k++)
        ft_tbuf_free(&bufs[k]);
}

static void bh_recv(ft_pair_t *p)
{
    ft_tag_recv_t r;
    char what[64];
    ft_tag_recv_init(&r, FT_SHAPE_CONTIG, BH_SIZE);
    ft_tag_recv_post(p->worker, &r, bh_tag(0), UINT64_MAX);
    ft_chan_send_token(p->chan, BH_TOKEN_READY, 0, 0, 0, 0);
    for (unsigned i = 0; i < BH_COUNT; i++) {
        ft_tag_recv_wait(p->worker, &r);
        snprintf(what, sizeof(what), "receive %u of %u", i, BH_COUNT);
        ft_tag_recv_check(&r, BH_A, bh_tag(i), BH_SIZE, what);
        if (i + 1 == BH_STALL_AT) { /* busy elsewhere: the sockets fill up */
            ft_token_t t = ft_chan_expect_token(p->chan, BH_TOKEN_STALLED, FT_TAG_TIMEOUT);
            ft_note("receiver: no progress until the sender's send %llu stopped completing",
                    (unsigned long long)t.v[0]);
        }
        if (i + 1 < BH_COUNT) { /* the next one, outside progress */
            ft_tag_recv_rearm(&r);
            ft_tag_recv_post(p->worker, &r, bh_tag(i + 1), UINT64_MAX);
        }
    }
    ft_tag_recv_free(&r);
    ferry_counters_t c;
    ft_worker_counters(p->worker, &c);
    FT_CHECK(c.tag_unexpected_peak_count == 0,
             "%llu messages of 1 MiB were buffered at once (each found no receive posted): a "
             "progress call read on past a complete payload",
             (unsigned long long)c.tag_unexpected_peak_count);
    ft_note("receiver: %u messages of 1 MiB, every byte checked, none unexpected", BH_COUNT);
    ft_chan_send_token(p->chan, BH_TOKEN_DONE, 0, 0, 0, 0);
}

static void bh_pair(ft_pair_t *p, void *arg)
{
    (void)arg;
    if (p->self == BH_A)
        bh_send(p);
    else
        bh_recv(p);
    ft_files_check_self();
}

int main(void)
{
    ft_watchdog(110);
    double seconds = ft_pair_run(bh_pair, NULL);
    ft_note("passed in %.2f s", seconds);
    return 0;
}
