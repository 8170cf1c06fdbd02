/*
 * libferry-fi — RMA over ferry's one-sided operations, and the key scheme both RMA and
 * atomics use.
 *
 * Keys: an application names remote memory by a u64 key (fi_mr_key) and an offset (addr; the
 * provider does not use FI_MR_VIRT_ADDR). ferry needs the owner's packed key unpacked on the
 * endpoint that leads to it, so the first operation on (peer, key) sends KEY_REQ; the owner
 * answers KEY_REP with its packed key (or an error), which is unpacked once and kept for the
 * peer. Operations issued meanwhile wait on the key. A key the owner later refuses
 * (FERRY_ERR_ACCESS: deregistered, re-registered) is fetched again by the next operation.
 *
 * An operation goes through steps, each started from the application's call or, after a
 * ferry callback, from the deferred work of progress: KEY -> DATA (ferry_putv/getv, or the
 * atomics of atomic.c) -> FLUSH (ferry_ep_flush: with FI_DELIVERY_COMPLETE or remote CQ data)
 * -> NOTIFY (fi_writedata: a WDATA control message, which the target turns into a remote-write
 * completion with the data) -> DONE.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

enum rkey_state {
    RKEY_FETCHING, /* KEY_REQ sent */
    RKEY_REPLIED,  /* KEY_REP arrived, not unpacked yet */
    RKEY_READY,    /* unpacked */
    RKEY_FAILED,   /* refused or stale: skipped by lookups, freed with the peer */
};

struct fy_ofi_rkey {
    fy_ofi_rkey_t *next;      /* the peer's keys */
    fy_ofi_list_t fetch_link; /* ep->fetching while FETCHING */
    uint64_t key;
    uint32_t fetch_id;
    enum rkey_state state;
    ferry_status_t status; /* REPLIED/FAILED: why */
    ferry_ep_t *fep;       /* the endpoint it is unpacked on */
    ferry_rkey_t *rkey;    /* READY */
    void *packed;          /* REPLIED */
    size_t packed_length;
    fy_ofi_list_t waiting; /* requests waiting for it */
};

enum rma_step {
    STEP_KEY,
    STEP_DATA,
    STEP_FLUSH,
    STEP_NOTIFY,
    STEP_DONE,
};

#define RMA_FLAGS                                                                                  \
    (FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |   \
     FI_DELIVERY_COMPLETE | FI_MORE | FI_FENCE)

/* ---------------------------------------------------------------- keys */

static fy_ofi_rkey_t *rkey_find(fy_ofi_peer_t *peer, uint64_t key)
{
    for (fy_ofi_rkey_t *rk = peer->rkeys; rk != NULL; rk = rk->next) {
        if (rk->key == key && rk->state != RKEY_FAILED)
            return rk;
    }
    return NULL;
}

static fy_ofi_rkey_t *rkey_fetch(fy_ofi_ep_t *ep, fy_ofi_peer_t *peer, uint64_t key)
{
    fy_ofi_rkey_t *rk = calloc(1, sizeof(*rk));
    if (rk == NULL)
        return NULL;
    rk->key = key;
    rk->fep = peer->fep;
    rk->fetch_id = ++ep->next_fetch_id;
    rk->state = RKEY_FETCHING;
    fy_ofi_list_init(&rk->waiting);
    fy_ofi_ctrl_msg_t msg = {.id = FY_OFI_AM_KEY_REQ, .fetch_id = rk->fetch_id, .key = key};
    if (fy_ofi_ctrl_queue(ep, peer->fep, &msg, NULL, 0) != FERRY_OK) {
        free(rk);
        return NULL;
    }
    fy_ofi_list_push_tail(&ep->fetching, &rk->fetch_link);
    rk->next = peer->rkeys;
    peer->rkeys = rk;
    return rk;
}

/* Unpack a key that arrived (once). */
static void rkey_resolve(fy_ofi_rkey_t *rk)
{
    if (rk->state != RKEY_REPLIED)
        return;
    ferry_status_t st = rk->status;
    if (st == FERRY_OK) {
        st = ferry_rkey_unpack(rk->fep, rk->packed, rk->packed_length, &rk->rkey);
        if (st != FERRY_OK)
            FY_OFI_WARN(FI_LOG_EP_DATA, "ferry_rkey_unpack of key 0x%llx failed: %s\n",
                        (unsigned long long)rk->key, ferry_status_string(st));
    }
    free(rk->packed);
    rk->packed = NULL;
    rk->status = st;
    rk->state = st == FERRY_OK ? RKEY_READY : RKEY_FAILED;
}

