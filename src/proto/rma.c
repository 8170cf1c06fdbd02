/* One-sided operations: the checks on the initiator, the choice of path (the transport's own
 * one-sided slot, else the target-executed protocol of rma_am.c), and the requests that track
 * what is outstanding for flushes and fences.
 *
 * Every operation that returns FERRY_INPROGRESS has a request (from a per-worker freelist):
 * the transport or rma_am.c updates the request's own completion, which chains to the user's.
 * Requests carry a sequence number and sit, in issue order, in their endpoint's lists
 * (active: started; queued: waiting behind a fence) and in the worker's list; a flush waits
 * until no request older than itself is left. User completions always run from the worker's
 * deferred queue, so that nothing here runs user code while it walks its lists. */
#define _GNU_SOURCE
#include "proto/rma.h"

#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/copy_bulk.h"
#include "core/log.h"
#include "mem/atomic.h"
#include "mem/mem.h"
#include "progress/worker.h"
#include "wireup/ep.h"

/* Requests allocated at once when the freelist is empty. */
#define RMA_BLOCK_REQS 64

typedef struct rma_req {
    fy_list_link_t ep_link;     /* ep->rma.active/queued/flushes, worker->rma.flushes, free */
    fy_list_link_t worker_link; /* worker->rma.outstanding (operations only) */
    fy_deferred_t notify;       /* reports to user_comp from progress */
    ferry_worker_t *worker;
    ferry_ep_t *ep; /* NULL once complete, or when the endpoint was freed */
    uint64_t seq;
    ferry_completion_t comp;       /* updated by the transport or rma_am.c */
    ferry_completion_t *user_comp; /* may be NULL */
    ferry_status_t status;
    int fenced;     /* queued: starts only when every request issued before it completed */
    fy_rma_op_t op; /* queued: the operation, with private copies of its arrays */
    ferry_iov_t local_inline;
    ferry_remote_iov_t remote_inline;
} rma_req_t;

static void rma_req_comp_cb(ferry_completion_t *comp);
static void rma_notify_cb(fy_deferred_t *self);

/* ------------------------------------------------------------------ requests */

static rma_req_t *rma_req_get(ferry_worker_t *worker)
{
    rma_req_t *req = fy_pool_get(&fy_rma_worker_of(worker)->reqs);
    if (fy_unlikely(req == NULL))
        return NULL;
    fy_list_link_init(&req->ep_link);
    fy_list_link_init(&req->worker_link);
    fy_list_link_init(&req->notify.link);
    req->notify.cb = rma_notify_cb;
    req->worker = worker;
    req->ep = NULL;
    req->seq = 0;
    req->user_comp = NULL;
    req->status = FERRY_OK;
    req->fenced = 0;
    req->op.local = NULL;
    req->op.remote = NULL;
    return req;
}

static void rma_req_free_copies(rma_req_t *req)
{
    if (req->op.local != NULL && req->op.local != &req->local_inline)
        free((void *)req->op.local);
    if (req->op.remote != NULL && req->op.remote != &req->remote_inline)
        free((void *)req->op.remote);
    req->op.local = NULL;
    req->op.remote = NULL;
}

static void rma_req_put(ferry_worker_t *worker, rma_req_t *req)
{
    rma_req_free_copies(req);
    fy_pool_put(&fy_rma_worker_of(worker)->reqs, req);
}

/* Keep the operation for a later start: its arrays are the caller's only during the call. */
static ferry_status_t rma_req_copy_op(rma_req_t *req, const fy_rma_op_t *op)
{
    req->op = *op;
    req->op.local = NULL;
    req->op.remote = NULL;
    if (op->local_count == 1) {
        req->local_inline = op->local[0];
        req->op.local = &req->local_inline;
    } else if (op->local_count > 1) {
        ferry_iov_t *local = malloc(op->local_count * sizeof(*local));
        if (local == NULL) {
            fy_error("malloc(%zu) to queue a one-sided operation behind a fence failed",
                     op->local_count * sizeof(*local));
            return FERRY_ERR_NO_MEMORY;
        }
        memcpy(local, op->local, op->local_count * sizeof(*local));
        req->op.local = local;
    }
    if (op->remote_count == 1) {
        req->remote_inline = op->remote[0];
        req->op.remote = &req->remote_inline;
    } else if (op->remote_count > 1) {
        ferry_remote_iov_t *remote = malloc(op->remote_count * sizeof(*remote));
        if (remote == NULL) {
            fy_error("malloc(%zu) to queue a one-sided operation behind a fence failed",
                     op->remote_count * sizeof(*remote));
            rma_req_free_copies(req);
            return FERRY_ERR_NO_MEMORY;
        }
        memcpy(remote, op->remote, op->remote_count * sizeof(*remote));
        req->op.remote = remote;
    }
    return FERRY_OK;
}

/* Report to the user's completion from progress, then recycle the request. */
static void rma_notify(rma_req_t *req)
{
    if (req->user_comp == NULL) {
        rma_req_put(req->worker, req);
        return;
    }
    fy_worker_defer(req->worker, &req->notify);
}

