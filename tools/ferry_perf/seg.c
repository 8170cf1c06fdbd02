/* The segment tests: both sides of seg_map_lat, seg_dma_bw and seg_dma_read_bw over the named
 * segment API (ferry_segment_*, ferry_rsegment_*, ferry_dma_*).
 *
 * Setup: the server creates a segment of the largest test size (at least one cache line) with
 * an automatic id, prepares it and makes it available, and sends the id over the TCP
 * connection; the client connects to it (synchronously), then maps the flag word
 * (seg_map_lat) or creates its DMA queue (the DMA tests). At the end the client unmaps,
 * destroys the queue and disconnects before its goodbye, and the server checks that it saw
 * exactly one CONNECT and one DISCONNECT.
 *
 * seg_map_lat: one 8-byte flag word at offset 0. From the value both sides read (base), the
 * client stores base + 1 (then ferry_rsegment_store_barrier), the server waits for it and
 * stores base + 2, the client waits for that, and so on: one sample is one round trip of a
 * cache line between the two processes; no progress runs during the run, only loads and
 * stores. The server reports the last value it stored, the client checks it and the word.
 *
 * seg_dma_bw / seg_dma_read_bw: each iteration posts one entry (SIZE bytes between the
 * client's buffer and offset 0 of the segment, write or read), starts the queue and waits for
 * it (ferry_dma_wait); the time from ferry_dma_start to the end of ferry_dma_wait is summed over
 * the measured iterations. Each run has its own pattern (a seed 1..255, different in every byte
 * for every seed), checked when the run is over: writes by the server in its memory (CHECK),
 * reads by the client in its buffer after the server wrote the pattern (FILL). A path that moves
 * nothing or the wrong bytes fails the run.
 *
 * Control messages (AM_SEG_CTRL, one at a time, answered with AM_SEG_REPLY):
 *   FILL      the server writes the pattern of seed into [0, length) of its segment
 *   CHECK     the server compares [0, length) with the pattern of seed
 *   PINGPONG  the server checks that the flag is value, answers (READY), answers count round
 *             trips through the flag, then answers again with the last value it stored */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define SEG_MIN_SIZE 64         /* the flag word's cache line at least */
#define SEG_SPIN_CHECK 0xfffffu /* spins between two looks at the clock and the TCP connection */
#define SEG_PROGRESS_EVERY_SIZE 65536

typedef enum seg_op {
    SEG_OP_FILL = 1,
    SEG_OP_CHECK,
    SEG_OP_PINGPONG,
} seg_op_t;

struct perf_seg {
    /* server */
    ferry_segment_t *segment;
    uint8_t *memory; /* ferry_segment_ptr */
    size_t size;
    uint64_t connects, disconnects;
    perf_ctrl_t ctrl; /* the last request */
    /* client */
    ferry_rsegment_t *rseg;
    uint64_t *flag; /* seg_map_lat: the map of the flag word */
    ferry_dma_queue_t *queue;
    uint8_t *local; /* the DMA tests' buffer (the largest size) */
    size_t local_size;
    perf_ctrl_reply_t reply; /* the last answer */
    uint64_t replies;
    uint64_t next_seed;
    /* both */
    perf_pattern_t pattern; /* the patterns of the runs */
};

/* ---------------------------------------------------------------- patterns */

static uint64_t seg_next_seed(perf_seg_t *seg)
{
    seg->next_seed = seg->next_seed % 255 + 1;
    return seg->next_seed;
}

/* Spin until *flag == value, without progress; every SEG_SPIN_CHECK spins look whether the
 * peer is gone or nothing happened for the timeout. */
