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
 *   - iov shapes (ft_tag.h): the sender's and the receiver's pieces differ (3 uneven pieces, 5
 *     pieces with empty ones, 300-byte pieces (3500 of them), 2000 receive pieces: more than one
 *     registration can hold);
 *   - the server sends back over the endpoint ferry accepted for it (rendezvous from that side).
 * Receive pieces sit in one allocation with guard bytes between them, all checked afterwards.
 * Registered again with FERRY_RNDV_MODE=get|put|coop|null (mp_tag_basic_<mode>). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_tag.h"

enum { TB_CLIENT = 1, TB_SERVER = 2 };
enum { TB_TOKEN_POSTED = 0x504f5354, TB_TOKEN_SENT = 0x53454e54, TB_TOKEN_DONE = 0x444f4e45 };

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

typedef struct tb_step {
    tb_kind_t kind;
    size_t size;  /* the (first) message */
    size_t size2; /* truncation: the receive's capacity; probe: the second (eager) message */
    ft_shape_t send_shape;
    ft_shape_t recv_shape;
} tb_step_t;

static const tb_step_t tb_steps[] = {
    {TB_POSTED, 0, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 1, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 4079, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 4080, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 4081, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 4095, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 4096, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 4097, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 65536, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 1u << 20, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 64u << 20, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 0, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 1, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 300, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 4080, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 4081, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 4096, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 1u << 20, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_UNEXPECTED, 64u << 20, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_TRUNC_POSTED, 100, 50, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_TRUNC_POSTED, 1u << 20, 300000, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_TRUNC_POSTED, 1u << 20, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_TRUNC_UNEXP, 3000, 1000, FT_SHAPE_CONTIG, FT_SHAPE_UNEVEN3},
    {TB_TRUNC_UNEXP, 200000, 70001, FT_SHAPE_UNEVEN3, FT_SHAPE_ZEROS},
    {TB_CANCEL, 100, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_CANCEL, 100000, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_PROBE, 1u << 20, 200, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
    {TB_POSTED, 3000, 0, FT_SHAPE_UNEVEN3, FT_SHAPE_ZEROS},
    {TB_POSTED, (1u << 20) + 7, 0, FT_SHAPE_UNEVEN3, FT_SHAPE_ZEROS},
    {TB_POSTED, (1u << 20) + 7, 0, FT_SHAPE_ZEROS, FT_SHAPE_UNEVEN3},
    {TB_POSTED, 1500u * 700, 0, FT_SHAPE_SMALL, FT_SHAPE_UNEVEN3},
    {TB_POSTED, 1500u * 700 + 3, 0, FT_SHAPE_CONTIG, FT_SHAPE_2000},
    {TB_UNEXPECTED, 1500u * 700, 0, FT_SHAPE_SMALL, FT_SHAPE_2000},
    {TB_REVERSE, 1u << 20, 0, FT_SHAPE_UNEVEN3, FT_SHAPE_CONTIG},
    {TB_REVERSE, 10, 0, FT_SHAPE_CONTIG, FT_SHAPE_CONTIG},
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

/* ------------------------------------------------------------------ operations */

static void tb_probe_check(const ferry_tag_info_t *info, uint64_t tag, size_t size,
                           const char *what)
{
    FT_CHECK(info->tag == tag && info->length == size && info->sender != NULL,
             "%s: probe says tag 0x%llx, %zu bytes, sender %p; expected tag 0x%llx, %zu bytes",
             what, (unsigned long long)info->tag, info->length, (void *)info->sender,
             (unsigned long long)tag, size);
    ft_tag_imm_check(info, tag, size, what);
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
    ft_tag_recv_t r, r2;
    uint64_t tag = tb_tag(i, 0);
    snprintf(what, sizeof(what), "step %zu (%s, %zu bytes)", i, tb_kind_name(st->kind), st->size);

    switch (st->kind) {
    case TB_POSTED:
        ft_tag_recv_init(&r, st->recv_shape, st->size);
        ft_tag_recv_post(w, &r, tag, UINT64_MAX);
        ft_chan_send_token(sv->chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        ft_tag_recv_wait(w, &r);
        ft_tag_recv_check(&r, TB_CLIENT, tag, st->size, what);
        sv->reply_ep = r.info.sender;
        ft_tag_recv_free(&r);
        break;
    case TB_UNEXPECTED: {
        ft_progress_until_token(w, sv->chan, TB_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
        ferry_tag_info_t info = ft_tag_probe_until(w, tag, UINT64_MAX);
        tb_probe_check(&info, tag, st->size, what);
        ft_tag_recv_init(&r, st->recv_shape, st->size);
        ft_tag_recv_post(w, &r, tag, UINT64_MAX);
        ft_tag_recv_wait(w, &r);
        ft_tag_recv_check(&r, TB_CLIENT, tag, st->size, what);
        ft_tag_recv_free(&r);
        break;
    }
    case TB_TRUNC_POSTED:
    case TB_TRUNC_UNEXP:
        ft_tag_recv_init(&r, st->recv_shape, st->size2);
        ft_tag_recv_init(&r2, FT_SHAPE_CONTIG, 4096);
        if (st->kind == TB_TRUNC_POSTED) {
            ft_tag_recv_post(w, &r, tag, UINT64_MAX);
            ft_chan_send_token(sv->chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        } else {
            ft_progress_until_token(w, sv->chan, TB_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
            ft_tag_probe_until(w, tb_tag(i, 1), UINT64_MAX); /* both are here */
            ft_tag_recv_post(w, &r, tag, UINT64_MAX);
        }
        ft_tag_recv_wait(w, &r);
        ft_tag_recv_check(&r, TB_CLIENT, tag, st->size, what);
        /* the next message, whatever its tag, is the follow-up, intact */
        ft_tag_recv_post(w, &r2, 0, 0);
        ft_tag_recv_wait(w, &r2);
        ft_tag_recv_check(&r2, TB_CLIENT, tb_tag(i, 1), 777, "the message after a truncated one");
        ft_tag_recv_free(&r);
        ft_tag_recv_free(&r2);
        break;
    case TB_CANCEL: {
        ft_tag_recv_init(&r, FT_SHAPE_CONTIG, st->size);
        ft_tag_recv_post(w, &r, tag, UINT64_MAX);
        FT_CHECK(!r.done, "%s: a receive completed with nothing sent", what);
        FT_CHECK_OK(ferry_tag_recv_cancel(w, &r.comp));
        FT_CHECK(r.comp.count == 1, "%s: the cancel completed inside the call", what);
        ft_progress_until_completion(w, FT_TAG_TIMEOUT, &r.comp, "the canceled receive");
        FT_CHECK(r.comp.status == FERRY_ERR_CANCELED, "%s: the canceled receive completed with %s",
                 what, ferry_status_name(r.comp.status));
        FT_CHECK_STATUS(ferry_tag_recv_cancel(w, &r.comp), FERRY_ERR_NO_ELEM);
        FT_CHECK(r.buf.base[FT_TAG_GUARD] == FT_TAG_GUARD_BYTE,
                 "%s: the canceled buffer was written", what);
        ft_tag_recv_init(&r2, FT_SHAPE_CONTIG, st->size);
        ft_tag_recv_post(w, &r2, tag, UINT64_MAX);
        ft_chan_send_token(sv->chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        ft_tag_recv_wait(w, &r2);
        ft_tag_recv_check(&r2, TB_CLIENT, tag, st->size, what);
        ft_tbuf_check(&r.buf, TB_CLIENT, tag, 0, "the canceled receive's buffer");
        ft_tag_recv_free(&r);
        ft_tag_recv_free(&r2);
        break;
    }
    case TB_PROBE: {
        uint64_t big = tb_tag(i, 2), small = tb_tag(i, 1);
        ferry_tag_message_t *msg = NULL;
        ft_progress_until_token(w, sv->chan, TB_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
        ferry_tag_info_t info = ft_tag_probe_until(w, big, UINT64_MAX);
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
        ft_tag_recv_init(&r, FT_SHAPE_UNEVEN3, st->size);
        ft_tag_recv_message(w, &r, msg);
        ft_tag_recv_wait(w, &r);
        ft_tag_recv_check(&r, TB_CLIENT, big, st->size, what);
        FT_CHECK_OK(ferry_tag_probe(w, small, UINT64_MAX, 1, &info, &msg));
        ft_tag_recv_init(&r2, FT_SHAPE_CONTIG, st->size2);
        ft_tag_recv_message(w, &r2, msg);
        ft_tag_recv_wait(w, &r2);
        ft_tag_recv_check(&r2, TB_CLIENT, small, st->size2, what);
        FT_CHECK_STATUS(ferry_tag_probe(w, 0, 0, 0, &info, NULL), FERRY_ERR_NO_ELEM);
        ft_tag_recv_free(&r);
        ft_tag_recv_free(&r2);
        break;
    }
    case TB_REVERSE: {
        ft_tag_send_t s;
        FT_CHECK(sv->reply_ep != NULL, "no endpoint to the client yet");
        ft_progress_until_token(w, sv->chan, TB_TOKEN_POSTED, FT_TAG_TIMEOUT, NULL);
        ft_tag_send_start(w, sv->reply_ep, &s, TB_SERVER, tag, st->size, st->send_shape);
        ft_tag_send_wait(w, &s, FERRY_OK);
        break;
    }
    }
}

static void tb_client_step(ferry_worker_t *w, ferry_ep_t *ep, int chan, size_t i)
{
    const tb_step_t *st = &tb_steps[i];
    uint64_t tag = tb_tag(i, 0);
    ft_tag_send_t s, s2;
    char what[160];
    snprintf(what, sizeof(what), "step %zu (%s, %zu bytes)", i, tb_kind_name(st->kind), st->size);

    switch (st->kind) {
    case TB_POSTED:
    case TB_CANCEL:
        ft_progress_until_token(w, chan, TB_TOKEN_POSTED, FT_TAG_TIMEOUT, NULL);
        ft_tag_send_start(w, ep, &s, TB_CLIENT, tag, st->size, st->send_shape);
        ft_tag_send_wait(w, &s, FERRY_OK);
        break;
    case TB_UNEXPECTED:
        ft_tag_send_start(w, ep, &s, TB_CLIENT, tag, st->size, st->send_shape);
        ft_chan_send_token(chan, TB_TOKEN_SENT, i, 0, 0, 0);
        ft_tag_send_wait(w, &s, FERRY_OK);
        break;
    case TB_TRUNC_POSTED:
    case TB_TRUNC_UNEXP:
        if (st->kind == TB_TRUNC_POSTED)
            ft_progress_until_token(w, chan, TB_TOKEN_POSTED, FT_TAG_TIMEOUT, NULL);
        ft_tag_send_start(w, ep, &s, TB_CLIENT, tag, st->size, st->send_shape);
        ft_tag_send_start(w, ep, &s2, TB_CLIENT, tb_tag(i, 1), 777, FT_SHAPE_CONTIG);
        if (st->kind == TB_TRUNC_UNEXP)
            ft_chan_send_token(chan, TB_TOKEN_SENT, i, 0, 0, 0);
        ft_tag_send_wait(w, &s,
                         FERRY_OK); /* the sender of a truncated message completes normally */
        ft_tag_send_wait(w, &s2, FERRY_OK);
        break;
    case TB_PROBE:
        ft_tag_send_start(w, ep, &s2, TB_CLIENT, tb_tag(i, 1), st->size2, FT_SHAPE_CONTIG);
        ft_tag_send_start(w, ep, &s, TB_CLIENT, tb_tag(i, 2), st->size, st->send_shape);
        ft_chan_send_token(chan, TB_TOKEN_SENT, i, 0, 0, 0);
        ft_tag_send_wait(w, &s2, FERRY_OK);
        ft_tag_send_wait(w, &s, FERRY_OK);
        break;
    case TB_REVERSE: {
        ft_tag_recv_t r;
        ft_tag_recv_init(&r, st->recv_shape, st->size);
        ft_tag_recv_post(w, &r, 0, 0);
        ft_chan_send_token(chan, TB_TOKEN_POSTED, i, 0, 0, 0);
        ft_tag_recv_wait(w, &r);
        ft_tag_recv_check(&r, TB_SERVER, tag, st->size, what);
        FT_CHECK(r.info.sender == ep, "%s: the sender is not the endpoint to the server", what);
        ft_tag_recv_free(&r);
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
    ft_progress_until_token(f.worker, chan, TB_TOKEN_DONE, FT_TAG_TIMEOUT, NULL);
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
    size_t length = ft_recv_address(server.chan, address, sizeof(address), FT_TAG_TIMEOUT);
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
    ft_peer_expect_exit(&server, FT_TAG_TIMEOUT, 0);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
