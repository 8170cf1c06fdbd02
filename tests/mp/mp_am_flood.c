/* Four sender processes flood one receiver with 100 000 active messages each: mostly small
 * (0..63 payload bytes, inline or in one pool buffer), one in 16 medium (1..4 KiB). None may
 * be lost, each sender's messages arrive in the order sent (sequence numbers in the header),
 * and every byte is checked. The senders share the receiver's buffer pool, part of which the
 * receiving handler keeps (FERRY_INPROGRESS) for a while: one keepable message in five, up to
 * 24 at a time, checked again when released with ferry_am_data_release. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

#define FLOOD_SENDERS 4
#define FLOOD_MESSAGES 100000u
#define FLOOD_MAGIC 0x444f4f4cu /* "LOOD" */

enum { FLOOD_ID_DATA = 17, FLOOD_ID_END = 18 };
enum { FLOOD_TOKEN_ALL = 0x414c4c21, FLOOD_TOKEN_STATS = 0x53544154 };

typedef struct flood_hdr {
    uint32_t magic;
    uint32_t sender;
    uint32_t seq;
    uint32_t size;
} flood_hdr_t;

/* The payload size of (sender, seq): both sides compute it. */
static size_t flood_size(uint32_t sender, uint32_t seq)
{
    uint64_t r = ft_mix64(((uint64_t)sender << 32) | seq);
    if (r % 16 == 0)
        return 1024 + (size_t)(r >> 8) % (4096 - sizeof(flood_hdr_t) - 1024 + 1);
    return (size_t)(r >> 8) % 64;
}

/* ------------------------------------------------------------------ sender */

static int flood_sender_role(int chan, void *arg)
{
    uint32_t me = (uint32_t)(uintptr_t)arg;
    uint8_t address[FT_CHAN_MSG_MAX];
    static uint8_t payload[4096];
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    uint64_t no_resource = 0, inprogress = 0;
    ft_ferry_t f;

    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(chan, address, sizeof(address), 30000);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL);
    uint64_t start = ft_now_ns();
    for (uint32_t seq = 0; seq < FLOOD_MESSAGES; seq++) {
        size_t size = flood_size(me, seq);
        flood_hdr_t h = {.magic = FLOOD_MAGIC, .sender = me, .seq = seq, .size = (uint32_t)size};
        ferry_iov_t iov = {.buffer = payload, .length = size};
        /* the payload buffer is reused: wait until a queued send released it */
        if (comp.count > 0)
            ft_progress_until_completion(f.worker, 30000, &comp, "a queued send");
        FT_CHECK(comp.status == FERRY_OK, "a queued send completed with %s",
                 ferry_status_name(comp.status));
        ft_pattern_fill(payload, size, ft_pattern_seed(me, seq, size), 0);
        ferry_status_t status = ft_am_send(f.worker, ep, FLOOD_ID_DATA, &h, sizeof(h), &iov, 1,
                                           &comp, 60000, &no_resource);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
                 "ferry_am_send(seq %u, %zu bytes) returned %s", seq, size,
                 ferry_status_name(status));
        inprogress += status == FERRY_INPROGRESS;
    }
    flood_hdr_t end = {.magic = FLOOD_MAGIC, .sender = me, .seq = FLOOD_MESSAGES, .size = 0};
    ft_am_send_ok(f.worker, ep, FLOOD_ID_END, &end, sizeof(end), NULL, 0, &comp, 60000);
    ft_progress_until_completion(f.worker, 30000, &comp, "the last sends");
    double seconds = (double)(ft_now_ns() - start) / 1e9;
    ft_chan_send_token(chan, FLOOD_TOKEN_STATS, no_resource, inprogress, (uint64_t)(seconds * 1e6),
                       0);
    /* stay until the receiver has everything (it polls our ring while we are alive) */
    while (!ft_chan_try_token(chan, FLOOD_TOKEN_ALL, &(ft_token_t){0}))
        ft_progress_once(f.worker);
    ferry_completion_t close_comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(ep, 0, &close_comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, 10000, &close_comp, "the graceful close");
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ receiver */

