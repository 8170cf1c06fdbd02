/* Time for ferry_perf and bench/mpi_pingpong.c (built with that program by the bench scripts:
 * plain C and libc, no ferry). */
#ifndef PERF_CLOCK_H
#define PERF_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns. */
uint64_t perf_now_ns(void);
/* A cheap time stamp for latency samples: the TSC on x86 (what ucx_perftest uses too: a
 * clock_gettime per sample would add ~20 ns to each), else perf_now_ns. perf_ticks_init
 * measures the tick against CLOCK_MONOTONIC (20 ms); perf_ticks_ns converts a difference. */
void perf_ticks_init(void);
uint64_t perf_ticks(void);
double perf_ticks_ns(uint64_t ticks);

#endif
