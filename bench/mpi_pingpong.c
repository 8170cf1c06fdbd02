/* mpi_pingpong: the MPI counterpart of ferry_perf's tag_lat and tag_bw, for bench/compare_tag.sh.
 * Built by that script with mpicc (Open MPI is only a benchmark dependency, not a CMake one),
 * with ferry_perf's clock.c, parse.c and keyed.c (the same clock, option parsing and byte
 * pattern):
 *
 *   mpirun -np 2 --bind-to core mpi_pingpong -t tag_lat|tag_bw|poll [-s SIZE[,SIZE...]]
 *          [-n ITERS] [-w WARMUP] [--no-thp]
 *
 * Rank 0 is the server (responder), rank 1 the client (it measures and prints): with
 * --bind-to core, the server runs on core 0 and the client on core 1, as ferry_perf's and
 * ucx_perftest's in compare_tag.sh. The output is ferry_perf's CSV
 * (test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps), one line per size.
 *
 * What it does is what ferry_perf's tag tests do (tools/ferry_perf/tag.c), with MPI calls:
 *   tag_lat  the client posts MPI_Irecv of the PONG, MPI_Send's the PING and waits; the server
 *            keeps two receives posted and answers each PING with a PONG (MPI_Isend). One
 *            sample is one round trip, timed with the TSC; one-way latency = half of it.
 *   tag_bw   the client keeps WINDOW MPI_Isend's in flight (waiting for the oldest before it
 *            reuses its request), the server as many MPI_Irecv's posted, all into one buffer
 *            (as osu_bw and ucx_perftest); the clock stops when the server's RECEIVED message
 *            says the last message is in place.
 *   poll     the cost of looking for a message that is not there: the client posts an MPI_Irecv
 *            that nothing matches and times ITERS MPI_Test's of it (default 2000000, after
 *            WARMUP more), then cancels it; the server waits. lat_p50_us and lat_avg_us are
 *            both the mean time of one MPI_Test. A message that arrives while a rank polls so
 *            waits half such a call on average before the rank sees it.
 * Each phase (warm-up, measured) starts after an MPI_Barrier that follows the server's first
 * receives, has its own pattern, and is checked when it is over: every receive's length and
 * tag as it completes, the received bytes at the end (not timed). Buffers of 2 MiB and more are 2
 * MiB aligned with madvise(MADV_HUGEPAGE), as ferry_perf's and ucx_perftest's are.
 *
 * Exit status: 0 success, 1 a run failed (wrong data), 2 bad options. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../tools/ferry_perf/clock.h"
#include "../tools/ferry_perf/keyed.h"
#include "../tools/ferry_perf/parse.h"

#define MP_WINDOW 16 /* as ferry_perf's PERF_TAG_WINDOW */
#define MP_MAX_SIZES 32
#define MP_MAX_MESSAGE (1ull << 30)
#define MP_ALIGN 4096u
#define MP_HUGE_PAGE (2u << 20)
#define MP_SERVER 0
#define MP_CLIENT 1

enum {
    MP_KIND_PING = 1,
    MP_KIND_PONG,
    MP_KIND_DATA,
    MP_KIND_RECEIVED,
    MP_KIND_RESULT,
    MP_KIND_NEVER
};
#define MP_POLL_ITERS 2000000u

/* The first line of the client's output: ferry_perf's CSV columns. */
static const char mp_csv_header[] =
    "test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps";

typedef struct mp_options {
    bool bw;
    bool poll; /* -t poll */
    bool no_thp;
    unsigned size_count;
    uint64_t sizes[MP_MAX_SIZES];
    uint64_t iters; /* 0: by size, as ferry_perf */
    int64_t warmup; /* -1: iters / 10 */
} mp_options_t;

typedef struct mp_state {
    uint8_t *send, *recv;
    size_t max_size, recv_alloc;
    perf_keyed_t keyed; /* the pattern: ferry_perf's tag tests' (keyed.h) */
    uint64_t next_seed;
    bool no_thp;
} mp_state_t;

