/* Bad input is refused with a clear status, and never crashes or disturbs what works.
 *
 *   addresses   truncated, zero-length, NULL, wrong magic, wrong version, padded, and with a
 *               record longer than the blob: ferry_ep_create returns
 *               FERRY_ERR_INVALID_ADDRESS and leaves *ep_p alone;
 *   parameters  an AM id >= FERRY_AM_ID_MAX (send and set_handler), a header longer than
 *               FERRY_AM_HEADER_MAX, a NULL header or iov with a length: FERRY_ERR_INVALID_PARAM
 *               (on a self and on an shm endpoint);
 *   no handler  messages of ids the receiver has no handler for (small, medium, fragmented;
 *               100 medium ones, more than its pool has buffers) are dropped with exactly one
 *               warning per id, and the next message of a handled id arrives intact;
 *   closed      a send on an endpoint closed with ferry_ep_close (graceful or forced; self and
 *               shm) returns FERRY_ERR_ENDPOINT_CLOSED;
 *   peer closed after the peer closed its side (ferry_ep_close on the endpoint it accepted)
 *               the error callback reports FERRY_ERR_ENDPOINT_CLOSED and sends fail with it;
 *               after the peer destroyed its worker and exited, FERRY_ERR_CONNECTION_RESET
 *               (or FERRY_ERR_ENDPOINT_CLOSED: destroying may tell the peers);
 *               sends made before the failure was noticed do not crash. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft.h"

/* The address layout (src/wireup/address.h): u32 magic at 0, u16 version at 4, u16 total
 * length at 6, ..., u16 record count at 60; records after the 64-byte header. */
#define BI_ADDR_VERSION_OFFSET 4
#define BI_ADDR_LENGTH_OFFSET 6
#define BI_ADDR_HEADER 64

enum { BI_ID_GOOD = 1, BI_ID_NONE_A = 9, BI_ID_NONE_B = 10 };
enum { BI_SENDER = 3 };
enum {
    BI_TOKEN_DROPS = 0x44524f50,
    BI_TOKEN_CLOSE_YOURS = 0x434c4f53,
    BI_TOKEN_CLOSED = 0x434c4f44,
    BI_TOKEN_EXIT = 0x45584954,
};

/* ------------------------------------------------------------------ addresses */

static void bi_expect_invalid_address(ferry_worker_t *worker, const void *address, size_t length,
                                      const char *what)
{
    ferry_ep_t *sentinel = (ferry_ep_t *)(uintptr_t)0x5a5a5a5a;
    ferry_ep_t *ep = sentinel;
    ferry_status_t status = ferry_ep_create(worker, address, length, NULL, &ep);
    FT_CHECK(status == FERRY_ERR_INVALID_ADDRESS,
             "ferry_ep_create(%s address, %zu bytes) returned %s, expected "
             "FERRY_ERR_INVALID_ADDRESS",
             what, length, ferry_status_name(status));
    FT_CHECK(ep == sentinel, "ferry_ep_create(%s address) failed but wrote *ep_p", what);
}

static void bi_addresses(ferry_worker_t *worker)
{
    const void *address;
    size_t length;
    uint8_t copy[FT_CHAN_MSG_MAX + 1];
    FT_CHECK_OK(ferry_worker_address(worker, &address, &length));
    FT_CHECK(length >= BI_ADDR_HEADER && length < sizeof(copy), "address of %zu bytes", length);

    bi_expect_invalid_address(worker, address, length - 1, "a truncated (1 byte short)");
    bi_expect_invalid_address(worker, address, length / 2, "a truncated (half)");
    bi_expect_invalid_address(worker, address, BI_ADDR_HEADER - 1, "a truncated (no header)");
    bi_expect_invalid_address(worker, address, 10, "a truncated (10 bytes)");
    bi_expect_invalid_address(worker, address, 0, "a zero-length");
    bi_expect_invalid_address(worker, NULL, 0, "a NULL");
    bi_expect_invalid_address(worker, NULL, length, "a NULL (with a length)");

    memcpy(copy, address, length);
    copy[0] ^= 0xff;
    bi_expect_invalid_address(worker, copy, length, "a wrong-magic");

    static const uint16_t versions[] = {0, 2, 0xffff};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        memcpy(copy, address, length);
        memcpy(copy + BI_ADDR_VERSION_OFFSET, &versions[i], sizeof(versions[i]));
        bi_expect_invalid_address(worker, copy, length, "a wrong-version");
    }

    /* padded: one byte more than the blob says */
    memcpy(copy, address, length);
    copy[length] = 0;
    bi_expect_invalid_address(worker, copy, length + 1, "a padded");

    /* the header's length says more than there is, and the blob is that long: the records
     * end before the blob does */
    memcpy(copy, address, length);
    uint16_t longer = (uint16_t)(length + 1);
    memcpy(copy + BI_ADDR_LENGTH_OFFSET, &longer, sizeof(longer));
    bi_expect_invalid_address(worker, copy, length + 1, "a trailing-garbage");

    /* the first record claims more bytes than remain */
    if (length >= BI_ADDR_HEADER + 4) {
        memcpy(copy, address, length);
        uint16_t huge = 0xfff0;
        memcpy(copy + BI_ADDR_HEADER + 2, &huge, sizeof(huge));
        bi_expect_invalid_address(worker, copy, length, "a record-overflowing");
    }

    FT_CHECK_STATUS(ferry_ep_create(NULL, address, length, NULL, &(ferry_ep_t *){NULL}),
                    FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_ep_create(worker, address, length, NULL, NULL), FERRY_ERR_INVALID_PARAM);

    /* the untouched address still works */
    ferry_ep_t *ep = ft_ep_create(worker, address, length, NULL);
    ferry_ep_destroy(ep);
}

