/* ferry_perf: latency and bandwidth of ferry's active messages and one-sided operations
 * between two processes, in the spirit of ucx_perftest. The files split it by idea:
 *   main.c       options, help, pinning, the client's and the server's sequence
 *   bootstrap.c  the TCP connection that carries worker addresses, test parameters and keys
 *   tests.c      ferry objects, progress and sends, the am_lat and am_bw tests
 *   rma.c        registered memory, remote keys, the one-sided tests (put_lat .. atomic_rate)
 *   tag.c        tagged messages: the tag_lat and tag_bw tests
 *   seg.c        named segments: seg_map_lat, seg_dma_bw, seg_dma_read_bw
 *   report.c     statistics, table / CSV / JSON output, the progress line
 *   launch.c     under a launcher (mpirun): rank 0 serves, rank 1 is the client
 *   streams.c    --threads N: N threads on one FERRY_THREAD_MULTI worker, a stream each
 *   pattern.c    the byte patterns of every test
 * and, plain libc, also compiled into bench/mpi_pingpong.c by the bench scripts:
 *   clock.c      CLOCK_MONOTONIC and the TSC (clock.h)
 *   parse.c      option values with K/M/G suffixes (parse.h)
 *   keyed.c      the tagged tests' byte pattern (keyed.h)
 * Only the public API (ferry/ferry.h) is used. */
#ifndef FERRY_PERF_H
#define FERRY_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/bootstrap.h>
#include <ferry/counters.h>
#include <ferry/ferry.h>

#include "clock.h"
#include "keyed.h"
#include "parse.h"

#define PERF_DEFAULT_PORT 13337
#define PERF_DEFAULT_TIMEOUT_S 10
#define PERF_ACCEPT_TIMEOUT_MIN_S 60
#define PERF_MAX_SIZES 32
#define PERF_MAX_MESSAGE (1ull << 30) /* largest message size accepted by -s */
#define PERF_MAX_ADDRESS 65536        /* largest worker address accepted from a peer */
#define PERF_MAX_RKEY 65536           /* largest packed remote key accepted from a peer */
#define PERF_RMA_WINDOW 32            /* one-sided operations in flight in put_bw, get_bw... */
#define PERF_TAG_WINDOW 16            /* tagged sends and receives in flight in tag_bw */
/* --threads: streams on one worker; each takes AM_COUNT active-message ids */
#define PERF_MAX_THREADS 8
#define PERF_TEST_LIST                                                                             \
    "am_lat, am_bw, put_lat, get_lat, put_bw, get_bw, atomic_lat, atomic_rate, tag_lat, tag_bw, "  \
    "seg_map_lat, seg_dma_bw, seg_dma_read_bw"

typedef enum perf_test {
    PERF_TEST_NONE = 0,
    PERF_TEST_AM_LAT = 1,
    PERF_TEST_AM_BW = 2,
    PERF_TEST_PUT_LAT = 3,
    PERF_TEST_GET_LAT = 4,
    PERF_TEST_PUT_BW = 5,
    PERF_TEST_GET_BW = 6,
    PERF_TEST_ATOMIC_LAT = 7,
    PERF_TEST_ATOMIC_RATE = 8,
    PERF_TEST_TAG_LAT = 9,
    PERF_TEST_TAG_BW = 10,
    PERF_TEST_SEG_MAP_LAT = 11,
    PERF_TEST_SEG_DMA_BW = 12,
    PERF_TEST_SEG_DMA_READ_BW = 13,
    PERF_TEST_LAST = PERF_TEST_SEG_DMA_READ_BW,
} perf_test_t;

/* Where the target memory of the one-sided tests comes from. */
typedef enum perf_mem {
    PERF_MEM_ALLOC = 0,    /* ferry_mem_alloc: a local peer maps it (loads, stores, CPU atomics) */
    PERF_MEM_REGISTER = 1, /* malloc + ferry_mem_register: cross-memory attach or the fallback */
} perf_mem_t;

typedef enum perf_format {
    PERF_FORMAT_TABLE,
    PERF_FORMAT_CSV,
    PERF_FORMAT_JSON,
} perf_format_t;

