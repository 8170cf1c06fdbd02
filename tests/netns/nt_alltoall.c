/* nt_alltoall: every rank sends to every other rank tagged messages of several sizes and a
 * number of active messages, for some rounds; every byte, tag, length and order is checked.
 * Used for the 3-host all-to-all, the 4-rank mpirun job (2 ranks per host: shm between ranks
 * of one host, tcp across: nt_job_check_transports), and the packet-loss run.
 *
 *   nt_alltoall [-r ROUNDS] [-s SIZE,SIZE,...] [-a AM_COUNT] [-m AM_MAX_BYTES]
 *   defaults: 2 rounds, sizes 0,100,4096,70000,1M,4M, 200 AMs of 0 .. 2000 bytes per peer.
 * Sizes take a K or M suffix. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_check.h"
#include "ft_pattern.h"
#include "ft_progress.h"
#include "nt_job.h"

#define NT_TIMEOUT_MS 90000
#define NT_AM_ID 11
#define NT_SIZES_MAX 16

static nt_job_t job;
static size_t sizes[NT_SIZES_MAX] = {0, 100, 4096, 70000, 1u << 20, 4u << 20};
static unsigned size_count = 6;
static unsigned rounds = 2, am_count = 200, am_max = 2000;

typedef struct am_header {
    uint32_t sender;
    uint32_t round;
    uint32_t seq;
    uint32_t size;
} am_header_t;

static uint64_t *am_next;    /* per sender: the next seq expected */
static uint64_t am_received; /* in all */
static unsigned current_round;

static size_t am_size(unsigned seq)
{
    return am_max == 0 ? 0 : (size_t)((seq * 7919u) % (am_max + 1));
}

static uint64_t tag_of(unsigned sender, unsigned round, unsigned i)
{
    return ((uint64_t)sender << 40) | ((uint64_t)round << 16) | i;
}

static ferry_status_t am_handler(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    am_header_t h;
    (void)arg;
    (void)params;
    FT_CHECK(header_length == sizeof(h), "AM header of %zu bytes", header_length);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.sender < job.size && h.sender != job.rank, "AM from rank %u", h.sender);
    FT_CHECK(h.round == current_round || h.round == current_round + 1,
             "AM of round %u during round %u", h.round, current_round);
    uint64_t want = (uint64_t)h.round * am_count + h.seq;
    FT_CHECK(want == am_next[h.sender], "AM %u/%u from rank %u arrived out of order", h.round,
             h.seq, h.sender);
    FT_CHECK(length == am_size(h.seq) && length == h.size, "AM %u from rank %u: %zu bytes", h.seq,
             h.sender, length);
    ft_pattern_check(data, length, ft_pattern_seed(h.sender, 1000000 + want, length), 0,
                     "active message");
    am_next[h.sender]++;
    am_received++;
    return FERRY_OK;
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    FT_CHECK(*end == '\0' && v <= (256ull << 20), "bad size '%s' (bytes, K or M, <= 256M)", s);
    return (size_t)v;
}

static void parse_args(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "r:s:a:m:")) != -1) {
        switch (c) {
        case 'r':
            rounds = (unsigned)atoi(optarg);
            break;
        case 'a':
            am_count = (unsigned)atoi(optarg);
            break;
        case 'm':
            am_max = (unsigned)parse_size(optarg);
            break;
        case 's': {
            size_count = 0;
            char *copy = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                FT_CHECK(size_count < NT_SIZES_MAX, "more than %d sizes", NT_SIZES_MAX);
                sizes[size_count++] = parse_size(t);
            }
            free(copy);
            break;
        }
        default:
            fprintf(stderr, "usage: nt_alltoall [-r ROUNDS] [-s SIZES] [-a AMS] [-m AM_MAX]\n");
            exit(2);
        }
    }
    FT_CHECK(rounds >= 1, "at least one round");
}

