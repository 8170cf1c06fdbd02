/* Many rendezvous in flight at once between two processes, every byte checked.
 *
 * Two processes, "a" (this one) and "b" (forked), each with an endpoint of its own to the other:
 *   1. a -> b: 64 rendezvous (64 KiB .. 1.1 MiB, different iov shapes on the two sides) started
 *      one after the other without waiting; b posted its 64 receives first;
 *   2. a -> b: 64 more, unexpected: b receives them once all RTS are there, in the reverse order
 *      of their tags (each receive names one tag);
 *   3. both ways at once: each side posts 32 receives, starts 64 sends, then posts its other 32
 *      receives while the peer's messages arrive;
 *   4. a -> b: 200 rendezvous of one tag (9 000 .. 65 000 bytes: more transfers than the id
 *      tables start with), 100 receives posted before, 100 after: receive k gets message k.
 * Each side notes the most of its sends in flight at once while it started them.
 * Registered for every FERRY_RNDV_MODE (mp_tag_concurrent_<mode>). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_pair.h"
#include "ft_tag.h"

enum { TC_A = FT_PAIR_A, TC_B = FT_PAIR_B };
enum { TC_TOKEN_READY = 0x52454459, TC_TOKEN_SENT = 0x53454e54, TC_TOKEN_DONE = 0x444f4e45 };

#define TC_N 64
#define TC_N4 200
#define TC_KIB ((size_t)1 << 10)

typedef ft_pair_t tc_proc_t;

static uint64_t tc_tag(unsigned round, unsigned from, unsigned i)
{
    return 0x7c00000000000000ull | ((uint64_t)round << 40) | ((uint64_t)from << 32) | i;
}

static size_t tc_size(unsigned round, unsigned from, unsigned i)
{
    if (round == 4)
        return 9000 + (i * 7919u) % 56000; /* all above the eager threshold */
    return 64 * TC_KIB + ((size_t)i * 104729u * 13u + round * 4099u + from * 31u) % (1088 * TC_KIB);
}

static ft_shape_t tc_shape(unsigned i)
{
    static const ft_shape_t shapes[] = {FT_SHAPE_CONTIG, FT_SHAPE_UNEVEN3, FT_SHAPE_SEVEN,
                                        FT_SHAPE_ZEROS};
    return shapes[i % 4];
}

static bool tc_all_sent(void *arg)
{
    ft_tag_send_t **set = arg;
    for (size_t i = 0; set[i] != NULL; i++)
        if (!ft_tag_send_done(set[i]))
            return false;
    return true;
}

static bool tc_all_received(void *arg)
{
    ft_tag_recv_t **set = arg;
    for (size_t i = 0; set[i] != NULL; i++)
        if (!ft_tag_recv_poll(set[i]))
            return false;
    return true;
}

typedef struct tc_both {
    ft_tag_send_t **sends;
    ft_tag_recv_t **recvs;
} tc_both_t;

static bool tc_all_both(void *arg)
{
    tc_both_t *b = arg;
    return (b->sends == NULL || tc_all_sent(b->sends)) &&
           (b->recvs == NULL || tc_all_received(b->recvs));
}

/* Start n sends of round (tags/sizes of tc_tag/tc_size for i in order[]); returns the most that
 * were in flight at once while they started. (Counted after each start, not only after the last:
 * a start that finds the transport full progresses, and a fast peer then completes the early
 * sends of the round meanwhile.) */
static unsigned tc_start_sends(tc_proc_t *p, unsigned round, ft_tag_send_t *sends,
                               ft_tag_send_t **set, unsigned n)
{
    unsigned peak = 0;
    for (unsigned i = 0; i < n; i++) {
        ft_tag_send_start(p->worker, p->ep, &sends[i], p->self, tc_tag(round, p->self, i),
                          tc_size(round, p->self, i), tc_shape(i + 1));
        set[i] = &sends[i];
        unsigned in_flight = 0;
        for (unsigned k = 0; k <= i; k++)
            in_flight += !ft_tag_send_done(&sends[k]);
        if (in_flight > peak)
            peak = in_flight;
    }
    set[n] = NULL;
    return peak;
}

static void tc_finish_sends(ft_tag_send_t *sends, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        FT_CHECK(sends[i].comp.status == FERRY_OK, "send %u (tag 0x%llx) completed with %s", i,
                 (unsigned long long)sends[i].tag, ferry_status_name(sends[i].comp.status));
        ft_tbuf_free(&sends[i].buf);
    }
}

