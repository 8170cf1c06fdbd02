/* The multi-thread worker's biased lock: the slow paths of fy_worker_lock (worker.h).
 *
 * Why a bias. Taking a spinlock is an atomic read-modify-write, a full barrier on x86: each
 * send then waits for the previous send's ring stores (cache lines the receiver's core owns) to
 * drain, and an 8-byte send of a single thread on a FERRY_THREAD_MULTI worker ran at 0.4x of
 * single-thread mode. Most such workers are used by one thread most of the time, so the thread
 * that creates one holds a bias: its lock is a plain store of its call depth and a plain load of
 * bias_on, with compiler barriers only.
 *
 * Revocation (worker_bias_revoke, once, by the first other thread to call):
 *     revoker: bias_on = 0; membarrier(PRIVATE_EXPEDITED); wait until bias_depth == 0
 *     owner:   bias_depth = d + 1; compiler barrier; if (bias_on) proceed biased
 * This is Dekker's mutual exclusion with the owner's fence moved to the revoker's side.
 * membarrier returns only after every CPU running a thread of this process has executed a full
 * barrier at some point P of that thread's instruction stream (and a thread not running has
 * passed one at its last context switch). The owner's store of its depth comes before its load
 * of bias_on in program order (the compiler barrier keeps that order; the CPU may reorder a
 * store after a later load, which is what the barrier at P forbids across P). So either
 *   - P is after the owner's store: the store is globally visible before membarrier returns,
 *     and the revoker, reading bias_depth afterwards, sees the owner inside its call and waits;
 *   - or P is before the owner's load: the revoker's store of bias_on = 0, ordered before
 *     membarrier by the system call itself, is visible at P, and the owner reads 0, undoes its
 *     depth and takes the spinlock instead (fy_worker_trylock fails: fy_worker_lock_wait).
 * Both may happen; neither missing is impossible. The owner's unlock stores its depth with
 * release (a plain store on x86), and the revoker reads it with acquire: once the revoker sees
 * 0, everything the owner did under the bias happened before what the revoker does next. A
 * nested call of the owner (a callback calling ferry) inside a biased call stays biased: the
 * revoker is waiting for the depth to reach 0 and does not take the spinlock before then.
 * Only then does the revoker set spin_only, which every other thread waits for before taking
 * the spinlock, and so does the owner that found the bias revoked (having stored its depth 0
 * first, it does not hold the revoker up).
 *
 * ThreadSanitizer checks the bias too: it does not model membarrier, but it need not: every
 * pair of calls above is ordered by what it does see (the release store of the depth and the
 * revoker's acquire load of it, or the spinlock both take after the revocation); only an
 * owner proceeding biased while the revoker has already seen its depth 0 — what membarrier
 * excludes — would be a race, and TSan would report it. No bias where membarrier is
 * unavailable (a kernel before 4.14, a seccomp filter): then every thread takes the spinlock. A
 * forked child's copy of a worker takes no lock at all (fy_worker_multi), bias or not. */
#define _GNU_SOURCE
#include "progress/worker.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/time.h"

/* Spins (each a pause) before a thread waiting for the revocation yields its CPU. */
#define FY_BIAS_SPINS 256u

static int worker_membarrier(int cmd)
{
    return (int)syscall(SYS_membarrier, cmd, 0u, 0);
}

/* Whether this process is registered for MEMBARRIER_CMD_PRIVATE_EXPEDITED: registers it the
 * first time (per process: a forked child registers again). Registering twice is harmless,
 * so two threads creating workers at once need no lock. */
static bool worker_membarrier_ready(void)
{
    static atomic_int registered_pid; /* the pid that registered; -pid: unavailable there */
    int pid = (int)getpid();
    int seen = atomic_load_explicit(&registered_pid, memory_order_acquire);
    if (seen == pid || seen == -pid)
        return seen == pid;
    bool ok = worker_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    if (!ok)
        fy_debug("membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) failed: %s; "
                 "multi-thread workers take their spinlock on every call (Linux >= 4.14 has "
                 "it)",
                 strerror(errno));
    atomic_store_explicit(&registered_pid, ok ? pid : -pid, memory_order_release);
    return ok;
}

