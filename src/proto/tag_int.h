/* Private to src/proto/tag*.c: the objects of the tag protocol and the helpers its files
 * share. The contract (wire formats, modes, life cycle) is src/proto/tag.h.
 *
 * Life of a send or receive: refs counts who still points to it — 1 for the user until its
 * completion ran (or it needed none), 1 while an internal operation (a one-sided operation, a
 * flush, DATA the transport queued) holds its `inner` completion. tag_*_finish() ends the
 * protocol at once (registrations released, id invalidated, queued retries dropped, user
 * completion deferred to progress); the object returns to its pool when refs reaches 0. */
#ifndef FERRY_PROTO_TAG_INT_H
#define FERRY_PROTO_TAG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/compiler.h"
#include "core/list.h"
#include "core/log.h"
#include "progress/worker.h"
#include "proto/tag.h"
#include "wireup/ep.h"

/* iov entries kept inside a send or receive before an array is allocated */
#define TAG_IOV_INLINE 4
/* The largest eager payload where the transport places one larger than its buffer straight
 * into the matched receive (shm: 32 KiB fragments, copied in by the sender and out by the
 * receiver at once, no RTS/CTS round trip; docs/ARCHITECTURE.md, "Medium messages go eager in
 * fragments"; FERRY_RNDV_THRESH sets another threshold). tag_rndv.c applies it; the largest
 * class of recycled buffers for shm's messages in pieces (below) is this size. */
#define TAG_EAGER_PLACED_CAP 262144u
/* unexpected eager payloads up to this travel inside the descriptor */
#define TAG_UNEXP_INLINE 256
/* larger ones up to this use a recycled buffer of the first class */
#define TAG_UNEXP_BUF 8192
/* and up to this, a recycled buffer of the second class: a transport's largest copied message
 * (shm's bulk buffer, 32 KiB: the largest automatic eager payload, tag_rndv.c), so no eager
 * message of the streaming path mallocs. Larger ones are malloc'd (or
 * kept in the transport's buffer). A malloc and free per message of a streaming backlog cost
 * page faults each time the heap was trimmed: 16 KiB eager streams ran at 0.4 GB/s. */
#define TAG_UNEXP_BUF_LARGE 32768
/* and up to this, a recycled buffer of the smallest power-of-two class from 64 KiB that holds
 * it, which the transport receives a message in pieces into when no posted receive takes it
 * (tag_place_eager): shm's eager messages of more than one bulk buffer, up to the placed cap
 * (tag_rndv.c, TAG_EAGER_PLACED_CAP). Each
 * reassembled in a buffer malloc'ed for it page-faulted on this project's VM (8 faults, 110-150
 * us, per 32 KiB fragment against 1.4 us into a receive's warm buffer): Open MPI's tag_bw at
 * 64 KiB, whose messages mostly arrive before their receive, ran at 0.5 GB/s (issue 13). */
#define TAG_UNEXP_BUF_PIECES TAG_EAGER_PLACED_CAP
/* The classes of recycled buffers (tag.c, tag_spare_size): TAG_UNEXP_BUF and
 * TAG_UNEXP_BUF_LARGE bytes, then the powers of two from 64 KiB to TAG_UNEXP_BUF_STREAM, which
 * hold the messages received in pieces (shm's, up to TAG_UNEXP_BUF_PIECES) and tcp's large
 * frames (up to its eager cap, tag_rndv.c) that found no receive posted, each in the smallest
 * class that takes it (TAG_SPARE_CLASSES in tag.h). */
#define TAG_UNEXP_BUF_STREAM (1u << 20)
/* the first class of those (64 KiB) */
#define TAG_SPARE_PIECES_FIRST 2u
/* local pieces described on the stack for one-sided operations and DATA */
#define TAG_IOV_STACK 64

typedef enum tag_warn_kind {
    TAG_WARN_MALFORMED,    /* a header tag_wire_decode refused */
    TAG_WARN_UNKNOWN_ID,   /* an id not in the tables (stale or never issued) */
    TAG_WARN_WRONG_STATE,  /* a message the transfer does not expect now */
    TAG_WARN_BAD_TRANSFER, /* a key or DATA that does not match the RTS/CTS */
    TAG_WARN_KINDS,
} tag_warn_kind_t;

