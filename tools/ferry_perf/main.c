/* ferry_perf: options, help, and the sequence of a server and of a client run.
 *
 *   server: ferry_perf [-p PORT] [-c CORE] [-T SEC]
 *   client: ferry_perf HOST -t TEST [-s SIZE[,SIZE...]] [-n ITERS] [-w WARMUP] [-r REPEAT]
 *                       [-f table|csv|json] [--wait] [--mem alloc|register] [-p PORT] [-c CORE]
 *                       [-T SEC]
 *   launched: mpirun -np 2 ferry_perf -t TEST [client options]: rank 0 serves, rank 1 measures
 *
 * Exit status: 0 success, 1 the run failed, 2 bad options. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define EXIT_USAGE 2

static const char *const test_names[PERF_TEST_LAST + 1] = {
    [PERF_TEST_NONE] = "none",
    [PERF_TEST_AM_LAT] = "am_lat",
    [PERF_TEST_AM_BW] = "am_bw",
    [PERF_TEST_PUT_LAT] = "put_lat",
    [PERF_TEST_GET_LAT] = "get_lat",
    [PERF_TEST_PUT_BW] = "put_bw",
    [PERF_TEST_GET_BW] = "get_bw",
    [PERF_TEST_ATOMIC_LAT] = "atomic_lat",
    [PERF_TEST_ATOMIC_RATE] = "atomic_rate",
    [PERF_TEST_TAG_LAT] = "tag_lat",
    [PERF_TEST_TAG_BW] = "tag_bw",
    [PERF_TEST_SEG_MAP_LAT] = "seg_map_lat",
    [PERF_TEST_SEG_DMA_BW] = "seg_dma_bw",
    [PERF_TEST_SEG_DMA_READ_BW] = "seg_dma_read_bw",
};

const char *perf_test_name(perf_test_t test)
{
    return (unsigned)test <= PERF_TEST_LAST ? test_names[test] : "none";
}

const char *perf_mem_name(perf_mem_t mem)
{
    return mem == PERF_MEM_REGISTER ? "register" : "alloc";
}

bool perf_test_is_rma(perf_test_t test)
{
    return test >= PERF_TEST_PUT_LAT && test <= PERF_TEST_ATOMIC_RATE;
}

bool perf_test_is_tag(perf_test_t test)
{
    return test == PERF_TEST_TAG_LAT || test == PERF_TEST_TAG_BW;
}

bool perf_test_is_seg(perf_test_t test)
{
    return test >= PERF_TEST_SEG_MAP_LAT && test <= PERF_TEST_SEG_DMA_READ_BW;
}

bool perf_test_is_lat(perf_test_t test)
{
    return test == PERF_TEST_AM_LAT || test == PERF_TEST_PUT_LAT || test == PERF_TEST_GET_LAT ||
           test == PERF_TEST_ATOMIC_LAT || test == PERF_TEST_TAG_LAT ||
           test == PERF_TEST_SEG_MAP_LAT;
}

bool perf_test_is_pingpong(perf_test_t test)
{
    return test == PERF_TEST_AM_LAT || test == PERF_TEST_PUT_LAT || test == PERF_TEST_TAG_LAT ||
           test == PERF_TEST_SEG_MAP_LAT;
}

static void usage(FILE *out)
{
    fprintf(out,
            "ferry_perf: latency and bandwidth of ferry active messages and one-sided\n"
            "operations between two processes\n"
            "\n"
            "  server: ferry_perf [-p PORT] [-c CORE] [-T SEC]\n"
            "  client: ferry_perf HOST -t TEST [-s SIZE[,SIZE...]] [options]\n"
            "  both:   mpirun -np 2 ferry_perf -t TEST [-s SIZE[,SIZE...]] [options]\n"
            "\n"
            "The server serves one client run and exits. Worker addresses, the test\n"
            "parameters and the remote keys travel over a TCP connection to HOST:PORT.\n"
            "Without HOST, -t makes a job of two ranks found by ferry's bootstrap (under\n"
            "mpirun or srun: PMIx; or FERRY_BOOTSTRAP_ROOT/_RANK/_SIZE): rank 0 serves on an\n"
            "ephemeral port it publishes, rank 1 connects to it and prints the results.\n"
            "\n"
            "  -t TEST      am_lat:  ping-pong; one-way latency = round trip / 2 (p50, avg, p99)\n"
            "               am_bw:   streaming; bandwidth (GB = 10^9 B) and message rate\n"
            "               put_lat: ping-pong of puts: the client puts SIZE bytes into the\n"
            "                        server's memory, the server sees the last byte change and\n"
            "                        puts SIZE bytes back; one-way latency = round trip / 2\n"
            "               get_lat: one get of SIZE bytes, waited for, at a time (latency of\n"
            "                        one get)\n"
            "               put_bw, get_bw: ITERS operations, at most %u in flight, then\n"
            "                        ferry_ep_flush; bandwidth and operation rate\n"
            "               atomic_lat:  one fetch-add at a time (latency of one)\n"
            "               atomic_rate: ITERS posted adds, at most %u in flight, then a flush\n"
            "               (atomics: SIZE is the word, 4 or 8 bytes; default 8)\n"
            "               The one-sided tests check the bytes (the counter) of every run at\n"
            "               its end: a path that moves nothing, or the wrong bytes, fails.\n"
            "               tag_lat: ping-pong of tagged messages (ferry_tag_send/recv): the\n"
            "                        client posts the receive of the reply, then sends; the\n"
            "                        server keeps two receives posted; one-way latency =\n"
            "                        round trip / 2\n"
            "               tag_bw:  the client keeps %u tagged sends in flight, the server %u\n"
            "                        receives posted, all into one buffer (as ucx_perftest);\n"
            "                        bandwidth and message rate, timed until the server\n"
            "                        reports the last message received\n"
            "               The tag tests send a new pattern in every run (warm-up and measured)\n"
            "               and check the received bytes when it is over, every message's\n"
            "               status, length and tag as it completes.\n"
            "               seg_map_lat: the server creates a segment (ferry_segment_create,\n"
            "                        prepare, set_available) and sends its id; the client\n"
            "                        connects, maps it writable, and the two ping-pong one\n"
            "                        8-byte flag word in it with atomic stores and loads (the\n"
            "                        client adds ferry_rsegment_store_barrier); no progress\n"
            "                        runs meanwhile; one-way latency = round trip / 2 (SIZE: 8)\n"
            "               seg_dma_bw, seg_dma_read_bw: a DMA queue of one entry of SIZE\n"
            "                        bytes writing into (reading from) the segment, posted,\n"
            "                        started and waited for (ferry_dma_wait) ITERS times; the\n"
            "                        time from ferry_dma_start to the end of ferry_dma_wait\n"
            "                        gives bandwidth and transfer rate; the bytes are checked\n"
            "                        at the end of every run (FERRY_SEGMENT_COPY_THREADS in the\n"
            "                        client's environment chooses the copy threads)\n"
            "  -s SIZES     message sizes in bytes, comma-separated; suffixes K, M, G (x1024)\n"
            "               (default 8; at most %u sizes, each at most 1G)\n"
            "  -n ITERS     measured iterations per run (default: 100000 up to 4 KiB, then\n"
            "               1 GiB worth of messages, at least 20)\n"
            "  -w WARMUP    warm-up iterations before each run (default ITERS/10); the bytes of\n"
            "               warm-up messages are checked (am_*)\n"
            "  -r REPEAT    runs per size; the medians of the runs are reported (default 1)\n"
            "  -f FORMAT    table (default), csv (one header line, then one line per size:\n"
            "               test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps),\n"
            "               json (one object per line)\n"
            "  -v           after the run, print the worker's counters (messages and bytes by\n"
            "               protocol and transport, rendezvous modes by size, retries, errors)\n"
            "  --wait       both sides sleep in ferry_worker_wait() instead of busy polling\n"
            "  --tag-from   tag tests: every receive names its source (ferry_tag_recv_from)\n"
            "  --tag-sync   tag tests: synchronous sends (ferry_tag_send_ext, SYNC)\n"
            "               (put_lat and seg_map_lat poll memory: they always spin; the\n"
            "               seg_dma tests wait in ferry_dma_wait, which decides itself)\n"
            "  --mem MODE   one-sided tests: where both sides' target memory comes from:\n"
            "               alloc     ferry_mem_alloc (default): the peer maps it; transfers are\n"
            "                         loads and stores, atomics CPU atomics\n"
            "               register  malloc + ferry_mem_register: cross-memory attach, or with\n"
            "                         FERRY_SHM_CMA=off (in both processes' environment) the\n"
            "                         copy through shared buffers driven by the target's progress\n"
            "  --thread-multi  this process's worker is FERRY_THREAD_MULTI (its cost for one\n"
            "               thread; the other side chooses its own)\n"
            "  --threads N  N threads (1..%u) on one FERRY_THREAD_MULTI worker in each process\n"
            "               (implies --thread-multi on both sides; as ucx_perftest -T N -M\n"
            "               multi), each its own stream: its own endpoint, active-message ids,\n"
            "               tags, send window and buffers, all of them progressing the worker;\n"
            "               the streams run at once; reported: the mean of their latencies,\n"
            "               the sum of their bandwidths and message rates (am_lat, am_bw,\n"
            "               tag_lat, tag_bw; -c pins every thread of a process to one core)\n"
            "  --no-thp     one-sided and tag tests: leave malloc'ed memory (the local buffers,\n"
            "               --mem register regions, the tag tests' message buffers) on 4 KiB\n"
            "               pages; by default buffers of 2 MiB and more are 2 MiB-aligned with\n"
            "               madvise(MADV_HUGEPAGE), as ucx_perftest's are (ferry_mem_alloc\n"
            "               memory is the library's: shmem page size)\n"
            "  -p PORT      TCP port of the server (default %u)\n"
            "  -c CORE      pin this process to CPU core CORE (sched_setaffinity)\n"
            "  -T SEC       give up when any step makes no progress for SEC seconds\n"
            "               (default %u; the server waits max(SEC, %u) s for its client; in\n"
            "               one-sided tests the server waits for its client as long as the\n"
            "               client's process lives)\n"
            "  -h, --help   this help\n"
            "\n"
            "Exit status: 0 success, 1 the run failed, 2 bad options.\n",
            PERF_RMA_WINDOW, PERF_RMA_WINDOW, PERF_TAG_WINDOW, PERF_TAG_WINDOW, PERF_MAX_SIZES,
            PERF_MAX_THREADS, PERF_DEFAULT_PORT, PERF_DEFAULT_TIMEOUT_S, PERF_ACCEPT_TIMEOUT_MIN_S);
}

static int usage_error(const char *format, const char *arg)
{
    fprintf(stderr, "ferry_perf: ");
    fprintf(stderr, format, arg);
    fprintf(stderr, "\nferry_perf: -h shows the options\n");
    return -1;
}

static int parse_sizes(const char *text, perf_params_t *params)
{
    char *copy = strdup(text);
    char *save = NULL;
    int result = 0;
    if (copy == NULL)
        return -1;
    params->size_count = 0;
    if (*text == '\0' || text[strlen(text) - 1] == ',' || strstr(text, ",,") != NULL)
        result = usage_error("bad size list '%s' (expected SIZE[,SIZE...])", text);
    for (char *item = strtok_r(copy, ",", &save); result == 0 && item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        uint64_t size;
        if (params->size_count == PERF_MAX_SIZES)
            result = usage_error("too many sizes in '%s'", text);
        else if (perf_parse_u64(item, true, PERF_MAX_MESSAGE, &size) != 0)
            result =
                usage_error("bad size '%s' (a number of bytes, suffix K/M/G, at most 1G)", item);
        else
            params->sizes[params->size_count++] = size;
    }
    free(copy);
    return result;
}

static uint64_t default_iters(uint64_t size)
{
    if (size <= 4096)
        return 100000;
    uint64_t n = (1ull << 30) / size;
    return n < 20 ? 20 : n > 100000 ? 100000 : n;
}

/* Returns 0, 1 when help was printed, -1 after a usage error. */
static int parse_options(int argc, char **argv, perf_options_t *opt)
{
    static const struct option long_options[] = {
        {"wait", no_argument, NULL, 'W'},
        {"tag-from", no_argument, NULL, 'F'},
        {"tag-sync", no_argument, NULL, 'S'},
        {"mem", required_argument, NULL, 'M'},
        {"no-thp", no_argument, NULL, 'H'},
        {"thread-multi", no_argument, NULL, 'X'},
        {"threads", required_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool client_option = false;
    uint64_t value;
    int c;

    memset(opt, 0, sizeof(*opt));
    opt->port = PERF_DEFAULT_PORT;
    opt->core = -1;
    opt->timeout_s = PERF_DEFAULT_TIMEOUT_S;
    opt->warmup = -1;
    opt->params.repeat = 1;
    opt->params.size_count = 1;
    opt->params.sizes[0] = 8;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:c:t:s:n:w:r:f:T:vh", long_options, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (perf_parse_u64(optarg, false, 65535, &value) != 0 || value == 0)
                return usage_error("bad port '%s' (1..65535)", optarg);
            opt->port = (unsigned)value;
            break;
        case 'c':
            if (perf_parse_u64(optarg, false, CPU_SETSIZE - 1, &value) != 0)
                return usage_error("bad core '%s' (a CPU number)", optarg);
            opt->core = (int)value;
            break;
        case 'T':
            if (perf_parse_u64(optarg, false, 86400, &value) != 0 || value == 0)
                return usage_error("bad timeout '%s' (seconds, 1..86400)", optarg);
            opt->timeout_s = (unsigned)value;
            break;
        case 't':
            client_option = true;
            opt->params.test = PERF_TEST_NONE;
            for (unsigned t = 1; t <= PERF_TEST_LAST; t++) {
                if (strcmp(optarg, perf_test_name((perf_test_t)t)) == 0)
                    opt->params.test = (perf_test_t)t;
            }
            if (opt->params.test == PERF_TEST_NONE)
                return usage_error("unknown test '%s' (" PERF_TEST_LIST ")", optarg);
            break;
        case 's':
            client_option = true;
            if (parse_sizes(optarg, &opt->params) != 0)
                return -1;
            break;
        case 'n':
            client_option = true;
            if (perf_parse_u64(optarg, false, 1000000000000ull, &value) != 0 || value == 0)
                return usage_error("bad iteration count '%s' (at least 1)", optarg);
            opt->iters = value;
            break;
        case 'w':
            client_option = true;
            if (perf_parse_u64(optarg, false, 1000000000000ull, &value) != 0)
                return usage_error("bad warm-up count '%s'", optarg);
            opt->warmup = (int64_t)value;
            break;
        case 'r':
            client_option = true;
            if (perf_parse_u64(optarg, false, 1000, &value) != 0 || value == 0)
                return usage_error("bad repeat count '%s' (1..1000)", optarg);
            opt->params.repeat = (unsigned)value;
            break;
        case 'f':
            client_option = true;
            if (strcmp(optarg, "table") == 0)
                opt->format = PERF_FORMAT_TABLE;
            else if (strcmp(optarg, "csv") == 0)
                opt->format = PERF_FORMAT_CSV;
            else if (strcmp(optarg, "json") == 0)
                opt->format = PERF_FORMAT_JSON;
            else
                return usage_error("unknown format '%s' (table, csv or json)", optarg);
            break;
        case 'W':
            client_option = true;
            opt->params.wait = true;
            break;
        case 'F':
            client_option = true;
            opt->params.tag_from = true;
            break;
        case 'v':
            opt->verbose = true;
            break;
        case 'S':
            client_option = true;
            opt->params.tag_sync = true;
            break;
        case 'X':
            perf_thread_multi = true; /* this process's worker; either side may set it */
            break;
        case 'N':
            client_option = true;
            if (perf_parse_u64(optarg, false, PERF_MAX_THREADS, &value) != 0 || value == 0)
                return usage_error("bad thread count '%s' (1..8)", optarg);
            opt->params.threads = (unsigned)value;
            perf_thread_multi = true; /* both sides (the server: from the parameters) */
            break;
        case 'H':
            client_option = true;
            opt->params.no_thp = true;
            break;
        case 'M':
            client_option = true;
            if (strcmp(optarg, "alloc") == 0)
                opt->params.mem = PERF_MEM_ALLOC;
            else if (strcmp(optarg, "register") == 0)
                opt->params.mem = PERF_MEM_REGISTER;
            else
                return usage_error("unknown memory '%s' (alloc or register)", optarg);
            break;
        case 'h':
            usage(stdout);
            return 1;
        case ':':
            return usage_error("option %s needs a value", argv[optind - 1]);
        default:
            if (optopt != 0) {
                char name[3] = {'-', (char)optopt, '\0'};
                return usage_error("unknown option '%s'", name);
            }
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        opt->host = argv[optind++];
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (opt->host == NULL && client_option && opt->params.test == PERF_TEST_NONE)
        return usage_error(
            "%s", "-s, -n, -w, -r, -f, --wait, --mem, --no-thp and --threads "
                  "are client options: give the server's HOST and -t TEST (the server takes "
                  "only -p, -c, -T; under a launcher give -t TEST without HOST)");
    opt->launched = opt->host == NULL && client_option;
    if (opt->host != NULL && opt->params.test == PERF_TEST_NONE)
        return usage_error("%s", "missing -t TEST (" PERF_TEST_LIST ")");
    if (opt->params.threads > 1 && opt->params.test != PERF_TEST_AM_LAT &&
        opt->params.test != PERF_TEST_AM_BW && !perf_test_is_tag(opt->params.test))
        return usage_error("%s", "--threads: am_lat, am_bw, tag_lat and tag_bw only");
    for (unsigned i = 0; i < opt->params.size_count; i++) {
        char text[32];
        uint64_t size = opt->params.sizes[i];
        snprintf(text, sizeof(text), "%llu", (unsigned long long)size);
        if ((opt->params.test == PERF_TEST_ATOMIC_LAT ||
             opt->params.test == PERF_TEST_ATOMIC_RATE) &&
            size != 4 && size != 8)
            return usage_error("size %s: atomics work on 4- or 8-byte words (-s 4 or -s 8)", text);
        if (opt->params.test == PERF_TEST_SEG_MAP_LAT && size != 8)
            return usage_error("size %s: seg_map_lat ping-pongs one 8-byte flag word (-s 8)", text);
        if (opt->params.test == PERF_TEST_PUT_LAT && size == 0)
            return usage_error("size %s: put_lat needs at least 1 byte (the byte the peer polls)",
                               text);
    }
    for (unsigned i = 0; i < opt->params.size_count; i++) {
        uint64_t iters = opt->iters ? opt->iters : default_iters(opt->params.sizes[i]);
        opt->params.iters[i] = iters;
        opt->params.warmup[i] = opt->warmup >= 0 ? (uint64_t)opt->warmup : iters / 10;
    }
    return 0;
}

static int pin_to_core(int core)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr,
                "ferry_perf: cannot run on core %d: sched_setaffinity: %s (this "
                "machine has %ld online)\n",
                core, strerror(errno), sysconf(_SC_NPROCESSORS_ONLN));
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- server */

/* Serve one client on listen_fd (closed here). */
static int serve(const perf_options_t *opt, int listen_fd)
{
    perf_params_t params;
    perf_ctx_t *ctxs[PERF_MAX_THREADS] = {NULL};
    unsigned streams = 1;
    unsigned accept_timeout =
        opt->timeout_s > PERF_ACCEPT_TIMEOUT_MIN_S ? opt->timeout_s : PERF_ACCEPT_TIMEOUT_MIN_S;
    int result = 1;
    uint8_t verdict;

    fprintf(stderr, "ferry_perf: server on TCP port %u, waiting up to %u s for a client\n",
            opt->port, accept_timeout);
    int fd = perf_tcp_accept(listen_fd, accept_timeout);
    close(listen_fd);
    if (fd < 0)
        return 1;
    if (perf_tcp_recv_params(fd, &params, opt->timeout_s) != 0)
        goto out_close;
    streams = params.threads > 1 ? params.threads : 1;
    if (params.threads > 0) /* the client gave --threads: its peer is multi-thread too */
        perf_thread_multi = true;
    if (perf_ctx_create(&params, fd, opt->timeout_s, true, &ctxs[0]) != 0)
        goto out_close;
    if (perf_streams_create(ctxs, streams) != 0 || perf_ctx_connect(ctxs[0]) != 0 ||
        perf_streams_connect(ctxs, streams) != 0)
        goto out_destroy;
    if (streams > 1 ? perf_streams_serve(ctxs, streams) != 0 : perf_serve(ctxs[0]) != 0)
        goto out_destroy;
    if (perf_streams_finish(ctxs, streams, true) != 0 || perf_ctx_finish(ctxs[0], true) != 0)
        goto out_destroy;
    result = 0;

out_destroy:
    perf_streams_destroy(ctxs, streams);
    perf_ctx_destroy(ctxs[0]);
    /* tell the client how it went (unless it is gone; do not wait long) */
    verdict = (uint8_t)result;
    if (!perf_tcp_peer_gone(fd))
        perf_tcp_send_blob(fd, &verdict, 1, 1);
out_close:
    close(fd);
    return result;
}

static int run_server(const perf_options_t *opt)
{
    int listen_fd = perf_tcp_listen(opt->port);
    if (listen_fd < 0)
        return 1;
    return serve(opt, listen_fd);
}

/* ---------------------------------------------------------------- client */

static int run_size(perf_ctx_t **ctxs, const perf_options_t *opt, unsigned index)
{
    perf_ctx_t *ctx = ctxs[0];
    unsigned threads = opt->params.threads > 1 ? opt->params.threads : 1;
    unsigned repeat = opt->params.repeat;
    double *v = malloc(5 * repeat * sizeof(*v));
    double *p50 = v, *avg = v + repeat, *p99 = v + 2 * repeat, *bw = v + 3 * repeat,
           *rate = v + 4 * repeat;
    perf_result_t result = {
        .test = opt->params.test,
        .size = opt->params.sizes[index],
        .iters = opt->params.iters[index],
        .repeat = repeat,
        .wait = opt->params.wait,
        .mem = opt->params.mem,
        .transport = perf_ctx_transport(ctx),
    };

    if (v == NULL) {
        fprintf(stderr, "ferry_perf: out of memory\n");
        return -1;
    }
    for (unsigned r = 0; r < repeat; r++) {
        p50[r] = avg[r] = p99[r] = bw[r] = rate[r] = NAN;
        if (threads > 1) {
            perf_result_t streams = {.lat_p50_us = NAN,
                                     .lat_avg_us = NAN,
                                     .lat_p99_us = NAN,
                                     .bw_GBps = NAN,
                                     .msgrate_Mps = NAN};
            if (perf_streams_run(ctxs, threads, index, &streams) != 0)
                goto err;
            p50[r] = streams.lat_p50_us, avg[r] = streams.lat_avg_us, p99[r] = streams.lat_p99_us;
            bw[r] = streams.bw_GBps, rate[r] = streams.msgrate_Mps;
        } else if (perf_test_is_lat(opt->params.test)) {
            perf_samples_t samples;
            if (perf_run_lat(ctx, index, &samples) != 0)
                goto err;
            perf_latency_stats(&samples, perf_test_is_pingpong(opt->params.test), &p50[r], &avg[r],
                               &p99[r]);
            free(samples.ticks);
        } else if (perf_run_bw(ctx, index, &bw[r], &rate[r]) != 0) {
            goto err;
        }
    }
    result.lat_p50_us = perf_median(p50, repeat);
    result.lat_avg_us = perf_median(avg, repeat);
    result.lat_p99_us = perf_median(p99, repeat);
    result.bw_GBps = perf_median(bw, repeat);
    result.msgrate_Mps = perf_median(rate, repeat);
    perf_print_result(opt->format, &result);
    free(v);
    return 0;

err:
    free(v);
    return -1;
}

static void perf_print_counters(perf_ctx_t *ctx);

static int run_client(const perf_options_t *opt)
{
    perf_ctx_t *ctxs[PERF_MAX_THREADS] = {NULL}, *ctx;
    unsigned threads = opt->params.threads > 1 ? opt->params.threads : 1;
    int result = 1;

    int fd = perf_tcp_connect(opt->host, opt->port, opt->timeout_s);
    if (fd < 0)
        return 1;
    perf_ticks_init();
    if (perf_tcp_send_params(fd, &opt->params, opt->timeout_s) != 0)
        goto out_close;
    if (perf_ctx_create(&opt->params, fd, opt->timeout_s, false, &ctxs[0]) != 0)
        goto out_close;
    ctx = ctxs[0];
    if (perf_streams_create(ctxs, threads) != 0 || perf_ctx_connect(ctx) != 0 ||
        perf_streams_connect(ctxs, threads) != 0)
        goto out_destroy;
    if (opt->format == PERF_FORMAT_TABLE)
        fprintf(stderr, "ferry_perf %s: %s to %s over %s, %s%s%s, %u run(s) per size, %u %s\n",
                ferry_version_string(), perf_test_name(opt->params.test), opt->host,
                perf_ctx_transport(ctx), opt->params.wait ? "ferry_worker_wait" : "busy polling",
                perf_test_is_rma(opt->params.test) ? ", memory: " : "",
                perf_test_is_rma(opt->params.test) ? perf_mem_name(opt->params.mem) : "",
                opt->params.repeat, threads,
                perf_thread_multi ? "thread(s) on a multi-thread worker" : "thread");
    perf_print_header(opt->format);
    for (unsigned i = 0; i < opt->params.size_count; i++) {
        if (run_size(ctxs, opt, i) != 0)
            goto out_destroy;
    }
    if (perf_streams_finish(ctxs, threads, false) != 0 || perf_ctx_finish(ctx, false) != 0)
        goto out_destroy;
    if (opt->verbose)
        perf_print_counters(ctx);
    result = 0;

out_destroy:
    perf_streams_destroy(ctxs, threads);
    perf_ctx_destroy(ctxs[0]);
    if (result == 0) {
        void *verdict;
        size_t length;
        if (perf_tcp_recv_blob(fd, &verdict, &length, 1, opt->timeout_s) != 0) {
            result = 1;
        } else {
            if (length != 1 || *(uint8_t *)verdict != 0) {
                fprintf(stderr, "ferry_perf: the server reported a failure (see its output)\n");
                result = 1;
            }
            free(verdict);
        }
    }
out_close:
    close(fd);
    return result;
}

/* -v: what the client's worker counted during the run (include/ferry/counters.h). */
static void perf_print_counters(perf_ctx_t *ctx)
{
    ferry_counters_t counters = {.size = sizeof(counters)};
    char text[8192];
    if (ferry_worker_counters(ctx->worker, &counters) != FERRY_OK)
        return;
    ferry_counters_format(&counters, text, sizeof(text));
    fprintf(stderr, "ferry_perf: the client's counters:\n%s", text);
}

/* ---------------------------------------------------------------- under a launcher */

static int run_launched(perf_options_t *opt)
{
    perf_launch_t launch;
    if (perf_launch_init(&launch, opt) != 0)
        return 1;
    int result = launch.rank == 0 ? serve(opt, launch.listen_fd) : run_client(opt);
    perf_launch_fini(&launch);
    return result;
}

int main(int argc, char **argv)
{
    perf_options_t opt;
    int rc = parse_options(argc, argv, &opt);
    if (rc != 0)
        return rc > 0 ? 0 : EXIT_USAGE;
    if (opt.core >= 0 && pin_to_core(opt.core) != 0)
        return EXIT_USAGE;
    if (opt.launched)
        return run_launched(&opt);
    return opt.host == NULL ? run_server(&opt) : run_client(&opt);
}
