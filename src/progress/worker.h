/* The worker: the progress engine (epoll set, deferred callbacks, the active-message handler
 * table) and the list of protocol modules. It names no protocol: each protocol's per-worker
 * state is reached through its module (progress/module.h). The engine services transports use
 * (descriptors, deferred calls, delivery) are declared in transport/transport.h, the upward
 * contract; protocols use them too. */
#ifndef FY_PROGRESS_WORKER_H
#define FY_PROGRESS_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "core/completion.h"
#include "core/list.h"
#include "core/spinlock.h"
#include "core/thread_id.h"
#include "progress/counters.h"
#include "progress/module.h"
#include "transport/transport.h"
#include "wireup/context.h"

/* An internal handler's placement (fy_am_set_internal_place; transports ask fy_am_place). */
typedef void *(*fy_am_place_cb_t)(void *arg, ferry_ep_t *ep, const void *header,
                                  size_t header_length, size_t length);

typedef struct fy_am_handler {
    ferry_am_handler_cb_t cb;
    fy_am_place_cb_t place; /* NULL: no placement */
    void *arg;
    unsigned warned; /* dropped-message warnings already printed for this id */
} fy_am_handler_t;

#define FY_AM_ID_ALL 256 /* ids FERRY_AM_ID_MAX..255 are ferry's own protocols (am_ids.h) */

struct ferry_worker {
    ferry_context_t *context;
    unsigned fork_gen; /* the context's: another value in fy_fork_generation_now = forked */
    /* FERRY_THREAD_MULTI: every public call holds lock (fy_worker_lock); single mode: 0 */
    int multi;
    fy_spinlock_t lock;          /* held for a call's duration: a spinlock (spinlock.h) */
    atomic_uintptr_t lock_owner; /* fy_thread_id() of the holder, 0: none */
    unsigned lock_depth;         /* the holder's nested calls (callbacks calling ferry) */
    /* The bias (worker_lock.c): the creating thread's calls take no atomic read-modify-write
     * and no fence until another thread first calls. bias_thread: fy_thread_id() of the thread
     * that still uses the bias, 0: none (written by that thread only); bias_depth: its nested
     * calls in progress (written by it only); bias_on: 1 until another thread revokes the bias;
     * spin_only: 1 once the spinlock alone guards the worker (no bias, or revocation done). */
    atomic_uintptr_t bias_thread;
    atomic_uint bias_depth;
    atomic_int bias_on;
    atomic_int spin_only;
    unsigned sleepers; /* threads asleep in ferry_worker_wait: keep the worker armed */
    ferry_worker_params_t params;
    int epoll_fd;
    uint64_t uuid;
    fy_tl_worker_t *tl[FY_TL_MAX]; /* NULL where the transport is not enabled */
    unsigned tl_active[FY_TL_MAX]; /* indices of the enabled transports */
    unsigned tl_active_count;
    uint32_t tl_poll_skip; /* bit t: transport t has nothing to poll now (it says so itself) */
    uint32_t tl_poll_mask; /* bit t: transport t is enabled and has a poll */
    fy_tl_local_t tl_local[FY_TL_MAX]; /* what each transport is told about this worker */
    /* bit m: module m asked to be progressed (fy_worker_module_progress_set) */
    uint32_t module_progress;
    void *module_state[FY_MODULE_MAX]; /* each module's per-worker state (module init) */
    fy_am_handler_t am[FY_AM_ID_ALL];
    fy_list_t eps;          /* every endpoint of this worker (ferry_ep_t.link) */
    fy_list_t deferred;     /* fy_deferred_t to run from progress */
    unsigned poll_count;    /* progress calls (transports read it: fy_tl_local_t); every
                             * few, the epoll set is polled */
    uint64_t next_epoll_ns; /* when a spinning progress looks at the epoll set next */
    int armed;              /* arm() returned OK: the next progress drains the epoll set */
    unsigned in_progress;   /* > 0 inside ferry_worker_progress: callbacks may be running */
    int destroying;         /* ferry_worker_destroy is under way: it frees every endpoint */
    uint64_t wait_spin_ns;
    ferry_counters_t retired; /* the counters of the endpoints already freed, and the worker's
                               * own (tag_unexpected_peak_*: endpoints leave them 0) */
    uint8_t address[FERRY_ADDRESS_MAX_SIZE];
    size_t address_length;
    uint8_t address_compact[FERRY_ADDRESS_COMPACT_SIZE]; /* the compact form (address.h) */
};

/* Whether this worker is a forked child's copy of its parent's: every call on it then returns
 * FERRY_ERR_FORKED (or does nothing) and touches nothing shared. One load, no system call. */
static inline bool fy_worker_forked(const ferry_worker_t *worker)
{
    return fy_forked(worker->fork_gen);
}

