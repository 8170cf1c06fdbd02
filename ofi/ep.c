/*
 * libferry-fi — RDM endpoints. An endpoint is one ferry worker (its shm region, its tcp
 * listener, its fd); its name is the worker's compact address (name.h). For each AV entry it uses,
 * it creates one ferry endpoint (at fi_av_insert when already bound, else on first use); an
 * fi_av_remove closes it gracefully in the background. Progress runs ferry, then the work the
 * callbacks deferred (control messages, one-sided operations whose key arrived), then reaps
 * ferry endpoints that finished closing.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

static int close_timeout_ms = 5000;

void fy_ofi_ep_params_init(void)
{
    fi_param_define(&fy_ofi_prov, "close_timeout_ms", FI_PARAM_INT,
                    "How long fi_close of an endpoint waits for its ferry endpoints to close "
                    "gracefully (messages already handed to ferry are delivered), in ms "
                    "(default 5000); then they are closed by force");
    int value;
    if (fi_param_get_int(&fy_ofi_prov, "close_timeout_ms", &value) == FI_SUCCESS && value >= 0)
        close_timeout_ms = value;
}

/* ---------------------------------------------------------------- peers */

static void peer_failed_cb(void *arg, ferry_ep_t *fep, ferry_status_t status)
{
    fy_ofi_ep_t *ep = arg;
    for (size_t i = 0; i < ep->peer_count; i++) {
        if (ep->peers[i].fep == fep) {
            FY_OFI_INFO(FI_LOG_EP_DATA, "the ferry endpoint to fi_addr %zu failed: %s\n", i,
                        ferry_status_string(status));
            ep->peers[i].status = status;
            return;
        }
    }
}

static void accepted_failed_cb(void *arg, ferry_ep_t *fep, ferry_status_t status)
{
    (void)status;
    /* a peer closed (or lost) its endpoint to us: control messages queued to it cannot go */
    fy_ofi_ctrl_drop(arg, fep);
}

static bool peers_reserve(fy_ofi_ep_t *ep, size_t count)
{
    if (count <= ep->peer_count)
        return true;
    size_t n = ep->peer_count ? ep->peer_count : 16;
    while (n < count)
        n *= 2;
    fy_ofi_peer_t *peers = realloc(ep->peers, n * sizeof(*peers));
    if (peers == NULL)
        return false;
    memset(peers + ep->peer_count, 0, (n - ep->peer_count) * sizeof(*peers));
    ep->peers = peers;
    ep->peer_count = n;
    return true;
}

static ferry_status_t peer_create(fy_ofi_ep_t *ep, fy_ofi_av_slot_t *slot, fy_ofi_peer_t *peer)
{
    ferry_ep_params_t params = {.error_cb = peer_failed_cb, .error_arg = ep};
    ferry_status_t st =
        ferry_ep_create(ep->worker, slot->name, FY_OFI_NAME_LEN, &params, &peer->fep);
    if (st != FERRY_OK && st != FERRY_ERR_NO_RESOURCE)
        FY_OFI_WARN(FI_LOG_AV, "ferry_ep_create to fi_addr %zu failed: %s\n",
                    (size_t)(slot - ep->av->slots), ferry_status_string(st));
    return st;
}

ferry_status_t fy_ofi_ep_peer_slow(fy_ofi_ep_t *ep, fi_addr_t addr, fy_ofi_peer_t **peer_p)
{
    fy_ofi_av_slot_t *slot = fy_ofi_av_slot(ep->av, addr);
    if (slot == NULL || !peers_reserve(ep, addr + 1))
        return slot == NULL ? FERRY_ERR_INVALID_ADDRESS : FERRY_ERR_NO_MEMORY;
    fy_ofi_peer_t *peer = &ep->peers[addr];
    if (peer->status != FERRY_OK)
        return peer->status;
    if (peer->fep == NULL) {
        ferry_status_t st = peer_create(ep, slot, peer);
        if (st != FERRY_OK) {
            if (st != FERRY_ERR_NO_RESOURCE)
                peer->status = st;
            return st;
        }
    }
    *peer_p = peer;
    return FERRY_OK;
}

ferry_status_t fy_ofi_ep_peer_connect(fy_ofi_ep_t *ep, fi_addr_t addr)
{
    fy_ofi_peer_t *peer;
    return fy_ofi_ep_peer_slow(ep, addr, &peer);
}

static void closing_done_cb(ferry_completion_t *comp)
{
    (void)comp; /* reaped by closing_reap, from progress */
}

