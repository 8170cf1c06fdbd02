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
ferry_status_t ferry_context_create(const ferry_context_params_t *params,
                                    ferry_context_t **context_p);

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
ferry_status_t ferry_worker_address(ferry_worker_t *worker, const void **address_p,
                                    size_t *length_p);

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
 * or version), FERRY_ERR_UNREACHABLE (no enabled transport reaches it),
 * FERRY_ERR_CONNECTION_REFUSED (the peer is gone), FERRY_ERR_NO_MEMORY, FERRY_ERR_IO.
 */
ferry_status_t ferry_ep_create(ferry_worker_t *worker, const void *address, size_t length,
                               const ferry_ep_params_t *params, ferry_ep_t **ep_p);

/** ferry_ep_close() flag: drop pending operations (they complete with FERRY_ERR_CANCELED). On a
 * stream transport (tcp) a message already partly written cannot be cut: it is finished from a
 * private copy and reaches the peer if the connection lives on, though its send completes with
 * FERRY_ERR_CANCELED too (the caller's buffers are free either way). */
#define FERRY_EP_CLOSE_FORCE 1u

/**
 * Close an endpoint. Graceful by default: messages already handed to the transport (active
 * messages, eager tagged messages, RTS) are delivered, then the peer is told; comp (may be
 * NULL) completes when that is done. A rendezvous still moving data and one-sided operations
 * still in flight are ended with FERRY_ERR_ENDPOINT_CLOSED: wait for their completions (or
 * ferry_ep_flush) before closing. With FERRY_EP_CLOSE_FORCE it closes at once.
 * The handle stays valid (every operation on it returns FERRY_ERR_ENDPOINT_CLOSED) until
 * ferry_ep_destroy(). Returns FERRY_OK (closed now), FERRY_INPROGRESS, FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_ep_close(ferry_ep_t *ep, unsigned flags, ferry_completion_t *comp);

/** Force-close (if still open) and free an endpoint created with ferry_ep_create(). NULL ignored.
 */
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
 * during the call and have no alignment guarantee (copy them into a struct, do not cast). Return
 * FERRY_OK to let ferry reuse data; return FERRY_INPROGRESS (only when params->flags has
 * FERRY_AM_RECV_KEEPABLE) to keep data and free it later with ferry_am_data_release(). data of a
 * 0-byte message may be NULL.
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
                          const ferry_remote_iov_t *remote, size_t remote_count, ferry_rkey_t *rkey,
                          ferry_completion_t *comp);
ferry_status_t ferry_getv(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                          const ferry_remote_iov_t *remote, size_t remote_count, ferry_rkey_t *rkey,
                          ferry_completion_t *comp);

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
 * FERRY_INPROGRESS, FERRY_ERR_MESSAGE_TRUNCATED (delivered now, truncated),
 * FERRY_ERR_INVALID_PARAM, FERRY_ERR_NO_MEMORY. A receive matched to a rendezvous whose sender dies
 * completes with that endpoint's error (FERRY_ERR_CONNECTION_RESET); FERRY_ERR_PROTOCOL if the
 * sender broke the protocol.
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
                                      const ferry_iov_t *iov, size_t iovcnt, ferry_tag_info_t *info,
                                      ferry_completion_t *comp);

/**
 * Cancel a posted receive that has not matched yet: it completes with FERRY_ERR_CANCELED.
 * Returns FERRY_OK (canceled), FERRY_ERR_NO_ELEM (no such receive, or it matched already and
 * will complete normally), FERRY_ERR_INVALID_PARAM.
 */
ferry_status_t ferry_tag_recv_cancel(ferry_worker_t *worker, ferry_completion_t *comp);

/* ---------------------------------------------------------------- named segments
 *
 * A segment is memory published on a worker under a numeric id (the model of reflective-memory
 * interconnects such as Dolphin SISCI). A peer connects knowing only an endpoint to the owner
 * and the id, learns the size, and then maps it (same host: plain loads and stores) or moves data
 * with DMA-style transfer queues (anywhere). The owner is told who connected and who left.
 *
 * Local life cycle: NOT PREPARED --prepare--> PREPARED --set_available--> AVAILABLE
 * <--set_unavailable / set_available--> UNAVAILABLE. Every other step returns
 * FERRY_ERR_ILLEGAL_STATE (there is no un-prepare). ferry_segment_remove is legal in any state:
 * the id is unpublished at once (connects then get FERRY_ERR_NO_ELEM), connected peers keep their
 * access and the memory lives until the last of them disconnected; the handle stays valid (its
 * calls return FERRY_ERR_REMOVED) until ferry_segment_release.
 *
 * Events reach the callback given at creation, from inside ferry_worker_progress(); with a NULL
 * callback they are queued for ferry_segment_wait_event / ferry_rsegment_wait_event instead.
 * Segments belong to their worker: ferry_worker_destroy releases those still there. */

