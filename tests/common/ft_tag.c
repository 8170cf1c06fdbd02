/* Tagged-message helpers: guarded buffers, sends and receives, a tag echo peer. */
#define _GNU_SOURCE
#include "ft_tag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_chan.h"
#include "ft_check.h"
#include "ft_ferry.h"
#include "ft_pattern.h"
#include "ft_progress.h"

/* ------------------------------------------------------------------ buffers */

const char *ft_shape_name(ft_shape_t shape)
{
    static const char *const names[] = {"contiguous",   "3 uneven",        "7 pieces",
                                        "5 with empty", "300-byte pieces", "2000 pieces"};
    return (unsigned)shape < sizeof(names) / sizeof(names[0]) ? names[shape] : "?";
}

static size_t ft_shape_count(ft_shape_t shape, size_t size)
{
    switch (shape) {
    case FT_SHAPE_CONTIG:
        return 1;
    case FT_SHAPE_UNEVEN3:
        return 3;
    case FT_SHAPE_SEVEN:
        return 7;
    case FT_SHAPE_ZEROS:
        return 5;
    case FT_SHAPE_SMALL:
        return size == 0 ? 1 : (size + 299) / 300;
    case FT_SHAPE_2000:
        return 2000;
    }
    return 1;
}

static void ft_shape_lengths(ft_shape_t shape, size_t size, size_t *len, size_t n)
{
    size_t left = size;
    switch (shape) {
    case FT_SHAPE_CONTIG:
        len[0] = size;
        return;
    case FT_SHAPE_UNEVEN3:
        len[0] = size / 7;
        len[1] = size * 4 / 7;
        len[2] = size - len[0] - len[1];
        return;
    case FT_SHAPE_SEVEN: {
        static const unsigned parts[6] = {3, 1, 0, 7, 5, 0};
        for (size_t i = 0; i < 6; i++) {
            size_t k = i == 5 ? (left > 0 ? 1 : 0) : (size_t)((uint64_t)size * parts[i] / 32);
            if (k > left)
                k = left;
            len[i] = k;
            left -= k;
        }
        len[6] = left;
        return;
    }
    case FT_SHAPE_ZEROS: {
        size_t first = left >= 1 ? 1 : 0;
        left -= first;
        size_t third = left < 1000 ? left : 1000;
        left -= third;
        len[0] = first;
        len[1] = 0;
        len[2] = third;
        len[3] = 0;
        len[4] = left;
        return;
    }
    case FT_SHAPE_SMALL:
        for (size_t i = 0; i < n; i++) {
            len[i] = left < 300 ? left : 300;
            left -= len[i];
        }
        return;
    case FT_SHAPE_2000: {
        size_t each = size / n;
        for (size_t i = 0; i < n; i++)
            len[i] = each;
        len[n - 1] += size - each * n;
        return;
    }
    }
}

void ft_tbuf_init(ft_tbuf_t *b, ft_shape_t shape, size_t capacity)
{
    size_t n = ft_shape_count(shape, capacity);
    size_t *len = calloc(n, sizeof(*len));
    FT_CHECK(len != NULL, "calloc(%zu lengths)", n);
    ft_shape_lengths(shape, capacity, len, n);
    b->count = n;
    b->iov = calloc(n, sizeof(*b->iov));
    FT_CHECK(b->iov != NULL, "calloc(%zu pieces)", n);
    b->alloc = (size_t)FT_TAG_GUARD * (n + 1) + capacity;
    b->base = malloc(b->alloc);
    FT_CHECK(b->base != NULL, "malloc(%zu) for a %s buffer of %zu bytes", b->alloc,
             ft_shape_name(shape), capacity);
    memset(b->base, FT_TAG_GUARD_BYTE, b->alloc);
    size_t at = FT_TAG_GUARD;
    b->capacity = 0;
    for (size_t i = 0; i < n; i++) {
        b->iov[i].buffer = b->base + at;
        b->iov[i].length = len[i];
        at += len[i] + FT_TAG_GUARD;
        b->capacity += len[i];
    }
    FT_CHECK(b->capacity == capacity, "shape %s of %zu bytes has %zu", ft_shape_name(shape),
             capacity, b->capacity);
    free(len);
}

void ft_tbuf_free(ft_tbuf_t *b)
{
    free(b->base);
    free(b->iov);
    memset(b, 0, sizeof(*b));
}

uint64_t ft_tag_seed(uint32_t sender, uint64_t tag, size_t size)
{
    return ft_pattern_seed(sender, tag, size);
}

