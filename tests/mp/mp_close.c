/* Closing endpoints.
 *
 *   graceful, queued    eight 4 MiB sends are queued (with completions) and the endpoint is
 *                       closed gracefully at once: every send completes with FERRY_OK before
 *                       the close does; the peer receives every byte of all eight, and only
 *                       then does its accepted endpoint's error callback report
 *                       FERRY_ERR_ENDPOINT_CLOSED; sends on the closed endpoint fail with
 *                       FERRY_ERR_ENDPOINT_CLOSED;
 *   graceful, connecting the same, closing an endpoint that is still connecting, with small
 *                       sends (no completion) and 1 MiB ones queued;
 *   forced              the peer stops polling; four 1 MiB sends are queued; a forced close
 *                       returns FERRY_OK at once, and each send then completes (from progress,
 *                       not from inside ferry_ep_close) with FERRY_ERR_CANCELED; the peer
 *                       delivers no part of them, its accepted endpoint fails, and a new
 *                       endpoint to it works (its buffer pool was not lost);
 *   worker destroyed    ferry_worker_destroy with two 1 MiB sends queued to a stalled peer:
 *                       both complete with FERRY_ERR_CANCELED; the peer's endpoint fails;
 *   self                a graceful close of an endpoint to the worker itself delivers the
 *                       messages queued before it;
 *   forced, connecting  sends without a completion (done when the call returns: queued from
 *                       a copy) on an endpoint still connecting, then a forced close and
 *                       destroy at once: the peer receives every one of them, byte-exact, then
 *                       sees the close (issue 13, such messages were lost). Over tcp they wait
 *                       in the connection's queue; over shm the endpoint lets go of the ferry
 *                       endpoint and finishes the handshake, posts them and CLOSE on its own.
 *                       Over shm also with two large copied messages (64 KiB and 256 KiB,
 *                       fragments: more than the peer's buffers take at once, so the rest goes
 *                       out as the peer frees them) and, on a second connection, a send with a
 *                       completion queued among them, which completes with
 *                       FERRY_ERR_CANCELED and never arrives. mp_close_tcp runs only this
 *                       case: the others stall a peer behind sends, which tcp's socket
 *                       buffers swallow. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft.h"

#define CL_MAGIC 0x45534f4cu /* "LOSE" */
#define CL_CONNS 10

enum { CL_ID_DATA = 30 };
enum {
    CL_TOKEN_WAIT_COUNT = 0x57434e54, /* v0 conn, v1 count: reply when that many arrived */
    CL_TOKEN_WAIT_ERROR = 0x57455252, /* v0 conn: reply when its endpoint failed */
    CL_TOKEN_RESULT = 0x52534c54,     /* v0 conn, v1 received, v2 error, v3 received at error */
    CL_TOKEN_STALL = 0x5354414c,
    CL_TOKEN_STALLED = 0x53544c44,
    CL_TOKEN_RESUME = 0x52534d45,
    CL_TOKEN_EXIT = 0x45584954,
};

typedef struct cl_hdr {
    uint32_t magic;
    uint32_t conn;
    uint32_t seq;
    uint32_t size;
} cl_hdr_t;

/* ------------------------------------------------------------------ the receiver */

typedef struct cl_conn {
    uint32_t next_seq;
    ferry_ep_t *ep; /* its accepted endpoint (valid until its error callback) */
    bool failed;
    ferry_status_t error;
    uint32_t received_at_error;
} cl_conn_t;

typedef struct cl_rx {
    cl_conn_t conns[CL_CONNS];
} cl_rx_t;

static cl_rx_t cl_rx;

