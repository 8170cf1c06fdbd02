/*
 * ferry — move memory between processes.
 *
 * The one public header. Objects:
 *   ferry_context_t  configuration and enabled transports
 *   ferry_worker_t   one progress engine (owned by one thread)
 *   ferry_ep_t       a connection to one peer worker
 *
 * Completion model (the same for every operation that may not finish at once):
 *   FERRY_OK                done; buffers may be reused; the completion is not touched.
 *   FERRY_INPROGRESS        started; the ferry_completion_t passed in is decremented when the
 *                           operation completes locally; its callback runs when count reaches 0,
 *                           always from inside ferry_worker_progress(). A NULL completion means
 *                           "I will not track this one": buffers may then be reused only after
 *                           ferry_ep_flush() completed (one-sided operations) or the endpoint
 *                           was closed gracefully (everything).
 *   FERRY_ERR_NO_RESOURCE   not started; call ferry_worker_progress() and retry.
 *   other negative values   errors; ferry_status_string() describes them.
 *
 * Threads: a worker and its endpoints are used by one thread at a time. ferry starts no thread.
 */
#ifndef FERRY_FERRY_H
#define FERRY_FERRY_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 1
#define FERRY_VERSION_PATCH 0

/** "MAJOR.MINOR.PATCH" of the library actually loaded. Static string. */
const char *ferry_version_string(void);

typedef struct ferry_context ferry_context_t;
typedef struct ferry_worker ferry_worker_t;
typedef struct ferry_ep ferry_ep_t;

/** A piece of memory: used for scatter/gather lists. */
typedef struct ferry_iov {
    void *buffer;
    size_t length;
} ferry_iov_t;

/* ---------------------------------------------------------------- completion */

typedef struct ferry_completion ferry_completion_t;

/** Called once, from inside ferry_worker_progress(), when comp->count reaches 0. */
typedef void (*ferry_completion_cb_t)(ferry_completion_t *comp);

/**
 * Completion of one or more operations. The caller owns it and must keep it alive until its
 * callback ran (or count reached 0). Set count to the number of operations that will report to
 * it (usually 1) before starting them; status starts as FERRY_OK and receives the first error.
 */
struct ferry_completion {
    ferry_completion_cb_t cb; /**< may be NULL: poll count instead */
    int64_t count;            /**< operations still to complete */
    ferry_status_t status;    /**< FERRY_OK, or the first error of these operations */
};

/* ---------------------------------------------------------------- context */

typedef struct ferry_context_params {
    /** Comma-separated transports to use ("self,shm"); NULL: FERRY_TRANSPORTS, else all. */
    const char *transports;
} ferry_context_params_t;

/**
 * Create a context: reads the FERRY_* environment (warning about unknown names), and probes
 * the transports. params may be NULL. On success *context_p owns a context to destroy with
 * ferry_context_destroy().
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM (context_p NULL), FERRY_ERR_NO_MEMORY,
 * FERRY_ERR_NO_DEVICE (no enabled transport is usable here).
 */
ferry_status_t ferry_context_create(const ferry_context_params_t *params, ferry_context_t **context_p);

/** Destroy a context. All its workers must have been destroyed. NULL is ignored. */
void ferry_context_destroy(ferry_context_t *context);

/* ---------------------------------------------------------------- worker */

typedef void (*ferry_ep_error_cb_t)(void *arg, ferry_ep_t *ep, ferry_status_t status);

typedef struct ferry_worker_params {
    /** Error callback for endpoints the worker accepts from peers (see ferry_am_recv_params_t
     *  reply_ep); NULL: errors of accepted endpoints are only logged. */
    ferry_ep_error_cb_t accepted_ep_error_cb;
    void *accepted_ep_error_arg;
} ferry_worker_params_t;

/**
 * Create a worker: a progress engine with its own receive queues and one file descriptor to
 * wait on. params may be NULL. Destroy it with ferry_worker_destroy().
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_NO_MEMORY, FERRY_ERR_IO (epoll, eventfd,
 * socket creation failed: the log names the call), FERRY_ERR_SHMEM (memfd/mmap failed).
 */
