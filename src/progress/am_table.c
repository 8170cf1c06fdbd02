/* The active-message handler table of a worker: setting handlers, delivery (called by
 * transports, transport.h), placements, and receive buffers a handler may keep. */
#define _GNU_SOURCE
#include "progress/am_table.h"

#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/log.h"
#include "wireup/ep.h"

/* Header in front of a private receive buffer: how ferry_am_data_release frees it. */
typedef struct am_buffer {
    uint64_t magic;
    uint64_t length;
} am_buffer_t;

#define AM_BUFFER_MAGIC 0x66657272795f616dull /* "ferry_am" */

static inline ferry_status_t locked_am_set_handler(ferry_worker_t *worker, unsigned id,
                                                   ferry_am_handler_cb_t cb, void *arg)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (worker == NULL || id >= FERRY_AM_ID_MAX)
        return FERRY_ERR_INVALID_PARAM;
    worker->am[id].cb = cb;
    worker->am[id].place = NULL;
    worker->am[id].arg = arg;
    worker->am[id].warned = 0;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_am_set_handler(ferry_worker_t *worker, unsigned id,
                                                 ferry_am_handler_cb_t cb, void *arg)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_am_set_handler(worker, id, cb, arg);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_am_set_handler(worker, id, cb, arg);
    fy_worker_unlock(locked);
    return status_or_value;
}

ferry_status_t fy_am_set_internal_place(ferry_worker_t *worker, unsigned id, fy_am_place_cb_t place)
{
    if (worker == NULL || id < FERRY_AM_ID_MAX || id >= FY_AM_ID_ALL)
        return FERRY_ERR_INVALID_PARAM;
    worker->am[id].place = place;
    return FERRY_OK;
}

void *fy_am_place(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                  size_t header_length, size_t length)
{
    fy_am_handler_t *handler = &worker->am[id & (FY_AM_ID_ALL - 1)];
    if (handler->place == NULL || handler->cb == NULL || fy_ep_going_away(ep))
        return NULL; /* nothing more is delivered for an endpoint going away */
    return handler->place(handler->arg, ep, header, header_length, length);
}

ferry_status_t fy_am_set_internal_handler(ferry_worker_t *worker, unsigned id,
                                          ferry_am_handler_cb_t cb, void *arg)
{
    if (worker == NULL || id < FERRY_AM_ID_MAX || id >= FY_AM_ID_ALL)
        return FERRY_ERR_INVALID_PARAM;
    worker->am[id].cb = cb;
    worker->am[id].place = NULL; /* the replaced handler's */
    worker->am[id].arg = arg;
    worker->am[id].warned = 0;
    return FERRY_OK;
}

static fy_log_limit_t fy_am_deliver_log_limit; /* a warning a peer can trigger */

fy_hot ferry_status_t fy_am_deliver(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id,
                                    const void *header, size_t header_length, void *data,
                                    size_t length, unsigned flags)
{
    fy_am_handler_t *handler = &worker->am[id & (FY_AM_ID_ALL - 1)];
    ferry_am_recv_params_t params = {.reply_ep = ep, .flags = flags, .peer = ep->peer.worker_uuid};
    ferry_status_t status;

    if (fy_unlikely(fy_ep_going_away(ep)))
        return FERRY_OK; /* destroyed (or force-closed) by a callback of this progress call */
    fy_am_count_received(ep, id, length);
    if (fy_unlikely(handler->cb == NULL)) {
        if (handler->warned++ == 0)
            fy_warn_limited(
                &fy_am_deliver_log_limit,
                "dropping active message id %u (%zu bytes) from endpoint %p: no handler "
                "is set for this id (ferry_am_set_handler); further drops of id %u are "
                "not logged",
                id, length, (void *)ep, id);
        return FERRY_OK;
    }
    status = handler->cb(handler->arg, header, header_length, data, length, &params);
    if (status == FERRY_INPROGRESS) {
        if (flags & FERRY_AM_RECV_KEEPABLE)
            return FERRY_INPROGRESS;
        fy_warn("active message handler of id %u returned FERRY_INPROGRESS for data it "
                "may not keep (FERRY_AM_RECV_KEEPABLE was not set); the data is reused",
                id);
    }
    return FERRY_OK;
}

void *fy_am_buffer_alloc(size_t length)
{
    am_buffer_t *buffer;
    if (length > SIZE_MAX - sizeof(*buffer))
        return NULL;
    buffer = malloc(sizeof(*buffer) + length);
    if (buffer == NULL) {
        fy_error("malloc(%zu) for a receive buffer failed", sizeof(*buffer) + length);
        return NULL;
    }
    buffer->magic = AM_BUFFER_MAGIC;
    buffer->length = length;
    return buffer + 1;
}

void fy_am_buffer_free(void *data)
{
    am_buffer_t *buffer = (am_buffer_t *)data - 1;
    buffer->magic = 0;
    free(buffer);
}

void fy_am_deliver_buffer(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                          size_t header_length, void *data, size_t length)
{
    if (fy_am_deliver(worker, ep, id, header, header_length, data, length,
                      FERRY_AM_RECV_KEEPABLE) != FERRY_INPROGRESS)
        fy_am_buffer_free(data);
}

static inline void locked_am_data_release(ferry_worker_t *worker, void *data)
{
    if (worker != NULL && fy_worker_forked(worker))
        return; /* a forked child's copy: left alone (ferry.h, "fork()") */
    if (worker == NULL || data == NULL)
        return;
    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        unsigned t = worker->tl_active[i];
        if (fy_transports[t]->am_data_release != NULL &&
            fy_transports[t]->am_data_release(worker->tl[t], data))
            return;
    }
    am_buffer_t *buffer = (am_buffer_t *)data - 1;
    if (buffer->magic != AM_BUFFER_MAGIC) {
        fy_error("ferry_am_data_release(%p): not data kept from an active-message handler "
                 "(released twice?)",
                 data);
        return;
    }
    fy_am_buffer_free(data);
}

FERRY_EXPORT void ferry_am_data_release(ferry_worker_t *worker, void *data)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL)) {
        locked_am_data_release(worker, data);
        return;
    }
    fy_worker_lock(locked);
    locked_am_data_release(worker, data);
    fy_worker_unlock(locked);
}
