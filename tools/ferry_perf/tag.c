/* The tag tests: both sides of tag_lat and tag_bw over ferry_tag_send / ferry_tag_recv.
 *
 * A run is made of phases (the warm-up, then the measured iterations), each driven by control
 * messages (active messages AM_TAG_CTRL from the client, AM_TAG_REPLY from the server):
 *   START_LAT / START_BW {size, count, seed[, window]}  the server fills its send buffer with
 *            the phase's pattern, posts its first receives and answers READY: nothing is
 *            timed before the receives are in place;
 *   RECEIVED {count, bytes, bad}  tag_bw: the last message is in place (ends the timing);
 *   RESULT {count, bytes, bad}  the server's report once it checked the phase's data.
 * tag_lat: the client posts the receive of the PONG, sends a PING and waits for both; the
 *          server keeps two receives posted (the next PING never finds none) and answers each
 *          PING with a PONG. One sample = one round trip.
 * tag_bw:  the client keeps PERF_TAG_WINDOW sends in flight; the server keeps as many receives
 *          posted (re-posting each as it completes, in order); the client's clock stops when
 *          RECEIVED says the last message is in place. As in ucx_perftest's tag_bw and OSU's
 *          osu_bw, all the receives target one buffer (and all the sends read one): the
 *          figures include no cache misses that a real application's many buffers would add
 *          at sizes that fit in the caches, for any of the tools compared.
 *
 * Checks: every phase has its own pattern (a seed 1..255), of a period longer than any message
 * (a misplaced or missing 64 KiB chunk shows). Every completed receive is checked for its
 * status, length and tag at once; the bytes of the receive buffers are compared with the
 * phase's pattern when the phase is over (tag_lat: the client's PONG buffer and both of the
 * server's PING buffers; tag_bw: the server's receive buffer), outside the timing. A receive
 * buffer holds an older phase's pattern before the phase, so a path that moves nothing, or the
 * wrong bytes, fails the run. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "perf.h"

#define TAG_ALIGN 4096u
#define TAG_PROGRESS_EVERY_SIZE 65536

#define TAG_BASE 0x6665727279000000ull /* "ferry\0\0\0": seed << 8 | kind below */
enum { TAG_KIND_PING = 1, TAG_KIND_PONG = 2, TAG_KIND_DATA = 3 };

typedef enum perf_tag_op {
    TAG_OP_START_LAT = 1,
    TAG_OP_START_BW,
    TAG_OP_READY,
    TAG_OP_RECEIVED,
    TAG_OP_RESULT,
} perf_tag_op_t;

/* One posted receive. */
typedef struct tag_slot {
    ferry_completion_t comp; /* count 1 while posted */
    ferry_tag_info_t info;
    uint8_t *buffer;
} tag_slot_t;

struct perf_tag {
    uint8_t *send; /* the pattern of the phase (max_size bytes) */
    uint8_t *recv; /* receive buffers: recv_count of max_size (rounded up to TAG_ALIGN) each */
    size_t max_size, stride;
    unsigned recv_count;
    void *send_block, *recv_block; /* to free */
    perf_keyed_t keyed;            /* the pattern (keyed.h) */
    ferry_completion_t sends;      /* of the tagged sends in flight (perf_in_flight) */
    uint64_t sends_pending;        /* tagged sends that returned FERRY_INPROGRESS */
    tag_slot_t slots[PERF_TAG_WINDOW];
    uint64_t next_seed;
};

/* ---------------------------------------------------------------- patterns */

/* the pattern: keyed.h */

static uint64_t tag_next_seed(perf_tag_t *t)
{
    t->next_seed = t->next_seed % 255 + 1;
    return t->next_seed;
}

/* --threads: bits 16..23 say whose stream a message belongs to */
static uint64_t tag_of(const perf_ctx_t *ctx, uint64_t seed, unsigned kind)
{
    return TAG_BASE | (uint64_t)ctx->stream << 16 | (seed << 8) | kind;
}

