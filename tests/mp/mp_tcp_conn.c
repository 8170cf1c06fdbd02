/* tcp connections (run with FERRY_TRANSPORTS=tcp):
 *
 *   simultaneous  two workers create endpoints to each other at the same moment (both connect
 *                 at once), 30 rounds: each time exactly one TCP connection results (the
 *                 established TCP sockets of the process, from /proc/net/tcp{,6} and
 *                 /proc/self/fd), 200 messages flow each way, every byte checked, in order;
 *                 then each creates a second endpoint to the other and sends 200 more on it,
 *                 all of which must arrive (a connection the peer closed by the
 *                 simultaneous-connect rule could reach a worker after its own one was up:
 *                 endpoints put on it lost their messages, fi_av_xfer over tcp hung 1 run in
 *                 4-80); then both close their endpoints and the connection goes away (IDLE
 *                 both ways) before the next round;
 *   congestion    FERRY_TCP_CONGESTION: a connection's socket runs cubic by default (where the
 *                 kernel has it; a pacing system default such as bbr delays large messages),
 *                 reno when named, the system's with "system", with a name the kernel lacks
 *                 (one warning) and with a malformed one (one warning); 256 KiB round trips on
 *                 each;
 *   stopped       a peer that stops responding (SIGSTOP) fails the endpoint with
 *                 FERRY_ERR_ENDPOINT_TIMEOUT within FERRY_TCP_TIMEOUT_MS (1500 ms here) plus
 *                 slack, although the kernel still acknowledges everything;
 *   killed        SIGKILL of the peer: the error callback runs with FERRY_ERR_CONNECTION_RESET
 *                 within 1 s;
 *   self-stalled  this process calls no progress for longer than FERRY_TCP_TIMEOUT_MS while
 *                 its peer does: the peer times the connection out (as documented), and this
 *                 worker, at its next progress call, says once that it did not call progress
 *                 and does not blame the peer for a silence of its own making (the peer's PINGs
 *                 waited unread in the socket); its endpoint fails with
 *                 FERRY_ERR_CONNECTION_RESET. */
#define _GNU_SOURCE
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ft.h"

enum { TC_ID_MSG = 7, TC_ID_MSG2 = 8 };
enum { TC_ROUNDS = 30, TC_MESSAGES = 200 };
enum { TC_TOKEN_GO = 0x474f2020, TC_TOKEN_DONE = 0x444f4e45, TC_TOKEN_CLOSED = 0x434c4f53 };
#define TC_TIMEOUT_MS 1500u

/* ------------------------------------------------------------------ counting sockets */

/* Inodes of established TCP sockets (state 01) in /proc/net/tcp and tcp6. */
static size_t tc_established_inodes(unsigned long *inodes, size_t max)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    size_t n = 0;
    for (size_t f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        char line[512];
        if (fp == NULL)
            continue;
        while (fgets(line, sizeof(line), fp) != NULL) {
            char local[64], remote[64];
            unsigned state;
            unsigned long inode;
            if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &state,
                       &inode) == 4 &&
                state == 1 && n < max)
                inodes[n++] = inode;
        }
        fclose(fp);
    }
    return n;
}

/* Established TCP connections of this process: how many, and the first one's fd (*fd_p, may be
 * NULL). */
static unsigned tc_established_fds(int *fd_p)
{
    unsigned long inodes[4096];
    size_t count = tc_established_inodes(inodes, 4096);
    unsigned mine = 0;
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    FT_CHECK(dir != NULL, "opendir(/proc/self/fd)");
    while ((e = readdir(dir)) != NULL) {
        char path[300], target[128];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        unsigned long inode;
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (sscanf(target, "socket:[%lu]", &inode) != 1)
            continue;
        for (size_t i = 0; i < count; i++) {
            if (inodes[i] == inode) {
                if (mine++ == 0 && fd_p != NULL)
                    *fd_p = atoi(e->d_name);
                break;
            }
        }
    }
    closedir(dir);
    return mine;
}

static unsigned tc_count_connections(void)
{
    return tc_established_fds(NULL);
}

/* ------------------------------------------------------------------ simultaneous connects */

typedef struct tc_rx {
    uint32_t sender;
    uint64_t received;
    uint32_t round;
} tc_rx_t;

static ferry_status_t tc_handler(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    tc_rx_t *rx = arg;
    uint32_t h[2];
    (void)params;
    FT_CHECK(header_length == sizeof(h), "a %zu-byte header", header_length);
    memcpy(h, header, sizeof(h));
    FT_CHECK(h[0] == rx->round && h[1] == rx->received,
             "message (round %u, seq %u) where (round %u, seq %llu) was expected", h[0], h[1],
             rx->round, (unsigned long long)rx->received);
    ft_pattern_check(data, length, ft_pattern_seed(rx->sender, h[0] * 1000u + h[1], length), 0,
                     "a simultaneous-connect message");
    rx->received++;
    return FERRY_OK;
}

