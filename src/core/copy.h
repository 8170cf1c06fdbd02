/* Copies of a few bytes without a call into libc: an 8-byte tagged or active message costs
 * less to move with two inline loads and stores than with memcpy's call and size dispatch. */
#ifndef FERRY_CORE_COPY_H
#define FERRY_CORE_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/compiler.h"

/* The largest n fy_copy_small is meant for (its loop of 8-byte words grows with n). */
#define FY_COPY_SMALL_MAX 64u

/* Copy n bytes (at most FY_COPY_SMALL_MAX) without a call: 8-byte words, the last one
 * overlapping the one before (under 8 bytes: two overlapping 4- or 2-byte words, or a byte).
 * Reads and writes only [0, n); dst and src do not overlap. */
static fy_always_inline void fy_copy_small(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8)
            memcpy(d + i, s + i, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else if (n >= 2) {
        memcpy(d, s, 2);
        memcpy(d + n - 2, s + n - 2, 2);
    } else if (n == 1) {
        d[0] = s[0];
    }
}

/* memcpy, with the small sizes (the 8-byte messages of the fast paths) copied inline. */
static fy_always_inline void fy_copy(void *dst, const void *src, size_t n)
{
    if (fy_likely(n <= FY_COPY_SMALL_MAX))
        fy_copy_small(dst, src, n);
    else
        memcpy(dst, src, n);
}

#endif
