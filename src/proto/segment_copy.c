/* Copy threads for DMA queues on mapped segments (FERRY_SEGMENT_COPY_THREADS > 0).
 *
 * A worker's pool is started by the first queue that uses it and joined at worker destruction.
 * Jobs (one per running queue) wait in a list under the pool's mutex; a thread takes the next
 * chunk of the first job (up to FERRY_SEGMENT_COPY_CHUNK bytes: a piece of a large entry, or
 * several small entries), copies it without the lock, and reports it back under the lock. The
 * thread that ends a job (nothing left to hand out, or stopped, and nothing in flight) sets its
 * done flag and writes the pool's eventfd, which is in the worker's epoll set: a worker asleep
 * in ferry_worker_wait wakes, and progress (never a copy thread) finishes the queue and runs
 * its callback. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "proto/segment_int.h"

static const fy_config_var_t seg_copy_threads_var = {
    .name = "FERRY_SEGMENT_COPY_THREADS",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "0",
    .description = "copy threads for DMA queues on mapped segments (ferry_mem_alloc memory of a "
                   "peer on this host), started on first use; 0: the copies run in "
                   "ferry_worker_progress"};
static const fy_config_var_t *const seg_copy_threads_reg
    __attribute__((used, section("ferry_config_registry"))) = &seg_copy_threads_var;

static const fy_config_var_t seg_copy_chunk_var = {
    .name = "FERRY_SEGMENT_COPY_CHUNK",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "1048576",
    .description = "bytes a copy thread takes from a DMA queue at a time (large entries are "
                   "split across the threads in pieces of this size)"};
static const fy_config_var_t *const seg_copy_chunk_reg
    __attribute__((used, section("ferry_config_registry"))) = &seg_copy_chunk_var;

/* More would only contend for the same memory bus. */
#define SEG_COPY_THREADS_MAX 64u

typedef struct seg_copy_pool {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a job was queued, or stop */
    fy_list_t jobs;      /* seg_copy_job_t with chunks left to hand out */
    int stop;
    uint64_t chunk;
    int efd; /* eventfd: a job ended */
    fy_worker_fd_t fd_entry;
    unsigned nthreads;
    pthread_t threads[];
} seg_copy_pool_t;

void seg_copy_worker_init(ferry_worker_t *worker)
{
    size_t threads = fy_config_size_in(fy_worker_config(worker), &seg_copy_threads_var);
    if (threads > SEG_COPY_THREADS_MAX) {
        fy_warn("FERRY_SEGMENT_COPY_THREADS=%zu: using %u copy threads", threads,
                SEG_COPY_THREADS_MAX);
        threads = SEG_COPY_THREADS_MAX;
    }
    fy_segment_worker_of(worker)->copy_threads = (unsigned)threads;
    fy_segment_worker_of(worker)->copy_chunk =
        fy_config_size_in(fy_worker_config(worker), &seg_copy_chunk_var);
    if (fy_segment_worker_of(worker)->copy_chunk < 4096)
        fy_segment_worker_of(worker)->copy_chunk = 4096;
    fy_segment_worker_of(worker)->copy = NULL;
}

/* Copy [(first, first_done), (last, last_done)) of the job's entries. */
static void seg_copy_range(const seg_copy_job_t *job, size_t first, uint64_t first_done,
                           size_t last, uint64_t last_done)
{
    size_t i = first;
    uint64_t from = first_done;
    while (i < last || (i == last && from < last_done)) {
        const ferry_dma_entry_t *e = &job->entries[i];
        uint64_t to = i < last ? e->length : last_done;
        size_t n = (size_t)(to - from);
        if (n > 0) {
            char *local = (char *)e->local + from;
            char *remote = job->base + e->remote_offset + from;
            if (e->direction == FERRY_DMA_WRITE)
                memcpy(remote, local, n);
            else
                memcpy(local, remote, n);
        }
        i++;
        from = 0;
    }
}

