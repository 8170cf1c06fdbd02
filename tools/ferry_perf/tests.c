/* The tests, over the public API: ferry objects, progress and sends, the active-message
 * handlers, and both sides of am_lat and am_bw (the one-sided tests are in rma.c, the tagged
 * ones in tag.c).
 *
 * Messages (active-message ids below): the payload is always the first bytes of the same
 * pattern, so that the receiver can check it with one memcmp; only warm-up messages (the
 * *_CHECK ids) are checked byte by byte, measured ones only for their length.
 *   am_lat: the client sends PING, the server answers with a PONG of the same size.
 *   am_bw:  the client streams DATA, then END (header: how many it sent); the server answers
 *           with ACK (header: how many messages and bytes it got, how many were wrong).
 *   BYE:    the client is done; both sides then close their endpoint gracefully.
 *   RMA_CTRL, RMA_REPLY: the one-sided tests' requests and answers (rma.c).
 *   TAG_CTRL, TAG_REPLY: the tag tests' requests and answers (tag.c).
 *   SEG_CTRL, SEG_REPLY: the segment tests' requests and answers (seg.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* Sends that may be in flight (returned FERRY_INPROGRESS) at once: enough to keep the
 * transport's pipeline full without queueing the whole run. */
#define PERF_WINDOW 16
/* Busy polling looks at the clock (idle timeout, TCP hang-up) every this many idle polls. */
#define PERF_IDLE_CHECK_MASK 1023u
/* ferry_worker_wait timeout in --wait mode: also how often the TCP connection is checked. */
#define PERF_WAIT_MS 100
/* Messages at least this large update the progress line every iteration (else every 1024). */
#define PERF_PROGRESS_EVERY_SIZE 65536

void perf_fail(perf_ctx_t *ctx, ferry_status_t status, const char *what)
{
    if (ctx->failed == FERRY_OK) {
        fprintf(stderr, "ferry_perf: %s: %s\n", what, ferry_status_string(status));
        ctx->failed = status;
    }
}

/* ---------------------------------------------------------------- handlers */

/* Checks length and, for warm-up messages, every byte. */
bool perf_thread_multi;

static void check_message(perf_ctx_t *ctx, const void *data, size_t length, bool full)
{
    bool ok = length <= ctx->pattern_size;
    if (ok && !ctx->is_server)
        ok = length == ctx->expect_length;
    if (ok && full && length > 0)
        ok = memcmp(data, ctx->pattern, length) == 0;
    if (!ok) {
        if (ctx->bad_total == 0)
            fprintf(stderr, "ferry_perf: received a message of %zu bytes with wrong %s\n", length,
                    length <= ctx->pattern_size && (ctx->is_server || length == ctx->expect_length)
                        ? "bytes"
                        : "length");
        ctx->bad++;
        ctx->bad_total++;
    }
}

static ferry_status_t on_ping(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)data, (void)params;
    check_message(ctx, data, length, false);
    ctx->ping_length = length;
    ctx->ping_check = false;
    perf_count(&ctx->pings);
    return FERRY_OK;
}

static ferry_status_t on_ping_check(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)params;
    check_message(ctx, data, length, true);
    ctx->ping_length = length;
    ctx->ping_check = true;
    perf_count(&ctx->pings);
    return FERRY_OK;
}

static ferry_status_t on_pong(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)params;
    check_message(ctx, data, length, false);
    perf_count(&ctx->pongs);
    return FERRY_OK;
}

static ferry_status_t on_pong_check(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)params;
    check_message(ctx, data, length, true);
    perf_count(&ctx->pongs);
    return FERRY_OK;
}

static ferry_status_t on_data(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)data, (void)params;
    if (length > ctx->pattern_size)
        check_message(ctx, data, length, false);
    ctx->data_count++;
    ctx->data_bytes += length;
    return FERRY_OK;
}

static ferry_status_t on_data_check(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)params;
    check_message(ctx, data, length, true);
    ctx->data_count++;
    ctx->data_bytes += length;
    return FERRY_OK;
}

static ferry_status_t on_end(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)data, (void)length, (void)params;
    perf_count(&ctx->ends);
    return FERRY_OK;
}

static ferry_status_t on_ack(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)data, (void)length, (void)params;
    if (header_length == sizeof(ctx->ack)) {
        memcpy(&ctx->ack, header, sizeof(ctx->ack));
    } else {
        fprintf(stderr, "ferry_perf: malformed ACK from the server (%zu header bytes)\n",
                header_length);
        ctx->ack.bad = UINT64_MAX;
    }
    perf_count(&ctx->acks);
    return FERRY_OK;
}

