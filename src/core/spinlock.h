/* A test-and-test-and-set spinlock for locks held for a few hundred nanoseconds (a worker's
 * progress or send in multi-thread mode). Uncontended, taking it is one atomic exchange and
 * releasing it one store, both inline: about half what an uncontended pthread mutex costs
 * (a call, a compare-exchange, and a second atomic on unlock). Contended, a waiter spins on a
 * plain load and yields the CPU after a while (fy_spinlock_wait), so that a holder preempted
 * on a loaded 2-core machine gets to run. Never held across a system call that sleeps. C11
 * atomics: ThreadSanitizer sees the acquire and release. */
#ifndef FY_CORE_SPINLOCK_H
#define FY_CORE_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct fy_spinlock {
    atomic_int held; /* 1 while someone holds it */
} fy_spinlock_t;

static inline void fy_spinlock_init(fy_spinlock_t *lock)
{
    atomic_init(&lock->held, 0);
}

/* The contended case of fy_spinlock_lock (spinlock.c). */
void fy_spinlock_wait(fy_spinlock_t *lock);

/* Take the lock if it is free (one atomic exchange); false: someone holds it. */
static inline bool fy_spinlock_trylock(fy_spinlock_t *lock)
{
    return atomic_exchange_explicit(&lock->held, 1, memory_order_acquire) == 0;
}

static inline void fy_spinlock_lock(fy_spinlock_t *lock)
{
    if (__builtin_expect(fy_spinlock_trylock(lock), 1))
        return;
    fy_spinlock_wait(lock);
}

static inline void fy_spinlock_unlock(fy_spinlock_t *lock)
{
    atomic_store_explicit(&lock->held, 0, memory_order_release);
}

#endif
