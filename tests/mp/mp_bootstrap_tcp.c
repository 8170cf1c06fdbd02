/* The tcp bootstrap between real processes on 127.0.0.1 (FERRY_BOOTSTRAP_ROOT, _RANK, _SIZE).
 *
 *   (no argument)  mp_bootstrap_tcp
 *     job       4 forked ranks: allgather of worker addresses, all-to-all active messages with
 *               every byte checked, barrier (ft_bootstrap_alltoall); rank 1 also checks that
 *               the FERRY_BOOTSTRAP_* variables draw no "unknown variable" warning;
 *     strangers while rank 0 waits for its job, connections that are not ranks of it: text
 *               (closed), a few bytes then a hang-up, a HELLO of another wire version, of
 *               another job size, claiming a payload of 1 TiB, claiming rank 0: each is
 *               refused (REJECT with a reason when it speaks the protocol) with a warning, and
 *               then the real rank 1 joins and the job runs.
 *   bad            mp_bootstrap_tcp_bad (error lines expected)
 *     a joined rank (this process, speaking the protocol by hand as rank 2 of 3) sends, in a
 *     collective, a part longer than FERRY_BOOTSTRAP_MAX_LENGTH, text, the wrong collective, or
 *     hangs up: rank 0 and rank 1 get FERRY_ERR_PROTOCOL (FERRY_ERR_CONNECTION_RESET for the
 *     hang-up) from ferry_bootstrap_allgather, at once (rank 0 tells rank 1 with ABORT), and
 *     FERRY_ERR_ILLEGAL_STATE afterwards; nobody crashes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ferry/bootstrap.h>

#include "bootstrap/bootstrap_wire.h"
#include "ft.h"
#include "ft_alltoall.h"

#define BT_TIMEOUT_MS 20000
#define BT_HOST_ID 128 /* bootstrap.c's host identity: the allgather at init */

static unsigned bt_port;

/* A TCP port free a moment ago on 127.0.0.1 (rank 0 binds it with SO_REUSEADDR). */
static unsigned bt_free_port(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FT_CHECK(fd >= 0, "socket: %s", strerror(errno));
    FT_CHECK(bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0, "bind: %s", strerror(errno));
    FT_CHECK(getsockname(fd, (struct sockaddr *)&addr, &len) == 0, "getsockname: %s",
             strerror(errno));
    close(fd);
    return ntohs(addr.sin_port);
}

static void bt_set_env(unsigned rank, unsigned size)
{
    char text[64];
    snprintf(text, sizeof(text), "127.0.0.1:%u", bt_port);
    setenv("FERRY_BOOTSTRAP_ROOT", text, 1);
    snprintf(text, sizeof(text), "%u", rank);
    setenv("FERRY_BOOTSTRAP_RANK", text, 1);
    snprintf(text, sizeof(text), "%u", size);
    setenv("FERRY_BOOTSTRAP_SIZE", text, 1);
    snprintf(text, sizeof(text), "%d", BT_TIMEOUT_MS);
    setenv("FERRY_BOOTSTRAP_TIMEOUT_MS", text, 1);
}

typedef struct bt_rank {
    unsigned rank, size;
    ferry_status_t expect; /* bad: what the collective must return */
    char name[16];
    ft_peer_t peer;
} bt_rank_t;

/* ---------------------------------------------------------------- a rank of the job */

