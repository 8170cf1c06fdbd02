/* DMA-style transfer queues on remote segments: entries are checked when posted, issued from
 * progress as ferry_put/ferry_get of at most FERRY_SEGMENT_DMA_CHUNK bytes per progress call
 * (with at most SEG_DMA_INFLIGHT operations in flight), and a queue that wrote finishes after
 * a ferry_ep_flush (the data is then in the owner's memory).
 *
 * With FERRY_SEGMENT_COPY_THREADS > 0, a run whose every entry can go through the mapping of
 * the segment (ferry_mem_alloc memory of a peer on this host) is handed to the worker's copy
 * threads instead (segment_copy.c): progress only looks at the job's done flag (an atomic; the
 * threads' eventfd wakes a sleeping ferry_worker_wait) and then finishes the queue as usual. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "proto/segment_int.h"
#include "wireup/ep.h"

static const fy_config_var_t seg_dma_chunk_var = {
    .name = "FERRY_SEGMENT_DMA_CHUNK",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "4194304",
    .description = "bytes a DMA queue of a remote segment moves per ferry_worker_progress call "
                   "(the application runs between two calls)"};
static const fy_config_var_t *const seg_dma_chunk_reg
    __attribute__((used, section("ferry_config_registry"))) = &seg_dma_chunk_var;

/* Operations one queue keeps in flight at most (target-executed ones hold requests). */
#define SEG_DMA_INFLIGHT 64

void seg_dma_worker_init(ferry_worker_t *worker)
{
    fy_segment_worker_of(worker)->dma_chunk =
        fy_config_size_in(fy_worker_config(worker), &seg_dma_chunk_var);
    if (fy_segment_worker_of(worker)->dma_chunk == 0)
        fy_segment_worker_of(worker)->dma_chunk = 1;
    seg_copy_worker_init(worker); /* FERRY_SEGMENT_COPY_THREADS: no thread started yet */
}

