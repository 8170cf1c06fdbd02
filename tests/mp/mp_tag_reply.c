/* Messages of 8 KiB .. 16 KiB - 1 that answer the peer go by GET by address, the others eagerly
 * (tag_calib.c, tag_reply_choose), between two processes, every byte checked.
 *
 * Process "a" (this one) and "b" (forked), each with an endpoint of its own to the other:
 *   1. ping-pong, TR_ROUNDS rounds: a sends one message (8 KiB .. 16 KiB - 1; every fourth from
 *      three pieces, the others from one), b receives it and answers with one of its own (the
 *      same sizes; every fifth an 8-byte one, every seventh from three pieces, every ninth
 *      without a completion: ferry_tag_send must return FERRY_OK, and b frees the buffer at
 *      once), a receives that.
 *      b posts its receive before a's message comes in odd rounds and after it came (probed:
 *      an unexpected RTS or eager message) in even ones; a always posts first.
 *   2. a stream a -> b: TR_STREAM messages of those sizes from one piece, TR_WINDOW in flight,
 *      b's receives posted ahead, no answers.
 * Each side then reads its endpoint's counters for the size class 8 KiB .. 16 KiB - 1 and checks
 * how each of its messages moved: with cross-memory attach (the default), a's first ping eager
 * (nothing came from b before it), every later one from one piece by GET, every one from
 * three pieces eager; each of b's answers of that class from one piece by GET, from three
 * eager, and the ones sent without a completion eager; of the stream, only the first by GET (it
 * follows b's last answer), the rest eager.
 * With FERRY_SHM_CMA=off (mp_tag_reply_nocma) every message eager. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_pair.h"
#include "ft_tag.h"
#include <ferry/counters.h>

enum { TR_A = FT_PAIR_A, TR_B = FT_PAIR_B };
enum { TR_TOKEN_READY = 0x52454459, TR_TOKEN_DONE = 0x444f4e45 };

#define TR_ROUNDS 48u
#define TR_STREAM 64u
#define TR_WINDOW 16u
#define TR_CLASS_BASE 8192u

typedef ft_pair_t tr_proc_t;

static uint64_t tr_tag(unsigned phase, unsigned from, unsigned i)
{
    return 0x7200000000000000ull | ((uint64_t)phase << 40) | ((uint64_t)from << 32) | i;
}

/* 8 KiB .. 16 KiB - 1 */
static size_t tr_size(unsigned from, unsigned i)
{
    return TR_CLASS_BASE + ((size_t)i * 2749u + from * 613u) % TR_CLASS_BASE;
}

static bool tr_ping_pieces(unsigned i)
{
    return i % 4 == 3;
}

/* b's answers sent without a completion (from one piece) */
static bool tr_answer_nocomp(unsigned i)
{
    return i % 9 == 7;
}

static size_t tr_answer_size(unsigned i)
{
    return i % 5 == 4 ? 8 : tr_size(TR_B, i);
}

static bool tr_answer_pieces(unsigned i)
{
    return i % 7 == 6 && !tr_answer_nocomp(i);
}

typedef struct tr_expect {
    uint64_t eager;
    uint64_t get;
} tr_expect_t;

/* How the messages of the class 8 KiB .. 16 KiB - 1 moved on p's endpoint: only eager and GET,
 * as many as expected. */
static void tr_check_modes(const tr_proc_t *p, const tr_expect_t *expect, const char *when)
{
    ferry_counters_t c = {.size = sizeof(c)};
    FT_CHECK(ferry_ep_counters(p->ep, &c) == FERRY_OK, "ferry_ep_counters failed");
    const uint64_t *modes = c.tag_modes[ferry_counters_size_class(TR_CLASS_BASE)];
    for (unsigned m = 0; m < FERRY_COUNTERS_MODES; m++)
        FT_CHECK(m == FERRY_COUNTERS_MODE_EAGER || m == FERRY_COUNTERS_MODE_GET || modes[m] == 0,
                 "%s (%s): %llu messages of 8 KiB .. 16 KiB - 1 moved by mode %u", when,
                 p->self == TR_A ? "a" : "b", (unsigned long long)modes[m], m);
    FT_CHECK(modes[FERRY_COUNTERS_MODE_EAGER] == expect->eager &&
                 modes[FERRY_COUNTERS_MODE_GET] == expect->get,
             "%s (%s): of 8 KiB .. 16 KiB - 1, %llu eager and %llu by GET; expected %llu and %llu",
             when, p->self == TR_A ? "a" : "b",
             (unsigned long long)modes[FERRY_COUNTERS_MODE_EAGER],
             (unsigned long long)modes[FERRY_COUNTERS_MODE_GET], (unsigned long long)expect->eager,
             (unsigned long long)expect->get);
}