/* Where sequential copies into or out of a list of pieces stand. */
typedef struct tag_cursor {
    size_t index;  /* current piece */
    size_t offset; /* bytes of it already used */
    uint64_t pos;  /* bytes before the cursor in total */
} tag_cursor_t;

/* The user's pieces (a private copy of the array, not of the data). */
typedef struct tag_iovs {
    ferry_iov_t *iov; /* iov_inline or malloc'ed */
    size_t iovcnt;
    uint64_t length;
    ferry_iov_t iov_inline[TAG_IOV_INLINE];
} tag_iovs_t;

/* Every pooled object starts with this. */
typedef struct tag_obj {
    fy_list_link_t link; /* the one queue the object is in */
    uint32_t magic;      /* TAG_MAGIC_*: what the object is (0 once given back) */
} tag_obj_t;

#define TAG_MAGIC_RECV 0x52454356u  /* "RECV" */
#define TAG_MAGIC_SEND 0x53454e44u  /* "SEND" */
#define TAG_MAGIC_UNEXP 0x554e4558u /* "UNEX" */
#define TAG_MAGIC_CTL 0x4354524cu   /* "CTRL" */

typedef enum tag_recv_state {
    TAG_RECV_POSTED = 1,  /* in worker->tag.posted */
    TAG_RECV_GET,         /* GET: reading a section (inner busy, or waiting in retry) */
    TAG_RECV_WAIT_COOKIE, /* GET: DONE(not final) sent, the next key is due */
    TAG_RECV_WAIT_DONE,   /* PUT: CTS sent, the sender writes (SPLIT: our part is read) */
    TAG_RECV_DATA,        /* COOP/NULL: CTS sent, DATA arrives */
    TAG_RECV_PLACED,      /* EAGER in pieces: the transport writes it (fy_tag_ep_t.placing) */
    TAG_RECV_FINISHED,    /* completed (the user's completion may still be deferred) */
} tag_recv_state_t;

typedef struct tag_recv {
    tag_obj_t obj;          /* link: posted, retry */
    fy_deferred_t deferred; /* completes the user from progress */
    ferry_worker_t *worker;
    ferry_completion_t *comp; /* the user's (never NULL) */
    ferry_tag_info_t *info;   /* the user's, may be NULL */
    uint64_t tag, tag_mask;   /* what it matches */
    ferry_peer_id_t source;   /* the sender it takes messages from, or FERRY_PEER_ANY */
    tag_iovs_t buf;
    ferry_status_t status; /* final status */
    unsigned refs;
    tag_recv_state_t state;
    /* rendezvous */
    uint64_t id;    /* in worker->tag.recv_table (0: none) */
    ferry_ep_t *ep; /* the sender's endpoint (NULL once finished) */
    tag_rndv_mode_t mode;
    uint64_t send_id;
    uint64_t length;      /* the message's */
    uint64_t accepted;    /* min(length, buf.length) */
    uint64_t received;    /* bytes in place (GET: read sections) */
    uint64_t section_end; /* GET: end of the section being read */
    uint64_t get_end;     /* GET: where reading stops (accepted; SPLIT: the split point) */
    tag_cursor_t cursor;  /* where the next bytes go */
    ferry_rkey_t *rkey;   /* GET: key of the section being read */
    uint64_t address;     /* GET with TAG_FLAG_ADDR (rkey NULL): the sender's buffer; else 0 */
    ferry_mem_t *mem;     /* PUT: registration of the accepted bytes (SPLIT: of the tail) */
    ferry_completion_t inner;
    bool inner_busy;
    bool in_retry;
    bool user_waits_inner; /* finished while inner was busy: complete the user from inner_cb */
    bool split;            /* SPLIT: the sender writes [get_end, accepted) */
    bool peer_done;        /* SPLIT: its DONE (the tail is written) arrived */
} tag_recv_t;

