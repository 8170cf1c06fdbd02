/* Tagged messages between two processes over shm, every byte checked.
 *
 * The parent (client) sends, a forked child (server) receives, both following one schedule:
 *   - sizes 0, 1, 4079..4081, 4095..4097 (both sides of the shm eager threshold, 4080), 4 KiB,
 *     64 KiB, 1 MiB, 64 MiB: once with the receive posted before the send, once arriving
 *     unexpected (the server sees it with ferry_tag_probe first, then receives it);
 *   - truncation: a receive shorter than the message (eager and rendezvous, posted and
 *     unexpected) gets its first bytes, FERRY_ERR_MESSAGE_TRUNCATED and the real length, nothing
 *     is written past it, and the next message (taken by a wildcard receive) is intact;
 *   - cancel of a posted receive, then the message it would have matched goes to a new one;
 *   - probe without and with remove, and ferry_tag_message_recv, for an eager and a rendezvous
 *     message sent out of the order they are received in;
 *   - iov shapes: the sender's and the receiver's pieces differ (3 uneven pieces, 5 pieces with
 *     empty ones, 1500 small pieces, 1100 receive pieces: more than one registration can hold);
 *   - the server sends back over the endpoint ferry accepted for it (rendezvous from that side).
 * Receive pieces sit in one allocation with guard bytes between them, all checked afterwards.
 * Registered again with FERRY_RNDV_MODE=get|put|coop|null (mp_tag_basic_<mode>). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

enum { TB_CLIENT = 1, TB_SERVER = 2 };
enum { TB_TOKEN_POSTED = 0x504f5354, TB_TOKEN_SENT = 0x53454e54, TB_TOKEN_DONE = 0x444f4e45 };

#define TB_GUARD 64 /* guard bytes around every receive piece */
#define TB_GUARD_BYTE 0xa5
#define TB_TIMEOUT 30000
#define TB_TAG_BASE 0x7a67000000000000ull

typedef enum tb_kind {
    TB_POSTED,       /* receive posted, then sent */
    TB_UNEXPECTED,   /* sent, seen by probe, then received */
    TB_TRUNC_POSTED, /* size into a cap-byte receive, posted first; then a wildcard receive */
    TB_TRUNC_UNEXP,  /* the same with both messages unexpected */
    TB_CANCEL,       /* a posted receive canceled; the message goes to the next receive */
    TB_PROBE,        /* two messages, received in the other order through probe(remove) */
    TB_REVERSE,      /* the server sends to the client over its accepted endpoint */
} tb_kind_t;

typedef enum tb_shape {
    TB_CONTIG,
    TB_UNEVEN3,  /* 1/7, 4/7, rest */
    TB_FIVE,     /* 1, 0, up to 1000, 0, rest */
    TB_MANY700,  /* pieces of 700 bytes */
    TB_MANY1100, /* 1100 pieces of equal size (+ the rest in the last) */
} tb_shape_t;

typedef struct tb_step {
    tb_kind_t kind;
    size_t size;  /* the (first) message */
    size_t size2; /* truncation: the receive's capacity; probe: the second (eager) message */
    tb_shape_t send_shape;
    tb_shape_t recv_shape;
} tb_step_t;

