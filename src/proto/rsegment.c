/* Named segments, importer side: connect (synchronous with a timeout, or asynchronous),
 * disconnect, maps (PIO), store barrier, notifications, LOST. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/time.h"
#include "proto/segment_int.h"
#include "wireup/ep.h"

/* One map: ptr as returned; view/view_length: a read-only second view of the pages (mremap),
 * or NULL for a pointer into the key's own mapping. */
typedef struct seg_map {
    fy_list_link_t link;
    void *ptr;
    void *view;
    size_t view_length;
} seg_map_t;

static void rseg_lose(ferry_rsegment_t *rseg, ferry_status_t status, int event)
{
    if (rseg->state == RSEG_CONNECTING) {
        rseg->state = RSEG_FAILED;
        rseg->status = status;
        if (rseg->async) {
            if (rseg->deadline_ns != 0) {
                rseg->deadline_ns = 0;
                fy_segment_worker_of(rseg->worker)->connecting--;
                seg_update_need(rseg->worker);
            }
            ferry_segment_event_t ev = {
                .type = FERRY_SEGMENT_EVENT_CONNECTED, .status = status, .ep = rseg->ep};
            seg_event_push(rseg->worker, NULL, rseg, &ev);
        }
    } else if (rseg->state == RSEG_CONNECTED) {
        rseg->state = RSEG_LOST;
        rseg->status = status;
        if (event) {
            ferry_segment_event_t ev = {
                .type = FERRY_SEGMENT_EVENT_LOST, .status = status, .ep = rseg->ep};
            seg_event_push(rseg->worker, NULL, rseg, &ev);
        }
    }
}

ferry_status_t rseg_check(ferry_rsegment_t *rseg)
{
    if (rseg->state == RSEG_CONNECTED && (rseg->ep == NULL || rseg->ep->state != FY_EP_OPEN))
        rseg_lose(rseg, rseg->ep == NULL ? FERRY_ERR_ENDPOINT_CLOSED : rseg->ep->error, 1);
    switch (rseg->state) {
    case RSEG_CONNECTED:
        return FERRY_OK;
    case RSEG_CONNECTING:
        return FERRY_ERR_NOT_AVAILABLE;
    default:
        return rseg->status;
    }
}

static void rseg_free(ferry_rsegment_t *rseg)
{
    ferry_worker_t *worker = rseg->worker;
    if (rseg->state == RSEG_CONNECTING && rseg->async && rseg->deadline_ns != 0) {
        fy_segment_worker_of(worker)->connecting--;
        seg_update_need(worker);
    }
    seg_events_purge(worker, NULL, rseg);
    fy_list_link_t *l;
    while ((l = fy_list_pop_head(&rseg->maps)) != NULL) {
        seg_map_t *map = fy_list_entry(l, seg_map_t, link);
        if (map->view != NULL)
            munmap(map->view, map->view_length);
        free(map);
    }
    ferry_rkey_release(rseg->rkey);
    fy_list_remove(&rseg->link);
    free(rseg);
}

static int rseg_not_connecting(void *arg)
{
    return ((ferry_rsegment_t *)arg)->state != RSEG_CONNECTING;
}