/* time: tools/ferry_perf/clock.c (perf_now_ns, perf_ticks) */

/* Bytes of p[0, length) that differ from the pattern of seed. */
static uint64_t keyed_bad(mp_state_t *st, const uint8_t *p, size_t length, uint64_t seed)
{
    uint64_t first;
    return perf_keyed_check(&st->keyed, p, length, seed, &first);
}

static uint64_t next_seed(mp_state_t *st)
{
    st->next_seed = st->next_seed % 255 + 1;
    return st->next_seed;
}

/* An MPI tag of kind for the phase of seed (at most 5 * 256 + 255: below MPI_TAG_UB's 32767). */
static int tag_of(uint64_t seed, int kind)
{
    return kind * 256 + (int)seed;
}

/* ---------------------------------------------------------------- buffers */

static void *buffer_alloc(const mp_state_t *st, size_t size, size_t *alloc_p)
{
    bool huge = !st->no_thp && size >= MP_HUGE_PAGE;
    size_t align = huge ? MP_HUGE_PAGE : MP_ALIGN;
    size_t alloc = (size + align - 1) / align * align;
    if (alloc == 0)
        alloc = align;
    void *p = aligned_alloc(align, alloc);
    if (p == NULL)
        return NULL;
    if (huge)
        madvise(p, alloc, MADV_HUGEPAGE);
    memset(p, 0, alloc);
    *alloc_p = alloc;
    return p;
}

static size_t stride_of(uint64_t size)
{
    return (size_t)((size + MP_ALIGN - 1) / MP_ALIGN * MP_ALIGN);
}

/* ---------------------------------------------------------------- tag_lat */

/* One phase of count round trips. Client: samples (NULL: warm-up) gets each one's ticks;
 * returns the wrong messages and bytes it saw plus those the server reported. */
