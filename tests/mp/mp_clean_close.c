/* A clean shutdown logs nothing above info (issue 11, item 5).
 *
 * Three processes (this one and two peers) each create an endpoint to the two others, send
 * CC_MESSAGES active messages on each (every byte checked by the receiver), close both of
 * their endpoints gracefully, and wait until the close completed AND both peers' endpoints
 * to them were reported closed (FERRY_ERR_ENDPOINT_CLOSED through accepted_ep_error_cb): both
 * sides saw every close. Then each progresses for a random 0-20 ms with its closed endpoints
 * still there, destroys them, and destroys its worker and context, so that a connection ends
 * while the other side still holds its closed endpoints. Every process captures its stderr from
 * before its context exists until after it is destroyed: not one WARN or ERROR line may appear, and
 * no endpoint error callback may report anything but FERRY_ERR_ENDPOINT_CLOSED for an accepted
 * endpoint. The whole exchange is repeated CC_ROUNDS times with fresh processes (the false alarm of
 * the issue came in about half of the runs over tcp). Registered twice: over tcp and over the
 * default transports (shm). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft.h"

#define CC_ROUNDS 10
#define CC_PROCS 3
#define CC_MESSAGES 50
#define CC_SIZE 1000
#define CC_BIG (4u << 20) /* the last message: still queued when the close is called */
#define CC_TIMEOUT_MS 20000

enum { CC_ID = 41 };
enum { CC_TAG_ADDR = 0x43414444, CC_TAG_DONE = 0x43444f4e };

typedef struct cc_state {
    unsigned rank;
    uint64_t round;
    uint64_t received[CC_PROCS];
    unsigned accepted_closed;
    unsigned other_errors;
    unsigned closes_in_progress;
    ferry_status_t last_error;
} cc_state_t;

static cc_state_t cc;

static uint64_t cc_seed(unsigned from, unsigned to, uint64_t round, uint64_t seq)
{
    return ft_pattern_seed(from, (round << 40) | ((uint64_t)to << 32) | seq, CC_SIZE);
}

static ferry_status_t cc_on_message(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    uint32_t h[2];
    char what[96];
    (void)arg;
    (void)params;
    FT_CHECK(header_length == sizeof(h), "a message with a %zu-byte header", header_length);
    memcpy(h, header, sizeof(h));
    FT_CHECK(length == (h[1] < CC_MESSAGES ? CC_SIZE : CC_BIG),
             "message %u from rank %u has %zu bytes", h[1], h[0], length);
    FT_CHECK(h[0] < CC_PROCS && h[0] != cc.rank, "a message from rank %u", h[0]);
    FT_CHECK(h[1] == cc.received[h[0]], "message %u from rank %u, expected %llu", h[1], h[0],
             (unsigned long long)cc.received[h[0]]);
    snprintf(what, sizeof(what), "message %u from rank %u", h[1], h[0]);
    ft_pattern_check(data, length, cc_seed(h[0], cc.rank, cc.round, h[1]), 0, what);
    cc.received[h[0]]++;
    return FERRY_OK;
}

static void cc_on_accepted_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)arg;
    (void)ep;
    if (status == FERRY_ERR_ENDPOINT_CLOSED) {
        cc.accepted_closed++;
    } else {
        cc.other_errors++;
        cc.last_error = status;
    }
}

static void cc_on_ep_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)arg;
    (void)ep;
    cc.other_errors++;
    cc.last_error = status;
}

static bool cc_all_received(void *arg)
{
    (void)arg;
    for (unsigned r = 0; r < CC_PROCS; r++)
        if (r != cc.rank && cc.received[r] < CC_MESSAGES + 1)
            return false;
    return true;
}

static bool cc_peers_closed(void *arg)
{
    (void)arg;
    return cc.accepted_closed == CC_PROCS - 1;
}

/* One process's part of a round: rank 0 (the parent, with the peers' channels) or a peer
 * (with its channel to the parent). Fails on any WARN or ERROR line it logged. */