static int bt_job_role(int chan, void *arg)
{
    bt_rank_t *me = arg;
    ferry_bootstrap_t *bs;
    (void)chan;

    ft_set_role(me->name);
    bt_set_env(me->rank, me->size);
    if (me->rank == 1) {
        /* The bootstrap's variables are in the registry: no "unknown variable" warning. */
        ferry_context_t *context;
        ft_capture_begin();
        FT_CHECK_OK(ferry_bootstrap_init(NULL, &bs));
        FT_CHECK_OK(ferry_context_create(NULL, &context));
        ferry_context_destroy(context);
        char *text = ft_capture_end();
        FT_CHECK(ft_count(text, "FERRY_BOOTSTRAP_") == 0,
                 "FERRY_BOOTSTRAP_* drew an unknown-variable warning:\n%s", text);
        free(text);
    } else {
        FT_CHECK_OK(ferry_bootstrap_init(NULL, &bs));
    }
    FT_CHECK(ferry_bootstrap_method(bs) == FERRY_BOOTSTRAP_METHOD_TCP, "method %s, expected tcp",
             ferry_bootstrap_method_name(ferry_bootstrap_method(bs)));
    FT_CHECK(ferry_bootstrap_rank(bs) == me->rank && ferry_bootstrap_size(bs) == me->size,
             "rank %u of %u, expected %u of %u", ferry_bootstrap_rank(bs), ferry_bootstrap_size(bs),
             me->rank, me->size);
    for (unsigned r = 0; r < me->size; r++)
        FT_CHECK(ferry_bootstrap_is_local(bs, r), "rank %u is not local (one host here)", r);
    ft_bootstrap_alltoall(bs);
    ferry_bootstrap_finalize(bs);
    return 0;
}

static void bt_spawn(bt_rank_t *ranks, unsigned rank, unsigned size, ft_role_fn_t fn)
{
    bt_rank_t *r = &ranks[rank];
    r->rank = rank;
    r->size = size;
    snprintf(r->name, sizeof(r->name), "rank%u", rank);
    ft_peer_spawn(&r->peer, r->name, fn, r);
}

static void bt_job(void)
{
    bt_rank_t ranks[4];
    bt_port = bt_free_port();
    /* the last rank first: the others retry until rank 0 listens */
    for (unsigned r = 4; r-- > 0;)
        bt_spawn(ranks, r, 4, bt_job_role);
    for (unsigned r = 0; r < 4; r++)
        ft_peer_expect_exit(&ranks[r].peer, 60000, 0);
    ft_note("job: 4 ranks allgathered their addresses and exchanged every message");
}

/* ---------------------------------------------------------------- by hand */

/* Connect to rank 0, retrying while it does not listen yet. */
static int bt_connect(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)bt_port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ft_deadline_t deadline = ft_deadline_in_ms(BT_TIMEOUT_MS);
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        FT_CHECK(fd >= 0, "socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
            return fd;
        int error = errno;
        close(fd);
        FT_CHECK(error == ECONNREFUSED && !ft_deadline_passed(deadline),
                 "connect to rank 0 at 127.0.0.1:%u: %s", bt_port, strerror(error));
        ft_peers_check();
        ft_sleep_ms(10); /* rank 0 starts up: nothing to wait on but time */
    }
}

static void bt_write(int fd, const void *data, size_t length)
{
    ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
    FT_CHECK(n == (ssize_t)length, "send %zu bytes: %zd (%s)", length, n, strerror(errno));
}

/* Read exactly length bytes; false on end of file or reset. */
static bool bt_read(int fd, void *data, size_t length)
{
    uint8_t *p = data;
    ft_deadline_t deadline = ft_deadline_in_ms(BT_TIMEOUT_MS);
    while (length > 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        FT_CHECK(!ft_deadline_passed(deadline), "rank 0 sent nothing for %d ms", BT_TIMEOUT_MS);
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, p, length, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return false;
        FT_CHECK(n > 0, "recv: %s", strerror(errno));
        p += n;
        length -= (size_t)n;
    }
    return true;
}

static void bt_send_header(int fd, unsigned version, unsigned type, unsigned rank, unsigned size,
                           unsigned seq, uint64_t length)
{
    bootstrap_wire_header_t h = {.magic = BOOTSTRAP_WIRE_MAGIC,
                                 .version = (uint16_t)version,
                                 .type = (uint16_t)type,
                                 .rank = rank,
                                 .size = size,
                                 .seq = seq,
                                 .length = length};
    uint8_t bytes[BOOTSTRAP_WIRE_HEADER_SIZE];
    bootstrap_wire_encode(&h, bytes);
    bt_write(fd, bytes, sizeof(bytes));
}

