/* Named segments: DMA queues on the copy threads (FERRY_SEGMENT_COPY_THREADS = n; run with 2 and
 * with 1, and correct with 0 too), every byte checked at both ends.
 *
 * The owner (a forked peer) publishes segment 1 (64 MiB + 4 KiB of ferry_mem_alloc memory: the
 * importer maps it, so its queues go to the copy threads) and segment 2 (1 MiB + 4 KiB of
 * malloc'ed memory the owner registered: not mapped, so its queues stay on progress). The
 * importer (the parent) checks that no copy thread exists before the first queue and that n exist
 * after it; writes {1 B, 4 KiB, 1 MiB, 64 MiB} at an odd offset with one-entry queues
 * (completion by callback, by polling ferry_dma_state, by ferry_dma_wait), the owner checks
 * every byte and fills the range with its own pattern, the importer reads it back and checks
 * it; callbacks run on the importer's own thread, inside ferry_worker_progress; a 64 MiB
 * ferry_dma_wait leaves the waiting thread mostly asleep (its CPU time under half the wall
 * time). Then a 1 000-entry scatter list (with zero-length entries), and a list of entries that
 * straddle the copy threads' chunks, both written and read back. Abort: a running 64 MiB write
 * (FERRY_ERR_CANCELED, callback once, then the queue works again) and a running 64 MiB read whose
 * buffer is freed as soon as ferry_dma_wait returns (a copy thread still writing it would be a
 * use after free under ASan, a race under TSan). Last, the worker is destroyed with a 64 MiB
 * write running: its threads are joined (no thread left). */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"
#include "ft_seg.h"

#define ST_MIB (1024u * 1024u)
#define ST_BIG (64u * ST_MIB)
#define ST_SIZE1 (ST_BIG + 4096u)
#define ST_SIZE2 (ST_MIB + 4096u)
#define ST_TIMEOUT_MS 60000
#define ST_SCATTER 1000u

/* Copy threads of this process (named "ferry-copy"; a sanitizer may add threads of its own). */
static unsigned st_threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    FT_CHECK(dir != NULL, "opendir(/proc/self/task)");
    unsigned n = 0;
    struct dirent *d;
    while ((d = readdir(dir)) != NULL) {
        char path[300], comm[32] = "";
        if (d->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL) /* the thread just ended */
            continue;
        if (fgets(comm, sizeof(comm), f) != NULL && strcmp(comm, "ferry-copy\n") == 0)
            n++;
        fclose(f);
    }
    closedir(dir);
    return n;
}

static uint64_t st_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ owner */

/* ------------------------------------------------------------------ importer */

typedef struct st {
    ft_ferry_t f;
    ft_peer_t owner;
    ferry_ep_t *ep;
    ferry_rsegment_t *rs[3];
    unsigned nthreads; /* FERRY_SEGMENT_COPY_THREADS */
    uint64_t seq;
    pthread_t self;
    unsigned cb_calls;
    ferry_status_t cb_status;
} st_t;

static void st_cb(void *arg, ferry_dma_queue_t *q, ferry_status_t status)
{
    st_t *d = arg;
    (void)q;
    FT_CHECK(pthread_equal(pthread_self(), d->self), "a DMA callback ran on another thread");
    d->cb_calls++;
    d->cb_status = status;
}

static void st_wait_cb(st_t *d, unsigned calls)
{
    ft_deadline_t dl = ft_deadline_in_ms(ST_TIMEOUT_MS);
    while (d->cb_calls == calls) {
        FT_CHECK(!ft_deadline_passed(dl), "DMA callback never ran");
        ft_progress_once(d->f.worker);
    }
    FT_CHECK(d->cb_calls == calls + 1, "%u callbacks for one start", d->cb_calls - calls);
}

