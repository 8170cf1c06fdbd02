/* Endpoints: transport selection, close, failure, destruction. */
#define _GNU_SOURCE
#include "wireup/ep.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/time.h"
#include "wireup/address.h"

static void ep_error_deferred_cb(fy_deferred_t *self);
static void ep_close_deferred_cb(fy_deferred_t *self);
static void ep_free_deferred_cb(fy_deferred_t *self);
static void ep_tl_destroy_deferred_cb(fy_deferred_t *self);

/* Room for an endpoint and every module's state after it, each aligned for any type. */
static size_t ep_allocation_size(size_t offsets[FY_MODULE_MAX])
{
    const size_t align = _Alignof(max_align_t);
    size_t size = (sizeof(ferry_ep_t) + align - 1) & ~(align - 1);
    for (size_t m = 0; m < fy_modules_count; m++) {
        offsets[m] = size;
        size += (fy_modules[m]->ep_state_size + align - 1) & ~(align - 1);
    }
    return size;
}

static ferry_ep_t *ep_alloc(ferry_worker_t *worker, const ferry_ep_params_t *params)
{
    size_t offsets[FY_MODULE_MAX];
    size_t size = ep_allocation_size(offsets);
    ferry_ep_t *ep = calloc(1, size);
    if (ep == NULL) {
        fy_error("calloc(%zu) for an endpoint failed", size);
        return NULL;
    }
    ep->worker = worker;
    ep->counters.size = sizeof(ep->counters);
    for (size_t m = 0; m < fy_modules_count; m++)
        ep->module_state[m] = fy_modules[m]->ep_state_size ? (char *)ep + offsets[m] : NULL;
    ep->state = FY_EP_OPEN;
    ep->error = FERRY_OK;
    if (params != NULL)
        ep->params = *params;
    ep->error_deferred.cb = ep_error_deferred_cb;
    fy_list_init(&ep->error_deferred.link);
    ep->close_deferred.cb = ep_close_deferred_cb;
    fy_list_init(&ep->close_deferred.link);
    ep->free_deferred.cb = ep_free_deferred_cb;
    fy_list_init(&ep->free_deferred.link);
    ep->tl_destroy_deferred.cb = ep_tl_destroy_deferred_cb;
    fy_list_init(&ep->tl_destroy_deferred.link);
    for (size_t m = 0; m < fy_modules_count; m++) {
        if (fy_modules[m]->ep_init != NULL)
            fy_modules[m]->ep_init(ep);
    }
    return ep;
}

/* Destroy the transport's endpoint, keeping what its send_short counted there (am_sent). */
static void ep_tl_destroy(ferry_ep_t *ep)
{
    fy_am_traffic_add_tl(&ep->am_traffic, ep);
    ep->tl->ep_destroy(ep->tl_ep);
    ep->tl_ep = NULL;
}

ferry_status_t fy_ep_am_count_short(ferry_ep_t *ep, size_t length, ferry_status_t status)
{
    if (fy_likely(status == FERRY_OK || status == FERRY_INPROGRESS)) {
        ep->am_traffic.short_sent++;
        ep->am_traffic.short_sent_bytes += length;
    } else {
        fy_count_status(&ep->counters, status);
    }
    return status;
}

static void ep_free(ferry_ep_t *ep)
{
    ferry_counters_t counters;
    fy_ep_counters_read(ep, &counters);
    fy_counters_add(&ep->worker->retired, &counters);
    fy_worker_undefer(ep->worker, &ep->error_deferred);
    fy_worker_undefer(ep->worker, &ep->free_deferred);
    fy_worker_undefer(ep->worker, &ep->tl_destroy_deferred);
    if (fy_list_is_linked(&ep->close_deferred.link)) {
        /* closed, but freed before its completion ran from progress: complete it now */
        ferry_completion_t *comp = ep->close_comp;
        fy_worker_undefer(ep->worker, &ep->close_deferred);
        ep->close_comp = NULL;
        fy_completion_update(comp, FERRY_OK);
    }
    for (size_t m = 0; m < fy_modules_count; m++) { /* nothing refers to ep after */
        if (fy_modules[m]->ep_free != NULL)
            fy_modules[m]->ep_free(ep);
    }
    if (ep->tl_ep != NULL)
        ep_tl_destroy(ep);
    fy_list_remove(&ep->link);
    free(ep);
}

