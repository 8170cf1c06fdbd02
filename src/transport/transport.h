/*
 * The transport contract: the whole of what a transport sees of ferry, and all that ferry sees
 * of a transport (the shape of MPICH's Nemesis netmod API and of nng's sp/transport.h).
 *
 * A transport is one folder under src/transport/ that fills one fy_tl_ops_t and is listed once
 * in transport_list.c. It includes this header and src/core/ (and src/mem/ for registrations and
 * keys), nothing from src/proto/, src/wireup/ or src/progress/: ferry_worker_t and ferry_ep_t are
 * opaque handles to it.
 *
 * Downward (fy_tl_ops_t): what the layers above call. Every slot states whether it may block,
 * who owns buffers, which statuses it returns and whether it may be NULL.
 *
 * Upward (the functions declared at the end): the only calls a transport makes into ferry.
 * They are implemented by the engine (progress/: deferred calls, descriptors, delivery to
 * active-message handlers) and by the endpoint layer (wireup/: endpoint events). A transport
 * makes them from its poll slot, from its fd callbacks (both run by the worker's progress), or
 * where a downward slot's contract says so; never from inside a send that the caller is still
 * in (completions go through the deferred queue).
 *
 * Threading: every slot is called by the thread that progresses the worker, never
 * concurrently.
 */
#ifndef FY_TRANSPORT_H
#define FY_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>
#include <ferry/info.h>

#include "core/completion.h"
#include "core/config.h"
#include "core/host_id.h"
#include "core/list.h"

typedef struct fy_tl_worker fy_tl_worker_t; /* a transport's per-worker state */
typedef struct fy_tl_ep fy_tl_ep_t;         /* a transport's per-endpoint state */

/* ------------------------------------------------------------------------------------------
 * Capabilities */

/* The public FERRY_TRANSPORT_CAP_* bits (include/ferry/info.h) are the one list; these are
 * the names the layers inside use. */
#define FY_TL_CAP_AM FERRY_TRANSPORT_CAP_AM
#define FY_TL_CAP_AM_ORDERED FERRY_TRANSPORT_CAP_AM_ORDERED
#define FY_TL_CAP_SAME_HOST FERRY_TRANSPORT_CAP_SAME_HOST
#define FY_TL_CAP_SAME_WORKER FERRY_TRANSPORT_CAP_SAME_WORKER
#define FY_TL_CAP_RMA FERRY_TRANSPORT_CAP_RMA
#define FY_TL_CAP_RMA_ORDERED FERRY_TRANSPORT_CAP_RMA_ORDERED
#define FY_TL_CAP_CMA FERRY_TRANSPORT_CAP_CMA /* set by ep_init, per endpoint */
#define FY_TL_CAP_STREAM FERRY_TRANSPORT_CAP_STREAM

typedef struct fy_tl_caps {
    unsigned flags;       /* FY_TL_CAP_* */
    size_t max_short;     /* largest header + payload sent inline (one cell, no buffer) */
    size_t max_bcopy;     /* largest header + payload copied through one buffer */
    size_t header_apart;  /* a header of up to this many bytes travels beside the buffer (shm:
                           * in the ring cell): then max_bcopy bytes of payload fit one buffer,
                           * at its start; 0: the header takes room in the buffer */
    size_t max_iov;       /* largest iovcnt accepted by sendv */
    size_t max_placed;    /* a payload of more than max_bcopy - header and up to this many bytes
                           * is received in pieces straight into the handler's placement
                           * (fy_am_place) when it gives one, one copy out of the transport's
                           * buffers; 0: never placed (a private buffer, then the handler's copy) */
    double latency_ns;    /* one-way latency estimate of a small message */
    double bandwidth_Bps; /* large-message bandwidth estimate */
} fy_tl_caps_t;

/* ------------------------------------------------------------------------------------------
 * What a transport is told about its worker and its peers */

/* Who a peer worker is: from its address (ep_init, reachable) or its handshake (accepted). */
typedef struct fy_tl_peer {
    uint64_t worker_uuid;
    fy_host_id_t host;
    uint32_t pid;
} fy_tl_peer_t;