/* What the client decides and sends to the server (bootstrap.c encodes it). */
typedef struct perf_params {
    perf_test_t test;
    bool wait;        /* ferry_worker_wait instead of busy polling */
    bool tag_from;    /* tag tests: receives name their source (ferry_tag_recv_from) */
    bool tag_sync;    /* tag tests: synchronous sends (FERRY_TAG_SEND_SYNC) */
    perf_mem_t mem;   /* one-sided tests: the target memory */
    bool no_thp;      /* one-sided and tag tests: no madvise(MADV_HUGEPAGE) on malloc'ed buffers */
    unsigned threads; /* --threads: streams, each in its own thread, on one worker (0: none) */
    unsigned repeat;  /* runs per size */
    unsigned size_count;
    uint64_t sizes[PERF_MAX_SIZES];
    uint64_t iters[PERF_MAX_SIZES];  /* measured iterations per run */
    uint64_t warmup[PERF_MAX_SIZES]; /* warm-up iterations per run (their data is checked) */
} perf_params_t;

typedef struct perf_options {
    const char *host; /* NULL: server (or, with -t, a rank under a launcher) */
    bool launched;    /* -t without HOST: a rank of a 2-rank job (launch.c) */
    bool verbose;     /* -v: print the worker's counters after the run */
    unsigned port;
    int core; /* -1: not pinned */
    unsigned timeout_s;
    perf_format_t format;
    uint64_t iters; /* 0: adapt to the size */
    int64_t warmup; /* -1: iters / 10 */
    perf_params_t params;
} perf_options_t;

/* One line of output: the medians over the repetitions of one size. NAN: does not apply. */
typedef struct perf_result {
    perf_test_t test;
    uint64_t size;
    uint64_t iters;
    unsigned repeat;
    bool wait;
    perf_mem_t mem;
    const char *transport;
    double lat_p50_us; /* one-way latency */
    double lat_avg_us;
    double lat_p99_us;
    double bw_GBps; /* 10^9 bytes per second */
    double msgrate_Mps;
} perf_result_t;

/* Latency samples of one run: round-trip times (ping-pong tests) or operation times, in
 * perf_ticks() units. */
typedef struct perf_samples {
    uint64_t *ticks;
    uint64_t count;
} perf_samples_t;

/* ---------------------------------------------------------------- main.c */
const char *perf_test_name(perf_test_t test);
const char *perf_mem_name(perf_mem_t mem);
/* --thread-multi: the worker of this process is created FERRY_THREAD_MULTI. */
extern bool perf_thread_multi;

bool perf_test_is_rma(perf_test_t test);
bool perf_test_is_tag(perf_test_t test);
bool perf_test_is_seg(perf_test_t test);
/* Tests whose result is a latency (the others give bandwidth and rate). */
bool perf_test_is_lat(perf_test_t test);
/* Ping-pong tests: a sample is a round trip, the one-way latency half of it. */
bool perf_test_is_pingpong(perf_test_t test);
/* perf_now_ns, perf_ticks: clock.h */

/* ---------------------------------------------------------------- bootstrap.c */
/* Each returns 0, or -1 after printing why. Every call waits at most timeout_s seconds. */
int perf_tcp_listen(unsigned port);
int perf_tcp_accept(int listen_fd, unsigned timeout_s);
int perf_tcp_connect(const char *host, unsigned port, unsigned timeout_s);
int perf_tcp_send_blob(int fd, const void *data, size_t length, unsigned timeout_s);
/* *data_p is malloc'ed; max bounds the length accepted. */
int perf_tcp_recv_blob(int fd, void **data_p, size_t *length_p, size_t max, unsigned timeout_s);
int perf_tcp_send_params(int fd, const perf_params_t *params, unsigned timeout_s);
int perf_tcp_recv_params(int fd, perf_params_t *params, unsigned timeout_s);
/* true when the peer closed the connection or died (never waits) */
bool perf_tcp_peer_gone(int fd);

/* ---------------------------------------------------------------- launch.c */
typedef struct perf_launch {
    ferry_bootstrap_t *bs;
    unsigned rank; /* 0: server, 1: client */
    int listen_fd; /* rank 0: listening on an ephemeral port (opt->port) */
    char host[64]; /* rank 1: where rank 0 listens (opt->host points here) */
} perf_launch_t;
/* Join the job (2 ranks); rank 0 listens, rank 1 learns where. 0, or -1 after printing why. */
int perf_launch_init(perf_launch_t *launch, perf_options_t *opt);
void perf_launch_fini(perf_launch_t *launch);