static ferry_status_t on_bye(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)header, (void)header_length, (void)data, (void)length, (void)params;
    ctx->bye = true;
    return FERRY_OK;
}

/* Our endpoint and the ones the worker accepted from the peer (stream 0: all of them) report
 * here. */
static void on_ep_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    perf_ctx_t *ctx = arg;
    if (status == FERRY_ERR_ENDPOINT_CLOSED && ep != ctx->ep) {
        /* the peer closed one of its endpoints (a stream's) to us gracefully */
        if (++ctx->peer_closes >= ctx->streams)
            __atomic_store_n(&ctx->peer_closed, true, __ATOMIC_RELEASE);
        /* --threads: another stream of the peer may finish before this one */
        if (ctx->closing || ctx->bye || ctx->streams > 1)
            return;
        perf_fail(ctx, status, "the peer closed its endpoint before the end of the run");
        return;
    }
    perf_fail(ctx, status,
              ep == ctx->ep ? "the endpoint to the peer failed"
                            : "the endpoint from the peer failed");
}

/* ---------------------------------------------------------------- progress */

/* Nothing happened for a while: give up after the timeout, or when the peer process is gone
 * (its TCP connection closed: a backup for the endpoints' error callbacks). The server of a
 * one-sided test has no timeout: the client's operations may not involve it for any time. */
static int perf_check_idle(perf_ctx_t *ctx)
{
    uint64_t now = perf_now_ns();
    if (perf_tcp_peer_gone(ctx->tcp_fd)) {
        perf_fail(ctx, FERRY_ERR_CONNECTION_RESET,
                  "the peer process is gone (TCP connection "
                  "closed)");
        return -1;
    }
    if (ctx->idle_since_ns == 0) {
        ctx->idle_since_ns = now;
    } else if (ctx->idle_timeout && now - ctx->idle_since_ns > ctx->timeout_ns) {
        perf_fail(ctx, FERRY_ERR_TIMED_OUT, "nothing happened for too long (see -T)");
        return -1;
    }
    return 0;
}

/* One round of progress: ferry_worker_progress, or in --wait mode ferry_worker_wait unless
 * busy is set (after FERRY_ERR_NO_RESOURCE the API asks for progress, and nothing would wake
 * a waiter when queue space frees up). Returns 0, or -1 when the run must stop. */
int perf_poll(perf_ctx_t *ctx, bool busy)
{
    unsigned events;
    if (ctx->params.wait && !busy) {
        ferry_status_t status = ferry_worker_wait(ctx->worker, PERF_WAIT_MS);
        if (status != FERRY_OK && status != FERRY_ERR_TIMED_OUT) {
            perf_fail(ctx, status, "ferry_worker_wait");
            return -1;
        }
        events = status == FERRY_OK;
        if (!events) {
            if (ctx->failed != FERRY_OK)
                return -1;
            return perf_check_idle(ctx);
        }
    } else {
        events = ferry_worker_progress(ctx->worker);
    }
    if (ctx->failed != FERRY_OK)
        return -1;
    if (events > 0) {
        ctx->idle_since_ns = 0;
        return 0;
    }
    if ((++ctx->idle_polls & PERF_IDLE_CHECK_MASK) != 0)
        return 0;
    return perf_check_idle(ctx);
}

/* Send length bytes of the pattern. FERRY_INPROGRESS: the buffer stays in use until the
 * completion counts the send done; we never write the pattern, so we may go on at once. */
int perf_send(perf_ctx_t *ctx, unsigned id, const void *header, size_t header_length, size_t length)
{
    ferry_iov_t iov = {.buffer = ctx->pattern, .length = length};
    int rc;
    do {
        ferry_status_t status =
            ferry_am_send(ctx->ep, ctx->am_base + id, header, header_length, &iov, 1, &ctx->comp);
        rc = perf_send_status(ctx, status, &ctx->sends_pending, "ferry_am_send");
    } while (rc == 1);
    return rc;
}

int perf_send_status(perf_ctx_t *ctx, ferry_status_t status, uint64_t *pending, const char *call)
{
    if (status == FERRY_INPROGRESS)
        (*pending)++;
    if (status == FERRY_INPROGRESS || status == FERRY_OK) {
        ctx->idle_since_ns = 0;
        return 0;
    }
    if (status != FERRY_ERR_NO_RESOURCE) {
        perf_fail(ctx, status, call);
        return -1;
    }
    return perf_poll(ctx, true) != 0 ? -1 : 1;
}

