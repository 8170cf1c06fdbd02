/* Back-pressure: the receiver stops polling, the sender sees it, the receiver resumes, and
 * nothing is lost or reordered.
 *
 *   1. warm-up: 1000 messages (0..59 bytes, one in 16 of 1..4 KiB), all received;
 *   2. the receiver tells the sender (channel) that it stops polling, and does: it only waits
 *      on the channel. The sender sends small messages until ferry_am_send returns
 *      FERRY_ERR_NO_RESOURCE, queues four 1 MiB messages (FERRY_INPROGRESS, with completions),
 *      checks that they stay pending while it keeps making progress for 100 ms (they cannot
 *      finish: the receiver's pool holds 256 KiB) and that a small send is refused (it would
 *      overtake them), then tells the receiver what it saw;
 *   3. the receiver sleeps out the rest of a 300 ms stall (not needed for correctness: the
 *      checks above were made while it was certainly stalled) and resumes; the sender goes on
 *      with 300 more messages, one in 25 of 1 MiB, retrying refused ones;
 *   4. the receiver checks the count, the order (sequence numbers), and every byte; every
 *      completion reports FERRY_OK, in order. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft.h"

#define BP_MAGIC 0x50524b42u /* "BKRP" */
#define BP_BIG (1u << 20)
#define BP_WARMUP 1000u
#define BP_AFTER 300u
#define BP_STALL_MS 300u

enum { BP_ID_DATA = 3, BP_ID_END = 4 };
enum { BP_TOKEN_STALL = 0x5354414c, BP_TOKEN_SAW = 0x53415721, BP_TOKEN_DONE = 0x444f4e45 };
enum { BP_SENDER = 7 };

typedef struct bp_hdr {
    uint32_t magic;
    uint32_t seq;
    uint32_t size;
    uint32_t reserved;
} bp_hdr_t;

static size_t bp_small_size(uint64_t n)
{
    uint64_t r = ft_mix64(n + 1);
    if (r % 16 == 0)
        return 1024 + (size_t)(r >> 8) % 3000;
    return (size_t)(r >> 8) % 60;
}

/* ------------------------------------------------------------------ sender */

typedef struct bp_tx {
    ferry_worker_t *worker;
    ferry_ep_t *ep;
    uint32_t seq;         /* next sequence number (given when ferry accepts a message) */
    uint64_t no_resource; /* FERRY_ERR_NO_RESOURCE answers */
    uint64_t big_queued;  /* 1 MiB sends that returned FERRY_INPROGRESS */
    uint64_t big_done;    /* their completions */
    int64_t last_done_seq;
} bp_tx_t;

typedef struct bp_big {
    ferry_completion_t comp; /* first: the callback gets &comp */
    bp_tx_t *tx;
    uint8_t *buf;
    uint32_t seq;
} bp_big_t;

static void bp_big_free(bp_big_t *big)
{
    free(big->buf);
    free(big);
}

static void bp_big_done(ferry_completion_t *comp)
{
    bp_big_t *big = (bp_big_t *)comp;
    bp_tx_t *tx = big->tx;
    FT_CHECK(comp->status == FERRY_OK, "the 1 MiB send of seq %u completed with %s", big->seq,
             ferry_status_name(comp->status));
    FT_CHECK((int64_t)big->seq > tx->last_done_seq,
             "completions out of order: seq %u after seq %lld", big->seq,
             (long long)tx->last_done_seq);
    tx->last_done_seq = big->seq;
    tx->big_done++;
    bp_big_free(big);
}

/* One try at sending a message of size bytes as the next seq. Returns the status; big
 * messages (with a completion) are owned by ferry when FERRY_INPROGRESS is returned. */