static inline ferry_status_t locked_rsegment_connect(ferry_ep_t *ep, uint32_t segment_id,
                                                     int timeout_ms, unsigned flags,
                                                     ferry_rsegment_cb_t callback, void *arg,
                                                     ferry_rsegment_t **rsegment_p)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    ferry_rsegment_t *rseg;
    ferry_worker_t *worker;
    ferry_status_t status;

    if (ep == NULL || rsegment_p == NULL || (flags & ~FERRY_RSEGMENT_CONNECT_ASYNC) != 0 ||
        segment_id == FERRY_SEGMENT_AUTO_ID)
        return FERRY_ERR_INVALID_PARAM;
    if (ep->state != FY_EP_OPEN)
        return ep->error;
    worker = ep->worker;
    rseg = calloc(1, sizeof(*rseg));
    if (rseg == NULL) {
        fy_error("calloc(%zu) for a remote segment failed", sizeof(*rseg));
        return FERRY_ERR_NO_MEMORY;
    }
    rseg->worker = worker;
    rseg->ep = ep;
    rseg->segment_id = segment_id;
    rseg->state = RSEG_CONNECTING;
    rseg->status = FERRY_INPROGRESS;
    rseg->request_id = ++fy_segment_worker_of(worker)->next_request_id;
    rseg->async = (flags & FERRY_RSEGMENT_CONNECT_ASYNC) != 0;
    rseg->cb = callback;
    rseg->arg = arg;
    fy_list_init(&rseg->maps);
    fy_list_init(&rseg->events);
    fy_list_push_tail(&fy_segment_worker_of(worker)->rsegments, &rseg->link);

    seg_wire_msg_t m = {
        .id = FY_AM_ID_SEG_CONNECT, .segment_id = segment_id, .request_id = rseg->request_id};
    status = seg_send(worker, ep, &m, NULL, 0, 1);
    if (status != FERRY_OK) {
        rseg->async = 0; /* no event for a connect that did not start */
        rseg_free(rseg);
        return status;
    }
    if (rseg->async) {
        if (timeout_ms >= 0) {
            rseg->deadline_ns = fy_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
            fy_segment_worker_of(worker)->connecting++;
            seg_update_need(worker);
        }
        *rsegment_p = rseg;
        return FERRY_INPROGRESS;
    }
    status = seg_wait_until(worker, timeout_ms, rseg_not_connecting, rseg);
    if (status == FERRY_OK && rseg->state == RSEG_CONNECTED) {
        *rsegment_p = rseg;
        return FERRY_OK;
    }
    if (status == FERRY_OK)
        status = rseg->status;
    else if (status == FERRY_ERR_TIMED_OUT)
        fy_debug("ferry_rsegment_connect: segment %u of pid %u did not answer within %d ms",
                 segment_id, ep->peer.pid, timeout_ms);
    rseg_free(rseg); /* a late reply finds no request and is answered with DISCONNECT */
    return status;
}

FERRY_EXPORT ferry_status_t ferry_rsegment_connect(ferry_ep_t *ep, uint32_t segment_id,
                                                   int timeout_ms, unsigned flags,
                                                   ferry_rsegment_cb_t callback, void *arg,
                                                   ferry_rsegment_t **rsegment_p)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_connect(ep, segment_id, timeout_ms, flags, callback, arg,
                                       rsegment_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_rsegment_connect(ep, segment_id, timeout_ms, flags, callback, arg, rsegment_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static fy_log_limit_t rseg_handle_reply_log_limit; /* a warning a peer can trigger */

ferry_status_t rseg_handle_reply(ferry_worker_t *worker, ferry_ep_t *ep, const seg_wire_msg_t *m)
{
    ferry_rsegment_t *rseg = NULL;
    ferry_status_t status = m->status;

    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->rsegments);
         l != fy_list_end(&fy_segment_worker_of(worker)->rsegments); l = l->next) {
        ferry_rsegment_t *r = fy_list_entry(l, ferry_rsegment_t, link);
        if (r->request_id == m->request_id && r->ep == ep && r->state == RSEG_CONNECTING) {
            rseg = r;
            break;
        }
    }
    seg_wire_msg_t bye = {.id = FY_AM_ID_SEG_DISCONNECT, .connection = m->connection};
    if (rseg == NULL) {
        /* a connect that timed out (or a stale or forged id): give the connection back */
        fy_debug("segments: REPLY for request %llu that no connect waits for",
                 (unsigned long long)m->request_id);
        if (status == FERRY_OK)
            seg_send(worker, ep, &bye, NULL, 0, 1);
        return FERRY_OK;
    }
    if (status == FERRY_OK) {
        status = ferry_rkey_unpack(ep, m->rkey, RKEY_PACKED_SIZE, &rseg->rkey);
        if (status == FERRY_OK && m->size > rseg->rkey->key.length) {
            fy_warn_limited(
                &rseg_handle_reply_log_limit,
                "ferry_rsegment_connect: pid %u announced segment %u of %llu bytes with "
                "a key of %llu bytes",
                ep->peer.pid, rseg->segment_id, (unsigned long long)m->size,
                (unsigned long long)rseg->rkey->key.length);
            status = FERRY_ERR_PROTOCOL;
        }
        if (status != FERRY_OK) {
            ferry_rkey_release(rseg->rkey);
            rseg->rkey = NULL;
            seg_send(worker, ep, &bye, NULL, 0, 1);
            if (status != FERRY_ERR_NO_MEMORY)
                status = FERRY_ERR_PROTOCOL;
        }
    }
    if (status != FERRY_OK) {
        rseg_lose(rseg, status, 1);
        return FERRY_OK;
    }
    rseg->connection = m->connection;
    rseg->size = m->size;
    rseg->state = RSEG_CONNECTED;
    rseg->status = FERRY_OK;
    if (rseg->async) {
        if (rseg->deadline_ns != 0) {
            rseg->deadline_ns = 0;
            fy_segment_worker_of(worker)->connecting--;
            seg_update_need(worker);
        }
        ferry_segment_event_t ev = {
            .type = FERRY_SEGMENT_EVENT_CONNECTED, .status = FERRY_OK, .ep = ep};
        seg_event_push(worker, NULL, rseg, &ev);
    }
    return FERRY_OK;
}