ferry_status_t ferry_worker_create(ferry_context_t *context, const ferry_worker_params_t *params,
                                   ferry_worker_t **worker_p);

/** Destroy a worker: force-closes and frees every endpoint it still has (their pending
 *  operations complete with FERRY_ERR_CANCELED), releases all its memory and descriptors. */
void ferry_worker_destroy(ferry_worker_t *worker);

/**
 * The worker's address (business card): an opaque, versioned blob to hand to peers by any
 * means. *address_p points into the worker and stays valid until the worker is destroyed.
 * Returns FERRY_OK or FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_worker_address(ferry_worker_t *worker, const void **address_p, size_t *length_p);

/**
 * Make progress: receive messages, run handlers and completion callbacks, retry pending sends.
 * Never blocks. Returns the number of events handled (0 when idle).
 */
unsigned ferry_worker_progress(ferry_worker_t *worker);

/**
 * A file descriptor (an epoll set) that becomes readable when the worker may have work. Put it
 * in your own event loop; call ferry_worker_arm() before sleeping on it. Owned by the worker.
 * Returns FERRY_OK or FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_worker_get_fd(ferry_worker_t *worker, int *fd_p);

/**
 * Prepare to sleep on the worker's fd. Returns FERRY_OK: nothing is pending and peers will
 * signal the fd when they send (safe to sleep); FERRY_ERR_BUSY: events are pending (call
 * ferry_worker_progress() instead of sleeping).
 */
ferry_status_t ferry_worker_arm(ferry_worker_t *worker);

/**
 * Progress until an event was handled or timeout_ms passed (-1: no limit), spinning briefly
 * (FERRY_WAIT_SPIN_US) and then sleeping in the kernel. An idle waiter uses no CPU.
 * Returns FERRY_OK (events were handled), FERRY_ERR_TIMED_OUT, FERRY_ERR_IO.
 */
ferry_status_t ferry_worker_wait(ferry_worker_t *worker, int timeout_ms);

/* ---------------------------------------------------------------- endpoint */

typedef struct ferry_ep_params {
    /** Called from progress when the endpoint fails (the peer died, closed, or broke the
     *  protocol). Pending operations complete with the same status. May be NULL. */
    ferry_ep_error_cb_t error_cb;
    void *error_arg;
} ferry_ep_params_t;

/**
 * Create an endpoint to the worker whose address is given; the best enabled transport that
 * reaches it is chosen (self, then shm on this host). Does not wait for the peer: operations
 * issued before the connection is up are queued. params may be NULL. The endpoint is freed by
 * ferry_ep_destroy().
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_INVALID_ADDRESS (truncated, wrong magic
 * or version), FERRY_ERR_UNREACHABLE (no enabled transport reaches it), FERRY_ERR_CONNECTION_REFUSED
 * (the peer is gone), FERRY_ERR_NO_MEMORY, FERRY_ERR_IO.
 */
ferry_status_t ferry_ep_create(ferry_worker_t *worker, const void *address, size_t length,
                               const ferry_ep_params_t *params, ferry_ep_t **ep_p);

/** ferry_ep_close() flag: drop pending operations (they complete with FERRY_ERR_CANCELED). */
#define FERRY_EP_CLOSE_FORCE 1u

/**
 * Close an endpoint. Graceful by default: pending sends finish, then the peer is told; comp
 * (may be NULL) completes when that is done. With FERRY_EP_CLOSE_FORCE it closes at once.
 * The handle stays valid (every operation on it returns FERRY_ERR_ENDPOINT_CLOSED) until
 * ferry_ep_destroy(). Returns FERRY_OK (closed now), FERRY_INPROGRESS, FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_ep_close(ferry_ep_t *ep, unsigned flags, ferry_completion_t *comp);

/** Force-close (if still open) and free an endpoint created with ferry_ep_create(). NULL ignored. */
void ferry_ep_destroy(ferry_ep_t *ep);