bool perf_ctrl_accept(perf_ctx_t *ctx, bool ok, const void *header, size_t header_length, void *dst,
                      size_t size, uint64_t unanswered, const char *what)
{
    if (!ok || header_length != size) {
        fprintf(stderr, "ferry_perf: unexpected %s (%zu header bytes, %s, %llu unanswered)\n", what,
                header_length, ctx->is_server ? "server" : "client",
                (unsigned long long)unanswered);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, what);
        return false;
    }
    memcpy(dst, header, size);
    return true;
}

/* Wait until at most limit sends are in flight. */
int perf_window_wait(perf_ctx_t *ctx, int64_t limit)
{
    return perf_comp_window(ctx, &ctx->comp, &ctx->sends_pending, limit, "a send failed");
}

int perf_comp_window(perf_ctx_t *ctx, const ferry_completion_t *comp, const uint64_t *pending,
                     int64_t limit, const char *what)
{
    while (perf_in_flight(comp, *pending) > limit) {
        if (perf_poll(ctx, false) != 0)
            return -1;
    }
    if (comp->status != FERRY_OK) {
        perf_fail(ctx, comp->status, what);
        return -1;
    }
    return 0;
}

int perf_wait_for(perf_ctx_t *ctx, const uint64_t *counter, uint64_t target)
{
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < target) {
        if (perf_poll(ctx, false) != 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- setup */

/* What every stream's context has: parameters, the send buffer, the handlers (at its ids),
 * the tag tests' buffers. */
static int ctx_init_stream(perf_ctx_t *ctx)
{
    static const ferry_am_handler_cb_t handlers[AM_COUNT] = {
        [AM_PING] = on_ping,
        [AM_PING_CHECK] = on_ping_check,
        [AM_PONG] = on_pong,
        [AM_PONG_CHECK] = on_pong_check,
        [AM_DATA] = on_data,
        [AM_DATA_CHECK] = on_data_check,
        [AM_END] = on_end,
        [AM_ACK] = on_ack,
        [AM_BYE] = on_bye,
        [AM_RMA_CTRL] = perf_rma_on_ctrl,
        [AM_RMA_REPLY] = perf_rma_on_reply,
        [AM_TAG_CTRL] = perf_tag_on_ctrl,
        [AM_TAG_REPLY] = perf_tag_on_reply,
        [AM_SEG_CTRL] = perf_seg_on_ctrl,
        [AM_SEG_REPLY] = perf_seg_on_reply,
    };
    const perf_params_t *params = &ctx->params;
    /* the server of a one-sided or segment test may see nothing of its client for any time */
    ctx->idle_timeout =
        !(ctx->is_server && (perf_test_is_rma(params->test) || perf_test_is_seg(params->test)));
    ctx->am_base = ctx->stream * AM_COUNT;
    ctx->comp.count = PERF_COMP_BIAS;
    ctx->comp.status = FERRY_OK;
    ctx->rma_comp.status = FERRY_OK;
    for (unsigned i = 0; i < params->size_count && !perf_test_is_rma(params->test) &&
                         !perf_test_is_tag(params->test) && !perf_test_is_seg(params->test);
         i++) {
        if (params->sizes[i] > ctx->pattern_size)
            ctx->pattern_size = params->sizes[i];
    }
    ctx->pattern = malloc(ctx->pattern_size ? ctx->pattern_size : 1);
    if (ctx->pattern == NULL) {
        fprintf(stderr, "ferry_perf: malloc(%zu) for the message buffer failed\n",
                ctx->pattern_size);
        return -1;
    }
    for (size_t i = 0; i < ctx->pattern_size; i++)
        ctx->pattern[i] = perf_pattern_byte(i);
    for (unsigned id = 1; id < AM_COUNT; id++) {
        ferry_status_t status =
            ferry_am_set_handler(ctx->worker, ctx->am_base + id, handlers[id], ctx);
        if (status != FERRY_OK) {
            fprintf(stderr, "ferry_perf: ferry_am_set_handler(%u): %s\n", ctx->am_base + id,
                    ferry_status_string(status));
            return -1;
        }
    }
    if (perf_test_is_tag(params->test) && perf_tag_create(ctx) != 0)
        return -1;
    return 0;
}

int perf_ctx_create(const perf_params_t *params, int tcp_fd, unsigned timeout_s, bool is_server,
                    perf_ctx_t **ctx_p)
{
    ferry_status_t status;
    perf_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        fprintf(stderr, "ferry_perf: out of memory\n");
        return -1;
    }
    ctx->params = *params;
    ctx->tcp_fd = tcp_fd;
    ctx->timeout_ns = (uint64_t)timeout_s * 1000000000ull;
    ctx->is_server = is_server;
    ctx->streams = params->threads > 1 ? params->threads : 1;

    status = ferry_context_create(NULL, &ctx->context);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_context_create: %s\n", ferry_status_string(status));
        goto err_free;
    }
    ferry_worker_params_t worker_params = {.accepted_ep_error_cb = on_ep_error,
                                           .accepted_ep_error_arg = ctx,
                                           .thread_mode = perf_thread_multi ? FERRY_THREAD_MULTI
                                                                            : FERRY_THREAD_SINGLE};
    status = ferry_worker_create(ctx->context, &worker_params, &ctx->worker);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_worker_create: %s\n", ferry_status_string(status));
        goto err_context;
    }
    if (ctx_init_stream(ctx) != 0)
        goto err_worker;
    if (perf_test_is_rma(params->test) && perf_rma_create(ctx) != 0)
        goto err_worker;
    if (perf_test_is_seg(params->test) && perf_seg_create(ctx) != 0)
        goto err_worker;
    *ctx_p = ctx;
    return 0;

