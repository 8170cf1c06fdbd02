/* NOTE to the core engineer: written by the lead and already used; keep this API. */
/* Clocks and spinning. */
#ifndef FERRY_CORE_TIME_H
#define FERRY_CORE_TIME_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Monotonic time in ns (vDSO: no system call). */
static inline uint64_t fy_time_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Coarse monotonic time in ns (a few ms resolution, cheaper). */
static inline uint64_t fy_time_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether a_bytes in a_ns is a rate above num / den times b_bytes in b_ns: the fractions
 * compared exactly, cross-multiplied in 128 bits (the calibrations' timed blocks). */
static inline bool fy_rate_above(uint64_t a_bytes, uint64_t a_ns, uint64_t b_bytes, uint64_t b_ns,
                                 unsigned num, unsigned den)
{
    return (unsigned __int128)a_bytes * b_ns * den > (unsigned __int128)b_bytes * a_ns * num;
}

/* Tell the CPU we are spinning. */
static inline void fy_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
