/* Bad input on a tcp worker's port (run with FERRY_TRANSPORTS=tcp and short timeouts): a raw
 * socket client that is not ferry connects to the worker (the port is read from the tcp
 * record of its address) and sends
 *   - a frame whose payload length is beyond FERRY_TCP_MAX_FRAME,
 *   - a frame of an unknown type,
 *   - a truncated header, then closes,
 *   - text as nc would send it ("GET / HTTP/1.0\r\n\r\n"),
 *   - half a header, then nothing (a stalled connection: FERRY_TCP_CONNECT_TIMEOUT_MS).
 * Each closes only that connection (the client sees it end) with exactly one log line naming
 * the client's address, and a real ferry peer (the echo peer) keeps ping-ponging with the
 * worker between the bad inputs. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ft.h"

#define TB_CLOSING "tcp: closing the connection from 127.0.0.1:"

/* The tcp record's port in a worker address (src/wireup/address.h; record id 3: u8 version,
 * u8 count, u16 port, ...). */
static uint16_t tb_port(ferry_worker_t *worker)
{
    const uint8_t *a;
    size_t length;
    FT_CHECK_OK(ferry_worker_address(worker, (const void **)&a, &length));
    size_t off = 64;
    while (off + 4 <= length) {
        uint16_t rl = (uint16_t)(a[off + 2] | (a[off + 3] << 8));
        if (a[off] == 3 && rl >= 4)
            return (uint16_t)(a[off + 4 + 2] | (a[off + 4 + 3] << 8));
        off += 4 + rl;
    }
    ft_fail_at(__FILE__, __LINE__, "the worker's address has no tcp record");
    return 0;
}

static int tb_connect(uint16_t port)
{
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(port)};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FT_CHECK(fd >= 0, "socket: %s", strerror(errno));
    FT_CHECK(connect(fd, (struct sockaddr *)&in, sizeof(in)) == 0, "connect(127.0.0.1:%u): %s",
             port, strerror(errno));
    return fd;
}

/* Has the worker closed fd (EOF or reset)? */
static bool tb_closed(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
        return false;
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN);
}

typedef struct tb_wait {
    int fd;        /* -1: the client closed it itself */
    size_t before; /* closing lines before */
    const char *needle;
} tb_wait_t;

static bool tb_done(void *arg)
{
    tb_wait_t *w = arg;
    char *text = ft_capture_text();
    size_t lines = ft_count(text, TB_CLOSING);
    bool reason = ft_count(text, w->needle) > 0;
    free(text);
    return lines > w->before && reason && (w->fd < 0 || tb_closed(w->fd));
}

static size_t tb_lines(void)
{
    char *text = ft_capture_text();
    size_t n = ft_count(text, TB_CLOSING);
    free(text);
    return n;
}

static void tb_header(uint8_t raw[24], uint8_t type, uint64_t length)
{
    memset(raw, 0, 24);
    uint32_t magic = 0x50435446u;
    memcpy(raw, &magic, 4); /* little-endian hosts only, like the rest of the tests */
    raw[4] = 1;
    raw[5] = type;
    memcpy(raw + 16, &length, 8);
}

static void tb_case(ferry_worker_t *worker, ft_echo_client_t *echo, uint16_t port, const char *what,
                    const void *bytes, size_t length, bool close_after, const char *needle)
{
    tb_wait_t w = {.before = tb_lines(), .needle = needle};
    int fd = tb_connect(port);
    FT_CHECK(send(fd, bytes, length, MSG_NOSIGNAL) == (ssize_t)length, "%s: send: %s", what,
             strerror(errno));
    if (close_after) {
        close(fd);
        fd = -1;
    }
    w.fd = fd;
    ft_progress_until(worker, 10000, tb_done, &w, what);
    FT_CHECK(tb_lines() == w.before + 1, "%s: %zu closing lines, expected one", what,
             tb_lines() - w.before);
    if (fd >= 0)
        close(fd);
    ft_echo_pingpong(echo, 20, 3000); /* the worker still serves a real peer */
    ft_note("%s: that connection closed with one log line; the echo peer still served", what);
}

int main(void)
{
    ft_peer_t echo_peer;
    ft_echo_client_t echo;
    ft_ferry_t f;
    uint8_t raw[24];

    ft_set_role("main");
    ft_watchdog(55);
    ft_peer_spawn(&echo_peer, "echo", ft_echo_role, NULL);
    ft_ferry_init(&f, "tcp", NULL);
    ft_echo_connect(&echo, f.worker, &echo_peer);
    FT_CHECK(strcmp(ferry_ep_transport_name(echo.ep), "tcp") == 0, "the echo peer uses %s",
             ferry_ep_transport_name(echo.ep));
    ft_echo_pingpong(&echo, 10, 100);
    uint16_t port = tb_port(f.worker);
    ft_capture_begin();

    tb_header(raw, 2 /* AM */, (1ull << 30) + 1); /* FERRY_TCP_MAX_FRAME is 1 GiB */
    tb_case(f.worker, &echo, port, "a frame longer than FERRY_TCP_MAX_FRAME", raw, sizeof(raw),
            false, "longer than FERRY_TCP_MAX_FRAME");
    tb_header(raw, 99, 0);
    tb_case(f.worker, &echo, port, "an unknown frame type", raw, sizeof(raw), false,
            "unknown frame type");
    tb_header(raw, 1, 100);
    tb_case(f.worker, &echo, port, "a truncated header, then close", raw, 10, true,
            "in the middle of a frame before its HELLO");
    static const char http[] = "GET / HTTP/1.0\r\n\r\n";
    tb_case(f.worker, &echo, port, "text from a program that is not ferry", http, sizeof(http) - 1,
            false, "bad magic");
    tb_header(raw, 1, 100);
    tb_case(f.worker, &echo, port, "half a header, then a stall", raw, 12, false,
            "no HELLO within FERRY_TCP_CONNECT_TIMEOUT_MS");

    char *text = ft_capture_end();
    FT_CHECK(echo.errors == 0, "the echo endpoint failed");
    free(text);
    ft_echo_finish(&echo, &echo_peer);
    ft_ferry_fini(&f);
    ft_files_check_self();
    ft_note("passed");
    return 0;
}
