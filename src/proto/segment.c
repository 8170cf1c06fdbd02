/* Named segments, owner side: create, prepare, available/unavailable, remove, release; the
 * CONNECT, DISCONNECT and NOTIFY handlers; and what the three segment files share: events,
 * control messages that wait for room, waiting with a timeout, the worker and endpoint hooks. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/time.h"
#include "proto/am.h"
#include "proto/segment_int.h"
#include "wireup/ep.h"

/* A control message that found no room, resent from progress in order. */
typedef struct seg_unsent {
    fy_list_link_t link;
    ferry_ep_t *ep;
    unsigned id;
    size_t header_length;
    uint8_t header[SEG_WIRE_MAX_SIZE];
    size_t length;
    uint8_t payload[FERRY_SEGMENT_NOTIFY_MAX];
} seg_unsent_t;

/* ------------------------------------------------------------------ shared helpers */

static fy_log_limit_t seg_drop_log_limit; /* a warning a peer can trigger */

void seg_drop(ferry_worker_t *worker, const char *what, const char *reason)
{
    if (fy_segment_worker_of(worker)->warned++ < 8)
        fy_warn_limited(&seg_drop_log_limit, "segments: dropped a %s message: %s", what, reason);
    else
        fy_debug("segments: dropped a %s message: %s", what, reason);
}

void seg_update_need(ferry_worker_t *worker)
{
    fy_segment_worker_t *sw = fy_segment_worker_of(worker);
    sw->need_progress = (unsigned)!fy_list_is_empty(&sw->unsent) + sw->connecting +
                        (unsigned)!fy_list_is_empty(&sw->dma_active);
    fy_worker_module_progress_set(worker, FY_MODULE_SEGMENT, sw->need_progress > 0);
}

static void seg_event_deferred_cb(fy_deferred_t *self)
{
    seg_event_t *e = fy_container_of(self, seg_event_t, deferred);
    fy_list_remove(&e->link);
    if (e->seg != NULL && e->seg->cb != NULL && !e->seg->released)
        e->seg->cb(e->seg->arg, e->seg, &e->ev);
    else if (e->rseg != NULL && e->rseg->cb != NULL)
        e->rseg->cb(e->rseg->arg, e->rseg, &e->ev);
    free(e);
}

void seg_event_push(ferry_worker_t *worker, ferry_segment_t *seg, ferry_rsegment_t *rseg,
                    const ferry_segment_event_t *ev)
{
    if (seg != NULL && seg->released)
        return; /* no handle: no more events */
    seg_event_t *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        fy_error("calloc(%zu) for a segment event (type %d) failed: the event is lost", sizeof(*e),
                 (int)ev->type);
        return;
    }
    e->seg = seg;
    e->rseg = rseg;
    e->ev = *ev;
    e->deferred.cb = seg_event_deferred_cb;
    fy_list_init(&e->deferred.link);
    if ((seg != NULL && seg->cb != NULL) || (rseg != NULL && rseg->cb != NULL)) {
        fy_list_push_tail(&fy_segment_worker_of(worker)->events, &e->link);
        fy_worker_defer(worker, &e->deferred);
    } else {
        fy_list_push_tail(seg != NULL ? &seg->events : &rseg->events, &e->link);
    }
}

void seg_events_purge(ferry_worker_t *worker, ferry_segment_t *seg, ferry_rsegment_t *rseg)
{
    fy_list_t *lists[2] = {&fy_segment_worker_of(worker)->events,
                           seg != NULL ? &seg->events : &rseg->events};
    for (unsigned i = 0; i < 2; i++) {
        for (fy_list_link_t *l = fy_list_first(lists[i]), *next; l != fy_list_end(lists[i]);
             l = next) {
            next = l->next;
            seg_event_t *e = fy_list_entry(l, seg_event_t, link);
            if ((seg != NULL && e->seg == seg) || (rseg != NULL && e->rseg == rseg)) {
                fy_list_remove(&e->link);
                if (fy_list_is_linked(&e->deferred.link))
                    fy_worker_undefer(worker, &e->deferred);
                free(e);
            }
        }
    }
}

