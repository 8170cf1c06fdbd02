/**
 * @file ferry.h
 * @brief ferry — move memory between processes: the one public header of libferry.
 *
 * Objects:
 * - ferry_context_t: configuration and enabled transports (@ref ferry_api_context);
 * - ferry_worker_t: one progress engine, used by one thread at a time or, in
 *   FERRY_THREAD_MULTI mode, by any (@ref ferry_api_worker);
 * - ferry_ep_t: a connection to one peer worker (@ref ferry_api_ep).
 *
 * Operations: active messages (@ref ferry_api_am), registered memory and remote keys
 * (@ref ferry_api_mem), one-sided operations (@ref ferry_api_rma), tagged messages
 * (@ref ferry_api_tag), named segments (@ref ferry_api_segment) and DMA-style transfer queues
 * (@ref ferry_api_dma). Every operation that may not finish at once follows the completion
 * model of @ref ferry_api_completion. Statuses: @ref ferry_api_status (ferry/status.h).
 * Introspection — what ferry can use here, its configuration, and which transport an endpoint
 * would use and why: @ref ferry_api_info (ferry/info.h).
 *
 * Threads: a worker and its endpoints are used by one thread at a time, unless it was created
 * with FERRY_THREAD_MULTI (ferry_thread_mode_t: then by any thread at any time). ferry starts
 * no thread (except the copy threads of FERRY_SEGMENT_COPY_THREADS, see @ref ferry_api_dma).
 *
 * fork(): see @ref ferry_api_fork.
 */