void fy_ofi_key_request(fy_ofi_ep_t *ep, ferry_ep_t *reply_ep, uint32_t fetch_id, uint64_t key)
{
    fy_ofi_mr_t *mr = fy_ofi_mr_find(ep->domain, key);
    /* no such key, or registered without remote access: both refuse access (FI_EACCES) */
    ferry_status_t status = (mr == NULL || mr->packed == NULL) ? FERRY_ERR_ACCESS : FERRY_OK;
    fy_ofi_ctrl_msg_t msg = {.id = FY_OFI_AM_KEY_REP, .fetch_id = fetch_id, .status = status};
    if (status == FERRY_OK && (mr->packed_length == 0 || mr->packed_length > FY_OFI_KEY_PACKED_MAX))
        msg.status = FERRY_ERR_ACCESS; /* a key the wire format cannot carry */
    bool with_key = msg.status == FERRY_OK;
    if (fy_ofi_ctrl_queue(ep, reply_ep, &msg, with_key ? mr->packed : NULL,
                          with_key ? mr->packed_length : 0) != FERRY_OK)
        FY_OFI_WARN(FI_LOG_EP_DATA, "out of memory: a key reply is lost (its requester waits)\n");
}

void fy_ofi_key_reply(fy_ofi_ep_t *ep, uint32_t fetch_id, ferry_status_t status, const void *packed,
                      size_t length)
{
    fy_ofi_rkey_t *rk = NULL;
    for (fy_ofi_list_t *item = ep->fetching.next; item != &ep->fetching; item = item->next) {
        fy_ofi_rkey_t *r = FY_OFI_CONTAINER(item, fy_ofi_rkey_t, fetch_link);
        if (r->fetch_id == fetch_id) {
            rk = r;
            break;
        }
    }
    if (rk == NULL)
        return; /* its peer was removed meanwhile */
    fy_ofi_list_remove(&rk->fetch_link);
    rk->status = status;
    if (status == FERRY_OK) {
        rk->packed = malloc(length);
        if (rk->packed == NULL) {
            rk->status = FERRY_ERR_NO_MEMORY;
        } else {
            memcpy(rk->packed, packed, length);
            rk->packed_length = length;
        }
    }
    rk->state = RKEY_REPLIED;
    fy_ofi_list_t *item;
    while ((item = fy_ofi_list_pop_head(&rk->waiting)) != NULL)
        fy_ofi_ep_defer(FY_OFI_CONTAINER(item, fy_ofi_req_t, link));
}

void fy_ofi_rkeys_release(fy_ofi_ep_t *ep, fy_ofi_rkey_t *rkeys, ferry_status_t status)
{
    while (rkeys != NULL) {
        fy_ofi_rkey_t *rk = rkeys;
        rkeys = rk->next;
        fy_ofi_list_t *item;
        while ((item = fy_ofi_list_pop_head(&rk->waiting)) != NULL)
            fy_ofi_req_complete(FY_OFI_CONTAINER(item, fy_ofi_req_t, link), status);
        /* requests deferred after the reply still point at it */
        item = ep->deferred.next;
        while (item != &ep->deferred) {
            fy_ofi_list_t *next = item->next;
            fy_ofi_req_t *req = FY_OFI_CONTAINER(item, fy_ofi_req_t, link);
            if ((req->kind == FY_OFI_REQ_RMA || req->kind == FY_OFI_REQ_ATOMIC) &&
                req->rkey == rk) {
                fy_ofi_list_remove(item);
                fy_ofi_req_complete(req, status);
            }
            item = next;
        }
        if (rk->state == RKEY_FETCHING)
            fy_ofi_list_remove(&rk->fetch_link);
        if (rk->rkey != NULL)
            ferry_rkey_release(rk->rkey);
        free(rk->packed);
        free(rk);
    }
}

/* ---------------------------------------------------------------- steps */

static void step_cb(ferry_completion_t *comp)
{
    fy_ofi_req_t *req = FY_OFI_CONTAINER(comp, fy_ofi_req_t, comp);
    if (comp->status != FERRY_OK && req->status == FERRY_OK)
        req->status = comp->status;
    fy_ofi_ep_defer(req); /* the next step starts after progress */
}