static void rma_notify_cb(fy_deferred_t *self)
{
    rma_req_t *req = fy_container_of(self, rma_req_t, notify);
    ferry_completion_t *comp = req->user_comp;
    ferry_status_t status = req->status;
    rma_req_put(req->worker, req);
    fy_completion_update(comp, status);
}

/* ------------------------------------------------------------------ order: flushes, fences */

/* Sequence number of the oldest request of ep not complete, or UINT64_MAX. Started requests
 * are all older than queued ones (once the queue is not empty, every new one joins it). */
static uint64_t rma_ep_oldest(ferry_ep_t *ep)
{
    fy_list_link_t *link = fy_list_peek_head(&fy_rma_ep_of(ep)->active);
    if (link == NULL)
        link = fy_list_peek_head(&fy_rma_ep_of(ep)->queued);
    return link != NULL ? fy_list_entry(link, rma_req_t, ep_link)->seq : UINT64_MAX;
}

/* Complete the flushes of list that no request older than them is left for. */
static void rma_check_flushes(fy_list_t *flushes, uint64_t oldest)
{
    fy_list_link_t *link;
    while ((link = fy_list_peek_head(flushes)) != NULL) {
        rma_req_t *rec = fy_list_entry(link, rma_req_t, ep_link);
        if (rec->seq > oldest)
            break;
        fy_list_remove(link);
        rec->ep = NULL;
        rma_notify(rec);
    }
}

static void rma_worker_check_flushes(ferry_worker_t *worker)
{
    fy_list_link_t *link;
    if (fy_list_is_empty(&fy_rma_worker_of(worker)->flushes))
        return;
    link = fy_list_peek_head(&fy_rma_worker_of(worker)->outstanding);
    rma_check_flushes(&fy_rma_worker_of(worker)->flushes,
                      link != NULL ? fy_list_entry(link, rma_req_t, worker_link)->seq : UINT64_MAX);
}

static void rma_retry_add(ferry_ep_t *ep)
{
    if (fy_list_is_linked(&fy_rma_ep_of(ep)->retry_link))
        return;
    fy_list_push_tail(&fy_rma_worker_of(ep->worker)->retry, &fy_rma_ep_of(ep)->retry_link);
    rma_need_progress(ep->worker, 1);
}

static void rma_retry_remove(ferry_ep_t *ep)
{
    if (!fy_list_is_linked(&fy_rma_ep_of(ep)->retry_link))
        return;
    fy_list_remove(&fy_rma_ep_of(ep)->retry_link);
    rma_need_progress(ep->worker, -1);
}

static ferry_status_t rma_start(ferry_ep_t *ep, const fy_rma_op_t *op)
{
    if (ep->tl->rma != NULL) {
        ferry_status_t status = ep->tl->rma(ep->tl_ep, op);
        if (status != FERRY_ERR_UNSUPPORTED)
            return status;
    }
    return fy_rma_am_start(ep, op);
}

static void rma_req_finish(rma_req_t *req, ferry_status_t status);

/* Start what the queue's order allows: the head once everything before it completed when it
 * is fenced, at once otherwise. Returns the number of requests started. */
static unsigned rma_ep_start_queued(ferry_ep_t *ep)
{
    fy_rma_ep_t *rep = fy_rma_ep_of(ep);
    fy_list_link_t *link;
    unsigned count = 0;

    if (rep->starting)
        return 0; /* the caller's loop goes on */
    rma_retry_remove(ep);
    if (rep->failed || ep->state != FY_EP_OPEN)
        return 0;
    rep->starting = 1;
    while (!rep->failed && (link = fy_list_peek_head(&rep->queued)) != NULL) {
        rma_req_t *req = fy_list_entry(link, rma_req_t, ep_link);
        if (req->fenced && !fy_list_is_empty(&rep->active))
            break;
        fy_list_remove(link); /* out of reach of a failure while the transport runs */
        req->comp = (ferry_completion_t){.cb = rma_req_comp_cb, .count = 1, .status = FERRY_OK};
        req->op.comp = &req->comp;
        ferry_status_t status = rma_start(ep, &req->op);
        if (status == FERRY_ERR_NO_RESOURCE) {
            fy_list_push_head(&rep->queued, link);
            rma_retry_add(ep);
            break;
        }
        rma_req_free_copies(req);
        req->fenced = 0;
        count++;
        if (status == FERRY_INPROGRESS)
            fy_list_push_tail(&rep->active, &req->ep_link);
        else
            rma_req_finish(req, status); /* done at once, or failed */
    }
    rep->starting = 0;
    return count;
}

/* A request is complete: out of the lists, report it, then move the flushes and the queue. */
static void rma_req_finish(rma_req_t *req, ferry_status_t status)
{
    ferry_worker_t *worker = req->worker;
    ferry_ep_t *ep = req->ep;

    fy_list_remove(&req->ep_link);
    fy_list_remove(&req->worker_link);
    req->status = status;
    req->ep = NULL;
    rma_notify(req);
    if (ep != NULL) {
        rma_check_flushes(&fy_rma_ep_of(ep)->flushes, rma_ep_oldest(ep));
        if (!fy_list_is_empty(&fy_rma_ep_of(ep)->queued))
            rma_ep_start_queued(ep);
    }
    rma_worker_check_flushes(worker);
}