/* ------------------------------------------------------------------ parameters */

static ferry_status_t bi_nop_handler(void *arg, const void *header, size_t header_length,
                                     void *data, size_t length,
                                     const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)params;
    return FERRY_OK;
}

static void bi_parameters(ferry_worker_t *worker, ferry_ep_t *ep, const char *what)
{
    static const unsigned bad_ids[] = {FERRY_AM_ID_MAX, FERRY_AM_ID_MAX + 1, 200, 255, 256,
                                       UINT_MAX};
    uint8_t header[FERRY_AM_HEADER_MAX + 1] = {0};
    uint8_t payload[64] = {0};
    ferry_iov_t iov = {.buffer = payload, .length = sizeof(payload)};
    ferry_iov_t null_iov = {.buffer = NULL, .length = 8};

    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
        ferry_status_t status = ferry_am_send(ep, bad_ids[i], header, 8, &iov, 1, NULL);
        FT_CHECK(status == FERRY_ERR_INVALID_PARAM,
                 "%s: ferry_am_send(id %u) returned %s, expected FERRY_ERR_INVALID_PARAM", what,
                 bad_ids[i], ferry_status_name(status));
        FT_CHECK_STATUS(ferry_am_set_handler(worker, bad_ids[i], bi_nop_handler, NULL),
                        FERRY_ERR_INVALID_PARAM);
    }
    FT_CHECK_STATUS(ferry_am_send(ep, BI_ID_GOOD, header, FERRY_AM_HEADER_MAX + 1, &iov, 1, NULL),
                    FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_am_send(ep, BI_ID_GOOD, NULL, 5, &iov, 1, NULL), FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_am_send(ep, BI_ID_GOOD, header, 8, NULL, 1, NULL),
                    FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_am_send(ep, BI_ID_GOOD, header, 8, &null_iov, 1, NULL),
                    FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_am_send(NULL, BI_ID_GOOD, header, 8, &iov, 1, NULL),
                    FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_am_set_handler(NULL, BI_ID_GOOD, bi_nop_handler, NULL),
                    FERRY_ERR_INVALID_PARAM);
}

/* ------------------------------------------------------------------ sends on closed eps */

static void bi_expect_closed(ferry_ep_t *ep, const char *what)
{
    static uint8_t payload[100000];
    uint8_t header[16] = {0};
    static const size_t sizes[] = {0, 8, 2000, sizeof(payload)};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ferry_iov_t iov = {.buffer = payload, .length = sizes[i]};
        ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
        ferry_status_t status = ferry_am_send(ep, BI_ID_GOOD, header, sizeof(header), &iov, 1,
                                              sizes[i] > 4096 ? &comp : NULL);
        FT_CHECK(status == FERRY_ERR_ENDPOINT_CLOSED,
                 "%s: a %zu-byte send returned %s, expected FERRY_ERR_ENDPOINT_CLOSED", what,
                 sizes[i], ferry_status_name(status));
        FT_CHECK(comp.count == 1, "%s: a refused send touched its completion", what);
    }
}

static void bi_close_and_send(ferry_worker_t *worker, const void *address, size_t length,
                              unsigned flags, const char *what)
{
    ferry_ep_t *ep = ft_ep_create(worker, address, length, NULL);
    uint8_t header[16] = {0};
    /* one message, so that the endpoint is in use (it goes to BI_ID_GOOD or is dropped) */
    ft_am_send_ok(worker, ep, BI_ID_NONE_B, header, sizeof(header), NULL, 0, NULL, 10000);
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(ep, flags, &comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "%s: ferry_ep_close returned %s",
             what, ferry_status_name(status));
    bi_expect_closed(ep, what); /* while closing, too */
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(worker, 10000, &comp, "the close");
    bi_expect_closed(ep, what);
    ferry_ep_destroy(ep);
}

