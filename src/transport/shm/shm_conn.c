/* shm connections: the worker's region (a sealed memfd), the listening UNIX socket (abstract
 * name, peer uid checked), the handshake that passes memfds and eventfds with SCM_RIGHTS, and
 * the mappings of the peer's memory. Nothing is ever created in /dev/shm or on disk. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/time.h"
#include "mem/memfd.h"
#include "transport/shm/shm.h"

static fy_log_limit_t shm_memfd_map_peer_log_limit;   /* a warning a peer can trigger */
static fy_log_limit_t shm_memfd_map_peer_log_limit_2; /* a warning a peer can trigger */

/* Map a memfd a peer sent: it must be sealed against shrinking (else the peer could make us
 * fault) and at least size bytes. */
static ferry_status_t shm_memfd_map_peer(int fd, size_t size, uint32_t peer_pid, void **map_p)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    void *map;
    if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
        fy_warn_limited(
            &shm_memfd_map_peer_log_limit,
            "shm: memfd from pid %u is not sealed against shrinking (seals %d): refused", peer_pid,
            seals);
        return FERRY_ERR_PROTOCOL;
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < size) {
        fy_warn_limited(&shm_memfd_map_peer_log_limit_2,
                        "shm: memfd from pid %u has %lld bytes, %zu expected: refused", peer_pid,
                        (long long)st.st_size, size);
        return FERRY_ERR_PROTOCOL;
    }
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        fy_error("mmap(memfd of pid %u, %zu bytes) failed: %s", peer_pid, size, strerror(errno));
        return FERRY_ERR_SHMEM;
    }
    fy_map_dontfork(map, size, "a peer's memfd");
    *map_p = map;
    return FERRY_OK;
}

ferry_status_t shm_region_create(fy_tl_worker_t *tlw)
{
    void *map;
    char name[48];
    snprintf(name, sizeof(name), "ferry-region-%d", (int)getpid());
    ferry_status_t status = fy_memfd_create(name, SHM_REGION_SIZE, &tlw->region_fd, &map);
    if (status != FERRY_OK)
        return status;
    tlw->region = map;
    tlw->region->magic = SHM_REGION_MAGIC;
    tlw->region->version = SHM_LAYOUT_VERSION;
    tlw->region->buf_count = SHM_BUF_COUNT;
    tlw->region->buf_size = SHM_BUF_SIZE;
    tlw->region->header_size = SHM_REGION_HEADER_SIZE;
    tlw->region->region_size = SHM_REGION_SIZE;
    tlw->region->owner_pid = (uint32_t)getpid();
    atomic_store(&tlw->region->free_bufs, ~0ull);
    atomic_store(&tlw->region->free_bulk,
                 SHM_BULK_COUNT >= 64 ? ~0ull : (1ull << SHM_BULK_COUNT) - 1);
    tlw->eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (tlw->eventfd < 0) {
        fy_error("eventfd failed: %s (check the open-files limit, ulimit -n)", strerror(errno));
        status = FERRY_ERR_IO;
        goto err_unmap;
    }
    return FERRY_OK;

err_unmap:
    munmap(tlw->region, SHM_REGION_SIZE);
    close(tlw->region_fd);
    return status;
}

void shm_region_destroy(fy_tl_worker_t *tlw)
{
    close(tlw->eventfd);
    munmap(tlw->region, SHM_REGION_SIZE);
    close(tlw->region_fd);
}

static size_t shm_ring_size(uint32_t cells)
{
    return SHM_RING_HEADER_SIZE + (size_t)cells * SHM_CELL_SIZE;
}

/* Create the ring a peer will send into (we own it and poll it). */
static ferry_status_t shm_rx_ring_create(fy_tl_worker_t *tlw, fy_tl_ep_t *tlep, int *fd_p)
{
    void *map;
    char name[48];
    size_t size = shm_ring_size(tlw->ring_cells);
    snprintf(name, sizeof(name), "ferry-ring-%d", (int)getpid());
    ferry_status_t status = fy_memfd_create(name, size, fd_p, &map);
    if (status != FERRY_OK)
        return status;
    tlep->rx_ring = map;
    tlep->rx_ring_size = size;
    tlep->rx_ring->magic = SHM_RING_MAGIC;
    tlep->rx_ring->version = SHM_LAYOUT_VERSION;
    tlep->rx_ring->cells = tlw->ring_cells;
    tlep->rx_ring->cell_size = SHM_CELL_SIZE;
    tlep->peer_sender_id = ++tlw->next_sender_id;
    tlep->rx_ring->sender_id = tlep->peer_sender_id;
    tlep->rx_cells = (shm_cell_t *)((char *)map + SHM_RING_HEADER_SIZE);
    tlep->rx_mask = tlw->ring_cells - 1;
    for (uint32_t i = 0; i < tlw->ring_cells; i++)
        atomic_store_explicit(&tlep->rx_cells[i].seq, i, memory_order_relaxed);
    tlep->rx_pos = 0;
    return FERRY_OK;
}