static ferry_status_t cl_handler(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    cl_hdr_t h;
    char what[64];
    (void)arg;
    FT_CHECK(header_length == sizeof(h), "a %zu-byte header", header_length);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.magic == CL_MAGIC && h.conn < CL_CONNS, "bad header");
    cl_conn_t *c = &cl_rx.conns[h.conn];
    FT_CHECK(!c->failed, "conn %u: a message after its endpoint's error callback", h.conn);
    FT_CHECK(h.seq == c->next_seq, "conn %u: seq %u where %u was expected", h.conn, h.seq,
             c->next_seq);
    FT_CHECK(length == h.size, "conn %u seq %u: %zu bytes, the header says %u", h.conn, h.seq,
             length, h.size);
    snprintf(what, sizeof(what), "conn %u seq %u", h.conn, h.seq);
    ft_pattern_check(data, length, ft_pattern_seed(h.conn, h.seq, length), 0, what);
    FT_CHECK(c->ep == NULL || c->ep == params->reply_ep, "conn %u: messages on two endpoints",
             h.conn);
    c->ep = params->reply_ep;
    c->next_seq++;
    return FERRY_OK;
}

static void cl_accepted_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)arg;
    for (unsigned i = 0; i < CL_CONNS; i++) {
        cl_conn_t *c = &cl_rx.conns[i];
        if (c->ep == ep && !c->failed) {
            c->failed = true;
            c->error = status;
            c->received_at_error = c->next_seq;
            c->ep = NULL; /* freed after this callback */
            return;
        }
    }
    /* an endpoint that delivered nothing (e.g. closed while connecting): not a conn of ours */
    ft_note("an accepted endpoint with no message failed: %s", ferry_status_name(status));
}

typedef struct cl_wait {
    cl_conn_t *conn;
    uint32_t count;
} cl_wait_t;

static bool cl_count_reached(void *arg)
{
    cl_wait_t *w = arg;
    return w->conn->next_seq >= w->count;
}

static bool cl_conn_failed(void *arg)
{
    return ((cl_conn_t *)arg)->failed;
}

static void cl_reply(int chan, uint32_t conn)
{
    cl_conn_t *c = &cl_rx.conns[conn];
    ft_chan_send_token(chan, CL_TOKEN_RESULT, conn, c->next_seq, (uint64_t)(int64_t)c->error,
                       c->received_at_error);
}

static int cl_receiver_role(int chan, void *arg)
{
    ft_ferry_t f;
    (void)arg;
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = cl_accepted_error_cb};
    ft_ferry_init(&f, NULL, &wparams);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, CL_ID_DATA, cl_handler, NULL));
    ft_send_address(chan, f.worker);
    ft_deadline_t deadline = ft_deadline_in_ms(120000);
    for (unsigned spins = 0;; spins++) {
        ft_progress_once(f.worker);
        ft_token_t t;
        size_t len;
        if ((spins & 0x1f) != 0 || !ft_chan_try_recv(chan, &t, sizeof(t), &len))
            continue;
        FT_CHECK(len == sizeof(t), "a %zu-byte channel message", len);
        FT_CHECK(!ft_deadline_passed(deadline), "not told to exit within 120 s");
        if (t.tag == CL_TOKEN_EXIT)
            break;
        if (t.tag == CL_TOKEN_STALL) {
            /* no ferry call until RESUME */
            ft_chan_send_token(chan, CL_TOKEN_STALLED, 0, 0, 0, 0);
            ft_chan_expect_token(chan, CL_TOKEN_RESUME, 30000);
            continue;
        }
        FT_CHECK(t.v[0] < CL_CONNS, "conn %llu", (unsigned long long)t.v[0]);
        cl_conn_t *c = &cl_rx.conns[t.v[0]];
        if (t.tag == CL_TOKEN_WAIT_COUNT) {
            cl_wait_t w = {.conn = c, .count = (uint32_t)t.v[1]};
            ft_progress_until(f.worker, 30000, cl_count_reached, &w, "the messages of a conn");
        } else {
            FT_CHECK(t.tag == CL_TOKEN_WAIT_ERROR, "unknown token 0x%x", t.tag);
            ft_progress_until(f.worker, 30000, cl_conn_failed, c,
                              "the error callback of the conn's accepted endpoint");
        }
        cl_reply(chan, (uint32_t)t.v[0]);
    }
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ the sender */

/* Completion events in the order they happened. */
typedef struct cl_events {
    unsigned count;
    int order[64]; /* which send (index), or -1 for the close */
    ferry_status_t status[64];
} cl_events_t;

static cl_events_t cl_events;
static bool cl_in_close; /* set around ferry_ep_close: no callback may run inside */