/* Run the entries on a new queue; how: 0 callback, 1 polling, 2 wait. */
static void st_run(st_t *d, unsigned s, const ferry_dma_entry_t *e, size_t count, unsigned how)
{
    ferry_dma_queue_t *q;
    FT_CHECK_OK(ferry_dma_create(d->rs[s], &q));
    FT_CHECK_OK(ferry_dma_post(q, e, count));
    unsigned calls = d->cb_calls;
    uint64_t t0 = ft_now_ns(), cpu0 = st_thread_cpu_ns();
    FT_CHECK_STATUS(ferry_dma_start(q, how == 0 ? st_cb : NULL, d), FERRY_INPROGRESS);
    FT_CHECK_STATUS(ferry_dma_post(q, e, 1), FERRY_ERR_BUSY);
    FT_CHECK_STATUS(ferry_dma_destroy(q), FERRY_ERR_BUSY);
    if (how == 0) {
        st_wait_cb(d, calls);
        FT_CHECK_OK(d->cb_status);
    } else if (how == 1) {
        ft_seg_dma_poll_done(d->f.worker, q, ST_TIMEOUT_MS);
    } else {
        FT_CHECK_OK(ferry_dma_wait(q, ST_TIMEOUT_MS));
        uint64_t wall = ft_now_ns() - t0, cpu = st_thread_cpu_ns() - cpu0;
        size_t total = 0;
        for (size_t i = 0; i < count; i++)
            total += e[i].length;
        if (s == 1 && d->nthreads > 0 && total >= ST_BIG) {
            ft_note("ferry_dma_wait of %zu bytes on %u copy threads: %.1f ms, waiting thread's "
                    "CPU %.1f ms",
                    total, d->nthreads, (double)wall / 1e6, (double)cpu / 1e6);
            FT_CHECK(cpu * 2 < wall, "ferry_dma_wait burned %.1f ms of CPU in %.1f ms",
                     (double)cpu / 1e6, (double)wall / 1e6);
        }
    }
    FT_CHECK_OK(ferry_dma_destroy(q));
}

static void st_owner_check(st_t *d, unsigned s, uint64_t offset, uint64_t length, uint64_t seq)
{
    ft_seg_owner_check(d->f.worker, d->owner.chan, s, offset, length, seq, ST_TIMEOUT_MS);
}

static void st_sizes(st_t *d, unsigned s)
{
    static const size_t sizes[] = {1, 4096, ST_MIB, ST_BIG};
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t length = sizes[i];
        uint64_t offset = 4095; /* odd, crossing pages */
        if (length > (s == 1 ? ST_SIZE1 : ST_SIZE2) - offset)
            continue;
        uint8_t *buf = malloc(length);
        FT_CHECK(buf != NULL, "malloc(%zu)", length);
        d->seq++;
        ft_pattern_fill(buf, length, ft_pattern_seed(FT_SEG_IMPORTER, d->seq, length), 0);
        ferry_dma_entry_t e = {
            .local = buf, .remote_offset = offset, .length = length, .direction = FERRY_DMA_WRITE};
        st_run(d, s, &e, 1, length == ST_BIG ? 2 : i % 3);
        if (s == 1 && i == 0) /* started by the first queue */
            FT_CHECK(st_threads() == d->nthreads,
                     "%u copy threads after the first queue (%u asked for)", st_threads(),
                     d->nthreads);
        st_owner_check(d, s, offset, length, d->seq);
        memset(buf, 0, length);
        e.direction = FERRY_DMA_READ;
        st_run(d, s, &e, 1, (i + 1) % 3);
        ft_pattern_check(buf, length, ft_pattern_seed(FT_SEG_OWNER, d->seq, length), 0,
                         "read back");
        free(buf);
    }
}

/* Write entries e[0..count) (filled from seeds seq0 + k), have the owner check each, then read
 * them back into the same buffers (zeroed) and check the owner's pattern. */