static ferry_status_t shm_handshake_send(fy_tl_ep_t *tlep, uint16_t type, int ring_fd)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    shm_handshake_t msg = {.magic = SHM_HANDSHAKE_MAGIC,
                           .version = SHM_LAYOUT_VERSION,
                           .type = type,
                           .pid = (uint32_t)getpid(),
                           .ring_cells = tlw->ring_cells,
                           .worker_uuid = tlw->local->worker_uuid,
                           .sender_id = tlep->peer_sender_id,
                           .flags = tlw->membarrier ? SHM_HANDSHAKE_MEMBARRIER : 0u};
    int fds[SHM_HANDSHAKE_FDS] = {tlw->region_fd, tlw->eventfd, ring_fd, tlw->local->keytable_fd};
    union {
        char buf[CMSG_SPACE(sizeof(fds))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = &msg, .iov_len = sizeof(msg)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = sizeof(control.buf)};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&mh);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    if (sendmsg(tlep->sock.fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(msg)) {
        fy_warn("shm: sendmsg(handshake to pid %u, fd %d) failed: %s", tlep->peer_pid,
                tlep->sock.fd, strerror(errno));
        return FERRY_ERR_CONNECTION_RESET;
    }
    return FERRY_OK;
}

static fy_log_limit_t shm_handshake_recv_log_limit;   /* a warning a peer can trigger */
static fy_log_limit_t shm_handshake_recv_log_limit_2; /* a warning a peer can trigger */

/* Receive the peer's handshake and map its memory. Returns FERRY_OK, FERRY_ERR_NO_RESOURCE
 * (nothing there yet), FERRY_ERR_CONNECTION_RESET, FERRY_ERR_PROTOCOL, FERRY_ERR_SHMEM. */
