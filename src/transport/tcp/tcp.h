/* The tcp transport's internal state, shared by its files:
 *   tcp.c       ops table, query, worker init/finalize (listening socket, interface choice,
 *               address record), poll/arm, the timer
 *   tcp_record.c the address record: reachable, what it says (record_describe, record_fields)
 *   tcp_conn.c  peers and connections: connect with a timeout, accept, HELLO, simultaneous
 *               connects, channels (one per ferry endpoint), idle close, silence, failure
 *   tcp_io.c    the send queue (writev, partial writes) and the receive state machine
 *   tcp_frame.c the wire formats (tcp_frame.h), fuzzed
 *
 * Objects: a *peer* is another worker (by uuid); it owns the channels (ferry endpoints) to that
 * worker and one ordered send queue, and has at most one established *connection* (a socket)
 * plus, while connecting, candidates. Everything is sent through the peer's queue on its
 * established connection, so channels survive the choice between simultaneous connections. */
#ifndef FERRY_TCP_H
#define FERRY_TCP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/list.h"
#include "core/pool.h"
#include "transport/listen_backoff.h"
#include "transport/tcp/tcp_frame.h"
#include "transport/transport.h"

/* Payloads up to this are copied into the request when they must be queued, so the send
 * returns FERRY_OK at once. */
#define TCP_COPY_MAX 16384u
/* Bytes a request carries inline: frame header, am header, a small copied payload. */
#define TCP_REQ_INLINE (TCP_FRAME_HEADER_SIZE + 256u + 1024u)
/* Payload pieces a request keeps inline (more: a malloc'ed array). */
#define TCP_REQ_IOV_INLINE 4u
/* Send requests allocated at once when the pool is empty. */
#define TCP_REQ_BLOCK 16u
/* Receive buffer of a connection: small frames are parsed out of it in batches. */
#define TCP_RXBUF_SIZE 65536u
/* Bytes of a congestion control name with its NUL (the kernel's TCP_CA_NAME_MAX). */
#define TCP_CONGESTION_NAME_SIZE 16u
/* FERRY_TCP_CONGESTION's default (tcp.c, "Congestion control" in docs/ARCHITECTURE.md). */
#define TCP_CONGESTION_DEFAULT "cubic"
/* A worker with one connection reads it directly while spinning, and asks epoll every this
 * many polls (a power of two) for the rest: writability, connects, the timer. */
#define TCP_POLL_EPOLL_EVERY 16u
/* Payloads at least this large are received straight into their destination (placement, or
 * a buffer of their own) rather than through the receive buffer. */
#define TCP_RX_DIRECT_MIN 8192u
/* The read after a payload read straight into its destination asks for this much only. */
#define TCP_RX_SHORT_READ 512u

extern const fy_tl_ops_t fy_tl_tcp_ops;

typedef struct tcp_peer tcp_peer_t;
typedef struct tcp_conn tcp_conn_t;

typedef enum tcp_req_kind {
    TCP_REQ_AM,
    TCP_REQ_OPEN,
    TCP_REQ_CLOSE,  /* of a channel; terminate: fy_ep_terminated when written */
    TCP_REQ_CONTROL /* PING, IDLE, HELLO: no channel */
} tcp_req_kind_t;

typedef struct tcp_req {
    fy_list_link_t link;    /* peer->queue, or the free list */
    fy_deferred_t deferred; /* completes comp from progress, then frees the request */
    fy_tl_worker_t *tlw;
    tcp_peer_t *peer; /* whose queue it is in */
    fy_tl_ep_t *chan; /* NULL when the channel is gone or for control frames */
    ferry_completion_t *comp;
    ferry_status_t status;
    uint8_t kind;
    bool terminate;    /* CLOSE of a graceful close */
    bool on_list;      /* in peer->queue */
    struct iovec *iov; /* iov[0]: head; then payload pieces */
    size_t iovcnt;
    size_t index;  /* first piece not fully written */
    size_t left;   /* bytes not written yet */
    size_t total;  /* bytes of the frame */
    size_t copied; /* bytes counted in peer->queued_copy */
    void *heap;    /* malloc'ed copy of the payload (or NULL) */
    struct iovec iov_inline[1 + TCP_REQ_IOV_INLINE];
    uint8_t head[TCP_REQ_INLINE];
} tcp_req_t;

typedef enum tcp_conn_state {
    TCP_CONN_CONNECTING, /* connect() in progress (initiator) */
    TCP_CONN_HELLO_SENT, /* initiator: waiting for the acceptor's HELLO */
    TCP_CONN_ACCEPTING,  /* acceptor: waiting for the initiator's HELLO */
    TCP_CONN_ESTABLISHED,
    TCP_CONN_DEAD, /* closed; freed at the next safe point */
} tcp_conn_state_t;

