/* A sender that outruns its receiver: tagged streams far larger than the receiver's bounds on
 * unexpected messages (FERRY_TAG_UNEXPECTED_MAX bytes, FERRY_TAG_UNEXPECTED_COUNT messages), the
 * receives posted only once everything was sent. Nothing may be lost or reordered, nothing may
 * hang, and the receiver's backlog must stay within the bounds (its counters say how large it
 * grew: tag_unexpected_peak_count, tag_unexpected_peak_bytes).
 *
 * Two processes, "a" (sender) and "b" (receiver), each with an endpoint to the other:
 *   0. a -> b: one synchronous message, whose acknowledgement sets up the way back from b's
 *      side of a's connection (as any reply would): b's requests to restrict a take it, and
 *      on a connection never used backwards that first takes a wire-up, while a sends on.
 *   1. a -> b: TF_MIXED_N messages of one tag (16 MiB), three of every four of 4 KiB and the
 *      fourth of 8 bytes, a progressing once every TF_WINDOW sends (as an application waiting
 *      for its oldest sends would). b only progresses until a says all were started, then
 *      receives them in order, one at a time: message k is the k-th sent, every byte checked.
 *      b's backlog of large-message bytes must stay within FERRY_TAG_UNEXPECTED_MAX plus what
 *      the transport and a's window hold; b restricted a at least once; a sent 4 KiB messages
 *      both eagerly and by rendezvous, and every 8-byte one eagerly (EAGER_SMALL leaves small
 *      messages alone) unless the count bound was crossed.
 *   2. a -> b: TF_SMALL_N messages of 8 bytes, the same way. With the default count bound all
 *      go eagerly; with a small one (the second registration) a was switched to rendezvous
 *      (EAGER_OFF) and b's backlog of messages stayed within the bound plus the slack.
 * Registered twice: mp_tag_flow (default bounds but FERRY_TAG_UNEXPECTED_MAX=256K, so the
 * stream is 64 times the bound) and mp_tag_flow_count (FERRY_TAG_UNEXPECTED_COUNT=1000). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/counters.h>

#include "ft.h"
#include "ft_pair.h"
#include "ft_tag.h"

enum { TF_A = FT_PAIR_A, TF_B = FT_PAIR_B };
enum { TF_TOKEN_READY = 0x52454459, TF_TOKEN_SENT = 0x53454e54, TF_TOKEN_DONE = 0x444f4e45 };

#define TF_MIXED_N 5460u /* 4096 of 4 KiB (16 MiB) and 1364 of 8 bytes */
#define TF_SMALL_N 20000u
#define TF_WINDOW 16u
#define TF_LARGE 4096u
#define TF_SMALL 8u
/* What may arrive after the receiver crossed a bound and before its sender heard of it: what
 * the transport holds (shm: 256 ring cells, 64 medium buffers of 8 KiB and 16 bulk ones of
 * 32 KiB, 1 MiB in all) plus the sender's window. */
#define TF_SLACK_BYTES ((uint64_t)(1u << 20) + TF_WINDOW * TF_LARGE)
#define TF_SLACK_COUNT (256u + TF_WINDOW)

static uint64_t tf_env_size(const char *name, uint64_t fallback)
{
    const char *value = getenv(name);
    if (value == NULL || *value == '\0')
        return fallback;
    char *end;
    uint64_t n = strtoull(value, &end, 10);
    if (*end == 'K' || *end == 'k')
        n <<= 10;
    else if (*end == 'M' || *end == 'm')
        n <<= 20;
    return n;
}

static size_t tf_size(unsigned phase, unsigned i)
{
    return phase == 1 && i % 4 != 3 ? TF_LARGE : TF_SMALL;
}

/* The tag every message of a phase travels with, and the one its bytes are made of (the
 * pattern tells the messages apart). */
static uint64_t tf_wire_tag(unsigned phase)
{
    return 0x7f00000000000000ull | phase;
}

static uint64_t tf_pattern_tag(unsigned phase, unsigned i)
{
    return 0x7e00000000000000ull | ((uint64_t)phase << 32) | i;
}

static ft_tag_send_t *tf_sends;

static bool tf_sends_done(void *arg)
{
    unsigned n = *(const unsigned *)arg;
    for (unsigned i = 0; i < n; i++)
        if (!ft_tag_send_done(&tf_sends[i]))
            return false;
    return true;
}

static void tf_counters(ferry_worker_t *w, ferry_counters_t *c)
{
    memset(c, 0, sizeof(*c));
    c->size = sizeof(*c);
    FT_CHECK(ferry_worker_counters(w, c) == FERRY_OK, "ferry_worker_counters");
}

