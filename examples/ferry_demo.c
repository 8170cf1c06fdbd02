/*
 * ferry_demo: two processes on this host talk through ferry.
 *
 * The program forks. Parent and child each create a context and a worker, swap worker
 * addresses through a socketpair (any channel would do: a file, TCP, MPI...), and create an
 * endpoint to each other. The parent then measures, for 8 B, 4 KiB and 1 MiB messages:
 *   latency:   ping-pong (the child echoes each PING as a PONG); one-way = round trip / 2
 *   bandwidth: a stream of DATA messages, then DONE; the child answers DONE with ACK
 * Every byte received is checked. At the end both close their endpoint gracefully.
 *
 * Build: part of the ferry build (build/examples/ferry_demo). Run: build/examples/ferry_demo
 */
#include <ferry/ferry.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Active-message ids: we choose them (0 .. FERRY_AM_ID_MAX-1). */
enum { AM_PING = 1, AM_PONG = 2, AM_DATA = 3, AM_DONE = 4, AM_ACK = 5 };

#define MAX_SIZE (1u << 20)
#define TIMEOUT_NS (10ull * 1000000000ull) /* give up on any wait after 10 s */

static const struct {
    size_t size;
    unsigned iters;
} tests[] = {{8, 20000}, {4096, 10000}, {MAX_SIZE, 100}};

struct peer;

/* What arrived with one active-message id: the handler's argument. */
typedef struct inbox {
    struct peer *peer;
    uint64_t count; /* messages received */
} inbox_t;

/* One side of the conversation. */
typedef struct peer {
    ferry_context_t *context;
    ferry_worker_t *worker;
    ferry_ep_t *ep;            /* our endpoint to the other process */
    uint8_t *pattern;          /* what every message carries (MAX_SIZE bytes) */
    inbox_t inbox[AM_ACK + 1]; /* per active-message id */
    size_t last_length;        /* payload length of the last message received */
    unsigned bad;              /* messages whose bytes were wrong */
    int peer_closed;           /* the other process closed its endpoint to us */
    int failed;                /* an endpoint failed */
} peer_t;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Runs inside ferry_worker_progress() for every message received: count and check it. The
 * data is only valid during the call; we do not send from here, the main loop does. */
static ferry_status_t on_message(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    inbox_t *inbox = arg;
    peer_t *peer = inbox->peer;
    (void)header, (void)header_length, (void)params; /* we send no header */
    if (length > 0 && memcmp(data, peer->pattern, length) != 0)
        peer->bad++;
    peer->last_length = length;
    inbox->count++;
    return FERRY_OK; /* ferry may reuse data now */
}

/* An endpoint went down. FERRY_ERR_ENDPOINT_CLOSED on an endpoint the worker accepted means the
 * other process closed its endpoint to us gracefully: the normal end. */
static void on_ep_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    peer_t *peer = arg;
    (void)ep;
    if (status == FERRY_ERR_ENDPOINT_CLOSED) {
        peer->peer_closed = 1;
        return;
    }
    fprintf(stderr, "[%d] endpoint failed: %s\n", (int)getpid(), ferry_status_string(status));
    peer->failed = 1;
}

/* Progress until *value reaches target. Returns 0, or -1 on failure or after TIMEOUT_NS. */
static int progress_until(peer_t *peer, const uint64_t *value, uint64_t target)
{
    uint64_t deadline = now_ns() + TIMEOUT_NS;
    while (*value < target) {
        if (peer->failed)
            return -1;
        if (ferry_worker_progress(peer->worker) == 0 && now_ns() > deadline) {
            fprintf(stderr, "[%d] timed out waiting for the peer\n", (int)getpid());
            return -1;
        }
    }
    return 0;
}

/* Send one active message of length bytes from the pattern buffer, and wait until ferry no
 * longer needs the buffer: FERRY_OK means done; FERRY_INPROGRESS means "done when comp.count
 * reaches 0"; FERRY_ERR_NO_RESOURCE means "queues full: progress, then try again". */
