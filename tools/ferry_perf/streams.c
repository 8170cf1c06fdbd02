/* --threads N: N threads share one FERRY_THREAD_MULTI worker on each side, in the spirit of
 * ucx_perftest -T N with -M multi. Each thread runs its own stream of the test: its own
 * perf_ctx_t (its endpoint, active-message ids, tags, send window, buffers, counters) over the
 * one context and worker of stream 0, and every thread progresses that worker. The client
 * runs the streams' runs at once (released together by a barrier) and reports the mean of
 * their latencies and the sum of their message rates and bandwidths; the server serves each
 * stream in a thread of its own. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

int perf_streams_create(perf_ctx_t **ctxs, unsigned threads)
{
    for (unsigned s = 1; s < threads; s++) {
        if (perf_ctx_create_stream(ctxs[0], s, &ctxs[s]) != 0)
            return -1;
    }
    return 0;
}

int perf_streams_connect(perf_ctx_t **ctxs, unsigned threads)
{
    for (unsigned s = 1; s < threads; s++) {
        ctxs[s]->peer_address = malloc(ctxs[0]->peer_address_length);
        if (ctxs[s]->peer_address == NULL) {
            fprintf(stderr, "ferry_perf: out of memory\n");
            return -1;
        }
        memcpy(ctxs[s]->peer_address, ctxs[0]->peer_address, ctxs[0]->peer_address_length);
        ctxs[s]->peer_address_length = ctxs[0]->peer_address_length;
        if (perf_ctx_connect_stream(ctxs[s]) != 0)
            return -1;
    }
    return 0;
}

/* One stream's thread: what it runs and what it found. */
typedef struct stream_job {
    perf_ctx_t *ctx;
    unsigned index;
    pthread_barrier_t *start;
    perf_samples_t samples; /* latency tests */
    double bw_GBps, msgrate_Mps;
    int result;
} stream_job_t;

static void *stream_run(void *arg)
{
    stream_job_t *job = arg;
    pthread_barrier_wait(job->start);
    if (perf_test_is_lat(job->ctx->params.test))
        job->result = perf_run_lat(job->ctx, job->index, &job->samples);
    else
        job->result = perf_run_bw(job->ctx, job->index, &job->bw_GBps, &job->msgrate_Mps);
    return NULL;
}

static void *stream_serve(void *arg)
{
    stream_job_t *job = arg;
    job->result = perf_serve(job->ctx);
    return NULL;
}

/* Run fn over every stream, a thread each; 0 when every one returned 0. */
static int streams_spawn(stream_job_t *jobs, unsigned threads, void *(*fn)(void *))
{
    pthread_t tids[PERF_MAX_THREADS];
    pthread_barrier_t start;
    unsigned started = 0;
    int result = 0;

    if (pthread_barrier_init(&start, NULL, threads) != 0) {
        fprintf(stderr, "ferry_perf: pthread_barrier_init failed\n");
        return -1;
    }
    for (unsigned s = 0; s < threads; s++) {
        jobs[s].start = &start;
        jobs[s].result = -1;
    }
    for (; started < threads; started++) {
        if (pthread_create(&tids[started], NULL, fn, &jobs[started]) != 0) {
            fprintf(stderr, "ferry_perf: pthread_create for stream %u failed\n", started);
            break;
        }
    }
    if (started < threads) {
        /* the barrier would never open: the streams that started cannot run; give up */
        fprintf(stderr, "ferry_perf: exiting (streams started: %u of %u)\n", started, threads);
        exit(1);
    }
    for (unsigned s = 0; s < threads; s++) {
        pthread_join(tids[s], NULL);
        if (jobs[s].result != 0)
            result = -1;
    }
    pthread_barrier_destroy(&start);
    return result;
}

int perf_streams_run(perf_ctx_t **ctxs, unsigned threads, unsigned index, perf_result_t *result)
{
    stream_job_t jobs[PERF_MAX_THREADS];
    bool pingpong = perf_test_is_pingpong(ctxs[0]->params.test);
    int status;

    memset(jobs, 0, sizeof(jobs));
    for (unsigned s = 0; s < threads; s++) {
        jobs[s].ctx = ctxs[s];
        jobs[s].index = index;
    }
    status = streams_spawn(jobs, threads, stream_run);
    if (status == 0) {
        double p50 = 0, avg = 0, p99 = 0, bw = 0, rate = 0;
        for (unsigned s = 0; s < threads; s++) {
            if (perf_test_is_lat(ctxs[0]->params.test)) {
                double sp50, savg, sp99;
                perf_latency_stats(&jobs[s].samples, pingpong, &sp50, &savg, &sp99);
                p50 += sp50 / threads;
                avg += savg / threads;
                p99 += sp99 / threads;
            } else {
                bw += jobs[s].bw_GBps;
                rate += jobs[s].msgrate_Mps;
            }
        }
        if (perf_test_is_lat(ctxs[0]->params.test)) {
            result->lat_p50_us = p50;
            result->lat_avg_us = avg;
            result->lat_p99_us = p99;
        } else {
            result->bw_GBps = bw;
            result->msgrate_Mps = rate;
        }
    }
    for (unsigned s = 0; s < threads; s++)
        free(jobs[s].samples.ticks);
    return status;
}

int perf_streams_serve(perf_ctx_t **ctxs, unsigned threads)
{
    stream_job_t jobs[PERF_MAX_THREADS];
    memset(jobs, 0, sizeof(jobs));
    for (unsigned s = 0; s < threads; s++)
        jobs[s].ctx = ctxs[s];
    return streams_spawn(jobs, threads, stream_serve);
}

int perf_streams_finish(perf_ctx_t **ctxs, unsigned threads, bool is_server)
{
    int result = 0;
    for (unsigned s = 1; s < threads; s++) {
        if (ctxs[s] != NULL && perf_ctx_finish(ctxs[s], is_server) != 0)
            result = -1;
    }
    return result;
}

void perf_streams_destroy(perf_ctx_t **ctxs, unsigned threads)
{
    for (unsigned s = 1; s < threads; s++) {
        perf_ctx_destroy(ctxs[s]);
        ctxs[s] = NULL;
    }
}