unsigned rseg_progress_timeouts(ferry_worker_t *worker)
{
    unsigned count = 0;
    uint64_t now = fy_time_now_ns();
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->rsegments);
         l != fy_list_end(&fy_segment_worker_of(worker)->rsegments); l = l->next) {
        ferry_rsegment_t *rseg = fy_list_entry(l, ferry_rsegment_t, link);
        if (rseg->state == RSEG_CONNECTING && rseg->deadline_ns != 0 && now >= rseg->deadline_ns) {
            rseg_lose(rseg, FERRY_ERR_TIMED_OUT, 1);
            count++;
        }
    }
    return count;
}

uint64_t rseg_next_deadline(ferry_worker_t *worker)
{
    uint64_t next = UINT64_MAX;
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->rsegments);
         l != fy_list_end(&fy_segment_worker_of(worker)->rsegments); l = l->next) {
        ferry_rsegment_t *rseg = fy_list_entry(l, ferry_rsegment_t, link);
        if (rseg->state == RSEG_CONNECTING && rseg->deadline_ns != 0 && rseg->deadline_ns < next)
            next = rseg->deadline_ns;
    }
    return next;
}

void rseg_ep_failed(ferry_worker_t *worker, ferry_ep_t *ep, ferry_status_t status)
{
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->rsegments);
         l != fy_list_end(&fy_segment_worker_of(worker)->rsegments); l = l->next) {
        ferry_rsegment_t *rseg = fy_list_entry(l, ferry_rsegment_t, link);
        if (rseg->ep == ep)
            rseg_lose(rseg, status, 1);
    }
}

void rseg_ep_freed(ferry_worker_t *worker, ferry_ep_t *ep)
{
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->rsegments);
         l != fy_list_end(&fy_segment_worker_of(worker)->rsegments); l = l->next) {
        ferry_rsegment_t *rseg = fy_list_entry(l, ferry_rsegment_t, link);
        if (rseg->ep == ep) {
            rseg_lose(rseg, FERRY_ERR_ENDPOINT_CLOSED, 0);
            rseg->ep = NULL;
            if (rseg->rkey != NULL)
                rseg->rkey->ep = NULL; /* never used again: maps keep their own pages */
        }
    }
}

void rseg_cleanup(ferry_worker_t *worker)
{
    fy_list_link_t *l;
    while ((l = fy_list_peek_head(&fy_segment_worker_of(worker)->rsegments)) != NULL)
        rseg_free(fy_list_entry(l, ferry_rsegment_t, link));
}

static inline size_t locked_rsegment_size(const ferry_rsegment_t *rsegment)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return 0;
    return rsegment == NULL || rsegment->rkey == NULL ? 0 : rsegment->size;
}

