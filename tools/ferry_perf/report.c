/* Statistics and output: the table (for people), CSV and JSON (for scripts), and a progress
 * line on stderr when it is a terminal. */
#define _GNU_SOURCE
#include <math.h> /* NAN, isnan: macros */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "perf.h"

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void perf_latency_stats(perf_samples_t *samples, bool pingpong, double *p50_us, double *avg_us,
                        double *p99_us)
{
    uint64_t n = samples->count;
    uint64_t *v = samples->ticks;
    double sum = 0;
    /* ticks -> µs; one way = half the round trip */
    double us = perf_ticks_ns(1000000) / 1e9 / (pingpong ? 2.0 : 1.0);

    qsort(v, n, sizeof(*v), compare_u64);
    for (uint64_t i = 0; i < n; i++)
        sum += (double)v[i];
    double median = n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
    uint64_t i99 = (99 * n + 99) / 100; /* ceil(0.99 n): no libm needed */
    *p50_us = median * us;
    *avg_us = sum / (double)n * us;
    *p99_us = (double)v[i99 > 0 ? i99 - 1 : 0] * us;
}

double perf_median(double *values, unsigned count)
{
    if (count == 0 || isnan(values[0]))
        return NAN;
    qsort(values, count, sizeof(*values), compare_double);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

void perf_print_header(perf_format_t format)
{
    switch (format) {
    case PERF_FORMAT_TABLE:
        printf("%-11s %10s %9s %10s %10s %10s %10s %10s\n", "test", "size(B)", "iters", "p50(us)",
               "avg(us)", "p99(us)", "BW(GB/s)", "rate(M/s)");
        break;
    case PERF_FORMAT_CSV:
        printf("test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps\n");
        break;
    case PERF_FORMAT_JSON:
        break;
    }
    fflush(stdout);
}

/* A figure for the table: "-" when it does not apply. */
static const char *table_cell(char *buffer, size_t length, double value, const char *format)
{
    if (isnan(value))
        return "-";
    snprintf(buffer, length, format, value);
    return buffer;
}

/* A figure for CSV (empty) or JSON (null) when it does not apply. */
static const char *data_cell(char *buffer, size_t length, double value, const char *missing)
{
    if (isnan(value))
        return missing;
    snprintf(buffer, length, "%.4f", value);
    return buffer;
}

void perf_print_result(perf_format_t format, const perf_result_t *r)
{
    char a[32], b[32], c[32], d[32], e[32];
    switch (format) {
    case PERF_FORMAT_TABLE:
        printf("%-11s %10llu %9llu %10s %10s %10s %10s %10s\n", perf_test_name(r->test),
               (unsigned long long)r->size, (unsigned long long)r->iters,
               table_cell(a, sizeof(a), r->lat_p50_us, "%.3f"),
               table_cell(b, sizeof(b), r->lat_avg_us, "%.3f"),
               table_cell(c, sizeof(c), r->lat_p99_us, "%.3f"),
               table_cell(d, sizeof(d), r->bw_GBps, "%.3f"),
               table_cell(e, sizeof(e), r->msgrate_Mps, "%.3f"));
        break;
    case PERF_FORMAT_CSV:
        printf("%s,%llu,%llu,%s,%s,%s,%s\n", perf_test_name(r->test), (unsigned long long)r->size,
               (unsigned long long)r->iters, data_cell(a, sizeof(a), r->lat_p50_us, ""),
               data_cell(b, sizeof(b), r->lat_avg_us, ""), data_cell(d, sizeof(d), r->bw_GBps, ""),
               data_cell(e, sizeof(e), r->msgrate_Mps, ""));
        break;
    case PERF_FORMAT_JSON:
        printf(
            "{\"test\":\"%s\",\"size\":%llu,\"iterations\":%llu,\"repeat\":%u,\"wait\":%s,"
            "\"mem\":%s,\"transport\":\"%s\",\"lat_p50_us\":%s,\"lat_avg_us\":%s,\"lat_p99_us\":%s,"
            "\"bw_GBps\":%s,\"msgrate_Mps\":%s}\n",
            perf_test_name(r->test), (unsigned long long)r->size, (unsigned long long)r->iters,
            r->repeat, r->wait ? "true" : "false",
            !perf_test_is_rma(r->test)    ? "null"
            : r->mem == PERF_MEM_REGISTER ? "\"register\""
                                          : "\"alloc\"",
            r->transport, data_cell(a, sizeof(a), r->lat_p50_us, "null"),
            data_cell(b, sizeof(b), r->lat_avg_us, "null"),
            data_cell(c, sizeof(c), r->lat_p99_us, "null"),
            data_cell(d, sizeof(d), r->bw_GBps, "null"),
            data_cell(e, sizeof(e), r->msgrate_Mps, "null"));
        break;
    }
    fflush(stdout);
}

/* ---------------------------------------------------------------- progress line */

#define PROGRESS_AFTER_NS 1000000000ull /* runs shorter than this show nothing */
#define PROGRESS_EVERY_NS 200000000ull

/* per thread: with --threads, every stream's thread has its own (streams.c) */
static _Thread_local struct {
    int tty; /* -1: not asked yet */
    const char *what;
    uint64_t total;
    uint64_t start_ns;
    uint64_t last_ns;
    bool shown;
} progress = {.tty = -1};

void perf_progress_start(const char *what, uint64_t total)
{
    if (progress.tty < 0)
        progress.tty = isatty(STDERR_FILENO);
    progress.what = what;
    progress.total = total;
    progress.start_ns = perf_now_ns();
    progress.last_ns = progress.start_ns;
    progress.shown = false;
}

void perf_progress_update(uint64_t done)
{
    if (progress.tty <= 0)
        return;
    uint64_t now = perf_now_ns();
    if (now - progress.start_ns < PROGRESS_AFTER_NS || now - progress.last_ns < PROGRESS_EVERY_NS)
        return;
    progress.last_ns = now;
    progress.shown = true;
    fprintf(stderr, "\r%s: %llu/%llu (%.0f%%)", progress.what, (unsigned long long)done,
            (unsigned long long)progress.total,
            progress.total ? 100.0 * (double)done / (double)progress.total : 100.0);
}

void perf_progress_end(void)
{
    if (progress.shown)
        fprintf(stderr, "\r\033[K");
    progress.shown = false;
}

void perf_rates(uint64_t size, uint64_t iters, uint64_t elapsed_ns, double *bw_GBps,
                double *msgrate_Mps)
{
    double ns = elapsed_ns == 0 ? 1.0 : (double)elapsed_ns;
    *bw_GBps = (double)size * (double)iters / ns; /* bytes per ns = GB/s */
    *msgrate_Mps = (double)iters * 1e3 / ns;      /* per ns * 1e3 = M per s */
}
