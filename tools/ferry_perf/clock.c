/* Time stamps: CLOCK_MONOTONIC, and the TSC for latency samples (clock.h). */
#define _GNU_SOURCE
#include "clock.h"

#include <errno.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PERF_HAVE_TSC 1
#endif

static double ns_per_tick = 1.0;

uint64_t perf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void perf_ticks_init(void)
{
#ifdef PERF_HAVE_TSC
    /* the TSC of every x86 CPU of the last decade runs at a constant rate (constant_tsc) */
    uint64_t t0 = perf_now_ns(), c0 = __rdtsc();
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 20000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    uint64_t t1 = perf_now_ns(), c1 = __rdtsc();
    if (c1 > c0 && t1 > t0)
        ns_per_tick = (double)(t1 - t0) / (double)(c1 - c0);
#endif
}

uint64_t perf_ticks(void)
{
#ifdef PERF_HAVE_TSC
    return __rdtsc();
#else
    return perf_now_ns();
#endif
}

double perf_ticks_ns(uint64_t ticks)
{
    return (double)ticks * ns_per_tick;
}
