/* The contended side of fy_spinlock_lock (spinlock.h). */
#include "core/spinlock.h"

#include <sched.h>

#include "core/compiler.h"
#include "core/time.h"

/* Spins (each a pause) before a waiter gives its CPU away: about the length of a progress
 * call, so that a holder that is running finishes first, and one that was preempted runs. */
#define FY_SPINLOCK_SPINS 256u

fy_noinline void fy_spinlock_wait(fy_spinlock_t *lock)
{
    for (;;) {
        for (unsigned spin = 0; spin < FY_SPINLOCK_SPINS; spin++) {
            if (atomic_load_explicit(&lock->held, memory_order_relaxed) == 0 &&
                atomic_exchange_explicit(&lock->held, 1, memory_order_acquire) == 0)
                return;
            fy_cpu_relax();
        }
        sched_yield();
    }
}