void fy_worker_bias_init(ferry_worker_t *worker)
{
    atomic_init(&worker->bias_depth, 0);
    if (worker->multi && worker_membarrier_ready()) {
        atomic_init(&worker->bias_thread, fy_thread_id());
        atomic_init(&worker->bias_on, 1);
        atomic_init(&worker->spin_only, 0);
        return;
    }
    atomic_init(&worker->bias_thread, 0);
    atomic_init(&worker->bias_on, 0);
    atomic_init(&worker->spin_only, 1);
}

/* The revoker: wait, spinning then yielding, until the owner is out of every biased call. */
static void worker_wait_owner_out(ferry_worker_t *worker)
{
    for (;;) {
        for (unsigned spin = 0; spin < FY_BIAS_SPINS; spin++) {
            if (atomic_load_explicit(&worker->bias_depth, memory_order_acquire) == 0)
                return;
            fy_cpu_relax();
        }
        sched_yield();
    }
}

/* A thread other than the owner is about to take the spinlock while spin_only is still 0: the
 * first one revokes the bias (see the top of this file); any other, and the owner that found
 * its bias revoked, waits until it is done. */
static void worker_bias_revoke(ferry_worker_t *worker)
{
    int on = 1;
    if (atomic_compare_exchange_strong_explicit(&worker->bias_on, &on, 0, memory_order_relaxed,
                                                memory_order_relaxed)) {
        if (worker_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) /* registered: cannot */
            fy_error("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) on worker %p failed: %s",
                     (void *)worker, strerror(errno));
        worker_wait_owner_out(worker);
        atomic_store_explicit(&worker->spin_only, 1, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&worker->spin_only, memory_order_acquire) == 0)
        sched_yield(); /* the revoker waits for the owner's call to end: microseconds */
}

/* fy_worker_lock when fy_worker_trylock failed: the spinlock is held by another thread, or the
 * bias is still to be revoked, or the owner just found its bias revoked. */
fy_noinline void fy_worker_lock_wait(ferry_worker_t *worker)
{
    if (atomic_load_explicit(&worker->spin_only, memory_order_acquire) == 0)
        worker_bias_revoke(worker);
    fy_spinlock_lock(&worker->lock);
    atomic_store_explicit(&worker->lock_owner, fy_thread_id(), memory_order_relaxed);
    worker->lock_depth = 1;
}

/* ferry_worker_wait from inside a call (e.g. ferry_ep_wait_connected): give up every level of
 * the lock the caller holds, biased or not; how many, for fy_worker_relock. */
unsigned fy_worker_unlock_all(ferry_worker_t *worker)
{
    uintptr_t self = fy_thread_id();
    unsigned held = 0;
    if (atomic_load_explicit(&worker->bias_thread, memory_order_relaxed) == self) {
        held = atomic_load_explicit(&worker->bias_depth, memory_order_relaxed);
        atomic_store_explicit(&worker->bias_depth, 0, memory_order_release);
    } else if (atomic_load_explicit(&worker->lock_owner, memory_order_relaxed) == self) {
        held = worker->lock_depth;
        worker->lock_depth = 1;
        fy_worker_unlock(worker);
    }
    return held;
}

/* Take the lock again with the held levels fy_worker_unlock_all gave up (held > 0). */
void fy_worker_relock(ferry_worker_t *worker, unsigned held)
{
    fy_worker_lock(worker);
    if (atomic_load_explicit(&worker->bias_thread, memory_order_relaxed) == fy_thread_id())
        atomic_store_explicit(&worker->bias_depth, held, memory_order_relaxed);
    else
        worker->lock_depth = held;
}
