/* Hostile connections to a worker's listeners (issue 11, items 2, 3 and 4), shm and tcp at
 * once. The worker under attack is this process; an attacker process X connects by hand to
 * its shm socket (from the shm record of its address) and its tcp port, and an echo peer E
 * holds an established endpoint. Run with FERRY_SHM_CONNECT_TIMEOUT_MS and
 * FERRY_TCP_CONNECT_TIMEOUT_MS of 1000.
 *
 *   silent      X connects to each listener and sends nothing: the worker closes both
 *               connections after the handshake timeout (X sees the end between 0.9 and 6 s),
 *               one warning each;
 *   descriptors the worker's open-files limit is lowered (setrlimit) to what it has open + 24,
 *               and X opens 400 silent connections to each listener: while they stand, the
 *               worker sleeping in ferry_worker_wait uses less than half a core (it spun at
 *               100 % before), logs the exhaustion at most twice per listener with the cause and
 *               the fix, and its established endpoint keeps ping-ponging; X then closes them,
 *               and new endpoints (X's, over shm and over tcp) connect and deliver a message;
 *   log counts  X sends 400 malformed handshakes to the shm socket and 400 garbage frame
 *               headers to the tcp port (each connection closed by the worker), then, 1.2 s
 *               later, one more of each: each kind logs at most FY_LOG_LIMIT_BURST + 2 lines,
 *               and the lines plus the suppressed counts they report add up to the 401
 *               connections exactly; the established endpoint still works.
 * INTERNAL: reads the shm record of the address.
 *
 * Across hosts: mp_hostile NETNS IP, run inside one network namespace with FERRY_TRANSPORTS=tcp
 * (tests/netns/run.sh, test hostile): the echo peer and the attacker enter the network namespace
 * NETNS (a path such as /run/netns/NAME) before they start, and reach the worker at IP; the
 * same three parts run on the tcp listener only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/log.h"
#include "ft.h"
#include "transport/shm/shm.h"
#include "wireup/address.h"

enum { HS_TAG_CMD = 0x48434d44, HS_TAG_DONE = 0x48444f4e };
enum { HS_CMD_SILENT = 1, HS_CMD_FLOOD, HS_CMD_RELEASE, HS_CMD_GARBAGE, HS_CMD_EXIT };
enum { HS_ID_HELLO = 51 };

#define HS_FLOOD 400
#define HS_GARBAGE 400
#define HS_SPARE_FDS 24
#define HS_TIMEOUT_MS 60000

/* Across hosts (see the top): the peers' network namespace and the worker's address there;
 * NULL: one host, shm and tcp. */
static const char *hs_netns;
static const char *hs_ip;

/* ------------------------------------------------------------------ the attacker */

typedef struct hs_target {
    uint8_t address[FT_CHAN_MSG_MAX];
    size_t length;
    struct sockaddr_un shm;
    socklen_t shm_length;
    struct sockaddr_in tcp;
} hs_target_t;

static void hs_target_parse(hs_target_t *t)
{
    fy_address_t parsed;
    FT_CHECK_OK(fy_address_parse(t->address, t->length, &parsed));
    const fy_address_record_t *rec;
    if (hs_netns == NULL) {
        rec = fy_address_find(&parsed, fy_tl_shm_ops.id);
        FT_CHECK(rec != NULL && rec->length == sizeof(shm_record_t),
                 "the address has no shm record");
        shm_record_t record;
        memcpy(&record, rec->data, sizeof(record));
        size_t name_length = strnlen(record.name, sizeof(record.name));
        memset(&t->shm, 0, sizeof(t->shm));
        t->shm.sun_family = AF_UNIX;
        memcpy(t->shm.sun_path + 1, record.name, name_length);
        t->shm_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + name_length);
    }
    /* the tcp record: u8 version, u8 count, u16 port, ... (record id 3) */
    rec = fy_address_find(&parsed, 3);
    FT_CHECK(rec != NULL && rec->length >= 4, "the address has no tcp record");
    uint16_t port = (uint16_t)(rec->data[2] | rec->data[3] << 8);
    memset(&t->tcp, 0, sizeof(t->tcp));
    t->tcp.sin_family = AF_INET;
    t->tcp.sin_port = htons(port);
    t->tcp.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (hs_ip != NULL)
        FT_CHECK(inet_pton(AF_INET, hs_ip, &t->tcp.sin_addr) == 1, "bad address %s", hs_ip);
}