/** Name of the transport the endpoint uses ("self", "shm", ...). Static string. */
const char *ferry_ep_transport_name(const ferry_ep_t *ep);

/* ---------------------------------------------------------------- active messages */

/** Handler ids 0 .. FERRY_AM_ID_MAX-1 belong to the user (ferry keeps others for itself). */
#define FERRY_AM_ID_MAX 128
/** The largest header ferry_am_send() carries. */
#define FERRY_AM_HEADER_MAX 256

/** ferry_am_recv_params_t flag: the handler may keep data by returning FERRY_INPROGRESS. */
#define FERRY_AM_RECV_KEEPABLE 1u

typedef struct ferry_am_recv_params {
    /** An endpoint to the sender, owned by the worker, usable for replies until the sender
     *  closes it (its accepted_ep_error_cb then runs) or the worker is destroyed. */
    ferry_ep_t *reply_ep;
    unsigned flags; /**< FERRY_AM_RECV_KEEPABLE */
} ferry_am_recv_params_t;

/**
 * Active-message handler; runs inside ferry_worker_progress(). header and data are valid
 * during the call and have no alignment guarantee (copy them into a struct, do not cast). Return FERRY_OK to let ferry reuse data; return FERRY_INPROGRESS (only when
 * params->flags has FERRY_AM_RECV_KEEPABLE) to keep data and free it later with
 * ferry_am_data_release(). data of a 0-byte message may be NULL.
 */
typedef ferry_status_t (*ferry_am_handler_cb_t)(void *arg, const void *header, size_t header_length,
                                                void *data, size_t length,
                                                const ferry_am_recv_params_t *params);

/**
 * Set (cb != NULL) or clear (cb == NULL) the handler of active-message id.
 * Returns FERRY_OK or FERRY_ERR_INVALID_PARAM (id >= FERRY_AM_ID_MAX).
 */
ferry_status_t ferry_am_set_handler(ferry_worker_t *worker, unsigned id, ferry_am_handler_cb_t cb,
                                    void *arg);

/**
 * Send an active message: header (0..FERRY_AM_HEADER_MAX bytes, copied before return) and
 * the payload gathered from iov. Messages from one endpoint arrive in the order sent.
 * The payload may be any size the receiver can allocate.
 * Returns FERRY_OK (sent; buffers reusable), FERRY_INPROGRESS (comp completes when the payload
 * buffers may be reused), FERRY_ERR_NO_RESOURCE (nothing sent; progress and retry),
 * FERRY_ERR_INVALID_PARAM (id out of range, header too long, iov NULL with iovcnt > 0),
 * FERRY_ERR_ENDPOINT_CLOSED, FERRY_ERR_CONNECTION_RESET (the endpoint has failed).
 */
ferry_status_t ferry_am_send(ferry_ep_t *ep, unsigned id, const void *header, size_t header_length,
                             const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp);

/** Release data a handler kept (it returned FERRY_INPROGRESS). */
void ferry_am_data_release(ferry_worker_t *worker, void *data);


/* ---------------------------------------------------------------- memory and remote keys */

typedef struct ferry_mem ferry_mem_t;
typedef struct ferry_rkey ferry_rkey_t;

/* Access a registration grants to peers (the access argument of ferry_mem_register, or the
 * flags of ferry_mem_alloc). */
#define FERRY_ACCESS_REMOTE_READ 0x1u
#define FERRY_ACCESS_REMOTE_WRITE 0x2u
#define FERRY_ACCESS_REMOTE_ATOMIC 0x4u
#define FERRY_ACCESS_ALL 0x7u

/** The region may be used for exactly one remote operation, then it is invalid (a key of it
 *  then gets FERRY_ERR_ACCESS), like a KNEM single-use region. */
#define FERRY_MEM_SINGLE_USE 0x100u