static int send_message(peer_t *peer, unsigned id, size_t length)
{
    ferry_iov_t iov = {.buffer = peer->pattern, .length = length};
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    uint64_t deadline = now_ns() + TIMEOUT_NS;
    ferry_status_t status;

    while ((status = ferry_am_send(peer->ep, id, NULL, 0, &iov, 1, &comp)) ==
           FERRY_ERR_NO_RESOURCE) {
        if (peer->failed || now_ns() > deadline)
            return -1;
        ferry_worker_progress(peer->worker);
    }
    if (status == FERRY_INPROGRESS) {
        while (comp.count > 0) {
            if (peer->failed || now_ns() > deadline)
                return -1;
            ferry_worker_progress(peer->worker);
        }
        status = comp.status;
    }
    if (status != FERRY_OK) {
        fprintf(stderr, "[%d] ferry_am_send: %s\n", (int)getpid(), ferry_status_string(status));
        return -1;
    }
    return 0;
}

/* The child: answer PING with PONG and DONE with ACK until the parent closes its endpoint. */
static int serve(peer_t *peer)
{
    uint64_t answered_ping = 0, answered_done = 0;
    uint64_t deadline = now_ns() + TIMEOUT_NS;
    while (!peer->peer_closed) {
        if (peer->failed || now_ns() > deadline)
            return -1;
        if (ferry_worker_progress(peer->worker) > 0)
            deadline = now_ns() + TIMEOUT_NS;
        if (peer->inbox[AM_PING].count > answered_ping) {
            answered_ping++;
            if (send_message(peer, AM_PONG, peer->last_length) != 0)
                return -1;
        }
        if (peer->inbox[AM_DONE].count > answered_done) {
            answered_done++;
            if (send_message(peer, AM_ACK, 0) != 0)
                return -1;
        }
    }
    return 0;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The parent: measure, print the table. */
static int drive(peer_t *peer)
{
    unsigned max_iters = 0;
    for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++)
        max_iters = tests[t].iters > max_iters ? tests[t].iters : max_iters;
    uint64_t *rtt = malloc(max_iters * sizeof(*rtt)); /* round-trip times of one size */
    if (rtt == NULL)
        return -1;
    printf("%10s %18s %14s %14s\n", "size (B)", "latency (us)", "bandwidth", "message rate");
    printf("%10s %18s %14s %14s\n", "", "one-way, median", "(GB/s)", "(M msg/s)");
    for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
        size_t size = tests[t].size;
        unsigned iters = tests[t].iters;

        /* latency: ping-pong */
        for (unsigned i = 0; i < iters; i++) {
            uint64_t start = now_ns();
            if (send_message(peer, AM_PING, size) != 0 ||
                progress_until(peer, &peer->inbox[AM_PONG].count, peer->inbox[AM_PONG].count + 1) !=
                    0)
                goto err;
            rtt[i] = now_ns() - start;
        }
        qsort(rtt, iters, sizeof(*rtt), compare_u64);
        double latency_us = rtt[iters / 2] / 2.0 / 1000.0;

        /* bandwidth: stream, then DONE/ACK tells us everything arrived */
        uint64_t start = now_ns();
        for (unsigned i = 0; i < iters; i++) {
            if (send_message(peer, AM_DATA, size) != 0)
                goto err;
        }
        if (send_message(peer, AM_DONE, 0) != 0 ||
            progress_until(peer, &peer->inbox[AM_ACK].count, peer->inbox[AM_ACK].count + 1) != 0)
            goto err;
        double elapsed_ns = (double)(now_ns() - start);
        double gbps = (double)size * iters / elapsed_ns; /* bytes/ns = GB/s */
        double mmsgs = iters / elapsed_ns * 1000.0;      /* messages/ns * 1000 = M msg/s */

        /* small messages are measured by their rate: 8 B at 0.04 GB/s says little */
        printf("%10zu %18.2f %14.2f %14.2f\n", size, latency_us, gbps, mmsgs);
    }
    free(rtt);
    return 0;
err:
    free(rtt);
    return -1;
}