/* Across hosts: a peer moves to the other network namespace before anything else. */
static void hs_enter_netns(void)
{
    if (hs_netns == NULL)
        return;
    int fd = open(hs_netns, O_RDONLY | O_CLOEXEC);
    FT_CHECK(fd >= 0, "open(%s): %s", hs_netns, strerror(errno));
    FT_CHECK(setns(fd, CLONE_NEWNET) == 0, "setns(%s, CLONE_NEWNET): %s", hs_netns,
             strerror(errno));
    close(fd);
    struct stat want, have;
    FT_CHECK(stat(hs_netns, &want) == 0 && stat("/proc/self/ns/net", &have) == 0 &&
                 want.st_ino == have.st_ino,
             "not in the network namespace %s after setns", hs_netns);
}

static int hs_echo_role(int chan, void *arg)
{
    hs_enter_netns();
    return ft_echo_role(chan, arg);
}

/* A connection by hand (non-blocking: a tcp connect beyond the backlog completes later). */
static int hs_connect(const hs_target_t *t, bool shm)
{
    int fd = socket(shm ? AF_UNIX : AF_INET,
                    (shm ? SOCK_SEQPACKET : SOCK_STREAM) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    FT_CHECK(fd >= 0, "socket: %s", strerror(errno));
    int rc = shm ? connect(fd, (const struct sockaddr *)&t->shm, t->shm_length)
                 : connect(fd, (const struct sockaddr *)&t->tcp, sizeof(t->tcp));
    FT_CHECK(rc == 0 || errno == EINPROGRESS, "connect to the worker's %s listener: %s",
             shm ? "shm" : "tcp", strerror(errno));
    return fd;
}

/* Has the worker closed fd? (EOF or hang-up; a garbage sender also sees ECONNRESET) */
static bool hs_closed(int fd)
{
    char buf[64];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0)
        return true;
    if (n < 0)
        return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINPROGRESS && errno != ENOTCONN;
    return false;
}

/* Wait until the worker closed every one of fds[0..n); returns the time it took (ms). */
static uint64_t hs_wait_closed(const int *fds, size_t n, int timeout_ms, const char *what)
{
    uint64_t start = ft_now_ns();
    size_t closed = 0;
    bool *done = calloc(n, sizeof(*done));
    FT_CHECK(done != NULL, "out of memory");
    while (closed < n) {
        FT_CHECK(ft_now_ns() - start < (uint64_t)timeout_ms * 1000000u,
                 "%s: the worker closed %zu of %zu connections within %d ms", what, closed, n,
                 timeout_ms);
        for (size_t i = 0; i < n; i++) {
            if (!done[i] && hs_closed(fds[i])) {
                done[i] = true;
                closed++;
            }
        }
        if (closed < n)
            ft_sleep_ms(5);
    }
    free(done);
    return (ft_now_ns() - start) / 1000000u;
}

static void hs_send_all(int fd, const void *buf, size_t len)
{
    for (int tries = 0; tries < 2000; tries++) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n == (ssize_t)len)
            return;
        FT_CHECK(n < 0 && (errno == EAGAIN || errno == ENOTCONN || errno == EINPROGRESS),
                 "send of %zu bytes to the worker: %s", len, strerror(errno));
        ft_sleep_ms(2); /* a tcp connect still in progress */
    }
    ft_fail_at(__FILE__, __LINE__, "a hand-made connection never became writable");
}

/* n connections to one listener, each sending garbage (a malformed handshake, a frame header
 * that is not one), all closed by the worker. */
static void hs_garbage(const hs_target_t *t, bool shm, unsigned n)
{
    int *fds = calloc(n, sizeof(*fds));
    uint8_t junk[32];
    FT_CHECK(fds != NULL, "out of memory");
    memset(junk, 'G', sizeof(junk));
    for (unsigned done = 0; done < n;) {
        unsigned batch = n - done < 100 ? n - done : 100; /* tcp's backlog is 128 */
        for (unsigned i = 0; i < batch; i++) {
            fds[done + i] = hs_connect(t, shm);
            hs_send_all(fds[done + i], junk, shm ? 16 : sizeof(junk));
        }
        hs_wait_closed(fds + done, batch, 30000, shm ? "malformed handshakes" : "garbage frames");
        for (unsigned i = 0; i < batch; i++)
            close(fds[done + i]);
        done += batch;
    }
    free(fds);
}

static unsigned hs_new_errors;