/* This worker, as its transports see it. Owned by the worker; valid until finalize. */
typedef struct fy_tl_local {
    uint64_t worker_uuid;
    fy_host_id_t host;
    fy_tl_caps_t caps; /* what the transport's query reported */
    int keytable_fd;   /* memfd of the context's key table (shm hands it to local peers) */
    const fy_config_set_t *config; /* the context's settings: read tunables with
                                    * fy_config_*_in(local->config, &var) */
    uint32_t *poll_skip; /* the worker's poll-skip word: a transport sets its poll_bit there
                          * while it has nothing to poll, and clears it when it has */
    uint32_t poll_bit;   /* this transport's bit in *poll_skip */
    const unsigned *progress_calls; /* the worker's count of progress calls, raised at the start
                                     * of each: unchanged, the application has not had control
                                     * since (the worker may poll a transport more than once in
                                     * one call, through its fd set) */
    const void *address; /* the worker's whole address (every transport's record); written
                          * after every init returned, before any endpoint exists */
    size_t address_length;
} fy_tl_local_t;

/* What a transport carries in a compact worker address (wireup/address.h: the fixed 64-byte
 * form), beside the worker id, the host digest and the pid that every compact address has.
 * The fields are fixed: the compact form has no room for records. A transport that fills a
 * field sets its flag; compact_record reads only the fields whose flag is set. */
#define FY_TL_COMPACT_SHM 0x01u /* uid valid; the shm socket is named from the worker id */
#define FY_TL_COMPACT_TCP 0x02u /* ip_family, port and ip valid */
#define FY_TL_COMPACT_FLAGS (FY_TL_COMPACT_SHM | FY_TL_COMPACT_TCP)

typedef struct fy_tl_compact {
    uint8_t flags;     /* FY_TL_COMPACT_*: which fields below are filled */
    uint32_t uid;      /* shm: the worker's uid (only the same user is reached) */
    uint8_t ip_family; /* tcp: 4 or 6 */
    uint16_t port;     /* tcp: the listening port (not 0) */
    uint8_t ip[16];    /* tcp: the address another host reaches (IPv4: the first 4 bytes) */
} fy_tl_compact_t;

/* A one-sided operation, already checked against the key by the caller (range within the
 * key's length, no overflow, access granted by the key, atomic alignment and size). The arrays
 * stay valid only during the call: a transport that queues the operation copies what it
 * needs. */
typedef enum fy_rma_kind {
    FY_RMA_PUT,
    FY_RMA_GET,
    FY_RMA_ATOMIC_POST,
    FY_RMA_ATOMIC_FETCH,
} fy_rma_kind_t;

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

/* ------------------------------------------------------------------------------------------
 * What send_short counts */

/* The active messages a transport's send_short sent on one endpoint and counted in that
 * endpoint's own memory (the am_sent slot): every kind (the application's ids and ferry's
 * own; the layer above counts its own part apart), bytes of payload, the header not
 * included. */
typedef struct fy_tl_am_sent {
    uint64_t messages;
    uint64_t bytes;
} fy_tl_am_sent_t;

/* ------------------------------------------------------------------------------------------
 * Downward: the ops table */