void fy_ofi_ep_peer_remove(fy_ofi_ep_t *ep, fi_addr_t addr)
{
    if (addr >= ep->peer_count)
        return;
    fy_ofi_peer_t *peer = &ep->peers[addr];
    if (peer->fep != NULL) {
        fy_ofi_closing_t *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            fy_ofi_rkeys_release(ep, peer->rkeys, FERRY_ERR_ENDPOINT_CLOSED);
            ferry_ep_destroy(peer->fep);
        } else {
            c->fep = peer->fep;
            c->rkeys = peer->rkeys;
            c->comp.count = 1;
            c->comp.cb = closing_done_cb;
            if (ferry_ep_close(c->fep, 0, &c->comp) != FERRY_INPROGRESS)
                c->comp.count = 0;
            fy_ofi_list_push_tail(&ep->closing, &c->link);
        }
    }
    memset(peer, 0, sizeof(*peer));
}

/* Destroy the ferry endpoints whose graceful close completed. */
static void closing_reap(fy_ofi_ep_t *ep)
{
    fy_ofi_list_t *item = ep->closing.next;
    while (item != &ep->closing) {
        fy_ofi_list_t *next = item->next;
        fy_ofi_closing_t *c = FY_OFI_CONTAINER(item, fy_ofi_closing_t, link);
        if (c->comp.count == 0) {
            fy_ofi_list_remove(item);
            fy_ofi_rkeys_release(ep, c->rkeys, FERRY_ERR_ENDPOINT_CLOSED);
            ferry_ep_destroy(c->fep);
            free(c);
        }
        item = next;
    }
}

/* ---------------------------------------------------------------- progress */

void fy_ofi_ep_defer(fy_ofi_req_t *req)
{
    fy_ofi_list_push_tail(&req->ep->deferred, &req->link);
}

/* Run the deferred work once: what cannot go on now (no resources) goes back for the next
 * round. */
static unsigned deferred_run(fy_ofi_ep_t *ep)
{
    if (fy_ofi_list_empty(&ep->deferred))
        return 0;
    fy_ofi_list_t todo;
    fy_ofi_list_init(&todo);
    /* move the list: work deferred while this runs waits for the next round */
    todo.next = ep->deferred.next;
    todo.prev = ep->deferred.prev;
    todo.next->prev = &todo;
    todo.prev->next = &todo;
    fy_ofi_list_init(&ep->deferred);
    unsigned n = 0;
    fy_ofi_list_t *item;
    while ((item = fy_ofi_list_pop_head(&todo)) != NULL) {
        fy_ofi_req_t *req = FY_OFI_CONTAINER(item, fy_ofi_req_t, link);
        n++;
        switch (req->kind) {
        case FY_OFI_REQ_CTRL:
            if (!fy_ofi_ctrl_send(req))
                fy_ofi_ep_defer(req);
            break;
        case FY_OFI_REQ_RMA:
        case FY_OFI_REQ_ATOMIC:
            fy_ofi_rma_resume(req);
            break;
        default:
            FY_OFI_WARN(FI_LOG_EP_DATA, "deferred request of kind %d: dropped\n", req->kind);
            fy_ofi_req_free(req);
            break;
        }
    }
    return n;
}

unsigned fy_ofi_ep_progress_after(fy_ofi_ep_t *ep)
{
    unsigned n = deferred_run(ep);
    if (!fy_ofi_list_empty(&ep->closing))
        closing_reap(ep);
    return n;
}

/* ---------------------------------------------------------------- fi_ops */

static int ep_bind_cq(fy_ofi_ep_t *ep, fy_ofi_cq_t *cq, uint64_t flags)
{
    if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
        return -FI_EBADFLAGS;
    if (cq->domain != ep->domain)
        return -FI_EINVAL;
    if (((flags & FI_TRANSMIT) && ep->tx_cq != NULL) || ((flags & FI_RECV) && ep->rx_cq != NULL))
        return -FI_EINVAL;
    if (flags & FI_TRANSMIT) {
        int rc = fy_ofi_epset_add(&cq->set, ep);
        if (rc != 0)
            return rc;
        ep->tx_cq = cq;
        ep->tx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
    }
    if (flags & FI_RECV) {
        int rc = fy_ofi_epset_add(&cq->set, ep);
        if (rc != 0)
            return rc;
        ep->rx_cq = cq;
        ep->rx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
    }
    return 0;
}