static void hs_new_ep_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)arg, (void)ep, (void)status;
    hs_new_errors++;
}

/* A real ferry endpoint to the worker (over transports) delivers a message. The worker may
 * still be draining the backlog the flood left (tcp's connect timeout is 1 s here): a failed
 * connection is retried, as an application would. */
static void hs_new_endpoint(const hs_target_t *t, const char *transports)
{
    ft_ferry_t f;
    ft_ferry_init(&f, transports, NULL);
    for (int attempt = 1;; attempt++) {
        hs_new_errors = 0;
        ferry_ep_params_t params = {.error_cb = hs_new_ep_error};
        ferry_ep_t *ep = ft_ep_create(f.worker, t->address, t->length, &params);
        uint32_t hello = 0x48454c4f;
        ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
        ferry_status_t status = ft_am_send(f.worker, ep, HS_ID_HELLO, &hello, sizeof(hello), NULL,
                                           0, &comp, 30000, NULL);
        if (status == FERRY_INPROGRESS)
            ft_progress_until_completion(f.worker, 30000, &comp, "a hello");
        if (status == FERRY_OK || (status == FERRY_INPROGRESS && comp.status == FERRY_OK)) {
            comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
            status = ferry_ep_close(ep, 0, &comp);
            if (status == FERRY_INPROGRESS)
                ft_progress_until_completion(f.worker, 30000, &comp, "the graceful close");
            if (hs_new_errors == 0 && (status == FERRY_OK || comp.status == FERRY_OK)) {
                ferry_ep_destroy(ep);
                break;
            }
        }
        ferry_ep_destroy(ep);
        FT_CHECK(attempt < 30, "no %s endpoint got through in 30 attempts", transports);
        ft_sleep_ms(200);
    }
    ft_ferry_fini(&f);
}

static int hs_attacker_role(int chan, void *arg)
{
    hs_target_t t;
    int *flood = NULL;
    (void)arg;

    hs_enter_netns();
    struct rlimit rl;
    FT_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit: %s", strerror(errno));
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl); /* 800 connections */
    t.length = ft_recv_address(chan, t.address, sizeof(t.address), HS_TIMEOUT_MS);
    hs_target_parse(&t);
    for (;;) {
        ft_token_t c = ft_chan_expect_token(chan, HS_TAG_CMD, HS_TIMEOUT_MS);
        uint64_t r0 = 0, r1 = 0;
        switch (c.v[0]) {
        case HS_CMD_SILENT: {
            /* across hosts: no shm connection (took[0] stays 1) */
            int fds[2] = {hs_netns == NULL ? hs_connect(&t, true) : -1, hs_connect(&t, false)};
            uint64_t start = ft_now_ns(), took[2] = {hs_netns == NULL ? 0 : 1, 0};
            while (took[0] == 0 || took[1] == 0) {
                FT_CHECK(ft_now_ns() - start < 10000000000ull,
                         "silent connections still open after 10 s (shm %s, tcp %s)",
                         took[0] ? "closed" : "open", took[1] ? "closed" : "open");
                for (int i = 0; i < 2; i++)
                    if (took[i] == 0 && hs_closed(fds[i]))
                        took[i] = (ft_now_ns() - start) / 1000000u + 1;
                ft_sleep_ms(5);
            }
            r0 = took[0];
            r1 = took[1];
            if (fds[0] >= 0)
                close(fds[0]);
            close(fds[1]);
            break;
        }
        case HS_CMD_FLOOD:
            flood = calloc(2 * HS_FLOOD, sizeof(*flood));
            FT_CHECK(flood != NULL, "out of memory");
            for (unsigned i = 0; i < 2 * HS_FLOOD; i++)
                flood[i] = hs_netns == NULL || i % 2 == 1 ? hs_connect(&t, i % 2 == 0) : -1;
            break;
        case HS_CMD_RELEASE:
            for (unsigned i = 0; i < 2 * HS_FLOOD; i++)
                if (flood[i] >= 0)
                    close(flood[i]);
            free(flood);
            flood = NULL;
            if (hs_netns == NULL)
                hs_new_endpoint(&t, "self,shm");
            hs_new_endpoint(&t, "tcp");
            break;
        case HS_CMD_GARBAGE:
            if (hs_netns == NULL)
                hs_garbage(&t, true, (unsigned)c.v[1]);
            hs_garbage(&t, false, (unsigned)c.v[1]);
            break;
        case HS_CMD_EXIT:
            return 0;
        }
        ft_chan_send_token(chan, HS_TAG_DONE, c.v[0], r0, r1, 0);
    }
}

