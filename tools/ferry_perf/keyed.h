/* The tagged tests' byte pattern, for tag.c and bench/mpi_pingpong.c (built with this file by
 * the bench scripts: plain C and libc, no ferry). Byte i of the pattern of seed is byte i % 64 KiB
 * of the base period (perf_pattern_byte), XORed with a key of the seed and of the number of its
 * 64 KiB block: a period of 4 GiB, larger than any message, and other bytes for every seed. */
#ifndef PERF_KEYED_H
#define PERF_KEYED_H

#include <stddef.h>
#include <stdint.h>

#define PERF_KEYED_BLOCK 65536u

/* Byte i of the base pattern: position-dependent (bytes 4 KiB apart differ, so a misplaced
 * fragment shows). pattern.c's patterns use it too. */
uint8_t perf_pattern_byte(size_t i);

typedef struct perf_keyed {
    uint8_t *period; /* PERF_KEYED_BLOCK bytes: the base period */
    uint8_t *expect; /* PERF_KEYED_BLOCK bytes: one block of the pattern being checked */
} perf_keyed_t;

/* 0, or -1 when out of memory (nothing to clean up then). */
int perf_keyed_init(perf_keyed_t *k);
void perf_keyed_cleanup(perf_keyed_t *k);
/* p[0, length) = the pattern of seed. */
void perf_keyed_fill(const perf_keyed_t *k, uint8_t *p, size_t length, uint64_t seed);
/* Bytes of p[0, length) that differ from the pattern of seed; *first_p: the first one
 * (UINT64_MAX: none). */
uint64_t perf_keyed_check(perf_keyed_t *k, const uint8_t *p, size_t length, uint64_t seed,
                          uint64_t *first_p);

#endif