void ft_tbuf_fill(ft_tbuf_t *b, uint32_t sender, uint64_t tag, size_t size)
{
    uint64_t seed = ft_tag_seed(sender, tag, size);
    size_t offset = 0;
    for (size_t i = 0; i < b->count; i++) {
        ft_pattern_fill(b->iov[i].buffer, b->iov[i].length, seed, offset);
        offset += b->iov[i].length;
    }
}

static void ft_guard_check(const uint8_t *p, size_t len, const char *what, const char *where,
                           size_t index)
{
    for (size_t k = 0; k < len; k++)
        FT_CHECK(p[k] == FT_TAG_GUARD_BYTE, "%s: %s %zu, byte %zu was written (0x%02x)", what,
                 where, index, k, p[k]);
}

void ft_tbuf_check_prefix(const ft_tbuf_t *b, uint64_t seed, size_t written, const char *what)
{
    size_t offset = 0;
    char label[240];
    const uint8_t *p = b->base;
    for (size_t i = 0; i < b->count; i++) {
        const uint8_t *piece = b->iov[i].buffer;
        size_t len = b->iov[i].length;
        ft_guard_check(p, (size_t)(piece - p), what, "the guard before piece", i);
        size_t data = offset < written ? (written - offset < len ? written - offset : len) : 0;
        snprintf(label, sizeof(label), "%s, piece %zu of %zu", what, i, b->count);
        ft_pattern_check(piece, data, seed, offset, label);
        for (size_t k = data; k < len; k++)
            FT_CHECK(piece[k] == FT_TAG_GUARD_BYTE,
                     "%s: byte %zu of the piece (message offset %zu), past the %zu bytes that "
                     "may be written, was written (0x%02x)",
                     label, k, offset + k, written, piece[k]);
        offset += len;
        p = piece + len;
    }
    ft_guard_check(p, (size_t)(b->base + b->alloc - p), what, "the guard after piece", b->count);
}

void ft_tbuf_check_guards(const ft_tbuf_t *b, const char *what)
{
    const uint8_t *p = b->base;
    for (size_t i = 0; i < b->count; i++) {
        const uint8_t *piece = b->iov[i].buffer;
        ft_guard_check(p, (size_t)(piece - p), what, "the guard before piece", i);
        p = piece + b->iov[i].length;
    }
    ft_guard_check(p, (size_t)(b->base + b->alloc - p), what, "the guard after piece", b->count);
}

void ft_tbuf_check(const ft_tbuf_t *b, uint32_t sender, uint64_t tag, size_t size, const char *what)
{
    ft_tbuf_check_prefix(b, ft_tag_seed(sender, tag, size), size < b->capacity ? size : b->capacity,
                         what);
}

const uint8_t *ft_tbuf_at(const ft_tbuf_t *b, size_t offset)
{
    for (size_t i = 0; i < b->count; i++) {
        if (offset < b->iov[i].length)
            return (const uint8_t *)b->iov[i].buffer + offset;
        offset -= b->iov[i].length;
    }
    return NULL;
}

/* ------------------------------------------------------------------ sends */

static void ft_tag_send_cb(ferry_completion_t *comp)
{
    ft_tag_send_t *s = (ft_tag_send_t *)((char *)comp - offsetof(ft_tag_send_t, comp));
    s->done_ns = ft_now_ns();
}

static ferry_status_t ft_tag_send_buf_ext(ferry_worker_t *w, ferry_ep_t *ep, ft_tag_send_t *s,
                                          uint64_t tag, size_t size,
                                          const ferry_tag_send_params_t *params)
{
    s->tag = tag;
    s->size = size;
    s->done_ns = 0;
    s->comp = (ferry_completion_t){.cb = ft_tag_send_cb, .count = 1, .status = FERRY_OK};
    ferry_tag_send_params_t imm = {.flags = FERRY_TAG_SEND_IMM, .imm = ft_tag_imm_of(tag, size)};
    if (params == NULL && ft_tag_imm_all())
        params = &imm;
    ft_deadline_t deadline = ft_deadline_in_ms(FT_TAG_TIMEOUT);
    for (unsigned tries = 1;; tries++) {
        ferry_status_t status =
            ferry_tag_send_ext(ep, s->buf.iov, s->buf.count, tag, params, &s->comp);
        s->call_status = status;
        if (status != FERRY_INPROGRESS) {
            FT_CHECK(s->comp.count == 1, "ferry_tag_send returned %s and touched the completion",
                     ferry_status_name(status));
            s->comp.count = 0;
        }
        if (status != FERRY_ERR_NO_RESOURCE)
            return status;
        s->comp.count = 1;
        ft_progress_once(w);
        if ((tries & 0x3f) == 0)
            FT_CHECK(!ft_deadline_passed(deadline),
                     "ferry_tag_send(tag 0x%llx, %zu bytes) still returns "
                     "FERRY_ERR_NO_RESOURCE after %d ms",
                     (unsigned long long)tag, size, FT_TAG_TIMEOUT);
    }
}