static ferry_status_t bp_try_send(bp_tx_t *tx, size_t size)
{
    static uint8_t small[4096];
    bp_hdr_t h = {.magic = BP_MAGIC, .seq = tx->seq, .size = (uint32_t)size};
    uint64_t seed = ft_pattern_seed(BP_SENDER, tx->seq, size);
    ferry_status_t status;

    if (size < BP_BIG) {
        ft_pattern_fill(small, size, seed, 0);
        ferry_iov_t iov = {.buffer = small, .length = size};
        status = ferry_am_send(tx->ep, BP_ID_DATA, &h, sizeof(h), &iov, 1, NULL);
        FT_CHECK(status != FERRY_INPROGRESS,
                 "a %zu-byte send returned FERRY_INPROGRESS with no "
                 "completion to tell when its buffer is free",
                 size);
    } else {
        bp_big_t *big = calloc(1, sizeof(*big));
        FT_CHECK(big != NULL, "out of memory");
        big->buf = malloc(size);
        FT_CHECK(big->buf != NULL, "out of memory");
        big->tx = tx;
        big->seq = tx->seq;
        big->comp.cb = bp_big_done;
        big->comp.status = FERRY_OK;
        big->comp.count = 1;
        ft_pattern_fill(big->buf, size, seed, 0);
        ferry_iov_t iov = {.buffer = big->buf, .length = size};
        status = ferry_am_send(tx->ep, BP_ID_DATA, &h, sizeof(h), &iov, 1, &big->comp);
        if (status == FERRY_INPROGRESS)
            tx->big_queued++;
        else
            bp_big_free(big); /* sent at once (FERRY_OK), or not at all */
    }
    if (status == FERRY_OK || status == FERRY_INPROGRESS)
        tx->seq++;
    else if (status == FERRY_ERR_NO_RESOURCE)
        tx->no_resource++;
    else
        ft_fail_at(__FILE__, __LINE__, "ferry_am_send(seq %u, %zu bytes) returned %s", tx->seq,
                   size, ferry_status_name(status));
    return status;
}

/* Send, retrying with progress while refused. */
static void bp_send(bp_tx_t *tx, size_t size)
{
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    while (bp_try_send(tx, size) == FERRY_ERR_NO_RESOURCE) {
        ft_progress_once(tx->worker);
        FT_CHECK(!ft_deadline_passed(deadline), "seq %u (%zu bytes) refused for 60 s", tx->seq,
                 size);
    }
}

static void bp_sender(ft_peer_t *receiver)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_t f;
    bp_tx_t tx = {.last_done_seq = -1};

    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(receiver->chan, address, sizeof(address), 30000);
    tx.worker = f.worker;
    tx.ep = ft_ep_create(f.worker, address, length, NULL);

    /* 1. warm-up */
    for (uint64_t i = 0; i < BP_WARMUP; i++)
        bp_send(&tx, bp_small_size(tx.seq));

    /* 2. the receiver stalls: fill its ring until refused */
    ft_progress_until_token(f.worker, receiver->chan, BP_TOKEN_STALL, 30000, NULL);
    uint64_t stall_start = ft_now_ns();
    uint64_t refused_before = tx.no_resource, filled = 0;
    while (tx.no_resource == refused_before) {
        bp_try_send(&tx, (size_t)(ft_mix64(tx.seq) % 29)); /* header + payload fit in a cell */
        filled++;
        FT_CHECK(filled < 1000000, "1000000 sends to a stalled receiver were all accepted");
    }
    ft_note("receiver stalled: %llu small messages accepted, then FERRY_ERR_NO_RESOURCE",
            (unsigned long long)filled - 1);
    for (int i = 0; i < 4; i++) {
        ferry_status_t status = bp_try_send(&tx, BP_BIG);
        FT_CHECK(status == FERRY_INPROGRESS,
                 "a 1 MiB send to a stalled receiver returned %s, expected FERRY_INPROGRESS "
                 "(queued)",
                 ferry_status_name(status));
    }
    ft_progress_for_ms(f.worker, 100);
    FT_CHECK(tx.big_done == 0,
             "%llu of 4 queued 1 MiB sends completed while the receiver was "
             "not polling",
             (unsigned long long)tx.big_done);
    refused_before = tx.no_resource;
    FT_CHECK(bp_try_send(&tx, 8) == FERRY_ERR_NO_RESOURCE,
             "a small send behind queued 1 MiB sends was accepted");
    ft_chan_send_token(receiver->chan, BP_TOKEN_SAW, tx.no_resource, tx.big_queued, 0, 0);

    /* 3. more messages, some big, while the receiver (soon) resumes */
    for (uint64_t i = 0; i < BP_AFTER; i++)
        bp_send(&tx, i % 25 == 0 ? BP_BIG : bp_small_size(tx.seq));
    bp_hdr_t end = {.magic = BP_MAGIC, .seq = tx.seq, .size = 0};
    ft_am_send_ok(f.worker, tx.ep, BP_ID_END, &end, sizeof(end), NULL, 0, NULL, 60000);
    ft_progress_until_count(f.worker, 60000, &tx.big_done, tx.big_queued,
                            "the completions of the queued 1 MiB sends");
    ft_note("%u messages sent, %llu refused (FERRY_ERR_NO_RESOURCE) and retried, %llu 1 MiB "
            "sends queued and completed in order; %.2f s since the stall began",
            tx.seq, (unsigned long long)tx.no_resource, (unsigned long long)tx.big_queued,
            (double)(ft_now_ns() - stall_start) / 1e9);
    ft_progress_until_token(f.worker, receiver->chan, BP_TOKEN_DONE, 60000, NULL);
    ferry_completion_t close_comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(tx.ep, 0, &close_comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, 10000, &close_comp, "the graceful close");
    ferry_ep_destroy(tx.ep);
    ft_ferry_fini(&f);
}