static void tc_check_recvs(tc_proc_t *p, unsigned round, ft_tag_recv_t *recvs, unsigned n)
{
    char what[120];
    for (unsigned i = 0; i < n; i++) {
        snprintf(what, sizeof(what), "round %u, message %u from %s", round, i,
                 p->peer == TC_A ? "a" : "b");
        ft_tag_recv_check(&recvs[i], p->peer, tc_tag(round, p->peer, i), tc_size(round, p->peer, i),
                          what);
        FT_CHECK(recvs[i].info.sender == recvs[0].info.sender,
                 "%s: info.sender %p, message 0 came from %p", what, (void *)recvs[i].info.sender,
                 (void *)recvs[0].info.sender);
        ft_tag_recv_free(&recvs[i]);
    }
}

static ft_tag_send_t tc_sends[TC_N4];
static ft_tag_send_t *tc_send_set[TC_N4 + 1];
static ft_tag_recv_t tc_recvs[TC_N4];
static ft_tag_recv_t *tc_recv_set[TC_N4 + 1];

static void tc_recv_init(unsigned round, unsigned from, unsigned i)
{
    ft_tag_recv_init(&tc_recvs[i], tc_shape(i), tc_size(round, from, i));
    tc_recv_set[i] = &tc_recvs[i];
}

/* --- 1. and 2.: a -> b */