/* Data a handler kept (returned FERRY_INPROGRESS), released later: up to FLOOD_KEEP at a time,
 * fewer than the receiver's pool has buffers. Its bytes must not change while it is kept. */
#define FLOOD_KEEP 24
#define FLOOD_KEEP_EVERY 5

typedef struct flood_kept {
    void *data;
    size_t length;
    uint32_t sender;
    uint32_t seq;
} flood_kept_t;

typedef struct flood_rx {
    uint32_t next[FLOOD_SENDERS];  /* next sequence number expected from each sender */
    ferry_ep_t *ep[FLOOD_SENDERS]; /* the accepted endpoint each sender's messages come on */
    uint64_t total;                /* data messages received */
    uint64_t ended;                /* END messages received */
    uint64_t medium;               /* data messages of 1 KiB or more */
    ferry_worker_t *worker;
    flood_kept_t kept[FLOOD_KEEP]; /* a FIFO */
    unsigned kept_head, kept_count;
    uint64_t kept_total;
} flood_rx_t;

/* Check the oldest kept message's bytes and release it. */
static void flood_release_oldest(flood_rx_t *rx)
{
    char what[80];
    flood_kept_t *k = &rx->kept[rx->kept_head];
    snprintf(what, sizeof(what), "sender %u seq %u (kept, at its release)", k->sender, k->seq);
    ft_pattern_check(k->data, k->length, ft_pattern_seed(k->sender, k->seq, k->length), 0, what);
    ferry_am_data_release(rx->worker, k->data);
    rx->kept_head = (rx->kept_head + 1) % FLOOD_KEEP;
    rx->kept_count--;
}

static const flood_hdr_t *flood_check_header(flood_rx_t *rx, const void *header,
                                             size_t header_length,
                                             const ferry_am_recv_params_t *params)
{
    FT_CHECK(header_length == sizeof(flood_hdr_t), "header of %zu bytes", header_length);
    const flood_hdr_t *h = header;
    FT_CHECK(h->magic == FLOOD_MAGIC && h->sender < FLOOD_SENDERS,
             "bad header: magic 0x%x, sender %u", h->magic, h->sender);
    FT_CHECK(h->seq == rx->next[h->sender],
             "sender %u: message seq %u arrived where seq %u was expected (%s)", h->sender, h->seq,
             rx->next[h->sender],
             h->seq > rx->next[h->sender] ? "messages lost" : "out of order or duplicated");
    if (rx->ep[h->sender] == NULL) {
        for (unsigned s = 0; s < FLOOD_SENDERS; s++)
            FT_CHECK(rx->ep[s] != params->reply_ep,
                     "senders %u and %u arrive on the same accepted endpoint", s, h->sender);
        rx->ep[h->sender] = params->reply_ep;
    }
    FT_CHECK(rx->ep[h->sender] == params->reply_ep,
             "sender %u: message seq %u arrived on another accepted endpoint", h->sender, h->seq);
    return h;
}

static ferry_status_t flood_data_handler(void *arg, const void *header, size_t header_length,
                                         void *data, size_t length,
                                         const ferry_am_recv_params_t *params)
{
    flood_rx_t *rx = arg;
    const flood_hdr_t *h = flood_check_header(rx, header, header_length, params);
    size_t size = flood_size(h->sender, h->seq);
    FT_CHECK(h->size == size && length == size,
             "sender %u seq %u: %zu payload bytes (header says %u), expected %zu", h->sender,
             h->seq, length, h->size, size);
    if (length > 0) {
        char what[64];
        snprintf(what, sizeof(what), "sender %u seq %u", h->sender, h->seq);
        ft_pattern_check(data, length, ft_pattern_seed(h->sender, h->seq, size), 0, what);
    }
    rx->next[h->sender]++;
    rx->total++;
    rx->medium += size >= 1024;
    if (length > 0 && (params->flags & FERRY_AM_RECV_KEEPABLE) && h->seq % FLOOD_KEEP_EVERY == 0) {
        if (rx->kept_count == FLOOD_KEEP)
            flood_release_oldest(rx);
        flood_kept_t *k = &rx->kept[(rx->kept_head + rx->kept_count) % FLOOD_KEEP];
        *k = (flood_kept_t){.data = data, .length = length, .sender = h->sender, .seq = h->seq};
        rx->kept_count++;
        rx->kept_total++;
        return FERRY_INPROGRESS;
    }
    return FERRY_OK;
}

