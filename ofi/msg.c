/*
 * libferry-fi — FI_TAGGED and FI_MSG over ferry's tagged messages.
 *
 * The ferry tag of a message: on an endpoint with FI_MSG, bit 63 set for FI_MSG (clear for
 * FI_TAGGED) and bits 62..0 the application's tag; on one without FI_MSG all 64 bits are the
 * application's (ep->tag_format, mem_tag_format). An FI_MSG receive matches every FI_MSG
 * message; a tagged receive matches its tag outside the ignore bits. The payload is the
 * application's, nothing in front. ferry says who sent a message (ferry_tag_info_t.peer, the worker
 * id the AV maps to an fi_addr: FI_SOURCE); with FI_DIRECTED_RECV a source address makes the
 * receive or probe ferry's source-directed one (ferry_tag_recv_from, ferry_tag_probe_from). Remote
 * CQ data is ferry's immediate data (FERRY_TAG_SEND_IMM), which a probe (FI_PEEK) reports too.
 *
 * Completions: a send completes when ferry says its buffers are free (FI_TRANSMIT_COMPLETE,
 * FI_INJECT_COMPLETE), or, with FI_DELIVERY_COMPLETE, when the receiver matched it (ferry's
 * synchronous send, FERRY_TAG_SEND_SYNC: MPI_Ssend). fi_inject copies the data into the
 * request and writes no entry.
 */
#include <string.h>

#include "ofi.h"

#define MSG_SEND_FLAGS                                                                             \
    (FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |   \
     FI_DELIVERY_COMPLETE | FI_MORE | FI_FENCE)
#define MSG_RECV_FLAGS (FI_COMPLETION | FI_MORE)
#define TAGGED_RECV_FLAGS (MSG_RECV_FLAGS | FI_PEEK | FI_CLAIM | FI_DISCARD)

static fy_ofi_ep_t *ep_of(struct fid_ep *fid)
{
    return FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
}

/* The iov of a message: the application's non-empty pieces. Returns 0 or -FI_EINVAL (too many
 * pieces). */
static int iov_build(fy_ofi_req_t *req, const struct iovec *iov, size_t count)
{
    if (count == 1 && iov != NULL) {
        req->iov[0].buffer = iov[0].iov_base;
        req->iov[0].length = iov[0].iov_len;
        req->iovcnt = iov[0].iov_len > 0;
        req->len = iov[0].iov_len;
        req->buf = iov[0].iov_base;
        return 0;
    }
    if (count > FY_OFI_IOV_LIMIT || (count > 0 && iov == NULL))
        return -FI_EINVAL;
    size_t n = 0;
    size_t len = 0;
    for (size_t i = 0; i < count; i++) {
        if (iov[i].iov_len == 0)
            continue;
        req->iov[n].buffer = iov[i].iov_base;
        req->iov[n].length = iov[i].iov_len;
        len += iov[i].iov_len;
        n++;
    }
    req->iovcnt = n;
    req->len = len;
    req->buf = count > 0 ? iov[0].iov_base : NULL;
    return 0;
}

/* ---------------------------------------------------------------- sends */

static fy_ofi_hot void send_done_cb(ferry_completion_t *comp)
{
    fy_ofi_req_t *req = FY_OFI_CONTAINER(comp, fy_ofi_req_t, comp);
    fy_ofi_req_complete(req, comp->status);
}

/* Copy the n bytes (at most FY_OFI_INJECT_SIZE) of a one-piece inject: 8 to 16 bytes (an MPI
 * message of one or two words) by two overlapping loads and stores instead of a call of
 * memcpy. */
static inline void inject_copy(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t head, tail;
        memcpy(&head, src, sizeof(head));
        memcpy(&tail, src + n - sizeof(tail), sizeof(tail));
        memcpy(dst, &head, sizeof(head));
        memcpy(dst + n - sizeof(tail), &tail, sizeof(tail));
    } else if (n > 0) {
        memcpy(dst, src, n);
    }
}

/* The entry of a send ferry finished in the call (FERRY_OK), written without taking a request:
 * what fy_ofi_req_complete writes for a send request (no remote CQ data, no buffer). */
