/* The tcp method: no launcher. Every process is given FERRY_BOOTSTRAP_ROOT=host:port,
 * FERRY_BOOTSTRAP_RANK and FERRY_BOOTSTRAP_SIZE. Rank 0 listens on host:port and accepts one
 * connection per other rank (HELLO -> WELCOME or REJECT); the others connect, retrying until
 * the timeout. A collective: every rank sends its part to rank 0, which reads them in rank
 * order and sends everyone the result (or ABORT with a reason when a rank failed). The wire
 * format is bootstrap_wire.h; every header is checked before its payload is read.
 *
 * A connection to rank 0 that is not a rank of this job (garbage, another version, a wrong
 * size or rank) is refused with a warning and a REJECT, and rank 0 goes on waiting for the
 * real ranks. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap_int.h"
#include "bootstrap/bootstrap_wire.h"
#include "core/config.h"
#include "core/log.h"

static const fy_config_var_t tcp_root_var = {
    .name = "FERRY_BOOTSTRAP_ROOT",
    .type = FERRY_CONFIG_STRING,
    .default_value = "",
    .description = "tcp bootstrap: host:port (or [ipv6]:port) where rank 0 listens and the "
                   "other ranks connect; setting it selects the tcp method under auto",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const tcp_root_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_root_var;

static const fy_config_var_t tcp_rank_var = {
    .name = "FERRY_BOOTSTRAP_RANK",
    .type = FERRY_CONFIG_STRING,
    .default_value = "",
    .description = "tcp bootstrap: this process's rank, 0 .. FERRY_BOOTSTRAP_SIZE-1 (decimal; "
                   "required)",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const tcp_rank_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_rank_var;

static const fy_config_var_t tcp_size_var = {
    .name = "FERRY_BOOTSTRAP_SIZE",
    .type = FERRY_CONFIG_STRING,
    .default_value = "",
    .description = "tcp bootstrap: the number of processes in the job (decimal; required)",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const tcp_size_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_size_var;

#define TCP_MAX_SIZE (1u << 20)  /* ranks in a job */
#define TCP_MAX_PENDING 16       /* connections rank 0 holds before their HELLO is complete */
#define TCP_RETRY_NS 20000000ull /* between connection attempts of a rank (20 ms) */
#define TCP_REJECT_MS 200        /* how long rank 0 tries to tell a refused client why */

typedef struct tcp_pending {
    int fd;
    size_t got;
    uint8_t header[BOOTSTRAP_WIRE_HEADER_SIZE];
    char from[64]; /* the client's address, for the log */
} tcp_pending_t;

typedef struct tcp_state {
    char root[256]; /* FERRY_BOOTSTRAP_ROOT, for the log */
    char host[256];
    char port[8];
    int root_fd; /* ranks > 0: the connection to rank 0 */
    int *fds;    /* rank 0: fds[r], the connection to rank r (fds[0] unused) */
    uint32_t seq;
} tcp_state_t;

/* ---------------------------------------------------------------- time and sockets */