typedef struct ferry_segment ferry_segment_t;
typedef struct ferry_rsegment ferry_rsegment_t;

/** ferry_segment_create segment_id: let ferry choose an unused id (from FERRY_SEGMENT_AUTO_ID_BASE
 *  upwards); read it with ferry_segment_id(). Not a valid id otherwise. */
#define FERRY_SEGMENT_AUTO_ID 0xffffffffu
#define FERRY_SEGMENT_AUTO_ID_BASE 0x80000000u
/** The most data one notification carries. */
#define FERRY_SEGMENT_NOTIFY_MAX 64u

typedef enum ferry_segment_event_type {
    FERRY_SEGMENT_EVENT_CONNECT = 1,    /**< owner: a peer connected (ep, connection) */
    FERRY_SEGMENT_EVENT_DISCONNECT = 2, /**< owner: a peer disconnected (status FERRY_OK) or its
                                             endpoint failed (status: the endpoint's error) */
    FERRY_SEGMENT_EVENT_NOTIFY = 3,     /**< owner: a peer called ferry_rsegment_notify (data) */
    FERRY_SEGMENT_EVENT_CONNECTED = 4,  /**< importer: an asynchronous connect finished (status) */
    FERRY_SEGMENT_EVENT_LOST = 5,       /**< importer: the owner died, the link failed or the
                                             endpoint was closed (status); every later
                                             operation on the remote segment fails */
} ferry_segment_event_type_t;

/** One event, passed by value: nothing in it needs to be freed. */
typedef struct ferry_segment_event {
    ferry_segment_event_type_t type;
    ferry_status_t status;
    /** owner: the endpoint to the peer (owned by the worker; in DISCONNECT it may already be
     *  freed: compare it, do not use it); importer: the rsegment's endpoint */
    ferry_ep_t *ep;
    uint64_t connection; /**< owner: id of the connection (the same in CONNECT, NOTIFY and
                              DISCONNECT of one peer's connection); importer: 0 */
    size_t length;       /**< NOTIFY: bytes of data */
    uint8_t data[FERRY_SEGMENT_NOTIFY_MAX];
} ferry_segment_event_t;

typedef void (*ferry_segment_cb_t)(void *arg, ferry_segment_t *segment,
                                   const ferry_segment_event_t *event);
typedef void (*ferry_rsegment_cb_t)(void *arg, ferry_rsegment_t *rsegment,
                                    const ferry_segment_event_t *event);

/**
 * Create a local segment of size bytes (> 0) of memory ferry allocates (ferry_mem_alloc: a
 * zeroed, page-aligned memfd that peers on this host map; access read, write, atomic) under
 * segment_id, unique on this worker (or FERRY_SEGMENT_AUTO_ID). flags: 0 (reserved). callback
 * (may be NULL: use ferry_segment_wait_event) sees CONNECT, DISCONNECT and NOTIFY events. The
 * segment starts NOT PREPARED. *segment_p is freed by ferry_segment_release.
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM (NULL, size 0, unknown flags),
 * FERRY_ERR_ALREADY_EXISTS (segment_id is taken on this worker), FERRY_ERR_LIMIT (no automatic
 * id left), FERRY_ERR_NO_MEMORY, FERRY_ERR_SHMEM, or ferry_mem_alloc's error.
 */
ferry_status_t ferry_segment_create(ferry_worker_t *worker, uint32_t segment_id, size_t size,
                                    unsigned flags, ferry_segment_cb_t callback, void *arg,
                                    ferry_segment_t **segment_p);

/**
 * The same on memory the caller registered (ferry_mem_register or ferry_mem_alloc, not single
 * use): the segment is the whole registration, with the access it grants. ferry holds a
 * reference on mem until the segment is released and its last peer disconnected; the memory
 * itself stays the caller's and must stay valid that long (ferry_segment_connections() says when
 * no peer is left). Only ferry_mem_alloc memory can be mapped by peers. Statuses as
 * ferry_segment_create (FERRY_ERR_INVALID_PARAM also for a single-use or empty registration).
 */
ferry_status_t ferry_segment_create_from_mem(ferry_worker_t *worker, uint32_t segment_id,
                                             ferry_mem_t *mem, unsigned flags,
                                             ferry_segment_cb_t callback, void *arg,
                                             ferry_segment_t **segment_p);

