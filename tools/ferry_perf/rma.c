/* The one-sided tests: the registered memory of both sides, the remote keys, the control
 * messages through which the client has the server fill and check its memory, and both sides
 * of put_lat, get_lat, put_bw, get_bw, atomic_lat and atomic_rate.
 *
 * Memory: each side has a region of the largest test size (at least 8 bytes) with all access,
 * from ferry_mem_alloc or malloc + ferry_mem_register (--mem), whose packed key it sends over
 * the TCP connection, and a local buffer of the same size (the source of its puts, the
 * destination of its gets). Every operation addresses offset 0 of the peer's region.
 *
 * Checks: each run has its own pattern (a seed 1..255; byte i is perf_pattern_byte(i) ^ seed, seed
 * 0 means zeros), and its bytes are checked when the run is over: puts by the server (CHECK),
 * gets by the client against what the server wrote (FILL); counters by both (CHECK_WORD).
 * A path that moves no bytes, the wrong bytes, or loses an atomic fails the run.
 *
 * Control messages (AM_RMA_CTRL, one at a time, each answered with AM_RMA_REPLY):
 *   FILL        the server writes the pattern into [0, length) of its region
 *   CHECK       the server compares [0, length) with the pattern (the last byte with value)
 *   CHECK_WORD  the server reads the size-byte word at offset 0 and compares it with value
 *   PINGPONG    the server answers count put_lat round trips, flushes, then answers */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "perf.h"

#define RMA_PAGE 4096
#define RMA_HUGE_PAGE (2u << 20)
/* Operations at least this large update the progress line every iteration (else every 1024). */
#define RMA_PROGRESS_EVERY_SIZE 65536

typedef enum perf_ctrl_op {
    CTRL_FILL = 1,
    CTRL_CHECK,
    CTRL_CHECK_WORD,
    CTRL_PINGPONG,
} perf_ctrl_op_t;

typedef enum rma_kind {
    RMA_PUT,
    RMA_GET,
    RMA_FETCH_ADD,
    RMA_POST_ADD,
} rma_kind_t;

static const char *const rma_call[] = {
    [RMA_PUT] = "ferry_put",
    [RMA_GET] = "ferry_get",
    [RMA_FETCH_ADD] = "ferry_atomic_fetch(FERRY_ATOMIC_ADD)",
    [RMA_POST_ADD] = "ferry_atomic_post(FERRY_ATOMIC_ADD)",
};

/* ---------------------------------------------------------------- patterns */

static void rma_fill(perf_ctx_t *ctx, uint8_t *p, size_t length, uint64_t seed)
{
    perf_pattern_fill(&ctx->rma_pattern, p, length, seed);
}

/* The number of bytes of [0, length) that differ from the pattern of seed, except the last
 * one, which must be last unless that is PERF_NO_LAST; *first_p: the first wrong offset. */
static uint64_t rma_check(perf_ctx_t *ctx, const uint8_t *p, size_t length, uint64_t seed,
                          uint64_t last, uint64_t *first_p)
{
    size_t plain = last != PERF_NO_LAST && length > 0 ? length - 1 : length;
    uint64_t first, bad = perf_pattern_check(&ctx->rma_pattern, p, plain, seed, &first);
    if (plain < length && p[plain] != (uint8_t)last && bad++ == 0)
        first = plain;
    *first_p = first;
    return bad;
}

static uint64_t rma_next_seed(perf_ctx_t *ctx)
{
    ctx->next_seed = ctx->next_seed % 255 + 1;
    return ctx->next_seed;
}

/* ---------------------------------------------------------------- memory and keys */

/* A page-aligned buffer whose pages are there (written once). Like ucx_perftest's buffers,
 * one of 2 MiB or more asks for transparent huge pages unless --no-thp: cross-memory attach
 * then walks 512 times fewer pages. */
