/* The shm transport's private state, shared by its files. */
#ifndef FERRY_SHM_H
#define FERRY_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/list.h"
#include "mem/mem.h"
#include "transport/listen_backoff.h"
#include "transport/shm/shm_layout.h"
#include "transport/transport.h"

#define SHM_SOCKET_NAME_MAX 32

/* What a message needs besides ring cells: nothing (inline), a medium or a bulk buffer. */
enum { SHM_POOL_NONE = 0, SHM_POOL_MEDIUM = 1, SHM_POOL_BULK = 2 };

/* Our address record: the uid (peers of another uid are not reachable) and the abstract
 * socket name (without the leading NUL). */
typedef struct shm_record {
    uint32_t uid;
    char name[SHM_SOCKET_NAME_MAX];
} shm_record_t;

typedef enum shm_conn_state {
    SHM_CONN_CONNECTING, /* HELLO sent, waiting for ACCEPT */
    SHM_CONN_ACCEPTING,  /* socket accepted, waiting for HELLO */
    SHM_CONN_CONNECTED,
    SHM_CONN_DETACHED, /* closed or failed: no socket, no mappings */
} shm_conn_state_t;

/* A send that could not be finished at once: queued in order behind earlier ones. */
typedef struct shm_req {
    fy_list_link_t link;
    fy_deferred_t deferred; /* reports to comp from progress */
    ferry_completion_t *comp;
    ferry_status_t status;
    uint8_t id;
    uint16_t header_length;
    size_t length;     /* payload bytes */
    size_t sent;       /* payload bytes already posted */
    bool first_posted; /* the first fragment (with the header) was posted */
    size_t iov_index;  /* where sending resumes */
    size_t iov_offset;
    size_t iovcnt;
    ferry_iov_t *iov; /* points to iov_inline or a malloc'ed copy */
    ferry_iov_t iov_inline[2];
    void *copy; /* private copy of the payload (short sends queued while connecting) */
    uint8_t header[FERRY_AM_HEADER_MAX];
} shm_req_t;

/* The store kind of copies into the peer's bulk buffers (shm_stores.c). */
enum { SHM_STORES_STREAM = 0, SHM_STORES_PLAIN = 1 };
#define SHM_STORES_BLOCKS 8
#define SHM_STORES_WARM (512u * 1024u)     /* untimed bytes at a block's start: the pool */
#define SHM_STORES_MEASURE (512u * 1024u)  /* timed bytes of a block */
#define SHM_STORES_STARTUP (1024u * 1024u) /* untimed bytes before the first block's */

typedef struct shm_stores {
    uint64_t stream_min; /* copies of at least this many bytes use non-temporal stores */
    bool calibrating;    /* measuring (shm_stores_count after every bulk copy) */
    uint8_t kind;        /* SHM_STORES_*: the choice, once calibrated */
    uint8_t block;       /* the block being measured */
    uint32_t rate_mbps;  /* once calibrated: the kept kind's best block, MB/s (ep_copy_rate) */
    uint64_t bytes;      /* bulk bytes copied in the block */
    uint64_t warm;       /* its untimed bytes (more for the first block) */
    uint64_t start_ns;   /* when its timed part started (0: warming up) */
    uint64_t start_bytes;
    uint64_t block_bytes[SHM_STORES_BLOCKS]; /* per measured block: its timed bytes and time */
    uint64_t block_ns[SHM_STORES_BLOCKS];
} shm_stores_t;

/* Reassembly of a fragmented message from one peer. */
typedef struct shm_rx_frag {
    bool active;
    bool placed; /* data is fy_am_place's: not ours to free or keep */
    uint8_t id;
    uint16_t header_length;
    uint64_t length;   /* payload bytes expected */
    uint64_t received; /* payload bytes so far */
    uint8_t *data;     /* fy_am_buffer_alloc'ed, or the handler's placement (placed) */
    /* handed to the handler: 8-byte aligned although the API promises no alignment */
    _Alignas(8) uint8_t header[FERRY_AM_HEADER_MAX];
    uint8_t *spare; /* the last reassembly buffer no handler kept, for the next message */
    uint64_t spare_length;
} shm_rx_frag_t;