ferry_status_t seg_wait_until(ferry_worker_t *worker, int timeout_ms, seg_cond_fn_t cond, void *arg)
{
    uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : fy_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        if (cond(arg))
            return FERRY_OK;
        uint64_t now = fy_time_now_ns();
        if (now >= deadline) {
            ferry_worker_progress(worker); /* a timeout of 0 still looks once */
            return cond(arg) ? FERRY_OK : FERRY_ERR_TIMED_OUT;
        }
        uint64_t wake = deadline;
        if (fy_segment_worker_of(worker)->connecting >
            0) { /* an asynchronous connect times out before */
            uint64_t next = rseg_next_deadline(worker);
            if (next < wake)
                wake = next > now ? next : now + 1;
        }
        int ms = wake == UINT64_MAX ? -1 : (int)((wake - now + 999999u) / 1000000u);
        ferry_status_t status = ferry_worker_wait(worker, ms);
        if (status == FERRY_ERR_IO)
            return status;
    }
}

static int seg_events_ready(void *arg)
{
    return !fy_list_is_empty((fy_list_t *)arg);
}

ferry_status_t seg_event_wait(ferry_worker_t *worker, fy_list_t *events, int timeout_ms,
                              ferry_segment_event_t *event_p)
{
    ferry_status_t status = seg_wait_until(worker, timeout_ms, seg_events_ready, events);
    if (status != FERRY_OK)
        return status;
    seg_event_t *e = fy_list_entry(fy_list_pop_head(events), seg_event_t, link);
    *event_p = e->ev;
    free(e);
    return FERRY_OK;
}

static ferry_status_t seg_send_now(ferry_ep_t *ep, unsigned id, const uint8_t *header,
                                   size_t header_length, const void *payload, size_t length)
{
    ferry_iov_t iov = {.buffer = (void *)payload, .length = length};
    return fy_am_send_internal(ep, id, header, header_length, &iov, length > 0 ? 1 : 0, NULL);
}

static int seg_unsent_for(ferry_worker_t *worker, ferry_ep_t *ep)
{
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->unsent);
         l != fy_list_end(&fy_segment_worker_of(worker)->unsent); l = l->next) {
        if (fy_list_entry(l, seg_unsent_t, link)->ep == ep)
            return 1;
    }
    return 0;
}

ferry_status_t seg_send(ferry_worker_t *worker, ferry_ep_t *ep, const seg_wire_msg_t *m,
                        const void *payload, size_t length, int queue)
{
    uint8_t header[SEG_WIRE_MAX_SIZE];
    size_t header_length = seg_wire_encode(m, header);
    ferry_status_t status = FERRY_ERR_NO_RESOURCE;

    if (ep->state != FY_EP_OPEN)
        return ep->error;
    if (!seg_unsent_for(worker, ep)) /* keep the order of messages to one peer */
        status = seg_send_now(ep, m->id, header, header_length, payload, length);
    if (status != FERRY_ERR_NO_RESOURCE)
        return status == FERRY_INPROGRESS ? FERRY_OK : status;
    if (!queue)
        return FERRY_ERR_NO_RESOURCE;
    seg_unsent_t *u = calloc(1, sizeof(*u));
    if (u == NULL) {
        fy_error("calloc(%zu) for a queued segment message failed", sizeof(*u));
        return FERRY_ERR_NO_MEMORY;
    }
    u->ep = ep;
    u->id = m->id;
    u->header_length = header_length;
    memcpy(u->header, header, header_length);
    u->length = length;
    if (length > 0)
        memcpy(u->payload, payload, length);
    fy_list_push_tail(&fy_segment_worker_of(worker)->unsent, &u->link);
    seg_update_need(worker);
    return FERRY_OK;
}

static unsigned seg_resend(ferry_worker_t *worker)
{
    unsigned count = 0;
    fy_list_link_t *l;
    while ((l = fy_list_pop_head(&fy_segment_worker_of(worker)->unsent)) != NULL) {
        seg_unsent_t *u = fy_list_entry(l, seg_unsent_t, link);
        ferry_status_t status =
            seg_send_now(u->ep, u->id, u->header, u->header_length, u->payload, u->length);
        if (status == FERRY_ERR_NO_RESOURCE) {
            fy_list_push_head(&fy_segment_worker_of(worker)->unsent, &u->link);
            count++; /* still work to do: keep a waiting worker spinning */
            break;
        }
        if (status < 0)
            fy_debug("segments: a queued message to endpoint %p failed: %s", (void *)u->ep,
                     ferry_status_string(status));
        free(u);
        count++;
    }
    seg_update_need(worker);
    return count;
}