/* Write our address, read the peer's: a 4-byte length, then the bytes. */
static int swap_addresses(int fd, const void *mine, size_t length, void *theirs,
                          size_t *theirs_length)
{
    uint32_t n = (uint32_t)length;
    if (write(fd, &n, sizeof(n)) != sizeof(n) || write(fd, mine, length) != (ssize_t)length)
        return -1;
    if (read(fd, &n, sizeof(n)) != sizeof(n) || n > *theirs_length)
        return -1;
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (uint8_t *)theirs + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    *theirs_length = n;
    return 0;
}

static int run(int is_parent, int fd)
{
    peer_t peer = {0};
    ferry_worker_params_t worker_params = {.accepted_ep_error_cb = on_ep_error,
                                           .accepted_ep_error_arg = &peer};
    ferry_ep_params_t ep_params = {.error_cb = on_ep_error, .error_arg = &peer};
    const void *address;
    size_t address_length;
    uint8_t peer_address[4096];
    size_t peer_address_length = sizeof(peer_address);
    ferry_status_t status;
    int result = -1;

    peer.pattern = malloc(MAX_SIZE);
    if (peer.pattern == NULL)
        return -1;
    for (size_t i = 0; i < MAX_SIZE; i++)
        peer.pattern[i] = (uint8_t)(i * 7 + (i >> 8) * 13 + 1);

    /* 1. a context (which transports) and a worker (a progress engine) */
    status = ferry_context_create(NULL, &peer.context);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_context_create: %s\n", ferry_status_string(status));
        goto out_free;
    }
    status = ferry_worker_create(peer.context, &worker_params, &peer.worker);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_worker_create: %s\n", ferry_status_string(status));
        goto out_context;
    }
    for (unsigned id = AM_PING; id <= AM_ACK; id++) {
        peer.inbox[id].peer = &peer;
        ferry_am_set_handler(peer.worker, id, on_message, &peer.inbox[id]);
    }

    /* 2. swap addresses out of band, 3. connect (ferry_ep_create does not wait for the peer) */
    ferry_worker_address(peer.worker, &address, &address_length);
    if (swap_addresses(fd, address, address_length, peer_address, &peer_address_length) != 0) {
        fprintf(stderr, "[%d] address exchange failed\n", (int)getpid());
        goto out_worker;
    }
    status = ferry_ep_create(peer.worker, peer_address, peer_address_length, &ep_params, &peer.ep);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_ep_create: %s\n", ferry_status_string(status));
        goto out_worker;
    }
    if (is_parent)
        printf("ferry %s, transport %s\n", ferry_version_string(),
               ferry_ep_transport_name(peer.ep));

    /* 4. talk */
    if ((is_parent ? drive(&peer) : serve(&peer)) != 0 || peer.bad > 0) {
        if (peer.bad > 0)
            fprintf(stderr, "[%d] %u messages had wrong bytes\n", (int)getpid(), peer.bad);
        goto out_ep;
    }

    /* 5. close gracefully (what we sent is delivered first), and wait until the peer closed
     *    its endpoint to us too: then neither side sees the other vanish */
    ferry_completion_t closed = {.cb = NULL, .count = 1, .status = FERRY_OK};
    status = ferry_ep_close(peer.ep, 0, &closed);
    if (status == FERRY_OK)
        closed.count = 0;
    uint64_t deadline = now_ns() + TIMEOUT_NS;
    while ((closed.count > 0 || !peer.peer_closed) && !peer.failed && now_ns() < deadline)
        ferry_worker_progress(peer.worker);
    result = closed.count == 0 && peer.peer_closed ? 0 : -1;

out_ep:
    ferry_ep_destroy(peer.ep);
out_worker:
    ferry_worker_destroy(peer.worker);
out_context:
    ferry_context_destroy(peer.context);
out_free:
    free(peer.pattern);
    return result;
}

int main(void)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        perror("socketpair");
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        close(fds[0]);
        _exit(run(0, fds[1]) == 0 ? 0 : 1);
    }
    close(fds[1]);
    int result = run(1, fds[0]);
    close(fds[0]); /* a child still reading the socketpair sees end-of-file */

    int wstatus;
    if (waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        fprintf(stderr, "the child failed\n");
        result = -1;
    }
    printf("%s\n", result == 0 ? "ok: every byte checked" : "FAILED");
    return result == 0 ? 0 : 1;
}