ferry_status_t ft_tag_send_buf(ferry_worker_t *w, ferry_ep_t *ep, ft_tag_send_t *s, uint64_t tag,
                               size_t size)
{
    return ft_tag_send_buf_ext(w, ep, s, tag, size, NULL);
}

bool ft_tag_imm_all(void)
{
    /* read every time: the helpers run in several threads of some tests (no cache to race on) */
    const char *v = getenv("FT_TAG_IMM");
    return v != NULL && strcmp(v, "1") == 0;
}

uint64_t ft_tag_imm_of(uint64_t tag, size_t size)
{
    uint64_t h = (tag * UINT64_C(0x9e3779b97f4a7c15)) ^ ((uint64_t)size << 17) ^ UINT64_C(0x1d);
    /* about half below 2^32 (EAGER's 16-byte form), half above (its 32-byte form) */
    return (h >> 63) != 0 ? h : h >> 32;
}

void ft_tag_send_start(ferry_worker_t *w, ferry_ep_t *ep, ft_tag_send_t *s, uint32_t sender,
                       uint64_t tag, size_t size, ft_shape_t shape)
{
    ft_tag_send_start_ext(w, ep, s, sender, tag, size, shape, NULL);
}

void ft_tag_send_start_ext(ferry_worker_t *w, ferry_ep_t *ep, ft_tag_send_t *s, uint32_t sender,
                           uint64_t tag, size_t size, ft_shape_t shape,
                           const ferry_tag_send_params_t *params)
{
    ft_tbuf_init(&s->buf, shape, size);
    ft_tbuf_fill(&s->buf, sender, tag, size);
    s->sender = sender;
    ferry_status_t status = ft_tag_send_buf_ext(w, ep, s, tag, size, params);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
             "ferry_tag_send(tag 0x%llx, %zu bytes, %s) returned %s (%s)", (unsigned long long)tag,
             size, ft_shape_name(shape), ferry_status_name(status), ferry_status_string(status));
}

bool ft_tag_send_done(const ft_tag_send_t *s)
{
    return *(volatile const int64_t *)&s->comp.count == 0;
}

bool ft_tag_send_reap(ft_tag_send_t *s, const char *what)
{
    if (!ft_tag_send_done(s))
        return false;
    FT_CHECK(s->comp.status == FERRY_OK, "%s: send of tag 0x%llx completed with %s", what,
             (unsigned long long)s->tag, ferry_status_name(s->comp.status));
    ft_tbuf_free(&s->buf);
    return true;
}

void ft_tag_send_wait(ferry_worker_t *w, ft_tag_send_t *s, ferry_status_t expected)
{
    char what[160];
    snprintf(what, sizeof(what), "the completion of a tagged send (tag 0x%llx, %zu bytes)",
             (unsigned long long)s->tag, s->size);
    ft_progress_until_completion(w, FT_TAG_TIMEOUT, &s->comp, what);
    ferry_status_t status = s->call_status == FERRY_INPROGRESS ? s->comp.status : s->call_status;
    FT_CHECK(status == expected, "send of tag 0x%llx (%zu bytes) completed with %s, expected %s",
             (unsigned long long)s->tag, s->size, ferry_status_name(status),
             ferry_status_name(expected));
    ft_tbuf_free(&s->buf);
}

/* ------------------------------------------------------------------ receives */

static void ft_tag_recv_cb(ferry_completion_t *comp)
{
    ft_tag_recv_t *r = (ft_tag_recv_t *)((char *)comp - offsetof(ft_tag_recv_t, comp));
    r->done_ns = ft_now_ns();
}

void ft_tag_recv_init(ft_tag_recv_t *r, ft_shape_t shape, size_t capacity)
{
    ft_tbuf_init(&r->buf, shape, capacity);
    ft_tag_recv_rearm(r);
}

void ft_tag_recv_rearm(ft_tag_recv_t *r)
{
    r->comp = (ferry_completion_t){.cb = ft_tag_recv_cb, .count = 1, .status = FERRY_OK};
    memset(&r->info, 0, sizeof(r->info));
    r->info.length = (size_t)-1;
    r->status = FERRY_OK;
    r->done = false;
    r->inline_done = false;
    r->done_ns = 0;
}