void *perf_buffer_alloc(const perf_ctx_t *ctx, size_t size)
{
    bool huge = !ctx->params.no_thp && size >= RMA_HUGE_PAGE;
    size_t align = huge ? RMA_HUGE_PAGE : RMA_PAGE;
    void *p = aligned_alloc(align, (size + align - 1) / align * align);
    if (p == NULL)
        return NULL;
    if (huge)
        madvise(p, (size + align - 1) / align * align, MADV_HUGEPAGE); /* a hint: may fail */
    memset(p, 0, size);
    return p;
}

int perf_rma_create(perf_ctx_t *ctx)
{
    size_t size = 8; /* an atomic word at least */
    ferry_status_t status;
    void *region = NULL;

    for (unsigned i = 0; i < ctx->params.size_count; i++) {
        if (ctx->params.sizes[i] > size)
            size = ctx->params.sizes[i];
    }
    ctx->region_size = size;
    ctx->local = perf_buffer_alloc(ctx, size);
    if (perf_pattern_init(&ctx->rma_pattern) != 0 || ctx->local == NULL) {
        fprintf(stderr, "ferry_perf: out of memory for a %zu-byte buffer\n", size);
        goto err_free;
    }
    if (ctx->params.mem == PERF_MEM_ALLOC) {
        status = ferry_mem_alloc(ctx->context, size, FERRY_ACCESS_ALL, &ctx->mem, &region);
        if (status != FERRY_OK) {
            fprintf(stderr, "ferry_perf: ferry_mem_alloc(%zu bytes): %s\n", size,
                    ferry_status_string(status));
            goto err_free;
        }
    } else {
        ctx->region_block = perf_buffer_alloc(ctx, size);
        if (ctx->region_block == NULL) {
            fprintf(stderr, "ferry_perf: out of memory for a %zu-byte region\n", size);
            goto err_free;
        }
        ferry_iov_t iov = {.buffer = ctx->region_block, .length = size};
        status = ferry_mem_register(ctx->context, &iov, 1, FERRY_ACCESS_ALL, 0, &ctx->mem);
        if (status != FERRY_OK) {
            fprintf(stderr, "ferry_perf: ferry_mem_register(%zu bytes): %s\n", size,
                    ferry_status_string(status));
            goto err_free;
        }
        region = ctx->region_block;
    }
    ctx->region = region;
    memset(ctx->region, 0, size); /* its pages are there before anything is measured */
    return 0;

err_free:
    free(ctx->region_block);
    free(ctx->local);
    perf_pattern_cleanup(&ctx->rma_pattern);
    ctx->region_block = ctx->local = NULL;
    return -1;
}

void perf_rma_destroy(perf_ctx_t *ctx)
{
    if (ctx->mem != NULL)
        ferry_mem_deregister(ctx->mem); /* frees ferry_mem_alloc's memory */
    free(ctx->region_block);
    free(ctx->local);
    perf_pattern_cleanup(&ctx->rma_pattern);
    ctx->mem = NULL;
    ctx->region = NULL;
    ctx->region_block = ctx->local = NULL;
}

