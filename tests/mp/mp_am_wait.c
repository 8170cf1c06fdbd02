/* Blocking mode: processes that sleep in ferry_worker_wait instead of spinning.
 *
 *   1. ping-pong with both sides in ferry_worker_wait: 1000 round trips of 8 B, 50 of 64 KiB
 *      and 10 of 1 MiB (the 1 MiB sends queue, so a sleeping sender must be woken when the
 *      receiver frees buffers);
 *   2. ferry_worker_wait with a 50 ms timeout and nothing to do returns FERRY_ERR_TIMED_OUT
 *      after about that long;
 *   3. an idle waiter (ferry_worker_wait with a 30 s timeout, nothing sent for 2 s) uses less
 *      than 2 % of a core (getrusage(RUSAGE_SELF) around the wait), and wakes up promptly
 *      (< 200 ms) when a message arrives;
 *   4. the event-loop way: the server sleeps in poll(2) on ferry_worker_get_fd after
 *      ferry_worker_arm; 200 round trips of 8 B and 4000 B;
 *   5. a sender in blocking mode: 20000 messages (one in ten of 3000 B), and whenever one is
 *      refused (FERRY_ERR_NO_RESOURCE: the receiver, told to start only then, has not made
 *      room yet) the sender sleeps in ferry_worker_wait, which must wake up (not time out)
 *      once the receiver makes room.
 * Every byte is checked. With the argument "mixed" the server turns membarrier off
 * (FERRY_SHM_MEMBARRIER=off): its sends and frees fence while the client's would not, and each
 * must still wake the other (the client sees the server's handshake and fences too). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ft.h"
#include "ft_seq.h"

#define W_MAGIC 0x54494157u /* "WAIT" */
#define W_IDLE_MS 2000
#define W_WAKE_MAX_MS 200

enum { W_ID_PING = 1, W_ID_PONG = 2, W_ID_WAKE = 3 };
enum { W_CLIENT = 1, W_SERVER = 2 };
enum {
    W_TOKEN_IDLE = 0x49444c45,
    W_TOKEN_RESULT = 0x52534c54,
    W_TOKEN_DONE = 0x444f4e45,
    W_TOKEN_GO = 0x474f2121,
    W_TOKEN_FLOODED = 0x464c4f44,
};
enum { W_ID_FLOOD = 4 };
#define W_FLOOD 20000u
#define W_FLOOD_SEQ0 1000000u /* flood messages have sequence numbers of their own */

/* Begins as ft_seq_hdr_t: PING and PONG are numbered streams (ft_seq.h). */
typedef struct w_hdr {
    uint32_t magic;
    uint32_t seq;
    uint64_t size;
    uint64_t sent_ns;
} w_hdr_t;

typedef struct w_phase {
    unsigned count;
    size_t size; /* 0: alternate 8 and 4000 */
} w_phase_t;

/* phases 0..2: ferry_worker_wait on both sides; phase 3: the server polls the worker's fd */
static const w_phase_t w_phases[] = {{1000, 8}, {50, 65536}, {10, 1u << 20}, {200, 0}};
#define W_NPHASES (sizeof(w_phases) / sizeof(w_phases[0]))

static size_t w_size(const w_phase_t *phase, unsigned i)
{
    return phase->size != 0 ? phase->size : (i % 2 ? 4000 : 8);
}

typedef struct w_side {
    ft_seq_rx_t rx;        /* from the peer */
    uint64_t wake_sent_ns; /* W_ID_WAKE: when it was sent, 0 before it arrived */
    uint64_t wake_seen_ns;
} w_side_t;

static ferry_status_t w_handler(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ferry_am_recv_params_t *params)
{
    w_side_t *side = arg;
    w_hdr_t h;
    ft_seq_recv(&side->rx, header, header_length, &h, sizeof(h), data, length, params);
    return FERRY_OK;
}

static ferry_status_t w_wake_handler(void *arg, const void *header, size_t header_length,
                                     void *data, size_t length,
                                     const ferry_am_recv_params_t *params)
{
    w_side_t *side = arg;
    w_hdr_t hcopy = {0}; /* headers are not aligned for 8-byte fields: copy */
    const w_hdr_t *h = &hcopy;
    if (header != NULL && header_length == sizeof(hcopy))
        memcpy(&hcopy, header, sizeof(hcopy));
    (void)data;
    (void)params;
    FT_CHECK(header_length == sizeof(*h) && h->magic == W_MAGIC && length == 0, "bad WAKE");
    side->wake_seen_ns = ft_now_ns();
    side->wake_sent_ns = h->sent_ns;
    return FERRY_OK;
}