static uint64_t tcp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t tcp_deadline(int timeout_ms)
{
    return tcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* Milliseconds left until deadline, rounded up; 0 when it passed. */
static int tcp_ms_left(uint64_t deadline)
{
    uint64_t now = tcp_now_ns();
    return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* The bootstrap whose collective runs now (one thread at a time per object): its waits
 * progress its worker (ferry_bootstrap_set_progress). NULL outside collectives. */
static _Thread_local ferry_bootstrap_t *tcp_waiting_bs;

/* Wait until fd is ready for events. Returns 1 ready, 0 deadline passed, -1 poll failed. */
static int tcp_wait(int fd, short events, uint64_t deadline)
{
    for (;;) {
        int ms = tcp_ms_left(deadline);
        if (ms == 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        int n = tcp_waiting_bs != NULL ? bootstrap_poll(tcp_waiting_bs, &pfd, 1, ms)
                                       : poll(&pfd, 1, ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n > 0)
            return 1;
    }
}

static void tcp_nodelay(int fd)
{
    int one = 1;
    /* only latency: a failure changes nothing that matters */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Write all of data before deadline; peer names the other side in the log (NULL: best effort,
 * failures are not logged). */
static ferry_status_t tcp_write_all(int fd, const void *data, size_t length, uint64_t deadline,
                                    const char *peer)
{
    const uint8_t *p = data;

    while (length > 0) {
        ssize_t n = send(fd, p, length, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            int ready = tcp_wait(fd, POLLOUT, deadline);
            if (ready == 0 && peer != NULL)
                fy_error("bootstrap: sending to %s (fd %d) timed out: it does not read "
                         "(FERRY_BOOTSTRAP_TIMEOUT_MS)",
                         peer, fd);
            if (ready < 0 && peer != NULL)
                fy_error("bootstrap: poll(fd %d, %s) failed: %m", fd, peer);
            if (ready <= 0)
                return ready == 0 ? FERRY_ERR_TIMED_OUT : FERRY_ERR_IO;
            continue;
        }
        if (n < 0) {
            int error = errno;
            if (peer != NULL)
                fy_error("bootstrap: send to %s (fd %d) failed: %s", peer, fd, strerror(error));
            return error == EPIPE || error == ECONNRESET ? FERRY_ERR_CONNECTION_RESET
                                                         : FERRY_ERR_IO;
        }
        p += n;
        length -= (size_t)n;
    }
    return FERRY_OK;
}

/* Read exactly length bytes before deadline. */
static ferry_status_t tcp_read_all(int fd, void *data, size_t length, uint64_t deadline,
                                   const char *peer)
{
    uint8_t *p = data;

    while (length > 0) {
        ssize_t n = recv(fd, p, length, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            int ready = tcp_wait(fd, POLLIN, deadline);
            if (ready == 0) {
                fy_error("bootstrap: %s (fd %d) sent nothing in time: it did not reach the "
                         "same collective, or it hangs (FERRY_BOOTSTRAP_TIMEOUT_MS)",
                         peer, fd);
                return FERRY_ERR_TIMED_OUT;
            }
            if (ready < 0) {
                fy_error("bootstrap: poll(fd %d, %s) failed: %m", fd, peer);
                return FERRY_ERR_IO;
            }
            continue;
        }
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            fy_error("bootstrap: %s (fd %d) closed the connection: it exited or failed", peer, fd);
            return FERRY_ERR_CONNECTION_RESET;
        }
        if (n < 0) {
            fy_error("bootstrap: recv from %s (fd %d) failed: %m", peer, fd);
            return FERRY_ERR_IO;
        }
        p += n;
        length -= (size_t)n;
    }
    return FERRY_OK;
}

static ferry_status_t tcp_send_message(int fd, const bootstrap_wire_header_t *header,
                                       const void *payload, uint64_t deadline, const char *peer)
{
    uint8_t bytes[BOOTSTRAP_WIRE_HEADER_SIZE];

    bootstrap_wire_encode(header, bytes);
    ferry_status_t status = tcp_write_all(fd, bytes, sizeof(bytes), deadline, peer);
    if (status == FERRY_OK && header->length > 0)
        status = tcp_write_all(fd, payload, (size_t)header->length, deadline, peer);
    return status;
}

static bootstrap_wire_header_t tcp_header(const ferry_bootstrap_t *bs, unsigned type, unsigned rank,
                                          uint32_t seq, uint64_t length)
{
    bootstrap_wire_header_t header = {
        .magic = BOOTSTRAP_WIRE_MAGIC,
        .version = BOOTSTRAP_WIRE_VERSION,
        .type = (uint16_t)type,
        .rank = rank,
        .size = bs->size,
        .seq = seq,
        .flags = 0,
        .length = length,
    };
    return header;
}

/* Send a REJECT or ABORT with a reason; best effort (the peer may be gone or not ferry). */
static void tcp_send_reason(const ferry_bootstrap_t *bs, int fd, unsigned type, unsigned rank,
                            uint32_t seq, ferry_status_t status, const char *text,
                            uint64_t deadline)
{
    uint8_t reason[4 + BOOTSTRAP_WIRE_REASON_MAX];
    size_t length = bootstrap_wire_reason_encode(status, text, reason);
    bootstrap_wire_header_t header = tcp_header(bs, type, rank, seq, length);

    /* The peer may already be gone: that is not worth an error line of its own. */
    (void)tcp_send_message(fd, &header, reason, deadline, NULL);
}

/* Read and check a header; a REJECT or ABORT is decoded and logged here. */
static ferry_status_t tcp_recv_header(int fd, uint64_t max_length, uint64_t deadline,
                                      const char *peer, bootstrap_wire_header_t *header)
{
    uint8_t bytes[BOOTSTRAP_WIRE_HEADER_SIZE];
    const char *reason = NULL;

    ferry_status_t status = tcp_read_all(fd, bytes, sizeof(bytes), deadline, peer);
    if (status != FERRY_OK)
        return status;
    status = bootstrap_wire_decode(bytes, max_length, header, &reason);
    if (status != FERRY_OK) {
        if (header->magic == BOOTSTRAP_WIRE_MAGIC && header->version != BOOTSTRAP_WIRE_VERSION)
            fy_error("bootstrap: %s speaks bootstrap wire version %u, this process %u: run "
                     "the same ferry version in every process",
                     peer, header->version, BOOTSTRAP_WIRE_VERSION);
        else
            fy_error("bootstrap: malformed message from %s (type %u, length %llu): %s", peer,
                     header->type, (unsigned long long)header->length, reason);
        return status;
    }
    if (header->type == BOOTSTRAP_WIRE_REJECT || header->type == BOOTSTRAP_WIRE_ABORT) {
        uint8_t payload[4 + BOOTSTRAP_WIRE_REASON_MAX];
        char text[BOOTSTRAP_WIRE_REASON_MAX + 1];
        status = tcp_read_all(fd, payload, (size_t)header->length, deadline, peer);
        if (status != FERRY_OK)
            return status;
        bootstrap_wire_reason_decode(payload, (size_t)header->length, &status, text);
        fy_error("bootstrap: %s %s: %s (%s)", peer,
                 header->type == BOOTSTRAP_WIRE_REJECT ? "refused this process"
                                                       : "aborted the collective",
                 text, ferry_status_name(status));
        return header->type == BOOTSTRAP_WIRE_REJECT ? FERRY_ERR_CONNECTION_REFUSED : status;
    }
    return FERRY_OK;
}

/* ---------------------------------------------------------------- environment */

/* A decimal number in [min, max] from a required variable. */
static ferry_status_t tcp_env_number(const fy_config_var_t *var, unsigned min, unsigned max,
                                     unsigned *value_p)
{
    const char *text = ferry_config_string(var);
    char *end;

    if (text[0] == '\0') {
        fy_error("tcp bootstrap: %s is not set: give every process FERRY_BOOTSTRAP_ROOT, "
                 "FERRY_BOOTSTRAP_RANK and FERRY_BOOTSTRAP_SIZE",
                 var->name);
        return FERRY_ERR_INVALID_PARAM;
    }
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || value < min ||
        value > max) {
        fy_error("tcp bootstrap: %s=\"%s\": expected a decimal number from %u to %u", var->name,
                 text, min, max);
        return FERRY_ERR_INVALID_PARAM;
    }
    *value_p = (unsigned)value;
    return FERRY_OK;
}

/* FERRY_BOOTSTRAP_ROOT: host:port or [v6]:port. */
static ferry_status_t tcp_parse_root(tcp_state_t *tcp)
{
    const char *text = ferry_config_string(&tcp_root_var);
    const char *host = text, *host_end, *port;

    snprintf(tcp->root, sizeof(tcp->root), "%s", text);
    if (text[0] == '[') {
        host = text + 1;
        host_end = strchr(host, ']');
        port = host_end != NULL && host_end[1] == ':' ? host_end + 2 : NULL;
    } else {
        host_end = strrchr(text, ':');
        port = host_end != NULL ? host_end + 1 : NULL;
    }
    size_t host_length = host_end != NULL ? (size_t)(host_end - host) : 0;
    char *end;
    errno = 0;
    unsigned long number = port != NULL ? strtoul(port, &end, 10) : 0;
    if (port == NULL || host_length == 0 || host_length >= sizeof(tcp->host) || *port < '0' ||
        *port > '9' || *end != '\0' || errno != 0 || number == 0 || number > 65535) {
        fy_error("tcp bootstrap: FERRY_BOOTSTRAP_ROOT=\"%s\": expected host:port or "
                 "[ipv6]:port with a port from 1 to 65535 (where rank 0 listens)",
                 text);
        return FERRY_ERR_INVALID_PARAM;
    }
    memcpy(tcp->host, host, host_length);
    tcp->host[host_length] = '\0';
    snprintf(tcp->port, sizeof(tcp->port), "%lu", number);
    return FERRY_OK;
}

static ferry_status_t tcp_resolve(const tcp_state_t *tcp, struct addrinfo **list_p)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(tcp->host, tcp->port, &hints, list_p);
    if (rc != 0) {
        fy_error("tcp bootstrap: cannot resolve FERRY_BOOTSTRAP_ROOT host \"%s\": %s", tcp->host,
                 gai_strerror(rc));
        return FERRY_ERR_INVALID_PARAM;
    }
    return FERRY_OK;
}

static void tcp_describe_address(const struct sockaddr_storage *addr, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, cap, "%s:%u", host, port);
}

