/* The tcp transport's data path: requests in the peer's send queue written with writev
 * (several frames per system call, partial writes resumed), and the receive state machine
 * (small frames parsed out of a 64 KiB buffer in batches; large payloads read straight into
 * their destination: the placement an internal handler asked for, or a buffer of their own). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/time.h"
#include "transport/tcp/tcp.h"

/* Pieces one writev takes (frames of several requests together). */
#define TCP_WRITEV_MAX 64u
/* Receive: read() calls one event handles at most, so that one busy socket cannot starve
 * the others; fewer when a large payload (one read straight into its destination; nothing else
 * waits in the receive buffer then) is complete: the poll then returns, and the connection reads
 * nothing more until the next progress call (rx_yield: the worker may poll the transport again in
 * the same call, up to 16 times through its fd set), so that the application can post the receive
 * of the next message before its header is read. Reading on, a receiver that fell behind (a burst
 * of large eager messages waiting in the socket, more than it has receives posted) found every next
 * message unexpected: each went through a buffer and a copy, which kept it behind (tag_bw 1 MiB
 * over tcp ran 4-6 GB/s in about one run of three, 10-12 otherwise; mp_tcp_behind). */
#define TCP_READS_PER_EVENT 16u

/* ------------------------------------------------------------------ requests */

static void tcp_req_free(tcp_req_t *req);

static void tcp_req_deferred_cb(fy_deferred_t *self)
{
    tcp_req_t *req = fy_container_of(self, tcp_req_t, deferred);
    ferry_completion_t *comp = req->comp;
    ferry_status_t status = req->status;
    /* recycled first: the callback may send again (finalize completes the requests still
     * queued here itself: tcp_req_release) */
    tcp_req_free(req);
    fy_pool_put(&req->tlw->reqs, req);
    fy_completion_update(comp, status);
}

void tcp_req_release(void *arg, void *object)
{
    fy_tl_worker_t *tlw = arg;
    tcp_req_t *req = object;
    bool deferred = fy_list_is_linked(&req->deferred.link);
    fy_worker_undefer(tlw->worker, &req->deferred);
    tcp_req_free(req);
    if (deferred)
        fy_completion_update(req->comp, req->status);
}

tcp_req_t *tcp_req_get(fy_tl_worker_t *tlw)
{
    tcp_req_t *req = fy_pool_get(&tlw->reqs);
    if (req == NULL)
        return NULL;
    req->tlw = tlw;
    req->chan = NULL;
    req->comp = NULL;
    req->status = FERRY_OK;
    req->kind = TCP_REQ_CONTROL;
    req->terminate = false;
    req->on_list = false;
    req->iov = req->iov_inline;
    req->iovcnt = 0;
    req->index = 0;
    req->left = 0;
    req->heap = NULL;
    req->peer = NULL;
    req->copied = 0;
    req->total = 0;
    fy_list_init(&req->link);
    fy_list_init(&req->deferred.link);
    req->deferred.cb = tcp_req_deferred_cb;
    return req;
}

static void tcp_req_free(tcp_req_t *req)
{
    free(req->heap);
    req->heap = NULL;
    if (req->iov != req->iov_inline)
        free(req->iov);
    req->iov = req->iov_inline;
}

static void tcp_req_recycle(tcp_req_t *req)
{
    tcp_req_free(req);
    fy_pool_put(&req->tlw->reqs, req);
}

/* The request is finished (written, or dropped with status): out of the queue; its
 * completion, if any, runs from the worker's deferred queue. */
void tcp_req_complete(fy_tl_worker_t *tlw, tcp_req_t *req, ferry_status_t status)
{
    if (req->on_list) {
        fy_list_remove(&req->link);
        req->on_list = false;
        if (req->chan != NULL)
            req->chan->queued--;
        if (req->peer != NULL)
            req->peer->queued_copy -= req->copied;
    }
    if (req->comp == NULL) {
        tcp_req_recycle(req);
        return;
    }
    req->status = status;
    fy_worker_defer(tlw->worker, &req->deferred);
}

/* Bytes of the payload pieces (iov[1..]) not written yet. */
static size_t tcp_req_payload_left(const tcp_req_t *req)
{
    size_t n = 0;
    for (size_t i = req->index > 0 ? req->index : 1; i < req->iovcnt; i++)
        n += req->iov[i].iov_len;
    return n;
}

/* Replace the payload pieces not written yet by one private copy, so that the caller's
 * buffers are free now. Returns false when out of memory. */