static int seg_spin(perf_ctx_t *ctx, const uint64_t *flag, uint64_t value)
{
    uint64_t spins = 0, since = 0;
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value) {
        if ((++spins & SEG_SPIN_CHECK) != 0)
            continue;
        uint64_t now = perf_now_ns();
        if (since == 0) {
            since = now;
        } else if (now - since > ctx->timeout_ns) {
            fprintf(stderr, "ferry_perf: the flag word stayed at %llu, %llu was expected\n",
                    (unsigned long long)__atomic_load_n(flag, __ATOMIC_ACQUIRE),
                    (unsigned long long)value);
            perf_fail(ctx, FERRY_ERR_TIMED_OUT, "nothing happened for too long (see -T)");
            return -1;
        }
        if (perf_tcp_peer_gone(ctx->tcp_fd)) {
            perf_fail(ctx, FERRY_ERR_CONNECTION_RESET,
                      "the peer process is gone (TCP connection closed)");
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- setup and teardown */

static void seg_on_event(void *arg, ferry_segment_t *segment, const ferry_segment_event_t *event)
{
    perf_ctx_t *ctx = arg;
    (void)segment;
    if (event->type == FERRY_SEGMENT_EVENT_CONNECT)
        ctx->seg->connects++;
    else if (event->type == FERRY_SEGMENT_EVENT_DISCONNECT)
        ctx->seg->disconnects++;
}

static void seg_on_remote_event(void *arg, ferry_rsegment_t *rsegment,
                                const ferry_segment_event_t *event)
{
    perf_ctx_t *ctx = arg;
    (void)rsegment;
    if (event->type == FERRY_SEGMENT_EVENT_LOST)
        perf_fail(ctx, event->status, "the remote segment was lost");
}

static size_t seg_max_size(const perf_ctx_t *ctx)
{
    size_t size = SEG_MIN_SIZE;
    for (unsigned i = 0; i < ctx->params.size_count; i++) {
        if (ctx->params.sizes[i] > size)
            size = (size_t)ctx->params.sizes[i];
    }
    return size;
}

int perf_seg_create(perf_ctx_t *ctx)
{
    perf_seg_t *seg = calloc(1, sizeof(*seg));
    ferry_status_t status;
    const char *call;

    if (seg == NULL || perf_pattern_init(&seg->pattern) != 0) {
        fprintf(stderr, "ferry_perf: out of memory\n");
        free(seg);
        return -1;
    }
    ctx->seg = seg;
    if (!ctx->is_server) {
        if (ctx->params.test == PERF_TEST_SEG_MAP_LAT)
            return 0;
        seg->local_size = seg_max_size(ctx);
        seg->local = perf_buffer_alloc(ctx, seg->local_size);
        if (seg->local == NULL) {
            fprintf(stderr, "ferry_perf: out of memory for a %zu-byte buffer\n", seg->local_size);
            goto err_free;
        }
        return 0;
    }
    seg->size = seg_max_size(ctx);
    call = "ferry_segment_create";
    status = ferry_segment_create(ctx->worker, FERRY_SEGMENT_AUTO_ID, seg->size, 0, seg_on_event,
                                  ctx, &seg->segment);
    if (status != FERRY_OK)
        goto err_status;
    call = "ferry_segment_prepare";
    status = ferry_segment_prepare(seg->segment, 0);
    if (status != FERRY_OK)
        goto err_release;
    call = "ferry_segment_set_available";
    status = ferry_segment_set_available(seg->segment);
    if (status != FERRY_OK)
        goto err_release;
    seg->memory = ferry_segment_ptr(seg->segment);
    memset(seg->memory, 0, seg->size); /* its pages are there before anything is measured */
    return 0;

err_release:
    ferry_segment_release(seg->segment);
    seg->segment = NULL;
err_status:
    fprintf(stderr, "ferry_perf: %s (%zu bytes): %s\n", call, seg->size,
            ferry_status_string(status));
err_free:
    perf_pattern_cleanup(&seg->pattern);
    free(seg);
    ctx->seg = NULL;
    return -1;
}

/* Segment message: the id (u32, little-endian), then the size (u64). */
int perf_seg_connect(perf_ctx_t *ctx)
{
    perf_seg_t *seg = ctx->seg;
    unsigned timeout_s = (unsigned)(ctx->timeout_ns / 1000000000ull);
    uint8_t out[12];
    void *blob;
    size_t length;
    ferry_status_t status;

    if (ctx->is_server) {
        uint32_t id = ferry_segment_id(seg->segment);
        for (int i = 0; i < 4; i++)
            out[i] = (uint8_t)(id >> (8 * i));
        for (int i = 0; i < 8; i++)
            out[4 + i] = (uint8_t)((uint64_t)seg->size >> (8 * i));
        return perf_tcp_send_blob(ctx->tcp_fd, out, sizeof(out), timeout_s);
    }
    if (perf_tcp_recv_blob(ctx->tcp_fd, &blob, &length, sizeof(out), timeout_s) != 0)
        return -1;
    if (length != sizeof(out)) {
        fprintf(stderr, "ferry_perf: malformed segment message from the server (%zu bytes)\n",
                length);
        free(blob);
        return -1;
    }
    const uint8_t *in = blob;
    uint32_t id = 0;
    uint64_t size = 0;
    for (int i = 0; i < 4; i++)
        id |= (uint32_t)in[i] << (8 * i);
    for (int i = 0; i < 8; i++)
        size |= (uint64_t)in[4 + i] << (8 * i);
    free(blob);

    status = ferry_rsegment_connect(ctx->ep, id, (int)(timeout_s * 1000), 0, seg_on_remote_event,
                                    ctx, &seg->rseg);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_rsegment_connect(segment %#x): %s\n", id,
                ferry_status_string(status));
        seg->rseg = NULL;
        return -1;
    }
    if (ferry_rsegment_size(seg->rseg) != size || size < seg_max_size(ctx)) {
        fprintf(stderr,
                "ferry_perf: segment %#x has %zu bytes (the server said %llu), %zu are needed\n",
                id, ferry_rsegment_size(seg->rseg), (unsigned long long)size, seg_max_size(ctx));
        return -1;
    }
    if (ctx->params.test == PERF_TEST_SEG_MAP_LAT) {
        void *ptr;
        status = ferry_rsegment_map(seg->rseg, 0, SEG_MIN_SIZE, 0, &ptr);
        if (status != FERRY_OK) {
            fprintf(stderr, "ferry_perf: ferry_rsegment_map(segment %#x, %u bytes): %s\n", id,
                    SEG_MIN_SIZE, ferry_status_string(status));
            return -1;
        }
        seg->flag = ptr;
        return 0;
    }
    status = ferry_dma_create(seg->rseg, &seg->queue);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_dma_create(segment %#x): %s\n", id,
                ferry_status_string(status));
        seg->queue = NULL;
        return -1;
    }
    return 0;
}