/* ------------------------------------------------------------------ the worker under attack */

static uint64_t hs_hellos;

static ferry_status_t hs_on_hello(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)data, (void)length, (void)params;
    FT_CHECK(header_length == 4, "a hello with a %zu-byte header", header_length);
    hs_hellos++;
    return FERRY_OK;
}

static unsigned hs_open_fds(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/fd");
    FT_CHECK(d != NULL, "opendir(/proc/self/fd): %s", strerror(errno));
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

static uint64_t hs_cpu_ns(void)
{
    struct rusage ru;
    FT_CHECK(getrusage(RUSAGE_SELF, &ru) == 0, "getrusage: %s", strerror(errno));
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

static uint64_t hs_deadline_ns;

static bool hs_deadline_passed(void *arg)
{
    (void)arg;
    return ft_now_ns() >= hs_deadline_ns;
}

/* Run a command in X while this worker progresses; returns X's answer. */
static ft_token_t hs_command(ferry_worker_t *worker, ft_peer_t *x, uint64_t cmd, uint64_t arg)
{
    ft_token_t t;
    ft_chan_send_token(x->chan, HS_TAG_CMD, cmd, arg, 0, 0);
    ft_progress_until_token(worker, x->chan, HS_TAG_DONE, HS_TIMEOUT_MS, &t);
    FT_CHECK(t.v[0] == cmd, "X answered command %llu, expected %llu", (unsigned long long)t.v[0],
             (unsigned long long)cmd);
    return t;
}

/* Lines of text containing needle, and the counts of "[N more like this suppressed]" they
 * carry. */
static void hs_count(const char *text, const char *needle, uint64_t *lines_p, uint64_t *total_p)
{
    uint64_t lines = 0, total = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char line[4096];
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) - 1 ? len : sizeof(line) - 1),
                 p);
        unsigned long long more = 0;
        const char *mark = strstr(line, "[");
        while (mark != NULL && sscanf(mark, "[%llu more like this suppressed]", &more) != 1)
            mark = strstr(mark + 1, "[");
        lines++;
        total += 1 + (mark != NULL ? more : 0);
    }
    *lines_p = lines;
    *total_p = total;
}