static bool tcp_req_copy_payload(tcp_req_t *req)
{
    size_t n = tcp_req_payload_left(req);
    size_t first = req->index > 0 ? req->index : 1;
    if (first >= req->iovcnt)
        return true;
    uint8_t *copy = malloc(n ? n : 1);
    if (copy == NULL) {
        fy_error("tcp: malloc(%zu) for a queued message's copy failed", n);
        return false;
    }
    uint8_t *p = copy;
    for (size_t i = first; i < req->iovcnt; i++) {
        memcpy(p, req->iov[i].iov_base, req->iov[i].iov_len);
        p += req->iov[i].iov_len;
    }
    free(req->heap);
    req->heap = copy;
    req->iov[first].iov_base = copy;
    req->iov[first].iov_len = n;
    req->iovcnt = first + 1;
    return true;
}

/* ------------------------------------------------------------------ writing */

void tcp_conn_set_out(tcp_conn_t *conn, bool want)
{
    if (conn->want_out == want || conn->state == TCP_CONN_DEAD)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = &conn->fd};
    if (epoll_ctl(conn->tlw->epfd, EPOLL_CTL_MOD, conn->fd.fd, &ev) != 0)
        fy_warn("tcp: epoll_ctl(MOD, fd %d of %s) failed: %s", conn->fd.fd, conn->remote_name,
                strerror(errno));
    conn->want_out = want;
}

/* Written completely: what the request finishes besides itself. */
static void tcp_req_written(tcp_peer_t *peer, tcp_req_t *req)
{
    fy_tl_ep_t *chan = req->chan;
    bool terminate = req->terminate;
    tcp_req_complete(peer->tlw, req, FERRY_OK);
    if (terminate && chan != NULL && chan->state == TCP_CHAN_CLOSING) {
        chan->state = TCP_CHAN_GONE;
        tcp_io_drop_chan(chan, false);
        fy_ep_terminated(chan->ep); /* its close completes behind the sends' completions */
    }
}

static fy_log_limit_t tcp_queue_write_log_limit; /* a warning a peer can trigger */

/* Write as much of the queue as the socket takes. Returns FERRY_OK (written or would block)
 * or FERRY_ERR_CONNECTION_RESET (the connection failed: already handled). */
static ferry_status_t tcp_queue_write(tcp_peer_t *peer)
{
    tcp_conn_t *conn = peer->conn;
    if (conn->tx_gone)
        return FERRY_OK; /* stays queued until the reader fails the connection */
    while (!fy_list_is_empty(&peer->queue)) {
        struct iovec vec[TCP_WRITEV_MAX];
        unsigned count = 0;
        for (fy_list_link_t *l = fy_list_first(&peer->queue);
             l != fy_list_end(&peer->queue) && count < TCP_WRITEV_MAX; l = l->next) {
            tcp_req_t *req = fy_list_entry(l, tcp_req_t, link);
            for (size_t i = req->index; i < req->iovcnt && count < TCP_WRITEV_MAX; i++) {
                if (req->iov[i].iov_len > 0)
                    vec[count++] = req->iov[i];
            }
        }
        size_t asked = 0;
        for (unsigned i = 0; i < count; i++)
            asked += vec[i].iov_len;
        struct msghdr msg = {.msg_iov = vec, .msg_iovlen = count};
        ssize_t n = sendmsg(conn->fd.fd, &msg, MSG_NOSIGNAL); /* writev without SIGPIPE */
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                tcp_conn_set_out(conn, true);
                return FERRY_OK;
            }
            if (errno == EINTR)
                continue;
            if (errno == EPIPE || errno == ECONNRESET) {
                /* The peer closed or reset the connection. What it sent before (the CLOSE of
                 * each of its endpoints, when it went away in order) may still wait in our
                 * receive buffer: the reader (epoll reports the socket readable now) handles
                 * that and then the end of the stream, and only endpoints still open then
                 * fail, with one log line. Judging here would fail endpoints the peer closed. */
                fy_debug("tcp: write to %s (pid %u) failed: %s; the reader finishes the "
                         "connection",
                         conn->remote_name, peer->pid, strerror(errno));
                conn->tx_gone = true;
                tcp_conn_set_out(conn, false);
                return FERRY_OK;
            }
            unsigned open = tcp_peer_open_chans(peer);
            if (open > 0)
                fy_warn_limited(&tcp_queue_write_log_limit,
                                "tcp: writev to %s (pid %u) failed: %s; its %u endpoints fail",
                                conn->remote_name, peer->pid, strerror(errno), open);
            else /* a peer going away while we had nothing left to say */
                fy_debug("tcp: writev to %s (pid %u) failed: %s", conn->remote_name, peer->pid,
                         strerror(errno));
            tcp_conn_fail(conn, FERRY_ERR_CONNECTION_RESET);
            return FERRY_ERR_CONNECTION_RESET;
        }
        conn->last_tx_ns = fy_time_coarse_ns();
        size_t done = (size_t)n;
        while (!fy_list_is_empty(&peer->queue)) {
            fy_list_link_t *l = fy_list_first(&peer->queue);
            if (l == fy_list_end(&peer->queue))
                break;
            tcp_req_t *req = fy_list_entry(l, tcp_req_t, link);
            while (req->index < req->iovcnt) {
                struct iovec *v = &req->iov[req->index];
                size_t k = v->iov_len < done ? v->iov_len : done;
                v->iov_base = (uint8_t *)v->iov_base + k;
                v->iov_len -= k;
                done -= k;
                req->left -= k;
                if (v->iov_len > 0)
                    break;
                req->index++;
            }
            if (req->index < req->iovcnt)
                break; /* partly written */
            tcp_req_written(peer, req);
            if (peer->conn != conn)
                return FERRY_OK;
        }
        if ((size_t)n < asked) {
            tcp_conn_set_out(conn, true); /* the socket is full: epoll says when it is not */
            return FERRY_OK;
        }
    }
    tcp_conn_set_out(conn, false);
    return FERRY_OK;
}