/**
 * NOT PREPARED -> PREPARED: make the segment reachable through the worker's transports (its key
 * is packed). flags: 0 (reserved). Returns FERRY_OK, FERRY_ERR_INVALID_PARAM,
 * FERRY_ERR_ILLEGAL_STATE (already prepared), FERRY_ERR_REMOVED, FERRY_ERR_NO_MEMORY.
 */
ferry_status_t ferry_segment_prepare(ferry_segment_t *segment, unsigned flags);

/**
 * PREPARED or UNAVAILABLE -> AVAILABLE: peers may connect. Returns FERRY_OK,
 * FERRY_ERR_INVALID_PARAM, FERRY_ERR_ILLEGAL_STATE (not prepared, or already available),
 * FERRY_ERR_REMOVED.
 */
ferry_status_t ferry_segment_set_available(ferry_segment_t *segment);

/**
 * AVAILABLE -> UNAVAILABLE: new connects are refused with FERRY_ERR_NOT_AVAILABLE; connected
 * peers keep their access. Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_ILLEGAL_STATE
 * (not available), FERRY_ERR_REMOVED.
 */
ferry_status_t ferry_segment_set_unavailable(ferry_segment_t *segment);

/**
 * Remove the segment, in any state: its id is free at once (connects get FERRY_ERR_NO_ELEM, a
 * new segment may take the id). Connected peers keep their access; the memory (and the
 * reference on a caller's registration) is released when the last of them disconnected, or now
 * if none is connected. DISCONNECT events still reach the callback. The handle stays valid for
 * ferry_segment_id, ferry_segment_connections, ferry_segment_wait_event and
 * ferry_segment_release; other calls return FERRY_ERR_REMOVED (ptr: NULL, size: 0).
 * Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_REMOVED (removed already).
 */
ferry_status_t ferry_segment_remove(ferry_segment_t *segment);

/** Remove (if not yet) and free the handle: no more events. The memory still lives until the
 *  last connected peer disconnected. NULL is ignored. */
void ferry_segment_release(ferry_segment_t *segment);

/** The owner's pointer to the segment's memory; NULL for NULL or a removed segment. */
void *ferry_segment_ptr(const ferry_segment_t *segment);
/** The segment's size in bytes; 0 for NULL or a removed segment. */
size_t ferry_segment_size(const ferry_segment_t *segment);
/** The segment's id (also after removal); FERRY_SEGMENT_AUTO_ID for NULL. */
uint32_t ferry_segment_id(const ferry_segment_t *segment);
/** How many peers are connected now (also after removal). */
unsigned ferry_segment_connections(const ferry_segment_t *segment);

/**
 * Make progress until an event of a segment created without a callback is there, or timeout_ms
 * passed (-1: no limit, 0: look once); *event_p receives it (events are kept in arrival order).
 * Returns FERRY_OK, FERRY_ERR_TIMED_OUT, FERRY_ERR_INVALID_PARAM (NULL, or the segment has a
 * callback), FERRY_ERR_IO.
 */
ferry_status_t ferry_segment_wait_event(ferry_segment_t *segment, int timeout_ms,
                                        ferry_segment_event_t *event_p);

/** ferry_rsegment_connect flag: return FERRY_INPROGRESS at once; the callback (or
 *  ferry_rsegment_wait_event) gets a CONNECTED event with the result. */
#define FERRY_RSEGMENT_CONNECT_ASYNC 1u

/**
 * Connect to segment segment_id of the worker ep leads to. Synchronous by default: makes
 * progress on ep's worker until the owner answered or timeout_ms passed (-1: no limit).
 * With FERRY_RSEGMENT_CONNECT_ASYNC the call returns FERRY_INPROGRESS with *rsegment_p set
 * (state connecting); the result comes as a CONNECTED event (status below) and, after a failed
 * one, the handle must still be freed with ferry_rsegment_disconnect; timeout_ms is checked by
 * ferry_worker_progress. callback (may be NULL) sees CONNECTED and LOST.
 * A reply that arrives after a timeout is answered with a disconnect (the owner sees CONNECT
 * and DISCONNECT). Returns FERRY_OK (*rsegment_p: free it with ferry_rsegment_disconnect),
 * FERRY_INPROGRESS, FERRY_ERR_INVALID_PARAM (NULL, unknown flags, the automatic id),
 * FERRY_ERR_NO_ELEM (the owner has no segment of that id, or it was removed),
 * FERRY_ERR_NOT_AVAILABLE (not prepared, or not available), FERRY_ERR_CONNECTION_REFUSED (the
 * owner could not accept: see its log), FERRY_ERR_TIMED_OUT, FERRY_ERR_NO_MEMORY,
 * FERRY_ERR_PROTOCOL (the owner's answer was malformed), or the endpoint's error.
 */
