/* One-sided operations: the module (requests, fences, flushes; the descriptor handed to a
 * transport, fy_rma_op_t, is in transport/transport.h) and the target-executed protocol over
 * active messages that every transport supports. */
#ifndef FY_PROTO_RMA_H
#define FY_PROTO_RMA_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "core/list.h"
#include "core/pool.h"
#include "progress/worker.h"
#include "proto/am_ids.h"
#include "proto/module_list.h"
#include "transport/transport.h"
#include "wireup/ep.h"

/* Register the target-executed protocol's handlers on a worker (the module's init). */
void fy_rma_am_init(ferry_worker_t *worker);

/* Start op through the target-executed protocol: the target's progress checks the key
 * (mem_lookup_begin, mem_check_access) and performs it; the reply completes op->comp (remote
 * completion). Returns FERRY_INPROGRESS, FERRY_ERR_NO_RESOURCE, FERRY_ERR_NO_MEMORY, or the
 * endpoint's error. */
ferry_status_t fy_rma_am_start(ferry_ep_t *ep, const fy_rma_op_t *op);

/* ------------------------------------------------------------------ state (rma.c, rma_am.c)
 *
 * Every operation that did not finish in its call is tracked by a request (rma.c) in its
 * endpoint's lists and in the worker's list, in issue order (a sequence number): flushes wait
 * for the requests issued before them; operations issued after a fence that found operations
 * outstanding wait in the endpoint's queue until those completed. */

typedef struct rma_am_piece rma_am_piece_t;

/* Per endpoint (struct ferry_ep). */
typedef struct fy_rma_ep {
    ferry_ep_t *ep;            /* the endpoint this state belongs to */
    fy_list_t active;          /* requests started and not complete, in issue order */
    fy_list_t queued;          /* requests not started (behind a fence), in issue order */
    fy_list_t flushes;         /* ferry_ep_flush records, in issue order */
    fy_list_link_t retry_link; /* in the worker's retry list: the queue's head got
                                     FERRY_ERR_NO_RESOURCE when started from progress */
    int fence_pending;         /* ferry_ep_fence found operations outstanding */
    int starting;              /* the queue is being started (no recursion) */
    int failed;                /* failed or freed: start nothing more */
    unsigned am_unsent;        /* target-executed operations with requests still to send */
    uint64_t am_blocked_pass;  /* the retry pass in which a send got FERRY_ERR_NO_RESOURCE */
} fy_rma_ep_t;

/* The target-executed protocol's part of a worker (rma_am.c). */
typedef struct fy_rma_am_worker {
    rma_am_piece_t **slots; /* request id table: slot -> request awaiting its reply */
    uint32_t *generations;  /* per slot; the id's high half (stale ids never match) */
    uint32_t *free_slots;   /* stack of free slot indices */
    uint32_t capacity;
    uint32_t free_count;
    fy_list_t unsent;        /* operations with requests still to send, in issue order */
    fy_list_t replies;       /* replies the transport had no room for, in order */
    fy_pool_t ops;           /* rma_am_op_t */
    fy_pool_t pieces;        /* rma_am_piece_t */
    uint64_t chunk;          /* largest payload of one request or reply (FERRY_RMA_AM_CHUNK) */
    uint64_t pass;           /* retry passes */
    unsigned warned_request; /* malformed requests and unknown replies seen */
    unsigned warned_reply;
} fy_rma_am_worker_t;

/* Per worker (struct ferry_worker). */
typedef struct fy_rma_worker {
    uint64_t next_seq;
    fy_list_t outstanding;  /* every request not complete (queued or started), issue order */
    fy_list_t flushes;      /* ferry_worker_flush records, in issue order */
    fy_pool_t reqs;         /* rma_req_t (rma.c) */
    fy_list_t retry;        /* endpoints whose queue waits for transport resources */
    unsigned need_progress; /* > 0: the module's progress bit is set (rma_need_progress) */
    fy_rma_am_worker_t am;
} fy_rma_worker_t;

/* The module (proto/module_list.c) and its state. */
extern const fy_module_ops_t fy_rma_module;

static inline fy_rma_worker_t *fy_rma_worker_of(const ferry_worker_t *worker)
{
    return (fy_rma_worker_t *)fy_worker_module_state(worker, FY_MODULE_RMA);
}

static inline fy_rma_ep_t *fy_rma_ep_of(const ferry_ep_t *ep)
{
    return (fy_rma_ep_t *)fy_ep_module_state(ep, FY_MODULE_RMA);
}

/* Count work that only the module's progress moves on (delta +1 / -1); the worker calls the
 * module's progress while the count is above 0. */
void rma_need_progress(ferry_worker_t *worker, int delta);

/* Retry what waited for transport resources (the module's progress). Returns the number of
 * operations moved on. */
unsigned fy_rma_progress(ferry_worker_t *worker);

/* The endpoint stopped working (the module's ep_stop): queued and target-executed operations
 * complete with status, from progress. */
void fy_rma_ep_fail(ferry_ep_t *ep, ferry_status_t status);

/* rma_am.c: the same for the target-executed protocol. */
void fy_rma_am_cleanup(ferry_worker_t *worker);
void fy_rma_am_ep_fail(ferry_ep_t *ep, ferry_status_t status);
unsigned fy_rma_am_progress(ferry_worker_t *worker);

#endif