typedef struct cl_send {
    ferry_completion_t comp; /* first */
    int index;
    uint8_t *buf;
} cl_send_t;

static void cl_event(int index, ferry_status_t status)
{
    FT_CHECK(!cl_in_close, "a completion callback ran inside ferry_ep_close");
    FT_CHECK(cl_events.count < 64, "too many events");
    cl_events.order[cl_events.count] = index;
    cl_events.status[cl_events.count] = status;
    cl_events.count++;
}

static void cl_send_done(ferry_completion_t *comp)
{
    cl_send_t *s = (cl_send_t *)comp;
    cl_event(s->index, comp->status);
    free(s->buf);
    s->buf = NULL;
}

static void cl_close_done(ferry_completion_t *comp)
{
    cl_event(-1, comp->status);
}

/* Start message seq of conn (size bytes) with a completion; returns the status. */
static ferry_status_t cl_send_tracked(ferry_worker_t *worker, ferry_ep_t *ep, uint32_t conn,
                                      uint32_t seq, size_t size, cl_send_t *s, int index)
{
    cl_hdr_t h = {.magic = CL_MAGIC, .conn = conn, .seq = seq, .size = (uint32_t)size};
    s->index = index;
    s->buf = malloc(size ? size : 1);
    FT_CHECK(s->buf != NULL, "out of memory");
    ft_pattern_fill(s->buf, size, ft_pattern_seed(conn, seq, size), 0);
    s->comp.cb = cl_send_done;
    s->comp.status = FERRY_OK;
    s->comp.count = 0;
    ferry_iov_t iov = {.buffer = s->buf, .length = size};
    ferry_status_t status =
        ft_am_send(worker, ep, CL_ID_DATA, &h, sizeof(h), &iov, 1, &s->comp, 30000, NULL);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
             "conn %u seq %u (%zu bytes): ferry_am_send returned %s", conn, seq, size,
             ferry_status_name(status));
    if (status == FERRY_OK)
        cl_send_done(&s->comp); /* buffers free now: record it as done */
    return status;
}

/* A small message without a completion (the buffer is reusable on return). */
static void cl_send_small(ferry_worker_t *worker, ferry_ep_t *ep, uint32_t conn, uint32_t seq,
                          size_t size)
{
    uint8_t buf[4096];
    cl_hdr_t h = {.magic = CL_MAGIC, .conn = conn, .seq = seq, .size = (uint32_t)size};
    FT_CHECK(size <= sizeof(buf), "too big");
    ft_pattern_fill(buf, size, ft_pattern_seed(conn, seq, size), 0);
    ft_am_send_ok(worker, ep, CL_ID_DATA, &h, sizeof(h), buf, size, NULL, 30000);
}

static void cl_expect_closed(ferry_ep_t *ep, const char *what)
{
    cl_hdr_t h = {.magic = CL_MAGIC};
    FT_CHECK_STATUS(ferry_am_send(ep, CL_ID_DATA, &h, sizeof(h), NULL, 0, NULL),
                    FERRY_ERR_ENDPOINT_CLOSED);
    (void)what;
}

static ft_token_t cl_ask(ferry_worker_t *worker, ft_peer_t *receiver, uint32_t tag, uint32_t conn,
                         uint64_t count)
{
    ft_token_t t;
    ft_chan_send_token(receiver->chan, tag, conn, count, 0, 0);
    ft_progress_until_token(worker, receiver->chan, CL_TOKEN_RESULT, 30000, &t);
    FT_CHECK(t.v[0] == conn, "a result for conn %llu, not %u", (unsigned long long)t.v[0], conn);
    return t;
}

/* A new endpoint to address, with no completion recorded yet. */
static ferry_ep_t *cl_open(ferry_worker_t *worker, const void *address, size_t length)
{
    ferry_ep_t *ep = ft_ep_create(worker, address, length, NULL);
    memset(&cl_events, 0, sizeof(cl_events));
    return ep;
}

/* One message of 100 B on conn, delivered; then the receiver stalls (stops polling) and
 * sends[0..n) of 1 MiB (seq 1..n, tracked) must stay queued. */