/* ---------------------------------------------------------------- rank 0: joining */

static ferry_status_t tcp_listen(const tcp_state_t *tcp, unsigned size, int *fd_p)
{
    struct addrinfo *list;
    int error = 0;

    ferry_status_t status = tcp_resolve(tcp, &list);
    if (status != FERRY_OK)
        return status;
    for (struct addrinfo *ai = list; ai != NULL; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        int one = 1;
        if (fd < 0) {
            error = errno;
            continue;
        }
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        int backlog = size < 128 ? (int)size : 128;
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0) {
            freeaddrinfo(list);
            *fd_p = fd;
            return FERRY_OK;
        }
        error = errno;
        close(fd);
    }
    freeaddrinfo(list);
    fy_error("tcp bootstrap rank 0: cannot listen on FERRY_BOOTSTRAP_ROOT=%s: %s%s", tcp->root,
             strerror(error),
             error == EADDRINUSE      ? " (another job or program uses that port: choose another)"
             : error == EADDRNOTAVAIL ? " (the host is not an address of this machine: rank 0 "
                                        "must run where FERRY_BOOTSTRAP_ROOT points)"
                                      : "");
    return FERRY_ERR_IO;
}

static void tcp_pending_close(tcp_pending_t *pending, size_t *count, size_t i)
{
    close(pending[i].fd);
    pending[i] = pending[--*count];
}