typedef enum tag_send_state {
    TAG_SEND_WAIT_DONE = 1, /* GET/SPLIT: RTS/COOKIE sent, the receiver reads */
    TAG_SEND_WAIT_CTS,      /* PUT/COOP/NULL: RTS sent */
    TAG_SEND_PUT,           /* PUT/SPLIT: writing (inner busy, or waiting in retry) */
    TAG_SEND_FLUSH,         /* PUT/SPLIT: flushing (inner busy, or waiting in retry) */
    TAG_SEND_PUMP,          /* COOP/NULL: DATA to hand over (in pump, or inner busy) */
    TAG_SEND_WAIT_ACK,      /* synchronous EAGER: sent, the receiver's DONE on the match is due */
    TAG_SEND_FINISHED,
} tag_send_state_t;

typedef struct tag_send {
    tag_obj_t obj; /* link: pump, retry */
    fy_deferred_t deferred;
    ferry_worker_t *worker;
    ferry_ep_t *ep; /* NULL once finished */
    ferry_completion_t *comp;
    tag_iovs_t buf;
    uint64_t tag;
    ferry_status_t status;
    unsigned refs;
    tag_send_state_t state;
    tag_rndv_mode_t mode;
    uint64_t id; /* in worker->tag.send_table */
    uint64_t recv_id;
    uint64_t accepted;
    uint64_t sent;        /* COOP/NULL: bytes handed to the transport */
    tag_cursor_t cursor;  /* COOP/NULL/GET sections: where the next bytes come from */
    ferry_mem_t *mem;     /* GET: registration of the current section */
    uint64_t section_off; /* GET: the current section */
    uint64_t section_len;
    ferry_rkey_t *rkey; /* PUT/SPLIT: the receiver's key */
    uint64_t put_off;   /* PUT: 0; SPLIT: where the bytes the sender writes start */
    ferry_completion_t inner;
    bool inner_busy;
    void *copy;            /* an injected send's private copy of the message (freed last) */
    bool in_list;          /* on pump or retry */
    bool user_waits_inner; /* finished while inner was busy: complete the user from inner_cb */
    uint8_t calib_class;   /* a calibration block counts this send: its class + 1 (0: none) */
    uint8_t calib_block;   /* which block of that class */
} tag_send_t;

typedef enum tag_unexp_kind {
    TAG_UNEXP_EAGER = 1,
    TAG_UNEXP_RTS = 2,
} tag_unexp_kind_t;

/* An unexpected message; also what ferry_tag_probe(remove) hands out. */
struct ferry_tag_message {
    tag_obj_t obj;        /* link: unexpected, probed */
    ferry_ep_t *ep;       /* the sender; NULL once that endpoint was freed */
    ferry_peer_id_t peer; /* the sender's worker id (kept when ep is freed) */
    tag_unexp_kind_t kind;
    bool probed;
    ferry_status_t status; /* RTS: the endpoint's error once it failed */
    uint64_t tag;
    uint64_t length;
    uint64_t accounted; /* bytes counted in unexpected_bytes (eager of > TAG_FLOW_SMALL_MAX) */
    /* eager */
    uint8_t flags;    /* TAG_FLAG_IMM, TAG_FLAG_SYNC or _ACK (RTS: in rts.flags) */
    uint64_t imm;     /* TAG_FLAG_IMM */
    uint64_t sync_id; /* SYNC or ACK: the sender's send id, for the DONE on the match */
    void *data;
    enum { TAG_DATA_INLINE, TAG_DATA_SPARE, TAG_DATA_MALLOC, TAG_DATA_AM } data_kind;
    /* RTS */
    tag_wire_rts_t rts;
    uint8_t inline_data[TAG_UNEXP_INLINE];
};
typedef struct ferry_tag_message tag_unexp_t;

/* A control message (header only) waiting for transport room. */
typedef struct tag_ctl {
    tag_obj_t obj; /* link: worker->tag.ctl */
    ferry_ep_t *ep;
    unsigned id;
    size_t length;
    uint8_t header[sizeof(tag_wire_rts_t)];
} tag_ctl_t;

/* ------------------------------------------------------------------ counters */

/* A tagged message sent (include/ferry/counters.h): by size class and how it moves; its bytes
 * (the message itself counts in tag_modes only: fy_ep_counters_read sums them into tag.sent). */