static ferry_status_t shm_handshake_recv(fy_tl_ep_t *tlep, uint16_t expected_type)
{
    shm_handshake_t msg;
    int fds[SHM_HANDSHAKE_FDS] = {-1, -1, -1, -1};
    union {
        char buf[CMSG_SPACE(sizeof(fds))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = &msg, .iov_len = sizeof(msg)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = sizeof(control.buf)};
    ferry_status_t status = FERRY_ERR_PROTOCOL;
    void *region = NULL, *ring = NULL;
    size_t ring_size = 0;
    unsigned nfds = 0;

    ssize_t n = recvmsg(tlep->sock.fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return FERRY_ERR_NO_RESOURCE;
    if (n <= 0)
        return FERRY_ERR_CONNECTION_RESET;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            nfds = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            if (nfds > SHM_HANDSHAKE_FDS)
                nfds = SHM_HANDSHAKE_FDS;
            memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
        }
    }
    if (n != (ssize_t)sizeof(msg) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        nfds != SHM_HANDSHAKE_FDS || msg.magic != SHM_HANDSHAKE_MAGIC ||
        msg.version != SHM_LAYOUT_VERSION || msg.type != expected_type || msg.ring_cells < 2 ||
        msg.ring_cells > (1u << 20) || (msg.ring_cells & (msg.ring_cells - 1)) != 0 ||
        (msg.flags & ~SHM_HANDSHAKE_FLAGS_KNOWN) != 0) {
        fy_warn_limited(&shm_handshake_recv_log_limit,
                        "shm: malformed handshake from pid %u (%zd bytes, %u descriptors, magic "
                        "0x%x, version %u, type %u, flags 0x%x): connection refused",
                        tlep->peer_pid, n, nfds, n >= 4 ? msg.magic : 0u, n >= 6 ? msg.version : 0u,
                        n >= 8 ? msg.type : 0u, n == (ssize_t)sizeof(msg) ? msg.flags : 0u);
        goto err_close_fds;
    }
    tlep->peer_pid = msg.pid;
    tlep->peer_uuid = msg.worker_uuid;
    status = shm_memfd_map_peer(fds[0], SHM_REGION_SIZE, msg.pid, &region);
    if (status != FERRY_OK)
        goto err_close_fds;
    const shm_region_t *r = region;
    if (r->magic != SHM_REGION_MAGIC || r->version != SHM_LAYOUT_VERSION ||
        r->buf_count != SHM_BUF_COUNT || r->buf_size != SHM_BUF_SIZE) {
        fy_warn_limited(&shm_handshake_recv_log_limit_2,
                        "shm: region of pid %u has an unknown layout (version %u): refused",
                        msg.pid, r->version);
        status = FERRY_ERR_PROTOCOL;
        goto err_unmap_region;
    }
    ring_size = shm_ring_size(msg.ring_cells);
    status = shm_memfd_map_peer(fds[2], ring_size, msg.pid, &ring);
    if (status != FERRY_OK)
        goto err_unmap_region;
    status = shm_keytable_map(tlep, fds[3]);
    if (status != FERRY_OK)
        goto err_unmap_ring;
    tlep->peer_region = region;
    tlep->tx_ring = ring;
    tlep->tx_ring_size = ring_size;
    tlep->tx_cells = (shm_cell_t *)((char *)ring + SHM_RING_HEADER_SIZE);
    tlep->tx_mask = msg.ring_cells - 1;
    tlep->tx_pos = 0;
    tlep->tx_free_end = 0;
    tlep->my_sender_id = msg.sender_id;
    tlep->peer_eventfd = fds[1];
    /* fences only where a peer does not issue membarrier before it sleeps (shm_wake.c) */
    tlep->tx_fence_free = tlep->tlw->membarrier && (msg.flags & SHM_HANDSHAKE_MEMBARRIER) != 0;
    if (!tlep->tx_fence_free)
        tlep->tlw->fenced_frees = true;
    close(fds[0]);
    close(fds[2]);
    close(fds[3]);
    return FERRY_OK;

err_unmap_ring:
    munmap(ring, ring_size);
err_unmap_region:
    munmap(region, SHM_REGION_SIZE);
err_close_fds:
    for (unsigned i = 0; i < SHM_HANDSHAKE_FDS; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
    }
    return status;
}

/* Events on a connection's socket: the handshake, then only hang-ups. */
static void shm_conn_socket_cb(void *arg, uint32_t events)
{
    fy_tl_ep_t *tlep = arg;
    ferry_status_t status;
    int ring_fd = -1;

    if (tlep->state == SHM_CONN_CONNECTING || tlep->state == SHM_CONN_ACCEPTING) {
        bool accepting = tlep->state == SHM_CONN_ACCEPTING;
        status = shm_handshake_recv(tlep, accepting ? SHM_HANDSHAKE_HELLO : SHM_HANDSHAKE_ACCEPT);
        if (status == FERRY_ERR_NO_RESOURCE && !(events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
            return;
        if (status == FERRY_ERR_NO_RESOURCE)
            status = FERRY_ERR_CONNECTION_RESET;
        if (status == FERRY_OK && accepting) {
            status = shm_rx_ring_create(tlep->tlw, tlep, &ring_fd);
            if (status == FERRY_OK) {
                status = shm_handshake_send(tlep, SHM_HANDSHAKE_ACCEPT, ring_fd);
                close(ring_fd);
            }
        }
        if (status == FERRY_OK)
            status = shm_ep_attach(tlep);
        if (status != FERRY_OK) {
            if (tlep->orphan) {
                shm_ep_orphan_failed(tlep);
            } else if (accepting && tlep->ep == NULL) {
                /* nobody holds an endpoint yet: just drop the connection */
                shm_ep_free(tlep);
            } else {
                shm_ep_shutdown(tlep, status);
                fy_ep_fail(tlep->ep, status == FERRY_ERR_CONNECTION_RESET
                                         ? FERRY_ERR_CONNECTION_REFUSED
                                         : status);
            }
        }
        return;
    }
    if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP | EPOLLIN))
        shm_ep_hangup(tlep);
}

static fy_log_limit_t shm_conn_check_peer_uid_log_limit; /* a warning a peer can trigger */

