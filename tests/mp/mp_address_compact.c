/* Compact worker addresses (ferry_worker_address_compact, FERRY_ADDRESS_COMPACT_SIZE bytes):
 * ferry_ep_create takes them wherever it takes the full form.
 *
 *   mp_address_compact          two processes on this host (shm; with FERRY_TRANSPORTS=tcp,
 *                               tcp over loopback): each creates its endpoint to the other
 *                               from the other's compact address alone; active messages of
 *                               0 B .. 1 MiB go both ways on those endpoints, every byte
 *                               checked; the endpoints use the expected transport and report
 *                               the peer's worker id; ferry_address_decode reads the compact
 *                               form (its worker id, pid, records)
 *   mp_address_compact self     one worker to its own compact address (the self transport)
 *
 * Bad input, in every variant: compact addresses truncated (63, 32, 4, 3 bytes), padded (65),
 * of another version, with a wrong magic, unknown flags, nonzero reserved bytes, worker id 0,
 * tcp port 0 and an unknown ip family: FERRY_ERR_INVALID_ADDRESS, *ep_p untouched, and exactly
 * one warning each; and the compact address of a process that exited: shm refuses at once
 * (FERRY_ERR_CONNECTION_REFUSED), tcp fails the endpoint with a clear status from progress
 * (bounded wait, no hang). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ferry/info.h>

#include "ft.h"

/* The compact layout (src/wireup/address.h): the offsets the bad-input cases corrupt. */
#define CA_VERSION 4
#define CA_FLAGS 5
#define CA_RESERVED 6
#define CA_UUID 8
#define CA_PID 36
#define CA_FAMILY 44
#define CA_PORT 46
#define CA_FLAG_TCP 0x02

enum { CA_ID_PING = 7, CA_ID_PONG = 8 };
enum { CA_PARENT = 1, CA_CHILD = 2 };
enum { CA_TOKEN_DONE = 0x444f4e45, CA_TOKEN_GO = 0x474f2121 };

static const size_t ca_sizes[] = {0, 1, 8, 63, 64, 65, 212, 213, 4096, 40000, 1u << 20};
#define CA_NSIZES (sizeof(ca_sizes) / sizeof(ca_sizes[0]))
#define CA_REPS 4

typedef struct ca_hdr {
    uint32_t seq;
    uint32_t size;
    uint32_t sender;
    uint32_t pad;
} ca_hdr_t;

typedef struct ca_rx {
    uint32_t sender; /* whose pattern the messages carry */
    uint64_t received;
    ferry_ep_t *reply; /* the endpoint this process created: pongs go back on it */
    ferry_worker_t *worker;
    uint32_t me;
} ca_rx_t;

static size_t ca_size_of(uint64_t seq)
{
    return ca_sizes[(seq / CA_REPS) % CA_NSIZES];
}

static void ca_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, uint32_t sender,
                    uint32_t seq, size_t size)
{
    static uint8_t payload[1u << 20];
    ca_hdr_t hdr = {.seq = seq, .size = (uint32_t)size, .sender = sender};
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    ft_pattern_fill(payload, size, ft_pattern_seed(sender, seq, size), 0);
    ft_am_send_ok(worker, ep, id, &hdr, sizeof(hdr), payload, size, &comp, 30000);
    ft_progress_until_completion(worker, 30000, &comp, "a send's completion");
    FT_CHECK_OK(comp.status);
}