/* Key message: the region's length (u64, little-endian), then the packed key. */
int perf_rma_connect(perf_ctx_t *ctx)
{
    unsigned timeout_s = (unsigned)(ctx->timeout_ns / 1000000000ull);
    void *key, *blob;
    size_t key_length, length;
    ferry_status_t status = ferry_rkey_pack(ctx->mem, &key, &key_length);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_rkey_pack: %s\n", ferry_status_string(status));
        return -1;
    }
    uint8_t *out = malloc(8 + key_length);
    if (out == NULL) {
        ferry_rkey_buffer_release(key);
        fprintf(stderr, "ferry_perf: out of memory\n");
        return -1;
    }
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)((uint64_t)ctx->region_size >> (8 * i));
    memcpy(out + 8, key, key_length);
    ferry_rkey_buffer_release(key);
    int rc = perf_tcp_send_blob(ctx->tcp_fd, out, 8 + key_length, timeout_s);
    free(out);
    if (rc != 0 ||
        perf_tcp_recv_blob(ctx->tcp_fd, &blob, &length, 8 + PERF_MAX_RKEY, timeout_s) != 0)
        return -1;
    const uint8_t *in = blob;
    int result = -1;
    if (length < 8) {
        fprintf(stderr, "ferry_perf: malformed key message from the peer (%zu bytes)\n", length);
        goto out;
    }
    ctx->peer_region_size = 0;
    for (int i = 0; i < 8; i++)
        ctx->peer_region_size |= (uint64_t)in[i] << (8 * i);
    if (ctx->peer_region_size < ctx->region_size) {
        fprintf(stderr, "ferry_perf: the peer's region has %llu bytes, %zu are needed\n",
                (unsigned long long)ctx->peer_region_size, ctx->region_size);
        goto out;
    }
    status = ferry_rkey_unpack(ctx->ep, in + 8, length - 8, &ctx->rkey);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_rkey_unpack (the peer's key, %zu bytes): %s\n",
                length - 8, ferry_status_string(status));
        goto out;
    }
    result = 0;
out:
    free(blob);
    return result;
}

/* ---------------------------------------------------------------- operations */

/* Start one operation on offset 0 of the peer's region, counted in ctx->rma_comp while it is
 * in flight; retries FERRY_ERR_NO_RESOURCE. */
static int rma_issue(perf_ctx_t *ctx, rma_kind_t kind, size_t size, uint64_t value,
                     uint64_t *result)
{
    for (;;) {
        ferry_status_t status = FERRY_ERR_INVALID_PARAM;
        ctx->rma_comp.count++;
        switch (kind) {
        case RMA_PUT:
            status = ferry_put(ctx->ep, ctx->local, size, 0, ctx->rkey, &ctx->rma_comp);
            break;
        case RMA_GET:
            status = ferry_get(ctx->ep, ctx->local, size, 0, ctx->rkey, &ctx->rma_comp);
            break;
        case RMA_FETCH_ADD:
            status = ferry_atomic_fetch(ctx->ep, FERRY_ATOMIC_ADD, value, 0, size, 0, ctx->rkey,
                                        result, &ctx->rma_comp);
            break;
        case RMA_POST_ADD:
            status = ferry_atomic_post(ctx->ep, FERRY_ATOMIC_ADD, value, size, 0, ctx->rkey,
                                       &ctx->rma_comp);
            break;
        }
        if (status == FERRY_INPROGRESS) {
            ctx->idle_since_ns = 0;
            return 0;
        }
        ctx->rma_comp.count--;
        if (status == FERRY_OK) {
            ctx->idle_since_ns = 0;
            return 0;
        }
        if (status != FERRY_ERR_NO_RESOURCE) {
            perf_fail(ctx, status, rma_call[kind]);
            return -1;
        }
        if (perf_poll(ctx, true) != 0)
            return -1;
    }
}

/* Wait until at most limit operations are in flight; one that failed fails the run. */
static int rma_window(perf_ctx_t *ctx, int64_t limit)
{
    while (ctx->rma_comp.count > limit) {
        if (perf_poll(ctx, false) != 0)
            return -1;
    }
    if (ctx->rma_comp.status != FERRY_OK) {
        perf_fail(ctx, ctx->rma_comp.status, "a one-sided operation completed");
        return -1;
    }
    return 0;
}

/* Remote completion of everything issued on the endpoint, and local completion too. */
static int rma_flush(perf_ctx_t *ctx)
{
    ferry_completion_t *done = &ctx->flush_comp;
    *done = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_flush(ctx->ep, done);
    if (status == FERRY_OK)
        done->count = 0;
    else if (status != FERRY_INPROGRESS) {
        perf_fail(ctx, status, "ferry_ep_flush");
        return -1;
    }
    while (done->count > 0) {
        if (perf_poll(ctx, false) != 0)
            return -1;
    }
    if (done->status != FERRY_OK) {
        perf_fail(ctx, done->status, "ferry_ep_flush completed");
        return -1;
    }
    return rma_window(ctx, 0);
}