void tcp_io_flush(tcp_peer_t *peer)
{
    if (peer->conn != NULL && peer->conn->state == TCP_CONN_ESTABLISHED)
        tcp_queue_write(peer);
}

static ferry_status_t tcp_req_post_frame(tcp_peer_t *peer, tcp_req_t *req, const tcp_frame_t *frame,
                                         fy_tl_ep_t *chan, const void *body, size_t body_length,
                                         bool terminate);

/* Queue req at the tail and write if the connection is up. Returns FERRY_OK when it was
 * written completely at once, FERRY_INPROGRESS when (part of) it waits in the queue, or
 * FERRY_ERR_CONNECTION_RESET. */
static ferry_status_t tcp_req_post(tcp_peer_t *peer, tcp_req_t *req)
{
    bool was_empty = fy_list_is_empty(&peer->queue);
    fy_list_push_tail(&peer->queue, &req->link);
    req->on_list = true;
    req->peer = peer;
    if (req->total == 0) /* else: the rest of a frame partly sent already */
        req->total = req->left;
    if (req->chan != NULL)
        req->chan->queued++;
    if (!was_empty || peer->conn == NULL || peer->conn->state != TCP_CONN_ESTABLISHED)
        return FERRY_INPROGRESS;
    /* the request is the queue's only one: written now unless the socket is full */
    req->comp = NULL; /* not yet: tcp_req_complete would defer it */
    ferry_status_t status = tcp_queue_write(peer);
    if (status != FERRY_OK)
        return status;
    return req->on_list ? FERRY_INPROGRESS : FERRY_OK;
}

ferry_status_t tcp_send_control(tcp_peer_t *peer, fy_tl_ep_t *chan, uint8_t type, const void *body,
                                size_t body_length, bool terminate)
{
    tcp_req_t *req = tcp_req_get(peer->tlw);
    if (req == NULL)
        return FERRY_ERR_NO_MEMORY;
    tcp_frame_t frame = {.type = type, .length = body_length};
    if (chan != NULL) {
        frame.channel = chan->id;
        frame.flags = chan->mine ? TCP_FRAME_FLAG_SENDER_OPENED : 0;
    }
    return tcp_req_post_frame(peer, req, &frame, chan, body, body_length, terminate);
}

ferry_status_t tcp_send_frame(tcp_peer_t *peer, fy_tl_ep_t *chan, uint32_t id, bool mine,
                              uint8_t type, const void *body, size_t body_length)
{
    tcp_req_t *req = tcp_req_get(peer->tlw);
    if (req == NULL)
        return FERRY_ERR_NO_MEMORY;
    tcp_frame_t frame = {.type = type,
                         .length = body_length,
                         .channel = id,
                         .flags = mine ? TCP_FRAME_FLAG_SENDER_OPENED : 0};
    return tcp_req_post_frame(peer, req, &frame, chan, body, body_length, false);
}

static ferry_status_t tcp_req_post_frame(tcp_peer_t *peer, tcp_req_t *req, const tcp_frame_t *frame,
                                         fy_tl_ep_t *chan, const void *body, size_t body_length,
                                         bool terminate)
{
    uint8_t type = frame->type;
    tcp_frame_encode(frame, req->head);
    if (body_length > 0)
        memcpy(req->head + TCP_FRAME_HEADER_SIZE, body, body_length);
    req->kind = type == TCP_FRAME_OPEN    ? TCP_REQ_OPEN
                : type == TCP_FRAME_CLOSE ? TCP_REQ_CLOSE
                                          : TCP_REQ_CONTROL;
    req->chan = chan;
    req->terminate = terminate;
    req->iov[0].iov_base = req->head;
    req->iov[0].iov_len = TCP_FRAME_HEADER_SIZE + body_length;
    req->iovcnt = 1;
    req->left = req->iov[0].iov_len;
    return tcp_req_post(peer, req);
}

/* Write the frame header of an active message of chan, and its am header behind it, into out
 * (room for TCP_FRAME_HEADER_SIZE + header_length bytes). Returns the bytes written. */