int perf_seg_finish(perf_ctx_t *ctx)
{
    perf_seg_t *seg = ctx->seg;
    ferry_status_t status;

    if (ctx->is_server) {
        /* the client disconnected before its goodbye */
        if (perf_wait_for(ctx, &seg->disconnects, 1) != 0)
            return -1;
        if (seg->connects != 1 || seg->disconnects != 1) {
            fprintf(stderr,
                    "ferry_perf: the segment saw %llu CONNECT and %llu DISCONNECT events, 1 of "
                    "each was expected\n",
                    (unsigned long long)seg->connects, (unsigned long long)seg->disconnects);
            return -1;
        }
        return 0;
    }
    if (seg->flag != NULL) {
        status = ferry_rsegment_unmap(seg->rseg, seg->flag);
        seg->flag = NULL;
        if (status != FERRY_OK) {
            perf_fail(ctx, status, "ferry_rsegment_unmap");
            return -1;
        }
    }
    if (seg->queue != NULL) {
        status = ferry_dma_destroy(seg->queue);
        if (status != FERRY_OK) {
            perf_fail(ctx, status, "ferry_dma_destroy");
            return -1;
        }
        seg->queue = NULL;
    }
    while (seg->rseg != NULL) {
        status = ferry_rsegment_disconnect(seg->rseg);
        if (status == FERRY_OK) {
            seg->rseg = NULL;
        } else if (status != FERRY_ERR_NO_RESOURCE) {
            perf_fail(ctx, status, "ferry_rsegment_disconnect");
            return -1;
        } else if (perf_poll(ctx, true) != 0) {
            return -1;
        }
    }
    return 0;
}