static void seg_unsent_purge(ferry_worker_t *worker, ferry_ep_t *ep)
{
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->unsent), *next;
         l != fy_list_end(&fy_segment_worker_of(worker)->unsent); l = next) {
        next = l->next;
        seg_unsent_t *u = fy_list_entry(l, seg_unsent_t, link);
        if (ep == NULL || u->ep == ep) {
            fy_list_remove(&u->link);
            free(u);
        }
    }
    seg_update_need(worker);
}

/* ------------------------------------------------------------------ local segments */

static ferry_segment_t *seg_find(ferry_worker_t *worker, uint32_t id)
{
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->segments);
         l != fy_list_end(&fy_segment_worker_of(worker)->segments); l = l->next) {
        ferry_segment_t *seg = fy_list_entry(l, ferry_segment_t, link);
        if (!seg->removed && seg->id == id)
            return seg;
    }
    return NULL;
}

/* Release the memory once removed and unconnected; free the struct once released too. */
static void seg_maybe_free(ferry_segment_t *seg)
{
    if (seg->connections > 0 || !seg->removed)
        return;
    if (seg->mem != NULL) {
        ferry_mem_deregister(seg->mem);
        seg->mem = NULL;
        seg->ptr = NULL;
    }
    if (seg->released) {
        seg_events_purge(seg->worker, seg, NULL);
        fy_list_remove(&seg->link);
        free(seg);
    }
}

static ferry_status_t seg_create(ferry_worker_t *worker, uint32_t segment_id, ferry_mem_t *mem,
                                 size_t size, unsigned flags, ferry_segment_cb_t callback,
                                 void *arg, ferry_segment_t **segment_p)
{
    ferry_segment_t *seg;
    ferry_status_t status;

    if (worker == NULL || segment_p == NULL || flags != 0)
        return FERRY_ERR_INVALID_PARAM;
    if (segment_id == FERRY_SEGMENT_AUTO_ID) {
        for (uint64_t id = FERRY_SEGMENT_AUTO_ID_BASE;; id++) {
            if (id >= FERRY_SEGMENT_AUTO_ID) {
                fy_warn("ferry_segment_create: no automatic segment id is left on worker %p",
                        (void *)worker);
                return FERRY_ERR_LIMIT;
            }
            if (seg_find(worker, (uint32_t)id) == NULL) {
                segment_id = (uint32_t)id;
                break;
            }
        }
    } else if (seg_find(worker, segment_id) != NULL) {
        fy_debug("ferry_segment_create: segment id %u already exists on worker %p", segment_id,
                 (void *)worker);
        return FERRY_ERR_ALREADY_EXISTS;
    }
    seg = calloc(1, sizeof(*seg));
    if (seg == NULL) {
        fy_error("calloc(%zu) for a segment failed", sizeof(*seg));
        return FERRY_ERR_NO_MEMORY;
    }
    if (mem == NULL) {
        status = ferry_mem_alloc(worker->context, size, FERRY_ACCESS_ALL, &seg->mem, &seg->ptr);
        if (status != FERRY_OK)
            goto err_free_seg;
        seg->size = size;
    } else {
        mem->refcount++; /* ours, dropped by ferry_mem_deregister when the memory is released */
        seg->mem = mem;
        seg->ptr = mem->iovcnt == 1 ? mem->iov[0].buffer : NULL;
        seg->size = mem->length;
    }
    seg->worker = worker;
    seg->id = segment_id;
    seg->state = SEG_NOT_PREPARED;
    seg->cb = callback;
    seg->arg = arg;
    fy_list_init(&seg->events);
    fy_list_push_tail(&fy_segment_worker_of(worker)->segments, &seg->link);
    *segment_p = seg;
    return FERRY_OK;

err_free_seg:
    free(seg);
    return status;
}

static inline ferry_status_t locked_segment_create(ferry_worker_t *worker, uint32_t segment_id,
                                                   size_t size, unsigned flags,
                                                   ferry_segment_cb_t callback, void *arg,
                                                   ferry_segment_t **segment_p)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (size == 0)
        return FERRY_ERR_INVALID_PARAM;
    return seg_create(worker, segment_id, NULL, size, flags, callback, arg, segment_p);
}

