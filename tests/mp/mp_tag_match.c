/* Tag matching between processes: masks, order, wildcards, probe, cancel, truncation.
 *
 * This process ("r") receives; three forked senders ("s1", "s2", "s3") send what it asks for
 * over their channels. Every message's bytes are the pattern of (sender, tag, size), checked to
 * the byte with guard bytes around every receive piece.
 *   1. interleaved tags: s1 sends 1 000 messages (sizes 0 .. 24 999, eager and rendezvous mixed)
 *      whose tags fall into 5 classes in a scrambled order, then a marker. Class 2 is received
 *      by receives posted before the messages were sent; once the marker is there (so every
 *      message has arrived), class 3 is probed (twice, without remove: the first of the class)
 *      and received with a class mask, class 1 is taken with probe(remove) and
 *      ferry_tag_message_recv, and the rest with wildcard receives. Within each of these groups
 *      the messages must come in the order s1 sent them; every message is received exactly
 *      once. A receive for a class nobody sends is posted throughout and canceled at the end.
 *   2. wildcard from 3 senders: 900 receives with mask 0 (half posted before the senders start,
 *      half while their messages arrive), 300 messages from each sender; every message is
 *      received exactly once, with the right tag, length and bytes, the senders' messages in
 *      the order they sent them, and info.sender the same endpoint for all messages of one
 *      sender and a different one for each sender.
 *   3. cancel: a posted receive canceled completes with FERRY_ERR_CANCELED (from progress, not
 *      inside the call), its buffer untouched, a second cancel says FERRY_ERR_NO_ELEM; the
 *      message it would have matched goes to the next receive (eager and rendezvous); a
 *      canceled wildcard receive takes nothing.
 *   4. truncation: eager and rendezvous messages (up to 40 MiB: more than one GET section) into
 *      shorter receives (0 bytes, cut inside a piece), posted, unexpected and probed: status
 *      FERRY_ERR_MESSAGE_TRUNCATED, info.length the real length, the first bytes right, nothing
 *      written past the buffer, the sender completes normally, the next message is intact.
 *   5. probe(remove) of a rendezvous message: a later wildcard receive takes the next message,
 *      not the probed one; ferry_tag_message_recv then receives the probed one.
 * Registered for every FERRY_RNDV_MODE, and with a small FERRY_TAG_UNEXPECTED_MAX and
 * FERRY_TAG_UNEXPECTED_COUNT (senders are switched to rendezvous mid-stream, for the larger
 * messages and for all: the order must hold across the switches), and with FERRY_RNDV_THRESH=0
 * (every message of a byte or more a rendezvous; those within the inject bound return FERRY_OK
 * at once and need the sender's progress later). Between commands the senders sleep on their
 * channel and their worker's fd together (ft_wait_chan_recv), as an application's event loop
 * would: the receiver's CTS for such a send must wake them. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_tag.h"

#define TM_SENDERS 3
#define TM_N1 1000
#define TM_N2 300
#define TM_CAP1 25000
#define TM_CAP2 40000
#define TM_MIB ((size_t)1 << 20)

enum {
    TM_TOKEN_PHASE1 = 0x50483101,
    TM_TOKEN_WILD = 0x57494c44,
    TM_TOKEN_SEND = 0x53454e44, /* v0 tag, v1 size, v2 second tag (0: none), v3 its size */
    TM_TOKEN_EXIT = 0x45584954,
    TM_TOKEN_SENT = 0x53454e54,
    TM_TOKEN_DONE = 0x444f4e45, /* v0, v1: final statuses of the sends (+ 1000) */
};

/* tag: phase [63:56], sender [55:48], class [39:32], sequence [31:0] */
#define TM_PHASE(p) ((uint64_t)(p) << 56)
#define TM_SENDER(s) ((uint64_t)(s) << 48)
#define TM_CLASS(c) ((uint64_t)(c) << 32)
#define TM_CLASS_MASK (TM_PHASE(0xff) | TM_CLASS(0xff))
#define TM_MARKER_CLASS 7
#define TM_NEVER_CLASS 6

static unsigned tm_class(unsigned i)
{
    uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull;
    z ^= z >> 29;
    return (unsigned)(z % 5);
}

static size_t tm_size1(unsigned i)
{
    return i % 41 == 5 ? 5000 + (i * 131u) % 20000 : (i * 97u) % 700;
}

static uint64_t tm_tag1(unsigned i)
{
    return TM_PHASE(1) | TM_SENDER(1) | TM_CLASS(tm_class(i)) | i;
}