/* ---------------------------------------------------------------- buffers */

int perf_tag_create(perf_ctx_t *ctx)
{
    perf_tag_t *t = calloc(1, sizeof(*t));
    uint64_t recv_bytes = 0;

    if (t == NULL)
        goto err_nomem;
    for (unsigned i = 0; i < ctx->params.size_count; i++) {
        uint64_t size = ctx->params.sizes[i];
        if (size > t->max_size)
            t->max_size = size;
    }
    t->stride = (t->max_size + TAG_ALIGN - 1) / TAG_ALIGN * TAG_ALIGN;
    /* client: one PONG buffer; server: two PING buffers (tag_lat) or one (tag_bw) */
    t->recv_count = ctx->is_server && ctx->params.test == PERF_TEST_TAG_LAT ? 2 : 1;
    recv_bytes = (uint64_t)t->stride * t->recv_count;
    if (perf_keyed_init(&t->keyed) != 0)
        goto err_free_t;
    t->send_block = perf_buffer_alloc(ctx, t->max_size);
    t->recv_block = perf_buffer_alloc(ctx, (size_t)recv_bytes);
    if (t->send_block == NULL || t->recv_block == NULL)
        goto err_free;
    t->send = t->send_block;
    t->recv = t->recv_block;
    t->sends.count = PERF_COMP_BIAS;
    t->sends.status = FERRY_OK;
    ctx->tag = t;
    return 0;

err_free:
    perf_keyed_cleanup(&t->keyed);
    free(t->send_block);
    free(t->recv_block);
err_free_t:
    free(t);
err_nomem:
    fprintf(stderr, "ferry_perf: out of memory for the message buffers (%llu bytes and more)\n",
            (unsigned long long)recv_bytes);
    return -1;
}

void perf_tag_destroy(perf_ctx_t *ctx)
{
    perf_tag_t *t = ctx->tag;
    if (t == NULL)
        return;
    perf_keyed_cleanup(&t->keyed);
    free(t->send_block);
    free(t->recv_block);
    free(t);
    ctx->tag = NULL;
}

/* ---------------------------------------------------------------- control messages */

ferry_status_t perf_tag_on_ctrl(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)data, (void)length, (void)params;
    if (perf_ctrl_accept(ctx, ctx->is_server && ctx->tag_ctrls == ctx->tag_ctrls_done, header,
                         header_length, &ctx->tag_ctrl, sizeof(ctx->tag_ctrl),
                         ctx->tag_ctrls - ctx->tag_ctrls_done, "tag control message"))
        perf_count(&ctx->tag_ctrls);
    return FERRY_OK;
}

ferry_status_t perf_tag_on_reply(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)data, (void)length, (void)params;
    perf_tag_ctrl_t reply = {.op = PERF_TAG_OPS};
    if (header_length == sizeof(reply))
        memcpy(&reply, header, sizeof(reply));
    if (!perf_ctrl_accept(ctx, !ctx->is_server && reply.op < PERF_TAG_OPS, header, header_length,
                          &reply, sizeof(reply), 0, "tag control reply"))
        return FERRY_OK;
    /* kept per kind: READY, RECEIVED and RESULT may all come in one progress call */
    ctx->tag_reply[reply.op] = reply;
    perf_count(&ctx->tag_replies[reply.op]);
    return FERRY_OK;
}

static int tag_ctrl_send(perf_ctx_t *ctx, unsigned id, const perf_tag_ctrl_t *ctrl)
{
    return perf_send(ctx, id, ctrl, sizeof(*ctrl), 0);
}

/* Client: the number of answers of kind op there will be once the next one came. */
static uint64_t tag_next_reply(const perf_ctx_t *ctx, perf_tag_op_t op)
{
    return ctx->tag_replies[op] + 1;
}