/**
 * Register memory for remote access: the iovcnt pieces of iov, in order, form one region of
 * their total length; peers address it by offset (0 .. length-1) through a key packed with
 * ferry_rkey_pack(). Nothing outside these pieces, and no access not granted, can be reached.
 * Registering the same pieces with the same access and flags again is cheap (a cache returns
 * the same registration with a reference count; each register needs its own deregister).
 * The memory stays the caller's; it must stay valid until ferry_mem_deregister().
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM (NULL, iovcnt 0 or > FERRY_MEM_IOV_MAX, unknown
 * access bits, a NULL piece with a length), FERRY_ERR_NO_MEMORY, FERRY_ERR_LIMIT (too many
 * registrations: FERRY_MEM_MAX_REGIONS).
 */
ferry_status_t ferry_mem_register(ferry_context_t *context, const ferry_iov_t *iov, size_t iovcnt,
                                  unsigned access, unsigned flags, ferry_mem_t **mem_p);

#define FERRY_MEM_IOV_MAX 1024

/**
 * Drop one reference; the last one invalidates every key of the region (operations that start
 * afterwards fail with FERRY_ERR_ACCESS; do not deregister while peers may still be writing).
 * For memory from ferry_mem_alloc the memory is freed. Returns FERRY_OK or
 * FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_mem_deregister(ferry_mem_t *mem);

/**
 * Allocate size bytes of registered memory backed by a memfd, which peers on this host map
 * (ferry_rkey_ptr: load/store, CPU atomics). flags: FERRY_ACCESS_* | FERRY_MEM_SINGLE_USE.
 * *ptr_p is page-aligned and zeroed; it is freed by ferry_mem_deregister(*mem_p).
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_SHMEM, FERRY_ERR_NO_MEMORY, FERRY_ERR_LIMIT.
 */
ferry_status_t ferry_mem_alloc(ferry_context_t *context, size_t size, unsigned flags,
                               ferry_mem_t **mem_p, void **ptr_p);

/** Total length of a registration. */
size_t ferry_mem_length(const ferry_mem_t *mem);

/**
 * Pack a key that lets a peer reach mem: *buffer_p (free it with ferry_rkey_buffer_release)
 * holds *length_p bytes to pass to the peer by any means. The key is versioned and carries no
 * pointer: it names the registration, which its owner checks.
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_NO_MEMORY.
 */
ferry_status_t ferry_rkey_pack(ferry_mem_t *mem, void **buffer_p, size_t *length_p);

void ferry_rkey_buffer_release(void *buffer);

/**
 * Unpack a key received from the peer that ep leads to. Returns FERRY_OK,
 * FERRY_ERR_INVALID_PARAM (NULL), FERRY_ERR_INVALID_ADDRESS (truncated, corrupted, wrong magic
 * or version), FERRY_ERR_ACCESS (the key belongs to another process than ep's peer),
 * FERRY_ERR_NO_MEMORY, or the endpoint's error. Release with ferry_rkey_release().
 */
ferry_status_t ferry_rkey_unpack(ferry_ep_t *ep, const void *buffer, size_t length,
                                 ferry_rkey_t **rkey_p);

/** Release an unpacked key (before its endpoint is destroyed). NULL is ignored. */
void ferry_rkey_release(ferry_rkey_t *rkey);

/**
 * A local pointer to offset remote_offset of the peer's memory, for direct load/store: only for
 * memory from the peer's ferry_mem_alloc, on this host. Returns FERRY_OK, FERRY_ERR_UNSUPPORTED
 * (not mapped memory, or another host), FERRY_ERR_ACCESS (offset beyond the region).
 */
ferry_status_t ferry_rkey_ptr(ferry_rkey_t *rkey, uint64_t remote_offset, void **local_ptr_p);

/* ---------------------------------------------------------------- one-sided operations */

/** A range of the remote region: offset and length. */
typedef struct ferry_remote_iov {
    uint64_t offset;
    size_t length;
} ferry_remote_iov_t;