err_worker:
    ferry_worker_destroy(ctx->worker);
err_context:
    ferry_context_destroy(ctx->context);
err_free:
    free(ctx->pattern);
    free(ctx);
    return -1;
}

int perf_ctx_create_stream(const perf_ctx_t *shared, unsigned stream, perf_ctx_t **ctx_p)
{
    perf_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        fprintf(stderr, "ferry_perf: out of memory\n");
        return -1;
    }
    ctx->params = shared->params;
    ctx->tcp_fd = shared->tcp_fd;
    ctx->timeout_ns = shared->timeout_ns;
    ctx->is_server = shared->is_server;
    ctx->stream = stream;
    ctx->streams = 1;
    ctx->context = shared->context;
    ctx->worker = shared->worker;
    if (ctx_init_stream(ctx) != 0) {
        perf_ctx_destroy(ctx);
        return -1;
    }
    *ctx_p = ctx;
    return 0;
}

/* Our endpoint to the peer's worker. */
static int ctx_ep_create(perf_ctx_t *ctx)
{
    ferry_ep_params_t ep_params = {.error_cb = on_ep_error, .error_arg = ctx};
    ferry_status_t status = ferry_ep_create(ctx->worker, ctx->peer_address,
                                            ctx->peer_address_length, &ep_params, &ctx->ep);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_ep_create: %s\n", ferry_status_string(status));
        return -1;
    }
    return 0;
}

/* Client: one END/ACK round trip: both connections are up before anything is measured. */
static int ctx_round_trip(perf_ctx_t *ctx)
{
    uint64_t zero = 0;
    ctx->expect_length = 0;
    if (perf_send(ctx, AM_END, &zero, sizeof(zero), 0) != 0 ||
        perf_wait_for(ctx, &ctx->acks, ctx->acks + 1) != 0) {
        fprintf(stderr, "ferry_perf: the server did not answer through ferry\n");
        return -1;
    }
    return 0;
}

int perf_ctx_connect(perf_ctx_t *ctx)
{
    const void *address;
    size_t length;
    unsigned timeout_s = (unsigned)(ctx->timeout_ns / 1000000000ull);

    ferry_worker_address(ctx->worker, &address, &length);
    if (perf_tcp_send_blob(ctx->tcp_fd, address, length, timeout_s) != 0 ||
        perf_tcp_recv_blob(ctx->tcp_fd, &ctx->peer_address, &ctx->peer_address_length,
                           PERF_MAX_ADDRESS, timeout_s) != 0)
        return -1;
    if (ctx_ep_create(ctx) != 0)
        return -1;
    if (perf_test_is_rma(ctx->params.test) && perf_rma_connect(ctx) != 0)
        return -1;
    if (perf_test_is_seg(ctx->params.test) && perf_seg_connect(ctx) != 0)
        return -1;
    return ctx->is_server ? 0 : ctx_round_trip(ctx);
}

int perf_ctx_connect_stream(perf_ctx_t *ctx)
{
    if (ctx_ep_create(ctx) != 0)
        return -1;
    return ctx->is_server ? 0 : ctx_round_trip(ctx);
}

const char *perf_ctx_transport(const perf_ctx_t *ctx)
{
    return ferry_ep_transport_name(ctx->ep);
}

