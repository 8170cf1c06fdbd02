/*
 * ferry_hello_bootstrap: N processes find each other with the bootstrap and greet each other.
 *
 * Every rank creates a worker, swaps compact worker addresses (the same size everywhere) with
 * all the others in one ferry_bootstrap_allgather, creates an endpoint to every other rank, sends
 * each one active message whose bytes depend on (sender, receiver), and checks every byte of what
 * it receives. Then all close their endpoints, meet in a barrier, and each prints one line.
 *
 * Run it under a launcher (the pmix bootstrap):
 *     mpirun --oversubscribe -np 4 build/examples/ferry_hello_bootstrap
 * or start N processes yourself (the tcp bootstrap), e.g. for 4 on this host:
 *     for r in 0 1 2 3; do FERRY_BOOTSTRAP_ROOT=127.0.0.1:13400 FERRY_BOOTSTRAP_RANK=$r \
 *         FERRY_BOOTSTRAP_SIZE=4 build/examples/ferry_hello_bootstrap & done; wait
 * Alone it runs as a job of one (nothing to greet). Exit status 0 when every byte arrived.
 */
#include <ferry/bootstrap.h>
#include <ferry/ferry.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { AM_HELLO = 1 };

#define TIMEOUT_NS (30ull * 1000000000ull) /* give up on any wait after 30 s */

typedef struct hello {
    unsigned rank, size;
    ferry_worker_t *worker;
    unsigned received;   /* greetings received */
    unsigned bad;        /* greetings with a wrong length or wrong bytes */
    unsigned closed;     /* other ranks that closed their endpoint to us */
    int failed;          /* an endpoint failed */
    unsigned char *seen; /* per sender: greeted already */
} hello_t;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The greeting from sender to receiver: its length and bytes depend on both. */
static size_t greeting_length(unsigned sender, unsigned receiver)
{
    return 1000 + 37 * sender + receiver;
}

static unsigned char greeting_byte(unsigned sender, unsigned receiver, size_t i)
{
    return (unsigned char)(sender * 31u + receiver * 7u + i * 13u + (i >> 8));
}

static ferry_status_t on_hello(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ferry_am_recv_params_t *params)
{
    hello_t *h = arg;
    uint32_t sender;
    const unsigned char *bytes = data;
    (void)params;

    if (header_length != sizeof(sender)) {
        h->bad++;
        return FERRY_OK;
    }
    memcpy(&sender, header, sizeof(sender)); /* no alignment guarantee: copy */
    if (sender >= h->size || sender == h->rank || h->seen[sender] ||
        length != greeting_length(sender, h->rank)) {
        h->bad++;
        return FERRY_OK;
    }
    for (size_t i = 0; i < length; i++) {
        if (bytes[i] != greeting_byte(sender, h->rank, i)) {
            h->bad++;
            return FERRY_OK;
        }
    }
    h->seen[sender] = 1;
    h->received++;
    return FERRY_OK;
}

/* Errors of the endpoints other ranks opened to us: a graceful close is the normal end. */
static void on_accepted_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    hello_t *h = arg;
    (void)ep;
    if (status == FERRY_ERR_ENDPOINT_CLOSED) {
        h->closed++;
        return;
    }
    fprintf(stderr, "rank %u: an endpoint from another rank failed: %s\n", h->rank,
            ferry_status_string(status));
    h->failed = 1;
}

static void on_ep_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    hello_t *h = arg;
    fprintf(stderr, "rank %u: endpoint (%s) failed: %s\n", h->rank, ferry_ep_transport_name(ep),
            ferry_status_string(status));
    h->failed = 1;
}

/* Progress until *count reaches target (or the completion's count reaches 0 when count is
 * NULL); -1 on failure or timeout. */
static int progress_until(hello_t *h, const unsigned *count, unsigned target,
                          const ferry_completion_t *comp, const char *what)
{
    uint64_t deadline = now_ns() + TIMEOUT_NS;
    while (count != NULL ? *count < target : comp->count > 0) {
        if (h->failed)
            return -1;
        if (ferry_worker_progress(h->worker) == 0 && now_ns() > deadline) {
            fprintf(stderr, "rank %u: timed out waiting for %s\n", h->rank, what);
            return -1;
        }
    }
    return 0;
}

/* Swap worker addresses in one allgather: the compact form has the same size
 * (FERRY_ADDRESS_COMPACT_SIZE) in every process and works on this host and across hosts.
 * *all_p receives size addresses, rank r's at r * FERRY_ADDRESS_COMPACT_SIZE (free it). */
static int exchange_addresses(ferry_bootstrap_t *bs, ferry_worker_t *worker, uint8_t **all_p)
{
    uint8_t mine[FERRY_ADDRESS_COMPACT_SIZE];
    ferry_status_t status = ferry_worker_address_compact(worker, mine);
    if (status != FERRY_OK)
        return -1;
    uint8_t *all = calloc(ferry_bootstrap_size(bs), FERRY_ADDRESS_COMPACT_SIZE);
    if (all == NULL)
        return -1;
    status = ferry_bootstrap_allgather(bs, mine, sizeof(mine), all);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_bootstrap_allgather (addresses): %s\n", ferry_status_string(status));
        free(all);
        return -1;
    }
    *all_p = all;
    return 0;
}

/* Greet every other rank and wait for every greeting; then close our endpoints and wait until
 * every other rank closed theirs. */