struct fy_tl_ep {
    fy_list_link_t link; /* in tlw->all */
    fy_tl_worker_t *tlw;
    ferry_ep_t *ep;
    shm_conn_state_t state;
    fy_worker_fd_t sock;        /* the UNIX socket: handshake and hang-up detection */
    uint64_t hello_deadline_ns; /* ACCEPTING: closed if no HELLO came by then */
    uint32_t peer_pid;
    uint64_t peer_uuid;      /* the peer worker's id (from its handshake) */
    ferry_status_t error;    /* why the endpoint was shut down (shm_ep_shutdown) */
    uint32_t my_sender_id;   /* my id in the peer's region (buf_owner) */
    uint32_t peer_sender_id; /* the peer's id in my region */
    /* sending: the peer's region and the ring it owns for me */
    shm_region_t *peer_region;
    shm_ring_header_t *tx_ring;
    shm_cell_t *tx_cells;
    uint32_t tx_mask;
    bool tx_fence_free; /* both peers issue membarrier before sleeping: no fence (shm_wake.c) */
    /* what shm_send_short took (the am_sent slot), beside tx_pos, which every send writes:
     * no other cache line. Not neighbours: GCC would make one vector add of the two adds
     * (9 instructions instead of 2) */
    uint64_t tx_messages;
    uint64_t tx_pos;
    uint64_t tx_free_end; /* the cells of positions below it are known free (shm_tx_room) */
    uint64_t tx_bytes;
    int peer_eventfd;
    fy_list_t pending;    /* shm_req_t in order */
    bool closing;         /* CLOSE cell to post once pending is empty */
    bool waiting;         /* we set tx_ring->sender_waiting */
    bool blocked;         /* a send was refused (no room): wake us when there is */
    unsigned next_buf[3]; /* per pool: where the round-robin search for a buffer starts */
    /* medium buffers of the peer's pool reserved ahead (a batch claim, shm_buf_reserve): ours
     * until posted, returned to the peer's bitmap when the endpoint shuts down */
    uint64_t medium_ahead;
    unsigned blocked_pool; /* the pool the refused send needs: SHM_POOL_* */
    /* receiving: the ring I own for the peer */
    shm_ring_header_t *rx_ring;
    shm_cell_t *rx_cells;
    uint32_t rx_mask;
    uint64_t rx_pos;
    size_t rx_ring_size;
    size_t tx_ring_size;
    int rx_index; /* position in tlw->rx, or -1 */
    shm_rx_frag_t frag;
    bool peer_closed; /* a CLOSE cell arrived */
    /* force-closed with sends that completed already queued (copies made while connecting):
     * no ferry_ep_t any more; it finishes the handshake, posts them and CLOSE, then frees
     * itself (shm_ep_orphan). Never in rx[]: what the peer sends is not read. */
    bool orphan;
    /* one-sided access (shm_rma.c) */
    mem_keytable_header_t *peer_keytable; /* the peer's key table, mapped */
    mem_keytable_entry_t *peer_entries;
    uint32_t peer_entry_count;
    size_t peer_keytable_size;
    int cma;       /* 0 not tried yet, 1 works, -1 denied (fallback) */
    int cma_errno; /* why it was denied */
    /* last, so that the fields above keep their places (the 8 B path's cache lines) */
    shm_stores_t stores; /* how copies into the peer's bulk buffers store (shm_stores.c) */
};

