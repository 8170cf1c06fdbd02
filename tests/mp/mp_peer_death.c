/* A peer dies (SIGKILL): the survivor notices within 1 s, and keeps working with others.
 *
 * Each sub-case runs in a "survivor" process of its own (forked by main), which forks its
 * peers before it creates any ferry object:
 *   kill_client  a client streams 1 MiB messages to the survivor and is killed mid-stream:
 *                the survivor's accepted_ep_error_cb reports FERRY_ERR_CONNECTION_RESET for
 *                that endpoint within 1 s; then 200 round trips of 4000 B with a third
 *                process (its replies need the survivor's buffer pool: buffers the dead
 *                client held must have been reclaimed);
 *   kill_server  the survivor's endpoint to a server that stopped polling has a 1 MiB send
 *                (64 MiB over tcp) queued; the server is killed: the error callback reports
 *                FERRY_ERR_CONNECTION_RESET within 1 s, the queued send completes with an
 *                error, a new send fails; the endpoint to a third process keeps working;
 *   kill_asleep  the same while the survivor sleeps in ferry_worker_wait: the hang-up wakes
 *                it, and the error callback fires within 1 s of the SIGKILL;
 *   exited       ferry_ep_create to the address of a process that exited (cleanly, and by
 *                SIGKILL) fails with FERRY_ERR_CONNECTION_REFUSED, or the endpoint's error
 *                callback fires within 1 s; nothing hangs.
 * Afterwards nothing is left in /dev/shm or /tmp. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft.h"

#define PD_MAGIC 0x48544544u /* "DETH" */
#define PD_DETECT_MS 1000
#define PD_BIG (1u << 20)

/* A send that stays queued at a peer that stopped polling: 1 MiB fills shm's buffers; a tcp
 * socket on loopback takes several MiB at once, so over tcp it is 64 MiB. */
static size_t pd_stall_size(void)
{
    return strcmp(ft_remote_transport(), "tcp") == 0 ? (size_t)64 << 20 : PD_BIG;
}
#define PD_SMALL 4000

enum { PD_ID_PING = 10, PD_ID_PONG = 11, PD_ID_HELLO = 12, PD_ID_BIG = 13 };
enum { PD_SURVIVOR = 1, PD_THIRD = 2, PD_VICTIM = 3 };
enum {
    PD_TOKEN_DONE = 0x444f4e45,
    PD_TOKEN_STOP = 0x53544f50,
    PD_TOKEN_STOPPED = 0x53544f44,
    PD_TOKEN_GO = 0x474f2121,
    PD_TOKEN_DIE = 0x44494521,   /* v0: in how many ms */
    PD_TOKEN_DYING = 0x44594e47, /* v0: the time of the SIGKILL (ns) */
};

typedef struct pd_hdr {
    uint32_t magic;
    uint32_t seq;
    uint64_t size;
} pd_hdr_t;

/* ------------------------------------------------------------------ receiving */

/* What one process receives: messages of one kind, checked in order. */
typedef struct pd_rx {
    uint16_t sender;
    uint32_t next_seq;
    uint64_t received;
    ferry_ep_t *reply_ep;
} pd_rx_t;

static ferry_status_t pd_handler(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    pd_rx_t *rx = arg;
    pd_hdr_t hcopy = {0}; /* headers are not aligned for 8-byte fields: copy */
    const pd_hdr_t *h = &hcopy;
    if (header != NULL && header_length == sizeof(hcopy))
        memcpy(&hcopy, header, sizeof(hcopy));
    char what[64];
    FT_CHECK(header_length == sizeof(*h) && h->magic == PD_MAGIC, "bad header (%zu bytes)",
             header_length);
    FT_CHECK(h->seq == rx->next_seq, "seq %u where %u was expected", h->seq, rx->next_seq);
    FT_CHECK(length == h->size, "seq %u: %zu bytes, the header says %llu", h->seq, length,
             (unsigned long long)h->size);
    snprintf(what, sizeof(what), "message seq %u from %u", h->seq, rx->sender);
    ft_pattern_check(data, length, ft_pattern_seed(rx->sender, h->seq, length), 0, what);
    rx->next_seq++;
    rx->received++;
    rx->reply_ep = params->reply_ep;
    return FERRY_OK;
}