static void ft_tag_recv_started(ft_tag_recv_t *r, ferry_status_t status, const char *call)
{
    if (status == FERRY_INPROGRESS)
        return;
    FT_CHECK(status == FERRY_OK || status == FERRY_ERR_MESSAGE_TRUNCATED, "%s returned %s (%s)",
             call, ferry_status_name(status), ferry_status_string(status));
    FT_CHECK(r->comp.count == 1, "%s returned %s but touched the completion", call,
             ferry_status_name(status));
    r->status = status;
    r->done = true;
    r->inline_done = true;
    r->done_ns = ft_now_ns();
}

void ft_tag_recv_post(ferry_worker_t *w, ft_tag_recv_t *r, uint64_t tag, uint64_t mask)
{
    ft_tag_recv_started(r,
                        ferry_tag_recv(w, r->buf.iov, r->buf.count, tag, mask, &r->info, &r->comp),
                        "ferry_tag_recv");
}

void ft_tag_recv_message(ferry_worker_t *w, ft_tag_recv_t *r, ferry_tag_message_t *msg)
{
    ft_tag_recv_started(
        r, ferry_tag_message_recv(w, msg, r->buf.iov, r->buf.count, &r->info, &r->comp),
        "ferry_tag_message_recv");
}

bool ft_tag_recv_poll(ft_tag_recv_t *r)
{
    if (!r->done && *(volatile const int64_t *)&r->comp.count == 0) {
        r->status = r->comp.status;
        r->done = true;
    }
    return r->done;
}

static bool ft_tag_recv_cond(void *arg)
{
    return ft_tag_recv_poll(arg);
}

void ft_tag_recv_wait(ferry_worker_t *w, ft_tag_recv_t *r)
{
    ft_progress_until(w, FT_TAG_TIMEOUT, ft_tag_recv_cond, r, "a tagged receive's completion");
}

void ft_tag_imm_check(const ferry_tag_info_t *info, uint64_t tag, size_t size, const char *what)
{
    bool want = ft_tag_imm_all();
    uint64_t imm = want ? ft_tag_imm_of(tag, size) : 0;
    FT_CHECK(((info->flags & FERRY_TAG_INFO_IMM) != 0) == want && info->imm == imm,
             "%s: info.flags 0x%x, info.imm 0x%llx; expected %s, 0x%llx", what, info->flags,
             (unsigned long long)info->imm,
             want ? "FERRY_TAG_INFO_IMM (FT_TAG_IMM=1)" : "no FERRY_TAG_INFO_IMM",
             (unsigned long long)imm);
}

void ft_tag_recv_check(const ft_tag_recv_t *r, uint32_t sender, uint64_t tag, size_t size,
                       const char *what)
{
    ferry_status_t expect = size > r->buf.capacity ? FERRY_ERR_MESSAGE_TRUNCATED : FERRY_OK;
    FT_CHECK(r->done, "%s: the receive did not complete", what);
    FT_CHECK(r->status == expect, "%s: the receive completed with %s, expected %s", what,
             ferry_status_name(r->status), ferry_status_name(expect));
    FT_CHECK(r->info.tag == tag, "%s: info.tag 0x%llx, expected 0x%llx", what,
             (unsigned long long)r->info.tag, (unsigned long long)tag);
    FT_CHECK(r->info.length == size, "%s: info.length %zu, expected %zu", what, r->info.length,
             size);
    FT_CHECK(r->info.sender != NULL, "%s: info.sender is NULL", what);
    ft_tag_imm_check(&r->info, tag, size, what);
    FT_CHECK(strcmp(ferry_ep_transport_name(r->info.sender), ft_remote_transport()) == 0,
             "%s: info.sender uses %s", what, ferry_ep_transport_name(r->info.sender));
    ft_tbuf_check(&r->buf, sender, tag, size, what);
}

void ft_tag_recv_free(ft_tag_recv_t *r)
{
    ft_tbuf_free(&r->buf);
}

ferry_tag_info_t ft_tag_probe_until(ferry_worker_t *w, uint64_t tag, uint64_t mask)
{
    ferry_tag_info_t info;
    ft_deadline_t deadline = ft_deadline_in_ms(FT_TAG_TIMEOUT);
    for (unsigned spins = 1;; spins++) {
        ferry_status_t status = ferry_tag_probe(w, tag, mask, 0, &info, NULL);
        if (status == FERRY_OK)
            return info;
        FT_CHECK(status == FERRY_ERR_NO_ELEM, "ferry_tag_probe returned %s",
                 ferry_status_name(status));
        ft_progress_once(w);
        if ((spins & 0xff) == 0)
            FT_CHECK(!ft_deadline_passed(deadline),
                     "no message with tag 0x%llx (mask 0x%llx) arrived within %d ms",
                     (unsigned long long)tag, (unsigned long long)mask, FT_TAG_TIMEOUT);
    }
}

