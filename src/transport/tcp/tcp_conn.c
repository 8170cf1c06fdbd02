/* The tcp transport's connections: connect with a timeout, accept, the HELLO exchange and the
 * simultaneous-connect rule, channels (one per ferry endpoint, many per connection), the idle
 * close, the silence timer, and failure.
 *
 * At most one connection per pair of workers. Either side may connect at any time; both may
 * at once. The initiator sends HELLO, the acceptor answers HELLO(ACCEPT) or HELLO(REJECT).
 * The acceptor rejects a connection when it has its own attempt to that peer under way and
 * its uuid is the larger one: both sides apply the same rule (keep the connection initiated
 * by the larger uuid), so both keep the same socket. Nothing but HELLO is sent on a socket
 * before its handshake completed — queued frames wait in the peer's queue, which moves to
 * whichever socket wins — so nothing is lost. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/time.h"
#include "transport/tcp/tcp.h"

static void tcp_conn_fd_cb(void *arg, uint32_t events);

/* ------------------------------------------------------------------ peers */

tcp_peer_t *tcp_peer_get(fy_tl_worker_t *tlw, uint64_t uuid)
{
    for (fy_list_link_t *l = fy_list_first(&tlw->peers); l != fy_list_end(&tlw->peers);
         l = l->next) {
        tcp_peer_t *peer = fy_list_entry(l, tcp_peer_t, link);
        if (peer->in_table && peer->uuid == uuid)
            return peer;
    }
    return NULL;
}

static tcp_peer_t *tcp_peer_new(fy_tl_worker_t *tlw, uint64_t uuid, bool in_table)
{
    tcp_peer_t *peer = calloc(1, sizeof(*peer));
    if (peer == NULL) {
        fy_error("tcp: calloc(%zu) for a peer failed", sizeof(*peer));
        return NULL;
    }
    peer->tlw = tlw;
    peer->uuid = uuid;
    peer->in_table = in_table;
    fy_list_init(&peer->chans);
    fy_list_init(&peer->queue);
    fy_list_push_tail(&tlw->peers, &peer->link);
    return peer;
}

static void tcp_peer_set_identity(tcp_peer_t *peer, const fy_tl_peer_t *address)
{
    peer->uuid = address->worker_uuid;
    peer->pid = address->pid;
    peer->host = address->host;
    peer->same_host = fy_host_id_equal(&address->host, &peer->tlw->local->host);
}

/* Free the peer when nothing refers to it any more. */
void tcp_peer_maybe_free(tcp_peer_t *peer)
{
    if (peer->chan_count > 0 || peer->conn != NULL || peer->outgoing != NULL)
        return;
    tcp_io_drop_queue(peer, FERRY_ERR_CANCELED);
    fy_list_remove(&peer->link);
    free(peer);
}

/* Every channel fails with status (the connection broke or could not be made). */
static void tcp_peer_fail(tcp_peer_t *peer, ferry_status_t status)
{
    peer->failed = true;
    peer->in_table = false; /* new endpoints to that worker make a new connection */
    peer->wait_deadline_ns = 0;
    tcp_io_drop_queue(peer, status);
    for (fy_list_link_t *l = fy_list_first(&peer->chans); l != fy_list_end(&peer->chans);
         l = l->next) {
        fy_tl_ep_t *chan = fy_list_entry(l, fy_tl_ep_t, link);
        if (chan->state == TCP_CHAN_GONE)
            continue;
        chan->state = TCP_CHAN_GONE;
        tcp_io_drop_chan(chan, false);
        fy_ep_fail(chan->ep, status);
    }
}

fy_tl_ep_t *tcp_chan_find(tcp_peer_t *peer, uint32_t id, bool mine)
{
    for (fy_list_link_t *l = fy_list_first(&peer->chans); l != fy_list_end(&peer->chans);
         l = l->next) {
        fy_tl_ep_t *chan = fy_list_entry(l, fy_tl_ep_t, link);
        if (chan->id == id && chan->mine == mine)
            return chan;
    }
    return NULL;
}

unsigned tcp_peer_open_chans(tcp_peer_t *peer)
{
    unsigned open = 0;
    for (fy_list_link_t *l = fy_list_first(&peer->chans); l != fy_list_end(&peer->chans);
         l = l->next) {
        const fy_tl_ep_t *chan = fy_list_entry(l, fy_tl_ep_t, link);
        open += chan->state == TCP_CHAN_OPEN;
    }
    return open;
}