/* ------------------------------------------------------------------ sending */

/* Send seq (size bytes, pattern of sender) and wait until its buffer is free. */
static void pd_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, uint16_t sender,
                    uint32_t seq, size_t size)
{
    static uint8_t *buf;
    static size_t cap;
    if (cap < size) {
        free(buf);
        buf = malloc(size);
        cap = size;
        FT_CHECK(buf != NULL, "out of memory");
    }
    pd_hdr_t h = {.magic = PD_MAGIC, .seq = seq, .size = size};
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    ft_pattern_fill(buf, size, ft_pattern_seed(sender, seq, size), 0);
    ferry_iov_t iov = {.buffer = buf, .length = size};
    ferry_status_t status = ft_am_send(worker, ep, id, &h, sizeof(h), &iov, 1, &comp, 30000, NULL);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "send of seq %u returned %s", seq,
             ferry_status_name(status));
    ft_progress_until_completion(worker, 30000, &comp, "a send's completion");
    FT_CHECK(comp.status == FERRY_OK, "seq %u completed with %s", seq,
             ferry_status_name(comp.status));
}

/* ------------------------------------------------------------------ error callbacks */

typedef struct pd_errors {
    unsigned count;
    ferry_ep_t *ep;
    ferry_status_t status;
    uint64_t when_ns;
} pd_errors_t;

static void pd_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    pd_errors_t *e = arg;
    if (e->count++ == 0) {
        e->ep = ep;
        e->status = status;
        e->when_ns = ft_now_ns();
    }
}

static bool pd_error_seen(void *arg)
{
    return ((pd_errors_t *)arg)->count > 0;
}

/* ------------------------------------------------------------------ the third process */

/* Replies to every PING with a PONG of the same size, until told DONE. */
static int pd_third_role(int chan, void *arg)
{
    pd_rx_t rx = {.sender = PD_SURVIVOR};
    uint64_t replied = 0;
    ft_token_t token;
    ft_ferry_t f;
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PING, pd_handler, &rx));
    ft_send_address(chan, f.worker);
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    for (unsigned spins = 0;; spins++) {
        ft_progress_once(f.worker);
        if (rx.received > replied) {
            pd_send(f.worker, rx.reply_ep, PD_ID_PONG, PD_THIRD, (uint32_t)replied, PD_SMALL);
            replied++;
        }
        if ((spins & 0x3f) == 0 && ft_chan_try_token(chan, PD_TOKEN_DONE, &token))
            break;
        FT_CHECK(!ft_deadline_passed(deadline), "not told DONE within 60 s");
    }
    ft_chan_expect_eof(chan, 30000);
    ft_ferry_fini(&f);
    return 0;
}

/* Survivor side of the third process: n round trips of PD_SMALL bytes. */
typedef struct pd_third {
    ferry_ep_t *ep;
    pd_rx_t rx; /* PONGs */
    uint32_t seq;
    pd_errors_t errors;
} pd_third_t;

static void pd_third_connect(ferry_worker_t *worker, pd_third_t *third, ft_peer_t *peer)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    third->rx.sender = PD_THIRD;
    size_t length = ft_recv_address(peer->chan, address, sizeof(address), 30000);
    ferry_ep_params_t params = {.error_cb = pd_error_cb, .error_arg = &third->errors};
    third->ep = ft_ep_create(worker, address, length, &params);
}

static void pd_third_pingpong(ferry_worker_t *worker, pd_third_t *third, unsigned n)
{
    for (unsigned i = 0; i < n; i++, third->seq++) {
        pd_send(worker, third->ep, PD_ID_PING, PD_SURVIVOR, third->seq, PD_SMALL);
        ft_progress_until_count(worker, 30000, &third->rx.received, third->seq + 1ull,
                                "the third process's pong");
    }
    FT_CHECK(third->errors.count == 0, "the endpoint to the third process failed: %s",
             ferry_status_name(third->errors.status));
}