void perf_seg_close(perf_ctx_t *ctx)
{
    perf_seg_t *seg = ctx->seg;
    if (seg == NULL)
        return;
    if (seg->flag != NULL)
        ferry_rsegment_unmap(seg->rseg, seg->flag);
    seg->flag = NULL;
    if (seg->queue != NULL && ferry_dma_destroy(seg->queue) == FERRY_ERR_BUSY) {
        /* a failed run left it running: stop it (its buffer must outlive it) */
        ferry_dma_abort(seg->queue);
        if (ferry_dma_wait(seg->queue, (int)(ctx->timeout_ns / 1000000ull)) == FERRY_ERR_TIMED_OUT)
            fprintf(stderr, "ferry_perf: an aborted DMA queue did not finish\n");
        ferry_dma_destroy(seg->queue);
    }
    seg->queue = NULL;
    if (seg->rseg != NULL)
        ferry_rsegment_disconnect(seg->rseg); /* best effort: the endpoint goes next */
    seg->rseg = NULL;
    ferry_segment_release(seg->segment);
    seg->segment = NULL;
    seg->memory = NULL;
}

void perf_seg_destroy(perf_ctx_t *ctx)
{
    perf_seg_t *seg = ctx->seg;
    if (seg == NULL)
        return;
    free(seg->local);
    perf_pattern_cleanup(&seg->pattern);
    free(seg);
    ctx->seg = NULL;
}

/* ---------------------------------------------------------------- control messages */

ferry_status_t perf_seg_on_ctrl(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)data, (void)length, (void)params;
    perf_seg_t *seg = ctx->seg;
    if (perf_ctrl_accept(
            ctx, ctx->is_server && seg != NULL && ctx->seg_ctrls == ctx->seg_ctrls_done, header,
            header_length, seg != NULL ? &seg->ctrl : NULL, sizeof(perf_ctrl_t),
            ctx->seg_ctrls - ctx->seg_ctrls_done, "segment control message"))
        ctx->seg_ctrls++;
    return FERRY_OK;
}

ferry_status_t perf_seg_on_reply(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    perf_ctx_t *ctx = arg;
    (void)data, (void)length, (void)params;
    perf_seg_t *seg = ctx->seg;
    if (perf_ctrl_accept(ctx, !ctx->is_server && seg != NULL, header, header_length,
                         seg != NULL ? &seg->reply : NULL, sizeof(perf_ctrl_reply_t), 0,
                         "segment control reply"))
        seg->replies++;
    return FERRY_OK;
}

static int seg_reply(perf_ctx_t *ctx, const perf_ctrl_reply_t *reply)
{
    /* wait until it left: the server may spin without progress next */
    if (perf_send(ctx, AM_SEG_REPLY, reply, sizeof(*reply), 0) != 0 || perf_window(ctx, 0) != 0)
        return -1;
    return 0;
}

/* The server's half of seg_map_lat. */
static int seg_serve_pingpong(perf_ctx_t *ctx, const perf_ctrl_t *c)
{
    perf_seg_t *seg = ctx->seg;
    uint64_t *flag = (uint64_t *)(void *)seg->memory;
    uint64_t value = c->value;
    perf_ctrl_reply_t reply = {.bad = 0, .first_bad = UINT64_MAX, .value = 0};

    reply.value = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
    reply.bad = reply.value != value;
    if (seg_reply(ctx, &reply) != 0)
        return -1;
    if (reply.bad != 0)
        return 0; /* the client reports the wrong start */
    for (uint64_t i = 0; i < c->count; i++) {
        if (seg_spin(ctx, flag, value + 1) != 0)
            return -1;
        value += 2;
        __atomic_store_n(flag, value, __ATOMIC_RELEASE);
    }
    reply.value = value;
    return seg_reply(ctx, &reply);
}