FERRY_EXPORT ferry_status_t ferry_segment_create(ferry_worker_t *worker, uint32_t segment_id,
                                                 size_t size, unsigned flags,
                                                 ferry_segment_cb_t callback, void *arg,
                                                 ferry_segment_t **segment_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_segment_create(worker, segment_id, size, flags, callback, arg, segment_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_segment_create(worker, segment_id, size, flags, callback, arg, segment_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_segment_create_from_mem(ferry_worker_t *worker,
                                                            uint32_t segment_id, ferry_mem_t *mem,
                                                            unsigned flags,
                                                            ferry_segment_cb_t callback, void *arg,
                                                            ferry_segment_t **segment_p)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (mem == NULL || mem->refcount == 0 || mem->length == 0 ||
        (mem->flags & FERRY_MEM_SINGLE_USE)) {
        fy_warn("ferry_segment_create_from_mem: the registration %p is %s", (void *)mem,
                mem == NULL                              ? "NULL"
                : mem->refcount == 0 || mem->length == 0 ? "deregistered or empty"
                                                         : "single use");
        return FERRY_ERR_INVALID_PARAM;
    }
    return seg_create(worker, segment_id, mem, 0, flags, callback, arg, segment_p);
}

FERRY_EXPORT ferry_status_t ferry_segment_create_from_mem(ferry_worker_t *worker,
                                                          uint32_t segment_id, ferry_mem_t *mem,
                                                          unsigned flags,
                                                          ferry_segment_cb_t callback, void *arg,
                                                          ferry_segment_t **segment_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_segment_create_from_mem(worker, segment_id, mem, flags, callback, arg,
                                              segment_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_segment_create_from_mem(worker, segment_id, mem, flags, callback, arg, segment_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_segment_prepare(ferry_segment_t *segment, unsigned flags)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return FERRY_ERR_FORKED;
    void *buffer;
    size_t length;

    if (segment == NULL || flags != 0)
        return FERRY_ERR_INVALID_PARAM;
    if (segment->removed)
        return FERRY_ERR_REMOVED;
    if (segment->state != SEG_NOT_PREPARED)
        return FERRY_ERR_ILLEGAL_STATE;
    ferry_status_t status = ferry_rkey_pack(segment->mem, &buffer, &length);
    if (status != FERRY_OK)
        return status;
    memcpy(segment->key, buffer, RKEY_PACKED_SIZE);
    ferry_rkey_buffer_release(buffer);
    segment->state = SEG_PREPARED;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_segment_prepare(ferry_segment_t *segment, unsigned flags)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_segment_prepare(segment, flags);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_segment_prepare(segment, flags);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* What ferry_segment_set_available, _set_unavailable and _remove do to a segment. */
typedef enum {
    SEG_TO_AVAILABLE,   /* from prepared or unavailable */
    SEG_TO_UNAVAILABLE, /* from available */
    SEG_TO_REMOVED,     /* from any state */
} seg_change_t;

/* Applies change to segment; the caller holds the worker's lock in multi-thread mode. */
static ferry_status_t locked_segment_change(ferry_segment_t *segment, seg_change_t change)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return FERRY_ERR_FORKED;
    if (segment == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (segment->removed)
        return FERRY_ERR_REMOVED;
    switch (change) {
    case SEG_TO_AVAILABLE:
        if (segment->state != SEG_PREPARED && segment->state != SEG_UNAVAILABLE)
            return FERRY_ERR_ILLEGAL_STATE;
        segment->state = SEG_AVAILABLE;
        return FERRY_OK;
    case SEG_TO_UNAVAILABLE:
        if (segment->state != SEG_AVAILABLE)
            return FERRY_ERR_ILLEGAL_STATE;
        segment->state = SEG_UNAVAILABLE;
        return FERRY_OK;
    case SEG_TO_REMOVED:
        segment->removed = 1;
        seg_maybe_free(segment);
        return FERRY_OK;
    }
    return FERRY_ERR_INVALID_PARAM;
}

/* The entry of the three calls below: takes the worker's lock in multi-thread mode. */
static ferry_status_t segment_change_entry(ferry_segment_t *segment, seg_change_t change)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_segment_change(segment, change);
    fy_worker_lock(locked);
    ferry_status_t status = locked_segment_change(segment, change);
    fy_worker_unlock(locked);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_segment_set_available(ferry_segment_t *segment)
{
    return segment_change_entry(segment, SEG_TO_AVAILABLE);
}

FERRY_EXPORT ferry_status_t ferry_segment_set_unavailable(ferry_segment_t *segment)
{
    return segment_change_entry(segment, SEG_TO_UNAVAILABLE);
}

FERRY_EXPORT ferry_status_t ferry_segment_remove(ferry_segment_t *segment)
{
    return segment_change_entry(segment, SEG_TO_REMOVED);
}

static inline void locked_segment_release(ferry_segment_t *segment)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return; /* a forked child's copy: left alone (ferry.h, "fork()") */
    if (segment == NULL || segment->released)
        return;
    segment->released = 1;
    segment->removed = 1;
    seg_events_purge(segment->worker, segment, NULL);
    seg_maybe_free(segment);
}

FERRY_EXPORT void ferry_segment_release(ferry_segment_t *segment)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL)) {
        locked_segment_release(segment);
        return;
    }
    fy_worker_lock(locked);
    locked_segment_release(segment);
    fy_worker_unlock(locked);
}

static inline void *locked_segment_ptr(const ferry_segment_t *segment)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return NULL;
    return segment == NULL || segment->removed ? NULL : segment->ptr;
}

