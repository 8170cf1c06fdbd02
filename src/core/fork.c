/* fork(): the process-wide generation (fork.h). */
#include "core/fork.h"

#include <pthread.h>

atomic_uint fy_fork_generation_now;

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Runs in the child, single-threaded, right after fork(): every object created before is now
 * a copy of the parent's. */
static void fork_child(void)
{
    atomic_fetch_add_explicit(&fy_fork_generation_now, 1, memory_order_relaxed);
}

static void fork_register(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

unsigned fy_fork_watch(void)
{
    pthread_once(&fork_once, fork_register);
    return atomic_load_explicit(&fy_fork_generation_now, memory_order_relaxed);
}