static uint64_t tm_marker_tag(void)
{
    return TM_PHASE(1) | TM_SENDER(1) | TM_CLASS(TM_MARKER_CLASS) | 0xffffu;
}

static size_t tm_size2(unsigned sender, unsigned j)
{
    return j % 23 == 4 ? 9000 + (j * sender * 37u) % 30000 : (j * 13u + sender * 101u) % 1500;
}

static uint64_t tm_tag2(unsigned sender, unsigned j)
{
    return TM_PHASE(2) | TM_SENDER(sender) | j;
}

/* ------------------------------------------------------------------ senders */

typedef struct tm_sender {
    unsigned id; /* 1..3 */
    ferry_worker_t *worker;
    ferry_ep_t *ep;
    int chan;
} tm_sender_t;

/* Start every message of a batch, say SENT, wait for all completions, say DONE. */
static void tm_send_batch(tm_sender_t *s, ft_tag_send_t *sends, size_t n, const uint64_t *tags,
                          const size_t *sizes)
{
    for (size_t i = 0; i < n; i++)
        ft_tag_send_start(s->worker, s->ep, &sends[i], s->id, tags[i], sizes[i],
                          i % 3 == 1 ? FT_SHAPE_UNEVEN3 : FT_SHAPE_CONTIG);
    ft_chan_send_token(s->chan, TM_TOKEN_SENT, n, 0, 0, 0);
    for (size_t i = 0; i < n; i++)
        ft_tag_send_wait(s->worker, &sends[i], FERRY_OK);
    ft_chan_send_token(s->chan, TM_TOKEN_DONE, FERRY_OK + 1000, FERRY_OK + 1000, 0, 0);
}

static int tm_sender_role(int chan, void *arg)
{
    tm_sender_t s = {.id = (unsigned)(uintptr_t)arg, .chan = chan};
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    s.worker = f.worker;
    ft_send_address(chan, f.worker);
    size_t length = ft_recv_address(chan, address, sizeof(address), FT_TAG_TIMEOUT);
    s.ep = ft_ep_create(f.worker, address, length, NULL);

    static ft_tag_send_t sends[TM_N1 + 1];
    static uint64_t tags[TM_N1 + 1];
    static size_t sizes[TM_N1 + 1];
    for (;;) {
        ft_token_t t;
        /* progressing: a send of the last batch that completed at once may still need us */
        size_t n = ft_wait_chan_recv(s.worker, chan, &t, sizeof(t), 4 * FT_TAG_TIMEOUT);
        FT_CHECK(n == sizeof(t), "a %zu-byte channel message", n);
        switch (t.tag) {
        case TM_TOKEN_PHASE1:
            for (unsigned i = 0; i < TM_N1; i++) {
                tags[i] = tm_tag1(i);
                sizes[i] = tm_size1(i);
            }
            tags[TM_N1] = tm_marker_tag();
            sizes[TM_N1] = 10;
            tm_send_batch(&s, sends, TM_N1 + 1, tags, sizes);
            break;
        case TM_TOKEN_WILD:
            for (unsigned j = 0; j < TM_N2; j++) {
                tags[j] = tm_tag2(s.id, j);
                sizes[j] = tm_size2(s.id, j);
            }
            tm_send_batch(&s, sends, TM_N2, tags, sizes);
            break;
        case TM_TOKEN_SEND:
            tags[0] = t.v[0];
            sizes[0] = (size_t)t.v[1];
            tags[1] = t.v[2];
            sizes[1] = (size_t)t.v[3];
            tm_send_batch(&s, sends, t.v[2] != 0 ? 2 : 1, tags, sizes);
            break;
        case TM_TOKEN_EXIT:
            ferry_ep_destroy(s.ep);
            ft_ferry_fini(&f);
            return 0;
        default:
            FT_CHECK(false, "unknown command 0x%x", t.tag);
        }
    }
}

/* ------------------------------------------------------------------ the receiver */

static ferry_worker_t *tm_w;
static ft_peer_t tm_peers[TM_SENDERS + 1];       /* [1..3] */
static ferry_ep_t *tm_sender_ep[TM_SENDERS + 1]; /* what receives said about each sender */

static void tm_check_sender_ep(unsigned sender, ferry_ep_t *ep, const char *what)
{
    FT_CHECK(ep != NULL, "%s: info.sender is NULL", what);
    if (tm_sender_ep[sender] == NULL) {
        for (unsigned k = 1; k <= TM_SENDERS; k++)
            FT_CHECK(tm_sender_ep[k] != ep,
                     "%s: info.sender %p of s%u is already the endpoint of s%u", what, (void *)ep,
                     sender, k);
        tm_sender_ep[sender] = ep;
    }
    FT_CHECK(tm_sender_ep[sender] == ep, "%s: info.sender %p, earlier messages of s%u came from %p",
             what, (void *)ep, sender, (void *)tm_sender_ep[sender]);
}