FERRY_EXPORT void *ferry_segment_ptr(const ferry_segment_t *segment)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_segment_ptr(segment);
    fy_worker_lock(locked);
    void *status_or_value = locked_segment_ptr(segment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline size_t locked_segment_size(const ferry_segment_t *segment)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return 0;
    return segment == NULL || segment->removed ? 0 : segment->size;
}

FERRY_EXPORT size_t ferry_segment_size(const ferry_segment_t *segment)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_segment_size(segment);
    fy_worker_lock(locked);
    size_t status_or_value = locked_segment_size(segment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline uint32_t locked_segment_id(const ferry_segment_t *segment)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return 0;
    return segment == NULL ? FERRY_SEGMENT_AUTO_ID : segment->id;
}

FERRY_EXPORT uint32_t ferry_segment_id(const ferry_segment_t *segment)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_segment_id(segment);
    fy_worker_lock(locked);
    uint32_t status_or_value = locked_segment_id(segment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline unsigned locked_segment_connections(const ferry_segment_t *segment)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return 0;
    return segment == NULL ? 0 : segment->connections;
}

FERRY_EXPORT unsigned ferry_segment_connections(const ferry_segment_t *segment)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_segment_connections(segment);
    fy_worker_lock(locked);
    unsigned status_or_value = locked_segment_connections(segment);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_segment_wait_event(ferry_segment_t *segment, int timeout_ms,
                                                       ferry_segment_event_t *event_p)
{
    if (segment != NULL && fy_worker_forked(segment->worker))
        return FERRY_ERR_FORKED;
    if (segment == NULL || event_p == NULL || segment->cb != NULL || segment->released)
        return FERRY_ERR_INVALID_PARAM;
    return seg_event_wait(segment->worker, &segment->events, timeout_ms, event_p);
}