/* Spin until *byte == value, progressing the worker in between (a target-executed put to us
 * is performed by our progress). */
static int rma_wait_byte(perf_ctx_t *ctx, const uint8_t *byte, uint8_t value)
{
    while (__atomic_load_n(byte, __ATOMIC_ACQUIRE) != value) {
        if (perf_poll(ctx, true) != 0)
            return -1;
    }
    ctx->idle_since_ns = 0;
    return 0;
}

/* count operations of kind, at most PERF_RMA_WINDOW in flight, then a flush. */
static int rma_stream(perf_ctx_t *ctx, rma_kind_t kind, size_t size, uint64_t count, uint64_t done)
{
    for (uint64_t i = 0; i < count; i++) {
        if (rma_issue(ctx, kind, size, 1, NULL) != 0 || rma_window(ctx, PERF_RMA_WINDOW - 1) != 0)
            return -1;
        if ((i & 1023) == 0 || size >= RMA_PROGRESS_EVERY_SIZE)
            perf_progress_update(done + i);
    }
    return rma_flush(ctx);
}

/* ---------------------------------------------------------------- control messages */

ferry_status_t perf_rma_on_ctrl(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)data, (void)length, (void)params;
    if (perf_ctrl_accept(ctx, ctx->is_server && ctx->ctrls == ctx->ctrls_done, header,
                         header_length, &ctx->ctrl, sizeof(ctx->ctrl), ctx->ctrls - ctx->ctrls_done,
                         "control message"))
        ctx->ctrls++;
    return FERRY_OK;
}

ferry_status_t perf_rma_on_reply(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)data, (void)length, (void)params;
    if (perf_ctrl_accept(ctx, !ctx->is_server, header, header_length, &ctx->reply,
                         sizeof(ctx->reply), 0, "control reply"))
        ctx->replies++;
    return FERRY_OK;
}

static int rma_ctrl_send(perf_ctx_t *ctx, const perf_ctrl_t *ctrl)
{
    return perf_send(ctx, AM_RMA_CTRL, ctrl, sizeof(*ctrl), 0);
}

/* Send a request and wait for its answer (in ctx->reply). */
static int rma_ctrl(perf_ctx_t *ctx, const perf_ctrl_t *ctrl)
{
    uint64_t target = ctx->replies + 1;
    if (rma_ctrl_send(ctx, ctrl) != 0 || perf_wait_for(ctx, &ctx->replies, target) != 0)
        return -1;
    return 0;
}

/* The server's half of put_lat: wait for the client's last byte, put the same size back. */
static int rma_serve_pingpong(perf_ctx_t *ctx, const perf_ctrl_t *c)
{
    size_t size = (size_t)c->length;
    const uint8_t *last = ctx->region + size - 1;
    uint8_t seq = 0;

    rma_fill(ctx, ctx->local, size, c->seed);
    for (uint64_t i = 0; i < c->count; i++) {
        seq = seq == 255 ? 1 : seq + 1;
        /* the previous put must be done with the buffer before its last byte changes */
        if (rma_wait_byte(ctx, last, seq) != 0 || rma_window(ctx, 0) != 0)
            return -1;
        ctx->local[size - 1] = seq;
        if (rma_issue(ctx, RMA_PUT, size, 0, NULL) != 0)
            return -1;
    }
    return rma_flush(ctx);
}