#ifndef FERRY_FERRY_H
#define FERRY_FERRY_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @defgroup ferry_api_version Version
 * @brief The version of the headers and of the library loaded.
 * @{
 */

#define FERRY_VERSION_MAJOR 0 /**< major version of these headers */
#define FERRY_VERSION_MINOR 2 /**< minor version of these headers (0.x: may break the API) */
#define FERRY_VERSION_PATCH 0 /**< patch version of these headers */

/**
 * @brief The version of the library actually loaded.
 * @return "MAJOR.MINOR.PATCH"; a static string (never NULL, not to be freed).
 */
const char *ferry_version_string(void);

/** @} */

/**
 * @ingroup ferry_api_context
 * @brief Opaque: configuration and enabled transports.
 */
typedef struct ferry_context ferry_context_t;
/**
 * @ingroup ferry_api_worker
 * @brief Opaque: one progress engine (used by one thread at a time).
 */
typedef struct ferry_worker ferry_worker_t;
/**
 * @ingroup ferry_api_ep
 * @brief Opaque: a connection to one peer worker.
 */
typedef struct ferry_ep ferry_ep_t;

/**
 * @defgroup ferry_api_completion Completions and buffers
 * @brief How an operation reports its end; the scatter/gather list.
 *
 * The completion model, the same for every operation that may not finish at once:
 * - FERRY_OK: done; buffers may be reused; the completion is not touched.
 * - FERRY_INPROGRESS: started; the ferry_completion_t passed in is decremented when the
 *   operation completes locally; its callback runs when count reaches 0, always from inside
 *   ferry_worker_progress(). A NULL completion means "I will not track this one": buffers may
 *   then be reused only after ferry_ep_flush() completed (one-sided operations) or the endpoint
 *   was closed gracefully (everything).
 * - FERRY_ERR_NO_RESOURCE: not started; call ferry_worker_progress() and retry.
 * - other negative values: errors; ferry_status_string() describes them.
 *
 * Callbacks (completion callbacks, active-message handlers, endpoint error callbacks, segment
 * and DMA events) run only from inside ferry_worker_progress() (and ferry_worker_wait(),
 * ferry_ep_wait_connected() and the other calls that progress), never from inside the call that
 * started the operation. A callback may:
 * - send (active messages, tagged messages, one-sided operations), post, probe and cancel
 *   receives, fence and flush, register and deregister memory, set handlers;
 * - close any endpoint with ferry_ep_close(), gracefully or forced, including the reply_ep of
 *   the message it handles and the endpoint whose error it reports;
 * - destroy with ferry_ep_destroy() an endpoint the program created, including the one the
 *   message came on or whose error it reports: it is freed at the end of that progress call,
 *   and nothing more is delivered for it meanwhile.
 * A callback must not progress the worker itself (ferry_worker_progress(), _wait(),
 * ferry_ep_wait_connected(), ferry_dma_wait(), ...), nor destroy the worker or its context.
 * Endpoints the worker accepted (reply_ep) are the worker's: close them, do not destroy them.
 *
 * When an endpoint fails, every operation pending on it completes (with the endpoint's error)
 * before the endpoint's error callback runs.
 * @{
 */

/** @brief A piece of memory: used for scatter/gather lists. */
typedef struct ferry_iov {
    void *buffer;  /**< start of the piece (may be NULL when length is 0) */
    size_t length; /**< bytes */
} ferry_iov_t;

/** @brief See struct ferry_completion. */
typedef struct ferry_completion ferry_completion_t;

/**
 * @brief Called once, from inside ferry_worker_progress(), when comp->count reaches 0.
 * @param comp the completion whose count reached 0 (still the caller's)
 */
typedef void (*ferry_completion_cb_t)(ferry_completion_t *comp);

/**
 * @brief Completion of one or more operations.
 *
 * The caller owns it and must keep it alive until its callback ran (or count reached 0). Set
 * count to the number of operations that will report to it (usually 1) before starting them;
 * status starts as FERRY_OK and receives the first error.
 */
struct ferry_completion {
    ferry_completion_cb_t cb; /**< may be NULL: poll count instead */
    int64_t count;            /**< operations still to complete */
    ferry_status_t status;    /**< FERRY_OK, or the first error of these operations */
};

/** @} */

/**
 * @defgroup ferry_api_fork fork() and exec
 * @brief What a child process may do with the ferry objects of its parent.
 *
 * - Every descriptor ferry opens (sockets, epoll sets, eventfds, timerfds, memfds, files) is
 *   close-on-exec: after exec a program holds nothing of its parent's ferry.
 * - After fork(), the child's copies of every ferry object its parent created before the fork
 *   (contexts, workers, endpoints, registrations, keys, segments, remote segments, DMA queues)
 *   are dead. Every call on them returns FERRY_ERR_FORKED (calls returning a count or a size
 *   return 0, ferry_dma_state() FERRY_DMA_FAILED) and touches nothing shared with the parent or
 *   its peers: no message, no ring, no region, no key table, no epoll set. ferry_*_destroy(),
 *   _release() and _deregister() on them do nothing: the child's memory of them is leaked
 *   deliberately (it goes with the child's exit or exec), and so are its copies of the
 *   descriptors, which keep the parent's connections open until the child exits or execs (a
 *   peer notices the parent's death only then). Detection costs one load per call (a
 *   pthread_atfork() handler counts forks); no system call.
 * - The child may create its own context and workers (ferry_context_create()) and connect to
 *   its parent, its parent's peers or anyone else: they are new objects.
 * - Memory: shared memory ferry maps (ferry_mem_alloc() memory, the shm transport's rings and
 *   regions, the key table, mappings of peers' memory from ferry_rkey_ptr() and
 *   ferry_rsegment_map()) is marked MADV_DONTFORK: it is absent from the child (a stray store
 *   there faults instead of reaching a peer). Memory the parent registered with
 *   ferry_mem_register() is the parent's own (private) memory: after fork() the child writes to
 *   its copy-on-write copy, and peers keep reading and writing the parent's pages (cross-memory
 *   attach and tcp address the parent's process, not physical pages), whatever the child does.
 * - fork() while another thread of the parent is inside a ferry call is safe for the parent;
 *   the child must not use the inherited objects anyway.
 * @{
 * @}
 */

/**
 * @defgroup ferry_api_context Context
 * @brief Configuration (the FERRY_* environment) and the enabled transports.
 * @{
 */

/**
 * @brief Parameters of ferry_context_create().
 *
 * Since 0.2 (the member config was added: a program built against 0.1 headers must be
 * rebuilt; see docs/ARCHITECTURE.md, "Configuration and logging").
 */
typedef struct ferry_context_params {
    /** Comma-separated transports to use ("self,shm"); NULL: FERRY_TRANSPORTS (from config,
     *  else the environment), else all. */
    const char *transports;
    /** This context's own settings: a NULL-terminated array of "NAME=value" strings, any
     *  FERRY_* variable that is not process-wide ("FERRY_TCP_TIMEOUT_MS=30000",
     *  "FERRY_RNDV_THRESH=64k"); NULL: none. Each is checked like the environment's (the same
     *  parser; a STRING with a syntax of its own, such as FERRY_RNDV_MODE, against it too) and
     *  wins over the environment for this context's workers and endpoints; an empty value
     *  means the variable's default, whatever the environment says; the last setting of a
     *  name wins. Process-wide variables (FERRY_LOG_LEVEL, FERRY_LOG_FILE, FERRY_BOOTSTRAP_*)
     *  are refused. The strings are read during ferry_context_create only (copied). */
    const char *const *config;
} ferry_context_params_t;

/**
 * @brief Create a context: read the FERRY_* environment and the program's settings
 *        (params->config), and probe the transports.
 *
 * Unknown FERRY_* names in the environment are warned about; in params->config they are
 * refused.
 *
 * @param[in] params settings; may be NULL (all defaults)
 * @param[out] context_p on success, a context the caller owns: destroy it with
 *                       ferry_context_destroy()
 * @retval FERRY_OK created
 * @retval FERRY_ERR_INVALID_PARAM context_p is NULL; or a setting of params->config is not
 *                                 NAME=value, names no ferry variable, names a process-wide
 *                                 one, or has a value that does not parse as the variable's
 *                                 type (one warning says which, and the fix)
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_NO_DEVICE no enabled transport is usable here
 * @retval FERRY_ERR_IO this host's identity (boot id, namespaces in /proc) could not be read
 * @retval FERRY_ERR_SHMEM the memfd of the context's key table could not be created or mapped
 */
ferry_status_t ferry_context_create(const ferry_context_params_t *params,
                                    ferry_context_t **context_p);

/**
 * @brief Destroy a context.
 * @param context the context; all its workers must have been destroyed (otherwise the call
 *                logs an error and leaves the context alone, leaked). NULL is ignored.
 */
void ferry_context_destroy(ferry_context_t *context);

/** @brief See ferry/info.h. */
typedef struct ferry_config_info ferry_config_info_t;

/**
 * @brief A configuration variable as one context sees it: its declaration and the value in
 *        effect for that context (the context's setting, else the environment's, else the
 *        default).
 *
 * The structure and the other configuration calls are in ferry/info.h
 * (ferry_config_lookup() answers for the environment alone).
 *
 * @param context the context
 * @param[in] name the exact name ("FERRY_TCP_TIMEOUT_MS")
 * @param[in,out] info in: its size member; out: everything else, with from_context and
 *                     context_value saying whether and how the context sets it
 * @retval FERRY_OK filled
 * @retval FERRY_ERR_INVALID_PARAM context, name or info is NULL, or info's size too small
 * @retval FERRY_ERR_NO_ELEM no registered variable has this name
 */
ferry_status_t ferry_context_config_lookup(const ferry_context_t *context, const char *name,
                                           ferry_config_info_t *info);

/** @} */

/**
 * @defgroup ferry_api_worker Worker
 * @brief A progress engine: receive queues, one file descriptor to wait on, progress and wait.
 * @{
 */

/**
 * @brief Called from inside ferry_worker_progress() when an endpoint fails, after every
 *        operation pending on it completed with the error.
 *
 * The peer identity of the endpoint is still there (ferry_ep_peer_id()). The callback may
 * destroy an endpoint the program created (see @ref ferry_api_completion, callbacks).
 *
 * @param arg the argument given with the callback
 * @param ep the endpoint that failed (still valid during the call)
 * @param status the error that ended it (the endpoint's error, see @ref ferry_api_ep)
 */
typedef void (*ferry_ep_error_cb_t)(void *arg, ferry_ep_t *ep, ferry_status_t status);

/**
 * @brief Which threads may use a worker (ferry_worker_params_t.thread_mode).
 *
 * FERRY_THREAD_SINGLE (the default, 0): one thread at a time uses the worker and everything
 * that belongs to it (its endpoints, remote keys, segments, remote segments, DMA queues); the
 * program serializes its calls. Nothing is locked.
 *
 * FERRY_THREAD_MULTI: any thread may call any function on the worker and on everything that
 * belongs to it at any time, including ferry_worker_progress() and ferry_worker_wait() from
 * several threads at once. Each such call takes the worker's lock (one spinlock per worker,
 * recursive for the thread that holds it) for its duration, so calls on one worker are
 * serialized; ferry_worker_wait() releases it while it sleeps, so that other threads go on.
 * Callbacks (completions, active-message handlers, error callbacks, segment and DMA events)
 * run in the thread that progresses, with the worker's lock held: two callbacks of one worker
 * never run at once, and a callback may call ferry on the same worker (the lock is recursive)
 * within the rules of @ref ferry_api_completion. What remains the caller's job:
 * - an object is not destroyed (ferry_ep_destroy(), ferry_rkey_release(),
 *   ferry_segment_release(), ferry_dma_destroy(), ...) while another thread still uses it or
 *   may still use the handle; ferry_worker_destroy() is called when no other thread uses the
 *   worker or anything of it;
 * - buffers and completions passed to ferry belong to ferry until the operation completed, as
 *   in single mode; a completion's count is updated under the worker's lock: read it after a
 *   progress or wait call of the same thread returned, or make it an atomic read of your own;
 * - context calls (ferry_mem_register(), ferry_mem_alloc(), ferry_mem_deregister(),
 *   ferry_rkey_pack()) are serialized by the context's own lock once it has a multi-thread
 *   worker; deregistering memory that an operation still uses is an error in any mode;
 * - ferry_worker_arm() followed by the program's own sleep on ferry_worker_get_fd() is
 *   reliable only while no other thread progresses the worker (progress disarms it);
 *   ferry_worker_wait() is the sleep that works with any number of threads.
 * The cost in FERRY_THREAD_SINGLE mode is one predicted branch per call. In FERRY_THREAD_MULTI
 * mode, the thread that created the worker holds a bias: its calls take the lock with plain
 * stores and loads (no atomic read-modify-write, no fence) until another thread first calls on
 * the worker or on anything of it. That first call revokes the bias for good, which costs it one
 * membarrier() system call (a few microseconds, more if the creating thread is inside a call:
 * it waits for that call to return); from then on every thread takes the lock. Without
 * membarrier (Linux < 4.14, or a seccomp filter that refuses it) there is no bias. Measured
 * for a single thread on a FERRY_THREAD_MULTI worker, 8-byte messages over shared memory:
 * about 20 more instructions per send than single mode, latency within 6 % of it, message
 * rate 0.6-1.1x of it depending on the machine's load (docs/ARCHITECTURE.md, "Threads").
 */
typedef enum ferry_thread_mode {
    FERRY_THREAD_SINGLE = 0, /**< one thread at a time (the default) */
    FERRY_THREAD_MULTI = 1,  /**< any thread, any call, at any time (calls serialized) */
} ferry_thread_mode_t;

/** @brief Parameters of ferry_worker_create(). */
typedef struct ferry_worker_params {
    /** Error callback for endpoints the worker accepts from peers (see ferry_am_recv_params_t
     *  reply_ep); NULL: errors of accepted endpoints are only logged. */
    ferry_ep_error_cb_t accepted_ep_error_cb;
    void *accepted_ep_error_arg;     /**< the arg of accepted_ep_error_cb */
    ferry_thread_mode_t thread_mode; /**< FERRY_THREAD_SINGLE (0, default) or _MULTI */
} ferry_worker_params_t;

/**
 * @brief Create a worker: a progress engine with its own receive queues and one file
 *        descriptor to wait on.
 * @param context the context the worker belongs to
 * @param[in] params callbacks and the thread mode; may be NULL (FERRY_THREAD_SINGLE)
 * @param[out] worker_p on success, a worker the caller owns: destroy it with
 *                      ferry_worker_destroy()
 * @retval FERRY_OK created
 * @retval FERRY_ERR_INVALID_PARAM context or worker_p is NULL, or an unknown thread_mode
 * @retval FERRY_ERR_FORKED the context was created by the parent of this (forked) process
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_IO epoll, eventfd or socket creation failed (the log names the call)
 * @retval FERRY_ERR_SHMEM memfd or mmap failed
 */
ferry_status_t ferry_worker_create(ferry_context_t *context, const ferry_worker_params_t *params,
                                   ferry_worker_t **worker_p);

/**
 * @brief Destroy a worker.
 *
 * Force-closes and frees every endpoint it still has (their pending operations complete with
 * FERRY_ERR_CANCELED), releases its segments, all its memory and descriptors.
 *
 * @param worker the worker; NULL is ignored
 */
void ferry_worker_destroy(ferry_worker_t *worker);

/**
 * @brief A worker's identity: a 64-bit value, random, never 0, the same in every process that
 *        talks to the worker.
 *
 * Every endpoint to one worker reports the same id, whether this worker created it
 * (ferry_ep_create) or accepted it (the reply_ep of an active message, the sender of a tagged
 * message): a layer above tells its peers (ranks) apart by it.
 */
typedef uint64_t ferry_peer_id_t;

/** @brief "Any peer": a receive or probe from any source (no worker has this id). */
#define FERRY_PEER_ANY ((ferry_peer_id_t)0)

/**
 * @brief This worker's identity, as its peers see it (ferry_ep_peer_id() on their endpoints).
 * @param worker the worker
 * @param[out] id_p the id
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 */
ferry_status_t ferry_worker_id(const ferry_worker_t *worker, ferry_peer_id_t *id_p);

/**
 * @brief The worker's address (business card): an opaque, versioned blob to hand to peers by
 *        any means.
 * @param worker the worker
 * @param[out] address_p the address; it points into the worker and stays valid until the
 *                       worker is destroyed
 * @param[out] length_p its length in bytes
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 */
ferry_status_t ferry_worker_address(ferry_worker_t *worker, const void **address_p,
                                    size_t *length_p);

/**
 * @brief The size in bytes of a compact worker address (ferry_worker_address_compact()): the
 *        same in every process and every ferry version that reads compact version 1.
 */
#define FERRY_ADDRESS_COMPACT_SIZE 64

/**
 * @brief The worker's compact address: FERRY_ADDRESS_COMPACT_SIZE bytes, the same size in
 *        every process, for fixed-size exchanges (one allgather of every rank's address, a
 *        64-byte name buffer).
 *
 * ferry_ep_create() accepts it wherever it accepts the full address of ferry_worker_address():
 * the same worker (self), the same host (shm, or tcp over loopback) and other hosts (tcp: it
 * carries one IPv4 or IPv6 address and the port — the first address of the interfaces the
 * worker publishes, FERRY_TCP_IFACE). It holds the worker id, a digest of the host identity
 * (two processes are on the same host exactly when the full addresses would say so), the
 * pid, the uid and the tcp address; the format is documented in docs/ARCHITECTURE.md
 * ("Addresses"). The full form stays the one to use when a peer may have to try several
 * addresses of a host with many interfaces.
 *
 * @param worker the worker
 * @param[out] address FERRY_ADDRESS_COMPACT_SIZE bytes, written (a copy: the caller owns it)
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 */
ferry_status_t ferry_worker_address_compact(ferry_worker_t *worker,
                                            uint8_t address[FERRY_ADDRESS_COMPACT_SIZE]);

/**
 * @brief Make progress: receive messages, run handlers and completion callbacks, retry pending
 *        sends. Never blocks.
 * @param worker the worker
 * @return the number of events handled (0 when idle)
 */
unsigned ferry_worker_progress(ferry_worker_t *worker);

/**
 * @brief A file descriptor (an epoll set) that becomes readable when the worker may have work.
 *
 * Put it in your own event loop; call ferry_worker_arm() before sleeping on it.
 *
 * @param worker the worker
 * @param[out] fd_p the descriptor; owned by the worker (do not close it)
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 */
ferry_status_t ferry_worker_get_fd(ferry_worker_t *worker, int *fd_p);

/**
 * @brief Prepare to sleep on the worker's fd.
 * @param worker the worker
 * @retval FERRY_OK nothing is pending and peers will signal the fd when they send (safe to
 *                  sleep)
 * @retval FERRY_ERR_BUSY events are pending: call ferry_worker_progress() instead of sleeping
 * @retval FERRY_ERR_INVALID_PARAM worker is NULL
 */
ferry_status_t ferry_worker_arm(ferry_worker_t *worker);

/**
 * @brief Progress until an event was handled or timeout_ms passed.
 *
 * Spins briefly (FERRY_WAIT_SPIN_US), then sleeps in the kernel: an idle waiter uses no CPU.
 *
 * @param worker the worker
 * @param timeout_ms the limit in milliseconds; -1: no limit
 * @retval FERRY_OK events were handled
 * @retval FERRY_ERR_TIMED_OUT nothing happened within timeout_ms
 * @retval FERRY_ERR_IO the wait failed (the log names the call)
 * @retval FERRY_ERR_INVALID_PARAM worker is NULL
 */
ferry_status_t ferry_worker_wait(ferry_worker_t *worker, int timeout_ms);

/** @} */

/**
 * @defgroup ferry_api_ep Endpoint
 * @brief A connection to one peer worker: create, close, destroy.
 *
 * An endpoint that failed or was closed keeps its error (the endpoint's error), which every
 * later operation on it returns and its pending operations complete with:
 * - FERRY_ERR_ENDPOINT_CLOSED: closed locally or by the peer;
 * - FERRY_ERR_CONNECTION_RESET: the peer died or the link failed;
 * - FERRY_ERR_CONNECTION_REFUSED: the peer refused the connection or is gone;
 * - FERRY_ERR_ENDPOINT_TIMEOUT: (tcp) the peer stopped answering;
 * - FERRY_ERR_PROTOCOL: the peer broke the protocol;
 * - FERRY_ERR_NO_MEMORY: the connection could not allocate what it needed.
 * @{
 */

/** @brief Parameters of ferry_ep_create(). */
typedef struct ferry_ep_params {
    /** Called from progress when the endpoint fails (the peer died, closed, or broke the
     *  protocol). Pending operations complete with the same status. May be NULL. */
    ferry_ep_error_cb_t error_cb;
    void *error_arg; /**< the arg of error_cb */
} ferry_ep_params_t;

/**
 * @brief Create an endpoint to the worker whose address is given.
 *
 * The best enabled transport that reaches it is chosen (self, then shm on this host, then
 * tcp). Does not wait for the peer: operations issued before the connection is up are queued.
 *
 * @param worker the local worker
 * @param[in] address the peer's address: the full form (its ferry_worker_address()) or the
 *                    compact form (its ferry_worker_address_compact(), length
 *                    FERRY_ADDRESS_COMPACT_SIZE); read during the call
 * @param length its length in bytes
 * @param[in] params error callback; may be NULL
 * @param[out] ep_p on success, an endpoint the caller owns: free it with ferry_ep_destroy()
 * @retval FERRY_OK created
 * @retval FERRY_ERR_INVALID_PARAM worker or ep_p is NULL
 * @retval FERRY_ERR_INVALID_ADDRESS NULL, truncated or corrupted address, wrong magic or
 *                                   version; a compact address of another length than
 *                                   FERRY_ADDRESS_COMPACT_SIZE, with unknown flags, nonzero
 *                                   reserved bytes or a bad tcp family or port (one warning
 *                                   says which)
 * @retval FERRY_ERR_UNREACHABLE no enabled transport reaches the peer
 * @retval FERRY_ERR_CONNECTION_REFUSED the peer is gone (shm: at once; tcp: the endpoint fails
 *                                      with it from progress when the connection is refused)
 * @retval FERRY_ERR_NO_RESOURCE the peer cannot take a connection now (its backlog is full):
 *                               progress and retry
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_IO a system call failed (the log names it)
 * @retval FERRY_ERR_SHMEM the shared memory of the connection could not be created or mapped
 */
ferry_status_t ferry_ep_create(ferry_worker_t *worker, const void *address, size_t length,
                               const ferry_ep_params_t *params, ferry_ep_t **ep_p);

/**
 * @brief ferry_ep_close() flag: drop pending operations (they complete with FERRY_ERR_CANCELED).
 *
 * On a stream transport (tcp) a message already partly written cannot be cut: it is finished
 * from a private copy and reaches the peer if the connection lives on, though its send
 * completes with FERRY_ERR_CANCELED too (the caller's buffers are free either way); over shm
 * a message whose first fragments are posted is finished the same way. A send that completed
 * already (returned FERRY_OK: one queued from a copy while the endpoint was connecting) is not
 * pending: it still reaches the peer, then the close, if the connection comes up and lives on
 * (tcp and shm: over shm the closed endpoint finishes the handshake, posts them and the close
 * from later progress of the worker); it is lost only when the peer dies or the worker is
 * destroyed first.
 */
#define FERRY_EP_CLOSE_FORCE 1u

/**
 * @brief Close an endpoint.
 *
 * Graceful by default: messages already handed to the transport (active messages, eager
 * tagged messages, RTS) are delivered, then the peer is told; comp completes when that is done.
 * A rendezvous still moving data and one-sided operations still in flight are ended with
 * FERRY_ERR_ENDPOINT_CLOSED: wait for their completions (or ferry_ep_flush()) before closing.
 * With FERRY_EP_CLOSE_FORCE it closes at once. The handle stays valid (every operation on it
 * returns FERRY_ERR_ENDPOINT_CLOSED) until ferry_ep_destroy().
 *
 * A forced close while a graceful one is under way completes the graceful close's comp with
 * FERRY_ERR_CANCELED.
 *
 * @param ep the endpoint
 * @param flags 0 or FERRY_EP_CLOSE_FORCE
 * @param comp completes when a graceful close is done; may be NULL
 * @retval FERRY_OK closed now (or the endpoint was closed or failed already)
 * @retval FERRY_INPROGRESS closing; comp completes when done
 * @retval FERRY_ERR_BUSY a graceful close is under way already (FERRY_EP_CLOSE_FORCE ends it)
 * @retval FERRY_ERR_INVALID_PARAM ep is NULL, or unknown flags
 */
ferry_status_t ferry_ep_close(ferry_ep_t *ep, unsigned flags, ferry_completion_t *comp);

/**
 * @brief Force-close (if still open) and free an endpoint created with ferry_ep_create().
 * @param ep the endpoint; NULL is ignored
 */
void ferry_ep_destroy(ferry_ep_t *ep);

/**
 * @brief Name of the transport the endpoint uses.
 * @param ep the endpoint
 * @return "self", "shm", "tcp", ...: a static string ("none" for NULL)
 */
const char *ferry_ep_transport_name(const ferry_ep_t *ep);

/**
 * @brief The identity of the worker at the other end (the same for every endpoint to it).
 *
 * Works on created and accepted endpoints alike, also in the endpoint's error callback.
 *
 * @param ep the endpoint
 * @param[out] id_p the peer worker's id
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 */
ferry_status_t ferry_ep_peer_id(const ferry_ep_t *ep, ferry_peer_id_t *id_p);

/** @brief What ferry_ep_query() reports about an endpoint. */
typedef struct ferry_ep_attr {
    ferry_peer_id_t peer;  /**< the peer worker's identity (ferry_ep_peer_id()) */
    const char *transport; /**< the transport's name (static) */
    int connected;         /**< 1 once the connection is established */
    ferry_status_t status; /**< FERRY_OK while the endpoint is usable, else why not */
    /** Inject bound of active messages: ferry_am_send() of a header + payload of at most this
     *  many bytes returns FERRY_OK (buffers reusable) or FERRY_ERR_NO_RESOURCE (or an error),
     *  never FERRY_INPROGRESS. */
    size_t am_inject_max;
    /** Inject bound of tagged messages: ferry_tag_send() (and ferry_tag_send_ext() without
     *  FERRY_TAG_SEND_SYNC) of at most this many bytes returns FERRY_OK or
     *  FERRY_ERR_NO_RESOURCE (or an error), never FERRY_INPROGRESS. */
    size_t tag_inject_max;
} ferry_ep_attr_t;

/**
 * @brief Report the endpoint's peer, transport, connection state and inject bounds.
 * @param ep the endpoint
 * @param[out] attr filled on success
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 */
ferry_status_t ferry_ep_query(const ferry_ep_t *ep, ferry_ep_attr_t *attr);

/**
 * @brief Progress the endpoint's worker until the endpoint is connected, failed, or timeout_ms
 *        passed.
 *
 * Endpoints need no waiting (operations issued while connecting are queued); this is for the
 * calls that need the connection itself (ferry_rkey_ptr(), ferry_rsegment_map()), which answer
 * FERRY_ERR_NOT_CONNECTED before it, and for programs that want to know. Callbacks of the
 * worker run inside (it calls ferry_worker_wait()).
 *
 * @param ep the endpoint
 * @param timeout_ms how long to wait at most; < 0: no limit
 * @retval FERRY_OK connected
 * @retval FERRY_ERR_TIMED_OUT not connected within timeout_ms
 * @retval FERRY_ERR_INVALID_PARAM ep is NULL
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed
 * @retval FERRY_ERR_CONNECTION_REFUSED the peer refused the connection or is gone
 * @retval FERRY_ERR_CONNECTION_RESET the connection failed
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT (tcp) the connection could not be made in time
 * @retval FERRY_ERR_PROTOCOL the peer broke the protocol
 * @retval FERRY_ERR_IO the worker's epoll set failed (logged)
 */
ferry_status_t ferry_ep_wait_connected(ferry_ep_t *ep, int timeout_ms);

/** @} */

/**
 * @defgroup ferry_api_am Active messages
 * @brief Messages of any size that run a handler at the receiver, in order per endpoint.
 * @{
 */

/** @brief Handler ids 0 .. FERRY_AM_ID_MAX-1 belong to the user (ferry keeps others for
 *         itself). */
#define FERRY_AM_ID_MAX 128
/** @brief The largest header ferry_am_send() carries. */
#define FERRY_AM_HEADER_MAX 256

/** @brief ferry_am_recv_params_t flag: the handler may keep data by returning
 *         FERRY_INPROGRESS. */
#define FERRY_AM_RECV_KEEPABLE 1u

/** @brief What a handler learns besides the message. */
typedef struct ferry_am_recv_params {
    /** An endpoint to the sender, owned by the worker, usable for replies until the sender
     *  closes it (its accepted_ep_error_cb then runs) or the worker is destroyed. */
    ferry_ep_t *reply_ep;
    unsigned flags;       /**< FERRY_AM_RECV_KEEPABLE */
    ferry_peer_id_t peer; /**< the sender's worker id (ferry_ep_peer_id() of reply_ep) */
} ferry_am_recv_params_t;

/**
 * @brief Active-message handler; runs inside ferry_worker_progress().
 *
 * header and data are valid during the call and have no alignment guarantee (copy them into a
 * struct, do not cast).
 *
 * @param arg the argument given to ferry_am_set_handler()
 * @param header the sender's header (header_length bytes)
 * @param header_length its length, 0 .. FERRY_AM_HEADER_MAX
 * @param data the payload; may be NULL for a 0-byte message
 * @param length the payload's length
 * @param params the reply endpoint and flags
 * @retval FERRY_OK ferry may reuse data
 * @retval FERRY_INPROGRESS (only when params->flags has FERRY_AM_RECV_KEEPABLE) the handler
 *                          keeps data and frees it later with ferry_am_data_release()
 */
typedef ferry_status_t (*ferry_am_handler_cb_t)(void *arg, const void *header, size_t header_length,
                                                void *data, size_t length,
                                                const ferry_am_recv_params_t *params);

/**
 * @brief Set (cb != NULL) or clear (cb == NULL) the handler of an active-message id.
 * @param worker the worker whose messages the handler receives
 * @param id the handler id, 0 .. FERRY_AM_ID_MAX-1
 * @param cb the handler; NULL clears it
 * @param arg passed to cb
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM worker is NULL, or id >= FERRY_AM_ID_MAX
 */
ferry_status_t ferry_am_set_handler(ferry_worker_t *worker, unsigned id, ferry_am_handler_cb_t cb,
                                    void *arg);

/**
 * @brief Send an active message: a header and the payload gathered from iov.
 *
 * Messages from one endpoint arrive in the order sent. The payload may be any size the
 * receiver can allocate.
 *
 * @param ep the endpoint to the receiver
 * @param id the receiver's handler id, 0 .. FERRY_AM_ID_MAX-1
 * @param[in] header 0 .. FERRY_AM_HEADER_MAX bytes, copied before return
 * @param header_length its length
 * @param[in] iov the payload's pieces; the caller's until the send completed
 * @param iovcnt the number of pieces
 * @param comp completes when the payload buffers may be reused; may be NULL (see
 *             @ref ferry_api_completion)
 * @retval FERRY_OK sent; buffers reusable
 * @retval FERRY_INPROGRESS comp completes when the payload buffers may be reused
 * @retval FERRY_ERR_NO_RESOURCE nothing sent; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep NULL, id out of range, header too long, header NULL with
 *                                 a length, iov NULL with iovcnt > 0, a NULL piece with a length
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_am_send(ferry_ep_t *ep, unsigned id, const void *header, size_t header_length,
                             const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp);

/**
 * @brief Release data a handler kept (it returned FERRY_INPROGRESS).
 * @param worker the worker that ran the handler; NULL is ignored
 * @param data the data pointer the handler received; NULL is ignored
 */
void ferry_am_data_release(ferry_worker_t *worker, void *data);

/** @} */

/**
 * @defgroup ferry_api_mem Memory and remote keys
 * @brief Register memory for remote access, and pack, unpack and release the keys peers use.
 * @{
 */

/** @brief Opaque: a registration of memory for remote access. */
typedef struct ferry_mem ferry_mem_t;
/** @brief Opaque: an unpacked key to a peer's registration. */
typedef struct ferry_rkey ferry_rkey_t;

/** @brief Access granted to peers: read (the access argument of ferry_mem_register(), or the
 *         flags of ferry_mem_alloc()). */
#define FERRY_ACCESS_REMOTE_READ 0x1u
/** @brief Access granted to peers: write. */
#define FERRY_ACCESS_REMOTE_WRITE 0x2u
/** @brief Access granted to peers: atomics. */
#define FERRY_ACCESS_REMOTE_ATOMIC 0x4u
/** @brief Access granted to peers: read, write and atomics. */
#define FERRY_ACCESS_ALL 0x7u

/** @brief Registration flag: the region may be used for exactly one remote operation, then it
 *         is invalid (a key of it then gets FERRY_ERR_ACCESS), like a KNEM single-use region. */
#define FERRY_MEM_SINGLE_USE 0x100u

/**
 * @brief Register memory for remote access.
 *
 * The iovcnt pieces of iov, in order, form one region of their total length; peers address it
 * by offset (0 .. length-1) through a key packed with ferry_rkey_pack(). Nothing outside these
 * pieces, and no access not granted, can be reached. Registering the same pieces with the same
 * access and flags again is cheap (a cache returns the same registration with a reference
 * count; each register needs its own deregister).
 *
 * @param context the context
 * @param[in] iov the pieces; the memory stays the caller's and must stay valid until
 *                ferry_mem_deregister()
 * @param iovcnt the number of pieces, 1 .. FERRY_MEM_IOV_MAX
 * @param access FERRY_ACCESS_* bits granted to peers
 * @param flags 0 or FERRY_MEM_SINGLE_USE
 * @param[out] mem_p on success, the registration: release it with ferry_mem_deregister()
 * @retval FERRY_OK registered
 * @retval FERRY_ERR_INVALID_PARAM NULL, iovcnt 0 or > FERRY_MEM_IOV_MAX, unknown access bits or
 *                                 flags, a NULL piece with a length, a total length beyond
 *                                 64 bits
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_LIMIT too many registrations (FERRY_MEM_MAX_REGIONS)
 */
ferry_status_t ferry_mem_register(ferry_context_t *context, const ferry_iov_t *iov, size_t iovcnt,
                                  unsigned access, unsigned flags, ferry_mem_t **mem_p);

/** @brief The most pieces one registration may have (iovcnt of ferry_mem_register()). */
#define FERRY_MEM_IOV_MAX 1024

/**
 * @brief Drop one reference to a registration.
 *
 * The last one invalidates every key of the region (operations that start afterwards fail with
 * FERRY_ERR_ACCESS; do not deregister while peers may still be writing). For memory from
 * ferry_mem_alloc() the memory is freed.
 *
 * @param mem the registration
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM mem is NULL
 */
ferry_status_t ferry_mem_deregister(ferry_mem_t *mem);

/**
 * @brief Allocate registered memory backed by a memfd, which peers on this host map.
 *
 * Peers on this host reach it with ferry_rkey_ptr() (load/store, CPU atomics).
 *
 * @param context the context
 * @param size bytes to allocate
 * @param flags FERRY_ACCESS_* | FERRY_MEM_SINGLE_USE
 * @param[out] mem_p on success, the registration; ferry_mem_deregister(*mem_p) frees the memory
 * @param[out] ptr_p on success, the memory: page-aligned and zeroed
 * @retval FERRY_OK allocated
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument, size 0 or unknown flags
 * @retval FERRY_ERR_SHMEM memfd or mmap failed
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_LIMIT too many registrations (FERRY_MEM_MAX_REGIONS)
 */
ferry_status_t ferry_mem_alloc(ferry_context_t *context, size_t size, unsigned flags,
                               ferry_mem_t **mem_p, void **ptr_p);

/**
 * @brief Total length of a registration.
 * @param mem the registration
 * @return its length in bytes (0 for NULL)
 */
size_t ferry_mem_length(const ferry_mem_t *mem);

/**
 * @brief Pack a key that lets a peer reach mem.
 *
 * The key is versioned and carries no pointer: it names the registration, which its owner
 * checks. Pass its bytes to the peer by any means.
 *
 * What a key protects: each registration has a secret of 64 random bits (getrandom), drawn
 * when it is registered and kept by its owner; the key carries it, and every check of a key
 * (by the target, or by a local peer in the owner's key table before it reads or writes)
 * compares it in constant time. A key that was not packed from this registration (made up,
 * edited, or left from an earlier registration of the same slot) is refused with
 * FERRY_ERR_ACCESS and the endpoint stays usable; a guessed key matches a given registration
 * with probability 2^-64 per try. Only the access it was registered with is granted, within
 * its length. This guards against other hosts (tcp), other users, and mistakes (a stale or
 * wrong key). It does not guard against processes of the same user on this host: they can
 * read the owner's key table, and any of its memory (cross-memory attach, ptrace), anyway.
 * Whoever holds a key holds the access: hand keys only to peers you trust with that memory.
 *
 * @param mem the registration
 * @param[out] buffer_p on success, the packed key: free it with ferry_rkey_buffer_release()
 * @param[out] length_p its length in bytes
 * @retval FERRY_OK packed
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument, or mem was deregistered
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_rkey_pack(ferry_mem_t *mem, void **buffer_p, size_t *length_p);

/**
 * @brief Free a buffer from ferry_rkey_pack().
 * @param buffer the packed key; NULL is ignored
 */
void ferry_rkey_buffer_release(void *buffer);

/**
 * @brief Unpack a key received from the peer that ep leads to.
 * @param ep the endpoint to the key's owner
 * @param[in] buffer the packed key; read during the call
 * @param length its length
 * @param[out] rkey_p on success, the key: release it with ferry_rkey_release()
 * @retval FERRY_OK unpacked
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 * @retval FERRY_ERR_INVALID_ADDRESS truncated, corrupted, wrong magic or version
 * @retval FERRY_ERR_ACCESS the key belongs to another process than ep's peer
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_rkey_unpack(ferry_ep_t *ep, const void *buffer, size_t length,
                                 ferry_rkey_t **rkey_p);

/**
 * @brief Release an unpacked key (before its endpoint is destroyed).
 * @param rkey the key; NULL is ignored
 */
void ferry_rkey_release(ferry_rkey_t *rkey);

/**
 * @brief A local pointer to a peer's memory, for direct load/store.
 *
 * Only for memory from the peer's ferry_mem_alloc(), on this host, once the endpoint is
 * connected (ferry_ep_wait_connected()).
 *
 * @param rkey the key
 * @param remote_offset the offset in the peer's region
 * @param[out] local_ptr_p on success, the address of that byte in this process
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 * @retval FERRY_ERR_NOT_CONNECTED the endpoint is still connecting: progress (or
 *                                 ferry_ep_wait_connected()) and retry
 * @retval FERRY_ERR_UNSUPPORTED not mapped memory, or another host
 * @retval FERRY_ERR_ACCESS offset beyond the region, or the owner has no such registration
 *                          (deregistered, or a key whose secret does not match)
 * @retval FERRY_ERR_CONNECTION_RESET the owner has exited (its endpoint fails on the next
 *                                    progress)
 * @retval other before the first mapping, the error of the key's endpoint once it closed or
 *               failed
 */
ferry_status_t ferry_rkey_ptr(ferry_rkey_t *rkey, uint64_t remote_offset, void **local_ptr_p);

/** @} */

/**
 * @defgroup ferry_api_rma One-sided operations
 * @brief Put, get, their scatter/gather forms and atomics on a peer's registered memory;
 *        fence and flush.
 *
 * Local completion (the local buffer is reusable) is reported by the completion model
 * (@ref ferry_api_completion); remote completion (the operation took effect in the peer's
 * memory) by ferry_ep_flush().
 * @{
 */

/** @brief A range of the remote region: offset and length. */
typedef struct ferry_remote_iov {
    uint64_t offset; /**< from the start of the remote region */
    size_t length;   /**< bytes */
} ferry_remote_iov_t;

/**
 * @brief Write length bytes from buffer into the peer's region at remote_offset.
 *
 * An error found by the target completes the operation with FERRY_ERR_ACCESS and the endpoint
 * stays usable.
 *
 * @param ep the endpoint to the region's owner
 * @param[in] buffer the data; the caller's until the put completed locally
 * @param length bytes to write
 * @param remote_offset where in the remote region
 * @param rkey the key of the remote region (unpacked on ep)
 * @param comp local completion; may be NULL (see @ref ferry_api_completion)
 * @retval FERRY_OK done; buffer reusable
 * @retval FERRY_INPROGRESS started; comp completes when buffer is reusable
 * @retval FERRY_ERR_NO_RESOURCE not started; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep or rkey NULL, rkey unpacked on another endpoint, buffer
 *                                 NULL with a length
 * @retval FERRY_ERR_ACCESS outside the region, offset + length overflowing, access not granted,
 *                          key released, region deregistered or single-use region used up
 *                          (never touches memory)
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_put(ferry_ep_t *ep, const void *buffer, size_t length, uint64_t remote_offset,
                         ferry_rkey_t *rkey, ferry_completion_t *comp);

/**
 * @brief Read length bytes from the peer's region at remote_offset into buffer.
 *
 * An error found by the target completes the operation with FERRY_ERR_ACCESS and the endpoint
 * stays usable.
 *
 * @param ep the endpoint to the region's owner
 * @param[out] buffer receives the data; the caller's until the get completed
 * @param length bytes to read
 * @param remote_offset where in the remote region
 * @param rkey the key of the remote region (unpacked on ep)
 * @param comp completion; may be NULL (see @ref ferry_api_completion)
 * @retval FERRY_OK done; the data is in buffer
 * @retval FERRY_INPROGRESS started; comp completes when the data is in buffer
 * @retval FERRY_ERR_NO_RESOURCE not started; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep or rkey NULL, rkey unpacked on another endpoint, buffer
 *                                 NULL with a length
 * @retval FERRY_ERR_ACCESS outside the region, offset + length overflowing, access not granted,
 *                          key released, region deregistered or single-use region used up
 *                          (never touches memory)
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_get(ferry_ep_t *ep, void *buffer, size_t length, uint64_t remote_offset,
                         ferry_rkey_t *rkey, ferry_completion_t *comp);

/**
 * @brief Scatter/gather put: the local pieces, in order, are written to the remote ranges, in
 *        order.
 * @param ep the endpoint to the region's owner
 * @param[in] iov the local pieces; the caller's until the put completed locally
 * @param iovcnt the number of local pieces
 * @param[in] remote the remote ranges (read during the call); they cover the same total length
 *                   as iov
 * @param remote_count the number of remote ranges
 * @param rkey the key of the remote region (unpacked on ep)
 * @param comp local completion; may be NULL
 * @retval FERRY_OK done; buffers reusable
 * @retval FERRY_INPROGRESS started; comp completes when the buffers are reusable
 * @retval FERRY_ERR_NO_RESOURCE not started; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep or rkey NULL, rkey unpacked on another endpoint, a list
 *                                 NULL with a count, a NULL piece with a length, the lists'
 *                                 total lengths differ or overflow
 * @retval FERRY_ERR_ACCESS as ferry_put(), for any range
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_putv(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                          const ferry_remote_iov_t *remote, size_t remote_count, ferry_rkey_t *rkey,
                          ferry_completion_t *comp);

/**
 * @brief Scatter/gather get: the remote ranges, in order, are read into the local pieces, in
 *        order.
 * @param ep the endpoint to the region's owner
 * @param[in] iov the local pieces that receive the data; the caller's until the get completed
 * @param iovcnt the number of local pieces
 * @param[in] remote the remote ranges (read during the call); they cover the same total length
 *                   as iov
 * @param remote_count the number of remote ranges
 * @param rkey the key of the remote region (unpacked on ep)
 * @param comp completion; may be NULL
 * @retval FERRY_OK done; the data is in the pieces
 * @retval FERRY_INPROGRESS started; comp completes when the data is in the pieces
 * @retval FERRY_ERR_NO_RESOURCE not started; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep or rkey NULL, rkey unpacked on another endpoint, a list
 *                                 NULL with a count, a NULL piece with a length, the lists'
 *                                 total lengths differ or overflow
 * @retval FERRY_ERR_ACCESS as ferry_get(), for any range
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_getv(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                          const ferry_remote_iov_t *remote, size_t remote_count, ferry_rkey_t *rkey,
                          ferry_completion_t *comp);

/** @brief Atomic operations of ferry_atomic_post() and ferry_atomic_fetch(). */
typedef enum ferry_atomic_op {
    FERRY_ATOMIC_ADD,   /**< post or fetch: *remote += value */
    FERRY_ATOMIC_AND,   /**< post: *remote &= value */
    FERRY_ATOMIC_OR,    /**< post: *remote |= value */
    FERRY_ATOMIC_XOR,   /**< post: *remote ^= value */
    FERRY_ATOMIC_SWAP,  /**< fetch: *remote = value, result = old */
    FERRY_ATOMIC_CSWAP, /**< fetch: if *remote == compare then *remote = value; result = old */
} ferry_atomic_op_t;

/**
 * @brief Atomic update of a remote word, without a result.
 *
 * Atomic with respect to every other ferry atomic and every CPU atomic on that word (the
 * target's progress, or a local peer through a mapping, uses the CPU's atomic instructions).
 *
 * @param ep the endpoint to the region's owner
 * @param op FERRY_ATOMIC_ADD, _AND, _OR or _XOR
 * @param value the operand
 * @param size 4 or 8: the word's size in bytes
 * @param remote_offset the word's offset in the remote region (naturally aligned)
 * @param rkey the key of the remote region (unpacked on ep)
 * @param comp completion; may be NULL
 * @retval FERRY_OK done
 * @retval FERRY_INPROGRESS started; comp completes when done locally
 * @retval FERRY_ERR_NO_RESOURCE not started; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep or rkey NULL, rkey unpacked on another endpoint, a size
 *                                 other than 4 or 8, an op that does not post, or a misaligned
 *                                 offset
 * @retval FERRY_ERR_ACCESS as ferry_put() (atomic access)
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_atomic_post(ferry_ep_t *ep, ferry_atomic_op_t op, uint64_t value, size_t size,
                                 uint64_t remote_offset, ferry_rkey_t *rkey,
                                 ferry_completion_t *comp);

/**
 * @brief Atomic update of a remote word, returning its old value.
 *
 * Atomic as ferry_atomic_post().
 *
 * @param ep the endpoint to the region's owner
 * @param op FERRY_ATOMIC_ADD (fetch-add), FERRY_ATOMIC_SWAP or FERRY_ATOMIC_CSWAP
 * @param value the operand
 * @param compare CSWAP: the value expected in the word; ignored otherwise
 * @param size 4 or 8: the word's size in bytes
 * @param remote_offset the word's offset in the remote region (naturally aligned)
 * @param rkey the key of the remote region (unpacked on ep)
 * @param[out] result the old value, written before completion
 * @param comp completion; may be NULL
 * @retval FERRY_OK done; *result holds the old value
 * @retval FERRY_INPROGRESS started; comp completes when *result is written
 * @retval FERRY_ERR_NO_RESOURCE not started; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep, rkey or result NULL, rkey unpacked on another endpoint, a
 *                                 size other than 4 or 8, an op that does not fetch, or a
 *                                 misaligned offset
 * @retval FERRY_ERR_ACCESS as ferry_put() (atomic access)
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_atomic_fetch(ferry_ep_t *ep, ferry_atomic_op_t op, uint64_t value,
                                  uint64_t compare, size_t size, uint64_t remote_offset,
                                  ferry_rkey_t *rkey, uint64_t *result, ferry_completion_t *comp);

/**
 * @brief Order: one-sided operations issued on ep after the fence take effect after those
 *        issued before it.
 * @param ep the endpoint
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM ep is NULL
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 * @retval FERRY_ERR_NO_MEMORY the endpoint failed: its connection could not allocate what it needed
 */
ferry_status_t ferry_ep_fence(ferry_ep_t *ep);

/**
 * @brief Remote completion: comp completes when every one-sided operation issued on ep before
 *        the call has taken effect at the target.
 * @param ep the endpoint
 * @param comp required: completes when they have taken effect
 * @retval FERRY_OK every such operation has taken effect already (comp untouched)
 * @retval FERRY_INPROGRESS comp completes when they have
 * @retval FERRY_ERR_INVALID_PARAM ep or comp is NULL
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_ep_flush(ferry_ep_t *ep, ferry_completion_t *comp);

/**
 * @brief ferry_ep_flush() for every endpoint of the worker: comp completes when every one-sided
 *        operation issued on the worker before the call has taken effect at its target.
 * @param worker the worker
 * @param comp required: completes when they have taken effect
 * @retval FERRY_OK every such operation has taken effect already (comp untouched)
 * @retval FERRY_INPROGRESS comp completes when they have
 * @retval FERRY_ERR_INVALID_PARAM worker or comp is NULL
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_worker_flush(ferry_worker_t *worker, ferry_completion_t *comp);

/** @} */

/**
 * @defgroup ferry_api_tag Tagged messages
 * @brief Messages matched by 64-bit tag and mask: eager for small messages, rendezvous for
 *        large ones; probe and cancel.
 * @{
 */

/** ferry_tag_info_t.flags: the message carries immediate data (imm is valid). */
#define FERRY_TAG_INFO_IMM 1u
/** ferry_tag_info_t.flags: a synchronous send: its sender learns of the match. */
#define FERRY_TAG_INFO_SYNC 2u

/** @brief What a tagged receive or probe learned about the message. */
typedef struct ferry_tag_info {
    ferry_ep_t *sender;   /**< endpoint to the sender (owned by the worker, as reply_ep of AMs);
                               NULL for an eager message that waited in the unexpected queue
                               while its endpoint was closed and freed */
    uint64_t tag;         /**< the sender's tag */
    size_t length;        /**< the message's real length (more than the buffer if truncated) */
    ferry_peer_id_t peer; /**< the sender's worker id (valid even when sender is NULL) */
    uint64_t imm;         /**< the immediate data (FERRY_TAG_INFO_IMM), else 0 */
    unsigned flags;       /**< FERRY_TAG_INFO_IMM, FERRY_TAG_INFO_SYNC */
} ferry_tag_info_t;

/** ferry_tag_send_params_t.flags: send params->imm with the message. */
#define FERRY_TAG_SEND_IMM 1u
/** ferry_tag_send_params_t.flags: synchronous: the send completes only once the receiver matched
 *  the message (MPI_Ssend). */
#define FERRY_TAG_SEND_SYNC 2u

/** @brief Options of ferry_tag_send_ext(). */
typedef struct ferry_tag_send_params {
    unsigned flags; /**< FERRY_TAG_SEND_IMM, FERRY_TAG_SEND_SYNC; 0: a plain ferry_tag_send() */
    uint64_t imm;   /**< with FERRY_TAG_SEND_IMM: 64 bits the receiver's info (and a probe)
                         reports as imm before the message is received (an MPI layer puts its
                         source rank and communicator there) */
} ferry_tag_send_params_t;

/** @brief Opaque: a message taken out of the unexpected queue by ferry_tag_probe() (like
 *         MPI_Improbe). */
typedef struct ferry_tag_message ferry_tag_message_t;

/**
 * @brief Send a tagged message of any length, gathered from iov.
 *
 * Small messages are copied out at once (eager); large ones use rendezvous and move once, from
 * this buffer into the receiver's (FERRY_RNDV_MODE: get, put, coop, null, split; chosen per
 * transport and size by default). Messages from one endpoint match in the order they were
 * sent. A send in progress completes with the endpoint's error if the peer dies.
 *
 * @param ep the endpoint to the receiver
 * @param[in] iov the message's pieces; the caller's until the completion
 * @param iovcnt the number of pieces
 * @param tag the message's tag
 * @param comp completes when the buffers may be reused; may be NULL
 * @retval FERRY_OK sent; buffers reusable. The message may still need this worker's progress
 *                  to reach the receiver: one within tag_inject_max (ferry_ep_attr_t) that goes
 *                  by rendezvous (the receiver's back-pressure, FERRY_RNDV_THRESH) waits for
 *                  the receiver's CTS. Keep progressing, or sleep on the worker's fd
 *                  (ferry_worker_wait(), ferry_worker_arm()), which the CTS wakes.
 * @retval FERRY_INPROGRESS comp completes when the buffers may be reused
 * @retval FERRY_ERR_NO_RESOURCE nothing sent; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM ep NULL, iov NULL with iovcnt > 0, a NULL piece with a length
 * @retval FERRY_ERR_NO_MEMORY out of memory (here, or in the endpoint's connection, which then
 *                            failed)
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or is
 * gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_tag_send(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt, uint64_t tag,
                              ferry_completion_t *comp);

/**
 * @brief ferry_tag_send() with options: immediate data, synchronous completion.
 *
 * With FERRY_TAG_SEND_SYNC the send completes only after the receiver matched the message
 * (a receive took it, or ferry_tag_message_recv() received it after a probe), whatever its
 * size; a receive that was cancelled never matched it. A receiver that never posts a receive
 * keeps the send pending; if the endpoint fails first, the send completes with its error.
 *
 * @param ep the endpoint to the receiver
 * @param[in] iov the message's pieces; the caller's until the completion
 * @param iovcnt the number of pieces
 * @param tag the message's tag
 * @param[in] params the options; may be NULL (ferry_tag_send())
 * @param comp completes when the buffers may be reused (SYNC: and the message matched);
 *             required with FERRY_TAG_SEND_SYNC, else may be NULL
 * @retval FERRY_OK sent; buffers reusable (never with FERRY_TAG_SEND_SYNC)
 * @retval FERRY_INPROGRESS comp completes later
 * @retval FERRY_ERR_NO_RESOURCE nothing sent; progress and retry
 * @retval FERRY_ERR_INVALID_PARAM as ferry_tag_send(); unknown flags; SYNC without comp
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_CONNECTION_REFUSED the endpoint failed: the peer refused the connection or
 * is gone
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 * @retval FERRY_ERR_PROTOCOL the endpoint failed: the peer broke the protocol
 */
ferry_status_t ferry_tag_send_ext(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                                  uint64_t tag, const ferry_tag_send_params_t *params,
                                  ferry_completion_t *comp);

/**
 * @brief Post a receive for the first message whose tag matches: (msg_tag & tag_mask) ==
 *        (tag & tag_mask).
 *
 * A message longer than the buffers completes with FERRY_ERR_MESSAGE_TRUNCATED: the buffers
 * receive its first bytes, nothing is written past them, info->length says the real length,
 * and the next message is unaffected. A receive matched to a rendezvous whose sender dies
 * completes with that endpoint's error (FERRY_ERR_CONNECTION_RESET); with FERRY_ERR_PROTOCOL if
 * the sender broke the protocol.
 *
 * @param worker the worker
 * @param[out] iov the buffers that receive the message; the caller's until the completion
 * @param iovcnt the number of buffers
 * @param tag the tag to match
 * @param tag_mask the bits of tag that must match
 * @param[out] info filled before the completion; may be NULL
 * @param comp required: completes when the message is in the buffers; it also names the
 *             receive for ferry_tag_recv_cancel()
 * @retval FERRY_OK an unexpected message was already there and is delivered (comp untouched)
 * @retval FERRY_INPROGRESS posted; comp completes with the result
 * @retval FERRY_ERR_MESSAGE_TRUNCATED delivered now, truncated (comp untouched)
 * @retval FERRY_ERR_INVALID_PARAM worker or comp NULL, iov NULL with iovcnt > 0, a NULL piece
 *                                 with a length
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_tag_recv(ferry_worker_t *worker, const ferry_iov_t *iov, size_t iovcnt,
                              uint64_t tag, uint64_t tag_mask, ferry_tag_info_t *info,
                              ferry_completion_t *comp);

/**
 * @brief ferry_tag_recv() of a message from one source only (MPI's directed receive).
 *
 * MPI's rules hold: messages from one sending endpoint match in the order they were sent,
 * whether the receives posted for them name the source or not, and receives (directed or any
 * source) take messages in the order they were posted. A source that is not (yet) connected
 * is fine: the receive waits for it, and can be cancelled.
 *
 * @param worker the worker
 * @param source the sender's worker id (ferry_ep_peer_id()), or FERRY_PEER_ANY
 * @param[out] iov the buffers that receive the message; the caller's until the completion
 * @param iovcnt the number of buffers
 * @param tag the tag to match
 * @param tag_mask the bits of tag that must match
 * @param[out] info filled before the completion; may be NULL
 * @param comp required: completes when the message is in the buffers; it also names the
 *             receive for ferry_tag_recv_cancel()
 * @retval FERRY_OK an unexpected message was already there and is delivered (comp untouched)
 * @retval FERRY_INPROGRESS posted; comp completes with the result
 * @retval FERRY_ERR_MESSAGE_TRUNCATED delivered now, truncated (comp untouched)
 * @retval FERRY_ERR_INVALID_PARAM worker or comp NULL, iov NULL with iovcnt > 0, a NULL piece
 *                                 with a length
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_tag_recv_from(ferry_worker_t *worker, ferry_peer_id_t source,
                                   const ferry_iov_t *iov, size_t iovcnt, uint64_t tag,
                                   uint64_t tag_mask, ferry_tag_info_t *info,
                                   ferry_completion_t *comp);

/**
 * @brief Look for an unexpected message matching (tag, tag_mask) without receiving it.
 * @param worker the worker
 * @param tag the tag to match
 * @param tag_mask the bits of tag that must match
 * @param remove nonzero: take the message out of the queue into *message_p
 * @param[out] info filled when a message is found; may be NULL
 * @param[out] message_p with remove: the message, to pass to ferry_tag_message_recv()
 * @retval FERRY_OK found (info filled)
 * @retval FERRY_ERR_NO_ELEM none yet
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument (message_p with remove)
 */
ferry_status_t ferry_tag_probe(ferry_worker_t *worker, uint64_t tag, uint64_t tag_mask, int remove,
                               ferry_tag_info_t *info, ferry_tag_message_t **message_p);

/**
 * @brief ferry_tag_probe() of messages from one source only.
 * @param worker the worker
 * @param source the sender's worker id, or FERRY_PEER_ANY
 * @param tag the tag to match
 * @param tag_mask the bits of tag that must match
 * @param remove nonzero: take the message out of the queue into *message_p
 * @param[out] info filled when a message is found (with its imm); may be NULL
 * @param[out] message_p with remove: the message, to pass to ferry_tag_message_recv()
 * @retval FERRY_OK found (info filled)
 * @retval FERRY_ERR_NO_ELEM none yet
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument (message_p with remove)
 */
ferry_status_t ferry_tag_probe_from(ferry_worker_t *worker, ferry_peer_id_t source, uint64_t tag,
                                    uint64_t tag_mask, int remove, ferry_tag_info_t *info,
                                    ferry_tag_message_t **message_p);

/**
 * @brief Receive a message taken by ferry_tag_probe() with remove.
 * @param worker the worker
 * @param message the message from ferry_tag_probe(); consumed by this call
 * @param[out] iov the buffers; the caller's until the completion
 * @param iovcnt the number of buffers
 * @param[out] info filled before the completion; may be NULL
 * @param comp required: completes when the message is in the buffers
 * @retval FERRY_OK delivered (comp untouched)
 * @retval FERRY_INPROGRESS comp completes with the result
 * @retval FERRY_ERR_MESSAGE_TRUNCATED delivered now, truncated (comp untouched)
 * @retval FERRY_ERR_INVALID_PARAM worker, message or comp NULL, iov NULL with iovcnt > 0, a NULL
 *                                 piece with a length, or message is not one taken by
 *                                 ferry_tag_probe() with remove and not received yet
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_tag_message_recv(ferry_worker_t *worker, ferry_tag_message_t *message,
                                      const ferry_iov_t *iov, size_t iovcnt, ferry_tag_info_t *info,
                                      ferry_completion_t *comp);

/**
 * @brief Cancel a posted receive that has not matched yet: it completes with
 *        FERRY_ERR_CANCELED.
 * @param worker the worker
 * @param comp the completion the receive was posted with
 * @retval FERRY_OK canceled
 * @retval FERRY_ERR_NO_ELEM no such receive, or it matched already and will complete normally
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument
 */
ferry_status_t ferry_tag_recv_cancel(ferry_worker_t *worker, ferry_completion_t *comp);

/** @} */

/**
 * @defgroup ferry_api_segment Named segments
 * @brief Memory published on a worker under a numeric id; peers connect by (endpoint, id),
 *        map it on the same host, notify its owner.
 *
 * A segment is memory published on a worker under a numeric id (the model of reflective-memory
 * interconnects such as Dolphin SISCI). A peer connects knowing only an endpoint to the owner
 * and the id, learns the size, and then maps it (same host: plain loads and stores) or moves
 * data with DMA-style transfer queues (anywhere, @ref ferry_api_dma). The owner is told who
 * connected and who left.
 *
 * Local life cycle: NOT PREPARED --prepare--> PREPARED --set_available--> AVAILABLE
 * <--set_unavailable / set_available--> UNAVAILABLE. Every other step returns
 * FERRY_ERR_ILLEGAL_STATE (there is no un-prepare). ferry_segment_remove() is legal in any
 * state: the id is unpublished at once (connects then get FERRY_ERR_NO_ELEM), connected peers
 * keep their access and the memory lives until the last of them disconnected; the handle stays
 * valid (its calls return FERRY_ERR_REMOVED) until ferry_segment_release().
 *
 * Events reach the callback given at creation, from inside ferry_worker_progress(); with a NULL
 * callback they are queued for ferry_segment_wait_event() / ferry_rsegment_wait_event()
 * instead. Segments belong to their worker: ferry_worker_destroy() releases those still there.
 * @{
 */

/** @brief Opaque: a local segment (the owner's handle). */
typedef struct ferry_segment ferry_segment_t;
/** @brief Opaque: a connection to a peer's segment (the importer's handle). */
typedef struct ferry_rsegment ferry_rsegment_t;

/** @brief ferry_segment_create() segment_id: let ferry choose an unused id (from
 *         FERRY_SEGMENT_AUTO_ID_BASE upwards); read it with ferry_segment_id(). Not a valid id
 *         otherwise. */
#define FERRY_SEGMENT_AUTO_ID 0xffffffffu
/** @brief The first id ferry chooses for FERRY_SEGMENT_AUTO_ID. */
#define FERRY_SEGMENT_AUTO_ID_BASE 0x80000000u
/** @brief The most data one notification carries. */
#define FERRY_SEGMENT_NOTIFY_MAX 64u

/** @brief The kinds of segment events. */
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

/** @brief One event, passed by value: nothing in it needs to be freed. */
typedef struct ferry_segment_event {
    ferry_segment_event_type_t type; /**< what happened */
    ferry_status_t status;           /**< the result (see the event types) */
    /** owner: the endpoint to the peer (owned by the worker; in DISCONNECT it may already be
     *  freed: compare it, do not use it); importer: the rsegment's endpoint */
    ferry_ep_t *ep;
    uint64_t connection; /**< owner: id of the connection (the same in CONNECT, NOTIFY and
                              DISCONNECT of one peer's connection); importer: 0 */
    size_t length;       /**< NOTIFY: bytes of data */
    uint8_t data[FERRY_SEGMENT_NOTIFY_MAX]; /**< NOTIFY: a copy of the peer's data */
} ferry_segment_event_t;

/**
 * @brief An owner's segment callback; runs inside ferry_worker_progress().
 * @param arg the argument given at creation
 * @param segment the segment
 * @param event CONNECT, DISCONNECT or NOTIFY; valid during the call
 */
typedef void (*ferry_segment_cb_t)(void *arg, ferry_segment_t *segment,
                                   const ferry_segment_event_t *event);

/**
 * @brief An importer's remote-segment callback; runs inside ferry_worker_progress().
 * @param arg the argument given to ferry_rsegment_connect()
 * @param rsegment the remote segment
 * @param event CONNECTED or LOST; valid during the call
 */
typedef void (*ferry_rsegment_cb_t)(void *arg, ferry_rsegment_t *rsegment,
                                    const ferry_segment_event_t *event);

/**
 * @brief Create a local segment of memory ferry allocates.
 *
 * The memory comes from ferry_mem_alloc(): zeroed, page-aligned, a memfd that peers on this
 * host map; access read, write, atomic. The segment starts NOT PREPARED.
 *
 * @param worker the worker that publishes it
 * @param segment_id an id unique on this worker, or FERRY_SEGMENT_AUTO_ID
 * @param size bytes (> 0)
 * @param flags 0 (reserved)
 * @param callback sees CONNECT, DISCONNECT and NOTIFY events; may be NULL: use
 *                 ferry_segment_wait_event()
 * @param arg passed to callback
 * @param[out] segment_p on success, the segment: free it with ferry_segment_release()
 * @retval FERRY_OK created
 * @retval FERRY_ERR_INVALID_PARAM NULL, size 0, unknown flags
 * @retval FERRY_ERR_ALREADY_EXISTS segment_id is taken on this worker
 * @retval FERRY_ERR_LIMIT no automatic id left, or too many registrations
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_SHMEM memfd or mmap failed
 */
ferry_status_t ferry_segment_create(ferry_worker_t *worker, uint32_t segment_id, size_t size,
                                    unsigned flags, ferry_segment_cb_t callback, void *arg,
                                    ferry_segment_t **segment_p);

/**
 * @brief Create a local segment on memory the caller registered.
 *
 * mem comes from ferry_mem_register() or ferry_mem_alloc(), not single use: the segment is the
 * whole registration, with the access it grants. ferry holds a reference on mem until the
 * segment is released and its last peer disconnected; the memory itself stays the caller's and
 * must stay valid that long (ferry_segment_connections() says when no peer is left). Only
 * ferry_mem_alloc() memory can be mapped by peers.
 *
 * @param worker the worker that publishes it
 * @param segment_id an id unique on this worker, or FERRY_SEGMENT_AUTO_ID
 * @param mem the registration
 * @param flags 0 (reserved)
 * @param callback as ferry_segment_create(); may be NULL
 * @param arg passed to callback
 * @param[out] segment_p on success, the segment: free it with ferry_segment_release()
 * @retval FERRY_OK created
 * @retval FERRY_ERR_INVALID_PARAM NULL, unknown flags, a single-use or empty registration
 * @retval FERRY_ERR_ALREADY_EXISTS segment_id is taken on this worker
 * @retval FERRY_ERR_LIMIT no automatic id left
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_segment_create_from_mem(ferry_worker_t *worker, uint32_t segment_id,
                                             ferry_mem_t *mem, unsigned flags,
                                             ferry_segment_cb_t callback, void *arg,
                                             ferry_segment_t **segment_p);

/**
 * @brief NOT PREPARED -> PREPARED: make the segment reachable through the worker's transports
 *        (its key is packed).
 * @param segment the segment
 * @param flags 0 (reserved)
 * @retval FERRY_OK prepared
 * @retval FERRY_ERR_INVALID_PARAM NULL or unknown flags
 * @retval FERRY_ERR_ILLEGAL_STATE already prepared
 * @retval FERRY_ERR_REMOVED the segment was removed
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_segment_prepare(ferry_segment_t *segment, unsigned flags);

/**
 * @brief PREPARED or UNAVAILABLE -> AVAILABLE: peers may connect.
 * @param segment the segment
 * @retval FERRY_OK available
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_ILLEGAL_STATE not prepared, or already available
 * @retval FERRY_ERR_REMOVED the segment was removed
 */
ferry_status_t ferry_segment_set_available(ferry_segment_t *segment);

/**
 * @brief AVAILABLE -> UNAVAILABLE: new connects are refused with FERRY_ERR_NOT_AVAILABLE;
 *        connected peers keep their access.
 * @param segment the segment
 * @retval FERRY_OK unavailable
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_ILLEGAL_STATE not available
 * @retval FERRY_ERR_REMOVED the segment was removed
 */
ferry_status_t ferry_segment_set_unavailable(ferry_segment_t *segment);

/**
 * @brief Remove the segment, in any state: its id is free at once.
 *
 * Connects then get FERRY_ERR_NO_ELEM, and a new segment may take the id. Connected peers keep
 * their access; the memory (and the reference on a caller's registration) is released when the
 * last of them disconnected, or now if none is connected. DISCONNECT events still reach the
 * callback. The handle stays valid for ferry_segment_id(), ferry_segment_connections(),
 * ferry_segment_wait_event() and ferry_segment_release(); other calls return FERRY_ERR_REMOVED
 * (ptr: NULL, size: 0).
 *
 * @param segment the segment
 * @retval FERRY_OK removed
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_REMOVED removed already
 */
ferry_status_t ferry_segment_remove(ferry_segment_t *segment);

/**
 * @brief Remove (if not yet) and free the handle: no more events.
 *
 * The memory still lives until the last connected peer disconnected.
 *
 * @param segment the segment; NULL is ignored
 */
void ferry_segment_release(ferry_segment_t *segment);

/**
 * @brief The owner's pointer to the segment's memory.
 * @param segment the segment
 * @return the memory; NULL for NULL or a removed segment
 */
void *ferry_segment_ptr(const ferry_segment_t *segment);

/**
 * @brief The segment's size in bytes.
 * @param segment the segment
 * @return the size; 0 for NULL or a removed segment
 */
size_t ferry_segment_size(const ferry_segment_t *segment);

/**
 * @brief The segment's id (also after removal).
 * @param segment the segment
 * @return the id; FERRY_SEGMENT_AUTO_ID for NULL
 */
uint32_t ferry_segment_id(const ferry_segment_t *segment);

/**
 * @brief How many peers are connected now (also after removal).
 * @param segment the segment
 * @return the number of connected peers
 */
unsigned ferry_segment_connections(const ferry_segment_t *segment);

/**
 * @brief Make progress until an event of a segment created without a callback is there, or
 *        timeout_ms passed.
 * @param segment the segment
 * @param timeout_ms the limit in milliseconds; -1: no limit, 0: look once
 * @param[out] event_p receives the oldest event (events are kept in arrival order)
 * @retval FERRY_OK *event_p holds an event
 * @retval FERRY_ERR_TIMED_OUT no event within timeout_ms
 * @retval FERRY_ERR_INVALID_PARAM NULL, or the segment has a callback
 * @retval FERRY_ERR_IO the wait failed (the log names the call)
 */
ferry_status_t ferry_segment_wait_event(ferry_segment_t *segment, int timeout_ms,
                                        ferry_segment_event_t *event_p);

/** @brief ferry_rsegment_connect() flag: return FERRY_INPROGRESS at once; the callback (or
 *         ferry_rsegment_wait_event()) gets a CONNECTED event with the result. */
#define FERRY_RSEGMENT_CONNECT_ASYNC 1u

/**
 * @brief Connect to segment segment_id of the worker ep leads to.
 *
 * Synchronous by default: makes progress on ep's worker until the owner answered or timeout_ms
 * passed. With FERRY_RSEGMENT_CONNECT_ASYNC the call returns FERRY_INPROGRESS with *rsegment_p
 * set (state connecting); the result comes as a CONNECTED event (status: one of those below)
 * and, after a failed one, the handle must still be freed with ferry_rsegment_disconnect();
 * timeout_ms is then checked by ferry_worker_progress(). A reply that arrives after a timeout
 * is answered with a disconnect (the owner sees CONNECT and DISCONNECT).
 *
 * @param ep the endpoint to the owner
 * @param segment_id the owner's id of the segment (not FERRY_SEGMENT_AUTO_ID)
 * @param timeout_ms the limit in milliseconds; -1: no limit
 * @param flags 0 or FERRY_RSEGMENT_CONNECT_ASYNC
 * @param callback sees CONNECTED and LOST; may be NULL
 * @param arg passed to callback
 * @param[out] rsegment_p the remote segment: free it with ferry_rsegment_disconnect()
 * @retval FERRY_OK connected
 * @retval FERRY_INPROGRESS (FERRY_RSEGMENT_CONNECT_ASYNC) connecting
 * @retval FERRY_ERR_INVALID_PARAM NULL, unknown flags, the automatic id
 * @retval FERRY_ERR_NO_ELEM the owner has no segment of that id, or it was removed
 * @retval FERRY_ERR_NOT_AVAILABLE not prepared, or not available
 * @retval FERRY_ERR_CONNECTION_REFUSED the owner could not accept (see its log), or the
 *                                      endpoint failed: the peer refused the connection or is
 *                                      gone
 * @retval FERRY_ERR_TIMED_OUT no answer within timeout_ms
 * @retval FERRY_ERR_NO_MEMORY out of memory (here or in the endpoint's connection)
 * @retval FERRY_ERR_PROTOCOL the owner's answer was malformed, or the endpoint failed: the peer
 *                            broke the protocol
 * @retval FERRY_ERR_ENDPOINT_CLOSED the endpoint was closed (locally or by the peer)
 * @retval FERRY_ERR_CONNECTION_RESET the endpoint failed: the peer died or the link failed
 * @retval FERRY_ERR_ENDPOINT_TIMEOUT the endpoint failed: (tcp) the peer stopped answering
 */
ferry_status_t ferry_rsegment_connect(ferry_ep_t *ep, uint32_t segment_id, int timeout_ms,
                                      unsigned flags, ferry_rsegment_cb_t callback, void *arg,
                                      ferry_rsegment_t **rsegment_p);

/**
 * @brief Size of a connected remote segment.
 * @param rsegment the remote segment
 * @return the size in bytes; 0 while connecting, after a failed connect, or for NULL
 */
size_t ferry_rsegment_size(const ferry_rsegment_t *rsegment);

/**
 * @brief The state of a remote segment.
 * @param rsegment the remote segment
 * @retval FERRY_OK connected
 * @retval FERRY_INPROGRESS an asynchronous connect is under way
 * @retval FERRY_ERR_INVALID_PARAM rsegment is NULL
 * @retval other the error that ended it (connect failure, or the LOST status)
 */
ferry_status_t ferry_rsegment_status(const ferry_rsegment_t *rsegment);

/**
 * @brief Disconnect and free the handle (also after LOST or a failed asynchronous connect):
 *        the owner gets DISCONNECT.
 * @param rsegment the remote segment
 * @retval FERRY_OK disconnected and freed
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_BUSY a map or a DMA queue of it still exists: unmap / destroy them first
 *                        (nothing changed)
 * @retval FERRY_ERR_NO_RESOURCE the disconnect message found no room: progress and retry
 */
ferry_status_t ferry_rsegment_disconnect(ferry_rsegment_t *rsegment);

/** @brief ferry_rsegment_map() flag: a read-only view (a store through it faults). */
#define FERRY_RSEGMENT_MAP_READONLY 1u

/**
 * @brief Map [offset, offset + size) of a remote segment on this host.
 *
 * Plain loads and stores reach the owner's memory (see ferry_rsegment_store_barrier()). The
 * mapping stays valid after LOST (the memory is the owner's memfd).
 *
 * @param rsegment the remote segment
 * @param offset the first byte
 * @param size bytes (> 0)
 * @param flags 0 or FERRY_RSEGMENT_MAP_READONLY
 * @param[out] ptr_p points at byte offset of the owner's memory: release it with
 *                   ferry_rsegment_unmap()
 * @retval FERRY_OK mapped
 * @retval FERRY_ERR_INVALID_PARAM NULL, size 0, unknown flags
 * @retval FERRY_ERR_OUT_OF_RANGE beyond the segment, or offset + size overflows
 * @retval FERRY_ERR_UNSUPPORTED the owner is on another host, or the segment is not memory from
 *                               ferry_mem_alloc()
 * @retval FERRY_ERR_ACCESS a writable map of memory the owner grants no write
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_SHMEM mmap failed
 * @retval FERRY_ERR_NOT_AVAILABLE an asynchronous connect is still under way
 * @retval other the error that ended the remote segment (a failed connect, or the LOST status:
 *               see ferry_rsegment_status())
 */
ferry_status_t ferry_rsegment_map(ferry_rsegment_t *rsegment, uint64_t offset, size_t size,
                                  unsigned flags, void **ptr_p);

/**
 * @brief Release a map.
 * @param rsegment the remote segment
 * @param ptr as returned by ferry_rsegment_map()
 * @retval FERRY_OK unmapped
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_NO_ELEM ptr is not a map of this rsegment
 */
ferry_status_t ferry_rsegment_unmap(ferry_rsegment_t *rsegment, void *ptr);

/**
 * @brief Store barrier: stores made through maps before the call are visible to the owner and
 *        to other peers before any store made after it (a full memory fence).
 * @param rsegment the remote segment
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_NOT_AVAILABLE an asynchronous connect is still under way
 * @retval other the error that ended the remote segment (a failed connect, or the LOST status:
 *               see ferry_rsegment_status())
 */
ferry_status_t ferry_rsegment_store_barrier(ferry_rsegment_t *rsegment);

/**
 * @brief Notify the owner: its callback (or ferry_segment_wait_event()) gets a NOTIFY event
 *        with a copy of data.
 *
 * An active message: works on every transport, and arrives after everything sent earlier on
 * the endpoint.
 *
 * @param rsegment the remote segment
 * @param[in] data the bytes to send; may be NULL when length is 0
 * @param length 0 .. FERRY_SEGMENT_NOTIFY_MAX
 * @retval FERRY_OK sent; data reusable
 * @retval FERRY_ERR_INVALID_PARAM NULL, data NULL with a length, or length too large
 * @retval FERRY_ERR_NO_RESOURCE progress and retry
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_NOT_AVAILABLE an asynchronous connect is still under way
 * @retval other the error that ended the remote segment (a failed connect, or the LOST status:
 *               see ferry_rsegment_status())
 */
ferry_status_t ferry_rsegment_notify(ferry_rsegment_t *rsegment, const void *data, size_t length);

/**
 * @brief As ferry_segment_wait_event(), for the CONNECTED and LOST events of a remote segment
 *        created without a callback.
 * @param rsegment the remote segment
 * @param timeout_ms the limit in milliseconds; -1: no limit, 0: look once
 * @param[out] event_p receives the oldest event
 * @retval FERRY_OK *event_p holds an event
 * @retval FERRY_ERR_TIMED_OUT no event within timeout_ms
 * @retval FERRY_ERR_INVALID_PARAM NULL, or the remote segment has a callback
 * @retval FERRY_ERR_IO the wait failed (the log names the call)
 */
ferry_status_t ferry_rsegment_wait_event(ferry_rsegment_t *rsegment, int timeout_ms,
                                         ferry_segment_event_t *event_p);

/** @} */

/**
 * @defgroup ferry_api_dma DMA-style transfer queues
 * @brief Queues of transfers between local buffers and a remote segment.
 *
 * Post entries, start, and learn completion by callback, by ferry_dma_state(), or with
 * ferry_dma_wait(). ferry_dma_start() returns at once; the data moves from inside
 * ferry_worker_progress(), at most FERRY_SEGMENT_DMA_CHUNK bytes per progress call (ferry_put()
 * / ferry_get(): on the same host memcpy through the mapping or cross-memory attach, else the
 * target's progress), so the application runs between progress calls. A queue is complete when
 * every write is in the owner's memory.
 *
 * With FERRY_SEGMENT_COPY_THREADS=n > 0, a queue on memory of a peer on this host that is mapped
 * here (ferry_mem_alloc()) is copied by n threads of the worker instead (started by the first
 * such queue, joined by ferry_worker_destroy(); large entries are split across them), and
 * progress only reports the end: callbacks still run inside ferry_worker_progress(), and
 * ferry_dma_wait() sleeps until the threads are done. Other queues are unchanged.
 * @{
 */

/** @brief Opaque: a DMA-style transfer queue on one remote segment. */
typedef struct ferry_dma_queue ferry_dma_queue_t;

#define FERRY_DMA_WRITE 1u /**< direction: local buffer -> remote segment */
#define FERRY_DMA_READ 2u  /**< direction: remote segment -> local buffer */

/** @brief One transfer of a queue. */
typedef struct ferry_dma_entry {
    void *local;            /**< the local buffer (WRITE: read from; READ: written to) */
    uint64_t remote_offset; /**< where in the remote segment */
    size_t length;          /**< bytes (0 is allowed and moves nothing) */
    unsigned direction;     /**< FERRY_DMA_WRITE or FERRY_DMA_READ */
} ferry_dma_entry_t;

/** @brief The state of a queue (ferry_dma_state()). */
typedef enum ferry_dma_state {
    FERRY_DMA_IDLE = 0,    /**< entries may be posted; never started, or finished and reset */
    FERRY_DMA_RUNNING = 1, /**< started, not finished (also while aborting) */
    FERRY_DMA_DONE = 2,    /**< finished: every entry moved */
    FERRY_DMA_FAILED = 3,  /**< finished with an error (ferry_dma_state's status), or aborted
                                (FERRY_ERR_CANCELED); entries may have moved partly */
} ferry_dma_state_t;

/**
 * @brief Called once per start, from inside ferry_worker_progress().
 * @param arg the argument given to ferry_dma_start()
 * @param queue the queue
 * @param status FERRY_OK or the error
 */
typedef void (*ferry_dma_cb_t)(void *arg, ferry_dma_queue_t *queue, ferry_status_t status);

/**
 * @brief Create an empty queue on a connected remote segment.
 * @param rsegment the remote segment
 * @param[out] queue_p on success, the queue: free it with ferry_dma_destroy()
 * @retval FERRY_OK created
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_NOT_AVAILABLE an asynchronous connect is still under way
 * @retval other the error that ended the remote segment (a failed connect, or the LOST status:
 *               see ferry_rsegment_status())
 */
ferry_status_t ferry_dma_create(ferry_rsegment_t *rsegment, ferry_dma_queue_t **queue_p);

/**
 * @brief Append entries to a queue.
 *
 * Posting to a DONE or FAILED queue starts a new list. All entries are checked first; on an
 * error none is appended.
 *
 * @param queue the queue
 * @param[in] entries the entries, copied; the buffers they point to stay the caller's until the
 *                    queue finished
 * @param count the number of entries
 * @retval FERRY_OK appended
 * @retval FERRY_ERR_INVALID_PARAM NULL, a NULL buffer with a length, an unknown direction
 * @retval FERRY_ERR_OUT_OF_RANGE an entry past the end of the segment, or whose offset + length
 *                                overflows
 * @retval FERRY_ERR_BUSY the queue is running
 * @retval FERRY_ERR_NO_MEMORY out of memory
 */
ferry_status_t ferry_dma_post(ferry_dma_queue_t *queue, const ferry_dma_entry_t *entries,
                              size_t count);

/**
 * @brief Start the posted entries (in order; entries may overlap in time).
 * @param queue the queue
 * @param callback called once when the queue finished; may be NULL
 * @param arg passed to callback
 * @retval FERRY_INPROGRESS started: callback, ferry_dma_state() or ferry_dma_wait() tell the end
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_BUSY the queue is running
 * @retval FERRY_ERR_NO_ELEM no entry posted (since the queue was created or last finished)
 * @retval FERRY_ERR_NOT_AVAILABLE an asynchronous connect is still under way
 * @retval other the error that ended the remote segment (a failed connect, or the LOST status:
 *               see ferry_rsegment_status())
 */
ferry_status_t ferry_dma_start(ferry_dma_queue_t *queue, ferry_dma_cb_t callback, void *arg);

/**
 * @brief The queue's state.
 * @param queue the queue
 * @param[out] status_p receives FERRY_OK, FERRY_INPROGRESS (running) or the error of a FAILED
 *                      queue (FERRY_ERR_INVALID_PARAM for a NULL queue); may be NULL
 * @return the state (FERRY_DMA_FAILED for a NULL queue)
 */
ferry_dma_state_t ferry_dma_state(const ferry_dma_queue_t *queue, ferry_status_t *status_p);

/**
 * @brief Make progress until the queue finished or timeout_ms passed.
 * @param queue the queue
 * @param timeout_ms the limit in milliseconds; -1: no limit
 * @retval FERRY_OK the queue finished: every entry moved
 * @retval FERRY_ERR_TIMED_OUT still running after timeout_ms
 * @retval FERRY_ERR_INVALID_PARAM NULL or not started
 * @retval FERRY_ERR_IO the wait failed (the log names the call)
 * @retval other the error the queue failed with (FERRY_ERR_CANCELED after ferry_dma_abort())
 */
ferry_status_t ferry_dma_wait(ferry_dma_queue_t *queue, int timeout_ms);

/**
 * @brief Stop a running queue: no further entry starts; it finishes with FERRY_ERR_CANCELED
 *        once those under way completed (callback as usual).
 * @param queue the queue
 * @retval FERRY_OK aborting
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_ILLEGAL_STATE not running
 */
ferry_status_t ferry_dma_abort(ferry_dma_queue_t *queue);

/**
 * @brief Free a queue that is not running.
 * @param queue the queue
 * @retval FERRY_OK freed
 * @retval FERRY_ERR_INVALID_PARAM NULL
 * @retval FERRY_ERR_BUSY running: abort and wait first
 */
ferry_status_t ferry_dma_destroy(ferry_dma_queue_t *queue);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
