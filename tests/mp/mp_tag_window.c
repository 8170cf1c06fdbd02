/* The pattern of Open MPI's tag_bw over the provider (issue 13): a sender keeps TW_WINDOW sends
 * of TW_SIZE bytes (64 KiB: eager in pieces on shm, more than one bulk buffer) in flight, and a
 * receiver keeps TW_WINDOW receives posted but, like an MPI rank, posts the next one only after
 * it found the oldest complete between progress calls (never from a completion callback), while
 * each progress call takes everything the transport holds. Messages then arrive before their
 * receive now and then, or most of them when the receiver falls behind: unexpected, they were
 * reassembled in a buffer malloc'ed for each (page faults: 110-150 us per 32 KiB fragment on
 * this project's VM), and the sender's rendezvous after the receiver's bound spun on
 * FERRY_ERR_NO_RESOURCE behind its queued fragments (431815 retries for 1104 messages, 0.5
 * GB/s).
 *
 * Two processes, "a" (sender) and "b" (receiver), each with an endpoint to the other:
 *   a -> b: TW_COUNT messages of one tag, message i filled with pattern i % TW_PATTERNS, into a
 *   receive buffer of its own, in three phases:
 *   1. early: a sends TW_EARLY messages and waits; b, with no receive posted, progresses until
 *      all TW_EARLY are unexpected (fewer than the recycled buffers for messages in pieces:
 *      each costs one copy more, no allocation), checks that it did not restrict its sender
 *      (tag_flow_limited 0: a few messages ahead of their receives are no reason to), posts
 *      its window and lets a go on;
 *   2. behind: at message TW_STALL_AT b stops posting and only progresses (a rank busy
 *      elsewhere) until it told its sender EAGER_BUFFER (tag_flow_limited > 0: the recycled
 *      buffers ran out), then goes on;
 *   3. b posts the receive TW_WINDOW further on as soon as the oldest is complete, to the end,
 *      and checks status, tag, length and every byte of every message (in order).
 * Checks: nothing lost, reordered or corrupted; no more than TW_BACKLOG_MAX messages were ever
 * buffered (before EAGER_BUFFER, with eager on, the sender outran the receiver by hundreds;
 * FERRY_TAG_UNEXPECTED_MAX is 16 MiB, so that the bytes bound does not restrict it); a deadline
 * (the watchdog). The sender's eager/rendezvous counts and FERRY_ERR_NO_RESOURCE retries are
 * printed. Registered for shm with automatic thresholds (mp_tag_window): eager in pieces is
 * shm's. With the argument "tcp" (mp_tag_window_tcp, FERRY_TRANSPORTS=tcp), whose 64 KiB
 * messages are single large frames: in phase 2 b stops posting until TW_STREAM_BEHIND messages
 * are buffered (more than the recycled buffers kept of their class in any case, 8: the rest are
 * kept within FERRY_TAG_SPARE_MAX), and nobody is ever restricted (FERRY_TAG_UNEXPECTED_MAX is
 * 64 MiB there, more than the whole stream, and a stream's sender is told no EAGER_BUFFER). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/counters.h>

#include "ft.h"
#include "ft_pair.h"
#include "ft_tag.h"

enum { TW_A = FT_PAIR_A, TW_B = FT_PAIR_B };
enum { TW_TOKEN_READY = 0x52454459, TW_TOKEN_GO = 0x474f474f, TW_TOKEN_DONE = 0x444f4e45 };

#define TW_COUNT 512u /* 32 MiB: a receive buffer each */
#define TW_WINDOW 16u
#define TW_SIZE 65536u
#define TW_TAG 0x7d00000000000000ull
/* Messages the receiver lets go unexpected before it posts (phase 1): fewer than the recycled
 * buffers for messages in pieces (8, TAG_PIECES_OUT_MAX in src/proto/tag.c) */
#define TW_EARLY 4u
/* The message before whose receive the receiver stops posting until its sender is restricted
 * (phase 2): early enough that the sends until then and the backlog after it all go while shm
 * still measures its store kinds (at least 5 MiB of copies, 80 messages), which is when a new
 * endpoint sends 64 KiB eagerly (afterwards their class calibrates, rendezvous blocks first,
 * src/proto/tag_calib.c) */
#define TW_STALL_AT 32u
/* Messages that may go unexpected at once: the recycled buffers (8) that run out first, the
 * sender's window, what shm's 16 bulk buffers hold (5 messages of 64 KiB) and as many again
 * for EAGER_BUFFER to reach the sender. */
#define TW_BACKLOG_MAX (2 * TW_WINDOW + 18u)
/* Over tcp: the backlog phase 2 waits for (4 MiB) */
#define TW_STREAM_BEHIND 64u

static bool tw_tcp; /* the argument "tcp" */

/* Messages are filled before the stream (the sender must outrun its receiver, as a benchmark
 * sending one buffer does): TW_PATTERNS buffers of different patterns, used in turn. */
#define TW_PATTERNS 64u

static uint64_t tw_pattern_tag(unsigned i)
{
    return 0x7c00000000000000ull | (i % TW_PATTERNS);
}