static inline __attribute__((always_inline)) void send_entry(fy_ofi_ep_t *ep, void *context,
                                                             uint64_t cq_flags, size_t len,
                                                             uint64_t tag, fi_addr_t dest)
{
    fy_ofi_cq_t *cq = ep->tx_cq;
    if (ep->destroying || cq == NULL)
        return;
    fy_ofi_cq_success(cq, context, cq_flags, len, NULL, 0, tag, dest);
}

/* flags: the operation's (FI_INJECT copies the data; the entry follows FI_COMPLETION);
 * inject_call: fi_inject/fi_tinject*, which write no entry at all.
 *
 * The request is taken only when ferry keeps it: a send ferry finished at once (FERRY_OK, the
 * small sends of a connected endpoint) leaves it free, so that the send costs ferry's call, the
 * copy of an inject, the counter and, when one is due, the entry (send_entry). */
static inline __attribute__((always_inline)) ssize_t
send_common(fy_ofi_ep_t *ep, const struct iovec *iov, size_t count, fi_addr_t dest, uint64_t tag,
            uint64_t data, void *context, uint64_t flags, bool tagged, bool inject_call)
{
    if (flags & ~MSG_SEND_FLAGS)
        return -FI_EBADFLAGS;
    if (tagged && (tag & ~ep->tag_format))
        return -FI_EINVAL;
    size_t total = count == 1 && iov != NULL ? iov[0].iov_len : 0;
    for (size_t i = 0; count > 1 && i < count && iov != NULL; i++)
        total += iov[i].iov_len;
    if (total > FY_OFI_MAX_MSG_SIZE)
        return -FI_EMSGSIZE;
    bool inject = inject_call || (flags & FI_INJECT) != 0;
    if (inject && total > FY_OFI_INJECT_SIZE)
        return -FI_EMSGSIZE;
    ssize_t rc;
    fy_ofi_domain_lock(ep->domain);
    if (!ep->enabled) {
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    fy_ofi_peer_t *peer;
    ferry_status_t st = fy_ofi_ep_peer(ep, dest, &peer);
    if (st != FERRY_OK) {
        rc = st == FERRY_ERR_INVALID_ADDRESS ? -FI_EINVAL : fy_ofi_errno(st);
        goto out;
    }
    fy_ofi_req_t *req = fy_ofi_req_next(ep, FY_OFI_BUDGET_TX);
    if (req == NULL) {
        rc = -FI_EAGAIN;
        goto out;
    }
    if (inject) {
        /* the caller's buffer is free when this returns: send a copy */
        size_t off = 0;
        if (count == 1 && iov != NULL) {
            inject_copy(req->inject, iov[0].iov_base, total);
            off = total;
        }
        for (size_t i = 0; count > 1 && i < count; i++) {
            if (iov[i].iov_len > 0)
                memcpy(req->inject + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
        req->iov[0].buffer = req->inject;
        req->iov[0].length = off;
        req->iovcnt = 1;
        req->len = total;
    } else {
        rc = iov_build(req, iov, count);
        if (rc != 0)
            goto out;
    }
    ferry_tag_send_params_t params = {.flags = 0};
    if (flags & FI_REMOTE_CQ_DATA) {
        params.flags |= FERRY_TAG_SEND_IMM;
        params.imm = data;
    }
    if ((flags & FI_DELIVERY_COMPLETE) && !inject_call)
        params.flags |= FERRY_TAG_SEND_SYNC;
    bool entry = !inject_call && (!ep->tx_selective || (flags & FI_COMPLETION));
    req->comp.cb = send_done_cb;
    req->comp.count = 1;
    req->comp.status = FERRY_OK;
    st = ferry_tag_send_ext(peer->fep, req->iov, req->iovcnt, tagged ? tag : FY_OFI_TAG_MSG_BIT,
                            params.flags != 0 ? &params : NULL, &req->comp);
    if (st != FERRY_OK && st != FERRY_INPROGRESS) {
        req->comp.count = -1; /* left free */
        rc = fy_ofi_errno(st);
        goto out;
    }
    rc = 0;
    if (st == FERRY_OK) {
        /* ferry finished it in the call: the request is left free and the entry, if one is
         * due, written at once (the completion of an MPI_Isend that fits a ring cell) */
        req->comp.count = -1;
        fy_ofi_cntr_count(ep->cntr_send, false);
        if (entry)
            send_entry(ep, context, FI_SEND | (tagged ? FI_TAGGED : FI_MSG), total, tag, dest);
        goto out;
    }
    fy_ofi_req_take(ep, req, FY_OFI_REQ_SEND, FY_OFI_BUDGET_TX);
    req->context = context;
    req->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
    req->addr = dest;
    req->tag = tag;
    req->cntr = ep->cntr_send;
    req->fep = peer->fep;
    if (entry)
        req->flags |= FY_OFI_REQ_CQ;
out:
    fy_ofi_domain_unlock(ep->domain);
    return rc;
}

/* ---------------------------------------------------------------- receives */

static void recv_finish(fy_ofi_req_t *req, ferry_status_t status)
{
    fy_ofi_ep_t *ep = req->ep;
    req->flags &= ~FY_OFI_REQ_POSTED;
    if (status == FERRY_OK || status == FERRY_ERR_MESSAGE_TRUNCATED) {
        size_t msg_len = req->info.length;
        size_t placed = msg_len < req->len ? msg_len : req->len;
        req->tag = req->info.tag & ep->tag_format;
        req->addr = fy_ofi_av_source(ep->av, req->info.peer);
        if (req->info.flags & FERRY_TAG_INFO_IMM) {
            req->data = req->info.imm;
            req->cq_flags |= FI_REMOTE_CQ_DATA;
        }
        if (req->flags & FY_OFI_REQ_DISCARD) {
            /* FI_DISCARD: dropped on purpose; FI_PEEK|FI_DISCARD reports the message's size */
            req->len = (req->flags & FY_OFI_REQ_PEEK) ? msg_len : 0;
            fy_ofi_req_complete(req, FERRY_OK);
            return;
        }
        req->len = placed;
        if (msg_len > placed) {
            req->olen = msg_len - placed;
            fy_ofi_req_complete(req, FERRY_ERR_MESSAGE_TRUNCATED);
            return;
        }
        fy_ofi_req_complete(req, FERRY_OK);
        return;
    }
    req->len = 0;
    fy_ofi_req_complete(req, status);
}

/* The entry of a receive that placed the whole message (no truncation, no discard), written
 * straight from what ferry reported (info), without recv_finish's copies into a request: it is
 * on the path of every message a rank gets. cq_wanted: FY_OFI_REQ_CQ's condition. */
static inline __attribute__((always_inline)) void recv_entry(fy_ofi_ep_t *ep, bool cq_wanted,
                                                             void *context, uint64_t cq_flags,
                                                             void *buf,
                                                             const ferry_tag_info_t *info)
{
    fy_ofi_cntr_count(ep->cntr_recv, false);
    fy_ofi_cq_t *cq = ep->rx_cq;
    if (!cq_wanted || ep->destroying || cq == NULL)
        return;
    bool imm = (info->flags & FERRY_TAG_INFO_IMM) != 0;
    fy_ofi_cq_success(cq, context, cq_flags | (imm ? FI_REMOTE_CQ_DATA : 0), info->length, buf,
                      imm ? info->imm : 0, info->tag & ep->tag_format,
                      fy_ofi_av_source(ep->av, info->peer));
}

/* The completion of a receive ferry matched after it was posted: the common one (the whole
 * message placed, not discarded) is recv_entry. */
static fy_ofi_hot void recv_done_cb(ferry_completion_t *comp)
{
    fy_ofi_req_t *req = FY_OFI_CONTAINER(comp, fy_ofi_req_t, comp);
    if (comp->status != FERRY_OK || (req->flags & FY_OFI_REQ_DISCARD) ||
        req->info.length > req->len) {
        recv_finish(req, comp->status);
        return;
    }
    recv_entry(req->ep, (req->flags & FY_OFI_REQ_CQ) != 0, req->context, req->cq_flags, req->buf,
               &req->info);
    fy_ofi_req_free(req);
}

/* The result of ferry_tag_recv or ferry_tag_message_recv. */
static ssize_t recv_started(fy_ofi_req_t *req, ferry_status_t st)
{
    switch (st) {
    case FERRY_OK:
    case FERRY_ERR_MESSAGE_TRUNCATED:
        recv_finish(req, st);
        return 0;
    case FERRY_INPROGRESS:
        if (req->kind == FY_OFI_REQ_RECV && req->message == NULL)
            req->flags |= FY_OFI_REQ_POSTED;
        return 0;
    default:
        fy_ofi_req_free(req);
        return fy_ofi_errno(st);
    }
}

/* What a receive or probe matches: ferry tag and mask, and the source (FERRY_PEER_ANY, or with
 * FI_DIRECTED_RECV the worker id of src). */
typedef struct recv_match {
    uint64_t tag;
    uint64_t mask;
    ferry_peer_id_t source;
} recv_match_t;

/* The match of a receive. Returns 0 or -FI_EINVAL (an unknown source address). */
static inline __attribute__((always_inline)) int recv_match(fy_ofi_ep_t *ep, bool tagged,
                                                            fi_addr_t src, uint64_t tag,
                                                            uint64_t ignore, recv_match_t *match)
{
    /* the FI_MSG bit is matched where the endpoint has it (outside its tag format) */
    uint64_t kind_bits = ~ep->tag_format;
    uint64_t wtag = FY_OFI_TAG_MSG_BIT;
    uint64_t wmask = FY_OFI_TAG_MSG_BIT;
    if (tagged) {
        wtag = tag & ep->tag_format;
        wmask = (~ignore & ep->tag_format) | kind_bits;
    }
    ferry_peer_id_t source = FERRY_PEER_ANY;
    if ((ep->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC) {
        fy_ofi_av_slot_t *slot = fy_ofi_av_slot(ep->av, src);
        if (slot == NULL)
            return -FI_EINVAL;
        source = slot->peer;
    }
    *match = (recv_match_t){.tag = wtag, .mask = wmask, .source = source};
    return 0;
}

/* Take the request fy_ofi_req_next gave a receive (its comp, buffers and info kept) and fill
 * what its completion reads. */
static inline __attribute__((always_inline)) void
recv_take(fy_ofi_ep_t *ep, fy_ofi_req_t *req, void *context, bool tagged, uint64_t flags)
{
    fy_ofi_req_take(ep, req, FY_OFI_REQ_RECV, FY_OFI_BUDGET_RX);
    req->context = context;
    req->cq_flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
    req->cntr = ep->cntr_recv;
    if (!ep->rx_selective || (flags & FI_COMPLETION))
        req->flags |= FY_OFI_REQ_CQ;
}

static inline __attribute__((always_inline)) fy_ofi_req_t *recv_req(fy_ofi_ep_t *ep, void *context,
                                                                    bool tagged, uint64_t flags)
{
    fy_ofi_req_t *req = fy_ofi_req_next(ep, FY_OFI_BUDGET_RX);
    if (req == NULL)
        return NULL;
    req->buf = NULL;
    req->len = 0;
    req->iovcnt = 0;
    req->comp = (ferry_completion_t){.cb = recv_done_cb, .count = 1};
    recv_take(ep, req, context, tagged, flags);
    return req;
}

/* FI_PEEK (with FI_CLAIM or FI_DISCARD): look at the first matching message. The result goes
 * to the receive CQ at once: success with its length, tag, source and remote CQ data, or an
 * FI_ENOMSG error. */
static ssize_t recv_peek(fy_ofi_ep_t *ep, const recv_match_t *match, uint64_t tag, void *context,
                         uint64_t flags)
{
    fy_ofi_ep_progress(ep);
    bool take = (flags & (FI_CLAIM | FI_DISCARD)) != 0;
    ferry_tag_info_t info;
    ferry_tag_message_t *message = NULL;
    ferry_status_t st = ferry_tag_probe_from(ep->worker, match->source, match->tag, match->mask,
                                             take, &info, take ? &message : NULL);
    if (st == FERRY_ERR_NO_ELEM) {
        fy_ofi_cq_entry_t entry = {
            .e = {.op_context = context, .flags = FI_RECV | FI_TAGGED, .tag = tag},
            .src = FI_ADDR_NOTAVAIL,
            .err = FI_ENOMSG,
            .prov_errno = st,
        };
        fy_ofi_rx_entry(ep, &entry);
        return 0;
    }
    if (st != FERRY_OK)
        return fy_ofi_errno(st);
    if (flags & FI_DISCARD) {
        /* receive nothing: ferry moves none of the message */
        fy_ofi_req_t *req = recv_req(ep, context, true, FI_COMPLETION);
        if (req == NULL)
            return -FI_EAGAIN; /* the message is taken: a rare leak until the worker goes */
        req->flags |= FY_OFI_REQ_DISCARD | FY_OFI_REQ_PEEK;
        req->message = message;
        iov_build(req, NULL, 0);
        st = ferry_tag_message_recv(ep->worker, message, req->iov, req->iovcnt, &req->info,
                                    &req->comp);
        return recv_started(req, st);
    }
    if (flags & FI_CLAIM) {
        fy_ofi_req_t *req = fy_ofi_req_alloc(ep, FY_OFI_REQ_CLAIMED, FY_OFI_BUDGET_NONE);
        if (req == NULL)
            return -FI_EAGAIN;
        req->context = context;
        req->message = message;
        fy_ofi_list_push_tail(&ep->claimed, &req->link);
    }
    fy_ofi_cq_entry_t entry = {
        .e =
            {
                .op_context = context,
                .flags = FI_RECV | FI_TAGGED,
                .len = info.length,
                .tag = info.tag & ep->tag_format,
            },
        .src = fy_ofi_av_lookup_peer(ep->av, info.peer),
    };
    if (info.flags & FERRY_TAG_INFO_IMM) {
        entry.e.flags |= FI_REMOTE_CQ_DATA;
        entry.e.data = info.imm;
    }
    fy_ofi_rx_entry(ep, &entry);
    return 0;
}

/* FI_CLAIM: receive the message an FI_PEEK|FI_CLAIM of the same context took. */
static ssize_t recv_claimed(fy_ofi_ep_t *ep, const struct iovec *iov, size_t count, void *context,
                            uint64_t flags)
{
    fy_ofi_req_t *claimed = NULL;
    for (fy_ofi_list_t *item = ep->claimed.next; item != &ep->claimed; item = item->next) {
        fy_ofi_req_t *r = FY_OFI_CONTAINER(item, fy_ofi_req_t, link);
        if (r->context == context) {
            claimed = r;
            break;
        }
    }
    if (claimed == NULL)
        return -FI_EINVAL; /* nothing was claimed with this context */
    fy_ofi_req_t *req = recv_req(ep, context, true, flags);
    if (req == NULL)
        return -FI_EAGAIN;
    int rc = iov_build(req, (flags & FI_DISCARD) ? NULL : iov, (flags & FI_DISCARD) ? 0 : count);
    if (rc != 0) {
        fy_ofi_req_free(req);
        return rc;
    }
    if (flags & FI_DISCARD)
        req->flags |= FY_OFI_REQ_DISCARD;
    req->message = claimed->message;
    fy_ofi_list_remove(&claimed->link);
    fy_ofi_req_free(claimed);
    ferry_status_t st = ferry_tag_message_recv(ep->worker, req->message, req->iov, req->iovcnt,
                                               &req->info, &req->comp);
    return recv_started(req, st);
}

static inline __attribute__((always_inline)) ssize_t
recv_common(fy_ofi_ep_t *ep, const struct iovec *iov, size_t count, fi_addr_t src, uint64_t tag,
            uint64_t ignore, void *context, uint64_t flags, bool tagged)
{
    if (flags & ~(tagged ? TAGGED_RECV_FLAGS : MSG_RECV_FLAGS))
        return -FI_EBADFLAGS;
    if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM)))
        return -FI_EINVAL;
    ssize_t rc;
    fy_ofi_domain_lock(ep->domain);
    if (!ep->enabled) {
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    recv_match_t match;
    if (flags & FI_CLAIM && !(flags & FI_PEEK)) {
        rc = recv_claimed(ep, iov, count, context, flags);
        goto out;
    }
    rc = recv_match(ep, tagged, src, tag, ignore, &match);
    if (rc != 0)
        goto out;
    if (flags & FI_PEEK) {
        rc = recv_peek(ep, &match, tag, context, flags);
        goto out;
    }
    /* the request is taken only when ferry keeps it: a message that waited in ferry's
     * unexpected queue (the usual case of a stream whose sender runs ahead) is placed by the
     * call and its entry written from ferry's report, the request left free */
    fy_ofi_req_t *req = fy_ofi_req_next(ep, FY_OFI_BUDGET_RX);
    if (req == NULL) {
        rc = -FI_EAGAIN;
        goto out;
    }
    rc = iov_build(req, iov, count);
    if (rc != 0)
        goto out;
    req->comp = (ferry_completion_t){.cb = recv_done_cb, .count = 1};
    ferry_status_t st = ferry_tag_recv_from(ep->worker, match.source, req->iov, req->iovcnt,
                                            match.tag, match.mask, &req->info, &req->comp);
    if (st == FERRY_INPROGRESS) { /* recv_started's common case, in place */
        recv_take(ep, req, context, tagged, flags);
        req->flags |= FY_OFI_REQ_POSTED;
        rc = 0;
        goto out;
    }
    if (st == FERRY_OK && req->info.length <= req->len) {
        req->comp.count = -1; /* left free */
        recv_entry(ep, !ep->rx_selective || (flags & FI_COMPLETION), context,
                   FI_RECV | (tagged ? FI_TAGGED : FI_MSG), req->buf, &req->info);
        rc = 0;
        goto out;
    }
    recv_take(ep, req, context, tagged, flags);
    rc = recv_started(req, st);
out:
    fy_ofi_domain_unlock(ep->domain);
    return rc;
}

ssize_t fy_ofi_cancel(fy_ofi_ep_t *ep, void *context)
{
    /* the posted receives are found in the request pool (rare: no list is kept for it, which
     * every receive would pay for); a request in use has a pending completion */
    for (size_t c = 0; c < ep->chunk_count; c++) {
        for (size_t i = 0; i < FY_OFI_REQ_CHUNK; i++) {
            fy_ofi_req_t *req = &ep->chunks[c][i];
            if (req->comp.count <= 0 || req->kind != FY_OFI_REQ_RECV ||
                !(req->flags & FY_OFI_REQ_POSTED) || req->context != context)
                continue;
            /* the receive completes with FERRY_ERR_CANCELED from progress */
            ferry_status_t st = ferry_tag_recv_cancel(ep->worker, &req->comp);
            return st == FERRY_OK ? 0 : -FI_ENOENT;
        }
    }
    return -FI_ENOENT; /* sends and matched receives cannot be canceled */
}

/* ---------------------------------------------------------------- fi_ops_msg */

static ssize_t msg_recv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src_addr,
                        void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    return recv_common(ep, &iov, 1, src_addr, 0, 0, context, ep->rx_op_flags, false);
}

static ssize_t msg_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src_addr, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    return recv_common(ep, iov, count, src_addr, 0, 0, context, ep->rx_op_flags, false);
}