static inline void tag_count_sent(ferry_ep_t *ep, uint64_t length, unsigned mode)
{
    ep->counters.tag.sent_bytes += length;
    ep->counters.tag_modes[fy_counters_size_class(length)][mode]++;
}

/* A tagged message matched by a receive (its endpoint may be gone: the worker keeps it). */
static inline void tag_count_received(ferry_worker_t *worker, ferry_ep_t *ep, uint64_t length)
{
    fy_count_received(ep != NULL ? &ep->counters.tag : &worker->retired.tag, length);
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    tw->rx_count++;
    tw->rx_last_peer = ep != NULL ? ep->peer.worker_uuid : 0;
}

/* ------------------------------------------------------------------ tag.c */

void *tag_pool_get(fy_pool_t *pool, uint32_t magic);
void tag_pool_put(fy_pool_t *pool, void *object);

/* Ids: insert returns 0 on allocation failure (logged). */
uint64_t tag_table_insert(tag_table_t *table, void *object);
void *tag_table_lookup(const tag_table_t *table, uint64_t id);
void tag_table_remove(tag_table_t *table, uint64_t id);

/* One warning per worker and kind, then debug lines. */
void tag_warn(ferry_worker_t *worker, tag_warn_kind_t kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Send a control message (a header of the FY_AM_ID_TAG_* id) to ep, now or, without room,
 * from progress in order with the endpoint's other control messages. Returns FERRY_OK (sent or
 * queued), FERRY_ERR_NO_MEMORY, or the endpoint's error (nothing queued). */
ferry_status_t tag_ctl_send(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_msg_t *msg);

/* Copy iov (count pieces) into a private tag_iovs_t; checks pieces. Returns FERRY_OK,
 * FERRY_ERR_INVALID_PARAM or FERRY_ERR_NO_MEMORY. */
ferry_status_t tag_iovs_copy(tag_iovs_t *dst, const ferry_iov_t *iov, size_t iovcnt);
/* tag_iovs_copy of pieces tag_iov_check passed already (total: their length). Returns FERRY_OK
 * or FERRY_ERR_NO_MEMORY. */
ferry_status_t tag_iovs_copy_checked(tag_iovs_t *dst, const ferry_iov_t *iov, size_t iovcnt,
                                     uint64_t total);
void tag_iovs_release(tag_iovs_t *iovs);

/* Copy n bytes from src into the pieces at the cursor, advancing it (the caller bounds n). */
void tag_cursor_scatter(const tag_iovs_t *iovs, tag_cursor_t *cur, const void *src, size_t n);

/* Describe the next n bytes at the cursor as pieces in out[0..max) without moving it; returns
 * the pieces used and sets *bytes_p to the bytes they cover (less than n when max ran out). */
size_t tag_cursor_pieces(const tag_iovs_t *iovs, const tag_cursor_t *cur, uint64_t n,
                         ferry_iov_t *out, size_t max, uint64_t *bytes_p);
void tag_cursor_advance(const tag_iovs_t *iovs, tag_cursor_t *cur, uint64_t n);

/* A receive for the user's buffers (the iov array is copied; the caller checked it with
 * tag_iov_check, which gave length), state POSTED, or NULL with *status_p set
 * (FERRY_ERR_NO_MEMORY). */
tag_recv_t *tag_recv_alloc(ferry_worker_t *worker, const ferry_iov_t *iov, size_t iovcnt,
                           uint64_t length, ferry_tag_info_t *info, ferry_completion_t *comp,
                           ferry_status_t *status_p);
/* A send with nothing set but its defaults (NULL: out of memory, logged). */
tag_send_t *tag_send_alloc(ferry_worker_t *worker);

/* Completion of the user's side, from progress (the object's deferred entry). */
void tag_recv_finish(tag_recv_t *recv, ferry_status_t status);
void tag_send_finish(tag_send_t *send, ferry_status_t status);
/* The user's completion of a finished transfer whose internal operation (a get, a put, DATA in
 * the transport) had still been using the user's buffers: called from the inner callback. */
void tag_send_complete_user(tag_send_t *send);
void tag_recv_complete_user(tag_recv_t *recv);
/* The same, run now: from an inner completion, itself run from progress. No second deferred
 * hop, so that when an endpoint fails every transfer on it completes before the endpoint's
 * error callback (queued behind the completions the failure queued) runs. */