static int ep_bind_cntr(fy_ofi_ep_t *ep, fy_ofi_cntr_t *cntr, uint64_t flags)
{
    struct {
        uint64_t flag;
        fy_ofi_cntr_t **slot;
    } map[] = {
        {FI_SEND, &ep->cntr_send},
        {FI_RECV, &ep->cntr_recv},
        {FI_READ, &ep->cntr_read},
        {FI_WRITE, &ep->cntr_write},
        {FI_REMOTE_WRITE, &ep->cntr_remote_write},
    };
    if (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_WRITE))
        return flags & FI_REMOTE_READ ? -FI_ENOSYS : -FI_EBADFLAGS;
    if (cntr->domain != ep->domain)
        return -FI_EINVAL;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (!(flags & map[i].flag))
            continue;
        if (*map[i].slot != NULL)
            return -FI_EINVAL;
        int rc = fy_ofi_epset_add(&cntr->set, ep);
        if (rc != 0)
            return rc;
        *map[i].slot = cntr;
    }
    return 0;
}

/* bind: an AV (one), CQs (FI_TRANSMIT, FI_RECV, FI_SELECTIVE_COMPLETION), counters, an EQ
 * (unused by RDM). Before fi_enable only. */
static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid.fid);
    if (bfid == NULL)
        return -FI_EINVAL;
    int rc;
    fy_ofi_domain_lock(ep->domain);
    if (ep->enabled) {
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    switch (bfid->fclass) {
    case FI_CLASS_AV:
        if (ep->av != NULL) {
            rc = -FI_EINVAL;
            break;
        }
        {
            fy_ofi_av_t *av = FY_OFI_CONTAINER(bfid, fy_ofi_av_t, av_fid.fid);
            if (av->domain != ep->domain) {
                rc = -FI_EINVAL;
                break;
            }
            rc = fy_ofi_av_bind_ep(av, ep);
            if (rc == 0)
                ep->av = av;
        }
        break;
    case FI_CLASS_CQ:
        rc = ep_bind_cq(ep, FY_OFI_CONTAINER(bfid, fy_ofi_cq_t, cq_fid.fid), flags);
        break;
    case FI_CLASS_CNTR:
        rc = ep_bind_cntr(ep, FY_OFI_CONTAINER(bfid, fy_ofi_cntr_t, cntr_fid.fid), flags);
        break;
    case FI_CLASS_EQ:
        rc = 0; /* RDM endpoints post no events */
        break;
    default:
        rc = -FI_ENOSYS; /* shared contexts, MRs */
        break;
    }
out:
    fy_ofi_domain_unlock(ep->domain);
    return rc;
}

/* control: FI_ENABLE (needs an AV: -FI_ENOAV), FI_GETOPSFLAG/FI_SETOPSFLAG (FI_TRANSMIT or
 * FI_RECV in *arg selects the side). */
static int ep_control(struct fid *fid, int command, void *arg)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid.fid);
    int rc = 0;
    fy_ofi_domain_lock(ep->domain);
    switch (command) {
    case FI_ENABLE:
        if (ep->av == NULL)
            rc = -FI_ENOAV;
        else
            ep->enabled = true;
        break;
    case FI_GETOPSFLAG:
    case FI_SETOPSFLAG: {
        uint64_t *flags = arg;
        if (flags == NULL || !(*flags & (FI_TRANSMIT | FI_RECV))) {
            rc = -FI_EINVAL;
            break;
        }
        uint64_t *target = (*flags & FI_TRANSMIT) ? &ep->tx_op_flags : &ep->rx_op_flags;
        if (command == FI_GETOPSFLAG)
            *flags = *target;
        else
            *target = *flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
        break;
    }
    default:
        rc = -FI_ENOSYS;
        break;
    }
    fy_ofi_domain_unlock(ep->domain);
    return rc;
}