static void pd_third_finish(ferry_worker_t *worker, pd_third_t *third, ft_peer_t *peer)
{
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ft_chan_send_token(peer->chan, PD_TOKEN_DONE, 0, 0, 0, 0);
    ferry_status_t status = ferry_ep_close(third->ep, 0, &comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(worker, 10000, &comp, "the graceful close");
    ferry_ep_destroy(third->ep);
    close(peer->chan);
    ft_peer_expect_exit(peer, 30000, 0);
}

/* The time from the kill to the error callback; fails beyond PD_DETECT_MS. */
static double pd_detect(ferry_worker_t *worker, pd_errors_t *errors, uint64_t killed_ns,
                        const char *what)
{
    ft_progress_until(worker, 10000, pd_error_seen, errors, what);
    double ms = (double)(errors->when_ns - killed_ns) / 1e6;
    FT_CHECK(ms <= PD_DETECT_MS, "%s: %.1f ms after the SIGKILL (limit %d ms)", what, ms,
             PD_DETECT_MS);
    FT_CHECK(errors->status == FERRY_ERR_CONNECTION_RESET, "%s reported %s, expected %s", what,
             ferry_status_name(errors->status), "FERRY_ERR_CONNECTION_RESET");
    return ms;
}

/* ------------------------------------------------------------------ kill the client */

/* Says hello, then streams 1 MiB messages until it is killed. */
static int pd_streaming_client_role(int chan, void *arg)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_t f;
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(chan, address, sizeof(address), 30000);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL);
    pd_send(f.worker, ep, PD_ID_HELLO, PD_VICTIM, 0, 8);
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    for (uint32_t seq = 0; !ft_deadline_passed(deadline); seq++)
        pd_send(f.worker, ep, PD_ID_BIG, PD_VICTIM, seq, PD_BIG);
    ft_fail_at(__FILE__, __LINE__, "still alive after 60 s of streaming");
}

static int pd_kill_client(int chan, void *arg)
{
    ft_peer_t client, third_peer;
    pd_third_t third = {0};
    pd_errors_t accepted = {0};
    pd_rx_t hello = {.sender = PD_VICTIM}, big = {.sender = PD_VICTIM};
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&client, "client", pd_streaming_client_role, NULL);
    ft_peer_spawn(&third_peer, "third", pd_third_role, NULL);
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = pd_error_cb,
                                     .accepted_ep_error_arg = &accepted};
    ft_ferry_init(&f, NULL, &wparams);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, pd_handler, &third.rx));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_HELLO, pd_handler, &hello));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_BIG, pd_handler, &big));
    pd_third_connect(f.worker, &third, &third_peer);
    ft_send_address(client.chan, f.worker);
    pd_third_pingpong(f.worker, &third, 20);

    ft_progress_until_count(f.worker, 30000, &big.received, 3, "three 1 MiB messages");
    ferry_ep_t *client_ep = hello.reply_ep;
    FT_CHECK(client_ep != NULL && big.reply_ep == client_ep,
             "the client's messages came on different endpoints");
    uint64_t killed = ft_peer_kill(&client);
    double ms = pd_detect(f.worker, &accepted, killed, "the accepted endpoint's error callback");
    FT_CHECK(accepted.ep == client_ep,
             "the error callback names endpoint %p, not the client's "
             "(%p)",
             (void *)accepted.ep, (void *)client_ep);
    ft_note("kill_client: the client's death was reported after %.1f ms (%llu 1 MiB messages "
            "had arrived)",
            ms, (unsigned long long)big.received);
    pd_third_pingpong(f.worker, &third, 200);
    ft_progress_for_ms(f.worker, 50);
    FT_CHECK(accepted.count == 1, "%u accepted-endpoint errors, expected 1", accepted.count);
    ft_files_check_self();
    pd_third_finish(f.worker, &third, &third_peer);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ kill the server */