static ferry_status_t shm_conn_check_peer_uid(int fd, const char *what, uint32_t *pid_p)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        fy_warn("shm: getsockopt(fd %d, SO_PEERCRED) failed: %s", fd, strerror(errno));
        return FERRY_ERR_CONNECTION_REFUSED;
    }
    *pid_p = (uint32_t)cred.pid;
    if (cred.uid != getuid()) {
        fy_warn_limited(&shm_conn_check_peer_uid_log_limit,
                        "shm: refused %s pid %d of uid %u: ferry's shared memory connects only "
                        "processes of the same user (uid %u)",
                        what, cred.pid, cred.uid, getuid());
        return FERRY_ERR_CONNECTION_REFUSED;
    }
    return FERRY_OK;
}

static const fy_config_var_t shm_connect_timeout_var = {
    .name = "FERRY_SHM_CONNECT_TIMEOUT_MS",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "10000",
    .description = "time an accepted shm connection has to send its HELLO (then it is closed)"};
static const fy_config_var_t *const shm_connect_timeout_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_connect_timeout_var;

/* Arm the handshake timer for the earliest HELLO deadline of the accepted connections, or
 * disarm it when none waits. */
static void shm_conn_handshake_timer_arm(fy_tl_worker_t *tlw, uint64_t now)
{
    uint64_t earliest = UINT64_MAX;
    for (fy_list_link_t *l = fy_list_first(&tlw->all); l != fy_list_end(&tlw->all); l = l->next) {
        fy_tl_ep_t *tlep = fy_list_entry(l, fy_tl_ep_t, link);
        if (tlep->state == SHM_CONN_ACCEPTING && tlep->hello_deadline_ns < earliest)
            earliest = tlep->hello_deadline_ns;
    }
    tlw->handshake_timer_armed = earliest != UINT64_MAX;
    uint64_t in = !tlw->handshake_timer_armed ? 0 : earliest > now ? earliest - now : 1;
    struct itimerspec its = {
        .it_value = {.tv_sec = (time_t)(in / 1000000000u), .tv_nsec = (long)(in % 1000000000u)}};
    if (timerfd_settime(tlw->handshake_timer.fd, 0, &its, NULL) != 0)
        fy_error("shm: timerfd_settime(fd %d) for handshake deadlines failed: %s",
                 tlw->handshake_timer.fd, strerror(errno));
}