/* Client: wait for the answer of kind op that makes target (ctx->tag_reply[op]). */
static int tag_wait_reply(perf_ctx_t *ctx, perf_tag_op_t op, uint64_t target)
{
    return perf_wait_for(ctx, &ctx->tag_replies[op], target);
}

/* ---------------------------------------------------------------- operations */

/* Send size bytes of the send buffer with tag, counted in t->sends while in flight; retries
 * FERRY_ERR_NO_RESOURCE. */
static int tag_send(perf_ctx_t *ctx, size_t size, uint64_t tag)
{
    perf_tag_t *t = ctx->tag;
    ferry_iov_t iov = {.buffer = t->send, .length = size};
    ferry_tag_send_params_t sync = {.flags = FERRY_TAG_SEND_SYNC};
    int rc;
    do {
        ferry_status_t status = ferry_tag_send_ext(ctx->ep, &iov, 1, tag,
                                                   ctx->params.tag_sync ? &sync : NULL, &t->sends);
        rc = perf_send_status(ctx, status, &t->sends_pending, "ferry_tag_send");
    } while (rc == 1);
    return rc;
}

/* Wait until at most limit sends are in flight; one that failed fails the run. */
static int tag_send_window(perf_ctx_t *ctx, int64_t limit)
{
    perf_tag_t *t = ctx->tag;
    return perf_comp_window(ctx, &t->sends, &t->sends_pending, limit, "a tagged send completed");
}

/* Post a receive of size bytes into slot's buffer for exactly tag. */
static int tag_post(perf_ctx_t *ctx, tag_slot_t *slot, size_t size, uint64_t tag)
{
    ferry_iov_t iov = {.buffer = slot->buffer, .length = size};
    slot->comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    slot->info = (ferry_tag_info_t){.sender = NULL, .tag = 0, .length = SIZE_MAX};
    ferry_peer_id_t source = FERRY_PEER_ANY;
    if (ctx->params.tag_from && ferry_ep_peer_id(ctx->ep, &source) != FERRY_OK)
        source = FERRY_PEER_ANY;
    ferry_status_t status = ferry_tag_recv_from(ctx->worker, source, &iov, 1, tag, UINT64_MAX,
                                                &slot->info, &slot->comp);
    if (status == FERRY_INPROGRESS)
        return 0;
    if (status == FERRY_OK || status == FERRY_ERR_MESSAGE_TRUNCATED) {
        /* an unexpected message was there: delivered now (a truncation fails the check) */
        slot->comp.count = 0;
        slot->comp.status = status;
        return 0;
    }
    perf_fail(ctx, status, "ferry_tag_recv");
    return -1;
}

/* Wait for slot's receive; returns 1 when it completed with the wrong status, length or tag
 * (after saying so once per phase through *reported), 0 when it is right, -1 when the run must
 * stop. */
static int tag_wait_recv(perf_ctx_t *ctx, tag_slot_t *slot, size_t size, uint64_t tag,
                         bool *reported)
{
    while (__atomic_load_n(&slot->comp.count, __ATOMIC_ACQUIRE) > 0) {
        if (perf_poll(ctx, false) != 0)
            return -1;
    }
    if (slot->comp.status == FERRY_OK && slot->info.length == size && slot->info.tag == tag)
        return 0;
    if (!*reported) {
        fprintf(stderr,
                "ferry_perf: a tagged receive of %zu bytes, tag %#llx completed with %s, length "
                "%zu, tag %#llx\n",
                size, (unsigned long long)tag, ferry_status_string(slot->comp.status),
                slot->info.length, (unsigned long long)slot->info.tag);
        *reported = true;
    }
    return 1;
}

static int tag_report_bad(const char *test, size_t size, const char *where, uint64_t bad,
                          uint64_t first)
{
    fprintf(stderr,
            "ferry_perf: %s %zu B: %llu wrong bytes in %s, the first at offset %llu: data "
            "lost, misplaced or stale\n",
            test, size, (unsigned long long)bad, where, (unsigned long long)first);
    return -1;
}