/* We open nothing more on the peer's connection: out of the table, and IDLE said once. */
static void tcp_peer_say_idle(tcp_peer_t *peer)
{
    peer->in_table = false;
    if (!peer->idle_sent) {
        peer->idle_sent = true;
        tcp_send_control(peer, NULL, TCP_FRAME_IDLE, NULL, 0, false);
    }
}

/* A channel was destroyed: when it was the last one, say IDLE (we open nothing more on this
 * connection), or drop a connection that never came up. */
void tcp_peer_chan_removed(tcp_peer_t *peer)
{
    peer->chan_count--;
    if (peer->chan_count > 0)
        return;
    if (peer->conn != NULL && peer->conn->state == TCP_CONN_ESTABLISHED && !peer->failed) {
        tcp_peer_say_idle(peer);
        return;
    }
    if (peer->outgoing != NULL && !peer->failed && !fy_list_is_empty(&peer->queue)) {
        /* frames of a force-closed channel that were reported sent wait for the connection:
         * it stays, nothing more is opened on it, and IDLE follows them */
        tcp_peer_say_idle(peer);
        return;
    }
    if (peer->outgoing != NULL) {
        tcp_conn_t *conn = peer->outgoing;
        peer->outgoing = NULL;
        conn->peer = NULL;
        tcp_conn_fail(conn, FERRY_ERR_CANCELED);
    }
    tcp_peer_maybe_free(peer);
}

/* ------------------------------------------------------------------ connections */

static void tcp_sock_name(const struct sockaddr_storage *ss, char *buffer, size_t length)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host, sizeof(host));
    }
    snprintf(buffer, length, "%s:%u", host, port);
}

/* Socket options of every connection: no Nagle, the congestion control of
 * FERRY_TCP_CONGESTION, kernel keep-alive and a user timeout from FERRY_TCP_TIMEOUT_MS
 * (unacknowledged data or unanswered probes for that long: reset). */
static void tcp_sock_setup(fy_tl_worker_t *tlw, int fd)
{
    int one = 1;
    unsigned timeout_ms = (unsigned)(tlw->timeout_ns / 1000000u);
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        fy_debug("tcp: setsockopt(TCP_NODELAY, fd %d): %s", fd, strerror(errno));
    if (tlw->congestion[0] != '\0' && !tlw->congestion_refused &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, tlw->congestion,
                   (socklen_t)strlen(tlw->congestion)) != 0) {
        /* not built into the kernel (ENOENT) or not allowed to this user (EPERM): the
         * connection keeps the system's; said once per worker, as a warning when the user
         * named it */
        tlw->congestion_refused = true;
        bool named = strcmp(tlw->congestion, TCP_CONGESTION_DEFAULT) != 0;
        fy_log(named ? FERRY_LOG_LEVEL_WARN : FERRY_LOG_LEVEL_INFO,
               "tcp: setsockopt(TCP_CONGESTION, \"%s\", fd %d) failed: %s; connections keep "
               "the system's congestion control (FERRY_TCP_CONGESTION names another one, "
               "listed in /proc/sys/net/ipv4/tcp_allowed_congestion_control, or system)",
               tlw->congestion, fd, strerror(errno));
    }
    if (timeout_ms == 0)
        return;
    int idle = (int)(timeout_ms / 3000u) > 0 ? (int)(timeout_ms / 3000u) : 1;
    int count = 3;
    int interval = idle;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout_ms, sizeof(timeout_ms));
}

static tcp_conn_t *tcp_conn_new(fy_tl_worker_t *tlw, int fd, bool initiator, tcp_conn_state_t state,
                                uint32_t events)
{
    tcp_conn_t *conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        fy_error("tcp: calloc(%zu) for a connection failed", sizeof(*conn));
        return NULL;
    }
    conn->rxbuf = malloc(TCP_RXBUF_SIZE);
    if (conn->rxbuf == NULL) {
        fy_error("tcp: malloc(%u) for a receive buffer failed", TCP_RXBUF_SIZE);
        free(conn);
        return NULL;
    }
    conn->tlw = tlw;
    conn->fd.fd = fd;
    conn->fd.cb = tcp_conn_fd_cb;
    conn->fd.arg = conn;
    conn->initiator = initiator;
    conn->state = state;
    conn->want_out = (events & EPOLLOUT) != 0;
    uint64_t now = fy_time_coarse_ns();
    conn->deadline_ns = now + tlw->connect_timeout_ns;
    conn->last_rx_ns = now;
    conn->last_tx_ns = now;
    struct epoll_event ev = {.events = events, .data.ptr = &conn->fd};
    if (epoll_ctl(tlw->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        fy_error("tcp: epoll_ctl(ADD, fd %d) failed: %s", fd, strerror(errno));
        free(conn->rxbuf);
        free(conn);
        return NULL;
    }
    tcp_sock_setup(tlw, fd);
    fy_list_push_tail(&tlw->conns, &conn->link);
    tlw->conn_count++;
    tcp_timer_update(tlw);
    tcp_poll_skip_update(tlw);
    return conn;
}