static ferry_status_t flood_end_handler(void *arg, const void *header, size_t header_length,
                                        void *data, size_t length,
                                        const ferry_am_recv_params_t *params)
{
    flood_rx_t *rx = arg;
    (void)data;
    const flood_hdr_t *h = flood_check_header(rx, header, header_length, params);
    FT_CHECK(length == 0, "END with %zu payload bytes", length);
    FT_CHECK(h->seq == FLOOD_MESSAGES, "END of sender %u after %u messages", h->sender, h->seq);
    rx->next[h->sender]++;
    rx->ended++;
    return FERRY_OK;
}

int main(void)
{
    static flood_rx_t rx;
    ft_peer_t senders[FLOOD_SENDERS];
    static const char *const names[FLOOD_SENDERS] = {"sender0", "sender1", "sender2", "sender3"};
    ft_files_t before;
    ft_ferry_t f;

    ft_set_role("receiver");
    ft_watchdog(115);
    ft_files_snapshot(&before);
    for (uintptr_t s = 0; s < FLOOD_SENDERS; s++)
        ft_peer_spawn(&senders[s], names[s], flood_sender_role, (void *)s);
    ft_ferry_init(&f, NULL, NULL);
    rx.worker = f.worker;
    FT_CHECK_OK(ferry_am_set_handler(f.worker, FLOOD_ID_DATA, flood_data_handler, &rx));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, FLOOD_ID_END, flood_end_handler, &rx));
    uint64_t start = ft_now_ns();
    for (unsigned s = 0; s < FLOOD_SENDERS; s++)
        ft_send_address(senders[s].chan, f.worker);

    ft_progress_until_count(f.worker, 100000, &rx.ended, FLOOD_SENDERS,
                            "the END message of every sender");
    double seconds = (double)(ft_now_ns() - start) / 1e9;
    FT_CHECK(rx.total == (uint64_t)FLOOD_SENDERS * FLOOD_MESSAGES, "%llu messages received",
             (unsigned long long)rx.total);
    ft_files_check_self();
    FT_CHECK(rx.kept_total > 1000, "only %llu messages could be kept",
             (unsigned long long)rx.kept_total);
    while (rx.kept_count > 0)
        flood_release_oldest(&rx);
    for (unsigned s = 0; s < FLOOD_SENDERS; s++) {
        ft_token_t stats = ft_chan_expect_token(senders[s].chan, FLOOD_TOKEN_STATS, 10000);
        ft_note("%s: %llu sends refused for lack of resources (retried), %llu queued, "
                "%.2f s",
                names[s], (unsigned long long)stats.v[0], (unsigned long long)stats.v[1],
                (double)stats.v[2] / 1e6);
        ft_chan_send_token(senders[s].chan, FLOOD_TOKEN_ALL, 0, 0, 0, 0);
    }
    for (unsigned s = 0; s < FLOOD_SENDERS; s++)
        ft_peer_expect_exit(&senders[s], 30000, 0);
    ft_note("%llu messages (%llu of 1 KiB or more, %llu kept by the handler for a while) from "
            "%d senders in %.2f s: %.0f messages/s",
            (unsigned long long)rx.total, (unsigned long long)rx.medium,
            (unsigned long long)rx.kept_total, FLOOD_SENDERS, seconds, (double)rx.total / seconds);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