FERRY_EXPORT size_t ferry_rsegment_size(const ferry_rsegment_t *rsegment)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_size(rsegment);
    fy_worker_lock(locked);
    size_t status_or_value = locked_rsegment_size(rsegment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_rsegment_status(const ferry_rsegment_t *rsegment)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    if (rsegment == NULL)
        return FERRY_ERR_INVALID_PARAM;
    return rseg_check((ferry_rsegment_t *)rsegment) == FERRY_ERR_NOT_AVAILABLE &&
                   rsegment->state == RSEG_CONNECTING
               ? FERRY_INPROGRESS
               : rsegment->status;
}

FERRY_EXPORT ferry_status_t ferry_rsegment_status(const ferry_rsegment_t *rsegment)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_status(rsegment);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rsegment_status(rsegment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_rsegment_disconnect(ferry_rsegment_t *rsegment)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    if (rsegment == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (!fy_list_is_empty(&rsegment->maps) || rsegment->dma_queues > 0) {
        fy_debug("ferry_rsegment_disconnect: segment %u still has %zu maps and %u DMA queues",
                 rsegment->segment_id, fy_list_length(&rsegment->maps), rsegment->dma_queues);
        return FERRY_ERR_BUSY;
    }
    if (rseg_check(rsegment) == FERRY_OK) {
        seg_wire_msg_t m = {.id = FY_AM_ID_SEG_DISCONNECT, .connection = rsegment->connection};
        ferry_status_t status = seg_send(rsegment->worker, rsegment->ep, &m, NULL, 0, 1);
        if (status == FERRY_ERR_NO_RESOURCE || status == FERRY_ERR_NO_MEMORY)
            return FERRY_ERR_NO_RESOURCE;
    }
    rseg_free(rsegment);
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_rsegment_disconnect(ferry_rsegment_t *rsegment)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_disconnect(rsegment);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rsegment_disconnect(rsegment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_rsegment_map(ferry_rsegment_t *rsegment, uint64_t offset,
                                                 size_t size, unsigned flags, void **ptr_p)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    void *ptr;

    if (rsegment == NULL || ptr_p == NULL || size == 0 ||
        (flags & ~FERRY_RSEGMENT_MAP_READONLY) != 0)
        return FERRY_ERR_INVALID_PARAM;
    ferry_status_t status = rseg_check(rsegment);
    if (status != FERRY_OK)
        return status;
    if (!mem_range_ok(rsegment->size, offset, size)) {
        fy_debug("ferry_rsegment_map: [%llu, +%zu) is outside segment %u of %llu bytes",
                 (unsigned long long)offset, size, rsegment->segment_id,
                 (unsigned long long)rsegment->size);
        return FERRY_ERR_OUT_OF_RANGE;
    }
    status = ferry_rkey_ptr(rsegment->rkey, offset, &ptr);
    if (status != FERRY_OK)
        return status == FERRY_ERR_ACCESS ? FERRY_ERR_OUT_OF_RANGE : status;
    if (!mem_range_ok(rsegment->rkey->mapped_length, offset, size))
        return FERRY_ERR_OUT_OF_RANGE;
    int readonly = (flags & FERRY_RSEGMENT_MAP_READONLY) != 0;
    if (!readonly && !(rsegment->rkey->key.access & FERRY_ACCESS_REMOTE_WRITE))
        return FERRY_ERR_ACCESS;
    seg_map_t *map = calloc(1, sizeof(*map));
    if (map == NULL) {
        fy_error("calloc(%zu) for a segment map failed", sizeof(*map));
        return FERRY_ERR_NO_MEMORY;
    }
    map->ptr = ptr;
    if (readonly) {
        /* A second view of the same shared pages (mremap of old size 0), made read-only. */
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        uintptr_t base = (uintptr_t)ptr & ~(uintptr_t)(page - 1);
        size_t length = ((uintptr_t)ptr - base + size + page - 1) & ~(page - 1);
        void *view = mremap((void *)base, 0, length, MREMAP_MAYMOVE);
        if (view == MAP_FAILED) {
            fy_error("mremap(%p, 0, %zu, MREMAP_MAYMOVE) for a read-only map of segment %u "
                     "failed: %s",
                     (void *)base, length, rsegment->segment_id, strerror(errno));
            free(map);
            return FERRY_ERR_SHMEM;
        }
        if (mprotect(view, length, PROT_READ) != 0) {
            fy_error("mprotect(%p, %zu, PROT_READ) for a read-only map of segment %u "
                     "failed: %s",
                     view, length, rsegment->segment_id, strerror(errno));
            munmap(view, length);
            free(map);
            return FERRY_ERR_SHMEM;
        }
        map->view = view;
        map->view_length = length;
        map->ptr = (char *)view + ((uintptr_t)ptr - base);
    }
    fy_list_push_tail(&rsegment->maps, &map->link);
    *ptr_p = map->ptr;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_rsegment_map(ferry_rsegment_t *rsegment, uint64_t offset,
                                               size_t size, unsigned flags, void **ptr_p)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_map(rsegment, offset, size, flags, ptr_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rsegment_map(rsegment, offset, size, flags, ptr_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_rsegment_unmap(ferry_rsegment_t *rsegment, void *ptr)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    if (rsegment == NULL || ptr == NULL)
        return FERRY_ERR_INVALID_PARAM;
    for (fy_list_link_t *l = fy_list_first(&rsegment->maps); l != fy_list_end(&rsegment->maps);
         l = l->next) {
        seg_map_t *map = fy_list_entry(l, seg_map_t, link);
        if (map->ptr == ptr) {
            fy_list_remove(&map->link);
            if (map->view != NULL)
                munmap(map->view, map->view_length);
            free(map);
            return FERRY_OK;
        }
    }
    return FERRY_ERR_NO_ELEM;
}

FERRY_EXPORT ferry_status_t ferry_rsegment_unmap(ferry_rsegment_t *rsegment, void *ptr)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_unmap(rsegment, ptr);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rsegment_unmap(rsegment, ptr);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_rsegment_store_barrier(ferry_rsegment_t *rsegment)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    if (rsegment == NULL)
        return FERRY_ERR_INVALID_PARAM;
    atomic_thread_fence(memory_order_seq_cst);
    return rseg_check(rsegment);
}

FERRY_EXPORT ferry_status_t ferry_rsegment_store_barrier(ferry_rsegment_t *rsegment)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_store_barrier(rsegment);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rsegment_store_barrier(rsegment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_rsegment_notify(ferry_rsegment_t *rsegment, const void *data,
                                                    size_t length)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    if (rsegment == NULL || length > FERRY_SEGMENT_NOTIFY_MAX || (data == NULL && length > 0))
        return FERRY_ERR_INVALID_PARAM;
    ferry_status_t status = rseg_check(rsegment);
    if (status != FERRY_OK)
        return status;
    seg_wire_msg_t m = {.id = FY_AM_ID_SEG_NOTIFY, .connection = rsegment->connection};
    return seg_send(rsegment->worker, rsegment->ep, &m, data, length, 0);
}

FERRY_EXPORT ferry_status_t ferry_rsegment_notify(ferry_rsegment_t *rsegment, const void *data,
                                                  size_t length)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_notify(rsegment, data, length);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rsegment_notify(rsegment, data, length);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_rsegment_wait_event(ferry_rsegment_t *rsegment, int timeout_ms,
                                                        ferry_segment_event_t *event_p)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    if (rsegment == NULL || event_p == NULL || rsegment->cb != NULL)
        return FERRY_ERR_INVALID_PARAM;
    rseg_check(rsegment);
    return seg_event_wait(rsegment->worker, &rsegment->events, timeout_ms, event_p);
}

FERRY_EXPORT ferry_status_t ferry_rsegment_wait_event(ferry_rsegment_t *rsegment, int timeout_ms,
                                                      ferry_segment_event_t *event_p)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rsegment_wait_event(rsegment, timeout_ms, event_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rsegment_wait_event(rsegment, timeout_ms, event_p);
    fy_worker_unlock(locked);
    return status_or_value;
}