/* Close the socket; the struct is freed by tcp_conn_reap outside of any callback. */
static void tcp_conn_close(tcp_conn_t *conn)
{
    fy_tl_worker_t *tlw = conn->tlw;
    if (conn->state == TCP_CONN_DEAD)
        return;
    epoll_ctl(tlw->epfd, EPOLL_CTL_DEL, conn->fd.fd, NULL);
    close(conn->fd.fd);
    conn->fd.fd = -1;
    conn->state = TCP_CONN_DEAD;
    if (conn->rx_dest != NULL && !conn->rx_placed)
        fy_am_buffer_free(conn->rx_dest);
    conn->rx_dest = NULL;
    conn->rx_chan = NULL;
    tlw->conn_count--;
    tlw->dead_count++;
    tcp_timer_update(tlw);
    tcp_poll_skip_update(tlw);
}

void tcp_conn_fail(tcp_conn_t *conn, ferry_status_t status)
{
    if (conn == NULL || conn->state == TCP_CONN_DEAD)
        return;
    tcp_peer_t *peer = conn->peer;
    tcp_conn_close(conn);
    conn->peer = NULL;
    if (peer == NULL)
        return;
    if (peer->conn == conn) {
        peer->conn = NULL;
        if (peer->chan_count > 0)
            tcp_peer_fail(peer, status);
    } else if (peer->outgoing == conn) {
        peer->outgoing = NULL;
        if (peer->chan_count > 0 && peer->conn == NULL && status != FERRY_ERR_CANCELED)
            tcp_peer_fail(peer, status);
    }
    tcp_peer_maybe_free(peer);
}

void tcp_conn_reap(fy_tl_worker_t *tlw)
{
    fy_list_link_t *next;
    if (tlw->dead_count == 0)
        return;
    for (fy_list_link_t *l = fy_list_first(&tlw->conns); l != fy_list_end(&tlw->conns); l = next) {
        next = l->next;
        tcp_conn_t *conn = fy_list_entry(l, tcp_conn_t, link);
        if (conn->state != TCP_CONN_DEAD)
            continue;
        fy_list_remove(&conn->link);
        free(conn->rxbuf);
        free(conn);
        tlw->dead_count--;
    }
    tcp_poll_skip_update(tlw);
}

/* The record address to try: the loopback one for a peer on this host (same boot and network
 * namespace), else the first usable non-loopback one from index on. Returns -1 when none. */
static int tcp_pick_address(const tcp_peer_t *peer, unsigned from)
{
    const tcp_record_t *rec = &peer->record;
    for (unsigned i = from; i < rec->count; i++) {
        const tcp_record_addr_t *a = &rec->addrs[i];
        bool loopback = a->family == 4 ? a->bytes[0] == 127
                                       : (memcmp(a->bytes, in6addr_loopback.s6_addr, 16) == 0);
        if (peer->same_host ? loopback : !loopback)
            return (int)i;
    }
    if (peer->same_host) /* no loopback entry: any address of this host will do */
        return from < rec->count ? (int)from : -1;
    return -1;
}

static socklen_t tcp_sockaddr(const tcp_record_addr_t *a, uint16_t port,
                              struct sockaddr_storage *ss)
{
    /* built in objects of their own type, then copied: no access through another type */
    memset(ss, 0, sizeof(*ss));
    if (a->family == 4) {
        struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(port)};
        memcpy(&in.sin_addr, a->bytes, 4);
        memcpy(ss, &in, sizeof(in));
        return sizeof(in);
    }
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    memcpy(&in6.sin6_addr, a->bytes, 16);
    memcpy(ss, &in6, sizeof(in6));
    return sizeof(in6);
}