/* ---------------------------------------------------------------- am_lat */

int perf_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples)
{
    if (perf_test_is_rma(ctx->params.test))
        return perf_rma_run_lat(ctx, index, samples);
    if (perf_test_is_tag(ctx->params.test))
        return perf_tag_run_lat(ctx, index, samples);
    if (perf_test_is_seg(ctx->params.test))
        return perf_seg_run_lat(ctx, index, samples);
    uint64_t size = ctx->params.sizes[index];
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];
    uint64_t total = warmup + iters;

    samples->count = 0;
    samples->ticks = malloc(iters * sizeof(*samples->ticks));
    if (samples->ticks == NULL) {
        fprintf(stderr, "ferry_perf: out of memory for %llu samples\n", (unsigned long long)iters);
        return -1;
    }
    ctx->expect_length = size;
    ctx->bad = 0;
    perf_progress_start("am_lat", total);
    for (uint64_t i = 0; i < total; i++) {
        bool check = i < warmup;
        uint64_t target = ctx->pongs + 1;
        uint64_t start = perf_ticks();
        if (perf_send(ctx, check ? AM_PING_CHECK : AM_PING, NULL, 0, size) != 0 ||
            perf_wait_for(ctx, &ctx->pongs, target) != 0)
            goto err;
        if (!check)
            samples->ticks[i - warmup] = perf_ticks() - start;
        if ((i & 1023) == 0 || size >= PERF_PROGRESS_EVERY_SIZE)
            perf_progress_update(i);
    }
    perf_progress_end();
    if (perf_window(ctx, 0) != 0)
        goto err;
    if (ctx->bad > 0) {
        fprintf(stderr, "ferry_perf: am_lat %llu B: %llu replies were wrong\n",
                (unsigned long long)size, (unsigned long long)ctx->bad);
        goto err;
    }
    samples->count = iters;
    return 0;

err:
    perf_progress_end();
    free(samples->ticks);
    samples->ticks = NULL;
    return -1;
}

/* ---------------------------------------------------------------- am_bw */

/* Stream count messages, then END; returns after the server's ACK confirmed all of them. */
static int bw_phase(perf_ctx_t *ctx, uint64_t size, uint64_t count, bool check, uint64_t done,
                    uint64_t total)
{
    unsigned id = check ? AM_DATA_CHECK : AM_DATA;
    for (uint64_t i = 0; i < count; i++) {
        if (perf_send(ctx, id, NULL, 0, size) != 0 || perf_window(ctx, PERF_WINDOW - 1) != 0)
            return -1;
        if ((i & 1023) == 0 || size >= PERF_PROGRESS_EVERY_SIZE)
            perf_progress_update(done + i);
    }
    if (perf_send(ctx, AM_END, &count, sizeof(count), 0) != 0 ||
        perf_wait_for(ctx, &ctx->acks, ctx->acks + 1) != 0)
        return -1;
    perf_progress_update(done + count < total ? done + count : total);
    if (ctx->ack.count != count || ctx->ack.bytes != count * size || ctx->ack.bad != 0) {
        fprintf(stderr,
                "ferry_perf: am_bw %llu B: the server got %llu messages, %llu bytes, "
                "%llu wrong; %llu messages, %llu bytes were sent\n",
                (unsigned long long)size, (unsigned long long)ctx->ack.count,
                (unsigned long long)ctx->ack.bytes, (unsigned long long)ctx->ack.bad,
                (unsigned long long)count, (unsigned long long)(count * size));
        return -1;
    }
    return 0;
}

int perf_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps)
{
    if (perf_test_is_rma(ctx->params.test))
        return perf_rma_run_bw(ctx, index, bw_GBps, msgrate_Mps);
    if (perf_test_is_tag(ctx->params.test))
        return perf_tag_run_bw(ctx, index, bw_GBps, msgrate_Mps);
    if (perf_test_is_seg(ctx->params.test))
        return perf_seg_run_bw(ctx, index, bw_GBps, msgrate_Mps);
    uint64_t size = ctx->params.sizes[index];
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];
    int result = -1;

    perf_progress_start("am_bw", warmup + iters);
    if (bw_phase(ctx, size, warmup, true, 0, warmup + iters) != 0)
        goto out;
    uint64_t start = perf_now_ns();
    if (bw_phase(ctx, size, iters, false, warmup, warmup + iters) != 0)
        goto out;
    uint64_t elapsed = perf_now_ns() - start;
    if (perf_window(ctx, 0) != 0)
        goto out;
    perf_rates(size, iters, elapsed, bw_GBps, msgrate_Mps);
    result = 0;