static void rma_req_comp_cb(ferry_completion_t *comp)
{
    rma_req_t *req = fy_container_of(comp, rma_req_t, comp);
    rma_req_finish(req, comp->status);
}

/* Start op on ep, or queue it behind a fence; track it if it does not finish now. */
static ferry_status_t rma_issue(ferry_ep_t *ep, fy_rma_op_t *op, ferry_completion_t *user_comp)
{
    ferry_worker_t *worker = ep->worker;
    fy_rma_ep_t *rep = fy_rma_ep_of(ep);
    int fenced = rep->fence_pending;
    ferry_status_t status;
    rma_req_t *req;

    if (fenced && fy_list_is_empty(&rep->active) && fy_list_is_empty(&rep->queued))
        fenced = 0; /* what the fence waited for has completed */
    req = rma_req_get(worker);
    if (fy_unlikely(req == NULL))
        return FERRY_ERR_NO_MEMORY;
    req->ep = ep;
    req->user_comp = user_comp;
    if (fy_unlikely(fenced || !fy_list_is_empty(&rep->queued))) {
        status = rma_req_copy_op(req, op);
        if (status != FERRY_OK) {
            rma_req_put(worker, req);
            return status;
        }
        rep->fence_pending = 0;
        req->fenced = fenced;
        req->seq = fy_rma_worker_of(worker)->next_seq++;
        fy_list_push_tail(&rep->queued, &req->ep_link);
        fy_list_push_tail(&fy_rma_worker_of(worker)->outstanding, &req->worker_link);
        return FERRY_INPROGRESS;
    }
    rep->fence_pending = 0;
    req->comp = (ferry_completion_t){.cb = rma_req_comp_cb, .count = 1, .status = FERRY_OK};
    op->comp = &req->comp;
    status = rma_start(ep, op);
    if (status == FERRY_INPROGRESS) {
        req->seq = fy_rma_worker_of(worker)->next_seq++;
        fy_list_push_tail(&rep->active, &req->ep_link);
        fy_list_push_tail(&fy_rma_worker_of(worker)->outstanding, &req->worker_link);
        return FERRY_INPROGRESS;
    }
    rma_req_put(worker, req);
    return status;
}

/* ------------------------------------------------------------------ checks */

static const char *rma_access_name(unsigned access)
{
    switch (access) {
    case FERRY_ACCESS_REMOTE_READ:
        return "FERRY_ACCESS_REMOTE_READ";
    case FERRY_ACCESS_REMOTE_WRITE:
        return "FERRY_ACCESS_REMOTE_WRITE";
    default:
        return "FERRY_ACCESS_REMOTE_ATOMIC";
    }
}

