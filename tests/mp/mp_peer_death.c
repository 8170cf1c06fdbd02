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
#include "ft_seq.h"

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
enum { PD_SURVIVOR = 1, PD_VICTIM = 3 };
enum {
    PD_TOKEN_STOP = 0x53544f50,
    PD_TOKEN_STOPPED = 0x53544f44,
    PD_TOKEN_GO = 0x474f2121,
    PD_TOKEN_DIE = 0x44494521,   /* v0: in how many ms */
    PD_TOKEN_DYING = 0x44594e47, /* v0: the time of the SIGKILL (ns) */
};

/* Messages are numbered streams (ft_seq.h): ft_seq_hdr_t headers of PD_MAGIC. */

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

/* The third process is the echo peer (ft_echo.h): it answers every ping with a pong of the same
 * size; the survivor pings it with PD_SMALL bytes. */

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
    ft_seq_send(f.worker, ep, PD_ID_HELLO, PD_MAGIC, PD_VICTIM, 0, 8);
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    for (uint32_t seq = 0; !ft_deadline_passed(deadline); seq++)
        ft_seq_send(f.worker, ep, PD_ID_BIG, PD_MAGIC, PD_VICTIM, seq, PD_BIG);
    ft_fail_at(__FILE__, __LINE__, "still alive after 60 s of streaming");
}

static int pd_kill_client(int chan, void *arg)
{
    ft_peer_t client, third_peer;
    ft_echo_client_t third;
    pd_errors_t accepted = {0};
    ft_seq_rx_t hello = {.magic = PD_MAGIC, .sender = PD_VICTIM},
                big = {.magic = PD_MAGIC, .sender = PD_VICTIM};
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&client, "client", pd_streaming_client_role, NULL);
    ft_peer_spawn(&third_peer, "third", ft_echo_role, NULL);
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = pd_error_cb,
                                     .accepted_ep_error_arg = &accepted};
    ft_ferry_init(&f, NULL, &wparams);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_HELLO, ft_seq_handler, &hello));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_BIG, ft_seq_handler, &big));
    ft_echo_connect(&third, f.worker, &third_peer);
    ft_send_address(client.chan, f.worker);
    ft_echo_pingpong(&third, 20, PD_SMALL);

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
    ft_echo_pingpong(&third, 200, PD_SMALL);
    ft_progress_for_ms(f.worker, 50);
    FT_CHECK(accepted.count == 1, "%u accepted-endpoint errors, expected 1", accepted.count);
    ft_files_check_self();
    ft_echo_finish(&third, &third_peer);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ kill the server */

/* Replies to pings until told to stop; then waits (without polling) to be killed. */
static int pd_stopping_server_role(int chan, void *arg)
{
    ft_seq_rx_t rx = {.magic = PD_MAGIC, .sender = PD_SURVIVOR};
    uint64_t replied = 0;
    ft_token_t token;
    ft_ferry_t f;
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PING, ft_seq_handler, &rx));
    ft_send_address(chan, f.worker);
    for (unsigned spins = 0;; spins++) {
        ft_progress_once(f.worker);
        if (rx.received > replied) {
            ft_seq_send(f.worker, rx.reply_ep, PD_ID_PONG, PD_MAGIC, PD_VICTIM, (uint32_t)replied,
                        PD_SMALL);
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
    ft_echo_client_t third;
    pd_errors_t errors = {0};
    ft_seq_rx_t pongs = {.magic = PD_MAGIC, .sender = PD_VICTIM};
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&server, "server", pd_stopping_server_role, NULL);
    ft_peer_spawn(&third_peer, "third", ft_echo_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    ft_echo_connect(&third, f.worker, &third_peer);
    size_t length = ft_recv_address(server.chan, address, sizeof(address), 30000);
    ferry_ep_params_t params = {.error_cb = pd_error_cb, .error_arg = &errors};
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, &params);
    ft_echo_pingpong(&third, 20, PD_SMALL);

    /* a few round trips with the server (its pongs: PD_ID_PONG; the echo peer's: its own id) */
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, ft_seq_handler, &pongs));
    for (uint32_t seq = 0; seq < 20; seq++) {
        ft_seq_send(f.worker, ep, PD_ID_PING, PD_MAGIC, PD_SURVIVOR, seq, PD_SMALL);
        ft_progress_until_count(f.worker, 30000, &pongs.received, seq + 1ull, "the server's pong");
    }

    /* the server stops polling; a large send to it stays queued */
    ft_chan_send_token(server.chan, PD_TOKEN_STOP, 0, 0, 0, 0);
    ft_progress_until_token(f.worker, server.chan, PD_TOKEN_STOPPED, 30000, NULL);
    size_t stall = pd_stall_size();
    uint8_t *big = malloc(stall);
    FT_CHECK(big != NULL, "out of memory");
    ft_pattern_fill(big, stall, ft_pattern_seed(PD_SURVIVOR, 20, stall), 0);
    ft_seq_hdr_t h = {.magic = PD_MAGIC, .seq = 20, .size = stall};
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
    ft_echo_pingpong(&third, 200, PD_SMALL);
    FT_CHECK(errors.count == 1, "%u errors on the endpoint, expected 1", errors.count);
    ferry_ep_destroy(ep);
    ft_files_check_self();
    ft_echo_finish(&third, &third_peer);
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
    ft_seq_rx_t pongs = {.magic = PD_MAGIC, .sender = PD_VICTIM};
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&server, "server", pd_stopping_server_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PD_ID_PONG, ft_seq_handler, &pongs));
    size_t length = ft_recv_address(server.chan, address, sizeof(address), 30000);
    ferry_ep_params_t params = {.error_cb = pd_error_cb, .error_arg = &errors};
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, &params);
    for (uint32_t seq = 0; seq < 5; seq++) {
        ft_seq_send(f.worker, ep, PD_ID_PING, PD_MAGIC, PD_SURVIVOR, seq, PD_SMALL);
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
    ft_echo_client_t third;
    ft_ferry_t f;
    (void)chan;
    (void)arg;

    ft_peer_spawn(&d1, "exits", pd_short_lived_role, NULL);
    ft_peer_spawn(&d2, "killed", pd_short_lived_role, (void *)1);
    ft_peer_spawn(&third_peer, "third", ft_echo_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
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
    ft_echo_connect(&third, f.worker, &third_peer);
    ft_echo_pingpong(&third, 20, PD_SMALL);
    pd_connect_dead(f.worker, clean, clean_length, "a worker that was destroyed");
    ft_echo_pingpong(&third, 20, PD_SMALL);
    ft_echo_finish(&third, &third_peer);
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