/* ------------------------------------------------------------------ receiver */

typedef struct bp_rx {
    uint64_t next; /* next sequence number expected */
    uint64_t big;  /* 1 MiB messages received */
    int64_t end;   /* messages announced by END, -1 before */
} bp_rx_t;

static ferry_status_t bp_data_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    bp_rx_t *rx = arg;
    bp_hdr_t copy = {0}; /* handlers get headers with no alignment promised: copied out */
    memcpy(&copy, header, header_length < sizeof(copy) ? header_length : sizeof(copy));
    const bp_hdr_t *h = &copy;
    char what[64];
    (void)params;
    FT_CHECK(header_length == sizeof(*h) && h->magic == BP_MAGIC, "bad header (%zu bytes)",
             header_length);
    FT_CHECK(h->seq == rx->next, "message seq %u arrived where seq %llu was expected (%s)", h->seq,
             (unsigned long long)rx->next,
             h->seq > rx->next ? "messages lost" : "out of order or duplicated");
    FT_CHECK(length == h->size, "seq %u: %zu payload bytes, the header says %u", h->seq, length,
             h->size);
    snprintf(what, sizeof(what), "message seq %u", h->seq);
    ft_pattern_check(data, length, ft_pattern_seed(BP_SENDER, h->seq, length), 0, what);
    rx->next++;
    rx->big += length == BP_BIG;
    return FERRY_OK;
}

static ferry_status_t bp_end_handler(void *arg, const void *header, size_t header_length,
                                     void *data, size_t length,
                                     const ferry_am_recv_params_t *params)
{
    bp_rx_t *rx = arg;
    bp_hdr_t copy = {0}; /* handlers get headers with no alignment promised: copied out */
    memcpy(&copy, header, header_length < sizeof(copy) ? header_length : sizeof(copy));
    const bp_hdr_t *h = &copy;
    (void)data;
    (void)params;
    FT_CHECK(header_length == sizeof(*h) && h->magic == BP_MAGIC && length == 0, "bad END");
    FT_CHECK(h->seq == rx->next, "END after %u messages, %llu received", h->seq,
             (unsigned long long)rx->next);
    rx->end = h->seq;
    return FERRY_OK;
}

static bool bp_rx_ended(void *arg)
{
    return ((bp_rx_t *)arg)->end >= 0;
}

static int bp_receiver_role(int chan, void *arg)
{
    bp_rx_t rx = {.end = -1};
    ft_ferry_t f;
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, BP_ID_DATA, bp_data_handler, &rx));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, BP_ID_END, bp_end_handler, &rx));
    ft_send_address(chan, f.worker);
    ft_progress_until_count(f.worker, 30000, &rx.next, BP_WARMUP, "the warm-up messages");

    /* stall: from here until the sender's answer, this process does not call ferry */
    uint64_t stall_start = ft_now_ns();
    ft_chan_send_token(chan, BP_TOKEN_STALL, 0, 0, 0, 0);
    ft_token_t saw = ft_chan_expect_token(chan, BP_TOKEN_SAW, 30000);
    uint64_t stalled_ms = (ft_now_ns() - stall_start) / 1000000u;
    if (stalled_ms < BP_STALL_MS)
        ft_sleep_ms((unsigned)(BP_STALL_MS - stalled_ms));
    ft_note("resuming after %.0f ms without polling; the sender saw %llu refusals and queued "
            "%llu 1 MiB sends",
            (double)(ft_now_ns() - stall_start) / 1e6, (unsigned long long)saw.v[0],
            (unsigned long long)saw.v[1]);
    FT_CHECK(saw.v[0] > 0 && saw.v[1] > 0, "the sender saw no back-pressure");

    ft_progress_until(f.worker, 60000, bp_rx_ended, &rx, "the END message");
    FT_CHECK(rx.big >= 4 + BP_AFTER / 25, "%llu 1 MiB messages received",
             (unsigned long long)rx.big);
    ft_chan_send_token(chan, BP_TOKEN_DONE, rx.next, 0, 0, 0);
    ft_chan_expect_eof(chan, 30000);
    ft_ferry_fini(&f);
    return 0;
}

int main(void)
{
    ft_peer_t receiver;
    ft_files_t before;

    ft_set_role("sender");
    ft_watchdog(55);
    ft_files_snapshot(&before);
    ft_peer_spawn(&receiver, "receiver", bp_receiver_role, NULL);
    bp_sender(&receiver);
    close(receiver.chan);
    ft_peer_expect_exit(&receiver, 30000, 0);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