/* One of p's messages of the class was sent (from pieces or not): what it should have moved by. */
static void tr_expect_sent(tr_expect_t *expect, bool cma, bool answers, bool pieces)
{
    if (cma && answers && !pieces)
        expect->get++;
    else
        expect->eager++;
}

static void tr_send(tr_proc_t *p, ft_tag_send_t *s, uint64_t tag, size_t size, bool pieces)
{
    ft_tag_send_start(p->worker, p->ep, s, p->self, tag, size,
                      pieces ? FT_SHAPE_UNEVEN3 : FT_SHAPE_CONTIG);
}

/* A send without a completion: its buffers are the caller's again when it returns FERRY_OK (freed
 * here at once: the receiver's byte check would see it if the message read them later). */
static void tr_send_nocomp(tr_proc_t *p, uint64_t tag, size_t size)
{
    ft_tbuf_t buf;
    ft_tbuf_init(&buf, FT_SHAPE_CONTIG, size);
    ft_tbuf_fill(&buf, p->self, tag, size);
    ferry_status_t status;
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    while ((status = ferry_tag_send(p->ep, buf.iov, buf.count, tag, NULL)) ==
           FERRY_ERR_NO_RESOURCE) {
        ft_progress_once(p->worker);
        FT_CHECK(ft_now_ns() < deadline, "ferry_tag_send(%zu bytes, no completion): no room", size);
    }
    FT_CHECK(status == FERRY_OK, "ferry_tag_send(%zu bytes, no completion) returned %s", size,
             ferry_status_name(status));
    ft_tbuf_free(&buf);
}

static void tr_recv(tr_proc_t *p, unsigned from, uint64_t tag, size_t size, bool probe_first,
                    const char *what)
{
    ft_tag_recv_t r;
    ft_tag_recv_init(&r, FT_SHAPE_SEVEN, size);
    if (probe_first)
        ft_tag_probe_until(p->worker, tag, UINT64_MAX);
    ft_tag_recv_post(p->worker, &r, tag, UINT64_MAX);
    ft_tag_recv_wait(p->worker, &r);
    ft_tag_recv_check(&r, from, tag, size, what);
    ft_tag_recv_free(&r);
}

/* --- 1. ping-pong */

static void tr_pingpong(tr_proc_t *p, bool cma, tr_expect_t *expect)
{
    char what[100];
    for (unsigned i = 0; i < TR_ROUNDS; i++) {
        ft_tag_send_t s;
        if (p->self == TR_A) {
            ft_tag_recv_t r;
            ft_tag_recv_init(&r, FT_SHAPE_UNEVEN3, tr_answer_size(i));
            ft_tag_recv_post(p->worker, &r, tr_tag(1, TR_B, i), UINT64_MAX);
            tr_send(p, &s, tr_tag(1, TR_A, i), tr_size(TR_A, i), tr_ping_pieces(i));
            tr_expect_sent(expect, cma, i > 0, tr_ping_pieces(i));
            ft_tag_send_wait(p->worker, &s, FERRY_OK);
            ft_tbuf_free(&s.buf);
            ft_tag_recv_wait(p->worker, &r);
            snprintf(what, sizeof(what), "round %u: b's answer", i);
            ft_tag_recv_check(&r, TR_B, tr_tag(1, TR_B, i), tr_answer_size(i), what);
            ft_tag_recv_free(&r);
            continue;
        }
        snprintf(what, sizeof(what), "round %u: a's message", i);
        tr_recv(p, TR_A, tr_tag(1, TR_A, i), tr_size(TR_A, i), i % 2 == 0, what);
        if (tr_answer_nocomp(i)) {
            tr_send_nocomp(p, tr_tag(1, TR_B, i), tr_answer_size(i));
            if (tr_answer_size(i) >= TR_CLASS_BASE)
                tr_expect_sent(expect, cma, false, false);
            continue;
        }
        tr_send(p, &s, tr_tag(1, TR_B, i), tr_answer_size(i), tr_answer_pieces(i));
        if (tr_answer_size(i) >= TR_CLASS_BASE)
            tr_expect_sent(expect, cma, true, tr_answer_pieces(i));
        ft_tag_send_wait(p->worker, &s, FERRY_OK);
        ft_tbuf_free(&s.buf);
    }
    tr_check_modes(p, expect, "after the ping-pong");
}