/* Replies to pings until told to stop; then waits (without polling) to be killed. */
static int pd_stopping_server_role(int chan, void *arg)
{
    pd_rx_t rx = {.sender = PD_SURVIVOR};
    uint64_t replied = 0;
    ft_token_t token;
    ft_ferry_t f;
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PING, pd_handler, &rx));
    ft_send_address(chan, f.worker);
    for (unsigned spins = 0;; spins++) {
        ft_progress_once(f.worker);
        if (rx.received > replied) {
            pd_send(f.worker, rx.reply_ep, PD_ID_PONG, PD_VICTIM, (uint32_t)replied, PD_SMALL);
            replied++;
        }
        if ((spins & 0x3f) == 0 && ft_chan_try_token(chan, PD_TOKEN_STOP, &token))
            break;
    }
    ft_chan_send_token(chan, PD_TOKEN_STOPPED, 0, 0, 0, 0);
    /* killed while it waits here, or told to kill itself */
    token = ft_chan_expect_token(chan, PD_TOKEN_DIE, 60000);
    ft_sleep_ms((unsigned)token.v[0]);
    ft_chan_send_token(chan, PD_TOKEN_DYING, ft_now_ns(), 0, 0, 0);
    raise(SIGKILL);
    ft_fail_at(__FILE__, __LINE__, "SIGKILL did not kill");
}

static void pd_queued_done(ferry_completion_t *comp)
{
    (void)comp;
}

static int pd_kill_server(int chan, void *arg)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_peer_t server, third_peer;
    pd_third_t third = {0};
    pd_errors_t errors = {0};
    pd_rx_t pongs = {.sender = PD_VICTIM};
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&server, "server", pd_stopping_server_role, NULL);
    ft_peer_spawn(&third_peer, "third", pd_third_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, pd_handler, &third.rx));
    pd_third_connect(f.worker, &third, &third_peer);
    size_t length = ft_recv_address(server.chan, address, sizeof(address), 30000);
    ferry_ep_params_t params = {.error_cb = pd_error_cb, .error_arg = &errors};
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, &params);
    pd_third_pingpong(f.worker, &third, 20);

    /* a few round trips with the server, on a handler of their own */
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, pd_handler, &pongs));
    for (uint32_t seq = 0; seq < 20; seq++) {
        pd_send(f.worker, ep, PD_ID_PING, PD_SURVIVOR, seq, PD_SMALL);
        ft_progress_until_count(f.worker, 30000, &pongs.received, seq + 1ull, "the server's pong");
    }
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, pd_handler, &third.rx));

    /* the server stops polling; a large send to it stays queued */
    ft_chan_send_token(server.chan, PD_TOKEN_STOP, 0, 0, 0, 0);
    ft_progress_until_token(f.worker, server.chan, PD_TOKEN_STOPPED, 30000, NULL);
    size_t stall = pd_stall_size();
    uint8_t *big = malloc(stall);
    FT_CHECK(big != NULL, "out of memory");
    ft_pattern_fill(big, stall, ft_pattern_seed(PD_SURVIVOR, 20, stall), 0);
    pd_hdr_t h = {.magic = PD_MAGIC, .seq = 20, .size = stall};
    ferry_iov_t iov = {.buffer = big, .length = stall};
    ferry_completion_t queued = {.cb = pd_queued_done, .count = 1, .status = FERRY_OK};
    FT_CHECK_STATUS(ferry_am_send(ep, PD_ID_PING, &h, sizeof(h), &iov, 1, &queued),
                    FERRY_INPROGRESS);
    ft_progress_for_ms(f.worker, 20);
    FT_CHECK(queued.count == 1, "a %zu-byte send to a server that does not poll completed", stall);

    uint64_t killed = ft_peer_kill(&server);
    double ms = pd_detect(f.worker, &errors, killed, "the endpoint's error callback");
    FT_CHECK(errors.ep == ep, "the error callback names endpoint %p, not %p", (void *)errors.ep,
             (void *)ep);
    ft_progress_until_completion(f.worker, 1000, &queued, "the queued send's completion");
    FT_CHECK(queued.status == errors.status,
             "the queued send completed with %s, the endpoint failed with %s",
             ferry_status_name(queued.status), ferry_status_name(errors.status));
    free(big);
    ferry_status_t status = ferry_am_send(ep, PD_ID_PING, &h, sizeof(h), NULL, 0, NULL);
    FT_CHECK(status == FERRY_ERR_CONNECTION_RESET,
             "a send on the failed endpoint returned %s, expected FERRY_ERR_CONNECTION_RESET",
             ferry_status_name(status));
    ft_note("kill_server: the server's death was reported after %.1f ms; the queued send "
            "completed with %s",
            ms, ferry_status_name(queued.status));
    pd_third_pingpong(f.worker, &third, 200);
    FT_CHECK(errors.count == 1, "%u errors on the endpoint, expected 1", errors.count);
    ferry_ep_destroy(ep);
    ft_files_check_self();
    pd_third_finish(f.worker, &third, &third_peer);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ kill while asleep */