/* Messages of size class of length sent eagerly / by any rendezvous since before. */
static void tf_modes(const ferry_counters_t *now, const ferry_counters_t *before, size_t length,
                     uint64_t *eager_p, uint64_t *rndv_p)
{
    unsigned c = ferry_counters_size_class(length);
    *eager_p = now->tag_modes[c][FERRY_COUNTERS_MODE_EAGER] -
               before->tag_modes[c][FERRY_COUNTERS_MODE_EAGER];
    *rndv_p = 0;
    for (unsigned m = FERRY_COUNTERS_MODE_EAGER + 1; m < FERRY_COUNTERS_MODES; m++)
        *rndv_p += now->tag_modes[c][m] - before->tag_modes[c][m];
}

static void tf_send_phase(ft_pair_t *p, unsigned phase, unsigned n)
{
    ferry_counters_t before, after;
    tf_counters(p->worker, &before);
    ft_progress_until_token(p->worker, p->chan, TF_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
    uint64_t t0 = ft_now_ns();
    for (unsigned i = 0; i < n; i++) {
        ft_tag_send_t *s = &tf_sends[i];
        size_t size = tf_size(phase, i);
        ft_tbuf_init(&s->buf, FT_SHAPE_CONTIG, size);
        ft_tbuf_fill(&s->buf, TF_A, tf_pattern_tag(phase, i), size);
        ferry_status_t status = ft_tag_send_buf(p->worker, p->ep, s, tf_wire_tag(phase), size);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "phase %u, send %u: %s", phase,
                 i, ferry_status_name(status));
        if (i % TF_WINDOW == TF_WINDOW - 1)
            ft_progress_once(p->worker);
    }
    ft_chan_send_token(p->chan, TF_TOKEN_SENT, 0, 0, 0, 0);
    ft_progress_until(p->worker, FT_TAG_TIMEOUT, tf_sends_done, &n, "the stream's sends");
    for (unsigned i = 0; i < n; i++) {
        FT_CHECK(tf_sends[i].comp.status == FERRY_OK, "phase %u, send %u completed with %s", phase,
                 i, ferry_status_name(tf_sends[i].comp.status));
        ft_tbuf_free(&tf_sends[i].buf);
    }
    ft_progress_until_token(p->worker, p->chan, TF_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
    tf_counters(p->worker, &after);

    uint64_t count_max = tf_env_size("FERRY_TAG_UNEXPECTED_COUNT", 65536);
    uint64_t large_eager, large_rndv, small_eager, small_rndv;
    tf_modes(&after, &before, TF_LARGE, &large_eager, &large_rndv);
    tf_modes(&after, &before, TF_SMALL, &small_eager, &small_rndv);
    ft_note("phase %u: %u messages streamed in %.1f ms; sent eagerly / by rendezvous: 4 KiB "
            "%llu / %llu, 8 B %llu / %llu",
            phase, n, (double)(ft_now_ns() - t0) / 1e6, (unsigned long long)large_eager,
            (unsigned long long)large_rndv, (unsigned long long)small_eager,
            (unsigned long long)small_rndv);
    if (phase == 1) {
        FT_CHECK(large_eager > 0 && large_rndv > 0,
                 "phase 1: 4 KiB messages went %llu eagerly and %llu by rendezvous: the "
                 "receiver never restricted the sender, or did from the start",
                 (unsigned long long)large_eager, (unsigned long long)large_rndv);
    }
    if (count_max >= n) /* the count bound cannot be crossed: small messages stay eager */
        FT_CHECK(small_rndv == 0, "phase %u: %llu messages of 8 bytes went by rendezvous", phase,
                 (unsigned long long)small_rndv);
    else if (phase == 2)
        FT_CHECK(small_rndv > 0, "phase 2: the count bound %llu was never enforced",
                 (unsigned long long)count_max);
}

static void tf_recv_phase(ft_pair_t *p, unsigned phase, unsigned n)
{
    ferry_counters_t c;
    ft_chan_send_token(p->chan, TF_TOKEN_READY, 0, 0, 0, 0);
    /* progress (the arrivals pile up as unexpected messages) until everything was sent */
    ft_progress_until_token(p->worker, p->chan, TF_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
    char what[96];
    for (unsigned i = 0; i < n; i++) {
        ft_tag_recv_t r;
        size_t size = tf_size(phase, i);
        snprintf(what, sizeof(what), "phase %u, receive %u of %u (one tag)", phase, i, n);
        ft_tag_recv_init(&r, FT_SHAPE_CONTIG, size);
        ft_tag_recv_post(p->worker, &r, tf_wire_tag(phase), UINT64_MAX);
        ft_tag_recv_wait(p->worker, &r);
        FT_CHECK(r.status == FERRY_OK && r.info.tag == tf_wire_tag(phase) && r.info.length == size,
                 "%s: %s, tag 0x%llx, %zu bytes (expected %zu: a message lost or out of order)",
                 what, ferry_status_name(r.status), (unsigned long long)r.info.tag, r.info.length,
                 size);
        ft_tbuf_check(&r.buf, TF_A, tf_pattern_tag(phase, i), size, what);
        ft_tag_recv_free(&r);
    }
    /* nothing else arrived */
    ferry_tag_info_t info;
    ferry_status_t status = ferry_tag_probe(p->worker, 0, 0, 0, &info, NULL);
    FT_CHECK(status == FERRY_ERR_NO_ELEM, "phase %u: a message beyond the stream: %s", phase,
             ferry_status_name(status));
    tf_counters(p->worker, &c);
    uint64_t bytes_max = tf_env_size("FERRY_TAG_UNEXPECTED_MAX", 512u << 10);
    uint64_t count_max = tf_env_size("FERRY_TAG_UNEXPECTED_COUNT", 65536);
    ft_note("phase %u: receiver's backlog peaks: %llu messages, %llu bytes of the larger ones "
            "(bounds %llu, %llu); senders restricted %llu times so far",
            phase, (unsigned long long)c.tag_unexpected_peak_count,
            (unsigned long long)c.tag_unexpected_peak_bytes, (unsigned long long)count_max,
            (unsigned long long)bytes_max, (unsigned long long)c.tag_flow_limited);
    FT_CHECK(c.tag_unexpected_peak_bytes <= bytes_max + TF_SLACK_BYTES,
             "phase %u: %llu bytes of unexpected messages buffered at once, bound %llu + slack "
             "%llu",
             phase, (unsigned long long)c.tag_unexpected_peak_bytes, (unsigned long long)bytes_max,
             (unsigned long long)TF_SLACK_BYTES);
    FT_CHECK(c.tag_unexpected_peak_count <= count_max + TF_SLACK_COUNT,
             "phase %u: %llu unexpected messages buffered at once, bound %llu + slack %u", phase,
             (unsigned long long)c.tag_unexpected_peak_count, (unsigned long long)count_max,
             TF_SLACK_COUNT);
    FT_CHECK(c.tag_flow_limited > 0, "phase %u: the receiver never restricted its sender", phase);
    ft_chan_send_token(p->chan, TF_TOKEN_DONE, 0, 0, 0, 0);
}

static void tf_warm_up(ft_pair_t *p)
{
    const uint64_t tag = tf_wire_tag(0);
    if (p->self == TF_A) {
        ferry_tag_send_params_t params = {.flags = FERRY_TAG_SEND_SYNC};
        ft_tag_send_start_ext(p->worker, p->ep, &tf_sends[0], TF_A, tag, TF_SMALL, FT_SHAPE_CONTIG,
                              &params);
        ft_tag_send_wait(p->worker, &tf_sends[0], FERRY_OK);
        return;
    }
    ft_tag_recv_t r;
    ft_tag_recv_init(&r, FT_SHAPE_CONTIG, TF_SMALL);
    ft_tag_recv_post(p->worker, &r, tag, UINT64_MAX);
    ft_tag_recv_wait(p->worker, &r);
    ft_tag_recv_check(&r, TF_A, tag, TF_SMALL, "the synchronous warm-up message");
    ft_tag_recv_free(&r);
}

static void tf_pair(ft_pair_t *p, void *arg)
{
    (void)arg;
    tf_sends = calloc(TF_SMALL_N, sizeof(*tf_sends));
    FT_CHECK(tf_sends != NULL, "calloc of %u sends", TF_SMALL_N);
    tf_warm_up(p);
    if (p->self == TF_A) {
        tf_send_phase(p, 1, TF_MIXED_N);
        tf_send_phase(p, 2, TF_SMALL_N);
    } else {
        tf_recv_phase(p, 1, TF_MIXED_N);
        tf_recv_phase(p, 2, TF_SMALL_N);
    }
    free(tf_sends);
    ft_files_check_self();
}

int main(void)
{
    ft_watchdog(110);
    double seconds = ft_pair_run(tf_pair, NULL);
    ft_note("passed in %.2f s", seconds);
    return 0;
}