static uint64_t lat_phase(mp_state_t *st, int rank, size_t size, uint64_t count, uint64_t *samples)
{
    uint64_t seed = next_seed(st), bad = 0;
    int ping = tag_of(seed, MP_KIND_PING), pong = tag_of(seed, MP_KIND_PONG);
    int result = tag_of(seed, MP_KIND_RESULT);
    int n;
    MPI_Status status;

    if (rank == MP_SERVER) {
        size_t stride = stride_of(size);
        uint8_t *buf[2] = {st->recv, st->recv + stride};
        MPI_Request recv[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, send;
        unsigned posted = count < 2 ? (unsigned)count : 2;
        perf_keyed_fill(&st->keyed, st->send, size, seed ^ 0x80);
        for (unsigned s = 0; s < posted; s++)
            MPI_Irecv(buf[s], (int)size, MPI_BYTE, MP_CLIENT, ping, MPI_COMM_WORLD, &recv[s]);
        MPI_Barrier(MPI_COMM_WORLD);
        for (uint64_t i = 0; i < count; i++) {
            unsigned s = (unsigned)(i % 2);
            MPI_Wait(&recv[s], &status);
            MPI_Get_count(&status, MPI_BYTE, &n);
            bad += n != (int)size || status.MPI_TAG != ping;
            MPI_Isend(st->send, (int)size, MPI_BYTE, MP_CLIENT, pong, MPI_COMM_WORLD, &send);
            if (i + 2 < count)
                MPI_Irecv(buf[s], (int)size, MPI_BYTE, MP_CLIENT, ping, MPI_COMM_WORLD, &recv[s]);
            MPI_Wait(&send, MPI_STATUS_IGNORE);
        }
        for (unsigned s = 0; s < posted; s++)
            bad += keyed_bad(st, buf[s], size, seed);
        MPI_Send(&bad, 1, MPI_UINT64_T, MP_CLIENT, result, MPI_COMM_WORLD);
        return bad;
    }

    MPI_Request recv;
    uint64_t server_bad = 0;
    perf_keyed_fill(&st->keyed, st->send, size, seed);
    MPI_Barrier(MPI_COMM_WORLD);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t begin = perf_ticks();
        MPI_Irecv(st->recv, (int)size, MPI_BYTE, MP_SERVER, pong, MPI_COMM_WORLD, &recv);
        MPI_Send(st->send, (int)size, MPI_BYTE, MP_SERVER, ping, MPI_COMM_WORLD);
        MPI_Wait(&recv, &status);
        if (samples != NULL)
            samples[i] = perf_ticks() - begin;
        MPI_Get_count(&status, MPI_BYTE, &n);
        bad += n != (int)size || status.MPI_TAG != pong;
    }
    MPI_Recv(&server_bad, 1, MPI_UINT64_T, MP_SERVER, result, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (count > 0)
        bad += keyed_bad(st, st->recv, size, seed ^ 0x80);
    return bad + server_bad;
}

/* ---------------------------------------------------------------- tag_bw */

/* One phase of count messages; client: *elapsed_ns from the first send to the RECEIVED. */
static uint64_t bw_phase(mp_state_t *st, int rank, size_t size, uint64_t count,
                         uint64_t *elapsed_ns)
{
    uint64_t seed = next_seed(st);
    int data = tag_of(seed, MP_KIND_DATA), received = tag_of(seed, MP_KIND_RECEIVED);
    int result = tag_of(seed, MP_KIND_RESULT);
    MPI_Request req[MP_WINDOW];
    MPI_Status status;
    uint64_t r[3] = {0, 0, 0}; /* count, bytes, bad */
    int n;

    for (unsigned s = 0; s < MP_WINDOW; s++)
        req[s] = MPI_REQUEST_NULL;
    if (rank == MP_SERVER) {
        for (uint64_t i = 0; i < count && i < MP_WINDOW; i++)
            MPI_Irecv(st->recv, (int)size, MPI_BYTE, MP_CLIENT, data, MPI_COMM_WORLD, &req[i]);
        MPI_Barrier(MPI_COMM_WORLD);
        for (uint64_t i = 0; i < count; i++) {
            unsigned s = (unsigned)(i % MP_WINDOW);
            MPI_Wait(&req[s], &status);
            MPI_Get_count(&status, MPI_BYTE, &n);
            r[0]++;
            r[1] += (uint64_t)n;
            r[2] += n != (int)size || status.MPI_TAG != data;
            if (i + MP_WINDOW < count)
                MPI_Irecv(st->recv, (int)size, MPI_BYTE, MP_CLIENT, data, MPI_COMM_WORLD, &req[s]);
        }
        MPI_Send(r, 3, MPI_UINT64_T, MP_CLIENT, received, MPI_COMM_WORLD); /* ends the timing */
        if (count > 0)
            r[2] += keyed_bad(st, st->recv, size, seed);
        MPI_Send(&r[2], 1, MPI_UINT64_T, MP_CLIENT, result, MPI_COMM_WORLD);
        return r[2];
    }

    perf_keyed_fill(&st->keyed, st->send, size, seed);
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t begin = perf_now_ns();
    for (uint64_t i = 0; i < count; i++) {
        unsigned s = (unsigned)(i % MP_WINDOW);
        MPI_Wait(&req[s], MPI_STATUS_IGNORE);
        MPI_Isend(st->send, (int)size, MPI_BYTE, MP_SERVER, data, MPI_COMM_WORLD, &req[s]);
    }
    MPI_Recv(r, 3, MPI_UINT64_T, MP_SERVER, received, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    *elapsed_ns = perf_now_ns() - begin;
    MPI_Waitall(MP_WINDOW, req, MPI_STATUSES_IGNORE);
    MPI_Recv(&r[2], 1, MPI_UINT64_T, MP_SERVER, result, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (r[0] != count || r[1] != count * size)
        r[2]++;
    return r[2];
}

/* ---------------------------------------------------------------- options, main */

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t default_iters(uint64_t size)
{
    if (size <= 4096)
        return 100000;
    uint64_t n = (1ull << 30) / size;
    return n < 20 ? 20 : n > 100000 ? 100000 : n;
}

static int usage(const char *why, const char *arg)
{
    fprintf(stderr, "mpi_pingpong: %s%s%s\n", why, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "usage: mpirun -np 2 mpi_pingpong -t tag_lat|tag_bw|poll [-s SIZE[,SIZE...]] "
                    "[-n ITERS] [-w WARMUP] [--no-thp]\n");
    return -1;
}

static int parse_options(int argc, char **argv, mp_options_t *opt)
{
    bool have_test = false;
    memset(opt, 0, sizeof(*opt));
    opt->warmup = -1;
    opt->size_count = 1;
    opt->sizes[0] = 8;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t v;
        if (strcmp(arg, "--no-thp") == 0) {
            opt->no_thp = true;
            continue;
        }
        if (value == NULL)
            return usage("missing value or unknown option", arg);
        i++;
        if (strcmp(arg, "-t") == 0) {
            if (strcmp(value, "tag_lat") != 0 && strcmp(value, "tag_bw") != 0 &&
                strcmp(value, "poll") != 0)
                return usage("unknown test (tag_lat, tag_bw or poll)", value);
            opt->bw = strcmp(value, "tag_bw") == 0;
            opt->poll = strcmp(value, "poll") == 0;
            have_test = true;
        } else if (strcmp(arg, "-s") == 0) {
            char *copy = strdup(value), *save = NULL;
            opt->size_count = 0;
            for (char *item = strtok_r(copy, ",", &save); item != NULL;
                 item = strtok_r(NULL, ",", &save)) {
                if (opt->size_count == MP_MAX_SIZES ||
                    perf_parse_u64(item, true, MP_MAX_MESSAGE, &v) != 0 || v > INT32_MAX) {
                    free(copy);
                    return usage("bad size (at most 32 sizes, each below 2 GiB)", item);
                }
                opt->sizes[opt->size_count++] = v;
            }
            free(copy);
            if (opt->size_count == 0)
                return usage("no size in", value);
        } else if (strcmp(arg, "-n") == 0) {
            if (perf_parse_u64(value, false, UINT32_MAX, &v) != 0 || v == 0)
                return usage("bad iteration count", value);
            opt->iters = v;
        } else if (strcmp(arg, "-w") == 0) {
            if (perf_parse_u64(value, false, UINT32_MAX, &v) != 0)
                return usage("bad warm-up count", value);
            opt->warmup = (int64_t)v;
        } else {
            return usage("unknown option", arg);
        }
    }
    if (!have_test)
        return usage("missing -t tag_lat|tag_bw|poll", NULL);
    return 0;
}

/* -t poll: the client times MPI_Test's of a receive nothing matches. */
static int run_poll(const mp_options_t *opt, int rank)
{
    uint64_t iters = opt->iters ? opt->iters : MP_POLL_ITERS;
    uint64_t warmup = opt->warmup >= 0 ? (uint64_t)opt->warmup : iters / 10;
    if (rank == MP_CLIENT) {
        uint8_t byte;
        int flag = 0;
        MPI_Request req;
        MPI_Irecv(&byte, 1, MPI_BYTE, MP_SERVER, MP_KIND_NEVER, MPI_COMM_WORLD, &req);
        for (uint64_t i = 0; i < warmup && !flag; i++)
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        uint64_t begin = perf_ticks();
        for (uint64_t i = 0; i < iters && !flag; i++)
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        double us = perf_ticks_ns(perf_ticks() - begin) / 1000.0 / (double)iters;
        if (flag) {
            fprintf(stderr, "mpi_pingpong: poll: a receive nothing matches completed\n");
            return -1;
        }
        MPI_Cancel(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        printf("%s\n", mp_csv_header);
        printf("poll,0,%llu,%.6f,%.6f,,\n", (unsigned long long)iters, us, us);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}

static int run(const mp_options_t *opt, int rank)
{
    if (opt->poll)
        return run_poll(opt, rank);
    mp_state_t *st = calloc(1, sizeof(*st));
    uint64_t recv_bytes = 0, bad_total = 0;
    int failed = 0;

    if (st == NULL)
        return -1;
    st->no_thp = opt->no_thp;
    if (perf_keyed_init(&st->keyed) != 0) {
        free(st);
        return -1;
    }
    for (unsigned i = 0; i < opt->size_count; i++) {
        uint64_t size = opt->sizes[i];
        uint64_t bufs = rank == MP_SERVER && !opt->bw ? 2 : 1;
        if (size > st->max_size)
            st->max_size = size;
        if (stride_of(size) * bufs > recv_bytes)
            recv_bytes = stride_of(size) * bufs;
    }
    size_t send_alloc;
    st->send = buffer_alloc(st, st->max_size, &send_alloc);
    st->recv = buffer_alloc(st, (size_t)recv_bytes, &st->recv_alloc);
    if (st->send == NULL || st->recv == NULL) {
        fprintf(stderr, "mpi_pingpong: out of memory for %llu-byte buffers\n",
                (unsigned long long)recv_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == MP_CLIENT)
        printf("%s\n", mp_csv_header);
    for (unsigned i = 0; i < opt->size_count && failed == 0; i++) {
        size_t size = (size_t)opt->sizes[i];
        uint64_t iters = opt->iters ? opt->iters : default_iters(size);
        uint64_t warmup = opt->warmup >= 0 ? (uint64_t)opt->warmup : iters / 10;
        uint64_t bad;
        if (opt->bw) {
            uint64_t elapsed = 0;
            bad = bw_phase(st, rank, size, warmup, &elapsed);
            bad += bw_phase(st, rank, size, iters, &elapsed);
            if (rank == MP_CLIENT && bad == 0) {
                double ns = elapsed ? (double)elapsed : 1.0;
                printf("tag_bw,%zu,%llu,,,%.4f,%.4f\n", size, (unsigned long long)iters,
                       (double)size * (double)iters / ns, (double)iters * 1e3 / ns);
            }
        } else {
            uint64_t *samples = rank == MP_CLIENT ? malloc(iters * sizeof(*samples)) : NULL;
            if (rank == MP_CLIENT && samples == NULL) {
                fprintf(stderr, "mpi_pingpong: out of memory for samples\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            bad = lat_phase(st, rank, size, warmup, NULL);
            bad += lat_phase(st, rank, size, iters, samples);
            if (rank == MP_CLIENT && bad == 0) {
                double sum = 0, us = perf_ticks_ns(1) / 1000.0 / 2.0; /* one way */
                qsort(samples, iters, sizeof(*samples), compare_u64);
                for (uint64_t k = 0; k < iters; k++)
                    sum += (double)samples[k];
                double median =
                    iters % 2 ? (double)samples[iters / 2]
                              : ((double)samples[iters / 2 - 1] + (double)samples[iters / 2]) / 2;
                printf("tag_lat,%zu,%llu,%.4f,%.4f,,\n", size, (unsigned long long)iters,
                       median * us, sum / (double)iters * us);
            }
            free(samples);
        }
        fflush(stdout);
        uint64_t any = 0; /* one rank may have seen what the other did not: stop both */
        MPI_Allreduce(&bad, &any, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        if (any != 0)
            failed = 1;
        if (bad != 0) {
            fprintf(stderr, "mpi_pingpong: rank %d, %s %zu B: %llu wrong messages or bytes\n", rank,
                    opt->bw ? "tag_bw" : "tag_lat", size, (unsigned long long)bad);
        }
        bad_total += bad;
    }
    free(st->send);
    free(st->recv);
    perf_keyed_cleanup(&st->keyed);
    free(st);
    return bad_total || failed ? -1 : 0;
}

int main(int argc, char **argv)
{
    mp_options_t opt;
    int rank, size, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse_options(argc, argv, &opt) != 0) {
        MPI_Finalize();
        return 2;
    }
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks (mpirun -np 2), not %d\n", size);
        MPI_Finalize();
        return 2;
    }
    perf_ticks_init();
    rc = run(&opt, rank);
    /* both ranks agree on the verdict (a rank that saw wrong data exits 1, so does mpirun) */
    int local = rc != 0, any = 0;
    MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
