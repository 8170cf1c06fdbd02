/* Option values for ferry_perf and bench/mpi_pingpong.c (built with that program by the bench
 * scripts: plain C and libc, no ferry). */
#ifndef PERF_PARSE_H
#define PERF_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* A decimal number of at most max, with an optional K/M/G suffix (x1024) when suffix is set:
 * 0 and *value_p set, or -1 (nothing set). */
int perf_parse_u64(const char *text, bool suffix, uint64_t max, uint64_t *value_p);

#endif
