/* Medium buffers a sender reserved ahead go back to the receiver when the sender's endpoint
 * closes (shm: one CAS on the receiver's bitmap claims up to 8 of its 64 medium buffers, and the
 * sender keeps those it did not use yet; issue 14).
 *
 *   1. a (the receiver) sends b its address; CM_ROUNDS times, b creates a new endpoint to a,
 *      sends one 4 KiB active message on it (a claim of a batch) and closes it gracefully; a
 *      checks every byte;
 *   2. b sends CM_KEEP 4 KiB messages on the pair's endpoint, retrying refused sends; a's
 *      handler keeps every one (FERRY_INPROGRESS) until it holds all of them, checks their
 *      bytes and releases them. Had the closed endpoints kept their batches, at most half of
 *      the pool would be free (batches are claimed only while half stays free) and step 2
 *      would stall.
 * shm only: tcp delivers small messages from its receive buffer and holds no pool. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ft.h"
#include "ft_pair.h"

#define CM_ROUNDS 10u
#define CM_KEEP 60u /* of the receiver's 64 medium buffers */
#define CM_SIZE 4096u
#define CM_TIMEOUT_MS 20000

enum { CM_ID_ROUND = 5, CM_ID_KEEP = 6 };
enum { CM_TOKEN_ROUNDS = 0x524e4453 /* "RNDS" */, CM_TOKEN_KEPT = 0x4b455054 /* "KEPT" */ };

typedef struct cm_rx {
    ferry_worker_t *worker;
    uint64_t rounds;       /* step 1 messages checked */
    uint64_t kept;         /* step 2 messages held */
    void *data[CM_KEEP];   /* what the handler kept */
    uint32_t seq[CM_KEEP]; /* their sequence numbers */
} cm_rx_t;

static ferry_status_t cm_round_cb(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    cm_rx_t *rx = arg;
    uint32_t seq;
    (void)params;
    FT_CHECK(header_length == sizeof(seq) && length == CM_SIZE,
             "round message: header %zu, payload %zu bytes", header_length, length);
    memcpy(&seq, header, sizeof(seq));
    FT_CHECK(seq == rx->rounds, "round message %u, expected %llu", seq,
             (unsigned long long)rx->rounds);
    ft_pattern_check(data, length, seq, 0, "a round message");
    rx->rounds++;
    return FERRY_OK;
}

static ferry_status_t cm_keep_cb(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    cm_rx_t *rx = arg;
    uint32_t seq;
    FT_CHECK(header_length == sizeof(seq) && length == CM_SIZE,
             "kept message: header %zu, payload %zu bytes", header_length, length);
    FT_CHECK(params->flags & FERRY_AM_RECV_KEEPABLE, "a 4 KiB shm message is not keepable");
    FT_CHECK(rx->kept < CM_KEEP, "more than %u messages to keep", CM_KEEP);
    memcpy(&seq, header, sizeof(seq));
    rx->data[rx->kept] = data;
    rx->seq[rx->kept] = seq;
    rx->kept++;
    return FERRY_INPROGRESS;
}

static bool cm_rounds_done(void *arg)
{
    return ((cm_rx_t *)arg)->rounds == CM_ROUNDS;
}

static bool cm_all_kept(void *arg)
{
    return ((cm_rx_t *)arg)->kept == CM_KEEP;
}

static void cm_run_a(ft_pair_t *p)
{
    cm_rx_t rx = {.worker = p->worker};
    FT_CHECK(ferry_am_set_handler(p->worker, CM_ID_ROUND, cm_round_cb, &rx) == FERRY_OK &&
                 ferry_am_set_handler(p->worker, CM_ID_KEEP, cm_keep_cb, &rx) == FERRY_OK,
             "ferry_am_set_handler failed");
    ft_send_address(p->chan, p->worker);
    ft_progress_until(p->worker, CM_TIMEOUT_MS, cm_rounds_done, &rx, "the round messages");
    ft_chan_send_token(p->chan, CM_TOKEN_ROUNDS, 0, 0, 0, 0);
    ft_progress_until(p->worker, CM_TIMEOUT_MS, cm_all_kept, &rx,
                      "all kept messages (medium buffers of closed endpoints not returned?)");
    for (unsigned i = 0; i < CM_KEEP; i++) {
        FT_CHECK(rx.seq[i] == i, "kept message %u has sequence number %u", i, rx.seq[i]);
        ft_pattern_check(rx.data[i], CM_SIZE, 1000 + i, 0, "a kept message");
        ferry_am_data_release(p->worker, rx.data[i]);
    }
    ft_chan_send_token(p->chan, CM_TOKEN_KEPT, 0, 0, 0, 0);
}

static void cm_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, uint32_t seq,
                    uint64_t pattern)
{
    static uint8_t payload[CM_SIZE];
    ft_pattern_fill(payload, sizeof(payload), pattern, 0);
    ft_am_send_ok(worker, ep, id, &seq, sizeof(seq), payload, sizeof(payload), NULL, CM_TIMEOUT_MS);
}

static void cm_run_b(ft_pair_t *p)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    size_t length = ft_recv_address(p->chan, address, sizeof(address), CM_TIMEOUT_MS);
    for (uint32_t round = 0; round < CM_ROUNDS; round++) {
        ferry_ep_t *ep = ft_ep_create(p->worker, address, length, NULL);
        cm_send(p->worker, ep, CM_ID_ROUND, round, round);
        ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
        ferry_status_t status = ferry_ep_close(ep, 0, &comp);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
                 ferry_status_name(status));
        if (status == FERRY_INPROGRESS)
            ft_progress_until_completion(p->worker, CM_TIMEOUT_MS, &comp, "a graceful close");
        ferry_ep_destroy(ep);
    }
    ft_progress_until_token(p->worker, p->chan, CM_TOKEN_ROUNDS, CM_TIMEOUT_MS, NULL);
    for (uint32_t i = 0; i < CM_KEEP; i++)
        cm_send(p->worker, p->ep, CM_ID_KEEP, i, 1000 + i);
    ft_progress_until_token(p->worker, p->chan, CM_TOKEN_KEPT, CM_TIMEOUT_MS, NULL);
}

static void cm_pair(ft_pair_t *p, void *arg)
{
    (void)arg;
    if (p->self == FT_PAIR_A)
        cm_run_a(p);
    else
        cm_run_b(p);
}

int main(void)
{
    ft_watchdog(55);
    double seconds = ft_pair_run(cm_pair, NULL);
    ft_note("passed in %.2f s", seconds);
    return 0;
}