static bootstrap_wire_header_t bt_recv_header(int fd, uint64_t max_length)
{
    uint8_t bytes[BOOTSTRAP_WIRE_HEADER_SIZE];
    bootstrap_wire_header_t h;
    const char *reason = "";
    FT_CHECK(bt_read(fd, bytes, sizeof(bytes)), "rank 0 closed instead of answering");
    FT_CHECK(bootstrap_wire_decode(bytes, max_length, &h, &reason) == FERRY_OK,
             "rank 0 sent a malformed header: %s", reason);
    return h;
}

/* Expect REJECT with a reason containing needle, then the end of the connection. */
static void bt_expect_reject(int fd, const char *needle, const char *what)
{
    uint8_t payload[4 + BOOTSTRAP_WIRE_REASON_MAX], c;
    char text[BOOTSTRAP_WIRE_REASON_MAX + 1];
    ferry_status_t status;

    bootstrap_wire_header_t h = bt_recv_header(fd, 0);
    FT_CHECK(h.type == BOOTSTRAP_WIRE_REJECT, "%s: answered with %s, expected REJECT", what,
             bootstrap_wire_type_name(h.type));
    FT_CHECK(bt_read(fd, payload, (size_t)h.length), "%s: REJECT cut short", what);
    bootstrap_wire_reason_decode(payload, (size_t)h.length, &status, text);
    FT_CHECK(status == FERRY_ERR_CONNECTION_REFUSED && strstr(text, needle) != NULL,
             "%s: REJECT says %s \"%s\", expected FERRY_ERR_CONNECTION_REFUSED and \"%s\"", what,
             ferry_status_name(status), text, needle);
    FT_CHECK(!bt_read(fd, &c, 1), "%s: the connection stays open after REJECT", what);
    close(fd);
    ft_note("strangers: %s refused: \"%s\"", what, text);
}

static void bt_strangers(void)
{
    static const char text[] = "GET / HTTP/1.0\r\nHost: not-a-ferry-bootstrap-peer\r\n\r\n";
    bt_rank_t ranks[2];
    uint8_t c;

    bt_port = bt_free_port();
    bt_spawn(ranks, 0, 2, bt_job_role);

    int fd = bt_connect();
    bt_write(fd, text, sizeof(text) - 1);
    FT_CHECK(!bt_read(fd, &c, 1), "text: rank 0 answered instead of closing");
    close(fd);
    ft_note("strangers: a text client was closed");

    fd = bt_connect();
    bt_write(fd, "ferry", 5);
    close(fd);

    fd = bt_connect();
    bt_send_header(fd, BOOTSTRAP_WIRE_VERSION + 1, BOOTSTRAP_WIRE_HELLO, 1, 2, 0, 0);
    bt_expect_reject(fd, "version", "a HELLO of the next wire version");

    fd = bt_connect();
    bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_HELLO, 1, 3, 0, 0);
    bt_expect_reject(fd, "FERRY_BOOTSTRAP_SIZE", "a HELLO of job size 3");

    fd = bt_connect();
    bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_HELLO, 1, 2, 0, 1ull << 40);
    bt_expect_reject(fd, "payload", "a HELLO claiming 1 TiB of payload");

    fd = bt_connect();
    bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_HELLO, 0, 2, 0, 0);
    bt_expect_reject(fd, "already joined", "a HELLO claiming rank 0");

    fd = bt_connect();
    bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_ALLGATHER, 1, 2, 1, 0);
    bt_expect_reject(fd, "expected HELLO", "an ALLGATHER before HELLO");

    bt_spawn(ranks, 1, 2, bt_job_role);
    ft_peer_expect_exit(&ranks[0].peer, 60000, 0);
    ft_peer_expect_exit(&ranks[1].peer, 60000, 0);
    ft_note("strangers: rank 0 refused 7 strangers, then ran its job");
}

/* ---------------------------------------------------------------- a rank that misbehaves */

typedef enum bt_misdeed {
    BT_TOO_LONG,
    BT_TEXT,
    BT_WRONG_COLLECTIVE,
    BT_HANG_UP,
} bt_misdeed_t;