/* ------------------------------------------------------------------ environment */

bool ft_tag_is_endpoint_error(ferry_status_t status)
{
    return status <= -30 && status >= -59;
}

size_t ft_tag_eager_max(void)
{
    const char *s = getenv("FERRY_RNDV_THRESH");
    if (s != NULL && *s >= '0' && *s <= '9') {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (*end == 'k' || *end == 'K')
            v <<= 10;
        else if (*end == 'm' || *end == 'M')
            v <<= 20;
        return (size_t)v;
    }
    /* automatic on shm: 256 KiB of payload, in 32 KiB fragments placed straight into a matched
     * receive (the header travels in the ring cell) */
    return 262144;
}

const char *ft_tag_mode(void)
{
    const char *mode = getenv("FERRY_RNDV_MODE");
    return mode != NULL && *mode != '\0' ? mode : "auto";
}

/* ------------------------------------------------------------------ the echo peer */

int ft_tag_echo_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    for (unsigned n = 0;; n++) {
        ft_tag_recv_t r;
        ft_tag_recv_init(&r, FT_SHAPE_CONTIG, FT_TAG_ECHO_MAX);
        ft_tag_recv_post(f.worker, &r, 0, 0);
        /* sleep in the worker until the message, looking at the channel between waits */
        while (!ft_tag_recv_poll(&r)) {
            ft_token_t token;
            if (ft_chan_try_token(chan, FT_TAG_ECHO_TOKEN_DONE, &token)) {
                FT_CHECK_OK(ferry_tag_recv_cancel(f.worker, &r.comp));
                ft_tag_recv_wait(f.worker, &r);
                FT_CHECK(r.status == FERRY_ERR_CANCELED, "the echo peer's last receive: %s",
                         ferry_status_name(r.status));
                ft_tag_recv_free(&r);
                ft_ferry_fini(&f);
                return 0;
            }
            ferry_status_t status = ferry_worker_wait(f.worker, 20);
            FT_CHECK(status == FERRY_OK || status == FERRY_ERR_TIMED_OUT, "ferry_worker_wait: %s",
                     ferry_status_name(status));
        }
        char what[96];
        snprintf(what, sizeof(what), "echo message %u (tag 0x%llx)", n,
                 (unsigned long long)r.info.tag);
        ft_tag_recv_check(&r, FT_TAG_ECHO_CLIENT, r.info.tag, r.info.length, what);
        ft_tag_send_t s;
        ft_tag_send_start(f.worker, r.info.sender, &s, FT_TAG_ECHO_SERVER, r.info.tag,
                          r.info.length, FT_SHAPE_UNEVEN3);
        ft_tag_send_wait(f.worker, &s, FERRY_OK);
        ft_tag_recv_free(&r);
    }
}

void ft_tag_echo_roundtrip(ferry_worker_t *w, ferry_ep_t *ep, uint64_t tag, size_t size)
{
    ft_tag_recv_t r;
    ft_tag_send_t s;
    char what[96];
    FT_CHECK(size <= FT_TAG_ECHO_MAX, "echo of %zu bytes: at most %u", size, FT_TAG_ECHO_MAX);
    ft_tag_recv_init(&r, FT_SHAPE_SEVEN, size);
    ft_tag_recv_post(w, &r, tag, UINT64_MAX);
    ft_tag_send_start(w, ep, &s, FT_TAG_ECHO_CLIENT, tag, size, FT_SHAPE_CONTIG);
    ft_tag_send_wait(w, &s, FERRY_OK);
    ft_tag_recv_wait(w, &r);
    snprintf(what, sizeof(what), "the echo of tag 0x%llx (%zu bytes)", (unsigned long long)tag,
             size);
    ft_tag_recv_check(&r, FT_TAG_ECHO_SERVER, tag, size, what);
    FT_CHECK(r.info.sender == ep, "%s came from endpoint %p, not the one sent on (%p)", what,
             (void *)r.info.sender, (void *)ep);
    ft_tag_recv_free(&r);
}

void ft_tag_echo_finish(ferry_worker_t *w, ft_peer_t *echo)
{
    (void)w; /* the echo peer needs nothing more from us to exit */
    ft_chan_send_token(echo->chan, FT_TAG_ECHO_TOKEN_DONE, 0, 0, 0, 0);
    ft_peer_expect_exit(echo, FT_TAG_TIMEOUT, 0);
}