/* The worker to lock for a public call on it, or NULL when none is needed: single-thread mode
 * (one predicted branch) or a forked child's copy (whose lock may have been held at fork;
 * the call then only returns FERRY_ERR_FORKED). */
static inline ferry_worker_t *fy_worker_multi(const ferry_worker_t *worker)
{
    if (__builtin_expect(worker == NULL || !worker->multi, 1) || fy_worker_forked(worker))
        return NULL;
    return (ferry_worker_t *)worker; /* the lock is mutable even behind a const handle */
}

/* The lock's slow paths (worker_lock.c). */
void fy_worker_bias_init(ferry_worker_t *worker);
void fy_worker_lock_wait(ferry_worker_t *worker);
unsigned fy_worker_unlock_all(ferry_worker_t *worker);
void fy_worker_relock(ferry_worker_t *worker, unsigned held);

/* Take the worker's lock (multi-thread mode) if that needs no waiting; false (and nothing
 * taken) otherwise, and fy_worker_lock_wait takes it. Recursive for the holder, so that a
 * callback may call ferry on its worker. The creating thread, while it holds the bias, only
 * stores its depth and re-reads bias_on between compiler barriers (no atomic read-modify-write,
 * no fence; the argument that this excludes every other thread is in worker_lock.c); a nested
 * call inside a biased one stays biased; finding the bias revoked, it leaves it for good and
 * fails. Everyone else takes the spinlock (one exchange), once the revocation is over. It makes
 * no call, so a send that takes it inline keeps its arguments in registers and needs no more
 * saved registers than the single-thread send beside it. */
static inline bool fy_worker_trylock(ferry_worker_t *worker)
{
    uintptr_t self = fy_thread_id();
    if (atomic_load_explicit(&worker->bias_thread, memory_order_relaxed) == self) {
        unsigned depth = atomic_load_explicit(&worker->bias_depth, memory_order_relaxed);
        atomic_store_explicit(&worker->bias_depth, depth + 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst); /* the store above, then the load below */
        if (__builtin_expect(
                depth > 0 || atomic_load_explicit(&worker->bias_on, memory_order_relaxed) != 0, 1))
            return true;
        /* revoked: no bias from now on; the revoker waits for this depth to be 0 */
        atomic_store_explicit(&worker->bias_thread, 0, memory_order_relaxed);
        atomic_store_explicit(&worker->bias_depth, 0, memory_order_release);
        return false;
    }
    if (atomic_load_explicit(&worker->lock_owner, memory_order_relaxed) == self) {
        worker->lock_depth++;
        return true;
    }
    if (__builtin_expect(atomic_load_explicit(&worker->spin_only, memory_order_acquire) == 0, 0))
        return false; /* the bias is to be revoked first (fy_worker_lock_wait) */
    if (!fy_spinlock_trylock(&worker->lock))
        return false;
    atomic_store_explicit(&worker->lock_owner, self, memory_order_relaxed);
    worker->lock_depth = 1;
    return true;
}

/* Take / release the worker's lock (multi-thread mode), waiting for it if need be. */
static inline void fy_worker_lock(ferry_worker_t *worker)
{
    if (__builtin_expect(fy_worker_trylock(worker), 1))
        return;
    fy_worker_lock_wait(worker);
}

static inline void fy_worker_unlock(ferry_worker_t *worker)
{
    if (atomic_load_explicit(&worker->bias_thread, memory_order_relaxed) == fy_thread_id()) {
        /* a release store is a plain store on x86: it orders the call's accesses before it
         * for a revoker that reads the depth with acquire (worker_lock.c) */
        unsigned depth = atomic_load_explicit(&worker->bias_depth, memory_order_relaxed);
        atomic_store_explicit(&worker->bias_depth, depth - 1, memory_order_release);
        return;
    }
    if (--worker->lock_depth > 0)
        return;
    atomic_store_explicit(&worker->lock_owner, 0, memory_order_relaxed);
    fy_spinlock_unlock(&worker->lock);
}

/* A module's per-worker state (what its init returned). */
static inline void *fy_worker_module_state(const ferry_worker_t *worker, unsigned module)
{
    return worker->module_state[module];
}

/* Ask progress to call the module's progress slot (on), or stop (off). Cheap: one bit. */
static inline void fy_worker_module_progress_set(ferry_worker_t *worker, unsigned module, bool on)
{
    if (on)
        worker->module_progress |= 1u << module;
    else
        worker->module_progress &= ~(1u << module);
}

/* The settings a worker's tunables are read with (fy_config_*_in): its context's. */
static inline const fy_config_set_t *fy_worker_config(const ferry_worker_t *worker)
{
    return &worker->context->config;
}

#endif