/* ---------------------------------------------------------------- server */

static int tag_serve_lat(perf_ctx_t *ctx, const perf_tag_ctrl_t *c)
{
    perf_tag_t *t = ctx->tag;
    size_t size = (size_t)c->size;
    uint64_t count = c->count, bad = 0, first;
    uint64_t ping = tag_of(ctx, c->seed, TAG_KIND_PING), pong = tag_of(ctx, c->seed, TAG_KIND_PONG);
    unsigned posted = count < 2 ? (unsigned)count : 2;
    bool reported = false;

    perf_keyed_fill(&t->keyed, t->send, size, c->seed ^ 0x80);
    for (unsigned s = 0; s < 2; s++)
        t->slots[s].buffer = t->recv + s * t->stride;
    for (unsigned s = 0; s < posted; s++) {
        if (tag_post(ctx, &t->slots[s], size, ping) != 0)
            return -1;
    }
    perf_tag_ctrl_t ready = {.op = TAG_OP_READY};
    if (tag_ctrl_send(ctx, AM_TAG_REPLY, &ready) != 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        tag_slot_t *slot = &t->slots[i % 2];
        int rc = tag_wait_recv(ctx, slot, size, ping, &reported);
        if (rc < 0)
            return -1;
        bad += (uint64_t)rc;
        if (tag_send(ctx, size, pong) != 0)
            return -1;
        if (i + 2 < count && tag_post(ctx, slot, size, ping) != 0)
            return -1;
        if (tag_send_window(ctx, PERF_TAG_WINDOW - 1) != 0)
            return -1;
    }
    if (tag_send_window(ctx, 0) != 0)
        return -1;
    for (unsigned s = 0; s < posted && bad == 0; s++) {
        uint64_t wrong = perf_keyed_check(&t->keyed, t->slots[s].buffer, size, c->seed, &first);
        if (wrong != 0) {
            tag_report_bad("tag_lat", size, "the server's PING buffer", wrong, first);
            bad++;
        }
    }
    perf_tag_ctrl_t result = {.op = TAG_OP_RESULT, .count = count, .bad = bad};
    return tag_ctrl_send(ctx, AM_TAG_REPLY, &result);
}

static int tag_serve_bw(perf_ctx_t *ctx, const perf_tag_ctrl_t *c)
{
    perf_tag_t *t = ctx->tag;
    size_t size = (size_t)c->size;
    unsigned window = c->window;
    uint64_t count = c->count, bad = 0, bytes = 0, first;
    uint64_t data = tag_of(ctx, c->seed, TAG_KIND_DATA);
    bool reported = false;

    if (window == 0 || window > PERF_TAG_WINDOW) {
        fprintf(stderr, "ferry_perf: bad tag_bw request (window %u)\n", window);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, "tag control message");
        return -1;
    }
    for (unsigned s = 0; s < window; s++)
        t->slots[s].buffer = t->recv;
    for (uint64_t i = 0; i < count && i < window; i++) {
        if (tag_post(ctx, &t->slots[i], size, data) != 0)
            return -1;
    }
    perf_tag_ctrl_t ready = {.op = TAG_OP_READY};
    if (tag_ctrl_send(ctx, AM_TAG_REPLY, &ready) != 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        tag_slot_t *slot = &t->slots[i % window];
        int rc = tag_wait_recv(ctx, slot, size, data, &reported);
        if (rc < 0)
            return -1;
        bad += (uint64_t)rc;
        bytes += slot->info.length <= size ? slot->info.length : size;
        if (i + window < count && tag_post(ctx, slot, size, data) != 0)
            return -1;
    }
    /* the client's clock stops here: the check is not timed */
    perf_tag_ctrl_t received = {.op = TAG_OP_RECEIVED, .count = count, .bytes = bytes, .bad = bad};
    if (tag_ctrl_send(ctx, AM_TAG_REPLY, &received) != 0)
        return -1;
    uint64_t wrong =
        count > 0 && bad == 0 ? perf_keyed_check(&t->keyed, t->recv, size, c->seed, &first) : 0;
    if (wrong != 0) {
        tag_report_bad("tag_bw", size, "the server's receive buffer", wrong, first);
        bad++;
    }
    perf_tag_ctrl_t result = {.op = TAG_OP_RESULT, .count = count, .bytes = bytes, .bad = bad};
    return tag_ctrl_send(ctx, AM_TAG_REPLY, &result);
}