/* The survivor sleeps in ferry_worker_wait (no spinning) when its peer dies: the hang-up must
 * wake it, and the error callback fire within 1 s. */
static int pd_kill_asleep(int chan, void *arg)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_peer_t server;
    pd_errors_t errors = {0};
    pd_rx_t pongs = {.sender = PD_VICTIM};
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&server, "server", pd_stopping_server_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, pd_handler, &pongs));
    size_t length = ft_recv_address(server.chan, address, sizeof(address), 30000);
    ferry_ep_params_t params = {.error_cb = pd_error_cb, .error_arg = &errors};
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, &params);
    for (uint32_t seq = 0; seq < 5; seq++) {
        pd_send(f.worker, ep, PD_ID_PING, PD_SURVIVOR, seq, PD_SMALL);
        ft_progress_until_count(f.worker, 30000, &pongs.received, seq + 1ull, "the server's pong");
    }
    ft_chan_send_token(server.chan, PD_TOKEN_STOP, 0, 0, 0, 0);
    ft_progress_until_token(f.worker, server.chan, PD_TOKEN_STOPPED, 30000, NULL);

    /* sleep; the server kills itself 200 ms from now */
    ft_chan_send_token(server.chan, PD_TOKEN_DIE, 200, 0, 0, 0);
    unsigned timeouts = 0, wakeups = 0;
    uint64_t start = ft_now_ns();
    while (errors.count == 0) {
        ferry_status_t status = ferry_worker_wait(f.worker, 5000);
        FT_CHECK(status == FERRY_OK || status == FERRY_ERR_TIMED_OUT,
                 "ferry_worker_wait returned %s", ferry_status_name(status));
        timeouts += status == FERRY_ERR_TIMED_OUT;
        wakeups++;
        FT_CHECK(ft_now_ns() - start < 10000000000ull, "no error callback within 10 s");
    }
    ft_token_t dying = ft_chan_expect_token(server.chan, PD_TOKEN_DYING, 10000);
    FT_CHECK(ft_peer_wait(&server, 10000) && WIFSIGNALED(server.wstatus) &&
                 WTERMSIG(server.wstatus) == SIGKILL,
             "the server did not die of SIGKILL");
    double ms = (double)(errors.when_ns - dying.v[0]) / 1e6;
    ft_note("kill_asleep: a sleeping worker was woken and told of its peer's death %.1f ms "
            "after the SIGKILL (%u return(s) from ferry_worker_wait, %u timed out)",
            ms, wakeups, timeouts);
    FT_CHECK(timeouts == 0, "ferry_worker_wait(5 s) timed out: the hang-up did not wake it");
    FT_CHECK(ms <= PD_DETECT_MS, "the error callback came %.1f ms after the SIGKILL (limit %d)", ms,
             PD_DETECT_MS);
    FT_CHECK(errors.status == FERRY_ERR_CONNECTION_RESET && errors.ep == ep,
             "the error callback reported %s", ferry_status_name(errors.status));
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ exited peers */

/* Sends its address, then exits cleanly when told (arg NULL) or waits to be killed. */
static int pd_short_lived_role(int chan, void *arg)
{
    ft_token_t token;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    if (arg != NULL) {
        ft_chan_recv(chan, &token, sizeof(token), 60000);
        ft_fail_at(__FILE__, __LINE__, "not killed");
    }
    ft_chan_expect_token(chan, PD_TOKEN_GO, 30000);
    ft_ferry_fini(&f);
    return 0;
}