static ssize_t msg_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (msg == NULL)
        return -FI_EINVAL;
    return recv_common(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, 0, 0, msg->context,
                       flags, false);
}

static ssize_t msg_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                        fi_addr_t dest_addr, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep, &iov, 1, dest_addr, 0, 0, context, ep->tx_op_flags, false, false);
}

static ssize_t msg_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t dest_addr, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    return send_common(ep, iov, count, dest_addr, 0, 0, context, ep->tx_op_flags, false, false);
}

static ssize_t msg_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (msg == NULL)
        return -FI_EINVAL;
    return send_common(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, 0, msg->data,
                       msg->context, flags, false, false);
}

static ssize_t msg_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest_addr)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep_of(fid), &iov, 1, dest_addr, 0, 0, NULL, FI_INJECT, false, true);
}

static ssize_t msg_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                            uint64_t data, fi_addr_t dest_addr, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep, &iov, 1, dest_addr, 0, data, context,
                       ep->tx_op_flags | FI_REMOTE_CQ_DATA, false, false);
}

static ssize_t msg_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data,
                              fi_addr_t dest_addr)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep_of(fid), &iov, 1, dest_addr, 0, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA,
                       false, true);
}

struct fi_ops_msg fy_ofi_ops_msg = {
    .size = sizeof(struct fi_ops_msg),
    .recv = msg_recv,             /* 0, -FI_EAGAIN (queue full), -FI_EINVAL, -FI_EOPBADSTATE */
    .recvv = msg_recvv,           /* up to FY_OFI_IOV_LIMIT pieces */
    .recvmsg = msg_recvmsg,       /* flags: FI_COMPLETION */
    .send = msg_send,             /* 0, -FI_EAGAIN, -FI_EINVAL (address), peer errors */
    .sendv = msg_sendv,           /* buffers stay the caller's until the completion */
    .sendmsg = msg_sendmsg,       /* flags: FI_COMPLETION, FI_INJECT, FI_REMOTE_CQ_DATA, ... */
    .inject = msg_inject,         /* <= inject_size; buffer free on return; no entry */
    .senddata = msg_senddata,     /* with remote CQ data */
    .injectdata = msg_injectdata, /* both */
};