static size_t tcp_am_head_encode(const fy_tl_ep_t *chan, uint8_t id, const void *header,
                                 size_t header_length, uint64_t length, uint8_t *out)
{
    tcp_frame_t frame = {.type = TCP_FRAME_AM,
                         .am_id = id,
                         .flags = chan->mine ? TCP_FRAME_FLAG_SENDER_OPENED : 0,
                         .header_length = (uint16_t)header_length,
                         .channel = chan->id,
                         .length = length};
    tcp_frame_encode(&frame, out);
    if (header_length > 0)
        memcpy(out + TCP_FRAME_HEADER_SIZE, header, header_length);
    return TCP_FRAME_HEADER_SIZE + header_length;
}

/* The fast path of a small message (header + payload within TCP_REQ_INLINE): when nothing is
 * queued, the frame is built on the stack and handed to the kernel with one send(), as one
 * contiguous buffer, with no request. Returns FERRY_OK (all of it went, or the rest is queued
 * from a copy) or FERRY_ERR_UNSUPPORTED (not on the fast path now, nothing written: use
 * tcp_send_am). */
ferry_status_t tcp_send_short_now(fy_tl_ep_t *chan, uint8_t id, const void *header,
                                  size_t header_length, const void *payload, size_t length)
{
    tcp_peer_t *peer = chan->peer;
    tcp_conn_t *conn = peer->conn;
    uint8_t bytes[TCP_REQ_INLINE];
    size_t total = TCP_FRAME_HEADER_SIZE + header_length + length;

    if (fy_unlikely(chan->state != TCP_CHAN_OPEN || peer->failed || conn == NULL ||
                    conn->state != TCP_CONN_ESTABLISHED || conn->tx_gone ||
                    !fy_list_is_empty(&peer->queue) || total > sizeof(bytes)))
        return FERRY_ERR_UNSUPPORTED;
    size_t head = tcp_am_head_encode(chan, id, header, header_length, length, bytes);
    if (length > 0)
        memcpy(bytes + head, payload, length);
    ssize_t n = send(conn->fd.fd, bytes, total, MSG_NOSIGNAL);
    if (fy_likely(n == (ssize_t)total)) {
        conn->last_tx_ns = fy_time_coarse_ns();
        return FERRY_OK;
    }
    if (n <= 0)
        return FERRY_ERR_UNSUPPORTED; /* full (or failed): the queued path takes it and sees */
    /* part of the frame is on the wire: the rest goes first in the queue, from a copy */
    conn->last_tx_ns = fy_time_coarse_ns();
    tcp_req_t *req = tcp_req_get(peer->tlw);
    if (req == NULL) {
        tcp_conn_fail(conn, FERRY_ERR_NO_MEMORY); /* a frame cut short cannot be withdrawn */
        return FERRY_ERR_CONNECTION_RESET;
    }
    size_t rest = total - (size_t)n;
    memcpy(req->head, bytes + n, rest);
    req->kind = TCP_REQ_AM;
    req->chan = chan;
    req->iov[0].iov_base = req->head;
    req->iov[0].iov_len = rest;
    req->iovcnt = 1;
    req->left = rest;
    req->total = total; /* started: tcp_io_drop_chan lets it finish */
    ferry_status_t status = tcp_req_post(peer, req);
    return status == FERRY_INPROGRESS ? FERRY_OK : status;
}