/* PING (child) and PONG (parent): check the header and every byte. */
static ferry_status_t ca_handler(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    ca_rx_t *rx = arg;
    ca_hdr_t hdr;
    (void)params;
    FT_CHECK(header_length == sizeof(hdr), "a header of %zu bytes", header_length);
    memcpy(&hdr, header, sizeof(hdr));
    FT_CHECK(hdr.seq == rx->received, "message %u arrived, expected %llu", hdr.seq,
             (unsigned long long)rx->received);
    FT_CHECK(hdr.sender == rx->sender, "sender %u, expected %u", hdr.sender, rx->sender);
    FT_CHECK(hdr.size == ca_size_of(hdr.seq) && length == hdr.size,
             "message %u: %zu bytes, header says %u, schedule %zu", hdr.seq, length, hdr.size,
             ca_size_of(hdr.seq));
    ft_pattern_check(data, length, ft_pattern_seed(hdr.sender, hdr.seq, length), 0, "a message");
    rx->received++;
    return FERRY_OK;
}

static ferry_ep_t *ca_ep_from_compact(ferry_worker_t *worker, const uint8_t *compact,
                                      const char *expected_transport, ferry_peer_id_t expected_id)
{
    ferry_address_info_t info = {.size = sizeof(info)};
    FT_CHECK_OK(ferry_address_decode(compact, FERRY_ADDRESS_COMPACT_SIZE, &info));
    FT_CHECK(info.compact, "ferry_address_decode does not call it compact");
    FT_CHECK(info.worker_id == expected_id, "decoded worker id %016llx, expected %016llx",
             (unsigned long long)info.worker_id, (unsigned long long)expected_id);
    FT_CHECK(info.record_count >= 1, "a compact address rebuilt into %zu records",
             info.record_count);
    ferry_ep_t *ep = ft_ep_create(worker, compact, FERRY_ADDRESS_COMPACT_SIZE, NULL);
    ferry_peer_id_t id = 0;
    FT_CHECK_OK(ferry_ep_peer_id(ep, &id));
    FT_CHECK(id == expected_id, "the endpoint's peer id %016llx, expected %016llx",
             (unsigned long long)id, (unsigned long long)expected_id);
    FT_CHECK(strcmp(ferry_ep_transport_name(ep), expected_transport) == 0,
             "an endpoint from a compact address uses %s, expected %s", ferry_ep_transport_name(ep),
             expected_transport);
    FT_CHECK_OK(ferry_ep_wait_connected(ep, 30000));
    return ep;
}

/* ------------------------------------------------------------------ bad input */

static void ca_expect_invalid(ferry_worker_t *worker, const void *address, size_t length,
                              const char *what)
{
    ferry_ep_t *sentinel = (ferry_ep_t *)(uintptr_t)0x5a5a5a5a;
    ferry_ep_t *ep = sentinel;
    ft_capture_begin();
    ferry_status_t status = ferry_ep_create(worker, address, length, NULL, &ep);
    char *log = ft_capture_end();
    FT_CHECK(status == FERRY_ERR_INVALID_ADDRESS,
             "ferry_ep_create(%s, %zu bytes) returned %s, expected FERRY_ERR_INVALID_ADDRESS", what,
             length, ferry_status_name(status));
    FT_CHECK(ep == sentinel, "ferry_ep_create(%s) failed but wrote *ep_p", what);
    size_t lines = ft_count(log, "] WARN ");
    FT_CHECK(lines == 1 && ft_count(log, "compact") >= 1,
             "%s: expected one warning about the compact address, got %zu lines:\n%s", what, lines,
             log);
    free(log);
}