/* A complete HELLO from a pending connection: take it as its rank or refuse it. Returns true
 * when it joined. */
static bool tcp_root_admit(ferry_bootstrap_t *bs, tcp_state_t *tcp, tcp_pending_t *p)
{
    bootstrap_wire_header_t header;
    const char *reason = NULL;
    char text[160];
    uint64_t deadline = tcp_deadline(TCP_REJECT_MS);

    if (bootstrap_wire_decode(p->header, 0, &header, &reason) != FERRY_OK) {
        if (header.magic == BOOTSTRAP_WIRE_MAGIC && header.version != BOOTSTRAP_WIRE_VERSION)
            snprintf(text, sizeof(text),
                     "bootstrap wire version %u, rank 0 speaks %u: run the same ferry version "
                     "everywhere",
                     header.version, BOOTSTRAP_WIRE_VERSION);
        else
            snprintf(text, sizeof(text), "malformed HELLO: %s", reason);
    } else if (header.type != BOOTSTRAP_WIRE_HELLO || header.seq != 0) {
        snprintf(text, sizeof(text), "expected HELLO, got %s (seq %u)",
                 bootstrap_wire_type_name(header.type), header.seq);
    } else if (header.size != bs->size) {
        snprintf(text, sizeof(text),
                 "FERRY_BOOTSTRAP_SIZE=%u, rank 0 has %u: every process needs the same size",
                 header.size, bs->size);
    } else if (header.rank == 0 || tcp->fds[header.rank] >= 0) {
        snprintf(text, sizeof(text), "rank %u already joined: FERRY_BOOTSTRAP_RANK must differ",
                 header.rank);
    } else {
        bootstrap_wire_header_t welcome = tcp_header(bs, BOOTSTRAP_WIRE_WELCOME, header.rank, 0, 0);
        char peer[96];
        snprintf(peer, sizeof(peer), "rank %u at %s", header.rank, p->from);
        if (tcp_send_message(p->fd, &welcome, NULL, tcp_deadline(bs->timeout_ms), peer) != FERRY_OK)
            return false; /* logged; it may reconnect */
        tcp->fds[header.rank] = p->fd;
        fy_debug("tcp bootstrap rank 0: rank %u joined from %s", header.rank, p->from);
        return true;
    }
    fy_warn("tcp bootstrap rank 0 (FERRY_BOOTSTRAP_ROOT=%s): refusing the connection from "
            "%s: %s",
            tcp->root, p->from, text);
    if (header.magic == BOOTSTRAP_WIRE_MAGIC)
        tcp_send_reason(bs, p->fd, BOOTSTRAP_WIRE_REJECT, 0, 0, FERRY_ERR_CONNECTION_REFUSED, text,
                        deadline);
    return false;
}