ferry_status_t tcp_send_am(fy_tl_ep_t *chan, uint8_t id, const void *header, size_t header_length,
                           const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp,
                           bool may_queue_copy)
{
    tcp_peer_t *peer = chan->peer;
    fy_tl_worker_t *tlw = peer->tlw;
    size_t length = 0;

    if (fy_unlikely(chan->state != TCP_CHAN_OPEN))
        return chan->state == TCP_CHAN_CLOSING ? FERRY_ERR_ENDPOINT_CLOSED
                                               : FERRY_ERR_CONNECTION_RESET;
    if (fy_unlikely(peer->failed))
        return FERRY_ERR_CONNECTION_RESET;
    for (size_t i = 0; i < iovcnt; i++)
        length += iov[i].length;
    bool queued = !fy_list_is_empty(&peer->queue) || peer->conn == NULL ||
                  peer->conn->state != TCP_CONN_ESTABLISHED;
    bool small = length <= TCP_COPY_MAX;
    if (queued && small && may_queue_copy && peer->queued_copy + length > tlw->queue_max &&
        peer->conn != NULL && peer->conn->state == TCP_CONN_ESTABLISHED)
        return FERRY_ERR_NO_RESOURCE; /* back-pressure: the peer does not read */
    (void)small;

    tcp_req_t *req = tcp_req_get(tlw);
    if (req == NULL)
        return FERRY_ERR_NO_MEMORY;
    size_t head = tcp_am_head_encode(chan, id, header, header_length, length, req->head);
    req->kind = TCP_REQ_AM;
    req->chan = chan;
    if (iovcnt > TCP_REQ_IOV_INLINE) {
        req->iov = malloc((1 + iovcnt) * sizeof(*req->iov));
        if (req->iov == NULL) {
            fy_error("tcp: malloc(%zu) for %zu pieces of a message failed",
                     (1 + iovcnt) * sizeof(*req->iov), iovcnt);
            req->iov = req->iov_inline;
            tcp_req_recycle(req);
            return FERRY_ERR_NO_MEMORY;
        }
    }
    req->iovcnt = 1;
    if (length > 0 && length + head <= TCP_REQ_INLINE && iovcnt > 1) {
        /* small and scattered: one piece */
        uint8_t *p = req->head + head;
        for (size_t i = 0; i < iovcnt; i++) {
            memcpy(p, iov[i].buffer, iov[i].length);
            p += iov[i].length;
        }
        head += length;
    } else {
        for (size_t i = 0; i < iovcnt; i++) {
            if (iov[i].length == 0)
                continue;
            req->iov[req->iovcnt].iov_base = iov[i].buffer;
            req->iov[req->iovcnt].iov_len = iov[i].length;
            req->iovcnt++;
        }
    }
    req->iov[0].iov_base = req->head;
    req->iov[0].iov_len = head;
    req->left = head + (req->iovcnt > 1 ? length : 0);

    ferry_status_t status = tcp_req_post(peer, req);
    if (status == FERRY_OK || status == FERRY_ERR_CONNECTION_RESET)
        return status;
    /* (part of) the message waits in the queue: its bytes count against queue_max */
    if (small || (comp == NULL && queued)) {
        if (!tcp_req_copy_payload(req)) {
            if (req->left == req->total) { /* nothing written: withdraw it */
                tcp_req_complete(tlw, req, FERRY_ERR_NO_MEMORY);
                return FERRY_ERR_NO_MEMORY;
            }
            tcp_conn_fail(peer->conn, FERRY_ERR_NO_MEMORY);
            return FERRY_ERR_NO_MEMORY;
        }
        status = FERRY_OK;
    } else {
        req->comp = comp;
        status = FERRY_INPROGRESS;
    }
    if (req->on_list) {
        req->copied = req->left;
        peer->queued_copy += req->left;
    }
    return status;
}

/* Complete every queued request with status (the connection is gone). */
void tcp_io_drop_queue(tcp_peer_t *peer, ferry_status_t status)
{
    fy_list_link_t *link;
    while ((link = fy_list_first(&peer->queue)) != fy_list_end(&peer->queue)) {
        tcp_req_t *req = fy_list_entry(link, tcp_req_t, link);
        tcp_req_complete(peer->tlw, req, status);
    }
    peer->queued_copy = 0;
}

/* Whether req is an active message whose send completed already: a small one queued from a
 * private copy with no completion (tcp_send_am returned FERRY_OK while the connection was
 * being set up or the queue was not empty). Its sender was told it is sent. */
static bool tcp_req_sent_already(const tcp_req_t *req)
{
    return req->kind == TCP_REQ_AM && req->comp == NULL && req->copied > 0;
}

/* The channel goes away: its queued requests are canceled (one partly written stays, with
 * its remaining payload copied, so that the frame ends whole), and a payload being read for
 * it is discarded from now on. With keep_sent (a forced close by this side), messages whose
 * send completed already stay queued, with the channel's OPEN in front of them: they were
 * reported sent, so they reach the peer if the connection lives (issue 13: such a message was
 * lost when an endpoint was force-closed while its connection was being set up). Returns
 * whether any did: the caller then queues CLOSE behind them. */
bool tcp_io_drop_chan(fy_tl_ep_t *chan, bool keep_sent)
{
    tcp_peer_t *peer = chan->peer;
    fy_list_link_t *next;
    bool keep = false;
    for (fy_list_link_t *l = fy_list_first(&peer->queue);
         keep_sent && l != fy_list_end(&peer->queue); l = l->next) {
        tcp_req_t *req = fy_list_entry(l, tcp_req_t, link);
        if (req->chan == chan && tcp_req_sent_already(req))
            keep = true;
    }
    for (fy_list_link_t *l = fy_list_first(&peer->queue); l != fy_list_end(&peer->queue);
         l = next) {
        next = l->next;
        tcp_req_t *req = fy_list_entry(l, tcp_req_t, link);
        if (req->chan != chan)
            continue;
        bool started = req->left < req->total;
        if (req->kind == TCP_REQ_CLOSE && req->terminate && chan->state == TCP_CHAN_CLOSING)
            started = true; /* still tells the peer */
        if (keep && (tcp_req_sent_already(req) || req->kind == TCP_REQ_OPEN)) {
            req->chan = NULL; /* written like a frame of no channel */
            chan->queued--;
            continue;
        }
        if (started) {
            /* on the wire already: finish the frame from a private copy */
            ferry_completion_t *comp = req->comp;
            if (req->kind == TCP_REQ_AM && !tcp_req_copy_payload(req)) {
                tcp_conn_fail(peer->conn, FERRY_ERR_NO_MEMORY);
                return false;
            }
            req->comp = NULL;
            req->chan = NULL;
            req->terminate = false;
            chan->queued--;
            if (comp != NULL) {
                /* its completion still runs from progress */
                tcp_req_t *note = tcp_req_get(peer->tlw);
                if (note != NULL) {
                    note->comp = comp;
                    tcp_req_complete(peer->tlw, note, FERRY_ERR_CANCELED);
                }
            }
            continue;
        }
        tcp_req_complete(peer->tlw, req, FERRY_ERR_CANCELED);
    }
    if (peer->conn != NULL && peer->conn->rx_chan == chan) {
        peer->conn->rx_chan = NULL;
        if (peer->conn->rx_placed)
            peer->conn->rx_dest = NULL; /* the rest is read and dropped */
    }
    return keep;
}

