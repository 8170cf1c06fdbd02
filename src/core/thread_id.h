/* The calling thread's identity as a number, for a recursive lock's owner check. */
#ifndef FY_CORE_THREAD_ID_H
#define FY_CORE_THREAD_ID_H

#include <pthread.h>
#include <stdint.h>

/* Unique among the process's live threads, never 0. Where the compiler has it, the thread
 * pointer (the TLS base: one register read on x86-64 and AArch64, no call; it is also what
 * glibc's pthread_self returns there), else pthread_self (a call through the PLT, whose saved
 * registers cost a multi-thread worker's inline send more than the call itself). */
static inline uintptr_t fy_thread_id(void)
{
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
    return (uintptr_t)__builtin_thread_pointer();
#endif
#endif
    return (uintptr_t)pthread_self();
}

#endif