/* ------------------------------------------------------------------ the receiver */

typedef struct bi_rx {
    uint64_t good;
    ferry_ep_t *reply_ep;
} bi_rx_t;

static ferry_status_t bi_good_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    bi_rx_t *rx = arg;
    uint32_t seq;
    FT_CHECK(header_length == sizeof(seq), "GOOD with a %zu-byte header", header_length);
    memcpy(&seq, header, sizeof(seq));
    FT_CHECK(seq == rx->good, "GOOD seq %u, expected %llu", seq, (unsigned long long)rx->good);
    FT_CHECK(length == 5000, "GOOD of %zu bytes", length);
    ft_pattern_check(data, length, ft_pattern_seed(BI_SENDER, seq, length), 0, "GOOD");
    rx->good++;
    rx->reply_ep = params->reply_ep;
    return FERRY_OK;
}

static int bi_receiver_role(int chan, void *arg)
{
    bi_rx_t rx = {0};
    ft_ferry_t f;
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, BI_ID_GOOD, bi_good_handler, &rx));
    ft_capture_begin();
    ft_send_address(chan, f.worker);
    ft_progress_until_count(f.worker, 30000, &rx.good, 1, "the message after the dropped ones");
    char *text = ft_capture_end();
    size_t drops_a = ft_count(text, "dropping active message id 9 ");
    size_t drops_b = ft_count(text, "dropping active message id 10 ");
    free(text);
    FT_CHECK(drops_a == 1 && drops_b == 1,
             "%zu warnings about dropping id %d and %zu about id %d, expected one each", drops_a,
             BI_ID_NONE_A, drops_b, BI_ID_NONE_B);
    ft_chan_send_token(chan, BI_TOKEN_DROPS, drops_a, drops_b, 0, 0);

    /* the sender asks us to close our side of its endpoint */
    ft_progress_until_token(f.worker, chan, BI_TOKEN_CLOSE_YOURS, 30000, NULL);
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(rx.reply_ep, 0, &comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
             "ferry_ep_close(accepted endpoint) returned %s", ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, 10000, &comp, "the close");
    ft_chan_send_token(chan, BI_TOKEN_CLOSED, 0, 0, 0, 0);

    /* a new endpoint from the sender works; then we exit without closing anything */
    ft_progress_until_count(f.worker, 30000, &rx.good, 2, "a message on a new endpoint");
    ft_progress_until_token(f.worker, chan, BI_TOKEN_EXIT, 30000, NULL);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ the sender */

typedef struct bi_errors {
    unsigned count;
    ferry_status_t status;
} bi_errors_t;

static void bi_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    bi_errors_t *e = arg;
    (void)ep;
    if (e->count++ == 0)
        e->status = status;
}

static bool bi_error_seen(void *arg)
{
    return ((bi_errors_t *)arg)->count > 0;
}

static void bi_send_good(ferry_worker_t *worker, ferry_ep_t *ep, uint32_t seq)
{
    static uint8_t payload[5000];
    ft_pattern_fill(payload, sizeof(payload), ft_pattern_seed(BI_SENDER, seq, sizeof(payload)), 0);
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    ft_am_send_ok(worker, ep, BI_ID_GOOD, &seq, sizeof(seq), payload, sizeof(payload), &comp,
                  10000);
    ft_progress_until_completion(worker, 10000, &comp, "a send");
}

/* Sends after a failure: every size fails with the status expected. */
static void bi_expect_failed(ferry_ep_t *ep, ferry_status_t expected, const char *what)
{
    static uint8_t payload[100000];
    static const size_t sizes[] = {0, 8, 2000, sizeof(payload)};
    uint8_t header[16] = {0};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ferry_iov_t iov = {.buffer = payload, .length = sizes[i]};
        ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
        ferry_status_t status =
            ferry_am_send(ep, BI_ID_GOOD, header, sizeof(header), &iov, 1, &comp);
        FT_CHECK(status == expected, "%s: a %zu-byte send returned %s, expected %s", what, sizes[i],
                 ferry_status_name(status), ferry_status_name(expected));
    }
}