typedef struct tc_zero {
    unsigned want;
} tc_zero_t;

static bool tc_connections_are(void *arg)
{
    return tc_count_connections() == ((tc_zero_t *)arg)->want;
}

/* TC_MESSAGES messages of a round on ep (header: round, sequence; a checked payload). */
static void tc_send_round(ft_ferry_t *f, ferry_ep_t *ep, unsigned id, uint32_t me, uint32_t round,
                          uint8_t *payload, size_t capacity)
{
    for (uint32_t i = 0; i < TC_MESSAGES; i++) {
        uint32_t h[2] = {round, i};
        size_t size = (i * 37u) % capacity;
        ft_pattern_fill(payload, size, ft_pattern_seed(me, round * 1000u + i, size), 0);
        ft_am_send_ok(f->worker, ep, id, h, sizeof(h), payload, size, NULL, 30000);
    }
}

/* Close ep gracefully and destroy it. */
static void tc_close(ft_ferry_t *f, ferry_ep_t *ep)
{
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(ep, 0, &comp);
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(f->worker, 30000, &comp, "the graceful close");
    ferry_ep_destroy(ep);
}

static int tc_simul_role(int chan, void *arg)
{
    uint32_t me = (uint32_t)(uintptr_t)arg;
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_t f;
    tc_rx_t rx = {.sender = 1 - me};
    tc_rx_t rx2 = {.sender = 1 - me}; /* the second endpoints' messages */
    uint8_t payload[3000];

    ft_ferry_init(&f, "tcp", NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, TC_ID_MSG, tc_handler, &rx));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, TC_ID_MSG2, tc_handler, &rx2));
    ft_send_address(chan, f.worker);
    size_t length = ft_recv_address(chan, address, sizeof(address), 30000);
    for (uint32_t round = 0; round < TC_ROUNDS; round++) {
        /* rx already expects this round: the other worker may get its GO first and send
         * while this one still waits for GO here (progressing, so receiving) */
        ft_progress_until_token(f.worker, chan, TC_TOKEN_GO, 30000, NULL);
        ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL); /* both at once */
        tc_send_round(&f, ep, TC_ID_MSG, me, round, payload, sizeof(payload));
        ft_progress_until_count(f.worker, 30000, &rx.received, TC_MESSAGES,
                                "the other worker's messages");
        ferry_ep_t *ep2 = ft_ep_create(f.worker, address, length, NULL);
        tc_send_round(&f, ep2, TC_ID_MSG2, me, round, payload, sizeof(payload));
        ft_progress_until_count(f.worker, 30000, &rx2.received, TC_MESSAGES,
                                "the other worker's messages on its second endpoint");
        unsigned n = tc_count_connections();
        FT_CHECK(n == 1, "round %u: %u TCP connections between the two workers, expected 1", round,
                 n);
        ft_chan_send_token(chan, TC_TOKEN_DONE, round, 0, 0, 0);
        ft_progress_until_token(f.worker, chan, TC_TOKEN_CLOSED, 30000, NULL);
        tc_close(&f, ep);
        tc_close(&f, ep2);
        tc_zero_t zero = {.want = 0};
        ft_progress_until(f.worker, 30000, tc_connections_are, &zero,
                          "the connection to go away once both sides closed");
        rx.round = round + 1; /* every message of this round arrived: the next may start */
        rx.received = 0;
        rx2.round = round + 1;
        rx2.received = 0;
        ft_chan_send_token(chan, TC_TOKEN_DONE, round, 1, 0, 0);
    }
    ft_chan_expect_eof(chan, 30000);
    ft_ferry_fini(&f);
    return 0;
}