static void tcp_root_accept(tcp_pending_t *pending, size_t *count, int listen_fd,
                            const tcp_state_t *tcp)
{
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    int fd = accept4(listen_fd, (struct sockaddr *)&addr, &len, SOCK_CLOEXEC);

    if (fd < 0) {
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
            fy_warn("tcp bootstrap rank 0: accept(fd %d) failed: %m", listen_fd);
        return;
    }
    if (*count == TCP_MAX_PENDING) {
        fy_warn("tcp bootstrap rank 0 (FERRY_BOOTSTRAP_ROOT=%s): %d connections have not "
                "sent their HELLO yet: closing a new one",
                tcp->root, TCP_MAX_PENDING);
        close(fd);
        return;
    }
    tcp_nodelay(fd);
    tcp_pending_t *p = &pending[(*count)++];
    p->fd = fd;
    p->got = 0;
    tcp_describe_address(&addr, p->from, sizeof(p->from));
}

/* Read what a pending connection sent; returns false when it must be dropped (closed). */
static bool tcp_root_read_hello(tcp_pending_t *p, const tcp_state_t *tcp)
{
    ssize_t n = recv(p->fd, p->header + p->got, sizeof(p->header) - p->got, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0) {
        fy_warn("tcp bootstrap rank 0 (FERRY_BOOTSTRAP_ROOT=%s): the connection from %s "
                "ended after %zu bytes, before a complete HELLO%s%s",
                tcp->root, p->from, p->got, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        return false;
    }
    p->got += (size_t)n;
    return true;
}

static void tcp_root_log_missing(const ferry_bootstrap_t *bs, const tcp_state_t *tcp)
{
    char list[128] = "";
    size_t used = 0;
    unsigned missing = 0;

    for (unsigned r = 1; r < bs->size; r++) {
        if (tcp->fds[r] >= 0)
            continue;
        if (missing++ < 8 && used < sizeof(list))
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%u",
                                     missing > 1 ? ", " : "", r);
    }
    fy_error("tcp bootstrap rank 0 (FERRY_BOOTSTRAP_ROOT=%s): %u of %u ranks did not join "
             "within %d ms (FERRY_BOOTSTRAP_TIMEOUT_MS): rank %s%s; are they started, with "
             "the same FERRY_BOOTSTRAP_ROOT and FERRY_BOOTSTRAP_SIZE?",
             tcp->root, missing, bs->size - 1, bs->timeout_ms, list, missing > 8 ? ", ..." : "");
}