static void one_round(unsigned round)
{
    unsigned n = job.size, me = job.rank;
    size_t per_peer = size_count;
    uint8_t **rbuf = calloc(n * per_peer, sizeof(*rbuf));
    uint8_t **sbuf = calloc(n * per_peer, sizeof(*sbuf));
    ferry_tag_info_t *info = calloc(n * per_peer, sizeof(*info));
    ferry_completion_t *rcomp = calloc(n * per_peer, sizeof(*rcomp));
    ferry_completion_t scomp = {0};
    FT_CHECK(rbuf && sbuf && info && rcomp, "out of memory");

    for (unsigned p = 0; p < n; p++) {
        if (p == me)
            continue;
        for (unsigned i = 0; i < size_count; i++) {
            unsigned k = p * per_peer + i;
            rbuf[k] = malloc(sizes[i] + 1);
            rbuf[k][sizes[i]] = 0xee;
            ferry_iov_t iov = {rbuf[k], sizes[i]};
            rcomp[k].count = 1;
            ferry_status_t s = ferry_tag_recv(job.worker, &iov, 1, tag_of(p, round, i), ~0ull,
                                              &info[k], &rcomp[k]);
            FT_CHECK(s == FERRY_INPROGRESS || s == FERRY_OK, "tag recv: %s", ferry_status_name(s));
            if (s == FERRY_OK)
                rcomp[k].count = 0;
        }
    }
    /* counted before the barrier: it progresses the worker (nt_job_barrier), and a peer that
     * left it first may have delivered this round's messages by the time it returns */
    uint64_t am_target = am_received + (uint64_t)(n - 1) * am_count;
    nt_job_barrier(&job);
    uint64_t t0 = ft_now_ns();

    /* interleave: peers in a rotated order, so that not every rank hits rank 0 first */
    for (unsigned d = 1; d < n; d++) {
        unsigned p = (me + d) % n;
        for (unsigned i = 0; i < size_count; i++) {
            unsigned k = p * per_peer + i;
            sbuf[k] = malloc(sizes[i] + 1);
            ft_pattern_fill(sbuf[k], sizes[i], ft_pattern_seed(me, round * 100 + i, sizes[i]), 0);
            ferry_iov_t iov = {sbuf[k], sizes[i]};
            ferry_status_t s =
                nt_tag_send(&job, p, &iov, 1, tag_of(me, round, i), &scomp, NT_TIMEOUT_MS);
            FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "tag send of %zu bytes to rank %u: %s",
                     sizes[i], p, ferry_status_name(s));
        }
    }
    uint8_t *am_buf = malloc(am_max + 1);
    for (unsigned a = 0; a < am_count; a++) {
        for (unsigned d = 1; d < n; d++) {
            unsigned p = (me + d) % n;
            uint64_t seq = (uint64_t)round * am_count + a;
            size_t len = am_size(a);
            ft_pattern_fill(am_buf, len, ft_pattern_seed(me, 1000000 + seq, len), 0);
            am_header_t h = {.sender = me, .round = round, .seq = a, .size = (uint32_t)len};
            ferry_iov_t iov = {am_buf, len};
            ferry_completion_t c = {0};
            ferry_status_t s =
                nt_am_send(&job, p, NT_AM_ID, &h, sizeof(h), &iov, len ? 1 : 0, &c, NT_TIMEOUT_MS);
            FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "AM to rank %u: %s", p,
                     ferry_status_name(s));
            if (s == FERRY_INPROGRESS) /* am_buf is reused: wait */
                nt_wait_completion(&job, &c, NT_TIMEOUT_MS, "an active message's local completion");
        }
    }
    free(am_buf);

    for (unsigned p = 0; p < n; p++) {
        if (p == me)
            continue;
        for (unsigned i = 0; i < size_count; i++) {
            unsigned k = p * per_peer + i;
            nt_wait_completion(&job, &rcomp[k], NT_TIMEOUT_MS, "a tagged receive");
            FT_CHECK_OK(rcomp[k].status);
            FT_CHECK(info[k].length == sizes[i] && info[k].tag == tag_of(p, round, i),
                     "from rank %u: length %zu tag %llx", p, info[k].length,
                     (unsigned long long)info[k].tag);
            ft_pattern_check(rbuf[k], sizes[i], ft_pattern_seed(p, round * 100 + i, sizes[i]), 0,
                             "tagged message");
            FT_CHECK(rbuf[k][sizes[i]] == 0xee, "a receive wrote past its buffer");
            free(rbuf[k]);
        }
    }
    nt_wait_completion(&job, &scomp, NT_TIMEOUT_MS, "the tagged sends");
    FT_CHECK_OK(scomp.status);
    ft_progress_until_count(job.worker, NT_TIMEOUT_MS, &am_received, am_target,
                            "the active messages of every peer");
    for (unsigned k = 0; k < n * per_peer; k++)
        free(sbuf[k]);
    double ms = nt_ms_since(t0);
    size_t bytes = 0;
    for (unsigned i = 0; i < size_count; i++)
        bytes += sizes[i];
    ft_note("round %u: %zu tagged bytes and %u AMs to each of %u peers in %.0f ms", round, bytes,
            am_count, n - 1, ms);
    free(rbuf);
    free(sbuf);
    free(info);
    free(rcomp);
    /* the next round's messages may arrive before this barrier: the handler accepts them */
    nt_job_barrier(&job);
    current_round = round + 1;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    nt_job_init(&job, "nt_alltoall", 240);
    FT_CHECK(job.size >= 2, "nt_alltoall needs at least 2 ranks, not %u", job.size);
    am_next = calloc(job.size, sizeof(*am_next));
    FT_CHECK_OK(ferry_am_set_handler(job.worker, NT_AM_ID, am_handler, NULL));
    nt_job_check_transports(&job);
    for (unsigned r = 0; r < rounds; r++)
        one_round(r);
    for (unsigned p = 0; p < job.size; p++)
        FT_CHECK(job.peers[p].error_calls == 0, "the endpoint to rank %u failed: %s", p,
                 ferry_status_name(job.peers[p].error));
    nt_job_fini(&job, true);
    free(am_next);
    printf("nt_alltoall: rank %u of %u passed\n", job.rank, job.size);
    return 0;
}