typedef enum tcp_rx_state {
    TCP_RX_HEADER,  /* parsing frames out of the receive buffer */
    TCP_RX_PAYLOAD, /* reading a large payload straight into rx_dest */
} tcp_rx_state_t;

struct tcp_conn {
    fy_list_link_t link; /* tlw->conns */
    fy_tl_worker_t *tlw;
    tcp_peer_t *peer;  /* NULL while accepting */
    fy_worker_fd_t fd; /* registered in tlw->epfd */
    tcp_conn_state_t state;
    bool initiator;
    bool want_out; /* EPOLLOUT registered */
    bool tx_gone;  /* a write found the peer gone: nothing more is written; the reader reads
                      what the peer sent before (its CLOSEs) and then fails the connection */
    struct sockaddr_storage remote;
    socklen_t remote_length;
    char remote_name[64]; /* "address:port" for log lines */
    uint64_t deadline_ns; /* connecting / accepting: set-up timeout */
    uint64_t last_rx_ns;
    uint64_t last_tx_ns;
    unsigned addr_index; /* initiator: the record address being tried */
    /* receive */
    tcp_rx_state_t rx_state;
    uint8_t *rxbuf; /* TCP_RXBUF_SIZE bytes */
    size_t rx_start, rx_end;
    tcp_frame_t rx_frame;   /* TCP_RX_PAYLOAD: the frame being read */
    uint8_t rx_header[256]; /* its am header */
    fy_tl_ep_t *rx_chan;    /* its channel (NULL: discard) */
    uint8_t *rx_dest;       /* where its payload goes (NULL: discard) */
    bool rx_placed;         /* rx_dest is the handler's placement, not our buffer */
    bool rx_read_short;     /* the next read into rxbuf asks for TCP_RX_SHORT_READ only */
    bool rx_yield;          /* a payload read into its destination is complete: nothing more
                             * is read until the next progress call (TCP_READS_PER_EVENT) */
    unsigned rx_yield_call; /* the progress call it completed in (*local->progress_calls) */
    uint64_t rx_done;       /* payload bytes read */
};

typedef enum tcp_chan_state {
    TCP_CHAN_OPEN,
    TCP_CHAN_CLOSING, /* graceful close queued */
    TCP_CHAN_GONE,    /* failed, closed by the peer, or terminated: no more frames */
} tcp_chan_state_t;

struct fy_tl_ep {
    fy_list_link_t link; /* peer->chans */
    tcp_peer_t *peer;
    ferry_ep_t *ep;
    uint32_t id;
    bool mine; /* opened by this worker */
    tcp_chan_state_t state;
    unsigned queued; /* requests of this channel in the peer's queue */
};

struct tcp_peer {
    fy_list_link_t link; /* tlw->peers (lookup by uuid) or tlw->orphans */
    fy_tl_worker_t *tlw;
    uint64_t uuid;
    bool in_table; /* findable by uuid: new endpoints use it */
    /* accepted while our own connection to that worker was up: out of the table until a frame
     * on it shows the peer uses it (tcp_on_hello, tcp_peer_confirm) */
    bool tentative;
    bool failed;    /* its connection broke: channels failed */
    bool idle_sent; /* IDLE sent since the channel list became empty */
    bool same_host;
    uint32_t pid;
    fy_host_id_t host;
    tcp_record_t record; /* the peer's record (initiator side), for connecting */
    bool have_record;
    tcp_conn_t *conn;          /* the established connection, or NULL */
    tcp_conn_t *outgoing;      /* our connection attempt while not established */
    uint64_t wait_deadline_ns; /* rejected: waiting for the peer's own connection */
    fy_list_t chans;
    unsigned chan_count;
    uint32_t next_chan_id;
    fy_list_t queue;    /* tcp_req_t in send order */
    size_t queued_copy; /* bytes waiting in queued requests (bounded by queue_max) */
};

struct fy_tl_worker {
    ferry_worker_t *worker;
    const fy_tl_local_t *local;         /* what the worker told us (uuid, host, address) */
    int epfd;                           /* the transport's own epoll set */
    fy_worker_fd_t epfd_entry;          /* epfd in the worker's set */
    fy_worker_fd_t listen;              /* the listening socket */
    fy_listen_backoff_t listen_backoff; /* pauses it while descriptors are exhausted */
    int timerfd;
    fy_worker_fd_t timer_entry;
    bool timer_armed;
    uint64_t last_tick_ns; /* when tcp_conn_tick last ran (set when the timer is armed) */
    tcp_record_t record;
    uint8_t record_bytes[TCP_RECORD_MAX_SIZE];
    size_t record_length;
    char iface_desc[160]; /* which interfaces, and why */
    fy_list_t peers;      /* tcp_peer_t */
    fy_list_t conns;      /* tcp_conn_t, all states */
    unsigned conn_count;  /* not DEAD */
    unsigned dead_count;
    fy_pool_t reqs; /* tcp_req_t */
    uint64_t max_frame;
    uint64_t timeout_ns;
    uint64_t connect_timeout_ns;
    size_t queue_max;
    char congestion[TCP_CONGESTION_NAME_SIZE]; /* FERRY_TCP_CONGESTION; "": the system's */
    bool congestion_refused;                   /* setting it failed once: said, not tried again */
    unsigned in_poll;                          /* nesting depth: conns are freed only outside */
    unsigned poll_count; /* polls; every TCP_POLL_EPOLL_EVERY-th asks epoll (tcp_poll) */
};