static ferry_status_t tcp_send_hello(tcp_conn_t *conn, uint32_t flags)
{
    const fy_tl_local_t *local = conn->tlw->local;
    uint8_t bytes[TCP_FRAME_HEADER_SIZE + TCP_HELLO_MAX];
    size_t length = tcp_hello_encode(flags, local->address, (uint32_t)local->address_length,
                                     bytes + TCP_FRAME_HEADER_SIZE);
    tcp_frame_t frame = {.type = TCP_FRAME_HELLO, .length = length};
    tcp_frame_encode(&frame, bytes);
    /* the first bytes on a fresh socket: its send buffer is empty */
    if (tcp_io_write_now(conn, bytes, TCP_FRAME_HEADER_SIZE + length) != FERRY_OK) {
        fy_warn("tcp: sending HELLO to %s failed: %s", conn->remote_name, strerror(errno));
        return FERRY_ERR_CONNECTION_RESET;
    }
    return FERRY_OK;
}

/* Start (or continue, from address index from) connecting to the peer. */
static ferry_status_t tcp_conn_start(tcp_peer_t *peer, unsigned from)
{
    fy_tl_worker_t *tlw = peer->tlw;
    for (int i = tcp_pick_address(peer, from); i >= 0;
         i = tcp_pick_address(peer, (unsigned)i + 1)) {
        struct sockaddr_storage ss;
        socklen_t sl = tcp_sockaddr(&peer->record.addrs[i], peer->record.port, &ss);
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        char name[64];
        tcp_sock_name(&ss, name, sizeof(name));
        if (fd < 0) {
            fy_warn("tcp: socket(%s) for %s failed: %s",
                    ss.ss_family == AF_INET ? "AF_INET" : "AF_INET6", name, strerror(errno));
            continue;
        }
        bool done = connect(fd, (struct sockaddr *)&ss, sl) == 0;
        if (!done && errno != EINPROGRESS) {
            fy_info("tcp: connect(%s) failed: %s", name, strerror(errno));
            close(fd);
            continue;
        }
        tcp_conn_t *conn = tcp_conn_new(tlw, fd, true, TCP_CONN_CONNECTING, EPOLLIN | EPOLLOUT);
        if (conn == NULL) {
            close(fd);
            return FERRY_ERR_NO_MEMORY;
        }
        conn->remote = ss;
        conn->remote_length = sl;
        snprintf(conn->remote_name, sizeof(conn->remote_name), "%s", name);
        conn->peer = peer;
        conn->addr_index = (unsigned)i;
        fy_debug("tcp: connecting to %s (pid %u, address %d of %u, %s)", name, peer->pid, i,
                 peer->record.count,
                 peer->same_host ? "this host: loopback preferred" : "another host");
        peer->outgoing = conn;
        return FERRY_OK;
    }
    fy_warn("tcp: could not connect to the worker of pid %u at any of the %u addresses of "
            "its record (port %u): is it running, and does a firewall let the port through?",
            peer->pid, peer->record.count, peer->record.port);
    return FERRY_ERR_CONNECTION_REFUSED;
}

ferry_status_t tcp_conn_connect_peer(tcp_peer_t *peer)
{
    return tcp_conn_start(peer, 0);
}