int main(void)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    static uint8_t payload[100000];
    uint8_t header[16] = {0};
    ft_peer_t receiver;
    ft_files_t before;
    ft_ferry_t f;

    ft_set_role("sender");
    ft_watchdog(55);
    ft_files_snapshot(&before);
    ft_peer_spawn(&receiver, "receiver", bi_receiver_role, NULL);
    ft_ferry_init(&f, NULL, NULL);

    bi_addresses(f.worker);
    ft_note("addresses: refused");

    const void *own;
    size_t own_length;
    FT_CHECK_OK(ferry_worker_address(f.worker, &own, &own_length));
    ferry_ep_t *self_ep = ft_ep_create(f.worker, own, own_length, NULL);
    size_t length = ft_recv_address(receiver.chan, address, sizeof(address), 30000);
    bi_errors_t errors = {0};
    ferry_ep_params_t params = {.error_cb = bi_error_cb, .error_arg = &errors};
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, &params);
    bi_parameters(f.worker, self_ep, "self");
    bi_parameters(f.worker, ep, "shm");
    ft_note("parameters: refused");

    /* messages nobody handles, then one that is handled */
    static const size_t sizes[] = {8, 2000, 100000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
        ft_am_send_ok(f.worker, ep, BI_ID_NONE_A, header, sizeof(header), payload, sizes[i], &comp,
                      10000);
        ft_progress_until_completion(f.worker, 10000, &comp, "a send");
    }
    for (int i = 0; i < 100; i++)
        ft_am_send_ok(f.worker, ep, BI_ID_NONE_A, header, sizeof(header), payload, 3000, NULL,
                      10000);
    ft_am_send_ok(f.worker, ep, BI_ID_NONE_B, header, sizeof(header), NULL, 0, NULL, 10000);
    bi_send_good(f.worker, ep, 0);
    ft_progress_until_token(f.worker, receiver.chan, BI_TOKEN_DROPS, 30000, NULL);
    ft_note("no handler: dropped, one warning per id, the next message arrived");

    /* sends on endpoints closed here */
    bi_close_and_send(f.worker, own, own_length, 0, "self, graceful close");
    bi_close_and_send(f.worker, own, own_length, FERRY_EP_CLOSE_FORCE, "self, forced close");
    bi_close_and_send(f.worker, address, length, 0, "shm, graceful close");
    bi_close_and_send(f.worker, address, length, FERRY_EP_CLOSE_FORCE, "shm, forced close");
    ferry_ep_destroy(self_ep);
    ft_note("closed endpoints: FERRY_ERR_ENDPOINT_CLOSED");

    /* the peer closes its side */
    ft_chan_send_token(receiver.chan, BI_TOKEN_CLOSE_YOURS, 0, 0, 0, 0);
    ft_progress_until_token(f.worker, receiver.chan, BI_TOKEN_CLOSED, 30000, NULL);
    /* sends before this process noticed: any status, no crash */
    ferry_iov_t iov = {.buffer = payload, .length = 8};
    (void)ferry_am_send(ep, BI_ID_GOOD, header, sizeof(header), &iov, 1, NULL);
    ft_progress_until(f.worker, 5000, bi_error_seen, &errors, "the error callback");
    FT_CHECK(errors.status == FERRY_ERR_ENDPOINT_CLOSED,
             "the peer closed its side: the error callback reported %s, expected "
             "FERRY_ERR_ENDPOINT_CLOSED",
             ferry_status_name(errors.status));
    bi_expect_failed(ep, FERRY_ERR_ENDPOINT_CLOSED, "the peer closed its side");
    ferry_ep_destroy(ep);

    /* the peer exits without closing */
    bi_errors_t errors2 = {0};
    params.error_arg = &errors2;
    ep = ft_ep_create(f.worker, address, length, &params);
    bi_send_good(f.worker, ep, 1);
    ft_chan_send_token(receiver.chan, BI_TOKEN_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&receiver, 30000, 0);
    for (int i = 0; i < 10; i++)
        (void)ferry_am_send(ep, BI_ID_GOOD, header, sizeof(header), &iov, 1, NULL);
    ft_progress_until(f.worker, 5000, bi_error_seen, &errors2, "the error callback");
    /* a worker destroyed without closing its endpoints may still tell its peers (a close) */
    FT_CHECK(errors2.status == FERRY_ERR_CONNECTION_RESET ||
                 errors2.status == FERRY_ERR_ENDPOINT_CLOSED,
             "the peer exited: the error callback reported %s, expected "
             "FERRY_ERR_CONNECTION_RESET or FERRY_ERR_ENDPOINT_CLOSED",
             ferry_status_name(errors2.status));
    bi_expect_failed(ep, errors2.status, "the peer exited");
    FT_CHECK(errors.count == 1 && errors2.count == 1, "error callbacks ran %u and %u times",
             errors.count, errors2.count);
    ferry_ep_destroy(ep);
    ft_note("peer closed or exited: the error callback ran once, sends fail");

    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
