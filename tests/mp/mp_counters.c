/* Counters (include/ferry/counters.h) after a known exchange, checked exactly.
 *
 * a (this process) and b; a sends b 10 active messages of 100 B, 3 tagged messages of 1000 B
 * (eager) and 2 of 2 MiB (rendezvous), then 5 active messages of 8 B (connected by then: shm's
 * one-cell path, on which the transport counts the message itself), puts 2 × 4096 B and gets 8 B
 * from b's memory, then b closes its endpoint to a, and a's next send fails. Then, on both sides:
 *   a: am sent 15 / 1040 B; tag sent 5 / 3000 B + 4 MiB, 3 eager in the class of 1000 B and 2
 *      by rendezvous in the class of 2 MiB; rma sent 2 / 8192 B, received 1 / 8 B; the
 *      transport carried at least what the protocols sent; one connection made, none lost;
 *      FERRY_ERR_ENDPOINT_CLOSED counted twice (the endpoint's failure, the refused send);
 *   b: am received 15 / 1040 B; tag received 5 / 3000 B + 4 MiB.
 * The worker's counters equal the endpoint's, and stay the same once the endpoint is destroyed.
 * With FERRY_STATS=1, ferry_worker_destroy prints them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/counters.h>

#include "ft.h"
#include "ft_rma.h"
#include "ft_tag.h"

#define AM_ID 9
#define AM_COUNT 10
#define AM_SIZE 100
#define AM_SMALL_COUNT 5
#define AM_SMALL_SIZE 8
#define AM_TOTAL (AM_COUNT + AM_SMALL_COUNT)
#define AM_BYTES (AM_COUNT * AM_SIZE + AM_SMALL_COUNT * AM_SMALL_SIZE)
#define EAGER_COUNT 3
#define EAGER_SIZE 1000
#define RNDV_COUNT 2
#define RNDV_SIZE ((size_t)2 << 20) /* above the eager limit of shm and of tcp (1 MiB) */
#define T_MS 30000

enum { TOKEN_DONE = 0x444f4e45, TOKEN_COUNTS = 0x434e5453, TOKEN_RMA = 0x524d4121 };

static unsigned am_received;
static ferry_ep_t *b_reply_ep; /* b's endpoint for a (the one the worker accepted) */
static ferry_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                            size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data;
    FT_CHECK(length == AM_SIZE || length == AM_SMALL_SIZE, "an AM of %zu bytes", length);
    b_reply_ep = params->reply_ep;
    am_received++;
    return FERRY_OK;
}

static ferry_counters_t counters_of_worker(ferry_worker_t *w)
{
    ferry_counters_t c = {.size = sizeof(c)};
    FT_CHECK_OK(ferry_worker_counters(w, &c));
    return c;
}

static uint64_t modes_sum(const ferry_counters_t *c, unsigned cls, unsigned from, unsigned to)
{
    uint64_t sum = 0;
    for (unsigned m = from; m <= to; m++)
        sum += c->tag_modes[cls][m];
    return sum;
}

static int b_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, AM_ID, on_am, NULL));
    ferry_mem_t *mem;
    static uint8_t region[8192 + 8];
    ferry_iov_t riov = {region, sizeof(region)};
    FT_CHECK_OK(ferry_mem_register(f.context, &riov, 1, FERRY_ACCESS_ALL, 0, &mem));
    ft_send_address(chan, f.worker);
    ft_rkey_send(chan, mem);
    /* every tagged message, in order */
    for (unsigned i = 0; i < EAGER_COUNT + RNDV_COUNT; i++) {
        ft_tag_recv_t r;
        size_t size = i < EAGER_COUNT ? EAGER_SIZE : RNDV_SIZE;
        ft_tag_recv_init(&r, FT_SHAPE_CONTIG, size);
        ft_tag_recv_post(f.worker, &r, 0x100 + i, UINT64_MAX);
        ft_tag_recv_wait(f.worker, &r);
        FT_CHECK_OK(r.status);
        ft_tag_recv_check(&r, 1, 0x100 + i, size, "a's tagged message");
        ft_tag_recv_free(&r);
    }
    while (am_received < AM_TOTAL)
        ft_progress_once(f.worker);
    ft_progress_until_token(f.worker, chan, TOKEN_RMA, T_MS, NULL); /* a's one-sided are done */
    ferry_counters_t c = counters_of_worker(f.worker);
    FT_CHECK(c.am.received == AM_TOTAL && c.am.received_bytes == AM_BYTES,
             "b: am received %llu / %llu B", (unsigned long long)c.am.received,
             (unsigned long long)c.am.received_bytes);
    FT_CHECK(c.tag.received == EAGER_COUNT + RNDV_COUNT &&
                 c.tag.received_bytes == EAGER_COUNT * EAGER_SIZE + RNDV_COUNT * RNDV_SIZE,
             "b: tag received %llu / %llu B", (unsigned long long)c.tag.received,
             (unsigned long long)c.tag.received_bytes);
    /* close a's connection gracefully: a's endpoint fails with FERRY_ERR_ENDPOINT_CLOSED */
    ferry_completion_t cc = {.count = 1};
    ferry_status_t st = ferry_ep_close(b_reply_ep, 0, &cc);
    if (st == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, T_MS, &cc, "b's close");
    ft_chan_send_token(chan, TOKEN_COUNTS, 0, 0, 0, 0);
    ft_progress_until_token(f.worker, chan, TOKEN_DONE, T_MS, NULL);
    FT_CHECK_OK(ferry_mem_deregister(mem));
    ft_ferry_fini(&f);
    return 0;
}