/* Close the accepted connections whose HELLO did not come in time. */
static void shm_conn_handshake_timer_cb(void *arg, uint32_t events)
{
    fy_tl_worker_t *tlw = arg;
    uint64_t expirations, now = fy_time_now_ns();
    fy_list_link_t *next;
    (void)events;
    if (read(tlw->handshake_timer.fd, &expirations, sizeof(expirations)) < 0 && errno == EAGAIN)
        return;
    for (fy_list_link_t *l = fy_list_first(&tlw->all); l != fy_list_end(&tlw->all); l = next) {
        next = l->next;
        fy_tl_ep_t *tlep = fy_list_entry(l, fy_tl_ep_t, link);
        if (tlep->state != SHM_CONN_ACCEPTING || tlep->hello_deadline_ns > now)
            continue;
        char byte;
        if (recv(tlep->sock.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
            /* the HELLO came, but this worker did not progress since: its socket callback
             * (level-triggered) handles it next */
            tlep->hello_deadline_ns = now + tlw->connect_timeout_ns;
            continue;
        }
        static fy_log_limit_t silent_log_limit; /* a warning a peer can trigger */
        fy_warn_limited(&silent_log_limit,
                        "shm: closing the connection from pid %u: no HELLO within %llu ms "
                        "(FERRY_SHM_CONNECT_TIMEOUT_MS; not a ferry worker, or stopped)",
                        tlep->peer_pid, (unsigned long long)(tlw->connect_timeout_ns / 1000000u));
        shm_ep_free(tlep);
    }
    shm_conn_handshake_timer_arm(tlw, now);
}

static void shm_conn_accept_cb(void *arg, uint32_t events)
{
    fy_tl_worker_t *tlw = arg;
    (void)events;
    for (;;) {
        int fd = accept4(tlw->listen.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        uint32_t pid = 0;
        if (fd < 0) {
            int err = errno;
            if (err == EINTR || err == ECONNABORTED)
                continue;
            if (err == EAGAIN || err == EWOULDBLOCK) {
                fy_listen_backoff_drained(&tlw->listen_backoff);
            } else if (!fy_listen_backoff_failed(&tlw->listen_backoff, err)) {
                static fy_log_limit_t accept_log_limit; /* a warning a peer can trigger */
                fy_warn_limited(&accept_log_limit, "shm: accept4(listening fd %d) failed: %s",
                                tlw->listen.fd, strerror(err));
            }
            return;
        }
        fy_listen_backoff_accepted(&tlw->listen_backoff);
        if (shm_conn_check_peer_uid(fd, "a connection from", &pid) != FERRY_OK) {
            close(fd);
            continue;
        }
        fy_tl_ep_t *tlep = shm_ep_alloc(tlw, NULL);
        if (tlep == NULL) {
            close(fd);
            continue;
        }
        tlep->state = SHM_CONN_ACCEPTING;
        tlep->hello_deadline_ns = fy_time_now_ns() + tlw->connect_timeout_ns;
        tlep->peer_pid = pid;
        tlep->sock.fd = fd;
        tlep->sock.cb = shm_conn_socket_cb;
        tlep->sock.arg = tlep;
        if (fy_worker_fd_add(tlw->worker, &tlep->sock, EPOLLIN | EPOLLRDHUP) != FERRY_OK) {
            close(fd);
            shm_ep_free(tlep);
            continue;
        }
        if (!tlw->handshake_timer_armed)
            shm_conn_handshake_timer_arm(tlw, fy_time_now_ns());
        /* the HELLO usually arrived with the connection */
        shm_conn_socket_cb(tlep, 0);
    }
}

static socklen_t shm_conn_sockaddr(const char *name, struct sockaddr_un *sa)
{
    size_t len = strnlen(name, SHM_SOCKET_NAME_MAX);
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    sa->sun_path[0] = '\0'; /* abstract namespace: nothing on disk */
    memcpy(sa->sun_path + 1, name, len);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static ferry_status_t shm_conn_watch(void *worker, fy_worker_fd_t *entry)
{
    return fy_worker_fd_add(worker, entry, EPOLLIN);
}

static void shm_conn_unwatch(void *worker, fy_worker_fd_t *entry)
{
    fy_worker_fd_remove(worker, entry);
}

ferry_status_t shm_conn_listen(fy_tl_worker_t *tlw)
{
    struct sockaddr_un sa;
    int fd;

    /* named from the worker id, so that a compact address (which carries only the id) finds
     * it: shm_socket_name */
    shm_socket_name(tlw->local->worker_uuid, tlw->record.name);
    tlw->record.uid = getuid();
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fy_error("socket(AF_UNIX, SOCK_SEQPACKET) failed: %s", strerror(errno));
        return FERRY_ERR_IO;
    }
    socklen_t len = shm_conn_sockaddr(tlw->record.name, &sa);
    if (bind(fd, (struct sockaddr *)&sa, len) != 0) {
        fy_error("bind(abstract socket @%s) failed: %s%s", tlw->record.name, strerror(errno),
                 errno == EADDRINUSE ? " (another worker has this id: 64 random bits collided)"
                                     : "");
        goto err_close;
    }
    if (listen(fd, SOMAXCONN) != 0) {
        fy_error("listen(abstract socket @%s) failed: %s", tlw->record.name, strerror(errno));
        goto err_close;
    }
    tlw->connect_timeout_ns = ferry_config_size(&shm_connect_timeout_var) * 1000000u;
    tlw->handshake_timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tlw->handshake_timer.fd < 0) {
        fy_error("shm: timerfd_create for handshake deadlines failed: %s", strerror(errno));
        goto err_close;
    }
    tlw->handshake_timer.cb = shm_conn_handshake_timer_cb;
    tlw->handshake_timer.arg = tlw;
    if (fy_worker_fd_add(tlw->worker, &tlw->handshake_timer, EPOLLIN) != FERRY_OK)
        goto err_close_timer;
    tlw->listen.fd = fd;
    tlw->listen.cb = shm_conn_accept_cb;
    tlw->listen.arg = tlw;
    if (fy_listen_backoff_init(&tlw->listen_backoff, shm_conn_watch, shm_conn_unwatch, tlw->worker,
                               &tlw->listen, "shm") != FERRY_OK)
        goto err_unwatch_timer;
    if (fy_worker_fd_add(tlw->worker, &tlw->listen, EPOLLIN) != FERRY_OK)
        goto err_backoff;
    return FERRY_OK;

err_backoff:
    fy_listen_backoff_fini(&tlw->listen_backoff);
err_unwatch_timer:
    fy_worker_fd_remove(tlw->worker, &tlw->handshake_timer);
err_close_timer:
    close(tlw->handshake_timer.fd);
    tlw->handshake_timer.fd = -1;
err_close:
    close(fd);
    tlw->listen.fd = -1;
    return FERRY_ERR_IO;
}

void shm_conn_unlisten(fy_tl_worker_t *tlw)
{
    if (tlw->listen.fd < 0)
        return;
    fy_listen_backoff_fini(&tlw->listen_backoff);
    fy_worker_fd_remove(tlw->worker, &tlw->listen);
    close(tlw->listen.fd);
    tlw->listen.fd = -1;
    fy_worker_fd_remove(tlw->worker, &tlw->handshake_timer);
    close(tlw->handshake_timer.fd);
    tlw->handshake_timer.fd = -1;
}

ferry_status_t shm_conn_connect(fy_tl_worker_t *tlw, fy_tl_ep_t *tlep, const shm_record_t *record,
                                uint32_t peer_pid)
{
    struct sockaddr_un sa;
    ferry_status_t status;
    int ring_fd = -1;
    uint32_t cred_pid;
    int fd;

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fy_error("socket(AF_UNIX, SOCK_SEQPACKET) failed: %s", strerror(errno));
        return FERRY_ERR_IO;
    }
    socklen_t len = shm_conn_sockaddr(record->name, &sa);
    if (connect(fd, (struct sockaddr *)&sa, len) != 0) {
        if (errno == EAGAIN) {
            fy_debug("shm: connect(@%s, pid %u): backlog full, retry", record->name, peer_pid);
            status = FERRY_ERR_NO_RESOURCE;
        } else {
            fy_warn("shm: connect(abstract socket @%s of pid %u) failed: %s (has that "
                    "process exited or destroyed its worker?)",
                    record->name, peer_pid, strerror(errno));
            status = FERRY_ERR_CONNECTION_REFUSED;
        }
        goto err_close;
    }
    status = shm_conn_check_peer_uid(fd, "listener", &cred_pid);
    if (status != FERRY_OK)
        goto err_close;
    tlep->peer_pid = cred_pid;
    tlep->sock.fd = fd;
    tlep->sock.cb = shm_conn_socket_cb;
    tlep->sock.arg = tlep;
    tlep->state = SHM_CONN_CONNECTING;
    status = shm_rx_ring_create(tlw, tlep, &ring_fd);
    if (status != FERRY_OK)
        goto err_close;
    status = shm_handshake_send(tlep, SHM_HANDSHAKE_HELLO, ring_fd);
    close(ring_fd);
    if (status != FERRY_OK) {
        status = FERRY_ERR_CONNECTION_REFUSED;
        goto err_unmap_ring;
    }
    status = fy_worker_fd_add(tlw->worker, &tlep->sock, EPOLLIN | EPOLLRDHUP);
    if (status != FERRY_OK)
        goto err_unmap_ring;
    return FERRY_OK;

err_unmap_ring:
    munmap(tlep->rx_ring, tlep->rx_ring_size);
    tlep->rx_ring = NULL;
err_close:
    close(fd);
    tlep->sock.fd = -1;
    return status;
}