int main(int argc, char **argv)
{
    static ft_peer_t echo, x;
    ft_echo_client_t ec;
    ft_ferry_t f;
    ft_files_t before;

    ft_set_role("worker");
    FT_CHECK(argc == 1 || argc == 3, "usage: mp_hostile [NETNS IP]");
    if (argc == 3) {
        hs_netns = argv[1];
        hs_ip = argv[2];
        FT_CHECK(setenv("FERRY_TRANSPORTS", "tcp", 1) == 0, "setenv: %s", strerror(errno));
        ft_note("across hosts: peers in %s, the worker at %s, tcp only", hs_netns, hs_ip);
    }
    ft_watchdog(175);
    ft_files_snapshot(&before);
    ft_peer_spawn(&echo, "echo", hs_echo_role, NULL);
    ft_peer_spawn(&x, "attacker", hs_attacker_role, NULL);
    ft_capture_begin();
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, HS_ID_HELLO, hs_on_hello, NULL));
    ft_send_address(x.chan, f.worker);
    ft_echo_connect(&ec, f.worker, &echo);
    ft_echo_pingpong(&ec, 10, 64);

    /* silent connections: closed after the handshake timeouts (1 s) */
    ft_token_t t = hs_command(f.worker, &x, HS_CMD_SILENT, 0);
    FT_CHECK((hs_netns != NULL || (t.v[1] >= 900 && t.v[1] <= 6000)) && t.v[2] >= 900 &&
                 t.v[2] <= 6000,
             "silent connections closed after %llu ms (shm) and %llu ms (tcp), expected 1-6 s",
             (unsigned long long)t.v[1], (unsigned long long)t.v[2]);
    if (hs_netns == NULL)
        ft_note("silent connections: closed after %llu ms (shm) and %llu ms (tcp)",
                (unsigned long long)t.v[1], (unsigned long long)t.v[2]);
    else
        ft_note("silent tcp connection from the other namespace: closed after %llu ms",
                (unsigned long long)t.v[2]);

    /* descriptor exhaustion */
    struct rlimit saved, low;
    FT_CHECK(getrlimit(RLIMIT_NOFILE, &saved) == 0, "getrlimit: %s", strerror(errno));
    unsigned open_fds = hs_open_fds();
    low = saved;
    low.rlim_cur = open_fds + HS_SPARE_FDS;
    FT_CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit(RLIMIT_NOFILE, %llu): %s",
             (unsigned long long)low.rlim_cur, strerror(errno));
    char *text = ft_capture_text();
    size_t lines_before = ft_count(text, "[ferry ");
    free(text);
    hs_command(f.worker, &x, HS_CMD_FLOOD, 0);
    ft_progress_for_ms(f.worker, 200); /* accept until the descriptors run out */
    uint64_t cpu0 = hs_cpu_ns(), wall0 = ft_now_ns();
    hs_deadline_ns = wall0 + 1500000000u;
    ft_wait_until(f.worker, 10000, hs_deadline_passed, NULL, "1.5 s of waiting under the flood");
    uint64_t cpu = hs_cpu_ns() - cpu0, wall = ft_now_ns() - wall0;
    ft_echo_pingpong(&ec, 10, 64);
    hs_command(f.worker, &x, HS_CMD_RELEASE, 0);
    ft_progress_until_count(f.worker, 30000, &hs_hellos, hs_netns == NULL ? 2 : 1,
                            "hellos from new endpoints");
    FT_CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0, "setrlimit: %s", strerror(errno));
    text = ft_capture_text();
    size_t exhausted = ft_count(text, "open-files limit");
    size_t lines = ft_count(text, "[ferry ") - lines_before;
    free(text);
    FT_CHECK(cpu * 2 < wall, "waiting under the flood used %.0f %% of a core",
             100.0 * (double)cpu / (double)wall);
    FT_CHECK(exhausted >= 1 && exhausted <= 4,
             "descriptor exhaustion was logged %zu times (expected once or twice per listener)",
             exhausted);
    FT_CHECK(lines <= 60, "the flood made %zu log lines", lines);
    ft_note("descriptor flood (limit %llu, %d silent connections per listener): %.1f %% of a "
            "core while waiting, %zu log lines (%zu about the exhaustion); the established "
            "endpoint and the new ones (%s) work",
            (unsigned long long)low.rlim_cur, HS_FLOOD, 100.0 * (double)cpu / (double)wall, lines,
            exhausted, hs_netns == NULL ? "shm, tcp" : "tcp");

    /* bounded logs: 400 + 1 bad connections per listener */
    hs_command(f.worker, &x, HS_CMD_GARBAGE, HS_GARBAGE);
    ft_progress_for_ms(f.worker, 1200);
    hs_command(f.worker, &x, HS_CMD_GARBAGE, 1);
    ft_echo_pingpong(&ec, 10, 64);
    ft_chan_send_token(x.chan, HS_TAG_CMD, HS_CMD_EXIT, 0, 0, 0);
    ft_peer_expect_exit(&x, 30000, 0);
    ft_echo_finish(&ec, &echo);
    ft_ferry_fini(&f);
    text = ft_capture_end();
    uint64_t shm_lines, shm_total, tcp_lines, tcp_total;
    hs_count(text, "shm: malformed handshake", &shm_lines, &shm_total);
    hs_count(text, "bad frame header (bad magic", &tcp_lines, &tcp_total);
    FT_CHECK(hs_netns != NULL ||
                 (shm_total == HS_GARBAGE + 1 && shm_lines <= FY_LOG_LIMIT_BURST + 2),
             "%d malformed handshakes: %llu lines, accounting for %llu connections", HS_GARBAGE + 1,
             (unsigned long long)shm_lines, (unsigned long long)shm_total);
    FT_CHECK(tcp_total == HS_GARBAGE + 1 && tcp_lines <= FY_LOG_LIMIT_BURST + 2,
             "%d garbage frame headers: %llu lines, accounting for %llu connections",
             HS_GARBAGE + 1, (unsigned long long)tcp_lines, (unsigned long long)tcp_total);
    if (hs_netns == NULL)
        ft_note("%d bad connections per listener: %llu lines (shm), %llu lines (tcp), the "
                "suppressed counts account for every connection",
                HS_GARBAGE + 1, (unsigned long long)shm_lines, (unsigned long long)tcp_lines);
    else
        ft_note("%d garbage frame headers from the other namespace: %llu lines, the suppressed "
                "counts account for every connection",
                HS_GARBAGE + 1, (unsigned long long)tcp_lines);
    free(text);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