int perf_seg_serve(perf_ctx_t *ctx)
{
    perf_seg_t *seg = ctx->seg;
    perf_ctrl_t c = seg->ctrl;
    perf_ctrl_reply_t reply = {.bad = 0, .first_bad = UINT64_MAX, .value = 0};

    ctx->seg_ctrls_done = ctx->seg_ctrls;
    if (c.length > seg->size) {
        fprintf(stderr,
                "ferry_perf: malformed request from the client (op %u, %llu bytes; the segment "
                "has %zu)\n",
                c.op, (unsigned long long)c.length, seg->size);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, "segment control message");
        return -1;
    }
    switch (c.op) {
    case SEG_OP_FILL:
        perf_pattern_fill(&seg->pattern, seg->memory, (size_t)c.length, c.seed);
        break;
    case SEG_OP_CHECK:
        reply.bad = perf_pattern_check(&seg->pattern, seg->memory, (size_t)c.length, c.seed,
                                       &reply.first_bad);
        break;
    case SEG_OP_PINGPONG:
        return seg_serve_pingpong(ctx, &c);
    default:
        fprintf(stderr, "ferry_perf: unknown segment request %u from the client\n", c.op);
        perf_fail(ctx, FERRY_ERR_PROTOCOL, "segment control message");
        return -1;
    }
    return seg_reply(ctx, &reply);
}

/* Client: send a request; wait for answers replies (in seg->reply). */
static int seg_ctrl_send(perf_ctx_t *ctx, const perf_ctrl_t *ctrl)
{
    return perf_send(ctx, AM_SEG_CTRL, ctrl, sizeof(*ctrl), 0);
}

static int seg_ctrl(perf_ctx_t *ctx, const perf_ctrl_t *ctrl)
{
    uint64_t target = ctx->seg->replies + 1;
    if (seg_ctrl_send(ctx, ctrl) != 0 || perf_wait_for(ctx, &ctx->seg->replies, target) != 0)
        return -1;
    return 0;
}

static int seg_report_bad(const char *test, uint64_t size, const char *where, uint64_t bad,
                          uint64_t first)
{
    fprintf(stderr,
            "ferry_perf: %s %llu B: %llu wrong byte(s) in %s, the first at offset %llu: the "
            "transfers did not deliver the data\n",
            test, (unsigned long long)size, (unsigned long long)bad, where,
            (unsigned long long)first);
    return -1;
}

/* ---------------------------------------------------------------- client: seg_map_lat */

int perf_seg_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples)
{
    perf_seg_t *seg = ctx->seg;
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];
    uint64_t total = warmup + iters;
    uint64_t *flag = seg->flag;
    uint64_t base = __atomic_load_n(flag, __ATOMIC_ACQUIRE), value = base;
    perf_ctrl_t pingpong = {.op = SEG_OP_PINGPONG, .value = base, .count = total};
    ferry_status_t status;

    samples->count = 0;
    samples->ticks = malloc(iters * sizeof(*samples->ticks));
    if (samples->ticks == NULL) {
        fprintf(stderr, "ferry_perf: out of memory for %llu samples\n", (unsigned long long)iters);
        return -1;
    }
    /* READY: the server saw the same start value and spins on the flag */
    if (seg_ctrl(ctx, &pingpong) != 0)
        goto err;
    if (seg->reply.bad != 0) {
        fprintf(stderr,
                "ferry_perf: seg_map_lat: the server reads %llu in the flag word, the client's "
                "map %llu: the map is not the server's memory\n",
                (unsigned long long)seg->reply.value, (unsigned long long)base);
        goto err;
    }
    uint64_t finished = seg->replies + 1;
    perf_progress_start("seg_map_lat", total);
    for (uint64_t i = 0; i < total; i++) {
        uint64_t start = perf_ticks();
        __atomic_store_n(flag, value + 1, __ATOMIC_RELEASE);
        status = ferry_rsegment_store_barrier(seg->rseg);
        if (status != FERRY_OK) {
            perf_fail(ctx, status, "ferry_rsegment_store_barrier");
            goto err_progress;
        }
        value += 2;
        if (seg_spin(ctx, flag, value) != 0)
            goto err_progress;
        if (i >= warmup)
            samples->ticks[i - warmup] = perf_ticks() - start;
        if ((i & 1023) == 0)
            perf_progress_update(i);
    }
    perf_progress_end();
    if (perf_wait_for(ctx, &seg->replies, finished) != 0)
        goto err;
    if (seg->reply.value != value || __atomic_load_n(flag, __ATOMIC_ACQUIRE) != value) {
        fprintf(stderr,
                "ferry_perf: seg_map_lat: after %llu round trips from %llu the server stored "
                "%llu and the flag word holds %llu, %llu was expected\n",
                (unsigned long long)total, (unsigned long long)base,
                (unsigned long long)seg->reply.value,
                (unsigned long long)__atomic_load_n(flag, __ATOMIC_ACQUIRE),
                (unsigned long long)value);
        goto err;
    }
    samples->count = iters;
    return 0;