/* Connect to a dead worker's address: refused, or an error callback within 1 s. */
static void pd_connect_dead(ferry_worker_t *worker, const void *address, size_t length,
                            const char *what)
{
    pd_errors_t errors = {0};
    ferry_ep_params_t params = {.error_cb = pd_error_cb, .error_arg = &errors};
    ferry_ep_t *ep = NULL;
    uint64_t start = ft_now_ns();
    ferry_status_t status = ferry_ep_create(worker, address, length, &params, &ep);
    double ms = (double)(ft_now_ns() - start) / 1e6;
    FT_CHECK(ms < PD_DETECT_MS, "%s: ferry_ep_create took %.1f ms", what, ms);
    if (status == FERRY_OK) {
        ft_progress_until(worker, 10000, pd_error_seen, &errors, "the error callback");
        ms = (double)(errors.when_ns - start) / 1e6;
        FT_CHECK(ms < PD_DETECT_MS, "%s: the error callback came after %.1f ms", what, ms);
        FT_CHECK(errors.status < 0 && errors.ep == ep, "%s: error callback with %s", what,
                 ferry_status_name(errors.status));
        ft_note("%s: ferry_ep_create returned FERRY_OK; the error callback reported %s after "
                "%.1f ms",
                what, ferry_status_name(errors.status), ms);
        ferry_ep_destroy(ep);
        return;
    }
    FT_CHECK(status == FERRY_ERR_CONNECTION_REFUSED,
             "%s: ferry_ep_create returned %s, expected FERRY_ERR_CONNECTION_REFUSED (or "
             "FERRY_OK and an error callback)",
             what, ferry_status_name(status));
    FT_CHECK(ep == NULL, "%s: ferry_ep_create failed but set the endpoint", what);
    ft_note("%s: ferry_ep_create returned %s after %.2f ms", what, ferry_status_name(status), ms);
}

static int pd_exited(int chan, void *arg)
{
    uint8_t clean[FT_CHAN_MSG_MAX], killed[FT_CHAN_MSG_MAX];
    ft_peer_t d1, d2, third_peer;
    pd_third_t third = {0};
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&d1, "exits", pd_short_lived_role, NULL);
    ft_peer_spawn(&d2, "killed", pd_short_lived_role, (void *)1);
    ft_peer_spawn(&third_peer, "third", pd_third_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, pd_handler, &third.rx));
    size_t clean_length = ft_recv_address(d1.chan, clean, sizeof(clean), 30000);
    size_t killed_length = ft_recv_address(d2.chan, killed, sizeof(killed), 30000);
    ft_chan_send_token(d1.chan, PD_TOKEN_GO, 0, 0, 0, 0);
    ft_peer_expect_exit(&d1, 30000, 0);
    ft_peer_kill(&d2);

    for (int round = 0; round < 2; round++) {
        pd_connect_dead(f.worker, clean, clean_length, "a worker that was destroyed");
        pd_connect_dead(f.worker, killed, killed_length, "a worker whose process was killed");
    }
    /* the worker still connects to live peers */
    pd_third_connect(f.worker, &third, &third_peer);
    pd_third_pingpong(f.worker, &third, 20);
    pd_connect_dead(f.worker, clean, clean_length, "a worker that was destroyed");
    pd_third_pingpong(f.worker, &third, 20);
    pd_third_finish(f.worker, &third, &third_peer);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        ft_role_fn_t fn;
    } cases[] = {
        {"kill_client", pd_kill_client},
        {"kill_server", pd_kill_server},
        {"kill_asleep", pd_kill_asleep},
        {"exited", pd_exited},
    };
    ft_files_t before;

    ft_set_role("main");
    ft_watchdog(55);
    ft_files_snapshot(&before);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
            continue;
        ft_peer_t survivor;
        ft_peer_spawn(&survivor, cases[i].name, cases[i].fn, NULL);
        ft_peer_expect_exit(&survivor, 40000, 0);
        ft_note("%s passed", cases[i].name);
    }
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