static int ep_close(struct fid *fid)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid.fid);
    fy_ofi_domain_t *domain = ep->domain;
    fy_ofi_domain_lock(domain);
    ep->destroying = true;
    /* Close every ferry endpoint gracefully and progress until they finished (at most
     * FI_FERRY_CLOSE_TIMEOUT_MS): a send that completed may still sit in ferry's queue (tcp
     * copies small messages while connecting), and a forced close would drop it. */
    for (size_t i = 0; i < ep->peer_count; i++)
        fy_ofi_ep_peer_remove(ep, i);
    int64_t deadline = fy_ofi_now_ms() + close_timeout_ms;
    while (!fy_ofi_list_empty(&ep->closing) && fy_ofi_now_ms() < deadline) {
        if (fy_ofi_ep_progress(ep) == 0)
            (void)ferry_worker_wait(ep->worker, 10);
    }
    fy_ofi_list_t *item;
    while ((item = fy_ofi_list_pop_head(&ep->closing)) != NULL) {
        fy_ofi_closing_t *c = FY_OFI_CONTAINER(item, fy_ofi_closing_t, link);
        fy_ofi_rkeys_release(ep, c->rkeys, FERRY_ERR_CANCELED);
        ferry_ep_destroy(c->fep);
        free(c);
    }
    /* pending operations complete with FERRY_ERR_CANCELED (ep->destroying: no entries) */
    ferry_worker_destroy(ep->worker);
    fy_ofi_req_pool_free(ep);
    free(ep->peers);
    if (ep->av != NULL)
        fy_ofi_av_unbind_ep(ep->av, ep);
    if (ep->tx_cq != NULL)
        fy_ofi_epset_remove(&ep->tx_cq->set, ep);
    if (ep->rx_cq != NULL)
        fy_ofi_epset_remove(&ep->rx_cq->set, ep);
    fy_ofi_cntr_t *cntrs[] = {ep->cntr_send, ep->cntr_recv, ep->cntr_read, ep->cntr_write,
                              ep->cntr_remote_write};
    for (size_t i = 0; i < sizeof(cntrs) / sizeof(cntrs[0]); i++) {
        if (cntrs[i] != NULL)
            fy_ofi_epset_remove(&cntrs[i]->set, ep);
    }
    domain->refs--;
    fy_ofi_domain_unlock(domain);
    free(ep);
    return 0;
}

static struct fi_ops ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,     /* operations still pending are dropped without entries; 0 */
    .bind = ep_bind,       /* AV, CQ, counter, EQ; -FI_EOPBADSTATE after fi_enable */
    .control = ep_control, /* FI_ENABLE, FI_GETOPSFLAG, FI_SETOPSFLAG */
    .ops_open = fy_ofi_no_ops_open,
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

/* ---------------------------------------------------------------- fi_ops_ep */

static ssize_t ep_cancel(fid_t fid, void *context)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid.fid);
    fy_ofi_domain_lock(ep->domain);
    ssize_t rc = fy_ofi_cancel(ep, context);
    fy_ofi_domain_unlock(ep->domain);
    return rc;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
    (void)fid, (void)optval, (void)optlen;
    if (level != FI_OPT_ENDPOINT)
        return -FI_ENOPROTOOPT;
    (void)optname;
    return -FI_ENOPROTOOPT; /* no option (FI_OPT_MIN_MULTI_RECV needs FI_MULTI_RECV) */
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
    (void)fid, (void)optval, (void)optlen;
    if (level != FI_OPT_ENDPOINT)
        return -FI_ENOPROTOOPT;
    (void)optname;
    return -FI_ENOPROTOOPT;
}

static ssize_t ep_rx_size_left(struct fid_ep *fid)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    fy_ofi_domain_lock(ep->domain);
    ssize_t n = (ssize_t)(FY_OFI_QUEUE_SIZE - ep->rx_used);
    fy_ofi_domain_unlock(ep->domain);
    return n;
}

static ssize_t ep_tx_size_left(struct fid_ep *fid)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    fy_ofi_domain_lock(ep->domain);
    ssize_t n = (ssize_t)(FY_OFI_QUEUE_SIZE - ep->tx_used);
    fy_ofi_domain_unlock(ep->domain);
    return n;
}

static struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,        /* receives only: 0 or -FI_ENOENT */
    .getopt = ep_getopt,        /* -FI_ENOPROTOOPT */
    .setopt = ep_setopt,        /* -FI_ENOPROTOOPT */
    .tx_ctx = fy_ofi_no_tx_ctx, /* -FI_ENOSYS: no scalable endpoints */
    .rx_ctx = fy_ofi_no_rx_ctx,
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

/* ---------------------------------------------------------------- fi_ops_cm */

/* getname: the endpoint's name, FY_OFI_NAME_LEN (64) bytes in every process: the worker's
 * compact address. A shorter buffer gets the first bytes and -FI_ETOOSMALL; *addrlen becomes
 * the full size. */
static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid.fid);
    if (addrlen == NULL || (*addrlen > 0 && addr == NULL))
        return -FI_EINVAL;
    size_t size = FY_OFI_NAME_LEN;
    size_t n = *addrlen < size ? *addrlen : size;
    memcpy(addr, ep->name, n);
    int rc = *addrlen < size ? -FI_ETOOSMALL : 0;
    *addrlen = size;
    return rc;
}