static const tb_step_t tb_steps[] = {
    {TB_POSTED, 0, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 1, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 4079, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 4080, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 4081, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 4095, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 4096, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 4097, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 65536, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 1u << 20, 0, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 64u << 20, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 0, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 1, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 300, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 4080, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 4081, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 4096, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 1u << 20, 0, TB_CONTIG, TB_CONTIG},
    {TB_UNEXPECTED, 64u << 20, 0, TB_CONTIG, TB_CONTIG},
    {TB_TRUNC_POSTED, 100, 50, TB_CONTIG, TB_CONTIG},
    {TB_TRUNC_POSTED, 1u << 20, 300000, TB_CONTIG, TB_CONTIG},
    {TB_TRUNC_POSTED, 1u << 20, 0, TB_CONTIG, TB_CONTIG},
    {TB_TRUNC_UNEXP, 3000, 1000, TB_CONTIG, TB_UNEVEN3},
    {TB_TRUNC_UNEXP, 200000, 70001, TB_UNEVEN3, TB_FIVE},
    {TB_CANCEL, 100, 0, TB_CONTIG, TB_CONTIG},
    {TB_CANCEL, 100000, 0, TB_CONTIG, TB_CONTIG},
    {TB_PROBE, 1u << 20, 200, TB_CONTIG, TB_CONTIG},
    {TB_POSTED, 3000, 0, TB_UNEVEN3, TB_FIVE},
    {TB_POSTED, (1u << 20) + 7, 0, TB_UNEVEN3, TB_FIVE},
    {TB_POSTED, (1u << 20) + 7, 0, TB_FIVE, TB_UNEVEN3},
    {TB_POSTED, 1500u * 700, 0, TB_MANY700, TB_UNEVEN3},
    {TB_POSTED, 1500u * 700 + 3, 0, TB_CONTIG, TB_MANY1100},
    {TB_UNEXPECTED, 1500u * 700, 0, TB_MANY700, TB_MANY1100},
    {TB_REVERSE, 1u << 20, 0, TB_UNEVEN3, TB_CONTIG},
    {TB_REVERSE, 10, 0, TB_CONTIG, TB_CONTIG},
};
#define TB_NSTEPS (sizeof(tb_steps) / sizeof(tb_steps[0]))

static const char *tb_kind_name(tb_kind_t kind)
{
    static const char *const names[] = {
        "posted", "unexpected", "truncated (posted)", "truncated (unexpected)", "cancel",
        "probe",  "reverse"};
    return names[kind];
}

static uint64_t tb_tag(size_t step, unsigned which)
{
    return TB_TAG_BASE | ((uint64_t)step << 8) | which;
}

/* ------------------------------------------------------------------ buffers */

/* The pieces of a message or of a receive buffer in one allocation, with TB_GUARD bytes of
 * TB_GUARD_BYTE before, between and after them. */
typedef struct tb_buf {
    uint8_t *base;
    size_t alloc;
    ferry_iov_t *iov;
    size_t count;
    size_t capacity; /* total bytes of the pieces */
} tb_buf_t;

static size_t tb_shape_lengths(tb_shape_t shape, size_t size, size_t *len, size_t max)
{
    size_t n = 0;
    switch (shape) {
    case TB_CONTIG:
        len[n++] = size;
        break;
    case TB_UNEVEN3: {
        size_t a = size / 7, b = size * 4 / 7;
        len[n++] = a;
        len[n++] = b;
        len[n++] = size - a - b;
        break;
    }
    case TB_FIVE: {
        size_t left = size;
        size_t first = left >= 1 ? 1 : 0;
        left -= first;
        size_t third = left < 1000 ? left : 1000;
        left -= third;
        len[n++] = first;
        len[n++] = 0;
        len[n++] = third;
        len[n++] = 0;
        len[n++] = left;
        break;
    }
    case TB_MANY700:
        while (size > 0 && n < max) {
            len[n] = size < 700 ? size : 700;
            size -= len[n++];
        }
        break;
    case TB_MANY1100: {
        size_t each = size / 1100;
        for (n = 0; n < 1100; n++)
            len[n] = each;
        len[1099] += size - each * 1100;
        break;
    }
    }
    FT_CHECK(n <= max, "shape needs %zu pieces", n);
    return n;
}

static void tb_buf_init(tb_buf_t *b, tb_shape_t shape, size_t size)
{
    static size_t len[4096];
    b->count = tb_shape_lengths(shape, size, len, 4096);
    b->iov = calloc(b->count, sizeof(*b->iov));
    FT_CHECK(b->iov != NULL, "calloc(%zu pieces)", b->count);
    b->alloc = TB_GUARD * (b->count + 1) + size;
    b->base = malloc(b->alloc);
    FT_CHECK(b->base != NULL, "malloc(%zu)", b->alloc);
    memset(b->base, TB_GUARD_BYTE, b->alloc);
    size_t at = TB_GUARD;
    b->capacity = 0;
    for (size_t i = 0; i < b->count; i++) {
        b->iov[i].buffer = b->base + at;
        b->iov[i].length = len[i];
        at += len[i] + TB_GUARD;
        b->capacity += len[i];
    }
}