static void seg_copy_signal(seg_copy_pool_t *pool)
{
    uint64_t one = 1;
    /* EAGAIN: the counter is full, so the worker is woken anyway */
    if (write(pool->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        fy_warn("write(eventfd %d) of a copy thread failed: %s", pool->efd, strerror(errno));
}

static void *seg_copy_thread(void *arg)
{
    seg_copy_pool_t *pool = arg;

    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stop && fy_list_is_empty(&pool->jobs))
            pthread_cond_wait(&pool->cond, &pool->lock);
        if (pool->stop)
            break;
        seg_copy_job_t *job = fy_list_entry(fy_list_first(&pool->jobs), seg_copy_job_t, link);
        /* carve the next chunk: whole small entries, or a piece of a large one */
        size_t first = job->next;
        uint64_t first_done = job->next_done;
        uint64_t left = pool->chunk;
        while (job->next < job->count && left > 0) {
            uint64_t n = job->entries[job->next].length - job->next_done;
            if (n > left)
                n = left;
            left -= n;
            job->next_done += n;
            if (job->next_done == job->entries[job->next].length) {
                job->next++;
                job->next_done = 0;
            }
        }
        size_t last = job->next;
        uint64_t last_done = job->next_done;
        if (job->next == job->count) {
            fy_list_remove(&job->link); /* all handed out */
        }
        job->inflight++;
        pthread_mutex_unlock(&pool->lock);

        seg_copy_range(job, first, first_done, last, last_done);

        pthread_mutex_lock(&pool->lock);
        job->inflight--;
        if (job->inflight == 0 && !fy_list_is_linked(&job->link) &&
            !atomic_load_explicit(&job->done, memory_order_relaxed)) {
            /* the job's last chunk: progress may free it as soon as it sees done */
            atomic_store_explicit(&job->done, 1, memory_order_release);
            seg_copy_signal(pool);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void seg_copy_drain(void *arg, uint32_t events)
{
    seg_copy_pool_t *pool = arg;
    uint64_t count;
    (void)events;
    if (read(pool->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
        fy_warn("read(eventfd %d) of the copy threads failed: %s", pool->efd, strerror(errno));
}

/* Stop the threads (after their current chunk) and free the pool. */
static void seg_copy_pool_free(ferry_worker_t *worker, seg_copy_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i < pool->nthreads; i++)
        pthread_join(pool->threads[i], NULL);
    if (pool->fd_entry.fd >= 0)
        fy_worker_fd_remove(worker, &pool->fd_entry);
    close(pool->efd);
    pthread_cond_destroy(&pool->cond);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

static ferry_status_t seg_copy_pool_create(ferry_worker_t *worker)
{
    unsigned want = fy_segment_worker_of(worker)->copy_threads;
    ferry_status_t status;
    sigset_t all, old;
    int err;

    seg_copy_pool_t *pool = calloc(1, sizeof(*pool) + want * sizeof(pool->threads[0]));
    if (pool == NULL) {
        fy_error("calloc(%zu) for %u copy threads failed",
                 sizeof(*pool) + want * sizeof(pool->threads[0]), want);
        return FERRY_ERR_NO_MEMORY;
    }
    fy_list_init(&pool->jobs);
    pool->chunk = fy_segment_worker_of(worker)->copy_chunk;
    pool->fd_entry.fd = -1;
    pool->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (pool->efd < 0) {
        fy_error("eventfd for the copy threads failed: %s (check the open-files limit, "
                 "ulimit -n)",
                 strerror(errno));
        status = FERRY_ERR_IO;
        goto err_free_pool;
    }
    if ((err = pthread_mutex_init(&pool->lock, NULL)) != 0) {
        fy_error("pthread_mutex_init for the copy threads failed: %s", strerror(err));
        status = FERRY_ERR_NO_RESOURCE;
        goto err_close_efd;
    }
    if ((err = pthread_cond_init(&pool->cond, NULL)) != 0) {
        fy_error("pthread_cond_init for the copy threads failed: %s", strerror(err));
        status = FERRY_ERR_NO_RESOURCE;
        goto err_destroy_lock;
    }
    /* the threads take no signal: the application's handlers run on its own threads */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; pool->nthreads < want; pool->nthreads++) {
        err = pthread_create(&pool->threads[pool->nthreads], NULL, seg_copy_thread, pool);
        if (err != 0)
            break;
        pthread_setname_np(pool->threads[pool->nthreads], "ferry-copy");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pool->nthreads == 0) {
        fy_error("pthread_create of a copy thread failed: %s (DMA queues copy from "
                 "ferry_worker_progress; FERRY_SEGMENT_COPY_THREADS=0 silences this)",
                 strerror(err));
        status = FERRY_ERR_NO_RESOURCE;
        goto err_destroy_cond;
    }
    if (pool->nthreads < want)
        fy_warn("pthread_create of copy thread %u of %u failed: %s (continuing with %u)",
                pool->nthreads + 1, want, strerror(err), pool->nthreads);
    pool->fd_entry = (fy_worker_fd_t){.fd = pool->efd, .cb = seg_copy_drain, .arg = pool};
    status = fy_worker_fd_add(worker, &pool->fd_entry, EPOLLIN);
    if (status != FERRY_OK) {
        pool->fd_entry.fd = -1;
        seg_copy_pool_free(worker, pool); /* joins the threads */
        return status;
    }
    fy_segment_worker_of(worker)->copy = pool;
    fy_debug("segments: %u copy threads started (chunks of %llu bytes)", pool->nthreads,
             (unsigned long long)pool->chunk);
    return FERRY_OK;

err_destroy_cond:
    pthread_cond_destroy(&pool->cond);
err_destroy_lock:
    pthread_mutex_destroy(&pool->lock);
err_close_efd:
    close(pool->efd);
err_free_pool:
    free(pool);
    return status;
}

ferry_status_t seg_copy_start(ferry_worker_t *worker, seg_copy_job_t *job)
{
    if (fy_segment_worker_of(worker)->copy == NULL) {
        ferry_status_t status = seg_copy_pool_create(worker);
        if (status != FERRY_OK) {
            fy_segment_worker_of(worker)->copy_threads = 0; /* do not try (and log) again */
            return status;
        }
    }
    seg_copy_pool_t *pool = fy_segment_worker_of(worker)->copy;
    pthread_mutex_lock(&pool->lock);
    job->next = 0;
    job->next_done = 0;
    job->inflight = 0;
    job->stop = 0;
    atomic_store_explicit(&job->done, 0, memory_order_relaxed);
    fy_list_push_tail(&pool->jobs, &job->link);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->lock);
    return FERRY_OK;
}

void seg_copy_stop(ferry_worker_t *worker, seg_copy_job_t *job)
{
    seg_copy_pool_t *pool = fy_segment_worker_of(worker)->copy;
    pthread_mutex_lock(&pool->lock);
    job->stop = 1;
    fy_list_remove(&job->link); /* harmless when no longer listed */
    /* nothing in flight: done now (progress, on this thread, sees it) */
    if (job->inflight == 0)
        atomic_store_explicit(&job->done, 1, memory_order_release);
    pthread_mutex_unlock(&pool->lock);
}

void seg_copy_cleanup(ferry_worker_t *worker)
{
    if (fy_segment_worker_of(worker)->copy != NULL) {
        seg_copy_pool_free(worker, fy_segment_worker_of(worker)->copy);
        fy_segment_worker_of(worker)->copy = NULL;
    }
}