static void cl_queue_at_stalled(ferry_worker_t *worker, ft_peer_t *receiver, ferry_ep_t *ep,
                                uint32_t conn, cl_send_t *sends, int n, const char *what)
{
    cl_send_small(worker, ep, conn, 0, 100);
    cl_ask(worker, receiver, CL_TOKEN_WAIT_COUNT, conn, 1); /* connected and delivering */
    ft_chan_send_token(receiver->chan, CL_TOKEN_STALL, 0, 0, 0, 0);
    ft_progress_until_token(worker, receiver->chan, CL_TOKEN_STALLED, 30000, NULL);
    for (int i = 0; i < n; i++)
        FT_CHECK(cl_send_tracked(worker, ep, conn, 1 + (uint32_t)i, 1u << 20, &sends[i], i) ==
                     FERRY_INPROGRESS,
                 "%s: a 1 MiB send to a stalled peer was not queued", what);
}

/* ferry_ep_close(FERRY_EP_CLOSE_FORCE) must return FERRY_OK (no completion runs inside it). */
static void cl_close_forced(ferry_ep_t *ep, const char *what)
{
    cl_in_close = true;
    ferry_status_t status = ferry_ep_close(ep, FERRY_EP_CLOSE_FORCE, NULL);
    cl_in_close = false;
    FT_CHECK(status == FERRY_OK, "%s: ferry_ep_close returned %s, expected FERRY_OK", what,
             ferry_status_name(status));
}

/* Close gracefully; every completion (sends, then the close) must come with FERRY_OK, the
 * sends before the close. */
static void cl_graceful(ferry_worker_t *worker, ferry_ep_t *ep, unsigned sends, const char *what)
{
    ferry_completion_t close_comp = {.cb = cl_close_done, .count = 1, .status = FERRY_OK};
    cl_in_close = true;
    ferry_status_t status = ferry_ep_close(ep, 0, &close_comp);
    cl_in_close = false;
    FT_CHECK(status == FERRY_INPROGRESS || status == FERRY_OK, "%s: ferry_ep_close returned %s",
             what, ferry_status_name(status));
    cl_expect_closed(ep, what); /* closing: sends are refused already */
    if (status == FERRY_OK)
        close_comp.count = 0, cl_event(-1, FERRY_OK);
    ft_progress_until_completion(worker, 30000, &close_comp, "the graceful close");
    FT_CHECK(cl_events.count == sends + 1, "%s: %u completions, expected %u", what, cl_events.count,
             sends + 1);
    for (unsigned i = 0; i < cl_events.count; i++) {
        FT_CHECK(cl_events.status[i] == FERRY_OK, "%s: completion %u (%s %d) reported %s", what, i,
                 cl_events.order[i] < 0 ? "close" : "send", cl_events.order[i],
                 ferry_status_name(cl_events.status[i]));
        if ((cl_events.order[i] < 0) != (i == sends)) {
            char order[256] = "";
            for (unsigned k = 0; k < cl_events.count; k++)
                snprintf(order + strlen(order), sizeof(order) - strlen(order), " %s%d",
                         cl_events.order[k] < 0 ? "close" : "send", cl_events.order[k]);
            ft_fail_at(__FILE__, __LINE__,
                       "%s: the close completed before send(s) it waits for; completions in "
                       "the order:%s",
                       what, order);
        }
    }
    cl_expect_closed(ep, what);
}

static void cl_check_peer_saw_close(ferry_worker_t *worker, ft_peer_t *receiver, uint32_t conn,
                                    uint32_t messages, const char *what)
{
    ft_token_t t = cl_ask(worker, receiver, CL_TOKEN_WAIT_ERROR, conn, 0);
    ferry_status_t error = (ferry_status_t)(int64_t)t.v[2];
    FT_CHECK(t.v[1] == messages, "%s: the peer received %llu messages, expected %u", what,
             (unsigned long long)t.v[1], messages);
    FT_CHECK(error == FERRY_ERR_ENDPOINT_CLOSED,
             "%s: the peer's accepted endpoint failed with %s, expected FERRY_ERR_ENDPOINT_CLOSED",
             what, ferry_status_name(error));
    FT_CHECK(t.v[3] == messages, "%s: the peer's endpoint was closed after %llu of %u messages",
             what, (unsigned long long)t.v[3], messages);
}