static void st_list(st_t *d, unsigned s, ferry_dma_entry_t *e, size_t count, uint64_t seq0)
{
    for (size_t k = 0; k < count; k++) {
        e[k].direction = FERRY_DMA_WRITE;
        if (e[k].length > 0)
            ft_pattern_fill(e[k].local, e[k].length,
                            ft_pattern_seed(FT_SEG_IMPORTER, seq0 + k, e[k].length), 0);
    }
    st_run(d, s, e, count, 2);
    for (size_t k = 0; k < count; k++) {
        if (e[k].length > 0)
            st_owner_check(d, s, e[k].remote_offset, e[k].length, seq0 + k);
    }
    for (size_t k = 0; k < count; k++) {
        e[k].direction = FERRY_DMA_READ;
        if (e[k].length > 0)
            memset(e[k].local, 0, e[k].length);
    }
    st_run(d, s, e, count, 0);
    for (size_t k = 0; k < count; k++) {
        if (e[k].length > 0)
            ft_pattern_check(e[k].local, e[k].length,
                             ft_pattern_seed(FT_SEG_OWNER, seq0 + k, e[k].length), 0,
                             "list entry read back");
    }
}

static void st_scatter(st_t *d)
{
    uint8_t *bufs;
    ferry_dma_entry_t *e = ft_seg_scatter(ST_SCATTER, 1000000, &bufs);
    /* every 100th is empty (and has no buffer) */
    for (unsigned k = 50; k < ST_SCATTER; k += 100)
        e[k] = (ferry_dma_entry_t){.local = NULL, .remote_offset = 0, .length = 0};
    st_list(d, 1, e, ST_SCATTER, 1000000);
    free(bufs);
    free(e);
}

/* Entries that start and end inside the copy threads' chunks (1 MiB by default) and span
 * several, back to back in the segment. */
static void st_straddle(st_t *d)
{
    static const size_t lengths[] = {3 * ST_MIB + 7, 1,  ST_MIB - 1,     0,         5 * ST_MIB / 2,
                                     4096,           17, 7 * ST_MIB + 3, 2 * ST_MIB};
    enum { N = sizeof(lengths) / sizeof(lengths[0]) };
    ferry_dma_entry_t e[N];
    uint8_t *bufs[N];
    uint64_t offset = 12345;
    for (unsigned k = 0; k < N; k++) {
        bufs[k] = lengths[k] > 0 ? malloc(lengths[k]) : NULL;
        FT_CHECK(lengths[k] == 0 || bufs[k] != NULL, "malloc");
        e[k] = (ferry_dma_entry_t){.local = bufs[k], .remote_offset = offset, .length = lengths[k]};
        offset += lengths[k];
    }
    st_list(d, 1, e, N, 2000000);
    for (unsigned k = 0; k < N; k++)
        free(bufs[k]);
}

/* Abort a running 64 MiB queue (direction), with a callback or with ferry_dma_wait. */
static void st_abort(st_t *d, unsigned direction, int callback)
{
    ferry_dma_queue_t *q;
    uint8_t *buf = malloc(ST_BIG);
    FT_CHECK(buf != NULL, "malloc");
    memset(buf, 0x5a, ST_BIG);
    FT_CHECK_OK(ferry_dma_create(d->rs[1], &q));
    ferry_dma_entry_t e = {
        .local = buf, .remote_offset = 4096, .length = ST_BIG, .direction = direction};
    FT_CHECK_OK(ferry_dma_post(q, &e, 1));
    unsigned calls = d->cb_calls;
    FT_CHECK_STATUS(ferry_dma_start(q, callback ? st_cb : NULL, d), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_dma_abort(q));
    if (callback) {
        st_wait_cb(d, calls);
        FT_CHECK_STATUS(d->cb_status, FERRY_ERR_CANCELED);
    } else {
        FT_CHECK_STATUS(ferry_dma_wait(q, ST_TIMEOUT_MS), FERRY_ERR_CANCELED);
    }
    /* nothing copies into or out of buf any more */
    free(buf);
    ferry_status_t st;
    FT_CHECK(ferry_dma_state(q, &st) == FERRY_DMA_FAILED && st == FERRY_ERR_CANCELED, "aborted");
    FT_CHECK_STATUS(ferry_dma_abort(q), FERRY_ERR_ILLEGAL_STATE);
    /* the queue works again */
    uint8_t small[4096];
    d->seq++;
    ft_pattern_fill(small, sizeof(small), ft_pattern_seed(FT_SEG_IMPORTER, d->seq, sizeof(small)),
                    0);
    e = (ferry_dma_entry_t){.local = small,
                            .remote_offset = 8191,
                            .length = sizeof(small),
                            .direction = FERRY_DMA_WRITE};
    FT_CHECK_OK(ferry_dma_post(q, &e, 1));
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_dma_wait(q, ST_TIMEOUT_MS));
    FT_CHECK_OK(ferry_dma_destroy(q));
    st_owner_check(d, 1, 8191, sizeof(small), d->seq);
}