static bool tw_send_done(void *arg)
{
    return ft_tag_send_done(arg);
}

static void tw_send(ft_pair_t *p)
{
    static ft_tag_send_t sends[TW_WINDOW];
    static ft_tbuf_t bufs[TW_PATTERNS];
    ferry_counters_t before, after;
    for (unsigned k = 0; k < TW_PATTERNS; k++) {
        ft_tbuf_init(&bufs[k], FT_SHAPE_CONTIG, TW_SIZE);
        ft_tbuf_fill(&bufs[k], TW_A, tw_pattern_tag(k), TW_SIZE);
    }
    ft_worker_counters(p->worker, &before);
    ft_progress_until_token(p->worker, p->chan, TW_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
    uint64_t t0 = ft_now_ns();
    for (unsigned i = 0; i < TW_COUNT + TW_WINDOW; i++) {
        ft_tag_send_t *s = &sends[i % TW_WINDOW];
        if (i >= TW_WINDOW) { /* the oldest must be done before its slot is used again */
            ft_progress_until(p->worker, FT_TAG_TIMEOUT, tw_send_done, s, "the oldest send");
            FT_CHECK(s->comp.status == FERRY_OK, "send %u completed with %s", i - TW_WINDOW,
                     ferry_status_name(s->comp.status));
        }
        if (i >= TW_COUNT)
            continue;
        if (i == TW_EARLY) /* phase 1: the receiver takes these unexpected, then posts */
            ft_progress_until_token(p->worker, p->chan, TW_TOKEN_GO, FT_TAG_TIMEOUT, NULL);
        s->buf = bufs[i % TW_PATTERNS]; /* not freed by the send: ours */
        ferry_status_t status = ft_tag_send_buf(p->worker, p->ep, s, TW_TAG, TW_SIZE);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "send %u: %s", i,
                 ferry_status_name(status));
    }
    ft_progress_until_token(p->worker, p->chan, TW_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
    uint64_t ns = ft_now_ns() - t0;
    for (unsigned k = 0; k < TW_PATTERNS; k++)
        ft_tbuf_free(&bufs[k]);
    ft_worker_counters(p->worker, &after);
    unsigned c = ferry_counters_size_class(TW_SIZE);
    uint64_t eager = after.tag_modes[c][FERRY_COUNTERS_MODE_EAGER] -
                     before.tag_modes[c][FERRY_COUNTERS_MODE_EAGER];
    uint64_t retries = after.no_resource - before.no_resource;
    ft_note("%u messages of %u bytes in %.1f ms (%.2f GB/s): %llu eager, %llu by rendezvous; "
            "%llu FERRY_ERR_NO_RESOURCE retries",
            TW_COUNT, TW_SIZE, (double)ns / 1e6, (double)TW_COUNT * TW_SIZE / (double)ns,
            (unsigned long long)eager, (unsigned long long)(TW_COUNT - eager),
            (unsigned long long)retries);
}

/* Receives of the window complete, from the i-th on (of count). */
static unsigned tw_done(ft_tag_recv_t *recvs, unsigned i, unsigned count)
{
    unsigned done = 0;
    for (unsigned k = i; k < i + TW_WINDOW && k < count; k++)
        done += ft_tag_recv_poll(&recvs[k]);
    return done;
}

/* ft_progress_until's condition: at least count messages were buffered at once. */
typedef struct tw_backlog {
    ft_pair_t *p;
    unsigned count;
} tw_backlog_t;

static bool tw_backlog_reached(void *arg)
{
    const tw_backlog_t *b = arg;
    ferry_counters_t c;
    ft_worker_counters(b->p->worker, &c);
    return c.tag_unexpected_peak_count >= b->count;
}

static bool tw_restricted(void *arg)
{
    ft_pair_t *p = arg;
    ferry_counters_t c;
    ft_worker_counters(p->worker, &c);
    return c.tag_flow_limited > 0;
}

static void tw_recv(ft_pair_t *p)
{
    /* a buffer of its own for every message, allocated (and touched) before the stream and
     * checked after it: the receiver posts the next receive as soon as the oldest is done, as
     * Open MPI's benchmark does (which receives into one buffer and checks nothing) */
    ft_tag_recv_t *recvs = calloc(TW_COUNT, sizeof(*recvs));
    FT_CHECK(recvs != NULL, "calloc of %u receives", TW_COUNT);
    char what[64];
    for (unsigned i = 0; i < TW_COUNT; i++)
        ft_tag_recv_init(&recvs[i], FT_SHAPE_CONTIG, TW_SIZE);
    ft_chan_send_token(p->chan, TW_TOKEN_READY, 0, 0, 0, 0);
    /* phase 1: the sender's first TW_EARLY messages all go unexpected (it waits for GO) */
    ferry_counters_t c;
    tw_backlog_t early = {p, TW_EARLY}, behind = {p, TW_STREAM_BEHIND};
    ft_progress_until(p->worker, FT_TAG_TIMEOUT, tw_backlog_reached, &early,
                      "the first messages, unexpected");
    ft_worker_counters(p->worker, &c);
    FT_CHECK(c.tag_unexpected_peak_count == TW_EARLY && c.tag_flow_limited == 0,
             "%llu messages unexpected (%u sent): the sender was restricted %llu times (a few "
             "messages in recycled buffers restrict nobody)",
             (unsigned long long)c.tag_unexpected_peak_count, TW_EARLY,
             (unsigned long long)c.tag_flow_limited);
    for (unsigned i = 0; i < TW_WINDOW; i++)
        ft_tag_recv_post(p->worker, &recvs[i], TW_TAG, UINT64_MAX);
    ft_chan_send_token(p->chan, TW_TOKEN_GO, 0, 0, 0, 0);
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    for (unsigned i = 0; i < TW_COUNT; i++) {
        ft_tag_recv_t *r = &recvs[i];
        /* as MPI_Wait over Open MPI's MTL: progress until the oldest is complete, and on
         * while a progress call completed receives (the MTL reads the CQ until it is empty,
         * and each read progresses); then post the next one, outside progress */
        unsigned done = tw_done(recvs, i, TW_COUNT), before;
        do {
            FT_CHECK(ft_now_ns() < deadline, "receive %u not complete after %u ms", i,
                     FT_TAG_TIMEOUT);
            before = done;
            ft_progress_once(p->worker);
            done = tw_done(recvs, i, TW_COUNT);
        } while (done > before || !ft_tag_recv_poll(r));
        if (i == TW_STALL_AT && tw_tcp) /* phase 2 over tcp: the frames pile up */
            ft_progress_until(p->worker, FT_TAG_TIMEOUT, tw_backlog_reached, &behind,
                              "64 messages buffered");
        else if (i == TW_STALL_AT) /* phase 2: busy elsewhere, the sender's messages pile up */
            ft_progress_until(p->worker, FT_TAG_TIMEOUT, tw_restricted, p,
                              "EAGER_BUFFER to the sender (the recycled buffers ran out)");
        if (i + TW_WINDOW < TW_COUNT)
            ft_tag_recv_post(p->worker, &recvs[i + TW_WINDOW], TW_TAG, UINT64_MAX);
    }
    for (unsigned i = 0; i < TW_COUNT; i++) {
        ft_tag_recv_t *r = &recvs[i];
        snprintf(what, sizeof(what), "receive %u of %u", i, TW_COUNT);
        FT_CHECK(r->status == FERRY_OK && r->info.tag == TW_TAG && r->info.length == TW_SIZE,
                 "%s: %s, tag 0x%llx, %zu bytes", what, ferry_status_name(r->status),
                 (unsigned long long)r->info.tag, r->info.length);
        ft_tbuf_check(&r->buf, TW_A, tw_pattern_tag(i), TW_SIZE, what);
        ft_tag_recv_free(r);
    }
    free(recvs);
    ferry_tag_info_t info;
    ferry_status_t status = ferry_tag_probe(p->worker, 0, 0, 0, &info, NULL);
    FT_CHECK(status == FERRY_ERR_NO_ELEM, "a message beyond the stream: %s",
             ferry_status_name(status));
    ft_worker_counters(p->worker, &c);
    ft_note("receiver: backlog peak %llu messages, %llu bytes; sender restricted %llu times",
            (unsigned long long)c.tag_unexpected_peak_count,
            (unsigned long long)c.tag_unexpected_peak_bytes,
            (unsigned long long)c.tag_flow_limited);
    /* over tcp: 64 messages buffered and more (the sender ran on), nobody restricted (the
     * bytes bound, 64 MiB there, cannot be crossed by the 32 MiB stream) */
    FT_CHECK(!tw_tcp || c.tag_flow_limited == 0,
             "over tcp the sender was restricted %llu times (a backlog of %llu messages, "
             "%llu bytes, within the bytes bound of 64 MiB)",
             (unsigned long long)c.tag_flow_limited,
             (unsigned long long)c.tag_unexpected_peak_count,
             (unsigned long long)c.tag_unexpected_peak_bytes);
    /* the message in pieces that found the recycled buffers out restricted its sender (the
     * bytes bound, 16 MiB here, never does): what went unexpected is at most those buffers and
     * what was in flight then */
    FT_CHECK(tw_tcp || c.tag_unexpected_peak_count <= TW_BACKLOG_MAX,
             "%llu messages buffered at once (at most %u: the recycled buffers, the sender's "
             "window and what shm holds, in flight when the receiver told EAGER_BUFFER)",
             (unsigned long long)c.tag_unexpected_peak_count, TW_BACKLOG_MAX);
    ft_chan_send_token(p->chan, TW_TOKEN_DONE, 0, 0, 0, 0);
}

static void tw_pair(ft_pair_t *p, void *arg)
{
    (void)arg;
    if (p->self == TW_A)
        tw_send(p);
    else
        tw_recv(p);
    ft_files_check_self();
}

int main(int argc, char **argv)
{
    tw_tcp = argc > 1 && strcmp(argv[1], "tcp") == 0;
    ft_watchdog(110);
    double seconds = ft_pair_run(tw_pair, NULL);
    ft_note("passed in %.2f s", seconds);
    return 0;
}
