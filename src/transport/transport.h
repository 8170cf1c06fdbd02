/*
 * The transport plug-in interface (the shape of MPICH's Nemesis netmod API).
 *
 * A transport is one folder under src/transport/ that fills one fy_tl_ops_t and is listed
 * once in transport_list.c. The layers above see only this table and the capability struct.
 *
 * Threading: every slot is called by the thread that owns the worker, never concurrently.
 * Callbacks up into ferry (fy_am_deliver, fy_ep_fail, completions) are made only from
 * the transport's poll slot, or from fd callbacks run by the worker's progress.
 */
#ifndef FERRY_TRANSPORT_H
#define FERRY_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "wireup/address.h"

typedef struct fy_tl_worker fy_tl_worker_t; /* a transport's per-worker state */
struct fy_rma_op;                           /* src/proto/rma.h */
typedef struct fy_tl_ep fy_tl_ep_t;         /* a transport's per-endpoint state */

/* Capability flags. */
#define FERRY_TL_CAP_AM 0x1u           /* active messages */
#define FERRY_TL_CAP_AM_ORDERED 0x2u   /* AMs of one endpoint arrive in order */
#define FERRY_TL_CAP_SAME_HOST 0x4u    /* reaches only peers on this host */
#define FERRY_TL_CAP_SAME_WORKER 0x8u  /* reaches only its own worker */
#define FERRY_TL_CAP_RMA 0x10u         /* one-sided operations without the target's progress */
#define FERRY_TL_CAP_RMA_ORDERED 0x20u /* one-sided operations take effect in issue order */

typedef struct fy_tl_caps {
    unsigned flags;
    size_t max_short;     /* largest header + payload sent inline (one cell, no buffer) */
    size_t max_bcopy;     /* largest header + payload copied through one buffer */
    size_t header_apart;  /* a header of up to this many bytes travels beside the buffer (shm:
                           * in the ring cell): then max_bcopy bytes of payload fit one buffer,
                           * at its start; 0: the header takes room in the buffer */
    size_t max_iov;       /* largest iovcnt accepted by sendv */
    double latency_ns;    /* one-way latency estimate of a small message */
    double bandwidth_Bps; /* large-message bandwidth estimate */
} fy_tl_caps_t;