static ferry_status_t tcp_root_join(ferry_bootstrap_t *bs, tcp_state_t *tcp)
{
    tcp_pending_t pending[TCP_MAX_PENDING];
    struct pollfd pfds[1 + TCP_MAX_PENDING];
    size_t count = 0;
    unsigned joined = 1;
    uint64_t deadline = tcp_deadline(bs->timeout_ms);
    int listen_fd;

    ferry_status_t status = tcp_listen(tcp, bs->size, &listen_fd);
    if (status != FERRY_OK)
        return status;
    while (joined < bs->size) {
        int ms = tcp_ms_left(deadline);
        if (ms == 0) {
            tcp_root_log_missing(bs, tcp);
            status = FERRY_ERR_TIMED_OUT;
            break;
        }
        pfds[0] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
        for (size_t i = 0; i < count; i++)
            pfds[1 + i] = (struct pollfd){.fd = pending[i].fd, .events = POLLIN};
        int n = poll(pfds, 1 + count, ms);
        if (n < 0 && errno != EINTR) {
            fy_error("tcp bootstrap rank 0: poll(listening fd %d and %zu connections) "
                     "failed: %m",
                     listen_fd, count);
            status = FERRY_ERR_IO;
            break;
        }
        if (n <= 0)
            continue;
        /* Pending connections first (backwards: closing one moves the last into its place),
         * then new ones, so that pfds still matches pending. */
        for (size_t i = count; i-- > 0;) {
            if (pfds[1 + i].revents == 0)
                continue;
            tcp_pending_t *p = &pending[i];
            if (!tcp_root_read_hello(p, tcp)) {
                tcp_pending_close(pending, &count, i);
            } else if (p->got == sizeof(p->header)) {
                if (tcp_root_admit(bs, tcp, p)) {
                    joined++;
                    pending[i] = pending[--count];
                } else {
                    tcp_pending_close(pending, &count, i);
                }
            }
        }
        if (pfds[0].revents != 0)
            tcp_root_accept(pending, &count, listen_fd, tcp);
    }
    while (count > 0)
        tcp_pending_close(pending, &count, count - 1);
    close(listen_fd);
    return status;
}

/* ---------------------------------------------------------------- ranks > 0: joining */

/* One connection attempt to one address, non-blocking, until deadline. -1 with errno. */
static int tcp_connect_one(const struct addrinfo *ai, uint64_t deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    int error = 0;
    socklen_t len = sizeof(error);

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS)
            goto err_close;
        int ready = tcp_wait(fd, POLLOUT, deadline);
        if (ready <= 0) {
            errno = ready == 0 ? ETIMEDOUT : errno;
            goto err_close;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
            goto err_close;
        if (error != 0) {
            errno = error;
            goto err_close;
        }
    }
    tcp_nodelay(fd);
    return fd;

err_close:
    error = errno;
    close(fd);
    errno = error;
    return -1;
}

static ferry_status_t tcp_rank_join(ferry_bootstrap_t *bs, tcp_state_t *tcp)
{
    struct addrinfo *list;
    uint64_t deadline = tcp_deadline(bs->timeout_ms);
    int fd = -1, error = 0;
    char peer[300];

    ferry_status_t status = tcp_resolve(tcp, &list);
    if (status != FERRY_OK)
        return status;
    /* Rank 0 may not listen yet: retry until the deadline. */
    while (fd < 0) {
        for (struct addrinfo *ai = list; ai != NULL && fd < 0; ai = ai->ai_next) {
            fd = tcp_connect_one(ai, deadline);
            error = errno;
        }
        if (fd >= 0 || tcp_now_ns() + TCP_RETRY_NS >= deadline)
            break;
        struct timespec pause = {.tv_sec = 0, .tv_nsec = (long)TCP_RETRY_NS};
        nanosleep(&pause, NULL);
    }
    freeaddrinfo(list);
    if (fd < 0) {
        fy_error("tcp bootstrap rank %u: cannot connect to rank 0 at FERRY_BOOTSTRAP_ROOT=%s "
                 "within %d ms: %s (is rank 0 started, and listening there?)",
                 bs->rank, tcp->root, bs->timeout_ms, strerror(error));
        return FERRY_ERR_CONNECTION_REFUSED;
    }

    snprintf(peer, sizeof(peer), "rank 0 at %s", tcp->root);
    bootstrap_wire_header_t hello = tcp_header(bs, BOOTSTRAP_WIRE_HELLO, bs->rank, 0, 0);
    bootstrap_wire_header_t answer;
    status = tcp_send_message(fd, &hello, NULL, deadline, peer);
    if (status == FERRY_OK)
        status = tcp_recv_header(fd, 0, deadline, peer, &answer);
    if (status == FERRY_OK && (answer.type != BOOTSTRAP_WIRE_WELCOME || answer.rank != bs->rank ||
                               answer.size != bs->size)) {
        fy_error("bootstrap: %s answered HELLO with %s for rank %u of %u (expected WELCOME "
                 "for rank %u of %u)",
                 peer, bootstrap_wire_type_name(answer.type), answer.rank, answer.size, bs->rank,
                 bs->size);
        status = FERRY_ERR_PROTOCOL;
    }
    if (status != FERRY_OK) {
        close(fd);
        return status;
    }
    tcp->root_fd = fd;
    return FERRY_OK;
}