int fy_ep_select_transport(ferry_worker_t *worker, const fy_address_t *address,
                           const fy_tl_peer_t *peer, const fy_address_record_t **record_p)
{
    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        unsigned t = worker->tl_active[i];
        const fy_address_record_t *record = fy_address_find(address, fy_transports[t]->id);
        if (record != NULL &&
            fy_transports[t]->reachable(worker->tl[t], peer, record->data, record->length)) {
            *record_p = record;
            return (int)t;
        }
    }
    return -1;
}

static inline ferry_status_t locked_ep_create(ferry_worker_t *worker, const void *address_blob,
                                              size_t length, const ferry_ep_params_t *params,
                                              ferry_ep_t **ep_p)
{
    const fy_address_record_t *record = NULL;
    fy_address_t address;
    fy_tl_peer_t peer;
    ferry_status_t status;
    ferry_ep_t *ep;
    int t;

    if (worker == NULL || ep_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    status = fy_address_parse_any(address_blob, length, &worker->context->host, &address);
    if (status != FERRY_OK)
        return status;
    peer = (fy_tl_peer_t){
        .worker_uuid = address.worker_uuid, .host = address.host, .pid = address.pid};
    t = fy_ep_select_transport(worker, &address, &peer, &record);
    if (t < 0) {
        fy_warn("ferry_ep_create: no enabled transport reaches the worker of pid %u "
                "(this worker enables %u transports; run ferry_info -e on the address file "
                "to see why)",
                peer.pid, worker->tl_active_count);
        return FERRY_ERR_UNREACHABLE;
    }
    ep = ep_alloc(worker, params);
    if (ep == NULL)
        return FERRY_ERR_NO_MEMORY;
    ep->tl = fy_transports[t];
    ep->tl_index = (unsigned)t;
    ep->caps = worker->context->caps[t];
    ep->peer = peer;
    fy_list_push_tail(&worker->eps, &ep->link);
    status = ep->tl->ep_init(worker->tl[t], ep, &peer, record->data, record->length, &ep->caps,
                             &ep->tl_ep);
    if (status != FERRY_OK)
        goto err_free_ep;
    fy_info("endpoint %p to pid %u (worker %016llx) uses transport %s", (void *)ep, peer.pid,
            (unsigned long long)peer.worker_uuid, ep->tl->name);
    *ep_p = ep;
    return FERRY_OK;

err_free_ep:
    ep->tl_ep = NULL;
    ep_free(ep);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_ep_create(ferry_worker_t *worker, const void *address_blob,
                                            size_t length, const ferry_ep_params_t *params,
                                            ferry_ep_t **ep_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_ep_create(worker, address_blob, length, params, ep_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_create(worker, address_blob, length, params, ep_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

ferry_status_t fy_ep_create_accepted(ferry_worker_t *worker, const fy_tl_ops_t *tl,
                                     fy_tl_ep_t *tl_ep, const fy_tl_peer_t *peer,
                                     const fy_tl_caps_t *caps, ferry_ep_t **ep_p)
{
    ferry_ep_params_t params = {.error_cb = worker->params.accepted_ep_error_cb,
                                .error_arg = worker->params.accepted_ep_error_arg};
    ferry_ep_t *ep = ep_alloc(worker, &params);
    if (ep == NULL)
        return FERRY_ERR_NO_MEMORY;
    ep->tl = tl;
    ep->tl_ep = tl_ep;
    ep->accepted = 1;
    for (size_t t = 0; t < fy_transports_count; t++) {
        if (fy_transports[t] == tl)
            ep->tl_index = (unsigned)t;
    }
    ep->peer = *peer;
    ep->caps = *caps;
    fy_list_push_tail(&worker->eps, &ep->link);
    fy_info("accepted endpoint %p over transport %s", (void *)ep, tl->name);
    *ep_p = ep;
    return FERRY_OK;
}

/* Tell every module, once, that the endpoint carries no more traffic. */
static void ep_stop_modules(ferry_ep_t *ep, ferry_status_t status)
{
    if (ep->stopped)
        return;
    ep->stopped = 1;
    for (size_t m = 0; m < fy_modules_count; m++) {
        if (fy_modules[m]->ep_stop != NULL)
            fy_modules[m]->ep_stop(ep, status);
    }
}

static void ep_error_deferred_cb(fy_deferred_t *self)
{
    ferry_ep_t *ep = fy_container_of(self, ferry_ep_t, error_deferred);
    ep->error_pending = 0;
    if (ep->close_comp != NULL) {
        ferry_completion_t *comp = ep->close_comp;
        ep->close_comp = NULL;
        fy_completion_update(comp, ep->error);
    }
    if (ep->params.error_cb != NULL)
        ep->params.error_cb(ep->params.error_arg, ep, ep->error);
    if (ep->accepted)
        ep_free(ep);
}

void fy_ep_fail(ferry_ep_t *ep, ferry_status_t status)
{
    if (ep->state == FY_EP_CLOSED || ep->state == FY_EP_FAILED)
        return;
    fy_count_status(&ep->counters, status);
    if (status != FERRY_ERR_ENDPOINT_CLOSED)
        ep->counters.connections_lost++;
    ep->state = status == FERRY_ERR_ENDPOINT_CLOSED ? FY_EP_CLOSED : FY_EP_FAILED;
    ep->error = status;
    if (status == FERRY_ERR_ENDPOINT_CLOSED)
        fy_info("endpoint %p (%s): closed by the peer", (void *)ep, ep->tl->name);
    else /* the transport that detected the failure logged it */
        fy_debug("endpoint %p (%s) failed: %s", (void *)ep, ep->tl->name,
                 ferry_status_string(status));
    ep_stop_modules(ep, status);
    if (!ep->error_pending) {
        ep->error_pending = 1;
        fy_worker_defer(ep->worker, &ep->error_deferred);
    }
}

static void ep_close_deferred_cb(fy_deferred_t *self)
{
    ferry_ep_t *ep = fy_container_of(self, ferry_ep_t, close_deferred);
    ferry_completion_t *comp = ep->close_comp;
    ep->close_comp = NULL;
    fy_completion_update(comp, FERRY_OK);
    if (ep->accepted)
        ep_free(ep);
}

void fy_ep_terminated(ferry_ep_t *ep)
{
    if (ep->state != FY_EP_CLOSING)
        return;
    ep->state = FY_EP_CLOSED;
    ep->error = FERRY_ERR_ENDPOINT_CLOSED;
    ep_stop_modules(ep, FERRY_ERR_ENDPOINT_CLOSED); /* no reply can come any more */
    /* The close completes from the deferred queue, behind the completions of the sends it
     * waited for (the transport queued those first), so that a close callback can free what
     * the sends' callbacks use. */
    fy_worker_defer(ep->worker, &ep->close_deferred);
}

static inline ferry_status_t locked_ep_close(ferry_ep_t *ep, unsigned flags,
                                             ferry_completion_t *comp)
{
    ferry_status_t status;

    if (ep == NULL || (flags & ~FERRY_EP_CLOSE_FORCE) != 0)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    if (ep->state == FY_EP_CLOSED || ep->state == FY_EP_FAILED)
        return FERRY_OK;
    if (ep->state == FY_EP_CLOSING && !(flags & FERRY_EP_CLOSE_FORCE))
        return FERRY_ERR_BUSY;
    if (!(flags & FERRY_EP_CLOSE_FORCE)) {
        status = ep->tl->ep_terminate(ep->tl_ep);
        if (status == FERRY_INPROGRESS) {
            ep->state = FY_EP_CLOSING;
            ep->error = FERRY_ERR_ENDPOINT_CLOSED;
            ep->close_comp = comp;
            return FERRY_INPROGRESS;
        }
    }
    if (ep->worker->in_progress > 0) {
        /* from a callback: the transport may be delivering for this endpoint right now */
        ep->tl_destroy_pending = 1;
        fy_worker_defer(ep->worker, &ep->tl_destroy_deferred);
    } else {
        ep_tl_destroy(ep);
    }
    ep->state = FY_EP_CLOSED;
    ep->error = FERRY_ERR_ENDPOINT_CLOSED;
    ep_stop_modules(ep, FERRY_ERR_CANCELED);
    if (ep->close_comp != NULL) {
        ferry_completion_t *pending = ep->close_comp;
        ep->close_comp = NULL;
        fy_completion_update(pending, FERRY_ERR_CANCELED);
    }
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_ep_close(ferry_ep_t *ep, unsigned flags, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_ep_close(ep, flags, comp);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_close(ep, flags, comp);
    fy_worker_unlock(locked);
    return status_or_value;
}

static void ep_free_deferred_cb(fy_deferred_t *self)
{
    ep_free(fy_container_of(self, ferry_ep_t, free_deferred));
}

static void ep_tl_destroy_deferred_cb(fy_deferred_t *self)
{
    ferry_ep_t *ep = fy_container_of(self, ferry_ep_t, tl_destroy_deferred);
    ep->tl_destroy_pending = 0;
    ep_tl_destroy(ep);
}

static inline void locked_ep_destroy(ferry_ep_t *ep)
{
    if (ep == NULL || ep->worker->destroying) /* the worker frees every endpoint */
        return;
    if (fy_ep_forked(ep))
        return; /* a forked child's copy: left alone (ferry.h, "fork()") */
    if (ep->accepted) {
        fy_warn("ferry_ep_destroy(%p): an endpoint the worker accepted is the worker's: close "
                "it with ferry_ep_close instead",
                (void *)ep);
        return;
    }
    if (ep->worker->in_progress > 0) {
        /* from a callback: the transport may be using the endpoint right now (delivering a
         * message for it, walking its queues); free it at the end of this progress call */
        if (!ep->free_pending) {
            ep->free_pending = 1;
            fy_worker_defer(ep->worker, &ep->free_deferred);
        }
        return;
    }
    ep_free(ep);
}

FERRY_EXPORT void ferry_ep_destroy(ferry_ep_t *ep)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL)) {
        locked_ep_destroy(ep);
        return;
    }
    fy_worker_lock(locked);
    locked_ep_destroy(ep);
    fy_worker_unlock(locked);
}

void fy_ep_connected(ferry_ep_t *ep)
{
    if (!ep->connected)
        ep->counters.connections_made++;
    ep->connected = 1;
}

static inline ferry_status_t locked_ep_peer_id(const ferry_ep_t *ep, ferry_peer_id_t *id_p)
{
    if (ep == NULL || id_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    *id_p = ep->peer.worker_uuid;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_ep_peer_id(const ferry_ep_t *ep, ferry_peer_id_t *id_p)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_ep_peer_id(ep, id_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_peer_id(ep, id_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_ep_query(const ferry_ep_t *ep, ferry_ep_attr_t *attr)
{
    if (ep == NULL || attr == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    ferry_ep_attr_t a = {.peer = ep->peer.worker_uuid,
                         .transport = ep->tl->name,
                         .connected = ep->connected && ep->state == FY_EP_OPEN,
                         .status = ep->state == FY_EP_OPEN ? FERRY_OK : ep->error,
                         /* send_short takes these: sent, or queued as a copy, or refused */
                         .am_inject_max = ep->caps.max_short};
    for (size_t m = 0; m < fy_modules_count; m++) {
        if (fy_modules[m]->ep_query != NULL)
            fy_modules[m]->ep_query(ep, &a);
    }
    *attr = a;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_ep_query(const ferry_ep_t *ep, ferry_ep_attr_t *attr)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_ep_query(ep, attr);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_query(ep, attr);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_ep_wait_connected(ferry_ep_t *ep, int timeout_ms)
{
    if (ep == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : fy_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        if (ep->state != FY_EP_OPEN)
            return ep->error;
        if (ep->connected)
            return FERRY_OK;
        uint64_t now = fy_time_now_ns();
        if (now >= deadline)
            return FERRY_ERR_TIMED_OUT;
        int ms = deadline == UINT64_MAX ? -1 : (int)((deadline - now + 999999u) / 1000000u);
        ferry_status_t status = ferry_worker_wait(ep->worker, ms);
        if (status != FERRY_OK && status != FERRY_ERR_TIMED_OUT)
            return status;
    }
}

FERRY_EXPORT ferry_status_t ferry_ep_wait_connected(ferry_ep_t *ep, int timeout_ms)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_ep_wait_connected(ep, timeout_ms);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_wait_connected(ep, timeout_ms);
    fy_worker_unlock(locked);
    return status_or_value;
}

FERRY_EXPORT const char *ferry_ep_transport_name(const ferry_ep_t *ep)
{
    return ep != NULL && ep->tl != NULL ? ep->tl->name : "none";
}

void fy_ep_destroy_all(ferry_worker_t *worker)
{
    fy_list_link_t *link;
    while ((link = fy_list_pop_head(&worker->eps)) != NULL) {
        ferry_ep_t *ep = fy_list_entry(link, ferry_ep_t, link);
        fy_list_init(&ep->link);
        ep_free(ep);
    }
}