static int greet(hello_t *h, ferry_ep_t **eps, unsigned char *buffer)
{
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    uint32_t me = h->rank;

    for (unsigned step = 1; step < h->size; step++) {
        unsigned to = (h->rank + step) % h->size; /* not everyone to rank 0 first */
        size_t length = greeting_length(h->rank, to);
        for (size_t i = 0; i < length; i++)
            buffer[i] = greeting_byte(h->rank, to, i);
        ferry_iov_t iov = {.buffer = buffer, .length = length};
        ferry_status_t status;
        uint64_t deadline = now_ns() + TIMEOUT_NS;
        comp.count++;
        while ((status = ferry_am_send(eps[to], AM_HELLO, &me, sizeof(me), &iov, 1, &comp)) ==
               FERRY_ERR_NO_RESOURCE) {
            if (h->failed || now_ns() > deadline)
                return -1;
            ferry_worker_progress(h->worker);
        }
        if (status != FERRY_INPROGRESS)
            comp.count--;
        if (status != FERRY_OK && status != FERRY_INPROGRESS) {
            fprintf(stderr, "rank %u: ferry_am_send to rank %u: %s\n", h->rank, to,
                    ferry_status_string(status));
            return -1;
        }
        /* one buffer for every greeting: wait until ferry no longer needs it */
        if (progress_until(h, NULL, 0, &comp, "a send to complete") != 0)
            return -1;
    }
    if (progress_until(h, &h->received, h->size - 1, NULL, "the other ranks' greetings") != 0)
        return -1;

    for (unsigned r = 0; r < h->size; r++) {
        if (eps[r] == NULL)
            continue;
        comp.count++;
        if (ferry_ep_close(eps[r], 0, &comp) != FERRY_INPROGRESS)
            comp.count--;
    }
    if (progress_until(h, NULL, 0, &comp, "our endpoints to close") != 0 ||
        progress_until(h, &h->closed, h->size - 1, NULL, "the other ranks to close") != 0)
        return -1;
    return 0;
}

int main(void)
{
    ferry_bootstrap_t *bs;
    ferry_context_t *context;
    hello_t h = {0};
    int result = 1;

    ferry_status_t status = ferry_bootstrap_init(NULL, &bs);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_bootstrap_init: %s\n", ferry_status_string(status));
        return 1;
    }
    h.rank = ferry_bootstrap_rank(bs);
    h.size = ferry_bootstrap_size(bs);
    h.seen = calloc(h.size, 1);
    ferry_ep_t **eps = calloc(h.size, sizeof(*eps));
    unsigned char *buffer = malloc(greeting_length(h.size, h.size));
    if (h.seen == NULL || eps == NULL || buffer == NULL)
        goto out_free;

    status = ferry_context_create(NULL, &context);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_context_create: %s\n", ferry_status_string(status));
        goto out_free;
    }
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = on_accepted_error,
                                     .accepted_ep_error_arg = &h};
    status = ferry_worker_create(context, &wparams, &h.worker);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_worker_create: %s\n", ferry_status_string(status));
        goto out_context;
    }
    ferry_am_set_handler(h.worker, AM_HELLO, on_hello, &h);
    /* the barrier below progresses the worker: a greeting sent while its endpoint was still
     * connecting leaves only from progress, and its receiver may wait for it */
    ferry_bootstrap_set_progress(bs, h.worker);

    uint8_t *addresses = NULL;
    if (exchange_addresses(bs, h.worker, &addresses) != 0)
        goto out_worker;
    const char *transport = "none";
    for (unsigned r = 0; r < h.size; r++) {
        if (r == h.rank)
            continue;
        ferry_ep_params_t eparams = {.error_cb = on_ep_error, .error_arg = &h};
        status = ferry_ep_create(h.worker, addresses + r * FERRY_ADDRESS_COMPACT_SIZE,
                                 FERRY_ADDRESS_COMPACT_SIZE, &eparams, &eps[r]);
        if (status != FERRY_OK) {
            fprintf(stderr, "rank %u: ferry_ep_create to rank %u: %s\n", h.rank, r,
                    ferry_status_string(status));
            goto out_eps;
        }
        transport = ferry_ep_transport_name(eps[r]);
    }

    if (greet(&h, eps, buffer) != 0 || h.bad != 0)
        goto out_eps;
    status = ferry_bootstrap_barrier(bs);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_bootstrap_barrier: %s\n", ferry_status_string(status));
        goto out_eps;
    }
    unsigned local = 0;
    for (unsigned r = 0; r < h.size; r++)
        local += ferry_bootstrap_is_local(bs, r);
    printf("rank %u of %u (%s bootstrap, pid %d): greeted %u ranks over %s and got %u "
           "greetings, every byte right; %u ranks on this host\n",
           h.rank, h.size, ferry_bootstrap_method_name(ferry_bootstrap_method(bs)), (int)getpid(),
           h.size - 1, transport, h.received, local);
    fflush(stdout);
    result = 0;

out_eps:
    for (unsigned r = 0; r < h.size; r++)
        ferry_ep_destroy(eps[r]);
    free(addresses);
out_worker:
    ferry_worker_destroy(h.worker);
out_context:
    ferry_context_destroy(context);
out_free:
    if (result != 0 && h.bad != 0)
        fprintf(stderr, "rank %u: %u greetings had a wrong length or wrong bytes\n", h.rank, h.bad);
    free(buffer);
    free(eps);
    free(h.seen);
    ferry_bootstrap_finalize(bs);
    return result;
}