FERRY_EXPORT ferry_status_t ferry_segment_wait_event(ferry_segment_t *segment, int timeout_ms,
                                                     ferry_segment_event_t *event_p)
{
    ferry_worker_t *locked = fy_worker_multi(segment != NULL ? segment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_segment_wait_event(segment, timeout_ms, event_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_segment_wait_event(segment, timeout_ms, event_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* ------------------------------------------------------------------ owner-side handlers */

static seg_conn_t *seg_conn_find(ferry_worker_t *worker, ferry_ep_t *ep, uint64_t id)
{
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->conns);
         l != fy_list_end(&fy_segment_worker_of(worker)->conns); l = l->next) {
        seg_conn_t *conn = fy_list_entry(l, seg_conn_t, link);
        if (conn->ep == ep && conn->id == id)
            return conn;
    }
    return NULL;
}

/* Remove a connection; event: DISCONNECT with status (or none when event is 0). */
static void seg_conn_end(ferry_worker_t *worker, seg_conn_t *conn, ferry_status_t status, int event)
{
    ferry_segment_t *seg = conn->seg;
    if (event) {
        ferry_segment_event_t ev = {.type = FERRY_SEGMENT_EVENT_DISCONNECT,
                                    .status = status,
                                    .ep = conn->ep,
                                    .connection = conn->id};
        seg_event_push(worker, seg, NULL, &ev);
    }
    fy_list_remove(&conn->link);
    free(conn);
    seg->connections--;
    seg_maybe_free(seg);
}

static fy_log_limit_t seg_handle_connect_log_limit; /* a warning a peer can trigger */

static void seg_handle_connect(ferry_worker_t *worker, ferry_ep_t *ep, const seg_wire_msg_t *m)
{
    seg_wire_msg_t reply = {.id = FY_AM_ID_SEG_REPLY, .request_id = m->request_id};
    ferry_segment_t *seg = seg_find(worker, m->segment_id);
    seg_conn_t *conn = NULL;

    if (m->flags != 0) {
        fy_warn_limited(&seg_handle_connect_log_limit,
                        "segments: a peer (endpoint %p) asks for segment %u with flags 0x%x this "
                        "version does not know: refused",
                        (void *)ep, m->segment_id, m->flags);
        reply.status = FERRY_ERR_CONNECTION_REFUSED;
    } else if (seg == NULL) {
        reply.status = FERRY_ERR_NO_ELEM;
    } else if (seg->state != SEG_AVAILABLE) {
        reply.status = FERRY_ERR_NOT_AVAILABLE;
    } else if ((conn = calloc(1, sizeof(*conn))) == NULL) {
        fy_error("calloc(%zu) for a connection to segment %u failed: connect refused",
                 sizeof(*conn), seg->id);
        reply.status = FERRY_ERR_CONNECTION_REFUSED;
    } else {
        reply.status = FERRY_OK;
        reply.connection = ++fy_segment_worker_of(worker)->next_connection_id;
        reply.size = seg->size;
        memcpy(reply.rkey, seg->key, RKEY_PACKED_SIZE);
    }
    ferry_status_t status = seg_send(worker, ep, &reply, NULL, 0, 1);
    if (conn == NULL)
        return;
    if (status != FERRY_OK) {
        free(conn); /* the endpoint failed: its hook runs (or ran) without this connection */
        return;
    }
    conn->seg = seg;
    conn->ep = ep;
    conn->id = reply.connection;
    fy_list_push_tail(&fy_segment_worker_of(worker)->conns, &conn->link);
    seg->connections++;
    ferry_segment_event_t ev = {
        .type = FERRY_SEGMENT_EVENT_CONNECT, .status = FERRY_OK, .ep = ep, .connection = conn->id};
    seg_event_push(worker, seg, NULL, &ev);
}

static ferry_status_t seg_am_handler(void *arg, const void *header, size_t header_length,
                                     void *data, size_t length,
                                     const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = params->reply_ep->worker;
    unsigned id = (unsigned)(uintptr_t)arg;
    static const char *const names[] = {"CONNECT", "REPLY", "DISCONNECT", "NOTIFY"};
    const char *name = names[id - FY_AM_ID_SEG_CONNECT];
    const char *reason = NULL;
    seg_wire_msg_t m;
    seg_conn_t *conn;

    if (seg_wire_decode(id, header, header_length, length, &m, &reason) != FERRY_OK) {
        seg_drop(worker, name, reason);
        return FERRY_OK;
    }
    switch (id) {
    case FY_AM_ID_SEG_CONNECT:
        seg_handle_connect(worker, params->reply_ep, &m);
        break;
    case FY_AM_ID_SEG_REPLY:
        rseg_handle_reply(worker, params->reply_ep, &m);
        break;
    case FY_AM_ID_SEG_DISCONNECT:
        conn = seg_conn_find(worker, params->reply_ep, m.connection);
        if (conn == NULL)
            seg_drop(worker, name, "unknown connection");
        else
            seg_conn_end(worker, conn, FERRY_OK, 1);
        break;
    case FY_AM_ID_SEG_NOTIFY:
        conn = seg_conn_find(worker, params->reply_ep, m.connection);
        if (conn == NULL) {
            seg_drop(worker, name, "unknown connection");
        } else {
            ferry_segment_event_t ev = {.type = FERRY_SEGMENT_EVENT_NOTIFY,
                                        .status = FERRY_OK,
                                        .ep = conn->ep,
                                        .connection = conn->id,
                                        .length = length};
            if (length > 0)
                memcpy(ev.data, data, length);
            seg_event_push(worker, conn->seg, NULL, &ev);
        }
        break;
    default:
        break;
    }
    return FERRY_OK;
}

/* ------------------------------------------------------------------ worker and endpoint hooks */

static ferry_status_t seg_module_init(ferry_worker_t *worker, void **state_p)
{
    fy_segment_worker_t *sw = calloc(1, sizeof(*sw));
    if (sw == NULL) {
        fy_error("calloc(%zu) for the named segments of a worker failed", sizeof(*sw));
        return FERRY_ERR_NO_MEMORY;
    }
    *state_p = sw; /* before the calls below, which reach it */
    fy_list_init(&sw->segments);
    fy_list_init(&sw->conns);
    fy_list_init(&sw->rsegments);
    fy_list_init(&sw->events);
    fy_list_init(&sw->unsent);
    fy_list_init(&sw->dma_active);
    fy_list_init(&sw->dma_queues);
    for (unsigned id = FY_AM_ID_SEG_CONNECT; id <= FY_AM_ID_SEG_NOTIFY; id++)
        fy_am_set_internal_handler(worker, id, seg_am_handler, (void *)(uintptr_t)id);
    seg_dma_worker_init(worker);
    return FERRY_OK;
}

static unsigned seg_module_progress(ferry_worker_t *worker)
{
    unsigned count = 0;
    if (!fy_list_is_empty(&fy_segment_worker_of(worker)->unsent))
        count += seg_resend(worker);
    if (!fy_list_is_empty(&fy_segment_worker_of(worker)->dma_active))
        count += seg_dma_progress(worker);
    if (fy_segment_worker_of(worker)->connecting > 0)
        count += rseg_progress_timeouts(worker);
    return count;
}

static void seg_ep_stop(ferry_ep_t *ep, ferry_status_t status)
{
    ferry_worker_t *worker = ep->worker;
    seg_unsent_purge(worker, ep);
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->conns), *next;
         l != fy_list_end(&fy_segment_worker_of(worker)->conns); l = next) {
        next = l->next;
        seg_conn_t *conn = fy_list_entry(l, seg_conn_t, link);
        if (conn->ep == ep)
            seg_conn_end(worker, conn, status, 1);
    }
    rseg_ep_failed(worker, ep, status);
}