/* ------------------------------------------------------------------ reading */

static fy_log_limit_t tcp_rx_bad_frame_log_limit;   /* a warning a peer can trigger */
static fy_log_limit_t tcp_rx_bad_frame_log_limit_2; /* a warning a peer can trigger */

static void tcp_rx_bad_frame(tcp_conn_t *conn, tcp_frame_verdict_t verdict, const uint8_t *raw)
{
    fy_tl_worker_t *tlw = conn->tlw;
    if (verdict == TCP_FRAME_TOO_LONG) {
        uint64_t length = 0;
        for (int i = 7; i >= 0; i--)
            length = (length << 8) | raw[16 + i];
        fy_warn_limited(&tcp_rx_bad_frame_log_limit,
                        "tcp: closing the connection from %s: frame of %llu bytes is longer than "
                        "FERRY_TCP_MAX_FRAME (%llu); raise FERRY_TCP_MAX_FRAME on this side if the "
                        "peer really sends such messages",
                        conn->remote_name, (unsigned long long)length,
                        (unsigned long long)tlw->max_frame);
    } else {
        fy_warn_limited(&tcp_rx_bad_frame_log_limit_2,
                        "tcp: closing the connection from %s: bad frame header (%s; first bytes "
                        "%02x %02x %02x %02x): the peer is not a ferry worker of this version (is "
                        "another program connecting to this port?)",
                        conn->remote_name, tcp_frame_verdict_string(verdict), raw[0], raw[1],
                        raw[2], raw[3]);
    }
    tcp_conn_fail(conn, FERRY_ERR_PROTOCOL);
}

/* A large payload's destination: the handler's placement (a receive straight into the
 * user's buffer) or a buffer of our own. Returns false when out of memory. */
static bool tcp_rx_start_direct(tcp_conn_t *conn)
{
    const tcp_frame_t *frame = &conn->rx_frame;
    conn->rx_chan = NULL;
    conn->rx_dest = NULL;
    conn->rx_placed = false;
    conn->rx_done = 0;
    if (conn->peer != NULL && conn->state == TCP_CONN_ESTABLISHED)
        conn->rx_chan = tcp_chan_find(conn->peer, frame->channel,
                                      !(frame->flags & TCP_FRAME_FLAG_SENDER_OPENED));
    if (conn->rx_chan == NULL || conn->rx_chan->state == TCP_CHAN_GONE) {
        conn->rx_chan = NULL;
        return true; /* read and dropped */
    }
    void *place = fy_am_place(conn->tlw->worker, conn->rx_chan->ep, frame->am_id, conn->rx_header,
                              frame->header_length, frame->length);
    if (place != NULL) {
        conn->rx_dest = place;
        conn->rx_placed = true;
        return true;
    }
    conn->rx_dest = fy_am_buffer_alloc(frame->length ? frame->length : 1);
    return conn->rx_dest != NULL;
}

static void tcp_rx_finish_direct(tcp_conn_t *conn)
{
    const tcp_frame_t *frame = &conn->rx_frame;
    fy_tl_ep_t *chan = conn->rx_chan;
    uint8_t *dest = conn->rx_dest;
    bool placed = conn->rx_placed;
    conn->rx_state = TCP_RX_HEADER;
    conn->rx_chan = NULL;
    conn->rx_dest = NULL;
    conn->rx_placed = false;
    conn->rx_read_short = true; /* another large frame may come next: see tcp_io_recv */
    if (chan == NULL) {
        if (dest != NULL && !placed)
            fy_am_buffer_free(dest);
        return;
    }
    if (placed)
        fy_am_deliver(conn->tlw->worker, chan->ep, frame->am_id, conn->rx_header,
                      frame->header_length, dest, frame->length, FY_AM_RECV_PLACED);
    else
        fy_am_deliver_buffer(conn->tlw->worker, chan->ep, frame->am_id, conn->rx_header,
                             frame->header_length, dest, frame->length);
}