static inline ferry_status_t locked_dma_create(ferry_rsegment_t *rsegment,
                                               ferry_dma_queue_t **queue_p)
{
    if (rsegment != NULL && fy_worker_forked(rsegment->worker))
        return FERRY_ERR_FORKED;
    if (rsegment == NULL || queue_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    ferry_status_t status = rseg_check(rsegment);
    if (status != FERRY_OK)
        return status;
    ferry_dma_queue_t *q = calloc(1, sizeof(*q));
    if (q == NULL) {
        fy_error("calloc(%zu) for a DMA queue failed", sizeof(*q));
        return FERRY_ERR_NO_MEMORY;
    }
    q->rseg = rsegment;
    q->state = FERRY_DMA_IDLE;
    fy_list_init(&q->link);
    fy_list_link_init(&q->job.link);
    fy_list_push_tail(&fy_segment_worker_of(rsegment->worker)->dma_queues, &q->all_link);
    rsegment->dma_queues++;
    *queue_p = q;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_dma_create(ferry_rsegment_t *rsegment,
                                             ferry_dma_queue_t **queue_p)
{
    ferry_worker_t *locked = fy_worker_multi(rsegment != NULL ? rsegment->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_dma_create(rsegment, queue_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_dma_create(rsegment, queue_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_dma_post(ferry_dma_queue_t *queue,
                                             const ferry_dma_entry_t *entries, size_t count)
{
    if (queue != NULL && fy_worker_forked(queue->rseg->worker))
        return FERRY_ERR_FORKED;
    if (queue == NULL || (entries == NULL && count > 0))
        return FERRY_ERR_INVALID_PARAM;
    if (queue->state == FERRY_DMA_RUNNING)
        return FERRY_ERR_BUSY;
    for (size_t i = 0; i < count; i++) {
        const ferry_dma_entry_t *e = &entries[i];
        if ((e->local == NULL && e->length > 0) ||
            (e->direction != FERRY_DMA_WRITE && e->direction != FERRY_DMA_READ)) {
            fy_debug("ferry_dma_post: entry %zu has a NULL buffer or direction %u", i,
                     e->direction);
            return FERRY_ERR_INVALID_PARAM;
        }
        if (!mem_range_ok(queue->rseg->size, e->remote_offset, e->length)) {
            fy_debug("ferry_dma_post: entry %zu [%llu, +%zu) is outside the segment of %llu "
                     "bytes",
                     i, (unsigned long long)e->remote_offset, e->length,
                     (unsigned long long)queue->rseg->size);
            return FERRY_ERR_OUT_OF_RANGE;
        }
    }
    if (queue->state != FERRY_DMA_IDLE) { /* finished: a new list */
        queue->count = 0;
        queue->state = FERRY_DMA_IDLE;
        queue->status = FERRY_OK;
    }
    if (count > queue->capacity - queue->count) {
        size_t capacity =
            queue->capacity * 2 > queue->count + count ? queue->capacity * 2 : queue->count + count;
        ferry_dma_entry_t *grown = realloc(queue->entries, capacity * sizeof(*grown));
        if (grown == NULL) {
            fy_error("realloc(%zu entries) for a DMA queue failed", capacity);
            return FERRY_ERR_NO_MEMORY;
        }
        queue->entries = grown;
        queue->capacity = capacity;
    }
    if (count > 0)
        memcpy(queue->entries + queue->count, entries, count * sizeof(*entries));
    queue->count += count;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_dma_post(ferry_dma_queue_t *queue,
                                           const ferry_dma_entry_t *entries, size_t count)
{
    ferry_worker_t *locked =
        fy_worker_multi(queue != NULL && queue->rseg != NULL ? queue->rseg->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_dma_post(queue, entries, count);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_dma_post(queue, entries, count);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* The mapping of the remote segment when every entry of q can be copied through it (the checks
 * of ferry_put/ferry_get's direct path: memory of a peer on this host mapped here, still
 * registered as the key says, not single use, granting the access each direction needs, each
 * range inside the region), else NULL. */
static char *dma_mapped(ferry_dma_queue_t *q)
{
    ferry_rkey_t *rkey = q->rseg->rkey;
    unsigned access = 0;
    void *base;

    if (rkey == NULL || ferry_rkey_ptr(rkey, 0, &base) != FERRY_OK || rkey->entry == NULL ||
        (rkey->key.flags & FERRY_MEM_SINGLE_USE))
        return NULL;
    for (size_t i = 0; i < q->count; i++) {
        const ferry_dma_entry_t *e = &q->entries[i];
        access |=
            e->direction == FERRY_DMA_WRITE ? FERRY_ACCESS_REMOTE_WRITE : FERRY_ACCESS_REMOTE_READ;
        if (!mem_range_ok(rkey->mapped_length, e->remote_offset, e->length))
            return NULL;
    }
    const mem_keytable_entry_t *entry = rkey->entry;
    if (!mem_entry_matches(entry, rkey->key.generation, rkey->secret) ||
        (entry->access & access) != access)
        return NULL;
    return base;
}

static inline ferry_status_t locked_dma_start(ferry_dma_queue_t *queue, ferry_dma_cb_t callback,
                                              void *arg)
{
    if (queue != NULL && fy_worker_forked(queue->rseg->worker))
        return FERRY_ERR_FORKED;
    if (queue == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (queue->state == FERRY_DMA_RUNNING)
        return FERRY_ERR_BUSY;
    if (queue->state != FERRY_DMA_IDLE || queue->count == 0)
        return FERRY_ERR_NO_ELEM;
    ferry_status_t status = rseg_check(queue->rseg);
    if (status != FERRY_OK)
        return status;
    queue->cb = callback;
    queue->arg = arg;
    queue->next = 0;
    queue->next_done = 0;
    queue->aborting = 0;
    queue->wrote = 0;
    queue->flushing = 0;
    queue->status = FERRY_OK;
    queue->comp = (ferry_completion_t){.cb = NULL, .count = 0, .status = FERRY_OK};
    queue->state = FERRY_DMA_RUNNING;
    queue->threaded = 0;
    ferry_worker_t *worker = queue->rseg->worker;
    if (fy_segment_worker_of(worker)->copy_threads > 0) {
        char *base = dma_mapped(queue);
        if (base != NULL) {
            queue->job.base = base;
            queue->job.entries = queue->entries;
            queue->job.count = queue->count;
            /* an error (logged) leaves the copies to progress */
            queue->threaded = seg_copy_start(worker, &queue->job) == FERRY_OK;
        }
    }
    fy_list_push_tail(&fy_segment_worker_of(worker)->dma_active, &queue->link);
    seg_update_need(worker);
    return FERRY_INPROGRESS;
}

FERRY_EXPORT ferry_status_t ferry_dma_start(ferry_dma_queue_t *queue, ferry_dma_cb_t callback,
                                            void *arg)
{
    ferry_worker_t *locked =
        fy_worker_multi(queue != NULL && queue->rseg != NULL ? queue->rseg->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_dma_start(queue, callback, arg);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_dma_start(queue, callback, arg);
    fy_worker_unlock(locked);
    return status_or_value;
}

static void dma_fail(ferry_dma_queue_t *q, ferry_status_t status)
{
    if (q->status == FERRY_OK)
        q->status = status;
    q->aborting = 1;
}

/* Issue entries within the budget; returns the bytes issued. */
static uint64_t dma_issue(ferry_dma_queue_t *q, uint64_t budget)
{
    ferry_rsegment_t *rseg = q->rseg;
    uint64_t issued = 0;

    while (!q->aborting && q->next < q->count && issued < budget &&
           q->comp.count < SEG_DMA_INFLIGHT) {
        ferry_status_t status = rseg_check(rseg);
        if (status != FERRY_OK) {
            dma_fail(q, status);
            break;
        }
        const ferry_dma_entry_t *e = &q->entries[q->next];
        uint64_t length = e->length - q->next_done;
        if (length > budget - issued)
            length = budget - issued;
        char *local = (char *)e->local + q->next_done;
        uint64_t offset = e->remote_offset + q->next_done;
        if (length > 0) {
            q->comp.count++;
            if (e->direction == FERRY_DMA_WRITE)
                status = ferry_put(rseg->ep, local, length, offset, rseg->rkey, &q->comp);
            else
                status = ferry_get(rseg->ep, local, length, offset, rseg->rkey, &q->comp);
            if (status != FERRY_INPROGRESS)
                q->comp.count--;
            if (status == FERRY_ERR_NO_RESOURCE)
                break;
            if (status != FERRY_OK && status != FERRY_INPROGRESS) {
                dma_fail(q, status);
                break;
            }
            if (e->direction == FERRY_DMA_WRITE)
                q->wrote = 1;
        }
        issued += length;
        q->next_done += length;
        if (q->next_done == e->length) {
            q->next++;
            q->next_done = 0;
        }
    }
    return issued;
}

static void dma_finish(ferry_dma_queue_t *q)
{
    fy_list_remove(&q->link);
    fy_list_init(&q->link);
    q->state = q->status == FERRY_OK ? FERRY_DMA_DONE : FERRY_DMA_FAILED;
    seg_update_need(q->rseg->worker);
    if (q->cb != NULL)
        q->cb(q->arg, q, q->status);
}

/* Move one queue on; returns 1 when it did something. */
static unsigned dma_step(ferry_dma_queue_t *q, uint64_t budget)
{
    if (q->flushing) {
        if (q->flush_comp.count > 0)
            return 0;
        q->flushing = 0;
        if (q->flush_comp.status != FERRY_OK)
            dma_fail(q, q->flush_comp.status);
        dma_finish(q);
        return 1;
    }
    uint64_t issued = dma_issue(q, budget);
    if (q->comp.count > 0 || (!q->aborting && q->next < q->count))
        return issued > 0;
    /* everything issued completed */
    if (q->comp.status != FERRY_OK)
        dma_fail(q, q->comp.status);
    if (q->status == FERRY_OK && q->wrote) {
        ferry_status_t status = rseg_check(q->rseg);
        if (status == FERRY_OK) {
            q->flush_comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
            status = ferry_ep_flush(q->rseg->ep, &q->flush_comp);
        }
        if (status == FERRY_INPROGRESS) {
            q->flushing = 1;
            return 1;
        }
        if (status != FERRY_OK)
            dma_fail(q, status);
    }
    dma_finish(q);
    return 1;
}

/* A run on the copy threads: finish the queue once the job is done. */
static unsigned dma_step_threaded(ferry_dma_queue_t *q)
{
    if (!q->aborting) {
        ferry_status_t status = rseg_check(q->rseg);
        if (status != FERRY_OK) { /* lost: stop as an abort does */
            dma_fail(q, status);
            seg_copy_stop(q->rseg->worker, &q->job);
        }
    }
    if (!seg_copy_done(&q->job))
        return 0;
    q->threaded = 0;
    dma_finish(q);
    return 1;
}

unsigned seg_dma_progress(ferry_worker_t *worker)
{
    fy_list_t *active = &fy_segment_worker_of(worker)->dma_active;
    unsigned count = 0;
    /* the first queue gets the budget; the others issue only what is left (fair enough for a
     * few queues: a finished queue leaves the list) */
    uint64_t budget = fy_segment_worker_of(worker)->dma_chunk;
    for (fy_list_link_t *l = fy_list_first(active), *next; l != fy_list_end(active); l = next) {
        next = l->next;
        ferry_dma_queue_t *q = fy_list_entry(l, ferry_dma_queue_t, link);
        count += q->threaded ? dma_step_threaded(q) : dma_step(q, budget);
    }
    /* a queue run by progress keeps a waiting worker spinning: its operations may complete
     * without an event that wakes the worker (a run on the copy threads wakes it through their
     * eventfd) */
    for (fy_list_link_t *l = fy_list_first(active); l != fy_list_end(active); l = l->next) {
        if (!fy_list_entry(l, ferry_dma_queue_t, link)->threaded)
            return count + 1;
    }
    return count;
}

static inline ferry_dma_state_t locked_dma_state(const ferry_dma_queue_t *queue,
                                                 ferry_status_t *status_p)
{
    if (queue != NULL && fy_worker_forked(queue->rseg->worker)) {
        if (status_p != NULL)
            *status_p = FERRY_ERR_FORKED;
        return FERRY_DMA_FAILED;
    }
    if (queue == NULL) {
        if (status_p != NULL)
            *status_p = FERRY_ERR_INVALID_PARAM;
        return FERRY_DMA_FAILED;
    }
    if (status_p != NULL)
        *status_p = queue->state == FERRY_DMA_RUNNING ? FERRY_INPROGRESS : queue->status;
    return queue->state;
}

FERRY_EXPORT ferry_dma_state_t ferry_dma_state(const ferry_dma_queue_t *queue,
                                               ferry_status_t *status_p)
{
    ferry_worker_t *locked =
        fy_worker_multi(queue != NULL && queue->rseg != NULL ? queue->rseg->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_dma_state(queue, status_p);
    fy_worker_lock(locked);
    ferry_dma_state_t status_or_value = locked_dma_state(queue, status_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static int dma_finished(void *arg)
{
    return ((ferry_dma_queue_t *)arg)->state != FERRY_DMA_RUNNING;
}

static inline ferry_status_t locked_dma_wait(ferry_dma_queue_t *queue, int timeout_ms)
{
    if (queue != NULL && fy_worker_forked(queue->rseg->worker))
        return FERRY_ERR_FORKED;
    if (queue == NULL || queue->state == FERRY_DMA_IDLE)
        return FERRY_ERR_INVALID_PARAM;
    ferry_status_t status = seg_wait_until(queue->rseg->worker, timeout_ms, dma_finished, queue);
    if (status != FERRY_OK)
        return status;
    return queue->status;
}

FERRY_EXPORT ferry_status_t ferry_dma_wait(ferry_dma_queue_t *queue, int timeout_ms)
{
    ferry_worker_t *locked =
        fy_worker_multi(queue != NULL && queue->rseg != NULL ? queue->rseg->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_dma_wait(queue, timeout_ms);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_dma_wait(queue, timeout_ms);
    fy_worker_unlock(locked);
    return status_or_value;
}

static ferry_status_t locked_dma_abort(ferry_dma_queue_t *queue)
{
    if (queue != NULL && fy_worker_forked(queue->rseg->worker))
        return FERRY_ERR_FORKED;
    if (queue == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (queue->state != FERRY_DMA_RUNNING)
        return FERRY_ERR_ILLEGAL_STATE;
    dma_fail(queue, FERRY_ERR_CANCELED);
    if (queue->threaded) /* the chunks in flight finish; the queue ends from progress */
        seg_copy_stop(queue->rseg->worker, &queue->job);
    return FERRY_OK;
}

/* Runs fn(queue) under the worker's lock in multi-thread mode (ferry_dma_abort and
 * ferry_dma_destroy). */
static ferry_status_t dma_queue_call(ferry_dma_queue_t *queue,
                                     ferry_status_t (*fn)(ferry_dma_queue_t *queue))
{
    ferry_worker_t *locked =
        fy_worker_multi(queue != NULL && queue->rseg != NULL ? queue->rseg->worker : NULL);
    if (fy_likely(locked == NULL))
        return fn(queue);
    fy_worker_lock(locked);
    ferry_status_t status = fn(queue);
    fy_worker_unlock(locked);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_dma_abort(ferry_dma_queue_t *queue)
{
    return dma_queue_call(queue, locked_dma_abort);
}

static ferry_status_t locked_dma_destroy(ferry_dma_queue_t *queue)
{
    if (queue != NULL && fy_worker_forked(queue->rseg->worker))
        return FERRY_ERR_FORKED;
    if (queue == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (queue->state == FERRY_DMA_RUNNING)
        return FERRY_ERR_BUSY;
    queue->rseg->dma_queues--;
    fy_list_remove(&queue->all_link);
    free(queue->entries);
    free(queue);
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_dma_destroy(ferry_dma_queue_t *queue)
{
    return dma_queue_call(queue, locked_dma_destroy);
}

void seg_dma_cleanup(ferry_worker_t *worker)
{
    fy_list_link_t *l;
    seg_copy_cleanup(worker); /* no copy thread touches a queue or a mapping afterwards */
    while ((l = fy_list_pop_head(&fy_segment_worker_of(worker)->dma_queues)) != NULL) {
        ferry_dma_queue_t *q = fy_container_of(l, ferry_dma_queue_t, all_link);
        if (fy_list_is_linked(&q->link))
            fy_list_remove(&q->link);
        q->rseg->dma_queues--;
        free(q->entries);
        free(q);
    }
}