struct fy_tl_worker {
    ferry_worker_t *worker;
    const fy_tl_local_t *local;
    int region_fd;
    shm_region_t *region; /* mine */
    int eventfd;
    fy_worker_fd_t event_entry;
    fy_worker_fd_t listen;              /* the listening socket */
    fy_listen_backoff_t listen_backoff; /* pauses it while descriptors are exhausted */
    fy_worker_fd_t handshake_timer;     /* timerfd: accepted connections without HELLO */
    bool handshake_timer_armed;
    uint64_t connect_timeout_ns; /* FERRY_SHM_CONNECT_TIMEOUT_MS */
    shm_record_t record;
    uint32_t ring_cells;
    uint64_t am_max;     /* largest fragmented message accepted */
    uint64_t stream_min; /* FERRY_SHM_STREAM_MIN: non-temporal copies into bulk buffers */
    /* medium buffers of my pool delivered in the ring batch being polled and not kept: freed
     * with one atomic OR at the batch's end (shm_ep_poll_rx), not one per message */
    uint64_t medium_done;
    uint32_t next_sender_id;
    fy_tl_ep_t **rx; /* connected endpoints whose rx rings are polled */
    unsigned rx_count;
    unsigned rx_capacity;
    unsigned waiting_count; /* endpoints with waiting set */
    unsigned orphan_count;  /* orphaned endpoints (in all, not in rx) */
    fy_list_t all;          /* every fy_tl_ep_t, including those still accepting */
    bool cma_enabled;       /* FERRY_SHM_CMA (shm_rma.c reads its settings once) */
    bool stores_auto;       /* FERRY_SHM_STREAM_MIN=auto: each endpoint calibrates the kind */
    /* shm_wake.c: this worker registered for membarrier and issues it before sleeping */
    bool membarrier;
    /* frees of ring cells fence before reading waiters: no membarrier here, or a peer
     * connected without it (stays set) */
    bool fenced_frees;
    uint64_t cma_min;   /* FERRY_SHM_CMA_MIN */
    uint64_t cma_chunk; /* FERRY_SHM_CMA_CHUNK */
};

extern const fy_tl_ops_t fy_tl_shm_ops;

/* shm_wake.c: membarrier in place of a fence on every message */
/* Register this process for MEMBARRIER_CMD_GLOBAL_EXPEDITED. Returns false (and says why at
 * info level) where the kernel lacks it. */
bool shm_wake_register(void);
/* Issue MEMBARRIER_CMD_GLOBAL_EXPEDITED: between a sleeper's stores and its loads. Returns
 * false (warned about, rate-limited) when the call failed: the caller must not sleep. */
bool shm_wake_barrier(void);

/* shm_conn.c: sockets, handshake, memfds, mappings */
ferry_status_t shm_conn_listen(fy_tl_worker_t *tlw);
void shm_conn_unlisten(fy_tl_worker_t *tlw);
ferry_status_t shm_conn_connect(fy_tl_worker_t *tlw, fy_tl_ep_t *tlep, const shm_record_t *record,
                                uint32_t peer_pid);
void shm_conn_detach(fy_tl_ep_t *tlep);
ferry_status_t shm_region_create(fy_tl_worker_t *tlw);
void shm_region_destroy(fy_tl_worker_t *tlw);

/* shm.c: called by shm_conn.c */
ferry_status_t shm_ep_attach(fy_tl_ep_t *tlep);
void shm_ep_hangup(fy_tl_ep_t *tlep);
/* An orphan's connection failed (its handshake, or the peer hung up): its sends are lost with
 * the peer; free it. */
void shm_ep_orphan_failed(fy_tl_ep_t *tlep);
fy_tl_ep_t *shm_ep_alloc(fy_tl_worker_t *tlw, ferry_ep_t *ep);
void shm_ep_free(fy_tl_ep_t *tlep);
void shm_ep_shutdown(fy_tl_ep_t *tlep, ferry_status_t status);

/* The abstract socket name of the worker with this id: "ferry-<id, 16 hex digits>". */
void shm_socket_name(uint64_t worker_uuid, char name[SHM_SOCKET_NAME_MAX]);

/* shm_record.c: the address record (the slots reachable, record_describe, record_fields) and
 * its part of a compact address (compact_fill, compact_record) */