int perf_rma_serve(perf_ctx_t *ctx)
{
    perf_ctrl_t c = ctx->ctrl;
    perf_ctrl_reply_t reply = {.bad = 0, .first_bad = UINT64_MAX, .value = 0};

    ctx->ctrls_done = ctx->ctrls;
    if (c.length > ctx->region_size || (c.op == CTRL_PINGPONG && c.length == 0) ||
        (c.op == CTRL_CHECK_WORD && c.size != 4 && c.size != 8)) {
        fprintf(stderr,
                "ferry_perf: malformed request from the client (op %u, %llu bytes, word %u; "
                "the region has %zu)\n",
                c.op, (unsigned long long)c.length, c.size, ctx->region_size);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, "control message");
        return -1;
    }
    switch (c.op) {
    case CTRL_FILL:
        rma_fill(ctx, ctx->region, (size_t)c.length, c.seed);
        break;
    case CTRL_CHECK:
        reply.bad =
            rma_check(ctx, ctx->region, (size_t)c.length, c.seed, c.value, &reply.first_bad);
        break;
    case CTRL_CHECK_WORD:
        reply.value = c.size == 4
                          ? __atomic_load_n((uint32_t *)(void *)ctx->region, __ATOMIC_SEQ_CST)
                          : __atomic_load_n((uint64_t *)(void *)ctx->region, __ATOMIC_SEQ_CST);
        reply.bad = reply.value != c.value;
        break;
    case CTRL_PINGPONG:
        if (rma_serve_pingpong(ctx, &c) != 0)
            return -1;
        break;
    default:
        fprintf(stderr, "ferry_perf: unknown request %u from the client\n", c.op);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, "control message");
        return -1;
    }
    return perf_send(ctx, AM_RMA_REPLY, &reply, sizeof(reply), 0);
}

/* ---------------------------------------------------------------- client: checks */

static int rma_report_bad(const char *test, uint64_t size, const char *where, uint64_t bad,
                          uint64_t first)
{
    fprintf(stderr,
            "ferry_perf: %s %llu B: %llu wrong byte(s) in %s, the first at offset %llu: the "
            "transfers did not deliver the data\n",
            test, (unsigned long long)size, (unsigned long long)bad, where,
            (unsigned long long)first);
    return -1;
}

/* The server checks [0, size) of its region against seed (last byte: last). */
static int rma_server_check(perf_ctx_t *ctx, const char *test, uint64_t size, uint64_t seed,
                            uint64_t last)
{
    perf_ctrl_t check = {.op = CTRL_CHECK, .seed = seed, .length = size, .value = last};
    if (rma_ctrl(ctx, &check) != 0)
        return -1;
    if (ctx->reply.bad != 0)
        return rma_report_bad(test, size, "the server's memory", ctx->reply.bad,
                              ctx->reply.first_bad);
    return 0;
}

/* The server checks the counter at offset 0. */
static int rma_server_check_word(perf_ctx_t *ctx, const char *test, size_t size, uint64_t value)
{
    perf_ctrl_t check = {.op = CTRL_CHECK_WORD, .size = (uint32_t)size, .value = value};
    if (rma_ctrl(ctx, &check) != 0)
        return -1;
    if (ctx->reply.bad != 0) {
        fprintf(stderr,
                "ferry_perf: %s %zu B: the server's counter is %llu, %llu was expected: "
                "atomics were lost or doubled\n",
                test, size, (unsigned long long)ctx->reply.value, (unsigned long long)value);
        return -1;
    }
    return 0;
}

/* The counter's value now (a fetch-add of 0). */
static int rma_read_counter(perf_ctx_t *ctx, size_t size, uint64_t *value_p)
{
    uint64_t value = 0;
    if (rma_issue(ctx, RMA_FETCH_ADD, size, 0, &value) != 0 || rma_window(ctx, 0) != 0)
        return -1;
    *value_p = value;
    return 0;
}

static uint64_t rma_word_mask(size_t size)
{
    return size == 4 ? UINT32_MAX : UINT64_MAX;
}

/* ---------------------------------------------------------------- client: latency tests */