ferry_status_t ferry_rsegment_connect(ferry_ep_t *ep, uint32_t segment_id, int timeout_ms,
                                      unsigned flags, ferry_rsegment_cb_t callback, void *arg,
                                      ferry_rsegment_t **rsegment_p);

/** Size of a connected remote segment; 0 while connecting, after a failed connect, or NULL. */
size_t ferry_rsegment_size(const ferry_rsegment_t *rsegment);

/** FERRY_OK while connected; FERRY_INPROGRESS while an asynchronous connect is under way;
 *  otherwise the error that ended it (connect failure, or the LOST status). */
ferry_status_t ferry_rsegment_status(const ferry_rsegment_t *rsegment);

/**
 * Disconnect and free the handle (also after LOST or a failed asynchronous connect): the owner
 * gets DISCONNECT. Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_BUSY (a map or a DMA
 * queue of it still exists: unmap / destroy them first; nothing changed), FERRY_ERR_NO_RESOURCE
 * (the disconnect message found no room: progress and retry).
 */
ferry_status_t ferry_rsegment_disconnect(ferry_rsegment_t *rsegment);

/** ferry_rsegment_map flag: a read-only view (a store through it faults). */
#define FERRY_RSEGMENT_MAP_READONLY 1u

/**
 * Map [offset, offset + size) of a remote segment on this host: *ptr_p points at byte offset of
 * the owner's memory (plain loads and stores; see ferry_rsegment_store_barrier). Release it
 * with ferry_rsegment_unmap. The mapping stays valid after LOST (the memory is the owner's
 * memfd). Returns FERRY_OK, FERRY_ERR_INVALID_PARAM (NULL, size 0, unknown flags),
 * FERRY_ERR_OUT_OF_RANGE (beyond the segment, or offset + size overflows), FERRY_ERR_UNSUPPORTED
 * (the owner is on another host, or the segment is not memory from ferry_mem_alloc),
 * FERRY_ERR_ACCESS (a writable map of memory the owner grants no write), FERRY_ERR_NO_MEMORY,
 * FERRY_ERR_SHMEM, or the rsegment's status (not connected, lost).
 */
ferry_status_t ferry_rsegment_map(ferry_rsegment_t *rsegment, uint64_t offset, size_t size,
                                  unsigned flags, void **ptr_p);

/** Release a map (ptr as returned by ferry_rsegment_map). Returns FERRY_OK,
 *  FERRY_ERR_INVALID_PARAM (NULL), FERRY_ERR_NO_ELEM (ptr is not a map of this rsegment). */
ferry_status_t ferry_rsegment_unmap(ferry_rsegment_t *rsegment, void *ptr);

/** Store barrier: stores made through maps before the call are visible to the owner and to
 *  other peers before any store made after it (a full memory fence). Returns FERRY_OK,
 *  FERRY_ERR_INVALID_PARAM, or the rsegment's status. */
ferry_status_t ferry_rsegment_store_barrier(ferry_rsegment_t *rsegment);

/**
 * Notify the owner: its callback (or ferry_segment_wait_event) gets a NOTIFY event with a copy
 * of data (length <= FERRY_SEGMENT_NOTIFY_MAX; data may be NULL when length is 0). An active
 * message: works on every transport, and arrives after everything sent earlier on the endpoint.
 * Returns FERRY_OK (sent; data reusable), FERRY_ERR_INVALID_PARAM, FERRY_ERR_NO_RESOURCE
 * (progress and retry), or the rsegment's status.
 */
ferry_status_t ferry_rsegment_notify(ferry_rsegment_t *rsegment, const void *data, size_t length);

/** As ferry_segment_wait_event, for the CONNECTED and LOST events of a remote segment created
 *  without a callback. */
ferry_status_t ferry_rsegment_wait_event(ferry_rsegment_t *rsegment, int timeout_ms,
                                         ferry_segment_event_t *event_p);

/* ---------------------------------------------------------------- DMA-style transfer queues
 *
 * A queue of transfers between local buffers and a remote segment: post entries, start, and
 * learn completion by callback, by ferry_dma_state, or with ferry_dma_wait. ferry_dma_start
 * returns at once; the data moves from inside ferry_worker_progress, at most
 * FERRY_SEGMENT_DMA_CHUNK bytes per progress call (ferry_put/ferry_get: on the same host memcpy
 * through the mapping or cross-memory attach, else the target's progress), so the application
 * runs between progress calls. A queue is complete when every write is in the owner's memory.
 * With FERRY_SEGMENT_COPY_THREADS=n > 0, a queue on memory of a peer on this host that is
 * mapped here (ferry_mem_alloc) is copied by n threads of the worker instead (started by the
 * first such queue, joined by ferry_worker_destroy; large entries are split across them), and
 * progress only reports the end: callbacks still run inside ferry_worker_progress, and
 * ferry_dma_wait sleeps until the threads are done. Other queues are unchanged. */