/* ---------------------------------------------------------------- the method */

static void tcp_close_all(ferry_bootstrap_t *bs, tcp_state_t *tcp)
{
    if (tcp->root_fd >= 0)
        close(tcp->root_fd);
    if (tcp->fds != NULL) {
        for (unsigned r = 1; r < bs->size; r++) {
            if (tcp->fds[r] >= 0)
                close(tcp->fds[r]);
        }
        free(tcp->fds);
    }
    free(tcp);
}

static ferry_status_t tcp_init(ferry_bootstrap_t *bs)
{
    unsigned size, rank;

    ferry_status_t status = tcp_env_number(&tcp_size_var, 1, TCP_MAX_SIZE, &size);
    if (status == FERRY_OK)
        status = tcp_env_number(&tcp_rank_var, 0, size - 1, &rank);
    if (status != FERRY_OK)
        return status;
    tcp_state_t *tcp = calloc(1, sizeof(*tcp));
    if (tcp == NULL) {
        fy_error("calloc(%zu) for the tcp bootstrap failed", sizeof(*tcp));
        return FERRY_ERR_NO_MEMORY;
    }
    tcp->root_fd = -1;
    bs->rank = rank;
    bs->size = size;
    status = tcp_parse_root(tcp);
    if (status != FERRY_OK)
        goto err_free;
    if (size == 1) {
        /* alone: nobody to wait for, nothing to listen on */
    } else if (rank == 0) {
        tcp->fds = malloc(size * sizeof(*tcp->fds));
        if (tcp->fds == NULL) {
            fy_error("malloc(%zu) for the tcp bootstrap's connections failed",
                     size * sizeof(*tcp->fds));
            status = FERRY_ERR_NO_MEMORY;
            goto err_free;
        }
        for (unsigned r = 0; r < size; r++)
            tcp->fds[r] = -1;
        status = tcp_root_join(bs, tcp);
    } else {
        status = tcp_rank_join(bs, tcp);
    }
    if (status != FERRY_OK)
        goto err_free;
    bs->priv = tcp;
    return FERRY_OK;

err_free:
    tcp_close_all(bs, tcp);
    return status;
}

/* Rank 0 failed a collective: tell every other rank why (best effort), so that they fail at
 * once instead of at their timeout. */
static void tcp_root_abort(ferry_bootstrap_t *bs, tcp_state_t *tcp, ferry_status_t status,
                           unsigned culprit)
{
    char text[128];
    uint64_t deadline = tcp_deadline(TCP_REJECT_MS);

    snprintf(text, sizeof(text), "collective #%u failed at rank %u: %s (see rank 0's log)",
             tcp->seq, culprit, ferry_status_string(status));
    for (unsigned r = 1; r < bs->size; r++) {
        if (r != culprit)
            tcp_send_reason(bs, tcp->fds[r], BOOTSTRAP_WIRE_ABORT, r, tcp->seq, status, text,
                            deadline);
    }
}

/* Rank 0's side of a collective: gather every part in rank order, then send the result. */
static ferry_status_t tcp_root_collective(ferry_bootstrap_t *bs, tcp_state_t *tcp, unsigned type,
                                          size_t length, uint8_t *all)
{
    uint64_t deadline = tcp_deadline(bs->timeout_ms);
    ferry_status_t status = FERRY_OK;
    char peer[32];
    unsigned r;

    for (r = 1; r < bs->size && status == FERRY_OK; r++) {
        bootstrap_wire_header_t header;
        snprintf(peer, sizeof(peer), "rank %u", r);
        status = tcp_recv_header(tcp->fds[r], bs->max_length, deadline, peer, &header);
        if (status != FERRY_OK)
            break;
        if (header.type != type || header.seq != tcp->seq || header.rank != r ||
            header.size != bs->size || header.length != length) {
            fy_error("tcp bootstrap rank 0: collective #%u is %s of %zu bytes per rank, but "
                     "rank %u sent %s #%u of %llu bytes as rank %u of %u: every rank must "
                     "call the same collectives in the same order with the same length",
                     tcp->seq, bootstrap_wire_type_name(type), length, r,
                     bootstrap_wire_type_name(header.type), header.seq,
                     (unsigned long long)header.length, header.rank, header.size);
            status = FERRY_ERR_PROTOCOL;
            break;
        }
        if (length > 0)
            status = tcp_read_all(tcp->fds[r], all + (size_t)r * length, length, deadline, peer);
    }
    if (status != FERRY_OK) {
        tcp_root_abort(bs, tcp, status, r);
        return status;
    }

    uint64_t total = (uint64_t)length * bs->size;
    for (r = 1; r < bs->size && status == FERRY_OK; r++) {
        bootstrap_wire_header_t result = tcp_header(bs, BOOTSTRAP_WIRE_RESULT, r, tcp->seq, total);
        snprintf(peer, sizeof(peer), "rank %u", r);
        status = tcp_send_message(tcp->fds[r], &result, all, deadline, peer);
    }
    return status;
}