void shm_conn_detach(fy_tl_ep_t *tlep)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    if (tlep->sock.fd >= 0) {
        fy_worker_fd_remove(tlw->worker, &tlep->sock);
        close(tlep->sock.fd);
        tlep->sock.fd = -1;
    }
    if (tlep->peer_region != NULL) {
        munmap(tlep->peer_region, SHM_REGION_SIZE);
        tlep->peer_region = NULL;
    }
    if (tlep->tx_ring != NULL) {
        munmap(tlep->tx_ring, tlep->tx_ring_size);
        tlep->tx_ring = NULL;
    }
    if (tlep->rx_ring != NULL) {
        munmap(tlep->rx_ring, tlep->rx_ring_size);
        tlep->rx_ring = NULL;
    }
    if (tlep->peer_eventfd >= 0) {
        close(tlep->peer_eventfd);
        tlep->peer_eventfd = -1;
    }
    shm_keytable_unmap(tlep);
    if (tlep->frag.active) {
        if (!tlep->frag.placed) /* a placement is the handler's: it hears of the failure */
            fy_am_buffer_free(tlep->frag.data);
        tlep->frag.active = false;
    }
    if (tlep->frag.spare != NULL) {
        fy_am_buffer_free(tlep->frag.spare);
        tlep->frag.spare = NULL;
    }
    tlep->state = SHM_CONN_DETACHED;
}