void shm_record_compact_fill(fy_tl_worker_t *tlw, fy_tl_compact_t *compact);
ferry_status_t shm_record_compact_record(const fy_tl_peer_t *peer, const fy_tl_compact_t *compact,
                                         void *buffer, size_t *length_p);
bool shm_record_reachable(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer, const void *record,
                          size_t record_length);
ferry_status_t shm_record_describe(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer,
                                   const void *record, size_t record_length, char *text,
                                   size_t text_len, bool *reachable_p, char *why, size_t why_len);
size_t shm_record_fields(const void *record, size_t record_length, ferry_info_field_t *fields,
                         size_t max);

/* shm_rma.c: one-sided operations without the target (mapped memory, cross-memory attach) */
ferry_status_t shm_rma(fy_tl_ep_t *tlep, const fy_rma_op_t *op);
/* fy_tl_ops_t.ep_peer_read: process_vm_readv of the peer's memory at an address it gave. */
ferry_status_t shm_ep_peer_read(fy_tl_ep_t *tlep, const ferry_iov_t *local, size_t count,
                                uint64_t remote_address, uint64_t length);
/* Does the kernel let this process read and write pid's memory with cross-memory attach?
 * (One probe: FY_TL_CAP_CMA of an endpoint.) */
bool shm_cma_probe(uint32_t pid);
void shm_rma_init(fy_tl_worker_t *tlw);
bool shm_cma_enabled(const fy_config_set_t *config); /* FERRY_SHM_CMA: not off */
ferry_status_t shm_rkey_map(fy_tl_ep_t *tlep, ferry_rkey_t *rkey);
ferry_status_t shm_keytable_map(fy_tl_ep_t *tlep, int fd);
void shm_keytable_unmap(fy_tl_ep_t *tlep);
/* Whether cross-memory attach works between two processes of this user here; why not. */
bool shm_cma_check(const fy_config_set_t *config, char *why, size_t why_len);

/* shm_stores.c: the store kind of copies into the peer's bulk buffers, per endpoint */
void shm_stores_init(fy_tl_ep_t *tlep);
/* After a copy of bytes into a bulk buffer while tlep->stores.calibrating. */
void shm_stores_count(fy_tl_ep_t *tlep, size_t bytes);

/* shm_cell.c: checking a cell copied out of shared memory */
typedef enum shm_cell_verdict {
    SHM_CELL_OK = 0,
    SHM_CELL_BAD_TYPE,
    SHM_CELL_BAD_LENGTH,
    SHM_CELL_BAD_HEADER,
    SHM_CELL_BAD_BUFFER,
    SHM_CELL_BAD_FRAGMENT,
    SHM_CELL_TOO_LARGE,
} shm_cell_verdict_t;

/* Check a cell (a private copy) against the receiver's state: type, lengths, buffer index,
 * buffer actually reserved (not free in free_bits, or free_bulk for the bulk pool), fragment
 * sequence and total size. */
shm_cell_verdict_t shm_cell_check(const shm_cell_t *cell, uint64_t free_bits, uint64_t free_bulk,
                                  const shm_rx_frag_t *frag, uint64_t am_max);

/* shm_cell_check of an INLINE cell: no fragment under way, continuation cells and length
 * within bounds, the header within the message. Inline for the receive path of small
 * messages. */
static inline shm_cell_verdict_t shm_cell_check_inline(const shm_cell_t *cell,
                                                       const shm_rx_frag_t *frag)
{
    if (frag->active)
        return SHM_CELL_BAD_FRAGMENT;
    if (cell->flags > SHM_INLINE_EXTRA_MAX ||
        cell->length > SHM_CELL_DATA + cell->flags * SHM_CELL_EXTRA_DATA)
        return SHM_CELL_BAD_LENGTH;
    if (cell->header_length > cell->length)
        return SHM_CELL_BAD_HEADER;
    return SHM_CELL_OK;
}
const char *shm_cell_verdict_string(shm_cell_verdict_t verdict);

#endif