static void tb_buf_free(tb_buf_t *b)
{
    free(b->base);
    free(b->iov);
    memset(b, 0, sizeof(*b));
}

/* A message from sender: the pattern of (sender, tag, size) at message offsets. */
static void tb_buf_fill(tb_buf_t *b, uint32_t sender, uint64_t tag, size_t size)
{
    uint64_t seed = ft_pattern_seed(sender, tag, size);
    size_t offset = 0;
    for (size_t i = 0; i < b->count; i++) {
        ft_pattern_fill(b->iov[i].buffer, b->iov[i].length, seed, offset);
        offset += b->iov[i].length;
    }
}

/* The buffer holds the first min(size, capacity) bytes of the message and nothing else was
 * touched (the rest of the pieces, the guards). */
static void tb_buf_check(const tb_buf_t *b, uint32_t sender, uint64_t tag, size_t size,
                         const char *what)
{
    uint64_t seed = ft_pattern_seed(sender, tag, size);
    size_t offset = 0;
    char label[200];
    for (size_t i = 0; i < b->count; i++) {
        const uint8_t *p = b->iov[i].buffer;
        size_t len = b->iov[i].length;
        size_t data = offset < size ? (size - offset < len ? size - offset : len) : 0;
        snprintf(label, sizeof(label), "%s, piece %zu of %zu", what, i, b->count);
        ft_pattern_check(p, data, seed, offset, label);
        for (size_t k = data; k < len; k++)
            FT_CHECK(p[k] == TB_GUARD_BYTE,
                     "%s: byte %zu of the piece, past the message, was "
                     "written (0x%02x)",
                     label, k, p[k]);
        offset += len;
    }
    /* guards: everything outside the pieces */
    const uint8_t *end = b->base + b->alloc;
    const uint8_t *p = b->base;
    for (size_t i = 0; i <= b->count; i++) {
        const uint8_t *stop = i < b->count ? (const uint8_t *)b->iov[i].buffer : end;
        for (; p < stop; p++)
            FT_CHECK(*p == TB_GUARD_BYTE,
                     "%s: guard byte %td before piece %zu was written "
                     "(0x%02x)",
                     what, p - b->base, i, *p);
        if (i < b->count)
            p += b->iov[i].length;
    }
}

/* ------------------------------------------------------------------ operations */

typedef struct tb_send {
    tb_buf_t buf;
    ferry_completion_t comp;
    uint64_t tag;
    size_t size;
} tb_send_t;

/* Start a send (retrying FERRY_ERR_NO_RESOURCE); tb_send_wait finishes it. */
static void tb_send_start(ferry_worker_t *w, ferry_ep_t *ep, tb_send_t *s, uint32_t sender,
                          uint64_t tag, size_t size, tb_shape_t shape)
{
    tb_buf_init(&s->buf, shape, size);
    tb_buf_fill(&s->buf, sender, tag, size);
    s->tag = tag;
    s->size = size;
    s->comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    ft_deadline_t deadline = ft_deadline_in_ms(TB_TIMEOUT);
    for (;;) {
        ferry_status_t status = ferry_tag_send(ep, s->buf.iov, s->buf.count, tag, &s->comp);
        if (status == FERRY_OK) {
            s->comp.count = 0;
            return;
        }
        if (status == FERRY_INPROGRESS)
            return;
        FT_CHECK(status == FERRY_ERR_NO_RESOURCE,
                 "ferry_tag_send(tag 0x%llx, %zu bytes) returned %s", (unsigned long long)tag, size,
                 ferry_status_name(status));
        ft_progress_once(w);
        FT_CHECK(!ft_deadline_passed(deadline), "ferry_tag_send still FERRY_ERR_NO_RESOURCE");
    }
}