static void rma_fail(fy_ofi_req_t *req, ferry_status_t status)
{
    if (status == FERRY_ERR_ACCESS && req->rkey != NULL && req->rkey->state == RKEY_READY)
        req->rkey->state = RKEY_FAILED; /* the next operation fetches the key again */
    fy_ofi_req_complete(req, status);
}

/* The elements of an atomic request: one ferry operation each, reporting to one completion
 * whose count carries a guard until the last is issued (so that the callback cannot run
 * before). Returns FERRY_OK (all done), FERRY_INPROGRESS (all issued; the callback follows),
 * FERRY_ERR_NO_RESOURCE (req->issued tells how many went: call again), or the error (nothing
 * left in flight). */
static ferry_status_t atomic_data_start(fy_ofi_req_t *req)
{
    if (req->issued == 0) {
        req->comp.cb = step_cb;
        req->comp.count = (int64_t)req->count + 1;
        req->comp.status = FERRY_OK;
    }
    while (req->issued < req->count) {
        ferry_status_t st = fy_ofi_atomic_element(req, req->issued, req->rkey->rkey);
        if (st == FERRY_ERR_NO_RESOURCE)
            return st;
        req->issued++;
        if (st == FERRY_INPROGRESS)
            continue;
        req->comp.count--; /* done now, or failed: it will not report */
        if (st != FERRY_OK) {
            if (req->comp.status == FERRY_OK)
                req->comp.status = st;
            req->comp.count -= (int64_t)(req->count - req->issued); /* never issued */
            req->issued = req->count;
        }
    }
    if (--req->comp.count > 0)
        return FERRY_INPROGRESS;
    return req->comp.status;
}

static ferry_status_t data_start(fy_ofi_req_t *req)
{
    if (req->kind == FY_OFI_REQ_ATOMIC)
        return atomic_data_start(req);
    req->comp.cb = step_cb;
    req->comp.count = 1;
    req->comp.status = FERRY_OK;
    ferry_remote_iov_t remote = {.offset = req->remote_addr, .length = req->len};
    if (req->write)
        return ferry_putv(req->fep, req->iov, req->iovcnt, &remote, 1, req->rkey->rkey, &req->comp);
    return ferry_getv(req->fep, req->iov, req->iovcnt, &remote, 1, req->rkey->rkey, &req->comp);
}

static ferry_status_t notify_start(fy_ofi_req_t *req)
{
    fy_ofi_ctrl_msg_t msg = {
        .id = FY_OFI_AM_WDATA, .has_data = true, .data = req->data, .length = req->len};
    size_t len = fy_ofi_ctrl_encode(&msg, req->ctrl);
    req->comp.cb = step_cb;
    req->comp.count = 1;
    req->comp.status = FERRY_OK;
    return ferry_am_send(req->fep, FY_OFI_AM_WDATA, req->ctrl, len, NULL, 0, &req->comp);
}

/* Run the steps that can run now. Returns FERRY_OK (done, waiting, or failed and completed) or
 * FERRY_ERR_NO_RESOURCE when the first data operation found no resources and from_app: the
 * caller frees the request and returns -FI_EAGAIN. */
static ferry_status_t rma_advance(fy_ofi_req_t *req, bool from_app)
{
    for (;;) {
        ferry_status_t st;
        switch (req->step) {
        case STEP_KEY:
            rkey_resolve(req->rkey);
            if (req->rkey->state != RKEY_READY) {
                rma_fail(req, req->rkey->status != FERRY_OK ? req->rkey->status : FERRY_ERR_ACCESS);
                return FERRY_OK;
            }
            req->step = STEP_DATA;
            continue;
        case STEP_DATA:
            if (req->len == 0 && req->kind == FY_OFI_REQ_RMA) {
                req->step = STEP_FLUSH;
                continue;
            }
            st = data_start(req);
            if (st == FERRY_ERR_NO_RESOURCE) {
                if (from_app && (req->kind == FY_OFI_REQ_RMA || req->issued == 0))
                    return st; /* nothing issued: the caller returns -FI_EAGAIN */
                fy_ofi_ep_defer(req);
                return FERRY_OK;
            }
            req->step = STEP_FLUSH;
            if (st == FERRY_OK)
                continue;
            if (st != FERRY_INPROGRESS)
                rma_fail(req, st);
            return FERRY_OK;
        case STEP_FLUSH:
            req->step = STEP_NOTIFY;
            if (!(req->flags & (FY_OFI_REQ_FLUSH | FY_OFI_REQ_NOTIFY)))
                continue;
            req->comp.cb = step_cb;
            req->comp.count = 1;
            req->comp.status = FERRY_OK;
            st = ferry_ep_flush(req->fep, &req->comp);
            if (st == FERRY_OK)
                continue;
            if (st != FERRY_INPROGRESS)
                rma_fail(req, st);
            return FERRY_OK;
        case STEP_NOTIFY:
            if (!(req->flags & FY_OFI_REQ_NOTIFY)) {
                req->step = STEP_DONE;
                continue;
            }
            st = notify_start(req);
            if (st == FERRY_ERR_NO_RESOURCE) {
                fy_ofi_ep_defer(req);
                return FERRY_OK;
            }
            req->step = STEP_DONE;
            if (st == FERRY_OK)
                continue;
            if (st != FERRY_INPROGRESS)
                rma_fail(req, st);
            return FERRY_OK;
        default:
            if (req->kind == FY_OFI_REQ_ATOMIC)
                fy_ofi_atomic_finish(req);
            fy_ofi_req_complete(req, FERRY_OK);
            return FERRY_OK;
        }
    }
}