/* cl_graceful, then the receiver got all messages of conn before its endpoint was closed;
 * ep destroyed; a note says so. */
static void cl_graceful_seen(ferry_worker_t *worker, ft_peer_t *receiver, ferry_ep_t *ep,
                             unsigned sends, uint32_t conn, uint32_t messages, const char *what)
{
    cl_graceful(worker, ep, sends, what);
    cl_check_peer_saw_close(worker, receiver, conn, messages, what);
    ferry_ep_destroy(ep);
    ft_note("%s: all delivered, then the peer saw the close", what);
}

static void cl_graceful_queued(ferry_worker_t *worker, ft_peer_t *receiver, const void *address,
                               size_t length)
{
    static cl_send_t sends[8];
    const char *what = "graceful close, 8 x 4 MiB queued";
    ferry_ep_t *ep = cl_open(worker, address, length);
    unsigned queued = 0;
    for (int i = 0; i < 8; i++)
        queued +=
            cl_send_tracked(worker, ep, 1, (uint32_t)i, 4u << 20, &sends[i], i) == FERRY_INPROGRESS;
    FT_CHECK(queued > 0, "%s: no 4 MiB send was queued", what);
    cl_graceful_seen(worker, receiver, ep, 8, 1, 8, what);
}

static void cl_graceful_connecting(ferry_worker_t *worker, ft_peer_t *receiver, const void *address,
                                   size_t length)
{
    static cl_send_t sends[2];
    const char *what = "graceful close while connecting";
    ferry_ep_t *ep = cl_open(worker, address, length);
    uint32_t seq = 0;
    for (int i = 0; i < 5; i++, seq++)
        cl_send_small(worker, ep, 2, seq, (size_t)i * 900);
    for (int i = 0; i < 2; i++, seq++)
        cl_send_tracked(worker, ep, 2, seq, 1u << 20, &sends[i], i);
    cl_graceful_seen(worker, receiver, ep, 2, 2, 7, what);
}

static void cl_forced(ferry_worker_t *worker, ft_peer_t *receiver, const void *address,
                      size_t length)
{
    static cl_send_t sends[4];
    const char *what = "forced close";
    ferry_ep_t *ep = cl_open(worker, address, length);
    cl_queue_at_stalled(worker, receiver, ep, 3, sends, 4, what);
    ft_progress_for_ms(worker, 50);
    FT_CHECK(cl_events.count == 0, "%s: %u sends completed while the peer was stalled", what,
             cl_events.count);
    cl_close_forced(ep, what);
    cl_expect_closed(ep, what);
    FT_CHECK(cl_events.count == 0, "%s: completions ran inside ferry_ep_close", what);
    for (unsigned i = 0; i < 4; i++)
        ft_progress_until_completion(worker, 10000, &sends[i].comp, "a canceled send");
    FT_CHECK(cl_events.count == 4, "%s: %u completions", what, cl_events.count);
    for (unsigned i = 0; i < 4; i++) {
        FT_CHECK(cl_events.status[i] == FERRY_ERR_CANCELED,
                 "%s: a pending send completed with %s, expected FERRY_ERR_CANCELED", what,
                 ferry_status_name(cl_events.status[i]));
        FT_CHECK(cl_events.order[i] == (int)i, "%s: canceled out of order", what);
    }
    ft_chan_send_token(receiver->chan, CL_TOKEN_RESUME, 0, 0, 0, 0);
    ft_token_t t = cl_ask(worker, receiver, CL_TOKEN_WAIT_ERROR, 3, 0);
    ferry_status_t error = (ferry_status_t)(int64_t)t.v[2];
    FT_CHECK(t.v[1] == 1, "%s: the peer received %llu messages, expected only the first", what,
             (unsigned long long)t.v[1]);
    FT_CHECK(error == FERRY_ERR_ENDPOINT_CLOSED || error == FERRY_ERR_CONNECTION_RESET,
             "%s: the peer's accepted endpoint failed with %s", what, ferry_status_name(error));
    ferry_ep_destroy(ep);
    ft_note("%s: 4 queued sends canceled; the peer's endpoint failed with %s", what,
            ferry_status_name(error));

    /* a new endpoint works, and needs the peer's whole buffer pool */
    ep = cl_open(worker, address, length);
    uint32_t seq = 0;
    for (; seq < 200; seq++)
        cl_send_small(worker, ep, 4, seq, 4000);
    cl_send_tracked(worker, ep, 4, seq++, 1u << 20, &sends[0], 0);
    cl_graceful_seen(worker, receiver, ep, 1, 4, seq, "a new endpoint after a forced close");
}