/* Wait for a sender's DONE (progressing: its rendezvous need us); check its sends' statuses. */
static void tm_expect_done(unsigned sender)
{
    ft_token_t t;
    ft_progress_until_token(tm_w, tm_peers[sender].chan, TM_TOKEN_DONE, FT_TAG_TIMEOUT, &t);
    FT_CHECK(t.v[0] == FERRY_OK + 1000 && t.v[1] == FERRY_OK + 1000,
             "s%u's sends completed with %d and %d", sender, (int)t.v[0] - 1000,
             (int)t.v[1] - 1000);
}

static void tm_command(unsigned sender, uint32_t token, uint64_t v0, uint64_t v1, uint64_t v2,
                       uint64_t v3)
{
    ft_chan_send_token(tm_peers[sender].chan, token, v0, v1, v2, v3);
}

static void tm_expect_sent(unsigned sender)
{
    ft_progress_until_token(tm_w, tm_peers[sender].chan, TM_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
}

static bool tm_all_done(void *arg)
{
    ft_tag_recv_t **set = arg;
    for (size_t i = 0; set[i] != NULL; i++)
        if (!ft_tag_recv_poll(set[i]))
            return false;
    return true;
}

/* A list of receives, NULL-terminated, all complete. */
static void tm_wait_all(ft_tag_recv_t **set, const char *what)
{
    ft_progress_until(tm_w, FT_TAG_TIMEOUT, tm_all_done, set, what);
}

/* --- 1. interleaved tags */

static void tm_phase1(void)
{
    static ft_tag_recv_t recvs[TM_N1 + 1];
    static ft_tag_recv_t *set[TM_N1 + 2];
    unsigned char got[TM_N1] = {0};
    unsigned idx[5][TM_N1], count[5] = {0};
    size_t nrecv = 0;
    char what[160];

    for (unsigned i = 0; i < TM_N1; i++) {
        unsigned c = tm_class(i);
        idx[c][count[c]++] = i;
    }
    FT_CHECK(count[0] && count[1] && count[2] && count[3] && count[4], "a class is empty");

    /* class 2: posted before anything is sent */
    ft_tag_recv_t never;
    ft_tag_recv_init(&never, FT_SHAPE_CONTIG, 64);
    ft_tag_recv_post(tm_w, &never, TM_PHASE(1) | TM_CLASS(TM_NEVER_CLASS), TM_CLASS_MASK);
    for (unsigned k = 0; k < count[2]; k++) {
        ft_tag_recv_t *r = &recvs[nrecv++];
        ft_tag_recv_init(r, k % 2 ? FT_SHAPE_SEVEN : FT_SHAPE_CONTIG, TM_CAP1);
        ft_tag_recv_post(tm_w, r, TM_PHASE(1) | TM_CLASS(2), TM_CLASS_MASK);
        FT_CHECK(!r->done, "a class-2 receive completed before anything was sent");
    }
    tm_command(1, TM_TOKEN_PHASE1, 0, 0, 0, 0);
    tm_expect_sent(1);
    /* messages of one sender arrive in order: with the marker, all are here */
    ferry_tag_info_t info = ft_tag_probe_until(tm_w, tm_marker_tag(), UINT64_MAX);
    FT_CHECK(info.length == 10, "the marker: %zu bytes", info.length);
    for (unsigned k = 0; k < count[2]; k++)
        set[k] = &recvs[k];
    set[count[2]] = NULL;
    tm_wait_all(set, "the class-2 receives posted before the messages were sent");
    for (unsigned k = 0; k < count[2]; k++) {
        unsigned i = idx[2][k];
        snprintf(what, sizeof(what), "class-2 receive %u of %u (posted first): message %u", k,
                 count[2], i);
        ft_tag_recv_check(&recvs[k], 1, tm_tag1(i), tm_size1(i), what);
        tm_check_sender_ep(1, recvs[k].info.sender, what);
        got[i]++;
    }

    /* class 3: a probe without remove names the first of the class, twice */
    for (int twice = 0; twice < 2; twice++) {
        FT_CHECK_OK(
            ferry_tag_probe(tm_w, TM_PHASE(1) | TM_CLASS(3), TM_CLASS_MASK, 0, &info, NULL));
        unsigned i = idx[3][0];
        FT_CHECK(info.tag == tm_tag1(i) && info.length == tm_size1(i) &&
                     info.sender == tm_sender_ep[1],
                 "probe of class 3: tag 0x%llx, %zu bytes, sender %p; expected message %u "
                 "(tag 0x%llx, %zu bytes, sender %p)",
                 (unsigned long long)info.tag, info.length, (void *)info.sender, i,
                 (unsigned long long)tm_tag1(i), tm_size1(i), (void *)tm_sender_ep[1]);
    }
    size_t first = nrecv;
    for (unsigned k = 0; k < count[3]; k++) {
        ft_tag_recv_t *r = &recvs[nrecv++];
        ft_tag_recv_init(r, k % 3 == 0 ? FT_SHAPE_UNEVEN3 : FT_SHAPE_CONTIG, TM_CAP1);
        ft_tag_recv_post(tm_w, r, TM_PHASE(1) | TM_SENDER(1) | TM_CLASS(3) | 12345, TM_CLASS_MASK);
        set[k] = r;
    }
    set[count[3]] = NULL;
    tm_wait_all(set, "the class-3 receives");
    for (unsigned k = 0; k < count[3]; k++) {
        unsigned i = idx[3][k];
        snprintf(what, sizeof(what), "class-3 receive %u of %u (masked, unexpected): message %u", k,
                 count[3], i);
        ft_tag_recv_check(&recvs[first + k], 1, tm_tag1(i), tm_size1(i), what);
        tm_check_sender_ep(1, recvs[first + k].info.sender, what);
        got[i]++;
    }

    /* class 1: probe(remove) and ferry_tag_message_recv, one at a time */
    for (unsigned k = 0;; k++) {
        ferry_tag_message_t *msg = NULL;
        ferry_status_t status =
            ferry_tag_probe(tm_w, TM_PHASE(1) | TM_CLASS(1), TM_CLASS_MASK, 1, &info, &msg);
        if (status == FERRY_ERR_NO_ELEM) {
            FT_CHECK(k == count[1], "probe(remove) found %u class-1 messages, %u were sent", k,
                     count[1]);
            break;
        }
        FT_CHECK_OK(status);
        FT_CHECK(k < count[1], "more class-1 messages than sent");
        unsigned i = idx[1][k];
        snprintf(what, sizeof(what), "class-1 message %u of %u (probed): message %u", k, count[1],
                 i);
        FT_CHECK(info.tag == tm_tag1(i) && info.length == tm_size1(i),
                 "%s: probe says tag 0x%llx, %zu bytes", what, (unsigned long long)info.tag,
                 info.length);
        ft_tag_recv_t *r = &recvs[nrecv++];
        ft_tag_recv_init(r, k % 2 ? FT_SHAPE_ZEROS : FT_SHAPE_SEVEN, tm_size1(i) + k % 5);
        ft_tag_recv_message(tm_w, r, msg);
        ft_tag_recv_wait(tm_w, r);
        ft_tag_recv_check(r, 1, tm_tag1(i), tm_size1(i), what);
        tm_check_sender_ep(1, r->info.sender, what);
        got[i]++;
    }

    /* the rest (classes 0 and 4, then the marker): wildcard receives, in the order sent */
    unsigned rest = count[0] + count[4] + 1;
    first = nrecv;
    for (unsigned k = 0; k < rest; k++) {
        ft_tag_recv_t *r = &recvs[nrecv++];
        ft_tag_recv_init(r, FT_SHAPE_CONTIG, TM_CAP1);
        ft_tag_recv_post(tm_w, r, 0, 0);
        set[k] = r;
    }
    set[rest] = NULL;
    tm_wait_all(set, "the wildcard receives of phase 1");
    unsigned k0 = 0, k4 = 0;
    for (unsigned k = 0; k < rest; k++) {
        ft_tag_recv_t *r = &recvs[first + k];
        if (k + 1 == rest) {
            ft_tag_recv_check(r, 1, tm_marker_tag(), 10, "the marker (the last wildcard receive)");
            break;
        }
        /* the next of classes 0 and 4 in send order */
        unsigned i;
        if (k4 == count[4] || (k0 < count[0] && idx[0][k0] < idx[4][k4]))
            i = idx[0][k0++];
        else
            i = idx[4][k4++];
        snprintf(what, sizeof(what), "wildcard receive %u of %u: message %u", k, rest, i);
        ft_tag_recv_check(r, 1, tm_tag1(i), tm_size1(i), what);
        tm_check_sender_ep(1, r->info.sender, what);
        got[i]++;
    }
    for (unsigned i = 0; i < TM_N1; i++)
        FT_CHECK(got[i] == 1, "message %u was received %u times", i, got[i]);
    FT_CHECK_STATUS(ferry_tag_probe(tm_w, 0, 0, 0, &info, NULL), FERRY_ERR_NO_ELEM);
    tm_expect_done(1);

    /* the receive nobody sent to is still posted: cancel it */
    FT_CHECK(!ft_tag_recv_poll(&never), "the receive for class 6 completed with %s",
             ferry_status_name(never.status));
    FT_CHECK_OK(ferry_tag_recv_cancel(tm_w, &never.comp));
    ft_tag_recv_wait(tm_w, &never);
    FT_CHECK(never.status == FERRY_ERR_CANCELED, "the canceled receive completed with %s",
             ferry_status_name(never.status));
    ft_tbuf_check_prefix(&never.buf, 0, 0, "the canceled receive for class 6");
    ft_tag_recv_free(&never);
    for (size_t i = 0; i < nrecv; i++)
        ft_tag_recv_free(&recvs[i]);
    ft_note("1. 1000 interleaved tags: class 2 posted first, class 3 masked, class 1 probed, "
            "the rest wildcard (sizes %zu, %zu, %zu, %zu, %zu): ok",
            (size_t)count[0], (size_t)count[1], (size_t)count[2], (size_t)count[3],
            (size_t)count[4]);
}

/* --- 2. wildcard from 3 senders */

static void tm_phase2(void)
{
    enum { TOTAL = TM_SENDERS * TM_N2 };
    static ft_tag_recv_t recvs[TOTAL];
    static ft_tag_recv_t *set[TOTAL + 1];
    unsigned next[TM_SENDERS + 1] = {0};
    char what[160];
    ferry_ep_t *before[TM_SENDERS + 1];
    memcpy(before, tm_sender_ep, sizeof(before));

    for (size_t k = 0; k < TOTAL; k++) {
        ft_tag_recv_init(&recvs[k], k % 4 == 3 ? FT_SHAPE_SEVEN : FT_SHAPE_CONTIG, TM_CAP2);
        set[k] = &recvs[k];
    }
    set[TOTAL] = NULL;
    for (size_t k = 0; k < TOTAL / 2; k++)
        ft_tag_recv_post(tm_w, &recvs[k], 0, 0);
    for (unsigned s = 1; s <= TM_SENDERS; s++)
        tm_command(s, TM_TOKEN_WILD, 0, 0, 0, 0);
    /* the other half while the messages arrive: some find them waiting, some wait for them */
    for (size_t k = TOTAL / 2; k < TOTAL; k++) {
        for (int spin = 0; spin < 8; spin++)
            ft_progress_once(tm_w);
        ft_tag_recv_post(tm_w, &recvs[k], 0, 0);
    }
    tm_wait_all(set, "900 wildcard receives");
    for (unsigned s = 1; s <= TM_SENDERS; s++) {
        tm_expect_sent(s);
        tm_expect_done(s);
    }
    /* in the order posted: each sender's messages come in the order it sent them */
    for (size_t k = 0; k < TOTAL; k++) {
        ft_tag_recv_t *r = &recvs[k];
        FT_CHECK(r->done && r->status == FERRY_OK, "wildcard receive %zu: %s", k,
                 ferry_status_name(r->status));
        unsigned s = (unsigned)((r->info.tag >> 48) & 0xff);
        FT_CHECK(s >= 1 && s <= TM_SENDERS && (r->info.tag >> 56) == 2,
                 "wildcard receive %zu got tag 0x%llx", k, (unsigned long long)r->info.tag);
        unsigned j = next[s]++;
        snprintf(what, sizeof(what), "wildcard receive %zu: message %u of s%u", k, j, s);
        ft_tag_recv_check(r, s, tm_tag2(s, j), tm_size2(s, j), what);
        if (s == 1 && before[1] != NULL)
            FT_CHECK(r->info.sender == before[1], "%s: s1's endpoint changed", what);
        tm_check_sender_ep(s, r->info.sender, what);
    }
    for (unsigned s = 1; s <= TM_SENDERS; s++)
        FT_CHECK(next[s] == TM_N2, "s%u: %u messages received, %u sent", s, next[s], TM_N2);
    ferry_tag_info_t info;
    FT_CHECK_STATUS(ferry_tag_probe(tm_w, 0, 0, 0, &info, NULL), FERRY_ERR_NO_ELEM);
    for (size_t k = 0; k < TOTAL; k++)
        ft_tag_recv_free(&recvs[k]);
    ft_note("2. wildcard receives from 3 senders: 900 messages, each once, in each sender's "
            "order, 3 distinct sender endpoints: ok");
}

/* --- 3. cancel */

static void tm_cancel_one(ft_tag_recv_t *r, const char *what)
{
    FT_CHECK(!ft_tag_recv_poll(r), "%s: completed before it was canceled", what);
    FT_CHECK_OK(ferry_tag_recv_cancel(tm_w, &r->comp));
    FT_CHECK(r->comp.count == 1, "%s: the cancel completed inside the call", what);
    ft_tag_recv_wait(tm_w, r);
    FT_CHECK(r->status == FERRY_ERR_CANCELED, "%s completed with %s", what,
             ferry_status_name(r->status));
    FT_CHECK_STATUS(ferry_tag_recv_cancel(tm_w, &r->comp), FERRY_ERR_NO_ELEM);
    ft_tbuf_check_prefix(&r->buf, 0, 0, what);
}

static void tm_phase3(void)
{
    const uint64_t t1 = TM_PHASE(3) | 1, t2 = TM_PHASE(3) | 2, t3 = TM_PHASE(3) | 3;
    ft_tag_recv_t a, b, c, d, w, x;

    /* eager: A and B wait for t1; A is canceled; the message goes to B */
    ft_tag_recv_init(&a, FT_SHAPE_CONTIG, 200000);
    ft_tag_recv_init(&b, FT_SHAPE_SEVEN, 200000);
    ft_tag_recv_post(tm_w, &a, t1, UINT64_MAX);
    ft_tag_recv_post(tm_w, &b, t1, UINT64_MAX);
    tm_cancel_one(&a, "receive A (eager, canceled)");
    tm_command(1, TM_TOKEN_SEND, t1, 100, 0, 0);
    tm_expect_sent(1);
    ft_tag_recv_wait(tm_w, &b);
    ft_tag_recv_check(&b, 1, t1, 100, "receive B, after A was canceled");
    tm_expect_done(1);
    ft_tbuf_check_prefix(&a.buf, 0, 0, "canceled receive A, after the message went to B");
    FT_CHECK_STATUS(ferry_tag_recv_cancel(tm_w, &b.comp), FERRY_ERR_NO_ELEM);

    /* rendezvous: C canceled, then D posted; the message goes to D */
    ft_tag_recv_init(&c, FT_SHAPE_UNEVEN3, 200000);
    ft_tag_recv_init(&d, FT_SHAPE_CONTIG, 200000);
    ft_tag_recv_post(tm_w, &c, t2, UINT64_MAX);
    tm_cancel_one(&c, "receive C (rendezvous, canceled)");
    ft_tag_recv_post(tm_w, &d, t2, UINT64_MAX);
    tm_command(2, TM_TOKEN_SEND, t2, 150000, 0, 0);
    tm_expect_sent(2);
    ft_tag_recv_wait(tm_w, &d);
    ft_tag_recv_check(&d, 2, t2, 150000, "receive D, after C was canceled");
    tm_expect_done(2);
    ft_tbuf_check_prefix(&c.buf, 0, 0, "canceled receive C, after the message went to D");
    FT_CHECK_STATUS(ferry_tag_recv_cancel(tm_w, &d.comp), FERRY_ERR_NO_ELEM);

    /* a canceled wildcard receive takes nothing: the messages wait for the next receives */
    ft_tag_recv_init(&w, FT_SHAPE_CONTIG, 200000);
    ft_tag_recv_post(tm_w, &w, 0, 0);
    tm_cancel_one(&w, "wildcard receive W (canceled)");
    tm_command(3, TM_TOKEN_SEND, t3, 50, t3 + 1, 120000);
    tm_expect_sent(3);
    ferry_tag_info_t info = ft_tag_probe_until(tm_w, t3 + 1, UINT64_MAX);
    FT_CHECK(info.length == 120000, "probe: %zu bytes", info.length);
    ft_tag_recv_init(&x, FT_SHAPE_CONTIG, 200);
    ft_tag_recv_post(tm_w, &x, t3, UINT64_MAX);
    /* With a small FERRY_TAG_UNEXPECTED_MAX (mp_tag_match_unexpmax_*), the earlier phases' eager
     * messages (up to 32 KiB) may have switched sender 3 to rendezvous (EAGER_OFF), and it
     * handles the EAGER_ON only when it progresses again: it then sends even these 50 bytes as
     * an RTS, which no receive completes inside the call; so does every message of a byte or
     * more with FERRY_RNDV_THRESH=0 (mp_tag_match_thresh0_*). */
    if (!x.done &&
        (getenv("FERRY_TAG_UNEXPECTED_MAX") != NULL || getenv("FERRY_RNDV_THRESH") != NULL))
        ft_tag_recv_wait(tm_w, &x);
    FT_CHECK(x.done, "the unexpected eager message after a canceled wildcard receive was not "
                     "delivered by ferry_tag_recv itself");
    ft_tag_recv_check(&x, 3, t3, 50, "the message a canceled wildcard receive did not take");
    ft_tag_recv_free(&x);
    ft_tag_recv_init(&x, FT_SHAPE_SEVEN, 120000);
    ft_tag_recv_post(tm_w, &x, t3 + 1, UINT64_MAX);
    ft_tag_recv_wait(tm_w, &x);
    ft_tag_recv_check(&x, 3, t3 + 1, 120000, "the rendezvous after a canceled wildcard receive");
    tm_expect_done(3);
    ft_tbuf_check_prefix(&w.buf, 0, 0, "canceled wildcard receive W");

    ferry_completion_t stranger = {.cb = NULL, .count = 1, .status = FERRY_OK};
    FT_CHECK_STATUS(ferry_tag_recv_cancel(tm_w, &stranger), FERRY_ERR_NO_ELEM);
    ft_tag_recv_free(&a);
    ft_tag_recv_free(&b);
    ft_tag_recv_free(&c);
    ft_tag_recv_free(&d);
    ft_tag_recv_free(&w);
    ft_tag_recv_free(&x);
    ft_note("3. cancel: posted eager and rendezvous receives, a wildcard receive: ok");
}

/* --- 4. truncation */

typedef struct tm_trunc {
    size_t size;
    size_t capacity;
    ft_shape_t shape;
    int order; /* 0 posted, 1 unexpected, 2 probed */
    size_t next_size;
} tm_trunc_t;

static void tm_phase4(void)
{
    static const tm_trunc_t cases[] = {
        {3000, 1000, FT_SHAPE_CONTIG, 0, 777},
        {3000, 1000, FT_SHAPE_SEVEN, 1, 50000},
        {4080, 0, FT_SHAPE_CONTIG, 1, 777},
        {1, 0, FT_SHAPE_CONTIG, 0, 0},
        {4000, 3999, FT_SHAPE_UNEVEN3, 2, 60000},
        {100000, 70001, FT_SHAPE_UNEVEN3, 0, 777},
        {100000, 70001, FT_SHAPE_SEVEN, 1, 65536},
        {100000, 99999, FT_SHAPE_ZEROS, 2, 3},
        /* shm's eager messages in fragments: a contiguous receive too short to place into, then
         * one that is placed (131072 bytes into 131082) */
        {131072, 131071, FT_SHAPE_CONTIG, 0, 131072},
        {120000, 70000, FT_SHAPE_CONTIG, 1, 65537},
        {TM_MIB, 0, FT_SHAPE_CONTIG, 0, 777},
        {TM_MIB + 3, TM_MIB, FT_SHAPE_SEVEN, 2, 2 * TM_MIB},
        {TM_MIB, 4096, FT_SHAPE_CONTIG, 1, 4096},
        {40 * TM_MIB, 36 * TM_MIB + 1, FT_SHAPE_SEVEN, 0, 777},
        {40 * TM_MIB + 1, 33 * TM_MIB, FT_SHAPE_UNEVEN3, 1, 100000},
    };
    static const char *const orders[] = {"posted", "unexpected", "probed"};
    char what[200];

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const tm_trunc_t *c = &cases[k];
        uint64_t tag = TM_PHASE(4) | (k << 8), next = tag | 1;
        ft_tag_recv_t r, n;
        snprintf(what, sizeof(what), "truncation %zu (%zu bytes into %zu, %s, %s)", k, c->size,
                 c->capacity, ft_shape_name(c->shape), orders[c->order]);
        ft_tag_recv_init(&r, c->shape, c->capacity);
        ft_tag_recv_init(&n, FT_SHAPE_CONTIG, c->next_size + 10);
        if (c->order == 0) {
            ft_tag_recv_post(tm_w, &r, tag, UINT64_MAX);
            tm_command(1, TM_TOKEN_SEND, tag, c->size, next, c->next_size);
            tm_expect_sent(1);
        } else {
            tm_command(1, TM_TOKEN_SEND, tag, c->size, next, c->next_size);
            tm_expect_sent(1);
            ft_tag_probe_until(tm_w, next, UINT64_MAX); /* both are here */
            if (c->order == 1) {
                ft_tag_recv_post(tm_w, &r, tag, UINT64_MAX);
            } else {
                ferry_tag_message_t *msg = NULL;
                ferry_tag_info_t info;
                FT_CHECK_OK(ferry_tag_probe(tm_w, tag, UINT64_MAX, 1, &info, &msg));
                FT_CHECK(info.length == c->size, "%s: probe says %zu bytes", what, info.length);
                ft_tag_recv_message(tm_w, &r, msg);
            }
        }
        ft_tag_recv_wait(tm_w, &r);
        ft_tag_recv_check(&r, 1, tag, c->size, what); /* TRUNCATED, real length, no overrun */
        /* the next message, whatever its tag, is intact */
        ft_tag_recv_post(tm_w, &n, 0, 0);
        ft_tag_recv_wait(tm_w, &n);
        snprintf(what, sizeof(what), "the message after truncation %zu", k);
        ft_tag_recv_check(&n, 1, next, c->next_size, what);
        tm_expect_done(1); /* the sender of a truncated message completes normally */
        ft_tag_recv_free(&r);
        ft_tag_recv_free(&n);
    }
    ft_note("4. truncation: %zu cases (eager and rendezvous, posted, unexpected, probed, up to "
            "40 MiB): ok",
            sizeof(cases) / sizeof(cases[0]));
}