/* ---------------------------------------------------------------- tests.c */
/* Active-message ids (tests.c; the RMA_* ones carry rma.c's control messages). */
enum perf_am_id {
    AM_PING = 1,
    AM_PING_CHECK,
    AM_PONG,
    AM_PONG_CHECK,
    AM_DATA,
    AM_DATA_CHECK,
    AM_END,
    AM_ACK,
    AM_BYE,
    AM_RMA_CTRL,
    AM_RMA_REPLY,
    AM_TAG_CTRL,
    AM_TAG_REPLY,
    AM_SEG_CTRL,
    AM_SEG_REPLY,
    AM_COUNT,
};

typedef struct perf_ack {
    uint64_t count; /* messages received since the previous END */
    uint64_t bytes;
    uint64_t bad; /* messages whose length or bytes were wrong */
} perf_ack_t;

/* A control message of the one-sided and segment tests (client to server, AM_RMA_CTRL or
 * AM_SEG_CTRL header). */
typedef struct perf_ctrl {
    uint32_t op;     /* perf_ctrl_op_t (rma.c) */
    uint32_t size;   /* CHECK_WORD: the word's size (4 or 8) */
    uint64_t seed;   /* FILL, CHECK: the pattern (0: zeros); PINGPONG: the server's pattern */
    uint64_t length; /* bytes from offset 0 */
    uint64_t value;  /* CHECK: the last byte (PERF_NO_LAST: pattern); CHECK_WORD: the word */
    uint64_t count;  /* PINGPONG: round trips */
} perf_ctrl_t;

/* The server's answer (AM_RMA_REPLY and AM_SEG_REPLY header). */
typedef struct perf_ctrl_reply {
    uint64_t bad;       /* wrong bytes (0: all right) */
    uint64_t first_bad; /* offset of the first wrong byte */
    uint64_t value;     /* CHECK_WORD: the word found */
} perf_ctrl_reply_t;

/* A control message of the tag tests: a request (AM_TAG_CTRL, client to server) or the
 * server's answer (AM_TAG_REPLY). */
typedef struct perf_tag_ctrl {
    uint32_t op;     /* perf_tag_op_t (tag.c) */
    uint32_t window; /* START_BW: receives the server keeps posted */
    uint64_t seed;   /* the phase's pattern */
    uint64_t size;   /* message size */
    uint64_t count;  /* START: messages (round trips) in the phase; RESULT: messages received */
    uint64_t bytes;  /* RESULT: bytes received */
    uint64_t bad;    /* RESULT: messages with a wrong status, length, tag or bytes */
} perf_tag_ctrl_t;

typedef struct perf_tag perf_tag_t;
#define PERF_TAG_OPS 8 /* perf_tag_op_t values are below this */

typedef struct perf_seg perf_seg_t;

/* pattern.c: the byte patterns written and checked by every test */
#define PERF_PATTERN_PERIOD 65536 /* a run's pattern repeats every this many bytes */
typedef struct perf_pattern {
    uint8_t *period; /* one period of the pattern of seed */
    uint64_t seed;
} perf_pattern_t;
int perf_pattern_init(perf_pattern_t *pattern); /* -1: out of memory */
void perf_pattern_cleanup(perf_pattern_t *pattern);
/* Fill length bytes with the pattern of seed (0: zeros); count the bytes that differ from it
 * (*first_p: the first one, UINT64_MAX if none). */
void perf_pattern_fill(perf_pattern_t *pattern, uint8_t *p, size_t length, uint64_t seed);
uint64_t perf_pattern_check(perf_pattern_t *pattern, const uint8_t *p, size_t length, uint64_t seed,
                            uint64_t *first_p);