/* The initiator's socket connected (or failed to). */
static void tcp_conn_connected(tcp_conn_t *conn)
{
    int err = 0;
    socklen_t len = sizeof(err);
    tcp_peer_t *peer = conn->peer;
    if (getsockopt(conn->fd.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        fy_info("tcp: connecting to %s failed: %s", conn->remote_name, strerror(err));
        unsigned next = conn->addr_index + 1;
        conn->peer = NULL;
        if (peer != NULL && peer->outgoing == conn) {
            peer->outgoing = NULL;
            tcp_conn_close(conn);
            if (tcp_conn_start(peer, next) != FERRY_OK) {
                tcp_peer_fail(peer, FERRY_ERR_CONNECTION_REFUSED);
                tcp_peer_maybe_free(peer);
            }
            return;
        }
        tcp_conn_close(conn);
        return;
    }
    conn->state = TCP_CONN_HELLO_SENT;
    tcp_conn_set_out(conn, false);
    if (tcp_send_hello(conn, 0) != FERRY_OK)
        tcp_conn_fail(conn, FERRY_ERR_CONNECTION_RESET);
}

void tcp_conn_accept(fy_tl_worker_t *tlw)
{
    for (int i = 0; i < 16; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(tlw->listen.fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int err = errno;
            if (err == EAGAIN || err == EWOULDBLOCK) {
                fy_listen_backoff_drained(&tlw->listen_backoff);
            } else if (err != EINTR && err != ECONNABORTED &&
                       !fy_listen_backoff_failed(&tlw->listen_backoff, err)) {
                static fy_log_limit_t accept_log_limit; /* a warning a peer can trigger */
                fy_warn_limited(&accept_log_limit, "tcp: accept(fd %d) failed: %s", tlw->listen.fd,
                                strerror(err));
            }
            return;
        }
        fy_listen_backoff_accepted(&tlw->listen_backoff);
        tcp_conn_t *conn = tcp_conn_new(tlw, fd, false, TCP_CONN_ACCEPTING, EPOLLIN);
        if (conn == NULL) {
            close(fd);
            return;
        }
        conn->remote = ss;
        conn->remote_length = sl;
        tcp_sock_name(&ss, conn->remote_name, sizeof(conn->remote_name));
        fy_debug("tcp: accepted a connection from %s", conn->remote_name);
    }
}

/* The handshake is over on conn: it carries the peer's traffic from now on. */
static void tcp_conn_establish(tcp_conn_t *conn, tcp_peer_t *peer)
{
    conn->peer = peer;
    conn->state = TCP_CONN_ESTABLISHED;
    conn->deadline_ns = 0;
    peer->conn = conn;
    if (peer->outgoing == conn)
        peer->outgoing = NULL;
    peer->wait_deadline_ns = 0;
    fy_debug("tcp: connection with %s (pid %u) established (%s)", conn->remote_name, peer->pid,
             conn->initiator ? "we connected" : "it connected");
    for (fy_list_link_t *l = fy_list_first(&peer->chans); l != fy_list_end(&peer->chans);
         l = l->next) {
        fy_tl_ep_t *chan = fy_list_entry(l, fy_tl_ep_t, link);
        if (chan->ep != NULL)
            fy_ep_connected(chan->ep);
    }
    tcp_io_flush(peer);
}

static fy_log_limit_t tcp_protocol_error_log_limit; /* a warning a peer can trigger */

static void tcp_protocol_error(tcp_conn_t *conn, const char *what)
{
    fy_warn_limited(&tcp_protocol_error_log_limit,
                    "tcp: closing the connection with %s%s: %s (a ferry worker of another version, "
                    "or not a ferry worker)",
                    conn->remote_name, conn->peer != NULL ? "" : " (before its HELLO)", what);
    tcp_conn_fail(conn, FERRY_ERR_PROTOCOL);
}

static void tcp_on_hello(tcp_conn_t *conn, const uint8_t *body, size_t length)
{
    fy_tl_worker_t *tlw = conn->tlw;
    tcp_hello_t hello;
    fy_tl_peer_t address;
    if (!tcp_hello_decode(body, length, &hello)) {
        tcp_protocol_error(conn, "malformed HELLO");
        return;
    }
    if (fy_address_peer(hello.address, hello.address_length, &address) != FERRY_OK) {
        tcp_protocol_error(conn, "HELLO carries a malformed worker address");
        return;
    }
    if (conn->state == TCP_CONN_HELLO_SENT) {
        tcp_peer_t *peer = conn->peer;
        if (hello.flags == 0 || peer == NULL || address.worker_uuid != peer->uuid) {
            tcp_protocol_error(conn, peer != NULL && address.worker_uuid != peer->uuid
                                         ? "another worker answers at this address (a stale "
                                           "address?)"
                                         : "unexpected HELLO");
            return;
        }
        tcp_peer_set_identity(peer, &address);
        if (hello.flags & TCP_HELLO_REJECT) {
            /* the peer keeps the connection it initiated to us: wait for it */
            fy_debug("tcp: %s rejected our connection (simultaneous connect): waiting for "
                     "its own",
                     conn->remote_name);
            conn->peer = NULL;
            if (peer->outgoing == conn)
                peer->outgoing = NULL;
            tcp_conn_close(conn);
            if (peer->conn == NULL)
                peer->wait_deadline_ns = fy_time_coarse_ns() + tlw->connect_timeout_ns;
            tcp_timer_update(tlw);
            return;
        }
        tcp_conn_establish(conn, peer);
        return;
    }
    if (conn->state != TCP_CONN_ACCEPTING || hello.flags != 0) {
        tcp_protocol_error(conn, "unexpected HELLO");
        return;
    }
    tcp_peer_t *peer = NULL;
    if (address.worker_uuid !=
        tlw->local->worker_uuid) /* a connection to ourselves pairs with no one */
        peer = tcp_peer_get(tlw, address.worker_uuid);
    bool tentative = false;
    if (peer != NULL && peer->conn != NULL) {
        /* Either it saw ours end and starts afresh, or both connected at once, and it found
         * ours (established before this HELLO reached us) and closed this one by the rule
         * above: frames we sent on it would be lost. So this one stays out of the table, and
         * new endpoints on ours, until a frame on it shows that the peer uses it. */
        tentative = true;
        peer = NULL;
    }
    if (peer != NULL && peer->outgoing != NULL && tlw->local->worker_uuid > address.worker_uuid) {
        /* both connected at once and ours was initiated by the larger uuid: ours stays */
        fy_debug("tcp: rejecting the connection from %s: ours to it wins (simultaneous "
                 "connect)",
                 conn->remote_name);
        tcp_send_hello(conn, TCP_HELLO_REJECT);
        tcp_conn_close(conn);
        return;
    }
    if (peer != NULL && peer->outgoing != NULL) {
        tcp_conn_t *ours = peer->outgoing;
        peer->outgoing = NULL;
        ours->peer = NULL;
        tcp_conn_close(ours); /* theirs wins */
    }
    if (peer == NULL) {
        peer = tcp_peer_new(tlw, address.worker_uuid,
                            address.worker_uuid != tlw->local->worker_uuid && !tentative);
        if (peer == NULL) {
            tcp_conn_fail(conn, FERRY_ERR_NO_MEMORY);
            return;
        }
        peer->tentative = tentative;
    }
    tcp_peer_set_identity(peer, &address);
    if (tcp_send_hello(conn, TCP_HELLO_ACCEPT) != FERRY_OK) {
        tcp_conn_fail(conn, FERRY_ERR_CONNECTION_RESET);
        tcp_peer_maybe_free(peer);
        return;
    }
    tcp_conn_establish(conn, peer);
}

/* The first frame on a tentative connection (tcp_on_hello): the peer uses it, so new endpoints
 * do too, and the connection it replaces takes no new ones (it ends by the idle close). */
static void tcp_peer_confirm(tcp_peer_t *peer)
{
    tcp_peer_t *old = tcp_peer_get(peer->tlw, peer->uuid);
    if (old != NULL) {
        old->in_table = false;
        if (old->chan_count == 0 && old->conn != NULL && old->conn->state == TCP_CONN_ESTABLISHED &&
            !old->failed)
            tcp_peer_say_idle(old); /* nothing keeps it */
    }
    peer->tentative = false;
    peer->in_table = true;
}

static void tcp_on_open(tcp_conn_t *conn, const tcp_frame_t *frame)
{
    tcp_peer_t *peer = conn->peer;
    if (!(frame->flags & TCP_FRAME_FLAG_SENDER_OPENED) ||
        tcp_chan_find(peer, frame->channel, false) != NULL) {
        tcp_protocol_error(conn, "OPEN of a channel that exists");
        return;
    }
    fy_tl_ep_t *chan = calloc(1, sizeof(*chan));
    if (chan == NULL) {
        fy_error("tcp: calloc(%zu) for an accepted channel failed", sizeof(*chan));
        tcp_conn_fail(conn, FERRY_ERR_NO_MEMORY);
        return;
    }
    chan->peer = peer;
    chan->id = frame->channel;
    chan->mine = false;
    chan->state = TCP_CHAN_OPEN;
    fy_tl_peer_t identity = {.worker_uuid = peer->uuid, .host = peer->host, .pid = peer->pid};
    if (fy_ep_create_accepted(conn->tlw->worker, &fy_tl_tcp_ops, chan, &identity,
                              &conn->tlw->local->caps, &chan->ep) != FERRY_OK) {
        free(chan);
        tcp_conn_fail(conn, FERRY_ERR_NO_MEMORY);
        return;
    }
    fy_list_push_tail(&peer->chans, &chan->link);
    peer->chan_count++;
    peer->idle_sent = false;
    fy_ep_connected(chan->ep);
}

static void tcp_on_idle(tcp_conn_t *conn)
{
    tcp_peer_t *peer = conn->peer;
    peer->in_table = false; /* it opens nothing more here: new endpoints connect anew */
    if (peer->chan_count > 0)
        return; /* our channels keep it; we say IDLE when the last one goes */
    tcp_peer_say_idle(peer);
    if (fy_list_is_empty(&peer->queue)) {
        fy_debug("tcp: connection with %s (pid %u) idle on both sides: closed", conn->remote_name,
                 peer->pid);
        tcp_conn_fail(conn, FERRY_ERR_CANCELED); /* no channel: nobody is told */
    }
}

/* Deliver an AM frame parsed out of the receive buffer. Frames are packed back to back there,
 * so the header and payload may sit at any address: handlers may read them as structs, so a
 * misaligned header (and a misaligned payload of up to 4 KiB) is copied to aligned memory
 * first; a larger misaligned payload is moved within the buffer. */
static void tcp_deliver_aligned(tcp_conn_t *conn, fy_tl_ep_t *chan, const tcp_frame_t *frame,
                                const uint8_t *body)
{
    _Alignas(16) uint8_t header[FERRY_AM_HEADER_MAX];
    _Alignas(16) uint8_t small[4096];
    const uint8_t *h = body;
    uint8_t *data = frame->length ? (uint8_t *)(body + frame->header_length) : NULL;
    bool move = data != NULL && ((uintptr_t)data & 7) != 0 && frame->length > sizeof(small);
    if ((((uintptr_t)h & 7) != 0 || move) && frame->header_length > 0) {
        memcpy(header, body, frame->header_length); /* before the payload moves over it */
        h = header;
    }
    if (data != NULL && ((uintptr_t)data & 7) != 0) {
        if (frame->length <= sizeof(small)) {
            memcpy(small, data, (size_t)frame->length);
            data = small;
        } else {
            uint8_t *aligned = (uint8_t *)((uintptr_t)data & ~(uintptr_t)7);
            memmove(aligned, data, (size_t)frame->length); /* its bytes are consumed */
            data = aligned;
        }
    }
    fy_am_deliver(conn->tlw->worker, chan->ep, frame->am_id, h, frame->header_length, data,
                  (size_t)frame->length, 0);
}

void tcp_conn_on_frame(tcp_conn_t *conn, const tcp_frame_t *frame, const uint8_t *body)
{
    if (frame->type == TCP_FRAME_HELLO) {
        tcp_on_hello(conn, body, (size_t)frame->length);
        return;
    }
    if (conn->state != TCP_CONN_ESTABLISHED || conn->peer == NULL) {
        tcp_protocol_error(conn, "a frame before the HELLO exchange");
        return;
    }
    tcp_peer_t *peer = conn->peer;
    fy_tl_ep_t *chan;
    if (fy_unlikely(peer->tentative))
        tcp_peer_confirm(peer);
    switch (frame->type) {
    case TCP_FRAME_AM:
        chan = tcp_chan_find(peer, frame->channel, !(frame->flags & TCP_FRAME_FLAG_SENDER_OPENED));
        if (chan == NULL || chan->state == TCP_CHAN_GONE) {
            fy_debug("tcp: dropping a message for closed channel %u from %s", frame->channel,
                     conn->remote_name);
            return;
        }
        tcp_deliver_aligned(conn, chan, frame, body);
        return;
    case TCP_FRAME_OPEN:
        tcp_on_open(conn, frame);
        return;
    case TCP_FRAME_CLOSE:
        chan = tcp_chan_find(peer, frame->channel, !(frame->flags & TCP_FRAME_FLAG_SENDER_OPENED));
        if (chan == NULL || chan->state == TCP_CHAN_GONE)
            return;
        chan->state = TCP_CHAN_GONE;
        tcp_io_drop_chan(chan, false);
        fy_ep_fail(chan->ep, FERRY_ERR_ENDPOINT_CLOSED);
        return;
    case TCP_FRAME_PING:
        return; /* reading it was the point */
    case TCP_FRAME_IDLE:
        tcp_on_idle(conn);
        return;
    }
}

static void tcp_conn_fd_cb(void *arg, uint32_t events)
{
    tcp_conn_t *conn = arg;
    if (conn->state == TCP_CONN_DEAD)
        return;
    if (conn->state == TCP_CONN_CONNECTING) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            tcp_conn_connected(conn);
        return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        tcp_io_recv(conn);
    if (conn->state != TCP_CONN_DEAD && (events & EPOLLOUT) && conn->peer != NULL &&
        conn->peer->conn == conn)
        tcp_io_flush(conn->peer);
}

/* ------------------------------------------------------------------ timers */

/* Whether bytes from the peer wait unread in the connection's socket (a peek: nothing is
 * consumed). Then the peer was not silent; this worker was late to read (it did not call
 * progress for a while), and the silence timeout must not blame the peer for it. */
static bool tcp_conn_input_waiting(const tcp_conn_t *conn)
{
    uint8_t byte;
    return recv(conn->fd.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

void tcp_worker_note_stall(fy_tl_worker_t *tlw, uint64_t now)
{
    if (tlw->timer_armed && tlw->timeout_ns != 0 && now - tlw->last_tick_ns > tlw->timeout_ns)
        fy_warn("tcp: this worker (pid %d) did not call progress for %llu ms, longer than "
                "FERRY_TCP_TIMEOUT_MS (%llu ms): its tcp peers may have timed out its "
                "connections meanwhile (call progress more often, or raise "
                "FERRY_TCP_TIMEOUT_MS on every side)",
                (int)getpid(), (unsigned long long)((now - tlw->last_tick_ns) / 1000000u),
                (unsigned long long)(tlw->timeout_ns / 1000000u));
    tlw->last_tick_ns = now;
}

static fy_log_limit_t tcp_conn_tick_log_limit; /* a warning a peer can trigger */

void tcp_conn_tick(fy_tl_worker_t *tlw, uint64_t now)
{
    fy_list_link_t *next;
    tcp_worker_note_stall(tlw, now);
    for (fy_list_link_t *l = fy_list_first(&tlw->conns); l != fy_list_end(&tlw->conns); l = next) {
        next = l->next;
        tcp_conn_t *conn = fy_list_entry(l, tcp_conn_t, link);
        if (conn->state == TCP_CONN_DEAD)
            continue;
        if (conn->state != TCP_CONN_ESTABLISHED) {
            if (tlw->connect_timeout_ns == 0 || now < conn->deadline_ns)
                continue;
            if (conn->state == TCP_CONN_ACCEPTING)
                fy_warn_limited(
                    &tcp_conn_tick_log_limit,
                    "tcp: closing the connection from %s: no HELLO within "
                    "FERRY_TCP_CONNECT_TIMEOUT_MS (%llu ms)%s",
                    conn->remote_name, (unsigned long long)(tlw->connect_timeout_ns / 1000000u),
                    conn->rx_end > conn->rx_start ? " (it stalled in the middle of a frame)" : "");
            else
                fy_warn("tcp: connecting to %s (pid %u) timed out after "
                        "FERRY_TCP_CONNECT_TIMEOUT_MS (%llu ms): is the host up and the port "
                        "reachable?",
                        conn->remote_name, conn->peer != NULL ? conn->peer->pid : 0,
                        (unsigned long long)(tlw->connect_timeout_ns / 1000000u));
            tcp_conn_fail(conn, FERRY_ERR_ENDPOINT_TIMEOUT);
            continue;
        }
        if (tlw->timeout_ns == 0)
            continue;
        if (now - conn->last_rx_ns > tlw->timeout_ns && tcp_conn_input_waiting(conn)) {
            /* the peer did speak: this worker did not call progress to read it */
            fy_debug("tcp: %s (pid %u): nothing read for %llu ms but bytes wait in the socket: "
                     "this worker did not call progress; the connection is kept",
                     conn->remote_name, conn->peer != NULL ? conn->peer->pid : 0,
                     (unsigned long long)((now - conn->last_rx_ns) / 1000000u));
            conn->last_rx_ns = now;
        }
        if (now - conn->last_rx_ns > tlw->timeout_ns) {
            tcp_peer_t *peer = conn->peer;
            fy_warn("tcp: %s (pid %u) sent nothing for %llu ms (FERRY_TCP_TIMEOUT_MS)%s: "
                    "closing the connection and failing its %u endpoints (is the process "
                    "stopped, or the link cut? a program that computes longer without "
                    "calling progress needs a larger FERRY_TCP_TIMEOUT_MS)",
                    conn->remote_name, peer != NULL ? peer->pid : 0,
                    (unsigned long long)((now - conn->last_rx_ns) / 1000000u),
                    conn->rx_state == TCP_RX_PAYLOAD || conn->rx_end > conn->rx_start
                        ? ", stalled in the middle of a frame"
                        : "",
                    peer != NULL ? peer->chan_count : 0);
            tcp_conn_fail(conn, FERRY_ERR_ENDPOINT_TIMEOUT);
            continue;
        }
        if (now - conn->last_tx_ns >= tlw->timeout_ns / 3 && conn->peer != NULL &&
            fy_list_is_empty(&conn->peer->queue))
            tcp_send_control(conn->peer, NULL, TCP_FRAME_PING, NULL, 0, false);
    }

    for (fy_list_link_t *l = fy_list_first(&tlw->peers); l != fy_list_end(&tlw->peers); l = next) {
        next = l->next;
        tcp_peer_t *peer = fy_list_entry(l, tcp_peer_t, link);
        if (peer->wait_deadline_ns != 0 && now >= peer->wait_deadline_ns && peer->conn == NULL) {
            fy_warn("tcp: the worker of pid %u rejected our connection as a duplicate but its "
                    "own did not arrive within FERRY_TCP_CONNECT_TIMEOUT_MS",
                    peer->pid);
            tcp_peer_fail(peer, FERRY_ERR_ENDPOINT_TIMEOUT);
            tcp_peer_maybe_free(peer);
        }
    }
}
