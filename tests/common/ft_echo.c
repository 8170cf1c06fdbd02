/* The echo peer and its client. */
#define _GNU_SOURCE
#include "ft_echo.h"

#include <string.h>
#include <unistd.h>

#include "ft_chan.h"
#include "ft_check.h"
#include "ft_ferry.h"
#include "ft_progress.h"
#include "ft_seq.h"

#define FT_ECHO_MAGIC 0x4f484345u /* "ECHO" */
#define FT_ECHO_CLIENT_ID 0xec0u
#define FT_ECHO_SERVER_ID 0xec1u

/* pings and pongs are numbered streams (ft_seq.h) */
typedef struct ft_echo_rx {
    ft_seq_rx_t seq;
    size_t last_size;
} ft_echo_rx_t;

static ferry_status_t ft_echo_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    ft_echo_rx_t *rx = arg;
    ft_seq_hdr_t h;
    ft_seq_recv(&rx->seq, header, header_length, &h, sizeof(h), data, length, params);
    rx->last_size = length;
    return FERRY_OK;
}

int ft_echo_role(int chan, void *arg)
{
    ft_echo_rx_t rx = {.seq = {.magic = FT_ECHO_MAGIC, .sender = FT_ECHO_CLIENT_ID}};
    uint64_t replied = 0;
    ft_token_t token;
    ft_ferry_t f;
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, FT_ECHO_ID_PING, ft_echo_handler, &rx));
    ft_send_address(chan, f.worker);
    ft_deadline_t deadline = ft_deadline_in_ms(120000);
    for (unsigned spins = 0;; spins++) {
        ft_progress_once(f.worker);
        if (rx.seq.received > replied) {
            ft_seq_send(f.worker, rx.seq.reply_ep, FT_ECHO_ID_PONG, FT_ECHO_MAGIC,
                        FT_ECHO_SERVER_ID, (uint32_t)replied, rx.last_size);
            replied++;
        }
        if ((spins & 0x3f) == 0 && ft_chan_try_token(chan, FT_ECHO_TOKEN_DONE, &token))
            break;
        FT_CHECK(!ft_deadline_passed(deadline), "echo: not told DONE within 120 s");
    }
    ft_chan_expect_eof(chan, 30000);
    ft_ferry_fini(&f);
    return 0;
}

static ft_echo_rx_t *ft_echo_client_rx(ft_echo_client_t *c)
{
    /* one client per process is all the tests need; its receive state lives here */
    static ft_echo_rx_t rx;
    (void)c;
    return &rx;
}

static void ft_echo_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    ft_echo_client_t *c = arg;
    (void)ep;
    if (c->errors++ == 0)
        c->error = status;
}

void ft_echo_connect(ft_echo_client_t *c, ferry_worker_t *worker, ft_peer_t *echo)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_echo_rx_t *rx = ft_echo_client_rx(c);
    memset(c, 0, sizeof(*c));
    memset(rx, 0, sizeof(*rx));
    rx->seq.magic = FT_ECHO_MAGIC;
    rx->seq.sender = FT_ECHO_SERVER_ID;
    c->worker = worker;
    size_t length = ft_recv_address(echo->chan, address, sizeof(address), 30000);
    ferry_ep_params_t params = {.error_cb = ft_echo_error_cb, .error_arg = c};
    c->ep = ft_ep_create(worker, address, length, &params);
    FT_CHECK_OK(ferry_am_set_handler(worker, FT_ECHO_ID_PONG, ft_echo_handler, rx));
}

void ft_echo_pingpong(ft_echo_client_t *c, unsigned n, size_t size)
{
    ft_echo_rx_t *rx = ft_echo_client_rx(c);
    for (unsigned i = 0; i < n; i++, c->seq++) {
        ft_seq_send(c->worker, c->ep, FT_ECHO_ID_PING, FT_ECHO_MAGIC, FT_ECHO_CLIENT_ID, c->seq,
                    size);
        ft_progress_until_count(c->worker, 30000, &rx->seq.received, c->seq + 1ull,
                                "the echo peer's pong");
        FT_CHECK(rx->last_size == size, "echo: a pong of %zu bytes for a ping of %zu",
                 rx->last_size, size);
    }
    FT_CHECK(c->errors == 0, "the endpoint to the echo peer failed: %s",
             ferry_status_name(c->error));
    c->pongs = rx->seq.received;
}

void ft_echo_finish(ft_echo_client_t *c, ft_peer_t *echo)
{
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ft_chan_send_token(echo->chan, FT_ECHO_TOKEN_DONE, 0, 0, 0, 0);
    ferry_status_t status = ferry_ep_close(c->ep, 0, &comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(c->worker, 10000, &comp, "the graceful close");
    ferry_ep_destroy(c->ep);
    c->ep = NULL;
    close(echo->chan);
    echo->chan = -1;
    ft_peer_expect_exit(echo, 30000, 0);
}