static void cc_run(unsigned rank, uint64_t round, int chan, bool is_parent,
                   ft_peer_t peers[CC_PROCS - 1])
{
    uint8_t address[CC_PROCS][FT_CHAN_MSG_MAX];
    size_t address_length[CC_PROCS];
    static uint8_t payload[CC_SIZE], big[CC_PROCS][CC_BIG];
    ferry_completion_t big_comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    ferry_ep_t *eps[CC_PROCS] = {NULL};
    ft_ferry_t f;

    memset(&cc, 0, sizeof(cc));
    cc.rank = rank;
    cc.round = round;
    ft_capture_begin();
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = cc_on_accepted_error};
    ft_ferry_init(&f, NULL, &wparams);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, CC_ID, cc_on_message, NULL));
    /* addresses: the peers send theirs to the parent, which sends all three to each */
    if (is_parent) {
        const void *mine;
        FT_CHECK_OK(ferry_worker_address(f.worker, &mine, &address_length[0]));
        memcpy(address[0], mine, address_length[0]);
        for (unsigned p = 1; p < CC_PROCS; p++)
            address_length[p] =
                ft_recv_address(peers[p - 1].chan, address[p], sizeof(address[p]), CC_TIMEOUT_MS);
        for (unsigned p = 1; p < CC_PROCS; p++)
            for (unsigned a = 0; a < CC_PROCS; a++)
                ft_chan_send(peers[p - 1].chan, address[a], address_length[a]);
    } else {
        ft_send_address(chan, f.worker);
        for (unsigned a = 0; a < CC_PROCS; a++)
            address_length[a] =
                ft_recv_address(chan, address[a], sizeof(address[a]), CC_TIMEOUT_MS);
    }
    for (unsigned r = 0; r < CC_PROCS; r++) {
        if (r == rank)
            continue;
        ferry_ep_params_t params = {.error_cb = cc_on_ep_error};
        eps[r] = ft_ep_create(f.worker, address[r], address_length[r], &params);
    }
    for (uint32_t seq = 0; seq < CC_MESSAGES; seq++) {
        for (unsigned r = 0; r < CC_PROCS; r++) {
            if (r == rank)
                continue;
            uint32_t h[2] = {rank, seq};
            ft_pattern_fill(payload, sizeof(payload), cc_seed(rank, r, round, seq), 0);
            ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
            ft_am_send_ok(f.worker, eps[r], CC_ID, h, sizeof(h), payload, sizeof(payload), &comp,
                          CC_TIMEOUT_MS);
            /* the payload is reused: wait until it went out */
            ft_progress_until_completion(f.worker, CC_TIMEOUT_MS, &comp, "a send");
            FT_CHECK_OK(comp.status);
        }
    }
    /* the last message is big and still queued when the endpoint is closed: the close then
     * completes later, and the endpoint stays (closed) until it is destroyed */
    ferry_completion_t close_comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    for (unsigned r = 0; r < CC_PROCS; r++) {
        if (r == rank)
            continue;
        uint32_t h[2] = {rank, CC_MESSAGES};
        ft_pattern_fill(big[r], CC_BIG, cc_seed(rank, r, round, CC_MESSAGES), 0);
        ft_am_send_ok(f.worker, eps[r], CC_ID, h, sizeof(h), big[r], CC_BIG, &big_comp,
                      CC_TIMEOUT_MS);
        close_comp.count++;
        ferry_status_t status = ferry_ep_close(eps[r], 0, &close_comp);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close: %s",
                 ferry_status_name(status));
        if (status == FERRY_OK)
            close_comp.count--;
        else
            cc.closes_in_progress++;
    }
    ft_progress_until_completion(f.worker, CC_TIMEOUT_MS, &big_comp, "the big sends");
    FT_CHECK_OK(big_comp.status);
    ft_progress_until_completion(f.worker, CC_TIMEOUT_MS, &close_comp, "the graceful closes");
    FT_CHECK_OK(close_comp.status);
    ft_progress_until(f.worker, CC_TIMEOUT_MS, cc_all_received, NULL, "every message");
    ft_progress_until(f.worker, CC_TIMEOUT_MS, cc_peers_closed, NULL,
                      "both peers' endpoints to this process closed");
    /* stagger the ends: a connection ends while the other side still holds its closed
     * endpoints (and progresses) */
    unsigned wait_ms = (unsigned)(ft_pattern_seed(rank, round, 7) % 21);
    ft_progress_for_ms(f.worker, (int)wait_ms);
    for (unsigned r = 0; r < CC_PROCS; r++)
        if (eps[r] != NULL)
            ferry_ep_destroy(eps[r]);
    ft_ferry_fini(&f);
    char *text = ft_capture_end();
    size_t bad = ft_count(text, "] WARN ") + ft_count(text, "] ERROR ");
    FT_CHECK(bad == 0 && cc.other_errors == 0,
             "round %llu, rank %u: a clean shutdown logged %zu WARN/ERROR lines and %u endpoint "
             "errors (last %s); log:\n%s",
             (unsigned long long)round, rank, bad, cc.other_errors,
             ferry_status_name(cc.last_error), text);
    free(text);
}

static int cc_peer_role(int chan, void *arg)
{
    ft_token_t t = ft_chan_expect_token(chan, CC_TAG_ADDR, CC_TIMEOUT_MS);
    (void)arg;
    cc_run((unsigned)t.v[0], t.v[1], chan, false, NULL);
    ft_chan_send_token(chan, CC_TAG_DONE, t.v[0], 0, 0, 0);
    return 0;
}

int main(void)
{
    ft_files_t before;
    ft_peer_t peers[CC_PROCS - 1];

    ft_set_role("rank 0");
    ft_watchdog(115);
    ft_files_snapshot(&before);
    for (uint64_t round = 0; round < CC_ROUNDS; round++) {
        for (unsigned p = 0; p < CC_PROCS - 1; p++) {
            ft_peer_spawn(&peers[p], "rank", cc_peer_role, NULL);
            ft_chan_send_token(peers[p].chan, CC_TAG_ADDR, p + 1, round, 0, 0);
        }
        cc_run(0, round, -1, true, peers);
        for (unsigned p = 0; p < CC_PROCS - 1; p++) {
            ft_chan_expect_token(peers[p].chan, CC_TAG_DONE, CC_TIMEOUT_MS);
            ft_peer_expect_exit(&peers[p], CC_TIMEOUT_MS, 0);
        }
    }
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("%d rounds of 3 processes (%d messages each way, graceful closes, staggered ends): "
            "no WARN or ERROR line, no endpoint error; passed",
            CC_ROUNDS, CC_MESSAGES);
    return 0;
}