/* ---------------------------------------------------------------- fi_ops_tagged */

static fy_ofi_hot ssize_t tagged_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
                                      fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
                                      void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    return recv_common(ep, &iov, 1, src_addr, tag, ignore, context, ep->rx_op_flags, true);
}

static ssize_t tagged_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
                            fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    return recv_common(ep, iov, count, src_addr, tag, ignore, context, ep->rx_op_flags, true);
}

static fy_ofi_hot ssize_t tagged_recvmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg,
                                         uint64_t flags)
{
    if (msg == NULL)
        return -FI_EINVAL;
    return recv_common(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->ignore,
                       msg->context, flags, true);
}

static fy_ofi_hot ssize_t tagged_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                                      fi_addr_t dest_addr, uint64_t tag, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep, &iov, 1, dest_addr, tag, 0, context, ep->tx_op_flags, true, false);
}

static ssize_t tagged_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
                            fi_addr_t dest_addr, uint64_t tag, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    return send_common(ep, iov, count, dest_addr, tag, 0, context, ep->tx_op_flags, true, false);
}

static fy_ofi_hot ssize_t tagged_sendmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg,
                                         uint64_t flags)
{
    if (msg == NULL)
        return -FI_EINVAL;
    return send_common(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->data,
                       msg->context, flags, true, false);
}