/* A rank's side: send its part, receive the result (or ABORT). */
static ferry_status_t tcp_rank_collective(ferry_bootstrap_t *bs, tcp_state_t *tcp, unsigned type,
                                          const void *mine, size_t length, uint8_t *all)
{
    uint64_t deadline = tcp_deadline(bs->timeout_ms);
    uint64_t total = (uint64_t)length * bs->size;
    bootstrap_wire_header_t header = tcp_header(bs, type, bs->rank, tcp->seq, length);
    char peer[300];

    snprintf(peer, sizeof(peer), "rank 0 at %s", tcp->root);
    ferry_status_t status = tcp_send_message(tcp->root_fd, &header, mine, deadline, peer);
    if (status == FERRY_OK)
        status = tcp_recv_header(tcp->root_fd, total, deadline, peer, &header);
    if (status != FERRY_OK)
        return status;
    if (header.type != BOOTSTRAP_WIRE_RESULT || header.seq != tcp->seq || header.rank != bs->rank ||
        header.size != bs->size || header.length != total) {
        fy_error("bootstrap: %s answered collective #%u (%s, %llu bytes in all) with %s #%u "
                 "of %llu bytes for rank %u of %u",
                 peer, tcp->seq, bootstrap_wire_type_name(type), (unsigned long long)total,
                 bootstrap_wire_type_name(header.type), header.seq,
                 (unsigned long long)header.length, header.rank, header.size);
        return FERRY_ERR_PROTOCOL;
    }
    if (total > 0)
        status = tcp_read_all(tcp->root_fd, all, (size_t)total, deadline, peer);
    return status;
}

static ferry_status_t tcp_collective(ferry_bootstrap_t *bs, unsigned type, const void *mine,
                                     size_t length, void *all)
{
    tcp_state_t *tcp = bs->priv;

    if (length > 0)
        memcpy((uint8_t *)all + (size_t)bs->rank * length, mine, length);
    if (bs->size == 1)
        return FERRY_OK;
    tcp->seq++;
    if (bs->rank == 0)
        return tcp_root_collective(bs, tcp, type, length, all);
    return tcp_rank_collective(bs, tcp, type, mine, length, all);
}

static ferry_status_t tcp_allgather(ferry_bootstrap_t *bs, const void *mine, size_t length,
                                    void *all)
{
    tcp_waiting_bs = bs;
    ferry_status_t status = tcp_collective(bs, BOOTSTRAP_WIRE_ALLGATHER, mine, length, all);
    tcp_waiting_bs = NULL;
    return status;
}

static ferry_status_t tcp_barrier(ferry_bootstrap_t *bs)
{
    tcp_waiting_bs = bs;
    ferry_status_t status = tcp_collective(bs, BOOTSTRAP_WIRE_BARRIER, NULL, 0, NULL);
    tcp_waiting_bs = NULL;
    return status;
}

static void tcp_finalize(ferry_bootstrap_t *bs)
{
    if (bs->priv != NULL)
        tcp_close_all(bs, bs->priv);
    bs->priv = NULL;
}

const bootstrap_ops_t bootstrap_tcp_ops = {
    .method = FERRY_BOOTSTRAP_METHOD_TCP,
    .init = tcp_init,
    .locality = NULL, /* host identities, exchanged by bootstrap.c */
    .allgather = tcp_allgather,
    .barrier = tcp_barrier,
    .finalize = tcp_finalize,
};