typedef struct perf_ctx {
    perf_params_t params;
    /* --threads: stream 0 owns the context and the worker; stream s > 0 (streams.c) shares
     * them, uses the active-message ids am_base + id (am_base = s * AM_COUNT) and tags that
     * carry s. Its handlers may run in any stream's thread (the one that progresses), with the
     * worker's lock held: what they count, the stream's thread reads in its polling loops. */
    unsigned stream;
    unsigned am_base;
    unsigned streams;     /* stream 0: how many there are (the peer closes that many) */
    unsigned peer_closes; /* stream 0: the peer's endpoints closed gracefully so far */
    void *peer_address;   /* stream 0: the peer worker's address, for the other streams */
    size_t peer_address_length;
    int tcp_fd;
    uint64_t timeout_ns;
    bool is_server;
    bool idle_timeout; /* false: only a vanished peer stops an idle wait (server, one-sided) */
    ferry_context_t *context;
    ferry_worker_t *worker;
    ferry_ep_t *ep;
    uint8_t *pattern;
    size_t pattern_size;
    /* the completion of every send that returned FERRY_INPROGRESS (sends_pending of them):
     * counted down from PERF_COMP_BIAS (perf_in_flight) */
    ferry_completion_t comp;
    uint64_t sends_pending;
    ferry_completion_t close_comp; /* of ferry_ep_close (here: it may outlive a failed wait) */
    /* what the handlers saw */
    uint64_t expect_length; /* client: the size of the current test */
    uint64_t pings, pongs;
    uint64_t ping_length;
    bool ping_check;
    uint64_t data_count, data_bytes;
    uint64_t bad, bad_total;
    uint64_t ends, acks;
    perf_ack_t ack;
    bool bye;         /* server: the client said goodbye */
    bool closing;     /* we are closing: the peer's graceful close is expected */
    bool peer_closed; /* the peer closed its endpoint to us */
    ferry_status_t failed;
    /* idle tracking */
    unsigned idle_polls;
    uint64_t idle_since_ns; /* 0: an event happened since the last check */

    /* one-sided tests (rma.c) */
    ferry_mem_t *mem;   /* our registration: the peer's target */
    uint8_t *region;    /* its memory */
    void *region_block; /* --mem register: the block to free after deregistering */
    size_t region_size;
    ferry_rkey_t *rkey; /* the peer's region */
    uint64_t peer_region_size;
    uint8_t *local;                /* source of puts, destination of gets (region_size bytes) */
    perf_pattern_t rma_pattern;    /* the patterns of the one-sided runs */
    ferry_completion_t rma_comp;   /* count = one-sided operations in flight */
    ferry_completion_t flush_comp; /* of the last ferry_ep_flush */
    uint64_t next_seed;            /* client: the pattern of the next run */
    perf_ctrl_t ctrl;              /* server: the last request */
    uint64_t ctrls, ctrls_done;    /* server: requests received, handled */
    perf_ctrl_reply_t reply;       /* client: the last answer */
    uint64_t replies;

    /* tag tests (tag.c) */
    perf_tag_t *tag;                    /* buffers and in-flight state */
    perf_tag_ctrl_t tag_ctrl;           /* server: the last request */
    uint64_t tag_ctrls, tag_ctrls_done; /* server: requests received, handled */
    /* client: the last answer of each kind (perf_tag_op_t), and how many came */
    perf_tag_ctrl_t tag_reply[PERF_TAG_OPS];
    uint64_t tag_replies[PERF_TAG_OPS];

    /* segment tests (seg.c) */
    perf_seg_t *seg;                    /* the segment, its map or DMA queue, buffers */
    uint64_t seg_ctrls, seg_ctrls_done; /* server: requests received, handled */
} perf_ctx_t;

/* Create context, worker, handlers, the send buffer (max_size bytes of the pattern; for the
 * one-sided tests the registered memory and the local buffer instead). With shared (stream
 * stream > 0 of --threads), use its context and worker instead of creating them. */
int perf_ctx_create(const perf_params_t *params, int tcp_fd, unsigned timeout_s, bool is_server,
                    perf_ctx_t **ctx_p);
int perf_ctx_create_stream(const perf_ctx_t *shared, unsigned stream, perf_ctx_t **ctx_p);
/* Stream > 0: the endpoint to the peer's worker (whose address stream 0 received). */
int perf_ctx_connect_stream(perf_ctx_t *ctx);
/* Swap worker addresses (and, for the one-sided tests, packed keys) over the TCP connection
 * and create the endpoint to the peer. */
int perf_ctx_connect(perf_ctx_t *ctx);
const char *perf_ctx_transport(const perf_ctx_t *ctx);
/* Client: one run of the test at sizes[index]; fills either samples (latency tests) or the
 * bandwidth figures (the others; NAN where one does not apply). */
