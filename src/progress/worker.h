/* The worker: one progress engine (epoll set, eventfd wake-ups, AM handler table, deferred
 * callbacks) and the per-worker state of each enabled transport. */
#ifndef FERRY_PROGRESS_WORKER_H
#define FERRY_PROGRESS_WORKER_H

#include <stdint.h>

#include <ferry/ferry.h>

#include "core/list.h"
#include "proto/segment.h"
#include "proto/rma.h"
#include "proto/tag.h"
#include "transport/transport.h"
#include "wireup/context.h"

/* A descriptor watched by the worker's epoll set; events are dispatched from progress. */
typedef void (*fy_worker_fd_cb_t)(void *arg, uint32_t events);

typedef struct fy_worker_fd {
    int fd;
    fy_worker_fd_cb_t cb;
    void *arg;
} fy_worker_fd_t;

/* A callback to run from progress (never from inside the call that queued it). */
typedef struct fy_deferred fy_deferred_t;
typedef void (*fy_deferred_cb_t)(fy_deferred_t *self);
struct fy_deferred {
    fy_list_link_t link;
    fy_deferred_cb_t cb;
};

/* An internal handler's placement (proto/am.h: fy_am_set_internal_place). */
typedef void *(*fy_am_place_cb_t)(void *arg, ferry_ep_t *ep, const void *header,
                                  size_t header_length, size_t length);

typedef struct fy_am_handler {
    ferry_am_handler_cb_t cb;
    fy_am_place_cb_t place; /* NULL: no placement */
    void *arg;
    unsigned warned; /* dropped-message warnings already printed for this id */
} fy_am_handler_t;

#define FERRY_AM_ID_ALL 256 /* ids FERRY_AM_ID_MAX..255 are ferry's own protocols */

struct ferry_worker {
    ferry_context_t *context;
    ferry_worker_params_t params;
    int epoll_fd;
    uint64_t uuid;
    fy_tl_worker_t *tl[FERRY_TL_MAX]; /* NULL where the transport is not enabled */
    unsigned tl_active[FERRY_TL_MAX]; /* indices of the enabled transports */
    unsigned tl_active_count;
    uint32_t tl_poll_skip; /* bit t: transport t has nothing to poll now (it says so itself) */
    fy_am_handler_t am[FERRY_AM_ID_ALL];
    fy_list_t eps;          /* every endpoint of this worker (ferry_ep_t.link) */
    fy_list_t deferred;     /* fy_deferred_t to run from progress */
    unsigned poll_count;    /* progress calls; every few, the epoll set is polled */
    uint64_t next_epoll_ns; /* when a spinning progress looks at the epoll set next */
    int armed;              /* arm() returned OK: the next progress drains the epoll set */
    uint64_t wait_spin_ns;
    uint8_t address[FERRY_ADDRESS_MAX_SIZE];
    size_t address_length;
    fy_rma_worker_t rma;     /* one-sided operations (proto/rma.c, proto/rma_am.c) */
    fy_tag_worker_t tag;     /* tagged messages (proto/tag.c, proto/tag_rndv.c) */
    fy_segment_worker_t seg; /* named segments (proto/segment.c, rsegment.c, segment_dma.c) */
};

/* Add fd to the epoll set (events: EPOLLIN etc.; level-triggered unless EPOLLET is given).
 * entry must stay valid until removed. Returns FERRY_OK or FERRY_ERR_IO (logged). */
ferry_status_t fy_worker_fd_add(ferry_worker_t *worker, fy_worker_fd_t *entry, uint32_t events);
void fy_worker_fd_remove(ferry_worker_t *worker, fy_worker_fd_t *entry);

/* Queue a callback to run from the next progress. */
void fy_worker_defer(ferry_worker_t *worker, fy_deferred_t *deferred);
/* Remove a queued callback that has not run yet (no effect if it is not queued). */
void fy_worker_undefer(ferry_worker_t *worker, fy_deferred_t *deferred);

/* Update a completion from progress: record the first error, decrement, run the callback
 * when the count reaches 0. NULL is ignored. */
static inline void fy_completion_update(ferry_completion_t *comp, ferry_status_t status)
{
    if (comp == NULL)
        return;
    if (status < 0 && comp->status == FERRY_OK)
        comp->status = status;
    if (--comp->count == 0 && comp->cb != NULL)
        comp->cb(comp);
}

#endif