int main(void)
{
    ft_peer_t b;
    ft_watchdog(90);
    ft_set_role("a");
    ft_peer_spawn(&b, "b", b_role, NULL);
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    uint8_t address[FT_CHAN_MSG_MAX];
    size_t length = ft_recv_address(b.chan, address, sizeof(address), T_MS);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL);
    ferry_rkey_t *rkey = ft_rkey_recv_unpack(b.chan, ep, T_MS);

    uint8_t payload[AM_SIZE] = {1};
    for (unsigned i = 0; i < AM_COUNT; i++)
        ft_am_send_ok(f.worker, ep, AM_ID, NULL, 0, payload, sizeof(payload), NULL, T_MS);
    for (unsigned i = 0; i < EAGER_COUNT + RNDV_COUNT; i++) {
        ft_tag_send_t s;
        ft_tag_send_start(f.worker, ep, &s, 1, 0x100 + i, i < EAGER_COUNT ? EAGER_SIZE : RNDV_SIZE,
                          FT_SHAPE_CONTIG);
        ft_tag_send_wait(f.worker, &s, FERRY_OK);
    }
    /* connected by now (the rendezvous is done): these take shm's one-cell path */
    for (unsigned i = 0; i < AM_SMALL_COUNT; i++)
        ft_am_send_ok(f.worker, ep, AM_ID, NULL, 0, payload, AM_SMALL_SIZE, NULL, T_MS);
    static uint8_t put_buf[4096], get_buf[8];
    for (unsigned i = 0; i < 2; i++) {
        ferry_completion_t pc = {.count = 1};
        ferry_status_t st;
        while ((st = ferry_put(ep, put_buf, sizeof(put_buf), i * 4096u, rkey, &pc)) ==
               FERRY_ERR_NO_RESOURCE)
            ft_progress_once(f.worker);
        if (st == FERRY_INPROGRESS)
            ft_progress_until_completion(f.worker, T_MS, &pc, "a put");
        else
            FT_CHECK_OK(st);
    }
    ferry_completion_t gc = {.count = 1};
    ferry_status_t st;
    while ((st = ferry_get(ep, get_buf, sizeof(get_buf), 8192, rkey, &gc)) == FERRY_ERR_NO_RESOURCE)
        ft_progress_once(f.worker);
    if (st == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, T_MS, &gc, "a get");
    else
        FT_CHECK_OK(st);
    ft_rma_flush_ep(f.worker, ep, T_MS);
    ft_chan_send_token(b.chan, TOKEN_RMA, 0, 0, 0, 0);

    /* b closes: a's endpoint fails, and a send on it is refused */
    ft_progress_until_token(f.worker, b.chan, TOKEN_COUNTS, T_MS, NULL);
    ferry_ep_attr_t attr = {0};
    ft_deadline_t d = ft_deadline_in_ms(T_MS);
    do {
        ft_progress_once(f.worker);
        FT_CHECK_OK(ferry_ep_query(ep, &attr));
        FT_CHECK(!ft_deadline_passed(d), "a's endpoint did not see b's close");
    } while (attr.status == FERRY_OK);
    FT_CHECK(ferry_am_send(ep, AM_ID, NULL, 0, NULL, 0, NULL) == FERRY_ERR_ENDPOINT_CLOSED,
             "a send on a closed endpoint");

    ferry_counters_t e = {.size = sizeof(e)};
    FT_CHECK_OK(ferry_ep_counters(ep, &e));
    ferry_counters_t w = counters_of_worker(f.worker);
    FT_CHECK(memcmp(&e, &w, sizeof(e)) == 0, "the worker's counters are not its endpoint's");
    unsigned eager_class = ferry_counters_size_class(EAGER_SIZE);
    unsigned rndv_class = ferry_counters_size_class(RNDV_SIZE);
    FT_CHECK(eager_class == 10 && rndv_class == 22 && ferry_counters_size_class(0) == 0 &&
                 ferry_counters_size_class(1) == 1 &&
                 ferry_counters_size_class(UINT64_MAX) == FERRY_COUNTERS_SIZE_CLASSES - 1,
             "size classes %u, %u", eager_class, rndv_class);
    FT_CHECK(w.am.sent == AM_TOTAL && w.am.sent_bytes == AM_BYTES && w.am.received == 0,
             "a: am sent %llu / %llu B", (unsigned long long)w.am.sent,
             (unsigned long long)w.am.sent_bytes);
    FT_CHECK(w.tag.sent == EAGER_COUNT + RNDV_COUNT &&
                 w.tag.sent_bytes == EAGER_COUNT * EAGER_SIZE + RNDV_COUNT * RNDV_SIZE,
             "a: tag sent %llu / %llu B", (unsigned long long)w.tag.sent,
             (unsigned long long)w.tag.sent_bytes);
    FT_CHECK(w.tag_modes[eager_class][FERRY_COUNTERS_MODE_EAGER] == EAGER_COUNT &&
                 modes_sum(&w, eager_class, 0, FERRY_COUNTERS_MODES - 1) == EAGER_COUNT,
             "a: %llu eager messages of 1000 B", (unsigned long long)w.tag_modes[eager_class][0]);
    FT_CHECK(modes_sum(&w, rndv_class, FERRY_COUNTERS_MODE_GET, FERRY_COUNTERS_MODES - 1) ==
                     RNDV_COUNT &&
                 w.tag_modes[rndv_class][FERRY_COUNTERS_MODE_EAGER] == 0,
             "a: %llu rendezvous of 2 MiB",
             (unsigned long long)modes_sum(&w, rndv_class, 1, FERRY_COUNTERS_MODES - 1));
    /* one-sided: the 2 puts and the get, plus the reads of rendezvous in GET or SPLIT mode
     * (both ends' one-sided operations count there) */
    FT_CHECK(w.rma.sent >= 2 && w.rma.sent_bytes >= 8192, "a: rma sent %llu / %llu B",
             (unsigned long long)w.rma.sent, (unsigned long long)w.rma.sent_bytes);
    FT_CHECK(w.rma.received == 1 && w.rma.received_bytes == 8, "a: rma received %llu / %llu B",
             (unsigned long long)w.rma.received, (unsigned long long)w.rma.received_bytes);
    uint64_t carried = 0;
    for (unsigned t = 0; t < FERRY_COUNTERS_TRANSPORTS; t++)
        carried += w.transport[t].sent;
    FT_CHECK(carried >= AM_TOTAL + EAGER_COUNT + RNDV_COUNT,
             "a: the transports carried %llu messages", (unsigned long long)carried);
    FT_CHECK(w.connections_made == 1 && w.connections_lost == 0,
             "a: connections made %llu, lost %llu", (unsigned long long)w.connections_made,
             (unsigned long long)w.connections_lost);
    FT_CHECK(w.errors[-FERRY_ERR_ENDPOINT_CLOSED] == 2,
             "a: FERRY_ERR_ENDPOINT_CLOSED counted %llu times",
             (unsigned long long)w.errors[-FERRY_ERR_ENDPOINT_CLOSED]);
    char text[4096];
    FT_CHECK(ferry_counters_format(&w, text, sizeof(text)) < sizeof(text) &&
                 strstr(text, "active messages") != NULL,
             "ferry_counters_format: %s", text);

    ferry_rkey_release(rkey);
    ferry_ep_destroy(ep);
    ferry_counters_t after = counters_of_worker(f.worker);
    FT_CHECK(memcmp(&after, &w, sizeof(w)) == 0,
             "the worker's counters changed when the endpoint was destroyed");
    ft_chan_send_token(b.chan, TOKEN_DONE, 0, 0, 0, 0);
    ft_peer_expect_exit(&b, T_MS, 0);

    /* FERRY_STATS=1: ferry_worker_destroy prints the counters */
    setenv("FERRY_STATS", "1", 1);
    ft_capture_begin();
    ft_ferry_fini(&f);
    char *out = ft_capture_end();
    FT_CHECK(strstr(out, "(FERRY_STATS)") != NULL && strstr(out, "active messages") != NULL,
             "FERRY_STATS=1 printed: %s", out);
    free(out);
    printf("mp_counters: passed\n");
    return 0;
}