void fy_ofi_rma_resume(fy_ofi_req_t *req)
{
    if (req->status != FERRY_OK) {
        rma_fail(req, req->status);
        return;
    }
    (void)rma_advance(req, false);
}

ssize_t fy_ofi_rma_submit(fy_ofi_req_t *req)
{
    fy_ofi_ep_t *ep = req->ep;
    fy_ofi_peer_t *peer;
    ferry_status_t st = fy_ofi_ep_peer(ep, req->addr, &peer);
    if (st != FERRY_OK) {
        fy_ofi_req_free(req);
        return st == FERRY_ERR_INVALID_ADDRESS ? -FI_EINVAL : fy_ofi_errno(st);
    }
    req->fep = peer->fep;
    fy_ofi_rkey_t *rk = rkey_find(peer, req->key);
    if (rk == NULL) {
        rk = rkey_fetch(ep, peer, req->key);
        if (rk == NULL) {
            fy_ofi_req_free(req);
            return -FI_ENOMEM;
        }
    }
    req->rkey = rk;
    req->step = STEP_KEY;
    if (rk->state == RKEY_FETCHING) {
        fy_ofi_list_push_tail(&rk->waiting, &req->link);
        return 0;
    }
    if (rma_advance(req, true) == FERRY_ERR_NO_RESOURCE) {
        fy_ofi_req_free(req);
        return -FI_EAGAIN;
    }
    return 0;
}

void fy_ofi_write_notified(fy_ofi_ep_t *ep, uint64_t data, bool has_data, uint64_t length)
{
    fy_ofi_cntr_count(ep->cntr_remote_write, false);
    if (!has_data)
        return;
    fy_ofi_cq_entry_t entry = {
        .e =
            {
                .flags = FI_REMOTE_WRITE | FI_RMA | FI_REMOTE_CQ_DATA,
                .len = (size_t)length,
                .data = data,
            },
        .src = FI_ADDR_NOTAVAIL,
    };
    fy_ofi_rx_entry(ep, &entry);
}

/* ---------------------------------------------------------------- fi_ops_rma */