static int rma_put_lat(perf_ctx_t *ctx, size_t size, uint64_t warmup, uint64_t total,
                       perf_samples_t *samples)
{
    uint64_t mine = rma_next_seed(ctx), theirs = rma_next_seed(ctx);
    perf_ctrl_t clear = {.op = CTRL_FILL, .seed = 0, .length = size};
    perf_ctrl_t pingpong = {.op = CTRL_PINGPONG, .seed = theirs, .length = size, .count = total};
    const uint8_t *last = ctx->region + size - 1;
    uint64_t first, bad;
    uint8_t seq = 0;

    /* both last bytes start at 0, which no round trip uses */
    memset(ctx->region, 0, size);
    if (rma_ctrl(ctx, &clear) != 0)
        return -1;
    rma_fill(ctx, ctx->local, size, mine);
    uint64_t finished = ctx->replies + 1;
    if (rma_ctrl_send(ctx, &pingpong) != 0)
        return -1;
    for (uint64_t i = 0; i < total; i++) {
        seq = seq == 255 ? 1 : seq + 1;
        if (rma_window(ctx, 0) != 0) /* the previous put is done with the buffer */
            return -1;
        ctx->local[size - 1] = seq;
        uint64_t start = perf_ticks();
        if (rma_issue(ctx, RMA_PUT, size, 0, NULL) != 0 || rma_wait_byte(ctx, last, seq) != 0)
            return -1;
        if (i >= warmup)
            samples->ticks[i - warmup] = perf_ticks() - start;
        if ((i & 1023) == 0 || size >= RMA_PROGRESS_EVERY_SIZE)
            perf_progress_update(i);
    }
    /* the server answers PINGPONG once its puts completed remotely */
    if (rma_flush(ctx) != 0 || perf_wait_for(ctx, &ctx->replies, finished) != 0)
        return -1;
    bad = rma_check(ctx, ctx->region, size, theirs, seq, &first);
    if (bad != 0)
        return rma_report_bad("put_lat", size, "the client's memory", bad, first);
    return rma_server_check(ctx, "put_lat", size, mine, seq);
}

static int rma_get_lat(perf_ctx_t *ctx, size_t size, uint64_t warmup, uint64_t total,
                       perf_samples_t *samples)
{
    uint64_t seed = rma_next_seed(ctx), first, bad;
    perf_ctrl_t fill = {.op = CTRL_FILL, .seed = seed, .length = size};

    if (rma_ctrl(ctx, &fill) != 0)
        return -1;
    memset(ctx->local, 0, size);
    for (uint64_t i = 0; i < total; i++) {
        uint64_t start = perf_ticks();
        if (rma_issue(ctx, RMA_GET, size, 0, NULL) != 0 || rma_window(ctx, 0) != 0)
            return -1;
        if (i >= warmup)
            samples->ticks[i - warmup] = perf_ticks() - start;
        if ((i & 1023) == 0 || size >= RMA_PROGRESS_EVERY_SIZE)
            perf_progress_update(i);
    }
    if (rma_flush(ctx) != 0)
        return -1;
    bad = rma_check(ctx, ctx->local, size, seed, PERF_NO_LAST, &first);
    if (bad != 0)
        return rma_report_bad("get_lat", size, "the gotten data", bad, first);
    return 0;
}

static int rma_atomic_lat(perf_ctx_t *ctx, size_t size, uint64_t warmup, uint64_t total,
                          perf_samples_t *samples)
{
    uint64_t mask = rma_word_mask(size), base, result = 0, wrong = 0, first_wrong = 0;

    if (rma_read_counter(ctx, size, &base) != 0)
        return -1;
    for (uint64_t i = 0; i < total; i++) {
        uint64_t start = perf_ticks();
        if (rma_issue(ctx, RMA_FETCH_ADD, size, 1, &result) != 0 || rma_window(ctx, 0) != 0)
            return -1;
        if (i >= warmup)
            samples->ticks[i - warmup] = perf_ticks() - start;
        if ((result & mask) != ((base + i) & mask) && wrong++ == 0)
            first_wrong = i;
        if ((i & 1023) == 0)
            perf_progress_update(i);
    }
    if (wrong != 0) {
        fprintf(stderr,
                "ferry_perf: atomic_lat %zu B: %llu fetch-adds returned a wrong old value, the "
                "first at iteration %llu\n",
                size, (unsigned long long)wrong, (unsigned long long)first_wrong);
        return -1;
    }
    return rma_server_check_word(ctx, "atomic_lat", size, (base + total) & mask);
}