int perf_tag_serve(perf_ctx_t *ctx)
{
    perf_tag_ctrl_t c = ctx->tag_ctrl;
    ctx->tag_ctrls_done++;
    if (c.size > ctx->tag->max_size) {
        fprintf(stderr, "ferry_perf: the client asked for %llu-byte messages (at most %zu)\n",
                (unsigned long long)c.size, ctx->tag->max_size);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, "tag control message");
        return -1;
    }
    switch (c.op) {
    case TAG_OP_START_LAT:
        return tag_serve_lat(ctx, &c);
    case TAG_OP_START_BW:
        return tag_serve_bw(ctx, &c);
    default:
        fprintf(stderr, "ferry_perf: unknown tag control request %u\n", c.op);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, "tag control message");
        return -1;
    }
}

/* ---------------------------------------------------------------- client */

/* The server's RESULT of a phase of count messages of size (bytes: also check the bytes). */
static int tag_check_result(perf_ctx_t *ctx, const char *test, size_t size, uint64_t count,
                            bool bytes)
{
    const perf_tag_ctrl_t *r = &ctx->tag_reply[TAG_OP_RESULT];
    if (r->count == count && r->bad == 0 && (!bytes || r->bytes == count * size))
        return 0;
    fprintf(stderr,
            "ferry_perf: %s %zu B: the server received %llu messages, %llu bytes, %llu wrong; "
            "%llu messages were sent\n",
            test, size, (unsigned long long)r->count, (unsigned long long)r->bytes,
            (unsigned long long)r->bad, (unsigned long long)count);
    return -1;
}

/* One tag_lat phase of count round trips; samples (may be NULL: warm-up) gets each one's
 * ticks. */
static int tag_lat_phase(perf_ctx_t *ctx, size_t size, uint64_t count, uint64_t *samples,
                         uint64_t done)
{
    perf_tag_t *t = ctx->tag;
    uint64_t seed = tag_next_seed(t), first, wrong = 0;
    uint64_t ping = tag_of(ctx, seed, TAG_KIND_PING), pong = tag_of(ctx, seed, TAG_KIND_PONG);
    tag_slot_t *slot = &t->slots[0];
    bool reported = false;

    perf_keyed_fill(&t->keyed, t->send, size, seed);
    slot->buffer = t->recv;
    perf_tag_ctrl_t start = {.op = TAG_OP_START_LAT, .seed = seed, .size = size, .count = count};
    uint64_t ready = tag_next_reply(ctx, TAG_OP_READY), result = tag_next_reply(ctx, TAG_OP_RESULT);
    if (tag_ctrl_send(ctx, AM_TAG_CTRL, &start) != 0 ||
        tag_wait_reply(ctx, TAG_OP_READY, ready) != 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t begin = perf_ticks();
        if (tag_post(ctx, slot, size, pong) != 0 || tag_send(ctx, size, ping) != 0)
            return -1;
        int rc = tag_wait_recv(ctx, slot, size, pong, &reported);
        if (rc < 0 || tag_send_window(ctx, 0) != 0)
            return -1;
        if (samples != NULL)
            samples[i] = perf_ticks() - begin;
        wrong += (uint64_t)rc;
        if ((i & 1023) == 0 || size >= TAG_PROGRESS_EVERY_SIZE)
            perf_progress_update(done + i);
    }
    if (tag_wait_reply(ctx, TAG_OP_RESULT, result) != 0 ||
        tag_check_result(ctx, "tag_lat", size, count, false) != 0)
        return -1;
    if (wrong != 0) {
        fprintf(stderr, "ferry_perf: tag_lat %zu B: %llu replies were wrong\n", size,
                (unsigned long long)wrong);
        return -1;
    }
    wrong = count > 0 ? perf_keyed_check(&t->keyed, slot->buffer, size, seed ^ 0x80, &first) : 0;
    if (wrong != 0)
        return tag_report_bad("tag_lat", size, "the client's PONG buffer", wrong, first);
    return 0;
}

