/* fork(): a process-wide generation that a pthread_atfork child handler bumps, so that the
 * objects a child inherited from its parent can tell, with one load and no system call, that
 * they belong to another process (their creation recorded the generation in effect). */
#ifndef FERRY_CORE_FORK_H
#define FERRY_CORE_FORK_H

#include <stdatomic.h>
#include <stdbool.h>

/* hidden: the library's own, read with one instruction (no address load from the GOT) */
extern atomic_uint fy_fork_generation_now __attribute__((visibility("hidden")));

/* Register the atfork handler (once per process; later calls cost one pthread_once check) and
 * return the generation in effect, to store in a new object. */
unsigned fy_fork_watch(void);

/* Whether an object created in generation gen was inherited across a fork(). Fast path safe:
 * one relaxed load. */
static inline bool fy_forked(unsigned gen)
{
    return __builtin_expect(
        atomic_load_explicit(&fy_fork_generation_now, memory_order_relaxed) != gen, 0);
}

#endif