static void tc_simultaneous(void)
{
    ft_peer_t peers[2];
    uint8_t address[2][FT_CHAN_MSG_MAX];
    size_t length[2];
    ft_peer_spawn(&peers[0], "a", tc_simul_role, (void *)(uintptr_t)0);
    ft_peer_spawn(&peers[1], "b", tc_simul_role, (void *)(uintptr_t)1);
    for (int i = 0; i < 2; i++)
        length[i] = ft_chan_recv(peers[i].chan, address[i], sizeof(address[i]), 30000);
    for (int i = 0; i < 2; i++)
        ft_chan_send(peers[i].chan, address[1 - i], length[1 - i]);
    uint64_t start = ft_now_ns();
    for (uint32_t round = 0; round < TC_ROUNDS; round++) {
        for (int i = 0; i < 2; i++)
            ft_chan_send_token(peers[i].chan, TC_TOKEN_GO, round, 0, 0, 0);
        for (int i = 0; i < 2; i++)
            ft_chan_expect_token(peers[i].chan, TC_TOKEN_DONE, 30000);
        for (int i = 0; i < 2; i++)
            ft_chan_send_token(peers[i].chan, TC_TOKEN_CLOSED, round, 0, 0, 0);
        for (int i = 0; i < 2; i++)
            ft_chan_expect_token(peers[i].chan, TC_TOKEN_DONE, 30000);
    }
    for (int i = 0; i < 2; i++) {
        close(peers[i].chan);
        ft_peer_expect_exit(&peers[i], 30000, 0);
    }
    ft_note("simultaneous connects: %u rounds, one connection each, %u messages each way on "
            "each of two endpoints, closed between rounds, %.2f s",
            TC_ROUNDS, TC_MESSAGES, (double)(ft_now_ns() - start) / 1e9);
}

/* ------------------------------------------------------------------ stopped, killed */

static bool tc_failed(void *arg)
{
    return ((ft_echo_client_t *)arg)->errors > 0;
}

static void tc_peer_gone(int sig, ferry_status_t expected, unsigned limit_ms)
{
    ft_peer_t echo_peer;
    ft_echo_client_t echo;
    ft_ferry_t f;
    ft_peer_spawn(&echo_peer, sig == SIGSTOP ? "stopped" : "killed", ft_echo_role, NULL);
    ft_ferry_init(&f, "tcp", NULL);
    ft_echo_connect(&echo, f.worker, &echo_peer);
    ft_echo_pingpong(&echo, 20, 1000);
    uint64_t start = ft_now_ns();
    FT_CHECK(kill(echo_peer.pid, sig) == 0, "kill(%d)", sig);
    ft_progress_until(f.worker, (int)limit_ms + 5000, tc_failed, &echo,
                      "the endpoint to fail after the peer was signalled");
    double ms = (double)(ft_now_ns() - start) / 1e6;
    FT_CHECK(echo.error == expected, "the endpoint failed with %s, expected %s",
             ferry_status_name(echo.error), ferry_status_name(expected));
    FT_CHECK(ms <= limit_ms, "the endpoint failed %.0f ms after the signal, limit %u ms", ms,
             limit_ms);
    ft_note("%s peer: endpoint failed with %s after %.0f ms (limit %u ms)",
            sig == SIGSTOP ? "stopped (SIGSTOP)" : "killed (SIGKILL)",
            ferry_status_name(echo.error), ms, limit_ms);
    ferry_ep_destroy(echo.ep);
    ft_ferry_fini(&f);
    if (sig == SIGSTOP)
        ft_peer_kill(&echo_peer);
    else
        ft_peer_wait(&echo_peer, 10000);
}

/* ------------------------------------------------------------------ self-stalled */

static void tc_self_stalled(void)
{
    ft_peer_t echo_peer;
    ft_echo_client_t echo;
    ft_ferry_t f;
    ft_peer_spawn(&echo_peer, "patient", ft_echo_role, NULL);
    ft_ferry_init(&f, "tcp", NULL);
    ft_echo_connect(&echo, f.worker, &echo_peer);
    ft_echo_pingpong(&echo, 20, 1000);
    FT_CHECK(tc_count_connections() == 1,
             "%u established tcp sockets in this process, expected one (this end of the "
             "connection)",
             tc_count_connections());
    ft_capture_begin();
    /* no progress here (that is the case): wait, reading only /proc, until the peer has timed
     * the connection out and closed its end (then this end is no longer ESTABLISHED but
     * CLOSE_WAIT) */
    ft_deadline_t deadline = ft_deadline_in_ms(4 * TC_TIMEOUT_MS + 10000);
    while (tc_count_connections() == 1) {
        FT_CHECK(!ft_deadline_passed(deadline),
                 "the peer kept the connection to a worker that "
                 "called no progress for %u ms",
                 4 * TC_TIMEOUT_MS + 10000);
        usleep(20000);
    }
    ft_progress_until(f.worker, 10000, tc_failed, &echo,
                      "the endpoint to fail after the peer timed the connection out");
    char *text = ft_capture_end();
    FT_CHECK(echo.error == FERRY_ERR_CONNECTION_RESET,
             "the endpoint failed with %s, expected "
             "FERRY_ERR_CONNECTION_RESET (the peer closed)",
             ferry_status_name(echo.error));
    FT_CHECK(
        ft_count(text, "did not call progress for") == 1 && ft_count(text, "sent nothing") == 0,
        "expected one 'did not call progress' warning and no 'sent nothing' one, got:\n%s", text);
    free(text);
    ft_note("self-stalled: the peer closed, this worker said it had not called progress");
    ferry_ep_destroy(echo.ep);
    ft_ferry_fini(&f);
    ft_chan_send_token(echo_peer.chan, FT_ECHO_TOKEN_DONE, 0, 0, 0, 0);
    close(echo_peer.chan);
    echo_peer.chan = -1;
    ft_peer_expect_exit(&echo_peer, 30000, 0);
}