/* tcp_conn.c */
ferry_status_t tcp_conn_connect_peer(tcp_peer_t *peer);
void tcp_conn_accept(fy_tl_worker_t *tlw);
void tcp_conn_event(tcp_conn_t *conn, uint32_t events);
void tcp_conn_fail(tcp_conn_t *conn, ferry_status_t status);
void tcp_conn_reap(fy_tl_worker_t *tlw);
void tcp_conn_tick(fy_tl_worker_t *tlw, uint64_t now);
/* When the timer is armed and this worker's last tick is older than FERRY_TCP_TIMEOUT_MS, warn
 * once that it did not call progress (its peers may have timed it out); then note `now` as the
 * last tick. Called by each tick and before a connection closed by the peer is reported. */
void tcp_worker_note_stall(fy_tl_worker_t *tlw, uint64_t now);
void tcp_conn_on_frame(tcp_conn_t *conn, const tcp_frame_t *frame, const uint8_t *body);
tcp_peer_t *tcp_peer_get(fy_tl_worker_t *tlw, uint64_t uuid);
void tcp_peer_maybe_free(tcp_peer_t *peer);
void tcp_peer_chan_removed(tcp_peer_t *peer);

/* The peer's channels still open (not closing, closed by either side, or failed): those a
 * broken connection fails, and the only ones worth a warning. */
unsigned tcp_peer_open_chans(tcp_peer_t *peer);
fy_tl_ep_t *tcp_chan_find(tcp_peer_t *peer, uint32_t id, bool mine);
void tcp_timer_update(fy_tl_worker_t *tlw);
void tcp_poll_skip_update(fy_tl_worker_t *tlw);

/* tcp_io.c */
tcp_req_t *tcp_req_get(fy_tl_worker_t *tlw);
/* Worker destruction (fy_pool_destroy of tlw->reqs): a request still in use is freed, and a
 * completion still waiting in the deferred queue is reported now. */
void tcp_req_release(void *arg, void *object);
void tcp_req_complete(fy_tl_worker_t *tlw, tcp_req_t *req, ferry_status_t status);
ferry_status_t tcp_send_control(tcp_peer_t *peer, fy_tl_ep_t *chan, uint8_t type, const void *body,
                                size_t body_length, bool terminate);
/* A frame for channel id (mine: we opened it) not tied to a channel object. */
ferry_status_t tcp_send_frame(tcp_peer_t *peer, fy_tl_ep_t *chan, uint32_t id, bool mine,
                              uint8_t type, const void *body, size_t body_length);
ferry_status_t tcp_send_short_now(fy_tl_ep_t *chan, uint8_t id, const void *header,
                                  size_t header_length, const void *payload, size_t length);
ferry_status_t tcp_send_am(fy_tl_ep_t *chan, uint8_t id, const void *header, size_t header_length,
                           const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp,
                           bool may_queue_copy);
void tcp_io_flush(tcp_peer_t *peer);
void tcp_io_drop_queue(tcp_peer_t *peer, ferry_status_t status);
bool tcp_io_drop_chan(fy_tl_ep_t *chan, bool keep_sent);
bool tcp_io_recv(tcp_conn_t *conn);
ferry_status_t tcp_io_write_now(tcp_conn_t *conn, const void *bytes, size_t length);
void tcp_conn_set_out(tcp_conn_t *conn, bool want);

/* tcp_record.c: the address record (the slots reachable, record_describe, record_fields) */
bool tcp_record_reachable(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer, const void *record,
                          size_t record_length);
ferry_status_t tcp_record_describe(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer,
                                   const void *record, size_t record_length, char *text,
                                   size_t text_len, bool *reachable_p, char *why, size_t why_len);
size_t tcp_record_fields(const void *record, size_t record_length, ferry_info_field_t *fields,
                         size_t max);
/* Its part of a compact address (the slots compact_fill, compact_record). */
void tcp_record_compact_fill(fy_tl_worker_t *tlw, fy_tl_compact_t *compact);
ferry_status_t tcp_record_compact_record(const fy_tl_peer_t *peer, const fy_tl_compact_t *compact,
                                         void *buffer, size_t *length_p);
/* The record's addresses as text, separated by separator ("192.0.2.2 127.0.0.1"). */
void tcp_record_addrs_text(const tcp_record_t *rec, const char *separator, char *buffer,
                           size_t length);

#endif