int perf_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples);
int perf_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps);
/* Server: answer the client until it says goodbye. */
int perf_serve(perf_ctx_t *ctx);
/* Client: say goodbye. Both: close the endpoint gracefully and wait for the peer's close. */
int perf_ctx_finish(perf_ctx_t *ctx, bool is_server);
void perf_ctx_destroy(perf_ctx_t *ctx);

/* A completion shared by many operations, counted down by ferry from PERF_COMP_BIAS, which it
 * never reaches: the thread that starts the operations counts those that returned
 * FERRY_INPROGRESS (pending) and never writes count, so that a decrement made meanwhile by
 * another thread's progress (--threads) is never lost. */
#define PERF_COMP_BIAS (INT64_C(1) << 62)
static inline int64_t perf_in_flight(const ferry_completion_t *comp, uint64_t pending)
{
    int64_t done = PERF_COMP_BIAS - __atomic_load_n(&comp->count, __ATOMIC_ACQUIRE);
    return (int64_t)pending - done;
}

/* A handler counts an event that a stream's thread waits for (perf_wait_for): a release
 * store, so that what the handler wrote before is visible with the count (--threads: the
 * handler may run in another thread, under the worker's lock; the count has one writer). */
static inline void perf_count(uint64_t *counter)
{
    __atomic_store_n(counter, *counter + 1, __ATOMIC_RELEASE);
}

/* Shared with rma.c. */
void perf_fail(perf_ctx_t *ctx, ferry_status_t status, const char *what);
/* One round of progress (busy: never sleep in --wait mode); 0, or -1 when the run must stop. */
int perf_poll(perf_ctx_t *ctx, bool busy);
/* What the status of a send call means for the caller's loop (perf_send, tag.c): 0 the message
 * is on its way (FERRY_INPROGRESS counts one more in *pending), 1 FERRY_ERR_NO_RESOURCE and the
 * worker was polled (send again), -1 the run must stop (a failure is reported as call's). */
int perf_send_status(perf_ctx_t *ctx, ferry_status_t status, uint64_t *pending, const char *call);
/* A control message or reply of a test's handler: accepted when ok (the handler's checks of
 * its side and state) and header_length is size: copied to dst, true. Otherwise reported as an
 * unexpected what (with the number of requests still unanswered) and the run fails. */
bool perf_ctrl_accept(perf_ctx_t *ctx, bool ok, const void *header, size_t header_length, void *dst,
                      size_t size, uint64_t unanswered, const char *what);
/* Send an active message with length bytes of the pattern; retries FERRY_ERR_NO_RESOURCE. */
int perf_send(perf_ctx_t *ctx, unsigned id, const void *header, size_t header_length,
              size_t length);
/* Wait until at most limit sends are in flight. */
int perf_window_wait(perf_ctx_t *ctx, int64_t limit);
/* Wait until at most limit operations counted by comp (biased, *pending of them returned
 * FERRY_INPROGRESS) are in flight; one that failed fails the run (reported as what). */
int perf_comp_window(perf_ctx_t *ctx, const ferry_completion_t *comp, const uint64_t *pending,
                     int64_t limit, const char *what);
static inline int perf_window(perf_ctx_t *ctx, int64_t limit)
{
    /* inline: the streaming loops check it after every send, and it is almost always open */
    if (perf_in_flight(&ctx->comp, ctx->sends_pending) <= limit && ctx->comp.status == FERRY_OK)
        return 0;
    return perf_window_wait(ctx, limit);
}
int perf_wait_for(perf_ctx_t *ctx, const uint64_t *counter, uint64_t target);

/* ---------------------------------------------------------------- streams.c */
/* Streams 1 .. threads-1 beside stream 0 (ctxs[0]): their handlers and buffers (before
 * stream 0 connects, so that the peer's first message finds its handler), then (after)
 * their endpoints and, on the client, one END/ACK round trip each. 0, or -1 after printing. */
int perf_streams_create(perf_ctx_t **ctxs, unsigned threads);
int perf_streams_connect(perf_ctx_t **ctxs, unsigned threads);
/* Client: one run of every stream at once, a thread each; latency figures: the mean of the
 * streams' (each from its own samples), bandwidth and message rate: the sum. */