static void tb_send_wait(ferry_worker_t *w, tb_send_t *s)
{
    ft_progress_until_completion(w, TB_TIMEOUT, &s->comp, "a tagged send's completion");
    FT_CHECK(s->comp.status == FERRY_OK, "send of tag 0x%llx (%zu bytes) completed with %s",
             (unsigned long long)s->tag, s->size, ferry_status_name(s->comp.status));
    tb_buf_free(&s->buf);
}

typedef struct tb_recv {
    tb_buf_t buf;
    ferry_completion_t comp;
    ferry_tag_info_t info;
    ferry_status_t status; /* final */
    bool done;
} tb_recv_t;

static void tb_recv_init(tb_recv_t *r, tb_shape_t shape, size_t capacity)
{
    tb_buf_init(&r->buf, shape, capacity);
    r->comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    memset(&r->info, 0, sizeof(r->info));
    r->status = FERRY_OK;
    r->done = false;
}

/* What ferry_tag_recv / ferry_tag_message_recv returned. */
static void tb_recv_started(tb_recv_t *r, ferry_status_t status, const char *call)
{
    if (status == FERRY_INPROGRESS)
        return;
    FT_CHECK(status == FERRY_OK || status == FERRY_ERR_MESSAGE_TRUNCATED, "%s returned %s", call,
             ferry_status_name(status));
    FT_CHECK(r->comp.count == 1, "%s returned %s but touched the completion", call,
             ferry_status_name(status));
    r->status = status;
    r->done = true;
}

static void tb_recv_wait(ferry_worker_t *w, tb_recv_t *r)
{
    if (!r->done) {
        ft_progress_until_completion(w, TB_TIMEOUT, &r->comp, "a tagged receive's completion");
        r->status = r->comp.status;
        r->done = true;
    }
}

/* The receive got message (sender, tag, size), checked to the byte. */
static void tb_recv_check(tb_recv_t *r, uint32_t sender, uint64_t tag, size_t size,
                          const char *what)
{
    ferry_status_t expect = size > r->buf.capacity ? FERRY_ERR_MESSAGE_TRUNCATED : FERRY_OK;
    FT_CHECK(r->status == expect, "%s: the receive completed with %s, expected %s", what,
             ferry_status_name(r->status), ferry_status_name(expect));
    FT_CHECK(r->info.tag == tag, "%s: info.tag 0x%llx, expected 0x%llx", what,
             (unsigned long long)r->info.tag, (unsigned long long)tag);
    FT_CHECK(r->info.length == size, "%s: info.length %zu, expected %zu", what, r->info.length,
             size);
    FT_CHECK(r->info.sender != NULL, "%s: info.sender is NULL", what);
    FT_CHECK(strcmp(ferry_ep_transport_name(r->info.sender), ft_remote_transport()) == 0,
             "%s: info.sender uses %s", what, ferry_ep_transport_name(r->info.sender));
    tb_buf_check(&r->buf, sender, tag, size, what);
}

static void tb_post(ferry_worker_t *w, tb_recv_t *r, uint64_t tag, uint64_t mask)
{
    tb_recv_started(r, ferry_tag_recv(w, r->buf.iov, r->buf.count, tag, mask, &r->info, &r->comp),
                    "ferry_tag_recv");
}

/* Progress until probe finds a message with exactly this tag; returns what it said. */
static ferry_tag_info_t tb_probe_until(ferry_worker_t *w, uint64_t tag)
{
    ferry_tag_info_t info;
    ft_deadline_t deadline = ft_deadline_in_ms(TB_TIMEOUT);
    for (unsigned spins = 0;; spins++) {
        ferry_status_t status = ferry_tag_probe(w, tag, UINT64_MAX, 0, &info, NULL);
        if (status == FERRY_OK)
            return info;
        FT_CHECK(status == FERRY_ERR_NO_ELEM, "ferry_tag_probe returned %s",
                 ferry_status_name(status));
        ft_progress_once(w);
        if ((spins & 0xff) == 0)
            FT_CHECK(!ft_deadline_passed(deadline), "no message with tag 0x%llx arrived",
                     (unsigned long long)tag);
    }
}