/* ------------------------------------------------------------------ congestion control */

/* The first line of a /proc file ("" when it cannot be read). */
static void tc_read_line(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "r");
    buf[0] = '\0';
    if (fp == NULL)
        return;
    if (fgets(buf, (int)cap, fp) == NULL)
        buf[0] = '\0';
    fclose(fp);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Whether name is a word of the space-separated list. */
static bool tc_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return true;
    return false;
}

/* One connection to an echo peer (which keeps its default) with this process's
 * FERRY_TCP_CONGESTION set to value (NULL: unset): its socket here runs want, and the log had
 * one warning, containing warning, or none (warning NULL). */
static void tc_congestion_case(const char *value, const char *want, const char *warning)
{
    ft_peer_t echo_peer;
    ft_echo_client_t echo;
    ft_ferry_t f;
    ft_peer_spawn(&echo_peer, "congestion", ft_echo_role, NULL);
    if (value != NULL)
        FT_CHECK(setenv("FERRY_TCP_CONGESTION", value, 1) == 0, "setenv");
    ft_capture_begin();
    ft_ferry_init(&f, "tcp", NULL);
    ft_echo_connect(&echo, f.worker, &echo_peer);
    ft_echo_pingpong(&echo, 20, 256 * 1024);
    char *text = ft_capture_end();
    unsetenv("FERRY_TCP_CONGESTION");
    int fd = -1;
    unsigned n = tc_established_fds(&fd);
    FT_CHECK(n == 1, "%u established tcp sockets in this process, expected one", n);
    char name[32] = {0};
    socklen_t len = sizeof(name) - 1;
    FT_CHECK(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0,
             "getsockopt(TCP_CONGESTION, fd %d)", fd);
    const char *shown = value != NULL ? value : "(unset)";
    FT_CHECK(strcmp(name, want) == 0,
             "FERRY_TCP_CONGESTION=%s: the connection runs %s, expected %s", shown, name, want);
    size_t warned = ft_count(text, "WARN");
    FT_CHECK(warned == (warning != NULL ? 1u : 0u) &&
                 (warning == NULL || ft_count(text, warning) == 1),
             "FERRY_TCP_CONGESTION=%s: expected %s, got:\n%s", shown,
             warning != NULL ? warning : "no warning", text);
    free(text);
    ft_echo_finish(&echo, &echo_peer);
    ft_ferry_fini(&f);
    ft_note("FERRY_TCP_CONGESTION=%s: %s%s, 20 round trips of 256 KiB", shown, name,
            warning != NULL ? " (warned)" : "");
}

/* FERRY_TCP_CONGESTION: cubic by default (where the kernel has it), a name, system, a name the
 * kernel lacks (warned once, the system's kept), a malformed one (warned, the system's). */
static void tc_congestion(void)
{
    char system[64], available[512];
    tc_read_line("/proc/sys/net/ipv4/tcp_congestion_control", system, sizeof(system));
    tc_read_line("/proc/sys/net/ipv4/tcp_available_congestion_control", available,
                 sizeof(available));
    if (system[0] == '\0') {
        ft_note("congestion control: skipped (no /proc/sys/net/ipv4/tcp_congestion_control)");
        return;
    }
    bool cubic = tc_listed(available, "cubic");
    tc_congestion_case(NULL, cubic ? "cubic" : system, NULL); /* if refused: an info line */
    if (tc_listed(available, "reno"))
        tc_congestion_case("reno", "reno", NULL);
    tc_congestion_case("system", system, NULL);
    tc_congestion_case("nosuchcc", system, "setsockopt(TCP_CONGESTION, \"nosuchcc\"");
    tc_congestion_case("not a name!", system, "invalid FERRY_TCP_CONGESTION=\"not a name!\"");
}

int main(void)
{
    ft_set_role("main");
    ft_watchdog(85);
    tc_simultaneous();
    tc_congestion();
    /* silence detection: the timeout plus one timer tick and scheduling slack */
    tc_peer_gone(SIGSTOP, FERRY_ERR_ENDPOINT_TIMEOUT, TC_TIMEOUT_MS + 1000);
    tc_peer_gone(SIGKILL, FERRY_ERR_CONNECTION_RESET, 1000);
    tc_self_stalled();
    ft_files_check_self();
    ft_note("passed");
    return 0;
}
