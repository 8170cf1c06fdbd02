/* Copies of kilobytes to megabytes between memory both sides can reach with loads and stores
 * (the direct path of one-sided operations on a peer's mapped memory): a routine chosen by
 * size, faster than the C library's memcpy where this was measured (docs/ARCHITECTURE.md,
 * "Copies on mapped memory").
 *
 * On x86-64 the C library (glibc 2.36) copies 2 KiB .. 1 MiB with REP MOVSB and larger sizes
 * with a loop of vector loads and stores. On an AMD EPYC (Zen 5, 48 KiB L1D, 1 MiB L2), one
 * process, the source in a shared mapping:
 *   - up to half the L1 data cache (source and destination both fit), a loop of 4 vector
 *     loads then 4 stores (AVX-512, else AVX2) moves 1.3-1.7x the bytes of REP MOVSB, at
 *     aligned and odd offsets alike;
 *   - above that, REP MOVSB beats such loops (1.3-1.8x at 32-64 KiB), and from 1 MiB (where
 *     glibc switches to its loop) to 2 MiB it moves 1.1-1.2x glibc's loop. (At 4 MiB it moved
 *     0.9x, at 16-64 MiB 1.3-1.5x: beyond twice the L2 memcpy stays, not chosen on one CPU's
 *     quirks.)
 * So: vector loop for [FY_COPY_VEC_MIN, vec_max], REP MOVSB for (vec_max, rep_max] when both
 * addresses are cache-line aligned (REP MOVSB to a misaligned destination is reported 20x
 * slower on Zen 3/4, glibc bug 30994), memcpy elsewhere. fy_copy_bulk_init() chooses once per
 * process (FERRY_COPY=libc: memcpy always; also the choice of sanitizer builds, whose memcpy
 * checks the ranges). */
#ifndef FERRY_CORE_COPY_BULK_H
#define FERRY_CORE_COPY_BULK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/compiler.h"
#include "core/copy.h"

/* The smallest size the vector loop takes (one iteration of 4 x 64 bytes); below it memcpy's
 * own vector code is as good. */
#define FY_COPY_VEC_MIN 256u

/* A copy routine: n bytes from src to dst, which do not overlap. */
typedef void fy_copy_fn_t(void *dst, const void *src, size_t n);

/* The process's choice: written once by fy_copy_bulk_init() (inside pthread_once, before any
 * context exists), read-only afterwards. vec_max = 0: no vector loop; rep_max = 0: no
 * REP MOVSB. */
typedef struct fy_copy_tuning {
    fy_copy_fn_t *vec; /* the vector loop, for [FY_COPY_VEC_MIN, vec_max]; NULL when none */
    size_t vec_max;
    size_t rep_max;                /* REP MOVSB for (vec_max, rep_max] */
    const char *vec_name, *reason; /* for ferry_info -d and the log */
} fy_copy_tuning_t;

extern fy_copy_tuning_t fy_copy_tuning;

/* Choose the routines for this process (once; later calls cost one pthread_once check). */
void fy_copy_bulk_init(void);

/* REP MOVSB (x86-64 with ERMS only: rep_max is 0 elsewhere). */
void fy_copy_rep_movsb(void *dst, const void *src, size_t n);

/* Copy n bytes from src to dst (not overlapping) with the routine chosen for n. The bytes are
 * written in no particular order (memcpy's contract). */
static fy_always_inline void fy_copy_bulk(void *dst, const void *src, size_t n)
{
    const fy_copy_tuning_t *t = &fy_copy_tuning;
    if (n <= FY_COPY_SMALL_MAX)
        fy_copy_small(dst, src, n);
    else if (n <= t->vec_max && n >= FY_COPY_VEC_MIN)
        t->vec(dst, src, n);
    else if (n > t->vec_max && n <= t->rep_max &&
             (((uintptr_t)dst | (uintptr_t)src) & (FERRY_CACHE_LINE - 1)) == 0)
        fy_copy_rep_movsb(dst, src, n);
    else
        memcpy(dst, src, n);
}

#endif