static void ca_bad_input(ferry_worker_t *worker, const uint8_t *good)
{
    uint8_t copy[FERRY_ADDRESS_COMPACT_SIZE + 1];
    static const size_t truncated[] = {FERRY_ADDRESS_COMPACT_SIZE - 1, 32, 4, 3};

    for (size_t i = 0; i < sizeof(truncated) / sizeof(truncated[0]); i++)
        ca_expect_invalid(worker, good, truncated[i], "a truncated compact address");
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    copy[FERRY_ADDRESS_COMPACT_SIZE] = 0;
    ca_expect_invalid(worker, copy, sizeof(copy), "a padded compact address");

    static const uint8_t versions[] = {0, 2, 0xff};
    for (size_t i = 0; i < sizeof(versions); i++) {
        memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
        copy[CA_VERSION] = versions[i];
        ca_expect_invalid(worker, copy, FERRY_ADDRESS_COMPACT_SIZE,
                          "a compact address of another version");
    }
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    copy[3] ^= 0x20; /* "FRYc": still not the full form's magic */
    {
        ferry_ep_t *ep = NULL;
        FT_CHECK_STATUS(ferry_ep_create(worker, copy, FERRY_ADDRESS_COMPACT_SIZE, NULL, &ep),
                        FERRY_ERR_INVALID_ADDRESS);
    }
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    copy[CA_FLAGS] |= 0x80;
    ca_expect_invalid(worker, copy, FERRY_ADDRESS_COMPACT_SIZE, "unknown flags");
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    copy[CA_RESERVED] = 1;
    ca_expect_invalid(worker, copy, FERRY_ADDRESS_COMPACT_SIZE, "reserved byte 6 set");
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    copy[CA_FAMILY + 1] = 1;
    ca_expect_invalid(worker, copy, FERRY_ADDRESS_COMPACT_SIZE, "reserved byte 45 set");
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    memset(copy + CA_UUID, 0, 8);
    ca_expect_invalid(worker, copy, FERRY_ADDRESS_COMPACT_SIZE, "worker id 0");
    /* the tcp fields: port 0, family 5 (with the tcp flag, as a tcp peer would have it) */
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    copy[CA_FLAGS] |= CA_FLAG_TCP;
    copy[CA_FAMILY] = 4;
    copy[CA_PORT] = 0;
    copy[CA_PORT + 1] = 0;
    ca_expect_invalid(worker, copy, FERRY_ADDRESS_COMPACT_SIZE, "tcp port 0");
    memcpy(copy, good, FERRY_ADDRESS_COMPACT_SIZE);
    copy[CA_FLAGS] |= CA_FLAG_TCP;
    copy[CA_FAMILY] = 5;
    copy[CA_PORT] = 1;
    ca_expect_invalid(worker, copy, FERRY_ADDRESS_COMPACT_SIZE, "ip family 5");

    FT_CHECK_STATUS(ferry_worker_address_compact(NULL, copy), FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_worker_address_compact(worker, NULL), FERRY_ERR_INVALID_PARAM);
}

/* ------------------------------------------------------------------ a peer that exited */

static int ca_exiting_role(int chan, void *arg)
{
    ft_ferry_t f;
    uint8_t compact[FERRY_ADDRESS_COMPACT_SIZE];
    (void)arg;
    ft_set_role("exiting");
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_worker_address_compact(f.worker, compact));
    ft_chan_send(chan, compact, sizeof(compact));
    ft_ferry_fini(&f);
    return 0;
}

typedef struct ca_err {
    unsigned calls;
    ferry_status_t status;
} ca_err_t;

static void ca_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    ca_err_t *e = arg;
    (void)ep;
    if (e->calls++ == 0)
        e->status = status;
}

static bool ca_err_seen(void *arg)
{
    return ((ca_err_t *)arg)->calls > 0;
}