static fy_ofi_hot ssize_t tagged_inject(struct fid_ep *fid, const void *buf, size_t len,
                                        fi_addr_t dest_addr, uint64_t tag)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep_of(fid), &iov, 1, dest_addr, tag, 0, NULL, FI_INJECT, true, true);
}

static fy_ofi_hot ssize_t tagged_senddata(struct fid_ep *fid, const void *buf, size_t len,
                                          void *desc, uint64_t data, fi_addr_t dest_addr,
                                          uint64_t tag, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = ep_of(fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep, &iov, 1, dest_addr, tag, data, context,
                       ep->tx_op_flags | FI_REMOTE_CQ_DATA, true, false);
}

static fy_ofi_hot ssize_t tagged_injectdata(struct fid_ep *fid, const void *buf, size_t len,
                                            uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return send_common(ep_of(fid), &iov, 1, dest_addr, tag, data, NULL,
                       FI_INJECT | FI_REMOTE_CQ_DATA, true, true);
}

struct fi_ops_tagged fy_ofi_ops_tagged = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = tagged_recv,       /* tag outside ignore; directed with FI_DIRECTED_RECV */
    .recvv = tagged_recvv,     /* up to FY_OFI_IOV_LIMIT pieces */
    .recvmsg = tagged_recvmsg, /* FI_PEEK, FI_CLAIM, FI_DISCARD, FI_COMPLETION */
    .send = tagged_send,       /* tag outside mem_tag_format: -FI_EINVAL */
    .sendv = tagged_sendv,
    .sendmsg = tagged_sendmsg,       /* NULL context and no FI_COMPLETION: no entry at all */
    .inject = tagged_inject,         /* <= inject_size; buffer free on return; no entry */
    .senddata = tagged_senddata,     /* with remote CQ data */
    .injectdata = tagged_injectdata, /* both */
};