/* --- 5. probe(remove) of a rendezvous message */

static void tm_phase5(void)
{
    const uint64_t big = TM_PHASE(5) | 1, small = TM_PHASE(5) | 2;
    ft_tag_recv_t w, r;
    ferry_tag_message_t *msg = NULL;
    ferry_tag_info_t info;

    tm_command(2, TM_TOKEN_SEND, big, 200000, small, 100);
    tm_expect_sent(2);
    ft_tag_probe_until(tm_w, small, UINT64_MAX);
    FT_CHECK_OK(ferry_tag_probe(tm_w, 0, 0, 0, &info, NULL));
    FT_CHECK(info.tag == big && info.length == 200000 && info.sender == tm_sender_ep[2],
             "a wildcard probe: tag 0x%llx, %zu bytes, sender %p (s2: %p)",
             (unsigned long long)info.tag, info.length, (void *)info.sender,
             (void *)tm_sender_ep[2]);
    FT_CHECK_OK(ferry_tag_probe(tm_w, 0, 0, 1, &info, &msg));
    FT_CHECK(info.tag == big && msg != NULL, "probe(remove) took tag 0x%llx",
             (unsigned long long)info.tag);
    /* a wildcard receive now takes the small one, not the probed one */
    ft_tag_recv_init(&w, FT_SHAPE_CONTIG, 300000);
    ft_tag_recv_post(tm_w, &w, 0, 0);
    ft_tag_recv_wait(tm_w, &w);
    ft_tag_recv_check(&w, 2, small, 100, "a wildcard receive after probe(remove)");
    ft_tag_recv_init(&r, FT_SHAPE_UNEVEN3, 200000);
    ft_tag_recv_message(tm_w, &r, msg);
    ft_tag_recv_wait(tm_w, &r);
    ft_tag_recv_check(&r, 2, big, 200000, "the probed rendezvous message");
    FT_CHECK(r.info.sender == tm_sender_ep[2], "the probed message's sender changed");
    tm_expect_done(2);
    ft_tag_recv_free(&w);
    ft_tag_recv_free(&r);
    ft_note("5. probe(remove) of a rendezvous message, then a wildcard receive: ok");
}