int main(void)
{
    static st_t d;
    uint8_t address[FT_CHAN_MSG_MAX];

    ft_set_role("importer");
    ft_watchdog(175);
    const char *env = getenv("FERRY_SEGMENT_COPY_THREADS");
    d.nthreads = env != NULL ? (unsigned)strtoul(env, NULL, 10) : 0;
    d.self = pthread_self();
    ft_seg_sizes_t sizes = {.size1 = ST_SIZE1, .size2 = ST_SIZE2};
    ft_peer_spawn(&d.owner, "owner", ft_seg_owner, &sizes);
    ft_ferry_init(&d.f, NULL, NULL);
    size_t len = ft_recv_address(d.owner.chan, address, sizeof(address), ST_TIMEOUT_MS);
    d.ep = ft_ep_create(d.f.worker, address, len, NULL);
    for (unsigned s = 1; s <= 2; s++) {
        FT_CHECK_OK(ferry_rsegment_connect(d.ep, s, ST_TIMEOUT_MS, 0, NULL, NULL, &d.rs[s]));
        FT_CHECK(ferry_rsegment_size(d.rs[s]) == (s == 1 ? ST_SIZE1 : ST_SIZE2), "size");
    }
    FT_CHECK(st_threads() == 0, "ferry started %u copy threads before any queue", st_threads());
    uint64_t start = ft_now_ns();
    st_sizes(&d, 1);
    st_sizes(&d, 2); /* registered memory: not mapped, copied by progress */
    st_scatter(&d);
    st_straddle(&d);
    st_abort(&d, FERRY_DMA_WRITE, 0);
    st_abort(&d, FERRY_DMA_WRITE, 1);
    st_abort(&d, FERRY_DMA_READ, 0);
    st_abort(&d, FERRY_DMA_READ, 1);
    FT_CHECK(st_threads() == d.nthreads, "%u copy threads (%u asked for)", st_threads(),
             d.nthreads);

    /* destroy the worker with a queue running: its threads stop after their chunk, joined */
    uint8_t *buf = malloc(ST_BIG);
    FT_CHECK(buf != NULL, "malloc");
    memset(buf, 0xa5, ST_BIG);
    ferry_dma_queue_t *q;
    FT_CHECK_OK(ferry_dma_create(d.rs[1], &q));
    ferry_dma_entry_t e = {
        .local = buf, .remote_offset = 0, .length = ST_BIG, .direction = FERRY_DMA_WRITE};
    FT_CHECK_OK(ferry_dma_post(q, &e, 1));
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_INPROGRESS);
    ft_chan_send_token(d.owner.chan, FT_SEG_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&d.owner, ST_TIMEOUT_MS, 0);
    ft_ferry_fini(&d.f); /* frees the endpoint, the remote segments and the queue */
    free(buf);
    FT_CHECK(st_threads() == 0, "%u copy threads left after ferry_worker_destroy", st_threads());
    ft_note("DMA on %u copy threads: sizes, scatter list, straddling entries, aborts: ok (%.2f s)",
            d.nthreads, (double)(ft_now_ns() - start) / 1e9);
    return 0;
}
