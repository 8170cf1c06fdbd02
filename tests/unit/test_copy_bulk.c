/* fy_copy_bulk (src/core/copy_bulk.h): every routine it can choose copies exactly [0, n) for
 * sizes on each side of every bound (64, 256, the vector loop's limit, REP MOVSB's limit) at
 * source and destination offsets that are aligned, odd and one vector apart, and touches no
 * byte around the destination. The routines chosen for this CPU run first; then each is forced
 * in turn through fy_copy_tuning (memcpy only; the vector loop for everything from 256 bytes;
 * REP MOVSB for everything above 64 bytes where the CPU has it; it takes the cache-line aligned
 * pairs of addresses, memcpy the others). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/copy_bulk.h"

#define GUARD 128
#define MAX_SIZE ((size_t)(4u << 20) + 300)

static uint8_t *src_block, *dst_block;

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 131u + (i >> 8) * 7u + 1u);
}

/* Copy n bytes from src offset so to dst offset do, then check every byte of the destination
 * block: the copy in [do, do + n), the fill value 0xEE elsewhere. */
static void check_one(size_t n, size_t so, size_t doff)
{
    uint8_t *src = src_block + GUARD + so, *dst = dst_block + GUARD + doff;
    size_t span = GUARD + doff + n + GUARD;
    memset(dst_block, 0xEE, span);
    fy_copy_bulk(dst, src, n);
    for (size_t i = 0; i < span; i++) {
        uint8_t want = dst_block + i >= dst && dst_block + i < dst + n
                           ? pattern(GUARD + so + (size_t)(dst_block + i - dst))
                           : 0xEE;
        if (dst_block[i] != want) {
            fail_msg("%zu bytes (source offset %zu, destination offset %zu; vector %s to %zu, "
                     "REP MOVSB to %zu): byte %zd of the destination is 0x%02x, not 0x%02x",
                     n, so, doff, fy_copy_tuning.vec_name, fy_copy_tuning.vec_max,
                     fy_copy_tuning.rep_max, (ptrdiff_t)(dst_block + i - dst), dst_block[i], want);
        }
    }
}

static void check_sizes(void)
{
    const fy_copy_tuning_t *t = &fy_copy_tuning;
    size_t bounds[] = {0,       1,     FY_COPY_SMALL_MAX, FY_COPY_VEC_MIN, 4096,     16384,
                       24576,   32768, t->vec_max,        t->rep_max,      1u << 20, 2u << 20,
                       4u << 20};
    static const size_t offsets[][2] = {{0, 0},  {0, 7},    {13, 0},   {3, 64},
                                        {64, 1}, {64, 128}, {4095, 33}};
    for (size_t b = 0; b < FERRY_ARRAY_SIZE(bounds); b++) {
        for (int delta = -2; delta <= 2; delta++) {
            if ((delta < 0 && bounds[b] < (size_t)-delta) || bounds[b] > MAX_SIZE - 4096 - 2)
                continue;
            size_t n = bounds[b] + (size_t)(ptrdiff_t)delta;
            for (size_t o = 0; o < FERRY_ARRAY_SIZE(offsets); o++)
                check_one(n, offsets[o][0], offsets[o][1]);
        }
    }
}

static void test_chosen(void **state)
{
    (void)state;
    fy_copy_bulk_init();
    print_message("chosen: vector loop %s up to %zu bytes, REP MOVSB up to %zu (%s)\n",
                  fy_copy_tuning.vec_name, fy_copy_tuning.vec_max, fy_copy_tuning.rep_max,
                  fy_copy_tuning.reason);
    check_sizes();
}

static void test_each_routine(void **state)
{
    (void)state;
    fy_copy_bulk_init();
    fy_copy_tuning_t chosen = fy_copy_tuning;

    fy_copy_tuning = (fy_copy_tuning_t){.vec_name = "none", .reason = "test: memcpy"};
    check_sizes();
    if (chosen.vec != NULL) {
        fy_copy_tuning = chosen;
        fy_copy_tuning.vec_max = SIZE_MAX - 1; /* every size from 256 bytes */
        fy_copy_tuning.rep_max = 0;
        check_sizes();
    }
    if (chosen.rep_max != 0) {
        fy_copy_tuning = chosen;
        fy_copy_tuning.vec = NULL;
        fy_copy_tuning.vec_max = 0; /* every size above 64 bytes */
        fy_copy_tuning.rep_max = SIZE_MAX;
        check_sizes();
    }
    fy_copy_tuning = chosen;
}

static int setup(void **state)
{
    (void)state;
    src_block = malloc(MAX_SIZE + 2 * GUARD);
    dst_block = malloc(MAX_SIZE + 2 * GUARD);
    if (src_block == NULL || dst_block == NULL)
        return -1;
    for (size_t i = 0; i < MAX_SIZE + 2 * GUARD; i++)
        src_block[i] = pattern(i);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(src_block);
    free(dst_block);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chosen),
        cmocka_unit_test(test_each_routine),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
