/* The bootstrap channel: one TCP connection between client and server. It carries the test
 * parameters (client to server), the worker addresses and, for the one-sided tests, the packed
 * remote keys (both ways, length-prefixed), the server's final verdict, and tells each side
 * when the other process is gone. Every call
 * has a deadline. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"

#define PERF_PARAMS_MAGIC 0x66706572u /* "perf" */
#define PERF_PARAMS_VERSION 2u

/* Wait until fd is ready for events, up to deadline_ns. Returns 1 ready, 0 timed out, -1 error. */
static int tcp_wait(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        uint64_t now = perf_now_ns();
        if (now >= deadline_ns)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        int ms = (int)((deadline_ns - now + 999999) / 1000000);
        int n = poll(&pfd, 1, ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "ferry_perf: poll(fd %d) failed: %s\n", fd, strerror(errno));
            return -1;
        }
        if (n > 0)
            return 1;
    }
}

/* A listening socket of one family; -1 with errno set when it fails. */
static int tcp_listen_family(int family, unsigned port)
{
    struct sockaddr_in6 addr6 = {
        .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = in6addr_any};
    struct sockaddr_in addr4 = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_ANY)};
    int one = 1, zero = 0;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)); /* IPv4 clients too */
    int rc = family == AF_INET6 ? bind(fd, (struct sockaddr *)&addr6, sizeof(addr6))
                                : bind(fd, (struct sockaddr *)&addr4, sizeof(addr4));
    if (rc != 0 || listen(fd, 1) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int perf_tcp_listen(unsigned port)
{
    int fd = tcp_listen_family(AF_INET6, port);
    if (fd < 0 && errno != EADDRINUSE)
        fd = tcp_listen_family(AF_INET, port); /* no IPv6 here */
    if (fd < 0) {
        fprintf(stderr, "ferry_perf: cannot listen on TCP port %u: %s%s\n", port, strerror(errno),
                errno == EADDRINUSE ? " (another server runs there? choose a port with -p)" : "");
        return -1;
    }
    return fd;
}

int perf_tcp_accept(int listen_fd, unsigned timeout_s)
{
    uint64_t deadline = perf_now_ns() + (uint64_t)timeout_s * 1000000000ull;
    int ready = tcp_wait(listen_fd, POLLIN, deadline);
    if (ready <= 0) {
        if (ready == 0)
            fprintf(stderr, "ferry_perf: no client connected within %u s\n", timeout_s);
        return -1;
    }
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "ferry_perf: accept failed: %s\n", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Connect to one resolved address with a deadline; -1 with errno set when it fails. */
static int tcp_connect_one(const struct addrinfo *ai, uint64_t deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS)
            goto err_close;
        int ready = tcp_wait(fd, POLLOUT, deadline);
        int error = 0;
        socklen_t len = sizeof(error);
        if (ready <= 0) {
            errno = ETIMEDOUT;
            goto err_close;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
            goto err_close;
        if (error != 0) {
            errno = error;
            goto err_close;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;

err_close : {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}
}

int perf_tcp_connect(const char *host, unsigned port, unsigned timeout_s)
{
    uint64_t deadline = perf_now_ns() + (uint64_t)timeout_s * 1000000000ull;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list;
    char service[16];
    int error = 0;

    snprintf(service, sizeof(service), "%u", port);
    int rc = getaddrinfo(host, service, &hints, &list);
    if (rc != 0) {
        fprintf(stderr, "ferry_perf: cannot resolve %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    /* The server may not be listening yet: retry refused connections until the deadline. */
    for (;;) {
        for (struct addrinfo *ai = list; ai != NULL; ai = ai->ai_next) {
            int fd = tcp_connect_one(ai, deadline);
            if (fd >= 0) {
                freeaddrinfo(list);
                return fd;
            }
            error = errno;
        }
        if (error != ECONNREFUSED || perf_now_ns() + 50000000ull >= deadline)
            break;
        usleep(50000);
    }
    freeaddrinfo(list);
    fprintf(stderr, "ferry_perf: cannot connect to %s port %u: %s%s\n", host, port, strerror(error),
            error == ECONNREFUSED ? " (is `ferry_perf -p PORT` running there?)" : "");
    return -1;
}

static int tcp_write_all(int fd, const void *data, size_t length, uint64_t deadline)
{
    const uint8_t *p = data;
    while (length > 0) {
        ssize_t n = send(fd, p, length, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            int ready = tcp_wait(fd, POLLOUT, deadline);
            if (ready <= 0) {
                if (ready == 0)
                    fprintf(stderr, "ferry_perf: sending to the peer timed out\n");
                return -1;
            }
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "ferry_perf: send to the peer failed: %s\n", strerror(errno));
            return -1;
        }
        p += n;
        length -= (size_t)n;
    }
    return 0;
}

static int tcp_read_all(int fd, void *data, size_t length, uint64_t deadline)
{
    uint8_t *p = data;
    while (length > 0) {
        ssize_t n = recv(fd, p, length, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            int ready = tcp_wait(fd, POLLIN, deadline);
            if (ready <= 0) {
                if (ready == 0)
                    fprintf(stderr, "ferry_perf: the peer did not answer in time\n");
                return -1;
            }
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "ferry_perf: recv from the peer failed: %s\n", strerror(errno));
            return -1;
        }
        if (n == 0) {
            fprintf(stderr, "ferry_perf: the peer closed the connection\n");
            return -1;
        }
        p += n;
        length -= (size_t)n;
    }
    return 0;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int perf_tcp_send_blob(int fd, const void *data, size_t length, unsigned timeout_s)
{
    uint64_t deadline = perf_now_ns() + (uint64_t)timeout_s * 1000000000ull;
    uint8_t prefix[4];
    put_u32(prefix, (uint32_t)length);
    if (tcp_write_all(fd, prefix, sizeof(prefix), deadline) != 0)
        return -1;
    return tcp_write_all(fd, data, length, deadline);
}

int perf_tcp_recv_blob(int fd, void **data_p, size_t *length_p, size_t max, unsigned timeout_s)
{
    uint64_t deadline = perf_now_ns() + (uint64_t)timeout_s * 1000000000ull;
    uint8_t prefix[4];
    if (tcp_read_all(fd, prefix, sizeof(prefix), deadline) != 0)
        return -1;
    size_t length = get_u32(prefix);
    if (length > max) {
        fprintf(stderr,
                "ferry_perf: the peer announced %zu bytes (at most %zu expected): not "
                "a ferry_perf peer of this version?\n",
                length, max);
        return -1;
    }
    void *data = malloc(length ? length : 1);
    if (data == NULL) {
        fprintf(stderr, "ferry_perf: malloc(%zu) failed\n", length);
        return -1;
    }
    if (tcp_read_all(fd, data, length, deadline) != 0) {
        free(data);
        return -1;
    }
    *data_p = data;
    *length_p = length;
    return 0;
}

/* Encoding: magic, version, test, modes (1 wait, 2 tag_from, 4 tag_sync, bits 8..15 threads),
 * repeat, size_count, mem, no_thp (u32 each), then per size: size, iters, warmup (u64 each);
 * little-endian. */
#define PARAMS_FIXED 32u
#define PARAMS_PER_SIZE 24u

int perf_tcp_send_params(int fd, const perf_params_t *params, unsigned timeout_s)
{
    uint8_t buffer[PARAMS_FIXED + PARAMS_PER_SIZE * PERF_MAX_SIZES];
    put_u32(buffer + 0, PERF_PARAMS_MAGIC);
    put_u32(buffer + 4, PERF_PARAMS_VERSION);
    put_u32(buffer + 8, (uint32_t)params->test);
    put_u32(buffer + 12, (params->wait ? 1u : 0u) | (params->tag_from ? 2u : 0u) |
                             (params->tag_sync ? 4u : 0u) | (params->threads << 8));
    put_u32(buffer + 16, params->repeat);
    put_u32(buffer + 20, params->size_count);
    put_u32(buffer + 24, (uint32_t)params->mem);
    put_u32(buffer + 28, params->no_thp ? 1 : 0);
    for (unsigned i = 0; i < params->size_count; i++) {
        uint8_t *p = buffer + PARAMS_FIXED + PARAMS_PER_SIZE * i;
        put_u64(p, params->sizes[i]);
        put_u64(p + 8, params->iters[i]);
        put_u64(p + 16, params->warmup[i]);
    }
    return perf_tcp_send_blob(fd, buffer, PARAMS_FIXED + PARAMS_PER_SIZE * params->size_count,
                              timeout_s);
}

int perf_tcp_recv_params(int fd, perf_params_t *params, unsigned timeout_s)
{
    void *data;
    size_t length;
    if (perf_tcp_recv_blob(fd, &data, &length, PARAMS_FIXED + PARAMS_PER_SIZE * PERF_MAX_SIZES,
                           timeout_s) != 0)
        return -1;
    const uint8_t *p = data;
    int result = -1;
    if (length < PARAMS_FIXED || get_u32(p) != PERF_PARAMS_MAGIC ||
        get_u32(p + 4) != PERF_PARAMS_VERSION) {
        fprintf(stderr, "ferry_perf: the client is not a ferry_perf of this version\n");
        goto out;
    }
    memset(params, 0, sizeof(*params));
    uint32_t test = get_u32(p + 8);
    uint32_t modes = get_u32(p + 12);
    params->wait = (modes & 1u) != 0;
    params->tag_from = (modes & 2u) != 0;
    params->tag_sync = (modes & 4u) != 0;
    params->threads = (modes >> 8) & 0xffu;
    params->repeat = get_u32(p + 16);
    params->size_count = get_u32(p + 20);
    uint32_t mem = get_u32(p + 24);
    params->mem = mem == PERF_MEM_REGISTER ? PERF_MEM_REGISTER : PERF_MEM_ALLOC;
    params->no_thp = get_u32(p + 28) != 0;
    if (test == PERF_TEST_NONE || test > PERF_TEST_LAST || mem > PERF_MEM_REGISTER ||
        params->threads > PERF_MAX_THREADS || params->repeat == 0 || params->size_count == 0 ||
        params->size_count > PERF_MAX_SIZES ||
        length != PARAMS_FIXED + PARAMS_PER_SIZE * params->size_count) {
        fprintf(stderr, "ferry_perf: malformed test parameters from the client\n");
        goto out;
    }
    params->test = (perf_test_t)test;
    for (unsigned i = 0; i < params->size_count; i++) {
        const uint8_t *q = p + PARAMS_FIXED + PARAMS_PER_SIZE * i;
        params->sizes[i] = get_u64(q);
        params->iters[i] = get_u64(q + 8);
        params->warmup[i] = get_u64(q + 16);
        if (params->sizes[i] > PERF_MAX_MESSAGE || params->iters[i] == 0) {
            fprintf(stderr,
                    "ferry_perf: malformed test parameters from the client (size %llu, "
                    "%llu iterations)\n",
                    (unsigned long long)params->sizes[i], (unsigned long long)params->iters[i]);
            goto out;
        }
    }
    result = 0;
out:
    free(data);
    return result;
}

bool perf_tcp_peer_gone(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&pfd, 1, 0) <= 0)
        return false;
    if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))
        return true;
    if (pfd.revents & POLLIN) {
        /* nothing is sent during a test: readable means end-of-file (or a confused peer) */
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
    }
    return false;
}