/* dead: the compact address of a process that has exited. */
static void ca_dead_peer(ferry_worker_t *worker, const uint8_t *dead)
{
    ca_err_t err = {0};
    ferry_ep_params_t params = {.error_cb = ca_error_cb, .error_arg = &err};
    ferry_ep_t *ep = NULL;
    uint64_t start = ft_now_ns();
    ferry_status_t status = ferry_ep_create(worker, dead, FERRY_ADDRESS_COMPACT_SIZE, &params, &ep);
    if (status == FERRY_OK) { /* tcp: the connection fails from progress */
        FT_CHECK(strcmp(ft_remote_transport(), "tcp") == 0,
                 "an endpoint to a dead peer over %s was created", ferry_ep_transport_name(ep));
        status = ferry_ep_wait_connected(ep, 20000);
        FT_CHECK(status == FERRY_ERR_CONNECTION_REFUSED || status == FERRY_ERR_CONNECTION_RESET ||
                     status == FERRY_ERR_ENDPOINT_TIMEOUT,
                 "waiting for an endpoint to a dead peer returned %s", ferry_status_name(status));
        ft_progress_until(worker, 10000, ca_err_seen, &err, "the dead peer's endpoint error");
        FT_CHECK(err.calls == 1 && err.status == status,
                 "error callback: %u calls, %s (wait said %s)", err.calls,
                 ferry_status_name(err.status), ferry_status_name(status));
        ferry_ep_destroy(ep);
    } else {
        FT_CHECK(status == FERRY_ERR_CONNECTION_REFUSED,
                 "ferry_ep_create(a dead peer's compact address) returned %s, expected "
                 "FERRY_ERR_CONNECTION_REFUSED",
                 ferry_status_name(status));
        FT_CHECK(ep == NULL, "a failed ferry_ep_create wrote *ep_p");
    }
    ft_note("a dead peer's compact address: %s after %.1f ms", ferry_status_name(status),
            (double)(ft_now_ns() - start) / 1e6);
}

/* ------------------------------------------------------------------ two processes */

static int ca_child_role(int chan, void *arg)
{
    ft_ferry_t f;
    uint8_t mine[FERRY_ADDRESS_COMPACT_SIZE], parent[FERRY_ADDRESS_COMPACT_SIZE + 1];
    ferry_peer_id_t parent_id;
    ca_rx_t rx = {.sender = CA_PARENT};
    ft_token_t token;
    (void)arg;
    ft_set_role("child");
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_worker_address_compact(f.worker, mine));
    ft_chan_send(chan, mine, sizeof(mine));
    size_t length = ft_chan_recv(chan, parent, sizeof(parent), 30000);
    FT_CHECK(length == FERRY_ADDRESS_COMPACT_SIZE, "the parent's compact address has %zu bytes",
             length);
    token = ft_chan_expect_token(chan, CA_TOKEN_GO, 30000);
    parent_id = token.v[0];
    FT_CHECK_OK(ferry_am_set_handler(f.worker, CA_ID_PING, ca_handler, &rx));
    ferry_ep_t *ep = ca_ep_from_compact(f.worker, parent, ft_remote_transport(), parent_id);
    /* each ping answered by a pong of the same size, on the endpoint this side created */
    for (uint32_t seq = 0; seq < CA_NSIZES * CA_REPS; seq++) {
        ft_progress_until_count(f.worker, 30000, &rx.received, seq + 1ull, "the next ping");
        ca_send(f.worker, ep, CA_ID_PONG, CA_CHILD, seq, ca_size_of(seq));
    }
    ft_progress_until_token(f.worker, chan, CA_TOKEN_DONE, 30000, &token);
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    if (ferry_ep_close(ep, 0, &comp) == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, 30000, &comp, "the close");
    ferry_ep_destroy(ep);
    ft_chan_expect_eof(chan, 30000);
    ft_ferry_fini(&f);
    return 0;
}