/**
 * Write length bytes from buffer into the peer's region at remote_offset; get reads. Local
 * completion (buffer reusable) is reported by the completion model; remote completion (the data
 * is in the peer's memory) by ferry_ep_flush().
 * Returns FERRY_OK, FERRY_INPROGRESS, FERRY_ERR_NO_RESOURCE, FERRY_ERR_INVALID_PARAM,
 * FERRY_ERR_ACCESS (outside the region, offset + length overflowing, access not granted, key
 * released, region deregistered or single-use region used up; never touches memory), or the
 * endpoint's error. An error found by the target completes the operation with FERRY_ERR_ACCESS
 * and the endpoint stays usable.
 */
ferry_status_t ferry_put(ferry_ep_t *ep, const void *buffer, size_t length, uint64_t remote_offset,
                         ferry_rkey_t *rkey, ferry_completion_t *comp);
ferry_status_t ferry_get(ferry_ep_t *ep, void *buffer, size_t length, uint64_t remote_offset,
                         ferry_rkey_t *rkey, ferry_completion_t *comp);

/** Scatter/gather forms: the local pieces, in order, map onto the remote ranges, in order; both
 *  lists must cover the same total length. Same statuses as ferry_put/ferry_get. */
ferry_status_t ferry_putv(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                          const ferry_remote_iov_t *remote, size_t remote_count,
                          ferry_rkey_t *rkey, ferry_completion_t *comp);
ferry_status_t ferry_getv(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                          const ferry_remote_iov_t *remote, size_t remote_count,
                          ferry_rkey_t *rkey, ferry_completion_t *comp);

typedef enum ferry_atomic_op {
    FERRY_ATOMIC_ADD,   /**< post or fetch: *remote += value */
    FERRY_ATOMIC_AND,   /**< post: *remote &= value */
    FERRY_ATOMIC_OR,    /**< post: *remote |= value */
    FERRY_ATOMIC_XOR,   /**< post: *remote ^= value */
    FERRY_ATOMIC_SWAP,  /**< fetch: *remote = value, result = old */
    FERRY_ATOMIC_CSWAP, /**< fetch: if *remote == compare then *remote = value; result = old */
} ferry_atomic_op_t;

/**
 * Atomic update of the naturally aligned 4- or 8-byte word (size) at remote_offset, without a
 * result. Atomic with respect to every other ferry atomic and every CPU atomic on that word
 * (the target's progress, or a local peer through a mapping, uses the CPU's atomic
 * instructions). Returns as ferry_put, and FERRY_ERR_INVALID_PARAM for a size other than 4 or
 * 8, an op that does not post, or a misaligned offset.
 */
ferry_status_t ferry_atomic_post(ferry_ep_t *ep, ferry_atomic_op_t op, uint64_t value, size_t size,
                                 uint64_t remote_offset, ferry_rkey_t *rkey,
                                 ferry_completion_t *comp);

/** Atomic update returning the old value into *result (written before completion). Ops: ADD
 *  (fetch-add), SWAP, CSWAP (compare). Statuses as ferry_atomic_post. */
ferry_status_t ferry_atomic_fetch(ferry_ep_t *ep, ferry_atomic_op_t op, uint64_t value,
                                  uint64_t compare, size_t size, uint64_t remote_offset,
                                  ferry_rkey_t *rkey, uint64_t *result, ferry_completion_t *comp);

/** Order: one-sided operations issued on ep after the fence take effect after those issued
 *  before it. Returns FERRY_OK or the endpoint's error. */
ferry_status_t ferry_ep_fence(ferry_ep_t *ep);

/** Remote completion: comp completes when every one-sided operation issued on ep before the
 *  call has taken effect at the target. Returns FERRY_OK (already), FERRY_INPROGRESS, or the
 *  endpoint's error. */
ferry_status_t ferry_ep_flush(ferry_ep_t *ep, ferry_completion_t *comp);

/** ferry_ep_flush for every endpoint of the worker. */
ferry_status_t ferry_worker_flush(ferry_worker_t *worker, ferry_completion_t *comp);


