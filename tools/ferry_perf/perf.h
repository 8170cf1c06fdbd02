/* ferry_perf: latency and bandwidth of ferry's active messages between two processes, in the
 * spirit of ucx_perftest. The files split it by idea:
 *   main.c       options, help, pinning, the client's and the server's sequence
 *   bootstrap.c  the TCP connection that carries worker addresses and test parameters
 *   tests.c      ferry objects, the am_lat and am_bw tests (client and server sides)
 *   report.c     statistics, table / CSV / JSON output, the progress line
 * Only the public API (ferry/ferry.h) is used. */
#ifndef FERRY_PERF_H
#define FERRY_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#define PERF_DEFAULT_PORT 13337
#define PERF_DEFAULT_TIMEOUT_S 10
#define PERF_ACCEPT_TIMEOUT_MIN_S 60
#define PERF_MAX_SIZES 32
#define PERF_MAX_MESSAGE (1ull << 30) /* largest message size accepted by -s */
#define PERF_MAX_ADDRESS 65536        /* largest worker address accepted from a peer */

typedef enum perf_test {
    PERF_TEST_NONE = 0,
    PERF_TEST_AM_LAT = 1,
    PERF_TEST_AM_BW = 2,
} perf_test_t;

typedef enum perf_format {
    PERF_FORMAT_TABLE,
    PERF_FORMAT_CSV,
    PERF_FORMAT_JSON,
} perf_format_t;

/* What the client decides and sends to the server (bootstrap.c encodes it). */
typedef struct perf_params {
    perf_test_t test;
    bool wait;       /* ferry_worker_wait instead of busy polling */
    unsigned repeat; /* runs per size */
    unsigned size_count;
    uint64_t sizes[PERF_MAX_SIZES];
    uint64_t iters[PERF_MAX_SIZES];  /* measured iterations per run */
    uint64_t warmup[PERF_MAX_SIZES]; /* warm-up iterations per run (their data is checked) */
} perf_params_t;

typedef struct perf_options {
    const char *host; /* NULL: server */
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
    const char *transport;
    double lat_p50_us; /* one-way latency */
    double lat_avg_us;
    double lat_p99_us;
    double bw_GBps; /* 10^9 bytes per second */
    double msgrate_Mps;
} perf_result_t;

/* Latency samples of one run (round-trip times in ns). */
typedef struct perf_samples {
    uint64_t *rtt_ns;
    uint64_t count;
} perf_samples_t;

/* ---------------------------------------------------------------- main.c */
const char *perf_test_name(perf_test_t test);
uint64_t perf_now_ns(void);

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

/* ---------------------------------------------------------------- tests.c */
typedef struct perf_ctx perf_ctx_t;

/* Create context, worker, handlers, the send buffer (max_size bytes of the pattern). */
int perf_ctx_create(const perf_params_t *params, int tcp_fd, unsigned timeout_s, bool is_server,
                    perf_ctx_t **ctx_p);
/* Swap worker addresses over the TCP connection and create the endpoint to the peer. */
int perf_ctx_connect(perf_ctx_t *ctx);
const char *perf_ctx_transport(const perf_ctx_t *ctx);
/* Client: one run of the test at sizes[index]; fills either samples (am_lat) or the
 * bandwidth figures (am_bw). */
int perf_run_lat(perf_ctx_t *ctx, unsigned index, perf_samples_t *samples);
int perf_run_bw(perf_ctx_t *ctx, unsigned index, double *bw_GBps, double *msgrate_Mps);
/* Server: answer the client until it says goodbye. */
int perf_serve(perf_ctx_t *ctx);
/* Client: say goodbye. Both: close the endpoint gracefully and wait for the peer's close. */
int perf_ctx_finish(perf_ctx_t *ctx, bool is_server);
void perf_ctx_destroy(perf_ctx_t *ctx);

/* ---------------------------------------------------------------- report.c */
/* One-way latency figures (µs) of a run's round-trip samples; sorts them. */
void perf_latency_stats(perf_samples_t *samples, double *p50_us, double *avg_us, double *p99_us);
double perf_median(double *values, unsigned count);
void perf_print_header(perf_format_t format);
void perf_print_result(perf_format_t format, const perf_result_t *result);
/* Progress on stderr, only when it is a terminal and the run lasts longer than a second. */
void perf_progress_start(const char *what, uint64_t total);
void perf_progress_update(uint64_t done);
void perf_progress_end(void);

#endif