static int bt_victim_role(int chan, void *arg)
{
    bt_rank_t *me = arg;
    ferry_bootstrap_t *bs;
    uint64_t mine = 0x1234 + me->rank, all[3];
    (void)chan;

    ft_set_role(me->name);
    bt_set_env(me->rank, me->size);
    FT_CHECK_OK(ferry_bootstrap_init(NULL, &bs));
    FT_CHECK_STATUS(ferry_bootstrap_allgather(bs, &mine, sizeof(mine), all), me->expect);
    FT_CHECK_STATUS(ferry_bootstrap_barrier(bs), FERRY_ERR_ILLEGAL_STATE);
    ferry_bootstrap_finalize(bs);
    return 0;
}

static void bt_misbehave(bt_misdeed_t misdeed, ferry_status_t expect, const char *what)
{
    static const char text[] = "this is not a bootstrap message, just text";
    bt_rank_t ranks[2];
    uint8_t host_id[BT_HOST_ID] = {0}, result[3 * BT_HOST_ID];

    bt_port = bt_free_port();
    for (unsigned r = 0; r < 2; r++) {
        ranks[r].expect = expect;
        bt_spawn(ranks, r, 3, bt_victim_role);
    }
    /* Join as rank 2 and take part in the init's allgather of host identities. */
    int fd = bt_connect();
    bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_HELLO, 2, 3, 0, 0);
    bootstrap_wire_header_t h = bt_recv_header(fd, 0);
    FT_CHECK(h.type == BOOTSTRAP_WIRE_WELCOME && h.rank == 2, "HELLO answered by %s for rank %u",
             bootstrap_wire_type_name(h.type), h.rank);
    bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_ALLGATHER, 2, 3, 1, BT_HOST_ID);
    bt_write(fd, host_id, sizeof(host_id));
    h = bt_recv_header(fd, sizeof(result));
    FT_CHECK(h.type == BOOTSTRAP_WIRE_RESULT && h.seq == 1 && h.length == sizeof(result),
             "host identities answered by %s #%u of %llu bytes", bootstrap_wire_type_name(h.type),
             h.seq, (unsigned long long)h.length);
    FT_CHECK(bt_read(fd, result, sizeof(result)), "host identities cut short");
    FT_CHECK(memcmp(result + 2 * BT_HOST_ID, host_id, BT_HOST_ID) == 0,
             "our host identity came back changed");

    /* The victims' allgather #2 of 8 bytes each. */
    switch (misdeed) {
    case BT_TOO_LONG:
        bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_ALLGATHER, 2, 3, 2, 2ull << 20);
        break;
    case BT_TEXT:
        bt_write(fd, text, sizeof(text) - 1);
        break;
    case BT_WRONG_COLLECTIVE:
        bt_send_header(fd, BOOTSTRAP_WIRE_VERSION, BOOTSTRAP_WIRE_BARRIER, 2, 3, 2, 0);
        break;
    case BT_HANG_UP:
        break;
    }
    close(fd);
    ft_peer_expect_exit(&ranks[0].peer, 60000, 0);
    ft_peer_expect_exit(&ranks[1].peer, 60000, 0);
    ft_note("bad: %s: ranks 0 and 1 got %s, then FERRY_ERR_ILLEGAL_STATE", what,
            ferry_status_name(expect));
}

int main(int argc, char **argv)
{
    ft_set_role("parent");
    ft_watchdog(115);
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && strcmp(argv[1], "bad") == 0) {
        bt_misbehave(BT_TOO_LONG, FERRY_ERR_PROTOCOL, "a part of 2 MiB (max 1 MiB)");
        bt_misbehave(BT_TEXT, FERRY_ERR_PROTOCOL, "text instead of a header");
        bt_misbehave(BT_WRONG_COLLECTIVE, FERRY_ERR_PROTOCOL, "a barrier against an allgather");
        bt_misbehave(BT_HANG_UP, FERRY_ERR_CONNECTION_RESET, "a hang-up");
    } else {
        bt_job();
        bt_strangers();
    }
    ft_note("passed");
    return 0;
}