typedef struct fy_tl_ops {
    const char *name; /* "self", "shm": what FERRY_TRANSPORTS names */
    uint8_t id;       /* stable record id in worker addresses; never reused */

    /* Is the transport usable here, and what can it do, with these settings (a context's;
     * NULL: the environment's)? No side effects (it may probe the kernel), never blocks.
     * Returns FERRY_OK with *caps filled, or FERRY_ERR_UNSUPPORTED with why (a sentence that
     * says what is missing and how to fix it) written into why[why_len]. Not NULL. */
    ferry_status_t (*query)(const fy_config_set_t *config, fy_tl_caps_t *caps, char *why,
                            size_t why_len);

    /* Create the transport's part of a worker: its descriptors go into the worker's epoll
     * set (fy_worker_fd_add). local stays valid until finalize. May make system calls. Returns
     * FERRY_OK, FERRY_ERR_NO_MEMORY, FERRY_ERR_IO, FERRY_ERR_SHMEM (logged by the transport).
     * Not NULL. */
    ferry_status_t (*init)(ferry_worker_t *worker, const fy_tl_local_t *local,
                           fy_tl_worker_t **tlw_p);

    /* Destroy the per-worker state. All its endpoints were destroyed before. Never fails.
     * Not NULL. */
    void (*finalize)(fy_tl_worker_t *tlw);

    /* Write this transport's address record (at most *length_p bytes) into buffer and set
     * *length_p to the bytes used. Returns FERRY_OK or FERRY_ERR_OUT_OF_RANGE (too small).
     * Not NULL. */
    ferry_status_t (*address)(fy_tl_worker_t *tlw, void *buffer, size_t *length_p);

    /* Put what a peer needs to reach this worker through this transport into the compact
     * form: set the fields this transport owns (fy_tl_compact_t) and its flag. Called once
     * per worker, after every init returned. Pure (no I/O), never fails. May be NULL: the
     * transport needs nothing beyond the worker id, host digest and pid (self). */
    void (*compact_fill)(fy_tl_worker_t *tlw, fy_tl_compact_t *compact);

    /* Rebuild, from a peer's compact address, the record of this transport that the peer's
     * full address would hold (or one that reaches the same listener): at most *length_p
     * bytes into buffer, *length_p set to the bytes used. peer is who the compact form names
     * (its host: this worker's own when the digests match, else a host identity that matches
     * none). The fields were checked by the compact parser (flags, families, port not 0).
     * Returns FERRY_OK, FERRY_ERR_NO_ELEM (the compact form carries nothing of this
     * transport: the peer did not enable it), FERRY_ERR_OUT_OF_RANGE (buffer too small).
     * Pure; logs nothing. May be NULL: the transport cannot be reached from a compact
     * address. */
    ferry_status_t (*compact_record)(const fy_tl_peer_t *peer, const fy_tl_compact_t *compact,
                                     void *buffer, size_t *length_p);

    /* Can this worker reach the peer through this transport? record is the peer's record of
     * this transport (its length already checked against the address, its contents not yet).
     * Pure: no I/O. Not NULL. */
    bool (*reachable)(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer, const void *record,
                      size_t record_length);

    /* Explain a record of this transport (the peer's, or this worker's own) for people
     * (ferry_address_record_decode): one line of text into text[text_len]; and, when tlw is
     * not NULL, whether this worker reaches it (*reachable_p: what reachable() answers) and,
     * when not, why (why[why_len]: what differs, and the fix when there is one). Returns
     * FERRY_OK, FERRY_ERR_INVALID_ADDRESS (the record is malformed: text says how; with a
     * tlw, *reachable_p is false and why says the same). Pure; logs nothing. Not NULL. */
    ferry_status_t (*record_describe)(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer,
                                      const void *record, size_t record_length, char *text,
                                      size_t text_len, bool *reachable_p, char *why,
                                      size_t why_len);

    /* The same record for programs (ferry_address_record_decode): up to max named fields
     * (lower-case keys; numbers in decimal), the number filled returned; 0 for a malformed
     * record. Pure; logs nothing. May be NULL (the record holds nothing worth a field). */
    size_t (*record_fields)(const void *record, size_t record_length, ferry_info_field_t *fields,
                            size_t max);

    /* Start a connection to the peer for ep. Never blocks: the handshake finishes from
     * progress; sends issued before are queued. *caps_p holds the transport's capabilities
     * (query): the transport adjusts them for this peer (FY_TL_CAP_CMA). It calls
     * fy_ep_connected(ep) when the handshake is over (from progress; self: before it returns).
     * Returns FERRY_OK,
     * FERRY_ERR_CONNECTION_REFUSED (the peer is gone), FERRY_ERR_INVALID_ADDRESS (bad record),
     * FERRY_ERR_NO_MEMORY, FERRY_ERR_NO_RESOURCE (peer's backlog full: retry), FERRY_ERR_IO,
     * FERRY_ERR_SHMEM (each logged by the transport). Not NULL. */
    ferry_status_t (*ep_init)(fy_tl_worker_t *tlw, ferry_ep_t *ep, const fy_tl_peer_t *peer,
                              const void *record, size_t record_length, fy_tl_caps_t *caps_p,
                              fy_tl_ep_t **tlep_p);

    /* Graceful close: sends already accepted finish, then the peer is told. Returns FERRY_OK
     * (done now) or FERRY_INPROGRESS (the transport calls fy_ep_terminated(ep) from progress
     * when done). Never blocks. Not NULL. */
    ferry_status_t (*ep_terminate)(fy_tl_ep_t *tlep);

    /* Immediate teardown and free: pending sends complete with FERRY_ERR_CANCELED (their
     * completions run from the worker's deferred queue). Sends that completed already (queued
     * from a copy, FERRY_OK returned) are not pending: the transport still delivers them, and
     * then tells the peer, if the connection comes up (it keeps what it needs for that past
     * this call, without the ferry_ep_t). After it returns the transport calls nothing for
     * this endpoint. Never blocks, never fails. Not NULL. */
    void (*ep_destroy)(fy_tl_ep_t *tlep);

    /* Fast path: one active message whose header + payload (contiguous) fit in max_short.
     * No system call unless the peer armed, no malloc, no lock. Buffers are the caller's and
     * reusable on return. When the fast path cannot take it (still connecting, earlier sends
     * queued), the transport queues a copy itself, in order. Returns FERRY_OK (sent or
     * copied), FERRY_ERR_NO_RESOURCE (queue full: nothing sent; retry after progress),
     * FERRY_ERR_NO_MEMORY, FERRY_ERR_ENDPOINT_CLOSED, FERRY_ERR_CONNECTION_RESET. It counts
     * what it returns, so that the caller can return its status at once (a tail call): a
     * message taken, of any id, in the endpoint itself (two plain adds, read through the
     * am_sent slot) or with fy_ep_am_count_short, any other status with
     * fy_ep_am_count_short. May be NULL: sendv takes every message. */
    ferry_status_t (*send_short)(fy_tl_ep_t *tlep, uint8_t id, const void *header,
                                 size_t header_length, const void *payload, size_t length);

    /* Any active message (header <= FERRY_AM_HEADER_MAX, payload gathered from iov, iovcnt <=
     * max_iov). The header and the iov array are copied; the payload buffers stay the
     * caller's until the send completes. Returns FERRY_OK (all copied out), FERRY_INPROGRESS
     * (comp, if not NULL, is updated from progress when the payload buffers are free again;
     * the message is queued in order behind earlier ones), FERRY_ERR_NO_RESOURCE (small
     * message, queue full: nothing sent), FERRY_ERR_NO_MEMORY, FERRY_ERR_ENDPOINT_CLOSED,
     * FERRY_ERR_CONNECTION_RESET. Not NULL. */
    ferry_status_t (*sendv)(fy_tl_ep_t *tlep, uint8_t id, const void *header, size_t header_length,
                            const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp);

    /* The counts send_short keeps in tlep itself, into *sent_p; asked for when the endpoint's
     * counters are read and once more just before ep_destroy. Never fails. May be NULL:
     * send_short counts every message with fy_ep_am_count_short. */
    void (*am_sent)(const fy_tl_ep_t *tlep, fy_tl_am_sent_t *sent_p);

    /* One-sided operation performed by the initiator alone (shm: a direct store into mapped
     * memory, or cross-memory attach), already checked against the key by the caller. May
     * make system calls; never waits for the peer. The op's arrays are valid only during the
     * call (copy them to queue). Returns FERRY_OK (done, and remotely complete),
     * FERRY_INPROGRESS (op->comp is updated from progress when the data is in place),
     * FERRY_ERR_UNSUPPORTED (not for this key or peer: the caller uses the target-executed
     * protocol), FERRY_ERR_ACCESS (the owner's key table says the region was deregistered or
     * its single use is spent), FERRY_ERR_NO_RESOURCE. May be NULL (no FY_TL_CAP_RMA): every
     * one-sided operation goes through the target-executed protocol. */
    ferry_status_t (*rma)(fy_tl_ep_t *tlep, const fy_rma_op_t *op);

    /* Map memory of the peer's ferry_mem_alloc (the key has MEM_FLAG_ALLOC) for direct
     * load/store: sets rkey->mapped and rkey->mapped_size (ferry_rkey_release unmaps). May make
     * system calls. Returns FERRY_OK, FERRY_ERR_ACCESS (the owner has no such registration
     * with the key's secret), FERRY_ERR_NO_RESOURCE (not connected yet),
     * FERRY_ERR_CONNECTION_RESET (the owner has exited; tried again on the next call) or
     * FERRY_ERR_UNSUPPORTED (another host, or the memory cannot be opened here: the reason is
     * logged at info level). May be NULL (nothing can be mapped: ferry_rkey_ptr answers
     * FERRY_ERR_UNSUPPORTED). */
    ferry_status_t (*rkey_map)(fy_tl_ep_t *tlep, ferry_rkey_t *rkey);

    /* Copy length bytes at address remote_address of the peer's process into the local
     * pieces (count of them, together at least length bytes; the caller's, only during the
     * call), by cross-memory attach, without a key: for memory the peer itself pointed to
     * (a tagged rendezvous of one contiguous buffer). May block for the copy (system calls);
     * never waits for the peer. Returns FERRY_OK, FERRY_ERR_ACCESS (the range is not mapped
     * readable in the peer), FERRY_ERR_CONNECTION_RESET (the peer has exited) or
     * FERRY_ERR_UNSUPPORTED (not connected, cross-memory attach is off or denied: logged at
     * info level once per endpoint). May be NULL (only keyed one-sided access). */
    ferry_status_t (*ep_peer_read)(fy_tl_ep_t *tlep, const ferry_iov_t *local, size_t count,
                                   uint64_t remote_address, uint64_t length);

    /* Receive and deliver (fy_am_deliver), retry pending sends. Never blocks; returns the
     * number of events handled. Not called while the transport's poll_bit is set in
     * *local->poll_skip. May be NULL (a transport driven only by fd callbacks). */
    unsigned (*poll)(fy_tl_worker_t *tlw);

    /* Before the worker sleeps: returns FERRY_ERR_BUSY when events are pending, else FERRY_OK
     * after making sure peers will signal the worker's fd. May be NULL (the transport's
     * descriptors in the epoll set say everything). */
    ferry_status_t (*arm)(fy_tl_worker_t *tlw);

    /* After the worker woke up: undo arm (so that peers stop signalling). May be NULL. */
    void (*disarm)(fy_tl_worker_t *tlw);

    /* If data was delivered by this transport as a keepable buffer of its own, release it
     * and return true; otherwise return false. May be NULL (the transport delivers kept data
     * only in fy_am_buffer_alloc buffers). */
    bool (*am_data_release)(fy_tl_worker_t *tlw, void *data);

    /* Does the endpoint still measure how it moves data (shm: the store kind of its copies
     * into the peer's bulk buffers, calibrated on its first ones)? A layer that calibrates its
     * own choices on the traffic (tag_calib.c) waits until it does not, so that it measures the
     * copies the endpoint keeps. Pure and cheap. May be NULL (nothing to wait for). */
    bool (*ep_calibrating)(const fy_tl_ep_t *tlep);

    /* The rate, in MB/s, at which the endpoint's copies through the peer's buffers ran in that
     * measurement (shm: the best block of the store kind it kept), as the application's traffic
     * ran them: about the most a message sent eagerly through those buffers streams at. 0 while
     * it measures, or when it did not (a fixed configuration). Pure and cheap. May be NULL (no
     * figure). */
    uint32_t (*ep_copy_rate)(const fy_tl_ep_t *tlep);

    /* Human-readable facts (mapped memory, queue sizes) for ferry_worker_transport_describe:
     * one line into buffer[length]. May be NULL. */
    void (*describe)(fy_tl_worker_t *tlw, char *buffer, size_t length);
} fy_tl_ops_t;