err_progress:
    perf_progress_end();
err:
    free(samples->ticks);
    samples->ticks = NULL;
    return -1;
}

/* ---------------------------------------------------------------- client: DMA bandwidth */

/* count transfers of entry; *elapsed_p grows by the time from each start to the end of its
 * wait. */
static int seg_dma_phase(perf_ctx_t *ctx, const ferry_dma_entry_t *entry, uint64_t count,
                         uint64_t done, uint64_t *elapsed_p)
{
    perf_seg_t *seg = ctx->seg;
    int timeout_ms = (int)(ctx->timeout_ns / 1000000ull);
    ferry_status_t status;

    for (uint64_t i = 0; i < count; i++) {
        status = ferry_dma_post(seg->queue, entry, 1);
        if (status != FERRY_OK) {
            perf_fail(ctx, status, "ferry_dma_post");
            return -1;
        }
        uint64_t start = perf_now_ns();
        status = ferry_dma_start(seg->queue, NULL, NULL);
        if (status != FERRY_INPROGRESS) {
            perf_fail(ctx, status, "ferry_dma_start");
            return -1;
        }
        status = ferry_dma_wait(seg->queue, timeout_ms);
        *elapsed_p += perf_now_ns() - start;
        if (status != FERRY_OK) {
            perf_fail(ctx, status, "ferry_dma_wait");
            return -1;
        }
        if (ctx->failed != FERRY_OK)
            return -1;
        if ((i & 1023) == 0 || entry->length >= SEG_PROGRESS_EVERY_SIZE)
            perf_progress_update(done + i);
    }
    return 0;
}

int perf_seg_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps)
{
    perf_seg_t *seg = ctx->seg;
    const char *name = perf_test_name(ctx->params.test);
    size_t size = (size_t)ctx->params.sizes[index];
    uint64_t iters = ctx->params.iters[index];
    uint64_t warmup = ctx->params.warmup[index];
    uint64_t seed = seg_next_seed(seg), elapsed = 0, first, bad;
    bool write = ctx->params.test == PERF_TEST_SEG_DMA_BW;
    ferry_dma_entry_t entry = {.local = seg->local,
                               .remote_offset = 0,
                               .length = size,
                               .direction = write ? FERRY_DMA_WRITE : FERRY_DMA_READ};
    int result = -1;

    /* what the transfers move, and what the check expects */
    if (write) {
        perf_pattern_fill(&seg->pattern, seg->local, size, seed);
    } else {
        perf_ctrl_t fill = {.op = SEG_OP_FILL, .seed = seed, .length = size};
        if (seg_ctrl(ctx, &fill) != 0)
            return -1;
        memset(seg->local, 0, size);
    }
    perf_progress_start(name, warmup + iters);
    if (seg_dma_phase(ctx, &entry, warmup, 0, &elapsed) != 0)
        goto out;
    elapsed = 0;
    if (seg_dma_phase(ctx, &entry, iters, warmup, &elapsed) != 0)
        goto out;
    perf_progress_end();

    if (write) {
        perf_ctrl_t check = {.op = SEG_OP_CHECK, .seed = seed, .length = size};
        if (seg_ctrl(ctx, &check) != 0)
            goto out;
        if (seg->reply.bad != 0) {
            seg_report_bad(name, size, "the server's segment", seg->reply.bad,
                           seg->reply.first_bad);
            goto out;
        }
    } else {
        bad = perf_pattern_check(&seg->pattern, seg->local, size, seed, &first);
        if (bad != 0) {
            seg_report_bad(name, size, "the buffer read into", bad, first);
            goto out;
        }
    }
    perf_rates(size, iters, elapsed, bw_GBps, msgrate_Mps);
    result = 0;
out:
    perf_progress_end();
    return result;
}