static struct fi_ops_cm ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = fy_ofi_no_setname, /* -FI_ENOSYS: the name is the worker's */
    .getname = ep_getname,        /* 0 or -FI_ETOOSMALL */
    .getpeer = fy_ofi_no_getpeer, /* -FI_ENOSYS: connectionless */
    .connect = fy_ofi_no_connect,
    .listen = fy_ofi_no_listen,
    .accept = fy_ofi_no_accept,
    .reject = fy_ofi_no_reject,
    .shutdown = fy_ofi_no_shutdown,
    .join = fy_ofi_no_join,
};

/* ---------------------------------------------------------------- open */

int fy_ofi_ep_open(struct fid_domain *domain_fid, struct fi_info *info, struct fid_ep **ep_p,
                   void *context)
{
    if (domain_fid == NULL || info == NULL || ep_p == NULL)
        return -FI_EINVAL;
    if (info->ep_attr != NULL && info->ep_attr->type != FI_EP_RDM &&
        info->ep_attr->type != FI_EP_UNSPEC)
        return -FI_EINVAL;
    if (info->ep_attr != NULL && (info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT ||
                                  info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT))
        return -FI_ENOSYS;
    fy_ofi_domain_t *domain = FY_OFI_CONTAINER(domain_fid, fy_ofi_domain_t, domain_fid);
    int rc = -FI_ENOMEM;
    fy_ofi_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        goto err;
    ep->domain = domain;
    ep->caps = info->caps ? info->caps : ~(uint64_t)0;
    ep->tag_format = fy_ofi_tag_format(ep->caps);
    ep->tx_op_flags = info->tx_attr != NULL ? info->tx_attr->op_flags : 0;
    ep->rx_op_flags = info->rx_attr != NULL ? info->rx_attr->op_flags : 0;
    fy_ofi_list_init(&ep->claimed);
    fy_ofi_list_init(&ep->deferred);
    fy_ofi_list_init(&ep->closing);
    fy_ofi_list_init(&ep->fetching);
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = accepted_failed_cb,
                                     .accepted_ep_error_arg = ep};
    fy_ofi_domain_lock(domain);
    ferry_status_t st = ferry_worker_create(domain->context, &wparams, &ep->worker);
    if (st != FERRY_OK) {
        FY_OFI_WARN(FI_LOG_EP_CTRL, "ferry_worker_create failed: %s\n", ferry_status_string(st));
        rc = fy_ofi_errno(st);
        goto err_unlock;
    }
    st = ferry_worker_address_compact(ep->worker, ep->name);
    if (st != FERRY_OK) {
        FY_OFI_WARN(FI_LOG_EP_CTRL, "ferry_worker_address_compact failed: %s\n",
                    ferry_status_string(st));
        rc = fy_ofi_errno(st);
        goto err_destroy;
    }
    if (ferry_worker_get_fd(ep->worker, &ep->worker_fd) != FERRY_OK) {
        rc = -FI_EIO;
        goto err_destroy;
    }
    st = fy_ofi_ctrl_register(ep);
    if (st != FERRY_OK) {
        rc = fy_ofi_errno(st);
        goto err_destroy;
    }
    domain->refs++;
    fy_ofi_domain_unlock(domain);
    ep->ep_fid.fid.fclass = FI_CLASS_EP;
    ep->ep_fid.fid.context = context;
    ep->ep_fid.fid.ops = &ep_fi_ops;
    ep->ep_fid.ops = &ep_ops;
    ep->ep_fid.cm = &ep_cm_ops;
    /* the interfaces of capabilities the endpoint was not opened with answer -FI_ENOSYS */
    ep->ep_fid.msg = (ep->caps & FI_MSG) ? &fy_ofi_ops_msg : &fy_ofi_ops_msg_none;
    ep->ep_fid.tagged = (ep->caps & FI_TAGGED) ? &fy_ofi_ops_tagged : &fy_ofi_ops_tagged_none;
    ep->ep_fid.rma = (ep->caps & FI_RMA) ? &fy_ofi_ops_rma : &fy_ofi_ops_rma_none;
    ep->ep_fid.atomic = (ep->caps & FI_ATOMIC) ? &fy_ofi_ops_atomic : &fy_ofi_ops_atomic_none;
    ep->ep_fid.collective = &fy_ofi_ops_collective_none;
    *ep_p = &ep->ep_fid;
    return 0;

err_destroy:
    ferry_worker_destroy(ep->worker);
err_unlock:
    fy_ofi_domain_unlock(domain);
    free(ep);
err:
    return rc;
}
