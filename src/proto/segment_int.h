/* Named segments: the objects shared by segment.c, rsegment.c and segment_dma.c. */
#ifndef FERRY_MEM_SEGMENT_INT_H
#define FERRY_MEM_SEGMENT_INT_H

#include <stdatomic.h>

#include <ferry/ferry.h>

#include "core/list.h"
#include "progress/worker.h"
#include "proto/segment.h"

typedef enum seg_state {
    SEG_NOT_PREPARED,
    SEG_PREPARED,
    SEG_AVAILABLE,
    SEG_UNAVAILABLE,
} seg_state_t;

struct ferry_segment {
    fy_list_link_t link; /* worker->seg.segments */
    ferry_worker_t *worker;
    uint32_t id;
    seg_state_t state;
    int removed;      /* unpublished: the id is free, calls return FERRY_ERR_REMOVED */
    int released;     /* the user freed the handle; the struct lives for its connections */
    ferry_mem_t *mem; /* NULL once released (removed and no connection left) */
    void *ptr;
    size_t size;
    uint8_t key[RKEY_PACKED_SIZE]; /* packed by prepare */
    unsigned connections;
    ferry_segment_cb_t cb;
    void *arg;
    fy_list_t events; /* without a callback: seg_event_t for ferry_segment_wait_event */
};

/* One connected peer of a local segment (owner side). */
typedef struct seg_conn {
    fy_list_link_t link; /* worker->seg.conns */
    ferry_segment_t *seg;
    ferry_ep_t *ep;
    uint64_t id;
} seg_conn_t;

typedef enum rseg_state {
    RSEG_CONNECTING,
    RSEG_CONNECTED,
    RSEG_FAILED, /* the connect failed (status) */
    RSEG_LOST,   /* connected, then the owner or the link was lost (status) */
} rseg_state_t;

struct ferry_rsegment {
    fy_list_link_t link; /* worker->seg.rsegments */
    ferry_worker_t *worker;
    ferry_ep_t *ep; /* NULL once the endpoint was freed */
    uint32_t segment_id;
    rseg_state_t state;
    ferry_status_t status;
    uint64_t request_id;
    uint64_t connection;
    uint64_t size;
    ferry_rkey_t *rkey;
    int async;
    uint64_t deadline_ns; /* async connect with a timeout: counted in worker->seg.connecting */
    fy_list_t maps;       /* seg_map_t */
    unsigned dma_queues;
    ferry_rsegment_cb_t cb;
    void *arg;
    fy_list_t events;
};

/* An event: for an object with a callback it is in worker->seg.events and queued as a deferred
 * call; otherwise in the object's own list. */
typedef struct seg_event {
    fy_list_link_t link;
    fy_deferred_t deferred;
    ferry_segment_t *seg;
    ferry_rsegment_t *rseg;
    ferry_segment_event_t ev;
} seg_event_t;

/* A queue's run on the copy threads (segment_copy.c). entries/count/base are set before the run
 * and only read during it; next, next_done, inflight and stop belong to the pool's lock; done is
 * set (release) by whoever ends the run, with the lock held, and read (acquire) by progress:
 * after it is seen, no copy thread touches the job again. */
typedef struct seg_copy_job {
    fy_list_link_t link; /* pool->jobs while chunks are left to hand out */
    char *base;          /* the mapping of the remote segment (ferry_rkey_ptr at offset 0) */
    const ferry_dma_entry_t *entries;
    size_t count;
    size_t next;        /* entry of the next chunk */
    uint64_t next_done; /* bytes of that entry handed out */
    unsigned inflight;  /* chunks being copied */
    int stop;           /* abort: hand out nothing more */
    atomic_int done;    /* nothing left to hand out (or stop) and nothing in flight */
} seg_copy_job_t;