static void tc_round_one_way(tc_proc_t *p, unsigned round)
{
    uint64_t t0 = ft_now_ns();
    if (p->self == TC_A) {
        if (round == 1)
            ft_progress_until_token(p->worker, p->chan, TC_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
        unsigned in_flight = tc_start_sends(p, round, tc_sends, tc_send_set, TC_N);
        if (round == 2)
            ft_chan_send_token(p->chan, TC_TOKEN_SENT, 0, 0, 0, 0);
        tc_both_t both = {.sends = tc_send_set};
        ft_progress_until(p->worker, FT_TAG_TIMEOUT, tc_all_both, &both, "64 sends");
        tc_finish_sends(tc_sends, TC_N);
        ft_progress_until_token(p->worker, p->chan, TC_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
        ft_note("round %u: 64 rendezvous a -> b (%s), at most %u in flight at once: "
                "%.1f ms",
                round, round == 1 ? "posted first" : "unexpected, received in reverse", in_flight,
                (double)(ft_now_ns() - t0) / 1e6);
        FT_CHECK(in_flight >= TC_N / 2, "only %u of %u sends were in flight at once", in_flight,
                 TC_N);
        return;
    }
    for (unsigned i = 0; i < TC_N; i++)
        tc_recv_init(round, TC_A, i);
    tc_recv_set[TC_N] = NULL;
    if (round == 1) {
        for (unsigned i = 0; i < TC_N; i++)
            ft_tag_recv_post(p->worker, &tc_recvs[i], tc_tag(round, TC_A, i), UINT64_MAX);
        ft_chan_send_token(p->chan, TC_TOKEN_READY, 0, 0, 0, 0);
    } else {
        ft_progress_until_token(p->worker, p->chan, TC_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
        ft_tag_probe_until(p->worker, tc_tag(round, TC_A, TC_N - 1), UINT64_MAX);
        for (unsigned i = TC_N; i-- > 0;)
            ft_tag_recv_post(p->worker, &tc_recvs[i], tc_tag(round, TC_A, i), UINT64_MAX);
    }
    tc_both_t both = {.recvs = tc_recv_set};
    ft_progress_until(p->worker, FT_TAG_TIMEOUT, tc_all_both, &both, "64 receives");
    tc_check_recvs(p, round, tc_recvs, TC_N);
    ft_chan_send_token(p->chan, TC_TOKEN_DONE, 0, 0, 0, 0);
}

/* --- 3. both ways at once */

static void tc_round_both(tc_proc_t *p)
{
    const unsigned round = 3;
    uint64_t t0 = ft_now_ns();
    for (unsigned i = 0; i < TC_N; i++)
        tc_recv_init(round, p->peer, i);
    tc_recv_set[TC_N] = NULL;
    for (unsigned i = 1; i < TC_N; i += 2)
        ft_tag_recv_post(p->worker, &tc_recvs[i], tc_tag(round, p->peer, i), UINT64_MAX);
    ft_chan_send_token(p->chan, TC_TOKEN_READY, 0, 0, 0, 0);
    ft_progress_until_token(p->worker, p->chan, TC_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
    unsigned in_flight = tc_start_sends(p, round, tc_sends, tc_send_set, TC_N);
    for (unsigned i = 0; i < TC_N; i += 2) {
        ft_progress_once(p->worker);
        ft_tag_recv_post(p->worker, &tc_recvs[i], tc_tag(round, p->peer, i), UINT64_MAX);
    }
    tc_both_t both = {.sends = tc_send_set, .recvs = tc_recv_set};
    ft_progress_until(p->worker, FT_TAG_TIMEOUT, tc_all_both, &both, "64 sends and 64 receives");
    tc_finish_sends(tc_sends, TC_N);
    tc_check_recvs(p, round, tc_recvs, TC_N);
    /* the peer may still need us for its last completions */
    ft_chan_send_token(p->chan, TC_TOKEN_DONE, 0, 0, 0, 0);
    ft_progress_until_token(p->worker, p->chan, TC_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
    if (p->self == TC_A)
        ft_note("round 3: 64 rendezvous each way at once, at most %u of ours in flight at "
                "once: %.1f ms",
                in_flight, (double)(ft_now_ns() - t0) / 1e6);
    FT_CHECK(in_flight >= TC_N / 4, "only %u of %u sends were in flight at once", in_flight, TC_N);
}

/* --- 4. 200 of one tag */

static void tc_round_many(tc_proc_t *p)
{
    const unsigned round = 4;
    const uint64_t tag = tc_tag(round, 0, 0);
    uint64_t t0 = ft_now_ns();
    if (p->self == TC_A) {
        ft_progress_until_token(p->worker, p->chan, TC_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
        for (unsigned i = 0; i < TC_N4; i++) {
            /* one tag for all; the pattern still tells the messages apart (by their index) */
            ft_tbuf_init(&tc_sends[i].buf, tc_shape(i), tc_size(round, TC_A, i));
            ft_tbuf_fill(&tc_sends[i].buf, TC_A, tc_tag(round, TC_A, i), tc_size(round, TC_A, i));
            ferry_status_t status =
                ft_tag_send_buf(p->worker, p->ep, &tc_sends[i], tag, tc_size(round, TC_A, i));
            FT_CHECK(status == FERRY_INPROGRESS || status == FERRY_OK, "send %u: %s", i,
                     ferry_status_name(status));
            tc_send_set[i] = &tc_sends[i];
        }
        tc_send_set[TC_N4] = NULL;
        unsigned in_flight = 0;
        for (unsigned i = 0; i < TC_N4; i++)
            in_flight += !ft_tag_send_done(&tc_sends[i]);
        ft_chan_send_token(p->chan, TC_TOKEN_SENT, 0, 0, 0, 0);
        tc_both_t both = {.sends = tc_send_set};
        ft_progress_until(p->worker, FT_TAG_TIMEOUT, tc_all_both, &both, "200 sends");
        tc_finish_sends(tc_sends, TC_N4);
        ft_progress_until_token(p->worker, p->chan, TC_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
        ft_note("round 4: 200 rendezvous of one tag a -> b, %u in flight when the last "
                "started, half posted first: %.1f ms",
                in_flight, (double)(ft_now_ns() - t0) / 1e6);
        return;
    }
    for (unsigned i = 0; i < TC_N4; i++)
        tc_recv_init(round, TC_A, i);
    tc_recv_set[TC_N4] = NULL;
    for (unsigned i = 0; i < TC_N4 / 2; i++)
        ft_tag_recv_post(p->worker, &tc_recvs[i], tag, UINT64_MAX);
    ft_chan_send_token(p->chan, TC_TOKEN_READY, 0, 0, 0, 0);
    ft_progress_until_token(p->worker, p->chan, TC_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
    for (unsigned i = TC_N4 / 2; i < TC_N4; i++) {
        ft_progress_once(p->worker);
        ft_tag_recv_post(p->worker, &tc_recvs[i], tag, UINT64_MAX);
    }
    tc_both_t both = {.recvs = tc_recv_set};
    ft_progress_until(p->worker, FT_TAG_TIMEOUT, tc_all_both, &both, "200 receives");
    char what[80];
    for (unsigned i = 0; i < TC_N4; i++) {
        ft_tag_recv_t *r = &tc_recvs[i];
        snprintf(what, sizeof(what), "receive %u of 200 of one tag", i);
        FT_CHECK(r->status == FERRY_OK && r->info.tag == tag &&
                     r->info.length == tc_size(round, TC_A, i),
                 "%s: %s, tag 0x%llx, %zu bytes (expected %zu)", what, ferry_status_name(r->status),
                 (unsigned long long)r->info.tag, r->info.length, tc_size(round, TC_A, i));
        ft_tbuf_check(&r->buf, TC_A, tc_tag(round, TC_A, i), tc_size(round, TC_A, i), what);
        ft_tag_recv_free(r);
    }
    ft_chan_send_token(p->chan, TC_TOKEN_DONE, 0, 0, 0, 0);
}

static void tc_run(tc_proc_t *p)
{
    tc_round_one_way(p, 1);
    tc_round_one_way(p, 2);
    tc_round_both(p);
    tc_round_many(p);
}

static void tc_pair(ft_pair_t *p, void *arg)
{
    (void)arg;
    tc_run(p);
    ft_files_check_self();
}

int main(void)
{
    ft_watchdog(55);
    double seconds = ft_pair_run(tc_pair, NULL);
    ft_note("passed (rendezvous mode %s) in %.2f s", ft_tag_mode(), seconds);
    return 0;
}