int perf_rma_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples)
{
    perf_test_t test = ctx->params.test;
    size_t size = (size_t)ctx->params.sizes[index];
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];
    int rc;

    samples->count = 0;
    samples->ticks = malloc(iters * sizeof(*samples->ticks));
    if (samples->ticks == NULL) {
        fprintf(stderr, "ferry_perf: out of memory for %llu samples\n", (unsigned long long)iters);
        return -1;
    }
    perf_progress_start(perf_test_name(test), warmup + iters);
    if (test == PERF_TEST_PUT_LAT)
        rc = rma_put_lat(ctx, size, warmup, warmup + iters, samples);
    else if (test == PERF_TEST_GET_LAT)
        rc = rma_get_lat(ctx, size, warmup, warmup + iters, samples);
    else
        rc = rma_atomic_lat(ctx, size, warmup, warmup + iters, samples);
    perf_progress_end();
    if (rc != 0) {
        free(samples->ticks);
        samples->ticks = NULL;
        return -1;
    }
    samples->count = iters;
    return 0;
}

/* ---------------------------------------------------------------- client: streaming tests */

int perf_rma_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps)
{
    perf_test_t test = ctx->params.test;
    const char *name = perf_test_name(test);
    size_t size = (size_t)ctx->params.sizes[index];
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];
    uint64_t total = warmup + iters;
    uint64_t seed = rma_next_seed(ctx), base = 0, first, bad;
    rma_kind_t kind = test == PERF_TEST_PUT_BW   ? RMA_PUT
                      : test == PERF_TEST_GET_BW ? RMA_GET
                                                 : RMA_POST_ADD;
    int result = -1;

    /* what the operations move, and what the check expects */
    if (kind == RMA_PUT) {
        rma_fill(ctx, ctx->local, size, seed);
    } else if (kind == RMA_GET) {
        perf_ctrl_t fill = {.op = CTRL_FILL, .seed = seed, .length = size};
        if (rma_ctrl(ctx, &fill) != 0)
            return -1;
        memset(ctx->local, 0, size);
    } else if (rma_read_counter(ctx, size, &base) != 0) {
        return -1;
    }

    perf_progress_start(name, total);
    if (rma_stream(ctx, kind, size, warmup, 0) != 0)
        goto out;
    uint64_t start = perf_now_ns();
    if (rma_stream(ctx, kind, size, iters, warmup) != 0)
        goto out;
    uint64_t elapsed = perf_now_ns() - start;
    perf_progress_end();

    if (kind == RMA_PUT) {
        if (rma_server_check(ctx, name, size, seed, PERF_NO_LAST) != 0)
            goto out;
    } else if (kind == RMA_GET) {
        bad = rma_check(ctx, ctx->local, size, seed, PERF_NO_LAST, &first);
        if (bad != 0) {
            rma_report_bad(name, size, "the gotten data", bad, first);
            goto out;
        }
    } else {
        uint64_t mask = rma_word_mask(size), now;
        if (rma_read_counter(ctx, size, &now) != 0)
            goto out;
        if ((now & mask) != ((base + total) & mask)) {
            fprintf(stderr,
                    "ferry_perf: atomic_rate %zu B: the counter went from %llu to %llu after "
                    "%llu adds of 1: atomics were lost or doubled\n",
                    size, (unsigned long long)base, (unsigned long long)now,
                    (unsigned long long)total);
            goto out;
        }
        if (rma_server_check_word(ctx, name, size, (base + total) & mask) != 0)
            goto out;
    }
    perf_rates(size, iters, elapsed, bw_GBps, msgrate_Mps);
    if (kind == RMA_POST_ADD)
        *bw_GBps = NAN; /* a counter's adds: a rate, not a bandwidth */
    result = 0;
out:
    perf_progress_end();
    return result;
}