/* ---------------------------------------------------------------- tagged messages */

/** What a tagged receive or probe learned about the message. */
typedef struct ferry_tag_info {
    ferry_ep_t *sender; /**< endpoint to the sender (owned by the worker, as reply_ep of AMs);
                             NULL for an eager message that waited in the unexpected queue while
                             its endpoint was closed and freed */
    uint64_t tag;       /**< the sender's tag */
    size_t length;      /**< the message's real length (more than the buffer if truncated) */
} ferry_tag_info_t;

/** A message taken out of the unexpected queue by ferry_tag_probe (like MPI_Improbe). */
typedef struct ferry_tag_message ferry_tag_message_t;

/**
 * Send a tagged message of any length, gathered from iov. Small messages are copied out at
 * once (eager); large ones use rendezvous and move once, from this buffer into the receiver's
 * (FERRY_RNDV_MODE: get, put, coop, null; chosen per transport and size by default). The
 * buffers stay the caller's until the completion. Messages from one endpoint match in the
 * order they were sent.
 * Returns FERRY_OK (sent; buffers reusable), FERRY_INPROGRESS, FERRY_ERR_NO_RESOURCE,
 * FERRY_ERR_INVALID_PARAM, FERRY_ERR_NO_MEMORY, or the endpoint's error. A send in progress
 * completes with the endpoint's error if the peer dies.
 */
ferry_status_t ferry_tag_send(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt, uint64_t tag,
                              ferry_completion_t *comp);

/**
 * Post a receive for the first message whose tag matches: (msg_tag & tag_mask) ==
 * (tag & tag_mask). info (may be NULL) is filled before the completion. comp is required: it
 * also names the receive for ferry_tag_recv_cancel. A message longer than the buffers
 * completes with FERRY_ERR_MESSAGE_TRUNCATED: the buffers receive its first bytes, nothing is
 * written past them, info->length says the real length, and the next message is unaffected.
 * Returns FERRY_OK (an unexpected message was already there and is delivered: comp untouched),
 * FERRY_INPROGRESS, FERRY_ERR_MESSAGE_TRUNCATED (delivered now, truncated), FERRY_ERR_INVALID_PARAM,
 * FERRY_ERR_NO_MEMORY. A receive matched to a rendezvous whose sender dies completes with that
 * endpoint's error (FERRY_ERR_CONNECTION_RESET); FERRY_ERR_PROTOCOL if the sender broke the
 * protocol.
 */
ferry_status_t ferry_tag_recv(ferry_worker_t *worker, const ferry_iov_t *iov, size_t iovcnt,
                              uint64_t tag, uint64_t tag_mask, ferry_tag_info_t *info,
                              ferry_completion_t *comp);

/**
 * Look for an unexpected message matching (tag, tag_mask) without receiving it; with remove,
 * take it out of the queue (*message_p, to pass to ferry_tag_message_recv). Returns FERRY_OK
 * (info filled), FERRY_ERR_NO_ELEM (none yet), FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_tag_probe(ferry_worker_t *worker, uint64_t tag, uint64_t tag_mask, int remove,
                               ferry_tag_info_t *info, ferry_tag_message_t **message_p);

/** Receive a message taken by ferry_tag_probe(remove). Statuses as ferry_tag_recv. */
ferry_status_t ferry_tag_message_recv(ferry_worker_t *worker, ferry_tag_message_t *message,
                                      const ferry_iov_t *iov, size_t iovcnt,
                                      ferry_tag_info_t *info, ferry_completion_t *comp);

/**
 * Cancel a posted receive that has not matched yet: it completes with FERRY_ERR_CANCELED.
 * Returns FERRY_OK (canceled), FERRY_ERR_NO_ELEM (no such receive, or it matched already and
 * will complete normally), FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_tag_recv_cancel(ferry_worker_t *worker, ferry_completion_t *comp);

#ifdef __cplusplus
}
#endif

#endif