void tag_send_complete_user_now(tag_send_t *send);
void tag_recv_complete_user_now(tag_recv_t *recv);
void tag_recv_unref(tag_recv_t *recv);
void tag_send_unref(tag_send_t *send);

/* The worker's progress hook must run. */
void tag_need_progress(ferry_worker_t *worker, int delta);

/* ------------------------------------------------------------------ tag_rndv.c */

/* Read FERRY_RNDV_* into the worker's state (fy_tag_init). */
void tag_rndv_config(fy_tag_worker_t *tw, const fy_config_set_t *config);

/* The largest eager message ep's transport places in the receiver's buffers in pieces (shm:
 * TAG_EAGER_PLACED_CAP; 0 where it places none). */
size_t tag_eager_placed_max(const ferry_ep_t *ep);

/* The endpoint's eager threshold and COOP chunk (sets ep->tag.ready). */
void tag_rndv_ep_setup(ferry_worker_t *worker, ferry_ep_t *ep);

/* The mode of a rendezvous of length bytes on ep; send joins a calibration block when the
 * automatic choice is still measuring (tag_calib.c). */
tag_rndv_mode_t tag_rndv_choose(ferry_worker_t *worker, ferry_ep_t *ep, uint64_t length,
                                tag_send_t *send);

/* ------------------------------------------------------------------ tag_calib.c */

/* A send's place in a calibration block, chosen before the send exists (the eager classes). */
typedef struct tag_calib_ticket {
    uint8_t calib_class; /* tag_send_t.calib_class: class + 1 (0: the send is not counted) */
    uint8_t calib_block; /* tag_send_t.calib_block */
    uint8_t ack;         /* eager: the block's last send, acknowledged (TAG_FLAG_ACK) and
                          * tracked to its completion (the others are plain eager sends) */
} tag_calib_ticket_t;

/* How a send of length bytes (an eager class's size, above the endpoint's eager_max) to ep,
 * where GET and SPLIT work, goes: FERRY_COUNTERS_MODE_EAGER, TAG_RNDV_GET or TAG_RNDV_SPLIT, as
 * its class decided, or, while it calibrates, as its current block (*ticket counts the send
 * there: cancel it when the send does not start; the last of an eager block carries
 * TAG_FLAG_ACK, ticket->ack) or, between blocks, the next one's uncounted; eager, uncounted,
 * while ep's transport still calibrates its own copies. restricted (the receiver keeps the send
 * from going eagerly): never eager; FERRY_COUNTERS_MODE_EAGER back means tag_rndv_choose's mode
 * (a class decided for eager, or not calibrating), the eager blocks are given up. */
unsigned tag_calib_eager_choose(ferry_worker_t *worker, const ferry_ep_t *ep, uint64_t length,
                                bool restricted, tag_calib_ticket_t *ticket);
/* How a send of iovcnt pieces to ep, of a size from the endpoint's reply_min up to its eager_max
 * (8 KiB .. 16 KiB - 1 where GET and SPLIT work and nothing is forced), goes: TAG_RNDV_GET (by
 * address) when it answers the peer and comes from one piece, else FERRY_COUNTERS_MODE_EAGER.
 * It answers the peer when the worker's last tagged message came from ep's peer and arrived
 * after ep's last send that answered (fy_tag_worker_t.rx_count, rx_last_peer); that send is
 * then marked. The inline send path asks tag_reply_due first: a stream (nothing received in
 * between) stays on it. A send without a completion is not asked (it stays eager: its caller
 * cannot learn when a rendezvous is done with the buffers). */
unsigned tag_reply_choose(ferry_ep_t *ep, size_t iovcnt);

/* Whether a send to ep answers its peer (tag_reply_choose), without marking it. */
static inline bool tag_reply_due(const ferry_ep_t *ep)
{
    const fy_tag_worker_t *tw = fy_tag_worker_of(ep->worker);
    /* the peer's messages may come on another endpoint than ours to it (each side connects):
     * the worker's last sender says whose it was */
    return tw->rx_count != fy_tag_ep_of(ep)->reply_mark && tw->rx_last_peer == ep->peer.worker_uuid;
}