/* The one list of transports, in order of preference (transport_list.c). */
extern const fy_tl_ops_t *const fy_transports[];
extern const size_t fy_transports_count;
#define FY_TL_MAX 8 /* at most this many transports in the list */

/* ------------------------------------------------------------------------------------------
 * Upward: the only calls a transport makes into ferry */

/* -- the engine (progress/worker.c): descriptors and deferred calls -- */

/* A descriptor watched by the worker's epoll set; cb runs from progress with the events. */
typedef void (*fy_worker_fd_cb_t)(void *arg, uint32_t events);
typedef struct fy_worker_fd {
    int fd;
    fy_worker_fd_cb_t cb;
    void *arg;
} fy_worker_fd_t;

/* Add fd to the epoll set (events: EPOLLIN etc.; level-triggered unless EPOLLET is given).
 * entry must stay valid until removed. Returns FERRY_OK or FERRY_ERR_IO (logged). */
ferry_status_t fy_worker_fd_add(ferry_worker_t *worker, fy_worker_fd_t *entry, uint32_t events);
/* Remove entry from the epoll set (no effect if it is not there). */
void fy_worker_fd_remove(ferry_worker_t *worker, fy_worker_fd_t *entry);

/* A callback to run from progress (never from inside the call that queued it). */
typedef struct fy_deferred fy_deferred_t;
typedef void (*fy_deferred_cb_t)(fy_deferred_t *self);
struct fy_deferred {
    fy_list_link_t link;
    fy_deferred_cb_t cb;
};

