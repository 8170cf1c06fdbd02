/* Secrets: unpredictable 64-bit values from the kernel's random generator, and their
 * comparison in constant time.
 *
 * Each registration gets one (src/mem): its packed key carries it, and whoever checks a key
 * compares the key's secret with the owner's, so that a key cannot be made up from the
 * predictable fields (slot, generation, pid). A pool amortises getrandom(2) over
 * FY_SECRET_POOL values; it is per context and, like the context, not thread-safe. */
#ifndef FY_CORE_SECRET_H
#define FY_CORE_SECRET_H

#include <stdbool.h>
#include <stdint.h>

#include <ferry/status.h>

#define FY_SECRET_POOL 32

typedef struct fy_secret_pool {
    uint64_t values[FY_SECRET_POOL];
    unsigned left; /* values[0 .. left) are unused */
} fy_secret_pool_t;

/* A fresh non-zero secret in *secret_p. Returns FERRY_OK or FERRY_ERR_IO (getrandom failed;
 * logged with strerror). */
ferry_status_t fy_secret_draw(fy_secret_pool_t *pool, uint64_t *secret_p);

/* Forget the unused values (the pool's memory is about to be freed). */
void fy_secret_pool_clear(fy_secret_pool_t *pool);

/* a == b, in a time that does not depend on where they differ: no early exit, no branch on
 * the values (the XOR is folded to one bit arithmetically). */
static inline bool fy_secret_equal(uint64_t a, uint64_t b)
{
    uint64_t d = a ^ b;
    return (((d | (0 - d)) >> 63) ^ 1u) != 0;
}

#endif