/* A message without a completion from a heap buffer freed at once: the send must have copied
 * it (FERRY_OK) or refused it. */
static void cl_send_copied(ferry_ep_t *ep, uint32_t conn, uint32_t seq, size_t size)
{
    cl_hdr_t h = {.magic = CL_MAGIC, .conn = conn, .seq = seq, .size = (uint32_t)size};
    uint8_t *buf = malloc(size);
    FT_CHECK(buf != NULL, "out of memory");
    ft_pattern_fill(buf, size, ft_pattern_seed(conn, seq, size), 0);
    ferry_iov_t iov = {.buffer = buf, .length = size};
    ferry_status_t status = ferry_am_send(ep, CL_ID_DATA, &h, sizeof(h), &iov, 1, NULL);
    memset(buf, 0xee, size); /* the caller's buffer is reusable on FERRY_OK */
    free(buf);
    FT_CHECK(status == FERRY_OK,
             "conn %u seq %u (%zu bytes, connecting, no completion): "
             "ferry_am_send returned %s, expected FERRY_OK (queued from a copy)",
             conn, seq, size, ferry_status_name(status));
}

/* conn: the receiver's conn; big: also two large copied messages and, around them, a send with
 * a completion that the forced close cancels (seq numbers skip it: it goes to conn + 1, which
 * must never see it). */
static void cl_forced_connecting(ferry_worker_t *worker, ft_peer_t *receiver, const void *address,
                                 size_t length, uint32_t conn, bool big)
{
    const char *what = big ? "forced close while connecting, large copies and a canceled send"
                           : "forced close while connecting";
    static cl_send_t tracked;
    ferry_ep_t *ep = cl_open(worker, address, length);
    uint32_t seq = 0;
    for (; seq < 5; seq++)
        cl_send_small(worker, ep, conn, seq, (size_t)seq * 300);
    if (big) {
        cl_send_copied(ep, conn, seq++, 64u << 10);
        FT_CHECK(cl_send_tracked(worker, ep, conn + 1, 0, 1000, &tracked, 0) == FERRY_INPROGRESS,
                 "%s: a send with a completion while connecting did not wait", what);
        cl_send_copied(ep, conn, seq++, 256u << 10);
        cl_send_small(worker, ep, conn, seq++, 17);
    }
    cl_close_forced(ep, what);
    ferry_ep_destroy(ep);
    cl_check_peer_saw_close(worker, receiver, conn, seq, what);
    if (big) {
        FT_CHECK(cl_events.count == 1 && cl_events.status[0] == FERRY_ERR_CANCELED,
                 "%s: the send with a completion: %u events, status %s (expected canceled)", what,
                 cl_events.count, ferry_status_name(cl_events.status[0]));
        ft_token_t t = cl_ask(worker, receiver, CL_TOKEN_WAIT_COUNT, conn + 1, 0);
        FT_CHECK(t.v[1] == 0, "%s: the canceled send arrived", what);
    }
    ft_note("%s: the %u messages sent before it were delivered, then the peer saw the close", what,
            seq);
}

/* The worker is destroyed with sends queued: they complete with FERRY_ERR_CANCELED (from inside
 * ferry_worker_destroy, which frees the endpoint too), and the peer sees the endpoint fail. */