static void ca_two_processes(void)
{
    ft_peer_t child, exiting;
    ft_ferry_t f;
    uint8_t mine[FERRY_ADDRESS_COMPACT_SIZE], theirs[FERRY_ADDRESS_COMPACT_SIZE + 1];
    uint8_t dead[FERRY_ADDRESS_COMPACT_SIZE + 1];
    ca_rx_t rx = {.sender = CA_CHILD};

    ft_peer_spawn(&child, "child", ca_child_role, NULL);
    ft_peer_spawn(&exiting, "exiting", ca_exiting_role, NULL);
    size_t dead_length = ft_chan_recv(exiting.chan, dead, sizeof(dead), 30000);
    FT_CHECK(dead_length == FERRY_ADDRESS_COMPACT_SIZE, "a compact address of %zu bytes",
             dead_length);
    ft_peer_expect_exit(&exiting, 30000, 0);

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_worker_address_compact(f.worker, mine));
    size_t length = ft_chan_recv(child.chan, theirs, sizeof(theirs), 30000);
    FT_CHECK(length == FERRY_ADDRESS_COMPACT_SIZE, "the child's compact address has %zu bytes",
             length);
    ft_chan_send(child.chan, mine, sizeof(mine));
    ferry_peer_id_t my_id = 0;
    FT_CHECK_OK(ferry_worker_id(f.worker, &my_id));
    ft_chan_send_token(child.chan, CA_TOKEN_GO, my_id, 0, 0, 0);

    /* the child's id is in its compact address (bytes 8-15, little-endian) */
    ferry_peer_id_t child_id = 0;
    for (int i = 7; i >= 0; i--)
        child_id = child_id << 8 | theirs[CA_UUID + i];
    uint32_t child_pid = (uint32_t)theirs[CA_PID] | (uint32_t)theirs[CA_PID + 1] << 8 |
                         (uint32_t)theirs[CA_PID + 2] << 16 | (uint32_t)theirs[CA_PID + 3] << 24;
    FT_CHECK(child_pid == (uint32_t)child.pid, "compact pid %u, the child is %d", child_pid,
             (int)child.pid);

    FT_CHECK_OK(ferry_am_set_handler(f.worker, CA_ID_PONG, ca_handler, &rx));
    ferry_ep_t *ep = ca_ep_from_compact(f.worker, theirs, ft_remote_transport(), child_id);
    for (uint32_t seq = 0; seq < CA_NSIZES * CA_REPS; seq++) {
        ca_send(f.worker, ep, CA_ID_PING, CA_PARENT, seq, ca_size_of(seq));
        ft_progress_until_count(f.worker, 30000, &rx.received, seq + 1ull, "the pong");
    }
    ft_note("%llu messages each way, 0 B .. 1 MiB, over %s from compact addresses",
            (unsigned long long)rx.received, ferry_ep_transport_name(ep));

    ca_bad_input(f.worker, theirs);
    ca_dead_peer(f.worker, dead);

    ft_chan_send_token(child.chan, CA_TOKEN_DONE, 0, 0, 0, 0);
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    if (ferry_ep_close(ep, 0, &comp) == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, 30000, &comp, "the close");
    ferry_ep_destroy(ep);
    /* the child closes its endpoint (accepted here) before it sees our channel close */
    ft_progress_for_ms(f.worker, 50);
    close(child.chan);
    ft_peer_expect_exit(&child, 30000, 0);
    ft_ferry_fini(&f);
}

/* ------------------------------------------------------------------ self */

static void ca_self(void)
{
    ft_ferry_t f;
    uint8_t mine[FERRY_ADDRESS_COMPACT_SIZE];
    ca_rx_t rx = {.sender = CA_PARENT};
    ferry_peer_id_t my_id = 0;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_worker_address_compact(f.worker, mine));
    FT_CHECK_OK(ferry_worker_id(f.worker, &my_id));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, CA_ID_PING, ca_handler, &rx));
    ferry_ep_t *ep = ca_ep_from_compact(f.worker, mine, "self", my_id);
    for (uint32_t seq = 0; seq < CA_NSIZES * CA_REPS; seq++) {
        ca_send(f.worker, ep, CA_ID_PING, CA_PARENT, seq, ca_size_of(seq));
        ft_progress_until_count(f.worker, 30000, &rx.received, seq + 1ull, "the message");
    }
    ca_bad_input(f.worker, mine);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
}

int main(int argc, char **argv)
{
    ft_set_role("parent");
    ft_watchdog(110);
    if (argc > 1 && strcmp(argv[1], "self") == 0)
        ca_self();
    else
        ca_two_processes();
    ft_note("ok");
    return 0;
}