int main(void)
{
    ft_files_t before;
    ft_ferry_t f;
    uint8_t address[FT_CHAN_MSG_MAX];
    static const char *const names[] = {"", "s1", "s2", "s3"};

    ft_set_role("r");
    ft_watchdog(115);
    ft_files_snapshot(&before);
    for (unsigned s = 1; s <= TM_SENDERS; s++)
        ft_peer_spawn(&tm_peers[s], names[s], tm_sender_role, (void *)(uintptr_t)s);
    ft_ferry_init(&f, NULL, NULL);
    tm_w = f.worker;
    for (unsigned s = 1; s <= TM_SENDERS; s++) {
        ft_recv_address(tm_peers[s].chan, address, sizeof(address), FT_TAG_TIMEOUT);
        ft_send_address(tm_peers[s].chan, f.worker);
    }
    uint64_t start = ft_now_ns();
    tm_phase1();
    tm_phase2();
    tm_phase3();
    tm_phase4();
    tm_phase5();
    ft_files_check_self();
    for (unsigned s = 1; s <= TM_SENDERS; s++) {
        tm_command(s, TM_TOKEN_EXIT, 0, 0, 0, 0);
        ft_peer_expect_exit(&tm_peers[s], FT_TAG_TIMEOUT, 0);
    }
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed (rendezvous mode %s) in %.2f s", ft_tag_mode(),
            (double)(ft_now_ns() - start) / 1e9);
    return 0;
}