static void cl_worker_destroyed(ferry_context_t *context, ft_peer_t *receiver, const void *address,
                                size_t length)
{
    static cl_send_t sends[2];
    const char *what = "worker destroyed";
    ferry_worker_t *worker = NULL;
    FT_CHECK_OK(ferry_worker_create(context, NULL, &worker));
    ferry_ep_t *ep = cl_open(worker, address, length);
    cl_queue_at_stalled(worker, receiver, ep, 6, sends, 2, what);
    ferry_worker_destroy(worker);
    FT_CHECK(cl_events.count == 2, "%s: %u of 2 queued sends completed", what, cl_events.count);
    for (unsigned i = 0; i < 2; i++)
        FT_CHECK(cl_events.status[i] == FERRY_ERR_CANCELED,
                 "%s: a queued send completed with %s, expected FERRY_ERR_CANCELED", what,
                 ferry_status_name(cl_events.status[i]));
    ft_chan_send_token(receiver->chan, CL_TOKEN_RESUME, 0, 0, 0, 0);
    ft_token_t t;
    ft_chan_send_token(receiver->chan, CL_TOKEN_WAIT_ERROR, 6, 0, 0, 0);
    t = ft_chan_expect_token(receiver->chan, CL_TOKEN_RESULT, 30000);
    ferry_status_t error = (ferry_status_t)(int64_t)t.v[2];
    FT_CHECK(t.v[1] == 1, "%s: the peer received %llu messages, expected only the first", what,
             (unsigned long long)t.v[1]);
    FT_CHECK(error == FERRY_ERR_ENDPOINT_CLOSED || error == FERRY_ERR_CONNECTION_RESET,
             "%s: the peer's accepted endpoint failed with %s", what, ferry_status_name(error));
    ft_note("%s: 2 queued sends canceled; the peer's endpoint failed with %s", what,
            ferry_status_name(error));
}

/* ------------------------------------------------------------------ self */

typedef struct cl_self {
    uint32_t next_seq;
} cl_self_t;

static ferry_status_t cl_self_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    cl_self_t *s = arg;
    cl_hdr_t h;
    (void)params;
    FT_CHECK(header_length == sizeof(h), "self: a %zu-byte header", header_length);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.seq == s->next_seq, "self: seq %u where %u was expected", h.seq, s->next_seq);
    ft_pattern_check(data, length, ft_pattern_seed(h.conn, h.seq, length), 0, "self message");
    s->next_seq++;
    return FERRY_OK;
}

static void cl_self_close(ferry_worker_t *worker)
{
    const void *address;
    size_t length;
    cl_self_t rx = {0};
    FT_CHECK_OK(ferry_worker_address(worker, &address, &length));
    FT_CHECK_OK(ferry_am_set_handler(worker, CL_ID_DATA, cl_self_handler, &rx));
    ferry_ep_t *ep = ft_ep_create(worker, address, length, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(ep), "self") == 0, "not self");
    static cl_send_t big;
    memset(&cl_events, 0, sizeof(cl_events));
    for (uint32_t seq = 0; seq < 9; seq++)
        cl_send_small(worker, ep, 5, seq, seq * 100);
    cl_send_tracked(worker, ep, 5, 9, 100000, &big, 0);
    cl_graceful(worker, ep, 1, "self: graceful close");
    ft_progress_for_ms(worker, 20);
    FT_CHECK(rx.next_seq == 10, "self: %u of 10 messages sent before a graceful close arrived",
             rx.next_seq);
    ferry_ep_destroy(ep);
    ft_note("self: a graceful close delivered the 10 messages queued before it");
}

int main(void)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_peer_t receiver;
    ft_files_t before;
    ft_ferry_t f;

    ft_set_role("sender");
    ft_watchdog(55);
    ft_files_snapshot(&before);
    ft_peer_spawn(&receiver, "receiver", cl_receiver_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(receiver.chan, address, sizeof(address), 30000);

    const char *transports = getenv("FERRY_TRANSPORTS");
    if (transports == NULL || strcmp(transports, "tcp") != 0) {
        cl_graceful_queued(f.worker, &receiver, address, length);
        cl_graceful_connecting(f.worker, &receiver, address, length);
        cl_forced(f.worker, &receiver, address, length);
        cl_worker_destroyed(f.context, &receiver, address, length);
        cl_self_close(f.worker);
        cl_forced_connecting(f.worker, &receiver, address, length, 8, true);
    }
    cl_forced_connecting(f.worker, &receiver, address, length, 7, false);

    ft_chan_send_token(receiver.chan, CL_TOKEN_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&receiver, 30000, 0);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
