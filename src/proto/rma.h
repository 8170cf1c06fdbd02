/* One-sided operations: the descriptor the protocol layer hands to a transport, and the
 * target-executed protocol over active messages that every transport supports. */
#ifndef FERRY_PROTO_RMA_H
#define FERRY_PROTO_RMA_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "core/list.h"
#include "proto/am_ids.h"

typedef enum fy_rma_kind {
    FERRY_RMA_PUT,
    FERRY_RMA_GET,
    FERRY_RMA_ATOMIC_POST,
    FERRY_RMA_ATOMIC_FETCH,
} fy_rma_kind_t;

/* One operation, already checked against the key by the caller (range within the key's
 * length, no overflow, access granted by the key, atomic alignment and size). The arrays stay
 * valid only during the call: a transport that queues the operation copies what it needs. */
typedef struct fy_rma_op {
    fy_rma_kind_t kind;
    ferry_rkey_t *rkey;
    const ferry_iov_t *local; /* PUT: source pieces; GET: destination pieces */
    size_t local_count;
    const ferry_remote_iov_t *remote; /* offsets in the remote region */
    size_t remote_count;
    uint64_t length;             /* total bytes (the same on both sides) */
    ferry_atomic_op_t atomic_op; /* ATOMIC_* */
    unsigned atomic_size;        /* 4 or 8 */
    uint64_t value;
    uint64_t compare;
    uint64_t *result;         /* ATOMIC_FETCH: written before completion */
    ferry_completion_t *comp; /* updated from progress when INPROGRESS was returned */
} fy_rma_op_t;


/* Register the target-executed protocol's handlers on a worker (ferry_worker_create). */
void fy_rma_am_init(ferry_worker_t *worker);

/* Start op through the target-executed protocol: the target's progress checks the key
 * (mem_lookup, mem_check_access) and performs it; the reply completes op->comp (remote
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
    fy_list_t unsent;   /* operations with requests still to send, in issue order */
    fy_list_t replies;  /* replies the transport had no room for, in order */
    fy_list_t free_ops; /* freelists */
    fy_list_t free_pieces;
    void *op_blocks; /* allocation blocks of operations and of requests (chains) */
    void *piece_blocks;
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
    fy_list_t free;         /* request freelist */
    void *blocks;           /* allocation blocks of requests (a chain) */
    fy_list_t retry;        /* endpoints whose queue waits for transport resources */
    unsigned need_progress; /* > 0: ferry_worker_progress calls fy_rma_progress */
    fy_rma_am_worker_t am;
} fy_rma_worker_t;

/* Worker life cycle (ferry_worker_create / ferry_worker_destroy, after the last deferred
 * callbacks ran). init allocates nothing and calls fy_rma_am_init. */
void fy_rma_worker_init(ferry_worker_t *worker);
void fy_rma_worker_cleanup(ferry_worker_t *worker);

/* Retry what waited for transport resources; called by ferry_worker_progress while
 * worker->rma.need_progress > 0. Returns the number of operations moved on. */
unsigned fy_rma_progress(ferry_worker_t *worker);

/* Endpoint life cycle: init (allocation), fail (the endpoint stopped working: queued and
 * target-executed operations complete with status, from progress), cleanup (before the
 * endpoint is freed: the same with FERRY_ERR_CANCELED or the endpoint's error, and nothing
 * refers to the endpoint afterwards). */
void fy_rma_ep_init(ferry_ep_t *ep);
void fy_rma_ep_fail(ferry_ep_t *ep, ferry_status_t status);
void fy_rma_ep_cleanup(ferry_ep_t *ep);

/* rma_am.c: the same for the target-executed protocol. */
void fy_rma_am_cleanup(ferry_worker_t *worker);
void fy_rma_am_ep_fail(ferry_ep_t *ep, ferry_status_t status);
unsigned fy_rma_am_progress(ferry_worker_t *worker);

#endif