/* Queue a callback to run from the next progress. */
void fy_worker_defer(ferry_worker_t *worker, fy_deferred_t *deferred);
/* Remove a queued callback that has not run yet (no effect if it is not queued). */
void fy_worker_undefer(ferry_worker_t *worker, fy_deferred_t *deferred);

/* -- delivery to active-message handlers (progress/am_table.c) -- */

/* Flags of a delivery (besides the public FERRY_AM_RECV_KEEPABLE). */
#define FY_AM_RECV_PLACED 0x100u /* data is the placement the handler gave (fy_am_place) */

/* Deliver one received message to its handler. flags: FERRY_AM_RECV_KEEPABLE when data may
 * be kept, FY_AM_RECV_PLACED. Returns FERRY_OK (data may be reused now) or FERRY_INPROGRESS
 * (the handler kept data; ferry_am_data_release returns it later). An id without a handler is
 * dropped with one warning per id (FERRY_OK). */
ferry_status_t fy_am_deliver(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id,
                             const void *header, size_t header_length, void *data, size_t length,
                             unsigned flags);

/* Private receive buffers that a handler may keep: a small header in front of the data says
 * how to free it. fy_am_buffer_alloc returns the data pointer (NULL: out of memory, logged). */
void *fy_am_buffer_alloc(size_t length);
void fy_am_buffer_free(void *data);