typedef struct w_cond {
    w_side_t *side;
    uint64_t target;
} w_cond_t;

static bool w_received(void *arg)
{
    w_cond_t *c = arg;
    return c->side->rx.received >= c->target;
}

static bool w_comp_done(void *arg)
{
    return ((ferry_completion_t *)arg)->count == 0;
}

/* Send seq of size bytes and sleep (ferry_worker_wait) until its buffer is free again. */
static void w_send_wait(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, uint16_t me,
                        uint32_t seq, size_t size)
{
    w_hdr_t h = {.magic = W_MAGIC, .seq = seq, .size = size, .sent_ns = ft_now_ns()};
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    uint8_t *buf = malloc(size ? size : 1);
    FT_CHECK(buf != NULL, "out of memory");
    ft_pattern_fill(buf, size, ft_pattern_seed(me, seq, size), 0);
    ferry_iov_t iov = {.buffer = buf, .length = size};
    ferry_status_t status = ft_am_send(worker, ep, id, &h, sizeof(h), &iov, 1, &comp, 30000, NULL);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "send of seq %u returned %s", seq,
             ferry_status_name(status));
    ft_wait_until(worker, 30000, w_comp_done, &comp, "a send's completion");
    FT_CHECK(comp.status == FERRY_OK, "seq %u completed with %s", seq,
             ferry_status_name(comp.status));
    free(buf);
}

static size_t w_flood_size(uint32_t i)
{
    return i % 10 == 0 ? 3000 : 16; /* a pool buffer, or inline in a cell */
}

typedef struct w_flood {
    uint32_t received;
} w_flood_t;

static ferry_status_t w_flood_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    w_flood_t *fl = arg;
    w_hdr_t h;
    (void)params;
    FT_CHECK(header_length == sizeof(h), "flood: a %zu-byte header", header_length);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.magic == W_MAGIC && h.seq == W_FLOOD_SEQ0 + fl->received,
             "flood: seq %u where %u was expected", h.seq, W_FLOOD_SEQ0 + fl->received);
    FT_CHECK(length == w_flood_size(fl->received), "flood: %zu bytes", length);
    ft_pattern_check(data, length, ft_pattern_seed(W_CLIENT, h.seq, length), 0, "flood message");
    fl->received++;
    return FERRY_OK;
}

static bool w_flood_done(void *arg)
{
    return ((w_flood_t *)arg)->received >= W_FLOOD;
}

/* The event-loop way to wait for the next message: progress, arm, poll(2) on the fd. */
static void w_poll_until(ferry_worker_t *worker, w_side_t *side, uint64_t target)
{
    int fd = -1;
    unsigned sleeps = 0;
    FT_CHECK_OK(ferry_worker_get_fd(worker, &fd));
    ft_deadline_t deadline = ft_deadline_in_ms(30000);
    while (side->rx.received < target) {
        if (ferry_worker_progress(worker) > 0)
            continue;
        ferry_status_t status = ferry_worker_arm(worker);
        if (status == FERRY_ERR_BUSY)
            continue;
        FT_CHECK_OK(status);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, 200);
        FT_CHECK(r >= 0, "poll(worker fd %d): %s", fd, strerror(errno));
        sleeps++;
        FT_CHECK(!ft_deadline_passed(deadline), "no message within 30 s (poll mode)");
        ft_peers_check();
    }
    (void)sleeps;
}