/* inject_call: fi_inject_write*: data copied, no entry. */
static ssize_t rma_common(struct fid_ep *fid, const struct iovec *iov, size_t count, fi_addr_t addr,
                          uint64_t remote_addr, uint64_t key, uint64_t data, void *context,
                          uint64_t flags, bool write, bool inject_call)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    if (flags & ~RMA_FLAGS)
        return -FI_EBADFLAGS;
    if (count > FY_OFI_IOV_LIMIT || (count > 0 && iov == NULL))
        return -FI_EINVAL;
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += iov[i].iov_len;
    bool inject = inject_call || (write && (flags & FI_INJECT));
    if (inject && total > FY_OFI_INJECT_SIZE)
        return -FI_EMSGSIZE;
    ssize_t rc;
    fy_ofi_domain_lock(ep->domain);
    if (!ep->enabled) {
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    fy_ofi_req_t *req = fy_ofi_req_alloc(ep, FY_OFI_REQ_RMA, FY_OFI_BUDGET_TX);
    if (req == NULL) {
        rc = -FI_EAGAIN;
        goto out;
    }
    req->context = context;
    req->write = write;
    req->cq_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
    req->cntr = write ? ep->cntr_write : ep->cntr_read;
    req->addr = addr;
    req->remote_addr = remote_addr;
    req->key = key;
    req->len = total;
    if (!inject_call && (!ep->tx_selective || (flags & FI_COMPLETION)))
        req->flags |= FY_OFI_REQ_CQ;
    if (flags & FI_DELIVERY_COMPLETE)
        req->flags |= FY_OFI_REQ_FLUSH;
    if (write && (flags & FI_REMOTE_CQ_DATA)) {
        req->flags |= FY_OFI_REQ_NOTIFY;
        req->data = data;
    }
    size_t n = 0;
    if (inject) {
        size_t off = 0;
        for (size_t i = 0; i < count; i++) {
            if (iov[i].iov_len > 0)
                memcpy(req->inject + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
        if (off > 0) {
            req->iov[0].buffer = req->inject;
            req->iov[0].length = off;
            n = 1;
        }
    } else {
        for (size_t i = 0; i < count; i++) {
            if (iov[i].iov_len == 0)
                continue;
            req->iov[n].buffer = iov[i].iov_base;
            req->iov[n].length = iov[i].iov_len;
            n++;
        }
    }
    req->iovcnt = n;
    rc = fy_ofi_rma_submit(req);
out:
    fy_ofi_domain_unlock(ep->domain);
    return rc;
}

static ssize_t rma_read(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src_addr,
                        uint64_t addr, uint64_t key, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    return rma_common(fid, &iov, 1, src_addr, addr, key, 0, context, ep->tx_op_flags, false, false);
}

static ssize_t rma_readv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    return rma_common(fid, iov, count, src_addr, addr, key, 0, context, ep->tx_op_flags, false,
                      false);
}

static ssize_t rma_msg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags, bool write)
{
    if (msg == NULL || msg->rma_iov_count != 1 || msg->rma_iov == NULL)
        return -FI_EINVAL; /* rma_iov_limit is 1 */
    size_t total = 0;
    for (size_t i = 0; i < msg->iov_count && msg->msg_iov != NULL; i++)
        total += msg->msg_iov[i].iov_len;
    if (total != msg->rma_iov[0].len)
        return -FI_EINVAL;
    return rma_common(fid, msg->msg_iov, msg->iov_count, msg->addr, msg->rma_iov[0].addr,
                      msg->rma_iov[0].key, msg->data, msg->context, flags, write, false);
}

static ssize_t rma_readmsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
    return rma_msg(fid, msg, flags, false);
}

static ssize_t rma_writemsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
    return rma_msg(fid, msg, flags, true);
}

static ssize_t rma_write(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                         fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return rma_common(fid, &iov, 1, dest_addr, addr, key, 0, context, ep->tx_op_flags, true, false);
}

static ssize_t rma_writev(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count,
                          fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    return rma_common(fid, iov, count, dest_addr, addr, key, 0, context, ep->tx_op_flags, true,
                      false);
}

static ssize_t rma_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest_addr,
                          uint64_t addr, uint64_t key)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return rma_common(fid, &iov, 1, dest_addr, addr, key, 0, NULL, 0, true, true);
}

static ssize_t rma_writedata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                             uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                             void *context)
{
    (void)desc;
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return rma_common(fid, &iov, 1, dest_addr, addr, key, data, context,
                      ep->tx_op_flags | FI_REMOTE_CQ_DATA, true, false);
}

static ssize_t rma_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data,
                              fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return rma_common(fid, &iov, 1, dest_addr, addr, key, data, NULL, FI_REMOTE_CQ_DATA, true,
                      true);
}

struct fi_ops_rma fy_ofi_ops_rma = {
    .size = sizeof(struct fi_ops_rma),
    .read = rma_read,       /* addr: offset in the target's registration */
    .readv = rma_readv,     /* up to FY_OFI_IOV_LIMIT local pieces */
    .readmsg = rma_readmsg, /* one remote range (rma_iov_limit 1) */
    .write = rma_write,     /* 0, -FI_EAGAIN, -FI_EINVAL; errors as entries */
    .writev = rma_writev,
    .writemsg = rma_writemsg,     /* FI_REMOTE_CQ_DATA, FI_DELIVERY_COMPLETE, FI_INJECT, ... */
    .inject = rma_inject,         /* <= inject_size; no entry */
    .writedata = rma_writedata,   /* the target gets an FI_REMOTE_CQ_DATA entry */
    .injectdata = rma_injectdata, /* both */
};