struct ferry_dma_queue {
    fy_list_link_t link;     /* worker->seg.dma_active while running */
    fy_list_link_t all_link; /* worker->seg.dma_queues */
    ferry_rsegment_t *rseg;
    ferry_dma_entry_t *entries;
    size_t count;
    size_t capacity;
    size_t next;        /* entry to issue next */
    uint64_t next_done; /* bytes of that entry issued */
    ferry_dma_state_t state;
    ferry_status_t status; /* first error */
    int aborting;          /* abort, or an error: issue nothing more */
    int wrote;             /* a write was issued: flush before done */
    int flushing;
    ferry_completion_t comp;       /* operations in flight (count) */
    ferry_completion_t flush_comp; /* the final ferry_ep_flush */
    int threaded;                  /* this run is on the copy threads (job) */
    seg_copy_job_t job;
    ferry_dma_cb_t cb;
    void *arg;
};

/* segment.c: events, control messages, waiting. */
void seg_event_push(ferry_worker_t *worker, ferry_segment_t *seg, ferry_rsegment_t *rseg,
                    const ferry_segment_event_t *ev);
void seg_events_purge(ferry_worker_t *worker, ferry_segment_t *seg, ferry_rsegment_t *rseg);
ferry_status_t seg_event_wait(ferry_worker_t *worker, fy_list_t *events, int timeout_ms,
                              ferry_segment_event_t *event_p);

/* Send a control message (header from m, optional payload); queue it when the transport has no
 * room (queue = 1) or return FERRY_ERR_NO_RESOURCE (queue = 0). Returns FERRY_OK or the
 * endpoint's error. */
ferry_status_t seg_send(ferry_worker_t *worker, ferry_ep_t *ep, const seg_wire_msg_t *m,
                        const void *payload, size_t length, int queue);
void seg_update_need(ferry_worker_t *worker);

typedef int (*seg_cond_fn_t)(void *arg);
/* Progress ep's worker until cond(arg) or timeout_ms (-1: none). Returns FERRY_OK,
 * FERRY_ERR_TIMED_OUT, FERRY_ERR_IO. */
ferry_status_t seg_wait_until(ferry_worker_t *worker, int timeout_ms, seg_cond_fn_t cond,
                              void *arg);

/* A message about an unknown object or a malformed one: warn once per worker, then debug. */
void seg_drop(ferry_worker_t *worker, const char *what, const char *reason);

/* rsegment.c */
ferry_status_t rseg_handle_reply(ferry_worker_t *worker, ferry_ep_t *ep, const seg_wire_msg_t *m);
void rseg_ep_failed(ferry_worker_t *worker, ferry_ep_t *ep, ferry_status_t status);
void rseg_ep_freed(ferry_worker_t *worker, ferry_ep_t *ep);
unsigned rseg_progress_timeouts(ferry_worker_t *worker);
/* The earliest deadline of an asynchronous connect (UINT64_MAX: none). */
uint64_t rseg_next_deadline(ferry_worker_t *worker);
void rseg_cleanup(ferry_worker_t *worker);
/* FERRY_OK when the remote segment is usable; else why not (and it becomes LOST when its
 * endpoint is no longer open). */
ferry_status_t rseg_check(ferry_rsegment_t *rseg);

/* segment_dma.c */
void seg_dma_worker_init(ferry_worker_t *worker);
unsigned seg_dma_progress(ferry_worker_t *worker);
void seg_dma_cleanup(ferry_worker_t *worker);

/* segment_copy.c: the copy threads of a worker (FERRY_SEGMENT_COPY_THREADS), started on first
 * use, stopped by seg_copy_cleanup. */
void seg_copy_worker_init(ferry_worker_t *worker);
/* Queue job (entries, count, base set; the rest is reset here). Returns FERRY_OK, or the error
 * of starting the threads (logged; the caller copies from progress instead). */
ferry_status_t seg_copy_start(ferry_worker_t *worker, seg_copy_job_t *job);
/* Abort: hand out no further chunk; done once the chunks in flight are copied. */
void seg_copy_stop(ferry_worker_t *worker, seg_copy_job_t *job);
/* Stop and join the threads (the chunks in flight are finished first); before the queues and
 * the remote segments are freed. */
void seg_copy_cleanup(ferry_worker_t *worker);
static inline int seg_copy_done(seg_copy_job_t *job)
{
    return atomic_load_explicit(&job->done, memory_order_acquire);
}

#endif