/* --- 2. a stream a -> b */

static ft_tag_send_t tr_sends[TR_WINDOW];
static ft_tag_recv_t tr_recvs[TR_WINDOW];

static void tr_stream_a(tr_proc_t *p, bool cma, tr_expect_t *expect)
{
    bool busy[TR_WINDOW] = {false};
    unsigned next = 0, done = 0;
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    ft_progress_until_token(p->worker, p->chan, TR_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
    while (done < TR_STREAM) {
        for (unsigned s = 0; s < TR_WINDOW; s++) {
            if (busy[s] && ft_tag_send_reap(&tr_sends[s], "stream")) {
                busy[s] = false;
                done++;
            }
            if (!busy[s] && next < TR_STREAM) {
                tr_send(p, &tr_sends[s], tr_tag(2, TR_A, next), tr_size(TR_A, next), false);
                tr_expect_sent(expect, cma, next == 0, false);
                busy[s] = true;
                next++;
            }
        }
        ft_progress_once(p->worker);
        FT_CHECK(ft_now_ns() < deadline, "stream: %u of %u sends done after %d ms", done, TR_STREAM,
                 FT_TAG_TIMEOUT);
    }
    ft_progress_until_token(p->worker, p->chan, TR_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
    tr_check_modes(p, expect, "after the stream");
}

static void tr_stream_b(tr_proc_t *p)
{
    unsigned slot_msg[TR_WINDOW];
    unsigned next = 0, done = 0;
    char what[100];
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    for (unsigned s = 0; s < TR_WINDOW; s++, next++) {
        ft_tag_recv_init(&tr_recvs[s], FT_SHAPE_SEVEN, tr_size(TR_A, next));
        ft_tag_recv_post(p->worker, &tr_recvs[s], tr_tag(2, TR_A, next), UINT64_MAX);
        slot_msg[s] = next;
    }
    ft_chan_send_token(p->chan, TR_TOKEN_READY, 0, 0, 0, 0);
    while (done < TR_STREAM) {
        for (unsigned s = 0; s < TR_WINDOW; s++) {
            if (slot_msg[s] == UINT32_MAX || !ft_tag_recv_poll(&tr_recvs[s]))
                continue;
            unsigned i = slot_msg[s];
            snprintf(what, sizeof(what), "stream message %u", i);
            ft_tag_recv_check(&tr_recvs[s], TR_A, tr_tag(2, TR_A, i), tr_size(TR_A, i), what);
            ft_tag_recv_free(&tr_recvs[s]);
            slot_msg[s] = UINT32_MAX;
            done++;
            if (next < TR_STREAM) {
                ft_tag_recv_init(&tr_recvs[s], FT_SHAPE_SEVEN, tr_size(TR_A, next));
                ft_tag_recv_post(p->worker, &tr_recvs[s], tr_tag(2, TR_A, next), UINT64_MAX);
                slot_msg[s] = next++;
            }
        }
        ft_progress_once(p->worker);
        FT_CHECK(ft_now_ns() < deadline, "stream: %u of %u receives done after %d ms", done,
                 TR_STREAM, FT_TAG_TIMEOUT);
    }
    ft_chan_send_token(p->chan, TR_TOKEN_DONE, 0, 0, 0, 0);
}

static void tr_pair(ft_pair_t *p, void *arg)
{
    (void)arg;
    const char *env = getenv("FERRY_SHM_CMA");
    bool cma = env == NULL || strcmp(env, "off") != 0;
    tr_expect_t expect = {0, 0};
    uint64_t t0 = ft_now_ns();
    tr_pingpong(p, cma, &expect);
    if (p->self == TR_A)
        tr_stream_a(p, cma, &expect);
    else
        tr_stream_b(p);
    if (p->self == TR_A)
        ft_note("%u rounds of ping-pong and a stream of %u, 8 KiB .. 16 KiB - 1: %llu eager, "
                "%llu by GET (cross-memory attach %s): %.1f ms",
                TR_ROUNDS, TR_STREAM, (unsigned long long)expect.eager,
                (unsigned long long)expect.get, cma ? "on" : "off",
                (double)(ft_now_ns() - t0) / 1e6);
}

int main(void)
{
    ft_watchdog(60);
    double seconds = ft_pair_run(tr_pair, NULL);
    ft_note("passed in %.2f s", seconds);
    return 0;
}