out:
    perf_progress_end();
    return result;
}

/* ---------------------------------------------------------------- server */

int perf_serve(perf_ctx_t *ctx)
{
    uint64_t answered_pings = 0, answered_ends = 0;
    while (!ctx->bye) {
        if (ctx->ctrls > ctx->ctrls_done) {
            if (perf_rma_serve(ctx) != 0)
                return -1;
            continue;
        }
        if (ctx->tag_ctrls > ctx->tag_ctrls_done) {
            if (perf_tag_serve(ctx) != 0)
                return -1;
            continue;
        }
        if (ctx->seg_ctrls > ctx->seg_ctrls_done) {
            if (perf_seg_serve(ctx) != 0)
                return -1;
            continue;
        }
        if (ctx->pings > answered_pings) {
            answered_pings = ctx->pings;
            if (perf_send(ctx, ctx->ping_check ? AM_PONG_CHECK : AM_PONG, NULL, 0,
                          ctx->ping_length) != 0 ||
                perf_window(ctx, PERF_WINDOW - 1) != 0)
                return -1;
            continue;
        }
        if (ctx->ends > answered_ends) {
            perf_ack_t ack = {.count = ctx->data_count, .bytes = ctx->data_bytes, .bad = ctx->bad};
            answered_ends++;
            ctx->data_count = ctx->data_bytes = ctx->bad = 0;
            if (perf_send(ctx, AM_ACK, &ack, sizeof(ack), 0) != 0)
                return -1;
            continue;
        }
        if (perf_poll(ctx, false) != 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- teardown */

int perf_ctx_finish(perf_ctx_t *ctx, bool is_server)
{
    ferry_completion_t *closed = &ctx->close_comp;
    ferry_status_t status;

    /* the client's disconnect travels before its goodbye */
    if (perf_test_is_seg(ctx->params.test) && perf_seg_finish(ctx) != 0)
        return -1;
    ctx->closing = true;
    if (!is_server && perf_send(ctx, AM_BYE, NULL, 0, 0) != 0)
        return -1;
    if (perf_window(ctx, 0) != 0)
        return -1;
    *closed = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    status = ferry_ep_close(ctx->ep, 0, closed);
    if (status == FERRY_OK)
        closed->count = 0;
    else if (status != FERRY_INPROGRESS) {
        perf_fail(ctx, status, "ferry_ep_close");
        return -1;
    }
    /* our close is done when what we sent is delivered; then (stream 0, which destroys the
     * worker) wait for the peer's closes, so that destroying our worker does not look like a
     * crash to the peer */
    while (__atomic_load_n(&closed->count, __ATOMIC_ACQUIRE) > 0 ||
           (ctx->stream == 0 && !__atomic_load_n(&ctx->peer_closed, __ATOMIC_ACQUIRE))) {
        if (perf_poll(ctx, false) != 0)
            return -1;
    }
    if (closed->status != FERRY_OK) {
        perf_fail(ctx, closed->status, "ferry_ep_close completed");
        return -1;
    }
    if (ctx->bad_total > 0) {
        fprintf(stderr, "ferry_perf: %llu messages had a wrong length or wrong bytes\n",
                (unsigned long long)ctx->bad_total);
        return -1;
    }
    return 0;
}

void perf_ctx_destroy(perf_ctx_t *ctx)
{
    if (ctx == NULL)
        return;
    /* a failed run may leave one-sided operations in flight with the key: end them first */
    if (ctx->ep != NULL && (ctx->rma_comp.count > 0 || ctx->flush_comp.count > 0))
        ferry_ep_close(ctx->ep, FERRY_EP_CLOSE_FORCE, NULL);
    perf_seg_close(ctx);           /* maps, queue, remote and local segment: before the endpoint */
    ferry_rkey_release(ctx->rkey); /* before its endpoint */
    ferry_ep_destroy(ctx->ep);
    if (ctx->stream == 0) /* the other streams' are gone by now (perf_streams_destroy) */
        ferry_worker_destroy(ctx->worker); /* completes posted receives: before buffers go */
    perf_rma_destroy(ctx);
    perf_tag_destroy(ctx);
    perf_seg_destroy(ctx);
    if (ctx->stream == 0)
        ferry_context_destroy(ctx->context);
    free(ctx->peer_address);
    free(ctx->pattern);
    free(ctx);
}