typedef struct ferry_dma_queue ferry_dma_queue_t;

#define FERRY_DMA_WRITE 1u /**< local buffer -> remote segment */
#define FERRY_DMA_READ 2u  /**< remote segment -> local buffer */

typedef struct ferry_dma_entry {
    void *local;            /**< the local buffer (WRITE: read from; READ: written to) */
    uint64_t remote_offset; /**< where in the remote segment */
    size_t length;          /**< bytes (0 is allowed and moves nothing) */
    unsigned direction;     /**< FERRY_DMA_WRITE or FERRY_DMA_READ */
} ferry_dma_entry_t;

typedef enum ferry_dma_state {
    FERRY_DMA_IDLE = 0,    /**< entries may be posted; never started, or finished and reset */
    FERRY_DMA_RUNNING = 1, /**< started, not finished (also while aborting) */
    FERRY_DMA_DONE = 2,    /**< finished: every entry moved */
    FERRY_DMA_FAILED = 3,  /**< finished with an error (ferry_dma_state's status), or aborted
                                (FERRY_ERR_CANCELED); entries may have moved partly */
} ferry_dma_state_t;

/** Called once per start, from inside ferry_worker_progress, with FERRY_OK or the error. */
typedef void (*ferry_dma_cb_t)(void *arg, ferry_dma_queue_t *queue, ferry_status_t status);

/** Create an empty queue on a connected remote segment. Returns FERRY_OK,
 *  FERRY_ERR_INVALID_PARAM, FERRY_ERR_NO_MEMORY, or the rsegment's status. */
ferry_status_t ferry_dma_create(ferry_rsegment_t *rsegment, ferry_dma_queue_t **queue_p);

/**
 * Append count entries (copied; the buffers they point to stay the caller's until the queue
 * finished). Posting to a DONE or FAILED queue starts a new list. All entries are checked first;
 * on an error none is appended. Returns FERRY_OK, FERRY_ERR_INVALID_PARAM (NULL, a NULL buffer
 * with a length, an unknown direction), FERRY_ERR_OUT_OF_RANGE (an entry past the end of the
 * segment, or whose offset + length overflows), FERRY_ERR_BUSY (running), FERRY_ERR_NO_MEMORY.
 */
ferry_status_t ferry_dma_post(ferry_dma_queue_t *queue, const ferry_dma_entry_t *entries,
                              size_t count);

/**
 * Start the posted entries (in order; entries may overlap in time). callback may be NULL.
 * Returns FERRY_INPROGRESS (callback, state or wait tell the end), FERRY_ERR_INVALID_PARAM,
 * FERRY_ERR_BUSY (running), FERRY_ERR_NO_ELEM (no entry posted), or the rsegment's status.
 */
ferry_status_t ferry_dma_start(ferry_dma_queue_t *queue, ferry_dma_cb_t callback, void *arg);

/** The queue's state; *status_p (may be NULL) receives FERRY_OK, FERRY_INPROGRESS (running) or
 *  the error of a FAILED queue. */
ferry_dma_state_t ferry_dma_state(const ferry_dma_queue_t *queue, ferry_status_t *status_p);

/** Make progress until the queue finished or timeout_ms passed (-1: no limit). Returns the
 *  queue's result (FERRY_OK or its error), FERRY_ERR_TIMED_OUT, FERRY_ERR_INVALID_PARAM
 *  (NULL or not started), FERRY_ERR_IO. */
ferry_status_t ferry_dma_wait(ferry_dma_queue_t *queue, int timeout_ms);

/** Stop a running queue: no further entry starts; it finishes with FERRY_ERR_CANCELED once
 *  those under way completed (callback as usual). Returns FERRY_OK, FERRY_ERR_INVALID_PARAM,
 *  FERRY_ERR_ILLEGAL_STATE (not running). */
ferry_status_t ferry_dma_abort(ferry_dma_queue_t *queue);

/** Free a queue that is not running. Returns FERRY_OK, FERRY_ERR_INVALID_PARAM, FERRY_ERR_BUSY
 *  (running: abort and wait first). */
ferry_status_t ferry_dma_destroy(ferry_dma_queue_t *queue);

#ifdef __cplusplus
}
#endif

#endif