int perf_streams_run(perf_ctx_t **ctxs, unsigned threads, unsigned index, perf_result_t *result);
/* Server: serve every stream, a thread each, until each client stream said goodbye. */
int perf_streams_serve(perf_ctx_t **ctxs, unsigned threads);
/* Finish streams 1 .. threads-1 (their goodbyes, their endpoints) and destroy them. */
int perf_streams_finish(perf_ctx_t **ctxs, unsigned threads, bool is_server);
void perf_streams_destroy(perf_ctx_t **ctxs, unsigned threads);

/* ---------------------------------------------------------------- rma.c */
#define PERF_NO_LAST UINT64_MAX

/* A page-aligned, zeroed buffer; 2 MiB-aligned on transparent huge pages from 2 MiB up unless
 * --no-thp (free() it). */
void *perf_buffer_alloc(const perf_ctx_t *ctx, size_t size);
/* Allocate or register the region and the local buffer (perf_ctx_create). */
int perf_rma_create(perf_ctx_t *ctx);
/* Swap packed keys over TCP and unpack the peer's (perf_ctx_connect, after the endpoint). */
int perf_rma_connect(perf_ctx_t *ctx);
void perf_rma_destroy(perf_ctx_t *ctx);
ferry_status_t perf_rma_on_ctrl(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ferry_am_recv_params_t *params);
ferry_status_t perf_rma_on_reply(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params);
/* Server: handle the request received last (perf_serve). */
int perf_rma_serve(perf_ctx_t *ctx);
/* Client: one run (as perf_run_lat / perf_run_bw). */
int perf_rma_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples);
int perf_rma_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps);

/* ---------------------------------------------------------------- tag.c */
/* Allocate the message buffers (perf_ctx_create) / free them (after the worker is gone). */
int perf_tag_create(perf_ctx_t *ctx);
void perf_tag_destroy(perf_ctx_t *ctx);
ferry_status_t perf_tag_on_ctrl(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ferry_am_recv_params_t *params);
ferry_status_t perf_tag_on_reply(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params);
/* Server: run the phase the client asked for last (perf_serve). */
int perf_tag_serve(perf_ctx_t *ctx);
/* Client: one run (as perf_run_lat / perf_run_bw). */
int perf_tag_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples);
int perf_tag_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps);

/* ---------------------------------------------------------------- seg.c */
/* Server: create, prepare and make available the segment; client: the local buffer
 * (perf_ctx_create). */
int perf_seg_create(perf_ctx_t *ctx);
/* Server: send the segment's id over TCP; client: receive it, connect, map the flag word or
 * create the DMA queue (perf_ctx_connect, after the endpoint). */
int perf_seg_connect(perf_ctx_t *ctx);
/* Client: unmap, destroy the queue, disconnect (perf_ctx_finish, before the goodbye); server:
 * check that the client connected and disconnected once. */
int perf_seg_finish(perf_ctx_t *ctx);
/* Release the ferry objects that are left (before the endpoint goes) / free the buffers (after
 * the worker is gone). */
void perf_seg_close(perf_ctx_t *ctx);
void perf_seg_destroy(perf_ctx_t *ctx);
ferry_status_t perf_seg_on_ctrl(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ferry_am_recv_params_t *params);
ferry_status_t perf_seg_on_reply(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params);
/* Server: handle the request received last (perf_serve). */
int perf_seg_serve(perf_ctx_t *ctx);
/* Client: one run (as perf_run_lat / perf_run_bw). */
int perf_seg_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples);
int perf_seg_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps);

/* ---------------------------------------------------------------- report.c */
/* Latency figures (µs) of a run's samples; sorts them. pingpong: the samples are round trips
 * and the figures half of them (one way). */
void perf_latency_stats(perf_samples_t *samples, bool pingpong, double *p50_us, double *avg_us,
                        double *p99_us);
double perf_median(double *values, unsigned count);
/* Bandwidth (GB/s: bytes per ns) and message rate (M/s) of iters operations of size bytes in
 * elapsed_ns (taken as at least 1). */
void perf_rates(uint64_t size, uint64_t iters, uint64_t elapsed_ns, double *bw_GBps,
                double *msgrate_Mps);
void perf_print_header(perf_format_t format);
void perf_print_result(perf_format_t format, const perf_result_t *result);
/* Progress on stderr, only when it is a terminal and the run lasts longer than a second. */
void perf_progress_start(const char *what, uint64_t total);
void perf_progress_update(uint64_t done);
void perf_progress_end(void);

#endif