int perf_tag_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples)
{
    size_t size = (size_t)ctx->params.sizes[index];
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];

    samples->count = 0;
    samples->ticks = malloc(iters * sizeof(*samples->ticks));
    if (samples->ticks == NULL) {
        fprintf(stderr, "ferry_perf: out of memory for %llu samples\n", (unsigned long long)iters);
        return -1;
    }
    perf_progress_start("tag_lat", warmup + iters);
    int rc = tag_lat_phase(ctx, size, warmup, NULL, 0);
    if (rc == 0)
        rc = tag_lat_phase(ctx, size, iters, samples->ticks, warmup);
    perf_progress_end();
    if (rc != 0) {
        free(samples->ticks);
        samples->ticks = NULL;
        return -1;
    }
    samples->count = iters;
    return 0;
}

/* One tag_bw phase of count messages; *elapsed_ns: from the first send to the server's
 * RESULT. */
static int tag_bw_phase(perf_ctx_t *ctx, size_t size, uint64_t count, uint64_t done,
                        uint64_t *elapsed_ns)
{
    perf_tag_t *t = ctx->tag;
    uint64_t seed = tag_next_seed(t);
    uint64_t data = tag_of(ctx, seed, TAG_KIND_DATA);

    perf_keyed_fill(&t->keyed, t->send, size, seed);
    perf_tag_ctrl_t start = {.op = TAG_OP_START_BW,
                             .window = PERF_TAG_WINDOW,
                             .seed = seed,
                             .size = size,
                             .count = count};
    uint64_t ready = tag_next_reply(ctx, TAG_OP_READY);
    uint64_t received = tag_next_reply(ctx, TAG_OP_RECEIVED);
    uint64_t result = tag_next_reply(ctx, TAG_OP_RESULT);
    if (tag_ctrl_send(ctx, AM_TAG_CTRL, &start) != 0 ||
        tag_wait_reply(ctx, TAG_OP_READY, ready) != 0)
        return -1;
    uint64_t begin = perf_now_ns();
    for (uint64_t i = 0; i < count; i++) {
        if (tag_send_window(ctx, PERF_TAG_WINDOW - 1) != 0 || tag_send(ctx, size, data) != 0)
            return -1;
        if ((i & 1023) == 0 || size >= TAG_PROGRESS_EVERY_SIZE)
            perf_progress_update(done + i);
    }
    if (tag_wait_reply(ctx, TAG_OP_RECEIVED, received) != 0)
        return -1;
    *elapsed_ns = perf_now_ns() - begin;
    if (tag_send_window(ctx, 0) != 0 || tag_wait_reply(ctx, TAG_OP_RESULT, result) != 0)
        return -1;
    return tag_check_result(ctx, "tag_bw", size, count, true);
}

int perf_tag_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps)
{
    size_t size = (size_t)ctx->params.sizes[index];
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];
    uint64_t elapsed = 0;

    perf_progress_start("tag_bw", warmup + iters);
    int rc = tag_bw_phase(ctx, size, warmup, 0, &elapsed);
    if (rc == 0)
        rc = tag_bw_phase(ctx, size, iters, warmup, &elapsed);
    perf_progress_end();
    if (rc != 0)
        return -1;
    perf_rates(size, iters, elapsed, bw_GBps, msgrate_Mps);
    return 0;
}