/* The endpoint, the key and the access it grants. */
static ferry_status_t rma_check_key(const char *call, ferry_ep_t *ep, const ferry_rkey_t *rkey,
                                    unsigned access)
{
    if (fy_unlikely(ep == NULL || rkey == NULL)) {
        fy_warn("%s: the %s is NULL", call, ep == NULL ? "endpoint" : "remote key");
        return FERRY_ERR_INVALID_PARAM;
    }
    if (fy_unlikely(rkey->ep != ep)) {
        fy_warn("%s: the remote key (region %u of pid %u) was unpacked on endpoint %p, not on "
                "endpoint %p (use a key on the endpoint it was unpacked on)",
                call, rkey->key.index, rkey->key.pid, (void *)rkey->ep, (void *)ep);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (fy_unlikely(ep->state != FY_EP_OPEN))
        return ep->error;
    if (fy_unlikely((rkey->key.access & access) != access)) {
        fy_warn("%s: the key of region %u of pid %u does not grant %s (it grants 0x%x)", call,
                rkey->key.index, rkey->key.pid, rma_access_name(access), rkey->key.access);
        return FERRY_ERR_ACCESS;
    }
    return FERRY_OK;
}

static ferry_status_t rma_check_range(const char *call, const ferry_rkey_t *rkey, uint64_t offset,
                                      uint64_t length)
{
    if (fy_likely(mem_range_ok(rkey->key.length, offset, length)))
        return FERRY_OK;
    fy_warn("%s: [offset %llu, +%llu bytes) is outside region %u of pid %u (%llu bytes)%s", call,
            (unsigned long long)offset, (unsigned long long)length, rkey->key.index, rkey->key.pid,
            (unsigned long long)rkey->key.length,
            offset > UINT64_MAX - length ? ": offset + length overflows" : "");
    return FERRY_ERR_ACCESS;
}

/* The direct path: memory of a local peer mapped here (ferry_mem_alloc), still registered as
 * the key says, granting the access, the range inside it, not single use, and nothing queued
 * or fenced on ep. Then the operation is a load, a store or a CPU atomic right here: no
 * descriptor, no request, no system call. Anything else takes the general path, which also
 * produces the errors. */
static inline void *rma_direct(const ferry_ep_t *ep, const ferry_rkey_t *rkey, unsigned access,
                               uint64_t offset, uint64_t length)
{
    const mem_keytable_entry_t *e = rkey->entry;
    if (e == NULL || (rkey->key.flags & FERRY_MEM_SINGLE_USE) || fy_rma_ep_of(ep)->fence_pending ||
        !fy_list_is_empty(&fy_rma_ep_of(ep)->queued))
        return NULL;
    if (!mem_entry_matches(e, rkey->key.generation, rkey->secret) ||
        (e->access & access) != access || !mem_range_ok(rkey->mapped_length, offset, length))
        return NULL;
    return (char *)rkey->mapped + offset;
}

/* A put or get on the direct path: the peer's memory mapped here at direct. */
static fy_always_inline void rma_copy_direct(fy_rma_kind_t kind, void *direct, void *buffer,
                                             size_t length)
{
    if (kind == FY_RMA_PUT)
        fy_copy_bulk(direct, buffer, length);
    else
        fy_copy_bulk(buffer, direct, length);
}

/* The direct path of a contiguous put or get, inline in ferry_put and ferry_get so that a small
 * one costs its checks and its copy without a call into the general path and its frame (8-byte
 * puts and gets stream 1.18x as many a second): its own checks (the owner's entry: live,
 * access, range) suffice. Returns whether it moved the bytes; if not, rma_contig takes the
 * operation. */
static fy_always_inline bool rma_contig_direct(fy_rma_kind_t kind, ferry_ep_t *ep, void *buffer,
                                               size_t length, uint64_t remote_offset,
                                               ferry_rkey_t *rkey)
{
    unsigned access = kind == FY_RMA_PUT ? FERRY_ACCESS_REMOTE_WRITE : FERRY_ACCESS_REMOTE_READ;
    if (fy_unlikely(ep == NULL || rkey == NULL || rkey->ep != ep || ep->state != FY_EP_OPEN ||
                    buffer == NULL || length == 0))
        return false;
    void *direct = rma_direct(ep, rkey, access, remote_offset, length);
    if (direct == NULL)
        return false;
    rma_copy_direct(kind, direct, buffer, length);
    return true;
}

/* A contiguous put or get that rma_contig_direct did not take: checked (each error logged
 * here), then a request (rma_direct would refuse it again: same key, same range). */
static fy_noinline ferry_status_t rma_contig(const char *call, fy_rma_kind_t kind, ferry_ep_t *ep,
                                             void *buffer, size_t length, uint64_t remote_offset,
                                             ferry_rkey_t *rkey, ferry_completion_t *comp)
{
    unsigned access = kind == FY_RMA_PUT ? FERRY_ACCESS_REMOTE_WRITE : FERRY_ACCESS_REMOTE_READ;
    ferry_status_t status = rma_check_key(call, ep, rkey, access);

    if (fy_unlikely(status != FERRY_OK))
        return status;
    if (fy_unlikely(buffer == NULL && length > 0)) {
        fy_warn("%s: NULL buffer for %zu bytes", call, length);
        return FERRY_ERR_INVALID_PARAM;
    }
    status = rma_check_range(call, rkey, remote_offset, length);
    if (fy_unlikely(status != FERRY_OK))
        return status;
    if (length == 0)
        return FERRY_OK;
    ferry_iov_t local = {.buffer = buffer, .length = length};
    ferry_remote_iov_t remote = {.offset = remote_offset, .length = length};
    fy_rma_op_t op = {.kind = kind,
                      .rkey = rkey,
                      .local = &local,
                      .local_count = 1,
                      .remote = &remote,
                      .remote_count = 1,
                      .length = length};
    return rma_issue(ep, &op, comp);
}

static ferry_status_t rma_vector(const char *call, fy_rma_kind_t kind, ferry_ep_t *ep,
                                 const ferry_iov_t *iov, size_t iovcnt,
                                 const ferry_remote_iov_t *remote, size_t remote_count,
                                 ferry_rkey_t *rkey, ferry_completion_t *comp)
{
    unsigned access = kind == FY_RMA_PUT ? FERRY_ACCESS_REMOTE_WRITE : FERRY_ACCESS_REMOTE_READ;
    ferry_status_t status = rma_check_key(call, ep, rkey, access);
    uint64_t local_total = 0, remote_total = 0;

    if (status != FERRY_OK)
        return status;
    if ((iov == NULL && iovcnt > 0) || (remote == NULL && remote_count > 0)) {
        fy_warn("%s: NULL %s with a count of %zu", call,
                iov == NULL && iovcnt > 0 ? "iov" : "remote ranges",
                iov == NULL && iovcnt > 0 ? iovcnt : remote_count);
        return FERRY_ERR_INVALID_PARAM;
    }
    for (size_t i = 0; i < iovcnt; i++) {
        if ((iov[i].buffer == NULL && iov[i].length > 0) ||
            iov[i].length > UINT64_MAX - local_total) {
            fy_warn("%s: local piece %zu (%p, %zu bytes) is NULL or overflows the total", call, i,
                    iov[i].buffer, iov[i].length);
            return FERRY_ERR_INVALID_PARAM;
        }
        local_total += iov[i].length;
    }
    for (size_t i = 0; i < remote_count; i++) {
        status = rma_check_range(call, rkey, remote[i].offset, remote[i].length);
        if (status != FERRY_OK)
            return status;
        if (remote[i].length > UINT64_MAX - remote_total) {
            fy_warn("%s: the remote ranges' total length overflows 64 bits", call);
            return FERRY_ERR_INVALID_PARAM;
        }
        remote_total += remote[i].length;
    }
    if (local_total != remote_total) {
        fy_warn("%s: the %zu local pieces hold %llu bytes but the %zu remote ranges %llu "
                "(both lists must cover the same total)",
                call, iovcnt, (unsigned long long)local_total, remote_count,
                (unsigned long long)remote_total);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (local_total == 0)
        return FERRY_OK;
    fy_rma_op_t op = {.kind = kind,
                      .rkey = rkey,
                      .local = iov,
                      .local_count = iovcnt,
                      .remote = remote,
                      .remote_count = remote_count,
                      .length = local_total};
    return rma_issue(ep, &op, comp);
}

static ferry_status_t rma_atomic(const char *call, fy_rma_kind_t kind, ferry_ep_t *ep,
                                 ferry_atomic_op_t aop, uint64_t value, uint64_t compare,
                                 size_t size, uint64_t remote_offset, ferry_rkey_t *rkey,
                                 uint64_t *result, ferry_completion_t *comp)
{
    ferry_status_t status = rma_check_key(call, ep, rkey, FERRY_ACCESS_REMOTE_ATOMIC);
    bool op_ok;

    if (status != FERRY_OK)
        return status;
    if (kind == FY_RMA_ATOMIC_POST)
        op_ok = aop == FERRY_ATOMIC_ADD || aop == FERRY_ATOMIC_AND || aop == FERRY_ATOMIC_OR ||
                aop == FERRY_ATOMIC_XOR;
    else
        op_ok = aop == FERRY_ATOMIC_ADD || aop == FERRY_ATOMIC_SWAP || aop == FERRY_ATOMIC_CSWAP;
    if (!op_ok) {
        fy_warn("%s: atomic operation %d is not one this call performs (post: ADD, AND, OR, "
                "XOR; fetch: ADD, SWAP, CSWAP)",
                call, (int)aop);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (size != 4 && size != 8) {
        fy_warn("%s: size %zu: atomics are 4 or 8 bytes", call, size);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (kind == FY_RMA_ATOMIC_FETCH && result == NULL) {
        fy_warn("%s: NULL result", call);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (remote_offset % size != 0) {
        fy_warn("%s: offset %llu is not aligned to the %zu-byte word", call,
                (unsigned long long)remote_offset, size);
        return FERRY_ERR_INVALID_PARAM;
    }
    status = rma_check_range(call, rkey, remote_offset, size);
    if (status != FERRY_OK)
        return status;
    void *direct = rma_direct(ep, rkey, FERRY_ACCESS_REMOTE_ATOMIC, remote_offset, size);
    if (direct != NULL) {
        uint64_t old = mem_atomic_apply(direct, (unsigned)size, aop, value, compare);
        if (result != NULL)
            *result = old;
        return FERRY_OK;
    }
    ferry_remote_iov_t remote = {.offset = remote_offset, .length = size};
    fy_rma_op_t op = {.kind = kind,
                      .rkey = rkey,
                      .remote = &remote,
                      .remote_count = 1,
                      .length = size,
                      .atomic_op = aop,
                      .atomic_size = (unsigned)size,
                      .value = value,
                      .compare = compare,
                      .result = result};
    return rma_issue(ep, &op, comp);
}

/* ------------------------------------------------------------------ public calls */

/* Count a one-sided call on its endpoint (include/ferry/counters.h): puts and atomics as sent,
 * gets as received, a refusal or an error by its status. Returns status. */
static ferry_status_t rma_counted(ferry_ep_t *ep, fy_rma_kind_t kind, uint64_t bytes,
                                  ferry_status_t status)
{
    if (fy_unlikely(ep == NULL))
        return status;
    if (fy_likely(status == FERRY_OK || status == FERRY_INPROGRESS)) {
        if (kind == FY_RMA_GET)
            fy_count_received(&ep->counters.rma, bytes);
        else
            fy_count_sent(&ep->counters.rma, bytes);
    } else {
        fy_count_status(&ep->counters, status);
    }
    return status;
}

static uint64_t rma_iov_bytes(const ferry_iov_t *iov, size_t iovcnt)
{
    uint64_t total = 0;
    for (size_t i = 0; iov != NULL && i < iovcnt; i++)
        total += iov[i].length;
    return total;
}

/* One contiguous put or get (kind), named for its log lines; the caller holds the worker's
 * lock in multi-thread mode. */
static fy_always_inline ferry_status_t locked_rma_contig(const char *call, fy_rma_kind_t kind,
                                                         ferry_ep_t *ep, void *buffer,
                                                         size_t length, uint64_t remote_offset,
                                                         ferry_rkey_t *rkey,
                                                         ferry_completion_t *comp)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    if (fy_likely(rma_contig_direct(kind, ep, buffer, length, remote_offset, rkey)))
        return rma_counted(ep, kind, length, FERRY_OK);
    return rma_counted(ep, kind, length,
                       rma_contig(call, kind, ep, buffer, length, remote_offset, rkey, comp));
}

/* The entry of ferry_put and ferry_get: takes the worker's lock in multi-thread mode. */
static fy_always_inline ferry_status_t rma_contig_entry(const char *call, fy_rma_kind_t kind,
                                                        ferry_ep_t *ep, void *buffer, size_t length,
                                                        uint64_t remote_offset, ferry_rkey_t *rkey,
                                                        ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rma_contig(call, kind, ep, buffer, length, remote_offset, rkey, comp);
    fy_worker_lock(locked);
    ferry_status_t status =
        locked_rma_contig(call, kind, ep, buffer, length, remote_offset, rkey, comp);
    fy_worker_unlock(locked);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_put(ferry_ep_t *ep, const void *buffer, size_t length,
                                      uint64_t remote_offset, ferry_rkey_t *rkey,
                                      ferry_completion_t *comp)
{
    return rma_contig_entry("ferry_put", FY_RMA_PUT, ep, (void *)buffer, length, remote_offset,
                            rkey, comp);
}

FERRY_EXPORT ferry_status_t ferry_get(ferry_ep_t *ep, void *buffer, size_t length,
                                      uint64_t remote_offset, ferry_rkey_t *rkey,
                                      ferry_completion_t *comp)
{
    return rma_contig_entry("ferry_get", FY_RMA_GET, ep, buffer, length, remote_offset, rkey, comp);
}

/* One vector put or get (kind); the caller holds the worker's lock in multi-thread mode. */
static ferry_status_t locked_rma_vector(const char *call, fy_rma_kind_t kind, ferry_ep_t *ep,
                                        const ferry_iov_t *iov, size_t iovcnt,
                                        const ferry_remote_iov_t *remote, size_t remote_count,
                                        ferry_rkey_t *rkey, ferry_completion_t *comp)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    return rma_counted(ep, kind, rma_iov_bytes(iov, iovcnt),
                       rma_vector(call, kind, ep, iov, iovcnt, remote, remote_count, rkey, comp));
}

/* The entry of ferry_putv and ferry_getv: takes the worker's lock in multi-thread mode. */
static ferry_status_t rma_vector_entry(const char *call, fy_rma_kind_t kind, ferry_ep_t *ep,
                                       const ferry_iov_t *iov, size_t iovcnt,
                                       const ferry_remote_iov_t *remote, size_t remote_count,
                                       ferry_rkey_t *rkey, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rma_vector(call, kind, ep, iov, iovcnt, remote, remote_count, rkey, comp);
    fy_worker_lock(locked);
    ferry_status_t status =
        locked_rma_vector(call, kind, ep, iov, iovcnt, remote, remote_count, rkey, comp);
    fy_worker_unlock(locked);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_putv(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                                       const ferry_remote_iov_t *remote, size_t remote_count,
                                       ferry_rkey_t *rkey, ferry_completion_t *comp)
{
    return rma_vector_entry("ferry_putv", FY_RMA_PUT, ep, iov, iovcnt, remote, remote_count, rkey,
                            comp);
}

FERRY_EXPORT ferry_status_t ferry_getv(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                                       const ferry_remote_iov_t *remote, size_t remote_count,
                                       ferry_rkey_t *rkey, ferry_completion_t *comp)
{
    return rma_vector_entry("ferry_getv", FY_RMA_GET, ep, iov, iovcnt, remote, remote_count, rkey,
                            comp);
}

/* One atomic, posted (kind FY_RMA_ATOMIC_POST, result NULL) or fetching; the caller holds the
 * worker's lock in multi-thread mode. */
static inline ferry_status_t locked_rma_atomic(const char *call, fy_rma_kind_t kind, ferry_ep_t *ep,
                                               ferry_atomic_op_t op, uint64_t value,
                                               uint64_t compare, size_t size,
                                               uint64_t remote_offset, ferry_rkey_t *rkey,
                                               uint64_t *result, ferry_completion_t *comp)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    return rma_counted(
        ep, kind, size,
        rma_atomic(call, kind, ep, op, value, compare, size, remote_offset, rkey, result, comp));
}

/* The entry of ferry_atomic_post and ferry_atomic_fetch: takes the worker's lock in
 * multi-thread mode. */
static inline ferry_status_t rma_atomic_entry(const char *call, fy_rma_kind_t kind, ferry_ep_t *ep,
                                              ferry_atomic_op_t op, uint64_t value,
                                              uint64_t compare, size_t size, uint64_t remote_offset,
                                              ferry_rkey_t *rkey, uint64_t *result,
                                              ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rma_atomic(call, kind, ep, op, value, compare, size, remote_offset, rkey,
                                 result, comp);
    fy_worker_lock(locked);
    ferry_status_t status = locked_rma_atomic(call, kind, ep, op, value, compare, size,
                                              remote_offset, rkey, result, comp);
    fy_worker_unlock(locked);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_atomic_post(ferry_ep_t *ep, ferry_atomic_op_t op, uint64_t value,
                                              size_t size, uint64_t remote_offset,
                                              ferry_rkey_t *rkey, ferry_completion_t *comp)
{
    return rma_atomic_entry("ferry_atomic_post", FY_RMA_ATOMIC_POST, ep, op, value, 0, size,
                            remote_offset, rkey, NULL, comp);
}

FERRY_EXPORT ferry_status_t ferry_atomic_fetch(ferry_ep_t *ep, ferry_atomic_op_t op, uint64_t value,
                                               uint64_t compare, size_t size,
                                               uint64_t remote_offset, ferry_rkey_t *rkey,
                                               uint64_t *result, ferry_completion_t *comp)
{
    return rma_atomic_entry("ferry_atomic_fetch", FY_RMA_ATOMIC_FETCH, ep, op, value, compare, size,
                            remote_offset, rkey, result, comp);
}

static inline ferry_status_t locked_ep_fence(ferry_ep_t *ep)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    if (ep == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (ep->state != FY_EP_OPEN)
        return ep->error;
    if (!fy_list_is_empty(&fy_rma_ep_of(ep)->active) ||
        !fy_list_is_empty(&fy_rma_ep_of(ep)->queued))
        fy_rma_ep_of(ep)->fence_pending = 1;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_ep_fence(ferry_ep_t *ep)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_ep_fence(ep);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_fence(ep);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_ep_flush(ferry_ep_t *ep, ferry_completion_t *comp)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    rma_req_t *rec;

    if (ep == NULL || comp == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (ep->state != FY_EP_OPEN)
        return ep->error;
    if (fy_list_is_empty(&fy_rma_ep_of(ep)->active) && fy_list_is_empty(&fy_rma_ep_of(ep)->queued))
        return FERRY_OK;
    rec = rma_req_get(ep->worker);
    if (rec == NULL)
        return FERRY_ERR_NO_MEMORY;
    rec->ep = ep;
    rec->user_comp = comp;
    rec->seq = fy_rma_worker_of(ep->worker)->next_seq;
    fy_list_push_tail(&fy_rma_ep_of(ep)->flushes, &rec->ep_link);
    return FERRY_INPROGRESS;
}

FERRY_EXPORT ferry_status_t ferry_ep_flush(ferry_ep_t *ep, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_ep_flush(ep, comp);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_flush(ep, comp);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_worker_flush(ferry_worker_t *worker, ferry_completion_t *comp)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    rma_req_t *rec;

    if (worker == NULL || comp == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_list_is_empty(&fy_rma_worker_of(worker)->outstanding))
        return FERRY_OK;
    rec = rma_req_get(worker);
    if (rec == NULL)
        return FERRY_ERR_NO_MEMORY;
    rec->user_comp = comp;
    rec->seq = fy_rma_worker_of(worker)->next_seq;
    fy_list_push_tail(&fy_rma_worker_of(worker)->flushes, &rec->ep_link);
    return FERRY_INPROGRESS;
}

FERRY_EXPORT ferry_status_t ferry_worker_flush(ferry_worker_t *worker, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_worker_flush(worker, comp);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_worker_flush(worker, comp);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* ------------------------------------------------------------------ life cycle */

void rma_need_progress(ferry_worker_t *worker, int delta)
{
    fy_rma_worker_t *rw = fy_rma_worker_of(worker);
    rw->need_progress = (unsigned)((int)rw->need_progress + delta);
    fy_worker_module_progress_set(worker, FY_MODULE_RMA, rw->need_progress > 0);
}

static ferry_status_t rma_module_init(ferry_worker_t *worker, void **state_p)
{
    fy_rma_worker_t *rw = calloc(1, sizeof(*rw));
    if (rw == NULL) {
        fy_error("calloc(%zu) for the one-sided operations of a worker failed", sizeof(*rw));
        return FERRY_ERR_NO_MEMORY;
    }
    *state_p = rw; /* before fy_rma_am_init, which reaches it */
    rw->next_seq = 1;
    fy_list_init(&rw->outstanding);
    fy_list_init(&rw->flushes);
    fy_pool_init(&rw->reqs, sizeof(rma_req_t), RMA_BLOCK_REQS, "one-sided operation requests");
    fy_list_init(&rw->retry);
    rw->need_progress = 0;
    fy_rma_am_init(worker);
    return FERRY_OK;
}

/* Worker destruction: a request still in use keeps private copies of its arrays. */
static void rma_req_release(void *arg, void *object)
{
    (void)arg;
    rma_req_free_copies(object);
}

static void rma_module_cleanup(ferry_worker_t *worker)
{
    fy_rma_worker_t *rw = fy_rma_worker_of(worker);
    fy_list_link_t *link;
    unsigned left = 0;

    /* Every endpoint was freed and the deferred callbacks ran: what is still here was never
     * completed by its transport. Report it now rather than leak it. */
    while ((link = fy_list_pop_head(&rw->outstanding)) != NULL) {
        rma_req_t *req = fy_list_entry(link, rma_req_t, worker_link);
        fy_list_remove(&req->ep_link);
        fy_list_remove(&req->notify.link);
        rma_req_free_copies(req);
        fy_completion_update(req->user_comp, FERRY_ERR_CANCELED);
        left++;
    }
    while ((link = fy_list_pop_head(&rw->flushes)) != NULL) {
        rma_req_t *rec = fy_list_entry(link, rma_req_t, ep_link);
        fy_completion_update(rec->user_comp, FERRY_ERR_CANCELED);
    }
    if (left > 0)
        fy_warn("ferry_worker_destroy: %u one-sided operations were never completed by "
                "their transport; reported as FERRY_ERR_CANCELED",
                left);
    fy_rma_am_cleanup(worker);
    fy_pool_destroy(&rw->reqs, rma_req_release, NULL);
    free(rw);
}

unsigned fy_rma_progress(ferry_worker_t *worker)
{
    fy_rma_worker_t *rw = fy_rma_worker_of(worker);
    fy_list_link_t *link;
    unsigned count = 0;

    if (!fy_list_is_empty(&rw->retry)) {
        fy_list_t again;
        fy_list_init(&again);
        fy_list_splice_tail(&again, &rw->retry);
        while ((link = fy_list_pop_head(&again)) != NULL) {
            ferry_ep_t *ep = fy_container_of(link, fy_rma_ep_t, retry_link)->ep;
            rma_need_progress(worker, -1);
            count += rma_ep_start_queued(ep);
        }
    }
    return count + fy_rma_am_progress(worker);
}

static void rma_ep_init(ferry_ep_t *ep)
{
    fy_rma_ep_t *rep = fy_rma_ep_of(ep);
    rep->ep = ep;
    fy_list_init(&rep->active);
    fy_list_init(&rep->queued);
    fy_list_init(&rep->flushes);
    fy_list_link_init(&rep->retry_link);
    rep->fence_pending = 0;
    rep->starting = 0;
    rep->failed = 0;
    rep->am_unsent = 0;
    rep->am_blocked_pass = 0;
}

void fy_rma_ep_fail(ferry_ep_t *ep, ferry_status_t status)
{
    fy_rma_ep_t *rep = fy_rma_ep_of(ep);
    fy_list_link_t *link;

    rep->failed = 1;
    rep->fence_pending = 0;
    rma_retry_remove(ep);
    for (link = fy_list_first(&rep->flushes); link != fy_list_end(&rep->flushes);
         link = link->next) {
        rma_req_t *rec = fy_list_entry(link, rma_req_t, ep_link);
        if (rec->status == FERRY_OK)
            rec->status = status;
    }
    while ((link = fy_list_pop_head(&rep->queued)) != NULL)
        rma_req_finish(fy_list_entry(link, rma_req_t, ep_link), status);
    fy_rma_am_ep_fail(ep, status);
}

static void rma_ep_free(ferry_ep_t *ep)
{
    ferry_status_t status = ep->state == FY_EP_FAILED ? ep->error : FERRY_ERR_CANCELED;
    fy_rma_ep_t *rep = fy_rma_ep_of(ep);
    fy_list_link_t *link;

    fy_rma_ep_fail(ep, status);
    /* Operations the transport still owns complete from its ep_destroy; they stay in the
     * worker's list (for worker flushes) but forget the endpoint. */
    while ((link = fy_list_pop_head(&rep->active)) != NULL)
        fy_list_entry(link, rma_req_t, ep_link)->ep = NULL;
    while ((link = fy_list_pop_head(&rep->flushes)) != NULL) {
        rma_req_t *rec = fy_list_entry(link, rma_req_t, ep_link);
        if (rec->status == FERRY_OK)
            rec->status = status;
        rec->ep = NULL;
        rma_notify(rec);
    }
    rma_worker_check_flushes(ep->worker);
}

static bool rma_module_busy(ferry_worker_t *worker)
{
    /* requests or replies waiting for room must not sleep: the peer that frees it does not
     * signal us */
    return fy_rma_worker_of(worker)->need_progress > 0;
}

const fy_module_ops_t fy_rma_module = {
    .name = "rma",
    .ep_state_size = sizeof(fy_rma_ep_t),
    .init = rma_module_init,
    .cleanup = rma_module_cleanup,
    .progress = fy_rma_progress,
    .busy = rma_module_busy,
    .ep_init = rma_ep_init,
    .ep_stop = fy_rma_ep_fail,
    .ep_free = rma_ep_free,
};