typedef struct fy_tl_ops {
    const char *name; /* "self", "shm": what FERRY_TRANSPORTS names */
    uint8_t id;       /* stable record id in worker addresses; never reused */

    /* Is the transport usable here, and what can it do? No side effects, never blocks.
     * Returns FERRY_OK with *caps filled, or FERRY_ERR_UNSUPPORTED with why (a sentence that
     * says what is missing and how to fix it) written into why[why_len]. */
    ferry_status_t (*query)(fy_tl_caps_t *caps, char *why, size_t why_len);

    /* Create the transport's part of a worker: its descriptors go into the worker's epoll
     * set (fy_worker_fd_add). May make system calls. Returns FERRY_OK, FERRY_ERR_NO_MEMORY,
     * FERRY_ERR_IO, FERRY_ERR_SHMEM (logged by the transport). */
    ferry_status_t (*init)(ferry_worker_t *worker, fy_tl_worker_t **tlw_p);

    /* Destroy the per-worker state. All its endpoints were destroyed before. Never fails. */
    void (*finalize)(fy_tl_worker_t *tlw);

    /* Write this transport's address record (at most *length_p bytes) into buffer and set
     * *length_p to the bytes used. Returns FERRY_OK or FERRY_ERR_OUT_OF_RANGE (too small). */
    ferry_status_t (*address)(fy_tl_worker_t *tlw, void *buffer, size_t *length_p);

    /* Can this worker reach the peer through this transport? record is the peer's record of
     * this transport (already bounds-checked, contents not yet). Pure: no I/O. */
    bool (*reachable)(fy_tl_worker_t *tlw, const fy_address_t *peer, const void *record,
                      size_t record_length);

    /* Start a connection to the peer for ep. Never blocks: the handshake finishes from
     * progress; sends issued before are queued. Returns FERRY_OK, FERRY_ERR_CONNECTION_REFUSED
     * (the peer is gone), FERRY_ERR_INVALID_ADDRESS (bad record), FERRY_ERR_NO_MEMORY,
     * FERRY_ERR_NO_RESOURCE (peer's backlog full: retry), FERRY_ERR_IO, FERRY_ERR_SHMEM. */
    ferry_status_t (*ep_init)(fy_tl_worker_t *tlw, ferry_ep_t *ep, const fy_address_t *peer,
                              const void *record, size_t record_length, fy_tl_ep_t **tlep_p);

    /* Graceful close: sends already accepted finish, then the peer is told. Returns FERRY_OK
     * (done now) or FERRY_INPROGRESS (the transport calls fy_ep_terminated(ep) from
     * progress when done). Never blocks. */
    ferry_status_t (*ep_terminate)(fy_tl_ep_t *tlep);

    /* Immediate teardown and free: pending sends complete with FERRY_ERR_CANCELED (their
     * completions run from the worker's deferred queue). Never blocks, never fails. */
    void (*ep_destroy)(fy_tl_ep_t *tlep);

    /* Fast path: one active message whose header + payload (contiguous) fit in max_short.
     * No system call unless the peer armed, no malloc, no lock. Buffers are the caller's and
     * reusable on return. Returns FERRY_OK, FERRY_ERR_NO_RESOURCE (queue full or earlier sends
     * still pending: nothing sent), FERRY_ERR_ENDPOINT_CLOSED, FERRY_ERR_CONNECTION_RESET. */
    ferry_status_t (*send_short)(fy_tl_ep_t *tlep, uint8_t id, const void *header,
                                 size_t header_length, const void *payload, size_t length);

    /* Any active message (header <= FERRY_AM_HEADER_MAX, payload gathered from iov). The
     * header and the iov array are copied; the payload buffers stay the caller's until the
     * send completes. Returns FERRY_OK (all copied out), FERRY_INPROGRESS (comp, if not NULL,
     * is updated from progress when the payload buffers are free again; the message is queued
     * in order behind earlier ones), FERRY_ERR_NO_RESOURCE (small message, queue full: nothing
     * sent), FERRY_ERR_NO_MEMORY, FERRY_ERR_ENDPOINT_CLOSED, FERRY_ERR_CONNECTION_RESET. */
    ferry_status_t (*sendv)(fy_tl_ep_t *tlep, uint8_t id, const void *header, size_t header_length,
                            const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp);

    /* One-sided operation performed by the initiator alone (shm: a direct store into mapped
     * memory, or cross-memory attach), already checked against the key by the caller (see
     * fy_rma_op_t). May make system calls; never waits for the peer. The op's arrays are
     * valid only during the call (copy them to queue). Returns FERRY_OK (done, and remotely
     * complete), FERRY_INPROGRESS (op->comp is updated from progress when the data is in
     * place), FERRY_ERR_UNSUPPORTED (not for this key or peer: the caller uses the
     * target-executed protocol), FERRY_ERR_ACCESS (the owner's key table says the region was
     * deregistered or its single use is spent), FERRY_ERR_NO_RESOURCE. May be NULL. */
    ferry_status_t (*rma)(fy_tl_ep_t *tlep, const struct fy_rma_op *op);

    /* Map memory of the peer's ferry_mem_alloc (the key has MEM_FLAG_ALLOC) for direct
     * load/store: sets rkey->mapped and rkey->mapped_size (ferry_rkey_release unmaps). May make
     * system calls. Returns FERRY_OK or FERRY_ERR_UNSUPPORTED (another host, or the memory
     * cannot be opened here: the reason is logged at info level). May be NULL. */
    ferry_status_t (*rkey_map)(fy_tl_ep_t *tlep, ferry_rkey_t *rkey);

    /* Receive and deliver (fy_am_deliver), retry pending sends. Never blocks; returns the
     * number of events handled. May be NULL for a transport driven only by fd callbacks. */
    unsigned (*poll)(fy_tl_worker_t *tlw);

    /* Before the worker sleeps: returns FERRY_ERR_BUSY when events are pending, else FERRY_OK
     * after making sure peers will signal the worker's fd. May be NULL. */
    ferry_status_t (*arm)(fy_tl_worker_t *tlw);

    /* After the worker woke up: undo arm (so that peers stop signalling). May be NULL. */
    void (*disarm)(fy_tl_worker_t *tlw);

    /* If data was delivered by this transport as a keepable buffer, release it and return
     * true; otherwise return false. May be NULL. */
    bool (*am_data_release)(fy_tl_worker_t *tlw, void *data);

    /* Append human-readable facts (mapped memory, queue sizes) for ferry_info. May be NULL. */
    void (*describe)(fy_tl_worker_t *tlw, char *buffer, size_t length);
} fy_tl_ops_t;

/* The one list of transports, in order of preference (transport_list.c). */
extern const fy_tl_ops_t *const fy_transports[];
extern const size_t fy_transports_count;

#endif