static int w_server_role(int chan, void *arg)
{
    w_side_t side = {.rx = {.magic = W_MAGIC, .sender = W_CLIENT}};
    ft_ferry_t f;
    uint32_t seq = 0;
    bool mixed = *(const bool *)arg;

    if (mixed)
        FT_CHECK(setenv("FERRY_SHM_MEMBARRIER", "off", 1) == 0, "setenv: %s", strerror(errno));
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, W_ID_PING, w_handler, &side));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, W_ID_WAKE, w_wake_handler, &side));
    ft_send_address(chan, f.worker);

    /* 1. ping-pong in ferry_worker_wait */
    for (unsigned p = 0; p < 3; p++) {
        for (unsigned i = 0; i < w_phases[p].count; i++, seq++) {
            w_cond_t c = {.side = &side, .target = side.rx.received + 1};
            ft_wait_until(f.worker, 30000, w_received, &c, "the next ping");
            w_send_wait(f.worker, side.rx.reply_ep, W_ID_PONG, W_SERVER, seq,
                        w_size(&w_phases[p], i));
        }
    }

    /* 2. a short timeout with nothing to do */
    uint64_t t0 = ft_now_ns();
    FT_CHECK_STATUS(ferry_worker_wait(f.worker, 50), FERRY_ERR_TIMED_OUT);
    double waited_ms = (double)(ft_now_ns() - t0) / 1e6;
    FT_CHECK(waited_ms >= 49.0 && waited_ms < 1000.0,
             "ferry_worker_wait(50 ms) timed out after %.1f ms", waited_ms);

    /* 3. idle: sleep in ferry_worker_wait until the WAKE message */
    struct rusage ru0, ru1;
    ft_chan_send_token(chan, W_TOKEN_IDLE, 0, 0, 0, 0);
    FT_CHECK(getrusage(RUSAGE_SELF, &ru0) == 0, "getrusage: %s", strerror(errno));
    uint64_t idle_start = ft_now_ns();
    unsigned returns = 0;
    while (side.wake_seen_ns == 0) {
        ferry_status_t status = ferry_worker_wait(f.worker, 30000);
        returns++;
        FT_CHECK(status == FERRY_OK, "ferry_worker_wait(30 s) returned %s while idle",
                 ferry_status_name(status));
        FT_CHECK(ft_now_ns() - idle_start < 30000000000ull, "no WAKE within 30 s");
    }
    FT_CHECK(getrusage(RUSAGE_SELF, &ru1) == 0, "getrusage: %s", strerror(errno));
    uint64_t wall_ns = side.wake_seen_ns - idle_start;
    uint64_t cpu_ns = (uint64_t)((ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1000000L +
                                 (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) +
                                 (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000000L +
                                 (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec)) *
                      1000u;
    double cpu_percent = 100.0 * (double)cpu_ns / (double)wall_ns;
    double wake_ms = (double)(side.wake_seen_ns - side.wake_sent_ns) / 1e6;
    ft_note("idle in ferry_worker_wait for %.2f s: %.3f ms of CPU (%.3f %% of a core), %u "
            "return(s); woken %.3f ms after the message was sent",
            (double)wall_ns / 1e9, (double)cpu_ns / 1e6, cpu_percent, returns, wake_ms);
    FT_CHECK(wall_ns >= (uint64_t)W_IDLE_MS * 1000000u, "the idle wait lasted only %.3f s",
             (double)wall_ns / 1e9);
    FT_CHECK(cpu_percent < 2.0, "an idle ferry_worker_wait used %.2f %% of a core (limit 2 %%)",
             cpu_percent);
    FT_CHECK(wake_ms < W_WAKE_MAX_MS, "a sleeping worker took %.1f ms to wake up (limit %d ms)",
             wake_ms, W_WAKE_MAX_MS);
    ft_chan_send_token(chan, W_TOKEN_RESULT, cpu_ns, wall_ns, 0, 0);

    /* 4. poll(2) on the worker's fd */
    for (unsigned i = 0; i < w_phases[3].count; i++, seq++) {
        w_poll_until(f.worker, &side, side.rx.received + 1);
        w_send_wait(f.worker, side.rx.reply_ep, W_ID_PONG, W_SERVER, seq, w_size(&w_phases[3], i));
    }
    /* 5. a blocking sender that was refused: wait (not polling) until it is */
    w_flood_t flood = {0};
    FT_CHECK_OK(ferry_am_set_handler(f.worker, W_ID_FLOOD, w_flood_handler, &flood));
    ft_chan_expect_token(chan, W_TOKEN_GO, 30000);
    ft_wait_until(f.worker, 30000, w_flood_done, &flood, "the messages of a blocking sender");
    ft_chan_send_token(chan, W_TOKEN_FLOODED, flood.received, 0, 0, 0);

    ft_chan_expect_token(chan, W_TOKEN_DONE, 30000);
    ft_ferry_fini(&f);
    return 0;
}

int main(int argc, char **argv)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    w_side_t side = {.rx = {.magic = W_MAGIC, .sender = W_SERVER}};
    ft_peer_t server;
    ft_ferry_t f;
    uint32_t seq = 0;
    bool mixed = argc > 1 && strcmp(argv[1], "mixed") == 0;

    ft_set_role("client");
    ft_watchdog(55);
    ft_peer_spawn(&server, "server", w_server_role, &mixed);
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, W_ID_PONG, w_handler, &side));
    size_t length = ft_recv_address(server.chan, address, sizeof(address), 30000);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL);

    for (unsigned p = 0; p < 3; p++) {
        uint64_t start = ft_now_ns();
        for (unsigned i = 0; i < w_phases[p].count; i++, seq++) {
            w_cond_t c = {.side = &side, .target = side.rx.received + 1};
            w_send_wait(f.worker, ep, W_ID_PING, W_CLIENT, seq, w_size(&w_phases[p], i));
            ft_wait_until(f.worker, 30000, w_received, &c, "the pong");
        }
        ft_note("%u round trips of %zu B in ferry_worker_wait: %.1f us each", w_phases[p].count,
                w_phases[p].size, (double)(ft_now_ns() - start) / 1e3 / w_phases[p].count);
    }

    /* idle: the server sleeps; wake it after 2 s */
    ft_chan_expect_token(server.chan, W_TOKEN_IDLE, 30000);
    ft_sleep_ms(W_IDLE_MS + 50); /* the length of the idle period, not a synchronisation */
    w_hdr_t wake = {.magic = W_MAGIC, .seq = 0, .size = 0, .sent_ns = ft_now_ns()};
    ft_am_send_ok(f.worker, ep, W_ID_WAKE, &wake, sizeof(wake), NULL, 0, NULL, 10000);
    ft_progress_until_token(f.worker, server.chan, W_TOKEN_RESULT, 30000, NULL);

    uint64_t start = ft_now_ns();
    for (unsigned i = 0; i < w_phases[3].count; i++, seq++) {
        w_cond_t c = {.side = &side, .target = side.rx.received + 1};
        w_send_wait(f.worker, ep, W_ID_PING, W_CLIENT, seq, w_size(&w_phases[3], i));
        ft_wait_until(f.worker, 30000, w_received, &c, "the pong (server in poll)");
    }
    ft_note("%u round trips with the server in poll(2) on the worker fd: %.1f us each",
            w_phases[3].count, (double)(ft_now_ns() - start) / 1e3 / w_phases[3].count);

    /* a sender in blocking mode: on FERRY_ERR_NO_RESOURCE it sleeps in ferry_worker_wait,
     * and must be woken when the receiver makes room */
    start = ft_now_ns();
    uint64_t refusals = 0, waits_ns = 0;
    for (uint32_t i = 0; i < W_FLOOD; i++) {
        static uint8_t buf[3000];
        size_t size = w_flood_size(i);
        w_hdr_t h = {.magic = W_MAGIC, .seq = W_FLOOD_SEQ0 + i, .size = size};
        ft_pattern_fill(buf, size, ft_pattern_seed(W_CLIENT, h.seq, size), 0);
        ferry_iov_t iov = {.buffer = buf, .length = size};
        for (;;) {
            ferry_status_t status = ferry_am_send(ep, W_ID_FLOOD, &h, sizeof(h), &iov, 1, NULL);
            if (status == FERRY_OK)
                break;
            FT_CHECK(status == FERRY_ERR_NO_RESOURCE, "flood: ferry_am_send returned %s",
                     ferry_status_name(status));
            if (refusals++ == 0)
                ft_chan_send_token(server.chan, W_TOKEN_GO, i, 0, 0, 0); /* start receiving */
            uint64_t t0 = ft_now_ns();
            status = ferry_worker_wait(f.worker, 5000);
            waits_ns += ft_now_ns() - t0;
            FT_CHECK(status == FERRY_OK,
                     "flood: message %u was refused (FERRY_ERR_NO_RESOURCE), and "
                     "ferry_worker_wait(5 s) then returned %s: a sender that waits for room "
                     "is not woken when the receiver makes room",
                     i, ferry_status_name(status));
        }
    }
    FT_CHECK(refusals > 0, "flood: no send was refused, though the receiver did not poll");
    ft_progress_until_token(f.worker, server.chan, W_TOKEN_FLOODED, 30000, NULL);
    ft_note("%u messages from a blocking sender: %llu refusals, %.1f ms asleep waiting for "
            "room, %.2f s in all",
            W_FLOOD, (unsigned long long)refusals, (double)waits_ns / 1e6,
            (double)(ft_now_ns() - start) / 1e9);

    ferry_completion_t close_comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(ep, 0, &close_comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_wait_until(f.worker, 10000, w_comp_done, &close_comp, "the graceful close");
    ft_chan_send_token(server.chan, W_TOKEN_DONE, 0, 0, 0, 0);
    ft_peer_expect_exit(&server, 30000, 0);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    ft_note("passed");
    return 0;
}
