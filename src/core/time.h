/* NOTE to the core engineer: written by the lead and already used; keep this API. */
/* Clocks and spinning. */
#ifndef FERRY_CORE_TIME_H
#define FERRY_CORE_TIME_H

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