/* Deliver data that lives in a buffer from fy_am_buffer_alloc: the buffer is freed unless
 * the handler keeps it. */
void fy_am_deliver_buffer(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                          size_t header_length, void *data, size_t length);

/* Placement: a transport that receives a large payload in pieces (tcp; shm fragments) may ask the
 * handler of message id, before the payload arrives, where it should go (e.g. straight into the
 * buffer of a matched tagged receive). Returns the destination (length bytes, contiguous) or NULL
 * (the transport uses a buffer of its own). The transport then reads the payload there and delivers
 * the message with data == that destination and FY_AM_RECV_PLACED. The destination stays valid
 * while the endpoint is open: the transport stops writing into it when the endpoint fails, is
 * closed or destroyed (the message is then not delivered). */
void *fy_am_place(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                  size_t header_length, size_t length);

/* -- endpoint events (wireup/ep.c) -- */

/* A peer connected: create a worker-owned endpoint for it (its error callback is the worker's
 * accepted_ep_error_cb; it is freed after the connection ends). caps are this endpoint's
 * capabilities (as ep_init reports them). Returns FERRY_OK or FERRY_ERR_NO_MEMORY (logged). */
ferry_status_t fy_ep_create_accepted(ferry_worker_t *worker, const fy_tl_ops_t *tl,
                                     fy_tl_ep_t *tl_ep, const fy_tl_peer_t *peer,
                                     const fy_tl_caps_t *caps, ferry_ep_t **ep_p);

/* The connection failed (status) or the peer closed it (FERRY_ERR_ENDPOINT_CLOSED): the
 * endpoint stops accepting operations and its error callback runs from progress. Called from
 * progress only. The transport has logged the cause (once). */
void fy_ep_fail(ferry_ep_t *ep, ferry_status_t status);

/* The endpoint's connection is established (the handshake is over): calls that need it
 * (ferry_rkey_ptr, ferry_ep_wait_connected) may go on. A transport whose endpoints are usable
 * at once (self) calls it from ep_init. Called at most once per endpoint. */
void fy_ep_connected(ferry_ep_t *ep);

/* An ep_terminate that returned FERRY_INPROGRESS is done. The close completion runs from the
 * worker's deferred queue, after the completions queued before. */
void fy_ep_terminated(ferry_ep_t *ep);

/* Count what send_short returns for a message with length payload bytes, unless it counted
 * the message in its own am_sent: a message taken (FERRY_OK, FERRY_INPROGRESS), of any id, as
 * an active message sent on ep, any other status as a refusal or an error of ep. Called from
 * inside send_short, as its contract says. Returns status. */
ferry_status_t fy_ep_am_count_short(ferry_ep_t *ep, size_t length, ferry_status_t status);

/* -- addresses (wireup/address.c) -- */

/* Who sent this worker address (a peer's handshake carries its address): checks the blob
 * as ferry_ep_create does. Returns FERRY_OK or FERRY_ERR_INVALID_ADDRESS (logged). */
ferry_status_t fy_address_peer(const void *address, size_t length, fy_tl_peer_t *peer);

/* For record_fields (wireup/introspect.c): when *count < max, fields[*count] becomes key =
 * the formatted value (truncated to fit) and *count grows by one; otherwise nothing. */
void fy_tl_field_add(ferry_info_field_t *fields, size_t max, size_t *count, const char *key,
                     const char *format, ...) __attribute__((format(printf, 5, 6)));

#endif