/* Read (some of) the large payload being received. Returns what read() returned. */
static ssize_t tcp_rx_payload(tcp_conn_t *conn)
{
    uint64_t want = conn->rx_frame.length - conn->rx_done;
    uint8_t *dst = conn->rx_dest != NULL ? conn->rx_dest + conn->rx_done : conn->rxbuf;
    size_t n = want > SSIZE_MAX ? SSIZE_MAX : (size_t)want;
    if (conn->rx_dest == NULL && n > TCP_RXBUF_SIZE)
        n = TCP_RXBUF_SIZE; /* dropped: read through the buffer */
    ssize_t got = read(conn->fd.fd, dst, n);
    if (got <= 0)
        return got;
    conn->last_rx_ns = fy_time_coarse_ns();
    conn->rx_done += (uint64_t)got;
    if (conn->rx_done == conn->rx_frame.length)
        tcp_rx_finish_direct(conn);
    return got;
}

/* Parse the frames in the receive buffer. Returns false when the connection died. */
static bool tcp_rx_parse(tcp_conn_t *conn)
{
    fy_tl_worker_t *tlw = conn->tlw;
    while (conn->rx_state == TCP_RX_HEADER) {
        size_t avail = conn->rx_end - conn->rx_start;
        const uint8_t *p = conn->rxbuf + conn->rx_start;
        tcp_frame_t frame;
        if (avail < TCP_FRAME_HEADER_SIZE) {
            /* the magic alone already tells a program that is not ferry (nc sending text) */
            uint8_t head[TCP_FRAME_HEADER_SIZE] = {0};
            memcpy(head, p, avail);
            head[4] = TCP_FRAME_VERSION;
            head[5] = TCP_FRAME_PING;
            if (avail >= 4 &&
                tcp_frame_decode(head, tlw->max_frame, &frame) == TCP_FRAME_BAD_MAGIC) {
                tcp_rx_bad_frame(conn, TCP_FRAME_BAD_MAGIC, p);
                return false;
            }
            break;
        }
        tcp_frame_verdict_t verdict = tcp_frame_decode(p, tlw->max_frame, &frame);
        if (verdict != TCP_FRAME_OK) {
            tcp_rx_bad_frame(conn, verdict, p);
            return false;
        }
        uint64_t body = (uint64_t)frame.header_length + frame.length;
        if (TCP_FRAME_HEADER_SIZE + body <= avail) {
            conn->rx_start += TCP_FRAME_HEADER_SIZE + (size_t)body;
            tcp_conn_on_frame(conn, &frame, p + TCP_FRAME_HEADER_SIZE);
            if (conn->state == TCP_CONN_DEAD)
                return false;
            continue;
        }
        if (TCP_FRAME_HEADER_SIZE + body <= TCP_RXBUF_SIZE && frame.length < TCP_RX_DIRECT_MIN)
            break; /* read more into the buffer */
        if (avail < TCP_FRAME_HEADER_SIZE + frame.header_length)
            break;
        if (frame.type != TCP_FRAME_AM || conn->state != TCP_CONN_ESTABLISHED) {
            tcp_rx_bad_frame(conn, TCP_FRAME_BAD_LENGTH, p);
            return false;
        }
        conn->rx_frame = frame;
        memcpy(conn->rx_header, p + TCP_FRAME_HEADER_SIZE, frame.header_length);
        conn->rx_start += TCP_FRAME_HEADER_SIZE + frame.header_length;
        if (!tcp_rx_start_direct(conn)) {
            tcp_conn_fail(conn, FERRY_ERR_NO_MEMORY);
            return false;
        }
        conn->rx_state = TCP_RX_PAYLOAD;
        size_t have = conn->rx_end - conn->rx_start;
        size_t k = have < frame.length ? have : (size_t)frame.length;
        if (conn->rx_dest != NULL && k > 0)
            memcpy(conn->rx_dest, conn->rxbuf + conn->rx_start, k);
        conn->rx_start += k;
        conn->rx_done = k;
        if (conn->rx_done == frame.length)
            tcp_rx_finish_direct(conn);
    }
    if (conn->rx_start == conn->rx_end) {
        conn->rx_start = conn->rx_end = 0;
    } else if (conn->rx_start > 0 && conn->rx_state == TCP_RX_HEADER) {
        memmove(conn->rxbuf, conn->rxbuf + conn->rx_start, conn->rx_end - conn->rx_start);
        conn->rx_end -= conn->rx_start;
        conn->rx_start = 0;
    }
    return true;
}

static fy_log_limit_t tcp_rx_eof_log_limit;   /* a warning a peer can trigger */
static fy_log_limit_t tcp_rx_eof_log_limit_2; /* a warning a peer can trigger */
static fy_log_limit_t tcp_rx_eof_log_limit_3; /* a warning a peer can trigger */