static void tb_probe_check(const ferry_tag_info_t *info, uint64_t tag, size_t size,
                           const char *what)
{
    FT_CHECK(info->tag == tag && info->length == size && info->sender != NULL,
             "%s: probe says tag 0x%llx, %zu bytes, sender %p; expected tag 0x%llx, %zu bytes",
             what, (unsigned long long)info->tag, info->length, (void *)info->sender,
             (unsigned long long)tag, size);
}

/* ------------------------------------------------------------------ the two roles */

typedef struct tb_server {
    ferry_worker_t *worker;
    int chan;
    ferry_ep_t *reply_ep; /* the client, as the last receive said */
} tb_server_t;

static void tb_server_step(tb_server_t *sv, size_t i)
{
    const tb_step_t *st = &tb_steps[i];
    ferry_worker_t *w = sv->worker;
    char what[160];
    tb_recv_t r, r2;
    uint64_t tag = tb_tag(i, 0);
    snprintf(what, sizeof(what), "step %zu (%s, %zu bytes)", i, tb_kind_name(st->kind), st->size);

    switch (st->kind) {
    case TB_POSTED:
        tb_recv_init(&r, st->recv_shape, st->size);
        tb_post(w, &r, tag, UINT64_MAX);
        ft_chan_send_token(sv->chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        tb_recv_wait(w, &r);
        tb_recv_check(&r, TB_CLIENT, tag, st->size, what);
        sv->reply_ep = r.info.sender;
        tb_buf_free(&r.buf);
        break;
    case TB_UNEXPECTED: {
        ft_progress_until_token(w, sv->chan, TB_TOKEN_SENT, TB_TIMEOUT, NULL);
        ferry_tag_info_t info = tb_probe_until(w, tag);
        tb_probe_check(&info, tag, st->size, what);
        tb_recv_init(&r, st->recv_shape, st->size);
        tb_post(w, &r, tag, UINT64_MAX);
        tb_recv_wait(w, &r);
        tb_recv_check(&r, TB_CLIENT, tag, st->size, what);
        tb_buf_free(&r.buf);
        break;
    }
    case TB_TRUNC_POSTED:
    case TB_TRUNC_UNEXP:
        tb_recv_init(&r, st->recv_shape, st->size2);
        tb_recv_init(&r2, TB_CONTIG, 4096);
        if (st->kind == TB_TRUNC_POSTED) {
            tb_post(w, &r, tag, UINT64_MAX);
            ft_chan_send_token(sv->chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        } else {
            ft_progress_until_token(w, sv->chan, TB_TOKEN_SENT, TB_TIMEOUT, NULL);
            tb_probe_until(w, tb_tag(i, 1)); /* both are here */
            tb_post(w, &r, tag, UINT64_MAX);
        }
        tb_recv_wait(w, &r);
        tb_recv_check(&r, TB_CLIENT, tag, st->size, what);
        /* the next message, whatever its tag, is the follow-up, intact */
        tb_post(w, &r2, 0, 0);
        tb_recv_wait(w, &r2);
        tb_recv_check(&r2, TB_CLIENT, tb_tag(i, 1), 777, "the message after a truncated one");
        tb_buf_free(&r.buf);
        tb_buf_free(&r2.buf);
        break;
    case TB_CANCEL: {
        tb_recv_init(&r, TB_CONTIG, st->size);
        tb_post(w, &r, tag, UINT64_MAX);
        FT_CHECK(!r.done, "%s: a receive completed with nothing sent", what);
        FT_CHECK_OK(ferry_tag_recv_cancel(w, &r.comp));
        FT_CHECK(r.comp.count == 1, "%s: the cancel completed inside the call", what);
        ft_progress_until_completion(w, TB_TIMEOUT, &r.comp, "the canceled receive");
        FT_CHECK(r.comp.status == FERRY_ERR_CANCELED, "%s: the canceled receive completed with %s",
                 what, ferry_status_name(r.comp.status));
        FT_CHECK_STATUS(ferry_tag_recv_cancel(w, &r.comp), FERRY_ERR_NO_ELEM);
        FT_CHECK(r.buf.base[TB_GUARD] == TB_GUARD_BYTE, "%s: the canceled buffer was written",
                 what);
        tb_recv_init(&r2, TB_CONTIG, st->size);
        tb_post(w, &r2, tag, UINT64_MAX);
        ft_chan_send_token(sv->chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        tb_recv_wait(w, &r2);
        tb_recv_check(&r2, TB_CLIENT, tag, st->size, what);
        tb_buf_check(&r.buf, TB_CLIENT, tag, 0, "the canceled receive's buffer");
        tb_buf_free(&r.buf);
        tb_buf_free(&r2.buf);
        break;
    }
    case TB_PROBE: {
        uint64_t big = tb_tag(i, 2), small = tb_tag(i, 1);
        ferry_tag_message_t *msg = NULL;
        ft_progress_until_token(w, sv->chan, TB_TOKEN_SENT, TB_TIMEOUT, NULL);
        ferry_tag_info_t info = tb_probe_until(w, big);
        tb_probe_check(&info, big, st->size, what);
        /* a masked probe finds the first of the two: the small one was sent first */
        FT_CHECK_OK(ferry_tag_probe(w, tb_tag(i, 0), ~0xffull, 0, &info, NULL));
        tb_probe_check(&info, small, st->size2, what);
        FT_CHECK_STATUS(ferry_tag_probe(w, tb_tag(i, 3), UINT64_MAX, 0, &info, NULL),
                        FERRY_ERR_NO_ELEM);
        /* take the big one out and receive it first */
        FT_CHECK_OK(ferry_tag_probe(w, big, UINT64_MAX, 1, &info, &msg));
        tb_probe_check(&info, big, st->size, what);
        FT_CHECK_STATUS(ferry_tag_probe(w, big, UINT64_MAX, 0, &info, NULL), FERRY_ERR_NO_ELEM);
        tb_recv_init(&r, TB_UNEVEN3, st->size);
        tb_recv_started(&r,
                        ferry_tag_message_recv(w, msg, r.buf.iov, r.buf.count, &r.info, &r.comp),
                        "ferry_tag_message_recv");
        tb_recv_wait(w, &r);
        tb_recv_check(&r, TB_CLIENT, big, st->size, what);
        FT_CHECK_OK(ferry_tag_probe(w, small, UINT64_MAX, 1, &info, &msg));
        tb_recv_init(&r2, TB_CONTIG, st->size2);
        tb_recv_started(
            &r2, ferry_tag_message_recv(w, msg, r2.buf.iov, r2.buf.count, &r2.info, &r2.comp),
            "ferry_tag_message_recv");
        tb_recv_wait(w, &r2);
        tb_recv_check(&r2, TB_CLIENT, small, st->size2, what);
        FT_CHECK_STATUS(ferry_tag_probe(w, 0, 0, 0, &info, NULL), FERRY_ERR_NO_ELEM);
        tb_buf_free(&r.buf);
        tb_buf_free(&r2.buf);
        break;
    }
    case TB_REVERSE: {
        tb_send_t s;
        FT_CHECK(sv->reply_ep != NULL, "no endpoint to the client yet");
        ft_progress_until_token(w, sv->chan, TB_TOKEN_POSTED, TB_TIMEOUT, NULL);
        tb_send_start(w, sv->reply_ep, &s, TB_SERVER, tag, st->size, st->send_shape);
        tb_send_wait(w, &s);
        break;
    }
    }
}

static void tb_client_step(ferry_worker_t *w, ferry_ep_t *ep, int chan, size_t i)
{
    const tb_step_t *st = &tb_steps[i];
    uint64_t tag = tb_tag(i, 0);
    tb_send_t s, s2;
    char what[160];
    snprintf(what, sizeof(what), "step %zu (%s, %zu bytes)", i, tb_kind_name(st->kind), st->size);

    switch (st->kind) {
    case TB_POSTED:
    case TB_CANCEL:
        ft_progress_until_token(w, chan, TB_TOKEN_POSTED, TB_TIMEOUT, NULL);
        tb_send_start(w, ep, &s, TB_CLIENT, tag, st->size, st->send_shape);
        tb_send_wait(w, &s);
        break;
    case TB_UNEXPECTED:
        tb_send_start(w, ep, &s, TB_CLIENT, tag, st->size, st->send_shape);
        ft_chan_send_token(chan, TB_TOKEN_SENT, i, 0, 0, 0);
        tb_send_wait(w, &s);
        break;
    case TB_TRUNC_POSTED:
    case TB_TRUNC_UNEXP:
        if (st->kind == TB_TRUNC_POSTED)
            ft_progress_until_token(w, chan, TB_TOKEN_POSTED, TB_TIMEOUT, NULL);
        tb_send_start(w, ep, &s, TB_CLIENT, tag, st->size, st->send_shape);
        tb_send_start(w, ep, &s2, TB_CLIENT, tb_tag(i, 1), 777, TB_CONTIG);
        if (st->kind == TB_TRUNC_UNEXP)
            ft_chan_send_token(chan, TB_TOKEN_SENT, i, 0, 0, 0);
        tb_send_wait(w, &s); /* the sender of a truncated message completes normally */
        tb_send_wait(w, &s2);
        break;
    case TB_PROBE:
        tb_send_start(w, ep, &s2, TB_CLIENT, tb_tag(i, 1), st->size2, TB_CONTIG);
        tb_send_start(w, ep, &s, TB_CLIENT, tb_tag(i, 2), st->size, st->send_shape);
        ft_chan_send_token(chan, TB_TOKEN_SENT, i, 0, 0, 0);
        tb_send_wait(w, &s2);
        tb_send_wait(w, &s);
        break;
    case TB_REVERSE: {
        tb_recv_t r;
        tb_recv_init(&r, st->recv_shape, st->size);
        tb_post(w, &r, 0, 0);
        ft_chan_send_token(chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        tb_recv_wait(w, &r);
        tb_recv_check(&r, TB_SERVER, tag, st->size, what);
        FT_CHECK(r.info.sender == ep, "%s: the sender is not the endpoint to the server", what);
        tb_buf_free(&r.buf);
        break;
    }
    }
}

static int tb_server_role(int chan, void *arg)
{
    (void)arg;
    tb_server_t sv = {.chan = chan};
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    sv.worker = f.worker;
    ft_send_address(chan, f.worker);
    for (size_t i = 0; i < TB_NSTEPS; i++)
        tb_server_step(&sv, i);
    ft_progress_until_token(f.worker, chan, TB_TOKEN_DONE, TB_TIMEOUT, NULL);
    ft_ferry_fini(&f);
    return 0;
}

int main(void)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_files_t before;
    ft_peer_t server;
    ft_ferry_t f;
    const char *mode = getenv("FERRY_RNDV_MODE");

    ft_set_role("client");
    ft_watchdog(115);
    ft_files_snapshot(&before);
    ft_peer_spawn(&server, "server", tb_server_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(server.chan, address, sizeof(address), TB_TIMEOUT);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(ep), ft_remote_transport()) == 0,
             "an endpoint to another process uses %s, expected %s", ferry_ep_transport_name(ep),
             ft_remote_transport());
    uint64_t start = ft_now_ns();
    for (size_t i = 0; i < TB_NSTEPS; i++) {
        uint64_t t0 = ft_now_ns();
        tb_client_step(f.worker, ep, server.chan, i);
        if (tb_steps[i].size >= (1u << 20))
            ft_note("step %2zu %-24s %9zu bytes: %.1f ms", i, tb_kind_name(tb_steps[i].kind),
                    tb_steps[i].size, (double)(ft_now_ns() - t0) / 1e6);
    }
    ft_note("%zu steps (rendezvous mode %s) in %.2f s", TB_NSTEPS, mode ? mode : "auto",
            (double)(ft_now_ns() - start) / 1e9);
    ft_chan_send_token(server.chan, TB_TOKEN_DONE, 0, 0, 0, 0);
    ft_peer_expect_exit(&server, TB_TIMEOUT, 0);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