static void seg_ep_free(ferry_ep_t *ep)
{
    ferry_worker_t *worker = ep->worker;
    seg_unsent_purge(worker, ep);
    for (fy_list_link_t *l = fy_list_first(&fy_segment_worker_of(worker)->conns), *next;
         l != fy_list_end(&fy_segment_worker_of(worker)->conns); l = next) {
        next = l->next;
        seg_conn_t *conn = fy_list_entry(l, seg_conn_t, link);
        if (conn->ep == ep)
            seg_conn_end(worker, conn, FERRY_ERR_ENDPOINT_CLOSED, 0);
    }
    rseg_ep_freed(worker, ep);
}

static void seg_module_cleanup(ferry_worker_t *worker)
{
    fy_segment_worker_t *sw = fy_segment_worker_of(worker);
    fy_list_link_t *l;

    seg_dma_cleanup(worker);
    rseg_cleanup(worker);
    seg_unsent_purge(worker, NULL);
    while ((l = fy_list_pop_head(&sw->conns)) != NULL) {
        seg_conn_t *conn = fy_list_entry(l, seg_conn_t, link);
        conn->seg->connections--;
        free(conn);
    }
    while ((l = fy_list_pop_head(&sw->segments)) != NULL) {
        ferry_segment_t *seg = fy_list_entry(l, ferry_segment_t, link);
        fy_list_init(&seg->link);
        seg_events_purge(worker, seg, NULL);
        if (seg->mem != NULL)
            ferry_mem_deregister(seg->mem);
        free(seg);
    }
    while ((l = fy_list_pop_head(&sw->events)) != NULL) {
        seg_event_t *e = fy_list_entry(l, seg_event_t, link);
        if (fy_list_is_linked(&e->deferred.link))
            fy_worker_undefer(worker, &e->deferred);
        free(e);
    }
    free(sw);
}

const fy_module_ops_t fy_segment_module = {
    .name = "segment",
    .ep_state_size = 0,
    .init = seg_module_init,
    .cleanup = seg_module_cleanup,
    .progress = seg_module_progress,
    .busy = NULL,
    .ep_init = NULL,
    .ep_stop = seg_ep_stop,
    .ep_free = seg_ep_free,
};