static void tcp_rx_eof(tcp_conn_t *conn, int err)
{
    tcp_peer_t *peer = conn->peer;
    bool partial = conn->rx_end > conn->rx_start || conn->rx_state == TCP_RX_PAYLOAD;
    if (conn->state == TCP_CONN_ACCEPTING) {
        if (partial)
            fy_warn_limited(
                &tcp_rx_eof_log_limit,
                "tcp: closing the connection from %s: it ended in the middle of a frame "
                "before its HELLO (%zu bytes) (not a ferry worker, or it died)",
                conn->remote_name, conn->rx_end - conn->rx_start);
        else
            fy_debug("tcp: connection from %s closed before its HELLO", conn->remote_name);
        tcp_conn_fail(conn, FERRY_ERR_CONNECTION_RESET);
        return;
    }
    /* Only endpoints still open fail: when every one was closed (by either side, the CLOSE
     * frames read before this end of the stream), the peer went away in order. */
    unsigned open =
        peer != NULL && peer->conn == conn && !peer->failed ? tcp_peer_open_chans(peer) : 0;
    if (open > 0) {
        tcp_worker_note_stall(conn->tlw, fy_time_coarse_ns());
        if (err != 0)
            fy_warn_limited(&tcp_rx_eof_log_limit_2,
                            "tcp: connection to %s (pid %u) failed: %s; its %u endpoints fail",
                            conn->remote_name, peer->pid, strerror(err), open);
        else
            fy_warn_limited(&tcp_rx_eof_log_limit_3,
                            "tcp: connection to %s (pid %u) closed by the peer%s; its %u endpoints "
                            "fail",
                            conn->remote_name, peer->pid,
                            partial ? " in the middle of a frame"
                                    : " (the process died or "
                                      "destroyed its worker)",
                            open);
    } else if (peer != NULL && peer->conn == conn) {
        fy_debug("tcp: connection to %s (pid %u) ended%s after its endpoints were closed",
                 conn->remote_name, peer->pid, err != 0 ? " with an error" : "");
    }
    tcp_conn_fail(conn, FERRY_ERR_CONNECTION_RESET);
}

/* Read and handle what the socket has (at most TCP_READS_PER_EVENT reads). Returns true when
 * something was read or the connection ended (an event), false when the socket had nothing. */
bool tcp_io_recv(tcp_conn_t *conn)
{
    bool got_any = false;
    if (conn->rx_yield) {
        if (*conn->tlw->local->progress_calls == conn->rx_yield_call)
            return false; /* the application has not had control since */
        conn->rx_yield = false;
    }
    for (unsigned reads = 0; reads < TCP_READS_PER_EVENT; reads++) {
        ssize_t got;
        if (conn->rx_state == TCP_RX_PAYLOAD) {
            got = tcp_rx_payload(conn);
            if (got > 0) {
                got_any = true;
                if (conn->rx_state == TCP_RX_HEADER) {
                    /* a large payload is in: see TCP_READS_PER_EVENT */
                    conn->rx_yield = true;
                    conn->rx_yield_call = *conn->tlw->local->progress_calls;
                    return true;
                }
                continue;
            }
        } else {
            size_t room = TCP_RXBUF_SIZE - conn->rx_end;
            if (conn->rx_read_short) {
                /* After a payload read straight into its destination, the next frame is often
                 * another large one: a full-sized read would pull up to 64 KiB of its payload
                 * through the receive buffer (one copy more); a short one takes its header and
                 * the small frames before it, and the payload then goes straight through. */
                conn->rx_read_short = false;
                if (room > TCP_RX_SHORT_READ)
                    room = TCP_RX_SHORT_READ;
            }
            got = read(conn->fd.fd, conn->rxbuf + conn->rx_end, room);
            if (got > 0) {
                got_any = true;
                conn->last_rx_ns = fy_time_coarse_ns();
                conn->rx_end += (size_t)got;
                if (!tcp_rx_parse(conn))
                    return true;
                if ((size_t)got < room && conn->rx_state == TCP_RX_HEADER)
                    return true; /* less than asked for: drained (epoll, level-triggered, says
                                    when there is more); another read would find EAGAIN */
                continue;
            }
        }
        if (got == 0) {
            tcp_rx_eof(conn, 0);
            return true;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return got_any;
        if (errno == EINTR)
            continue;
        tcp_rx_eof(conn, errno);
        return true;
    }
    return got_any;
}

ferry_status_t tcp_io_write_now(tcp_conn_t *conn, const void *bytes, size_t length)
{
    ssize_t n = send(conn->fd.fd, bytes, length, MSG_NOSIGNAL);
    if (n == (ssize_t)length) {
        conn->last_tx_ns = fy_time_coarse_ns();
        return FERRY_OK;
    }
    return FERRY_ERR_IO;
}