/* COOP or SPLIT for a send of length bytes to ep, where both work: the decided mode of its size
 * class, or, while the class calibrates, its current block's (send joins it); COOP, uncounted,
 * while ep's transport still calibrates its own copies (fy_tl_ops_t.ep_calibrating). */
tag_rndv_mode_t tag_calib_choose(ferry_worker_t *worker, const ferry_ep_t *ep, tag_send_t *send,
                                 uint64_t length);
/* The send that joined a block did not start after all (an error in tag_rndv_send); nothing
 * when it joined none (or was cancelled already). */
void tag_calib_cancel(ferry_worker_t *worker, tag_send_t *send, uint64_t length);
/* The same for a ticket (NULL or calib_class 0: nothing) whose send was not created. */
void tag_calib_ticket_cancel(ferry_worker_t *worker, const tag_calib_ticket_t *ticket,
                             uint64_t length);
/* A send that joined a block (send->calib_class != 0) finished. */
void tag_calib_done(ferry_worker_t *worker, tag_send_t *send);

/* ferry_tag_send of a message that does not go eagerly: RTS, in mode (0: tag_rndv_choose's),
 * counted by the calibration block of ticket (NULL or calib_class 0: none; cancelled when
 * nothing started). Returns FERRY_INPROGRESS, FERRY_ERR_NO_RESOURCE (nothing started), or an
 * error (nothing started). */
ferry_status_t tag_rndv_send(ferry_worker_t *worker, ferry_ep_t *ep, const ferry_iov_t *iov,
                             size_t iovcnt, uint64_t length, uint64_t tag,
                             const ferry_tag_send_params_t *params, bool inject,
                             tag_rndv_mode_t mode, const tag_calib_ticket_t *ticket,
                             ferry_completion_t *comp);

/* The inject bound of tagged messages to ep (ferry_ep_attr_t.tag_inject_max): what one
 * send_short of the transport carries besides the EAGER header. */
size_t tag_inject_max(const ferry_ep_t *ep);

/* A synchronous EAGER (header filled but for send_id, flags with SYNC or ACK): tracked like a
 * rendezvous, a send in the table until the receiver's DONE on the match, counted by the
 * calibration block of ticket (NULL or calib_class 0: none; cancelled when nothing started).
 * Returns FERRY_INPROGRESS or an error / FERRY_ERR_NO_RESOURCE (nothing started). */
ferry_status_t tag_rndv_send_sync_eager(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                                        uint64_t length, tag_wire_eager_t *header,
                                        const tag_calib_ticket_t *ticket, ferry_completion_t *comp);

/* The receiver matched a synchronous EAGER from ep: DONE(to send, final) for send_id. */
void tag_rndv_sync_ack(ferry_worker_t *worker, ferry_ep_t *ep, uint64_t send_id);

/* A receive matched an RTS from ep: start reading. recv->buf, comp, info are set; its info is
 * filled here. Completes recv (from progress) on any error. */
void tag_rndv_recv_start(tag_recv_t *recv, ferry_ep_t *ep, const tag_wire_rts_t *rts);

/* Handlers of CTS, DATA, DONE, COOKIE (decoded). ep: where it came from. */
void tag_rndv_on_cts(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_cts_t *cts);
/* Placement of DATA payloads (tag_rndv.c; registered with fy_am_set_internal_place). */
void *tag_rndv_place_data(void *arg, ferry_ep_t *ep, const void *header, size_t header_length,
                          size_t length);
void tag_rndv_on_data(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_data_t *data,
                      const void *payload, size_t length);
void tag_rndv_on_done(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_done_t *done);
void tag_rndv_on_cookie(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_cookie_t *cookie);

/* Retry what is on the pump and retry lists; returns the events handled. */
unsigned tag_rndv_progress(ferry_worker_t *worker);

/* Fail the transfers of ep (fy_tag_ep_failed). */
void tag_rndv_ep_failed(ferry_worker_t *worker, ferry_ep_t *ep, ferry_status_t status);

/* Release what a send or receive still holds (registration, key), without completing it. */
void tag_rndv_send_release(tag_send_t *send);
void tag_rndv_recv_release(tag_recv_t *recv);

#endif
