/* One-sided operations: the descriptor the protocol layer hands to a transport, and the
 * target-executed protocol over active messages that every transport supports. */
#ifndef FERRY_PROTO_RMA_H
#define FERRY_PROTO_RMA_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

typedef enum ferry_rma_kind {
    FERRY_RMA_PUT,
    FERRY_RMA_GET,
    FERRY_RMA_ATOMIC_POST,
    FERRY_RMA_ATOMIC_FETCH,
} ferry_rma_kind_t;

/* One operation, already checked against the key by the caller (range within the key's
 * length, no overflow, access granted by the key, atomic alignment and size). The arrays stay
 * valid only during the call: a transport that queues the operation copies what it needs. */
typedef struct ferry_rma_op {
    ferry_rma_kind_t kind;
    ferry_rkey_t *rkey;
    const ferry_iov_t *local;         /* PUT: source pieces; GET: destination pieces */
    size_t local_count;
    const ferry_remote_iov_t *remote; /* offsets in the remote region */
    size_t remote_count;
    uint64_t length;                  /* total bytes (the same on both sides) */
    ferry_atomic_op_t atomic_op;      /* ATOMIC_* */
    unsigned atomic_size;             /* 4 or 8 */
    uint64_t value;
    uint64_t compare;
    uint64_t *result;                 /* ATOMIC_FETCH: written before completion */
    ferry_completion_t *comp;         /* updated from progress when INPROGRESS was returned */
} ferry_rma_op_t;

/* Internal active-message ids of the target-executed protocol (rma_am.c). */
#define FERRY_AM_ID_RMA_REQUEST 200u
#define FERRY_AM_ID_RMA_REPLY 201u

/* Register the target-executed protocol's handlers on a worker (ferry_worker_create). */
void ferry_rma_am_init(ferry_worker_t *worker);

/* Start op through the target-executed protocol: the target's progress checks the key
 * (mem_lookup, mem_check_access) and performs it; the reply completes op->comp (remote
 * completion). Returns FERRY_INPROGRESS, FERRY_ERR_NO_RESOURCE, FERRY_ERR_NO_MEMORY, or the
 * endpoint's error. */
ferry_status_t ferry_rma_am_start(ferry_ep_t *ep, const ferry_rma_op_t *op);

#endif
