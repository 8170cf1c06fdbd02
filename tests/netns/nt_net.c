/* nt_net: plain TCP (no ferry) to prove the test bed's links and faults.
 *
 *   nt_net listen PORT                 accept one connection, read to EOF, print what came
 *   nt_net send ADDR PORT BYTES [MS]   send BYTES (a byte pattern); MS: TCP_USER_TIMEOUT
 *
 * Each side prints one line "nt_net: <role> <bytes> bytes in <s> s (<MB/s> MB/s)" or
 * "nt_net: <role> error after <ms> ms: <strerror>" and exits 0 or 3. The receiver checks every
 * byte against the pattern (offset & 0xff ^ 0x5a). A 60 s alarm ends a run that hangs. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int report_error(const char *role, double start)
{
    int saved = errno;
    printf("nt_net: %s error after %.0f ms: %s\n", role, (now_s() - start) * 1e3, strerror(saved));
    return 3;
}

static void report_done(const char *role, uint64_t bytes, double start)
{
    double s = now_s() - start;
    printf("nt_net: %s %llu bytes in %.3f s (%.1f MB/s)\n", role, (unsigned long long)bytes, s,
           s > 0 ? (double)bytes / s / 1e6 : 0.0);
}

static int do_listen(unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 1) != 0)
        return report_error("listen", now_s());
    printf("nt_net: listening on port %u\n", port);
    fflush(stdout);
    int c = accept(fd, NULL, NULL);
    if (c < 0)
        return report_error("accept", now_s());
    static uint8_t buf[1 << 16];
    uint64_t total = 0;
    double start = now_s();
    for (;;) {
        ssize_t n = read(c, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return report_error("receiver", start);
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != (uint8_t)(((total + (uint64_t)i) & 0xff) ^ 0x5a)) {
                printf("nt_net: receiver: byte %llu differs\n", (unsigned long long)(total + i));
                return 3;
            }
        }
        total += (uint64_t)n;
    }
    report_done("receiver", total, start);
    return 0;
}

static int do_send(const char *addr, unsigned port, uint64_t bytes, unsigned user_timeout_ms)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
        fprintf(stderr, "nt_net: bad IPv4 address '%s'\n", addr);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (user_timeout_ms > 0)
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
    double start = now_s();
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return report_error("connect", start);
    static uint8_t buf[1 << 16];
    uint64_t sent = 0;
    while (sent < bytes) {
        size_t len = bytes - sent < sizeof(buf) ? (size_t)(bytes - sent) : sizeof(buf);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)(((sent + i) & 0xff) ^ 0x5a);
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return report_error("sender", start);
        sent += (uint64_t)n;
        if (sent >= bytes / 2 && sent - (uint64_t)n < bytes / 2) {
            printf("nt_net: sender half-way\n");
            fflush(stdout);
        }
    }
    shutdown(fd, SHUT_WR);
    char c;
    if (read(fd, &c, 1) < 0) /* until the receiver closed: everything arrived */
        return report_error("sender", start);
    report_done("sender", sent, start);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(60);
    if (argc == 3 && strcmp(argv[1], "listen") == 0)
        return do_listen((unsigned)atoi(argv[2]));
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "send") == 0)
        return do_send(argv[2], (unsigned)atoi(argv[3]), strtoull(argv[4], NULL, 0),
                       argc == 6 ? (unsigned)atoi(argv[5]) : 0);
    fprintf(stderr, "usage: nt_net listen PORT | nt_net send ADDR PORT BYTES [USER_TIMEOUT_MS]\n");
    return 2;
}
